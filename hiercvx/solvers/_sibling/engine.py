"""The engine of the sibling-margin QP solvers: :class:`SiblingQPSolver` picks a method for
one prepared model, runs it, returns one certified :class:`~hiercvx.result.Solution`, and
keeps the last solve's point so that the next one (a DC step of HPSI (3), a C sweep)
warm-starts from it."""

from __future__ import annotations

import logging
import time
from dataclasses import MISSING, replace

import numpy as np

from ...exceptions import InputError
from ...models.sibling import SiblingModel, check_pair_weights
from ...result import Solution
from ..dc import dc_iterations
from ..primitives import blas_threads
from .alm import ALM
from .certificate import Certificate
from .dual import DualRoute, WorkingSet
from .ipm import PrimalIPM
from .options import Options
from .problem import PairProblem

__all__ = ["SiblingQPSolver"]

logger = logging.getLogger(__name__)


class SiblingQPSolver:
    """The engine behind :func:`~hiercvx.solvers.sibling_qp.solve` and
    :func:`~hiercvx.solvers.sibling_qp.solve_dc` on one prepared model.

    ``SiblingQPSolver(model, options=Options(...))`` (or the keywords ``method``,
    ``rank_rtol``, ``max_ipm_size``, ``rho``, ``random_state``, ``max_dual_pairs``) prepares
    the method once -- the group basis and the pivoted Cholesky factor of a kernel
    (``PrimalIPM``), the Gram matrix of the dual (``DualRoute``), the
    compiled rows of the coordinate ascent (``ALM``) -- and keeps the state of the
    last solve so that :meth:`solve` warm-starts the next one (ALM, working set).

    ``method``: ``"ipm"`` (primal interior point in reduced coordinates), ``"dual_ipm"``
    (dual interior point on the live pairs), ``"working_set"`` (the same on a working set of
    pairs grown until the certificate holds), ``"alm"`` (dual block coordinate ascent) or
    ``"auto"``: the IPM when its Newton system has at most ``max_ipm_size`` rows ``M' (q + 1)``
    (``M'`` free function directions, ``q`` the input dimension or the kernel's numerical
    rank) and a step costs no more flops than the dual's on all pairs
    (:func:`~hiercvx.solvers.sibling_qp.ipm_step_cost`); else ``"dual_ipm"`` when the live pairs
    are at most ``max_dual_pairs``; else ``"working_set"``.

    Attributes: ``model`` (the :class:`~hiercvx.models.sibling.SiblingModel`), ``problem``
    (``PairProblem``), ``pairs``, ``hierarchy`` (the working hierarchy),
    ``method`` (the resolved method), ``rank`` (``q``; ``None`` unless the IPM runs),
    ``options``, ``certificate`` (``Certificate``), ``ipm``, ``alm``.
    """

    def __init__(self, model: SiblingModel, method=None, rank_rtol=None, max_ipm_size=None,
                 rho=None, random_state=MISSING, max_dual_pairs=None, *, options=None):
        if not isinstance(model, SiblingModel):
            raise InputError("SiblingQPSolver takes the model of hiercvx.models.sibling.prepare(X, "
                             f"y, H, ...), got {type(model).__name__}")
        self.options = Options.of(options, method=method, rank_rtol=rank_rtol,
                                  max_ipm_size=max_ipm_size, rho=rho, random_state=random_state,
                                  max_dual_pairs=max_dual_pairs)
        self.model = model
        self.problem = PairProblem(model)
        self.pairs = self.problem.pairs
        self.hierarchy = self.pairs.hierarchy
        self.kernel = model.kernel
        self.n, self.M, self.P = self.problem.n, self.problem.M, self.problem.P
        self.certificate = Certificate(self.problem, self.options)
        self.ipm = self.alm = self.dual = self.working_set = None
        # the products are small: threaded BLAS only adds synchronisation, so setup and
        # solves run single-threaded
        with blas_threads(1):
            self.method = self._setup(self.options.method)
        self.rank = None if self.ipm is None else self.ipm.rank
        self._last = None   # (beta, b, C) of the last solve: the next one's warm start

    def _setup(self, method):
        o = self.options
        if method in ("auto", "ipm"):
            self.ipm = PrimalIPM.of(self.problem, o, forced=method == "ipm")
            if self.ipm is not None:
                return "ipm"
        self.alm = ALM(self.problem, self.certificate, o)
        self.dual = DualRoute(self.problem, self.certificate, o)
        self.working_set = WorkingSet(self.dual, self.alm, o)
        if method == "auto":
            # the dual interior point when the pairs the dual can use are few (a wide star with
            # few labelled leaves, small data); else a working set of them
            return "dual_ipm" if self.problem.n_live(np.zeros(self.P)) <= o.max_dual_pairs \
                else "working_set"
        return method

    @property
    def _basis(self):
        """The primal IPM's group basis, ``None`` when another method runs."""
        return None if self.ipm is None else self.ipm.basis

    def solve(self, C=1.0, pair_weights=None, tol=1e-6, max_iter=None, warm_start=True,
              max_passes=None, verbose=False) -> Solution:
        """Solve (8) for ``C`` and the DC term ``pair_weights`` (``None``: HSVM (2)).

        Stops on a certified relative gap ``<= tol``; warns (``ConvergenceWarning``) when
        ``max_iter`` (IPM iterations, default ``options.ipm_max_iter``; working set:
        ``working_set_max_iter``; ALM multiplier steps: ``alm_max_iter``) runs out first,
        counting what ``n_iter`` counts (interior point steps; the ALM's passes).
        ``warm_start`` (ALM, working set): start from this engine's last solve (``beta``
        scaled to the new ``C``, the biases kept; the working set also keeps the last set);
        ``max_passes``: ALM sweeps per step (default ``options.max_passes``); ``verbose``: log
        the method's steps (interior point steps and certificates, working-set rounds, ALM
        multiplier steps) at INFO.  ``C``, ``tol`` and ``max_iter`` are taken as checked
        (:func:`~hiercvx.solvers.sibling_qp.solve` checks them).
        """
        t0 = time.perf_counter()
        C = float(C)
        lam = np.ascontiguousarray(check_pair_weights(pair_weights, self.model), dtype=float)
        at_zero = self.problem.at_zero(C, None if pair_weights is None else lam)
        with blas_threads(1):
            out = self._run(C, lam, tol, max_iter, warm_start, max_passes, at_zero,
                            logger.info if verbose else logger.debug)
        res = Solution(objective=float(out.primal), lower_bound=float(out.lower), weights=out.W,
                       solver="sibling_qp", n_iter=int(out.n_iter), converged=bool(out.converged),
                       tol=float(tol), dual=out.beta, history=out.history,
                       solve_time=time.perf_counter() - t0,
                       name=f"sibling-margin QP ({self.method})",
                       extras={"biases": out.b, "dual_feasible": out.feas, "pair_weights": lam,
                               "C": C, "method": self.method, "at_zero": float(at_zero)})
        res.warn_unless_converged(out.unit, stacklevel=2)
        # the ALM warm-starts from its own multipliers; the returned biases are completed
        # and centred
        b = self.alm.last_b if self.method == "alm" else out.b.copy()
        self._last = (np.asarray(out.beta, float).copy(), b, C)
        return res

    def _run(self, C, lam, tol, max_iter, warm_start, max_passes, at_zero, log):
        o = self.options
        max_passes = o.max_passes if max_passes is None else max_passes
        start = None
        if warm_start and self._last is not None:
            beta, b, C_last = self._last
            start = (beta * (C / C_last), b)
        if self.method == "ipm":
            return self.ipm.solve(C, lam, tol, o.ipm_max_iter if max_iter is None else max_iter,
                                  self.certificate, at_zero, log)
        if self.method == "dual_ipm":
            return self.dual.solve_all(C, lam, tol,
                                       o.ipm_max_iter if max_iter is None else max_iter, at_zero,
                                       log)
        if self.method == "working_set":
            return self.working_set.solve(
                C, lam, tol, o.working_set_max_iter if max_iter is None else max_iter, start,
                4 * max_passes, at_zero, log)
        return self.alm.solve(C, lam, tol, o.alm_max_iter if max_iter is None else max_iter,
                              start, max_passes, at_zero, log)

    def pinned(self, res: Solution) -> Solution:
        """``res`` (a solve of (8)) with its biases pinned to the least-norm ones
        (:meth:`~hiercvx.models.sibling.SiblingModel.least_biases`: optimal for its weights,
        bounded) and its objective recomputed there, when they have drifted along a flat ray of (8)
        (``options.bias_drift``); else ``res``.  The certified bound is unchanged."""
        model, b = self.model, res.biases
        C, lam = res.extras["C"], res.extras["pair_weights"]
        scale = np.abs(model.pairs.margins(model.train_scores(res.weights, np.zeros(self.M))))
        if np.abs(b).max() <= self.options.bias_drift * (1.0 + scale.max(initial=0.0)):
            return res
        coef, b = model.center(res.weights, model.least_biases(res.weights, b, C, lam))
        return replace(res, weights=coef, objective=model.primal_value(coef, b, C, lam),
                       extras={**res.extras, "biases": b})

    def solve_dc(self, C=1.0, tol=1e-6, max_iter=50, gap_tol=1e-6,
                 step_max_iter=None, verbose=False) -> Solution:
        """HPSI: the DC loop :func:`hiercvx.solvers.dc.dc_iterations` (Wang, Shen & Pan (3))
        with every convex step solved by :meth:`solve` (HSVM cold, then each step warm-started
        by the previous one under ALM and the working set; the interior points start cold),
        certified to ``gap_tol`` within ``step_max_iter`` iterations, its biases pinned by
        :meth:`pinned` when they drift; ``tol`` and
        ``max_iter`` are the DC loop's; ``verbose`` logs every DC step and the steps of every
        convex solve at INFO."""
        t0 = time.perf_counter()

        def step(pair_weights):
            res = self.pinned(self.solve(C, pair_weights, tol=gap_tol, max_iter=step_max_iter,
                                         warm_start=pair_weights is not None, verbose=verbose))
            return res.weights, res.biases, res

        out = dc_iterations(self.model, float(C), tol, max_iter, step, "sibling_qp.solve_dc",
                            options=self.options.dc,
                            log=logger.info if verbose else logger.debug)
        out.solver = "sibling_qp"
        out.extras["method"] = self.method
        out.solve_time = time.perf_counter() - t0
        return out
