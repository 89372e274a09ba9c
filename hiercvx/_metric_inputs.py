"""The input checks of :mod:`hiercvx.metrics`, run once where a metric is called: the hierarchy,
sample weights, labels on both sides (closed, reduced to their most specific members, or as
given), class and node score matrices, node masks, numeric options, loss matrices and the
keyword arguments of the scorers."""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp

from . import losses as _losses
from ._validation import check_not_complex, check_target
from .exceptions import InputError, InputTypeError, LabelError
from .hierarchy import Hierarchy

__all__ = ["need_hierarchy", "sample_weights", "weighted_mean", "as_samples", "closed_pair",
           "ratio", "flat_counts", "score_inputs", "class_nodes", "closed", "node_mask",
           "finite_number", "float_values", "class_loss", "check_scorer_kwargs"]


# ---------------------------------------------------------------------- hierarchy, weights
def need_hierarchy(hierarchy, metric: str) -> Hierarchy:
    """``hierarchy`` when it is a :class:`Hierarchy`; refused (naming ``metric``) otherwise."""
    if hierarchy is None:
        raise InputError(f"{metric} needs the class hierarchy: call it with hierarchy=H")
    if not isinstance(hierarchy, Hierarchy):
        raise InputError(f"hierarchy must be a hiercvx.Hierarchy, got {type(hierarchy).__name__}")
    return hierarchy


def sample_weights(sample_weight, n: int) -> np.ndarray | None:
    """Finite non-negative weights, one per sample, not all zero (``None`` stays ``None``)."""
    if sample_weight is None:
        return None
    check_not_complex(sample_weight, "sample_weight", what="weights")
    raw = sample_weight if isinstance(sample_weight, np.ndarray) else np.asarray(sample_weight, dtype=object)
    if raw.dtype.kind in "US" or (raw.dtype == object and any(
            isinstance(v, (str, bytes)) for v in raw.ravel())):
        # numpy would read "2" as 2.0: a column of the wrong type, not weights
        raise InputError(f"sample_weight must be numbers (one per sample, {n}), not strings; "
                         "convert them first, e.g. np.asarray(w, dtype=float)")
    try:
        w = np.asarray(sample_weight, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"sample_weight must be numeric, one entry per sample ({n})") from None
    if w.shape != (n,):
        raise InputError(f"sample_weight must have one entry per sample ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise InputError("sample_weight must be finite and non-negative")
    if w.sum() <= 0:
        raise InputError("sample_weight sums to zero; give at least one sample a positive weight")
    return w


def weighted_mean(values: np.ndarray, sample_weight) -> float:
    """The mean of ``values`` over samples, weighted by ``sample_weight`` when given."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise LabelError("no samples: the metric needs at least one sample")
    w = sample_weights(sample_weight, len(values))
    return float(np.average(values, weights=w))


def ratio(num: float, den: float) -> float:
    """``num / den``, 0 (never NaN) when ``den`` is 0."""
    return float(num / den) if den > 0 else 0.0


# ---------------------------------------------------------------------- labels
def as_samples(H, y, what: str = "y_true"):
    """A single label / label set becomes a one-sample list (metrics always average)."""
    if y is None:
        raise LabelError(f"{what} is None: this metric needs one label (a node name or a label "
                         "set) per sample")
    if isinstance(y, np.ndarray) and y.ndim == 0:   # a 0-d array holds one label
        y = y.item()
    return [y] if H is not None and _losses.is_single_label(H, y) else y


def closed_pair(H: Hierarchy, y_true, y_pred):
    """Both sides closed upward (``anc(Y)``, bool CSR), with one row per sample each."""
    A = _losses.closed_labels(H, as_samples(H, y_true, "y_true"), "y_true")
    B = _losses.closed_labels(H, as_samples(H, y_pred, "y_pred"), "y_pred")
    if A.shape[0] != B.shape[0]:
        raise LabelError(f"y_true has {A.shape[0]} samples but y_pred has {B.shape[0]}; give one "
                         "prediction per true label")
    if A.shape[0] == 0:
        raise LabelError("no samples: y_true and y_pred are empty")
    return A, B


def closed(y, H: Hierarchy, what: str = "y_true") -> np.ndarray:
    """Label sets, node names or a 0/1 indicator over ``H.nodes`` (dense or sparse), closed
    upward, as a bool ``(n_samples, n_nodes)`` array (:meth:`Hierarchy.closure`)."""
    if y is None:
        raise LabelError(f"{what} is None: pass one label (a node name or a label set) per "
                         "sample, or a 0/1 indicator over H.nodes")
    try:
        return np.asarray(H.closure(y), dtype=bool)
    except LabelError as exc:
        raise LabelError(f"{what}: {exc}") from None


def _most_specific_rows(H: Hierarchy, T: sp.csr_matrix) -> sp.csr_matrix:
    """Each row of a node indicator without the nodes another node of the row lies below."""
    proper = sp.csr_matrix(H.ancestor_matrix, dtype=np.int32, copy=True)   # [u, v]: v at/above u
    proper.setdiag(0)
    proper.eliminate_zeros()
    implied = sp.csr_matrix(T, dtype=np.int32) @ proper
    return sp.csr_matrix(T, dtype=bool) - sp.csr_matrix(T, dtype=bool).multiply(implied > 0)


def _hierarchy_indicators(y_true, y_pred, H: Hierarchy):
    """Both sides over ``H.nodes``, each label set reduced to its most specific members."""
    out = []
    for y, what in ((y_true, "y_true"), (y_pred, "y_pred")):
        _losses.check_indicator_dtype(y, what)
        try:
            T = H.label_indicator(as_samples(H, y, what))
        except LabelError as exc:
            raise LabelError(f"{what}: {exc}") from None
        out.append(_most_specific_rows(H, T))
    return out


def _flat_indicators(y_true, y_pred):
    """Both sides over the labels either side names, with no hierarchy to name columns."""
    if sp.issparse(y_true) or sp.issparse(y_pred) or any(
            isinstance(y, np.ndarray) and y.ndim == 2 for y in (y_true, y_pred)):
        raise LabelError("indicator matrices need hierarchy=H to name their columns; pass "
                         "hierarchy=H or give labels as node names / label sets")
    for y, what in ((y_true, "y_true"), (y_pred, "y_pred")):
        check_target(y, what, allow_mixed=True, caller="this metric")   # None, NaN, unhashable
    index: dict = {}
    entries = []
    for items in (list(y_true), list(y_pred)):
        rows, cols = [], []
        for i, item in enumerate(items):
            members = item if isinstance(item, (set, frozenset, list, tuple, np.ndarray)) else (item,)
            for v in members:
                rows.append(i)
                # keyed with its text too: True and 1.0 are other labels than 1 (equal in Python)
                cols.append(index.setdefault((v, str(v)), len(index)))
        entries.append((rows, cols, len(items)))
    return [sp.csr_matrix((np.ones(len(r), dtype=bool), (np.asarray(r, dtype=np.int64),
                                                        np.asarray(c, dtype=np.int64))),
                          shape=(n, max(len(index), 1))) for r, c, n in entries]


def flat_counts(y_true, y_pred, hierarchy):
    """Unclosed float indicators of both sides over one label universe (``H.nodes`` if given,
    each label set reduced to its most specific members there)."""
    if hierarchy is not None:
        T, P = _hierarchy_indicators(y_true, y_pred, need_hierarchy(hierarchy, "F1"))
    else:
        T, P = _flat_indicators(y_true, y_pred)
    if T.shape[0] != P.shape[0]:
        raise LabelError(f"y_true has {T.shape[0]} samples but y_pred has {P.shape[0]}")
    if T.shape[0] == 0:
        raise LabelError("no samples: y_true and y_pred are empty")
    return (T != 0).astype(float).tocsr(), (P != 0).astype(float).tocsr()


# ---------------------------------------------------------------------- scores
def score_inputs(y_true, scores, classes, hierarchy, metric: str, need: bool = False):
    """``(classes, R, S)``: the class names, the bool relevance ``(n, n_classes)`` of ``y_true``
    (label sets reduced to their most specific members when ``hierarchy`` is given) and the
    checked class scores."""
    if need:
        need_hierarchy(hierarchy, metric)
    elif hierarchy is not None and not isinstance(hierarchy, Hierarchy):
        raise InputError(f"hierarchy must be a hiercvx.Hierarchy, got {type(hierarchy).__name__}")
    if classes is None:
        if hierarchy is None:
            raise InputError(f"{metric} needs classes= (the class of each score column), or "
                             "hierarchy=H to use H.leaves")
        classes = hierarchy.leaves
    classes = _losses.class_tuple(classes)
    if hierarchy is not None:
        hierarchy.indices(classes)  # every class must be a node
    R = _losses.relevance_matrix(y_true, classes, hierarchy=hierarchy)
    if R.shape[0] == 0:
        raise LabelError("no samples: y_true is empty")
    empty = np.flatnonzero(~R.any(axis=1))
    if len(empty):
        raise LabelError(f"{metric}: {len(empty)} sample(s) have no true label among the classes "
                         f"(first: {empty[:5].tolist()}); each sample needs at least one")
    S = _losses.check_scores(scores, R.shape[0], len(classes))
    return classes, R, S


def class_nodes(scores, classes, hierarchy, metric: str):
    """``(H, classes, S)``: the hierarchy, the class names and the checked class scores."""
    H = need_hierarchy(hierarchy, metric)
    classes = _losses.class_tuple(classes)
    S = _losses.check_scores(scores, None, len(classes))
    if not classes:
        raise InputError(f"{metric}: classes is empty; give the classes that the columns of "
                         "scores follow")
    return H, classes, S


def class_loss(hierarchy, classes, loss, loss_kwargs) -> np.ndarray:
    """The ``(k, k)`` loss matrix over ``classes``: from a loss name (with its keyword
    arguments) or given as a matrix."""
    if isinstance(loss, str):
        return _losses.loss_matrix(hierarchy, loss, classes, **loss_kwargs)
    if loss_kwargs:
        raise InputError(f"keyword arguments {sorted(loss_kwargs)} configure a loss given by name; "
                         "loss is a matrix here, so drop them (or pass the loss by name)")
    try:
        L = np.asarray(loss, dtype=float)
    except (TypeError, ValueError):
        L = np.empty(0)
    k = len(classes)
    if L.shape != (k, k) or not np.all(np.isfinite(L)) or np.any(L < 0):
        raise InputError(f"loss must be a loss name or a finite non-negative ({k}, {k}) matrix over "
                         f"classes, got shape {L.shape}")
    return L


# ---------------------------------------------------------------------- nodes, numbers
def node_mask(nodes, H: Hierarchy, what: str = "nodes") -> np.ndarray:
    """A bool mask over ``H.nodes`` from a bool mask or from node names.  Integer positions are
    refused: read as a mask they would select other nodes than meant."""
    if isinstance(nodes, (str, bytes)):
        raise InputTypeError(f"{what} must be a bool mask over H.nodes or a list of node names, "
                             f"got the string {nodes!r}; for one node pass [{nodes!r}]")
    items = nodes.tolist() if isinstance(nodes, np.ndarray) else nodes
    try:
        items = list(items)
    except TypeError:
        raise InputTypeError(f"{what} must be a bool mask over H.nodes or a list of node names, "
                             f"got {type(nodes).__name__}") from None
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != len(H.nodes):
            raise InputError(f"{what} as a bool mask needs one entry per node of H.nodes "
                             f"({len(H.nodes)}), got {len(items)}")
        return np.asarray(items, dtype=bool)
    unknown = [v for v in items if v not in H]
    if unknown:
        v = unknown[0]
        if isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"{what} holds {v!r}, which is no node name: pass a bool mask over "
                             "H.nodes or node names; for positions idx in H.nodes pass "
                             f"[H.nodes[i] for i in idx], for a 0/1 mask m pass np.asarray(m, "
                             "dtype=bool)")
        raise LabelError(f"{what}: {len(unknown)} name(s) are not nodes of the hierarchy, e.g. "
                         f"{v!r}; give a bool mask over H.nodes or node names")
    mask = np.zeros(len(H.nodes), dtype=bool)
    mask[H.indices(items)] = True
    return mask


def finite_number(value, name: str, positive: bool = False) -> float:
    """``value`` as a finite float (positive when ``positive``); anything else refused."""
    if isinstance(value, (str, bytes)):
        raise InputTypeError(f"{name} must be a number, got the string {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputTypeError(f"{name} must be a number, got {type(value).__name__} "
                             f"{value!r}") from None
    if not np.isfinite(v) or (positive and v <= 0):
        raise InputError(f"{name} must be a {'positive' if positive else 'finite'} number, got "
                         f"{value!r}")
    return v


def float_values(value, name: str) -> np.ndarray:
    """``value`` (a number or an array of numbers) as a float array."""
    check_not_complex(value, name, what="values")
    if isinstance(value, (str, bytes)):
        raise InputTypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputTypeError(f"{name} must be a number or an array of numbers, got "
                             f"{type(value).__name__} {value!r}") from None


# ---------------------------------------------------------------------- scorers
def check_scorer_kwargs(name: str, scorers: dict, kwargs: dict) -> None:
    """Refuse keyword arguments the scorer ``name`` (a key of ``scorers``) would pass twice,
    that change what its name says it computes, or that its metric (or its loss) does not take."""
    metric, _, kind, fixed = scorers[name]
    own = {"sample_weight": "the scorer's caller"} | (
        {"classes": "estimator.classes_"} if kind == "scores" else {})
    clash = [k for k in kwargs if k in own]
    if clash:
        raise InputError(f"scorer {name!r} passes {clash[0]}= itself (from {own[clash[0]]}); "
                         f"drop {clash[0]}=")
    for key, value in fixed.items():
        if key in kwargs and not (isinstance(kwargs[key], str)
                                  and _losses.canonical_loss(kwargs[key]) == value):
            other = [n for n, s in scorers.items() if s[3].get(key) == (
                _losses.canonical_loss(kwargs[key]) if isinstance(kwargs[key], str) else None)]
            fix = f"use the scorer {other[0]!r}" if other else f"drop {key}="
            raise InputError(f"scorer {name!r} computes {key}={value!r}, not {key}="
                             f"{kwargs[key]!r}; {fix}")
    params = inspect.signature(metric).parameters
    data = list(params)[:2]   # y_true and y_pred / scores: the scorer's own
    takes = [p for p in params if p not in data and p not in own
             and params[p].kind is not inspect.Parameter.VAR_KEYWORD]
    extra = {k: v for k, v in kwargs.items() if k not in takes}
    if not extra:
        return
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) or (
            set(extra) & set(data)):
        raise InputError(f"scorer {name!r} ({metric.__name__}) does not take "
                         f"{', '.join(f'{k}=' for k in extra)}; it takes "
                         f"{', '.join(f'{k}=' for k in takes)}")
    loss = {**fixed, **kwargs}.get("loss", params["loss"].default)
    if isinstance(loss, str):
        _losses.check_loss_keywords(loss, extra)
    else:
        raise InputError(f"keyword arguments {sorted(extra)} configure a loss given by name; loss "
                         "is a matrix here, so drop them")
