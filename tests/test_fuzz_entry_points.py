"""Fuzzing the public entry points: every estimator's ``fit`` / ``predict`` /
``decision_function``, the :class:`~hiercvx.hierarchy.Hierarchy` constructors and closure,
:mod:`hiercvx.losses` and :mod:`hiercvx.metrics`, the models' ``prepare`` functions and the
registry's reference builders, each called with one argument replaced by generated bad input
(NaN / inf, complex, wrong shapes and dtypes, empty, unknown labels, negative or non-numeric
constants, wrong types for options).

The contract (documented in :mod:`hiercvx.exceptions`):

* bad input raises :class:`~hiercvx.exceptions.InputError` (a ``ValueError``); a wrong *type*
  raises :class:`~hiercvx.exceptions.InputTypeError`, which is an ``InputError`` and a
  ``TypeError`` (Python's convention) -- so every refusal is caught by ``except ValueError``;
* never a raw exception from numpy, scipy, scikit-learn or CVXPY (the one foreign error kept
  is scikit-learn's ``NotFittedError`` for ``predict`` before ``fit``, not fuzzed here);
* a corruption marked *must* (NaN, complex, empty, unknown label, ``C <= 0``, ...) is always
  refused; one marked *may* (an int dtype, a CSR matrix, ``C = 1e300``) may also be accepted,
  or fail as an ``InputError`` or a certified-or-refused ``SolverError``.

Each case is a triple (entry point, argument, corruption) drawn by hypothesis with a seed for
the corruption's position; the bounded run is part of ``make test`` (< 20 s), the ``slow``
variant draws many more.  :func:`outcome` is also what a developer runs over every triple when
adding an entry point.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiercvx.estimators as E
from hiercvx import losses as L
from hiercvx import methods
from hiercvx import metrics as M
from hiercvx.exceptions import InputError, SolverError
from hiercvx.hierarchy import Hierarchy
from hiercvx.methods.cases import TREE, problem
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import multiclass as multiclass_model
from hiercvx.models import nhsvm as nhsvm_model
from hiercvx.models import orthogonal as orthogonal_model
from hiercvx.models import sibling as sibling_model

X0, Y0, _ = problem("tree", n=16, d=3, seed=1)
Y0 = list(Y0)
LEAVES = list(TREE.leaves)
SCORES0 = np.random.default_rng(2).standard_normal((len(Y0), len(LEAVES)))
PRED0 = [LEAVES[(k + 1) % len(LEAVES)] if i % 3 == 0 else y
         for i, (y, k) in enumerate(zip(Y0, range(len(Y0))))]


# ---------------------------------------------------------------------- corruptions
def _at(X, rng, value):
    X = np.array(X, dtype=float)
    X[rng.integers(X.shape[0]), rng.integers(X.shape[1])] = value
    return X


def _one_label(y, rng, value):
    y = list(y)
    y[int(rng.integers(len(y)))] = value
    return y


def _object_with_none(X, rng):
    X = np.array(X, dtype=object)
    X[rng.integers(X.shape[0]), rng.integers(X.shape[1])] = None
    return X


def _sparse_nan(X, rng):
    return sp.csr_matrix(_at(X, rng, np.nan))


MUST, MAY = True, False

#: kind -> corruption name -> (make(valid value, rng) -> bad value, must be refused)
_X_COMMON = {
    "nan": (lambda X, r: _at(X, r, np.nan), MUST),
    "inf": (lambda X, r: _at(X, r, np.inf), MUST),
    "-inf": (lambda X, r: _at(X, r, -np.inf), MUST),
    "complex": (lambda X, r: np.asarray(X) + 1j * r.random(np.shape(X)), MUST),
    "complex dtype, zero imaginary part": (lambda X, r: np.asarray(X, dtype=complex), MUST),
    "1-D": (lambda X, r: np.asarray(X)[:, 0], MUST),
    "3-D": (lambda X, r: np.asarray(X)[:, :, None], MUST),
    "no rows": (lambda X, r: np.asarray(X)[:0], MUST),
    "no columns": (lambda X, r: np.asarray(X)[:, :0], MUST),
    "words": (lambda X, r: np.full(np.shape(X), "word"), MUST),
    "None": (lambda X, r: None, MUST),
    "dict": (lambda X, r: {"a": [1.0, 2.0]}, MUST),
    "ragged rows": (lambda X, r: [[1.0, 2.0, 3.0], [1.0]] * (len(X) // 2), MUST),
    "object array with None": (_object_with_none, MUST),
    "sparse with NaN": (_sparse_nan, MUST),
    "scalar": (lambda X, r: 3.0, MUST),
    "bool dtype": (lambda X, r: np.asarray(X) > 0, MAY),
    "int dtype": (lambda X, r: np.round(np.asarray(X) * 3).astype(int), MAY),
    "float32": (lambda X, r: np.asarray(X, dtype=np.float32), MAY),
    "CSR": (lambda X, r: sp.csr_matrix(X), MAY),
    "nested lists": (lambda X, r: np.asarray(X).tolist(), MAY),
    "huge": (lambda X, r: np.asarray(X) * 1e300, MAY),
    "tiny": (lambda X, r: np.asarray(X) * 1e-300, MAY),
    "all zero": (lambda X, r: np.zeros(np.shape(X)), MAY),
}

CORRUPTIONS: dict[str, dict[str, tuple[Callable, bool]]] = {
    "X": {**_X_COMMON,
          "one row less than y": (lambda X, r: np.asarray(X)[:-1], MUST)},
    "X_new": {**_X_COMMON,
              "a feature less": (lambda X, r: np.asarray(X)[:, :-1], MUST),
              "a feature more": (lambda X, r: np.hstack([X, X[:, :1]]), MUST)},
    "y": {
        "unknown label": (lambda y, r: _one_label(y, r, "no such node"), MUST),
        "NaN label": (lambda y, r: _one_label(y, r, np.nan), MUST),
        "None label": (lambda y, r: _one_label(y, r, None), MUST),
        "empty label set": (lambda y, r: _one_label(y, r, frozenset()), MUST),
        "label set with unknown": (lambda y, r: _one_label(y, r, frozenset({"A1", "zz"})), MUST),
        "None": (lambda y, r: None, MUST),
        "one label less": (lambda y, r: list(y)[:-1], MUST),
        "empty": (lambda y, r: [], MUST),
        "dict": (lambda y, r: {"a": 1}, MUST),
        "3-D": (lambda y, r: np.zeros((len(y), 2, 2)), MUST),
        "one class": (lambda y, r: [y[0]] * len(y), MAY),
        "internal node": (lambda y, r: _one_label(y, r, "A"), MAY),
        "root": (lambda y, r: _one_label(y, r, "r"), MAY),
        "integers": (lambda y, r: list(np.arange(len(y)) % 5), MAY),
        "column vector": (lambda y, r: np.asarray(y, dtype=object)[:, None], MAY),
    },
    "hierarchy": {
        "root only": (lambda H, r: {"r": None}, MUST),
        "word": (lambda H, r: "tree", MUST),
        "integer": (lambda H, r: 42, MUST),
        "list of integers": (lambda H, r: [1, 2, 3], MUST),
        "unrelated tree": (lambda H, r: Hierarchy.from_paths(["p/q", "p/s"]), MUST),
        "cycle": (lambda H, r: {"a": "b", "b": "a"}, MUST),
        "None": (lambda H, r: None, MAY),
        "parents dict": (lambda H, r: {v: (H.parents(v)[0] if H.parents(v) else None)
                                       for v in H.nodes}, MAY),
    },
    "positive": {
        "negative": (lambda v, r: -1.0, MUST),
        "zero": (lambda v, r: 0.0, MUST),
        "NaN": (lambda v, r: float("nan"), MUST),
        "inf": (lambda v, r: float("inf"), MUST),
        "word": (lambda v, r: "abc", MUST),
        "list": (lambda v, r: [1.0, 2.0], MUST),
        "complex": (lambda v, r: 1j, MUST),
        "dict": (lambda v, r: {"C": 1}, MUST),
        "numeric string": (lambda v, r: "0.5", MAY),
        "numpy float32": (lambda v, r: np.float32(0.5), MAY),
        "huge": (lambda v, r: 1e300, MAY),
        "tiny": (lambda v, r: 1e-300, MAY),
    },
    "count": {
        "zero": (lambda v, r: 0, MUST),
        "negative": (lambda v, r: -3, MUST),
        "fraction": (lambda v, r: 1.5, MUST),
        "word": (lambda v, r: "x", MUST),
        "NaN": (lambda v, r: float("nan"), MUST),
        "list": (lambda v, r: [3], MUST),
        "numpy int": (lambda v, r: np.int32(3), MAY),
    },
    "choice": {
        "unknown word": (lambda v, r: "no such option", MUST),
        "empty word": (lambda v, r: "", MUST),
        "integer": (lambda v, r: 3, MUST),
        "list": (lambda v, r: [v], MUST),
    },
    "labels": {
        "unknown label": (lambda y, r: _one_label(y, r, "no such node"), MUST),
        "None label": (lambda y, r: _one_label(y, r, None), MUST),
        "NaN label": (lambda y, r: _one_label(y, r, np.nan), MUST),
        "one label less": (lambda y, r: list(y)[:-1], MUST),
        "None": (lambda y, r: None, MUST),
        "empty": (lambda y, r: [], MUST),
        "dict": (lambda y, r: {"a": 1}, MUST),
        "integers": (lambda y, r: list(range(len(y))), MUST),
        "label sets": (lambda y, r: [frozenset({v}) for v in y], MAY),
        "internal node": (lambda y, r: _one_label(y, r, "A"), MAY),
    },
    "scores": {
        "nan": (lambda S, r: _at(S, r, np.nan), MUST),
        "inf": (lambda S, r: _at(S, r, np.inf), MUST),
        "complex": (lambda S, r: np.asarray(S) + 1j, MUST),
        "a column less": (lambda S, r: np.asarray(S)[:, :-1], MUST),
        "a row less": (lambda S, r: np.asarray(S)[:-1], MUST),
        "1-D": (lambda S, r: np.asarray(S)[:, 0], MUST),
        "words": (lambda S, r: np.full(np.shape(S), "w"), MUST),
        "None": (lambda S, r: None, MUST),
        "CSR": (lambda S, r: sp.csr_matrix(S), MAY),
        "int dtype": (lambda S, r: np.round(S).astype(int), MAY),
    },
    "weights": {
        "negative": (lambda w, r: -np.ones(len(Y0)), MUST),
        "NaN": (lambda w, r: _at(np.ones((1, len(Y0))), r, np.nan)[0], MUST),
        "inf": (lambda w, r: _at(np.ones((1, len(Y0))), r, np.inf)[0], MUST),
        "one less": (lambda w, r: np.ones(len(Y0) - 1), MUST),
        "all zero": (lambda w, r: np.zeros(len(Y0)), MUST),
        "words": (lambda w, r: ["w"] * len(Y0), MUST),
        "2-D": (lambda w, r: np.ones((len(Y0), 2)), MUST),
        "complex": (lambda w, r: np.ones(len(Y0)) + 1j, MUST),
        "integers": (lambda w, r: np.arange(1, len(Y0) + 1), MAY),
    },
    "parents": {
        "self loop": (lambda p, r: {"r": None, "a": "a"}, MUST),
        "cycle": (lambda p, r: {"r": None, "a": "b", "b": "a"}, MUST),
        "two roots": (lambda p, r: {"r": None, "s": None, "a": "r"}, MAY),
        "unknown parent": (lambda p, r: {"r": None, "a": "zz"}, MAY),
        "empty": (lambda p, r: {}, MUST),
        "None": (lambda p, r: None, MUST),
        "word": (lambda p, r: "abc", MUST),
        "list of pairs": (lambda p, r: [("a", "r")], MAY),
        "unhashable name": (lambda p, r: {"r": None, "a": ["r", "s"]}, MAY),
        "NaN name": (lambda p, r: {"r": None, float("nan"): "r"}, MAY),
    },
    "edges": {
        "self loop": (lambda e, r: [("a", "a")], MUST),
        "cycle": (lambda e, r: [("r", "a"), ("a", "b"), ("b", "a")], MUST),
        "word": (lambda e, r: "ab", MUST),
        "integers": (lambda e, r: [1, 2], MUST),
        "singletons": (lambda e, r: [("a",)], MUST),
        "triples": (lambda e, r: [("a", "b", "c")], MUST),
        "None": (lambda e, r: None, MUST),
        "empty": (lambda e, r: [], MUST),
        "unhashable node": (lambda e, r: [("r", ["a"])], MUST),
    },
    "paths": {
        "a word, not a list": (lambda p, r: "A/B", MUST),
        "empty path": (lambda p, r: [""], MUST),
        "empty component": (lambda p, r: ["a//b"], MUST),
        "integers": (lambda p, r: [1, 2], MUST),
        "None": (lambda p, r: None, MUST),
        "empty": (lambda p, r: [], MUST),
        "nested lists": (lambda p, r: [["a", "b"]], MUST),
        "leading separator": (lambda p, r: ["/a"], MAY),
    },
    "indicator": {
        "minus ones": (lambda Y, r: -np.ones(np.shape(Y)), MUST),
        "NaN": (lambda Y, r: _at(Y, r, np.nan), MUST),
        "fractions": (lambda Y, r: np.full(np.shape(Y), 0.5), MUST),
        "words": (lambda Y, r: np.full(np.shape(Y), "w"), MUST),
        "3-D": (lambda Y, r: np.zeros((2, len(TREE), 2)), MUST),
        "a column less": (lambda Y, r: np.asarray(Y)[:, :-1], MUST),
        "complex": (lambda Y, r: np.asarray(Y, dtype=complex), MUST),
        "None": (lambda Y, r: None, MUST),
        "unknown label": (lambda Y, r: [["no such node"]], MUST),
        "int 0/1": (lambda Y, r: np.asarray(Y, dtype=int), MAY),
        "CSR": (lambda Y, r: sp.csr_matrix(Y), MAY),
        "label lists": (lambda Y, r: [["A1"], ["B"]], MAY),
    },
}

# a stopping tolerance: a tiny one is valid but runs to max_iter (slow, not a refusal)
CORRUPTIONS["tolerance"] = {k: v for k, v in CORRUPTIONS["positive"].items() if k != "tiny"}
# options where 0 is allowed (the DC loop's tolerance and step count)
CORRUPTIONS["non_negative"] = {**CORRUPTIONS["positive"], "zero": (lambda v, r: 0.0, MAY)}
CORRUPTIONS["count_from_0"] = {**CORRUPTIONS["count"], "zero": (lambda v, r: 0, MAY)}
# flat classification: any hashable label is a class
CORRUPTIONS["flat_y"] = {**CORRUPTIONS["y"], "unknown label": (CORRUPTIONS["y"]["unknown label"][0], MAY)}
# labels with no sample count to match
CORRUPTIONS["node_labels"] = {k: v for k, v in CORRUPTIONS["labels"].items()
                              if k not in ("one label less", "empty")}
# a hierarchy as the only argument: any Hierarchy is valid
CORRUPTIONS["any_hierarchy"] = {**CORRUPTIONS["hierarchy"],
                                "unrelated tree": (CORRUPTIONS["hierarchy"]["unrelated tree"][0], MAY),
                                "None": (lambda H, r: None, MUST)}


# ---------------------------------------------------------------------- entry points
@dataclass
class Entry:
    """A public entry point: ``call(**args)`` with valid ``args`` (built fresh by ``make_args``)
    and the kind of corruption each fuzzed argument takes."""

    name: str
    call: Callable[..., Any]
    make_args: Callable[[], dict]
    kinds: dict = field(default_factory=dict)


def _data_args():
    return {"X": X0.copy(), "y": list(Y0)}


#: options fuzzed that are not constructor parameters, with their defaults: the fast solver's
#: settings (given in ``solver_options``) and NHSVM's exponent rho (given in ``alpha``)
MOVED = {"method": "auto", "inner_max_iter": 1000, "rho": 2.0}


def _moved(kw: dict) -> dict:
    """Constructor keywords from the fuzzed options: ``method`` and ``inner_max_iter`` into
    ``solver_options``, ``rho`` into a :class:`~hiercvx.estimators.PathWeights` (the default
    program: (6) on trees, (6) under (8) on DAGs)."""
    kw = dict(kw)
    routed = {k: kw.pop(k) for k in ("method", "inner_max_iter") if k in kw}
    if routed:
        kw["solver_options"] = routed
    if "rho" in kw:
        H = kw.get("hierarchy")
        dag = isinstance(H, Hierarchy) and not H.is_tree
        kw["alpha"] = E.PathWeights("dag" if dag else "power", rho=kw.pop("rho"))
    return kw


#: estimator -> (factory, the options fuzzed and their kinds)
ESTIMATORS = {
    "HierarchicalSVC": (lambda **kw: E.HierarchicalSVC(hierarchy=kw.pop("hierarchy", TREE), **kw),
                        {"C": "positive", "tol": "tolerance", "max_iter": "count", "solver": "choice",
                         "loss": "choice", "attributes": "choice", "rescaling": "choice",
                         "kernel": "choice", "intercept_scaling": "positive", "hierarchy": "hierarchy"}),
    "MulticlassSVC": (lambda **kw: E.MulticlassSVC(**kw),
                      {"C": "positive", "tol": "tolerance", "max_iter": "count", "solver": "choice",
                       "kernel": "choice"}),
    "TopDownSVC": (lambda **kw: E.TopDownSVC(hierarchy=kw.pop("hierarchy", TREE), **kw),
                   {"C": "positive", "tol": "tolerance", "max_iter": "count", "solver": "choice",
                    "hierarchy": "hierarchy"}),
    "OrthogonalTransferSVC": (
        lambda **kw: E.OrthogonalTransferSVC(hierarchy=kw.pop("hierarchy", TREE), **kw),
        {"C": "positive", "tol": "tolerance", "max_iter": "count", "solver": "choice",
         "method": "choice", "alpha": "positive", "hierarchy": "hierarchy"}),
    "NormalizedHierarchicalSVC": (
        lambda **kw: E.NormalizedHierarchicalSVC(**_moved({"hierarchy": TREE, **kw})),
        {"C": "positive", "tol": "tolerance", "max_iter": "count", "solver": "choice",
         "method": "choice", "variant": "choice", "inference": "choice", "rho": "positive",
         "hierarchy": "hierarchy"}),
    "SharedNormSVC": (lambda **kw: E.SharedNormSVC(**_moved({"hierarchy": TREE, **kw})),
                      {"C": "positive", "tol": "tolerance", "max_iter": "count",
                       "inner_max_iter": "count", "solver": "choice", "loss": "choice",
                       "hierarchy": "hierarchy"}),
    "HierarchicalPerceptron": (
        lambda **kw: E.HierarchicalPerceptron(hierarchy=kw.pop("hierarchy", TREE), **kw),
        {"max_epochs": "count", "variant": "choice", "update": "choice", "loss": "choice",
         "kernel": "choice", "hierarchy": "hierarchy"}),
    "SiblingMarginSVC": (lambda **kw: E.SiblingMarginSVC(**_moved({"hierarchy": TREE, **kw})),
                         {"C": "positive", "tol": "tolerance", "max_iter": "count",
                          "solver": "choice", "method": "choice", "kernel": "choice",
                          "hierarchy": "hierarchy"}),
    "HierarchicalPsiClassifier": (
        lambda **kw: E.HierarchicalPsiClassifier(hierarchy=kw.pop("hierarchy", TREE), **kw),
        {"C": "positive", "tol": "tolerance", "dc_tol": "non_negative", "dc_max_iter": "count_from_0",
         "solver": "choice", "hierarchy": "hierarchy"}),
    "SequentialHierarchicalSVC": (
        lambda **kw: E.SequentialHierarchicalSVC(hierarchy=kw.pop("hierarchy", TREE), **kw),
        {"C": "positive", "tol": "tolerance", "solver": "choice", "hierarchy": "hierarchy"}),
    "AdaBoostMH": (lambda **kw: E.AdaBoostMH(**{"n_rounds": 5, **kw}), {"n_rounds": "count"}),
}

FLAT_ESTIMATORS = ("MulticlassSVC", "AdaBoostMH")

_FITTED: dict = {}


def _bounded(options: dict) -> dict:
    """``options`` with iteration limits capped: a fuzzed fit is about refusals, not accuracy."""
    out = dict(options)
    for k in ("max_iter", "inner_max_iter"):
        if out.get(k) is not None:
            out[k] = min(out[k], 200)
    return out


def _fitted(name):
    """The estimator fitted on the clean data, once per session (``predict`` fuzzing)."""
    if name not in _FITTED:
        make = ESTIMATORS[name][0]
        params = _bounded(make().get_params())
        params.pop("hierarchy", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _FITTED[name] = make(**params).fit(X0, Y0)
    return _FITTED[name]


def _estimator_entries():
    out = []
    for name, (make, options) in ESTIMATORS.items():
        defaults = make().get_params()

        def fit(X, y, _make=make, **kw):
            return _make(**kw).fit(X, y)

        def args(_defaults=defaults, _options=options):
            a = _data_args()
            a.update({k: (TREE if k == "hierarchy" else _defaults.get(k, MOVED.get(k)))
                      for k in _options})
            return _bounded(a)

        y_kind = "flat_y" if name in FLAT_ESTIMATORS else "y"
        out.append(Entry(f"{name}.fit", fit, args, {"X": "X", "y": y_kind, **options}))
        for method in ("predict", "decision_function"):
            if not hasattr(make(), method):
                continue

            def call(X, _name=name, _method=method):
                return getattr(_fitted(_name), _method)(X)
            out.append(Entry(f"{name}.{method}", call, lambda: {"X": X0.copy()}, {"X": "X_new"}))
    return out


def _hierarchy_entries():
    parents = {"r": None, "A": "r", "A1": "A", "B": "r"}
    return [
        Entry("Hierarchy.from_parents", Hierarchy.from_parents, lambda: {"parents": dict(parents)},
              {"parents": "parents"}),
        Entry("Hierarchy.from_edges", Hierarchy.from_edges,
              lambda: {"edges": [("r", "A"), ("A", "A1"), ("r", "B")]}, {"edges": "edges"}),
        Entry("Hierarchy", lambda edges: Hierarchy(edges),
              lambda: {"edges": [("r", "A"), ("A", "A1"), ("r", "B")]}, {"edges": "edges"}),
        Entry("Hierarchy.from_paths", Hierarchy.from_paths, lambda: {"paths": ["A/A1", "B"]},
              {"paths": "paths"}),
        Entry("Hierarchy.closure", lambda labels: TREE.closure(labels),
              lambda: {"labels": np.eye(len(TREE), dtype=bool)[[3, 4]]}, {"labels": "indicator"}),
        Entry("Hierarchy.label_indicator", lambda labels: TREE.label_indicator(labels),
              lambda: {"labels": list(Y0)}, {"labels": "node_labels"}),
    ]


def _pair_metric(fn, **fixed):
    return lambda y_true, y_pred: fn(y_true, y_pred, hierarchy=TREE, **fixed)


def _metric_entries():
    out = []
    pair_args = lambda: {"y_true": list(Y0), "y_pred": list(PRED0)}
    for name in ("hierarchical_precision", "hierarchical_recall", "hierarchical_f1", "micro_f1",
                 "weighted_f1", "test_error", "test_errors"):
        out.append(Entry(f"metrics.{name}", _pair_metric(getattr(M, name)), pair_args,
                         {"y_true": "labels", "y_pred": "labels"}))
    out.append(Entry("metrics.hierarchical_f1(sample_weight)",
                     lambda sample_weight: M.hierarchical_f1(Y0, PRED0, hierarchy=TREE,
                                                             sample_weight=sample_weight),
                     lambda: {"sample_weight": np.ones(len(Y0))}, {"sample_weight": "weights"}))
    out.append(Entry("metrics.test_error(loss)",
                     lambda loss: M.test_error(Y0, PRED0, hierarchy=TREE, loss=loss),
                     lambda: {"loss": "zero_one"}, {"loss": "choice"}))
    for name in ("one_accuracy", "average_precision", "ranking_loss", "maximal_loss", "top_loss",
                 "parent_one_accuracy"):
        fn = getattr(M, name)
        out.append(Entry(f"metrics.{name}",
                         lambda y_true, scores, _fn=fn: _fn(y_true, scores, classes=LEAVES,
                                                            hierarchy=TREE),
                         lambda: {"y_true": list(Y0), "scores": SCORES0.copy()},
                         {"y_true": "labels", "scores": "scores"}))
    out.append(Entry("metrics.get_scorer", lambda name: M.get_scorer(name, hierarchy=TREE),
                     lambda: {"name": "hierarchical_f1"}, {"name": "choice"}))
    return out


def _loss_entries():
    out = []
    pair = {"y_true": "labels", "y_pred": "labels"}
    pair_args = lambda: {"y_true": list(Y0), "y_pred": list(PRED0)}
    for name in ("zero_one", "symmetric_difference", "normalized_hierarchical", "sibling_loss",
                 "subtree_loss", "leaf_count"):
        fn = getattr(L, name)
        out.append(Entry(f"losses.{name}", lambda y_true, y_pred, _fn=fn: _fn(TREE, y_true, y_pred),
                         pair_args, pair))
    out.append(Entry("losses.pairwise_loss",
                     lambda y_true, y_pred, loss: L.pairwise_loss(TREE, y_true, y_pred, loss=loss),
                     lambda: {**pair_args(), "loss": "half_symmetric"}, {**pair, "loss": "choice"}))
    out.append(Entry("losses.normalized_structural",
                     lambda alpha: L.normalized_structural(TREE, Y0, PRED0, alpha),
                     lambda: {"alpha": np.full(len(TREE), 0.5)}, {"alpha": "weights_nodes"}))
    out.append(Entry("losses.h_loss", lambda costs: L.h_loss(TREE, Y0, PRED0, costs),
                     lambda: {"costs": np.ones(len(TREE))}, {"costs": "weights_nodes"}))
    out.append(Entry("losses.loss_matrix", lambda loss: L.loss_matrix(TREE, loss, classes=LEAVES),
                     lambda: {"loss": "half_symmetric"}, {"loss": "choice"}))
    out.append(Entry("losses.ranking_loss",
                     lambda y_true, scores: L.ranking_loss(TREE, y_true, scores, classes=LEAVES),
                     lambda: {"y_true": list(Y0), "scores": SCORES0.copy()},
                     {"y_true": "labels", "scores": "scores"}))
    out.append(Entry("losses.sibling_costs", lambda H: L.sibling_costs(H), lambda: {"H": TREE},
                     {"H": "any_hierarchy"}))
    out.append(Entry("losses.subtree_costs", lambda H: L.subtree_costs(H), lambda: {"H": TREE},
                     {"H": "any_hierarchy"}))
    return out


CORRUPTIONS["weights_nodes"] = {
    "negative": (lambda w, r: -np.ones(len(TREE)), MUST),
    "NaN": (lambda w, r: _at(np.ones((1, len(TREE))), r, np.nan)[0], MUST),
    "one less": (lambda w, r: np.ones(len(TREE) - 1), MUST),
    "words": (lambda w, r: ["w"] * len(TREE), MUST),
    "2-D": (lambda w, r: np.ones((len(TREE), 2)), MUST),
    "None": (lambda w, r: None, MUST),
}


def _prepare_entries():
    data = {"X": "X", "y": "y"}
    hier = {**data, "H": "hierarchy"}
    return [
        Entry("models.hsvm.prepare", lambda X, y, H: hsvm_model.prepare(X, y, H),
              lambda: {**_data_args(), "H": TREE}, hier),
        Entry("models.multiclass.prepare", lambda X, y: multiclass_model.prepare(X, y), _data_args,
              {"X": "X", "y": "flat_y"}),
        Entry("models.nhsvm.prepare", lambda X, y, H: nhsvm_model.prepare(X, y, H),
              lambda: {**_data_args(), "H": TREE}, hier),
        Entry("models.nhsvm.prepare_shared", lambda X, y, H: nhsvm_model.prepare_shared(X, y, H),
              lambda: {**_data_args(), "H": TREE}, hier),
        Entry("models.orthogonal.prepare",
              lambda X, y, H, method: orthogonal_model.prepare(X, y, H, method),
              lambda: {**_data_args(), "H": TREE, "method": "orthogonal"},
              {**hier, "method": "choice"}),
        Entry("models.sibling.prepare", lambda X, y, H: sibling_model.prepare(X, y, H),
              lambda: {**_data_args(), "H": TREE}, hier),
        Entry("models.sibling.prepare_psi", lambda X, y, H: sibling_model.prepare_psi(X, y, H),
              lambda: {**_data_args(), "H": TREE}, hier),
    ]


def _reference_entries():
    out = []
    for name in methods.names():
        method = methods.get(name)
        case = method.cases(True)[0]
        param = "C" if "C" in case.params else "lam"
        for role, build in method.references.items():
            if case.structure not in ("tree", "flat"):
                continue
            y = list(Y0) if case.structure == "tree" else [LEAVES.index(v) for v in Y0]

            def call(X, y, _build=build, _H=case.H, _opts=case.model_options, _param=param, **kw):
                return _build(X, y, _H, **_opts, **kw)

            def args(_y=y, _param=param, _value=case.params[param]):
                return {"X": X0.copy(), "y": list(_y), _param: _value}

            y_kind = "y" if case.structure == "tree" else "flat_y"
            out.append(Entry(f"references.{name}.{role}", call, args,
                             {"X": "X", "y": y_kind, param: "positive"}))
    return out


ENTRIES = (_estimator_entries() + _hierarchy_entries() + _metric_entries() + _loss_entries()
           + _prepare_entries() + _reference_entries())


#: Raw exceptions the fuzzer finds in modules outside this suite's boundary fixes (their fix
#: belongs to the module named; :func:`test_known_raw_exceptions_are_listed_until_fixed` says
#: when one is fixed).  (entry, argument, corruption) -> where to fix.
KNOWN_RAW: dict = {}  # every raw exception the suite found is fixed (session 4)

#: every (entry, argument, corruption) triple the contract holds for
ALL_CASES = [(entry, arg, cname) for entry in ENTRIES for arg, kind in entry.kinds.items()
             for cname in CORRUPTIONS[kind]]
CASES = [c for c in ALL_CASES if (c[0].name, c[1], c[2]) not in KNOWN_RAW]


# ---------------------------------------------------------------------- the contract
@dataclass
class Outcome:
    """What one corrupted call did: returned (``error is None``) or raised ``error``."""

    error: BaseException | None

    def bad(self, must: bool) -> bool:
        """Whether the call broke the contract (see the module docstring)."""
        if self.error is None:
            return must
        if isinstance(self.error, InputError):
            return False
        return not (isinstance(self.error, SolverError) and not must)

    def describe(self) -> str:
        if self.error is None:
            return "accepted"
        return f"{type(self.error).__module__}.{type(self.error).__name__}: {self.error}"[:300]


def outcome(entry: Entry, arg: str, make: Callable, rng) -> Outcome:
    """Call ``entry`` with ``arg`` corrupted by ``make``."""
    args = entry.make_args()
    args[arg] = make(args[arg], rng)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                entry.call(**args)
    except Exception as exc:  # noqa: BLE001 - judged by Outcome.bad
        return Outcome(exc)
    return Outcome(None)


def check_case(case, seed):
    entry, arg, cname = case
    make, must = CORRUPTIONS[entry.kinds[arg]][cname]
    result = outcome(entry, arg, make, np.random.default_rng(seed))
    if result.bad(must):
        raise AssertionError(f"{entry.name}({arg} = {cname}) -> {result.describe()}") \
            from result.error


BOUNDED = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=3000, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def test_every_entry_point_works_on_clean_input():
    """The baseline of every case: the uncorrupted call succeeds (so a refusal is the
    corruption's doing)."""
    for entry in ENTRIES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            entry.call(**entry.make_args())


@BOUNDED
@given(st.sampled_from(CASES), st.integers(0, 2 ** 16))
def test_fuzz_entry_points(case, seed):
    check_case(case, seed)


@pytest.mark.slow
@LONG
@given(st.sampled_from(CASES), st.integers(0, 2 ** 32 - 1))
def test_fuzz_entry_points_long(case, seed):
    check_case(case, seed)


def test_known_raw_exceptions_are_listed_until_fixed():
    """The cases of :data:`KNOWN_RAW` still break the contract; once a module is fixed, its
    cases fail here until they are removed from the table (so the table never goes stale)."""
    fixed = []
    for entry, arg, cname in ALL_CASES:
        if (entry.name, arg, cname) in KNOWN_RAW:
            make, must = CORRUPTIONS[entry.kinds[arg]][cname]
            if not outcome(entry, arg, make, np.random.default_rng(0)).bad(must):
                fixed.append((entry.name, arg, cname))
    assert not fixed, f"fixed, remove from KNOWN_RAW: {fixed}"


@pytest.mark.slow
def test_every_case_once():
    """Every (entry point, argument, corruption) triple, in order: what the random draws may
    miss."""
    failures = []
    for entry, arg, cname in CASES:
        make, must = CORRUPTIONS[entry.kinds[arg]][cname]
        result = outcome(entry, arg, make, np.random.default_rng(0))
        if result.bad(must):
            failures.append(f"{entry.name}({arg} = {cname}) -> {result.describe()}")
    assert not failures, "\n".join(failures)
