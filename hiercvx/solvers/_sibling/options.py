"""The settings of the sibling-margin QP solvers: :class:`Options`."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace

import numpy as np

from ...exceptions import InputError
from .. import dual_qp
from ..dc import Options as DCOptions

__all__ = ["Options", "METHODS"]

#: the methods of :class:`~hiercvx.solvers.sibling_qp.SiblingQPSolver`
METHODS = ("auto", "ipm", "dual_ipm", "working_set", "alm")


@dataclass(frozen=True)
class Options:
    """Settings of the sibling-margin QP solvers (:func:`~hiercvx.solvers.sibling_qp.solve`,
    :func:`~hiercvx.solvers.sibling_qp.solve_dc`,
    :class:`~hiercvx.solvers.sibling_qp.SiblingQPSolver`) for (8) of Wang, Shen & Pan
    (JMLR 12, 2011).

    Interior points: Mehrotra's predictor-corrector (Nocedal & Wright, *Numerical
    Optimization*, 2nd ed., 2006, Algorithm 16.4) with Gondzio's centrality correctors
    (Gondzio, *Computational Optimization and Applications* 6, 1996).  Coordinate ascent: the
    augmented Lagrangian method (Bertsekas, *Constrained Optimization and Lagrange Multiplier
    Methods*, 1982) with exact block steps by pairwise updates (Platt, *Sequential Minimal
    Optimization*, Microsoft Research MSR-TR-98-14, 1998)."""

    #: ``"auto"``, ``"ipm"``, ``"dual_ipm"``, ``"working_set"`` or ``"alm"``: ``"auto"`` takes
    #: the method whose Newton system is cheapest
    #: (:class:`~hiercvx.solvers.sibling_qp.SiblingQPSolver`)
    method: str = "auto"
    #: ALM sweeps per multiplier step; the working set's first sweeps are four times this
    max_passes: int = 50
    #: pivoted Cholesky of a kernel stops at this relative residual diagonal: round-off level,
    #: so the factor is exact on its pivots and ``K - L L^T`` is negligible
    rank_rtol: float = 1e-10
    #: ``"auto"`` runs the primal IPM up to this many Newton rows ``M' (q + 1)``: one dense
    #: Cholesky of that order per step (``2000^3 / 3`` flops) stays well under a second
    max_ipm_size: int = 2000
    #: ALM penalty; ``None``: the mean squared norm of the inputs, the diagonal of the
    #: block Hessian, so both terms of the block steps have one scale
    rho: float | None = None
    #: seed of the ALM's sweep orders (randomized orders avoid cyclic stalls; ``None``: fresh
    #: entropy)
    random_state: int | None = 0
    #: ``"auto"`` takes the dense dual IPM up to this many live pairs (its ``(k, k)`` Newton
    #: matrix stays small enough to factor at every step)
    max_dual_pairs: int = 1500
    #: default iteration limits: IPM Newton steps (well above a Mehrotra path's length, tens
    #: of steps; Nocedal & Wright, section 16.6)
    ipm_max_iter: int = 100
    #: ... Newton steps of a working-set solve summed over its rounds
    working_set_max_iter: int = 300
    #: ... ALM multiplier steps
    alm_max_iter: int = 500
    #: small sibling groups share a dual Hessian block of up to this many pairs: fewer,
    #: larger dense operations for about the same flops
    group_pack: int = 128
    #: a pair left out counts as violated at a probe when its margin is this far below what
    #: the kept pairs of its sample reach (the iterate's margins are only approximate there)
    probe_margin: float = 1e-2
    #: Gondzio's correctors run after Mehrotra steps shorter than this (0: never); later
    #: steps stay Mehrotra's, so that a DC path stops where the reference's does
    correct_below: float = 0.5
    #: pairs left out within this margin of violating join a growing working set: the next
    #: restricted optimum moves towards them, so adding them saves rounds
    ws_margin: float = 0.3
    #: the first working set: pairs with ``beta > 0`` after the sweeps or with a margin within
    #: this of their sample's smallest
    ws_seed_margin: float = 0.2
    #: at most this many working-set rounds (each one interior point path)
    ws_rounds: int = 20
    #: the dual interior point's path ends after this many certificates in a row that do not
    #: lower the best gap: past its round-off floor the path only diverges (to overflow at
    #: small ``C``), so the best certificate is kept
    dual_stalled_certificates: int = 3
    #: the working set falls back to ALM above this many times ``max_dual_pairs`` pairs
    ws_size_factor: int = 4
    #: the primal IPM's Newton matrix is assembled with one product per block when it has at
    #: most this many blocks ``Mr (Mr + 1) / 2`` ...
    block_products_max: int = 10
    #: ... of at least this width (compute-bound); else from cached per-sample triangles
    block_products_min_rank: int = 32
    #: the cached triangles of the primal IPM are kept up to this many floats (96 MB)
    normal_cache: int = 12_000_000
    #: the dual repair's least-norm step is solved dense (SVD least squares) up to this many
    #: bias rows ...
    dense_repair_rows: int = 300
    #: ... and entries; above, by a sparse LU of the rows the support touches
    dense_repair_size: int = 4_000_000
    #: a DC step's biases are pinned to the least-norm ones
    #: (:meth:`~hiercvx.models.sibling.SiblingModel.least_biases`, one linear program) when
    #: one exceeds this many times ``1 +`` the largest pair margin without biases: only a
    #: flat ray of (8) lets an interior point drift that far, and there the margins lose
    #: their digits; below it the program would cost more than the step
    bias_drift: float = 10.0
    #: settings of the dual interior point (:class:`hiercvx.solvers.dual_qp.Options`)
    dual_qp: dual_qp.Options = field(default_factory=dual_qp.Options)
    #: settings of the DC loop of :func:`solve_dc` (:class:`hiercvx.solvers.dc.Options`)
    dc: DCOptions = field(default_factory=DCOptions)

    def __post_init__(self):
        if self.method not in METHODS:
            raise InputError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("max_passes", "max_ipm_size", "max_dual_pairs", "ipm_max_iter",
                     "working_set_max_iter", "alm_max_iter", "group_pack", "ws_rounds",
                     "ws_size_factor", "block_products_max", "block_products_min_rank",
                     "dual_stalled_certificates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"sibling_qp Options.{name} must be an integer >= 1, "
                                 f"got {value!r}")
        for name in ("rank_rtol", "probe_margin", "correct_below", "ws_margin",
                     "ws_seed_margin", "normal_cache", "dense_repair_rows", "dense_repair_size",
                     "bias_drift"):
            value = getattr(self, name)
            if isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise InputError(f"sibling_qp Options.{name} must be a number >= 0, "
                                 f"got {value!r}")
        if self.rho is not None and not (np.isfinite(self.rho) and self.rho > 0):
            raise InputError(f"sibling_qp Options.rho must be None or a number > 0, "
                             f"got {self.rho!r}")

    @classmethod
    def of(cls, options: "Options | None" = None, **overrides) -> "Options":
        """``options`` (default: the defaults) with the keyword overrides that are given:
        how the keyword arguments of :func:`~hiercvx.solvers.sibling_qp.solve` and
        :func:`~hiercvx.solvers.sibling_qp.solve_dc` enter.  ``None`` means
        not given, except for ``random_state`` (there ``dataclasses.MISSING`` does)."""
        base = cls() if options is None else options
        if not isinstance(base, cls):
            raise InputError(f"options must be a hiercvx.solvers.sibling_qp.Options, "
                             f"got {type(options).__name__}")
        given = {k: v for k, v in overrides.items()
                 if v is not MISSING and (v is not None or k == "random_state")}
        unknown = set(given) - {f.name for f in fields(cls)}
        if unknown:
            raise InputError(f"unknown sibling_qp options {sorted(unknown)}")
        return replace(base, **given) if given else base
