"""Fast flat Crammer–Singer multi-class SVM: sequential dual coordinate ascent with shrinking.

The objective is LIBLINEAR's ``MCSVM_CS`` (the one ``LinearSVC(multi_class="crammer_singer")``
minimizes; see :func:`hiercvx.formulations.multiclass.primal`)::

    min_W  1/2 ||W||_F^2 + sum_i C_i xi_i,   xi_i = max(0, max_{m != y_i} 1 - (w_{y_i} - w_m) . x_i)

with ``C_i = C * sample_weight_i * class_weight[y_i]`` and, with ``fit_intercept``, a constant
feature ``intercept_scaling`` appended to X whose weight is regularized like the others.  This
is the shared margin model of :mod:`hiercvx.models.margin` with ``Lam = I`` and the 0/1
loss (slack and margin rescaling coincide).

Dual in the Crammer–Singer parametrisation, ``beta`` ``(n, q)`` = the expansion coefficients
``G`` of the margin model (``beta[i, m] = -alpha_(i, y_i, m)`` for ``m != y_i``)::

    min_beta  1/2 ||W(beta)||^2 + sum_i sum_{m != y_i} beta_im,   W(beta) = beta^T X
    s.t.      beta_im <= C_i [m = y_i],   sum_m beta_im = 0.

Example i's block (the others frozen) is ``min 1/2 A ||b||^2 + B . b`` over the same
constraints, ``A = ||x_i||^2``, ``B_m = g_m - A beta_im`` with the gradient
``g_m = w_m . x_i + [m != y_i]``.  Its KKT conditions give ``b_m = min(C_m, (phi - B_m)/A)``
where ``phi`` solves ``sum_m max(0, D_m - phi) = A C_i``, ``D_m = B_m + A C_m``: a
water-filling level found after sorting ``D`` (Crammer & Singer's fixed point; the sequential
dual method of Keerthi et al. that LIBLINEAR implements): the shared
:func:`~hiercvx.solvers.primitives.isotropic_budget_step`.  An example is skipped when its KKT
violation ``max_m g_m - min_{m: beta_im < C_m} g_m`` (the thesis' psi_i, (4.32)) is below the
current threshold.  Shrinking as in LIBLINEAR: a class at its cap whose gradient is strictly
below that of every class that may still decrease is left out of the example's block, and an
example left with one class is left out of the passes, until the shrunk problem is solved to
the threshold or a certificate finds the example violated again.

Stopping is certified as in :mod:`hiercvx.solvers.working_set`: the relative duality gap
between the primal recomputed at ``W(beta)`` and the dual at the (feasible) ``beta``, both
evaluated with :mod:`hiercvx.models.margin`.  The certificate comes from
:class:`~hiercvx.solvers.margin_dual.MarginDualState`, and step 8b of Cai's Algorithm 2 -- the
dual maximized exactly on the face the passes identified (:mod:`.face_step`), taken when
:mod:`.margin_polish` says -- ends the slow final phase of coordinate descent on nearly
hard-margin problems.  The reported weights are ``W(beta)`` or the exact step's primal point,
whichever has the lower objective (both recomputed).  Entry point: ``solve(model, C)`` with
``model = hiercvx.models.multiclass.prepare(X, y, ...)``; settings in :class:`Options`.

References: K. Crammer and Y. Singer, "On the algorithmic implementation of multiclass
kernel-based vector machines", JMLR 2, 2001; S. S. Keerthi, S. Sundararajan, K.-W. Chang,
C.-J. Hsieh and C.-J. Lin, "A sequential dual method for large scale multi-class linear SVMs",
KDD 2008; R.-E. Fan et al., "LIBLINEAR: a library for large linear classification", JMLR 9,
2008.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.multiclass import MulticlassModel
from ..result import Solution, check_iteration_options, gap_scale, reached, relative_gap
from . import margin_dual
from ._crammer_singer_kernels import cs_sweep
from .margin_dual import MarginDualState, primal_point
from .margin_polish import Polisher
from .primitives import CertificateSchedule, blas_threads, row_data, row_sq_norms

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve"]


@dataclass(frozen=True)
class Options:
    """Settings of the Crammer–Singer solver.  Each default with its reason.

    Attributes
    ----------
    check_every : int
        Least number of passes between certificates (more when a certificate is expensive
        relative to a pass, :class:`~.primitives.CertificateSchedule`).
    polish : bool
        Take step 8b (the face step, :mod:`.margin_polish`) when the support settles: coordinate
        descent converges slowly near the optimum of nearly hard-margin problems.
    threshold : float
        The violation threshold of the passes is this share of the psi that certifies ``tol``
        (``gap <= sum_i C_i psi_i``); LIBLINEAR likewise fixes a small threshold and shrinks
        (Keerthi et al. 2008).
    dual : margin_dual.Options
        The dual state's and step 8b's settings (:class:`.margin_dual.Options`).
    """

    check_every: int = 10
    polish: bool = True
    threshold: float = 0.1
    dual: margin_dual.Options = field(default_factory=margin_dual.Options)


def _pair_alpha(beta, data):
    """Pair multipliers ``alpha_(i, y_i, m) = -beta_im`` (clipped at 0: rounding only)."""
    return np.maximum(-beta[data.pair_i, data.pair_ybar], 0.0)


def solve(model: MulticlassModel, C: float = 1.0, *, tol: float = 1e-6, max_iter: int = 10_000,
          verbose: bool = False, alpha0=None, random_state=0, stop_when=None,
          options: Options | None = None, check_every: int | None = None,
          polish: bool | None = None) -> Solution:
    """Crammer–Singer by sequential dual block coordinate descent (closed-form blocks, shrinking).

    Parameters
    ----------
    model : :class:`~hiercvx.models.multiclass.MulticlassModel` from
        ``hiercvx.models.multiclass.prepare(X, y, sample_weight=..., class_weight=...,
        fit_intercept=..., intercept_scaling=...)`` (linear kernel; the per-example costs
        ``C_i = C * sample_weight_i * class_weight[y_i]`` and LIBLINEAR's bias feature are in it)
    C : positive float
    tol : certified relative duality gap to reach
    max_iter : passes over the data (a ``ConvergenceWarning`` when they run out)
    alpha0 : optional warm start, pair multipliers in the order of ``model.data``
    random_state : seed of the order in which the examples are visited
    stop_when : optional ``stop_when(n_iter, pass_work, alpha) -> bool`` asked at every
        certificate short of ``tol``; True ends the solve there, unconverged (as in
        :func:`.working_set.solve`)
    options : :class:`Options` (default ``Options()``)
    check_every, polish : override the fields of ``options`` of the same name

    Returns
    -------
    :class:`~hiercvx.result.Solution`: ``weights`` the class weights ``(q, d)``; extras
    ``intercept`` ``(q,)`` (``intercept_scaling`` times the weight of the constant feature;
    zeros without intercept), ``coefficients`` ``G``, ``n_newton`` and ``pass_work``
    (multiply-adds counted by the passes); ``dual`` the pair
    multipliers; ``objective`` / ``lower_bound`` over the augmented features, recomputed by
    the model.
    """
    if not isinstance(model, MulticlassModel):
        raise InputError("model must be a hiercvx.models.multiclass.MulticlassModel (build it with "
                         f"hiercvx.models.multiclass.prepare(X, y, ...)), got {type(model).__name__}")
    if not model.node_weights:
        raise InputError("the Crammer-Singer solver works on features (linear kernel); for other "
                         "kernels use the hierarchical working-set solver on a flat hierarchy")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="crammer_singer.solve")
    overrides = {k: v for k, v in dict(check_every=check_every, polish=polish).items()
                 if v is not None}
    options = dataclasses.replace(Options() if options is None else options, **overrides)
    with blas_threads(1):
        return _solve(model, C, float(tol), int(max_iter), alpha0, options, random_state,
                      verbose, stop_when)


def _initial_beta(alpha0, data, C) -> np.ndarray:
    """Zero, or the expansion coefficients of the projected warm start ``alpha0``."""
    if alpha0 is None:
        return np.zeros((data.n_samples, data.n_classes))
    alpha0 = np.asarray(alpha0, dtype=float)
    if alpha0.shape != (data.n_pairs,) or not np.all(np.isfinite(alpha0)):
        raise InputError(f"alpha0 must hold {data.n_pairs} finite pair multipliers, got shape "
                         f"{alpha0.shape}")
    return _margin.coefficients(_margin.project_dual(alpha0, data, C), data)


def _solve(model, C, tol, max_iter, alpha0, options, random_state, verbose, stop_when=None):
    t_start = time.perf_counter()
    data = model.data
    n, q = data.n_samples, data.n_classes
    rows = row_data(X=model.X)
    sqnorm = np.ascontiguousarray(row_sq_norms(rows), dtype=float)
    y = np.ascontiguousarray(model.y_index, dtype=np.int64)
    budget = np.ascontiguousarray(C * data.Cw, dtype=float)
    beta = _initial_beta(alpha0, data, C)
    state = MarginDualState(model, rows, C, options=options.dual)
    polisher = Polisher(state, warm=alpha0 is not None)

    rng = np.random.default_rng(random_state)
    log = logger.info if verbose else logger.debug
    history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "time")}
    active = np.ones(n, dtype=np.int8)
    classes = np.tile(np.arange(q, dtype=np.int64), (n, 1))
    n_active_classes = np.full(n, q, dtype=np.int64)
    n_iter, converged, eps, pass_max = 0, False, 0.0, np.inf
    W = np.zeros((q, model.X.shape[1]))
    schedule = CertificateSchedule(options.check_every, state.certificate_work())
    while True:
        if schedule.due():
            alpha = _margin.project_dual(_pair_alpha(beta, data), data, C)
            primal, dual, psi = polisher.checkpoint(alpha, tol, options.polish)
            # re-synchronise beta and W with the certified point
            beta = np.ascontiguousarray(state.G.copy())
            W = np.ascontiguousarray(state.W.copy())
            gap = relative_gap(primal, dual)
            for key, val in (("n_iter", n_iter), ("objective", primal), ("lower_bound", dual),
                             ("gap", gap), ("time", time.perf_counter() - t_start)):
                history[key].append(val)
            log("pass %d: primal %.10g dual %.10g gap %.3e", n_iter, primal, dual, gap)
            if reached(gap, tol):
                converged = True
                break
            if stop_when is not None and stop_when(n_iter, polisher.work_done, alpha):
                break
            psi_ok = tol * gap_scale(primal, dual) / max(float(budget.sum()), np.finfo(float).tiny)
            # Like LIBLINEAR, a fixed small violation threshold (here one that certifies tol:
            # gap <= sum_i C_i psi_i) with shrinking; unlike it, shrunk examples found violated
            # at a certificate come back at once.
            eps = options.threshold * psi_ok
            back = psi > eps
            active[back] = 1
            n_active_classes[back] = q
            schedule.certified()
        if n_iter >= max_iter:
            break
        order = rng.permutation(np.flatnonzero(active)).astype(np.int64)
        pass_max, _, work = cs_sweep(order, rows, W, beta, y, budget, sqnorm, eps, active,
                                     classes, n_active_classes)
        n_iter += 1
        schedule.passed(work)
        polisher.passed(work)
        if pass_max <= eps:
            if active.all() and (n_active_classes == q).all():
                schedule.now()
            else:  # converged on the shrunk problem: check everything again
                active[:] = 1
                n_active_classes[:] = q
    return _result(model, beta, C, tol, n_iter, converged, history, polisher, t_start)


def _result(model, beta, C, tol, n_iter, converged, history, polisher, t_start) -> Solution:
    """The reported certificate: the model's own bound at the final point and objective at
    ``W(beta)`` or at the face step's better primal point (:func:`.margin_dual.primal_point`)."""
    data, state = model.data, polisher.state
    alpha = _margin.project_dual(_pair_alpha(beta, data), data, C)
    G, W_aug, objective = primal_point(model, _margin.coefficients(alpha, data), C, state.best_G)
    coef, intercept = model.split_weights(W_aug)
    n_newton = state.n_newton
    lower = model.lower_bound(alpha, C)
    converged = converged and reached(relative_gap(objective, lower), tol)
    history["n_newton"] = n_newton
    res = Solution(weights=np.ascontiguousarray(coef), objective=float(objective),
                   lower_bound=float(lower), n_iter=n_iter, converged=converged, tol=tol,
                   dual=alpha, history=history, solve_time=time.perf_counter() - t_start,
                   solver="crammer_singer", name="Crammer-Singer sequential dual",
                   extras={"intercept": intercept, "coefficients": G, "n_newton": n_newton,
                           "pass_work": polisher.work_done})
    res.warn_unless_converged("passes", stacklevel=4)  # points at the caller of solve
    return res
