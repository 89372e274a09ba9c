"""The model of orthogonal transfer (Zhou, Xiao and Wu, 2011) and of its four baselines.

Source: seed ``000_b5ed2ef241094c61.txt``; derivations in ``formulations/orthogonal.md``.
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
(:mod:`hiercvx.solvers.orthogonal_dual`) and RDA (:mod:`hiercvx.solvers.rda`) are built on it.  Also here: Theorem 1 (:func:`check_convexity`), Corollary 2
(:func:`strong_convexity`), heuristic (6) (:func:`heuristic_K`), the classifiers (1)
(:func:`predict_top_down`) and (2) (:func:`predict_flat`) and the paper's error rule
(:func:`top_down_errors`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._sparse import expand_ranges
from .._validation import check_features, check_positive, check_target
from ..bias import append_constant, bias_scaling, join_bias, split_bias
from ..exceptions import HierarchyError, InputError, LabelError
from ..hierarchy import Hierarchy
from . import margin
from ._base import Model, Variable
from .margin import MarginData

logger = logging.getLogger(__name__)

__all__ = [
    "METHODS", "EQUATIONS", "PairModel", "prepare", "NonConvexKError", "heuristic_K", "comparison_matrix",
    "check_convexity", "strong_convexity", "validate_K", "check_tree", "omega", "omega_subgradient",
    "edge_incidence", "transfer_matrix", "coupled_blocks", "blockwise_eigenvalue",
    "block_cholesky_solve", "tree_distance", "label_indices", "half_inverse_quadratic",
    "quadratic_lower_bound", "predict_top_down", "predict_flat", "top_down_errors",
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

class NonConvexKError(InputError):
    """A matrix K for which problem (4) is not convex (Theorem 1): a negative entry, or a
    comparison matrix with a negative eigenvalue.  ``smallest_eigenvalue`` holds the
    comparison matrix's smallest eigenvalue (``nan`` when the entries are the problem)."""

    def __init__(self, message: str, smallest_eigenvalue: float = float("nan")):
        super().__init__(message)
        self.smallest_eigenvalue = smallest_eigenvalue


# =============================================================================== K and Theorem 1
def _square(K, name: str = "K") -> np.ndarray:
    try:
        K = np.asarray(K, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a square numeric matrix") from None
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise InputError(f"{name} must be a non-empty square matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        i, j = np.argwhere(~np.isfinite(K))[0]
        raise InputError(f"{name}[{i}, {j}] is not finite ({K[i, j]!r})")
    return K


def comparison_matrix(K) -> np.ndarray:
    """The comparison matrix of section 3.1: ``Kbar_ii = |K_ii|``, ``Kbar_ij = -|K_ij|``."""
    K = _square(K)
    Kbar = -np.abs(K)
    np.fill_diagonal(Kbar, np.abs(np.diag(K)))
    return Kbar


def coupled_blocks(A) -> tuple[np.ndarray, list]:
    """The rows of a square matrix that no off-diagonal entry couples (``isolated``, a bool
    mask) and the index arrays of its other connected components (``blocks``).  A symmetric
    matrix is block diagonal over them, so its eigenvalues, Cholesky factor and solves are
    those of the blocks: a wide sibling group (K = I on a star) costs O(m), not O(m^3)."""
    A = sp.csr_matrix(A)
    A = A - sp.diags(A.diagonal())
    A.eliminate_zeros()
    n_comp, labels = connected_components(abs(A) + abs(A).T, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    isolated = sizes[labels] == 1
    order = np.argsort(labels, kind="stable")
    bounds = np.r_[0, np.cumsum(sizes)]
    blocks = [order[bounds[c]:bounds[c + 1]] for c in range(n_comp) if sizes[c] > 1]
    return isolated, blocks


def blockwise_eigenvalue(A: np.ndarray, largest: bool = False) -> float:
    """The smallest (largest) eigenvalue of a symmetric ``A``, block by block (:func:`coupled_blocks`)."""
    A = np.asarray(A, dtype=float)
    if A.shape[0] == 0:
        return 0.0
    isolated, blocks = coupled_blocks(A)
    values = list(np.diag(A)[isolated])
    for b in blocks:
        ev = np.linalg.eigvalsh(A[np.ix_(b, b)])
        values.append(ev[-1] if largest else ev[0])
    return float(max(values) if largest else min(values))


def _smallest_eigenvalue(K: np.ndarray) -> float:
    Kbar = comparison_matrix(K)
    return blockwise_eigenvalue(0.5 * (Kbar + Kbar.T))


def _psd_tolerance(K: np.ndarray) -> float:
    return 1e-10 * max(1.0, float(np.abs(np.diag(K)).max()))


def check_convexity(K, tol: float | None = None) -> bool:
    """Theorem 1: ``Omega(w) = 1/2 sum K_ij |<w_i, w_j>|`` (5) is convex if ``K >= 0``
    entrywise and its comparison matrix is PSD (and only if, when ``n_features >= m - 1``).

    The eigenvalue test uses the symmetric part (Omega only sees ``(K + K^T)/2``) and accepts
    eigenvalues down to ``-tol`` (default ``1e-10 * max(1, max K_ii)``, round-off)."""
    K = _square(K)
    if np.any(K < 0):
        return False
    tol = _psd_tolerance(K) if tol is None else float(tol)
    return _smallest_eigenvalue(K) >= -tol


def strong_convexity(K) -> float:
    """Corollary 2: the convexity parameter ``sigma = lambda_min(Kbar)`` of Omega.

    Positive when the comparison matrix is positive definite; ``0.0`` when it is only PSD
    (convex, not strongly).  A K violating Theorem 1 raises :class:`NonConvexKError`."""
    K = _square(K)
    _require_theorem_1(K)
    return max(_smallest_eigenvalue(K), 0.0)


def _require_theorem_1(K: np.ndarray, names=None) -> None:
    if np.any(K < 0):
        i, j = np.argwhere(K < 0)[0]
        where = f" (nodes {names[i]!r}, {names[j]!r})" if names is not None else ""
        raise NonConvexKError(
            f"K[{i}, {j}] = {K[i, j]:g}{where} is negative; Theorem 1 needs K >= 0 entrywise, "
            "otherwise problem (4) is not convex")
    lam = _smallest_eigenvalue(K)
    if lam < -_psd_tolerance(K):
        raise NonConvexKError(
            f"the comparison matrix of K has smallest eigenvalue {lam:.6g} < 0, so problem (4) is "
            "not convex (Theorem 1). Lower the off-diagonal entries or raise the diagonal, e.g. "
            "heuristic_K(H, alpha=...) with a smaller alpha", smallest_eigenvalue=lam)


def validate_K(K, H: Hierarchy) -> np.ndarray:
    """An explicit K over ``H.nodes[1:]``: shape, finite, symmetric, K_ii > 0, Theorem 1."""
    m = len(H) - 1
    try:
        K = np.asarray(K, dtype=float)
    except (TypeError, ValueError):
        raise InputError("K must be a numeric (m, m) matrix over the non-root nodes H.nodes[1:]") from None
    if K.shape != (m, m):
        hint = " (drop the root's row and column)" if K.shape == (m + 1, m + 1) else ""
        raise InputError(f"K must be ({m}, {m}): one row and column per non-root node, in the order "
                         f"H.nodes[1:]; got shape {K.shape}{hint}")
    K = _square(K)
    scale = max(1.0, float(np.abs(K).max()))
    if not np.allclose(K, K.T, rtol=0, atol=1e-12 * scale):
        i, j = np.unravel_index(np.argmax(np.abs(K - K.T)), K.shape)
        raise InputError(f"K must be symmetric; K[{i}, {j}] = {K[i, j]:g} but K[{j}, {i}] = {K[j, i]:g}. "
                         "The penalty (5) only depends on (K + K.T) / 2: pass that")
    names = H.nodes[1:]
    _require_theorem_1(K, names)
    diag = np.diag(K)
    if np.any(diag <= 0):
        i = int(np.flatnonzero(diag <= 0)[0])
        raise InputError(f"K[{i}, {i}] = 0 (node {names[i]!r}) leaves w_{i} unregularized, and problem "
                         "(4) may then have no minimizer; give every node a positive diagonal entry")
    return 0.5 * (K + K.T)


def check_tree(H) -> None:
    """Refuse anything but a :class:`Hierarchy` that is a tree with at least one class."""
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("orthogonal transfer and its baselines are defined on trees (siblings and "
                             "ancestors must be unique); this hierarchy is a DAG")
    if len(H) < 2:
        raise HierarchyError("the hierarchy has only its root; add classes below it")


def _ancestor_pairs(H: Hierarchy) -> np.ndarray:
    """``(m, m)`` 0/1 symmetric: 1 where one non-root node is a strict ancestor of the other."""
    A = H.ancestor_matrix[1:, 1:].toarray().astype(float)
    np.fill_diagonal(A, 0.0)
    return A + A.T


def heuristic_K(H: Hierarchy, alpha: float = 1.0, return_alpha: bool = False):
    """Heuristic (6): ``K_ii = |D^+(i)|``, ``K_ij = alpha`` when one of i, j is an ancestor of
    the other, 0 otherwise; ``(m, m)`` over ``H.nodes[1:]``.

    ``Kbar = D - alpha A`` is positive definite iff ``alpha * rho < 1`` with ``rho`` the
    largest eigenvalue of ``D^{-1/2} A D^{-1/2}``.  When the given alpha fails this, alpha is
    lowered to ``1 / (2 rho)`` -- then ``Kbar >= D / 2``, so Corollary 2's constant is at least
    1/2 -- and a warning is logged.  ``return_alpha=True`` returns ``(K, alpha_used)``.
    """
    check_tree(H)
    alpha = check_positive(alpha, "alpha")
    desc = np.asarray(H.descendant_matrix.sum(axis=1)).ravel()[1:].astype(float)  # |D^+(i)|
    A = _ancestor_pairs(H)
    scale = 1.0 / np.sqrt(desc)
    rho = blockwise_eigenvalue(scale[:, None] * A * scale[None, :], largest=True) if len(desc) > 0 else 0.0
    used = alpha
    if alpha * rho >= 1.0 - 1e-12:
        used = 0.5 / rho
        lam = blockwise_eigenvalue(np.diag(desc) - alpha * A)
        logger.warning("heuristic (6): with alpha=%g the comparison matrix of K is not positive definite "
                       "(smallest eigenvalue %.3g); lowering alpha to %.6g (half the largest admissible "
                       "value %.6g)", alpha, lam, used, 1.0 / rho)
    K = used * A + np.diag(desc)
    return (K, used) if return_alpha else K


# =============================================================================== Omega (5)
def omega(W, K) -> float:
    """Omega (5): ``1/2 sum_{i,j} K_ij |<w_i, w_j>|`` for ``W`` ``(m, d)`` (rows = rows of K)."""
    W = np.asarray(W, dtype=float)
    K = np.asarray(K, dtype=float)
    if W.shape[0] != K.shape[0]:
        raise InputError(f"W has {W.shape[0]} rows but K is {K.shape}; pass the non-root rows W[1:]")
    return 0.5 * float(np.sum(K * np.abs(W @ W.T)))


def omega_subgradient(W, K) -> np.ndarray:
    """Theorem 4: ``g_i = K_ii w_i + sum_{j != i} sign(<w_i, w_j>) K_ij w_j`` (a subgradient of
    Omega when K satisfies Theorem 1), ``(m, d)``."""
    W = np.asarray(W, dtype=float)
    K = np.asarray(K, dtype=float)
    sgn = np.sign(W @ W.T)
    np.fill_diagonal(sgn, 1.0)
    return (K * sgn) @ W


def edge_incidence(H: Hierarchy) -> sp.csr_matrix:
    """``(n_edges, m)``: row ``e`` is ``e_parent - e_child`` for the edges between non-root nodes."""
    edges = H.edge_index
    edges = edges[edges[:, 0] != 0] - 1  # non-root numbering
    e = np.arange(len(edges))
    return sp.csr_matrix((np.r_[np.ones(len(e)), -np.ones(len(e))], (np.r_[e, e], edges.T.ravel())),
                         shape=(len(e), len(H) - 1))


def transfer_matrix(H: Hierarchy) -> np.ndarray:
    """``R`` with ``1/2 tr(W^T R W)`` the TRANSFER regularizer
    ``1/2 sum_i (||w_i||^2 + sum_{j in C(i)} ||w_i - w_j||^2)`` over non-root ``i``:
    ``R = I + E^T E``, ``E`` the incidence of the tree edges between non-root nodes."""
    check_tree(H)
    E = edge_incidence(H)
    return np.eye(len(H) - 1) + (E.T @ E).toarray()


def tree_distance(H: Hierarchy, classes=None) -> np.ndarray:
    """Graph distance between nodes of a tree, ``|A+(a) xor A+(b)|`` (ancestor sets with the
    root and the node itself), ``(q, q)`` over ``classes`` (node names, default all nodes)."""
    check_tree(H)
    idx = np.arange(len(H)) if classes is None else H.indices(classes)
    A = H.ancestor_matrix[idx].astype(np.int64)
    size = np.asarray(A.sum(axis=1)).ravel()
    common = (A @ A.T).toarray()
    return (size[:, None] + size[None, :] - 2 * common).astype(float)

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
    regularizer matrix of the baselines over ``var_nodes`` (``None`` for orthogonal).

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

    def __post_init__(self):
        if self.X_features is None:
            self.X_features = self.X
        if self.X_slacks is None:
            same = np.array_equal(self.slack_example, np.arange(self.X.shape[0]))
            self.X_slacks = self.X if same else self.X[self.slack_example]

    @property
    def equations(self) -> dict:
        return EQUATIONS[self.method]

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
        if self.method == "orthogonal":
            return omega(Wv, self.K)
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


def label_indices(y, H: Hierarchy, n: int) -> np.ndarray:
    """Node indices of ``n`` single labels (node names, not the root); set-valued or unknown
    labels are refused with the sample's position."""
    check_target(y, "y", allow_mixed=True)
    if isinstance(y, (str, bytes)):
        raise LabelError("y must hold one label per sample, got a single string; wrap it in a list")
    y = list(y.tolist() if isinstance(y, np.ndarray) else y)
    if len(y) != n:
        raise LabelError(f"y has {len(y)} labels but X has {n} rows; give one label (a node name) per sample")
    idx = np.empty(n, dtype=np.int64)
    for k, v in enumerate(y):
        if isinstance(v, (set, frozenset, list)):
            raise LabelError(f"sample {k} has a label set {v!r}; orthogonal transfer is single-label "
                             "(one node per sample)")
        try:
            idx[k] = H.index(v)
        except LabelError:
            raise LabelError(f"sample {k} has label {v!r}, which is not a node of the hierarchy "
                             f"({H!r}); check the spelling or build H from all labels") from None
    if np.any(idx == 0):
        k = int(np.flatnonzero(idx == 0)[0])
        raise LabelError(f"sample {k} is labelled with the root {H.root!r}, which is not a class "
                         "(section 2: the root labels every instance); remove it or relabel it")
    return idx




def _path_pair_table(H: Hierarchy, labels=None):
    """Per node v (CSR layout): the pairs ``(i, j)``, ``i in A^+(v)``, ``j in S(i)`` of (4),
    root side first, and each pair's level group (pairs of one ``i`` share a group).  Only
    the nodes on the paths of ``labels`` (default: all) get their pairs; the others stay
    empty, so a wide hierarchy costs what its used paths hold."""
    parent = H.parent_index
    children = H.children_indices
    M = len(H)
    pos, neg, grp = [[] for _ in range(M)], [[] for _ in range(M)], [[] for _ in range(M)]
    n_groups = np.zeros(M, dtype=np.int64)
    needed = np.ones(M, dtype=bool)
    if labels is not None:
        needed[:] = False
        for v in np.unique(labels).tolist():
            while v > 0 and not needed[v]:
                needed[v] = True
                v = int(parent[v])
    for v in np.flatnonzero(needed[1:]) + 1:  # parents come first in H.nodes
        v = int(v)
        p = int(parent[v])
        sib = [int(c) for c in children[p] if c != v]
        pos[v] = pos[p] + [v] * len(sib)
        neg[v] = neg[p] + sib
        grp[v] = grp[p] + [int(n_groups[p])] * len(sib)
        n_groups[v] = n_groups[p] + (1 if sib else 0)
    counts = np.array([len(a) for a in pos], dtype=np.int64)
    ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    cat = lambda lists: np.array([x for a in lists for x in a], dtype=np.int64)  # noqa: E731
    return ptr, counts, cat(pos), cat(neg), cat(grp), n_groups


def _pair_data(n_slacks: int, Lam: np.ndarray, pair_i, pair_pos, pair_neg, Cw,
               pair_loss=None) -> MarginData:
    """A :class:`MarginData` with the given pairs (sorted by slack), slack rescaling."""
    q = Lam.shape[0]
    order = np.argsort(pair_i, kind="stable")
    pair_i, pair_pos, pair_neg = pair_i[order], pair_pos[order], pair_neg[order]
    pair_loss = np.ones(len(pair_i)) if pair_loss is None else np.asarray(pair_loss, float)[order]
    Y = np.zeros((n_slacks, q), dtype=bool)
    Y[pair_i, pair_pos] = True
    ptr = np.zeros(n_slacks + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_i, minlength=n_slacks), out=ptr[1:])
    L = sp.csr_matrix(Lam)  # 0/1 rows: the sparse product avoids a dense (q, q, M) matmul
    return MarginData(Y=Y, Q=(L @ L.T).toarray(), loss=np.ones((q, q)), rescaling="slack",
                      Cw=np.asarray(Cw, dtype=float), pair_i=pair_i, pair_y=pair_pos, pair_ybar=pair_neg,
                      pair_loss=pair_loss, pair_ptr=ptr, Lam=Lam)

def prepare(X, y, H: Hierarchy, method: str = "orthogonal", classes: str = "nodes", *, K=None,
            alpha: float = 1.0, fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> PairModel:
    """Validate ``(X, y, H)`` (and K) once and build the :class:`PairModel` of ``method``.

    ``method`` (one of :data:`METHODS`) sets the pairs of the hinge:

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
        data, slack_example, var_nodes, cls = _flat_pairs(H, yi)
    elif method == "treeloss":
        data, slack_example, var_nodes, cls = _treeloss_pairs(H, yi, classes)
    else:
        data, slack_example, var_nodes, cls = _path_pairs(H, yi, per_node=method == "hiermult")
    K_matrix = K_alpha = S = None
    if method == "orthogonal":
        if K is None:
            K_matrix, K_alpha = heuristic_K(H, alpha, return_alpha=True)
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
                     intercept_scaling=1.0 if scaling is None else scaling)


def _path_pairs(H: Hierarchy, yi: np.ndarray, per_node: bool):
    """(4)'s rows along each label's path; ``per_node``: HIERMULT's slack per internal node."""
    n, M = len(yi), len(H)
    ptr, counts, tpos, tneg, tgrp, n_groups = _path_pair_table(H, yi)
    c = counts[yi]
    pair_k = np.repeat(np.arange(n), c)
    at = expand_ranges(ptr[yi], c)
    pos, neg = tpos[at], tneg[at]
    if per_node:
        g = n_groups[yi]
        slack_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(g, out=slack_ptr[1:])
        pair_s = slack_ptr[pair_k] + tgrp[at]
        n_slacks = int(slack_ptr[-1])
        slack_example = np.repeat(np.arange(n), g)
        slack_node = np.zeros(n_slacks, dtype=np.int64)  # the internal node j of each slack
        slack_node[pair_s] = H.parent_index[pos]
        N_j = np.bincount(slack_node, minlength=M)
        Cw = 1.0 / N_j[slack_node]
    else:
        pair_s, n_slacks, slack_example = pair_k, n, np.arange(n)
        Cw = np.full(n, 1.0 / n)
    data = _pair_data(n_slacks, np.eye(M), pair_s, pos, neg, Cw)
    return data, slack_example, np.arange(1, M), np.arange(M)


def _flat_pairs(H: Hierarchy, yi: np.ndarray):
    """(12) over the leaves: ``w_{y_k} - w_l`` for every other leaf ``l``."""
    n, M = len(yi), len(H)
    leaves = H.leaf_indices
    if not np.all(H.leaf_mask[yi]):
        k = int(np.flatnonzero(~H.leaf_mask[yi])[0])
        raise LabelError(f"FLATMULT (12) is over the leaves, but sample {k} is labelled with the "
                         f"internal node {H.nodes[yi[k]]!r}; drop such samples, or relabel them with "
                         "H.with_self_leaves(...) and train on its hierarchy")
    grid = np.broadcast_to(leaves, (n, len(leaves)))
    k, col = np.nonzero(grid != yi[:, None])
    data = _pair_data(n, np.eye(M), k, yi[k], grid[k, col], np.full(n, 1.0 / n))
    return data, np.arange(n), leaves, np.arange(M)


def _treeloss_pairs(H: Hierarchy, yi: np.ndarray, classes: str):
    """TREELOSS's rows ``y != y_k`` over its classes, loss half the tree distance."""
    n, M = len(yi), len(H)
    if classes not in ("nodes", "leaves"):
        raise InputError(f"classes must be 'nodes' (the paper's Y) or 'leaves', got {classes!r}")
    nonroot = np.arange(1, M)
    cls = nonroot if classes == "nodes" else H.leaf_indices
    position = np.full(M, -1)
    position[cls] = np.arange(len(cls))
    yc = position[yi]
    if np.any(yc < 0):
        k = int(np.flatnonzero(yc < 0)[0])
        raise LabelError(f"TREELOSS with classes='leaves' needs leaf labels; sample {k} is labelled "
                         f"{H.nodes[yi[k]]!r}, an internal node; use classes='nodes'")
    if len(cls) < 2:
        raise LabelError("TREELOSS needs at least two classes")
    Lam = H.ancestor_matrix[cls].toarray().astype(float)
    Lam[:, 0] = 0.0  # the root carries no weight (A^+ excludes it)
    dist = tree_distance(H, [H.nodes[c] for c in cls])
    grid = np.broadcast_to(np.arange(len(cls)), (n, len(cls)))
    k, col = np.nonzero(grid != yc[:, None])
    neg = grid[k, col]
    data = _pair_data(n, Lam, k, yc[k], neg, np.full(n, 1.0 / n), pair_loss=0.5 * dist[yc[k], neg])
    return data, np.arange(n), nonroot, cls


def block_cholesky_solve(S, U, structure=None):
    """``S^{-1} U`` for a sparse symmetric ``S``, block by block (:func:`coupled_blocks`, or
    ``structure``, its result for a pattern containing S's): isolated rows divide by their
    diagonal, each coupled block is a dense Cholesky solve.  ``None`` when ``S`` is not
    positive definite."""
    S = sp.csr_matrix(S)
    isolated, blocks = coupled_blocks(S) if structure is None else structure
    diag = S.diagonal()
    if np.any(diag[isolated] <= 0):
        return None
    U = np.asarray(U, dtype=float)
    Z = np.zeros_like(U)
    Z[isolated] = U[isolated] / diag[isolated][:, None]
    for b in blocks:
        try:
            L = np.linalg.cholesky(S[b][:, b].toarray())
        except np.linalg.LinAlgError:
            return None
        Z[b] = np.linalg.solve(L.T, np.linalg.solve(L, U[b]))
    return Z


def half_inverse_quadratic(U: np.ndarray, S) -> float:
    """``sup_W <U, W> - 1/2 tr(W^T S W) = 1/2 tr(U^T S^{-1} U)`` (``+inf`` if S is not PD);
    ``S`` dense or sparse (then solved block by block)."""
    if sp.issparse(S):
        Z = block_cholesky_solve(S, U)
        return float("inf") if Z is None else 0.5 * float(np.sum(np.asarray(U) * Z))
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return float("inf")
    Z = np.linalg.solve(L, U)
    return 0.5 * float(np.sum(Z * Z))


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
