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
:func:`reduce_model` restricts a model to the weight rows its margin rows use and merges
interchangeable negatives (the proof that the optimum and its certificates lift exactly is
its docstring): a wide or deep tree costs what its labelled paths hold.  Heuristic (6) is
built sparse (:meth:`PairModel.sparse_K`), and more than :data:`DENSE_CLASSES` classes get
sparse class data.  Also here: Theorem 1 (:func:`check_convexity`), Corollary 2
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
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

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
    "quadratic_lower_bound", "ReducedModel", "reduce_model", "DENSE_CLASSES", "predict_top_down",
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


#: blocks larger than this get their largest eigenvalue by Lanczos (``eigsh``), not a full
#: dense eigendecomposition (heuristic (6) on a 1000-deep chain: one dense 1000 x 1000 block)
LANCZOS_BLOCK = 200


def _largest_eigenvalue(block) -> float:
    """The largest eigenvalue of a symmetric block: Lanczos when large, dense otherwise (and
    when Lanczos does not converge)."""
    if block.shape[0] > LANCZOS_BLOCK:
        try:
            return float(eigsh(block, k=1, which="LA", return_eigenvectors=False)[0])
        except ArpackNoConvergence:
            pass
    dense = block.toarray() if sp.issparse(block) else block
    return float(np.linalg.eigvalsh(dense)[-1])


def blockwise_eigenvalue(A, largest: bool = False) -> float:
    """The smallest (largest) eigenvalue of a symmetric ``A`` (dense or sparse), block by block
    (:func:`coupled_blocks`)."""
    A = sp.csr_matrix(A, dtype=float) if sp.issparse(A) else np.asarray(A, dtype=float)
    if A.shape[0] == 0:
        return 0.0
    isolated, blocks = coupled_blocks(A)
    values = list(A.diagonal()[isolated])
    for b in blocks:
        block = A[b][:, b] if sp.issparse(A) else A[np.ix_(b, b)]
        if largest:
            values.append(_largest_eigenvalue(block))
            continue
        values.append(np.linalg.eigvalsh(block.toarray() if sp.issparse(block) else block)[0])
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


def _ancestor_pairs(H: Hierarchy) -> sp.csr_matrix:
    """``(m, m)`` sparse 0/1 symmetric: 1 where one non-root node is a strict ancestor of the other."""
    A = sp.csr_matrix(H.ancestor_matrix[1:, 1:], dtype=float)
    A = A - sp.diags(A.diagonal())
    A.eliminate_zeros()
    return sp.csr_matrix(A + A.T)


def _heuristic_K_sparse(H: Hierarchy, alpha: float) -> tuple[sp.csr_matrix, float]:
    """Heuristic (6) as a sparse matrix and the alpha used (:func:`heuristic_K`)."""
    check_tree(H)
    alpha = check_positive(alpha, "alpha")
    desc = np.asarray(H.descendant_matrix.sum(axis=1)).ravel()[1:].astype(float)  # |D^+(i)|
    A = _ancestor_pairs(H)
    scale = sp.diags(1.0 / np.sqrt(desc))
    rho = blockwise_eigenvalue(scale @ A @ scale, largest=True) if len(desc) > 0 else 0.0
    used = alpha
    if alpha * rho >= 1.0 - 1e-12:
        used = 0.5 / rho
        logger.warning("heuristic (6): with alpha=%g the comparison matrix of K is not positive definite "
                       "(alpha * rho = %.3g >= 1, rho the largest eigenvalue of D^-1/2 A D^-1/2); lowering "
                       "alpha to %.6g (half the largest admissible value %.6g)", alpha, alpha * rho, used,
                       1.0 / rho)
    return sp.csr_matrix(used * A + sp.diags(desc)), used


def heuristic_K(H: Hierarchy, alpha: float = 1.0, return_alpha: bool = False):
    """Heuristic (6): ``K_ii = |D^+(i)|``, ``K_ij = alpha`` when one of i, j is an ancestor of
    the other, 0 otherwise; ``(m, m)`` over ``H.nodes[1:]``.

    ``Kbar = D - alpha A`` is positive definite iff ``alpha * rho < 1`` with ``rho`` the
    largest eigenvalue of ``D^{-1/2} A D^{-1/2}``.  When the given alpha fails this, alpha is
    lowered to ``1 / (2 rho)`` -- then ``Kbar >= D / 2``, so Corollary 2's constant is at least
    1/2 -- and a warning is logged.  ``return_alpha=True`` returns ``(K, alpha_used)``.
    """
    K, used = _heuristic_K_sparse(H, alpha)
    K = K.toarray()
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
    regularizer matrix of the baselines over ``var_nodes`` (``None`` for orthogonal).  In the
    reduced model of :func:`reduce_model`, ``var_nodes`` is a subset and K is over it.

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


#: class sets up to this size get dense ``Lam``, ``Q`` and ``loss``; larger ones (a 5000-leaf
#: star) sparse ``Lam`` and ``Q`` and a read-only view of ones for ``loss`` (it is all ones:
#: the losses of the pairs are ``pair_loss``), so building the model costs O(q), not O(q^2)
DENSE_CLASSES = 2000


def _class_rows(Lam) -> np.ndarray | sp.csr_matrix:
    """``Lam`` dense up to :data:`DENSE_CLASSES` rows, CSR beyond."""
    if Lam.shape[0] <= DENSE_CLASSES:
        return Lam.toarray() if sp.issparse(Lam) else np.asarray(Lam, dtype=float)
    return sp.csr_matrix(Lam, dtype=float)


def _pair_data(n_slacks: int, Lam, pair_i, pair_pos, pair_neg, Cw, pair_loss=None) -> MarginData:
    """A :class:`MarginData` with the given pairs (sorted by slack), slack rescaling; ``Lam``
    dense or sparse (:func:`_class_rows` sets the data's)."""
    Lam = _class_rows(Lam)
    q = Lam.shape[0]
    order = np.argsort(pair_i, kind="stable")
    pair_i, pair_pos, pair_neg = pair_i[order], pair_pos[order], pair_neg[order]
    pair_loss = np.ones(len(pair_i)) if pair_loss is None else np.asarray(pair_loss, float)[order]
    Y = np.zeros((n_slacks, q), dtype=bool)
    Y[pair_i, pair_pos] = True
    ptr = np.zeros(n_slacks + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_i, minlength=n_slacks), out=ptr[1:])
    L = sp.csr_matrix(Lam)  # 0/1 rows: the sparse product avoids a dense (q, q, M) matmul
    dense = q <= DENSE_CLASSES
    Q = (L @ L.T).toarray() if dense else sp.csr_matrix(L @ L.T)
    loss = np.ones((q, q)) if dense else np.broadcast_to(1.0, (q, q))
    return MarginData(Y=Y, Q=Q, loss=loss, rescaling="slack",
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
    K_matrix = K_alpha = S = K_sparse = None
    if method == "orthogonal":
        if K is None:
            K_sparse, K_alpha = _heuristic_K_sparse(H, alpha)
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
    data = _pair_data(n_slacks, sp.identity(M, format="csr"), pair_s, pos, neg, Cw)
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
    data = _pair_data(n, sp.identity(M, format="csr"), k, yi[k], grid[k, col], np.full(n, 1.0 / n))
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
    Lam = sp.csr_matrix(H.ancestor_matrix[cls], dtype=float)
    Lam = sp.csr_matrix(Lam @ sp.diags(np.r_[0.0, np.ones(M - 1)]))  # the root carries no weight (A^+ excludes it)
    Lam.eliminate_zeros()
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


# =============================================================================== the used part
#: relative tolerance of the equalities of the interchangeability condition (K and S are built
#: from a few numbers; the tests compare the lifted solution with the full reference)
REDUCE_RTOL = 1e-12


@dataclass
class ReducedModel:
    """A :class:`PairModel` on the weight rows the data use, with each group of interchangeable
    negatives merged into one row (:func:`reduce_model`), and the maps back to the full model.

    ``row_of[r]``: the reduced row of full weight row ``r`` (a position in ``full.var_nodes``),
    ``-1`` for a row that is zero at the optimum; ``size[t]``: the number of full rows reduced
    row ``t`` stands for (its group, 1 for a row of its own); ``pair_of[p]``: the reduced pair of
    full pair ``p``, ``pair_share[p]`` the share of its multiplier ``p`` gets (``1 / size`` of
    its negative's group)."""

    full: PairModel
    model: PairModel
    row_of: np.ndarray
    size: np.ndarray
    pair_of: np.ndarray
    pair_share: np.ndarray

    def lift_weights(self, V) -> np.ndarray:
        """Full weight rows ``(m, d)`` from the reduced rows ``V`` ``(m', d)``: every member of a
        group gets its row, the dropped rows zero."""
        V = np.asarray(V, dtype=float)
        out = np.zeros((len(self.row_of), V.shape[1]))
        has = self.row_of >= 0
        out[has] = V[self.row_of[has]]
        return out

    def lift_dual(self, alpha) -> np.ndarray:
        """The full model's multipliers: reduced pair ``(s, i, r)``'s spread evenly over the
        pairs ``(s, i, j)`` of the members ``j`` of ``r``'s group."""
        return np.asarray(alpha, dtype=float)[self.pair_of] * self.pair_share

    def lift_box(self, S_reduced, K) -> sp.csr_matrix:
        """(4) only: the matrix of K's box over ``full.var_nodes`` that certifies the lifted
        multipliers (:func:`reduce_model`): ``S_ii = K_ii``; inside a group ``S_ab = K_ab``;
        between reduced rows ``t != u``, ``S_ab = S'_tu / (size_t size_u)``; 0 next to a
        dropped row."""
        S_reduced = sp.coo_matrix(S_reduced)
        m = len(self.row_of)
        has = np.flatnonzero(self.row_of >= 0)
        order = has[np.argsort(self.row_of[has], kind="stable")]
        bounds = np.r_[0, np.cumsum(np.bincount(self.row_of[has], minlength=len(self.size)))]
        members = [order[bounds[t]:bounds[t + 1]] for t in range(len(self.size))]
        K = sp.csr_matrix(K)
        rows, cols, vals = [np.arange(m)], [np.arange(m)], [K.diagonal()]
        for t, u, v in zip(S_reduced.row.tolist(), S_reduced.col.tolist(), S_reduced.data.tolist()):
            if t == u or v == 0.0:
                continue
            a, b = np.meshgrid(members[t], members[u], indexing="ij")
            rows.append(a.ravel())
            cols.append(b.ravel())
            vals.append(np.full(a.size, v / (len(members[t]) * len(members[u]))))
        for g in members:
            if len(g) > 1:
                inner = sp.coo_matrix(K[g][:, g])
                off = inner.row != inner.col
                rows.append(g[inner.row[off]])
                cols.append(g[inner.col[off]])
                vals.append(inner.data[off])
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(m, m))


def _mix(keys: np.ndarray) -> np.ndarray:
    """A 64-bit mix of integer keys (splitmix64's finalizer), for grouping by hashed sets."""
    z = keys.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _same_rows(B: sp.csr_matrix, scale: float) -> bool:
    """Whether every row of ``B`` equals its first (within ``REDUCE_RTOL * scale``)."""
    if B.shape[0] < 2 or B.nnz == 0:
        return True
    diff = B - sp.csr_matrix(np.ones((B.shape[0], 1))) @ B[0]
    return diff.nnz == 0 or float(np.abs(diff.data).max()) <= REDUCE_RTOL * scale


def _interchangeable(model: PairModel, Rs: sp.csr_matrix, keep: np.ndarray) -> list[np.ndarray]:
    """The groups (positions in ``var_nodes``, at least two each) of interchangeable negatives
    among the kept rows: classes = nodes (``Lam = I``), never a positive, the same pairs
    ``(slack, positive, Delta)``, the same diagonal of ``R``, the same ``R`` entries to every
    row outside the group and one common ``R`` entry inside it."""
    d = model.data
    var = np.asarray(model.var_nodes)
    M = len(model.H)
    row_at = np.full(M, -1, dtype=np.int64)
    row_at[var] = np.arange(len(var))
    positive = np.zeros(len(var), dtype=bool)
    node = np.asarray(model.classes)  # classes are nodes: class c is node classes[c]
    pos_rows = row_at[node[d.pair_y]]
    positive[pos_rows[pos_rows >= 0]] = True
    cand = np.flatnonzero(keep & ~positive)
    if cand.size < 2:
        return []
    scale = max(1.0, float(np.abs(Rs.data).max(initial=0.0)))
    # hashed signature: the pairs (slack, positive, Delta) the row is the negative of ...
    neg_row = row_at[node[d.pair_ybar]]
    key = (d.pair_i.astype(np.int64) * M + d.pair_y) * 1_000_003 + np.round(d.pair_loss * 1e6).astype(np.int64)
    h = np.zeros(len(var), dtype=np.uint64)
    np.add.at(h, neg_row, _mix(key))
    count = np.bincount(neg_row, minlength=len(var))
    # ... and R: its diagonal, a random projection of its entries outside the candidates, the
    # sum and number of its off-diagonal entries among them
    rng = np.random.default_rng(0)
    outside = np.ones(len(var))
    outside[cand] = 0.0
    z = rng.standard_normal(len(var)) * outside
    Rc = Rs[cand]
    diag = Rs.diagonal()[cand]
    proj = Rc @ z
    in_cand = Rc @ (1.0 - outside) - diag
    nnz_in = np.asarray((Rc[:, cand] != 0).sum(axis=1)).ravel() - (diag != 0)
    step = scale * 1e-9  # quantized: equal entries hash alike (the exact check follows)
    sig = np.column_stack([count[cand], h[cand].view(np.int64),
                           *(np.round(np.asarray(v) / step).astype(np.int64) for v in (diag, proj, in_cand)),
                           nnz_in])
    _, group_of, sizes = np.unique(sig, axis=0, return_inverse=True, return_counts=True)
    group_of = np.asarray(group_of).reshape(-1)
    groups = []
    order = np.lexsort((d.pair_y, d.pair_i, neg_row))
    neg_sorted = neg_row[order]
    start = np.searchsorted(neg_sorted, np.arange(len(var) + 1))
    for g in np.flatnonzero(sizes >= 2):
        members = cand[group_of == g]
        # exact check of the pairs: the same (slack, positive, Delta) sequence for every member
        at = np.concatenate([order[start[r]:start[r + 1]] for r in members]).reshape(len(members), -1)
        if at.size and not (np.all(d.pair_i[at] == d.pair_i[at[0]]) and np.all(d.pair_y[at] == d.pair_y[at[0]])
                            and np.all(d.pair_loss[at] == d.pair_loss[at[0]])):
            continue
        # exact check of R: equal rows outside the group, one diagonal, one entry inside
        others = np.setdiff1d(np.arange(len(var)), members, assume_unique=True)
        block = Rs[members]
        inner = sp.coo_matrix(block[:, members])
        diagonal = inner.diagonal()
        off = inner.data[(inner.row != inner.col) & (inner.data != 0)]
        g = len(members)
        common = off.size == 0 or (off.size == g * (g - 1) and float(np.ptp(off)) <= REDUCE_RTOL * scale)
        if (common and _same_rows(block[:, others], scale)
                and float(np.ptp(diagonal)) <= REDUCE_RTOL * scale):
            groups.append(members)
    return groups


def reduce_model(model: PairModel, R=None) -> ReducedModel | None:
    """The problem on the weight rows the data use (:class:`ReducedModel`), or None when it is
    the model itself.  ``R``: (4)'s K over ``model.var_nodes`` (default ``model.K``), or the
    baselines' fixed S (``model.S``).

    **Rows off every pair are zero (4).**  Let ``O`` be the weight rows no margin row of the
    hinge involves (for (4): the nodes neither on a labelled path nor a sibling of one).  For
    any feasible ``W``, setting ``W_O = 0`` keeps every margin row (they do not see ``W_O``) and
    removes from Omega (5) the terms ``K_ij |<w_i, w_j>| >= 0`` with ``i`` or ``j`` in ``O``
    (``K >= 0``, Theorem 1), the others unchanged: so ``min (4) = min (4)`` restricted to the
    other rows ``U`` with ``K_UU`` (a principal submatrix: its comparison matrix is PSD, Theorem
    1 holds).  For a baseline's fixed ``S`` the same holds for the rows of the connected
    components of ``S``'s pattern that hold no used row (``S`` is block diagonal over them).
    On a chain of 1000 nodes whose two leaves are the labels, (4) keeps the two leaves.

    **Interchangeable negatives merge (all but TREELOSS, whose classes are paths).**  Rows
    ``a, b`` (classes = nodes) that are never a positive, are the negative of the same pairs
    ``(slack, positive, Delta)``, and have ``R_aa = R_bb``, ``R_ac = R_bc`` for every ``c``
    outside their group and a common ``R_ab = c_G`` inside it, are swapped by a symmetry of the
    problem (its rows and regularizer are invariant).  The objective is convex, so averaging an
    optimum over the group's permutations gives an optimum with ``w_a = w_b = w_G``: the
    problem restricted to ``W = P W'`` (``P`` copies ``w_G`` to every member) has the same
    optimal value.  On it the margin rows of the members coincide (one is kept) and
    ``Omega(P W') = 1/2 sum K'_tu |<w'_t, w'_u>|`` with ``K' = P^T K P`` off the diagonal and
    ``K'_GG = g K_aa + g (g - 1) c_G`` (``g = |G|``; ``|<w_G, w_G>| = ||w_G||^2``), i.e.
    ``K'_tu = g_t g_u K_ab``.  ``Kbar' = P^T Kbar P + diag(2 g (g - 1) c_G) >= 0``: Theorem 1
    holds for ``K'``.  The baselines' ``S' = P^T S P`` (the same formula).

    **Certificates lift exactly.**  Primal: ``(7)`` at ``P W'`` equals the reduced (7) at
    ``W'``.  Dual: spread each reduced multiplier ``beta_(s,i,G)`` evenly,
    ``alpha_(s,i,a) = beta / g`` (:meth:`ReducedModel.lift_dual`, feasible: the budgets see the
    same sums), so ``U_a = U'_G / g``; take ``S`` of K's box with ``S_aa = K_aa``, ``S_ab =
    c_G`` inside a group, ``S_ab = S'_tu / (g_t g_u)`` between groups, 0 next to a dropped row
    (:meth:`ReducedModel.lift_box`; in the box since ``|S'_tu| <= K'_tu``; positive definite
    when ``S'`` is: on the vectors of a group summing to zero it is ``K_aa - c_G > 0`` under
    Corollary 2, elsewhere it acts as ``S'``, and a dropped row has ``K_ii > 0``).  Then ``(S P W')_a = (S' W')_G / g`` (and
    ``(S P W')_k = (S' W')_k`` off the groups, 0 on a dropped row), so ``S^{-1} U = P S'^{-1}
    U'`` and ``D(alpha, S) = sum beta - 1/2 tr(U'^T S'^{-1} U') = D'(beta, S')``.  For a
    baseline the lifted S is its own (the same computation with ``S' = P^T S P``).  On a
    5000-leaf star with labels on 3 leaves, the 4997 others are one row with ``K'_GG = 4997``.
    """
    d = model.data
    var = np.asarray(model.var_nodes)
    m = len(var)
    if R is None:
        R = model.sparse_K() if model.method == "orthogonal" else model.S
    Rs = sp.csr_matrix(R)
    M = len(model.H)
    row_at = np.full(M, -1, dtype=np.int64)
    row_at[var] = np.arange(m)
    Lam = sp.csr_matrix(d.Lam)
    used_classes = np.unique(np.r_[d.pair_y, d.pair_ybar])
    used_nodes = np.unique(Lam[used_classes].indices) if len(used_classes) else np.zeros(0, np.int64)
    used_rows = row_at[used_nodes]
    used = np.zeros(m, dtype=bool)
    used[used_rows[used_rows >= 0]] = True
    if model.method == "orthogonal":
        keep = used
    else:  # a fixed S: the components of its pattern that hold a used row
        off = Rs - sp.diags(Rs.diagonal())
        off.eliminate_zeros()
        _, comp = connected_components(abs(off) + abs(off).T, directed=False)
        keep = np.isin(comp, comp[used])
    groups = _interchangeable(model, Rs, keep) if model.method != "treeloss" else []
    if keep.all() and not groups:
        return None
    rep = np.arange(m)
    for g in groups:
        rep[g] = g[0]
    reduced_rows = np.flatnonzero(keep & (rep == np.arange(m)))
    position = np.full(m, -1, dtype=np.int64)
    position[reduced_rows] = np.arange(len(reduced_rows))
    row_of = np.where(keep, position[rep], -1)
    size = np.bincount(row_of[row_of >= 0], minlength=len(reduced_rows)).astype(float)
    # R' = P^T R P: scaled rows and columns, the diagonal g R_aa + g (g - 1) c_G
    Rr = Rs[reduced_rows][:, reduced_rows].toarray()
    inside = np.zeros(len(reduced_rows))
    for g in groups:
        inside[position[g[0]]] = Rs[g[0], g[1]]
    Rr = size[:, None] * Rr * size[None, :]
    np.fill_diagonal(Rr, size * Rs.diagonal()[reduced_rows] + size * (size - 1) * inside)
    # pairs: those whose negative is a dropped member go (their representative's stay)
    node = np.asarray(model.classes)  # the node of each class (all but TREELOSS: one node)
    neg_row = row_at[node[d.pair_ybar]] if model.method != "treeloss" else np.zeros(d.n_pairs, np.int64)
    kept_pair = np.ones(d.n_pairs, dtype=bool)
    if groups:
        kept_pair = rep[neg_row] == neg_row
    classes_used = np.unique(np.r_[d.pair_y[kept_pair], d.pair_ybar[kept_pair]])
    cls_at = np.full(d.n_classes, -1, dtype=np.int64)
    cls_at[classes_used] = np.arange(len(classes_used))
    Lam_r = Lam[classes_used]
    data = _pair_data(d.n_samples, Lam_r, d.pair_i[kept_pair], cls_at[d.pair_y[kept_pair]],
                      cls_at[d.pair_ybar[kept_pair]], d.Cw, pair_loss=d.pair_loss[kept_pair])
    # the full pairs -> the reduced pair (slack, positive, representative of the negative)
    q = d.n_classes
    class_of = np.full(M, -1, dtype=np.int64)
    class_of[node] = np.arange(len(node))
    rep_class = d.pair_ybar.copy() if model.method == "treeloss" else class_of[var[rep[neg_row]]]
    full_key = (d.pair_i.astype(np.int64) * q + d.pair_y) * q + rep_class
    red_key = (data.pair_i.astype(np.int64) * q + classes_used[data.pair_y]) * q + classes_used[data.pair_ybar]
    order = np.argsort(red_key, kind="stable")
    pair_of = order[np.searchsorted(red_key[order], full_key)]
    share = 1.0 / size[row_of[neg_row]] if model.method != "treeloss" else np.ones(d.n_pairs)
    small = PairModel(model.method, model.H, model.X, model.y_index, data, model.slack_example,
                      var[reduced_rows], np.asarray(model.classes)[classes_used], X_slacks=model.X_slacks,
                      K=Rr if model.method == "orthogonal" else None, K_alpha=model.K_alpha,
                      S=None if model.method == "orthogonal" else Rr, X_features=model.X_features,
                      fit_intercept=model.fit_intercept, intercept_scaling=model.intercept_scaling)
    return ReducedModel(full=model, model=small, row_of=row_of, size=size, pair_of=pair_of, pair_share=share)


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
