"""Scale advice for fast solvers: when a fast solver stops above its tolerance on data whose
size makes the problem nearly hard-margin, its ``ConvergenceWarning`` says so and how to fix it.

Every hinge-loss model here is invariant under ``X -> X / s, W -> s W`` except for the
regularizer, so the problem on ``X`` at ``C`` is the problem on unit-scale features at
``C * s^2``: features in raw units (counts, expression values, pixel sums) with the default
``C = 1`` are a hard-margin problem in disguise, which no number of iterations of a first-order
or dual method finishes.  The measure is ``C * max_i ||x_i||^2`` (``max_i ||x_i||^2 / lam`` for
the methods with ``lam``), about the number of features for standardized data; over ``limit``
(default 1e9: a million times the value of standardized data with a thousand features) the
warning carries the advice.
"""

from __future__ import annotations

import functools
import inspect
import re

import numpy as np
import scipy.sparse as sp

from ..result import rewritten_convergence_warnings

__all__ = ["scale_advice", "with_scale_advice"]


def _row_norms_max(X) -> float:
    if sp.issparse(X):
        return float(np.asarray(X.multiply(X).sum(axis=1)).max(initial=0.0))
    X = np.asarray(X)
    if X.ndim != 2 or not np.issubdtype(X.dtype, np.number):
        return float("nan")
    return float(np.einsum("ij,ij->i", X, X).max(initial=0.0))


def scale_advice(model, params: dict, limit: float = 1e9) -> str:
    """The sentence to add to a ``ConvergenceWarning`` when the model's data make the problem
    nearly hard-margin, ``C * max_i ||x_i||^2 > limit`` (``""`` otherwise)."""
    X = getattr(model, "X_features", None)
    X = getattr(model, "X", None) if X is None else X
    if X is None or not hasattr(X, "shape") or len(X.shape) != 2:
        return ""
    largest = _row_norms_max(X)
    if "C" in params:
        load, what = float(params["C"]) * largest, f"C * max_i ||x_i||^2 = {params['C']:g} * {largest:.3g}"
    elif "lam" in params:
        load, what = largest / float(params["lam"]), f"max_i ||x_i||^2 / lam = {largest:.3g} / {params['lam']:g}"
    else:
        return ""
    if not np.isfinite(load) or load <= limit:
        return ""
    return (f". The data are badly scaled for this problem: {what} = {load:.3g}, where "
            f"standardized features give about their number ({X.shape[1]}); it is the same problem "
            f"as a nearly hard-margin one on unit-scale features, which more iterations will not "
            "finish. Standardize X (sklearn.preprocessing.StandardScaler), or "
            + ("divide C" if "C" in params else "multiply lam") + " by the square of the features' scale")


def without_more_iterations(message: str) -> str:
    """``message`` without its advice to raise ``max_iter`` (it contradicts the scale advice:
    a nearly hard-margin problem does not finish in more iterations)."""
    message = re.sub(r";?\s*raise max_iter(?: \([^)]*\))?(?: or tol)?", "", message)
    return message.replace(", max_iter or tol", " or tol")


def _named(solve, model, args, kwargs) -> dict:
    """The call's arguments by name (``C`` or ``lam`` is often passed by position)."""
    try:
        return dict(inspect.signature(solve).bind_partial(model, *args, **kwargs).arguments)
    except (TypeError, ValueError):
        return dict(kwargs)


def with_scale_advice(solve):
    """``solve(model, **params, ...)`` whose ``ConvergenceWarning`` carries :func:`scale_advice`;
    every other warning passes unchanged."""
    @functools.wraps(solve)
    def run(model, *args, **kwargs):
        advice = []   # computed once, at the first ConvergenceWarning

        def rewrite(message: str) -> str:
            if not advice:
                advice.append(scale_advice(model, _named(solve, model, args, kwargs)))
            return f"{without_more_iterations(message)}{advice[0]}" if advice[0] else message

        with rewritten_convergence_warnings(rewrite):
            return solve(model, *args, **kwargs)
    return run
