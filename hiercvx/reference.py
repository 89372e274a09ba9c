"""Certified exact references: a CVXPY problem plus the means to certify its answer.

A formulation module declares a :class:`ReferenceProblem`: the ``cvxpy.Problem``, the
named variables, a numpy function that recomputes the objective from the returned
weights (never trusting the solver's number), and a numpy function that evaluates a
*dual feasible point* built from the solver's duals, which gives a lower bound by weak
duality.  :meth:`ReferenceProblem.solve` returns a :class:`ReferenceSolution` only when

* the solver reports ``optimal``,
* every returned value is finite,
* the primal point is feasible (where the formulation supplies a residual), and
* the relative gap ``(objective - lower_bound) / max(1, |objective|)`` is within ``gap_tol``;

otherwise it raises :class:`~hiercvx.exceptions.SolverError` naming the status, the solver
and the gap.
"""

from __future__ import annotations

import logging
import warnings
import time
from typing import Any, Callable

import numpy as np

from .exceptions import InputError, ProblemTooLargeError, SolverError, SolverUnavailableError
from .result import OPTIMAL, Solution, relative_gap

logger = logging.getLogger(__name__)

__all__ = [
    "ReferenceProblem",
    "ReferenceSolution",
    "choose_solver",
    "installed_solvers",
    "usable_solvers",
    "problem_class",
    "check_size",
    "DEFAULT_MAX_SIZE",
    "SOLVER_PREFERENCE",
]

#: Default limit on the estimated number of nonzeros of an exact reference (constraint
#: matrix plus quadratic term).  Builders take ``max_size=`` to raise it.
DEFAULT_MAX_SIZE = 5_000_000

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


def installed_solvers() -> tuple[str, ...]:
    """Solvers that CVXPY can import here."""
    import cvxpy as cp

    return tuple(cp.installed_solvers())


def usable_solvers() -> dict[str, str]:
    """Installed solvers and whether they work: name -> ``"ok"`` or the reason they do not.

    Gurobi is probed with a model just past the size-limited licence (2000 variables), so
    a restricted licence is reported here rather than in the middle of a solve.
    """
    out = {}
    for name in installed_solvers():
        out[name] = "ok"
    if "GUROBI" in out:
        try:  # pragma: no cover - depends on a licence
            import gurobipy as gp

            with gp.Env(empty=True) as env:
                env.setParam("OutputFlag", 0)
                env.start()
                with gp.Model(env=env) as m:
                    m.addVars(2001)
                    m.optimize()
        except Exception as exc:  # pragma: no cover
            msg = str(exc)
            if any(k in msg for k in _GUROBI_LIMIT_MARKERS):
                out["GUROBI"] = "size-limited licence (at most 2000 variables/constraints)"
            else:
                out["GUROBI"] = f"unusable: {msg}"
    return out


def problem_class(problem) -> str:
    """``"LP"``, ``"QP"``, ``"SOCP"``, ``"SDP"``, ``"EXP"`` or a mixed-integer class.

    Decided from the expression tree, without compiling (compiling twice would double
    the build time that the benchmarks report).
    """
    from cvxpy.constraints import PSD, ExpCone

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
               what: str = "the reference problem") -> None:
    """Refuse a reference whose estimated size exceeds ``max_size`` nonzeros, before compiling."""
    limit = DEFAULT_MAX_SIZE if max_size is None else int(max_size)
    size = int(nnz)
    if size > limit:
        raise ProblemTooLargeError(
            f"{what} would have about {n_variables:,} variables, {n_constraints:,} constraints and "
            f"{size:,} nonzeros, over the limit of {limit:,}. Use the fast solver "
            f"(solver='fast'), subsample the data, or pass max_size={size} (or larger) to build it anyway")


#: A certified reference returns the one result type of hiercvx (:class:`hiercvx.result.Solution`).
ReferenceSolution = Solution


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
    """

    def __init__(self, problem, *, variables: dict, objective: Callable, lower_bound: Callable,
                 weights: Callable, constraints: dict | None = None, parameters: dict | None = None,
                 infeasibility: Callable | None = None, name: str = "", build_time: float = 0.0,
                 data: dict | None = None):
        self.problem = problem
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

    def __repr__(self):
        return (f"ReferenceProblem({self.name!r}, {len(self.variables)} variables, "
                f"{len(self.problem.constraints)} constraint groups, parameters {list(self.parameters)})")

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

    def solve(self, solver: str | None = None, *, gap_tol: float = 1e-6, feas_tol: float = 1e-6,
              verbose: bool = False, **solver_options) -> ReferenceSolution:
        """Solve, certify, and return a :class:`ReferenceSolution` (or raise ``SolverError``).

        ``solver=None`` tries the installed solvers of :data:`SOLVER_PREFERENCE` for the
        problem's class in order and returns the first certified answer (the certificate does
        not depend on the solver, so a fallback cannot weaken it; ``failed_solvers`` on the
        solution says what failed first); the ``SolverError`` raised when all fail lists each
        one's reason.  A named ``solver`` is the only one tried.
        """
        if solver is not None or solver_options:  # options are solver-specific: no fallback
            return self._solve_with(choose_solver(self.problem, solver), gap_tol, feas_tol, verbose,
                                    solver_options)
        available = installed_solvers()
        candidates = [n for n in SOLVER_PREFERENCE[problem_class(self.problem)] if n in available]
        if not candidates:
            choose_solver(self.problem)  # raises SolverUnavailableError with the install hint
        failed, first = [], None
        for name in candidates:
            try:
                with warnings.catch_warnings(record=True) as caught:  # a failed try's notes go
                    warnings.simplefilter("always")                    # into failed_solvers
                    sol = self._solve_with(name, gap_tol, feas_tol, verbose, {})
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
        # the first choice's failure (its status, solver and gap), with the fallbacks' reasons
        if failed[1:]:
            first.args = (f"{first} -- the fallbacks failed too: "
                          + "; ".join(f"{n}: {msg}" for n, msg in failed[1:]),)
        raise first

    def _solve_with(self, name: str, gap_tol: float, feas_tol: float, verbose: bool,
                    solver_options: dict) -> ReferenceSolution:
        """One solve with the solver ``name``, then the certificate (see :meth:`solve`)."""
        import cvxpy as cp

        klass = problem_class(self.problem)
        t0 = time.perf_counter()
        try:
            self.problem.solve(solver=name, verbose=verbose, **solver_options)
        except cp.error.SolverError as exc:
            msg = str(exc)
            if name == "GUROBI" and any(k in msg for k in _GUROBI_LIMIT_MARKERS):
                raise SolverUnavailableError(
                    "Gurobi's size-limited licence cannot take this problem; use an open-source "
                    "solver such as solver='CLARABEL' (QP/SOCP/SDP) or solver='HIGHS' (LP/MILP)",
                    status="licence", solver=name) from exc
            raise SolverError(f"{self.name}: the solver failed: {msg}", status="error", solver=name) from exc
        except cp.error.DCPError as exc:  # a declaration bug, not a user error
            raise SolverError(f"{self.name}: problem is not DCP: {exc}", status="not-dcp",
                              solver=name) from exc
        wall = time.perf_counter() - t0
        status = self.problem.status
        if status != cp.OPTIMAL:
            raise SolverError(f"{self.name}: the solver did not reach an optimal solution; try "
                              "another solver or rescale the data", status=status, solver=name)
        values = {k: (None if v.value is None else np.array(v.value, dtype=float))
                  for k, v in self.variables.items()}
        for k, v in values.items():
            if v is None or not np.all(np.isfinite(v)):
                raise SolverError(f"{self.name}: variable {k} has no finite value", status=status,
                                  solver=name)
        duals = {}
        for k, c in self.constraints.items():
            dv = c.dual_value
            if dv is None:
                raise SolverError(f"{self.name}: constraint {k} has no dual value", status=status,
                                  solver=name)
            duals[k] = np.array(dv, dtype=float)
            if not np.all(np.isfinite(duals[k])):
                raise SolverError(f"{self.name}: dual of {k} is not finite", status=status, solver=name)
        if self._infeasibility is not None:
            resid = float(self._infeasibility(values))
            if not resid <= feas_tol:
                raise SolverError(f"{self.name}: returned point violates the constraints by {resid:.3g} "
                                  f"(> feas_tol={feas_tol:g})", status=status, solver=name)
        objective = float(self._objective(values))
        lower = float(self._lower_bound(values, duals))
        gap = relative_gap(objective, lower)
        if not (np.isfinite(objective) and np.isfinite(lower)):
            raise SolverError(f"{self.name}: objective or lower bound is not finite "
                              f"({objective}, {lower})", status=status, solver=name)
        if gap > gap_tol:
            raise SolverError(f"{self.name}: the duality gap is over gap_tol={gap_tol:g}; tighten the "
                              "solver's tolerances or try another solver", status=status, solver=name,
                              gap=gap)
        if gap < -max(gap_tol, 1e-7):
            raise SolverError(f"{self.name}: the lower bound exceeds the recomputed objective, which "
                              "weak duality forbids: the certificate is inconsistent", status=status,
                              solver=name, gap=gap)
        stats = self.problem.solver_stats
        solve_time = stats.solve_time if stats is not None and stats.solve_time is not None else wall
        compile_time = getattr(self.problem, "compilation_time", None) or 0.0
        return Solution(
            objective=objective, lower_bound=lower, status=OPTIMAL, solver=name, tol=gap_tol,
            build_time=self.declare_time + compile_time, solve_time=float(solve_time),
            weights=self._weights(values), values=values, duals=duals,
            solver_objective=float(self.problem.value), problem_class=klass, name=self.name)
