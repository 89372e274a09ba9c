"""Path weights and the leaf-path structure of the NHSVM paper, in numpy.

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016.  ``M`` nodes (``H.nodes``, root included), leaves ``L`` (``H.leaves``), ``anc(l)`` the
ancestors of ``l`` with ``l`` itself; the leaf-path matrix ``A`` ``(|L|, M)`` has
``A[l, n] = 1`` iff ``n in anc(l)``.

* The path weights ``alpha`` of (6) ``min sum_n alpha_n^rho`` s.t. ``A alpha = 1``,
  ``alpha >= 0`` on a tree, in closed form (:func:`tree_path_weights`): the program separates
  along the tree; a subtree given the budget ``c`` costs ``c^rho K_n`` with ``K_leaf = 1`` and,
  for ``S_n = sum_{c child} K_c`` and ``s = S_n^(1 / (rho - 1))``, the node keeps the share
  ``s / (1 + s)`` of its budget and ``K_n = S_n / (1 + s)^(rho - 1)`` (one pass up, one pass
  down).  The max-min weights (7), the DAG relaxation (8) and (6) on DAGs are programs: their
  certified CVXPY declarations are :func:`hiercvx.formulations.nhsvm.path_weights` /
  ``path_weights_problem``; validation of given weights is :func:`check_path_weights`.

* The alpha step (20) of the shared-norm SVM (14), ``min sum_n B_n / alpha_n`` s.t.
  ``A alpha <= 1``, ``alpha >= 0`` with ``B_n = ||U_n||^2``: closed form on trees
  (:func:`optimal_alpha`, Algorithm 1 and Appendix D), and on DAGs a certified dual ascent
  (:func:`~hiercvx.models.nhsvm.dag_alpha`) and a primal barrier method
  (:func:`~hiercvx.models.nhsvm.barrier_alpha`).

* The dual side of the path constraints: :func:`~hiercvx.models.nhsvm.cover`,
  :func:`min_path_cover`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize

from ..exceptions import HierarchyError, InputError, SolverError
from ..hierarchy import Hierarchy

__all__ = [
    "PATH_METHODS", "DAG_T", "MAX_RHO",
    "check_hierarchy", "check_T", "check_rho", "leaf_paths", "edge_differences", "depth_levels",
    "cover", "scaled_alpha", "ratio_sum", "node_matrix", "check_path_weights",
    "tree_path_weights", "path_weight_settings",
    "path_weights_route", "solve_path_weights", "optimal_alpha", "dag_alpha", "barrier_alpha",
    "min_path_cover",
]

PATH_METHODS = ("power", "maxmin", "dag")
#: The paper's T in (8) for its DAG experiments (section 8.1).
DAG_T = 1.5
#: The largest exponent of (6) accepted: CVXPY's rational approximation of ``a^rho`` (the
#: certified reference) overflows beyond it, and (6) is then the max-min program (7).
MAX_RHO = 1e3


# ====================================================================== structure
def check_hierarchy(H) -> Hierarchy:
    """``H`` itself when it is a :class:`~hiercvx.Hierarchy` with at least two leaves."""
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}; build one with "
                         "Hierarchy.from_parents / from_edges / from_paths")
    if len(H.leaf_indices) < 2:
        raise HierarchyError(f"the hierarchy has {len(H.leaf_indices)} leaf; NHSVM needs at least two "
                             "leaves (classes)")
    return H


def leaf_paths(H: Hierarchy) -> sp.csr_matrix:
    """``A`` ``(|L|, M)``: ``A[l, n] = 1`` iff ``n in anc(l)`` (rows follow ``H.leaves``)."""
    return sp.csr_matrix(H.ancestor_matrix[H.leaf_indices], dtype=float)


def edge_differences(H: Hierarchy) -> sp.csr_matrix:
    """``(n_edges, M)``: row ``e = (p, c)`` is ``e_c - e_p`` (directional constraint of (7))."""
    E = H.edge_index
    k = len(E)
    rows = np.r_[np.arange(k), np.arange(k)]
    cols = np.r_[E[:, 1], E[:, 0]]
    vals = np.r_[np.ones(k), -np.ones(k)]
    return sp.csr_matrix((vals, (rows, cols)), shape=(k, len(H)))


def depth_levels(H: Hierarchy) -> list[np.ndarray]:
    """Node indices grouped by depth, root level first (parents always lie on earlier levels)."""
    depths = np.asarray(H.depths)
    order = np.argsort(depths, kind="stable")
    cuts = np.flatnonzero(np.diff(depths[order])) + 1
    return np.split(order, cuts)


def _first_leaf_below(H: Hierarchy) -> np.ndarray:
    """For each node, the row (in ``H.leaves`` order) of one leaf below it."""
    D = sp.csr_matrix(H.descendant_matrix[:, H.leaf_indices])
    D.sort_indices()
    return D.indices[D.indptr[:-1]]


def cover(mu: np.ndarray, need: np.ndarray, H: Hierarchy, A: sp.csr_matrix) -> np.ndarray:
    """Raise leaf multipliers ``mu >= 0`` until ``(A^T mu)_n >= need_n`` for every node.

    The dual of the path constraints ``A alpha <= 1`` of (14), (16), (20) needs this covering
    condition; a solver's multipliers meet it up to its tolerance.  Levels are repaired from
    the deepest up: a deficit at node ``n`` is added to one leaf below ``n``, which raises only
    ``n``'s and its ancestors' coverage, so repaired levels stay repaired.
    """
    mu = np.maximum(np.asarray(mu, dtype=float), 0.0).copy()
    first = _first_leaf_below(H)
    for level in reversed(depth_levels(H)):
        covered = A.T @ mu
        deficit = np.maximum(need[level] - covered[level], 0.0)
        if np.any(deficit > 0):
            np.add.at(mu, first[level], deficit)
    return mu


def scaled_alpha(alpha, A: sp.csr_matrix) -> np.ndarray:
    """``alpha`` clipped at 0 and shrunk so that every path sum is at most 1 (feasible for (14),
    (16), (20))."""
    a = np.maximum(np.asarray(alpha, dtype=float), 0.0)
    top = float((A @ a).max()) if A.shape[0] else 0.0
    return a / top if top > 1.0 else a


def ratio_sum(b: np.ndarray, alpha: np.ndarray) -> float:
    """``sum_n b_n / alpha_n`` with ``0 / 0 = 0`` and ``b / 0 = inf`` (b > 0): the objective of (20)."""
    pos = b > 0
    if np.any(pos & (alpha <= 0)):
        return float("inf")
    return float(np.sum(b[pos] / alpha[pos]))


def node_matrix(U, H: Hierarchy, name: str = "U") -> np.ndarray:
    """``U`` as a finite float ``(M, d)`` array, one row per node of ``H.nodes``."""
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a numeric (n_nodes, n_features) array") from None
    if U.ndim != 2 or U.shape[0] != len(H):
        raise InputError(f"{name} must have one row per node of H.nodes (root included): shape "
                         f"({len(H)}, d), got {U.shape}")
    if not np.all(np.isfinite(U)):
        raise InputError(f"{name} has non-finite entries (NaN or inf)")
    return U


# ====================================================================== options of (6)-(8)
def check_rho(rho) -> float:
    """``rho`` of (6) as a float in ``(1, MAX_RHO]``."""
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise InputError(f"rho must be a number > 1, got {rho!r}") from None
    if not (np.isfinite(r) and r > 1.0):
        raise InputError(f"rho must be finite and > 1 (problem (6) is not strictly convex at rho = 1; "
                         f"use method='maxmin' for the rho = 1 alternative (7)), got {rho!r}")
    if r > MAX_RHO:
        raise InputError(f"rho must be at most {MAX_RHO:g} (got {rho!r}); as rho grows (6) tends to "
                         "the max-min weights (7): use method='maxmin'")
    return r


def check_T(T) -> float | None:
    """``None`` (equality (4)) or a finite ``T > 1`` for the relaxation (8); ``T == 1`` is (4)."""
    if T is None:
        return None
    try:
        t = float(T)
    except (TypeError, ValueError):
        raise InputError(f"T must be a number >= 1, got {T!r}") from None
    if not (np.isfinite(t) and t >= 1.0):
        raise InputError(f"T must be finite and >= 1 (constraint (8) is 1 <= sum_(n in anc(l)) "
                         f"alpha_n <= T), got {T!r}")
    return None if t == 1.0 else t


def check_path_weights(alpha, H: Hierarchy, T=None, tol: float = 1e-6) -> np.ndarray:
    """Validate node weights for (5): one finite value >= 0 per node of ``H.nodes`` and every
    leaf's ancestor sum ``sum_{n in anc(l)} alpha_n`` equal to 1 ((4)), or in ``[1, T]`` ((8)).

    Returns the weights as a float array (tiny negatives from a solver clipped to 0).
    """
    H = check_hierarchy(H)
    T = check_T(T)
    try:
        a = np.asarray(alpha, dtype=float)
    except (TypeError, ValueError):
        raise InputError("alpha must be a numeric array with one weight per node of H.nodes") from None
    M = len(H)
    if a.shape != (M,):
        raise InputError(f"alpha must have one weight per node of H.nodes (root included): length {M}, "
                         f"got shape {a.shape}; compute it with nhsvm.path_weights(H)")
    if not np.all(np.isfinite(a)):
        raise InputError("alpha has non-finite entries (NaN or inf)")
    if np.any(a < -tol):
        k = int(np.argmin(a))
        raise InputError(f"alpha must be non-negative; node {H.nodes[k]!r} has alpha = {a[k]:.6g}")
    a = np.maximum(a, 0.0)
    sums = leaf_paths(H) @ a
    hi = 1.0 if T is None else T
    bad = np.flatnonzero((sums < 1.0 - tol) | (sums > hi + tol))
    if bad.size:
        k = int(bad[0])
        leaf = H.leaves[k]
        want = "equal 1 (constraint (4))" if T is None else f"lie in [1, {T:g}] (constraint (8))"
        raise InputError(f"alpha is infeasible for this hierarchy: the weights on the path to leaf "
                         f"{leaf!r} sum to {sums[k]:.6g}, but every leaf's ancestor sum must {want} "
                         f"({bad.size} leaves violate it). Use nhsvm.path_weights(H), or pass T= for "
                         "the DAG relaxation (8)")
    return a


# ====================================================================== path weights (6)-(8)
def tree_path_weights(H: Hierarchy, rho: float = 2.0) -> np.ndarray:
    """The minimizer of (6) on a tree, in closed form (module docstring).

    ``min sum_n alpha_n^rho`` s.t. every root-leaf path sums to 1, ``alpha >= 0``.  Bottom-up
    ``K_n`` and the kept share ``E_n = s / (1 + s)`` (1 at leaves); top-down ``alpha_n = l_n
    E_n`` with budgets ``l_root = 1``, ``l_c = l_n (1 - E_n)``.
    """
    if not H.is_tree:
        raise HierarchyError("the closed form of (6) needs a tree; this hierarchy is a DAG")
    rho = check_rho(rho)
    M = len(H)
    parent, leaf = H.parent_index, H.leaf_mask
    levels = depth_levels(H)
    K = np.ones(M)
    share = np.ones(M)
    child_sum = np.zeros(M)
    for v in reversed(levels):
        inner = ~leaf[v]
        S = child_sum[v][inner]
        s = S ** (1.0 / (rho - 1.0))
        share[v[inner]] = s / (1.0 + s)
        K[v[inner]] = S / (1.0 + s) ** (rho - 1.0)
        p = parent[v]
        has_parent = p >= 0
        np.add.at(child_sum, p[has_parent], K[v][has_parent])
    alpha = np.zeros(M)
    budget_out = np.zeros(M)
    for k, v in enumerate(levels):
        budget = np.ones(len(v)) if k == 0 else budget_out[parent[v]]
        alpha[v] = budget * share[v]
        budget_out[v] = budget * (1.0 - share[v])
    return alpha


def path_weight_settings(method: str, rho, T, directional):
    """``(rho, T, directional)`` of the path-weight programs (6)-(8) checked, with the defaults
    of ``method`` (``T = 1.5`` for ``"dag"``, directional constraints for ``"maxmin"``)."""
    if method not in PATH_METHODS:
        raise InputError(f"unknown path-weight method {method!r}; choose one of {PATH_METHODS}")
    rho = check_rho(rho)
    if method == "dag" and T is None:
        T = DAG_T
    T = check_T(T)
    directional = (method == "maxmin") if directional is None else bool(directional)
    return rho, T, directional


def path_weights_route(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                       directional: bool | None = None) -> str | None:
    """``"closed form"`` when :func:`solve_path_weights` solves these options in numpy (``"power"``
    on a tree, no ``T``, not directional), else None: then (6)-(8) is a program, declared and
    certified by :func:`hiercvx.formulations.nhsvm.path_weights`."""
    H = check_hierarchy(H)
    rho, T, directional = path_weight_settings(method, rho, T, directional)
    if method != "maxmin" and T is None and not directional and H.is_tree:
        return "closed form"
    return None


def solve_path_weights(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                       directional: bool | None = None) -> np.ndarray:
    """Node weights ``alpha`` over ``H.nodes`` from (6) where a numpy route exists: the closed
    form on trees (:func:`tree_path_weights`; ``method="power"``, no ``T``, not directional).

    Otherwise -- (7), the relaxation (8), the directional constraint, any DAG -- an
    :class:`~hiercvx.exceptions.InputError` says to compute the weights with the certified
    program :func:`hiercvx.formulations.nhsvm.path_weights` (or to prepare through
    :func:`hiercvx.formulations.nhsvm.prepare`, which does).
    """
    H = check_hierarchy(H)
    if path_weights_route(H, method, rho, T, directional) is None:
        raise InputError(f"path weights by method {method!r} on this hierarchy ("
                         f"{'a tree' if H.is_tree else 'a DAG'}, T={T!r}) are a program with no "
                         "closed form; compute them with hiercvx.formulations.nhsvm.path_weights(H, "
                         "...) and pass the array as alpha, or prepare the model with "
                         "hiercvx.formulations.nhsvm.prepare, which does")
    return tree_path_weights(H, rho)


# ====================================================================== the alpha step (20)
def optimal_alpha(U, H: Hierarchy, return_value: bool = False):
    """Closed-form solution of the alpha step (20) on a tree (NHSVM Algorithm 1, Appendix D).

    ``min_alpha sum_n ||U_n||^2 / alpha_n`` s.t. ``sum_{n in anc(l)} alpha_n <= 1``, ``alpha >= 0``.
    With ``B_n = ||U_n||^2``, bottom-up ``N_n = (sqrt(B_n) + sqrt(S_n))^2``, ``S_n = sum_{c child}
    N_c`` (26) and the share ``E_n = sqrt(B_n) / (sqrt(B_n) + sqrt(S_n))`` (1 at leaves); top-down
    ``alpha_n = l_n E_n`` with budgets ``l_root = 1``, ``l_c = l_n (1 - E_n)``.  The optimum is
    ``N_root``.  ``U``: ``(M, d)``, rows in ``H.nodes`` order.  Returns ``alpha`` (and the value
    with ``return_value=True``).  Where the optimum is not unique (a subtree with ``U = 0``), the
    budget is passed down to the leaves, so every root-leaf path sums to 1.

    The paper's Algorithm 1 as printed overwrites ``N_n`` before computing ``E_n`` from it,
    leaves ``E_n = 0`` at the leaves, never assigns the root's ``alpha`` and takes
    ``alpha_n = sqrt(L_p E_n)`` where Appendix D's recursion gives ``L_p E_n``; this is the
    recursion of Appendix D.  DAGs are refused: use :func:`~hiercvx.models.nhsvm.dag_alpha` /
    :func:`~hiercvx.models.nhsvm.barrier_alpha`.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("the closed-form alpha step (Algorithm 1) needs a tree, and this "
                             "hierarchy is a DAG; solve problem (20) with "
                             "hiercvx.solvers.shared_norm.alpha_for(U, H) or "
                             "hiercvx.formulations.nhsvm.alpha_step(U, H) instead")
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise InputError("U must be a numeric (n_nodes, n_features) array") from None
    M = len(H)
    if U.ndim != 2 or U.shape[0] != M:
        raise InputError(f"U must have one row per node of H.nodes (root included): shape ({M}, d), "
                         f"got {U.shape}; a vector of squared row norms b can be passed as "
                         "np.sqrt(b).reshape(-1, 1)")
    if not np.all(np.isfinite(U)):
        raise InputError("U has non-finite entries (NaN or inf)")
    B = np.einsum("ij,ij->i", U, U)
    parent = H.parent_index
    leaf = H.leaf_mask
    levels = depth_levels(H)

    # bottom-up: N_n and the share E_n of the budget that node n keeps
    N = np.zeros(M)
    E = np.zeros(M)
    child_sum = np.zeros(M)
    for v in reversed(levels):
        root_b, root_s = np.sqrt(B[v]), np.sqrt(child_sum[v])
        total = root_b + root_s
        N[v] = total * total
        positive = total > 0
        # a leaf keeps its whole budget; an all-zero subtree passes it on (any split is optimal)
        E[v] = np.where(positive, root_b / np.where(positive, total, 1.0), leaf[v].astype(float))
        p = parent[v]
        has_parent = p >= 0
        np.add.at(child_sum, p[has_parent], N[v][has_parent])

    # top-down: budget l_n, alpha_n = l_n E_n, children get l_n (1 - E_n)
    alpha = np.zeros(M)
    budget_out = np.zeros(M)
    for k, v in enumerate(levels):
        budget = np.ones(len(v)) if k == 0 else budget_out[parent[v]]
        alpha[v] = budget * E[v]
        budget_out[v] = budget * (1.0 - E[v])
    if return_value:
        return alpha, float(N[H.index(H.root)])
    return alpha


def _alpha_dual(b: np.ndarray, A: sp.csr_matrix, mu: np.ndarray) -> float:
    """The dual of (20) at leaf multipliers ``mu >= 0``: ``2 sum_n sqrt(b_n (A^T mu)_n) -
    sum_l mu_l`` (a lower bound on (20) for every such ``mu``)."""
    return 2.0 * float(np.sqrt(b * np.maximum(A.T @ mu, 0.0)).sum()) - float(mu.sum())


def dag_alpha(U, H: Hierarchy, max_iter: int = 500):
    """The alpha step (20) on any hierarchy through its concave dual, certified.

    Minimizing the Lagrangian of (20) over ``alpha`` gives ``alpha_n(mu) = sqrt(B_n / (A^T
    mu)_n)`` (``B_n = ||U_n||^2``, ``mu >= 0`` one multiplier per leaf path) and the dual

        g(mu) = 2 sum_n sqrt(B_n (A^T mu)_n) - sum_l mu_l,     grad g = A alpha(mu) - 1,

    maximized by L-BFGS in ``log mu`` (``max_iter`` iterations at most; one variable per
    leaf; the gradient is infinite where a path with weights below it has ``mu_l = 0``).
    ``alpha(mu)`` clipped and scaled to feasibility (:func:`scaled_alpha`) is the primal point;
    ``g(mu)`` its certified lower bound.  Returns ``(alpha, value, gap)``: ``value`` the
    objective of (20) at ``alpha``, ``gap`` the relative gap to ``g``; the caller decides what a
    gap means (:func:`hiercvx.solvers.shared_norm.alpha_for` continues with
    :func:`~hiercvx.models.nhsvm.barrier_alpha`).  Nodes with ``U_n = 0`` get ``alpha_n = 0``.
    """
    H = check_hierarchy(H)
    U = node_matrix(U, H)
    A = leaf_paths(H)
    B = np.einsum("ij,ij->i", U, U)
    top = float(B.max()) if B.size else 0.0
    if top == 0.0:
        return np.zeros(len(H)), 0.0, 0.0
    b = B / top  # alpha depends on the ratios only; the value scales back by top
    live = b > 0
    At = sp.csr_matrix(A.T)

    def negative_dual(mu):
        load = np.maximum(At @ mu, 1e-300)
        root = np.sqrt(b * load)
        alpha = np.where(live, np.sqrt(b / load), 0.0)
        return -(2.0 * root.sum() - mu.sum()), -(A @ alpha - 1.0)

    def in_logs(theta):  # mu = exp(theta): the gradient is infinite where a live path's mu is 0
        mu = np.exp(theta)
        value, grad = negative_dual(mu)
        return value, grad * mu

    run = minimize(in_logs, np.zeros(A.shape[0]), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=max_iter, gtol=1e-13, ftol=1e-16))
    mu = np.exp(run.x)
    lower = -negative_dual(mu)[0]
    load = np.maximum(At @ mu, 1e-300)
    alpha = scaled_alpha(np.where(live, np.sqrt(b / load), 0.0), A)
    value = ratio_sum(b, alpha)
    gap = (value - lower) / max(abs(value), abs(lower), 1e-300)
    return alpha, value * top, float(max(gap, 0.0))


def _barrier_newton(a, b, A, t):
    """One damped Newton step on ``t sum b / a - sum log(1 - A a) - sum log a`` (backtracking
    line search inside the domain); returns the new point, the Newton decrement squared and
    whether the step moved."""
    s = 1.0 - A @ a
    grad = -t * b / a ** 2 + A.T @ (1.0 / s) - 1.0 / a
    hess = (A.T * (1.0 / s ** 2)) @ A
    hess[np.diag_indices_from(hess)] += 2.0 * t * b / a ** 3 + 1.0 / a ** 2
    step = -np.linalg.solve(hess, grad)
    decrement = float(-grad @ step)

    def value(x):
        return t * float(np.sum(b / x)) - float(np.sum(np.log(1.0 - A @ x))) - float(np.sum(np.log(x)))

    shrink = A @ step
    room = min(np.min(-a[step < 0] / step[step < 0], initial=np.inf),
               np.min(s[shrink > 0] / shrink[shrink > 0], initial=np.inf))
    h = min(1.0, 0.99 * room)
    f0 = value(a)
    while h > 1e-12 and value(a + h * step) > f0 - 0.25 * h * decrement:
        h *= 0.5
    if h <= 1e-12:  # no decrease left in floating point: as centered as it gets
        return a, decrement, False
    return a + h * step, decrement, True


def barrier_alpha(U, H: Hierarchy, tol: float = 1e-10, max_newton: int = 200):
    """The alpha step (20) by a primal log-barrier method (Boyd & Vandenberghe, *Convex
    Optimization*, 2004, section 11.3), certified by the dual of
    :func:`~hiercvx.models.nhsvm.dag_alpha`.

    Over the nodes with ``B_n > 0`` (the others get ``alpha_n = 0``) it follows the central
    path of ``t sum_n B_n / alpha_n - sum_l log(1 - (A alpha)_l) - sum_n log alpha_n`` by damped
    Newton steps (dense Hessian, ``O(M^3)`` each), ``t`` times 10 once centered.  At every
    step the leaf multipliers ``mu_l = 1 / (t s_l)`` of the slacks ``s = 1 - A alpha`` give
    the lower bound ``g(mu)`` (valid for any ``mu >= 0``).  Stops at a relative gap ``<= tol``
    or after ``max_newton`` Newton steps.  Returns ``(alpha, value, gap)`` as
    :func:`~hiercvx.models.nhsvm.dag_alpha`.
    """
    H = check_hierarchy(H)
    U = node_matrix(U, H)
    B = np.einsum("ij,ij->i", U, U)
    top = float(B.max()) if B.size else 0.0
    if top == 0.0:
        return np.zeros(len(H)), 0.0, 0.0
    live = B > 0
    b = B[live] / top
    A_live = leaf_paths(H)[:, live]
    A = A_live.toarray()
    a = scaled_alpha(np.ones(b.size), A_live) * 0.5
    t = 1.0 / max(float(np.sum(b / a)), 1e-300)
    best_value, best_a, best_lower = np.inf, a, -np.inf
    for _ in range(int(max_newton)):
        a, decrement, moved = _barrier_newton(a, b, A, t)
        value = float(np.sum(b / a))
        if value < best_value:
            best_value, best_a = value, a.copy()
        best_lower = max(best_lower, _alpha_dual(b, A_live, 1.0 / (t * (1.0 - A @ a))))
        if best_value - best_lower <= tol * best_value:
            break
        if decrement <= 1e-9 or not moved:
            t *= 10.0
    alpha = np.zeros(len(H))
    alpha[live] = best_a
    gap = max((best_value - best_lower) / max(best_value, 1e-300), 0.0)
    return alpha, best_value * top, float(gap)


# ====================================================================== dual of the path constraints
def min_path_cover(b, H: Hierarchy) -> tuple[np.ndarray, float]:
    """``min 1^T mu`` s.t. ``(A^T mu)_n >= b_n`` for every node, ``mu >= 0``: the path-multiplier
    part of the dual of (14) and, by LP duality, ``max b . alpha`` over ``A alpha <= 1, alpha >= 0``.
    Returns ``(mu, value)``.

    On a tree the value is ``m_root`` with ``m_n = max(b_n, sum_{c child of n} m_c)``: the
    bottom-up repair :func:`~hiercvx.models.nhsvm.cover` from ``mu = 0``.  On a DAG a linear
    program (HiGHS through scipy), repaired to exact feasibility.
    """
    b = np.maximum(np.asarray(b, dtype=float), 0.0)
    A = leaf_paths(H)
    q = A.shape[0]
    if H.is_tree:
        mu = cover(np.zeros(q), b, H, A)
    else:
        res = linprog(np.ones(q), A_ub=-A.T.tocsr(), b_ub=-b, bounds=(0, None), method="highs")
        if res.status != 0:  # pragma: no cover - the LP is always feasible and bounded
            raise SolverError(f"the path-cover LP failed: {res.message}", status=str(res.status),
                              solver="HIGHS")
        mu = cover(res.x, b, H, A)
    return mu, float(mu.sum())
