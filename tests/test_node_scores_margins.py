"""Node margins and calibrated node scores (hiercvx.metrics.node_margins, NodeCalibration): never
above an ancestor, free of a per-sample offset, equal to brute force on small trees and DAGs,
and the estimators' decodings agree with their predictions."""

import numpy as np
import pytest

from hiercvx import Hierarchy, metrics
from hiercvx.estimators import (HierarchicalSVC, NormalizedHierarchicalSVC, SharedNormSVC,
                                TopDownSVC)
from hiercvx.exceptions import InputError
from hiercvx.methods.cases import problem

TREE = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b",
                               "b2": "b", "b3": "b", "c": "r"})
DAG = Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("a", "y"),
                            ("b", "z"), ("x", "x1"), ("x", "x2")])
METHODS = [m for m in metrics.NODE_MARGINS]


def _classes(H, internal=()):
    return list(H.leaves) + list(internal)


def _brute(S, classes, H, method, threshold=0.0):
    """The definitions of node_margins, one node and one sample at a time."""
    below = {v: [k for k, c in enumerate(classes) if v in H.ancestors(c, inclusive=True)]
             for v in H.nodes}
    out = np.zeros((S.shape[0], len(H.nodes)))
    for i, s in enumerate(S):
        for j, v in enumerate(H.nodes):
            inside = [s[k] for k in below[v]]
            outside = [s[k] for k in range(len(classes)) if k not in below[v]]
            best = max(inside) if inside else s.min()
            if method == "best_class":
                out[i, j] = best
            elif method == "max_marginal":
                out[i, j] = best - (max(outside) if outside else s.min())
            elif method == "threshold":   # a node no class reaches is in no label set: < 0
                out[i, j] = (best - s.max() + threshold if inside else
                             np.nextafter(min(0.0, s.min() - s.max() + threshold), -np.inf))
            else:
                out[i, j] = (best - s.mean()) / (s.std() or 1.0)
    return out


@pytest.mark.parametrize("H, internal", [(TREE, ()), (TREE, ("b",)), (DAG, ()), (DAG, ("x",))],
                         ids=["tree", "tree-internal-class", "dag", "dag-internal-class"])
@pytest.mark.parametrize("method", METHODS)
def test_node_margins_agree_with_brute_force_and_the_hierarchy(H, internal, method):
    rng = np.random.default_rng(0)
    classes = _classes(H, internal)
    S = rng.normal(size=(25, len(classes)))
    S[0] = 0.0  # a tie everywhere
    m = metrics.node_margins(S, classes, H, method=method, threshold=0.3)
    np.testing.assert_allclose(m, _brute(S, classes, H, method, threshold=0.3), atol=1e-12)
    for k, v in enumerate(H.nodes):  # no node above an ancestor
        for a in H.ancestors(v):
            assert np.all(m[:, k] <= m[:, H.index(a)] + 1e-12)
    if method != "best_class":  # free of a per-sample offset (and of a scale: "standardized")
        shifted = S + rng.normal(size=(25, 1)) * 10
        np.testing.assert_allclose(metrics.node_margins(shifted, classes, H, method=method,
                                                        threshold=0.3), m, atol=1e-9)
    if method == "standardized":
        np.testing.assert_allclose(metrics.node_margins(3.0 * S, classes, H, method=method), m,
                                   atol=1e-9)


def test_max_marginal_is_positive_exactly_on_the_top_class_path():
    rng = np.random.default_rng(1)
    classes = _classes(TREE)
    S = rng.normal(size=(30, len(classes)))
    m = metrics.node_margins(S, classes, TREE, method="max_marginal")
    path = np.asarray(TREE.closure([classes[k] for k in S.argmax(axis=1)]), dtype=bool)
    root = TREE.index(TREE.root)
    assert np.all((m > 0)[:, np.arange(len(TREE.nodes)) != root]
                  == path[:, np.arange(len(TREE.nodes)) != root])


def test_threshold_margins_at_zero_are_the_label_sets_within_the_threshold():
    rng = np.random.default_rng(2)
    classes = _classes(DAG)
    S = rng.normal(size=(30, len(classes)))
    t = 0.4
    m = metrics.node_margins(S, classes, DAG, method="threshold", threshold=t)
    sets = [{c for c, s in zip(classes, row) if row.max() - s <= t} for row in S]
    np.testing.assert_array_equal(m >= 0, np.asarray(DAG.closure(sets), dtype=bool))


def test_threshold_margins_of_nodes_no_class_reaches_are_negative():
    """With every class within the threshold, the nodes no class reaches are still in no label
    set: their margins stay below 0 (and below their ancestors'), the others are kept."""
    classes = ["a1", "a2", "b1"]                  # b2, b3 and c: no class at or below
    S = np.array([[0.0, 0.2, 0.1], [1.0, -3.0, 0.5], [0.0, 0.0, 0.0]])
    for t in (0.0, 0.5, 5.0):
        m = metrics.node_margins(S, classes, TREE, method="threshold", threshold=t)
        sets = [{c for c, s in zip(classes, row) if row.max() - s <= t} for row in S]
        np.testing.assert_array_equal(m >= 0, np.asarray(TREE.closure(sets), dtype=bool))
        np.testing.assert_allclose(m, _brute(S, classes, TREE, "threshold", threshold=t))
        for k, v in enumerate(TREE.nodes):
            for a in TREE.ancestors(v):
                assert np.all(m[:, k] <= m[:, TREE.index(a)])
    reached = metrics.node_margins(S, classes, TREE, method="threshold", threshold=0.5)
    assert reached[0, TREE.index("a1")] == pytest.approx(0.3)   # kept: a class below
    for method in ("max_marginal", "standardized", "best_class"):
        np.testing.assert_allclose(metrics.node_margins(S, classes, TREE, method=method),
                                   _brute(S, classes, TREE, method))


def test_node_scores_refuse_bad_input_with_what_to_pass():
    m = np.zeros((4, len(TREE.nodes)))
    y = [{"a1"}, {"b1"}, {"a2"}, {"c"}]
    cal = metrics.fit_node_calibration(m, y, TREE)
    with pytest.raises(InputError, match="non-finite entry at sample 0"):
        cal.scores(np.full((1, len(TREE.nodes)), np.nan))
    with pytest.raises(InputError, match="method must name the margins, one of"):
        metrics.fit_node_calibration(m, y, TREE, method="nonsense")
    assert metrics.fit_node_calibration(m, y, TREE, method="threshold").method == "threshold"
    for call in (lambda: metrics.coherent_node_scores(np.zeros(len(TREE.nodes)), TREE),
                 lambda: cal.scores(np.zeros(len(TREE.nodes))),
                 lambda: metrics.node_scores(np.zeros(3), ["a1", "a2", "b1"], TREE)):
        with pytest.raises(InputError, match=r"= \(n_samples, \d+\), got \(\d+,\).*reshape\(1, -1\)"):
            call()
    with pytest.raises(InputError, match="list of class names, got the string"):
        metrics.node_scores(np.zeros((1, 2)), "a1", TREE)


def test_node_log_odds_and_calibration():
    y = [{"a1"}, {"a1", "b2"}, {"c"}, {"a2"}, {"b1"}]
    lo = metrics.node_log_odds(y, TREE)
    for k, v in enumerate(TREE.nodes):
        for a in TREE.ancestors(v):
            assert lo[k] <= lo[TREE.index(a)]
    assert lo[TREE.index("a")] == pytest.approx(np.log(3.5 / 2.5))
    # a slope recovered from data drawn from the calibration model itself
    rng = np.random.default_rng(3)
    n = 4000
    m = rng.normal(size=(n, len(TREE.nodes)))
    Y = rng.random((n, len(TREE.nodes))) < 1 / (1 + np.exp(-(lo - 0.3 + 1.5 * m)))
    # fitted on the leaves, which closing the labels upward leaves as drawn
    nodes = np.isin(np.asarray(TREE.nodes, dtype=object), TREE.leaves)
    cal = metrics.fit_node_calibration(m, Y.astype(int), TREE, nodes=nodes)
    np.testing.assert_allclose(cal.log_odds, metrics.node_log_odds(Y.astype(int), TREE))
    # the offsets are the drawn labels' own frequencies, not lo: only the slope is compared
    assert cal.slope == pytest.approx(1.5, rel=0.15)
    assert cal.scores(m).shape == m.shape
    with pytest.raises(InputError, match="method must be one of"):
        metrics.node_margins(np.zeros((2, 2)), ["a1", "a2"], TREE, method="nope")
    with pytest.raises(InputError, match="margins must have shape"):
        cal.scores(np.zeros((2, 3)))


# ------------------------------------------------------------------ estimators
X, Y, H = problem("multilabel", n=40, d=4, seed=0)
Xs, ys, _ = problem("tree", n=40, d=4, seed=0)


def _consistent(N, H):
    assert np.all(np.isfinite(N))
    for k, v in enumerate(H.nodes):
        for a in H.ancestors(v):
            assert np.all(N[:, k] <= N[:, H.index(a)] + 1e-12)


@pytest.mark.parametrize("make", [lambda: HierarchicalSVC(hierarchy=H),
                                  lambda: TopDownSVC(hierarchy=H)],
                         ids=["HierarchicalSVC", "TopDownSVC"])
def test_threshold_node_scores_at_zero_are_predict_closed_upward(make):
    est = make().fit(X, Y)
    m = est.node_decision_function(X, method="threshold")
    np.testing.assert_array_equal(m >= 0, np.asarray(H.closure(est.predict(X)), dtype=bool))
    for method in ("calibrated",) + metrics.NODE_MARGINS:
        _consistent(est.node_decision_function(X, method=method), H)


def test_calibrated_node_scores_of_the_estimators():
    for est, (Xa, ya) in [(HierarchicalSVC(hierarchy=H), (X, Y)),
                          (NormalizedHierarchicalSVC(hierarchy=H), (X, Y)),
                          (SharedNormSVC(hierarchy=H), (Xs, ys))]:
        est.fit(Xa, ya)
        cal = est.node_calibration_
        assert cal.slope >= 0 and cal.method == est._node_margin_method
        N = est.node_decision_function(Xa)
        _consistent(N, H)
        margins = est.node_decision_function(Xa, method=cal.method)
        np.testing.assert_allclose(N, cal.scores(margins))
        assert metrics.au_prc(ya, N, H, y_train=ya) > 0.5
    with pytest.raises(InputError, match="method must be one of"):
        est.node_decision_function(Xs, method="nope")


def test_calibrated_node_scores_survive_pickling():
    import pickle

    est = HierarchicalSVC(hierarchy=H).fit(X, Y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_allclose(again.node_decision_function(X), est.node_decision_function(X))
