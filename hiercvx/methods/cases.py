"""Built-in problems of every structure, on which ``hiercvx verify`` and the tests run each
registered method: seeded Gaussian clusters over small trees and DAGs.

- ``flat``: ``q`` classes, no hierarchy (one artificial root);
- ``tree``: one leaf label per sample on :data:`TREE`;
- ``dag``: single or multi-label on :data:`DAG` (a leaf with two parents);
- ``multilabel``: label sets of two leaves of :data:`TREE`;
- ``partial``: some samples labelled at an internal node (partial paths);
- ``sparse``: ``tree`` with a CSR ``X`` of density about 0.4.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..hierarchy import Hierarchy

__all__ = ["TREE", "DAG", "problem"]

#: The tree of the ``tree``, ``multilabel``, ``partial`` and ``sparse`` problems: root ``r``
#: with children ``A`` (leaves ``A1``, ``A2``) and ``B`` (leaves ``B1``, ``B2``, ``B3``).
TREE = Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A", "B1": "B",
                               "B2": "B", "B3": "B"})
#: The DAG of the ``dag`` problems: root ``r`` with children ``A`` and ``B``, leaves ``x``
#: (under ``A``), ``z`` (under ``B``) and ``y``, a leaf with the two parents ``A`` and ``B``.
DAG = Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"), ("B", "z")])


def _clusters(labels, n, d, rng, spread=0.8):
    """``n`` points around one random centre per label, labels taken round-robin."""
    labels = np.array(labels, dtype=object)
    centres = rng.standard_normal((len(labels), d))
    k = np.arange(n) % len(labels)
    return centres[k] + spread * rng.standard_normal((n, d)), labels[k]


def problem(structure: str, n: int = 40, d: int = 4, seed: int = 0):
    """``(X, Y, H)`` of the given structure (see the module docstring); ``H`` is ``None`` for
    ``flat`` (``Y`` then holds class indices ``0..4``)."""
    rng = np.random.default_rng(seed)
    if structure == "flat":
        X, y = _clusters(range(5), n, d, rng)
        return X, y.astype(int), None
    if structure == "dag":
        leaves = ("x", "y", "z")
        X, y = _clusters(leaves, n, d, rng)
        Y = [set(leaves) - {y[i]} if i % 4 == 0 else {y[i]} for i in range(n)]
        return X, Y, DAG
    X, y = _clusters(TREE.leaves, n, d, rng)
    if structure in ("tree", "sparse"):
        if structure == "sparse":
            X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.4, X, 0.0))
        return X, y, TREE
    if structure == "multilabel":
        extra = np.array(TREE.leaves, dtype=object)[rng.integers(0, len(TREE.leaves), n)]
        return X, [frozenset({a, b}) for a, b in zip(y, extra)], TREE
    if structure == "partial":
        y = y.copy()
        for i in range(0, n, 5):  # every fifth sample keeps only its top-level node
            y[i] = TREE.parents(y[i])[0]
        return X, y, TREE
    raise ValueError(f"unknown structure {structure!r}")
