"""``hiercvx verify``: does every fast solver agree with its certified reference?

For every registered method (:mod:`hiercvx.methods`) and each of its built-in problems (one
per structure it supports: tree, DAG, multi-label, partial paths, sparse inputs), solve the
reference primal and, where declared, the dual, run each fast solver on the method's model,
and compare:

- the reference is certified (``Solution`` raises otherwise) and its primal and dual optima
  agree: ``|primal - dual| <= DUAL_RTOL * max(|primal|, |dual|)``;
- each fast solver converged, its objective is within the solver's registered ``rtol`` of
  the reference optimum, and weak duality holds across the two
  (:func:`hiercvx.testing.fast_vs_reference`).

``"inference"`` adds label-set inference (:func:`verify_inference`): program (19) of the NHSVM
paper, plain and loss-augmented, on a tree and a DAG, its certified CVXPY reference against the
tree DP, HiGHS ILP / LP and enumeration.

One :class:`Row` per (method, case, fast solver); :func:`format_table` prints them as the
table of the issue: method | paper eq. | case | reference objective | primal - dual | gap |
fast solver | fast objective | rel. diff | speedup | status.  The table prints a primal - dual
difference or a gap within ``ROUNDOFF`` of zero (relative to the objective) as 0: the last
bits of two floating-point sums, not a disagreement; the rows (and the JSON) keep the numbers.  *speedup* is the reference's
time (building, compiling and solving the CVXPY problem) over the fast solver's, the faster of
two runs (the first call of a process may include compiling the solver's kernels).

``gurobi=True`` adds one more independent route where Gurobi is usable: the reference primal
solved by Gurobi (its own certificate; a fixed point of HPSI's non-convex DC loop) must agree
with the default solver's within ``DUAL_RTOL``; the ``gurobi`` column shows the relative
difference, or why Gurobi was not used (a size-limited licence refuses most problems over 200
variables).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict, dataclass

import numpy as np
from tqdm.auto import tqdm

from . import inference
from . import methods as registry
from .exceptions import HierCVXError, InputError, SolverUnavailableError
from .reference import gurobi_licence
from .result import comparison_scale
from .solvers.dc import FIXED_POINT
from .testing import fast_vs_reference
from .testing.inference import inference_problems

__all__ = ["Row", "verify", "verify_inference", "verify_method", "format_table", "write_json",
           "equation_text", "DUAL_RTOL", "ROUNDOFF"]

logger = logging.getLogger(__name__)

#: relative difference allowed between the certified primal and dual optima (each within
#: its own gap tolerance of 1e-6, the two solved by different routes)
DUAL_RTOL = 1e-5

#: relative size under which :func:`format_table` prints a primal - dual difference or a gap as
#: 0: a few units in the last place of double precision, far below any solver's tolerance
ROUNDOFF = 1e-12


@dataclass
class Row:
    """One line of the verification table (``nan`` where a number does not apply)."""

    method: str
    equations: str
    case: str
    reference_objective: float
    primal_minus_dual: float
    reference_gap: float
    fast_solver: str
    fast_objective: float
    rel_diff: float
    speedup: float
    status: str
    reference_seconds: float = float("nan")
    fast_seconds: float = float("nan")
    #: the Gurobi route (``verify(gurobi=True)``): relative difference of its certified
    #: optimum to the reference's, or why it was not used; ``"-"`` when not asked for
    gurobi: str = "-"

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _timed_warm(fn):
    """``fn`` run twice, its second output and the faster time: a fast solver's first call in a
    process may include compiling its kernels, which is not its speed."""
    first, t_first = _timed(fn)
    out, t_second = _timed(fn)
    return out, min(t_first, t_second)


def _reference(method, case):
    """Certified primal (and dual) on ``case``: ``(primal, primal - dual, problem, seconds)``."""
    # verbose=False: the references' own progress bars (cutting planes) stay under verify's
    primal, seconds = _timed(lambda: method.build("primal", case).solve(verbose=False))
    diff, problem = float("nan"), ""
    if "dual" in method.references:
        dual = method.build("dual", case).solve(verbose=False)
        diff = primal.objective - dual.lower_bound
        if abs(diff) > DUAL_RTOL * comparison_scale(primal.objective, dual.lower_bound):
            problem = (f"primal optimum {primal.objective:.10g} and dual optimum "
                       f"{dual.lower_bound:.10g} differ by {diff:.3e}")
    return primal, diff, problem, seconds


def gurobi_route(method, case, primal) -> tuple[str, str]:
    """Gurobi on the primal reference of ``case``: ``(cell, problem)`` -- the relative
    difference to ``primal``'s certified optimum (``problem`` names a disagreement over
    ``DUAL_RTOL``), or why Gurobi was not used (licence size, not installed, failure)."""
    licence = gurobi_licence()
    if licence not in ("full", "size-limited"):
        return licence, ""
    reference = method.build("primal", case)
    try:
        sol = reference.solve(solver="GUROBI")
    except SolverUnavailableError as exc:
        return {"licence": "over the licence", "unsupported": "unsupported class"}.get(
            exc.status, "unavailable"), ""
    except HierCVXError as exc:
        return "failed", f"Gurobi route failed: {exc}"
    diff = abs(sol.objective - primal.objective) / comparison_scale(sol.objective, primal.objective)
    # a non-convex reference (HPSI's DC loop) stops at a fixed point, not a certified optimum
    what = "DC fixed point" if sol.status == FIXED_POINT else "certified optimum"
    problem = "" if diff <= DUAL_RTOL else (f"Gurobi's {what} {sol.objective:.10g} and the "
                                            f"reference's {primal.objective:.10g} differ by {diff:.3e}")
    return f"{diff:.1e}", problem


def _failure(exc: Exception) -> str:
    """The status text of a failed solve: a hiercvx error by its message (it names the fix),
    any other exception by its type and message (its traceback goes to the debug log)."""
    if isinstance(exc, HierCVXError):
        return str(exc)
    logger.debug("verify: %s", type(exc).__name__, exc_info=exc)
    return f"{type(exc).__name__}: {exc}"


def verify_method(method, quick: bool = True, progress=None, gurobi: bool = False) -> list[Row]:
    """The rows of one registered method over its built-in cases (``gurobi``: add the Gurobi
    route, ``gurobi_route``)."""
    rows = []
    equations = method.equations["primal"]
    if "dual" in method.equations:
        equations += " / " + method.equations["dual"].split(" (")[0]
    for case in method.cases(quick):
        # a name that starts with its structure ("tree n=36 d=4") says it already
        label = case.name if case.name.split()[0].rstrip(",") == case.structure \
            else f"{case.structure}: {case.name}"
        try:
            ref, diff, problem, t_ref = _reference(method, case)
        except Exception as exc:  # any failure is a row of the table, the other rows are kept
            rows.append(Row(method.name, equations, label, float("nan"), float("nan"), float("nan"),
                            "-", float("nan"), float("nan"), float("nan"),
                            f"REFERENCE FAILED: {_failure(exc)}"))
            continue
        grb = "-"
        if gurobi:
            grb, grb_problem = gurobi_route(method, case, ref)
            problem = problem or grb_problem
        if not method.fast_solvers:
            rows.append(Row(method.name, equations, label, ref.objective, diff, ref.gap, "-",
                            float("nan"), float("nan"), float("nan"), problem or "ok", t_ref,
                            gurobi=grb))
        for name in method.fast_solvers:
            fast_solver = method.fast_solvers[name]
            try:
                fast, t_fast = _timed_warm(lambda: method.run_fast(name, case))
            except Exception as exc:  # any failure is a row of the table, the other rows are kept
                rows.append(Row(method.name, equations, label, ref.objective, diff, ref.gap, name,
                                float("nan"), float("nan"), float("nan"),
                                f"FAST FAILED: {_failure(exc)}", t_ref, gurobi=grb))
                continue
            reason = problem or fast_vs_reference(fast, ref, fast_solver.rtol)
            rel = abs(fast.objective - ref.objective) / comparison_scale(fast.objective, ref.objective)
            rows.append(Row(method.name, equations, label, ref.objective, diff, ref.gap, name,
                            float(fast.objective), rel, t_ref / max(t_fast, 1e-9),
                            "ok" if not reason else f"DISAGREE: {reason}", t_ref, t_fast, gurobi=grb))
        if progress is not None:
            progress.update(1)
    return rows


#: the fast routes of label-set inference and the hierarchies they take
INFERENCE_ROUTES = {"dp": "tree", "ilp": "any", "lp": "any", "enumerate": "any"}


def verify_inference(quick: bool = True, progress=None, problems=None) -> list[Row]:
    """Label-set inference (NHSVM program (19), plain and loss-augmented (18), on a tree and on a
    DAG): the certified CVXPY reference (:func:`hiercvx.inference.reference`) against each fast
    route of :func:`hiercvx.inference.best_label_set` (tree DP, HiGHS ILP, LP with ILP fallback,
    enumeration).  Objectives are ``-sum_i (s(y_i) + Delta(y_i, t_i))``: the program's cost."""
    rows = []
    if problems is None:
        problems = inference_problems(seed=0, n=12 if quick else 40)
    for problem in problems:
        try:
            ref, t_ref = _timed(problem.reference)
        except HierCVXError as exc:
            rows.append(Row("inference", "(19)", problem.name, float("nan"), float("nan"), float("nan"),
                            "-", float("nan"), float("nan"), float("nan"), f"REFERENCE FAILED: {exc}"))
            continue
        best = -float(np.sum(ref.extras["value"]))
        for route, needs in INFERENCE_ROUTES.items():
            if needs == "tree" and not problem.H.is_tree:
                continue
            sets, t_fast = _timed_warm(lambda: inference.best_label_set(problem.S, problem.H, route,
                                                                        **problem.options))
            mine = -float(np.sum(problem.values(sets)))
            valid = bool(np.all(inference.is_valid_label_set(sets, problem.H)))
            rel = abs(mine - best) / comparison_scale(mine, best)
            status = "ok" if valid and rel <= 1e-9 else (
                "DISAGREE: " + ("a returned set is not in Y_m" if not valid else
                                f"cost {mine!r} vs the certified optimum {best!r}"))
            rows.append(Row("inference", "(19)", problem.name, best, ref.objective - ref.lower_bound,
                            ref.gap, route, mine, rel, t_ref / max(t_fast, 1e-9), status, t_ref, t_fast))
        if progress is not None:
            progress.update(1)
    return rows


def _wanted(names) -> list[str]:
    """``names`` in order, each once (all when ``None``); an unknown name is refused, listing
    every name :func:`verify` takes."""
    valid = [*registry.names(), "inference"]
    if isinstance(names, str):   # one name, not its letters
        names = [names]
    wanted = list(dict.fromkeys(names or valid))
    unknown = [n for n in wanted if n not in valid]
    if unknown:
        raise InputError(f"unknown method {unknown[0]!r}; verify takes the registered methods "
                         f"and 'inference': {', '.join(valid)}")
    return wanted


def verify(names=None, quick: bool = True, verbose: bool = True, gurobi: bool = False) -> list[Row]:
    """Verify the registered methods ``names`` and, as ``"inference"``, label-set inference (all
    when ``None``; a name given twice runs once); a tqdm bar over the cases unless
    ``verbose=False``; ``gurobi=True`` adds the Gurobi route (``gurobi_route``)."""
    wanted = _wanted(names)
    chosen = [registry.get(n) for n in wanted if n != "inference"]
    labelling = inference_problems(seed=0, n=12 if quick else 40) if "inference" in wanted else []
    n_cases = sum(len(m.cases(quick)) for m in chosen) + len(labelling)
    rows = []
    with tqdm(total=n_cases, desc="verify", unit="case", disable=not verbose, leave=False) as bar:
        for method in chosen:
            bar.set_postfix_str(method.name)
            rows.extend(verify_method(method, quick=quick, progress=bar, gurobi=gurobi))
        if "inference" in wanted:
            bar.set_postfix_str("inference")
            rows.extend(verify_inference(quick=quick, progress=bar, problems=labelling))
    return rows


def _num(x, fmt):
    return "-" if x is None or not np.isfinite(x) else format(x, fmt)


def _roundoff(x, scale=1.0):
    """``x``, or 0 when it is within :data:`ROUNDOFF` of zero relative to ``scale``."""
    if x is None or not np.isfinite(x):
        return x
    bound = ROUNDOFF * (max(1.0, abs(scale)) if np.isfinite(scale) else 1.0)
    return 0.0 if abs(x) <= bound else x


def equation_text(role: str, eq: str) -> str:
    """``"primal (4.10)"``: a registry entry ``role -> eq`` as the tables print it; an ``eq``
    that names its role already (``"notes: primal (= LIBLINEAR MCSVM_CS)"``) as it is."""
    return eq if re.search(rf"\b{re.escape(role)}\b", eq, re.I) else f"{role} {eq}"


def _speedup(x) -> str:
    """``12.3x``; below 1, two significant digits (``0.038x``), so a slower solver never
    reads as ``0.0x``."""
    if x is None or not np.isfinite(x):
        return "-"
    return format(x, ".1f" if x >= 1 else ".2g") + "x"


def format_table(rows) -> str:
    """The rows as a fixed-width table (a primal - dual difference or a gap within
    :data:`ROUNDOFF` of zero printed as 0), then one line per disagreement naming its case."""
    head = ("method", "paper eq.", "case", "reference obj.", "primal - dual", "gap", "fast solver",
            "fast obj.", "rel. diff", "speedup", "status")
    body = [(r.method, r.equations, r.case, _num(r.reference_objective, ".8g"),
             _num(_roundoff(r.primal_minus_dual, r.reference_objective), ".1e"),
             _num(_roundoff(r.reference_gap), ".1e"), r.fast_solver,
             _num(r.fast_objective, ".8g"), _num(r.rel_diff, ".1e"),
             _speedup(r.speedup),
             "ok" if r.ok else r.status.split(":")[0]) for r in rows]
    if any(r.gurobi != "-" for r in rows):  # the optional Gurobi route, before the status
        head = head[:-1] + ("gurobi",) + head[-1:]
        body = [line[:-1] + (r.gurobi,) + line[-1:] for line, r in zip(body, rows)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip()
             for line in (head, tuple("-" * w for w in widths), *body)]
    bad = [r for r in rows if not r.ok]
    lines.append("")
    lines.append(f"{len(rows) - len(bad)} of {len(rows)} agree")
    for r in bad:
        lines.append(f"  {r.method} / {r.case} / {r.fast_solver}: {r.status}")
    return "\n".join(lines)


def write_json(rows, path) -> None:
    """The rows as a JSON list (``NaN`` written as ``null``)."""
    def clean(v):
        return None if isinstance(v, float) and not np.isfinite(v) else v

    with open(path, "w", encoding="utf-8") as fh:
        json.dump([{k: clean(v) for k, v in asdict(r).items()} | {"ok": r.ok} for r in rows], fh,
                  indent=1)

