"""The one result type of hiercvx: what a certified reference and every fast solver return.

A :class:`Solution` carries a primal point (``weights``), its objective *recomputed in numpy*
at that point, a certified ``lower_bound`` from a dual feasible point (weak duality), the
relative ``gap`` between them, a ``status``, iteration count and times.  What only one solver
knows (a path-weight vector, the cutting planes, the DC iterates, an update log) goes into
``extras`` and reads back as an attribute (``sol.alpha`` is ``sol.extras["alpha"]``).

The gap formula (:func:`relative_gap`), the stopping test (:func:`reached`), the one
``ConvergenceWarning`` (:meth:`Solution.warn_unless_converged`) and the validation of the
options every iterative solver takes (:func:`check_iteration_options`) live here and nowhere
else.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .exceptions import InputError

__all__ = ["progress_hint", "Solution", "relative_gap", "gap_scale", "comparison_scale",
           "reached", "check_iteration_options", "OPTIMAL", "ITERATION_LIMIT"]

#: ``status`` of a certified answer (reference: the solver said optimal and the gap holds;
#: fast solver: the recomputed gap reached ``tol``)
OPTIMAL = "optimal"
#: ``status`` of a fast solver that stopped on ``max_iter`` (or a time limit) above ``tol``
ITERATION_LIMIT = "iteration_limit"


def gap_scale(objective: float, lower_bound: float) -> float:
    """The denominator of :func:`relative_gap`: ``max(|objective|, |lower_bound|)``.

    Scale-aware on purpose: multiplying the data term and the regulariser by any factor (``C``
    tiny, ``X`` scaled by 1e6 with ``C`` scaled by 1e-12) multiplies the objective, the bound
    and this scale alike, so the relative gap and every stopping test built on it do not
    change.  (A floor of 1 would let the all-zero weights pass as "converged" whenever the
    objective is below ``tol``.)  Solvers that derive inner tolerances from the objective
    use this number too, so no test hides an absolute threshold."""
    return max(abs(float(objective)), abs(float(lower_bound)))


def comparison_scale(*values: float) -> float:
    """The scale at which two objectives are compared (agreement tests, ``verify``, the
    testing oracle): the largest magnitude, like :func:`gap_scale`, so that a comparison means
    the same at every scale of ``C`` and ``X``; ``1`` when all are ``0``."""
    return max(abs(float(v)) for v in values) or 1.0


def relative_gap(objective: float, lower_bound: float, at_zero: float | None = None,
                 zero_optimum: float = 1e-9) -> float:
    """``(objective - lower_bound) / max(|objective|, |lower_bound|)``: the certificate's
    relative gap (``0`` when both are ``0``, the certified optimum of a problem whose every
    loss vanishes at zero weights).

    Every model's objective is its primal value (non-negative for all hiercvx models), so the
    gap is at most 1 for any bound in ``[0, objective]`` and at least 1 for a negative bound:
    the all-zero starting point of a dual method (bound 0) never passes, at any scale.

    ``at_zero``, the objective at zero weights (``C`` times the losses at zero), when the
    solver knows it: the gap is then also measured against the decrease still possible from
    zero, ``at_zero - lower_bound``, as the square of that ratio, so ``gap <= tol`` also
    means ``objective - lower_bound <= sqrt(tol) (at_zero - lower_bound)``: at least a
    fraction ``1 - sqrt(tol)`` of the decrease from ``W = 0`` is certified.  With a tiny ``C``
    the objective is ``C sum loss(0)`` up to ``O(C^2)``, so the first ratio alone would
    certify ``W = 0``; at ordinary scales the square is far below the first ratio and changes
    nothing.  Only for points below ``at_zero``: at ``W = 0`` itself the first ratio decides
    (so a problem whose optimum is ``W = 0`` is certified as usual).  The denominator is
    never below ``zero_optimum * at_zero`` (default 1e-9, far above round-off and far below
    any gap a solver is asked for): when the optimum is 0, objective and bound are round-off
    (1e-21 vs 0) whose ratio says nothing."""
    objective, lower_bound = float(objective), float(lower_bound)
    scale = gap_scale(objective, lower_bound)
    if at_zero is not None and np.isfinite(at_zero) and at_zero > 0:
        # an optimum of 0 (every loss met with margin, e.g. one class and free biases): the
        # values are round-off, measured against the problem's own scale, not each other
        scale = max(scale, zero_optimum * float(at_zero))
    gap = 0.0 if scale == 0.0 else (objective - lower_bound) / scale
    if at_zero is not None and lower_bound < objective < float(at_zero):
        gap = max(gap, ((objective - lower_bound) / (float(at_zero) - lower_bound)) ** 2)
    return gap


def progress_hint(history, tol: float, unit: str = "iterations", window: int = 10) -> str:
    """What the last certificates say about the rest of the way, for a ``ConvergenceWarning``.

    ``" (... roughly K more <unit>, T s, ...)"`` from the log-linear trend of the recent half of
    the recorded gaps (at most ``window``; ``history["gap"]`` against ``history["n_iter"]`` or the
    record's index, ``history["time"]`` for the time per unit) -- an estimate, optimistic for
    methods that slow down as they converge --, ``" (... has not decreased ...)"`` when they
    stalled, ``""`` when fewer than three positive gaps were recorded."""
    if not isinstance(history, dict):
        return ""
    n = len(history.get("gap", ()))
    window = min(window, max(3, n // 2))  # the recent trend: early certificates fall fastest
    gaps = np.asarray(history.get("gap", ()), dtype=float)[-window:]
    if gaps.size < 3 or not np.all(np.isfinite(gaps)) or np.any(gaps <= 0):
        return ""
    steps = history.get("n_iter")
    steps = np.asarray(steps if steps is not None and len(steps) == n else range(n),
                       dtype=float)[-window:]
    if steps[-1] <= steps[0]:
        return ""
    slope = float(np.polyfit(steps, np.log(gaps), 1)[0])  # log-gap per unit
    if slope >= -1e-12 or gaps[-1] >= 0.99 * gaps[0]:  # less than 1% over the window: stalled
        return (f" (the gap has not decreased by 1% over the last {gaps.size} certificates: more "
                "iterations of this method may not help; raise tol or try another method)")
    more = int(np.ceil(np.log(tol / gaps[-1]) / slope))
    hint = f" (at the rate of the last {gaps.size} certificates, roughly {more} more {unit}"
    times = history.get("time")
    if times is not None and len(times) == n:
        per = (float(times[-1]) - float(np.asarray(times, dtype=float)[-window:][0])) / \
            (steps[-1] - steps[0])
        hint += f", {per * more:.3g} s,"
    return hint + " would reach tol)"


def reached(gap: float, tol: float) -> bool:
    """Whether a recomputed relative gap meets ``tol`` (round-off in the recomputation allowed)."""
    return bool(gap <= tol * (1 + 1e-6) + 1e-15)


def check_iteration_options(tol=None, max_iter=None, *, who: str = "the solver") -> None:
    """Refuse a ``tol`` that is not a positive finite number and a ``max_iter`` that is not a
    positive integer (``None`` skips the check of that option).  Called once, where a solver
    or an estimator receives its options."""
    if tol is not None:
        try:
            t = float(tol)
        except (TypeError, ValueError):
            raise InputError(f"{who}: tol must be a positive number, got {tol!r}") from None
        if not (np.isfinite(t) and t > 0):
            raise InputError(f"{who}: tol must be positive and finite, got {tol!r}")
    if max_iter is not None:
        if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
            raise InputError(f"{who}: max_iter must be a positive integer, got {max_iter!r}")


@dataclass
class Solution:
    """A primal point with its certificate, from a CVXPY reference or a fast solver.

    Attributes
    ----------
    objective : float
        The primal objective recomputed in numpy at ``weights`` (never a solver's number).
    lower_bound : float
        A dual objective at a dual feasible point (weak duality), or the method's own certified
        bound (RDA's, a cutting-plane master's).
    gap : float
        ``relative_gap(objective, lower_bound)`` (a property).
    status : str
        ``"optimal"`` when certified within tolerance; otherwise why it stopped.
    solver : str
        The backend (``"CLARABEL"``) or the algorithm (``"working_set"``).
    weights : array
        The paper's primal variable (node weights ``(n_nodes, n_features)``, ...).
    n_iter, converged, tol : int, bool, float
        Iterations run, whether ``gap <= tol`` was reached, the target.
    build_time, solve_time : float
        Seconds (declaration + compilation; the solve itself).
    values, duals : dict
        Every named variable's value and the named constraints' duals (references).
    dual : array or None
        The fast solver's dual variables (warm starts).
    history : dict
        Per-iteration traces (objective, bound, time, ...).
    extras : dict
        What only this solver returns; ``sol.<key>`` reads ``sol.extras[key]``.
    """

    objective: float
    lower_bound: float
    weights: Any = None
    status: str = ""
    solver: str = ""
    n_iter: int = 0
    converged: bool = True
    tol: float = float("nan")
    build_time: float = 0.0
    solve_time: float = 0.0
    values: dict = field(default_factory=dict)
    duals: dict = field(default_factory=dict)
    dual: Any = None
    history: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    name: str = ""
    solver_objective: float = float("nan")
    problem_class: str = ""
    #: solvers tried before ``solver`` when it was chosen automatically, with why each failed
    failed_solvers: tuple = ()

    def __post_init__(self):
        if not self.status:
            self.status = OPTIMAL if self.converged else ITERATION_LIMIT

    def __getattr__(self, key):
        # only reached when normal lookup fails: per-solver extras read as attributes
        extras = self.__dict__.get("extras")
        if extras is not None and key in extras:
            return extras[key]
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}"
                             + (f" (extras: {sorted(extras)})" if extras else ""))

    @property
    def gap(self) -> float:
        """``relative_gap(objective, lower_bound, extras.get("at_zero"))``:
        ``(objective - lower_bound) / max(|objective|, |lower_bound|)``, and against the decrease from zero
        weights when the solver recorded the objective there (``extras["at_zero"]``)."""
        return relative_gap(self.objective, self.lower_bound, self.extras.get("at_zero"))

    def duality_gap(self) -> float:
        """Absolute gap ``objective - lower_bound`` (qpsolvers' name)."""
        return float(self.objective) - float(self.lower_bound)

    def warn_unless_converged(self, unit: str = "iterations", stacklevel: int = 2,
                              reason: str | None = None) -> None:
        """The one ``ConvergenceWarning`` of hiercvx, issued when a solver stopped above ``tol``
        (``stacklevel`` counted from the caller of this method).  ``reason`` replaces the gap
        sentence for solvers without a certificate (a perceptron on non-separable data)."""
        if not self.converged:
            hint = progress_hint(self.history, self.tol, unit)
            advice = "" if "has not decreased" in hint else "; raise max_iter or tol"
            what = reason or (f"with a certified relative duality gap of {self.gap:.3e} > "
                              f"tol={self.tol:g}{advice}{hint}")
            warnings.warn(f"{self.name or self.solver or 'the solver'} stopped after {self.n_iter} "
                          f"{unit} {what}", ConvergenceWarning, stacklevel=stacklevel + 1)

    def certificate(self) -> str:
        """A readable certificate."""
        head = f"{self.name or 'solution'}"
        if self.problem_class:
            head += f" [{self.problem_class}]"
        lines = [f"{head} solved by {self.solver or '?'}: status {self.status}",
                 f"  objective (recomputed)  {self.objective:.10g}"]
        if np.isfinite(self.solver_objective):
            lines.append(f"  solver's objective      {self.solver_objective:.10g}")
        lines += [f"  lower bound (dual)      {self.lower_bound:.10g}",
                  f"  relative gap            {self.gap:.3e}"
                  + (f" (tol {self.tol:g})" if np.isfinite(self.tol) else "")]
        if self.n_iter:
            lines.append(f"  iterations              {self.n_iter}")
        lines.append(f"  build {self.build_time:.3f}s, solve {self.solve_time:.3f}s")
        return "\n".join(lines)

    __str__ = certificate

    def __repr__(self):
        return (f"Solution({self.name or self.solver!r}, status={self.status!r}, objective="
                f"{self.objective:.10g}, lower_bound={self.lower_bound:.10g}, gap={self.gap:.2e}, "
                f"n_iter={self.n_iter})")
