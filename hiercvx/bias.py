"""LIBLINEAR's regularized bias, written once for every model.

scikit-learn's ``LinearSVC`` (LIBLINEAR) fits an intercept by appending a constant feature of
value ``s = intercept_scaling`` to every sample; its weight ``v`` is regularized like the
others, and the reported intercept is ``b = s * v``.  So a model with ``fit_intercept`` is the
same model on ``[X, s]``: the paper's primal, dual, fast solvers and certificates need no
change, only these conversions at the boundary:

    augmented features   x~ = [x, s]                          (:func:`append_constant`)
    augmented weights    w~ = [w, b / s],  ||w~||^2 = ||w||^2 + b^2 / s^2
    split                (w, b) = (w~[:-1], s * w~[-1])        (:func:`split_bias`)

For a non-linear kernel the same constant coordinate lives in the kernel's feature space:
``k~(a, b) = k(a, b) + s^2`` (:class:`ShiftedKernel`, :func:`with_bias`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import check_positive
from .exceptions import InputTypeError
from .kernels import Kernel

__all__ = ["append_constant", "bias_scaling", "join_bias", "split_bias", "ShiftedKernel",
           "with_bias"]


def bias_scaling(fit_intercept, intercept_scaling) -> float | None:
    """``intercept_scaling`` checked (a finite positive number) when ``fit_intercept``, else
    None (no bias)."""
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise InputTypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
    return check_positive(intercept_scaling, "intercept_scaling") if fit_intercept else None


def append_constant(X, scaling: float):
    """``[X, scaling]``: the constant feature appended to dense or sparse ``X`` (CSR out)."""
    col = np.full((X.shape[0], 1), float(scaling))
    return sp.hstack([X, sp.csr_matrix(col)], format="csr") if sp.issparse(X) else np.hstack([X, col])


def split_bias(W_aug, scaling: float | None, axis: int = -1):
    """``(W, b)`` from augmented weights whose last entry along ``axis`` is the constant
    feature's weight: ``b = scaling * w~_last``.  ``scaling=None``: ``(W_aug, zeros)``."""
    W_aug = np.asarray(W_aug, dtype=float)
    W_aug = np.moveaxis(W_aug, axis, -1)
    if scaling is None:
        return np.moveaxis(W_aug, -1, axis), np.zeros(W_aug.shape[:-1])
    return np.moveaxis(W_aug[..., :-1], -1, axis), scaling * W_aug[..., -1]


def join_bias(W, b, scaling: float | None, axis: int = -1) -> np.ndarray:
    """The augmented weights ``[W, b / scaling]`` (``b`` None: zeros), the inverse of
    :func:`split_bias`.  ``scaling=None``: ``W`` unchanged."""
    W = np.asarray(W, dtype=float)
    if scaling is None:
        return W
    W = np.moveaxis(W, axis, -1)
    b = np.zeros(W.shape[:-1]) if b is None else np.broadcast_to(np.asarray(b, dtype=float),
                                                                  W.shape[:-1])
    return np.moveaxis(np.concatenate([W, b[..., None] / scaling], axis=-1), -1, axis)


class ShiftedKernel:
    """``k(A, B) + shift``: a kernel whose feature map carries one more constant coordinate
    of value ``sqrt(shift)`` (the kernel form of LIBLINEAR's bias feature)."""

    def __init__(self, kernel: Kernel, shift: float):
        self.kernel = kernel
        self.shift = float(shift)

    def __call__(self, A, B=None):
        return self.kernel(A, B) + self.shift


def with_bias(X, kernel: Kernel, scaling):
    """``(X, kernel)`` with the regularized bias: for the linear kernel the constant feature
    ``scaling`` appended to ``X`` (dense or CSR); for a precomputed Gram matrix
    ``K + scaling**2``; for any other kernel ``k + scaling**2`` (the same constant feature in
    the kernel's feature space).  ``scaling=None``: no bias, inputs unchanged."""
    if scaling is None:
        return X, kernel
    if kernel.is_linear:
        return append_constant(X, scaling), kernel
    if kernel.name == "precomputed":
        return np.asarray(X, dtype=float) + scaling ** 2, kernel
    return X, Kernel("callable", function=ShiftedKernel(kernel, scaling ** 2))
