"""Compiled kernels of the NHSVM dual solvers (:mod:`hiercvx.solvers.nhsvm_fw`).

The dual of the normalized hierarchical SVM (10) / (13) (Choi, Sasaki & Srebro, *Normalized
Hierarchical SVM*, arXiv:1508.02479, 2016) has one simplex block per sample; these loops visit
the blocks: the pairwise Frank-Wolfe sweep over cached vertices (Osokin et al., "Minding the
gaps for block Frank-Wolfe optimization of structured SVMs", ICML 2016), the plain
block-coordinate Frank-Wolfe pass (Lacoste-Julien et al., "Block-coordinate Frank-Wolfe
optimization for structural SVMs", ICML 2013) and the paper's Pegasos epoch (Shalev-Shwartz et
al., ICML 2007).  The samples arrive as a :class:`~hiercvx.solvers.primitives.RowData` record
(dense or CSR rows) and the vertex caches as one tuple; policy (when to certify, how many
sweeps) is in :mod:`hiercvx.solvers._nhsvm_pairwise`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._nhsvm_feature_kernels import (batch_products, batch_scores, batch_update,
                                     feature_products, feature_update, scale_scores)
from .primitives import row_axpy, row_dot, select_pair

__all__ = ["node_products", "support_products", "add_outer", "pairwise_sweep", "pairwise_sweeps", "leaf_oracle",
           "bcfw_sweep_single", "sgd_epoch_single", "resync_kernel", "extend_support",
           "gram_update", "compact_slots", "rebuild_support"]

# Reassociation lets LLVM vectorize the dot products and rank-one updates (inputs are finite).
_FAST = {"reassoc", "contract", "nsz"}


@njit(cache=True, fastmath=_FAST)
def node_products(mode, V, i, X, indptr, indices, xvals, out):
    """``out[m] = V[m] . x_i`` for every node ``m`` (dense / CSR rows,
    :func:`~hiercvx.solvers.primitives.row_dot`); a loop of its own: inside a sweep's body the
    products compile to slower code."""
    for m in range(V.shape[0]):
        out[m] = row_dot(mode, V, m, i, X, indptr, indices, xvals)


@njit(cache=True, fastmath=_FAST)
def support_products(mode, V, i, X, indptr, indices, xvals, nodes, count, out):
    """``out[m] = V[m] . x_i`` for the first ``count`` nodes ``m`` of ``nodes`` (a loop of its
    own, like :func:`node_products`: inside the sweep's body the products compile slower)."""
    for q in range(count):
        m = nodes[q]
        out[m] = row_dot(mode, V, m, i, X, indptr, indices, xvals)


@njit(cache=True, fastmath=_FAST)
def add_outer(mode, V, coef, i, X, indptr, indices, xvals, K):
    """``V += coef x_i^T`` over the nodes with ``coef[m] != 0`` (dense / CSR rows; ``K`` unused).

    Mathematically ``row_axpy`` of :mod:`.primitives` once per node, written out because numba
    does not inline that call inside the sweeps' loops."""
    for m in range(V.shape[0]):
        c = coef[m]
        if c == 0.0:
            continue
        if mode == 1:
            for p in range(indptr[i], indptr[i + 1]):
                V[m, indices[p]] += c * xvals[p]
        else:
            for k in range(V.shape[1]):
                V[m, k] += c * X[i, k]


@njit(cache=True, fastmath=_FAST, inline="always")
def _block_scores(i, rows, V, aux, sqa, Tf, nodes, ns, full, inv2lam, s, by_feature):
    """Block ``i``'s node scores ``s = sqrt(alpha) (V - sqrt(alpha) u^T) x_i / (2 lam)`` on its
    support (every node when ``full``), and ``(own, u . x_i)``: the true set's score (``t_i``
    lies inside the support) and the shift ``u . x_i`` (``aux[0] = u``).  ``V`` is stored by
    node, or by feature (``V^T``) when ``by_feature``."""
    mode, Xd, indptr, indices, xvals, K = rows
    ux = row_dot(mode, aux, 0, i, Xd, indptr, indices, xvals)
    own = 0.0
    if by_feature:
        feature_products(mode, V, i, Xd, indptr, indices, xvals, nodes, ns, full, s)
    if full:
        if not by_feature:
            node_products(mode, V, i, Xd, indptr, indices, xvals, s)
        own = scale_scores(i, sqa, Tf, inv2lam, ux, s)
    else:
        if not by_feature:
            support_products(mode, V, i, Xd, indptr, indices, xvals, nodes, ns, s)
        for q in range(ns):
            m = nodes[q]
            s[m] = sqa[m] * inv2lam * (s[m] - sqa[m] * ux)
            own += Tf[i, m] * s[m]
    return own, ux


@njit(cache=True, fastmath=_FAST, inline="always")
def _block_gradients(i, cache, s, own, total, comp, full, grad, dbeta):
    """The gradients ``grad[j] = b_j - sigma_j (s(t_i) - s(z_j))`` of block ``i``'s cached
    vertices (``dbeta`` zeroed); ``s(z_j)`` over the support, or, for a block held relative to
    the all-ones set (``comp``), ``total`` minus the scores of the support's nodes outside
    ``z_j``.  Returns the mass in use."""
    pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref = cache
    M = s.shape[0]
    ns = slen[i]
    used = 0.0
    for j in range(clen[i]):
        used += cbeta[i, j]
        dbeta[j] = 0.0
        p = cid[i, j]
        sz = 0.0
        if full:
            for m in range(M):
                sz += pool[p, m] * s[m]
        elif comp:
            sz = total
            for q in range(ns):
                m = supp[i, q]
                sz -= (1.0 - pool[p, m]) * s[m]
        else:
            for q in range(ns):
                sz += pool[p, supp[i, q]] * s[supp[i, q]]
        grad[j] = coff[i, j] - cscale[i, j] * (own - sz)
    return used


@njit(cache=True, fastmath=_FAST, inline="always")
def _block_apply(i, rows, V, aux, sqa, Tf, cache, comp, full, net, dbeta, delta, by_feature,
                 deferred):
    """Add block ``i``'s change ``sum_j w_j (t_i - z_j)`` (``w_j = dbeta_j sigma_j``, times
    ``sqrt(alpha)`` and ``x_i^T``) to the weights ``V - sqrt(alpha) u^T``: on the support
    explicitly, and for a block held relative to the all-ones set (``comp``: off its support
    every moved direction is ``-1``) the rest as ``u += net x_i``; ``aux[1]``, the weighted
    row sum ``V^T sqrt(alpha)``, follows.  ``V`` stored by feature (``by_feature``) takes the
    change as one :func:`feature_update`, or, for a block of a batch, leaves its coefficients
    in ``deferred`` (a row over the nodes, 0 off the support) for :func:`batch_update`;
    ``delta`` is left 0 then."""
    mode, Xd, indptr, indices, xvals, K = rows
    pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref = cache
    M = V.shape[1] if by_feature else V.shape[0]
    k = clen[i]
    ns = slen[i]
    ref = -1
    for j in range(k):
        if dbeta[j] != 0.0:
            ref = j
            break
    if ref < 0:
        return
    # formed as net (t_i - z_r) - sum_j w_j (z_j - z_r) with z_r a moved vertex: exactly 0
    # wherever the moved vertices agree, so only those nodes' weight rows are touched
    pr = cid[i, ref]
    for q in range(ns):
        m = supp[i, q]
        delta[m] = net * (Tf[i, m] - pool[pr, m])
    for j in range(ref + 1, k):
        if dbeta[j] == 0.0:
            continue
        w = dbeta[j] * cscale[i, j]
        p = cid[i, j]
        if full:
            for m in range(M):
                delta[m] -= w * (np.float64(pool[p, m]) - np.float64(pool[pr, m]))
        else:
            for q in range(ns):
                m = supp[i, q]
                delta[m] -= w * (np.float64(pool[p, m]) - np.float64(pool[pr, m]))
    shift = net if comp else 0.0
    weighted = 0.0
    for q in range(ns):
        m = supp[i, q]
        c = delta[m] + shift  # the u-part (-net on every node) is added back on the support
        if by_feature:
            delta[m] = c * sqa[m]  # the coefficient of x_i, 0 off the support
            weighted += sqa[m] * delta[m]
            continue
        if c == 0.0:
            continue
        c *= sqa[m]
        weighted += sqa[m] * c
        row_axpy(mode, V, m, i, c, Xd, indptr, indices, xvals, K)
    if by_feature:
        if deferred.size:
            for q in range(ns):
                deferred[supp[i, q]] = delta[supp[i, q]]
        else:
            feature_update(mode, V, i, Xd, indptr, indices, xvals, supp[i], ns, full, delta)
        for q in range(ns):
            delta[supp[i, q]] = 0.0
    if shift != 0.0:
        row_axpy(mode, aux, 0, i, shift, Xd, indptr, indices, xvals, K)
    if weighted != 0.0:
        row_axpy(mode, aux, 1, i, weighted, Xd, indptr, indices, xvals, K)


@njit(cache=True, fastmath=_FAST, inline="always")
def _block_steps(i, cache, grad, dbeta, lsum, slack, curv, eps, max_steps):
    """Up to ``max_steps`` pairwise steps on block ``i`` (:func:`pairwise_sweep`) from the
    gradients ``grad`` of its cached vertices and its ``slack`` (the true set's mass; ``curv``
    is ``||x_i||^2 / (2 lam)``): masses, ``dbeta`` and ``lsum[i]`` follow.  Returns ``(steps,
    the pairwise gap before the first, -1 when nothing can move, net)`` with ``net = sum_j
    dbeta_j sigma_j``."""
    pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref = cache
    k = clen[i]
    steps = 0
    first_gap = -1.0
    net = 0.0  # sum_j dbeta_j sigma_j, exactly 0 after moves between equal-sigma vertices
    mass = cbeta[i]
    for step in range(max_steps):
        up, g_up, down, g_down = select_pair(grad, mass, k, slack)
        if step == 0 and down != -2:
            first_gap = g_up - g_down
        if down == -2 or up == down or g_up - g_down <= eps:
            break
        kappa = 0.0  # ||a_up - a_down||^2 from the Gram matrix (the slack's a is 0)
        if up >= 0:
            kappa += Q[i, up, up]
        if down >= 0:
            kappa += Q[i, down, down]
            if up >= 0:
                kappa -= 2.0 * Q[i, up, down]
        kappa *= curv
        t_max = slack if down == -1 else cbeta[i, down]
        t = t_max
        if kappa > 0.0:
            t = min(t_max, (g_up - g_down) / kappa)
        if t <= 0.0:
            break
        if up >= 0:
            cbeta[i, up] += t
            dbeta[up] += t
            lsum[i] += t * coff[i, up]
        else:
            slack += t
        if down >= 0:
            cbeta[i, down] = 0.0 if t >= t_max else cbeta[i, down] - t
            dbeta[down] -= t
            lsum[i] -= t * coff[i, down]
        else:
            slack = 0.0 if t >= t_max else slack - t
        c_up = cscale[i, up] if up >= 0 else 0.0
        c_down = cscale[i, down] if down >= 0 else 0.0
        net += t * (c_up - c_down)
        tc = t * curv
        for j in range(k):
            dq = 0.0
            if up >= 0:
                dq += Q[i, j, up]
            if down >= 0:
                dq -= Q[i, j, down]
            grad[j] -= tc * dq
        steps += 1
    return steps, first_gap, net


@njit(cache=True, inline="always")
def _next_batch(order, b0, clen, sref, slen, M, in_batch) -> int:
    """The blocks of ``order`` from place ``b0`` on that read every node (cached vertices, held
    relative to the true set, a support of at least half the nodes), up to ``in_batch.size``
    of them, into ``in_batch``; returns how many."""
    nb = 0
    while nb < in_batch.size and b0 + nb < order.size:
        e = order[b0 + nb]
        if clen[e] == 0 or sref[e] == 1 or 2 * slen[e] < M:
            break
        in_batch[nb] = e
        nb += 1
    return nb


@njit(cache=True, inline="always")
def _touch_block(i, rows, cache):
    """Read, and sum, one value per cache line of block i's data (its feature row, cached
    masses and ids, support, Gram block and cached label sets): a software prefetch, as in
    :func:`hiercvx.solvers._working_set_kernels._touch_ahead`.  In random order every block's
    data is a cache miss; reading a block a few places ahead lets those loads overlap with
    the current block's work (numba has no prefetch instruction)."""
    pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref = cache
    mode, Xd, indptr, indices, xvals, K = rows
    acc = 0.0
    if mode == 1:
        for jj in range(indptr[i], indptr[i + 1], 8):
            acc += xvals[jj]
    else:
        for f in range(0, Xd.shape[1], 8):
            acc += Xd[i, f]
    k = clen[i]
    for q in range(0, slen[i], 8):
        acc += supp[i, q]
    for j in range(k):
        acc += cbeta[i, j] + coff[i, j] + cscale[i, j]
        for l in range(0, k, 8):
            acc += Q[i, j, l]
        p = cid[i, j]
        if p >= 0:
            for m in range(0, pool.shape[1], 64):
                acc += pool[p, m]
    return acc


@njit(cache=True, fastmath=_FAST)
def pairwise_sweep(order, rows, V, aux, sqa, Tf, cache, lsum, xsq, inv2lam, eps, max_steps, bgap,
                   ahead=0, by_feature=False, batch=1):
    """One pass of block-coordinate pairwise Frank–Wolfe over the cached vertices: each block
    of ``order`` in turn maximizes ``D`` over its ``beta_i``, the others fixed
    (:func:`_visit_block`).

    ``bgap[i]`` receives block i's pairwise gap (largest minus smallest active gradient) at
    the start of its visit.  ``rows``: the samples (:class:`~hiercvx.solvers.primitives.RowData`);
    ``cache``: ``(pool, cid, cbeta, coff, cscale, clen, budget, supp, slen, Q, sref)`` of the
    :class:`~hiercvx.solvers._nhsvm_dual.DualState`; ``l_i`` (``lsum``) follows the steps,
    ``g_i`` is left to :meth:`~hiercvx.solvers._nhsvm_dual.DualState.resync`.  The block
    ``ahead`` places further in ``order`` is read before each visit (:func:`_touch_block`).
    ``V`` is stored by node ``(M, d)``, or by feature ``(d, M)`` when ``by_feature`` (a block
    whose support covers most nodes then updates ``V`` in ``d`` contiguous multiply-adds
    over the nodes rather than ``M`` short ones over the features).  Stored by feature with
    dense rows, up to ``batch`` consecutive such blocks form a batch: their products are
    taken in one pass over ``V`` (:func:`batch_products`), each block's scores corrected by
    the changes of the blocks before it in the batch (``x_a . x_b`` times their
    coefficients), and their changes added in one more pass (:func:`batch_update`): the same
    iterates with ``V`` read twice per batch rather than twice per block.
    Returns ``(steps, largest block gap seen at a visit, sum of the values read ahead)``.
    """
    cid, clen, slen, sref = cache[1], cache[5], cache[8], cache[10]
    mode, Xd = rows[0], rows[1]
    M = V.shape[1] if by_feature else V.shape[0]
    qsum = 0.0
    for m in range(M):
        qsum += sqa[m] * sqa[m]
    n_slots = cid.shape[1]
    s = np.zeros(M)  # scores by node: set at a visit (on the support, or all), 0 after it
    delta = np.zeros(M)
    grad = np.empty(n_slots)
    dbeta = np.empty(n_slots)
    total = 0
    worst = 0.0
    touched = 0.0  # returned, so that the reads ahead are not optimized away
    n_order = order.size
    batched = by_feature and mode == 0 and batch > 1
    nbat = batch if batched else 1
    in_batch = np.empty(nbat, dtype=np.int64)  # the batch's samples
    base = np.zeros((nbat, M))                 # their products with V at the batch's start
    coefs = np.zeros((nbat, M))                # their changes, added to V at its end
    gram = np.empty((nbat, nbat))
    xb = np.empty((nbat, Xd.shape[1]))
    no_row = np.zeros(0)
    b0 = 0   # the batch covers order[b0 : b0 + nb]
    nb = 0
    for t_order in range(n_order):
        i = order[t_order]
        if ahead > 0 and t_order + ahead < n_order:
            touched += _touch_block(order[t_order + ahead], rows, cache)
        k = clen[i]
        bgap[i] = 0.0
        ns = slen[i]
        if batched and t_order >= b0 + nb:
            if nb > 0:  # the batch ends: its changes into V
                batch_update(V, nb, coefs, xb)
            b0 = t_order
            nb = _next_batch(order, b0, clen, sref, slen, M, in_batch)
            if nb > 0:
                batch_products(V, Xd, in_batch, nb, base, gram, xb)
        if k == 0 or ns == 0:
            continue
        pos = t_order - b0 if batched and t_order < b0 + nb else -1
        steps, first_gap = _visit_block(i, pos, rows, V, aux, sqa, Tf, cache, lsum, xsq[i],
                                        inv2lam, eps, max_steps, by_feature, qsum,
                                        (base, coefs, gram, no_row), (s, delta, grad, dbeta))
        total += steps
        bgap[i] = max(first_gap, 0.0)
        worst = max(worst, first_gap)
    if batched and nb > 0:
        batch_update(V, nb, coefs, xb)
    return total, worst, touched


@njit(cache=True, fastmath=_FAST)
def _visit_block(i, pos, rows, V, aux, sqa, Tf, cache, lsum, xsq_i, inv2lam, eps, max_steps,
                 by_feature, qsum, batch, work):
    """Block ``i``'s visit of :func:`pairwise_sweep`: its scores, gradients, steps, and the
    change of ``V`` (or of the batch's coefficients).

    The gradient along cached vertex j is ``b_j - sigma_j (s(t_i) - s(z_j))`` at the current
    node scores ``s``; the true set (the slack ``budget_i - sum_j beta_ij``) has gradient 0.  A
    step moves mass ``t`` from the smallest-gradient vertex holding mass to the
    largest-gradient one; along that direction ``D`` is a concave parabola of curvature
    ``||x_i||^2 / (2 lam) ||a_up - a_down||^2`` (``a_j = sqrt(alpha) sigma_j (t_i - z_j)``), so
    ``t`` is its maximizer clipped to the mass available (exact line search).

    Every quantity of block i lives on its **support** ``supp[i, :slen[i]]``, held relative to
    one of two reference sets (``sref[i]``, :func:`extend_support`): the true set (``0``: the
    nodes where some cached vertex differs from ``t_i``; elsewhere ``t_i - z_j = 0``) or the
    all-ones set (``1``: the nodes of ``t_i`` and those some cached vertex lacks; elsewhere
    ``t_i - z_j = -1``, the loss-augmented sets of a large DAG, which hold nearly every node).
    The weights are ``V - sqrt(alpha) u^T`` with ``u = aux[0]``: the ``-1`` part of the second
    kind moves ``u`` only, and ``aux[1] = V^T sqrt(alpha)`` gives the score of all nodes in
    ``O(d)``.  The steps run on the block's Gram matrix ``Q[i, j, l] = <a_j, a_l>``: a step
    updates the ``k`` gradients in ``O(k)``, the node-space change is formed once at the end
    of the visit.  A visit costs ``O(|support| (d + k) + steps k)``.

    ``pos >= 0``: the block is row ``pos`` of the current batch, its scores from the batch's
    products.  ``batch = (base, coefs, gram, no_row)``; ``work = (s, delta, grad, dbeta)``
    the sweep's buffers, ``s`` left at 0.  Returns ``(steps, pairwise gap at the start)``.
    """
    _, _, _, _, _, _, budget, supp, slen, _, sref = cache
    mode, Xd, indptr, indices, xvals, _ = rows
    base, coefs, gram, no_row = batch
    s, delta, grad, dbeta = work
    M = s.shape[0]
    ns = slen[i]
    comp = sref[i] == 1
    # a support of most nodes is read in node order (contiguous loops; s and the
    # directions are 0 off the support)
    full = (not comp) and 2 * ns >= M
    if pos >= 0:
        own, ux = batch_scores(i, pos, base, coefs, gram, rows, aux, sqa, Tf, inv2lam, s)
    else:
        own, ux = _block_scores(i, rows, V, aux, sqa, Tf, supp[i], ns, full, inv2lam, s,
                                by_feature)
    everything = 0.0
    if comp:  # the score of every node, from V^T sqrt(alpha) and u
        everything = inv2lam * (row_dot(mode, aux, 1, i, Xd, indptr, indices, xvals) - qsum * ux)
    used = _block_gradients(i, cache, s, own, everything, comp, full, grad, dbeta)
    slack = budget[i] - used
    if slack < 1e-15 * budget[i]:
        slack = 0.0
    steps, first_gap, net = _block_steps(i, cache, grad, dbeta, lsum, slack, xsq_i * inv2lam,
                                         eps, max_steps)
    if steps > 0:
        _block_apply(i, rows, V, aux, sqa, Tf, cache, comp, full, net, dbeta, delta,
                     by_feature, coefs[pos] if pos >= 0 else no_row)
    if not full:
        for q in range(ns):
            s[supp[i, q]] = 0.0
    else:
        s[:] = 0.0
    return steps, first_gap


@njit(cache=True, fastmath=_FAST)
def gram_update(pool, Tf, sqa, cid, cscale, clen, supp, slen, sref, Q, dirty):
    """``Q[i, j, l] = <a_j, a_l>`` (``a_j = sqrt(alpha) sigma_j (t_i - z_j)``) for every slot
    ``j`` flagged in ``dirty`` and every cached ``l``; clears the flags.  Summed on block i's
    support, plus, for a block held relative to the all-ones set (``sref[i] == 1``), the nodes
    off it (there ``(t - z_j)(t - z_l) = 1``)."""
    n = cid.shape[0]
    M = sqa.shape[0]
    qsum = 0.0
    for m in range(M):
        qsum += sqa[m] * sqa[m]
    a = np.empty(M)  # sqrt(alpha)^2 (t_i - z_j) of the slot being updated, on the support
    for i in range(n):
        outside = 0.0
        if sref[i] == 1:
            outside = qsum
            for q in range(slen[i]):
                outside -= sqa[supp[i, q]] * sqa[supp[i, q]]
        full = sref[i] == 0 and 2 * slen[i] >= M  # read along all nodes (0 off the support)
        for j in range(clen[i]):
            if not dirty[i, j]:
                continue
            pj = cid[i, j]
            if pj >= 0:
                if full:
                    for m in range(M):
                        a[m] = sqa[m] * sqa[m] * (Tf[i, m] - pool[pj, m])
                else:
                    for q in range(slen[i]):
                        m = supp[i, q]
                        a[m] = sqa[m] * sqa[m] * (Tf[i, m] - pool[pj, m])
            for l in range(clen[i]):
                pl = cid[i, l]
                acc = 0.0
                if pj >= 0 and pl >= 0:
                    acc = outside
                    if full:
                        for m in range(M):
                            acc += a[m] * (Tf[i, m] - pool[pl, m])
                    else:
                        for q in range(slen[i]):
                            m = supp[i, q]
                            acc += a[m] * (Tf[i, m] - pool[pl, m])
                acc *= cscale[i, j] * cscale[i, l]
                Q[i, j, l] = acc
                Q[i, l, j] = acc
            dirty[i, j] = False


@njit(cache=True)
def _keep_support(i, mark, count, supp, slen, sref, ones_share, rebuilt):
    """Sample ``i``'s support from its two candidate unions (``mark`` bits 1 and 2, sizes
    ``count[i]``): the all-ones one when it is the smaller and at most ``ones_share`` of the
    nodes, else the true set's; listed in node order unless it is the one already listed
    (and the unions were not ``rebuilt``)."""
    M = mark.shape[1]
    ref = 1 if count[i, 1] < count[i, 0] and count[i, 1] <= ones_share * M else 0
    if not rebuilt and ref == sref[i] and slen[i] == count[i, ref]:
        return
    bit = ref + 1
    sref[i] = ref
    k = 0
    for m in range(M):
        if mark[i, m] & bit:
            supp[i, k] = m
            k += 1
    slen[i] = k


@njit(cache=True)
def extend_support(pool, rows, ids, Tf, mark, count, supp, slen, sref, ones_share):
    """Add vertex ``pool[ids[e]]`` to sample ``rows[e]``'s two candidate supports and keep the
    smaller as its support (``supp``, ``slen``, in increasing node order: the sweeps then
    stream the weight rows; ``sref`` its reference set).

    Relative to the true set (bit 1 of ``mark``, size ``count[i, 0]``): the nodes where some
    vertex differs from ``t_i``.  Relative to the all-ones set (bit 2, ``count[i, 1]``): the
    nodes of ``t_i`` and those some vertex lacks.  Both are unions that only grow, so a block
    changes its reference at most a few times.  The all-ones reference is taken only when its
    support is the smaller and at most ``ones_share`` of the nodes (a block held relative to
    the true set reads a support of most nodes along whole rows, which is faster than through
    an index)."""
    M = pool.shape[1]
    for e in range(rows.size):
        i = rows[e]
        p = ids[e]
        for m in range(M):
            z = pool[p, m]
            t = Tf[i, m]
            if z != t and (mark[i, m] & 1) == 0:
                mark[i, m] |= 1
                count[i, 0] += 1
            if (t != 0 or z == 0) and (mark[i, m] & 2) == 0:
                mark[i, m] |= 2
                count[i, 1] += 1
        _keep_support(i, mark, count, supp, slen, sref, ones_share, False)


@njit(cache=True, fastmath=_FAST)
def leaf_oracle(s, li, paths, offset, scale):
    """Most violating leaf for node scores ``s``: ``(leaf or -1 for the true one, value)``."""
    q, M = paths.shape
    own = 0.0
    for m in range(M):
        own += paths[li, m] * s[m]
    best = -1
    value = 0.0
    for leaf in range(q):
        if leaf == li:
            continue
        c = 0.0
        for m in range(M):
            c += paths[leaf, m] * s[m]
        v = offset[li, leaf] + scale[li, leaf] * (c - own)
        if v > value:
            value = v
            best = leaf
    return best, value


@njit(cache=True, fastmath=_FAST)
def bcfw_sweep_single(order, rows, V, sqa, paths, leaf_pos, offset, scale, G, lsum, xsq, inv2lam):
    """Lacoste-Julien et al.'s BCFW pass (single-label): fresh argmax, one FW step per sample.

    Returns the sum of the block gaps met (an estimate of the duality gap: ``W`` moves during
    the pass)."""
    mode, Xd, indptr, indices, xvals, K = rows
    M = V.shape[0]
    r = np.empty(M)
    s = np.empty(M)
    dg = np.empty(M)
    gaps = 0.0
    for i in order:
        node_products(mode, V, i, Xd, indptr, indices, xvals, r)
        for m in range(M):
            r[m] *= inv2lam
            s[m] = sqa[m] * r[m]
        li = leaf_pos[i]
        best, value = leaf_oracle(s, li, paths, offset, scale)
        b_s = 0.0
        if best >= 0:
            b_s = offset[li, best]
        gain = b_s - lsum[i]
        kappa = 0.0
        for m in range(M):
            c = 0.0
            if best >= 0:
                c = scale[li, best] * (paths[li, m] - paths[best, m])
            dg[m] = c - G[i, m]
            gain -= sqa[m] * dg[m] * r[m]
            kappa += (sqa[m] * dg[m]) ** 2
        kappa *= xsq[i] * inv2lam
        if gain <= 0.0:
            continue
        gaps += gain
        gamma = 1.0 if kappa <= 0.0 else min(1.0, gain / kappa)
        for m in range(M):
            dg[m] *= gamma
            G[i, m] += dg[m]
            dg[m] *= sqa[m]
        lsum[i] += gamma * (b_s - lsum[i])
        add_outer(mode, V, dg, i, Xd, indptr, indices, xvals, K)
    return gaps


@njit(cache=True, fastmath=_FAST)
def sgd_epoch_single(order, rows, Wraw, state, sqa, paths, leaf_pos, offset, scale, xsq, lam_p,
                     radius):
    """One Pegasos epoch (single-label).  ``W = state[0] * Wraw``; ``state = [scale, ||W||^2, t]``."""
    mode, Xd, indptr, indices, xvals, K = rows
    M = Wraw.shape[0]
    r = np.empty(M)
    s = np.empty(M)
    a = np.empty(M)
    for i in order:
        state[2] += 1.0
        t = state[2]
        sc = state[0]
        node_products(mode, Wraw, i, Xd, indptr, indices, xvals, r)
        for m in range(M):
            r[m] *= sc
            s[m] = sqa[m] * r[m]
        li = leaf_pos[i]
        best, value = leaf_oracle(s, li, paths, offset, scale)
        shrink = 1.0 - 1.0 / t
        if shrink <= 0.0:
            Wraw[:, :] = 0.0
            state[0] = 1.0
            state[1] = 0.0
            sc = 1.0
            for m in range(M):
                r[m] = 0.0
        else:
            state[0] = sc * shrink
            state[1] *= shrink * shrink
            sc = state[0]
            for m in range(M):
                r[m] *= shrink
        if best >= 0:
            eta = 1.0 / (lam_p * t)
            dot = 0.0
            nrm = 0.0
            for m in range(M):
                a[m] = eta * sqa[m] * scale[li, best] * (paths[li, m] - paths[best, m])
                dot += a[m] * r[m]
                nrm += a[m] * a[m]
            state[1] += 2.0 * dot + nrm * xsq[i]
            for m in range(M):
                a[m] /= sc
            add_outer(mode, Wraw, a, i, Xd, indptr, indices, xvals, K)
        if state[1] > radius * radius:
            state[0] *= radius / np.sqrt(state[1])
            state[1] = radius * radius
        if state[0] < 1e-8:  # fold the scale back in before it underflows
            Wraw *= state[0]
            state[0] = 1.0
    return state[2]


@njit(cache=True)
def pairwise_sweeps(active, n_sweeps, seed, rows, V, sqa, Tf, cache, lsum, xsq, inv2lam, eps,
                    max_steps, bgap, ahead=0, by_feature=False, batch=1):
    """Up to ``n_sweeps`` of :func:`pairwise_sweep` over ``active`` in random orders (seeded by
    ``seed``), each dropping the blocks whose cached gap fell below ``eps``, each reading
    ``ahead`` blocks ahead; returns the block visits, the blocks still active and the sum of
    the values read ahead.  ``V`` ``(M, d)`` is updated in place (the shift ``u`` of the
    sweeps folded back in at the end); with ``by_feature`` (dense or CSR rows; Gram rows keep
    the node layout) the sweeps work on a copy stored by feature, copied back at the end, in
    batches of up to ``batch`` blocks (:func:`pairwise_sweep`)."""
    mode, Xd, indptr, indices, xvals, K = rows
    M, d = V.shape
    by_feature = by_feature and mode != 2
    aux = np.zeros((2, d))  # u and V^T sqrt(alpha)
    for m in range(M):
        for f in range(d):
            aux[1, f] += sqa[m] * V[m, f]
    work = np.ascontiguousarray(V.T) if by_feature else V
    np.random.seed(seed)
    visits = 0
    touched = 0.0
    for _ in range(n_sweeps):
        if active.size == 0:
            break
        order = np.random.permutation(active)
        touched += pairwise_sweep(order, rows, work, aux, sqa, Tf, cache, lsum, xsq, inv2lam,
                                  eps, max_steps, bgap, ahead, by_feature, batch)[2]
        visits += order.size
        active = active[bgap[active] > eps]
    for m in range(M):
        for f in range(d):
            if by_feature:
                V[m, f] = work[f, m]
            V[m, f] -= sqa[m] * aux[0, f]
    return visits, active, touched


@njit(cache=True, fastmath=_FAST)
def resync_kernel(rows, pool, cid, cbeta, coff, cscale, Tf, supp, slen, sref, G, lsum):
    """``g_i = sum_j beta_ij sigma_ij (t_i - z_j)`` and ``l_i = sum_j beta_ij b_ij`` from the
    cached masses (slots with mass only), written into ``G[i]`` and ``lsum[i]`` for the
    samples ``rows``; ``g_i`` is computed on the block's support ``supp[i, :slen[i]]``; off
    it, it is 0, or ``-sum_j beta_ij sigma_ij`` for a block held relative to the all-ones set
    (``sref[i] == 1``)."""
    M = G.shape[1]
    for i in rows:
        lsum[i] = 0.0
        mass = 0.0
        for j in range(cid.shape[1]):
            if cid[i, j] >= 0 and cbeta[i, j] > 0.0:
                mass += cbeta[i, j] * cscale[i, j]
        base = -mass if sref[i] == 1 else 0.0
        for m in range(M):
            G[i, m] = base
        for q in range(slen[i]):
            G[i, supp[i, q]] = 0.0
        full = sref[i] == 0 and 2 * slen[i] >= M  # read along all nodes (0 off the support)
        for j in range(cid.shape[1]):
            b = cbeta[i, j]
            p = cid[i, j]
            if p < 0 or b <= 0.0:
                continue
            lsum[i] += b * coff[i, j]
            w = b * cscale[i, j]
            if full:
                for m in range(M):
                    G[i, m] += w * (Tf[i, m] - pool[p, m])
            else:
                for q in range(slen[i]):
                    m = supp[i, q]
                    G[i, m] += w * (Tf[i, m] - pool[p, m])


@njit(cache=True)
def compact_slots(rows, drop, cid, cbeta, coff, cscale, idle, clen, Q, dirty):
    """Remove the slots flagged in ``drop`` from the caches of the samples ``rows``: the kept
    slots move to the front in their order, with their rows and columns of the Gram matrix
    ``Q`` and their flags; the freed slots get id ``-1``."""
    K = cid.shape[1]
    keep = np.empty(K, dtype=np.int64)
    for e in range(rows.size):
        i = rows[e]
        k = 0
        for j in range(clen[i]):
            if not drop[i, j]:
                keep[k] = j
                k += 1
        for a in range(k):
            ja = keep[a]
            for b in range(k):
                Q[i, a, b] = Q[i, ja, keep[b]]
            cid[i, a] = cid[i, ja]
            cbeta[i, a] = cbeta[i, ja]
            coff[i, a] = coff[i, ja]
            cscale[i, a] = cscale[i, ja]
            idle[i, a] = idle[i, ja]
            dirty[i, a] = dirty[i, ja]
        for a in range(k, clen[i]):
            cid[i, a] = -1
            cbeta[i, a] = 0.0
            idle[i, a] = 0
            dirty[i, a] = False
        clen[i] = k


@njit(cache=True)
def rebuild_support(pool, rows, cid, clen, Tf, mark, count, supp, slen, sref, ones_share):
    """Recompute the two candidate supports of the samples ``rows`` from the vertices their
    caches hold now (:func:`extend_support`'s unions restarted) and keep one as it does."""
    M = pool.shape[1]
    for e in range(rows.size):
        i = rows[e]
        count[i, 0] = 0
        count[i, 1] = 0
        for m in range(M):
            t = Tf[i, m]
            bits = 2 if t != 0 else 0
            for j in range(clen[i]):
                z = pool[cid[i, j], m]
                if z != t:
                    bits |= 1
                if z == 0:
                    bits |= 2
                if bits == 3:
                    break
            mark[i, m] = bits
            count[i, 0] += bits & 1
            count[i, 1] += bits >> 1
        _keep_support(i, mark, count, supp, slen, sref, ones_share, True)
