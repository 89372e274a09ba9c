"""Compiled loops of the hierarchical perceptrons (Cai, PhD thesis, Brown University, 2008, ch. 5).

The policy (which algorithm, which form, blocks of kernel rows, the update log's replay) is in
:mod:`hiercvx.solvers.perceptron`; here are the loops over examples and pairs:

* :func:`pick`: the pair of an example to update and its step (Algorithm 4, steps 4-5; Hieron's
  (7.8)-(7.9), thesis 7.5.2);
* :func:`primal_epoch`: one epoch of Algorithm 4 on the class weights ``U = Q G^T X``;
* :func:`dual_block`: Algorithm 5 on one block of kernel rows;
* :func:`minover_update` / :func:`minover_full`: Algorithm 7 with the margins ``T_p`` of (5.16)
  kept by (5.17);
* :func:`hinge_pass`: the slacks of the margin constraints (4.10) at given class scores.

The loops take small records (:class:`PairRule`, :class:`LogArrays`, :class:`MinoverPairs`,
and :class:`~hiercvx.solvers.primitives.RowData` for the features).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .primitives import MODE_DENSE

__all__ = ["PairRule", "LogArrays", "MinoverPairs", "pick", "log_update", "primal_epoch", "dual_block",
           "minover_update", "minover_full", "hinge_pass", "empty_log"]


class PairRule(NamedTuple):
    """How a pair is picked and how far ``w`` moves along it."""

    pos_ptr: np.ndarray   # (n + 1,) relevant classes of example i: pos_idx[pos_ptr[i]:pos_ptr[i+1]]
    pos_idx: np.ndarray
    loss: np.ndarray      # (q, q) Delta(y, ybar)
    qdist: np.ndarray     # (q, q) ||Lam_y - Lam_ybar||^2
    kdiag: np.ndarray     # (n,) k(x_i, x_i)
    Q: np.ndarray         # (q, q) class kernel Lam Lam^T
    hieron: bool          # Hieron's step (7.8) instead of Delta
    hinge: bool           # pick by Hieron's hinge instead of the smallest margin
    hinge_rtol: float     # a hinge pair is violated when sqrt(Delta) - margin > this * sqrt(Delta)
    weight: np.ndarray    # (n,) scale of example i's perceptron step (sample weights); 0: skipped


class LogArrays(NamedTuple):
    """The update log being written: visit number, example, pair, step size."""

    step: np.ndarray
    example: np.ndarray
    y: np.ndarray
    ybar: np.ndarray
    tau: np.ndarray


class MinoverPairs(NamedTuple):
    """Every pair of the margin model, for Minover."""

    i: np.ndarray
    y: np.ndarray
    ybar: np.ndarray
    loss: np.ndarray


def empty_log(size: int) -> LogArrays:
    """A log with room for ``size`` updates."""
    return LogArrays(np.zeros(size, np.int64), np.zeros(size, np.int64), np.zeros(size, np.int64),
                     np.zeros(size, np.int64), np.zeros(size))


@njit(cache=True)
def _select(s, i, rule, mark):
    """The pair of example i to update, from its class scores ``s``.

    ``mistake``: ``(argmin_{Y_i} s, argmax_{not Y_i} s)``, violated iff margin <= 0 (thesis
    Alg. 4 step 4-5).  ``hinge``: ``argmax_p sqrt(Delta_p) - margin_p``, violated iff
    ``> hinge_rtol sqrt(Delta_p)`` (batch Hieron).  Ties go to the first pair in (y, ybar)
    order.  Returns (y, ybar, margin, violated, mistake), ``mistake``: the smallest pair
    margin of the example is ``<= 0`` (the stopping rule's test, Alg. 6 step 12)."""
    pos_ptr, pos_idx, loss = rule.pos_ptr, rule.pos_idx, rule.loss
    q = s.shape[0]
    p0 = pos_ptr[i]
    p1 = pos_ptr[i + 1]
    for k in range(p0, p1):
        mark[pos_idx[k]] = 1
    by = -1
    bb = -1
    if rule.hinge:
        best = -np.inf
        low = np.inf
        for k in range(p0, p1):
            y = pos_idx[k]
            for r in range(q):
                if mark[r] == 0:
                    m = s[y] - s[r]
                    low = min(low, m)
                    v = np.sqrt(loss[y, r]) - m
                    if v > best:
                        best = v
                        by = y
                        bb = r
        # a Hieron step leaves its pair's hinge at exactly 0: count only what rounding cannot make
        violated = best > rule.hinge_rtol * np.sqrt(loss[by, bb])
        mistake = low <= 0.0
    else:
        lo = np.inf
        for k in range(p0, p1):
            y = pos_idx[k]
            if s[y] < lo:
                lo = s[y]
                by = y
        hi = -np.inf
        for r in range(q):
            if mark[r] == 0 and s[r] > hi:
                hi = s[r]
                bb = r
        violated = lo - hi <= 0.0
        mistake = violated
    for k in range(p0, p1):
        mark[pos_idx[k]] = 0
    return by, bb, s[by] - s[bb], violated, mistake


@njit(cache=True)
def _step_size(y, ybar, margin, rule, kii, wi):
    """``wi`` (the example's step scale) times ``Delta(y, ybar)`` (perceptron) or Hieron's (7.8)
    ``(sqrt(Delta) - margin) / ||dPhi||^2`` (0 when ``dPhi = 0``: no step can change the
    margin)."""
    if not rule.hieron:
        return wi * rule.loss[y, ybar]
    denom = rule.qdist[y, ybar] * kii
    if denom <= 0.0:
        return 0.0
    return wi * (np.sqrt(rule.loss[y, ybar]) - margin) / denom


@njit(cache=True)
def pick(s, i, rule, mark):
    """Example i's pair and step: ``(y, ybar, tau, violated, mistake)`` (the pair selection,
    then the step size when violated; ``tau = 0`` otherwise).  An example of weight 0 is
    neither updated nor counted.  ``mark`` is a zeroed ``(q,)`` work array."""
    wi = rule.weight[i]
    if wi <= 0.0:
        return -1, -1, 0.0, False, False
    y, yb, margin, violated, mistake = _select(s, i, rule, mark)
    if not violated:
        return y, yb, 0.0, False, mistake
    return y, yb, _step_size(y, yb, margin, rule, rule.kdiag[i], wi), True, mistake


@njit(cache=True)
def log_update(log, nu, step, i, y, yb, tau):
    """Record update ``nu`` (step, example, pair, size) for the replay; returns ``nu + 1``."""
    log.step[nu] = step
    log.example[nu] = i
    log.y[nu] = y
    log.ybar[nu] = yb
    log.tau[nu] = tau
    return nu + 1


@njit(cache=True)
def primal_epoch(order, rows, UT, rule, step0, log):
    """One epoch of Algorithm 4 (primal, linear kernel) on class weights ``UT = U^T`` ``(d, q)``;
    ``rows`` is :func:`~hiercvx.solvers.primitives.row_data`'s record.  Scoring and updating
    all q classes in one pass over ``x_i`` (``UT[k]`` contiguous) is faster than q calls of
    the shared ``row_dot`` / ``row_axpy``, so not shared.

    Returns ``(updates, violations, mistakes)``; updates are appended to ``log``."""
    mode, Xd, indptr, indices, vals = rows.mode, rows.X, rows.indptr, rows.indices, rows.xvals
    Q = rule.Q
    q = Q.shape[0]
    d = UT.shape[0]
    s = np.empty(q)
    c = np.empty(q)
    nzr = np.empty(q, dtype=np.int64)
    mark = np.zeros(q, dtype=np.uint8)
    nu = 0
    nv = 0
    nm = 0
    for t in range(order.shape[0]):
        i = order[t]
        s[:] = 0.0
        if mode == MODE_DENSE:
            for k in range(d):
                xk = Xd[i, k]
                if xk != 0.0:
                    for r in range(q):
                        s[r] += UT[k, r] * xk
        else:
            for kk in range(indptr[i], indptr[i + 1]):
                k = indices[kk]
                xk = vals[kk]
                for r in range(q):
                    s[r] += UT[k, r] * xk
        y, yb, tau, violated, mistake = pick(s, i, rule, mark)
        if mistake:
            nm += 1
        if not violated:
            continue
        nv += 1
        if tau == 0.0 and rule.hieron:
            continue
        # U += tau (Q[:, y] - Q[:, ybar]) x_i^T   (the update of (5.3), in class coordinates)
        m = 0
        for r in range(q):
            cr = tau * (Q[r, y] - Q[r, yb])
            if cr != 0.0:
                c[m] = cr
                nzr[m] = r
                m += 1
        if mode == MODE_DENSE:
            for k in range(d):
                xk = Xd[i, k]
                if xk != 0.0:
                    for a in range(m):
                        UT[k, nzr[a]] += c[a] * xk
        else:
            for kk in range(indptr[i], indptr[i + 1]):
                k = indices[kk]
                xk = vals[kk]
                for a in range(m):
                    UT[k, nzr[a]] += c[a] * xk
        nu = log_update(log, nu, step0 + t + 1, i, y, yb, tau)
    return nu, nv, nm


@njit(cache=True)
def dual_block(rows, Kb, cols, GQ, is_sv, rule, step0, log, nu0):
    """Algorithm 5 on one block of the visiting order: ``Kb[t, c] = k(x_rows[t], x_cols[c])``;
    scores ``s = sum_c Kb[t, c] (G Q)[cols[c]]`` over the support; updates ``(G Q)_i``.
    Returns ``(updates so far, violations in the block, mistakes in the block)``."""
    Q = rule.Q
    q = Q.shape[0]
    s = np.empty(q)
    mark = np.zeros(q, dtype=np.uint8)
    nu = nu0
    nv = 0
    nm = 0
    for t in range(rows.shape[0]):
        i = rows[t]
        s[:] = 0.0
        for c in range(cols.shape[0]):
            j = cols[c]
            if is_sv[j]:
                kij = Kb[t, c]
                if kij != 0.0:
                    for r in range(q):
                        s[r] += kij * GQ[j, r]
        y, yb, tau, violated, mistake = pick(s, i, rule, mark)
        if mistake:
            nm += 1
        if not violated:
            continue
        nv += 1
        if tau == 0.0 and rule.hieron:
            continue
        for r in range(q):
            GQ[i, r] += tau * (Q[y, r] - Q[yb, r])
        is_sv[i] = True
        nu = log_update(log, nu, step0 + t + 1, i, y, yb, tau)
    return nu, nv, nm


@njit(cache=True)
def minover_update(T, col, pairs, cvec, tau):
    """Thesis (5.17): ``T_p += tau k(x_i*, x_{i_p}) (c_{y_p} - c_{ybar_p})`` with
    ``c = Q[y*] - Q[ybar*]``; returns the new ``argmin_p T_p``."""
    pair_i, pair_y, pair_ybar = pairs.i, pairs.y, pairs.ybar
    best = 0
    lo = np.inf
    for p in range(T.shape[0]):
        kij = col[pair_i[p]]
        if kij != 0.0:
            T[p] += tau * kij * (cvec[pair_y[p]] - cvec[pair_ybar[p]])
        if T[p] < lo:
            lo = T[p]
            best = p
    return best


@njit(cache=True)
def minover_full(T, K, pairs, Q, it0, max_iter, log):
    """Algorithm 7 with a precomputed Gram matrix ``K``: the globally smallest margin ``T_p``
    (5.16) is corrected by a step ``pairs.loss[p]`` (``Delta_p``, times the example's step
    scale) until every ``T_p > 0``, from iteration ``it0`` (``T`` and ``log`` hold the earlier
    ones: a caller reporting progress runs it in chunks) to at most ``max_iter``; returns
    (iterations, converged)."""
    q = Q.shape[0]
    cvec = np.empty(q)
    best = 0
    lo = np.inf
    for p in range(T.shape[0]):
        if T[p] < lo:
            lo = T[p]
            best = p
    for it in range(it0, max_iter):
        if T[best] > 0.0:
            return it, True
        i = pairs.i[best]
        y = pairs.y[best]
        yb = pairs.ybar[best]
        tau = pairs.loss[best]
        for r in range(q):
            cvec[r] = Q[y, r] - Q[yb, r]
        log.example[it] = i
        log.y[it] = y
        log.ybar[it] = yb
        log.tau[it] = tau
        best = minover_update(T, K[i], pairs, cvec, tau)
    return max_iter, T[best] > 0.0


@njit(cache=True)
def hinge_pass(S, pair_ptr, pair_y, pair_ybar, pair_loss, slack_rescaling):
    """Per example i: ``xi_i = max(0, max_p v_p)`` with ``v_p = Delta_p (1 - m_p)`` (slack
    rescaling) or ``Delta_p - m_p`` (margin rescaling), and ``min_p m_p``; pairs by example."""
    n = pair_ptr.shape[0] - 1
    xi = np.zeros(n)
    worst = np.full(n, np.inf)
    for i in range(n):
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            m = S[i, pair_y[p]] - S[i, pair_ybar[p]]
            v = pair_loss[p] * (1.0 - m) if slack_rescaling else pair_loss[p] - m
            xi[i] = max(xi[i], v)
            worst[i] = min(worst[i], m)
    return xi, worst
