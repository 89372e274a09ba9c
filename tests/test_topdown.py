"""TopDownSVC, the divide-and-conquer SVM of Cai thesis 7.4.2: checked against plain recursions
(routing, ranking, multi-label routing), against per-node MulticlassSVC fits on hand-gathered
training sets (thesis steps 1-2), and against MulticlassSVC on a one-level hierarchy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import check_estimator
from strategies import hierarchies

import hiercvx as hc
from hiercvx.estimators import MulticlassSVC
from hiercvx.estimators._base import flat_hierarchy
from hiercvx.estimators.topdown import TopDownSVC, top_down_ranking

# A deep, unbalanced tree with a one-child node ("c" -> "c1").
TREE = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r", "a1": "a", "a2": "a",
                                  "b1": "b", "b2": "b", "b3": "b", "b21": "b2", "b22": "b2",
                                  "c1": "c"})


# the same solver options on both sides of every comparison
OPTS = dict(tol=1e-6, max_iter=10000)


@pytest.fixture(scope="module")
def tree_data():
    X, y = make_classification(240, 10, n_informative=8, n_redundant=0, n_classes=7,
                               n_clusters_per_class=1, class_sep=1.5, random_state=3)
    leaves = np.array(TREE.leaves)
    return X, leaves[y]


@pytest.fixture(scope="module")
def tree_model(tree_data):
    X, y = tree_data
    return TopDownSVC(hierarchy=TREE, C=1.0, **OPTS).fit(X, y)


# ------------------------------------------------------------------ plain recursions (the oracles)
def _route(est, x):
    """Greedy routing, written as the thesis describes it: start at the root and let each
    node's classifier pick a child, until a leaf."""
    H, v = est.hierarchy_, est.hierarchy_.root
    while not H.is_leaf(v):
        clf = est.estimators_.get(v)
        if clf is not None:
            v = H.children(v)[int(clf.predict(x[None, :])[0])]
        else:  # the most frequent child in training (ties, or no data: the first)
            v = H.children(v)[int(np.argmax(est.child_counts_[v]))]
    return v


def _dfs_ranking(H, local, i):
    """Leaves in the order of a recursive depth-first walk visiting children by decreasing
    local score (stable: ties keep child order); DAG leaves keep their first visit."""
    out = []

    def visit(v):
        if H.is_leaf(v):
            if v not in out:
                out.append(v)
            return
        s = local[v][i]
        for j in sorted(range(len(s)), key=lambda j: -s[j]):
            visit(H.children(v)[j])

    visit(H.root)
    return out


def _multilabel_route(est, x):
    H, reached = est.hierarchy_, set()

    def visit(v):
        if H.is_leaf(v):
            reached.add(v)
            return
        clf = est.estimators_.get(v)
        if clf is not None:
            for j in clf.predict(x[None, :])[0]:
                visit(H.children(v)[int(j)])
        else:
            c = est.child_counts_[v]
            for j in np.flatnonzero(c == c.max()):
                visit(H.children(v)[int(j)])

    visit(H.root)
    return frozenset(reached)


# ------------------------------------------------------------------ routing and ranking
def test_routing_equals_plain_recursion(tree_model, tree_data):
    X, y = tree_data
    pred = tree_model.predict(X)
    assert list(pred) == [_route(tree_model, x) for x in X]
    assert tree_model.score(X, y) > 0.5  # it learned something (7 well-separated classes)
    # "c" has one child: no classifier, always routed through
    assert "c" not in tree_model.estimators_ and list(tree_model.routes_["c"]) == [0]
    assert set(tree_model.estimators_) == {"r", "a", "b", "b2"}


def test_ranking_equals_plain_dfs(tree_model, tree_data):
    X, _ = tree_data
    S = tree_model.class_scores(X[:40])
    local = tree_model.local_scores(X[:40])
    classes = list(tree_model.classes_)
    for i in range(40):
        ranked = [classes[j] for j in np.argsort(-S[i], kind="stable")]
        assert ranked == _dfs_ranking(TREE, local, i)
    assert np.array_equal(np.sort(S, axis=1), np.tile(np.arange(len(classes)), (40, 1)))


@settings(max_examples=40, deadline=None)
@given(H=hierarchies(min_nodes=2, max_nodes=10), seed=st.integers(0, 2**16), ties=st.booleans())
def test_top_down_ranking_property(H, seed, ties):
    """Random trees and DAGs, random local scores (with ties): the vectorized ranking is the
    recursive depth-first order, and its top is greedy routing."""
    rng = np.random.default_rng(seed)
    n = 5
    local = {}
    for v in H.nodes:
        k = len(H.children(v))
        if k:
            s = rng.standard_normal((n, k))
            local[v] = np.round(s) if ties else s
    S = top_down_ranking(H, local, H.leaves)
    for i in range(n):
        ranked = [H.leaves[j] for j in np.argsort(-S[i], kind="stable")]
        assert ranked == _dfs_ranking(H, local, i)
        v = H.root
        while not H.is_leaf(v):
            v = H.children(v)[int(np.argmax(local[v][i]))]
        assert ranked[0] == v


def test_node_training_sets_follow_thesis_steps(tree_model, tree_data):
    """Steps 1-2 of thesis 7.4.2 done by hand: the samples with a label below the node, the
    child holding that label as target; a MulticlassSVC on them gives the same local scores."""
    X, y = tree_data
    for node in ("r", "b"):
        children = TREE.children(node)
        rows, targets = [], []
        for i, label in enumerate(y):
            for j, c in enumerate(children):
                if label in TREE.descendants(c, inclusive=True):
                    rows.append(i)
                    targets.append(j)
        ref = MulticlassSVC(C=1.0, **OPTS).fit(X[rows], np.array(targets))
        assert np.allclose(tree_model.local_scores(X)[node], ref.class_scores(X), atol=1e-8)


def test_one_level_hierarchy_equals_multiclass_svc(tree_data):
    X, y = tree_data
    ref = MulticlassSVC(C=0.5, **OPTS).fit(X, y)
    for H in (None, flat_hierarchy(sorted(set(y)))):
        est = TopDownSVC(hierarchy=H, C=0.5, **OPTS).fit(X, y)
        assert np.array_equal(est.predict(X), ref.predict(X))
        assert np.array_equal(est.classes_, ref.classes_)
        root = est.hierarchy_.root
        assert np.allclose(est.local_scores(X)[root], ref.class_scores(X), atol=1e-8)
        # the ranking is the order of the SVM's class scores
        S, R = est.class_scores(X), ref.class_scores(X)
        assert np.array_equal(np.argsort(-S, axis=1, kind="stable"), np.argsort(-R, axis=1, kind="stable"))


def test_reference_solver_matches_fast(tree_data):
    X, y = tree_data
    X, y = X[:60], y[:60]
    fast = TopDownSVC(hierarchy=TREE, tol=1e-8, max_iter=5000).fit(X, y)
    ref = TopDownSVC(hierarchy=TREE, solver="reference").fit(X, y)
    lf, lr = fast.local_scores(X), ref.local_scores(X)
    for v in lf:
        assert np.allclose(lf[v], lr[v], atol=1e-4)
    assert np.mean(fast.predict(X) == ref.predict(X)) > 0.95


# ------------------------------------------------------------------ multi-label, DAGs, kernels
def test_multilabel_routing_equals_recursion(tree_data):
    X, y = tree_data
    rng = np.random.default_rng(0)
    leaves = TREE.leaves
    Y = [frozenset({a, leaves[rng.integers(len(leaves))]}) if rng.random() < 0.4 else frozenset({a})
         for a in y]
    est = TopDownSVC(hierarchy=TREE, tol=1e-6).fit(X, Y)
    assert est.multilabel_
    pred = est.predict(X)
    assert all(p for p in pred)
    assert pred == [_multilabel_route(est, x) for x in X]
    # the ranking's top class is always one of the routed leaves
    top = est.classes_[np.argmax(est.class_scores(X), axis=1)]
    assert all(t in p for t, p in zip(top, pred))


def test_dag_leaf_under_two_children():
    """A DAG: "y" is below both "A" and "B", so a sample labelled "y" has both children as
    targets at the root (thesis step 2): no ranking constraint there, so the root SVM is the
    one trained on the "x" (-> A) and "z" (-> B) samples only; below A and B "y" counts."""
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"),
                                 ("B", "z")])
    X, yi = make_classification(90, 6, n_informative=5, n_redundant=0, n_classes=3,
                                n_clusters_per_class=1, random_state=1)
    y = np.array(["x", "y", "z"])[yi]
    est = TopDownSVC(hierarchy=H, **OPTS).fit(X, y)
    xz = y != "y"
    root = MulticlassSVC(**OPTS).fit(X[xz], (y[xz] == "z").astype(int))
    assert np.allclose(est.local_scores(X)["r"], root.class_scores(X), atol=1e-8)
    below_a = MulticlassSVC(**OPTS).fit(X[y != "z"], (y[y != "z"] == "y").astype(int))
    assert np.allclose(est.local_scores(X)["A"], below_a.class_scores(X), atol=1e-8)
    assert list(est.predict(X)) == [_route(est, x) for x in X]
    S, local = est.class_scores(X), est.local_scores(X)
    for i in range(len(X)):
        assert [est.classes_[j] for j in np.argsort(-S[i], kind="stable")] == _dfs_ranking(H, local, i)


DAG = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"),
                               ("B", "z"), ("B", "C"), ("C", "w"), ("C", "y"), ("A", "v")])


@pytest.mark.parametrize("multilabel", [False, True], ids=["single", "label sets"])
def test_threshold_node_margins_on_a_dag_are_predict_closed_upward(multilabel):
    """An ancestor of the predicted class need not be on its route ("y" routed r -> B -> y is
    also below A): its margin is >= 0 all the same, as is every node of the closed label set,
    and no other node's; no node scores above an ancestor."""
    rng = np.random.default_rng(0)
    leaves = list(DAG.leaves)
    yi = rng.integers(0, len(leaves), 150)
    X = rng.standard_normal((150, 3)) + 1.5 * rng.standard_normal((len(leaves), 3))[yi]
    y = np.array(leaves)[yi]
    if multilabel:
        y = [{a, leaves[(i + 1) % len(leaves)]} if k % 2 else {a} for k, (a, i) in enumerate(zip(y, yi))]
    est = TopDownSVC(hierarchy=DAG, **OPTS).fit(X, y)
    closed = np.asarray(DAG.closure(list(est.predict(X))), dtype=bool)
    methods = ("threshold",) if multilabel else ("threshold", "max_marginal")
    for method in methods:
        m = est.node_decision_function(X, method=method)
        np.testing.assert_array_equal(m >= 0, closed)
        for v in DAG.nodes:
            for p in DAG.parents(v):
                assert np.all(m[:, DAG.index(v)] <= m[:, DAG.index(p)])
    # the case the routes alone miss: a predicted "y" reached through B only
    assert np.any(closed[:, DAG.index("A")] & closed[:, DAG.index("B")])


def test_threshold_node_margins_on_a_tree_are_the_smallest_local_margin_on_the_path(tree_data):
    X, y = tree_data
    est = TopDownSVC(hierarchy=TREE, **OPTS).fit(X, y)
    local = est.local_scores(X)
    m = est.node_decision_function(X, method="threshold")
    for v in TREE.nodes[1:]:
        chain, u = [], v
        while TREE.parents(u):  # up the path: each branching parent's local margin of u
            p = TREE.parents(u)[0]
            S = local[p]
            if S.shape[1] > 1:
                seen = np.isfinite(S)  # an unseen child: one below the lowest seen score
                low = np.where(seen, S, np.inf).min(axis=1, keepdims=True)
                S = np.where(seen, S, low - 1.0)
                chain.append(S[:, TREE.children(p).index(u)] - S.max(axis=1))
            u = p
        if chain:
            np.testing.assert_allclose(m[:, TREE.index(v)], np.min(chain, axis=0))


def test_precomputed_kernel_matches_linear(tree_data):
    X, y = tree_data
    X, y, Xt = X[:120], y[:120], X[120:]
    lin = TopDownSVC(hierarchy=TREE, tol=1e-8, max_iter=5000).fit(X, y)
    pre = TopDownSVC(hierarchy=TREE, kernel="precomputed", tol=1e-8, max_iter=5000).fit(X @ X.T, y)
    ll, lp = lin.local_scores(Xt), pre.local_scores(Xt @ X.T)
    for v in ll:
        assert np.allclose(ll[v], lp[v], atol=1e-4)
    assert np.mean(lin.predict(Xt) == pre.predict(Xt @ X.T)) > 0.95


def test_zero_weight_equals_removal(tree_data):
    X, y = tree_data
    w = np.ones(len(y))
    w[::3] = 0.0
    a = TopDownSVC(hierarchy=TREE).fit(X, y, sample_weight=w)
    b = TopDownSVC(hierarchy=TREE).fit(X[w > 0], y[w > 0])
    for v, s in a.local_scores(X).items():
        assert np.allclose(s, b.local_scores(X)[v], atol=1e-6)


def test_node_without_training_data():
    """No sample below "b": its node has no classifier, routing there picks its first child."""
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                   "b1": "b", "b2": "b"})
    X, yi = make_classification(60, 4, n_informative=3, n_redundant=0, n_classes=2,
                                n_clusters_per_class=1, random_state=0)
    y = np.array(["a1", "a2"])[yi]
    est = TopDownSVC(hierarchy=H).fit(X, y)
    assert list(est.routes_["b"]) == [] and list(est.routes_["r"]) == [0]
    assert set(est.predict(X)) <= {"a1", "a2"}
    assert est.class_scores(X).shape == (60, 4)


# ------------------------------------------------------------------ bad input
def test_bad_input(tree_data):
    X, y = tree_data
    with pytest.raises(hc.LabelError, match="internal node"):  # refused only when asked
        TopDownSVC(hierarchy=TREE, internal_labels="refuse").fit(X[:4], ["a1", "b", "a2", "c1"])
    with pytest.raises(hc.LabelError, match="not nodes of the hierarchy"):
        TopDownSVC(hierarchy=TREE).fit(X[:3], ["a1", "zz", "a2"])
    with pytest.raises(hc.LabelError, match="empty label set"):
        TopDownSVC(hierarchy=TREE).fit(X[:3], [{"a1"}, set(), {"b1"}])
    with pytest.raises(hc.InputError, match="C"):
        TopDownSVC(hierarchy=TREE, C=0.0).fit(X, y)
    with pytest.raises(hc.InputError, match="solver"):
        TopDownSVC(hierarchy=TREE, solver="magic").fit(X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        TopDownSVC(hierarchy=TREE).fit(Xn, y)


# ------------------------------------------------------------------ scikit-learn rules
# Justified exceptions (as for MulticlassSVC, which every node is): sample-weight
# equivalence compares decision functions at rtol=1e-7; two different QP solves agree only to
# the certified gap, and a near-tie between two local scores can then swap two ranks.
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": "scores agree to solver accuracy only",
    "check_sample_weight_equivalence_on_sparse_data": "scores agree to solver accuracy only",
}


def test_check_estimator():
    results = check_estimator(TopDownSVC(), on_fail=None,
                              expected_failed_checks=EXPECTED_FAILURES)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


def test_samples_with_every_child_constrain_nothing():
    """At a node, a sample whose targets are all the children (seen there) has no (relevant,
    irrelevant) pair; it is left out, repeatedly: {a,b,c} goes first, then {a,b} (only a and b
    are left), and the root SVM is the one trained on the {a} and {b} samples."""
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"})
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 3))
    Y = [{"a", "b", "c"}] * 5 + [{"a", "b"}] * 5 + [{"a"}] * 15 + [{"b"}] * 15
    X[10:25, 0] += 2.0
    est = TopDownSVC(hierarchy=H, **OPTS).fit(X, Y)
    ref = MulticlassSVC(**OPTS).fit(X[10:], [frozenset({0})] * 15 + [frozenset({1})] * 15)
    S = est.local_scores(X)["r"]
    assert np.allclose(S[:, :2], ref.class_scores(X), atol=1e-8) and np.all(S[:, 2] == -np.inf)
    assert np.all(est.class_scores(X)[:, 2] == 0)  # c is ranked last
    assert list(est.child_counts_["r"]) == [25, 25, 5]


def test_intercept_is_passed_to_every_node(tree_data):
    """fit_intercept / intercept_scaling reach each node's MulticlassSVC: a one-level
    hierarchy is MulticlassSVC with the same bias; fit_intercept=False the former model."""
    X, y = tree_data
    for options in ({}, {"intercept_scaling": 3.0}, {"fit_intercept": False}):
        ref = MulticlassSVC(C=0.5, **options, **OPTS).fit(X, y)
        est = TopDownSVC(C=0.5, **options, **OPTS).fit(X, y)
        node = est.estimators_[est.hierarchy_.root]
        assert node.fit_intercept == options.get("fit_intercept", True)
        assert np.allclose(node.intercept_, ref.intercept_, atol=1e-8)
        assert np.allclose(est.local_scores(X)[est.hierarchy_.root], ref.class_scores(X), atol=1e-8)
    assert np.any(TopDownSVC(C=0.5, **OPTS).fit(X, y).estimators_[est.hierarchy_.root].intercept_ != 0)
    assert np.all(node.intercept_ == 0)


def test_max_paths_bounds_the_enumerated_paths():
    """A DAG with more root-to-leaf paths than ``max_paths`` is refused before training; the
    limit is the estimator's parameter."""
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("a", "y")])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = np.array(["x", "y"] * 10, dtype=object)
    TopDownSVC(hierarchy=H, max_paths=3).fit(X, y)
    with pytest.raises(hc.ProblemTooLargeError, match="max_paths=2"):
        TopDownSVC(hierarchy=H, max_paths=2).fit(X, y)
    with pytest.raises(hc.InputError, match="max_paths"):
        TopDownSVC(hierarchy=H, max_paths=0).fit(X, y)


# ------------------------------------------------------------------ reference size, DataFrames
def _advised(err) -> int:
    message = str(err.value)
    advised = int(message.split("solver_options={'max_size': ")[1].split("}")[0])
    assert advised == err.value.size
    return advised


def test_reference_size_advice_admits_every_node(monkeypatch):
    """``solver="reference"`` checks every node's SVM against ``max_size`` before fitting any,
    and names the largest: that limit admits the fit, one below it is refused again."""
    H = hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                   "B1": "B", "B2": "B"})
    rng = np.random.default_rng(0)
    leaves = ["A1", "A2", "B1", "B2"] * 4
    X = np.tile(np.eye(3), (6, 1))[:16] * 3 + 0.3 * rng.standard_normal((16, 3))
    Y = [{v} if i % 3 else {v, "B1" if v[0] == "A" else "A1"} for i, v in enumerate(leaves)]
    fitted = []
    original = MulticlassSVC.fit
    monkeypatch.setattr(MulticlassSVC, "fit",
                        lambda self, *a, **kw: fitted.append(1) or original(self, *a, **kw))
    with pytest.raises(hc.ProblemTooLargeError, match="the largest of the 3 node SVMs") as err:
        TopDownSVC(hierarchy=H, solver="reference", solver_options={"max_size": 10}).fit(X, Y)
    assert fitted == []   # refused before any node was fitted
    advised = _advised(err)
    with pytest.raises(hc.ProblemTooLargeError) as again:
        TopDownSVC(hierarchy=H, solver="reference",
                   solver_options={"max_size": advised - 1}).fit(X, Y)
    assert _advised(again) == advised
    est = TopDownSVC(hierarchy=H, solver="reference", solver_options={"max_size": advised}).fit(X, Y)
    assert len(est.estimators_) == 3 and est.multilabel_


@pytest.mark.parametrize("solver", ["fast", "reference"])
def test_dataframe_fit_emits_no_feature_name_warning(tree_data, solver):
    """Fitted on a DataFrame, the fit itself (its node calibration included) never scores an
    array without the feature names."""
    pd = pytest.importorskip("pandas")
    import warnings

    X, y = tree_data
    frame = pd.DataFrame(X[:60], columns=[f"f{j}" for j in range(X.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = TopDownSVC(hierarchy=TREE, solver=solver).fit(frame, y[:60])
        est.predict(frame)
    assert list(est.feature_names_in_) == list(frame.columns)


def test_dense_and_csr_choose_the_same_children_at_a_threshold_tie():
    """A child whose gap to the best child equals the node classifier's threshold in the dense
    product, and exceeds it by round-off in the CSR one (the products sum in another order),
    is chosen on both copies of X."""
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "C": "r"})
    X = rng.standard_normal((200, 30)) * (rng.random((200, 30)) < 0.3)
    X *= 10.0 ** rng.uniform(-3, 3, size=(1, 30))  # wide magnitudes: products round differently
    Y = [{"A", "B"} if z else {"C"} for z in X[:, :5].sum(axis=1) > 0]
    est = TopDownSVC(hierarchy=H).fit(X, Y)
    dense, csr = est._local(X)["r"], est._local(sp.csr_matrix(X))["r"]
    gap_dense = dense.max(axis=1, keepdims=True) - dense
    gap_csr = csr.max(axis=1, keepdims=True) - csr
    rows, cols = np.nonzero((gap_csr > gap_dense) & (gap_dense > 0))
    assert rows.size  # rounding differs somewhere: the case this test is about
    i, c = rows[0], cols[0]
    est.estimators_["r"].threshold_ = float(gap_dense[i, c])  # the tie, in the dense product
    chosen_dense = est.predict(X[i:i + 1])[0]
    assert H.children("r")[c] in chosen_dense  # local scores follow the children
    assert est.predict(sp.csr_matrix(X[i:i + 1]))[0] == chosen_dense
