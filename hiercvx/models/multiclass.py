"""The flat Crammer–Singer multi-class SVM on validated data (Crammer & Singer, JMLR 2001, as
in Chung-Chin Lu, *EE6550 Machine Learning, Lecture 7: Multi-Class Classification*, National
Tsing Hua University, 2017; LIBLINEAR's ``MCSVM_CS``, Fan et al., JMLR 9, 2008, appendix).

Crammer–Singer is the pairwise-ranking model of :mod:`hiercvx.models.margin` on a flat
label set: class attributes ``Lam = I``, loss ``1 - I``, slack rescaling (slack and margin
rescaling coincide under the 0/1 loss), one relevant class per example.  :func:`prepare`
validates the inputs once (labels, per-example costs ``C_i = C * sample_weight_i *
class_weight[y_i]``, LIBLINEAR's bias feature, the kernel) and returns a
:class:`MulticlassModel`, on which :mod:`hiercvx.formulations.multiclass` declares the
primal / dual and :mod:`hiercvx.solvers.crammer_singer` runs.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..bias import append_constant, bias_scaling
from ..exceptions import InputError, LabelError
from ..kernels import Kernel
from ..targets import class_array, label_array, sort_key
from .margin import MarginData, MarginModel, margin_data, resolve_inputs

__all__ = ["MulticlassModel", "prepare", "encode_labels", "example_weights", "flat_margin_data",
           "augment"]


def encode_labels(y, n_samples: int, classes=None) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y_index)``: the sorted distinct labels (like scikit-learn's ``classes_``),
    or the given ``classes`` in their order, and each sample's position in them.  Refuses a
    count mismatch, a label outside ``classes`` and a single class."""
    if y is None:
        raise LabelError("y is None: give one class label per sample")
    if (not isinstance(y, np.ndarray) or y.dtype == object) and np.ndim(y) == 1:
        sets = next((i for i, v in enumerate(y) if isinstance(v, (set, frozenset, list, np.ndarray))),
                    None)
        if sets is not None:
            raise LabelError(f"y holds label sets (sample {sets}: {y[sets]!r}); the multi-class SVM "
                             "takes one label per sample: label sets belong to hsvm.primal")
    # a NaN among string labels would become the string "nan" (a class of its own) in the
    # array: look at the labels as given
    raw_nan = not isinstance(y, np.ndarray) and np.ndim(y) == 1 and any(
        isinstance(v, (float, np.floating)) and v != v for v in y)
    y = label_array(y)   # a mix of int and str labels stays a mix
    if y.ndim != 1:
        raise InputError(f"y must be a 1-D array of class labels (one per sample), got shape {y.shape}; "
                         "multi-label targets belong to hsvm.primal")
    if y.shape[0] != n_samples:
        raise InputError(f"y has {y.shape[0]} labels but X has {n_samples} rows; give one label per sample")
    if raw_nan or (y.dtype.kind == "f" and np.isnan(y).any()) or (
            y.dtype.kind == "O" and any(isinstance(v, float) and v != v for v in y.tolist())):
        raise LabelError("y contains NaN labels; drop or impute them")
    if y.dtype.kind == "O" and any(v is None for v in y.tolist()):
        raise LabelError("y contains None labels (samples without a class); drop those samples or "
                         "give each a class")
    if classes is not None:
        classes = np.asarray(classes)
        position = {c: k for k, c in enumerate(classes.tolist())}
        unknown = [v for v in y.tolist() if v not in position]
        if unknown:
            raise LabelError(f"label {unknown[0]!r} is not among the classes {classes.tolist()}")
        y_index = np.fromiter((position[v] for v in y.tolist()), dtype=np.int64, count=len(y))
    else:
        try:
            classes, y_index = np.unique(y, return_inverse=True)
        except TypeError:   # labels of several types: sorted by type name, then value
            classes = class_array(sorted(set(y.tolist()), key=sort_key))
            position = {c: k for k, c in enumerate(classes.tolist())}
            y_index = np.fromiter((position[v] for v in y.tolist()), dtype=np.int64, count=len(y))
    if len(classes) < 2:
        raise LabelError(f"y has a single class ({classes[0]!r}); a multi-class SVM needs at least two")
    return classes, np.asarray(y_index, dtype=np.int64).ravel()


def _class_multipliers(y_index, classes, sw, class_weight) -> np.ndarray:
    """``class_weight`` as one multiplier per class."""
    q = len(classes)
    if class_weight is None:
        return np.ones(q)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InputError(f"class_weight must be None, a dict or 'balanced', got {class_weight!r}")
        counts = np.bincount(y_index, weights=sw, minlength=q)
        if np.any(counts <= 0):
            k = int(np.flatnonzero(counts <= 0)[0])
            raise InputError(f"class {classes[k]!r} has zero total sample weight, so 'balanced' "
                             "class weights are undefined")
        return counts.sum() / (q * counts)
    if isinstance(class_weight, dict):
        position = {c: k for k, c in enumerate(classes.tolist())}
        cw = np.ones(q)
        for c, w in class_weight.items():
            if c not in position:
                raise LabelError(f"class_weight names class {c!r}, which is not among the classes "
                                 f"{classes.tolist()}; remove it or fix the label")
            w = float(w)
            if not (np.isfinite(w) and w > 0):
                raise InputError(f"class_weight[{c!r}] must be positive and finite, got {w!r}")
            cw[position[c]] = w
        return cw
    raise InputError("class_weight must be None, a dict or 'balanced', got "
                     f"{type(class_weight).__name__}")


def example_weights(y_index: np.ndarray, classes: np.ndarray, sample_weight=None,
                    class_weight=None) -> np.ndarray:
    """Per-example multipliers ``c_i`` of C: ``C_i = C * sample_weight_i * class_weight[y_i]``.

    This is LIBLINEAR's ``C[i] = W[i] * weighted_C[y_i]``.  ``class_weight``: ``None``, a
    dict ``{class: weight}`` (classes not named get 1) or ``"balanced"``, which is
    scikit-learn's ``sum(sample_weight) / (n_classes * weighted count of the class)``.
    """
    n = len(y_index)
    if sample_weight is None:
        sw = np.ones(n)
    else:
        sw = np.asarray(sample_weight, dtype=float)
        if sw.shape != (n,):
            raise InputError(f"sample_weight must have one entry per sample ({n}), got shape {sw.shape}")
        if not np.all(np.isfinite(sw)) or np.any(sw < 0):
            k = int(np.flatnonzero(~(np.isfinite(sw) & (sw >= 0)))[0])
            raise InputError(f"sample_weight must be finite and non-negative; entry {k} is {sw[k]!r}")
    return sw * _class_multipliers(y_index, np.asarray(classes), sw, class_weight)[y_index]


def flat_margin_data(y_index: np.ndarray, n_classes: int, example_weights=None) -> MarginData:
    """Crammer–Singer as the shared margin model: ``Lam = I``, loss ``1 - I``, slack rescaling."""
    y_index = np.asarray(y_index)
    Y = np.zeros((len(y_index), n_classes), dtype=bool)
    Y[np.arange(len(y_index)), y_index] = True
    return margin_data(Y, 1.0 - np.eye(n_classes), Lam=np.eye(n_classes), rescaling="slack",
                       sample_weight=example_weights)


#: LIBLINEAR's bias: a constant feature of value ``intercept_scaling`` appended to X
augment = append_constant


class MulticlassModel(MarginModel):
    """Crammer–Singer on validated data.

    ``X`` holds the features the margin model sees: with ``fit_intercept`` the augmented
    ``[X, intercept_scaling]`` (LIBLINEAR's bias feature,
    :class:`~hiercvx.models.margin.MarginModel`), else the features themselves, or the Gram matrix
    with ``kernel="precomputed"``; ``X_features`` the features as given; ``classes`` the sorted
    labels, ``y_index`` each sample's class position, ``Cw`` the multipliers of C.  The primal
    variable is ``W`` ``(q, d)`` (with ``intercept`` ``(q,)``), the dual one ``alpha`` over the
    pairs ``(i, y_i, m)``, ``m != y_i``.  ``objective(W, C, intercept=b)``,
    ``scores(W, X, intercept=b)``, ``augmented_weights`` and ``split_weights`` are the margin
    model's (``Lam = I``: a class's bias is its own row's).
    """

    method = "multiclass"
    equations = {"primal": "notes, 'Multi-Class Kernel-Based SVMs' (LIBLINEAR MCSVM_CS)",
                 "dual": "notes, 'Lagrangian Dual Problem for Multi-Class SVM'"}

    def __init__(self, X, data: MarginData, kernel: Kernel, *, classes, y_index,
                 intercept_scaling: float | None = None):
        super().__init__(X, data, kernel, classes=classes, intercept_scaling=intercept_scaling)
        self.y_index = y_index

    @property
    def Cw(self) -> np.ndarray:
        return self.data.Cw


def prepare(X, y, H=None, *, classes=None, sample_weight=None, class_weight=None,
            fit_intercept: bool = False, intercept_scaling: float = 1.0, kernel="linear",
            sigma=None, check_input: bool = True) -> MulticlassModel:
    """Validate the Crammer–Singer inputs once and return the :class:`MulticlassModel`.

    ``y``: one label per row of ``X`` (``classes`` default to the sorted distinct labels);
    ``H`` must be ``None`` (the method is flat; it is the registry's common signature).
    ``sample_weight``, ``class_weight``: ``C_i = C * sample_weight_i * class_weight[y_i]``
    (:func:`example_weights`); ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's bias
    feature (linear kernel only; the notes' dual has no intercept); ``kernel``:
    ``"linear"``, ``"rbf"`` (``sigma`` or the median heuristic), ``"precomputed"`` (``X``
    the PSD ``(n, n)`` Gram matrix) or a callable ``k(A, B)``.  ``check_input=False`` skips
    the check of ``X`` (for a caller that validated it already).
    """
    if H is not None:
        raise InputError("the Crammer-Singer SVM is flat: pass H=None (for a hierarchy use the "
                         "hierarchical SVM, hiercvx.models.hsvm.prepare)")
    X, kern = resolve_inputs(X, kernel, sigma, check_input)
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    if scaling is not None and not kern.is_linear:
        raise InputError("fit_intercept needs the linear kernel (the dual of the notes has no "
                         "intercept); add a constant to the kernel instead")
    classes, y_index = encode_labels(y, X.shape[0], classes)
    Cw = example_weights(y_index, classes, sample_weight, class_weight)
    data = flat_margin_data(y_index, len(classes), Cw)
    if sp.issparse(X):
        X.sort_indices()
    return MulticlassModel(X, data, kern, classes=classes, y_index=y_index,
                           intercept_scaling=scaling)
