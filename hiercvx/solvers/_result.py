"""The one result object every fast solver returns (qpsolvers-style)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



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

    def __str__(self):
        state = "converged" if self.converged else "NOT converged"
        return (f"{self.name or 'solver'}: {state} after {self.n_iter} iterations, objective "
                f"{self.objective:.10g}, lower bound {self.lower_bound:.10g}, gap {self.gap:.2e} "
                f"(tol {self.tol:g}), {self.solve_time:.3f}s")
