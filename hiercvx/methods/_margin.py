"""The margin engine's fast solvers, registered alike for Crammer–Singer and the Cai–Hofmann
hierarchical SVM (both are :class:`hiercvx.models.margin.MarginModel`).

With ``fit_intercept`` the model runs on ``[X, s]`` and every solver here returns the weights
without the bias column and the biases in ``extras["intercept"]``: they split the column
through the model (:meth:`~hiercvx.models.margin.MarginModel.split_weights`), the same for both
methods, so no adapter is needed."""

from __future__ import annotations

from ..solvers import interior_point, margin_engine
from ._registry import FastSolver

__all__ = ["ENGINE_SOLVERS"]

#: the interior-point method and the engine's own choice, at the options ``verify`` uses
ENGINE_SOLVERS = {
    "interior_point": FastSolver(
        "interior_point", interior_point.solve,
        algorithm="primal-dual interior point (Mehrotra) on the factored primal",
        options={"tol": 1e-9}, rtol=1e-6),
    "auto": FastSolver(
        "auto", margin_engine.solve,
        algorithm="the margin engine's choice: interior point when a Newton step is "
                  "affordable, else dual coordinate ascent",
        options={"tol": 1e-9}, rtol=1e-6),
}
