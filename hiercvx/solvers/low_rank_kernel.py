"""Kernel margin models solved as linear ones on a low-rank factor of the kernel.

A margin model with a non-linear kernel (:mod:`hiercvx.models.margin`, thesis (4.10) with
``S = K G Q``) is solved through a pivoted-Cholesky factor of its training Gram matrix::

    K = L L^T + R,   L (n, r),   R PSD,   trace(R) <= rtol * trace(K)   (or r = max_rank)

The factor's rows are features: the *linear* model on ``L`` (node weights ``W`` ``(M, r)``,
the same pairs, losses and class attributes) is the kernel model restricted to functions
spanned by the kernel at the pivots ``S`` (a Nystrom approximation, Williams & Seeger, "Using
the Nystrom method to speed up kernel machines", NIPS 2000).  Any linear solver of the margin
engine then applies (:func:`solve` takes it as a callable); the kernel problem never forms its
Gram matrix in the solver.

Mapping back (exact, not an approximation): with ``W' = Lam^T B`` the part of ``W`` that
class scores see (``B = Q^{-1} Lam W``), the representer coefficients are ``G_S = L_S^{-T}
B^T`` on the pivot rows and 0 elsewhere.  Because the pivoted Cholesky reproduces the pivot
columns (``K[:, S] = L L_S^T``), the *exact* kernel model at ``G`` has the training scores
``L W'^T Lam^T`` and the norm ``||W'||``: its objective equals the linear model's at ``W'``.
Predictions are kernel rows against the pivots times ``G_S Q`` (the estimators' ``K G Q``).

Certificates.  The returned :class:`~hiercvx.result.Solution` certifies the rank-``r``
problem (``objective``, ``lower_bound``, ``converged`` are the linear solver's, at ``W'``);
``objective`` is also the exact kernel problem's value at the returned ``G``, an upper bound
on its optimum.  ``extras["kernel_approximation"]`` (:class:`KernelApproximation`) says that
the kernel was approximated, with what rank and residual trace, and bounds the exact problem
from below: the dual (4.14) with the exact ``K`` at the solver's dual point,
``D_K(alpha) = D_{LL^T}(alpha) - 1/2 tr(G_a^T R G_a Q)`` (weak duality), with
``tr(Z^T R Z)`` (``Z = G_a Lam``) computed in kernel blocks up to ``exact_bound_max_samples``
samples and bounded by ``trace(R) ||Z||_F^2`` (``lambda_max(R) <= trace(R)``) above.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg as sla

from ..exceptions import InputError
from ..kernels import Kernel
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..models.multiclass import MulticlassModel
from ..result import Solution, relative_gap
from .primitives import pivoted_cholesky as _pivoted_cholesky

logger = logging.getLogger(__name__)

__all__ = ["Options", "KernelFactor", "KernelApproximation", "applies", "factor",
           "pivoted_cholesky", "linear_twin", "solve"]


@dataclass(frozen=True)
class Options:
    """When and how finely the kernel is factored.  Each default with its reason.

    Attributes
    ----------
    rtol : float
        Stop the pivoted Cholesky when the residual trace is at most ``rtol * trace(K)``: a
        Gaussian kernel at the median bandwidth on a few dozen standardized features (the
        Clus-HMC gene data) reaches 1e-2 at about a thousand columns and 1e-3 only near full
        rank, and one percent of the kernel's variance left out is below the noise of such data.
    max_rank : int
        At most this many columns, whatever ``rtol``: bounds the linear problem's dimension and
        the factor's ``n * max_rank`` memory (the residual trace reached is reported).
    from_samples : int or None
        Factor the kernel of models with at least this many samples (None: never); below, the
        exact kernel solvers are fast and certify the exact problem.
    exact_when_affordable : bool
        Leave the model to the exact solvers when the caller says one is affordable (the
        interior point on a round-off-level factor of the kernel): same cost, exact certificate.
    exact_bound_max_samples : int
        Up to this many samples the exact problem's lower bound computes ``tr(Z^T R Z)`` in
        kernel blocks (``n^2`` kernel evaluations); above, it uses ``trace(R) ||Z||_F^2``.
    block_rows : int
        Rows of the kernel formed at a time (diagonal, exact bound): bounded memory.
    """

    rtol: float = 1e-2
    max_rank: int = 1000
    from_samples: int | None = 1000
    exact_when_affordable: bool = True
    exact_bound_max_samples: int = 5000
    block_rows: int = 512

    def __post_init__(self):
        if not (np.isfinite(self.rtol) and 0 <= self.rtol < 1):
            raise InputError(f"rtol must be in [0, 1), got {self.rtol!r}")
        if int(self.max_rank) < 1:
            raise InputError(f"max_rank must be a positive integer, got {self.max_rank!r}")
        if self.from_samples is not None and int(self.from_samples) < 0:
            raise InputError(f"from_samples must be None or a non-negative integer, got "
                             f"{self.from_samples!r}")
        if int(self.block_rows) < 1:
            raise InputError(f"block_rows must be a positive integer, got {self.block_rows!r}")


@dataclass(frozen=True)
class KernelFactor:
    """``K = L L^T + R`` (module docstring): ``L`` ``(n, r)``, the pivot rows ``pivots``
    (``L[pivots]`` lower triangular), ``residual_trace = trace(R)`` and ``trace = trace(K)``."""

    L: np.ndarray
    pivots: np.ndarray
    residual_trace: float
    trace: float

    @property
    def rank(self) -> int:
        return int(self.L.shape[1])

    @property
    def relative_residual(self) -> float:
        """``trace(R) / trace(K)``."""
        return self.residual_trace / self.trace if self.trace > 0 else 0.0

    def coefficients(self, B: np.ndarray) -> np.ndarray:
        """``G_S = L_S^{-T} B^T`` ``(r, q)``: the representer coefficients on the pivots of
        the class-space weights ``B`` ``(q, r)`` (``W' = Lam^T B``)."""
        LS = np.tril(self.L[self.pivots])
        return sla.solve_triangular(LS, np.asarray(B, dtype=float).T, lower=True, trans="T",
                                    check_finite=False)


@dataclass(frozen=True)
class KernelApproximation:
    """What a solution on a kernel factor says about the exact kernel problem.

    Attributes
    ----------
    rank : int
        Columns of the factor ``L``.
    residual_trace, relative_residual : float
        ``trace(K - L L^T)`` and its share of ``trace(K)``.
    objective : float
        The exact kernel problem's objective at the returned coefficients (equal to the
        rank-``r`` problem's: an upper bound on the exact optimum).
    lower_bound : float
        A lower bound on the exact problem's optimum (the dual with the exact kernel at the
        solver's dual point; ``nan`` when the solver returned no dual point).
    exact_bound : bool
        Whether ``tr(Z^T R Z)`` was computed (True) or bounded by ``trace(R) ||Z||_F^2``.
    """

    rank: int
    residual_trace: float
    relative_residual: float
    objective: float
    lower_bound: float
    exact_bound: bool

    @property
    def gap(self) -> float:
        """The relative gap of the exact kernel problem: approximation and optimization."""
        return relative_gap(self.objective, self.lower_bound)


def applies(model, options: Options, exact_affordable: Callable[[MarginModel], bool]) -> bool:
    """Whether :func:`solve` takes ``model``: a hierarchical margin model (not the flat
    Crammer–Singer one) with a non-linear kernel and class attributes, at least
    ``options.from_samples`` samples, and (with ``options.exact_when_affordable``)
    ``exact_affordable(model)`` False: the caller's test that an exact kernel solver is cheap,
    e.g. the interior point's."""
    if options.from_samples is None or not isinstance(model, MarginModel) \
            or isinstance(model, MulticlassModel):
        return False
    if model.node_weights or model.data.Lam is None:
        return False
    if model.data.n_samples < options.from_samples:
        return False
    return not (options.exact_when_affordable and exact_affordable(model))


def _kernel_block(model: MarginModel, rows) -> np.ndarray:
    """``K[rows]`` of the model's training kernel (with its bias)."""
    if model.precomputed:
        return np.asarray(model.X[rows], dtype=float)
    return np.asarray(model.kernel(model.X[rows], model.X), dtype=float)


def _kernel_diagonal(model: MarginModel, block: int) -> np.ndarray:
    n = model.X.shape[0]
    if model.precomputed:
        return np.array(np.diag(model.X), dtype=float)
    out = np.empty(n)
    for start in range(0, n, block):
        Xb = model.X[start:start + block]
        out[start:start + block] = np.diag(np.asarray(model.kernel(Xb, Xb), dtype=float))
    return out


def pivoted_cholesky(diagonal: np.ndarray, column: Callable[[int], np.ndarray], *,
                     rtol: float, max_rank: int) -> KernelFactor:
    """Greedy pivoted Cholesky of a PSD matrix given by its ``diagonal`` and ``column(j)``.

    Each step takes the largest residual diagonal as pivot (Harbrecht, Peters & Schneider,
    "On the low-rank approximation by the pivoted Cholesky decomposition", Applied Numerical
    Mathematics 62, 2012); stops when the residual trace is ``<= rtol * trace``, at
    ``max_rank`` columns, or when the residual is round-off.  Pivot columns are reproduced
    exactly and ``K - L L^T`` is PSD.
    """
    L, pivots, residual = _pivoted_cholesky(diagonal, column, max_rank=max_rank, rtol=rtol,
                                            rule="trace", floor=1e-12)
    return KernelFactor(L, pivots, float(residual.sum()), float(np.sum(diagonal)))


def factor(model: MarginModel, options: Options | None = None) -> KernelFactor:
    """The pivoted-Cholesky factor of ``model``'s training kernel (with its bias), columns
    formed on demand (never the ``n x n`` Gram matrix unless the model holds it)."""
    options = Options() if options is None else options
    if model.precomputed or model._K is not None:
        K = model.K
        return pivoted_cholesky(np.diag(K), lambda j: K[:, j], rtol=options.rtol,
                                max_rank=options.max_rank)
    X, kernel = model.X, model.kernel
    return pivoted_cholesky(_kernel_diagonal(model, options.block_rows),
                            lambda j: kernel(X, X[j:j + 1]), rtol=options.rtol,
                            max_rank=options.max_rank)


def linear_twin(model: MarginModel, kf: KernelFactor) -> MarginModel:
    """The linear model on the factor's rows: ``model`` (same type, pairs, losses, class
    attributes, hierarchy) with features ``L`` and the linear kernel, no separate bias (the
    model's bias lives in its kernel, hence in ``L``)."""
    twin = copy.copy(model)
    MarginModel.__init__(twin, kf.L, model.data, Kernel("linear"), classes=model.classes)
    return twin


def _class_weights(W: np.ndarray, data: _margin.MarginData) -> np.ndarray:
    """``B`` ``(q, r)`` with ``Lam^T B`` the projection of ``W`` on the row space of ``Lam``:
    ``Q B = Lam W`` (the class scores of ``W`` and ``Lam^T B`` agree)."""
    LW = np.asarray(_margin.sparse_attributes(np.asarray(data.Lam, dtype=float)) @ W)
    try:
        return sla.solve(data.Q, LW, assume_a="pos", check_finite=False)
    except (sla.LinAlgError, ValueError):
        return sla.lstsq(data.Q, LW, check_finite=False)[0]


def _residual_quadratic(model, kf: KernelFactor, Z: np.ndarray, options: Options):
    """``(tr(Z^T R Z) or its bound, exact)`` for ``R = K - L L^T`` (module docstring)."""
    n = Z.shape[0]
    if n > options.exact_bound_max_samples:
        return kf.residual_trace * float(np.sum(Z * Z)), False
    total = 0.0
    for start in range(0, n, options.block_rows):
        rows = slice(start, start + options.block_rows)
        RZ = _kernel_block(model, rows) @ Z - kf.L[rows] @ (kf.L.T @ Z)
        total += float(np.sum(Z[rows] * RZ))
    return max(total, 0.0), True


def _exact_lower_bound(model, kf: KernelFactor, dual, C: float, options: Options):
    """The exact kernel problem's lower bound at the dual point ``dual`` (module docstring)."""
    if dual is None or np.shape(dual) != (model.data.n_pairs,):
        return float("nan"), False
    values, data = _margin.on_support(dual, model.data)  # a sparse dual: its support only
    alpha = _margin.project_dual(values, data, C)
    Ga = _margin.coefficients(alpha, data)
    Z = np.asarray((_margin.sparse_attributes(np.asarray(data.Lam, dtype=float)).T @ Ga.T).T)
    low_rank = float(data.pair_offset @ alpha) - 0.5 * float(np.sum((kf.L.T @ Z) ** 2))
    quad, exact = _residual_quadratic(model, kf, Z, options)
    return low_rank - 0.5 * quad, exact


def solve(model: MarginModel, C: float, solve_linear: Callable[[MarginModel], Solution], *,
          options: Options | None = None, verbose: bool = False) -> Solution:
    """Solve the kernel model ``model`` as the linear model on its kernel factor.

    Parameters
    ----------
    model : MarginModel
        A margin model with a non-linear kernel and class attributes.
    C : float
        The regularization constant (the solution's certificate is at this ``C``).
    solve_linear : callable
        ``solve_linear(linear_model) -> Solution``: the linear solver (the margin engine).
    options : Options
        The factor's settings.
    verbose : bool
        Print the factor's rank and residual.

    Returns
    -------
    Solution
        ``weights`` and ``extras["coefficients"]``: ``G`` ``(n, q)``, non-zero on the pivot
        rows; ``objective`` / ``lower_bound`` certify the rank-``r`` problem;
        ``extras["kernel_approximation"]``: :class:`KernelApproximation`.
    """
    options = Options() if options is None else options
    if model.node_weights or model.data.Lam is None:
        raise InputError("the low-rank kernel path needs a non-linear kernel and class "
                         "attributes (a model with node weights is linear already)")
    t0 = time.perf_counter()
    kf = factor(model, options)
    (logger.info if verbose else logger.debug)(
        "low_rank_kernel: rank %d of %d, residual trace %.2e of trace(K)", kf.rank,
        model.data.n_samples, kf.relative_residual)
    twin = linear_twin(model, kf)
    res = solve_linear(twin)
    B = _class_weights(np.asarray(res.weights, dtype=float), model.data)
    W = np.asarray(_margin.sparse_attributes(np.asarray(model.data.Lam, dtype=float)).T @ B)
    objective = _margin.primal_objective(W, kf.L, model.data, C)
    G = np.zeros((model.data.n_samples, model.data.n_classes))
    if kf.rank:
        G[kf.pivots] = kf.coefficients(B)
    lower_exact, exact = _exact_lower_bound(model, kf, res.dual, C, options)
    approx = KernelApproximation(kf.rank, kf.residual_trace, kf.relative_residual,
                                 float(objective), float(lower_exact), exact)
    extras = {k: v for k, v in res.extras.items() if k not in ("coefficients", "intercept")}
    extras.update(coefficients=G, kernel_approximation=approx, kernel_pivots=kf.pivots)
    return dataclasses.replace(
        res, weights=G, objective=float(objective), extras=extras,
        solve_time=time.perf_counter() - t0,
        name=f"{res.name or res.solver} on a rank-{kf.rank} pivoted-Cholesky factor of the "
             f"kernel (residual trace {kf.relative_residual:.1e} of trace(K))")
