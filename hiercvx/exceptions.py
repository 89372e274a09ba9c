"""The errors hiercvx raises.

One base class, :class:`HierCVXError`.  Everything caused by the caller's input also
subclasses :class:`ValueError`, so ``except ValueError`` keeps working for code that does
not know about hiercvx; an argument of the wrong type raises :class:`InputTypeError`, which
is also a ``TypeError`` (Python's convention).  No public entry point lets a raw numpy,
scipy or CVXPY exception through for bad input (``tests/test_fuzz_entry_points.py``); the
one foreign error kept is scikit-learn's ``NotFittedError`` (also a ``ValueError``) for
``predict`` before ``fit``.  :class:`SolverError` is raised when an optimization cannot be
certified (bad status, gap over tolerance, non-finite values, licence limits).
"""

from __future__ import annotations


class HierCVXError(Exception):
    """Base class of every error raised by hiercvx."""


class InputError(HierCVXError, ValueError):
    """Invalid input: the message says what is wrong, where, and how to fix it."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (a dict for ``X``, a sparse matrix where only dense data
    works, a string for ``C``).  Python's convention for a wrong type is ``TypeError``, the
    package's for bad input is :class:`InputError` (a ``ValueError``): this error is both, so
    either ``except`` clause catches it."""


class HierarchyError(InputError):
    """An invalid hierarchy: cycle, self-loop, orphan, duplicate name, empty graph."""


class LabelError(InputError):
    """Labels that are unknown to the hierarchy, empty label sets, or unusable label sets."""


class DataFormatError(InputError):
    """A malformed data file; the message names the file and the line."""

    def __init__(self, message: str, path=None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)
        self.path = path
        self.line = line


class ProblemTooLargeError(InputError):
    """The exact reference would be too large to compile; raised before compiling.

    Raised by a size check (:func:`hiercvx.reference.check_size`) it also carries
    ``size``, the limit that admits the problem (its estimated nonzeros; for a problem that
    grows while it is solved, a bound on them), and ``problem``, the message without its last
    advice (how to raise the limit), so that a caller that raises the limit in its own way (an
    estimator's ``solver_options``) can say so; both ``None`` otherwise.
    """

    def __init__(self, message: str, *, size: int | None = None, problem: str | None = None):
        super().__init__(message)
        self.size, self.problem = size, problem

    @classmethod
    def over_limit(cls, problem: str, size: int, setting: str, who: str = ""):
        """The error of a size check: ``problem``, then how to raise the limit to ``size``
        through ``setting`` (``"max_size={}"``: the builders' keyword; an estimator's
        ``solver_options``), after ``who`` (the caller's name, or nothing)."""
        return cls(f"{who}{problem}pass {setting.format(size)} (or larger) to build it anyway",
                   size=size, problem=problem)


class SolverError(HierCVXError):
    """A solver failed, or its answer could not be certified.

    Attributes: ``status`` (the solver's status string), ``solver`` (its name) and
    ``gap`` (the relative gap when one was computed, else ``None``).
    """

    def __init__(self, message: str, status=None, solver=None, gap=None):
        details = []
        if status is not None:
            details.append(f"status={status}")
        if solver is not None:
            details.append(f"solver={solver}")
        if gap is not None:
            details.append(f"gap={gap:.3g}")
        super().__init__(message + (f" ({', '.join(details)})" if details else ""))
        self.status = status
        self.solver = solver
        self.gap = gap


class SolverUnavailableError(SolverError):
    """The requested solver is not installed or not licensed for this problem."""


__all__ = [
    "HierCVXError",
    "InputError",
    "InputTypeError",
    "HierarchyError",
    "LabelError",
    "DataFormatError",
    "ProblemTooLargeError",
    "SolverError",
    "SolverUnavailableError",
]
