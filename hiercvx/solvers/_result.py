"""The one result object every fast solver returns (qpsolvers-style)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from sklearn.exceptions import ConvergenceWarning


def reached(gap: float, tol: float) -> bool:
    """Whether a recomputed relative gap meets ``tol`` (round-off in the recomputation allowed)."""
    return bool(gap <= tol * (1 + 1e-6) + 1e-15)


@dataclass
class SolverResult:
    """Outcome of a fast solver.

    ``objective`` is the primal objective recomputed at ``weights``; ``lower_bound`` a
    certified bound from a dual feasible point (or the method's own lower bound, e.g.
    RDA's); ``gap = (objective - lower_bound) / max(1, |objective|)``; ``converged`` says
    whether ``gap <= tol`` was reached within ``max_iter``.
    """

    weights: Any
    objective: float
    lower_bound: float
    n_iter: int
    converged: bool
    tol: float
    dual: Any = None
    history: dict = field(default_factory=dict)
    solve_time: float = 0.0
    name: str = ""

    @property
    def gap(self) -> float:
        return (self.objective - self.lower_bound) / max(1.0, abs(self.objective))

    def duality_gap(self) -> float:
        return self.objective - self.lower_bound

    def warn_unless_converged(self, unit: str = "iterations", stacklevel: int = 2) -> None:
        """The ``ConvergenceWarning`` every fast solver issues when it stops above ``tol``
        (``stacklevel`` counted from the caller of this method)."""
        if not self.converged:
            warnings.warn(f"{self.name or 'the solver'} stopped after {self.n_iter} {unit} with a "
                          f"certified relative duality gap of {self.gap:.3e} > tol={self.tol:g}; raise "
                          "max_iter or tol", ConvergenceWarning, stacklevel=stacklevel + 1)

    def __str__(self):
        state = "converged" if self.converged else "NOT converged"
        return (f"{self.name or 'solver'}: {state} after {self.n_iter} iterations, objective "
                f"{self.objective:.10g}, lower bound {self.lower_bound:.10g}, gap {self.gap:.2e} "
                f"(tol {self.tol:g}), {self.solve_time:.3f}s")
