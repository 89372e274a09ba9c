"""Compiled kernels of the margin family's interior point (:mod:`.interior_point`).

Loops over the pairs of each example, compiled in nopython mode and cached: the per-example
blocks ``T_i = B_i^T diag(D) B_i - v_i v_i^T / delta_i`` of the Newton matrix (for class
differences and for explicit pair rows), per-example sums and maxima over pairs, the scatter
of pair values into per-example class vectors (Cai thesis (4.12)), and the longest step to
the boundary of the positive orthant.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pack", "example_blocks", "pair_sums", "pair_max", "scatter", "row_blocks",
           "row_products", "row_scatter", "step_to_boundary", "feature_blocks"]


@njit(cache=True)
def pack(T, vk, inv, out):
    """The upper triangle of ``T - vk vk^T inv`` into ``out``, row by row (``np.triu_indices``)."""
    m = 0
    for a in range(T.shape[0]):
        va = vk[a] * inv
        for c in range(a, T.shape[0]):
            out[m] = T[a, c] - va * vk[c]
            m += 1


@njit(cache=True)
def example_blocks(lo, hi, ptr, py, pb, D, cD, delta, packed, T, v):
    """``T_i = B_i^T diag(D) B_i - v_i v_i^T / delta_i`` and ``v_i = B_i^T (c D)`` for the
    examples ``lo <= i < hi``: ``T_i``'s upper triangle (row by row, as ``np.triu_indices``)
    goes to ``packed[i - lo]``, ``v_i`` to ``v[i - lo]``; ``T`` ``(q, q)`` is scratch."""
    for i in range(lo, hi):
        k = i - lo
        T[:, :] = 0.0
        v[k, :] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            y, b, dp = py[p], pb[p], D[p]
            T[y, y] += dp
            T[b, b] += dp
            T[y, b] -= dp
            T[b, y] -= dp
            v[k, y] += cD[p]
            v[k, b] -= cD[p]
        pack(T, v[k], 1.0 / delta[i], packed[k])


@njit(cache=True)
def pair_sums(ptr, values, out):
    """``out_i = sum_{p of i} values_p``."""
    for i in range(ptr.shape[0] - 1):
        s = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            s += values[p]
        out[i] = s


@njit(cache=True)
def pair_max(ptr, values, out):
    """``out_i = max(0, max_{p of i} values_p)`` (the slacks)."""
    for i in range(ptr.shape[0] - 1):
        m = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            if values[p] > m:
                m = values[p]
        out[i] = m


@njit(cache=True)
def scatter(ptr, py, pb, values, G):
    """``G[i, y] += values_p, G[i, ybar] -= values_p`` (thesis (4.12))."""
    G[:, :] = 0.0
    for i in range(ptr.shape[0] - 1):
        for p in range(ptr[i], ptr[i + 1]):
            G[i, py[p]] += values[p]
            G[i, pb[p]] -= values[p]


@njit(cache=True)
def row_blocks(lo, hi, ptr, rptr, ridx, rval, D, cD, delta, packed, T, v):
    """As :func:`_example_blocks` for explicit sparse pair rows ``R`` (CSR ``rptr``, ``ridx``,
    ``rval``): ``T_i = R_i^T diag(D) R_i - v_i v_i^T / delta_i``, ``v_i = R_i^T (c D)``."""
    for i in range(lo, hi):
        k = i - lo
        T[:, :] = 0.0
        v[k, :] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            dp = D[p]
            for a in range(rptr[p], rptr[p + 1]):
                ia, va = ridx[a], rval[a]
                v[k, ia] += cD[p] * va
                for e in range(rptr[p], rptr[p + 1]):
                    T[ia, ridx[e]] += dp * va * rval[e]
        pack(T, v[k], 1.0 / delta[i], packed[k])


@njit(cache=True)
def row_products(pi, rptr, ridx, rval, S, out):
    """``out_p = R_p . S_{i(p)}``."""
    for p in range(pi.shape[0]):
        acc = 0.0
        for a in range(rptr[p], rptr[p + 1]):
            acc += rval[a] * S[pi[p], ridx[a]]
        out[p] = acc


@njit(cache=True)
def row_scatter(ptr, rptr, ridx, rval, values, G):
    """``G_i = sum_{p of i} values_p R_p``."""
    G[:, :] = 0.0
    for i in range(ptr.shape[0] - 1):
        for p in range(ptr[i], ptr[i + 1]):
            for a in range(rptr[p], rptr[p + 1]):
                G[i, ridx[a]] += values[p] * rval[a]


@njit(cache=True)
def step_to_boundary(alpha, dalpha, s, ds, xi, dxi, mu, dmu) -> float:
    """Largest ``t <= 1`` keeping ``alpha, s, xi, mu`` (all positive) non-negative."""
    t = 1.0
    for k in range(alpha.shape[0]):
        if dalpha[k] < 0.0 and t * dalpha[k] < -alpha[k]:
            t = -alpha[k] / dalpha[k]
        if ds[k] < 0.0 and t * ds[k] < -s[k]:
            t = -s[k] / ds[k]
    for k in range(xi.shape[0]):
        if dxi[k] < 0.0 and t * dxi[k] < -xi[k]:
            t = -xi[k] / dxi[k]
        if dmu[k] < 0.0 and t * dmu[k] < -mu[k]:
            t = -mu[k] / dmu[k]
    return t


@njit(cache=True)
def feature_blocks(ptr, rptr, ridx, rval, D, cD, delta, F2, B):
    """``B[j, k, :] += T_i[j, k] F2[i, :]`` over the examples: the ``d`` blocks ``sum_i
    F_ia^2 T_i`` ``(r, r)`` of the Newton matrix's feature-block diagonal, laid out ``(r, r,
    d)``, ``T_i = R_i^T diag(D) R_i - v_i v_i^T / delta_i`` formed on the nodes example i's
    rows touch (sparse pair rows ``R``: CSR ``rptr``, ``ridx``, ``rval``)."""
    r = B.shape[0]
    local = np.full(r, -1, dtype=np.int64)
    idx = np.empty(r, dtype=np.int64)
    T = np.zeros((r, r))
    v = np.zeros(r)
    for i in range(ptr.shape[0] - 1):
        m = 0
        for p in range(ptr[i], ptr[i + 1]):
            for a in range(rptr[p], rptr[p + 1]):
                j = ridx[a]
                if local[j] < 0:
                    local[j] = m
                    idx[m] = j
                    m += 1
        for x in range(m):
            v[x] = 0.0
            for y in range(m):
                T[x, y] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            dp, cp = D[p], cD[p]
            for a in range(rptr[p], rptr[p + 1]):
                la, va = local[ridx[a]], rval[a]
                v[la] += cp * va
                for e in range(rptr[p], rptr[p + 1]):
                    T[la, local[ridx[e]]] += dp * va * rval[e]
        inv = 1.0 / delta[i]
        for x in range(m):
            jx = idx[x]
            for y in range(m):
                t = T[x, y] - v[x] * v[y] * inv
                jy = idx[y]
                for f in range(F2.shape[1]):
                    B[jx, jy, f] += t * F2[i, f]
        for x in range(m):
            local[idx[x]] = -1
