"""Solver choice and problem sizes for the exact references (:mod:`hiercvx.reference`
re-exports every name): solver capabilities as data (``SOLVER_PREFERENCE``), the problem
class of a CVXPY problem, its size before compiling, and Gurobi's size-limited licence."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from cvxpy.constraints import PSD, ExpCone

try:  # optional: the pip wheel carries a size-limited licence
    import gurobipy as gp
except ImportError:  # pragma: no cover - gurobipy is installed by default
    gp = None

from .exceptions import InputError, ProblemTooLargeError, SolverError, SolverUnavailableError

__all__ = ["SOLVER_PREFERENCE", "GUROBI_SIZE_LIMITS", "OPEN_SOURCE_ALTERNATIVE", "installed_solvers",
           "gurobi_licence", "gurobi_limit_text", "usable_solvers", "gurobi_size", "check_gurobi_size",
           "problem_class", "choose_solver", "check_size", "ProblemSize", "problem_size",
           "silence_highs_banner", "quiet_gurobi_env"]

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

GUROBI_LIMIT_MARKERS = ("size-limited", "Model too large", "10010", "restricted license")


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
    limit (``GUROBI_SIZE_LIMITS``); a restricted licence answers with error 10010.
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
        if any(k in msg for k in GUROBI_LIMIT_MARKERS):
            return "size-limited"
        return f"unusable: {msg}"
    return "full"


def quiet_gurobi_env():
    """A started Gurobi environment that prints nothing, for CVXPY's ``env`` option; ``None``
    without gurobipy, or when Gurobi refuses to start one (the solve then reports why).

    gurobipy's default environment prints its licence banner to stdout when a process builds
    its first model, and CVXPY uses that environment unless given one: the banner would land in
    the middle of a command's output.  CVXPY still sets each model's ``OutputFlag`` from its
    ``verbose``, so a verbose solve shows Gurobi's log as before.
    """
    if gp is None:
        return None
    try:
        return gp.Env(params={"OutputFlag": 0})
    except Exception:  # gurobipy.GurobiError, or a licence server's error
        return None


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
    """Raise :class:`~hiercvx.exceptions.SolverUnavailableError` (status ``"licence"``) when
    Gurobi's licence is size-limited and ``problem`` exceeds ``GUROBI_SIZE_LIMITS``; naming the
    limit and the open-source solver of the problem's class.  A full licence is not checked."""
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
    except (ValueError, TypeError) as exc:  # CVXPY's compilation failed (a degenerate problem)
        raise SolverError(f"CVXPY cannot compile {what} for Gurobi: {exc}", status="error",
                          solver="GUROBI") from exc
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
    installed one in ``SOLVER_PREFERENCE`` for the problem's class."""
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
               what: str = "the reference problem", *, default_max_size: int = 5_000_000,
               grows_to: int | None = None, growth: str = "") -> None:
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
    grows_to : int or None
        For a problem that grows while it is solved (a cutting-plane master gains cuts every
        round), a bound on the nonzeros it can reach; a refusal names it (not ``nnz``) as the
        limit to pass, so that the advice admits the whole solve.  None: the problem is built
        once.
    growth : str
        Why the problem can reach ``grows_to``, said in the error message.

    Raises
    ------
    ProblemTooLargeError
        When ``nnz`` exceeds the limit; the message says how to proceed, and its ``size`` is
        the limit that admits the problem (``max(nnz, grows_to)``).
    """
    if max_size is not None and (isinstance(max_size, (bool, np.bool_))
                                 or not isinstance(max_size, (int, np.integer)) or max_size < 1):
        raise InputError(f"max_size must be None or a positive integer (a number of nonzeros), got "
                         f"{max_size!r}")
    limit = default_max_size if max_size is None else int(max_size)
    size = int(nnz)
    if size > limit:
        admits = size if grows_to is None else max(size, int(grows_to))
        grows = "" if admits == size else f"; {growth}: up to {admits:,} nonzeros"
        problem = (f"{what} would have about {n_variables:,} variables, {n_constraints:,} "
                   f"constraints and {size:,} nonzeros, over the limit of {limit:,}{grows}. "
                   "Use the fast solver (solver='fast'), subsample the data, or ")
        raise ProblemTooLargeError.over_limit(problem, admits, "max_size={}")


# ---------------------------------------------------------------------- size and structure
@dataclass(frozen=True)
class ProblemSize:
    """The size of a CVXPY problem before compilation: scalar variables, scalar constraint
    rows, and nonzeros of the constant matrices and vectors in its expressions."""

    variables: int
    constraints: int
    nonzeros: int

    def __str__(self):
        return ", ".join(f"{count:,} {word if count == 1 else word + 's'}" for count, word in
                         ((self.variables, "variable"), (self.constraints, "constraint"),
                          (self.nonzeros, "nonzero")))


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


@functools.cache
def silence_highs_banner() -> None:
    """Build the process's first ``highspy.Highs`` with file descriptor 1 sent to
    ``/dev/null``.  HiGHS writes its banner there from C++ when the first instance of a process
    is built, before any option (``output_flag``) can act; CVXPY's HiGHS interface builds one
    per solve, so without this the first MILP or LP of a process prints it.  Later instances
    print nothing."""
    try:
        import highspy
    except ImportError:  # pragma: no cover - highspy comes with cvxpy's HiGHS support
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):  # no usable descriptor 1: nothing to protect
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            try:
                highspy.Highs()
            finally:
                os.dup2(saved, 1)
    finally:
        os.close(saved)
