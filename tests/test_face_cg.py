"""The matrix-free face solve (hiercvx.solvers.face_cg) against the formed face system.

The face matrix ``E B E^T`` and right-hand side that :class:`~hiercvx.solvers.face.FaceSolver`
forms (checked against explicit pair vectors in ``test_face_step.py``) are the reference: the
operator's products, the right-hand side through the eliminated pairs' class weights, the
block preconditioner and the conjugate-gradient answer must agree with them, and the face
step that takes this route must still reach the CVXPY reference optimum.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import hiercvx as hc
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.result import relative_gap
from hiercvx.solvers import face_cg, margin_dual, working_set
from hiercvx.solvers.face import FaceSolver, face_rows
from hiercvx.solvers.face_step import FaceStep
from hiercvx.solvers.margin_dual import MarginDualState
from hiercvx.solvers.margin_polish import Polisher
from hiercvx.solvers.primitives import row_data


def label_set_problem(n=30, d=4, seed=0):
    """Label sets on a small tree (two or three relevant leaves per example): faces with
    several pairs per example and shared classes between its rows."""
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "a1": "a", "a2": "a", "b": "r",
                                   "b1": "b", "b11": "b1", "b12": "b1", "c": "r"})
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    X = rng.standard_normal((n, d))
    Y = [set(rng.choice(leaves, rng.integers(1, 3), replace=False).tolist()) for _ in range(n)]
    return X, Y, H


def random_face(model, rng):
    """Up to five support pairs for most examples, about half of those tight."""
    data = model.data
    support = np.zeros(data.n_pairs, dtype=bool)
    for i in range(data.n_samples):
        p0, p1 = data.pair_ptr[i], data.pair_ptr[i + 1]
        if rng.random() < 0.8:
            support[rng.choice(np.arange(p0, p1), min(p1 - p0, rng.integers(1, 6)),
                               replace=False)] = True
    has = np.bincount(data.pair_i, weights=support, minlength=data.n_samples) > 0
    return support, has & (rng.random(data.n_samples) < 0.5)


def face_of(seed, n=30, d=4, sparse=False):
    X, Y, H = label_set_problem(n=n, d=d, seed=seed)
    model = hsvm_model.prepare(X, Y, H)
    data = model.data
    rng = np.random.default_rng(seed)
    support, tight = random_face(model, rng)
    rows = face_rows(support, tight, data.pair_i, data.pair_cost.astype(float),
                     data.Cw.astype(float))
    Xf = sp.csr_matrix(model.X) if sparse else model.X
    solver = FaceSolver(data, row_data(X=Xf).mode, Xf, None, data.Q)
    return model, solver, rows, rng


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_operator_and_right_hand_side_match_the_formed_system(seed, sparse):
    model, solver, rows, rng = face_of(seed, sparse=sparse)
    assert rows.elim.size > 0 and np.any(rows.coef != 0)  # tight examples are exercised
    M, rhs = solver.matrix(rows)
    op = solver.operator(rows)
    for _ in range(3):
        lam = rng.standard_normal(rows.size)
        np.testing.assert_allclose(op @ lam, M @ lam, atol=1e-10 * np.abs(M).max() * rows.size)
    # the right-hand side of the matrix-free route: the eliminated pairs through class weights
    np.testing.assert_allclose(solver.rhs_matrix_free(rows, op), rhs,
                               atol=1e-10 * np.abs(rhs).max())


def test_block_preconditioner_inverts_the_examples_diagonal_blocks():
    model, solver, rows, rng = face_of(1)
    M, _ = solver.matrix(rows)
    op = solver.operator(rows)
    ex = model.data.pair_i[rows.pair]
    blocks = [np.flatnonzero(ex == e) for e in np.unique(ex)]
    D = np.zeros_like(M)
    for b in blocks:
        D[np.ix_(b, b)] = M[np.ix_(b, b)]
    r = rng.standard_normal(rows.size)
    ridge = 1e-9
    expect = np.empty_like(r)
    for b in blocks:  # each block with its own relative ridge, as the kernel adds it
        Db = D[np.ix_(b, b)]
        Db = Db + ridge * np.trace(Db) / b.size * np.eye(b.size)
        expect[b] = sla.solve(Db, r[b], assume_a="pos")
    got = op.block_preconditioner(ridge)(r)
    np.testing.assert_allclose(got, expect, rtol=1e-6, atol=1e-8 * np.abs(expect).max())


def test_nonsingular_face_gives_the_factorized_answer():
    # more features than rows: a nonsingular face matrix, one answer
    model, solver, rows, rng = face_of(2, n=12, d=60)
    M, rhs = solver.matrix(rows)
    assert np.linalg.matrix_rank(M) == rows.size
    lam0 = rng.standard_normal(rows.size)
    expect = np.linalg.solve(M, rhs)
    lam = solver.solve(rows, lam0, iterative=True)
    assert solver.n_iterative == 1 and solver.n_factor == 0
    np.testing.assert_allclose(lam, expect, rtol=1e-6, atol=1e-7 * np.abs(expect).max())


def test_inconsistent_system_returns_its_best_iterate_not_a_diverged_one():
    # a degenerate face (few features, many rows) with a right-hand side off the range of
    # the matrix: conjugate gradients cannot converge, the answer must not blow up
    model, solver, rows, rng = face_of(0, n=40, d=2)
    M, rhs = solver.matrix(rows)
    assert np.linalg.matrix_rank(M) < rows.size
    op = solver.operator(rows)
    b = rng.standard_normal(rows.size)
    lam0 = np.zeros(rows.size)
    opts = face_cg.Options(max_iter=500)
    lam, res, n_iter = face_cg.solve(op, b, lam0, opts)
    assert res == pytest.approx(np.linalg.norm(M @ lam - b) / np.linalg.norm(b), rel=1e-6)
    assert res <= 1.0  # never worse than the start
    assert res > opts.rtol  # it could not converge, and says so
    # the face solver refuses such an answer: the face step ends rather than correct it
    rhs = solver.rhs_matrix_free(rows, op)  # this random face's own system: inconsistent too
    _, res_face, _ = face_cg.solve(op, rhs, lam0, opts)
    assert res_face > solver.options.cg.accept_rtol
    assert solver.solve(rows, lam0, iterative=True) is None
    assert solver.n_iterative == 1


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_face_step_by_conjugate_gradients_reaches_the_reference_optimum(rescaling):
    X, Y, H = label_set_problem(n=40, d=4, seed=5)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling)
    C = 1.0
    ref = hsvm.primal(X, Y, H, C=C, rescaling=rescaling).solve()
    rough = working_set.solve(model, C=C, tol=1e-5, polish=False)
    options = margin_dual.Options(max_face=0)  # every face matrix-free
    state = MarginDualState(model, row_data(X=model.X), C, options=options)
    face = FaceStep(state)
    alpha = rough.dual.copy()
    primal, dual, _ = state.certify(alpha)
    for _ in range(3):
        primal, dual, _ = face.step(alpha, 1e-12, primal, dual)
    assert face.solver.n_iterative > 0 and face.solver.n_factor == 0
    best = min(primal, state.best_primal)
    assert relative_gap(best, dual) <= 1e-8 < rough.gap
    assert dual == pytest.approx(model.lower_bound(alpha, C), rel=1e-12)
    assert best == pytest.approx(ref.objective, rel=1e-7)


def test_step_8b_credit_wait_and_cost_estimate_go_on_across_solves():
    X, Y, H = label_set_problem(n=40, d=4, seed=5)
    model = hsvm_model.prepare(X, Y, H)
    options = margin_dual.Options(max_face=0)  # every face matrix-free
    state = MarginDualState(model, row_data(X=model.X), 1.0, options=options)
    fresh = Polisher(state)
    m = 50
    assert fresh.face.iterative(m)
    # the estimate of a face round follows the mean products of the solves so far
    few = Polisher(state, carry=(5.0, 2.0, (2, 200)))
    many = Polisher(state, carry=(5.0, 2.0, (2, 2000)))
    assert (few.face_credit, few.face_wait) == (5.0, 2.0)
    assert few.carry == (5.0, 2.0, (2, 200))
    fixed = 2.0 * state.certificate_work()
    assert (many.face.work(m) - fixed) == pytest.approx(10.0 * (few.face.work(m) - fixed))
    expected = face_cg.Options().expected_iter
    assert (fresh.face.work(m) - fixed) == pytest.approx(expected / 100.0 * (few.face.work(m) - fixed))
    # a solve reports where it left off, and the label-set engine hands that to the next one
    res = working_set.solve(model, C=1.0, tol=1e-9, max_iter=300,
                            options=working_set.Options(dual=options))
    credit, wait, (n_solves, n_products) = res.extras["polish_carry"]
    assert credit >= 0.0 and wait >= 1.0 and n_products >= n_solves >= 0
    again = working_set.solve(model, C=1.0, tol=1e-9, max_iter=300, alpha0=res.dual,
                              options=working_set.Options(dual=options),
                              polish_carry=res.extras["polish_carry"])
    assert again.extras["polish_carry"][2][0] >= n_solves
