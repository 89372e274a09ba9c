"""Dual block-coordinate ascent for orthogonal transfer (4) and its baselines (section 5).

Every problem of Zhou, Xiao and Wu (2011) is the pairwise hinge of a
:class:`~hiercvx.models.orthogonal.PairModel` plus ``R(W) = max_{S in box} 1/2 tr(W^T S W)``:
for (4) the box ``{S_ii = K_ii, |S_ij| <= K_ij}`` of K (then ``R = Omega`` (5)), for the
baselines one fixed PD ``S`` (``I``, or ``I + E^T E`` for TRANSFER).  Its Lagrangian dual,
the dual of the paper's SDP lifting (``formulations/orthogonal.md``, sheet "Dual"), is

    max_{alpha in A, S in box}  D(alpha, S) = sum_p alpha_p - 1/2 tr(U(alpha)^T S^{-1} U(alpha)),

``A`` the multipliers of the margin rows (``alpha >= 0``, ``sum_{p of s} alpha_p / Delta_p <=
C Cw_s`` per slack ``s``) and ``U(alpha) = sum_p alpha_p (Lam_pos - Lam_neg)^T x_s``.  ``D`` is
jointly concave (``(U, S) -> tr(U^T S^{-1} U)`` is the matrix-fractional function) and smooth
on the box: under Corollary 2 every ``S`` of the box has ``lambda_min(S) >= lambda_min(Kbar)
> 0``.  The primal point is ``W = S^{-1} U``.

The solver first restricts the problem to what the data use
(:func:`hiercvx.models.orthogonal.reduce_model`, proofs there): weight rows on no margin row
are zero at the optimum and dropped (for (4) always: Omega (5) only loses non-negative terms;
for a baseline's fixed S, the components of its pattern without a used row), and each group
of interchangeable negatives (never a positive, the same pairs, the same entries of K or S)
becomes one row with ``K'_GG = g K_aa + g (g - 1) c_G``.  It solves the reduced problem and
lifts ``W``, ``alpha`` (spread evenly over a group) and ``S`` exactly: the certified bounds of
the reduced problem are those of the full one at the lifted point.  A chain of 1000 nodes
labelled at its two leaves is a two-row problem; a 5000-leaf star with three labelled leaves
a four-row one.

The solver ascends ``D`` by blocks:

* **alpha**, one slack at a time (LIBLINEAR-style dual coordinate ascent, random order):
  the slack's block is a small QP (Hessian ``||x_s||^2 b_p^T S^{-1} b_q``, ``b_p = Lam_pos -
  Lam_neg`` over the weight rows) over a working set -- the pairs with ``alpha_p > 0`` and
  the ``n_enter`` most violated others -- solved by
  :func:`~hiercvx.solvers.primitives.budget_qp`; ``W`` is updated in place by ``(S^{-1} c)
  x_s^T`` (``c = sum_p dalpha_p b_p``), which touches only the blocks of ``S`` the pairs
  meet.  Slacks with many pairs (TREELOSS, a 5000-leaf star) never form their full Hessian.
* **S** (orthogonal transfer only), after every pass: projected-gradient ascent on the box
  (gradient ``<w_i, w_j>`` on K's off-diagonal pattern, Armijo step, step size adapted from
  pass to pass), ``S^{-1}`` kept block by block over the components of K's pattern
  (:func:`hiercvx.models.orthogonal.coupled_blocks`): a star costs ``O(m)``, a tree the sum of
  its top-level subtrees' cubes -- never an ``m x m`` dense factorization.  A slack of
  Crammer--Singer's shape (one positive class, unit costs, its rows in distinct blocks: a
  star, FLATMULT, HIERMULT's node problems) takes the exact step over all its pairs in one
  sort (:func:`_cs_block`);
* **shrinking**: between full passes (every ``FULL_EVERY``) only the slacks whose KKT
  violation at their last visit exceeded ``SHRINK`` times the last full pass's largest are
  visited (LIBLINEAR's heuristic; the certificate, not the passes, decides convergence);
* **the final exact step** (``polish``): at a certificate where the support of alpha barely
  changed, conjugate gradients on the dual restricted to that support, the tight budgets held
  as equalities (projected CG, S fixed, Hessian products ``U -> S^{-1} U -> margins`` on the
  support only); the point, made feasible (clipped and scaled into the budgets, or the
  longest non-negative step towards it), is kept when it raises the certified bound.  It
  removes the long tail of coordinate ascent on degenerate problems (thousands of passes
  to 1e-8 become tens on the registry's cases).  A support that never holds still (a
  degenerate dual moving on its optimal face, e.g. ``W = 0`` optimal) still gets the step
  after ``STALL_PASSES`` passes without one, that wait doubling after each such attempt.

**Separable baselines** (``blocks="auto"``): with a diagonal ``S`` (``I``, and the merged
rows of the reduction) and weight rows that no slack couples -- HIERMULT is one
Crammer--Singer problem per internal node, over its children -- the problem is a sum of
independent small QPs.  Each is solved by the primal-dual interior point
on its explicit pair rows (:func:`hiercvx.solvers.interior_point.solve_pair_rows`, Newton
matrix ``|C(j)| d`` square) and the whole is certified once at the blocks' multipliers.
Coordinate ascent crawls on these problems when labels are noisy or the tree is deep (the
NHSVM balanced tree at depth 6: 20000 passes, 167-197 s, to gap 2.6e-3; 5000 ImageCLEF07A
samples: 48-53 s to 9e-4); the blocks take 6 s to gaps of 1e-9
(``benchmarks/bench_hiermult_blocks.py``).  FLATMULT is Crammer--Singer's problem on the
leaves; it goes to the margin engine's solver (:mod:`hiercvx.solvers.crammer_singer`:
closed-form blocks, shrinking, the face step) and is certified here (the NHSVM balanced tree:
43 s to gap 5.5e-6 by this module's passes, 15 s to 1e-11 there; 5000 ImageCLEF07A samples:
46 s to 9.3e-4 against 3.9 s to 1.6e-6).

Certificate (scheduled to cost about a quarter of the passes' work,
:class:`~hiercvx.solvers.primitives.CertificateSchedule`): ``U`` recomputed from ``alpha``,
``W = S^{-1} U``, the lower bound ``D(alpha, S)`` (valid for any feasible alpha and any PD ``S`` of the box,
:func:`hiercvx.models.orthogonal.quadratic_lower_bound`) and the objective (7) recomputed at
``W`` (Omega (5) on K's pattern + the hinge); stop when ``relative_gap(upper, lower, J(0)) <=
tol``.  At the joint optimum ``S_ij <w_i, w_j> = K_ij |<w_i, w_j>|`` (complementarity), so the
gap closes.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numba import njit
from scipy.sparse.csgraph import connected_components
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin
from ..models import multiclass as mc_model
from ..models import orthogonal as otm
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import crammer_singer, interior_point
from .margin_dual import ROW_FASTMATH, scatter_coefficients
from .primitives import (
    CertificateSchedule,
    blas_threads,
    budget_qp,
    row_axpy,
    row_data,
    row_dot,
    row_sq_norms,
)
from .rda import Hinge

logger = logging.getLogger(__name__)

__all__ = ["N_ENTER", "S_STEPS", "BlockInverse", "solve"]

#: pairs entering a slack's working set per visit (besides those with alpha_p > 0)
N_ENTER = 4
#: accepted projected-gradient steps on S per pass (orthogonal transfer)
S_STEPS = 2
#: the Newton (support) step: tried when at most SUPPORT_CHANGE of the support changed
#: between two certificates (or at most SUPPORT_CHANGE_MIN pairs: a small support, e.g. a
#: reduced wide star's, rarely holds still to the pair), with at most MAX_CG Hessian products
SUPPORT_CHANGE, MAX_CG = 0.01, 50
SUPPORT_CHANGE_MIN = 3
#: ... and, whatever the support did, after STALL_PASSES passes without an attempt (doubled
#: after each such attempt): a degenerate dual (e.g. W = 0 optimal) whose support keeps
#: moving on its optimal face
STALL_PASSES = 100
#: shrinking: between full passes (every FULL_EVERY passes) only the slacks whose KKT
#: violation exceeds SHRINK times the last full pass's largest are visited
FULL_EVERY, SHRINK = 5, 0.2
#: the classes' Gram matrix (TREELOSS) is formed up to this many classes
GRAM_MAX_CLASSES = 3000


# =============================================================================== S^{-1} by blocks
#: blocks of S up to this size are factored by the compiled loop, larger ones by LAPACK
SMALL_BLOCK = 64
# separable problems (S diagonal, weight rows in independent blocks: HIERMULT's node problems) are
# solved block by block by the pair-rows interior point when every block's Newton matrix has
# at most BLOCK_IPM_DIM rows and its features fit in BLOCK_IPM_ENTRIES floats
BLOCK_IPM_DIM = 2000
BLOCK_IPM_ENTRIES = 20_000_000


@njit(cache=True)
def _invert_small_blocks(data, groups, blk_ptr, q_off, sc_ptr, sc_at, sc_flat, out, A):
    """``out`` (flat, like ``Qflat``) ``= S_b^{-1}`` for each block ``b`` in ``groups``, by a
    Cholesky factorization ``S_b = L L^T`` and ``S_b^{-1} = L^{-T} L^{-1}``; False when a
    block is not positive definite."""
    for b in groups:
        k = blk_ptr[b + 1] - blk_ptr[b]
        for t in range(k * k):
            A[t] = 0.0
        for t in range(sc_ptr[b], sc_ptr[b + 1]):
            A[sc_flat[t]] = data[sc_at[t]]
        # Cholesky in place, lower triangle (row-major k x k)
        for j in range(k):
            acc = A[j * k + j]
            for r in range(j):
                acc -= A[j * k + r] * A[j * k + r]
            if not acc > 0.0:
                return False
            ljj = np.sqrt(acc)
            A[j * k + j] = ljj
            for i in range(j + 1, k):
                acc = A[i * k + j]
                for r in range(j):
                    acc -= A[i * k + r] * A[j * k + r]
                A[i * k + j] = acc / ljj
        # L^{-1} in the upper part is not needed: invert L column by column into out, then Q
        off = q_off[b]
        for t in range(k * k):
            out[off + t] = 0.0
        for c in range(k):  # solve L z = e_c, then L^T q = z: column c of S_b^{-1}
            for i in range(k):
                acc = 1.0 if i == c else 0.0
                for r in range(i):
                    acc -= A[i * k + r] * out[off + r * k + c]
                out[off + i * k + c] = acc / A[i * k + i]
            for i in range(k - 1, -1, -1):
                acc = out[off + i * k + c]
                for r in range(i + 1, k):
                    acc -= A[r * k + i] * out[off + r * k + c]
                out[off + i * k + c] = acc / A[i * k + i]
    return True


@njit(cache=True)
def _apply_blocks(Qflat, blk_ptr, blk_nodes, q_off, U, Z):
    """``Z = Q U`` block by block."""
    d = U.shape[1]
    for b in range(blk_ptr.shape[0] - 1):
        k = blk_ptr[b + 1] - blk_ptr[b]
        off = q_off[b]
        for i in range(k):
            v = blk_nodes[blk_ptr[b] + i]
            for f in range(d):
                Z[v, f] = 0.0
            for j in range(k):
                q = Qflat[off + i * k + j]
                if q != 0.0:
                    u = blk_nodes[blk_ptr[b] + j]
                    for f in range(d):
                        Z[v, f] += q * U[u, f]


@njit(cache=True, fastmath=ROW_FASTMATH)
def _pattern_gram(rows, cols, W, out):
    """``out[e] = <W[rows[e]], W[cols[e]]>``: the Gram matrix of the rows on a sparsity pattern."""
    for e in range(rows.shape[0]):
        acc = 0.0
        for f in range(W.shape[1]):
            acc += W[rows[e], f] * W[cols[e], f]
        out[e] = acc


class BlockInverse:
    """``Q = S^{-1}`` for symmetric PD matrices ``S`` with one fixed sparsity ``pattern`` (CSR,
    diagonal stored), block by block over the connected components of the pattern
    (:func:`hiercvx.models.orthogonal.coupled_blocks`; isolated rows are blocks of size 1).
    :meth:`factor` takes ``S`` as the ``data`` array of the pattern.  The flat layout
    (``node_block``, ``node_pos``, ``blk_ptr``, ``blk_nodes``, ``q_off``, ``Qflat``) is what
    the compiled pass reads: ``Q[u, v] = Qflat[q_off[b] + node_pos[u] * size_b + node_pos[v]]``
    when u and v are in block b, 0 otherwise."""

    def __init__(self, pattern):
        pattern = sp.csr_matrix(pattern)
        pattern.sort_indices()
        self.pattern = pattern
        m = pattern.shape[0]
        isolated, blocks = otm.coupled_blocks(pattern)
        iso = np.flatnonzero(isolated)
        self.m = m
        self.blocks = blocks
        groups = [iso[k:k + 1] for k in range(len(iso))] + list(blocks)
        sizes = np.array([len(g) for g in groups], dtype=np.int64)
        self.sizes = sizes
        self.node_block = np.zeros(m, dtype=np.int64)
        self.node_pos = np.zeros(m, dtype=np.int64)
        self.blk_ptr = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.blk_ptr[1:])
        self.blk_nodes = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
        self.q_off = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(sizes * sizes, out=self.q_off[1:])
        for b, g in enumerate(groups):
            self.node_block[g] = b
            self.node_pos[g] = np.arange(len(g))
        self.Qflat = np.zeros(int(self.q_off[-1]))
        self._Qwork = np.zeros_like(self.Qflat)
        rows = np.repeat(np.arange(m), np.diff(pattern.indptr))
        cols = pattern.indices
        if np.any(np.bincount(rows[rows == cols], minlength=m) == 0):
            raise InputError("the pattern must store its diagonal")
        # per block: the data positions of its entries and their flat positions in the block
        blk = self.node_block[rows]
        order = np.argsort(blk, kind="stable")
        self.sc_at = order.astype(np.int64)
        self.sc_flat = (self.node_pos[rows[order]] * sizes[blk[order]] + self.node_pos[cols[order]]).astype(np.int64)
        self.sc_ptr = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(np.bincount(blk, minlength=len(groups)), out=self.sc_ptr[1:])
        self.small = np.flatnonzero(sizes <= SMALL_BLOCK).astype(np.int64)
        self.large = np.flatnonzero(sizes > SMALL_BLOCK)
        self._A = np.zeros(int(min(sizes.max(initial=1), SMALL_BLOCK) ** 2))

    @property
    def work(self) -> float:
        """Multiply-adds of one factorization and inverse."""
        return float(np.sum(self.sizes.astype(float) ** 3))

    @property
    def apply_work(self) -> float:
        """Multiply-adds of ``Q u`` for one column ``u``."""
        return float(np.sum(self.sizes.astype(float) ** 2))

    def factor(self, data) -> bool:
        """``Q = S^{-1}`` for ``S`` given as the pattern's ``data``.  False (``Q`` unchanged)
        when ``S`` is not positive definite."""
        data = np.ascontiguousarray(data, dtype=float)
        out = self._Qwork
        if not _invert_small_blocks(data, self.small, self.blk_ptr, self.q_off, self.sc_ptr, self.sc_at,
                                    self.sc_flat, out, self._A):
            return False
        for b in self.large:
            k = int(self.sizes[b])
            A = np.zeros(k * k)
            at = slice(self.sc_ptr[b], self.sc_ptr[b + 1])
            A[self.sc_flat[at]] = data[self.sc_at[at]]
            try:
                c = sla.cho_factor(A.reshape(k, k), lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                return False
            out[self.q_off[b]:self.q_off[b + 1]] = sla.cho_solve(c, np.eye(k), check_finite=False).ravel()
        self._Qwork, self.Qflat = self.Qflat, out
        return True

    def solve(self, U: np.ndarray) -> np.ndarray:
        """``S^{-1} U`` with the last factorization."""
        U = np.ascontiguousarray(U, dtype=float)
        Z = np.empty_like(U)
        _apply_blocks(self.Qflat, self.blk_ptr, self.blk_nodes, self.q_off, U, Z)
        return Z


# =============================================================================== the pass
@njit(cache=True, inline="always")
def _q_entry(u, v, node_block, node_pos, blk_ptr, q_off, Qflat):
    b = node_block[u]
    if node_block[v] != b:
        return 0.0
    size = blk_ptr[b + 1] - blk_ptr[b]
    return Qflat[q_off[b] + node_pos[u] * size + node_pos[v]]


@njit(cache=True)
def _root_on_segments(bp, w, c, target):
    """The ``theta`` with ``c theta - sum_p w_p max(0, bp_p - theta) = target`` (``c >= 0``,
    ``w > 0``: the left side increases), ``bp`` sorted in decreasing order; NaN if none."""
    S1 = 0.0
    S2 = 0.0
    n = bp.shape[0]
    for k in range(n + 1):  # theta in [bp[k], bp[k-1]]: the first k breakpoints are active
        if c + S2 > 0.0:
            theta = (target + S1) / (c + S2)
            upper = bp[k - 1] if k > 0 else np.inf
            lower = bp[k] if k < n else -np.inf
            if lower <= theta <= upper:
                return theta
        if k < n:
            S1 += w[k] * bp[k]
            S2 += w[k]
    return np.nan


@njit(cache=True)
def _cs_block(g, a0, qn, A, q0, budget, n, out):
    """Exact step of a Crammer--Singer-shaped slack: every pair has the same positive class,
    distinct negatives, unit cost and ``b_p^T Q b_r = q0 + [p = r] q_p``.  Maximizes
    ``sum g_p (a_p - a0_p) - A/2 (q0 (sum a - sum a0)^2 + sum q_p (a_p - a0_p)^2)`` over
    ``a >= 0, sum a <= budget`` into ``out``: ``a_p = w_p max(0, bp_p - theta)`` with ``w_p =
    1 / (A q_p)``, ``bp_p = g_p + A q_p a0_p`` and ``theta = A q0 (sum a - sum a0) + lambda``,
    ``lambda >= 0`` the budget's multiplier, found on the sorted breakpoints in O(n log n).
    False when a root is not found (round-off): the caller takes the general path."""
    t0 = 0.0
    w = np.empty(n)
    bp = np.empty(n)
    for p in range(n):
        t0 += a0[p]
        w[p] = 1.0 / (A * qn[p])
        bp[p] = g[p] + A * qn[p] * a0[p]
    idx = np.argsort(-bp)
    bps = bp[idx]
    wso = w[idx]
    theta = _root_on_segments(bps, wso, 1.0 / (A * q0), -t0)  # lambda = 0
    if np.isnan(theta):
        return False
    total = 0.0
    for r in range(n):
        if bps[r] > theta:
            total += wso[r] * (bps[r] - theta)
    if total > budget:  # the budget binds: sum_p w_p max(0, bp_p - theta) = budget
        theta = _root_on_segments(bps, wso, 0.0, -budget)
        if np.isnan(theta):
            return False
    for p in range(n):
        v = w[p] * (bp[p] - theta)
        out[p] = max(0.0, v)
    return True


@njit(cache=True, fastmath=ROW_FASTMATH)
def _sweep(order, mode, X, indptr, indices, xvals, Kg, W, alpha, used, budget, cost, sqn,
           pair_ptr, pair_pos, pair_neg, cls_ptr, cls_node, cls_val,
           node_block, node_pos, blk_ptr, blk_nodes, q_off, Qflat, class_gram, use_gram, cs_slack,
           n_enter, eps, inner_tol, slack_viol,
           cscore, cstamp, nscore, nstamp, coef, tstamp, touched, gall, qall, ws, Hk, gk, ak, ck):
    """One pass of dual block-coordinate ascent over the slacks in ``order``; returns the
    largest KKT violation met (scaled: ``max g/cost - min_{alpha>0} g/cost``, each slack's
    into ``slack_viol``) and the multiply-adds spent."""
    max_viol = 0.0
    work = 0.0
    stamp = cstamp.max() if cstamp.shape[0] > 0 else 0
    nst = nstamp.max() if nstamp.shape[0] > 0 else 0
    tst = tstamp.max() if tstamp.shape[0] > 0 else 0
    nnz_row = X.shape[1]
    for s in order:
        p0 = pair_ptr[s]
        p1 = pair_ptr[s + 1]
        if p1 == p0 or budget[s] <= 0.0:
            continue
        if mode == 1:
            nnz_row = indptr[s + 1] - indptr[s]
        stamp += 1
        nst += 1
        # class scores of the slack's pairs (cached per class and per node during this visit)
        for p in range(p0, p1):
            for c in (pair_pos[p], pair_neg[p]):
                if cstamp[c] != stamp:
                    cstamp[c] = stamp
                    acc = 0.0
                    for k in range(cls_ptr[c], cls_ptr[c + 1]):
                        v = cls_node[k]
                        if nstamp[v] != nst:
                            nstamp[v] = nst
                            nscore[v] = row_dot(mode, W, v, s, X, indptr, indices, xvals)
                            work += nnz_row
                        acc += cls_val[k] * nscore[v]
                    cscore[c] = acc
            gall[p - p0] = 1.0 - (cscore[pair_pos[p]] - cscore[pair_neg[p]])
        slack = budget[s] - used[s]
        slack = max(slack, 0.0)
        r_up = 0.0
        r_down = np.inf
        if slack > 0.0:
            r_down = 0.0
        for p in range(p0, p1):
            r = gall[p - p0] / cost[p]
            r_up = max(r_up, r)
            if alpha[p] > 0.0 and r < r_down:
                r_down = r
        if r_down == np.inf:
            slack_viol[s] = 0.0
            continue
        viol = r_up - r_down
        slack_viol[s] = viol
        max_viol = max(max_viol, viol)
        if viol <= eps:
            continue
        n_p = p1 - p0
        done = False
        if cs_slack[s] and sqn[s] > 0.0:  # Crammer-Singer shape: exact, over all the pairs
            u0 = cls_node[cls_ptr[pair_pos[p0]]]
            q0 = _q_entry(u0, u0, node_block, node_pos, blk_ptr, q_off, Qflat)
            for p in range(p0, p1):
                v = cls_node[cls_ptr[pair_neg[p]]]
                qall[p - p0] = _q_entry(v, v, node_block, node_pos, blk_ptr, q_off, Qflat)
            if _cs_block(gall, alpha[p0:p1], qall, sqn[s], q0, budget[s], n_p, ak):
                for p in range(p0, p1):
                    ws[p - p0] = p
                k = n_p
                done = True
                work += n_p * 8
        if not done:
            k = _block_step(s, p0, p1, alpha, gall, cost, slack, r_down, n_enter, inner_tol, sqn,
                            pair_pos, pair_neg, cls_ptr, cls_node, cls_val, node_block, node_pos,
                            blk_ptr, q_off, Qflat, class_gram, use_gram, ws, Hk, gk, ak, ck)
            work += k * k * 4
        # apply: alpha, the budget, and W += (Q c) x_s^T with c = sum dalpha_p b_p
        tst += 1
        n_touched = 0
        total = 0.0
        for a in range(k):
            pa = ws[a]
            da = ak[a] - alpha[pa]
            ak[a] = max(ak[a], 0.0)
            alpha[pa] = ak[a]
            total += ak[a] * cost[pa]
            if da == 0.0:
                continue
            for side in range(2):
                c = pair_pos[pa] if side == 0 else pair_neg[pa]
                sgn = da if side == 0 else -da
                for kk in range(cls_ptr[c], cls_ptr[c + 1]):
                    u = cls_node[kk]
                    # spread over u's block: coef[v] += Q[v, u] * sgn * val
                    b = node_block[u]
                    size = blk_ptr[b + 1] - blk_ptr[b]
                    base = q_off[b] + node_pos[u]
                    for t in range(blk_ptr[b], blk_ptr[b + 1]):
                        v = blk_nodes[t]
                        if tstamp[v] != tst:
                            tstamp[v] = tst
                            coef[v] = 0.0
                            touched[n_touched] = v
                            n_touched += 1
                        coef[v] += Qflat[base + node_pos[v] * size] * sgn * cls_val[kk]
        used[s] = total
        for t in range(n_touched):
            v = touched[t]
            if coef[v] != 0.0:
                row_axpy(mode, W, v, s, coef[v], X, indptr, indices, xvals, Kg)
                work += nnz_row
    return max_viol, work


@njit(cache=True)
def _block_step(s, p0, p1, alpha, gall, cost, slack, r_down, n_enter, inner_tol, sqn,
                pair_pos, pair_neg, cls_ptr, cls_node, cls_val, node_block, node_pos, blk_ptr, q_off,
                Qflat, class_gram, use_gram, ws, Hk, gk, ak, ck):
    """A slack's step on its working set (the support and the ``n_enter`` most violated
    other pairs) by :func:`~hiercvx.solvers.primitives.budget_qp`; the working set in ``ws``,
    its new multipliers in ``ak``; returns its size."""
    k = 0
    for p in range(p0, p1):
        if alpha[p] > 0.0:
            ws[k] = p
            k += 1
    n_sup = k
    for e in range(n_enter):
        best = -1
        best_r = max(r_down, 0.0)
        for p in range(p0, p1):
            if alpha[p] > 0.0:
                continue
            r = gall[p - p0] / cost[p]
            if r > best_r:
                taken = False
                for j in range(n_sup, k):
                    if ws[j] == p:
                        taken = True
                        break
                if not taken:
                    best_r = r
                    best = p
        if best < 0:
            break
        ws[k] = best
        k += 1
    # the block's Hessian ||x_s||^2 b_a^T Q b_b over the working set
    for a in range(k):
        pa = ws[a]
        gk[a] = gall[pa - p0]
        ak[a] = alpha[pa]
        ck[a] = cost[pa]
        for b in range(a, k):
            pb = ws[b]
            h = 0.0
            if use_gram:  # b_a^T Q b_b from the classes' Gram matrix Lam Q Lam^T
                ya, na, yb, nb = pair_pos[pa], pair_neg[pa], pair_pos[pb], pair_neg[pb]
                h = class_gram[ya, yb] - class_gram[ya, nb] - class_gram[na, yb] + class_gram[na, nb]
                Hk[a, b] = h * sqn[s]
                Hk[b, a] = Hk[a, b]
                continue
            for side_a in range(2):
                ca = pair_pos[pa] if side_a == 0 else pair_neg[pa]
                sa = 1.0 if side_a == 0 else -1.0
                for side_b in range(2):
                    cb = pair_pos[pb] if side_b == 0 else pair_neg[pb]
                    sb = 1.0 if side_b == 0 else -1.0
                    for ka in range(cls_ptr[ca], cls_ptr[ca + 1]):
                        u = cls_node[ka]
                        for kb in range(cls_ptr[cb], cls_ptr[cb + 1]):
                            v = cls_node[kb]
                            q = _q_entry(u, v, node_block, node_pos, blk_ptr, q_off, Qflat)
                            h += sa * sb * cls_val[ka] * cls_val[kb] * q
            Hk[a, b] = h * sqn[s]
            Hk[b, a] = Hk[a, b]
    budget_qp(Hk, gk, ak, ck, slack, k, inner_tol, 50 * k + 50)
    return k


@njit(cache=True, fastmath=ROW_FASTMATH)
def _support_matvec(v, sup, pair_slack, pair_pos, pair_neg, cls_ptr, cls_node, cls_val, mode, X, indptr,
                    indices, xvals, Kg, blk_ptr, blk_nodes, q_off, Qflat, U, Z, out):
    """``out = H_PP v``: the dual Hessian on the pairs ``sup`` (``H_pr = x_s^T x_t b_p^T Q b_r``)
    times ``v``, as ``U = sum_p v_p b_p x_s^T``, ``Z = Q U``, ``out_p = b_p^T Z x_s``."""
    U[:, :] = 0.0
    for t in range(sup.shape[0]):
        p = sup[t]
        a = v[t]
        if a == 0.0:
            continue
        s = pair_slack[p]
        for side in range(2):
            c = pair_pos[p] if side == 0 else pair_neg[p]
            sg = a if side == 0 else -a
            for k in range(cls_ptr[c], cls_ptr[c + 1]):
                row_axpy(mode, U, cls_node[k], s, sg * cls_val[k], X, indptr, indices, xvals, Kg)
    _apply_blocks(Qflat, blk_ptr, blk_nodes, q_off, U, Z)
    for t in range(sup.shape[0]):
        p = sup[t]
        s = pair_slack[p]
        acc = 0.0
        for side in range(2):
            c = pair_pos[p] if side == 0 else pair_neg[p]
            sg = 1.0 if side == 0 else -1.0
            for k in range(cls_ptr[c], cls_ptr[c + 1]):
                acc += sg * cls_val[k] * row_dot(mode, Z, cls_node[k], s, X, indptr, indices, xvals)
        out[t] = acc


# =============================================================================== the problem
class _Problem:
    """The arrays of the pass and the certificate of one model at one C."""

    def __init__(self, model: otm.PairModel, C: float, K):
        d = model.data
        if d.rescaling != "slack":
            raise InputError("the orthogonal-transfer models use slack rescaling; got margin rescaling")
        self.model = model
        self.C = C
        var = np.asarray(model.var_nodes)
        self.m = len(var)
        Lam = sp.csr_matrix(d.Lam)[:, var]  # classes -> weight rows
        Lam.eliminate_zeros()
        Lam.sort_indices()
        self.Lam = Lam
        self.cls_ptr = Lam.indptr.astype(np.int64)
        self.cls_node = Lam.indices.astype(np.int64)
        self.cls_val = Lam.data.astype(float)
        self.rows = row_data(model.X_slacks)
        self.sqn = np.ascontiguousarray(row_sq_norms(self.rows), dtype=float)
        self.pair_ptr = d.pair_ptr.astype(np.int64)
        self.pair_pos = d.pair_y.astype(np.int64)
        self.pair_neg = d.pair_ybar.astype(np.int64)
        self.cost = np.ascontiguousarray(d.pair_cost, dtype=float)
        self.budget = np.ascontiguousarray(C * d.Cw, dtype=float)
        self.n_slacks = d.n_samples
        self.n_pairs = d.n_pairs
        self.hinge = Hinge(model, C)
        if model.method == "orthogonal":
            K = model.K if K is None else K
            Ks = sp.csr_matrix(np.asarray(K, dtype=float) if not sp.issparse(K) else K)
            Ks = sp.csr_matrix(Ks + sp.diags(np.zeros(self.m)))  # keep the diagonal stored
            Ks.sort_indices()
            self.K = Ks
            rows = np.repeat(np.arange(self.m), np.diff(Ks.indptr))
            self.k_rows, self.k_cols = rows.astype(np.int64), Ks.indices.astype(np.int64)
            self.k_off = rows != self.k_cols
            self.S = Ks.copy()
            self.S.data = np.where(self.k_off, 0.0, Ks.data)  # the box's centre, diag(K)
            self.S_fixed = None
            self.blocks = BlockInverse(Ks)
        else:
            self.K = None
            S = sp.csr_matrix(model.S)
            S = sp.csr_matrix(S + sp.diags(np.zeros(self.m)))
            S.sort_indices()
            self.S_fixed = S
            self.S = S
            self.blocks = BlockInverse(S)
        if not self.blocks.factor(self.S.data):
            raise InputError("the regularizer's matrix is not positive definite")
        # classes spread over several weight rows (TREELOSS's paths) under a fixed S: the
        # block Hessians read the classes' Gram matrix Lam S^{-1} Lam^T, formed once
        q = Lam.shape[0]
        self.use_gram = bool(self.S_fixed is not None and np.diff(self.cls_ptr).max(initial=0) > 1
                             and q <= GRAM_MAX_CLASSES)
        if self.use_gram:
            QL = self.blocks.solve(np.asarray(Lam.T.toarray()))
            self.class_gram = np.ascontiguousarray(np.asarray(Lam @ QL))
        else:
            self.class_gram = np.zeros((1, 1))
        self.scatter = np.zeros((self.n_slacks, q))
        self.cs_slack = self._crammer_singer_slacks()

    def _crammer_singer_slacks(self) -> np.ndarray:
        """The slacks whose block has Crammer--Singer's shape (:func:`_cs_block`): one positive
        class, distinct negatives, unit costs, every class one weight row, and the rows in
        distinct blocks of S (so ``b_p^T Q b_r = q0 + [p = r] q_p`` for every S of the pattern)."""
        out = np.zeros(self.n_slacks, dtype=bool)
        single = (np.diff(self.cls_ptr) == 1)
        single &= np.r_[self.cls_val, 1.0][np.minimum(self.cls_ptr[:-1], len(self.cls_val))] == 1.0
        if not single.any():
            return out
        node = np.where(single, self.cls_node[np.minimum(self.cls_ptr[:-1], len(self.cls_node) - 1)], -1)
        block = np.where(node >= 0, self.blocks.node_block[np.maximum(node, 0)], -1)
        ptr = self.pair_ptr
        for s in range(self.n_slacks):
            p0, p1 = ptr[s], ptr[s + 1]
            if p1 == p0:
                continue
            pos, neg = self.pair_pos[p0:p1], self.pair_neg[p0:p1]
            if not (np.all(pos == pos[0]) and np.all(single[neg]) and single[pos[0]]
                    and np.all(self.cost[p0:p1] == 1.0)):
                continue
            blocks = np.r_[block[pos[0]], block[neg]]
            out[s] = len(np.unique(blocks)) == len(blocks)
        return out

    def certificate_work(self) -> float:
        """Multiply-adds of one certificate (for the certificate schedule)."""
        X = self.model.X_slacks
        nnz = X.nnz if sp.issparse(X) else X.size
        d = X.shape[1]
        return float(nnz * (self.m + self.Lam.shape[0]) + 4 * self.n_pairs + self.blocks.apply_work * d)

    # ---------------------------------------------------------------- pieces of the certificate
    def node_gradient(self, alpha) -> np.ndarray:
        """``U(alpha)`` over the weight rows ``(m, d)``."""
        d = self.model.data
        G = self.scatter  # (n_slacks, q)
        scatter_coefficients(alpha, d.pair_i, d.pair_y, d.pair_ybar, G)
        X = self.model.X_slacks
        GX = (X.T @ G).T if sp.issparse(X) else G.T @ X
        return np.asarray(self.Lam.T @ np.asarray(GX))

    def regularizer(self, W) -> float:
        if self.K is not None:  # Omega (5) on K's pattern
            gram = np.empty(len(self.k_rows))
            _pattern_gram(self.k_rows, self.k_cols, np.ascontiguousarray(W), gram)
            return 0.5 * float(np.sum(self.K.data * np.abs(gram)))
        return 0.5 * float(np.sum(W * (self.S_fixed @ W)))

    def objective(self, W) -> float:
        return self.regularizer(W) + self.hinge.value(W)

    def certify(self, alpha):
        """``(W, upper, lower)``: ``W = S^{-1} U(alpha)``, the objective there and ``D(alpha, S)``."""
        U = self.node_gradient(alpha)
        W = self.blocks.solve(U)
        lower = float(alpha.sum()) - 0.5 * float(np.sum(U * W))
        return W, self.objective(W), lower

    # ---------------------------------------------------------------- the Newton step
    def newton_candidates(self, alpha, max_cg: int):
        """The final exact step on the identified support: conjugate gradients on the dual
        restricted to the pairs with ``alpha_p > 0`` (the others fixed at 0), the budgets of
        the tight slacks held as equalities (projected CG), S fixed.  Returns feasible
        candidates (the CG point clipped at 0 and scaled into the budgets, and the longest
        step towards it that stays non-negative) and the multiply-adds spent."""
        d = self.model.data
        sup = np.flatnonzero(alpha > 0).astype(np.int64)
        if len(sup) == 0:
            return [], 0.0
        slack_of = d.pair_i[sup]
        c = self.cost[sup]
        used = np.bincount(d.pair_i, weights=alpha * self.cost, minlength=self.n_slacks)
        tight = (used >= self.budget * (1.0 - 1e-9))[slack_of]
        den = np.bincount(slack_of, weights=c * c, minlength=self.n_slacks)[slack_of]

        def project(v):  # onto {sum_{p of s} c_p v_p = 0 for the tight slacks}
            num = np.bincount(slack_of, weights=c * v, minlength=self.n_slacks)[slack_of]
            return v - np.where(tight, c * num / den, 0.0)

        rows = self.rows
        blk = self.blocks
        width = self.model.X_slacks.shape[1]
        U = np.zeros((self.m, width))
        Z = np.zeros((self.m, width))
        out = np.zeros(len(sup))

        def hess(v):
            _support_matvec(v, sup, d.pair_i, self.pair_pos, self.pair_neg, self.cls_ptr, self.cls_node,
                            self.cls_val, rows.mode, rows.X, rows.indptr, rows.indices, rows.xvals, rows.K,
                            blk.blk_ptr, blk.blk_nodes, blk.q_off, blk.Qflat, U, Z, out)
            return out.copy()

        x = alpha[sup].copy()
        r = project(1.0 - hess(x))
        direction = r.copy()
        rr = rr0 = float(r @ r)
        n_products = 1
        for _ in range(max_cg):
            if rr <= 1e-24 * rr0 or rr == 0.0:
                break
            Hd = hess(direction)
            n_products += 1
            curv = float(direction @ Hd)
            if not curv > 1e-14 * float(direction @ direction):
                break
            step = rr / curv
            x += step * direction
            r = project(r - step * Hd)
            rr_new = float(r @ r)
            direction = r + (rr_new / rr) * direction
            rr = rr_new
        work = n_products * (4.0 * len(sup) * width + blk.apply_work * width)
        full = alpha.copy()
        full[sup] = x
        candidates = [margin.project_dual(full, d, self.C)]
        delta = x - alpha[sup]
        shrink = delta < 0
        t = min(1.0, float(np.min(alpha[sup][shrink] / -delta[shrink], initial=np.inf)))
        if 0.0 < t < 1.0:
            ratio = alpha.copy()
            ratio[sup] = np.maximum(alpha[sup] + t * delta, 0.0)
            candidates.append(margin.project_dual(ratio, d, self.C))
        return candidates, work

    # ---------------------------------------------------------------- the S step
    def s_steps(self, W, eta: float, n_steps: int):
        """Projected-gradient ascent on ``S`` of ``-1/2 tr(U^T S^{-1} U)`` at ``U = S W``,
        ``n_steps`` accepted Armijo steps; returns ``(W, eta, work)`` with ``W = S^{-1} U`` (and
        ``blocks`` holding ``S^{-1}``) and the multiply-adds spent."""
        rows, cols = self.k_rows[self.k_off], self.k_cols[self.k_off]  # off-diagonal entries
        if len(rows) == 0:
            return W, eta, 0.0
        at = np.flatnonzero(self.k_off)
        Kd = self.K.data[at]
        U = np.asarray(self.S @ W)
        f = -0.5 * float(np.sum(U * W))
        work = float(U.size + len(rows) * W.shape[1])
        current = True  # blocks hold the inverse of the accepted S
        for _ in range(n_steps):
            grad = np.empty(len(rows))
            _pattern_gram(rows, cols, np.ascontiguousarray(W), grad)
            work += len(rows) * W.shape[1]
            s = self.S.data[at]
            # entries at their bound whose gradient pushes outwards cannot move
            free = ~(((s >= Kd) & (grad >= 0)) | ((s <= -Kd) & (grad <= 0)))
            if not np.any(grad[free]):
                break
            accepted = False
            for _try in range(30):
                new = np.clip(s + eta * grad, -Kd, Kd)
                step = new - s
                if not np.any(step):
                    break
                data = self.S.data.copy()
                data[at] = new
                work += self.blocks.work + self.blocks.apply_work * W.shape[1]
                if self.blocks.factor(data):
                    current = False
                    Z = self.blocks.solve(U)
                    f_new = -0.5 * float(np.sum(U * Z))
                    # each symmetric entry is stored twice: the gradient per stored copy is grad/2
                    lin = 0.5 * float(grad @ step)
                    if f_new >= f + lin - float(step @ step) / (4.0 * eta) - 1e-15 * abs(f):
                        self.S.data = data
                        W, f = Z, f_new
                        current = True
                        eta *= 2.0
                        accepted = True
                        break
                eta *= 0.25
            if not accepted:
                break
        if not current:
            work += self.blocks.work
            if not self.blocks.factor(self.S.data):
                raise InputError("S left the positive definite cone")  # cannot happen: S was accepted
        return W, eta, work


# =============================================================================== solve
def solve(model: otm.PairModel, C: float = 1.0, *, K=None, tol: float = 1e-4, max_iter: int = 20_000,
          n_enter: int = N_ENTER, s_steps: int = S_STEPS, check_every: int = 1, polish: bool = True,
          random_state=0, blocks: str = "auto",
          verbose: bool = False, name: str | None = None) -> Solution:
    """Orthogonal transfer (4) or a baseline of section 5 by dual block-coordinate ascent.

    Parameters
    ----------
    model : :class:`~hiercvx.models.orthogonal.PairModel` from
        ``hiercvx.models.orthogonal.prepare(X, y, H, method, K=..., alpha=...)``
    C : the C of (4) / (12) (the paper's C/N scaling is in the model's weights)
    K : (4)'s matrix over ``H.nodes[1:]`` instead of ``model.K`` (validated; orthogonal only)
    tol : stop when ``relative_gap(upper, lower, J(0)) <= tol`` (:func:`hiercvx.result.relative_gap`)
    max_iter : passes over the slacks; the ``ConvergenceWarning`` is issued when they run out
    n_enter : pairs entering a slack's working set per visit besides its support
    s_steps : accepted projected-gradient steps on S per pass (orthogonal transfer)
    check_every : least number of passes between certificates (more when a certificate costs
        more than a quarter of a pass, :class:`~hiercvx.solvers.primitives.CertificateSchedule`)
    polish : at a certificate where the support of alpha barely changed since the last one
        (at most ``SUPPORT_CHANGE`` of it, or ``SUPPORT_CHANGE_MIN`` pairs; or after
        ``STALL_PASSES`` passes without an attempt, doubled after each such), the final exact
        step: conjugate gradients on the dual restricted to that support with the tight
        budgets as equalities (``MAX_CG`` products), kept when it raises the certified lower
        bound
    random_state : seed of the order in which the slacks are visited
    blocks : ``"auto"``: a baseline whose regularizer is diagonal (``S = I``) and whose weight
        rows fall into blocks that no slack couples (HIERMULT: one Crammer-Singer problem
        per internal node) is solved block by block by the primal-dual interior point
        (:func:`hiercvx.solvers.interior_point.solve_pair_rows`) when every block is small
        (``BLOCK_IPM_DIM``), then certified as a whole; coordinate ascent takes over if that
        certificate misses ``tol``; FLATMULT (Crammer--Singer's problem) goes to
        :func:`hiercvx.solvers.crammer_singer.solve` the same way (``extras["route"]``:
        ``"blocks"``, ``"crammer_singer"`` or ``"coordinate"``).  ``"never"``: coordinate
        ascent only.  On the NHSVM
        balanced tree (depth 6, d = 200, 5000 samples) HIERMULT's coordinate ascent stopped at
        20000 passes with gap 2.2e-3 after 197 s
    verbose : log progress at INFO level (DEBUG otherwise)

    Returns
    -------
    :class:`~hiercvx.result.Solution`: ``weights`` ``(n_nodes, n_features)`` (rows in
    ``H.nodes`` order, zero outside ``var_nodes``; with the model's ``fit_intercept`` without
    the bias column, the biases in extras ``intercept`` ``(n_nodes,)``: the solver runs on
    ``model.X = [X, s]`` and splits ``W~ = [W, b / s]`` at the end), ``objective`` = (7)
    recomputed at the best certified ``W``, ``lower_bound`` = ``D(alpha, S)``; ``dual`` the pair multipliers (in
    ``model.data``'s pair order); extras ``dual_S`` (the S of the bound: dense ``(m, m)`` over
    ``var_nodes``, so that ``quadratic_lower_bound(model, res.dual, res.dual_S)`` recomputes it;
    sparse on K's pattern when ``m > 2000``), ``at_zero`` (J at ``W = 0``), ``K``, ``alpha``
    (heuristic (6)'s alpha after any lowering), ``n_passes``, ``n_newton`` (final-step
    attempts), ``n_rows_solved`` (the weight rows of the reduced problem,
    :func:`hiercvx.models.orthogonal.reduce_model`); ``history``: ``upper``,
    ``lower``, ``gap``, ``time`` per certificate.
    """
    t_start = time.perf_counter()
    C = check_positive(C, "C")
    check_iteration_options(tol, max_iter, who="orthogonal_dual.solve")
    if not isinstance(model, otm.PairModel):
        raise InputError("model must be a hiercvx.models.orthogonal.PairModel (build it with "
                         f"hiercvx.models.orthogonal.prepare(X, y, H, method)), got {type(model).__name__}")
    if model.method != "orthogonal":
        if K is not None:
            raise InputError(f"K is the matrix of orthogonal transfer (4); method={model.method!r} does "
                             "not take it: drop K or prepare the model with method='orthogonal'")
        K_used = None
    else:
        K_used = model.K if K is None else otm.validate_K(K, model.H)
    if blocks not in ("auto", "never"):
        raise InputError(f"blocks must be 'auto' or 'never', got {blocks!r}")
    for value, what in ((n_enter, "n_enter"), (check_every, "check_every")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{what} must be a positive integer, got {value!r}")
    if isinstance(s_steps, bool) or not isinstance(s_steps, (int, np.integer)) or s_steps < 0:
        raise InputError(f"s_steps must be a non-negative integer, got {s_steps!r}")
    log = logger.info if verbose else logger.debug
    # the rows the data use, interchangeable negatives merged: solved small, lifted exactly
    K_sparse = None if K_used is None else (model.sparse_K() if K is None else sp.csr_matrix(K_used))
    reduced = otm.reduce_model(model, K_sparse if model.method == "orthogonal" else model.S)
    small = model if reduced is None else reduced.model
    with blas_threads(1):
        prob = _Problem(small, C, small.sparse_K() if reduced is not None else K_sparse)
        out, route = None, "coordinate"
        if blocks == "auto":
            for route, shortcut in (("blocks", _solve_blocks), ("crammer_singer", _solve_flat)):
                out = shortcut(prob, float(tol), log, t_start)
                if out is not None:
                    break
        if out is not None and out[5]:
            pass
        else:
            route = "coordinate"
            out = _iterate(prob, float(tol), int(max_iter), int(n_enter), int(s_steps),
                           int(check_every), bool(polish), random_state, log, t_start)
    W, upper, lower, alpha, n_pass, converged, hist, at_zero, n_newton = out
    S_out = prob.S if prob.K is not None else prob.S_fixed
    if reduced is not None:
        W, alpha = reduced.lift_weights(W), reduced.lift_dual(alpha)
        S_out = reduced.lift_box(S_out, K_sparse) if prob.K is not None else sp.csr_matrix(model.S)
    S_out = S_out.toarray() if len(model.var_nodes) <= 2000 else S_out
    weights, intercept = model.split_weights(model.full_weights(W))
    res = Solution(weights=weights, objective=float(upper), lower_bound=float(lower),
                   solver="orthogonal_dual", n_iter=n_pass, converged=converged, tol=float(tol),
                   dual=alpha, history={k: np.asarray(v, dtype=float) for k, v in hist.items()},
                   solve_time=time.perf_counter() - t_start,
                   name=name or f"dual coordinate ascent for {model.method}",
                   extras={"at_zero": float(at_zero), "dual_S": S_out, "K": K_used,
                           "alpha": model.K_alpha if (model.method == "orthogonal" and K is None) else None,
                           "n_passes": n_pass, "n_newton": n_newton, "model": model,
                           "n_rows_solved": prob.m, "route": route,
                           **({"intercept": intercept} if model.fit_intercept else {})})
    res.warn_unless_converged("passes", stacklevel=2)
    log("%s", res)
    return res


def weight_blocks(prob: _Problem):
    """The weight rows of ``prob`` in blocks that no slack couples: ``(rows, slacks)`` per
    block with at least one slack, or ``None`` when the regularizer couples rows (orthogonal
    transfer, TRANSFER's ``I + E^T E``; a diagonal S, such as the merged rows of
    :func:`~hiercvx.models.orthogonal.reduce_model`, does not) or there is one block only.
    Rows of a block are connected through the pairs' coefficient rows ``Lam_pos - Lam_neg``;
    a slack's pairs share their positive class, so each slack lies in one block."""
    if prob.K is not None or (prob.S_fixed - sp.diags(prob.S_fixed.diagonal())).count_nonzero():
        return None
    R = abs(prob.Lam[prob.pair_pos] - prob.Lam[prob.pair_neg]).tocsr()     # (P, m)
    n_comp, label = connected_components(R.T @ R, directed=False)
    if n_comp < 2:
        return None
    has_pairs = np.diff(prob.pair_ptr) > 0
    first = R[prob.pair_ptr[:-1][has_pairs]]
    slack_block = np.full(prob.n_slacks, -1)
    slack_block[has_pairs] = label[first.indices[first.indptr[:-1]]]
    out = []
    for b in range(n_comp):
        slacks = np.flatnonzero(slack_block == b)
        if slacks.size:
            out.append((np.flatnonzero(label == b), slacks))
    return out


def _solve_blocks(prob: _Problem, tol, log, t_start):
    """Every block of :func:`weight_blocks` by the pair-rows interior point (``1/2 ||w'||^2 +
    sum budget_s xi_s``, rows ``(Lam_pos - Lam_neg) S^{-1/2}``, right-hand side 1, slack
    coefficient ``1 / Delta_p``: the model's constraints), then one certificate of the whole
    problem at the blocks' multipliers (``D(alpha, S)``) and the better of the blocks' weights
    and ``W(alpha)``.
    Returns :func:`_iterate`'s tuple, or ``None`` when the problem has no such blocks or one
    is too large."""
    found = weight_blocks(prob)
    if found is None:
        return None
    X = prob.model.X_slacks
    dim = X.shape[1]
    if any(len(rows) * dim > BLOCK_IPM_DIM or len(slacks) * dim > BLOCK_IPM_ENTRIES
           for rows, slacks in found):
        return None
    if sum(len(rows) for rows, _ in found) * dim <= BLOCK_IPM_DIM:
        # small enough for one Newton matrix: one interior point run instead of one per block
        # (each run's fixed cost dominated HIERMULT on the registry's n = 300 rows)
        found = [(np.concatenate([r for r, _ in found]), np.sort(np.concatenate([s for _, s in found])))]
    pair_slack = prob.model.data.pair_i
    # S = diag(s): in w' = sqrt(s) w the regularizer is 1/2 ||w'||^2 and a row's coefficients
    # are divided by sqrt(s)
    root_s = np.sqrt(prob.S_fixed.diagonal())
    R = ((prob.Lam[prob.pair_pos] - prob.Lam[prob.pair_neg]) @ sp.diags(1.0 / root_s)).tocsr()
    alpha = np.zeros(prob.n_pairs)
    W = np.zeros((prob.m, dim))
    counts = np.diff(prob.pair_ptr)
    n_steps = 0
    for rows, slacks in found:
        in_block = np.zeros(prob.n_slacks, dtype=bool)
        in_block[slacks] = True
        pairs = np.flatnonzero(in_block[pair_slack])
        F = X[slacks]
        F = F.toarray() if sp.issparse(F) else np.asarray(F, dtype=float)
        res = interior_point.solve_pair_rows(
            F, R[pairs][:, rows], np.r_[0, np.cumsum(counts[slacks])], np.ones(pairs.size),
            prob.cost[pairs], prob.budget[slacks], tol=min(1e-8, 0.01 * tol))
        alpha[pairs] = res.dual
        W[rows] = res.weights / root_s[rows, None]
        n_steps += res.n_iter
    return _certify_once(prob, alpha, W, n_steps, tol, t_start, log,
                         f"{len(found)} blocks by the interior point ({n_steps} Newton steps)")


def _certify_once(prob: _Problem, alpha, W, n_iter, tol, t_start, log, route_text):
    """One certificate of the whole problem for a route that solved it elsewhere: the bound
    ``D(alpha, S)`` at its multipliers, the objective at the better of its weights ``W`` and
    ``W(alpha)``.  Returns :func:`_iterate`'s tuple."""
    at_zero = prob.objective(np.zeros_like(W))
    W_alpha, upper_alpha, lower = prob.certify(alpha)
    upper = prob.objective(W)
    if upper_alpha < upper:
        upper, W = upper_alpha, W_alpha
    gap = relative_gap(upper, lower, at_zero)
    log("orthogonal_dual %s: %s, upper %.10g, lower %.10g, gap %.3e", prob.model.method,
        route_text, upper, lower, gap)
    hist = {"upper": [upper], "lower": [lower], "gap": [gap], "time": [time.perf_counter() - t_start]}
    return W, upper, lower, alpha, n_iter, reached(gap, tol), hist, at_zero, 0


def _flat_classes(prob: _Problem):
    """The weight row of every slack's positive class when ``prob`` is Crammer--Singer's
    problem (FLATMULT: ``S = I``, one weight row per class, unit costs, every slack paired
    with every other row), else ``None``."""
    if prob.K is not None or (prob.S_fixed - sp.identity(prob.m)).count_nonzero():
        return None
    used = np.unique(np.r_[prob.pair_pos, prob.pair_neg])
    if not (np.all(np.diff(prob.cls_ptr)[used] == 1) and np.all(prob.cls_val == 1.0)
            and np.all(prob.cost == 1.0)
            and np.all(np.diff(prob.pair_ptr) == prob.m - 1)):
        return None
    row = np.full(len(prob.cls_ptr) - 1, -1)
    row[used] = prob.cls_node[prob.cls_ptr[used]]  # class -> its one weight row
    pos, neg = row[prob.pair_pos], row[prob.pair_neg]
    first = prob.pair_ptr[:-1]
    y = pos[first]
    if np.any(pos != y[prob.model.data.pair_i]) or np.any(neg == pos):
        return None
    return y, neg


def _solve_flat(prob: _Problem, tol, log, t_start):
    """FLATMULT by the margin engine's Crammer--Singer solver
    (:func:`hiercvx.solvers.crammer_singer.solve`: closed-form blocks, shrinking, the face
    step), on the same features and per-example costs; certified here as a whole at its
    multipliers.  Returns :func:`_iterate`'s tuple, or ``None`` when ``prob`` is not
    Crammer--Singer's problem."""
    found = _flat_classes(prob)
    if found is None:
        return None
    y, neg = found
    X = prob.model.X_slacks
    model = mc_model.prepare(X, y, classes=np.arange(prob.m),
                             sample_weight=prob.budget / prob.C, check_input=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # certified below, as a whole
        res = crammer_singer.solve(model, prob.C, tol=0.1 * tol)
    d = model.data
    A = np.zeros((prob.n_slacks, prob.m))
    A[d.pair_i, d.pair_ybar] = res.dual
    alpha = A[prob.model.data.pair_i, neg]
    return _certify_once(prob, alpha, np.asarray(res.weights), res.n_iter, tol, t_start, log,
                         f"Crammer-Singer solver ({res.n_iter} passes)")


def _iterate(prob: _Problem, tol, max_iter, n_enter, s_steps, check_every, polish, random_state, log,
             t_start):
    m = prob.m
    rows = prob.rows
    d = rows.X.shape[1] if rows.mode == 0 else prob.model.X_slacks.shape[1]
    W = np.zeros((m, d))
    alpha = np.zeros(prob.n_pairs)
    used = np.zeros(prob.n_slacks)
    q = prob.Lam.shape[0]
    width = int(np.diff(prob.pair_ptr).max(initial=0))
    kmax = 0
    scratch = {"cscore": np.zeros(q), "cstamp": np.zeros(q, np.int64), "nscore": np.zeros(m),
               "nstamp": np.zeros(m, np.int64), "coef": np.zeros(m), "tstamp": np.zeros(m, np.int64),
               "touched": np.zeros(m, np.int64), "gall": np.zeros(max(width, 1)),
               "qall": np.zeros(max(width, 1))}
    ws_arrays = None
    rng = np.random.default_rng(random_state)
    at_zero = prob.objective(W)
    upper, lower, best = at_zero, 0.0, W
    hist = {k: [] for k in ("upper", "lower", "gap", "time")}
    eta = None
    converged = False
    eps = 0.0
    n_pass = 0
    blk = prob.blocks
    schedule = CertificateSchedule(check_every, prob.certificate_work())
    last_support, next_polish, backoff, n_newton, last_newton = None, 0, 1, 0, 0
    stall_wait = STALL_PASSES
    active = np.ones(prob.n_slacks, dtype=bool)
    slack_viol = np.zeros(prob.n_slacks)
    next_full, shrink_at = 0, 0.0
    while True:
        if schedule.due() or n_pass >= max_iter:
            schedule.certified()
            Wc, up, low = prob.certify(alpha)
            W = Wc  # resync: no drift of the incremental updates
            if up < upper:
                upper, best = up, Wc.copy()  # W is updated in place by the passes
            support = alpha > 0
            if (polish and n_pass > 0 and n_pass >= next_polish and last_support is not None
                    and not reached(relative_gap(upper, max(lower, low), at_zero), tol)
                    and (np.count_nonzero(support != last_support)
                         <= max(SUPPORT_CHANGE * support.sum(), SUPPORT_CHANGE_MIN)
                         or n_pass - last_newton >= stall_wait)):
                if n_pass - last_newton >= stall_wait:  # the stalled attempts thin out
                    stall_wait *= 2
                candidates, work = prob.newton_candidates(alpha, MAX_CG)
                n_newton += 1
                last_newton = n_pass
                improved = False
                for cand in candidates:
                    Wn, up_n, low_n = prob.certify(cand)
                    if up_n < upper:
                        upper, best = up_n, Wn.copy()
                    if low_n > low:
                        alpha[:] = cand
                        W, low, improved = Wn, low_n, True
                schedule.pass_work += work
                if improved:
                    used[:] = np.bincount(prob.model.data.pair_i, weights=alpha * prob.cost,
                                          minlength=prob.n_slacks)
                    support = alpha > 0
                    backoff = 1
                else:
                    backoff *= 2
                next_polish = n_pass + backoff
            last_support = support
            lower = max(lower, low)
            gap = relative_gap(upper, lower, at_zero)
            for key, val in (("upper", upper), ("lower", lower), ("gap", gap),
                             ("time", time.perf_counter() - t_start)):
                hist[key].append(val)
            log("orthogonal_dual %s: pass %d, upper %.10g, lower %.10g, gap %.3e",
                prob.model.method, n_pass, upper, lower, gap)
            if reached(gap, tol):
                converged = True
                break
        if n_pass >= max_iter:
            break
        n_pass += 1
        sup = np.bincount(prob.model.data.pair_i[alpha > 0], minlength=prob.n_slacks)
        k_need = int(sup.max(initial=0)) + n_enter
        if k_need > kmax:
            kmax = max(k_need, 2 * kmax)
            wide = max(kmax, width)  # a Crammer-Singer-shaped slack steps on all its pairs
            ws_arrays = {"ws": np.zeros(wide, np.int64), "Hk": np.zeros((kmax, kmax)), "gk": np.zeros(kmax),
                         "ak": np.zeros(wide), "ck": np.zeros(kmax)}
        full = active.all() or n_pass >= next_full
        if full:
            active[:] = True
            next_full = n_pass + FULL_EVERY
        order = rng.permutation(np.flatnonzero(active)).astype(np.int64)
        viol, _work = _sweep(order, rows.mode, rows.X, rows.indptr, rows.indices, rows.xvals, rows.K, W,
                             alpha, used, prob.budget, prob.cost, prob.sqn, prob.pair_ptr, prob.pair_pos,
                             prob.pair_neg, prob.cls_ptr, prob.cls_node, prob.cls_val, blk.node_block,
                             blk.node_pos, blk.blk_ptr, blk.blk_nodes, blk.q_off, blk.Qflat,
                             prob.class_gram, prob.use_gram, prob.cs_slack, n_enter, eps, 1e-12,
                             slack_viol, **scratch, **ws_arrays)
        schedule.passed(_work)
        # shrinking: until the next full pass, skip the slacks whose violation is small
        # against the pass's largest (the certificate, not the passes, decides convergence)
        if full:
            shrink_at = SHRINK * viol
        active &= slack_viol > shrink_at
        if not active.any():
            next_full = n_pass
        if prob.K is not None and s_steps > 0:
            if eta is None:
                norms = np.einsum("ij,ij->i", W, W)
                eta = 1.0 / max(float(norms.max(initial=0.0)), 1e-12)
            W, eta, s_work = prob.s_steps(W, eta, s_steps)
            schedule.pass_work += s_work
    if converged and n_pass > 0 and not np.any(best) and np.any(W):
        upper_last = prob.objective(W)
        if reached(relative_gap(upper_last, lower), tol):
            upper, best = upper_last, W.copy()
    return best, upper, lower, alpha, n_pass, converged, hist, at_zero, n_newton
