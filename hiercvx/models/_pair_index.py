"""The margin model's pair list as an index space, without listing it.

The pairs of example i are ``(i, y, ybar)`` for its relevant classes ``y`` (``k_i`` of them)
and irrelevant classes ``ybar`` (``q - k_i``), listed by :func:`hiercvx.models.margin.label_pairs`
sorted by example, then ``y``, then ``ybar``.  On label sets over a GO DAG that list has tens
of millions of entries, of which a solver that works with the loss-augmented oracle (the
label-set engine) ever touches a few per example.  Every position in the list is a closed
form of the example's relevant classes, so the list never has to exist:

    position(i, y, ybar) = ptr[i] + rank_i(y) (q - k_i) + ybar - #{relevant classes of i below ybar}

with ``ptr[i] = sum_{j < i} k_j (q - k_j)`` and ``rank_i(y)`` the place of ``y`` among the
relevant classes of i; the inverse reads ``i`` off ``ptr``, splits the offset into the two
ranks and finds the irrelevant class of a rank by a search over ``r_j - j`` (``r_j`` the j-th
relevant class: ``ybar = rank + #{j : r_j - j <= rank}``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["relevant_lists", "pair_offsets", "pair_positions", "pairs_at"]


def relevant_lists(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rel_ptr, rel)``: the relevant classes of every example as sorted CSR lists."""
    Y = np.asarray(Y, dtype=bool)
    rows, cols = np.nonzero(Y)
    ptr = np.zeros(Y.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=Y.shape[0]), out=ptr[1:])
    return ptr, cols.astype(np.int64)


def pair_offsets(Y: np.ndarray) -> np.ndarray:
    """``ptr`` ``(n + 1,)``: where each example's pairs start in the list (CSR offsets)."""
    Y = np.asarray(Y, dtype=bool)
    k = Y.sum(axis=1).astype(np.int64)
    ptr = np.zeros(Y.shape[0] + 1, dtype=np.int64)
    np.cumsum(k * (Y.shape[1] - k), out=ptr[1:])
    return ptr


def pair_positions(Y, pair_i, pair_y, pair_ybar, *, lists=None, offsets=None) -> np.ndarray:
    """Positions of the pairs ``(pair_i, pair_y, pair_ybar)`` in the list (module docstring);
    ``lists`` / ``offsets``: :func:`relevant_lists` / ``pair_offsets`` of ``Y`` when the
    caller has them."""
    Y = np.asarray(Y, dtype=bool)
    q = Y.shape[1]
    rel_ptr, rel = relevant_lists(Y) if lists is None else lists
    ptr = pair_offsets(Y) if offsets is None else offsets
    i = np.asarray(pair_i, dtype=np.int64)
    y = np.asarray(pair_y, dtype=np.int64)
    ybar = np.asarray(pair_ybar, dtype=np.int64)
    owner = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(rel_ptr))
    keys = owner * q + rel                                  # sorted: by example, then class
    rank_y = np.searchsorted(keys, i * q + y) - rel_ptr[i]
    below = np.searchsorted(keys, i * q + ybar) - rel_ptr[i]
    k = rel_ptr[i + 1] - rel_ptr[i]
    return ptr[i] + rank_y * (q - k) + (ybar - below)


def pairs_at(Y, positions, *, lists=None, offsets=None):
    """``(pair_i, pair_y, pair_ybar)`` at ``positions`` of the list: the inverse of
    :func:`pair_positions`."""
    Y = np.asarray(Y, dtype=bool)
    q = Y.shape[1]
    rel_ptr, rel = relevant_lists(Y) if lists is None else lists
    ptr = pair_offsets(Y) if offsets is None else offsets
    pos = np.asarray(positions, dtype=np.int64)
    i = np.searchsorted(ptr, pos, side="right") - 1
    k = rel_ptr[i + 1] - rel_ptr[i]
    rank_y, rank_ybar = np.divmod(pos - ptr[i], q - k)
    y = rel[rel_ptr[i] + rank_y]
    owner = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(rel_ptr))
    shifted = owner * (q + 1) + (rel - (np.arange(rel.size) - rel_ptr[owner]))  # r_j - j
    skipped = np.searchsorted(shifted, i * (q + 1) + rank_ybar, side="right") - rel_ptr[i]
    return i, y, rank_ybar + skipped
