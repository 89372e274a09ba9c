"""Compiled stump search over sparse columns (AdaBoost.MH, :mod:`hiercvx.estimators.boosting`).

A column of a sparse ``X`` is held as its nonzero entries only, sorted increasingly (stable:
ties keep their row order); its ``m - nnz`` zeros are one group of tied values at 0 that sits
between the negative and the positive entries.  The sweep visits the candidate splits in the
order the dense sweep visits them (increasing threshold) and the prefix sum of the zero group
is the total minus the positive entries, so one column costs ``O(nnz k + k)`` instead of
``O(m k)``, and the memory is ``O(nnz)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _consider(j, lower, upper, total, prefix, best, best_edges):
    """Score the split between the values ``lower < upper`` of feature ``j`` whose left side
    has the signed-weight sums ``prefix``; keep it in ``best = [gamma, feature, threshold]``
    if it beats the best one by more than rounding (ties keep the earlier split)."""
    k = total.shape[0]
    gamma = 0.0
    for l in range(k):
        gamma += abs(total[l] - 2.0 * prefix[l])
    if gamma > best[0] * (1.0 + 1e-12) + 1e-300:
        best[0] = gamma
        best[1] = j
        best[2] = 0.5 * (lower + upper)
        for l in range(k):
            best_edges[l] = total[l] - 2.0 * prefix[l]


@njit(cache=True)
def _sweep(j, lo, hi, values, rows, R, total, prefix, prev, have_prev, best, best_edges):
    """Walk the sorted entries ``lo:hi`` of feature ``j``, scoring the split before each new
    value and adding each entry's row to ``prefix``; returns the last value seen."""
    k = R.shape[1]
    for t in range(lo, hi):
        v = values[t]
        if have_prev and v > prev:
            _consider(j, prev, v, total, prefix, best, best_edges)
        i = rows[t]
        for l in range(k):
            prefix[l] += R[i, l]
        prev = v
        have_prev = True
    return prev, have_prev


@njit(cache=True)
def best_sparse_stump(indptr, values, rows, R):
    """Best stump for the signed weights ``R = D * C`` ``(m, k)`` over the sparse columns
    ``values[indptr[j]:indptr[j + 1]]`` (nonzeros sorted increasingly, their rows in
    ``rows``).  Returns ``(feature, threshold, edges)`` as the dense search does, with the
    same candidates in the same order and the same tie rule."""
    m, k = R.shape
    n_feat = indptr.shape[0] - 1
    total = np.zeros(k)
    for i in range(m):
        for l in range(k):
            total[l] += R[i, l]
    best = np.array([0.0, -1.0, -np.inf])
    for l in range(k):
        best[0] += abs(total[l])
    best_edges = total.copy()
    prefix = np.empty(k)
    for j in range(n_feat):
        lo, hi = indptr[j], indptr[j + 1]
        if lo == hi:
            continue  # all zeros: a single value, no split
        prefix[:] = 0.0
        first_pos = lo
        while first_pos < hi and values[first_pos] < 0.0:
            first_pos += 1
        prev, have_prev = _sweep(j, lo, first_pos, values, rows, R, total, prefix,
                                 0.0, False, best, best_edges)
        if m > hi - lo:  # the zeros: one group of tied values between negatives and positives
            if have_prev:
                _consider(j, prev, 0.0, total, prefix, best, best_edges)
            for l in range(k):
                prefix[l] = total[l]
            for t in range(first_pos, hi):
                i = rows[t]
                for l in range(k):
                    prefix[l] -= R[i, l]
            prev, have_prev = 0.0, True
        _sweep(j, first_pos, hi, values, rows, R, total, prefix, prev, have_prev,
               best, best_edges)
    return int(best[1]), best[2], best_edges
