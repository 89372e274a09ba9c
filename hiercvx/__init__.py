"""hiercvx: hierarchical classification as convex optimization you can trust.

Exact references (CVXPY primal/dual with certificates), fast solvers checked against
them, and scikit-learn estimators.  Layers, bottom up: the mathematics of label spaces
(``Hierarchy``, losses, inference) -> ``models`` (one per paper) -> ``formulations`` (CVXPY
declarations) and ``solvers`` (fast algorithms), both returning :class:`Solution` ->
``methods`` (the registry) -> ``estimators``, ``testing``, ``verify`` -> the ``hiercvx`` command.
"""

from . import _kernel_cache

_kernel_cache.install()  # before any compiled kernel is imported: stamps its cache with its sources

from .exceptions import (  # noqa: E402
    DataFormatError,
    HierarchyError,
    HierCVXError,
    InputError,
    InputTypeError,
    LabelError,
    ProblemTooLargeError,
    SolverError,
    SolverUnavailableError,
)
from .hierarchy import Hierarchy, class_attributes  # noqa: E402
from .reference import ReferenceProblem, ReferenceSolution  # noqa: E402
from .result import Solution  # noqa: E402
from . import losses, metrics, taxonomy  # noqa: E402  (hc.losses.<loss>, hc.metrics.<metric>)

__version__ = "0.1.0"

#: subpackages reached as attributes on first use (``hc.datasets.load_arff``), as
#: ``from hiercvx import datasets`` reaches them
_ON_FIRST_USE = ("datasets", "estimators", "formulations", "inference", "kernels", "methods",
                 "models", "reproduce", "solvers", "testing")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Hierarchy",
    "ReferenceProblem",
    "ReferenceSolution",
    "Solution",
    "losses",
    "metrics",
    "taxonomy",
    "class_attributes",
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
