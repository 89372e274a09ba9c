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


def by_node_names(values, H: Hierarchy, name: str):
    """``values`` with its columns in ``H.nodes`` order when it names them (a table with
    ``.columns``, such as a pandas DataFrame, is read by column name, not by position);
    anything without ``.columns`` is returned as it is."""
    columns = getattr(values, "columns", None)
    if columns is None or sp.issparse(values):
        return values
    names = list(columns)
    position = {}
    for j, c in enumerate(names):
        try:
            position.setdefault(c, j)
        except TypeError:  # an unhashable column name is no node name
            position = None
            break
    if position is None or len(position) != len(names) or set(position) != set(H.nodes):
        shown = ", ".join(repr(c) for c in names[:5]) + (", ..." if len(names) > 5 else "")
        raise InputError(
            f"{name} has columns [{shown}], which are not the node names of H.nodes ({len(H)} "
            "distinct names); name its columns by H.nodes (any order, each node once), or pass "
            f"{name}.to_numpy() if its columns already follow H.nodes order")
    order = [position[v] for v in H.nodes]
    arr = np.asarray(values)
    if arr.ndim != 2:
        raise InputError(f"{name} must be a table of shape (n_samples, {len(H)}) with one column "
                         f"per node of H.nodes, got shape {arr.shape}")
    return arr[:, order]


def check_scores(scores, H: Hierarchy, name: str = "scores") -> tuple[np.ndarray, bool]:
    """Scores as a float ``(n_samples, n_nodes)`` array, and whether the input was 1-D.  A table
    with ``.columns`` (a pandas DataFrame) is read by column name (:func:`by_node_names`)."""
    if sp.issparse(scores):
        scores = scores.toarray()
    arr = real_array(by_node_names(scores, H, name), name)
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
    check_sums(arr, name, single)
    return arr, single


def check_sums(arr: np.ndarray, name: str, single: bool = False) -> None:
    """Refuse score rows whose sum of ``|s|`` does not stay far inside float64: a set's value,
    a path sum and every bound are at most that sum (the minimum cuts' capacities twice it),
    so within it no sum of scores overflows to inf and the argmax stays exact."""
    with np.errstate(over="ignore"):
        totals = np.abs(arr).sum(axis=1)
    limit = np.finfo(float).max / 4  # room for the doubled capacities of the minimum cuts
    over = np.flatnonzero(~(totals <= limit))
    if over.size:
        where = "" if single else f" of sample {int(over[0])}"
        raise InputError(f"{name} are too large: the sum of |{name}|{where} is "
                         f"{totals[over[0]]:.3g}, beyond {limit:.3g} (a quarter of the float64 "
                         "maximum), where the sums of inference overflow; rescale them (divide "
                         f"{name} by a common positive factor: the best label set does not change)")


def check_indicator(indicator, H: Hierarchy, name: str) -> np.ndarray:
    """A 0/1 (or bool) array over ``H.nodes`` as bool, 1-D or 2-D (not reshaped); a table with
    ``.columns`` is read by column name (:func:`by_node_names`)."""
    if sp.issparse(indicator):
        indicator = indicator.toarray()
    arr = np.asarray(by_node_names(indicator, H, name))
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
