"""The dual interior point of the sibling-margin QP, on all live pairs or on a working set.

The dual (9)-(11) of Wang, Shen & Pan (JMLR 12, 2011) after eliminating ``delta``::

    max_beta  D(beta) = sum_p beta_p - 1/2 ||W(gamma)||^2,   gamma = beta - lam
    s.t.      beta >= 0,  sum_{p of i} beta_p <= C  (11),   r(beta) = E^T gamma = 0  (10)

is solved by :func:`hiercvx.solvers.dual_qp.solve_dual_qp` with ``beta = 0`` outside a set
of pairs (:meth:`DualRoute.restricted`): all live pairs (:meth:`DualRoute.solve_all`, exact:
the others are 0 at every feasible point), or a working set grown until the certificate holds
on the whole problem (:class:`WorkingSet`).  The Hessian is block diagonal by sibling group
(:func:`group_blocks`); the biases are the multipliers of (10).
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ...exceptions import SolverError
from ...result import relative_gap, stopping_gap
from .. import dual_qp
from ..dual_qp import BlockDiagonal
from .certificate import Certificate
from .options import Options
from .problem import PairProblem, StepResult

logger = logging.getLogger(__name__)

__all__ = ["DualRoute", "WorkingSet", "group_blocks"]


def group_blocks(Ei, G, samples, group, pack: int | None = None) -> BlockDiagonal:
    """The dual Hessian ``Q`` of (9) on the pairs kept, block diagonal by sibling group.

    ``Q_pq = (e_{j_p} - e_{t_p}) . (e_{j_q} - e_{t_q}) G_{i_p i_q}`` vanishes for pairs of two
    different sibling groups (they share no node), so ``Q`` is kept as its diagonal blocks.
    Small groups share a block of up to ``pack`` pairs (zeros between them; default
    :attr:`~hiercvx.solvers.sibling_qp.Options.group_pack`): fewer, larger dense operations for
    about the same flops."""
    pack = Options().group_pack if pack is None else int(pack)
    order = np.argsort(group, kind="stable")
    by_group = np.split(order, np.flatnonzero(np.diff(group[order])) + 1) if order.size else []
    index = []
    shared: list = []          # the groups of the block being filled
    for idx in sorted(by_group, key=len):
        if shared and sum(map(len, shared)) + len(idx) > pack:
            index.append(np.concatenate(shared))
            shared = []
        shared.append(idx)
    if shared:
        index.append(np.concatenate(shared))
    blocks = []
    for idx in index:
        Eg = Ei[idx]
        blocks.append((Eg @ Eg.T).toarray() * G[np.ix_(samples[idx], samples[idx])])
    return BlockDiagonal(index, blocks, group.size)


class _System(NamedTuple):
    """The dual QP on the pairs ``idx`` in :func:`~hiercvx.solvers.dual_qp.solve_dual_qp`'s
    form, with ``rows`` the independent rows of (10) kept (their multipliers: the biases)
    and ``candidates`` the live pairs left out."""

    idx: np.ndarray
    Q: BlockDiagonal
    g: np.ndarray
    Bm: sp.csr_matrix
    E: np.ndarray
    h: np.ndarray
    rows: np.ndarray
    candidates: np.ndarray


class DualRoute:
    """The dual interior point on sets of pairs of one :class:`~.problem.PairProblem`."""

    def __init__(self, problem: PairProblem, certificate: Certificate, options: Options):
        self.problem, self.certificate, self.options = problem, certificate, options

    def solve_all(self, C, lam, tol, max_iter, at_zero, log=logger.debug) -> StepResult:
        """(8) by the dual interior point on all live pairs (exact: the others have
        ``beta = 0``, see :meth:`~.problem.PairProblem.live_pairs`); ``log`` takes one line
        per step and per certificate."""
        live = self.problem.live_pairs(lam)
        idx = np.arange(self.problem.P) if live is None else live
        state = self.restricted(idx, live, C, lam, tol, max_iter, at_zero, stop_on_violation=False,
                                log=log)
        return StepResult(state["W"], state["b"], state["primal"], state["lower"], state["feas"],
                          state["n_iter"], state["gap"] <= tol, {"gap": [state["gap"]]},
                          state["beta"], "interior point steps")

    def system(self, idx, live, lam) -> _System:
        """The dual QP with ``beta = 0`` outside the pairs ``idx``; one node per connected
        component of the graph of the pairs ``idx`` is pinned to bias 0 (its rows of (10)
        are dependent)."""
        pb, m = self.problem, self.problem.model
        pr = pb.pairs
        ii, jj, tt = pr.pair_i[idx], pb.pos[idx], pb.neg[idx]
        k = idx.size
        Ei = sp.csr_matrix((np.r_[np.ones(k), -np.ones(k)],
                            (np.r_[np.arange(k), np.arange(k)], np.r_[jj, tt])), shape=(k, pb.M))
        Q = group_blocks(Ei, pb.gram(), ii, pr.group_of[jj], self.options.group_pack)
        # g_p = 1 + m_p(W(lam)) without biases: the linear term of the DC step
        S_lam = m.train_scores(pb.functions(lam, np.zeros(pb.P)), np.zeros(pb.M))
        g = 1.0 + (S_lam[ii, jj] - S_lam[ii, tt])
        samples, inv = np.unique(ii, return_inverse=True)
        Bm = sp.csr_matrix((np.ones(k), (inv, np.arange(k))), shape=(samples.size, k))
        touched = np.unique(np.r_[jj, tt])
        graph = sp.csr_matrix((np.ones(k), (jj, tt)), shape=(pb.M, pb.M))
        _, comp = connected_components(graph, directed=False)
        keep = np.zeros(pb.M, dtype=bool)
        keep[touched] = True
        _, first = np.unique(comp[touched], return_index=True)
        keep[touched[first]] = False
        rows = np.flatnonzero(keep)
        inside = np.zeros(pb.P, dtype=bool)
        inside[idx] = True
        candidates = ~inside if live is None else np.isin(np.arange(pb.P), live) & ~inside
        return _System(idx, Q, g, Bm, Ei[:, rows].toarray(),
                       m.bias_residual(lam, np.zeros(pb.P))[rows], rows, candidates)

    def restricted(self, idx, live, C, lam, tol, max_iter, at_zero, stop_on_violation=True,
                   log=logger.debug):
        """The dual (9)-(11) with ``beta = 0`` outside the pairs ``idx``, certified on the
        whole problem (biases: the multipliers of (10), then
        :meth:`~.problem.PairProblem.complete_biases`).  Stops at the certificate, or (with
        ``stop_on_violation``) at the restricted optimum -- or at a probe half way along the
        path -- when some pair outside ``idx`` violates its margin there -- or after
        ``options.dual_stalled_certificates`` certificates in a row that do not lower the best
        gap (the path is past its round-off floor); raises
        :class:`~hiercvx.exceptions.SolverError` when no finite iterate was certified.
        Returns the best certified state (``W``, ``b``, ``primal``, ``lower``, ``feas``,
        ``beta``, ``gap``, ``n_iter``; ``violated``: those pairs, ``near``: the pairs left out
        within ``options.ws_margin`` of violating).  ``log`` takes one line per interior point
        step and per certificate."""
        pb, sys_ = self.problem, self.system(idx, live, lam)
        ii = pb.pairs.pair_i[idx]
        state = {"gap": np.inf, "violated": np.zeros(0, dtype=np.int64), "stalled": 0}

        def scored(x, y):
            beta = np.zeros(pb.P)
            beta[idx] = x
            b = np.zeros(pb.M)
            b[sys_.rows] = y
            W, bc = pb.complete_biases(pb.functions(beta, lam), b, live)
            S = pb.model.train_scores(W, bc)
            return beta, W, bc, S, pb.pairs.margins(S)

        def reach_of(margins):
            reach = np.full(pb.n, 1.0)
            np.minimum.at(reach, ii, margins[idx])
            return reach[pb.pairs.pair_i]

        def probe(x, y):
            # an iterate on the way: stop when some pair left out is already clearly below
            # what the kept pairs of its sample reach (the restricted optimum will not be
            # the optimum; its last, costliest interior point steps would be wasted)
            margins = scored(x, y)[4]
            return bool(np.any(sys_.candidates & (margins < reach_of(margins)
                                                  - self.options.probe_margin)))

        def accept(x, y, u):
            point = scored(x, y)
            margins = point[4]
            best = state["gap"]
            self._certify(state, point, C, lam, tol, live, at_zero)
            state["stalled"] = state["stalled"] + 1 if state["gap"] >= best else 0
            log("sibling_qp dual certificate: primal %.10g, lower bound %.10g, gap %.3e",
                *state["last"], relative_gap(*state["last"]))
            reach = reach_of(margins)
            scale = 1e-9 * max(1.0, float(np.abs(margins).max()))
            state["violated"] = np.flatnonzero(sys_.candidates & (margins < reach - scale))
            state["near"] = np.flatnonzero(sys_.candidates
                                           & (margins < reach + self.options.ws_margin))
            # the restricted optimum is reached: growing the set is the caller's move; a path
            # whose certificates no longer improve is past its round-off floor
            return (state["last_gap"] <= tol or stop_on_violation
                    or state["stalled"] >= self.options.dual_stalled_certificates)

        x, y, it, stopped = dual_qp.solve_dual_qp(
            sys_.Q, sys_.g, sys_.Bm, sys_.E, sys_.h, C, max_iter, accept, tol,
            probe if stop_on_violation else None, options=self.options.dual_qp, log=log)
        finite = bool(np.isfinite(x).all() and np.isfinite(y).all())
        if not stopped and finite:
            accept(x, np.asarray(y), None)
        if "W" not in state:
            raise SolverError(
                f"sibling_qp dual interior point on {idx.size} pairs: "
                + ("its iterate overflowed to non-finite values" if not finite else
                   "no certificate at a finite iterate")
                + f" after {it} steps, before any certificate (C={C:.3g})",
                status="diverged" if not finite else "uncertified", solver="sibling_qp (dual_ipm)")
        state["n_iter"] = it
        return state

    def _certify(self, state, point, C, lam, tol, live, at_zero):
        """The certificate at ``point = (beta, W, b, S, margins)``; kept in ``state`` when its gap
        is the best so far.  The multipliers of (10) pin the biases only through the kept
        pairs (and to the interior point's accuracy): with the weights fixed, the best biases
        for all pairs are an LP (Appendix B's route), taken when they lower the primal.  The
        zero functions with their best biases are tried the same way when the weights'
        penalty is within the gap: at small ``C`` they are often the optimum, which a
        degenerate dual path approaches only to its round-off floor (small weights whose
        hinge terms keep the gap open)."""
        pb, m = self.problem, self.problem.model
        beta, W, bc, S, margins = point
        primal = m.penalty(W) + C * float(m.hinge_terms(S).sum()) + float(lam @ margins)
        lower, feas = self.certificate.lower_bound(beta, lam, C)
        gap = stopping_gap(primal, lower, at_zero)
        if gap > tol:
            W2, b2 = pb.complete_biases(W, m.biases_lp(W, C, lam), live)
            primal2 = m.primal_value(W2, b2, C, lam)
            if primal2 < primal:
                bc, primal = b2, primal2
            if m.penalty(W) <= primal - lower:  # weights this small may be zero's round-off
                W0, b0 = pb.complete_biases(np.zeros_like(W),
                                            m.biases_lp(np.zeros_like(W), C, lam), live)
                primal0 = m.primal_value(W0, b0, C, lam)
                if primal0 < primal:
                    W, bc, primal = W0, b0, primal0
            gap = stopping_gap(primal, lower, at_zero)
        state["last_gap"], state["last"] = gap, (primal, lower)
        if gap < state["gap"]:
            state.update(W=W, b=bc, primal=primal, lower=lower, feas=feas, beta=beta, gap=gap)


class WorkingSet:
    """(8) by :meth:`DualRoute.restricted` on a working set of pairs grown until the
    certificate holds on the whole problem, falling back to the ALM (:class:`~.alm.ALM`) when
    the set outgrows ``options.ws_size_factor * options.max_dual_pairs``.

    The first set: pairs coordinate ascent finds near-active (``beta > 0``, or a margin within
    ``options.ws_seed_margin`` of the sample's smallest); a DC step keeps the last solve's set
    (``pairs``) and starts its sweeps from the last solve's point.  A round adds every pair
    left out that violates its margin at the restricted optimum -- or already half way along
    the interior point path by more than ``options.probe_margin`` (the probe of
    :func:`~hiercvx.solvers.dual_qp.solve_dual_qp`) -- and those within
    ``options.ws_margin`` of violating.  Sets are never pruned (pairs dropped come back)."""

    def __init__(self, route: DualRoute, alm, options: Options):
        self.route, self.alm, self.options = route, alm, options
        self.pairs = None   # the last solve's set (a mask over the pairs)

    def solve(self, C, lam, tol, max_iter, start, max_passes, at_zero,
              log=logger.debug) -> StepResult:
        """``max_iter`` interior point steps in all rounds; ``start = (beta, b)`` of the last
        solve (or ``None``) warm-starts a DC step; ``max_passes`` sweeps choose the first set;
        ``log`` takes one line per round (and the interior point's lines)."""
        pb, o = self.route.problem, self.options
        warm = start
        live = pb.live_pairs(lam)
        live_mask = np.ones(pb.P, dtype=bool) if live is None else np.isin(np.arange(pb.P), live)
        if start is not None and self.pairs is not None:
            # a DC step: the last set, and what coordinate ascent from the last step's point
            # finds near-active under the new DC term (the new term moves the support)
            A = self.pairs & live_mask
        else:
            start, A = None, np.zeros(pb.P, dtype=bool)
        beta, margins = self.alm.sweeps(C, lam, live, max_passes, start)
        reach = np.full(pb.n, np.inf)
        np.minimum.at(reach, pb.pairs.pair_i[live_mask], margins[live_mask])
        A |= live_mask & ((beta > 0) | (margins <= reach[pb.pairs.pair_i] + o.ws_seed_margin))
        A |= lam > 0
        limit = o.ws_size_factor * o.max_dual_pairs
        total_iter, best = 0, None
        for round_ in range(1, o.ws_rounds + 1):
            if A.sum() > limit:
                break
            state = self.route.restricted(np.flatnonzero(A), live, C, lam, tol,
                                          max(1, int(max_iter) - total_iter), at_zero, log=log)
            total_iter += state["n_iter"]
            log("sibling_qp working set round %d: %d pairs, %d interior point steps in all, "
                "best gap %.3e, %d pairs left out violated", round_, int(A.sum()), total_iter,
                relative_gap(state["primal"], state["lower"]), state["violated"].size)
            if best is None or state["gap"] < best["gap"]:
                best = state
            if state["gap"] <= tol or state["violated"].size == 0 or total_iter >= max_iter:
                break
            A[state["violated"]] = True
            A[state["near"]] = True
        if best is None or best["gap"] > tol and (A.sum() > limit):
            logger.info("sibling_qp: working set of %d pairs too large for the dense dual; ALM",
                        int(A.sum()))
            return self.alm.solve(C, lam, tol, o.alm_max_iter, warm, o.max_passes,
                                  at_zero, log)
        self.pairs = A | (best["beta"] > 0)
        return StepResult(best["W"], best["b"], best["primal"], best["lower"], best["feas"],
                          total_iter, best["gap"] <= tol, {"gap": [best["gap"]]}, best["beta"],
                          "interior point steps")
