"""The NHSVM dual solvers' view of a model, their dual state and their certificate.

The dual of (10) / (13) (Choi, Sasaki & Srebro, *Normalized Hierarchical SVM*,
arXiv:1508.02479, 2016; derivation in :mod:`hiercvx.solvers.nhsvm_fw`) is held in node space:
``g`` ``(n, M)`` and ``l`` ``(n,)``, with per-sample caches of the vertices (leaves or label
sets) that carry mass.  :class:`VertexModel` is what the solvers read of an
:class:`~hiercvx.models.nhsvm.NHSVMModel` (or of the weight step of a
:class:`~hiercvx.models.nhsvm.SharedNormModel`); :class:`DualState` the dual point and its
caches (kept between calls for warm starts); :func:`certify` the exact primal, the dual and
every block's gap at one ``W``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..inference import LabelSetOracle
from ..result import Solution, relative_gap
from ._nhsvm_kernels import (compact_slots, extend_support, gram_update, rebuild_support,
                              resync_kernel)
from .primitives import RowData, row_data

logger = logging.getLogger("hiercvx.solvers.nhsvm_fw")

__all__ = ["VertexModel", "vertex_model", "DualState", "certify", "primal_at", "finish", "record",
           "progress"]


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
        # "auto" on a large DAG is program (19) behind the closure cut, split at the root into
        # its disjoint components (the Gene Ontology's namespaces), each behind its bounds and
        # with branch and bound on its LP over the nodes the bounds keep: exact, and it never
        # runs an integer program over the whole graph, as the LP route's fallback does
        out.oracle = model.label_oracle(inference)
        out.loss = model.loss
        return out
    out.leaf_pos = np.ascontiguousarray(model.leaf_pos, dtype=np.int64)
    out.paths, out.offset, out.scale = model.paths, model.offset, model.scale
    return out


class DualState:
    """A dual point of (10) (``g`` ``(n, M)``, ``l`` ``(n,)``) with its vertex caches.

    Kept between calls so that a solve can be warm-started: the dual feasible set does not
    depend on ``lam`` nor on ``alpha``, so the shared-norm alternating algorithm re-solves its
    weight step from the previous dual point after each alpha step.

    Per block it also keeps what the compiled sweeps work on: the **support** (``supp``,
    ``slen``), the smaller of two unions that only grow, with its reference set ``sref``:
    ``0``, the nodes where some cached vertex differs from the true set; ``1``, the true set's
    nodes and those some cached vertex lacks (off it every direction ``t_i - z_j`` is ``-1``:
    the loss-augmented sets of a large DAG hold nearly every node, and this support is then a
    few percent of the graph), and the **Gram matrix** ``Q[i, j, l] = <a_j, a_l>`` of the cached directions
    ``a_j = sqrt(alpha) sigma_j (t_i - z_j)`` (:meth:`sync_gram` brings it up to date: the
    slots changed since, or all of them when ``sqrt(alpha)`` changed).  Label sets are pooled
    once as 0/1 bytes; an id no slot holds any more is recycled, so the pool never outgrows
    the ``n K`` slots.
    """

    def __init__(self, model: VertexModel, cache_size: int, ones_share: float = 0.25):
        self.ones_share = float(ones_share)
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
        self.idle = np.zeros((n, self.K), dtype=np.int64)  # certificates since a slot held mass
        self.budget = np.ones(n)
        self.n_evicted = 0
        # each block's support, the smaller of two unions that only grow (the sweeps and g_i
        # live on it): relative to the true set (the nodes where a cached vertex differs from
        # it) or to the all-ones set (the true set's nodes and those a cached vertex lacks)
        self.Tf = np.ascontiguousarray(model.T, dtype=float)
        self.mark = np.zeros((n, M), dtype=np.uint8)
        self.count = np.zeros((n, 2), dtype=np.int64)
        self.supp = np.zeros((n, M), dtype=np.int32)
        self.slen = np.zeros(n, dtype=np.int64)
        self.sref = np.zeros(n, dtype=np.int64)
        # each block's Gram matrix of its cached directions, valid for sqrt(alpha) = gram_sqa
        self.Q = np.zeros((n, self.K, self.K))
        self.dirty = np.zeros((n, self.K), dtype=np.bool_)
        self.gram_sqa = None
        if model.multilabel:
            # label sets as 0/1 bytes; an id no cache slot refers to any more is recycled, so
            # the pool holds at most n K sets however many passes run
            self._pool = np.zeros((64, M), dtype=np.uint8)
            self._pool_size = 0
            self._keys: dict = {}
            self._key_of: dict = {}
            self._refs = np.zeros(64, dtype=np.int64)
            self._free: list = []
        else:
            self._pool = model.paths

    @property
    def cache(self) -> tuple:
        """``(pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref)``: the caches,
        the blocks' supports, Gram matrices and reference sets as the compiled sweeps take them
        (``hiercvx.solvers._nhsvm_kernels.pairwise_sweep``)."""
        return (self.pool, self.cid, self.cbeta, self.coff, self.cscale, self.clen, self.budget,
                self.supp, self.slen, self.Q, self.sref)

    def sync_gram(self, model: VertexModel) -> None:
        """Bring the blocks' Gram matrices up to date: the slots changed since the last call,
        or all of them when ``sqrt(alpha)`` changed (the shared-norm alpha step)."""
        sqa = model.sqrt_alpha
        if self.gram_sqa is None or not np.array_equal(self.gram_sqa, sqa):
            self.dirty[:] = np.arange(self.K)[None, :] < self.clen[:, None]
            self.gram_sqa = sqa.copy()
        if self.dirty.any():
            gram_update(self.pool, self.Tf, np.ascontiguousarray(sqa, dtype=float), self.cid,
                        self.cscale, self.clen, self.supp, self.slen, self.sref, self.Q,
                        self.dirty)

    @property
    def pool(self) -> np.ndarray:
        """The vertices' node indicators (C-contiguous; 0/1 bytes for label sets, the float
        leaf paths when single-label)."""
        return self._pool

    def _pool_ids(self, Z: np.ndarray) -> np.ndarray:
        """Ids of the label sets ``Z`` in the shared pool (added when new, in a recycled slot
        when one is free)."""
        packed = np.packbits(Z, axis=1)
        ids = np.empty(len(Z), dtype=np.int64)
        for k, row in enumerate(packed):
            key = row.tobytes()
            j = self._keys.get(key)
            if j is None:
                if self._free:
                    j = self._free.pop()
                else:
                    j = self._pool_size
                    self._pool_size += 1
                    if j == len(self._pool):
                        self._pool = np.concatenate([self._pool, np.zeros_like(self._pool)])
                        self._refs = np.concatenate([self._refs, np.zeros_like(self._refs)])
                self._pool[j] = Z[k]
                self._keys[key] = j
                self._key_of[j] = key
            ids[k] = j
        return ids

    def _retain(self, new_ids: np.ndarray, old_ids: np.ndarray) -> None:
        """Reference counts of the pooled label sets after slots changed from ``old_ids`` to
        ``new_ids``; sets no slot holds any more are freed for reuse."""
        np.add.at(self._refs, new_ids, 1)
        old_ids = old_ids[old_ids >= 0]
        np.subtract.at(self._refs, old_ids, 1)
        for j in np.unique(old_ids[self._refs[old_ids] == 0]).tolist():
            del self._keys[self._key_of.pop(j)]
            self._free.append(j)

    def rebuild_weights(self, model: VertexModel) -> np.ndarray:
        """``V = sum_i (sqrt(alpha) g_i) x_i^T`` from scratch (no drift)."""
        GX = model.X.T @ self.G
        return np.ascontiguousarray(np.asarray(GX).T * model.sqrt_alpha[:, None])

    def resync(self, model: VertexModel, rows=None) -> None:
        """Recompute ``g`` and ``l`` from the cached masses (removes rounding drift): of every
        sample, or in place of the samples ``rows`` only."""
        if hasattr(self, "_keys") and self._pool_size == 0:
            return
        if rows is None:  # every sample, into fresh arrays
            G, l = np.empty_like(self.G), np.empty_like(self.l)
            rows = np.arange(G.shape[0])
        else:
            G, l = self.G, self.l
        resync_kernel(np.asarray(rows, dtype=np.int64), self.pool, self.cid, self.cbeta,
                      self.coff, self.cscale, self.Tf, self.supp, self.slen, self.sref, G, l)
        self.G, self.l = G, l

    def add(self, model: VertexModel, vertex, rows=None) -> tuple[int, bool]:
        """Add each sample's vertex (from :meth:`VertexModel.most_violating`) to its cache.

        Returns ``(number added, whether mass was evicted)``.  When mass was evicted, ``g`` and
        ``l`` of the samples that lost it are resynced and the caller must rebuild ``V``; those
        of the others stay as they were (fresh where ``add`` follows a :meth:`resync`, as at
        the pairwise solver's certificates, where the sweeps have not run since)."""
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
        evicted = np.zeros(0, dtype=np.int64)  # the samples whose evicted slot held mass
        if full.any():
            # reuse an empty slot (mass 0); otherwise evict the smallest mass to the slack
            fr = rows[full]
            target = np.argmin(self.cbeta[fr], axis=1)
            lost = self.cbeta[fr, target]
            evicted = fr[lost > 0]
            self.n_evicted += len(evicted)
            self.cbeta[fr, target] = 0.0
            slot[full] = target
        previous = self.cid[rows, slot].copy()
        self.cid[rows, slot] = ids
        self.dirty[rows, slot] = True
        self.idle[rows, slot] = 0
        if model.multilabel:
            self._retain(ids, previous)
        extend_support(self.pool, rows.astype(np.int64), ids.astype(np.int64), self.Tf, self.mark,
                       self.count, self.supp, self.slen, self.sref, self.ones_share)
        self.cbeta[rows, slot] = 0.0
        self.coff[rows, slot] = offsets
        self.cscale[rows, slot] = scales
        self.clen[rows] = np.minimum(np.maximum(self.clen[rows], slot + 1), self.K)
        if len(evicted):
            self.resync(model, rows=evicted)
        return len(rows), bool(len(evicted))

    def age(self) -> None:
        """One more certificate for every cached slot without mass (0 for those with mass)."""
        used = np.arange(self.K)[None, :] < self.clen[:, None]
        self.idle = np.where(self.cbeta > 0, 0, self.idle + used)

    def prune(self, max_idle: int) -> int:
        """Drop every cached vertex that has held no mass for more than ``max_idle``
        certificates (``g``, ``l`` and ``V`` do not change; the oracle finds a vertex again
        when it is needed) and recompute those blocks' supports from what stays.  Returns the
        number of vertices dropped."""
        drop = (self.cid >= 0) & (self.cbeta <= 0) & (self.idle > max_idle)
        rows = np.flatnonzero(drop.any(axis=1))
        if not len(rows):
            return 0
        gone = self.cid[drop]
        if hasattr(self, "_keys"):  # pooled label sets: release the ids no slot holds now
            self._retain(np.zeros(0, dtype=np.int64), gone)
        compact_slots(rows, drop, self.cid, self.cbeta, self.coff, self.cscale, self.idle,
                      self.clen, self.Q, self.dirty)
        rebuild_support(self.pool, rows, self.cid, self.clen, self.Tf, self.mark, self.count,
                        self.supp, self.slen, self.sref, self.ones_share)
        return int(gone.size)


def certify(model: VertexModel, V: np.ndarray, l: np.ndarray, lam: float, return_scores: bool = False):
    """``(P, D, H, vertex, W)`` at the dual point: exact primal at ``W = V / (2 lam)`` (and the
    node scores when asked)."""
    W = V / (2.0 * lam)
    S = model.node_scores(W)
    H, vertex = model.most_violating(S)
    norm2 = float(np.sum(V * V)) / (4.0 * lam)
    out = (norm2 + float(H.sum()), float(l.sum()) - norm2, H, vertex, W)
    return out + (S,) if return_scores else out


def primal_at(model: VertexModel, V: np.ndarray, lam: float):
    """``(P, H, W)``: the exact primal (all samples' loss-augmented inference) at
    ``W = V / (2 lam)``, its slacks and ``W``."""
    W = V / (2.0 * lam)
    H = model.most_violating(model.node_scores(W))[0]
    return float(np.sum(V * V)) / (4.0 * lam) + float(H.sum()), H, W


def finish(method, W, P, D, H, n_iter, converged, tol, history, t0, n_oracle, G=None, loss_term=0.0,
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


def record(history, it, t0, P, D, n_oracle):
    history.setdefault("n_iter", []).append(it)
    history.setdefault("time", []).append(time.perf_counter() - t0)
    history.setdefault("objective", []).append(P)
    history.setdefault("lower_bound", []).append(D)
    history.setdefault("gap", []).append(relative_gap(P, D))
    history.setdefault("n_oracle", []).append(n_oracle)


class PassLog:
    """The NHSVM solvers' progress: with ``verbose``, one INFO record of the ``hiercvx`` logger
    per pass (``"<desc> <unit> k/total: gap g ..."``, ``unit`` "pass" or, for the shared-norm
    SVM, "alternation"), which an estimator's ``verbose`` prints to
    stderr (``True``) or counts on its bar (``"progress"``), as every solver's records; the
    tqdm-like calls the passes make (``set_postfix``, ``update``, ``close``)."""

    def __init__(self, verbose, total, desc, unit="pass"):
        self.verbose, self.total, self.desc, self.unit = bool(verbose), total, desc, unit
        self.n, self.postfix = 0, {}

    def set_postfix(self, **values):
        self.postfix = values

    def update(self, k: int = 1):
        self.n += k
        if self.verbose:
            logger.info("%s %s %d/%d: %s", self.desc, self.unit, self.n, self.total,
                        " ".join(f"{key} {value}" for key, value in self.postfix.items()))

    def close(self):
        pass


def progress(verbose, total, desc, unit="pass") -> PassLog:
    return PassLog(verbose, total, desc, unit)
