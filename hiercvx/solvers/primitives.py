"""Numeric kernels shared by the fast solvers, written once and tested against brute force.

- **row access** for dense, CSR and Gram inputs: :func:`row_data` turns ``X`` (or a Gram
  matrix) into the arrays the compiled loops take, with a ``mode``; :func:`row_dot`
  (``f_v(x_i) = F[v] . x_i`` or ``F[v, i]``) and :func:`row_axpy` (``F[v] += step x_i`` or
  ``F[v] += step K[i]``) switch on it;
- **budget-constrained block steps**, the sub-problem of every dual coordinate method of the
  margin family (Crammer–Singer, Cai–Hofmann HSVM, the sibling-margin SVM, NHSVM):
  :func:`budget_qp` (any PSD Hessian, SMO pair steps to a KKT tolerance) and
  :func:`isotropic_budget_step` (Hessian ``A I``: exact in one sort);
- **certificate scheduling** (:class:`CertificateSchedule`): certify (a full primal and
  dual evaluation) as rarely as keeps its cost a fixed share of the passes' work;
- **interior-point pieces**: :func:`kronecker_sum` (Newton matrices ``sum_i T_i (x) F_i F_i^T``)
  and :func:`centrality_correctors` (Gondzio's correctors after Mehrotra's step), for the
  margin engine's interior point and the sibling-margin QP's.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from threadpoolctl import ThreadpoolController

__all__ = ["MODE_DENSE", "MODE_CSR", "MODE_GRAM", "RowData", "row_data", "row_dot", "row_axpy",
           "row_sq_norms", "select_pair", "budget_qp", "isotropic_budget_step", "CertificateSchedule",
           "blas_threads", "kronecker_sum", "centrality_correctors", "pivoted_cholesky",
           "conjugate_gradients"]

MODE_DENSE, MODE_CSR, MODE_GRAM = 0, 1, 2

_CONTROLLER: list = []  # the threadpool controller, built on first use


def blas_threads(limit: int | None = 1):
    """A context manager limiting BLAS to ``limit`` threads (``None``: no limit).

    The solvers' products are small: threaded BLAS mostly waits on itself there.  The
    controller is built once (``threadpoolctl.threadpool_limits`` inspects the loaded libraries
    on every call, a cost comparable to a small interior-point solve)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=limit, user_api="blas")


def kronecker_sum(F: np.ndarray, r: int, entry) -> np.ndarray:
    """``sum_i T_i (x) F_i F_i^T`` ``(r d, r d)`` (the ``(a, f)`` row-major ordering), one
    product ``F^T diag(t_ab) F`` per entry ``a <= b`` of the symmetric ``T_i``; ``entry(a, b)``
    gives ``t_ab`` over the ``n`` rows of ``F``.  Compute-bound: the route of the interior
    points' Newton matrices when the ``T_i`` are small and ``F`` is wide (the per-example
    triangles ``F_if F_ig`` would be formed, or read back, for every entry: memory-bound)."""
    d = F.shape[1]
    out = np.zeros((r, d, r, d))
    for a in range(r):
        for b in range(a, r):
            t = entry(a, b)
            if not t.any():
                continue
            block = F.T @ (t[:, None] * F)
            out[a, :, b, :] = block
            if b != a:
                out[b, :, a, :] = block.T
    return out.reshape(r * d, r * d)


def centrality_correctors(newton, longest, step, a, rhs, products, target, *,
                          below: float = 1.0, max_correctors: int = 2,
                          box: tuple = (0.1, 10.0)):
    """Gondzio's (1996) multiple centrality correctors after Mehrotra's step, for the
    interior points (:mod:`.interior_point`, the primal one of :mod:`.sibling_qp`).

    ``newton(*rhs)`` solves the Newton system of the current factorization for the
    complementarity right-hand sides ``rhs`` (the change asked of each block of products
    ``v w``) and returns a direction (a tuple of arrays); ``longest(direction)`` is its step;
    ``step``, ``a`` are Mehrotra's direction and step; ``products`` lists per block
    ``(v, w, iv, iw)``: the current slacks and multipliers and the positions of their
    directions in ``step``; ``target`` the centring target ``sigma mu``.  A corrector aims at
    the step ``1.5 a + 0.1``: the products ``(v + a~ dv)(w + a~ dw)`` there outside
    ``box * target`` are pulled into the box (by at most ``box[1] target`` down), which adds
    the pull to ``rhs``; kept when the step grows by 1%.  Correctors run only after steps
    shorter than ``below``, at most ``max_correctors`` per step (each one more solve with the
    step's factorization; Gondzio's default box is ``(0.1, 10)``).  The residual equations are untouched (the system is linear in
    ``rhs``): the point's certificate is not affected, fewer factorizations are needed.
    Returns the direction and its step."""
    lo, hi = box[0] * target, box[1] * target
    for _ in range(max_correctors):
        if a >= below:
            break
        aim = min(1.0, 1.5 * a + 0.1)
        pulls = []
        for v, w, iv, iw in products:
            at = (v + aim * step[iv]) * (w + aim * step[iw])
            pulls.append(np.maximum(np.clip(at, lo, hi) - at, -hi))
        trial_rhs = tuple(r + p for r, p in zip(rhs, pulls))
        trial = newton(*trial_rhs)
        a_trial = longest(trial)
        if a_trial < 1.01 * a:
            break
        step, a, rhs = trial, a_trial, trial_rhs
    return step, a


# Reassociation lets LLVM vectorize the dot products and updates (no NaN/inf assumptions).
_FAST = {"reassoc", "contract", "nsz"}


class RowData(NamedTuple):
    """What the compiled loops read of the inputs: ``mode`` and the arrays of that mode
    (the others are 1-element placeholders so that one signature serves all three)."""

    mode: int
    X: np.ndarray        # (n, d) dense rows (MODE_DENSE)
    indptr: np.ndarray   # CSR rows (MODE_CSR)
    indices: np.ndarray
    xvals: np.ndarray
    K: np.ndarray        # (n, n) Gram matrix (MODE_GRAM)


def row_data(X=None, K=None) -> RowData:
    """:class:`RowData` of a dense or CSR ``X``, or of a Gram matrix ``K`` (then ``X`` is unused)."""
    no_rows = np.zeros((1, 1))
    no_ints = np.zeros(1, dtype=np.int64)
    no_vals = np.zeros(1)
    if K is not None:
        return RowData(MODE_GRAM, no_rows, no_ints, no_ints, no_vals,
                       np.ascontiguousarray(K, dtype=float))
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=float, copy=True)  # a copy: the caller's matrix is not touched
        X.sum_duplicates()  # a non-canonical CSR means the sum of its repeated entries
        X.sort_indices()
        return RowData(MODE_CSR, no_rows, X.indptr.astype(np.int64), X.indices.astype(np.int64),
                       X.data.astype(float), no_rows)
    return RowData(MODE_DENSE, np.ascontiguousarray(X, dtype=float), no_ints, no_ints, no_vals, no_rows)


def row_sq_norms(rows: RowData) -> np.ndarray:
    """``||x_i||^2`` (or ``K[i, i]``) of every row."""
    if rows.mode == MODE_GRAM:
        return np.ascontiguousarray(np.diag(rows.K))
    if rows.mode == MODE_CSR:
        sq = rows.xvals * rows.xvals
        return np.add.reduceat(np.append(sq, 0.0), rows.indptr[:-1]) * (np.diff(rows.indptr) > 0)
    return np.einsum("ij,ij->i", rows.X, rows.X)


@njit(cache=True, fastmath=_FAST, inline="always")  # inlined: a call per row costs more than the row
def row_dot(mode, F, v, i, X, indptr, indices, xvals):
    """The product of row ``F[v]`` with ``x_i`` (dense / CSR rows), or ``F[v, i]`` in Gram mode
    (``F`` then holds scores)."""
    if mode == 2:
        return F[v, i]
    acc = 0.0
    if mode == 0:
        for f in range(X.shape[1]):
            acc += F[v, f] * X[i, f]
    else:
        for jj in range(indptr[i], indptr[i + 1]):
            acc += F[v, indices[jj]] * xvals[jj]
    return acc


@njit(cache=True, fastmath=_FAST, inline="always")  # inlined: a call per row costs more than the row
def row_axpy(mode, F, v, i, step, X, indptr, indices, xvals, K):
    """``F[v] += step x_i`` (dense / CSR rows), or ``F[v] += step K[i]`` in Gram mode."""
    if mode == 0:
        for f in range(X.shape[1]):
            F[v, f] += step * X[i, f]
    elif mode == 1:
        for jj in range(indptr[i], indptr[i + 1]):
            F[v, indices[jj]] += step * xvals[jj]
    else:
        for u in range(K.shape[1]):
            F[v, u] += step * K[i, u]


# --------------------------------------------------------------------------------------------
# Budget-constrained block steps
# --------------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def select_pair(g, mass, k, slack):
    """The pairwise (SMO) choice among ``k`` variables of unit cost and a budget slack of
    gradient 0: ``(up, g_up, down, g_down)``, ``up`` the largest gradient (``-1``: the slack),
    ``down`` the smallest among the variables holding mass (``-1``: the slack, when it holds
    some; ``-2``: none can give).  Ties go to the first index."""
    up = -1
    g_up = 0.0
    down = -2
    g_down = np.inf
    if slack > 0.0:
        down = -1
        g_down = 0.0
    for r in range(k):
        if g[r] > g_up:
            g_up = g[r]
            up = r
        if mass[r] > 0.0 and g[r] < g_down:
            g_down = g[r]
            down = r
    return up, g_up, down, g_down


@njit(cache=True)
def budget_qp(Hk, g, a, cost, slack, k, tol, max_iter):
    """Maximize a concave quadratic over ``{a >= 0, sum_r cost_r a_r + slack = budget, slack >= 0}``.

    ``g`` is the gradient at ``a`` (updated in place), ``Hk`` the ``(k, k)`` PSD Hessian of the
    negated objective.  Pairwise (SMO) steps between the most and least attractive variable,
    with the budget slack as an extra variable of gradient 0, until the scaled KKT violation
    ``max_r g_r/cost_r - min_{r: a_r > 0} g_r/cost_r`` (the slack counting as 0) is <= tol; each
    step is an exact line search, clipped to stay feasible.  Returns ``(slack, n_steps)``.
    """
    for it in range(max_iter):
        up = -1  # -1 denotes the budget slack
        r_up = 0.0
        down = -2  # -2: nothing can be decreased
        r_down = np.inf
        if slack > 0.0:
            down = -1
            r_down = 0.0
        for r in range(k):
            ratio = g[r] / cost[r]
            if ratio > r_up:
                r_up = ratio
                up = r
            if a[r] > 0.0 and ratio < r_down:
                r_down = ratio
                down = r
        if down == -2 or r_up - r_down <= tol:
            return slack, it
        # curvature along d = e_up / cost_up - e_down / cost_down
        kappa = 0.0
        if up >= 0:
            kappa += Hk[up, up] / (cost[up] * cost[up])
        if down >= 0:
            kappa += Hk[down, down] / (cost[down] * cost[down])
        if up >= 0 and down >= 0:
            kappa -= 2.0 * Hk[up, down] / (cost[up] * cost[down])
        t_max = slack if down == -1 else a[down] * cost[down]
        t = t_max
        if kappa > 1e-14 * (r_up - r_down):
            t = min(t_max, (r_up - r_down) / kappa)
        if up >= 0:
            a[up] += t / cost[up]
        else:
            slack += t
        if down >= 0:
            a[down] = 0.0 if t >= t_max else a[down] - t / cost[down]
        else:
            slack = 0.0 if t >= t_max else slack - t
        for r in range(k):
            step = 0.0
            if up >= 0:
                step += Hk[r, up] / cost[up]
            if down >= 0:
                step -= Hk[r, down] / cost[down]
            g[r] -= t * step
    return slack, max_iter


@njit(cache=True)
def isotropic_budget_step(g, b, cap, k, C_i, A, Bv, D, out):
    """Exact minimizer of example i's block over its ``k`` unshrunk classes, into ``out``.

    ``min_b 1/2 A ||b - b_old||^2 + g . (b - b_old)`` s.t. ``b_t <= cap_t`` and ``sum_t b_t``
    fixed (= the sum of ``b_old``; the shrunk classes sit at their caps, so
    ``sum_t (cap_t - b_t) = C_i``).  KKT: ``b_t = min(cap_t, (phi - B_t)/A)`` with
    ``B_t = g_t - A b_old_t`` and ``phi`` the level where ``sum_t max(0, D_t - phi) = A C_i``,
    ``D_t = B_t + A cap_t`` (found after sorting D).  For ``A = 0`` (a zero row) the problem
    is linear and the whole ``C_i`` goes to the class of largest gradient.
    """
    if A <= 0.0:
        best = 0
        for t in range(1, k):
            if g[t] > g[best]:
                best = t
        for t in range(k):
            out[t] = cap[t]
        out[best] -= C_i
        return
    for t in range(k):
        Bv[t] = g[t] - A * b[t]
        D[t] = Bv[t] + A * cap[t]
    for t in range(1, k):  # insertion sort, descending (k is small)
        v = D[t]
        j = t - 1
        while j >= 0 and D[j] < v:
            D[j + 1] = D[j]
            j -= 1
        D[j + 1] = v
    total = -A * C_i
    phi = 0.0
    for t in range(k):
        total += D[t]
        phi = total / (t + 1)
        if t == k - 1 or D[t + 1] <= phi:
            break
    for t in range(k):
        out[t] = min(cap[t], (phi - Bv[t]) / A)


# --------------------------------------------------------------------------------------------
# When to certify
# --------------------------------------------------------------------------------------------

class CertificateSchedule:
    """When to certify: every ``min_every`` passes at least, spaced so that certificates (a
    full evaluation of primal and dual) cost at most about ``share`` of the passes' work.

    Work is counted in multiply-adds by the passes themselves, not in seconds, so that the
    iterates do not depend on the machine's load (runs are reproducible).
    """

    def __init__(self, min_every: int, certificate_work: float, share: float = 0.25,
                 max_every: int = 100):
        self.min_every = max(1, int(min_every))
        self.max_every = max(self.min_every, int(max_every))
        self.share = share
        self.certificate_work = float(certificate_work)
        self.interval = self.min_every
        self.since = None  # None: certify now
        self.pass_work = 0.0
        self.n_passes = 0

    def due(self) -> bool:
        return self.since is None or self.since >= self.interval

    def now(self) -> None:
        self.since = None

    def passed(self, work: float) -> None:
        self.since = 1 if self.since is None else self.since + 1
        self.pass_work += work
        self.n_passes += 1

    def certified(self) -> None:
        self.since = 0
        if self.n_passes:
            per_pass = max(self.pass_work / self.n_passes, 1.0)
            want = int(np.ceil(self.certificate_work / (self.share * per_pass)))
            self.interval = min(max(self.min_every, want), self.max_every)


def pivoted_cholesky(diagonal: np.ndarray, column: Callable[[int], np.ndarray], *, max_rank: int,
                     rtol: float, rule: str = "trace", floor: float = 0.0):
    """Greedy pivoted Cholesky ``K ~ L L^T`` of a PSD matrix given by its ``diagonal`` and
    ``column(j)`` (Harbrecht, Peters & Schneider, "On the low-rank approximation by the pivoted
    Cholesky decomposition", Applied Numerical Mathematics 62, 2012): each step pivots on the
    largest residual diagonal.  The pivot columns are reproduced exactly and ``K - L L^T`` is
    PSD (the Nystrom approximation on the pivots).

    Stops at ``max_rank`` columns, when the pivot's residual is ``<= floor * max(diag K)``
    (round-off), or by ``rule``: ``"trace"``, the residual trace ``<= rtol * trace(K)``;
    ``"diagonal"``, the largest residual diagonal ``<= rtol * max(diag K)``.

    Returns ``(L, pivots, residual)``: ``L`` ``(n, r)``, the ``r`` pivot indices and the
    residual diagonal ``diag(K - L L^T)``.
    """
    d = np.array(diagonal, dtype=float)
    n = d.size
    total = float(d.sum())
    dmax = max(float(d.max()), 1e-300) if n else 1.0
    cap = max(0, min(n, int(max_rank)))
    L = np.zeros((n, cap))
    pivots = np.zeros(cap, dtype=np.int64)
    k = 0
    while k < cap:
        if rule == "trace" and d.sum() <= rtol * total:
            break
        j = int(np.argmax(d))
        if (rule == "diagonal" and d[j] <= rtol * dmax) or d[j] <= floor * dmax:
            break
        col = np.asarray(column(j), dtype=float).ravel() - L[:, :k] @ L[j, :k]
        L[:, k] = col / np.sqrt(d[j])
        d -= L[:, k] ** 2
        d[j] = 0.0
        np.maximum(d, 0.0, out=d)
        pivots[k] = j
        k += 1
    return np.ascontiguousarray(L[:, :k]), pivots[:k], d


def conjugate_gradients(product: Callable, rhs: np.ndarray, precond: Callable, rtol: float,
                        max_steps: int, diverged: float = np.inf):
    """Preconditioned conjugate gradients (Hestenes & Stiefel, J. Res. NBS 49, 1952) on the
    positive (semi)definite ``product(x) = rhs`` from ``x = 0``, preconditioned by ``precond``
    (an approximate inverse), to the relative residual ``rtol``; ``(x, steps)``.  Stops early,
    at that step, when a direction has no positive curvature (round-off).  ``diverged``: on a
    singular system whose right-hand side is off the range (inconsistent) the residual first
    falls, then grows; once it is ``diverged`` times its smallest the iterate with the
    smallest residual is returned."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    rr = float(np.sum(r * r))
    stop = rtol ** 2 * rr
    if stop == 0.0:
        return x, 0
    best_rr, best_x = rr, None  # None: x itself
    guard = diverged < np.inf
    z = precond(r)
    p = z.copy()
    rz = float(np.sum(r * z))
    for step in range(1, max_steps + 1):
        Ap = product(p)
        pAp = float(np.sum(p * Ap))
        if not pAp > 0:
            break
        a = rz / pAp
        previous = x.copy() if guard and best_x is None else None
        x += a * p
        r -= a * Ap
        rr = float(np.sum(r * r))
        if rr <= stop:
            return x, step
        if rr < best_rr:
            best_rr, best_x = rr, None
        elif previous is not None:
            best_x = previous  # the previous iterate had the smallest residual
        if rr > diverged ** 2 * best_rr:
            return best_x, step
        z = precond(r)
        rz_new = float(np.sum(r * z))
        p *= rz_new / rz
        p += z
        rz = rz_new
    else:
        step = max_steps
    return (x if best_x is None or rr <= best_rr else best_x), step
