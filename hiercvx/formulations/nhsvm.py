"""Normalized hierarchical SVM and the shared-norm SVM: the CVXPY declarations.

Source: Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*,
arXiv:1508.02479, 2016.

Notation (paper section 3-6): ``M`` nodes (``H.nodes``, root included), leaves ``L``
(``H.leaves``), ``anc(l)`` the ancestors of ``l`` with ``l`` itself (the paper's
``A-bar(l)``), node weights ``W`` ``(M, d)``, path weights ``alpha`` ``(M,)``.  The leaf-path
matrix ``A`` ``(|L|, M)`` has ``A[l, n] = 1`` iff ``n in anc(l)``.

The data model (validation, path weights (6)-(8), attributes (5), margin (9), objectives,
oracles, the closed-form alpha step (20)) is :mod:`hiercvx.models.nhsvm`, in numpy; its public
names are re-exported here.  Declarations (each returns a :class:`~hiercvx.ReferenceProblem`; see
``formulations/nhsvm.md``):

* :func:`path_weights_problem` / :func:`path_weights` -- alpha from (6), (7), (8), certified
  (``hiercvx.formulations._nhsvm_path_weights``); :func:`prepare` resolves ``alpha`` by the
  model's closed form on trees and by these programs elsewhere.
* :func:`primal` -- NHSVM (10) (= (11) = (12)) with the normalized attributes (5) and the
  normalized margin (9), or the variant (13).  Single-label: :func:`primal_from_model`, the
  pairwise model of :mod:`hiercvx.models.margin` over the leaves with margin rescaling.
  Multi-label: the exact cutting-plane loop :class:`CuttingPlaneProblem`
  (``hiercvx.formulations._nhsvm_cutting_plane``) with the decomposable loss of section 7.1.
* :func:`shared_primal` / :func:`shared_primal_from_model` -- the shared-norm SVM (14),
  jointly convex in ``U`` and ``alpha``.
* :func:`dual` / :func:`dual_from_model` -- the dual of single-label (10) / (13) in the leaf
  masses ``beta`` (recovery ``W = Lam^T Gc(beta)^T X / (2 lam)``); :func:`shared_dual` /
  :func:`shared_dual_from_model` -- the dual of (14), one rotated cone per node (recovery
  ``U_n = alpha_n V_n / (2 lam)``, ``alpha`` the cones' multipliers).
* :func:`alpha_step` -- problem (20) (its closed form on trees is
  :func:`hiercvx.models.nhsvm.optimal_alpha`); :func:`shared_norm` / :func:`shared_norm_problem`
  -- the structured shared norm (16) and, without a hierarchy, the shared norm (17);
  :func:`max_norm` and :func:`trace_norm` complete Theorem 2's chain
  (``hiercvx.formulations._shared_norms``).

Every certificate is a Lagrangian lower bound at a dual point built from the solver's duals
and repaired to exact feasibility in numpy; the objective is recomputed in numpy at the
returned weights (never the solver's number).
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..models import margin as _margin
from ..models.nhsvm import (DAG_T, PATH_METHODS, VARIANTS, NHSVMModel, SharedNormModel,
                            check_path_weights, cover, node_scores, optimal_alpha, prepare_shared,
                            primal_objective, ratio_sum, scaled_alpha)

from .._reference_scaling import rescales_features
from ..reference import ReferenceProblem, check_size
from ._nhsvm_describe import (nhsvm_dual_formulation, nhsvm_formulation, shared_dual_formulation,
                              shared_formulation)
from ._nhsvm_cutting_plane import CuttingPlaneProblem, cutting_plane_formulation, cutting_plane_from_model
from ._nhsvm_path_weights import path_weights, path_weights_problem, prepare, resolve_alpha
from ._shared_norms import alpha_step, max_norm, shared_norm, shared_norm_problem, trace_norm

__all__ = [
    "PATH_METHODS",
    "VARIANTS",
    "DAG_T",
    "path_weights",
    "path_weights_problem",
    "resolve_alpha",
    "check_path_weights",
    "NHSVMModel",
    "prepare",
    "prepare_shared",
    "node_scores",
    "primal_objective",
    "primal",
    "primal_from_model",
    "dual",
    "dual_from_model",
    "shared_dual",
    "shared_dual_from_model",
    "CuttingPlaneProblem",
    "cutting_plane_from_model",
    "shared_primal",
    "shared_primal_from_model",
    "alpha_step",
    "nhsvm_formulation",
    "nhsvm_dual_formulation",
    "shared_formulation",
    "shared_dual_formulation",
    "cutting_plane_formulation",
    "shared_norm",
    "shared_norm_problem",
    "max_norm",
    "trace_norm",
]


def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(X.shape[0] * X.shape[1])


# ====================================================================== NHSVM primal (10) / (13)
@rescales_features({"W": -1, "xi": 0, "intercept": -1}, weight="lam")
def primal(X, Y, H: Hierarchy, lam: float = 1.0, alpha=None, variant: str = "nhsvm", *,
           multilabel: bool | None = None, loss=None, T=None, fit_intercept: bool = False,
           intercept_scaling: float = 1.0, inference: str = "auto", max_size: int | None = None):
    """NHSVM (10) (equivalently (11) / (12)) or its variant (13), as an exact reference.

    Eq. (10): ``min_W lam sum_n ||W_n||^2 + sum_i max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]``
    with ``s_i(y) = sum_{n in y} sqrt(alpha_n) W_n . x_i`` (the normalized attributes (5)).

    * Single-label (``Y`` one leaf per sample): ``y`` ranges over the leaves and
      ``Delta = ``(9); it is the pairwise model of :mod:`._margin` with ``Lam`` = (5), margin
      rescaling and ``C = 1 / (2 lam)`` (objective scaled by ``2 lam``).  Declared as
      ``D vec(X W^T Lam^T) + R xi >= e`` (one row per sample and leaf).  ``variant="13"``
      divides each row by ``Delta`` and asks for margin 1 (eq. (13)).  Returns a
      :class:`~hiercvx.ReferenceProblem`; lower bound: the dual objective at the rows' duals,
      projected onto the dual feasible set.
    * Multi-label (``Y`` sets of leaves): ``y`` ranges over ``Y_m`` and ``Delta`` is the
      decomposable loss of section 7.1 (``loss=``, default ``Delta_L``); returns a
      :class:`CuttingPlaneProblem` whose ``solve()`` runs the certified cutting-plane loop.

    Other arguments: ``alpha`` and ``T`` as in :func:`prepare` (``alpha=None``: (6) with rho 2
    on trees, (8) with T 1.5 on DAGs); ``variant`` ``"nhsvm"`` (alias ``"10"``) or ``"13"``;
    ``multilabel`` forces the label space (``None`` infers it from ``Y``); ``inference`` the
    separation oracle's method (``"auto"``: :func:`hiercvx.inference.auto_method`); ``max_size``
    raises the size limit.  ``lam`` is a ``cvxpy.Parameter`` (``prob.set(lam=...)``).
    ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias, one per node (node
    scores ``sqrt(alpha_n) (W_n . x + b_n)``, penalty ``lam b_n^2 / s^2``; see
    :mod:`hiercvx.models.nhsvm`); ``sol.values["intercept"]`` holds the ``b_n``.
    ``sol.weights`` is ``W`` ``(M, d)`` (without the bias column); score new points with
    ``model.scores(W, X, intercept=b)`` or :func:`node_scores`.
    """
    t0 = time.perf_counter()
    lam = check_positive(lam, "lam")
    model = prepare(X, Y, H, alpha=alpha, variant=variant, multilabel=multilabel, loss=loss, T=T,
                    fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    if model.multilabel:
        return cutting_plane_from_model(model, lam, inference=inference, max_size=max_size, started=t0)
    return primal_from_model(model, lam, max_size=max_size, started=t0)


def primal_from_model(model: NHSVMModel, lam: float = 1.0, *, max_size: int | None = None,
                      started: float | None = None) -> ReferenceProblem:
    """Single-label NHSVM (10) / (13) (see :func:`primal`) declared from a prepared model;
    multi-label models go to :func:`cutting_plane_from_model`."""
    t0 = time.perf_counter() if started is None else started
    if model.multilabel:
        raise InputError("primal_from_model declares single-label NHSVM; a multi-label model is "
                         "solved by the cutting-plane reference (cutting_plane_from_model)")
    data = model
    X, X_aug, Lam, H = data.X_features, data.X, data.Lam, data.H
    n, d = X.shape
    M = len(H)
    q = Lam.shape[0]
    path_len = float((Lam != 0).sum(axis=1).mean())
    check_size(M * X_aug.shape[1] + n, n * q, int(2 * q * _nnz(X_aug) * path_len) + 2 * n * q, max_size,
               what=f"the NHSVM primal ({'(10)' if data.variant == 'nhsvm' else '(13)'})")

    rows = np.arange(n * q)
    row_sample = rows // q
    other = rows % q
    own_col = row_sample * q + data.leaf_pos[row_sample]
    dist = data.structural[data.leaf_pos[row_sample], other]       # 0 on the sample's own leaf
    if data.variant == "nhsvm":
        scale = np.ones(n * q)
        e = dist
    else:
        scale = np.where(dist > 0, 1.0 / np.where(dist > 0, dist, 1.0), 0.0)
        e = (dist > 0).astype(float)
    D = sp.csr_matrix((np.r_[scale, -scale], (np.r_[rows, rows], np.r_[own_col, rows])),
                      shape=(n * q, n * q))
    D.sum_duplicates()
    D.eliminate_zeros()
    R = sp.csr_matrix((np.ones(n * q), (rows, row_sample)), shape=(n * q, n))

    lam_p = cp.Parameter(pos=True, value=lam, name="lam")
    W = cp.Variable((M, d), name="W")
    xi = cp.Variable(n, name="xi")
    variables = {"W": W, "xi": xi}
    node_part = X @ W.T
    regularizer = cp.sum_squares(W)
    if data.fit_intercept:  # LIBLINEAR's bias: b_n on every node score, penalized as (b_n / s)^2
        b = cp.Variable(M, name="intercept")
        node_part = node_part + np.ones((n, 1)) @ cp.reshape(b, (1, M), order="C")
        regularizer = regularizer + cp.sum_squares(b) / data.intercept_scaling ** 2
        variables["intercept"] = b
    S = node_part @ Lam.T
    margin = D @ cp.vec(S, order="C") + R @ xi >= e
    problem = cp.Problem(cp.Minimize(lam_p * regularizer + cp.sum(xi)), [margin])

    routes = _PrimalRoutes(data, lam_p, (D, R, e))
    label = "(10)" if data.variant == "nhsvm" else "(13)"
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"margin": margin},
        parameters={"lam": lam_p}, infeasibility=routes.infeasibility,
        name=f"NHSVM primal {label}, single-label", build_time=time.perf_counter() - t0,
        formulation=nhsvm_formulation(data.variant, data.fit_intercept),
        data={"nhsvm": data, "X": X, "X_augmented": X_aug, "H": H, "alpha": data.alpha, "Lam": Lam,
              "structural": data.structural, "margin_data": data.margin, "selection": (D, R, e),
              "fit_intercept": data.fit_intercept, "intercept_scaling": data.intercept_scaling})



# ====================================================================== shared-norm SVM (14)
@rescales_features({"U": -1, "alpha": 0, "xi": 0, "intercept": -1}, weight="lam")
def shared_primal(X, y, H: Hierarchy, lam: float = 1.0, loss="zero_one", *,
                  fit_intercept: bool = False, intercept_scaling: float = 1.0,
                  max_size: int | None = None) -> ReferenceProblem:
    """The shared-norm SVM (14), jointly convex in the node weights ``U`` and ``alpha``::

        min_{U, alpha}  lam sum_n ||U_n||^2 / alpha_n
                        + sum_i max_l [ sum_{n in anc(l)} U_n x_i - sum_{n in anc(l_i)} U_n x_i + Delta(l, l_i) ]
        s.t.  sum_{n in anc(l)} alpha_n <= 1 for every leaf l,   alpha >= 0.

    Single-label (the paper's section 6 is multi-class).  The regularizer is declared as one
    ``quad_over_lin(U_n, alpha_n)`` per node (Lemma 1's convexity argument term by term).
    ``loss``: a name of :data:`hiercvx.losses.LOSSES` or a ``(q, q)`` array over ``H.leaves``.

    Certificate: objective recomputed at ``(U, alpha_hat)`` with ``alpha_hat`` the returned
    ``alpha`` clipped and scaled to feasibility; lower bound ``sum_p beta_p Delta_p - sum_l mu_l``
    from the dual ``max sum beta Delta - 1^T mu`` s.t. ``(A^T mu)_n >= ||(Phi^T beta)_n||^2 /
    (4 lam)`` (derived in the sheet), at the projected pair duals ``beta`` and the path duals
    ``mu`` repaired to cover.  ``sol.weights`` is ``U`` ``(M, d)``; ``sol.values["alpha"]``.
    ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias, one per node (node
    scores ``U_n . x + b_n``, the bias inside node ``n``'s term: ``(||U_n||^2 + b_n^2 / s^2) /
    alpha_n``); ``sol.values["intercept"]`` holds the ``b_n``, ``sol.weights`` has no bias column.
    """
    t0 = time.perf_counter()
    lam = check_positive(lam, "lam")
    model = prepare_shared(X, y, H, loss=loss, fit_intercept=fit_intercept,
                           intercept_scaling=intercept_scaling)
    return shared_primal_from_model(model, lam, max_size=max_size, started=t0)


def _hinge_rows(n: int, q: int, leaf_pos: np.ndarray, L: np.ndarray):
    """``(D, R, e)`` of the multi-class hinge of (14) as ``D vec(S) + R xi >= e``: row ``(i, l)``
    is ``S_{i l_i} - S_il + xi_i >= Delta(l_i, l)`` over the class scores ``S`` ``(n, q)``."""
    rows = np.arange(n * q)
    row_sample = rows // q
    own_col = row_sample * q + leaf_pos[row_sample]
    e = L[leaf_pos[row_sample], rows % q]
    D = sp.csr_matrix((np.r_[np.ones(n * q), -np.ones(n * q)], (np.r_[rows, rows], np.r_[own_col, rows])),
                      shape=(n * q, n * q))
    D.sum_duplicates()
    D.eliminate_zeros()
    R = sp.csr_matrix((np.ones(n * q), (rows, row_sample)), shape=(n * q, n))
    return D, R, e


def shared_primal_from_model(model: SharedNormModel, lam: float = 1.0, *, max_size: int | None = None,
                             started: float | None = None) -> ReferenceProblem:
    """The shared-norm SVM (14) (see :func:`shared_primal`) declared from a prepared model."""
    t0 = time.perf_counter() if started is None else started
    X, X_aug, H, leaf_pos, L, A, Lam, md = (model.X_features, model.X, model.H, model.leaf_pos,
                                            model.loss, model.A, model.Lam, model.margin)
    n, d = X.shape
    d_aug = X_aug.shape[1]
    M = len(H)
    q = len(H.leaves)
    check_size(M * d_aug + M + n, n * q + q + M,
               int(2 * q * _nnz(X_aug) * A.sum() / q) + 2 * n * q + M * d_aug,
               max_size, what="the shared-norm SVM (14)")

    D, R, e = _hinge_rows(n, q, leaf_pos, L)
    lam_p = cp.Parameter(pos=True, value=lam, name="lam")
    U = cp.Variable((M, d), name="U")
    alpha = cp.Variable(M, name="alpha")
    xi = cp.Variable(n, name="xi")
    variables = {"U": U, "alpha": alpha, "xi": xi}
    node_part = X @ U.T
    rows = [U[k, :] for k in range(M)]
    if model.fit_intercept:  # LIBLINEAR's bias: b_n / s is one more coordinate of node n's weights
        b = cp.Variable(M, name="intercept")
        node_part = node_part + np.ones((n, 1)) @ cp.reshape(b, (1, M), order="C")
        rows = [cp.hstack([U[k, :], cp.reshape(b[k] / model.intercept_scaling, (1,), order="C")])
                for k in range(M)]
        variables["intercept"] = b
    regularizer = cp.sum(cp.hstack([cp.quad_over_lin(rows[k], alpha[k]) for k in range(M)]))
    margin = D @ cp.vec(node_part @ Lam.T, order="C") + R @ xi >= e
    paths = A @ alpha <= 1
    problem = cp.Problem(cp.Minimize(lam_p * regularizer + cp.sum(xi)), [margin, paths, alpha >= 0])

    routes = _SharedPrimalRoutes(model, lam_p, (D, R, e))
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights,
        constraints={"margin": margin, "paths": paths}, parameters={"lam": lam_p},
        infeasibility=routes.infeasibility, name="shared-norm SVM (14)", build_time=time.perf_counter() - t0,
        formulation=shared_formulation(model.fit_intercept),
        data={"X": X, "X_augmented": X_aug, "H": H, "leaf_pos": leaf_pos, "loss": L, "Lam": Lam,
              "margin_data": md, "leaf_paths": A, "fit_intercept": model.fit_intercept,
              "intercept_scaling": model.intercept_scaling})


# ====================================================================== duals of (10), (13), (14)
def _split_into(values: dict, model, W_aug) -> np.ndarray:
    """The weights without the bias column; the node biases go to ``values["intercept"]`` (a
    dual has no intercept variable: its recovered biases are reported with the values)."""
    W, b = model.split_weights(W_aug)
    if model.fit_intercept:
        values["intercept"] = b
    return W


def _leaf_coefficients(n: int, q: int, leaf_pos: np.ndarray, scale: np.ndarray):
    """The dual masses ``beta`` ``(n, q)`` over the leaves (none on a sample's own leaf, a
    simplex with slack per sample) and their class-space coefficients as CVXPY expressions:
    ``Gc_il = -sigma_il beta_il`` off the own leaf, ``Gc_{i,l_i} = sum_l sigma_il beta_il``
    (``sigma`` the row scales of (10) / (13)).  Node weights are then ``Lam^T Gc^T X / (2 lam)``."""
    own = np.zeros((n, q))
    own[np.arange(n), leaf_pos] = 1.0
    beta = cp.Variable((n, q), nonneg=True, name="beta")
    sigma = np.where(own > 0, 0.0, scale)
    B = cp.multiply(sigma, beta)
    Gc = cp.multiply(own, B @ np.ones((q, q))) - B
    rows = [cp.sum(beta, axis=1) <= 1, cp.multiply(own, beta) == 0]
    return beta, Gc, rows


def _coefficients_value(beta: np.ndarray, leaf_pos: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """:func:`_leaf_coefficients`' ``Gc`` at a numeric ``beta`` (projected first: clipped at 0,
    none on the own leaf, each row's total at most 1)."""
    n = beta.shape[0]
    b = np.maximum(np.asarray(beta, dtype=float), 0.0).copy()
    b[np.arange(n), leaf_pos] = 0.0
    b /= np.maximum(b.sum(axis=1), 1.0)[:, None]
    B = b * scale
    B[np.arange(n), leaf_pos] = 0.0
    Gc = -B
    Gc[np.arange(n), leaf_pos] = B.sum(axis=1)
    return Gc


@rescales_features({"beta": 0}, weight="lam", multipliers=("beta",))
def dual(X, Y, H: Hierarchy, lam: float = 1.0, alpha=None, variant: str = "nhsvm", *,
         multilabel: bool | None = None, loss=None, T=None, fit_intercept: bool = False,
         intercept_scaling: float = 1.0, inference: str = "auto", max_size: int | None = None):
    """The dual of NHSVM (10) / (13) (same signature as :func:`primal`).  Single-label::

        max_beta  sum_{i, l} beta_il e_il - 1/(4 lam) ||Lam^T Gc(beta)^T X||_F^2
        s.t.      beta >= 0,  beta_{i, l_i} = 0,  sum_l beta_il <= 1,

    ``e_il`` = (9) for (10) and 1 for (13), ``Gc`` the class-space coefficients
    (``Gc_il = -sigma_il beta_il``, ``Gc_{i l_i} = sum_l sigma_il beta_il``; ``sigma = 1`` for
    (10), ``1 / (9)`` for (13)).  Declared scaled by ``lam`` (``lam e.beta - 1/4 ||.||^2``, the
    same maximizer) so that ``lam`` stays a DPP parameter.  Recovery ``W = Lam^T Gc^T X /
    (2 lam)``.  Certificate: objective = (10) / (13) at the recovered ``W``; lower bound = the
    dual objective at the projected ``beta`` (:meth:`NHSVMModel.lower_bound`).  With
    ``fit_intercept`` it is the same dual on ``X~ = [X, s]`` (LIBLINEAR's bias); the recovered
    ``W~`` is split into ``sol.weights`` (no bias column) and ``sol.values["intercept"]``.

    Multi-label: the label space is exponential, so its dual is only ever the restricted
    dual of the cutting-plane loop (:class:`CuttingPlaneProblem`, whose lower bound is that
    dual's objective); that reference is returned.
    """
    t0 = time.perf_counter()
    lam = check_positive(lam, "lam")
    model = prepare(X, Y, H, alpha=alpha, variant=variant, multilabel=multilabel, loss=loss, T=T,
                    fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    if model.multilabel:
        return cutting_plane_from_model(model, lam, inference=inference, max_size=max_size, started=t0)
    return dual_from_model(model, lam, max_size=max_size, started=t0)


def dual_from_model(model: NHSVMModel, lam: float = 1.0, *, max_size: int | None = None,
                    started: float | None = None) -> ReferenceProblem:
    """The single-label dual of (10) / (13) (see :func:`dual`) declared from a prepared model."""
    t0 = time.perf_counter() if started is None else started
    if model.multilabel:
        raise InputError("dual_from_model declares the single-label dual; a multi-label model is "
                         "certified by the cutting-plane reference (cutting_plane_from_model)")
    X, Lam, H = model.X, model.Lam, model.H
    n = X.shape[0]
    q = Lam.shape[0]
    check_size(n * q, 2 * n * q + n, 2 * q * _nnz(X) + 3 * n * q, max_size,
               what=f"the NHSVM dual ({'(10)' if model.variant == 'nhsvm' else '(13)'})")
    scale = model.scale[model.leaf_pos]
    e = model.offset[model.leaf_pos]
    beta, Gc, rows = _leaf_coefficients(n, q, model.leaf_pos, scale)
    lam_p = cp.Parameter(pos=True, value=lam, name="lam")
    XT = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
    V = XT @ Gc @ Lam                                   # (d, M): 2 lam W^T at the optimum
    problem = cp.Problem(cp.Maximize(lam_p * cp.sum(cp.multiply(e, beta)) - 0.25 * cp.sum_squares(V)),
                         rows)

    routes = _DualRoutes(model, lam_p, scale)
    label = "(10)" if model.variant == "nhsvm" else "(13)"
    return ReferenceProblem(
        problem, variables={"beta": beta}, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights,
        constraints={"simplex": rows[0]}, parameters={"lam": lam_p},
        name=f"NHSVM dual of {label}, single-label", build_time=time.perf_counter() - t0,
        formulation=nhsvm_dual_formulation(model.variant, model.fit_intercept),
        solver_objective_meaning="the dual times lam = {lam:g}",
        data={"nhsvm": model, "X": X, "H": H, "alpha": model.alpha, "Lam": Lam})


@rescales_features({"beta": 0, "mu": 0}, weight="lam", multipliers=("beta", "mu"))
def shared_dual(X, y, H: Hierarchy, lam: float = 1.0, loss="zero_one", *,
                fit_intercept: bool = False, intercept_scaling: float = 1.0,
                max_size: int | None = None) -> ReferenceProblem:
    """The dual of the shared-norm SVM (14) (same signature as :func:`shared_primal`)::

        max_{beta, mu}  sum_{i, l} beta_il Delta(l_i, l) - sum_l mu_l
        s.t.  ||V_n(beta)||^2 <= 4 lam (A^T mu)_n  for every node n,   mu >= 0,
              beta >= 0,  beta_{i, l_i} = 0,  sum_l beta_il <= 1,

    ``V(beta) = A^T Gc(beta)^T X`` ``(M, d)`` (``Gc`` as in :func:`dual` with ``sigma = 1``).
    ``alpha_n`` is the multiplier of node ``n``'s cone and ``U_n = alpha_n V_n / (2 lam)``
    (stationarity).  The cone is declared as the rotated second-order cone
    ``||(2 V_n, c_n - 1)|| <= c_n + 1``, ``c_n = 4 lam (A^T mu)_n``, whose multiplier
    ``(u0_n, u_n)`` gives the primal point directly: ``U_n = -2 u_n[:d]``, ``alpha_n = 4 lam
    (u0_n + u_n[d])`` (as accurate as a primal solve; ``alpha V / (2 lam)`` at an interior
    point loses digits).  Certificate: objective = (14) at the better of the two recovered
    ``(U, alpha)`` (alpha scaled to feasibility; on trees also at the optimal alpha (20) for
    ``U``); lower bound = the dual objective at the projected
    ``beta`` with the cheapest covering ``mu``
    (:meth:`SharedNormModel.lower_bound() <hiercvx.models.nhsvm.SharedNormModel.lower_bound>`).
    With ``fit_intercept`` the same dual on ``X~ = [X, s]``; ``sol.weights`` has no bias column,
    ``sol.values["intercept"]`` the node biases and ``sol.values["alpha"]`` the alpha used.
    """
    t0 = time.perf_counter()
    lam = check_positive(lam, "lam")
    model = prepare_shared(X, y, H, loss=loss, fit_intercept=fit_intercept,
                           intercept_scaling=intercept_scaling)
    return shared_dual_from_model(model, lam, max_size=max_size, started=t0)


def shared_dual_from_model(model: SharedNormModel, lam: float = 1.0, *, max_size: int | None = None,
                           started: float | None = None) -> ReferenceProblem:
    """The dual of (14) (see :func:`shared_dual`) declared from a prepared model."""
    t0 = time.perf_counter() if started is None else started
    X, H, A, Lam = model.X, model.H, model.A, model.Lam
    n, d = X.shape
    M = len(H)
    q = len(H.leaves)
    check_size(n * q + q, 2 * n * q + n + M, 2 * q * _nnz(X) + 3 * n * q + A.nnz, max_size,
               what="the dual of the shared-norm SVM (14)")
    scale = np.ones((n, q))
    e = model.loss[model.leaf_pos]
    beta, Gc, rows = _leaf_coefficients(n, q, model.leaf_pos, scale)
    mu = cp.Variable(q, nonneg=True, name="mu")
    lam_p = cp.Parameter(pos=True, value=lam, name="lam")
    XT = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
    V = XT @ Gc @ Lam                                   # (d, M): column n is V_n
    cover = 4 * lam_p * (A.T @ mu)                      # 4 lam (A^T mu)_n
    # ||V_n||^2 <= cover_n as the rotated cone ||(2 V_n, cover_n - 1)|| <= cover_n + 1, so
    # that the cone's multiplier (u0_n, u_n) carries the primal point: U_n = -2 u_n[:d],
    # alpha_n = 4 lam (u0_n + u_n[d])
    cones = cp.SOC(cover + 1, cp.vstack([2 * V, cp.reshape(cover - 1, (1, M), order="C")]), axis=0)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(e, beta)) - cp.sum(mu)), rows + [cones])

    routes = _SharedDualRoutes(model, lam_p, cones, scale)
    return ReferenceProblem(
        problem, variables={"beta": beta, "mu": mu}, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights, constraints={"simplex": rows[0]},
        parameters={"lam": lam_p}, name="shared-norm SVM (14), dual",
        build_time=time.perf_counter() - t0,
        formulation=shared_dual_formulation(model.fit_intercept),
        data={"X": X, "H": H, "leaf_pos": model.leaf_pos, "loss": model.loss, "Lam": Lam,
              "leaf_paths": A, "model": model})


# ====================================================================== the numpy routes
# Module-level classes, never closures, so a ReferenceProblem pickles.
def _positive_lam(lam_p) -> float:
    value = float(lam_p.value)
    if value <= 0:
        raise InputError(f"lam must be positive, got {value!r}")
    return value


class _PrimalRoutes:
    """The single-label primal (10) / (13)'s numpy routes at the current ``lam``
    (``rows``: the selection ``(D, R, e)`` of the margin rows)."""

    def __init__(self, model: NHSVMModel, lam_p, rows):
        self.model, self.lam_p, self.rows = model, lam_p, rows

    def _augmented(self, values):
        return self.model.augmented_weights(values["W"], values.get("intercept"))

    def objective(self, values):
        return primal_objective(self._augmented(values), self.model, _positive_lam(self.lam_p))

    def lower_bound(self, values, duals):
        # the rows' duals are masses on the leaves: projected and valued by the model
        n, q = self.model.X.shape[0], self.model.Lam.shape[0]
        return self.model.lower_bound(np.asarray(duals["margin"], dtype=float).reshape(n, q),
                                      _positive_lam(self.lam_p))

    def infeasibility(self, values):
        D, R, e = self.rows
        Sv = _margin.class_scores(self._augmented(values), self.model.X, self.model.Lam).ravel()
        return max(0.0, float((e - D @ Sv - R @ values["xi"]).max()))

    @staticmethod
    def weights(values):
        return np.asarray(values["W"], dtype=float)


class _SharedPrimalRoutes:
    """The shared-norm SVM (14)'s numpy routes at the current ``lam`` (``rows``: the hinge
    rows ``(D, R, e)``)."""

    def __init__(self, model: SharedNormModel, lam_p, rows):
        self.model, self.lam_p, self.rows = model, lam_p, rows

    def _augmented(self, values):
        return self.model.augmented_weights(values["U"], values.get("intercept"))

    def objective(self, values):
        model = self.model
        Uv = self._augmented(values)
        a = scaled_alpha(values["alpha"], model.A)
        norms = np.einsum("ij,ij->i", Uv, Uv)
        reg = ratio_sum(norms, a)
        if model.H.is_tree:
            # the solver's alpha can be ~0 on a node whose row is tiny but not 0 (ratio inf);
            # the alpha that is optimal for U is feasible too and gives a valid, finite value
            reg = min(reg, ratio_sum(norms, scaled_alpha(optimal_alpha(Uv, model.H), model.A)))
        return _positive_lam(self.lam_p) * reg + float(model.hinge(Uv).sum())

    def lower_bound(self, values, duals):
        model, md = self.model, self.model.margin
        lam_v = _positive_lam(self.lam_p)
        n, q = model.X.shape[0], len(model.H.leaves)
        beta_full = np.asarray(duals["margin"], dtype=float).reshape(n, q)
        beta = _margin.project_dual(beta_full[md.pair_i, md.pair_ybar], md, 1.0)
        V = _margin.weights_from_coefficients(_margin.coefficients(beta, md), model.X, model.Lam)
        need = np.einsum("ij,ij->i", V, V) / (4.0 * lam_v)
        mu = cover(duals["paths"], need, model.H, model.A)
        return float(md.pair_loss @ beta) - float(mu.sum())

    def infeasibility(self, values):
        D, R, e = self.rows
        A = self.model.A
        Sv = _margin.class_scores(self._augmented(values), self.model.X, self.model.Lam).ravel()
        a = np.asarray(values["alpha"], dtype=float)
        return max(0.0, float((e - D @ Sv - R @ values["xi"]).max()), float((A @ a).max()) - 1.0,
                   float(-a.min()))

    @staticmethod
    def weights(values):
        return np.asarray(values["U"], dtype=float)


class _DualRoutes:
    """The single-label dual of (10) / (13)'s numpy routes at the current ``lam`` (``scale``:
    the rows' scales ``sigma`` per sample and leaf)."""

    def __init__(self, model: NHSVMModel, lam_p, scale):
        self.model, self.lam_p, self.scale = model, lam_p, scale

    def _augmented(self, values):
        model = self.model
        Gv = _coefficients_value(values["beta"], model.leaf_pos, self.scale)
        return _margin.weights_from_coefficients(Gv, model.X, model.Lam) / (2.0 * float(self.lam_p.value))

    def objective(self, values):
        return primal_objective(self._augmented(values), self.model, float(self.lam_p.value))

    def lower_bound(self, values, duals):
        return self.model.lower_bound(values["beta"], float(self.lam_p.value))

    def weights(self, values):
        return _split_into(values, self.model, self._augmented(values))


class _SharedDualRoutes(_DualRoutes):
    """The dual of (14)'s numpy routes: the primal point from the cones' multiplier or from
    ``beta``, whichever is better (``cones``: the constraint whose dual value is read)."""

    def __init__(self, model: SharedNormModel, lam_p, cones, scale):
        super().__init__(model, lam_p, scale)
        self.cones = cones

    def _candidates(self, values):
        """``(U, alpha)`` from the cones' multiplier, and ``U = alpha V(beta) / (2 lam)``."""
        model, lam_v = self.model, float(self.lam_p.value)
        if self.cones.dual_value is None:
            return []
        d = model.X.shape[1]
        u0, u = (np.asarray(part, dtype=float) for part in self.cones.dual_value)
        a = scaled_alpha(4.0 * lam_v * (u0 + u[d]), model.A)
        Gv = _coefficients_value(values["beta"], model.leaf_pos, self.scale)
        Vv = _margin.weights_from_coefficients(Gv, model.X, model.Lam)          # (M, d)
        return [(-2.0 * u[:d].T, a), (a[:, None] * Vv / (2.0 * lam_v), a)]

    def _value(self, candidate):
        U, a = candidate
        model, lam_v = self.model, float(self.lam_p.value)
        v = model.augmented_objective(U, lam_v, alpha=a)
        if model.H.is_tree:  # the alpha step (20) for U is feasible too
            v = min(v, model.augmented_objective(U, lam_v))
        return v

    def objective(self, values):
        return min((self._value(c) for c in self._candidates(values)), default=float("inf"))

    def weights(self, values):
        U, a = min(self._candidates(values), key=self._value)
        values["alpha"] = a
        return _split_into(values, self.model, U)
