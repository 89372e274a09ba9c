"""The dual state shared by the margin-family coordinate solvers, and their certificate.

The working-set solver (:mod:`.working_set`, Cai thesis Algorithm 2) and the flat
Crammer–Singer solver (:mod:`.crammer_singer`) both ascend the dual of the margin model
(:mod:`hiercvx.models.margin`; Cai thesis (4.14)-(4.15), Crammer & Singer, JMLR 2001)::

    max_alpha  D(alpha) = sum_p b_p alpha_p - 1/2 ||w(alpha)||^2
    s.t.       alpha >= 0,   sum_{p of example i} cost_p alpha_p <= C_i,

    w(alpha) = sum_p alpha_p dPhi_p,   dPhi_p = (Lam_y - Lam_ybar) (x) x_i      thesis (4.12)

(slack rescaling: ``b_p = 1``, ``cost_p = 1 / Delta_p``; margin rescaling: ``b_p = Delta_p``,
``cost_p = 1``).  Everything is carried through the expansion coefficients ``G(alpha)``
``(n, q)``: ``G[i, y] += alpha_p``, ``G[i, ybar] -= alpha_p``, so node weights are
``W = Lam^T G^T X`` and class scores ``S = X W^T Lam^T`` (or ``K G Q`` for a Gram matrix).

:class:`MarginDualState` holds what the passes and the exact steps share:

* ``G`` and the score factor ``F`` the compiled passes read and update
  (:class:`~.score_factor.ScoreFactor`: class rows or node rows);
* the certificate (:meth:`MarginDualState.certify`): the primal (4.10) recomputed at
  ``w(alpha)``, the dual (4.14) at the feasible ``alpha``, and the violation scores
  ``psi_i = l_i - u_i`` of thesis (4.29)-(4.32), in one pass over the pairs
  (``_margin_kernels.slacks_and_psi``).  By weak duality ``D(alpha) <= P(w)`` for every
  feasible ``alpha`` and every ``w``; the solvers stop on the relative gap;
* the best primal point met off the dual path (an exact step's ``w(alpha_S)``), so that an
  exact step never makes the reported certificate worse.

Step 8b of Algorithm 2 ("optimize over all selected variables") lives beside it: the policy
that decides when to take it in :mod:`.margin_polish`, the exact step on the identified face in
:mod:`.face_step`, the step with the bounds kept on the working pairs in :mod:`.support_step`.
Their settings are :class:`Options`.

References: L. Cai, *Multilabel Classification over Category Taxonomies*, PhD thesis, Brown
University, 2008, sections 4.2-4.3; K. Crammer and Y. Singer, "On the algorithmic
implementation of multiclass kernel-based vector machines", JMLR 2, 2001.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..models import margin as _margin
from ..models.margin import MarginModel
from . import face as _face
from . import interior_point
from ._margin_kernels import ROW_FASTMATH, scatter_coefficients, slacks_and_psi
from .primitives import MODE_GRAM, RowData, row_sq_norms
from .score_factor import ScoreFactor, choose_factor

logger = logging.getLogger(__name__)

__all__ = ["MarginDualState", "Options", "ROW_FASTMATH", "ScoreFactor", "choose_factor",
           "primal_point", "scatter_coefficients", "violation_scores"]


@dataclass(frozen=True)
class Options:
    """Settings of the margin dual and of step 8b (:mod:`.margin_polish`, :mod:`.face_step`,
    :mod:`.support_step`).  Each default with its reason.

    Attributes
    ----------
    budget_rtol : float
        An example's budget counts as not exhausted (``zeta_i > 0`` in thesis (4.13)) below
        ``1 - budget_rtol`` of ``C_i``: above the rounding of a budget's sum.
    settled_change : float
        The working sets count as settled (the face identified, Algorithm 2 step 8b due) when at
        most this share of the support changed between two certificates.
    max_cg : int
        Conjugate-gradient iterations of the Newton step on faces too large to factorize
        (Nocedal & Wright, *Numerical Optimization*, 2006, ch. 5-7: a truncated Newton step).
    max_face : int
        The face step factorizes a dense matrix with a row per support pair: at most this many
        rows (``8 max_face^2`` bytes) ...
    max_face_cg : int
        ... and on linear models solves larger faces, up to this many rows, by conjugate
        gradients without forming the matrix (:mod:`.face_cg`; label sets have supports of
        tens of thousands of pairs); beyond, the Newton-CG step.
    face_rounds : int
        Rounds of face corrections per face step, a primal-dual active-set method (Hintermüller,
        Ito & Kunisch, SIAM J. Optim. 13, 2002) that ends in few rounds once the face is nearly
        right ...
    face_change : float
        ... continued while at most this share of the face changes in a round (more means the
        passes have not identified it yet) ...
    face_change_pairs : int
        ... plus this many pairs (small faces).
    face_rounds_max : int
        Rounds past ``face_rounds`` while the changes keep shrinking ...
    face_finish : float
        ... and stay under this share of the face (the last few changes).
    face_wait : float
        After exact steps that did not halve the gap, the passes get up to this many times a
        step's cost before the next one (the work lost to early steps stays a bounded share, as
        in ski rental).
    face_speedup : float
        A dense Cholesky factorization runs about this many more multiply-adds per second than
        the passes (BLAS level 3 against scattered level-1 updates); converts a step's cost into
        the passes' units.
    support_rounds : int
        Rounds of the support step (restricted solve, violated pairs join).
    support_newton : int
        Newton steps an interior point takes per solve (Mehrotra's method: 15-30 on problems of
        every size; Wright, *Primal-Dual Interior-Point Methods*, SIAM 1997).
    support_max_pairs : int
        Working pairs of the support step's pair form: each Newton step factors a dense matrix
        of that size.
    support_primal_tol : float
        The floor of the primal form's tolerance (a tenth of the solver's).
    support_primal_zero : float
        The primal form's multipliers below this share of the largest are set to 0 (an interior
        point leaves inactive pairs at ``mu / s``, not at 0).
    warm_support_credit : float
        A warm start counts as this many certificates' worth of passes towards the first support
        step (its own solve did them; bounded, so that a costly step is still paid for by the
        passes).
    factor_share, factor_sample : float or int
        :func:`~.score_factor.choose_factor`'s ``share`` and ``sample``.
    face : face.Options
        The face system's settings (:class:`.face.Options`).
    interior_point : interior_point.Options
        The primal form's interior point (:class:`.interior_point.Options`).
    """

    budget_rtol: float = 1e-10
    settled_change: float = 0.01
    max_cg: int = 30
    max_face: int = 6000
    max_face_cg: int = 200_000
    face_rounds: int = 10
    face_change: float = 0.1
    face_change_pairs: int = 25
    face_rounds_max: int = 20
    face_finish: float = 0.01
    face_wait: float = 8.0
    face_speedup: float = 50.0
    support_rounds: int = 8
    support_newton: int = 25
    support_max_pairs: int = 2500
    support_primal_tol: float = 1e-12
    support_primal_zero: float = 1e-9
    warm_support_credit: float = 100.0
    factor_share: float = 0.8
    factor_sample: int = 20000
    face: _face.Options = field(default_factory=_face.Options)
    interior_point: interior_point.Options = field(default_factory=interior_point.Options)


def primal_point(model: MarginModel, G, C: float, best_G=None):
    """``(G, weights, objective)`` of the reported primal point: ``w(G)`` (node weights over
    the model's own features, or ``G`` itself for other kernels) with its objective (4.10)
    recomputed by the model, or the exact steps' ``best_G`` when its objective is lower."""
    def evaluate(G):
        if model.node_weights:
            W = _margin.weights_from_coefficients(G, model.X, model.data.Lam)
            return W, _margin.primal_objective(W, model.X, model.data, C)
        return G, _margin.kernel_objective(G, model.K, model.data, C)

    weights, objective = evaluate(G)
    if best_G is not None:
        weights_b, objective_b = evaluate(best_G)
        if objective_b < objective:
            return best_G, weights_b, objective_b
    return G, weights, objective


def violation_scores(alpha, S, data: _margin.MarginData, C: float = 1.0,
                     budget_rtol: float = Options.budget_rtol) -> np.ndarray:
    """The score ``psi_i = l_i - u_i`` of thesis (4.32) for every example.

    ``alpha`` is a dual feasible point and ``S`` the class scores ``(n, q)`` of ``w(alpha)``.
    ``l_i = max(0, max_p H_p)`` (4.29); ``u_i`` (4.30) is the smallest ``H_p`` over the pairs
    with ``alpha_p > 0``, capped at 0 when the example's budget is not exhausted (``zeta_i > 0``),
    and 0 when all of the example's alphas are 0.  By Proposition 3 alpha is optimal iff every
    ``psi_i = 0``.  Examples with ``C_i = 0`` cannot move and get ``psi_i = 0``.
    """
    alpha = np.asarray(alpha, dtype=float)
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    cost = data.pair_cost
    H = (data.pair_offset - diff) / cost
    n = data.n_samples
    lo = np.zeros(n)
    np.maximum.at(lo, data.pair_i, H)
    up = np.full(n, np.inf)
    pos = alpha > 0
    np.minimum.at(up, data.pair_i[pos], H[pos])
    budget = C * data.Cw
    used = np.bincount(data.pair_i, weights=cost * alpha, minlength=n)
    slack = used < budget * (1.0 - budget_rtol)
    up[slack] = np.minimum(up[slack], 0.0)
    up[~np.isfinite(up)] = 0.0  # no support and a tight budget only when C_i = 0
    psi = lo - up
    psi[budget <= 0] = 0.0
    return psi


class MarginDualState:
    """Coefficients, incremental scores and the certificate at the current alpha.

    Parameters
    ----------
    model : MarginModel
        The :class:`~hiercvx.models.margin.MarginModel`.
    rows : RowData
        Its :class:`~hiercvx.solvers.primitives.RowData` (features, or the Gram matrix in
        ``MODE_GRAM``).
    C : float
        The regularization constant; example i's budget is ``C * data.Cw[i]``.
    factor : {"classes", "nodes", "auto"}
        The form of the score factor ``F`` (``"auto"``:
        :func:`~hiercvx.solvers.score_factor.choose_factor`).
    options : Options, optional
        The solver's :class:`Options` (default ``Options()``).

    Attributes
    ----------
    G : array
        The expansion coefficients of the last certified alpha.
    F : ScoreFactor
        The score factor the compiled passes read and update (resynchronised by
        :meth:`certify`: no drift).
    scores : array
        The class scores.
    W : array
        The node weights (features only).
    best_primal, best_G : float, array
        The best primal point met off the dual path.
    n_newton : int
        The exact steps accepted.
    """

    def __init__(self, model: MarginModel, rows: RowData, C: float, *,
                 factor: str = "classes", options: Options | None = None):
        self.options = opts = Options() if options is None else options
        data = model.data
        if factor == "auto":
            factor = choose_factor(data, gram=rows.mode == MODE_GRAM, share=opts.factor_share,
                                   sample=opts.factor_sample)
        self.factor = ScoreFactor(factor, data)
        self.model, self.data, self.C = model, data, C
        self.mode = rows.mode
        self.X = model.X
        self.K = rows.K if rows.mode == MODE_GRAM else None
        self.budget = np.ascontiguousarray(C * data.Cw, dtype=float)
        self.offset = np.ascontiguousarray(data.pair_offset, dtype=float)
        self.cost = np.ascontiguousarray(data.pair_cost, dtype=float)
        self.Q = np.ascontiguousarray(data.Q, dtype=float)
        self.G = np.zeros((data.n_samples, data.n_classes))
        self.kdiag = np.ascontiguousarray(row_sq_norms(rows), dtype=float)
        self.F = np.zeros((1, 1))
        self.W = None
        self.scores = None
        self.best_primal = np.inf
        self.best_G = None
        self.n_newton = 0

    def evaluate(self, G):
        """``(||w||^2, S, W)`` at the expansion coefficients ``G`` (for a Gram matrix ``W`` is
        ``K G``, the factor of both the class scores and the node scores)."""
        data = self.data
        if self.mode == MODE_GRAM:
            KG = self.K @ G
            S = KG @ self.Q
            return float(np.sum(G * S)), S, KG
        W = _margin.weights_from_coefficients(G, self.X, data.Lam)
        return float(np.sum(W * W)), _margin.class_scores(W, self.X, data.Lam), W

    def certify(self, alpha):
        """Primal (4.10) at ``w(alpha)``, dual (4.14), psi (4.32); resyncs ``F`` and the
        class scores.  Returns ``(primal, dual, psi)``."""
        data = self.data
        scatter_coefficients(alpha, data.pair_i, data.pair_y, data.pair_ybar, self.G)
        norm2, S, W = self.evaluate(self.G)
        # row_dot reads F[v, i] for a Gram matrix: class scores S^T or node scores (K G Lam)^T;
        # for features it dots F[v] with x_i: class weights Lam W = Q G^T X or node weights W
        gram = self.mode == MODE_GRAM
        if self.factor.form == "classes":
            F = S.T if gram else data.Lam @ W
        else:
            F = _margin.sparse_attributes(data.Lam).T @ W.T if gram else W
        self.F = np.ascontiguousarray(F, dtype=float)
        self.W = None if gram else W
        xi, psi = np.empty(data.n_samples), np.empty(data.n_samples)
        pairs = (data.pair_ptr, data.pair_y, data.pair_ybar, data.pair_loss, self.offset,
                 self.cost)
        slacks_and_psi(np.ascontiguousarray(S), pairs, alpha, self.budget,
                       data.rescaling == "slack", self.options.budget_rtol, xi, psi)
        primal = 0.5 * norm2 + self.C * float(data.Cw @ xi)
        dual = float(self.offset @ alpha) - 0.5 * norm2
        self.scores = S
        return primal, dual, psi

    def certificate_work(self) -> float:
        """Multiply-adds of one certificate (for :class:`~.primitives.CertificateSchedule`)."""
        data = self.data
        n, q = data.n_samples, data.n_classes
        if self.mode == MODE_GRAM:
            return float(n * n * q + 4 * data.n_pairs)
        nnz = self.X.nnz if sp.issparse(self.X) else self.X.size
        return float((2 * q + data.Lam.shape[1]) * nnz + 4 * data.n_pairs)

    def certify_candidate(self, a, primal, dual, best_alpha):
        """Certify the candidate ``a`` projected onto the dual feasible set: its primal point
        becomes ``best_primal`` if lower, and it replaces ``best_alpha`` (with its primal
        and dual) if its dual is higher.  Returns ``(best_alpha, primal, dual)``."""
        feasible = _margin.project_dual(a, self.data, self.C)
        p2, d2, _ = self.certify(feasible)
        if p2 < self.best_primal:
            self.best_primal, self.best_G = p2, self.G.copy()
        if d2 > dual:
            return feasible, p2, d2
        return best_alpha, primal, dual

    def primal_at(self, a, primal: float):
        """The primal (4.10) at ``w(a)`` for any ``a`` (feasible or not: ``w(a)`` is a primal
        point all the same) and the class scores there; kept as ``best_primal`` when below
        both it and ``primal``.  Returns ``(value, S)``."""
        data = self.data
        G = np.empty_like(self.G)
        scatter_coefficients(a, data.pair_i, data.pair_y, data.pair_ybar, G)
        norm2, S, _ = self.evaluate(G)
        value = 0.5 * norm2 + self.C * float(data.Cw @ _margin.slacks(S, data))
        if value < min(primal, self.best_primal):
            self.best_primal, self.best_G = value, G
        return value, S

    def violations(self, S):
        """``H_p`` of every pair at the class scores ``S`` (thesis (4.24)) and the slacks
        ``max(0, max_p H_p)`` of the examples."""
        data = self.data
        H = (self.offset - (S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar])) \
            / self.cost
        return H, np.maximum(_margin.segment_max(H, data.pair_ptr), 0.0)

    def tight(self, alpha, rtol: float = 1e-9):
        """The examples whose budget ``alpha`` exhausts (to ``rtol``) and the budgets used."""
        data = self.data
        used = np.bincount(data.pair_i, weights=self.cost * alpha, minlength=data.n_samples)
        return used >= self.budget * (1.0 - rtol), used
