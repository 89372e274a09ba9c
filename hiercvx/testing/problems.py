"""Test problems of a registered method: data, model options, parameters and (on first use) the
certified reference.

A :class:`Problem` is what :func:`hiercvx.testing.check_solver` runs a user's solver on and what
the pytest fixture ``reference_problem`` hands to a test.  :func:`problems_for` generates them
from the method's built-in cases (``method.cases(quick=True)``, one or more per structure the
method supports): the same model options and parameters, fresh data of the same structure from
:func:`hiercvx.methods.cases.problem` at any seed and size, so a failure can be re-run smaller.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..exceptions import InputError, InputTypeError
from ..hierarchy import Hierarchy
from ..methods import STRUCTURES, Case, Method, get
from ..methods.cases import problem as generate_data
from ..solvers.dc import FIXED_POINT
from .options import PARAMETER_PROBE_FACTOR, option_probes, resolve

__all__ = ["Problem", "as_method", "is_local", "problems_for", "regenerate", "split_options"]


def is_local(reference) -> bool:
    """Whether a reference :class:`~hiercvx.result.Solution` certifies a local point only: a
    fixed point of the DC algorithm (``status == "fixed_point"``; HPSI's psi-learning, which is
    nonconvex), whose ``lower_bound`` bounds its last convex majorant, not the method's
    objective.  Such a reference is no optimum: a lower objective is a better point, and no
    answer is called optimal for it."""
    return getattr(reference, "status", "") == FIXED_POINT


def as_method(method) -> Method:
    """A registered :class:`~hiercvx.methods.Method` from its name (or the method itself)."""
    if isinstance(method, Method):
        return method
    if not isinstance(method, str):
        raise InputError(f"method must be a registered method name or a hiercvx.methods.Method, got "
                         f"{type(method).__name__}")
    return get(method)


def split_options(method: Method, options: dict) -> tuple[dict, dict]:
    """``(params, model_options)``: the method's regularization parameters (``method.params``,
    e.g. ``C`` or ``lam``) with their defaults filled in, and every other keyword."""
    params = dict(method.params)
    model_options = {}
    for key, value in options.items():
        (params if key in method.params else model_options)[key] = value
    _check_option_names(method, model_options)
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value <= 0:
            raise InputError(f"{method.name}'s parameter {key} must be a positive finite number, "
                             f"got {value!r}")
    return params, model_options


def option_names(method: Method) -> tuple | None:
    """The model options ``method.prepare`` takes by keyword (None when it takes any)."""
    params = list(inspect.signature(method.prepare).parameters.values())
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return tuple(p.name for p in params[3:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _builder_names(builder) -> set | None:
    """The keywords a reference builder takes (None when it takes any)."""
    params = inspect.signature(builder).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def reference_refusal(method: Method, names) -> str:
    """Why the certified primal reference cannot take the model options ``names`` ("" when
    it takes them, or when its builder takes any keyword and says so only when called),
    naming what it takes and the reference that takes them where there is one."""
    takes = _builder_names(method.references["primal"])
    refused = [k for k in names if takes is not None and k not in takes]
    if not refused:
        return ""
    return refused_text(method, refused)


def refused_text(method: Method, refused) -> str:
    """The message of :func:`reference_refusal` for the options ``refused``."""
    takes = _builder_names(method.references["primal"])
    known = "" if takes is None else \
        f" (its model options: {', '.join(sorted(k for k in option_names(method) or () if k in takes))})"
    text = (f"{method.name}'s certified primal reference, which check_solver and problem.reference() "
            f"solve, does not take {', '.join(refused)}{known}; drop "
            f"{', '.join(f'{k}=' for k in refused)} from the problem's options")
    others = [role for role, builder in method.references.items() if role != "primal"
              and (_builder_names(builder) or set()) >= set(refused)]
    if others:
        text += (f"; its {others[0]!r} reference takes them: hiercvx.methods.get({method.name!r})."
                 f"build({others[0]!r}, problem.case).solve() solves that problem (not checked by "
                 "check_solver)")
    return text


def _check_option_names(method: Method, model_options: dict) -> None:
    valid = option_names(method)
    if valid is None:
        return
    unknown = [k for k in model_options if k not in valid]
    if unknown:
        hints = [f"{k!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(str(k), valid, 1))
                 else repr(k) for k in unknown]
        raise InputError(f"{method.name} has no option {', '.join(hints)}; its parameters are "
                         f"{', '.join(method.params)} and its model options "
                         f"{', '.join(valid)}")


def _count(name: str, value, low: int, optional: bool = True):
    """``value`` as an int of at least ``low`` (None stays None where ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InputError(f"{name} must be an integer of at least {low}, got {value!r}")
    return int(value)


@dataclass
class Problem:
    """One test problem of ``method``: ``X, Y, H``, the model options (``prepare``'s keywords,
    e.g. ``sample_weight``) and the parameters (e.g. ``C``); ``structure``, ``seed`` say where
    the data came from (``seed`` None: given by the caller).
    :meth:`~hiercvx.testing.problems.Problem.reference` solves the method's certified primal
    once."""

    method: Method
    structure: str
    X: Any
    Y: Any
    H: Any
    model_options: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    seed: int | None = None
    template: Case | None = field(default=None, repr=False)
    _reference: Any = field(default=None, repr=False)
    _model: Any = field(default=None, repr=False)
    _variants: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_arrays(cls, method, X, Y, H=None, **options) -> Problem:
        """A problem on the caller's data; ``options`` are split into parameters and model
        options by the method's ``params``."""
        method = as_method(method)
        params, model_options = split_options(method, options)
        return cls(method, "given", X, Y, H, model_options, params)

    # sizes and names -------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def case(self) -> Case:
        """The problem as a registry :class:`~hiercvx.methods.Case`."""
        return Case(self.name, self.structure, self.X, self.Y, self.H, dict(self.model_options),
                    dict(self.params))

    @property
    def options(self) -> dict:
        """What a user's ``fit`` receives as keywords: the parameters, then the model options."""
        return {**self.params, **self.model_options}

    def describe_options(self) -> str:
        """The parameters and model options, arrays shown by their shape only."""
        parts = []
        for key, value in self.options.items():
            if isinstance(value, np.ndarray) or sp.issparse(value):
                parts.append(f"{key}=<array {value.shape}>")
            else:
                parts.append(f"{key}={value!r}")
        return ", ".join(parts)

    @property
    def name(self) -> str:
        seed = "" if self.seed is None else f" seed={self.seed}"
        sparse = " (sparse X)" if sp.issparse(self.X) else ""
        return f"{self.structure}{seed} n={self.n} d={self.d}{sparse}"

    @property
    def id(self) -> str:
        """A short pytest id: ``hsvm-tree-s0-n36``."""
        seed = "" if self.seed is None else f"-s{self.seed}"
        return f"{self.method.name}-{self.structure}{seed}-n{self.n}"

    def __str__(self):
        return f"{self.method.name} on {self.name} with {self.describe_options()}"

    def __repr__(self):  # compact: never the arrays
        return f"Problem({self})"

    # the method on this problem --------------------------------------------------------------
    def model(self):
        """The method's model (``method.prepare``) on this problem, built once."""
        if self._model is None:
            self._model = self.method.prepare(self.X, self.Y, self.H, **self.model_options)
        return self._model

    def reference(self, role: str = "primal", **solve_options):
        """The certified reference :class:`~hiercvx.result.Solution` (solved once per problem
        for the default options)."""
        solve_options.setdefault("verbose", False)
        if set(solve_options) != {"verbose"} or role != "primal":
            return self._build(role).solve(**solve_options)
        if self._reference is None:
            self._reference = self._build("primal").solve(**solve_options)
        return self._reference

    def _build(self, role: str):
        """The reference ``role`` declared on this problem; a model option its builder does not
        take raises :class:`~hiercvx.exceptions.InputError` saying so."""
        try:
            return self.method.build(role, self.case)
        except TypeError as exc:
            refused = [k for k in self.model_options if f"argument '{k}'" in str(exc)]
            if role != "primal" or not refused:
                raise
            raise InputError(refused_text(self.method, refused)) from exc

    def variant(self, model_options: dict | None = None, params: dict | None = None) -> Problem:
        """The same data with some model options and parameters changed (``None`` removes an
        option); built once per change, so its reference is solved once."""
        model_options, params = dict(model_options or {}), dict(params or {})
        key = _key(model_options) + _key(params)
        if key not in self._variants:
            options = {k: v for k, v in {**self.model_options, **model_options}.items() if v is not None}
            self._variants[key] = Problem(self.method, self.structure, self.X, self.Y, self.H, options,
                                          {**self.params, **params}, self.seed)
        return self._variants[key]

    def resized(self, n: int | None = None, d: int | None = None, seed: int | None = None) -> Problem:
        """The same kind of problem with other sizes or seed (a generated problem only)."""
        if self.template is None:
            raise InputError("only generated problems (problems_for) can be resized")
        return regenerate(self.method, self.template, n=n or self.n, d=d or self.d,
                          seed=self.seed if seed is None else seed)


def _key(options: dict) -> tuple:
    """A hashable key of option values (arrays by their bytes)."""
    return tuple(sorted((k, (np.shape(v), np.asarray(v).tobytes()) if isinstance(v, np.ndarray) else repr(v))
                        for k, v in options.items()))


def _flat_tree(y) -> tuple[np.ndarray, Hierarchy]:
    """Class indices as leaves ``c<k>`` of a one-level tree (how tree-only methods see ``flat``)."""
    names = [f"c{k}" for k in sorted({int(v) for v in y})]
    H = Hierarchy.from_parents({"root": None, **{v: "root" for v in names}})
    return np.array([f"c{int(v)}" for v in y], dtype=object), H


def _label_sets(Y) -> bool:
    return len(Y) > 0 and isinstance(Y[0], (set, frozenset))


def _like_template(template: Case, X, Y, H):
    """Reshape generated ``(X, Y, H)`` the way the method's own case did: ``H`` dropped for flat
    methods, a one-level tree for tree-only methods on ``flat``, self-leaves for partial paths,
    one label per sample where the case has single labels."""
    if _label_sets(Y) and not _label_sets(template.Y):
        Y = [min(labels) for labels in Y]
    if template.H is None:
        return X, np.asarray(Y) if not isinstance(Y, list) else Y, None
    if H is None:
        Y, H = _flat_tree(Y)
        return X, Y, H
    if isinstance(template.H, Hierarchy) and set(template.H.nodes) != set(H.nodes):
        paths = H.with_self_leaves()
        if set(paths.hierarchy.nodes) == set(template.H.nodes):
            return X, paths.transform(Y), paths.hierarchy
    return X, Y, H


def _resized_options(template: Case, n: int, Y, seed: int, rng) -> dict:
    """The template's model options with per-sample arrays (``sample_weight``) redrawn for n and
    the option probes' data-dependent values (:mod:`hiercvx.testing.options`) computed."""
    n0 = template.X.shape[0]
    out = {}
    for key, value in template.model_options.items():
        if callable(value):
            value = resolve({key: value}, n, Y, seed)[key]
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.shape[0] == n0 != n:
            lo, hi = float(np.min(value)), float(np.max(value))
            value = rng.uniform(lo, hi, n) if hi > lo else np.full(n, lo)
        out[key] = value
    return out


def regenerate(method, template: Case, n: int, d: int, seed: int) -> Problem:
    """A fresh problem of ``template``'s structure, options and parameters at size ``(n, d)``."""
    method = as_method(method)
    X, Y, H = generate_data(template.structure, n=n, d=d, seed=seed)
    X, Y, H = _like_template(template, X, Y, H)
    options = _resized_options(template, n, Y, seed, np.random.default_rng(seed + 1))
    return Problem(method, template.structure, X, Y, H, options, dict(template.params), seed, template)


def _probe_templates(method: Method, wanted, quick: bool) -> list:
    """One template per option probe (:data:`hiercvx.testing.options.OPTION_PROBES`): the
    method's first built-in case of the probe's structure, with the probe's options only."""
    cases = method.cases(quick)
    out = []
    for option, structure, probe in option_probes(method, wanted):
        base = next((c for c in cases if c.structure == structure), None)
        if base is None:
            continue
        X, Y, H = base.X, base.Y, base.H
        if structure == "multilabel" and base.H is not None:
            X, Y, H = generate_data(structure, n=base.X.shape[0], d=base.X.shape[1], seed=0)
        out.append(Case(f"{structure}, option {option}", structure, X, Y, H, dict(probe),
                        dict(base.params)))
    return out


def _parameter_probes(first: Case) -> list:
    """One template per parameter of ``first`` (a built-in case with the caller's overrides):
    the same problem with that parameter times ``PARAMETER_PROBE_FACTOR``."""
    return [replace(first, name=f"{first.structure}, parameter {key}",
                    params={**first.params, key: value * PARAMETER_PROBE_FACTOR})
            for key, value in first.params.items()]


def problems_for(method, *, structures=None, seeds=(0,), n: int | None = None, d: int | None = None,
                 quick: bool = True, probes: bool = True, **options) -> list[Problem]:
    """Problems of ``method``: one per built-in case (``method.cases(quick)``) of the chosen
    ``structures`` (default: all the method supports) and per seed in ``seeds``, then (``probes``)
    one per option probe: every model option alone away from its default, and every parameter
    (``C``, ``lam``) on the first case at :data:`~hiercvx.testing.options.PARAMETER_PROBE_FACTOR`
    times its value (:mod:`hiercvx.testing.options`).  Sizes ``n``, ``d`` default to the case's.  ``options``
    override the cases' parameters (``C=...``) and model options (``fit_intercept=True``, ...).
    Seed 0 at the case's size is the case's data."""
    method = as_method(method)
    n, d = _count("n", n, 2), _count("d", d, 1)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise InputError(f"seeds must be a sequence of non-negative integers, got {seeds!r}")
    seeds = [_count("each seed", s, 0, optional=False) for s in seeds]
    if not seeds:
        raise InputError("seeds is empty: give at least one seed, e.g. seeds=(0,)")
    if isinstance(structures, str):
        structures = (structures,)
    if structures is not None and (not hasattr(structures, "__iter__")
                                   or not all(isinstance(s, str) for s in structures)):
        raise InputTypeError(f"structures must be None, a structure name or a sequence of them "
                             f"(known: {STRUCTURES}), got {structures!r}")
    wanted = tuple(method.structures) if structures is None else tuple(structures)
    unknown = [s for s in wanted if s not in STRUCTURES]
    if unknown:
        raise InputError(f"unknown structures {unknown}; known: {STRUCTURES}")
    unsupported = [s for s in wanted if s not in method.structures]
    if unsupported:
        raise InputError(f"method {method.name} does not support {unsupported}; it supports "
                         f"{method.structures}")
    params, model_options = split_options(method, options)
    refusal = reference_refusal(method, model_options)
    if refusal:
        raise InputError(refusal)
    out = []
    templates = [c for c in method.cases(quick) if c.structure in wanted]
    if probes:
        templates += _probe_templates(method, wanted, quick)
    given = {k: v for k, v in options.items() if k in params}
    templates = [replace(case, params={**case.params, **given},
                         model_options={**case.model_options, **model_options})
                 for case in templates]
    if probes and templates:
        templates += _parameter_probes(templates[0])
    for template in templates:
        for seed in seeds:
            out.append(regenerate(method, template, n or template.X.shape[0],
                                  d or template.X.shape[1], int(seed)))
    if not out:
        raise InputError(f"method {method.name} has no built-in case of structures {wanted}")
    return out
