"""The matrix K of orthogonal transfer, Theorem 1, heuristic (6), Omega (5) and block solves.

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011.  Omega (5)
``= 1/2 sum_ij K_ij |<w_i, w_j>|`` is convex when ``K >= 0`` entrywise and its comparison
matrix ``Kbar`` (``|K_ii|`` on the diagonal, ``-|K_ij|`` off it) is PSD (Theorem 1;
:func:`check_convexity`), strongly convex with constant ``lambda_min(Kbar)`` (Corollary 2;
:func:`strong_convexity`); Theorem 4 gives its subgradient (:func:`omega_subgradient`).
Heuristic (6) (:func:`heuristic_K`) puts ``|D^+(i)|`` on the diagonal and ``alpha`` between a
node and its ancestors.  TRANSFER's regularizer is ``I + E^T E`` (:func:`transfer_matrix`).
Matrices on a tree's pattern are block diagonal over the connected components of their
off-diagonal pattern (:func:`coupled_blocks`): eigenvalues and solves go block by block.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from .._validation import check_positive
from ..exceptions import HierarchyError, InputError
from ..hierarchy import Hierarchy

logger = logging.getLogger("hiercvx.models.orthogonal")

__all__ = ["NonConvexKError", "comparison_matrix", "coupled_blocks", "blockwise_eigenvalue", "check_convexity",
           "strong_convexity", "validate_K", "check_tree", "heuristic_K", "heuristic_K_sparse", "omega",
           "omega_subgradient", "edge_incidence", "transfer_matrix", "tree_distance", "block_cholesky_solve",
           "half_inverse_quadratic"]


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


def _largest_eigenvalue(block, lanczos_above: int) -> float:
    """The largest eigenvalue of a symmetric block: Lanczos when it has more than
    ``lanczos_above`` rows, dense otherwise (and when Lanczos does not converge)."""
    if block.shape[0] > lanczos_above:
        try:
            return float(eigsh(block, k=1, which="LA", return_eigenvectors=False)[0])
        except ArpackNoConvergence:
            pass
    dense = block.toarray() if sp.issparse(block) else block
    return float(np.linalg.eigvalsh(dense)[-1])


def blockwise_eigenvalue(A, largest: bool = False, lanczos_above: int = 200) -> float:
    """The smallest (largest) eigenvalue of a symmetric ``A`` (dense or sparse), block by block
    (:func:`coupled_blocks`).  The largest eigenvalue of a block with more than
    ``lanczos_above`` rows is found by Lanczos (``eigsh``), not a dense eigendecomposition
    (heuristic (6) on a 1000-deep chain is one dense 1000 x 1000 block)."""
    A = sp.csr_matrix(A, dtype=float) if sp.issparse(A) else np.asarray(A, dtype=float)
    if A.shape[0] == 0:
        return 0.0
    isolated, blocks = coupled_blocks(A)
    values = list(A.diagonal()[isolated])
    for b in blocks:
        block = A[b][:, b] if sp.issparse(A) else A[np.ix_(b, b)]
        if largest:
            values.append(_largest_eigenvalue(block, lanczos_above))
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
    """Refuse anything but a :class:`~hiercvx.hierarchy.Hierarchy` that is a tree with at least one
    class."""
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


def heuristic_K_sparse(H: Hierarchy, alpha: float) -> tuple[sp.csr_matrix, float]:
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
        # the documented behaviour of heuristic (6), not a fault: shown with verbose (INFO);
        # the estimator warns when the alpha it lowers is one the user chose
        logger.info("heuristic (6): with alpha=%g the comparison matrix of K is not positive definite "
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
    1/2 -- and it is logged at INFO.  ``return_alpha=True`` returns ``(K, alpha_used)``.
    """
    K, used = heuristic_K_sparse(H, alpha)
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
