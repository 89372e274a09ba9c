"""Tests of hiercvx.inference: argmax over the multi-label space Y_m (NHSVM section 3, (19)).

Independent route: a brute force written here from the *definition* of Y_m (closure, a
chosen internal node has a chosen child, a leaf) using only node-name navigation, over all
2^M node subsets of tiny graphs.  The library's "enumerate" method builds Y_m differently
(one set per leaf subset, via the ancestor matrix) and is checked against it too.
"""

from __future__ import annotations

import itertools
import pickle

import highspy
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import inference as inf
from hiercvx.exceptions import (
    HierarchyError,
    InputError,
    LabelError,
    ProblemTooLargeError,
    SolverUnavailableError,
)

ALL_METHODS = ("dp", "ilp", "lp", "enumerate")
DAG_METHODS = ("ilp", "lp", "enumerate")


# ---------------------------------------------------------------------- independent helpers
def random_hierarchy(rng, n_nodes: int, dag: bool) -> hc.Hierarchy:
    """Node v > 0 gets one parent among 0..v-1 (trees) or one to three (DAGs)."""
    edges = []
    for v in range(1, n_nodes):
        k = 1
        if dag:
            k = min(v, 1 + int(rng.random() < 0.5) + int(rng.random() < 0.25))
        for p in rng.choice(v, size=k, replace=False):
            edges.append((f"n{int(p)}", f"n{v}"))
    return hc.Hierarchy.from_edges(edges, nodes=["n0"])


def random_dag(rng, n_nodes: int) -> hc.Hierarchy:
    """A random hierarchy that really is a DAG (re-draws until some node has two parents)."""
    while True:
        H = random_hierarchy(rng, n_nodes, dag=True)
        if not H.is_tree:
            return H


def is_valid_by_definition(H: hc.Hierarchy, chosen: set) -> bool:
    """Membership in Y_m straight from its definition, by node names."""
    if H.root not in chosen:
        return False
    for v in chosen:
        if any(p not in chosen for p in H.parents(v)):
            return False
        if not H.is_leaf(v) and not any(c in chosen for c in H.children(v)):
            return False
    return any(H.is_leaf(v) for v in chosen)


def brute_force_sets(H: hc.Hierarchy) -> np.ndarray:
    """Every member of Y_m as rows of a bool matrix, by checking all 2^M node subsets."""
    assert len(H) <= 14
    rows = []
    for bits in itertools.product((False, True), repeat=len(H)):
        chosen = {v for v, b in zip(H.nodes, bits) if b}
        if is_valid_by_definition(H, chosen):
            rows.append(bits)
    return np.array(rows, dtype=bool).reshape(-1, len(H))


def brute_force_optimum(scores: np.ndarray, H: hc.Hierarchy, extra=None) -> np.ndarray:
    """max over Y_m of the set score (+ extra(set) when given), per sample."""
    sets = brute_force_sets(H)
    values = np.atleast_2d(scores) @ sets.T.astype(float)
    if extra is not None:
        values = values + extra(sets)
    return values.max(axis=1)


def set_values(scores, Z):
    return np.where(np.atleast_2d(Z), np.atleast_2d(scores), 0.0).sum(axis=1)


def assert_all_valid(Z, H):
    for row in np.atleast_2d(Z):
        chosen = {v for v, b in zip(H.nodes, row) if b}
        assert is_valid_by_definition(H, chosen), f"invalid label set {sorted(map(str, chosen))}"


TRIANGLE_EDGES = [("r", "A"), ("r", "B"), ("r", "C"), ("A", "x"), ("A", "y"),
                  ("B", "y"), ("B", "z"), ("C", "x"), ("C", "z")]


def triangle_dag():
    """Three parents, three leaves, each leaf under two parents: LP optimum 1/3 everywhere."""
    H = hc.Hierarchy.from_edges(TRIANGLE_EDGES)
    s = -np.ones(len(H))
    s[H.index("r")] = 0.0
    return H, s


def find_fractional_instance(seed: int = 0, max_tries: int = 400):
    """Search seeded random small DAGs and Gaussian scores for a fractional LP optimum."""
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        H = random_dag(rng, int(rng.integers(5, 11)))
        oracle = inf.LabelSetOracle(H, "lp")
        S = rng.normal(size=(5, len(H)))
        _, info = oracle.solve(S, return_info=True)
        if info.n_fractional:
            return H, S[info.fractional]
    return None


# ---------------------------------------------------------------------- the label space
@pytest.mark.parametrize("seed", range(6))
def test_enumerated_sets_are_exactly_the_label_space(seed):
    rng = np.random.default_rng(seed)
    H = random_hierarchy(rng, int(rng.integers(1, 11)), dag=bool(seed % 2))
    by_definition = {tuple(r) for r in brute_force_sets(H)}
    enumerated = inf.enumerate_label_sets(H)
    assert {tuple(r) for r in enumerated} == by_definition
    assert len(enumerated) == len(by_definition) == 2 ** len(H.leaves) - 1


@pytest.mark.parametrize("seed", range(4))
def test_is_valid_label_set_matches_definition_on_all_subsets(seed):
    rng = np.random.default_rng(100 + seed)
    H = random_hierarchy(rng, 7, dag=bool(seed % 2))
    subsets = np.array(list(itertools.product((False, True), repeat=len(H))), dtype=bool)
    expected = [is_valid_by_definition(H, {v for v, b in zip(H.nodes, r) if b}) for r in subsets]
    assert inf.is_valid_label_set(subsets, H).tolist() == expected


# ---------------------------------------------------------------------- agreement of methods
@pytest.mark.parametrize("seed", range(8))
def test_all_methods_agree_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    H = random_hierarchy(rng, int(rng.integers(2, 13)), dag=False)
    S = rng.normal(size=(15, len(H)))
    optimum = brute_force_optimum(S, H)
    results = {m: inf.best_label_set(S, H, m, return_info=True) for m in ALL_METHODS}
    for method, (Z, info) in results.items():
        assert Z.shape == S.shape and Z.dtype == bool
        assert_all_valid(Z, H)
        np.testing.assert_allclose(set_values(S, Z), optimum, rtol=1e-9, atol=1e-9, err_msg=method)
        np.testing.assert_allclose(info.objective, optimum, rtol=1e-9, atol=1e-9, err_msg=method)
        # continuous scores: the optimum is unique, so the sets themselves agree
        np.testing.assert_array_equal(Z, results["dp"][0], err_msg=method)
    # the LP relaxation is integral on trees (proof in formulations/inference.md)
    assert results["lp"][1].n_fractional == 0
    np.testing.assert_allclose(results["lp"][1].relaxation_objective, optimum, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_ilp_lp_enumerate_agree_on_random_dags(seed):
    rng = np.random.default_rng(1000 + seed)
    H = random_dag(rng, int(rng.integers(4, 13)))
    S = rng.normal(size=(15, len(H)))
    optimum = brute_force_optimum(S, H)
    results = {m: inf.best_label_set(S, H, m, return_info=True) for m in DAG_METHODS}
    for method, (Z, info) in results.items():
        assert_all_valid(Z, H)
        np.testing.assert_allclose(set_values(S, Z), optimum, rtol=1e-9, atol=1e-9, err_msg=method)
        np.testing.assert_array_equal(Z, results["enumerate"][0], err_msg=method)
    lp_info = results["lp"][1]
    assert np.all(lp_info.relaxation_objective >= optimum - 1e-7)  # the LP is an upper bound
    integral = ~lp_info.fractional
    np.testing.assert_allclose(lp_info.relaxation_objective[integral], optimum[integral], atol=1e-7)


def test_auto_picks_dp_on_trees_enumeration_on_small_dags_and_ilp_on_large_ones():
    rng = np.random.default_rng(7)
    T, D = random_hierarchy(rng, 8, dag=False), random_dag(rng, 8)
    assert inf.LabelSetOracle(T).method == "dp"
    assert len(D.leaf_indices) <= inf.Options().enumerate_auto_leaves
    assert inf.LabelSetOracle(D).method == "enumerate"
    S = rng.normal(size=(40, len(D)))
    np.testing.assert_allclose(inf.label_set_scores(S, inf.best_label_set(S, D)),
                               inf.label_set_scores(S, inf.best_label_set(S, D, "ilp")), atol=1e-9)
    # past the leaf limit, or the node limit, the integer program
    big = random_dag(rng, 40)
    assert len(big.leaf_indices) > inf.Options().enumerate_auto_leaves
    assert inf.LabelSetOracle(big).method == "ilp"
    assert inf.LabelSetOracle(D, max_nodes=len(D) - 1).method == "ilp"
    # the same limits as options: a leaf limit of 0 sends the small DAG to the integer program
    assert inf.LabelSetOracle(D, options=inf.Options(enumerate_auto_leaves=0)).method == "ilp"
    assert inf.auto_method(D, options=inf.Options(enumerate_max_nodes=len(D) - 1)) == "ilp"
    with pytest.raises(hc.InputError, match="integrality_tol"):
        inf.Options(integrality_tol=0.7)


def test_hand_computed_tree():
    # root -> A (A1, A2), B.  Scores: A1 gains, A2 loses, B loses.
    H = hc.Hierarchy.from_parents({"root": None, "A": "root", "A1": "A", "A2": "A", "B": "root"})
    s = dict(root=0.5, A=-1.0, A1=3.0, A2=-0.5, B=-0.2)
    scores = np.array([s[v] for v in H.nodes])
    # f(A) = -1 + 3 = 2 > 0, f(B) = -0.2 < 0: choose {root, A, A1}, value 2.5
    for method in ALL_METHODS:
        z = inf.best_label_set(scores, H, method)
        assert H.label_sets(z[None])[0] == {"root", "A", "A1"}, method
    # every child subtree loses: the least-losing one is forced (root must reach a leaf)
    # f(A) = -1 + max(-1, -3) = -2 < f(B) = -1.5
    s = dict(root=0.0, A=-1.0, A1=-1.0, A2=-3.0, B=-1.5)
    scores = np.array([s[v] for v in H.nodes])
    for method in ALL_METHODS:
        z = inf.best_label_set(scores, H, method)
        assert H.label_sets(z[None])[0] == {"root", "B"}, method


def test_large_tree_dp_is_vectorized_and_matches_ilp():
    rng = np.random.default_rng(3)
    n = 300
    H = hc.Hierarchy.from_parents({0: None, **{v: int(rng.integers(0, v)) for v in range(1, n)}})
    S = rng.normal(size=(3000, n))
    Z, info = inf.best_label_set(S, H, "dp", return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(info.objective, set_values(S, Z))
    # no single path beats the best set (Y_s is a subset of Y_m)
    single = inf.best_leaf(S, H, return_indicator=True)
    assert np.all(info.objective >= set_values(S, single) - 1e-9)
    few = slice(0, 12)
    np.testing.assert_array_equal(inf.best_label_set(S[few], H, "ilp"), Z[few])
    # batches of different sizes give the same rows (chunking does not change answers)
    np.testing.assert_array_equal(inf.best_label_set(S[:7], H, "dp"), Z[:7])


# ---------------------------------------------------------------------- hypothesis
@st.composite
def small_hierarchies(draw, max_nodes: int = 8):
    """Trees and DAGs with up to max_nodes nodes: one-child chains, wide fans, shared leaves."""
    n = draw(st.integers(1, max_nodes))
    dag = draw(st.booleans())
    edges = []
    for v in range(1, n):
        if dag and v > 1:
            parents = draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=min(3, v), unique=True))
        else:
            parents = [draw(st.integers(0, v - 1))]
        edges += [(f"n{p}", f"n{v}") for p in parents]
    return hc.Hierarchy.from_edges(edges, nodes=["n0"])


@st.composite
def hierarchy_and_scores(draw, integer: bool):
    H = draw(small_hierarchies())
    n_samples = draw(st.integers(1, 3))
    if integer:  # small integers: many exact ties
        elem = st.integers(-3, 3).map(float)
    else:
        elem = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
    flat = draw(st.lists(elem, min_size=n_samples * len(H), max_size=n_samples * len(H)))
    return H, np.array(flat).reshape(n_samples, len(H))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_and_scores(integer=True))
def test_hypothesis_methods_reach_brute_force_optimum_with_ties(case):
    H, S = case
    optimum = brute_force_optimum(S, H)
    methods = ALL_METHODS if H.is_tree else DAG_METHODS
    for method in methods:
        Z, info = inf.best_label_set(S, H, method, return_info=True)
        assert_all_valid(Z, H)
        np.testing.assert_allclose(set_values(S, Z), optimum, atol=1e-9, err_msg=method)
        np.testing.assert_allclose(info.objective, optimum, atol=1e-9, err_msg=method)
        # deterministic tie-breaking: the same call gives the same set
        np.testing.assert_array_equal(inf.best_label_set(S, H, method), Z)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_and_scores(integer=False))
def test_hypothesis_methods_reach_brute_force_optimum(case):
    H, S = case
    optimum = brute_force_optimum(S, H)
    for method in (ALL_METHODS if H.is_tree else DAG_METHODS):
        Z = inf.best_label_set(S, H, method)
        assert_all_valid(Z, H)
        np.testing.assert_allclose(set_values(S, Z), optimum, rtol=1e-9, atol=1e-9, err_msg=method)


# ---------------------------------------------------------------------- scale of the scores
SCALE_CONFIGS = [("lp", {}), ("ilp", {}), ("ilp", {"presolve": False}),
                 ("lp", {"options": inf.Options(closure_cut=False)}),
                 ("ilp", {"options": inf.Options(closure_cut=False)})]


def test_programs_answer_the_reported_cases_at_any_scale():
    H = hc.Hierarchy.from_edges([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (0, 4), (1, 4), (2, 4),
                                 (3, 4), (1, 5), (0, 6), (1, 6), (3, 6), (5, 7)])
    s = np.array([-8, 9, 6, 1, -9, -6, -10, 2.0])
    H2 = hc.Hierarchy.from_edges([(0, 1), (0, 2), (1, 2), (2, 3), (0, 4), (2, 5), (4, 6), (2, 7),
                                  (0, 8), (1, 8), (3, 8), (6, 8)])
    s2 = np.array([0, -1, 0, -1, 0, -1, -1, 0, 1.0])
    for method, kw in SCALE_CONFIGS:
        assert inf.label_set_scores(s, inf.best_label_set(s * 1e-9, H, method, **kw))[0] == -1.0
        assert inf.label_set_scores(s2, inf.best_label_set(s2 * 1e6, H2, method, **kw))[0] == -1.0


@pytest.mark.parametrize("seed", range(6))
def test_programs_do_not_depend_on_the_scale_of_the_scores(seed):
    rng = np.random.default_rng(4200 + seed)
    H = random_dag(rng, int(rng.integers(5, 12)))
    integer = rng.integers(-10, 11, size=(5, len(H))).astype(float)
    S = np.vstack([integer, rng.normal(size=(5, len(H)))])
    optimum = set_values(S, inf.best_label_set(S, H, "enumerate"))
    for scale in (1e-12, 1e-10, 1e-6, 1.0, 1e6, 1e9):
        for method, kw in SCALE_CONFIGS:
            Z = inf.best_label_set(S * scale, H, method, **kw)
            np.testing.assert_allclose(set_values(S, Z), optimum, rtol=1e-9, atol=1e-9,
                                       err_msg=f"{method} {kw} at scale {scale}")


# ---------------------------------------------------------------------- LP relaxation fallback
def test_lp_fallback_on_the_triangle_dag():
    H, s = triangle_dag()
    Z, info = inf.best_label_set(s, H, "lp", return_info=True)
    assert info.fractional.tolist() == [True] and info.fell_back.tolist() == [True]
    assert info.n_fractional == 1
    # LP optimum -2 (all z = 1/3), integer optimum -3: root + one leaf + its two parents
    np.testing.assert_allclose(info.relaxation_objective, [-2.0], atol=1e-7)
    np.testing.assert_allclose(info.objective, [-3.0])
    assert brute_force_optimum(s, H)[0] == -3.0
    assert_all_valid(Z, H)
    assert Z.sum() == 4
    # the ILP alone agrees; it never reports a fallback
    Zi, info_i = inf.best_label_set(s, H, "ilp", return_info=True)
    assert info_i.n_fractional == 0 and not info_i.fell_back.any()
    assert set_values(s, Zi)[0] == -3.0


def test_lp_fallback_found_by_random_search():
    found = find_fractional_instance(seed=0)
    assert found is not None, "no fractional LP among the seeded random DAG instances"
    H, S = found
    Z, info = inf.best_label_set(S, H, "lp", return_info=True)
    assert info.fell_back.all() and info.n_fractional == len(S)
    optimum = brute_force_optimum(S, H)
    np.testing.assert_allclose(info.objective, optimum, rtol=1e-9, atol=1e-9)
    assert np.all(info.relaxation_objective >= optimum - 1e-9)
    np.testing.assert_array_equal(Z, inf.best_label_set(S, H, "enumerate"))


def test_lp_mixed_batch_falls_back_only_where_fractional():
    H, s = triangle_dag()
    easy = np.zeros(len(H))
    easy[H.index("A")] = easy[H.index("x")] = 1.0  # LP optimum {r, A, C, x} is integral
    S = np.vstack([easy, s, easy])
    Z, info = inf.best_label_set(S, H, "lp", return_info=True)
    assert info.fell_back.tolist() == [False, True, False]
    np.testing.assert_allclose(info.objective, brute_force_optimum(S, H))


# ---------------------------------------------------------------------- loss-augmented inference
def independent_loss(H, y_row, t_row, fp, fn):
    y = {v for v, b in zip(H.nodes, y_row) if b}
    t = {v for v, b in zip(H.nodes, t_row) if b}
    return sum(fp[H.index(v)] for v in y - t) + sum(fn[H.index(v)] for v in t - y)


@pytest.mark.parametrize("seed", range(4))
def test_decomposition_identity_on_every_label_set(seed):
    rng = np.random.default_rng(200 + seed)
    H = random_hierarchy(rng, 8, dag=bool(seed % 2))
    fp, fn = rng.uniform(0, 2, len(H)), rng.uniform(0, 2, len(H))
    loss = inf.DecomposableLoss(fp, fn)
    sets = brute_force_sets(H)
    t = sets[rng.integers(len(sets))]
    added, constant = loss.node_terms(t)
    for y in sets:
        direct = independent_loss(H, y, t, fp, fn)
        assert np.isclose(loss(y, t), direct)
        assert np.isclose(added[y].sum() + constant, direct)


def test_leaf_hamming_is_the_symmetric_leaf_difference():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B/B1", "C"])
    loss = inf.DecomposableLoss.hamming(H, on="leaves")
    sets = brute_force_sets(H)
    leaves = set(H.leaves)
    for y, t in itertools.product(sets[::3], sets[::2]):
        ys = {v for v, b in zip(H.nodes, y) if b} & leaves
        ts = {v for v, b in zip(H.nodes, t) if b} & leaves
        assert loss(y, t) == len(ys ^ ts)
    full = inf.DecomposableLoss.hamming(H, on="nodes")
    assert full(sets[0], sets[-1]) == np.sum(sets[0] ^ sets[-1])


@pytest.mark.parametrize("dag", [False, True])
@pytest.mark.parametrize("loss_kind", ["leaf_hamming", "hamming", "weights", "asymmetric"])
def test_loss_augmented_inference_matches_brute_force(dag, loss_kind):
    rng = np.random.default_rng(31 + dag)
    H = random_dag(rng, 9) if dag else random_hierarchy(rng, 9, dag=False)
    S = rng.normal(size=(6, len(H)))
    sets = brute_force_sets(H)
    T = sets[rng.integers(len(sets), size=len(S))]
    w = rng.uniform(0.5, 2.0, len(H))
    fp, fn = {"leaf_hamming": (H.leaf_mask * 1.0, H.leaf_mask * 1.0), "hamming": (np.ones(len(H)),) * 2,
              "weights": (w, w), "asymmetric": (w, w[::-1].copy())}[loss_kind]
    loss = {"leaf_hamming": "leaf_hamming", "hamming": "hamming", "weights": w,
            "asymmetric": inf.DecomposableLoss(fp, fn)}[loss_kind]
    for method in (DAG_METHODS if dag else ALL_METHODS):
        Z, info = inf.best_label_set(S, H, method, loss=loss, true_indicator=T, return_info=True)
        assert_all_valid(Z, H)
        for i in range(len(S)):
            values = [S[i][y].sum() + independent_loss(H, y, T[i], fp, fn) for y in sets]
            achieved = S[i][Z[i]].sum() + independent_loss(H, Z[i], T[i], fp, fn)
            assert np.isclose(achieved, max(values)), (method, i)
            assert np.isclose(info.objective[i], achieved), (method, i)
        # the added scores of the returned set plus the constant are exactly its loss
        aug, const = inf.loss_augmented_scores(S, H, T, loss)
        np.testing.assert_allclose(set_values(aug - S, Z) + const,
                                   [independent_loss(H, Z[i], T[i], fp, fn) for i in range(len(S))],
                                   atol=1e-12)


def test_loss_augmented_scores_shapes_and_shared_truth():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
    t = H.closure(["A/A1"])[0]
    S = np.arange(2 * len(H), dtype=float).reshape(2, len(H))
    aug, const = inf.loss_augmented_scores(S, H, t)
    assert aug.shape == S.shape and const.shape == (2,)
    a1, c1 = inf.loss_augmented_scores(S[0], H, t)
    assert a1.shape == (len(H),) and isinstance(c1, float)
    np.testing.assert_allclose(a1, aug[0])
    # leaf A/A1 is true (-1), leaves A/A2 and B are false (+1), internal nodes untouched
    expected = np.zeros(len(H))
    expected[[H.index("A/A1")]] = -1
    expected[[H.index("A/A2"), H.index("B")]] = 1
    np.testing.assert_allclose(a1 - S[0], expected)
    assert c1 == 1.0


# ---------------------------------------------------------------------- single-label rule
@pytest.mark.parametrize("dag", [False, True])
def test_best_leaf_is_the_best_single_path(dag):
    rng = np.random.default_rng(5)
    H = random_dag(rng, 10) if dag else random_hierarchy(rng, 10, dag=False)
    S = rng.normal(size=(20, len(H)))
    leaves = H.leaves
    paths = np.array([[v in set(H.ancestors(l, inclusive=True)) for v in H.nodes] for l in leaves])
    expected = [H.index(leaves[k]) for k in np.argmax(S @ paths.T.astype(float), axis=1)]
    np.testing.assert_array_equal(inf.best_leaf(S, H), expected)
    assert inf.best_leaf(S[3], H) == expected[3]
    Z = inf.best_leaf(S, H, return_indicator=True)
    np.testing.assert_array_equal(Z, H.closure([H.nodes[i] for i in expected]))
    assert_all_valid(Z, H)


def test_best_leaf_ties_go_to_the_first_leaf():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
    assert H.nodes[inf.best_leaf(np.zeros(len(H)), H)] == "A/A1"


# ---------------------------------------------------------------------- ties, shapes, reuse
def test_dp_tie_rule_prefers_fewer_nodes_and_first_child():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
    z = inf.best_label_set(np.zeros(len(H)), H, "dp")
    assert H.label_sets(z[None])[0] == {"<root>", "A", "A/A1"}
    # a zero-gain optional child is left out
    s = np.zeros(len(H))
    s[H.index("A/A1")] = 1.0
    z = inf.best_label_set(s, H, "dp")
    assert H.label_sets(z[None])[0] == {"<root>", "A", "A/A1"}


def test_single_sample_and_batch_agree():
    rng = np.random.default_rng(11)
    H = random_dag(rng, 9)
    S = rng.normal(size=(5, len(H)))
    for method in DAG_METHODS:
        batch = inf.best_label_set(S, H, method)
        for i in range(len(S)):
            one = inf.best_label_set(S[i], H, method)
            assert one.shape == (len(H),)
            np.testing.assert_array_equal(one, batch[i])


def test_oracle_builds_the_solver_model_once(monkeypatch):
    built = []
    original = inf.BACKENDS["highs"]

    class Counting(original):
        def __init__(self, *args, **kwargs):
            built.append(kwargs.get("integer"))
            super().__init__(*args, **kwargs)

    monkeypatch.setitem(inf.BACKENDS, "highs", Counting)
    H, s = triangle_dag()
    rng = np.random.default_rng(2)
    oracle = inf.LabelSetOracle(H, "lp")
    for _ in range(5):
        oracle.solve(rng.normal(size=(4, len(H))))
    oracle.solve(s)  # fractional: the ILP model is built now, once
    oracle.solve(np.vstack([s, s]))
    assert built == [False, True]
    oracle = inf.LabelSetOracle(H, "ilp")
    oracle.solve(rng.normal(size=(6, len(H))))
    oracle.solve(rng.normal(size=len(H)))
    # the ilp oracle builds its integer model once, and its LP (tried first on the samples
    # the bound certificate leaves open) at most once
    assert built[:3] == [False, True, True] and built[3:] in ([], [False])


def test_oracle_pickles_and_keeps_working():
    H, s = triangle_dag()
    oracle = inf.LabelSetOracle(H, "lp")
    before = oracle.solve(s)
    clone = pickle.loads(pickle.dumps(oracle))
    np.testing.assert_array_equal(clone.solve(s), before)


def test_single_node_and_empty_batch():
    H = hc.Hierarchy.from_edges([], nodes=["only"])
    for method in ALL_METHODS:
        assert inf.best_label_set(np.array([-5.0]), H, method).tolist() == [True]
    T = hc.Hierarchy.from_paths(["A/A1", "B"])
    for method in ALL_METHODS:
        Z, info = inf.best_label_set(np.zeros((0, len(T))), T, method, return_info=True)
        assert Z.shape == (0, len(T)) and info.objective.shape == (0,)


# ---------------------------------------------------------------------- bad input
def test_bad_score_shapes_and_values():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
    M = len(H)
    with pytest.raises(InputError, match=f"columns but the hierarchy has {M} nodes"):
        inf.best_label_set(np.zeros(M - 1), H, "dp")
    with pytest.raises(InputError, match="columns"):
        inf.best_label_set(np.zeros((2, M + 1)), H, "ilp")
    with pytest.raises(InputError, match="shape"):
        inf.best_label_set(np.zeros((1, 2, M)), H, "dp")
    bad = np.zeros((3, M))
    bad[2, H.index("B")] = np.nan
    with pytest.raises(InputError, match=r"non-finite.*sample 2, node 'B'"):
        inf.best_label_set(bad, H, "dp")
    with pytest.raises(InputError, match="non-finite"):
        inf.best_leaf(np.full(M, np.inf), H)
    with pytest.raises(ValueError):  # input errors are ValueErrors too
        inf.best_label_set(["a"] * M, H, "dp")


def test_bad_method_solver_and_hierarchy():
    H, s = triangle_dag()
    with pytest.raises(InputError, match="unknown inference method 'greedy'"):
        inf.best_label_set(s, H, "greedy")
    with pytest.raises(HierarchyError, match="method='ilp'"):
        inf.best_label_set(s, H, "dp")
    with pytest.raises(InputError, match="unknown inference solver"):
        inf.best_label_set(s, H, "ilp", solver="cplex")
    with pytest.raises(InputError, match="applies to methods 'ilp' and 'lp' only"):
        inf.best_label_set(s, H, "enumerate", solver="highs")
    with pytest.raises(InputError, match="Hierarchy"):
        inf.best_label_set(s, {"r": None}, "dp")


def test_enumerate_refuses_large_graphs():
    H = hc.Hierarchy.from_paths([f"L{k}" for k in range(25)])
    with pytest.raises(ProblemTooLargeError, match="max_nodes"):
        inf.best_label_set(np.zeros(len(H)), H, "enumerate")
    small = hc.Hierarchy.from_paths(["A/A1", "B"])
    assert inf.best_label_set(np.ones(len(small)), small, "enumerate", max_nodes=4).all()


def test_gurobi_missing_is_reported():
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        pass
    else:  # pragma: no cover - only with gurobipy
        pytest.skip("gurobipy is installed; the missing-solver message is not reachable")
    H, s = triangle_dag()
    with pytest.raises(SolverUnavailableError, match="solver='highs'"):
        inf.best_label_set(s, H, "ilp", solver="gurobi")


def test_bad_loss_inputs():
    H = hc.Hierarchy.from_paths(["A/A1", "A/A2", "B"])
    s = np.zeros(len(H))
    t = H.closure(["B"])[0]
    with pytest.raises(InputError, match="needs both loss= and true_indicator="):
        inf.best_label_set(s, H, "dp", loss="hamming")
    with pytest.raises(InputError, match="needs both"):
        inf.best_label_set(s, H, "dp", true_indicator=t)
    with pytest.raises(LabelError, match="0/1"):
        inf.best_label_set(s, H, "dp", loss="hamming", true_indicator=t * 2.0)
    with pytest.raises(LabelError, match="shape"):
        inf.loss_augmented_scores(s, H, t[:-1])
    with pytest.raises(LabelError, match="rows"):
        inf.loss_augmented_scores(np.zeros((3, len(H))), H, np.vstack([t, t]))
    with pytest.raises(InputError, match="unknown loss"):
        inf.loss_augmented_scores(s, H, t, "zero_one")
    with pytest.raises(InputError, match="non-negative"):
        inf.DecomposableLoss(-np.ones(len(H)), np.ones(len(H)))
    with pytest.raises(InputError, match="one cost per node"):
        inf.loss_augmented_scores(s, H, t, np.ones(len(H) + 1))


# ---------------------------------------------------------------------- the CVXPY reference of (19)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dag", [False, True])
def test_reference_agrees_with_the_highs_fast_path(seed, dag):
    rng = np.random.default_rng(100 + seed)
    n_nodes = int(rng.integers(5, 12))
    H = random_dag(rng, n_nodes) if dag else random_hierarchy(rng, n_nodes, dag=False)
    S = rng.normal(size=(5, len(H)))
    ref = inf.reference(S, H)
    assert ref.problem_class == "MILP" and ref.weights.shape == S.shape
    assert_all_valid(ref.weights, H)
    # certified: the bound is the LP's or, where the LP is fractional, exact enumeration
    assert ref.gap <= 1e-9
    best = brute_force_optimum(S, H)
    np.testing.assert_allclose(ref.extras["value"], best, atol=1e-9)
    np.testing.assert_allclose(ref.objective, -best.sum(), atol=1e-9)
    for method in ("ilp", "lp"):
        _, info = inf.best_label_set(S, H, method, return_info=True)
        np.testing.assert_allclose(info.objective, ref.extras["value"], atol=1e-9)
    lp = inf.reference(S, H, relaxation=True)
    _, lp_info = inf.best_label_set(S, H, "lp", return_info=True)
    np.testing.assert_allclose(lp.extras["value"], lp_info.relaxation_objective, atol=1e-7)
    assert lp.gap <= 1e-7  # the LP's own certificate: recomputed cost vs Lagrangian bound
    np.testing.assert_array_equal(lp.extras["fractional"], lp_info.fractional)
    # the LP bounds the ILP; equal where the LP is integral (always on trees)
    assert np.all(ref.extras["integrality_gap"] >= -1e-9)
    integral = ~lp.extras["fractional"]
    np.testing.assert_allclose(ref.extras["integrality_gap"][integral], 0.0, atol=1e-7)
    if not dag:
        assert integral.all()


def test_reference_on_the_triangle_dag_reports_the_integrality_gap():
    H, s = triangle_dag()
    lp = inf.reference(s, H, relaxation=True)
    assert lp.extras["fractional"].tolist() == [True]
    np.testing.assert_allclose(lp.objective, 2.0, atol=1e-7)    # min -s.z: the LP optimum is -2
    np.testing.assert_allclose(lp.weights[1:], 1 / 3, atol=1e-6)
    ilp = inf.reference(s, H)
    assert ilp.weights.shape == (len(H),) and ilp.weights.sum() == 4
    np.testing.assert_allclose(ilp.extras["value"], [-3.0])
    np.testing.assert_allclose(ilp.extras["lp_value"], [-2.0], atol=1e-7)
    np.testing.assert_allclose(ilp.extras["integrality_gap"], [1.0], atol=1e-7)
    # the LP alone would leave a gap of 1; enumeration closes it on a graph this small
    assert ilp.extras["bound_source"].tolist() == ["enumeration"]
    assert ilp.gap <= 1e-12


def test_reference_with_a_loss_matches_loss_augmented_fast_path():
    rng = np.random.default_rng(7)
    H = random_dag(rng, 9)
    S = rng.normal(size=(4, len(H)))
    T = brute_force_sets(H)[rng.integers(3, size=4)]
    ref = inf.reference(S, H, loss="leaf_hamming", true_indicator=T)
    _, info = inf.best_label_set(S, H, "ilp", loss="leaf_hamming", true_indicator=T, return_info=True)
    np.testing.assert_allclose(ref.extras["value"], info.objective, atol=1e-9)
    with pytest.raises(InputError):
        inf.reference(S, H, loss="leaf_hamming")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchy_and_scores(integer=True))
def test_hypothesis_reference_agrees_with_the_fast_path(case):
    H, S = case
    ref = inf.reference(S, H)
    assert_all_valid(ref.weights, H)
    assert ref.gap <= 1e-9
    _, info = inf.best_label_set(S, H, "ilp", return_info=True)
    np.testing.assert_allclose(ref.extras["value"], info.objective, atol=1e-9)
    np.testing.assert_allclose(ref.extras["value"], brute_force_optimum(S, H), atol=1e-9)
    lp = inf.reference(S, H, relaxation=True)
    assert lp.gap <= 1e-7
    assert np.all(lp.extras["value"] >= ref.extras["value"] - 1e-7)   # the LP bounds (19)


class _Flaky:
    """A HiGHS instance whose first ``fails`` statuses read "Unknown" (a stalled warm start)."""

    def __init__(self, real, fails):
        self._real, self.fails, self.runs = real, fails, 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def run(self):
        self.runs += 1
        return self._real.run()

    def getModelStatus(self):
        if self.fails:
            self.fails -= 1
            return highspy.HighsModelStatus.kUnknown
        return self._real.getModelStatus()


@pytest.mark.parametrize("method", ["lp", "ilp"])
def test_a_program_highs_leaves_unsolved_is_solved_again_from_scratch(method, monkeypatch):
    rng = np.random.default_rng(3)
    D = random_dag(rng, 8)
    S = rng.normal(size=(5, len(D)))
    exact = inf.label_set_scores(S, inf.best_label_set(S, D, "enumerate"))
    direct = inf.Options(closure_cut=False)  # every sample goes to the program
    made = []
    real = inf.new_highs
    monkeypatch.setattr(inf.programs, "new_highs", lambda: made.append(_Flaky(real(), 1)) or made[-1])
    Z = inf.LabelSetOracle(D, method, presolve=False, options=direct).solve(S)
    np.testing.assert_allclose(inf.label_set_scores(S, Z), exact, atol=1e-9)
    assert made and made[0].runs == len(S) + 1  # one sample ran twice
    # a program that stays unsolved is an error that says so, not a wrong set
    monkeypatch.setattr(inf.programs, "new_highs", lambda: _Flaky(real(), 2))
    with pytest.raises(hc.SolverError, match="nor from scratch"):
        inf.LabelSetOracle(D, method, presolve=False, options=direct).solve(S)


def test_options_reach_every_entry_point():
    """One Options record for the oracle, best_label_set and the CVXPY reference; the older
    keywords override its fields; a pickled oracle keeps its options."""
    H, s = triangle_dag()
    opts = inf.Options(integrality_tol=1e-4, lagrange_steps=0, progress_from=1)
    oracle = inf.LabelSetOracle(H, "ilp", options=opts)
    assert oracle.options is opts and oracle.integrality_tol == 1e-4
    assert inf.LabelSetOracle(H, "ilp", integrality_tol=1e-3, options=opts).integrality_tol == 1e-3
    Z = inf.best_label_set(s, H, "ilp", options=opts)
    np.testing.assert_array_equal(Z, inf.best_label_set(s, H, "enumerate"))
    ref = inf.reference(s, H, options=opts)
    assert ref.tol == 1e-4 and np.isclose(ref.extras["value"][0], inf.label_set_scores(s, Z)[0])
    assert pickle.loads(pickle.dumps(oracle)).options == opts
    with pytest.raises(hc.InputError, match="Options"):
        inf.LabelSetOracle(H, "ilp", options={"integrality_tol": 1e-4})


# ---------------------------------------------------------------------- inputs refused, not misread
def test_loss_augmented_inference_refuses_true_sets_that_are_not_label_sets():
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "A1": "A", "B": "r"})
    s = np.arange(4.0)
    with pytest.raises(LabelError, match="empty"):
        inf.best_label_set(s, H, "dp", loss="hamming", true_indicator=np.zeros(4, bool))
    with pytest.raises(LabelError, match="not closed upward"):
        inf.best_label_set(s, H, "dp", loss="hamming", true_indicator=H.label_indicator(["A1"]).toarray()[0])
    with pytest.raises(LabelError, match="row 1"):
        inf.loss_augmented_scores(np.vstack([s, s]), H,
                                  np.vstack([H.closure(["A1"])[0], np.zeros(4, bool)]), "hamming")
    # a true set that stops at an internal node is a closed set: accepted
    inf.best_label_set(s, H, "dp", loss="hamming", true_indicator=H.closure(["A"])[0])


def test_bad_numeric_inputs_get_package_errors():
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "A1": "A", "B": "r"})
    with pytest.raises(InputError, match="weight"):
        inf.DecomposableLoss.hamming(H, weight=[1.0, 2.0])
    with pytest.raises(InputError, match="do not match"):
        inf.label_set_scores(np.ones((3, 4)), np.ones((2, 4), bool))
    with pytest.raises(InputError, match="do not match"):
        inf.label_set_scores(np.ones((3, 1)), np.ones((3, 4), bool))  # not broadcast silently
    np.testing.assert_array_equal(inf.label_set_scores(np.ones(4), np.ones((3, 4), bool)), [4, 4, 4])
    with pytest.raises(InputError, match="complex"):
        inf.best_label_set(np.ones(4) + 1j, H, "dp")
    with pytest.raises(InputError, match="complex"):
        inf.label_set_scores(np.ones(4) + 1j, np.ones(4, bool))
    with pytest.raises(InputError, match="integer"):
        inf.Options(lagrange_steps=2.5)
    assert inf.Options(lagrange_steps=np.int64(3)).lagrange_steps == 3
