"""The multi-label space ``Y_m`` of a hierarchy: membership, enumeration, set scores, the
single-label rule.

``Y_m = {anc(L) : L a non-empty set of leaves}`` (Choi, Sasaki and Srebro, "Normalized
Hierarchical SVM", arXiv:1508.02479, 2016, section 3): ancestor-closed, extendable downwards,
non-empty label sets.  Enumeration lists its ``2^leaves - 1`` members, one per leaf subset;
:func:`best_leaf` is the argmax over the single-label space ``Y_s`` (one path per leaf).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError, ProblemTooLargeError
from ..hierarchy import Hierarchy
from ._checks import check_hierarchy, check_indicator, check_scores, real_array
from .options import Options

__all__ = ["label_set_scores", "is_valid_label_set", "auto_method", "enumerate_label_sets",
           "best_leaf"]


def label_set_scores(scores, indicator) -> np.ndarray:
    """``sum_{n in y} s_n`` for each row: the potential gamma(x, y) of the paper's eq. (1).

    ``scores`` and ``indicator``: ``(n_nodes,)`` or ``(n_samples, n_nodes)``, over the same
    nodes; a single row of either is shared by all rows of the other.
    """
    scores = np.atleast_2d(real_array(scores, "scores"))
    indicator = np.atleast_2d(np.asarray(indicator, dtype=bool))
    if (scores.ndim != 2 or indicator.ndim != 2 or scores.shape[1] != indicator.shape[1]
            or scores.shape[0] not in (1, indicator.shape[0]) and indicator.shape[0] != 1):
        raise InputError(f"scores of shape {scores.shape} and label sets of shape "
                         f"{indicator.shape} do not match: give both over the same nodes, "
                         "(n_nodes,) or (n_samples, n_nodes), with equal numbers of rows (or "
                         "one row of either)")
    return np.where(indicator, scores, 0.0).sum(axis=1)



def is_valid_label_set(indicator, H: Hierarchy) -> np.ndarray:
    """Per row: is the set a member of the multi-label space ``Y_m`` (section 3 / (19))?

    True when the root is chosen, every chosen node's parents are chosen, every chosen
    internal node has a chosen child, and at least one leaf is chosen.  Returns a bool array
    of shape ``(n_samples,)`` (length 1 for a 1-D input).
    """
    H = check_hierarchy(H)
    Z = np.atleast_2d(check_indicator(indicator, H, "indicator"))
    parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
    closed = ~np.any(Z[:, child] & ~Z[:, parent], axis=1)
    internal = ~H.leaf_mask
    # child_of[p, c] = 1 for each edge; chosen children per node = child_of @ z
    child_of = sp.csr_matrix((np.ones(len(parent), dtype=np.int64), (parent, child)),
                             shape=(len(H), len(H)))
    n_chosen_children = np.asarray((child_of @ Z.T.astype(np.int64)).T)
    extendable = ~np.any(Z[:, internal] & (n_chosen_children[:, internal] == 0), axis=1)
    has_leaf = np.any(Z[:, H.leaf_mask], axis=1)
    return Z[:, 0] & closed & extendable & has_leaf


def auto_method(H: Hierarchy, max_nodes: int | None = None, *, options: Options | None = None) -> str:
    """What ``method="auto"`` runs on ``H``: ``"dp"`` on trees, ``"enumerate"`` on DAGs with at
    most ``options.enumerate_auto_leaves`` leaves and ``max_nodes`` (default
    ``options.enumerate_max_nodes``) nodes, ``"ilp"`` otherwise."""
    options = options or Options()
    max_nodes = options.enumerate_max_nodes if max_nodes is None else max_nodes
    if H.is_tree:
        return "dp"
    if len(H.leaf_indices) <= options.enumerate_auto_leaves and len(H) <= max_nodes:
        return "enumerate"
    return "ilp"


def enumerate_label_sets(H: Hierarchy, max_nodes: int | None = None) -> np.ndarray:
    """Every member of ``Y_m = {anc(L) : L non-empty set of leaves}`` as a bool ``(n_sets, M)``.

    Distinct leaf subsets give distinct sets (a leaf is nobody's ancestor), so there are
    ``2^|leaves| - 1`` of them, listed in increasing bit order of ``L`` (bit k = k-th leaf of
    ``H.leaf_indices``).  Refuses hierarchies with more than ``max_nodes`` nodes (default
    :class:`Options.enumerate_max_nodes <hiercvx.inference.options.Options>`).
    """
    H = check_hierarchy(H)
    max_nodes = Options().enumerate_max_nodes if max_nodes is None else int(max_nodes)
    if len(H) > max_nodes:
        raise ProblemTooLargeError(
            f"enumeration lists 2^{len(H.leaf_indices)} - 1 label sets; the hierarchy has {len(H)} "
            f"nodes, over the limit max_nodes={max_nodes}. Use method='dp' (trees) or 'ilp' (DAGs), "
            "or raise max_nodes if you really want brute force")
    leaves = H.leaf_indices
    k = len(leaves)
    masks = np.arange(1, 1 << k, dtype=np.int64)
    chosen_leaves = ((masks[:, None] >> np.arange(k)) & 1).astype(np.int32)   # (n_sets, k)
    anc_of_leaf = H.ancestor_matrix[leaves].astype(np.int32)                   # (k, M)
    return np.asarray((anc_of_leaf.T @ chosen_leaves.T).T > 0)



def best_leaf(scores, H: Hierarchy, return_indicator: bool = False):
    """Single-label prediction: the leaf ``l`` maximizing ``sum_{n in anc(l)} s_n`` (argmax over
    ``Y_s``, NHSVM section 3 and the prediction rule of section 4).

    Path sums are ``scores @ A[leaves].T`` with ``A = H.ancestor_matrix``.  Returns the node
    index (into ``H.nodes``) of the best leaf: an int for 1-D ``scores``, else an
    ``(n_samples,)`` int array; ties go to the first leaf in ``H.nodes`` order.  With
    ``return_indicator=True`` returns the bool indicator of ``anc(l)`` instead.
    """
    H = check_hierarchy(H)
    S, single = check_scores(scores, H)
    leaves = H.leaf_indices
    anc_of_leaf = H.ancestor_matrix[leaves].astype(float)       # (n_leaves, M)
    path_sums = np.asarray((anc_of_leaf @ S.T).T)                # (n, n_leaves)
    best = leaves[np.argmax(path_sums, axis=1)]
    if return_indicator:
        Z = H.ancestor_matrix[best].toarray().astype(bool)
        return Z[0] if single else Z
    return int(best[0]) if single else best

