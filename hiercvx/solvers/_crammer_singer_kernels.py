"""Compiled kernel of the Crammer–Singer solver (:mod:`.crammer_singer`): one pass of the
sequential dual method (Keerthi, Sundararajan, Chang, Hsieh & Lin, KDD 2008), with
LIBLINEAR's shrinking of classes and examples, compiled in nopython mode and cached."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._margin_kernels import ROW_FASTMATH
from .primitives import MODE_CSR, MODE_DENSE, isotropic_budget_step, row_axpy, row_dot

__all__ = ["cs_sweep"]


@njit(cache=True, inline="always")
def _shrink_classes(classes, i, g, b, cap, k, g_min):
    """Move the classes at their cap whose gradient lies below ``g_min`` (they cannot rise
    at this visit, LIBLINEAR's shrinking) behind the first ``k`` of ``classes[i]`` (with
    their ``g``, ``b``, ``cap``); returns the number left in front."""
    t = 0
    while t < k:
        if b[t] >= cap[t] and g[t] < g_min:
            k -= 1
            m = classes[i, t]
            classes[i, t] = classes[i, k]
            classes[i, k] = m
            g[t], g[k] = g[k], g[t]
            b[t], b[k] = b[k], b[t]
            cap[t], cap[k] = cap[k], cap[t]
        else:
            t += 1
    return k


@njit(cache=True, fastmath=ROW_FASTMATH)
def cs_sweep(order, rows, W, beta, y, budget, sqnorm, eps, active, classes, n_active_classes):
    """One pass of sequential dual block coordinate descent over ``order`` (``rows``: the
    :class:`~.primitives.RowData` of the features); returns (largest violation met, visits,
    multiply-adds).  Each visited block is solved in closed form by
    :func:`~.primitives.isotropic_budget_step`.

    Shrinking (as in LIBLINEAR): a class at its cap whose gradient lies strictly below every
    class that could still decrease is moved behind ``n_active_classes[i]`` in the row
    ``classes[i]`` and skipped; an example left with one class is marked inactive.
    """
    mode, X, indptr, indices, xvals, K = rows
    q = W.shape[0]
    g = np.empty(q)
    b = np.empty(q)
    cap = np.empty(q)
    Bv = np.empty(q)
    D = np.empty(q)
    new = np.empty(q)
    psi_max = 0.0
    visits = 0
    work = 0.0
    for i in order:
        C_i = budget[i]
        if C_i <= 0.0:
            active[i] = 0
            continue
        y_i = y[i]
        k = n_active_classes[i]
        row = indptr[i + 1] - indptr[i] if mode == MODE_CSR else X.shape[1]
        work += k * row
        # gradient g_m = w_m . x_i + [m != y_i] over the unshrunk classes
        if mode == MODE_CSR:  # the switch outside the loop: row_dot then compiles per mode
            for t in range(k):
                g[t] = row_dot(MODE_CSR, W, classes[i, t], i, X, indptr, indices, xvals)
        else:
            for t in range(k):
                g[t] = row_dot(MODE_DENSE, W, classes[i, t], i, X, indptr, indices, xvals)
        g_max = -np.inf
        g_min = np.inf
        for t in range(k):
            m = classes[i, t]
            v = g[t]
            if m != y_i:
                v += 1.0
            g[t] = v
            b[t] = beta[i, m]
            cap[t] = C_i if m == y_i else 0.0
            if v > g_max:
                g_max = v
            if b[t] < cap[t] and v < g_min:
                g_min = v
        k = _shrink_classes(classes, i, g, b, cap, k, g_min)
        n_active_classes[i] = k
        psi = g_max - g_min
        if psi > psi_max:
            psi_max = psi
        if k <= 1:
            active[i] = 0
            continue
        if psi <= eps:
            continue
        visits += 1
        isotropic_budget_step(g, b, cap, k, C_i, sqnorm[i], Bv, D, new)
        for t in range(k):
            step = new[t] - b[t]
            if step != 0.0:
                m = classes[i, t]
                beta[i, m] = new[t]
                work += row
                if mode == MODE_CSR:
                    row_axpy(MODE_CSR, W, m, i, step, X, indptr, indices, xvals, K)
                else:
                    row_axpy(MODE_DENSE, W, m, i, step, X, indptr, indices, xvals, K)
    return psi_max, visits, work
