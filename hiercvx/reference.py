"""Certified exact references: a CVXPY problem plus the means to certify its answer.

A formulation module declares a :class:`ReferenceProblem`: the ``cvxpy.Problem``, the
named variables, a numpy function that recomputes the objective from the returned
weights (never trusting the solver's number), and a numpy function that evaluates a
*dual feasible point* built from the solver's duals, which gives a lower bound by weak
duality.  :meth:`ReferenceProblem.solve` returns a :class:`ReferenceSolution` only when

* the solver returned a point (``optimal``, or ``optimal_inaccurate`` / ``user_limit`` with
  values: the certificate below judges it, not the solver's status),
* every returned value is finite,
* the primal point is feasible (where the formulation supplies a residual), and
* a test of :func:`hiercvx.result.certified_by` passes at ``gap_tol``: the relative gap
  ``(objective - lower_bound) / max(|objective|, |lower_bound|)`` (``sol.gap``, meaningful at
  every scale of ``C`` and ``X``), or, for an optimum that is zero to round-off, the decrease
  from zero weights (``at_zero``, the objective recomputed with every variable at zero); both
  with most of the decrease from zero certified when ``C`` is tiny.  ``sol.converged_by``
  names the test; an answer certified by the relative gap is preferred: one certified only by
  the decrease from zero is returned when no try reaches the relative gap;

otherwise it retries (tight tolerances, then the objective divided by its magnitude) and
then raises :class:`~hiercvx.exceptions.SolverError` naming the status, the solver, the gap
and each try's reason.  The tolerances and the retries are the fields of
:class:`~hiercvx.reference.Options` (``solve(options=Options(...))``).  Also here (from
``hiercvx._solver_choice``): the choice of a solver per problem class (``SOLVER_PREFERENCE``), the
size of a problem before compiling, Gurobi's licence limits.  The declarations' text and LaTeX
renderings are :mod:`hiercvx.describe`.

Badly scaled features (``X`` far from unit size, or ``C`` times its square huge) are solved as
the same declaration on ``X / s`` (``hiercvx._reference_scaling``, recorded by the builder
as :attr:`ReferenceProblem.scaling`), first at moderate ``C`` where the hard margin makes that
the same optimum, the point mapped back and certified on the user's problem; a point whose
relative gap misses ``gap_tol`` is first polished along its ray.
"""

from __future__ import annotations

import copy
import logging
import time
import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

import cvxpy as cp
import numpy as np
from sklearn.exceptions import ConvergenceWarning

try:  # CVXPY's default QP/SOCP solver; read for its default settings
    import clarabel
except ImportError:  # pragma: no cover - a CVXPY dependency
    clarabel = None

from .describe import Formulation, Symbol, Term, describe_parts, render_latex, render_text
from ._solver_choice import (GUROBI_LIMIT_MARKERS, GUROBI_SIZE_LIMITS, OPEN_SOURCE_ALTERNATIVE,
                             SOLVER_PREFERENCE, ProblemSize, check_gurobi_size, check_size,
                             choose_solver, gurobi_licence, gurobi_limit_text, gurobi_size,
                             installed_solvers, problem_class, problem_size, quiet_gurobi_env,
                             silence_highs_banner, usable_solvers)
from .exceptions import InputError, SolverError, SolverUnavailableError
from ._reference_scaling import radial_polish
from .result import (OPTIMAL, RELATIVE_GAP, Solution, certified_by, gap_scale,
                     reached, relative_gap)

logger = logging.getLogger(__name__)

__all__ = [
    "ReferenceProblem",
    "ReferenceSolution",
    "Options",
    "Formulation",
    "Symbol",
    "Term",
    "ProblemSize",
    "problem_size",
    "gurobi_licence",
    "gurobi_size",
    "check_gurobi_size",
    "GUROBI_SIZE_LIMITS",
    "gurobi_limit_text",
    "choose_solver",
    "installed_solvers",
    "usable_solvers",
    "problem_class",
    "check_size",
    "SOLVER_PREFERENCE",
]

#: A certified reference returns the one result type of hiercvx (:class:`hiercvx.result.Solution`).
ReferenceSolution = Solution

#: Solver capabilities as data: per problem class (``"LP"``, ``"QP"``, ``"SOCP"``, ``"SDP"``,
#: ``"EXP"``, ``"MILP"``, ``"MIQP"``, ``"MISOCP"``), the CVXPY solvers in the order
#: :func:`choose_solver` tries them (the first installed and usable one wins).
SOLVER_PREFERENCE = SOLVER_PREFERENCE

#: The limits of Gurobi's size-limited licence (the one the ``gurobipy`` pip wheel carries):
#: at most 2000 variables and 2000 constraints, and at most 200 variables once the model has a
#: quadratic term (a QP objective or a second-order cone).  When the installed licence is the
#: size-limited one, :func:`check_gurobi_size` refuses a larger problem before it is sent.
GUROBI_SIZE_LIMITS = GUROBI_SIZE_LIMITS


def _check_tolerance(value, name: str) -> float:
    """A certificate tolerance as a positive finite float, or an ``InputError`` (a NaN would
    make every comparison false and certify anything)."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a positive number, got {value!r}") from None
    if isinstance(value, bool) or not (np.isfinite(t) and t > 0):
        raise InputError(f"{name} must be positive and finite (e.g. 1e-6), got {value!r}")
    return t


def _tight_settings() -> Mapping[str, Mapping[str, Any]]:
    # absolute gap tolerances effectively off (the certificate is relative); CLARABEL's
    # accept_unknown returns the best iterate on "insufficient progress" for the certificate
    # to judge
    return MappingProxyType({
        "CLARABEL": MappingProxyType({"tol_gap_abs": 1e-30, "tol_gap_rel": 1e-14, "tol_feas": 1e-14,
                                      "tol_ktratio": 1e-12, "max_iter": 500, "accept_unknown": True}),
        "ECOS": MappingProxyType({"abstol": 1e-30, "reltol": 1e-12, "feastol": 1e-12, "max_iters": 500}),
        "OSQP": MappingProxyType({"eps_abs": 1e-12, "eps_rel": 1e-12, "polish": True, "max_iter": 20_000}),
        "SCS": MappingProxyType({"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 20_000}),
    })


@dataclass(frozen=True)
class Options:
    """Settings of :meth:`ReferenceProblem.solve`: what certifies an answer and how to retry.

    Attributes
    ----------
    gap_tol : float
        Largest relative gap ``(objective - lower_bound) / max(|objective|, |lower_bound|)``
        that certifies (the ``tol`` of :func:`~hiercvx.result.certified_by`, which also
        takes the decrease from zero weights): 1e-6 is what interior-point solvers reach at
        their default settings on these problems.
    feas_tol : float
        Largest primal residual (where the formulation supplies one): the solvers' own
        feasibility tolerance scale.
    tight_settings : mapping
        Per solver, the settings of the second try when the defaults' answer does not certify:
        tolerances near machine precision, more iterations.
    rescale_outside : tuple of float
        The third try divides the objective by its magnitude when it lies outside this range:
        interior-point solvers stop on ``gap <= tol * max(1, |objective|)``, so an objective far
        from 1 stops them too early or too late.
    weak_duality_slack : float
        How far a lower bound may exceed the recomputed objective (relative) before the
        certificate is called inconsistent: rounding of the two numpy evaluations.
    fallback : bool
        With ``solver=None``, try the next installed solver of the problem's class when one
        fails (the certificate does not depend on the solver, so a fallback cannot weaken it).
    """

    gap_tol: float = 1e-6
    feas_tol: float = 1e-6
    tight_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=_tight_settings)
    rescale_outside: tuple = (1e-2, 1e2)
    weak_duality_slack: float = 1e-7
    fallback: bool = True

    def __post_init__(self):
        object.__setattr__(self, "gap_tol", _check_tolerance(self.gap_tol, "gap_tol"))
        object.__setattr__(self, "feas_tol", _check_tolerance(self.feas_tol, "feas_tol"))
        lo, hi = (float(v) for v in self.rescale_outside)
        if not 0 < lo <= hi:
            raise InputError(f"rescale_outside must be (low, high) with 0 < low <= high, got "
                             f"{self.rescale_outside!r}")

    def worth_rescaling(self, scale) -> bool:
        """Whether dividing the objective by ``scale`` changes what a solver's
        ``max(1, |objective|)`` tests see (a magnitude outside ``rescale_outside``)."""
        lo, hi = self.rescale_outside
        return scale is not None and np.isfinite(scale) and scale > 0 and not lo <= scale <= hi


#: CVXPY statuses with a primal and dual point to certify
_POINT_RETURNED = (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT)


@dataclass
class _Try:
    """One attempt of :meth:`ReferenceProblem._solve_with`: its label (said in errors and in
    ``sol.extras["settings"]``), the problem solved (``self.problem`` or a rescaled copy), the
    factor its duals are multiplied by, the solver settings."""

    label: str
    problem: Any
    dual_scale: float
    settings: dict


@dataclass
class _Context:
    """What every attempt of one solve shares."""

    name: str
    klass: str
    options: Options
    verbose: bool
    at_zero: float | None
    t0: float


#: the default of ``solve``'s tolerance keywords: take the value from ``options`` (an explicit
#: ``None`` is a bad value and is refused, like any other)
_FROM_OPTIONS = object()


class ReferenceProblem:
    """A CVXPY problem declared from a paper, with its certification routes.

    Parameters
    ----------
    problem : cvxpy.Problem
    variables : dict name -> cvxpy.Variable (exposed as ``sol.values``)
    objective : callable(values) -> float, the objective recomputed in numpy
    lower_bound : callable(values, duals) -> float, the dual objective at a dual feasible
        point built from ``duals`` (dict name -> dual value of the named constraints)
    weights : callable(values) -> array, what ``sol.weights`` is
    constraints : dict name -> cvxpy constraint whose duals ``lower_bound`` reads
    parameters : dict name -> cvxpy.Parameter a user may sweep (see :meth:`set`)
    infeasibility : optional callable(values) -> float, a primal residual (0 when feasible)
    name : str
        The problem's name, used in messages and in the solution.
    build_time : float
        Seconds the declaration took to build (the builder measures it).
    data : dict, optional
        What the numpy routes need (``X``, ``Y``, ``H``, ...), kept for inspection.
    formulation : optional :class:`~hiercvx.describe.Formulation`, the problem as the paper
        writes it (objective and constraint families with equation numbers, the legend) for
        :meth:`describe`
    """

    def __init__(self, problem, *, variables: dict, objective: Callable, lower_bound: Callable,
                 weights: Callable, constraints: dict | None = None, parameters: dict | None = None,
                 infeasibility: Callable | None = None, name: str = "", build_time: float = 0.0,
                 data: dict | None = None, formulation: Formulation | None = None,
                 solver_objective_meaning: str = ""):
        self.problem = problem
        self.formulation = formulation
        #: what the solver's optimum is when the declared objective is not the problem of
        #: ``name`` itself (e.g. ``"the dual times lam = {lam:g}"``; ``{parameter}`` fields
        #: take the parameters' values at solve time); empty when it is that problem's value
        self.solver_objective_meaning = solver_objective_meaning
        self.variables = dict(variables)
        self.constraints = dict(constraints or {})
        self.parameters = dict(parameters or {})
        self._objective = objective
        self._lower_bound = lower_bound
        self._weights = weights
        self._infeasibility = infeasibility
        self.name = name
        self.declare_time = float(build_time)
        self.data = dict(data or {})  # what the numpy routes need (X, Y, H, ...), for inspection
        # solvers whose cached settings a retry tightened -> the settings it changed
        self._settings_changed: dict = {}
        #: the same declaration on rescaled features, when X is badly scaled
        #: (``hiercvx._reference_scaling``; set by the builder)
        self.scaling = None

    def __getstate__(self):
        """The state to pickle: the CVXPY problem without its solvers' caches (native objects
        that do not pickle; a solve after unpickling builds them again)."""
        state = dict(self.__dict__)
        problem = copy.copy(self.problem)
        problem._solver_cache = {}
        state["problem"] = problem
        return state

    def __repr__(self):
        return (f"ReferenceProblem({self.name!r}, {len(self.variables)} variables, "
                f"{len(self.problem.constraints)} constraint groups, parameters {list(self.parameters)})")

    def size(self) -> ProblemSize:
        """Variables, constraint rows and constant nonzeros of the declared problem."""
        return problem_size(self.problem)

    def describe(self, fmt: str = "text") -> str:
        """The formulation as a reader writes it, as plain ``"text"`` or ``"latex"``.

        The objective and constraint families with the paper's equation numbers (from
        ``formulation``; without one, the CVXPY structure: named constraints and their
        kinds), the variables with their shapes in dimension symbols and their meanings, the
        legend of the other symbols, the swept parameters; then the instance: the dimensions'
        values, the rows of each named constraint, the size (:meth:`size`), the problem class
        and the solver :meth:`solve` starts with (LaTeX comments in ``"latex"``).
        """
        if fmt not in ("text", "latex"):
            raise InputError(f"fmt must be 'text' or 'latex', got {fmt!r}")
        parts = describe_parts(self, problem_class(self.problem), self._solver_text())
        return render_text(parts) if fmt == "text" else render_latex(parts)

    def _solver_text(self) -> str:
        """The solver :meth:`solve` starts with and its fallbacks, in words."""
        klass = problem_class(self.problem)
        try:
            first = choose_solver(self.problem)
        except SolverUnavailableError:
            return f"none installed (install one of {', '.join(SOLVER_PREFERENCE[klass])})"
        rest = [n for n in SOLVER_PREFERENCE[klass] if n in installed_solvers() and n != first]
        return first + (f" (then {', '.join(rest)} if it fails)" if rest else "")

    def set(self, **values) -> "ReferenceProblem":
        """Change swept parameters (e.g. ``C``) without recompiling; returns ``self``."""
        for k, v in values.items():
            if k not in self.parameters:
                raise InputError(f"{k!r} is not a parameter of {self.name}; parameters: "
                                 f"{list(self.parameters)}")
            v = np.asarray(v, dtype=float)
            if not np.all(np.isfinite(v)):
                raise InputError(f"parameter {k} must be finite, got {v}")
            param = self.parameters[k]
            if param.is_pos() and np.any(v <= 0):
                raise InputError(f"parameter {k} must be positive, as the builder requires, got {v}")
            if param.is_nonneg() and np.any(v < 0):
                raise InputError(f"parameter {k} must be non-negative, got {v}")
            param.value = v if v.shape else float(v)
        return self

    def objective_value(self, values: dict) -> float:
        """The objective recomputed in numpy at the given variable values."""
        return float(self._objective(values))

    def solve(self, solver: str | None = None, *, gap_tol: float = _FROM_OPTIONS,
              feas_tol: float = _FROM_OPTIONS, verbose: bool = False, options: Options | None = None,
              **solver_options) -> ReferenceSolution:
        """Solve, certify, and return a :class:`ReferenceSolution` (or raise ``SolverError``).

        Parameters
        ----------
        solver : str, optional
            A CVXPY solver name; the only one tried.  ``None`` tries the installed solvers of
            ``SOLVER_PREFERENCE`` for the problem's class in order and returns the first
            certified answer (``failed_solvers`` on the solution says what failed first); the
            ``SolverError`` raised when all fail lists each one's reason.
        gap_tol, feas_tol : float, optional
            Override :class:`Options.gap_tol <hiercvx.reference.Options>` and
            :class:`Options.feas_tol <hiercvx.reference.Options>`.
        verbose : bool
            The solver's own log.
        options : Options, optional
            The certificate's tolerances and the retries (:class:`~hiercvx.reference.Options`).
        **solver_options
            Settings passed to the solver; given, they are the only settings tried.

        Returns
        -------
        ReferenceSolution
            Certified: a point was returned, every value is finite, the point is feasible and
            a test of :func:`~hiercvx.result.certified_by` passes at ``gap_tol`` (named by
            ``converged_by``; ``gap`` is the relative gap, whichever passed).  Badly scaled
            features are solved on ``X / s`` first (:attr:`scaling`).  Each solver is tried with its default
            settings, then :class:`Options.tight_settings <hiercvx.reference.Options>`, then with
            the objective divided by its magnitude.  ``sol.extras`` records ``at_zero``
            (``sol.gap_from_zero`` reads it), the solver's own ``solver_status`` and the
            ``settings`` that certified.
        """
        options = options if options is not None else Options()
        if not isinstance(options, Options):
            raise InputError(f"options must be a hiercvx.reference.Options, got {type(options).__name__}")
        changes = {k: v for k, v in (("gap_tol", gap_tol), ("feas_tol", feas_tol))
                   if v is not _FROM_OPTIONS}
        options = replace(options, **changes) if changes else options
        if solver is not None or solver_options:  # options are solver-specific: no fallback
            return self._solve_with(choose_solver(self.problem, solver), options, verbose,
                                    solver_options)
        available = installed_solvers()
        candidates = [n for n in SOLVER_PREFERENCE[problem_class(self.problem)] if n in available]
        if not candidates:
            choose_solver(self.problem)  # raises SolverUnavailableError with the install hint
        if not options.fallback:
            candidates = candidates[:1]
        return self._first_certified(candidates, options, verbose)

    def _first_certified(self, candidates, options: Options, verbose: bool) -> ReferenceSolution:
        """The first of ``candidates`` whose answer certifies; else the first one's error with
        the fallbacks' reasons."""
        failed, first = [], None
        for name in candidates:
            try:
                with warnings.catch_warnings(record=True) as caught:  # a failed try's notes go
                    warnings.simplefilter("always")                    # into failed_solvers
                    sol = self._solve_with(name, options, verbose, {})
                for w in caught:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            except SolverError as exc:
                if exc.status == "not-dcp":  # a declaration bug: no solver can help
                    raise
                failed.append((name, str(exc)))
                first = exc if first is None else first
            else:
                if failed:
                    logger.info("%s: %s failed (%s); certified by %s", self.name, failed[0][0],
                                failed[0][1], name)
                sol.failed_solvers = tuple(failed)
                return sol
        if failed[1:]:
            first.args = (f"{first} -- the fallbacks failed too: "
                          + "; ".join(f"{n}: {msg}" for n, msg in failed[1:]),)
        raise first

    def _solve_with(self, name: str, options: Options, verbose: bool,
                    solver_options: dict) -> ReferenceSolution:
        """Solve with the solver ``name`` and certify (see :meth:`solve`).  With badly scaled
        features (:attr:`scaling`), the same declaration on ``X / s`` first, its point mapped
        back and certified on this problem; then this problem's own tries
        (:meth:`_own_tries`) unless that certified the relative gap.  An answer certified by
        the relative gap wins over one certified only by the decrease from zero."""
        scaled = self._solve_scaled(name, options, verbose, solver_options)
        if scaled is not None and scaled.converged_by == RELATIVE_GAP:
            return scaled
        try:
            own = self._own_tries(name, options, verbose, solver_options)
        except SolverError as exc:
            if scaled is None or exc.status in ("not-dcp", "licence", "unsupported"):
                raise
            return scaled
        if scaled is not None and own.converged_by != RELATIVE_GAP and scaled.objective < own.objective:
            return scaled
        return own

    def _own_tries(self, name: str, options: Options, verbose: bool,
                   solver_options: dict) -> ReferenceSolution:
        """This problem's tries: first the solver's defaults (or the caller's
        ``solver_options``, then the only try), then
        :class:`Options.tight_settings <hiercvx.reference.Options>`, then the objective divided by
        its magnitude (an interior-point solver measures its gap against ``max(1, |objective|)``,
        so a tiny objective, ``C n`` tiny, stops it early).  The first answer certified by the
        relative gap returns; an answer certified only by the decrease from zero
        (:func:`~hiercvx.result.certified_by`) is kept while the next tries look for the relative
        gap, and returned when none finds it.  Else raises the last try's ``SolverError``, naming
        every try's reason."""
        if name == "GUROBI":  # CVXPY hides the licence's "model too large": check first
            check_gurobi_size(self.problem, what=self.name or "the reference problem")
        ctx = _Context(name, problem_class(self.problem), options, verbose,
                       self._objective_at_zero(), time.perf_counter())
        tight = dict(options.tight_settings.get(name, {}))
        tries = [_Try("as asked" if solver_options else "default settings", self.problem, 1.0,
                      dict(solver_options) or self._default_settings(name))]
        if not solver_options:
            tries.append(_Try("tight tolerances", self.problem, 1.0, tight))
        failures, scale, kept = [], ctx.at_zero, None
        for attempt in tries:
            if attempt.label == "tight tolerances":
                self._settings_changed[name] = tuple(tight)  # a later solve starts from the defaults
            try:
                sol = self._certify(ctx, attempt)
            except SolverError as exc:
                if exc.status in ("not-dcp", "licence", "unsupported"):
                    raise
                failures.append((attempt.label, exc))
                scale = getattr(exc, "objective_scale", None) or scale
            else:
                if sol.converged_by == RELATIVE_GAP:
                    return sol
                kept = sol if kept is None or sol.objective < kept.objective else kept
                scale = gap_scale(sol.objective, sol.lower_bound)
            if attempt.label == "tight tolerances" and options.worth_rescaling(scale):
                # the same constraints (so the same variables and dual values), the objective
                # divided by its magnitude; the duals come back divided by it too
                sense = type(self.problem.objective)
                rescaled = cp.Problem(sense(self.problem.objective.expr * (1.0 / scale)),
                                      self.problem.constraints)
                tries.append(_Try(f"objective divided by {scale:.3g}", rescaled, scale, tight))
        if kept is not None:
            _warn_absolute_only(self.name, kept)
            return kept
        last = failures[-1][1]
        if len(failures) > 1:
            last.args = (f"{last} -- tried " + "; ".join(
                f"{label}: {_reason(exc)}" for label, exc in failures),)
        raise last

    def _solve_scaled(self, name, options, verbose, solver_options) -> ReferenceSolution | None:
        """The answer of the declaration on ``X / s`` (:attr:`scaling`), at the weights of
        :meth:`~hiercvx._reference_scaling.FeatureScaling.weights` in turn, certified on this
        problem; the first certified by the relative gap, else the best other one, else
        ``None`` (this problem's own tries follow)."""
        scaling, kept = self.scaling, None
        if scaling is None:
            return None
        for step in scaling.steps(self):
            sol = self._scaled_try(scaling, step, name, options, verbose, solver_options)
            if sol is not None and sol.converged_by == RELATIVE_GAP:
                return sol
            if sol is not None and (kept is None or sol.objective < kept.objective):
                kept = sol
        return kept

    def _scaled_try(self, scaling, step, name, options, verbose, solver_options):
        """One solve of the rebuilt problem at ``step.value``, its point and duals mapped back
        (:class:`~hiercvx._reference_scaling.Step`) and certified here: with its bound times
        ``step.bound`` in this problem's units, or this problem's own bound."""
        t0 = time.perf_counter()
        value = step.value
        try:
            inner = scaling.rebuilt(value)._solve_with(name, options, verbose, solver_options)
        except SolverError as exc:
            if exc.status in ("not-dcp", "licence", "unsupported"):
                raise
            logger.info("%s: the problem on X / %g failed (%s)", self.name, scaling.factor, exc)
            return None
        other = None
        if step.partner is not None:  # the second point of the linear path
            try:
                other = scaling.rebuilt(step.partner)._solve_with(name, options, verbose,
                                                                  solver_options).values
            except SolverError as exc:
                logger.info("%s: the problem on X / %g failed (%s)", self.name, scaling.factor, exc)
                return None
        values = scaling.values(inner.values, step, other)
        if values is None:
            return None
        duals = {k: d * scaling.factor ** scaling.objective_power * step.duals
                 for k, d in inner.duals.items()}
        ctx = _Context(name, inner.problem_class, options, verbose, self._objective_at_zero(), t0)
        label = f"features divided by {scaling.factor:g}, {scaling.weight}={value:.3g}, "
        try:
            lower = scaling.objective(inner.lower_bound) * step.bound if step.bound is not None \
                else float(self._lower_bound(values, duals))
            return self._judge(ctx, values, lower,
                               inner.status, lambda values, objective, lower, test: replace(
                                   inner, objective=objective, lower_bound=lower, values=values,
                                   weights=self._weights(values), converged_by=test, name=self.name,
                                   duals=duals,
                                   solver_objective=float("nan"), solver_objective_meaning="",
                                   extras={**inner.extras, "at_zero": ctx.at_zero,
                                           "settings": label + str(inner.extras.get("settings"))}))
        except (SolverError, ArithmeticError, ValueError, IndexError, KeyError) as exc:
            logger.info("%s: the point of the problem on X / %g does not certify (%s)", self.name,
                        scaling.factor, exc)
            return None

    def _default_settings(self, name: str) -> dict:
        """``{}``, or the solver's own defaults of what the tight settings change when an
        earlier try changed them (CVXPY keeps a warm-started solver's settings)."""
        if name not in self._settings_changed:
            return {}
        return dict(_solver_defaults(name, self._settings_changed.pop(name)))

    def _objective_at_zero(self) -> float | None:
        """The objective recomputed with every variable at zero: for every hiercvx formulation
        the primal objective at zero weights (a dual's ``alpha = 0`` gives ``W = 0``), used as
        ``at_zero`` of :func:`~hiercvx.result.relative_gap`; ``None`` when it is not a finite
        number (a formulation whose zero point has no value)."""
        zeros = {k: np.zeros(v.shape) for k, v in self.variables.items()}
        try:
            with np.errstate(all="ignore"):
                value = float(self._objective(zeros))
        except (ArithmeticError, ValueError, TypeError, IndexError, KeyError,
                np.linalg.LinAlgError):
            return None
        return value if np.isfinite(value) else None

    def _run(self, ctx: _Context, attempt: _Try) -> None:
        """One solver call, its failures mapped to hiercvx's errors."""
        name, options = ctx.name, attempt.settings
        try:
            with warnings.catch_warnings():  # "solution may be inaccurate": judged after
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                if name == "HIGHS":
                    silence_highs_banner()
                quiet = {}
                if name == "GUROBI" and "env" not in options:   # no licence banner on stdout
                    env = quiet_gurobi_env()
                    quiet = {"env": env} if env is not None else {}
                attempt.problem.solve(solver=name, verbose=ctx.verbose, **options, **quiet)
        except cp.error.SolverError as exc:
            msg = str(exc)
            if name == "GUROBI" and any(k in msg for k in GUROBI_LIMIT_MARKERS):
                raise SolverUnavailableError(
                    f"Gurobi's size-limited licence ({gurobi_limit_text()}) cannot take this "
                    f"problem; use the open-source solver='"
                    f"{OPEN_SOURCE_ALTERNATIVE.get(ctx.klass, 'CLARABEL')}'",
                    status="licence", solver=name) from exc
            raise SolverError(f"{self.name}: the solver failed: {msg}", status="error", solver=name) from exc
        except cp.error.DCPError as exc:  # a declaration bug, not a user error
            raise SolverError(f"{self.name}: problem is not DCP: {exc}", status="not-dcp",
                              solver=name) from exc
        except (TypeError, ValueError) as exc:  # CVXPY's answer to an unknown solver option
            if attempt.label == "as asked":
                raise InputError(f"{self.name}: solver {name} refused the options "
                                 f"{sorted(options)}: {exc}") from exc
            raise SolverError(f"{self.name}: the solver refused the settings {sorted(options)}: "
                              f"{exc}", status="error", solver=name) from exc

    def _point(self, ctx: _Context, attempt: _Try) -> tuple[dict, dict]:
        """The returned primal values and the named constraints' duals (rescaled), each checked
        to exist and be finite."""
        status, name = attempt.problem.status, ctx.name
        if status not in _POINT_RETURNED:
            raise SolverError(f"{self.name}: the solver returned no solution; try another solver "
                              "or rescale the data", status=status, solver=name)
        values = {k: (None if v.value is None else np.array(v.value, dtype=float))
                  for k, v in self.variables.items()}
        for k, v in values.items():
            if v is None or not np.all(np.isfinite(v)):
                raise SolverError(f"{self.name}: variable {k} has no finite value", status=status,
                                  solver=name)
        duals = {}
        for k, c in self.constraints.items():
            if c.dual_value is None:
                raise SolverError(f"{self.name}: constraint {k} has no dual value", status=status,
                                  solver=name)
            duals[k] = np.array(c.dual_value, dtype=float) * attempt.dual_scale
            if not np.all(np.isfinite(duals[k])):
                raise SolverError(f"{self.name}: dual of {k} is not finite", status=status, solver=name)
        return values, duals

    def _certify(self, ctx: _Context, attempt: _Try) -> ReferenceSolution:
        """One solve of ``attempt.problem`` and its certificate (:meth:`_judge`).  The solver's
        status only says whether it returned a point: an ``optimal_inaccurate`` point whose
        recomputed objective and dual bound prove the gap is certified."""
        self._run(ctx, attempt)
        values, duals = self._point(ctx, attempt)
        lower = float(self._lower_bound(values, duals))
        return self._judge(ctx, values, lower, attempt.problem.status,
                           lambda values, objective, lower, test: self._solution(
                               ctx, attempt, values, duals, objective, lower, test))

    def _judge(self, ctx: _Context, values: dict, lower: float, status: str, make) -> ReferenceSolution:
        """The certificate of a primal point ``values`` with the bound ``lower``: feasibility,
        finite numbers, the recomputed objective (polished along its ray,
        :func:`~hiercvx._reference_scaling.radial_polish`, when the relative gap is over
        tolerance) and a test of :func:`~hiercvx.result.certified_by`; ``make(values,
        objective, lower, test)`` builds the answer, else ``SolverError``."""
        name, opts = ctx.name, ctx.options
        if self._infeasibility is not None:
            resid = float(self._infeasibility(values))
            if not resid <= opts.feas_tol:
                raise SolverError(f"{self.name}: returned point violates the constraints by {resid:.3g} "
                                  f"(> feas_tol={opts.feas_tol:g})", status=status, solver=name)
        objective = float(self._objective(values))
        if not (np.isfinite(objective) and np.isfinite(lower)):
            raise SolverError(f"{self.name}: objective or lower bound is not finite "
                              f"({objective}, {lower})", status=status, solver=name)
        if not reached(relative_gap(objective, lower), opts.gap_tol):
            values, objective = radial_polish(self._objective, values, objective,
                                              self._infeasibility, opts.feas_tol)
        test = certified_by(objective, lower, opts.gap_tol, ctx.at_zero)
        gap = relative_gap(objective, lower)
        if not test:
            what = "the duality gap" if gap > opts.gap_tol else \
                ("the gap against the decrease from zero weights (the objective is almost its "
                 "value at zero: C tiny or X scaled down)")
            exc = SolverError(f"{self.name}: {what} is over gap_tol={opts.gap_tol:g}; tighten the "
                              "solver's tolerances or try another solver", status=status,
                              solver=name, gap=gap)
            exc.objective_scale = gap_scale(objective, lower)
            raise exc
        if gap < -max(opts.gap_tol, opts.weak_duality_slack):
            raise SolverError(f"{self.name}: the lower bound exceeds the recomputed objective, which "
                              "weak duality forbids: the certificate is inconsistent", status=status,
                              solver=name, gap=gap)
        return make(values, objective, lower, test)

    def _solution(self, ctx: _Context, attempt: _Try, values, duals, objective, lower, test):
        """The certified :class:`ReferenceSolution` with its times and extras."""
        problem = attempt.problem
        stats = problem.solver_stats
        wall = time.perf_counter() - ctx.t0
        solve_time = stats.solve_time if stats is not None and stats.solve_time is not None else wall
        compile_time = getattr(problem, "compilation_time", None) or 0.0
        extras = {"solver_status": problem.status, "settings": attempt.label}
        if ctx.at_zero is not None:
            extras["at_zero"] = ctx.at_zero
        return Solution(
            objective=objective, lower_bound=lower, status=OPTIMAL, solver=ctx.name,
            tol=ctx.options.gap_tol, build_time=self.declare_time + compile_time,
            solve_time=float(solve_time), weights=self._weights(values), values=values,
            duals=duals, solver_objective=float(problem.value) * attempt.dual_scale,
            solver_objective_meaning=self._solver_objective_meaning(),
            problem_class=ctx.klass, name=self.name, extras=extras, converged_by=test)

    def _solver_objective_meaning(self) -> str:
        """:attr:`solver_objective_meaning` with the parameters' current values filled in."""
        text = getattr(self, "solver_objective_meaning", "")  # absent from older pickles
        if not text:
            return ""
        values = {k: float(p.value) for k, p in self.parameters.items()
                  if p.size == 1 and p.value is not None}
        return text.format(**values)


def _warn_absolute_only(name: str, sol: ReferenceSolution) -> None:
    """A ``ConvergenceWarning`` for an answer certified by the decrease from zero only: its
    relative gap is over ``tol``, and the certificate bounds ``objective - optimum`` by a
    number at round-off of the objective at ``W = 0``, no more."""
    at_zero = sol.extras.get("at_zero")
    warnings.warn(
        f"{name}: certified only by the decrease from zero weights: objective - lower bound = "
        f"{sol.objective - sol.lower_bound:.3g}, against the objective at W = 0 ({at_zero:.3g}); "
        f"the relative gap is {sol.gap:.3g}, over tol={sol.tol:g}, so the objective "
        f"({sol.objective:.6g}) may be far above the optimum. Either the optimum is zero (every "
        "margin met), or the problem is nearly hard-margin at this scale (C times the squared "
        "feature scale beyond a conic solver's precision): lower C or standardize X, or compare "
        "with the fast solver's certificate", ConvergenceWarning, stacklevel=4)


def _solver_defaults(name: str, keys) -> dict:
    """The solver's own values of the settings ``keys`` (those the tight settings change)."""
    if name == "CLARABEL" and clarabel is not None:
        defaults = clarabel.DefaultSettings()
        return {k: getattr(defaults, k) for k in keys
                if k != "accept_unknown" and hasattr(defaults, k)}
    return {}


def _reason(exc: SolverError) -> str:
    """A failed try's reason without the problem's name (said once in the message)."""
    text = str(exc)
    _, sep, rest = text.partition(": ")
    return rest if sep else text
