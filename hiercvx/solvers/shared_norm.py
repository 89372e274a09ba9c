"""The alpha step of the shared-norm SVM in closed form (NHSVM paper, Algorithm 1, Appendix D).

For node weights ``U`` ``(M, d)`` (one row per node of ``H.nodes``, root included) the alpha
step is problem (20)::

    min_alpha  sum_n ||U_n||^2 / alpha_n
    s.t.       sum_{n in anc(l)} alpha_n <= 1     for every leaf l,      alpha >= 0.

On a tree it separates along the tree (Appendix D).  With ``B_n = ||U_n||^2`` and the
subtree value ``f(n, l) = N_n / l`` for a budget ``l`` left to the subtree of ``n``:

    N_n = (sqrt(B_n) + sqrt(S_n))^2,   S_n = sum_{c child of n} N_c       (26), bottom-up
    E_n = sqrt(B_n) / (sqrt(B_n) + sqrt(S_n))   (the share of the budget n keeps; 1 at leaves)
    alpha_n = l_n E_n,   l_c = l_n (1 - E_n) for each child c,  l_root = 1,  top-down.

The optimum of (20) is ``N_root``, and every root-leaf path sum of alpha is exactly 1.
Two passes over the depth levels, each vectorized: O(M) work, O(depth) Python steps.

The paper's Algorithm 1 prints this with four slips (the test
``test_paper_algorithm_1_as_printed_is_not_optimal`` runs it literally): line 9 overwrites
``N_n`` before computing ``E_n`` from it, leaves keep ``E_n = 0`` (so every leaf gets
``alpha = 0``), the root's ``alpha_1 = E_1`` is never assigned, and line 16 takes
``alpha_n = sqrt(L_p E_n)`` where Appendix D's recursion gives ``alpha_n = L_p E_n``.
See ``formulations/nhsvm.md``.

:func:`solve` is the paper's alternating algorithm for the whole shared-norm SVM
(14) (section 7.2): the weight step by the pairwise BCFW of :mod:`hiercvx.solvers.nhsvm_fw`,
the alpha step by :func:`optimal_alpha` (trees) or problem (20) (DAGs), stopped on a
certified gap for (14) itself (:func:`min_path_cover` is the dual's path part).
The closed form and the path cover live in :mod:`hiercvx.models.nhsvm` (re-exported here).
"""

from __future__ import annotations

import time

import numpy as np
from tqdm.auto import tqdm

from .._validation import check_positive
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..models.nhsvm import (CollapsedLeaves, SharedNormModel, barrier_alpha, dag_alpha,
                            depth_levels, min_path_cover, node_matrix, optimal_alpha, scaled_alpha)
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import nhsvm_fw
from .primitives import blas_threads

__all__ = ["solve", "optimal_alpha", "depth_levels", "min_path_cover", "alpha_for"]


#: the certified relative gap at which the DAG alpha step's dual ascent is taken as solved
DAG_ALPHA_GAP = 1e-9
#: past alternations mixed by the Anderson acceleration of the alpha sequence
ANDERSON_MEMORY = 3
#: a node is switched off when its alpha falls below this ...
SWITCH_OFF_ALPHA = 1e-2
#: ... while the dual's path cover leaves it this much slack (relative to the largest need);
#: every SWITCH_CHECK alternations, switched-off nodes come back unless the gap fell by 10%
SWITCH_OFF_SLACK = 1e-3
SWITCH_CHECK = 100


def alpha_for(U, H: Hierarchy):
    """Optimal ``alpha`` for ``U`` and the value ``min (20)``: closed form on trees
    (:func:`optimal_alpha`); on DAGs the certified dual ascent :func:`dag_alpha`, continued by
    the barrier method :func:`barrier_alpha` when its gap stays above :data:`DAG_ALPHA_GAP`
    (the better point is kept)."""
    if H.is_tree:
        return optimal_alpha(U, H, return_value=True)
    alpha, value, gap = dag_alpha(U, H)
    if gap <= DAG_ALPHA_GAP:
        return alpha, value
    polished, polished_value, _ = barrier_alpha(U, H, tol=DAG_ALPHA_GAP)
    if polished_value < value:
        return polished, polished_value
    return alpha, value


class _Anderson:
    """Anderson acceleration (type II, ``memory`` past steps) of the fixed-point map
    ``alpha -> alpha*(U(alpha))`` that the alternation iterates: the next alpha extrapolates the
    last ``memory`` steps by least squares on their residuals, clipped and scaled back into
    the feasible set of (14) (:func:`scaled_alpha`).  Any alpha is a valid point (the objective
    is valued at the alpha step of the weight step's ``U``), so the caller restarts the
    history when the objective did not improve."""

    def __init__(self, memory: int, A):
        self.memory, self.A = int(memory), A
        self.reset()

    def reset(self):
        self.points: list = []
        self.residuals: list = []

    def step(self, alpha: np.ndarray, mapped: np.ndarray, off: np.ndarray) -> np.ndarray:
        """The next alpha after ``alpha -> mapped`` (``off``: nodes held at 0)."""
        self.points.append(alpha.copy())
        self.residuals.append(mapped - alpha)
        del self.points[:-(self.memory + 1)], self.residuals[:-(self.memory + 1)]
        if len(self.residuals) < 2:
            return mapped
        dF = np.diff(np.asarray(self.residuals), axis=0).T
        dX = np.diff(np.asarray(self.points), axis=0).T
        gamma = np.linalg.lstsq(dF, self.residuals[-1], rcond=None)[0]
        extrapolated = scaled_alpha(mapped - (dX + dF) @ gamma, self.A)
        if not np.all(extrapolated[~off] > 0):  # it left the interior: the plain step
            return mapped
        return np.where(off, 0.0, extrapolated)


def _first_alpha(model: SharedNormModel, alpha0) -> np.ndarray:
    """``alpha0`` checked against the constraint of (14), or the default start."""
    H, A, M = model.H, model.A, model.n_nodes
    if alpha0 is None:
        return optimal_alpha(np.ones((M, 1)), H) if H.is_tree else scaled_alpha(np.ones(M), A)
    alpha = node_matrix(np.asarray(alpha0, dtype=float).reshape(-1, 1), H, "alpha0").ravel()
    if np.any(alpha < 0) or float((A @ alpha).max()) > 1.0 + 1e-9:
        raise InputError("alpha0 must be non-negative with every leaf's ancestor sum <= 1 "
                         "(the constraint of (14))")
    return alpha


def solve(model: SharedNormModel, lam: float = 1.0, *, tol: float = 1e-6, max_iter: int = 200,
          verbose: bool = False, inner_max_iter: int = 2000, alpha0=None, cache_size: int = 32,
          time_limit: float | None = None, accelerate: bool = True, random_state=0) -> Solution:
    """The shared-norm SVM (14) by alternating minimization (NHSVM paper, section 7.2).

    ``min_{U, alpha} lam sum_n ||U_n||^2 / alpha_n + sum_i max_l [S_il - S_{i l_i} + Delta(l, l_i)]``,
    ``A alpha <= 1``, ``alpha >= 0``, ``S = X U^T A^T``; ``model`` from
    :func:`hiercvx.models.nhsvm.prepare_shared`.  Alternates

    * the **weight step**: for fixed alpha, ``U_n = sqrt(alpha_n) V_n`` turns (14) into the
      NHSVM-type problem ``lam ||V||^2 + hinge`` with node scores ``sqrt(alpha_n) V_n . x`` and the
      loss ``Delta`` (the paper's change of variables); solved by the pairwise BCFW of
      :mod:`hiercvx.solvers.nhsvm_fw`, **warm-started** from the previous dual point (the dual
      feasible set does not depend on alpha);
    * the **alpha step** (20) for the new ``U``: :func:`alpha_for`.  A node whose alpha is 0
      would never come back (its weights drop out of the next weight step; with random labels
      ``U = 0`` is optimal and on a DAG every alpha is then 0, which froze the dual bound), so
      when the step returns zeros the next weight step runs on ``(1 - m) alpha + m alpha0`` with
      ``m = min(0.1, gap)``; the objective is still valued at the exact alpha step.

    The plain alternation is a majorize-minimize method and converges linearly, slowest where
    the optimum puts nodes at ``alpha_n = 0`` (the shared norm is group-sparse: a node's alpha
    shrinks by a constant factor per alternation and never reaches 0).  Two changes of the
    alpha sequence, neither of which touches the certificate:

    * **switching nodes off**: a node whose alpha fell below :data:`SWITCH_OFF_ALPHA` while
      the dual's path cover leaves it slack above :data:`SWITCH_OFF_SLACK`
      (:meth:`SharedNormModel.dual_value_and_slack`; by complementary slackness such a node
      has ``alpha_n = 0`` at the optimum) gets ``alpha_n = 0`` in the weight step; when its
      slack closes, or the gap did not fall by 10% in :data:`SWITCH_CHECK` alternations, it comes
      back (through the mixing above) and is not switched off again: at most one switch per
      node, so a wrong one costs alternations, never the optimum;
    * **Anderson acceleration** of the map ``alpha -> alpha*(U(alpha))`` on the live nodes
      (:data:`ANDERSON_MEMORY` steps), restarted when the objective did not improve or the
      switched-off set changed.

    Alternations to gap 1e-6 (``bench_methods.py --n 300 --d 10 shared_norm`` rows,
    ``make_nhsvm_balanced(1000, 50)``, cellcycle_FUN single-path, lam = 1): DAG 62 -> 12-16,
    tree 46 -> 11, CSR 52 -> 14-19 (the range: the weight steps' random orders), balanced tree
    1427 -> 45-54 (31 -> 8 s), FUN 1406 -> 448 (217 -> 42 s).

    Certificate (jointly, for (14)): the objective at ``(U, alpha*(U))`` is
    ``lam min(20) + hinge(U)``; the lower bound is the dual of (14) (``formulations/nhsvm.md``)
    at the weight step's dual point: :meth:`SharedNormModel.dual_value`.  Stops when the
    relative gap is ``<= tol``.  The weight step's tolerance shrinks with the joint gap
    (``max(tol / 4, gap / 10)``).  ``alpha0``: the first alpha (default: the closed form for
    unit rows on trees, uniform ``1 / longest path`` on DAGs); ``max_iter``: alternations;
    ``inner_max_iter``: passes of each weight step; ``accelerate=False``: the paper's plain
    alternation (no switching off, no extrapolation).

    Wide hierarchies cost what the data use: leaves no sample holds that are interchangeable
    (same parents, same loss from every held leaf) are solved as one leaf of that multiplicity
    (:meth:`~hiercvx.models.nhsvm.SharedNormModel.collapsed`), and the solution and dual point
    are lifted and certified on the full model (objective (14) and its dual recomputed there).
    On a 5000-leaf star with the samples on a few leaves the alternation runs on a handful of
    nodes.

    Returns a :class:`~hiercvx.result.Solution`: ``weights`` ``U`` ``(M, d)`` (with
    ``fit_intercept``, without the bias column; the node biases in ``extras["intercept"]``);
    extras ``alpha`` (optimal for ``U``), ``n_inner`` (weight-step passes in total) and, when
    leaves were collapsed, ``n_collapsed`` (nodes removed);
    ``history`` per alternation: ``objective``, ``lower_bound``, ``gap``, ``inner_gap``, ``time``,
    ``switched_off`` (nodes held at ``alpha = 0`` in its weight step).
    """
    if not isinstance(model, SharedNormModel):
        raise InputError("model must be a SharedNormModel from hiercvx.models.nhsvm.prepare_shared"
                         f"(X, y, H, loss=...), got {type(model).__name__}")
    lam = check_positive(lam, "lam")
    check_iteration_options(tol, max_iter, who="shared_norm.solve")
    check_iteration_options(None, inner_max_iter, who="shared_norm.solve (inner_max_iter)")
    alpha = None if alpha0 is None else _first_alpha(model, alpha0)
    t0 = time.perf_counter()
    collapse = model.collapsed()
    work = model if collapse is None else collapse.model
    if alpha is None:
        alpha = _first_alpha(work, None)
    elif collapse is not None:  # a group's leaves share one path constraint: keep the first's
        alpha = alpha[collapse.kept]
    with blas_threads(1):
        out, dual_point = _alternate(work, float(lam), float(tol), int(max_iter),
                                     int(inner_max_iter), alpha, cache_size, time_limit,
                                     random_state, verbose, t0, bool(accelerate))
        if collapse is not None:
            out = _lift(collapse, out, dual_point, float(lam), float(tol))
    out.warn_unless_converged("alternations", stacklevel=2)
    return nhsvm_fw.split_intercept(model, out)


def _lift(collapse: CollapsedLeaves, out: Solution, dual_point, lam: float,
          tol: float) -> Solution:
    """The collapsed model's solution as the full model's, certified on the full model: the
    objective (14) recomputed at the lifted ``(U, alpha)`` and the dual of (14) at the lifted
    dual point (:meth:`~hiercvx.models.nhsvm.CollapsedLeaves.lift_dual`)."""
    full = collapse.full
    U, alpha = collapse.lift_weights(out.weights), collapse.lift_nodes(out.extras["alpha"])
    ub = full.augmented_objective(U, lam, alpha)
    lb = -np.inf if dual_point is None else full.dual_value(collapse.lift_dual(dual_point[0]),
                                                           dual_point[1], lam)
    out.weights, out.objective, out.lower_bound = U, float(ub), float(lb)
    out.converged = bool(out.converged and reached(relative_gap(ub, lb), tol))
    out.extras.update(alpha=alpha, n_collapsed=collapse.n_removed)
    return out


def _alternate(model, lam, tol, max_iter, inner_max_iter, alpha, cache_size, time_limit,
               random_state, verbose, t0, accelerate) -> tuple[Solution, tuple | None]:
    """The alternation loop of :func:`solve` (options checked there); returns the solution and
    the dual point ``(G, l)`` of its lower bound.  A node of multiplicity ``k`` scores
    ``U_n . x / sqrt(k)`` (:class:`~hiercvx.models.nhsvm.SharedNormModel`), so the weight
    step's node factors are ``sqrt(alpha_n / k_n)``."""
    scale = model.node_scale
    view = nhsvm_fw.vertex_model(model, sqrt_alpha=np.sqrt(alpha) * scale)
    state = None
    history: dict = {}
    best_ub, best_lb = (np.inf, None, None), -np.inf
    dual_point = None
    inner_tol = max(tol, 1e-3)
    start = alpha.copy()
    n_inner = 0
    converged = False
    off = np.zeros(len(alpha), dtype=bool)
    revived = np.zeros(len(alpha), dtype=bool)
    checked_gap = np.inf
    accel = _Anderson(ANDERSON_MEMORY if accelerate else 0, model.A)
    switch_below = SWITCH_OFF_ALPHA if accelerate else 0.0
    bar = tqdm(total=max_iter, desc="shared-norm SVM (alternating)", unit="step", disable=not verbose)
    try:
        for it in range(1, max_iter + 1):
            view.sqrt_alpha = np.sqrt(np.maximum(alpha, 0.0)) * scale
            res = nhsvm_fw.pairwise(view, lam, inner_tol, inner_max_iter, cache_size, 50, state,
                                    None, random_state, False, quiet=True)
            state, n_inner = res.state, n_inner + res.n_iter
            U = np.sqrt(np.maximum(alpha, 0.0))[:, None] * res.weights
            new_alpha, value = alpha_for(U, model.H)
            ub = lam * value + float(res.slacks.sum())
            lb, slack = model.dual_value_and_slack(state.G, state.l, lam)
            improved = ub < best_ub[0]
            if improved:
                best_ub = (ub, U, new_alpha)
            if lb > best_lb:
                best_lb, dual_point = lb, (state.G.copy(), state.l.copy())
            gap = relative_gap(best_ub[0], best_lb)
            for key, val in (("objective", best_ub[0]), ("lower_bound", best_lb), ("gap", gap),
                             ("inner_gap", res.gap), ("time", time.perf_counter() - t0),
                             ("switched_off", int(off.sum()))):
                history.setdefault(key, []).append(val)
            bar.update(1)
            bar.set_postfix(gap=f"{gap:.2e}")
            if reached(gap, tol):
                converged = True
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
            # nodes heading to alpha = 0 that the dual's path cover leaves slack are switched
            # off (alpha_n = 0 exactly: the alternation only creeps there); one whose slack
            # closes comes back for good, so the switching ends and the plain alternation's
            # convergence is kept
            was_off = off
            heading = (new_alpha < switch_below) & (~revived | np.isinf(slack))
            off = (off | heading) & (slack > SWITCH_OFF_SLACK)
            if it % SWITCH_CHECK == 0:  # no progress with nodes off: all of them come back
                if off.any() and gap > 0.9 * checked_gap:
                    off = np.zeros_like(off)
                checked_gap = gap
            if off.all():
                off = np.zeros_like(off)
            revived |= was_off & ~off
            if np.any(new_alpha[~off] <= 0):
                # a live node whose alpha is 0 would never come back (its weights vanish from
                # the next weight step; at U = 0 all do): mix in the starting alpha, less as
                # the gap closes
                mix = min(0.1, gap)
                alpha = np.where(off, 0.0, (1.0 - mix) * new_alpha + mix * start)
                accel.reset()
            else:
                if not improved or not np.array_equal(off, was_off):
                    accel.reset()
                alpha = accel.step(alpha, np.where(off, 0.0, new_alpha), off)
            inner_tol = max(0.25 * tol, min(inner_tol, 0.1 * gap))
    finally:
        bar.close()
    ub, U, alpha = best_ub
    return Solution(weights=U, objective=float(ub), lower_bound=float(best_lb), n_iter=it,
                    converged=converged, tol=tol, history=history,
                    solve_time=time.perf_counter() - t0, name="shared-norm SVM (alternating)",
                    solver="shared_norm.alternating",
                    extras={"alpha": alpha, "n_inner": n_inner}), dual_point
