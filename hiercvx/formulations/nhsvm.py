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
  (:mod:`hiercvx.formulations._nhsvm_path_weights`); :func:`prepare` resolves ``alpha`` by the
  model's closed form on trees and by these programs elsewhere.
* :func:`primal` -- NHSVM (10) (= (11) = (12)) with the normalized attributes (5) and the
  normalized margin (9), or the variant (13).  Single-label: :func:`primal_from_model`, the
  pairwise model of :mod:`hiercvx.models.margin` over the leaves with margin rescaling.
  Multi-label: the exact cutting-plane loop :class:`CuttingPlaneProblem`
  (:mod:`hiercvx.formulations._nhsvm_cutting_plane`) with the decomposable loss of section 7.1.
* :func:`shared_primal` / :func:`shared_primal_from_model` -- the shared-norm SVM (14),
  jointly convex in ``U`` and ``alpha``.
* :func:`dual` / :func:`dual_from_model` -- the dual of single-label (10) / (13) in the leaf
  masses ``beta`` (recovery ``W = Lam^T Gc(beta)^T X / (2 lam)``); :func:`shared_dual` /
  :func:`shared_dual_from_model` -- the dual of (14), one rotated cone per node (recovery
  ``U_n = alpha_n V_n / (2 lam)``, ``alpha`` the cones' multipliers).
* :func:`alpha_step` -- problem (20) (its closed form on trees is
  :func:`hiercvx.models.nhsvm.optimal_alpha`).
* :func:`shared_norm` / :func:`shared_norm_problem` -- the structured shared norm (16) and,
  without a hierarchy, the shared norm (17); :func:`max_norm` and :func:`trace_norm` complete
  Theorem 2's chain.

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
                            check_hierarchy, check_path_weights, cover, leaf_paths, node_matrix,
                            node_scores, optimal_alpha, prepare_shared, primal_objective,
                            ratio_sum, scaled_alpha)

from ..reference import ReferenceProblem, check_size
from ._nhsvm_describe import (nhsvm_dual_formulation, nhsvm_formulation, shared_dual_formulation,
                              shared_formulation)
from ._nhsvm_cutting_plane import CuttingPlaneProblem, cutting_plane_formulation, cutting_plane_from_model
from ._nhsvm_path_weights import path_weights, path_weights_problem, prepare, resolve_alpha

__all__ = [
    "PATH_METHODS",
    "VARIANTS",
    "DAG_T",
    "path_weights",
    "path_weights_problem",
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

    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
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

    def current_lam() -> float:
        value = float(lam_p.value)
        if value <= 0:
            raise InputError(f"lam must be positive, got {value!r}")
        return value

    def augmented(values):
        return data.augmented_weights(values["W"], values.get("intercept"))

    def objective(values):
        return primal_objective(augmented(values), data, current_lam())

    def lower_bound(values, duals):
        # the rows' duals are masses on the leaves: projected and valued by the model
        return data.lower_bound(np.asarray(duals["margin"], dtype=float).reshape(n, q), current_lam())

    def infeasibility(values):
        Sv = _margin.class_scores(augmented(values), X_aug, Lam).ravel()
        resid = e - D @ Sv - R @ values["xi"]
        return max(0.0, float(resid.max()))

    label = "(10)" if data.variant == "nhsvm" else "(13)"
    return ReferenceProblem(
        problem, variables=variables, objective=objective, lower_bound=lower_bound,
        weights=lambda values: np.asarray(values["W"], dtype=float), constraints={"margin": margin},
        parameters={"lam": lam_p}, infeasibility=infeasibility,
        name=f"NHSVM primal {label}, single-label", build_time=time.perf_counter() - t0,
        formulation=nhsvm_formulation(data.variant),
        data={"nhsvm": data, "X": X, "X_augmented": X_aug, "H": H, "alpha": data.alpha, "Lam": Lam,
              "structural": data.structural, "margin_data": data.margin, "selection": (D, R, e),
              "fit_intercept": data.fit_intercept, "intercept_scaling": data.intercept_scaling})



# ====================================================================== shared-norm SVM (14)
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
    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
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

    def lam_value() -> float:
        value = float(lam_p.value)
        if value <= 0:
            raise InputError(f"lam must be positive, got {value!r}")
        return value

    def augmented(values):
        return model.augmented_weights(values["U"], values.get("intercept"))

    def objective(values):
        Uv = augmented(values)
        a = scaled_alpha(values["alpha"], A)
        norms = np.einsum("ij,ij->i", Uv, Uv)
        reg = ratio_sum(norms, a)
        if H.is_tree:
            # the solver's alpha can be ~0 on a node whose row is tiny but not 0 (ratio inf);
            # the alpha that is optimal for U is feasible too and gives a valid, finite value
            reg = min(reg, ratio_sum(norms, scaled_alpha(optimal_alpha(Uv, H), A)))
        return lam_value() * reg + float(model.hinge(Uv).sum())

    def lower_bound(values, duals):
        lam_v = lam_value()
        beta_full = np.asarray(duals["margin"], dtype=float).reshape(n, q)
        beta = _margin.project_dual(beta_full[md.pair_i, md.pair_ybar], md, 1.0)
        V = _margin.weights_from_coefficients(_margin.coefficients(beta, md), X_aug, Lam)
        need = np.einsum("ij,ij->i", V, V) / (4.0 * lam_v)
        mu = cover(duals["paths"], need, H, A)
        return float(md.pair_loss @ beta) - float(mu.sum())

    def infeasibility(values):
        Sv = _margin.class_scores(augmented(values), X_aug, Lam).ravel()
        a = np.asarray(values["alpha"], dtype=float)
        return max(0.0, float((e - D @ Sv - R @ values["xi"]).max()), float((A @ a).max()) - 1.0,
                   float(-a.min()))

    return ReferenceProblem(
        problem, variables=variables, objective=objective,
        lower_bound=lower_bound, weights=lambda values: np.asarray(values["U"], dtype=float),
        constraints={"margin": margin, "paths": paths}, parameters={"lam": lam_p},
        infeasibility=infeasibility, name="shared-norm SVM (14)", build_time=time.perf_counter() - t0,
        formulation=shared_formulation(),
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
    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
    XT = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
    V = XT @ Gc @ Lam                                   # (d, M): 2 lam W^T at the optimum
    problem = cp.Problem(cp.Maximize(lam_p * cp.sum(cp.multiply(e, beta)) - 0.25 * cp.sum_squares(V)),
                         rows)

    def augmented(values):
        Gv = _coefficients_value(values["beta"], model.leaf_pos, scale)
        return _margin.weights_from_coefficients(Gv, X, Lam) / (2.0 * float(lam_p.value))

    label = "(10)" if model.variant == "nhsvm" else "(13)"
    return ReferenceProblem(
        problem, variables={"beta": beta},
        objective=lambda values: primal_objective(augmented(values), model, float(lam_p.value)),
        lower_bound=lambda values, duals: model.lower_bound(values["beta"], float(lam_p.value)),
        weights=lambda values: _split_into(values, model, augmented(values)),
        constraints={"simplex": rows[0]}, parameters={"lam": lam_p},
        name=f"NHSVM dual of {label}, single-label", build_time=time.perf_counter() - t0,
        formulation=nhsvm_dual_formulation(model.variant),
        data={"nhsvm": model, "X": X, "H": H, "alpha": model.alpha, "Lam": Lam})


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
    ``beta`` with the cheapest covering ``mu`` (:meth:`SharedNormModel.lower_bound`).  With
    ``fit_intercept`` the same dual on ``X~ = [X, s]``; ``sol.weights`` has no bias column,
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
    lam_p = cp.Parameter(nonneg=True, value=lam, name="lam")
    XT = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
    V = XT @ Gc @ Lam                                   # (d, M): column n is V_n
    cover = 4 * lam_p * (A.T @ mu)                      # 4 lam (A^T mu)_n
    # ||V_n||^2 <= cover_n as the rotated cone ||(2 V_n, cover_n - 1)|| <= cover_n + 1, so
    # that the cone's multiplier (u0_n, u_n) carries the primal point: U_n = -2 u_n[:d],
    # alpha_n = 4 lam (u0_n + u_n[d])
    cones = cp.SOC(cover + 1, cp.vstack([2 * V, cp.reshape(cover - 1, (1, M), order="C")]), axis=0)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(e, beta)) - cp.sum(mu)), rows + [cones])

    def candidates(values):
        """``(U, alpha)`` from the cones' multiplier, and ``U = alpha V(beta) / (2 lam)``."""
        lam_v = float(lam_p.value)
        if cones.dual_value is None:
            return []
        u0, u = (np.asarray(part, dtype=float) for part in cones.dual_value)
        a = scaled_alpha(4.0 * lam_v * (u0 + u[d]), A)
        Gv = _coefficients_value(values["beta"], model.leaf_pos, scale)
        Vv = _margin.weights_from_coefficients(Gv, X, Lam)          # (M, d)
        return [(-2.0 * u[:d].T, a), (a[:, None] * Vv / (2.0 * lam_v), a)]

    def value(U, a):
        lam_v = float(lam_p.value)
        v = model.augmented_objective(U, lam_v, alpha=a)
        if H.is_tree:  # the alpha step (20) for U is feasible too
            v = min(v, model.augmented_objective(U, lam_v))
        return v

    def objective(values):
        return min((value(U, a) for U, a in candidates(values)), default=float("inf"))

    def weights(values):
        U, a = min(candidates(values), key=lambda c: value(*c))
        values["alpha"] = a
        return _split_into(values, model, U)

    return ReferenceProblem(
        problem, variables={"beta": beta, "mu": mu}, objective=objective,
        lower_bound=lambda values, duals: model.lower_bound(values["beta"], float(lam_p.value)),
        weights=weights, constraints={"simplex": rows[0]},
        parameters={"lam": lam_p}, name="shared-norm SVM (14), dual",
        build_time=time.perf_counter() - t0,
        formulation=shared_dual_formulation(),
        data={"X": X, "H": H, "leaf_pos": model.leaf_pos, "loss": model.loss, "Lam": Lam,
              "leaf_paths": A, "model": model})


# ====================================================================== alpha step (20)
def alpha_step(U, H: Hierarchy, max_size: int | None = None) -> ReferenceProblem:
    """Problem (20): ``min_alpha sum_n ||U_n||^2 / alpha_n`` s.t. ``sum_{n in anc(l)} alpha_n <= 1``
    for every leaf, ``alpha >= 0``; ``U`` ``(M, d)`` node weights (rows in ``H.nodes`` order).

    Trees and DAGs.  The optimum has ``alpha_n = sqrt(b_n / (A^T mu)_n)`` (``b_n = ||U_n||^2``),
    so it is declared in the well-scaled variable ``gamma = alpha / sqrt(b)`` over the nodes
    with ``b_n > 0``: ``min sum_n sqrt(b_n) / gamma_n`` s.t. ``A diag(sqrt(b)) gamma <= 1``
    (row norms of a solution span many orders of magnitude; in ``alpha`` itself Clarabel loses
    accuracy).  Nodes with ``U_n = 0`` get ``alpha_n = 0`` (any weight there only uses budget).
    Lower bound: ``2 sum_n sqrt(b_n (A^T mu)_n) - sum_l mu_l`` at the clipped path duals ``mu``
    (the Lagrangian minimized over ``alpha``).  ``sol.weights`` is ``alpha`` clipped and scaled
    to feasibility.  On trees the closed form is :func:`hiercvx.models.nhsvm.optimal_alpha`.
    """
    t0 = time.perf_counter()
    H = check_hierarchy(H)
    U = node_matrix(U, H)
    M = len(H)
    A = leaf_paths(H)
    check_size(M, A.shape[0] + M, A.nnz + 3 * M, max_size, what="the alpha step (20)")
    b = np.einsum("ij,ij->i", U, U)
    pos = np.flatnonzero(b > 0)
    root_b = np.sqrt(b[pos])
    gamma = cp.Variable(len(pos), name="gamma")
    if pos.size:
        scaled = sp.csr_matrix(A[:, pos].multiply(root_b[None, :]))
        paths = scaled @ gamma <= 1
        problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(root_b, cp.inv_pos(gamma)))),
                             [paths, gamma >= 0])
    else:  # U = 0: every feasible alpha is optimal, value 0
        paths = cp.Constant(np.zeros(A.shape[0])) <= 1
        problem = cp.Problem(cp.Minimize(0), [gamma >= 0] if gamma.size else [])

    def alpha_of(values) -> np.ndarray:
        a = np.zeros(M)
        if pos.size:
            a[pos] = root_b * np.maximum(np.asarray(values["gamma"], dtype=float), 0.0)
        return scaled_alpha(a, A)

    def objective(values):
        return ratio_sum(b, alpha_of(values))

    def lower_bound(values, duals):
        if not pos.size:
            return 0.0
        mu = np.maximum(np.asarray(duals["paths"], dtype=float), 0.0)
        c = A.T @ mu
        return 2.0 * float(np.sum(np.sqrt(b * c))) - float(mu.sum())

    return ReferenceProblem(
        problem, variables={"gamma": gamma} if pos.size else {}, objective=objective,
        lower_bound=lower_bound, weights=alpha_of,
        constraints={"paths": paths} if pos.size else {},
        name="shared-norm alpha step (20)", build_time=time.perf_counter() - t0,
        data={"H": H, "U": U, "squared_norms": b, "leaf_paths": A})


# ====================================================================== shared norms (16), (17)
def _check_matrix(U, name: str = "U") -> np.ndarray:
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric 2-D array") from None
    if U.ndim != 2 or 0 in U.shape:
        raise InputError(f"{name} must be a non-empty 2-D array, got shape {U.shape}")
    if not np.all(np.isfinite(U)):
        raise InputError(f"{name} has non-finite entries (NaN or inf)")
    return U


def _inverse_quadratic(U: np.ndarray, K: np.ndarray, rtol: float = 1e-12) -> float:
    """``tr(U^T K^+ U)`` for PSD ``K``, ``inf`` when ``U`` leaves the range of ``K``."""
    K = 0.5 * (K + K.T)
    s, Q = np.linalg.eigh(K)
    proj = Q.T @ U
    energy = np.einsum("ij,ij->i", proj, proj)
    small = s <= rtol * max(float(s.max()), 1e-300)
    if np.any(energy[small] > 1e-12 * max(1.0, float(energy.sum()))):
        return float("inf")
    return float(np.sum(energy[~small] / s[~small]))


def _psd_part(K: np.ndarray) -> np.ndarray:
    K = 0.5 * (K + K.T)
    s, Q = np.linalg.eigh(K)
    return (Q * np.maximum(s, 0.0)) @ Q.T


_RIDGES = (0.0, 1e-12, 1e-10, 1e-8, 1e-6)


def _structured_shared_norm(U: np.ndarray, H, max_size, t0: float) -> ReferenceProblem:
    """The structured shared norm (16) of :func:`shared_norm_problem` (``H`` given)."""
    r, c = U.shape
    H = check_hierarchy(H)
    A = leaf_paths(H)
    q, M = A.shape
    if r != q:
        raise InputError(f"U must have one row per leaf of H (in H.leaves order): {q} rows, got {r}")
    check_size(M * c + M, q * c + q + M, A.nnz * c + M * c + M, max_size,
               what="the structured shared norm (16)")
    W = cp.Variable((M, c), name="W")
    alpha = cp.Variable(M, name="alpha")
    total = cp.sum(cp.hstack([cp.quad_over_lin(W[k, :], alpha[k]) for k in range(M)]))
    classes = A @ W == U
    paths = A @ alpha <= 1
    problem = cp.Problem(cp.Minimize(total), [classes, paths, alpha >= 0])

    def objective(values):
        a = scaled_alpha(values["alpha"], A)
        return _inverse_quadratic(U, (A.multiply(a[None, :]) @ A.T).toarray())

    def lower_bound(values, duals):
        gamma = -np.asarray(duals["classes"], dtype=float)      # CVXPY adds +<dual, AW - U>
        V = A.T @ gamma
        need = np.einsum("ij,ij->i", V, V) / 4.0
        mu = cover(duals["paths"], need, H, A)
        return float(np.sum(gamma * U)) - float(mu.sum())

    return ReferenceProblem(
        problem, variables={"W": W, "alpha": alpha}, objective=objective, lower_bound=lower_bound,
        weights=lambda values: scaled_alpha(values["alpha"], A),
        constraints={"classes": classes, "paths": paths}, name="structured shared norm (16), squared",
        build_time=time.perf_counter() - t0, data={"U": U, "H": H, "leaf_paths": A})


def shared_norm_problem(U, H: Hierarchy | None = None, max_size: int | None = None) -> ReferenceProblem:
    """The squared shared norm as a convex program; ``sol.objective`` is ``||U||^2``.

    With ``H``: the structured shared norm (16), ``U`` ``(|L|, d)`` class weights, rows in
    ``H.leaves`` order.  With ``a_n^2 = alpha_n`` and node factors ``W_n = a_n V_n`` (16) is::

        ||U||_{s,G}^2 = min_{W, alpha} sum_n ||W_n||^2 / alpha_n   s.t.  A W = U,  A alpha <= 1,  alpha >= 0,

    declared with one ``quad_over_lin`` per node.  Objective recomputed as
    ``tr(U^T (A diag(alpha_hat) A^T)^{-1} U)`` (the best ``W`` for the returned, feasibility-
    scaled ``alpha_hat``); lower bound ``<Gamma, U> - 1^T mu`` with ``(A^T mu)_n >=
    ||(A^T Gamma)_n||^2 / 4`` (``mu`` repaired to cover).  ``sol.weights`` is ``alpha_hat``.

    Without ``H``: the shared norm (17) as the SDP (``r x c`` matrix ``U``)::

        ||U||_s^2 = min tr(Z_22)  s.t.  [[Z_11, U], [U^T, Z_22]] >= 0,  diag(Z_11) <= 1,

    (a factorization ``U = A V`` gives ``Z = [A; V^T][A; V^T]^T`` and back).  Objective
    recomputed as ``tr(U^T K^{-1} U)`` with ``K`` the returned ``Z_11`` made PSD with unit-bounded
    diagonal (plus a tiny ridge when singular); lower bound ``-<Gamma, U> - 1^T mu`` with ``mu``
    raised until ``diag(mu) - Gamma Gamma^T / 4 >= 0``.  ``sol.weights`` is that ``K``.
    """
    t0 = time.perf_counter()
    U = _check_matrix(U)
    r, c = U.shape
    if H is not None:
        return _structured_shared_norm(U, H, max_size, t0)
    check_size((r + c) ** 2, r * c + r, (r + c) ** 2 + r * c, max_size, what="the shared norm (17)")
    Z = cp.Variable((r + c, r + c), PSD=True, name="Z")
    coupling = Z[:r, r:] == U
    rows = cp.diag(Z[:r, :r]) <= 1
    problem = cp.Problem(cp.Minimize(cp.trace(Z[r:, r:])), [coupling, rows])

    def kernel(values) -> np.ndarray:
        K = _psd_part(np.asarray(values["Z"], dtype=float)[:r, :r])
        top = float(np.diag(K).max())
        return K / top if top > 1.0 else K

    def objective(values):
        K = kernel(values)
        return min(_inverse_quadratic(U, (1.0 - eps) * K + eps * np.eye(r)) for eps in _RIDGES)

    def lower_bound(values, duals):
        gamma = np.asarray(duals["coupling"], dtype=float)
        mu = np.maximum(np.asarray(duals["rows"], dtype=float), 0.0)
        slack = np.linalg.eigvalsh(np.diag(mu) - gamma @ gamma.T / 4.0).min()
        mu = mu + max(0.0, -float(slack))
        return -float(np.sum(gamma * U)) - float(mu.sum())

    return ReferenceProblem(
        problem, variables={"Z": Z}, objective=objective, lower_bound=lower_bound, weights=kernel,
        constraints={"coupling": coupling, "rows": rows}, name="shared norm (17), squared",
        build_time=time.perf_counter() - t0, data={"U": U})


def shared_norm(U, H: Hierarchy | None = None, *, solver: str | None = None,
                return_solution: bool = False, max_size: int | None = None):
    """``||U||_{s,G}`` (16) with a hierarchy (``U`` one row per leaf, in ``H.leaves`` order) or
    ``||U||_s`` (17) without; the square root of :func:`shared_norm_problem`'s certified optimum."""
    sol = shared_norm_problem(U, H, max_size=max_size).solve(solver=solver)
    value = float(np.sqrt(max(sol.objective, 0.0)))
    return (value, sol) if return_solution else value


def trace_norm(U) -> float:
    """``||U||_*``, the sum of singular values (Theorem 2)."""
    return float(np.linalg.svd(_check_matrix(U), compute_uv=False).sum())


def max_norm(U, *, solver: str | None = None, return_solution: bool = False):
    """``||U||_max = min_{A B^T = U} ||A||_{2->inf} ||B||_{2->inf}`` (Srebro & Shraibman), the SDP
    ``min t`` s.t. ``[[Z_11, U], [U^T, Z_22]] >= 0``, ``diag(Z) <= t``, certified.

    Objective recomputed from an exactly feasible ``Z`` (``Z_11`` made PSD plus a ridge,
    ``Z_22 = U^T Z_11^{-1} U``, and the mirror image); lower bound ``-<Gamma, U> / 1^T mu`` at
    the duals with ``mu`` raised until the dual matrix is PSD.
    """
    U = _check_matrix(U)
    r, c = U.shape
    Z = cp.Variable((r + c, r + c), PSD=True, name="Z")
    t = cp.Variable(name="t")
    coupling = Z[:r, r:] == U
    diagonal = cp.diag(Z) <= t
    problem = cp.Problem(cp.Minimize(t), [coupling, diagonal])

    def balanced(K: np.ndarray, V: np.ndarray) -> float:
        best = float("inf")
        for eps in _RIDGES[1:]:
            Kr = K + eps * np.eye(K.shape[0])
            other = V.T @ np.linalg.solve(Kr, V)
            best = min(best, max(float(np.diag(Kr).max()), float(np.diag(other).max())))
        return best

    def objective(values):
        Zv = _psd_part(np.asarray(values["Z"], dtype=float))
        return min(balanced(Zv[:r, :r], U), balanced(Zv[r:, r:], U.T))

    def lower_bound(values, duals):
        gamma = np.asarray(duals["coupling"], dtype=float)
        mu = np.maximum(np.asarray(duals["diagonal"], dtype=float), 0.0)
        C = np.diag(mu)
        C[:r, r:] = gamma / 2.0
        C[r:, :r] = gamma.T / 2.0
        mu = mu + max(0.0, -float(np.linalg.eigvalsh(C).min()))
        return -float(np.sum(gamma * U)) / float(mu.sum())

    prob = ReferenceProblem(problem, variables={"Z": Z, "t": t}, objective=objective,
                            lower_bound=lower_bound, weights=lambda values: values["Z"],
                            constraints={"coupling": coupling, "diagonal": diagonal},
                            name="max norm", data={"U": U})
    sol = prob.solve(solver=solver)
    return (sol.objective, sol) if return_solution else sol.objective
