"""Compiled kernels of the NHSVM pairwise sweeps with the weights stored by feature.

:func:`hiercvx.solvers._nhsvm_kernels.pairwise_sweep` visits blocks whose support covers most
nodes; each visit reads the products of every node's weights with its sample and adds a
rank-one change to them.  Stored by feature (``V^T``, ``(d, M)``) both are contiguous
multiply-adds over the nodes, one per feature (:func:`feature_products`,
:func:`feature_update`), and a batch of consecutive blocks takes them as two matrix products
(:func:`batch_products`, :func:`batch_update`), each block's scores corrected by the changes
of the blocks before it in the batch (:func:`batch_scores`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .primitives import row_dot

__all__ = ["feature_products", "feature_update", "batch_products", "batch_update",
           "batch_scores", "scale_scores"]

# Reassociation lets LLVM vectorize the loops over the nodes (inputs are finite).
_FAST = {"reassoc", "contract", "nsz"}


@njit(cache=True, fastmath=_FAST)
def feature_products(mode, F, i, X, indptr, indices, xvals, nodes, count, full, out):
    """``out[m] = sum_f F[f, m] x_if``: the node products with the weights stored by feature
    (``F`` ``(d, M)``; dense or CSR rows), for every node when ``full``, else for the first
    ``count`` nodes of ``nodes``.  Four features at a time: each pass over ``out`` then does
    four multiply-adds per load and store."""
    M = F.shape[1]
    if full:
        for m in range(M):
            out[m] = 0.0
    else:
        for q in range(count):
            out[nodes[q]] = 0.0
    start, stop = (0, X.shape[1]) if mode == 0 else (indptr[i], indptr[i + 1])
    e = start
    while e < stop:
        if e + 4 <= stop:
            if mode == 0:
                f0, f1, f2, f3 = e, e + 1, e + 2, e + 3
                x0, x1, x2, x3 = X[i, e], X[i, e + 1], X[i, e + 2], X[i, e + 3]
            else:
                f0, f1, f2, f3 = indices[e], indices[e + 1], indices[e + 2], indices[e + 3]
                x0, x1, x2, x3 = xvals[e], xvals[e + 1], xvals[e + 2], xvals[e + 3]
            if full:
                for m in range(M):
                    out[m] += F[f0, m] * x0 + F[f1, m] * x1 + F[f2, m] * x2 + F[f3, m] * x3
            else:
                for q in range(count):
                    m = nodes[q]
                    out[m] += F[f0, m] * x0 + F[f1, m] * x1 + F[f2, m] * x2 + F[f3, m] * x3
            e += 4
        else:
            f, x = (e, X[i, e]) if mode == 0 else (indices[e], xvals[e])
            if full:
                for m in range(M):
                    out[m] += F[f, m] * x
            else:
                for q in range(count):
                    out[nodes[q]] += F[f, nodes[q]] * x
            e += 1


@njit(cache=True, fastmath=_FAST)
def feature_update(mode, F, i, X, indptr, indices, xvals, nodes, count, full, coef):
    """``F[:, m] += coef[m] x_i`` with the weights stored by feature (``F`` ``(d, M)``; dense or
    CSR rows), over every node when ``full`` (``coef`` is then 0 off ``nodes``), else over the
    first ``count`` nodes of ``nodes``: one contiguous multiply-add over the nodes per
    feature."""
    M = F.shape[1]
    start, stop = (0, X.shape[1]) if mode == 0 else (indptr[i], indptr[i + 1])
    for e in range(start, stop):
        f, x = (e, X[i, e]) if mode == 0 else (indices[e], xvals[e])
        if x == 0.0:
            continue
        if full:
            for m in range(M):
                F[f, m] += coef[m] * x
        else:
            for q in range(count):
                m = nodes[q]
                F[f, m] += coef[m] * x


@njit(cache=True)
def batch_products(F, X, rows, nb, base, gram, xb):
    """For the ``nb`` dense rows ``X[rows[:nb]]`` (gathered into ``xb``): ``base[:nb] = xb F``
    with the weights stored by feature (``F`` ``(d, M)``; one matrix product, read once for
    the whole batch) and their Gram matrix ``gram[a, b] = x_a . x_b``."""
    for b in range(nb):
        xb[b, :] = X[rows[b], :]
    base[:nb] = np.dot(xb[:nb], F)
    gram[:nb, :nb] = np.dot(xb[:nb], xb[:nb].T)


@njit(cache=True)
def batch_update(F, nb, coefs, xb):
    """``F += xb[:nb]^T coefs[:nb]`` (one matrix product for the whole batch, the weights stored
    by feature); ``coefs`` is left 0."""
    F += np.dot(xb[:nb].T, coefs[:nb])
    coefs[:nb] = 0.0


@njit(cache=True, fastmath=_FAST, inline="always")
def batch_scores(i, pos, base, coefs, gram, rows, aux, sqa, Tf, inv2lam, s):
    """:func:`_block_scores` of block ``i``, at place ``pos`` of a batch, on every node: its
    product with ``V`` at the batch's start plus the changes of the blocks before it."""
    mode, Xd, indptr, indices, xvals, K = rows
    M = s.shape[0]
    ux = row_dot(mode, aux, 0, i, Xd, indptr, indices, xvals)
    for m in range(M):
        s[m] = base[pos, m]
    for a in range(pos):
        g = gram[a, pos]
        if g != 0.0:
            for m in range(M):
                s[m] += g * coefs[a, m]
    return scale_scores(i, sqa, Tf, inv2lam, ux, s), ux


@njit(cache=True, fastmath=_FAST, inline="always")
def scale_scores(i, sqa, Tf, inv2lam, ux, s) -> float:
    """Node products ``s = V x_i`` (every node) made scores in place,
    ``s = sqrt(alpha) (s - sqrt(alpha) u . x_i) / (2 lam)``; returns the true set's score
    ``t_i . s``."""
    own = 0.0
    for m in range(s.shape[0]):
        s[m] = sqa[m] * inv2lam * (s[m] - sqa[m] * ux)
        own += Tf[i, m] * s[m]
    return own
