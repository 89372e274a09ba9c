"""The margin rows of orthogonal transfer (4) and of its baselines (section 5).

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011.  For a
label ``y_k`` the rows of (4) are ``<w_i - w_j, x_k> >= 1 - xi_k`` for every ``i in A^+(y_k)``
and every sibling ``j in S(i)`` (:func:`path_pairs`; HIERMULT: one slack per internal node of
the path, (12) at that node); FLATMULT's rows compare the label's leaf with every other leaf
(:func:`flat_pairs`, (12)); TREELOSS's compare the label's class with every other class under
the loss ``Delta = graph distance / 2``, classes scored by the sums of increments over
``A^+(y)`` (:func:`treeloss_pairs`, parametrization (3)).  Each builder returns the
:class:`~hiercvx.models.margin.MarginData` of :func:`pair_data` (slack rescaling), the example
of every slack, the nodes with a weight vector and the node of every class.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._sparse import expand_ranges
from .._validation import check_target
from ..exceptions import LabelError
from ..hierarchy import Hierarchy
from ._orthogonal_k import tree_distance
from .margin import MarginData

__all__ = ["label_indices", "pair_data", "path_pairs", "flat_pairs", "treeloss_pairs"]


def label_indices(y, H: Hierarchy, n: int) -> np.ndarray:
    """Node indices of ``n`` single labels (node names, not the root); set-valued or unknown
    labels are refused with the sample's position."""
    check_target(y, "y", allow_mixed=True)
    if isinstance(y, (str, bytes)):
        raise LabelError("y must hold one label per sample, got a single string; wrap it in a list")
    y = list(y.tolist() if isinstance(y, np.ndarray) else y)
    if len(y) != n:
        raise LabelError(f"y has {len(y)} labels but X has {n} rows; give one label (a node name) per sample")
    idx = np.empty(n, dtype=np.int64)
    for k, v in enumerate(y):
        if isinstance(v, (set, frozenset, list)):
            raise LabelError(f"sample {k} has a label set {v!r}; orthogonal transfer is single-label "
                             "(one node per sample)")
        try:
            idx[k] = H.index(v)
        except LabelError:
            raise LabelError(f"sample {k} has label {v!r}, which is not a node of the hierarchy "
                             f"({H!r}); check the spelling or build H from all labels") from None
    if np.any(idx == 0):
        k = int(np.flatnonzero(idx == 0)[0])
        raise LabelError(f"sample {k} is labelled with the root {H.root!r}, which is not a class "
                         "(section 2: the root labels every instance); remove it or relabel it")
    return idx


def _path_pair_table(H: Hierarchy, labels=None):
    """Per node v (CSR layout): the pairs ``(i, j)``, ``i in A^+(v)``, ``j in S(i)`` of (4),
    root side first, and each pair's level group (pairs of one ``i`` share a group).  Only
    the nodes on the paths of ``labels`` (default: all) get their pairs; the others stay
    empty, so a wide hierarchy costs what its used paths hold."""
    parent = H.parent_index
    children = H.children_indices
    M = len(H)
    pos, neg, grp = [[] for _ in range(M)], [[] for _ in range(M)], [[] for _ in range(M)]
    n_groups = np.zeros(M, dtype=np.int64)
    needed = np.ones(M, dtype=bool)
    if labels is not None:
        needed[:] = False
        for v in np.unique(labels).tolist():
            while v > 0 and not needed[v]:
                needed[v] = True
                v = int(parent[v])
    for v in np.flatnonzero(needed[1:]) + 1:  # parents come first in H.nodes
        v = int(v)
        p = int(parent[v])
        sib = [int(c) for c in children[p] if c != v]
        pos[v] = pos[p] + [v] * len(sib)
        neg[v] = neg[p] + sib
        grp[v] = grp[p] + [int(n_groups[p])] * len(sib)
        n_groups[v] = n_groups[p] + (1 if sib else 0)
    counts = np.array([len(a) for a in pos], dtype=np.int64)
    ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    cat = lambda lists: np.array([x for a in lists for x in a], dtype=np.int64)  # noqa: E731
    return ptr, counts, cat(pos), cat(neg), cat(grp), n_groups


def _class_rows(Lam, dense_max: int = 2000) -> np.ndarray | sp.csr_matrix:
    """``Lam`` dense up to ``dense_max`` rows, CSR beyond."""
    if Lam.shape[0] <= dense_max:
        return Lam.toarray() if sp.issparse(Lam) else np.asarray(Lam, dtype=float)
    return sp.csr_matrix(Lam, dtype=float)


def pair_data(n_slacks: int, Lam, pair_i, pair_pos, pair_neg, Cw, pair_loss=None,
              dense_max: int = 2000) -> MarginData:
    """A :class:`MarginData` with the given pairs (sorted by slack), slack rescaling.

    Class sets up to ``dense_max`` get dense ``Lam``, ``Q`` and ``loss``; larger ones (a
    5000-leaf star) sparse ``Lam`` and ``Q`` and a read-only view of ones for ``loss`` (it is
    all ones: the losses of the pairs are ``pair_loss``), so building the model costs O(q),
    not O(q^2)."""
    Lam = _class_rows(Lam, dense_max)
    q = Lam.shape[0]
    order = np.argsort(pair_i, kind="stable")
    pair_i, pair_pos, pair_neg = pair_i[order], pair_pos[order], pair_neg[order]
    pair_loss = np.ones(len(pair_i)) if pair_loss is None else np.asarray(pair_loss, float)[order]
    Y = np.zeros((n_slacks, q), dtype=bool)
    Y[pair_i, pair_pos] = True
    ptr = np.zeros(n_slacks + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_i, minlength=n_slacks), out=ptr[1:])
    L = sp.csr_matrix(Lam)  # 0/1 rows: the sparse product avoids a dense (q, q, M) matmul
    dense = q <= dense_max
    Q = (L @ L.T).toarray() if dense else sp.csr_matrix(L @ L.T)
    loss = np.ones((q, q)) if dense else np.broadcast_to(1.0, (q, q))
    return MarginData(Y=Y, Q=Q, loss=loss, rescaling="slack",
                      Cw=np.asarray(Cw, dtype=float), pair_i=pair_i, pair_y=pair_pos, pair_ybar=pair_neg,
                      pair_loss=pair_loss, pair_ptr=ptr, Lam=Lam)


def path_pairs(H: Hierarchy, yi: np.ndarray, per_node: bool):
    """(4)'s rows along each label's path; ``per_node``: HIERMULT's slack per internal node."""
    n, M = len(yi), len(H)
    ptr, counts, tpos, tneg, tgrp, n_groups = _path_pair_table(H, yi)
    c = counts[yi]
    pair_k = np.repeat(np.arange(n), c)
    at = expand_ranges(ptr[yi], c)
    pos, neg = tpos[at], tneg[at]
    if per_node:
        g = n_groups[yi]
        slack_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(g, out=slack_ptr[1:])
        pair_s = slack_ptr[pair_k] + tgrp[at]
        n_slacks = int(slack_ptr[-1])
        slack_example = np.repeat(np.arange(n), g)
        slack_node = np.zeros(n_slacks, dtype=np.int64)  # the internal node j of each slack
        slack_node[pair_s] = H.parent_index[pos]
        N_j = np.bincount(slack_node, minlength=M)
        Cw = 1.0 / N_j[slack_node]
    else:
        pair_s, n_slacks, slack_example = pair_k, n, np.arange(n)
        Cw = np.full(n, 1.0 / n)
    data = pair_data(n_slacks, sp.identity(M, format="csr"), pair_s, pos, neg, Cw)
    return data, slack_example, np.arange(1, M), np.arange(M)


def flat_pairs(H: Hierarchy, yi: np.ndarray):
    """(12) over the leaves: ``w_{y_k} - w_l`` for every other leaf ``l``."""
    n, M = len(yi), len(H)
    leaves = H.leaf_indices
    if not np.all(H.leaf_mask[yi]):
        k = int(np.flatnonzero(~H.leaf_mask[yi])[0])
        raise LabelError(f"FLATMULT (12) is over the leaves, but sample {k} is labelled with the "
                         f"internal node {H.nodes[yi[k]]!r}; drop such samples, or relabel them with "
                         "H.with_self_leaves(...) and train on its hierarchy")
    grid = np.broadcast_to(leaves, (n, len(leaves)))
    k, col = np.nonzero(grid != yi[:, None])
    data = pair_data(n, sp.identity(M, format="csr"), k, yi[k], grid[k, col], np.full(n, 1.0 / n))
    return data, np.arange(n), leaves, np.arange(M)


def treeloss_pairs(H: Hierarchy, yi: np.ndarray, classes: str):
    """TREELOSS's rows ``y != y_k`` over its classes, loss half the tree distance."""
    n, M = len(yi), len(H)
    if classes not in ("nodes", "leaves"):
        raise InputError(f"classes must be 'nodes' (the paper's Y) or 'leaves', got {classes!r}")
    nonroot = np.arange(1, M)
    cls = nonroot if classes == "nodes" else H.leaf_indices
    position = np.full(M, -1)
    position[cls] = np.arange(len(cls))
    yc = position[yi]
    if np.any(yc < 0):
        k = int(np.flatnonzero(yc < 0)[0])
        raise LabelError(f"TREELOSS with classes='leaves' needs leaf labels; sample {k} is labelled "
                         f"{H.nodes[yi[k]]!r}, an internal node; use classes='nodes'")
    if len(cls) < 2:
        raise LabelError("TREELOSS needs at least two classes")
    Lam = sp.csr_matrix(H.ancestor_matrix[cls], dtype=float)
    Lam = sp.csr_matrix(Lam @ sp.diags(np.r_[0.0, np.ones(M - 1)]))  # the root carries no weight (A^+ excludes it)
    Lam.eliminate_zeros()
    dist = tree_distance(H, [H.nodes[c] for c in cls])
    grid = np.broadcast_to(np.arange(len(cls)), (n, len(cls)))
    k, col = np.nonzero(grid != yc[:, None])
    neg = grid[k, col]
    data = pair_data(n, Lam, k, yc[k], neg, np.full(n, 1.0 / n), pair_loss=0.5 * dist[yc[k], neg])
    return data, np.arange(n), nonroot, cls
