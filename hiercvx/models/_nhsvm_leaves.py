"""Labels, leaf vertices, interchangeable leaves and the bias of the NHSVM models.

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016.  What :class:`~hiercvx.models.nhsvm.NHSVMModel` ((10) / (13)) and
:class:`~hiercvx.models.nhsvm.SharedNormModel` ((14)) share:

* :func:`closed_labels`: labels as closed sets over ``H.nodes`` (leaves, or sets of leaves);
* :func:`class_loss` and the loss rows of the leaves some sample holds (``held_leaves``): a
  single-label problem uses only those rows of its ``(q, q)`` margin / loss;
* :func:`leaf_violations`: the loss-augmented argmax over the leaves through the sparse
  leaf-path matrix;
* :class:`CollapsedLeaves`: a group of interchangeable idle leaves as one leaf of that
  multiplicity, and the maps that lift a solution and a dual point back;
* :class:`NodeBias`: LIBLINEAR's regularized bias (:mod:`hiercvx.bias`): the model's ``X`` is
  ``[X, s]`` and node weights carry a bias column ``b_n / s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import check_target
from ..bias import append_constant, join_bias, split_bias
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy, is_label_set
from ..losses import loss_matrix, pairwise_loss
from . import margin as _margin

__all__ = ["closed_labels", "class_loss", "leaf_violations", "held_rows", "leaf_pair_loss",
           "leaf_vertices", "one_leaf_margin", "LeafVertices", "CollapsedLeaves",
           "interchangeable_groups", "NodeBias", "dense"]


def dense(a) -> np.ndarray:
    """``a`` as a dense array (sparse products densified)."""
    return a.toarray() if sp.issparse(a) else np.asarray(a)


# ====================================================================== labels
def closed_labels(Y, H: Hierarchy, n_samples: int, multilabel: bool | None):
    """``(T, leaf_pos, multilabel)``: closed label sets ``T`` ``(n, M)`` bool, each sample's leaf
    (position in ``H.leaves``; single-label only) and the label space used."""
    check_target(Y, "Y", allow_mixed=True)
    if sp.issparse(Y) or (isinstance(Y, np.ndarray) and Y.ndim == 2):
        inferred = True
    else:
        if isinstance(Y, (str, bytes)):
            raise LabelError("Y must hold one label (or label set) per sample, got a single string")
        Y = list(Y)
        inferred = any(is_label_set(item, H) for item in Y)
    multilabel = inferred if multilabel is None else bool(multilabel)
    ind = H.label_indicator(Y)  # unknown node names raise LabelError here
    if ind.shape[0] != n_samples:
        raise InputError(f"Y has {ind.shape[0]} entries but X has {n_samples} rows; give one label "
                         "(or label set) per sample")
    leaf_mask = H.leaf_mask
    leaf_part = ind[:, np.flatnonzero(leaf_mask)]
    counts = np.asarray(leaf_part.sum(axis=1)).ravel()
    if np.any(counts == 0):
        i = int(np.flatnonzero(counts == 0)[0])
        labels = [H.nodes[j] for j in ind[i].indices]
        if labels:
            raise LabelError(f"sample {i} is labelled {labels!r}, which are internal nodes; NHSVM labels "
                             "are leaves (or sets of leaves). Use pp = H.with_self_leaves() and train on "
                             "pp.hierarchy with pp.transform(Y)")
        raise LabelError(f"sample {i} has an empty label set; every sample needs at least one leaf")
    leaf_cols = np.flatnonzero(leaf_mask)
    rows, cols = leaf_part.nonzero()
    leaves_only = sp.csr_matrix((np.ones(len(rows)), (rows, leaf_cols[cols])), shape=ind.shape)
    T = np.asarray(((leaves_only @ H.ancestor_matrix.astype(float)) > 0).toarray())
    stray = np.asarray(ind.toarray() & ~T)
    if stray.any():
        i, j = np.argwhere(stray)[0]
        raise LabelError(f"sample {i} has the internal node {H.nodes[j]!r} as a label without a leaf "
                         "below it; NHSVM labels are leaves. Use pp = H.with_self_leaves() and train "
                         "on pp.hierarchy with pp.transform(Y)")
    leaf_pos = None
    if not multilabel:
        if np.any(counts > 1):
            i = int(np.flatnonzero(counts > 1)[0])
            raise LabelError(f"sample {i} has {counts[i]} leaf labels; single-label NHSVM needs exactly "
                             "one per sample (pass multilabel=True for label sets)")
        leaf_pos = cols[np.argsort(rows, kind="stable")]   # positions in H.leaves
    return T, leaf_pos, multilabel



def class_loss(H: Hierarchy, loss) -> np.ndarray:
    """``Delta`` of (14) as a ``(q, q)`` matrix over ``H.leaves`` (``[true, predicted]``) from a
    loss name of :data:`hiercvx.losses.LOSSES` or an array."""
    q = len(H.leaves)
    if isinstance(loss, str):
        L = loss_matrix(H, loss, classes=H.leaves)
    else:
        try:
            L = np.asarray(loss, dtype=float)
        except (TypeError, ValueError):
            raise InputError("loss must be a loss name of hiercvx.losses.LOSSES or a (q, q) array "
                             "over H.leaves") from None
    if L.shape != (q, q):
        raise InputError(f"the loss matrix must be ({q}, {q}) over H.leaves, got shape {L.shape}")
    if not np.all(np.isfinite(L)) or np.any(L < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return L


def leaf_vertices(H: Hierarchy, offset: np.ndarray, scale: np.ndarray):
    """``(paths, offset, scale)`` as C-contiguous float arrays: the leaf vertices of a
    single-label problem (``paths`` ``(q, M)``; ``b`` and ``sigma`` per (true, candidate) leaf)."""
    paths = np.ascontiguousarray(H.ancestor_matrix[H.leaf_indices].toarray(), dtype=float)
    return (paths, np.ascontiguousarray(offset, dtype=float),
            np.ascontiguousarray(scale, dtype=float))


def one_leaf_margin(leaf_pos: np.ndarray, n_leaves: int, loss: np.ndarray,
                     Lam) -> _margin.MarginData:
    """The margin-rescaled pair model of a single-label problem: sample i's relevant class is
    its leaf ``leaf_pos[i]``, every other leaf an irrelevant one, ``Delta = loss``."""
    Y = np.zeros((len(leaf_pos), n_leaves), dtype=bool)
    Y[np.arange(len(leaf_pos)), leaf_pos] = True
    return _margin.margin_data(Y, loss, Lam=Lam, rescaling="margin")


class LeafVertices:
    """``paths``, ``offset``, ``scale`` of a single-label model, read off its cached
    ``_vertices`` (:func:`leaf_vertices`; None for multi-label NHSVM)."""

    @property
    def paths(self) -> np.ndarray | None:
        return self._vertices[0]

    @property
    def offset(self) -> np.ndarray | None:
        return self._vertices[1]

    @property
    def scale(self) -> np.ndarray | None:
        return self._vertices[2]


def leaf_violations(S: np.ndarray, leaf_pos: np.ndarray, A: sp.csr_matrix, offset: np.ndarray,
                     scale: np.ndarray):
    """``(xi, best)``: ``xi_i = max(0, max_l b_il - sigma_il (s_i(t) - s_i(l)))`` over the leaves
    ``l != t = leaf_pos[i]`` and its maximizer (``-1`` when nothing is violated); ``b``,
    ``sigma``: ``(n, q)`` per sample (rows of its true leaf).  Leaf path sums through the
    sparse leaf-path matrix ``A``: ``O(n nnz(A))``, no dense ``(q, M)`` product."""
    rows = np.arange(S.shape[0])
    C = np.asarray((A @ np.asarray(S, dtype=float).T).T)       # leaf path sums (n, q)
    viol = offset + scale * (C - C[rows, leaf_pos][:, None])
    viol[rows, leaf_pos] = 0.0                                  # the true leaf: 0
    best = np.argmax(viol, axis=1)
    value = viol[rows, best]
    return np.maximum(value, 0.0), np.where(value > 0, best, -1)


def held_rows(leaf_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(held_leaves, held_row)``: the leaves some sample holds (sorted) and each sample's row
    among them."""
    held = np.unique(leaf_pos)
    return held, np.searchsorted(held, leaf_pos)


def leaf_pair_loss(H: Hierarchy, held: np.ndarray, loss: str, **kwargs) -> np.ndarray:
    """``loss`` from each held leaf (positions ``held`` in ``H.leaves``) to every leaf,
    ``(len(held), q)``, evaluated on those pairs only (``O(len(held) q)``, not ``(q, q)``) from
    the closed leaf indicators; when most leaves are held, the whole matrix's rows."""
    q = len(H.leaves)
    if 4 * len(held) > q:  # the (q, q) matrix is computed on all pairs at once: cheaper then
        return loss_matrix(H, loss, classes=H.leaves, **kwargs)[held]
    paths = sp.csr_matrix(H.ancestor_matrix[H.leaf_indices]).astype(bool)
    rows = pairwise_loss(H, paths[np.repeat(held, q)], paths[np.tile(np.arange(q), len(held))],
                         loss, **kwargs)
    return np.asarray(rows, dtype=float).reshape(len(held), q)


@dataclass
class CollapsedLeaves:
    """A model (``full``) and its collapsed model (``model``): each group of interchangeable
    idle leaves (no sample holds them; same parents; the same problem data from every held
    leaf) replaced by its first leaf, of multiplicity the group's size.

    ``kept`` the full node of each collapsed node (``H.nodes`` positions; the collapsed
    hierarchy keeps their order), ``node_map[n]`` the collapsed node of full node ``n``,
    ``multiplicity[n]`` the size of ``n``'s group (1 outside), ``leaf_map[l]`` the collapsed
    leaf of full leaf ``l`` (``H.leaves`` positions), ``kept_leaves`` the full leaf of each
    collapsed leaf.  A node of multiplicity ``k`` scores ``w'_n . x / sqrt(k)`` in the
    collapsed model: ``w' = sqrt(k) w`` carries the group's regularizer ``k ||w||^2`` as
    ``||w'||^2`` (see :meth:`SharedNormModel.collapsed`, :meth:`NHSVMModel.collapsed`)."""

    full: object
    model: object
    kept: np.ndarray
    node_map: np.ndarray
    multiplicity: np.ndarray
    leaf_map: np.ndarray
    kept_leaves: np.ndarray

    @staticmethod
    def structure(H: Hierarchy, groups: list):
        """``(Hc, kept, node_map, multiplicity, leaf_map, kept_leaves)`` for leaf ``groups``
        (arrays of positions in ``H.leaves``, two or more each)."""
        M = len(H)
        leaf_nodes = H.leaf_indices
        node_map = np.arange(M)
        multiplicity = np.ones(M)
        drop = np.zeros(M, dtype=bool)
        for members in groups:
            nodes = leaf_nodes[members]
            node_map[nodes] = nodes[0]
            multiplicity[nodes] = len(nodes)
            drop[nodes[1:]] = True
        kept = np.flatnonzero(~drop)
        position = np.full(M, -1, dtype=np.int64)
        position[kept] = np.arange(kept.size)
        names = [H.nodes[k] for k in kept.tolist()]
        edges = [(H.nodes[p], H.nodes[c]) for p, c in H.edge_index.tolist() if not drop[c]]
        Hc = Hierarchy(edges, nodes=names)    # keeps the order of `nodes`: node k is kept[k]
        leaf_of_node = np.full(M, -1, dtype=np.int64)
        leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
        kept_leaves = leaf_of_node[[H.index(v) for v in Hc.leaves]]
        leaf_of_kept = np.full(M, -1, dtype=np.int64)
        leaf_of_kept[kept[[Hc.index(v) for v in Hc.leaves]]] = np.arange(len(kept_leaves))
        leaf_map = leaf_of_kept[node_map[leaf_nodes]]
        return Hc, kept, position[node_map], multiplicity, leaf_map, kept_leaves

    @staticmethod
    def relabel(H: Hierarchy, groups: list, leaf_pos: np.ndarray, held_leaves: np.ndarray):
        """:meth:`structure` and the samples on it: ``(structure, (leaf_pos, held, held_row,
        rows))`` with each sample's leaf in the collapsed tree, the held leaves there and each
        sample's row among them, and ``rows`` the held leaves' rows in the full model's
        per-held-leaf arrays."""
        structure = CollapsedLeaves.structure(H, groups)
        leaf_map, kept_leaves = structure[4], structure[5]
        leaf_pos = leaf_map[leaf_pos]
        held, held_row = held_rows(leaf_pos)
        return structure, (leaf_pos, held, held_row, np.searchsorted(held_leaves, kept_leaves[held]))

    @property
    def n_removed(self) -> int:
        return len(self.node_map) - len(self.kept)

    def lift_weights(self, W_collapsed) -> np.ndarray:
        """The full model's node weights: a group's leaves get ``w'_r / sqrt(k)``."""
        W = np.asarray(W_collapsed, dtype=float)[self.node_map]
        return W / np.sqrt(self.multiplicity)[:, None]

    def lift_nodes(self, values) -> np.ndarray:
        """Per-node values (``alpha``) of the full model: a group's leaves share their value."""
        return np.asarray(values, dtype=float)[self.node_map]

    def lift_dual(self, G_collapsed: np.ndarray) -> np.ndarray:
        """The full model's node-space dual point: a group's masses spread evenly over its
        ``k`` leaves (each leaf's coefficient ``g_r / k``); same dual value."""
        return np.asarray(G_collapsed, dtype=float)[:, self.node_map] / self.multiplicity[None, :]

    def lift_masses(self, beta_collapsed: np.ndarray) -> np.ndarray:
        """The full model's ``(n, q)`` leaf masses: a group's mass spread evenly (``beta_r / k``)."""
        k = self.multiplicity[self.full.H.leaf_indices]
        return np.asarray(beta_collapsed, dtype=float)[:, self.leaf_map] / k[None, :]


def interchangeable_groups(H: Hierarchy, held: np.ndarray, *columns) -> list:
    """Groups (two or more) of idle leaves with the same parents and equal ``columns`` (arrays
    with one column per leaf of ``H.leaves``, or one entry per leaf)."""
    q = len(H.leaves)
    idle = np.setdiff1d(np.arange(q), held)
    if idle.size < 2:
        return []
    leaf_nodes = H.leaf_indices
    groups: dict = {}
    for l in idle.tolist():
        key = (tuple(sorted(H.index(p) for p in H.parents(H.nodes[leaf_nodes[l]]))),
               b"".join(np.ascontiguousarray(c[..., l]).tobytes() for c in columns))
        groups.setdefault(key, []).append(l)
    return [np.asarray(g) for g in groups.values() if len(g) >= 2]


# ====================================================================== LIBLINEAR's bias
class NodeBias:
    """LIBLINEAR's regularized bias of a node-weight model.

    With ``fit_intercept`` the model's ``X`` is ``[X, s]`` (``s = intercept_scaling``; the
    features as given are ``X_features``), so the paper's primal, dual, oracles and
    certificates run unchanged on augmented weights ``W~_n = [W_n, b_n / s]``, regularized as
    ``||W_n||^2 + b_n^2 / s^2``.

    The model has ``X`` (the features the solvers see: ``[X, s]`` with a bias), ``X_features``
    (as given), ``fit_intercept`` and ``intercept_scaling``."""

    def __post_init__(self):  # run by the dataclass __init__ of each model
        if self.X_features is None:
            self.X_features = self.X

    @property
    def bias_scaling(self) -> float | None:
        """``intercept_scaling`` with a bias, None without (what :mod:`hiercvx.bias` takes)."""
        return self.intercept_scaling if self.fit_intercept else None

    @property
    def n_features_in(self) -> int:
        """Columns of the features as given (without the bias column)."""
        return self.X_features.shape[1]

    def augmented_weights(self, weights, intercept=None) -> np.ndarray:
        """``W~ = [W, b / s]``: weights over the model's own features ``X`` from the node weights
        ``W`` without the bias column and the node biases ``b`` (None: zeros).  Without a bias
        ``W`` itself (``intercept`` must then be None or zeros: that model has none)."""
        W = np.asarray(weights, dtype=float)
        if W.ndim != 2 or W.shape[1] != self.n_features_in:
            raise InputError(f"node weights must have shape (n_nodes, {self.n_features_in}) (one "
                             f"column per feature, without the bias column), got {W.shape}")
        _margin.refuse_intercept(intercept, self.bias_scaling)
        return join_bias(W, intercept, self.bias_scaling)

    def split_weights(self, W_aug) -> tuple[np.ndarray, np.ndarray]:
        """``(W, b)`` of weights over the model's own features: the bias column split off,
        ``b = s * W~[:, -1]`` (``b`` zeros without a bias)."""
        return split_bias(W_aug, self.bias_scaling)

    def solution_weights(self, solution) -> tuple[np.ndarray, np.ndarray]:
        """``(W, b)`` of a solution: its ``weights`` (without the bias column) and its
        ``values["intercept"]`` / ``extras["intercept"]``; a solution without them (e.g. the
        multi-label cutting-plane reference) holds weights over ``X`` itself, split here."""
        W = np.asarray(solution.weights, dtype=float)
        found = [getattr(solution, k, None) or {} for k in ("values", "extras")]
        b = next((f["intercept"] for f in found if f.get("intercept") is not None), None)
        if b is None and W.shape[1] == self.X.shape[1]:
            return self.split_weights(W)
        return W, (np.zeros(W.shape[0]) if b is None else np.asarray(b, dtype=float))

    def _scored(self, weights, X, intercept):
        """``(W~, X~)``: augmented weights and the rows to score.  ``X``: None (the training
        rows), rows as given, or rows with the bias column already appended (``self.X``)."""
        W = self.augmented_weights(weights, intercept)
        if X is None:
            return W, self.X
        if self.fit_intercept and X.shape[1] == self.n_features_in:
            return W, append_constant(X, self.intercept_scaling)
        return W, X

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights and biases (:meth:`solution_weights`)."""
        W, b = self.solution_weights(solution)
        return self.objective(W, intercept=b, **params)
