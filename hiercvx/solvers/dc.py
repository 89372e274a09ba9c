"""The DC algorithm (3) of HPSI (Wang, Shen & Pan, section 3.4), written once around a convex
solver: the reference route (:func:`hiercvx.formulations.hpsi.dc`, CVXPY steps) and the fast
route (:func:`hiercvx.solvers.sibling_qp.solve_dc`) both call
:func:`~hiercvx.solvers.dc.dc_iterations`.

The psi cost is ``s = s_1 - s_2`` with ``s_1 = J + C sum_i (1 - u_min)_+`` (HSVM's cost (2))
and ``s_2 = C sum_i (-u_min)_+``.  Step ``m`` minimizes the convex majorant
``M_m(f) = s_1(f) + sum_p lam_p m_p(f)`` with ``lam`` =
:func:`~hiercvx.models.sibling.linearization` at ``f^(m-1)``, i.e. the QP (8).  With that ``lam``,
``sum_p lam_p m_p(f^(m-1)) = -s_2(f^(m-1))``, so ``M_m(f^(m-1)) = s(f^(m-1))`` and ``M_m >= s``
everywhere: the majorant and the psi cost are on one scale, with no constant to carry.

What the result certifies.  (2) with the psi-loss is not convex, so there is no dual bound of
the whole problem.  Every convex step is certified (its relative gap is ``step_gaps``) and
checked against the DC algorithm (:func:`check_step`): its bound lies below its recomputed
objective and below the psi cost of the iterate it was linearized at, and the psi cost does not
rise beyond the step's certified gap; a path that fails raises
:class:`~hiercvx.exceptions.SolverError`.  The result is the iterate at which the last
linearization was taken, with ``objective`` its psi cost and ``lower_bound`` the certified
bound of the majorant taken there (whose value at that iterate is its psi cost).  So ``gap``
measures how far that iterate is from a DC fixed point (a point that minimizes its own
majorant), not from the optimum of (2).  The reference's steps return the optimal biases of
least norm for their weights (:meth:`~hiercvx.models.sibling.SiblingModel.least_biases`; the
fast route's when its biases drift): (8) can be flat along a ray of the biases, and at a point
far along it the margins lose their digits and the next linearization depends on the
solver.  Two routes agree when they reach the same fixed point from the same
start (HSVM): ``|s_fast - s_ref| <= rtol max(1, |s_ref|) + (s_ref - lower_bound_ref)``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..exceptions import InputError, SolverError
from ..models.sibling import SiblingModel, linearization
from ..result import ITERATION_LIMIT, Solution

logger = logging.getLogger(__name__)

__all__ = ["Options", "dc_iterations", "allowance", "check_step", "check_bound",
           "check_dc_options", "FIXED_POINT"]

#: ``status`` of a DC path whose psi cost stopped changing (a fixed point, not an optimum)
FIXED_POINT = "fixed_point"


@dataclass(frozen=True)
class Options:
    """Settings of the DC loop :func:`~hiercvx.solvers.dc.dc_iterations` beyond its stopping rule
    (``tol``, ``max_iter``), for the DC algorithm (3) of Wang, Shen & Pan (JMLR 12, 2011; DC
    programming: An & Tao, *Annals of Operations Research* 133, 2005)."""

    #: margins within this (relative) of ``u_min`` count as tied when the loop re-linearizes
    #: (:func:`~hiercvx.models.sibling.linearization`): above the certified steps' accuracy,
    #: so the reference and the fast route pick the same pair from the same start
    tie_rtol: float = 1e-6
    #: round-off allowed, relative to ``max(1, |s|)``, when a step's certified bound is
    #: compared with the cost it bounds and the psi cost with the last one
    #: (:func:`allowance`), as the references' ``weak_duality_slack``
    certificate_rtol: float = 1e-7

    def __post_init__(self):
        for name in ("tie_rtol", "certificate_rtol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise InputError(f"dc Options.{name} must be a number >= 0, got {value!r}")


def check_dc_options(tol, max_iter) -> None:
    """The DC loop's stopping options: ``tol >= 0`` (change of the psi cost) and ``max_iter >= 0``
    (0: the HSVM start only)."""
    try:
        ok = bool(np.isfinite(tol) and tol >= 0)
    except TypeError:
        ok = False
    if not ok:
        raise InputError(f"tol must be a non-negative number, got {tol!r}")
    if isinstance(max_iter, bool) or int(max_iter) != max_iter or int(max_iter) < 0:
        raise InputError(f"max_iter must be an integer >= 0, got {max_iter!r}")


def dc_iterations(model: SiblingModel, C: float, tol: float, max_iter: int, step,
                  who: str, tie_rtol: float | None = None, stacklevel: int = 3, *,
                  options: Options | None = None, log=logger.debug) -> Solution:
    """The DC algorithm (3): start from HSVM, re-linearize, stop on a small cost change.

    ``step(pair_weights)`` solves (8) with the DC term ``pair_weights`` (``None``: HSVM) to a
    certified gap and returns ``(weights, biases, solution)`` (``solution.lower_bound`` its
    certified bound, ``solution.solver`` named in errors).  Step ``m`` takes
    :func:`~hiercvx.models.sibling.linearization` at ``f^(m-1)`` with near-ties (``tie_rtol``,
    default ``options.tie_rtol``) resolved to the first pair.  The loop stops when
    ``|s(f^(m)) - s(f^(m-1))| <= tol`` (absolute, as in the paper), when the linearization at
    ``f^(m)`` equals the last one (the same QP: ``f^(m)`` minimizes its own majorant, a fixed
    point; its solution is reused, not recomputed, and the cost change is 0), or after ``max_iter``
    steps (one ``ConvergenceWarning``, ``stacklevel`` counted from the caller of this function).

    Every step is checked (:func:`check_step`, within :func:`allowance`): a path that cannot
    be certified raises :class:`~hiercvx.exceptions.SolverError` naming the solver and the
    numbers.  The result is the iterate ``f^(k)`` at which the last linearization was taken,
    with its certificate: ``objective`` its psi cost ``s(f^(k))``, ``lower_bound`` the
    certified bound of the step from it (whose majorant equals ``s`` at ``f^(k)``), so ``gap``
    is how far ``f^(k)`` is from minimizing its own majorant.  ``max_iter=0`` returns the HSVM
    start with no bound (``-inf``).  ``status`` is ``"fixed_point"`` or
    ``"iteration_limit"``; extras ``biases``, ``dc_objectives`` (the cost at every iterate,
    first the HSVM start), ``best_iteration`` (``k``), ``step_gaps``, ``steps`` (every step's
    solution) and ``hsvm`` (the first).
    ``log`` takes one line per step (``logger.info`` under ``verbose``).
    """
    opts = Options() if options is None else options
    tie_rtol = opts.tie_rtol if tie_rtol is None else tie_rtol
    coef, b, res = step(None)
    check_step(model, C, None, (coef, b), res, None,
               allowance(model.primal_value(coef, b, C), C, None, tie_rtol, opts), who, 0)
    costs, steps, points = [model.psi_value(coef, b, C)], [res], [(coef, b)]
    converged, it, lam_prev = False, 0, None
    for it in range(1, int(max_iter) + 1):
        lam = linearization(model, model.train_scores(coef, b), C, tie_rtol)
        slack = allowance(costs[-1], C, lam, tie_rtol, opts)
        if lam_prev is not None and np.array_equal(lam, lam_prev):
            # the same convex step (8) as the last one: its certified solution again, so the
            # cost does not change and the loop stops (no second solve of one QP)
            check_bound(res, costs[-1], slack, who, it)
            costs.append(costs[-1])
            steps.append(res)
            converged = True
            log("%s DC step %d/%d: the linearization of the last step again (a fixed point)",
                who, it, max_iter)
            break
        lam_prev = lam
        coef, b, res = step(lam)
        check_step(model, C, lam, (coef, b), res, costs[-1], slack, who, it)
        costs.append(model.psi_value(coef, b, C))
        steps.append(res)
        points.append((coef, b))
        log("%s DC step %d/%d: psi cost %.10g, change %.2e (step's certified gap %.2e)", who,
            it, max_iter, costs[-1], abs(costs[-1] - costs[-2]), res.gap)
        if abs(costs[-1] - costs[-2]) <= tol:
            converged = True
            break
    k = max(it - 1, 0)   # f^(k): where the last step's linearization was taken
    bound = float(steps[-1].lower_bound) if it else -np.inf
    last_change = abs(costs[-1] - costs[-2]) if len(costs) > 1 else 0.0
    out = Solution(
        objective=float(costs[k]), lower_bound=bound, weights=points[k][0],
        status=FIXED_POINT if converged else ITERATION_LIMIT, n_iter=it, converged=converged,
        tol=float(tol), name=f"HPSI DC algorithm (3), {who}",
        history={"objective": list(costs), "step_gap": [s.gap for s in steps]},
        extras={"biases": points[k][1], "dc_objectives": np.asarray(costs),
                "best_iteration": int(k), "step_gaps": np.asarray([s.gap for s in steps]),
                "steps": steps, "hsvm": steps[0]})
    # the one ConvergenceWarning; a DC path has no gap, so the reason is the last cost change
    out.warn_unless_converged("DC steps", stacklevel=stacklevel, reason=(
        "without a DC step (max_iter=0): the HSVM start, with no bound" if not it else
        f"without reaching a fixed point: the psi cost still changed by {last_change:.3g} "
        f"> tol={tol:g}; raise max_iter"))
    return out


def allowance(s_prev: float, C: float, lam, tie_rtol: float, options: Options) -> float:
    """How far a step linearized at an iterate of psi cost ``s_prev`` may seem to break the DC
    algorithm before it is refused: round-off, ``options.certificate_rtol max(1, |s_prev|)``,
    plus the tie rule's slack at margins of order one, ``C tie_rtol`` per example given up
    (a near-tie pair leaves the majorant above ``s`` at the iterate by at most
    ``C tie_rtol max(1, |u_min|)``; :func:`~hiercvx.models.sibling.linearization`)."""
    given_up = 0 if lam is None else int(np.count_nonzero(lam))
    return options.certificate_rtol * max(1.0, abs(s_prev)) + C * tie_rtol * given_up


def check_step(model: SiblingModel, C: float, lam, point, res, s_prev, slack: float, who: str,
               m: int) -> None:
    """Refuse (:class:`~hiercvx.exceptions.SolverError`) a DC step that cannot be certified.

    Step ``m`` minimizes the majorant ``M_m = s_1 + sum_p lam_p m_p`` (``lam=None``: HSVM's
    ``s_1``), with ``M_m >= s`` everywhere and ``M_m(f^(m-1)) = s(f^(m-1))``.  So, with
    ``L`` the step's certified bound (``res.lower_bound``), ``point = f^(m)`` and
    ``s_prev = s(f^(m-1))`` (``None`` for the HSVM start):

    * ``L <= M_m(f^(m))``, recomputed here (weak duality of the step);
    * ``s(f^(m)) <= s(f^(m-1)) + M_m(f^(m)) - L``: the psi cost does not rise beyond the
      step's certified gap;
    * ``L <= s(f^(m-1))`` (:func:`check_bound`): the bound of the step from ``f^(m-1)`` is a
      bound for that iterate.

    Each within ``slack`` (:func:`allowance`).
    """
    coef, b = point
    value = model.primal_value(coef, b, C, lam)          # M_m(f^(m)), recomputed
    bound = float(res.lower_bound)
    solver = getattr(res, "solver", None) or None
    what = _step_name(who, m)
    if not (np.isfinite(value) and np.isfinite(bound)) or bound > value + slack:
        raise SolverError(f"{what}: the step's certified lower bound {bound:.10g} exceeds its "
                          f"objective {value:.10g} recomputed at the returned point by "
                          f"{bound - value:.3e} (> {slack:.1e})", status="inconsistent",
                          solver=solver)
    if s_prev is None:
        return
    s_now = model.psi_value(coef, b, C)
    if s_now > s_prev + (value - bound) + slack:
        raise SolverError(f"{what}: the psi cost rose from {s_prev:.10g} to {s_now:.10g} "
                          f"(by {s_now - s_prev:.3e}, more than the step's certified gap "
                          f"{value - bound:.3e} + {slack:.1e}), which the DC algorithm (3) "
                          "cannot do (the step's majorant must equal the psi cost at the "
                          "previous iterate, and the step's point must minimize it)",
                          status="inconsistent", solver=solver)
    check_bound(res, s_prev, slack, who, m)


def check_bound(res, s_prev: float, slack: float, who: str, m: int) -> None:
    """Refuse step ``m`` when its certified bound ``res.lower_bound`` lies above the psi cost
    ``s_prev`` of the iterate it was linearized at by more than ``slack``
    (:func:`allowance`): the majorant equals ``s`` there, so its minimum cannot be larger."""
    bound = float(res.lower_bound)
    if bound > s_prev + slack:
        raise SolverError(f"{_step_name(who, m)}: the step's certified lower bound {bound:.10g} "
                          f"exceeds the psi cost {s_prev:.10g} of the iterate it was linearized "
                          f"at by {bound - s_prev:.3e} (> {slack:.1e}): its majorant does not "
                          "touch the psi cost there", status="inconsistent",
                          solver=getattr(res, "solver", None) or None)


def _step_name(who: str, m: int) -> str:
    return f"{who}: DC step {m}" if m else f"{who}: the HSVM start of the DC algorithm (3)"
