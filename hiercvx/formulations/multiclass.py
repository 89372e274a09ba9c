"""Multi-class SVM of Crammer and Singer: primal (exactly LIBLINEAR's) and the kernel dual.

Source: lecture notes on multi-class classification (seed ``002_e61d943170b036c5.txt``),
sections "Multi-Class Kernel-Based SVMs" (primal) and "Lagrangian Dual Problem for
Multi-Class SVM" (dual); the sheet ``formulations/multiclass.md`` has the equations.

Both problems are the pairwise-ranking model of :mod:`hiercvx.formulations._margin` on a
flat label set: class attributes ``Lam = I``, loss ``1 - I``, slack rescaling, one
relevant class per example.  Every recomputed objective and every lower bound goes through
that module.

* :func:`primal` -- the objective scikit-learn's ``LinearSVC(multi_class="crammer_singer")``
  minimizes (LIBLINEAR's ``MCSVM_CS`` solver, Fan et al. 2008, appendix), bias feature and
  per-example costs included::

      min_{W, b, xi}  1/2 ||W||_F^2 + 1/2 ||b||^2 / s^2 + C sum_i c_i xi_i
      s.t.  s_{i y_i} - s_{i m} >= e_{i m} - xi_i      for all i and all classes m,
            s_{i m} = w_m . x_i + b_m,  e_{i m} = 1 - [m = y_i],
            c_i = sample_weight_i * class_weight[y_i],  s = intercept_scaling.

  (The row ``m = y_i`` reads ``xi_i >= 0``.)

* :func:`dual` -- the notes' Lagrangian dual (a QP in ``lambda in R^{n x k}``)::

      max  sum_i lambda_{i c_i} - 1/2 sum_y G_{:y}^T K G_{:y},   G_{iy} = sgn_{iy} lambda_{iy}
      s.t. lambda >= 0,  lambda_{i c_i} <= C c_i,  lambda_{i c_i} = sum_{y != c_i} lambda_{iy},
      sgn_{iy} = +1 if y = c_i else -1,

  with the class functions ``f_y = sum_i G_{iy} k(x_i, .)``.  The notes print the recovery
  with the opposite sign, ``(-1)^{delta(c_i, y)}``, which scores ``-f_y``; see the sheet.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import check_features, check_positive
from ..exceptions import InputError, LabelError
from ..kernels import psd_factor, Kernel, check_psd, make_kernel
from ..reference import ReferenceProblem, check_size
from ..models import margin as _margin

logger = logging.getLogger(__name__)

__all__ = ["primal", "dual", "KernelClassFunctions", "recover_coefficients", "gram_factor",
           "encode_labels", "example_weights"]


# ----------------------------------------------------------------------------- inputs

def encode_labels(y, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, y_index)``: the sorted distinct labels (like scikit-learn's ``classes_``)
    and each sample's position in them.  Refuses a count mismatch and a single class."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(f"y must be a 1-D array of class labels (one per sample), got shape {y.shape}; "
                         "multi-label targets belong to hsvm.primal")
    if y.shape[0] != n_samples:
        raise InputError(f"y has {y.shape[0]} labels but X has {n_samples} rows; give one label per sample")
    try:
        classes, y_index = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise LabelError(f"the labels in y cannot be sorted ({exc}); use labels of one type "
                         "(all strings or all numbers)") from None
    if classes.dtype.kind == "f" and np.any(np.isnan(classes)):
        raise LabelError("y contains NaN labels; drop or impute them")
    if len(classes) < 2:
        raise LabelError(f"y has a single class ({classes[0]!r}); a multi-class SVM needs at least two")
    return classes, y_index.ravel()


def example_weights(y_index: np.ndarray, classes: np.ndarray, sample_weight=None,
                    class_weight=None) -> np.ndarray:
    """Per-example multipliers ``c_i`` of C: ``C_i = C * sample_weight_i * class_weight[y_i]``.

    This is LIBLINEAR's ``C[i] = W[i] * weighted_C[y_i]``.  ``class_weight``: ``None``, a
    dict ``{class: weight}`` (classes not named get 1) or ``"balanced"``, which is
    scikit-learn's ``sum(sample_weight) / (n_classes * weighted count of the class)``.
    """
    n, q = len(y_index), len(classes)
    if sample_weight is None:
        sw = np.ones(n)
    else:
        sw = np.asarray(sample_weight, dtype=float)
        if sw.shape != (n,):
            raise InputError(f"sample_weight must have one entry per sample ({n}), got shape {sw.shape}")
        if not np.all(np.isfinite(sw)) or np.any(sw < 0):
            k = int(np.flatnonzero(~(np.isfinite(sw) & (sw >= 0)))[0])
            raise InputError(f"sample_weight must be finite and non-negative; entry {k} is {sw[k]!r}")
    if class_weight is None:
        cw = np.ones(q)
    elif isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InputError(f"class_weight must be None, a dict or 'balanced', got {class_weight!r}")
        counts = np.bincount(y_index, weights=sw, minlength=q)
        if np.any(counts <= 0):
            k = int(np.flatnonzero(counts <= 0)[0])
            raise InputError(f"class {classes[k]!r} has zero total sample weight, so 'balanced' "
                             "class weights are undefined")
        cw = counts.sum() / (q * counts)
    elif isinstance(class_weight, dict):
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
    else:
        raise InputError("class_weight must be None, a dict or 'balanced', got "
                         f"{type(class_weight).__name__}")
    return sw * cw[y_index]


def _flat_margin_data(y_index: np.ndarray, q: int, Cw: np.ndarray) -> _margin.MarginData:
    """Crammer--Singer as the shared margin model: Lam = I, loss = 1 - I, slack rescaling."""
    Y = np.zeros((len(y_index), q), dtype=bool)
    Y[np.arange(len(y_index)), y_index] = True
    return _margin.margin_data(Y, 1.0 - np.eye(q), Lam=np.eye(q), rescaling="slack", sample_weight=Cw)


def _augment(X, scaling: float):
    """LIBLINEAR's bias: a constant feature of value ``intercept_scaling`` appended to X."""
    col = np.full((X.shape[0], 1), float(scaling))
    return sp.hstack([X, sp.csr_matrix(col)], format="csr") if sp.issparse(X) else np.hstack([X, col])


def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(X.shape[0] * X.shape[1])


# ----------------------------------------------------------------------------- primal

def primal(X, y, C: float = 1.0, fit_intercept: bool = False, intercept_scaling: float = 1.0,
           sample_weight=None, class_weight=None, max_size: int | None = None) -> ReferenceProblem:
    """Crammer--Singer primal, exactly the objective of LIBLINEAR's ``MCSVM_CS``.

    Lecture notes, "Multi-Class Kernel-Based SVMs" (linear kernel), with LIBLINEAR's
    additions: per-example costs ``C_i = C * sample_weight_i * class_weight[y_i]`` and,
    when ``fit_intercept``, a constant feature of value ``s = intercept_scaling`` whose
    weight is regularized like the others::

        min  1/2 sum_m ||w_m||^2 + 1/2 sum_m (b_m / s)^2 + sum_i C_i xi_i
        s.t. (w_{y_i} - w_m) . x_i + b_{y_i} - b_m >= 1 - [m = y_i] - xi_i   for all i, m

    With the same arguments its optimum equals the objective that
    ``sklearn.svm.LinearSVC(multi_class="crammer_singer")`` minimizes, evaluated at
    ``coef_`` and ``intercept_`` (for two classes scikit-learn reports only
    ``coef_[1] - coef_[0]``; the optimum has ``w_0 = -w_1``).

    Returns a :class:`~hiercvx.reference.ReferenceProblem` whose solution has
    ``weights`` ``(n_classes, n_features)`` (rows follow ``data["classes"]``, sorted like
    ``classes_``) and ``values`` ``W``, ``xi`` and, with ``fit_intercept``, ``intercept``.
    The lower bound is the dual objective at the margin constraints' duals made feasible
    by :func:`~hiercvx.formulations._margin.project_dual`.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    X = check_features(X)
    C = check_positive(C, "C")
    if fit_intercept:
        intercept_scaling = check_positive(intercept_scaling, "intercept_scaling")
    n, d = X.shape
    classes, y_index = encode_labels(y, n)
    q = len(classes)
    Cw = example_weights(y_index, classes, sample_weight, class_weight)

    n_rows = n * q
    d_aug = d + int(bool(fit_intercept))
    nnz_aug = _nnz(X) + (n if fit_intercept else 0)
    check_size(n_variables=q * d_aug + n, n_constraints=n_rows,
               nnz=2 * q * nnz_aug + 2 * n_rows + q * d_aug, max_size=max_size,
               what="the Crammer-Singer primal")

    data = _flat_margin_data(y_index, q, Cw)
    X_aug = _augment(X, intercept_scaling) if fit_intercept else X

    # Selection matrices over the C-order vector of class scores, row r = i*q + m:
    # D picks s_{i y_i} - s_{i m} (an empty row when m = y_i), R picks xi_i.
    rows = np.arange(n_rows)
    row_sample = rows // q
    true_col = row_sample * q + y_index[row_sample]
    D = sp.csr_matrix((np.r_[np.ones(n_rows), -np.ones(n_rows)], (np.r_[rows, rows], np.r_[true_col, rows])),
                      shape=(n_rows, n_rows))
    D.sum_duplicates()
    D.eliminate_zeros()
    R = sp.csr_matrix((np.ones(n_rows), (rows, row_sample)), shape=(n_rows, n))
    e = 1.0 - data.Y.ravel()  # e_{im} = 1 - [m = y_i]

    W = cp.Variable((q, d), name="W")
    xi = cp.Variable(n, name="xi")
    C_param = cp.Parameter(nonneg=True, value=C, name="C")
    scores = X @ W.T
    regularizer = 0.5 * cp.sum_squares(W)
    variables = {"W": W, "xi": xi}
    if fit_intercept:
        b = cp.Variable(q, name="intercept")
        scores = scores + np.ones((n, 1)) @ cp.reshape(b, (1, q), order="C")
        regularizer = regularizer + (0.5 / intercept_scaling ** 2) * cp.sum_squares(b)
        variables["intercept"] = b
    margin = D @ cp.vec(scores, order="C") + R @ xi >= e
    problem = cp.Problem(cp.Minimize(regularizer + C_param * (Cw @ xi)), [margin])

    def augmented_weights(values):
        if not fit_intercept:
            return np.asarray(values["W"], dtype=float)
        return np.hstack([np.asarray(values["W"], dtype=float),
                          np.asarray(values["intercept"], dtype=float).reshape(q, 1) / intercept_scaling])

    def objective(values):
        return _margin.primal_objective(augmented_weights(values), X_aug, data, float(C_param.value))

    def lower_bound(values, duals):
        # the dual of row (i, m != y_i) is alpha for pair (i, y_i, m); pairs are sorted by i, then m
        lam = np.asarray(duals["margin"], dtype=float).reshape(n, q)
        alpha = _margin.project_dual(lam[data.pair_i, data.pair_ybar], data, float(C_param.value))
        return _margin.dual_objective_linear(alpha, X_aug, data)

    logger.debug("Crammer-Singer primal: n=%d, d=%d, q=%d, intercept=%s", n, d, q, fit_intercept)
    return ReferenceProblem(
        problem, variables=variables, objective=objective, lower_bound=lower_bound,
        weights=lambda values: np.asarray(values["W"], dtype=float), constraints={"margin": margin},
        parameters={"C": C_param}, name="Crammer-Singer primal (LIBLINEAR MCSVM_CS)",
        build_time=time.perf_counter() - t0,
        data={"X": X, "X_augmented": X_aug, "y_index": y_index, "classes": classes, "margin": data,
              "example_weights": Cw, "fit_intercept": bool(fit_intercept),
              "intercept_scaling": float(intercept_scaling), "selection": (D, R, e)})


# ----------------------------------------------------------------------------- dual

@dataclass
class KernelClassFunctions:
    """The class functions ``f_y(x) = sum_i coef[i, y] k(x_i, x)`` recovered from the dual.

    ``coef`` ``(n_train, n_classes)``; ``kernel`` the resolved :class:`~hiercvx.kernels.Kernel`;
    ``X_train`` the training inputs (``None`` for a precomputed kernel, whose
    :meth:`decision_function` takes the ``(n_new, n_train)`` test-train kernel block).
    """

    coef: np.ndarray
    kernel: Kernel
    X_train: Any
    classes: np.ndarray

    def decision_function(self, X_new) -> np.ndarray:
        """Class scores ``(n_new, n_classes)``: ``k(X_new, X_train) @ coef``."""
        if self.kernel.name == "precomputed":
            K_new = check_features(X_new, name="the test-train kernel block", allow_sparse=False)
            if K_new.shape[1] != self.coef.shape[0]:
                raise InputError(f"with kernel='precomputed' pass the (n_new, n_train) kernel block "
                                 f"against the {self.coef.shape[0]} training points; got {K_new.shape}")
        else:
            X_new = check_features(X_new, name="X_new")
            if X_new.shape[1] != self.X_train.shape[1]:
                raise InputError(f"X_new has {X_new.shape[1]} features; training had {self.X_train.shape[1]}")
            K_new = self.kernel(X_new, self.X_train)
        return K_new @ self.coef

    def predict(self, X_new) -> np.ndarray:
        """The class of highest score (first one on ties, like ``argmax``)."""
        return self.classes[np.argmax(self.decision_function(X_new), axis=1)]

    @property
    def linear_weights(self) -> np.ndarray:
        """For the linear kernel: ``W = coef^T X`` ``(n_classes, n_features)``, the primal's weights."""
        if self.kernel.name != "linear":
            raise InputError(f"explicit weights exist for the linear kernel only, not {self.kernel.name!r}")
        return _margin.weights_from_coefficients(self.coef, self.X_train, np.eye(self.coef.shape[1]))


def gram_factor(K: np.ndarray, rel_tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """``(F, K_psd)`` with ``K_psd = F F^T`` the PSD part of the symmetric ``K``.

    Eigen-factor without jitter: eigenvalues below ``rel_tol * max(1, lambda_max)`` (round-off
    of a PSD matrix, or the tiny negative ones :func:`~hiercvx.kernels.check_psd` lets pass)
    are set to zero and their columns dropped, so ``F`` is ``(n, rank)``.
    """
    F = psd_factor(K, rtol=rel_tol)
    return F, F @ F.T


def recover_coefficients(Lambda: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The notes' recovery ``f_y = sum_i G_{iy} Phi(x_i)`` with ``G = sgn * Lambda``,
    ``sgn_{iy} = +1`` if ``y = c_i`` else ``-1`` (the sign the Kuhn--Tucker conditions give)."""
    return np.where(Y, 1.0, -1.0) * np.asarray(Lambda, dtype=float)


def dual(X, y, C: float = 1.0, kernel="linear", sample_weight=None, class_weight=None,
         sigma: float | None = None, max_size: int | None = None) -> ReferenceProblem:
    """The lecture notes' multi-class kernel SVM dual ("Lagrangian Dual Problem for Multi-Class SVM")::

        max_lambda  sum_i lambda_{i c_i} - 1/2 sum_y sum_{i,j} G_{iy} G_{jy} K(x_i, x_j)
        s.t.        lambda >= 0,  lambda_{i c_i} <= C_i,  lambda_{i c_i} = sum_{y != c_i} lambda_{iy}

    with ``G_{iy} = +lambda_{iy}`` if ``y = c_i`` else ``-lambda_{iy}`` and
    ``C_i = C * sample_weight_i * class_weight[c_i]``.  No intercept (the notes have none);
    for ``kernel="linear"`` the optimum equals :func:`primal` with ``fit_intercept=False``.

    ``kernel``: ``"linear"``, ``"rbf"`` (bandwidth ``sigma`` or the median heuristic),
    ``"precomputed"`` (then X is the ``(n, n)`` Gram matrix) or a callable ``k(A, B)``.
    A non-PSD Gram matrix is refused, quoting its smallest eigenvalue.

    The quadratic term is declared as ``1/2 ||F^T G||_F^2`` with ``K = F F^T`` (``F = X``
    for the linear kernel, an eigen-factor otherwise, see :func:`gram_factor`): DCP by
    construction, one term for all k columns of ``G`` (``quad_form`` takes one vector), and
    only ``n * rank * k`` coefficients.

    Certificate: objective = the primal objective recomputed at the recovered representer
    coefficients ``G`` (:func:`~hiercvx.formulations._margin.kernel_objective`); lower bound
    = the dual objective at the returned ``lambda`` made feasible by ``project_dual``.
    ``sol.weights`` is a :class:`KernelClassFunctions` (``decision_function``, ``predict``,
    ``coef``, ``linear_weights``); ``sol.values["Lambda"]`` is the dual variable.
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    C = check_positive(C, "C")
    precomputed = isinstance(kernel, str) and kernel == "precomputed"
    if precomputed:
        X = check_features(X, name="the precomputed Gram matrix", allow_sparse=False)
        if X.shape[0] != X.shape[1]:
            raise InputError("with kernel='precomputed' X must be the square (n, n) Gram matrix, "
                             f"got shape {X.shape}")
    else:
        X = check_features(X)
    n = X.shape[0]
    classes, y_index = encode_labels(y, n)
    q = len(classes)
    Cw = example_weights(y_index, classes, sample_weight, class_weight)
    k = make_kernel(kernel, X=X, sigma=sigma)  # fixes the rbf bandwidth on the training data

    rank_bound = min(n, X.shape[1]) if k.is_linear else n
    factor_nnz = _nnz(X) if k.is_linear else n * rank_bound
    check_size(n_variables=n * q, n_constraints=n * q + 2 * n, nnz=q * factor_nnz + 3 * n * q,
               max_size=max_size, what="the multi-class kernel SVM dual")

    if k.is_linear:
        F, K = X, None  # K = X X^T is never formed: the linear certificate works on W
    else:
        K_raw = k(X, X)
        check_psd(K_raw, what="precomputed kernel matrix" if precomputed else f"{k.name} kernel matrix")
        F, K = gram_factor(K_raw)
    data = _flat_margin_data(y_index, q, Cw)
    sign = np.where(data.Y, 1.0, -1.0)

    Lambda = cp.Variable((n, q), nonneg=True, name="Lambda")
    C_param = cp.Parameter(nonneg=True, value=C, name="C")
    G = cp.multiply(sign, Lambda)
    own = cp.sum(cp.multiply(data.Y.astype(float), Lambda), axis=1)  # lambda_{i c_i}
    balance = cp.sum(G, axis=1) == 0  # lambda_{i c_i} - sum_{y != c_i} lambda_{iy} = 0
    budget = own <= C_param * Cw
    FT = F.T.tocsr() if sp.issparse(F) else np.ascontiguousarray(F.T)
    problem = cp.Problem(cp.Maximize(cp.sum(own) - 0.5 * cp.sum_squares(FT @ G)), [balance, budget])

    def pair_alpha(values):
        return np.asarray(values["Lambda"], dtype=float)[data.pair_i, data.pair_ybar]

    def coefficients(values):
        # Kuhn-Tucker form: G_{i c_i} = sum_{y != c_i} lambda_{iy}, G_{iy} = -lambda_{iy}
        return _margin.coefficients(pair_alpha(values), data)

    def objective(values):
        Gv = coefficients(values)
        if k.is_linear:
            W = _margin.weights_from_coefficients(Gv, X, data.Lam)
            return _margin.primal_objective(W, X, data, float(C_param.value))
        return _margin.kernel_objective(Gv, K, data, float(C_param.value))

    def lower_bound(values, duals):
        alpha = _margin.project_dual(pair_alpha(values), data, float(C_param.value))
        if k.is_linear:
            return _margin.dual_objective_linear(alpha, X, data)
        return _margin.dual_objective(alpha, K, data)

    def weights(values):
        return KernelClassFunctions(coef=coefficients(values), kernel=k,
                                    X_train=None if precomputed else X, classes=classes)

    logger.debug("multi-class kernel SVM dual: n=%d, q=%d, kernel=%s, rank=%d", n, q, k.name, F.shape[1])
    return ReferenceProblem(
        problem, variables={"Lambda": Lambda}, objective=objective, lower_bound=lower_bound,
        weights=weights, constraints={"balance": balance, "budget": budget}, parameters={"C": C_param},
        name=f"multi-class SVM dual ({k.name} kernel)", build_time=time.perf_counter() - t0,
        data={"X": X, "K": K, "factor": F, "kernel": k, "y_index": y_index, "classes": classes,
              "margin": data, "example_weights": Cw})
