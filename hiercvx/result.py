"""The one result type of hiercvx: what a certified reference and every fast solver return.

A :class:`Solution` carries a primal point (``weights``), its objective *recomputed in numpy*
at that point, a certified ``lower_bound`` from a dual feasible point (weak duality), the
relative ``gap`` between them (the README's, at every scale), which test certified it
(``converged_by``), a ``status``, iteration count and times.  What only one solver
knows (a path-weight vector, the cutting planes, the DC iterates, an update log) goes into
``extras`` and reads back as an attribute (``sol.alpha`` is ``sol.extras["alpha"]``).

The gap formula (:func:`~hiercvx.result.relative_gap`), the decrease from zero weights
(:func:`gap_from_zero`), the certificate's tests (:func:`~hiercvx.result.certified_by`,
:func:`stopping_gap`, :func:`reached`), the one ``ConvergenceWarning``
(:meth:`Solution.warn_unless_converged`) and the validation of the options every iterative solver
takes (:func:`check_iteration_options`) live here and nowhere else.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .exceptions import InputError

__all__ = ["progress_hint", "Solution", "relative_gap", "gap_from_zero", "certified_by",
           "stopping_gap", "gap_scale", "comparison_scale", "reached", "check_iteration_options",
           "OPTIMAL", "ITERATION_LIMIT", "RELATIVE_GAP", "DECREASE_FROM_ZERO"]

#: ``status`` of a certified answer (reference: the solver said optimal and the gap holds;
#: fast solver: the recomputed gap reached ``tol``)
OPTIMAL = "optimal"
#: ``status`` of a fast solver that stopped on ``max_iter`` (or a time limit) above ``tol``
ITERATION_LIMIT = "iteration_limit"


def gap_scale(objective: float, lower_bound: float) -> float:
    """The denominator of :func:`~hiercvx.result.relative_gap`: ``max(|objective|, |lower_bound|)``.

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


def relative_gap(objective: float, lower_bound: float) -> float:
    """``(objective - lower_bound) / max(|objective|, |lower_bound|)``: the certificate's
    relative gap, ``Solution.gap`` (``0`` when both are ``0``).

    Every model's objective is its primal value (non-negative for all hiercvx models), so the
    gap is at most 1 for any bound in ``[0, objective]`` and at least 1 for a negative bound:
    the all-zero starting point of a dual method (bound 0) never passes, at any scale.  It
    bounds the relative error of the objective: the optimum lies in
    ``[objective (1 - gap), objective]``."""
    objective, lower_bound = float(objective), float(lower_bound)
    scale = gap_scale(objective, lower_bound)
    return 0.0 if scale == 0.0 else (objective - lower_bound) / scale


def gap_from_zero(objective: float, lower_bound: float, at_zero: float | None) -> float:
    """``(objective - lower_bound) / (at_zero - lower_bound)``: the fraction of the decrease
    from zero weights that the bound leaves uncertified (``Solution.gap_from_zero``).

    ``at_zero`` is the objective at ``W = 0`` (``C`` times the losses at zero).  ``nan`` when
    it is unknown; ``0`` when the bound proves ``W = 0`` optimal and the point is no worse
    (``at_zero <= lower_bound``, ``objective <= lower_bound``), ``inf`` when it proves zero
    optimal and the point is worse.  Small at a tiny ``C`` only when the point is more than
    ``W = 0`` (where the relative gap is small for any point); it says nothing about the
    relative error of the objective."""
    if at_zero is None or not np.isfinite(at_zero):
        return float("nan")
    diff, room = float(objective) - float(lower_bound), float(at_zero) - float(lower_bound)
    if room <= 0:
        return 0.0 if diff <= 0 else float("inf")
    return diff / room


#: the names ``certified_by`` gives to the tests a certificate can pass
RELATIVE_GAP, DECREASE_FROM_ZERO = "relative_gap", "decrease_from_zero"


def _guard_holds(objective, lower_bound, at_zero, tol) -> bool:
    """The tiny-``C`` condition of both tests: below ``at_zero``, at least ``1 - sqrt(tol)``
    of the decrease from ``W = 0`` is certified (``gap_from_zero**2 <= tol``)."""
    if at_zero is None or not np.isfinite(at_zero) or not lower_bound < objective < at_zero:
        return True
    return reached(gap_from_zero(objective, lower_bound, at_zero) ** 2, tol)


def certified_by(objective: float, lower_bound: float, tol: float, at_zero: float | None = None,
                 zero_optimum: float = 1e-9) -> str:
    """Which test certifies ``(objective, lower_bound)`` at ``tol``: ``"relative_gap"``,
    ``"decrease_from_zero"``, or ``""`` (none); ``Solution.converged_by``.

    - ``"relative_gap"``: :func:`~hiercvx.result.relative_gap` ``<= tol``, the README's
      certificate: the objective is within a fraction ``tol`` of the optimum.
    - ``"decrease_from_zero"``: the relative gap is over ``tol``, but ``objective -
      lower_bound <= tol * zero_optimum * at_zero``: the optimum is zero to round-off (every
      loss met with margin, e.g. one class and free biases: objective and bound are 1e-21 and
      0, whose ratio says nothing), and the point is certified to that absolute accuracy
      only.  Needs ``at_zero``, the objective at ``W = 0``.  It also passes for an optimum
      that is small but not zero (separable data with ``X`` scaled by 1e6), where the
      objective may be far from the optimum: read ``Solution.gap`` then.

    Both also require, when ``at_zero`` is known and ``lower_bound < objective < at_zero``,
    ``gap_from_zero(...)**2 <= tol``: with a tiny ``C`` the relative gap of ``W = 0`` itself is
    ``O(C)``, so at least ``1 - sqrt(tol)`` of the decrease from zero must be certified too (at
    ordinary scales this changes nothing; at ``W = 0`` itself it does not apply, so a problem
    whose optimum is ``W = 0`` is certified as usual).  ``zero_optimum`` (default 1e-9) lies far
    above round-off and far below any gap a solver is asked for."""
    objective, lower_bound = float(objective), float(lower_bound)
    if not (np.isfinite(objective) and np.isfinite(lower_bound) and np.isfinite(tol)):
        return ""
    if not _guard_holds(objective, lower_bound, at_zero, tol):
        return ""
    if reached(relative_gap(objective, lower_bound), tol):
        return RELATIVE_GAP
    if at_zero is not None and np.isfinite(at_zero) and at_zero > 0 and \
            reached((objective - lower_bound) / (zero_optimum * float(at_zero)), tol):
        return DECREASE_FROM_ZERO
    return ""


def stopping_gap(objective: float, lower_bound: float, at_zero: float | None = None,
                 zero_optimum: float = 1e-9) -> float:
    """The number a solver compares with ``tol`` (:func:`reached`): ``<= tol`` exactly when
    :func:`~hiercvx.result.certified_by` names a test.  Not ``Solution.gap``
    (:func:`~hiercvx.result.relative_gap`).

    ``(objective - lower_bound) / max(|objective|, |lower_bound|, zero_optimum * at_zero)``,
    and, below ``at_zero``, at least ``gap_from_zero**2``; without ``at_zero`` it is the
    relative gap."""
    objective, lower_bound = float(objective), float(lower_bound)
    scale = gap_scale(objective, lower_bound)
    known = at_zero is not None and np.isfinite(at_zero)
    if known and at_zero > 0:
        scale = max(scale, zero_optimum * float(at_zero))
    gap = 0.0 if scale == 0.0 else (objective - lower_bound) / scale
    if known and lower_bound < objective < float(at_zero):
        gap = max(gap, gap_from_zero(objective, lower_bound, at_zero) ** 2)
    return gap


@contextmanager
def rewritten_convergence_warnings(rewrite):
    """Warnings raised inside the block, issued again when it ends with every
    ``ConvergenceWarning``'s message replaced by ``rewrite(message)``; other warnings pass
    unchanged.  For a caller that knows more than the solver: its own parameter names, or
    advice about the data."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        message = rewrite(str(w.message)) if issubclass(w.category, ConvergenceWarning) \
            else w.message
        warnings.warn_explicit(message, w.category, w.filename, w.lineno)


def progress_hint(history, tol: float, unit: str = "iterations", window: int = 10) -> str:
    """What the last certificates say about the rest of the way, for a ``ConvergenceWarning``.

    ``" (... roughly K more <unit>, T s, ...)"`` from the log-linear trend of the recent half of
    the recorded gaps (at most ``window``; ``history["gap"]`` against ``history["n_iter"]`` or the
    record's index, ``history["time"]`` for the time per unit) -- an estimate, optimistic for
    methods that slow down as they converge --, ``" (... has not decreased ...)"`` when they
    stalled, ``""`` when fewer than three positive gaps were recorded, when none is below 1 (the
    lower bound not yet above zero, as in an interior point's first steps, whose gap may hold
    there and then fall fast) or when the gap fell over the window without a falling trend."""
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
    if gaps.min() >= 1.0:  # no positive bound yet (an interior point's first steps): nothing to judge
        return ""
    if gaps[-1] >= 0.99 * gaps[0]:  # less than 1% over the window: stalled
        return (f" (the gap has not decreased by 1% over the last {gaps.size} certificates: more "
                "iterations of this method may not help; raise tol or try another method)")
    if slope >= -1e-12:  # lower than it was, but no falling trend to extrapolate
        return ""
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
        ``(objective - lower_bound) / max(|objective|, |lower_bound|)`` (a property,
        :func:`~hiercvx.result.relative_gap`): at every scale the objective is within this fraction
        of the optimum.
    gap_from_zero : float
        ``(objective - lower_bound) / (at_zero - lower_bound)``, the fraction of the decrease
        from zero weights left uncertified (a property, :func:`gap_from_zero`); ``nan`` unless
        the solver recorded the objective at zero (``extras["at_zero"]``).
    converged_by : str
        Which test certified the point (:func:`~hiercvx.result.certified_by`): ``"relative_gap"``
        (``gap <= tol``), ``"decrease_from_zero"`` (an optimum that is zero to round-off:
        ``objective - lower_bound <= 1e-9 tol at_zero``, the relative gap may be large), the status
        of a solver with its own test (``"separated"``: a perceptron), ``"solver"`` for a solver's
        test on numbers other than these; ``""`` when not converged.
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
    #: what ``solver_objective`` is when it is not the objective of ``name``'s problem (a
    #: declaration scaled to keep a parameter DPP, a cutting-plane master); printed beside it
    solver_objective_meaning: str = ""
    problem_class: str = ""
    #: solvers tried before ``solver`` when it was chosen automatically, with why each failed
    failed_solvers: tuple = ()
    converged_by: str = ""

    def __post_init__(self):
        if not self.status:
            self.status = OPTIMAL if self.converged else ITERATION_LIMIT
        if not self.converged:
            self.converged_by = ""
        elif not self.converged_by:
            test = certified_by(self.objective, self.lower_bound, self.tol,
                                self.extras.get("at_zero"))
            self.converged_by = test or (self.status if self.status != OPTIMAL else "solver")

    def __getattr__(self, key):
        # only reached when normal lookup fails: per-solver extras read as attributes
        extras = self.__dict__.get("extras")
        if extras is not None and key in extras:
            return extras[key]
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}"
                             + (f" (extras: {sorted(extras)})" if extras else ""))

    @property
    def gap(self) -> float:
        """``(objective - lower_bound) / max(|objective|, |lower_bound|)``
        (:func:`~hiercvx.result.relative_gap`), at every scale of ``C`` and ``X``."""
        return relative_gap(self.objective, self.lower_bound)

    @property
    def gap_from_zero(self) -> float:
        """``(objective - lower_bound) / (at_zero - lower_bound)`` (:func:`gap_from_zero`):
        the fraction of the decrease from zero weights left uncertified; ``nan`` when the
        solver did not record the objective at zero (``extras["at_zero"]``)."""
        return gap_from_zero(self.objective, self.lower_bound, self.extras.get("at_zero"))

    def duality_gap(self) -> float:
        """Absolute gap ``objective - lower_bound`` (qpsolvers' name)."""
        return float(self.objective) - float(self.lower_bound)

    def warn_unless_converged(self, unit: str = "iterations", stacklevel: int = 2,
                              reason: str | None = None, hint: str | None = None) -> None:
        """The one ``ConvergenceWarning`` of hiercvx, issued when a solver stopped above ``tol``
        (``stacklevel`` counted from the caller of this method).  ``reason`` replaces the gap
        sentence for solvers without a certificate (a perceptron on non-separable data);
        ``hint`` replaces :func:`~hiercvx.result.progress_hint`'s reading of the history (a caller
        whose next stage the history does not describe)."""
        if not self.converged:
            hint = progress_hint(self.history, self.tol, unit) if hint is None else hint
            advice = "" if "has not decreased" in hint else "; raise max_iter or tol"
            if reached(self.gap, self.tol):  # the tiny-C condition failed (certified_by)
                what = (f"with a certified relative duality gap of {self.gap:.3e} <= tol={self.tol:g}"
                        f" but {self.gap_from_zero:.3e} of the decrease from zero weights "
                        f"uncertified (> sqrt(tol)){advice}{hint}")
            else:
                what = f"with a certified relative duality gap of {self.gap:.3e} > tol={self.tol:g}" \
                    f"{advice}{hint}"
            what = reason or what
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
            lines.append(f"  solver's objective      {self.solver_objective:.10g}"
                         + (f" ({self.solver_objective_meaning})" if self.solver_objective_meaning
                            else ""))
        lines += [f"  lower bound (dual)      {self.lower_bound:.10g}",
                  f"  relative gap            {self.gap:.3e}"
                  + (f" (tol {self.tol:g})" if np.isfinite(self.tol) else "")]
        if np.isfinite(self.gap_from_zero):
            lines.append(f"  gap from zero weights   {self.gap_from_zero:.3e}")
        if self.converged_by and self.converged_by != RELATIVE_GAP:
            lines.append(f"  certified by            {self.converged_by}"
                         + (" (the optimum is zero to round-off; read the relative gap)"
                            if self.converged_by == DECREASE_FROM_ZERO else ""))
        if self.n_iter:
            lines.append(f"  iterations              {self.n_iter}")
        lines.append(f"  build {self.build_time:.3f}s, solve {self.solve_time:.3f}s")
        return "\n".join(lines)

    __str__ = certificate

    def __repr__(self):
        return (f"Solution({self.name or self.solver!r}, status={self.status!r}, objective="
                f"{self.objective:.10g}, lower_bound={self.lower_bound:.10g}, gap={self.gap:.2e}, "
                f"n_iter={self.n_iter})")
