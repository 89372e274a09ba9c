"""Tests of hiercvx.losses: hand-computed values, brute-force oracles, properties, bad input."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import losses as L
from hiercvx.exceptions import HierarchyError, InputError, LabelError

try:
    from strategies import dag_fixture, tree_fixture  # noqa: F401 (the fixtures dag, tree)
    from strategies import (hierarchies, hierarchy_and_labels, label_samples,
                            label_sets_and_scores, trees)
except ImportError:  # tests/ imported as a package
    from tests.strategies import dag_fixture, tree_fixture  # noqa: F401
    from tests.strategies import (hierarchies, hierarchy_and_labels, label_samples,
                                  label_sets_and_scores, trees)

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SYMMETRIC = ["zero_one", "symmetric_difference", "half_symmetric", "normalized", "subtree",
             "leaf_count", "structural", "sibling"]


# ---------------------------------------------------------------------- brute-force oracles
def anc_set(H, Y):
    """anc(Y) by names, from H.ancestors (independent of the matrix code)."""
    if not isinstance(Y, (set, frozenset)):
        Y = {Y}
    out = set()
    for y in Y:
        out |= set(H.ancestors(y, inclusive=True))
    return out


def bf_sibling_costs(H, combine=None):
    c = {}
    for v in H.nodes:  # parents before children
        ps = H.parents(v)
        if not ps:
            c[v] = 1.0
        else:
            shares = [c[p] / len(H.children(p)) for p in ps]
            c[v] = shares[0] if combine is None else combine(shares)
    return c


def bf_subtree_costs(H):
    K = max(len(H) - 1, 1)  # a root-only hierarchy: K = 1 (the root cost then never matters)
    return {v: len(H.descendants(v, inclusive=True)) / K for v in H.nodes}


def bf_h_loss(H, y, yp, cost):
    a, b = anc_set(H, y), anc_set(H, yp)
    mism = a ^ b
    return sum(cost[v] for v in mism if not any(u in mism for u in H.ancestors(v)))


def bf_loss(H, name, y, yp, alpha=None):
    a, b = anc_set(H, y), anc_set(H, yp)
    if name == "zero_one":
        return float(a != b)
    if name == "symmetric_difference":
        return len(a ^ b)
    if name == "half_symmetric":
        return len(a ^ b) / 2
    if name == "normalized":
        return 0.5 * (len(a - b) / max(len(a) - 1, 1) + len(b - a) / max(len(b) - 1, 1))
    if name == "structural":
        return np.sqrt(sum(alpha[H.index(v)] for v in a ^ b))
    if name == "leaf_count":
        leaves = set(H.leaves)
        return len((a & leaves) ^ (b & leaves))
    if name == "subtree":
        return bf_h_loss(H, y, yp, bf_subtree_costs(H))
    if name == "sibling":
        return bf_h_loss(H, y, yp, bf_sibling_costs(H, None if H.is_tree else np.mean))
    raise AssertionError(name)


def kwargs_for(H, name):
    if name == "structural":
        return {"alpha": np.linspace(0.1, 1.0, len(H))}
    if name == "sibling" and not H.is_tree:
        return {"multi_parent": "mean"}
    return {}


# ---------------------------------------------------------------------- hand-computed values
def test_tree_hand_values(tree):
    yt = ["A1", "A1", "A", "B1a", "A1"]
    yp = ["A2", "B1a", "A1", "B1b", "A1"]
    np.testing.assert_array_equal(L.zero_one(tree, yt, yp), [1, 1, 1, 1, 0])
    np.testing.assert_array_equal(L.symmetric_difference(tree, yt, yp), [2, 5, 1, 2, 0])
    np.testing.assert_array_equal(L.symmetric_difference(tree, yt, yp, half=True), [1, 2.5, 0.5, 1, 0])
    # (7.2): A1 vs A2: 1/2 (1/2 + 1/2); A1 vs B1a: 1/2 (2/2 + 3/3); A vs A1: 1/2 (0/1 + 1/2);
    # B1a vs B1b: 1/2 (1/3 + 1/3)
    np.testing.assert_allclose(L.normalized_hierarchical(tree, yt, yp), [0.5, 1.0, 0.25, 1 / 3, 0])
    # the paper's sentence after (6) gives l_sib the costs of (4) and l_sub those of (5); the
    # equations (and the names before them) are the other way round, and are what is used here
    # sibling costs (5): root 1, A = B = 1/2, A1 = A2 = 1/4, B1 = 1/2 (only child), B1a = B1b = 1/4
    np.testing.assert_allclose(L.sibling_costs(tree), [1, .5, .5, .25, .25, .5, .25, .25])
    np.testing.assert_allclose(L.sibling_loss(tree, yt, yp), [0.5, 1.0, 0.25, 0.5, 0])
    # subtree costs (4) with K = 7: A 3/7, B 4/7, B1 3/7, leaves 1/7
    np.testing.assert_allclose(L.subtree_costs(tree)[1:], np.array([3, 4, 1, 1, 3, 1, 1]) / 7)
    np.testing.assert_allclose(L.subtree_loss(tree, yt, yp), np.array([2, 7, 1, 2, 0]) / 7)
    np.testing.assert_array_equal(L.leaf_count(tree, yt, yp), [2, 2, 1, 2, 0])
    alpha = np.array([0.0, 0.5, 0.2, 0.5, 0.5, 0.3, 0.5, 0.5])
    np.testing.assert_allclose(L.normalized_structural(tree, yt, yp, alpha),
                               np.sqrt([1.0, 0.5 + 0.5 + 0.2 + 0.3 + 0.5, 0.5, 1.0, 0]))


def test_single_labels_and_label_sets(tree):
    assert L.symmetric_difference(tree, "A1", "B1a") == 5.0
    # anc({A1, A2}) (-) anc({B1a}) = {A, A1, A2, B, B1, B1a}   (thesis (3.12) on sets)
    assert L.symmetric_difference(tree, {"A1", "A2"}, {"B1a"}) == 6.0
    assert L.zero_one(tree, {"A", "A1"}, "A1") == 0.0  # same closed set
    np.testing.assert_array_equal(
        L.symmetric_difference(tree, [{"A1", "B1a"}, {"A2"}], [{"A1"}, {"A2", "B1b"}]), [3, 3])


def test_dag_hand_values(dag):
    # anc(C) = {root, A, B, C}, anc(D) = {root, A, D}, anc(F) = {root, B, F}
    np.testing.assert_array_equal(L.symmetric_difference(dag, ["C", "C", "D"], ["D", "F", "F"]), [3, 3, 4])
    # C vs D: disagreements {B, C, D}; C has the disagreeing parent B, so the top ones are B and D
    # subtree costs, K = 5: sub(B) = {B, C, F} -> 3/5, sub(D) = 1/5
    assert L.subtree_loss(dag, "C", "D") == pytest.approx(4 / 5)
    # sibling costs with multi_parent="mean": A = B = 1/2, C = mean(1/4, 1/4), D = F = 1/4
    np.testing.assert_allclose(L.sibling_costs(dag, multi_parent="mean"), [1, .5, .5, .25, .25, .25])
    assert L.sibling_loss(dag, "C", "D", multi_parent="mean") == pytest.approx(0.75)
    assert L.normalized_hierarchical(dag, "C", "D") == pytest.approx(0.5 * (2 / 3 + 1 / 2))
    assert L.leaf_count(dag, "C", "D") == 2


def test_loss_matrix_tree(tree):
    M = L.loss_matrix(tree, "symmetric_difference")  # classes = leaves A1, A2, B1a, B1b
    np.testing.assert_array_equal(M, [[0, 2, 5, 5], [2, 0, 5, 5], [5, 5, 0, 2], [5, 5, 2, 0]])
    np.testing.assert_array_equal(L.loss_matrix(tree), M / 2)  # default: Delta_h
    np.testing.assert_allclose(L.loss_matrix(tree, "subtree") * 7, [[0, 2, 7, 7], [2, 0, 7, 7],
                                                                   [7, 7, 0, 2], [7, 7, 2, 0]])
    M2 = L.loss_matrix(tree, "sibling", classes=["A", "B1", "root"])
    np.testing.assert_allclose(M2, [[0, 1, .5], [1, 0, .5], [.5, .5, 0]])


def test_symmetric_difference_is_tree_path_length(tree):
    g = tree.to_networkx().to_undirected()
    M = L.loss_matrix(tree, "symmetric_difference", classes=tree.nodes)
    for a, b in itertools.product(range(len(tree)), repeat=2):
        assert M[a, b] == nx.shortest_path_length(g, tree.nodes[a], tree.nodes[b])


def test_sibling_costs_split_parent_cost(tree):
    c = L.sibling_costs(tree)
    for v in tree.nodes:
        kids = tree.children(v)
        if kids:
            assert c[tree.indices(kids)].sum() == pytest.approx(c[tree.index(v)])


def test_normalized_is_scaled_delta_h_at_equal_depth(tree):
    # thesis 7.2: with every class at depth d, (7.2) is Delta_h / d
    classes = ["A1", "A2"]
    np.testing.assert_allclose(L.loss_matrix(tree, "normalized", classes) * 2,
                               L.loss_matrix(tree, "half_symmetric", classes))


def test_structural_with_unit_alpha_is_root_of_symmetric_difference(dag):
    ones = np.ones(len(dag))
    np.testing.assert_allclose(L.loss_matrix(dag, "structural", dag.nodes, alpha=ones),
                               np.sqrt(L.loss_matrix(dag, "symmetric_difference", dag.nodes)))


def test_indicator_matrix_input(tree):
    ind = np.zeros((2, len(tree)), dtype=int)
    ind[0, tree.index("A1")] = 1          # not closed: closed here
    ind[1, tree.indices(["root", "B", "B1", "B1a"])] = 1
    np.testing.assert_array_equal(L.symmetric_difference(tree, ind, ["A2", "B1a"]), [2, 0])


def test_ranking_loss_hand_value(tree):
    S = np.array([[1, 2, 0, 0], [3, 2, 1, 0.0]])  # columns: A1, A2, B1a, B1b
    Y = [["A1"], ["A1", "B1a"]]
    # sample 0: A2 above A1 -> |anc(A1) (-) anc(A2)| = 2; sample 1: A2 above B1a -> 5
    np.testing.assert_array_equal(L.ranking_loss(tree, Y, S), [2, 5])
    # ties: B1a and B1b tie in sample 0 but B1b is not above A1 (0 < 1); make a tie with A1
    S2 = np.array([[1, 1, 0, 0.0]])
    assert L.ranking_loss(tree, [["A1"]], S2)[0] == 0
    assert L.ranking_loss(tree, [["A1"]], S2, ties="count")[0] == 2
    assert L.ranking_loss(tree, [["A1"]], S2, ties="half")[0] == 1


# ---------------------------------------------------------------------- oracles on random input
@PROPS
@given(hierarchy_and_labels(), st.sampled_from(SYMMETRIC))
def test_losses_match_brute_force(data, name):
    H, yt, yp = data
    kw = kwargs_for(H, name)
    got = L.pairwise_loss(H, yt, yp, name, **kw)
    want = [bf_loss(H, name, a, b, kw.get("alpha")) for a, b in zip(yt, yp)]
    np.testing.assert_allclose(got, want, atol=1e-12)


@PROPS
@given(hierarchies(), st.sampled_from(SYMMETRIC))
def test_loss_matrix_matches_rowwise_route(H, name):
    # outer-product route (loss_matrix) vs row-by-row route on every pair
    kw = kwargs_for(H, name)
    M = L.loss_matrix(H, name, classes=H.nodes, **kw)
    a, b = zip(*itertools.product(H.nodes, repeat=2))
    rowwise = L.pairwise_loss(H, list(a), list(b), name, **kw).reshape(len(H), len(H))
    np.testing.assert_allclose(M, rowwise, atol=1e-12)


@PROPS
@given(hierarchies(), st.sampled_from(SYMMETRIC))
def test_loss_matrix_symmetric_zero_diagonal_nonnegative(H, name):
    M = L.loss_matrix(H, name, classes=H.nodes, **kwargs_for(H, name))
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    np.testing.assert_array_equal(np.diag(M), 0)
    assert np.all(M >= 0)


@PROPS
@given(hierarchies(), st.sampled_from(["symmetric_difference", "half_symmetric", "structural",
                                       "zero_one", "leaf_count"]))
def test_triangle_inequality(H, name):
    M = L.loss_matrix(H, name, classes=H.nodes, **kwargs_for(H, name))
    # M[a, c] <= M[a, b] + M[b, c] for every a, b, c
    assert np.all(M[:, None, :] <= M[:, :, None] + M[None, :, :] + 1e-12)


@PROPS
@given(st.data())
def test_triangle_inequality_on_label_sets(data):
    H = data.draw(hierarchies())
    sets = [data.draw(label_samples(H, n_samples=3, multilabel=True, allow_empty=True))
            for _ in range(3)]
    a, b, c = sets
    ab = L.symmetric_difference(H, a, b)
    bc = L.symmetric_difference(H, b, c)
    ac = L.symmetric_difference(H, a, c)
    assert np.all(ac <= ab + bc)


@PROPS
@given(st.data())
def test_set_loss_bounded_by_pairwise_sum(data):
    # Cai thesis, Proposition 1: |anc(Y) (-) anc(Y')| <= sum_{y in Y-Y', y' in Y'-Y} |anc(y) (-) anc(y')|
    H = data.draw(hierarchies())
    Y, Yp = data.draw(label_samples(H, n_samples=2, multilabel=True, leaves_only=True))
    if Y <= Yp or Yp <= Y:
        return
    lhs = L.symmetric_difference(H, Y, Yp)
    rhs = sum(L.symmetric_difference(H, y, yp) for y in Y - Yp for yp in Yp - Y)
    assert lhs <= rhs


@PROPS
@given(hierarchies())
def test_costs_match_brute_force(H):
    want_sub = bf_subtree_costs(H)
    if True:
        np.testing.assert_allclose(L.subtree_costs(H), [want_sub[v] for v in H.nodes])
    if H.is_tree:
        want = bf_sibling_costs(H)
        np.testing.assert_allclose(L.sibling_costs(H), [want[v] for v in H.nodes])
    else:
        for rule, fn in (("mean", np.mean), ("min", min), ("max", max)):
            want = bf_sibling_costs(H, fn)
            np.testing.assert_allclose(L.sibling_costs(H, multi_parent=rule), [want[v] for v in H.nodes])


@PROPS
@given(hierarchies(), st.data())
def test_ranking_loss_matches_brute_force(H, data):
    classes = H.leaves
    Y, S = data.draw(label_sets_and_scores(H, max_samples=4))
    n = len(Y)
    ties = data.draw(st.sampled_from(["ignore", "count", "half"]))
    got = L.ranking_loss(H, Y, S, ties=ties)
    col = {c: j for j, c in enumerate(classes)}
    for i in range(n):
        want = 0.0
        for y in Y[i]:
            for yb in set(classes) - Y[i]:
                d = len(anc_set(H, y) ^ anc_set(H, yb))
                sy, sb = S[i, col[y]], S[i, col[yb]]
                if sb > sy:
                    want += d
                elif sb == sy:
                    want += {"ignore": 0, "count": 1, "half": 0.5}[ties] * d
        assert got[i] == pytest.approx(want)


@settings(max_examples=30, deadline=None)
@given(trees(min_nodes=2))
def test_tree_sibling_loss_between_siblings(H):
    # two sibling leaves differ only below their common parent: 2 c_leaf
    c = L.sibling_costs(H)
    for v in H.nodes:
        kids = [k for k in H.children(v)]
        if len(kids) >= 2:
            a, b = kids[:2]
            assert L.sibling_loss(H, a, b) == pytest.approx(c[H.index(a)] + c[H.index(b)])


def test_large_sparse_input_is_fast_enough():
    # 2 000 samples on a 3-level tree of 1 111 nodes: everything stays sparse and vectorized
    paths = [f"{a}/{a}{b}/{a}{b}{c}" for a in "0123456789" for b in "0123456789" for c in "0123456789"]
    H = hc.Hierarchy.from_paths(paths)
    rng = np.random.default_rng(0)
    leaves = np.array(H.leaves, dtype=object)
    yt, yp = leaves[rng.integers(0, len(leaves), 2000)], leaves[rng.integers(0, len(leaves), 2000)]
    d = L.symmetric_difference(H, yt, yp)
    s = L.subtree_loss(H, yt, yp)
    assert d.shape == s.shape == (2000,)
    assert set(np.unique(d)) <= {0, 2, 4, 6}


# ---------------------------------------------------------------------- bad input
def test_unknown_label(tree):
    with pytest.raises(LabelError, match="y_pred.*'Z'"):
        L.symmetric_difference(tree, ["A1", "A2"], ["A1", "Z"])
    with pytest.raises(LabelError, match="y_true"):
        L.zero_one(tree, ["nope"], ["A1"])


def test_mismatched_lengths(tree):
    with pytest.raises(LabelError, match="3 samples but y_pred has 2"):
        L.sibling_loss(tree, ["A1", "A2", "A1"], ["A1", "A2"])
    with pytest.raises(LabelError, match="both be single labels"):
        L.zero_one(tree, "A1", ["A1"])


def test_alpha_errors(tree):
    with pytest.raises(InputError, match=r"shape \(8,\)"):
        L.normalized_structural(tree, ["A1"], ["A2"], alpha=np.ones(3))
    with pytest.raises(InputError, match="non-negative"):
        L.normalized_structural(tree, ["A1"], ["A2"], alpha=-np.ones(8))
    with pytest.raises(InputError, match="needs alpha"):
        L.loss_matrix(tree, "structural")
    with pytest.raises(ValueError):  # the errors are ValueErrors too
        L.normalized_structural(tree, ["A1"], ["A2"], alpha=[np.nan] * 8)


def test_other_bad_input(tree, dag):
    with pytest.raises(InputError, match="unknown loss"):
        L.loss_matrix(tree, "hamming")
    with pytest.raises(HierarchyError, match="multi_parent"):
        L.sibling_loss(dag, ["C"], ["D"])
    with pytest.raises(InputError, match="multi_parent"):
        L.sibling_costs(dag, multi_parent="median")
    with pytest.raises(LabelError, match="distinct"):
        L.loss_matrix(tree, classes=["A1", "A1"])
    with pytest.raises(LabelError, match="2-D array"):
        L.zero_one(tree, np.array([["A1"], ["A2"]]), ["A1", "A2"])
    with pytest.raises(InputError, match="Hierarchy"):
        L.zero_one(["A1"], ["A1"], ["A1"])
    with pytest.raises(InputError, match="costs"):
        L.h_loss(tree, ["A1"], ["A2"], costs=[1.0, 2.0])
    with pytest.raises(InputError, match="shape"):
        L.ranking_loss(tree, [["A1"]], np.zeros((1, 3)))
    with pytest.raises(InputError, match="non-finite"):
        L.ranking_loss(tree, [["A1"]], np.array([[np.nan, 0, 0, 0]]))
    with pytest.raises(LabelError, match="not among the 4 classes"):
        L.ranking_loss(tree, [["A"]], np.zeros((1, 4)))
    with pytest.raises(InputError, match="ties"):
        L.ranking_loss(tree, [["A1"]], np.zeros((1, 4)), ties="random")


# ---------------------------------------------------------------------- keyword arguments, classes
def test_a_keyword_the_loss_does_not_take_is_refused_naming_those_it_takes(tree):
    """costs= with a loss that has no costs, alpha= with a loss that has no alpha, or a typo
    would compute another loss than the caller asked for: refused, naming what the loss takes."""
    with pytest.raises(InputError, match=r"'subtree' does not take alpha=: it takes costs= only"):
        L.pairwise_loss(tree, "A1", "B1a", "subtree", alpha=np.zeros(8))
    with pytest.raises(InputError, match=r"takes no keyword arguments \(costs= is taken by"):
        L.pairwise_loss(tree, "A1", "B1a", "symmetric_difference", costs=np.zeros(8))
    with pytest.raises(InputError, match="multi_parnet=: it takes costs=, multi_parent= only"):
        L.loss_matrix(tree, "sibling", multi_parnet="mean")
    with pytest.raises(InputError, match="does not take costs="):
        L.ranking_loss(tree, [["A1"]], np.zeros((1, 4)), loss="zero_one", costs=np.zeros(8))
    assert L.loss_keywords("sibling") == ("costs", "multi_parent")
    assert L.loss_keywords("0-1") == ()
    # the keywords a loss takes still work
    assert L.pairwise_loss(tree, "A1", "B1a", "subtree", costs=np.zeros(8)) == 0.0
    assert L.loss_matrix(tree, "structural", alpha=np.ones(8))[0, 1] == pytest.approx(np.sqrt(2))


def test_classes_must_be_a_list_of_names(tree):
    """A bare string would be split into its characters; a number is no list of classes."""
    with pytest.raises(InputError, match=r"list of class names, got the string 'A1'; for one "
                                         r"class pass \['A1'\]"):
        L.loss_matrix(tree, "zero_one", "A1")
    with pytest.raises(InputError, match="list of class names"):
        L.loss_matrix(tree, "zero_one", 5)
    with pytest.raises(InputError, match="list of class names"):
        L.ranking_loss(tree, [["A1"]], np.zeros((1, 1)), classes="A1")
    assert L.loss_matrix(tree, "zero_one", ["A1"]).shape == (1, 1)


def test_a_zero_d_array_is_one_label(tree):
    assert L.zero_one(tree, np.array("A1"), np.array("A1")) == 0.0
    assert L.symmetric_difference(tree, np.array("A1"), np.array("A2")) == 2.0


def test_ranking_loss_indicators_hold_0_or_1_only(tree):
    """A -1/+1 (or NaN, or 2) matrix is not an indicator: its -1 entries are not "true"."""
    S = np.array([[0.0, 5.0, 0.0, 0.0]])
    for bad in ([[1, -1, -1, -1]], [[1, np.nan, 0, 0]], [[1, 2, 0, 0]]):
        with pytest.raises(LabelError, match="holds 0 or 1 only"):
            L.ranking_loss(tree, np.array(bad), S)
    assert L.ranking_loss(tree, np.array([[1, 0, 0, 0]]), S)[0] == 2.0   # A2 above A1
    assert L.ranking_loss(tree, np.array([[True, False, False, False]]), S)[0] == 2.0


def test_ranking_loss_reduces_label_sets_and_reads_node_indicators(tree):
    """A label set with its ancestors, and an indicator over H.nodes, are the same labels."""
    S = np.array([[0.0, 5.0, 0.0, 0.0]])
    want = L.ranking_loss(tree, [{"A1"}], S)
    np.testing.assert_allclose(L.ranking_loss(tree, [{"A", "A1"}], S), want)
    np.testing.assert_allclose(L.ranking_loss(tree, tree.closure([{"A1"}]).astype(int), S), want)


def test_sibling_costs_on_a_dag_name_fixes_that_work(dag):
    with pytest.raises(HierarchyError) as info:
        L.sibling_loss(dag, "C", "D")
    msg = str(info.value)
    assert "multi_parent='mean'" in msg and "h_loss(H, y_true, y_pred, costs)" in msg
    assert "pass costs=" not in msg   # sibling_loss takes no costs
    assert L.sibling_loss(dag, "C", "D", multi_parent="mean") >= 0
    assert L.h_loss(dag, "C", "D", costs=np.ones(len(dag))) == 2.0
