"""Planted bugs: realistic mistakes of a solver, built from the certified reference's answer, and
the kill matrix that says whether :func:`~hiercvx.testing.check_solver` catches each one.

Each :class:`Bug` turns a generated problem into a wrong answer -- the certified optimum of a
neighbouring problem (C scaled or ignored, weights or intercept handled differently, another loss, rescaling
or class attributes) or the optimum damaged (a row zeroed, rows permuted, every weight 1 % off,
a solver stopped at a relative gap of 1e-2).  :func:`kill_matrix` runs ``check_solver`` on every
(method, bug) where the bug applies and records whether it failed the answer and whether its
diagnosis named the bug.  ``benchmarks/bench_kill_matrix.py`` prints the matrix and
``tests/test_kill_matrix.py`` asserts on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import methods as registry
from ..methods import Method
from .check import SolverCheckError, check_solver, same_input
from .diagnose import own_node_attributes
from .diagnostics import objective_at, read_result
from .problems import Problem, as_method, problems_for

__all__ = ["BUGS", "Bug", "KillRow", "answer_of", "format_kill_matrix", "kill_matrix"]


def answer_of(solution) -> dict:
    """A reference :class:`~hiercvx.result.Solution` as a user's ``fit`` returns it: the weights
    and the named parts the objective takes (intercept, biases, alpha)."""
    user = read_result(solution)
    out = {"weights": np.array(user.weights, dtype=float)}
    for key in ("intercept", "biases", "alpha"):
        if user.extras.get(key) is not None:
            out[key] = np.array(user.extras[key], dtype=float)
    return out


def _neighbour(options=None, params=None):
    """The answer: the certified optimum of the problem with ``options`` / ``params`` changed
    (callables of the problem give problem-dependent changes)."""
    def build(p: Problem):
        o = options(p) if callable(options) else dict(options or {})
        q = params(p) if callable(params) else dict(params or {})
        answer = answer_of(p.variant(o, q).reference())
        if o.get("fit_intercept") is False:
            answer.pop("intercept", None)
        return answer
    return build


def _damaged(change):
    def build(p: Problem):
        return change(p, answer_of(p.reference()))
    return build


def _zero_row(p, a):
    W = a["weights"]
    W[int(np.argmax(np.linalg.norm(W.reshape(len(W), -1), axis=1)))] = 0.0
    return a


def _permute_rows(p, a):
    W = a["weights"]
    first, second = np.argsort(-np.linalg.norm(W.reshape(len(W), -1), axis=1))[:2]
    W[[first, second]] = W[[second, first]]
    return a


def _one_percent_off(p, a):
    return {k: (1.01 * v if k in ("weights", "intercept", "biases") else v) for k, v in a.items()}


def _scaled_answer(a: dict, t: float) -> dict:
    return {k: (t * v if k in ("weights", "intercept", "biases") else v) for k, v in a.items()}


def _stopped_early(p: Problem):
    """The point ``t W*`` on the way from ``W = 0`` (where dual and first-order methods start)
    to the optimum whose relative objective excess is 1e-2: a solver stopped at that gap."""
    best = answer_of(p.reference())
    f_star = float(p.reference().objective)
    target = f_star + 1e-2 * max(abs(f_star), 1e-12)

    def excess(t):
        return objective_at(p.model(), read_result(_scaled_answer(best, t)), p.params) - target

    lo, hi = 0.0, 1.0
    if excess(lo) <= 0:
        return _scaled_answer(best, 0.0)
    for _ in range(60):  # bisection: excess(lo) > 0 >= excess(hi)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0 else (lo, mid)
    return _scaled_answer(best, lo)


def _negated(p, a):
    return _scaled_answer(a, -1.0)


def _without_probe_option(p: Problem):
    """The probe's own options dropped (back to the method's defaults)."""
    return {k: None for k in p.model_options}


def _probe(p):
    return p.template is not None and ", option " in p.template.name


def _biases_dropped(p, a):
    a["biases"] = np.zeros_like(a["biases"])
    return a


def _has(*keys):
    return lambda p: all(p.model_options.get(k) is not None for k in keys)


def _intercept(p):
    return bool(p.model_options.get("fit_intercept"))


def _plain(p):
    return not p.model_options


def _scaled_param(p):
    return {name: 0.5 * value for name, value in p.params.items()}


def _default_params(p):
    return dict(p.method.params)


def _away_from_default(p):
    return _plain(p) and p.params != dict(p.method.params)


def _other_scaling(p):
    return {"intercept_scaling": 1.0 if float(p.model_options.get("intercept_scaling", 1.0)) != 1.0 else 2.0}


@dataclass(frozen=True)
class Bug:
    """A planted mistake: ``key``, ``what`` it is, the diagnosis key that names it (``expect``;
    None: no diagnosis names it), the methods it applies to (None: all), which generated problems
    show it (``where``) and how the wrong ``answer`` is built."""

    key: str
    what: str
    expect: str | None
    answer: object
    where: object = _plain
    methods: tuple | None = None


_BIASED = ("multiclass", "hsvm", "orthogonal", "flatmult", "hiermult", "transfer", "treeloss",
           "nhsvm", "shared_norm")

#: the catalogue, in the order of the kill matrix's columns
BUGS = (
    Bug("C_scaled", "C (or lambda) halved", "C_scaled", _neighbour(params=_scaled_param)),
    Bug("C_ignored", "C (or lambda) ignored: solved at the method's default", "C_scaled",
        _neighbour(params=_default_params), _away_from_default),
    Bug("sample_weight_ignored", "sample_weight ignored", "sample_weight_ignored",
        _neighbour({"sample_weight": None}), _has("sample_weight"), ("multiclass", "hsvm")),
    Bug("class_weight_ignored", "class_weight ignored", "class_weight_ignored",
        _neighbour({"class_weight": None}), _has("class_weight"), ("multiclass",)),
    Bug("intercept_dropped", "intercept not fitted", "intercept_dropped",
        _neighbour({"fit_intercept": False}), _intercept, _BIASED),
    Bug("intercept_unregularized", "intercept not regularized", "intercept_unregularized",
        _neighbour({"intercept_scaling": 1e3}), _intercept, _BIASED),
    Bug("intercept_scaled", "intercept_scaling used wrongly", "intercept_scaled",
        _neighbour(_other_scaling), _intercept, _BIASED),
    Bug("other_loss", "the other loss", "other_loss", _neighbour({"loss": "zero_one"}),
        methods=("hsvm",)),
    Bug("other_rescaling", "the other rescaling", "other_rescaling",
        _neighbour({"rescaling": "margin"}), methods=("hsvm",)),
    Bug("ancestors_missing", "class attributes without ancestors", "ancestors_missing",
        _neighbour(lambda p: own_node_attributes(p)[0][0]), methods=("hsvm",)),
    Bug("row_zeroed", "one node's / class's weights zeroed", "row_zeroed", _damaged(_zero_row)),
    Bug("rows_permuted", "two weight rows swapped", "rows_permuted", _damaged(_permute_rows)),
    Bug("one_percent_off", "every weight 1% off", "weights_scaled", _damaged(_one_percent_off)),
    Bug("sign_flipped", "weights recovered with the wrong sign", "weights_scaled", _damaged(_negated)),
    Bug("option_ignored", "a model option ignored (each option probe)", "option_ignored",
        _neighbour(_without_probe_option), _probe),
    Bug("biases_dropped", "the unregularized biases left at zero", "biases_zero", _damaged(_biases_dropped),
        methods=("sibling_svm", "hpsi")),
    # the point stopped at lies on the ray from W = 0 to W*: "t times the optimum's" names it
    Bug("stopped_early", "stopped at a relative objective gap of 1e-2", "weights_scaled", _stopped_early),
)


#: the diagnoses that name an ignored option (the specific ones and the generic one)
OPTION_KEYS = {"option_ignored", "sample_weight_ignored", "class_weight_ignored", "intercept_dropped",
               "intercept_scaled", "other_loss", "other_rescaling", "other_attributes"}


@dataclass
class KillRow:
    """One cell of the kill matrix: ``caught``, ``diagnosis`` (``"right"``: a diagnosis names
    the bug; ``"none"``: nothing printed; ``"other"``: only diagnoses not naming it -- each still
    verified true of the answer), the diagnosis keys printed, and ``problem`` (where it ran)."""

    method: str
    bug: str
    caught: bool
    diagnosis: str
    keys: tuple = ()
    problem: str = ""
    first_line: str = ""
    note: str = ""
    lines: list = field(default_factory=list, repr=False)


def _problems_for_bug(method: Method, bug: Bug, pool: list) -> list:
    """Where the bug shows: the first two problems it applies to (every probe for
    ``option_ignored``: each option is its own mistake)."""
    chosen = [p for p in pool if bug.where(p)]
    return chosen if bug.key == "option_ignored" else chosen[:2]


def _run_bug(method: Method, bug: Bug, problems: list, rtol: float) -> KillRow:
    answers = {}

    def fit(X, Y, H, **options):
        # check_solver hands fit copies: the problem is the one with equal data and options
        p = next(q for q in problems if same_input(q.X, X) and same_input(q.Y, Y) and same_input(q.options, options))
        if id(p) not in answers:
            answers[id(p)] = bug.answer(p)
        return answers[id(p)]

    try:
        check_solver(fit, method, problems=problems, rtol=rtol, shrink_failures=False)
    except SolverCheckError as exc:
        keys = tuple(d.key for d in exc.diagnoses)
        named = set(keys) & ({bug.expect} | (OPTION_KEYS if bug.key == "option_ignored" else set()))
        verdict = "right" if named else ("other" if keys else "none")
        text = str(exc).splitlines()
        return KillRow(method.name, bug.key, True, verdict, keys, exc.failed[0].problem.name,
                       text[0], lines=text)
    return KillRow(method.name, bug.key, False, "none", (), problems[0].name,
                   note="passed: not caught")


def kill_matrix(methods=None, bugs=None, rtol: float = 1e-4, seed: int = 0) -> list:
    """The :class:`KillRow` of every (method, bug) that applies, over the generated problems of
    each method (its built-in cases and option probes at ``seed``)."""
    chosen = [as_method(m) for m in (methods or registry.names())]
    wanted = [b for b in BUGS if bugs is None or b.key in bugs]
    rows = []
    for method in chosen:
        pool = problems_for(method, seeds=(seed,))
        for bug in wanted:
            if bug.methods is not None and method.name not in bug.methods:
                continue
            if bug.key == "stopped_early" and not method.fast_solvers:
                continue
            problems = _problems_for_bug(method, bug, pool)
            if bug.key == "option_ignored":  # one row per option: each is its own mistake
                for p in problems:
                    row = _run_bug(method, bug, [p], rtol)
                    row.bug = f"option_ignored:{p.template.name.split(', option ')[1]}"
                    rows.append(row)
            elif problems:
                rows.append(_run_bug(method, bug, problems, rtol))
    return rows


def format_kill_matrix(rows: list) -> str:
    """The matrix: one line per method, one column per bug; a cell is ``caught/diagnosis``
    (``x`` missed, ``.`` not applicable); then the totals."""
    names = list(dict.fromkeys(r.method for r in rows))
    keys = list(dict.fromkeys(r.bug for r in rows))
    cell = {(r.method, r.bug): ("x" if not r.caught else {"right": "caught+diag", "none": "caught",
                                                          "other": "caught+other"}[r.diagnosis])
            for r in rows}
    head = ["method"] + keys
    body = [[m] + [cell.get((m, k), ".") for k in keys] for m in names]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in [head] + body]
    caught = sum(r.caught for r in rows)
    right = sum(r.diagnosis == "right" for r in rows)
    lines += ["", f"{caught} of {len(rows)} planted bugs caught; {right} diagnosed by name, "
                  f"{sum(r.diagnosis == 'none' for r in rows)} without a diagnosis, "
                  f"{sum(r.diagnosis == 'other' for r in rows)} with only other (verified) diagnoses"]
    lines += [f"  MISSED {r.method} / {r.bug} on {r.problem}" for r in rows if not r.caught]
    return "\n".join(lines)
