"""Input checks shared by formulations, solvers and estimators (written once, reused)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .exceptions import InputError, LabelError

__all__ = ["check_features", "check_not_complex", "check_positive", "check_label_sets"]


def check_not_complex(X, name: str = "X") -> None:
    """Refuse complex features: a cast to float would silently keep only the real part."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise InputError(f"Complex data not supported: {name} is complex ({dtype}); hiercvx takes "
                         "real features. Pass X.real or np.abs(X) (or split real and imaginary "
                         "parts into columns) explicitly")


def check_features(X, name: str = "X", allow_sparse: bool = True, dtype=float):
    """A 2-D finite float matrix (dense ndarray or CSR); ragged, complex or non-finite input
    is refused."""
    check_not_complex(X, name)
    if sp.issparse(X):
        if not allow_sparse:
            raise InputError(f"{name} must be dense here; call .toarray() first")
        X = sp.csr_matrix(X, dtype=dtype)
        if not np.all(np.isfinite(X.data)):
            raise InputError(f"{name} has non-finite entries (NaN or inf); impute or drop them, e.g. "
                             "with sklearn.impute.SimpleImputer in a pipeline")
        return X
    if not isinstance(X, np.ndarray):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{name} must be a numeric 2-D array with rows of equal length: "
                             f"{exc}") from None
        check_not_complex(X, name)  # a list of numpy complex scalars
    try:
        X = X.astype(dtype, copy=False)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{name} must be a numeric 2-D array with rows of equal length: {exc}") from None
    if X.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(f"{name} is empty (shape {X.shape})")
    if not np.all(np.isfinite(X)):
        bad = np.argwhere(~np.isfinite(X))[0]
        raise InputError(f"{name} has non-finite entries (first at row {bad[0]}, column {bad[1]}); "
                         "impute or drop them, e.g. with sklearn.impute.SimpleImputer in a pipeline")
    return X


def check_positive(value, name: str = "C") -> float:
    """A finite positive scalar (C, lambda, ...)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a positive number, got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"{name} must be positive and finite, got {value!r}")
    return v


def check_label_sets(Y, H, classes, n_samples: int, name: str = "Y"):
    """Label sets restricted to ``classes``: a bool ``(n_samples, n_classes)`` matrix.

    ``Y``: single labels or label sets of node names.  Every label must be one of
    ``classes``; every sample needs at least one label and at least one non-label.
    """
    classes = tuple(classes)
    pos = {c: k for k, c in enumerate(classes)}
    ind = H.label_indicator(Y)  # unknown node names raise here
    if ind.shape[0] != n_samples:
        raise InputError(f"{name} has {ind.shape[0]} entries but X has {n_samples} rows")
    cols = np.full(len(H), -1)
    for c, k in pos.items():
        cols[H.index(c)] = k
    coo = ind.tocoo()
    mapped = cols[coo.col]
    if np.any(mapped < 0):
        j = int(np.flatnonzero(mapped < 0)[0])
        raise LabelError(f"sample {coo.row[j]} has label {H.nodes[coo.col[j]]!r}, which is not one of "
                         f"the classes ({len(classes)} classes, e.g. {classes[:3]}); internal nodes as "
                         "labels need hierarchy.with_self_leaves(...) first")
    out = np.zeros((n_samples, len(classes)), dtype=bool)
    out[coo.row, mapped] = True
    counts = out.sum(axis=1)
    if np.any(counts == 0):
        raise LabelError(f"sample {int(np.flatnonzero(counts == 0)[0])} has no label; every sample needs one")
    if np.any(counts == len(classes)):
        raise LabelError(f"sample {int(np.flatnonzero(counts == len(classes))[0])} has every class as a "
                         "label, so it constrains nothing; remove it")
    return out
