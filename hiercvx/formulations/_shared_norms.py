"""The alpha step (20) and the shared norms (16), (17) of the NHSVM paper as CVXPY programs.

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016.  :func:`alpha_step` declares (20) ``min sum_n ||U_n||^2 / alpha_n`` s.t. ``A alpha <= 1``,
``alpha >= 0`` (its closed form on trees is :func:`hiercvx.models.nhsvm.optimal_alpha`, the
numpy routes on DAGs :func:`~hiercvx.models.nhsvm.dag_alpha` and
:func:`~hiercvx.models.nhsvm.barrier_alpha`); :func:`shared_norm_problem` /
:func:`shared_norm` the structured shared norm (16) and the shared norm (17) as an SDP;
:func:`max_norm` and :func:`trace_norm` complete Theorem 2's chain.  Every certificate is a
Lagrangian bound at the solver's duals repaired to feasibility in numpy.  Re-exported by
:mod:`hiercvx.formulations.nhsvm`.
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..models.nhsvm import (check_hierarchy, cover, leaf_paths, node_matrix, ratio_sum,
                            scaled_alpha)
from ..reference import ReferenceProblem, check_size

__all__ = ["alpha_step", "shared_norm_problem", "shared_norm", "trace_norm", "max_norm"]


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

    routes = _AlphaStepRoutes(b, pos, A)
    return ReferenceProblem(
        problem, variables={"gamma": gamma} if pos.size else {}, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.alpha_of,
        constraints={"paths": paths} if pos.size else {},
        name="shared-norm alpha step (20)", build_time=time.perf_counter() - t0,
        data={"H": H, "U": U, "squared_norms": b, "leaf_paths": A})


class _AlphaStepRoutes:
    """The alpha step (20)'s numpy routes (``b`` the squared row norms, ``pos`` the nodes with
    ``b > 0``, ``A`` the leaf paths; a module-level class, so the problem pickles)."""

    def __init__(self, b, pos, A):
        self.b, self.pos, self.A = b, pos, A

    def alpha_of(self, values) -> np.ndarray:
        a = np.zeros(len(self.b))
        if self.pos.size:
            a[self.pos] = np.sqrt(self.b[self.pos]) * np.maximum(
                np.asarray(values["gamma"], dtype=float), 0.0)
        return scaled_alpha(a, self.A)

    def objective(self, values):
        return ratio_sum(self.b, self.alpha_of(values))

    def lower_bound(self, values, duals):
        if not self.pos.size:
            return 0.0
        mu = np.maximum(np.asarray(duals["paths"], dtype=float), 0.0)
        c = self.A.T @ mu
        return 2.0 * float(np.sum(np.sqrt(self.b * c))) - float(mu.sum())


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

    routes = _StructuredRoutes(U, H, A)
    return ReferenceProblem(
        problem, variables={"W": W, "alpha": alpha}, objective=routes.objective,
        lower_bound=routes.lower_bound, weights=routes.weights,
        constraints={"classes": classes, "paths": paths}, name="structured shared norm (16), squared",
        build_time=time.perf_counter() - t0, data={"U": U, "H": H, "leaf_paths": A})


class _StructuredRoutes:
    """The structured shared norm (16)'s numpy routes (a module-level class, so the problem
    pickles)."""

    def __init__(self, U, H, A):
        self.U, self.H, self.A = U, H, A

    def weights(self, values):
        return scaled_alpha(values["alpha"], self.A)

    def objective(self, values):
        A, a = self.A, self.weights(values)
        return _inverse_quadratic(self.U, (A.multiply(a[None, :]) @ A.T).toarray())

    def lower_bound(self, values, duals):
        gamma = -np.asarray(duals["classes"], dtype=float)      # CVXPY adds +<dual, AW - U>
        V = self.A.T @ gamma
        need = np.einsum("ij,ij->i", V, V) / 4.0
        mu = cover(duals["paths"], need, self.H, self.A)
        return float(np.sum(gamma * self.U)) - float(mu.sum())


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

    routes = _SharedNormRoutes(U)
    return ReferenceProblem(
        problem, variables={"Z": Z}, objective=routes.objective, lower_bound=routes.lower_bound,
        weights=routes.kernel,
        constraints={"coupling": coupling, "rows": rows}, name="shared norm (17), squared",
        build_time=time.perf_counter() - t0, data={"U": U})


class _SharedNormRoutes:
    """The shared norm (17)'s numpy routes (a module-level class, so the problem pickles)."""

    def __init__(self, U):
        self.U = U

    def kernel(self, values) -> np.ndarray:
        r = self.U.shape[0]
        K = _psd_part(np.asarray(values["Z"], dtype=float)[:r, :r])
        top = float(np.diag(K).max())
        return K / top if top > 1.0 else K

    def objective(self, values):
        K, r = self.kernel(values), self.U.shape[0]
        return min(_inverse_quadratic(self.U, (1.0 - eps) * K + eps * np.eye(r)) for eps in _RIDGES)

    def lower_bound(self, values, duals):
        gamma = np.asarray(duals["coupling"], dtype=float)
        mu = np.maximum(np.asarray(duals["rows"], dtype=float), 0.0)
        slack = np.linalg.eigvalsh(np.diag(mu) - gamma @ gamma.T / 4.0).min()
        mu = mu + max(0.0, -float(slack))
        return -float(np.sum(gamma * self.U)) - float(mu.sum())


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
