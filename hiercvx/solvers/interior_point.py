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
from typing import NamedTuple
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numba import njit

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, reached, relative_gap
from . import _interior_point_kernels as _k
from .primitives import blas_threads, centrality_correctors, kronecker_sum

logger = logging.getLogger(__name__)

__all__ = ["Options", "solve", "solve_pair_rows", "PairRows", "row_step_cost", "step_cost",
           "applicable", "feature_dimension", "low_rank_factor"]

#: the low-rank kernel factor found for each model, while the model lives (a cache: the
#: search is asked by :func:`applicable`, :func:`step_cost` and :func:`solve` alike)
_FACTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Options:
    """Settings of the interior point.  Each default with its reason:

    max_dimension : the largest primal dimension ``r d`` factorized densely (memory
        ``8 (r d)^2`` bytes, 288 MB at 6000; a step then costs about ``(r d)^3 / 3 = 7e10``
        multiply-adds, where the coordinate methods are the better choice above).
    max_step_cost : above this many multiply-adds per Newton step (a few seconds of dense
        BLAS) the coordinate methods are preferred (:func:`applicable`).
    max_feature_entries : the dense features (or kernel factor) kept: at most this many
        numbers (800 MB).
    low_rank_rtol : a kernel factor may drop a PSD residual of this trace, relative to the
        kernel's (a few hundred roundings: the certificate is computed on the full kernel).
    low_rank_search_cost : multiply-adds the pivoted-Cholesky search for a low-rank kernel
        factor may spend (``n max_rank^2``), a small share of one Newton step.
    block : examples per block when the Newton matrix is accumulated (bounds the memory of
        the ``T_i``).
    gemm_min_features, gemm_max_rows : pair rows with more features than this and at most
        that many rows form the Newton matrix by products ``F^T diag(t) F`` (compute-bound)
        instead of per-example triangles (memory-bound).
    keep_products : the feature products ``F_ij F_ij'`` are kept between Newton steps up to
        this many numbers (160 MB).
    step_fraction : the fraction of the step to the boundary taken (Mehrotra, "On the
        implementation of a primal-dual interior point method", SIAM J. Optim. 2, 1992;
        0.99 as in Wright, *Primal-Dual Interior-Point Methods*, SIAM 1997, ch. 10).
    init : the starting multipliers use this share of every budget (well inside the box).
    shift : the starting slacks lie this far above every pair's requirement at ``w = 0``.
    max_correctors : Gondzio's centrality correctors per Newton step (Gondzio, "Multiple
        centrality corrections in a primal-dual method for linear programming", Comput.
        Optim. Appl. 6, 1996): each one more solve with the step's factorization.
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
    n = K.shape[0]
    resid = np.array(np.diag(K), dtype=float)
    total = resid.sum()
    if n == 0 or total <= 0:
        return None
    F = np.zeros((n, min(max_rank, n)))
    for k in range(F.shape[1] + 1):
        if resid.sum() <= rtol * total:
            return F[:, :k]
        if k == F.shape[1]:
            return None
        j = int(np.argmax(resid))
        column = np.asarray(K[:, j], dtype=float) - F[:, :k] @ F[j, :k]
        F[:, k] = column / np.sqrt(resid[j])
        resid = np.maximum(resid - F[:, k] ** 2, 0.0)
        resid[j] = 0.0
    return None


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
# Compiled pieces: per-example blocks of the Newton matrix
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

class _PairProblem:
    """What the Newton iteration needs of a primal with pair rows, whatever their form: the
    pair data (``ptr``, ``pi``, ``b``, ``c``, budgets ``C``), the certificate pieces here, and
    ``scores``, ``pair_products``, ``scatter``, ``class_adjoint``, ``newton_matrix`` from the
    subclass.  ``reports_iterate``: the iterate ``w`` is itself the answer's weights, so its
    primal value may certify too."""

    reports_iterate = False

    def adjoint(self, values):
        """``A^T values`` as an ``(r, d)`` matrix."""
        return self.class_adjoint(self.scatter(values))

    def primal(self, w, S=None):
        S = self.scores(w) if S is None else S
        viol = (self.b - self.pair_products(S)) / self.c
        xi = np.empty(self.n)
        _k.pair_max(self.ptr, viol, xi)
        return 0.5 * float(np.sum(w * w)) + float(self.C @ xi)

    def dual(self, alpha):
        """The dual at ``alpha`` projected onto its feasible set (thesis (4.14) / (4.15))."""
        a_hat = self.project(alpha)
        w_hat = self.adjoint(a_hat)
        return float(self.b @ a_hat) - 0.5 * float(np.sum(w_hat * w_hat)), a_hat, w_hat

    def project(self, alpha):
        """``alpha`` clipped at 0 and scaled into every example's budget."""
        a = np.maximum(alpha, 0.0)
        used = np.empty(self.n)
        _k.pair_sums(self.ptr, self.c * a, used)
        over = used > self.C
        if over.any():
            scale = np.ones(self.n)
            scale[over] = self.C[over] / used[over]
            a *= scale[self.pi]
        return a


class _Factored(_PairProblem):
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


class PairRows(_PairProblem):
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


def solve_pair_rows(F, R, ptr, b, c, C, *, tol: float = 1e-8, max_iter: int = 100,
                    verbose: bool = False, options: Options | None = None) -> Solution:
    """The primal of :class:`PairRows` by the same Mehrotra predictor-corrector as :func:`solve`.

    Returns a :class:`~hiercvx.result.Solution`: ``weights`` ``w`` ``(r, d)`` (the iterate or the
    dual point's weights, whichever has the lower primal), ``objective`` that primal,
    ``lower_bound`` the dual at the projected multipliers ``dual`` ``(P,)``; no warning (the
    caller, a cutting-plane loop, decides what an unconverged master means); ``options``:
    :class:`Options`.
    """
    t_start = time.perf_counter()
    options = _DEFAULT if options is None else options
    prob = PairRows(F, R, ptr, b, c, C, options)
    if prob.dim > options.max_dimension:
        raise InputError(f"the interior-point method factorizes a dense ({prob.dim}, {prob.dim}) "
                         f"matrix, above its limit {options.max_dimension} "
                         "(Options.max_dimension)")
    with blas_threads(1):
        w, alpha, n_iter, converged, history = _mehrotra(prob, float(tol), int(max_iter), verbose,
                                                         t_start, options)
    lower, alpha, w_dual = prob.dual(alpha)
    objective = prob.primal(w_dual)
    obj_w = prob.primal(w)
    if obj_w < objective:
        objective, w_dual = obj_w, w
    return Solution(weights=np.ascontiguousarray(w_dual), objective=float(objective),
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
        w, alpha, n_iter, converged, history = _mehrotra(prob, float(tol), int(max_iter),
                                                         verbose, t_start, options)
    return _result(model, prob, w, alpha, C, float(tol), n_iter, converged, history, t_start,
                   warn)


class _Iterate(NamedTuple):
    """A point of the interior-point iteration: weights ``w``, slacks ``xi`` (one per
    example), pair multipliers ``alpha``, pair slacks ``s`` and multipliers ``mu`` of
    ``xi >= 0``."""

    w: np.ndarray
    xi: np.ndarray
    alpha: np.ndarray
    s: np.ndarray
    mu: np.ndarray

    def moved(self, t, step):
        """The iterate ``t`` along ``step = (dw, dxi, dalpha, ds, dmu)``."""
        return _Iterate(*(v + t * d for v, d in zip(self, step)))


def _start(prob: _PairProblem, options: Options) -> _Iterate:
    """``w = 0``, ``xi`` above every pair's requirement, a share of every budget used."""
    n, b, c, ptr = prob.n, prob.b, prob.c, prob.ptr
    need = np.empty(n)
    _k.pair_max(ptr, b / c, need)
    xi = need + options.shift
    s = c * xi[prob.pi] - b
    csum = np.empty(n)
    _k.pair_sums(ptr, c, csum)
    # examples without pairs (a cutting plane's master before their first cut) take no share
    alpha = options.init * np.divide(prob.C, csum, out=np.zeros(n), where=csum > 0)[prob.pi]
    used = np.empty(n)
    _k.pair_sums(ptr, c * alpha, used)
    return _Iterate(np.zeros((prob.r, prob.d)), xi, alpha, s, prob.C - used)


class _NewtonSystem:
    """The Newton system at an iterate, its matrix factorized once (module docstring):
    :meth:`direction` solves it for any complementarity right-hand sides."""

    def __init__(self, prob: _PairProblem, it: _Iterate, residuals):
        self.prob, self.it = prob, it
        self.r_p, self.r_xi, self.r_w = residuals
        c = prob.c
        self.D = it.alpha / it.s
        self.E = it.mu / it.xi
        self.cD = c * self.D
        self.tmp = np.empty(prob.n)
        _k.pair_sums(prob.ptr, c * self.cD, self.tmp)
        self.delta = self.tmp + self.E
        H, self.V = prob.newton_matrix(self.D, self.cD, self.delta)
        self.chol = sla.cho_factor(H, lower=False, check_finite=False)

    def direction(self, r_s, r_mu):
        """Newton direction for the complementarity residuals ``r_s``, ``r_mu`` (and the
        linear residuals of the iterate)."""
        prob, it, c = self.prob, self.it, self.prob.c
        D, E, V, delta, tmp = self.D, self.E, self.V, self.delta, self.tmp
        e = -D * self.r_p - r_s / it.s
        _k.pair_sums(prob.ptr, c * e, tmp)
        h = -self.r_xi - r_mu / it.xi + tmp
        G = prob.scatter(e)
        G -= V * (h / delta)[:, None]
        rhs = prob.class_adjoint(G) - self.r_w
        dw = sla.cho_solve(self.chol, rhs.ravel(), check_finite=False).reshape(it.w.shape)
        Sd = prob.scores(dw)
        dxi = (h - np.einsum("ic,ic->i", V, Sd)) / delta
        dalpha = -D * (prob.pair_products(Sd) + c * dxi[prob.pi]) + e
        ds = (-r_s - it.s * dalpha) / it.alpha
        dmu = -E * dxi - r_mu / it.xi
        return dw, dxi, dalpha, ds, dmu

    def step_length(self, step) -> float:
        """The longest step ``t <= 1`` along ``step`` that keeps the iterate positive."""
        it = self.it
        _, dxi, dalpha, ds, dmu = step
        return _k.step_to_boundary(it.alpha, dalpha, it.s, ds, it.xi, dxi, it.mu, dmu)

    def predictor_corrector(self, comp, mu_avg, max_correctors):
        """Mehrotra's predictor (affine scaling) and corrector with centring ``sigma =
        (comp_aff / comp)^3``, then Gondzio's centrality correctors
        (:func:`~.primitives.centrality_correctors`).  Returns the step and its length."""
        it = self.it
        dw, dxi, dalpha, ds, dmu = self.direction(it.alpha * it.s, it.mu * it.xi)
        t = self.step_length((dw, dxi, dalpha, ds, dmu))
        comp_aff = float((it.alpha + t * dalpha) @ (it.s + t * ds)
                         + (it.mu + t * dmu) @ (it.xi + t * dxi))
        target = (comp_aff / comp) ** 3 * mu_avg
        rhs = (target - it.alpha * it.s - dalpha * ds, target - it.mu * it.xi - dmu * dxi)

        def newton(rc_s, rc_mu):  # the products' asked change -> the direction
            return self.direction(-rc_s, -rc_mu)

        step = newton(*rhs)
        return centrality_correctors(newton, self.step_length, step, self.step_length(step),
                                     rhs, ((it.alpha, it.s, 2, 3), (it.mu, it.xi, 4, 1)), target,
                                     max_correctors=max_correctors)


def _residuals(prob: _PairProblem, it: _Iterate, S):
    """The linear residuals of the iterate: pair rows, stationarity in ``xi`` and in ``w``."""
    used = np.empty(prob.n)
    _k.pair_sums(prob.ptr, prob.c * it.alpha, used)
    r_w = it.w - prob.adjoint(it.alpha)
    r_xi = prob.C - used - it.mu
    r_p = prob.pair_products(S) + prob.c * it.xi[prob.pi] - prob.b - it.s
    return r_p, r_xi, r_w


def _certify(prob: _PairProblem, it: _Iterate, S):
    """``(primal, dual, a_hat)``: the dual at the projected multipliers, the primal at their
    weights (thesis (4.12)) or at the iterate itself when it is the answer's weights."""
    dual, a_hat, w_hat = prob.dual(it.alpha)
    primal = prob.primal(w_hat)
    if prob.reports_iterate:
        primal = min(primal, prob.primal(it.w, S))
    return primal, dual, a_hat


def _mehrotra(prob: _PairProblem, tol, max_iter, verbose, t_start, options: Options = _DEFAULT):
    """The primal-dual iteration to a certified relative gap ``tol``.  Returns ``(w, alpha,
    n_iter, converged, history)``: the last iterate, or the best certified one when it did
    not converge."""
    log = logger.info if verbose else logger.debug
    history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "time")}
    if prob.n == 0:  # nothing constrains w: the optimum is 0
        return np.zeros((prob.r, prob.d)), np.zeros(0), 0, True, history
    it = _start(prob, options)
    best = (np.inf, None, None)
    n_iter, converged = 0, False
    for n_iter in range(1, max_iter + 1):
        S = prob.scores(it.w)
        residuals = _residuals(prob, it, S)
        comp = float(it.alpha @ it.s + it.mu @ it.xi)
        mu_avg = comp / (prob.b.size + prob.n)
        primal, dual, a_hat = _certify(prob, it, S)
        gap = relative_gap(primal, dual)
        for key, val in (("n_iter", n_iter - 1), ("objective", primal), ("lower_bound", dual),
                         ("gap", gap), ("time", time.perf_counter() - t_start)):
            history[key].append(val)
        log("step %d: primal %.12g dual %.12g gap %.3e mu %.3e", n_iter - 1, primal, dual, gap,
            mu_avg)
        if gap < best[0]:
            best = (gap, it.w.copy(), a_hat)
        if reached(gap, tol):
            converged = True
            n_iter -= 1
            break
        try:
            system = _NewtonSystem(prob, it, residuals)
        except (np.linalg.LinAlgError, ValueError):
            log("step %d: the Newton matrix is not positive definite; stopping", n_iter)
            break
        step, t = system.predictor_corrector(comp, mu_avg, options.max_correctors)
        t *= options.step_fraction
        if t < 1e-12:  # blocked at the boundary: round-off has taken over
            log("step %d: step length %.1e; stopping", n_iter, t)
            break
        it = it.moved(t, step)
    else:
        n_iter = max_iter
    if not converged and best[1] is not None:  # report the best certified iterate
        return best[1], best[2], n_iter, False, history
    return it.w, prob.project(it.alpha), n_iter, converged, history


def _result(model, prob, w, alpha_f, C, tol, n_iter, converged, history, t_start,
            warn=True) -> Solution:
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
    if warn:
        res.warn_unless_converged("Newton steps", stacklevel=4)
    return res
