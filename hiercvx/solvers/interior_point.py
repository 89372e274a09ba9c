"""A primal-dual interior-point method for the margin family (Crammer–Singer, Cai–Hofmann).

The dual coordinate solvers (:mod:`.working_set`, :mod:`.crammer_singer`) are fast when the
classes are separated and few examples are support vectors.  With noisy labels most examples
are support vectors, the dual (4.15) is degenerate (many more active pairs than primal
dimensions) and coordinate ascent needs thousands of passes to reach a 1e-6 gap.  An
interior-point method takes 15-30 Newton steps on every such problem; each step costs one
dense factorization in the space of the primal weights, which is small when the features are
few (``n >> d``, the regime where the dual methods struggle most).

The primal, thesis (4.10) and its margin-rescaled analogue (:mod:`hiercvx.models.margin`),
with the class kernel factored as ``Q = Lam' Lam'^T`` (``Lam'`` ``(q, r)`` from the
eigenvalues of ``Q``; any factor gives the same scores and the same ``||W||``) and the input
features ``F`` (``X`` itself for the linear kernel; otherwise a factor ``K = F F^T + R`` of
the training kernel by pivoted Cholesky, :func:`low_rank_factor`, with the dropped PSD residual
``R`` of trace at most ``1e-12 trace(K)``: ``rank(K)`` columns, a few hundred for a smooth
kernel on low-dimensional inputs, instead of ``n``)::

    min_{w, xi}  1/2 ||w||^2 + sum_i C_i xi_i
    s.t.  a_p . w + c_p xi_i >= b_p   for every pair p = (i, y, ybar),     xi >= 0,
    a_p = (Lam'_y - Lam'_ybar) (x) F_i,    c_p = cost_p (1/Delta_p or 1),   b_p = offset_p.

Its multipliers are the thesis' ``alpha`` exactly (the pair rows are written as in (4.13)), so
the dual point of every iterate is a dual point of (4.15) and certifies the answer.

Newton system (Mehrotra predictor-corrector).  With ``D_p = alpha_p / s_p`` (s the pair
slacks) and ``E_i = mu_i / xi_i`` (mu the multipliers of ``xi >= 0``), eliminating ``s``,
``alpha``, ``mu`` and then each example's ``xi_i`` (a scalar) leaves a system in ``w`` alone::

    (I + sum_i (Lam'^T T_i Lam') (x) F_i F_i^T) dw = rhs,
    T_i = B_i^T diag(D) B_i - v_i v_i^T / delta_i,   v_i = B_i^T (c * D),
    delta_i = sum_p c_p^2 D_p + E_i,

``B_i`` the rows ``e_y - e_ybar`` of example i's pairs.  ``T_i`` is positive semi-definite
(Cauchy-Schwarz), so the matrix is at least the identity and its Cholesky factorization
never fails.  The sum is formed as one matrix product over the packed upper triangles of
``T_i`` and ``F_i F_i^T`` (``n (q^2/2) (d^2/2)`` multiply-adds), which dominates a step
together with the factorization (``(r d)^3 / 3``): :func:`step_cost` estimates both so that
:func:`applicable` and the estimators can choose between this method and the coordinate
methods.

The same iteration runs on explicit pair rows (:class:`PairRows`, :func:`solve_pair_rows`):
``a_p = R_p (x) F_i`` with any coefficient row ``R_p`` over ``r`` nodes instead of a difference
of two classes' attributes, so ``T_i = R_i^T diag(D) R_i - v_i v_i^T / delta_i``.  That is the
master of a cutting-plane loop whose working sets are label sets (NHSVM (10) in
:mod:`.nhsvm_fw`).

Stopping is certified as everywhere in hiercvx: the primal objective recomputed at ``w``
(slacks recomputed from the scores) and the dual (4.14) at ``alpha`` projected onto the dual
feasible set; ``(P - D) / max(|P|, |D|) <= tol``.  The returned weights are the model's own
(node weights ``W`` or representer coefficients ``G``) and its objective and lower bound are
recomputed by the model.
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import _interior_point_kernels as _k
from ._mehrotra import PairProblem, mehrotra
from .primitives import blas_threads, kronecker_sum, pivoted_cholesky

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve", "solve_pair_rows", "PairRows", "row_step_cost", "step_cost",
           "applicable", "feature_dimension", "low_rank_factor",
           "rows_certificate"]

#: the low-rank kernel factor found for each model, while the model lives (a cache: the
#: search is asked by :func:`applicable`, :func:`step_cost` and :func:`solve` alike)
_FACTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Options:
    """Settings of the interior point.  Each default with its reason.

    Attributes
    ----------
    max_dimension : int
        The largest primal dimension ``r d`` factorized densely (memory ``8 (r d)^2`` bytes, 288
        MB at 6000; a step then costs about ``(r d)^3 / 3 = 7e10`` multiply-adds, where the
        coordinate methods are the better choice above).
    max_step_cost : float
        Above this many multiply-adds per Newton step (a few seconds of dense BLAS) the
        coordinate methods are preferred (:func:`applicable`).
    max_feature_entries : float
        The dense features (or kernel factor) kept: at most this many numbers (800 MB).
    low_rank_rtol : float
        A kernel factor may drop a PSD residual of this trace, relative to the kernel's (a few
        hundred roundings: the certificate is computed on the full kernel).
    low_rank_search_cost : float
        Multiply-adds the pivoted-Cholesky search for a low-rank kernel factor may spend (``n
        max_rank^2``), a small share of one Newton step.
    block : int
        Examples per block when the Newton matrix is accumulated (bounds the memory of the
        ``T_i``).
    gemm_min_features, gemm_max_rows : int
        Pair rows with more features than this and at most that many rows form the Newton matrix
        by products ``F^T diag(t) F`` (compute-bound) instead of per-example triangles
        (memory-bound).
    keep_products : float
        The feature products ``F_ij F_ij'`` are kept between Newton steps up to this many
        numbers (160 MB).
    step_fraction : float
        The fraction of the step to the boundary taken (Mehrotra, "On the implementation of a
        primal-dual interior point method", SIAM J. Optim. 2, 1992, takes 0.99 and more): close
        to 1, yet the iterate stays strictly interior.
    init : float
        The starting multipliers use this share of every budget (well inside the box).
    shift : float
        The starting slacks lie this far above every pair's requirement at ``w = 0``.
    max_correctors : int
        Gondzio's centrality correctors per Newton step (Gondzio, "Multiple centrality
        corrections in a primal-dual method for linear programming", Comput. Optim. Appl. 6,
        1996): each one more solve with the step's factorization.
    regularize_from, regularize_to : float
        When round-off makes the Newton matrix indefinite, ``shift max(diag)`` is added to its
        diagonal, ``shift`` from the first value up to the second by factors of 100: the
        smallest shift that factorizes (a few units of round-off relative to the largest
        entry first; above ``1e-6`` the direction is too far from Newton's to be worth a step).
    dual_regularization : float
        ``rho`` of the proximal regularization of the multipliers (Altman & Gondzio,
        "Regularized symmetric indefinite systems in interior point methods for linear and
        quadratic optimization", Optim. Methods Softw. 11-12, 1999; Friedlander & Orban, "A
        primal-dual regularized interior-point method for convex quadratic programs", Math.
        Prog. Comp. 4, 2012): the Newton systems take ``D_p = 1 / (s_p / alpha_p + rho)``,
        at most ``1 / rho``, which bounds their condition number; the pair rows' residual
        then carries ``rho dalpha``, which vanishes with the steps.  0 for the factorized
        systems (they need no bound); the matrix-free ones set their own
        (:class:`.interior_point_cg.Options`).
    """

    max_dimension: int = 6000
    max_step_cost: float = 2e11
    max_feature_entries: float = 1e8
    low_rank_rtol: float = 1e-12
    low_rank_search_cost: float = 4e9
    block: int = 1024
    gemm_min_features: int = 48
    gemm_max_rows: int = 8
    keep_products: float = 2e7
    step_fraction: float = 0.99
    init: float = 0.5
    shift: float = 1.0
    max_correctors: int = 2
    regularize_from: float = 1e-14
    regularize_to: float = 1e-6
    dual_regularization: float = 0.0


_DEFAULT = Options()


# --------------------------------------------------------------------------------------------
# Factors of the class kernel and of the input kernel
# --------------------------------------------------------------------------------------------

def _psd_factor(M: np.ndarray, what: str):
    """``(U sqrt(e), U, e)`` with ``M = U diag(e) U^T`` restricted to ``e > 0`` (relative)."""
    e, U = np.linalg.eigh(0.5 * (M + M.T))
    if e.size == 0 or e[-1] <= 0:
        raise InputError(f"the {what} is zero; nothing to learn")
    keep = e > 1e-12 * e[-1]
    U, e = U[:, keep], e[keep]
    return U * np.sqrt(e), U, e


def _own_features(model: MarginModel) -> bool:
    """Whether the method runs on the model's own features (linear kernel, no more features
    than samples); otherwise on a factor of the ``(n, n)`` training kernel."""
    X = model.X
    return (model.kernel.is_linear and not model.precomputed
            and X.shape[1] <= max(X.shape[0], 1))


def _training_kernel(model: MarginModel) -> np.ndarray:
    X = model.X
    if model.kernel.is_linear and not model.precomputed:
        K = X @ X.T
        return np.asarray(K.toarray() if sp.issparse(K) else K)
    return model.K


def low_rank_factor(K: np.ndarray, max_rank: int, rtol: float = Options.low_rank_rtol):
    """``F`` ``(n, r)`` with ``K = F F^T + R``, ``R`` PSD of trace ``<= rtol * trace(K)``, by
    Cholesky with complete pivoting stopped at that residual; None when it needs more than
    ``max_rank`` columns.  A smooth kernel on low-dimensional inputs (an RBF kernel on
    Wang et al.'s 2-D Example 3: rank 133 of 1500 at 1e-12) is a few hundred columns, so the
    Newton step works in ``q x r`` instead of ``q x n``; the certificate is evaluated on the
    model's own kernel, so the truncation cannot pass unnoticed."""
    diagonal = np.array(np.diag(K), dtype=float)
    total = diagonal.sum()
    if K.shape[0] == 0 or total <= 0:
        return None
    F, _, residual = pivoted_cholesky(diagonal, lambda j: K[:, j], max_rank=max_rank, rtol=rtol)
    return F if residual.sum() <= rtol * total else None


def _kernel_factor(model: MarginModel, options: Options = _DEFAULT):
    """A low-rank factor of the training kernel when one with at most
    ``max_dimension / q`` columns exists and is cheap to look for, else None (looked for once
    per model and setting: :func:`applicable`, :func:`step_cost` and :func:`solve` all ask)."""
    n = model.X.shape[0]
    max_rank = min(options.max_dimension // max(model.data.n_classes, 1), n)
    key = (max_rank, options.low_rank_search_cost, options.low_rank_rtol)
    found = _FACTORS.setdefault(model, {})
    if key not in found:
        found[key] = (None if n * max_rank ** 2 > options.low_rank_search_cost
                      else low_rank_factor(_training_kernel(model), max_rank,
                                           options.low_rank_rtol))
    return found[key]


def _features(model: MarginModel, options: Options = _DEFAULT):
    """The features ``F`` ``(n, d_f)`` with ``F F^T`` the training kernel, and whether they are
    the model's own ``X`` (then the node weights can be read off ``w`` directly)."""
    X = model.X
    if _own_features(model):
        return np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=float), True
    F = _kernel_factor(model, options)
    if F is None:
        F, _, _ = _psd_factor(_training_kernel(model), "training kernel")
    return np.ascontiguousarray(F), False


def feature_dimension(model: MarginModel, options: Options = _DEFAULT) -> int:
    """``d_f``: the number of features the method works with (at most)."""
    X = model.X
    if _own_features(model):
        return X.shape[1]
    F = _kernel_factor(model, options)
    return X.shape[0] if F is None else F.shape[1]
def step_cost(model: MarginModel, n_examples: int | None = None,
              options: Options = _DEFAULT) -> float:
    """Multiply-adds of one Newton step (the packed Hessian product and the factorization),
    for a model whose class kernel has full rank (an upper estimate otherwise);
    ``n_examples``: on that many of its examples only (:func:`solve`'s ``examples``)."""
    data = model.data
    n, q = data.n_samples if n_examples is None else int(n_examples), data.n_classes
    d = feature_dimension(model, options)
    dim = q * d
    return float(n * (q * (q + 1) / 2) * (d * (d + 1) / 2) + dim ** 3 / 3 + 2 * dim ** 2 * q)


def applicable(model, options: Options = _DEFAULT) -> bool:
    """Whether this method is affordable on ``model``: a margin model whose primal dimension
    fits ``options.max_dimension`` and whose Newton step costs at most
    ``options.max_step_cost``."""
    if not isinstance(model, MarginModel):
        return False
    d_f = feature_dimension(model, options)
    dim = model.data.n_classes * d_f
    return (dim <= options.max_dimension and step_cost(model, options=options)
            <= options.max_step_cost and model.X.shape[0] * d_f <= options.max_feature_entries)


# --------------------------------------------------------------------------------------------
# The Newton matrix's packed triangles
# --------------------------------------------------------------------------------------------

def _packed_index(n: int) -> np.ndarray:
    """``(n, n)``: the position of entry ``(a, b)`` in a packed upper triangle (symmetric)."""
    i, j = np.triu_indices(n)
    index = np.empty((n, n), dtype=np.int64)
    index[i, j] = np.arange(i.size)
    index[j, i] = np.arange(i.size)
    return index


# --------------------------------------------------------------------------------------------
# The problem in factored form
# --------------------------------------------------------------------------------------------

class _Factored(PairProblem):
    """The primal in the factored class space: pair data of the examples with a positive
    budget and at least one pair, the features ``F`` and the class factor ``Lam'``."""

    def __init__(self, model: MarginModel, C: float, examples=None,
                 options: Options = _DEFAULT):
        self.options = options
        data = model.data
        budget = C * data.Cw
        counts = np.diff(data.pair_ptr)
        keep = (budget > 0) & (counts > 0)  # C_i = 0 or no pair: alpha = 0, xi = 0
        if examples is not None:  # the others are left out: alpha = 0
            chosen = np.zeros(data.n_samples, dtype=bool)
            chosen[examples] = True
            keep &= chosen
        self.examples = np.flatnonzero(keep)
        pair_keep = keep[data.pair_i]
        self.pairs = np.flatnonzero(pair_keep)
        self.py = np.ascontiguousarray(data.pair_y[pair_keep], dtype=np.int64)
        self.pb = np.ascontiguousarray(data.pair_ybar[pair_keep], dtype=np.int64)
        self.ptr = np.zeros(self.examples.size + 1, dtype=np.int64)
        np.cumsum(counts[keep], out=self.ptr[1:])
        self.pi = np.repeat(np.arange(self.examples.size), counts[keep])
        self.b = np.ascontiguousarray(data.pair_offset[pair_keep], dtype=float)
        self.c = np.ascontiguousarray(data.pair_cost[pair_keep], dtype=float)
        self.C = np.ascontiguousarray(budget[keep], dtype=float)
        F, self.own_features = _features(model, options)
        self.F = np.ascontiguousarray(F[self.examples])
        self.Lf, U, e = _psd_factor(data.Q, "class kernel")
        # node weights W = O w with O = Lam^T U diag(e^-1/2): same scores, same norm
        self.O = (data.Lam.T @ (U / np.sqrt(e))) if (model.node_weights and self.own_features) \
            else None
        self.n, self.q = self.examples.size, data.n_classes
        self.r, self.d = self.Lf.shape[1], self.F.shape[1]
        self.dim = self.r * self.d
        self.reports_iterate = self.O is not None
        self._products = None

    # products with the constraint matrix A (rows a_p) ---------------------------------------
    def scores(self, w):
        """Class scores ``S = F w^T Lam'^T`` ``(n, q)`` of ``w`` ``(r, d)``."""
        return (self.F @ w.T) @ self.Lf.T

    def pair_products(self, S):
        """``a_p . w = S_iy - S_iybar`` for every pair."""
        return S[self.pi, self.py] - S[self.pi, self.pb]

    def scatter(self, values):
        """Per-example class vectors ``G`` ``(n, q)`` of pair values (thesis (4.12))."""
        G = np.empty((self.n, self.q))
        _k.scatter(self.ptr, self.py, self.pb, values, G)
        return G

    def class_adjoint(self, G):
        """``Lam'^T G^T F`` for per-example class vectors ``G`` ``(n, q)``."""
        return self.Lf.T @ (G.T @ self.F)

    # the Newton matrix -----------------------------------------------------------------------
    def _feature_products(self, lo, hi, idd, jdd):
        """``F_ij F_ij'`` for ``j <= j'`` of the examples ``lo..hi`` (kept when they fit)."""
        if self._products is None and self.n * idd.size <= self.options.keep_products:
            self._products = self.F[:, idd] * self.F[:, jdd]
        if self._products is not None:
            return self._products[lo:hi]
        return self.F[lo:hi, idd] * self.F[lo:hi, jdd]

    def newton_matrix(self, D, cD, delta):
        """``I + sum_i (Lam'^T T_i Lam') (x) F_i F_i^T`` and the ``v_i`` ``(n, q)``."""
        q, d, r = self.q, self.d, self.r
        iq, jq = np.triu_indices(q)
        idd, jdd = np.triu_indices(d)
        Zp = np.zeros((iq.size, idd.size))
        V = np.empty((self.n, q))
        T = np.empty((q, q))
        block = self.options.block
        packed = np.empty((min(block, self.n), iq.size))
        for lo in range(0, self.n, block):
            hi = min(lo + block, self.n)
            Tb = packed[:hi - lo]
            _k.example_blocks(lo, hi, self.ptr, self.py, self.pb, D, cD, delta, Tb, T, V[lo:hi])
            Zp += Tb.T @ self._feature_products(lo, hi, idd, jdd)
        # to the factored class space on the packed feature triangles, then unpack:
        # H[(a, j), (b, j')] = sum_{c, e} Lam'_ca Zp[(c, e), (j, j')] Lam'_eb
        Zr = np.einsum("ca,cek,eb->abk", self.Lf, Zp[_packed_index(q)], self.Lf,
                       optimize=True)  # (r, r, .)
        H = Zr[:, :, _packed_index(d)].transpose(0, 2, 1, 3).reshape(r * d, r * d)
        H[np.diag_indices_from(H)] += 1.0
        return H, V


class PairRows(PairProblem):
    """The primal with explicit pair rows, for constraints that are not class differences::

        min_{w, xi}  1/2 ||w||^2 + sum_i C_i xi_i
        s.t.  sum_n R_pn (w_n . F_i) + c_p xi_i >= b_p   for every pair p of example i,   xi >= 0,

    ``R`` ``(P, r)`` (sparse or dense) one coefficient row per pair, ``F`` ``(n, d)`` dense
    features, pairs sorted by example with CSR-style offsets ``ptr``.  This is the margin
    model's primal with ``a_p = R_p (x) F_i`` in place of ``(Lam'_y - Lam'_ybar) (x) F_i``, e.g.
    the working set of a cutting-plane loop over label sets (NHSVM (10), rows ``sqrt(alpha) *
    (t_i - z)``).  The Newton matrix is ``I + sum_i T_i (x) F_i F_i^T`` with ``T_i`` of the
    rows, ``n (r^2 / 2)(d^2 / 2)`` multiply-adds and ``(r d)^3 / 3`` for its factorization."""

    reports_iterate = True

    def __init__(self, F, R, ptr, b, c, C, options: Options = _DEFAULT):
        self.options = options
        self.F = np.ascontiguousarray(F, dtype=float)
        self.R = sp.csr_matrix(R, dtype=float)
        self.R.sort_indices()
        self.ptr = np.ascontiguousarray(ptr, dtype=np.int64)
        self.n, self.d = self.F.shape
        self.r = self.q = self.R.shape[1]
        self.dim = self.r * self.d
        counts = np.diff(self.ptr)
        self.pi = np.repeat(np.arange(self.n), counts)
        self.b = np.ascontiguousarray(b, dtype=float)
        self.c = np.ascontiguousarray(c, dtype=float)
        self.C = np.ascontiguousarray(C, dtype=float)
        P = self.b.size
        if not (self.R.shape[0] == P == self.c.size == self.ptr[-1] and self.C.size == self.n):
            raise InputError(f"pair rows: R has {self.R.shape[0]} rows, b {P}, c {self.c.size}, "
                             f"ptr ends at {self.ptr[-1]}, C has {self.C.size} of {self.n} "
                             "examples")

    def scores(self, w):
        """``S = F w^T`` ``(n, r)``: the row space's scores."""
        return self.F @ w.T

    def pair_products(self, S):
        """``a_p . w = R_p . S_i`` for every pair."""
        R = self.R
        out = np.empty(self.b.size)
        _k.row_products(self.pi, R.indptr, R.indices, R.data, np.ascontiguousarray(S), out)
        return out

    def scatter(self, values):
        """``G_i = sum_{p of i} values_p R_p`` ``(n, r)``."""
        R = self.R
        G = np.empty((self.n, self.r))
        _k.row_scatter(self.ptr, R.indptr, R.indices, R.data, np.ascontiguousarray(values), G)
        return G

    def class_adjoint(self, G):
        return G.T @ self.F

    def newton_matrix(self, D, cD, delta):
        """``I + sum_i T_i (x) F_i F_i^T`` and the ``v_i`` ``(n, r)``.  Few rows and many
        features (HIERMULT's node problems: r = 2, d = 200): one product ``F^T diag(T_ab) F``
        per entry of the ``T``'s, compute-bound; else the entries ``F_if F_ig`` of each
        example's triangle, formed a block of examples at a time."""
        r, d = self.r, self.d
        n_tri = r * (r + 1) // 2
        V = np.empty((self.n, r))
        T = np.empty((r, r))
        R = self.R
        opts = self.options
        if d > opts.gemm_min_features and r <= opts.gemm_max_rows:
            Tall = np.empty((self.n, n_tri))
            _k.row_blocks(0, self.n, self.ptr, R.indptr, R.indices, R.data, D, cD, delta, Tall, T, V)
            index = _packed_index(r)
            H = kronecker_sum(self.F, r, lambda a, b: Tall[:, index[a, b]])
            H[np.diag_indices_from(H)] += 1.0
            return H, V
        idd, jdd = np.triu_indices(d)
        Zp = np.zeros((n_tri, idd.size))
        packed = np.empty((min(opts.block, self.n), n_tri))
        for lo in range(0, self.n, opts.block):
            hi = min(lo + opts.block, self.n)
            Tb = packed[:hi - lo]
            _k.row_blocks(lo, hi, self.ptr, R.indptr, R.indices, R.data, D, cD, delta, Tb, T,
                        V[lo:hi])
            Zp += Tb.T @ (self.F[lo:hi, idd] * self.F[lo:hi, jdd])
        H = Zp[_packed_index(r)][:, :, _packed_index(d)].transpose(0, 2, 1, 3).reshape(r * d, r * d)
        H[np.diag_indices_from(H)] += 1.0
        return H, V


def row_step_cost(n: int, r: int, d: int) -> float:
    """Multiply-adds of one Newton step of :class:`PairRows` (dense rows: an upper estimate)."""
    dim = r * d
    return float(n * (r * (r + 1) / 2) * (d * (d + 1) / 2) + dim ** 3 / 3)


def rows_certificate(prob: PairRows, w, alpha):
    """The certificate of a :class:`PairRows` iterate: ``(weights, objective, lower_bound,
    alpha)``, the lower bound the dual at the projected multipliers ``alpha`` and the weights
    whichever of the iterate ``w`` and the dual point's weights has the lower primal."""
    lower, alpha, w_dual = prob.dual(alpha)
    objective = prob.primal(w_dual)
    obj_w = prob.primal(w)
    if obj_w < objective:
        objective, w_dual = obj_w, w
    return w_dual, objective, lower, alpha


def solve_pair_rows(F, R, ptr, b, c, C, *, tol: float = 1e-8, max_iter: int = 100,
                    verbose: bool = False, options: Options | None = None) -> Solution:
    """The primal of :class:`PairRows` by the same Mehrotra predictor-corrector as :func:`solve`.

    Returns a :class:`~hiercvx.result.Solution`: ``weights`` ``w`` ``(r, d)`` (the iterate or the
    dual point's weights, whichever has the lower primal), ``objective`` that primal,
    ``lower_bound`` the dual at the projected multipliers ``dual`` ``(P,)``; no warning (the
    caller, a cutting-plane loop, decides what an unconverged master means); ``options``:
    :class:`Options`.  Without the limit on ``r d``, by conjugate gradients:
    :func:`hiercvx.solvers.interior_point_cg.solve_pair_rows`.
    """
    t_start = time.perf_counter()
    options = _DEFAULT if options is None else options
    prob = PairRows(F, R, ptr, b, c, C, options)
    if prob.dim > options.max_dimension:
        raise InputError(f"the interior-point method factorizes a dense ({prob.dim}, {prob.dim}) "
                         f"matrix, above its limit {options.max_dimension} "
                         "(Options.max_dimension)")
    with blas_threads(1):
        w, alpha, n_iter, converged, history, _ = mehrotra(prob, float(tol), int(max_iter),
                                                            verbose, t_start, options)
    w_best, objective, lower, alpha = rows_certificate(prob, w, alpha)
    return Solution(weights=np.ascontiguousarray(w_best), objective=float(objective),
                    lower_bound=float(lower), n_iter=n_iter,
                    converged=bool(reached(relative_gap(objective, lower), tol)), tol=float(tol),
                    dual=alpha, history=history, solve_time=time.perf_counter() - t_start,
                    solver="interior_point.rows", name="pair rows, primal-dual interior point")


# --------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------

def solve(model, C: float = 1.0, *, tol: float = 1e-8, max_iter: int = 100,
          verbose: bool = False, examples=None, warn: bool = True,
          options: Options | None = None) -> Solution:
    """The margin model (thesis (4.10) / (4.15), Crammer–Singer) by a primal-dual interior-point
    method with Mehrotra's predictor-corrector (module docstring).

    Parameters
    ----------
    model : a :class:`~hiercvx.models.margin.MarginModel` (``hiercvx.models.hsvm.prepare`` or
        ``hiercvx.models.multiclass.prepare``), any kernel, slack or margin rescaling, sample
        weights; :func:`applicable` says whether a Newton step is affordable
    C : positive float; example i's budget is ``C * data.Cw[i]``
    tol : certified relative duality gap ``(P - D) / max(|P|, |D|)`` to reach
    max_iter : Newton steps; a ``ConvergenceWarning`` is issued when they run out (unless
        ``warn=False``)
    examples : indices of the examples to solve on (default: all); the others get
        ``alpha = 0``.  The iteration stops on the restricted problem's gap; the returned
        certificate is the full model's (its primal at the answer's weights, its dual at the
        answer's ``alpha``), so ``converged`` means the full problem's gap reached ``tol``.  The
        support step of the coordinate solvers (:mod:`.margin_dual`) solves on the examples
        with support or a violated pair (:mod:`.support_step`).
    options : :class:`Options` (default: ``Options()``)

    Returns
    -------
    :class:`~hiercvx.result.Solution` with the model's weights (node weights ``W`` for the linear
    kernel with class attributes, coefficients ``G`` otherwise), ``dual`` the pair multipliers
    alpha (one per pair of ``model.data``), ``history`` per Newton step.
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...) "
                         f"or hiercvx.models.multiclass.prepare(...), got {type(model).__name__}")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="interior_point.solve")
    options = _DEFAULT if options is None else options
    dim = model.data.n_classes * feature_dimension(model, options)
    if dim > options.max_dimension:
        raise InputError(f"the interior-point method factorizes a dense ({dim}, {dim}) matrix, "
                         f"above its limit {options.max_dimension} (Options.max_dimension): "
                         "use the working-set solver "
                         "(hiercvx.solvers.working_set) for this many classes x features")
    t_start = time.perf_counter()
    if examples is not None:
        examples = np.asarray(examples, dtype=np.int64).ravel()
        if examples.size and (examples.min() < 0 or examples.max() >= model.data.n_samples):
            raise InputError(f"examples must index the model's {model.data.n_samples} examples")
    prob = _Factored(model, C, examples, options)
    # one BLAS thread: the matrices are small, and threaded BLAS spins against other processes
    with blas_threads(1):
        w, alpha, n_iter, converged, history, stopped = mehrotra(prob, float(tol), int(max_iter),
                                                                  verbose, t_start, options)
    res = _result(model, prob, w, alpha, C, float(tol), n_iter, converged, history, t_start)
    if warn:
        reason = None
        if stopped:  # not the step budget: "raise max_iter" would be untrue
            reason = (f"with a certified relative duality gap of {res.gap:.3e} > tol={res.tol:g}: "
                      f"{stopped}; standardized features (or a rescaled C) keep the Newton "
                      "systems well conditioned")
        res.warn_unless_converged("Newton steps", stacklevel=3, reason=reason)
    return res


def _result(model, prob, w, alpha_f, C, tol, n_iter, converged, history, t_start) -> Solution:
    """The model's own certificate at the final iterate: the weights of ``alpha`` (thesis
    (4.12)) or, for node weights, the primal iterate mapped back, whichever is lower."""
    data = model.data
    alpha = np.zeros(data.n_pairs)
    if alpha_f.size:
        alpha[prob.pairs] = alpha_f
    alpha = _margin.project_dual(alpha, data, C)
    weights = model.weights_from_dual(alpha)
    if model.node_weights:  # over the model's own features (with a bias column if any)
        objective = _margin.primal_objective(weights, model.X, data, C)
        if prob.O is not None:
            W = prob.O @ w
            obj_w = _margin.primal_objective(W, model.X, data, C)
            if obj_w < objective:
                weights, objective = W, obj_w
    else:
        objective = model.objective(weights, C)
    lower = model.lower_bound(alpha, C)
    converged = converged and reached(relative_gap(objective, lower), tol)
    extras = {"coefficients": _margin.coefficients(alpha, data)}
    split = getattr(model, "split_weights", None)  # Crammer-Singer's bias column
    if model.node_weights and split is not None:
        weights, extras["intercept"] = split(weights)
    res = Solution(weights=np.ascontiguousarray(weights), objective=float(objective),
                   lower_bound=float(lower), n_iter=n_iter, converged=converged, tol=tol,
                   dual=alpha, history=history, solve_time=time.perf_counter() - t_start,
                   solver="interior_point", name="margin model, primal-dual interior point",
                   extras=extras)
    return res
