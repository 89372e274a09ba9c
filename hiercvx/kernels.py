"""Kernels on inputs: linear, Gaussian (with the median heuristic) and precomputed.

``kernel`` arguments across hiercvx take ``"linear"``, ``"rbf"`` (alias ``"gaussian"``),
``"precomputed"`` (the names in ``KERNELS``) or a callable ``k(A, B) -> (len(A), len(B))``
array.  A :class:`Kernel` resolves the choice once (fixing the bandwidth on the training data)
so that training and prediction use the same function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .exceptions import InputError

__all__ = ["Kernel", "ClassKernel", "MultiScaleRBF", "make_kernel", "gram", "median_heuristic",
           "check_psd", "psd_factor", "KERNELS"]

KERNELS = ("linear", "rbf", "gaussian", "precomputed")


def _sq_dists(A, B) -> np.ndarray:
    a2 = np.asarray(A.multiply(A).sum(axis=1)).ravel() if sp.issparse(A) else np.einsum("ij,ij->i", A, A)
    b2 = np.asarray(B.multiply(B).sum(axis=1)).ravel() if sp.issparse(B) else np.einsum("ij,ij->i", B, B)
    cross = A @ B.T
    cross = cross.toarray() if sp.issparse(cross) else np.asarray(cross)
    return np.maximum(a2[:, None] + b2[None, :] - 2.0 * cross, 0.0)


def median_heuristic(X, y=None, max_points: int = 2000, random_state=0) -> float:
    """Bandwidth sigma for ``exp(-||a-b||^2 / (2 sigma^2))``: a median of pairwise distances.

    Parameters
    ----------
    X : array or sparse matrix of shape (n_samples, n_features)
    y : array of shape (n_samples,), optional
        Single labels.  Without ``y``: the median pairwise distance; with ``y``: the median of
        the distances between points of *different* classes (Wang, Shen, Pan, section 4.1).
    max_points : int, default 2000
        At most this many points are used (a seeded subsample), so that the cost stays bounded.
    random_state : int, numpy.random.Generator or None, default 0
        Seed of the subsample.

    Returns
    -------
    float
        The median of the nonzero distances among those pairs.

    Raises
    ------
    InputError
        ``y`` has a single class among the points used, or every such distance is zero.
    """
    rng = np.random.default_rng(random_state)
    n = X.shape[0]
    idx = np.arange(n) if n <= max_points else np.sort(rng.choice(n, max_points, replace=False))
    Xs = X[idx]
    d2 = _sq_dists(Xs, Xs)
    iu = np.triu_indices(len(idx), k=1)
    mask = np.ones(len(iu[0]), dtype=bool)
    if y is not None:
        ys = np.asarray(y, dtype=object)[idx]
        mask = ys[iu[0]] != ys[iu[1]]
        if not mask.any():
            raise InputError("the between-class median needs at least two classes in y")
    d = np.sqrt(d2[iu][mask])
    d = d[d > 0]
    if d.size == 0:
        raise InputError("all points coincide: the median distance is 0, so no Gaussian bandwidth "
                         "can be set; give sigma explicitly")
    return float(np.median(d))


def _entry_precision(K: np.ndarray) -> float:
    """The machine epsilon of the type ``K``'s entries carry: its own for a float16 / float32
    array; for a float64 array, float32's when every entry is a float32 number and some entry
    is not an integer (a float32 matrix converted on the way in), else float64's.  A matrix
    of integers (counts, a Gram matrix of binary features) is exact in float64: its entries
    are float32 numbers too, yet nothing rounded them to float32's precision."""
    if K.dtype in (np.float16, np.float32):
        return float(np.finfo(K.dtype).eps)
    if K.dtype == np.float64:
        with np.errstate(over="ignore", invalid="ignore"):
            if np.array_equal(K.astype(np.float32), K) and not np.array_equal(np.round(K), K):
                return float(np.finfo(np.float32).eps)
    return float(np.finfo(np.float64).eps)


def check_psd(K: np.ndarray, tol: float = 1e-8, what: str = "kernel matrix", *,
              eps: float | None = None) -> float:
    """Refuse a non-symmetric or non-PSD Gram matrix, quoting its smallest eigenvalue.

    Parameters
    ----------
    K : array of shape (n, n)
    tol : float, default 1e-8
        Relative tolerance at float64 precision, non-negative: eigenvalues down to
        ``-tol * max(1, max|K|)`` pass (round-off of a PSD matrix computed in float64).
    what : str
        The matrix's name in the message.
    eps : float, optional
        The precision of ``K``'s entries, the machine epsilon of the type they were computed
        in.  Default: float32's for a float32 ``K`` or a float64 ``K`` whose entries are all
        float32 numbers, not all integers (a float32 Gram matrix converted on the way in;
        float16 likewise), else float64's (an integer-valued matrix, such as counts, is exact
        in float64).  Eigenvalues down to ``-n * eps * max|lambda|`` pass as well: rounding each
        entry by a relative ``eps`` moves every eigenvalue by at most ``||E||_2 <= n eps
        max|K|`` (Weyl's inequality), and ``max|K| <= max|lambda|``.

    Returns
    -------
    float
        The smallest eigenvalue of ``(K + K^T) / 2``: below zero, within the bounds, when ``K``
        is a rounded PSD matrix (:func:`psd_factor` keeps its PSD part).

    Raises
    ------
    InputError
        ``K`` is empty or not square, has non-finite entries, is not symmetric, or has an
        eigenvalue below both bounds; ``tol`` or ``eps`` is negative or not a finite number.
    """
    if isinstance(tol, (bool, np.bool_, str, bytes)) or not isinstance(tol, (int, float, np.number)) \
            or not (np.isfinite(tol) and tol >= 0):
        raise InputError(f"tol must be a non-negative, finite number (a relative tolerance, e.g. "
                         f"the default 1e-8), got {tol!r}")
    if eps is not None and not (np.isfinite(eps) and eps >= 0):
        raise InputError(f"eps must be a non-negative number (a machine epsilon), got {eps!r}")
    precision = _entry_precision(np.asarray(K)) if eps is None else float(eps)
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise InputError(f"the {what} must be square, got shape {K.shape}")
    if K.shape[0] == 0:
        raise InputError(f"the {what} is empty (shape {K.shape}); give the (n, n) Gram matrix "
                         "of at least one point")
    if not np.all(np.isfinite(K)):
        raise InputError(f"the {what} has non-finite entries")
    scale = max(1.0, float(np.abs(K).max()))
    if not np.allclose(K, K.T, atol=1e-10 * scale):
        raise InputError(f"the {what} is not symmetric (max asymmetry "
                         f"{np.abs(K - K.T).max():.3g}); symmetrize it, e.g. (K + K.T) / 2")
    lam = np.linalg.eigvalsh((K + K.T) / 2)
    rounding = K.shape[0] * precision * float(np.abs(lam).max())
    if lam.min() < -max(tol * scale, rounding):
        raise InputError(f"the {what} is not positive semidefinite: its smallest eigenvalue is "
                         f"{lam.min():.3g} (largest {lam.max():.3g}); a valid kernel gives a PSD "
                         "Gram matrix")
    return float(lam.min())


def psd_factor(K: np.ndarray, rtol: float = 1e-12, scale_floor: float = 1.0) -> np.ndarray:
    """``L`` ``(n, rank)`` with ``L L^T`` the PSD part of the symmetric ``K``, no jitter.

    CVXPY declarations write ``x^T K x`` as ``||L^T x||^2`` with it.

    Parameters
    ----------
    K : array of shape (n, n)
        Used as ``(K + K^T) / 2``.
    rtol : float, default 1e-12
        Eigenvalues at or below ``rtol * max(scale_floor, lambda_max)`` are dropped (round-off
        of a PSD matrix, or tiny negative ones that :func:`check_psd` lets pass).
    scale_floor : float, default 1.0
        The least scale of that threshold.

    Returns
    -------
    array of shape (n, rank)
        ``V_k sqrt(s_k)`` over the kept eigenpairs ``(s_k, V_k)`` of ``(K + K^T) / 2``.
    """
    K = np.asarray(K, dtype=float)
    K = 0.5 * (K + K.T)
    s, V = np.linalg.eigh(K)
    keep = s > rtol * max(float(s.max()), scale_floor)
    return V[:, keep] * np.sqrt(s[keep])


@dataclass
class Kernel:
    """A kernel on inputs: ``kernel(A, B)`` returns the Gram block between rows of A and B.

    Estimators take it as their ``kernel`` parameter when the kernel has a width:
    ``Kernel("rbf", sigma=0.5)`` (``sigma=None``: the estimator's rule for the width, e.g.
    the median heuristic); :func:`make_kernel` resolves it on the training data.

    Parameters
    ----------
    name : str
        ``"linear"``, ``"rbf"`` (alias ``"gaussian"``), ``"precomputed"`` or ``"callable"``.
    sigma : float, optional
        The Gaussian width of ``exp(-||a - b||^2 / (2 sigma^2))``.
    function : callable, optional
        ``k(A, B)`` for ``name="callable"``.
    """

    name: str
    sigma: float | None = None
    function: Callable | None = None

    def __post_init__(self):
        # the checks of make_kernel, so that every user of a Kernel gets them; "gaussian" is
        # stored as "rbf"
        names = ("linear", "rbf", "gaussian", "precomputed", "callable")
        if not isinstance(self.name, str) or self.name not in names:
            raise InputError(f"unknown kernel {self.name!r}; choose one of {names}, e.g. "
                             "Kernel('rbf', sigma=0.5), or pass a callable k(A, B) as the kernel")
        if self.name == "gaussian":
            self.name = "rbf"
        if self.sigma is not None:
            if self.name != "rbf":
                raise InputError(f"sigma is the width of the Gaussian kernel; the {self.name!r} "
                                 f"kernel has none: give Kernel({self.name!r}) without sigma")
            self.sigma = _check_sigma(self.sigma)
        if self.name == "callable":
            if not callable(self.function):
                raise InputError("Kernel('callable') needs function=k, a callable k(A, B) "
                                 f"returning the Gram block, got {self.function!r}")
        elif self.function is not None:
            raise InputError(f"function is for Kernel('callable', function=k); the {self.name!r} "
                             "kernel takes none: drop it")

    def __call__(self, A, B=None):
        B = A if B is None else B
        if self.name == "linear":
            K = A @ B.T
            return K.toarray() if sp.issparse(K) else np.asarray(K, dtype=float)
        if self.name == "rbf":
            if self.sigma is None:
                raise InputError("Kernel('rbf') has no width: give Kernel('rbf', sigma=0.5), or "
                                 "resolve it on training data with make_kernel(kernel, X) "
                                 "(the median heuristic)")
            return np.exp(-_sq_dists(A, B) / (2.0 * self.sigma ** 2))
        if self.name == "callable":
            K = np.asarray(self.function(A, B), dtype=float)
            if K.shape != (A.shape[0], B.shape[0]):
                raise InputError(f"the kernel callable returned shape {K.shape}, expected "
                                 f"{(A.shape[0], B.shape[0])}")
            return K
        if self.name == "precomputed":
            # A is already the Gram block; B is ignored (the caller passes kernel rows)
            return np.asarray(A, dtype=float)
        raise InputError(f"unknown kernel {self.name!r}")

    @property
    def is_linear(self) -> bool:
        """Whether this is the linear kernel."""
        return self.name == "linear"


@dataclass(frozen=True)
class MultiScaleRBF:
    """The mean of Gaussian kernels of several widths,
    ``k(a, b) = (1/m) sum_j exp(-||a - b||^2 / (2 sigma_j^2))``: a kernel (a mean of PSD
    kernels is PSD) that sees structure at every width it holds, the uniform combination that
    multiple-kernel learning is measured against (Cortes, Mohri & Rostamizadeh, "Learning
    non-linear combinations of kernels", NIPS 2009).  Its diagonal is 1, like one Gaussian's.

    Any estimator that takes a callable kernel takes it: ``kernel=MultiScaleRBF((2.0, 4.0))``.

    Parameters
    ----------
    sigmas : tuple of float
        The widths, each positive and finite.
    """

    sigmas: tuple

    def __post_init__(self):
        sigmas = tuple(float(s) for s in np.atleast_1d(np.asarray(self.sigmas, dtype=float)))
        if not sigmas or not all(np.isfinite(s) and s > 0 for s in sigmas):
            raise InputError(f"MultiScaleRBF needs one or more positive, finite widths, got "
                             f"{self.sigmas!r}")
        object.__setattr__(self, "sigmas", sigmas)

    def __call__(self, A, B=None):
        D = _sq_dists(A, A if B is None else B)
        return sum(np.exp(-D / (2.0 * s ** 2)) for s in self.sigmas) / len(self.sigmas)


@dataclass(frozen=True)
class ClassKernel:
    """A kernel on classes that replaces ``Lam Lam^T`` (Lijuan Cai, *Multilabel Classification
    over Category Taxonomies*, PhD thesis, Brown University, 2008, eq. (4.17)): given to
    :class:`~hiercvx.estimators.HierarchicalSVC` as ``attributes=ClassKernel(Q)`` in place of
    class attributes.

    Parameters
    ----------
    gram : array or callable
        A PSD ``(q, q)`` array over the classes, or a callable ``(H, classes) -> array``.
    """

    gram: object


def _check_sigma(sigma) -> float:
    """The Gaussian width ``sigma`` as a positive, finite float; a bool, a string or any
    other non-number is refused."""
    try:
        value = float(sigma) if not isinstance(sigma, (bool, np.bool_, str, bytes)) else np.nan
    except (TypeError, ValueError):
        value = np.nan
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"sigma must be a positive, finite number (the Gaussian width), got "
                         f"{sigma!r}; pass e.g. sigma=0.5, or sigma=None for the median "
                         "heuristic on the training data")
    return value


def make_kernel(kernel="linear", X=None, y=None, sigma: float | None = None) -> Kernel:
    """Resolve a kernel argument into a new :class:`Kernel` (the argument is never modified).

    Parameters
    ----------
    kernel : str, callable or Kernel, default "linear"
        A name in ``KERNELS`` (``"gaussian"`` gives ``"rbf"``), a callable ``k(A, B)``, or a
        :class:`Kernel`, which carries its own width: ``Kernel("rbf", sigma=0.5)``.
    X : array or sparse matrix of shape (n_samples, n_features), optional
        Training inputs: for ``"rbf"`` without a width, :func:`median_heuristic` on ``X``
        fixes it.
    y : array of shape (n_samples,), optional
        Single labels: the heuristic then takes the distances between classes.
    sigma : float, optional
        Width of ``"rbf"``, positive and finite; must be None when ``kernel`` is a
        :class:`Kernel`.

    Raises
    ------
    InputError
        An unknown name, an invalid ``sigma``, ``"rbf"`` with neither ``sigma`` nor ``X``, or
        ``sigma`` beside a :class:`Kernel`.
    """
    if isinstance(kernel, Kernel):
        if sigma is not None:
            raise InputError(f"the Kernel {kernel.name!r} carries its own width: give "
                             f"Kernel({kernel.name!r}, sigma=...) and no separate sigma")
        if kernel.name == "callable":
            return Kernel("callable", function=kernel.function)
        return make_kernel(kernel.name, X=X, y=y, sigma=kernel.sigma)
    if callable(kernel) and not isinstance(kernel, str):
        return Kernel("callable", function=kernel)
    if kernel == "linear":
        return Kernel("linear")
    if kernel in ("rbf", "gaussian"):
        if sigma is None:
            if X is None:
                raise InputError("the Gaussian kernel needs sigma or training data for the median heuristic")
            sigma = median_heuristic(X, y)
        return Kernel("rbf", sigma=_check_sigma(sigma))
    if kernel == "precomputed":
        return Kernel("precomputed")
    raise InputError(f"unknown kernel {kernel!r}; choose one of {KERNELS} or pass a callable k(A, B)")


def gram(X, Z=None, kernel="linear", sigma: float | None = None, check: bool = False) -> np.ndarray:
    """The Gram matrix ``k(X, Z)``, a float array ``(n_X, n_Z)`` (``"precomputed"``: ``X``).

    Parameters
    ----------
    X : array or sparse matrix of shape (n_X, n_features)
    Z : array or sparse matrix of shape (n_Z, n_features), optional
        Default ``X``.
    kernel : str, callable or Kernel, default "linear"
        As in :func:`make_kernel`, with ``X`` as training data: ``"rbf"`` or
        ``Kernel("rbf")`` without a width takes :func:`median_heuristic` on ``X``.
    sigma : float, optional
        Width of ``"rbf"``; must be None when ``kernel`` is a :class:`Kernel` (it carries its
        own).
    check : bool, default False
        When ``Z`` is omitted, refuse a result that is not PSD (:func:`check_psd`).
    """
    k = make_kernel(kernel, X=X, sigma=sigma)
    K = k(X, Z)
    if check and Z is None:
        check_psd(K)
    return K
