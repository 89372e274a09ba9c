"""Fast algorithms, one module per algorithm; each returns a :class:`SolverResult`."""

from ._result import SolverResult

__all__ = ["SolverResult"]
