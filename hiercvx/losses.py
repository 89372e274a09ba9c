"""Losses between labels and label sets over a class hierarchy, and loss matrices.

Every loss here is computed from *closed* indicator matrices: a sample's label (a node)
or label set (several nodes) is replaced by ``anc(Y)``, the union of the ancestors of its
members including the members themselves (Cai thesis, section 3.3, definition of
``anc(Y)``).  ``H.closure(labels, sparse=True)`` builds these.  One core (``LabelSetPairs``)
turns two closed matrices into the few quantities every loss needs:

- weighted set sizes ``sum_{v in anc(Y)} w_v``,
- weighted set differences ``sum_{v in anc(Y) - anc(Y')} w_v`` (both ways),
- the cost of the *top-most* disagreements (nodes in ``anc(Y) xor anc(Y')`` whose
  ancestors all agree), which the H-losses charge.

The core runs either row by row (sample ``i`` of ``y_true`` against sample ``i`` of
``y_pred``) or on all pairs of rows (a class-by-class loss matrix), so a loss between
single labels, between label sets and the matrix over classes are the same code.

Inputs: node names (one label per sample), label sets (lists / sets of node names, for
multi-label), or indicator matrices over ``H.nodes`` (closed here if they are not).  A
single node name or a single ``set`` / ``frozenset`` on both sides gives a float; a
sequence of samples gives an array with one value per sample.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from ._sparse import expand_ranges
from ._validation import check_not_complex, check_target
from .exceptions import HierarchyError, InputError, InputTypeError, LabelError
from .hierarchy import Hierarchy, label_positions, most_specific, unknown_label_hint

__all__ = [
    "zero_one",
    "symmetric_difference",
    "normalized_hierarchical",
    "sibling_costs",
    "subtree_costs",
    "h_loss",
    "sibling_loss",
    "subtree_loss",
    "normalized_structural",
    "leaf_count",
    "loss_matrix",
    "ranking_loss",
    "pairwise_loss",
    "LOSSES",
]


# ---------------------------------------------------------------------- input handling
def is_single_label(H: Hierarchy, y) -> bool:
    """True when ``y`` is one label (a node name) or one label set, not a sequence of samples."""
    if isinstance(y, (set, frozenset, str, bytes)):
        return True
    if sp.issparse(y):
        return False
    if isinstance(y, np.ndarray):
        return y.ndim == 0
    if isinstance(y, tuple) and y in H:
        return True
    if isinstance(y, Iterable):
        return False
    return True


def check_indicator_dtype(y, what: str) -> None:
    """Refuse a 2-D ``y`` that is not a numeric or bool indicator matrix."""
    if isinstance(y, np.ndarray) and y.ndim == 2 and not (
            np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise LabelError(f"{what} is a 2-D array of {y.dtype}; a 2-D input must be a 0/1 indicator "
                         "matrix with one column per node of H.nodes. For one label per sample "
                         "pass a 1-D array (e.g. y.ravel())")


def closed_labels(H: Hierarchy, y, what: str = "labels") -> sp.csr_matrix:
    """``anc(Y)`` for each sample as a bool CSR ``(n_samples, n_nodes)`` matrix."""
    check_indicator_dtype(y, what)
    try:
        return H.closure(y, sparse=True).tocsr()
    except LabelError as exc:
        raise LabelError(f"{what}: {exc}") from None


def _closed_pair(H: Hierarchy, y_true, y_pred):
    """Both sides closed, with matching lengths; ``single`` says whether to return a float."""
    if not isinstance(H, Hierarchy):
        raise InputError(f"the first argument must be a hiercvx.Hierarchy, got {type(H).__name__}")
    single_t, single_p = is_single_label(H, y_true), is_single_label(H, y_pred)
    if single_t != single_p:
        raise LabelError("y_true and y_pred must both be single labels (a node name or one label "
                         "set) or both be sequences with one entry per sample; got "
                         f"{'a single label' if single_t else 'a sequence'} and "
                         f"{'a single label' if single_p else 'a sequence'}")
    if single_t:
        y_true, y_pred = [_scalar_label(y_true)], [_scalar_label(y_pred)]
    A = closed_labels(H, y_true, "y_true")
    B = closed_labels(H, y_pred, "y_pred")
    if A.shape[0] != B.shape[0]:
        raise LabelError(f"y_true has {A.shape[0]} samples but y_pred has {B.shape[0]}; give one "
                         "prediction per true label")
    return A, B, single_t


def _scalar_label(y):
    """A 0-d array holds one label: its element (iterating the array fails)."""
    return y.item() if isinstance(y, np.ndarray) and y.ndim == 0 else y


def _node_weights(H: Hierarchy, w, name: str) -> np.ndarray:
    """A finite non-negative weight per node of ``H.nodes``."""
    try:
        w = np.asarray(w, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric array with one entry per node of H.nodes "
                         f"({len(H)} nodes)") from None
    if w.shape != (len(H),):
        raise InputError(f"{name} must have one entry per node of H.nodes, i.e. shape ({len(H)},), "
                         f"got shape {w.shape}; order it like H.nodes")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        bad = int(np.flatnonzero(~np.isfinite(w) | (w < 0))[0])
        raise InputError(f"{name} must be finite and non-negative; entry {bad} (node "
                         f"{H.nodes[bad]!r}) is {w[bad]!r}")
    return w


# ---------------------------------------------------------------------- the core
@lru_cache(maxsize=64)
def parent_matrix(H: Hierarchy) -> sp.csr_matrix:
    """``P[v, p] = 1`` when ``p`` is a parent of ``v`` (rows: children)."""
    n = len(H)
    e = H.edge_index
    return sp.csr_matrix((np.ones(len(e), dtype=np.int32), (e[:, 1], e[:, 0])), shape=(n, n))




class LabelSetPairs:
    """Two closed indicator matrices compared row by row (``outer=False``) or all pairs.

    Row mode returns 1-D arrays over samples; outer mode returns ``(n_a, n_b)`` matrices.
    Every loss in this module is a formula on :meth:`size_a`, :meth:`size_b`,
    :meth:`differences` and :meth:`top_mismatch_cost`.
    """

    def __init__(self, H: Hierarchy, A: sp.csr_matrix, B: sp.csr_matrix, outer: bool = False):
        self.H, self.outer = H, outer
        self.A = sp.csr_matrix(A, dtype=bool)
        self.B = self.A if B is A else sp.csr_matrix(B, dtype=bool)
        if not outer and self.A.shape != self.B.shape:
            raise LabelError(f"cannot compare {self.A.shape[0]} samples with {self.B.shape[0]}")

    def size_a(self, w) -> np.ndarray:
        s = self.A @ w
        return s[:, None] if self.outer else s

    def size_b(self, w) -> np.ndarray:
        s = self.B @ w
        return s[None, :] if self.outer else s

    def differences(self, w):
        """``(sum_{v in A - B} w_v, sum_{v in B - A} w_v)``, exactly 0 where the set difference is empty."""
        if not self.outer:
            inter = self.A.multiply(self.B).astype(float)
            return (np.asarray((self.A.astype(float) - inter) @ w).ravel(),
                    np.asarray((self.B.astype(float) - inter) @ w).ravel())
        # all pairs: size minus overlap.  Integer counts tell an empty difference apart from
        # rounding, since weighted float sums do not cancel exactly.
        A, B = self.A.astype(float), self.B.astype(float)
        ones = np.ones(A.shape[1])
        inter_n = np.asarray((A @ B.T).todense())
        inter_w = inter_n if np.all(w == 1) else np.asarray((A @ sp.diags(w) @ B.T).todense())
        only_a = (A @ w)[:, None] - inter_w
        only_b = (B @ w)[None, :] - inter_w
        only_a = np.where((A @ ones)[:, None] - inter_n > 0, np.maximum(only_a, 0.0), 0.0)
        only_b = np.where((B @ ones)[None, :] - inter_n > 0, np.maximum(only_b, 0.0), 0.0)
        return only_a, only_b

    def top_mismatch_cost(self, c) -> np.ndarray:
        """Sum of ``c_v`` over nodes ``v`` in ``anc(Y) xor anc(Y')`` whose ancestors all agree.

        For closed sets, ``v`` in the symmetric difference has its ancestors in agreement iff
        none of its *parents* is in the symmetric difference (a parent of ``v`` lies in the set
        that holds ``v``; if it is not a disagreement it lies in both, and so do its own
        ancestors).  This is the H-loss of Cesa-Bianchi et al. that Wang et al. use.
        """
        if self.outer:
            F = self._frontier_product(self.A, self.B, c)
            G = F if self.A is self.B else self._frontier_product(self.B, self.A, c)
            return F + G.T
        H = self.H
        n_nodes = len(H)
        D = self.A.astype(np.int8) - self.B.astype(np.int8)
        D.eliminate_zeros()
        D = D.tocsr()
        D.sort_indices()
        rows = np.repeat(np.arange(D.shape[0]), np.diff(D.indptr))
        cols = D.indices.astype(np.int64)
        keys = rows * n_nodes + cols  # sorted: CSR rows in order, indices sorted
        P = parent_matrix(H)
        n_par = np.diff(P.indptr)[cols]
        pos = expand_ranges(P.indptr[cols].astype(np.int64), n_par)
        parent_keys = np.repeat(rows, n_par) * n_nodes + P.indices[pos]
        hit = np.zeros(len(parent_keys), dtype=bool)
        if len(keys):
            at = np.minimum(np.searchsorted(keys, parent_keys), len(keys) - 1)
            hit = keys[at] == parent_keys
        parent_disagrees = np.bincount(np.repeat(np.arange(len(cols)), n_par), weights=hit,
                                       minlength=len(cols)) > 0
        top = ~parent_disagrees
        return np.bincount(rows[top], weights=c[cols[top]], minlength=D.shape[0])

    def _frontier_product(self, X, Y, c) -> np.ndarray:
        """``F[i, j] = sum c_v`` over ``v`` in ``X_i`` minus ``Y_j`` with every parent of ``v`` in ``Y_j``."""
        H = self.H
        n_nodes = len(H)
        P = parent_matrix(H)
        indeg = np.diff(P.indptr)
        Q = (Y.astype(np.int32) @ P.T.astype(np.int32)).tocsr()  # Q[j, v] = #parents of v in Y_j
        Q.sort_indices()
        full = Q.data == indeg[Q.indices]
        rows = np.repeat(np.arange(Q.shape[0]), np.diff(Q.indptr))
        f_rows, f_cols = rows[full], Q.indices[full]
        # the root has no parents: it is on the frontier of an empty set only
        empty = np.flatnonzero(np.diff(Y.indptr) == 0)
        roots = np.flatnonzero(indeg == 0)
        f_rows = np.concatenate([f_rows, np.repeat(empty, len(roots))])
        f_cols = np.concatenate([f_cols, np.tile(roots, len(empty))])
        frontier = sp.csr_matrix((np.ones(len(f_rows)), (f_rows, f_cols)), shape=(Y.shape[0], n_nodes))
        frontier = frontier - frontier.multiply(Y.astype(float))  # drop nodes already in Y_j
        return np.asarray((X.astype(float) @ sp.diags(c) @ frontier.T).todense())


# ---------------------------------------------------------------------- formulas on the core
def _ones(H):
    return np.ones(len(H))


def _f_zero_one(pairs: LabelSetPairs, H):
    return (_f_symmetric(pairs, H) > 0).astype(float)


def _f_symmetric(pairs: LabelSetPairs, H):
    only_a, only_b = pairs.differences(_ones(H))
    return only_a + only_b


def _f_half(pairs: LabelSetPairs, H):
    return 0.5 * _f_symmetric(pairs, H)


def _f_normalized(pairs: LabelSetPairs, H):
    w = _ones(H)
    # |anc(y)| - 1 is the depth of y; a root-only (or empty) set has no edge to weigh,
    # its denominator is taken as 1 so the term stays finite (its numerator is 0 unless the
    # other side is empty).
    da, db = np.maximum(pairs.size_a(w) - 1, 1), np.maximum(pairs.size_b(w) - 1, 1)
    only_a, only_b = pairs.differences(w)
    return 0.5 * (only_a / da + only_b / db)


def _f_sibling(pairs: LabelSetPairs, H, *, costs=None, multi_parent="error"):
    c = sibling_costs(H, multi_parent=multi_parent) if costs is None else _node_weights(H, costs, "costs")
    return pairs.top_mismatch_cost(c)


def _f_subtree(pairs: LabelSetPairs, H, *, costs=None):
    c = subtree_costs(H) if costs is None else _node_weights(H, costs, "costs")
    return pairs.top_mismatch_cost(c)


def _f_h_loss(pairs: LabelSetPairs, H, *, costs=None):
    if costs is None:
        raise InputError("h_loss needs costs (one per node of H.nodes); use sibling_loss or "
                         "subtree_loss for the costs of Wang et al. (5) / (4)")
    return pairs.top_mismatch_cost(_node_weights(H, costs, "costs"))


def _f_structural(pairs: LabelSetPairs, H, *, alpha=None):
    if alpha is None:
        raise InputError("the normalized structural error (NHSVM (9)) needs alpha, one weight per "
                         "node of H.nodes (e.g. hiercvx.formulations.nhsvm.path_weights(H))")
    only_a, only_b = pairs.differences(_node_weights(H, alpha, "alpha"))
    return np.sqrt(only_a + only_b)


def _f_leaf_count(pairs: LabelSetPairs, H):
    only_a, only_b = pairs.differences(H.leaf_mask.astype(float))
    return only_a + only_b


LOSSES = {
    "zero_one": _f_zero_one,
    "symmetric_difference": _f_symmetric,
    "half_symmetric": _f_half,
    "normalized": _f_normalized,
    "sibling": _f_sibling,
    "subtree": _f_subtree,
    "h_loss": _f_h_loss,
    "structural": _f_structural,
    "leaf_count": _f_leaf_count,
}
"""Loss names accepted by :func:`loss_matrix`, :func:`pairwise_loss` and the metrics."""

_ALIASES = {"0-1": "zero_one", "0/1": "zero_one", "delta": "symmetric_difference",
            "delta_h": "half_symmetric", "half": "half_symmetric", "sib": "sibling",
            "sub": "subtree", "normalized_hierarchical": "normalized",
            "normalized_structural": "structural"}


def canonical_loss(loss: str) -> str:
    """The key of :data:`LOSSES` that the loss name or alias ``loss`` (e.g. ``"0-1"``) stands for."""
    if not isinstance(loss, str):  # a list is unhashable: refuse it before the lookup
        raise InputTypeError(f"loss must be a loss name (a string), got {type(loss).__name__}; "
                             f"choose one of {sorted(LOSSES)}")
    name = _ALIASES.get(loss, loss)
    if name not in LOSSES:
        raise InputError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES)}")
    return name


def loss_keywords(loss: str) -> tuple:
    """The keyword arguments the loss ``loss`` takes, e.g. ``("costs", "multi_parent")`` for
    ``"sibling"`` and ``()`` for ``"zero_one"``."""
    fn = LOSSES[canonical_loss(loss)]
    return tuple(p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY)


def check_loss_keywords(loss: str, kwargs) -> None:
    """Refuse keyword arguments that the loss ``loss`` does not use: ignoring them would
    compute another loss than the caller asked for (``costs=`` with a loss that has none)."""
    takes = loss_keywords(loss)
    extra = [k for k in kwargs if k not in takes]
    if not extra:
        return
    owners = {k: sorted(n for n in LOSSES if k in loss_keywords(n)) for k in extra}
    where = "; ".join(f"{k}= is taken by {', '.join(map(repr, o))}" for k, o in owners.items() if o)
    raise InputError(f"loss {loss!r} does not take {', '.join(f'{k}=' for k in extra)}: "
                     + (f"it takes {', '.join(f'{k}=' for k in takes)} only" if takes
                        else "it takes no keyword arguments")
                     + (f" ({where})" if where else "") + "; drop the argument or pick the loss "
                     "that uses it")


def _loss_function(loss: str, kwargs=()):
    """The formula of ``loss``, after refusing keyword arguments it does not take."""
    check_loss_keywords(loss, kwargs)
    return LOSSES[canonical_loss(loss)]


def _finish(values: np.ndarray, single: bool):
    values = np.asarray(values, dtype=float)
    return float(values[0]) if single else values


def pairwise_loss(H: Hierarchy, y_true, y_pred, loss: str = "half_symmetric", **kwargs):
    """Loss ``loss`` (a key of :data:`LOSSES`) between each ``y_true[i]`` and ``y_pred[i]``.

    Keyword arguments go to the loss (``alpha=`` for ``"structural"``, ``costs=`` /
    ``multi_parent=`` for the H-losses); a keyword the loss does not take is refused
    (``loss_keywords`` lists those it takes).  Returns one value per sample, or a float
    when both sides are single labels.
    """
    fn = _loss_function(loss, kwargs)
    A, B, single = _closed_pair(H, y_true, y_pred)
    return _finish(fn(LabelSetPairs(H, A, B), H, **kwargs), single)


# ---------------------------------------------------------------------- public losses
def zero_one(H: Hierarchy, y_true, y_pred):
    """0/1 loss: 1 when ``anc(Y) != anc(Y')``, else 0.

    Label sets are compared after closure, so ``{"A", "A1"}`` and ``"A1"`` are the same
    prediction (the papers represent labels as closed node sets, NHSVM section 2).
    """
    return pairwise_loss(H, y_true, y_pred, "zero_one")


def symmetric_difference(H: Hierarchy, y_true, y_pred, half: bool = False):
    """``|anc(Y) (-) anc(Y')|`` (Cai thesis eq. (3.12); between single labels eq. (3.13)).

    ``anc`` includes the labels themselves.  ``half=True`` gives the loss
    ``Delta_h = |anc(y) (-) anc(y')| / 2`` of thesis section 7.2, which on a tree is half the
    path length between the two classes.  This is also ``l_Delta`` of Wang et al. section 3.5.
    """
    return pairwise_loss(H, y_true, y_pred, "half_symmetric" if half else "symmetric_difference")


def normalized_hierarchical(H: Hierarchy, y_true, y_pred):
    """Normalized hierarchical loss of Cai thesis eq. (7.2):

    ``1/2 (|anc(y) \\ anc(y')| / (|anc(y)| - 1) + |anc(y') \\ anc(y)| / (|anc(y')| - 1))``.

    ``|anc(y)| - 1`` is the depth of ``y`` in a tree (the number of its proper ancestors in a
    DAG).  For label sets the same formula is applied to ``anc(Y)``.  A label whose closed set
    has one node (the root) gets denominator 1 instead of 0.
    """
    return pairwise_loss(H, y_true, y_pred, "normalized")


@lru_cache(maxsize=64)
def _sibling_costs_cached(H: Hierarchy, multi_parent: str) -> np.ndarray:
    n = len(H)
    nchild = np.array([len(c) for c in H.children_indices], dtype=float)
    if H.is_tree:
        # level by level (depth order): every node's parent is one level up
        parent = H.parent_index
        c = np.ones(n)
        depths = H.depths
        for d in range(1, int(depths.max(initial=0)) + 1):
            level = np.flatnonzero(depths == d)
            c[level] = c[parent[level]] / nchild[parent[level]]
        return c
    reduce = {"mean": np.mean, "min": np.min, "max": np.max}[multi_parent]
    c = np.zeros(n)
    for v, ps in enumerate(H.parent_indices):  # topological order: parents are done
        c[v] = 1.0 if len(ps) == 0 else reduce(c[ps] / nchild[ps])
    return c


def sibling_costs(H: Hierarchy, multi_parent: str = "error") -> np.ndarray:
    """Sibling-based H-loss costs of Wang et al. eq. (5), one per node of ``H.nodes``:

    ``c_root = 1``, ``c_j = c_par(j) / |sib(j) u {j}|`` (a parent's cost is split evenly
    among its children).

    The equation is for trees.  On a DAG a node has several parents and the paper gives no
    rule: ``multi_parent="error"`` (default) refuses; ``"mean"``, ``"min"`` or ``"max"``
    combine the shares ``c_p / |chi(p)|`` over the parents ``p``.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"sibling_costs needs a hiercvx.Hierarchy, got {type(H).__name__}")
    if multi_parent not in ("error", "mean", "min", "max"):
        raise InputError(f"multi_parent must be 'error', 'mean', 'min' or 'max', got {multi_parent!r}")
    if not H.is_tree and multi_parent == "error":
        raise HierarchyError("the sibling costs of Wang et al. (5) are defined on trees and this "
                             "hierarchy is a DAG; pass multi_parent='mean' (or 'min'/'max') to "
                             "combine the shares of several parents, or charge costs of your own "
                             "with hiercvx.losses.h_loss(H, y_true, y_pred, costs) (loss='h_loss', "
                             "costs=..., one per node of H.nodes, in the metrics)")
    return _sibling_costs_cached(H, multi_parent).copy()


def subtree_costs(H: Hierarchy) -> np.ndarray:
    """Subtree-based H-loss costs of Wang et al. eq. (4): ``c_j = |sub(j)| / K``.

    ``sub(j)`` is the set of nodes of the sub-hierarchy rooted at ``j`` (``j`` included) and
    ``K`` the number of non-root nodes (Wang et al. number the nodes ``1..K`` and the root
    ``0``).  The root's cost only matters when one side is an empty label set.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"subtree_costs needs a hiercvx.Hierarchy, got {type(H).__name__}")
    sizes = np.diff(H.descendant_matrix.indptr).astype(float)  # |sub(j)|, j included
    return sizes / max(len(H) - 1, 1)


def h_loss(H: Hierarchy, y_true, y_pred, costs):
    """H-loss with node costs ``c`` (Wang et al. section 3.5, from Cesa-Bianchi et al.):

    ``l_H(Y, Y') = sum_v c_v [v in anc(Y) xor anc(Y'), and anc(Y), anc(Y') agree on every
    ancestor of v]``: each disagreement is charged at the highest node where it appears,
    errors below it are ignored.  For two single labels in a tree that diverge below a common
    ancestor this is ``c_t + c_t'`` with ``t``, ``t'`` the first nodes of the two paths after
    the split (one term if one label is an ancestor of the other).
    """
    return pairwise_loss(H, y_true, y_pred, "h_loss", costs=costs)


def sibling_loss(H: Hierarchy, y_true, y_pred, multi_parent: str = "error"):
    """Sibling-based H-loss ``l_sib``: :func:`h_loss` with the costs of Wang et al. eq. (5).

    See :func:`sibling_costs` for ``multi_parent`` (DAGs).
    """
    return pairwise_loss(H, y_true, y_pred, "sibling", multi_parent=multi_parent)


def subtree_loss(H: Hierarchy, y_true, y_pred):
    """Subtree-based H-loss ``l_sub``: :func:`h_loss` with the costs of Wang et al. eq. (4)."""
    return pairwise_loss(H, y_true, y_pred, "subtree")


def normalized_structural(H: Hierarchy, y_true, y_pred, alpha):
    """NHSVM normalized structural error, eq. (9): ``sqrt(sum_{n in y (-) y'} alpha_n)``.

    ``y`` and ``y'`` are the closed label sets and ``alpha`` has one non-negative weight per
    node of ``H.nodes`` (NHSVM (6)-(8)).  It is the Euclidean distance between the normalized
    class attributes ``sqrt(alpha) * 1[n in y]``, hence a metric.
    """
    return pairwise_loss(H, y_true, y_pred, "structural", alpha=alpha)


def leaf_count(H: Hierarchy, y_true, y_pred):
    """NHSVM section 7.1's decomposable stand-in for (9): ``|(y n L) (-) (y' n L)|``.

    ``L`` is the set of leaves.  The paper writes ``|{y n L} - {y_i n L}|`` but expands it as
    ``sum_l (1[l in y - y_i] - 1[l in y n y_i]) + |y_i n L|``, which is the size of the
    *symmetric* difference of the leaf sets; that expansion is what is implemented.  Labels
    on internal nodes contribute no leaves.
    """
    return pairwise_loss(H, y_true, y_pred, "leaf_count")


def loss_matrix(H: Hierarchy, loss: str = "half_symmetric", classes=None, **kwargs) -> np.ndarray:
    """``(n_classes, n_classes)`` matrix ``L[a, b] = loss(classes[a], classes[b])``.

    ``classes`` defaults to ``H.leaves``; a class may be any node.  ``loss`` is a key of
    :data:`LOSSES`; keyword arguments go to the loss as in :func:`pairwise_loss`.  Computed
    on all pairs at once by the same core as the per-sample losses.
    """
    fn = _loss_function(loss, kwargs)
    if not isinstance(H, Hierarchy):
        raise InputError(f"the first argument must be a hiercvx.Hierarchy, got {type(H).__name__}")
    classes = H.leaves if classes is None else class_tuple(classes)
    if len(classes) == 0:
        raise LabelError("loss_matrix needs at least one class")
    C = closed_labels(H, list(classes), "classes")
    return np.asarray(fn(LabelSetPairs(H, C, C, outer=True), H, **kwargs), dtype=float)


def class_tuple(classes) -> tuple:
    """``classes`` as a tuple of names, refusing duplicates and what is no ordered sequence of
    names (a bare string would be split into characters, a set has no column order)."""
    if isinstance(classes, (str, bytes)):
        raise InputTypeError(f"classes must be a list of class names, got the string {classes!r}; "
                             f"for one class pass [{classes!r}]")
    if isinstance(classes, (set, frozenset, Mapping)) or not isinstance(classes, Iterable):
        raise InputTypeError(f"classes must be a list of class names (node names) in the order of "
                             f"the score columns, got {type(classes).__name__}")
    if isinstance(classes, np.ndarray) and classes.ndim != 1:
        raise InputError(f"classes must be a 1-D list of class names, got an array of shape "
                         f"{classes.shape}")
    classes = tuple(classes.tolist() if isinstance(classes, np.ndarray) else classes)
    if len(set(classes)) != len(classes):
        seen, dup = set(), []
        for c in classes:
            if c in seen:
                dup.append(c)
            seen.add(c)
        raise LabelError(f"classes must be distinct; repeated: {dup[:5]!r}")
    return classes


# ---------------------------------------------------------------------- score-based inputs
def relevance_matrix(y_true, classes, what: str = "y_true", hierarchy=None) -> np.ndarray:
    """Bool ``(n_samples, n_classes)``: is ``classes[k]`` in the label set of sample ``i``.

    Parameters
    ----------
    y_true : array-like or sparse matrix
        One label per sample, label sets, or a 0/1 indicator matrix (dense or sparse) with one
        column per class or, with ``hierarchy``, one column per node of ``hierarchy.nodes``
        (closed upward or not; read over the classes when both counts agree).
    classes : sequence
        The class names, the columns of the result.
    what : str
        The argument's name in the messages.
    hierarchy : Hierarchy, optional
        Given, each label set is reduced to its most specific members
        (:func:`hiercvx.hierarchy.most_specific`: an ancestor of another member is implied by
        it) before it is matched to the classes.

    Returns
    -------
    ndarray of bool, shape (n_samples, n_classes)
        Entry ``[i, k]`` is True when ``classes[k]`` is in the label set of sample ``i``.

    Raises
    ------
    LabelError
        A label that is not one of ``classes`` (after the reduction) is refused.
    """
    classes = class_tuple(classes)
    k = len(classes)
    if sp.issparse(y_true) or (isinstance(y_true, np.ndarray) and y_true.ndim == 2):
        R = _indicator_values(y_true, what)
        if R.shape[1] == k:
            return R if hierarchy is None else _most_specific_columns(R, classes, hierarchy)
        if hierarchy is None or R.shape[1] != len(hierarchy):
            nodes = (f" or one per node of H.nodes ({len(hierarchy)})" if hierarchy is not None
                     else "; an indicator over H.nodes is read with hierarchy=H")
            raise LabelError(f"{what} as an indicator matrix needs one column per class ({k})"
                             f"{nodes}, got shape {R.shape}")
        y_true = hierarchy.label_sets(R)   # over H.nodes: each row's node set
    elif isinstance(y_true, (str, bytes)):
        raise LabelError(f"{what} must have one entry per sample, got a single string; wrap it in a list")
    else:
        check_target(y_true, what, allow_mixed=True, caller="this metric")  # None, NaN, dicts
    items = list(y_true)
    if hierarchy is not None:
        items = most_specific(hierarchy, items)
    return _class_positions(items, classes, what, hierarchy is None)


def _indicator_values(y, what: str) -> np.ndarray:
    """A dense bool copy of a 0/1 indicator matrix; any other value (-1, 2, NaN) is refused,
    not read as True."""
    if not sp.issparse(y) and not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise LabelError(f"{what} is a 2-D array of {y.dtype}; a 2-D {what} must be a 0/1 "
                         "matrix with one column per class")
    R = np.asarray(y.todense() if sp.issparse(y) else y)
    if R.dtype != bool:
        bad = np.argwhere((R != 0) & (R != 1))
        if len(bad):
            i, j = bad[0]
            raise LabelError(f"{what} as an indicator matrix holds 0 or 1 only; sample {i}, column "
                             f"{j} is {R[i, j].item()!r}. Use a bool matrix, or (M > 0) if that is "
                             "what you mean")
    return R != 0


def _most_specific_columns(R: np.ndarray, classes: tuple, H: Hierarchy) -> np.ndarray:
    """``R`` without the classes another class of the same row lies below."""
    idx = H.indices(classes)
    anc = sp.csr_matrix(H.ancestor_matrix[idx][:, idx], dtype=np.int32, copy=True)  # b at/above a
    anc.setdiag(0)
    anc.eliminate_zeros()
    implied = (sp.csr_matrix(R, dtype=np.int32) @ anc).toarray() > 0
    return R & ~implied


def _class_positions(items: list, classes: tuple, what: str, unreduced: bool) -> np.ndarray:
    """The bool ``(n_samples, n_classes)`` matrix of labels ``items``; unknown labels refused."""
    k = len(classes)
    pos = {c: j for j, c in enumerate(classes)}
    rows, cols, unknown = label_positions(items, pos)
    if unknown:
        shown = ", ".join(f"{v!r} (sample {i})" for i, v in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        hint = unknown_label_hint(unknown, pos) or (
            ". Every true label must be one of `classes` (the score columns)"
            + ("; a label set that includes ancestors of its labels is reduced to its most "
               "specific labels when hierarchy=H is passed (or reduce it with "
               "hiercvx.hierarchy.most_specific(H, y))" if unreduced else ""))
        raise LabelError(f"{what}: {len(unknown)} label(s) are not among the {k} classes: "
                         f"{shown}{more}{hint}")
    R = np.zeros((len(items), k), dtype=bool)
    R[np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)] = True
    return R


#: what a score matrix's columns are, as its errors name them: (column, their order)
#: what the errors of :func:`check_scores` call a column, their number and their order
SCORE_COLUMNS = {"classes": ("class", "n_classes", "`classes`"),
                 "nodes": ("node", "n_nodes", "H.nodes")}


def check_scores(scores, n_samples: int | None, n_classes: int, *, over: str = "classes",
                 name: str = "scores") -> np.ndarray:
    """A finite float ``(n_samples, n_classes)`` score matrix (complex scores are refused, not
    cut to their real part); ``n_samples=None`` takes any number of rows; ``over``:
    ``"classes"`` or ``"nodes"`` (one column per node of ``H.nodes``), what the errors call
    the columns."""
    column, count, order = SCORE_COLUMNS[over]
    check_not_complex(scores, name, what="scores")
    try:
        S = np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric (n_samples, {count}) array") from None
    rows = S.shape[0] if n_samples is None and S.ndim == 2 else n_samples
    if S.ndim != 2 or S.shape != (rows, n_classes):
        want = f"({rows}, {n_classes})" if rows is not None else f"(n_samples, {n_classes})"
        one_row = (f"; for one sample pass a single row, {name}.reshape(1, -1)"
                   if S.ndim == 1 and S.shape == (n_classes,) else "")
        raise InputError(f"{name} must have shape (n_samples, {count}) = {want}, got {S.shape}; "
                         f"columns follow {order}{one_row}")
    if not np.all(np.isfinite(S)):
        i, j = np.argwhere(~np.isfinite(S))[0]
        raise InputError(f"{name} has a non-finite entry at sample {i}, {column} {j}")
    return S


def row_chunks(n: int, k: int, budget: int = 4_000_000):
    """Slices of ``n`` rows so that each chunk's ``(rows, k, k)`` work stays within ``budget``."""
    step = max(1, budget // max(k * k, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def ranking_loss(H: Hierarchy, y_true, scores, classes=None, loss: str = "symmetric_difference",
                 ties: str = "ignore", **kwargs) -> np.ndarray:
    """Hierarchical ranking loss of Cai thesis eq. (3.15), one value per sample:

    ``sum over y in Y, y' in classes - Y ranked above y (g(y') > g(y)) of loss(y, y')``

    with ``loss = |anc(y) (-) anc(y')|`` by default (any key of :data:`LOSSES` works).
    The thesis prints the condition as ``g(y) > g(y')``, which contradicts its own text
    ("an incorrect category comes before a correct category"); the text is followed.
    ``ties``: ``"ignore"`` (strict order, as printed), ``"count"`` (a tie counts as
    misordered, as in the ranking loss (7.5)) or ``"half"`` (a tie counts 1/2).

    ``scores`` is ``(n_samples, n_classes)`` with columns following ``classes``
    (default ``H.leaves``); ``y_true`` holds label sets (or single labels) drawn from ``classes``,
    or an indicator over ``classes`` or over ``H.nodes`` (``relevance_matrix``); a label set
    that includes ancestors of its labels is reduced to its most specific labels.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"the first argument must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if ties not in ("ignore", "count", "half"):
        raise InputError(f"ties must be 'ignore', 'count' or 'half', got {ties!r}")
    classes = H.leaves if classes is None else class_tuple(classes)
    L = loss_matrix(H, loss, classes, **kwargs)
    R = relevance_matrix(y_true, classes, hierarchy=H)
    S = check_scores(scores, R.shape[0], len(classes))
    tie_w = {"ignore": 0.0, "count": 1.0, "half": 0.5}[ties]
    out = np.zeros(R.shape[0])
    for sl in row_chunks(R.shape[0], len(classes)):
        s, r = S[sl], R[sl]
        above = (s[:, None, :] > s[:, :, None]) + tie_w * (s[:, None, :] == s[:, :, None])
        pair = r[:, :, None] & ~r[:, None, :]  # [i, a, b]: a relevant, b not
        out[sl] = np.einsum("iab,iab,ab->i", pair, above, L)
    return out
