"""Labels as users and loaders give them, read against a hierarchy: label sets with their
ancestors reduced to their most specific members, labels that stop at internal nodes given
self leaves (Cai thesis section 3.1), one path per sample recognised.  Public through
:mod:`hiercvx.hierarchy`; the functions take a :class:`~hiercvx.hierarchy.Hierarchy` ``H``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._label_lookup import is_label_set

# Hierarchy and PartialPaths in the annotations are hiercvx.hierarchy's, not imported here:
# that module imports this one and re-exports its functions

__all__ = ["most_specific", "internal_labels", "self_leaves", "single_path"]


def _members(item, index: Mapping) -> tuple:
    return tuple(item) if is_label_set(item, index) else (item,)


def _known(v, index: Mapping) -> bool:
    try:
        return v in index
    except TypeError:  # an unhashable name: refused later, with its sample
        return False


def most_specific(H: Hierarchy, labels) -> list:
    """Each sample's labels without those another of its labels implies (its ancestors): the
    upward closure (Cai thesis section 3.2, ``anc(y)``) is the same.  Loaders give label sets
    with their ancestors (Clus-HMC ARFF: ``{'2', '2/1', '2/1/3'}``).  Single labels come back
    as they are, label sets as frozensets; names that are no node are kept (refused later).

    >>> from hiercvx import Hierarchy
    >>> H = Hierarchy.from_paths(["2/1/3", "2/2"])
    >>> most_specific(H, [{"2", "2/1", "2/1/3"}, {"2"}])
    [frozenset({'2/1/3'}), frozenset({'2'})]
    """
    index, implied_by, out = H._index, {}, []
    for item in labels:
        if not is_label_set(item, index):
            out.append(item)
            continue
        implied = set()
        for v in (v for v in item if _known(v, index)):
            implied.update(implied_by.setdefault(v, H.ancestors(v)))
        out.append(frozenset(v for v in item if v not in implied))
    return out


def internal_labels(H: Hierarchy, labels) -> tuple:
    """The internal nodes some label stops at (single labels or label sets), in node order."""
    index = H._index
    used = {v for item in labels for v in _members(item, index)
            if _known(v, index) and not H.is_leaf(v)}
    return tuple(sorted(used, key=H.index))


def self_leaves(H: Hierarchy, labels) -> PartialPaths:
    """Labels that stop at an internal node, read as the Cai thesis does (section 3.1): a leaf
    for the node itself under every node of :func:`internal_labels` (reduce label sets with
    :func:`most_specific` first).  Returns :meth:`Hierarchy.with_self_leaves` on those nodes:
    ``.hierarchy`` to train on, ``.transform(labels)``, ``.owner`` (self leaf -> node).

    >>> from hiercvx import Hierarchy
    >>> paths = self_leaves(Hierarchy.from_paths(["a/b", "a/c", "d"]), ["a/b", "a"])
    >>> paths.transform(["a/b", "a"]), len(paths.hierarchy.leaves)
    (['a/b', 'a/<self>'], 4)
    """
    return H.with_self_leaves(internal_labels(H, labels))


def single_path(H: Hierarchy, labels) -> np.ndarray:
    """Per sample: do its labels lie on one path from the root (one most specific label)?"""
    return np.array([len(_members(item, H._index)) == 1 for item in most_specific(H, labels)],
                    dtype=bool)
