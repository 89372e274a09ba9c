"""Fast NHSVM solvers with a certified duality gap: block-coordinate Frank–Wolfe on the dual.

The problem is the Normalized Hierarchical SVM (10) of Choi, Sasaki & Srebro,
*Normalized Hierarchical SVM* (arXiv:1508.02479, 2016), single-label (leaves, margin (9), or the variant (13)) or
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

Methods (``solve(model, lam, method=)``, ``model`` from :func:`hiercvx.models.nhsvm.prepare`):

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
    It has no dual: its ``lower_bound`` is the trivial 0, it runs ``max_iter`` epochs and
    always ends with the one ``ConvergenceWarning`` (uncertified).
``"cutting_plane"``  n-slack cutting planes (Joachims, Finley & Yu 2009) with an exact master:
    every round one batched exact inference at the master's ``W`` (the primal, hence the
    certificate) and one new vertex per violated sample; the master, the problem restricted to
    the vertices found, is solved by the interior point on explicit pair rows
    (:func:`~hiercvx.solvers.interior_point.solve_pair_rows`) in ``M d`` node weights, and its
    multipliers are the dual point.  A handful of rounds of 10-30 Newton steps each, where the
    Frank–Wolfe methods need hundreds of passes on noisy label sets to a 1e-8 gap; affordable
    while ``M d`` is at most :data:`MASTER_MAX_DIMENSION` (:func:`cutting_plane_applicable`).
``"working_set"``, ``"interior_point"``  Single-label (10) only: the pair model ``model.margin``
    (``C = 1/(2 lam)``, objective times ``2 lam``) handed to the margin engine
    (:func:`hiercvx.solvers.margin_engine.solve`) with that solver.
``"auto"``  the margin engine's choice for single-label (10); otherwise (multi-label, (13))
    up to ``HANDOFF_PASSES`` (50) pairwise passes -- enough where the labels carry signal --
    then, if the gap is still above ``tol``, cutting planes started from the support of the
    pairwise caches and its weights, when the master is affordable; else ``"pairwise"`` alone
    (GO-sized DAGs).

Every method's ``objective`` is recomputed exactly (all samples' loss-augmented inference at
the returned ``W``); the dual methods' ``lower_bound`` is ``D`` at a feasible ``beta``.
``benchmarks/bench_nhsvm.py`` measures which reaches a 1e-4 gap first.

Single-label models are first collapsed (:meth:`~hiercvx.models.nhsvm.NHSVMModel.collapsed`:
each group of interchangeable idle leaves becomes one leaf of that multiplicity), solved, and
lifted back: the objective is recomputed and the dual point (node-space ``g``, or the margin
engine's pair multipliers) evaluated on the full model, so a 5000-leaf star whose samples sit
on a few leaves costs what those leaves cost (``extras["n_collapsed"]``: nodes removed).

With ``fit_intercept`` the model's ``X`` carries LIBLINEAR's bias column (``[X, s]``): every
method runs on it unchanged and :func:`split_intercept` reports ``weights`` without that
column and ``extras["intercept"]`` (``b_n = s * W~[n, -1]``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from tqdm.auto import tqdm

from .._validation import check_positive
from ..exceptions import InputError
from ..inference import LabelSetOracle, auto_method
from ..models import margin as _margin
from ..models.nhsvm import CollapsedLeaves, NHSVMModel, primal_objective
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import interior_point, margin_engine
from .primitives import RowData, blas_threads, row_data, row_dot, row_sq_norms

logger = logging.getLogger(__name__)

__all__ = ["METHODS", "solve", "DualState", "VertexModel", "vertex_model", "pairwise",
           "cutting_plane", "cutting_plane_applicable",
           "certify", "node_products", "add_outer", "split_intercept"]

METHODS = ("pairwise", "cutting_plane", "bcfw", "sgd", "working_set", "interior_point", "auto")

#: ``"auto"``: pairwise passes before cutting planes take over (multi-label, (13))
HANDOFF_PASSES = 50
#: the cutting-plane master's interior point: at most this many node weights ``M d`` and
#: multiply-adds per Newton step (below the margin engine's limits: a master is solved once a
#: round, and pairwise Frank-Wolfe is the faster where the labels carry signal)
MASTER_MAX_DIMENSION = 4000
MASTER_MAX_STEP_COST = 4e10
#: with a DAG program per sample as the oracle, the cached problem is refined this many times
#: (eps / 10 each) between two certificates.  GO, 400 samples, 8 passes: the same gap after
#: each certificate with 0, 1, 3 or 10 refinements (the new vertices decide the progress, not
#: the inner accuracy), in 38 / 37 / 46 / 82 s: one is enough
EXPENSIVE_REFINES = 1

# Reassociation lets LLVM vectorize the dot products and rank-one updates (inputs are finite).
_FAST = {"reassoc", "contract", "nsz"}


# ============================================================================ compiled kernels
@njit(cache=True, fastmath=_FAST)
def node_products(mode, V, i, X, indptr, indices, xvals, out):
    """``out[m] = V[m] . x_i`` for every node ``m`` (dense / CSR rows, :func:`row_dot`)."""
    for m in range(V.shape[0]):
        out[m] = row_dot(mode, V, m, i, X, indptr, indices, xvals)


@njit(cache=True, fastmath=_FAST)
def add_outer(mode, V, coef, i, X, indptr, indices, xvals, K):
    """``V += coef x_i^T`` over the nodes with ``coef[m] != 0`` (dense / CSR rows; ``K`` unused).

    Mathematically ``row_axpy`` of :mod:`.primitives` once per node, but written out: calling
    ``row_axpy`` from the compiled sweeps made them 2-3x slower (measured on a 2000 x 100
    problem; the call is not inlined there), while :func:`node_products` through ``row_dot``
    runs at the speed of the written-out loop."""
    for m in range(V.shape[0]):
        c = coef[m]
        if c == 0.0:
            continue
        if mode == 1:
            for p in range(indptr[i], indptr[i + 1]):
                V[m, indices[p]] += c * xvals[p]
        else:
            for k in range(V.shape[1]):
                V[m, k] += c * X[i, k]


@njit(cache=True, fastmath=_FAST)
def _pairwise_sweep(order, mode, Xd, indptr, indices, xvals, K, V, sqa, Tf, pool, cid, cbeta, coff,
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
    n_slots = cid.shape[1]
    r = np.empty(M)
    s = np.empty(M)
    u = np.empty(M)
    delta = np.empty(M)
    grad = np.empty(n_slots)
    total = 0
    worst = 0.0
    for i in order:
        k = clen[i]
        bgap[i] = 0.0
        if k == 0:
            continue
        node_products(mode, V, i, Xd, indptr, indices, xvals, r)
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
            add_outer(mode, V, u, i, Xd, indptr, indices, xvals, K)
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
def _bcfw_sweep_single(order, mode, Xd, indptr, indices, xvals, K, V, sqa, paths, leaf_pos, offset,
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
        node_products(mode, V, i, Xd, indptr, indices, xvals, r)
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
        add_outer(mode, V, dg, i, Xd, indptr, indices, xvals, K)
    return gaps


@njit(cache=True, fastmath=_FAST)
def _sgd_epoch_single(order, mode, Xd, indptr, indices, xvals, K, Wraw, state, sqa, paths, leaf_pos,
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
        node_products(mode, Wraw, i, Xd, indptr, indices, xvals, r)
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
            add_outer(mode, Wraw, a, i, Xd, indptr, indices, xvals, K)
        if state[1] > radius * radius:
            state[0] *= radius / np.sqrt(state[1])
            state[1] = radius * radius
        if state[0] < 1e-8:  # fold the scale back in before it underflows
            Wraw *= state[0]
            state[0] = 1.0
    return state[2]


# ============================================================================ the solver's view
@dataclass
class VertexModel:
    """What the dual solvers need of an NHSVM-type problem (:func:`vertex_model`): the rows in
    the compiled loops' form, ``sqrt(alpha)`` (the shared-norm solver changes it between
    alpha steps), the closed label sets ``T`` and the problem's oracle.

    Single-label: vertices are leaves (``paths`` ``(q, M)``), ``offset[t, l]`` / ``scale[t, l]``
    are ``b`` / ``sigma`` for true leaf ``t`` and candidate ``l``.  Multi-label: vertices are
    label sets found by ``oracle`` with the decomposable ``loss`` (``b = Delta``, ``sigma = 1``).
    """

    source: object                 # NHSVMModel or SharedNormModel: the oracle and vertex terms
    X: object
    rows: RowData
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
        """Exact loss-augmented inference at node scores ``S`` (the model's ``oracle``):
        ``(slacks, vertex)``, a leaf position (``-1``: nothing violated) or a bool label set."""
        if self.multilabel:
            return self.source.oracle(S, rows, label_oracle=self.oracle)
        return self.source.oracle(S, rows)

    def vertex_terms(self, i: int, vertex) -> tuple[np.ndarray, float]:
        """``(c, b)`` of one vertex for sample ``i`` (``c`` over the nodes, unscaled by alpha)."""
        return self.source.vertex_terms(i, vertex)


def _row_ready(X):
    """``X`` as sorted CSR or C-contiguous float rows, and its :class:`RowData`."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
    else:
        X = np.ascontiguousarray(X, dtype=float)
    return X, row_data(X)


def vertex_model(model, inference: str = "auto", sqrt_alpha=None) -> VertexModel:
    """The solver's view of an :class:`~hiercvx.models.nhsvm.NHSVMModel` (``sqrt(alpha)`` its
    own) or of a :class:`~hiercvx.models.nhsvm.SharedNormModel` (``sqrt_alpha`` given: the
    weight step of (14) for fixed alpha)."""
    X, rows = _row_ready(model.X)
    if sqrt_alpha is None:
        sqrt_alpha = model.sqrt_alpha
    out = VertexModel(source=model, X=X, rows=rows, sqrt_alpha=np.asarray(sqrt_alpha, dtype=float),
                      T=np.asarray(model.T), multilabel=bool(getattr(model, "multilabel", False)))
    if out.multilabel:
        if inference == "auto" and auto_method(model.H) == "ilp":
            # the paper trains with the LP relaxation of (19); "lp" re-solves the fractional
            # samples with the integer program, so it stays exact, and HiGHS's LP is an order
            # of magnitude faster than its branch-and-bound on these small programs
            inference = "lp"
        out.oracle = model.label_oracle(inference)
        out.loss = model.loss
        return out
    out.leaf_pos = np.ascontiguousarray(model.leaf_pos, dtype=np.int64)
    out.paths, out.offset, out.scale = model.paths, model.offset, model.scale
    return out


# ============================================================================ dual state
class DualState:
    """A dual point of (10) (``g`` ``(n, M)``, ``l`` ``(n,)``) with its vertex caches.

    Kept between calls so that a solve can be warm-started: the dual feasible set does not
    depend on ``lam`` nor on ``alpha``, so the shared-norm alternating algorithm re-solves its
    weight step from the previous dual point after each alpha step.
    """

    def __init__(self, model: VertexModel, cache_size: int):
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

    def rebuild_weights(self, model: VertexModel) -> np.ndarray:
        """``V = sum_i (sqrt(alpha) g_i) x_i^T`` from scratch (no drift)."""
        GX = model.X.T @ self.G
        return np.ascontiguousarray(np.asarray(GX).T * model.sqrt_alpha[:, None])

    def resync(self, model: VertexModel) -> None:
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

    def add(self, model: VertexModel, vertex, rows=None) -> tuple[int, bool]:
        """Add each sample's vertex (from :meth:`VertexModel.most_violating`) to its cache.

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


# ============================================================================ public API
def solve(model: NHSVMModel, lam: float = 1.0, *, method: str = "pairwise", tol: float = 1e-6,
          max_iter: int = 1000, verbose: bool = False, cache_size: int = 32, max_steps: int = 50,
          inference: str = "auto", state: DualState | None = None, time_limit: float | None = None,
          random_state=0) -> Solution:
    """NHSVM (10) / (13) on a prepared model (:func:`hiercvx.models.nhsvm.prepare`).

    Parameters
    ----------
    model : :class:`~hiercvx.models.nhsvm.NHSVMModel` (single-label (10) or (13), or multi-label (10))
    lam : the regularization weight of (10)
    method : ``"pairwise"`` (default), ``"cutting_plane"``, ``"bcfw"``, ``"sgd"``,
        ``"working_set"``, ``"interior_point"`` or ``"auto"`` (module docstring)
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
    :class:`~hiercvx.result.Solution`: ``weights`` = ``W`` ``(M, d)`` (predict with
    ``model.scores`` and :func:`hiercvx.inference.best_leaf` /
    :func:`~hiercvx.inference.best_label_set`), ``dual`` = ``g`` ``(n, M)``; extras
    ``slacks`` (``H_i(W)``), ``dual_coef`` (``g``; ``None`` for SGD), ``loss_term``
    (``sum_i l_i``), ``n_oracle`` (samples passed to loss-augmented inference), ``method``,
    ``state`` (the :class:`DualState`, for warm starts).
    """
    if not isinstance(model, NHSVMModel):
        raise InputError("model must be an NHSVMModel from hiercvx.models.nhsvm.prepare(X, Y, H, ...), "
                         f"got {type(model).__name__}")
    if method not in METHODS:
        raise InputError(f"unknown NHSVM solver method {method!r}; choose one of {METHODS}")
    lam = check_positive(lam, "lam")
    check_iteration_options(tol, max_iter, who="nhsvm_fw.solve")
    tol, max_iter = float(tol), int(max_iter)
    single = not model.multilabel and model.variant == "nhsvm"
    # interchangeable idle leaves solved as one, unless warm-started from a full-model state
    collapse = model.collapsed()
    if collapse is not None and state is not None and state.G.shape[1] != collapse.model.n_nodes:
        collapse = None
    work = model if collapse is None else collapse.model
    if method in ("working_set", "interior_point") or (method == "auto" and single):
        res = _solve_margin(work, lam, tol, max_iter, random_state, verbose, method)
    else:
        view = vertex_model(work, inference)
        if method == "auto":  # multi-label or (13): pairwise, finished by cutting planes
            method = "auto" if cutting_plane_applicable(view) else "pairwise"
        with blas_threads(1):
            if method == "auto":
                res = _pairwise_then_cutting_planes(view, lam, tol, max_iter, cache_size, max_steps,
                                                    state, time_limit, random_state, verbose)
            elif method == "cutting_plane":
                res = cutting_plane(view, lam, tol, max_iter, time_limit, verbose)
            elif method == "pairwise":
                res = pairwise(view, lam, tol, max_iter, cache_size, max_steps, state, time_limit,
                               random_state, verbose)
            elif method == "bcfw":
                res = _bcfw(view, lam, tol, max_iter, time_limit, random_state, verbose)
            else:
                res = _sgd(view, lam, max_iter, time_limit, random_state, verbose)
    if collapse is not None:
        res = _lift(collapse, res, lam, tol)
    return split_intercept(model, res)


def _lift(collapse: CollapsedLeaves, res: Solution, lam: float, tol: float) -> Solution:
    """A solution of the collapsed model as the full model's, certified on the full model:
    the objective recomputed at the lifted ``W`` and the lower bound the full model's dual at
    the lifted dual point (node-space ``g`` of the Frank-Wolfe and cutting-plane methods, or
    the margin engine's pair multipliers ``alpha``, ``beta = 2 lam alpha``; SGD has none)."""
    full, small = collapse.full, collapse.model
    W = collapse.lift_weights(res.weights)
    P, H = primal_objective(W, full, lam, return_slacks=True)
    method = res.extras.get("method")
    if method in ("pairwise", "bcfw", "cutting_plane"):
        D = full.dual_value(collapse.lift_dual(res.dual), np.array([res.extras["loss_term"]]), lam)
    elif method == "sgd":
        D = 0.0
    else:
        md = small.margin
        beta = np.zeros((small.n_samples, len(small.H.leaves)))
        beta[md.pair_i, md.pair_ybar] = 2.0 * lam * np.asarray(res.dual, dtype=float)
        D = full.lower_bound(collapse.lift_masses(beta), lam)
    res.weights, res.objective, res.lower_bound = W, float(P), float(D)
    res.extras["slacks"] = H
    res.extras["n_collapsed"] = collapse.n_removed
    res.converged = bool(res.converged and reached(relative_gap(P, D), tol))
    return res


def split_intercept(model, result: Solution) -> Solution:
    """``result`` with ``weights`` over the features as given and, when the model has
    ``fit_intercept``, ``extras["intercept"]`` (the bias column split off, ``b = s * W~[:, -1]``)."""
    if model.fit_intercept:
        result.weights, result.extras["intercept"] = model.split_weights(result.weights)
    return result


# ============================================================================ certificate
def certify(model: VertexModel, V: np.ndarray, l: np.ndarray, lam: float, return_scores: bool = False):
    """``(P, D, H, vertex, W)`` at the dual point: exact primal at ``W = V / (2 lam)`` (and the
    node scores when asked)."""
    W = V / (2.0 * lam)
    S = model.node_scores(W)
    H, vertex = model.most_violating(S)
    norm2 = float(np.sum(V * V)) / (4.0 * lam)
    out = (norm2 + float(H.sum()), float(l.sum()) - norm2, H, vertex, W)
    return out + (S,) if return_scores else out


def _finish(method, W, P, D, H, n_iter, converged, tol, history, t0, n_oracle, G=None, loss_term=0.0,
            state=None, warn=True) -> Solution:
    res = Solution(weights=W, objective=float(P), lower_bound=float(D), n_iter=n_iter,
                   converged=converged, tol=tol, dual=G, history=history,
                   solve_time=time.perf_counter() - t0, name=f"NHSVM ({method})",
                   solver=f"nhsvm_fw.{method}",
                   extras={"slacks": H, "dual_coef": G, "loss_term": float(loss_term),
                           "n_oracle": n_oracle, "method": method, "state": state})
    if warn:  # user-facing stack: _finish <- the method <- solve <- caller
        res.warn_unless_converged("passes", stacklevel=4)
    logger.info("%s", res)
    return res


def _record(history, it, t0, P, D, n_oracle):
    history.setdefault("n_iter", []).append(it)
    history.setdefault("time", []).append(time.perf_counter() - t0)
    history.setdefault("objective", []).append(P)
    history.setdefault("lower_bound", []).append(D)
    history.setdefault("gap", []).append(relative_gap(P, D))
    history.setdefault("n_oracle", []).append(n_oracle)


def _progress(verbose, total, desc):
    return tqdm(total=total, desc=desc, unit="pass", disable=not verbose)


# ============================================================================ pairwise BCFW
def pairwise(model: VertexModel, lam, tol, max_iter, cache_size=32, max_steps=50, state=None,
             time_limit=None, random_state=0, verbose=False, inner_sweeps=20, t0=None,
             quiet=False) -> Solution:
    """Pairwise BCFW with vertex caches on a :class:`VertexModel` (no option checks: :func:`solve`
    and the shared-norm solver check theirs); ``quiet``: no ``ConvergenceWarning``.

    One iteration = one certificate (exact inference on
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
    xsq = row_sq_norms(model.rows)
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
            P, D, H, vertex, W, S = certify(model, V, state.l, lam, return_scores=True)
            n_oracle += n
            best_D = max(best_D, D)
            if P < best[0]:  # W(beta) is not monotone in P: keep the best primal point
                best = (P, W, H)
            gap = relative_gap(best[0], best_D)
            _record(history, it, t0, best[0], best_D, n_oracle)
            history.setdefault("visits", []).append(visits)
            bar.set_postfix(gap=f"{gap:.2e}")
            if reached(gap, tol):
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
            visits += _sweep_blocks(model, state, V, Tf, xsq, inv2lam, eps, active, rng, bgap,
                                    int(max_steps), inner_sweeps, expensive_oracle)
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
                   warn=not quiet)


@njit(cache=True)
def _pairwise_sweeps(active, n_sweeps, seed, mode, Xd, indptr, indices, xvals, K, V, sqa, Tf, pool,
                     cid, cbeta, coff, cscale, clen, budget, G, lsum, xsq, inv2lam, eps, max_steps,
                     bgap):
    """Up to ``n_sweeps`` of :func:`_pairwise_sweep` over ``active`` in random orders (seeded by
    ``seed``), each dropping the blocks whose cached gap fell below ``eps``; returns the block
    visits and the blocks still active."""
    np.random.seed(seed)
    visits = 0
    for _ in range(n_sweeps):
        if active.size == 0:
            break
        order = np.random.permutation(active)
        _pairwise_sweep(order, mode, Xd, indptr, indices, xvals, K, V, sqa, Tf, pool, cid, cbeta,
                        coff, cscale, clen, budget, G, lsum, xsq, inv2lam, eps, max_steps, bgap)
        visits += order.size
        active = active[bgap[active] > eps]
    return visits, active


def _sweep_blocks(model, state, V, Tf, xsq, inv2lam, eps, active, rng, bgap, max_steps, inner_sweeps,
                  expensive_oracle) -> int:
    """Up to ``inner_sweeps`` compiled sweeps over the ``active`` blocks, each dropping the blocks
    whose cached gap fell below ``eps``; returns the number of block visits."""
    xs = model.rows
    visits = 0
    refine = 0
    while True:
        # the sweeps and their random orders in one compiled call: on small problems the
        # Python loop around them dominated a pass (shared-norm DAG row: 0.51 -> 0.40 s)
        done, active = _pairwise_sweeps(
            np.asarray(active, dtype=np.int64), int(inner_sweeps), int(rng.integers(2 ** 31)),
            xs.mode, xs.X, xs.indptr, xs.indices, xs.xvals, xs.K, V, model.sqrt_alpha, Tf,
            state.pool, state.cid, state.cbeta, state.coff, state.cscale, state.clen,
            state.budget, state.G, state.l, xsq, inv2lam, eps, max_steps, bgap)
        visits += int(done)
        # An expensive oracle (a DAG program per sample) is worth more work on the cached
        # problem: refine it (10x smaller eps, every cached block), as a cutting-plane method
        # would.  Decided by the oracle's kind, not by timings, so that results are reproducible.
        refine += 1
        if refine > EXPENSIVE_REFINES or not expensive_oracle:
            return visits
        eps *= 0.1
        active = np.flatnonzero(state.clen > 0).astype(np.int64)


# ============================================================================ cutting planes
def cutting_plane_applicable(model: VertexModel) -> bool:
    """Whether the cutting-plane method's master (an interior point in the node weights,
    ``M d`` variables) is affordable: ``M d <= MASTER_MAX_DIMENSION``, a Newton step within
    :data:`MASTER_MAX_STEP_COST` and the dense features within
    ``interior_point.Options().max_feature_entries``."""
    n, d = model.X.shape
    M = model.n_nodes
    return (M * d <= MASTER_MAX_DIMENSION
            and n * d <= interior_point.Options().max_feature_entries
            and interior_point.row_step_cost(n, M, d) <= MASTER_MAX_STEP_COST)


def cutting_plane(model: VertexModel, lam, tol, max_iter, time_limit=None, verbose=False,
                  start: Solution | None = None) -> Solution:
    """n-slack cutting planes (SVM-struct, Joachims et al. 2009) with an exact master.

    Each round runs exact loss-augmented inference for every sample at the master's ``W``
    (the primal (10) / (13) exactly), adds each sample's most violating vertex (label set or
    leaf) to its working set when it is violated beyond the master's slack, and solves the
    master -- the primal restricted to the working sets, rows ``sqrt(alpha) * c_iy`` and offsets
    ``b_iy`` (module docstring) -- by the interior point on explicit pair rows
    (:func:`~hiercvx.solvers.interior_point.solve_pair_rows`, ``C = 1 / (2 lam)``, objective
    times ``2 lam``).  The master's multipliers, ``beta = 2 lam
    alpha`` on the working sets' label sets, are a feasible point of the full dual, valued by
    the model (:meth:`~hiercvx.models.nhsvm.NHSVMModel.dual_value`): the certificate.  The
    master is solved to a tolerance a tenth of the current gap (at most 1e-3, at least a tenth
    of ``tol``), so early rounds take few Newton steps.  One iteration = one round.

    ``start``: a pairwise Frank-Wolfe result to continue from (``"auto"``): its weights are the
    first round's ``W``, the vertices its caches hold with mass are the first working sets,
    and its primal and dual stay in the certificate."""
    t0 = time.perf_counter()
    X = model.X
    F = np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=float)
    n, M = model.n_samples, model.n_nodes
    sa = model.sqrt_alpha
    C = 1.0 / (2.0 * lam)
    rows: list[list[np.ndarray]] = [[] for _ in range(n)]     # c of each cut, per sample
    offsets: list[list[float]] = [[] for _ in range(n)]
    seen: list[set] = [set() for _ in range(n)]
    W = np.zeros((M, F.shape[1]))
    master_slack = np.zeros(n)
    history: dict = {}
    best = (np.inf, W, None)
    best_D, n_oracle, converged = -np.inf, 0, False
    dual_point = (np.zeros((n, M)), 0.0)  # (g, sum_i l_i) of best_D
    master_tol = 1e-3

    def add_cut(i, vertex) -> bool:
        key = vertex.tobytes() if model.multilabel else int(vertex)
        if key in seen[i] or key == -1:
            return False
        seen[i].add(key)
        c, b_i = model.vertex_terms(i, vertex)
        rows[i].append(c)
        offsets[i].append(b_i)
        return True

    if start is not None:
        W = np.asarray(start.weights, dtype=float)
        best_D, n_oracle = float(start.lower_bound), int(start.extras.get("n_oracle", 0))
        dual_point = (np.asarray(start.dual, dtype=float), float(start.extras["loss_term"]))
        state = start.extras["state"]
        for i, k in zip(*np.nonzero((state.cid >= 0) & (state.cbeta > 0))):
            vertex = state.pool[state.cid[i, k]]
            add_cut(i, vertex.astype(bool) if model.multilabel else int(state.cid[i, k]))
        master_tol = min(1e-3, max(0.1 * tol, 0.1 * start.gap, 1e-12))
    bar = _progress(verbose, max_iter, "NHSVM cutting planes")
    try:
        S = None  # node scores at W, when the last round computed them already
        for it in range(max_iter + 1):
            S = model.node_scores(W) if S is None else S
            H, Z = model.most_violating(S)
            n_oracle += n
            P = lam * float(np.sum(W * W)) + float(H.sum())
            if P < best[0]:
                best = (P, W, H)
            gap = relative_gap(best[0], best_D)
            _record(history, it, t0, best[0], best_D, n_oracle)
            bar.set_postfix(gap=f"{gap:.2e}", cuts=sum(len(r) for r in rows))
            if reached(gap, tol):
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            added = 0
            margin = 1e-9 * max(1.0, best[0]) / n
            for i in np.flatnonzero(H > master_slack + margin):
                added += add_cut(i, Z[i])
            if not added:  # nothing new violated: only a more accurate master can close the gap
                if master_tol <= 1e-12:
                    break
                master_tol = max(1e-12, 0.01 * master_tol)
            else:
                master_tol = min(1e-3, max(0.1 * tol, 0.1 * gap, 1e-12))
            counts = np.array([len(r) for r in rows])
            if not counts.any():  # nothing was ever violated: W = 0 is optimal, the bound 0
                best_D = max(best_D, 0.0)
                continue
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=ptr[1:])
            cuts = np.vstack([np.asarray(r) for r in rows if r])
            R = cuts * sa
            b = np.concatenate([np.asarray(o) for o in offsets if o])
            master = interior_point.solve_pair_rows(F, R, ptr, b, np.ones(b.size), np.full(n, C),
                                                    tol=master_tol, max_iter=200)
            W = np.asarray(master.weights)
            beta = 2.0 * lam * np.asarray(master.dual)
            sample = np.repeat(np.arange(n), counts)
            G = np.zeros((n, M))
            np.add.at(G, sample, beta[:, None] * cuts)
            l = np.bincount(sample, weights=beta * b, minlength=n)
            D = model.source.dual_value(G, l, lam)
            if D > best_D:
                best_D, dual_point = D, (G, float(l.sum()))
            # the master's slack at W: a cut found again below it adds nothing
            S = model.node_scores(W)  # also the next round's
            pair_values = b - np.einsum("pm,pm->p", cuts, S[sample])
            master_slack = np.zeros(n)
            np.maximum.at(master_slack, sample, pair_values)
            bar.update(1)
    finally:
        bar.close()
    P, W, H = best
    return _finish("cutting_plane", W, P, best_D, H, it, converged, tol, history, t0, n_oracle,
                   G=dual_point[0], loss_term=dual_point[1])


def _pairwise_then_cutting_planes(view, lam, tol, max_iter, cache_size, max_steps, state,
                                  time_limit, random_state, verbose) -> Solution:
    """``"auto"`` on label sets and (13): up to :data:`HANDOFF_PASSES` pairwise passes (enough
    where the labels carry signal), then cutting planes from the support of its caches (where
    they do not: random labels take pairwise thousands of passes to a 1e-8 gap)."""
    t0 = time.perf_counter()
    first = pairwise(view, lam, tol, min(max_iter, HANDOFF_PASSES), cache_size, max_steps, state,
                     time_limit, random_state, verbose, t0=t0, quiet=True)
    if first.converged:
        return first
    res = cutting_plane(view, lam, tol, max(max_iter - first.n_iter, 0), time_limit, verbose,
                        start=first)
    res.extras["pairwise_passes"] = first.n_iter
    res.solve_time = time.perf_counter() - t0
    return res


# ============================================================================ plain BCFW
def _bcfw(model, lam, tol, max_iter, time_limit, random_state, verbose):
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    n, M = model.n_samples, model.n_nodes
    G = np.zeros((n, M))
    l = np.zeros(n)
    V = np.zeros((M, model.X.shape[1]))
    xs = model.rows
    xsq = row_sq_norms(xs)
    inv2lam = 0.5 / lam
    history: dict = {}
    n_oracle = 0
    best_D = -np.inf
    converged = False
    bar = _progress(verbose, max_iter, "NHSVM BCFW")
    try:
        for it in range(max_iter + 1):
            V = np.ascontiguousarray((np.asarray(model.X.T @ G).T) * model.sqrt_alpha[:, None])
            P, D, H, _, W = certify(model, V, l, lam)
            n_oracle += n
            best_D = max(best_D, D)
            gap = relative_gap(P, best_D)
            _record(history, it, t0, P, best_D, n_oracle)
            bar.set_postfix(gap=f"{gap:.2e}")
            if reached(gap, tol):
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                _bcfw_sweep_single(order, xs.mode, xs.X, xs.indptr, xs.indices, xs.xvals, xs.K, V, model.sqrt_alpha,
                                   model.paths, model.leaf_pos, model.offset, model.scale, G, l, xsq,
                                   inv2lam)
            else:
                _bcfw_sweep_python(model, order, V, G, l, xsq, inv2lam)
            n_oracle += n
            bar.update(1)
    finally:
        bar.close()
    return _finish("bcfw", W, P, best_D, H, it, converged, tol, history, t0, n_oracle, G=G,
                   loss_term=float(l.sum()))


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
    xs = model.rows
    xsq = row_sq_norms(xs)
    history: dict = {}
    best = (np.inf, None, None)
    n_oracle = 0
    bar = _progress(verbose, max_iter, "NHSVM SGD")
    try:
        for it in range(1, max_iter + 1):
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                _sgd_epoch_single(order, xs.mode, xs.X, xs.indptr, xs.indices, xs.xvals, xs.K, Wraw, sgd_state,
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
    res = _finish("sgd", W, P, 0.0, H, it, False, 0.0, history, t0, n_oracle, warn=False)
    # no dual, so never certified: say so once (user-facing stack: _sgd <- solve <- caller)
    res.warn_unless_converged("epochs", stacklevel=3, reason=(
        "without a certificate (SGD has no dual bound; its lower_bound is the trivial 0): use "
        "method='pairwise' or 'bcfw' for a certified gap"))
    return res


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
def _solve_margin(model: NHSVMModel, lam, tol, max_iter, random_state, verbose,
                  solver: str) -> Solution:
    """Single-label (10) through its pair model (``C = 1 / (2 lam)``, objective times ``2 lam``)
    and the margin engine (:func:`hiercvx.solvers.margin_engine.solve`: ``solver`` is
    ``"working_set"``, ``"interior_point"`` or ``"auto"``)."""
    if model.multilabel or model.variant != "nhsvm":
        raise InputError(f"method={solver!r} solves single-label NHSVM (10) only (its pairs are "
                         "leaves); use method='pairwise' for multi-label data or variant '13'")
    t0 = time.perf_counter()
    res = margin_engine.solve(_margin.model_from_data(model.X, model.margin), C=1.0 / (2.0 * lam),
                              solver=solver, tol=tol, max_iter=max_iter,
                              random_state=random_state, verbose=verbose)
    W = np.asarray(res.weights, dtype=float)
    P, H = primal_objective(W, model, lam, return_slacks=True)
    D = 2.0 * lam * float(res.lower_bound)
    history = {k: list(v) if isinstance(v, (list, np.ndarray)) else v for k, v in res.history.items()}
    if "objective" in history and "lower_bound" in history:  # margin scale -> (10)'s scale
        history["objective"] = [2.0 * lam * v for v in history["objective"]]
        history["lower_bound"] = [2.0 * lam * v for v in history["lower_bound"]]
        history["gap"] = [relative_gap(a, b) for a, b in zip(history["objective"], history["lower_bound"])]
    return Solution(weights=W, objective=float(P), lower_bound=D, n_iter=res.n_iter,
                    converged=reached(relative_gap(P, D), tol), tol=tol, dual=res.dual, history=history,
                    solve_time=time.perf_counter() - t0, name=f"NHSVM ({res.solver})",
                    solver=f"nhsvm_fw.{res.solver}", extras={"slacks": H, "method": res.solver})
