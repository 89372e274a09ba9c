"""The margin family's interior point with matrix-free Newton systems (conjugate gradients).

:mod:`.interior_point` solves every Newton system of Mehrotra's predictor-corrector by a dense
Cholesky factorization of ``H = I + sum_i T_i (x) F_i F_i^T`` in the ``r d`` primal weights.
On label sets over a FunCat tree (``r`` about 500 nodes, ``d`` about 80 features) that matrix
has ``(r d)^2 = 1.5e9`` entries.  This module solves the same systems without forming it:

* the primal is written with explicit pair rows (:class:`.interior_point.PairRows`): for the
  margin model (Cai thesis (4.10)) the row of pair ``(i, y, ybar)`` is ``Lam_y - Lam_ybar``
  over the nodes (sparse: two paths of the hierarchy) and the weights are the node weights
  ``W`` themselves (linear kernel), or, with another kernel, the node weights over a factor
  ``F`` of the training kernel (pivoted Cholesky, :func:`.interior_point.low_rank_factor`);
* ``H w`` is applied as matrix products: scores ``Z = F w^T`` ``(n, r)``, per example
  ``T_i Z_i`` through its pair rows and the rank-one term ``v_i (v_i . Z_i) / delta_i``, then
  ``(.)^T F`` -- about ``4 n r d`` multiply-adds;
* the systems are solved by preconditioned conjugate gradients (Hestenes & Stiefel, "Methods of
  conjugate gradients for solving linear systems", J. Res. NBS 49, 1952), inexactly, to a
  relative residual that falls with the certified gap (an inexact Newton method: Dembo,
  Eisenstat & Steihaug, "Inexact Newton methods", SIAM J. Numer. Anal. 19, 1982; for
  interior points, Gondzio, "Matrix-free interior point method", Comput. Optim. Appl. 51,
  2012, whose preconditioner is also a cheap approximation of the Newton matrix);
* the preconditioner is a block diagonal of ``H``.  The features are first rotated to their
  principal axes (an orthogonal change of the feature basis changes neither the scores nor
  ``||w||``); then ``"feature_blocks"`` keeps the ``d`` blocks ``I + sum_i F_ia^2 T_i``
  ``(r, r)`` (exact when every example has the same ``T_i``: ``sum_i F_i F_i^T`` is then
  diagonal), ``"node_blocks"`` the ``r`` blocks ``I + sum_i T_i[m, m] F_i F_i^T`` ``(d, d)``,
  ``"diagonal"`` the diagonal.  Each is factorized once per Newton step;
* a block diagonal cannot follow the pairs that become active: their ``D_p = alpha_p / s_p``
  grow without bound as the barrier parameter falls, and the preconditioned systems' condition
  number with them.  The multipliers are therefore regularized proximally (``D_p <= 1 /
  rho``, :class:`.interior_point.Options` ``dual_regularization``), which bounds it.

The iterates are certified exactly as by the dense method (the primal recomputed at the
weights, the dual at the projected multipliers): inexact directions change the path, never
the certificate.  Small systems (``r d`` at most ``Options.dense_below``) are factorized
densely.

Entry points: :func:`solve` for a :class:`~hiercvx.models.margin.MarginModel` whose data list
its pairs (the label-set engine's restricted models, :mod:`.labelset`), :func:`solve_pair_rows`
for explicit pair rows; settings in :class:`Options`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import _interior_point_kernels as _k
from . import interior_point as _ip
from ._mehrotra import DenseNewton, mehrotra
from .primitives import blas_threads, conjugate_gradients

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve", "solve_pair_rows", "margin_rows"]

PRECONDITIONERS = ("feature_blocks", "node_blocks", "diagonal")


@dataclass(frozen=True)
class Options:
    """Settings of the matrix-free interior point.  Each default with its reason.

    Attributes
    ----------
    preconditioner : str
        ``"feature_blocks"``, ``"node_blocks"``, ``"diagonal"`` or ``"auto"`` (module
        docstring).  ``"auto"`` takes the feature blocks while their ``d r^2`` entries fit
        ``max_block_entries`` (they keep the coupling of the nodes along the hierarchy's
        paths, which is strong: on label sets over a tree they divide the Newton matrix's
        condition number by 30 to 1000 where the node blocks and the diagonal leave it as it
        is), else the node blocks.  None of the three bounds the condition number as the
        barrier parameter falls: the pairs that become active get ``D_p = alpha_p / s_p``
        without bound, in directions ``R_p (x) F_i`` that a block diagonal spreads over
        whole blocks.
    max_block_entries : float
        Entries of the feature blocks kept at most (``d r^2``; 320 MB, and as much again for
        their factors: a FunCat tree's blocks fit, a GO DAG's do not).
    cg_forcing : float
        Conjugate gradients stop at a relative residual ``cg_forcing * gap`` (the iterate's
        certified relative gap) and a residual norm ``cg_forcing * (P - D) / ||w||`` (its
        absolute gap over its norm), whichever is smaller: the residual becomes the next
        iterate's stationarity residual, which moves the certified dual by about ``||w||``
        times its norm, so this keeps that move a share of the gap (an inexact Newton method
        whose forcing term falls with the gap).
    cg_rtol_max : float
        ... and at a relative residual at most this (far from the optimum a rough direction
        still reduces the gap).
    cg_rtol_min : float
        ... and at least this (round-off of the products).
    cg_max : int
        Conjugate-gradient steps per system at most (an unfinished system still gives a
        descent direction; the step is certified anyway).
    max_correctors : int
        Gondzio's centrality correctors per Newton step: each costs one more solve by
        conjugate gradients, so fewer than with a factorization at hand.
    dual_regularization : float
        ``rho`` of the proximal regularization of the multipliers in the matrix-free systems
        (:class:`.interior_point.Options`): ``D_p <= 1 / rho`` bounds the condition number
        that the block preconditioners cannot; on small label-set problems this ``rho`` takes
        as many Newton steps as none and far fewer conjugate-gradient steps, and it lets the
        RBF kernel's factor converge at all.
    dense_below : int
        Primal dimensions ``r d`` up to this are factorized densely (a factorization is
        cheaper than the conjugate gradients' products there).
    interior_point : interior_point.Options
        The iteration's settings (step fraction, start, regularization of dense solves).
    """

    preconditioner: str = "auto"
    max_block_entries: float = 4e7
    cg_forcing: float = 0.1
    cg_rtol_max: float = 0.1
    cg_rtol_min: float = 1e-10
    cg_max: int = 1000
    max_correctors: int = 1
    dual_regularization: float = 1e-4
    dense_below: int = 1500
    interior_point: _ip.Options = field(default_factory=_ip.Options)


_DEFAULT = Options()


# --------------------------------------------------------------------------------------------
# The Newton matrix, applied and preconditioned
# --------------------------------------------------------------------------------------------

class _Operator:
    """``H = I + sum_i T_i (x) F_i F_i^T`` of :class:`.interior_point.PairRows` at one
    iterate (``D``, ``c D``, ``delta`` as in :mod:`._mehrotra`), applied matrix-free."""

    def __init__(self, prob: _ip.PairRows, D, cD, delta):
        self.prob, self.D, self.delta = prob, D, delta
        self.V = prob.scatter(cD)  # v_i = R_i^T (c D)
        self.n_products = 0

    def __call__(self, w):
        prob = self.prob
        self.n_products += 1
        S = prob.scores(w)
        G = prob.scatter(self.D * prob.pair_products(S))
        G -= self.V * (np.einsum("ij,ij->i", self.V, S) / self.delta)[:, None]
        return w + prob.class_adjoint(G)

    def diagonals(self):
        """``diag(T_i)`` ``(n, r)``: ``sum_p D_p R_pj^2 - v_ij^2 / delta_i``."""
        R = self.prob.R
        G = np.empty((self.prob.n, self.prob.r))
        _k.row_scatter(self.prob.ptr, R.indptr, R.indices, R.data ** 2, self.D, G)
        return G - self.V ** 2 / self.delta[:, None]


def _cholesky(B):
    """Cholesky factor of a block that is ``I`` plus a PSD matrix; round-off shifts it."""
    shift = 0.0
    scale = float(np.max(np.abs(np.diag(B)))) if B.size else 1.0
    while True:
        try:
            return sla.cho_factor(B + shift * np.eye(B.shape[0]) if shift else B,
                                  lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            shift = 1e-12 * scale if shift == 0.0 else 100.0 * shift
            if not np.isfinite(shift) or shift > scale:
                raise


def _feature_blocks(op: _Operator):
    """The inverse of the feature-block diagonal ``I + sum_i F_ia^2 T_i`` as a function."""
    prob = op.prob
    r, d = prob.r, prob.d
    B = np.zeros((r, r, d))
    R = prob.R
    _k.feature_blocks(prob.ptr, R.indptr, R.indices, R.data, op.D, prob.c * op.D, op.delta,
                      np.ascontiguousarray(prob.F ** 2), B)
    B = np.ascontiguousarray(B.transpose(2, 0, 1))
    B[:, np.arange(r), np.arange(r)] += 1.0
    factors = [_cholesky(B[a]) for a in range(d)]

    def apply(X):
        out = np.empty_like(X)
        for a, f in enumerate(factors):
            out[:, a] = sla.cho_solve(f, X[:, a], check_finite=False)
        return out
    return apply


def _node_blocks(op: _Operator):
    """The inverse of the node-block diagonal ``I + sum_i T_i[m, m] F_i F_i^T``."""
    prob = op.prob
    d = prob.d
    Dg = op.diagonals()                                   # (n, r)
    iu, ju = np.triu_indices(d)
    packed = Dg.T @ (prob.F[:, iu] * prob.F[:, ju])       # (r, d (d + 1) / 2)
    B = np.empty((prob.r, d, d))
    B[:, iu, ju] = packed
    B[:, ju, iu] = packed
    B[:, np.arange(d), np.arange(d)] += 1.0
    try:
        inv = np.linalg.inv(B)
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(B, hermitian=True)
    return lambda X: np.einsum("mab,mb->ma", inv, X)


def _diagonal(op: _Operator):
    """The inverse of the diagonal ``1 + sum_i T_i[m, m] F_ia^2``."""
    diag = 1.0 + op.diagonals().T @ (op.prob.F ** 2)
    return lambda X: X / diag


class MatrixFreeNewton:
    """The linear solver of :func:`._mehrotra.mehrotra` by preconditioned conjugate
    gradients (module docstring); counts its work in ``stats``."""

    def __init__(self, prob: _ip.PairRows, options: Options):
        self.options = options
        name = options.preconditioner
        if name == "auto":
            name = ("feature_blocks" if prob.d * prob.r ** 2 <= options.max_block_entries
                    else "node_blocks")
        if name not in PRECONDITIONERS:
            raise InputError(f"preconditioner must be 'auto' or one of {PRECONDITIONERS}, "
                             f"got {options.preconditioner!r}")
        self.build = {"feature_blocks": _feature_blocks, "node_blocks": _node_blocks,
                      "diagonal": _diagonal}[name]
        self.preconditioner = name
        self.stats = {"systems": 0, "cg_steps": 0, "max_cg_steps": 0, "setup_time": 0.0,
                      "cg_time": 0.0, "per_system": []}

    def prepare(self, prob, D, cD, delta, accuracy):
        opts = self.options
        t0 = time.perf_counter()
        op = _Operator(prob, D, cD, delta)
        precond = self.build(op)
        self.stats["setup_time"] += time.perf_counter() - t0

        def solve(rhs):
            t = time.perf_counter()
            size = float(np.linalg.norm(rhs))
            gap, slack = accuracy
            rtol = opts.cg_forcing * min(gap, slack / size if size > 0 else 1.0)
            rtol = float(np.clip(rtol, opts.cg_rtol_min, opts.cg_rtol_max))
            x, steps = conjugate_gradients(op, rhs, precond, rtol, opts.cg_max)
            st = self.stats
            st["systems"] += 1
            st["cg_steps"] += steps
            st["max_cg_steps"] = max(st["max_cg_steps"], steps)
            st["per_system"].append(steps)
            st["cg_time"] += time.perf_counter() - t
            return x
        return op.V, solve


# --------------------------------------------------------------------------------------------
# The problems
# --------------------------------------------------------------------------------------------

def _principal_axes(F):
    """``(F U, U)``: the features rotated to the eigenvectors ``U`` of ``F^T F``."""
    _, U = np.linalg.eigh(F.T @ F)
    return np.ascontiguousarray(F @ U), U


@dataclass
class _Rows:
    """A margin model as pair rows: the problem (rotated features), the model's pairs it keeps
    (``pairs``), the rotation ``U`` and ``O`` mapping ``w U^T`` to the model's node weights
    (None: the weights come from the multipliers, another kernel)."""

    prob: _ip.PairRows
    pairs: np.ndarray
    U: np.ndarray
    O: object


def margin_rows(model: MarginModel, C: float, examples=None,
                options: Options = _DEFAULT) -> _Rows:
    """The margin model's primal (Cai thesis (4.10)) as pair rows ``Lam_y - Lam_ybar`` over
    the nodes (or over a factor of the class kernel ``Q`` when the model has no class
    attributes), on its own features (linear kernel) or a factor of its training kernel;
    examples with no budget or no pair (or outside ``examples``) left out (``alpha = 0``)."""
    data = model.data
    budget = C * data.Cw
    counts = np.diff(data.pair_ptr)
    keep = (budget > 0) & (counts > 0)
    if examples is not None:
        chosen = np.zeros(data.n_samples, dtype=bool)
        chosen[examples] = True
        keep &= chosen
    kept = np.flatnonzero(keep)
    pair_keep = keep[data.pair_i]
    F, own = _ip._features(model, options.interior_point)
    if data.Lam is not None:
        L = sp.csr_matrix(data.Lam, dtype=float)
    else:
        L = sp.csr_matrix(_ip._psd_factor(data.Q, "class kernel")[0])
    R = L[data.pair_y[pair_keep]] - L[data.pair_ybar[pair_keep]]
    R.eliminate_zeros()
    ptr = np.zeros(kept.size + 1, dtype=np.int64)
    np.cumsum(counts[keep], out=ptr[1:])
    Fr, U = _principal_axes(np.asarray(F[kept], dtype=float))
    prob = _ip.PairRows(Fr, R, ptr, data.pair_offset[pair_keep], data.pair_cost[pair_keep],
                        budget[keep], options.interior_point)
    O = sp.identity(L.shape[1], format="csr") if (model.node_weights and own) else None
    return _Rows(prob, np.flatnonzero(pair_keep), U, O)


def _iterate(prob, tol, max_iter, verbose, t_start, options: Options):
    """Mehrotra's iteration on ``prob`` with the dense or the matrix-free Newton systems;
    returns mehrotra's tuple and the linear solver (its ``stats``)."""
    ip = options.interior_point
    if prob.dim <= options.dense_below:
        linear = DenseNewton(ip)
    else:
        linear = MatrixFreeNewton(prob, options)
        ip = dataclasses.replace(ip, max_correctors=options.max_correctors,
                                 dual_regularization=options.dual_regularization)
    with blas_threads(1):
        out = mehrotra(prob, float(tol), int(max_iter), verbose, t_start, ip, linear)
    return out, linear


def _record_work(history, linear):
    stats = getattr(linear, "stats", None)
    if stats:
        history["linear"] = dict(stats, preconditioner=linear.preconditioner)
    return history


# --------------------------------------------------------------------------------------------
# The solvers
# --------------------------------------------------------------------------------------------

def solve(model, C: float = 1.0, *, tol: float = 1e-8, max_iter: int = 100,
          verbose: bool = False, examples=None, warn: bool = True,
          options: Options | None = None) -> Solution:
    """The margin model (thesis (4.10) / (4.15)) by the interior point with matrix-free Newton
    systems (module docstring).

    Parameters
    ----------
    model : MarginModel
        ``hiercvx.models.hsvm.prepare(X, Y, H, ...)`` (label sets or single labels), any
        kernel, slack or margin rescaling, sample weights, bias.
    C : float
        Positive; example i's budget is ``C * data.Cw[i]``.
    tol : float
        Certified relative duality gap to reach.
    max_iter : int
        Newton steps at most; a ``ConvergenceWarning`` when they run out (unless ``warn`` is
        False).
    verbose : bool
        Log the steps at INFO level.
    examples : array of int, optional
        Solve on these examples only (the others get ``alpha = 0``); the certificate is the
        full model's.
    warn : bool
        Whether an unconverged answer warns.
    options : Options, optional
        Settings (default ``Options()``).

    Returns
    -------
    Solution
        As :func:`.interior_point.solve`: the model's weights, ``dual`` the pair multipliers,
        ``history`` per Newton step (and ``history["linear"]``: systems solved, conjugate
        gradient steps, preconditioner and its setup time).
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...)"
                         f", got {type(model).__name__}")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="interior_point_cg.solve")
    options = _DEFAULT if options is None else options
    t_start = time.perf_counter()
    if examples is not None:
        examples = np.asarray(examples, dtype=np.int64).ravel()
        if examples.size and (examples.min() < 0 or examples.max() >= model.data.n_samples):
            raise InputError(f"examples must index the model's {model.data.n_samples} examples")
    rows = margin_rows(model, C, examples, options)
    (w, alpha, n_iter, converged, history, stopped), linear = _iterate(
        rows.prob, tol, max_iter, verbose, t_start, options)
    w = w @ rows.U.T
    res = _ip._result(model, rows, w, alpha, C, float(tol), n_iter, converged,
                      _record_work(history, linear), t_start)
    res.solver, res.name = "interior_point_cg", "margin model, matrix-free interior point"
    if warn:
        reason = None if not stopped else (
            f"with a certified relative duality gap of {res.gap:.3e} > tol={res.tol:g}: "
            f"{stopped}")
        res.warn_unless_converged("Newton steps", stacklevel=3, reason=reason)
    return res


def solve_pair_rows(F, R, ptr, b, c, C, *, tol: float = 1e-8, max_iter: int = 100,
                    verbose: bool = False, options: Options | None = None) -> Solution:
    """The primal of :class:`.interior_point.PairRows` by the matrix-free interior point (the
    signature and answer of :func:`.interior_point.solve_pair_rows`, without its limit on
    ``r d``).

    Parameters
    ----------
    F : array ``(n, d)``
        Dense features.
    R : sparse or dense ``(P, r)``
        One coefficient row per pair, pairs sorted by example.
    ptr : array ``(n + 1,)``
        The pairs of example i are ``ptr[i]:ptr[i + 1]``.
    b, c : arrays ``(P,)``
        Offsets and slack costs of the pairs.
    C : array ``(n,)``
        Budgets.
    tol, max_iter, verbose, options
        As in :func:`solve`.

    Returns
    -------
    Solution
        ``weights`` ``w`` ``(r, d)``, ``objective`` its primal, ``lower_bound`` the dual at the
        projected multipliers ``dual``; no warning.
    """
    t_start = time.perf_counter()
    options = _DEFAULT if options is None else options
    Fr, U = _principal_axes(np.asarray(F, dtype=float))
    prob = _ip.PairRows(Fr, R, ptr, b, c, C, options.interior_point)
    (w, alpha, n_iter, converged, history, _), linear = _iterate(
        prob, tol, max_iter, verbose, t_start, options)
    w_best, objective, lower, alpha = _ip.rows_certificate(prob, w, alpha)
    return Solution(weights=np.ascontiguousarray(w_best @ U.T), objective=float(objective),
                    lower_bound=float(lower), n_iter=n_iter,
                    converged=bool(reached(relative_gap(objective, lower), tol)), tol=float(tol),
                    dual=alpha, history=_record_work(history, linear),
                    solve_time=time.perf_counter() - t_start, solver="interior_point_cg.rows",
                    name="pair rows, matrix-free interior point")
