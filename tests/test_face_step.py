"""The face step of the margin-family dual solvers (:mod:`hiercvx.solvers.margin_dual`).

* the face matrix and right-hand side (:class:`.face.FaceSolver`) against the explicit
  pair vectors ``Phi_p = (Lam_y - Lam_ybar) (x) x_i``; the bordered solve of a corrected face
  by the previous round's factor against a fresh factorization;
* :meth:`FaceStep.solve_face`: its point satisfies the face's optimality conditions
  (one slack per tight example shared by its support pairs, zero margins' slack for the free
  examples, exhausted budgets), checked by brute force;
* from a rough dual point the face step reaches the CVXPY optimum, certified on the full model,
  for Cai–Hofmann (both rescalings) and Crammer–Singer (a degenerate face: more support pairs
  than primal dimensions);
* the support step (:meth:`SupportStep.step`): the restricted dual QP it solves
  (optimal, feasible, zero off its pairs) and the degenerate multi-label case it finishes, in
  both its forms (the dual on the working pairs, the interior point in the primal space on
  the examples with support); random labels beyond the pair form's room.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx import testing
from hiercvx.formulations import hsvm, multiclass
from hiercvx.methods.hsvm import cases
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.models import multiclass as mc_model
from hiercvx.result import relative_gap
from hiercvx.solvers import crammer_singer, interior_point, margin_dual, working_set
from hiercvx.solvers import face as face_module
from hiercvx.solvers.face import FaceSolver, face_rows
from hiercvx.solvers.face_step import FaceStep
from hiercvx.solvers.margin_dual import MarginDualState
from hiercvx.solvers.margin_polish import Polisher
from hiercvx.solvers.support_step import SupportStep
from hiercvx.solvers.primitives import row_data


def small_tree():
    return hc.Hierarchy.from_parents({"r": None, "a": "r", "a1": "a", "a2": "a", "b": "r",
                                      "b1": "b", "b11": "b1", "b12": "b1", "c": "r"})


def tree_data(n=40, d=4, seed=0):
    H = small_tree()
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    means = 1.5 * rng.standard_normal((len(leaves), d))
    k = rng.integers(len(leaves), size=n)
    return means[k] + rng.standard_normal((n, d)), [leaves[j] for j in k], H


def pair_vectors(model):
    """``Phi_p = (Lam_y - Lam_ybar) (x) x_i`` for every pair, as rows ``(P, M d)``."""
    data, X = model.data, np.asarray(model.X)
    Lam = np.asarray(data.Lam)
    diff = Lam[data.pair_y] - Lam[data.pair_ybar]
    return np.einsum("pm,pd->pmd", diff, X[data.pair_i]).reshape(data.n_pairs, -1)


def random_face(model, rng, C=1.0):
    """A support of 2-3 pairs per example for half of the examples, half of those tight."""
    data = model.data
    support = np.zeros(data.n_pairs, dtype=bool)
    for i in rng.choice(data.n_samples, data.n_samples // 2, replace=False):
        p0, p1 = data.pair_ptr[i], data.pair_ptr[i + 1]
        support[rng.choice(np.arange(p0, p1), min(p1 - p0, rng.integers(1, 4)), replace=False)] = True
    has = np.bincount(data.pair_i, weights=support, minlength=data.n_samples) > 0
    tight = has & (rng.random(data.n_samples) < 0.5)
    return support, tight


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("form", ["dense", "csr", "gram"])
def test_face_system_matches_the_explicit_pair_vectors(seed, form):
    X, y, H = tree_data(n=20, d=3, seed=seed)
    model = hsvm_model.prepare(X, y, H)
    data = model.data
    rng = np.random.default_rng(seed)
    support, tight = random_face(model, rng)
    face = np.flatnonzero(support)
    Phi = pair_vectors(model)[face]
    pi, cost = data.pair_i[face], data.pair_cost[face]
    # rows: every face pair but the first of each tight example, minus cost-scaled p0
    first = np.r_[True, pi[1:] != pi[:-1]]
    p0 = np.flatnonzero(first)[np.cumsum(first) - 1]
    elim = first & tight[pi]
    keep = np.flatnonzero(~elim)
    E = np.zeros((keep.size, face.size))
    E[np.arange(keep.size), keep] = 1.0
    scaled = tight[pi[keep]]
    E[np.arange(keep.size)[scaled], p0[keep][scaled]] = -cost[keep][scaled] / cost[p0[keep][scaled]]
    a_fix = np.zeros(face.size)
    a_fix[elim] = data.Cw[pi[elim]] / cost[elim]
    B = Phi @ Phi.T
    rows = face_rows(support, tight, data.pair_i, data.pair_cost.astype(float),
                     data.Cw.astype(float))
    Xm = np.asarray(model.X)
    if form == "gram":  # the kernel given as its matrix
        solver = FaceSolver(data, row_data(K=Xm @ Xm.T).mode, None, Xm @ Xm.T, data.Q)
    else:
        Xf = sp.csr_matrix(Xm) if form == "csr" else Xm
        solver = FaceSolver(data, row_data(X=Xf).mode, Xf, None, data.Q)
    M, rhs = solver.matrix(rows)
    # the rows come in E's order, each with its pair and (tight examples) the eliminated one
    np.testing.assert_array_equal(rows.pair, face[keep])
    np.testing.assert_array_equal(rows.elim, face[elim])
    expect = E @ B @ E.T
    np.testing.assert_allclose(M, expect, atol=1e-10)
    np.testing.assert_allclose(rhs, E @ (data.pair_offset[face] - B @ a_fix), atol=1e-10)


def corrected_face(model, support, tight, rng, k=3):
    """``support`` with ``k`` pairs left and ``k`` entered, one example's budget released and
    one filled (a face round's corrections, made up)."""
    data = model.data
    support, tight = support.copy(), tight.copy()
    support[rng.choice(np.flatnonzero(support), k, replace=False)] = False
    support[rng.choice(np.flatnonzero(~support), k, replace=False)] = True
    has = np.bincount(data.pair_i, weights=support, minlength=data.n_samples) > 0
    tight &= has
    tight[rng.choice(np.flatnonzero(tight))] = False
    tight[rng.choice(np.flatnonzero(has & ~tight))] = True
    return support, tight


def dense_face_solution(solver, rows, lam0, ridge):
    M, rhs = solver.matrix(rows)
    return np.linalg.solve(M + ridge * np.eye(rows.size), rhs + ridge * lam0)


@pytest.mark.parametrize("seed", range(3))
def test_bordered_solve_matches_a_fresh_factorization(seed):
    # more features than the face has rows: a nonsingular face matrix, one answer to compare
    X, y, H = tree_data(n=30, d=40, seed=seed)
    model = hsvm_model.prepare(X, y, H)
    data = model.data
    cost, budget = data.pair_cost.astype(float), data.Cw.astype(float)
    rng = np.random.default_rng(seed)
    support, tight = random_face(model, rng)
    solver = FaceSolver(data, row_data(X=model.X).mode, model.X, None, data.Q)
    rows0 = face_rows(support, tight, data.pair_i, cost, budget)
    lam = solver.solve(rows0, rng.random(rows0.size))
    assert (solver.n_factor, solver.n_update) == (1, 0)
    ridge = solver._base[3]
    # the next round: a few pairs and budgets changed; the previous factor serves (the size
    # rule lifted: on a face this small a fresh factorization is cheaper)
    solver.options = face_module.Options(update_share=np.inf)
    support1, tight1 = corrected_face(model, support, tight, rng)
    rows1 = face_rows(support1, tight1, data.pair_i, cost, budget)
    lam0 = rng.random(rows1.size)
    lam = solver.solve(rows1, lam0)
    assert (solver.n_factor, solver.n_update) == (1, 1)
    expect = dense_face_solution(solver, rows1, lam0, ridge)
    np.testing.assert_allclose(lam, expect, rtol=1e-9, atol=1e-9 * np.abs(expect).max())
    # the face step's own entry point: the same point as a fresh factorization
    assert np.all(rows1.scatter(lam, data.n_pairs)[~support1] == 0)
    # rows of the new face that did not change keep their keys; changed ones do not
    _, c0, c1 = np.intersect1d(rows0.keys, rows1.keys, return_indices=True)
    np.testing.assert_array_equal(rows0.pair[c0], rows1.pair[c1])
    np.testing.assert_array_equal(rows0.first[c0], rows1.first[c1])
    assert c1.size < rows1.size


def test_bordered_solve_that_misses_its_residual_is_dropped():
    X, y, H = tree_data(n=30, d=40, seed=4)
    model = hsvm_model.prepare(X, y, H)
    data = model.data
    cost, budget = data.pair_cost.astype(float), data.Cw.astype(float)
    rng = np.random.default_rng(4)
    support, tight = random_face(model, rng)
    solver = FaceSolver(data, row_data(X=model.X).mode, model.X, None, data.Q)
    solver.solve(face_rows(support, tight, data.pair_i, cost, budget),
                 np.zeros(int(support.sum()) - int(tight.sum())))
    # no residual is small enough
    solver.options = face_module.Options(update_share=np.inf, update_rtol=0.0)
    support1, tight1 = corrected_face(model, support, tight, rng)
    rows1 = face_rows(support1, tight1, data.pair_i, cost, budget)
    lam = solver.solve(rows1, np.zeros(rows1.size))
    assert (solver.n_factor, solver.n_update, solver.n_fallback) == (2, 0, 1)
    expect = dense_face_solution(solver, rows1, np.zeros(rows1.size), solver._base[3])
    np.testing.assert_allclose(lam, expect, rtol=1e-9, atol=1e-9 * np.abs(expect).max())
    # and a face too far from the last factor's goes straight to a fresh one
    solver.options = face_module.Options(update_share=0.0)
    support2, tight2 = corrected_face(model, support1, tight1, rng)
    solver.solve(face_rows(support2, tight2, data.pair_i, cost, budget),
                 np.zeros(int(support2.sum()) - int(tight2.sum())))
    assert (solver.n_factor, solver.n_update, solver.n_fallback) == (3, 0, 1)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_solve_face_satisfies_the_face_conditions(rescaling):
    X, y, H = tree_data(n=30, d=4, seed=3)
    model = hsvm_model.prepare(X, y, H, rescaling=rescaling)
    data = model.data
    C = 0.8
    rng = np.random.default_rng(1)
    support, tight = random_face(model, rng)
    state = MarginDualState(model, row_data(X=model.X), C)
    a = FaceStep(state).solve_face(support, tight, np.zeros(data.n_pairs))
    assert np.all(a[~support] == 0)
    # an arbitrary face: its maximizer may be far out (large entries cancelling), so the
    # conditions hold to rounding relative to the entries' size
    scale = 1.0 + np.abs(data.pair_cost * a).sum()
    used = np.bincount(data.pair_i, weights=data.pair_cost * a, minlength=data.n_samples)
    np.testing.assert_allclose(used[tight], C * data.Cw[tight], atol=1e-10 * scale)
    # margins at w(a): b_p - Phi_p . w = cost_p xi_i, one xi_i per tight example, 0 if free
    Phi = pair_vectors(model)
    margin = data.pair_offset - Phi @ (Phi.T @ a)
    ratio = (margin / data.pair_cost)[support]
    pi = data.pair_i[support]
    atol = 1e-8 * scale * np.abs(Phi).max() ** 2
    for i in np.unique(pi):
        r = ratio[pi == i]
        if tight[i]:
            np.testing.assert_allclose(r, r[0], atol=atol)
        else:
            np.testing.assert_allclose(r, 0.0, atol=atol)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_face_step_reaches_the_reference_optimum(rescaling):
    X, y, H = tree_data(n=40, d=4, seed=5)
    model = hsvm_model.prepare(X, y, H, rescaling=rescaling)
    C = 1.0
    ref = hsvm.primal(X, y, H, C=C, rescaling=rescaling).solve()
    # near the optimum (the face identified by the passes; from a 1e-3 gap it is not yet)
    rough = working_set.solve(model, C=C, tol=1e-5, polish=False)
    state = MarginDualState(model, row_data(X=model.X), C)
    face = FaceStep(state)
    alpha = rough.dual.copy()
    primal, dual, _ = state.certify(alpha)
    for _ in range(3):
        primal, dual, _ = face.step(alpha, 1e-12, primal, dual)
    best = min(primal, state.best_primal)
    assert relative_gap(best, dual) <= 1e-8 < rough.gap
    # both sides recomputed by the model: the dual at alpha, the primal at the kept point
    assert dual == pytest.approx(model.lower_bound(alpha, C), rel=1e-12)
    W = _margin.weights_from_coefficients(state.best_G, model.X, model.data.Lam) \
        if state.best_G is not None else model.weights_from_dual(alpha)
    assert _margin.primal_objective(W, model.X, model.data, C) == pytest.approx(best, rel=1e-12)
    assert best == pytest.approx(ref.objective, rel=1e-7)


@pytest.mark.parametrize("allowed", [None, 12])
def test_face_rounds_go_back_to_the_best_face_after_a_worse_round(monkeypatch, allowed):
    """A round whose maximizer ``w(a)`` is worse than the best round's (here spoiled on
    purpose) must not steer the face: the next round solves the best round's corrected face
    again, not the face its own corrections would give, and the step still ends at the optimum
    (the cycling of ImageCLEF07A's hierarchical SVM, module docstring of ``margin_dual``).
    Nor may its many changes end the step, since they are not applied (``allowed = 12``
    changes per round: the spoiled round's 16 are over, the first round's one is not; ending
    there made ImageCLEF07A's fit wait 3000 passes for the next face step)."""
    opts = margin_dual.Options() if allowed is None else margin_dual.Options(
        face_change=0.0, face_change_pairs=allowed)
    X, y, H = tree_data(n=40, d=4, seed=7)
    model = hsvm_model.prepare(X, y, H)
    rough = working_set.solve(model, C=1.0, tol=1e-4, polish=False)
    state = MarginDualState(model, row_data(X=model.X), 1.0, options=opts)
    face = FaceStep(state)
    alpha = rough.dual.copy()
    primal, dual, _ = state.certify(alpha)
    faces = []
    solve_face = FaceStep.solve_face

    def spoiled(self, support, tight, base):
        faces.append((support.copy(), tight.copy()))
        a = solve_face(self, support, tight, base)
        return a + 0.5 * support if len(faces) == 2 else a

    monkeypatch.setattr(FaceStep, "solve_face", spoiled)
    primal, dual, _ = face.step(alpha, 1e-12, primal, dual)
    assert len(faces) == 3
    assert not np.array_equal(faces[1][0], faces[0][0])  # round 1 corrected the face
    # round 3 repeats round 2's face (round 1's one correction), ignoring the spoiled round's
    # corrections (9 pairs entering, 7 examples released at its w(a))
    assert np.array_equal(faces[2][0], faces[1][0]) and np.array_equal(faces[2][1], faces[1][1])
    assert relative_gap(min(primal, state.best_primal), dual) <= 1e-12
    # the rounds' factor is not carried into the passes (two m-square matrices)
    assert face.solver.n_factor >= 1 and face.solver._base is None


@pytest.mark.parametrize("finish, rounds", [(0.0, 1), (1.0, 2)])
def test_face_rounds_go_on_past_the_limit_only_while_the_changes_shrink(monkeypatch, finish,
                                                                        rounds):
    """With ``face_rounds = 1`` a step stops after its first round unless that round's changes
    are below ``face_finish`` of the face (``finish = 0``: never); then it goes on, each round
    changing less than the one before, and ends at the certified optimum."""
    X, y, H = tree_data(n=40, d=4, seed=8)
    model = hsvm_model.prepare(X, y, H)
    rough = working_set.solve(model, C=1.0, tol=1e-3, polish=False)
    opts = margin_dual.Options(face_rounds=1, face_finish=finish)
    state = MarginDualState(model, row_data(X=model.X), 1.0, options=opts)
    face = FaceStep(state)
    alpha = rough.dual.copy()
    primal, dual, _ = state.certify(alpha)
    calls = []
    solve_face = FaceStep.solve_face

    def counted(self, support, tight, base):
        calls.append(int(support.sum()))
        return solve_face(self, support, tight, base)

    monkeypatch.setattr(FaceStep, "solve_face", counted)
    primal, dual, _ = face.step(alpha, 1e-12, primal, dual)
    assert len(calls) == rounds
    gap = relative_gap(min(primal, state.best_primal), dual)
    assert gap <= 1e-12 if rounds > 1 else gap > 1e-12


def test_solvers_report_the_face_steps_primal_point_certified():
    X, y, H = tree_data(n=60, d=5, seed=7)
    model = hsvm_model.prepare(X, y, H)
    ref = hsvm.primal(X, y, H, C=2.0).solve()
    fast = working_set.solve(model, C=2.0, tol=1e-9)
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-7)
    assert fast.objective == pytest.approx(_margin.primal_objective(fast.weights, model.X, model.data, 2.0), rel=1e-13)
    yk = np.searchsorted(sorted(set(y)), y)
    cs_model = mc_model.prepare(X, yk, fit_intercept=True)
    ref_cs = multiclass.primal(X, yk, C=2.0, fit_intercept=True).solve()
    fast_cs = crammer_singer.solve(cs_model, C=2.0, tol=1e-9)
    testing.assert_fast_matches_reference(fast_cs, ref_cs, rtol=1e-7)
    assert fast_cs.objective == pytest.approx(
        cs_model.objective(fast_cs.weights, 2.0, intercept=fast_cs.intercept), rel=1e-12)


# ------------------------------------------------------------------ the support step
def multilabel_case():
    """The registry's multi-label case with node biases at the size ``hiercvx verify`` runs
    (n = 120): a degenerate face, where the face step's nearest maximizer left the feasible
    set in every round and Algorithm 2 stopped at 10000 passes with gap 9e-7 > tol 1e-8."""
    return [c for c in cases(quick=False) if "multilabel" in c.name and "intercept" in c.name][0]


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_solve_restricted_on_every_pair_is_the_optimum(rescaling):
    X, y, H = tree_data(n=40, d=4, seed=5)
    model = hsvm_model.prepare(X, y, H, rescaling=rescaling)
    ref = hsvm.dual(X, y, H, C=1.0, rescaling=rescaling).solve()
    state = MarginDualState(model, row_data(X=model.X), 1.0)
    a = SupportStep(state, FaceStep(state)).solve_restricted(np.arange(model.data.n_pairs))
    used = np.bincount(model.data.pair_i, weights=model.data.pair_cost * a,
                       minlength=model.data.n_samples)
    assert a.min() >= -1e-12 and np.all(used <= state.budget * (1 + 1e-9))  # feasible as it is
    assert model.lower_bound(_margin.project_dual(a, model.data, 1.0), 1.0) == \
        pytest.approx(ref.objective, rel=1e-8)


def test_solve_restricted_keeps_alpha_zero_outside_its_pairs():
    X, y, H = tree_data(n=40, d=4, seed=1)
    model = hsvm_model.prepare(X, y, H)
    state = MarginDualState(model, row_data(X=model.X), 1.0)
    pairs = np.flatnonzero(np.arange(model.data.n_pairs) % 3 == 0)
    a = SupportStep(state, FaceStep(state)).solve_restricted(pairs)
    outside = np.setdiff1d(np.arange(model.data.n_pairs), pairs)
    assert np.all(a[outside] == 0.0)
    # the restricted optimum: no feasible move on the kept pairs raises the dual
    full = model.lower_bound(_margin.project_dual(a, model.data, 1.0), 1.0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        b = a.copy()
        b[pairs] = np.maximum(a[pairs] + 1e-3 * rng.standard_normal(pairs.size), 0.0)
        assert model.lower_bound(_margin.project_dual(b, model.data, 1.0), 1.0) <= full + 1e-9


#: the primal space made unaffordable for the support step (no Newton step fits)
NO_PRIMAL = interior_point.Options(max_dimension=0)


def only_form(monkeypatch, form):
    """Leave the support step one form: ``"pairs"`` (the primal space made unaffordable) or
    ``"primal"`` (no room for working pairs); returns the options that do so and the list the
    used forms go to."""
    opts = (margin_dual.Options(interior_point=NO_PRIMAL) if form == "pairs"
            else margin_dual.Options(support_max_pairs=0))
    used = []
    support_form = SupportStep.form

    def recorded(self, n_pairs):
        out = support_form(self, n_pairs)
        used.append(out)
        return out

    monkeypatch.setattr(SupportStep, "form", recorded)
    return opts, used


@pytest.mark.parametrize("form", ["pairs", "primal"])
def test_support_step_finishes_the_degenerate_multilabel_case(monkeypatch, form):
    opts, used = only_form(monkeypatch, form)
    case = multilabel_case()
    model = hsvm_model.prepare(case.X, case.Y, case.H, **case.model_options)
    ref = hsvm.primal(case.X, case.Y, case.H, C=1.0, **case.model_options).solve()
    # without the support step: the pass limit, unconverged
    fast = working_set.solve(model, C=1.0, tol=1e-8, options=working_set.Options(dual=opts))
    assert fast.converged and fast.n_iter < 2000
    assert fast.extras["n_newton"] >= 1
    assert set(used) == {form}
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-7)
    # from a rough point, the step alone closes the gap, certified on the full model
    rough = working_set.solve(model, C=1.0, tol=1e-3, polish=False)
    state = MarginDualState(model, row_data(X=model.X), 1.0, options=opts)
    alpha = rough.dual.copy()
    primal, dual, _ = state.certify(alpha)
    primal, dual, _ = SupportStep(state, FaceStep(state)).step(alpha, 1e-10, primal, dual)
    assert relative_gap(min(primal, state.best_primal), dual) <= 1e-9 < rough.gap
    assert dual == pytest.approx(model.lower_bound(alpha, 1.0), rel=1e-12)
    assert dual == pytest.approx(ref.objective, rel=1e-8)


def test_primal_support_step_finishes_random_labels_beyond_the_pair_limit(monkeypatch):
    """Random labels: the support holds several pairs per primal dimension, the face step's
    rounds never settle, and the working pairs outnumber what the pair form may factorize
    (here 40).  The primal form solves on the examples with support or a violated pair;
    without it, Algorithm 2 runs into its pass limit on such problems."""
    opts = working_set.Options(dual=margin_dual.Options(support_max_pairs=40))
    X, y, H = tree_data(n=150, d=3, seed=3)
    y = list(np.random.default_rng(0).permutation(np.array(y, dtype=object)))
    model = hsvm_model.prepare(X, y, H)
    examples = []
    solve = interior_point.solve

    def recorded(*args, **kwargs):
        examples.append(kwargs["examples"])
        return solve(*args, **kwargs)

    monkeypatch.setattr(interior_point, "solve", recorded)
    fast = working_set.solve(model, C=1.0, tol=1e-9, options=opts)
    assert fast.converged and fast.n_iter < 500 and examples
    assert np.count_nonzero(fast.dual > 1e-6 * fast.dual.max()) > 40  # beyond the pair form's room
    ref = hsvm.primal(X, y, H, C=1.0).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-7)


def test_support_step_keeps_its_working_pairs_within_the_limit(monkeypatch):
    """With room for few pairs the step takes the most violated ones, drops what its
    restricted optimum leaves at 0, and still finishes the degenerate case."""
    opts = working_set.Options(dual=margin_dual.Options(support_max_pairs=300,
                                                        interior_point=NO_PRIMAL))
    sizes = []
    solve_restricted = SupportStep.solve_restricted

    def recorded(self, pairs):
        sizes.append(pairs.size)
        return solve_restricted(self, pairs)

    monkeypatch.setattr(SupportStep, "solve_restricted", recorded)
    case = multilabel_case()
    model = hsvm_model.prepare(case.X, case.Y, case.H, **case.model_options)
    fast = working_set.solve(model, C=1.0, tol=1e-8, options=opts)
    assert sizes and max(sizes) <= 300
    assert fast.converged
    ref = hsvm.primal(case.X, case.Y, case.H, C=1.0, **case.model_options).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-7)


def test_grow_takes_the_most_violated_candidates_first():
    X, y, H = tree_data(n=20, d=3, seed=2)
    model = hsvm_model.prepare(X, y, H)
    state = MarginDualState(model, row_data(X=model.X), 1.0,
                            options=margin_dual.Options(support_max_pairs=5))
    step = SupportStep(state, FaceStep(state))
    P = model.data.n_pairs
    work = np.zeros(P, dtype=bool)
    work[:2] = True
    Hv = np.arange(P, dtype=float)
    grown = step.grow(work, np.ones(P, dtype=bool), Hv, np.zeros(model.data.n_samples))
    assert grown.sum() == 5 and grown[:2].all() and grown[P - 3:].all()
    full = step.grow(grown, np.ones(P, dtype=bool), Hv, np.zeros(model.data.n_samples))
    np.testing.assert_array_equal(full, grown)


@pytest.mark.parametrize("cost, first", [(10.0, True), (1e4, False)])
def test_a_warm_start_earns_an_expensive_support_step(monkeypatch, cost, first):
    """A warm start is credited with ``warm_support_credit`` certificates' worth of passes: a
    support step costing less comes at the first certificate, one costing more must be paid
    for by the passes first (an unbounded credit would start a warm-started solve with a
    support step of any cost)."""
    case = multilabel_case()
    model = hsvm_model.prepare(case.X, case.Y, case.H, **case.model_options)
    rough = working_set.solve(model, C=1.0, tol=1e-3, polish=False)
    monkeypatch.setattr(SupportStep, "work",
                        lambda self, n_support: cost * self.state.certificate_work())
    steps = []
    support_step = Polisher._support_step

    def recorded(self, *args):
        steps.append(self.work_done)
        return support_step(self, *args)

    monkeypatch.setattr(Polisher, "_support_step", recorded)
    warm = working_set.solve(model, C=1.0, tol=1e-8, alpha0=rough.dual, max_iter=50)
    assert (steps[:1] == [0.0]) is first  # a step before any pass, or none
    if first:
        assert warm.converged
