"""Mehrotra's predictor-corrector on a margin primal with pair rows (:mod:`.interior_point`).

The primal, for pair rows ``a_p`` (class differences in a factored class space, or explicit
coefficient rows)::

    min_{w, xi}  1/2 ||w||^2 + sum_i C_i xi_i
    s.t.  a_p . w + c_p xi_i >= b_p   for every pair p of example i,     xi >= 0,

with pair slacks ``s``, multipliers ``alpha`` (the thesis' dual variables of (4.15)) and ``mu``
(of ``xi >= 0``).  :class:`PairProblem` is what the iteration needs of a form (scores, pair
products, scatter, the Newton matrix ``I + sum_i T_i (x) F_i F_i^T``); :func:`mehrotra` runs
the predictor-corrector (Mehrotra, SIAM J. Optim. 2, 1992) with Gondzio's centrality
correctors (Comput. Optim. Appl. 6, 1996), certifying every iterate by the dual at the
projected multipliers and the primal at their weights (thesis (4.12)).  With the option
``dual_regularization`` (``rho``) the Newton systems are those of the proximally regularized
multipliers (Friedlander & Orban, Math. Prog. Comp. 4, 2012): ``D = alpha / (s + rho
alpha)``.
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla

from ..result import reached, relative_gap
from . import _interior_point_kernels as _k
from .primitives import centrality_correctors

logger = logging.getLogger("hiercvx.solvers.interior_point")

__all__ = ["PairProblem", "DenseNewton", "mehrotra"]


class PairProblem:
    """What the Newton iteration needs of a primal with pair rows, whatever their form: the
    pair data (``ptr``, ``pi``, ``b``, ``c``, budgets ``C``), the certificate pieces here, and
    ``scores``, ``pair_products``, ``scatter``, ``class_adjoint``, ``newton_matrix`` from the
    subclass.  ``reports_iterate``: the iterate ``w`` is itself the answer's weights, so its
    primal value may certify too."""

    reports_iterate = False

    def adjoint(self, values):
        """``A^T values`` as an ``(r, d)`` matrix."""
        return self.class_adjoint(self.scatter(values))

    def primal(self, w, S=None):
        S = self.scores(w) if S is None else S
        viol = (self.b - self.pair_products(S)) / self.c
        xi = np.empty(self.n)
        _k.pair_max(self.ptr, viol, xi)
        return 0.5 * float(np.sum(w * w)) + float(self.C @ xi)

    def dual(self, alpha):
        """The dual at ``alpha`` projected onto its feasible set (thesis (4.14) / (4.15))."""
        a_hat = self.project(alpha)
        w_hat = self.adjoint(a_hat)
        return float(self.b @ a_hat) - 0.5 * float(np.sum(w_hat * w_hat)), a_hat, w_hat

    def project(self, alpha):
        """``alpha`` clipped at 0 and scaled into every example's budget."""
        a = np.maximum(alpha, 0.0)
        used = np.empty(self.n)
        _k.pair_sums(self.ptr, self.c * a, used)
        over = used > self.C
        if over.any():
            scale = np.ones(self.n)
            scale[over] = self.C[over] / used[over]
            a *= scale[self.pi]
        return a


class _Iterate(NamedTuple):
    """A point of the interior-point iteration: weights ``w``, slacks ``xi`` (one per
    example), pair multipliers ``alpha``, pair slacks ``s`` and multipliers ``mu`` of
    ``xi >= 0``."""

    w: np.ndarray
    xi: np.ndarray
    alpha: np.ndarray
    s: np.ndarray
    mu: np.ndarray

    def moved(self, t, step):
        """The iterate ``t`` along ``step = (dw, dxi, dalpha, ds, dmu)``."""
        return _Iterate(*(v + t * d for v, d in zip(self, step)))


def _start(prob: PairProblem, options) -> _Iterate:
    """``w = 0``, ``xi`` above every pair's requirement, a share of every budget used."""
    n, b, c, ptr = prob.n, prob.b, prob.c, prob.ptr
    need = np.empty(n)
    _k.pair_max(ptr, b / c, need)
    xi = need + options.shift
    s = c * xi[prob.pi] - b
    csum = np.empty(n)
    _k.pair_sums(ptr, c, csum)
    # examples without pairs (a cutting plane's master before their first cut) take no share
    alpha = options.init * np.divide(prob.C, csum, out=np.zeros(n), where=csum > 0)[prob.pi]
    used = np.empty(n)
    _k.pair_sums(ptr, c * alpha, used)
    return _Iterate(np.zeros((prob.r, prob.d)), xi, alpha, s, prob.C - used)


def _regularized_cholesky(H, shift_from: float, shift_to: float):
    """The Cholesky factor of the Newton matrix ``H``, positive definite in exact arithmetic
    (``I`` plus a Schur complement); when round-off breaks that (multipliers and features of
    very different magnitudes), of ``H + shift max(diag H) I`` with the smallest ``shift`` in
    ``shift_from, 100 shift_from, ... <= shift_to`` that factorizes (static regularization of
    interior-point methods: the direction is then inexact, and every iterate is still certified
    by its recomputed primal and dual).  Raises ``LinAlgError`` when none does."""
    try:
        return sla.cho_factor(H, lower=False, check_finite=False)
    except (np.linalg.LinAlgError, ValueError):
        pass
    scale = float(np.max(np.abs(np.diag(H)))) if np.all(np.isfinite(H)) else np.inf
    shift = shift_from
    while np.isfinite(scale) and shift <= shift_to:
        H_reg = H.copy()
        H_reg[np.diag_indices_from(H_reg)] += shift * scale
        try:
            return sla.cho_factor(H_reg, lower=False, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            shift *= 100.0
    raise np.linalg.LinAlgError("the Newton matrix is not positive definite, even regularized")


class DenseNewton:
    """The Newton matrix ``I + sum_i T_i (x) F_i F_i^T`` formed by the problem
    (``prob.newton_matrix``) and factorized by Cholesky: the default linear solver of
    :func:`mehrotra`.  A linear solver is called as ``prepare(prob, D, cD, delta, accuracy)``
    at every iterate and returns ``(V, solve)``: the ``v_i`` ``(n, r)`` and a function ``rhs
    (r, d) -> dw (r, d)``.  ``accuracy = (gap, slack)`` tells an inexact solver what the
    iterate needs: its certified relative gap, and ``slack``, its absolute gap over ``||w||``
    (the residual of the reduced system becomes the next iterate's stationarity residual
    ``r_w``, which moves the dual at the multipliers by about ``||w|| ||r_w||``)."""

    def __init__(self, options):
        self.options = options

    def prepare(self, prob: PairProblem, D, cD, delta, accuracy):
        H, V = prob.newton_matrix(D, cD, delta)
        chol = _regularized_cholesky(H, self.options.regularize_from, self.options.regularize_to)
        return V, lambda rhs: sla.cho_solve(chol, rhs.ravel(), check_finite=False).reshape(
            rhs.shape)


class _NewtonSystem:
    """The Newton system at an iterate, its matrix prepared once by the linear solver
    (module docstring): :meth:`direction` solves it for any complementarity right-hand
    sides."""

    def __init__(self, prob: PairProblem, it: _Iterate, residuals, linear, accuracy,
                 rho: float = 0.0):
        self.prob, self.it = prob, it
        self.r_p, self.r_xi, self.r_w = residuals
        c = prob.c
        # rho > 0: the proximal dual regularization, D = 1 / (s / alpha + rho) <= 1 / rho
        self.D = it.alpha / (it.s + rho * it.alpha)
        self.E = it.mu / it.xi
        self.cD = c * self.D
        self.tmp = np.empty(prob.n)
        _k.pair_sums(prob.ptr, c * self.cD, self.tmp)
        self.delta = self.tmp + self.E
        self.V, self.solve = linear.prepare(prob, self.D, self.cD, self.delta, accuracy)

    def direction(self, r_s, r_mu):
        """Newton direction for the complementarity residuals ``r_s``, ``r_mu`` (and the
        linear residuals of the iterate)."""
        prob, it, c = self.prob, self.it, self.prob.c
        D, E, V, delta, tmp = self.D, self.E, self.V, self.delta, self.tmp
        e = -D * (self.r_p + r_s / it.alpha)
        _k.pair_sums(prob.ptr, c * e, tmp)
        h = -self.r_xi - r_mu / it.xi + tmp
        G = prob.scatter(e)
        G -= V * (h / delta)[:, None]
        rhs = prob.class_adjoint(G) - self.r_w
        dw = self.solve(rhs)
        Sd = prob.scores(dw)
        dxi = (h - np.einsum("ic,ic->i", V, Sd)) / delta
        dalpha = -D * (prob.pair_products(Sd) + c * dxi[prob.pi]) + e
        ds = (-r_s - it.s * dalpha) / it.alpha
        dmu = -E * dxi - r_mu / it.xi
        return dw, dxi, dalpha, ds, dmu

    def step_length(self, step) -> float:
        """The longest step ``t <= 1`` along ``step`` that keeps the iterate positive."""
        it = self.it
        _, dxi, dalpha, ds, dmu = step
        return _k.step_to_boundary(it.alpha, dalpha, it.s, ds, it.xi, dxi, it.mu, dmu)

    def predictor_corrector(self, comp, mu_avg, max_correctors):
        """Mehrotra's predictor (affine scaling) and corrector with centring ``sigma =
        (comp_aff / comp)^3``, then Gondzio's centrality correctors
        (:func:`~.primitives.centrality_correctors`).  Returns the step and its length."""
        it = self.it
        dw, dxi, dalpha, ds, dmu = self.direction(it.alpha * it.s, it.mu * it.xi)
        t = self.step_length((dw, dxi, dalpha, ds, dmu))
        comp_aff = float((it.alpha + t * dalpha) @ (it.s + t * ds)
                         + (it.mu + t * dmu) @ (it.xi + t * dxi))
        target = (comp_aff / comp) ** 3 * mu_avg
        rhs = (target - it.alpha * it.s - dalpha * ds, target - it.mu * it.xi - dmu * dxi)

        def newton(rc_s, rc_mu):  # the products' asked change -> the direction
            return self.direction(-rc_s, -rc_mu)

        step = newton(*rhs)
        return centrality_correctors(newton, self.step_length, step, self.step_length(step),
                                     rhs, ((it.alpha, it.s, 2, 3), (it.mu, it.xi, 4, 1)), target,
                                     max_correctors=max_correctors)


def _residuals(prob: PairProblem, it: _Iterate, S):
    """The linear residuals of the iterate: pair rows, stationarity in ``xi`` and in ``w``."""
    used = np.empty(prob.n)
    _k.pair_sums(prob.ptr, prob.c * it.alpha, used)
    r_w = it.w - prob.adjoint(it.alpha)
    r_xi = prob.C - used - it.mu
    r_p = prob.pair_products(S) + prob.c * it.xi[prob.pi] - prob.b - it.s
    return r_p, r_xi, r_w


def _certify(prob: PairProblem, it: _Iterate, S):
    """``(primal, dual, a_hat)``: the dual at the projected multipliers, the primal at their
    weights (thesis (4.12)) or at the iterate itself when it is the answer's weights."""
    dual, a_hat, w_hat = prob.dual(it.alpha)
    primal = prob.primal(w_hat)
    if prob.reports_iterate:
        primal = min(primal, prob.primal(it.w, S))
    return primal, dual, a_hat


def mehrotra(prob: PairProblem, tol, max_iter, verbose, t_start, options, linear=None):
    """The primal-dual iteration to a certified relative gap ``tol`` (``options``: the
    :class:`.interior_point.Options` ``shift``, ``init``, ``step_fraction``,
    ``max_correctors``, ``regularize_from``, ``regularize_to``; ``linear``: the Newton
    systems' solver, :class:`DenseNewton` by default, or a matrix-free one with the same
    ``prepare``).  Returns ``(w, alpha, n_iter, converged, history, stopped)``: the last
    iterate, or the best certified one when it did not converge; ``stopped`` says why an
    unconverged iteration ended before ``max_iter`` (``""`` when it converged or ran out of
    steps)."""
    log = logger.info if verbose else logger.debug
    linear = DenseNewton(options) if linear is None else linear
    history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "time")}
    if prob.n == 0:  # nothing constrains w: the optimum is 0
        return np.zeros((prob.r, prob.d)), np.zeros(0), 0, True, history, ""
    it = _start(prob, options)
    best = (np.inf, None, None)
    n_iter, converged, stopped = 0, False, ""
    for n_iter in range(1, max_iter + 2):  # the iterate after the last step is certified too
        S = prob.scores(it.w)
        residuals = _residuals(prob, it, S)
        comp = float(it.alpha @ it.s + it.mu @ it.xi)
        mu_avg = comp / (prob.b.size + prob.n)
        primal, dual, a_hat = _certify(prob, it, S)
        gap = relative_gap(primal, dual)
        for key, val in (("n_iter", n_iter - 1), ("objective", primal), ("lower_bound", dual),
                         ("gap", gap), ("time", time.perf_counter() - t_start)):
            history[key].append(val)
        log("step %d: primal %.12g dual %.12g gap %.3e mu %.3e", n_iter - 1, primal, dual, gap,
            mu_avg)
        if gap < best[0]:
            best = (gap, it.w.copy(), a_hat)
        if reached(gap, tol):
            converged = True
            n_iter -= 1
            break
        if n_iter > max_iter:  # max_iter steps taken, the last one certified
            n_iter = max_iter
            break
        try:
            slack = (primal - dual) / max(float(np.linalg.norm(it.w)), 1e-300)
            system = _NewtonSystem(prob, it, residuals, linear, (gap, slack),
                                   getattr(options, "dual_regularization", 0.0))
        except (np.linalg.LinAlgError, ValueError):
            stopped = "the Newton matrix lost positive definiteness in round-off"
            log("step %d: %s; stopping", n_iter, stopped)
            break
        step, t = system.predictor_corrector(comp, mu_avg, options.max_correctors)
        t *= options.step_fraction
        if t < 1e-12:  # blocked at the boundary: round-off has taken over
            stopped = f"the step to the boundary shrank to {t:.1e} (round-off)"
            log("step %d: %s; stopping", n_iter, stopped)
            break
        it = it.moved(t, step)
    if not converged and best[1] is not None:  # report the best certified iterate
        return best[1], best[2], n_iter, False, history, stopped
    return it.w, prob.project(it.alpha), n_iter, converged, history, stopped
