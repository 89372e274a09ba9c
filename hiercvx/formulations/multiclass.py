"""Multi-class SVM of Crammer and Singer: primal (exactly LIBLINEAR's) and the kernel dual.

Source: Chung-Chin Lu, *EE6550 Machine Learning, Lecture 7: Multi-Class Classification*, National
Tsing Hua University, 2017 (the SVM of Crammer & Singer, JMLR 2001), sections "Multi-Class Kernel-Based SVMs" (primal) and "Lagrangian Dual Problem for
Multi-Class SVM" (dual); the sheet ``formulations/multiclass.md`` has the equations.

Both problems are the pairwise-ranking model of :mod:`hiercvx.models.margin` on a
flat label set: class attributes ``Lam = I``, loss ``1 - I``, slack rescaling, one
relevant class per example.  The inputs are validated once by
:func:`hiercvx.models.multiclass.prepare` (re-exported here as ``prepare_model``); the public
builders prepare the model and hand it to ``primal_from_model`` / ``dual_from_model``.
Every recomputed objective and every lower bound goes through the margin model.

* :func:`primal` -- the objective scikit-learn's ``LinearSVC(multi_class="crammer_singer")``
  minimizes (LIBLINEAR's ``MCSVM_CS`` solver, Fan et al. 2008, appendix), bias feature and
  per-example costs included::

      min_{W, b, xi}  1/2 ||W||_F^2 + 1/2 ||b||^2 / s^2 + sum_i C_i xi_i
      s.t.  s_{i c_i} - s_{i m} >= e_{i m} - xi_i      for all i and all classes m,
            s_{i m} = w_m . x_i + b_m,  e_{i m} = 1 - [m = c_i],
            C_i = C * sample_weight_i * class_weight[c_i],  s = intercept_scaling,

  with ``c_i`` the class of sample i (the sheet's notation).  (The row ``m = c_i`` reads
  ``xi_i >= 0``.)

* :func:`dual` -- the notes' Lagrangian dual (a QP in ``lambda in R^{n x k}``)::

      max  sum_i lambda_{i c_i} - 1/2 sum_y G_{:y}^T K G_{:y},   G_{iy} = sgn_{iy} lambda_{iy}
      s.t. lambda >= 0,  lambda_{i c_i} <= C_i,  lambda_{i c_i} = sum_{y != c_i} lambda_{iy},
      sgn_{iy} = +1 if y = c_i else -1,

  with the class functions ``f_y = sum_i G_{iy} k(x_i, .)``.  The notes print the recovery
  with the opposite sign, ``(-1)^{delta(c_i, y)}``, which scores ``-f_y``; see the sheet.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._validation import check_features, check_positive
from ..exceptions import InputError
from ..kernels import Kernel, check_psd, psd_factor
from ..models import margin as _margin
from ..models.multiclass import (MulticlassModel, augment, encode_labels, example_weights,
                                 flat_margin_data)
from ..models.multiclass import prepare as prepare_model
from ..describe import Symbol
from .._reference_scaling import rescales_features
from ..reference import Formulation, ReferenceProblem, check_size

logger = logging.getLogger(__name__)

__all__ = ["primal", "primal_from_model", "dual", "dual_from_model", "prepare_model",
           "MulticlassModel", "KernelClassFunctions", "recover_coefficients", "gram_factor",
           "encode_labels", "example_weights", "flat_margin_data", "augment",
           "primal_formulation", "dual_formulation"]


def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(X.shape[0] * X.shape[1])


# ----------------------------------------------------------------------------- primal

# ---------------------------------------------------------------------- what describe() shows
def primal_formulation(fit_intercept: bool = False) -> Formulation:
    """The notes' primal (LIBLINEAR's MCSVM_CS) as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it."""
    reg, reg_tex = "1/2 ||W||_F^2", "\\tfrac12 \\|W\\|_F^2"
    notation = {"s_im": Symbol("w_m . x_i (+ b_m with an intercept): the score of class m",
                               "$\\langle w_m, x_i \\rangle$ ($+\\, b_m$ with an intercept): the "
                               "score of class $m$", "s_{im}"),
                "c_i": Symbol("the class of example i (an index into the sorted classes)",
                              "the class of example $i$ (an index into the sorted classes)"),
                "C_i": Symbol("the cost of example i: C sample_weight_i class_weight[c_i]",
                              "the cost of example $i$: $C$ times its sample weight and the weight of "
                              "its class")}
    variables = {"W": Symbol("class weights w_m, one row per class in sorted order",
                             "class weights $w_m$, one row per class in sorted order", shape=("k", "d")),
                 "xi": Symbol("one slack per example", "one slack per example", shape=("n",))}
    if fit_intercept:
        reg, reg_tex = reg + " + 1/2 ||b||^2 / s^2", reg_tex + " + \\tfrac12 \\|b\\|^2 / s^2"
        variables["intercept"] = Symbol("class biases b_m", "class biases $b_m$", "b", ("k",))
        notation["s"] = Symbol("intercept_scaling: the value of the constant feature",
                               "the value of the constant feature (intercept scaling)")
    return Formulation(
        objective=(reg + " + sum_i C_i xi_i", reg_tex + " + \\sum_i C_i \\xi_i", "notes (primal)"),
        constraints={"margin": ("s_{i c_i} - s_im >= 1 - [m = c_i] - xi_i for every i and class m "
                                "(m = c_i gives xi_i >= 0)",
                                "s_{i c_i} - s_{im} \\ge 1 - [m = c_i] - \\xi_i \\quad \\forall i, m",
                                "notes (primal)")},
        variables=variables, notation=notation)


def dual_formulation() -> Formulation:
    """The notes' Lagrangian dual as
    :meth:`ReferenceProblem.describe() <hiercvx.reference.ReferenceProblem.describe>` shows it."""
    return Formulation(
        objective=("sum_i lambda_{i c_i} - 1/2 sum_m G_{:m}^T K G_{:m}",
                   "\\sum_i \\lambda_{i c_i} - \\tfrac12 \\sum_m G_{:m}^\\top K G_{:m}", "notes (dual)"),
        constraints={"balance": ("lambda_{i c_i} = sum_{m != c_i} lambda_im for every i",
                                 "\\lambda_{i c_i} = \\textstyle\\sum_{m \\ne c_i} \\lambda_{im} \\quad \\forall i",
                                 "notes (dual)"),
                     "budget": ("lambda_{i c_i} <= C_i for every i (and lambda >= 0)",
                                "\\lambda_{i c_i} \\le C_i,\\ \\lambda \\ge 0 \\quad \\forall i", "notes (dual)")},
        variables={"Lambda": Symbol("multipliers lambda_im, one per example and class",
                                    "multipliers $\\lambda_{im}$, one per example and class",
                                    shape=("n", "k"))},
        notation={"G_im": Symbol("+lambda_im if m = c_i else -lambda_im; f_m = sum_i G_im kappa(x_i, .)",
                                 "$+\\lambda_{im}$ if $m = c_i$, else $-\\lambda_{im}$; the class "
                                 "functions are $f_m = \\sum_i G_{im}\\, \\kappa(x_i, \\cdot)$", "G_{im}"),
                  "K": Symbol("the Gram matrix K_ij = kappa(x_i, x_j) of the kernel kappa (declared through a factor K = F F^T)",
                              "the Gram matrix $K_{ij} = \\kappa(x_i, x_j)$ of the kernel $\\kappa$ (declared through a "
                              "factor $K = F F^\\top$)"),
                  "c_i": Symbol("the class of example i (an index into the sorted classes)",
                                "the class of example $i$ (an index into the sorted classes)"),
                  "C_i": Symbol("the cost of example i: C sample_weight_i class_weight[c_i]",
                                "the cost of example $i$: $C$ times its sample weight and the weight "
                                "of its class")})


@rescales_features({"W": -1, "xi": 0, "intercept": -1})
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
    by :func:`~hiercvx.models.margin.project_dual`.
    """
    C = check_positive(C, "C")
    model = prepare_model(X, y, sample_weight=sample_weight, class_weight=class_weight,
                          fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return primal_from_model(model, C=C, max_size=max_size)


def primal_from_model(model: MulticlassModel, C: float = 1.0,
                      max_size: int | None = None) -> ReferenceProblem:
    """The Crammer--Singer primal (see :func:`primal`) declared from a validated
    :class:`MulticlassModel` (linear kernel); ``C`` becomes a ``cp.Parameter``."""
    if not model.kernel.is_linear:
        raise InputError("the Crammer-Singer primal is declared for the linear kernel; use the dual")
    t0 = time.perf_counter()
    X, X_aug, data = model.X_features, model.X, model.data
    fit_intercept, intercept_scaling = model.fit_intercept, model.intercept_scaling
    n, d = X.shape
    classes, y_index, Cw = model.classes, model.y_index, model.Cw
    q = len(classes)
    n_rows = n * q
    d_aug = d + int(bool(fit_intercept))
    nnz_aug = _nnz(X) + (n if fit_intercept else 0)
    check_size(n_variables=q * d_aug + n, n_constraints=n_rows,
               nnz=2 * q * nnz_aug + 2 * n_rows + q * d_aug, max_size=max_size,
               what="the Crammer-Singer primal")

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
    C_param = cp.Parameter(pos=True, value=float(C), name="C")
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

    routes = _PrimalRoutes(model, C_param)
    logger.debug("Crammer-Singer primal: n=%d, d=%d, q=%d, intercept=%s", n, d, q, fit_intercept)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"margin": margin},
        parameters={"C": C_param}, name="Crammer-Singer primal (LIBLINEAR MCSVM_CS)",
        formulation=primal_formulation(bool(fit_intercept)),
        build_time=time.perf_counter() - t0,
        data={"X": X, "X_augmented": X_aug, "y_index": y_index, "classes": classes, "margin": data,
              "example_weights": Cw, "fit_intercept": bool(fit_intercept),
              "intercept_scaling": float(intercept_scaling), "selection": (D, R, e), "model": model})


class _PrimalRoutes:
    """The primal's numpy routes at the current ``C`` (a module-level class, so a
    :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, model: MulticlassModel, C_param):
        self.model, self.C_param = model, C_param

    def objective(self, values):
        return self.model.objective(values["W"], float(self.C_param.value),
                                    intercept=values.get("intercept"))

    def lower_bound(self, values, duals):
        # the dual of row (i, m != y_i) is alpha for pair (i, y_i, m); pairs are sorted by i, then m
        data = self.model.data
        lam = np.asarray(duals["margin"], dtype=float).reshape(data.Y.shape)
        alpha = _margin.project_dual(lam[data.pair_i, data.pair_ybar], data, float(self.C_param.value))
        return _margin.dual_objective_linear(alpha, self.model.X, data)

    @staticmethod
    def weights(values):
        return np.asarray(values["W"], dtype=float)


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


@rescales_features({"Lambda": -2}, multipliers=("Lambda",))
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
    coefficients ``G`` (:func:`~hiercvx.models.margin.kernel_objective`); lower bound
    = the dual objective at the returned ``lambda`` made feasible by ``project_dual``.
    ``sol.weights`` is a :class:`KernelClassFunctions` (``decision_function``, ``predict``,
    ``coef``, ``linear_weights``); ``sol.values["Lambda"]`` is the dual variable.
    """
    C = check_positive(C, "C")
    model = prepare_model(X, y, sample_weight=sample_weight, class_weight=class_weight,
                          kernel=kernel, sigma=sigma)
    return dual_from_model(model, C=C, max_size=max_size)


def dual_from_model(model: MulticlassModel, C: float = 1.0,
                    max_size: int | None = None) -> ReferenceProblem:
    """The notes' multi-class kernel SVM dual (see :func:`dual`) declared from a validated
    :class:`MulticlassModel` without intercept; ``C`` becomes a ``cp.Parameter``.  The only
    check left here is that a non-linear Gram matrix is PSD (the factor needs it)."""
    if model.fit_intercept:
        raise InputError("the notes' dual has no intercept: prepare the model with "
                         "fit_intercept=False")
    t0 = time.perf_counter()
    X, k, classes, Cw = model.X, model.kernel, model.classes, model.Cw
    precomputed = model.precomputed
    n = X.shape[0]
    q = len(classes)
    y_index = model.y_index

    rank_bound = min(n, X.shape[1]) if k.is_linear else n
    factor_nnz = _nnz(X) if k.is_linear else n * rank_bound
    check_size(n_variables=n * q, n_constraints=n * q + 2 * n, nnz=q * factor_nnz + 3 * n * q,
               max_size=max_size, what="the multi-class kernel SVM dual")

    if k.is_linear:
        F, K = X, None  # K = X X^T is never formed: the linear certificate works on W
    else:
        K_raw = model.K
        check_psd(K_raw, what="precomputed kernel matrix" if precomputed else f"{k.name} kernel matrix")
        F, K = gram_factor(K_raw)
    data = model.data
    sign = np.where(data.Y, 1.0, -1.0)

    Lambda = cp.Variable((n, q), nonneg=True, name="Lambda")
    C_param = cp.Parameter(pos=True, value=float(C), name="C")
    G = cp.multiply(sign, Lambda)
    own = cp.sum(cp.multiply(data.Y.astype(float), Lambda), axis=1)  # lambda_{i c_i}
    balance = cp.sum(G, axis=1) == 0  # lambda_{i c_i} - sum_{y != c_i} lambda_{iy} = 0
    budget = own <= C_param * Cw
    FT = F.T.tocsr() if sp.issparse(F) else np.ascontiguousarray(F.T)
    problem = cp.Problem(cp.Maximize(cp.sum(own) - 0.5 * cp.sum_squares(FT @ G)), [balance, budget])

    routes = _DualRoutes(model, K, C_param)
    logger.debug("multi-class kernel SVM dual: n=%d, q=%d, kernel=%s, rank=%d", n, q, k.name, F.shape[1])
    return ReferenceProblem(
        problem, variables={"Lambda": Lambda}, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights, constraints={"balance": balance, "budget": budget}, parameters={"C": C_param},
        name=f"multi-class SVM dual ({k.name} kernel)", build_time=time.perf_counter() - t0,
        formulation=dual_formulation(),
        data={"X": X, "K": K, "factor": F, "kernel": k, "y_index": y_index, "classes": classes,
              "margin": data, "example_weights": Cw, "model": model})


class _DualRoutes:
    """The dual's numpy routes at the current ``C`` (``K`` None for the linear kernel; a
    module-level class, so a :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, model: MulticlassModel, K, C_param):
        self.model, self.K, self.C_param = model, K, C_param

    def _pair_alpha(self, values):
        data = self.model.data
        return np.asarray(values["Lambda"], dtype=float)[data.pair_i, data.pair_ybar]

    def _coefficients(self, values):
        # Kuhn-Tucker form: G_{i c_i} = sum_{y != c_i} lambda_{iy}, G_{iy} = -lambda_{iy}
        return _margin.coefficients(self._pair_alpha(values), self.model.data)

    def objective(self, values):
        model, data, C = self.model, self.model.data, float(self.C_param.value)
        Gv = self._coefficients(values)
        if model.kernel.is_linear:
            W = _margin.weights_from_coefficients(Gv, model.X, data.Lam)
            return _margin.primal_objective(W, model.X, data, C)
        return _margin.kernel_objective(Gv, self.K, data, C)

    def lower_bound(self, values, duals):
        model, data = self.model, self.model.data
        alpha = _margin.project_dual(self._pair_alpha(values), data, float(self.C_param.value))
        if model.kernel.is_linear:
            return _margin.dual_objective_linear(alpha, model.X, data)
        return _margin.dual_objective(alpha, self.K, data)

    def weights(self, values):
        model = self.model
        return KernelClassFunctions(coef=self._coefficients(values), kernel=model.kernel,
                                    X_train=None if model.precomputed else model.X,
                                    classes=model.classes)
