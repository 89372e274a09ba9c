"""``check_solver``: one call that says whether a user's solver solves a registered method's
problem, checked against the certified reference on generated problems of every structure the
method supports (the idea of scikit-learn's ``check_estimator``, for optimization problems).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import InputError
from ..hierarchy import class_attributes
from ..result import comparison_scale
from ..methods import Case
from .diagnostics import UserResult, build_report, objective_at, read_result, row_labels
from .problems import Problem, as_method, problems_for

__all__ = ["KNOWN_MISTAKES", "STRONGLY_CONVEX", "Mistake", "Outcome", "check_solver", "diagnose"]

#: methods whose objective is ``mu``-strongly convex in the weights (``1/2 ||W||^2`` plus a
#: convex loss, linear kernel): the optimum is unique and ``||W - W*||^2 <= 2 (f(W) - f*) / mu``
STRONGLY_CONVEX = {"multiclass": 1.0, "hsvm": 1.0}

#: sizes tried, smallest first, when shrinking a failing problem
SHRINK_SIZES = (3, 4, 6, 8, 12, 16, 24)
SHRINK_BUDGET = 14


@dataclass
class Outcome:
    """One problem's verdict: ``ok``, the user's objective (recomputed at the returned weights
    when there are weights), the reference's objective and lower bound, and ``reasons`` (what
    failed, one line each; empty when ``ok``)."""

    problem: Problem
    user_objective: float = float("nan")
    reference_objective: float = float("nan")
    lower_bound: float = float("nan")
    reasons: list = field(default_factory=list)
    user: UserResult | None = None
    skipped: str = ""

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def relative_difference(self) -> float:
        return (abs(self.user_objective - self.reference_objective)
                / comparison_scale(self.user_objective, self.reference_objective))

    def __repr__(self):  # compact: never the arrays
        verdict = "ok" if self.ok else "; ".join(self.reasons)[:200]
        return (f"Outcome({self.problem.method.name} on {self.problem.name}: your objective "
                f"{self.user_objective:.8g}, reference {self.reference_objective:.8g}: {verdict})")



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


def _weight_reason(problem: Problem, user: UserResult, ref, slack: float) -> str:
    """Shape mismatch, or (strongly convex methods) weights farther from the optimum than the
    objective allows."""
    ref_w = np.asarray(ref.weights)
    if np.shape(user.weights) != ref_w.shape:
        labels = row_labels(problem.model(), ref_w, problem.H)
        return (f"weights of shape {np.shape(user.weights)}; the method's are {ref_w.shape} "
                f"(rows: {', '.join(map(str, labels[:8]))}{' ...' if len(labels) > 8 else ''})")
    mu = STRONGLY_CONVEX.get(problem.method.name)
    if mu is None or not getattr(problem.model(), "node_weights", True):
        return ""
    # strong convexity: both points lie within sqrt(2 (f - lb) / mu) of the unique optimum
    f_user = max(objective_at(problem.model(), user, problem.params) - float(ref.lower_bound), 0.0)
    radius = np.sqrt(2 * (f_user + slack) / mu) + np.sqrt(2 * max(ref.objective - ref.lower_bound, 0) / mu)
    dist = float(np.linalg.norm(np.asarray(user.weights) - ref_w))
    if dist > radius + 1e-6 * max(1.0, float(np.linalg.norm(ref_w))):
        return f"weights differ from the unique optimum by {dist:.3g} (Frobenius), more than {radius:.3g}"
    return ""


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


def run_one(fit, problem: Problem, rtol: float) -> Outcome:
    """Run ``fit`` on ``problem`` and compare with the certified reference."""
    options, skipped = _fit_options(fit, problem)
    outcome = Outcome(problem, skipped=skipped)
    if skipped:
        return outcome
    ref = problem.reference()
    outcome.reference_objective, outcome.lower_bound = float(ref.objective), float(ref.lower_bound)
    _check_registry(problem, ref, rtol)
    try:
        user = read_result(fit(problem.X, problem.Y, problem.H, **options))
    except Exception as exc:  # noqa: BLE001 -- the user's code failing is a finding, not a crash of the check
        outcome.reasons.append(f"fit raised {type(exc).__name__}: {str(exc)[:300]}")
        return outcome
    outcome.user = user
    slack = (rtol * comparison_scale(outcome.reference_objective)
             + (outcome.reference_objective - outcome.lower_bound))
    if user.weights is not None:
        reason = _weight_reason(problem, user, ref, slack) if np.shape(user.weights) != np.shape(ref.weights) else ""
        if reason:
            outcome.reasons.append(reason)
            outcome.user_objective = user.reported if user.reported is not None else float("nan")
            return outcome
        outcome.user_objective = objective_at(problem.model(), user, problem.params)
        if user.reported is not None and abs(user.reported - outcome.user_objective) > slack:
            outcome.reasons.append(
                f"your solver reports objective {user.reported:.8g} but its weights give "
                f"{outcome.user_objective:.8g}: the weights are not the point whose objective it "
                "computed (check how they are recovered from the dual: signs, scaling)")
    else:
        outcome.user_objective = user.reported
    if not user.converged:
        outcome.reasons.append("your solver says it did not converge")
    diff = outcome.user_objective - outcome.reference_objective
    if not abs(diff) <= slack:
        where = ("below the certified lower bound: it is not this method's objective (loss, C, "
                 "sample weights, regularizer)" if outcome.user_objective < outcome.lower_bound - slack
                 else "above the optimum: the weights are suboptimal for this method's problem")
        outcome.reasons.append(f"relative difference {outcome.relative_difference:.2e} > rtol {rtol:g}; "
                               f"your objective is {where}")
    elif user.weights is not None:
        reason = _weight_reason(problem, user, ref, slack)
        if reason:
            outcome.reasons.append(reason)
    return outcome


def _as_problems(method, problems, random_state: int, structures) -> list:
    if problems is None:
        return problems_for(method, structures=structures, seeds=(random_state,))
    if isinstance(problems, (int, np.integer)):
        return problems_for(method, structures=structures,
                            seeds=range(random_state, random_state + int(problems)))
    out = []
    for p in problems:
        if isinstance(p, Case):
            p = Problem(method, p.structure, p.X, p.Y, p.H, dict(p.model_options), dict(p.params))
        if not isinstance(p, Problem):
            raise InputError("problems must be None, a number of seeds per structure, or a list of "
                             f"hiercvx.testing.Problem / hiercvx.methods.Case; got {type(p).__name__}")
        out.append(p)
    return out


def shrink(fit, outcome: Outcome, rtol: float) -> Outcome:
    """The smallest failing variant of a failing generated problem: fewer samples first, then
    fewer features (same structure, options and seed); ``outcome`` itself when none is smaller."""
    problem = outcome.problem
    if problem.template is None:
        return outcome
    best, budget = outcome, SHRINK_BUDGET
    for n in (s for s in SHRINK_SIZES if s < problem.n):
        budget -= 1
        if budget < 0:
            break
        found = _attempt(fit, problem, rtol, n=n, d=problem.d)
        if found is not None:
            best = found
            break
    for d in range(1, best.problem.d):
        budget -= 1
        if budget < 0:
            break
        found = _attempt(fit, best.problem, rtol, n=best.problem.n, d=d)
        if found is not None:
            best = found
            break
    return best


def _attempt(fit, problem: Problem, rtol: float, n: int, d: int):
    """The outcome on the resized problem when it is valid and fails, else None."""
    try:
        smaller = problem.resized(n=n, d=d)
        smaller.model()
        result = run_one(fit, smaller, rtol)
    except Exception:  # noqa: BLE001 -- a degenerate small problem (one class, no pairs) is not a finding
        return None
    return None if result.ok or result.skipped else result


@dataclass(frozen=True)
class Mistake:
    """A classic way to solve a neighbouring problem instead of the method's: ``what`` it is,
    and ``variants(problem)`` -> the model options of the problem it solves instead (one dict
    per variant; none when the mistake cannot apply to this problem)."""

    methods: tuple
    what: str
    variants: object


def _without_weights(p: Problem):
    keys = [k for k in ("sample_weight", "class_weight") if p.model_options.get(k) is not None]
    out = [{k: None} for k in keys]
    return out + [{k: None for k in keys}] if len(keys) > 1 else out


def _without_intercept(p: Problem):
    return [{"fit_intercept": False}] if p.model_options.get("fit_intercept") else []


def _other_losses(p: Problem):
    current = p.model_options.get("loss", "half_symmetric")
    return [{"loss": name} for name in ("zero_one", "symmetric_difference", "half_symmetric")
            if name != current and isinstance(current, str)]


def _own_node_attributes(p: Problem):
    """Class attributes with each class's ancestors dropped: only its own node's column."""
    scheme = p.model_options.get("attributes", "class_depth")
    if not isinstance(scheme, str) or p.H is None:
        return []
    classes = list(p.model_options.get("classes") or p.H.leaves)
    Lam = class_attributes(p.H, classes, scheme=scheme)
    own = np.zeros_like(Lam)
    for row, c in enumerate(classes):
        own[row, p.H.nodes.index(c)] = 1.0
    return [{"attributes": Lam * own}]


def _other_rescaling(p: Problem):
    current = p.model_options.get("rescaling", "slack")
    return [{"rescaling": "margin" if current == "slack" else "slack"}]


#: the mistakes :func:`diagnose` looks for: the user's weights are optimal for the variant
KNOWN_MISTAKES = (
    Mistake(("multiclass", "hsvm"), "C is not scaled per sample: sample_weight / class_weight are "
            "ignored (C_i = C * sample_weight_i * class_weight[y_i])", _without_weights),
    Mistake(("multiclass", "hsvm", "orthogonal", "flatmult", "hiermult", "transfer", "treeloss",
             "nhsvm", "shared_norm"),
            "the intercept (bias) is not fitted", _without_intercept),
    Mistake(("hsvm",), "the wrong loss Delta", _other_losses),
    Mistake(("hsvm",), "ancestors missing: each class's attribute row / label set holds only its own "
            "node, not its ancestors (thesis (3.7))", _own_node_attributes),
    Mistake(("hsvm",), "the other rescaling (slack vs margin)", _other_rescaling),
)


def _describe(options: dict) -> str:
    return ", ".join(f"{k}=<array {np.shape(v)}>" if isinstance(v, np.ndarray) else f"{k}={v!r}"
                     for k, v in options.items())


def diagnose(outcome: Outcome, rtol: float) -> list:
    """Lines naming each :data:`KNOWN_MISTAKES` variant for which the user's weights are optimal
    (certified reference of the variant, same data); costs one reference solve per variant."""
    p, user = outcome.problem, outcome.user
    if user is None or user.weights is None:
        return []
    out = []
    for mistake in KNOWN_MISTAKES:
        if p.method.name not in mistake.methods:
            continue
        for change in mistake.variants(p):
            variant = Problem(p.method, p.structure, p.X, p.Y, p.H, {**p.model_options, **change},
                              dict(p.params), p.seed)
            try:
                ref = variant.reference()
                mine = objective_at(variant.model(), user, p.params)
            except Exception:  # noqa: BLE001, S112 -- a variant the method refuses on this data says nothing
                continue
            slack = rtol * comparison_scale(ref.objective) + (ref.objective - ref.lower_bound)
            if abs(mine - ref.objective) <= slack:
                out.append(f"diagnosis: {mistake.what} -- your weights are optimal for {p.method.name} "
                           f"with {_describe(change)} (objective {mine:.8g}, that problem's "
                           f"certified optimum {ref.objective:.8g})")
                break  # one variant per mistake is enough to name it
    return out


def _extras_hints(outcome: Outcome) -> list:
    """Named parts of the solution (intercept, biases) missing from or far from the optimum's."""
    p, user = outcome.problem, outcome.user
    if user is None or user.weights is None:
        return []
    ref = read_result(p.reference())
    out = []
    for name, value in ref.extras.items():
        if name not in ("intercept", "biases") or value is None:
            continue
        ref_v = np.asarray(value, dtype=float)
        if not np.any(ref_v):
            continue
        if name not in user.extras or user.extras[name] is None:
            out.append(f"your result has no {name}; the optimum's is {np.array2string(ref_v, precision=3)} "
                       f"(return {{'weights': W, {name!r}: ...}} or a Solution)")
            continue
        diff = float(np.max(np.abs(np.asarray(user.extras[name], dtype=float) - ref_v), initial=0.0))
        if diff > 1e-3 * max(1.0, float(np.abs(ref_v).max(initial=0.0))):
            out.append(f"your {name} differs from the optimum's by up to {diff:.3g} "
                       f"(yours {np.array2string(np.asarray(user.extras[name], float), precision=3)}, "
                       f"optimum {np.array2string(ref_v, precision=3)})")
    return out


def _hints(failed: list, passed: list) -> list:
    """What the failing problems have in common that the passing ones lack."""
    out = []
    keys = {k for o in failed for k in o.problem.model_options}
    only = [key for key in sorted(keys)
            if all(key in o.problem.model_options for o in failed) and passed
            and not any(key in o.problem.model_options for o in passed)]
    if only:
        out.append(f"fails only on problems with {', '.join(only)}: does your solver use "
                   f"{'them' if len(only) > 1 else 'it'} (e.g. C_i = C * sample_weight_i)?")
    structures_failed = {o.problem.structure for o in failed}
    structures_passed = {o.problem.structure for o in passed}
    if passed and not structures_failed & structures_passed:
        out.append(f"fails on structures {sorted(structures_failed)}, passes on {sorted(structures_passed)}")
    return out


def _message(method, first: Outcome, minimal: Outcome, failed: list, passed: list, skipped: list,
             rtol: float) -> str:
    p = first.problem
    lines = [(f"check_solver({method.name!r}) failed on {p.structure} (seed={p.seed}, n={p.n}, d={p.d}): "
              f"your objective {first.user_objective:.8g}, reference {first.reference_objective:.8g}")]
    lines += [f"  {r}" for r in first.reasons]
    if minimal is not first:
        m = minimal.problem
        lines.append(f"minimal failing case: {m.structure} seed={m.seed} n={m.n} d={m.d} "
                     f"({m.describe_options()}): your objective {minimal.user_objective:.8g}, "
                     f"reference {minimal.reference_objective:.8g}")
        lines += [f"  {r}" for r in minimal.reasons if r not in first.reasons]
    m = minimal.problem
    if m.template is not None:
        scalars = "".join(f", {k}={v!r}" for k, v in m.options.items()
                          if v is None or isinstance(v, (str, bool, int, float)))
        lines.append(f"  reproduce: p = hiercvx.testing.problems_for({method.name!r}, structures="
                     f"[{m.structure!r}], seeds=[{m.seed}], n={m.n}, d={m.d}{scalars})[0]; "
                     "fit(p.X, p.Y, p.H, **p.options)")
    if minimal.user is not None and minimal.user.weights is not None and \
            np.shape(minimal.user.weights) == np.shape(m.reference().weights):
        try:
            lines += ["  " + line for line in build_report(m, minimal.user, m.reference(), top=4).lines()]
        except Exception as exc:  # noqa: BLE001 -- the report is a help; never hide the verdict behind it
            lines.append(f"  (no KKT report: {type(exc).__name__}: {exc})")
    lines += _extras_hints(minimal)
    lines += diagnose(minimal, rtol)
    lines += _hints(failed, passed)
    lines.append(f"failed {len(failed)} of {len(failed) + len(passed)} problems: "
                 + "; ".join(f"{o.problem.name} ({o.problem.describe_options()})" for o in failed[:6]))
    if skipped:
        lines.append("skipped: " + "; ".join(f"{o.problem.name} ({o.skipped})" for o in skipped[:4]))
    return "\n".join(lines)


def check_solver(fit, method, *, problems=None, rtol: float = 1e-4, random_state: int = 0,
                 structures=None, shrink_failures: bool = True) -> list:
    """Check that ``fit`` solves the registered ``method``'s problem.

    ``fit(X, Y, H, **options) -> result`` is the user's solver; ``options`` are the method's
    parameters (``C``, or ``lam`` for NHSVM; see ``hiercvx.methods.get(method).params``) and the
    problem's model options (``sample_weight``, ``rescaling`` ...; problems needing an option
    ``fit`` does not take are skipped and listed).  ``result``: weights in the shape of the
    reference's ``solution.weights`` (node rows in ``H.nodes`` order for ``hsvm``, class rows
    in sorted class order for ``multiclass``), a dict ``{"weights": W, "intercept": b}``, a
    :class:`~hiercvx.result.Solution` or a float objective.  Weights are judged by the
    method's objective recomputed at them, not by what the solver says.

    ``problems``: None (one generated problem per built-in case of every supported structure,
    at seed ``random_state``), a number of seeds per case, or a list of
    :class:`~hiercvx.testing.Problem` (see :func:`~hiercvx.testing.problems_for`).  A problem
    passes when ``|f_user - f_ref| <= rtol * |f_ref| + gap_ref``, the solver (when it
    says) converged, and for strongly convex methods the weights are within the distance of
    the unique optimum the objective allows.  Predictions need no separate test: within that
    radius ``r`` every score moves by at most ``||x_i|| max_y ||Lam_y|| r``, so a prediction can
    differ from the optimum's only where the optimum's own top-two margin is below twice that
    (a tie the data leave open); where the optimum is not unique, predictions are not
    determined by the problem and are not compared.  On failure raises ``AssertionError``: the first
    line names the method, the problem (structure, seed, n, d), your objective and the
    reference's; the body shows the smallest failing variant found by shrinking n then d, its
    KKT report (samples, class pairs, weight rows) and hints.  Returns the list of
    :class:`Outcome` when every problem passes.
    """
    method = as_method(method)
    todo = _as_problems(method, problems, random_state, structures)
    outcomes = [run_one(fit, p, rtol) for p in todo]
    skipped = [o for o in outcomes if o.skipped]
    failed = [o for o in outcomes if not o.ok]
    passed = [o for o in outcomes if o.ok and not o.skipped]
    if not failed and not passed:
        raise AssertionError(f"check_solver({method.name!r}): every problem was skipped: "
                             + "; ".join(f"{o.problem.name} ({o.skipped})" for o in skipped[:4]))
    if failed:
        first = failed[0]
        minimal = shrink(fit, first, rtol) if shrink_failures else first
        raise AssertionError(_message(method, first, minimal, failed, passed, skipped, rtol))
    return outcomes
