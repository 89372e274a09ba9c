"""SiblingMarginSVC (HSVM), HierarchicalPsiClassifier (HPSI), SequentialHierarchicalSVC
(SHSVM) and the section 4.1 tuning helper: scikit-learn rules, fast vs reference, the flat
special cases, partial paths, Lemma 1 through decision_function, the paper's sigma."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

import hiercvx as hc
from hiercvx.datasets import make_wang_example2, make_wang_example3
from hiercvx.estimators.sibling import (
    HierarchicalPsiClassifier,
    SequentialHierarchicalSVC,
    SiblingMarginSVC,
    paper_sigma,
)
from hiercvx.estimators.tuning import tune_on_holdout, wang_C_grid
from hiercvx.formulations import hpsi
from hiercvx.kernels import Kernel, median_heuristic

ESTIMATORS = [SiblingMarginSVC, HierarchicalPsiClassifier, SequentialHierarchicalSVC]
#: scikit-learn's estimator checks of HPSI take ~24 s (loaded machine): make test-slow
CHECKED = [SiblingMarginSVC, pytest.param(HierarchicalPsiClassifier, marks=pytest.mark.slow),
           SequentialHierarchicalSVC]


def _failed(results):
    return [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]


@pytest.mark.parametrize("Est", CHECKED)
def test_check_estimator_fast(Est):
    assert not _failed(check_estimator(Est(), on_fail=None))


@pytest.mark.parametrize("Est", [pytest.param(SiblingMarginSVC, marks=pytest.mark.slow),
                                 pytest.param(HierarchicalPsiClassifier, marks=pytest.mark.slow),
                                 pytest.param(SequentialHierarchicalSVC, marks=pytest.mark.slow)])
def test_check_estimator_reference(Est):
    assert not _failed(check_estimator(Est(solver="reference"), on_fail=None))


@pytest.fixture(scope="module")
def wang3():
    ds = make_wang_example3(60, random_state=5)
    return ds.X, ds.y, ds.hierarchy


# ---------------------------------------------------------------------- fast vs reference
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_hsvm_fast_equals_reference(wang3, kernel):
    X, y, H = wang3
    fast = SiblingMarginSVC(H, C=2.0, kernel=kernel).fit(X, y)
    ref = SiblingMarginSVC(H, C=2.0, kernel=kernel, solver="reference").fit(X, y)
    assert fast.objective_ == pytest.approx(ref.objective_, rel=1e-6)
    assert fast.gap_ <= 1e-6 and ref.gap_ <= 1e-6
    Xt = make_wang_example3(200, random_state=9).X
    assert np.mean(fast.predict(Xt) == ref.predict(Xt)) >= 0.99
    assert fast.sigma_ == ref.sigma_


def test_hpsi_fast_equals_reference_and_path_invariants(wang3):
    X, y, H = wang3
    fast = HierarchicalPsiClassifier(H, C=30.0, dc_tol=1e-8).fit(X, y)
    ref = HierarchicalPsiClassifier(H, C=30.0, dc_tol=1e-8, solver="reference").fit(X, y)
    np.testing.assert_allclose(fast.dc_objectives_, ref.dc_objectives_, rtol=1e-5)
    path = fast.dc_objectives_
    assert np.all(np.diff(path) <= 1e-7 * path[0])
    assert fast.objective_ == pytest.approx(path.min()) and fast.objective_ <= path[0]
    # the first entry is the psi cost (2) of the HSVM solution
    hsvm = SiblingMarginSVC(H, C=30.0).fit(X, y)
    S = hsvm.node_scores(X)
    J = 0.5 * float(np.sum(hsvm.coef_ ** 2))
    assert path[0] == pytest.approx(hpsi.cost(S, y, H, 30.0, penalty=J), rel=1e-6)
    assert fast.hsvm_objective_ == pytest.approx(hsvm.objective_, rel=1e-8)
    assert len(fast.step_gaps_) == fast.n_iter_ + 1 and fast.gap_ <= 1e-6


# ---------------------------------------------------------------------- flat special cases
def test_flat_svm_is_the_one_level_reference():
    ds = make_wang_example2(50, random_state=2)
    X, y = ds.X, ds.y
    svm = SiblingMarginSVC(C=1.0).fit(X, y)                     # hierarchy=None: one level
    flat = hc.Hierarchy.from_parents({"root": None, **{c: "root" for c in np.unique(y)}})
    ref = hpsi.primal(X, y, flat, C=1.0).solve()
    assert svm.objective_ == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_array_equal(svm.classes_, np.unique(y))
    # flat psi-learning: never above its SVM start
    psi = HierarchicalPsiClassifier(C=1.0).fit(X, y)
    assert psi.objective_ <= psi.dc_objectives_[0] + 1e-9
    # SHSVM on one level is the flat SVM
    seq = SequentialHierarchicalSVC(C=1.0).fit(X, y)
    np.testing.assert_array_equal(seq.predict(X), svm.predict(X))
    assert seq.objective_ == pytest.approx(svm.objective_, rel=1e-6)


def test_shsvm_root_model_is_an_svm_on_the_top_level_labels(wang3):
    X, y, H = wang3
    seq = SequentialHierarchicalSVC(H, C=1.0).fit(X, y)
    top = np.where(np.isin(y, [1, 2]), 5, 6)                      # the child of the root
    root_svm = SiblingMarginSVC(C=1.0).fit(X, top)
    root_model = seq.node_models_[0]
    assert root_model.objective_ == pytest.approx(root_svm.objective_, rel=1e-6)
    # top-down: the prediction's top-level node is the root SVM's choice
    pred = seq.predict(X)
    np.testing.assert_array_equal(np.where(np.isin(pred, [1, 2]), 5, 6), root_svm.predict(X))
    # second level: the SVM under node 5 only saw examples labelled 1 or 2
    below5 = np.isin(y, [1, 2])
    svm5 = SiblingMarginSVC(C=1.0).fit(X[below5], y[below5])
    assert seq.node_models_[1].objective_ == pytest.approx(svm5.objective_, rel=1e-6)
    assert seq.objective_ == pytest.approx(sum(m.objective_ for m in seq.node_models_.values()))


# ---------------------------------------------------------------------- decision rule
@pytest.mark.parametrize("Est", [SiblingMarginSVC, HierarchicalPsiClassifier])
def test_decision_function_is_the_margin_and_argmax_is_top_down(Est):
    """Lemma 1: u_min(f(x), c) > 0 exactly for the class d^H picks (tie-free scores)."""
    ds = make_wang_example2(80, random_state=1)
    est = Est(ds.hierarchy, C=3.0).fit(ds.X, ds.y)
    Xt = make_wang_example2(300, random_state=7).X
    U = est.decision_function(Xt)
    pred = est.predict(Xt)
    assert U.shape == (300, 8)
    np.testing.assert_array_equal(est.classes_[np.argmax(U, axis=1)], pred)
    np.testing.assert_array_equal((U > 0).sum(axis=1), 1)
    # the margins are hpsi.u_min of the node scores, class by class
    S = est.node_scores(Xt)
    for k, c in enumerate(est.classes_):
        np.testing.assert_allclose(U[:, k], hpsi.u_min(S, [c] * 300, ds.hierarchy))


def test_partial_paths_predict_internal_nodes():
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A"})
    rng = np.random.default_rng(0)
    centers = {"A": (0, 3), "B": (3, 0), "A1": (-3, -3), "A2": (0, -4)}
    y = np.array(list(centers))[rng.integers(0, 4, 80)]
    X = np.array([centers[v] for v in y]) + 0.3 * rng.standard_normal((80, 2))
    for Est in ESTIMATORS:
        est = Est(H, C=10.0).fit(X, y)
        assert set(est.classes_) == {"A", "B", "A1", "A2"}
        np.testing.assert_array_equal(est.predict(X), y)      # well separated
    assert len(est.working_hierarchy_) == len(H) + 1          # the self leaf under A


# ---------------------------------------------------------------------- kernel bandwidth
def test_paper_sigma_is_the_between_class_median():
    ds = make_wang_example3(80, random_state=2)
    est = SiblingMarginSVC(ds.hierarchy, kernel="rbf").fit(ds.X, ds.y)
    m = median_heuristic(ds.X, ds.y)
    assert est.sigma_ == pytest.approx(m / np.sqrt(2)) == paper_sigma(ds.X, ds.y)
    # hiercvx's exp(-d^2 / (2 sigma_^2)) is the paper's exp(-d^2 / m^2)
    d2 = np.sum((ds.X[0] - ds.X[1]) ** 2)
    assert est.kernel_(ds.X[:1], ds.X[1:2])[0, 0] == pytest.approx(np.exp(-d2 / m ** 2))
    named = SiblingMarginSVC(ds.hierarchy, kernel=Kernel("rbf")).fit(ds.X, ds.y)
    assert named.sigma_ == est.sigma_
    assert SiblingMarginSVC(ds.hierarchy, kernel=Kernel("rbf", sigma=0.3)).fit(ds.X, ds.y).sigma_ == 0.3


# ---------------------------------------------------------------------- tuning protocol
def test_tune_on_holdout_picks_the_smallest_tuning_error():
    train = make_wang_example3(60, random_state=0)
    tune = make_wang_example3(60, random_state=1)
    grid = {"C": wang_C_grid(step=10)}                               # 10^-3, 10^-2, ..., 10^3
    res = tune_on_holdout(SiblingMarginSVC(train.hierarchy), grid, train.X, train.y, tune.X, tune.y)
    assert len(res.params) == 7 and len(wang_C_grid()) == 61
    errors = [np.mean(SiblingMarginSVC(train.hierarchy, C=C).fit(train.X, train.y).predict(tune.X)
                      != tune.y) for C in grid["C"]]
    np.testing.assert_allclose(-res.scores, errors)
    assert res.best_params["C"] == grid["C"][int(np.argmin(errors))]  # first minimum on ties
    assert res.best_estimator.C == res.best_params["C"]
    # other losses through hiercvx scorers
    res_sub = tune_on_holdout(SiblingMarginSVC(train.hierarchy), grid, train.X, train.y, tune.X,
                              tune.y, scoring="neg_te_subtree", hierarchy=train.hierarchy)
    assert np.all(res_sub.scores <= 0)


def test_tuning_bad_input():
    ds = make_wang_example3(20, random_state=0)
    with pytest.raises(hc.InputError, match="empty"):
        tune_on_holdout(SiblingMarginSVC(), [], ds.X, ds.y, ds.X, ds.y)
    with pytest.raises(hc.InputError, match="scoring"):
        tune_on_holdout(SiblingMarginSVC(), {"C": [1.0]}, ds.X, ds.y, ds.X, ds.y, scoring="nope")
    with pytest.raises(hc.InputError, match="y_tune"):
        tune_on_holdout(SiblingMarginSVC(), {"C": [1.0]}, ds.X, ds.y, ds.X, ds.y[:5])
    res = tune_on_holdout(SiblingMarginSVC(), {"C": [-1.0, 1.0]}, ds.X, ds.y, ds.X, ds.y,
                          error_score=-np.inf)
    assert res.n_failed == 1 and res.best_params == {"C": 1.0}


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_bad_input(Est, wang3):
    X, y, H = wang3
    with pytest.raises(hc.InputError, match="C must be positive"):
        Est(H, C=0).fit(X, y)
    with pytest.raises(hc.LabelError, match="not nodes of the hierarchy"):
        Est(H).fit(X, np.r_[y[:-1], 99])
    with pytest.raises(hc.LabelError, match="one label per sample"):
        Est(H).fit(X[:3], [{1, 2}, {3}, {4}])
    with pytest.raises(hc.InputError, match="sigma"):
        Est(H, kernel=Kernel("rbf", sigma="silverman")).fit(X, y)
    with pytest.raises(hc.InputError, match="solver"):
        Est(H, solver="fastest").fit(X, y)
    Xbad = X.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError):
        Est(H).fit(Xbad, y)
    dag = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("a", "d")])
    with pytest.raises(hc.HierarchyError, match="trees"):
        Est(dag).fit(X[:4], ["c", "d", "c", "d"])
    with pytest.raises(hc.HierarchyError, match="single leaf"):
        Est(hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "a"})).fit(X[:4], ["b"] * 4)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_sequential_reference_size_advice_admits_every_node(monkeypatch, kernel):
    """``solver="reference"`` sizes every node's SVM before fitting any and names the largest:
    that limit admits the fit, one below it is refused again."""
    H = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                   "A3": "A", "B1": "B", "B2": "B"})
    rng = np.random.default_rng(0)
    y = ["A1", "A2", "A3", "B1", "B2"] * 5
    X = rng.standard_normal((len(y), 3)) + 2.0 * np.eye(5, 3)[[H.leaves.index(v) for v in y]]
    fitted = []
    original = SiblingMarginSVC.fit
    monkeypatch.setattr(SiblingMarginSVC, "fit",
                        lambda self, *a, **kw: fitted.append(1) or original(self, *a, **kw))
    make = lambda size: SequentialHierarchicalSVC(  # noqa: E731
        hierarchy=H, kernel=kernel, solver="reference", solver_options={"max_size": size})
    with pytest.raises(hc.ProblemTooLargeError, match="the largest of the 3 node SVMs") as err:
        make(10).fit(X, y)
    assert fitted == []   # refused before any node was fitted
    advised = err.value.size
    assert f"solver_options={{'max_size': {advised}}}" in str(err.value)
    with pytest.raises(hc.ProblemTooLargeError):
        make(advised - 1).fit(X, y)
    est = make(advised).fit(X, y)
    assert len(fitted) == 3 and est.score(X, y) > 0.5
