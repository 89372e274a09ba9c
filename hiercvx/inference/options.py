"""Settings of label-set inference: one frozen :class:`Options` record.

Every entry point of :mod:`hiercvx.inference` (:class:`~hiercvx.inference.LabelSetOracle`,
:func:`~hiercvx.inference.best_label_set`, :func:`~hiercvx.inference.reference`) takes
``options=Options(...)``; the defaults are what the tests and the NHSVM solvers run with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..exceptions import InputError

__all__ = ["Options", "METHODS", "SOLVERS"]

#: The inference methods (see :mod:`hiercvx.inference`).
METHODS = ("auto", "dp", "ilp", "lp", "enumerate")
#: The integer / linear programming back ends of methods ``"ilp"`` and ``"lp"``.
SOLVERS = ("highs", "gurobi")


@dataclass(frozen=True)
class Options:
    """Settings of label-set inference.

    Attributes
    ----------
    enumerate_max_nodes : int
        Largest hierarchy (in nodes) that brute-force enumeration accepts: ``Y_m`` has
        ``2^leaves - 1`` members, so 20 nodes keep it below a million sets.
    enumerate_auto_leaves : int
        ``"auto"`` enumerates a DAG's label sets up to this many leaves: ``2^10 - 1`` sets are
        one matrix product, orders of magnitude faster than a program (19) per sample.
    integrality_tol : float
        Distance from {0, 1} above which an LP coordinate counts as fractional: far above the
        solvers' feasibility tolerances, far below the 0.5 that rounding needs.
    enumerate_chunk_entries : int
        Entries of one (samples x sets) value block of enumeration: bounds its memory (32 MB).
    bound_rtol : float
        Relative tolerance (times ``sum |s|`` over the nodes other than the root, whose score
        every set has) of the bound certificate before (19): far above the rounding of the
        sums, far below HiGHS's own 1e-10; relative, so the argmax does not depend on the
        scale of the scores.
    lagrange_steps : int
        Subgradient steps on the multipliers of the non-tree edges per uncertified sample: a
        few steps certify most samples; more rarely pay for themselves.
    restrict_below : float
        Fraction of the nodes below which an uncertified sample's LP is built on its kept
        nodes only (a new program) rather than re-solved warm on the whole graph.
    highs_tolerance : float
        HiGHS's dual feasibility and MIP tolerances: its smallest (1e-10), so near-ties are
        resolved exactly, as the brute-force tests demand (its default 1e-7 is not).
    progress_from : int
        With ``verbose=None``, the solver methods show a progress bar from this many samples.
    milp_solvers : tuple of str
        CVXPY solvers :func:`~hiercvx.inference.reference` tries for (19), first installed wins.
    lp_solvers : tuple of str
        CVXPY solvers for the LP relaxation of (19), first installed wins.
    closure_cut : bool
        Methods ``"ilp"`` and ``"lp"`` first solve the closure relaxation of (19) by a minimum
        cut (:mod:`hiercvx.inference.closure`): a sample whose closed set is a label set is
        answered exactly in milliseconds, without a program; False sends every sample to the
        programs.
    closure_branch_cuts : int
        Method ``"ilp"``: a sample whose closed set is not a label set (an internal node in it
        without a child in it) is solved by best-first branch and bound on the closure
        relaxation within this many minimum cuts (:meth:`~hiercvx.inference.closure.ClosureCut.branch`)
        when the bounds do not certify it, before any program.  Loss-augmented sets of a large
        DAG miss a label set at one to three nodes and are proved in a few cuts; at large C
        (scores far above the loss) they dangle at more nodes and take a few dozen.  Each cut
        after the first continues its parent's maximum flow, a fraction of one LP's cost, so
        a budget of a few dozen pays for itself against the LP and its branching; 0: off.
    branch_max_nodes : int
        Method ``"ilp"``: an uncertified sample whose LP is fractional is solved by depth-first
        branch and bound on the warm-started LP over its kept nodes, up to this many LPs (a
        few suffice where the LP is nearly integral, each a fraction of HiGHS's integer-program
        start-up); past it, or with 0, HiGHS's integer program.
    split_root_from : int
        Method ``"ilp"`` (and method ``"lp"`` for its fractional samples) on a hierarchy of at
        least this many nodes whose root's children have disjoint descendant sets (the Gene
        Ontology's namespaces) solves (19) once per such component and combines them exactly
        (:mod:`hiercvx.inference.components`): a component's bounds and programs are far
        tighter and smaller than the whole graph's.  Smaller hierarchies are solved whole (fast
        already); 0 never splits.
    """

    enumerate_max_nodes: int = 20
    enumerate_auto_leaves: int = 10
    integrality_tol: float = 1e-6
    enumerate_chunk_entries: int = 1 << 22
    bound_rtol: float = 1e-12
    lagrange_steps: int = 10
    restrict_below: float = 0.5
    highs_tolerance: float = 1e-10
    progress_from: int = 2000
    milp_solvers: tuple = ("HIGHS", "GUROBI", "SCIP", "CBC", "GLPK_MI")
    lp_solvers: tuple = ("HIGHS", "CLARABEL", "ECOS", "SCS")
    closure_cut: bool = True
    closure_branch_cuts: int = 64
    branch_max_nodes: int = 64
    split_root_from: int = 1000

    def __post_init__(self):
        for name in ("enumerate_max_nodes", "enumerate_chunk_entries", "progress_from",
                     "enumerate_auto_leaves", "lagrange_steps", "branch_max_nodes",
                     "split_root_from", "closure_branch_cuts"):
            value = getattr(self, name)  # 2.5 steps would be cut to 2 without a word
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"{name} must be an integer, got {value!r}")
        if not (0 < self.integrality_tol < 0.5):
            raise InputError(f"integrality_tol must be in (0, 0.5), got {self.integrality_tol!r}")
        for name in ("enumerate_max_nodes", "enumerate_chunk_entries",
                     "progress_from"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("enumerate_auto_leaves", "lagrange_steps", "branch_max_nodes",
                     "split_root_from", "closure_branch_cuts"):  # 0: off
            if int(getattr(self, name)) < 0:
                raise InputError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not (0 <= self.restrict_below <= 1):
            raise InputError(f"restrict_below must be in [0, 1], got {self.restrict_below!r}")
        for name in ("bound_rtol", "highs_tolerance"):
            if not (getattr(self, name) > 0):
                raise InputError(f"{name} must be positive, got {getattr(self, name)!r}")


def resolve(options: Options | None, **overrides) -> Options:
    """``options`` (default :class:`Options`) with the keyword arguments that are not ``None``
    (the entry points' older keywords such as ``max_nodes=``) applied on top."""
    if options is None:
        options = Options()
    elif not isinstance(options, Options):
        raise InputError(f"options must be a hiercvx.inference.Options, got {type(options).__name__}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    if not changes:
        return options
    return replace(options, **changes)
