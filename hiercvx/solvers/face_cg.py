"""The face system of the margin dual without forming it: block-preconditioned conjugate
gradients through the node weights.

:mod:`.face` forms the face matrix ``E B E^T`` (a row per support pair) and factorizes it.
On label sets the support holds tens of pairs per example -- thousands at a few hundred
examples, tens of thousands on a whole Clus-HMC dataset -- and that dense matrix no longer
fits.  With a linear kernel its product with a vector costs a pass over the rows instead:
with ``Z`` the rows' class-difference vectors (:mod:`.face`, module docstring), ``T`` the
rows' feature vectors ``x_(i_r)`` and ``Q`` the class Gram matrix,

    (E B E^T) lam = rowsum((Z V) * T),   V = Q U,   U = Z^T (lam * T)

(``U`` is the ``(q, d)`` class-weight matrix that ``alpha = E^T lam`` induces, thesis (4.12)),
``O(m d + q^2 d)`` per product (``O(m d + nnz(Lam) d)`` through the class attributes).

The face matrix is singular on degenerate faces, but its system is consistent where the face
is right (the restricted primal is feasible), and conjugate gradients converge there on the
range of the matrix.  They are preconditioned by the matrix's diagonal blocks of the examples
(``K_ii Z_i Q Z_i^T``, a few tens of rows each; their inverses by
``_face_cg_kernels.block_inverses``): exactly the coupling that one coordinate visit of the
passes resolves, so the preconditioned iteration is block Jacobi accelerated by conjugate
gradients (Saad, *Iterative Methods for Sparse Linear Systems*, 2nd ed., SIAM 2003, ch. 9-10).
On FunCat label sets it needs a few hundred products where the unpreconditioned iteration
needs a few thousand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._face_cg_kernels import (block_apply, block_inverses, gather_rows, local_classes,
                               scatter_rows)
from .primitives import conjugate_gradients

__all__ = ["Options", "FaceOperator", "solve"]


@dataclass(frozen=True)
class Options:
    """Settings of the matrix-free face solve.

    Attributes
    ----------
    rtol : float
        Conjugate gradients stop when the residual is at most this share of the right-hand
        side's norm (the face step then certifies its point on the full model: the accuracy of
        a dense solve is not needed, a duality gap of 1e-6 is).
    max_iter : int
        Products at most per solve (a face the passes have not identified needs no accurate
        solve: the face step's corrections change it anyway).
    diverged : float
        The iteration stops when the residual grows to this many times its smallest: the
        system is inconsistent (a wrong face: the restricted primal is infeasible), and the
        iterate with the smallest residual is returned for the face step's corrections.
    accept_rtol : float
        A solve that ends with a larger relative residual is refused (the face step ends): the
        system is inconsistent, so the face is not the optimum's yet, and the passes are the
        cheaper way to identify it.
    block_ridge : float
        Relative ridge of the diagonal blocks (singular on degenerate faces).
    expected_iter : int
        Products a solve is expected to take, for the face step's cost estimate before its
        first solve (then the mean of the solves so far: :meth:`.face_step.FaceStep.work`).
    """

    rtol: float = 1e-10
    max_iter: int = 2000
    diverged: float = 100.0
    accept_rtol: float = 1e-7
    block_ridge: float = 1e-10
    expected_iter: int = 400


class FaceOperator:
    """``E B E^T`` of one face (module docstring) on linear features ``X``.

    ``Z`` the rows' class differences (CSR ``(m, q)``), ``examples`` their examples (grouped:
    the rows of an example are contiguous), ``Q`` the class Gram matrix and ``Lam`` the class
    attributes (CSR, or None: ``Q`` is used).  The rows of one example share its features,
    so a product works per example on the classes its rows touch
    (``_face_cg_kernels.local_classes``): ``O(sum_e |classes_e| d)``."""

    def __init__(self, Z, examples, X, Q, Lam=None):
        Z = sp.csr_matrix(Z)
        self.shape = Z.shape
        ex = np.asarray(examples, dtype=np.int64)
        start = np.flatnonzero(np.r_[True, ex[1:] != ex[:-1]]) if ex.size else np.zeros(0, int)
        self.starts = np.r_[start, ex.size].astype(np.int64)
        Xe = X[ex[start]]
        self.Xe = np.ascontiguousarray(Xe.toarray() if sp.issparse(Xe) else Xe, dtype=float)
        self.indptr = Z.indptr.astype(np.int64)
        self.indices = Z.indices.astype(np.int64)
        self.values = np.ascontiguousarray(Z.data, dtype=float)
        self.local = local_classes(self.indptr, self.indices, self.starts, Z.shape[1])
        self.Q = np.ascontiguousarray(Q, dtype=float)
        self.Lam = Lam

    def class_weights(self, lam) -> np.ndarray:
        """``V = Q Z^T (lam * T)``: the class weights (times ``Q``) of ``alpha = E^T lam``."""
        U = np.zeros((self.shape[1], self.Xe.shape[1]))
        scatter_rows(self.indptr, self.values, self.starts, *self.local, self.Xe,
                     np.ascontiguousarray(lam, dtype=float), U)
        if self.Lam is not None:
            return np.ascontiguousarray(self.Lam @ (self.Lam.T @ U))
        return self.Q @ U

    def rows_at(self, V) -> np.ndarray:
        """``z_r^T V x_(i_r)`` for every row: the rows' margins at class weights ``V``."""
        out = np.empty(self.shape[0])
        gather_rows(self.indptr, self.values, self.starts, *self.local, self.Xe,
                    np.ascontiguousarray(V, dtype=float), out)
        return out

    def __matmul__(self, lam) -> np.ndarray:
        return self.rows_at(self.class_weights(lam))

    def block_preconditioner(self, ridge: float):
        """``r -> blockdiag(K_ii Z_i Q Z_i^T)^{-1} r`` over the examples' row blocks."""
        starts = self.starts
        sizes = np.diff(starts)
        offsets = np.r_[0, np.cumsum(sizes * sizes)].astype(np.int64)
        kdiag = np.einsum("ij,ij->i", self.Xe, self.Xe)
        inverses = block_inverses(self.indptr, self.indices, self.values, self.Q, kdiag, starts,
                                  offsets, ridge)

        def apply(r):
            out = np.empty_like(r)
            block_apply(inverses, starts, offsets, np.ascontiguousarray(r), out)
            return out

        return apply


def solve(op: FaceOperator, rhs, lam0, options: Options | None = None):
    """``lam`` with ``(E B E^T) lam = rhs`` by block-preconditioned conjugate gradients
    (:func:`.primitives.conjugate_gradients`) from ``lam0`` (no ridge: on a consistent
    singular system the iteration stays on ``lam0`` plus the matrix's range).  Returns
    ``(lam, relative residual, products)``: the iterate with the smallest residual, even short
    of ``rtol`` (the face step certifies it)."""
    opt = Options() if options is None else options
    lam0 = np.asarray(lam0, dtype=float)
    b = np.asarray(rhs, dtype=float)
    norm_b = float(np.linalg.norm(b))
    if norm_b == 0.0:
        return np.zeros_like(lam0), 0.0, 0
    r0 = b - op @ lam0
    norm_r0 = float(np.linalg.norm(r0))
    if norm_r0 <= opt.rtol * norm_b:
        return lam0.copy(), norm_r0 / norm_b, 1
    step, n_steps = conjugate_gradients(op.__matmul__, r0,
                                        op.block_preconditioner(opt.block_ridge),
                                        opt.rtol * norm_b / norm_r0, opt.max_iter,
                                        diverged=opt.diverged)
    lam = lam0 + step
    res = float(np.linalg.norm(b - op @ lam)) / norm_b
    return lam, res, n_steps + 2
