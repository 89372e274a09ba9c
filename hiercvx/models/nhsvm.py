"""The NHSVM model: normalized hierarchical SVM (10) / (13) and the shared-norm SVM (14).

Source: Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*,
arXiv:1508.02479, 2016.  Notation (paper sections 3-6): ``M`` nodes
(``H.nodes``, root included), leaves ``L`` (``H.leaves``), ``anc(l)`` the ancestors of ``l``
with ``l`` itself, node weights ``W`` ``(M, d)``, path weights ``alpha`` ``(M,)``.  The
leaf-path matrix ``A`` ``(|L|, M)`` has ``A[l, n] = 1`` iff ``n in anc(l)``.

What the CVXPY declarations (:mod:`hiercvx.formulations.nhsvm`) and the fast solvers
(:mod:`hiercvx.solvers.nhsvm_fw`, :mod:`hiercvx.solvers.shared_norm`) both use lives here,
validated once:

* path weights ``alpha`` (6)-(8): :func:`path_weights` (a small certified program) and
  :func:`check_path_weights`; the closed-form alpha step (20) on trees, :func:`optimal_alpha`;
* the leaf-path matrix :func:`leaf_paths`, :func:`depth_levels`, the dual-side path cover
  (:func:`cover`, :func:`min_path_cover`), :func:`scaled_alpha`, :func:`ratio_sum`;
* :func:`prepare` -> :class:`NHSVMModel` (alias ``NHSVMData``): labels as closed sets, the
  normalized attributes (5), the normalized margin (9), the decomposable loss of section 7.1,
  the primal objective of (10) / (13) (:func:`primal_objective`), node scores
  (:func:`node_scores`), the loss-augmented oracle (leaves, or label sets through
  :class:`~hiercvx.inference.LabelSetOracle`, the DAG program (19));
* :func:`prepare_shared` -> :class:`SharedNormModel` (the shared-norm SVM (14)).

Wide hierarchies (issue 15): single-label models keep only what the data use, the rows of the
margin / loss from the leaves some sample holds (``held_leaves``, ``offset_rows``,
``loss_rows``), the sparse leaf-path matrix ``A`` and oracles through it; the dense pieces over
all leaves (``Lam``, (9) as a matrix, the pair model) are built on first use (the CVXPY
references).  ``collapsed()`` replaces each group of interchangeable idle leaves by one leaf of
that multiplicity (:class:`CollapsedLeaves`): the fast solvers run on it and lift the solution
and the dual point back, certified on the full model.

Intercept (both models): LIBLINEAR's regularized bias (:mod:`hiercvx.bias`).  With
``fit_intercept`` the model's ``X`` is ``[X, s]`` (``s = intercept_scaling``, the features as
given are ``X_features``), so the paper's primal, dual, oracles and certificates run unchanged
on the augmented features with augmented weights ``W~_n = [W_n, b_n / s]``: one bias per node,
node scores ``sqrt(alpha_n) (W_n . x + b_n)`` for (10) / (13) and ``U_n . x + b_n`` for (14),
regularized as ``lam (||W_n||^2 + b_n^2 / s^2)`` (resp. ``/ alpha_n``).  The user-facing
:meth:`~NHSVMModel.objective` and :meth:`~NHSVMModel.scores` take weights without the bias
column and ``intercept=``; :meth:`~NHSVMModel.split_weights` / :meth:`~NHSVMModel.augmented_weights`
convert.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, minimize

from .._validation import check_features, check_target
from ..bias import append_constant, bias_scaling, join_bias, split_bias
from ..exceptions import HierarchyError, InputError, LabelError, SolverError
from ..hierarchy import Hierarchy, is_label_set
from ..inference import DecomposableLoss, LabelSetOracle, as_loss
from ..losses import loss_matrix, pairwise_loss
from ..reference import ReferenceProblem, check_size
from . import margin as _margin
from ._base import Model, Variable

__all__ = [
    "PATH_METHODS", "VARIANTS", "DAG_T",
    "check_hierarchy", "check_T", "leaf_paths", "edge_differences", "depth_levels", "cover",
    "scaled_alpha", "ratio_sum", "node_matrix",
    "path_weights_problem", "path_weights", "check_path_weights", "resolve_alpha",
    "optimal_alpha", "dag_alpha", "min_path_cover",
    "closed_labels", "class_loss",
    "NHSVMModel", "NHSVMData", "prepare", "node_scores", "primal_objective", "multilabel_slacks",
    "SharedNormModel", "CollapsedLeaves", "prepare_shared",
]

PATH_METHODS = ("power", "maxmin", "dag")
VARIANTS = ("nhsvm", "13")
#: The paper's T in (8) for its DAG experiments (section 8.1).
DAG_T = 1.5


# ====================================================================== small helpers
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


def _dense(a) -> np.ndarray:
    return a.toarray() if sp.issparse(a) else np.asarray(a)


# ====================================================================== path weights (6)-(8)
def _lagrangian_power_min(r: np.ndarray, rho: float, upper: float) -> np.ndarray:
    """``min_{0 <= a <= upper} a^rho - r a`` per coordinate."""
    a = np.zeros_like(r)
    pos = r > 0
    a[pos] = np.minimum((r[pos] / rho) ** (1.0 / (rho - 1.0)), upper)
    return a ** rho - r * a


# ====================================================================== path weights (6)-(8)
#: the largest exponent of (6) accepted (CVXPY's rational approximation of a^rho fails beyond)
MAX_RHO = 1e3


def _check_rho(rho) -> float:
    try:
        r = float(rho)
    except (TypeError, ValueError):
        raise InputError(f"rho must be a number > 1, got {rho!r}") from None
    if not (np.isfinite(r) and r > 1.0):
        raise InputError(f"rho must be finite and > 1 (problem (6) is not strictly convex at rho = 1; "
                         f"use method='maxmin' for the rho = 1 alternative (7)), got {rho!r}")
    if r > MAX_RHO:  # CVXPY's power cone approximates a^rho by rationals: huge rho overflows
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


def _path_constraints(H: Hierarchy, A, T, directional: bool, linear: bool):
    """``(equalities, inequalities)`` of the path-weight programs, name -> ``(matrix over z,
    rhs)`` with rows ``G z = h`` / ``G z >= h``; ``z = alpha``, or ``(alpha, t)`` for (7)."""
    M, n_leaves = len(H), A.shape[0]

    def on_z(mat):  # a constraint matrix over alpha, padded with a zero column for t
        mat = sp.csr_matrix(mat)
        return sp.hstack([mat, sp.csr_matrix((mat.shape[0], 1))], format="csr") if linear else mat

    equalities, inequalities = {}, {}
    if T is None:
        equalities["paths"] = (on_z(A), np.ones(n_leaves))
    else:
        inequalities["paths_lower"] = (on_z(A), np.ones(n_leaves))
        inequalities["paths_upper"] = (on_z(-A), -T * np.ones(n_leaves))
    if directional and len(H.edge_index):
        inequalities["directional"] = (on_z(edge_differences(H)), np.zeros(len(H.edge_index)))
    if linear:
        floor = sp.hstack([sp.identity(M, format="csr"), -np.ones((M, 1))], format="csr")
        inequalities["floor"] = (floor, np.zeros(M))
    return equalities, inequalities


def path_weights_problem(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                         directional: bool | None = None, max_size: int | None = None) -> ReferenceProblem:
    """The path-weight program as a certified :class:`~hiercvx.ReferenceProblem`.

    ``method="power"``: (6) ``min sum_n alpha_n^rho`` s.t. ``sum_{n in anc(l)} alpha_n = 1`` for
    every leaf, ``alpha >= 0`` (``rho > 1``).  ``"maxmin"``: (7) ``max min_n alpha_n`` under the
    same constraints, declared as ``min -t`` with ``alpha_n >= t`` (so ``sol.objective`` is
    ``-min_n alpha_n``).  ``"dag"``: (6) under the relaxation (8), ``T`` defaulting to 1.5.
    ``T`` (any method): replace the equality by (8) ``1 <= sum_{anc(l)} alpha <= T``.
    ``directional`` (any method; default True for ``"maxmin"`` as printed in (7), else False):
    ``alpha_child >= alpha_parent`` on every edge.

    Lower bound: the Lagrangian at the solver's multipliers (equalities free, inequalities
    clipped at 0), minimized in closed form over the box ``0 <= alpha_n, t <= max(1, T)``,
    which holds every feasible point's coordinates (each node lies on some leaf's path).
    """
    t0 = time.perf_counter()
    H = check_hierarchy(H)
    if method not in PATH_METHODS:
        raise InputError(f"unknown path-weight method {method!r}; choose one of {PATH_METHODS}")
    rho = _check_rho(rho)
    if method == "dag" and T is None:
        T = DAG_T
    T = check_T(T)
    directional = (method == "maxmin") if directional is None else bool(directional)
    M = len(H)
    A = leaf_paths(H)
    n_leaves = A.shape[0]
    linear = method == "maxmin"
    check_size(M + 1, n_leaves + len(H.edge_index) + M, 2 * A.nnz + 4 * M, max_size,
               what=f"the path-weight program ({method})")
    nz = M + int(linear)
    equalities, inequalities = _path_constraints(H, A, T, directional, linear)

    alpha = cp.Variable(M, name="alpha")
    variables = {"alpha": alpha}
    if linear:
        t = cp.Variable(name="t")
        variables["t"] = t
        z = cp.hstack([alpha, cp.reshape(t, (1,), order="C")])
        objective_expr = -t
    else:
        z = alpha
        objective_expr = cp.sum_squares(alpha) if rho == 2.0 else cp.sum(cp.power(alpha, rho))
    constraints = {name: mat @ z == rhs for name, (mat, rhs) in equalities.items()}
    constraints.update({name: mat @ z >= rhs for name, (mat, rhs) in inequalities.items()})
    nonneg = alpha >= 0
    problem = cp.Problem(cp.Minimize(objective_expr), list(constraints.values()) + [nonneg])
    upper = 1.0 if T is None else T

    def stacked(values):
        a = np.asarray(values["alpha"], dtype=float)
        return np.r_[a, float(values["t"])] if linear else a

    def objective(values):
        a = np.asarray(values["alpha"], dtype=float)
        if linear:
            return -float(a.min())
        return float(np.sum(np.maximum(a, 0.0) ** rho))

    def lower_bound(values, duals):
        # Lagrangian f(z) - nu^T (A_eq z - b) - mu^T (G z - h); CVXPY's equality dual is -nu
        r = np.zeros(nz)
        const = 0.0
        for name, (mat, rhs) in equalities.items():
            nu = -np.asarray(duals[name], dtype=float)
            r += mat.T @ nu
            const += float(rhs @ nu)
        for name, (mat, rhs) in inequalities.items():
            mu = np.maximum(np.asarray(duals[name], dtype=float), 0.0)
            r += mat.T @ mu
            const += float(rhs @ mu)
        if linear:  # objective -t: coefficient 0 on alpha, -1 on t
            c = np.r_[np.zeros(M), -1.0]
            return const + float(np.minimum(0.0, (c - r) * upper).sum())
        return const + float(_lagrangian_power_min(r, rho, upper).sum())

    def infeasibility(values):
        zv = stacked(values)
        worst = float(max(0.0, -np.min(values["alpha"])))
        for mat, rhs in equalities.values():
            worst = max(worst, float(np.abs(mat @ zv - rhs).max()))
        for mat, rhs in inequalities.values():
            worst = max(worst, float(np.max(rhs - mat @ zv, initial=0.0)))
        return worst

    what = {"power": f"(6), rho={rho:g}", "maxmin": "(7)", "dag": f"(6), rho={rho:g}"}[method]
    relax = "" if T is None else f", relaxation (8) T={T:g}"
    return ReferenceProblem(
        problem, variables=variables, objective=objective, lower_bound=lower_bound,
        weights=lambda values: np.maximum(np.asarray(values["alpha"], dtype=float), 0.0),
        constraints=constraints, infeasibility=infeasibility,
        name=f"NHSVM path weights {what}{relax}{', directional' if directional else ''}",
        build_time=time.perf_counter() - t0,
        data={"H": H, "method": method, "rho": rho, "T": T, "directional": directional,
              "leaf_paths": A})


def path_weights(H: Hierarchy, method: str = "power", rho: float = 2.0, T=None,
                 directional: bool | None = None, *, solver: str | None = None,
                 return_solution: bool = False, max_size: int | None = None):
    """Node weights ``alpha`` over ``H.nodes`` from (6), (7) or (8); see :func:`path_weights_problem`.

    Returns the ``(M,)`` array (clipped at 0); with ``return_solution=True`` also the
    certified :class:`~hiercvx.ReferenceSolution` (``sol.objective``, ``sol.gap``; its
    ``problem`` via ``path_weights_problem``).  The max-min program (7) is an LP whose
    maximizer is generally not unique (only ``min alpha`` is); the solver's vertex is returned.
    """
    prob = path_weights_problem(H, method=method, rho=rho, T=T, directional=directional,
                                max_size=max_size)
    sol = prob.solve(solver=solver)
    alpha = np.asarray(sol.weights, dtype=float)
    return (alpha, sol) if return_solution else alpha


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




def resolve_alpha(alpha, H: Hierarchy, T=None) -> np.ndarray:
    """Path weights from ``alpha``: an array over ``H.nodes`` (checked against (4) / (8)), a
    method of :func:`path_weights`, or ``None`` (``"power"`` on trees, ``"dag"`` on DAGs)."""
    if alpha is None:
        alpha = "power" if H.is_tree else "dag"
    if isinstance(alpha, str):
        return path_weights(H, method=alpha, T=T)
    return check_path_weights(alpha, H, T=T)


# ====================================================================== the alpha step (20)
def optimal_alpha(U, H: Hierarchy, return_value: bool = False):
    """Closed-form solution of the alpha step (20) on a tree (NHSVM Algorithm 1, Appendix D).

    ``min_alpha sum_n ||U_n||^2 / alpha_n`` s.t. ``sum_{n in anc(l)} alpha_n <= 1``, ``alpha >= 0``.
    With ``B_n = ||U_n||^2``, bottom-up ``N_n = (sqrt(B_n) + sqrt(S_n))^2``, ``S_n = sum_{c child}
    N_c`` (26) and the share ``E_n = sqrt(B_n) / (sqrt(B_n) + sqrt(S_n))`` (1 at leaves); top-down
    ``alpha_n = l_n E_n`` with budgets ``l_root = 1``, ``l_c = l_n (1 - E_n)``.  The optimum is
    ``N_root``.  ``U``: ``(M, d)``, rows in ``H.nodes`` order.  Returns ``alpha`` (and the value
    with ``return_value=True``).  Where the optimum is not unique (a subtree with ``U = 0``), the
    budget is passed down to the leaves, so every root-leaf path sums to 1.  DAGs are refused:
    use :func:`hiercvx.formulations.nhsvm.alpha_step`.
    """
    if not isinstance(H, Hierarchy):
        raise InputError(f"H must be a hiercvx.Hierarchy, got {type(H).__name__}")
    if not H.is_tree:
        raise HierarchyError("the closed-form alpha step (Algorithm 1) needs a tree, and this "
                             "hierarchy is a DAG; solve problem (20) with "
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


def dag_alpha(U, H: Hierarchy, tol: float = 1e-10, max_iter: int = 500):
    """The alpha step (20) on any hierarchy through its concave dual, certified.

    Minimizing the Lagrangian of (20) over ``alpha`` gives ``alpha_n(mu) = sqrt(B_n / (A^T
    mu)_n)`` (``B_n = ||U_n||^2``, ``mu >= 0`` one multiplier per leaf path) and the dual

        g(mu) = 2 sum_n sqrt(B_n (A^T mu)_n) - sum_l mu_l,     grad g = A alpha(mu) - 1,

    maximized by L-BFGS in ``log mu`` (a few dozen iterations: one variable per leaf; the
    gradient is infinite where a path with weights below it has ``mu_l = 0``).
    ``alpha(mu)`` clipped and scaled to feasibility (:func:`scaled_alpha`) is the primal point;
    ``g(mu)`` its certified lower bound.  Returns ``(alpha, value, gap)``: ``value`` the
    objective of (20) at ``alpha``, ``gap`` the relative gap to ``g``; the caller decides what a
    gap above ``tol`` means (:func:`hiercvx.solvers.shared_norm.alpha_for` falls back to the
    CVXPY program).  Nodes with ``U_n = 0`` get ``alpha_n = 0``.
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


def min_path_cover(b, H: Hierarchy) -> tuple[np.ndarray, float]:
    """``min 1^T mu`` s.t. ``(A^T mu)_n >= b_n`` for every node, ``mu >= 0``: the path-multiplier
    part of the dual of (14) and, by LP duality, ``max b . alpha`` over ``A alpha <= 1, alpha >= 0``.
    Returns ``(mu, value)``.

    On a tree the value is ``m_root`` with ``m_n = max(b_n, sum_{c child of n} m_c)``: the
    bottom-up repair :func:`cover` from ``mu = 0``.  On a DAG a linear program (HiGHS through
    scipy), repaired to exact feasibility.
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


# ====================================================================== labels
def closed_labels(Y, H: Hierarchy, n_samples: int, multilabel: bool | None):
    """``(T, leaf_pos, multilabel)``: closed label sets ``T`` ``(n, M)`` bool, each sample's leaf
    (position in ``H.leaves``; single-label only) and the label space used."""
    check_target(Y, "Y", allow_mixed=True)
    if sp.issparse(Y) or (isinstance(Y, np.ndarray) and Y.ndim == 2):
        inferred = True
    else:
        if isinstance(Y, (str, bytes)):
            raise LabelError("Y must hold one label (or label set) per sample, got a single string")
        Y = list(Y)
        inferred = any(is_label_set(item, H) for item in Y)
    multilabel = inferred if multilabel is None else bool(multilabel)
    ind = H.label_indicator(Y)  # unknown node names raise LabelError here
    if ind.shape[0] != n_samples:
        raise InputError(f"Y has {ind.shape[0]} entries but X has {n_samples} rows; give one label "
                         "(or label set) per sample")
    leaf_mask = H.leaf_mask
    leaf_part = ind[:, np.flatnonzero(leaf_mask)]
    counts = np.asarray(leaf_part.sum(axis=1)).ravel()
    if np.any(counts == 0):
        i = int(np.flatnonzero(counts == 0)[0])
        labels = [H.nodes[j] for j in ind[i].indices]
        if labels:
            raise LabelError(f"sample {i} is labelled {labels!r}, which are internal nodes; NHSVM labels "
                             "are leaves (or sets of leaves). Use pp = H.with_self_leaves() and train on "
                             "pp.hierarchy with pp.transform(Y)")
        raise LabelError(f"sample {i} has an empty label set; every sample needs at least one leaf")
    leaf_cols = np.flatnonzero(leaf_mask)
    rows, cols = leaf_part.nonzero()
    leaves_only = sp.csr_matrix((np.ones(len(rows)), (rows, leaf_cols[cols])), shape=ind.shape)
    T = np.asarray(((leaves_only @ H.ancestor_matrix.astype(float)) > 0).toarray())
    stray = np.asarray(ind.toarray() & ~T)
    if stray.any():
        i, j = np.argwhere(stray)[0]
        raise LabelError(f"sample {i} has the internal node {H.nodes[j]!r} as a label without a leaf "
                         "below it; NHSVM labels are leaves. Use pp = H.with_self_leaves() and train "
                         "on pp.hierarchy with pp.transform(Y)")
    leaf_pos = None
    if not multilabel:
        if np.any(counts > 1):
            i = int(np.flatnonzero(counts > 1)[0])
            raise LabelError(f"sample {i} has {counts[i]} leaf labels; single-label NHSVM needs exactly "
                             "one per sample (pass multilabel=True for label sets)")
        leaf_pos = cols[np.argsort(rows, kind="stable")]   # positions in H.leaves
    return T, leaf_pos, multilabel



def class_loss(H: Hierarchy, loss) -> np.ndarray:
    """``Delta`` of (14) as a ``(q, q)`` matrix over ``H.leaves`` (``[true, predicted]``) from a
    loss name of :data:`hiercvx.losses.LOSSES` or an array."""
    q = len(H.leaves)
    if isinstance(loss, str):
        L = loss_matrix(H, loss, classes=H.leaves)
    else:
        try:
            L = np.asarray(loss, dtype=float)
        except (TypeError, ValueError):
            raise InputError("loss must be a loss name of hiercvx.losses.LOSSES or a (q, q) array "
                             "over H.leaves") from None
    if L.shape != (q, q):
        raise InputError(f"the loss matrix must be ({q}, {q}) over H.leaves, got shape {L.shape}")
    if not np.all(np.isfinite(L)) or np.any(L < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return L


def _leaf_vertices(H: Hierarchy, offset: np.ndarray, scale: np.ndarray):
    """``(paths, offset, scale)`` as C-contiguous float arrays: the leaf vertices of a
    single-label problem (``paths`` ``(q, M)``; ``b`` and ``sigma`` per (true, candidate) leaf)."""
    paths = np.ascontiguousarray(H.ancestor_matrix[H.leaf_indices].toarray(), dtype=float)
    return (paths, np.ascontiguousarray(offset, dtype=float),
            np.ascontiguousarray(scale, dtype=float))


def _one_leaf_margin(leaf_pos: np.ndarray, n_leaves: int, loss: np.ndarray,
                     Lam) -> _margin.MarginData:
    """The margin-rescaled pair model of a single-label problem: sample i's relevant class is
    its leaf ``leaf_pos[i]``, every other leaf an irrelevant one, ``Delta = loss``."""
    Y = np.zeros((len(leaf_pos), n_leaves), dtype=bool)
    Y[np.arange(len(leaf_pos)), leaf_pos] = True
    return _margin.margin_data(Y, loss, Lam=Lam, rescaling="margin")


class _LeafVertices:
    """``paths``, ``offset``, ``scale`` of a single-label model, read off its cached
    ``_vertices`` (:func:`_leaf_vertices`; None for multi-label NHSVM)."""

    @property
    def paths(self) -> np.ndarray | None:
        return self._vertices[0]

    @property
    def offset(self) -> np.ndarray | None:
        return self._vertices[1]

    @property
    def scale(self) -> np.ndarray | None:
        return self._vertices[2]


def _leaf_oracle(S: np.ndarray, T: np.ndarray, leaf_pos: np.ndarray, paths, offset, scale):
    """:func:`_leaf_violations` with ``b`` / ``sigma`` given as ``(q, q)`` matrices over the
    (true, candidate) leaves and the ``(q, M)`` leaf paths dense or sparse (``T`` unused: the
    own path sum is read off the leaf sums)."""
    A = paths if sp.issparse(paths) else sp.csr_matrix(paths)
    return _leaf_violations(S, leaf_pos, A, offset[leaf_pos], scale[leaf_pos])


def _leaf_violations(S: np.ndarray, leaf_pos: np.ndarray, A: sp.csr_matrix, offset: np.ndarray,
                     scale: np.ndarray):
    """``(xi, best)``: ``xi_i = max(0, max_l b_il - sigma_il (s_i(t) - s_i(l)))`` over the leaves
    ``l != t = leaf_pos[i]`` and its maximizer (``-1`` when nothing is violated); ``b``,
    ``sigma``: ``(n, q)`` per sample (rows of its true leaf).  Leaf path sums through the
    sparse leaf-path matrix ``A``: ``O(n nnz(A))``, no dense ``(q, M)`` product."""
    rows = np.arange(S.shape[0])
    C = np.asarray((A @ np.asarray(S, dtype=float).T).T)       # leaf path sums (n, q)
    viol = offset + scale * (C - C[rows, leaf_pos][:, None])
    viol[rows, leaf_pos] = 0.0                                  # the true leaf: 0
    best = np.argmax(viol, axis=1)
    value = viol[rows, best]
    return np.maximum(value, 0.0), np.where(value > 0, best, -1)


def _held_rows(leaf_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(held_leaves, held_row)``: the leaves some sample holds (sorted) and each sample's row
    among them."""
    held = np.unique(leaf_pos)
    return held, np.searchsorted(held, leaf_pos)


def _leaf_pair_loss(H: Hierarchy, held: np.ndarray, loss: str, **kwargs) -> np.ndarray:
    """``loss`` from each held leaf (positions ``held`` in ``H.leaves``) to every leaf,
    ``(len(held), q)``, evaluated on those pairs only (``O(len(held) q)``, not ``(q, q)``) from
    the closed leaf indicators; when most leaves are held, the whole matrix's rows."""
    q = len(H.leaves)
    if 4 * len(held) > q:  # the (q, q) matrix is computed on all pairs at once: cheaper then
        return loss_matrix(H, loss, classes=H.leaves, **kwargs)[held]
    paths = sp.csr_matrix(H.ancestor_matrix[H.leaf_indices]).astype(bool)
    rows = pairwise_loss(H, paths[np.repeat(held, q)], paths[np.tile(np.arange(q), len(held))],
                         loss, **kwargs)
    return np.asarray(rows, dtype=float).reshape(len(held), q)


@dataclass
class CollapsedLeaves:
    """A model (``full``) and its collapsed model (``model``): each group of interchangeable
    idle leaves (no sample holds them; same parents; the same problem data from every held
    leaf) replaced by its first leaf, of multiplicity the group's size.

    ``kept`` the full node of each collapsed node (``H.nodes`` positions; the collapsed
    hierarchy keeps their order), ``node_map[n]`` the collapsed node of full node ``n``,
    ``multiplicity[n]`` the size of ``n``'s group (1 outside), ``leaf_map[l]`` the collapsed
    leaf of full leaf ``l`` (``H.leaves`` positions), ``kept_leaves`` the full leaf of each
    collapsed leaf.  A node of multiplicity ``k`` scores ``w'_n . x / sqrt(k)`` in the
    collapsed model: ``w' = sqrt(k) w`` carries the group's regularizer ``k ||w||^2`` as
    ``||w'||^2`` (see :meth:`SharedNormModel.collapsed`, :meth:`NHSVMModel.collapsed`)."""

    full: object
    model: object
    kept: np.ndarray
    node_map: np.ndarray
    multiplicity: np.ndarray
    leaf_map: np.ndarray
    kept_leaves: np.ndarray

    @staticmethod
    def structure(H: Hierarchy, groups: list):
        """``(Hc, kept, node_map, multiplicity, leaf_map, kept_leaves)`` for leaf ``groups``
        (arrays of positions in ``H.leaves``, two or more each)."""
        M = len(H)
        leaf_nodes = H.leaf_indices
        node_map = np.arange(M)
        multiplicity = np.ones(M)
        drop = np.zeros(M, dtype=bool)
        for members in groups:
            nodes = leaf_nodes[members]
            node_map[nodes] = nodes[0]
            multiplicity[nodes] = len(nodes)
            drop[nodes[1:]] = True
        kept = np.flatnonzero(~drop)
        position = np.full(M, -1, dtype=np.int64)
        position[kept] = np.arange(kept.size)
        names = [H.nodes[k] for k in kept.tolist()]
        edges = [(H.nodes[p], H.nodes[c]) for p, c in H.edge_index.tolist() if not drop[c]]
        Hc = Hierarchy(edges, nodes=names)    # keeps the order of `nodes`: node k is kept[k]
        leaf_of_node = np.full(M, -1, dtype=np.int64)
        leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
        kept_leaves = leaf_of_node[[H.index(v) for v in Hc.leaves]]
        leaf_of_kept = np.full(M, -1, dtype=np.int64)
        leaf_of_kept[kept[[Hc.index(v) for v in Hc.leaves]]] = np.arange(len(kept_leaves))
        leaf_map = leaf_of_kept[node_map[leaf_nodes]]
        return Hc, kept, position[node_map], multiplicity, leaf_map, kept_leaves

    @staticmethod
    def relabel(H: Hierarchy, groups: list, leaf_pos: np.ndarray, held_leaves: np.ndarray):
        """:meth:`structure` and the samples on it: ``(structure, (leaf_pos, held, held_row,
        rows))`` with each sample's leaf in the collapsed tree, the held leaves there and each
        sample's row among them, and ``rows`` the held leaves' rows in the full model's
        per-held-leaf arrays."""
        structure = CollapsedLeaves.structure(H, groups)
        leaf_map, kept_leaves = structure[4], structure[5]
        leaf_pos = leaf_map[leaf_pos]
        held, held_row = _held_rows(leaf_pos)
        return structure, (leaf_pos, held, held_row, np.searchsorted(held_leaves, kept_leaves[held]))

    @property
    def n_removed(self) -> int:
        return len(self.node_map) - len(self.kept)

    def lift_weights(self, W_collapsed) -> np.ndarray:
        """The full model's node weights: a group's leaves get ``w'_r / sqrt(k)``."""
        W = np.asarray(W_collapsed, dtype=float)[self.node_map]
        return W / np.sqrt(self.multiplicity)[:, None]

    def lift_nodes(self, values) -> np.ndarray:
        """Per-node values (``alpha``) of the full model: a group's leaves share their value."""
        return np.asarray(values, dtype=float)[self.node_map]

    def lift_dual(self, G_collapsed: np.ndarray) -> np.ndarray:
        """The full model's node-space dual point: a group's masses spread evenly over its
        ``k`` leaves (each leaf's coefficient ``g_r / k``); same dual value."""
        return np.asarray(G_collapsed, dtype=float)[:, self.node_map] / self.multiplicity[None, :]

    def lift_masses(self, beta_collapsed: np.ndarray) -> np.ndarray:
        """The full model's ``(n, q)`` leaf masses: a group's mass spread evenly (``beta_r / k``)."""
        k = self.multiplicity[self.full.H.leaf_indices]
        return np.asarray(beta_collapsed, dtype=float)[:, self.leaf_map] / k[None, :]


def _interchangeable_groups(H: Hierarchy, held: np.ndarray, *columns) -> list:
    """Groups (two or more) of idle leaves with the same parents and equal ``columns`` (arrays
    with one column per leaf of ``H.leaves``, or one entry per leaf)."""
    q = len(H.leaves)
    idle = np.setdiff1d(np.arange(q), held)
    if idle.size < 2:
        return []
    leaf_nodes = H.leaf_indices
    groups: dict = {}
    for l in idle.tolist():
        key = (tuple(sorted(H.index(p) for p in H.parents(H.nodes[leaf_nodes[l]]))),
               b"".join(np.ascontiguousarray(c[..., l]).tobytes() for c in columns))
        groups.setdefault(key, []).append(l)
    return [np.asarray(g) for g in groups.values() if len(g) >= 2]


# ====================================================================== LIBLINEAR's bias
class _NodeBias:
    """LIBLINEAR's regularized bias of a node-weight model (module docstring, "Intercept").

    The model has ``X`` (the features the solvers see: ``[X, s]`` with a bias), ``X_features``
    (as given), ``fit_intercept`` and ``intercept_scaling``."""

    def __post_init__(self):  # run by the dataclass __init__ of each model
        if self.X_features is None:
            self.X_features = self.X

    @property
    def bias_scaling(self) -> float | None:
        """``intercept_scaling`` with a bias, None without (what :mod:`hiercvx.bias` takes)."""
        return self.intercept_scaling if self.fit_intercept else None

    @property
    def n_features_in(self) -> int:
        """Columns of the features as given (without the bias column)."""
        return self.X_features.shape[1]

    def augmented_weights(self, weights, intercept=None) -> np.ndarray:
        """``W~ = [W, b / s]``: weights over the model's own features ``X`` from the node weights
        ``W`` without the bias column and the node biases ``b`` (None: zeros).  Without a bias
        ``W`` itself."""
        W = np.asarray(weights, dtype=float)
        if W.ndim != 2 or W.shape[1] != self.n_features_in:
            raise InputError(f"node weights must have shape (n_nodes, {self.n_features_in}) (one "
                             f"column per feature, without the bias column), got {W.shape}")
        return join_bias(W, intercept, self.bias_scaling)

    def split_weights(self, W_aug) -> tuple[np.ndarray, np.ndarray]:
        """``(W, b)`` of weights over the model's own features: the bias column split off,
        ``b = s * W~[:, -1]`` (``b`` zeros without a bias)."""
        return split_bias(W_aug, self.bias_scaling)

    def solution_weights(self, solution) -> tuple[np.ndarray, np.ndarray]:
        """``(W, b)`` of a solution: its ``weights`` (without the bias column) and its
        ``values["intercept"]`` / ``extras["intercept"]``; a solution without them (e.g. the
        multi-label cutting-plane reference) holds weights over ``X`` itself, split here."""
        W = np.asarray(solution.weights, dtype=float)
        found = [getattr(solution, k, None) or {} for k in ("values", "extras")]
        b = next((f["intercept"] for f in found if f.get("intercept") is not None), None)
        if b is None and W.shape[1] == self.X.shape[1]:
            return self.split_weights(W)
        return W, (np.zeros(W.shape[0]) if b is None else np.asarray(b, dtype=float))

    def _scored(self, weights, X, intercept):
        """``(W~, X~)``: augmented weights and the rows to score.  ``X``: None (the training
        rows), rows as given, or rows with the bias column already appended (``self.X``)."""
        W = self.augmented_weights(weights, intercept)
        if X is None:
            return W, self.X
        if self.fit_intercept and X.shape[1] == self.n_features_in:
            return W, append_constant(X, self.intercept_scaling)
        return W, X

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights and biases (:meth:`solution_weights`)."""
        W, b = self.solution_weights(solution)
        return self.objective(W, intercept=b, **params)


# ====================================================================== NHSVM (10) / (13)
@dataclass(eq=False)
class NHSVMModel(_NodeBias, _LeafVertices, Model):
    """Validated NHSVM inputs (:func:`prepare`); what the references and fast solvers share.

    ``T`` ``(n, M)`` bool: each sample's closed label set ``y_i``; ``leaf_pos``: its leaf
    (position in ``H.leaves``, single-label); ``loss``: the decomposable loss of section 7.1
    (multi-label).  ``X``: the features the solvers see (``[X, s]`` with ``fit_intercept``),
    ``X_features``: as given (module docstring).

    Single-label: ``held_leaves`` the leaves some sample holds (sorted), ``held_row[i]``
    sample ``i``'s row among them; ``offset_rows`` / ``scale_rows`` ``(len(held_leaves), q)``:
    ``b`` and ``sigma`` from each held leaf to every leaf (``b = (9)``, ``sigma = 1`` for (10);
    ``b = 1``, ``sigma = 1 / (9)`` for (13); 0 on the own leaf), the only rows the problem
    uses.  The dense pieces over all leaves are built on first use (the fast path on a wide
    hierarchy never needs them): ``Lam`` ``(|L|, M)`` the normalized class attributes (5),
    ``structural`` ``(|L|, |L|)`` the normalized margin (9), ``margin`` the pair model of
    :mod:`hiercvx.models.margin` ((10)), ``paths`` / ``offset`` / ``scale`` the leaf vertices.

    ``multiplicity`` (None: all 1) makes node ``n`` stand for ``k_n`` interchangeable leaves
    (:meth:`collapsed`): its score is ``sqrt(alpha_n / k_n) W_n . x`` while the margin (9)
    keeps ``alpha``.
    """

    X: object
    H: Hierarchy
    alpha: np.ndarray
    T: np.ndarray
    multilabel: bool
    variant: str
    leaf_pos: np.ndarray | None = None
    loss: DecomposableLoss | None = None
    held_leaves: np.ndarray | None = None
    held_row: np.ndarray | None = None
    offset_rows: np.ndarray | None = None
    scale_rows: np.ndarray | None = None
    multiplicity: np.ndarray | None = None
    X_features: object = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0

    method = "nhsvm"
    equations = {"attributes": "(5)", "path weights": "(6)-(8)", "margin": "(9)",
                 "primal": "(10)", "variant": "(13)", "inference": "(19)"}
    variables = {
        "W": Variable("(n_nodes, n_features)", "node weights; node score sqrt(alpha_n) W_n . x"),
        "xi": Variable("(n_samples,)", "hinge slack of each sample"),
        "intercept": Variable("(n_nodes,)", "node biases b_n with fit_intercept (LIBLINEAR's, "
                                            "not in the paper)"),
        "beta": Variable("(n_samples, n_vertices)", "mass of each sample on its candidate labels "
                         "(leaves, or label sets found by the oracle), in a simplex with slack", "dual"),
    }

    @property
    def scored_alpha(self) -> np.ndarray:
        """The weights of the node scores ``sqrt(alpha_n / k_n) W_n . x`` (``alpha`` itself
        without ``multiplicity``)."""
        return self.alpha if self.multiplicity is None else self.alpha / self.multiplicity

    @property
    def sqrt_alpha(self) -> np.ndarray:
        return np.sqrt(self.scored_alpha)

    @cached_property
    def A(self) -> sp.csr_matrix:
        """The leaf-path matrix (sparse)."""
        return leaf_paths(self.H)

    # the dense single-label pieces, built on first use -------------------------------------
    @cached_property
    def Lam(self) -> np.ndarray | None:
        """The normalized attributes (5) of the leaves (score weights ``sqrt(alpha / k)``)."""
        if self.multilabel:
            return None
        return self.A.toarray() * self.sqrt_alpha[None, :]

    @cached_property
    def structural(self) -> np.ndarray | None:
        """The normalized margin (9) between all leaves ``(|L|, |L|)``."""
        if self.multilabel:
            return None
        return loss_matrix(self.H, "structural", classes=self.H.leaves, alpha=self.alpha)

    @cached_property
    def margin(self) -> _margin.MarginData | None:
        """The pair model of single-label (10) (margin rescaling, ``Lam`` (5), loss (9))."""
        if self.multilabel or self.variant != "nhsvm":
            return None
        return _one_leaf_margin(self.leaf_pos, len(self.H.leaves), self.structural, self.Lam)

    @cached_property
    def _vertices(self):
        if self.multilabel:
            return None, None, None
        dist = np.asarray(self.structural, dtype=float)
        if self.variant == "nhsvm":
            return _leaf_vertices(self.H, dist, np.ones_like(dist))
        off = ~np.eye(len(dist), dtype=bool)
        return _leaf_vertices(self.H, off.astype(float),
                              np.where(off, 1.0 / np.where(off, dist, 1.0), 0.0))

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_nodes(self) -> int:
        return len(self.H)

    def scores(self, weights, X=None, intercept=None) -> np.ndarray:
        """Node scores ``sqrt(alpha_n) (W_n . x + b_n)`` ``(n, M)`` of ``X`` (default: the
        training rows) at ``W`` without the bias column and ``intercept`` ``b`` (None: zeros)."""
        W, X = self._scored(weights, X, intercept)
        return node_scores(W, X, self.scored_alpha)

    def objective(self, weights, lam: float = 1.0, oracle: LabelSetOracle | None = None,
                  intercept=None) -> float:
        """The primal objective of (10) / (13) at ``W`` (without the bias column) and the node
        biases ``intercept`` (:func:`primal_objective` at the augmented weights)."""
        return primal_objective(self.augmented_weights(weights, intercept), self, lam, oracle)

    def label_oracle(self, inference: str = "auto") -> LabelSetOracle:
        """The exact label-set oracle (tree DP, DAG program (19)); one per method, cached."""
        cache = self.__dict__.setdefault("_oracles", {})
        if inference not in cache:
            cache[inference] = LabelSetOracle(self.H, inference)
        return cache[inference]

    def oracle(self, scores, rows=None, *, label_oracle: LabelSetOracle | None = None):
        """Loss-augmented inference at node scores ``scores`` (rows ``rows`` of the data).

        Returns ``(xi, vertex)``: the slacks ``max(0, max_y b - sigma (s(y_i) - s(y)))`` and the
        maximizer: a leaf position (``-1`` when the true leaf is best) or a bool label set
        ``(len, M)`` (equal to the true set when nothing is violated).
        """
        rows = np.arange(scores.shape[0]) if rows is None else rows
        T = self.T[rows]
        if self.multilabel:
            label_oracle = self.label_oracle() if label_oracle is None else label_oracle
            Z, info = label_oracle.solve(scores, loss=self.loss, true_indicator=T, return_info=True,
                                         verbose=False)
            own = np.where(T, scores, 0.0).sum(axis=1)
            return np.maximum(info.objective - own, 0.0), Z
        held = self.held_row[rows]
        return _leaf_violations(scores, self.leaf_pos[rows], self.A, self.offset_rows[held],
                                self.scale_rows[held])

    def vertex_terms(self, i: int, vertex) -> tuple[np.ndarray, float]:
        """``(c, b)`` of one vertex for sample ``i``: ``c = sigma (t_i - z)`` over the nodes
        (unscaled by alpha) and ``b``."""
        t = self.T[i].astype(float)
        if self.multilabel:
            return t - np.asarray(vertex, dtype=float), float(self.loss(vertex, self.T[i]))
        if vertex < 0:
            return np.zeros_like(t), 0.0
        h = self.held_row[i]
        path = self.A[vertex].toarray().ravel()
        return self.scale_rows[h, vertex] * (t - path), float(self.offset_rows[h, vertex])

    def dual_value(self, G: np.ndarray, l: np.ndarray, lam: float) -> float:
        """``sum_i l_i - ||V||^2 / (4 lam)``, ``V = sqrt(alpha) * (X^T G)^T``: the dual of (10) at a
        feasible point in node space (``G`` ``(n, M)``, ``l`` ``(n,)``)."""
        V = np.asarray(self.X.T @ G).T * self.sqrt_alpha[:, None]
        return float(np.sum(l)) - float(np.sum(V * V)) / (4.0 * lam)

    def lower_bound(self, dual, lam: float = 1.0) -> float:
        """A certified lower bound on (10) / (13) at a dual point, projected first.

        ``dual``: single-label, ``(n, q)`` masses over the candidate leaves; multi-label, a
        mapping ``{"sample": (K,), "sets": (K, M) bool, "beta": (K,)}`` of masses on label sets.
        Masses are clipped at 0 and each sample's total scaled down to at most 1 (its simplex
        with slack; the true label gets nothing), then :meth:`dual_value`.
        """
        n, M = self.T.shape
        if self.multilabel:
            sample = np.asarray(dual["sample"], dtype=np.int64)
            sets = np.asarray(dual["sets"], dtype=bool)
            beta = np.maximum(np.asarray(dual["beta"], dtype=float), 0.0)
            total = np.bincount(sample, weights=beta, minlength=n)
            beta = beta / np.maximum(total, 1.0)[sample]
            G = np.zeros((n, M))
            np.add.at(G, sample, beta[:, None] * (self.T[sample] - sets.astype(float)))
            l = np.bincount(sample, weights=beta * self.loss(sets, self.T[sample]), minlength=n)
            return self.dual_value(G, l, lam)
        beta = np.maximum(np.asarray(dual, dtype=float), 0.0).copy()
        beta[np.arange(n), self.leaf_pos] = 0.0
        beta /= np.maximum(beta.sum(axis=1), 1.0)[:, None]
        w = beta * self.scale_rows[self.held_row]
        G = w.sum(axis=1)[:, None] * self.T - np.asarray(self.A.T @ w.T).T
        l = (beta * self.offset_rows[self.held_row]).sum(axis=1)
        return self.dual_value(G, l, lam)

    def collapsed(self) -> CollapsedLeaves | None:
        """Single-label (10) / (13) with every group of interchangeable leaves replaced by one
        leaf, or None when no two leaves are interchangeable (or the model is multi-label).

        Leaves ``a, b`` are interchangeable when no sample holds them, they have the same
        parents, ``alpha_a = alpha_b`` and the same ``b``, ``sigma`` from every held leaf (then
        (9) agrees too).  Swapping them maps the problem onto itself; its optimal ``W`` is
        unique (``lam ||W||^2``), so ``W_a = W_b``.  On such points a group of ``k`` leaves is
        one leaf of multiplicity ``k``: ``W'_r = sqrt(k) W_a`` carries ``k ||W_a||^2`` as
        ``||W'_r||^2`` and scores ``sqrt(alpha_a / k) W'_r . x``; the margin (9) is
        unchanged.  The collapsed optimum is the full one, and the solution and dual point
        lift exactly (:class:`CollapsedLeaves`).  (The margin engine collapses the same way
        on class kernels, :mod:`hiercvx.models.symmetry`; doing it here first means the dense
        pieces over all leaves are never built.)"""
        if self.multilabel:
            return None
        a_leaf = self.alpha[self.H.leaf_indices]
        groups = _interchangeable_groups(self.H, self.held_leaves, a_leaf, self.offset_rows,
                                         self.scale_rows)
        if not groups:
            return None
        (Hc, kept, node_map, mult, leaf_map, kept_leaves), (leaf_pos, held, held_row, rows) = \
            CollapsedLeaves.relabel(self.H, groups, self.leaf_pos, self.held_leaves)
        model = NHSVMModel(
            X=self.X, H=Hc, alpha=self.alpha[kept], T=np.ascontiguousarray(self.T[:, kept]),
            multilabel=False, variant=self.variant, leaf_pos=leaf_pos, held_leaves=held,
            held_row=held_row, offset_rows=self.offset_rows[np.ix_(rows, kept_leaves)],
            scale_rows=self.scale_rows[np.ix_(rows, kept_leaves)], multiplicity=mult[kept],
            X_features=self.X_features, fit_intercept=self.fit_intercept,
            intercept_scaling=self.intercept_scaling)
        return CollapsedLeaves(full=self, model=model, kept=kept, node_map=node_map,
                               multiplicity=mult, leaf_map=leaf_map, kept_leaves=kept_leaves)


#: the name the data model had before the model layer (kept: tests and scripts use it)
NHSVMData = NHSVMModel


def _check_leaves_apart(H: Hierarchy, alpha: np.ndarray) -> None:
    """Refuse two leaves at normalized distance (9) 0.  Leaves are in each other's symmetric
    difference, so that happens exactly when both have ``alpha = 0`` and the same ancestors
    with ``alpha > 0``: checked in ``O(q depth)``, never on the ``(q, q)`` matrix."""
    leaves = H.leaves
    zero = np.flatnonzero(alpha[H.leaf_indices] <= 0)
    if zero.size < 2:
        return
    anc = sp.csr_matrix(H.ancestor_matrix[H.leaf_indices[zero]])
    seen: dict = {}
    for k, l in enumerate(zero.tolist()):
        cols = anc.indices[anc.indptr[k]:anc.indptr[k + 1]]
        key = tuple(sorted(cols[alpha[cols] > 0].tolist()))
        if key in seen:
            raise InputError(f"leaves {leaves[seen[key]]!r} and {leaves[l]!r} have normalized "
                             "distance (9) equal to 0: alpha is 0 on every node that separates "
                             "them, so no margin can tell them apart; use weights with alpha > 0 "
                             "on the leaves")
        seen[key] = l


def _single_label_pieces(model: NHSVMModel) -> None:
    """The rows of ``b`` and ``sigma`` from the held leaves (margin (9), or (13)), checked."""
    H, a = model.H, model.alpha
    _check_leaves_apart(H, a)
    model.held_leaves, model.held_row = _held_rows(model.leaf_pos)
    dist = _leaf_pair_loss(H, model.held_leaves, "structural", alpha=a)   # (9), held rows
    own = np.arange(len(H.leaves))[None, :] == model.held_leaves[:, None]
    dist[own] = 0.0
    if model.variant == "nhsvm":
        model.offset_rows, model.scale_rows = dist, np.ones_like(dist)
    else:  # (13): each row divided by the normalized distance, required margin 1
        model.offset_rows = (~own).astype(float)
        model.scale_rows = np.where(own, 0.0, 1.0 / np.where(own, 1.0, dist))


def prepare(X, Y, H: Hierarchy, alpha=None, variant: str = "nhsvm", *, multilabel: bool | None = None,
            loss=None, T=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> NHSVMModel:
    """Validate NHSVM inputs once (the references and the fast solvers run on the result).

    ``alpha``: an array over ``H.nodes`` (checked by :func:`check_path_weights` with ``T``), a
    method of :func:`path_weights`, or ``None`` (``"power"`` with rho 2 on trees, ``"dag"`` with
    T = 1.5 on DAGs).  ``Y``: one leaf per sample (single-label) or one set of leaves per sample
    (multi-label; ``multilabel=None`` infers it from ``Y``).  ``loss`` (multi-label only): a
    :class:`~hiercvx.inference.DecomposableLoss`, ``"leaf_hamming"`` (default, the paper's
    ``Delta_L``), ``"hamming"`` or per-node costs.  ``variant``: ``"nhsvm"`` (alias ``"10"``)
    or ``"13"``.  ``fit_intercept``, ``intercept_scaling``: LIBLINEAR's regularized bias, one
    per node (module docstring).  ``check_input=False`` skips the check of ``X`` (for a caller
    that validated it already, e.g. an estimator).
    """
    H = check_hierarchy(H)
    X = check_features(X) if check_input else X
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    if variant == "10":
        variant = "nhsvm"
    if variant not in VARIANTS:
        raise InputError(f"unknown NHSVM variant {variant!r}; choose 'nhsvm' (eq. (10)) or '13' (eq. (13))")
    Tm, leaf_pos, multilabel = closed_labels(Y, H, X.shape[0], multilabel)
    a = resolve_alpha(alpha, H, check_T(T) if T is not None else None)
    model = NHSVMModel(X=X if scaling is None else append_constant(X, scaling), H=H, alpha=a,
                       T=Tm, multilabel=multilabel, variant=variant, leaf_pos=leaf_pos,
                       X_features=X, fit_intercept=scaling is not None,
                       intercept_scaling=1.0 if scaling is None else scaling)
    if multilabel:
        if variant == "13":
            raise InputError("variant '13' is single-label only: its normalized margin does not "
                             "decompose over nodes, so the multi-label argmax has no exact "
                             "separation oracle (paper, end of section 5.1); use variant='nhsvm'")
        model.loss = as_loss("leaf_hamming" if loss is None else loss, H)
        return model
    if loss is not None:
        raise InputError("single-label NHSVM uses the normalized structural error (9) as its margin; "
                         "loss= applies to multi-label problems only (drop it, or pass multilabel=True)")
    _single_label_pieces(model)
    return model


def node_scores(W, X, alpha) -> np.ndarray:
    """Node scores ``s_n(x) = sqrt(alpha_n) W_n . x`` ``(n, M)``; a label set's potential is
    ``sum_{n in y} s_n`` (eq. (10)); predict with :func:`hiercvx.inference.best_leaf` or
    :func:`hiercvx.inference.best_label_set`."""
    XW = X @ np.asarray(W, dtype=float).T
    return _dense(XW) * np.sqrt(np.asarray(alpha, dtype=float))


def primal_objective(W, data: NHSVMModel, lam: float, oracle: LabelSetOracle | None = None,
                     return_slacks: bool = False):
    """The NHSVM objective at node weights ``W`` ``(M, d)``, recomputed in numpy.

    ``lam ||W||_F^2 + sum_i xi_i`` with ``xi_i = max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]``:
    over the leaves with the margin (9) (variant ``"nhsvm"``, eq. (10)), over the leaves with
    the normalized difference of (13) (variant ``"13"``), or over the multi-label space with
    the decomposable loss, maximized exactly by ``oracle`` (a
    :class:`~hiercvx.inference.LabelSetOracle`; built when not given).  ``W`` is over the
    model's own features ``data.X`` (with ``fit_intercept``, the bias column included:
    :meth:`NHSVMModel.objective` takes the weights and biases apart).
    """
    W = np.asarray(W, dtype=float)
    reg = lam * float(np.sum(W * W))
    if data.multilabel:
        oracle = oracle if oracle is not None else LabelSetOracle(data.H)
        xi = multilabel_slacks(W, data, oracle)[0]
    else:  # (10) or (13): the loss-augmented argmax over the leaves, through the sparse paths
        xi = data.oracle(node_scores(W, data.X, data.scored_alpha))[0]
    value = reg + float(xi.sum())
    return (value, xi) if return_slacks else value


def multilabel_slacks(W, data: NHSVMModel, oracle: LabelSetOracle):
    """``(xi, Z)``: exact slacks and the most violating label sets (loss-augmented inference)."""
    S = node_scores(W, data.X, data.scored_alpha)
    Z, info = oracle.solve(S, loss=data.loss, true_indicator=data.T, return_info=True, verbose=False)
    own = np.where(data.T, S, 0.0).sum(axis=1)
    return np.maximum(info.objective - own, 0.0), Z


# ====================================================================== shared-norm SVM (14)
@dataclass(eq=False)
class SharedNormModel(_NodeBias, _LeafVertices, Model):
    """Validated inputs of the shared-norm SVM (14) (:func:`prepare_shared`), single-label.

    ``leaf_pos``: each sample's leaf (position in ``H.leaves``); ``T`` ``(n, M)``: its closed
    label set; ``A``: the leaf-path matrix (sparse); ``held_leaves``: the leaves some sample
    holds (positions in ``H.leaves``, sorted), ``held_row[i]``: sample ``i``'s row among them;
    ``loss_rows`` ``(len(held_leaves), q)``: ``Delta`` from each held leaf to every leaf (the
    only rows of the loss the problem uses).  ``X``: the features the solvers see (``[X, s]``
    with ``fit_intercept``), ``X_features``: as given.

    ``multiplicity`` (None: all 1) makes node ``n`` stand for ``k_n`` interchangeable leaves
    (:meth:`collapsed`): its score is ``U_n . x / sqrt(k_n)`` (so ``Lam = A diag(k)^(-1/2)``),
    and the regularizer keeps the form ``sum_n ||U_n||^2 / alpha_n``.

    The dense pieces over all leaves are built on first use only (a wide hierarchy never
    needs them on the fast path): ``loss`` ``(q, q)`` (``Delta`` over ``H.leaves``,
    ``[true, predicted]``), ``Lam`` (the dense attributes (1)), ``margin`` (the pair model of
    :mod:`hiercvx.models.margin`, class scores ``X U^T Lam^T``, used by the CVXPY
    references), ``paths`` / ``offset`` / ``scale`` (the leaf vertices of the weight step).
    """

    X: object
    H: Hierarchy
    leaf_pos: np.ndarray
    T: np.ndarray
    A: sp.csr_matrix
    held_leaves: np.ndarray
    held_row: np.ndarray
    loss_rows: np.ndarray
    loss_spec: object = "zero_one"
    multiplicity: np.ndarray | None = None
    X_features: object = None
    fit_intercept: bool = False
    intercept_scaling: float = 1.0

    method = "shared_norm"
    equations = {"primal": "(14)", "alpha step": "(20)", "shared norm": "(16)"}
    variables = {
        "U": Variable("(n_nodes, n_features)", "node weights; class scores X U^T A^T"),
        "alpha": Variable("(n_nodes,)", "sharing weights, every leaf's path sum <= 1"),
        "xi": Variable("(n_samples,)", "multi-class hinge slack of each sample"),
        "intercept": Variable("(n_nodes,)", "node biases b_n with fit_intercept (LIBLINEAR's, "
                                            "regularized as b_n^2 / (s^2 alpha_n))"),
        "beta": Variable("(n_samples, n_leaves)", "pair multipliers of the margin rows", "dual"),
        "mu": Variable("(n_leaves,)", "multipliers of the path constraints A alpha <= 1", "dual"),
    }

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_nodes(self) -> int:
        return len(self.H)

    @property
    def node_scale(self) -> np.ndarray:
        """``1 / sqrt(k_n)``: the factor of node ``n``'s score (ones without ``multiplicity``)."""
        if self.multiplicity is None:
            return np.ones(self.n_nodes)
        return 1.0 / np.sqrt(self.multiplicity)

    # the dense pieces, built on first use ----------------------------------------------------
    @cached_property
    def loss(self) -> np.ndarray:
        """``Delta`` ``(q, q)`` over ``H.leaves`` (``[true, predicted]``)."""
        return class_loss(self.H, self.loss_spec)

    @cached_property
    def Lam(self) -> np.ndarray:
        """The attributes (1), dense: ``A`` with node ``n``'s column times ``1 / sqrt(k_n)``."""
        return self.A.toarray() * self.node_scale[None, :]

    @cached_property
    def margin(self) -> _margin.MarginData:
        return _one_leaf_margin(self.leaf_pos, len(self.H.leaves), self.loss, self.Lam)

    @cached_property
    def _vertices(self):
        L = self.loss
        return _leaf_vertices(self.H, L, np.ones_like(L))

    # the problem -------------------------------------------------------------------------------
    def scores(self, weights, X=None, intercept=None) -> np.ndarray:
        """Node scores ``U_n . x + b_n`` ``(n, M)`` of ``X`` (default: the training rows) at ``U``
        without the bias column and ``intercept`` ``b`` (None: zeros)."""
        U, X = self._scored(weights, X, intercept)
        return _dense(X @ U.T) * self.node_scale

    def hinge(self, U) -> np.ndarray:
        """Each sample's multi-class hinge ``max_l [S_il - S_{i l_i} + Delta(l_i, l)]``, ``S = X U^T A^T``
        (``U`` over the model's own features ``X``: with a bias, its column included)."""
        S = _dense(self.X @ np.asarray(U, dtype=float).T) * self.node_scale
        return self.oracle(S)[0]

    def regularizer(self, U, alpha=None) -> float:
        """``sum_n ||U_n||^2 / alpha_n`` at ``alpha`` scaled to feasibility; ``alpha=None``: the
        optimal alpha (20) for ``U`` (closed form, trees only).  ``U`` over the model's own
        features (with a bias, its column included)."""
        U = np.asarray(U, dtype=float)
        b = np.einsum("ij,ij->i", U, U)
        if alpha is None:
            if not self.H.is_tree:
                raise InputError("the shared-norm objective on a DAG needs alpha: pass the alpha "
                                 "that goes with U (the alpha step (20) is a program on DAGs)")
            alpha = optimal_alpha(U, self.H)
        return ratio_sum(b, scaled_alpha(alpha, self.A))

    def objective(self, weights, lam: float = 1.0, alpha=None, intercept=None) -> float:
        """(14) at ``(U, alpha)`` and the node biases ``intercept``: ``lam sum_n ||U~_n||^2 /
        alpha_n + sum_i hinge_i`` with ``U~ = [U, b / s]`` (``U`` without the bias column)."""
        return self.augmented_objective(self.augmented_weights(weights, intercept), lam, alpha)

    def augmented_objective(self, U, lam: float = 1.0, alpha=None) -> float:
        """(14) at ``U`` over the model's own features ``X`` (with a bias, its column included)."""
        return lam * self.regularizer(U, alpha) + float(self.hinge(U).sum())

    def objective_at(self, solution, **params) -> float:
        """:meth:`objective` at a solution's weights, biases and ``alpha`` (``values`` or
        ``extras``; without one, the optimal alpha (20) for the weights)."""
        W, b = self.solution_weights(solution)
        found = [getattr(solution, k, None) or {} for k in ("values", "extras")]
        alpha = next((f["alpha"] for f in found if f.get("alpha") is not None), None)
        return self.objective(W, intercept=b, alpha=alpha, **params)

    def oracle(self, scores, rows=None):
        """``(xi, best leaf or -1)`` at node scores ``scores`` (loss-augmented, over the leaves):
        ``xi_i = max(0, max_{l != l_i} Delta(l_i, l) + s_i(l) - s_i(l_i))``, the leaf path sums
        through the sparse ``A`` (``O(n nnz(A))``, no dense class-by-class array but the
        ``(n, q)`` violations)."""
        rows = np.arange(scores.shape[0]) if rows is None else np.asarray(rows)
        offset = self.loss_rows[self.held_row[rows]]
        return _leaf_violations(scores, self.leaf_pos[rows], self.A, offset, np.ones_like(offset))

    def dual_value(self, G: np.ndarray, l: np.ndarray, lam: float) -> float:
        """The dual of (14) at a feasible point in node space: ``sum_i l_i -
        min_path_cover(||(G^T X)_n||^2 / (4 lam k_n))`` (``formulations/nhsvm.md``)."""
        return self.dual_value_and_slack(G, l, lam)[0]

    def dual_value_and_slack(self, G: np.ndarray, l: np.ndarray,
                             lam: float) -> tuple[float, np.ndarray]:
        """:meth:`dual_value` and each node's slack in the path cover, ``(A^T mu)_n - need_n``
        over the largest ``need`` (``inf`` where ``need_n = 0``): by complementary slackness a
        node with slack at the optimum has ``alpha_n = 0`` (``U_n = 0``) -- what the
        alternating solver reads to switch nodes off."""
        V = np.asarray(self.X.T @ G).T
        need = np.einsum("ij,ij->i", V, V) * self.node_scale ** 2 / (4.0 * lam)
        mu, cover_value = min_path_cover(need, self.H)
        top = float(need.max()) if need.size else 0.0
        slack = (self.A.T @ mu - need) / top if top > 0 else np.zeros(len(need))
        slack[need <= 0] = np.inf  # nothing asked of the node: alpha_n = 0 is optimal
        return float(np.sum(l)) - cover_value, slack

    def lower_bound(self, dual, lam: float = 1.0) -> float:
        """Certified bound at ``(n, q)`` masses over the candidate leaves, projected first
        (clipped at 0, the true leaf's set to 0, each row's total scaled to at most 1)."""
        n = self.n_samples
        beta = np.maximum(np.asarray(dual, dtype=float), 0.0).copy()
        beta[np.arange(n), self.leaf_pos] = 0.0
        beta /= np.maximum(beta.sum(axis=1), 1.0)[:, None]
        G = beta.sum(axis=1)[:, None] * self.T - np.asarray(self.A.T @ beta.T).T
        l = (beta * self.loss_rows[self.held_row]).sum(axis=1)
        return self.dual_value(G, l, lam)

    # interchangeable leaves ----------------------------------------------------------------------
    def collapsed(self) -> CollapsedLeaves | None:
        """This problem with every group of interchangeable leaves replaced by one leaf, or
        None when no two leaves are interchangeable.

        Leaves ``a, b`` are interchangeable when no sample holds them, they have the same
        parents and the same loss from every held leaf (``Delta(t, a) = Delta(t, b)``).  Then
        swapping them maps (14) onto itself, and by convexity an optimum with ``U_a = U_b``,
        ``alpha_a = alpha_b`` exists (average an optimum over the group's permutations).  On
        such points a group of ``k`` leaves is one leaf of multiplicity ``k``: ``U'_r =
        sqrt(k) U_a`` gives ``sum_{a in G} ||U_a||^2 / alpha_a = ||U'_r||^2 / alpha_r`` and
        the score ``U_a . x = U'_r . x / sqrt(k)``, and its path constraint is theirs.  So
        the optimum of the collapsed model is that of (14), and its solution and dual point
        lift exactly (:class:`CollapsedLeaves`).  This is what makes a wide hierarchy cost
        what its data use (:mod:`hiercvx.models.symmetry` does the same for margin models)."""
        groups = _interchangeable_groups(self.H, self.held_leaves, self.loss_rows)
        if not groups:
            return None
        (Hc, kept, node_map, mult, leaf_map, kept_leaves), (leaf_pos, held, held_row, rows) = \
            CollapsedLeaves.relabel(self.H, groups, self.leaf_pos, self.held_leaves)
        loss_rows = self.loss_rows[np.ix_(rows, kept_leaves)]
        loss = np.zeros((len(kept_leaves), len(kept_leaves)))   # rows of idle leaves unused
        loss[held] = loss_rows
        model = SharedNormModel(
            X=self.X, H=Hc, leaf_pos=leaf_pos, T=np.ascontiguousarray(self.T[:, kept]),
            A=leaf_paths(Hc), held_leaves=held, held_row=held_row, loss_rows=loss_rows,
            loss_spec=loss, multiplicity=mult[kept], X_features=self.X_features,
            fit_intercept=self.fit_intercept, intercept_scaling=self.intercept_scaling)
        return CollapsedLeaves(full=self, model=model, kept=kept, node_map=node_map,
                               multiplicity=mult, leaf_map=leaf_map, kept_leaves=kept_leaves)


def _held_loss_rows(H: Hierarchy, loss, held: np.ndarray) -> np.ndarray:
    """``Delta`` from each held leaf (positions ``held`` in ``H.leaves``) to every leaf:
    ``(len(held), q)``, the only rows of the loss (14) uses.  A loss name is evaluated on those
    pairs only (``O(len(held) q)``, not the ``(q, q)`` matrix); an array is checked whole."""
    if not isinstance(loss, str):
        return class_loss(H, loss)[held]
    rows = _leaf_pair_loss(H, held, loss)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise InputError("the loss matrix must be finite and non-negative")
    return rows


def prepare_shared(X, y, H: Hierarchy, loss="zero_one", *, fit_intercept: bool = False,
                   intercept_scaling: float = 1.0, check_input: bool = True) -> SharedNormModel:
    """Validate the shared-norm SVM's inputs once: ``y`` one leaf per sample, ``loss`` a name of
    :data:`hiercvx.losses.LOSSES` or a ``(q, q)`` array over ``H.leaves``; ``fit_intercept``,
    ``intercept_scaling``: LIBLINEAR's regularized bias, one per node (module docstring);
    ``check_input=False``: ``X`` validated by the caller.  Only the loss rows of the held
    leaves and the sparse leaf paths are built (the ``(q, q)`` / ``(q, M)`` pieces on first use,
    :class:`SharedNormModel`)."""
    H = check_hierarchy(H)
    X = check_features(X) if check_input else X
    scaling = bias_scaling(fit_intercept, intercept_scaling)
    T, leaf_pos, _ = closed_labels(y, H, X.shape[0], multilabel=False)
    leaf_pos = np.ascontiguousarray(leaf_pos, dtype=np.int64)
    held, held_row = _held_rows(leaf_pos)
    loss_rows = _held_loss_rows(H, loss, held)
    return SharedNormModel(X=X if scaling is None else append_constant(X, scaling), H=H,
                           leaf_pos=leaf_pos, T=np.asarray(T), A=leaf_paths(H), held_leaves=held,
                           held_row=held_row, loss_rows=loss_rows,
                           loss_spec=loss if isinstance(loss, str) else np.asarray(loss, dtype=float),
                           X_features=X, fit_intercept=scaling is not None,
                           intercept_scaling=1.0 if scaling is None else scaling)
