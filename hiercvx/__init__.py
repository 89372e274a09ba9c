"""hiercvx: hierarchical classification as convex optimization you can trust.

Exact references (CVXPY primal/dual with certificates), fast solvers checked against
them, and scikit-learn estimators.  See DESIGN.md for the public contract.
"""

from .exceptions import (
    DataFormatError,
    HierarchyError,
    HierCVXError,
    InputError,
    LabelError,
    ProblemTooLargeError,
    SolverError,
    SolverUnavailableError,
)
from .hierarchy import Hierarchy, class_attributes
from .reference import ReferenceProblem, ReferenceSolution
from . import losses, metrics, taxonomy  # noqa: E402  (hc.losses.<loss>, hc.metrics.<metric>)

__version__ = "0.1.0"

__all__ = [
    "Hierarchy",
    "ReferenceProblem",
    "ReferenceSolution",
    "losses",
    "metrics",
    "taxonomy",
    "class_attributes",
    "HierCVXError",
    "InputError",
    "HierarchyError",
    "LabelError",
    "DataFormatError",
    "ProblemTooLargeError",
    "SolverError",
    "SolverUnavailableError",
]
