"""Labels as loaders give them: every estimator fits ``hiercvx.datasets.load_arff``'s output as
it is.

Two Clus-HMC ARFF fixtures written here: an image-like file where each sample's labels are one
path with its ancestors (``2@2/1@2/1/3``, as ImageCLEF07A writes them) and a gene-like file
whose labels stop at internal nodes and hold several paths (as cellcycle_FUN).  The slow test
does the same on the real files when they are present.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import hiercvx as hc
from hiercvx.datasets import load_arff
from hiercvx.estimators import (AdaBoostMH, HierarchicalPerceptron, HierarchicalPsiClassifier,
                                HierarchicalSVC, MulticlassSVC, NormalizedHierarchicalSVC,
                                OrthogonalTransferSVC, SequentialHierarchicalSVC, SharedNormSVC,
                                SiblingMarginSVC, TopDownSVC)
from hiercvx.formulations import hsvm
from hiercvx.hierarchy import internal_labels, most_specific, self_leaves, single_path

NODES = ["1", "1/1", "1/2", "2", "2/1", "2/2", "2/2/1", "2/2/2"]
LEAVES = ["1/1", "1/2", "2/1", "2/2/1", "2/2/2"]


def _ancestors_and_self(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]


def _write_arff(path: Path, rows: list[tuple[np.ndarray, list[str]]]) -> Path:
    lines = ["@RELATION fixture", ""]
    lines += [f"@ATTRIBUTE f{j} NUMERIC" for j in range(len(rows[0][0]))]
    lines += [f"@ATTRIBUTE class hierarchical {','.join(NODES)}", "", "@DATA"]
    for x, labels in rows:
        lines.append(",".join(f"{v:.4f}" for v in x) + "," + "@".join(labels))
    path.write_text("\n".join(lines) + "\n")
    return path


def _center(label: str) -> np.ndarray:
    k = NODES.index(label)
    return np.array([np.cos(k), np.sin(k), 0.5 * k / len(NODES)]) * 3.0


@pytest.fixture(scope="module")
def image_like(tmp_path_factory):
    """One path per sample, written with its ancestors (ImageCLEF07A's form)."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(30):
        leaf = LEAVES[i % len(LEAVES)]
        rows.append((_center(leaf) + 0.3 * rng.standard_normal(3), _ancestors_and_self(leaf)))
    return load_arff(_write_arff(tmp_path_factory.mktemp("arff") / "image.arff", rows))


@pytest.fixture(scope="module")
def gene_like(tmp_path_factory):
    """Labels that stop at internal nodes, one or two paths per sample (cellcycle_FUN's form)."""
    rng = np.random.default_rng(1)
    label_sets = [["1/1"], ["2"], ["1/2", "2/1"], ["2/2"], ["2/2/1"], ["1"], ["2/2/2", "1/1"],
                  ["2/1"]]
    rows = []
    for i in range(32):
        labels = label_sets[i % len(label_sets)]
        x = sum(_center(v) for v in labels) / len(labels) + 0.3 * rng.standard_normal(3)
        rows.append((x, labels))
    return load_arff(_write_arff(tmp_path_factory.mktemp("arff") / "gene.arff", rows))


@contextmanager
def _quiet():
    """Small iteration budgets: a ConvergenceWarning is expected and beside the point."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


#: every estimator class that takes a hierarchy, built small
HIERARCHICAL = {
    "HierarchicalSVC": lambda H: HierarchicalSVC(hierarchy=H),
    "NormalizedHierarchicalSVC": lambda H: NormalizedHierarchicalSVC(hierarchy=H),
    "SharedNormSVC": lambda H: SharedNormSVC(hierarchy=H, max_iter=50, tol=1e-3),
    "HierarchicalPerceptron": lambda H: HierarchicalPerceptron(hierarchy=H, max_epochs=5),
    "OrthogonalTransferSVC": lambda H: OrthogonalTransferSVC(hierarchy=H),
    "OrthogonalTransferSVC-flatmult": lambda H: OrthogonalTransferSVC(hierarchy=H,
                                                                      method="flatmult"),
    "SiblingMarginSVC": lambda H: SiblingMarginSVC(hierarchy=H),
    "HierarchicalPsiClassifier": lambda H: HierarchicalPsiClassifier(hierarchy=H, dc_max_iter=3),
    "SequentialHierarchicalSVC": lambda H: SequentialHierarchicalSVC(hierarchy=H),
    "TopDownSVC": lambda H: TopDownSVC(hierarchy=H),
}
SINGLE_LABEL = {"SharedNormSVC", "OrthogonalTransferSVC", "OrthogonalTransferSVC-flatmult",
                "SiblingMarginSVC", "HierarchicalPsiClassifier", "SequentialHierarchicalSVC"}
#: the flat estimators read labels as they are (no hierarchy to reduce them with)
FLAT = {"MulticlassSVC": lambda: MulticlassSVC(), "AdaBoostMH": lambda: AdaBoostMH(n_rounds=5)}


def _names(pred) -> set:
    out = set()
    for p in pred:
        out |= set(p) if isinstance(p, frozenset) else {p}
    return out


@pytest.mark.parametrize("name", list(HIERARCHICAL))
def test_paths_with_their_ancestors(name, image_like):
    """One path per sample with its ancestors: the single-label problem over the leaves (not
    label sets over every node), predicted as leaves of the caller's hierarchy."""
    ds = image_like
    with _quiet():
        est = HIERARCHICAL[name](ds.hierarchy).fit(ds.X, ds.y)
    assert not getattr(est, "multilabel_", False)
    assert sorted(est.classes_.tolist()) == sorted(LEAVES)
    pred = est.predict(ds.X)
    assert np.ndim(pred) == 1 and set(pred.tolist()) <= set(LEAVES)
    assert 0.0 <= est.score(ds.X, ds.y) <= 1.0  # y read as fit reads it


@pytest.mark.parametrize("name", list(HIERARCHICAL))
def test_labels_that_stop_at_internal_nodes(name, gene_like):
    """Labels that stop at internal nodes, several paths per sample: the multi-label estimators
    fit them as they are; the single-label ones refuse the several-path samples naming
    ``single_path``, and following that advice fits.  Internal stops are classes of their own,
    named as the caller's internal nodes."""
    ds = gene_like
    H = ds.hierarchy
    X, y = ds.X, list(ds.y)
    if name in SINGLE_LABEL:
        with pytest.raises(hc.LabelError, match="single_path"):
            HIERARCHICAL[name](H).fit(X, y)
        keep = single_path(H, y)
        X, y = X[keep], [y[i] for i in np.flatnonzero(keep)]
    with _quiet():
        est = HIERARCHICAL[name](H).fit(X, y)
    pred = est.predict(X)
    assert _names(pred) <= set(H.nodes)  # the caller's names, no self leaf
    assert set(est.classes_.tolist()) <= set(H.nodes)
    if name not in ("OrthogonalTransferSVC",):  # orthogonal transfer takes internal labels itself
        assert {"1", "2", "2/2"} <= set(est.classes_.tolist())
    assert 0.0 <= est.score(X, y) <= 1.0


@pytest.mark.parametrize("name", sorted(set(HIERARCHICAL) - {"OrthogonalTransferSVC"}))
def test_refuse_internal_labels_on_request(name, gene_like):
    ds = gene_like
    keep = single_path(ds.hierarchy, ds.y)
    y = [ds.y[i] for i in np.flatnonzero(keep)]
    est = HIERARCHICAL[name](ds.hierarchy).set_params(internal_labels="refuse")
    with pytest.raises(hc.LabelError, match="internal_labels='self_leaf'"):
        est.fit(ds.X[keep], y)


@pytest.mark.parametrize("name", list(FLAT))
def test_flat_estimators_take_the_loader_output(name, image_like, gene_like):
    for ds in (image_like, gene_like):
        est = FLAT[name]().fit(ds.X, ds.y)
        assert _names(est.predict(ds.X)) <= set(ds.hierarchy.nodes)


def test_same_problem_as_the_reduced_labels(image_like, gene_like):
    """The estimator builds the problem of the most specific labels (and, for internal stops,
    of the self-leaf hierarchy): the same optimum as fitting those by hand."""
    ds = image_like
    H = ds.hierarchy
    deepest = [next(iter(s)) for s in most_specific(H, ds.y)]
    a = HierarchicalSVC(hierarchy=H, tol=1e-8).fit(ds.X, ds.y)
    b = HierarchicalSVC(hierarchy=H, tol=1e-8).fit(ds.X, deepest)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    assert np.array_equal(a.predict(ds.X), b.predict(ds.X))
    ds = gene_like
    H = ds.hierarchy
    reduced = most_specific(H, ds.y)
    paths = self_leaves(H, reduced)
    assert paths.self_leaf.keys() == set(internal_labels(H, reduced)) == {"1", "2", "2/2"}
    a = HierarchicalSVC(hierarchy=H, tol=1e-8).fit(ds.X, ds.y)
    b = HierarchicalSVC(hierarchy=paths.hierarchy, tol=1e-8).fit(ds.X, paths.transform(reduced))
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    assert len(a.classes_) == len(paths.hierarchy.leaves) == len(H.leaves) + 3


def test_following_the_reference_error_builds_the_intended_problem(image_like, gene_like):
    """The CVXPY reference takes classes as they are; its errors name the helper that builds
    the intended problem: ``most_specific`` for ancestors in a label set (one label over the
    leaves, not label sets over every node), ``self_leaves`` for internal stops (a self leaf
    for those nodes only)."""
    ds = image_like
    H = ds.hierarchy
    with pytest.raises(hc.LabelError, match="most_specific"):
        hsvm.primal(ds.X, ds.y, H)
    sol = hsvm.primal(ds.X, most_specific(H, ds.y), H, C=1.0).solve()
    est = HierarchicalSVC(hierarchy=H, C=1.0, fit_intercept=False, tol=1e-9).fit(ds.X, ds.y)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-5)
    assert len(est.classes_) == len(H.leaves)
    ds = gene_like
    H = ds.hierarchy
    reduced = most_specific(H, ds.y)
    with pytest.raises(hc.LabelError, match="self_leaves"):
        hsvm.primal(ds.X, reduced, H)
    paths = self_leaves(H, reduced)
    sol = hsvm.primal(ds.X, paths.transform(reduced), paths.hierarchy, C=1.0).solve()
    est = HierarchicalSVC(hierarchy=H, C=1.0, fit_intercept=False, tol=1e-9).fit(ds.X, ds.y)
    assert est.objective_ == pytest.approx(sol.objective, rel=1e-5)


def test_label_helpers():
    H = hc.Hierarchy.from_paths(["a/b/c", "a/d", "e"])
    assert most_specific(H, [{"a", "a/b", "a/b/c"}, {"a", "e"}, "a/d", {"zz", "a"}]) == [
        frozenset({"a/b/c"}), frozenset({"a", "e"}), "a/d", frozenset({"zz", "a"})]
    assert internal_labels(H, [{"a", "e"}, "a/b", "a/b/c"]) == ("a", "a/b")
    assert single_path(H, [{"a", "a/b"}, {"a/d", "e"}, "e"]).tolist() == [True, False, True]
    paths = self_leaves(H, ["a", "a/d"])
    assert paths.transform(["a", "a/d"]) == ["a/<self>", "a/d"]
    assert paths.inverse_transform(["a/<self>"]) == ["a"]


def test_predicted_sets_are_reduced(gene_like):
    """A predicted set holding a self leaf and a node below it reads as the node below."""
    ds = gene_like
    est = HierarchicalSVC(hierarchy=ds.hierarchy).fit(ds.X, ds.y)
    for s in est.predict(ds.X):
        assert most_specific(ds.hierarchy, [s]) == [frozenset(s)]


# ---------------------------------------------------------------------- the real files
DATA = __import__("hiercvx.datasets._common", fromlist=["x"]).hmc_data_dir()
REAL = {"ImageCLEF07A": "ImCLEF07A_Train.arff", "cellcycle_FUN": "cellcycle_FUN.train.arff"}


@pytest.mark.slow
@pytest.mark.parametrize("data", list(REAL))
def test_real_files_straight_from_load_arff(data):
    """Every estimator on a 300-sample draw of the real file as ``load_arff`` returns it (the
    features imputed and scaled in a pipeline; the single-label estimators on cellcycle_FUN's
    single-path samples, as their error says)."""
    path = DATA / REAL[data]
    if not path.exists():
        pytest.skip(f"{path} not found")
    ds = load_arff(path)
    H = ds.hierarchy
    rows = np.sort(np.random.default_rng(0).choice(len(ds.y), 300, replace=False))
    X, y = ds.X[rows], [ds.y[i] for i in rows]
    small = {"HierarchicalSVC": dict(max_iter=200), "NormalizedHierarchicalSVC": dict(max_iter=50),
             "SharedNormSVC": {}, "HierarchicalPerceptron": {}, "OrthogonalTransferSVC": dict(max_iter=200),
             "OrthogonalTransferSVC-flatmult": dict(max_iter=200), "SiblingMarginSVC": {},
             "HierarchicalPsiClassifier": {}, "SequentialHierarchicalSVC": {}, "TopDownSVC": {}}
    for name, make in {**HIERARCHICAL, **{k: (lambda H, m=m: m()) for k, m in FLAT.items()}}.items():
        Xn, yn = X, y
        if name in SINGLE_LABEL and not all(single_path(H, y)):
            keep = single_path(H, y)
            Xn, yn = X[keep], [y[i] for i in np.flatnonzero(keep)]
        est = make(H)
        if small.get(name):
            est.set_params(**small[name])
        model = make_pipeline(SimpleImputer(), StandardScaler(), est)
        with _quiet():
            model.fit(Xn, yn)
        pred = model.predict(Xn)
        assert _names(pred) <= set(H.nodes), name


# ------------------------------------------------------------------ labels of every form and type
H7 = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                "B1": "B", "B2": "B"})


def _four_clusters(reps=4, seed=0):
    rng = np.random.default_rng(seed)
    return np.tile(np.eye(4) * 3, (reps, 1)) + 0.3 * rng.standard_normal((4 * reps, 4))


def test_score_reads_an_indicator_as_fit_does():
    """A 0/1 matrix over the leaves (dense or CSR) is scored as the label sets it encodes."""
    import scipy.sparse as sp
    X = _four_clusters()
    sets = [{leaf} if i % 3 else {leaf, "B1" if leaf[0] == "A" else "A1"}
            for i, leaf in enumerate(["A1", "A2", "B1", "B2"] * 4)]
    Y = np.array([[int(v in s) for v in H7.leaves] for s in sets])
    est = HierarchicalSVC(hierarchy=H7).fit(X, Y)
    expected = est.score(X, sets)
    assert 0 < expected < 1
    assert est.score(X, Y) == pytest.approx(expected)
    assert est.score(X, sp.csr_matrix(Y)) == pytest.approx(expected)
    flat = MulticlassSVC().fit(X, Y)   # columns are the classes 0..3
    as_sets = [frozenset(np.flatnonzero(row).tolist()) for row in Y]
    assert flat.score(X, Y) == pytest.approx(flat.score(X, as_sets))


def test_tuple_node_names_are_labels():
    H = hc.Hierarchy.from_parents({("r",): None, ("a",): ("r",), ("b",): ("r",), ("a", 1): ("a",),
                                   ("a", 2): ("a",), ("b", 1): ("b",), ("b", 2): ("b",)})
    X = _four_clusters(3)
    y = [("a", 1), ("a", 2), ("b", 1), ("b", 2)] * 3
    as_array = np.empty(len(y), dtype=object)
    as_array[:] = y
    for labels in (y, as_array):
        for cls in (HierarchicalSVC, SiblingMarginSVC):
            est = cls(hierarchy=H).fit(X, labels)
            assert list(est.predict(X[:4])) == y[:4] and est.score(X, labels) == 1.0
    with pytest.raises(hc.LabelError, match="could be label sets or class names"):
        MulticlassSVC().fit(X, y)   # without a hierarchy a list of tuples is ambiguous
    flat = MulticlassSVC().fit(X, as_array)   # ... and an object array holds class names
    assert list(flat.predict(X[:4])) == y[:4]


def test_node_names_of_several_types_keep_their_types():
    H = hc.Hierarchy.from_parents({"r": None, 1: "r", "b": "r", 11: 1, 12: 1, "b1": "b", "b2": "b"})
    X = _four_clusters(3)
    y = [11, 12, "b1", "b2"] * 3
    est = HierarchicalSVC(hierarchy=H).fit(X, y)
    assert list(est.predict(X[:4])) == y[:4] and est.score(X, y) == 1.0
    flat = MulticlassSVC().fit(X, y)
    assert list(flat.classes_) == [11, 12, "b1", "b2"]
    assert list(flat.predict(X[:4])) == y[:4] and flat.score(X, y) == 1.0


def test_label_sets_in_a_series_or_an_object_array():
    pd = pytest.importorskip("pandas")
    X = _four_clusters()
    sets = [frozenset({leaf}) for leaf in ["A1", "A2", "B1", "B2"] * 4]
    sets[0] = frozenset({"A1", "B1"})
    column = pd.Series(sets)
    as_array = np.empty(len(sets), dtype=object)
    as_array[:] = sets
    reference = HierarchicalSVC(hierarchy=H7).fit(X, sets)
    for labels in (column, as_array):
        est = HierarchicalSVC(hierarchy=H7).fit(X, labels)
        assert est.multilabel_ and est.objective_ == pytest.approx(reference.objective_)


@pytest.mark.parametrize("cls", [HierarchicalSVC, NormalizedHierarchicalSVC, SiblingMarginSVC,
                                 OrthogonalTransferSVC])
def test_an_empty_label_set_is_named_as_such(cls):
    X = _four_clusters(2)
    sets = [{leaf} for leaf in ["A1", "A2", "B1", "B2"] * 2]
    sets[0] = set()
    with pytest.raises(hc.LabelError, match="sample 0 has an empty label set; every sample needs a label"):
        cls(hierarchy=H7).fit(X, sets)


def test_node_scores_before_fit_and_of_a_flat_estimator():
    from sklearn.exceptions import NotFittedError
    X = _four_clusters(2)
    with pytest.raises(NotFittedError):
        HierarchicalSVC(hierarchy=H7).node_decision_function(X)
    flat = MulticlassSVC().fit(X, ["A1", "A2", "B1", "B2"] * 2)
    # flat: no node scores, so the methods are absent (hasattr tells the truth)
    for method in ("node_decision_function", "fit_node_calibration_cv",
                   "cross_fitted_node_margins"):
        assert not hasattr(flat, method) and hasattr(HierarchicalSVC(), method)
    with pytest.raises(AttributeError):
        flat.node_decision_function(X)
    with pytest.raises(hc.InputError, match="refit it with hierarchy=H"):
        HierarchicalSVC().fit(X, ["A1", "A2", "B1", "B2"] * 2).node_decision_function(X)


def test_node_kernel_ridge_reads_one_path_with_its_ancestors_as_one_label():
    from hiercvx.estimators import NodeKernelRidge
    X = _four_clusters()
    paths = [{"root", "A", "A1"}, {"A", "A2"}, {"B", "B1"}, {"B2"}] * 4
    est = NodeKernelRidge(hierarchy=H7).fit(X, paths)
    assert not est.multilabel_ and list(est.classes_) == ["A1", "A2", "B1", "B2"]
    assert list(est.predict(X[:4])) == ["A1", "A2", "B1", "B2"] and est.score(X, paths) == 1.0


def test_adaboost_scores_an_indicator_as_its_label_sets_and_unfitted_scores_refuse():
    import scipy.sparse as sp
    from sklearn.exceptions import NotFittedError
    X = _four_clusters()
    Y = np.tile(np.eye(4, dtype=int), (4, 1))
    Y[0, 2] = 1
    est = AdaBoostMH().fit(X, Y)
    as_sets = [frozenset(np.flatnonzero(row).tolist()) for row in Y]
    assert est.score(X, Y) == pytest.approx(est.score(X, as_sets))
    assert est.score(X, sp.csr_matrix(Y)) == pytest.approx(est.score(X, as_sets))
    for unfitted in (OrthogonalTransferSVC(hierarchy=H7), AdaBoostMH()):
        with pytest.raises(NotFittedError):
            unfitted.score(X, ["A1"] * len(X))


def test_an_estimator_of_a_hierarchy_warns_when_its_labels_spell_one_it_was_not_given():
    import warnings as _warnings

    from hiercvx.estimators import HierarchicalSVC, MulticlassSVC, NodeKernelRidge, TopDownSVC
    from hiercvx.estimators._labels import path_like_labels

    assert path_like_labels(["A/A1", "A/A2", "B"]) == ("A/A1", "A/A2")
    assert path_like_labels([{"2", "2/1"}, {"3"}]) == ("2", "2/1")
    assert path_like_labels(["TCP/IP", "UDP", "x"]) is None
    assert path_like_labels([1, 2, "/a", "a/"]) is None
    X = np.random.default_rng(0).normal(size=(6, 2))
    for make in (HierarchicalSVC, TopDownSVC, NodeKernelRidge):
        with pytest.warns(UserWarning, match=r"got no hierarchy.*'A/A1' and 'A/A2'.*from_paths") as rec:
            make().fit(X, ["A/A1", "A/A2", "B"] * 2)
        assert rec[0].filename == __file__   # points at the caller's fit, not the package
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        MulticlassSVC().fit(X, ["A/A1", "A/A2", "B"] * 2)   # flat by design: no hierarchy to give
        HierarchicalSVC().fit(X, ["TCP/IP", "UDP", "x"] * 2)
        H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
        HierarchicalSVC(hierarchy=H).fit(X, ["A/A1", "A/A2", "B"] * 2)


def test_unknown_labels_name_the_node_they_were_meant_to_be():
    H = hc.Hierarchy.from_parents({0: None, 1: 0, 2: 0})
    with pytest.raises(hc.LabelError, match=r"'1' \(str\) is spelled like the node 1 \(int\).*int\(v\)"):
        H.closure(["1", "2"])
    H = hc.Hierarchy.from_parents({"root": None, "Cat": "root", "Dog": "root"})
    with pytest.raises(hc.LabelError, match="'cat' is close to the node name 'Cat'"):
        H.closure(["cat", "Dog"])
    with pytest.raises(hc.LabelError, match="Check the spelling"):
        H.closure(["zebra"])


def test_subpackages_are_attributes_of_the_package():
    assert hc.datasets.load_arff is not None and hc.estimators.HierarchicalSVC is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        hc.nothing
