"""The bound certificate in front of program (19) (``LabelSetOracle(method="ilp")``).

Checked against enumeration of ``Y_m`` on small trees and DAGs: the greedy set is a valid
label set with the value reported, every per-node upper bound holds (best set containing the
node, by enumeration), a certified sample is optimal, every optimal set lies inside the kept
nodes, and the oracle with and without the bounds returns sets of the same (optimal) value.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx import inference as inf
from hiercvx.models._nhsvm_leaves import leaf_violations

#: the bound stage alone: the closure cut in front of it would answer some samples first
#: (tests/test_nhsvm_labelsets.py checks the cut)
BOUNDS = inf.Options(closure_cut=False)


def random_hierarchy(rng, n_nodes: int, dag: bool) -> hc.Hierarchy:
    edges = []
    for v in range(1, n_nodes):
        k = 1
        if dag:
            k = min(v, 1 + int(rng.random() < 0.5) + int(rng.random() < 0.25))
        for p in rng.choice(v, size=k, replace=False):
            edges.append((f"n{int(p)}", f"n{v}"))
    return hc.Hierarchy.from_edges(edges, nodes=["n0"])


def score_rows(rng, M: int, n: int) -> np.ndarray:
    """Scores of several kinds: Gaussian, mostly negative, mostly positive, integer ties."""
    kinds = [rng.normal(size=(n, M)),
             rng.normal(size=(n, M)) - 1.0,
             rng.normal(size=(n, M)) + 1.0,
             rng.integers(-2, 3, size=(n, M)).astype(float),
             np.where(rng.random((n, M)) < 0.2, 3.0, -1.0) * rng.random((n, M))]
    return np.vstack(kinds)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("dag", [True, False])
def test_bounds_greedy_and_kept_nodes_against_enumeration(seed, dag):
    rng = np.random.default_rng(seed + 100 * dag)
    H = random_hierarchy(rng, int(rng.integers(2, 12)), dag=dag)
    S = score_rows(rng, len(H), 6)
    sets = inf.enumerate_label_sets(H)                      # (K, M)
    values = S @ sets.T.astype(float)                        # (n, K)
    optimum = values.max(axis=1)
    value, Z, certified, keep, ub = inf.DagBounds(H).run(S)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(value, inf.label_set_scores(S, Z), atol=1e-9)
    assert np.all(value <= optimum + 1e-9)
    for v in range(len(H)):
        containing = sets[:, v]
        best_with_v = np.where(containing[None, :], values, -np.inf).max(axis=1)
        assert np.all(ub[:, v] >= best_with_v - 1e-9), (seed, v)
    np.testing.assert_allclose(value[certified], optimum[certified], atol=1e-9)
    for i in range(len(S)):
        for k in np.flatnonzero(values[i] >= optimum[i] - 1e-9):
            assert not np.any(sets[k] & ~keep[i]), "an optimal set uses a dropped node"


@pytest.mark.parametrize("seed", range(10))
def test_bounded_ilp_matches_enumeration_and_plain_ilp(seed):
    rng = np.random.default_rng(500 + seed)
    H = random_hierarchy(rng, int(rng.integers(3, 13)), dag=True)
    S = score_rows(rng, len(H), 4)
    optimum = (S @ inf.enumerate_label_sets(H).T.astype(float)).max(axis=1)
    Z, info = inf.LabelSetOracle(H, "ilp", options=BOUNDS).solve(S, return_info=True)
    _, info_p = inf.LabelSetOracle(H, "ilp", presolve=False).solve(S, return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(info.objective, optimum, atol=1e-9)
    np.testing.assert_allclose(info_p.objective, optimum, atol=1e-9)
    assert 0 <= info.n_bounded <= len(S) and info_p.n_bounded == 0


def test_bound_certifies_without_the_solver(monkeypatch):
    """All-positive scores: the greedy set (everything) meets the bound; no program is solved."""
    rng = np.random.default_rng(3)
    H = random_hierarchy(rng, 30, dag=True)
    oracle = inf.LabelSetOracle(H, "ilp", options=BOUNDS)
    calls = []
    model = oracle._model(integer=True)
    monkeypatch.setattr(model, "solve_subset", lambda *a: calls.append(a))
    S = rng.random((5, len(H))) + 0.1
    Z, info = oracle.solve(S, return_info=True)
    assert Z.all() and info.n_bounded == 5 and not calls


def test_bounded_ilp_with_loss_on_a_larger_dag():
    """Loss-augmented inference (the training oracle) agrees with the plain ILP's value."""
    rng = np.random.default_rng(9)
    H = random_hierarchy(rng, 60, dag=True)
    leaves = H.leaf_indices
    T = np.zeros((8, len(H)), dtype=bool)
    for i in range(8):
        T[i] = H.ancestor_matrix[rng.choice(leaves, size=2)].toarray().any(axis=0)
    S = 0.5 * rng.normal(size=(8, len(H)))
    kw = {"loss": "leaf_hamming", "true_indicator": T, "return_info": True}
    _, info = inf.LabelSetOracle(H, "ilp", options=BOUNDS).solve(S, **kw)
    _, plain = inf.LabelSetOracle(H, "ilp", presolve=False).solve(S, **kw)
    np.testing.assert_allclose(info.objective, plain.objective, atol=1e-8)


def test_chain_and_star_bounds_are_exact():
    """A deep chain and a wide star: one leaf set is optimal and certified by the bound."""
    spine = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, 300)}}
    chain = hc.Hierarchy.from_parents({**spine, "a": "n299", "b": "n299"})
    star = hc.Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(500)}})
    rng = np.random.default_rng(0)
    for H in (chain, star):
        S = rng.normal(size=(4, len(H)))
        _, info = inf.LabelSetOracle(H, "ilp", options=BOUNDS).solve(S, return_info=True)
        Zd = inf.LabelSetOracle(H, "dp").solve(S)
        np.testing.assert_allclose(info.objective, inf.label_set_scores(S, Zd), atol=1e-9)
        assert info.n_bounded == 4


@pytest.mark.parametrize("seed", range(6))
def test_restricted_program_keeps_the_optimum(seed):
    """(19) over the kept nodes only (the path taken where the LP is fractional) reaches the
    optimum of (19) on the whole hierarchy."""
    rng = np.random.default_rng(900 + seed)
    H = random_hierarchy(rng, int(rng.integers(4, 13)), dag=True)
    S = score_rows(rng, len(H), 3)
    optimum = (S @ inf.enumerate_label_sets(H).T.astype(float)).max(axis=1)
    _, _, _, keep, _ = inf.DagBounds(H).run(S)
    model = inf.LabelSetOracle(H, "ilp", options=BOUNDS)._model(integer=True)
    for i in range(len(S)):
        z, value = model.solve_subset(-S[i], keep[i])
        assert inf.is_valid_label_set(z > 0.5, H)
        np.testing.assert_allclose(-value, optimum[i], atol=1e-8)
        assert not np.any((z > 0.5) & ~keep[i])


def test_leaf_oracle_sparse_and_dense_paths_agree():
    """The single-label NHSVM oracle through the sparse leaf paths (wide hierarchies)."""

    rng = np.random.default_rng(4)
    H = random_hierarchy(rng, 25, dag=True)
    q, M = len(H.leaves), len(H)
    paths = H.ancestor_matrix[H.leaf_indices].toarray().astype(float)
    S = rng.normal(size=(6, M))
    leaf_pos = rng.integers(0, q, size=6)
    T = paths[leaf_pos] > 0
    offset, scale = rng.random((q, q)), 0.5 + rng.random((q, q))
    sparse = leaf_violations(S, leaf_pos, sp.csr_matrix(paths), offset[leaf_pos], scale[leaf_pos])
    rows = np.arange(len(S))                      # the same violations from the dense paths
    C = S @ paths.T
    viol = offset[leaf_pos] + scale[leaf_pos] * (C - C[rows, leaf_pos][:, None])
    viol[rows, leaf_pos] = 0.0
    value = viol[rows, np.argmax(viol, axis=1)]
    dense = (np.maximum(value, 0.0), np.where(value > 0, np.argmax(viol, axis=1), -1))
    assert T.any(axis=1).all()
    np.testing.assert_allclose(dense[0], sparse[0], atol=1e-12)
    np.testing.assert_array_equal(dense[1], sparse[1])


@pytest.mark.parametrize("restrict_below", [0.0, 1.0])
@pytest.mark.parametrize("seed", range(6))
def test_relaxation_on_the_kept_nodes_or_the_whole_graph_reaches_the_optimum(seed, restrict_below,
                                                                             monkeypatch):
    """An uncertified sample's LP is built on its kept nodes when they are few
    (``Options.restrict_below``), on the whole graph otherwise: both routes return optimal sets."""
    rng = np.random.default_rng(1300 + seed)
    H = random_hierarchy(rng, int(rng.integers(6, 14)), dag=True)
    S = score_rows(rng, len(H), 4)
    optimum = (S @ inf.enumerate_label_sets(H).T.astype(float)).max(axis=1)
    oracle = inf.LabelSetOracle(H, "ilp", options=inf.Options(restrict_below=restrict_below,
                                                                closure_cut=False))
    relaxation = oracle._model(integer=False)
    routes = []
    for name in ("solve", "solve_subset"):
        method = getattr(relaxation, name)
        monkeypatch.setattr(relaxation, name,
                            lambda *a, _m=method, _n=name: routes.append(_n) or _m(*a))
    Z, info = oracle.solve(S, return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(info.objective, optimum, atol=1e-8)
    expected = "solve_subset" if restrict_below == 1.0 else "solve"
    assert set(routes) <= {expected} and len(routes) == len(S) - info.n_bounded
