"""Hierarchical SVM with orthogonal transfer (Zhou, Xiao and Wu, 2011) and its four baselines.

Source: seed ``000_b5ed2ef241094c61.txt``; the sheet ``formulations/orthogonal.md`` has the
derivations.  Notation of the paper: non-root nodes ``Y = {1..m}`` (here ``H.nodes[1:]``, in
``H.nodes`` order), weight vectors ``w_i``, ``A^+(i)`` the ancestors of ``i`` without the root
but with ``i``, ``S(i)`` the siblings, ``D^+(i)`` the descendants with ``i``.

* :func:`primal` -- problem (4)::

      min  1/2 sum_{i,j} K_ij |<w_i, w_j>|  +  C/N sum_k xi_k
      s.t. <w_i - w_j, x_k> >= 1 - xi_k   for j in S(i), i in A^+(y_k);   xi >= 0

  declared *exactly* as a semidefinite program by lifting the Gram matrix ``G = W W^T``:
  ``[[I, W^T], [W, G]] >= 0`` (i.e. ``G >= W W^T``), the penalty ``1/2 sum_i K_ii G_ii +
  sum_{i<j} K_ij t_ij`` with ``t_ij >= |G_ij|``.  Under Theorem 1 (``K >= 0``, comparison
  matrix PSD) the relaxation ``G >= W W^T`` is tight; with a PD comparison matrix the
  optimal ``G`` *equals* ``W W^T``.  With more features than samples the weights are
  written in an orthonormal basis of the data's row space (Theorem 3), so the PSD block is
  ``(m + rank X)`` instead of ``(m + n_features)``.
* :func:`comparison_matrix`, :func:`check_convexity` (Theorem 1), :func:`strong_convexity`
  (Corollary 2), :func:`heuristic_K` (heuristic (6)).
* The baselines of section 5: :func:`flatmult` (12) over the leaves, :func:`hiermult` (one
  Crammer--Singer problem (12) per internal node), :func:`transfer`, :func:`treeloss`.
* :func:`predict_top_down` -- the recursive classifier (1); :func:`predict_flat` -- the flat
  classifier (2); :func:`top_down_errors` -- the paper's error rule (an internal test label
  ``y`` is an error iff ``y`` is not in ``A^+(f(x))``).

Every problem is the pairwise hinge of :mod:`._margin` with its own pairs ((4)'s sibling
pairs along the label's path, the leaves of (12), ...) and a quadratic-type regularizer;
certificates: objective recomputed in numpy from the weights; lower bound = the Lagrangian
dual function ``sum_p alpha_p - 1/2 tr(U(alpha)^T S^{-1} U(alpha))`` at the solver's margin
multipliers ``alpha`` made feasible and, for (4), the matrix ``S`` (``S_ii = K_ii``,
``|S_ij| <= K_ij``) read off the duals of ``t_ij >= +-G_ij`` (see the sheet for why any such
pair gives a valid bound).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import check_features, check_positive
from ..exceptions import HierarchyError, InputError, LabelError
from ..hierarchy import Hierarchy
from ..reference import ReferenceProblem, check_size
from ..models import margin as _margin
from ..models.margin import MarginData
from .._sparse import expand_ranges

logger = logging.getLogger(__name__)

__all__ = [
    "primal",
    "flatmult",
    "hiermult",
    "transfer",
    "treeloss",
    "heuristic_K",
    "comparison_matrix",
    "check_convexity",
    "strong_convexity",
    "NonConvexKError",
    "omega",
    "omega_subgradient",
    "transfer_matrix",
    "tree_distance",
    "prepare",
    "PairModel",
    "METHODS",
    "predict_top_down",
    "predict_flat",
    "top_down_errors",
]

#: The hinge structures :func:`prepare` builds (one per method of section 5 plus (4)).
METHODS = ("orthogonal", "transfer", "hiermult", "flatmult", "treeloss")


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


def _smallest_eigenvalue(K: np.ndarray) -> float:
    Kbar = comparison_matrix(K)
    return float(np.linalg.eigvalsh(0.5 * (Kbar + Kbar.T))[0])


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


def _validate_K(K, H: Hierarchy) -> np.ndarray:
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


def _check_tree(H) -> None:
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
    _check_tree(H)
    alpha = check_positive(alpha, "alpha")
    desc = np.asarray(H.descendant_matrix.sum(axis=1)).ravel()[1:].astype(float)  # |D^+(i)|
    A = _ancestor_pairs(H)
    scale = 1.0 / np.sqrt(desc)
    rho = float(np.linalg.eigvalsh(scale[:, None] * A * scale[None, :])[-1]) if len(desc) > 0 else 0.0
    used = alpha
    if alpha * rho >= 1.0 - 1e-12:
        used = 0.5 / rho
        lam = float(np.linalg.eigvalsh(np.diag(desc) - alpha * A)[0])
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


def _edge_incidence(H: Hierarchy) -> sp.csr_matrix:
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
    _check_tree(H)
    E = _edge_incidence(H)
    return np.eye(len(H) - 1) + (E.T @ E).toarray()


def tree_distance(H: Hierarchy, classes=None) -> np.ndarray:
    """Graph distance between nodes of a tree, ``|A+(a) xor A+(b)|`` (ancestor sets with the
    root and the node itself), ``(q, q)`` over ``classes`` (node names, default all nodes)."""
    _check_tree(H)
    idx = np.arange(len(H)) if classes is None else H.indices(classes)
    A = H.ancestor_matrix[idx].astype(np.int64)
    size = np.asarray(A.sum(axis=1)).ravel()
    common = (A @ A.T).toarray()
    return (size[:, None] + size[None, :] - 2 * common).astype(float)


# =============================================================================== pairs
@dataclass
class PairModel:
    """The hinge of one of the five problems in the margin model of :mod:`._margin`.

    ``data`` holds the pairs ``(slack s, positive class, negative class)``, their losses
    (``Delta``, 1 except TREELOSS) and the per-slack weights ``Cw`` of C (``1/N``, or
    ``1/N_j`` for HIERMULT's node problems); classes are ``H.nodes`` (``Lam = I``) except for
    TREELOSS (``Lam`` = ancestor indicators of its classes, root column zero).  Slack ``s``
    belongs to example ``slack_example[s]`` (one slack per example except HIERMULT, which has
    one per example and internal node on its path).  ``var_nodes``: the nodes that carry a
    weight vector; every other row of the ``(n_nodes, n_features)`` weights is zero.
    """

    method: str
    H: Hierarchy
    X: object
    y_index: np.ndarray
    data: MarginData
    slack_example: np.ndarray
    var_nodes: np.ndarray
    classes: np.ndarray  # node indices of the classes (rows of Lam)
    X_slacks: object = None  # the feature row of every slack (X when one slack per example)

    def __post_init__(self):
        if self.X_slacks is None:
            same = np.array_equal(self.slack_example, np.arange(self.X.shape[0]))
            self.X_slacks = self.X if same else self.X[self.slack_example]

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    def slacks(self, W) -> np.ndarray:
        """The smallest feasible slacks at node weights ``W`` ``(n_nodes, d)``."""
        return _margin.slacks(_margin.class_scores(W, self.X_slacks, self.data.Lam), self.data)

    def hinge(self, W, C: float) -> float:
        """The loss term: ``C sum_s Cw_s xi_s`` (``H(w)`` of (7) for problem (4))."""
        return float(C) * float(self.data.Cw @ self.slacks(W))

    def violation(self, W, xi) -> float:
        """Largest violation of the margin rows and of ``xi >= 0`` at ``(W, xi)``."""
        S = _margin.class_scores(W, self.X_slacks, self.data.Lam)
        d = self.data
        diff = S[d.pair_i, d.pair_y] - S[d.pair_i, d.pair_ybar]
        viol = 1.0 - diff - d.pair_cost * np.asarray(xi)[d.pair_i]
        return max(0.0, float(viol.max(initial=0.0)), float(-np.min(xi, initial=0.0)))

    def node_gradient(self, alpha) -> np.ndarray:
        """``U(alpha) = sum_p alpha_p (Lam_pos - Lam_neg)^T x_p`` ``(n_nodes, d)``: the linear
        term of the Lagrangian at margin multipliers ``alpha``."""
        G = _margin.coefficients(alpha, self.data)
        return _margin.weights_from_coefficients(G, self.X_slacks, self.data.Lam)


def _label_indices(y, H: Hierarchy, n: int) -> np.ndarray:
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




def _path_pair_table(H: Hierarchy):
    """Per node v (CSR layout): the pairs ``(i, j)``, ``i in A^+(v)``, ``j in S(i)`` of (4),
    root side first, and each pair's level group (pairs of one ``i`` share a group)."""
    parent = H.parent_index
    children = H.children_indices
    M = len(H)
    pos, neg, grp = [[] for _ in range(M)], [[] for _ in range(M)], [[] for _ in range(M)]
    n_groups = np.zeros(M, dtype=np.int64)
    for v in range(1, M):  # parents come first in H.nodes
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
    return MarginData(Y=Y, Q=Lam @ Lam.T, loss=np.ones((q, q)), rescaling="slack",
                      Cw=np.asarray(Cw, dtype=float), pair_i=pair_i, pair_y=pair_pos, pair_ybar=pair_neg,
                      pair_loss=pair_loss, pair_ptr=ptr, Lam=Lam)


def prepare(X, y, H: Hierarchy, method: str = "orthogonal", classes: str = "nodes") -> PairModel:
    """Validate ``(X, y, H)`` once and build the hinge of ``method`` (one of :data:`METHODS`).

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

    Labels are node names; the root is not a label; the hierarchy must be a tree.
    """
    _check_tree(H)
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    X = check_features(X)
    n = X.shape[0]
    yi = _label_indices(y, H, n)
    M = len(H)
    nonroot = np.arange(1, M)
    if method in ("orthogonal", "transfer", "hiermult"):
        ptr, counts, tpos, tneg, tgrp, n_groups = _path_pair_table(H)
        c = counts[yi]
        pair_k = np.repeat(np.arange(n), c)
        at = expand_ranges(ptr[yi], c)
        pos, neg = tpos[at], tneg[at]
        Lam = np.eye(M)
        if method == "hiermult":
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
        data = _pair_data(n_slacks, Lam, pair_s, pos, neg, Cw)
        return PairModel(method, H, X, yi, data, slack_example, nonroot, np.arange(M))
    if method == "flatmult":
        leaves = H.leaf_indices
        if not np.all(H.leaf_mask[yi]):
            k = int(np.flatnonzero(~H.leaf_mask[yi])[0])
            raise LabelError(f"FLATMULT (12) is over the leaves, but sample {k} is labelled with the "
                             f"internal node {H.nodes[yi[k]]!r}; drop such samples, or relabel them with "
                             "H.with_self_leaves(...) and train on its hierarchy")
        grid = np.broadcast_to(leaves, (n, len(leaves)))
        k, col = np.nonzero(grid != yi[:, None])
        data = _pair_data(n, np.eye(M), k, yi[k], grid[k, col], np.full(n, 1.0 / n))
        return PairModel(method, H, X, yi, data, np.arange(n), leaves, np.arange(M))
    # treeloss
    if classes not in ("nodes", "leaves"):
        raise InputError(f"classes must be 'nodes' (the paper's Y) or 'leaves', got {classes!r}")
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
    return PairModel(method, H, X, yi, data, np.arange(n), nonroot, cls)


# =============================================================================== declarations
def _margin_constraint(model: PairModel, F, V, xi):
    """The rows ``<w_pos - w_neg, x> + xi_s / Delta_p >= 1`` as one sparse matrix inequality.

    ``F`` are the features used by the variable ``V`` (``(n_vars, r)`` weights of
    ``model.var_nodes``): ``X`` or its representer coordinates.  Written so that the dual of
    row p is the margin model's ``alpha_p``.
    """
    import cvxpy as cp

    d = model.data
    n, q, P = model.n_samples, d.n_classes, d.n_pairs
    if model.method == "treeloss":  # class scores through the ancestor sums (3)
        scores = F @ V.T @ d.Lam[:, model.var_nodes].T
        col = np.arange(q)
    else:  # classes are nodes: a class's score is its own weight's
        scores = F @ V.T
        col = np.full(q, -1)
        col[model.var_nodes] = np.arange(len(model.var_nodes))
    width = scores.shape[1]
    k = model.slack_example[d.pair_i]
    rows = np.arange(P)
    D = sp.csr_matrix((np.r_[np.ones(P), -np.ones(P)],
                       (np.r_[rows, rows], np.r_[k * width + col[d.pair_y], k * width + col[d.pair_ybar]])),
                      shape=(P, n * width))
    E = sp.csr_matrix((d.pair_cost, (rows, d.pair_i)), shape=(P, d.n_samples))
    return D @ cp.vec(scores, order="C") + E @ xi >= np.ones(P)


def _half_inverse_quadratic(U: np.ndarray, S: np.ndarray) -> float:
    """``sup_W <U, W> - 1/2 tr(W^T S W) = 1/2 tr(U^T S^{-1} U)`` (``+inf`` if S is not PD)."""
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        return float("inf")
    Z = np.linalg.solve(L, U)
    return 0.5 * float(np.sum(Z * Z))


def _quadratic_lower_bound(model: PairModel, alpha, S: np.ndarray) -> float:
    """The Lagrangian dual function ``sum_p alpha_p - 1/2 tr(U^T S^{-1} U)`` over the weights
    of ``model.var_nodes``; a lower bound whenever alpha is feasible (``alpha >= 0``, per-slack
    budgets) and the regularizer is ``>= 1/2 tr(W^T S W)`` everywhere."""
    U = model.node_gradient(alpha)[model.var_nodes]
    return float(model.data.pair_offset @ alpha) - _half_inverse_quadratic(U, S)


def _estimate(model: PairModel, r: int, what: str, max_size, extra_vars=0, extra_rows=0, extra_nnz=0):
    d = model.data
    n_vars = len(model.var_nodes)
    nnz = 3 * d.n_pairs + model.n_samples * n_vars * r + d.n_classes * n_vars * model.n_samples
    check_size(n_vars * r + d.n_samples + extra_vars, d.n_pairs + d.n_samples + extra_rows,
               nnz + extra_nnz, max_size, what=what)


def _full_weights(model: PairModel, V: np.ndarray, basis=None) -> np.ndarray:
    W = np.zeros((len(model.H), model.X.shape[1]))
    W[model.var_nodes] = V if basis is None else V @ basis
    return W


def _representer_basis(X):
    """``(Z, Bt)``: ``Bt`` ``(r, d)`` with orthonormal rows spanning the rows of X and
    ``Z = X Bt^T`` (Theorem 3): weights ``W = V Bt`` lose nothing and ``<w_i, w_j> = <v_i, v_j>``.

    Dense X: thin SVD, dropping singular values below ``1e-12 s_max`` (numerical zeros).
    Sparse X (no dense copy of X): eigenvectors of ``X X^T`` above ``1e-12 lambda_max``, then
    a QR of ``X^T U`` for exactly orthonormal rows.  The certificate is computed on the
    original X either way, so a dropped near-null direction can cost gap, never validity.
    """
    if sp.issparse(X):
        lam, U = np.linalg.eigh((X @ X.T).toarray())
        keep = lam > 1e-12 * max(float(lam.max()), 1e-300)
        Q, _ = np.linalg.qr(np.asarray(X.T @ U[:, keep]))
        return np.asarray(X @ Q), Q.T
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    keep = s > 1e-12 * max(float(s[0]), 1e-300)
    return U[:, keep] * s[keep], Vt[keep]


def primal(X, y, H: Hierarchy, C: float = 1.0, K=None, alpha: float = 1.0, representer: bool | None = None,
           max_size: int | None = None) -> ReferenceProblem:
    """Problem (4), orthogonal transfer, as an exact semidefinite program.

    ``y``: one node name per sample (leaf or internal, not the root).  ``K``: ``(m, m)`` over
    ``H.nodes[1:]`` satisfying Theorem 1 (``NonConvexKError`` otherwise, quoting the smallest
    eigenvalue of its comparison matrix); default heuristic (6) with ``alpha`` (lowered, with
    a warning, when its comparison matrix is not positive definite).  ``representer``: write
    the weights in an orthonormal basis of the rows of X (Theorem 3); default when
    ``n_features > n_samples``.

    Declared problem (``W`` = the non-root weights, or ``V Bt`` with the representer)::

        min  1/2 sum_i K_ii G_ii + sum_{i<j, K_ij>0} K_ij t_ij + C sum_k xi_k / N
        s.t. t_ij >= G_ij,  t_ij >= -G_ij,  [[I, W^T], [W, G]] >= 0 (PSD),
             <w_i - w_j, x_k> + xi_k >= 1  (j in S(i), i in A^+(y_k)),  xi >= 0.

    ``sol.weights``: ``(n_nodes, n_features)``, rows in ``H.nodes`` order, root row zero;
    ``sol.values``: ``V`` (the weights in the basis; ``= W[1:]`` without representer),
    ``G``, ``t`` (when K has off-diagonal entries) and ``xi``.  Certificate: objective =
    ``omega(W[1:], K) + C/N sum_k xi_k(W)`` recomputed in numpy; lower bound =
    ``sum alpha - 1/2 tr(U^T S^{-1} U)`` with alpha the projected margin duals and
    ``S_ij = clip(mu+_ij - mu-_ij, -K_ij, K_ij)``, ``S_ii = K_ii`` from the duals of the
    absolute-value epigraph (valid for any such S when Kbar is PSD; see the sheet).
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    Cval = check_positive(C, "C")
    model = prepare(X, y, H, "orthogonal")
    X = model.X
    if K is None:
        K, alpha_used = heuristic_K(H, alpha, return_alpha=True)
    else:
        if alpha != 1.0:
            raise InputError("pass either K or alpha (alpha only parametrizes heuristic (6) when K is None)")
        K, alpha_used = _validate_K(K, H), None
    m = len(H) - 1
    n, dim = X.shape
    use_rep = (dim > n) if representer is None else bool(representer)
    basis = None
    F = X
    if use_rep:
        Z, Bt = _representer_basis(X)
        if Z.shape[1] > 0:
            F, basis = Z, Bt
        else:
            use_rep = False
    r = F.shape[1]
    pi, pj = np.nonzero(np.triu(K, 1))
    Kp = K[pi, pj]
    _estimate(model, r, "the orthogonal-transfer SDP (4)", max_size,
              extra_vars=m * (m + 1) // 2 + len(pi), extra_rows=2 * len(pi) + (m + r) ** 2,
              extra_nnz=4 * len(pi) + (m + r) ** 2)

    Cp = cp.Parameter(nonneg=True, value=Cval, name="C")
    V = cp.Variable((m, r), name="V")
    G = cp.Variable((m, m), symmetric=True, name="G")
    xi = cp.Variable(n, name="xi")
    margin = _margin_constraint(model, F, V, xi)
    nonneg = xi >= 0
    lift = cp.bmat([[np.eye(r), V.T], [V, G]]) >> 0
    penalty = 0.5 * (np.diag(K) @ cp.diag(G))
    constraints = [margin, nonneg, lift]
    named = {"margin": margin, "xi_nonneg": nonneg}
    variables = {"V": V, "G": G, "xi": xi}
    if len(pi):
        sel = sp.csr_matrix((np.ones(len(pi)), (np.arange(len(pi)), pi * m + pj)), shape=(len(pi), m * m))
        g = sel @ cp.vec(G, order="C")
        t = cp.Variable(len(pi), name="t")
        upper, lower = t - g >= 0, t + g >= 0
        constraints += [upper, lower]
        named.update(abs_upper=upper, abs_lower=lower)
        variables["t"] = t
        penalty = penalty + Kp @ t
    problem = cp.Problem(cp.Minimize(penalty + Cp * (model.data.Cw @ xi)), constraints)

    def weights(v):
        return _full_weights(model, v["V"], basis)

    def objective(v):
        W = weights(v)
        return omega(W[1:], K) + model.hinge(W, float(Cp.value))

    def lower_bound(v, duals):
        alpha_ = _margin.project_dual(duals["margin"], model.data, float(Cp.value))
        S = np.diag(np.diag(K)).astype(float)
        if len(pi):
            s = np.clip(duals["abs_upper"] - duals["abs_lower"], -Kp, Kp)
            S[pi, pj] = s
            S[pj, pi] = s
        return _quadratic_lower_bound(model, alpha_, S)

    def infeasibility(v):
        return model.violation(weights(v), v["xi"])

    logger.debug("orthogonal SDP: n=%d, d=%d, r=%d, m=%d, pairs=%d, K pairs=%d", n, dim, r, m,
                 model.data.n_pairs, len(pi))
    return ReferenceProblem(
        problem, variables=variables, objective=objective, lower_bound=lower_bound, weights=weights,
        constraints=named, parameters={"C": Cp}, infeasibility=infeasibility,
        name="orthogonal transfer (4), lifted SDP" + (" in the representer basis" if use_rep else ""),
        build_time=time.perf_counter() - t0,
        data={"X": X, "H": H, "y_index": model.y_index, "K": K, "alpha": alpha_used, "model": model,
              "representer": use_rep, "basis": basis, "features": F, "psd_block": m + r})


def _qp_reference(model: PairModel, C: float, name: str, max_size, incidence=None) -> ReferenceProblem:
    """``min 1/2 ||W||^2 (+ 1/2 ||E W||^2) + C sum_s Cw_s xi_s`` over ``model``'s rows: the
    regularizer is ``1/2 tr(W^T S W)`` with ``S = I (+ E^T E)``."""
    import cvxpy as cp

    t0 = time.perf_counter()
    Cval = check_positive(C, "C")
    X = model.X
    n_vars = len(model.var_nodes)
    _estimate(model, X.shape[1], name, max_size)
    Cp = cp.Parameter(nonneg=True, value=Cval, name="C")
    V = cp.Variable((n_vars, X.shape[1]), name="W")
    xi = cp.Variable(model.data.n_samples, name="xi")
    margin = _margin_constraint(model, X, V, xi)
    nonneg = xi >= 0
    reg = 0.5 * cp.sum_squares(V)
    S = np.eye(n_vars)
    if incidence is not None and incidence.shape[0] > 0:  # a sum of squares: DCP as written
        reg = reg + 0.5 * cp.sum_squares(incidence @ V)
        S = S + (incidence.T @ incidence).toarray()
    problem = cp.Problem(cp.Minimize(reg + Cp * (model.data.Cw @ xi)), [margin, nonneg])

    def weights(v):
        return _full_weights(model, v["W"])

    def objective(v):
        W = weights(v)
        Wv = W[model.var_nodes]
        return 0.5 * float(np.sum(Wv * (S @ Wv))) + model.hinge(W, float(Cp.value))

    def lower_bound(v, duals):
        alpha_ = _margin.project_dual(duals["margin"], model.data, float(Cp.value))
        return _quadratic_lower_bound(model, alpha_, S)

    def infeasibility(v):
        return model.violation(weights(v), v["xi"])

    return ReferenceProblem(
        problem, variables={"W": V, "xi": xi}, objective=objective, lower_bound=lower_bound,
        weights=weights, constraints={"margin": margin, "xi_nonneg": nonneg}, parameters={"C": Cp},
        infeasibility=infeasibility, name=name, build_time=time.perf_counter() - t0,
        data={"X": X, "H": model.H, "y_index": model.y_index, "model": model, "regularizer": S})


def flatmult(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None) -> ReferenceProblem:
    """FLATMULT, (12) over the leaves (Crammer--Singer with the paper's C/N)::

        min 1/2 sum_{l in L} ||w_l||^2 + C/N sum_k xi_k
        s.t. <w_{y_k} - w_l, x_k> >= 1 - xi_k  for every leaf l != y_k;  xi >= 0

    Labels must be leaves.  Every leaf of H has a weight vector (also leaves without
    training examples).  ``sol.weights`` ``(n_nodes, n_features)``, non-leaf rows zero;
    predict with :func:`predict_flat`.  Lower bound: the Crammer--Singer dual at the
    projected duals."""
    return _qp_reference(prepare(X, y, H, "flatmult"), C, "FLATMULT (12) over the leaves", max_size)


def hiermult(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None) -> ReferenceProblem:
    """HIERMULT: for every internal node j, (12) with ``Y = C(j)`` on the ``N_j`` examples whose
    label lies below j, each child trained on the examples of its subtree::

        sum_j [ 1/2 sum_{i in C(j)} ||w_i||^2 + C/N_j sum_{k below j} xi_kj ],
        <w_i - w_l, x_k> >= 1 - xi_kj  for i = the child of j on k's path, l in S(i)

    The node problems are independent; they are declared as one problem (one slack per
    example and internal node on its path) whose optimum is their sum.  Predict with
    :func:`predict_top_down`."""
    return _qp_reference(prepare(X, y, H, "hiermult"), C, "HIERMULT: Crammer-Singer (12) at each internal node",
                         max_size)


def transfer(X, y, H: Hierarchy, C: float = 1.0, max_size: int | None = None) -> ReferenceProblem:
    """TRANSFER: (4)'s constraints with the regularizer
    ``1/2 sum_i (||w_i||^2 + sum_{j in C(i)} ||w_i - w_j||^2)`` (``= 1/2 tr(W^T R W)``,
    :func:`transfer_matrix`) instead of Omega.  Predict with :func:`predict_top_down`."""
    return _qp_reference(prepare(X, y, H, "transfer"), C, "TRANSFER (section 5)", max_size,
                         incidence=_edge_incidence(H))


def treeloss(X, y, H: Hierarchy, C: float = 1.0, classes: str = "nodes",
             max_size: int | None = None) -> ReferenceProblem:
    """TREELOSS (Cai--Hofmann form, section 5), in the increments ``u_i`` of (3)::

        min 1/2 sum_i ||u_i||^2 + C/N sum_k xi_k
        s.t. sum_{A^+(y_k)} <u_i, x_k> - sum_{A^+(y)} <u_j, x_k> >= 1 - xi_k / Delta(y_k, y)
             for y in classes, y != y_k;  xi >= 0,   Delta = half the tree distance.

    ``classes="nodes"`` (the paper: every non-root node) or ``"leaves"``.  ``sol.weights``
    are the increments ``u`` ``(n_nodes, n_features)`` (root row zero); class weights
    ``w_y = sum_{A^+(y)} u`` -- predict with ``predict_flat(..., cumulative=True)``."""
    model = prepare(X, y, H, "treeloss", classes=classes)
    return _qp_reference(model, C, f"TREELOSS (section 5), classes={classes}", max_size)


# =============================================================================== classifiers
def _node_array(H: Hierarchy) -> np.ndarray:
    arr = np.empty(len(H), dtype=object)
    for i, v in enumerate(H.nodes):
        arr[i] = v
    for kind in (str, int):
        if all(isinstance(v, kind) for v in H.nodes):
            return arr.astype(kind)
    return arr


def _scores(W, X, H: Hierarchy) -> np.ndarray:
    W = np.asarray(W, dtype=float)
    X = check_features(X)
    if W.ndim != 2 or W.shape[0] != len(H):
        raise InputError(f"W must be (n_nodes, n_features) = ({len(H)}, d), rows in H.nodes order; "
                         f"got shape {W.shape}")
    if W.shape[1] != X.shape[1]:
        raise InputError(f"X has {X.shape[1]} features but W has {W.shape[1]} columns")
    S = X @ W.T
    return np.asarray(S.toarray() if sp.issparse(S) else S)


def predict_top_down(W, X, H: Hierarchy, return_index: bool = False):
    """The recursive classifier (1): from the root, move to the child ``j`` with the largest
    ``<w_j, x>`` until a leaf is reached (ties: the first child in ``H.nodes`` order).
    Returns leaf names (or node indices with ``return_index``)."""
    _check_tree(H)
    S = _scores(W, X, H)
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


def predict_flat(W, X, H: Hierarchy, classes="leaves", cumulative: bool = False, return_index=False):
    """The flat classifier (2): ``argmax_{y in classes} <w_y, x>`` with ``classes`` ``"leaves"``
    (FLATMULT), ``"nodes"`` (every non-root node) or node names.  ``cumulative=True`` uses
    ``w_y = sum_{i in A^+(y)} W_i`` (TREELOSS's increments, parametrization (3))."""
    _check_tree(H)
    if isinstance(classes, str):
        if classes == "leaves":
            idx = H.leaf_indices
        elif classes == "nodes":
            idx = np.arange(1, len(H))
        else:
            raise InputError(f"classes must be 'leaves', 'nodes' or node names, got {classes!r}")
    else:
        idx = H.indices(classes)
    S = _scores(W, X, H)
    if cumulative:  # sum over A^+(y): the ancestor matrix includes the root, whose term is removed
        S = np.asarray(sp.csr_matrix(H.ancestor_matrix, dtype=float) @ S.T).T - S[:, [0]]
    best = idx[np.argmax(S[:, idx], axis=1)]
    return best if return_index else _node_array(H)[best]


def top_down_errors(H: Hierarchy, y_true, y_pred) -> np.ndarray:
    """The paper's error rule (section 2): a prediction ``f(x)`` for a test label ``y`` is an
    error iff ``y`` is not in ``A^+(f(x))`` -- for a leaf label, iff ``f(x) != y``; for an
    internal label, iff the prediction is not in its subtree.  Returns a bool array."""
    _check_tree(H)
    yt = _label_indices(y_true, H, len(y_true))
    yp = _label_indices(y_pred, H, len(y_pred))
    if len(yt) != len(yp):
        raise InputError(f"y_true has {len(yt)} labels, y_pred {len(yp)}")
    return ~np.asarray(H.ancestor_matrix[yp, yt]).ravel().astype(bool)
