"""Pieces every hiercvx estimator shares: parameter storage, the input checks that open
``fit``, target handling and the multi-label decision rule."""

from __future__ import annotations

import warnings
from collections.abc import Hashable

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import _check_sample_weight, validate_data

from .._validation import check_positive
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy
from ..kernels import check_psd

SOLVERS = ("fast", "reference")


def store_init_params(estimator, init_args: dict) -> None:
    """Keep every ``__init__`` argument, unchanged, as the attribute of the same name.

    scikit-learn's ``get_params`` / ``set_params`` / ``clone`` read the parameters back by the
    names in the ``__init__`` signature, so ``__init__`` stores them as given and does nothing
    else (validation waits for ``fit``).  Use it as the whole body of ``__init__``:
    ``store_init_params(self, locals())``.
    """
    for name, value in init_args.items():
        if name != "self" and not name.startswith("__"):  # not the instance, nor __class__
            setattr(estimator, name, value)


def check_solver_options(penalty, penalty_name: str, tol, solver) -> None:
    """Refuse a non-positive regularization constant (``C`` or ``lam``, named ``penalty_name``
    in the message) or tolerance ``tol``, and a ``solver`` not in :data:`SOLVERS`."""
    check_positive(penalty, penalty_name)
    check_positive(tol, "tol")
    if solver not in SOLVERS:
        raise InputError(f"solver must be one of {SOLVERS}, got {solver!r}")


def validate_training_X(estimator, X, *, precomputed: bool = False, check_kernel: bool = True):
    """``X`` for ``fit`` through scikit-learn's ``validate_data`` (float64, at least two rows,
    CSR kept unless ``X`` is a precomputed kernel).  A precomputed kernel must be square,
    symmetric and PSD (:func:`hiercvx.kernels.check_psd`); ``check_kernel=False`` leaves that
    to a solver that checks it itself."""
    X = validate_data(estimator, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
                      ensure_min_samples=2)
    if precomputed and check_kernel:
        check_psd(X, what="precomputed kernel matrix")
    return X


def ravel_column_target(y):
    """A column vector ``y`` ``(n, 1)`` becomes ``(n,)`` (one label per sample) with a
    ``DataConversionWarning``, as scikit-learn's classifiers do; anything else is returned as is."""
    if isinstance(y, np.ndarray) and y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is "
                      "raveled (one label per sample)", DataConversionWarning,
                      stacklevel=3)  # points at the caller of the estimator's fit
        y = y.ravel()
    return y


def resolve_training_targets(y, hierarchy: Hierarchy | None, n_samples: int):
    """:func:`resolve_targets` for ``fit``, which also needs one entry of ``y`` per row of
    ``X`` (``n_samples``).  Returns ``(H, classes, labels, multilabel)``."""
    H, classes, labels, multilabel = resolve_targets(y, hierarchy)
    if len(labels) != n_samples:
        raise InputError(f"y has {len(labels)} entries but X has {n_samples} rows")
    return H, classes, labels, multilabel


def check_training_weights(sample_weight, X):
    """``sample_weight`` as a float array over the rows of ``X`` (None stays None): non-negative,
    and positive somewhere, else nothing is left to train on."""
    if sample_weight is None:
        return None
    sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
    if not np.any(sample_weight > 0):
        raise InputError("sample_weight is zero everywhere: at least one sample needs a "
                         "positive weight")
    return sample_weight


def is_multilabel_target(y) -> bool:
    """True for a list of label sets or a 2-D indicator; False for one label per sample."""
    if sp.issparse(y):
        return True
    if isinstance(y, np.ndarray):
        return y.ndim == 2 and y.shape[1] > 1
    for item in y:
        if isinstance(item, (set, frozenset, list)) or (isinstance(item, np.ndarray) and item.ndim):
            return True
        if isinstance(item, tuple):
            return True
        return False
    return False


def flat_hierarchy(classes) -> Hierarchy:
    """A one-level hierarchy: an artificial root above every class (flat classification)."""
    root = "<root>"
    while root in set(classes):
        root = root + "_"
    return Hierarchy([(root, c) for c in classes], root=root)


def resolve_targets(y, hierarchy: Hierarchy | None):
    """Turn ``y`` into ``(H, classes, labels, multilabel)``.

    ``labels`` is what the formulations take: node names (single) or label sets.  Without a
    hierarchy the classes are the sorted unique labels under one artificial root.
    """
    if y is None:
        raise LabelError("this estimator requires y to be passed, but the target y is None")
    if not isinstance(y, (list, tuple, np.ndarray)) and not sp.issparse(y):
        y = np.asarray(y)
    multilabel = is_multilabel_target(y)
    if not multilabel:
        from sklearn.utils.multiclass import check_classification_targets

        yy = np.asarray(y)
        check_classification_targets(yy.ravel() if yy.ndim == 2 and yy.shape[1] == 1 else yy)
    if multilabel:
        if sp.issparse(y) or isinstance(y, np.ndarray):
            Yi = sp.csr_matrix(y) if sp.issparse(y) else sp.csr_matrix(np.asarray(y) != 0)
            if hierarchy is None:
                classes = np.arange(Yi.shape[1])
            else:
                classes = _class_array(hierarchy.leaves)
                if Yi.shape[1] != len(classes):
                    raise LabelError(f"an indicator y needs one column per leaf of the hierarchy "
                                     f"({len(classes)}), got {Yi.shape[1]}")
            labels = [frozenset(classes[Yi.indices[Yi.indptr[i]:Yi.indptr[i + 1]]].tolist())
                      for i in range(Yi.shape[0])]
        else:
            labels = [frozenset(item) for item in y]
            if hierarchy is None:
                classes = _class_array(sorted({v for s in labels for v in s}, key=_sort_key))
            else:
                classes = _class_array(hierarchy.leaves)
    else:
        from sklearn.utils.validation import column_or_1d

        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)  # DataConversionWarning, as scikit-learn does
        if y.ndim != 1:
            raise LabelError(f"y must be 1-D (one label per sample) or a list of label sets, got shape {y.shape}")
        labels = list(y.tolist())
        if hierarchy is None:
            classes = np.unique(y)
        else:
            classes = _class_array(hierarchy.leaves)
    if hierarchy is None:
        if len(classes) < 2:
            raise LabelError(f"need at least two classes, got {len(classes)} ({list(classes)!r})")
        hierarchy = flat_hierarchy(list(classes.tolist()))
    elif not isinstance(hierarchy, Hierarchy):
        raise LabelError(f"hierarchy must be a hiercvx.Hierarchy, got {type(hierarchy).__name__}")
    return hierarchy, classes, labels, multilabel


def _class_array(values) -> np.ndarray:
    """Class names as an array of their common type (int, str, ...); object dtype only when
    the names mix types, so that nothing is silently converted to strings."""
    values = list(values)
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.dtype.kind not in "iufbU" or any(
            type(a) is not type(values[0]) for a in values):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
    return arr


def _sort_key(v: Hashable):
    return (type(v).__name__, v)


def fit_label_set_threshold(scores: np.ndarray, Y: np.ndarray) -> float:
    """The multi-label decision rule: predict every class whose score is within ``t`` of the
    top score (the top class is always predicted).  ``t >= 0`` is chosen on the training
    data to maximize the mean example-based F1 (a simple stand-in for the size prediction
    of Cai thesis section 4.2); ties go to the smaller ``t``."""
    gaps = scores.max(axis=1, keepdims=True) - scores  # >= 0, 0 at the top class
    candidates = np.unique(np.concatenate([[0.0], np.quantile(gaps[~Y], np.linspace(0, 0.5, 21))
                                           if (~Y).any() else []]))
    best_t, best_f1 = 0.0, -1.0
    for t in candidates:
        pred = gaps <= t
        tp = (pred & Y).sum(axis=1)
        f1 = np.mean(2 * tp / (pred.sum(axis=1) + Y.sum(axis=1)))
        if f1 > best_f1 + 1e-12:
            best_t, best_f1 = float(t), f1
    return best_t


def predict_from_scores(scores: np.ndarray, classes: np.ndarray, multilabel: bool,
                        threshold: float = 0.0):
    """Top class per sample, or the label sets of :func:`fit_label_set_threshold`'s rule."""
    if not multilabel:
        return classes[np.argmax(scores, axis=1)]
    gaps = scores.max(axis=1, keepdims=True) - scores
    pred = gaps <= threshold
    return [frozenset(classes[row].tolist()) for row in pred]


class LabelSetScoreMixin:
    """``score``: accuracy for single-label fits, mean example-based F1 of the predicted
    label sets for multi-label fits (put before ``ClassifierMixin`` in the bases)."""

    def score(self, X, y, sample_weight=None):
        """Accuracy (single-label) or mean example-based F1 of the predicted label sets."""
        if not getattr(self, "multilabel_", False):
            return super().score(X, y, sample_weight=sample_weight)
        pred = self.predict(X)
        f1 = [2 * len(p & set(t)) / (len(p) + len(set(t))) for p, t in zip(pred, y)]
        return float(np.average(f1, weights=sample_weight))
