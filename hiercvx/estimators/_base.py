"""Pieces every hiercvx estimator shares: target handling and the multi-label decision rule."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import scipy.sparse as sp

from ..exceptions import LabelError
from ..hierarchy import Hierarchy

SOLVERS = ("fast", "reference")


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
