"""The support step: the margin dual restricted to the working pairs, with its bounds kept.

On a degenerate face (more support pairs than primal dimensions: noisy labels, label sets, a
bias column) the maximizers of the face (:mod:`.face_step`) form an affine set and the one
nearest to ``alpha`` has many ``alpha_p < 0``, so the face corrections do not settle.  The
support step solves instead the dual (4.14) restricted to the *working pairs* -- the support
and the pairs at their example's largest violation -- with ``alpha >= 0`` and the budgets kept
as inequalities::

    max_a  b^T a - 1/2 a^T M a,   a >= 0,   sum_{p of i} cost_p a_p <= C_i,
    M = Phi_W Phi_W^T (the working pairs' Gram matrix, :meth:`.face.FaceSolver.matrix`)

to the end, by the budgeted dual-QP interior point (:func:`~.dual_qp.solve_dual_qp`, one
dense factorization of ``M`` per Newton step).  Pairs violated at its answer join and it is
solved again; when no pair outside is violated the restricted optimum is the optimum
(Algorithm 2's optimality condition, thesis Proposition 3).

The same restricted problem has a second form in the primal space: the interior point of
:mod:`.interior_point` on the examples with support or a violated pair (all their pairs), whose
Newton step factors a matrix of the primal dimension (classes x features) whatever the number
of pairs; examples violated at its answer join for the next round.  :meth:`SupportStep.form`
takes whichever Newton step is cheaper: with random labels the support outgrows the pair form
while the primal stays small.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ..result import reached, relative_gap
from . import interior_point
from .dual_qp import BlockDiagonal, solve_dual_qp
from .face import FaceRows
from .face_step import FaceStep
from .margin_dual import MarginDualState, Options

logger = logging.getLogger(__name__)

__all__ = ["SupportStep"]


class SupportStep:
    """The support step on a :class:`~.margin_dual.MarginDualState` (module docstring);
    ``face`` is the :class:`~.face_step.FaceStep` whose face system forms ``M``."""

    def __init__(self, state: MarginDualState, face: FaceStep, options: Options | None = None):
        self.state, self.face = state, face
        self.options = state.options if options is None else options
        self._primal_step = None  # a primal-space Newton step's cost, once known

    def primal_step_cost(self) -> float:
        """Multiply-adds of one Newton step of the interior point in the primal space
        (:func:`.interior_point.step_cost`), ``inf`` when it does not apply
        (:func:`.interior_point.applicable`).  Computed once."""
        if self._primal_step is None:
            model, ipm = self.state.model, self.options.interior_point
            ok = interior_point.applicable(model, options=ipm)
            self._primal_step = interior_point.step_cost(model, options=ipm) if ok else np.inf
        return self._primal_step

    def form(self, n_pairs: int) -> str | None:
        """Where the step solves the restricted problem: ``"pairs"`` (the dual on the working
        pairs, a dense matrix with a row per pair: at most ``support_max_pairs``),
        ``"primal"`` (the interior point in the primal space), whichever Newton step is
        cheaper; None when neither applies."""
        pair_cost = (self._pair_step_cost(n_pairs) if n_pairs <= self.options.support_max_pairs
                     else np.inf)
        primal_cost = self.primal_step_cost()
        if not np.isfinite(min(pair_cost, primal_cost)):
            return None
        return "pairs" if pair_cost <= primal_cost else "primal"

    @staticmethod
    def _pair_step_cost(n_pairs: int) -> float:
        m = float(n_pairs)
        return m ** 3 / 3.0 + 16.0 * m * m

    def work(self, n_support: int) -> float:
        """The cost of one step in multiply-adds of the passes: ``support_newton`` Newton steps
        of its form (:meth:`form`), and two evaluations on the full model."""
        opts = self.options
        if self.form(n_support) == "primal":
            step = opts.support_newton * self.primal_step_cost()
        else:
            m = float(n_support)
            step = opts.support_newton * m ** 3 / 3.0 + 16.0 * m * m
        return step / opts.face_speedup + 2.0 * self.state.certificate_work()

    def solve_restricted(self, pairs):
        """The dual (4.14) with ``alpha_p = 0`` outside ``pairs`` (sorted), to the end, by
        :func:`~.dual_qp.solve_dual_qp` (module docstring).  Returns the full alpha (not yet
        projected) or None."""
        state = self.state
        data = state.data
        k = pairs.size
        M, g = self.face.solver.matrix(FaceRows.of_pairs(pairs, data.n_pairs))
        examples, loc = np.unique(data.pair_i[pairs], return_inverse=True)
        Bm = sp.csr_matrix((state.cost[pairs], (loc, np.arange(k))), shape=(examples.size, k))
        x, *_ = solve_dual_qp(BlockDiagonal.of_matrix(M), g, Bm, np.zeros((k, 0)), np.zeros(0),
                              state.budget[examples], 100, lambda *_: True)
        if not np.all(np.isfinite(x)):
            return None
        out = np.zeros(data.n_pairs)
        out[pairs] = x
        return out

    def grow(self, work, candidates, H, xi):
        """``work`` and the ``candidates`` with the largest violations ``H_p - xi_i``, at most
        ``support_max_pairs`` pairs in all (``work`` alone when it is full)."""
        room = self.options.support_max_pairs - int(np.count_nonzero(work))
        new = np.flatnonzero(candidates & ~work)
        if new.size > max(room, 0):
            score = H[new] - xi[self.state.data.pair_i[new]]
            new = new[np.argsort(-score, kind="stable")[:max(room, 0)]]
        out = work.copy()
        out[new] = True
        return out

    def step(self, alpha, tol, primal, dual):
        """:meth:`solve_restricted` on the working pairs, then the pairs violated at its answer
        join (``H_p`` above the example's slack) and it is solved again, for up to
        ``support_rounds`` rounds or until no pair is violated.  Each answer is certified on
        the full model; the best dual point replaces ``alpha`` (in place), the best primal
        point goes to the state's ``best_primal``.  Returns (primal at ``w(alpha)``, dual,
        psi) of the final alpha."""
        if self.form(int(np.count_nonzero(alpha > 0))) == "primal":
            return self.step_primal(alpha, tol, primal, dual)
        state, opts = self.state, self.options
        pair_i = state.data.pair_i
        H, xi = state.violations(state.scores)
        work = self.grow(alpha > 0, (H > 0) & (H >= xi[pair_i] - 1e-9), H, xi)
        best_alpha = None
        for _ in range(opts.support_rounds):
            pairs = np.flatnonzero(work)
            a = self.solve_restricted(pairs)
            if a is None:
                break
            best_alpha, primal, dual = state.certify_candidate(a, primal, dual, best_alpha)
            gap = relative_gap(min(primal, state.best_primal), dual)
            H, xi = state.violations(state.scores)
            enter = ~work & (H > 0) & (H >= xi[pair_i] - 1e-9)
            logger.debug("support step: %d pairs, best primal %.10g dual %.10g gap %.3e; %d "
                         "pairs enter", pairs.size, min(primal, state.best_primal), dual, gap,
                         enter.sum())
            if reached(gap, tol) or not enter.any():
                break
            if np.count_nonzero(work | enter) > opts.support_max_pairs:
                # room for them: the pairs the restricted optimum left at 0 (to the interior
                # point's accuracy) leave
                work &= a > 1e-8 * max(1.0, float(a.max()))
            grown = self.grow(work, enter, H, xi)
            if np.array_equal(grown, work):  # full: no pair can join
                break
            work = grown
        return self._finish(alpha, best_alpha)

    def step_primal(self, alpha, tol, primal, dual):
        """:meth:`step` in the primal space: the interior point (:func:`.interior_point.solve`)
        on the examples with support or a violated pair, then the examples violated at its
        answer join and it is solved again, for up to ``support_rounds`` rounds.  Certified
        and kept as in :meth:`step`."""
        state, opts = self.state, self.options
        data = state.data
        _, xi = state.violations(state.scores)
        has_support = np.bincount(data.pair_i, weights=alpha > 0, minlength=data.n_samples) > 0
        active = has_support | (xi > 0)
        best_alpha = None
        for _ in range(opts.support_rounds):
            # no warning of its own (warn=False): certified below, on the full model
            res = interior_point.solve(state.model, state.C,
                                       tol=max(0.1 * tol, opts.support_primal_tol),
                                       examples=np.flatnonzero(active), warn=False,
                                       options=opts.interior_point)
            # the interior point leaves the inactive pairs at about mu / s, not at 0: zeroed,
            # unless that costs the certificate its tolerance
            top = float(res.dual.max(initial=0.0))
            a = np.where(res.dual > opts.support_primal_zero * top, res.dual, 0.0)
            best_alpha, primal, dual = state.certify_candidate(a, primal, dual, best_alpha)
            gap = relative_gap(min(primal, state.best_primal), dual)
            if not reached(gap, tol):
                best_alpha, primal, dual = state.certify_candidate(res.dual, primal, dual,
                                                                   best_alpha)
                gap = relative_gap(min(primal, state.best_primal), dual)
            _, xi = state.violations(state.scores)
            enter = ~active & (xi > 0)
            logger.debug("support step (primal): %d of %d examples, %d Newton steps, best "
                         "primal %.10g dual %.10g gap %.3e; %d examples enter", active.sum(),
                         active.size, res.n_iter, min(primal, state.best_primal), dual, gap,
                         enter.sum())
            if reached(gap, tol) or not enter.any():
                break
            active |= enter
        return self._finish(alpha, best_alpha)

    def _finish(self, alpha, best_alpha):
        state = self.state
        if best_alpha is not None:
            alpha[:] = best_alpha
            state.n_newton += 1
        return state.certify(alpha)
