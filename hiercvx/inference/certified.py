"""Program (19) and its LP relaxation declared in CVXPY and certified: the reference that the
fast inference paths are tested against.

Program (19) of Choi, Sasaki and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479,
2016, for every row of the scores at once, ``min sum_i -s_i . z_i`` (the paper's
``argmin z . r`` with ``r = -s``) over the rows of :func:`~.programs.constraint_matrix`.  The LP
is certified by its Lagrangian bound at the clipped multipliers; the integer program by the LP
bound, replaced by the exact optimum by enumeration where the LP is fractional on small graphs.
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from .._solver_choice import silence_highs_banner
from ..exceptions import InputError, SolverError, SolverUnavailableError
from ..hierarchy import Hierarchy
from ..result import OPTIMAL, Solution
from ._checks import check_hierarchy, check_scores
from .labelsets import enumerate_label_sets, is_valid_label_set, label_set_scores
from .losses import loss_augmented_scores
from .options import Options, resolve
from .programs import constraint_matrix

__all__ = ["reference"]


def _pick_solver(solver: str | None, preference: tuple) -> str:
    installed = cp.installed_solvers()
    if solver is not None:
        if solver.upper() not in installed:
            raise SolverUnavailableError(f"solver {solver!r} is not installed; installed: {installed}",
                                         solver=solver)
        return solver.upper()
    for name in preference:
        if name in installed:
            return name
    raise SolverUnavailableError(f"no solver for this program among {preference}; install highspy",
                                 solver=None)


def _declare_19(H: Hierarchy, S: np.ndarray, integer: bool):
    """Program (19) for every row of ``S`` as one CVXPY problem ``min sum_i -s_i . z_i`` (the
    paper's ``argmin z . r``, ``r = -s``): closure rows ``z_c - z_p <= 0``, cover rows (a chosen
    node has a chosen child; a leaf is chosen) ``>= b``, ``z_root = 1``, ``0 <= z <= 1``."""
    A, lower, upper, col_lower, _ = constraint_matrix(H)
    A = A.tocsr()
    le = np.isfinite(upper)
    A_le, A_ge, b_ge = A[le], A[~le], lower[~le]
    n, M = S.shape
    Z = cp.Variable((n, M), boolean=integer, name="z")
    closure = Z @ A_le.T <= 0
    cover = Z @ A_ge.T >= np.broadcast_to(b_ge, (n, len(b_ge)))
    box = [Z >= np.broadcast_to(col_lower, (n, M)), Z <= 1]
    problem = cp.Problem(cp.Minimize(-cp.sum(cp.multiply(S, Z))), [closure, cover, *box])
    return problem, Z, closure, cover, (A_le, A_ge, b_ge, col_lower)


def _lp_dual_bound(S, duals_le, duals_ge, rows) -> np.ndarray:
    """Per sample, the Lagrangian bound of the LP at the clipped multipliers ``y >= 0``:
    ``b . y_ge + sum_j min_{z_j in box} r_j z_j``, ``r = -s + A_le^T y_le - A_ge^T y_ge`` (box
    ``[1, 1]`` for the root, ``[0, 1]`` otherwise).  Valid for any ``y >= 0``."""
    A_le, A_ge, b_ge, col_lower = rows
    y_le = np.maximum(np.asarray(duals_le, dtype=float), 0.0)
    y_ge = np.maximum(np.asarray(duals_ge, dtype=float), 0.0)
    r = -S + y_le @ A_le - y_ge @ A_ge
    fixed = col_lower > 0
    return y_ge @ b_ge + r[:, fixed].sum(axis=1) + np.minimum(r[:, ~fixed], 0.0).sum(axis=1)


def _lp_reference(H: Hierarchy, S: np.ndarray, solver: str | None, options: Options) -> Solution:
    """The LP relaxation of (19), certified: objective at the returned point, Lagrangian bound."""
    t0 = time.perf_counter()
    problem, Z, closure, cover, rows = _declare_19(H, S, integer=False)
    name = _pick_solver(solver, options.lp_solvers)
    build = time.perf_counter() - t0
    silence_highs_banner()
    problem.solve(solver=name)
    if problem.status != cp.OPTIMAL:
        raise SolverError("the LP relaxation of (19) was not solved to optimality",
                          status=problem.status, solver=name)
    z = np.clip(np.asarray(Z.value, dtype=float), 0.0, 1.0)
    z[:, 0] = 1.0
    A_le, A_ge, b_ge, _ = rows
    violation = max(float((z @ A_le.T).max(initial=0.0)), float((b_ge - z @ A_ge.T).max(initial=0.0)))
    if violation > 1e-6:
        raise SolverError(f"the LP point violates (19)'s rows by {violation:.3g}", solver=name)
    cost = -(S * z).sum(axis=1)
    bound = _lp_dual_bound(S, closure.dual_value, cover.dual_value, rows)
    integrality_tol = options.integrality_tol
    fractional = np.abs(z - np.round(z)).max(axis=1, initial=0.0) > integrality_tol
    return Solution(objective=float(cost.sum()), lower_bound=float(bound.sum()), weights=z,
                    status=OPTIMAL, solver=name, tol=integrality_tol, build_time=build,
                    solve_time=time.perf_counter() - t0 - build, values={"z": z},
                    duals={"closure": closure.dual_value, "cover": cover.dual_value},
                    name="LP relaxation of (19)", problem_class="LP",
                    extras={"cost": cost, "bound": bound, "fractional": fractional})


def reference(scores, H: Hierarchy, *, loss=None, true_indicator=None, relaxation: bool = False,
              solver: str | None = None, integrality_tol: float | None = None,
              options: Options | None = None) -> Solution:
    """Program (19) (or, ``relaxation=True``, its LP relaxation) declared in CVXPY and certified.

    Minimizes ``sum_i -s_i . z_i`` (the paper's ``argmin z . r`` with ``r = -s``; one program
    per row of ``scores``, declared together) over the label sets of ``Y_m`` (rows of (19):
    closure, a chosen node has a chosen child, a leaf is chosen, the root is in).

    * LP: ``objective`` = the cost at the returned point (checked feasible), ``lower_bound``
      = the Lagrangian bound at the clipped LP multipliers; ``extras["fractional"]`` flags
      samples whose LP optimum is not integral.
    * ILP: ``objective`` = the cost of the returned sets, after the integrality check
      (``|z - round(z)| <= integrality_tol``) and the validity check
      (:func:`~hiercvx.inference.labelsets.is_valid_label_set`); ``lower_bound`` = the LP bound per
      sample, replaced by the exact optimum by enumeration where the LP is fractional and ``H`` has
      at most ``options.enumerate_max_nodes`` nodes (``extras["bound_source"]``).  ``gap`` is the
      relative integrality gap left; ``extras``: ``"value"`` (best score per sample, plus ``Delta``
      with a loss), ``"lp_value"``, ``"integrality_gap"`` (``lp_value - value >= 0``),
      ``"relaxation"`` (the LP's Solution).

    ``weights`` are the sets (bool ``(n, M)``, or ``(M,)`` for 1-D ``scores``; the LP's
    fractional point for ``relaxation=True``).  ``loss`` / ``true_indicator``: loss-augmented
    inference as in :meth:`LabelSetOracle.solve() <hiercvx.inference.oracle.LabelSetOracle.solve>`.
    The fast path (``method="ilp"``/``"lp"``) calls HiGHS directly on the same rows; the tests
    check that both agree.  ``options``: an :class:`~hiercvx.inference.Options`
    (``integrality_tol`` overrides its field).
    """
    options = resolve(options, integrality_tol=integrality_tol)
    integrality_tol = options.integrality_tol
    H = check_hierarchy(H)
    S, single = check_scores(scores, H)
    if (loss is None) != (true_indicator is None):
        raise InputError("loss-augmented inference needs both loss= and true_indicator=")
    constant = np.zeros(S.shape[0])
    if loss is not None:
        S, constant = loss_augmented_scores(S, H, true_indicator, loss)
    if S.shape[0] == 0:
        raise InputError("scores has no samples; pass at least one row of node scores")
    lp = _lp_reference(H, S, solver if relaxation else None, options)
    lp.extras["value"] = -lp.extras["cost"] + constant
    if relaxation:
        if single:
            lp.weights = lp.weights[0]
        return lp
    t0 = time.perf_counter()
    problem, Z, _, _, _ = _declare_19(H, S, integer=True)
    name = _pick_solver(solver, options.milp_solvers)
    silence_highs_banner()
    problem.solve(solver=name)
    if problem.status != cp.OPTIMAL:
        raise SolverError("the integer program (19) was not solved to optimality",
                          status=problem.status, solver=name)
    z = np.asarray(Z.value, dtype=float)
    off = float(np.abs(z - np.round(z)).max(initial=0.0))
    if off > integrality_tol:
        raise SolverError(f"the ILP solution is {off:.3g} away from integral (> {integrality_tol:g})",
                          solver=name)
    sets = z > 0.5
    valid = is_valid_label_set(sets, H)
    if not np.all(valid):
        raise SolverError(f"the ILP solution of sample {int(np.argmin(valid))} is not a label set of "
                          "Y_m", solver=name)
    cost = -label_set_scores(S, sets)
    bound = lp.extras["bound"].copy()
    source = np.array(["lp"] * len(cost), dtype=object)
    frac = lp.extras["fractional"] | (cost - bound > 1e-9 * np.maximum(1.0, np.abs(cost)))
    if frac.any() and len(H) <= options.enumerate_max_nodes:
        everything = enumerate_label_sets(H, max_nodes=options.enumerate_max_nodes)
        bound[frac] = -(S[frac] @ everything.T.astype(float)).max(axis=1)
        source[frac] = "enumeration"
    value = -cost + constant
    lp_value = lp.extras["value"]
    return Solution(objective=float(cost.sum()), lower_bound=float(bound.sum()),
                    weights=sets[0] if single else sets, status=OPTIMAL, solver=name,
                    tol=integrality_tol, build_time=lp.build_time,
                    solve_time=time.perf_counter() - t0, values={"z": z},
                    name="integer program (19)", problem_class="MILP",
                    extras={"value": value, "lp_value": lp_value, "integrality_gap": lp_value - value,
                            "bound": bound, "bound_source": source, "relaxation": lp})
