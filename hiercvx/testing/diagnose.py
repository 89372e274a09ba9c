"""Diagnoses of a failing solver: which neighbouring problem its answer solves, and plain facts
about its weights.

A diagnosis is printed only after it has been re-checked on the failing problem itself:

- a **mistake** (:data:`MISTAKES`) names a neighbouring problem -- C scaled by a factor or left
  at another value, sample or class weights dropped, the intercept dropped, unregularized or
  scaled differently, the other loss, rescaling or class attributes -- and is reported when the
  user's answer fails the asked problem and is optimal for that neighbour: its objective is
  within ``rtol`` of the neighbour's certified optimum and, where the method is strongly convex
  (``hiercvx.testing._judge``), its weights within the neighbour's certified neighbourhood
  (weights in another shape than the asked problem's are judged by the neighbours of their
  shape alone: a kernel ignored gives feature weights where expansion coefficients are asked);
- a **fact** about the weights is reported when it holds: a row of zeros where the optimum has
  weight, the optimum's rows in another order, weights that are a multiple of the optimum's.

Both assume the reference certifies the optimum; a nonconvex method whose reference is a DC
fixed point (HPSI) gets no diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..exceptions import InputError
from ..hierarchy import class_attributes
from ..result import comparison_scale
from ._judge import judge_weights
from .diagnostics import (UserResult, missing_parts, objective_at, read_result, row_labels,
                          row_order)
from .problems import Problem, is_local

__all__ = ["Diagnosis", "MISTAKES", "Mistake", "diagnose", "optimal_for", "own_node_attributes",
           "parameter_neighbours"]


@dataclass(frozen=True)
class Diagnosis:
    """One verified statement about a failing answer: ``key`` (what kind, e.g. ``"C_scaled"``)
    and ``text`` (one line for the failure message)."""

    key: str
    text: str

    def __str__(self):
        return f"diagnosis: {self.text}"


@dataclass(frozen=True)
class Mistake:
    """A neighbouring problem a solver may solve instead: ``key``, ``what`` it is, and
    ``variants(problem) -> [(model option changes, parameter changes, description)]``."""

    key: str
    what: str
    variants: object


def parameter_neighbours(p: Problem) -> list:
    """``[(name, value, how)]``: values a solver may have used for a parameter (``C``, ``lam``)
    in place of the one given -- the given value halved, doubled, averaged over the samples (1/n)
    or summed (n), a tenth, ten times; the method's default; a built-in case's value -- each once,
    ``how`` saying which in words."""
    out = []
    for name, value in p.params.items():
        factors = ((0.5, "1/2"), (2.0, "2"), (1.0 / p.n, f"1/n (n = {p.n})"),
                   (float(p.n), f"n (n = {p.n})"), (0.1, "1/10"), (10.0, "10"))
        seen = [float(value)]
        for factor, label in factors:
            seen.append(value * factor)
            out.append((name, value * factor, f"{name} is scaled by {label}"))
        fixed = [p.method.params.get(name)] + [c.params.get(name) for c in p.method.cases(True)]
        for v in fixed:
            if v is not None and not np.isclose(seen, v, rtol=1e-9, atol=0.0).any():
                seen.append(float(v))
                out.append((name, float(v), f"{name} = {value:g} is not used"))
    return out


def _scaled_parameter(p: Problem):
    """Each of :func:`parameter_neighbours` as a neighbouring problem."""
    return [({}, {name: v}, f"{how}: your weights are optimal for {name} = {v:.6g} instead of "
                            f"{p.params[name]:g}")
            for name, v, how in parameter_neighbours(p)]


def _without(key: str, meaning: str):
    def variants(p: Problem):
        if p.model_options.get(key) is None:
            return []
        return [({key: None}, {}, f"{key} is ignored ({meaning}): your weights are optimal "
                                  f"without it")]
    return variants


def _intercept_dropped(p: Problem):
    if not p.model_options.get("fit_intercept"):
        return []
    return [({"fit_intercept": False}, {}, "the intercept is not fitted: your weights are optimal "
                                           "for fit_intercept=False")]


def _intercept_unregularized(p: Problem):
    if not p.model_options.get("fit_intercept"):
        return []
    return [({"intercept_scaling": 1e3}, {}, "the intercept is not regularized: your weights are "
             "optimal for intercept_scaling=1000, where the bias's penalty b^2 / (2 s^2) is "
             "negligible (the method regularizes b / intercept_scaling like a weight, as LIBLINEAR)")]


def _intercept_scaled(p: Problem):
    if not p.model_options.get("fit_intercept"):
        return []
    current = float(p.model_options.get("intercept_scaling", 1.0))
    return [({"intercept_scaling": s}, {}, f"the intercept is scaled differently: your weights are "
             f"optimal for intercept_scaling={s:g}, not {current:g} (the bias feature's value s; "
             "b = s * w_b with w_b regularized)")
            for s in (1.0, 2.0, 10.0, 0.5) if s != current]


def _other_values(key: str, default: str, choices: tuple, what: str):
    """The neighbours where the string option ``key`` takes each of its other ``choices``."""
    def variants(p: Problem):
        current = p.model_options.get(key, default)
        if not isinstance(current, str):
            return []
        return [({key: value}, {}, f"{what}: your weights are optimal for {key}={value!r}, not "
                                   f"{current!r}")
                for value in choices if value != current]
    return variants


_other_losses = _other_values("loss", "half_symmetric",
                              ("zero_one", "symmetric_difference", "half_symmetric"),
                              "the wrong loss Delta")
_other_attributes = _other_values("attributes", "class_depth",
                                  ("class_depth", "indicator", "tree_depth", "normalized"),
                                  "other class attributes")
_other_rescaling = _other_values("rescaling", "slack", ("slack", "margin"), "the other rescaling")


def own_node_attributes(p: Problem):
    """Class attributes with each class's ancestors dropped: only its own node's column."""
    scheme = p.model_options.get("attributes", "class_depth")
    if not isinstance(scheme, str) or p.H is None:
        return []
    classes = list(p.model_options.get("classes") or p.H.leaves)
    Lam = class_attributes(p.H, classes, scheme=scheme)
    own = np.zeros_like(Lam)
    for row, c in enumerate(classes):
        own[row, p.H.nodes.index(c)] = 1.0
    return [({"attributes": Lam * own}, {}, "ancestors are missing: your weights are optimal when "
             "each class's attribute row holds only its own node, not its ancestors (thesis (3.7))")]


def _options_ignored(p: Problem):
    """Each non-default model option dropped: the method's default in its place."""
    return [({key: None}, {}, f"{key}={_short(value)} is ignored: your weights are optimal for the "
                              f"method's default {key}")
            for key, value in p.model_options.items() if value is not None]


def _short(value) -> str:
    return f"<array {np.shape(value)}>" if isinstance(value, np.ndarray) else repr(value)


_MARGIN = ("multiclass", "hsvm")
_BIASED = ("multiclass", "hsvm", "orthogonal", "flatmult", "hiermult", "transfer", "treeloss",
           "nhsvm", "shared_norm")

#: the neighbouring problems :func:`diagnose` tries, per method
MISTAKES = (
    Mistake("C_scaled", "C (or lambda) scaled", _scaled_parameter),
    Mistake("sample_weight_ignored", "sample_weight ignored",
            _without("sample_weight", "sample i's loss is weighted by C * sample_weight_i")),
    Mistake("class_weight_ignored", "class_weight ignored",
            _without("class_weight", "sample i's loss is weighted by C * class_weight[y_i]")),
    Mistake("intercept_dropped", "intercept not fitted", _intercept_dropped),
    Mistake("intercept_unregularized", "intercept not regularized", _intercept_unregularized),
    Mistake("intercept_scaled", "intercept scaled differently", _intercept_scaled),
    Mistake("other_loss", "another loss", _other_losses),
    Mistake("ancestors_missing", "class attributes without ancestors", own_node_attributes),
    Mistake("other_attributes", "other class attributes", _other_attributes),
    Mistake("other_rescaling", "the other rescaling", _other_rescaling),
    Mistake("option_ignored", "a model option ignored", _options_ignored),
)

#: which methods each mistake applies to (keys of :data:`MISTAKES`)
APPLIES = {
    "C_scaled": None,  # every method
    "sample_weight_ignored": _MARGIN,
    "class_weight_ignored": ("multiclass",),
    "intercept_dropped": _BIASED,
    "intercept_unregularized": _BIASED,
    "intercept_scaled": _BIASED,
    "other_loss": ("hsvm",),
    "ancestors_missing": ("hsvm",),
    "other_attributes": ("hsvm",),
    "other_rescaling": ("hsvm",),
    "option_ignored": None,
}


def optimal_for(problem: Problem, user: UserResult, rtol: float, weight_rtol: float) -> bool:
    """Whether ``user``'s answer is optimal for ``problem``: objective within ``rtol`` of the
    certified optimum (plus its gap) and, where the method is strongly convex, weights within
    the certified neighbourhood.  False where the reference certifies no optimum (a DC fixed
    point, :func:`~hiercvx.testing.problems.is_local`): no answer is called optimal there."""
    # the objective first: weights of another shape fail here, before the neighbour is solved
    mine = objective_at(problem.model(), user, problem.params)
    ref = problem.reference()
    if is_local(ref):
        return False
    if np.shape(user.weights) != np.shape(ref.weights):
        return False
    gap = float(ref.objective - ref.lower_bound)
    if not abs(mine - float(ref.objective)) <= rtol * comparison_scale(float(ref.objective)) + gap:
        return False
    best = read_result(ref)
    judged = judge_weights(problem.model(), user.weights, user.extras.get("intercept"),
                           best.weights, best.extras.get("intercept"), gap, weight_rtol)
    return judged is None or judged.ok


def _mistakes(p: Problem, user: UserResult, rtol: float, weight_rtol: float) -> list:
    out = []
    for mistake in MISTAKES:
        applies = APPLIES[mistake.key]
        if applies is not None and p.method.name not in applies:
            continue
        for options, params, text in mistake.variants(p):
            try:
                variant = p.variant(options, params)
                found = optimal_for(variant, user, rtol, weight_rtol)
            except Exception:  # noqa: BLE001 -- a neighbour the method refuses on this data says nothing
                continue
            if found:
                out.append(Diagnosis(mistake.key, text))
                break  # one variant per mistake is enough to name it
    return out


def _rows(p: Problem, user: UserResult, ref_weights) -> list:
    """Facts about the weight rows: zero rows where the optimum's are not, rows in another order,
    weights that are a multiple of the optimum's."""
    W = np.asarray(user.weights, dtype=float)
    R = np.asarray(ref_weights, dtype=float)
    if W.shape != R.shape or W.ndim != 2:
        return []
    labels = row_labels(p.model(), R, p.H)
    scale = max(float(np.abs(R).max(initial=0.0)), 1e-12)
    norms, ref_norms = np.linalg.norm(W, axis=1), np.linalg.norm(R, axis=1)
    out = []
    zero = [k for k in range(len(W)) if norms[k] <= 1e-12 * scale and ref_norms[k] > 1e-3 * scale]
    if zero:
        out.append(Diagnosis("row_zeroed", "your weight rows " + ", ".join(str(labels[k]) for k in zero[:5])
                             + " are zero; the optimum's have norms "
                             + ", ".join(f"{ref_norms[k]:.3g}" for k in zero[:5])))
    dist = np.linalg.norm(W[:, None, :] - R[None, :, :], axis=2)
    match = dist.argmin(axis=1)
    moved = [k for k in range(len(W)) if match[k] != k and dist[k, match[k]] <= 1e-3 * scale
             and dist[k, k] > 1e-3 * scale and ref_norms[match[k]] > 1e-3 * scale]
    if moved and len(set(match[moved])) == len(moved):
        pairs = ", ".join(f"row {labels[k]} holds the optimum's row {labels[match[k]]}" for k in moved[:4])
        out.append(Diagnosis("rows_permuted", f"your weight rows are the optimum's in another order: "
                                              f"{pairs} (rows follow {row_order(p.model(), R, p.H)})"))
    denom = float(np.sum(R * R))
    if denom > 0:
        t = float(np.sum(W * R) / denom)
        # relative to W: weights near zero are a multiple of nothing
        if abs(t - 1.0) > 1e-6 and 0 < np.linalg.norm(W - t * R) <= 1e-6 * np.linalg.norm(W) \
                or t != 1.0 and np.array_equal(W, t * R) and t != 0.0:
            out.append(Diagnosis("weights_scaled", f"your weights are {t:.6g} times the optimum's "
                                                   "(a scaled answer: check the recovery of the "
                                                   "weights and any normalization)"))
    return out


def _zero_parts(user: UserResult, ref) -> list:
    """A named part of the answer (intercept, biases) that is zero where the optimum's is not."""
    best = read_result(ref)
    out = []
    for name in ("intercept", "biases"):
        mine, theirs = user.extras.get(name), best.extras.get(name)
        if theirs is None or not np.any(np.asarray(theirs, dtype=float)):
            continue
        if mine is None or not np.any(np.asarray(mine, dtype=float)):
            out.append(Diagnosis(f"{name}_zero", f"your {name} is {'missing' if mine is None else 'zero'}; "
                                                 f"the optimum's is not (max |{name}| "
                                                 f"{float(np.abs(np.asarray(theirs, float)).max()):.3g})"))
    return out


def diagnose(problem: Problem, user: UserResult | None, rtol: float, weight_rtol: float) -> list:
    """The verified :class:`Diagnosis` list of ``user``'s answer on the failing ``problem``:
    each neighbouring problem it is optimal for, and facts about its weight rows.  None where
    the reference is a DC fixed point (:func:`~hiercvx.testing.problems.is_local`): a nonconvex
    method's neighbours have no certified optimum to be optimal for, and its reference's weights
    are one local solution, not "the optimum's"."""
    if user is None or user.weights is None or is_local(problem.reference()):
        return []
    if missing_parts(problem.model(), user, problem.params):
        return []   # an answer the objective cannot evaluate is judged by no neighbour
    if np.shape(user.weights) != np.shape(problem.reference().weights):
        # weights of another shape are not optimal for the asked problem (its objective cannot
        # evaluate them) but may be for a neighbour whose weights have their shape -- the kernel
        # ignored: feature weights where expansion coefficients are asked; every neighbour of
        # the asked shape refuses them in optimal_for before it is solved
        return _mistakes(problem, user, rtol, weight_rtol)
    try:
        objective_at(problem.model(), user, problem.params)
    except InputError:
        return []   # non-finite weights or parts: no neighbour and no row fact explains them
    # an answer optimal for the asked problem is explained by no neighbour (the failure is
    # elsewhere: the reported objective, the converged flag)
    out = [] if optimal_for(problem, user, rtol, weight_rtol) else \
        _mistakes(problem, user, rtol, weight_rtol)
    out += _rows(problem, user, problem.reference().weights)
    out += _zero_parts(user, problem.reference())
    return out
