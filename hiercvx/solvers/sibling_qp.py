"""Fast certified solvers for the sibling-margin QP of Wang, Shen & Pan: HSVM (2) and every
DC step (8) of HPSI.

Entry points (on a model from :func:`hiercvx.models.sibling.prepare`; both return a
:class:`~hiercvx.result.Solution`):

* :func:`solve` ``(model, C=1.0, *, tol, max_iter, verbose, pair_weights, method, ...)`` --
  one certified solve of (8); extras ``biases``, ``dual_feasible``, ``pair_weights``, ``C``,
  ``method``;
* :func:`solve_dc` ``(model, C=1.0, *, tol, max_iter, gap_tol, ...)`` -- HPSI by the DC loop
  :func:`hiercvx.solvers.dc.dc_iterations`, one :class:`SiblingQPSolver` (the engine that
  keeps the factorization and the warm start) for all its steps.

The QP (Appendix B, (8); :func:`hiercvx.formulations.hpsi.primal`)::

    min_{w, b, xi}  1/2 sum_v ||w_v||^2 + C sum_i xi_i + sum_p lam_p m_p(f)
    s.t.  xi_i >= 0,  m_p(f) + xi_i >= 1  (p = (i, j, t), (j, t) in Q(y_i)),  sum-to-zero

with ``m_p(f) = f_j(x_i) - f_t(x_i)`` and ``lam`` the DC linearization (0 for HSVM), and its
dual (9)-(11) after eliminating ``delta`` (see ``formulations/hpsi.md``)::

    max_beta  D(beta) = sum_p beta_p - 1/2 ||W(gamma)||^2,   gamma = beta - lam
    s.t.      beta >= 0,  sum_{p of i} beta_p <= C  (11),   r(beta) = E^T gamma = 0  (10)

``W(gamma) = Gamma(gamma)^T X`` (linear) or the representer coefficients ``Gamma(gamma)``
(kernel); ``Gamma`` is ``(n, M)`` with ``+gamma_p`` at ``(i, j_p)``, ``-gamma_p`` at
``(i, t_p)``; one equality ``r_v = 0`` per node (the biases are their multipliers).

Three methods, one certificate.

``method="dual_ipm"`` -- a Mehrotra interior point method on the dual (9)-(11) over the
*live* pairs (:meth:`SiblingQPSolver._live_pairs`: a pair whose beaten node lies on no label's
path and carries no DC term has ``beta = 0`` at every dual feasible point, by (10)); its
``(k, k)`` Newton matrix is factored once per step and the biases are the multipliers of (10).
The dual Hessian is block diagonal by sibling group (pairs of two groups share no node), so
the Newton matrix is factored block by block, the samples' budgets (11) and the rows of (10)
entering through one small Schur complement (:class:`~.dual_qp.GroupNewton`), or dense when that
counts fewer flops (one wide group) or when, at the end of the path, the blocks alone become
singular to round-off.
Exact, with no dependence on ``C``'s conditioning; ``"auto"`` takes it when the live pairs are
at most ``max_dual_pairs`` and the primal IPM below is too large (a wide star with a few
labelled leaves: 120 live pairs of 300,000).  Nodes no live pair touches get weight 0 and a
bias below every score that beats them (:meth:`SiblingQPSolver._complete_biases`).
``method="working_set"`` runs it on a growing set of pairs (:meth:`SiblingQPSolver.
_solve_working_set`); a round whose set is clearly too small is ended half way along the path
(the probe of :func:`~.dual_qp.solve_dual_qp`), and a DC step starts from the last step's set and point.

``method="ipm"`` -- a primal-dual interior point method (Mehrotra predictor-corrector) on
(8) in reduced coordinates: every sibling group ``g`` is written in an orthonormal basis
of ``{sum = 0}`` (so the sum-to-zero constraints of Theorem 1 hold by construction and the
penalty is unchanged), and the inputs enter through features ``phi`` of dimension ``q``:
``x`` itself (linear) or a pivoted-Cholesky factor ``K ~ L L^T`` (kernel; the pivot columns
are reproduced exactly, so the functions are exact kernel expansions on the pivot points).
Eliminating the slacks ``xi`` leaves one dense ``(M'(q+1))``-square Newton system per
step, whatever ``C``: the method of choice when ``q`` is small (the paper's examples, any
Gaussian kernel of moderate rank), where dual coordinate methods crawl at large ``C``.
Gondzio's centrality correctors (:func:`.primitives.centrality_correctors`) lengthen the
short early steps with extra solves of the same factorization (Table 5's linear
psi-learning: 706 -> 597 Newton matrices, 1.18x; ``benchmarks/bench_sibling_ipm.py``).

``method="alm"`` -- block coordinate ascent on the dual with an augmented Lagrangian for
``r = 0``, the biases as multipliers.  For fixed biases ``b`` the sub-problem
``max_{beta in box} D_b(beta) - rho/2 ||r||^2`` (the proximal point method on ``b``) has
gradient ``1 - m_p(f) - rho (r_j - r_t)`` in ``beta_p`` and Hessian
``(k(x_i, x_i) + rho) E_i^T E_i`` on example ``i``'s block, a tiny QP over
``{beta_i >= 0, sum beta_i <= C}`` solved exactly by pairwise (SMO) steps; then
``b <- b + rho r``.  The group sums of ``r`` vanish (every pair joins two siblings), so ``b``
stays centred.  It warm-starts: a DC step from the previous step's ``(beta, b)``, a C sweep
with ``beta`` scaled by the ratio of the C values.  For high-dimensional or large data; on
low-dimensional data at large ``C`` coordinate ascent crawls (the dual is ill-conditioned),
which is why ``"auto"`` prefers the IPM there.  The IPM starts cold at every solve: started
from the previous DC step's point (pushed back into the interior) it took more iterations.

Certificate (both; celer-style stop): the primal (8) recomputed at the returned ``(w, b)`` by
the reference's numpy model (:meth:`hiercvx.models.sibling.SiblingModel.primal_value`) against the dual ``D`` at a
*feasible* point -- the method's ``beta`` repaired so that ``r = 0`` holds to round-off (a
least-norm move on the support, budget-neutral for examples at their budget; the
model's :meth:`~hiercvx.models.sibling.SiblingModel.dual_feasible` as a fallback).  Success means
``(primal - dual) / max(1, |primal|) <= tol``.  For a kernel, the bound is the dual of the
problem with the exact Gram matrix (``K - L L^T`` is PSD, so a low-rank factor can only
widen the gap, never fake it).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, fields, replace

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components
from numba import njit

from scipy.optimize import linprog

from .._validation import check_positive
from ..exceptions import InputError
from ..models.sibling import SiblingModel, SiblingPairs, check_pair_weights
from ..result import Solution, check_iteration_options, gap_scale, relative_gap
from .dc import Options as DCOptions
from .dc import check_dc_options, dc_iterations
from . import dual_qp
from .dual_qp import BlockDiagonal, DenseNewton, factor_newton, solve_dual_qp, step_length
from .primitives import (MODE_GRAM, blas_threads, centrality_correctors, kronecker_sum,
                         row_axpy, row_data, row_dot, row_sq_norms)

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve", "solve_dc", "SiblingQPSolver", "pivoted_cholesky", "METHODS"]

METHODS = ("auto", "ipm", "dual_ipm", "working_set", "alm")


@dataclass(frozen=True)
class Options:
    """Settings of the sibling-margin QP solvers (:func:`solve`, :func:`solve_dc`,
    :class:`SiblingQPSolver`) for (8) of Wang, Shen & Pan (JMLR 12, 2011).

    Interior points: Mehrotra's predictor-corrector (Nocedal & Wright, *Numerical
    Optimization*, 2nd ed., 2006, Algorithm 16.4) with Gondzio's centrality correctors
    (Gondzio, *Computational Optimization and Applications* 6, 1996).  Coordinate ascent: the
    augmented Lagrangian method (Bertsekas, *Constrained Optimization and Lagrange Multiplier
    Methods*, 1982) with exact block (SMO) steps (Platt, 1998)."""

    #: ``"auto"``, ``"ipm"``, ``"dual_ipm"``, ``"working_set"`` or ``"alm"``: ``"auto"`` takes
    #: the method whose Newton system is cheapest (:class:`SiblingQPSolver`)
    method: str = "auto"
    #: ALM sweeps per multiplier step; the working set's first sweeps are four times this
    max_passes: int = 50
    #: pivoted Cholesky of a kernel stops at this relative residual diagonal: round-off level,
    #: so the factor is exact on its pivots and ``K - L L^T`` is negligible
    rank_rtol: float = 1e-10
    #: ``"auto"`` runs the primal IPM up to this many Newton rows ``M' (q + 1)``: a dense
    #: Cholesky of that size costs about as much as a few hundred dual sweeps
    max_ipm_size: int = 2000
    #: ALM penalty; ``None``: the mean squared norm of the inputs, the diagonal of the
    #: block Hessian, so both terms of the block steps have one scale
    rho: float | None = None
    #: seed of the ALM's sweep orders (randomized orders avoid cyclic stalls)
    random_state: int = 0
    #: ``"auto"`` takes the dense dual IPM up to this many live pairs (its ``(k, k)`` Newton
    #: matrix stays small enough to factor at every step)
    max_dual_pairs: int = 1500
    #: default iteration limits: IPM Newton steps (a Mehrotra path takes 20-60)
    ipm_max_iter: int = 100
    #: ... Newton steps of a working-set solve summed over its rounds
    working_set_max_iter: int = 300
    #: ... ALM multiplier steps
    alm_max_iter: int = 500
    #: small sibling groups share a dual Hessian block of up to this many pairs: fewer,
    #: larger dense operations for about the same flops
    group_pack: int = 128
    #: a pair left out counts as violated at a probe when its margin is this far below what
    #: the kept pairs of its sample reach (the iterate's margins are only approximate there)
    probe_margin: float = 1e-2
    #: Gondzio's correctors run after Mehrotra steps shorter than this (0: never); later
    #: steps stay Mehrotra's, so that a DC path stops where the reference's does
    correct_below: float = 0.5
    #: pairs left out within this margin of violating join a growing working set: the next
    #: restricted optimum moves towards them, so adding them saves rounds
    ws_margin: float = 0.3
    #: the first working set: pairs with ``beta > 0`` after the sweeps or with a margin within
    #: this of their sample's smallest
    ws_seed_margin: float = 0.2
    #: at most this many working-set rounds (each one interior point path)
    ws_rounds: int = 20
    #: the working set falls back to ALM above this many times ``max_dual_pairs`` pairs
    ws_size_factor: int = 4
    #: the primal IPM's Newton matrix is assembled with one product per block when it has at
    #: most this many blocks ``Mr (Mr + 1) / 2`` ...
    block_products_max: int = 10
    #: ... of at least this width (compute-bound); else from cached per-sample triangles
    block_products_min_rank: int = 32
    #: the cached triangles of the primal IPM are kept up to this many floats (96 MB)
    normal_cache: int = 12_000_000
    #: the dual repair's least-norm step is solved dense (SVD least squares) up to this many
    #: bias rows ...
    dense_repair_rows: int = 300
    #: ... and entries; above, by a sparse LU of the rows the support touches
    dense_repair_size: int = 4_000_000
    #: settings of the dual interior point (:class:`hiercvx.solvers.dual_qp.Options`)
    dual_qp: dual_qp.Options = field(default_factory=dual_qp.Options)
    #: settings of the DC loop of :func:`solve_dc` (:class:`hiercvx.solvers.dc.Options`)
    dc: DCOptions = field(default_factory=DCOptions)

    def __post_init__(self):
        if self.method not in METHODS:
            raise InputError(f"method must be one of {METHODS}, got {self.method!r}")

    @classmethod
    def of(cls, options: "Options | None" = None, **overrides) -> "Options":
        """``options`` (default: the defaults) with the keyword overrides that are not
        ``None``: how the keyword arguments of :func:`solve` and :func:`solve_dc` enter."""
        base = cls() if options is None else options
        if not isinstance(base, cls):
            raise InputError(f"options must be a hiercvx.solvers.sibling_qp.Options, "
                             f"got {type(options).__name__}")
        given = {k: v for k, v in overrides.items() if v is not None}
        unknown = set(given) - {f.name for f in fields(cls)}
        if unknown:
            raise InputError(f"unknown sibling_qp options {sorted(unknown)}")
        return replace(base, **given) if given else base


# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _incidence(pos, neg, p, q):
    """``(e_{j_p} - e_{t_p}) . (e_{j_q} - e_{t_q})``."""
    return ((pos[p] == pos[q]) * 1.0 - (pos[p] == neg[q]) * 1.0
            - (neg[p] == pos[q]) * 1.0 + (neg[p] == neg[q]) * 1.0)


@njit(cache=True)
def _block_violation(beta, p0, k, g, C):
    """KKT violation of one example's block: ``max_p g_p - min_{p: beta_p > 0} g_p`` with the
    budget slack as a variable of gradient 0 (it may grow always, shrink when positive)."""
    used = 0.0
    g_up = 0.0
    g_down = np.inf
    for r in range(k):
        used += beta[p0 + r]
        if g[r] > g_up:
            g_up = g[r]
        if beta[p0 + r] > 0.0 and g[r] < g_down:
            g_down = g[r]
    if used < C and g_down > 0.0:
        g_down = 0.0
    if g_down == np.inf:
        return 0.0
    return max(g_up - g_down, 0.0)


@njit(cache=True)
def _block_qp(beta, p0, k, pos, neg, g, curvature, C, eps, max_steps):
    """Exact block solve: ``max g.d - 1/2 d^T Q d`` over ``beta_i + d >= 0``,
    ``sum(beta_i + d) <= C`` with ``Q_pq = curvature * incidence(p, q)``.

    Pairwise steps between the most and least attractive variable (the budget slack is a
    variable of gradient 0), each an exact clipped line search, until the block violation
    is <= eps.  ``beta`` and ``g`` are updated in place; returns the number of steps.

    This is :func:`~.primitives.budget_qp` with ``Hk = curvature * incidence`` and unit costs;
    it is kept because it reads the incidence on the fly, while the shared kernel needs the
    ``(k, k)`` Hessian written out for every block: with it the ALM sweeps took 12-16% longer
    (2000 x 302 CSR, Example 3 tree, C = 1).
    """
    used = 0.0
    for r in range(k):
        used += beta[p0 + r]
    slack = C - used
    if slack < 0.0:
        slack = 0.0
    for step in range(max_steps):
        up = -1
        g_up = 0.0
        for r in range(k):
            if g[r] > g_up:
                g_up = g[r]
                up = r
        down = -2
        g_down = np.inf
        if slack > 0.0:
            down = -1
            g_down = 0.0
        for r in range(k):
            if beta[p0 + r] > 0.0 and g[r] < g_down:
                g_down = g[r]
                down = r
        if down == -2 or g_up - g_down <= eps:
            return step
        kappa = 0.0
        if up >= 0:
            kappa += curvature * _incidence(pos, neg, p0 + up, p0 + up)
        if down >= 0:
            kappa += curvature * _incidence(pos, neg, p0 + down, p0 + down)
        if up >= 0 and down >= 0:
            kappa -= 2.0 * curvature * _incidence(pos, neg, p0 + up, p0 + down)
        t_max = slack if down == -1 else beta[p0 + down]
        t = t_max
        if kappa > 1e-300:
            t = min(t_max, (g_up - g_down) / kappa)
        if up >= 0:
            beta[p0 + up] += t
        else:
            slack += t
        if down >= 0:
            beta[p0 + down] = 0.0 if t >= t_max else beta[p0 + down] - t
        else:
            slack = 0.0 if t >= t_max else slack - t
        for r in range(k):
            h = 0.0
            if up >= 0:
                h += _incidence(pos, neg, p0 + r, p0 + up)
            if down >= 0:
                h -= _incidence(pos, neg, p0 + r, p0 + down)
            g[r] -= t * curvature * h
    return max_steps


@njit(cache=True)
def _sweep(order, mode, F, X, indptr, indices, xvals, K, kdiag, b, resid, beta, pair_ptr, pos,
           neg, rho, C, eps, max_steps, g, old):
    """One pass of block coordinate ascent on the ALM sub-problem over ``order``.

    Blocks whose violation is <= eps are skipped.  Returns (largest violation met, number of
    blocks changed).
    """
    worst = 0.0
    changed = 0
    for i in order:
        p0 = pair_ptr[i]
        k = pair_ptr[i + 1] - p0
        if k == 0:
            continue
        for r in range(k):
            p = p0 + r
            j = pos[p]
            t = neg[p]
            m = (row_dot(mode, F, j, i, X, indptr, indices, xvals) + b[j]
                 - row_dot(mode, F, t, i, X, indptr, indices, xvals) - b[t])
            g[r] = 1.0 - m - rho * (resid[j] - resid[t])
            old[r] = beta[p]
        viol = _block_violation(beta, p0, k, g, C)
        if viol > worst:
            worst = viol
        if viol <= eps:
            continue
        _block_qp(beta, p0, k, pos, neg, g, kdiag[i] + rho, C, 0.1 * eps, max_steps)
        changed += 1
        for r in range(k):
            p = p0 + r
            d = beta[p] - old[r]
            if d != 0.0:
                row_axpy(mode, F, pos[p], i, d, X, indptr, indices, xvals, K)
                row_axpy(mode, F, neg[p], i, -d, X, indptr, indices, xvals, K)
                resid[pos[p]] += d
                resid[neg[p]] -= d
    return worst, changed


# --------------------------------------------------------------------------------------------
# interior point method in reduced coordinates
# --------------------------------------------------------------------------------------------
def pivoted_cholesky(K, rtol: float = 1e-12, max_rank: int | None = None):
    """Greedy pivoted Cholesky ``K ~ L L^T`` with ``L`` ``(n, r)`` and pivots ``S``.

    Stops when the largest residual diagonal is ``<= rtol * max(diag K)`` or at ``max_rank``.
    The pivot columns are reproduced exactly (``K[:, S] = L L[S]^T`` up to round-off) and
    ``K - L L^T`` is PSD (a Nystrom approximation on ``S``).  Returns ``(L, S, complete)``
    where ``complete`` says whether the tolerance was reached.
    """
    K = np.asarray(K, dtype=float)
    n = K.shape[0]
    d = np.diag(K).copy()
    dmax = max(float(d.max()), 1e-300) if n else 1.0
    cap = n if max_rank is None else max(1, min(n, int(max_rank)))
    L = np.zeros((n, cap))
    piv: list = []
    complete = False
    for k in range(cap):
        j = int(np.argmax(d))
        if d[j] <= rtol * dmax:
            complete = True
            break
        piv.append(j)
        col = K[:, j] - L[:, :k] @ L[j, :k]
        L[:, k] = col / np.sqrt(d[j])
        d -= L[:, k] ** 2
        d[j] = 0.0
    else:
        complete = bool(d.max() <= rtol * dmax) if n else True
    return L[:, :len(piv)], np.asarray(piv, dtype=np.int64), complete


def _group_basis(pairs: SiblingPairs) -> np.ndarray:
    """``E'`` ``(M, M')``: each sibling group of size ``s >= 2`` gets ``s - 1`` orthonormal
    columns spanning ``{sum over the group = 0}``; singleton groups (only children) and
    the root get none (their functions are 0 by the sum-to-zero constraints)."""
    M = pairs.n_nodes
    blocks = [g for g in pairs.groups if len(g) >= 2]
    E = np.zeros((M, sum(len(g) - 1 for g in blocks)))
    col = 0
    for g in blocks:
        s = len(g)
        basis, _ = np.linalg.qr(np.eye(s)[:, : s - 1] - 1.0 / s)
        E[np.asarray(g), col:col + s - 1] = basis
        col += s - 1
    return E


def _rowdot(A, B):
    return np.einsum("ij,ij->i", A, B)


@njit(cache=True)
def _example_sums(w, Delta, pair_ptr):
    """``sum_{p of i} w_p Delta_p`` per example ``i`` (pairs stored example by example): the
    product ``Bm @ (w[:, None] * Delta)`` without the sparse call's overhead, which dominated
    the interior point's small Newton steps."""
    n = pair_ptr.shape[0] - 1
    out = np.zeros((n, Delta.shape[1]))
    for i in range(n):
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            if w[p] != 0.0:
                for a in range(Delta.shape[1]):
                    out[i, a] += w[p] * Delta[p, a]
    return out


@njit(cache=True)
def _schur_blocks(Delta, w, w0, pair_ptr):
    """``T_i = sum_p w_p d_p d_p^T - v_i v_i^T / D_i`` (``v_i = sum_p w_p d_p``,
    ``D_i = sum_p w_p + w0_i``): the Newton matrix of example ``i`` after eliminating its
    slack, in the cancellation-free form
    ``(w0_i sum_p w_p d_p d_p^T + sum_{p < q} w_p w_q (d_p - d_q)(d_p - d_q)^T) / D_i``,
    a sum of PSD terms (the naive difference loses definiteness when ``w`` spans many
    orders of magnitude near the end of the interior point path)."""
    n = pair_ptr.shape[0] - 1
    Mr = Delta.shape[1]
    T = np.zeros((n, Mr, Mr))
    for i in range(n):
        p0 = pair_ptr[i]
        p1 = pair_ptr[i + 1]
        D = w0[i]
        for p in range(p0, p1):
            D += w[p]
        for p in range(p0, p1):
            c = w0[i] * w[p]
            for a in range(Mr):
                da = Delta[p, a]
                if da != 0.0:
                    for b in range(Mr):
                        T[i, a, b] += c * da * Delta[p, b]
            for q in range(p + 1, p1):
                c = w[p] * w[q]
                for a in range(Mr):
                    da = Delta[p, a] - Delta[q, a]
                    if da != 0.0:
                        for b in range(Mr):
                            T[i, a, b] += c * da * (Delta[p, b] - Delta[q, b])
        for a in range(Mr):
            for b in range(Mr):
                T[i, a, b] /= D
    return T


class _NormalBuilder:
    """Builds ``sum_i T_i (x) phi_i phi_i^T + diag`` (the ``(a, f)`` row-major ordering) for
    a fixed ``Phi1``.  With symmetric ``T_i`` and ``phi_i phi_i^T`` only the blocks ``a <= b``
    and the entries ``f <= g`` are needed: one product of ``T``'s upper triangle
    ``(n, Mr(Mr+1)/2)`` with the upper triangles of the ``phi_i phi_i^T`` (computed once and
    kept when they fit in ``max_cache`` floats; else, and for a few wide blocks, block by
    block; ``options`` (:class:`Options`) sets ``normal_cache`` (the default ``max_cache``)
    and the few-wide-blocks rule)."""

    def __init__(self, Phi1, Mr, max_cache=None, options=None):
        opts = Options() if options is None else options
        max_cache = opts.normal_cache if max_cache is None else max_cache
        self.Phi1 = Phi1
        n, q1 = Phi1.shape
        self.Mr, self.q1 = Mr, q1
        self.ia, self.ib = np.triu_indices(Mr)
        self.jf, self.jg = np.triu_indices(q1)
        self.K2 = None
        # few blocks of a wide factor (Wang et al.'s Example 3, Gaussian: 6 blocks, rank 94,
        # n = 1500): one product Phi^T diag(t) Phi per block beats reading the cached
        # triangles, which are memory-bound (7 ms against 16 ms per step)
        by_products = (len(self.ia) <= opts.block_products_max
                       and q1 >= opts.block_products_min_rank)
        if n * len(self.jf) <= max_cache and not by_products:
            self.K2 = Phi1[:, self.jf] * Phi1[:, self.jg]          # (n, q1(q1+1)/2)
            # every block sum_i T_i[a, b] phi_i phi_i^T is symmetric and N is: entry
            # ((a, f), (b, g)) of N is entry (tri(a, b), tri(f, g)) of the product R below
            self.gather = (self._tri(Mr)[:, None, :, None] * len(self.jf)
                           + self._tri(q1)[None, :, None, :]).ravel()

    @staticmethod
    def _tri(m):
        """``(m, m)``: the position of ``(min(a, b), max(a, b))`` in ``np.triu_indices(m)``."""
        a = np.arange(m)
        lo, hi = np.minimum.outer(a, a), np.maximum.outer(a, a)
        return lo * m - lo * (lo - 1) // 2 + hi - lo

    def __call__(self, T, diag):
        Mr, q1, Phi1 = self.Mr, self.q1, self.Phi1
        if self.K2 is not None:
            R = T[:, self.ia, self.ib].T @ self.K2                # (Mr(Mr+1)/2, q1(q1+1)/2)
            N = R.ravel().take(self.gather).reshape(Mr * q1, Mr * q1)
            N[np.diag_indices_from(N)] += diag
            return N
        N = kronecker_sum(Phi1, Mr, lambda a, b: T[:, a, b])
        N[np.diag_indices_from(N)] += diag
        return N


def ipm_step_cost(n, Mr, q1):
    """Flops of one Newton step of :func:`_ipm`: the Cholesky of the ``(Mr q1)``-square matrix
    and its assembly from the ``n`` samples' triangles (:class:`_NormalBuilder`).  Compared
    with :meth:`~.dual_qp.DenseNewton.cost` by ``method="auto"``: on Wang et al.'s Example 2 with a
    Gaussian kernel (n = 100, rank 73, 7 free directions, 300 pairs) the dual's Newton matrix
    is 300 rows against 518 and HPSI's C grid runs 2.5x faster on it; at n = 500 (rank 84,
    1000 pairs) the interior point in reduced coordinates is 3x faster."""
    rows = Mr * q1
    return rows ** 3 / 3.0 + n * Mr * (Mr + 1) * q1 * (q1 + 1) / 2.0



def group_blocks(Ei, G, samples, group, pack: int | None = None) -> BlockDiagonal:
    """The dual Hessian ``Q`` of (9) on the pairs kept, block diagonal by sibling group.

    ``Q_pq = (e_{j_p} - e_{t_p}) . (e_{j_q} - e_{t_q}) G_{i_p i_q}`` vanishes for pairs of two
    different sibling groups (they share no node), so ``Q`` is kept as its diagonal blocks.
    Small groups share a block of up to ``pack`` pairs (zeros between them; default
    :attr:`Options.group_pack`): fewer, larger dense operations for about the same flops."""
    pack = Options().group_pack if pack is None else int(pack)
    order = np.argsort(group, kind="stable")
    by_group = np.split(order, np.flatnonzero(np.diff(group[order])) + 1) if order.size else []
    index = []
    shared: list = []          # the groups of the block being filled
    for idx in sorted(by_group, key=len):
        if shared and sum(map(len, shared)) + len(idx) > pack:
            index.append(np.concatenate(shared))
            shared = []
        shared.append(idx)
    if shared:
        index.append(np.concatenate(shared))
    blocks = []
    for idx in index:
        Eg = Ei[idx]
        blocks.append((Eg @ Eg.T).toarray() * G[np.ix_(samples[idx], samples[idx])])
    return BlockDiagonal(index, blocks, group.size)


def _ipm(Phi1, Delta, pair_of, C, lam, tol, max_iter, accept, normal, correct_below=0.5):
    """Mehrotra predictor-corrector on (8) in reduced coordinates.

    Variables ``Z`` ``(M', q + 1)`` (last column: the biases) and ``xi`` ``(n)``;
    constraints ``Delta_p . (Z phi~_i) + xi_i >= 1`` (slack ``s``, multiplier ``lm``) and
    ``xi >= 0`` (``s0``, ``lm0``); objective ``1/2 ||Z[:, :q]||^2 + C sum xi +
    sum_p lam_p Delta_p . (Z phi~_i)``.  ``accept(Z, lm)`` is called once the interior
    point residuals and the complementarity gap are small (relative to ``tol``); it
    returns True when the certificate holds.  ``pair_of``:
    the sample of every pair (pairs stored example by example);
    ``normal``: the :class:`_NormalBuilder` of ``Phi1``; ``correct_below``: Gondzio's
    correctors after Mehrotra steps shorter than this (:attr:`Options.correct_below`).
    Returns ``(Z, lm, n_iter, accepted)``.
    """
    n, q1 = Phi1.shape
    P, Mr = Delta.shape
    qdiag = np.ones((Mr, q1))
    qdiag[:, -1] = 0.0
    k_i = np.bincount(pair_of, minlength=n)
    pair_ptr = np.r_[0, np.cumsum(k_i)].astype(np.int64)
    lin = _example_sums(lam, Delta, pair_ptr).T @ Phi1
    # a cold start: interior point warm starts from the previous DC step were tried and took
    # more iterations than this (the neighbouring optimum sits on the boundary)
    Z = np.zeros((Mr, q1))
    xi = np.full(n, 2.0)
    s = np.ones(P)
    s0 = xi.copy()
    lm = C / (k_i[pair_of] + 1.0)
    lm0 = C / (k_i + 1.0)
    m_total = P + n
    scale_d = 1.0 + C
    # coordinates no pair touches (sibling groups below which no example lies) do not
    # change the cost: their bias is pinned to 0 by a unit weight (their w part already has one)
    idle = ~np.any(Delta != 0, axis=0)
    qdiag[idle, -1] = 1.0
    accepted = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        F = Phi1 @ Z.T
        marg = _rowdot(Delta, F[pair_of])
        rp = marg + xi[pair_of] - 1.0 - s
        rp0 = xi - s0
        rd_Z = qdiag * Z + lin - _example_sums(lm, Delta, pair_ptr).T @ Phi1
        rd_x = C - np.bincount(pair_of, weights=lm, minlength=n) - lm0
        mu = (s @ lm + s0 @ lm0) / m_total
        res_p = max(float(np.abs(rp).max(initial=0.0)), float(np.abs(rp0).max()))
        res_d = max(float(np.abs(rd_Z).max()), float(np.abs(rd_x).max())) / scale_d
        value = 0.5 * float(np.sum(qdiag * Z * Z)) + C * float(xi.sum()) + float(np.sum(lin * Z))
        # the certificate is worth computing once the complementarity gap is small
        if res_p <= 1e-6 and res_d <= 1e-6 and mu * m_total <= 0.1 * tol * gap_scale(value, 0.0):
            if accept(Z, lm):
                accepted = True
                break
        w = lm / s
        w0 = lm0 / s0
        Dx = np.bincount(pair_of, weights=w, minlength=n) + w0
        V = _example_sums(w, Delta, pair_ptr)
        T = _schur_blocks(Delta, w, w0, pair_ptr)
        N = normal(T, qdiag.ravel())
        cho = factor_newton(N)

        def newton(rc, rc0):
            t = rc / s - w * rp
            t0 = rc0 / s0 - w0 * rp0
            rZ = -rd_Z + _example_sums(t, Delta, pair_ptr).T @ Phi1
            rx = -rd_x + np.bincount(pair_of, weights=t, minlength=n) + t0
            rhs = rZ - ((rx / Dx)[:, None] * V).T @ Phi1
            dZ = sla.cho_solve(cho, rhs.ravel(), check_finite=False).reshape(Mr, q1)
            dF = Phi1 @ dZ.T
            dxi = (rx - _rowdot(V, dF)) / Dx
            ds = _rowdot(Delta, dF[pair_of]) + dxi[pair_of] + rp
            ds0 = dxi + rp0
            dl = (rc - lm * ds) / s
            dl0 = (rc0 - lm0 * ds0) / s0
            return dZ, dxi, ds, ds0, dl, dl0

        def longest(step):
            _, _, ds, ds0, dl, dl0 = step
            return min(step_length(s, ds), step_length(s0, ds0), step_length(lm, dl),
                       step_length(lm0, dl0))

        aff = newton(-s * lm, -s0 * lm0)
        a = longest(aff)
        mu_aff = ((s + a * aff[2]) @ (lm + a * aff[4])
                  + (s0 + a * aff[3]) @ (lm0 + a * aff[5])) / m_total
        sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0   # Mehrotra's centring
        rc = -s * lm + sigma * mu - aff[2] * aff[4]
        rc0 = -s0 * lm0 + sigma * mu - aff[3] * aff[5]
        step = newton(rc, rc0)
        a = min(1.0, 0.99 * longest(step))
        # only after short steps: later ones are left to Mehrotra's step, so that the point
        # where a solve stops is what it was (a DC path of HPSI re-linearizes there and
        # follows the reference's path)
        step, a = centrality_correctors(newton, lambda d: min(1.0, 0.99 * longest(d)), step, a,
                                        (rc, rc0), ((s, lm, 2, 4), (s0, lm0, 3, 5)), sigma * mu,
                                        below=correct_below)
        dZ, dxi, ds, ds0, dl, dl0 = step
        Z += a * dZ
        xi += a * dxi
        s += a * ds
        s0 += a * ds0
        lm += a * dl
        lm0 += a * dl0
        # keep strictly interior against round-off
        s = np.maximum(s, 1e-300)
        s0 = np.maximum(s0, 1e-300)
        lm = np.maximum(lm, 1e-300)
        lm0 = np.maximum(lm0, 1e-300)
    return Z, lm, it, accepted



# --------------------------------------------------------------------------------------------
# the solver
# --------------------------------------------------------------------------------------------
def least_norm_step(A, rhs, options=None):
    """The least-norm ``s`` with ``A s = rhs`` for a sparse ``A`` (rows: independent bias
    equations, columns: the support's moves): ``s = A^T y`` with ``(A A^T) y = rhs``.

    Small systems: dense least squares on ``A A^T`` (exact on rank-deficient supports).  Wide
    ones: the normal matrix is sparse (a node meets only the pairs of the examples below its
    parent), so only the rows the support touches are factored (sparse LU, with a ridge
    ``1e-13 max diag`` against a singular support; the caller's loop re-measures the
    residual and refines).  ``options`` (:class:`Options`): ``dense_repair_rows`` and
    ``dense_repair_size`` bound the dense route.  Returns ``None`` when the sparse
    factorization fails."""
    opts = Options() if options is None else options
    if A.shape[0] <= opts.dense_repair_rows and A.shape[0] * A.shape[1] <= opts.dense_repair_size:
        Ad = A.toarray()
        y, *_ = np.linalg.lstsq(Ad @ Ad.T, rhs, rcond=None)
        return Ad.T @ y
    normal = (A @ A.T).tocsc()
    diag = normal.diagonal()
    touched = np.flatnonzero(diag > 0)
    y = np.zeros(A.shape[0])
    if touched.size:
        sub = normal[touched][:, touched]
        ridge = 1e-13 * float(diag.max())
        try:
            lu = spla.splu((sub + ridge * sp.identity(touched.size, format="csc")).tocsc())
        except RuntimeError:  # pragma: no cover - singular even with the ridge
            return None
        b = rhs[touched]
        yt = lu.solve(b)
        yt += lu.solve(b - sub @ yt)  # one refinement step against the unridged matrix
        y[touched] = yt
    return np.asarray(A.T @ y).ravel()


class SiblingQPSolver:
    """The engine behind :func:`solve` and :func:`solve_dc` on one prepared model.

    ``SiblingQPSolver(model, method="auto")`` prepares the method once (the group basis, the
    pivoted Cholesky factor of a kernel and the inverse of its pivot block, the cached
    normal-matrix products of the IPM) and keeps the state of the last solve so that
    :meth:`solve` warm-starts the next one (ALM): a DC path reuses all of it.

    ``method``: ``"ipm"`` (interior point in reduced coordinates), ``"dual_ipm"`` (dense dual
    interior point on the live pairs), ``"working_set"`` (the same on a working set of pairs
    grown until the certificate holds; falls back to ALM above ``4 max_dual_pairs`` pairs),
    ``"alm"`` (dual block coordinate ascent, warm-started) or ``"auto"``: IPM when its Newton
    system has at most ``max_ipm_size`` rows -- ``M' (q + 1)`` with ``M'`` the number of free
    function directions and ``q`` the input dimension (linear) or the numerical rank of ``K``
    (kernel, pivoted Cholesky to ``rank_rtol``) -- and its step costs no more flops than the
    dual's on all pairs (:func:`ipm_step_cost`); else ``"dual_ipm"`` when the live pairs
    are at most ``max_dual_pairs``, else ``"working_set"``.  Measured on the cellcycle_FUN
    single-path subset (480 x 77, 9995 pairs, C = 1): ALM 162 s unconverged at 25000 sweeps
    (gap 2.9e-6); the working set 6-10 s to gap 4e-10, 8-10x LIBLINEAR Crammer-Singer in the
    same run, and HPSI (4 DC steps, 6 working-set rounds, 81 interior point steps) 16-17 s,
    18-28x (``benchmarks/bench_sibling_fun.py``, three runs on a loaded machine, 2026-11-24;
    before the group route, the probe and the warm DC sweeps: 16x and 76-98x).

    Attributes: ``model`` (the :class:`~hiercvx.models.sibling.SiblingModel`: costs,
    certificates, recoveries), ``pairs``, ``hierarchy`` (the working hierarchy ``H'``),
    ``method`` (the resolved method), ``rank`` (``q``).
    """

    def __init__(self, model: SiblingModel, method=None, rank_rtol=None, max_ipm_size=None,
                 rho=None, random_state=None, max_dual_pairs=None, *, options=None):
        if not isinstance(model, SiblingModel):
            raise InputError("SiblingQPSolver takes the model of hiercvx.models.sibling.prepare(X, "
                             f"y, H, ...), got {type(model).__name__}")
        self.options = Options.of(options, method=method, rank_rtol=rank_rtol,
                                  max_ipm_size=max_ipm_size, rho=rho, random_state=random_state,
                                  max_dual_pairs=max_dual_pairs)
        o = self.options
        # the products are small: threaded BLAS only adds synchronisation (badly so on a loaded
        # machine), so setup and solves run single-threaded
        with blas_threads(1):
            self._setup(model, o.method, o.rank_rtol, o.max_ipm_size, o.rho, o.random_state,
                        o.max_dual_pairs)

    def _setup(self, model, method, rank_rtol, max_ipm_size, rho, random_state, max_dual_pairs):
        self.model = model
        m = self.model
        pr = m.pairs
        self.pairs = pr
        self.hierarchy = pr.hierarchy
        self.kernel = m.kernel
        self.n, self.M, self.P = m.n, m.M, pr.n_pairs
        # the IPM's reduced coordinates (a dense (M, M') basis) are built only when it runs:
        # on a wide sibling group the ALM never needs them
        self._basis = None
        Mr = sum(len(g) - 1 for g in pr.groups if len(g) >= 2)
        self._Bm = sp.csr_matrix((np.ones(self.P), (pr.pair_i, np.arange(self.P))),
                                 shape=(self.n, self.P))
        self._pivots = None
        self._factor_inv = None
        self._normal = None
        self.rank = None
        if method in ("auto", "ipm"):
            Phi = None
            if m.linear:
                d = m.X.shape[1]
                if method == "ipm" or Mr * (d + 1) <= max_ipm_size:
                    Phi = m.X.toarray() if sp.issparse(m.X) else np.asarray(m.X, dtype=float)
            else:
                cap = None if method == "ipm" else max(1, max_ipm_size // max(Mr, 1) - 1)
                L, S, complete = pivoted_cholesky(m.K, rtol=rank_rtol, max_rank=cap)
                if complete or method == "ipm":
                    Phi = L
                    self._pivots = S
                    self._factor_inv = S.size and sla.solve_triangular(
                        L[S], np.eye(S.size), lower=True, check_finite=False)
            if Phi is not None and method == "auto" and \
                    self.P <= max_dual_pairs and \
                    DenseNewton.cost(self.P, Mr) < ipm_step_cost(self.n, Mr, Phi.shape[1] + 1):
                Phi = None  # few pairs, a wide kernel factor: the dual's Newton matrix is smaller
            if Phi is not None:
                self.rank = Phi.shape[1]
                self._Phi1 = np.hstack([Phi, np.ones((self.n, 1))])
                self._basis = _group_basis(pr)
                self._Delta = self._basis[pr.pair_pos] - self._basis[pr.pair_neg]
                method = "ipm"
            else:
                method = "auto"
        if method in ("auto", "dual_ipm", "working_set", "alm"):
            self._setup_alm(rho)
        if method == "auto":
            # the dense dual IPM when the pairs the dual can use are few (a wide star with few
            # labelled leaves, small data); else coordinate ascent
            n_live = self.P if self._live_pairs(np.zeros(self.P)) is None else \
                self._live_pairs(np.zeros(self.P)).size
            method = "dual_ipm" if n_live <= max_dual_pairs else "working_set"
        self.method = method
        self.max_dual_pairs_ws = self.options.ws_size_factor * max_dual_pairs
        self.ws_margin = self.options.ws_margin
        self._ws_pairs = None
        self._at_zero = None  # (8) at zero functions, set by each solve
        self.random_state = random_state
        self._rng = np.random.default_rng(random_state)
        self._beta: np.ndarray | None = None
        self._b: np.ndarray | None = None
        self._C: float | None = None

    def _setup_alm(self, rho):
        m = self.model
        pr = self.pairs
        self._pair_ptr = np.ascontiguousarray(pr.pair_ptr, dtype=np.int64)
        self._pos = np.ascontiguousarray(pr.pair_pos, dtype=np.int64)
        self._neg = np.ascontiguousarray(pr.pair_neg, dtype=np.int64)
        # nodes on some label's path: the others are only ever the beaten side of a pair
        self._on_path = np.zeros(self.M, dtype=bool)
        self._on_path[pr.pair_pos] = True
        rows = row_data(X=m.X) if m.linear else row_data(K=m.K)
        self._mode, self._X, self._indptr, self._indices, self._xvals, self._K = rows
        self._kdiag = row_sq_norms(rows)
        self.rho = float(rho) if rho is not None else max(float(np.mean(self._kdiag)), 1e-12)

    # -- certificate
    def _functions(self, beta, lam):
        """``W(gamma)`` (linear) or the coefficients ``Gamma(gamma)^T`` (kernel), root row 0."""
        A = self.model.gmat(beta - lam)
        if self.model.linear:
            X = self.model.X
            W = np.asarray((X.T @ A).T if sp.issparse(X) else A.T @ X)
        else:
            W = np.ascontiguousarray(A.T)
        W[0] = 0.0
        return W

    def _into_box(self, beta, C):
        """Clip at 0 and scale every example's pairs back within its budget C."""
        beta = np.maximum(np.asarray(beta, dtype=float), 0.0)
        used = self.model.budget(beta)
        over = used > C
        if over.any():
            factor = np.ones(self.n)
            factor[over] = C / used[over]
            beta = beta * factor[self.pairs.pair_i]
        return beta

    def _repair(self, beta, lam, C):
        """A dual feasible point near ``beta`` (``r = 0`` to ``1e-11 max(1, C)``, the box kept),
        or ``None``.

        Least-norm change on the support: examples inside their budget move their positive
        pairs freely; examples at their budget move mass between their positive pairs
        (columns ``E_p - E_ref``, budget-neutral).  ``M`` rows only, so this is cheap.
        """
        m = self.model
        pr = self.pairs
        beta = self._into_box(beta, C)
        used = m.budget(beta)
        tol = 1e-11 * max(1.0, C)
        keep = m.independent_rows()
        E = m.incidence()[keep]
        for _ in range(3):
            r = m.bias_residual(beta, lam)
            big = float(np.abs(r).max())
            if big <= tol:
                return beta
            thresh = max(1e-9 * C, 1e3 * big)
            positive = beta > thresh
            interior = used < C - thresh
            free_cols = np.flatnonzero(positive & interior[pr.pair_i])
            bound = np.flatnonzero(positive & ~interior[pr.pair_i])
            ref = np.full(self.n, -1, dtype=np.int64)
            if bound.size:  # reference pair of an example at its budget: its largest beta
                order = np.lexsort((-beta[bound], pr.pair_i[bound]))
                bound = bound[order]
                first = np.r_[True, pr.pair_i[bound[1:]] != pr.pair_i[bound[:-1]]]
                ref[pr.pair_i[bound[first]]] = bound[first]
                bound = bound[~first]
            cols = [E[:, free_cols]]
            if bound.size:
                cols.append(E[:, bound] - E[:, ref[pr.pair_i[bound]]])
            A = sp.hstack(cols).tocsr()
            if A.shape[1] == 0:
                return None
            step = least_norm_step(A, -r[keep], self.options)
            if step is None:
                return None
            new = beta.copy()
            new[free_cols] += step[:free_cols.size]
            if bound.size:
                sb = step[free_cols.size:]
                new[bound] += sb
                np.add.at(new, ref[pr.pair_i[bound]], -sb)
            if new.min() < -1e-14 * max(C, 1.0):
                return None
            beta = np.maximum(new, 0.0)
            used = m.budget(beta)
            if used.max() > C * (1 + 1e-13):
                return None
        return beta if np.abs(m.bias_residual(beta, lam)).max() <= tol else None

    def _repair_lp(self, beta, lam, C):
        """The smallest L1 move restoring ``r = 0`` with one-sided moves allowed: a pair may
        grow (within its example's budget) or shrink (down to 0).  Needed when the support
        alone cannot absorb the residual, e.g. a DC step where every example at its budget
        has one positive pair and the others have none.  An LP with ``M'`` equality rows,
        scaled by the residual so that its numbers are of order one, solved by HiGHS's default
        (simplex) method.  Not its interior point: on Table 4's psi-learning LPs (n = 1500:
        9000 columns, 1500 budget rows, 3 equalities) IPX with crossover was 2.7x faster where
        it finished, but it did not return from some of them (replications 9 and 12 at
        C = 10^-2.2: still in IPX's crossover basis after more than 20 minutes, the simplex
        0.1 s).  ``None`` on failure."""
        m = self.model
        P = self.P
        beta = self._into_box(beta, C)
        r = m.bias_residual(beta, lam)
        keep = m.independent_rows()
        scale = max(float(np.abs(r).max()), 1e-300)
        E = m.incidence()[keep]
        slack = np.maximum(C - m.budget(beta), 0.0) / scale
        res = linprog(np.ones(2 * P), A_ub=sp.hstack([self._Bm, -self._Bm]).tocsr(), b_ub=slack,
                      A_eq=sp.hstack([E, -E]).tocsr(), b_eq=-r[keep] / scale,
                      bounds=np.c_[np.zeros(2 * P), np.r_[np.full(P, np.inf), beta / scale]],
                      method="highs")
        if res.status != 0:
            return None
        new = self._into_box(beta + scale * (res.x[:P] - res.x[P:]), C)  # LP round-off
        if np.abs(m.bias_residual(new, lam)).max() > 1e-11 * max(1.0, C):
            return None
        return new

    def _lower_bound(self, beta, lam, C, final=True):
        """``D`` at a feasible point near ``beta``: the least-norm repair on the support, else
        (final iterates only) the one-sided LP repair, else the reference's
        :meth:`SiblingModel.dual_feasible`; intermediate iterates get ``-inf`` when the cheap
        repair fails."""
        feas = self._repair(beta, lam, C)
        if feas is None:
            if not final:
                return -np.inf, None
            snapped = self._snap(beta, lam, C)
            for attempt in (lambda: self._repair(snapped, lam, C),
                            lambda: self._repair_lp(beta, lam, C),
                            lambda: self._repair_lp(snapped, lam, C),
                            lambda: self.model.dual_feasible(beta, lam, C)):
                feas = attempt()
                if feas is not None:
                    break
        return self.model.dual_value(feas, lam), feas

    def _snap(self, beta, lam, C, rtol=1e-7):
        """Round ``beta`` onto the face it is near: entries below ``1e-12 C`` to 0, and every
        DC example whose pairs are within ``rtol C`` of its DC term ``lam`` to ``lam`` exactly
        (``gamma = 0`` there).  An interior point method stops just inside such faces (e.g.
        an example given up by the DC step: ``beta = lam = C`` on one pair); their round-off
        can leave a residual that no move inside the budgets absorbs."""
        pr = self.pairs
        out = np.where(beta < 1e-12 * C, 0.0, np.asarray(beta, dtype=float))
        dev = np.zeros(self.n)
        np.maximum.at(dev, pr.pair_i, np.abs(out - lam))
        close = (self.model.budget(lam) > 0) & (dev <= rtol * C)
        rows = close[pr.pair_i]
        out[rows] = lam[rows]
        return out

    # -- solves
    def solve(self, C=1.0, pair_weights=None, tol=1e-6, max_iter=None, warm_start=True,
              max_passes=None) -> Solution:
        """Solve (8) for ``C`` and the DC term ``pair_weights`` (``None``: HSVM (2)).

        Stops on a certified relative gap ``<= tol``; warns (``ConvergenceWarning``) when
        ``max_iter`` (IPM iterations, default ``options.ipm_max_iter``; working set:
        ``working_set_max_iter``; ALM multiplier steps: ``alm_max_iter``) runs out first.  ``warm_start`` (ALM, working set): start from this engine's last
        solve (``beta`` scaled to the new ``C``, the biases kept; the working set also keeps
        the last set); ``max_passes``: ALM sweeps per step (default ``options.max_passes``).
        ``C``, ``tol`` and ``max_iter`` are taken as checked (:func:`solve` checks them).
        """
        t0 = time.perf_counter()
        C = float(C)
        lam = np.ascontiguousarray(check_pair_weights(pair_weights, self.model), dtype=float)
        # (8) at zero functions: the scale of relative_gap when the optimum is 0, and the
        # decrease from zero that a tiny C leaves to certify (the stopping tests use it too)
        W0 = np.zeros((self.M, self.model.X.shape[1] if self.model.linear else self.n))
        self._at_zero = self.model.primal_value(W0, np.zeros(self.M), C,
                                                None if pair_weights is None else lam)
        o = self.options
        max_passes = o.max_passes if max_passes is None else max_passes
        with blas_threads(1):
            if self.method == "ipm":
                out = self._solve_ipm(C, lam, tol, o.ipm_max_iter if max_iter is None else max_iter)
            elif self.method == "dual_ipm":
                out = self._solve_dual_ipm(C, lam, tol,
                                           o.ipm_max_iter if max_iter is None else max_iter)
            elif self.method == "working_set":
                out = self._solve_working_set(
                    C, lam, tol, o.working_set_max_iter if max_iter is None else max_iter,
                    warm_start, 4 * max_passes)
            else:
                out = self._solve_alm(C, lam, tol, o.alm_max_iter if max_iter is None else max_iter,
                                      warm_start, max_passes)
        W, b, primal, lower, feas, n_iter, converged, history, beta = out
        at_zero = self._at_zero
        res = Solution(objective=float(primal), lower_bound=float(lower), weights=W,
                       solver="sibling_qp", n_iter=int(n_iter), converged=bool(converged),
                       tol=float(tol), dual=beta, history=history,
                       solve_time=time.perf_counter() - t0,
                       name=f"sibling-margin QP ({self.method})",
                       extras={"biases": b, "dual_feasible": feas, "pair_weights": lam, "C": C,
                               "method": self.method, "at_zero": float(at_zero)})
        res.warn_unless_converged("iterations", stacklevel=2)
        # ALM warm starts from its own last (beta, b); the returned biases are completed and centred
        self._beta, self._C = np.asarray(beta, float).copy(), C
        self._b = getattr(self, "_alm_b", None) if self.method == "alm" else b.copy()
        return res

    def _to_functions(self, Z):
        """Reduced coordinates ``Z`` ``(M', q + 1)`` -> (weights or coefficients, biases)."""
        Wq = self._basis @ Z[:, :-1]            # (M, q)
        b = self._basis @ Z[:, -1]
        if self.model.linear:
            return Wq, b
        coef = np.zeros((self.M, self.n))
        if self._pivots.size:
            coef[:, self._pivots] = Wq @ self._factor_inv  # c_S = L_S^{-T} w
        return coef, b

    def _solve_ipm(self, C, lam, tol, max_iter):
        state = {}

        def accept(Z, lm):
            W, b = self._to_functions(Z)
            primal = self.model.primal_value(W, b, C, lam)
            lower, feas = self._lower_bound(lm, lam, C)
            gap = relative_gap(primal, lower, self._at_zero)
            state.update(W=W, b=b, primal=primal, lower=lower, feas=feas, beta=lm.copy(), gap=gap)
            return gap <= tol

        if self._normal is None:
            self._normal = _NormalBuilder(self._Phi1, self._Delta.shape[1], options=self.options)
        Z, lm, it, ok = _ipm(self._Phi1, self._Delta, self.pairs.pair_i, C, lam, tol,
                             max_iter, accept, self._normal, self.options.correct_below)
        if not ok:
            ok = accept(Z, lm)
        history = {"gap": [state["gap"]]}
        return (state["W"], state["b"], state["primal"], state["lower"], state["feas"], it, ok,
                history, state["beta"])

    def _live_pairs(self, lam):
        """Pairs the dual can use: those whose beaten node ``t`` is on some label's path or
        carries a DC term.  A node off every path that no DC term touches appears in (10) only
        as ``-sum_{p: t_p = t} beta_p = 0``, so its pairs have ``beta = 0`` at every feasible
        point; its weight is 0 and its bias is set by :meth:`_complete_biases`.  On a wide
        star with few labelled leaves this keeps the work proportional to the labelled
        classes.  Returns the indices of the live pairs, or ``None`` when all are live."""
        dead = ~self._on_path
        if lam.any():
            dead[self._neg[lam > 0]] = False
        if not dead.any():
            return None
        live = ~dead[self._neg]
        return None if live.all() else np.flatnonzero(live)

    def _complete_biases(self, W, b, live):
        """Biases of the nodes no live pair involves (see :meth:`_live_pairs`): each such
        node's bias is put 2 below the lowest score its winners reach, so all its pairs have
        margin >= 2 and no loss; then every sibling group is centred (margins are sibling
        differences, so they do not change).  Returns the centred ``(W, b)``."""
        if live is None:
            return self.model.center(W, b)
        pr = self.pairs
        dead_pair = np.ones(self.P, dtype=bool)
        dead_pair[live] = False
        dead_node = np.zeros(self.M, dtype=bool)
        dead_node[self._neg[dead_pair]] = True
        dead_node[self._neg[live]] = False
        dead_node[self._pos] = False
        sel = np.flatnonzero(dead_node[self._neg])
        b = b.copy()
        if sel.size:
            i, j, t = pr.pair_i[sel], self._pos[sel], self._neg[sel]
            S = self.model.train_scores(W, b)
            room = S[i, j] - (S[i, t] - b[t])           # m_p = room - b_t
            lowest = np.full(self.M, np.inf)
            np.minimum.at(lowest, t, room)
            fin = dead_node & np.isfinite(lowest)
            b[fin] = lowest[fin] - 2.0
        return self.model.center(W, b)

    def _gram(self):
        """The Gram matrix of the training inputs ``(n, n)`` (linear: ``X X^T``), kept."""
        if getattr(self, "_gram_cache", None) is None:
            m = self.model
            if m.linear:
                G = m.X @ m.X.T
                G = G.toarray() if sp.issparse(G) else np.asarray(G, dtype=float)
            else:
                G = m.K
            self._gram_cache = np.ascontiguousarray(G, dtype=float)
        return self._gram_cache

    def _solve_dual_ipm(self, C, lam, tol, max_iter):
        """(8) by :func:`~.dual_qp.solve_dual_qp` on all live pairs (:meth:`_live_pairs`): exact, the others
        have ``beta = 0`` (see :meth:`_restricted_dual`)."""
        live = self._live_pairs(lam)
        idx = np.arange(self.P) if live is None else live
        state = self._restricted_dual(idx, live, C, lam, tol, max_iter, stop_on_violation=False)
        history = {"gap": [state["gap"]]}
        return (state["W"], state["b"], state["primal"], state["lower"], state["feas"],
                state["n_iter"], state["gap"] <= tol, history, state["beta"])

    def _restricted_dual(self, idx, live, C, lam, tol, max_iter, stop_on_violation=True):
        """The dual (9)-(11) with ``beta = 0`` outside the pairs ``idx`` by :func:`~.dual_qp.solve_dual_qp`,
        certified on the whole problem.  The biases are the multipliers of (10), one node per
        connected component of the graph of the pairs ``idx`` pinned to 0 (its rows of (10)
        are dependent), then :meth:`_complete_biases`.  Stops at the certificate, or (with
        ``stop_on_violation``) at the restricted optimum when some pair outside ``idx``
        violates its margin there.  Returns the certified state (``W``, ``b``, ``primal``,
        ``lower``, ``feas``, ``beta``, ``gap``, ``n_iter``, ``violated``: those pairs)."""
        pr, m = self.pairs, self.model
        ii, jj, tt = pr.pair_i[idx], self._pos[idx], self._neg[idx]
        k = idx.size
        Ei = sp.csr_matrix((np.r_[np.ones(k), -np.ones(k)],
                            (np.r_[np.arange(k), np.arange(k)], np.r_[jj, tt])), shape=(k, self.M))
        Q = group_blocks(Ei, self._gram(), ii, pr.group_of[jj], self.options.group_pack)
        # g_p = 1 + m_p(W(lam)) without biases: the linear term of the DC step
        S_lam = m.train_scores(self._functions(lam, np.zeros(self.P)), np.zeros(self.M))
        g = 1.0 + (S_lam[ii, jj] - S_lam[ii, tt])
        samples, inv = np.unique(ii, return_inverse=True)
        Bm = sp.csr_matrix((np.ones(k), (inv, np.arange(k))), shape=(samples.size, k))
        touched = np.unique(np.r_[jj, tt])
        graph = sp.csr_matrix((np.ones(k), (jj, tt)), shape=(self.M, self.M))
        _, comp = connected_components(graph, directed=False)
        keep = np.zeros(self.M, dtype=bool)
        keep[touched] = True
        _, first = np.unique(comp[touched], return_index=True)
        keep[touched[first]] = False
        rows = np.flatnonzero(keep)
        E = Ei[:, rows].toarray()
        h = m.bias_residual(lam, np.zeros(self.P))[rows]
        inside = np.zeros(self.P, dtype=bool)
        inside[idx] = True
        candidates = ~inside if live is None else np.isin(np.arange(self.P), live) & ~inside
        state = {"gap": np.inf, "violated": np.zeros(0, dtype=np.int64)}

        def scored(x, y):
            beta = np.zeros(self.P)
            beta[idx] = x
            b = np.zeros(self.M)
            b[rows] = y
            W, bc = self._complete_biases(self._functions(beta, lam), b, live)
            S = m.train_scores(W, bc)
            return beta, W, bc, S, pr.margins(S)

        def probe(x, y):
            # an iterate on the way: stop when some pair left out is already clearly below
            # what the kept pairs of its sample reach (the restricted optimum will not be
            # the optimum; its last, costliest interior point steps would be wasted)
            margins = scored(x, y)[4]
            reach = np.full(self.n, 1.0)
            np.minimum.at(reach, ii, margins[idx])
            return bool(np.any(candidates & (margins < reach[pr.pair_i] - self.options.probe_margin)))

        def accept(x, y, u):
            beta, W, bc, S, margins = scored(x, y)
            primal = m.penalty(W) + C * float(m.hinge_terms(S).sum()) + float(lam @ margins)
            lower, feas = self._lower_bound(beta, lam, C)
            # pairs left out whose margin is below what the kept pairs of their sample reach
            reach = np.full(self.n, 1.0)
            np.minimum.at(reach, ii, margins[idx])
            violated = np.flatnonzero(candidates & (margins < reach[pr.pair_i]
                                                    - 1e-9 * max(1.0, float(np.abs(margins).max()))))
            gap = relative_gap(primal, lower, self._at_zero)
            if gap > tol:
                # the multipliers of (10) pin the biases only through the kept pairs (and to
                # the interior point's accuracy); with the
                # weights fixed, the best biases for all pairs are an LP (Appendix B's route)
                W2, b2 = self._complete_biases(W, m.biases_lp(W, C, lam), live)
                primal2 = m.primal_value(W2, b2, C, lam)
                if primal2 < primal:
                    bc, primal = b2, primal2
                    gap = relative_gap(primal, lower, self._at_zero)
            if gap < state["gap"]:
                state.update(W=W, b=bc, primal=primal, lower=lower, feas=feas, beta=beta, gap=gap)
            state["violated"] = violated
            # with them, the pairs left out that come within ``ws_margin`` of violating: the
            # next restricted optimum moves, and adding them saves rounds
            state["near"] = np.flatnonzero(candidates & (margins < reach[pr.pair_i] + self.ws_margin))
            # the restricted optimum is reached: growing the set is the caller's move
            return gap <= tol or stop_on_violation

        x, y, it, stopped = solve_dual_qp(Q, g, Bm, E, h, C, max_iter, accept, tol,
                                          probe if stop_on_violation else None,
                                          options=self.options.dual_qp)
        if not stopped:
            accept(x, np.asarray(y), None)
        state["n_iter"] = it
        return state

    def _sweeps(self, C, lam, live, passes, start=None):
        """``passes`` sweeps of the ALM's coordinate ascent on the live pairs from zero (or
        from ``start = (beta, b)``), a multiplier step after each, uncertified: the pairs'
        ``beta`` and margins, to choose a working set."""
        pr = self.pairs
        idx = np.arange(self.P) if live is None else live
        counts = np.bincount(pr.pair_i[idx], minlength=self.n)
        pair_ptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(counts, out=pair_ptr[1:])
        pos = np.ascontiguousarray(self._pos[idx])
        neg = np.ascontiguousarray(self._neg[idx])
        beta = np.zeros(self.P)
        beta_live = np.zeros(idx.size)
        b = np.zeros(self.M)
        if start is not None:
            beta_live = np.ascontiguousarray(start[0][idx], dtype=float)
            beta[idx] = beta_live
            b = np.asarray(start[1], dtype=float).copy()
        W = self._functions(beta, lam)
        F = np.ascontiguousarray(W @ self._K if self._mode == MODE_GRAM else W)
        resid = np.ascontiguousarray(self.model.bias_residual(beta, lam), dtype=float)
        kmax = max(int(counts.max(initial=1)), 1)
        g, old = np.zeros(kmax), np.zeros(kmax)
        for _ in range(int(passes)):
            order = self._rng.permutation(self.n).astype(np.int64)
            _sweep(order, self._mode, F, self._X, self._indptr, self._indices, self._xvals,
                   self._K, self._kdiag, b, resid, beta_live, pair_ptr, pos, neg, self.rho, C,
                   1e-2, 50 * kmax + 100, g, old)
            b += self.rho * resid
        beta[idx] = beta_live
        W, bc = self._complete_biases(self._functions(beta, lam), b, live)
        return beta, pr.margins(self.model.train_scores(W, bc))

    def _solve_working_set(self, C, lam, tol, max_iter, warm_start, max_passes):
        """(8) by :meth:`_restricted_dual` on a working set of pairs: started from the pairs
        coordinate ascent finds near-active (``4 max_passes`` sweeps: ``beta > 0`` or margin
        within 0.2 of the sample's smallest; when warm-starting a DC step, the sweeps start
        from the last solve's ``(beta, b)`` and the last solve's set is kept), grown while
        some pair left out violates its margin at the restricted optimum -- or already half
        way along the interior point path by more than ``PROBE_MARGIN`` (see
        :func:`~.dual_qp.solve_dual_qp`'s probe) -- (then it and every pair left out within ``ws_margin`` of
        violating join), until the certificate holds on the whole problem (at most
        ``max_iter`` interior point steps in all).  Sets are never pruned (pruning cycled: the
        pairs dropped came back).  Falls back to ALM when the set outgrows
        ``4 max_dual_pairs``."""
        pr = self.pairs
        live = self._live_pairs(lam)
        live_mask = np.ones(self.P, dtype=bool) if live is None else np.isin(np.arange(self.P), live)
        if warm_start and self._ws_pairs is not None:
            # a DC step: the last set, and what coordinate ascent from the last step's point
            # finds near-active under the new DC term (without it, every step took two or
            # three rounds: the new term moves the support)
            start = (self._beta * (C / self._C), self._b)
            A = self._ws_pairs & live_mask
        else:
            start = None
            A = np.zeros(self.P, dtype=bool)
        beta, margins = self._sweeps(C, lam, live, max_passes, start)
        reach = np.full(self.n, np.inf)
        np.minimum.at(reach, pr.pair_i[live_mask], margins[live_mask])
        A |= live_mask & ((beta > 0) | (margins <= reach[pr.pair_i] + self.options.ws_seed_margin))
        A |= lam > 0
        total_iter = 0
        best = None
        for _ in range(self.options.ws_rounds):
            if A.sum() > self.max_dual_pairs_ws:
                break
            state = self._restricted_dual(np.flatnonzero(A), live, C, lam, tol,
                                          max(1, int(max_iter) - total_iter))
            total_iter += state["n_iter"]
            if best is None or state["gap"] < best["gap"]:
                best = state
            if state["gap"] <= tol or state["violated"].size == 0 or total_iter >= max_iter:
                break
            A[state["violated"]] = True
            A[state["near"]] = True
        if best is None or best["gap"] > tol and (A.sum() > self.max_dual_pairs_ws):
            logger.info("sibling_qp: working set of %d pairs too large for the dense dual; ALM",
                        int(A.sum()))
            return self._solve_alm(C, lam, tol, self.options.alm_max_iter, True,
                                   self.options.max_passes)
        self._ws_pairs = A | (best["beta"] > 0)
        history = {"gap": [best["gap"]]}
        return (best["W"], best["b"], best["primal"], best["lower"], best["feas"], total_iter,
                best["gap"] <= tol, history, best["beta"])

    def _solve_alm(self, C, lam, tol, max_iter, warm_start, max_passes):
        P, M = self.P, self.M
        if warm_start and self._beta is not None:
            beta = self._beta * (C / self._C)
            b = self._b.copy()
        else:
            beta = np.zeros(P)
            b = np.zeros(M)
        live = self._live_pairs(lam)
        if live is not None:
            beta[np.setdiff1d(np.arange(P), live)] = 0.0
            counts = np.bincount(self.pairs.pair_i[live], minlength=self.n)
            pair_ptr = np.zeros(self.n + 1, dtype=np.int64)
            np.cumsum(counts, out=pair_ptr[1:])
            pos = np.ascontiguousarray(self._pos[live])
            neg = np.ascontiguousarray(self._neg[live])
            beta_live = np.ascontiguousarray(beta[live])
        else:
            pair_ptr, pos, neg, beta_live = self._pair_ptr, self._pos, self._neg, beta
        W = self._functions(beta, lam)
        # dense / sparse: node weights (M, d); kernel: scores without bias, S^T (M, n)
        F = np.ascontiguousarray(W @ self._K if self._mode == MODE_GRAM else W)
        resid = np.ascontiguousarray(self.model.bias_residual(beta, lam), dtype=float)
        kmax = int(np.max(np.diff(pair_ptr))) if pos.size else 1
        g = np.zeros(max(kmax, 1))
        old = np.zeros(max(kmax, 1))
        max_steps = 50 * max(kmax, 1) + 100
        eps = 0.1
        history = {"primal": [], "lower": [], "gap": [], "residual": [], "violation": []}
        best = None
        best_lower = (-np.inf, None)
        n_passes = 0
        converged = False
        for _ in range(int(max_iter)):
            worst = 0.0
            for _ in range(int(max_passes)):
                order = self._rng.permutation(self.n).astype(np.int64)
                worst, _changed = _sweep(order, self._mode, F, self._X, self._indptr, self._indices,
                                         self._xvals, self._K, self._kdiag, b, resid, beta_live,
                                         pair_ptr, pos, neg, self.rho, C, eps,
                                         max_steps, g, old)
                n_passes += 1
                if worst <= eps:
                    break
            b += self.rho * resid
            if live is not None:
                beta[live] = beta_live
            Wc, bc = self._complete_biases(self._functions(beta, lam), b, live)
            primal = self.model.primal_value(Wc, bc, C, lam)
            lower, feas = self._lower_bound(beta, lam, C, final=False)
            if best is None or primal < best[0]:
                best = (primal, Wc, bc)
            if lower > best_lower[0]:
                best_lower = (lower, feas)
            gap = relative_gap(best[0], best_lower[0], self._at_zero)
            history["primal"].append(primal)
            history["lower"].append(lower)
            history["gap"].append(gap)
            history["residual"].append(float(np.abs(resid).max()))
            history["violation"].append(float(worst))
            if gap <= tol:
                converged = True
                break
            # tighten the sweeps as the gap closes (a violation eps costs about C eps per example)
            eps = max(1e-3 * tol, min(0.5 * eps, gap * gap_scale(best[0], best_lower[0]) / (C * max(1, self.n))))
        if best_lower[1] is None:
            lower, feas = self._lower_bound(beta, lam, C)
            best_lower = (lower, feas)
        self._alm_b = b.copy()
        self._alm_b[0] = 0.0
        return (best[1], best[2], best[0], best_lower[0], best_lower[1], n_passes, converged,
                history, beta.copy())

    def solve_dc(self, C=1.0, tol=1e-6, max_iter=50, gap_tol=1e-6,
                 step_max_iter=None) -> Solution:
        """HPSI: the DC loop :func:`hiercvx.solvers.dc.dc_iterations` with every convex step
        solved by :meth:`solve` (HSVM cold, then each step warm-started by the previous one
        under ALM and the working set; the interior point methods start cold), certified to
        ``gap_tol`` within ``step_max_iter`` iterations.  On cellcycle_FUN (4 steps) the
        working set's rounds were 2, 3, 2, 1 before the DC steps' sweeps started from the last
        point, 2, 2, 1, 1 after.  Loosening the early steps' ``gap_tol`` to 1e-4 would save
        about 4 of the 15 interior point steps of their last round (read off the
        complementarity path; not done: the cost change the loop stops on is absolute, and
        every step's certificate is reported)."""
        t0 = time.perf_counter()

        def step(pair_weights):
            res = self.solve(C, pair_weights, tol=gap_tol, max_iter=step_max_iter,
                             warm_start=pair_weights is not None)
            return res.weights, res.biases, res

        out = dc_iterations(self.model, float(C), tol, max_iter, step, "sibling_qp.solve_dc",
                            options=self.options.dc)
        out.solver = "sibling_qp"
        out.extras["method"] = self.method
        out.solve_time = time.perf_counter() - t0
        return out


def solve(model: SiblingModel, C=1.0, *, tol=1e-6, max_iter=None, verbose=False,
          pair_weights=None, options: Options | None = None, method=None, max_passes=None,
          rank_rtol=None, max_ipm_size=None, rho=None, random_state=None,
          max_dual_pairs=None) -> Solution:
    """One certified solve of (8) on ``model`` (:func:`hiercvx.models.sibling.prepare`): HSVM
    (2) when ``pair_weights`` is None, else a DC step of (3).

    Parameters
    ----------
    model : SiblingModel
        The prepared problem.
    C : float
        The loss weight of (2), > 0.
    tol : float
        The certified relative gap at which the solve stops.
    max_iter : int, optional
        IPM iterations (default ``options.ipm_max_iter``; working set: in all rounds,
        ``options.working_set_max_iter``) or ALM multiplier steps (``options.alm_max_iter``).
    verbose : bool
        Log the certificate.
    pair_weights : array of shape (n_pairs,), optional
        The DC term ``lam`` of (8).
    options : Options, optional
        The solver's settings; the keywords ``method``, ``max_passes``, ``rank_rtol``,
        ``max_ipm_size``, ``rho``, ``random_state`` and ``max_dual_pairs`` override its
        fields of the same name when given.

    Returns
    -------
    Solution
        ``weights`` ``(M, d)`` (linear) or ``(M, n)`` representer coefficients (kernel) in the
        working hierarchy's order; extras ``biases`` ``(M,)``, ``dual_feasible`` (the repaired
        ``beta`` of the bound), ``pair_weights``, ``C``, ``method``; ``dual`` is ``beta`` as
        iterated.
    """
    C = check_positive(C, "C")
    check_iteration_options(tol, max_iter, who="sibling_qp.solve")
    opts = Options.of(options, method=method, max_passes=max_passes, rank_rtol=rank_rtol,
                      max_ipm_size=max_ipm_size, rho=rho, random_state=random_state,
                      max_dual_pairs=max_dual_pairs)
    engine = SiblingQPSolver(model, options=opts)
    res = engine.solve(C, pair_weights, tol=float(tol), max_iter=max_iter, warm_start=False)
    if verbose:
        logger.info("%s", res.certificate())
    return res


def solve_dc(model: SiblingModel, C=1.0, *, tol=1e-6, max_iter=50, verbose=False, gap_tol=1e-6,
             step_max_iter=None, options: Options | None = None, method=None, rank_rtol=None,
             max_ipm_size=None, rho=None, random_state=None, max_dual_pairs=None) -> Solution:
    """HPSI by the DC algorithm (3) on ``model``, every convex step by one
    :class:`SiblingQPSolver` certified to ``gap_tol``.

    Parameters
    ----------
    model, C, verbose, options, method, rank_rtol, max_ipm_size, rho, random_state, max_dual_pairs
        As :func:`solve` (``options.dc`` holds the DC loop's settings).
    tol : float
        Stop when the psi cost changes by at most this (absolute, as in the paper).
    max_iter : int
        DC steps (0: HSVM only).
    gap_tol : float
        The certified relative gap of every convex step.
    step_max_iter : int, optional
        Iterations of every convex step (as ``max_iter`` of :func:`solve`).

    Returns
    -------
    Solution
        The result of :func:`hiercvx.solvers.dc.dc_iterations` (a certified DC fixed point;
        extras ``biases``, ``dc_objectives``, ``best_iteration``, ``step_gaps``, ``steps``,
        ``hsvm``, ``method``).
    """
    C = check_positive(C, "C")
    check_dc_options(tol, max_iter)
    check_iteration_options(gap_tol, step_max_iter, who="sibling_qp.solve_dc (gap_tol, step_max_iter)")
    opts = Options.of(options, method=method, rank_rtol=rank_rtol, max_ipm_size=max_ipm_size,
                      rho=rho, random_state=random_state, max_dual_pairs=max_dual_pairs)
    engine = SiblingQPSolver(model, options=opts)
    res = engine.solve_dc(C, tol=tol, max_iter=int(max_iter), gap_tol=float(gap_tol),
                          step_max_iter=step_max_iter)
    if verbose:
        logger.info("%s", res.certificate())
    return res
