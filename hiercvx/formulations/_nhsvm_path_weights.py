"""The path-weight programs (6)-(8) of the NHSVM paper as certified CVXPY declarations.

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016.  (6) ``min sum_n alpha_n^rho`` s.t. every leaf's ancestor sum ``sum_{n in anc(l)}
alpha_n = 1``, ``alpha >= 0``; (7) ``max min_n alpha_n`` under the same constraints (with the
directional constraint ``alpha_child >= alpha_parent`` as printed); (8) the relaxation
``1 <= sum_{n in anc(l)} alpha_n <= T`` for DAGs.

:func:`path_weights_problem` declares them (a :class:`~hiercvx.ReferenceProblem` with a
Lagrangian certificate); :func:`path_weights` solves them.  The model layer solves (6) on
trees in closed form (:func:`hiercvx.models.nhsvm.tree_path_weights`); :func:`prepare`
resolves ``alpha`` by that route where it applies and by these programs elsewhere (DAGs, (7),
(8), the directional constraint).
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..hierarchy import Hierarchy
from ..models import nhsvm as _model
from ..models.nhsvm import (DAG_T, check_hierarchy, edge_differences, leaf_paths,
                            path_weight_settings)
from ..reference import ReferenceProblem, check_size

__all__ = ["path_weights_problem", "path_weights", "resolve_alpha", "prepare"]


def _lagrangian_power_min(r: np.ndarray, rho: float, upper: float) -> np.ndarray:
    """``min_{0 <= a <= upper} a^rho - r a`` per coordinate."""
    a = np.zeros_like(r)
    pos = r > 0
    a[pos] = np.minimum((r[pos] / rho) ** (1.0 / (rho - 1.0)), upper)
    return a ** rho - r * a


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


class _Certificate:
    """The numpy routes of a path-weight program (see :func:`path_weights_problem`): the
    objective recomputed in numpy, the Lagrangian bound at the solver's multipliers minimized
    in closed form over the box ``[0, upper]``, the largest constraint violation (a
    module-level class, so the :class:`~hiercvx.reference.ReferenceProblem` pickles)."""

    def __init__(self, equalities: dict, inequalities: dict, M: int, linear: bool, rho: float,
                 upper: float):
        self.equalities, self.inequalities = equalities, inequalities
        self.M, self.linear, self.rho, self.upper = M, linear, rho, upper

    def _stacked(self, values):
        a = np.asarray(values["alpha"], dtype=float)
        return np.r_[a, float(values["t"])] if self.linear else a

    def objective(self, values):
        a = np.asarray(values["alpha"], dtype=float)
        if self.linear:
            return -float(a.min())
        return float(np.sum(np.maximum(a, 0.0) ** self.rho))

    def lower_bound(self, values, duals):
        # Lagrangian f(z) - nu^T (A_eq z - b) - mu^T (G z - h); CVXPY's equality dual is -nu
        M = self.M
        r = np.zeros(M + int(self.linear))
        const = 0.0
        for name, (mat, rhs) in self.equalities.items():
            nu = -np.asarray(duals[name], dtype=float)
            r += mat.T @ nu
            const += float(rhs @ nu)
        for name, (mat, rhs) in self.inequalities.items():
            mu = np.maximum(np.asarray(duals[name], dtype=float), 0.0)
            r += mat.T @ mu
            const += float(rhs @ mu)
        if self.linear:  # objective -t: coefficient 0 on alpha, -1 on t
            c = np.r_[np.zeros(M), -1.0]
            return const + float(np.minimum(0.0, (c - r) * self.upper).sum())
        return const + float(_lagrangian_power_min(r, self.rho, self.upper).sum())

    def infeasibility(self, values):
        zv = self._stacked(values)
        worst = float(max(0.0, -np.min(values["alpha"])))
        for mat, rhs in self.equalities.values():
            worst = max(worst, float(np.abs(mat @ zv - rhs).max()))
        for mat, rhs in self.inequalities.values():
            worst = max(worst, float(np.max(rhs - mat @ zv, initial=0.0)))
        return worst

    @staticmethod
    def weights(values):
        return np.maximum(np.asarray(values["alpha"], dtype=float), 0.0)


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
    rho, T, directional = path_weight_settings(method, rho, T, directional)
    M = len(H)
    A = leaf_paths(H)
    n_leaves = A.shape[0]
    linear = method == "maxmin"
    check_size(M + 1, n_leaves + len(H.edge_index) + M, 2 * A.nnz + 4 * M, max_size,
               what=f"the path-weight program ({method})")
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
    routes = _Certificate(equalities, inequalities, M, linear, rho, upper)

    what = {"power": f"(6), rho={rho:g}", "maxmin": "(7)", "dag": f"(6), rho={rho:g}"}[method]
    relax = "" if T is None else f", relaxation (8) T={T:g}"
    return ReferenceProblem(
        problem, variables=variables, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.weights, constraints=constraints, infeasibility=routes.infeasibility,
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
    maximizer is generally not unique (only ``min alpha`` is); the solver's point is returned.
    """
    prob = path_weights_problem(H, method=method, rho=rho, T=T, directional=directional,
                                max_size=max_size)
    sol = prob.solve(solver=solver)
    alpha = np.asarray(sol.weights, dtype=float)
    return (alpha, sol) if return_solution else alpha


def resolve_alpha(alpha, H: Hierarchy, T=None):
    """Path weights and their T for the model's prepare.

    Returns ``(alpha, T)`` for :func:`hiercvx.models.nhsvm.prepare`: an array passes through; a
    method name or None (``"power"`` on trees, ``"dag"`` with ``T = 1.5`` on DAGs) is solved by
    the model's closed form when it applies (:func:`~hiercvx.models.nhsvm.path_weights_route`),
    else by :func:`path_weights`; ``T`` is the one the weights satisfy."""
    if alpha is not None and not isinstance(alpha, str):
        return alpha, T
    H = check_hierarchy(H)
    method = alpha if alpha is not None else ("power" if H.is_tree else "dag")
    if method == "dag" and T is None:
        T = DAG_T
    if _model.path_weights_route(H, method, T=T) is not None:
        return _model.solve_path_weights(H, method, T=T), T
    return path_weights(H, method=method, T=T), T


def prepare(X, Y, H: Hierarchy, alpha=None, variant: str = "nhsvm", *, multilabel: bool | None = None,
            loss=None, T=None, fit_intercept: bool = False, intercept_scaling: float = 1.0,
            check_input: bool = True) -> _model.NHSVMModel:
    """Validate NHSVM inputs once, with the path weights solved first.

    :func:`hiercvx.models.nhsvm.prepare` with ``alpha`` resolved by :func:`resolve_alpha`: any
    path-weight method on any hierarchy (the CVXPY programs where the model's closed form does
    not apply).  Same parameters and result."""
    alpha, T = resolve_alpha(alpha, H, T)
    return _model.prepare(X, Y, H, alpha=alpha, variant=variant, multilabel=multilabel, loss=loss,
                          T=T, fit_intercept=fit_intercept, intercept_scaling=intercept_scaling,
                          check_input=check_input)
