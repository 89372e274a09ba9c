"""The plain block-coordinate Frank-Wolfe and the paper's SGD for the NHSVM primal (10) / (13).

``bcfw``: Lacoste-Julien, Jaggi, Schmidt & Pletscher, "Block-coordinate Frank-Wolfe
optimization for structural SVMs", ICML 2013: one fresh loss-augmented inference and one
Frank-Wolfe step with exact line search per sample (single-label sweeps compiled, multi-label
sweeps call the oracle once per sample).  ``sgd``: the optimizer of Choi, Sasaki & Srebro,
*Normalized Hierarchical SVM* (arXiv:1508.02479, 2016, section 7), Pegasos (Shalev-Shwartz,
Singer & Srebro, ICML 2007).  Both are baselines of :func:`hiercvx.solvers.nhsvm_fw.solve`.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..result import Solution, reached, relative_gap
from ._nhsvm_dual import VertexModel, certify, finish, progress, record
from ._nhsvm_kernels import bcfw_sweep_single, sgd_epoch_single
from .primitives import row_sq_norms

__all__ = ["bcfw", "sgd"]


def bcfw(model: VertexModel, lam, tol, max_iter, time_limit, random_state, verbose) -> Solution:
    """Lacoste-Julien et al.'s BCFW: per sample, fresh loss-augmented inference at the current
    ``W`` and one Frank-Wolfe step with exact line search; certified every pass."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    n, M = model.n_samples, model.n_nodes
    G = np.zeros((n, M))
    l = np.zeros(n)
    V = np.zeros((M, model.X.shape[1]))
    xs = model.rows
    xsq = row_sq_norms(xs)
    inv2lam = 0.5 / lam
    history: dict = {}
    n_oracle = 0
    best_D = -np.inf
    converged = False
    bar = progress(verbose, max_iter, "NHSVM BCFW")
    try:
        for it in range(max_iter + 1):
            V = np.ascontiguousarray((np.asarray(model.X.T @ G).T) * model.sqrt_alpha[:, None])
            P, D, H, _, W = certify(model, V, l, lam)
            n_oracle += n
            best_D = max(best_D, D)
            gap = relative_gap(P, best_D)
            record(history, it, t0, P, best_D, n_oracle)
            bar.set_postfix(gap=f"{gap:.2e}")
            if it:  # pass `it` is done: its line shows the certificate taken after it
                bar.update(1)
            if reached(gap, tol):
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                bcfw_sweep_single(order, xs, V, model.sqrt_alpha, model.paths, model.leaf_pos,
                                  model.offset, model.scale, G, l, xsq, inv2lam)
            else:
                _bcfw_sweep_python(model, order, V, G, l, xsq, inv2lam)
            n_oracle += n
    finally:
        bar.close()
    return finish("bcfw", W, P, best_D, H, it, converged, tol, history, t0, n_oracle, G=G,
                   loss_term=float(l.sum()))


def _row(X, i):
    return X[i].toarray().ravel() if sp.issparse(X) else X[i]


def _bcfw_sweep_python(model, order, V, G, l, xsq, inv2lam):
    """BCFW pass with one oracle call per sample (multi-label)."""
    sqa = model.sqrt_alpha
    for i in order:
        x = _row(model.X, i)
        r = (V @ x) * inv2lam
        _, Z = model.most_violating((sqa * r)[None, :], rows=np.array([i]))
        c, b = model.vertex_terms(i, Z[0])
        dg = c - G[i]
        gain = b - l[i] - float((sqa * dg) @ r)
        if gain <= 0:
            continue
        kappa = float(np.sum((sqa * dg) ** 2)) * xsq[i] * inv2lam
        gamma = 1.0 if kappa <= 0 else min(1.0, gain / kappa)
        G[i] += gamma * dg
        l[i] += gamma * (b - l[i])
        V += np.outer(gamma * sqa * dg, x)


def sgd(model: VertexModel, lam, max_iter, time_limit, random_state, verbose) -> Solution:
    """The paper's optimizer (section 7): Pegasos (Shalev-Shwartz et al., ICML 2007) with step
    ``1 / (lam' t)``, ``lam' = 2 lam / n``, and projection on the ball that holds the optimum.
    No dual: the lower bound is the trivial 0 and the result is never certified."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    n, M = model.n_samples, model.n_nodes
    d = model.X.shape[1]
    lam_p = 2.0 * lam / n
    # the optimum has lam ||W||^2 <= P(W*) <= P(0) = sum_i H_i(0): a ball that holds it
    H0, _ = model.most_violating(np.zeros((n, M)))
    radius = float(np.sqrt(max(H0.sum(), 1e-300) / lam))
    Wraw = np.zeros((M, d))
    sgd_state = np.array([1.0, 0.0, 0.0])
    xs = model.rows
    xsq = row_sq_norms(xs)
    history: dict = {}
    best = (np.inf, None, None)
    n_oracle = 0
    bar = progress(verbose, max_iter, "NHSVM SGD")
    try:
        for it in range(1, max_iter + 1):
            order = rng.permutation(n).astype(np.int64)
            if not model.multilabel:
                sgd_epoch_single(order, xs, Wraw, sgd_state, model.sqrt_alpha, model.paths,
                                 model.leaf_pos, model.offset, model.scale, xsq, lam_p, radius)
            else:
                _sgd_epoch_python(model, order, Wraw, sgd_state, lam_p, radius)
            n_oracle += n
            W = sgd_state[0] * Wraw
            H, _ = model.most_violating(model.node_scores(W))
            n_oracle += n
            P = lam * float(np.sum(W * W)) + float(H.sum())
            record(history, it, t0, P, 0.0, n_oracle)
            if P < best[0]:
                best = (P, W.copy(), H)
            bar.update(1)
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
    finally:
        bar.close()
    P, W, H = best
    res = finish("sgd", W, P, 0.0, H, it, False, 0.0, history, t0, n_oracle, warn=False)
    # no dual, so never certified: say so once (user-facing stack: sgd <- solve <- caller)
    res.warn_unless_converged("epochs", stacklevel=3, reason=(
        "without a certificate (SGD has no dual bound; its lower_bound is the trivial 0): use "
        "method='pairwise' or 'bcfw' for a certified gap"))
    return res


def _sgd_epoch_python(model, order, Wraw, state, lam_p, radius):
    sqa = model.sqrt_alpha
    for i in order:
        state[2] += 1.0
        t = state[2]
        x = _row(model.X, i)
        r = (Wraw @ x) * state[0]
        _, Z = model.most_violating((sqa * r)[None, :], rows=np.array([i]))
        shrink = 1.0 - 1.0 / t
        if shrink <= 0:
            Wraw[:] = 0.0
            state[:2] = (1.0, 0.0)
            r[:] = 0.0
        else:
            state[0] *= shrink
            state[1] *= shrink * shrink
            r *= shrink
        c, _ = model.vertex_terms(i, Z[0])
        if np.any(c):
            a = (sqa * c) / (lam_p * t)
            state[1] += 2.0 * float(a @ r) + float(a @ a) * float(x @ x)
            Wraw += np.outer(a / state[0], x)
        if state[1] > radius * radius:
            state[0] *= radius / np.sqrt(state[1])
            state[1] = radius * radius
        if state[0] < 1e-8:
            Wraw *= state[0]
            state[0] = 1.0
