"""Compiled kernels of the matrix-free face system (:mod:`.face_cg`): the product's scatter and
gather over the rows, the per-example diagonal blocks of the face matrix, their inverses, and
the block product that preconditions conjugate gradients."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["local_classes", "block_inverses", "block_apply", "scatter_rows", "gather_rows"]


@njit(cache=True)
def block_inverses(indptr, indices, values, Q, kdiag, starts, offsets, ridge):
    """Per example ``e`` (rows ``starts[e]:starts[e+1]``, which are contiguous) the inverse of
    ``kdiag[e] * Z_e Q Z_e^T + eps_e I`` by its Cholesky factor, packed row-major at
    ``offsets[e]`` (``offsets[e+1] - offsets[e] = k_e^2``; an inverse applies as one
    contiguous matrix-vector product).  ``Z`` is a CSR matrix of a few entries per row;
    ``eps_e = ridge * trace / k_e`` (the blocks of degenerate faces are singular; a
    preconditioner only needs them positive definite).  A block whose factorization breaks
    down is retried with a hundred times the ridge."""
    out = np.zeros(offsets[-1])
    for e in range(starts.size - 1):
        s0, s1 = starts[e], starts[e + 1]
        k = s1 - s0
        B = np.empty((k, k))
        for r in range(k):
            for t in range(r + 1):
                acc = 0.0
                for a in range(indptr[s0 + r], indptr[s0 + r + 1]):
                    qa = Q[indices[a]]
                    za = values[a]
                    for b in range(indptr[s0 + t], indptr[s0 + t + 1]):
                        acc += za * values[b] * qa[indices[b]]
                B[r, t] = acc * kdiag[e]
                B[t, r] = B[r, t]
        trace = 0.0
        for r in range(k):
            trace += B[r, r]
        eps = ridge * max(trace / max(k, 1), 1e-300)
        L = _cholesky(B, eps)
        while L[0, 0] != L[0, 0] and eps < 1e300:  # NaN marks a breakdown
            eps *= 100.0
            L = _cholesky(B, eps)
        Linv = np.zeros((k, k))  # L^{-1} by forward substitution, then L^{-T} L^{-1}
        for c in range(k):
            Linv[c, c] = 1.0 / L[c, c]
            for i in range(c + 1, k):
                v = 0.0
                for m in range(c, i):
                    v -= L[i, m] * Linv[m, c]
                Linv[i, c] = v / L[i, i]
        base = offsets[e]
        for r in range(k):
            for t in range(r, k):
                v = 0.0
                for m in range(t, k):
                    v += Linv[m, r] * Linv[m, t]
                out[base + r * k + t] = v
                out[base + t * k + r] = v
    return out


@njit(cache=True)
def _cholesky(B, eps):
    """Lower Cholesky factor of ``B + eps I``; ``L[0, 0]`` is NaN when a pivot is not
    positive."""
    k = B.shape[0]
    L = np.zeros((k, k))
    for j in range(k):
        d = B[j, j] + eps
        for m in range(j):
            d -= L[j, m] * L[j, m]
        if not d > 0.0:
            L[0, 0] = np.nan
            return L
        d = np.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, k):
            v = B[i, j]
            for m in range(j):
                v -= L[i, m] * L[j, m]
            L[i, j] = v / d
    return L


@njit(cache=True, fastmath=True)
def block_apply(inverses, starts, offsets, r, out):
    """``out = blockdiag(B_e)^{-1} r`` by the packed inverses of :func:`block_inverses`."""
    for e in range(starts.size - 1):
        s0 = starts[e]
        k = starts[e + 1] - s0
        base = offsets[e]
        for i in range(k):
            acc = 0.0
            row = base + i * k
            for m in range(k):
                acc += inverses[row + m] * r[s0 + m]
            out[s0 + i] = acc


@njit(cache=True)
def local_classes(indptr, indices, starts, n_classes):
    """Per example (rows ``starts[e]:starts[e+1]``) the classes its rows touch:
    ``(loc_ptr, loc_cls, ent_loc)`` with example ``e``'s classes ``loc_cls[loc_ptr[e]:
    loc_ptr[e+1]]`` and ``ent_loc[a]`` the position of entry ``a``'s class among them."""
    mark = np.full(n_classes, -1, dtype=np.int64)
    loc_ptr = np.zeros(starts.size, dtype=np.int64)
    loc_cls = np.empty(indices.size, dtype=np.int64)
    ent_loc = np.empty(indices.size, dtype=np.int64)
    k = 0
    for e in range(starts.size - 1):
        first = k
        for a in range(indptr[starts[e]], indptr[starts[e + 1]]):
            c = indices[a]
            if mark[c] < first:  # not seen in this example
                mark[c] = k
                loc_cls[k] = c
                k += 1
            ent_loc[a] = mark[c] - first
        loc_ptr[e + 1] = k
    return loc_ptr, loc_cls[:k], ent_loc


@njit(cache=True, fastmath=True)
def scatter_rows(indptr, values, starts, loc_ptr, loc_cls, ent_loc, Xe, lam, U):
    """``U = Z^T (lam * T)`` (``T_r`` the features of row r's example): per example the rows'
    class coefficients ``g`` over its own classes, then one axpy of its features per class
    (``U`` zeroed by the caller)."""
    d = Xe.shape[1]
    for e in range(starts.size - 1):
        base = loc_ptr[e]
        g = np.zeros(loc_ptr[e + 1] - base)
        for r in range(starts[e], starts[e + 1]):
            lr = lam[r]
            for a in range(indptr[r], indptr[r + 1]):
                g[ent_loc[a]] += values[a] * lr
        x = Xe[e]
        for c in range(g.size):
            gc = g[c]
            if gc != 0.0:
                u = U[loc_cls[base + c]]
                for j in range(d):
                    u[j] += gc * x[j]


@njit(cache=True, fastmath=True)
def gather_rows(indptr, values, starts, loc_ptr, loc_cls, ent_loc, Xe, V, out):
    """``out_r = z_r^T V x_(i_r)``: per example its classes' scores ``V_c . x`` once, then
    every row's few entries."""
    d = Xe.shape[1]
    for e in range(starts.size - 1):
        base = loc_ptr[e]
        x = Xe[e]
        s = np.empty(loc_ptr[e + 1] - base)
        for c in range(s.size):
            v = V[loc_cls[base + c]]
            acc = 0.0
            for j in range(d):
                acc += v[j] * x[j]
            s[c] = acc
        for r in range(starts[e], starts[e + 1]):
            acc = 0.0
            for a in range(indptr[r], indptr[r + 1]):
                acc += values[a] * s[ent_loc[a]]
            out[r] = acc
