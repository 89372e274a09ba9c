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

__version__ = "0.1.0"

#: subpackages and modules reached as attributes on first use (``hc.datasets.load_arff``), as
#: ``from hiercvx import datasets`` reaches them; with the names below, they keep
#: ``import hiercvx`` (and the pytest plugin it carries, which every pytest run in the
#: environment loads) from paying for CVXPY and scikit-learn until they are used
_ON_FIRST_USE = ("bias", "cli", "datasets", "demo", "describe", "estimators", "formulations",
                 "inference", "kernels", "losses", "methods", "metrics", "models", "reference",
                 "reproduce", "result", "solvers", "targets", "taxonomy", "testing", "verify")
#: the core objects defined in modules that import CVXPY, by the module defining them
_NAMES_ON_FIRST_USE = {"ReferenceProblem": "reference", "ReferenceSolution": "reference",
                       "Solution": "result"}


def __getattr__(name: str):
    import importlib
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES_ON_FIRST_USE:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES_ON_FIRST_USE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ON_FIRST_USE) | set(_NAMES_ON_FIRST_USE))

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
