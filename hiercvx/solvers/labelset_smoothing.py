"""A primal point for the label-set engine by smoothing, over every pair without listing them.

On label sets the dual passes converge much faster than the primal at their weights
``w(alpha)``: the primal (4.10) takes, per example, the largest violation over hundreds of
pairs, and a small error in ``w`` raises that maximum on some pair of most examples.  On
cellcycle_FUN's label sets the dual is within ``3e-4`` of its optimum while the primal at
``w(alpha)`` is ``1e-2`` above it, so the certified gap is the primal's.

This module finds a better primal point from ``w(alpha)``: L-BFGS on Nesterov's smoothing of
the primal (Yu. Nesterov, "Smooth minimization of non-smooth functions", Math. Program. 103,
2005)::

    P_mu(W) = 1/2 ||W||^2 + sum_i C_i mu log(1 + sum_p exp(v_p(W) / mu)),
    P(W) <= P_mu(W) <= P(W) + mu sum_i C_i log(1 + P_i),

(``v_p`` the violation of pair p, thesis (4.24); ``P_i`` the pairs of example i), so the
smoothed minimizer ``W_mu`` has ``P(W_mu) <= P* + mu sum_i C_i log(1 + P_i)``.  ``mu`` is
chosen so that this bias is a share of the current gap.  Its gradient ``W - w(alpha_mu)`` comes
from the soft multipliers over every pair, computed by the compiled oracle loop
(``hiercvx.models._labelset_kernels.soft_slacks``,
``O(|Y_i| q)`` per example), and L-BFGS starts at
``w(alpha)``, near the optimum.  The caller recomputes (4.10) exactly at the returned weights
and keeps them only when they are better: the certificate's primal side is always exact.

Entry point: :func:`polish` (linear models with class attributes); settings in
:class:`Options`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from ..models import margin as _margin
from ..models.margin import MarginModel
from ..models._labelset_kernels import soft_slacks
from .primitives import blas_threads

__all__ = ["Options", "polish", "smoothed_primal"]


@dataclass(frozen=True)
class Options:
    """Settings of the primal polish.  Each default with its reason.

    Attributes
    ----------
    share : float
        The smoothing's bias ``mu sum_i C_i log(1 + P_i)`` is this share of the current gap
        (in objective units): small enough that the polished primal leaves the gap to the
        dual, large enough that the smoothed problem stays well conditioned.
    max_iter : int
        L-BFGS iterations per polish at most (each costs a few coordinate passes; the first
        tens of iterations make most of the gain).
    memory : int
        L-BFGS memory (Liu & Nocedal, Math. Program. 45, 1989, recommend 3-20).
    stall : float
        L-BFGS stops once an iteration lowers ``P_mu`` by less than this share of the
        smoothing's bias: the exact primal cannot gain more than that bias from there.
    """

    share: float = 0.1
    max_iter: int = 60
    memory: int = 10
    stall: float = 1e-3


class _Smoothed:
    """``P_mu`` and its gradient in the flattened node weights of a linear model; the last
    evaluation is kept (L-BFGS asks again for the point its caller has just evaluated) and
    ``n_eval`` counts those computed."""

    def __init__(self, model: MarginModel, C: float, rel, Lam):
        data = model.data
        self.X, self.Lam, self.rel = model.X, Lam, rel
        self.loss = np.ascontiguousarray(data.loss, dtype=float)
        self.slack = data.rescaling == "slack"
        self.budget = np.ascontiguousarray(C * data.Cw, dtype=float)
        n, q = data.n_samples, data.n_classes
        self.G = np.zeros((n, q))
        self.linear = np.zeros(n)
        self.shape = (Lam.shape[1], model.X.shape[1])
        k = np.diff(rel[0])
        self.log_pairs = float(self.budget @ np.log1p(k * (q - k)))  # sum_i C_i log(1 + P_i)
        self.last = None
        self.n_eval = 0

    def __call__(self, w, mu):
        if self.last is not None and self.last[0] == mu and np.array_equal(self.last[1], w):
            return self.last[2]
        self.n_eval += 1
        W = w.reshape(self.shape)
        S = np.ascontiguousarray(_margin.class_scores(W, self.X, self.Lam, cheapest=True))
        value = soft_slacks(S, *self.rel, self.loss, self.slack, self.budget, mu, self.G,
                            self.linear)
        W_alpha = _margin.weights_from_coefficients(self.G, self.X, self.Lam)
        out = (0.5 * float(w @ w) + value, (W - W_alpha).ravel())
        self.last = (mu, w.copy(), out)
        return out


def smoothed_primal(model: MarginModel, W, C: float, mu: float, rel, Lam) -> float:
    """``P_mu(W)`` at the model's own node weights ``W`` (with the bias column); ``rel`` the
    relevant classes as CSR lists, ``Lam`` the class attributes (sparse)."""
    return _Smoothed(model, C, rel, Lam)(np.ravel(W), mu)[0]


def polish(model: MarginModel, W0, C: float, bias: float, rel, Lam,
           options: Options | None = None) -> tuple[np.ndarray, int]:
    """Node weights near the minimizer of ``P_mu`` from ``W0`` (the model's own weights, with
    the bias column), ``mu`` such that the smoothing's bias is ``options.share * bias``.

    Parameters
    ----------
    model : MarginModel
        A linear model with class attributes (``model.node_weights``).
    W0 : ndarray (M, d)
        The start, ``w(alpha)`` of the dual passes.
    C : float
        The regularization constant.
    bias : float
        The gap in objective units (primal minus dual) at ``W0``.
    rel : tuple
        ``(rel_ptr, rel)``: each example's relevant classes as CSR lists.
    Lam : sparse matrix
        The class attributes.
    options : Options, optional

    Returns
    -------
    (W, n_eval): L-BFGS's last iterate ``(M, d)``, where the caller evaluates (4.10), and the
    evaluations of ``P_mu`` it took.
    """
    options = Options() if options is None else options
    smoothed = _Smoothed(model, C, rel, Lam)
    mu = options.share * bias / max(smoothed.log_pairs, np.finfo(float).tiny)
    w0 = np.ascontiguousarray(W0, dtype=float).ravel()
    # scipy's ftol is relative to max(|P_mu|, 1)
    ftol = options.stall * options.share * bias / max(abs(smoothed(w0, mu)[0]), 1.0)
    # one BLAS thread: L-BFGS-B's small products slow down many times when their threads
    # compete with the compiled loop's
    with blas_threads(1):
        res = minimize(smoothed, w0, args=(mu,), jac=True, method="L-BFGS-B",
                       options=dict(maxiter=options.max_iter, maxcor=options.memory, gtol=0.0,
                                    ftol=ftol))
    return res.x.reshape(smoothed.shape), smoothed.n_eval
