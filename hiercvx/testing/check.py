"""``check_solver``: one call that says whether a user's solver solves a registered method's
problem, checked against the certified reference on generated problems of every structure the
method supports and on one probe per model option (the idea of scikit-learn's
``check_estimator``, for optimization problems).

A problem passes when the objective recomputed at the user's weights is within ``rtol`` of the
certified optimum (plus the reference's own gap), the objective the solver reports (if any) is
finite and the one its weights give, ``fit`` left its inputs (copies of the problem's arrays) as
they were, the solver (when it says) converged with a status that stands behind its answer, the
lower bound it reports (if finite) lies below its own objective and the certified optimum, and --
where the method's objective is strongly convex -- the weights lie within the certified
neighbourhood of the unique optimum (``weight_rtol``; ``hiercvx.testing._judge``).  Where the
reference is a DC fixed point of a nonconvex method (HPSI), an objective below the reference's is
a better point and passes; one above fails.  A problem
the user's ``fit`` cannot take (an option missing from its signature) is skipped loudly: named
in the result, a :class:`SkippedProblemWarning` under pytest, a failure with ``strict=True``.
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError, InputTypeError
from ..methods import Case
from ..result import comparison_scale
from ._judge import WeightJudgement, judge_weights
from .diagnose import diagnose, parameter_neighbours
from .diagnostics import (UserResult, build_report, missing_parts, objective_at, read_result,
                          row_labels)
from .problems import Problem, as_method, is_local, problems_for

__all__ = ["CONVERGED_STATUSES", "Outcome", "SkippedProblemWarning", "SolverCheckError", "check_solver",
           "run_one", "same_failure", "same_input"]

#: what each model option means, for the line naming the options every failing problem has
OPTION_MEANING = {
    "sample_weight": "sample i's loss is weighted by C * sample_weight_i",
    "class_weight": "sample i's loss is weighted by C * class_weight[y_i]",
    "fit_intercept": "a bias per row through a constant feature of value intercept_scaling whose "
                     "weight is regularized, as LIBLINEAR's",
    "intercept_scaling": "the bias feature's value s: b = s * w_b with w_b regularized",
    "rescaling": "slack rescaling divides the slack by the loss, margin rescaling adds the loss "
                 "to the margin",
    "loss": "the loss Delta between label sets",
    "attributes": "the class attributes Lambda (one row per class over the nodes)",
    "kernel": "the kernel: weights are expansion coefficients, not feature weights",
    "alpha": "the parameter of the K heuristic (6)",
    "variant": "the NHSVM variant (10) or (13)",
    "classes": "the classes the loss ranges over",
}


#: statuses (lower-cased) of a solver that stands behind its answer; "" is a result without one
CONVERGED_STATUSES = ("", "optimal", "fixed_point", "separated", "converged", "solved", "success")


class SkippedProblemWarning(UserWarning):
    """A generated problem was not run: the user's ``fit`` does not take one of its options."""


class SolverCheckError(AssertionError):
    """``check_solver`` failed.  ``outcomes``: every problem's :class:`Outcome`; ``failed``: the
    failing ones; ``diagnoses``: the verified :class:`~hiercvx.testing.diagnose.Diagnosis` list of
    the first failing problem."""

    def __init__(self, message: str, outcomes: list, diagnoses: list):
        super().__init__(message)
        self.outcomes = outcomes
        self.failed = [o for o in outcomes if o.status == "failed"]
        self.skipped = [o for o in outcomes if o.status == "skipped"]
        self.diagnoses = diagnoses


@dataclass
class Outcome:
    """One problem's verdict: ``status`` (``"ok"``, ``"failed"``, ``"skipped"``), the user's
    objective (recomputed at the returned weights when there are weights), the reference's
    objective and lower bound, ``reasons`` (what failed, one line each) with ``kinds`` (what kind
    of failure each is: ``"raised"``, ``"objective"``, ``"certificate"`` ...), ``skipped`` (why
    the problem was not run) and ``weights`` (the
    :class:`~hiercvx.testing._judge.WeightJudgement` where the method has a unique optimum)."""

    problem: Problem
    user_objective: float = float("nan")
    reference_objective: float = float("nan")
    lower_bound: float = float("nan")
    reasons: list = field(default_factory=list)
    user: UserResult | None = None
    skipped: str = ""
    weights: WeightJudgement | None = None
    kinds: list = field(default_factory=list)

    def fail(self, kind: str, reason: str) -> None:
        """Record a failure: its ``kind`` and the line that says what failed."""
        self.kinds.append(kind)
        self.reasons.append(reason)

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else ("failed" if self.reasons else "ok")

    @property
    def ok(self) -> bool:
        """Passed (a skipped problem is not ok: it was not checked)."""
        return self.status == "ok"

    @property
    def relative_difference(self) -> float:
        return (abs(self.user_objective - self.reference_objective)
                / comparison_scale(self.user_objective, self.reference_objective))

    def __repr__(self):  # compact: never the arrays
        head = f"Outcome({self.problem.method.name} on {self.problem.name}"
        if self.skipped:
            return f"{head}: skipped, {self.skipped})"
        verdict = "ok" if self.ok else "; ".join(self.reasons)[:200]
        return (f"{head}: your objective {self.user_objective:.8g}, reference "
                f"{self.reference_objective:.8g}: {verdict})")


def _check_tolerance(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not math.isfinite(float(value)) or float(value) <= 0:
        raise InputError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _accepted(fit) -> tuple[set, bool]:
    """The keyword names ``fit`` takes and whether it takes ``**kwargs``."""
    params = inspect.signature(fit).parameters.values()
    return {p.name for p in params}, any(p.kind == p.VAR_KEYWORD for p in params)


def _fit_options(fit, problem: Problem) -> tuple[dict, str]:
    """The keywords to pass ``fit`` and, when it cannot take a model option the problem needs,
    why the problem is skipped."""
    names, var_kw = _accepted(fit)
    missing = [k for k in problem.options if k not in names and not var_kw]
    if any(k in problem.params for k in missing):
        raise InputError(f"your fit must take the method's parameters {sorted(problem.params)} as "
                         f"keywords; it does not take {[k for k in missing if k in problem.params]}")
    if missing:
        return {}, f"fit takes no {', '.join(missing)}"
    return dict(problem.options), ""


def _check_registry(problem: Problem, ref, rtol: float) -> None:
    """The model's objective at the reference's own weights must be the reference's objective,
    or weights cannot be judged by it (a fault of the registry entry, not of the user)."""
    if ref.weights is None:
        return
    at_ref = objective_at(problem.model(), read_result(ref), problem.params)
    slack = rtol * comparison_scale(float(ref.objective)) + float(ref.objective - ref.lower_bound)
    if abs(at_ref - float(ref.objective)) > slack:
        raise InputError(f"method {problem.method.name!r}: its model's objective at the reference's "
                         f"own weights is {at_ref:.8g}, the reference reports {float(ref.objective):.8g} "
                         f"(on {problem.name}); the registry entry's model and reference disagree, so "
                         "solvers of this method cannot be checked by their weights yet")


def _shape_reason(problem: Problem, user: UserResult, ref) -> str:
    ref_w = np.asarray(ref.weights)
    if np.shape(user.weights) == ref_w.shape:
        try:
            objective_at(problem.model(), user, problem.params)
        except InputError as exc:   # a part the objective needs is missing, non-finite values
            text = str(exc)
            return ("your" + text[3:]) if text.startswith("the ") else text
        return ""
    labels = row_labels(problem.model(), ref_w, problem.H)
    return (f"weights of shape {np.shape(user.weights)}; the method's are {ref_w.shape} "
            f"(rows: {', '.join(map(str, labels[:8]))}{' ...' if len(labels) > 8 else ''})")


def _objective_reason(outcome: Outcome, slack: float, rtol: float, local: bool = False) -> str:
    """Why the user's objective is not the reference's ("" when it is, within ``slack``).  With
    a ``local`` reference (a DC fixed point of a nonconvex method) an objective below the
    reference's is a better point of the method's objective, not a failure."""
    if not math.isfinite(outcome.user_objective):
        return (f"your objective is {outcome.user_objective}, not a finite number: a solver's "
                "objective is finite at any finite weights")
    diff = outcome.user_objective - outcome.reference_objective
    if abs(diff) <= slack or (local and diff < 0):
        return ""
    head = f"relative difference {outcome.relative_difference:.2e} > rtol {rtol:g}; your objective is "
    if local:
        return head + ("above the reference's DC fixed point (the method is nonconvex: its reference "
                       "is a fixed point of the DC algorithm started at the convex solution, not a "
                       "certified optimum): your weights are a worse point of this method's objective")
    where = ("below the certified lower bound: it is not this method's objective (loss, C, "
             "sample weights, regularizer)" if outcome.user_objective < outcome.lower_bound - slack
             else "above the optimum: the weights are suboptimal for this method's problem")
    return head + where


def _reported_reason(problem: Problem, user: UserResult, at_weights: float, slack: float) -> str:
    """Why the reported objective differs from the weights' objective: another parameter value,
    where the weights give the reported number at one, or else another point or objective."""
    head = (f"your solver reports objective {user.reported:.8g} but its weights give "
            f"{at_weights:.8g}")
    for name, value, _ in parameter_neighbours(problem):
        try:
            there = objective_at(problem.model(), user, {**problem.params, name: value})
        except Exception:  # noqa: BLE001 -- a neighbour that cannot be evaluated says nothing
            continue
        if abs(there - user.reported) <= slack:
            return (f"{head}; at {name} = {value:.6g} they give {there:.8g}, the number it reports: "
                    f"it evaluated its objective with {name} = {value:.6g}, not "
                    f"{problem.params[name]:g}")
    return (f"{head}: either the weights are not the point it evaluated (check how they are "
            "recovered from the dual: signs, scaling) or it evaluates another objective (loss, C, "
            "sample weights, regularizer)")


def _copy(value):
    """A copy of an input for ``fit``, so that a ``fit`` writing into it leaves the problem intact."""
    if sp.issparse(value) or isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple, dict, set)):
        return copy.deepcopy(value)
    return value


def same_input(a, b) -> bool:
    """Whether an input still equals the original it was copied from."""
    if sp.issparse(a) or sp.issparse(b):
        return (sp.issparse(a) and sp.issparse(b) and a.shape == b.shape
                and (a != b).nnz == 0)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=True))
        except TypeError:   # object arrays (labels)
            return bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_input(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_input(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 -- an object without a usable equality is not compared
        return True


def _call_fit(fit, problem: Problem, options: dict, outcome: Outcome):
    """``fit``'s result on copies of the problem's inputs (None when it raised, with the reason
    recorded); a ``fit`` that changes its inputs in place fails, the problem stays as it was."""
    given = {"X": problem.X, "Y": problem.Y, **options}
    copies = {name: _copy(value) for name, value in given.items()}
    try:
        result = fit(copies["X"], copies["Y"], problem.H,
                     **{k: copies[k] for k in options})
    except Exception as exc:  # noqa: BLE001 -- the user's code failing is a finding, not a crash of the check
        outcome.fail("raised", f"fit raised {type(exc).__name__}: {str(exc)[:300]}")
        return None
    changed = [name for name, value in given.items()
               if copies[name] is not value and not same_input(copies[name], value)]
    if changed:
        outcome.fail(
            "mutated", f"fit modified its input{'s' if len(changed) > 1 else ''} {', '.join(changed)} in place: "
            "a solver must leave the caller's arrays as they were (work on a copy, e.g. "
            "X = X.copy() before scaling); the answer is judged on the original problem")
    if result is None:
        outcome.fail("no_result", "fit returned None: return the weights, a dict {'weights': W, ...}, "
                               "a hiercvx Solution or a float objective")
    return result


def run_one(fit, problem: Problem, rtol: float = 1e-4, weight_rtol: float = 1e-3) -> Outcome:
    """Run ``fit`` on copies of ``problem``'s inputs and compare with the certified reference."""
    options, skipped = _fit_options(fit, problem)
    outcome = Outcome(problem, skipped=skipped)
    if skipped:
        return outcome
    ref = problem.reference()
    outcome.reference_objective, outcome.lower_bound = float(ref.objective), float(ref.lower_bound)
    _check_registry(problem, ref, rtol)
    result = _call_fit(fit, problem, options, outcome)
    if result is None:
        return outcome
    try:
        user = read_result(result)
    except InputError as exc:
        outcome.fail("unreadable", f"fit returned a result that cannot be read: {exc}")
        return outcome
    outcome.user = user
    if user.weights is None and user.reported is None:
        outcome.fail("no_result", "fit returned no weights and no objective (weights=None, "
                                  "objective=None): return the weights, a dict {'weights': W, ...}, "
                                  "a hiercvx Solution or a float objective")
        return outcome
    _judge_answer(problem, ref, user, outcome, rtol, weight_rtol)
    return outcome


def _judge_answer(problem: Problem, ref, user: UserResult, outcome: Outcome, rtol: float,
                  weight_rtol: float) -> None:
    """Record on ``outcome`` what is wrong with a readable answer: its objective (recomputed at
    its weights), the objective it reports, its convergence flag and certificate, its weights."""
    gap = outcome.reference_objective - outcome.lower_bound
    slack = rtol * comparison_scale(outcome.reference_objective) + gap
    if user.reported is not None and not math.isfinite(user.reported):
        outcome.fail("reported", f"your solver reports objective {user.reported}, not a finite number")
    if user.weights is None:
        outcome.user_objective = user.reported
    else:
        reason = _shape_reason(problem, user, ref)
        if reason:
            outcome.fail("shape", reason)
            outcome.user_objective = user.reported if user.reported is not None else float("nan")
            return
        outcome.user_objective = objective_at(problem.model(), user, problem.params)
        if user.reported is not None and math.isfinite(user.reported) \
                and abs(user.reported - outcome.user_objective) > slack:
            outcome.fail("reported", _reported_reason(problem, user, outcome.user_objective, slack))
    if not user.converged:
        outcome.fail("converged", "your solver says it did not converge")
    for reason in _certificate_reasons(user, outcome, ref):
        outcome.fail("certificate", reason)
    reason = _objective_reason(outcome, slack, rtol, local=is_local(ref))
    if reason:
        if user.weights is not None or math.isfinite(outcome.user_objective):
            outcome.fail("objective", reason)
    elif user.weights is not None:
        best = read_result(ref)
        outcome.weights = judge_weights(problem.model(), user.weights, user.extras.get("intercept"),
                                        best.weights, best.extras.get("intercept"), gap, weight_rtol)
        if outcome.weights is not None and not outcome.weights.ok:
            outcome.fail("weights", outcome.weights.reason())


def _certificate_reasons(user: UserResult, outcome: Outcome, ref, roundoff: float = 1e-9) -> list:
    """What is false in the certificate the user's result carries: a status that is not one of
    :data:`CONVERGED_STATUSES`, a finite lower bound above the result's own objective or above
    the reference's certified optimum (a valid lower bound lies below the optimum, which lies
    below any point's objective).  ``roundoff``: the relative slack of those comparisons, for
    rounding only (a lower bound holds at any iterate: stopping early does not loosen it), on
    top of the reference's own gap.  A DC fixed point (:func:`~hiercvx.testing.problems.is_local`)
    certifies no optimum, so there a bound is compared with the result's own objective only."""
    out = []
    if user.status is not None and user.status.strip().lower() not in CONVERGED_STATUSES:
        out.append(f"your solver reports status {user.status!r}, not one of a solver that stands "
                   f"behind its answer ({', '.join(CONVERGED_STATUSES[1:])})")
    lb = user.lower_bound
    if lb is None or lb == -math.inf:      # no bound: nothing is certified
        return out
    if math.isnan(lb):
        return out + ["your solver reports lower bound nan, not a number (report -inf for no bound)"]
    mine = outcome.user_objective if math.isfinite(outcome.user_objective) else user.reported
    mine = mine if mine is not None and math.isfinite(mine) else None
    ref_obj, ref_gap = outcome.reference_objective, outcome.reference_objective - outcome.lower_bound
    scale = comparison_scale(ref_obj, 0.0 if mine is None else mine)
    if mine is not None and lb > mine + roundoff * scale:
        out.append(f"your solver's lower bound {lb:.10g} exceeds its own objective {mine:.10g} (by "
                   f"{lb - mine:.3g}, a gap of {(mine - lb) / scale:.2e}): no lower bound exceeds the "
                   "objective of a point, so the certificate is false")
    if not is_local(ref) and lb > ref_obj + roundoff * scale + ref_gap:
        out.append(f"your solver's lower bound {lb:.10g} exceeds the certified optimum: the "
                   f"reference's point has objective {ref_obj:.10g} (certified within {ref_gap:.3g}), "
                   f"so no valid lower bound is above it; yours is {lb - ref_obj:.3g} above: the "
                   "certificate is false")
    return out


def _as_problems(method, problems, random_state: int, structures) -> list:
    if problems is None:
        return problems_for(method, structures=structures, seeds=(random_state,))
    if isinstance(problems, bool):
        raise InputError(f"problems must be None, a positive number of seeds per structure, or a list "
                         f"of hiercvx.testing.Problem; got {problems!r} (omit it for the default "
                         "problems)")
    if isinstance(problems, (int, np.integer)):
        if problems < 1:
            raise InputError(f"problems must be a positive number of seeds, got {problems}")
        return problems_for(method, structures=structures,
                            seeds=range(random_state, random_state + int(problems)))
    if isinstance(problems, (str, bytes, Problem, Case)) or not hasattr(problems, "__iter__"):
        raise InputError("problems must be None, a positive number of seeds per structure, or a list "
                         f"of hiercvx.testing.Problem / hiercvx.methods.Case; got "
                         f"{type(problems).__name__} (wrap a single problem in a list: problems=[p])")
    out = []
    for p in problems:
        if isinstance(p, Case):
            p = Problem(method, p.structure, p.X, p.Y, p.H, dict(p.model_options), dict(p.params))
        if not isinstance(p, Problem):
            raise InputError("problems must be None, a number of seeds per structure, or a list of "
                             f"hiercvx.testing.Problem / hiercvx.methods.Case; got {type(p).__name__}")
        if p.method.name != method.name:
            raise InputError(f"check_solver was asked for method {method.name!r} but was given a "
                             f"problem of method {p.method.name!r} ({p.name}); generate the problems "
                             f"with problems_for({method.name!r}, ...) or check the method "
                             f"{p.method.name!r}")
        out.append(p)
    if not out:
        raise InputError("problems is empty: give at least one problem, or omit it for the default "
                         "problems")
    return out


def shrink(fit, outcome: Outcome, rtol: float, weight_rtol: float,
           sizes=(3, 4, 6, 8, 12, 16, 24), budget: int = 14) -> Outcome:
    """The smallest failing variant of a failing generated problem: fewer samples first (the
    ``sizes`` below the problem's, smallest first), then fewer features (same structure,
    options and seed), at most ``budget`` re-runs of ``fit``; ``outcome`` itself when none is
    smaller.  A smaller variant counts only when it fails the same way (:func:`same_failure`):
    one that fails for another reason (``fit`` refusing data too small for it) is passed over."""
    problem = outcome.problem
    if problem.template is None:
        return outcome
    best = outcome
    for n in (s for s in sizes if s < problem.n):
        budget -= 1
        if budget < 0:
            break
        found = _attempt(fit, outcome, problem, rtol, weight_rtol, n=n, d=problem.d)
        if found is not None:
            best = found
            break
    for d in range(1, best.problem.d):
        budget -= 1
        if budget < 0:
            break
        found = _attempt(fit, outcome, best.problem, rtol, weight_rtol, n=best.problem.n, d=d)
        if found is not None:
            best = found
            break
    return best


def same_failure(original: Outcome, other: Outcome) -> bool:
    """Whether ``other`` fails the way ``original`` does: its failures include ``original``'s
    first kind (``Outcome.kinds``), and ``fit`` raised there only if it raised on
    ``original``."""
    if other.status != "failed" or not original.kinds:
        return False
    raised_only_there = "raised" in other.kinds and "raised" not in original.kinds
    return original.kinds[0] in other.kinds and not raised_only_there


def _attempt(fit, original: Outcome, problem: Problem, rtol: float, weight_rtol: float, n: int,
             d: int):
    """The outcome on the resized problem when it is valid and fails as ``original`` does,
    else None."""
    try:
        smaller = problem.resized(n=n, d=d)
        smaller.model()
        result = run_one(fit, smaller, rtol, weight_rtol)
    except Exception:  # noqa: BLE001 -- a degenerate small problem (one class, no pairs) is not a finding
        return None
    return result if same_failure(original, result) else None


def _extras_lines(outcome: Outcome) -> list:
    """Named parts of the solution (intercept, biases) missing from or far from the optimum's
    (the reference's, named so, where it is a DC fixed point)."""
    p, user = outcome.problem, outcome.user
    if user is None or user.weights is None:
        return []
    whose = "the reference's DC fixed point's" if is_local(p.reference()) else "the optimum's"
    ref = read_result(p.reference())
    out = []
    for name, value in ref.extras.items():
        if name not in ("intercept", "biases") or value is None:
            continue
        ref_v = np.asarray(value, dtype=float)
        if not np.any(ref_v):
            continue
        if name not in user.extras or user.extras[name] is None:
            if name not in missing_parts(p.model(), user, p.params):   # else the failure's reason
                out.append(f"your result has no {name}; {whose} is "
                           f"{np.array2string(ref_v, precision=3)} (return {{'weights': W, "
                           f"{name!r}: ...}} or a Solution)")
            continue
        diff = float(np.max(np.abs(np.asarray(user.extras[name], dtype=float) - ref_v), initial=0.0))
        if diff > 1e-3 * max(1.0, float(np.abs(ref_v).max(initial=0.0))):
            out.append(f"your {name} differs from {whose} by up to {diff:.3g} "
                       f"(yours {np.array2string(np.asarray(user.extras[name], float), precision=3)}, "
                       f"{whose.removeprefix('the ').removesuffix(chr(39) + 's')} "
                       f"{np.array2string(ref_v, precision=3)})")
    return out


def _pattern_lines(failed: list, passed: list) -> list:
    """What every failing problem has that no passing one has (options, structures): facts of
    the outcomes, each option with what it means."""
    out = []
    keys = {k for o in failed for k in o.problem.model_options}
    only = [key for key in sorted(keys)
            if passed and all(key in o.problem.model_options for o in failed)
            and not any(key in o.problem.model_options for o in passed)]
    for key in only:
        meaning = OPTION_MEANING.get(key)
        out.append(f"every failing problem sets {key}, no passing one does"
                   + (f" ({key}: {meaning})" if meaning else ""))
    structures_failed = {o.problem.structure for o in failed}
    structures_passed = {o.problem.structure for o in passed}
    if passed and not structures_failed & structures_passed:
        out.append(f"fails on structures {sorted(structures_failed)}, passes on {sorted(structures_passed)}")
    return out


def _reproduce_line(method, problem: Problem) -> str:
    scalars = "".join(f", {k}={v!r}" for k, v in problem.options.items()
                      if v is None or isinstance(v, (str, bool, int, float)))
    return (f"  reproduce: p = hiercvx.testing.problems_for({method.name!r}, structures="
            f"[{problem.structure!r}], seeds=[{problem.seed}], n={problem.n}, d={problem.d}"
            f"{scalars})[...]; fit(p.X, p.Y, p.H, **p.options)   # the problem with "
            f"{problem.describe_options() or 'the default options'}")


def _message(method, first: Outcome, minimal: Outcome, diagnoses: list, outcomes: list) -> str:
    failed = [o for o in outcomes if o.status == "failed"]
    passed = [o for o in outcomes if o.status == "ok"]
    skipped = [o for o in outcomes if o.status == "skipped"]
    p = first.problem
    lines = [(f"check_solver({method.name!r}) failed on {p.structure} (seed={p.seed}, n={p.n}, d={p.d}"
              f"{', ' + p.describe_options() if p.describe_options() else ''}): your objective "
              f"{first.user_objective:.8g}, reference {first.reference_objective:.8g}")]
    lines += [f"  {r}" for r in first.reasons]
    lines += [f"  {d}" for d in diagnoses]
    lines += [f"  {line}" for line in _extras_lines(first)]
    lines += [f"  {line}" for line in _pattern_lines(failed, passed)]
    if minimal is not first:
        m = minimal.problem
        lines.append(f"smallest failing variant: n={m.n} d={m.d}: your objective "
                     f"{minimal.user_objective:.8g}, reference {minimal.reference_objective:.8g}")
        lines += [f"  {r}" for r in minimal.reasons if r not in first.reasons]
    m = minimal.problem
    if m.template is not None:
        lines.append(_reproduce_line(method, m))
    if minimal.user is not None and minimal.user.weights is not None and \
            np.shape(minimal.user.weights) == np.shape(m.reference().weights) and \
            np.all(np.isfinite(minimal.user.weights)):
        try:
            lines += ["  " + line for line in build_report(m, minimal.user, m.reference(), top=4).lines()]
        except Exception as exc:  # noqa: BLE001 -- the report is a help; never hide the verdict behind it
            lines.append(f"  (no KKT report: {type(exc).__name__}: {exc})")
    lines.append(f"failed {len(failed)} of {len(failed) + len(passed)} problems run: "
                 + "; ".join(f"{o.problem.name} ({o.problem.describe_options() or 'defaults'})"
                             for o in failed[:6]))
    if skipped:
        lines.append(f"skipped {len(skipped)}: " + "; ".join(f"{o.problem.name} ({o.skipped})" for o in skipped))
    return "\n".join(lines)


def _report_skips(method, skipped: list, strict: bool) -> None:
    __tracebackhide__ = True
    if not skipped:
        return
    text = "; ".join(f"{o.problem.name} with {o.problem.describe_options()} ({o.skipped})" for o in skipped)
    if strict:
        raise SolverCheckError(f"check_solver({method.name!r}, strict=True): {len(skipped)} problem(s) "
                               f"not run because fit does not take their options: {text}", skipped, [])
    warnings.warn(SkippedProblemWarning(
        f"check_solver({method.name!r}) skipped {len(skipped)} problem(s): {text}; options your fit "
        "ignores are not checked (strict=True makes this a failure)"), stacklevel=3)


def check_solver(fit, method, *, problems=None, rtol: float = 1e-4, weight_rtol: float = 1e-3,
                 random_state: int = 0, structures=None, shrink_failures: bool = True,
                 strict: bool = False) -> list:
    """Check that ``fit`` solves the registered ``method``'s problem.

    Parameters
    ----------
    fit : callable
        ``fit(X, Y, H, **options) -> result``, the user's solver; ``options`` are the method's
        parameters (``C``, or ``lam`` for NHSVM; ``hiercvx.methods.get(method).params``) and the
        problem's model options (``sample_weight``, ``fit_intercept``, ``rescaling`` ...).
        ``result``: weights in the shape of the reference's ``solution.weights`` (node rows in
        ``H.nodes`` order for ``hsvm``, class rows in sorted class order for ``multiclass``), a
        dict ``{"weights": W, "intercept": b}`` (optionally with ``"objective"`` and
        ``"converged"``, read as a Solution's attributes), a :class:`~hiercvx.result.Solution`
        or a float objective.  Weights are judged by the method's objective recomputed at them,
        not by what the solver says.  ``fit`` receives copies of ``X``, ``Y`` and the array
        options; a ``fit`` that changes them in place fails.
    method : str or hiercvx.methods.Method
    problems : None, int or list
        None: one generated problem per built-in case of every supported structure and one per
        model option alone (:mod:`hiercvx.testing.options`), at seed ``random_state``; an int:
        that many seeds of each; or a list of :class:`~hiercvx.testing.Problem`.
    rtol : float
        Relative objective difference allowed (plus the reference's own gap).
    weight_rtol : float
        Where the optimum is unique (a strongly convex objective), the distance allowed between
        the user's weights (intercept included) and the optimum, relative to the optimum's norm,
        on top of the reference's certified radius.  1e-3 is what a solver reaching a relative
        objective accuracy of about 1e-7 achieves; loosen it for solvers with coarse stopping
        (the registry's ``flatmult`` solver ``"rda"``, stopped at a certified gap of 2e-5, lands
        about 1.3e-3 of the norm away on the built-in tree problem: check it with
        ``weight_rtol=1e-2``).
    random_state : int
        The seed of the generated problems, a non-negative integer: with ``problems=None``
        every problem is generated at this seed; with an int ``k``, at each of the ``k`` seeds
        ``random_state, ..., random_state + k - 1``.  Not used when ``problems`` is a list.
    structures : sequence of str, optional
        Only these structures (default: all the method supports).
    shrink_failures : bool
        Re-run a failure at smaller ``n`` then ``d`` and report the smallest failing variant.
    strict : bool
        A problem whose options ``fit`` does not take fails the check instead of being skipped
        with a :class:`SkippedProblemWarning`.

    Returns
    -------
    list of Outcome
        Every problem's outcome, when none failed.

    Raises
    ------
    SolverCheckError
        (an ``AssertionError``) on any failure: the first line names the method, the failing
        problem and both objectives; then what failed, the verified diagnoses
        (:func:`hiercvx.testing.diagnose.diagnose`), the smallest failing variant with its KKT
        report, and the skipped problems.
    """
    __tracebackhide__ = True
    if not callable(fit):
        raise InputTypeError(f"fit must be a callable fit(X, Y, H, **options) -> result, got "
                             f"{type(fit).__name__} {fit!r}")
    rtol = _check_tolerance("rtol", rtol)
    weight_rtol = _check_tolerance("weight_rtol", weight_rtol)
    method = as_method(method)
    outcomes = [run_one(fit, p, rtol, weight_rtol) for p in _as_problems(method, problems, random_state, structures)]
    failed = [o for o in outcomes if o.status == "failed"]
    skipped = [o for o in outcomes if o.status == "skipped"]
    if not failed and len(skipped) == len(outcomes):
        raise SolverCheckError(f"check_solver({method.name!r}): every problem was skipped: "
                               + "; ".join(f"{o.problem.name} ({o.skipped})" for o in skipped[:4]),
                               outcomes, [])
    if failed:
        first = failed[0]
        diagnoses = diagnose(first.problem, first.user, rtol, weight_rtol)
        minimal = shrink(fit, first, rtol, weight_rtol) if shrink_failures else first
        raise SolverCheckError(_message(method, first, minimal, diagnoses, outcomes), outcomes, diagnoses)
    _report_skips(method, skipped, strict)
    return outcomes
