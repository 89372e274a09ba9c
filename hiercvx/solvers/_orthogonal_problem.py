"""The problem that the dual coordinate ascent of :mod:`hiercvx.solvers.orthogonal_dual` works on.

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011: every
problem of the paper, (4) and the baselines of section 5, is the pairwise hinge of a
:class:`~hiercvx.models.orthogonal.PairModel` plus ``R(W) = max_{S in box} 1/2 tr(W^T S W)``
(the box of K for (4), one fixed PD ``S`` for a baseline), with the dual

    D(alpha, S) = sum_p alpha_p - 1/2 tr(U(alpha)^T S^{-1} U(alpha)),   W = S^{-1} U.

:class:`BlockInverse` keeps ``S^{-1}`` block by block over the connected components of the
pattern of ``S`` (:func:`hiercvx.models.orthogonal.coupled_blocks`): a star costs ``O(m)``, a
tree the sum of its top-level subtrees' cubes.  :class:`Problem` holds one model at one C:
the records of the compiled pass (:mod:`hiercvx.solvers._orthogonal_kernels`), the certificate
(objective (7) at ``W``, lower bound ``D(alpha, S)``), the final exact step on the support of
alpha (projected conjugate gradients, S fixed) and the projected-gradient steps on ``S``
(orthogonal transfer: gradient ``<w_i, w_j>`` on K's off-diagonal pattern, Armijo step).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..exceptions import InputError
from ..models import margin
from ..models import orthogonal as otm
from . import _orthogonal_kernels as kern
from .margin_dual import scatter_coefficients
from .primitives import row_data, row_sq_norms
from .rda import Hinge

__all__ = ["BlockInverse", "Problem"]


class BlockInverse:
    """``Q = S^{-1}`` for symmetric PD matrices ``S`` with one fixed sparsity ``pattern`` (CSR,
    diagonal stored), block by block over the connected components of the pattern
    (:func:`hiercvx.models.orthogonal.coupled_blocks`; isolated rows are blocks of size 1).
    :meth:`factor` takes ``S`` as the ``data`` array of the pattern.  The flat layout
    (``node_block``, ``node_pos``, ``blk_ptr``, ``blk_nodes``, ``q_off``, ``Qflat``) is what
    the compiled pass reads: ``Q[u, v] = Qflat[q_off[b] + node_pos[u] * size_b + node_pos[v]]``
    when u and v are in block b, 0 otherwise.  Blocks of at most ``small_block`` rows are
    factored by a compiled Cholesky loop (``invert_small_blocks``),
    larger ones by LAPACK."""

    def __init__(self, pattern, small_block: int = 64):
        pattern = sp.csr_matrix(pattern)
        pattern.sort_indices()
        self.pattern = pattern
        m = pattern.shape[0]
        isolated, blocks = otm.coupled_blocks(pattern)
        iso = np.flatnonzero(isolated)
        self.m = m
        self.blocks = blocks
        groups = [iso[k:k + 1] for k in range(len(iso))] + list(blocks)
        sizes = np.array([len(g) for g in groups], dtype=np.int64)
        self.sizes = sizes
        self.node_block = np.zeros(m, dtype=np.int64)
        self.node_pos = np.zeros(m, dtype=np.int64)
        self.blk_ptr = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.blk_ptr[1:])
        self.blk_nodes = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)
        self.q_off = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(sizes * sizes, out=self.q_off[1:])
        for b, g in enumerate(groups):
            self.node_block[g] = b
            self.node_pos[g] = np.arange(len(g))
        self.Qflat = np.zeros(int(self.q_off[-1]))
        self._Qwork = np.zeros_like(self.Qflat)
        rows = np.repeat(np.arange(m), np.diff(pattern.indptr))
        cols = pattern.indices
        if np.any(np.bincount(rows[rows == cols], minlength=m) == 0):
            raise InputError("the pattern must store its diagonal")
        # per block: the data positions of its entries and their flat positions in the block
        blk = self.node_block[rows]
        order = np.argsort(blk, kind="stable")
        self.sc_at = order.astype(np.int64)
        self.sc_flat = (self.node_pos[rows[order]] * sizes[blk[order]] + self.node_pos[cols[order]]).astype(np.int64)
        self.sc_ptr = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum(np.bincount(blk, minlength=len(groups)), out=self.sc_ptr[1:])
        self.small = np.flatnonzero(sizes <= small_block).astype(np.int64)
        self.large = np.flatnonzero(sizes > small_block)
        self._A = np.zeros(int(min(sizes.max(initial=1), small_block) ** 2))

    @property
    def work(self) -> float:
        """Multiply-adds of one factorization and inverse."""
        return float(np.sum(self.sizes.astype(float) ** 3))

    @property
    def apply_work(self) -> float:
        """Multiply-adds of ``Q u`` for one column ``u``."""
        return float(np.sum(self.sizes.astype(float) ** 2))

    def factor(self, data) -> bool:
        """``Q = S^{-1}`` for ``S`` given as the pattern's ``data``.  False (``Q`` unchanged)
        when ``S`` is not positive definite."""
        data = np.ascontiguousarray(data, dtype=float)
        out = self._Qwork
        if not kern.invert_small_blocks(data, self.small, self.blk_ptr, self.q_off, self.sc_ptr, self.sc_at,
                                        self.sc_flat, out, self._A):
            return False
        for b in self.large:
            k = int(self.sizes[b])
            A = np.zeros(k * k)
            at = slice(self.sc_ptr[b], self.sc_ptr[b + 1])
            A[self.sc_flat[at]] = data[self.sc_at[at]]
            try:
                c = sla.cho_factor(A.reshape(k, k), lower=True, check_finite=False)
            except np.linalg.LinAlgError:
                return False
            out[self.q_off[b]:self.q_off[b + 1]] = sla.cho_solve(c, np.eye(k), check_finite=False).ravel()
        self._Qwork, self.Qflat = self.Qflat, out
        return True

    def solve(self, U: np.ndarray) -> np.ndarray:
        """``S^{-1} U`` with the last factorization."""
        U = np.ascontiguousarray(U, dtype=float)
        Z = np.empty_like(U)
        kern.apply_blocks(self.Qflat, self.blk_ptr, self.blk_nodes, self.q_off, U, Z)
        return Z


    def records(self) -> kern.QBlocks:
        """The layout of the current ``Q`` for the compiled loops (``Qflat`` changes with
        every :meth:`factor`: take the record after it)."""
        return kern.QBlocks(self.node_block, self.node_pos, self.blk_ptr, self.blk_nodes, self.q_off, self.Qflat)


class Problem:
    """One model at one C: the records the compiled pass reads, ``S`` and its inverse by
    blocks, and the pieces of the certificate (``U(alpha)``, ``W = S^{-1} U``, the objective
    (7) and the bound ``D(alpha, S)``), the final conjugate-gradient step and the projected
    gradient step on ``S``.

    Parameters
    ----------
    model : :class:`~hiercvx.models.orthogonal.PairModel` (slack rescaling)
    C : the C of (4) / (12)
    K : (4)'s matrix over the model's weight rows (orthogonal transfer), or ``None``
    gram_max_classes : the classes' Gram matrix ``Lam S^{-1} Lam^T`` is formed up to this many
        classes (TREELOSS under a fixed S)
    small_block : :class:`BlockInverse`'s limit of the compiled factorization
    """

    def __init__(self, model: otm.PairModel, C: float, K, *, gram_max_classes: int = 3000,
                 small_block: int = 64):
        d = model.data
        if d.rescaling != "slack":
            raise InputError("the orthogonal-transfer models use slack rescaling; got margin rescaling")
        self.model = model
        self.C = C
        var = np.asarray(model.var_nodes)
        self.m = len(var)
        Lam = sp.csr_matrix(d.Lam)[:, var]  # classes -> weight rows
        Lam.eliminate_zeros()
        Lam.sort_indices()
        self.Lam = Lam
        self.cls_ptr = Lam.indptr.astype(np.int64)
        self.cls_node = Lam.indices.astype(np.int64)
        self.cls_val = Lam.data.astype(float)
        self.rows = row_data(model.X_slacks)
        self.sqn = np.ascontiguousarray(row_sq_norms(self.rows), dtype=float)
        self.pair_ptr = d.pair_ptr.astype(np.int64)
        self.pair_pos = d.pair_y.astype(np.int64)
        self.pair_neg = d.pair_ybar.astype(np.int64)
        self.cost = np.ascontiguousarray(d.pair_cost, dtype=float)
        self.budget = np.ascontiguousarray(C * d.Cw, dtype=float)
        self.n_slacks = d.n_samples
        self.n_pairs = d.n_pairs
        self.hinge = Hinge(model, C)
        if model.method == "orthogonal":
            K = model.K if K is None else K
            Ks = sp.csr_matrix(np.asarray(K, dtype=float) if not sp.issparse(K) else K)
            Ks = sp.csr_matrix(Ks + sp.diags(np.zeros(self.m)))  # keep the diagonal stored
            Ks.sort_indices()
            self.K = Ks
            rows = np.repeat(np.arange(self.m), np.diff(Ks.indptr))
            self.k_rows, self.k_cols = rows.astype(np.int64), Ks.indices.astype(np.int64)
            self.k_off = rows != self.k_cols
            self.S = Ks.copy()
            self.S.data = np.where(self.k_off, 0.0, Ks.data)  # the box's centre, diag(K)
            self.S_fixed = None
            self.blocks = BlockInverse(Ks, small_block)
        else:
            self.K = None
            S = sp.csr_matrix(model.S)
            S = sp.csr_matrix(S + sp.diags(np.zeros(self.m)))
            S.sort_indices()
            self.S_fixed = S
            self.S = S
            self.blocks = BlockInverse(S, small_block)
        if not self.blocks.factor(self.S.data):
            raise InputError("the regularizer's matrix is not positive definite")
        # classes spread over several weight rows (TREELOSS's paths) under a fixed S: the
        # block Hessians read the classes' Gram matrix Lam S^{-1} Lam^T, formed once
        q = Lam.shape[0]
        self.use_gram = bool(self.S_fixed is not None and np.diff(self.cls_ptr).max(initial=0) > 1
                             and q <= gram_max_classes)
        if self.use_gram:
            QL = self.blocks.solve(np.asarray(Lam.T.toarray()))
            self.class_gram = np.ascontiguousarray(np.asarray(Lam @ QL))
        else:
            self.class_gram = np.zeros((1, 1))
        self.scatter = np.zeros((self.n_slacks, q))
        self.cs_slack = self._crammer_singer_slacks()
        self.pairs = kern.PairArrays(self.pair_ptr, self.pair_pos, self.pair_neg, self.cost, self.budget,
                                     self.sqn, self.cs_slack)
        self.classes = kern.ClassArrays(self.cls_ptr, self.cls_node, self.cls_val, self.class_gram,
                                        self.use_gram)

    def _crammer_singer_slacks(self) -> np.ndarray:
        """The slacks whose block has Crammer--Singer's shape (:func:`~hiercvx.solvers._orthogonal_kernels.cs_block`): one positive
        class, distinct negatives, unit costs, every class one weight row, and the rows in
        distinct blocks of S (so ``b_p^T Q b_r = q0 + [p = r] q_p`` for every S of the pattern)."""
        out = np.zeros(self.n_slacks, dtype=bool)
        single = (np.diff(self.cls_ptr) == 1)
        single &= np.r_[self.cls_val, 1.0][np.minimum(self.cls_ptr[:-1], len(self.cls_val))] == 1.0
        if not single.any():
            return out
        node = np.where(single, self.cls_node[np.minimum(self.cls_ptr[:-1], len(self.cls_node) - 1)], -1)
        block = np.where(node >= 0, self.blocks.node_block[np.maximum(node, 0)], -1)
        ptr = self.pair_ptr
        for s in range(self.n_slacks):
            p0, p1 = ptr[s], ptr[s + 1]
            if p1 == p0:
                continue
            pos, neg = self.pair_pos[p0:p1], self.pair_neg[p0:p1]
            if not (np.all(pos == pos[0]) and np.all(single[neg]) and single[pos[0]]
                    and np.all(self.cost[p0:p1] == 1.0)):
                continue
            blocks = np.r_[block[pos[0]], block[neg]]
            out[s] = len(np.unique(blocks)) == len(blocks)
        return out

    def certificate_work(self) -> float:
        """Multiply-adds of one certificate (for the certificate schedule)."""
        X = self.model.X_slacks
        nnz = X.nnz if sp.issparse(X) else X.size
        d = X.shape[1]
        return float(nnz * (self.m + self.Lam.shape[0]) + 4 * self.n_pairs + self.blocks.apply_work * d)

    # ---------------------------------------------------------------- pieces of the certificate
    def node_gradient(self, alpha) -> np.ndarray:
        """``U(alpha)`` over the weight rows ``(m, d)``."""
        d = self.model.data
        G = self.scatter  # (n_slacks, q)
        scatter_coefficients(alpha, d.pair_i, d.pair_y, d.pair_ybar, G)
        X = self.model.X_slacks
        GX = (X.T @ G).T if sp.issparse(X) else G.T @ X
        return np.asarray(self.Lam.T @ np.asarray(GX))

    def regularizer(self, W) -> float:
        """``R(W)``: Omega (5) on K's pattern for (4), ``1/2 tr(W^T S W)`` for a baseline."""
        if self.K is not None:  # Omega (5) on K's pattern
            gram = np.empty(len(self.k_rows))
            kern.pattern_gram(self.k_rows, self.k_cols, np.ascontiguousarray(W), gram)
            return 0.5 * float(np.sum(self.K.data * np.abs(gram)))
        return 0.5 * float(np.sum(W * (self.S_fixed @ W)))

    def objective(self, W) -> float:
        """The objective (7): the regularizer plus the hinge at ``W`` (weight rows ``(m, d)``)."""
        return self.regularizer(W) + self.hinge.value(W)

    def certify(self, alpha):
        """``(W, upper, lower)``: ``W = S^{-1} U(alpha)``, the objective there and ``D(alpha, S)``."""
        U = self.node_gradient(alpha)
        W = self.blocks.solve(U)
        lower = float(alpha.sum()) - 0.5 * float(np.sum(U * W))
        return W, self.objective(W), lower

    # ---------------------------------------------------------------- the Newton step
    def newton_candidates(self, alpha, max_cg: int):
        """The final exact step on the identified support: conjugate gradients on the dual
        restricted to the pairs with ``alpha_p > 0`` (the others fixed at 0), the budgets of
        the tight slacks held as equalities (projected CG), S fixed.  Returns feasible
        candidates (the CG point clipped at 0 and scaled into the budgets, and the longest
        step towards it that stays non-negative) and the multiply-adds spent."""
        d = self.model.data
        sup = np.flatnonzero(alpha > 0).astype(np.int64)
        if len(sup) == 0:
            return [], 0.0
        slack_of = d.pair_i[sup]
        c = self.cost[sup]
        used = np.bincount(d.pair_i, weights=alpha * self.cost, minlength=self.n_slacks)
        tight = (used >= self.budget * (1.0 - 1e-9))[slack_of]
        den = np.bincount(slack_of, weights=c * c, minlength=self.n_slacks)[slack_of]

        def project(v):  # onto {sum_{p of s} c_p v_p = 0 for the tight slacks}
            num = np.bincount(slack_of, weights=c * v, minlength=self.n_slacks)[slack_of]
            return v - np.where(tight, c * num / den, 0.0)

        rows = self.rows
        blk = self.blocks
        width = self.model.X_slacks.shape[1]
        U = np.zeros((self.m, width))
        Z = np.zeros((self.m, width))
        out = np.zeros(len(sup))

        def hess(v):
            kern.support_matvec(v, sup, d.pair_i, rows, self.pairs, self.classes, blk.records(), U, Z, out)
            return out.copy()

        x = alpha[sup].copy()
        r = project(1.0 - hess(x))
        direction = r.copy()
        rr = rr0 = float(r @ r)
        n_products = 1
        for _ in range(max_cg):
            if rr <= 1e-24 * rr0 or rr == 0.0:
                break
            Hd = hess(direction)
            n_products += 1
            curv = float(direction @ Hd)
            if not curv > 1e-14 * float(direction @ direction):
                break
            step = rr / curv
            x += step * direction
            r = project(r - step * Hd)
            rr_new = float(r @ r)
            direction = r + (rr_new / rr) * direction
            rr = rr_new
        work = n_products * (4.0 * len(sup) * width + blk.apply_work * width)
        full = alpha.copy()
        full[sup] = x
        candidates = [margin.project_dual(full, d, self.C)]
        delta = x - alpha[sup]
        shrink = delta < 0
        t = min(1.0, float(np.min(alpha[sup][shrink] / -delta[shrink], initial=np.inf)))
        if 0.0 < t < 1.0:
            ratio = alpha.copy()
            ratio[sup] = np.maximum(alpha[sup] + t * delta, 0.0)
            candidates.append(margin.project_dual(ratio, d, self.C))
        return candidates, work

    # ---------------------------------------------------------------- the S step
    def s_steps(self, W, eta: float, n_steps: int):
        """Projected-gradient ascent on ``S`` of ``-1/2 tr(U^T S^{-1} U)`` at ``U = S W``,
        ``n_steps`` accepted Armijo steps; returns ``(W, eta, work)`` with ``W = S^{-1} U`` (and
        ``blocks`` holding ``S^{-1}``) and the multiply-adds spent."""
        rows, cols = self.k_rows[self.k_off], self.k_cols[self.k_off]  # off-diagonal entries
        if len(rows) == 0:
            return W, eta, 0.0
        at = np.flatnonzero(self.k_off)
        Kd = self.K.data[at]
        U = np.asarray(self.S @ W)
        f = -0.5 * float(np.sum(U * W))
        work = float(U.size + len(rows) * W.shape[1])
        current = True  # blocks hold the inverse of the accepted S
        for _ in range(n_steps):
            grad = np.empty(len(rows))
            kern.pattern_gram(rows, cols, np.ascontiguousarray(W), grad)
            work += len(rows) * W.shape[1]
            s = self.S.data[at]
            # entries at their bound whose gradient pushes outwards cannot move
            free = ~(((s >= Kd) & (grad >= 0)) | ((s <= -Kd) & (grad <= 0)))
            if not np.any(grad[free]):
                break
            accepted = False
            for _try in range(30):
                new = np.clip(s + eta * grad, -Kd, Kd)
                step = new - s
                if not np.any(step):
                    break
                data = self.S.data.copy()
                data[at] = new
                work += self.blocks.work + self.blocks.apply_work * W.shape[1]
                if self.blocks.factor(data):
                    current = False
                    Z = self.blocks.solve(U)
                    f_new = -0.5 * float(np.sum(U * Z))
                    # each symmetric entry is stored twice: the gradient per stored copy is grad/2
                    lin = 0.5 * float(grad @ step)
                    if f_new >= f + lin - float(step @ step) / (4.0 * eta) - 1e-15 * abs(f):
                        self.S.data = data
                        W, f = Z, f_new
                        current = True
                        eta *= 2.0
                        accepted = True
                        break
                eta *= 0.25
            if not accepted:
                break
        if not current:
            work += self.blocks.work
            if not self.blocks.factor(self.S.data):
                raise InputError("S left the positive definite cone")  # cannot happen: S was accepted
        return W, eta, work
