"""The Cai–Hofmann hierarchical SVM by variable selection (Cai thesis, section 4.3, Algorithm 2).

The dual (thesis (4.15), and its margin-rescaled analogue; see :mod:`hiercvx.models.margin`)::

    max_alpha  sum_p b_p alpha_p - 1/2 ||w(alpha)||^2
    s.t.       alpha >= 0,   sum_{p of example i} cost_p alpha_p <= C_i      (one budget per example)

decouples over examples in its constraints, so the solver works example by example
(block coordinate ascent):

* the margin violations ``H_p = (b_p - <dPhi_p, w>) / cost_p`` (thesis (4.24): for slack
  rescaling ``Delta (1 - <dPhi, w>)``, for margin rescaling ``Delta - <dPhi, w>``) are read
  from the class scores ``s_i``, kept up to date incrementally: a change ``dG_i`` of example
  i's expansion coefficients (4.12) moves the score factor by a rank-one term
  (:mod:`.score_factor`; the n x n Gram matrix is never formed for the linear kernel);
* the violation score ``psi_i = l_i - u_i`` of thesis (4.29)-(4.32) decides which examples are
  visited and when a visit ends: Proposition 3 says alpha is optimal iff every ``psi_i = 0``;
* at a visited example the most violated pairs (step 6) join the working set ``S_i`` (step 7),
  the reduced QP over ``S_i`` is solved exactly (step 8a, :func:`solve_subproblem`), the pairs
  whose alpha dropped to 0 leave ``S_i`` (step 9); this repeats until example i is optimal
  with the others frozen, and then the score factor is updated once
  (``_working_set_kernels.sweep``);
* step 8b, "optimize over all selected variables", is taken exactly once the working sets
  settle: on the face they identify (:mod:`.face_step`), on the working pairs with the bounds
  kept (:mod:`.support_step`), or by a Newton step on their union; :mod:`.margin_polish` says
  when.

Where the thesis leaves room:

* selection: the thesis picks ``argmax_i psi_i`` after every update, which needs every score
  after each step.  The passes visit the examples in a seeded random order and skip those
  whose ``psi_i`` is below a threshold that shrinks as the passes converge; the threshold is
  capped at every certificate so that the skipped examples carry at most ``skip_mass`` of
  ``sum_i C_i psi_i`` (which bounds the gap).  Examples without support whose margins all
  hold strictly are shrunk (skipped) until a certificate finds them violated again;
* pair shrinking, as LIBLINEAR shrinks classes (Keerthi, Sundararajan, Chang, Hsieh & Lin, "A
  sequential dual method for large scale multi-class linear SVMs", KDD 2008; Fan et al.,
  "LIBLINEAR", JMLR 9, 2008): a pair with ``alpha_p = 0`` whose violation lies ``eps`` below
  ``min(0, u_i)`` leaves its example's list of live pairs, and a pass computes the scores of
  the live pairs' classes only.  Every pair is live again after each certificate and when a
  pass over the live pairs meets nothing above ``eps``, so the certificate and the stopping
  rule are those of the unshrunk passes;
* step 7 adds up to ``n_enter`` of the most violated pairs per round instead of one, so a
  visit that needs many pairs costs a few reduced QPs, not one per pair;
* step 8a is carried to the end: a visit repeats steps 6-9 until ``psi_i`` is below
  ``local`` times the threshold, so each visit is an exact block coordinate ascent step.

Stopping is certified (as in celer): at certificates spaced by counted work (multiply-adds,
not time, so runs are reproducible; :class:`~.primitives.CertificateSchedule`) the dual at the
feasible alpha and the primal (4.10) recomputed at ``w(alpha)`` (or at the exact steps' better
primal point) are evaluated, and the solver stops when their relative gap reaches ``tol``.
Since ``gap <= sum_i C_i psi_i``, psi also gives the per-example tolerances.

Entry point: ``solve(model, C)`` with ``model = hiercvx.models.hsvm.prepare(X, Y, H, ...)`` (any
:class:`~hiercvx.models.margin.MarginModel` works, e.g. the Crammer–Singer model); settings in
:class:`Options`.

Reference: L. Cai, *Multilabel Classification over Category Taxonomies*, PhD thesis, Brown
University, 2008, section 4.3 (Algorithm 2, Proposition 3).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, gap_scale, reached, relative_gap
from . import margin_dual
from ._working_set_kernels import sweep
from .margin_dual import MarginDualState, primal_point, violation_scores
from .margin_polish import Polisher
from .primitives import CertificateSchedule, blas_threads, budget_qp, row_data

logger = logging.getLogger(__name__)

__all__ = ["Options", "initial_dual", "solve", "solve_subproblem", "violation_scores"]


@dataclass(frozen=True)
class Options:
    """Settings of the working-set solver.  Each default with its reason.

    Attributes
    ----------
    max_rounds : int
        Reduced-QP rounds per visit of an example (a visit ends far earlier: this only bounds a
        pathological one).
    check_every : int
        Least number of passes between certificates (more when a certificate is expensive
        relative to a pass, :class:`~.primitives.CertificateSchedule`; one is also computed
        whenever a pass over all examples meets no psi above the threshold).
    polish : bool
        Take step 8b of Algorithm 2 when the working sets settle (:mod:`.margin_polish`); the
        thesis needs it for finite convergence.
    shrink : bool
        Shrink pairs (LIBLINEAR's shrinking, Keerthi et al. 2008): the optimum and its
        certificate are the same either way, only the work per pass changes.
    factor : str
        The rows the passes keep their scores in: ``"classes"``, ``"nodes"`` (needs class
        attributes) or ``"auto"`` (:func:`~.score_factor.choose_factor`: fewer row operations
        per visit).  The same iterates either way, up to rounding.
    eps_init : float
        The skip threshold starts at this share of the largest psi ...
    eps_shrink : float
        ... and is multiplied by this when a pass meets no psi above it (a geometric schedule,
        as LIBLINEAR's stopping tolerance on the shrunk problem).
    local : float
        A visit ends when its psi_i is below this share of the threshold.
    skip_mass : float
        The skipped examples may carry at most this share of ``sum_i C_i psi_i``, the bound on
        the gap: otherwise the passes stall on the rest.
    n_enter : int
        Pairs entering a working set per round (the thesis adds one; a few at once keep a visit
        that needs many pairs at a few reduced QPs).
    ahead : int
        The pass reads the data of the example this many places ahead in its order before it
        handles the current one (a software prefetch: the loads overlap with the work).
    sub_share : float
        A visit's reduced QP (step 8a) is solved to this share of the visit's own tolerance
        (``local`` times the threshold) ...
    sub_cap : float
        ... and at least to this KKT violation: an exact step is cheap on the few pairs of a
        single label; on label sets (tens of tied pairs per example, a degenerate QP whose
        pairwise steps crawl) the label-set engine lifts the cap.
    block_share, block_min_classes : float, int
        With at least ``block_min_classes`` classes, a visit that needs at most ``block_share``
        of them (those of its live pairs) first copies their block of the class Gram matrix
        ``Q`` and reads only the copy.  On a GO DAG ``Q`` (two thousand classes, 37 MB)
        outgrows a core's caches while a visit needs about a hundred classes, whose reduced
        Hessians read ``Q`` at random; a smaller ``Q`` stays in cache, and where a visit needs
        most classes (single labels) the copy would cost more than the reads it replaces.
    dual : margin_dual.Options
        The dual state's and step 8b's settings (:class:`.margin_dual.Options`).
    """

    max_rounds: int = 100
    check_every: int = 10
    polish: bool = True
    shrink: bool = True
    factor: str = "auto"
    eps_init: float = 0.1
    eps_shrink: float = 0.1
    local: float = 0.1
    skip_mass: float = 0.05
    n_enter: int = 8
    ahead: int = 8
    sub_share: float = 0.1
    sub_cap: float = 1e-9
    block_share: float = 0.125
    block_min_classes: int = 1000
    dual: margin_dual.Options = field(default_factory=margin_dual.Options)


# --------------------------------------------------------------------------------------------
# The reduced QP over one example's working set
# --------------------------------------------------------------------------------------------

def solve_subproblem(hessian, gradient, alpha, cost, budget, tol: float = 1e-12,
                     max_iter: int | None = None):
    """Exact solution of one example's reduced QP (thesis Algorithm 2, step 8a).

    ``max_a  gradient . (a - alpha) - 1/2 (a - alpha)^T hessian (a - alpha)``
    s.t. ``a >= 0`` and ``cost . a <= budget``, from the feasible start ``alpha``;
    ``hessian = K_ii B Q B^T`` restricted to the working set (B: rows ``e_y - e_ybar``).
    Returns ``(a, gradient_at_a)``.
    """
    H = np.ascontiguousarray(hessian, dtype=float)
    g = np.array(gradient, dtype=float)
    a = np.array(alpha, dtype=float)
    c = np.ascontiguousarray(cost, dtype=float)
    k = len(a)
    if H.shape != (k, k) or g.shape != (k,) or c.shape != (k,):
        raise InputError(f"inconsistent sub-problem sizes: hessian {H.shape}, gradient {g.shape}, "
                         f"alpha {a.shape}, cost {c.shape}")
    if np.any(a < 0) or np.any(c <= 0) or c @ a > budget * (1 + 1e-12):
        raise InputError("the starting point must be feasible (alpha >= 0, cost . alpha <= budget) "
                         "with positive costs")
    slack = max(float(budget) - float(c @ a), 0.0)
    budget_qp(H, g, a, c, slack, k, float(tol), int(max_iter or 200 * k + 1000))
    return a, g


# --------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------

def _mass_threshold(psi, budget, share: float) -> float:
    """The largest ``t`` among the psi values with ``sum_{psi_i <= t} C_i psi_i <= share *
    sum_i C_i psi_i`` (0 when no such value): skipping examples below it keeps most of the
    certificate's mass in the pass."""
    mass = budget * psi
    total = float(mass.sum())
    if not total > 0:
        return 0.0
    order = np.argsort(psi, kind="stable")
    below = np.cumsum(mass[order]) <= share * total
    return float(psi[order][below][-1]) if below.any() else 0.0


def solve(model: MarginModel, C: float = 1.0, *, tol: float = 1e-6, max_iter: int = 10_000,
          verbose: bool = False, alpha0=None, random_state=0, stop_when=None,
          options: Options | None = None, max_rounds: int | None = None,
          check_every: int | None = None, polish: bool | None = None,
          shrink: bool | None = None, factor: str | None = None,
          polish_carry: tuple | None = None) -> Solution:
    """Cai–Hofmann hierarchical SVM (thesis (4.10)/(4.15)) by variable selection, Algorithm 2.

    Parameters
    ----------
    model : MarginModel
        A :class:`~hiercvx.models.hsvm.HSVMModel` from
        ``hiercvx.models.hsvm.prepare(X, Y, H, ...)`` (labels, loss, class attributes or class
        kernel, rescaling, sample weights, kernel), or any
        :class:`~hiercvx.models.margin.MarginModel`
        (:func:`~hiercvx.models.margin.model_from_data`).  The linear kernel with class
        attributes works on the features and never forms the Gram matrix.
    C : float
        Positive; example i's budget is ``C * data.Cw[i]``.
    tol : float
        Certified relative duality gap ``(primal - dual) / max(1, |primal|)`` to reach.
    max_iter : int
        Passes over the data; a ``ConvergenceWarning`` is issued when they run out.
    verbose : bool
        Log progress at INFO level (DEBUG otherwise).
    alpha0 : array, optional
        Warm start (one value per pair of ``model.data``), made feasible first.
    random_state : int
        Seed of the order in which the examples are visited.
    stop_when : callable, optional
        ``stop_when(n_iter, pass_work, alpha) -> bool``, asked at every certificate that did
        not reach ``tol`` (passes so far, the multiply-adds they counted, the dual point): True
        ends the solve there, unconverged (the margin engine's budget).
    options : Options, optional
        The solver's settings (default ``Options()``).
    max_rounds, check_every, polish, shrink, factor : optional
        Override the fields of ``options`` of the same name.
    polish_carry : tuple, optional
        The ``polish_carry`` extra of a solve this one continues (the label-set engine's
        rounds): step 8b's credit, wait and cost estimates go on from there
        (:class:`~.margin_polish.Polisher`).

    Returns
    -------
    Solution
        ``weights`` the node weights ``W`` ``(M, d)`` (linear kernel with class attributes) or
        the expansion coefficients ``G`` ``(n, q)`` (other kernels: class scores
        ``k(x, X) G Q``), ``dual`` the pair multipliers alpha, ``history`` per certificate
        (n_iter: the pass it follows, objective, lower_bound, gap, max_psi, time, live_pairs:
        pairs not shrunk in the pass before; ``n_newton``: accepted exact steps).  Extras:
        ``coefficients`` (``G`` of the reported weights: ``G(alpha)``, or an exact step's primal
        point when its objective is lower), ``n_newton``, ``pass_work`` (multiply-adds counted
        by the passes), ``polish_carry``.
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...) "
                         f"(or hiercvx.models.margin.model_from_data), got {type(model).__name__}")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="working_set.solve")
    overrides = {k: v for k, v in dict(max_rounds=max_rounds, check_every=check_every,
                                      polish=polish, shrink=shrink, factor=factor).items()
                 if v is not None}
    options = dataclasses.replace(Options() if options is None else options, **overrides)
    if options.factor not in ("auto", "classes", "nodes"):
        raise InputError(f"factor must be 'auto', 'classes' or 'nodes', got {options.factor!r}")
    if options.factor == "nodes" and model.data.Lam is None:
        raise InputError("factor='nodes' needs class attributes (the model has a class kernel "
                         "Q only); use factor='classes' or 'auto'")
    # the products are small: threaded BLAS only adds synchronisation, so single-threaded
    with blas_threads(1):
        return _Run(model, C, float(tol), alpha0, options, verbose, polish_carry).solve(
            int(max_iter), random_state, stop_when)


def initial_dual(alpha0, data, C) -> np.ndarray:
    """Zero, or the warm start ``alpha0`` (one value per pair of ``data``, checked finite)
    projected onto the dual feasible set of ``C``."""
    P = data.n_pairs
    if alpha0 is None:
        return np.zeros(P)
    alpha0 = (sp.coo_array(alpha0).toarray() if sp.issparse(alpha0)
              else np.asarray(alpha0, dtype=float))
    if alpha0.shape != (P,) or not np.all(np.isfinite(alpha0)):
        raise InputError(f"alpha0 must hold {P} finite values (one per pair of data), got "
                         f"shape {alpha0.shape}")
    return np.ascontiguousarray(_margin.project_dual(alpha0, data, C))


class _Threshold:
    """The skip threshold eps of the passes (module docstring: selection)."""

    def __init__(self, tol, total_budget, options: Options):
        self.tol, self.total_budget, self.options = tol, total_budget, options
        self.eps = None

    def update(self, psi, budget, primal, max_psi, pass_max) -> float:
        opts = self.options
        # every psi_i <= psi_ok would certify tol, since gap <= sum_i C_i psi_i
        psi_ok = self.tol * gap_scale(primal, 0.0) / self.total_budget
        if self.eps is None:
            self.eps = opts.eps_init * max_psi
        elif pass_max <= self.eps:  # the last pass met nothing above eps: tighten it
            self.eps *= opts.eps_shrink
        # the skipped examples (psi_i <= eps) may carry at most skip_mass of the bound
        # sum_i C_i psi_i >= gap: otherwise the passes stall on the rest
        self.eps = min(self.eps, _mass_threshold(psi, budget, opts.skip_mass))
        self.eps = max(self.eps, 0.1 * psi_ok)
        return self.eps


class _Run:
    """One solve: the dual point, its state and step-8b policy, the shrinking lists, the
    threshold and the certificate history."""

    def __init__(self, model, C, tol, alpha0, options: Options, verbose, polish_carry=None):
        self.t_start = time.perf_counter()
        self.model, self.C, self.tol, self.options = model, C, tol, options
        data = self.data = model.data
        self.rows = row_data(X=model.X) if model.node_weights else row_data(K=model.K)
        self.alpha = initial_dual(alpha0, data, C)
        self.state = MarginDualState(model, self.rows, C, factor=options.factor,
                                     options=options.dual)
        self.polisher = Polisher(self.state, warm=alpha0 is not None, carry=polish_carry)
        state = self.state
        self.pairs = (np.ascontiguousarray(data.pair_ptr, dtype=np.int64),
                      np.ascontiguousarray(data.pair_y, dtype=np.int64),
                      np.ascontiguousarray(data.pair_ybar, dtype=np.int64),
                      state.offset, state.cost)
        self.threshold = _Threshold(tol, max(float(state.budget.sum()), np.finfo(float).tiny),
                                    options)
        self.log = logger.info if verbose else logger.debug
        self.history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "max_psi",
                                        "time", "live_pairs")}
        self.active = np.ones(data.n_samples, dtype=np.int8)
        self.n_pairs = np.diff(self.pairs[0])  # the live pairs (not shrunk) of each example
        self.live = np.arange(data.n_pairs, dtype=np.int64)
        self.n_live = self.n_pairs.copy()

    def unshrink(self):
        """Every pair live again (``_working_set_kernels.sweep``)."""
        self.live[:] = np.arange(self.live.size)
        self.n_live[:] = self.n_pairs

    def certificate(self, n_iter, pass_max, stop_when):
        """Certify (and take step 8b when due); returns ``(stop, converged, eps)``."""
        primal, dual, psi = self.polisher.checkpoint(self.alpha, self.tol, self.options.polish)
        gap = relative_gap(primal, dual)
        max_psi = float(psi.max()) if psi.size else 0.0
        for key, val in (("n_iter", n_iter), ("objective", primal), ("lower_bound", dual),
                         ("gap", gap), ("max_psi", max_psi),
                         ("time", time.perf_counter() - self.t_start),
                         ("live_pairs", int(self.n_live.sum()))):
            self.history[key].append(val)
        self.log("pass %d: primal %.10g dual %.10g gap %.3e max psi %.3e", n_iter, primal, dual,
                 gap, max_psi)
        if reached(gap, self.tol):
            return True, True, None
        if stop_when is not None and stop_when(n_iter, self.polisher.work_done, self.alpha):
            return True, False, None
        eps = self.threshold.update(psi, self.state.budget, primal, max_psi, pass_max)
        self.active[psi > eps] = 1  # shrunk examples that became violated come back
        self.unshrink()  # and every pair is checked again
        return False, False, eps

    def sweep(self, order, eps, n_iter):
        """Pass ``n_iter`` over ``order`` at the threshold ``eps``: ``(largest psi, work)``."""
        opts, state = self.options, self.state
        local_tol = opts.local * eps
        control = (eps, local_tol, min(opts.sub_share * local_tol, opts.sub_cap), opts.max_rounds,
                   eps if opts.shrink else np.inf, opts.dual.budget_rtol, opts.n_enter,
                   opts.ahead, opts.block_share, opts.block_min_classes)
        factor = (state.F, state.factor.read, state.factor.move)
        duals = (self.alpha, state.kdiag, state.budget, state.Q)
        pass_max, visits, work, _ = sweep(order, self.rows, factor, duals, self.pairs, control,
                                          (self.active, self.live, self.n_live))
        logger.debug("pass %d: %d of %d active examples visited (threshold %.3e)", n_iter,
                     visits, order.size, eps)
        return pass_max, work

    def solve(self, max_iter, random_state, stop_when) -> Solution:
        rng = np.random.default_rng(random_state)
        n_iter, converged, eps = 0, False, None
        pass_max = np.inf  # largest psi met by the last pass (none yet)
        schedule = CertificateSchedule(self.options.check_every, self.state.certificate_work())
        while True:
            if schedule.due():
                stop, converged, eps = self.certificate(n_iter, pass_max, stop_when)
                schedule.certified()
                if stop:
                    break
            if n_iter >= max_iter:
                break
            order = rng.permutation(np.flatnonzero(self.active)).astype(np.int64)
            # a pass over every example and pair can certify convergence at eps (the sweep
            # itself shrinks pairs of the examples it skips, so this is known only before it)
            whole = (order.size == self.data.n_samples
                     and np.array_equal(self.n_live, self.n_pairs))
            pass_max, work = self.sweep(order, eps, n_iter)
            n_iter += 1
            schedule.passed(work)
            self.polisher.passed(work)
            if pass_max <= eps:
                if whole:
                    schedule.now()  # converged at eps over every example and pair: certify
                else:  # shrunk examples and pairs are checked again before any certificate
                    self.active[:] = 1
                    self.unshrink()
        return self.result(n_iter, converged)

    def result(self, n_iter, converged) -> Solution:
        """The reported certificate: the model's own bound at the final alpha and objective
        at ``w(alpha)`` or at an exact step's better primal point
        (:func:`.margin_dual.primal_point`; over the model's own features: a Crammer-Singer
        model's include its bias column)."""
        model, C, tol, state = self.model, self.C, self.tol, self.state
        alpha = _margin.project_dual(self.alpha, model.data, C)
        G, weights, objective = primal_point(model, _margin.coefficients(alpha, model.data), C,
                                             state.best_G)
        lower = model.lower_bound(alpha, C)
        converged = converged and reached(relative_gap(objective, lower), tol)
        self.history["n_newton"] = state.n_newton
        extras = {"coefficients": G, "n_newton": state.n_newton,
                  "pass_work": self.polisher.work_done, "polish_carry": self.polisher.carry}
        split = getattr(model, "split_weights", None)
        if model.node_weights and split is not None:
            weights, extras["intercept"] = split(weights)
        res = Solution(weights=weights, objective=float(objective), lower_bound=float(lower),
                       n_iter=n_iter, converged=converged, tol=tol, dual=alpha,
                       history=self.history, solve_time=time.perf_counter() - self.t_start,
                       solver="working_set", name="hsvm working set (Alg. 2)", extras=extras)
        res.warn_unless_converged("passes", stacklevel=4)  # points at the caller of solve
        return res
