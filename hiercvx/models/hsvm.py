"""The Cai–Hofmann hierarchical SVM on validated data (Cai thesis, chapters 3 and 4).

:func:`prepare` is the one place where the inputs of the hierarchical SVM are validated:
classes (leaves of ``H``), label sets, loss ``Delta`` ``(q, q)``, class attributes ``Lam``
``(q, M)`` (thesis (3.7)) or a class kernel ``Q`` (thesis (4.17)), rescaling, per-example
weights of C and the input kernel.  It returns an :class:`HSVMModel` (a
:class:`~hiercvx.models.margin.MarginModel`): the CVXPY declarations of
:mod:`hiercvx.formulations.hsvm` (primal (4.10), dual (4.15), class form (4.48)) and the
working-set solver (:mod:`hiercvx.solvers.working_set`, thesis Algorithm 2) run on it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_label_sets
from ..bias import bias_scaling
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy, class_attributes
from ..kernels import Kernel, check_psd
from ..losses import loss_matrix
from .margin import RESCALINGS, MarginData, MarginModel, margin_data, resolve_inputs

__all__ = ["HSVMModel", "prepare", "resolve_classes", "resolve_loss", "resolve_attributes",
           "resolve_class_kernel", "DEFAULT_LOSS", "DEFAULT_ATTRIBUTES"]

#: Thesis 7.2: Delta_h(y, y') = 1/2 |anc(y) xor anc(y')|.
DEFAULT_LOSS = "half_symmetric"
#: Thesis 7.2 (OHSUMED): t_v(y) = 1/sqrt(depth(y)), root 0 -- unit-norm rows for every tree
#: and DAG.  ("tree_depth", 1/sqrt(D), has unit rows only when every class sits at depth D.)
DEFAULT_ATTRIBUTES = "class_depth"


class HSVMModel(MarginModel):
    """Thesis (4.10) / (4.15) on validated data: ``H``, ``classes`` (leaves), ``Lam``
    ``(q, M)`` (``None`` with a class kernel), ``loss`` ``(q, q)`` and the pair model
    ``data`` (:class:`~hiercvx.models.margin.MarginData`).  Primal variable: node weights
    ``W`` ``(M, d)`` (rows in ``H.nodes`` order with the attribute schemes of
    :func:`hiercvx.class_attributes`), or ``G`` ``(n, q)`` with a non-linear kernel.

    With ``fit_intercept`` (not in the thesis: LIBLINEAR's regularized bias, see
    :class:`~hiercvx.models.margin.MarginModel`) every node ``v`` has a bias ``b_v``
    (``intercept`` ``(M,)``), a class score is ``sum_v Lam[y, v] (w_v . x + b_v)`` and the
    objective (4.10) gains ``1/2 ||b||^2 / s^2``: (4.10) on ``[X, s]``."""

    method = "hsvm"
    equations = {"primal": "(4.10)", "dual": "(4.15)", "class form": "(4.48)",
                 "recovery": "(4.12)", "violation score": "(4.32)"}

    def __init__(self, X, data: MarginData, kernel: Kernel, *, H: Hierarchy, classes: tuple,
                 loss: np.ndarray, intercept_scaling: float | None = None):
        super().__init__(X, data, kernel, classes=classes, intercept_scaling=intercept_scaling)
        self.H = H
        self.loss = loss

    @property
    def rescaling(self) -> str:
        return self.data.rescaling

    def __iter__(self):
        """``classes, Lam, data = model``: the triple ``formulations.hsvm.prepare`` returns."""
        return iter((self.classes, self.data.Lam, self.data))


def resolve_classes(H: Hierarchy, classes) -> tuple:
    """The classes (default ``H.leaves``): distinct leaves of ``H``, at least two."""
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if classes is None:
        classes = H.leaves
    else:
        classes = tuple(classes.tolist() if isinstance(classes, np.ndarray) else classes)
    if len(classes) < 2:
        raise LabelError(f"the hierarchical SVM needs at least two classes, got {len(classes)}")
    if len(set(classes)) != len(classes):
        raise LabelError("classes must be distinct")
    for c in classes:
        if c not in H:
            raise LabelError(f"class {c!r} is not a node of the hierarchy")
    internal = [c for c in classes if not H.is_leaf(c)]
    if internal:
        raise LabelError(
            f"classes must be leaves of the hierarchy (thesis section 3.1); {internal[:3]!r} "
            f"{'is an internal node' if len(internal) == 1 else 'are internal nodes'}. For labels "
            "that stop at an internal node use pp = H.with_self_leaves(...) and train on "
            "pp.hierarchy with labels pp.transform(Y)")
    return classes


def resolve_loss(H: Hierarchy, loss, classes: tuple) -> np.ndarray:
    """A ``(q, q)`` loss matrix from a name, an array, or a callable ``loss(y, ybar)``."""
    q = len(classes)
    if isinstance(loss, str):
        L = loss_matrix(H, loss=loss, classes=classes)
    elif callable(loss):
        L = np.array([[float(loss(a, b)) for b in classes] for a in classes])
    else:
        try:
            L = np.asarray(loss, dtype=float)
        except (TypeError, ValueError):
            raise InputError("loss must be a loss name (see hiercvx.losses.LOSSES), a (q, q) array "
                             "or a callable loss(y, ybar)") from None
    if L.shape != (q, q):
        raise InputError(f"the loss matrix must be ({q}, {q}) over the classes (in the order of "
                         f"`classes`, default H.leaves), got shape {L.shape}")
    if not np.all(np.isfinite(L)) or np.any(L < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return L


def resolve_attributes(H: Hierarchy, attributes, classes: tuple) -> np.ndarray:
    """Class attributes ``Lam`` ``(q, M)`` (thesis (3.7)): a scheme of
    :func:`hiercvx.class_attributes`, an array, or a callable ``t(H, node, cls)``."""
    q = len(classes)
    if isinstance(attributes, str) or callable(attributes):
        Lam = class_attributes(H, classes, scheme=attributes)
    else:
        try:
            Lam = np.asarray(attributes, dtype=float)
        except (TypeError, ValueError):
            raise InputError("attributes must be a scheme name, a (q, M) array or a callable "
                             "t(H, node, cls)") from None
        if Lam.ndim != 2 or Lam.shape[0] != q:
            raise InputError(f"the class-attribute array must have one row per class ({q}), got "
                             f"shape {Lam.shape}")
    if not np.all(np.isfinite(Lam)):
        raise InputError("the class attributes have non-finite entries")
    return Lam


def resolve_class_kernel(H: Hierarchy, classes, class_kernel) -> np.ndarray:
    """A PSD class kernel ``Q`` ``(q, q)`` replacing ``Lam Lam^T`` (thesis (4.17)), from an
    array or a callable ``(H, classes) -> array``."""
    q = len(classes)
    Q = class_kernel(H, classes) if callable(class_kernel) else class_kernel
    try:
        Q = np.asarray(Q, dtype=float)
    except (TypeError, ValueError):
        raise InputError("class_kernel must be a (q, q) array or a callable (H, classes) -> array") from None
    if Q.shape != (q, q):
        raise InputError(f"the class kernel must be ({q}, {q}) over the classes, got shape {Q.shape}")
    check_psd(Q, what="class kernel (replacing Lam Lam^T, thesis (4.17))")
    return 0.5 * (Q + Q.T)


def _example_weights(sample_weight, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    Cw = np.asarray(sample_weight, dtype=float)
    if Cw.shape != (n,) or not np.all(np.isfinite(Cw)) or np.any(Cw < 0):
        raise InputError(f"sample_weight must hold {n} finite non-negative numbers (one per row "
                         f"of X), got shape {Cw.shape}")
    return Cw


def prepare(X, Y, H, loss=DEFAULT_LOSS, attributes=DEFAULT_ATTRIBUTES, classes=None,
            rescaling="slack", sample_weight=None, kernel="linear", sigma=None, class_kernel=None,
            fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> HSVMModel:
    """Validate the hierarchical-SVM inputs once and return the :class:`HSVMModel`.

    ``classes`` default to ``H.leaves`` and must be leaves; every label of ``Y`` must be one
    of them; every example needs a relevant and an irrelevant class; ``X`` must be finite
    (the square Gram matrix with ``kernel="precomputed"``).  ``loss``: a name of
    :data:`hiercvx.losses.LOSSES`, a ``(q, q)`` array or a callable ``loss(y, ybar)``;
    ``attributes``: a scheme of :func:`hiercvx.class_attributes`, a ``(q, M)`` array or a
    callable ``t(H, node, cls)``; ``rescaling``: ``"slack"`` (thesis (4.10)) or
    ``"margin"``; ``kernel``: ``"linear"``, ``"rbf"`` (``sigma`` or the median heuristic),
    ``"precomputed"``, a callable ``k(A, B)`` or a resolved :class:`~hiercvx.kernels.Kernel`;
    ``class_kernel``: a PSD ``(q, q)`` array or callable replacing ``Lam Lam^T`` (then the
    model has no class attributes).  ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's
    regularized bias (the thesis has none): with the linear kernel a constant feature
    ``s = intercept_scaling`` appended to ``X`` (node weights ``(M, d + 1)`` inside the model,
    biases ``b = s * W~[:, -1]``), otherwise the kernel ``k + s^2`` (a precomputed Gram matrix
    ``K + s^2``).  ``check_input=False`` skips the check of ``X`` (for a caller that validated
    it already, e.g. an estimator).
    """
    if rescaling not in RESCALINGS:
        raise InputError(f"rescaling must be one of {RESCALINGS}, got {rescaling!r}")
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    X, kern = resolve_inputs(X, kernel, sigma, check_input)
    classes = resolve_classes(H, classes)
    Ybool = check_label_sets(Y, H, classes, X.shape[0])
    L = resolve_loss(H, loss, classes)
    Cw = _example_weights(sample_weight, X.shape[0])
    if class_kernel is None:
        data = margin_data(Ybool, L, Lam=resolve_attributes(H, attributes, classes),
                           rescaling=rescaling, sample_weight=Cw)
    else:
        data = margin_data(Ybool, L, Q=resolve_class_kernel(H, classes, class_kernel),
                           rescaling=rescaling, sample_weight=Cw)
    if sp.issparse(X):
        X.sort_indices()
    return HSVMModel(X, data, kern, H=H, classes=classes, loss=L, intercept_scaling=scaling)
