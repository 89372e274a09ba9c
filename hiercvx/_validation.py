"""Input checks shared by formulations, solvers and estimators (written once, reused)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from .exceptions import InputError, InputTypeError, LabelError
from .hierarchy import Hierarchy

__all__ = [
    "check_features",
    "check_hierarchy_argument",
    "check_label_sets",
    "check_not_complex",
    "check_positive",
    "check_target",
    "random_generator",
]


def check_not_complex(X, name: str = "X", what: str = "features") -> None:
    """Refuse complex input: a cast to float would silently keep only the real part.

    ``what`` names what ``X`` holds in the message (``"features"``, ``"scores"``, ...)."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        split = " (or split real and imaginary parts into columns)" if what == "features" else ""
        raise InputError(f"Complex data not supported: {name} is complex ({dtype}); hiercvx takes "
                         f"real {what}. Pass {name}.real or np.abs({name}){split} explicitly")


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
        raise InputError(f"{name} has non-finite entries (NaN or inf; the first at row {bad[0]}, "
                         f"column {bad[1]}); impute or drop them, e.g. with "
                         "sklearn.impute.SimpleImputer in a pipeline")
    return X


def check_positive(value, name: str = "C") -> float:
    """A finite positive scalar (C, lambda, ...); a value of the wrong type (a string, a list,
    a complex number, a dict) raises :class:`InputTypeError`."""
    if isinstance(value, (str, bytes)):  # float("1") would take it: a number is asked for
        raise InputTypeError(f"{name} must be a positive number, got the string {value!r}; "
                             f"pass it as a number, e.g. {name}=1.0")
    try:
        v = float(value)
    except TypeError:
        raise InputTypeError(f"{name} must be a positive number, got {type(value).__name__} "
                             f"{value!r}") from None
    except ValueError:
        raise InputError(f"{name} must be a positive number, got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise InputError(f"{name} must be positive and finite, got {value!r}")
    return v


def check_label_sets(Y, H, classes, n_samples: int, name: str = "Y"):
    """Label sets restricted to ``classes``: a bool ``(n_samples, n_classes)`` matrix.

    ``Y``: single labels or label sets of node names.  Every label must be one of
    ``classes``; every sample needs at least one label and at least one non-label.
    """
    check_target(Y, name, allow_mixed=True)
    check_hierarchy_argument(H, "H", allow_none=False)
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
        raise LabelError(_not_a_class(H, ind, int(coo.row[j]), int(coo.col[j]), classes))
    out = np.zeros((n_samples, len(classes)), dtype=bool)
    out[coo.row, mapped] = True
    counts = out.sum(axis=1)
    if np.any(counts == 0):
        raise LabelError(f"sample {int(np.flatnonzero(counts == 0)[0])} has no label; every sample needs one")
    if np.any(counts == len(classes)):
        raise LabelError(f"sample {int(np.flatnonzero(counts == len(classes))[0])} has every class as a "
                         "label, so it constrains nothing; remove it")
    return out


def _not_a_class(H, ind, row: int, col: int, classes) -> str:
    """Why label ``H.nodes[col]`` of sample ``row`` is no class, and the fix that builds the
    intended problem: an ancestor that comes with its descendants is dropped
    (``most_specific``); a label that stops at an internal node gets a leaf of its own
    (``self_leaves``, on the nodes labels stop at only)."""
    v = H.nodes[col]
    head = (f"sample {row} has label {v!r}, which is not one of the classes ({len(classes)} "
            f"classes, e.g. {classes[:3]})")
    below = set(H.descendants(v)) & {H.nodes[k] for k in ind.getrow(row).indices}
    if below:
        return (f"{head}: it is an ancestor of the sample's label {sorted(below, key=str)[0]!r}, "
                "which implies it. Reduce each label set to its most specific labels with "
                "Y = hiercvx.hierarchy.most_specific(H, Y) (the estimators do this themselves)")
    if v in H and not H.is_leaf(v):
        return (f"{head}: it is an internal node. Learn it as a leaf for the node itself "
                "(Cai thesis section 3.1): paths = hiercvx.hierarchy.self_leaves(H, Y) "
                "(Hierarchy.with_self_leaves on the nodes labels stop at), then paths.hierarchy "
                "with paths.transform(Y); reduce label sets with hiercvx.hierarchy.most_specific "
                "first (the estimators do both)")
    return head


def _is_label_set(item) -> bool:
    return isinstance(item, (set, frozenset, list, tuple)) or (
        isinstance(item, np.ndarray) and item.ndim > 0)


def _check_label(value, where: str) -> None:
    """One node name: hashable, not None, not NaN."""
    if value is None:
        raise LabelError(f"{where} is None: every sample needs a label (a node name)")
    if isinstance(value, (float, np.floating)) and np.isnan(value):
        raise LabelError(f"{where} is NaN: every sample needs a label (a node name); drop or "
                         "impute unlabelled samples first")
    try:
        hash(value)
    except TypeError:
        raise InputTypeError(f"{where} is a {type(value).__name__}, which cannot be a node name "
                             "(names are hashable: strings, numbers, tuples)") from None


def check_target(y, name: str = "y", allow_mixed: bool = False,
                 caller: str = "this estimator") -> None:
    """Refuse what no classification target can be, before any label logic runs (which would
    fail deep inside with a ``TypeError`` of ``sorted`` or scikit-learn's "Unknown label
    type"): ``None``, a string, a mapping or a set, a scalar, an array of more than 2
    dimensions, entries that are ``None``, NaN or unhashable, and a mix of single labels and
    label sets (unless ``allow_mixed``: the formulations read a lone label as its singleton
    set; the estimators decide single- or multi-label from ``y``, so they refuse the mix).  A
    1-D sequence of labels, a list of label sets and a 2-D 0/1 indicator (dense or sparse)
    pass.  Unknown names are the hierarchy's to refuse.  ``caller`` names who needs ``y`` in
    the message for ``None`` (``"this metric"`` for the metrics)."""
    if y is None:  # scikit-learn's wording, which its estimator checks look for
        raise LabelError(f"{caller} requires {name} to be passed, but the target {name} is "
                         "None; pass one label per sample (or a list of label sets)")
    if sp.issparse(y):
        return
    if hasattr(y, "__array__") and not isinstance(y, np.ndarray):  # array-likes (pandas, ...)
        y = np.asarray(y)
    if isinstance(y, (str, bytes)):
        raise InputTypeError(f"{name} must be a sequence with one label per sample, got a single "
                             "string; wrap it in a list")
    if isinstance(y, (Mapping, set, frozenset)) or not isinstance(y, Iterable):
        raise InputTypeError(f"{name} must be a sequence with one label per sample (or a list of "
                             f"label sets), got {type(y).__name__}")
    if isinstance(y, np.ndarray) and y.dtype != object:
        if y.ndim not in (1, 2):
            raise LabelError(f"{name} must be 1-D (one label per sample) or a 2-D indicator, got "
                             f"shape {y.shape}")
        if np.issubdtype(y.dtype, np.complexfloating):
            raise LabelError(f"{name} is complex ({y.dtype}); labels are node names or 0/1")
        if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
            raise LabelError(f"{name} has NaN or infinite entries; every sample needs a label")
        return
    if isinstance(y, np.ndarray):
        if y.ndim > 2 or y.ndim == 0:
            raise LabelError(f"{name} must be 1-D or a list of label sets, got shape {y.shape}")
        if y.ndim == 2 and y.shape[1] == 1:  # a column of labels (raveled with a warning later)
            y = y.ravel()
    items = list(y)
    sets = [_is_label_set(item) for item in items]
    if any(sets) and not all(sets) and not allow_mixed:
        i = sets.index(not sets[0])
        raise LabelError(f"{name} mixes single labels and label sets ({name}[0] is "
                         f"{type(items[0]).__name__}, {name}[{i}] is {type(items[i]).__name__}); "
                         "pass one label per sample or a label set per sample")
    for i, item in enumerate(items):
        if sets[i]:
            for value in item:
                _check_label(value, f"a label of {name}[{i}]")
        else:
            _check_label(item, f"{name}[{i}]")


def check_hierarchy_argument(hierarchy, name: str = "hierarchy", allow_none: bool = True) -> None:
    """A :class:`~hiercvx.hierarchy.Hierarchy` (or ``None`` when ``allow_none``: flat
    classification); anything else is refused naming the constructors."""
    if hierarchy is None and allow_none:
        return
    if not isinstance(hierarchy, Hierarchy):
        hint = (" (a dict of parents: Hierarchy.from_parents(it))" if isinstance(hierarchy, Mapping)
                else "")
        raise InputTypeError(f"{name} must be a hiercvx.Hierarchy{' or None' if allow_none else ''}, "
                             f"got {type(hierarchy).__name__}{hint}; build one with "
                             "Hierarchy.from_parents, Hierarchy.from_edges or Hierarchy.from_paths")


def random_generator(random_state) -> np.random.Generator:
    """``random_state`` as a numpy ``Generator``: None, a non-negative int, a ``Generator`` or a
    ``RandomState`` (seeding a new generator from it); anything else raises
    :class:`~hiercvx.exceptions.InputError`."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1))
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise InputError(f"random_state must be None, a non-negative int, a numpy Generator or "
                         f"a numpy RandomState, got {random_state!r}") from None
