"""The sample pairs of the sibling-margin SVM of Wang, Shen & Pan (*Large Margin Hierarchical
Classification with Mutually Exclusive Class Membership*, JMLR 12, 2011), and the rules and
losses defined on them.

For a label ``y`` on the tree ``H`` the pairs ``Q(y) = {(j, t): t in sib(j), j in anc(y) +
{y}}`` (Appendix B, (8)) give the generalized margin ``u_min(f(x), y) = min_{(j, t) in Q(y)}
f_j(x) - f_t(x)`` (section 3.1).  :func:`sibling_pairs` validates single labels and lists the
pairs of every sample (:class:`SiblingPairs`); :func:`predict_top_down` is the top-down rule
of section 2, :func:`u_min` the margin, :func:`hinge` and :func:`psi` the losses of section
3.2.  Re-exported by :mod:`hiercvx.models.sibling`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._sparse import expand_ranges
from ..exceptions import HierarchyError, InputError, LabelError
from ..hierarchy import Hierarchy, PartialPaths

logger = logging.getLogger("hiercvx.models.sibling")

__all__ = ["SiblingPairs", "sibling_pairs", "check_tree", "node_pair_table", "names_array",
           "label_indices", "as_label_array", "score_matrix", "predict_top_down", "u_min",
           "psi", "hinge"]

# ---------------------------------------------------------------------- losses of u
def hinge(u) -> np.ndarray:
    """``(1 - u)_+``, the HSVM loss (section 3.2)."""
    return np.maximum(0.0, 1.0 - np.asarray(u, dtype=float))


def psi(u) -> np.ndarray:
    """The psi-loss of section 3.2: 1 for ``u < 0``, ``1 - u`` on ``[0, 1)``, 0 for ``u >= 1``,
    i.e. ``min(1, (1 - u)_+) = psi_1(u) - psi_2(u)`` with ``psi_1 = (1 - u)_+``, ``psi_2 = (-u)_+``."""
    return np.clip(1.0 - np.asarray(u, dtype=float), 0.0, 1.0)


# ---------------------------------------------------------------------- hierarchy and pairs
def check_tree(H) -> Hierarchy:
    """``H`` when it is a tree with at least two leaves (the sibling-margin SVM's domain);
    else a :class:`~hiercvx.exceptions.HierarchyError` saying why."""
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("the sibling-margin SVM (Wang, Shen & Pan) is defined on trees: every "
                             "non-root node needs exactly one parent so that the top-down rule and "
                             "the sibling comparisons are well defined; this hierarchy is a DAG")
    if H.index(H.root) != 0:  # pragma: no cover - Hierarchy puts the root first
        raise HierarchyError("the root must be the first node of H.nodes")
    if len(H.leaves) < 2:
        raise HierarchyError(f"the hierarchy has a single leaf ({H.leaves[0]!r}): there is nothing to "
                             "classify; it needs at least two leaves")
    return H


def node_pair_table(H: Hierarchy, nodes=None):
    """The pairs ``Q(v)`` of the nodes ``v`` in ``nodes`` (node indices; default: every node)
    as CSR over that list: ``ptr`` (len(nodes) + 1), ``pos``, ``neg``.

    ``Q(v) = Q(par(v)) + {(v, t): t in sib(v)}``, each node's own part listed once and the
    paths built from the parts of its ancestors, root first.  Only the requested nodes and
    their ancestors are visited, so the work is the size of the output (on a star with a few
    labelled leaves, not the square of the number of leaves).
    """
    M = len(H)
    parent = H.parent_index
    children = H.children_indices
    nodes = np.arange(M) if nodes is None else np.asarray(nodes, dtype=np.int64)
    own: dict = {0: (np.zeros(0, np.int64), np.zeros(0, np.int64))}

    def own_part(v):
        if v not in own:
            sib = np.asarray(children[parent[v]], dtype=np.int64)
            sib = sib[sib != v]
            own[v] = (np.full(len(sib), v, dtype=np.int64), sib)
        return own[v]

    def path(v):
        out = []
        while v != 0:
            out.append(v)
            v = parent[v]
        return out[::-1]

    pos_lists, neg_lists = [], []
    for v in nodes:
        parts = [own_part(a) for a in path(int(v))]
        pos_lists.append(np.concatenate([p for p, _ in parts]) if parts else own[0][0])
        neg_lists.append(np.concatenate([q for _, q in parts]) if parts else own[0][1])
    counts = np.fromiter((len(a) for a in pos_lists), dtype=np.int64, count=len(nodes))
    ptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    if not len(nodes):
        return ptr, np.zeros(0, np.int64), np.zeros(0, np.int64)
    return ptr, np.concatenate(pos_lists), np.concatenate(neg_lists)


def names_array(H: Hierarchy) -> np.ndarray:
    """Node names as an array (int64 when every name is an integer, else object)."""
    names = H.nodes
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in names):
        return np.asarray(names, dtype=np.int64)
    out = np.empty(len(names), dtype=object)
    for k, v in enumerate(names):  # element-wise: tuple names must not be unpacked
        out[k] = v
    return out


def label_indices(y, H: Hierarchy) -> np.ndarray:
    """One node index per sample; refuses label sets, unknown labels and the root."""
    if isinstance(y, np.ndarray) and y.ndim != 1:
        raise LabelError(f"y must be 1-D (one node name per sample), got shape {y.shape}")
    if sp.issparse(y):
        raise LabelError("y must be a 1-D sequence of node names, not an indicator matrix")
    ind = H.label_indicator(y)  # unknown names raise LabelError here
    counts = np.diff(ind.indptr)
    if ind.shape[0] == 0:
        raise LabelError("y is empty")
    if np.any(counts != 1):
        i = int(np.flatnonzero(counts != 1)[0])
        raise LabelError(
            f"sample {i} has {int(counts[i])} labels; the sibling-margin SVM needs exactly one "
            "label per sample (mutually exclusive classes). Wang et al. (section 4.2) turn a "
            "set of co-occurring categories into one new category")
    idx = ind.indices.astype(np.int64)
    if np.any(idx == 0):
        i = int(np.flatnonzero(idx == 0)[0])
        raise LabelError(f"sample {i} is labelled with the root {H.root!r}, which is not a class; "
                         "labels must be non-root nodes")
    return idx


@dataclass(frozen=True)
class SiblingPairs:
    """The pairs ``Q(y_i)`` of every sample on the working hierarchy.

    ``hierarchy`` is ``H`` itself, or ``H`` with a "self" leaf under every internal node used
    as a label (``partial_paths``; section 2: a child "defined as itself").  Node indices
    refer to ``hierarchy.nodes`` (root 0).  Pairs are sorted by sample, each sample's pairs
    from the root down; ``pair_ptr`` are the CSR offsets per sample.  ``groups`` are the
    children of every internal node (sibling groups, singletons included).
    """

    hierarchy: Hierarchy
    partial_paths: PartialPaths | None
    labels: np.ndarray
    pair_i: np.ndarray
    pair_pos: np.ndarray
    pair_neg: np.ndarray
    pair_ptr: np.ndarray
    groups: tuple
    group_of: np.ndarray

    @property
    def n_samples(self) -> int:
        return len(self.labels)

    @property
    def n_pairs(self) -> int:
        return len(self.pair_i)

    @property
    def n_nodes(self) -> int:
        return len(self.hierarchy)

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    def margins(self, S: np.ndarray) -> np.ndarray:
        """``f_j(x_i) - f_t(x_i)`` for every pair, from scores ``S`` ``(n, M)``."""
        return S[self.pair_i, self.pair_pos] - S[self.pair_i, self.pair_neg]

    def u_min(self, S: np.ndarray, return_pairs: bool = False):
        """``u_min`` per sample (``+inf`` for a sample without pairs); with ``return_pairs``
        also the index of a minimizing pair (``-1`` when there is none)."""
        m = self.margins(S)
        u = np.full(self.n_samples, np.inf)
        arg = np.full(self.n_samples, -1, dtype=np.int64)
        if self.n_pairs:
            order = np.lexsort((m, self.pair_i))       # by sample, then by margin
            first = order[np.r_[0, np.flatnonzero(np.diff(self.pair_i[order])) + 1]]
            u[self.pair_i[first]] = m[first]
            arg[self.pair_i[first]] = first
        return (u, arg) if return_pairs else u

    def to_original(self, idx: np.ndarray) -> np.ndarray:
        """Node indices of the working hierarchy -> node names of the caller's hierarchy."""
        names = names_array(self.hierarchy)[idx]
        if self.partial_paths is None:
            return names
        back = self.partial_paths.inverse_transform(list(names))
        return as_label_array(back)


def as_label_array(labels) -> np.ndarray:
    """Labels as an array (int64 when every label is an integer, else object)."""
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in labels):
        return np.asarray(labels, dtype=np.int64)
    out = np.empty(len(labels), dtype=object)
    for k, v in enumerate(labels):
        out[k] = v
    return out


def sibling_pairs(y, H: Hierarchy, partial_paths: bool = True) -> SiblingPairs:
    """Validate single labels ``y`` on the tree ``H`` and list the pairs ``Q(y_i)`` of (8).

    Labels on internal nodes (partial paths) get a self leaf under that node when
    ``partial_paths`` (the paper's device, section 2); with ``partial_paths=False`` they keep
    the paper's literal ``Q(y)`` (the label and its ancestors against their siblings), which
    is what :func:`u_min` computes.
    """
    H = check_tree(H)
    idx = label_indices(y, H)
    pp = None
    if partial_paths:
        internal = np.unique(idx[~H.leaf_mask[idx]])
        if internal.size:
            pp = H.with_self_leaves([H.nodes[v] for v in internal])
            logger.info("hpsi: %d internal node(s) used as labels get a self leaf (partial paths)",
                        internal.size)
            W = pp.hierarchy
            idx = W.indices(pp.transform([H.nodes[v] for v in idx]))
            H = W
    used, slot = np.unique(idx, return_inverse=True)
    ptr, qpos, qneg = node_pair_table(H, used)       # only the labels' paths
    counts = ptr[slot + 1] - ptr[slot]
    sel = expand_ranges(ptr[slot], counts)
    pair_i = np.repeat(np.arange(len(idx), dtype=np.int64), counts)
    sample_ptr = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(counts, out=sample_ptr[1:])
    groups = tuple(np.sort(np.asarray(g, dtype=np.int64)) for g in H.sibling_groups())
    group_of = np.full(len(H), -1, dtype=np.int64)
    for g, members in enumerate(groups):
        group_of[members] = g
    return SiblingPairs(hierarchy=H, partial_paths=pp, labels=idx, pair_i=pair_i,
                        pair_pos=qpos[sel], pair_neg=qneg[sel], pair_ptr=sample_ptr,
                        groups=groups, group_of=group_of)


# ---------------------------------------------------------------------- public helpers
def score_matrix(scores, H: Hierarchy, X=None) -> np.ndarray:
    """Checked ``(n, len(H))`` scores, from an array or a callable ``f(X)``."""
    if callable(scores):
        if X is None:
            raise InputError("pass X= when scores is a function f(X) -> (n, n_nodes) array")
        scores = scores(X)
    S = np.asarray(scores, dtype=float)
    if S.ndim != 2 or S.shape[1] != len(H):
        raise InputError(f"scores must be (n_samples, {len(H)}): one column per node of H.nodes "
                         f"(the root's column is ignored), got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise InputError("scores have non-finite entries")
    return S


def predict_top_down(scores, H: Hierarchy, *, X=None, return_index: bool = False) -> np.ndarray:
    """The top-down rule ``d^H`` of section 2: from the root, move to the child with the
    largest score until a leaf is reached.

    ``scores``: ``(n, len(H))`` values ``f_v(x_i)`` in ``H.nodes`` order (root column
    ignored), or a callable ``f(X)`` returning them (then pass ``X``).  Ties go to the first
    child in ``H.nodes`` order.  Returns leaf names (or indices with ``return_index``).
    """
    if not isinstance(H, Hierarchy) or not H.is_tree:
        raise HierarchyError("the top-down rule needs a tree hiercvx.Hierarchy")
    S = score_matrix(scores, H, X)
    n, M = S.shape
    children = [np.sort(np.asarray(c, dtype=np.int64)) for c in H.children_indices]
    width = max(1, max(len(c) for c in children))
    table = np.full((M, width), -1, dtype=np.int64)  # padded children lists
    for v, c in enumerate(children):
        table[v, :len(c)] = c
    current = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for _ in range(int(H.depths.max())):
        active = ~H.leaf_mask[current]
        if not active.any():
            break
        kids = table[current[active]]                    # (n_active, width)
        vals = np.where(kids >= 0, S[rows[active][:, None], np.maximum(kids, 0)], -np.inf)
        current[active] = kids[np.arange(len(kids)), np.argmax(vals, axis=1)]
    return current if return_index else names_array(H)[current]


def u_min(scores, y, H: Hierarchy, *, X=None, return_pairs: bool = False):
    """The generalized functional margin of section 3.1 for every sample:
    ``u_min(f(x_i), y_i) = min_{(j, t) in Q(y_i)} f_j(x_i) - f_t(x_i)``.

    ``scores`` as in :func:`predict_top_down`; ``y`` node names of ``H`` (an internal node
    keeps the paper's literal ``Q(y)``).  ``+inf`` when ``Q(y)`` is empty.  With
    ``return_pairs`` also each sample's minimizing pair as ``(j, t)`` node names (``None``
    when there is none).
    """
    pairs = sibling_pairs(y, H, partial_paths=False)
    S = score_matrix(scores, H, X)
    if S.shape[0] != pairs.n_samples:
        raise InputError(f"scores have {S.shape[0]} rows but y has {pairs.n_samples} labels")
    u, arg = pairs.u_min(S, return_pairs=True)
    if not return_pairs:
        return u
    names = H.nodes
    which = [None if a < 0 else (names[pairs.pair_pos[a]], names[pairs.pair_neg[a]]) for a in arg]
    return u, which
