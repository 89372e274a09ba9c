"""The DC algorithm (3) of HPSI (Wang, Shen & Pan, section 3.4), written once around a convex
solver: the reference route (:func:`hiercvx.formulations.hpsi.dc`, CVXPY steps) and the fast
route (:func:`hiercvx.solvers.sibling_qp.solve_dc`) both call :func:`dc_iterations`.

The psi cost is ``s = s_1 - s_2`` with ``s_1 = J + C sum_i (1 - u_min)_+`` (HSVM's cost (2))
and ``s_2 = C sum_i (-u_min)_+``.  Step ``m`` minimizes the convex majorant
``M_m(f) = s_1(f) + sum_p lam_p m_p(f)`` with ``lam`` = :func:`linearization` at
``f^(m-1)``, i.e. the QP (8).  With that ``lam``, ``sum_p lam_p m_p(f^(m-1)) = -s_2(f^(m-1))``,
so ``M_m(f^(m-1)) = s(f^(m-1))`` and ``M_m >= s`` everywhere: the majorant and the psi cost are
on one scale, with no constant to carry.

What the result certifies.  (2) with the psi-loss is not convex, so there is no dual bound of
the whole problem.  Every convex step is certified (its relative gap is ``step_gaps``); the
returned ``lower_bound`` is the certified lower bound of the last step's majorant, whose value
at the previous iterate is that iterate's psi cost.  So ``gap`` measures how far the path is
from a DC fixed point (a point that minimizes its own majorant), not from the optimum of (2).
Two routes agree when they reach the same fixed point from the same start (HSVM):
``|s_fast - s_ref| <= rtol max(1, |s_ref|) + (s_ref - lower_bound_ref)``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from ..exceptions import InputError
from ..models.sibling import SiblingModel, linearization
from ..result import ITERATION_LIMIT, Solution

logger = logging.getLogger(__name__)

__all__ = ["Options", "dc_iterations", "check_dc_options", "FIXED_POINT"]

#: ``status`` of a DC path whose psi cost stopped changing (a fixed point, not an optimum)
FIXED_POINT = "fixed_point"


@dataclass(frozen=True)
class Options:
    """Settings of the DC loop :func:`dc_iterations` beyond its stopping rule (``tol``,
    ``max_iter``), for the DC algorithm (3) of Wang, Shen & Pan (JMLR 12, 2011; DC
    programming: An & Tao, *Annals of Operations Research* 133, 2005)."""

    #: margins within this (relative) of ``u_min`` count as tied when the loop re-linearizes
    #: (:func:`~hiercvx.models.sibling.linearization`): above the certified steps' accuracy,
    #: so the reference and the fast route pick the same pair from the same start
    tie_rtol: float = 1e-6

    def __post_init__(self):
        if isinstance(self.tie_rtol, bool) or not np.isfinite(self.tie_rtol) or self.tie_rtol < 0:
            raise InputError(f"dc Options.tie_rtol must be a number >= 0, got {self.tie_rtol!r}")


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
    certified gap and returns ``(weights, biases, solution)`` (``solution.gap`` and
    ``solution.lower_bound`` its certificate).  Step ``m`` takes :func:`linearization` at
    ``f^(m-1)`` with near-ties (``tie_rtol``, default ``options.tie_rtol``) resolved to the
    first pair.  The loop stops when
    ``|s(f^(m)) - s(f^(m-1))| <= tol`` (absolute, as in the paper; a step whose linearization
    equals the last one's is the same QP, so its solution is reused, not recomputed, and the
    cost change is 0) or after ``max_iter`` steps
    (one ``ConvergenceWarning``, ``stacklevel`` counted from the caller of this function) and
    returns the best iterate (lowest psi cost) as a
    :class:`~hiercvx.result.Solution`: ``objective`` its psi cost, ``lower_bound`` the last
    step's certified bound (see the module docstring), ``status`` ``"fixed_point"`` or
    ``"iteration_limit"``; extras ``biases``, ``dc_objectives`` (the cost at every iterate,
    first the HSVM start), ``best_iteration``, ``step_gaps``, ``steps`` (every step's
    solution) and ``hsvm`` (the first).  ``log`` takes one line per step (``logger.info``
    under ``verbose``).
    """
    if tie_rtol is None:
        tie_rtol = (Options() if options is None else options).tie_rtol
    coef, b, res = step(None)
    costs, steps = [model.psi_value(coef, b, C)], [res]
    best = (costs[0], 0, coef, b)
    converged = False
    it = 0
    lam_prev = None
    for it in range(1, int(max_iter) + 1):
        lam = linearization(model, model.train_scores(coef, b), C, tie_rtol)
        if lam_prev is not None and np.array_equal(lam, lam_prev):
            # the same convex step (8) as the last one: its certified solution again, so the
            # cost does not change and the loop stops (no second solve of one QP)
            costs.append(costs[-1])
            steps.append(res)
            converged = True
            log("%s DC step %d/%d: the linearization of the last step again (a fixed point)",
                who, it, max_iter)
            break
        lam_prev = lam
        coef, b, res = step(lam)
        costs.append(model.psi_value(coef, b, C))
        steps.append(res)
        log("%s DC step %d/%d: psi cost %.10g, change %.2e (step's certified gap %.2e)", who,
            it, max_iter, costs[-1], abs(costs[-1] - costs[-2]), res.gap)
        if costs[-1] < best[0]:
            best = (costs[-1], it, coef, b)
        if abs(costs[-1] - costs[-2]) <= tol:
            converged = True
            break
    last_change = abs(costs[-1] - costs[-2]) if len(costs) > 1 else 0.0
    converged = converged or max_iter == 0
    out = Solution(
        objective=float(best[0]), lower_bound=float(steps[-1].lower_bound), weights=best[2],
        status=FIXED_POINT if converged else ITERATION_LIMIT, n_iter=it, converged=converged,
        tol=float(tol), name=f"HPSI DC algorithm (3), {who}",
        history={"objective": list(costs), "step_gap": [s.gap for s in steps]},
        extras={"biases": best[3], "dc_objectives": np.asarray(costs),
                "best_iteration": int(best[1]), "step_gaps": np.asarray([s.gap for s in steps]),
                "steps": steps, "hsvm": steps[0]})
    # the one ConvergenceWarning; a DC path has no gap, so the reason is the last cost change
    out.warn_unless_converged("DC steps", stacklevel=stacklevel, reason=(
        f"without reaching a fixed point: the psi cost still changed by {last_change:.3g} "
        f"> tol={tol:g}; raise max_iter"))
    return out
