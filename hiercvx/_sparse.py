"""Index building blocks for CSR-structured data, shared by the formulations and losses."""

from __future__ import annotations

import numpy as np


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` over the pairs ``(s, c)``, without a Python loop.

    E.g. the positions of the stored entries of some CSR rows: ``starts = indptr[rows]``,
    ``counts = indptr[rows + 1] - indptr[rows]``.
    """
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
