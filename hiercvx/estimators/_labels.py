"""Labels as users and loaders have them, read once at the start of every estimator's ``fit``.

Two forms are taken as they come (``hiercvx.datasets.load_arff`` gives both):

* label sets that include ancestors (``{'2', '2/1', '2/1/3'}``) are reduced to their most
  specific members (:func:`hiercvx.hierarchy.most_specific`; the upward closure, which is
  what every formulation uses, is the same).  When every reduced set is one label, the fit
  is single-label: the problem of one class per sample, not of label sets (a 0/1 indicator
  matrix stays multi-label);
* labels that stop at an internal node are read as the Cai thesis does (section 3.1): a leaf
  for the node itself under that node (:func:`hiercvx.hierarchy.self_leaves`), for the
  internal nodes some label stops at.  ``internal_labels="refuse"`` refuses them instead.

Predictions are named back in the caller's terms: a self leaf is its internal node.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from .. import targets
from .._validation import check_hierarchy_argument, check_target
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy, PartialPaths, is_label_set, most_specific, self_leaves

__all__ = ["INTERNAL_LABELS", "Targets", "accuracy", "read_training_labels", "check_internal_labels",
           "path_like_labels", "warn_if_path_labels", "in_target_form", "predicted_labels",
           "user_names", "user_label_sets", "read_test_labels", "single_labels"]

#: the values of the estimators' ``internal_labels`` parameter
INTERNAL_LABELS = ("self_leaf", "refuse")

#: estimators that take label sets, named in the errors of the single-label ones
MULTILABEL_ESTIMATORS = ("HierarchicalSVC", "NormalizedHierarchicalSVC", "HierarchicalPerceptron",
                         "TopDownSVC", "NodeKernelRidge")


@dataclass(frozen=True)
class Targets:
    """The training labels as the model takes them.

    ``hierarchy``: the hierarchy the model is trained on (the caller's, with self leaves when
    some label stops at an internal node); ``classes``: its classes in the model's names;
    ``labels``: one label or one label set per sample on ``hierarchy``; ``multilabel``: some
    sample has more than one most specific label; ``paths``: the self-leaf map, or ``None``;
    ``form``: the :class:`~hiercvx.targets.IndicatorForm` of an indicator ``y`` (``predict``
    answers in it), else ``None``.
    """

    hierarchy: Hierarchy
    classes: np.ndarray
    labels: list
    multilabel: bool
    paths: PartialPaths | None = None
    form: targets.IndicatorForm | None = None

    @property
    def user_classes(self) -> np.ndarray:
        """``classes`` in the caller's names (a self leaf named by its internal node)."""
        return user_names(self.classes, self.paths)


def check_internal_labels(value, who: str) -> str:
    """``internal_labels`` must be one of :data:`INTERNAL_LABELS`."""
    if not (isinstance(value, str) and value in INTERNAL_LABELS):
        raise InputError(f"{who}: internal_labels must be one of {INTERNAL_LABELS}, got {value!r}")
    return value


def user_names(names, paths: PartialPaths | None) -> np.ndarray:
    """Model names -> the caller's: a self leaf becomes its internal node."""
    names = np.asarray(names) if not isinstance(names, np.ndarray) else names
    if paths is None or not paths.owner:
        return names
    return targets.class_array([paths.owner.get(v, v) for v in names.tolist()])


def user_label_sets(pred: list, paths: PartialPaths | None) -> list:
    """Predicted label sets, already in the caller's names, reduced to their most specific
    members: with a self leaf, ``{'a', 'a/b'}`` (the node ``a`` itself and its child) reads as
    ``{'a/b'}``, whose closure is the same."""
    return pred if paths is None or not paths.owner else most_specific(paths.original, pred)


def single_labels(labels):
    """Label sets of one member each -> that member; else ``None``."""
    if not labels or not all(is_label_set(s, {}) and len(s) == 1 for s in labels):
        return None
    return [next(iter(s)) for s in labels]


def in_target_form(estimator, pred):
    """``predict``'s answer in the form of the training ``y``: the names or label sets
    ``pred`` as they are, or, for a fit on a 0/1 indicator, an indicator with the same
    columns (:meth:`hiercvx.targets.IndicatorForm.encode`)."""
    form = getattr(estimator, "_target_form", None)
    return pred if form is None else form.encode(pred)


def predicted_labels(estimator, X):
    """``estimator.predict(X)`` as names (single-label fit) or label sets of the most specific
    labels, whatever form ``predict`` answers in (an indicator after a fit on one)."""
    pred = estimator.predict(X)
    form = getattr(estimator, "_target_form", None)
    if form is None:
        return pred
    sets = form.decode(pred)
    if form.hierarchy is not None:
        sets = most_specific(form.hierarchy, sets)
    if not getattr(estimator, "multilabel_", False):   # the single-path estimators have none
        return targets.class_array([next(iter(s)) for s in sets])
    return sets


def _refuse_internal(H: Hierarchy, labels, who: str) -> None:
    for i, item in enumerate(labels):
        for v in (item if is_label_set(item, H._index) else (item,)):
            if v in H and not H.is_leaf(v):
                raise LabelError(
                    f"{who}: sample {i} has the label {v!r}, an internal node, and "
                    "internal_labels='refuse'. Pass internal_labels='self_leaf' (the default) to "
                    "learn it as a leaf for the node itself (Cai thesis section 3.1; "
                    "hiercvx.hierarchy.self_leaves(H, y) shows the classes this makes), or drop "
                    "such samples")


def path_like_labels(labels, sep: str = "/") -> tuple | None:
    """Two labels that spell one hierarchy, ``(parent, child)`` or ``(child, sibling)``, when the
    string labels read as paths: a label whose prefix before its last ``sep`` is a label too
    (``"2"`` and ``"2/1"``), or two labels under one such prefix (``"A/A1"`` and ``"A/A2"``);
    ``None`` when they do not (a lone ``"TCP/IP"`` is a name)."""
    names = {v for item in labels for v in (item if is_label_set(item, {}) else (item,))
             if isinstance(v, str)}
    under = {}
    for v in sorted(names):
        head, found, _ = v.rpartition(sep)
        if not found or not head:
            continue
        if head in names:
            return head, v
        if head in under:
            return under[head], v
        under[head] = v
    return None


def warn_if_path_labels(labels, who: str) -> None:
    """A ``UserWarning`` when an estimator of a hierarchy got none and its labels spell one
    (:func:`path_like_labels`): the fit is flat over the labels seen, which is rarely meant."""
    pair = path_like_labels(labels)
    if pair is not None:
        warnings.warn(
            f"{who} got no hierarchy, so it fits a flat model over the labels seen, but they read "
            f"as paths ({pair[0]!r} and {pair[1]!r}); to fit the hierarchy they spell, pass "
            "hierarchy=hiercvx.Hierarchy.from_paths(<every label>) (or the hierarchy of the loaded "
            "data set, Dataset.hierarchy)", UserWarning, stacklevel=_first_outside_package())


def _first_outside_package() -> int:
    """The ``stacklevel`` of the innermost caller outside hiercvx (the user's ``fit`` call,
    however many of the package's frames lie between)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def read_training_labels(y, hierarchy, n_samples: int, *, who: str,
                         internal_labels: str = "self_leaf", single_label: bool = False,
                         keep_internal: bool = False, flat_by_design: bool = False) -> Targets:
    """The training targets of an estimator's ``fit``, as the module docstring reads them.

    ``hierarchy``: the estimator's parameter (``None``: flat over the labels seen, read as
    they are); ``single_label``: the method takes one path per sample (a sample with several
    most specific labels is refused, naming the estimators that take label sets and
    :func:`hiercvx.hierarchy.single_path`); ``keep_internal``: the method takes internal
    labels itself (no self leaves; ``"refuse"`` still refuses them); ``flat_by_design``: the
    estimator has no hierarchy parameter, so path-like labels without one draw no warning
    (:func:`warn_if_path_labels`).
    """
    check_hierarchy_argument(hierarchy)
    check_target(y)
    check_internal_labels(internal_labels, who)
    H, classes, labels, multilabel = targets.resolve_training_targets(y, hierarchy, n_samples)
    form = targets.indicator_form(y, hierarchy)
    empty = next((i for i, s in enumerate(labels) if is_label_set(s, H._index) and not len(s)),
                 None)
    if empty is not None:
        raise LabelError(f"{who}: sample {empty} has an empty label set; every sample needs a "
                         "label (drop the samples without one)")
    if hierarchy is None:
        if not flat_by_design:
            warn_if_path_labels(labels, who)
        return Targets(H, classes, labels, multilabel, form=form)
    if multilabel:
        labels = most_specific(H, labels)
        # an indicator stays multi-label (scikit-learn's multi-label form), even when each row
        # holds one label, except for a method that takes one path per sample
        single = None if form is not None and not single_label else single_labels(labels)
        if single is not None:
            labels, multilabel = single, False
    if multilabel and single_label:
        i, s = next((i, s) for i, s in enumerate(labels) if len(s) != 1)
        raise LabelError(
            f"{who} is single-label: it takes one path per sample (one label per sample, with or "
            f"without its ancestors), but sample {i} has {len(s)} most specific labels "
            f"({sorted(map(str, s))[:4]}). Fit an estimator that takes label sets "
            f"({', '.join(MULTILABEL_ESTIMATORS)}), or keep the samples with one path: "
            "hiercvx.hierarchy.single_path(H, y) is True on them")
    if internal_labels == "refuse":
        _refuse_internal(H, labels, who)
    if keep_internal:
        return Targets(H, classes, labels, multilabel, form=form)
    paths = self_leaves(H, labels)
    if not paths.self_leaf:
        return Targets(H, classes, labels, multilabel, form=form)
    labels = paths.transform(labels)
    H = paths.hierarchy
    return Targets(H, targets.class_array(H.leaves), labels, multilabel, paths, form)


def read_test_labels(y, hierarchy, multilabel: bool):
    """True labels of ``score`` as names or label sets: a 0/1 indicator's rows as label
    sets (its columns as ``fit`` reads them: the leaves or the nodes of ``hierarchy``, else
    column numbers),
    label sets reduced to their most specific members (``hierarchy`` the caller's), one label
    per sample when the fit was single-label."""
    if targets.is_indicator(y):
        y = targets.resolve_targets(y, hierarchy)[2]
    elif not targets.is_multilabel_target(y, hierarchy):
        return targets.label_array(y) if not isinstance(y, np.ndarray) else y
    labels = [frozenset(s) for s in y] if hierarchy is None else most_specific(hierarchy, list(y))
    if not multilabel:
        single = single_labels(labels)
        if single is None:
            raise LabelError("the estimator was fitted on one path per sample, but y has samples "
                             "with several most specific labels (or none); score them with "
                             "hiercvx.metrics (e.g. hierarchical_f1)")
        return targets.class_array(single)
    return labels


def accuracy(y_true, y_pred, sample_weight=None) -> float:
    """The (weighted) share of samples whose predicted label is the true one, labels compared as
    Python objects (a mix of types, ``11`` beside ``"b1"``, included)."""
    y_true, y_pred = list(np.asarray(y_true, dtype=object)), list(np.asarray(y_pred, dtype=object))
    if len(y_true) != len(y_pred):
        raise InputError(f"y has {len(y_true)} entries but X has {len(y_pred)} rows")
    right = np.fromiter((t == p for t, p in zip(y_true, y_pred)), dtype=bool, count=len(y_true))
    return float(np.average(right, weights=sample_weight))
