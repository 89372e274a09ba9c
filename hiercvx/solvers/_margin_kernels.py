"""Compiled kernels of the margin-family dual (:mod:`.margin_dual`, :mod:`.face`).

Each kernel is one loop over pairs or face rows, compiled in nopython mode and cached:

* :func:`scatter_coefficients`: the expansion coefficients ``G(alpha)`` of Cai's thesis
  (4.12), ``G[i, y] += alpha_p``, ``G[i, ybar] -= alpha_p`` for every pair ``p = (i, y, ybar)``;
* :func:`slacks_and_psi`: in one pass over the pairs, the slacks ``xi_i`` of the primal (4.10)
  and the violation scores ``psi_i = l_i - u_i`` of thesis (4.29)-(4.32);
* :func:`gram_scaled_products`: the entries ``K(i_r, i_t) z_r^T Q z_t`` of the face matrix
  (:mod:`.face`).

:data:`ROW_FASTMATH` are the flags of the compiled passes that call the shared row kernels
(:func:`~.primitives.row_dot`, :func:`~.primitives.row_axpy`): those are inlined into their
caller and compiled with its flags, and reassociation is what lets LLVM vectorize them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["ROW_FASTMATH", "gram_scaled_products", "scatter_coefficients", "slacks_and_psi"]

#: LLVM flags of the passes that inline the row kernels (reassociation vectorizes them)
ROW_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True)
def scatter_coefficients(alpha, pair_i, pair_y, pair_ybar, G):
    """``G[i, y] += alpha_p, G[i, ybar] -= alpha_p`` (thesis (4.12)), without np.add.at."""
    G[:, :] = 0.0
    for p in range(alpha.shape[0]):
        G[pair_i[p], pair_y[p]] += alpha[p]
        G[pair_i[p], pair_ybar[p]] -= alpha[p]


@njit(cache=True)
def slacks_and_psi(S, pairs, alpha, budget, slack, rtol, xi, psi):
    """The slacks ``xi_i`` (:func:`hiercvx.models.margin.slacks`) and the scores ``psi_i``
    (:func:`.margin_dual.violation_scores`) at the class scores ``S`` in one pass over the
    pairs, written to ``xi`` and ``psi``.

    ``pairs`` is ``(pair_ptr, pair_y, pair_ybar, loss, offset, cost)``; ``slack`` selects slack
    rescaling (``Delta_p (1 - <dPhi_p, w>)``) over margin rescaling (``Delta_p - <dPhi_p, w>``);
    an example's budget counts as not exhausted (``zeta_i > 0`` in (4.13)) below ``1 - rtol``
    of ``budget_i``."""
    pair_ptr, pair_y, pair_ybar, loss, offset, cost = pairs
    for i in range(pair_ptr.shape[0] - 1):
        x = 0.0
        lo = 0.0
        up = np.inf
        used = 0.0
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            diff = S[i, pair_y[p]] - S[i, pair_ybar[p]]
            v = loss[p] * (1.0 - diff) if slack else loss[p] - diff
            if v > x:
                x = v
            h = (offset[p] - diff) / cost[p]
            if h > lo:
                lo = h
            if alpha[p] > 0.0:
                used += cost[p] * alpha[p]
                if h < up:
                    up = h
        if used < budget[i] * (1.0 - rtol) and up > 0.0:
            up = 0.0
        if up == np.inf:
            up = 0.0
        xi[i] = x
        psi[i] = 0.0 if budget[i] <= 0.0 else lo - up


@njit(cache=True)
def gram_scaled_products(indptr, indices, values, ZQ_T, Kb, ir, it, G):
    """``G[r, t] = Kb[ir[r], it[t]] * (Z_r . ZQ_T[:, t])``: ``Z`` a CSR matrix of a few entries
    per row (``indptr``, ``indices``, ``values``), ``ZQ_T = (Z' Q)^T`` C-contiguous; each row
    of ``G`` is a few contiguous axpys, scaled by the rows' Gram entries in the same pass."""
    k_t = G.shape[1]
    for r in range(G.shape[0]):
        g = G[r]
        g[:] = 0.0
        for jj in range(indptr[r], indptr[r + 1]):
            z = values[jj]
            src = ZQ_T[indices[jj]]
            for t in range(k_t):
                g[t] += z * src[t]
        kr = Kb[ir[r]]
        for t in range(k_t):
            g[t] *= kr[it[t]]
