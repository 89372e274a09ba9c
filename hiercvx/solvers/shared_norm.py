"""The shared-norm SVM (14) by alternating minimization, stopped on a certified gap.

Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479,
2016, section 7.2.  For node weights ``U`` ``(M, d)`` and sharing weights ``alpha`` ``(M,)``::

    min_{U, alpha}  lam sum_n ||U_n||^2 / alpha_n + sum_i max_l [S_il - S_{i l_i} + Delta(l_i, l)]
    s.t.            sum_{n in anc(l)} alpha_n <= 1 for every leaf l,  alpha >= 0,     S = X U^T A^T   (14)

is jointly convex.  :func:`solve` alternates the **weight step** (for fixed alpha,
``U_n = sqrt(alpha_n) V_n`` turns (14) into an NHSVM-type problem, solved by the pairwise
Frank-Wolfe of :mod:`hiercvx.solvers.nhsvm_fw`, warm-started) and the **alpha step** (20)
``min_alpha sum_n ||U_n||^2 / alpha_n`` under the same constraints (:func:`alpha_for`: the
closed form of Algorithm 1 / Appendix D on trees, :func:`~hiercvx.models.nhsvm.optimal_alpha`;
on DAGs the certified dual ascent :func:`~hiercvx.models.nhsvm.dag_alpha`, continued by the
barrier method :func:`~hiercvx.models.nhsvm.barrier_alpha`).  The certificate is for (14)
itself: the objective at ``(U, alpha*(U))`` against the dual of (14) at the weight step's dual
point (:meth:`~hiercvx.models.nhsvm.SharedNormModel.dual_value`; its path part is the cover
:func:`~hiercvx.models.nhsvm.min_path_cover`).  Settings live in the frozen ``Options``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .._validation import check_positive
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..models.nhsvm import (CollapsedLeaves, SharedNormModel, barrier_alpha, dag_alpha,
                            depth_levels, min_path_cover, node_matrix, optimal_alpha, scaled_alpha)
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import nhsvm_fw
from ._columns import lift_columns, restrict_columns, used_columns
from ._nhsvm_dual import progress
from .primitives import blas_threads

__all__ = ["Options", "solve", "optimal_alpha", "depth_levels", "min_path_cover", "alpha_for"]


@dataclass(frozen=True)
class Options:
    """Settings of :func:`solve` (its keywords ``tol``, ``max_iter``, ``inner_max_iter``,
    ``cache_size``, ``accelerate`` override the fields of the same name).

    Attributes
    ----------
    tol : certified relative gap of (14) to stop at; 1e-6, the gap the CVXPY references
        certify by default.
    max_iter : alternations (weight step + alpha step); each certifies.
    inner_max_iter : passes of each weight step; it is warm-started and its tolerance follows
        the joint gap, so it rarely needs many.
    cache_size, inner_max_steps : vertices cached per sample and pairwise steps per visit in the
        weight step (:class:`hiercvx.solvers.nhsvm_fw.Options`).
    accelerate : switch nodes off and extrapolate alpha (:func:`solve`); False is the paper's
        plain alternation.
    dag_alpha_gap : relative gap at which the DAG alpha step's dual ascent is taken as solved;
        above it the barrier method continues (a loose alpha step slows the alternation, it
        never spoils the certificate).
    anderson_memory : past alternations mixed by the Anderson acceleration of the alpha
        sequence (Walker & Ni, SIAM J. Numer. Anal. 2011, recommend a small memory).
    switch_off_alpha, switch_off_slack : a node is switched off when its alpha falls below the
        first while the dual's path cover leaves it slack above the second (relative to the
        largest need): by complementary slackness its alpha is 0 at the optimum.
    switch_check : every this many alternations the switched-off nodes come back unless the gap
        fell by 10% (a wrong switch costs alternations, never the optimum).
    stall_alternations : the alternation stops when this many weight steps in a row ran out
        of passes and the certified gap fell by less than 1% over them (a plateau of the best
        gap while the weight steps finish is normal and goes on).  A nearly hard-margin
        problem (features in raw units at ``C = 1``) stalls so: no weight step finishes, and
        its ``ConvergenceWarning`` says the gap stalled and how to rescale.
    """

    tol: float = 1e-6
    max_iter: int = 200
    inner_max_iter: int = 2000
    cache_size: int = 32
    inner_max_steps: int = 50
    accelerate: bool = True
    dag_alpha_gap: float = 1e-9
    anderson_memory: int = 3
    switch_off_alpha: float = 1e-2
    switch_off_slack: float = 1e-3
    switch_check: int = 100
    stall_alternations: int = 5


def alpha_for(U, H: Hierarchy, gap: float = 1e-9):
    """Optimal ``alpha`` for ``U`` and the value ``min (20)``: closed form on trees
    (:func:`optimal_alpha`); on DAGs the certified dual ascent
    :func:`~hiercvx.models.nhsvm.dag_alpha`, continued by the barrier method
    :func:`~hiercvx.models.nhsvm.barrier_alpha` when its relative gap stays above ``gap`` (the
    better point is kept)."""
    if H.is_tree:
        return optimal_alpha(U, H, return_value=True)
    alpha, value, reached_gap = dag_alpha(U, H)
    if reached_gap <= gap:
        return alpha, value
    polished, polished_value, _ = barrier_alpha(U, H, tol=gap)
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


def solve(model: SharedNormModel, lam: float = 1.0, *, tol: float | None = None,
          max_iter: int | None = None, verbose: bool = False, inner_max_iter: int | None = None,
          alpha0=None, cache_size: int | None = None, time_limit: float | None = None,
          accelerate: bool | None = None, random_state=0, options: Options | None = None) -> Solution:
    """The shared-norm SVM (14) by alternating minimization (module docstring).

    The plain alternation is a majorize-minimize method and converges linearly, slowest where
    the optimum puts nodes at ``alpha_n = 0`` (the shared norm is group-sparse: such a node's
    alpha shrinks by a constant factor per alternation and never reaches 0).  With
    ``options.accelerate`` two changes of the alpha sequence, neither of which touches the
    certificate:

    * **switching nodes off**: a node whose alpha fell below ``options.switch_off_alpha`` while
      the dual's path cover leaves it slack above ``options.switch_off_slack``
      (:meth:`~hiercvx.models.nhsvm.SharedNormModel.dual_value_and_slack`) gets ``alpha_n = 0``
      in the weight step; when its slack closes, or the gap did not fall by 10% in
      ``options.switch_check`` alternations, it comes back and is not switched off again;
    * **Anderson acceleration** (type II, Walker & Ni 2011) of the map ``alpha ->
      alpha*(U(alpha))`` on the live nodes, restarted when the objective did not improve or the
      switched-off set changed.

    A live node whose alpha step returns 0 would never come back (its weights drop out of the
    next weight step), so the next weight step then runs on ``(1 - m) alpha + m alpha0`` with
    ``m = min(0.1, gap)``; the objective is still valued at the exact alpha step.  The weight
    step's tolerance shrinks with the joint gap (``max(tol / 4, gap / 10)``).

    Leaves no sample holds that are interchangeable (same parents, same loss from every held
    leaf) are solved as one leaf of that multiplicity
    (:meth:`~hiercvx.models.nhsvm.SharedNormModel.collapsed`), and the solution and dual point
    are lifted and certified on the full model.

    Parameters
    ----------
    model : SharedNormModel
        From :func:`~hiercvx.models.nhsvm.prepare_shared`
        (:class:`~hiercvx.models.nhsvm.SharedNormModel`).
    lam : float
        The regularization weight of (14).
    tol, max_iter, inner_max_iter, cache_size, accelerate : optional
        Override the fields of ``options`` of the same names.
    verbose : bool
        Log progress at INFO level (DEBUG otherwise).
    alpha0 : array, optional
        The first alpha (default: the closed form for unit rows on trees, uniform
        ``1 / longest path`` on DAGs).
    time_limit : float, optional
        Seconds; stop (unconverged) after the first certificate past it.
    random_state : int
        Seed of the weight steps' visiting orders.
    options : Options, optional
        The solver's settings (default ``Options()``).

    Returns
    -------
    Solution
        ``weights`` ``U`` ``(M, d)`` (with ``fit_intercept``, without the bias column; the node
        biases in ``extras["intercept"]``); extras ``alpha`` (optimal for ``U``), ``n_inner``
        (weight-step passes in total) and, when leaves were collapsed, ``n_collapsed`` (nodes
        removed); ``history`` per alternation: ``objective``, ``lower_bound``, ``gap``,
        ``inner_gap``, ``time``, ``switched_off``.
    """
    if not isinstance(model, SharedNormModel):
        raise InputError("model must be a SharedNormModel from hiercvx.models.nhsvm.prepare_shared"
                         f"(X, y, H, loss=...), got {type(model).__name__}")
    lam = check_positive(lam, "lam")
    options = _with_keywords(options, tol=tol, max_iter=max_iter, inner_max_iter=inner_max_iter,
                             cache_size=cache_size, accelerate=accelerate)
    check_iteration_options(options.tol, options.max_iter, who="shared_norm.solve")
    check_iteration_options(None, options.inner_max_iter, who="shared_norm.solve (inner_max_iter)")
    check_iteration_options(None, options.stall_alternations,
                            who="shared_norm.solve (stall_alternations)")
    t0 = time.perf_counter()
    columns = used_columns(model.X)  # all-zero feature columns: 0 in U (hiercvx.solvers._columns)
    collapse, work, alpha = _collapsed_start(
        model if columns is None else restrict_columns(model, columns), alpha0)
    with blas_threads(1):
        out, dual_point = _Alternation(work, float(lam), options, random_state, verbose,
                                       t0).run(alpha, time_limit)
        if collapse is not None:
            out = _lift(collapse, out, dual_point, float(lam), float(options.tol))
    if columns is not None:
        out.weights = lift_columns(out.weights, columns, model.X.shape[1])
    out.warn_unless_converged("alternations", stacklevel=2)
    return nhsvm_fw.split_intercept(model, out)


def _collapsed_start(model: SharedNormModel, alpha0):
    """The model the alternation runs on (interchangeable leaves collapsed when there are any:
    ``collapse`` is None otherwise) and its first alpha."""
    alpha = None if alpha0 is None else _first_alpha(model, alpha0)
    collapse = model.collapsed()
    work = model if collapse is None else collapse.model
    if alpha is None:
        alpha = _first_alpha(work, None)
    elif collapse is not None:  # a group's leaves share one path constraint: keep the first's
        alpha = alpha[collapse.kept]
    return collapse, work, alpha


def _with_keywords(options: Options | None, **keywords) -> Options:
    """``options`` (default ``Options``) with every keyword that is not None set."""
    options = Options() if options is None else options
    if not isinstance(options, Options):
        raise InputError(f"options must be a hiercvx.solvers.shared_norm.Options, got "
                         f"{type(options).__name__}")
    return replace(options, **{k: v for k, v in keywords.items() if v is not None})


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


class _Alternation:
    """The alternation loop of :func:`solve` (options checked there) on a (possibly collapsed)
    model.  A node of multiplicity ``k`` scores ``U_n . x / sqrt(k)``
    (:class:`~hiercvx.models.nhsvm.SharedNormModel`), so the weight step's node factors are
    ``sqrt(alpha_n / k_n)``."""

    def __init__(self, model, lam: float, options: Options, random_state, verbose, t0):
        self.model, self.lam, self.options = model, lam, options
        self.random_state, self.verbose, self.t0 = random_state, verbose, t0
        self.weight_options = nhsvm_fw.Options(max_iter=options.inner_max_iter,
                                               cache_size=options.cache_size,
                                               max_steps=options.inner_max_steps)
        self.history: dict = {}
        self.unfinished = 0  # consecutive weight steps that ran out of passes

    def _stalled(self) -> bool:
        """Whether the last ``stall_alternations`` weight steps all ran out of passes and the
        gap fell by less than 1% over them."""
        window = self.options.stall_alternations
        gaps = self.history["gap"]
        return (self.unfinished >= window and len(gaps) > window
                and gaps[-1] >= 0.99 * gaps[-1 - window])

    def _record(self, **values) -> None:
        for key, val in values.items():
            self.history.setdefault(key, []).append(val)

    def run(self, alpha: np.ndarray, time_limit) -> tuple[Solution, tuple | None]:
        """Alternate from ``alpha``; returns the solution and the dual point ``(G, l)`` of its
        lower bound."""
        model, lam, o = self.model, self.lam, self.options
        scale = model.node_scale
        view = nhsvm_fw.vertex_model(model, sqrt_alpha=np.sqrt(alpha) * scale)
        state, dual_point = None, None
        best_ub, best_lb = (np.inf, None, None), -np.inf
        inner_tol, n_inner, converged = max(o.tol, 1e-3), 0, False
        switch = _Switching(len(alpha), o)
        accel = _Anderson(o.anderson_memory if o.accelerate else 0, model.A)
        start = alpha.copy()
        bar = progress(self.verbose, o.max_iter, "shared-norm SVM", unit="alternation")
        try:
            for it in range(1, o.max_iter + 1):
                view.sqrt_alpha = np.sqrt(np.maximum(alpha, 0.0)) * scale
                res = nhsvm_fw.pairwise(view, lam, replace(self.weight_options, tol=inner_tol),
                                        state, None, self.random_state, False, quiet=True)
                state, n_inner = res.state, n_inner + res.n_iter
                U = np.sqrt(np.maximum(alpha, 0.0))[:, None] * res.weights
                new_alpha, value = alpha_for(U, model.H, o.dag_alpha_gap)
                ub = lam * value + float(res.slacks.sum())
                lb, slack = model.dual_value_and_slack(state.G, state.l, lam)
                improved = ub < best_ub[0]
                if improved:
                    best_ub = (ub, U, new_alpha)
                if lb > best_lb:
                    best_lb, dual_point = lb, (state.G.copy(), state.l.copy())
                gap = relative_gap(best_ub[0], best_lb)
                self._record(objective=best_ub[0], lower_bound=best_lb, gap=gap, inner_gap=res.gap,
                             time=time.perf_counter() - self.t0, switched_off=int(switch.off.sum()))
                bar.set_postfix(gap=f"{gap:.2e}")
                bar.update(1)
                if reached(gap, o.tol):
                    converged = True
                    break
                if time_limit is not None and time.perf_counter() - self.t0 > time_limit:
                    break
                self.unfinished = 0 if res.converged else self.unfinished + 1
                if self._stalled():
                    break
                alpha = switch.next_alpha(it, new_alpha, slack, gap, improved, accel, alpha, start)
                inner_tol = max(0.25 * o.tol, min(inner_tol, 0.1 * gap))
        finally:
            bar.close()
        ub, U, alpha = best_ub
        return Solution(weights=U, objective=float(ub), lower_bound=float(best_lb), n_iter=it,
                        converged=converged, tol=o.tol, history=self.history,
                        solve_time=time.perf_counter() - self.t0,
                        name="shared-norm SVM (alternating)", solver="shared_norm.alternating",
                        extras={"alpha": alpha, "n_inner": n_inner}), dual_point


class _Switching:
    """Which nodes are held at ``alpha = 0`` in the next weight step, and the next alpha
    (:func:`solve`: switching nodes off, the mixing with ``alpha0``, Anderson's step)."""

    def __init__(self, M: int, options: Options):
        self.options = options
        self.off = np.zeros(M, dtype=bool)
        self.revived = np.zeros(M, dtype=bool)
        self.checked_gap = np.inf
        self.below = options.switch_off_alpha if options.accelerate else 0.0

    def next_alpha(self, it, new_alpha, slack, gap, improved, accel, alpha, start) -> np.ndarray:
        # nodes heading to alpha = 0 that the dual's path cover leaves slack are switched off
        # (alpha_n = 0 exactly: the alternation only creeps there); one whose slack closes
        # comes back for good, so the switching ends and the plain alternation's convergence
        # is kept
        was_off = self.off
        heading = (new_alpha < self.below) & (~self.revived | np.isinf(slack))
        off = (self.off | heading) & (slack > self.options.switch_off_slack)
        if it % self.options.switch_check == 0:  # no progress with nodes off: all come back
            if off.any() and gap > 0.9 * self.checked_gap:
                off = np.zeros_like(off)
            self.checked_gap = gap
        if off.all():
            off = np.zeros_like(off)
        self.revived |= was_off & ~off
        self.off = off
        if np.any(new_alpha[~off] <= 0):
            # a live node whose alpha is 0 would never come back (its weights vanish from the
            # next weight step; at U = 0 all do): mix in the starting alpha, less as the gap
            # closes
            mix = min(0.1, gap)
            accel.reset()
            return np.where(off, 0.0, (1.0 - mix) * new_alpha + mix * start)
        if not improved or not np.array_equal(off, was_off):
            accel.reset()
        return accel.step(alpha, np.where(off, 0.0, new_alpha), off)
