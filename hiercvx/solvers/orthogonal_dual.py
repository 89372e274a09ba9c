"""Dual block-coordinate ascent for orthogonal transfer (4) and its baselines (section 5).

Zhou, Xiao, Wu, "Hierarchical Classification via Orthogonal Transfer", ICML 2011 (long
version MSR-TR-2011-54).  Every problem of the paper is the pairwise hinge of a
:class:`~hiercvx.models.orthogonal.PairModel` plus ``R(W) = max_{S in box} 1/2 tr(W^T S W)``:
for (4) the box ``{S_ii = K_ii, |S_ij| <= K_ij}`` of K (then ``R = Omega`` (5)), for the
baselines one fixed PD ``S`` (``I``, or ``I + E^T E`` for TRANSFER).  Its Lagrangian dual,
the dual of the paper's SDP lifting (``formulations/orthogonal.md``, sheet "Dual"), is

    max_{alpha in A, S in box}  D(alpha, S) = sum_p alpha_p - 1/2 tr(U(alpha)^T S^{-1} U(alpha)),

``A`` the multipliers of the margin rows (``alpha >= 0``, ``sum_{p of s} alpha_p / Delta_p <=
C Cw_s`` per slack ``s``) and ``U(alpha) = sum_p alpha_p (Lam_pos - Lam_neg)^T x_s``.  ``D`` is
jointly concave (``(U, S) -> tr(U^T S^{-1} U)`` is the matrix-fractional function) and smooth
on the box: under Corollary 2 every ``S`` of the box has ``lambda_min(S) >= lambda_min(Kbar)
> 0``.  The primal point is ``W = S^{-1} U``.

**Reduction.**  The solver first restricts the problem to what the data use
(:func:`hiercvx.models.orthogonal.reduce_model`, proofs there): weight rows on no margin row
are zero at the optimum and dropped, and each group of interchangeable negatives becomes one
row.  It solves the reduced problem and lifts ``W``, ``alpha`` and ``S`` exactly: the
certified bounds of the reduced problem are those of the full one at the lifted point.  A
chain of 1000 nodes labelled at its two leaves is a two-row problem; a 5000-leaf star with
three labelled leaves a four-row one.  Feature columns that are zero in every example are
dropped too and are 0 in ``W`` (``hiercvx.solvers._columns``: flipping the sign of such a column
of ``W`` leaves every ``<w_i, w_j>`` unchanged; ``D(alpha, S)`` is the same number): ``X``
padded with zero columns costs what ``X`` costs.

**Coordinate ascent** on ``D`` by blocks (``hiercvx.solvers._orthogonal_kernels`` for the
compiled loops, ``hiercvx.solvers._orthogonal_problem`` for the problem's pieces):

* **alpha**, one slack at a time (dual coordinate ascent as in LIBLINEAR, random order): the
  slack's block is a small QP (Hessian ``||x_s||^2 b_p^T S^{-1} b_q``, ``b_p = Lam_pos -
  Lam_neg``) over a working set -- the pairs with ``alpha_p > 0`` and the ``n_enter`` most
  violated others -- solved by :func:`~hiercvx.solvers.primitives.budget_qp`; ``W`` is
  updated in place by ``(S^{-1} c) x_s^T``.  A slack of Crammer--Singer's shape (one positive
  class, unit costs, its rows in distinct blocks of S) takes the exact step over all its
  pairs in one sort;
* **S** (orthogonal transfer only), after every pass: projected-gradient ascent on the box
  (gradient ``<w_i, w_j>`` on K's off-diagonal pattern, Armijo step), ``S^{-1}`` kept block
  by block over the components of K's pattern;
* **shrinking** (LIBLINEAR's heuristic: Hsieh et al., ICML 2008): between full passes only
  the slacks whose KKT violation at their last visit exceeded a share of the last full pass's
  largest are visited; the certificate, not the passes, decides convergence;
* **the final exact step** (``polish``): at a certificate where the support of alpha barely
  changed, conjugate gradients on the dual restricted to that support, the tight budgets held
  as equalities (projected CG, S fixed); the point, made feasible, is kept when it raises the
  certified bound.  It removes the long tail of coordinate ascent on degenerate problems.  A
  support that never holds still (a dual moving on its optimal face, e.g. ``W = 0`` optimal)
  gets the step after ``stall_passes`` passes without one, that wait doubling after each.

**A stalled gap** ends the ascent early: when the certified gap fell by less than 1% over the
last ``stall_window`` passes, it stops with a ``ConvergenceWarning`` (a problem in raw feature
units at ``C = 1`` is nearly hard-margin and moves so; the estimators' warning then carries the
scale advice of ``hiercvx.methods._scale``).

**Separable baselines** (``blocks="auto"``): with a diagonal ``S`` and weight rows that no
slack couples -- HIERMULT is one Crammer--Singer problem per internal node -- the problem is a
sum of independent small QPs, each solved by the primal-dual interior point on its explicit
pair rows (:func:`hiercvx.solvers.interior_point.solve_pair_rows`) and certified once as a
whole.  FLATMULT is Crammer--Singer's problem on the leaves; it goes to the margin engine's
solver (:mod:`hiercvx.solvers.crammer_singer`) and is certified here.  Coordinate ascent takes
over when such a certificate misses ``tol``.

**Certificate** (scheduled to cost about a quarter of the passes' work,
:class:`~hiercvx.solvers.primitives.CertificateSchedule`): ``U`` recomputed from ``alpha``,
``W = S^{-1} U``, the lower bound ``D(alpha, S)`` (valid for any feasible alpha and any PD
``S`` of the box, :func:`hiercvx.models.orthogonal.quadratic_lower_bound`) and the objective
(7) at ``W``; stop when ``stopping_gap(upper, lower, J(0)) <= tol``.  At the joint optimum
``S_ij <w_i, w_j> = K_ij |<w_i, w_j>|`` (complementarity), so the gap closes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_positive
from ..exceptions import InputError
from ..models import multiclass as mc_model
from ..models import orthogonal as otm
from ..result import Solution, check_iteration_options, reached, relative_gap, stopping_gap
from . import _orthogonal_kernels as kern
from . import crammer_singer, interior_point
from ._columns import lift_columns, restrict_columns, used_columns
from ._orthogonal_problem import BlockInverse, Problem
from .primitives import CertificateSchedule, blas_threads

logger = logging.getLogger(__name__)

__all__ = ["Options", "BlockInverse", "Problem", "solve", "weight_blocks"]


@dataclass(frozen=True)
class Options:
    """Settings of :func:`solve`.

    Attributes
    ----------
    tol : float
        Stop when ``stopping_gap(upper, lower, J(0)) <= tol``
        (:func:`hiercvx.result.stopping_gap`); 1e-4: four significant digits of the objective,
        where the predictions of a classifier have long stopped changing.
    max_iter : int
        Passes over the slacks; a ``ConvergenceWarning`` when they run out.
    n_enter : int
        Pairs entering a slack's working set per visit besides its support: a few keep the block
        QP small while a wide slack (TREELOSS, a star) still finds its violators.
    s_steps : int
        Accepted projected-gradient steps on S per pass (orthogonal transfer): S follows W at
        about the pace W moves.
    check_every : int
        Least number of passes between certificates (more when a certificate costs more than a
        quarter of a pass, :class:`~hiercvx.solvers.primitives.CertificateSchedule`).
    polish : bool
        Take the final exact step on the support of alpha (module docstring).
    blocks : str
        ``"auto"``: separable baselines by blocks, FLATMULT by the Crammer--Singer solver
        (module docstring); ``"never"``: coordinate ascent only.
    support_change : float
        The final step is tried when at most this share of the support changed between two
        certificates: the support is then (nearly) the optimum's, where the step is exact.
    support_change_min : int
        ... or at most this many pairs: a small support (a reduced wide star's) rarely holds
        still to the pair.
    max_cg : int
        Hessian products of one final step: CG on an identified support converges in a few tens
        of products on the registry's problems.
    stall_passes : int
        Passes without a final step after which it is tried whatever the support did (doubled
        after each such attempt): a degenerate dual keeps moving on its optimal face.
    full_every : int
        Shrinking: a full pass every this many passes (LIBLINEAR's shrinking, Hsieh et al., ICML
        2008), so a shrunk slack is revisited soon.
    shrink : float
        Shrinking: between full passes only slacks whose violation exceeds this share of the
        last full pass's largest are visited.
    gram_max_classes : int
        The classes' Gram matrix ``Lam S^{-1} Lam^T`` (TREELOSS under a fixed S) is formed up to
        this many classes: 3000^2 floats are 72 MB.
    small_block : int
        Blocks of S up to this size are factored by the compiled loop, larger ones by LAPACK,
        whose call overhead pays from about this size.
    block_ipm_dim : int
        Separable problems go to the block interior point when every block's Newton matrix has
        at most this many rows (a dense factorization stays cheap).
    block_ipm_entries : int
        ... and every block's features fit in this many floats (160 MB).
    inner_tol : float
        Tolerance of a slack's block QP: near round-off, so a visit finishes its block.
    stall_window : int
        The ascent stops when the certified gap fell by less than 1% over this many passes:
        the registry's slowest problems (standardized features at ``C = 1000``, thousands of
        passes) still gain more than that over a window this long, while a nearly hard-margin
        one (features in raw units at ``C = 1``) does not move in any number of passes.
    """

    tol: float = 1e-4
    max_iter: int = 20_000
    n_enter: int = 4
    s_steps: int = 2
    check_every: int = 1
    polish: bool = True
    blocks: str = "auto"
    support_change: float = 0.01
    support_change_min: int = 3
    max_cg: int = 50
    stall_passes: int = 100
    full_every: int = 5
    shrink: float = 0.2
    gram_max_classes: int = 3000
    small_block: int = 64
    block_ipm_dim: int = 2000
    block_ipm_entries: int = 20_000_000
    inner_tol: float = 1e-12
    stall_window: int = 2000

    def __post_init__(self):
        check_iteration_options(self.tol, self.max_iter, who="orthogonal_dual.Options")
        if self.blocks not in ("auto", "never"):
            raise InputError(f"blocks must be 'auto' or 'never', got {self.blocks!r}")
        for what in ("n_enter", "check_every", "max_cg", "stall_passes", "full_every", "small_block",
                     "stall_window"):
            _check_int(getattr(self, what), what, 1)
        _check_int(self.s_steps, "s_steps", 0)


def _check_int(value, what: str, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        kind = "a positive" if least == 1 else "a non-negative"
        raise InputError(f"{what} must be {kind} integer, got {value!r}")


def _options(options: Options | None, **given) -> Options:
    """``options`` (default :class:`Options`) with the keywords given explicitly (not None)."""
    if options is None:
        options = Options()
    elif not isinstance(options, Options):
        raise InputError("options must be a hiercvx.solvers.orthogonal_dual.Options, "
                         f"got {type(options).__name__}")
    given = {k: v for k, v in given.items() if v is not None}
    return dataclasses.replace(options, **given) if given else options


def solve(model: otm.PairModel, C: float = 1.0, *, K=None, tol: float | None = None,
          max_iter: int | None = None, n_enter: int | None = None, s_steps: int | None = None,
          check_every: int | None = None, polish: bool | None = None, random_state=0,
          blocks: str | None = None, verbose: bool = False, name: str | None = None,
          options: Options | None = None) -> Solution:
    """Orthogonal transfer (4) or a baseline of section 5 by dual block-coordinate ascent.

    Parameters
    ----------
    model : PairModel
        From ``hiercvx.models.orthogonal.prepare(X, y, H, method, K=..., alpha=...)``
        (:class:`~hiercvx.models.orthogonal.PairModel`).
    C : float
        The C of (4) / (12) (the paper's C/N scaling is in the model's weights).
    K : array, optional
        (4)'s matrix over ``H.nodes[1:]`` instead of ``model.K`` (validated; orthogonal only).
    tol, max_iter, n_enter, s_steps, check_every, polish, blocks : optional
        Override the fields of ``options`` of the same names (:class:`Options`).
    random_state : int
        Seed of the order in which the slacks are visited.
    verbose : bool
        Log progress at INFO level (DEBUG otherwise).
    name : str, optional
        The solution's name.
    options : Options, optional
        The solver's settings (default ``Options()``).

    Returns
    -------
    Solution
        ``weights`` ``(n_nodes, n_features)`` (rows in ``H.nodes`` order, zero outside
        ``var_nodes``; with the model's ``fit_intercept`` without the bias column, the biases
        in extras ``intercept`` ``(n_nodes,)``: the solver runs on ``model.X = [X, s]`` and
        splits ``W~ = [W, b / s]`` at the end), ``objective`` = (7) recomputed at the best
        certified ``W``, ``lower_bound`` = ``D(alpha, S)``; ``dual`` the pair multipliers (in
        ``model.data``'s pair order); extras ``dual_S`` (the S of the bound: dense ``(m, m)``
        over ``var_nodes``, so that ``quadratic_lower_bound(model, res.dual, res.dual_S)``
        recomputes it; sparse on K's pattern when ``m > 2000``), ``at_zero`` (J at ``W = 0``),
        ``K``, ``alpha`` (heuristic (6)'s alpha after any lowering), ``n_passes``, ``n_newton``
        (final-step attempts), ``n_rows_solved`` (the weight rows of the reduced problem,
        :func:`hiercvx.models.orthogonal.reduce_model`), ``route`` (``"blocks"``,
        ``"crammer_singer"`` or ``"coordinate"``); ``history``: ``n_iter`` (passes done),
        ``upper``, ``lower``, ``gap``, ``time`` per certificate (a :class:`~hiercvx.result.Solution`).
    """
    t_start = time.perf_counter()
    C = check_positive(C, "C")
    check_iteration_options(tol, max_iter, who="orthogonal_dual.solve")
    opts = _options(options, tol=tol, max_iter=max_iter, n_enter=n_enter, s_steps=s_steps,
                    check_every=check_every, polish=polish, blocks=blocks)
    K_used = _check_model(model, K)
    log = logger.info if verbose else logger.debug
    # the rows the data use, interchangeable negatives merged: solved small, lifted exactly
    K_sparse = None if K_used is None else (model.sparse_K() if K is None else sp.csr_matrix(K_used))
    reduced = otm.reduce_model(model, K_sparse if model.method == "orthogonal" else model.S)
    small = model if reduced is None else reduced.model
    columns = used_columns(small.X)
    if columns is not None:
        small = restrict_columns(small, columns, also=("X_slacks",))
    with blas_threads(1):
        prob = Problem(small, C, small.sparse_K() if reduced is not None else K_sparse,
                       gram_max_classes=opts.gram_max_classes, small_block=opts.small_block)
        out, route = _shortcut(prob, opts, log, t_start)
        if out is None or not out[5]:
            route = "coordinate"
            out = _Ascent(prob, opts, random_state, log, t_start).run()
    W, upper, lower, alpha, n_pass, converged, hist, at_zero, n_newton = out
    if columns is not None:  # the dropped columns are zero
        W = lift_columns(W, columns, model.X.shape[1])
    W, alpha, S_out = _lifted(model, prob, reduced, K_sparse, W, alpha)
    weights, intercept = model.split_weights(model.full_weights(W))
    res = Solution(weights=weights, objective=float(upper), lower_bound=float(lower),
                   solver="orthogonal_dual", n_iter=n_pass, converged=converged, tol=float(opts.tol),
                   dual=alpha, history={k: np.asarray(v, dtype=float) for k, v in hist.items()},
                   solve_time=time.perf_counter() - t_start,
                   name=name or f"dual coordinate ascent for {model.method}",
                   extras={"at_zero": float(at_zero), "dual_S": S_out, "K": K_used,
                           "alpha": model.K_alpha if (model.method == "orthogonal" and K is None) else None,
                           "n_passes": n_pass, "n_newton": n_newton, "model": model,
                           "n_rows_solved": prob.m, "route": route,
                           **({"intercept": intercept} if model.fit_intercept else {})})
    res.warn_unless_converged("passes", stacklevel=2)
    log("%s", res)
    return res


def _lifted(model: otm.PairModel, prob: Problem, reduced, K_sparse, W, alpha):
    """``(W, alpha, S)`` of the full model: the reduced problem's weights and pair multipliers
    lifted back (when the model was reduced) and the S of the dual bound, dense when it is
    small enough to hand back as an array."""
    S_out = prob.S if prob.K is not None else prob.S_fixed
    if reduced is not None:
        W, alpha = reduced.lift_weights(W), reduced.lift_dual(alpha)
        S_out = reduced.lift_box(S_out, K_sparse) if prob.K is not None else sp.csr_matrix(model.S)
    S_out = S_out.toarray() if len(model.var_nodes) <= 2000 else S_out
    return W, alpha, S_out


def _check_model(model, K):
    """The K that (4) uses (``None`` for a baseline); refuses a model of another kind and a K
    given to a baseline."""
    if not isinstance(model, otm.PairModel):
        raise InputError("model must be a hiercvx.models.orthogonal.PairModel (build it with "
                         f"hiercvx.models.orthogonal.prepare(X, y, H, method)), got {type(model).__name__}")
    if model.method != "orthogonal":
        if K is not None:
            raise InputError(f"K is the matrix of orthogonal transfer (4); method={model.method!r} does "
                             "not take it: drop K or prepare the model with method='orthogonal'")
        return None
    return model.K if K is None else otm.validate_K(K, model.H)


def _shortcut(prob: Problem, opts: Options, log, t_start):
    """The first route of ``blocks="auto"`` that applies (``(out, route)``), else ``(None, ...)``."""
    if opts.blocks != "auto":
        return None, "coordinate"
    out, route = None, "coordinate"
    for route, shortcut in (("blocks", _solve_blocks), ("crammer_singer", _solve_flat)):
        out = shortcut(prob, opts, log, t_start)
        if out is not None:
            break
    return out, route


# ======================================================================= separable problems
def weight_blocks(prob: Problem):
    """The weight rows of ``prob`` in blocks that no slack couples: ``(rows, slacks)`` per
    block with at least one slack, or ``None`` when the regularizer couples rows (orthogonal
    transfer, TRANSFER's ``I + E^T E``; a diagonal S, such as the merged rows of
    :func:`~hiercvx.models.orthogonal.reduce_model`, does not) or there is one block only.
    Rows of a block are connected through the pairs' coefficient rows ``Lam_pos - Lam_neg``;
    a slack's pairs share their positive class, so each slack lies in one block."""
    if prob.K is not None or (prob.S_fixed - sp.diags(prob.S_fixed.diagonal())).count_nonzero():
        return None
    R = abs(prob.Lam[prob.pair_pos] - prob.Lam[prob.pair_neg]).tocsr()     # (P, m)
    n_comp, label = connected_components(R.T @ R, directed=False)
    if n_comp < 2:
        return None
    has_pairs = np.diff(prob.pair_ptr) > 0
    first = R[prob.pair_ptr[:-1][has_pairs]]
    slack_block = np.full(prob.n_slacks, -1)
    slack_block[has_pairs] = label[first.indices[first.indptr[:-1]]]
    out = []
    for b in range(n_comp):
        slacks = np.flatnonzero(slack_block == b)
        if slacks.size:
            out.append((np.flatnonzero(label == b), slacks))
    return out


def _solve_blocks(prob: Problem, opts: Options, log, t_start):
    """Every block of :func:`weight_blocks` by the pair-rows interior point (``1/2 ||w'||^2 +
    sum budget_s xi_s``, rows ``(Lam_pos - Lam_neg) S^{-1/2}``, right-hand side 1, slack
    coefficient ``1 / Delta_p``: the model's constraints), then one certificate of the whole
    problem at the blocks' multipliers (``D(alpha, S)``) and the better of the blocks' weights
    and ``W(alpha)``.  Returns :meth:`_Ascent.run`'s tuple, or ``None`` when the problem has no
    such blocks or one is too large."""
    found = weight_blocks(prob)
    if found is None:
        return None
    X = prob.model.X_slacks
    dim = X.shape[1]
    if any(len(rows) * dim > opts.block_ipm_dim or len(slacks) * dim > opts.block_ipm_entries
           for rows, slacks in found):
        return None
    if sum(len(rows) for rows, _ in found) * dim <= opts.block_ipm_dim:
        # small enough for one Newton matrix: one interior point run instead of one per block
        # (each run has a fixed cost)
        found = [(np.concatenate([r for r, _ in found]), np.sort(np.concatenate([s for _, s in found])))]
    pair_slack = prob.model.data.pair_i
    # S = diag(s): in w' = sqrt(s) w the regularizer is 1/2 ||w'||^2 and a row's coefficients
    # are divided by sqrt(s)
    root_s = np.sqrt(prob.S_fixed.diagonal())
    R = ((prob.Lam[prob.pair_pos] - prob.Lam[prob.pair_neg]) @ sp.diags(1.0 / root_s)).tocsr()
    alpha = np.zeros(prob.n_pairs)
    W = np.zeros((prob.m, dim))
    counts = np.diff(prob.pair_ptr)
    n_steps = 0
    for rows, slacks in found:
        in_block = np.zeros(prob.n_slacks, dtype=bool)
        in_block[slacks] = True
        pairs = np.flatnonzero(in_block[pair_slack])
        F = X[slacks]
        F = F.toarray() if sp.issparse(F) else np.asarray(F, dtype=float)
        res = interior_point.solve_pair_rows(
            F, R[pairs][:, rows], np.r_[0, np.cumsum(counts[slacks])], np.ones(pairs.size),
            prob.cost[pairs], prob.budget[slacks], tol=min(1e-8, 0.01 * opts.tol))
        alpha[pairs] = res.dual
        W[rows] = res.weights / root_s[rows, None]
        n_steps += res.n_iter
    return _certify_once(prob, alpha, W, n_steps, opts.tol, t_start, log,
                         f"{len(found)} blocks by the interior point ({n_steps} Newton steps)")


def _certify_once(prob: Problem, alpha, W, n_iter, tol, t_start, log, route_text):
    """One certificate of the whole problem for a route that solved it elsewhere: the bound
    ``D(alpha, S)`` at its multipliers, the objective at the better of its weights ``W`` and
    ``W(alpha)``.  Returns :meth:`_Ascent.run`'s tuple."""
    at_zero = prob.objective(np.zeros_like(W))
    W_alpha, upper_alpha, lower = prob.certify(alpha)
    upper = prob.objective(W)
    if upper_alpha < upper:
        upper, W = upper_alpha, W_alpha
    gap = stopping_gap(upper, lower, at_zero)
    log("orthogonal_dual %s: %s, upper %.10g, lower %.10g, gap %.3e", prob.model.method,
        route_text, upper, lower, gap)
    hist = {"n_iter": [n_iter], "upper": [upper], "lower": [lower], "gap": [gap],
            "time": [time.perf_counter() - t_start]}
    return W, upper, lower, alpha, n_iter, reached(gap, tol), hist, at_zero, 0


def _flat_classes(prob: Problem):
    """The weight row of every slack's positive class when ``prob`` is Crammer--Singer's
    problem (FLATMULT: ``S = I``, one weight row per class, unit costs, every slack paired
    with every other row), else ``None``."""
    if prob.K is not None or (prob.S_fixed - sp.identity(prob.m)).count_nonzero():
        return None
    used = np.unique(np.r_[prob.pair_pos, prob.pair_neg])
    if not (np.all(np.diff(prob.cls_ptr)[used] == 1) and np.all(prob.cls_val == 1.0)
            and np.all(prob.cost == 1.0)
            and np.all(np.diff(prob.pair_ptr) == prob.m - 1)):
        return None
    row = np.full(len(prob.cls_ptr) - 1, -1)
    row[used] = prob.cls_node[prob.cls_ptr[used]]  # class -> its one weight row
    pos, neg = row[prob.pair_pos], row[prob.pair_neg]
    first = prob.pair_ptr[:-1]
    y = pos[first]
    if np.any(pos != y[prob.model.data.pair_i]) or np.any(neg == pos):
        return None
    return y, neg


def _solve_flat(prob: Problem, opts: Options, log, t_start):
    """FLATMULT by the margin engine's Crammer--Singer solver
    (:func:`hiercvx.solvers.crammer_singer.solve`: closed-form blocks, shrinking, the face
    step), on the same features and per-example costs; certified here as a whole at its
    multipliers.  Returns :meth:`_Ascent.run`'s tuple, or ``None`` when ``prob`` is not
    Crammer--Singer's problem."""
    found = _flat_classes(prob)
    if found is None:
        return None
    y, neg = found
    X = prob.model.X_slacks
    model = mc_model.prepare(X, y, classes=np.arange(prob.m),
                             sample_weight=prob.budget / prob.C, check_input=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # certified below, as a whole
        res = crammer_singer.solve(model, prob.C, tol=0.1 * opts.tol)
    d = model.data
    A = np.zeros((prob.n_slacks, prob.m))
    A[d.pair_i, d.pair_ybar] = res.dual
    alpha = A[prob.model.data.pair_i, neg]
    return _certify_once(prob, alpha, np.asarray(res.weights), res.n_iter, opts.tol, t_start, log,
                         f"Crammer-Singer solver ({res.n_iter} passes)")


# ======================================================================= coordinate ascent
class _Ascent:
    """The coordinate-ascent loop on one :class:`Problem`: passes (:func:`kern.sweep`),
    shrinking, S steps, certificates and the final exact step (module docstring)."""

    def __init__(self, prob: Problem, opts: Options, random_state, log, t_start):
        self.prob, self.opts, self.log, self.t_start = prob, opts, log, t_start
        m, q = prob.m, prob.Lam.shape[0]
        rows = prob.rows
        d = rows.X.shape[1] if rows.mode == 0 else prob.model.X_slacks.shape[1]
        self.W = np.zeros((m, d))
        self.alpha = np.zeros(prob.n_pairs)
        self.used = np.zeros(prob.n_slacks)
        self.slack_viol = np.zeros(prob.n_slacks)
        self.width = int(np.diff(prob.pair_ptr).max(initial=0))
        wide = max(self.width, 1)
        self.scratch = kern.Scratch(np.zeros(q), np.zeros(q, np.int64), np.zeros(m), np.zeros(m, np.int64),
                                    np.zeros(m), np.zeros(m, np.int64), np.zeros(m, np.int64),
                                    np.zeros(wide), np.zeros(wide))
        self.kmax, self.wk = 0, None
        self.settings = kern.StepSettings(int(opts.n_enter), 0.0, float(opts.inner_tol))
        self.rng = np.random.default_rng(random_state)
        self.at_zero = prob.objective(self.W)
        self.upper, self.lower, self.best = self.at_zero, 0.0, self.W
        # n_iter: the pass of every certificate (the stall rule's window, the warning's rate)
        self.hist = {k: [] for k in ("n_iter", "upper", "lower", "gap", "time")}
        self.eta = None
        self.n_pass = 0
        self.schedule = CertificateSchedule(opts.check_every, prob.certificate_work())
        self.last_support, self.next_polish, self.backoff = None, 0, 1
        self.n_newton, self.last_newton = 0, 0
        self.stall_wait = opts.stall_passes
        self.active = np.ones(prob.n_slacks, dtype=bool)
        self.next_full, self.shrink_at = 0, 0.0

    def run(self):
        """``(W, upper, lower, alpha, n_pass, converged, history, J(0), n_newton)``."""
        converged = False
        max_iter = int(self.opts.max_iter)
        while True:
            if self.schedule.due() or self.n_pass >= max_iter:
                if self._certificate():
                    converged = True
                    break
                if self._stalled():
                    break
            if self.n_pass >= max_iter:
                break
            self.n_pass += 1
            self._pass()
        W = self.W
        if converged and self.n_pass > 0 and not np.any(self.best) and np.any(W):
            upper_last = self.prob.objective(W)
            if reached(relative_gap(upper_last, self.lower), self.opts.tol):
                self.upper, self.best = upper_last, W.copy()
        return (self.best, self.upper, self.lower, self.alpha, self.n_pass, converged, self.hist,
                self.at_zero, self.n_newton)

    def _certificate(self) -> bool:
        """Certify at the current alpha (and try the final step); True when the gap is reached."""
        prob, opts = self.prob, self.opts
        self.schedule.certified()
        Wc, up, low = prob.certify(self.alpha)
        self.W = Wc  # resync: no drift of the incremental updates
        if up < self.upper:
            self.upper, self.best = up, Wc.copy()  # W is updated in place by the passes
        support = self.alpha > 0
        stalled = self.n_pass - self.last_newton >= self.stall_wait
        if (opts.polish and self.n_pass > 0 and self.n_pass >= self.next_polish
                and self.last_support is not None
                and not reached(stopping_gap(self.upper, max(self.lower, low), self.at_zero), opts.tol)
                and (np.count_nonzero(support != self.last_support)
                     <= max(opts.support_change * support.sum(), opts.support_change_min) or stalled)):
            low, support = self._polish(low, support, stalled)
        self.last_support = support
        self.lower = max(self.lower, low)
        gap = stopping_gap(self.upper, self.lower, self.at_zero)
        for key, val in (("n_iter", self.n_pass), ("upper", self.upper), ("lower", self.lower),
                         ("gap", gap), ("time", time.perf_counter() - self.t_start)):
            self.hist[key].append(val)
        self.log("orthogonal_dual %s: pass %d, upper %.10g, lower %.10g, gap %.3e",
                 prob.model.method, self.n_pass, self.upper, self.lower, gap)
        return reached(gap, opts.tol)

    def _stalled(self) -> bool:
        """Whether the gap fell by less than 1% since the last certificate at least
        ``stall_window`` passes back."""
        back = self.n_pass - self.opts.stall_window
        if back < 0:
            return False
        checked_at = self.hist["n_iter"]
        then = int(np.searchsorted(checked_at, back, side="right")) - 1
        gaps = self.hist["gap"]
        if gaps[-1] < 0.99 * gaps[then]:
            return False
        self.log("orthogonal_dual %s: pass %d, the gap fell by less than 1%% over %d passes; "
                 "stopping", self.prob.model.method, self.n_pass, self.n_pass - checked_at[then])
        return True

    def _polish(self, low, support, stalled):
        """The final exact step; keeps a candidate that raises the bound.  ``(low, support)``."""
        prob = self.prob
        if stalled:  # the stalled attempts thin out
            self.stall_wait *= 2
        candidates, work = prob.newton_candidates(self.alpha, self.opts.max_cg)
        self.n_newton += 1
        self.last_newton = self.n_pass
        improved = False
        for cand in candidates:
            Wn, up_n, low_n = prob.certify(cand)
            if up_n < self.upper:
                self.upper, self.best = up_n, Wn.copy()
            if low_n > low:
                self.alpha[:] = cand
                self.W, low, improved = Wn, low_n, True
        self.schedule.pass_work += work
        if improved:
            self.used[:] = np.bincount(prob.model.data.pair_i, weights=self.alpha * prob.cost,
                                       minlength=prob.n_slacks)
            support = self.alpha > 0
            self.backoff = 1
        else:
            self.backoff *= 2
        self.next_polish = self.n_pass + self.backoff
        return low, support

    def _working_set(self) -> kern.WorkingSet:
        """Work arrays large enough for the widest working set of this pass."""
        prob = self.prob
        sup = np.bincount(prob.model.data.pair_i[self.alpha > 0], minlength=prob.n_slacks)
        k_need = int(sup.max(initial=0)) + self.settings.n_enter
        if k_need > self.kmax:
            kmax = self.kmax = max(k_need, 2 * self.kmax)
            wide = max(kmax, self.width)  # a Crammer-Singer-shaped slack steps on all its pairs
            self.wk = kern.WorkingSet(np.zeros(wide, np.int64), np.zeros((kmax, kmax)), np.zeros(kmax),
                                      np.zeros(wide), np.zeros(kmax))
        return self.wk

    def _pass(self) -> None:
        """One pass over the active slacks, shrinking, then the S steps."""
        prob, opts = self.prob, self.opts
        wk = self._working_set()
        full = self.active.all() or self.n_pass >= self.next_full
        if full:
            self.active[:] = True
            self.next_full = self.n_pass + opts.full_every
        order = self.rng.permutation(np.flatnonzero(self.active)).astype(np.int64)
        state = kern.DualState(self.W, self.alpha, self.used, self.slack_viol)
        viol, work = kern.sweep(order, prob.rows, prob.pairs, prob.classes, prob.blocks.records(), state,
                                self.scratch, wk, self.settings)
        self.schedule.passed(work)
        # shrinking: until the next full pass, skip the slacks whose violation is small
        # against the pass's largest (the certificate, not the passes, decides convergence)
        if full:
            self.shrink_at = opts.shrink * viol
        self.active &= self.slack_viol > self.shrink_at
        if not self.active.any():
            self.next_full = self.n_pass
        if prob.K is not None and opts.s_steps > 0:
            if self.eta is None:
                norms = np.einsum("ij,ij->i", self.W, self.W)
                self.eta = 1.0 / max(float(norms.max(initial=0.0)), 1e-12)
            self.W, self.eta, s_work = prob.s_steps(self.W, self.eta, opts.s_steps)
            self.schedule.pass_work += s_work
