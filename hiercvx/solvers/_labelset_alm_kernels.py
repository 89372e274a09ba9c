"""Compiled kernels of the label-set proximal dual (:mod:`.labelset_alm`).

Example i's multipliers live in the budget set ``A_i = {a >= 0, sum_p c_p a_p <= beta_i}``
(the dual (4.15) of the Cai thesis: ``c_p = 1/Delta_p`` with slack rescaling, 1 with margin
rescaling, ``beta_i = C_i``).  The kernels project onto these sets and apply a generalized
Jacobian of that projection, example by example over the CSR pair lists ``ptr``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["project_budgets", "jacobian_apply", "pair_margins", "node_coefficients",
           "hessian_diagonal"]


@njit(cache=True)
def _project_one(v, cost, beta, lo, hi, alpha):
    """``alpha[lo:hi]`` = the Euclidean projection of ``v[lo:hi]`` onto ``A_i``; returns the
    budget's multiplier ``tau`` (0 when the budget is slack): ``alpha = max(v - tau c, 0)``."""
    used = 0.0
    for p in range(lo, hi):
        if v[p] > 0.0:
            used += cost[p] * v[p]
    tau = 0.0
    if used > beta:
        k = hi - lo
        t = np.empty(k)
        for j in range(k):
            t[j] = v[lo + j] / cost[lo + j]
        order = np.argsort(-t)
        scv, scc = 0.0, 0.0
        for j in range(k):
            p = lo + order[j]
            scv += cost[p] * v[p]
            scc += cost[p] * cost[p]
            cand = (scv - beta) / scc
            nxt = t[order[j + 1]] if j + 1 < k else 0.0
            if cand >= max(nxt, 0.0):
                tau = cand
                break
    for p in range(lo, hi):
        a = v[p] - tau * cost[p]
        alpha[p] = a if a > 0.0 else 0.0
    return tau


@njit(cache=True)
def project_budgets(v, ptr, cost, budget, alpha, tau):
    """Per example the projection of ``v`` onto ``A_i`` into ``alpha`` and its budget
    multiplier into ``tau`` (``tau[i] > 0``: the budget is tight)."""
    for i in range(ptr.size - 1):
        tau[i] = _project_one(v, cost, budget[i], ptr[i], ptr[i + 1], alpha)


@njit(cache=True)
def jacobian_apply(r, active, tau, ptr, cost, out):
    """``out = J r`` for a generalized Jacobian of the projection: on the pairs ``T_i`` of
    example i marked ``active`` the identity, minus ``c_T c_T^T / (c_T . c_T)`` when the
    budget is tight (``tau[i] > 0``); zero off ``T_i``."""
    for i in range(ptr.size - 1):
        cr, cc = 0.0, 0.0
        for p in range(ptr[i], ptr[i + 1]):
            if active[p]:
                cr += cost[p] * r[p]
                cc += cost[p] * cost[p]
        shift = cr / cc if (tau[i] > 0.0 and cc > 0.0) else 0.0
        for p in range(ptr[i], ptr[i + 1]):
            out[p] = r[p] - shift * cost[p] if active[p] else 0.0


@njit(cache=True)
def pair_margins(P, pi, py, pyb, lptr, lidx, lval, out):
    """``out_p = (Lam_y - Lam_ybar) . P[i]`` for node scores ``P = X W^T`` ``(n, M)`` and the
    class attributes ``Lam`` as CSR ``(lptr, lidx, lval)``: the pair margins ``z = B W``."""
    for p in range(pi.size):
        i, y, yb = pi[p], py[p], pyb[p]
        s = 0.0
        for k in range(lptr[y], lptr[y + 1]):
            s += lval[k] * P[i, lidx[k]]
        for k in range(lptr[yb], lptr[yb + 1]):
            s -= lval[k] * P[i, lidx[k]]
        out[p] = s


@njit(cache=True)
def node_coefficients(gamma, pi, py, pyb, lptr, lidx, lval, N):
    """``N[i] += gamma_p (Lam_y - Lam_ybar)`` over the pairs (``N`` ``(n, M)`` comes zeroed):
    ``B^T gamma = N^T X``."""
    for p in range(pi.size):
        g = gamma[p]
        if g == 0.0:
            continue
        i, y, yb = pi[p], py[p], pyb[p]
        for k in range(lptr[y], lptr[y + 1]):
            N[i, lidx[k]] += g * lval[k]
        for k in range(lptr[yb], lptr[yb + 1]):
            N[i, lidx[k]] -= g * lval[k]


@njit(cache=True)
def _scatter_pair(y, yb, lptr, lidx, lval, v, mark, idx, count):
    """``v += Lam_y - Lam_ybar`` (the pair's row ``a_p`` over the nodes), the nodes it touches
    for the first time (``mark`` False) marked and appended to ``idx`` after ``count``
    entries; returns the new count."""
    for c, sgn in ((y, 1.0), (yb, -1.0)):
        for k in range(lptr[c], lptr[c + 1]):
            m = lidx[k]
            if not mark[m]:
                mark[m] = True
                idx[count] = m
                count += 1
            v[m] += sgn * lval[k]
    return count


@njit(cache=True)
def hessian_diagonal(active, tau, ptr, cost, py, pyb, lptr, lidx, lval, D):
    """``D[i, m] = (A_i^T J_i A_i)[m, m]`` (``D`` ``(n, M)`` comes zeroed), ``A_i`` the rows
    ``a_p = Lam_y - Lam_ybar`` of example i's pairs and ``J_i`` the projection's Jacobian
    (:func:`jacobian_apply`): with ``X * X`` it gives the diagonal of ``B^T J B``, the
    conjugate gradients' preconditioner."""
    M = D.shape[1]
    v = np.zeros(M)  # a_p
    u = np.zeros(M)  # sum_T c_p a_p
    mark = np.zeros(M, dtype=np.bool_)
    touched = np.empty(M, dtype=np.int64)
    for i in range(ptr.size - 1):
        cc = 0.0
        n_touched = 0
        for p in range(ptr[i], ptr[i + 1]):
            if not active[p]:
                continue
            cc += cost[p] * cost[p]
            n_touched = _scatter_pair(py[p], pyb[p], lptr, lidx, lval, v, mark, touched, n_touched)
            for c in (py[p], pyb[p]):
                for k in range(lptr[c], lptr[c + 1]):
                    m = lidx[k]  # a node shared by y and ybar: its v[m] is taken once
                    D[i, m] += v[m] * v[m]
                    u[m] += cost[p] * v[m]
                    v[m] = 0.0
        for j in range(n_touched):
            m = touched[j]
            if tau[i] > 0.0 and cc > 0.0:
                D[i, m] -= u[m] * u[m] / cc
            u[m] = 0.0
            mark[m] = False


@njit(cache=True)
def _outer_add(B, v, idx, count, scale):
    for a in range(count):
        ja = idx[a]
        va = scale * v[ja]
        for b in range(count):
            B[ja, idx[b]] += va * v[idx[b]]


@njit(cache=True)
def node_curvature(active, tau, ptr, cost, py, pyb, lptr, lidx, lval, B, trace):
    """``B += sum_i A_i^T J_i A_i`` ``(M, M)`` and ``trace[i] = tr(A_i^T J_i A_i)``: the node
    factor of the Kronecker approximation ``sum_i x_i x_i^T (x) A_i^T J_i A_i`` of ``B^T J B``
    (rows ``a_p = Lam_y - Lam_ybar`` of example i's active pairs, ``J_i`` as in
    :func:`jacobian_apply`)."""
    M = B.shape[0]
    v = np.zeros(M)
    u = np.zeros(M)
    pmark = np.zeros(M, dtype=np.bool_)
    umark = np.zeros(M, dtype=np.bool_)
    pidx = np.empty(M, dtype=np.int64)
    uidx = np.empty(M, dtype=np.int64)
    for i in range(ptr.size - 1):
        cc, nu, tr = 0.0, 0, 0.0
        for p in range(ptr[i], ptr[i + 1]):
            if not active[p]:
                continue
            cc += cost[p] * cost[p]
            npair = _scatter_pair(py[p], pyb[p], lptr, lidx, lval, v, pmark, pidx, 0)
            _outer_add(B, v, pidx, npair, 1.0)
            for a in range(npair):
                m = pidx[a]
                tr += v[m] * v[m]
                if not umark[m]:
                    umark[m] = True
                    uidx[nu] = m
                    nu += 1
                u[m] += cost[p] * v[m]
                v[m] = 0.0
                pmark[m] = False
        if tau[i] > 0.0 and cc > 0.0:
            _outer_add(B, u, uidx, nu, -1.0 / cc)
            for a in range(nu):
                tr -= u[uidx[a]] * u[uidx[a]] / cc
        for a in range(nu):
            u[uidx[a]] = 0.0
            umark[uidx[a]] = False
        trace[i] = tr
