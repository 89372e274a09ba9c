"""The face system of the margin dual (:mod:`.margin_dual`, "The face step"): its rows, its
matrix and right-hand side by dense products, and a Cholesky factor that the face step's later
rounds reuse through a bordered update.

Rows.  On a face (support ``S``, tight examples ``T``) row ``r`` of ``E`` is ``e_p`` for a
face pair ``p`` that is not eliminated, minus ``(cost_p / cost_p0) e_p0`` when its example is
tight (``p0``: the example's first face pair, eliminated at
``a_fix = (C_i - sum_{p != p0} cost_p alpha_p) / cost_p0``).  A row belongs to one example
``i_r``, so with ``z_r = E_r D`` (``D``: the pairs' class differences ``e_y - e_ybar``; ``z``
has at most four entries)

    (E B E^T)_rt = K(i_r, i_t) z_r^T Q z_t,       (E (b - B a_fix))_r = E_r b - z_r^T Q t_{i_r},
    t_j = sum_{e eliminated} a_fix_e K(j, i_e) z_e

both from products (``Z (Z Q)^T``, four contiguous axpys per row, scaled by the rows' Gram
entries in the same pass: ``_margin_kernels.gram_scaled_products``).

Reuse.  A round of the face step corrects the previous face by a few percent of its rows, so
:class:`FaceSolver` keeps the last factor ``M0 = L L^T`` with its rows' keys.  A new face's
rows split into the common ones (the same definition, hence the same entries), the deleted
ones ``d`` and the new ones ``n``; its matrix is ``[[A, B], [B^T, D]]`` with ``A`` the common
block of ``M0``, and

    A^{-1} u = [L^{-T} (I - P_V) L^{-1} u~]_c,   P_V the projection onto V = L^{-1} E_d,
    S = D - B^T A^{-1} B = D - P^T P,           P = (I - P_V) L^{-1} B~

(``u~``: ``u`` on the common rows of ``M0``, 0 on the deleted ones; ``E_d`` the deleted rows'
unit vectors), so the update costs one forward substitution per deleted or new row (``m^2``
multiply-adds) and a QR of ``V``, where a factorization costs ``m^3 / 3`` (block
elimination with the Schur complement ``S`` of the common block).  Face matrices are singular
up to their ridge (degenerate faces), and this longer route rounds differently: its answer is
refined against the new system and kept only when its residual is as small as a fresh
factorization's; otherwise the round factors afresh.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from . import face_cg
from ._margin_kernels import gram_scaled_products
from .primitives import MODE_GRAM, blas_threads

logger = logging.getLogger(__name__)

__all__ = ["FaceRows", "FaceSolver", "Options", "face_rows"]


@dataclass(frozen=True)
class Options:
    """Settings of :class:`FaceSolver`.

    Attributes
    ----------
    ridge : float
        Relative ridge on the face matrix: ``(M + eps I) lam = rhs + eps lam_0`` picks, on a
        singular (degenerate) face, the maximizer nearest to the current point ``lam_0``; 1e-12
        is a few hundred roundings of the mean diagonal entry.
    threaded_rows : int
        Face matrices with at least this many rows are formed and factorized with every BLAS
        thread (below it, threads only synchronise).
    update_share : float
        A round reuses the last factor when its bordered solve costs at most this share of a
        fresh factorization (``m0^2`` per changed row against ``m^3 / 3``): the longer route
        must pay for its extra solves and refinement.
    update_rtol : float
        The bordered answer is kept when its residual against the new system is at most this,
        relative to ``|M| |lam| + |rhs|`` (a fresh Cholesky solve's accuracy).
    update_refine : int
        Iterative refinements of the bordered answer before it is dropped.
    cg : face_cg.Options
        The matrix-free route's settings (:class:`.face_cg.Options`): faces too large to form,
        linear models.
    """

    ridge: float = 1e-12
    threaded_rows: int = 1000
    update_share: float = 0.5
    update_rtol: float = 1e-12
    update_refine: int = 3
    cg: face_cg.Options = field(default_factory=face_cg.Options)


@dataclass(frozen=True)
class FaceRows:
    """The rows of ``E`` on a face (module docstring), in the face's pair order.

    ``pair``: each row's pair; ``first``: its example's eliminated pair (the row's own pair
    when the example is not tight); ``coef``: the coefficient on ``first`` (0 when not
    tight); ``elim`` / ``a_fix``: the eliminated pairs and their values; ``keys``: one integer
    per row that is equal exactly when two rows are (same pair, same eliminated pair)."""

    pair: np.ndarray
    first: np.ndarray
    coef: np.ndarray
    elim: np.ndarray
    a_fix: np.ndarray
    keys: np.ndarray

    @property
    def size(self) -> int:
        return int(self.pair.size)

    @classmethod
    def of_pairs(cls, pairs, n_pairs: int) -> "FaceRows":
        """One row per pair, nothing eliminated (every budget an inequality)."""
        pairs = np.asarray(pairs, dtype=np.int64)
        return cls(pairs, pairs, np.zeros(pairs.size), np.zeros(0, dtype=np.int64),
                   np.zeros(0), pairs * (n_pairs + 1))

    def subset(self, idx) -> "FaceRows":
        """The rows ``idx`` (no eliminated pairs: for the blocks of a bordered update)."""
        empty = np.zeros(0, dtype=np.int64)
        return FaceRows(self.pair[idx], self.first[idx], self.coef[idx], empty, np.zeros(0),
                        self.keys[idx])

    def scatter(self, lam, n_pairs: int) -> np.ndarray:
        """``alpha = a_fix + E^T lam`` over all ``n_pairs`` pairs."""
        out = np.zeros(n_pairs)
        out[self.elim] = self.a_fix
        np.add.at(out, self.pair, lam)
        np.add.at(out, self.first, lam * self.coef)
        return out


def face_rows(support, tight, pair_i, cost, budget) -> FaceRows:
    """The rows of the face (``support``: pairs with ``alpha_p > 0``; ``tight``: examples whose
    budget is held as an equality), pairs sorted by example as in the margin data."""
    face = np.flatnonzero(support)
    pi = pair_i[face]
    c = cost[face]
    start = np.ones(face.size, dtype=bool)
    start[1:] = pi[1:] != pi[:-1]
    p0 = np.flatnonzero(start)[np.cumsum(start) - 1]  # each face pair's first face pair
    elim = start & tight[pi]
    keep = ~elim
    is_tight = tight[pi[keep]]
    pair = face[keep].astype(np.int64)
    first = np.where(is_tight, face[p0[keep]], face[keep]).astype(np.int64)
    coef = np.where(is_tight, -c[keep] / c[p0[keep]], 0.0)
    elim_pairs = face[elim].astype(np.int64)
    a_fix = budget[pi[elim]] / c[elim]
    n_pairs = pair_i.size
    keys = pair * (n_pairs + 1) + np.where(is_tight, first + 1, 0)
    return FaceRows(pair, first, coef, elim_pairs, a_fix, keys)


class FaceSolver:
    """The face system of one margin model and the factor its rounds reuse.

    ``data``: the :class:`~hiercvx.models.margin.MarginData`; ``X`` the features or ``K`` the
    Gram matrix (``mode == MODE_GRAM``); ``Q`` the class Gram matrix.  :meth:`matrix` forms
    a face's matrix and right-hand side; :meth:`solve` solves ``(M + eps I) lam = rhs + eps
    lam_0`` by the last factor when the face changed little (module docstring), by a fresh
    one otherwise (which then becomes the last), or matrix-free (:mod:`.face_cg`).
    ``options``: :class:`Options`.  Counters: ``n_factor`` fresh factorizations, ``n_update``
    bordered solves kept, ``n_fallback`` bordered solves dropped, ``n_iterative`` matrix-free
    solves and ``n_products`` their products."""

    def __init__(self, data, mode: int, X, K, Q, options: Options | None = None):
        self.data, self.mode, self.X, self.K = data, mode, X, K
        self.options = Options() if options is None else options
        self.Q = np.ascontiguousarray(Q, dtype=float)
        self.offset = np.ascontiguousarray(data.pair_offset, dtype=float)
        self._base = None  # (keys, factor, M0 with its ridge, the ridge, M0's largest entry)
        self.n_factor = self.n_update = self.n_fallback = 0
        self.n_iterative = self.n_products = 0

    # -- the blocks --------------------------------------------------------------------------

    def _gram(self, ex_r, ex_t):
        """``K(ex_r, ex_t)`` dense."""
        if self.mode == MODE_GRAM:
            return np.ascontiguousarray(self.K[np.ix_(ex_r, ex_t)], dtype=float)
        Xr = self.X[ex_r]
        Xt = Xr if ex_t is ex_r else self.X[ex_t]
        Kb = Xr @ Xt.T
        return np.ascontiguousarray(Kb.toarray() if sp.issparse(Kb) else Kb, dtype=float)

    def _differences(self, pairs, scale):
        """``sum_j scale_j (e_y - e_ybar)`` of the pairs ``pairs[r, j]``, one row ``r`` each:
        a ``(k, q)`` CSR matrix (``pairs`` and ``scale`` of shape ``(k, w)``)."""
        data = self.data
        k, w = pairs.shape
        cols = np.stack([data.pair_y[pairs], data.pair_ybar[pairs]], axis=2).reshape(k, 2 * w)
        vals = np.stack([scale, -scale], axis=2).reshape(k, 2 * w)
        rows = np.repeat(np.arange(k), 2 * w)
        return sp.csr_matrix((vals.ravel(), (rows, cols.ravel())),
                             shape=(k, self.Q.shape[0]))

    def _row_vectors(self, rows: FaceRows):
        """``Z`` of the rows (module docstring) and their examples."""
        Z = self._differences(np.column_stack([rows.pair, rows.first]),
                              np.column_stack([np.ones(rows.size), rows.coef]))
        return Z, self.data.pair_i[rows.pair]

    def block(self, rows_r: FaceRows, rows_t: FaceRows | None = None) -> np.ndarray:
        """The face matrix's block ``(E B E^T)[r, t]`` between two row sets (``rows_t`` None:
        the symmetric block of ``rows_r``)."""
        Zr, er = self._row_vectors(rows_r)
        Zt, et = (Zr, er) if rows_t is None else self._row_vectors(rows_t)
        ur, ir = np.unique(er, return_inverse=True)
        ut, it = (ur, ir) if rows_t is None else np.unique(et, return_inverse=True)
        big = max(rows_r.size, Zt.shape[0]) >= self.options.threaded_rows
        with blas_threads(None if big else 1):
            Kb = self._gram(ur, ur if rows_t is None else ut)
        ZQ_T = np.ascontiguousarray(np.asarray(Zt @ self.Q).T)
        G = np.empty((rows_r.size, Zt.shape[0]))
        gram_scaled_products(Zr.indptr, Zr.indices, Zr.data, ZQ_T, Kb, ir.astype(np.int64),
                              it.astype(np.int64), G)
        return G

    def rhs(self, rows: FaceRows) -> np.ndarray:
        """``E (b - B a_fix)`` (module docstring)."""
        off = self.offset
        out = off[rows.pair] + rows.coef * off[rows.first]
        if rows.elim.size:
            Z, ex = self._row_vectors(rows)
            ue, ie = np.unique(self.data.pair_i[rows.elim], return_inverse=True)
            # per eliminated example: sum of a_fix_e (Q z_e) over its eliminated pairs
            Ze = self._differences(rows.elim[:, None], rows.a_fix[:, None])
            per_example = sp.csr_matrix((np.ones(ie.size), (ie, np.arange(ie.size))),
                                        shape=(ue.size, ie.size)) @ Ze
            ux, ix = np.unique(ex, return_inverse=True)
            T = self._gram(ux, ue) @ np.asarray(per_example @ self.Q)
            out -= np.asarray(Z.multiply(T[ix]).sum(axis=1)).ravel()
        return out

    def matrix(self, rows: FaceRows):
        """The face matrix (symmetric, no ridge) and its right-hand side."""
        return self.block(rows), self.rhs(rows)

    # -- solving -----------------------------------------------------------------------------

    def release(self):
        """Forget the last factor (its matrix and factor: ``2 m^2`` floats)."""
        self._base = None

    @functools.cached_property
    def Lam(self):
        """The class attributes as CSR, formed once for the matrix-free products (None: the
        model has a class kernel ``Q`` only)."""
        return None if self.data.Lam is None else sp.csr_matrix(self.data.Lam)

    @property
    def matrix_free(self) -> bool:
        """Whether :meth:`solve` can take the matrix-free route (linear features)."""
        return self.mode != MODE_GRAM

    def operator(self, rows: FaceRows) -> face_cg.FaceOperator:
        """The face matrix of ``rows`` as a :class:`.face_cg.FaceOperator` (linear models)."""
        Z, ex = self._row_vectors(rows)
        return face_cg.FaceOperator(Z, ex, self.X, self.Q, self.Lam)

    def rhs_matrix_free(self, rows: FaceRows, op: face_cg.FaceOperator) -> np.ndarray:
        """:meth:`rhs` without Gram blocks: ``E B a_fix`` through the class weights of the
        eliminated pairs (linear models)."""
        off = self.offset
        out = off[rows.pair] + rows.coef * off[rows.first]
        if rows.elim.size:
            Ze = self._differences(rows.elim[:, None], np.ones((rows.elim.size, 1)))
            elim = face_cg.FaceOperator(Ze, self.data.pair_i[rows.elim], self.X, self.Q,
                                        self.Lam)
            out = out - op.rows_at(elim.class_weights(rows.a_fix))
        return out

    def _iterative(self, rows: FaceRows, lam0) -> np.ndarray | None:
        """The face system by block-preconditioned conjugate gradients (:func:`.face_cg.solve`);
        None when the residual stays above ``cg.accept_rtol`` (an inconsistent system)."""
        op = self.operator(rows)
        rhs = self.rhs_matrix_free(rows, op)
        lam, res, n_iter = face_cg.solve(op, rhs, lam0, self.options.cg)
        self.n_iterative += 1
        self.n_products += n_iter
        logger.debug("face: %d rows by conjugate gradients, %d products, residual %.1e",
                     rows.size, n_iter, res)
        if res > self.options.cg.accept_rtol or not np.all(np.isfinite(lam)):
            return None  # an inconsistent system: not the optimum's face yet
        return lam

    def solve(self, rows: FaceRows, lam0, iterative: bool = False) -> np.ndarray | None:
        """``lam`` with ``(M + eps I) lam = rhs + eps lam0`` on the face ``rows`` (None when the
        matrix cannot be factorized); by the last factor when that is cheaper; ``iterative``:
        by conjugate gradients without forming ``M`` (``_iterative``, linear models)."""
        m = rows.size
        if m == 0:
            return np.zeros(0)
        if iterative:
            return self._iterative(rows, lam0)
        rhs = self.rhs(rows)
        if self._base is not None:
            lam = self._bordered(rows, rhs, lam0)
            if lam is not None:
                return lam
        return self._fresh(rows, rhs, lam0)

    def _fresh(self, rows, rhs, lam0):
        m = rows.size
        M = self.block(rows)
        diag = np.diag(M).copy()
        ridge = self.options.ridge * max(float(diag.mean()), np.finfo(float).tiny)
        for _ in range(4):  # a larger ridge when rounding leaves the matrix indefinite
            try:
                np.fill_diagonal(M, diag + ridge)
                with blas_threads(None if m >= self.options.threaded_rows else 1):
                    factor = sla.cho_factor(M, lower=True, check_finite=False)
                    lam = sla.cho_solve(factor, rhs + ridge * lam0, check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                ridge *= 100.0
                continue
            if not np.all(np.isfinite(lam)):
                return None
            self.n_factor += 1
            self._base = (rows.keys, factor, M, ridge, max(float(M.max()), -float(M.min())))
            return lam
        self._base = None
        return None

    def _bordered(self, rows, rhs, lam0):
        """The bordered solve by the last factor (module docstring), or None when the face
        changed too much or its answer does not reach ``options.update_rtol``."""
        opt = self.options
        keys0, factor, M0, ridge, m0_max = self._base
        m0, m1 = keys0.size, rows.size
        _, c0, c1 = np.intersect1d(keys0, rows.keys, assume_unique=True, return_indices=True)
        d = np.setdiff1d(np.arange(m0), c0, assume_unique=True)
        n = np.setdiff1d(np.arange(m1), c1, assume_unique=True)
        solves = d.size + n.size + 2 * opt.update_refine + 2
        if m0 * m0 * solves > opt.update_share * m1 ** 3 / 3.0:
            return None
        threads = None if m0 >= opt.threaded_rows else 1
        L = factor[0]  # its lower triangle (the upper one is M0's, untouched)

        def forward(U):  # L^{-1} U~, U over the common rows (in c1's order)
            Ut = np.zeros((m0,) + U.shape[1:])
            Ut[c0] = U
            return sla.solve_triangular(L, Ut, lower=True, check_finite=False)

        try:
            with blas_threads(threads):
                # the deleted rows: A^{-1} u = [L^{-T} (I - P_V) L^{-1} u~]_c, P_V the projection
                # onto V = L^{-1} E_d (orthogonal, by QR: S_d = V^T V may be ill-conditioned)
                if d.size:
                    Ed = np.zeros((m0, d.size))
                    Ed[d, np.arange(d.size)] = 1.0
                    V = sla.qr(sla.solve_triangular(L, Ed, lower=True, check_finite=False),
                               mode="economic", check_finite=False)[0]

                def project(Y):
                    return Y - V @ (V.T @ Y) if d.size else Y

                # the new rows: B^T A^{-1} B = P^T P with P = (I - P_V) L^{-1} B~
                if n.size:
                    new = rows.subset(n)
                    B = self.block(rows.subset(c1), new)
                    D = self.block(new)
                    D[np.diag_indices_from(D)] += ridge
                    P = project(forward(B))
                    Sn = sla.lu_factor(D - P.T @ P, check_finite=False)

                def solve_all(r):
                    x = np.empty(m1)
                    p = project(forward(r[c1]))
                    if n.size:
                        x[n] = sla.lu_solve(Sn, r[n] - P.T @ p, check_finite=False)
                        p -= P @ x[n]
                    x[c1] = sla.solve_triangular(L, p, lower=True, trans="T",
                                                 check_finite=False)[c0]
                    return x

                def apply(x):  # the new system's matrix (with the ridge) times x
                    xt = np.zeros(m0)
                    xt[c0] = x[c1]
                    out = np.empty(m1)
                    out[c1] = (M0 @ xt)[c0]
                    if n.size:
                        out[c1] += B @ x[n]
                        out[n] = B.T @ x[c1] + D @ x[n]
                    return out

                b = rhs + ridge * lam0
                lam = solve_all(b)
                scale = m0_max * np.abs(lam).max() + np.abs(b).max()
                for _ in range(opt.update_refine + 1):
                    res = b - apply(lam)
                    if np.abs(res).max() <= opt.update_rtol * scale:
                        self.n_update += 1
                        logger.debug("face: bordered solve, %d rows deleted, %d new, of %d; "
                                     "residual %.1e", d.size, n.size, m1,
                                     np.abs(res).max() / scale)
                        return lam
                    lam = lam + solve_all(res)
        except (np.linalg.LinAlgError, ValueError):
            res, scale = np.full(1, np.nan), 1.0
        self.n_fallback += 1
        logger.debug("face: bordered solve (%d rows deleted, %d new, of %d) dropped, residual "
                     "%.1e", d.size, n.size, m1, np.abs(res).max() / scale)
        return None
