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
* the relative gap ``(objective - lower_bound) / max(|objective|, |lower_bound|)``, also
  measured against the decrease still possible from zero weights (``at_zero``, the objective
  recomputed with every variable at zero; :func:`hiercvx.result.relative_gap`), is within
  ``gap_tol`` -- meaningful at every scale of ``C`` and ``X``;

otherwise it retries (tight tolerances, then the objective divided by its magnitude) and
then raises :class:`~hiercvx.exceptions.SolverError` naming the status, the solver, the gap
and each try's reason.  The tolerances and the retries are the fields of :class:`Options`
(``solve(options=Options(...))``).  Also here: the choice of a solver per problem class
(:data:`SOLVER_PREFERENCE`), the size of a problem before compiling, Gurobi's licence limits.
The declarations' text and LaTeX renderings are :mod:`hiercvx.describe`.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Mapping

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.constraints import PSD, ExpCone

try:  # optional: the pip wheel carries a size-limited licence
    import gurobipy as gp
except ImportError:  # pragma: no cover - gurobipy is installed by default
    gp = None

try:  # CVXPY's default QP/SOCP solver; read for its default settings
    import clarabel
except ImportError:  # pragma: no cover - a CVXPY dependency
    clarabel = None

from .describe import Formulation, Symbol, Term, describe_parts, render_latex, render_text
from .exceptions import InputError, ProblemTooLargeError, SolverError, SolverUnavailableError
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

#: Solver capabilities as data: preference order per problem class (first installed wins).
SOLVER_PREFERENCE = {
    "LP": ("CLARABEL", "HIGHS", "ECOS", "SCS", "GUROBI"),
    "QP": ("CLARABEL", "OSQP", "ECOS", "SCS", "GUROBI"),
    "SOCP": ("CLARABEL", "ECOS", "SCS", "GUROBI"),
    "SDP": ("CLARABEL", "SCS"),
    "EXP": ("CLARABEL", "ECOS", "SCS"),
    "MILP": ("HIGHS", "GUROBI", "SCIPY", "ECOS_BB"),
    "MIQP": ("GUROBI", "ECOS_BB"),
    "MISOCP": ("GUROBI", "ECOS_BB"),
}

_GUROBI_LIMIT_MARKERS = ("size-limited", "Model too large", "10010", "restricted license")


#: The limits of Gurobi's size-limited licence (the one the ``gurobipy`` pip wheel carries) on
#: LP, QP, SOCP, MILP and MIQP models: at most 2000 variables and 2000 constraints (linear and
#: quadratic together), and at most 200 variables as soon as the model has a quadratic term (a
#: QP objective, a second-order cone: CVXPY passes every cone as a quadratic constraint over
#: auxiliary variables).  Nonzeros are not limited.  ``tests/test_gurobi.py`` checks each bound.
GUROBI_SIZE_LIMITS = {"variables": 2000, "constraints": 2000, "quadratic_variables": 200}

#: the open-source solver to name when Gurobi's licence refuses a problem of a class
OPEN_SOURCE_ALTERNATIVE = {"LP": "HIGHS", "QP": "CLARABEL", "SOCP": "CLARABEL", "SDP": "CLARABEL",
                           "EXP": "CLARABEL", "MILP": "HIGHS", "MIQP": "ECOS_BB", "MISOCP": "ECOS_BB"}


def installed_solvers() -> tuple[str, ...]:
    """Solvers that CVXPY can import here."""
    return tuple(cp.installed_solvers())


@functools.lru_cache(maxsize=1)
def gurobi_licence() -> str:
    """``"full"``, ``"size-limited"``, ``"not installed"`` or ``"unusable: <reason>"``.

    Probed once per process with an empty model one variable past the size-limited licence's
    limit (:data:`GUROBI_SIZE_LIMITS`); a restricted licence answers with error 10010.
    """
    if gp is None or "GUROBI" not in installed_solvers():
        return "not installed"
    try:
        with gp.Env(empty=True) as env:
            env.setParam("OutputFlag", 0)
            env.start()
            with gp.Model(env=env) as m:
                m.addVars(GUROBI_SIZE_LIMITS["variables"] + 1)
                m.optimize()
    except Exception as exc:  # gurobipy.GurobiError, or a licence server's error
        msg = str(exc)
        if any(k in msg for k in _GUROBI_LIMIT_MARKERS):
            return "size-limited"
        return f"unusable: {msg}"
    return "full"


def gurobi_limit_text() -> str:
    """The measured limits of the size-limited licence, in words."""
    lim = GUROBI_SIZE_LIMITS
    return (f"at most {lim['variables']} variables and {lim['constraints']} constraints, "
            f"{lim['quadratic_variables']} variables with a quadratic term (QP, SOCP)")


def usable_solvers() -> dict[str, str]:
    """Installed solvers and whether they work: name -> ``"ok"`` or the reason they do not.

    Gurobi is probed (:func:`gurobi_licence`), so a restricted licence is reported here with
    its limits rather than in the middle of a solve.
    """
    out = {name: "ok" for name in installed_solvers()}
    if "GUROBI" in out:
        licence = gurobi_licence()
        if licence == "size-limited":
            out["GUROBI"] = f"size-limited licence ({gurobi_limit_text()})"
        elif licence != "full":
            out["GUROBI"] = licence
    return out


def gurobi_size(problem) -> dict:
    """The size of ``problem`` as Gurobi receives it from CVXPY: ``{"variables",
    "constraints", "quadratic", "integer"}``.

    Read from CVXPY's problem data for Gurobi (the compilation is cached, so the solve that
    follows does not compile again): the QP route passes ``n_var`` variables and the equality
    and inequality rows; the conic route adds, per second-order cone of dimension k, k
    auxiliary variables, k linear coupling rows and one quadratic constraint.
    """
    data, _, _ = problem.get_problem_data(solver="GUROBI")
    P = data.get("P")
    quadratic = P is not None and (P.nnz if sp.issparse(P) else np.count_nonzero(P)) > 0
    if "n_var" in data:  # QP route
        n_var, n_con = int(data["n_var"]), int(data["n_eq"]) + int(data["n_ineq"])
    else:  # conic route
        dims = data["dims"]
        soc = [int(k) for k in dims.soc]
        n_var = int(data["A"].shape[1]) + sum(soc)
        n_con = int(dims.zero) + int(dims.nonneg) + sum(soc) + len(soc)
        quadratic = quadratic or bool(soc)
    integer = bool(len(data.get("int_vars_idx", ())) or len(data.get("bool_vars_idx", ())))
    return {"variables": n_var, "constraints": n_con, "quadratic": quadratic, "integer": integer}


def check_gurobi_size(problem, what: str = "the problem") -> None:
    """Raise :class:`SolverUnavailableError` (status ``"licence"``) when Gurobi's licence is
    size-limited and ``problem`` exceeds :data:`GUROBI_SIZE_LIMITS`; naming the limit and the
    open-source solver of the problem's class.  A full licence is not checked."""
    if gurobi_licence() != "size-limited":
        return
    try:
        size = gurobi_size(problem)
    except cp.error.SolverError as exc:  # e.g. an SDP: Gurobi takes no PSD cone
        klass = problem_class(problem)
        raise SolverUnavailableError(
            f"Gurobi cannot solve {what} ({klass}: {exc}); use the open-source "
            f"solver='{OPEN_SOURCE_ALTERNATIVE.get(klass, 'CLARABEL')}'", status="unsupported",
            solver="GUROBI") from None
    lim = GUROBI_SIZE_LIMITS
    max_vars = lim["quadratic_variables"] if size["quadratic"] else lim["variables"]
    over = []
    if size["variables"] > max_vars:
        kind = " with a quadratic term (QP objective or cone)" if size["quadratic"] else ""
        over.append(f"{size['variables']:,} variables{kind} > {max_vars:,}")
    if size["constraints"] > lim["constraints"]:
        over.append(f"{size['constraints']:,} constraints > {lim['constraints']:,}")
    if over:
        klass = problem_class(problem)
        alt = OPEN_SOURCE_ALTERNATIVE.get(klass, "CLARABEL")
        raise SolverUnavailableError(
            f"{what} is too large for Gurobi's size-limited licence ({gurobi_limit_text()}): "
            f"as compiled for Gurobi it has {'; '.join(over)}. Use the open-source "
            f"solver='{alt}' for this {klass}, or a full Gurobi licence", status="licence",
            solver="GUROBI")


def problem_class(problem) -> str:
    """``"LP"``, ``"QP"``, ``"SOCP"``, ``"SDP"``, ``"EXP"`` or a mixed-integer class.

    Decided from the expression tree, without compiling (compiling twice would double
    the build time that the benchmarks report).
    """
    def atoms(expr):
        yield type(expr).__name__
        for a in getattr(expr, "args", ()):
            yield from atoms(a)

    names = set(atoms(problem.objective))
    for c in problem.constraints:
        names.update(atoms(c))
    psd = any(isinstance(c, PSD) for c in problem.constraints) or any(
        v.attributes.get("PSD") or v.attributes.get("NSD") for v in problem.variables())
    exp = any(isinstance(c, ExpCone) for c in problem.constraints) or bool(
        names & {"exp", "log", "entr", "kl_div", "log_sum_exp", "logistic", "rel_entr"})
    if problem.is_mixed_integer():
        if problem.is_lp():
            return "MILP"
        return "MIQP" if problem.is_qp() else "MISOCP"
    if psd or names & {"lambda_max", "lambda_min", "normNuc", "log_det", "matrix_frac"}:
        return "SDP"
    if exp:
        return "EXP"
    if problem.is_lp():
        return "LP"
    if problem.is_qp():
        return "QP"
    return "SOCP"


def choose_solver(problem, solver: str | None = None) -> str:
    """The solver to use: ``solver`` if given (checked to be installed), else the first
    installed one in :data:`SOLVER_PREFERENCE` for the problem's class."""
    available = installed_solvers()
    if solver is not None:
        name = str(solver).upper()
        if name not in available:
            hint = ", ".join(available)
            raise SolverUnavailableError(f"solver {solver!r} is not installed; installed: {hint}",
                                         solver=name)
        return name
    klass = problem_class(problem)
    for name in SOLVER_PREFERENCE[klass]:
        if name in available:
            return name
    raise SolverUnavailableError(f"no installed solver handles a {klass} problem; install one of "
                                 f"{', '.join(SOLVER_PREFERENCE[klass])}")


def check_size(n_variables: int, n_constraints: int, nnz: int, max_size: int | None = None,
               what: str = "the reference problem", *, default_max_size: int = 5_000_000) -> None:
    """Refuse a reference whose estimated size exceeds ``max_size`` nonzeros, before compiling.

    Parameters
    ----------
    n_variables, n_constraints, nnz : int
        The estimated size: scalar variables, constraint rows, and nonzeros of the constraint
        matrix plus the quadratic term.
    max_size : int or None
        The limit on ``nnz``; builders take ``max_size=`` to raise it.  None: ``default_max_size``.
    what : str
        The problem's name in the error message.
    default_max_size : int, default 5_000_000
        The limit when ``max_size`` is None: a problem CVXPY compiles and an interior-point
        solver factors within a workstation's memory; beyond it the fast solvers are the tool.

    Raises
    ------
    ProblemTooLargeError
        When ``nnz`` exceeds the limit; the message says how to proceed.
    """
    if max_size is not None and (isinstance(max_size, (bool, np.bool_))
                                 or not isinstance(max_size, (int, np.integer)) or max_size < 1):
        raise InputError(f"max_size must be None or a positive integer (a number of nonzeros), got "
                         f"{max_size!r}")
    limit = default_max_size if max_size is None else int(max_size)
    size = int(nnz)
    if size > limit:
        raise ProblemTooLargeError(
            f"{what} would have about {n_variables:,} variables, {n_constraints:,} constraints and "
            f"{size:,} nonzeros, over the limit of {limit:,}. Use the fast solver "
            f"(solver='fast'), subsample the data, or pass max_size={size} (or larger) to build it anyway")


# ---------------------------------------------------------------------- size and structure
@dataclass(frozen=True)
class ProblemSize:
    """The size of a CVXPY problem before compilation: scalar variables, scalar constraint
    rows, and nonzeros of the constant matrices and vectors in its expressions."""

    variables: int
    constraints: int
    nonzeros: int

    def __str__(self):
        return (f"{self.variables:,} variables, {self.constraints:,} constraints, "
                f"{self.nonzeros:,} nonzeros")


def _constant_nonzeros(expr, seen: set) -> int:
    if isinstance(expr, cp.Constant):
        if id(expr) in seen:
            return 0
        seen.add(id(expr))
        value = expr.value
        return int(value.nnz) if sp.issparse(value) else int(np.count_nonzero(value))
    return sum(_constant_nonzeros(a, seen) for a in getattr(expr, "args", ()))


def problem_size(problem) -> ProblemSize:
    """:class:`ProblemSize` of ``problem``, read from its expression tree (no compilation)."""
    seen: set = set()
    nnz = _constant_nonzeros(problem.objective, seen)
    nnz += sum(_constant_nonzeros(c, seen) for c in problem.constraints)
    return ProblemSize(sum(int(v.size) for v in problem.variables()),
                       sum(int(c.size) for c in problem.constraints), nnz)


#: A certified reference returns the one result type of hiercvx (:class:`hiercvx.result.Solution`).
ReferenceSolution = Solution


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
        (also against the decrease possible from zero weights) that certifies: 1e-6 is what
        interior-point solvers reach at their default settings on these problems.
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
        ``max(1, |objective|)`` tests see (a magnitude outside :attr:`rescale_outside`)."""
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
    formulation : optional :class:`~hiercvx.describe.Formulation`, the problem as the paper
        writes it (objective and constraint families with equation numbers, the legend) for
        :meth:`describe`
    """

    def __init__(self, problem, *, variables: dict, objective: Callable, lower_bound: Callable,
                 weights: Callable, constraints: dict | None = None, parameters: dict | None = None,
                 infeasibility: Callable | None = None, name: str = "", build_time: float = 0.0,
                 data: dict | None = None, formulation: Formulation | None = None):
        self.problem = problem
        self.formulation = formulation
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
        #: (:mod:`hiercvx._reference_scaling`; set by the builder)
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
        :attr:`formulation`; without one, the CVXPY structure: named constraints and their
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
            :data:`SOLVER_PREFERENCE` for the problem's class in order and returns the first
            certified answer (``failed_solvers`` on the solution says what failed first); the
            ``SolverError`` raised when all fail lists each one's reason.
        gap_tol, feas_tol : float, optional
            Override :attr:`Options.gap_tol` and :attr:`Options.feas_tol`.
        verbose : bool
            The solver's own log.
        options : Options, optional
            The certificate's tolerances and the retries (:class:`Options`).
        **solver_options
            Settings passed to the solver; given, they are the only settings tried.

        Returns
        -------
        ReferenceSolution
            Certified: a point was returned, every value is finite, the point is feasible and
            the recomputed gap is within ``gap_tol``.  Each solver is tried with its default
            settings, then :attr:`Options.tight_settings`, then with the objective divided by
            its magnitude.  ``sol.extras`` records ``at_zero``, the solver's own
            ``solver_status`` and the ``settings`` that certified.
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
        ``solver_options``, then the only try), then :attr:`Options.tight_settings`, then the
        objective divided by its magnitude (an interior-point solver measures its gap against
        ``max(1, |objective|)``, so a tiny objective, ``C n`` tiny, stops it early).  The first
        answer certified by the relative gap returns; an answer certified only by the decrease
        from zero (:func:`~hiercvx.result.certified_by`) is kept while the next tries look for
        the relative gap, and returned when none finds it.  Else raises the last try's
        ``SolverError``, naming every try's reason."""
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
        for value, factor in scaling.weights(self):
            sol = self._scaled_try(scaling, value, factor, name, options, verbose, solver_options)
            if sol is not None and sol.converged_by == RELATIVE_GAP:
                return sol
            if sol is not None and (kept is None or sol.objective < kept.objective):
                kept = sol
        return kept

    def _scaled_try(self, scaling, value, factor, name, options, verbose, solver_options):
        """One solve of the rebuilt problem at weight ``value``, its point mapped back and
        certified here with its bound times ``factor`` (in this problem's units)."""
        t0 = time.perf_counter()
        try:
            inner = scaling.rebuilt(value)._solve_with(name, options, verbose, solver_options)
        except SolverError as exc:
            if exc.status in ("not-dcp", "licence", "unsupported"):
                raise
            logger.info("%s: the problem on X / %g failed (%s)", self.name, scaling.factor, exc)
            return None
        values = scaling.values(inner.values, factor)
        if values is None:
            return None
        ctx = _Context(name, inner.problem_class, options, verbose, self._objective_at_zero(), t0)
        label = f"features divided by {scaling.factor:g}, {scaling.weight}={value:.3g}, "
        try:
            return self._judge(ctx, values, scaling.objective(inner.lower_bound) * factor,
                               inner.status, lambda values, objective, lower, test: replace(
                                   inner, objective=objective, lower_bound=lower, values=values,
                                   weights=self._weights(values), converged_by=test, name=self.name,
                                   duals={k: d * scaling.factor ** scaling.objective_power * factor
                                          for k, d in inner.duals.items()},
                                   solver_objective=float("nan"),
                                   extras={**inner.extras, "at_zero": ctx.at_zero,
                                           "settings": label + str(inner.extras.get("settings"))}))
        except SolverError as exc:
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
                attempt.problem.solve(solver=name, verbose=ctx.verbose, **options)
        except cp.error.SolverError as exc:
            msg = str(exc)
            if name == "GUROBI" and any(k in msg for k in _GUROBI_LIMIT_MARKERS):
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
            problem_class=ctx.klass, name=self.name, extras=extras, converged_by=test)


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
