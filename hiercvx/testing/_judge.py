"""Judging weights against a certified optimum.

Where a method's objective ``f`` is ``mu``-strongly convex in its (augmented) weights, the
optimum ``W*`` is unique and every point obeys ``mu/2 ||W - W*||^2 <= f(W) - f*``.  A certified
reference with gap ``g = f(W_ref) - lb`` therefore lies within ``r_ref = sqrt(2 g / mu)`` of
``W*``: weights farther than ``r_ref + weight_rtol * ||W_ref||`` from ``W_ref`` are not the
optimum's, however small their objective excess.  This is what catches a solver whose answer is
off by 1 % where the objective moves by 1e-5 only.

Strong convexity constants, each checked in ``tests/test_testing_judge.py`` against the objective
itself (``f(W* + D) - f* >= mu/2 ||D||^2``):

- the margin models with node or class weights and a linear kernel (the Crammer-Singer SVM of
  the lecture notes; Cai's hierarchical SVM, thesis (4.10)): ``1/2 ||W~||^2`` with LIBLINEAR's
  bias column inside ``W~``, so ``mu = 1``;
- the baselines of Zhou, Xiao and Wu (FLATMULT, HIERMULT, TRANSFER, TREELOSS): ``1/2 tr(W^T S W)``
  over the nodes that carry weights, ``mu = lambda_min(S)``;
- orthogonal transfer (4): Omega (5) with a nonnegative ``K`` whose comparison matrix is positive
  definite is strongly convex with parameter ``lambda_min(K-bar)`` (Zhou, Xiao, Wu, ICML 2011,
  Corollary 2).

Other methods (NHSVM's normalized margins, the shared-norm SVM, the sibling-margin SVM with its
unregularized biases, the nonconvex psi-learning) get no weight test: their weights are judged by
the objective only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WeightJudgement", "judge_weights", "strong_convexity", "weight_vector"]


def strong_convexity(model) -> float | None:
    """The strong convexity constant ``mu`` of ``model.objective`` in ``weight_vector``
    (None: the method has none this module can certify)."""
    method = getattr(model, "method", "")
    if method in ("multiclass", "hsvm"):
        if getattr(model, "node_weights", True) and getattr(getattr(model, "kernel", None), "name",
                                                            "linear") == "linear":
            return 1.0
        return None
    if method in ("flatmult", "hiermult", "transfer", "treeloss") and getattr(model, "S", None) is not None:
        S = np.asarray(model.S, dtype=float)
        mu = float(np.linalg.eigvalsh(0.5 * (S + S.T)).min())
        return mu if mu > 1e-12 else None
    if method == "orthogonal" and getattr(model, "K", None) is not None:
        K = np.asarray(model.K, dtype=float)
        if np.any(K < 0):
            return None
        comparison = -np.abs(K)
        np.fill_diagonal(comparison, np.diag(K))
        mu = float(np.linalg.eigvalsh(comparison).min())
        return mu if mu > 1e-12 else None
    return None


def weight_vector(model, weights, intercept=None) -> np.ndarray:
    """The variable ``mu`` refers to: ``[W, b / s]`` with the model's bias column where it has
    one (the intercept is a regularized weight, as LIBLINEAR's), restricted to the rows that carry
    weights (``var_nodes`` of the orthogonal-transfer family)."""
    if hasattr(model, "augmented_weights"):
        W = np.asarray(model.augmented_weights(weights, intercept), dtype=float)
    else:
        W = np.asarray(weights, dtype=float)
    rows = getattr(model, "var_nodes", None)
    if rows is not None and W.ndim == 2:
        W = W[np.asarray(rows)]
    return W.ravel()


@dataclass(frozen=True)
class WeightJudgement:
    """How far a user's weights are from the certified optimum.

    ``distance``: ``||w_user - w_ref||``; ``radius``: how far the true optimum can be from the
    reference's point (``sqrt(2 gap / mu)``); ``allowed``: ``radius + weight_rtol * ||w_ref||``;
    ``relative``: ``distance / ||w_ref||``."""

    distance: float
    radius: float
    allowed: float
    norm: float
    mu: float

    @property
    def ok(self) -> bool:
        return self.distance <= self.allowed

    @property
    def relative(self) -> float:
        return self.distance / max(self.norm, 1e-300)

    def reason(self) -> str:
        return (f"your weights are {self.distance:.3g} from the certified optimum ({self.relative:.2e} "
                f"of its norm {self.norm:.4g}); the optimum is unique (the objective is "
                f"{self.mu:.3g}-strongly convex) and certified within {self.radius:.2e}, so at most "
                f"{self.allowed:.3g} is allowed (weight_rtol); the objective alone could not tell")


def judge_weights(model, user_weights, user_intercept, ref_weights, ref_intercept, gap: float,
                  weight_rtol: float) -> WeightJudgement | None:
    """The :class:`WeightJudgement` of the user's weights, or None where the method has no
    certified strong convexity (or the weights do not fit the model)."""
    mu = strong_convexity(model)
    if mu is None:
        return None
    try:
        mine = weight_vector(model, user_weights, user_intercept)
        best = weight_vector(model, ref_weights, ref_intercept)
    except (ValueError, TypeError):
        return None
    if mine.shape != best.shape:
        return None
    radius = float(np.sqrt(2.0 * max(gap, 0.0) / mu))
    norm = float(np.linalg.norm(best))
    distance = float(np.linalg.norm(mine - best))
    return WeightJudgement(distance, radius, radius + weight_rtol * norm, norm, mu)
