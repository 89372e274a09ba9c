"""Fast NHSVM solvers with a certified duality gap: block-coordinate Frank–Wolfe on the dual.

The problem is the Normalized Hierarchical SVM (10) of the NHSVM paper (seed
``001_387b6b34a68f4b02.txt``), single-label (leaves, margin (9), or the variant (13)) or
multi-label (label sets of ``Y_m`` with a decomposable loss, section 7.1)::

    P(W) = lam ||W||_F^2 + sum_i H_i(W),
    H_i(W) = max_y  b_iy - sigma_iy (s_i(y_i) - s_i(y)),        s_i(y) = sum_{n in y} sqrt(alpha_n) W_n . x_i

with ``b = Delta``, ``sigma = 1`` for (10) and ``b = 1``, ``sigma = 1 / Delta~`` for (13) (``y != y_i``;
the term ``y = y_i`` is 0).  Writing ``c_iy = sigma_iy (t_i - z_y)`` (``t_i``, ``z_y`` the node
indicators of the true and the candidate set), its dual has one simplex block per sample::

    D(beta) = sum_i l_i - ||V||_F^2 / (4 lam),      beta_i in simplex(Y),
    g_i = sum_y beta_iy c_iy   (M,),    l_i = sum_y beta_iy b_iy,    V = sum_i (sqrt(alpha) * g_i) x_i^T,

and ``W(beta) = V / (2 lam)``; ``P(W(beta)) - D(beta)`` is the duality gap, and the sum of the
per-block gaps ``H_i(W) - (l_i - <W, (sqrt(alpha) * g_i) x_i^T>)`` (Lacoste-Julien et al. 2013).
The state is ``g`` ``(n, M)`` and ``l`` ``(n,)``: the dual point never needs one variable per
label set, so the exponential multi-label space costs nothing but the oracle.

Methods (``solve_data(..., method=)``):

``"pairwise"`` (default)  Block-coordinate *pairwise* Frank–Wolfe over a per-sample cache of
    vertices (label sets): every pass starts with one batched loss-augmented inference at the
    current ``W`` (:class:`~hiercvx.inference.LabelSetOracle` on all samples at once, or the
    argmax over the leaves), which gives the exact primal, hence the certificate, and one new
    vertex per sample; then each sample's block takes exact-line-search pairwise steps
    (mass moved from its worst to its best cached vertex, the true set acting as the slack)
    until its cached block gap is small.  Blocks whose exact gap is 0 at the certificate are
    skipped (exact shrinking: they are optimal for the current ``W``), and several sweeps over
    the caches run between two certificates (more when the oracle is a DAG program).  This is
    the multi-plane BCFW idea (Shah, Kolmogorov & Lampert 2015) with pairwise steps (Osokin et
    al. 2016); the sweep is compiled (numba).
``"bcfw"``  Lacoste-Julien et al.'s BCFW exactly: per sample, fresh loss-augmented inference at
    the current ``W``, one Frank–Wolfe step with exact line search.  Single-label sweeps are
    compiled; multi-label sweeps call the oracle once per sample from Python.
``"sgd"``  The paper's optimizer (section 7, Pegasos, Shalev-Shwartz et al. 2007): step
    ``1 / (lam' t)`` with ``lam' = 2 lam / n``, projection on the ball that holds the optimum.
    It has no dual: its ``lower_bound`` is the trivial 0 and it runs ``max_iter`` epochs.
``"working_set"``  Single-label (10) only: the margin model ``data.margin`` (``C = 1/(2 lam)``,
    objective times ``2 lam``) handed to :func:`hiercvx.solvers.working_set.solve_hsvm`.

Every method's ``objective`` is recomputed exactly (all samples' loss-augmented inference at
the returned ``W``); the dual methods' ``lower_bound`` is ``D`` at a feasible ``beta``.
``benchmarks/bench_nhsvm.py`` measures which reaches a 1e-4 gap first.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from .._validation import check_positive
from ..exceptions import InputError
from ..formulations import nhsvm as _nh
from ..inference import LabelSetOracle
from ._result import SolverResult

logger = logging.getLogger(__name__)

__all__ = ["METHODS", "NHSVMResult", "solve", "solve_data", "DualState"]

METHODS = ("pairwise", "bcfw", "sgd", "working_set")

# Reassociation lets LLVM vectorize the dot products and rank-one updates (inputs are finite).
_FAST = {"reassoc", "contract", "nsz"}


# ============================================================================ compiled kernels
@njit(cache=True, fastmath=_FAST)
def _row_product(V, sparse, Xd, indptr, indices, xvals, i, out):
    """``out = V x_i`` (``V`` ``(M, d)``)."""
    M = V.shape[0]
    for m in range(M):
        acc = 0.0
        if sparse:
            for p in range(indptr[i], indptr[i + 1]):
                acc += V[m, indices[p]] * xvals[p]
        else:
            for k in range(V.shape[1]):
                acc += V[m, k] * Xd[i, k]
        out[m] = acc


@njit(cache=True, fastmath=_FAST)
def _rank_one(V, coef, sparse, Xd, indptr, indices, xvals, i):
    """``V += coef x_i^T``."""
    M = V.shape[0]
    for m in range(M):
        c = coef[m]
        if c == 0.0:
            continue
        if sparse:
            for p in range(indptr[i], indptr[i + 1]):
                V[m, indices[p]] += c * xvals[p]
        else:
            for k in range(V.shape[1]):
                V[m, k] += c * Xd[i, k]


@njit(cache=True, fastmath=_FAST)
def _pairwise_sweep(order, sparse, Xd, indptr, indices, xvals, V, sqa, Tf, pool, cid, cbeta, coff,
                    cscale, clen, budget, G, lsum, xsq, inv2lam, eps, max_steps, bgap):
    """One pass of block-coordinate pairwise Frank–Wolfe over the cached vertices.

    Block i maximizes ``D`` over ``beta_i`` (others fixed).  The gradient along cached vertex j
    is ``b_j - sigma_j (s(t_i) - s(z_j))`` at the current node scores ``s``; the true set (the
    slack ``budget_i - sum_j beta_ij``) has gradient 0.  A step moves mass ``t`` from the
    smallest-gradient vertex holding mass to the largest-gradient one; along that direction
    ``D`` is a concave parabola of curvature ``||x_i||^2 / (2 lam) ||sqrt(alpha) (c_up - c_down)||^2``,
    so ``t`` is its maximizer clipped to the mass available (exact line search).
    ``bgap[i]`` receives block i's pairwise gap (largest minus smallest active gradient) at
    the start of its visit.  Returns ``(steps, largest block gap seen at a visit)``.
    """
    M = V.shape[0]
    K = cid.shape[1]
    r = np.empty(M)
    s = np.empty(M)
    u = np.empty(M)
    delta = np.empty(M)
    grad = np.empty(K)
    total = 0
    worst = 0.0
    for i in order:
        k = clen[i]
        bgap[i] = 0.0
        if k == 0:
            continue
        _row_product(V, sparse, Xd, indptr, indices, xvals, i, r)
        own = 0.0
        for m in range(M):
            r[m] *= inv2lam
            s[m] = sqa[m] * r[m]
            own += Tf[i, m] * s[m]
        used = 0.0
        for j in range(k):
            used += cbeta[i, j]
            p = cid[i, j]
            sz = 0.0
            for m in range(M):
                sz += pool[p, m] * s[m]
            grad[j] = coff[i, j] - cscale[i, j] * (own - sz)
        slack = budget[i] - used
        if slack < 1e-15 * budget[i]:
            slack = 0.0
        for m in range(M):
            delta[m] = 0.0
        changed = False
        curv = xsq[i] * inv2lam
        for step in range(max_steps):
            up = -1
            g_up = 0.0
            down = -2
            g_down = np.inf
            if slack > 0.0:
                down = -1
                g_down = 0.0
            for j in range(k):
                if grad[j] > g_up:
                    g_up = grad[j]
                    up = j
                if cbeta[i, j] > 0.0 and grad[j] < g_down:
                    g_down = grad[j]
                    down = j
            if step == 0 and down != -2:
                bgap[i] = g_up - g_down
                if g_up - g_down > worst:
                    worst = g_up - g_down
            if down == -2 or up == down or g_up - g_down <= eps:
                break
            kappa = 0.0
            for m in range(M):
                val = 0.0
                if up >= 0:
                    val += cscale[i, up] * (Tf[i, m] - pool[cid[i, up], m])
                if down >= 0:
                    val -= cscale[i, down] * (Tf[i, m] - pool[cid[i, down], m])
                u[m] = val
                kappa += (sqa[m] * val) ** 2
            kappa *= curv
            t_max = slack if down == -1 else cbeta[i, down]
            t = t_max
            if kappa > 0.0:
                t = min(t_max, (g_up - g_down) / kappa)
            if t <= 0.0:
                break
            if up >= 0:
                cbeta[i, up] += t
                lsum[i] += t * coff[i, up]
            else:
                slack += t
            if down >= 0:
                cbeta[i, down] = 0.0 if t >= t_max else cbeta[i, down] - t
                lsum[i] -= t * coff[i, down]
            else:
                slack = 0.0 if t >= t_max else slack - t
            own = 0.0
            for m in range(M):
                delta[m] += t * u[m]
                r[m] += t * curv * sqa[m] * u[m]
                s[m] = sqa[m] * r[m]
                own += Tf[i, m] * s[m]
            for j in range(k):
                p = cid[i, j]
                sz = 0.0
                for m in range(M):
                    sz += pool[p, m] * s[m]
                grad[j] = coff[i, j] - cscale[i, j] * (own - sz)
            changed = True
            total += 1
        if changed:
            for m in range(M):
                G[i, m] += delta[m]
                u[m] = sqa[m] * delta[m]
            _rank_one(V, u, sparse, Xd, indptr, indices, xvals, i)
    return total, worst


@njit(cache=True, fastmath=_FAST)
def _leaf_oracle(s, li, paths, offset, scale):
    """Most violating leaf for node scores ``s``: ``(leaf or -1 for the true one, value)``."""
    q, M = paths.shape
    own = 0.0
    for m in range(M):
        own += paths[li, m] * s[m]
    best = -1
    value = 0.0
    for leaf in range(q):
        if leaf == li:
            continue
        c = 0.0
        for m in range(M):
            c += paths[leaf, m] * s[m]
        v = offset[li, leaf] + scale[li, leaf] * (c - own)
        if v > value:
            value = v
            best = leaf
    return best, value


@njit(cache=True, fastmath=_FAST)
def _bcfw_sweep_single(order, sparse, Xd, indptr, indices, xvals, V, sqa, paths, leaf_pos, offset,
                       scale, G, lsum, xsq, inv2lam):
    """Lacoste-Julien et al.'s BCFW pass (single-label): fresh argmax, one FW step per sample.

    Returns the sum of the block gaps met (an estimate of the duality gap: ``W`` moves during
    the pass)."""
    M = V.shape[0]
    r = np.empty(M)
    s = np.empty(M)
    dg = np.empty(M)
    gaps = 0.0
    for i in order:
        _row_product(V, sparse, Xd, indptr, indices, xvals, i, r)
        for m in range(M):
            r[m] *= inv2lam
            s[m] = sqa[m] * r[m]
        li = leaf_pos[i]
        best, value = _leaf_oracle(s, li, paths, offset, scale)
        b_s = 0.0
        if best >= 0:
            b_s = offset[li, best]
        gain = b_s - lsum[i]
        kappa = 0.0
        for m in range(M):
            c = 0.0
            if best >= 0:
                c = scale[li, best] * (paths[li, m] - paths[best, m])
            dg[m] = c - G[i, m]
            gain -= sqa[m] * dg[m] * r[m]
            kappa += (sqa[m] * dg[m]) ** 2
        kappa *= xsq[i] * inv2lam
        if gain <= 0.0:
            continue
        gaps += gain
        gamma = 1.0 if kappa <= 0.0 else min(1.0, gain / kappa)
        for m in range(M):
            dg[m] *= gamma
            G[i, m] += dg[m]
            dg[m] *= sqa[m]
        lsum[i] += gamma * (b_s - lsum[i])
        _rank_one(V, dg, sparse, Xd, indptr, indices, xvals, i)
    return gaps


@njit(cache=True, fastmath=_FAST)
def _sgd_epoch_single(order, sparse, Xd, indptr, indices, xvals, Wraw, state, sqa, paths, leaf_pos,
                      offset, scale, xsq, lam_p, radius):
    """One Pegasos epoch (single-label).  ``W = state[0] * Wraw``; ``state = [scale, ||W||^2, t]``."""
    M = Wraw.shape[0]
    r = np.empty(M)
    s = np.empty(M)
    a = np.empty(M)
    for i in order:
        state[2] += 1.0
        t = state[2]
        sc = state[0]
        _row_product(Wraw, sparse, Xd, indptr, indices, xvals, i, r)
        for m in range(M):
            r[m] *= sc
            s[m] = sqa[m] * r[m]
        li = leaf_pos[i]
        best, value = _leaf_oracle(s, li, paths, offset, scale)
        shrink = 1.0 - 1.0 / t
        if shrink <= 0.0:
            Wraw[:, :] = 0.0
            state[0] = 1.0
            state[1] = 0.0
            sc = 1.0
            for m in range(M):
                r[m] = 0.0
        else:
            state[0] = sc * shrink
            state[1] *= shrink * shrink
            sc = state[0]
            for m in range(M):
                r[m] *= shrink
        if best >= 0:
            eta = 1.0 / (lam_p * t)
            dot = 0.0
            nrm = 0.0
            for m in range(M):
                a[m] = eta * sqa[m] * scale[li, best] * (paths[li, m] - paths[best, m])
                dot += a[m] * r[m]
                nrm += a[m] * a[m]
            state[1] += 2.0 * dot + nrm * xsq[i]
            for m in range(M):
                a[m] /= sc
            _rank_one(Wraw, a, sparse, Xd, indptr, indices, xvals, i)
        if state[1] > radius * radius:
            state[0] *= radius / np.sqrt(state[1])
            state[1] = radius * radius
        if state[0] < 1e-8:  # fold the scale back in before it underflows
            Wraw *= state[0]
            state[0] = 1.0
    return state[2]


# ============================================================================ the model
@dataclass
class _Model:
    """What the solvers need from an NHSVM-type problem (built by :func:`_model_from_data`).

    Single-label: vertices are leaves (``paths`` ``(q, M)``), ``offset[t, l]`` / ``scale[t, l]``
    are ``b`` / ``sigma`` for true leaf ``t`` and candidate ``l``.  Multi-label: vertices are
    label sets found by ``oracle`` with the decomposable ``loss`` (``b = Delta``, ``sigma = 1``).
    """

    X: object
    sqrt_alpha: np.ndarray
    T: np.ndarray
    multilabel: bool
    leaf_pos: np.ndarray | None = None
    paths: np.ndarray | None = None
    offset: np.ndarray | None = None
    scale: np.ndarray | None = None
    oracle: LabelSetOracle | None = None
    loss: object = None

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.T.shape[1]

    def node_scores(self, W) -> np.ndarray:
        XW = self.X @ W.T
        return (XW.toarray() if sp.issparse(XW) else np.asarray(XW)) * self.sqrt_alpha

    def most_violating(self, S: np.ndarray, rows=None):
        """Exact loss-augmented inference at node scores ``S`` (rows ``rows`` of the data).

        Returns ``(H, vertex)``: the slacks ``H_i = max(0, max_y b - sigma (s(t_i) - s(y)))`` and
        the maximizer: a leaf position (``-1`` when the true leaf is best) or a bool set
        ``(len, M)`` (equal to the true set when nothing is violated).
        """
        rows = np.arange(S.shape[0]) if rows is None else rows
        T = self.T[rows]
        own = np.where(T, S, 0.0).sum(axis=1)
        if self.multilabel:
            Z, info = self.oracle.solve(S, loss=self.loss, true_indicator=T, return_info=True,
                                        verbose=False)
            return np.maximum(info.objective - own, 0.0), Z
        li = self.leaf_pos[rows]
        C = S @ self.paths.T                                   # leaf path sums (len, q)
        viol = self.offset[li] + self.scale[li] * (C - own[:, None])
        viol[np.arange(len(rows)), li] = 0.0                   # the true leaf: 0
        best = np.argmax(viol, axis=1)
        value = viol[np.arange(len(rows)), best]
        best = np.where(value > 0, best, -1)
        return np.maximum(value, 0.0), best

    def vertex_terms(self, i: int, vertex) -> tuple[np.ndarray, float]:
        """``(c, b)`` of one vertex for sample ``i`` (``c`` over the nodes, unscaled by alpha)."""
        t = self.T[i].astype(float)
        if self.multilabel:
            return t - np.asarray(vertex, dtype=float), float(self.loss(vertex, self.T[i]))
        if vertex < 0:
            return np.zeros_like(t), 0.0
        li = self.leaf_pos[i]
        return self.scale[li, vertex] * (t - self.paths[vertex]), float(self.offset[li, vertex])


def _model_from_data(data: _nh.NHSVMData, inference: str = "auto") -> _Model:
    X = data.X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
    else:
        X = np.ascontiguousarray(X, dtype=float)
    model = _Model(X=X, sqrt_alpha=np.sqrt(np.asarray(data.alpha, dtype=float)), T=np.asarray(data.T),
                   multilabel=data.multilabel)
    if data.multilabel:
        if inference == "auto" and not data.H.is_tree:
            # the paper trains with the LP relaxation of (19); "lp" re-solves the fractional
            # samples with the integer program, so it stays exact, and HiGHS's LP is an order
            # of magnitude faster than its branch-and-bound on these small programs
            inference = "lp"
        model.oracle = LabelSetOracle(data.H, inference)
        model.loss = data.loss
        return model
    dist = np.asarray(data.structural, dtype=float)
    off = ~np.eye(dist.shape[0], dtype=bool)
    if data.variant == "nhsvm":
        offset, scale = dist, np.ones_like(dist)
    else:  # (13): each row divided by the normalized distance, required margin 1
        offset = off.astype(float)
        scale = np.where(off, 1.0 / np.where(off, dist, 1.0), 0.0)
    return _leaf_model(model, data.leaf_pos, data.H, offset, scale)


def _leaf_model(model: _Model, leaf_pos, H, offset, scale) -> _Model:
    model.leaf_pos = np.ascontiguousarray(leaf_pos, dtype=np.int64)
    model.paths = np.ascontiguousarray(H.ancestor_matrix[H.leaf_indices].toarray(), dtype=float)
    model.offset = np.ascontiguousarray(offset, dtype=float)
    model.scale = np.ascontiguousarray(scale, dtype=float)
    return model


def _xdata(X):
    """``(sparse, dense, indptr, indices, values)`` for the compiled kernels."""
    if sp.issparse(X):
        return (True, np.zeros((1, 1)), X.indptr.astype(np.int64), X.indices.astype(np.int64),
                X.data.astype(float))
    empty = np.zeros(1, dtype=np.int64)
    return False, X, empty, empty, np.zeros(1)


def _row_sq_norms(X) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


# ============================================================================ dual state
class DualState:
    """A dual point of (10) (``g`` ``(n, M)``, ``l`` ``(n,)``) with its vertex caches.

    Kept between calls so that a solve can be warm-started: the dual feasible set does not
    depend on ``lam`` nor on ``alpha``, so the shared-norm alternating algorithm re-solves its
    weight step from the previous dual point after each alpha step.
    """

    def __init__(self, model: _Model, cache_size: int):
        n, M = model.n_samples, model.n_nodes
        if model.multilabel:
            K = int(cache_size)
        else:
            K = int(min(cache_size, model.paths.shape[0] - 1))
        self.K = max(1, K)
        self.G = np.zeros((n, M))
        self.l = np.zeros(n)
        self.cid = np.full((n, self.K), -1, dtype=np.int64)
        self.cbeta = np.zeros((n, self.K))
        self.coff = np.zeros((n, self.K))
        self.cscale = np.ones((n, self.K))
        self.clen = np.zeros(n, dtype=np.int64)
        self.budget = np.ones(n)
        self.n_evicted = 0
        if model.multilabel:
            self._pool = np.zeros((64, M))
            self._pool_size = 0
            self._keys: dict = {}
        else:
            self._pool = model.paths

    @property
    def pool(self) -> np.ndarray:
        """The vertices' node indicators (float, C-contiguous; leaf paths when single-label)."""
        return self._pool

    def _pool_ids(self, Z: np.ndarray) -> np.ndarray:
        """Ids of the label sets ``Z`` in the shared pool (added when new)."""
        packed = np.packbits(Z, axis=1)
        ids = np.empty(len(Z), dtype=np.int64)
        for k, row in enumerate(packed):
            key = row.tobytes()
            j = self._keys.get(key)
            if j is None:
                j = self._pool_size
                if j == len(self._pool):
                    self._pool = np.concatenate([self._pool, np.zeros_like(self._pool)])
                self._pool[j] = Z[k]
                self._keys[key] = j
                self._pool_size += 1
            ids[k] = j
        return ids

    def rebuild_weights(self, model: _Model) -> np.ndarray:
        """``V = sum_i (sqrt(alpha) g_i) x_i^T`` from scratch (no drift)."""
        GX = model.X.T @ self.G
        return np.ascontiguousarray(np.asarray(GX).T * model.sqrt_alpha[:, None])

    def resync(self, model: _Model) -> None:
        """Recompute ``g`` and ``l`` from the cached masses (removes rounding drift)."""
        if hasattr(self, "_keys") and self._pool_size == 0:
            return
        pool = self.pool
        n, M = self.G.shape
        mask = self.cid >= 0
        ids = np.where(mask, self.cid, 0)
        beta = np.where(mask, self.cbeta, 0.0)
        w = beta * self.cscale
        self.l = (beta * self.coff).sum(axis=1)
        G = w.sum(axis=1)[:, None] * model.T
        for k in range(self.K):  # one slot at a time: never an (n, K, M) temporary
            G -= w[:, k, None] * pool[ids[:, k]]
        self.G = G

    def add(self, model: _Model, vertex, rows=None) -> tuple[int, bool]:
        """Add each sample's vertex (from :meth:`_Model.most_violating`) to its cache.

        Returns ``(number added, whether mass was evicted)`` (then ``g``, ``l`` are resynced and
        the caller must rebuild ``V``)."""
        n = model.n_samples
        rows = np.arange(n) if rows is None else np.asarray(rows)
        if model.multilabel:
            Z = np.asarray(vertex, dtype=bool)
            new = ~np.all(Z == model.T[rows], axis=1)
            if not new.any():
                return 0, False
            rows, Z = rows[new], Z[new]
            ids = self._pool_ids(Z)
            offsets = model.loss(Z, model.T[rows])
            scales = np.ones(len(rows))
        else:
            v = np.asarray(vertex)
            new = v >= 0
            rows, ids = rows[new], v[new].astype(np.int64)
            li = model.leaf_pos[rows]
            offsets, scales = model.offset[li, ids], model.scale[li, ids]
        present = np.any(self.cid[rows] == ids[:, None], axis=1)
        rows, ids, offsets, scales = rows[~present], ids[~present], offsets[~present], scales[~present]
        if not len(rows):
            return 0, False
        slot = self.clen[rows].copy()
        full = slot >= self.K
        evicted = False
        if full.any():
            # reuse an empty slot (mass 0); otherwise evict the smallest mass to the slack
            fr = rows[full]
            target = np.argmin(self.cbeta[fr], axis=1)
            lost = self.cbeta[fr, target]
            if np.any(lost > 0):
                evicted = True
                self.n_evicted += int(np.sum(lost > 0))
                self.cbeta[fr, target] = 0.0
            slot[full] = target
        self.cid[rows, slot] = ids
        self.cbeta[rows, slot] = 0.0
        self.coff[rows, slot] = offsets
        self.cscale[rows, slot] = scales
        self.clen[rows] = np.minimum(np.maximum(self.clen[rows], slot + 1), self.K)
        if evicted:
            self.resync(model)
        return len(rows), evicted


# ============================================================================ results
@dataclass
class NHSVMResult(SolverResult):
    """:class:`~hiercvx.solvers.SolverResult` of an NHSVM solve.

    ``weights``: ``W`` ``(M, d)``; ``slacks``: ``H_i(W)``; ``dual_coef``: ``g`` ``(n, M)`` (the dual
    point in node space; ``None`` for SGD); ``loss_term``: ``sum_i l_i``; ``n_oracle``: samples
    passed to loss-augmented inference; ``method``; ``state``: the :class:`DualState` (warm starts).
    """

    slacks: np.ndarray | None = None
    dual_coef: np.ndarray | None = None
    loss_term: float = 0.0
    n_oracle: int = 0
    method: str = ""
    state: object = None


def _check_options(method, tol, max_iter):
    if method not in METHODS:
        raise InputError(f"unknown NHSVM solver method {method!r}; choose one of {METHODS}")
    tol = float(tol)
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a non-negative number, got {tol!r}")
    if int(max_iter) < 1:
        raise InputError(f"max_iter must be a positive integer, got {max_iter!r}")
    return tol, int(max_iter)


# ============================================================================ public API
def solve(X, Y, H, lam: float = 1.0, alpha=None, variant: str = "nhsvm", *, multilabel=None,
          loss=None, T=None, inference: str = "auto", **options) -> NHSVMResult:
    """NHSVM (10) / (13) by the fast dual solver: :func:`hiercvx.formulations.nhsvm.prepare`
    (same arguments as :func:`hiercvx.formulations.nhsvm.primal`) then :func:`solve_data`."""
    data = _nh.prepare(X, Y, H, alpha=alpha, variant=variant, multilabel=multilabel, loss=loss, T=T)
    return solve_data(data, lam, inference=inference, **options)


def solve_data(data: _nh.NHSVMData, lam: float = 1.0, *, method: str = "pairwise", tol: float = 1e-6,
               max_iter: int = 1000, cache_size: int = 32, max_steps: int = 50, inference: str = "auto",
               state: DualState | None = None, time_limit: float | None = None, random_state=0,
               verbose: bool = False) -> NHSVMResult:
    """Solve NHSVM (10) / (13) from validated data (:func:`~hiercvx.formulations.nhsvm.prepare`).

    Parameters
    ----------
    data : NHSVMData (single-label (10) or (13), or multi-label (10))
    lam : the regularization weight of (10)
    method : ``"pairwise"`` (default), ``"bcfw"``, ``"sgd"`` or ``"working_set"`` (module docstring)
    tol : certified relative gap ``(P - D) / max(1, |P|)`` at which the dual methods stop
    max_iter : passes over the data (epochs for SGD); a ``ConvergenceWarning`` when they run out
    cache_size : vertices kept per sample (``"pairwise"``)
    max_steps : pairwise steps per visit of a sample (``"pairwise"``)
    inference : the multi-label oracle's method (``"auto"``: tree DP; on DAGs the LP relaxation of
        (19) with integer-program fallback, exact and faster than ``"ilp"``)
    state : a :class:`DualState` to warm-start from (``"pairwise"``; e.g. ``result.state``)
    time_limit : seconds; stop (unconverged) after the first certificate past it
    random_state : seed of the visiting order

    Returns
    -------
    NHSVMResult (``weights`` = ``W`` ``(M, d)``; predict with ``nhsvm.node_scores`` and
    :func:`hiercvx.inference.best_leaf` / :func:`~hiercvx.inference.best_label_set`).
    """
    if not isinstance(data, _nh.NHSVMData):
        raise InputError("data must be an NHSVMData from hiercvx.formulations.nhsvm.prepare(X, Y, H, ...)")
    lam = check_positive(lam, "lam")
    tol, max_iter = _check_options(method, tol, max_iter)
    if method == "working_set":
        return _solve_working_set(data, lam, tol, max_iter, random_state, verbose)
    model = _model_from_data(data, inference)
    with threadpool_limits(limits=1, user_api="blas"):
        if method == "pairwise":
            return _pairwise(model, lam, tol, max_iter, cache_size, max_steps, state, time_limit,
                             random_state, verbose)
        if method == "bcfw":
            return _bcfw(model, lam, tol, max_iter, time_limit, random_state, verbose)
        return _sgd(model, lam, max_iter, time_limit, random_state, verbose)


# ============================================================================ certificate
def _certify(model: _Model, V: np.ndarray, l: np.ndarray, lam: float, return_scores: bool = False):
    """``(P, D, H, vertex, W)`` at the dual point: exact primal at ``W = V / (2 lam)`` (and the
    node scores when asked)."""
    W = V / (2.0 * lam)
    S = model.node_scores(W)
    H, vertex = model.most_violating(S)
    norm2 = float(np.sum(V * V)) / (4.0 * lam)
    out = (norm2 + float(H.sum()), float(l.sum()) - norm2, H, vertex, W)
    return out + (S,) if return_scores else out


def _relgap(P: float, D: float) -> float:
    return (P - D) / max(1.0, abs(P))


def _finish(method, W, P, D, H, n_iter, converged, tol, history, t0, n_oracle, G=None, loss_term=0.0,
            state=None, max_iter=None):
    if not converged and max_iter is not None:
        warnings.warn(f"NHSVM {method}: relative gap {_relgap(P, D):.2e} over tol={tol:g} after "
                      f"{n_iter} passes; raise max_iter (or time_limit)", ConvergenceWarning,
                      stacklevel=4)
    res = NHSVMResult(weights=W, objective=float(P), lower_bound=float(D), n_iter=n_iter,
                      converged=converged, tol=tol, dual=G, history=history,
                      solve_time=time.perf_counter() - t0, name=f"NHSVM ({method})", slacks=H,
                      dual_coef=G, loss_term=float(loss_term), n_oracle=n_oracle, method=method,
                      state=state)
    logger.info("%s", res)
    return res


def _record(history, it, t0, P, D, n_oracle):
    history.setdefault("n_iter", []).append(it)
    history.setdefault("time", []).append(time.perf_counter() - t0)
    history.setdefault("objective", []).append(P)
    history.setdefault("lower_bound", []).append(D)
    history.setdefault("gap", []).append(_relgap(P, D))
    history.setdefault("n_oracle", []).append(n_oracle)


def _progress(verbose, total, desc):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="pass", disable=not verbose)


# ============================================================================ pairwise BCFW
def _pairwise(model, lam, tol, max_iter, cache_size, max_steps, state, time_limit, random_state,
              verbose, inner_sweeps=20, t0=None, quiet=False):
    """Pairwise BCFW with vertex caches.  One iteration = one certificate (exact inference on
    every sample: the primal, the dual and every block's gap at the same ``W``), the new
    vertices into the caches, then up to ``inner_sweeps`` sweeps over the blocks whose gap is
    positive (a block with gap 0 is optimal for the current ``W`` and is skipped: exact
    shrinking), each sweep dropping the blocks whose cached gap fell below ``eps``."""
    t0 = time.perf_counter() if t0 is None else t0
    rng = np.random.default_rng(random_state)
    n = model.n_samples
    if state is None:
        state = DualState(model, cache_size)
    elif state.G.shape != (n, model.n_nodes):
        raise InputError(f"the warm-start state holds {state.G.shape[0]} samples x {state.G.shape[1]} "
                         f"nodes; this problem has {n} x {model.n_nodes}")
    xs = _xdata(model.X)
    xsq = _row_sq_norms(model.X)
    Tf = np.ascontiguousarray(model.T, dtype=float)
    inv2lam = 0.5 / lam
    history: dict = {}
    best_D = -np.inf
    n_oracle = 0
    visits = 0
    converged = False
    bgap = np.zeros(n)
    best = (np.inf, None, None)
    expensive_oracle = model.multilabel and model.oracle.method in ("ilp", "lp")
    bar = _progress(verbose, max_iter, "NHSVM pairwise BCFW")
    try:
        for it in range(max_iter + 1):
            state.resync(model)
            V = state.rebuild_weights(model)
            P, D, H, vertex, W, S = _certify(model, V, state.l, lam, return_scores=True)
            n_oracle += n
            best_D = max(best_D, D)
            if P < best[0]:  # W(beta) is not monotone in P: keep the best primal point
                best = (P, W, H)
            gap = _relgap(best[0], best_D)
            _record(history, it, t0, best[0], best_D, n_oracle)
            history.setdefault("visits", []).append(visits)
            bar.set_postfix(gap=f"{gap:.2e}")
            if gap <= tol:
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            if state.add(model, vertex)[1]:
                V = state.rebuild_weights(model)
            # block gaps at this W: H_i - l_i + <W, (sqrt(alpha) g_i) x_i^T>; they sum to P - D
            block = H - state.l + np.einsum("ij,ij->i", state.G, S)
            eps = max(1e-13, 0.1 * (P - D) / n)
            active = np.flatnonzero(block > 1e-3 * eps).astype(np.int64)
            refine = 0
            while True:
                for _ in range(inner_sweeps):
                    if not len(active):
                        break
                    order = rng.permutation(active)
                    _pairwise_sweep(order, xs[0], xs[1], xs[2], xs[3], xs[4], V, model.sqrt_alpha,
                                    Tf, state.pool, state.cid, state.cbeta, state.coff, state.cscale,
                                    state.clen, state.budget, state.G, state.l, xsq, inv2lam, eps,
                                    int(max_steps), bgap)
                    visits += len(order)
                    active = active[bgap[active] > eps]
                # An expensive oracle (a DAG program per sample) is worth more work on the cached
                # problem: refine it (10x smaller eps, every cached block), as a cutting-plane
                # method would.  Decided by the oracle's kind, not by timings, so that results
                # are reproducible.
                refine += 1
                if refine > 3 or not expensive_oracle:
                    break
                eps *= 0.1
                active = np.flatnonzero(state.clen > 0).astype(np.int64)
            bar.update(1)
    finally:
        bar.close()
    if state.n_evicted:
        logger.info("pairwise BCFW: %d cached vertices with mass evicted (cache_size=%d)",
                    state.n_evicted, state.K)
    history["visits"] = [v / n for v in history["visits"]]
    P, W, H = best
    return _finish("pairwise", W, P, best_D, H, it, converged, tol, history, t0, n_oracle,
                   G=state.G.copy(), loss_term=float(state.l.sum()), state=state,
                   max_iter=None if (converged or quiet) else max_iter)


# ============================================================================ plain BCFW
def _bcfw(model, lam, tol, max_iter, time_limit, random_state, verbose):
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    n, M = model.n_samples, model.n_nodes
    G = np.zeros((n, M))
    l = np.zeros(n)
    V = np.zeros((M, model.X.shape[1]))
    xs = _xdata(model.X)
    xsq = _row_sq_norms(model.X)
    inv2lam = 0.5 / lam
    history: dict = {}
    n_oracle = 0
    best_D = -np.inf
    converged = False
    bar = _progress(verbose, max_iter, "NHSVM BCFW")
    try:
        for it in range(max_iter + 1):
            V = np.ascontiguousarray((np.asarray(model.X.T @ G).T) * model.sqrt_alpha[:, None])
            P, D, H, _, W = _certify(model, V, l, lam)
            n_oracle += n
            best_D = max(best_D, D)
            gap = _relgap(P, best_D)
            _record(history, it, t0, P, best_D, n_oracle)
            bar.set_postfix(gap=f"{gap:.2e}")
            if gap <= tol:
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                _bcfw_sweep_single(order, xs[0], xs[1], xs[2], xs[3], xs[4], V, model.sqrt_alpha,
                                   model.paths, model.leaf_pos, model.offset, model.scale, G, l, xsq,
                                   inv2lam)
            else:
                _bcfw_sweep_python(model, order, V, G, l, xsq, inv2lam)
            n_oracle += n
            bar.update(1)
    finally:
        bar.close()
    return _finish("bcfw", W, P, best_D, H, it, converged, tol, history, t0, n_oracle, G=G,
                   loss_term=float(l.sum()), max_iter=None if converged else max_iter)


def _row(X, i):
    return X[i].toarray().ravel() if sp.issparse(X) else X[i]


def _bcfw_sweep_python(model, order, V, G, l, xsq, inv2lam):
    """BCFW pass with one oracle call per sample (multi-label)."""
    sqa = model.sqrt_alpha
    for i in order:
        x = _row(model.X, i)
        r = (V @ x) * inv2lam
        _, Z = model.most_violating((sqa * r)[None, :], rows=np.array([i]))
        c, b = model.vertex_terms(i, Z[0])
        dg = c - G[i]
        gain = b - l[i] - float((sqa * dg) @ r)
        if gain <= 0:
            continue
        kappa = float(np.sum((sqa * dg) ** 2)) * xsq[i] * inv2lam
        gamma = 1.0 if kappa <= 0 else min(1.0, gain / kappa)
        G[i] += gamma * dg
        l[i] += gamma * (b - l[i])
        V += np.outer(gamma * sqa * dg, x)


# ============================================================================ SGD (the paper's)
def _sgd(model, lam, max_iter, time_limit, random_state, verbose):
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    n, M = model.n_samples, model.n_nodes
    d = model.X.shape[1]
    lam_p = 2.0 * lam / n
    # the optimum has lam ||W||^2 <= P(W*) <= P(0) = sum_i H_i(0): a ball that holds it
    H0, _ = model.most_violating(np.zeros((n, M)))
    radius = float(np.sqrt(max(H0.sum(), 1e-300) / lam))
    Wraw = np.zeros((M, d))
    sgd_state = np.array([1.0, 0.0, 0.0])
    xs = _xdata(model.X)
    xsq = _row_sq_norms(model.X)
    history: dict = {}
    best = (np.inf, None, None)
    n_oracle = 0
    bar = _progress(verbose, max_iter, "NHSVM SGD")
    try:
        for it in range(1, max_iter + 1):
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                _sgd_epoch_single(order, xs[0], xs[1], xs[2], xs[3], xs[4], Wraw, sgd_state,
                                  model.sqrt_alpha, model.paths, model.leaf_pos, model.offset,
                                  model.scale, xsq, lam_p, radius)
            else:
                _sgd_epoch_python(model, order, Wraw, sgd_state, lam_p, radius)
            n_oracle += n
            W = sgd_state[0] * Wraw
            H, _ = model.most_violating(model.node_scores(W))
            n_oracle += n
            P = lam * float(np.sum(W * W)) + float(H.sum())
            _record(history, it, t0, P, 0.0, n_oracle)
            if P < best[0]:
                best = (P, W.copy(), H)
            bar.update(1)
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
    finally:
        bar.close()
    P, W, H = best
    return _finish("sgd", W, P, 0.0, H, it, False, 0.0, history, t0, n_oracle)


def _sgd_epoch_python(model, order, Wraw, state, lam_p, radius):
    sqa = model.sqrt_alpha
    for i in order:
        state[2] += 1.0
        t = state[2]
        x = _row(model.X, i)
        r = (Wraw @ x) * state[0]
        _, Z = model.most_violating((sqa * r)[None, :], rows=np.array([i]))
        shrink = 1.0 - 1.0 / t
        if shrink <= 0:
            Wraw[:] = 0.0
            state[:2] = (1.0, 0.0)
            r[:] = 0.0
        else:
            state[0] *= shrink
            state[1] *= shrink * shrink
            r *= shrink
        c, _ = model.vertex_terms(i, Z[0])
        if np.any(c):
            a = (sqa * c) / (lam_p * t)
            state[1] += 2.0 * float(a @ r) + float(a @ a) * float(x @ x)
            Wraw += np.outer(a / state[0], x)
        if state[1] > radius * radius:
            state[0] *= radius / np.sqrt(state[1])
            state[1] = radius * radius
        if state[0] < 1e-8:
            Wraw *= state[0]
            state[0] = 1.0


# ============================================================================ working set
def _solve_working_set(data, lam, tol, max_iter, random_state, verbose):
    """Single-label (10) through the margin model and :func:`working_set.solve_hsvm`."""
    from .working_set import solve_hsvm

    if data.multilabel or data.margin is None:
        raise InputError("method='working_set' solves single-label NHSVM (10) only (its pairs are "
                         "leaves); use method='pairwise' for multi-label data or variant '13'")
    t0 = time.perf_counter()
    res = solve_hsvm(data.X, data.margin, C=1.0 / (2.0 * lam), kernel="linear", tol=tol,
                     max_iter=max_iter, random_state=random_state, verbose=verbose)
    W = np.asarray(res.weights, dtype=float)
    P, H = _nh.primal_objective(W, data, lam, return_slacks=True)
    D = 2.0 * lam * float(res.lower_bound)
    history = {k: list(v) if isinstance(v, (list, np.ndarray)) else v for k, v in res.history.items()}
    if "objective" in history and "lower_bound" in history:  # margin scale -> (10)'s scale
        history["objective"] = [2.0 * lam * v for v in history["objective"]]
        history["lower_bound"] = [2.0 * lam * v for v in history["lower_bound"]]
        history["gap"] = [_relgap(a, b) for a, b in zip(history["objective"], history["lower_bound"])]
    return NHSVMResult(weights=W, objective=float(P), lower_bound=D, n_iter=res.n_iter,
                       converged=_relgap(P, D) <= tol, tol=tol, dual=res.dual, history=history,
                       solve_time=time.perf_counter() - t0, name="NHSVM (working_set)", slacks=H,
                       method="working_set")
