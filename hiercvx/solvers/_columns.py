"""The feature columns a problem uses: an L2-type regularized linear model never needs the
columns of ``X`` that are zero in every example.

Such a column enters neither the loss (every score ignores it) nor, at the optimum, the
weights: the regularizers here (``1/2 tr(W^T S W)``, Omega (5) of orthogonal transfer, the
shared norm ``sum_n ||U_n||^2 / alpha_n``) keep their value when the sign of one column of the
weights flips, so the midpoint of an optimum and its flipped copy -- that column at 0 -- is an
optimum too (the only one when the problem is strictly convex).  A dual point's ``U(alpha)`` is
0 on those columns, so its bound is the same number.  The solvers solve on the used columns
and lift the weights back with zeros; ``X`` padded with zero columns costs what ``X`` costs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

__all__ = ["used_columns", "restrict_columns", "lift_columns"]


def used_columns(X) -> np.ndarray | None:
    """The columns of ``X`` (dense or scipy.sparse) with a nonzero entry, or ``None`` when
    that is every column or none (nothing to drop, or nothing left to solve on)."""
    if sp.issparse(X):
        entries = sp.coo_matrix(X)
        nonzero = np.bincount(entries.col[entries.data != 0], minlength=X.shape[1]) > 0
    else:
        nonzero = np.any(np.asarray(X) != 0, axis=0)
    columns = np.flatnonzero(nonzero)
    return None if len(columns) in (0, X.shape[1]) else columns


def restrict_columns(model, columns, also=()):
    """A copy of ``model`` (a dataclass with ``X`` and ``X_features``: the features as given,
    ``X`` with a bias column last when it has one) on ``columns`` of ``X``; the fields named in
    ``also`` (holding ``X``'s columns, e.g. ``X_slacks``) are restricted alike."""
    X = model.X
    Xc = X[:, columns]
    new = {"X": Xc}
    features = model.X_features
    new["X_features"] = Xc if features is X else features[:, columns[columns < features.shape[1]]]
    for name in also:
        value = getattr(model, name)
        new[name] = Xc if value is X else value[:, columns]
    return dataclasses.replace(model, **new)


def lift_columns(W, columns, width: int) -> np.ndarray:
    """Weights ``(rows, width)`` from those over ``columns`` (zero on the other columns)."""
    W = np.asarray(W, dtype=float)
    out = np.zeros((W.shape[0], width))
    out[:, columns] = W
    return out
