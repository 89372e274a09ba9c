"""Pairwise block-coordinate Frank-Wolfe with vertex caches for the NHSVM dual.

Every pass starts with one batched loss-augmented inference at the current ``W`` (the exact
primal of (10) / (13), hence the certificate, and one new vertex per sample); then each
sample's block takes exact-line-search pairwise steps over its cached vertices until its
cached gap is small (Osokin et al., "Minding the gaps for block Frank-Wolfe optimization of
structured SVMs", ICML 2016; the multi-plane idea of Shah, Kolmogorov & Lampert, CVPR 2015).
Blocks whose exact gap is 0 are skipped (exact shrinking).  The sweeps are compiled
(:mod:`hiercvx.solvers._nhsvm_kernels`); this module is the policy around them.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..exceptions import InputError
from ..result import Solution, reached, relative_gap
from ._nhsvm_dual import (DualState, VertexModel, certify, finish, logger, primal_at, progress,
                          record)
from ._nhsvm_kernels import pairwise_sweeps
from ._nhsvm_options import Options
from .primitives import row_sq_norms

__all__ = ["pairwise"]


def pairwise(model: VertexModel, lam: float, options: Options, state: DualState | None = None,
             time_limit=None, random_state=0, verbose=False, t0=None, quiet=False) -> Solution:
    """Pairwise BCFW with vertex caches on a :class:`VertexModel` to ``options.tol`` within
    ``options.max_iter`` passes (no option checks: :func:`hiercvx.solvers.nhsvm_fw.solve` and
    the shared-norm solver check theirs); ``quiet``: no ``ConvergenceWarning``.

    One iteration = one certificate (exact inference on every sample: the primal, the dual
    and every block's gap at the same ``W``), the new vertices into the caches, then up to
    ``inner_sweeps`` sweeps over the blocks whose gap is positive (a block with gap 0 is
    optimal for the current ``W`` and is skipped: exact shrinking), each sweep dropping the
    blocks whose cached gap fell below ``eps`` (``options.inner_sweeps`` sweeps,
    ``options.label_set_sweeps`` with a cheap label-set oracle, ``options.program_sweeps``
    with a DAG program per sample, ``options.max_steps`` steps per visit;
    ``options.program_eps_share`` replaces ``eps_share`` with a DAG program); cached vertices
    idle for ``options.cache_idle_passes`` certificates leave their caches.  With a cheap
    oracle each certificate also evaluates the exact primal at a running average of
    ``W(beta)`` (``options.primal_average``) and the best primal point is returned."""
    tol, max_iter = options.tol, options.max_iter
    t0 = time.perf_counter() if t0 is None else t0
    V_avg = None
    rng = np.random.default_rng(random_state)
    n = model.n_samples
    state, options, expensive_oracle, average = _start(model, options, state)
    xsq = row_sq_norms(model.rows)
    Tf = np.ascontiguousarray(model.T, dtype=float)
    inv2lam = 0.5 / lam
    history: dict = {}
    best_D = -np.inf
    n_oracle = visits = 0
    converged = False
    bgap = np.zeros(n)
    best = (np.inf, None, None)
    bar = progress(verbose, max_iter, "NHSVM pairwise BCFW")
    try:
        for it in range(max_iter + 1):
            state.resync(model)
            V = state.rebuild_weights(model)
            P, D, H, vertex, W, S = certify(model, V, state.l, lam, return_scores=True)
            n_oracle += n
            best_D = max(best_D, D)
            if P < best[0]:  # W(beta) is not monotone in P: keep the best primal point
                best = (P, W, H)
            if average:  # and the primal at the running average of W(beta)
                V_avg, fresh = _running_average(V_avg, V, options.primal_average, it)
                if not fresh:
                    P_avg, H_avg, W_avg = primal_at(model, V_avg, lam)
                    n_oracle += n
                    if P_avg < best[0]:
                        best = (P_avg, W_avg, H_avg)
            gap = relative_gap(best[0], best_D)
            record(history, it, t0, best[0], best_D, n_oracle)
            history.setdefault("visits", []).append(visits)
            bar.set_postfix(gap=f"{gap:.2e}")
            if it:  # pass `it` is done: its line shows the certificate taken after it
                bar.update(1)
            if reached(gap, tol):
                converged = True
                break
            if it == max_iter or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                break
            if state.add(model, vertex)[1]:
                V = state.rebuild_weights(model)
            state.prune(options.cache_idle_passes)
            # block gaps at this W: H_i - l_i + <W, (sqrt(alpha) g_i) x_i^T>; they sum to P - D
            block = H - state.l + np.einsum("ij,ij->i", state.G, S)
            eps = max(1e-13, options.eps_share * (P - D) / n)
            active = np.flatnonzero(block > 1e-3 * eps).astype(np.int64)
            visits += _sweep_blocks(model, state, V, (Tf, xsq, inv2lam, eps, bgap), active, rng,
                                    options, expensive_oracle)
            state.age()
    finally:
        bar.close()
    if state.n_evicted:
        logger.info("pairwise BCFW: %d cached vertices with mass evicted (cache_size=%d)",
                    state.n_evicted, state.K)
    history["visits"] = [v / n for v in history["visits"]]
    P, W, H = best
    return finish("pairwise", W, P, best_D, H, it, converged, tol, history, t0, n_oracle,
                   G=state.G.copy(), loss_term=float(state.l.sum()), state=state,
                   warn=not quiet)


def _start(model: VertexModel, options: Options, state: DualState | None):
    """The dual state (new, or the warm start checked against the model), the options with the
    sweeps between certificates of the model's oracle, whether that oracle is a DAG program
    per sample, and whether the primal is also taken at the running average of ``W(beta)``."""
    if not options.primal_average >= 0:
        raise InputError(f"primal_average must be a non-negative number (0: no averaging), got "
                         f"{options.primal_average!r}")
    if options.layout not in ("auto", "nodes", "features"):
        raise InputError(f"layout must be 'auto', 'nodes' or 'features', got {options.layout!r}")
    if not (isinstance(options.batch, (int, np.integer)) and options.batch >= 1):
        raise InputError(f"batch must be a positive integer (blocks per batch), got "
                         f"{options.batch!r}")
    if not 0 <= options.feature_layout_share <= 1:
        raise InputError(f"feature_layout_share must be in [0, 1], got "
                         f"{options.feature_layout_share!r}")
    for name in ("eps_share", "program_eps_share"):
        share = getattr(options, name)
        if not 0 <= share < 1:
            # at a share of 1 or more, blocks whose gaps are all about the mean never step
            raise InputError(f"{name} must be in [0, 1) (a block leaves the sweeps when its gap "
                             f"is at most this share of the mean block gap), got {share!r}")
    n = model.n_samples
    if state is None:
        state = DualState(model, options.cache_size, options.support_ones_share)
    elif state.G.shape != (n, model.n_nodes):
        raise InputError(f"the warm-start state holds {state.G.shape[0]} samples x {state.G.shape[1]} "
                         f"nodes; this problem has {n} x {model.n_nodes}")
    expensive_oracle = model.multilabel and model.oracle.method in ("ilp", "lp")
    if expensive_oracle:
        options = replace(options, inner_sweeps=options.program_sweeps,
                          eps_share=options.program_eps_share)
    elif model.multilabel:
        options = replace(options, inner_sweeps=options.label_set_sweeps)
    # a DAG program per sample costs as much as the sweeps: no second oracle call per pass
    average = options.primal_average > 0 and not expensive_oracle
    return state, options, expensive_oracle, average


def _running_average(V_avg, V, horizon: float, it: int):
    """``(V_avg, fresh)``: ``V_avg`` moved towards ``V`` with factor ``1 - horizon / (it + 1)``,
    an exponential average over about the last ``1 / horizon`` of the passes; ``fresh``: it is
    a copy of ``V`` (the first ``horizon`` certificates), nothing new to evaluate."""
    keep = max(0.0, 1.0 - horizon / (it + 1.0))
    if V_avg is None or keep == 0.0:
        return V.copy(), True
    V_avg *= keep
    V_avg += (1.0 - keep) * V
    return V_avg, False


def _sweep_blocks(model, state, V, step, active, rng, options: Options, expensive_oracle) -> int:
    """Up to ``options.inner_sweeps`` compiled sweeps over the ``active`` blocks, each dropping
    the blocks whose cached gap fell below ``eps``; ``step`` is ``(Tf, xsq, inv2lam, eps,
    bgap)``.  Returns the number of block visits."""
    Tf, xsq, inv2lam, eps, bgap = step
    visits = 0
    refine = 0
    state.sync_gram(model)
    by_feature = _by_feature(state, active, options)
    while True:
        # the sweeps and their random orders in one compiled call: on small problems a
        # Python loop around them would dominate a pass
        done, active, _ = pairwise_sweeps(
            np.asarray(active, dtype=np.int64), int(options.inner_sweeps),
            int(rng.integers(2 ** 31)), model.rows, V, model.sqrt_alpha, Tf, state.cache,
            state.l, xsq, inv2lam, eps, int(options.max_steps), bgap, int(options.ahead),
            by_feature, int(options.batch))
        visits += int(done)
        # An expensive oracle (a DAG program per sample) may be worth more work on the cached
        # problem (options.expensive_refines): refine it (10x smaller eps, every cached
        # block).  Decided by the oracle's kind, not by timings, so that results are
        # reproducible.
        refine += 1
        if refine > options.expensive_refines or not expensive_oracle:
            return visits
        eps *= 0.1
        active = np.flatnonzero(state.clen > 0).astype(np.int64)


def _by_feature(state: DualState, active: np.ndarray, options: Options) -> bool:
    """Whether the sweeps store the weights by feature (``options.layout``): with ``"auto"``,
    when enough of the ``active`` blocks are held relative to their true set on a support of
    at least half the nodes (the sweeps' "full" blocks, read along every node)."""
    if options.layout != "auto":
        return options.layout == "features"
    if len(active) == 0:
        return False
    M = state.Tf.shape[1]
    full = (state.sref[active] == 0) & (2 * state.slen[active] >= M)
    return bool(np.mean(full) >= options.feature_layout_share)
