"""Dual block coordinate ascent with an augmented Lagrangian for the sibling-margin QP.

On the dual (9)-(11) of Wang, Shen & Pan (JMLR 12, 2011), the equalities (10) ``r = 0`` are
handled by an augmented Lagrangian with the biases as multipliers (Bertsekas, *Constrained
Optimization and Lagrange Multiplier Methods*, 1982).  For fixed biases ``b`` the
sub-problem ``max_{beta in box} D_b(beta) - rho/2 ||r||^2`` (the proximal point method on
``b``) has gradient ``1 - m_p(f) - rho (r_j - r_t)`` in ``beta_p`` and Hessian
``(k(x_i, x_i) + rho) E_i^T E_i`` on example ``i``'s block: a tiny QP over
``{beta_i >= 0, sum beta_i <= C}`` solved exactly by pairwise (SMO) steps
(:func:`._kernels.sweep`); then ``b <- b + rho r``.  The group sums of ``r`` vanish (every
pair joins two siblings), so ``b`` stays centred.  It warm-starts: a DC step from the
previous step's ``(beta, b)``, a C sweep with ``beta`` scaled by the ratio of the C values.
On low-dimensional data at large ``C`` coordinate ascent is slow (the dual is
ill-conditioned), which is why ``"auto"`` prefers an interior point there.
"""

from __future__ import annotations

import logging

import numpy as np

from ...result import gap_scale, relative_gap, stopping_gap
from ..primitives import MODE_GRAM, row_data, row_sq_norms
from ._kernels import PairIndex, sweep
from .certificate import Certificate
from .options import Options
from .problem import PairProblem, StepResult

logger = logging.getLogger(__name__)

__all__ = ["ALM"]


class ALM:
    """The augmented Lagrangian method on one :class:`~.problem.PairProblem` (module
    docstring).  Attributes: ``rho`` (the penalty), ``last_b`` (the multipliers after the last
    :meth:`solve`, its warm start)."""

    def __init__(self, problem: PairProblem, certificate: Certificate, options: Options):
        self.problem, self.certificate, self.options = problem, certificate, options
        m = problem.model
        self.rows = row_data(X=m.X) if m.linear else row_data(K=m.K)
        self.kdiag = row_sq_norms(self.rows)
        self.rho = (float(options.rho) if options.rho is not None
                    else max(float(np.mean(self.kdiag)), 1e-12))
        self.rng = np.random.default_rng(options.random_state)
        self.last_b = None

    def _index(self, live):
        """The :class:`._kernels.PairIndex` of the live pairs (all when ``live`` is None)."""
        pb = self.problem
        if live is None:
            return PairIndex(np.ascontiguousarray(pb.pairs.pair_ptr, dtype=np.int64),
                             pb.pos, pb.neg)
        return PairIndex.of(pb.pairs.pair_i[live], pb.pos[live], pb.neg[live], pb.n)

    def _state(self, beta, lam):
        """``F`` (node weights; kernel: scores without bias ``(M, n)``) and the residual of
        (10) at ``beta``, as the sweeps update them in place."""
        W = self.problem.functions(beta, lam)
        F = np.ascontiguousarray(W @ self.rows.K if self.rows.mode == MODE_GRAM else W)
        resid = np.ascontiguousarray(self.problem.model.bias_residual(beta, lam), dtype=float)
        return F, resid

    def _pass(self, index, F, b, resid, beta_live, C, eps, max_steps, work):
        order = self.rng.permutation(self.problem.n).astype(np.int64)
        return sweep(order, self.rows, self.kdiag, index, F, b, resid, beta_live, self.rho, C,
                     eps, max_steps, work)

    def sweeps(self, C, lam, live, passes, start=None):
        """``passes`` sweeps on the live pairs from zero (or from ``start = (beta, b)``), a
        multiplier step after each, uncertified: the pairs' ``beta`` and margins, to choose a
        working set."""
        pb = self.problem
        idx = np.arange(pb.P) if live is None else live
        index = PairIndex.of(pb.pairs.pair_i[idx], pb.pos[idx], pb.neg[idx], pb.n)
        beta = np.zeros(pb.P)
        beta_live = np.zeros(idx.size)
        b = np.zeros(pb.M)
        if start is not None:
            beta_live = np.ascontiguousarray(start[0][idx], dtype=float)
            beta[idx] = beta_live
            b = np.asarray(start[1], dtype=float).copy()
        F, resid = self._state(beta, lam)
        kmax = index.widest()
        work = (np.zeros(kmax), np.zeros(kmax))
        for _ in range(int(passes)):
            self._pass(index, F, b, resid, beta_live, C, 1e-2, 50 * kmax + 100, work)
            b += self.rho * resid
        beta[idx] = beta_live
        W, bc = pb.complete_biases(pb.functions(beta, lam), b, live)
        return beta, pb.pairs.margins(pb.model.train_scores(W, bc))

    def solve(self, C, lam, tol, max_iter, start, max_passes, at_zero,
              log=logger.debug) -> StepResult:
        """(8) to the certified relative gap ``tol``: at most ``max_iter`` multiplier steps of
        at most ``max_passes`` sweeps each, from ``start = (beta, b)`` or zero; the sweeps'
        accuracy tightens as the gap closes.  ``log`` takes one line per multiplier step."""
        pb = self.problem
        beta = np.zeros(pb.P) if start is None else np.asarray(start[0], dtype=float).copy()
        b = np.zeros(pb.M) if start is None else np.asarray(start[1], dtype=float).copy()
        live = pb.live_pairs(lam)
        if live is not None:
            beta[np.setdiff1d(np.arange(pb.P), live)] = 0.0
        index = self._index(live)
        beta_live = beta if live is None else np.ascontiguousarray(beta[live])
        F, resid = self._state(beta, lam)
        kmax = index.widest()
        work = (np.zeros(kmax), np.zeros(kmax))
        eps = 0.1
        # n_iter: the passes done at each multiplier step (the result's n_iter counts passes)
        history = {"primal": [], "lower": [], "gap": [], "residual": [], "violation": [],
                   "n_iter": []}
        best, best_lower = None, (-np.inf, None)
        n_passes, converged = 0, False
        for step in range(1, int(max_iter) + 1):
            worst = 0.0
            for _ in range(int(max_passes)):
                worst, _ = self._pass(index, F, b, resid, beta_live, C, eps, 50 * kmax + 100, work)
                n_passes += 1
                if worst <= eps:
                    break
            b += self.rho * resid
            if live is not None:
                beta[live] = beta_live
            Wc, bc = pb.complete_biases(pb.functions(beta, lam), b, live)
            primal = pb.model.primal_value(Wc, bc, C, lam)
            lower, feas = self.certificate.lower_bound(beta, lam, C, final=False)
            if best is None or primal < best[0]:
                best = (primal, Wc, bc)
            if lower > best_lower[0]:
                best_lower = (lower, feas)
            gap = stopping_gap(best[0], best_lower[0], at_zero)
            for key, value in zip(history, (primal, lower, gap, float(np.abs(resid).max()),
                                            float(worst), n_passes)):
                history[key].append(value)
            log("sibling_qp alm step %d/%d: %d passes in all, primal %.10g, %s", step, max_iter,
                n_passes, best[0], f"lower bound {best_lower[0]:.10g}, "
                f"gap {relative_gap(best[0], best_lower[0]):.3e}"
                if np.isfinite(best_lower[0]) else "no certified lower bound yet")
            if gap <= tol:
                converged = True
                break
            # tighten the sweeps as the gap closes (a violation eps costs about C eps per example)
            eps = max(1e-3 * tol, min(0.5 * eps, gap * gap_scale(best[0], best_lower[0])
                                      / (C * max(1, pb.n))))
        if best_lower[1] is None:
            best_lower = self.certificate.lower_bound(beta, lam, C)
        self.last_b = b.copy()
        self.last_b[0] = 0.0
        return StepResult(best[1], best[2], best[0], best_lower[0], best_lower[1], n_passes,
                          converged, history, beta.copy(), "passes")
