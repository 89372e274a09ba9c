"""Compiled loops of the sibling-margin QP solvers (Wang, Shen & Pan, JMLR 12, 2011, (8)-(11)).

- the ALM's coordinate ascent on the dual (9)-(11): :func:`sweep` over examples, each block an
  exact budgeted QP by pairwise steps (:func:`block_qp`, :func:`block_violation`);
- the primal interior point's per-example products in reduced coordinates:
  :func:`example_sums` and :func:`schur_blocks`.

Pairs are stored example by example: ``pair_ptr[i]:pair_ptr[i + 1]`` are example ``i``'s
pairs ``p = (i, j_p, t_p)``, ``pos = j``, ``neg = t`` (grouped in :class:`PairIndex`).  The
policy that calls these loops lives in :mod:`.alm` and :mod:`.ipm`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..primitives import row_axpy, row_dot, select_pair

__all__ = ["PairIndex", "sweep", "block_qp", "block_violation", "incidence", "example_sums",
           "schur_blocks"]


class PairIndex(NamedTuple):
    """The pairs as the compiled loops read them: ``ptr`` ``(n + 1,)`` example offsets,
    ``pos`` and ``neg`` ``(P,)`` the winning node ``j`` and the beaten node ``t``."""

    ptr: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    @classmethod
    def of(cls, pair_i, pos, neg, n):
        """The index of the pairs ``(pair_i, pos, neg)`` (sorted by example) of ``n`` examples."""
        counts = np.bincount(pair_i, minlength=n)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        return cls(ptr, np.ascontiguousarray(pos, dtype=np.int64),
                   np.ascontiguousarray(neg, dtype=np.int64))

    def widest(self) -> int:
        """The largest number of pairs of one example (at least 1)."""
        return max(int(np.max(np.diff(self.ptr), initial=1)), 1)


@njit(cache=True)
def incidence(pos, neg, p, q):
    """``(e_{j_p} - e_{t_p}) . (e_{j_q} - e_{t_q})``."""
    return ((pos[p] == pos[q]) * 1.0 - (pos[p] == neg[q]) * 1.0
            - (neg[p] == pos[q]) * 1.0 + (neg[p] == neg[q]) * 1.0)


@njit(cache=True)
def block_violation(beta, p0, k, g, C):
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
def block_qp(beta, p0, k, index, g, curvature, C, eps, max_steps):
    """Exact block solve: ``max g.d - 1/2 d^T Q d`` over ``beta_i + d >= 0``,
    ``sum(beta_i + d) <= C`` with ``Q_pq = curvature * incidence(p, q)``.

    Pairwise steps between the most and least attractive variable (the budget slack is a
    variable of gradient 0), each an exact clipped line search, until the block violation
    is <= eps.  ``beta`` and ``g`` are updated in place; returns the number of steps.

    ``index``: :class:`PairIndex`.  This is
    :func:`~hiercvx.solvers.primitives.budget_qp` with ``Hk = curvature * incidence`` and unit
    costs, reading the incidence on the fly instead of a ``(k, k)`` Hessian written out for
    every block (the pairwise steps of Platt's SMO, Microsoft Research MSR-TR-98-14, 1998).
    """
    _, pos, neg = index
    used = 0.0
    for r in range(k):
        used += beta[p0 + r]
    slack = C - used
    if slack < 0.0:
        slack = 0.0
    mass = beta[p0:p0 + k]
    for step in range(max_steps):
        up, g_up, down, g_down = select_pair(g, mass, k, slack)
        if down == -2 or g_up - g_down <= eps:
            return step
        kappa = 0.0
        if up >= 0:
            kappa += curvature * incidence(pos, neg, p0 + up, p0 + up)
        if down >= 0:
            kappa += curvature * incidence(pos, neg, p0 + down, p0 + down)
        if up >= 0 and down >= 0:
            kappa -= 2.0 * curvature * incidence(pos, neg, p0 + up, p0 + down)
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
                h += incidence(pos, neg, p0 + r, p0 + up)
            if down >= 0:
                h -= incidence(pos, neg, p0 + r, p0 + down)
            g[r] -= t * curvature * h
    return max_steps


@njit(cache=True)
def sweep(order, rows, kdiag, index, F, b, resid, beta, rho, C, eps, max_steps, work):
    """One pass of block coordinate ascent on the ALM sub-problem over the examples ``order``.

    Example ``i``'s block is ``max_{beta_i in box} g.d - 1/2 d^T Q_i d`` with gradient
    ``g_p = 1 - m_p(f) - rho (r_j - r_t)`` and ``Q_i = (k(x_i, x_i) + rho) E_i^T E_i``
    (:func:`block_qp`); blocks whose violation is <= ``eps`` are skipped.  ``rows``: the
    inputs (:class:`~hiercvx.solvers.primitives.RowData`); ``kdiag`` ``k(x_i, x_i)``;
    ``index``: :class:`PairIndex`; ``F`` (node weights, or scores without bias for a kernel),
    ``b``, ``resid`` (the residual ``r`` of (10)) and ``beta`` are updated in place; ``work``:
    two scratch arrays of the largest block's length.  Returns (largest violation met, number
    of blocks changed)."""
    mode, X, indptr, indices, xvals, K = rows
    pair_ptr, pos, neg = index
    g, old = work
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
        viol = block_violation(beta, p0, k, g, C)
        if viol > worst:
            worst = viol
        if viol <= eps:
            continue
        block_qp(beta, p0, k, index, g, kdiag[i] + rho, C, 0.1 * eps, max_steps)
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


@njit(cache=True)
def example_sums(w, Delta, pair_ptr):
    """``sum_{p of i} w_p Delta_p`` per example ``i`` (pairs stored example by example):: the
    product ``Bm @ (w[:, None] * Delta)`` without a sparse call's overhead on small steps."""
    n = pair_ptr.shape[0] - 1
    out = np.zeros((n, Delta.shape[1]))
    for i in range(n):
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            if w[p] != 0.0:
                for a in range(Delta.shape[1]):
                    out[i, a] += w[p] * Delta[p, a]
    return out


@njit(cache=True)
def schur_blocks(Delta, w, w0, pair_ptr):
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
