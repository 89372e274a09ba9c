"""The margin family by smoothing: L-BFGS on a soft-max primal, then the dual warm-started.

For many classes per example (label sets over a GO DAG: 2500 classes, 12000 pairs per example)
dual coordinate ascent crawls: a pass visits every pair, a slack-rescaled loss of 20 scales
each example's budget by 20, and the primal point ``w(alpha)`` (thesis (4.12)) of a nearly
optimal dual is far from optimal (one missed pair out of 12000 raises the slack ``xi_i``).
Attacked from the primal side the same problem is one of few variables (node weights
``(M, d)``) and a per-example maximum over the pairs (thesis (4.10), see
:mod:`hiercvx.models.margin`)::

    xi_i = max(0, max_p v_p),   v_p = (b_p - (S_iy - S_iybar)) / c_p

(``v_p`` is the violation of thesis (4.24): ``Delta (1 - <dPhi, w>)`` for slack rescaling,
``Delta - <dPhi, w>`` for margin rescaling).  Nesterov's smoothing replaces the maximum by

    xi_i^mu = mu log(1 + sum_p exp(v_p / mu)),    max(0, max_p v_p) <= xi_i^mu <= that + mu log(1 + P_i)

a smooth function whose gradient in the scores is a convex combination of pairs: with
``pi_p = exp(v_p / mu) / (1 + sum exp(.))`` the multipliers ``alpha_p = C_i pi_p / c_p`` satisfy
``sum_p c_p alpha_p = C_i sum_p pi_p <= C_i`` -- a dual feasible point of (4.15) at every
``W`` -- and the gradient of the smoothed primal is ``W - w(alpha)``.

The solver

1. runs L-BFGS (scipy's L-BFGS-B) on the smoothed primal for a decreasing sequence of ``mu``
   (continuation: each stage starts where the last one stopped); the reported primal point is
   the best ``W`` met, its objective (4.10) recomputed exactly (not the smoothed one);
2. certifies with a dual point built from every evaluation's soft multipliers: each is dual
   feasible and comes with ``w(alpha) = W - gradient`` for free, and a running point moves
   towards each by the step that maximizes the dual (4.14) on the segment (closed form; a
   Frank-Wolfe step over the multipliers L-BFGS visits).  A single iterate's multipliers are a
   poor dual point until L-BFGS has converged (``w(alpha)`` far from ``W``); their running
   combination is not;
3. when the primal stalls (a stage lowered it by less than a fraction of the gap), hands the
   best multipliers to the working-set solver (:mod:`.working_set`, thesis Algorithm 2) as a
   warm start: the dual side then only has to finish.  The certificate is the best primal and
   the best dual of both phases.

Entry point: ``solve(model, C)`` for a :class:`~hiercvx.models.margin.MarginModel` with node
weights (the linear kernel with class attributes); settings in :class:`Options`.

References: Yu. Nesterov, "Smooth minimization of non-smooth functions", Math. Program. 103,
2005; D. C. Liu and J. Nocedal, "On the limited memory BFGS method for large scale
optimization", Math. Program. 45, 1989; L. Cai, PhD thesis, Brown University, 2008, (4.10),
(4.15) and Algorithm 2.
"""

from __future__ import annotations

import logging
import dataclasses
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy.optimize import minimize

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import working_set

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve", "smoothed_objective", "soft_multipliers"]

@dataclass(frozen=True)
class Options:
    """Settings of the smoothing solver.  Each default with its reason.

    Attributes
    ----------
    mu_start : float
        The first mu, as a share of the largest violation at ``W = 0`` (the largest Delta):
        small enough that the smoothed optimum is near the true one, large enough that the first
        stage is well conditioned (Nesterov 2005: the error is ``mu log(1 + P_i)``).
    mu_shrink : float
        Mu is divided by this between stages (continuation; each stage starts where the last one
        stopped).
    stage_iter : int
        L-BFGS iterations per stage.
    memory : int
        L-BFGS memory, the pairs of steps and gradient changes kept (Liu & Nocedal 1989
        recommend 3-20).
    stall : float
        The primal stalled when a stage lowered it by less than this share of the gap; then the
        dual side finishes.
    warm_cutoff : float
        Multipliers below this share of their example's largest are dropped from the warm start
        (a soft maximum touches every pair; the working sets should hold the few that matter).
    dual_passes : int
        Passes of the working-set solver after the primal phase, at least (0: none); the L-BFGS
        iterations a stall left unused are added to them.
    working_set : working_set.Options
        The dual phase's settings (:class:`.working_set.Options`).
    """

    mu_start: float = 0.03
    mu_shrink: float = 3.0
    stage_iter: int = 300
    memory: int = 10
    stall: float = 0.05
    warm_cutoff: float = 1e-3
    dual_passes: int = 100
    working_set: working_set.Options = field(default_factory=working_set.Options)


@njit(cache=True, inline="always")
def _soft_block(buf, m, mu):
    """The soft maximum of one example's violations ``buf[:m]`` and of 0 (an example within
    its margins): overwrites ``buf[:m]`` by ``exp((v - top) / mu)`` and returns ``(top, z)``,
    ``z`` the sum of the exponentials including the 0 term's ``exp(-top / mu)``."""
    top = 0.0
    for k in range(m):
        if buf[k] > top:
            top = buf[k]
    inv_mu = 1.0 / mu
    z = np.exp(-top * inv_mu)
    for k in range(m):
        t = (buf[k] - top) * inv_mu
        e = np.exp(t) if t > -40.0 else 0.0  # exp(-40) = 4e-18: below rounding of the sum
        buf[k] = e
        z += e
    return top, z


@njit(cache=True)
def _soft_slacks(S, pair_ptr, pair_y, pair_ybar, offset, cost, budget, mu, G, alpha):
    """``(sum_i budget_i xi_i^mu, sum_p offset_p alpha_p)`` at class scores ``S``; adds
    ``G(alpha)`` of the soft multipliers to ``G`` ``(n, q)`` and writes them to ``alpha``.
    Each example's violations and exponentials are computed once, into a buffer (the scores
    are read at random: the pairs' loop is the cost of an evaluation)."""
    total = 0.0
    linear = 0.0
    n = pair_ptr.shape[0] - 1
    longest = 0
    for i in range(n):
        longest = max(longest, pair_ptr[i + 1] - pair_ptr[i])
    buf = np.empty(longest)
    for i in range(n):
        a, b = pair_ptr[i], pair_ptr[i + 1]
        for p in range(a, b):
            buf[p - a] = (offset[p] - (S[i, pair_y[p]] - S[i, pair_ybar[p]])) / cost[p]
        top, z = _soft_block(buf, b - a, mu)
        total += budget[i] * (top + mu * np.log(z))
        scale = budget[i] / z
        for p in range(a, b):
            value = 0.0
            if buf[p - a] > 0.0:
                value = scale * buf[p - a] / cost[p]
                G[i, pair_y[p]] += value
                G[i, pair_ybar[p]] -= value
                linear += offset[p] * value
            alpha[p] = value
    return total, linear


@njit(cache=True)
def _soft_slacks_product(S, rel_ptr, rel, irr_ptr, irr, loss, slack, budget, mu, G, alpha):
    """:func:`_soft_slacks` for pairs that are every (relevant, irrelevant) product of each
    example, in :func:`~hiercvx.models.margin.label_pairs`' order, read from the two class
    lists and the loss matrix instead of four arrays of one entry per pair (rows that stay in
    cache instead of a stream of the size of the pairs, on label sets over a large DAG).
    ``slack``: slack rescaling (``v = Delta (1 - d)``, ``alpha = C pi Delta``) or margin
    rescaling (``v = Delta - d``, ``alpha = C pi``)."""
    total = 0.0
    linear = 0.0
    n = rel_ptr.shape[0] - 1
    longest = 0
    for i in range(n):
        longest = max(longest, (rel_ptr[i + 1] - rel_ptr[i]) * (irr_ptr[i + 1] - irr_ptr[i]))
    buf = np.empty(longest)
    p = 0
    for i in range(n):
        r0, r1, k0, k1 = rel_ptr[i], rel_ptr[i + 1], irr_ptr[i], irr_ptr[i + 1]
        m = k1 - k0
        for r in range(r0, r1):
            y = rel[r]
            s_y = S[i, y]
            base = (r - r0) * m
            for k in range(k0, k1):
                delta = loss[y, irr[k]]
                diff = s_y - S[i, irr[k]]
                buf[base + k - k0] = delta * (1.0 - diff) if slack else delta - diff
        top, z = _soft_block(buf, (r1 - r0) * m, mu)
        total += budget[i] * (top + mu * np.log(z))
        scale = budget[i] / z
        for r in range(r0, r1):
            y = rel[r]
            base = (r - r0) * m
            for k in range(k0, k1):
                value = 0.0
                e = buf[base + k - k0]
                if e > 0.0:
                    delta = loss[y, irr[k]]
                    value = scale * e * delta if slack else scale * e
                    G[i, y] += value
                    G[i, irr[k]] -= value
                    linear += value if slack else delta * value
                alpha[p] = value
                p += 1
    return total, linear


@njit(cache=True)
def _blend(target, point, lam):
    """``target <- (1 - lam) target + lam point`` in one pass, in place (numpy would take two
    passes and a temporary of the size of the pairs)."""
    for p in range(target.shape[0]):
        target[p] += lam * (point[p] - target[p])


def _product_lists(data):
    """``(rel_ptr, rel, irr_ptr, irr)``: each example's relevant and irrelevant classes, when
    the model's pairs are all of their products in :func:`~hiercvx.models.margin.label_pairs`'
    order (as :func:`~hiercvx.models.margin.margin_data` builds them); None otherwise."""
    Y = np.asarray(data.Y, dtype=bool)
    n, q = Y.shape
    k = Y.sum(axis=1)
    if not np.array_equal(np.diff(data.pair_ptr), k * (q - k)):
        return None
    _, rel = np.nonzero(Y)
    _, irr = np.nonzero(~Y)
    rel_ptr = np.r_[0, np.cumsum(k)].astype(np.int64)
    irr_ptr = np.r_[0, np.cumsum(q - k)].astype(np.int64)
    if not _same_product(rel_ptr, rel, irr_ptr, irr, data.pair_y, data.pair_ybar):
        return None
    return rel_ptr, rel.astype(np.int64), irr_ptr, irr.astype(np.int64)


@njit(cache=True)
def _same_product(rel_ptr, rel, irr_ptr, irr, pair_y, pair_ybar):
    """Whether the pairs are exactly each example's (relevant, irrelevant) products, in order."""
    p = 0
    for i in range(rel_ptr.shape[0] - 1):
        for r in range(rel_ptr[i], rel_ptr[i + 1]):
            for k in range(irr_ptr[i], irr_ptr[i + 1]):
                if pair_y[p] != rel[r] or pair_ybar[p] != irr[k]:
                    return False
                p += 1
    return p == pair_y.shape[0]


class _Smoothed:
    """The smoothed primal of one model at one ``C``: value and gradient in ``W`` (flattened)."""

    def __init__(self, model: MarginModel, C: float):
        data = model.data
        self.model, self.data, self.X = model, data, model.X
        self.shape = (data.Lam.shape[1], model.X.shape[1])
        self.budget = C * data.Cw
        self.lists = _product_lists(data)
        if self.lists is None:  # pairs of another shape: one entry per pair
            self.pairs = tuple(np.ascontiguousarray(a, dtype=np.int64)
                               for a in (data.pair_ptr, data.pair_y, data.pair_ybar))
            self.offset = np.ascontiguousarray(data.pair_offset, dtype=float)
            self.cost = np.ascontiguousarray(data.pair_cost, dtype=float)
        else:
            self.loss = np.ascontiguousarray(data.loss, dtype=float)
        self.n_eval = 0
        self.alpha_k = np.zeros(data.n_pairs)  # the last evaluation's soft multipliers
        self.alpha_hat, self.linear_hat, self.W_hat = None, 0.0, None
        self.Lam = _margin.sparse_attributes(data.Lam)  # converted once, not per evaluation

    def soft_slacks(self, S, mu, G, alpha):
        """The compiled soft maximum over the pairs (:func:`_soft_slacks_product` when the
        pairs are the products of class lists): the smoothed slacks' sum and ``b . alpha``;
        ``G`` gets ``G(alpha)`` added and ``alpha`` the soft multipliers."""
        if self.lists is not None:
            return _soft_slacks_product(S, *self.lists, self.loss,
                                        self.data.rescaling == "slack", self.budget, mu, G,
                                        alpha)
        return _soft_slacks(S, *self.pairs, self.offset, self.cost, self.budget, mu, G, alpha)

    def scores(self, W):
        return np.ascontiguousarray(_margin.class_scores(W, self.X, self.Lam, cheapest=True))

    def value_and_gradient(self, w, mu):
        """The smoothed primal and its gradient ``W - w(alpha)``; the soft multipliers
        ``alpha`` of this point also enter the running dual point (:meth:`_aggregate`)."""
        W = w.reshape(self.shape)
        S = self.scores(W)
        G = np.zeros_like(S)
        value, linear = self.soft_slacks(S, mu, G, self.alpha_k)
        self.n_eval += 1
        W_alpha = _margin.weights_from_coefficients(G, self.X, self.Lam)
        self._aggregate(linear, W_alpha)
        return 0.5 * float(w @ w) + value, (W - W_alpha).ravel()

    def _aggregate(self, linear, W_alpha):
        """Move the running dual point towards this evaluation's multipliers by the step that
        maximizes the dual (4.14) along the segment (a quadratic in the step: closed form).
        Every evaluation's multipliers are dual feasible, so their combinations are; the
        running point gains what L-BFGS's iterates, each with ``w(alpha) != W``, do not."""
        if self.alpha_hat is None:
            self.alpha_hat, self.linear_hat, self.W_hat = self.alpha_k.copy(), linear, W_alpha
            return
        step = W_alpha - self.W_hat
        curvature = float(np.sum(step * step))
        if curvature <= 0.0:
            return
        slope = (linear - self.linear_hat) - float(np.sum(self.W_hat * step))
        lam = min(max(slope / curvature, 0.0), 1.0)
        if lam == 0.0:
            return
        _blend(self.alpha_hat, self.alpha_k, lam)
        self.linear_hat += lam * (linear - self.linear_hat)
        self.W_hat = self.W_hat + lam * step

    @property
    def bound(self) -> float:
        """The dual (4.14) at the running dual point (``-inf`` before any evaluation)."""
        if self.alpha_hat is None:
            return -np.inf
        return self.linear_hat - 0.5 * float(np.sum(self.W_hat * self.W_hat))

    def multipliers(self, W, mu) -> np.ndarray:
        S = self.scores(W)
        alpha = np.zeros(self.data.n_pairs)
        self.soft_slacks(S, mu, np.zeros_like(S), alpha)
        return alpha


def smoothed_objective(model: MarginModel, W, C: float, mu: float) -> float:
    """The smoothed primal ``1/2 ||W||^2 + sum_i C_i xi_i^mu`` at node weights ``W`` over the
    model's own features (an upper bound on (4.10), at most ``mu sum_i C_i log(1 + P_i)`` above)."""
    smooth = _Smoothed(model, C)
    W = np.asarray(W, dtype=float)
    return smooth.value_and_gradient(W.ravel(), float(mu))[0]


def soft_multipliers(model: MarginModel, W, C: float, mu: float) -> np.ndarray:
    """The dual feasible ``alpha_p = C_i pi_p / c_p`` of the soft maximum at ``W`` (module
    docstring), one per pair of ``model.data``."""
    return _Smoothed(model, C).multipliers(np.asarray(W, dtype=float), float(mu))


def _scaled_bound(model: MarginModel, alpha) -> tuple[float, np.ndarray]:
    """The dual (4.14) at ``t alpha`` for the best ``t`` in [0, 1] (the dual is concave in
    ``t``: ``t A - t^2 B / 2``), and that point."""
    data = model.data
    A = float(data.pair_offset @ alpha)
    W = model.weights_from_dual(alpha)
    B = float(np.sum(W * W))
    t = 1.0 if B <= A else max(A, 0.0) / B
    return t * A - 0.5 * t * t * B, t * alpha


def _sparsified(alpha, data, cutoff: float = Options.warm_cutoff) -> np.ndarray:
    """``alpha`` without the entries below ``cutoff`` of their example's largest (still dual
    feasible: entries only drop)."""
    top = _margin.segment_max(alpha, data.pair_ptr)
    return np.where(alpha >= cutoff * top[data.pair_i], alpha, 0.0)


def _warm_start(model, C, cutoff, *candidates) -> np.ndarray:
    """The dual point the working set starts from: of the candidates (the best bound's
    multipliers, the soft multipliers at the best ``W``), sparsified, the one of the higher
    bound.  At a small ``mu`` the soft multipliers are a subgradient of the hard maximum --
    the full budget on a barely violated pair -- and can be a poor dual point."""
    points = [_sparsified(a, model.data, cutoff) for a in candidates]
    bounds = [model.lower_bound(a, C) for a in points]
    return points[int(np.argmax(bounds))]


def solve(model: MarginModel, C: float = 1.0, *, tol: float = 1e-6, max_iter: int = 3000,
          dual_passes: int | None = None, mu: float | None = None, verbose: bool = False,
          random_state=0, options: Options | None = None) -> Solution:
    """The margin model (thesis (4.10) / (4.15)) by L-BFGS on the smoothed primal, finished by
    the working-set solver warm-started at the soft multipliers (module docstring).

    Parameters
    ----------
    model : a :class:`~hiercvx.models.margin.MarginModel` with node weights (linear kernel,
        class attributes): ``hiercvx.models.hsvm.prepare(X, Y, H, ...)``
    C : positive float; example i's budget is ``C * data.Cw[i]``
    tol : certified relative duality gap to reach
    max_iter : L-BFGS iterations over all stages
    dual_passes : overrides ``options.dual_passes``: passes of the working-set solver after the
        primal phase, at least (0: none); the L-BFGS iterations a stall left unused are added
        to them, so that raising ``max_iter`` buys work on whichever side lags
    mu : the first smoothing parameter (default: ``options.mu_start`` times the largest loss)
    random_state : the working-set solver's visiting order
    options : :class:`Options` (default ``Options()``)

    Returns
    -------
    :class:`~hiercvx.result.Solution`: ``weights`` the best node weights met (bias column split
    off into ``extras["intercept"]`` with ``fit_intercept``), ``dual`` the best dual point,
    ``history`` per stage (mu, L-BFGS iterations, objective, lower bound, gap, time),
    ``extras["dual_passes"]`` the passes of the dual phase.
    """
    if not isinstance(model, MarginModel) or not model.node_weights:
        raise InputError("the smoothing solver works on a margin model with node weights (the "
                         "linear kernel with class attributes); use margin_engine.solve for "
                         "kernels or class kernels")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="smoothing.solve")
    options = Options() if options is None else options
    if dual_passes is not None:
        options = dataclasses.replace(options, dual_passes=int(dual_passes))
    t_start = time.perf_counter()
    log = logger.info if verbose else logger.debug
    best = _primal_phase(model, C, tol, max_iter, mu, options, log, t_start)
    data = model.data
    passes = 0
    # the iterations a stall leaves go to the dual side, one pass each (a pass costs about two
    # evaluations: the dual phase may take up to twice the time the primal phase left)
    budget = max(options.dual_passes, max_iter - best.n_iter) if options.dual_passes > 0 else 0
    if not reached(best.gap, tol) and budget > 0:
        passes = _dual_phase(model, C, tol, budget, best, options, verbose, random_state)
        log("after %d dual passes: primal %.10g dual %.10g gap %.3e", passes, best.primal,
            best.lower, best.gap)
    weights, extras = best.W, {"dual_passes": passes, "n_evaluations": best.smooth.n_eval}
    if model.fit_intercept:
        weights, extras["intercept"] = model.split_weights(best.W)
    res = Solution(weights=weights, objective=best.primal, lower_bound=best.lower,
                   n_iter=best.n_iter, converged=reached(best.gap, tol), tol=tol,
                   dual=best.alpha, history=best.history,
                   solve_time=time.perf_counter() - t_start, solver="smoothing",
                   name="margin model by smoothing + L-BFGS", extras=extras)
    res.warn_unless_converged("L-BFGS iterations and " f"{passes} dual passes", stacklevel=2,
                              reason=None if res.converged else _why(res, data, passes, budget,
                                                                     best.stalled))
    return res


class _Best:
    """The best primal point (``W``, ``primal``, at smoothing ``mu``) and the best dual point
    (``alpha``, ``lower``) met, with the run's history."""

    def __init__(self, model, C, smooth, mu):
        self.smooth = smooth
        w0 = np.zeros(smooth.shape)
        self.W, self.primal = w0, float(_margin.primal_objective(w0, model.X, model.data, C))
        self.alpha, self.lower = np.zeros(model.data.n_pairs), 0.0  # alpha = 0: the bound 0
        self.mu = mu
        self.history = {k: [] for k in ("mu", "n_iter", "objective", "lower_bound", "gap",
                                        "time")}
        self.n_iter, self.stalled = 0, False

    @property
    def gap(self) -> float:
        return relative_gap(self.primal, self.lower)


def _primal_phase(model, C, tol, max_iter, mu, options: Options, log, t_start) -> _Best:
    """L-BFGS on the smoothed primal for a decreasing ``mu`` until ``tol``, ``max_iter`` or a
    stall (module docstring, steps 1-2)."""
    data = model.data
    smooth = _Smoothed(model, C)
    violation0 = data.pair_offset / data.pair_cost  # v_p at W = 0
    mu = float(mu) if mu is not None else options.mu_start * float(violation0.max(initial=1.0))
    best = _Best(model, C, smooth, mu)
    w = np.zeros(int(np.prod(smooth.shape)))
    while best.n_iter < max_iter and not reached(best.gap, tol):
        run = minimize(smooth.value_and_gradient, w, args=(mu,), jac=True, method="L-BFGS-B",
                       options=dict(maxiter=min(options.stage_iter, max_iter - best.n_iter),
                                    maxcor=options.memory, gtol=0.0, ftol=0.0))
        best.n_iter += max(int(run.nit), 1)
        w = run.x
        W = w.reshape(smooth.shape)
        primal = float(_margin.primal_objective(W, model.X, data, C))
        lower, alpha = _scaled_bound(model, smooth.multipliers(W, mu))
        if smooth.bound > lower:  # recomputed by the model from the point, not the running sums
            running = model.lower_bound(smooth.alpha_hat, C)
            if running > lower:
                lower, alpha = running, smooth.alpha_hat.copy()
        drop = best.primal - primal
        if primal < best.primal:
            best.W, best.primal, best.mu = W.copy(), primal, mu
        if lower > best.lower:
            best.alpha, best.lower = alpha, lower
        for key, val in (("mu", mu), ("n_iter", best.n_iter), ("objective", best.primal),
                         ("lower_bound", best.lower), ("gap", best.gap),
                         ("time", time.perf_counter() - t_start)):
            best.history[key].append(val)
        log("mu %.3g, %d L-BFGS iterations: primal %.10g dual %.10g gap %.3e", mu, best.n_iter,
            best.primal, best.lower, best.gap)
        if drop < options.stall * (best.primal - best.lower):
            best.stalled = True
            break  # the primal stalled: the dual side finishes
        mu /= options.mu_shrink
    return best


def _dual_phase(model, C, tol, budget, best: _Best, options: Options, verbose,
                random_state) -> int:
    """The working-set solver warm-started at the best multipliers (module docstring, step 3);
    ``best`` takes its points where they are better.  Returns its passes."""
    alpha0 = _warm_start(model, C, options.warm_cutoff, best.alpha,
                         best.smooth.multipliers(best.W, best.mu))
    with warnings.catch_warnings():  # the combined certificate decides
        warnings.simplefilter("ignore")
        dual = working_set.solve(model, C, tol=tol, max_iter=budget, alpha0=alpha0,
                                 verbose=verbose, random_state=random_state,
                                 options=options.working_set)
    if dual.lower_bound > best.lower:
        best.alpha, best.lower = dual.dual, float(dual.lower_bound)
    W_dual = model.augmented_weights(dual.weights, dual.extras.get("intercept"))
    if dual.objective < best.primal:
        best.W, best.primal = W_dual, float(dual.objective)
    return dual.n_iter


def _why(res: Solution, data, passes: int, budget: int, stalled: bool) -> str:
    """The warning's sentence: the gap, which side lags, and what to raise."""
    per_example = data.n_pairs / max(data.n_samples, 1)
    head = (f"with a certified relative duality gap of {res.gap:.3e} > tol={res.tol:g} "
            f"({data.n_pairs} pairs, {per_example:.0f} per example)")
    if not stalled:
        dual = (f", and the {passes} working-set passes after it did not close the gap"
                if passes else "")
        return (f"{head}: max_iter ran out while L-BFGS was still lowering the primal{dual}; "
                "raise max_iter or tol")
    if budget == 0:
        return (f"{head}: the primal stalled and no dual phase ran (dual_passes=0); raise "
                "dual_passes, max_iter or tol")
    return (f"{head}: the primal stalled and {passes} working-set passes (of {budget}) did not "
            "finish the dual side, which lags on label sets with many noisy pairs (the weights "
            "are certified within the gap); raise max_iter (after a stall each unit is one dual "
            "pass) or tol")
