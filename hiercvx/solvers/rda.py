"""Regularized dual averaging with optimality bounds (Zhou, Xiao, Wu 2011, Algorithm 1).

Solves orthogonal transfer (4) and the four baselines of section 5 (FLATMULT (12), HIERMULT,
TRANSFER, TREELOSS) in their unconstrained form (7), ``J(W) = R(W) + H(W)``: ``R`` the
regularizer, ``H`` the hinge with the slacks eliminated, both held by the model of
:func:`hiercvx.models.orthogonal.prepare` (:class:`~hiercvx.models.orthogonal.PairModel`).
Every regularizer here is ``R(W) = 1/2 tr(W^T S(W) W)``: for (4) ``S(W) = K o sign(W W^T)`` with ``K_ii`` on the
diagonal (then ``R = Omega`` (5) and ``S(W) W`` is Theorem 4's subgradient); for the baselines
``S`` is a fixed matrix (``I``, or ``I + E^T E`` for TRANSFER), so they are strongly convex too.

Splitting (8) of section 4.3: ``J = phi + Psi`` with ``Psi(W) = 1/2 tr(W^T P W)`` and
``phi = R - Psi + H``; step 2, (9), is then ``W(t+1) = -P^{-1} gbar(t)`` ((11) when
``P = sigma I``).  ``phi`` is convex when every ``S(W) - P`` is PSD.  ``psi`` chooses P for (4):

* ``"identity"`` (the paper): ``P = lambda_min(Kbar) I`` (Corollary 2);
* ``"diagonal"``: ``P = mu diag(K)``, ``mu = lambda_min(D^{-1/2} Kbar D^{-1/2})``, ``D = diag(K)``
  (``Kbar - P`` is PSD too; the larger ``K_ii`` of the upper nodes stay in Psi);
* ``"averaged"`` (default): the next point minimizes the *averaged quadratic minorant*
  ``1/2 tr(W^T Sbar W) - <Ubar, W> + sum abar`` of J (below), ``W(t+1) = Sbar^{-1} Ubar``: the
  RDA step with ``Psi_t = 1/2 tr(W^T Sbar_t W)``, i.e. conditional gradient (Frank--Wolfe) with
  step ``a_t / sum a`` on the dual.  The paper's splitting needs ``t >> lambda_max(K) / sigma``
  iterations before its iterates settle (they first grow like ``(lambda_max/sigma)^t / t!``).

The baselines always use ``P = S`` (the whole regularizer; ``phi = H``).

Bounds, per iteration, with averaging weights ``a_t`` (``averaging="uniform"``: ``a_t = 1``, the
paper; ``"linear"`` (default): ``a_t = t``, which removes the ``ln t`` of (10); every bound
below holds for any positive weights):

* upper: ``min_tau J(W(tau))`` (step 3);
* lower, the paper's (step 4): ``delta(t) + min_W {gbar(t) . W + 1/2 tr(W^T P W)}``, with
  ``delta(t)`` the average of ``phi(W(tau)) - g(tau) . W(tau)``, kept as a running maximum
  (the paper's step 4 reads ``max{J_low(t), J(t+1)}``; it must be ``J_low(t+1)``).  It holds
  whatever points are queried, since the minimum over W is taken exactly;
* lower, from the averaged multipliers (``dual_bound=True``): each hinge subgradient is
  ``-U(alpha(t))`` for a dual-feasible ``alpha(t)`` (``C Cw_s Delta_p`` on the most violated
  pair of slack s, 0 elsewhere) and each ``S(W(t))`` lies in the box ``{S_ii = K_ii,
  |S_ij| <= K_ij}``; the averages stay feasible, and ``Omega >= 1/2 tr(W^T Sbar W)``, so
  ``sum abar - 1/2 tr(Ubar^T Sbar^{-1} Ubar)`` is a lower bound (the bound of
  ``model.lower_bound``, the certificate of :func:`hiercvx.formulations.orthogonal.primal`).
  It is never below the paper's (which linearizes the convex quadratic
  ``1/2 tr(W^T (S - P) W)`` that this one keeps); for the baselines the two coincide.

It stops when ``stopping_gap(upper, lower, J(0)) <= tol`` (:func:`hiercvx.result.certified_by`:
the relative gap, with at least ``1 - sqrt(tol)`` of the decrease from ``W = 0`` certified; or
an optimum of zero to round-off), with ``upper`` the best iterate after the start: the starting
point ``W = 0`` alone certifies nothing (its relative gap is below ``tol`` whenever the whole
decrease from zero is, at a tiny ``C`` or on a few samples) unless the bound reaches ``J(0)``.  Cost per
iteration: one product ``X W^T`` (``O(nnz(X) m)``), one scatter of the chosen rows of X
(``O(nnz(X))``, numba) and ``O(m^2 d + m^3)`` for the regularizer and the bounds.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._validation import check_positive
from ..exceptions import InputError
from ..models import orthogonal as otm
from ..result import Solution, check_iteration_options, reached, stopping_gap
from ._rda_kernels import scatter_csr, scatter_dense
from .primitives import blas_threads

logger = logging.getLogger(__name__)

__all__ = ["solve", "Options", "Regularizer", "regularizer_for", "Hinge", "PSI_CHOICES", "AVERAGING"]

#: The values of ``psi`` (:class:`~hiercvx.solvers.rda.Options`): how ``P`` is chosen for (4),
#: as the module docstring describes.
PSI_CHOICES = ("identity", "diagonal", "averaged")
#: The values of ``averaging`` (:class:`~hiercvx.solvers.rda.Options`): the weights ``a_t``
#: of the averages.
AVERAGING = ("uniform", "linear")


@dataclass(frozen=True)
class Options:
    """Settings of :func:`solve`.

    Attributes
    ----------
    tol : float
        Stop when ``stopping_gap(upper, lower, J(0)) <= tol``
        (:func:`hiercvx.result.stopping_gap`).
    max_iter : int
        Subgradient steps; a ``ConvergenceWarning`` when they run out (Algorithm 1's gap shrinks
        like ``O(ln t / t)``, so many cheap steps).
    psi : str
        The splitting for (4), one of :data:`~hiercvx.solvers.rda.PSI_CHOICES` (module
        docstring); ``"averaged"`` because the paper's ``"identity"`` needs
        ``t >> lambda_max(K) / sigma`` steps to settle.
    averaging : str
        ``"linear"`` weights ``a_t = t``, which removes the ``ln t`` of (10) (any positive
        weights keep the bounds); ``"uniform"`` is the paper's.
    dual_bound : bool
        Also use the lower bound of the averaged multipliers (module docstring): never below the
        paper's.
    sparse_omega_density : float
        Omega's ``S(W)`` is kept on K's sparse pattern when K has at most this fraction of
        nonzeros ...
    sparse_omega_min : int
        ... and more than this many rows: wide sibling groups (K = I on a star) then cost
        ``O(nnz(K) d)`` per step instead of a dense ``m x m`` product and Cholesky.
    log_every : int
        Progress is logged every this many steps.
    """

    tol: float = 1e-4
    max_iter: int = 100_000
    psi: str = "averaged"
    averaging: str = "linear"
    dual_bound: bool = True
    sparse_omega_density: float = 0.1
    sparse_omega_min: int = 200
    log_every: int = 1000

    def __post_init__(self):
        check_iteration_options(self.tol, self.max_iter, who="RDA")
        if self.averaging not in AVERAGING:
            raise InputError(f"averaging must be one of {AVERAGING}, got {self.averaging!r}")
        if self.psi not in PSI_CHOICES:
            raise InputError(f"psi must be one of {PSI_CHOICES}, got {self.psi!r}")
        if not 0.0 <= self.sparse_omega_density <= 1.0:
            raise InputError(f"sparse_omega_density must lie in [0, 1], got {self.sparse_omega_density!r}")


# =============================================================================== regularizers
class Regularizer:
    """``R(W) = 1/2 tr(W^T S(W) W)`` over the rows of the variable nodes, and the split
    ``Psi(W) = 1/2 tr(W^T P W)`` of section 4.3.

    ``kind="omega"``: ``matrix`` is K (Omega (5), sign pattern re-read at every W);
    ``kind="quadratic"``: ``matrix`` is a fixed PD ``S``.  ``P`` is a 1-D diagonal or a full
    PD matrix.  ``sigma`` is the strong-convexity constant of ``Psi`` (``lambda_min(P)``).
    ``averaged``: step 2 minimizes the averaged quadratic minorant instead (module doc).
    ``S(W)`` of Omega is kept on K's sparse pattern when K has more than ``sparse_min`` rows
    and at most ``sparse_density`` of its entries are nonzero (:class:`Options`).
    """

    def __init__(self, kind: str, matrix: np.ndarray, P: np.ndarray, averaged: bool = False, *,
                 sparse_density: float = 0.1, sparse_min: int = 200):
        if kind not in ("omega", "quadratic"):
            raise InputError(f"kind must be 'omega' or 'quadratic', got {kind!r}")
        self.kind = kind
        self.matrix = np.asarray(matrix, dtype=float)
        P = np.asarray(P, dtype=float)
        self.P = P
        if P.ndim == 1:
            if not np.all(P > 0):
                raise InputError("Psi's diagonal must be positive (a strongly convex Psi)")
            self.sigma = float(P.min())
            self._chol = None
        else:
            self._chol = sla.cho_factor(P, lower=True)
            self.sigma = float(np.linalg.eigvalsh(P)[0])
        if kind == "quadratic":
            self._S_chol = sla.cho_factor(self.matrix, lower=True)
        self.averaged = bool(averaged)  # step 2 from the averaged quadratic minorant
        m = self.matrix.shape[0]
        self.sparse = (kind == "omega" and m > sparse_min
                       and np.count_nonzero(self.matrix) <= sparse_density * m * m)
        if self.sparse:  # K's pattern, fixed: S(W) only changes its off-diagonal signs
            Ks = sp.csr_matrix(self.matrix + 0.0 * np.eye(m))  # keep the diagonal stored
            Ks.sort_indices()
            self._Ks = Ks
            self._rows = np.repeat(np.arange(m), np.diff(Ks.indptr))
            self._cols = Ks.indices
            self._offdiag = self._rows != self._cols
            self._blocks = otm.coupled_blocks(Ks)

    def empty_S(self):
        """The zero matrix in ``S(W)``'s storage (dense, or K's sparse pattern)."""
        if self.sparse:
            out = self._Ks.copy()
            out.data = np.zeros_like(out.data)
            return out
        return np.zeros((self.size, self.size))

    def average_into(self, Sbar, S, beta: float) -> None:
        """``Sbar += beta (S - Sbar)`` in place (same storage)."""
        if self.sparse:
            Sbar.data += beta * (S.data - Sbar.data)
        else:
            Sbar += beta * (S - Sbar)

    @property
    def size(self) -> int:
        return self.matrix.shape[0]

    def pattern(self, W: np.ndarray) -> tuple[np.ndarray, float]:
        """``(S(W), R(W))``: the matrix whose ``S W`` is the subgradient (Theorem 4 for Omega)."""
        if self.kind == "quadratic":
            return self.matrix, 0.5 * float(np.sum(W * (self.matrix @ W)))
        if self.sparse:  # <w_i, w_j> only where K_ij != 0
            gram = np.einsum("ij,ij->i", W[self._rows], W[self._cols])
            S = self._Ks.copy()
            S.data = np.where(self._offdiag, S.data * np.sign(gram), S.data)
            return S, 0.5 * float(np.sum(self._Ks.data * np.abs(gram)))
        gram = W @ W.T
        S = self.matrix * np.sign(gram)
        np.fill_diagonal(S, np.diag(self.matrix))
        return S, 0.5 * float(np.sum(self.matrix * np.abs(gram)))

    def psi_apply(self, W):
        return self.P[:, None] * W if self.P.ndim == 1 else self.P @ W

    def psi_solve(self, G):
        return G / self.P[:, None] if self.P.ndim == 1 else sla.cho_solve(self._chol, G)

    def minorant_solve(self, S: np.ndarray, U: np.ndarray):
        """``(S^{-1} U, 1/2 tr(U^T S^{-1} U))``; ``(None, +inf)`` when S is not positive definite."""
        if self.kind == "quadratic":
            Z = sla.cho_solve(self._S_chol, U)
        elif self.sparse:
            Z = otm.block_cholesky_solve(S, U, self._blocks)
            if Z is None:
                return None, float("inf")
        else:
            try:
                L = np.linalg.cholesky(S)
            except np.linalg.LinAlgError:
                return None, float("inf")
            # m is small: LAPACK's general solves beat trsm's call overhead
            Z = np.linalg.solve(L.T, np.linalg.solve(L, U))
        return Z, 0.5 * float(np.sum(U * Z))


def _omega_regularizer(K: np.ndarray, psi: str, options: Options) -> Regularizer:
    """Omega (5) with the splitting ``psi``; refuses a K whose comparison matrix is singular."""
    sparse = {"sparse_density": options.sparse_omega_density, "sparse_min": options.sparse_omega_min}
    if psi not in PSI_CHOICES:
        raise InputError(f"psi must be one of {PSI_CHOICES}, got {psi!r}")
    sigma = otm.strong_convexity(K)
    if sigma <= 1e-12 * max(1.0, float(np.abs(np.diag(K)).max())):
        raise InputError(
            "the comparison matrix of K is singular (smallest eigenvalue "
            f"{sigma:.3g}): Omega is convex but not strongly convex, and Algorithm 1 needs strong "
            "convexity (Corollary 2). Lower alpha / the off-diagonal entries of K, or use the "
            "exact reference orthogonal.primal")
    if psi in ("identity", "averaged"):  # "averaged" keeps P = sigma I for the paper's bound
        return Regularizer("omega", K, np.full(K.shape[0], sigma), averaged=psi == "averaged", **sparse)
    d = np.sqrt(np.diag(K))
    Kbar = otm.comparison_matrix(K)
    mu = otm.blockwise_eigenvalue(Kbar / d[:, None] / d[None, :])
    return Regularizer("omega", K, mu * (1.0 - 1e-12) * np.diag(K), **sparse)


def regularizer_for(model: otm.PairModel, K=None, psi: str = "averaged", options: Options | None = None) -> Regularizer:
    """The regularizer of ``model.method`` over ``model.var_nodes``: Omega with ``K`` (default
    ``model.K``) for ``"orthogonal"``, the model's fixed ``S`` (``I + E^T E`` for ``"transfer"``,
    ``I`` otherwise) for the baselines.  ``options``: the sparse-storage settings."""
    if model.method == "orthogonal":
        K = model.K if K is None else K
        return _omega_regularizer(np.asarray(K, dtype=float), psi, Options() if options is None else options)
    return Regularizer("quadratic", model.S, model.S)


# =============================================================================== the hinge
class Hinge:
    """``H(W) = C sum_s Cw_s max(0, max_{p of s} Delta_p (1 - <w_pos - w_neg, x_s>))`` of a
    :class:`~hiercvx.models.orthogonal.PairModel` (class scores through ``Lam``), with its value,
    a subgradient (the most violated pair of every slack, section 4.1) and the multipliers that
    subgradient is made of."""

    def __init__(self, model, C: float):
        d = model.data
        if d.rescaling != "slack":
            raise InputError("the RDA hinge is written for slack rescaling (the margin rows of "
                             "orthogonal.prepare); got margin rescaling")
        X = model.X_slacks
        self._csr = sp.issparse(X)
        if self._csr:
            X = sp.csr_matrix(X)
            X.sort_indices()
        else:
            X = np.ascontiguousarray(X, dtype=float)
        self.X = X
        self.n_slacks = d.n_samples
        var = np.asarray(model.var_nodes)
        n_vars = len(var)
        Lam = sp.csr_matrix(d.Lam)[:, var]  # (q, n_vars), sparse: a wide tree's Lam is mostly 0
        Lam.eliminate_zeros()
        col = np.full(d.n_classes, -1)
        selection = bool(np.all(Lam.data == 1.0) and np.all(np.diff(Lam.indptr) <= 1)
                         and np.all(np.bincount(Lam.indices, minlength=n_vars) == 1))
        if selection:  # classes are nodes: a class score is one column of X W^T
            rows, cols = Lam.nonzero()
            col[rows] = cols
            pos, neg = col[d.pair_y], col[d.pair_ybar]
            if np.any(pos < 0) or np.any(neg < 0):
                raise InputError("a margin row involves a class without a weight vector")
            self.B = None
            width = n_vars
        else:  # TREELOSS: class scores are sums of increments over A^+(y), (3)
            pos, neg = d.pair_y, d.pair_ybar
            self.B = sp.csr_matrix(Lam.T)  # (n_vars, q)
            width = d.n_classes
        self.width = width
        self.n_vars = n_vars
        self.pos, self.neg = pos, neg
        self.flat_pos = d.pair_i * width + pos
        self.flat_neg = d.pair_i * width + neg
        self.delta = d.pair_loss.astype(float)
        self.weight = float(C) * d.Cw  # C_s = C Cw_s
        counts = np.diff(d.pair_ptr)
        P = d.n_pairs
        self.n_pairs = P
        self.pad = np.full((self.n_slacks, max(int(counts.max(initial=0)), 1)), P, dtype=np.int64)
        rows = np.repeat(np.arange(self.n_slacks), counts)
        self.pad[rows, np.arange(P) - d.pair_ptr[rows]] = np.arange(P)
        self._rows = np.arange(self.n_slacks)
        self._viol = np.empty(P + 1)
        self._viol[P] = -np.inf

    def _most_violated(self, W: np.ndarray):
        """Per slack: the position of its most violated pair in ``pad`` and that violation."""
        Z = self.X @ W.T
        Z = np.asarray(Z.toarray() if sp.issparse(Z) else Z)
        if self.B is not None:
            Z = np.asarray((self.B.T @ Z.T).T)  # class scores (n_slacks, q)
        flat = Z.ravel()
        viol = self._viol
        viol[:-1] = self.delta * (1.0 - (flat[self.flat_pos] - flat[self.flat_neg]))
        padded = viol[self.pad]
        j = np.argmax(padded, axis=1)
        return j, padded[self._rows, j]

    def value(self, W: np.ndarray) -> float:
        """``H(W)`` alone."""
        top = self._most_violated(W)[1]
        active = top > 0
        return float(self.weight[active] @ top[active])

    def evaluate(self, W: np.ndarray):
        """``(H(W), U, alpha_sum, chosen, alpha)``: the hinge value, ``U = sum_p alpha_p
        (Lam_pos - Lam_neg)^T x_p`` over the variable rows (so ``-U`` is a subgradient of H),
        ``sum_p alpha_p`` and the chosen pairs with their multipliers."""
        j, top = self._most_violated(W)
        active = top > 0
        value = float(self.weight[active] @ top[active])
        s = self._rows[active]
        chosen = self.pad[s, j[active]]
        alpha = self.weight[s] * self.delta[chosen]
        U = np.zeros((self.width, self.X.shape[1]))
        if self._csr:
            scatter_csr(U, self.X.indptr, self.X.indices, self.X.data, s, self.pos[chosen],
                        self.neg[chosen], alpha)
        else:
            scatter_dense(U, self.X, s, self.pos[chosen], self.neg[chosen], alpha)
        if self.B is not None:
            U = np.asarray(self.B @ U)
        return value, U, float(alpha.sum()), chosen, alpha


# =============================================================================== Algorithm 1
def solve(model: otm.PairModel, C: float = 1.0, *, K=None, psi: str | None = None, tol: float | None = None,
          max_iter: int | None = None, averaging: str | None = None, dual_bound: bool | None = None,
          regularizer: Regularizer | None = None, verbose: bool = False, name: str | None = None,
          options: Options | None = None) -> Solution:
    """Orthogonal transfer (4) or a baseline of section 5 by Algorithm 1 on a prepared model.

    Parameters
    ----------
    model : PairModel
        From ``hiercvx.models.orthogonal.prepare(X, y, H, method, K=..., alpha=...)``
        (:class:`~hiercvx.models.orthogonal.PairModel`).
    C : float
        The C of (4) / (12) (the paper's C/N scaling is in the model's weights).
    K : array, optional
        (4)'s matrix over ``H.nodes[1:]`` instead of ``model.K`` (validated here; orthogonal
        only).  Algorithm 1 needs a positive definite comparison matrix (Corollary 2).
    psi, tol, max_iter, averaging, dual_bound : optional
        Override the fields of ``options`` of the same names (:class:`Options`).  ``psi``: the
        splitting for (4) (the baselines always put their whole quadratic regularizer in Psi);
        ``averaging``: ``"uniform"`` (Algorithm 1: ``gbar`` and ``delta`` are plain averages)
        or ``"linear"``; ``dual_bound=False`` runs the paper's bound alone.
    regularizer : Regularizer, optional
        Default :func:`regularizer_for` with ``K``, ``psi``.
    verbose : bool
        Log progress at INFO level (DEBUG otherwise).
    name : str, optional
        The solution's name.
    options : Options, optional
        The solver's settings (default ``Options()``).

    Returns
    -------
    Solution
        ``weights`` ``(n_nodes, n_features)`` (rows in ``H.nodes`` order, zero for nodes
        without a weight vector, the reference's convention; with the model's
        ``fit_intercept`` without the bias column, the biases in extras ``intercept``
        ``(n_nodes,)``: RDA runs on ``model.X = [X, s]`` and splits ``W~ = [W, b / s]`` at the
        end), ``objective`` = J at the best iterate (the upper bound), ``lower_bound``;
        ``history`` arrays per check (entry k: the upper bound over ``W(1..k+1)`` and the lower
        bounds from the first k subgradients): ``upper``, ``lower`` (running max),
        ``lower_rda`` (the paper's step 4), ``lower_dual``, ``time``; ``dual`` the averaged
        pair multipliers (in ``model.data``'s pair order).  Extras: ``dual_S`` the matrix of
        the dual bound (averaged sign patterns of K, or the fixed S), so that
        ``hiercvx.models.orthogonal.quadratic_lower_bound(model, res.dual, res.dual_S)``
        recomputes it; ``sigma`` Psi's strong-convexity constant; ``K`` the K used and
        ``alpha`` heuristic (6)'s alpha after any lowering (orthogonal; ``None`` otherwise);
        ``model``.

    Notes
    -----
    The paper's Algorithm 1 as printed (typo fixed) is ``averaging="uniform", psi="identity",
    dual_bound=False``.
    """
    t_start = time.perf_counter()
    C = check_positive(C, "C")
    check_iteration_options(tol, max_iter, who="RDA")
    opts = _options(options, psi=psi, tol=tol, max_iter=max_iter, averaging=averaging, dual_bound=dual_bound)
    K_used, reg, hinge = _objective_parts(model, C, K, regularizer, opts)
    log = logger.info if verbose else logger.debug
    # the products are small: threaded BLAS only adds synchronisation (badly so on a loaded
    # machine), so the whole loop runs single-threaded
    with blas_threads(1):
        upper, lower, best, t, converged, hist, abar, Sbar, at_zero = _iterate(model, hinge, reg, opts, log,
                                                                               t_start)
    history = {k: np.asarray(v, dtype=float) for k, v in hist.items()}
    weights, intercept = model.split_weights(model.full_weights(best))
    res = Solution(weights=weights, objective=float(upper), lower_bound=float(lower),
                   solver="rda", n_iter=t, converged=converged, tol=float(opts.tol),
                   dual=abar if opts.dual_bound else None, history=history,
                   solve_time=time.perf_counter() - t_start, name=name or f"RDA (Alg. 1) for {model.method}",
                   extras={"sigma": reg.sigma, "at_zero": float(at_zero),
                           # the averaged S(W(t)) (box of K), or the fixed S
                           "dual_S": Sbar if opts.dual_bound else None,
                           "K": K_used,
                           "alpha": model.K_alpha if (model.method == "orthogonal" and K is None) else None,
                           "model": model,
                           **({"intercept": intercept} if model.fit_intercept else {})})
    res.warn_unless_converged("iterations", stacklevel=2)
    log("%s", res)
    return res


def _objective_parts(model: otm.PairModel, C: float, K, regularizer, opts: Options):
    """The two parts of the objective Algorithm 1 minimizes: ``(K used, regularizer, hinge)``,
    the regularizer checked against the hinge's number of weight vectors."""
    K_used = _K_of(model, K)
    reg = regularizer_for(model, K_used, opts.psi, opts) if regularizer is None else regularizer
    hinge = Hinge(model, C)
    if reg.size != hinge.n_vars:
        raise InputError(f"the regularizer is {reg.size}x{reg.size} but the model has {hinge.n_vars} "
                         "weight vectors")
    return K_used, reg, hinge


def _options(options: Options | None, **given) -> Options:
    """``options`` (default :class:`Options`) with the keywords given explicitly (not None)."""
    if options is None:
        options = Options()
    elif not isinstance(options, Options):
        raise InputError(f"options must be a hiercvx.solvers.rda.Options, got {type(options).__name__}")
    given = {k: v for k, v in given.items() if v is not None}
    return dataclasses.replace(options, **given) if given else options


def _K_of(model: otm.PairModel, K):
    """The K of (4): ``model.K``, or an explicit ``K`` validated against ``model.H``."""
    if model.method != "orthogonal":
        if K is not None:
            raise InputError(f"K is the matrix of orthogonal transfer (4); method={model.method!r} does "
                             "not take it: drop K or prepare the model with method='orthogonal'")
        return None
    return model.K if K is None else otm.validate_K(K, model.H)


class _DualAverage:
    """The averaged multipliers of the hinge subgradients and the averaged ``S(W(t))``, whose
    quadratic minorant gives the dual bound and the ``"averaged"`` step (module docstring)."""

    def __init__(self, hinge: Hinge, reg: Regularizer, m: int, d: int):
        self.reg = reg
        self.Ubar = np.zeros((m, d))  # averaged U(alpha): -gbar of the hinge part
        self.Sbar = reg.empty_S()
        self.abar_sum = 0.0
        self.abar = np.zeros(hinge.n_pairs)

    def add(self, beta, U, a_sum, chosen, alpha, S):
        """Average in one step's multipliers and ``S``; returns the minorant's minimizer
        (``None`` when ``Sbar`` is not PD) and the dual bound ``sum abar - 1/2 tr(Ubar^T
        Sbar^{-1} Ubar)``."""
        self.Ubar += beta * (U - self.Ubar)
        self.abar_sum += beta * (a_sum - self.abar_sum)
        self.abar *= 1.0 - beta
        np.add.at(self.abar, chosen, beta * alpha)
        if self.reg.kind == "omega":
            self.reg.average_into(self.Sbar, S, beta)
        W_min, half = self.reg.minorant_solve(self.Sbar, self.Ubar)
        return W_min, self.abar_sum - half


def _iterate(model, hinge: Hinge, reg: Regularizer, opts: Options, log, t_start):
    """Algorithm 1 (steps 1-4) with the bounds of the module docstring; returns ``(upper,
    lower, best W, t, converged, history, averaged multipliers, S of the dual bound, J(0))``.

    The stopping test is taken at the best iterate after the start, never at ``W(1) = 0``
    itself: when the whole decrease ``J(0) - J*`` is below ``tol J(0)`` (a tiny C, or few
    samples) ``W = 0`` passes the relative gap before any step has told anything, and
    :func:`~hiercvx.result.stopping_gap` does not apply its decrease-from-zero condition at
    ``W = 0``.  ``W = 0`` is returned as converged only when the bound proves it optimal
    (``lower >= J(0)``), else the certified iterate (even when its objective is a hair above
    ``J(0)``: at a tiny ``C`` it is the point that carries the data's direction); at
    ``max_iter`` the best point is returned, unconverged."""
    d = model.X.shape[1]
    m = hinge.n_vars
    W = np.zeros((m, d))  # w(1) = 0
    gbar = np.zeros((m, d))
    delta = 0.0
    avg = _DualAverage(hinge, reg, m, d)
    weight_sum = 0.0
    upper, lower = np.inf, 0.0  # J >= 0: every term of (7) is non-negative
    best = W
    # the best of the iterates W(2), W(3), ...: the starting point W(1) = 0 is certified only
    # when the bound proves it optimal (the loop's docstring)
    found, found_J = None, np.inf
    hist = {k: [] for k in ("upper", "lower", "lower_rda", "lower_dual", "time")}
    lb_rda = lb_dual = np.nan
    converged = False
    t = 0
    while True:
        # evaluate J, and the pieces of a subgradient of phi, at w(t+1)
        S, R = reg.pattern(W)
        H_val, U, a_sum, chosen, alpha = hinge.evaluate(W)
        J = R + H_val
        if J < upper:  # step 3
            upper, best = J, W
        if t == 0:  # J(0): the gap is taken relative to the decrease possible from W = 0
            at_zero = J
        elif J < found_J:
            found, found_J = W, J
        gap = stopping_gap(found_J, lower, at_zero)  # nan before the first step
        for key, val in (("upper", upper), ("lower", lower), ("lower_rda", lb_rda),
                         ("lower_dual", lb_dual), ("time", time.perf_counter() - t_start)):
            hist[key].append(val)
        if t % opts.log_every == 0:
            log("RDA %s: iteration %d, upper %.10g, lower %.10g, gap %.3e", model.method, t, upper,
                lower, gap)
        if lower >= at_zero or reached(gap, opts.tol):
            converged = True
            break
        if t >= opts.max_iter:
            break
        t += 1
        # step 1: g = (S - P) W - U, a subgradient of phi = R - Psi + H (Theorem 4 for R = Omega)
        curv = S @ W - reg.psi_apply(W)
        g = curv - U
        const = -0.5 * float(np.sum(W * curv)) + a_sum  # phi(W) - g . W
        a_t = 1.0 if opts.averaging == "uniform" else float(t)
        weight_sum += a_t
        beta = a_t / weight_sum
        gbar += beta * (g - gbar)
        delta += beta * (const - delta)
        # step 2, (9) with Psi = 1/2 tr(W^T P W): W(t+1) = -P^{-1} gbar
        W = -reg.psi_solve(gbar)
        # step 4: the paper's lower bound (typo fixed: the max is with the new bound); it holds
        # whatever point is queried next, since min_W {gbar . W + Psi(W)} is taken exactly
        lb_rda = delta + 0.5 * float(np.sum(gbar * W))
        lower = max(lower, lb_rda)
        if opts.dual_bound or reg.averaged:
            W_min, lb_dual = avg.add(beta, U, a_sum, chosen, alpha, S)
            if opts.dual_bound:
                lower = max(lower, lb_dual)
            if reg.averaged and W_min is not None:
                W = W_min
    if converged and lower < at_zero:  # certified by an iterate, not by W = 0 being optimal:
        upper, best = found_J, found   # never W = 0, which a tiny C certifies vacuously
    return (upper, lower, best, t, converged, hist, avg.abar, (avg.Sbar if reg.kind == "omega" else reg.matrix),
            at_zero)
