"""Checks for test suites, ours and our users': the certified references as the correctness
oracle of any solver of a registered method.

- :func:`check_solver` runs a user's ``fit(X, Y, H, **params)`` on generated problems of every
  structure the method supports and on one probe per model option, and compares it with the
  certified reference (objective, and weights where the optimum is unique); a failure names the
  method, the problem and both objectives, prints only diagnoses verified on that problem
  (:func:`diagnose`) and shows the smallest failing case; skipped problems are reported;
- :func:`check_inference` does the same for a label-set inference routine (NHSVM program
  (19), plain and loss-augmented) against its certified CVXPY reference;
- :mod:`hiercvx.testing.bugs`: planted bugs and the kill matrix that shows every one caught;
- :func:`objective` (the method's primal objective at a user's weights) and :func:`kkt_report`
  (which samples' margin constraints and optimality conditions fail, by how much, at which
  class pair);
- :func:`problems_for` / :class:`Problem`: the generated problems, with their references;
- plain assertions: :func:`assert_certified`, :func:`assert_same_optimum`,
  :func:`assert_fast_matches_reference` (:func:`fast_vs_reference`),
  :func:`assert_bounds_bracket`, :func:`solve_with_each`, :func:`check_gradient`;
- :mod:`hiercvx.testing.strategies`: hypothesis strategies (hierarchies, label sets, data);
- :mod:`hiercvx.testing.plugin`: the pytest plugin (fixtures ``hierarchy``,
  ``reference_problem``, ``hiercvx_seed``; ``parametrize_with_references``; ``--hiercvx-seed``).

Objects accepted as "a solution": a :class:`~hiercvx.result.Solution` (also named
``ReferenceSolution``), a plain float objective, and (``check_solver``, ``objective``,
``kkt_report``) a weight array or a dict ``{"weights": W, "intercept": b}`` (whose
``"objective"`` and ``"converged"`` keys, if any, are read as a Solution's attributes).
"""

from __future__ import annotations

import importlib

#: where each public name lives; imported on first use, so that loading the pytest plugin
#: (:mod:`hiercvx.testing.plugin`) does not import the registry
_WHERE = {
    **dict.fromkeys(("assert_bounds_bracket", "assert_certified", "assert_fast_matches_reference",
                     "assert_same_optimum", "check_gradient", "fast_vs_reference",
                     "solve_with_each"), "_assertions"),
    **dict.fromkeys(("WeightJudgement", "strong_convexity"), "_judge"),
    **dict.fromkeys(("Outcome", "SkippedProblemWarning", "SolverCheckError", "check_solver"), "check"),
    **dict.fromkeys(("Diagnosis", "diagnose"), "diagnose"),
    **dict.fromkeys(("InferenceProblem", "check_inference", "inference_problems"), "inference"),
    **dict.fromkeys(("KKTReport", "Violation", "kkt_report", "objective"), "diagnostics"),
    **dict.fromkeys(("Problem", "problems_for"), "problems"),
}


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))

__all__ = [
    "Diagnosis",
    "InferenceProblem",
    "KKTReport",
    "Outcome",
    "Problem",
    "SkippedProblemWarning",
    "SolverCheckError",
    "WeightJudgement",
    "Violation",
    "assert_bounds_bracket",
    "assert_certified",
    "assert_fast_matches_reference",
    "assert_same_optimum",
    "check_gradient",
    "check_inference",
    "check_solver",
    "diagnose",
    "fast_vs_reference",
    "inference_problems",
    "kkt_report",
    "objective",
    "problems_for",
    "solve_with_each",
    "strong_convexity",
]
