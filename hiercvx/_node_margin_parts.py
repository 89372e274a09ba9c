"""The numeric parts of the node scores of :mod:`hiercvx.metrics`: best class scores at or
below and outside each node, and the two-variable logistic fit of the node calibration."""

from __future__ import annotations

import numpy as np

from .hierarchy import Hierarchy

__all__ = ["best_below", "best_outside", "logistic_fit"]


def best_below(S: np.ndarray, classes: tuple, H: Hierarchy) -> np.ndarray:
    """``(n, M)``: the best class score at or below each node (the lowest class score where no
    class is below the node): children before parents, ``best_v = max(S_v, max_c best_c)``."""
    best = np.full((len(H.nodes), S.shape[0]), -np.inf)   # node-major: contiguous rows
    best[H.indices(classes)] = S.T   # classes are distinct nodes
    children = H.children_indices
    for v in range(len(H.nodes) - 1, -1, -1):
        if len(children[v]):
            best[v] = np.maximum(best[v], best[children[v]].max(axis=0))
    # a node no class reaches scores as the sample's lowest class: below every ancestor
    return np.where(np.isfinite(best.T), best.T, S.min(axis=1, keepdims=True))


def best_outside(S: np.ndarray, below: np.ndarray) -> np.ndarray:
    """``(n, M)``: the best class score not at or below each node (the lowest class score where
    every class is below the node).  Only the nodes above a sample's top class miss its top
    score, so only those are searched."""
    n, M = S.shape[0], below.shape[1]
    top = S.argmax(axis=1)
    out = np.repeat(S.max(axis=1)[:, None], M, axis=1)
    holds = below[top]                            # node v is at or above the top class
    lowest = S.min(axis=1)
    for v in np.flatnonzero(holds.any(axis=0)):
        rows = np.flatnonzero(holds[:, v])
        outside = ~below[:, v]
        out[rows, v] = S[np.ix_(rows, outside)].max(axis=1) if outside.any() else lowest[rows]
    return out


def logistic_fit(m: np.ndarray, offset: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """``(slope >= 0, intercept)`` maximizing the likelihood of ``truth`` under
    ``sigmoid(offset + intercept + slope * m)``: a two-variable convex problem, solved by
    Newton's method with backtracking (the slope held at 0 when its step would go below)."""
    scale = float(np.std(m)) or 1.0
    z = m / scale

    def loss(p):
        u = offset + p[1] + p[0] * z
        return float(np.sum(np.logaddexp(0.0, u) - truth * u)), u

    p = np.zeros(2)
    value, u = loss(p)
    for _ in range(50):
        prob = 0.5 * (1.0 + np.tanh(0.5 * u))   # sigmoid(u), overflow-free
        r, w = prob - truth, prob * (1.0 - prob)
        g = np.array([r @ z, r.sum()])
        Hm = np.array([[w @ (z * z), w @ z], [w @ z, w.sum()]]) + 1e-12 * np.eye(2)
        step = -np.linalg.solve(Hm, g)
        if p[0] + step[0] < 0:  # the bound is active: Newton on the intercept alone
            step = np.array([-p[0], -g[1] / Hm[1, 1]])
        t = 1.0
        while True:
            new_value, new_u = loss(p + t * step)
            if new_value <= value + 1e-4 * t * (g @ step) or t < 1e-10:
                break
            t *= 0.5
        p, decrease, value, u = p + t * step, value - new_value, new_value, new_u
        if decrease <= 1e-12 * max(1.0, abs(value)):
            break
    return float(p[0]) / scale, float(p[1])
