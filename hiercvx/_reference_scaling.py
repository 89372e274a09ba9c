"""Badly scaled data in the exact references: the declaration rebuilt on ``X / s``, and the
radial polish of a returned point.

Every hiercvx objective is ``R(W) + C L(X W)`` with ``R`` homogeneous of degree 2 (or
``lam R(W) + L(X W)``), so with ``V = s W`` the problem on ``(X, C)`` is the problem on
``(X / s, C s^2)`` with every objective value multiplied by ``s^2`` (``lam / s^2``: the same
values).  A builder decorated with :func:`rescales_features` records that map on its
:class:`~hiercvx.reference.ReferenceProblem` when ``X``'s largest entry lies outside
``[1e-2, 1e2]``; :meth:`~hiercvx.reference.ReferenceProblem.solve` then solves the rebuilt
problem first (an interior-point solver sees weights and features of unit size), maps its
point back (``W = V / s``, multipliers ``/ s^2``, slacks and free biases unchanged) and
certifies that point on the user's problem: the objective recomputed from the user's data,
the lower bound the rebuilt problem's certified bound times ``s^-2`` (exact: the optimal
values are in that ratio).  ``s`` is a power of two, so ``X / s`` and ``C s^2`` are exact.

``C s^2`` itself is what makes such a problem hard (``C`` times the squared size of the
features is the scale-free quantity), so the rebuilt problem is solved at a moderate ``C``
first (:meth:`FeatureScaling.steps`): scaled up, at ``C' = 1e3, 1e4, ...``, whose optimum is
the user's once the margin is hard (no multiplier at its box) and whose bound holds at every
larger ``C``; scaled down, at ``C' = 1e-3`` and ``5e-4``, where the solution is still linear in
``C``: weights and multipliers scaled by ``C s^2 / C'``, slacks and free biases extrapolated
along the path, the bound the user's own at the mapped duals.  A step whose premise fails
gives a point whose certificate fails, and the next step follows.

:func:`radial_polish` moves a returned point along the ray through it (every variable times
``t`` near 1): hinge losses at a margin met to round-off cost ``C`` times the round-off, a
large amount when ``C s^2`` is large (separable data scaled up), and a factor ``1 + 1e-12``
on the weights removes it.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np
import scipy.sparse as sp

__all__ = ["FeatureScaling", "Step", "feature_scale", "rescales_features", "radial_polish"]


class Step(NamedTuple):
    """One solve of the rebuilt problem (:meth:`FeatureScaling.steps`): its weight, and the
    factors that map its answer to the user's problem beyond the powers of ``s``.

    ``bound``: of its certified bound (``None``: the bound is the user's own, evaluated at the
    mapped point and duals); ``multipliers``: of :attr:`FeatureScaling.multipliers`;
    ``weights``: of the variables of power ``-1`` (weights, regularized intercepts);
    ``duals``: of the constraints' duals; ``partner``: a second weight solved too, the other
    variables (slacks, free biases: affine in ``C`` where the solution is linear) taken at
    ``v + extrapolate (v_partner - v)``."""

    value: float
    bound: float | None = 1.0
    multipliers: float = 1.0
    weights: float = 1.0
    duals: float = 1.0
    partner: float | None = None
    extrapolate: float = 0.0


def feature_scale(X, inside: tuple = (1e-2, 1e2)) -> float | None:
    """The power of two nearest ``X``'s largest absolute entry when that lies outside
    ``inside``; ``None`` when ``X`` is well scaled, empty, or not a finite numeric matrix."""
    top = _largest(X)
    if not np.isfinite(top) or top == 0.0 or inside[0] <= top <= inside[1]:
        return None
    return float(2.0 ** np.round(np.log2(top)))


def _largest(X) -> float:
    """``X``'s largest absolute entry (0 when it has none or is not numeric)."""
    try:
        data = X.data if sp.issparse(X) else np.asarray(X, dtype=float)
        return float(np.max(np.abs(data))) if np.size(data) else 0.0
    except (TypeError, ValueError):
        return 0.0


@dataclass
class FeatureScaling:
    """How a reference maps to the same declaration on ``X / factor``.

    Attributes
    ----------
    factor : float
        ``s``: the rebuilt problem's features are ``X / s``.
    builder : callable
        The decorated builder (module level, so the record pickles).
    arguments : dict
        The builder's arguments with ``X / s``, the weight and ``intercept_scaling`` rebuilt.
    weight : str
        The swept parameter read from the user's problem at each solve (``"C"``, ``"lam"``).
    weight_power : int
        The rebuilt weight is the user's times ``s**weight_power`` (2 for ``C``, -2 for ``lam``).
    objective_power : int
        The user's objective is the rebuilt one times ``s**objective_power`` (-2, or 0).
    powers : mapping
        Per variable, the user's value is the rebuilt one times ``s**power``.
    cap : float
        The largest ``C`` (``1 / lam``) the rebuilt problem is first solved with
        (:meth:`weights`).
    multipliers : tuple
        The variables that are multipliers (of the dual formulations): at a rebuilt weight
        other than the user's they map with :attr:`Step.multipliers`.
    floor : float
        The smallest ``C`` (largest ``1 / lam``) the rebuilt problem is solved with when the
        user's is smaller (:meth:`steps`).
    """

    factor: float
    builder: Callable
    arguments: dict
    weight: str
    weight_power: int
    objective_power: int
    powers: Mapping[str, int]
    cap: float = 1e3
    multipliers: tuple = ()
    floor: float = 1e-3
    problem: Any = None

    def __getstate__(self):
        # the rebuilt problem is a cache (CVXPY objects): rebuilt after unpickling
        return {**self.__dict__, "problem": None}

    def steps(self, user) -> list[Step]:
        """The rebuilt problems to solve, in order (:class:`Step`).

        The user's weight rebuilt (``C s^2``) is huge for separable data scaled up, a problem
        no interior-point solver solves to 1e-6; its optimum is that of any ``C' <= C s^2``
        at which no multiplier reaches its box (the hard margin), and the objective grows
        with ``C``, so ``C' = cap, 10 cap, ..., 1e5 cap`` come first: their bound bounds the
        user's problem (for ``lam``: times ``lam / lam'``), their point is optimal when the
        margin is hard.  It is tiny for data scaled down: the objective is then its value at
        zero up to a decrease no solver resolves; while no margin reaches its hinge the
        solution is linear in ``C`` (weights and a ``C`` form's multipliers ``C g``), so
        ``C' = floor`` comes first, its point scaled by ``C s^2 / floor`` and certified with
        the user's own bound.  The user's weight rebuilt comes last."""
        value = self.arguments.get(self.weight)
        param = user.parameters.get(self.weight)
        if param is not None and param.value is not None:
            value = float(param.value)
        value = value * self.factor ** self.weight_power
        c_form = self.weight_power > 0
        c_equivalent = value if c_form else 1.0 / value
        out, c = [], self.cap
        while c < c_equivalent and len(out) < 6:
            out.append(Step(c) if c_form else Step(1.0 / c, value * c, value * c, 1.0, value * c))
            c *= 10.0
        if c_equivalent < self.floor:
            r, t = c_equivalent / self.floor, 2.0 * (1.0 - c_equivalent / self.floor)
            out.append(Step(self.floor, None, r, r, r, self.floor / 2, t) if c_form else
                       Step(1.0 / self.floor, None, 1.0, r, 1.0, 2.0 / self.floor, t))
        # unscaled features at the user's weight: the user's problem itself (its own tries)
        return out if self.factor == 1.0 else out + [Step(value)]

    def rebuilt(self, value: float) -> Any:
        """The rebuilt :class:`~hiercvx.reference.ReferenceProblem` with its weight at
        ``value`` (built once, then only the parameter changes)."""
        if self.problem is None or self.weight not in self.problem.parameters:
            self.problem = self.builder(**{**self.arguments, self.weight: value})
            self.problem.scaling = None  # solved as it is (its own tries), never rebuilt again
        else:
            self.problem.set(**{self.weight: value})
        return self.problem

    def values(self, values: dict, step: Step = Step(1.0), other: dict | None = None) -> dict | None:
        """The rebuilt problem's values in the user's units (times the factors of ``step``;
        with ``other``, the values at ``step.partner``, the variables without a factor
        extrapolated); ``None`` when a variable has no declared power (the map is not known:
        the caller solves the user's problem)."""
        if any(k not in self.powers for k in values):
            return None

        def extra(k):
            if k in self.multipliers:
                return step.multipliers
            return step.weights if self.powers[k] == -1 else 1.0

        def value(k, v):
            if other is not None and extra(k) == 1.0:
                v = v + step.extrapolate * (other[k] - v)
            return v * self.factor ** self.powers[k] * extra(k)

        return {k: value(k, v) for k, v in values.items()}

    def objective(self, value: float) -> float:
        """A rebuilt objective or bound in the user's units."""
        return float(value) * self.factor ** self.objective_power


def rescales_features(powers: Mapping[str, int], *, weight: str = "C",
                      objective_power: int | None = None, kernel: str = "kernel",
                      inside: tuple = (1e-2, 1e2), cap: float = 1e3, multipliers: tuple = (),
                      floor: float = 1e-3):
    """Decorate a reference builder ``builder(X, ..., C=..., ...)`` so its problem carries a
    :class:`FeatureScaling` when ``X`` is badly scaled (:func:`feature_scale`).

    Parameters
    ----------
    powers : mapping
        Per variable name, the power of ``s`` from the rebuilt value to the user's (weights
        ``-1``, multipliers of a ``C`` form ``-2``, slacks and free biases ``0``).  A variable
        not listed leaves the problem unscaled.
    weight : str
        ``"C"`` (rebuilt ``C s^2``, objective ``s^-2``) or ``"lam"`` (``lam s^-2``, the same
        objective).
    objective_power : int, optional
        Overrides the objective's power.
    kernel : str
        The builder's kernel argument: only a linear kernel (or none) is rescaled.
    inside : tuple
        The range of ``X``'s largest entry left as it is.
    cap : float
        :attr:`FeatureScaling.cap`: a ``C`` above which the rebuilt problem is first solved at
        smaller ``C`` (also when ``X`` is well scaled and ``C`` times its largest entry squared
        exceeds ``1e3 cap``); 1e3 is what interior-point solvers solve to 1e-9 on unit-size
        features.
    multipliers : tuple
        :attr:`FeatureScaling.multipliers`.
    floor : float
        :attr:`FeatureScaling.floor` (also when ``X`` is well scaled and ``C`` times its
        largest entry squared is below ``1e-3 floor``).
    """
    weight_power = 2 if weight == "C" else -2
    obj_power = (-2 if weight == "C" else 0) if objective_power is None else objective_power

    def decorate(builder):
        signature = inspect.signature(builder)

        @functools.wraps(builder)
        def build(*args, **kwargs):
            problem = builder(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            if arguments.get(kernel, "linear") not in ("linear", None):
                return problem
            X = next(iter(arguments.values()))
            s = feature_scale(X, inside)
            if s is None:  # well scaled: rebuilt only for a huge or tiny C
                top = _largest(X)
                c = arguments.get(weight)  # the builder has checked it: a positive number
                c = None if c is None else float(c)
                c = c if weight_power > 0 or not c else 1.0 / c
                if not (top and c and not 1e-3 * floor <= c * top * top <= 1e3 * cap):
                    return problem
                s = 1.0
            first = next(iter(arguments))
            arguments[first] = X / s if sp.issparse(X) else np.asarray(X, dtype=float) / s
            if "intercept_scaling" in arguments and arguments.get("fit_intercept"):
                arguments["intercept_scaling"] = float(arguments["intercept_scaling"]) / s
            extra = {k: arguments.pop(k) for k in [k for k, p in signature.parameters.items()
                                                   if p.kind is p.VAR_KEYWORD]}
            for more in extra.values():
                arguments.update(more)
            problem.scaling = FeatureScaling(s, wrapper_of(builder), arguments, weight,
                                             weight_power, obj_power, dict(powers), cap,
                                             tuple(multipliers), floor)
            return problem

        build.__wrapped_builder__ = builder
        _WRAPPERS[builder] = build
        return build

    return decorate


#: decorated builder -> its wrapper (the module-level name a scaling record calls and pickles)
_WRAPPERS: dict = {}


def wrapper_of(builder):
    """The module-level wrapper of a decorated ``builder``."""
    return _WRAPPERS.get(builder, builder)


def radial_polish(objective: Callable, values: dict, current: float,
                  infeasibility: Callable | None = None, feas_tol: float = np.inf,
                  exponents=range(-15, -3)) -> tuple[dict, float]:
    """The best of ``values`` times ``t`` for ``t = 1 +- m 10**k`` (``m`` in 1, 2, 5; ``k`` in
    ``exponents``) by the recomputed ``objective``, keeping feasibility (``infeasibility <=
    feas_tol``); ``(values, current)`` when none is lower."""
    best, best_value = values, float(current)
    steps = [m * 10.0 ** k for k in exponents for m in (1.0, 2.0, 5.0)]
    for step in steps:
        for t in (1.0 + step, 1.0 - step):
            trial = {name: v * t for name, v in values.items()}
            try:
                with np.errstate(all="ignore"):
                    value = float(objective(trial))
                    if infeasibility is not None and not float(infeasibility(trial)) <= feas_tol:
                        continue
            except (ArithmeticError, ValueError, TypeError):
                continue
            if np.isfinite(value) and value < best_value:
                best, best_value = trial, value
    return best, best_value
