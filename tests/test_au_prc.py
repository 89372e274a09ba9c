"""AU(PRC) of node scores, as the Clus-HMC literature computes it, and node scores from class
scores that are consistent with the hierarchy."""

import numpy as np
import pytest

from hiercvx import metrics
from hiercvx.exceptions import InputError, LabelError
from hiercvx.hierarchy import Hierarchy

H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b"})


def brute_average_precision(truth, scores):
    """sum_k (R_k - R_{k-1}) P_k over the distinct thresholds, highest first."""
    order = np.argsort(-scores, kind="stable")
    total, out, prev_recall = truth.sum(), 0.0, 0.0
    for t in np.unique(scores)[::-1]:
        chosen = scores >= t
        tp = np.sum(truth & chosen)
        precision, recall = tp / chosen.sum(), tp / total
        out += (recall - prev_recall) * precision
        prev_recall = recall
    assert order is not None
    return out


def test_au_prc_is_the_micro_average_precision_of_the_evaluated_nodes():
    rng = np.random.default_rng(0)
    y = [{"a1"}, {"a2", "b1"}, {"b1"}, {"a1", "a2"}, {"b1"}]
    S = rng.standard_normal((5, len(H.nodes)))
    T = np.asarray(H.closure(y), dtype=bool)
    keep = np.array([v != "r" for v in H.nodes])
    expected = brute_average_precision(T[:, keep].ravel(), S[:, keep].ravel())
    assert metrics.au_prc(y, S, hierarchy=H) == pytest.approx(expected)
    # the same on an indicator input, and on the leaves' indicator (closed upward first)
    assert metrics.au_prc(T.astype(int), S, hierarchy=H) == pytest.approx(expected)


def test_au_prc_of_perfect_and_reversed_scores():
    y = [{"a1"}, {"b1"}, {"a2", "b1"}]
    T = np.asarray(H.closure(y), dtype=float)
    assert metrics.au_prc(y, T + 0.0, hierarchy=H) == pytest.approx(1.0)
    assert metrics.au_prc(y, -T, hierarchy=H) < 0.6


def test_evaluated_nodes_leave_out_the_nodes_every_training_sample_holds():
    """C-HMCNN's evaluation: every node but the root and the nodes every sample holds (on GO,
    the namespace roots); nodes without a training positive are scored too."""
    names = lambda mask: [v for v, m in zip(H.nodes, mask) if m]  # noqa: E731
    mask = metrics.evaluated_nodes([{"a1"}, {"a2"}], H)
    assert "a" not in names(mask) and H.root not in names(mask)   # both samples hold "a"
    assert set(names(mask)) == set(H.nodes) - {H.root, "a"}
    trained = metrics.evaluated_nodes([{"a1"}, {"a2"}], H, with_positives=True)
    assert names(trained) == ["a1", "a2"]
    y = [{"a1"}, {"b1"}]
    S = np.random.default_rng(1).standard_normal((2, len(H.nodes)))
    only = metrics.au_prc(y, S, hierarchy=H, y_train=[{"a1"}, {"a2"}])
    assert only == pytest.approx(metrics.au_prc(y, S, hierarchy=H, nodes=mask))


def test_node_scores_are_consistent_with_the_hierarchy():
    classes = ["a1", "a2", "b1"]
    C = np.array([[0.3, -1.0, 2.0], [-0.5, 0.2, -3.0]])
    N = metrics.node_scores(C, classes, H)
    col = {v: N[:, k] for k, v in enumerate(H.nodes)}
    np.testing.assert_allclose(col["a"], [0.3, 0.2])
    np.testing.assert_allclose(col["r"], [2.0, 0.2])
    np.testing.assert_allclose(col["b1"], C[:, 2])
    for v in H.nodes:  # no node above an ancestor
        for a in H.ancestors(v):
            assert np.all(col[v] <= col[a])


def test_au_prc_refuses_what_means_nothing():
    S = np.zeros((2, len(H.nodes)))
    with pytest.raises(InputError, match="hierarchy"):
        metrics.au_prc([{"a1"}, {"b1"}], S)
    with pytest.raises(InputError, match="shape"):
        metrics.au_prc([{"a1"}, {"b1"}], np.zeros((2, 3)), hierarchy=H)
    with pytest.raises(LabelError, match="no positive"):
        metrics.au_prc([{"a1"}, {"a1"}], S, hierarchy=H, nodes=np.array([v == "b" for v in H.nodes]))
    with pytest.raises(InputError, match="nodes must be"):
        metrics.au_prc([{"a1"}], S[:1], hierarchy=H, nodes=np.zeros(len(H.nodes), bool))


def test_nodes_is_a_bool_mask_or_node_names_never_positions():
    """Integer positions cast to bool would evaluate another node set; names map to their mask."""
    rng = np.random.default_rng(1)
    y, S = [{"a1"}, {"a2", "b1"}, {"b1"}], rng.random((3, len(H.nodes)))
    mask = np.array([v in ("a", "a1", "b1") for v in H.nodes])
    want = metrics.au_prc(y, S, hierarchy=H, nodes=mask)
    assert metrics.au_prc(y, S, hierarchy=H, nodes=["a", "a1", "b1"]) == want
    assert metrics.au_prc(y, S, hierarchy=H, nodes=np.array(["b1", "a1", "a"])) == want
    for positions in ([1, 2, 3, 4, 5, 0], [1, 3], np.array([0, 1, 1, 0, 1, 0])):
        with pytest.raises(InputError, match=r"bool mask over H.nodes or node names.*H.nodes\[i\]"):
            metrics.au_prc(y, S, hierarchy=H, nodes=positions)
    with pytest.raises(LabelError, match="not nodes of the hierarchy"):
        metrics.au_prc(y, S, hierarchy=H, nodes=["a", "zz"])
    with pytest.raises(InputError, match="one entry per node"):
        metrics.au_prc(y, S, hierarchy=H, nodes=mask[:-1])
    # the same in the calibration
    T = np.asarray(H.closure(y), dtype=float)
    by_names = metrics.fit_node_calibration(S, y, H, nodes=["a", "a1", "b1"])
    by_mask = metrics.fit_node_calibration(S, T, H, nodes=mask)
    assert (by_names.slope, by_names.intercept) == (by_mask.slope, by_mask.intercept)
    with pytest.raises(InputError, match="no node name"):
        metrics.fit_node_calibration(S, y, H, nodes=[1, 2, 3, 4, 5, 0])
