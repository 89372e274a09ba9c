"""Program (19) and its LP relaxation in HiGHS (``highspy``) or Gurobi, loaded once per hierarchy.

The integer program (19) of Choi, Sasaki and Srebro, "Normalized Hierarchical SVM",
arXiv:1508.02479, 2016, written as ``min (-s) . z`` over ``z in {0, 1}^M``::

    z_c - z_p <= 0                    for every edge p -> c        (closure)
    sum_{c in C(n)} z_c - z_n >= 0    for every internal node n    (a chosen node has a chosen child)
    sum_{l in leaves} z_l >= 1                                      (non-empty)
    z_root = 1

The rows are built once (:func:`constraint_matrix`); between samples only the costs change, so
the LP re-solve warm-starts from the previous basis.  ``solve_subset`` solves the program on a
subset of the nodes (the others fixed at 0), as the bounds of :mod:`.bounds` allow.
"""

from __future__ import annotations

import highspy
import numpy as np
import scipy.sparse as sp

try:  # optional (extra "gurobi"): needs a licence
    import gurobipy as gp
except ImportError:  # pragma: no cover - depends on the environment
    gp = None

from .._solver_choice import silence_highs_banner
from ..exceptions import SolverError, SolverUnavailableError
from ..hierarchy import Hierarchy
from .options import Options

__all__ = ["constraint_matrix", "new_highs", "HighsModel", "GurobiModel", "BACKENDS"]


def constraint_matrix(H: Hierarchy):
    """Rows of (19) as a CSC matrix with row bounds: edges, internal nodes, the leaf row."""
    M = len(H)
    parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
    n_edges = len(parent)
    internal = np.flatnonzero(~H.leaf_mask)
    row_of_internal = np.full(M, -1)
    row_of_internal[internal] = n_edges + np.arange(len(internal))
    leaf_row = n_edges + len(internal)
    e = np.arange(n_edges)
    rows = np.concatenate([e, e,                                  # z_c - z_p <= 0
                           row_of_internal[parent], row_of_internal[internal],  # sum z_c - z_n >= 0
                           np.full(len(H.leaf_indices), leaf_row)])             # sum z_l >= 1
    cols = np.concatenate([child, parent, child, internal, H.leaf_indices])
    vals = np.concatenate([np.ones(n_edges), -np.ones(n_edges), np.ones(n_edges),
                           -np.ones(len(internal)), np.ones(len(H.leaf_indices))])
    A = sp.csc_matrix((vals, (rows, cols)), shape=(leaf_row + 1, M))
    A.sort_indices()
    lower = np.concatenate([np.full(n_edges, -np.inf), np.zeros(len(internal)), [1.0]])
    upper = np.concatenate([np.zeros(n_edges), np.full(len(internal), np.inf), [np.inf]])
    col_lower = np.zeros(M)
    col_lower[0] = 1.0  # the root is always in
    return A, lower, upper, col_lower, np.ones(M)


def new_highs() -> "highspy.Highs":
    """A silent ``highspy.Highs`` (the process's banner silenced first:
    ``hiercvx._solver_choice.silence_highs_banner``)."""
    silence_highs_banner()
    h = highspy.Highs()
    h.silent()
    return h


def _highs_options(integer: bool, options: Options):
    """HiGHS options of the inference programs."""
    # HiGHS's default reduced-cost tolerance (1e-7) accepts sets that lose up to ~1e-7 in
    # score; its smallest keeps near-ties exact
    yield "dual_feasibility_tolerance", options.highs_tolerance
    # (19) has nothing for presolve to remove but what the bounds already dropped
    yield "presolve", "off"
    if integer:  # exact optimum, not HiGHS's default 1e-4 relative MIP gap; the MIP
        # feasibility tolerance also serves as its epsilon when comparing objectives
        yield "mip_rel_gap", 0.0
        yield "mip_abs_gap", options.highs_tolerance
        yield "mip_feasibility_tolerance", options.highs_tolerance


def _unit_cost(cost: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``(unit, scale, offset)``: ``cost`` with the root's entry (node 0) set to 0 and divided by
    the largest magnitude among the other nodes (when positive), that divisor, and the root's
    cost.

    ``z_root = 1`` in every feasible point, so the root's cost is the constant ``offset`` of
    every objective: ``cost . z = scale * (unit . z) + offset``.  HiGHS's tolerances are
    absolute: at costs of 1e-9 or of millions, or beside a large constant, they would accept a
    worse set, so the programs see the costs that tell sets apart at magnitude 1, and the
    argmax depends neither on the scale of the scores nor on the root's score.
    """
    cost = np.array(cost, dtype=float)
    if not cost.size:
        return cost, 1.0, 0.0
    offset = float(cost[0])
    cost[0] = 0.0
    scale = float(np.max(np.abs(cost)))
    if not scale > 0:
        return cost, 1.0, offset
    return cost / scale, scale, offset


def _pass_program(h, A, lower, upper, col_lower, col_upper, integer: bool) -> None:
    """Load the program with rows ``A`` (CSC, sorted) and these bounds into ``h`` (zero costs)."""
    M = A.shape[1]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = M, A.shape[0]
    lp.col_cost_ = np.zeros(M)
    lp.col_lower_, lp.col_upper_ = col_lower, col_upper
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = M, A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger] * M
    status = h.passModel(lp)
    if status == highspy.HighsStatus.kError:  # pragma: no cover
        raise SolverError("HiGHS refused the inference model", status=str(status), solver="HIGHS")


class HighsModel:
    """Program (19) (or its relaxation) loaded into one ``highspy.Highs``; only costs change."""

    name = "highs"

    def __init__(self, H: Hierarchy, integer: bool, options: Options | None = None):
        self._options = options or Options()
        self._rows = constraint_matrix(H)
        self._integer = integer
        self._h, self._M = self._load(self._rows, integer, self._options)
        self._cols = np.arange(self._M, dtype=np.int32)
        self._small = None  # a second instance for the programs restricted to a subset of nodes

    @staticmethod
    def _load(rows, integer: bool, options: Options):
        """A silent ``Highs`` holding the program ``rows`` (:func:`constraint_matrix`)."""
        h = new_highs()
        for name, value in _highs_options(integer, options):
            h.setOptionValue(name, value)
        _pass_program(h, *rows, integer)
        return h, rows[0].shape[1]

    @staticmethod
    def _run(h) -> tuple[np.ndarray, float]:
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            # a warm start without presolve can end with status "Unknown" (rarely): solve
            # once more from scratch with presolve before giving up
            first = h.modelStatusToString(status)
            h.clearSolver()
            h.setOptionValue("presolve", "on")
            try:
                h.run()
            finally:
                h.setOptionValue("presolve", "off")
            status = h.getModelStatus()
            if status != highspy.HighsModelStatus.kOptimal:
                raise SolverError("HiGHS did not solve the inference program to optimality, "
                                  "warm-started nor from scratch with presolve",
                                  status=f"{first}, then {h.modelStatusToString(status)}",
                                  solver="HIGHS")
        z = np.asarray(h.getSolution().col_value, dtype=float)
        return z, float(h.getInfo().objective_function_value)

    def solve(self, cost: np.ndarray) -> tuple[np.ndarray, float]:
        """Minimize ``cost . z``; returns ``(z, cost . z)``."""
        unit, scale, offset = _unit_cost(cost)
        self._h.changeColsCost(self._M, self._cols, unit)
        z, value = self._run(self._h)
        return z, value * scale + offset

    def _load_subset(self, keep: np.ndarray, integer: bool):
        """Program (19) restricted to the nodes ``keep`` (bool over the nodes; rows left empty
        dropped), loaded into the second HiGHS model; returns the model, the kept columns and
        the sub-program ``(rows, row lower, row upper, column lower, column upper)``."""
        A, lower, upper, col_lower, col_upper = self._rows
        cols = np.flatnonzero(keep)
        sub = A[:, cols].tocsr()
        used = np.diff(sub.indptr) > 0
        sub = sub[used].tocsc()
        sub.sort_indices()
        if self._small is None:
            self._small = new_highs()
            for name, value in _highs_options(self._integer, self._options):
                self._small.setOptionValue(name, value)
        program = (sub, lower[used], upper[used], col_lower[cols], col_upper[cols])
        _pass_program(self._small, *program, integer)
        return self._small, cols, program

    def solve_subset(self, cost: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`solve` with ``z_j = 0`` for the nodes outside ``keep`` (bool over the nodes),
        as a program over the kept columns only (rows left empty are dropped)."""
        h, cols, _ = self._load_subset(keep, self._integer)
        unit, scale, offset = _unit_cost(cost)
        h.changeColsCost(len(cols), np.arange(len(cols), dtype=np.int32), unit[cols])
        zs, value = self._run(h)
        z = np.zeros(self._M)
        z[cols] = zs
        return z, value * scale + (offset if keep[0] else 0.0)

    def branch_subset(self, cost: np.ndarray, keep: np.ndarray, incumbent: np.ndarray,
                      max_nodes: int, integrality_tol: float, tol: float):
        """Program (19) on the nodes ``keep`` by depth-first branch and bound on this (LP)
        model: each node of the search is the LP relaxation with some variables fixed at 0 or
        1, warm-started from its parent's basis; a node whose LP cost is not below the best
        integral cost by more than ``tol`` is pruned, a fractional one branches on its most
        fractional variable (1 first).  ``incumbent``: a label set of ``Y_m`` (bool over the
        nodes, inside ``keep``), the first best.  Returns the best set (bool over the nodes), or
        None after ``max_nodes`` LPs without a proof (the caller then runs (19) itself).
        ``tol`` is in the units of ``cost``."""
        h, cols, (sub, row_lo, row_up, col_lo, col_up) = self._load_subset(keep, False)
        # the search runs on the unit costs (see _unit_cost): the best set is scale-free, and
        # the root's cost, the same in every set, is left out
        cost, scale, _ = _unit_cost(cost)
        tol = tol / scale
        k = len(cols)
        index = np.arange(k, dtype=np.int32)
        h.changeColsCost(k, index, cost[cols])
        base_lo, base_up = col_lo.astype(float), col_up.astype(float)
        best = incumbent[cols].astype(float)
        best_cost = float(cost[cols] @ best)
        stack = [((), ())]  # (fixed columns, their values)
        now_lo, now_up = base_lo.copy(), base_up.copy()
        for _ in range(int(max_nodes)):
            if not stack:
                out = np.zeros(len(cost), dtype=bool)
                out[cols] = best > 0.5
                return out
            fixed, values = stack.pop()
            lo, up = base_lo.copy(), base_up.copy()
            lo[list(fixed)] = up[list(fixed)] = values
            moved = np.flatnonzero((lo != now_lo) | (up != now_up)).astype(np.int32)
            if len(moved):  # only the bounds that change: the basis stays warm
                h.changeColsBounds(len(moved), moved, lo[moved], up[moved])
            now_lo, now_up = lo, up
            h.run()
            status = h.getModelStatus()
            if status == highspy.HighsModelStatus.kInfeasible:
                continue
            if status != highspy.HighsModelStatus.kOptimal:
                return None  # let the integer program decide
            z = np.asarray(h.getSolution().col_value, dtype=float)
            value = float(cost[cols] @ z)
            if value >= best_cost - tol:
                continue
            # the support of a feasible point of the LP is a label set (closed, every member
            # with a member child, a leaf in): a free incumbent
            support = (z > integrality_tol).astype(float)
            if float(cost[cols] @ support) < best_cost and _satisfies(sub, row_lo, row_up, support):
                best, best_cost = support, float(cost[cols] @ support)
            off = np.abs(z - np.round(z))
            j = int(np.argmax(off))
            if off[j] <= integrality_tol:
                best, best_cost = np.round(z), float(cost[cols] @ np.round(z))
                continue
            stack.append((fixed + (j,), values + (0.0,)))
            stack.append((fixed + (j,), values + (1.0,)))
        return None


def _satisfies(rows, lower, upper, z) -> bool:
    """Whether the 0/1 point ``z`` satisfies the rows ``lower <= rows z <= upper`` exactly."""
    value = rows @ z
    return bool(np.all(value >= lower) and np.all(value <= upper))


class GurobiModel:  # pragma: no cover - needs gurobipy and a licence
    """Program (19) in one ``gurobipy.Model``; only the objective changes between samples."""

    name = "gurobi"

    def __init__(self, H: Hierarchy, integer: bool, options: Options | None = None):
        if gp is None:
            raise SolverUnavailableError(
                "gurobipy is not installed; use solver='highs' (the default, open source) or "
                "pip install gurobipy", solver="GUROBI")
        self._gp = gp
        A, lower, upper, col_lower, col_upper = constraint_matrix(H)
        try:
            env = gp.Env(params={"OutputFlag": 0})
            m = gp.Model(env=env)
            vtype = gp.GRB.BINARY if integer else gp.GRB.CONTINUOUS
            z = m.addMVar(A.shape[1], lb=col_lower, ub=col_upper, vtype=vtype)
            A = A.tocsr()
            finite_up, finite_lo = np.isfinite(upper), np.isfinite(lower)
            m.addMConstr(A[finite_up], z, "<", upper[finite_up])
            m.addMConstr(A[finite_lo], z, ">", lower[finite_lo])
            if integer:
                m.Params.MIPGap = 0.0
            m.Params.Threads = 1
        except gp.GurobiError as exc:
            raise SolverUnavailableError(f"Gurobi cannot build the inference model ({exc}); use "
                                         "solver='highs' (the default, open source)",
                                         solver="GUROBI") from None
        self._m, self._z = m, z
        self._upper = np.asarray(col_upper, dtype=float)

    def solve_subset(self, cost: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, float]:
        """:meth:`solve` with ``z_j = 0`` outside ``keep`` (Gurobi's presolve drops them)."""
        self._z.UB = np.where(keep, self._upper, 0.0)
        try:
            return self.solve(cost)
        finally:
            self._z.UB = self._upper

    def solve(self, cost: np.ndarray) -> tuple[np.ndarray, float]:
        """Minimize ``cost . z``; returns ``(z, cost . z)``."""
        gp = self._gp
        cost, scale, offset = _unit_cost(cost)  # Gurobi's tolerances are absolute too
        self._z.Obj = cost
        try:
            self._m.optimize()
        except gp.GurobiError as exc:
            raise SolverUnavailableError(f"Gurobi failed on the inference program ({exc}); a "
                                         "size-limited licence is the usual cause; use "
                                         "solver='highs'", solver="GUROBI") from None
        if self._m.Status != gp.GRB.OPTIMAL:
            raise SolverError("Gurobi did not solve the inference program to optimality",
                              status=str(self._m.Status), solver="GUROBI")
        return np.asarray(self._z.X, dtype=float), float(self._m.ObjVal) * scale + offset


BACKENDS = {"highs": HighsModel, "gurobi": GurobiModel}
