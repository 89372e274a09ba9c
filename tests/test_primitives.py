"""The shared numeric kernels of ``hiercvx.solvers.primitives`` against brute force.

- row access (:func:`row_data`, :func:`row_dot`, :func:`row_axpy`, :func:`row_sq_norms`) for
  dense, CSR (empty rows, unsorted and duplicate indices, CSC input) and Gram inputs, against
  numpy on the densified matrix;
- :func:`budget_qp` against CVXPY on the same budget-constrained QP
  ``max g.d - 1/2 d^T H d`` over ``a = a0 + d >= 0``, ``cost . a <= budget``, with random PSD
  Hessians of every rank (zero included);
- :func:`isotropic_budget_step` against CVXPY on
  ``min 1/2 A ||b - b_old||^2 + g.(b - b_old)``, ``b <= cap``, ``sum b = sum b_old`` (``A = 0``
  included);
- :class:`CertificateSchedule`: the interval grows with the certificate's cost, between
  ``min_every`` and ``max_every``.
"""

import math

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from hiercvx.solvers.primitives import (MODE_CSR, MODE_DENSE, MODE_GRAM, CertificateSchedule,
                                        budget_qp, isotropic_budget_step, row_axpy, row_data,
                                        row_dot, row_sq_norms)

SETTINGS = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------------------------ row access
def _random_csr(rng, n, d, density=0.4, empty_rows=()):
    X = sp.random(n, d, density=density, format="csr", random_state=rng,
                  data_rvs=rng.standard_normal)
    X = X.tolil()
    for r in empty_rows:
        X[r, :] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    return X


def _unsorted_copy(X: sp.csr_matrix) -> sp.csr_matrix:
    """The same matrix with the column indices of every row stored in reverse order."""
    indices, data = X.indices.copy(), X.data.copy()
    for r in range(X.shape[0]):
        a, b = X.indptr[r], X.indptr[r + 1]
        indices[a:b], data[a:b] = indices[a:b][::-1].copy(), data[a:b][::-1].copy()
    out = sp.csr_matrix((data, indices, X.indptr.copy()), shape=X.shape)
    out.has_sorted_indices = False
    return out


def _check_rows(rows, Xd, rng, q=3):
    """row_dot / row_axpy / row_sq_norms of ``rows`` against numpy on the dense ``Xd``."""
    n, d = Xd.shape
    assert np.allclose(row_sq_norms(rows), np.einsum("ij,ij->i", Xd, Xd), rtol=1e-12, atol=1e-12)
    F = rng.standard_normal((q, d))
    for i in range(n):
        for v in range(q):
            got = row_dot(rows.mode, F, v, i, rows.X, rows.indptr, rows.indices, rows.xvals)
            assert got == pytest.approx(F[v] @ Xd[i], rel=1e-12, abs=1e-12)
    G = F.copy()
    expected = F.copy()
    for i in range(n):
        v, step = int(rng.integers(q)), float(rng.standard_normal())
        row_axpy(rows.mode, G, v, i, step, rows.X, rows.indptr, rows.indices, rows.xvals, rows.K)
        expected[v] += step * Xd[i]
    assert np.allclose(G, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["C", "F"])
def test_dense_rows_match_numpy(layout):
    rng = np.random.default_rng(0)
    Xd = rng.standard_normal((7, 5))
    rows = row_data(np.asarray(Xd, order=layout))
    assert rows.mode == MODE_DENSE
    _check_rows(rows, Xd, rng)


def test_integer_dense_rows_are_read_as_float():
    rng = np.random.default_rng(1)
    Xi = rng.integers(-3, 4, size=(4, 3))
    rows = row_data(Xi)
    assert rows.X.dtype == float
    _check_rows(rows, Xi.astype(float), rng)


@pytest.mark.parametrize("empty_rows", [(), (0,), (3,), (5,), (0, 2, 5)])
def test_csr_rows_match_numpy_with_empty_rows(empty_rows):
    rng = np.random.default_rng(2)
    X = _random_csr(rng, 6, 8, empty_rows=empty_rows)
    rows = row_data(X)
    assert rows.mode == MODE_CSR
    _check_rows(rows, X.toarray(), rng)


def test_csr_with_unsorted_indices_matches_numpy():
    rng = np.random.default_rng(3)
    X = _random_csr(rng, 6, 9, density=0.6, empty_rows=(4,))
    Xu = _unsorted_copy(X)
    assert not np.array_equal(Xu.indices, X.indices)  # the reversal did reorder something
    _check_rows(row_data(Xu), X.toarray(), rng)


def test_all_zero_csr_and_csc_and_coo_inputs():
    rng = np.random.default_rng(4)
    _check_rows(row_data(sp.csr_matrix((4, 3))), np.zeros((4, 3)), rng)
    X = _random_csr(rng, 5, 4, empty_rows=(1,))
    for other in (X.tocsc(), X.tocoo(), sp.csr_array(X)):
        rows = row_data(other)
        assert rows.mode == MODE_CSR
        _check_rows(rows, X.toarray(), rng)


def test_csr_with_duplicate_entries_matches_numpy():
    """A non-canonical CSR (two stored entries in one cell) means their sum, as in scipy."""
    rng = np.random.default_rng(5)
    indptr = np.array([0, 3, 3, 5])
    indices = np.array([1, 1, 0, 2, 2])
    data = np.array([1.0, 2.0, -1.0, 0.5, 0.25])
    X = sp.csr_matrix((data, indices, indptr), shape=(3, 3))
    Xd = X.toarray()  # sums the duplicates
    rows = row_data(X)
    F = rng.standard_normal((2, 3))
    for i in range(3):
        assert row_dot(rows.mode, F, 1, i, rows.X, rows.indptr, rows.indices,
                       rows.xvals) == pytest.approx(F[1] @ Xd[i])
    assert np.allclose(row_sq_norms(rows), np.einsum("ij,ij->i", Xd, Xd))


def test_gram_rows_are_scores_and_kernel_rows():
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((5, 3))
    K = Z @ Z.T
    rows = row_data(X=Z, K=K)  # K wins over X
    assert rows.mode == MODE_GRAM
    assert np.allclose(row_sq_norms(rows), np.diag(K))
    S = rng.standard_normal((3, 5))  # Gram mode: F holds scores F[v, i]
    for i in range(5):
        assert row_dot(rows.mode, S, 2, i, rows.X, rows.indptr, rows.indices, rows.xvals) == S[2, i]
    G = S.copy()
    row_axpy(rows.mode, G, 1, 3, 0.7, rows.X, rows.indptr, rows.indices, rows.xvals, rows.K)
    expected = S.copy()
    expected[1] += 0.7 * K[3]
    assert np.allclose(G, expected)


@SETTINGS
@given(n=st.integers(1, 8), d=st.integers(1, 6), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 10 ** 6), unsorted=st.booleans())
def test_csr_and_dense_rows_agree(n, d, density, seed, unsorted):
    rng = np.random.default_rng(seed)
    X = _random_csr(rng, n, d, density=density)
    Xs = _unsorted_copy(X) if unsorted else X
    _check_rows(row_data(Xs), X.toarray(), rng)
    _check_rows(row_data(X.toarray()), X.toarray(), rng)


# ------------------------------------------------------------------------------ budget_qp
def _budget_instance(rng, k, rank, zero_start):
    B = rng.standard_normal((k, rank))
    H = B @ B.T  # PSD of rank <= rank; rank 0 is the zero Hessian (a linear program)
    g0 = rng.standard_normal(k) * 2
    cost = rng.uniform(0.2, 3.0, k)
    budget = float(rng.uniform(0.0, 4.0))
    if zero_start:
        a0 = np.zeros(k)
    else:  # a random feasible start: a0 >= 0, cost . a0 <= budget
        a0 = rng.uniform(0.0, 1.0, k) * (rng.random(k) < 0.6)
        used = cost @ a0
        if used > 0:
            a0 *= budget * rng.uniform(0.0, 1.0) / used
    return B, H, g0, cost, budget, a0


def _budget_reference(B, g0, cost, budget, a0):
    """``max g0.d - 1/2 ||B^T d||^2`` over ``a0 + d >= 0``, ``cost . (a0 + d) <= budget``."""
    a = cp.Variable(len(g0))
    d = a - a0
    gain = g0 @ d - 0.5 * cp.sum_squares(B.T @ d) if B.shape[1] else g0 @ d
    prob = cp.Problem(cp.Maximize(gain), [a >= 0, cost @ a <= budget])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert prob.status == cp.OPTIMAL
    return float(prob.value)


@SETTINGS
@given(k=st.integers(1, 6), rank_frac=st.floats(0.0, 1.0), seed=st.integers(0, 10 ** 6),
       zero_start=st.booleans())
def test_budget_qp_reaches_the_cvxpy_optimum(k, rank_frac, seed, zero_start):
    rng = np.random.default_rng(seed)
    rank = int(round(rank_frac * k))  # 0 .. k: zero, singular and regular Hessians
    B, H, g0, cost, budget, a0 = _budget_instance(rng, k, rank, zero_start)
    a, g = a0.copy(), g0.copy()
    slack0 = budget - cost @ a0
    tol = 1e-10
    slack, n_steps = budget_qp(np.ascontiguousarray(H), g, a, cost, slack0, k, tol, 100_000)
    assert n_steps < 100_000
    # feasible, the budget identity kept, and the gradient updated in place
    assert np.all(a >= 0) and slack >= 0
    assert cost @ a + slack == pytest.approx(budget, rel=1e-12, abs=1e-12)
    d = a - a0
    assert np.allclose(g, g0 - H @ d, rtol=1e-9, atol=1e-9)
    # KKT at tol: every ratio below the slack's 0 and the smallest active ratio
    ratio = g / cost
    assert ratio.max() <= max(0.0 if slack > 0 else np.inf,
                              ratio[a > 0].min() if np.any(a > 0) else np.inf) + tol * 1.01
    gain = g0 @ d - 0.5 * d @ H @ d
    best = _budget_reference(B, g0, cost, budget, a0)
    # a KKT violation tol costs at most tol * budget of the objective
    assert best - gain <= tol * budget + 1e-7 * max(1.0, abs(best))
    assert gain <= best + 1e-7 * max(1.0, abs(best))


def test_budget_qp_at_zero_budget_stays_at_zero():
    H = np.eye(3)
    g = np.array([1.0, 2.0, -1.0])
    a = np.zeros(3)
    slack, n_steps = budget_qp(H, g, a, np.ones(3), 0.0, 3, 1e-12, 100)
    assert np.all(a == 0) and slack == 0.0 and n_steps == 0


def test_budget_qp_with_no_attractive_direction_returns_the_start():
    H = np.eye(2)
    g = np.array([-1.0, -0.5])  # every gradient is negative: moving away from a = 0 loses
    a = np.zeros(2)
    slack, n_steps = budget_qp(H, g, a, np.ones(2), 1.0, 2, 1e-12, 100)
    assert np.all(a == 0) and slack == 1.0 and n_steps == 0


def test_budget_qp_linear_case_puts_the_budget_on_the_best_ratio():
    g = np.array([1.0, 3.0, 2.0])
    cost = np.array([1.0, 2.0, 0.5])  # ratios 1, 1.5, 4: the third wins
    a = np.zeros(3)
    slack, _ = budget_qp(np.zeros((3, 3)), g.copy(), a, cost, 2.0, 3, 1e-12, 100)
    assert np.allclose(a, [0.0, 0.0, 4.0]) and slack == 0.0


# ------------------------------------------------------------------------------ isotropic step
def _isotropic_instance(rng, k, A):
    cap = rng.uniform(-1.0, 2.0, k)
    b_old = cap - rng.uniform(0.0, 1.5, k) * (rng.random(k) < 0.7)
    C_i = float(np.sum(cap - b_old))
    g = rng.standard_normal(k) * 2
    return g, b_old, cap, C_i


def _isotropic_reference(g, b_old, cap, A):
    b = cp.Variable(len(g))
    obj = g @ (b - b_old) + (0.5 * A * cp.sum_squares(b - b_old) if A > 0 else 0)
    prob = cp.Problem(cp.Minimize(obj), [b <= cap, cp.sum(b) == float(np.sum(b_old))])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert prob.status == cp.OPTIMAL
    return float(prob.value), np.asarray(b.value)


def _isotropic_step(g, b_old, cap, C_i, A):
    k = len(g)
    out, Bv, D = np.empty(k), np.empty(k), np.empty(k)
    isotropic_budget_step(g, b_old, cap, k, C_i, A, Bv, D, out)
    return out


def _isotropic_value(b, g, b_old, A):
    return float(0.5 * A * np.sum((b - b_old) ** 2) + g @ (b - b_old))


@SETTINGS
@given(k=st.integers(1, 7), A=st.one_of(st.just(0.0), st.floats(1e-3, 50.0)),
       seed=st.integers(0, 10 ** 6))
def test_isotropic_budget_step_is_the_exact_minimizer(k, A, seed):
    rng = np.random.default_rng(seed)
    g, b_old, cap, C_i = _isotropic_instance(rng, k, A)
    out = _isotropic_step(g, b_old, cap, C_i, A)
    scale = max(1.0, float(np.abs(cap).max()), C_i)
    assert np.all(out <= cap + 1e-12 * scale)
    assert out.sum() == pytest.approx(b_old.sum(), rel=1e-10, abs=1e-10 * scale)
    best, b_ref = _isotropic_reference(g, b_old, cap, A)
    got = _isotropic_value(out, g, b_old, A)
    assert got == pytest.approx(best, rel=1e-6, abs=1e-6 * scale)
    if A > 0:  # strongly convex: the minimizer is unique
        assert np.allclose(out, b_ref, atol=1e-5 * scale)


def test_isotropic_step_with_zero_curvature_moves_all_of_C_to_the_largest_gradient():
    g = np.array([0.5, 2.0, -1.0, 2.0])
    cap = np.array([1.0, 0.0, 2.0, 1.0])
    b_old = np.array([0.5, -1.0, 2.0, 1.0])  # C_i = 0.5 + 1 = 1.5
    out = _isotropic_step(g, b_old, cap, 1.5, 0.0)
    assert np.allclose(out, [1.0, -1.5, 2.0, 1.0])  # ties: the first largest gradient


def test_isotropic_step_with_one_class_keeps_it():
    out = _isotropic_step(np.array([3.0]), np.array([0.25]), np.array([1.0]), 0.75, 2.0)
    assert np.allclose(out, [0.25])


# ------------------------------------------------------------------------------ schedule
def _run_schedule(schedule, work_per_pass, n_passes, seen=None):
    """Drive a schedule as a solver does; returns the passes after which it certified.
    ``seen`` (a list) receives the mean work per pass at every certificate."""
    certified_at = []
    total = 0.0
    for p in range(n_passes):
        if schedule.due():
            if seen is not None and p:
                seen.append(total / p)
            schedule.certified()
            certified_at.append(p)
        schedule.passed(work_per_pass)
        total += work_per_pass
    return certified_at


def test_schedule_certifies_first_and_then_every_min_every_when_certificates_are_cheap():
    s = CertificateSchedule(min_every=3, certificate_work=1.0)
    assert s.due()
    at = _run_schedule(s, work_per_pass=1000.0, n_passes=20)
    assert at == list(range(0, 20, 3))
    assert s.interval == 3


def test_schedule_interval_is_the_share_of_pass_work():
    s = CertificateSchedule(min_every=1, certificate_work=1000.0, share=0.25, max_every=100)
    _run_schedule(s, work_per_pass=100.0, n_passes=50)
    assert s.interval == 40  # ceil(1000 / (0.25 * 100))


def test_schedule_interval_is_capped_by_max_every():
    s = CertificateSchedule(min_every=2, certificate_work=1e12, max_every=7)
    at = _run_schedule(s, work_per_pass=1.0, n_passes=30)
    assert s.interval == 7
    assert np.all(np.diff(at)[1:] == 7)


def test_schedule_now_forces_a_certificate():
    s = CertificateSchedule(min_every=5, certificate_work=1.0)
    s.certified()
    s.passed(1.0)
    assert not s.due()
    s.now()
    assert s.due()


def test_schedule_normalizes_its_bounds():
    s = CertificateSchedule(min_every=0, certificate_work=1.0, max_every=0)
    assert s.min_every == 1 and s.max_every == 1
    s = CertificateSchedule(min_every=10, certificate_work=1.0, max_every=3)
    assert s.max_every == 10 and s.interval == 10


@SETTINGS
@given(min_every=st.integers(1, 10), max_extra=st.integers(0, 200),
       cert_work=st.floats(0.0, 1e9), pass_work=st.floats(0.0, 1e6),
       share=st.floats(0.01, 1.0), factor=st.floats(1.0, 1e3))
def test_schedule_interval_grows_with_certificate_cost(min_every, max_extra, cert_work, pass_work,
                                                       share, factor):
    max_every = min_every + max_extra
    intervals = []
    for work in (cert_work, cert_work * factor):
        s = CertificateSchedule(min_every, work, share=share, max_every=max_every)
        seen = []
        _run_schedule(s, pass_work, 3 * max_every + 2, seen)
        per_pass = max(seen[-1], 1.0)  # the mean pass work, summed as the schedule sums it
        want = math.ceil(work / (share * per_pass))
        assert s.interval == min(max(min_every, want), max_every)
        assert min_every <= s.interval <= max_every
        intervals.append(s.interval)
    assert intervals[0] <= intervals[1]


def test_conjugate_gradients_solves_a_preconditioned_system_and_a_zero_right_hand_side():
    from hiercvx.solvers.primitives import conjugate_gradients

    rng = np.random.default_rng(3)
    B = rng.standard_normal((30, 30))
    A = B @ B.T + 0.1 * np.eye(30)
    rhs = rng.standard_normal((6, 5))
    diag = np.diag(A).reshape(6, 5)
    x, steps = conjugate_gradients(lambda v: (A @ v.ravel()).reshape(6, 5), rhs,
                                   lambda r: r / diag, 1e-12, 200)
    assert np.allclose(x.ravel(), np.linalg.solve(A, rhs.ravel()), atol=1e-8)
    assert 1 <= steps <= 200
    zero, steps0 = conjugate_gradients(lambda v: v, np.zeros((2, 2)), lambda r: r, 1e-9, 10)
    assert steps0 == 0 and not zero.any()


def test_conjugate_gradients_returns_the_best_iterate_of_an_inconsistent_system():
    from hiercvx.solvers.primitives import conjugate_gradients

    rng = np.random.default_rng(4)
    B = rng.standard_normal((40, 8))
    A = B @ B.T  # rank 8 of 40: singular
    P = B @ np.linalg.pinv(B)  # the projection onto its range
    off = (np.eye(40) - P) @ rng.standard_normal(40)
    rhs = A @ rng.standard_normal(40) + 1e-6 * off  # slightly off the range: inconsistent
    seen = []

    def product(v):
        return A @ v

    def precondition(r):
        seen.append(float(np.linalg.norm(r)))
        return r

    x, steps = conjugate_gradients(product, rhs, precondition, 1e-12, 500, diverged=10.0)
    res = float(np.linalg.norm(rhs - A @ x))
    # the answer's residual is the smallest the iteration met (up to rounding), not the last
    assert res <= min(seen) * (1 + 1e-6) + 1e-12
    assert steps < 500 and res > 1e-12 * np.linalg.norm(rhs)
    # before it diverged it solved the consistent part of the system
    assert np.linalg.norm(P @ (rhs - A @ x)) <= 1e-4 * np.linalg.norm(rhs)
