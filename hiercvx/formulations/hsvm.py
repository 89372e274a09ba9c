"""The Cai–Hofmann hierarchical multi-label SVM (Cai thesis, chapters 3, 4 and 7).

Notation (thesis chapter 3 / 4): ``q`` classes (the leaves of the hierarchy), ``M`` nodes,
class attributes ``Lam`` ``(q, M)`` with ``Lam[y, v] = t_v(y)`` for ``v in anc(y)``
(thesis (3.7)), node weights ``W`` ``(M, d)`` (rows in ``H.nodes`` order), class weights
``U = Lam W`` ``(q, d)`` (thesis (3.9)), class scores ``S = X W^T Lam^T`` (thesis (3.8),
(3.10)).  A pair ``p = (i, y, ybar)`` joins a relevant class ``y in Y_i`` and an
irrelevant class ``ybar``; its joint feature is ``dPhi_p = (Lam_y - Lam_ybar) (x) x_i``
(thesis (4.10)) and its loss ``Delta_p = Delta(y, ybar)``.

Three declarations of the same optimum, each a :class:`~hiercvx.ReferenceProblem`:

* :func:`primal` -- thesis (4.10), variables ``W`` and one slack per example;
* :func:`dual` -- thesis (4.15) with kernels on inputs and classes ((4.16)-(4.17)),
  variables ``alpha`` (one per pair), recovery (4.12);
* :func:`class_form` -- thesis (4.48), variables ``U`` with the taxonomy-derived
  regularizer (4.40)-(4.46).

The inputs are validated once, by :func:`hiercvx.models.hsvm.prepare`, which returns the
:class:`~hiercvx.models.hsvm.HSVMModel`; each public builder prepares it and hands it to its
declaration ``primal_from_model`` / ``dual_from_model`` / ``class_form_from_model`` (which
validate nothing again).  ``fit_intercept`` / ``intercept_scaling`` add LIBLINEAR's
regularized bias, which the thesis' (4.10) does not have: a constant feature ``s`` appended to
``X`` (a bias ``b_v`` per node, ``values["intercept"]``, penalized by ``1/2 ||b||^2 / s^2``),
or ``k + s^2`` for other kernels (:class:`~hiercvx.models.margin.MarginModel`).  The hinge,
the dual objective and the certificates come from
:mod:`hiercvx.models.margin` (one model shared with Crammer–Singer and the fast solver,
:func:`hiercvx.solvers.working_set.solve`).  See ``formulations/hsvm.md``.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from .._sparse import expand_ranges
from .._validation import check_positive
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..kernels import check_psd, psd_factor
from ..models import margin as _margin
from ..models.hsvm import DEFAULT_ATTRIBUTES, DEFAULT_LOSS, HSVMModel
from ..models.hsvm import prepare as prepare_model
from ..models.margin import MarginData
from .._reference_scaling import rescales_features
from ..reference import ProblemSize, ReferenceProblem, check_size
from ._hsvm_describe import class_form_formulation, dual_formulation, primal_formulation

logger = logging.getLogger(__name__)

__all__ = [
    "HSVMModel",
    "primal",
    "primal_from_model",
    "primal_size",
    "dual",
    "dual_from_model",
    "dual_size",
    "class_form",
    "class_form_from_model",
    "node_to_class_weights",
    "class_to_node_weights",
    "taxonomy_regularizer",
    "class_regularizer",
    "pair_features",
    "dual_scores",
    "DEFAULT_LOSS",
    "DEFAULT_ATTRIBUTES",
    "primal_formulation",
    "dual_formulation",
    "class_form_formulation",
]

# ---------------------------------------------------------------------- sparse building blocks


def _row_kron(A, B, b_rows: np.ndarray) -> sp.csr_matrix:
    """Row-wise Kronecker product: row p is ``kron(A[p], B[b_rows[p]])`` (``(P, a*b)`` CSR).

    Column ``k*b + j`` holds ``A[p, k] * B[b_rows[p], j]``, i.e. it matches
    ``cvxpy.vec(V, order="C")`` of an ``(a, b)`` variable ``V``.
    """
    A = sp.csr_matrix(A)
    B = sp.csr_matrix(B)
    P, a = A.shape
    b = B.shape[1]
    A.sort_indices()
    ra = np.repeat(np.arange(P), np.diff(A.indptr))
    ca, va = A.indices, A.data
    brow = np.asarray(b_rows)[ra]
    counts = np.diff(B.indptr)[brow]
    pos = expand_ranges(B.indptr[brow], counts)
    rows = np.repeat(ra, counts)
    cols = np.repeat(ca.astype(np.int64), counts) * b + B.indices[pos]
    vals = np.repeat(va, counts) * B.data[pos]
    out = sp.csr_matrix((vals, (rows, cols)), shape=(P, a * b))
    out.sum_duplicates()
    return out


def _class_differences(data: MarginData) -> sp.csr_matrix:
    """``E`` ``(P, q)``: row p is ``e_y - e_ybar``."""
    P = data.n_pairs
    rows = np.concatenate([np.arange(P), np.arange(P)])
    cols = np.concatenate([data.pair_y, data.pair_ybar])
    vals = np.concatenate([np.ones(P), -np.ones(P)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(P, data.n_classes))


def pair_features(data: MarginData, X, Lam: np.ndarray) -> sp.csr_matrix:
    """The joint features ``dPhi_p = (Lam_y - Lam_ybar) (x) x_i`` as rows of a sparse
    ``(P, M*d)`` matrix (thesis (4.10)); ``dPhi @ vec(W, "C")`` is every pair's score margin
    ``S_iy - S_iybar``, and ``dPhi^T alpha = vec(W(alpha))`` is thesis (4.12)."""
    D = _class_differences(data) @ sp.csr_matrix(Lam)
    D.eliminate_zeros()
    return _row_kron(D, X, data.pair_i)


def _slack_coupling(data: MarginData) -> sp.csr_matrix:
    """``(P, n)``: the pair constraint's coefficient on ``xi_i`` (``1/Delta_p`` or 1)."""
    return sp.csr_matrix((data.pair_cost, (np.arange(data.n_pairs), data.pair_i)),
                         shape=(data.n_pairs, data.n_samples))


def _budget_matrix(data: MarginData) -> sp.csr_matrix:
    """``(n, P)``: ``(B alpha)_i = sum_{p of i} cost_p alpha_p`` (thesis (4.15))."""
    return sp.csr_matrix((data.pair_cost, (data.pair_i, np.arange(data.n_pairs))),
                         shape=(data.n_samples, data.n_pairs))


def _psd_factor(K: np.ndarray) -> np.ndarray:
    """``L`` with ``K = L L^T`` and as few columns as the numerical rank of the PSD ``K``."""
    return psd_factor(K, scale_floor=1e-300)


# ---------------------------------------------------------------------- size estimates
def _nnz(X) -> int:
    return int(X.nnz) if sp.issparse(X) else int(X.size)


def _pair_selection(data: MarginData) -> sp.csr_matrix:
    """``(P, n*q)``: row p picks ``S[i, y] - S[i, ybar]`` from ``vec(S, order="C")``."""
    P, q = data.n_pairs, data.n_classes
    rows = np.concatenate([np.arange(P), np.arange(P)])
    cols = np.concatenate([data.pair_i * q + data.pair_y, data.pair_i * q + data.pair_ybar])
    vals = np.concatenate([np.ones(P), -np.ones(P)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(P, data.n_samples * q))


def _pair_violation(S: np.ndarray, xi: np.ndarray, data: MarginData) -> float:
    """Largest violation of the pair constraints (and of ``xi >= 0``) at scores ``S``."""
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    viol = data.pair_offset - diff - data.pair_cost * xi[data.pair_i]
    return max(0.0, float(viol.max()), float(-xi.min()))


# ---------------------------------------------------------------------- primal (4.10)
@rescales_features({"W": -1, "xi": 0, "intercept": -1})
def primal(X, Y, H, C=1.0, loss=DEFAULT_LOSS, attributes=DEFAULT_ATTRIBUTES, classes=None,
           rescaling="slack", sample_weight=None, fit_intercept=False, intercept_scaling=1.0,
           max_size=None) -> ReferenceProblem:
    """Thesis (4.10), the hierarchical multi-label SVM in node weights::

        min_{W, xi}  1/2 ||W||_F^2 + C sum_i Cw_i xi_i
        s.t.  <W, dPhi_i(y, ybar)> >= 1 - xi_i / Delta(y, ybar)    (slack rescaling)
              <W, dPhi_i(y, ybar)> >= Delta(y, ybar) - xi_i         (margin rescaling)
              xi >= 0,     for all i, y in Y_i, ybar not in Y_i.

    ``<W, dPhi_i(y, ybar)> = S_iy - S_iybar`` with the class scores ``S = X (Lam W)^T``.  The
    declaration keeps the class weights ``U = Lam W`` and the scores ``S = X U^T`` as
    auxiliary variables (linked by equalities), so the pair constraints are one sparse
    selection ``Sel vec(S) + E_xi xi >= b`` with 3 nonzeros per pair instead of the
    ``|supp(Lam_y - Lam_ybar)| * d`` of ``dPhi_p`` (:func:`pair_features`).

    The pair constraints are written exactly as in (4.10), so their dual value *is* the
    thesis' ``alpha`` (4.11): the Lagrangian gives ``W = sum_p alpha_p dPhi_p`` (4.12) and
    ``sum_p alpha_p / Delta_p <= C_i`` (4.13).  (Written as ``Delta_p (1 - <W, dPhi_p>) <=
    xi_i`` the dual would be ``alpha_p / Delta_p`` instead.)  Lower bound: the dual objective
    (4.14) at the projected duals.  ``sol.weights`` is ``W`` ``(M, d)``, rows in ``H.nodes``
    order when the attributes come from ``H``.

    ``fit_intercept`` (not in the thesis; LIBLINEAR's regularized bias): a bias ``b_v`` per
    node, ``S = X (Lam W)^T + 1 (Lam b)^T`` and ``+ 1/2 ||b||^2 / s^2`` in the objective
    (``s = intercept_scaling``), i.e. (4.10) on ``[X, s]``; ``sol.values["intercept"]`` is
    ``b`` ``(M,)`` and ``sol.weights`` excludes it.
    """
    Cval = check_positive(C, "C")
    model = prepare_model(X, Y, H, loss=loss, attributes=attributes, classes=classes,
                          rescaling=rescaling, sample_weight=sample_weight,
                          fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return primal_from_model(model, C=Cval, max_size=max_size)


#: the names the size checks give the declarations (:func:`primal_size`, :func:`dual_size`)
PRIMAL_NAME = "the hierarchical SVM primal (4.10)"
DUAL_NAME = "the hierarchical SVM dual (4.15)"


def primal_size(model: HSVMModel) -> ProblemSize:
    """The estimated size of thesis (4.10) declared from ``model`` (:func:`primal_from_model`),
    without declaring it: what its ``max_size`` check compares."""
    X, Lam, data = model.X_features, model.Lam, model.data
    fit_intercept = model.fit_intercept
    n, d = X.shape
    q, M = Lam.shape
    P = data.n_pairs
    Lam_nnz = sp.csr_matrix(Lam).nnz
    bias_nnz = (Lam_nnz + n * q + M) if fit_intercept else 0
    return ProblemSize(M * (d + fit_intercept) + q * d + n * q + n, P + n + q * d + n * q,
                       M * d + (Lam_nnz + q) * d + (_nnz(X) + n) * q + 3 * P + n + bias_nnz)


def primal_from_model(model: HSVMModel, C=1.0, max_size=None) -> ReferenceProblem:
    """Thesis (4.10) (see :func:`primal`) declared from a validated :class:`HSVMModel` with the
    linear kernel and class attributes; ``C`` becomes a ``cp.Parameter`` (sweep it with
    ``problem.set(C=...)``).  Nothing is validated again."""
    if not model.node_weights:
        raise InputError("the primal (4.10) needs the linear kernel and class attributes; declare "
                         "the dual (4.15) for other kernels or a class kernel")
    t0 = time.perf_counter()
    X, Lam, data, H, rescaling = model.X_features, model.Lam, model.data, model.H, model.rescaling
    fit_intercept = model.fit_intercept
    n, d = X.shape
    q, M = Lam.shape
    Lam_sp = sp.csr_matrix(Lam)
    check_size(*dataclasses.astuple(primal_size(model)), max_size, what=PRIMAL_NAME)
    Sel, Exi, b = _pair_selection(data), _slack_coupling(data), data.pair_offset

    Cp = cp.Parameter(pos=True, value=float(C), name="C")
    W = cp.Variable((M, d), name="W")
    xi = cp.Variable(n, name="xi")
    U = cp.Variable((q, d), name="U")            # class weights, thesis (3.9)
    S = cp.Variable((n, q), name="S")            # class scores, thesis (3.10)
    variables = {"W": W, "xi": xi}
    regularizer = 0.5 * cp.sum_squares(W)
    scores = X @ U.T
    if fit_intercept:  # LIBLINEAR's bias: b_v = s * (weight of the constant feature s)
        node_bias = cp.Variable(M, name="intercept")
        scores = scores + np.ones((n, 1)) @ cp.reshape(Lam_sp @ node_bias, (1, q), order="C")
        regularizer = regularizer + (0.5 / model.intercept_scaling ** 2) * cp.sum_squares(node_bias)
        variables["intercept"] = node_bias
    pairs = Sel @ cp.vec(S, order="C") + Exi @ xi >= b
    nonneg = xi >= 0
    problem = cp.Problem(cp.Minimize(regularizer + Cp * (data.Cw @ xi)),
                         [pairs, nonneg, U == Lam_sp @ W, S == scores])

    routes = _PrimalRoutes(model, Cp)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"pairs": pairs, "xi_nonneg": nonneg},
        parameters={"C": Cp}, infeasibility=routes.infeasibility,
        name=f"hierarchical SVM primal (4.10), {rescaling} rescaling"
             + (", intercept" if fit_intercept else ""),
        build_time=time.perf_counter() - t0,
        formulation=primal_formulation(rescaling, fit_intercept),
        data={"X": X, "X_augmented": model.X, "H": H, "classes": model.classes, "Lam": Lam,
              "margin_data": data, "model": model, "fit_intercept": fit_intercept,
              "intercept_scaling": model.intercept_scaling})


class _PrimalRoutes:
    """The primal (4.10)'s numpy routes at the current ``C`` (a module-level class, so a
    :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, model: HSVMModel, Cp):
        self.model, self.Cp = model, Cp

    def objective(self, v):
        return self.model.objective(v["W"], float(self.Cp.value), intercept=v.get("intercept"))

    def lower_bound(self, v, duals):
        model = self.model
        alpha = _margin.project_dual(duals["pairs"], model.data, float(self.Cp.value))
        return _margin.dual_objective_linear(alpha, model.X, model.data)  # with the bias column

    def infeasibility(self, v):
        model = self.model
        return _pair_violation(model.scores(v["W"], model.X_features, v.get("intercept")), v["xi"],
                               model.data)

    @staticmethod
    def weights(v):
        return v["W"]


# ---------------------------------------------------------------------- dual (4.15)
@rescales_features({"alpha": -2}, multipliers=("alpha",))
def dual(X, Y, H, C=1.0, kernel="linear", class_kernel=None, loss=DEFAULT_LOSS,
         attributes=DEFAULT_ATTRIBUTES, classes=None, rescaling="slack", sample_weight=None,
         sigma=None, fit_intercept=False, intercept_scaling=1.0,
         max_size=None) -> ReferenceProblem:
    """Thesis (4.15) with input and class kernels ((4.16)-(4.17))::

        max_alpha  sum_p b_p alpha_p - 1/2 tr(G(alpha)^T K G(alpha) Q)
        s.t.  alpha >= 0,   sum_{p of i} cost_p alpha_p <= C Cw_i

    ``b_p = 1, cost_p = 1/Delta_p`` (slack rescaling, (4.15)) or ``b_p = Delta_p, cost_p =
    1`` (margin rescaling); ``G(alpha)`` ``(n, q)`` collects ``+alpha_p`` at ``(i, y)`` and
    ``-alpha_p`` at ``(i, ybar)``; ``K`` is the input kernel, ``Q = Lam Lam^T`` or
    ``class_kernel``.  The quadratic is declared PSD-safely through factors ``K = L_K L_K^T``,
    ``Q = L_Q L_Q^T`` (``L_K = X`` for the linear kernel when ``d <= n``) and two auxiliary
    variables linked by equalities, ``G = G(alpha)`` and ``T = L_K^T G``:
    ``tr(G^T K G Q) = ||T L_Q||_F^2``.  (Folding them into one ``(P, rank K * rank Q)`` matrix
    would be dense and several times slower to solve.)  With a non-linear kernel the Hessian
    ``Q (x) K`` is dense in the ``n q`` coefficients, so the solver factors a dense
    ``(n q) x (n q)`` block: practical up to ``n q`` of a few thousand; the size estimate
    counts that block.

    ``kernel``: ``"linear"``, ``"rbf"`` (median heuristic unless ``sigma``), a callable
    ``k(A, B)``, ``"precomputed"`` (then ``X`` is the ``(n, n)`` Gram matrix), or a
    :class:`~hiercvx.kernels.Kernel` already resolved by ``make_kernel``.
    ``class_kernel``: a PSD ``(q, q)`` array or a callable ``(H, classes) -> array``.

    Recovery: ``sol.weights`` is the node-weight matrix ``W = Lam^T G^T X`` (4.12) for the
    linear kernel with attributes, otherwise the coefficient matrix ``G`` (scores of new
    points: :func:`dual_scores`).  Certificate: objective = primal objective at the
    recovered ``G``; lower bound = (4.14) at the projected ``alpha``.

    ``fit_intercept``: the dual of :func:`primal` with LIBLINEAR's bias, i.e. (4.15) with the
    kernel of ``[X, s]`` (``K + s^2``; ``k + s^2`` for other kernels).  For the linear kernel
    with attributes the node biases are recovered with ``W`` by (4.12),
    ``b = s^2 Lam^T G^T 1`` (``sol.values["intercept"]``, linked to ``G`` by an equality);
    otherwise they stay in the kernel and :func:`dual_scores` adds them.
    """
    Cval = check_positive(C, "C")
    model = prepare_model(X, Y, H, loss=loss, attributes=attributes, classes=classes,
                          rescaling=rescaling, sample_weight=sample_weight, kernel=kernel,
                          sigma=sigma, class_kernel=class_kernel, fit_intercept=fit_intercept,
                          intercept_scaling=intercept_scaling)
    return dual_from_model(model, C=Cval, max_size=max_size)


def dual_size(model: HSVMModel) -> ProblemSize:
    """The estimated size of thesis (4.15) declared from ``model`` (:func:`dual_from_model`),
    without declaring it: what its ``max_size`` check compares."""
    X, data = model.X, model.data
    n, q, P = X.shape[0], data.n_classes, data.n_pairs
    use_features = _factors_by_features(model)
    rK = X.shape[1] if use_features else n
    nnz_LK = _nnz(X) if use_features else n * n
    # a dense Gram factor couples every (example, class) coefficient: the solver factors a
    # dense (n q) x (n q) block, which dominates time and memory -- count it
    dense_fill = 0 if use_features else (n * q) ** 2 // 2
    return ProblemSize(P + n * q + rK * q, n + n * q + rK * q,
                       3 * P + n * q + (nnz_LK + rK) * q + rK * q * q + dense_fill)


def _factors_by_features(model: HSVMModel) -> bool:
    """Whether the dual's quadratic is factored by the features themselves (linear kernel,
    ``d <= n``)."""
    return model.kernel.is_linear and model.X.shape[1] <= model.X.shape[0]


def _dual_inputs(model: HSVMModel, max_size):
    """Whether the dual's quadratic is factored by the features themselves (linear kernel,
    ``d <= n``) and the Gram matrix (None when the features serve); refuses a problem over
    ``max_size`` and a precomputed or callable kernel that is not PSD."""
    X, kern = model.X, model.kernel
    use_features = _factors_by_features(model)
    check_size(*dataclasses.astuple(dual_size(model)), max_size, what=DUAL_NAME)
    if model.precomputed:
        check_psd(X, what="precomputed kernel matrix")
    # the Gram matrix: needed for a factor (non-linear or d > n) or for the certificate
    K = None
    if not (use_features and model.node_weights):
        K = model.K
        if kern.name == "callable":
            check_psd(K, what="kernel matrix of the callable kernel")
    return use_features, K


def dual_from_model(model: HSVMModel, C=1.0, max_size=None) -> ReferenceProblem:
    """Thesis (4.15) (see :func:`dual`) declared from a validated :class:`HSVMModel` (any
    kernel, class attributes or class kernel); ``C`` becomes a ``cp.Parameter``.  The only
    check left here is that a precomputed or callable kernel's Gram matrix is PSD (the
    factor below needs it)."""
    t0 = time.perf_counter()
    X, data, kern, H, rescaling = model.X, model.data, model.kernel, model.H, model.rescaling
    n, q = X.shape[0], data.n_classes
    use_features, K = _dual_inputs(model, max_size)
    node_weights = model.node_weights
    LK = X if use_features else _psd_factor(K)
    LQ = _psd_factor(data.Q)
    Bm = _budget_matrix(data)
    b = data.pair_offset

    Cp = cp.Parameter(pos=True, value=float(C), name="C")
    alpha = cp.Variable(data.n_pairs, name="alpha")
    G_var = cp.Variable((n, q), name="G")         # expansion coefficients G(alpha), (4.12)
    T_var = cp.Variable((LK.shape[1], q), name="T")  # L_K^T G
    nonneg = alpha >= 0
    budget = Bm @ alpha <= Cp * data.Cw
    links = [cp.vec(G_var, order="C") == _pair_selection(data).T @ alpha, T_var == LK.T @ G_var]
    variables = {"alpha": alpha}
    if node_weights and model.fit_intercept:
        # (4.12) for the constant feature s: b = s * (s Lam^T G^T 1), an auxiliary variable
        node_bias = cp.Variable(data.Lam.shape[1], name="intercept")
        links.append(node_bias == model.intercept_scaling ** 2
                     * (sp.csr_matrix(data.Lam).T @ cp.sum(G_var, axis=0)))
        variables["intercept"] = node_bias
    problem = cp.Problem(cp.Maximize(b @ alpha - 0.5 * cp.sum_squares(T_var @ LQ)),
                         [nonneg, budget, *links])

    routes = _DualRoutes(model, K, Bm, Cp)
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints={"alpha_nonneg": nonneg, "budget": budget},
        parameters={"C": Cp}, infeasibility=routes.infeasibility,
        name=f"hierarchical SVM dual (4.15), {model.input_kernel.name} kernel, {rescaling} rescaling"
             + (", intercept" if model.fit_intercept else ""),
        formulation=dual_formulation(rescaling, model.fit_intercept,
                                     bias=node_weights and model.fit_intercept),
        build_time=time.perf_counter() - t0,
        data={"X": model.X_features, "X_augmented": X, "H": H, "classes": model.classes,
              "Lam": data.Lam, "Q": data.Q, "K": K, "model": model,
              "kernel": kern, "margin_data": data, "weights": "W" if node_weights else "G"})


class _DualRoutes:
    """The dual (4.15)'s numpy routes at the current ``C`` (``K`` None when the certificate
    works on the features; ``Bm`` the budget matrix; a module-level class, so a
    :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, model: HSVMModel, K, Bm, Cp):
        self.model, self.K, self.Bm, self.Cp = model, K, Bm, Cp

    def objective(self, v):
        model, data, C = self.model, self.model.data, float(self.Cp.value)
        G = _margin.coefficients(v["alpha"], data)
        if model.node_weights:
            W = _margin.weights_from_coefficients(G, model.X, data.Lam)
            return _margin.primal_objective(W, model.X, data, C)
        return _margin.kernel_objective(G, self.K, data, C)

    def lower_bound(self, v, duals):
        model, data = self.model, self.model.data
        a = _margin.project_dual(v["alpha"], data, float(self.Cp.value))
        if model.node_weights:
            return _margin.dual_objective_linear(a, model.X, data)
        return _margin.dual_objective(a, self.K, data)

    def weights(self, v):  # (4.12); with a bias its column split off (values["intercept"])
        model, data = self.model, self.model.data
        G = _margin.coefficients(v["alpha"], data)
        if not model.node_weights:
            return G
        return model.split_weights(_margin.weights_from_coefficients(G, model.X, data.Lam))[0]

    def infeasibility(self, v):
        a = v["alpha"]
        over = self.Bm @ a - float(self.Cp.value) * self.model.data.Cw
        return max(0.0, float(-a.min()), float(over.max()))


def dual_scores(problem: ReferenceProblem, solution, X_new) -> np.ndarray:
    """Class scores ``(m, q)`` of new points for a solved :func:`dual`: ``k(X_new, X) G Q``
    (with ``fit_intercept`` the kernel of the bias, ``k + s^2``).

    With ``kernel="precomputed"`` pass the ``(m, n)`` kernel rows between the new and the
    training points (without the ``s^2``).
    """
    data = problem.data["margin_data"]
    G = _margin.coefficients(solution.values["alpha"], data)
    Knew = problem.data["model"].kernel_rows(X_new)
    if Knew.shape[1] != data.n_samples:
        raise InputError(f"the kernel rows must have one column per training point ({data.n_samples}), "
                         f"got shape {Knew.shape}")
    return Knew @ G @ data.Q


# ---------------------------------------------------------------------- class form (4.48)
def node_to_class_weights(W: np.ndarray, Lam: np.ndarray) -> np.ndarray:
    """Class weights ``U = Lam W`` ``(q, d)``, thesis (3.9): ``U_y = sum_z lambda_z(y) w_z``."""
    return np.asarray(Lam, dtype=float) @ np.asarray(W, dtype=float)


def class_to_node_weights(U: np.ndarray, Lam: np.ndarray) -> np.ndarray:
    """The minimum-norm node weights with ``Lam W = U``: ``W = Lam^+ U = Lam^T (Lam Lam^T)^+ U``.

    Exact (``Lam W = U``) whenever the columns of ``U`` lie in the range of ``Lam`` -- always
    when ``Lam`` has full row rank ``q`` (every tree/DAG scheme here: each leaf class has its
    own node with ``lambda_y(y) > 0``).  Since the optimal node weights ``W* = Lam^T G^T X``
    (4.12) lie in the row space of ``Lam``, ``class_to_node_weights(Lam @ W*, Lam) == W*``.
    """
    Lam = np.asarray(Lam, dtype=float)
    return np.linalg.pinv(Lam) @ np.asarray(U, dtype=float)


def taxonomy_regularizer(Lam: np.ndarray, class_columns, return_parts: bool = False):
    """The class-weight regularizer of thesis (4.40)-(4.46): ``R`` ``(q, q)`` with
    ``||W*||^2 = tr(U^T R U)`` for the best node weights of class weights ``U``.

    ``class_columns[y]`` is the column of class y's own node.  With ``D = diag(lambda_y(y))``
    and ``Lam_O`` the other (interior) columns, thesis (4.40) is ``A = I + Lam_O^T D^-2 Lam_O``,
    (4.42) is ``u = B^T U`` with ``B = D^-2 Lam_O``, and (4.44)/(4.46a) is
    ``G* = tr(U^T D^-2 U) - tr(u^T A^-1 u)``, i.e. ``R = D^-2 - B A^-1 B^T`` -- Woodbury's
    formula for ``(Lam Lam^T)^-1``.  Needs ``lambda_y(y) > 0`` and ``lambda_{y'}(y) = 0`` for
    classes ``y' != y`` (classes are leaves); otherwise use :func:`class_regularizer`.
    ``return_parts`` also returns ``(A, B, D)``.
    """
    Lam = np.asarray(Lam, dtype=float)
    q, M = Lam.shape
    cols = np.asarray(class_columns, dtype=np.int64)
    if cols.shape != (q,) or len(set(cols.tolist())) != q:
        raise InputError(f"class_columns must give {q} distinct node columns")
    dvals = Lam[np.arange(q), cols]
    if np.any(dvals <= 0):
        raise InputError("the taxonomy regularizer (4.46) needs lambda_y(y) > 0 for every class")
    own = Lam[:, cols].copy()
    np.fill_diagonal(own, 0.0)
    if np.any(own != 0):
        raise InputError("the taxonomy regularizer (4.46) needs lambda_{y'}(y) = 0 between classes "
                         "(thesis 4.4: no class is represented by another class's node)")
    other = np.setdiff1d(np.arange(M), cols)
    LamO = Lam[:, other]
    Dm2 = 1.0 / dvals ** 2
    B = Dm2[:, None] * LamO                      # (4.42): u = B^T U
    A = np.eye(len(other)) + LamO.T @ B          # (4.40)
    R = np.diag(Dm2) - B @ np.linalg.solve(A, B.T)  # (4.44)
    R = 0.5 * (R + R.T)
    return (R, A, B, np.diag(dvals)) if return_parts else R


def class_regularizer(Lam: np.ndarray) -> np.ndarray:
    """``(Lam Lam^T)^+``: the regularizer for any attributes (equal to
    :func:`taxonomy_regularizer` whenever that one applies); with a rank-deficient ``Lam``
    the class weights must also stay in the range of ``Lam`` (see :func:`class_form`)."""
    Lam = np.asarray(Lam, dtype=float)
    return np.linalg.pinv(Lam @ Lam.T, hermitian=True)


def _class_columns(H: Hierarchy, classes, Lam):
    if Lam.shape[1] != len(H):
        return None
    return H.indices(classes)


def class_form(X, Y, H, C=1.0, loss=DEFAULT_LOSS, attributes=DEFAULT_ATTRIBUTES, classes=None,
               rescaling="slack", sample_weight=None, fit_intercept=False, intercept_scaling=1.0,
               max_size=None) -> ReferenceProblem:
    """Thesis (4.48), the same SVM in class weights ``U = Lam W`` ``(q, d)``::

        min_{U, xi}  1/2 tr(U^T R U) + C sum_i Cw_i xi_i
        s.t.  <U_y - U_ybar, x_i> >= 1 - xi_i / Delta(y, ybar)   (or >= Delta - xi_i),  xi >= 0

    with the taxonomy-derived regularizer ``R`` of (4.40)-(4.46)
    (:func:`taxonomy_regularizer`; ``(Lam Lam^T)^+`` when its assumptions fail, plus
    ``U`` restricted to the range of ``Lam`` when ``Lam`` is rank deficient).  Declared
    PSD-safely as ``||R^{1/2} U||_F^2``.  Same optimum as :func:`primal`.

    ``sol.weights`` are the node weights recovered by :func:`class_to_node_weights`;
    ``sol.values["U"]`` the class weights.  The recomputed objective is the node-weight
    objective (4.10) at the recovered weights, and the lower bound the dual (4.14) at the
    projected pair duals -- neither uses ``R``, so a wrong regularizer cannot certify.

    ``fit_intercept``: the same on ``[X, s]`` (``U`` ``(q, d + 1)``, its last column the class
    biases over ``s``); ``sol.weights`` excludes the bias column and ``sol.values["intercept"]``
    holds the node biases ``b = s * (Lam^+ U)[:, -1]``, as for :func:`primal`.
    """
    Cval = check_positive(C, "C")
    model = prepare_model(X, Y, H, loss=loss, attributes=attributes, classes=classes,
                          rescaling=rescaling, sample_weight=sample_weight,
                          fit_intercept=fit_intercept, intercept_scaling=intercept_scaling)
    return class_form_from_model(model, C=Cval, max_size=max_size)


def class_form_from_model(model: HSVMModel, C=1.0, max_size=None) -> ReferenceProblem:
    """Thesis (4.48) (see :func:`class_form`) declared from a validated :class:`HSVMModel`
    with the linear kernel and class attributes; ``C`` becomes a ``cp.Parameter``.  With a
    bias the class weights are over the model's ``[X, s]``."""
    if not model.node_weights:
        raise InputError("the class form (4.48) needs the linear kernel and class attributes")
    t0 = time.perf_counter()
    X, Lam, data, H, rescaling = model.X, model.Lam, model.data, model.H, model.rescaling
    n, d = X.shape
    q = data.n_classes
    P = data.n_pairs
    check_size(q * d + n * q + n, P + n + n * q, q * q * d + (_nnz(X) + n) * q + 3 * P + n, max_size,
               what="the hierarchical SVM class form (4.48)")

    Q = Lam @ Lam.T
    s, V = np.linalg.eigh(0.5 * (Q + Q.T))
    tol = 1e-10 * max(float(s.max()), 1e-300)
    null = V[:, s <= tol].T                      # left null space of Lam
    cols = _class_columns(H, model.classes, Lam)
    how = "pseudo-inverse (Lam Lam^T)^+"
    R = None
    if cols is not None and null.shape[0] == 0:
        try:
            R = taxonomy_regularizer(Lam, cols)
            how = "taxonomy regularizer (4.40)-(4.46)"
        except InputError as exc:
            logger.info("class_form: %s; using the pseudo-inverse of Lam Lam^T", exc)
    if R is None:
        R = class_regularizer(Lam)
    logger.debug("class_form regularizer: %s (rank deficiency %d)", how, null.shape[0])
    Rh = _psd_factor(R).T                        # R = Rh^T Rh
    Sel, Exi, b = _pair_selection(data), _slack_coupling(data), data.pair_offset

    Cp = cp.Parameter(pos=True, value=float(C), name="C")
    U = cp.Variable((q, d), name="U")
    xi = cp.Variable(n, name="xi")
    S = cp.Variable((n, q), name="S")            # class scores X U^T, linked by an equality
    pairs = Sel @ cp.vec(S, order="C") + Exi @ xi >= b
    nonneg = xi >= 0
    cons = [pairs, nonneg, S == X @ U.T]
    if null.shape[0]:
        cons.append(null @ U == 0)               # U = Lam W must be attainable
    variables = {"U": U, "xi": xi}
    if model.fit_intercept:  # the node biases of the recovered W~ = Lam^+ U, an auxiliary variable
        node_bias = cp.Variable(Lam.shape[1], name="intercept")
        cons.append(node_bias == model.intercept_scaling * (np.linalg.pinv(Lam) @ U[:, -1]))
        variables["intercept"] = node_bias
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(Rh @ U) + Cp * (data.Cw @ xi)), cons)

    routes = _ClassFormRoutes(model, Cp)
    return ReferenceProblem(
        problem, variables=variables, infeasibility=routes.infeasibility, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights,
        constraints={"pairs": pairs, "xi_nonneg": nonneg}, parameters={"C": Cp},
        name=f"hierarchical SVM class form (4.48), {rescaling} rescaling",
        formulation=class_form_formulation(rescaling, rank_deficient=bool(null.shape[0]),
                                           fit_intercept=model.fit_intercept),
        build_time=time.perf_counter() - t0,
        data={"X": model.X_features, "X_augmented": X, "H": H, "classes": model.classes, "Lam": Lam,
              "R": R, "regularizer": how, "model": model, "margin_data": data})


class _ClassFormRoutes:
    """The class form (4.48)'s numpy routes at the current ``C`` (a module-level class, so a
    :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, model: HSVMModel, Cp):
        self.model, self.Cp = model, Cp

    def objective(self, v):
        model = self.model
        return _margin.primal_objective(class_to_node_weights(v["U"], model.Lam), model.X,
                                        model.data, float(self.Cp.value))

    def lower_bound(self, v, duals):
        model = self.model
        alpha = _margin.project_dual(duals["pairs"], model.data, float(self.Cp.value))
        return _margin.dual_objective_linear(alpha, model.X, model.data)

    def infeasibility(self, v):
        return _pair_violation(np.asarray(self.model.X @ v["U"].T), v["xi"], self.model.data)

    def weights(self, v):
        return self.model.split_weights(class_to_node_weights(v["U"], self.model.Lam))[0]
