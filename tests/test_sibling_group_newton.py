"""The dual interior point method of the sibling-margin QP (hiercvx.solvers.sibling_qp) through
the sibling-group blocks of its Hessian: the group route's Newton steps against the
dense route's and the explicit system, its fallback when the blocks turn singular, the probe
that ends a working-set round early, and whole solves on the group route against the CVXPY
reference (hiercvx.formulations.hpsi)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from hiercvx import methods, testing
from hiercvx.formulations import hpsi
from hiercvx.hierarchy import Hierarchy
from hiercvx.models.sibling import prepare
from hiercvx.solvers import dual_qp, sibling_qp
from hiercvx.solvers.sibling_qp import SiblingQPSolver


def two_level_problem(seed=5, n=50):
    """5 groups of 3 leaves under a root of 5 children: 6 sibling groups, every example's
    pairs in two of them (the shape of the working sets on cellcycle_FUN, small)."""
    rng = np.random.default_rng(seed)
    parents = {"r": None, **{f"a{i}": "r" for i in range(5)},
               **{f"a{i}_{j}": f"a{i}" for i in range(5) for j in range(3)}}
    H = Hierarchy.from_parents(parents)
    leaves = list(H.leaves)
    k = rng.integers(0, len(leaves), n)
    y = np.array([leaves[c] for c in k], dtype=object)
    X = rng.standard_normal((n, 3)) + 2.0 * rng.standard_normal((len(leaves), 3))[k]
    return X, y, H


#: every dual interior point with more than one block takes the group route
GROUP_ROUTE = sibling_qp.Options(group_pack=1, dual_qp=dual_qp.Options(newton="group"))


def newton_system(model, pairs=None, pack=None):
    """The pieces of :func:`dual_qp.solve_dual_qp`'s Newton system on ``pairs`` (default all):
    ``Q`` by groups (``pack`` pairs per block at most), the budgets' incidence ``Bm`` and the
    independent rows ``E`` of (10)."""
    pr = model.pairs
    idx = np.arange(pr.n_pairs) if pairs is None else pairs
    ii, jj, tt = pr.pair_i[idx], pr.pair_pos[idx], pr.pair_neg[idx]
    k = idx.size
    Ei = sp.csr_matrix((np.r_[np.ones(k), -np.ones(k)], (np.r_[np.arange(k), np.arange(k)],
                                                        np.r_[jj, tt])), shape=(k, model.M))
    G = model.X @ model.X.T
    Q = sibling_qp.group_blocks(Ei, G, ii, pr.group_of[jj], pack)
    samples, inv = np.unique(ii, return_inverse=True)
    Bm = sp.csr_matrix((np.ones(k), (inv, np.arange(k))), shape=(samples.size, k))
    E = Ei[:, model.independent_rows()].toarray()
    return Q, Bm, E


def explicit_residual(Q, Bm, E, d, c, r, re, dx, dy):
    """Relative residual of ``(Q + diag d + Bm^T diag c Bm) dx + E dy = r``, ``E^T dx = -re``."""
    H = Q.dense() + np.diag(d) + (Bm.T @ sp.diags(c) @ Bm).toarray()
    top = np.abs(H @ dx + E @ dy - r).max() / np.abs(r).max()
    bottom = np.abs(E.T @ dx + re).max() / (1.0 + np.abs(re).max())
    return max(top, bottom)


def test_group_blocks_are_the_dense_hessian_block_diagonal():
    X, y, H = two_level_problem()
    model = prepare(X, y, H)
    for pack in (1, 128):
        Q, _, _ = newton_system(model, pack=pack)
        np.testing.assert_array_equal(np.sort(np.concatenate(Q.index)), np.arange(Q.size))
        assert len(Q.index) == 6 if pack == 1 else len(Q.index) < 6
        pr = model.pairs
        inc = (pr.pair_pos[:, None] == pr.pair_pos[None, :]) * 1.0 \
            - (pr.pair_pos[:, None] == pr.pair_neg[None, :]) \
            - (pr.pair_neg[:, None] == pr.pair_pos[None, :]) \
            + (pr.pair_neg[:, None] == pr.pair_neg[None, :])
        full = inc * (model.X @ model.X.T)[np.ix_(pr.pair_i, pr.pair_i)]
        np.testing.assert_allclose(Q.dense(), full, atol=1e-12)
        x = np.random.default_rng(0).standard_normal(Q.size)
        np.testing.assert_allclose(Q.dot(x), full @ x, atol=1e-10)


def test_group_and_dense_newton_steps_agree():
    X, y, H = two_level_problem()
    model = prepare(X, y, H)
    rng = np.random.default_rng(1)
    Q, Bm, E = newton_system(model, pack=1)
    d = rng.uniform(0.05, 5.0, Q.size)
    c = rng.uniform(0.05, 50.0, Bm.shape[0])
    r, re = rng.standard_normal(Q.size), rng.standard_normal(E.shape[1])
    group = dual_qp.GroupNewton(Q, Bm, E)
    group.factor(d, c)
    dx, dy = group.solve(r, re)
    assert group.dense is None          # well conditioned: no fallback
    dense = dual_qp.DenseNewton(Q, Bm, E)
    dense.factor(d, c)
    dx2, dy2 = dense.solve(r, re)
    np.testing.assert_allclose(dx, dx2, atol=1e-9 * np.abs(dx2).max())
    np.testing.assert_allclose(dy, dy2, atol=1e-9 * np.abs(dy2).max())
    assert explicit_residual(Q, Bm, E, d, c, r, re, dx, dy) <= 1e-10


def test_group_newton_falls_back_to_the_dense_route_on_singular_blocks():
    """The end of an interior point path: ``z / x`` vanishing on more pairs than a group's
    ``Q`` has rank, huge budget weights -- the blocks alone are singular to round-off, the
    refinement cannot repair the elimination, and the dense route takes over (the system is
    nearly singular, so only the route is checked here, not the step's accuracy)."""
    X, y, H = two_level_problem(n=120)
    model = prepare(X, y, H)
    rng = np.random.default_rng(2)
    Q, Bm, E = newton_system(model, pack=1)
    d = np.where(rng.random(Q.size) < 0.8, 1e-13, 1e4)
    c = np.where(rng.random(Bm.shape[0]) < 0.5, 1e11, 1e-3)
    r, re = rng.standard_normal(Q.size), rng.standard_normal(E.shape[1])
    group = dual_qp.GroupNewton(Q, Bm, E)
    group.factor(d, c)
    dx, dy = group.solve(r, re)
    fallback = group.dense
    assert fallback is not None
    dense = dual_qp.DenseNewton(Q, Bm, E)
    dense.factor(d, c)
    for got, want in zip((dx, dy), dense.solve(r, re)):
        np.testing.assert_array_equal(got, want)
    # the rest of the path stays on the dense route
    group.factor(2.0 * d, c)
    dense.factor(2.0 * d, c)
    assert group.dense is fallback
    for got, want in zip(group.solve(r, re), dense.solve(r, re)):
        np.testing.assert_array_equal(got, want)


def test_probe_ends_the_path_without_accepting():
    X, y, H = two_level_problem()
    model = prepare(X, y, H)
    Q, Bm, E = newton_system(model)
    g = np.ones(Q.size)
    h = np.zeros(E.shape[1])
    probed = []

    def probe(x, y_):
        probed.append(x.copy())
        return True

    def accept(x, y_, u):   # pragma: no cover - the probe stops first
        raise AssertionError("accept called after the probe stopped the path")

    x, _, it, accepted = dual_qp.solve_dual_qp(Q, g, Bm, E, h, 1.0, 100, accept, 1e-6, probe)
    assert not accepted and len(probed) == 1 and 1 <= it < 100
    assert x.min() > 0


@pytest.fixture
def group_route(monkeypatch):
    """Records the group route's factorizations (one entry per Newton matrix: True while it
    has not handed over to the dense route) of the solves run with ``GROUP_ROUTE``."""
    calls = []
    factor = dual_qp.GroupNewton.factor

    def counted(self, d, c):
        calls.append(self.dense is None)
        return factor(self, d, c)

    monkeypatch.setattr(dual_qp.GroupNewton, "factor", counted)
    return calls


@pytest.mark.parametrize("C", [0.3, 3.0])
def test_working_set_on_the_group_route_matches_the_reference(group_route, monkeypatch, C):
    probes = []
    dual_ipm = dual_qp.solve_dual_qp

    def recorded(Q, g, Bm, E, h, C, max_iter, accept, tol=1e-6, probe=None, **kw):
        def probe_recorded(x, y_):
            probes.append(probe(x, y_))
            return probes[-1]
        return dual_ipm(Q, g, Bm, E, h, C, max_iter, accept, tol,
                        probe_recorded if probe is not None else None, **kw)

    monkeypatch.setattr(dual_qp, "solve_dual_qp", recorded)
    X, y, H = two_level_problem()
    model = prepare(X, y, H)
    engine = SiblingQPSolver(model, method="working_set", options=GROUP_ROUTE)
    fast = engine.solve(C, tol=1e-6, max_passes=2)   # a rough first set: probes and rounds
    assert fast.converged and group_route and any(group_route)
    assert any(probes)                                # a round ended early and the set grew
    testing.assert_fast_matches_reference(fast, hpsi.primal(X, y, H, C=C).solve(), rtol=1e-5)
    lam = hpsi.linearization(model, model.train_scores(fast.weights, fast.biases), C)
    step = engine.solve(C, lam, tol=1e-6)             # warm: the last set, sweeps from its point
    assert step.converged
    testing.assert_fast_matches_reference(
        step, hpsi.primal(X, y, H, C=C, pair_weights=lam).solve(), rtol=1e-5)


def test_dual_ipm_on_the_group_route_matches_the_reference(group_route):
    X, y, H = two_level_problem(seed=7, n=40)
    fast = sibling_qp.solve(prepare(X, y, H), 2.0, tol=1e-8, method="dual_ipm",
                            options=GROUP_ROUTE)
    assert fast.converged and group_route
    testing.assert_fast_matches_reference(fast, hpsi.primal(X, y, H, C=2.0).solve(), rtol=1e-6)


def test_dc_run_on_the_group_route_follows_the_reference_path(group_route):
    # gap_tol 1e-7: the DC steps' recovered primal of this problem floors near 1e-8 relative
    # (on every route, the dense dual interior point on all pairs included)
    X, y, H = two_level_problem(seed=11, n=40)
    fast = sibling_qp.solve_dc(prepare(X, y, H), 2.0, tol=1e-8, gap_tol=1e-7,
                               method="working_set", options=GROUP_ROUTE)
    ref = hpsi.dc(X, y, H, C=2.0, tol=1e-8)
    assert fast.converged and np.all(fast.step_gaps <= 1e-7) and group_route
    np.testing.assert_allclose(fast.dc_objectives, ref.dc_objectives, rtol=1e-5)


@pytest.mark.parametrize("method", ["dual_ipm", "working_set"])
def test_registry_tree_case_converges_at_the_verify_tolerance(method):
    """``hiercvx verify sibling_svm`` (the n = 120 cases) certifies at the verify tolerance
    1e-8 well within the iteration limit: the dense Newton solves are refined (without it the
    dual residual sticks near 6e-8 while the complementarity falls to 1e-27), and an iterate
    at the residual's floor is certified."""
    meth = methods.get("sibling_svm")
    case = [c for c in meth.cases(quick=False) if c.name.startswith("tree")][0]
    res = meth.run_fast(method, case)
    assert res.converged and res.gap <= 1e-8 and res.n_iter < 50
    testing.assert_fast_matches_reference(res, hpsi.primal(case.X, case.Y, case.H, **case.params).solve(),
                                          rtol=1e-6)


def test_a_path_at_its_residual_floor_is_certified_and_ended(monkeypatch):
    """Without iterative refinement of the dense solves (``dense_refine=0``) the same case's
    dual residual stalls at 6e-8 while the complementarity falls to 1e-27 and the residual then grows: the
    iterate at the floor is offered to ``accept`` and the path ends after a few such tries
    instead of running its 100 steps."""
    meth = methods.get("sibling_svm")
    case = [c for c in meth.cases(quick=False) if c.name.startswith("tree")][0]
    offered = []
    solve_dual_qp = dual_qp.solve_dual_qp

    def recorded(Q, g, Bm, E, h, C, max_iter, accept, tol=1e-6, probe=None, **kw):
        def accept_recorded(x, y_, u):
            offered.append(x.copy())
            return accept(x, y_, u)
        return solve_dual_qp(Q, g, Bm, E, h, C, max_iter, accept_recorded, tol, probe, **kw)

    monkeypatch.setattr(dual_qp, "solve_dual_qp", recorded)
    unrefined = sibling_qp.Options(dual_qp=dual_qp.Options(dense_refine=0))
    with pytest.warns(ConvergenceWarning):
        res = meth.run_fast("dual_ipm", case, options=unrefined)
    assert 1 <= len(offered) <= 3 and res.n_iter < 30
    assert res.gap <= 1e-7 and res.lower_bound <= res.objective
