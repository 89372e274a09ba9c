"""Compiled scatters of the RDA hinge (:mod:`hiercvx.solvers.rda`).

``U(alpha) = sum_p alpha_p (e_pos - e_neg) x_s^T`` over the pairs chosen at one step of
Algorithm 1 of Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML
2011 (the most violated pair of every slack, section 4.1).  Local loops rather than the shared
``primitives.row_axpy``: two calls per pair cost more than the scatter itself.
"""

from __future__ import annotations

from numba import njit

__all__ = ["scatter_dense", "scatter_csr"]


@njit(cache=True)
def scatter_dense(U, X, rows, pos, neg, alpha):
    """``U[pos_k] += alpha_k X[rows_k]``, ``U[neg_k] -= alpha_k X[rows_k]`` for every k."""
    for k in range(rows.shape[0]):
        x = X[rows[k]]
        a = alpha[k]
        up = U[pos[k]]
        un = U[neg[k]]
        for j in range(x.shape[0]):
            up[j] += a * x[j]
            un[j] -= a * x[j]


@njit(cache=True)
def scatter_csr(U, indptr, indices, data, rows, pos, neg, alpha):
    """The same for CSR rows ``(indptr, indices, data)``."""
    for k in range(rows.shape[0]):
        r = rows[k]
        a = alpha[k]
        for q in range(indptr[r], indptr[r + 1]):
            U[pos[k], indices[q]] += a * data[q]
            U[neg[k], indices[q]] -= a * data[q]
