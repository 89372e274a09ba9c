"""Input checks shared by the inference entry points: a hierarchy, node scores, indicators."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_not_complex
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy


def check_hierarchy(H) -> Hierarchy:
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}; build one with "
                         "Hierarchy.from_parents / from_edges / from_paths")
    return H


def real_array(values, name: str) -> np.ndarray:
    """``values`` as a float array; complex values are refused, not cut to their real part."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged rows
        raise InputError(f"{name} must be a numeric array: {exc}") from None
    check_not_complex(arr, name, what="scores")
    try:
        return np.asarray(arr, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array: {exc}") from None


def check_scores(scores, H: Hierarchy, name: str = "scores") -> tuple[np.ndarray, bool]:
    """Scores as a float ``(n_samples, n_nodes)`` array, and whether the input was 1-D."""
    if sp.issparse(scores):
        scores = scores.toarray()
    arr = real_array(scores, name)
    M = len(H)
    if arr.ndim == 1:
        single = True
        arr = arr[None, :]
    elif arr.ndim == 2:
        single = False
    else:
        raise InputError(f"{name} must have shape (n_nodes,) = ({M},) or (n_samples, n_nodes) = "
                         f"(n, {M}), got shape {arr.shape}")
    if arr.shape[1] != M:
        raise InputError(f"{name} has {arr.shape[1]} columns but the hierarchy has {M} nodes; "
                         f"give one score per node of H.nodes (root included), shape (n, {M})")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        where = f"node {H.nodes[bad[1]]!r}" if single else f"sample {bad[0]}, node {H.nodes[bad[1]]!r}"
        raise InputError(f"{name} has non-finite entries (NaN or inf), first at {where}; check the "
                         "weights or features that produced them")
    return arr, single


def check_indicator(indicator, H: Hierarchy, name: str) -> np.ndarray:
    """A 0/1 (or bool) array over ``H.nodes`` as bool, 1-D or 2-D (not reshaped)."""
    if sp.issparse(indicator):
        indicator = indicator.toarray()
    arr = np.asarray(indicator)
    if arr.ndim not in (1, 2) or arr.shape[-1] != len(H):
        raise LabelError(f"{name} must have shape ({len(H)},) or (n_samples, {len(H)}) (one column "
                         f"per node of H.nodes), got shape {arr.shape}; build it with H.closure(labels)")
    if arr.dtype != bool:
        try:
            num = arr.astype(float)
        except (TypeError, ValueError):
            raise LabelError(f"{name} must be a 0/1 or boolean array, got dtype {arr.dtype}") from None
        if not np.all((num == 0) | (num == 1)):
            raise LabelError(f"{name} must contain only 0/1 (or True/False) entries; "
                             "build it with H.closure(labels)")
        arr = num == 1
    return arr



def check_true_sets(indicator, H: Hierarchy, name: str = "true_indicator") -> np.ndarray:
    """:func:`check_indicator`, and every row a true label set: non-empty and closed upward
    (a label's ancestors in; a set that stops at an internal node is allowed)."""
    arr = check_indicator(indicator, H, name)
    rows = np.atleast_2d(arr)
    empty = np.flatnonzero(~rows.any(axis=1))
    if empty.size:
        where = "" if arr.ndim == 1 else f" (row {int(empty[0])})"
        raise LabelError(f"{name} has an empty true set{where}; every sample needs its true label "
                         "set, built with H.closure(labels)")
    unclosed = np.flatnonzero(~H.is_closed(rows))
    if unclosed.size:
        i = int(unclosed[0])
        parent, child = H.edge_index[rows[i, H.edge_index[:, 1]] & ~rows[i, H.edge_index[:, 0]]][0]
        where = "" if arr.ndim == 1 else f" row {i}"
        raise LabelError(f"{name}{where} is not closed upward: it holds {H.nodes[child]!r} "
                         f"without its parent {H.nodes[parent]!r}; build it with H.closure(labels)")
    return arr
