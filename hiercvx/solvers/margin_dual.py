"""The machinery of the margin-family dual coordinate solvers, written once.

The Cai–Hofmann working-set solver (:mod:`.working_set`, thesis Algorithm 2) and the flat
Crammer–Singer solver (:mod:`.crammer_singer`) both ascend the dual (4.15) of the margin
model (:mod:`hiercvx.models.margin`) and share:

* :class:`MarginDualState`: the expansion coefficients ``G(alpha)`` (thesis (4.12)), the
  incrementally updated score factor ``F`` (:class:`ScoreFactor`: class weights
  ``U = Q G^T X`` ``(q, d)`` or node weights ``W = Lam^T G^T X`` ``(M, d)`` for features, the
  transposed class or node scores ``(K G Q)^T`` / ``(K G Lam)^T`` for a Gram matrix, whichever
  form a visit touches fewer rows of (:func:`choose_factor`); the compiled passes read it with
  :func:`~.primitives.row_dot` and update it with :func:`~.primitives.row_axpy`), the
  certificate (primal (4.10) recomputed at ``w(alpha)``,
  dual (4.14)) and step 8b of Algorithm 2 ("optimize over all selected variables"): exactly,
  by an active-set method on the face the passes identified (:meth:`MarginDualState.face_step`,
  module section below), exactly with the bounds kept on the working pairs
  (:meth:`MarginDualState.support_step`, below), or approximately by a Newton-CG step on the
  union of the working sets when these are too large to factorize
  (:meth:`MarginDualState.newton_step`);
* :func:`violation_scores`: psi_i of thesis (4.32) for every example;
* :func:`scatter_coefficients`: ``G(alpha)`` without ``np.add.at``;
* :data:`ROW_FASTMATH`: the flags of the compiled passes that call the shared row kernels
  (``row_dot`` / ``row_axpy`` are inlined into the caller and compiled with its flags; without
  reassociation LLVM does not vectorize them).  The passes take the dense / CSR / Gram switch
  outside their loops over classes and call the kernels with a constant mode (a switch per
  call is not folded away: 2-3x slower passes, measured).

The face step.  Near the optimum the passes crawl (linear convergence with a rate close to 1
on nearly hard-margin problems: 20000 passes for a 1e-6 gap on ImageCLEF07A), and the primal
at ``w(alpha)`` lags far behind the dual (its error is first order in ``w - w*``, the dual's
second order), while the *face* — which pairs carry ``alpha_p > 0`` (S) and which examples
exhaust their budget (T) — is already right.  On the face the dual is an equality-constrained
QP: eliminating in each tight example the multiplier of its first support pair p0
(``alpha_p0 = (C_i - sum_{p != p0} cost_p alpha_p) / cost_p0``) leaves free variables
``lam`` with ``alpha_S = a_fix + E^T lam`` and the normal equations
``(E B E^T) lam = E (b_S - B a_fix)``, ``B = Phi_S Phi_S^T`` with
``B_pp' = K_ii' (Q_yy' - Q_yb' - Q_by' + Q_bb')`` (never the features' dimension: the matrix
has one row per support pair, a few thousand, and is factorized by Cholesky with a 1e-12
relative ridge, since the face is often degenerate; :mod:`.face` forms it and reuses the
previous round's factor when a round changed few rows).  The solution's primal point
``w(alpha_S)`` is a primal candidate even where some ``alpha_p < 0``; the face is then
corrected as in a primal-dual active-set method (pairs with ``alpha_p < 0`` leave, examples
over budget become tight, tight examples whose slack ``xi_i`` comes out negative are
released, pairs attaining a positive violation above ``xi_i`` enter) and solved again, up to
:data:`FACE_ROUNDS` times while few pairs change; a round whose ``w(alpha_S)`` is worse than
the best round's goes back to that round's face with only the larger half of its corrections
(such corrections can cycle otherwise).  Every round is certified on the full model:
the dual at the projected ``alpha`` (:func:`~hiercvx.models.margin.project_dual`), the
primal at ``w(alpha_S)``; the best of each is kept (:attr:`MarginDualState.best_primal`,
:attr:`MarginDualState.best_G`), so the step never makes the certificate worse.  Measured on
ImageCLEF07A (10000 x 81, 63 classes, C = 1; benchmarks/bench_engine.py --imageclef-only):
Crammer–Singer from the point of 5000 passes (gap 2.4e-4) three rounds of 2 s reach a gap of
4e-11, and ``MulticlassSVC()`` converges in 2970 passes and one face step (14 s, gap 1e-12;
before: 10000 passes, gap 2.6e-5); the hierarchical SVM from a gap of 2e-3 (5140 passes) in
ten rounds of about 1 s (gap 6e-8; before: 10000 passes, gap 3.9e-4).  Far from the optimum
(gaps above ~3e-3 there) the corrections do not settle: such steps are abandoned after one
round and the passes continue (:data:`FACE_WAIT`).

The support step.  On a degenerate face (more support pairs than primal dimensions: noisy
labels, multi-label sets, a bias column) the face's maximizers form an affine set and the one
nearest to ``alpha`` has many ``alpha_p < 0``: the corrections never settle (the multi-label
registry case with node biases, n = 120: 110 of 253 pairs left in every round, and Algorithm 2
stopped at 10000 passes with gap 9.3e-7 > tol 1e-8).  The support step solves the dual
restricted to the working pairs -- the support and the pairs at their example's largest
violation -- with ``alpha >= 0`` and the budgets kept as inequalities, to the end, by the
budgeted dual QP interior point shared with the sibling-margin solver
(:func:`~.dual_qp.solve_dual_qp`, one dense factorization of the pairs' Gram matrix per
Newton step); pairs violated at its answer join and it is solved again.  When no pair is left
violated the restricted optimum is the optimum.  It needs no settled support, only that the
passes since the last step paid for it (:meth:`MarginDualState.support_work`; after a step
that did not halve the gap, up to :data:`FACE_WAIT` times longer), and at most
:data:`SUPPORT_MAX_PAIRS` working pairs: its Newton steps factor a dense matrix of that size
each, where a face round factors one (on ImageCLEF07A's 5500 support pairs three support
rounds took 99 s; the face steps finish there).  That case now converges in
280 passes (0.1 s); on ``benchmarks/bench_engine.py``'s class signal 0.5 (n = 1000) the
working-set solver converges in 1543 passes (4.7 s) where it stopped unconverged at 10000
(9.6 s, relative objective 3.5e-6).

The same restricted problem has a second form, in the primal space: the interior point of
:mod:`.interior_point` on the examples with support or a violated pair (all their pairs: its
Newton step factors a matrix of the primal dimension, classes x features, whatever the number
of pairs), the examples violated at its answer joining for the next round.  The step takes
whichever form's Newton step is cheaper (:meth:`MarginDualState.support_form`); with random
labels the support outgrows the pair form's room while the primal stays small.  Measured
(``bench_methods.py --n 1000 --d 20 hsvm``, the working-set solver alone): random labels on
the tree 10000 passes (12.5 s, gap 4.2e-5, not converged) -> 0.10 s, converged; on the partial
labels 13.9 s, not converged -> 0.19 s; the sparse random row 13.3 s -> 0.14 s.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import reached, relative_gap
from . import interior_point
from .dual_qp import BlockDiagonal, solve_dual_qp
from .face import FaceRows, FaceSolver, face_rows
from .primitives import MODE_GRAM, RowData, row_sq_norms

logger = logging.getLogger(__name__)

__all__ = ["BUDGET_RTOL", "FACE_CHANGE", "FACE_FINISH", "FACE_ROUNDS", "FACE_ROUNDS_MAX",
           "FACE_SPEEDUP", "FACE_WAIT", "MAX_CG", "MAX_FACE", "NODE_FACTOR_SHARE", "ROW_FASTMATH",
           "SUPPORT_CHANGE", "SUPPORT_MAX_PAIRS", "SUPPORT_PRIMAL_TOL",
           "WARM_SUPPORT_CREDIT",
           "MarginDualState", "ScoreFactor", "choose_factor", "primal_point",
           "scatter_coefficients", "violation_scores"]

#: An example's budget counts as slack (zeta_i > 0 in thesis (4.13)) above this relative margin.
BUDGET_RTOL = 1e-10
#: Newton step (8b): at most MAX_CG conjugate-gradient iterations, tried when at most
#: SUPPORT_CHANGE of the support changed between two certificates.
MAX_CG = 30
SUPPORT_CHANGE = 0.01
#: row_dot / row_axpy are inlined into their caller and compiled with the caller's flags: the
#: reassociation that lets LLVM vectorize them must be set on the caller too
ROW_FASTMATH = {"reassoc", "contract", "nsz"}
#: the face step factorizes a dense matrix with one row per support pair: at most MAX_FACE rows
#: (and as many support examples; 8 MAX_FACE^2 bytes each), else the Newton-CG step is used
MAX_FACE = 6000
#: rounds of face corrections per face step, continued while at most FACE_CHANGE of the face
#: changes in a round (more means the face was not identified yet: back to the passes)
FACE_ROUNDS = 10
FACE_CHANGE = 0.1
#: ... and on, up to FACE_ROUNDS_MAX, while the changes keep shrinking and stay under
#: FACE_FINISH of the face (ImageCLEF07A's hierarchical SVM: the tenth round changed 6 of 5400
#: pairs and left a gap of 1.004e-6 for tol 1e-6, which a hundred more passes then closed in 3 s)
FACE_ROUNDS_MAX = 20
FACE_FINISH = 0.01
#: after face steps that failed, the passes get up to FACE_WAIT times a face step's cost
FACE_WAIT = 8.0
#: ... plus this many pairs (small problems)
_FACE_CHANGE_PAIRS = 25
#: a dense Cholesky factorization runs about this many times more multiply-adds per second than
#: the passes (measured on ImageCLEF07A: 4000 rows in 1.8 s; 10000 shrunk Crammer–Singer passes
#: of 1e10 multiply-adds in 28 s, a face round of 5400 rows in 2.3 s)
FACE_SPEEDUP = 50.0
#: the support step (:meth:`MarginDualState.support_step`): at most SUPPORT_ROUNDS interior
#: point solves per step, each counted as SUPPORT_NEWTON Newton steps of a k-square matrix
SUPPORT_ROUNDS = 8
SUPPORT_NEWTON = 25
#: ... on at most SUPPORT_MAX_PAIRS working pairs: each of its Newton steps factors a dense
#: matrix of that size (a round over 1400 pairs took 0.9 s on bench_engine's signal 0.5; over
#: 5500 on ImageCLEF07A's hierarchical SVM 33 s, where the face step's rounds, one
#: factorization each, had finished in 57 s in all: 137 s with the support step there)
SUPPORT_MAX_PAIRS = 2500
#: ... or, when that is cheaper or the working pairs are more, in the primal space by the
#: interior point (:func:`.interior_point.solve` on the examples with support or a violated
#: pair) to a relative gap of a tenth of ``tol``, but no smaller than this
SUPPORT_PRIMAL_TOL = 1e-12
#: ... and its multipliers below this fraction of the largest are set to 0 (inactive pairs)
SUPPORT_PRIMAL_ZERO = 1e-9
#: a warm start counts as this many certificates' worth of passes towards the first support
#: step (the passes its own solve did; unbounded, ImageCLEF07A's hierarchical SVM warm-started
#: from a rough Crammer-Singer point ran a primal support step of 7857 dimensions first:
#: 338 s, where the cold solve takes 37 s)
WARM_SUPPORT_CREDIT = 100.0


@njit(cache=True)
def scatter_coefficients(alpha, pair_i, pair_y, pair_ybar, G):
    """``G[i, y] += alpha_p, G[i, ybar] -= alpha_p`` (thesis (4.12)), without np.add.at."""
    G[:, :] = 0.0
    for p in range(alpha.shape[0]):
        G[pair_i[p], pair_y[p]] += alpha[p]
        G[pair_i[p], pair_ybar[p]] -= alpha[p]


# --------------------------------------------------------------------------------------------
# The score factor: over classes or over nodes
# --------------------------------------------------------------------------------------------

#: the node form is taken when its estimated row operations per visit are below this share of
#: the class form's (it reads the scores through Lam, a few more index lookups per row)
NODE_FACTOR_SHARE = 0.8
#: pairs sampled (evenly spaced) to estimate the row operations of a visit
_FACTOR_SAMPLE = 20000


class ScoreFactor:
    """The score factor ``F`` of the passes and the two sparse maps they use it through.

    Class scores of example i are ``s = P (F x_i)`` (``F[:, i]`` for a Gram matrix); a change
    ``dG_i`` of its expansion coefficients moves ``F`` by ``(B^T dG_i) x_i^T`` (``K[i]``).
    Two forms (rows of ``F``):

    * ``"classes"``: ``F = Q G^T X`` (class weights ``Lam W``), ``P = I``, ``B = Q``: a visit
      reads the scores of its pairs' classes, and writes every class row that shares a node
      below the pairs' common ancestors (21 of 63 classes on ImageCLEF07A's tree);
    * ``"nodes"``: ``F = W = Lam^T G^T X`` (node weights), ``P = B = Lam``: a visit reads the
      nodes of its pairs' classes and writes the nodes on the paths that differ (6 of 97).

    Both maps are CSR triples ``(ptr, idx, val)`` over the classes.  :func:`choose_factor`
    picks the form with fewer row operations per visit.
    """

    def __init__(self, form: str, data: _margin.MarginData):
        if form not in ("classes", "nodes"):
            raise ValueError(f"form must be 'classes' or 'nodes', got {form!r}")
        self.form = form
        q = data.n_classes
        if form == "nodes":
            Lam = _nonzero_pattern(np.asarray(data.Lam, dtype=float))
            self.read = self.move = _csr_triple(Lam)
            self.n_rows = Lam.shape[1]
        else:
            self.read = _csr_triple(sp.identity(q, format="csr"))
            self.move = _csr_triple(_nonzero_pattern(np.asarray(data.Q, dtype=float)))
            self.n_rows = q


def _csr_triple(A):
    A = sp.csr_matrix(A)
    return (np.ascontiguousarray(A.indptr, dtype=np.int64),
            np.ascontiguousarray(A.indices, dtype=np.int64),
            np.ascontiguousarray(A.data, dtype=float))


def choose_factor(data: _margin.MarginData, gram: bool = False) -> str:
    """``"nodes"`` or ``"classes"`` (:class:`ScoreFactor`): the form whose visits of one pair
    ``(y, ybar)`` take fewer row operations, averaged over evenly spaced pairs.  Classes: 2
    dot products and ``nnz(Q_y - Q_ybar)`` row updates; nodes: ``|nodes(y) u nodes(ybar)|``
    dot products and ``|nodes(y) symdiff nodes(ybar)|`` updates.  With a Gram matrix a dot
    product is a read (``F[j, i]``) and only the updates count."""
    if data.Lam is None or data.n_pairs == 0:
        return "classes"
    take = np.unique(np.linspace(0, data.n_pairs - 1, min(data.n_pairs, _FACTOR_SAMPLE))
                     .astype(np.int64))
    y, yb = data.pair_y[take], data.pair_ybar[take]
    Q = np.asarray(data.Q, dtype=float)
    class_updates = np.count_nonzero(Q[y] != Q[yb], axis=1)
    Lam = _nonzero_pattern(np.asarray(data.Lam, dtype=float))
    Ly, Lb = Lam[y], Lam[yb]
    node_updates = np.diff(_nonzero_pattern(Ly - Lb).indptr)
    node_reads = np.diff(_nonzero_pattern(abs(Ly) + abs(Lb)).indptr)
    dot = 0.0 if gram else 1.0
    classes = float(np.mean(2 * dot + class_updates))
    nodes = float(np.mean(node_reads * dot + node_updates))
    return "nodes" if nodes < NODE_FACTOR_SHARE * classes else "classes"


def _nonzero_pattern(A):
    """``A`` as CSR without stored zeros, its indices sorted."""
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    A.sort_indices()
    return A


def primal_point(model: MarginModel, G, C: float, best_G=None):
    """``(G, weights, objective)`` of the reported primal point: ``w(G)`` (node weights over
    the model's own features, or ``G`` itself for other kernels) with its objective (4.10)
    recomputed by the model, or the face step's ``best_G`` when its objective is lower."""
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


@njit(cache=True)
def _slacks_and_psi(S, pair_ptr, pair_y, pair_ybar, loss, offset, cost, alpha, budget, slack,
                    rtol, xi, psi):
    """One pass over the pairs for the certificate: the slacks ``xi_i`` of
    :func:`hiercvx.models.margin.slacks` and the scores ``psi_i`` of :func:`violation_scores`
    at the class scores ``S`` (both written to ``xi`` / ``psi``; the numpy functions index
    the P pairs several times, a third of a certificate on ImageCLEF07A)."""
    for i in range(pair_ptr.shape[0] - 1):
        x = 0.0
        lo = 0.0
        up = np.inf
        used = 0.0
        for p in range(pair_ptr[i], pair_ptr[i + 1]):
            diff = S[i, pair_y[p]] - S[i, pair_ybar[p]]
            v = loss[p] * (1.0 - diff) if slack else loss[p] - diff
            if v > x:
                x = v
            h = (offset[p] - diff) / cost[p]
            if h > lo:
                lo = h
            if alpha[p] > 0.0:
                used += cost[p] * alpha[p]
                if h < up:
                    up = h
        if used < budget[i] * (1.0 - rtol) and up > 0.0:
            up = 0.0
        if up == np.inf:
            up = 0.0
        xi[i] = x
        psi[i] = 0.0 if budget[i] <= 0.0 else lo - up


def _segment_min(values, ptr):
    """Per example the smallest of its entries (``inf`` when it has none)."""
    return -_margin.segment_max(-values, ptr)


def _largest_share(mask, size, share):
    """The ``ceil(share * count)`` entries of ``mask`` with the largest ``size``."""
    idx = np.flatnonzero(mask)
    k = int(np.ceil(share * idx.size))
    if k >= idx.size:
        return mask
    out = np.zeros_like(mask)
    out[idx[np.argsort(-size[idx], kind="stable")[:k]]] = True
    return out


def violation_scores(alpha, S, data: _margin.MarginData, C: float = 1.0) -> np.ndarray:
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
    slack = used < budget * (1.0 - BUDGET_RTOL)
    up[slack] = np.minimum(up[slack], 0.0)
    up[~np.isfinite(up)] = 0.0  # no support and a tight budget only when C_i = 0
    psi = lo - up
    psi[budget <= 0] = 0.0
    return psi


class MarginDualState:
    """Coefficients, incremental scores and the certificate at the current alpha.

    ``model`` the :class:`~hiercvx.models.margin.MarginModel`, ``rows`` its
    :class:`~.primitives.RowData` (features, or the Gram matrix in ``MODE_GRAM``), ``C``
    the regularization constant.  ``F`` is the score factor the compiled passes read and
    update (module docstring); :meth:`certify` recomputes it from scratch (no drift).
    ``warm``: the passes start from a warm start, whose own solve is credited with
    :data:`WARM_SUPPORT_CREDIT` certificates' worth of passes towards the first support step
    (which may then come at the first certificate when it is cheap: the support of a rough
    solution is usually the optimum's or close to it).
    """

    def __init__(self, model: MarginModel, rows: RowData, C: float, *, warm: bool = False,
                 factor: str = "classes"):
        data = model.data
        if factor == "auto":
            factor = choose_factor(data, gram=rows.mode == MODE_GRAM)
        #: the form of ``F`` (:class:`ScoreFactor`)
        self.factor = ScoreFactor(factor, data)
        self.model = model
        self.mode, self.data, self.C = rows.mode, data, C
        self.X = model.X
        self.K = rows.K if rows.mode == MODE_GRAM else None
        self.budget = np.ascontiguousarray(C * data.Cw, dtype=float)
        self.offset = np.ascontiguousarray(data.pair_offset, dtype=float)
        self.cost = np.ascontiguousarray(data.pair_cost, dtype=float)
        self.support = None  # support of alpha at the last checkpoint
        self.n_newton = 0
        self.pass_work = 0.0  # multiply-adds of the passes since the last Newton step
        self.work_done = 0.0  # multiply-adds of every pass (the engine's budgets)
        self.Q = np.ascontiguousarray(data.Q, dtype=float)
        self.G = np.zeros((data.n_samples, data.n_classes))
        self.kdiag = np.ascontiguousarray(row_sq_norms(rows), dtype=float)
        #: the face system and the factor its rounds reuse
        self.face_solver = FaceSolver(data, rows.mode, model.X, self.K, self.Q)
        self.F = np.zeros((1, 1))
        self.W = None
        self.scores = None
        #: the best primal point met off the dual path (a face step's ``w(alpha_S)``): its
        #: objective and expansion coefficients (None: ``w(alpha)`` is the best)
        self.best_primal = np.inf
        self.best_G = None
        self.n_face = 0  # face steps tried
        self.face_wait = 1.0  # pass work before the next face step, in units of its cost
        self.face_credit = 0.0  # pass work since the last face step
        self.face_miss = 0.0  # changes of the face in the last round / the changes allowed
        self.support_wait = 1.0  # pass work before the next support step, in units of its cost
        # pass work since the last support step: a warm start's own solve is credited with
        # WARM_SUPPORT_CREDIT certificates' worth (not more: a support step that costs
        # minutes must still be earned by the passes)
        self.support_credit = WARM_SUPPORT_CREDIT * self.certificate_work() if warm else 0.0
        self._primal_step = None  # a primal-space Newton step's cost (support step), once known
        self._work_seen = 0.0

    def _evaluate(self, G):
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
        """Primal (4.10) at ``w(alpha)``, dual (4.14), class scores; resyncs ``F``."""
        data = self.data
        scatter_coefficients(alpha, data.pair_i, data.pair_y, data.pair_ybar, self.G)
        norm2, S, W = self._evaluate(self.G)
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
        _slacks_and_psi(np.ascontiguousarray(S), data.pair_ptr, data.pair_y, data.pair_ybar,
                        data.pair_loss, self.offset, self.cost, alpha, self.budget,
                        data.rescaling == "slack", BUDGET_RTOL, xi, psi)
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

    def checkpoint(self, alpha, tol, polish):
        """Certify and do step 8b of Algorithm 2 when due: when the working sets (the support
        of alpha) barely changed since the last checkpoint, :meth:`face_step` if the face fits
        and the passes since the last one paid for it; if that did not halve the gap,
        :meth:`support_step` when the working pairs fit and the passes paid for it (settled
        or not); then :meth:`newton_step` when neither halved the gap and the support
        settled; keep what improves the certificate.  ``alpha`` is
        updated in place.  Returns (primal, dual, psi): the primal is the best met
        (:attr:`best_primal` when lower than the primal at ``w(alpha)``)."""
        primal, dual, psi = self.certify(alpha)
        support = alpha > 0
        gap = relative_gap(min(primal, self.best_primal), dual)
        settled = self.support is not None and (
            np.count_nonzero(support != self.support) <= SUPPORT_CHANGE * max(1, support.sum()))
        n_support = int(np.count_nonzero(support))
        work_new = self.pass_work - self._work_seen
        self.face_credit += work_new
        self._work_seen = self.pass_work
        halved = False
        logger.debug("checkpoint: gap %.3e, settled %s, face credit %.3g of %.3g", gap, settled,
                     self.face_credit, self.face_wait * self.face_work(n_support))
        if (polish and gap > tol and settled and self._face_fits(support)
                and self.face_credit >= self.face_wait * self.face_work(n_support)):
            # spend on face steps at most as much as on the passes since the last one (less after
            # steps that did not halve the gap: the face was not identified yet)
            self.face_credit = 0.0
            primal, dual, psi = self.face_step(alpha, tol, primal, dual)
            new_gap = relative_gap(min(primal, self.best_primal), dual)
            halved = new_gap <= 0.5 * gap
            # after a miss wait 1.5 times longer, or as many times as the changes exceeded
            # those allowed (far from identified), but at most FACE_WAIT: once the face is
            # identified, the next step comes after at most FACE_WAIT times its cost
            self.face_wait = 1.0 if halved else min(max(1.5 * self.face_wait, self.face_miss),
                                                    FACE_WAIT)
            gap = new_gap
            support = alpha > 0
        # the support step keeps the bounds (module docstring: degenerate faces, where the
        # face step's nearest maximizer leaves the feasible set in every round)
        self.support_credit += work_new
        if (polish and not halved and gap > tol and 0 < n_support
                and self.support_form(n_support) is not None
                and self.support_credit >= self.support_wait * self.support_work(n_support)):
            self.support_credit = 0.0
            primal, dual, psi = self.support_step(alpha, tol, primal, dual)
            new_gap = relative_gap(min(primal, self.best_primal), dual)
            halved = new_gap <= 0.5 * gap
            self.support_wait = 1.0 if halved else min(2.0 * self.support_wait, FACE_WAIT)
            gap = new_gap
            support = alpha > 0
        # a Newton step costs about MAX_CG + 2 certificates; spend at most as much on them as
        # on the passes since the last one (it also rescues degenerate faces, where the face
        # step's nearest maximizer leaves the feasible set)
        if (polish and not halved and gap > tol and settled
                and self.pass_work >= (MAX_CG + 2) * self.certificate_work()):
            self.pass_work = self._work_seen = 0.0
            stepped = self.newton_step(alpha, self.budget, self.offset, self.cost)
            if stepped is not None:
                keep = alpha.copy()
                alpha[:] = stepped
                p2, d2, psi2 = self.certify(alpha)
                if d2 >= dual:
                    primal, dual, psi = p2, d2, psi2
                    self.n_newton += 1
                else:  # rounding made it worse: undo
                    alpha[:] = keep
                    primal, dual, psi = self.certify(alpha)
                support = alpha > 0
        self.support = support
        return min(primal, self.best_primal), dual, psi

    # ----------------------------------------------------------------------------------------
    # The face step (module docstring)
    # ----------------------------------------------------------------------------------------

    def _face_fits(self, support) -> bool:
        """Whether the face of ``support`` is small enough to factorize (:data:`MAX_FACE`)."""
        n_support = int(np.count_nonzero(support))
        if n_support == 0 or n_support > MAX_FACE:
            return False
        return np.unique(self.data.pair_i[support]).size <= MAX_FACE

    def face_work(self, n_support: int) -> float:
        """The cost of one face round in multiply-adds of the passes: building (16 per entry)
        and factorizing the face matrix (a dense Cholesky runs :data:`FACE_SPEEDUP` times more
        of them per second), and the two evaluations on the full model."""
        m = float(n_support)
        return (m ** 3 / 3.0 + 16.0 * m * m) / FACE_SPEEDUP + 2.0 * self.certificate_work()

    def solve_face(self, support, tight, alpha):
        """The dual point that maximizes (4.14) on the face (``alpha_p = 0`` off ``support``,
        budgets of the ``tight`` examples exhausted, the others free) nearest to ``alpha`` —
        not necessarily feasible: some ``alpha_p`` may come out negative.  Returns it, or None
        when the face matrix cannot be factorized.

        On a degenerate face (more support pairs than the primal has dimensions) the maximizers
        form an affine set; the ridge pulls ``lam`` towards the current ``alpha``'s
        (``(M + eps I) lam = rhs + eps lam_0``), which picks the maximizer nearest to it, not
        the least-norm one (whose entries are negative far more often: 15 of 60 pairs on a
        small Crammer–Singer problem where the nearest one had none).  The factor of the
        previous round is reused when the face changed little (:class:`.face.FaceSolver`)."""
        data = self.data
        rows = face_rows(support, tight, data.pair_i, self.cost, self.budget)
        lam = self.face_solver.solve(rows, alpha[rows.pair])
        if lam is None:  # FaceSolver returns finite answers only
            return None
        return rows.scatter(lam, data.n_pairs)

    def _certify_candidate(self, a, primal, dual, best_alpha):
        """Certify the candidate ``a`` projected onto the dual feasible set: its primal point
        becomes :attr:`best_primal` if lower, and it replaces ``best_alpha`` (with its primal
        and dual) if its dual is higher.  Returns ``(best_alpha, primal, dual)``."""
        feasible = _margin.project_dual(a, self.data, self.C)
        p2, d2, _ = self.certify(feasible)
        if p2 < self.best_primal:
            self.best_primal, self.best_G = p2, self.G.copy()
        if d2 > dual:
            return feasible, p2, d2
        return best_alpha, primal, dual

    def face_step(self, alpha, tol, primal, dual):
        """Step 8b exactly: :meth:`solve_face` on the face of ``alpha``, corrected for up to
        :data:`FACE_ROUNDS` rounds while at most :data:`FACE_CHANGE` of it changes (counted in
        the rounds whose corrections are applied: those that improve on the best; module
        docstring), and up to :data:`FACE_ROUNDS_MAX` while the changes shrink below
        :data:`FACE_FINISH` of it.  The best dual point replaces ``alpha`` (in place), the best primal point
        goes to :attr:`best_primal` / :attr:`best_G`; both certified on the full model.
        Returns (primal at ``w(alpha)``, dual, psi) of the final ``alpha``.

        The corrections are safeguarded by the primal at the face's maximizer ``w(a)``: a round
        whose ``w(a)`` is worse than the best round's goes back to the best round's face and
        applies only the larger half of its corrections (then a quarter, ...).  Unguarded, the
        corrections can cycle -- ImageCLEF07A's hierarchical SVM from a gap of 1.4e-3: about
        200 of 5400 pairs changing in each of 10 rounds, ``w(a)`` 3999.6 -> 4024 -> 4047 ->
        4012, the dual never raised -- where the guarded rounds reach a gap of 7e-7 in seven."""
        data, C = self.data, self.C
        self.n_face += 1
        n = data.n_samples
        support = alpha > 0
        used = np.bincount(data.pair_i, weights=self.cost * alpha, minlength=n)
        tight = used >= self.budget * (1.0 - 1e-9)
        best_alpha = None
        G = np.empty_like(self.G)
        self.face_miss = 0.0
        best_round = None  # (primal at w(a), support, tight, corrections, their sizes)
        share = 1.0  # of the best round's corrections applied
        last_changes = np.inf
        for round_ in range(FACE_ROUNDS_MAX):
            a = self.solve_face(support, tight, alpha)
            if a is None:
                break
            # the primal at w(a) (a need not be feasible: w(a) is a primal point all the same)
            scatter_coefficients(a, data.pair_i, data.pair_y, data.pair_ybar, G)
            norm2, S, _ = self._evaluate(G)
            p_face = 0.5 * norm2 + C * float(data.Cw @ _margin.slacks(S, data))
            if p_face < min(primal, self.best_primal):
                self.best_primal, self.best_G = p_face, G.copy()
            best_alpha, primal, dual = self._certify_candidate(a, primal, dual, best_alpha)
            if reached(relative_gap(min(primal, self.best_primal), dual), tol):
                break
            # corrections of the face from the violations at w(a)
            H, xi = self._violations(S)
            xi_face = _segment_min(np.where(support, H, np.inf), data.pair_ptr)
            used = np.bincount(data.pair_i, weights=self.cost * a, minlength=n)
            leave = support & (a < 0)
            over = ~tight & (used > self.budget * (1.0 + 1e-9))
            release = tight & (xi_face < -1e-9)
            enter = ~support & (H > 1e-9) & (H >= xi[data.pair_i] - 1e-9)
            changes = int(leave.sum() + over.sum() + release.sum() + enter.sum())
            improved = best_round is None or p_face < best_round[0]
            if improved:
                best_round = (p_face, support, tight, (leave, over, release, enter),
                              (-a, used - self.budget, -xi_face, H - xi[data.pair_i]))
                share = 1.0
            else:
                share *= 0.5
            logger.debug("face round: primal %.10g (at w(alpha_S) %.10g) dual %.10g; %d pairs "
                         "leave, %d enter, %d examples fill, %d released, of %d pairs; next "
                         "applies %.3g of the best round's", primal, p_face, dual, leave.sum(),
                         enter.sum(), over.sum(), release.sum(), support.sum(), share)
            allowed = FACE_CHANGE * support.sum() + _FACE_CHANGE_PAIRS
            self.face_miss = changes / allowed
            # too many changes end the step only when they are to be applied: a worse round's
            # are not (the next round corrects the best round's face by half as much)
            if changes == 0 or (improved and changes > allowed):
                break
            if round_ + 1 >= FACE_ROUNDS and not (
                    changes < last_changes and changes <= FACE_FINISH * support.sum()):
                break
            last_changes = changes
            _, support, tight, corrections, sizes = best_round
            leave, over, release, enter = (_largest_share(c, z, share)
                                           for c, z in zip(corrections, sizes))
            support = (support & ~leave) | enter
            tight = (tight | over) & ~release
            tight &= np.bincount(data.pair_i, weights=support, minlength=n) > 0
            if not self._face_fits(support):
                break
        # the next step comes after many passes, on a face too far from this one's for the
        # factor to serve: its two m-square matrices are not kept through the passes
        self.face_solver.release()
        if best_alpha is not None:
            alpha[:] = best_alpha
            self.n_newton += 1
        return self.certify(alpha)

    def primal_step_cost(self) -> float:
        """Multiply-adds of one Newton step of the interior point in the primal space
        (:func:`.interior_point.step_cost`), ``inf`` when it does not apply: a primal dimension
        above :data:`.interior_point.MAX_DIMENSION` or a step above
        :data:`.interior_point.MAX_STEP_COST`.  Computed once."""
        if self._primal_step is None:
            ok = interior_point.applicable(self.model)
            self._primal_step = interior_point.step_cost(self.model) if ok else np.inf
        return self._primal_step

    def support_form(self, n_pairs: int) -> str | None:
        """Where the support step solves the restricted problem (module docstring): ``"pairs"``
        (the dual on the working pairs, a dense matrix with a row per pair: at most
        :data:`SUPPORT_MAX_PAIRS`), ``"primal"`` (the interior point in the primal space on the
        examples with support or a violated pair), whichever Newton step is cheaper; None
        when neither applies."""
        pair_cost = self._pair_step_cost(n_pairs) if n_pairs <= SUPPORT_MAX_PAIRS else np.inf
        primal_cost = self.primal_step_cost()
        if not np.isfinite(min(pair_cost, primal_cost)):
            return None
        return "pairs" if pair_cost <= primal_cost else "primal"

    @staticmethod
    def _pair_step_cost(n_pairs: int) -> float:
        m = float(n_pairs)
        return m ** 3 / 3.0 + 16.0 * m * m

    def support_work(self, n_support: int) -> float:
        """The cost of one support step, as :meth:`face_work`: about ``SUPPORT_NEWTON`` Newton
        steps of its form (:meth:`support_form`)."""
        if self.support_form(n_support) == "primal":
            step = SUPPORT_NEWTON * self.primal_step_cost()
        else:
            m = float(n_support)
            step = SUPPORT_NEWTON * m ** 3 / 3.0 + 16.0 * m * m
        return step / FACE_SPEEDUP + 2.0 * self.certificate_work()

    def _violations(self, S):
        """``H_p`` of every pair at the class scores ``S`` and the slacks ``max(0, max_p H_p)``."""
        data = self.data
        H = (self.offset - (S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar])) / self.cost
        return H, np.maximum(_margin.segment_max(H, data.pair_ptr), 0.0)

    def solve_restricted(self, pairs):
        """The dual (4.14) with ``alpha_p = 0`` outside ``pairs`` (sorted), to the end: the
        budgeted QP ``max b^T a - 1/2 a^T M a``, ``a >= 0``, ``sum_p cost_p a_p <= C_i`` with
        ``M`` the pairs' Gram matrix, by :func:`~.dual_qp.solve_dual_qp` (the bounds are kept
        as inequalities, so a degenerate face -- more pairs than primal dimensions -- is no
        harder than any other).  Returns the full alpha (not yet projected) or None."""
        data = self.data
        k = pairs.size
        M, g = self.face_solver.matrix(FaceRows.of_pairs(pairs, data.n_pairs))
        examples, loc = np.unique(data.pair_i[pairs], return_inverse=True)
        Bm = sp.csr_matrix((self.cost[pairs], (loc, np.arange(k))), shape=(examples.size, k))
        x, *_ = solve_dual_qp(BlockDiagonal.of_matrix(M), g, Bm, np.zeros((k, 0)), np.zeros(0),
                              self.budget[examples], 100, lambda *_: True)
        if not np.all(np.isfinite(x)):
            return None
        out = np.zeros(data.n_pairs)
        out[pairs] = x
        return out

    def _grow(self, work, candidates, H, xi):
        """``work`` and the ``candidates`` with the largest violations ``H_p - xi_i``, at most
        :data:`SUPPORT_MAX_PAIRS` pairs in all (``work`` alone when it is full)."""
        room = SUPPORT_MAX_PAIRS - int(np.count_nonzero(work))
        new = np.flatnonzero(candidates & ~work)
        if new.size > max(room, 0):
            score = H[new] - xi[self.data.pair_i[new]]
            new = new[np.argsort(-score, kind="stable")[:max(room, 0)]]
        out = work.copy()
        out[new] = True
        return out

    def support_step(self, alpha, tol, primal, dual):
        """Step 8b with the bounds kept (the issue's "final exact step on the identified active
        set"): :meth:`solve_restricted` on the working pairs -- the support of ``alpha`` and
        the pairs at their example's largest violation at ``w(alpha)`` -- then the pairs
        violated at its answer join (``H_p`` above the example's slack) and it is solved
        again, for up to :data:`SUPPORT_ROUNDS` rounds or until no pair is violated (then the
        restricted optimum is the optimum).  Each answer is certified on the full model; the
        best dual point replaces ``alpha`` (in place), the best primal point goes to
        :attr:`best_primal`.  Returns (primal at ``w(alpha)``, dual, psi) of the final alpha."""
        if self.support_form(int(np.count_nonzero(alpha > 0))) == "primal":
            return self._support_step_primal(alpha, tol, primal, dual)
        data, C = self.data, self.C
        H, xi = self._violations(self.scores)
        work = self._grow(alpha > 0, (H > 0) & (H >= xi[data.pair_i] - 1e-9), H, xi)
        best_alpha = None
        for _ in range(SUPPORT_ROUNDS):
            pairs = np.flatnonzero(work)
            a = self.solve_restricted(pairs)
            if a is None:
                break
            best_alpha, primal, dual = self._certify_candidate(a, primal, dual, best_alpha)
            gap = relative_gap(min(primal, self.best_primal), dual)
            H, xi = self._violations(self.scores)
            enter = ~work & (H > 0) & (H >= xi[data.pair_i] - 1e-9)
            logger.debug("support step: %d pairs, best primal %.10g dual %.10g gap %.3e; %d "
                         "pairs enter", pairs.size, min(primal, self.best_primal), dual, gap,
                         enter.sum())
            if reached(gap, tol) or not enter.any():
                break
            if np.count_nonzero(work | enter) > SUPPORT_MAX_PAIRS:
                # room for them: the pairs the restricted optimum left at 0 (to the interior
                # point's accuracy) leave
                work &= a > 1e-8 * max(1.0, float(a.max()))
            grown = self._grow(work, enter, H, xi)
            if np.array_equal(grown, work):  # full: no pair can join
                break
            work = grown
        if best_alpha is not None:
            alpha[:] = best_alpha
            self.n_newton += 1
        return self.certify(alpha)

    def _support_step_primal(self, alpha, tol, primal, dual):
        """:meth:`support_step` in the primal space: the interior point
        (:func:`.interior_point.solve`) on the examples with support or a violated pair (all
        their pairs: the Newton step's cost hardly depends on how many), then the examples
        violated at its answer join and it is solved again, for up to
        :data:`SUPPORT_ROUNDS` rounds.  When no left-out example is violated, the restricted
        optimum is the optimum.  Certified and kept as in :meth:`support_step`."""
        data, C = self.data, self.C
        _, xi = self._violations(self.scores)
        has_support = np.bincount(data.pair_i, weights=alpha > 0, minlength=data.n_samples) > 0
        active = has_support | (xi > 0)
        best_alpha = None
        for _ in range(SUPPORT_ROUNDS):
            # no warning of its own (warn=False): certified below, on the full model
            res = interior_point.solve(self.model, C, tol=max(0.1 * tol, SUPPORT_PRIMAL_TOL),
                                       examples=np.flatnonzero(active), warn=False)
            # the interior point leaves the inactive pairs at about mu / s, not at 0: zeroed,
            # unless that costs the certificate its tolerance
            a = np.where(res.dual > SUPPORT_PRIMAL_ZERO * float(res.dual.max(initial=0.0)),
                         res.dual, 0.0)
            best_alpha, primal, dual = self._certify_candidate(a, primal, dual, best_alpha)
            gap = relative_gap(min(primal, self.best_primal), dual)
            if not reached(gap, tol):
                best_alpha, primal, dual = self._certify_candidate(res.dual, primal, dual,
                                                                   best_alpha)
                gap = relative_gap(min(primal, self.best_primal), dual)
            _, xi = self._violations(self.scores)
            enter = ~active & (xi > 0)
            logger.debug("support step (primal): %d of %d examples, %d Newton steps, best "
                         "primal %.10g dual %.10g gap %.3e; %d examples enter", active.sum(),
                         active.size, res.n_iter, min(primal, self.best_primal), dual, gap,
                         enter.sum())
            if reached(gap, tol) or not enter.any():
                break
            active |= enter
        if best_alpha is not None:
            alpha[:] = best_alpha
            self.n_newton += 1
        return self.certify(alpha)

    def _pair_products(self, v, pi, py, pyb):
        """``<dPhi_p, w(v)>`` for the pairs ``(pi, py, pyb)`` carrying the values ``v``."""
        G = np.empty_like(self.G)
        scatter_coefficients(v, pi, py, pyb, G)
        if self.mode == MODE_GRAM:
            S = self.K @ (G @ self.Q)
        else:
            GX = (self.X.T @ G).T if sp.issparse(self.X) else G.T @ self.X
            S = np.asarray(self.X @ (self.Q @ GX).T)
        return S[pi, py] - S[pi, pyb]

    def newton_step(self, alpha, budget, offset, cost, max_cg: int | None = None):
        """Step 8b of Algorithm 2, approximately: a Newton step on the reduced QP over every
        working set at once, then a feasible exact line search (the dual never decreases).

        The support of alpha is kept, examples whose budget is exhausted keep it exhausted
        (``sum_p cost_p d_p = 0``), and projected conjugate gradients solve
        ``max_d g.d - 1/2 d^T (Phi Phi^T) d`` on that subspace.  The step is cut where an alpha
        reaches 0 or a free budget fills up.  Returns the new alpha (or None: no ascent).
        """
        max_cg = MAX_CG if max_cg is None else max_cg
        data = self.data
        free = np.flatnonzero(alpha > 0)
        if free.size == 0:
            return None
        n = data.n_samples
        pi, py, pyb = data.pair_i[free], data.pair_y[free], data.pair_ybar[free]
        c, a = cost[free], alpha[free]
        used = np.bincount(data.pair_i, weights=cost * alpha, minlength=n)
        tight = used >= budget * (1.0 - 1e-9)
        S = self.scores
        g = offset[free] - (S[pi, py] - S[pi, pyb])
        den = np.bincount(pi, weights=c * c, minlength=n)
        scale = np.where(tight & (den > 0), 1.0 / np.maximum(den, 1e-300), 0.0)

        def project(v):  # onto {sum_p cost_p v_p = 0 for every example with a full budget}
            return v - c * (np.bincount(pi, weights=c * v, minlength=n) * scale)[pi]

        r = project(g)
        r0 = float(np.sqrt(r @ r))
        if r0 == 0.0:
            return None
        d = np.zeros_like(r)
        p = r.copy()
        rr = r0 * r0
        for _ in range(max_cg):
            Hp = project(self._pair_products(p, pi, py, pyb))
            curv = float(p @ Hp)
            if curv <= 1e-14 * rr:  # a flat direction: ascend along it up to the bounds
                d = p if not d.any() else d
                break
            step = rr / curv
            d += step * p
            r -= step * Hp
            rr_new = float(r @ r)
            if np.sqrt(rr_new) <= 1e-10 * r0:
                break
            p = r + (rr_new / rr) * p
            rr = rr_new
        gd = float(g @ d)
        if not gd > 0:
            return None
        dHd = float(d @ self._pair_products(d, pi, py, pyb))
        t = gd / dHd if dHd > 0 else np.inf
        down = d < 0
        if down.any():
            t = min(t, float(np.min(a[down] / -d[down])))
        grow = np.bincount(pi, weights=c * d, minlength=n)
        fill = (grow > 0) & ~tight
        if fill.any():
            t = min(t, float(np.min((budget[fill] - used[fill]) / grow[fill])))
        if not (np.isfinite(t) and t > 0):
            return None
        new = alpha.copy()
        new[free] = a + t * d
        new[new < 1e-14 * max(1.0, float(a.max()))] = 0.0
        return _margin.project_dual(new, data, self.C)


