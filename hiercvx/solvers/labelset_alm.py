"""The margin model on listed pairs by a proximal dual: augmented Lagrangian, semismooth Newton.

The label-set engine (:mod:`.labelset`) solves the margin model (Cai thesis (4.10) / (4.15))
restricted to a working set of pairs.  With label sets the restricted dual is very degenerate:
an example ends with tens of tied support pairs, more support pairs in all than primal weights,
and coordinate ascent on it converges slowly.  This solver works on the primal weights instead.

With ``B`` the map from node weights ``W`` to the pair margins ``z_p = S_iy - S_iybar``
(``z = B W``), offsets ``b_p`` and budget sets ``A_i = {a >= 0, sum_p c_p a_p <= C_i}``
(:mod:`hiercvx.models.margin`), the primal (4.10) is ``min_W 1/2 ||W||^2 + h(B W)`` with
``h(z) = sum_i max_{a in A_i} a . (b - z)_i`` and the dual (4.15) is
``max_{alpha in A} b . alpha - 1/2 ||B^T alpha||^2``.  The augmented Lagrangian method on the
primal is the proximal point method on the dual (Rockafellar, "Augmented Lagrangians and
applications of the proximal point algorithm in convex programming", Math. Oper. Res. 1,
1976)::

    W_{k+1}     = argmin_W  Phi_k(W) = 1/2 ||W||^2 + e_k(B W)
    alpha_{k+1} = Proj_A(alpha_k + sigma_k (b - B W_{k+1}))

with ``e_k(z) = max_{a in A} a . (b - z + alpha_k / sigma_k) - ||a||^2 / (2 sigma_k)``, a
Moreau envelope whose maximizer is that projection.  ``Phi_k`` is strongly convex and piecewise
quadratic; it is minimized by the semismooth Newton method with conjugate gradients (the
pattern of SSNAL: Li, Sun & Toh, "A highly efficient semismooth Newton augmented Lagrangian
method for solving Lasso problems", SIAM J. Optim. 28, 2018): the generalized Hessian is
``I + sigma B^T J B`` with ``J`` a generalized Jacobian of ``Proj_A``
(``_labelset_alm_kernels``), applied matrix-free through the node scores ``X W^T``, so
the Newton system never forms a matrix over pairs or weights; conjugate gradients are
preconditioned by its diagonal or by its Kronecker approximation over nodes and features.

Every ``alpha_k`` lies in ``A`` by construction, so the dual at it is a certified lower bound;
the primal is recomputed at ``W_k`` and at ``W(alpha_k) = B^T alpha_k``.  The solver stops
when their relative gap reaches ``tol``.

Entry point: :func:`solve` on a linear :class:`~hiercvx.models.margin.MarginModel` with class
attributes whose data list the pairs (the label-set engine's restricted model); settings in
:class:`Options`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, reached, relative_gap
from ._labelset_alm_kernels import (hessian_diagonal, jacobian_apply, node_coefficients,
                                    node_curvature, pair_margins, project_budgets)
from .primitives import blas_threads, conjugate_gradients

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve"]


@dataclass(frozen=True)
class Options:
    """Settings of the proximal dual.  Each default with its reason.

    Attributes
    ----------
    sigma0 : float
        First proximal weight: of the order of ``1 / ||B||^2`` on standardized features, where
        the Newton systems are well conditioned.
    sigma_growth : float
        ``sigma`` grows by this factor after an outer step whose Newton loop reached its
        target, and shrinks by it (not below ``sigma0``) after one that did not: the proximal
        point method converges faster with larger steps, Newton slower.
    sigma_max : float
        ``sigma`` stops growing here (conjugate gradients would need too many steps beyond).
    max_newton : int
        Newton steps per outer step at most (piecewise quadratic: a few once the pieces are
        identified).
    newton_share : float
        An outer step's Newton loop stops when ``||grad Phi||`` is below this share of the
        proximal step's size ``||alpha_k - alpha_{k-1}|| / sigma`` (an inexactness that falls
        with the steps, as the proximal point method's convergence theory asks).
    grad_floor : float
        ... or below this absolute size (round-off).
    cg_rtol : float
        Relative residual of conjugate gradients on a Newton system at most (tightened to
        ``||grad Phi||`` near the solution, for the superlinear rate).
    cg_max : int
        Conjugate-gradient steps per Newton system at most.
    armijo : float
        Sufficient-decrease share of the line search.
    jacobian_margin : float
        Pairs within this share of the largest budget of entering the projection's support
        count in the Newton systems' Jacobian (0: the exact generalized Jacobian, for the
        superlinear rate near the solution; a positive share takes fuller steps far from it,
        where many nearly tied pairs enter along a step, at a linear rate).
    preconditioner : str
        ``"diagonal"`` (the Newton matrix's diagonal: computed in one pass over the pairs) or
        ``"kronecker"`` (``_Operators.kronecker``: its Kronecker structure over nodes and
        features, exact for one example; an eigendecomposition over the nodes per step).
    """

    sigma0: float = 1e-2
    sigma_growth: float = 4.0
    sigma_max: float = 1e4
    max_newton: int = 30
    newton_share: float = 0.1
    grad_floor: float = 1e-10
    cg_rtol: float = 0.1
    cg_max: int = 500
    armijo: float = 1e-4
    jacobian_margin: float = 0.0
    preconditioner: str = "diagonal"


class _Operators:
    """``B``, ``B^T``, the budget projection and the restricted primal / dual of one model."""

    def __init__(self, model: MarginModel, C: float):
        d = model.data
        X = model.X
        self.X = np.ascontiguousarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)
        Lam = sp.csr_matrix(d.Lam)
        self.lam = (Lam.indptr.astype(np.int64), Lam.indices.astype(np.int64),
                    Lam.data.astype(float))
        self.shape = (Lam.shape[1], self.X.shape[1])
        self.pi = np.ascontiguousarray(d.pair_i, dtype=np.int64)
        self.py = np.ascontiguousarray(d.pair_y, dtype=np.int64)
        self.pyb = np.ascontiguousarray(d.pair_ybar, dtype=np.int64)
        self.ptr = np.ascontiguousarray(d.pair_ptr, dtype=np.int64)
        self.b = np.ascontiguousarray(d.pair_offset, dtype=float)
        self.cost = np.ascontiguousarray(d.pair_cost, dtype=float)
        self.budget = np.ascontiguousarray(C * d.Cw, dtype=float)
        self.n_products = 0

    def forward(self, W) -> np.ndarray:
        """``z = B W``: the pair margins."""
        self.n_products += 1
        P = np.ascontiguousarray(self.X @ W.T)
        z = np.empty(self.pi.size)
        pair_margins(P, self.pi, self.py, self.pyb, *self.lam, z)
        return z

    def adjoint(self, gamma) -> np.ndarray:
        """``B^T gamma``: the node weights of pair weights ``gamma`` (thesis (4.12))."""
        self.n_products += 1
        N = np.zeros((self.X.shape[0], self.shape[0]))
        node_coefficients(np.ascontiguousarray(gamma, dtype=float), self.pi, self.py, self.pyb,
                          *self.lam, N)
        return N.T @ self.X

    def project(self, v, margin: float = 0.0):
        """``(alpha, (active, tau))``: the projection onto the budget sets and its Jacobian's
        data, the pairs within ``margin`` of entering marked active."""
        alpha, tau = np.empty_like(v), np.empty(self.budget.size)
        project_budgets(v, self.ptr, self.cost, self.budget, alpha, tau)
        active = (v - tau[self.pi] * self.cost) > -margin
        return alpha, (active, tau)

    def jacobian(self, r, jac) -> np.ndarray:
        out = np.empty_like(r)
        jacobian_apply(r, jac[0], jac[1], self.ptr, self.cost, out)
        return out

    def diagonal(self, jac) -> np.ndarray:
        """The diagonal of ``B^T J B`` ``(M, d)`` for the Jacobian's data ``jac``."""
        D = np.zeros((self.X.shape[0], self.shape[0]))
        hessian_diagonal(jac[0], jac[1], self.ptr, self.cost, self.py, self.pyb, *self.lam, D)
        return D.T @ (self.X * self.X)

    def kronecker(self, jac, sigma):
        """The inverse of ``I + sigma A (x) B`` as a function on ``(M, d)`` arrays: the
        Kronecker approximation of the Newton matrix ``I + sigma B^T J B``, with the node
        factor ``B`` the mean of the examples' ``A_i^T J_i A_i`` and the feature factor
        ``A = sum_i w_i x_i x_i^T`` weighted by their traces (exact when every example has the
        same ``A_i^T J_i A_i``)."""
        n = self.X.shape[0]
        Bn = np.zeros((self.shape[0], self.shape[0]))
        trace = np.zeros(n)
        node_curvature(jac[0], jac[1], self.ptr, self.cost, self.py, self.pyb, *self.lam, Bn,
                       trace)
        mean = max(float(trace.mean()), np.finfo(float).tiny)
        lb, V = np.linalg.eigh(Bn / n)
        la, U = np.linalg.eigh((self.X * (trace / mean)[:, None]).T @ self.X)
        scale = 1.0 / (1.0 + sigma * np.outer(np.maximum(lb, 0), np.maximum(la, 0)))
        return lambda R: V @ ((V.T @ R @ U) * scale) @ U.T

    def primal(self, W, z) -> float:
        """(4.10) over the listed pairs at ``W`` with margins ``z = B W``."""
        viol = (self.b - z) / self.cost
        xi = np.maximum(_margin.segment_max(viol, self.ptr), 0.0)
        return 0.5 * float(np.sum(W * W)) + float(self.budget @ xi)

    def dual(self, alpha, W_alpha) -> float:
        """(4.14) at a feasible ``alpha`` with ``W_alpha = B^T alpha``."""
        return float(self.b @ alpha) - 0.5 * float(np.sum(W_alpha * W_alpha))


class _Envelope:
    """``Phi(W) = 1/2 ||W||^2 + e(B W)`` of one outer step (module docstring)."""

    def __init__(self, ops: _Operators, alpha_k, sigma, margin):
        self.ops, self.alpha_k, self.sigma, self.margin = ops, alpha_k, sigma, margin

    def at(self, W, z):
        """``(Phi, alpha, tau)`` at ``W`` with margins ``z``: the projection's point too."""
        ops, s = self.ops, self.sigma
        alpha, tau = ops.project(self.alpha_k + s * (ops.b - z), self.margin)
        phi = (0.5 * float(np.sum(W * W)) + float(alpha @ (ops.b - z + self.alpha_k / s))
               - float(alpha @ alpha) / (2 * s))
        return phi, alpha, tau

    def hessian_product(self, D, alpha, tau) -> np.ndarray:
        ops = self.ops
        return D + self.sigma * ops.adjoint(ops.jacobian(ops.forward(D), tau))


def _newton(env: _Envelope, W, z, target: float, options: Options, counts: dict):
    """Semismooth Newton on ``Phi`` from ``W`` (margins ``z``) until ``||grad|| <= target``;
    returns ``(W, z, alpha, reached)`` with ``alpha`` the projection at the final ``W``."""
    ops = env.ops
    phi, alpha, jac = env.at(W, z)
    for _ in range(options.max_newton):
        grad = W - ops.adjoint(alpha)
        gnorm = float(np.sqrt(np.sum(grad * grad)))
        if gnorm <= max(target, options.grad_floor):
            return W, z, alpha, True
        D, steps = conjugate_gradients(lambda V, j=jac: env.hessian_product(V, None, j), -grad,
                                       _preconditioner(ops, jac, env.sigma, options),
                                       min(options.cg_rtol, gnorm), options.cg_max)
        counts["cg"] += steps
        counts["newton"] += 1
        zD = ops.forward(D)
        slope = float(np.sum(grad * D))
        if not slope < 0:
            break
        t = 1.0
        for _ in range(60):  # the margins are linear in W: each trial costs a projection
            W_t, z_t = W + t * D, z + t * zD
            phi_t, alpha_t, jac_t = env.at(W_t, z_t)
            if phi_t <= phi + options.armijo * t * slope:
                break
            t *= 0.5
        else:
            break
        logger.debug("  Newton: |grad| %.3e target %.3e, %d CG steps, step %.3g", gnorm, target,
                     steps, t)
        W, z, phi, alpha, jac = W_t, z_t, phi_t, alpha_t, jac_t
    return W, z, alpha, False


def _preconditioner(ops: _Operators, jac, sigma: float, options: Options):
    """An approximate inverse of the Newton matrix ``I + sigma B^T J B``."""
    if options.preconditioner == "kronecker":
        return ops.kronecker(jac, sigma)
    diag = 1.0 + sigma * ops.diagonal(jac)
    return lambda R: R / diag


def solve(model: MarginModel, C: float, *, W0=None, alpha0=None, sigma0: float | None = None,
          tol: float = 1e-6, max_iter: int = 200, options: Options | None = None) -> Solution:
    """The margin model over its listed pairs by the proximal dual (module docstring).

    Parameters
    ----------
    model : MarginModel
        Linear kernel with class attributes, pairs listed in ``model.data``.
    C : float
        Positive; example i's budget is ``C * data.Cw[i]``.
    W0 : array, optional
        Starting node weights over the model's own features ``(M, d)`` (a bias column
        included), default zeros.
    alpha0 : array, optional
        Starting multipliers, one per listed pair (projected onto the budget sets).
    sigma0 : float, optional
        First proximal weight (default ``options.sigma0``; a warm start passes the last one).
    tol : float
        Relative duality gap (of the listed pairs' problem) to reach.
    max_iter : int
        Outer (proximal) steps at most.
    options : Options, optional
        Settings (default ``Options()``).

    Returns
    -------
    Solution
        ``weights`` node weights without the bias column (``extras["intercept"]`` the biases),
        ``dual`` the multipliers, ``objective`` / ``lower_bound`` over the listed pairs.
        Extras: ``augmented`` (the weights over the model's own features), ``sigma`` (the last
        proximal weight), ``n_newton``, ``n_cg``, ``n_products`` (products with ``B`` or
        ``B^T``).
    """
    if not (model.node_weights and model.data.pair_i is not None):
        raise InputError("the proximal dual needs a linear model with class attributes whose "
                         "pairs are listed; use hiercvx.solvers.working_set otherwise")
    options = Options() if options is None else options
    if options.preconditioner not in ("diagonal", "kronecker"):
        raise InputError("preconditioner must be 'diagonal' or 'kronecker', got "
                         f"{options.preconditioner!r}")
    with blas_threads(1):  # small products: threads only add synchronisation
        return _solve(model, C, W0, alpha0, sigma0, tol, max_iter, options)


def _solve(model, C, W0, alpha0, sigma0, tol, max_iter, options: Options) -> Solution:
    t0 = time.perf_counter()
    ops = _Operators(model, C)
    M, d = ops.shape
    W = np.zeros((M, d)) if W0 is None else np.array(W0, dtype=float)
    alpha = np.zeros(ops.pi.size) if alpha0 is None else ops.project(np.asarray(alpha0, float))[0]
    sigma = options.sigma0 if sigma0 is None else float(sigma0)
    z = ops.forward(W)
    counts = {"cg": 0, "newton": 0}
    best, step, k = None, np.inf, 0
    for k in range(1, max_iter + 1):
        env = _Envelope(ops, alpha, sigma, options.jacobian_margin * float(np.max(ops.budget)))
        W, z, alpha_new, solved = _newton(env, W, z, options.newton_share * step, options,
                                          counts)
        step = float(np.sqrt(np.sum((alpha_new - alpha) ** 2))) / sigma
        alpha = alpha_new
        W_alpha = ops.adjoint(alpha)
        lower = ops.dual(alpha, W_alpha)
        cands = ((ops.primal(W, z), W), (ops.primal(W_alpha, ops.forward(W_alpha)), W_alpha))
        objective, W_best = min(cands, key=lambda c: c[0])
        gap = relative_gap(objective, lower)
        logger.debug("proximal step %d: sigma %.3g primal %.10g dual %.10g gap %.3e "
                     "(%d Newton, %d CG)", k, sigma, objective, lower, gap, counts["newton"],
                     counts["cg"])
        if best is None or gap < best[0]:
            best = (gap, objective, lower, W_best, alpha.copy())
        if reached(gap, tol):
            break
        # a larger step only while Newton still solves the steps: beyond, it stalls on kinks
        sigma = min(sigma * options.sigma_growth, options.sigma_max) if solved \
            else max(sigma / options.sigma_growth, options.sigma0)
    gap, objective, lower, W_best, alpha = best
    weights, intercept = model.split_weights(W_best)
    return Solution(weights=weights, objective=objective, lower_bound=lower, n_iter=k,
                    converged=reached(gap, tol), tol=tol, dual=alpha,
                    solve_time=time.perf_counter() - t0, solver="labelset_alm",
                    name="hsvm proximal dual (ALM, semismooth Newton)",
                    extras={"intercept": intercept, "augmented": W_best, "sigma": sigma,
                            "W_last": W, "n_newton": counts["newton"], "n_cg": counts["cg"],
                            "n_products": ops.n_products})
