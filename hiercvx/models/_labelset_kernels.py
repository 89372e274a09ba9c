"""Compiled kernels of the loss-augmented oracle over label sets (the slacks of
:func:`hiercvx.models.margin.slacks` on data whose pairs are not listed, and the label-set
engine :mod:`hiercvx.solvers.labelset`).

For example i with relevant classes ``Y_i`` (the CSR lists ``rel_ptr``, ``rel``) and class
scores ``S_i`` the violation of a pair ``p = (i, y, ybar)``, ``y in Y_i``, ``ybar not in Y_i``,
is (Cai thesis (4.24); :mod:`hiercvx.models.margin`)::

    slack rescaling:   v_p = Delta(y, ybar) (1 - (S_iy - S_iybar))
    margin rescaling:  v_p = Delta(y, ybar) - (S_iy - S_iybar)

and the slack of (4.10) is ``xi_i = max(0, max_p v_p)``.  Both kernels loop over
``ybar`` (all classes not in ``Y_i``) and, for each, over ``y in Y_i``: ``O(|Y_i| q)`` per
example, never a list of pairs.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["most_violated", "soft_slacks", "violated_pairs"]


@njit(cache=True, inline="always")
def _violation(S, loss, i, y, ybar, slack):
    diff = S[i, y] - S[i, ybar]
    return loss[y, ybar] * (1.0 - diff) if slack else loss[y, ybar] - diff


@njit(cache=True)
def _best_per_irrelevant(S, rel_ptr, rel, loss, slack, i, value, arg):
    """For example ``i``: ``value[ybar] = max_y v_(i, y, ybar)`` over its relevant ``y`` and
    ``arg[ybar]`` the first ``y`` reaching it, for every irrelevant ``ybar`` (``value`` and
    ``arg`` come filled with ``-inf`` and ``-1``, left so for relevant classes and for an
    example without relevant classes)."""
    q = S.shape[1]
    lo, hi = rel_ptr[i], rel_ptr[i + 1]
    if hi == lo:
        return
    mask = np.zeros(q, dtype=np.bool_)
    for r in range(lo, hi):
        mask[rel[r]] = True
    for ybar in range(q):
        if mask[ybar]:
            continue
        for r in range(lo, hi):
            v = _violation(S, loss, i, rel[r], ybar, slack)
            if v > value[ybar]:
                value[ybar] = v
                arg[ybar] = rel[r]


@njit(cache=True, parallel=True)
def most_violated(S, rel_ptr, rel, loss, slack, best_y, best_ybar, best_v):
    """Per example the most violated pair ``(best_y, best_ybar)`` and its violation ``best_v``
    (the first in the order ``ybar``, then ``y`` among ties; ``-1, -1, -inf`` for an example
    without pairs: every class relevant, or none)."""
    n, q = S.shape
    for i in prange(n):
        value = np.full(q, -np.inf)
        arg = np.full(q, -1, dtype=np.int64)
        _best_per_irrelevant(S, rel_ptr, rel, loss, slack, i, value, arg)
        by, bb, bv = -1, -1, -np.inf
        for ybar in range(q):
            if value[ybar] > bv:
                by, bb, bv = arg[ybar], ybar, value[ybar]
        best_y[i], best_ybar[i], best_v[i] = by, bb, bv


@njit(cache=True, parallel=True)
def violated_pairs(S, rel_ptr, rel, loss, slack, floor, out_y, out_ybar):
    """Per example up to ``k = out_y.shape[1]`` pairs violated above ``floor[i]``: the ``k``
    irrelevant classes ``ybar`` with the largest ``max_y v_(i, y, ybar)``, each with its best
    ``y``, written to row i of ``out_y`` / ``out_ybar`` (``-1`` where fewer qualify).  Returns
    per example how many it wrote."""
    n, q = S.shape
    k = out_y.shape[1]
    count = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        value = np.full(q, -np.inf)
        arg = np.full(q, -1, dtype=np.int64)
        _best_per_irrelevant(S, rel_ptr, rel, loss, slack, i, value, arg)
        m = 0
        for _ in range(k):  # k small: k selections of the largest remaining
            best = -1
            bv = floor[i]
            for ybar in range(q):
                if value[ybar] > bv:
                    bv = value[ybar]
                    best = ybar
            if best < 0:
                break
            out_y[i, m], out_ybar[i, m] = arg[best], best
            value[best] = -np.inf
            m += 1
        for t in range(m, k):
            out_y[i, t], out_ybar[i, t] = -1, -1
        count[i] = m
    return count


@njit(cache=True, parallel=True)
def soft_slacks(S, rel_ptr, rel, loss, slack, budget, mu, G, linear):
    """Nesterov's soft maximum of every example's violations and of 0, over all its pairs
    without listing them: ``xi_i^mu = mu log(exp(0) + sum_p exp(v_p / mu))`` (an upper bound
    on ``xi_i`` by at most ``mu log(1 + P_i)``).  Returns ``sum_i budget_i xi_i^mu``; writes
    the soft multipliers' expansion coefficients into ``G`` ``(n, q)`` (per pair ``alpha_p =
    budget_i pi_p Delta_p`` for slack rescaling, ``budget_i pi_p`` for margin rescaling, ``pi``
    the soft-max weights) and each example's ``sum_p b_p alpha_p`` into ``linear`` (``b_p =
    Delta_p``): a dual feasible point of (4.15) and its linear term."""
    n, q = S.shape
    total = np.zeros(n)
    for i in prange(n):
        lo, hi = rel_ptr[i], rel_ptr[i + 1]
        G[i, :] = 0.0
        linear[i] = 0.0
        if hi == lo or hi - lo == q:
            continue
        mask = np.zeros(q, dtype=np.bool_)
        for r in range(lo, hi):
            mask[rel[r]] = True
        buf = np.empty((hi - lo, q))  # the violations, then their exponentials
        top = 0.0
        for r in range(lo, hi):
            for ybar in range(q):
                v = -np.inf if mask[ybar] else _violation(S, loss, i, rel[r], ybar, slack)
                buf[r - lo, ybar] = v
                top = max(top, v)
        inv_mu = 1.0 / mu
        z = np.exp(-top * inv_mu)
        for r in range(lo, hi):
            for ybar in range(q):
                t = (buf[r - lo, ybar] - top) * inv_mu
                e = np.exp(t) if t > -40.0 else 0.0  # exp(-40): below the sum's rounding
                buf[r - lo, ybar] = e
                z += e
        total[i] = budget[i] * (top + mu * np.log(z))
        scale = budget[i] / z
        for r in range(lo, hi):
            y = rel[r]
            for ybar in range(q):
                e = buf[r - lo, ybar]
                if e > 0.0:
                    delta = loss[y, ybar]
                    value = scale * e * (delta if slack else 1.0)
                    G[i, y] += value
                    G[i, ybar] -= value
                    linear[i] += value if slack else delta * value
    return total.sum()
