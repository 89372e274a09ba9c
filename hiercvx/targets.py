"""Targets of classification, turned into what the formulations take: the hierarchy, the
classes, one label or one label set per sample, and whether the task is multi-label.

Core (it imports only the hierarchy and scikit-learn's target checks), so that both the
estimators and :mod:`hiercvx.taxonomy` use it without importing each other.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from .exceptions import InputError, LabelError
from .hierarchy import Hierarchy, is_label_set

__all__ = ["resolve_targets", "resolve_training_targets", "is_multilabel_target", "flat_hierarchy",
           "class_array", "label_array", "sort_key", "ravel_column_target", "IndicatorForm",
           "indicator_form", "is_indicator"]


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


def is_multilabel_target(y, hierarchy: Hierarchy | None = None) -> bool:
    """True for label sets (a list, tuple or 1-D object array of them) or a 2-D indicator;
    False for one label per sample.  A tuple is a label set unless it is a node of
    ``hierarchy``; without one, tuples in a 1-D object array are class names and tuples in a
    list are refused as ambiguous."""
    if sp.issparse(y):
        return True
    if isinstance(y, np.ndarray) and (y.ndim != 1 or y.dtype != object):
        return y.ndim == 2 and y.shape[1] > 1
    for item in y:
        if isinstance(item, (set, frozenset, list)) or (isinstance(item, np.ndarray) and item.ndim):
            return True
        if isinstance(item, tuple) and hierarchy is not None:
            return is_label_set(item, hierarchy._index)
        if isinstance(item, tuple) and not isinstance(y, np.ndarray):
            raise LabelError(f"y holds tuples ({item!r}), which could be label sets or class names: "
                             "give label sets as sets or lists, or tuple class names in a 1-D "
                             "object array (y = np.empty(n, dtype=object); y[:] = labels)")
        return False
    return False


def is_indicator(y) -> bool:
    """Whether ``y`` is a 0/1 indicator matrix: scipy.sparse, or a 2-D array of more than one
    column (a single column is one label per sample, raveled)."""
    return sp.issparse(y) or (isinstance(y, np.ndarray) and y.ndim == 2 and y.shape[1] > 1)


@dataclass(frozen=True, eq=False)
class IndicatorForm:
    """The form of a 0/1 indicator target, kept by ``fit`` so that ``predict`` answers in it
    (scikit-learn's convention for a multilabel-indicator ``y``, as ``OneVsRestClassifier``
    has it).

    Attributes
    ----------
    columns : ndarray
        The name of each column: the hierarchy's leaves (``over="leaves"``), its nodes in
        ``H.nodes`` order (``over="nodes"``), or the column numbers without a hierarchy
        (``over="columns"``).
    over : str
        ``"leaves"``, ``"nodes"`` or ``"columns"``.
    hierarchy : Hierarchy or None
        The hierarchy the columns name (None for ``"columns"``).
    sparse : bool
        ``y`` was a scipy.sparse matrix: predictions are CSR, else a dense array; int64 0/1
        either way, as scikit-learn's ``OneVsRestClassifier`` returns them.
    closed : bool
        ``over="nodes"`` and every row of ``y`` was closed upward (as ``H.closure`` gives it):
        predictions are closed upward too (root included); else they hold the most specific
        labels.
    """

    columns: np.ndarray
    over: str
    hierarchy: Hierarchy | None
    sparse: bool
    closed: bool = False

    def decode(self, Y) -> list:
        """The rows of an indicator ``Y`` in this form as frozensets of column names."""
        Yi = sp.csr_matrix(Y) if sp.issparse(Y) else sp.csr_matrix(np.asarray(Y) != 0)
        Yi.eliminate_zeros()
        if Yi.shape[1] != len(self.columns):
            raise LabelError(f"the indicator has {Yi.shape[1]} columns, but the estimator was "
                             f"fitted on {len(self.columns)} ({self.over}); give the columns y "
                             "had in fit")
        cols = self.columns
        return [frozenset(cols[Yi.indices[Yi.indptr[i]:Yi.indptr[i + 1]]].tolist())
                for i in range(Yi.shape[0])]

    def encode(self, pred):
        """Predictions (one name per sample, or one label set per sample) as an indicator in
        this form: int64 0/1, CSR if ``y`` was sparse, else dense."""
        sets = [p if isinstance(p, (set, frozenset)) else (p,)
                for p in (pred if isinstance(pred, list) else list(pred.tolist()))]
        if self.closed:
            M = sp.csr_matrix(self.hierarchy.closure(sets, sparse=True), dtype=np.int64)
        else:
            position = {c: j for j, c in enumerate(self.columns.tolist())}
            indptr = np.cumsum([0] + [len(s) for s in sets])
            indices = np.fromiter((position[v] for s in sets for v in s), dtype=np.int64,
                                  count=int(indptr[-1]))
            M = sp.csr_matrix((np.ones(len(indices), dtype=np.int64), indices, indptr),
                              shape=(len(sets), len(self.columns)))
            M.sort_indices()
        return M if self.sparse else M.toarray()


def indicator_form(y, hierarchy: Hierarchy | None, *, closed: bool = True):
    """The :class:`IndicatorForm` of ``y`` if it is a 0/1 indicator (:func:`is_indicator`),
    else None.  Its columns are read by their number: one per leaf of ``hierarchy``
    (``H.leaves`` order) or one per node (``H.nodes`` order, the form of ``H.closure``); a
    hierarchy always has more nodes than leaves, so the two never meet.  Without a hierarchy
    they are column numbers.  ``closed=False`` skips the test whether every row is closed
    upward (only :meth:`IndicatorForm.encode` needs it)."""
    if not is_indicator(y):
        return None
    n_columns = y.shape[1]
    if hierarchy is None:
        return IndicatorForm(np.arange(n_columns), "columns", None, sp.issparse(y))
    if not isinstance(hierarchy, Hierarchy):
        raise LabelError(f"hierarchy must be a hiercvx.Hierarchy, got {type(hierarchy).__name__}")
    if n_columns == len(hierarchy.leaves):
        return IndicatorForm(class_array(hierarchy.leaves), "leaves", hierarchy, sp.issparse(y))
    if n_columns == len(hierarchy.nodes):
        is_closed = closed and bool(np.all(hierarchy.is_closed(
            y if sp.issparse(y) else np.asarray(y) != 0)))
        return IndicatorForm(class_array(hierarchy.nodes), "nodes", hierarchy, sp.issparse(y),
                             is_closed)
    raise LabelError(f"an indicator y needs one column per leaf of the hierarchy "
                     f"({len(hierarchy.leaves)}, in H.leaves order) or one per node "
                     f"({len(hierarchy.nodes)}, in H.nodes order, as H.closure(labels) gives "
                     f"it), got {n_columns} columns")


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
    multilabel = is_multilabel_target(y, hierarchy)
    if not multilabel:
        y = label_array(y)
        _check_single_labels(y)
    if multilabel:
        form = indicator_form(y, hierarchy, closed=False)
        if form is not None:
            labels = form.decode(y)
            classes = (np.asarray(form.columns) if hierarchy is None
                       else class_array(hierarchy.leaves))
        else:
            labels = [frozenset(item) for item in y]
            if hierarchy is None:
                classes = class_array(sorted({v for s in labels for v in s}, key=sort_key))
            else:
                classes = class_array(hierarchy.leaves)
    else:
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)  # DataConversionWarning, as scikit-learn does
        if y.ndim != 1:
            raise LabelError(f"y must be 1-D (one label per sample) or a list of label sets, got shape {y.shape}")
        labels = list(y.tolist())
        if hierarchy is None:
            classes = class_array(sorted(set(labels), key=sort_key))
        else:
            classes = class_array(hierarchy.leaves)
    if hierarchy is None:
        if len(classes) < 2:
            raise LabelError(f"need at least two classes, got {len(classes)} ({list(classes)!r})")
        hierarchy = flat_hierarchy(list(classes.tolist()))
    elif not isinstance(hierarchy, Hierarchy):
        raise LabelError(f"hierarchy must be a hiercvx.Hierarchy, got {type(hierarchy).__name__}")
    return hierarchy, classes, labels, multilabel


def label_array(y) -> np.ndarray:
    """One label per sample as an array that keeps each label's type: a sequence of names of
    one type gives that type's array, a mix of types (``11`` beside ``"b1"``) an object array
    (``np.asarray`` would turn the integers into strings)."""
    if isinstance(y, np.ndarray):
        return y
    items = list(y)
    if items and not isinstance(items[0], (list, np.ndarray)):   # a column vector stays 2-D
        return class_array(items)
    return np.asarray(items)


def _check_single_labels(yy: np.ndarray) -> None:
    """scikit-learn's check of class labels (``yy`` from :func:`label_array`), per label type:
    names of several types (node names of any hashable type) are each checked with their own
    kind."""
    if yy.ndim == 2 and yy.shape[1] == 1:
        yy = yy.ravel()
    groups = [yy]
    if yy.dtype == object and yy.size:
        kinds = {}
        for v in yy.ravel().tolist():
            kinds.setdefault(type(v), []).append(v)
        groups = [class_array(values) for values in kinds.values()]
    for group in groups:
        if group.dtype == object and group.size and not isinstance(
                group[0], (str, bytes, int, float, np.generic)):
            _check_hashable(group)   # tuples and other hashable names: nothing for scikit-learn
            continue
        try:
            check_classification_targets(group)
        except ValueError as exc:  # scikit-learn's words, the package's error
            raise LabelError(f"y is not a set of class labels ({exc})") from None


def _check_hashable(labels) -> None:
    for v in labels.tolist():
        try:
            hash(v)
        except TypeError:
            raise LabelError(f"label {v!r} is not hashable, so it cannot name a node or class; "
                             "give node names (strings, numbers, tuples)") from None


def class_array(values) -> np.ndarray:
    """Class names as an array of their common type (int, str, ...); object dtype only when
    the names mix types, so that nothing is silently converted to strings."""
    values = list(values)
    try:
        arr = np.asarray(values)
    except ValueError:  # names of unequal lengths, e.g. self leaves (v, suffix) beside integers
        arr = np.empty(0, dtype=object).reshape(0, 0)
    if arr.ndim != 1 or arr.dtype.kind not in "iufbU" or any(
            type(a) is not type(values[0]) for a in values):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
    return arr


def sort_key(v: Hashable):
    """Sort key of class names of mixed types: by type name, then by value."""
    return (type(v).__name__, v)
