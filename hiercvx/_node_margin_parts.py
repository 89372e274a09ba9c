"""The numeric parts of the node scores of :mod:`hiercvx.metrics`: best class scores at or
below and outside each node, the logistic fits of the node calibration (pooled and per node)
and the maximum over descendants that makes per-node scores consistent with the hierarchy."""

from __future__ import annotations

import numpy as np

from .hierarchy import Hierarchy

__all__ = ["best_below", "best_outside", "logistic_fit", "per_node_logistic_fit", "descendant_max"]


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


def per_node_logistic_fit(z: np.ndarray, offset: np.ndarray, truth: np.ndarray, prior: tuple,
                          shrinkage: float, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Per column ``v``: ``(slope_v >= 0, intercept_v)`` minimizing the logistic loss of
    ``truth[:, v]`` under ``sigmoid(offset_v + intercept_v + slope_v * z[:, v])`` plus
    ``shrinkage / 2 * ((slope_v - s0)^2 + (intercept_v - c0)^2)``, ``(s0, c0) = prior``: one
    strongly convex two-variable problem per column, solved together by projected Newton steps
    with a backtracking search per column."""
    s0, c0 = prior
    M = z.shape[1]
    a, b = np.full(M, float(s0)), np.full(M, float(c0))

    def loss(a, b, cols=slice(None)):
        u = offset[cols] + b + a * z[:, cols]
        return (np.sum(np.logaddexp(0.0, u) - truth[:, cols] * u, axis=0)
                + 0.5 * shrinkage * ((a - s0) ** 2 + (b - c0) ** 2)), u

    value, u = loss(a, b)
    for _ in range(max_iter):
        p = 0.5 * (1.0 + np.tanh(0.5 * u))
        r, w = p - truth, p * (1.0 - p)
        ga, gb = (r * z).sum(axis=0) + shrinkage * (a - s0), r.sum(axis=0) + shrinkage * (b - c0)
        haa, hab = (w * z * z).sum(axis=0) + shrinkage, (w * z).sum(axis=0)
        hbb = w.sum(axis=0) + shrinkage
        det = haa * hbb - hab * hab
        da, db = -(hbb * ga - hab * gb) / det, -(haa * gb - hab * ga) / det
        bound = (a + da < 0)   # the slope's bound is active: Newton on the intercept alone
        da, db = np.where(bound, -a, da), np.where(bound, -gb / hbb, db)
        t = np.ones(M)
        short = np.arange(M)
        for _ in range(40):   # backtracking on the columns whose step is still too long
            trial, _u = loss(a[short] + t[short] * da[short], b[short] + t[short] * db[short],
                             short)
            slope = ga[short] * da[short] + gb[short] * db[short]
            short = short[trial > value[short] + 1e-4 * t[short] * slope]
            if not len(short):
                break
            t[short] *= 0.5
        a, b = np.maximum(a + t * da, 0.0), b + t * db
        new_value, u = loss(a, b)
        decrease, value = value - new_value, new_value
        if np.all(decrease <= 1e-10 * np.maximum(1.0, np.abs(value))):
            break
    return a, b


def descendant_max(S: np.ndarray, H: Hierarchy) -> np.ndarray:
    """``(n, M)``: each node's score raised to the best score at or below it (children before
    parents), so that no node scores above an ancestor."""
    out = np.array(S, dtype=float, copy=True).T   # node-major: contiguous rows
    children = H.children_indices
    for v in range(len(H.nodes) - 1, -1, -1):
        if len(children[v]):
            out[v] = np.maximum(out[v], out[children[v]].max(axis=0))
    return out.T
