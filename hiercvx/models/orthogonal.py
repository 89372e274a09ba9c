"""The model of orthogonal transfer (Zhou, Xiao and Wu, 2011) and of its four baselines.

Source: Dengyong Zhou, Lin Xiao, Mingrui Wu, *Hierarchical Classification via Orthogonal
Transfer*, ICML 2011 (MSR-TR-2011-54); derivations in ``formulations/orthogonal.md``.
Notation of the paper: non-root nodes ``Y = {1..m}`` (here ``H.nodes[1:]``, in ``H.nodes``
order), weight vectors ``w_i``, ``A^+(i)`` the ancestors of ``i`` without the root but with
``i``, ``S(i)`` the siblings, ``D^+(i)`` the descendants with ``i``.

Every problem of the paper is the pairwise hinge of :mod:`hiercvx.models.margin` with its own
pairs and a regularizer of the form ``R(W) = 1/2 tr(W^T S(W) W)``:

* orthogonal transfer (4): Omega (5) ``= 1/2 sum_ij K_ij |<w_i, w_j>|``, ``S(W) = K o
  sign(W W^T)`` (Theorem 4), convex under Theorem 1, K by heuristic (6) by default;
* FLATMULT (12) over the leaves, HIERMULT ((12) at every internal node), TREELOSS: ``S = I``;
  TRANSFER: ``S = I + E^T E`` (:func:`transfer_matrix`).

:func:`prepare` validates ``(X, y, H)`` and K once and returns a :class:`PairModel`: the pairs
of the hinge, the regularizer, LIBLINEAR's bias feature (``fit_intercept``: the problem on
``[X, s]``, :mod:`hiercvx.bias`), the primal objective (7) at given weights, the Lagrangian lower
bound ``sum alpha - 1/2 tr(U(alpha)^T S^{-1} U(alpha))`` at a dual point (valid for any
feasible ``alpha`` and any ``S`` in the box ``S_ii = K_ii, |S_ij| <= K_ij`` when the comparison
matrix is PSD), class scores and the most violated pair of every slack.  The CVXPY
declarations (:mod:`hiercvx.formulations.orthogonal`), dual coordinate ascent
(:mod:`hiercvx.solvers.orthogonal_dual`) and RDA (:mod:`hiercvx.solvers.rda`) are built on it.
:func:`~hiercvx.models.orthogonal.reduce_model` restricts a model to the weight rows its margin
rows use and merges interchangeable negatives (the proof that the optimum and its certificates lift
exactly is its docstring): a wide or deep tree costs what its labelled paths hold.  Heuristic (6)
is built sparse (:meth:`PairModel.sparse_K`), and large class sets get sparse class data.  Also
here: Theorem 1 (:func:`check_convexity`), Corollary 2 (:func:`strong_convexity`), heuristic (6)
(:func:`heuristic_K`), the classifiers (1) (:func:`predict_top_down`) and (2)
(:func:`predict_flat`) and the paper's error rule (:func:`top_down_errors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_features
from ..bias import append_constant, bias_scaling, join_bias, split_bias
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from . import margin
from ._base import Model, Variable
from ._orthogonal_k import (
    NonConvexKError,
    block_cholesky_solve,
    blockwise_eigenvalue,
    check_convexity,
    check_tree,
    comparison_matrix,
    coupled_blocks,
    edge_incidence,
    half_inverse_quadratic,
    heuristic_K,
    heuristic_K_sparse,
    omega,
    omega_subgradient,
    strong_convexity,
    transfer_matrix,
    tree_distance,
    validate_K,
)
from ._orthogonal_pairs import flat_pairs, label_indices, path_pairs, treeloss_pairs
from ._orthogonal_reduce import ReducedModel, reduce_model
from .margin import MarginData

__all__ = [
    "METHODS", "EQUATIONS", "PairModel", "prepare", "NonConvexKError", "heuristic_K", "comparison_matrix",
    "check_convexity", "strong_convexity", "validate_K", "check_tree", "omega", "omega_subgradient",
    "edge_incidence", "transfer_matrix", "coupled_blocks", "blockwise_eigenvalue",
    "block_cholesky_solve", "tree_distance", "label_indices", "half_inverse_quadratic",
    "quadratic_lower_bound", "ReducedModel", "reduce_model", "predict_top_down",
    "predict_flat", "top_down_errors",
]

#: The problems :func:`prepare` builds: (4) and the four baselines of section 5.
METHODS = ("orthogonal", "transfer", "hiermult", "flatmult", "treeloss")

EQUATIONS = {
    "orthogonal": {"primal": "(4)", "regularizer": "(5)", "convexity": "Theorem 1",
                   "strong convexity": "Corollary 2", "K": "(6)", "unconstrained": "(7)",
                   "subgradient": "Theorem 4", "fast solver": "Algorithm 1"},
    "flatmult": {"primal": "(12) over the leaves", "fast solver": "Algorithm 1"},
    "hiermult": {"primal": "(12) at every internal node", "fast solver": "Algorithm 1"},
    "transfer": {"primal": "section 5 (TRANSFER)", "fast solver": "Algorithm 1"},
    "treeloss": {"primal": "section 5 (TREELOSS), parametrization (3)", "fast solver": "Algorithm 1"},
}

# =============================================================================== the model
@dataclass
class PairModel(Model):
    """One of the five problems on validated data: the pairs of its hinge and its regularizer.

    ``data`` holds the pairs ``(slack s, positive class, negative class)``, their losses
    (``Delta``, 1 except TREELOSS) and the per-slack weights ``Cw`` of C (``1/N``, or
    ``1/N_j`` for HIERMULT's node problems); classes are ``H.nodes`` (``Lam = I``) except for
    TREELOSS (``Lam`` = ancestor indicators of its classes, root column zero).  Slack ``s``
    belongs to example ``slack_example[s]`` (one slack per example except HIERMULT, which has
    one per example and internal node on its path).  ``var_nodes``: the nodes that carry a
    weight vector; every other row of the ``(n_nodes, n_features)`` weights is zero.
    ``K``: (4)'s validated matrix over ``H.nodes[1:]`` (orthogonal only; ``K_alpha`` the
    alpha of heuristic (6) after any lowering, ``None`` for an explicit K); ``S``: the fixed
    regularizer matrix of the baselines over ``var_nodes`` (``None`` for orthogonal).  In the
    reduced model of :func:`~hiercvx.models.orthogonal.reduce_model`, ``var_nodes`` is a subset and
    K is over it.

    Intercept (LIBLINEAR's regularized bias, :mod:`hiercvx.bias`): with ``fit_intercept``,
    ``X`` is ``[X_features, s]`` (``s = intercept_scaling``), the features every solver and
    certificate sees, so node ``i``'s augmented weight ``w~_i = [w_i, b_i / s]`` carries the
    bias ``b_i`` under the same regularizer (inside Omega (5), under K, for (4)).  The
    *augmented* weights ``(n_nodes, X.shape[1])`` are what :meth:`full_weights`,
    :meth:`slacks`, :meth:`hinge`, :meth:`regularizer`, :meth:`violation` and
    :meth:`node_gradient` take; the public :meth:`objective` and :meth:`scores` take the
    weights of the features as given ``(n_nodes, n_features)`` and the ``intercept``
    ``(n_nodes,)`` (:meth:`augmented_weights`, :meth:`split_weights` convert).
    """

    method: str = field()  # a field without default (Model has a class-level default)
    H: Hierarchy
    X: object
    y_index: np.ndarray
    data: MarginData
    slack_example: np.ndarray
    var_nodes: np.ndarray
    classes: np.ndarray  # node indices of the classes (rows of Lam)
    X_slacks: object = None  # the feature row of every slack (X when one slack per example)
    K: np.ndarray | None = None
    K_alpha: float | None = None
    S: np.ndarray | None = None
    X_features: object = None  # the features as given (X without the bias column)
    fit_intercept: bool = False
    intercept_scaling: float = 1.0
    K_sparse: sp.csr_matrix | None = field(default=None, repr=False, compare=False)  # K as CSR

    def __post_init__(self):
        if self.X_features is None:
            self.X_features = self.X
        if self.X_slacks is None:
            same = np.array_equal(self.slack_example, np.arange(self.X.shape[0]))
            self.X_slacks = self.X if same else self.X[self.slack_example]

    @property
    def equations(self) -> dict:
        return EQUATIONS[self.method]

    def sparse_K(self) -> sp.csr_matrix | None:
        """K (4) as a CSR matrix, formed once (heuristic (6) builds it sparse: a wide or deep
        tree's solvers never convert the dense ``(m, m)`` K); None for the baselines."""
        if self.K is None:
            return None
        if self.K_sparse is None:
            self.K_sparse = sp.csr_matrix(self.K)
        return self.K_sparse

    @property
    def variables(self) -> dict:
        v = {"W": Variable("(n_nodes, n_features)", "weight vectors in H.nodes order, zero outside "
                           "var_nodes, without the bias column" + (" (TREELOSS: the increments u of (3))"
                                                                    if self.method == "treeloss" else "")),
             "xi": Variable("(n_slacks,)", "hinge slacks, one per example (HIERMULT: per example "
                            "and internal node on its path)"),
             "alpha": Variable("(n_pairs,)", "margin multipliers, alpha >= 0, "
                               "sum_{p of s} alpha_p / Delta_p <= C Cw_s", side="dual")}
        if self.fit_intercept:
            v["intercept"] = Variable("(n_nodes,)", "node biases b_i = s * (weight of the constant "
                                      "feature s = intercept_scaling), regularized with w_i; zero "
                                      "outside var_nodes")
        if self.method == "orthogonal":
            v["G"] = Variable("(m, m)", "the lifted Gram matrix G >= W W^T of the SDP")
            v["S"] = Variable("(m, m)", "a matrix of the box S_ii = K_ii, |S_ij| <= K_ij "
                              "(Omega >= 1/2 tr(W^T S W))", side="dual")
        return v

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """The number of features as given (without the bias column)."""
        return int(self.X_features.shape[1])

    @property
    def bias_scaling(self) -> float | None:
        """``s = intercept_scaling`` with ``fit_intercept``, else None (no bias feature)."""
        return float(self.intercept_scaling) if self.fit_intercept else None

    def full_weights(self, V: np.ndarray, basis=None) -> np.ndarray:
        """``(n_nodes, width)`` weights from the rows ``V`` of ``var_nodes`` (written in
        ``basis``, ``(r, width)``, when given: ``W = V basis``), zero on the other rows."""
        V = np.asarray(V, dtype=float)
        rows = V if basis is None else V @ basis
        W = np.zeros((len(self.H), rows.shape[1]))
        W[self.var_nodes] = rows
        return W

    def augmented_weights(self, weights, intercept=None) -> np.ndarray:
        """``[W, b / s]`` ``(n_nodes, X.shape[1])``: the weights of the features every solver
        sees, from ``weights`` ``(n_nodes, n_features)`` and ``intercept`` ``(n_nodes,)`` (None:
        zero biases).  Without ``fit_intercept`` the weights themselves (an intercept must then
        be None or zero)."""
        W = np.asarray(weights, dtype=float)
        if W.ndim != 2 or W.shape != (len(self.H), self.n_features):
            raise InputError(f"weights must be (n_nodes, n_features) = ({len(self.H)}, {self.n_features}), "
                             f"rows in H.nodes order, without the bias column (pass the biases as "
                             f"intercept=...); got shape {W.shape}")
        if intercept is not None:
            b = np.asarray(intercept, dtype=float)
            if b.shape != (len(self.H),):
                raise InputError(f"intercept must hold one bias per node, shape ({len(self.H)},); "
                                 f"got shape {b.shape}")
            if not self.fit_intercept and np.any(b != 0):
                raise InputError("the model has no intercept (prepared with fit_intercept=False); "
                                 "drop the intercept or prepare with fit_intercept=True")
        return join_bias(W, intercept, self.bias_scaling)

    def split_weights(self, W_aug) -> tuple[np.ndarray, np.ndarray]:
        """``(weights, intercept)`` of augmented weights: the feature columns and ``b = s *``
        the constant feature's weight (zeros without ``fit_intercept``)."""
        return split_bias(W_aug, self.bias_scaling)

    def slacks(self, W) -> np.ndarray:
        """The smallest feasible slacks at node weights ``W`` ``(n_nodes, d)``."""
        return margin.slacks(margin.class_scores(W, self.X_slacks, self.data.Lam), self.data)

    def hinge(self, W, C: float) -> float:
        """The loss term: ``C sum_s Cw_s xi_s`` (``H(w)`` of (7) for problem (4))."""
        return float(C) * float(self.data.Cw @ self.slacks(W))

    def regularizer(self, W) -> float:
        """``R(W)``: Omega (5) for orthogonal transfer, ``1/2 tr(Wv^T S Wv)`` otherwise."""
        Wv = np.asarray(W, dtype=float)[self.var_nodes]
        if self.method == "orthogonal":  # Omega (5) on K's pattern: O(nnz(K) d), not O(m^2 d)
            K = self.sparse_K().tocoo()
            gram = np.einsum("ij,ij->i", Wv[K.row], Wv[K.col])
            return 0.5 * float(np.sum(K.data * np.abs(gram)))
        return 0.5 * float(np.sum(Wv * (self.S @ Wv)))

    def objective(self, weights, C: float = 1.0, intercept=None) -> float:
        """The primal objective (7) ``R(W~) + C sum_s Cw_s xi_s(W~)`` at ``weights``
        ``(n_nodes, n_features)`` and ``intercept`` ``(n_nodes,)`` (with ``fit_intercept``;
        ``W~ = [W, b / s]``, :meth:`augmented_weights`)."""
        W = self.augmented_weights(weights, intercept)
        return self.regularizer(W) + self.hinge(W, C)

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights and intercept (``values`` or ``extras``)."""
        intercept = solution.values.get("intercept", solution.extras.get("intercept"))
        return self.objective(solution.weights, intercept=intercept, **params)

    def violation(self, W, xi) -> float:
        """Largest violation of the margin rows and of ``xi >= 0`` at ``(W, xi)``."""
        S = margin.class_scores(W, self.X_slacks, self.data.Lam)
        d = self.data
        diff = S[d.pair_i, d.pair_y] - S[d.pair_i, d.pair_ybar]
        viol = 1.0 - diff - d.pair_cost * np.asarray(xi)[d.pair_i]
        return max(0.0, float(viol.max(initial=0.0)), float(-np.min(xi, initial=0.0)))

    def node_gradient(self, alpha) -> np.ndarray:
        """``U(alpha) = sum_p alpha_p (Lam_pos - Lam_neg)^T x_p`` ``(n_nodes, d)``: the linear
        term of the Lagrangian at margin multipliers ``alpha``."""
        G = margin.coefficients(alpha, self.data)
        return margin.weights_from_coefficients(G, self.X_slacks, self.data.Lam)

    def box_matrix(self, S=None) -> np.ndarray:
        """The regularizer's dual matrix: the baselines' fixed ``S``; for (4), ``S`` clipped to
        the box ``S_ii = K_ii, |S_ij| <= K_ij`` (default ``diag(K)``, the box's centre)."""
        if self.method != "orthogonal":
            return self.S
        K = self.K
        if S is None:
            return np.diag(np.diag(K))
        S = np.clip(0.5 * (np.asarray(S, dtype=float) + np.asarray(S, dtype=float).T), -K, K)
        np.fill_diagonal(S, np.diag(K))
        return S

    def lower_bound(self, dual, C: float = 1.0) -> float:
        """The Lagrangian dual function at ``dual`` = ``alpha`` or ``(alpha, S)``, after
        projecting ``alpha`` onto the dual feasible set and ``S`` onto the box of K
        (:meth:`box_matrix`): ``sum_p alpha_p - 1/2 tr(U^T S^{-1} U)``, a certified lower
        bound on (4) / (12) whenever Theorem 1 holds."""
        alpha, S = dual if isinstance(dual, tuple) else (dual, None)
        alpha = margin.project_dual(np.asarray(alpha, dtype=float), self.data, float(C))
        return quadratic_lower_bound(self, alpha, self.box_matrix(S))

    def scores(self, weights, X, intercept=None) -> np.ndarray:
        """Class scores ``(X W^T + 1 b^T) Lam^T`` ``(n_samples, n_classes)`` (classes:
        ``data.Lam``'s rows; node scores except for TREELOSS, whose class scores sum the
        increments over A^+(y)).  ``weights`` ``(n_nodes, n_features)`` and ``intercept`` as in
        :meth:`objective`; ``X`` the features as given, or the model's own augmented ``X``."""
        W = self.augmented_weights(weights, intercept)
        if self.fit_intercept and X.shape[1] == self.n_features:
            X = append_constant(X, self.intercept_scaling)
        return margin.class_scores(W, X, self.data.Lam)

    def oracle(self, scores, *args, **kwargs):
        """The most violated pair of every slack under ``scores`` (:meth:`scores` of
        ``model.X``): ``(pair, xi)``, ``pair[s]`` the index of the pair with the largest
        ``Delta_p (1 - <w_pos - w_neg, x>)`` among slack ``s``'s (``-1`` when no pair is
        violated, or the slack has none) and ``xi[s]`` that violation (``>= 0``).  The label
        space here is the pairs of a tree path, so the search is a scan, not an ILP."""
        d = self.data
        S = np.asarray(scores, dtype=float)
        k = self.slack_example[d.pair_i]
        viol = d.pair_loss * (1.0 - (S[k, d.pair_y] - S[k, d.pair_ybar]))
        n_slacks = d.n_samples
        xi = np.zeros(n_slacks)
        pair = np.full(n_slacks, -1, dtype=np.int64)
        if d.n_pairs == 0:
            return pair, xi
        counts = np.diff(d.pair_ptr)
        has = counts > 0
        best = np.maximum.reduceat(viol, d.pair_ptr[:-1][has])
        at = np.flatnonzero(has)
        xi[at] = np.maximum(best, 0.0)
        first = np.repeat(best, counts[has])  # the slack's best value on each of its pairs
        hit = np.flatnonzero((viol == first) & (viol > 0))
        slack_of_hit = d.pair_i[hit]
        keep = np.r_[True, slack_of_hit[1:] != slack_of_hit[:-1]]  # the first best pair per slack
        pair[slack_of_hit[keep]] = hit[keep]
        return pair, xi


def prepare(X, y, H: Hierarchy, method: str = "orthogonal", classes: str = "nodes", *, K=None,
            alpha: float = 1.0, fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> PairModel:
    """Validate ``(X, y, H)`` (and K) once and build the :class:`PairModel` of ``method``.

    ``method`` (one of :data:`~hiercvx.models.orthogonal.METHODS`) sets the pairs of the hinge:

    * ``"orthogonal"``, ``"transfer"`` -- (4)'s rows: example k, ``i in A^+(y_k)``,
      ``j in S(i)``; one slack per example, weight ``1/N``.
    * ``"hiermult"`` -- the same rows, one slack per (example, internal node on its path)
      with weight ``1/N_j``, ``N_j`` the number of examples that reach a child of ``j``:
      (12) with ``Y = C(j)`` on those examples, for every internal node ``j``.
    * ``"flatmult"`` -- (12) over the leaves: ``w_{y_k} - w_l`` for every other leaf ``l``;
      labels must be leaves.
    * ``"treeloss"`` -- rows ``y != y_k`` over the classes (``classes="nodes"``: every
      non-root node, as the paper writes ``Y \\ {y_k}``; ``"leaves"``: the leaves), loss
      ``Delta = graph distance / 2``, class weights ``sum_{A^+(y)} u``.

    ``K`` (orthogonal only): ``(m, m)`` over ``H.nodes[1:]`` satisfying Theorem 1
    (:class:`NonConvexKError` otherwise); default heuristic (6) with ``alpha`` (lowered, with a
    warning, when its comparison matrix is not positive definite).  Labels are node names; the
    root is not a label; the hierarchy must be a tree.  ``check_input=False`` skips the check
    of ``X`` (for callers that validated it already, e.g. the estimator).

    ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias, the constant
    feature ``s = intercept_scaling`` appended to X (:func:`hiercvx.bias.append_constant`).
    The problem is the paper's on ``[X, s]``: K, heuristic (6) and its alpha only see the
    hierarchy, ``C/N`` counts the same N examples, and the bias weight is regularized like the
    other features -- inside Omega (5) ``<w~_i, w~_j> = <w_i, w_j> + b_i b_j / s^2``; for the
    baselines ``||w~||^2 = ||w||^2 + b^2 / s^2`` (TRANSFER also on the edge differences,
    TREELOSS per increment, so a class's bias is ``sum_{A^+(y)}`` of them).  The root has no
    weight vector, so no bias.
    """
    check_tree(H)
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    X = check_features(X) if check_input else X
    X_features = X
    X = X if scaling is None else append_constant(X, scaling)
    yi = label_indices(y, H, X.shape[0])
    if method == "flatmult":
        data, slack_example, var_nodes, cls = flat_pairs(H, yi)
    elif method == "treeloss":
        data, slack_example, var_nodes, cls = treeloss_pairs(H, yi, classes)
    else:
        data, slack_example, var_nodes, cls = path_pairs(H, yi, per_node=method == "hiermult")
    K_matrix = K_alpha = S = K_sparse = None
    if method == "orthogonal":
        if K is None:
            K_sparse, K_alpha = heuristic_K_sparse(H, alpha)
            K_matrix = K_sparse.toarray()
        else:
            if alpha != 1.0:
                raise InputError("pass either K or alpha (alpha only parametrizes heuristic (6) when "
                                 "K is None)")
            K_matrix = validate_K(K, H)
    elif K is not None:
        raise InputError(f"K is the matrix of orthogonal transfer (4); method={method!r} does not take "
                         "it (it does not use it): drop K or use method='orthogonal'")
    else:
        S = transfer_matrix(H) if method == "transfer" else np.eye(len(var_nodes))
    return PairModel(method, H, X, yi, data, slack_example, var_nodes, cls, K=K_matrix, K_alpha=K_alpha,
                     S=S, X_features=X_features, fit_intercept=scaling is not None,
                     intercept_scaling=1.0 if scaling is None else scaling, K_sparse=K_sparse)


def quadratic_lower_bound(model: PairModel, alpha, S: np.ndarray) -> float:
    """The Lagrangian dual function ``sum_p alpha_p - 1/2 tr(U^T S^{-1} U)`` over the weights
    of ``model.var_nodes``; a lower bound whenever alpha is feasible (``alpha >= 0``, per-slack
    budgets) and the regularizer is ``>= 1/2 tr(W^T S W)`` everywhere."""
    U = model.node_gradient(alpha)[model.var_nodes]
    return float(model.data.pair_offset @ alpha) - half_inverse_quadratic(U, S)


# =============================================================================== classifiers
def _node_array(H: Hierarchy) -> np.ndarray:
    arr = np.empty(len(H), dtype=object)
    for i, v in enumerate(H.nodes):
        arr[i] = v
    for kind in (str, int):
        if all(isinstance(v, kind) for v in H.nodes):
            return arr.astype(kind)
    return arr


def _scores(W, X, H: Hierarchy, intercept=None) -> np.ndarray:
    """Node scores ``X W^T + b``."""
    W = np.asarray(W, dtype=float)
    X = check_features(X)
    if W.ndim != 2 or W.shape[0] != len(H):
        raise InputError(f"W must be (n_nodes, n_features) = ({len(H)}, d), rows in H.nodes order; "
                         f"got shape {W.shape}")
    if W.shape[1] != X.shape[1]:
        raise InputError(f"X has {X.shape[1]} features but W has {W.shape[1]} columns")
    S = X @ W.T
    S = np.asarray(S.toarray() if sp.issparse(S) else S)
    if intercept is None:
        return S
    b = np.asarray(intercept, dtype=float)
    if b.shape != (len(H),):
        raise InputError(f"intercept must hold one bias per node, shape ({len(H)},); got shape {b.shape}")
    return S + b[None, :]


def predict_top_down(W, X, H: Hierarchy, return_index: bool = False, intercept=None):
    """The recursive classifier (1): from the root, move to the child ``j`` with the largest
    ``<w_j, x> (+ b_j)`` until a leaf is reached (ties: the first child in ``H.nodes`` order).
    ``intercept``: the node biases ``(n_nodes,)`` of a model fitted with ``fit_intercept``.
    Returns leaf names (or node indices with ``return_index``)."""
    check_tree(H)
    S = _scores(W, X, H, intercept)
    parent = H.parent_index
    leaf = H.leaf_mask
    cur = np.zeros(S.shape[0], dtype=np.int64)
    for _ in range(int(H.depths.max())):  # one level per pass, all samples at once
        active = ~leaf[cur]
        if not active.any():
            break
        allowed = parent[None, :] == cur[:, None]
        nxt = np.argmax(np.where(allowed, S, -np.inf), axis=1)
        cur = np.where(active, nxt, cur)
    return cur if return_index else _node_array(H)[cur]


def predict_flat(W, X, H: Hierarchy, classes="leaves", cumulative: bool = False, return_index=False,
                 intercept=None):
    """The flat classifier (2): ``argmax_{y in classes} <w_y, x> (+ b_y)`` with ``classes``
    ``"leaves"`` (FLATMULT), ``"nodes"`` (every non-root node) or node names.
    ``cumulative=True`` uses ``w_y = sum_{i in A^+(y)} W_i`` and ``b_y = sum_{i in A^+(y)} b_i``
    (TREELOSS's increments, parametrization (3)).  ``intercept``: the node biases
    ``(n_nodes,)`` of a model fitted with ``fit_intercept``."""
    check_tree(H)
    if isinstance(classes, str):
        if classes == "leaves":
            idx = H.leaf_indices
        elif classes == "nodes":
            idx = np.arange(1, len(H))
        else:
            raise InputError(f"classes must be 'leaves', 'nodes' or node names, got {classes!r}")
    else:
        idx = H.indices(classes)
    S = _scores(W, X, H, intercept)
    if cumulative:  # sum over A^+(y): the ancestor matrix includes the root, whose term is removed
        S = np.asarray(sp.csr_matrix(H.ancestor_matrix, dtype=float) @ S.T).T - S[:, [0]]
    best = idx[np.argmax(S[:, idx], axis=1)]
    return best if return_index else _node_array(H)[best]


def top_down_errors(H: Hierarchy, y_true, y_pred) -> np.ndarray:
    """The paper's error rule (section 2): a prediction ``f(x)`` for a test label ``y`` is an
    error iff ``y`` is not in ``A^+(f(x))`` -- for a leaf label, iff ``f(x) != y``; for an
    internal label, iff the prediction is not in its subtree.  Returns a bool array."""
    check_tree(H)
    yt = label_indices(y_true, H, len(y_true))
    yp = label_indices(y_pred, H, len(y_pred))
    if len(yt) != len(yp):
        raise InputError(f"y_true has {len(yt)} labels, y_pred {len(yp)}")
    return ~np.asarray(H.ancestor_matrix[yp, yt]).ravel().astype(bool)
