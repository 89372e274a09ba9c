"""A registered method's objective at a user's weights, and where those weights go wrong.

:func:`objective` evaluates the method's primal objective (the number its certified reference
reports) at any weights; :func:`kkt_report` says which samples' margin constraints are violated
under the weights, by how much and at which class pair (through the model's ``scores`` and
loss-augmented ``oracle``), and, against the certified optimum, which samples' slacks and which
weight rows differ from the optimum's: the optimality conditions the weights fail.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from numbers import Real

import numpy as np

from ..exceptions import InputError
from ..models.margin import MarginModel, class_scores
from ..result import comparison_scale
from .problems import Problem, as_method, is_local

__all__ = [
    "KKTReport",
    "UserResult",
    "Violation",
    "kkt_report",
    "objective",
    "objective_at",
    "read_result",
    "row_labels",
    "row_order",
]

#: keys under which a dict result may hold the primal weights
WEIGHT_KEYS = ("weights", "W", "coef")
#: keys of a dict result read as a Solution's attributes, not as parts of the solution
STATUS_KEYS = ("objective", "converged", "lower_bound", "status")


@dataclass
class UserResult:
    """What a user's solver returned, read uniformly: ``weights`` (None for a bare float),
    ``extras`` (other named arrays: ``intercept``, ``biases``, ``alpha`` ...), the objective
    the solver reports (None for plain weights), whether it says it converged, and its
    certificate where it carries one: ``lower_bound`` (None: none) and ``status`` (None: none)."""

    weights: np.ndarray | None
    extras: dict = field(default_factory=dict)
    reported: float | None = None
    converged: bool = True
    lower_bound: float | None = None
    status: str | None = None


def read_result(result) -> UserResult:
    """A float objective, a :class:`~hiercvx.result.Solution` (also named
    ``ReferenceSolution``), a dict ``{"weights": W, "intercept": b, ...}`` or a weight array.

    A dict's ``"objective"``, ``"converged"``, ``"lower_bound"`` and ``"status"`` keys are read
    as a Solution's attributes are: the objective the solver reports, whether it says it
    converged (a bool), the lower bound it certifies and its status (a string; other types
    are not read); every other key is a named part of the solution (``intercept``, ``biases``,
    ``alpha`` ...).  A ``converged`` that is not a bool (the string ``"False"``, an array)
    raises :class:`~hiercvx.exceptions.InputError`."""
    if isinstance(result, UserResult):
        return result
    if result is None:
        raise InputError("the result is None: return the weights, a dict {'weights': W, ...}, a "
                         "hiercvx Solution or a float objective")
    if isinstance(result, Real) and not isinstance(result, bool):
        return UserResult(None, {}, float(result))
    if hasattr(result, "objective") and hasattr(result, "weights"):
        extras = {**dict(getattr(result, "values", {}) or {}), **dict(getattr(result, "extras", {}) or {})}
        weights = None if result.weights is None else _as_weights(result.weights)
        return UserResult(weights, extras, _reported(result.objective),
                          _converged(getattr(result, "converged", True)),
                          _reported(getattr(result, "lower_bound", None), "lower bound"),
                          _status(getattr(result, "status", None)))
    if isinstance(result, dict):
        key = next((k for k in WEIGHT_KEYS if k in result), None)
        if key is None:
            raise InputError(f"a dict result needs the weights under one of {WEIGHT_KEYS}; got keys "
                             f"{sorted(map(str, result))}")
        extras = {k: v for k, v in result.items() if k not in (key, *STATUS_KEYS)}
        return UserResult(_as_weights(result[key]), extras, _reported(result.get("objective")),
                          _converged(result.get("converged", True)),
                          _reported(result.get("lower_bound"), "lower bound"),
                          _status(result.get("status")))
    try:
        return UserResult(np.asarray(result, dtype=float))
    except (TypeError, ValueError):
        raise InputError("a solver result must be a float objective, a hiercvx Solution, a dict "
                         f"{{'weights': W, ...}} or a weight array; got {type(result).__name__}") from None


def _as_weights(value) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"the weights must be a numeric array, got {type(value).__name__}") from None


def _reported(value, what: str = "objective") -> float | None:
    """A reported objective (or lower bound) as a float (None: not reported)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Real) and np.ndim(value) != 0:
        raise InputError(f"the reported {what} must be a number, got {type(value).__name__}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"the reported {what} must be a number, got {value!r}") from None


def _converged(value) -> bool:
    """The solver's ``converged`` flag: a bool (Python's or NumPy's), nothing else."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InputError(f"converged must be True or False, got {type(value).__name__} {value!r}: "
                     "return a bool (a string such as 'False' or an array is not read as one)")


def _status(value) -> str | None:
    """The solver's status when it is a string (None otherwise: not read)."""
    return value if isinstance(value, str) else None


def _keywords(func, exclude) -> set:
    """The keyword names ``func`` takes, minus ``exclude``."""
    names = set()
    for p in inspect.signature(func).parameters.values():
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return names - set(exclude)


def missing_parts(model, user: UserResult, params: dict) -> list:
    """The parts of a solution (``biases``, ...) that ``model.objective`` requires and the user's
    result does not carry."""
    required = {p.name for p in inspect.signature(model.objective).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty}
    return sorted(name for name in required - {"weights", *params}
                  if user.extras.get(name) is None)


def objective_at(model, user: UserResult, params: dict) -> float:
    """The model's objective at the user's weights; extras the objective takes by name
    (``intercept``, ``biases``, ``alpha``) are passed along.  A result without a part the
    objective requires, or weights that do not fit the model, raise
    :class:`~hiercvx.exceptions.InputError` naming what is missing or their shape."""
    missing = missing_parts(model, user, params)
    if missing:
        parts = ", ".join(f"{name!r}: ..." for name in missing)
        raise InputError(f"the result has no {' or '.join(missing)}, which this method's objective "
                         f"needs (return {{'weights': W, {parts}}} or a Solution)")
    takes = _keywords(model.objective, {"weights", *params})
    extra = {k: v for k, v in user.extras.items() if k in takes and v is not None}
    for name, value in (("weights", user.weights), *extra.items()):
        bad = _non_finite(value)
        if bad:
            raise InputError(f"{bad.format(name=name)}: return finite values (a NaN or inf usually "
                             "comes from a division by zero or a diverging iteration)")
    try:
        return float(model.objective(user.weights, **params, **extra))
    except InputError:
        raise
    except (ValueError, IndexError, TypeError) as exc:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in extra.items())
        raise InputError(f"weights of shape {np.shape(user.weights)}{' with ' + shapes if shapes else ''} "
                         f"do not fit this method's model ({exc}); give them in the shape of the "
                         "reference's solution.weights (hsvm: one row per node of H.nodes; "
                         "multiclass: one row per class, sorted)") from None


def _non_finite(value) -> str:
    """What is non-finite in a numeric array, with ``{name}`` left to fill (empty when it is
    finite or not numeric)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return ""
    bad = ~np.isfinite(arr)
    if not bad.any():
        return ""
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
    where = f", the first at index {first if len(first) > 1 else first[0]}" if first else ""
    return f"{int(bad.sum())} of {arr.size} entries of the {{name}} are not finite (NaN or inf){where}"


def row_labels(model, weights, H=None) -> list:
    """Names of the weight rows: classes (multiclass), nodes of ``H`` or of the model's own
    hierarchy (the sibling-margin model's, root first, on flat data too); row numbers else."""
    return _rows_named(model, weights, H)[0]


def row_order(model, weights, H=None) -> str:
    """What the weight rows follow, in words, for messages (:func:`row_labels`'s names)."""
    return _rows_named(model, weights, H)[1]


def _rows_named(model, weights, H) -> tuple[list, str]:
    rows = np.shape(weights)[0] if np.ndim(weights) else 0
    classes = getattr(model, "classes", None)
    own = getattr(getattr(model, "pairs", None), "hierarchy", None)
    for hierarchy, order in ((getattr(model, "H", None), "H.nodes"), (H, "H.nodes"),
                             (own, "the model's hierarchy, root first")):
        if hierarchy is not None and len(hierarchy.nodes) == rows:
            return list(hierarchy.nodes), order
    if classes is not None and len(classes) == rows and (
            not np.issubdtype(np.asarray(classes).dtype, np.integer)
            or getattr(model, "method", "") == "multiclass"):
        return list(np.asarray(classes).tolist()), "the sorted classes"
    return list(range(rows)), "the reference's row numbers"


def objective(method, weights, X, Y, H=None, **params) -> float:
    """The registered ``method``'s primal objective at ``weights`` on ``(X, Y, H)``.

    ``weights`` in the shape of the reference's ``solution.weights`` (node rows in ``H.nodes``
    order for ``hsvm``, class rows in sorted class order for ``multiclass``, ...), or a
    Solution / dict carrying extras such as ``intercept``.  Keywords are split by the method's
    ``params``: ``C`` / ``lam`` are parameters (defaults from the registry), every other one a
    model option passed to ``prepare`` (``sample_weight``, ``fit_intercept``, ``loss`` ...)."""
    problem = Problem.from_arrays(method, X, Y, H, **params)
    user = read_result(weights)
    if user.weights is None:
        raise InputError("objective() needs weights, not a bare objective value")
    return objective_at(problem.model(), user, problem.params)


# ------------------------------------------------------------------------------ the report
@dataclass(frozen=True)
class Violation:
    """One failing condition: ``sample`` and its most violated class ``pair`` (relevant,
    irrelevant, or the maximizing label), the loss-augmented slack under the user's weights
    (``amount``) and at the optimum (``optimum``, NaN without a reference)."""

    sample: int
    pair: str
    amount: float
    optimum: float = float("nan")

    @property
    def excess(self) -> float:
        """How far this sample's slack is from the optimum's (or the slack itself)."""
        return abs(self.amount - self.optimum) if np.isfinite(self.optimum) else self.amount

    def __str__(self):
        opt = "" if not np.isfinite(self.optimum) else f", at the optimum {self.optimum:.4g}"
        return f"sample {self.sample} ({self.pair}): slack {self.amount:.4g}{opt}"


@dataclass
class KKTReport:
    """Where weights fail a method's conditions.

    ``slacks`` ``(n,)``: each sample's loss-augmented margin violation under the weights (0:
    its margin constraints hold); ``margin``: the violated samples, worst first;
    ``optimality``: samples whose slack differs from the certified optimum's, largest
    difference first; ``weight_rows``: ``(row name, |W_row - W*_row|)`` largest first;
    ``objective``, ``reference_objective``, ``lower_bound``; ``suboptimality`` relative."""

    method: str
    problem: str
    objective: float
    slacks: np.ndarray
    margin: list
    optimality: list = field(default_factory=list)
    weight_rows: list = field(default_factory=list)
    reference_objective: float = float("nan")
    lower_bound: float = float("nan")
    top: int = 5
    #: what the reference is: a certified optimum, or a DC fixed point (a nonconvex method's)
    reference_kind: str = "certified optimum"

    @property
    def max_violation(self) -> float:
        """The largest slack (margin violation) of any sample."""
        return float(self.slacks.max()) if self.slacks.size else 0.0

    @property
    def n_violated(self) -> int:
        return len(self.margin)

    @property
    def suboptimality(self) -> float:
        """``(objective - optimum) / |optimum|`` (NaN without a reference)."""
        return (self.objective - self.reference_objective) / comparison_scale(self.reference_objective)

    @property
    def max_slack_difference(self) -> float:
        return max((v.excess for v in self.optimality), default=0.0)

    @property
    def max_weight_difference(self) -> float:
        return max((d for _, d in self.weight_rows), default=0.0)

    def ok(self, rtol: float = 1e-4) -> bool:
        """Whether the objective is optimal within ``rtol`` (plus the reference's gap)."""
        slack = rtol + (self.reference_objective - self.lower_bound) / comparison_scale(self.reference_objective)
        return abs(self.suboptimality) <= slack

    @property
    def _whose(self) -> str:
        return "the optimum's" if self.reference_kind == "certified optimum" else "the reference's"

    def lines(self) -> list:
        out = [f"{self.method} on {self.problem}: objective {self.objective:.8g} at these weights"]
        if np.isfinite(self.reference_objective):
            out[0] += (f"; {self.reference_kind} {self.reference_objective:.8g} (lower bound "
                       f"{self.lower_bound:.8g}): relative excess {self.suboptimality:.2e}")
        if self.optimality:
            out.append(f"  optimality: {len(self.optimality)} samples' slacks differ from {self._whose}; "
                       "largest first:")
            out += [f"    {v}" for v in self.optimality[:self.top]]
        if self.weight_rows:
            rows = ", ".join(f"{name!s} {diff:.3g}" for name, diff in self.weight_rows[:self.top])
            out.append(f"  weight rows farthest from {self._whose} (|W - W*| per row): {rows}")
        out.append(f"  margin: {self.n_violated} of {self.slacks.size} samples violate their margin "
                   f"constraints (max slack {self.max_violation:.4g})"
                   + ("; worst first:" if self.margin else ""))
        out += [f"    {v}" for v in self.margin[:self.top]]
        return out

    def __str__(self):
        return "\n".join(self.lines())


def _training_scores(model, user: UserResult) -> np.ndarray:
    """Scores of the training rows the model's oracle expects."""
    W = user.weights
    if isinstance(model, MarginModel):  # LIBLINEAR's bias: the column / kernel shift of the model
        if model.node_weights:
            return class_scores(model.augmented_weights(W, user.extras.get("intercept")),
                                model.X, model.Lam)
        return np.asarray(model.scores(W, model.X_features), dtype=float)
    takes = _keywords(model.scores, {"weights", "X"})
    extra = {k: v for k, v in user.extras.items() if k in takes}
    return np.asarray(model.scores(W, model.X, **extra), dtype=float)


def _name(names, k) -> str:
    return str(names[k]) if names is not None and 0 <= k < len(names) else str(k)


def _sample_slacks(model, S: np.ndarray) -> tuple[np.ndarray, list]:
    """``(slack per sample, most violated pair per sample)`` from the model's oracle, whatever
    form it returns: ``(y, ybar, violation)`` (margin models), ``(pair, xi)`` per slack
    (orthogonal transfer), ``(xi, maximizer)`` (NHSVM) or ``(u_min, pair)`` (sibling margins)."""
    out = model.oracle(S)
    n = S.shape[0]
    classes = getattr(model, "classes", None)
    names = None if classes is None else np.asarray(classes).tolist()
    if isinstance(model, MarginModel):
        y, ybar, viol = out
        amount = np.maximum(np.where(np.isfinite(viol), viol, 0.0), 0.0)
        pairs = [f"{_name(names, a)} vs {_name(names, b)}" if a >= 0 else "-" for a, b in zip(y, ybar)]
        return amount, pairs
    first, second = (np.asarray(a) for a in out[:2])
    if hasattr(model, "slack_example"):  # one slack per (sample, node problem)
        data, H = model.data, model.H
        nodes = list(H.nodes)
        cls = [nodes[c] for c in model.classes] if len(model.classes) else None
        amount, pairs = np.zeros(n), ["-"] * n
        for s, (p, xi) in enumerate(zip(first, second)):
            i = int(model.slack_example[s])
            if p >= 0 and xi > amount[i]:
                amount[i] = xi
                pairs[i] = f"{_name(cls, data.pair_y[p])} vs {_name(cls, data.pair_ybar[p])}"
        return amount, pairs
    if np.issubdtype(first.dtype, np.floating) and getattr(model, "method", "") in ("sibling_svm", "hpsi"):
        return np.maximum(1.0 - first, 0.0), [f"pair {int(p)}" for p in second]
    amount = np.maximum(first.astype(float), 0.0)
    H = getattr(model, "H", None)
    leaves = list(H.leaves) if H is not None else None
    if second.ndim == 1:
        pairs = [f"best wrong leaf {_name(leaves, int(v))}" if v >= 0 else "-" for v in second]
    else:
        pairs = ["label set " + "{" + ",".join(str(H.nodes[j]) for j in np.flatnonzero(r)) + "}"
                 for r in second]
    return amount, pairs


def build_report(problem: Problem, user: UserResult, reference=None, top: int = 5) -> KKTReport:
    """The :class:`KKTReport` of ``user``'s weights on ``problem`` (against ``reference``)."""
    model = problem.model()
    obj = objective_at(model, user, problem.params)
    slacks, pairs = _sample_slacks(model, _training_scores(model, user))
    margin = sorted((Violation(i, pairs[i], float(slacks[i])) for i in np.flatnonzero(slacks > 1e-9)),
                    key=lambda v: -v.amount)
    report = KKTReport(problem.method.name, problem.name, obj, slacks, margin, top=top)
    if reference is None:
        return report
    report.reference_objective = float(reference.objective)
    report.lower_bound = float(reference.lower_bound)
    if is_local(reference):
        report.reference_kind = "the reference's DC fixed point, not a certified optimum,"
    ref_user = read_result(reference)
    if ref_user.weights is None or np.shape(ref_user.weights) != np.shape(user.weights):
        return report
    ref_slacks, _ = _sample_slacks(model, _training_scores(model, ref_user))
    diff = np.abs(slacks - ref_slacks)
    scale = 1e-6 * max(1.0, float(np.abs(ref_slacks).max(initial=0.0)))
    report.optimality = [Violation(int(i), pairs[i], float(slacks[i]), float(ref_slacks[i]))
                         for i in np.argsort(-diff, kind="stable") if diff[i] > scale]
    W = np.asarray(user.weights, dtype=float).reshape(np.shape(user.weights)[0], -1)
    Wr = np.asarray(ref_user.weights, dtype=float).reshape(W.shape)
    labels = row_labels(model, W, problem.H)
    row_diff = np.linalg.norm(W - Wr, axis=1)
    report.weight_rows = [(labels[k], float(row_diff[k])) for k in np.argsort(-row_diff, kind="stable")
                          if row_diff[k] > 1e-6 * max(1.0, float(np.abs(Wr).max(initial=0.0)))]
    return report


def kkt_report(method, weights, X, Y, H=None, *, reference=True, top: int = 5, **params) -> KKTReport:
    """Which margin constraints and optimality conditions the ``weights`` fail, by how much.

    For every sample the model's loss-augmented oracle gives the most violated class pair and
    its slack under ``weights`` (``report.margin``, worst first).  With ``reference=True``
    (default: solve the method's certified primal on this data; or pass a reference Solution)
    the report also lists the samples whose slack differs from the optimum's and the weight
    rows (classes / nodes) farthest from the optimal weights: the optimality conditions that
    fail.  Keywords as in :func:`objective`.  ``str(report)`` is readable; numbers such as
    ``report.max_violation``, ``report.suboptimality``, ``report.optimality[0].sample`` are
    for tests to assert on."""
    problem = Problem.from_arrays(as_method(method), X, Y, H, **params)
    user = read_result(weights)
    if user.weights is None:
        raise InputError("kkt_report() needs weights, not a bare objective value")
    if reference is True:
        reference = problem.reference()
    elif reference is False:
        reference = None
    return build_report(problem, user, reference, top)
