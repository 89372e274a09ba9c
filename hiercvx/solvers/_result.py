"""Fast solvers return the one result type of hiercvx (:mod:`hiercvx.result`)."""

from ..result import Solution, reached

#: the name fast solvers have used for :class:`hiercvx.result.Solution`
SolverResult = Solution

__all__ = ["SolverResult", "Solution", "reached"]
