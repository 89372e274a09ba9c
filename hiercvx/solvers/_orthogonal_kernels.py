"""Compiled kernels of the dual block-coordinate ascent for orthogonal transfer.

The loops of :mod:`hiercvx.solvers.orthogonal_dual` (Zhou, Xiao, Wu, "Hierarchical
Classification via Orthogonal Transfer", ICML 2011: problem (4) and the baselines of its
section 5), kept apart from the policy that calls them:

* ``S^{-1}`` block by block over the components of the pattern of ``K`` (or of the baseline's
  fixed ``S``): :func:`invert_small_blocks`, :func:`apply_blocks`, :func:`q_entry`;
* one pass of dual coordinate ascent over the slacks (:func:`sweep`), a slack's step on its
  working set (:func:`block_step`, by :func:`~hiercvx.solvers.primitives.budget_qp`) and the
  exact step of a slack of Crammer--Singer's shape (:func:`cs_block`; Crammer and Singer,
  JMLR 2001);
* the Hessian product of the dual restricted to a support (:func:`support_matvec`), used by
  the final conjugate-gradient step.

The compiled functions take a few records (:class:`PairArrays`, :class:`ClassArrays`,
:class:`QBlocks`, :class:`DualState`, :class:`Scratch`, :class:`WorkingSet`,
:class:`StepSettings`, and :class:`~hiercvx.solvers.primitives.RowData` for the features),
not dozens of positional arrays; numba compiles attribute access on a named tuple to a field
load.

Notation: a slack ``s`` owns the pairs ``p in [pair_ptr[s], pair_ptr[s+1])``, each pair a
positive class ``pos[p]`` and a negative class ``neg[p]`` with coefficient row ``b_p =
Lam_pos - Lam_neg`` over the weight rows; ``Q = S^{-1}``; the dual is ``D(alpha, S) = sum_p
alpha_p - 1/2 tr(U^T Q U)``, ``U = sum_p alpha_p b_p x_s^T`` (the module docstring of
:mod:`hiercvx.solvers.orthogonal_dual`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .margin_dual import ROW_FASTMATH
from .primitives import budget_qp, row_axpy, row_dot

__all__ = ["PairArrays", "ClassArrays", "QBlocks", "DualState", "Scratch", "WorkingSet", "StepSettings",
           "invert_small_blocks", "apply_blocks", "pattern_gram", "q_entry", "cs_block", "sweep",
           "block_step", "support_matvec"]


class PairArrays(NamedTuple):
    """The margin rows, grouped by slack."""

    ptr: np.ndarray       # (n_slacks + 1,) the pairs of slack s are ptr[s]:ptr[s+1]
    pos: np.ndarray       # (P,) positive class of each pair
    neg: np.ndarray       # (P,) negative class of each pair
    cost: np.ndarray      # (P,) 1 / Delta_p: a pair's weight in its slack's budget
    budget: np.ndarray    # (n_slacks,) C Cw_s: the bound on sum_p alpha_p / Delta_p
    sqn: np.ndarray       # (n_slacks,) ||x_s||^2
    cs_slack: np.ndarray  # (n_slacks,) bool: the slack has Crammer--Singer's shape (cs_block)


class ClassArrays(NamedTuple):
    """The classes' rows of ``Lam`` over the weight rows (CSR) and, under a fixed ``S``, their
    Gram matrix ``Lam S^{-1} Lam^T`` (TREELOSS's paths)."""

    ptr: np.ndarray
    node: np.ndarray
    val: np.ndarray
    gram: np.ndarray      # (q, q), or (1, 1) when unused
    use_gram: bool


class QBlocks(NamedTuple):
    """``Q = S^{-1}`` by blocks: ``Q[u, v] = Qflat[q_off[b] + node_pos[u] * size_b +
    node_pos[v]]`` when u and v lie in block b (``size_b = blk_ptr[b+1] - blk_ptr[b]``), else 0."""

    node_block: np.ndarray
    node_pos: np.ndarray
    blk_ptr: np.ndarray
    blk_nodes: np.ndarray
    q_off: np.ndarray
    Qflat: np.ndarray


class DualState(NamedTuple):
    """What a pass updates in place."""

    W: np.ndarray           # (m, d) W = S^{-1} U(alpha), kept up to date incrementally
    alpha: np.ndarray       # (P,) pair multipliers
    used: np.ndarray        # (n_slacks,) sum_p alpha_p cost_p
    slack_viol: np.ndarray  # (n_slacks,) KKT violation at the slack's last visit


class Scratch(NamedTuple):
    """Per-visit caches: class and node scores stamped by visit, the touched rows."""

    cscore: np.ndarray
    cstamp: np.ndarray
    nscore: np.ndarray
    nstamp: np.ndarray
    coef: np.ndarray
    tstamp: np.ndarray
    touched: np.ndarray
    gall: np.ndarray   # gradient of every pair of the slack
    qall: np.ndarray   # Q's diagonal entries of the negatives (cs_block)


class WorkingSet(NamedTuple):
    """A slack's working set and its block QP."""

    ws: np.ndarray   # pair indices
    Hk: np.ndarray   # (k, k) Hessian
    gk: np.ndarray
    ak: np.ndarray   # the new multipliers
    ck: np.ndarray


class StepSettings(NamedTuple):
    """Settings of a pass (from :class:`hiercvx.solvers.orthogonal_dual.Options`)."""

    n_enter: int       # pairs entering a working set per visit besides the support
    eps: float         # slacks violating KKT by at most this are skipped
    inner_tol: float   # tolerance of budget_qp on a block


@njit(cache=True)
def invert_small_blocks(data, groups, blk_ptr, q_off, sc_ptr, sc_at, sc_flat, out, A):
    """``out`` (flat, like ``Qflat``) ``= S_b^{-1}`` for each block ``b`` in ``groups``, by a
    Cholesky factorization ``S_b = L L^T`` and ``S_b^{-1} = L^{-T} L^{-1}``; False when a
    block is not positive definite."""
    for b in groups:
        k = blk_ptr[b + 1] - blk_ptr[b]
        for t in range(k * k):
            A[t] = 0.0
        for t in range(sc_ptr[b], sc_ptr[b + 1]):
            A[sc_flat[t]] = data[sc_at[t]]
        # Cholesky in place, lower triangle (row-major k x k)
        for j in range(k):
            acc = A[j * k + j]
            for r in range(j):
                acc -= A[j * k + r] * A[j * k + r]
            if not acc > 0.0:
                return False
            ljj = np.sqrt(acc)
            A[j * k + j] = ljj
            for i in range(j + 1, k):
                acc = A[i * k + j]
                for r in range(j):
                    acc -= A[i * k + r] * A[j * k + r]
                A[i * k + j] = acc / ljj
        # L^{-1} in the upper part is not needed: invert L column by column into out, then Q
        off = q_off[b]
        for t in range(k * k):
            out[off + t] = 0.0
        for c in range(k):  # solve L z = e_c, then L^T q = z: column c of S_b^{-1}
            for i in range(k):
                acc = 1.0 if i == c else 0.0
                for r in range(i):
                    acc -= A[i * k + r] * out[off + r * k + c]
                out[off + i * k + c] = acc / A[i * k + i]
            for i in range(k - 1, -1, -1):
                acc = out[off + i * k + c]
                for r in range(i + 1, k):
                    acc -= A[r * k + i] * out[off + r * k + c]
                out[off + i * k + c] = acc / A[i * k + i]
    return True


@njit(cache=True)
def apply_blocks(Qflat, blk_ptr, blk_nodes, q_off, U, Z):
    """``Z = Q U`` block by block."""
    d = U.shape[1]
    for b in range(blk_ptr.shape[0] - 1):
        k = blk_ptr[b + 1] - blk_ptr[b]
        off = q_off[b]
        for i in range(k):
            v = blk_nodes[blk_ptr[b] + i]
            for f in range(d):
                Z[v, f] = 0.0
            for j in range(k):
                q = Qflat[off + i * k + j]
                if q != 0.0:
                    u = blk_nodes[blk_ptr[b] + j]
                    for f in range(d):
                        Z[v, f] += q * U[u, f]


@njit(cache=True, fastmath=ROW_FASTMATH)
def pattern_gram(rows, cols, W, out):
    """``out[e] = <W[rows[e]], W[cols[e]]>``: the Gram matrix of the rows on a sparsity pattern."""
    for e in range(rows.shape[0]):
        acc = 0.0
        for f in range(W.shape[1]):
            acc += W[rows[e], f] * W[cols[e], f]
        out[e] = acc



@njit(cache=True, inline="always")
def q_entry(u, v, node_block, node_pos, blk_ptr, q_off, Qflat):
    b = node_block[u]
    if node_block[v] != b:
        return 0.0
    size = blk_ptr[b + 1] - blk_ptr[b]
    return Qflat[q_off[b] + node_pos[u] * size + node_pos[v]]


@njit(cache=True)
def root_on_segments(bp, w, c, target):
    """The ``theta`` with ``c theta - sum_p w_p max(0, bp_p - theta) = target`` (``c >= 0``,
    ``w > 0``: the left side increases), ``bp`` sorted in decreasing order; NaN if none."""
    S1 = 0.0
    S2 = 0.0
    n = bp.shape[0]
    for k in range(n + 1):  # theta in [bp[k], bp[k-1]]: the first k breakpoints are active
        if c + S2 > 0.0:
            theta = (target + S1) / (c + S2)
            upper = bp[k - 1] if k > 0 else np.inf
            lower = bp[k] if k < n else -np.inf
            if lower <= theta <= upper:
                return theta
        if k < n:
            S1 += w[k] * bp[k]
            S2 += w[k]
    return np.nan


@njit(cache=True)
def cs_block(g, a0, qn, A, q0, budget, n, out):
    """Exact step of a Crammer--Singer-shaped slack: every pair has the same positive class,
    distinct negatives, unit cost and ``b_p^T Q b_r = q0 + [p = r] q_p``.  Maximizes
    ``sum g_p (a_p - a0_p) - A/2 (q0 (sum a - sum a0)^2 + sum q_p (a_p - a0_p)^2)`` over
    ``a >= 0, sum a <= budget`` into ``out``: ``a_p = w_p max(0, bp_p - theta)`` with ``w_p =
    1 / (A q_p)``, ``bp_p = g_p + A q_p a0_p`` and ``theta = A q0 (sum a - sum a0) + lambda``,
    ``lambda >= 0`` the budget's multiplier, found on the sorted breakpoints in O(n log n).
    False when a root is not found (round-off): the caller takes the general path."""
    t0 = 0.0
    w = np.empty(n)
    bp = np.empty(n)
    for p in range(n):
        t0 += a0[p]
        w[p] = 1.0 / (A * qn[p])
        bp[p] = g[p] + A * qn[p] * a0[p]
    idx = np.argsort(-bp)
    bps = bp[idx]
    wso = w[idx]
    theta = root_on_segments(bps, wso, 1.0 / (A * q0), -t0)  # lambda = 0
    if np.isnan(theta):
        return False
    total = 0.0
    for r in range(n):
        if bps[r] > theta:
            total += wso[r] * (bps[r] - theta)
    if total > budget:  # the budget binds: sum_p w_p max(0, bp_p - theta) = budget
        theta = root_on_segments(bps, wso, 0.0, -budget)
        if np.isnan(theta):
            return False
    for p in range(n):
        v = w[p] * (bp[p] - theta)
        out[p] = max(0.0, v)
    return True



@njit(cache=True, fastmath=ROW_FASTMATH)
def sweep(order, rows, pairs, classes, qb, state, scratch, wk, settings):
    """One pass of dual block-coordinate ascent over the slacks in ``order``.

    At each slack ``s`` the gradient of every pair, ``g_p = 1 - (score_pos - score_neg)`` at
    ``x_s``, is formed from per-visit caches of class and node scores; the slack's KKT
    violation is ``max_p g_p / cost_p - min_{alpha_p > 0} g_p / cost_p`` (with ``0`` in the
    min while its budget is slack).  A violated slack takes :func:`cs_block`'s exact step when
    it has Crammer--Singer's shape, else :func:`block_step` on its working set; ``W`` then
    moves by ``(Q c) x_s^T``, ``c = sum_p dalpha_p b_p``, touching only the blocks of ``Q``
    that the pairs meet.

    Parameters
    ----------
    order : slacks to visit, in that order
    rows : :class:`~hiercvx.solvers.primitives.RowData` of the slacks' feature rows
    pairs, classes, qb : :class:`PairArrays`, :class:`ClassArrays`, :class:`QBlocks`
    state : :class:`DualState`, updated in place (``slack_viol`` for the visited slacks)
    scratch, wk : :class:`Scratch`, :class:`WorkingSet` (sized by the caller)
    settings : :class:`StepSettings`

    Returns
    -------
    ``(max_viol, work)``: the largest KKT violation met and the multiply-adds spent.
    """
    mode, X, indptr, indices, xvals, Kg = rows
    pair_ptr, cost, budget = pairs.ptr, pairs.cost, pairs.budget
    W, alpha, used, slack_viol = state
    cstamp, nstamp, coef, tstamp, touched, gall = (scratch.cstamp, scratch.nstamp, scratch.coef,
                                                   scratch.tstamp, scratch.touched, scratch.gall)
    eps = settings.eps
    max_viol = 0.0
    work = 0.0
    stamp = cstamp.max() if cstamp.shape[0] > 0 else 0
    nst = nstamp.max() if nstamp.shape[0] > 0 else 0
    tst = tstamp.max() if tstamp.shape[0] > 0 else 0
    nnz_row = X.shape[1]
    for s in order:
        p0 = pair_ptr[s]
        p1 = pair_ptr[s + 1]
        if p1 == p0 or budget[s] <= 0.0:
            continue
        if mode == 1:
            nnz_row = indptr[s + 1] - indptr[s]
        stamp += 1
        nst += 1
        work += nnz_row * _pair_gradients(s, p0, p1, rows, W, pairs, classes, scratch, stamp, nst)
        slack = max(budget[s] - used[s], 0.0)
        r_up, r_down = _violation_ends(p0, p1, slack, alpha, gall, cost)
        if r_down == np.inf:
            slack_viol[s] = 0.0
            continue
        viol = r_up - r_down
        slack_viol[s] = viol
        max_viol = max(max_viol, viol)
        if viol <= eps:
            continue
        k = 0  # Crammer-Singer's shape: the exact step over all the pairs, else a working set
        if pairs.cs_slack[s] and pairs.sqn[s] > 0.0:
            k = _crammer_singer_step(s, p0, p1, pairs, classes, qb, alpha, scratch, wk)
            work += k * 8
        if k == 0:
            k = block_step(s, p0, p1, slack, r_down, alpha, gall, pairs, classes, qb, wk, settings)
            work += k * k * 4
        # apply: alpha, the budget, and W += (Q c) x_s^T with c = sum dalpha_p b_p
        tst += 1
        n_touched = _step_coefficients(s, k, pairs, classes, qb, state, scratch, wk, tst)
        for t in range(n_touched):
            v = touched[t]
            if coef[v] != 0.0:
                row_axpy(mode, W, v, s, coef[v], X, indptr, indices, xvals, Kg)
                work += nnz_row
    return max_viol, work


@njit(cache=True, inline="always")
def _pair_gradients(s, p0, p1, rows, W, pairs, classes, scratch, stamp, nst):
    """``gall[p - p0] = 1 - (score_pos - score_neg)`` at ``x_s`` for the pairs of slack ``s``,
    the class and node scores cached for the visit (stamps ``stamp``, ``nst``); returns the
    node scores computed (each a dot product with ``x_s``)."""
    mode, X, indptr, indices, xvals, _ = rows
    pair_pos, pair_neg = pairs.pos, pairs.neg
    cls_ptr, cls_node, cls_val = classes.ptr, classes.node, classes.val
    cscore, cstamp, nscore, nstamp, gall = (scratch.cscore, scratch.cstamp, scratch.nscore,
                                            scratch.nstamp, scratch.gall)
    n_dots = 0
    for p in range(p0, p1):
        for c in (pair_pos[p], pair_neg[p]):
            if cstamp[c] != stamp:
                cstamp[c] = stamp
                acc = 0.0
                for k in range(cls_ptr[c], cls_ptr[c + 1]):
                    v = cls_node[k]
                    if nstamp[v] != nst:
                        nstamp[v] = nst
                        nscore[v] = row_dot(mode, W, v, s, X, indptr, indices, xvals)
                        n_dots += 1
                    acc += cls_val[k] * nscore[v]
                cscore[c] = acc
        gall[p - p0] = 1.0 - (cscore[pair_pos[p]] - cscore[pair_neg[p]])
    return n_dots


@njit(cache=True, inline="always")
def _violation_ends(p0, p1, slack, alpha, gall, cost):
    """The two ends of a slack's KKT violation: the largest ``g_p / cost_p`` (at least 0) and
    the smallest over the pairs holding mass (``0`` while the budget is slack; ``inf`` when
    nothing can decrease)."""
    r_up = 0.0
    r_down = 0.0 if slack > 0.0 else np.inf
    for p in range(p0, p1):
        r = gall[p - p0] / cost[p]
        r_up = max(r_up, r)
        if alpha[p] > 0.0 and r < r_down:
            r_down = r
    return r_up, r_down


@njit(cache=True, inline="always")
def _crammer_singer_step(s, p0, p1, pairs, classes, qb, alpha, scratch, wk):
    """:func:`cs_block`'s exact step over every pair of slack ``s`` (Crammer--Singer's
    shape), into ``wk.ak`` on the working set ``wk.ws`` of all its pairs; returns the pairs
    stepped on, or 0 when the exact step does not apply."""
    cls_ptr, cls_node = classes.ptr, classes.node
    node_block, node_pos, blk_ptr, _, q_off, Qflat = qb
    qall = scratch.qall
    n_p = p1 - p0
    u0 = cls_node[cls_ptr[pairs.pos[p0]]]
    q0 = q_entry(u0, u0, node_block, node_pos, blk_ptr, q_off, Qflat)
    for p in range(p0, p1):
        v = cls_node[cls_ptr[pairs.neg[p]]]
        qall[p - p0] = q_entry(v, v, node_block, node_pos, blk_ptr, q_off, Qflat)
    if not cs_block(scratch.gall, alpha[p0:p1], qall, pairs.sqn[s], q0, pairs.budget[s], n_p,
                    wk.ak):
        return 0
    for p in range(p0, p1):
        wk.ws[p - p0] = p
    return n_p


@njit(cache=True, inline="always")
def _step_coefficients(s, k, pairs, classes, qb, state, scratch, wk, tst):
    """Take the step ``wk.ak`` on the working set ``wk.ws[:k]`` of slack ``s``: the
    multipliers and the slack's budget use, and ``coef = Q c`` over the touched nodes (``c =
    sum_p dalpha_p b_p``, spread over the blocks of ``Q`` the pairs meet; stamp ``tst``);
    returns the number of touched nodes (``scratch.touched[:n]``)."""
    pair_pos, pair_neg, cost = pairs.pos, pairs.neg, pairs.cost
    cls_ptr, cls_node, cls_val = classes.ptr, classes.node, classes.val
    node_block, node_pos, blk_ptr, blk_nodes, q_off, Qflat = qb
    alpha, used = state.alpha, state.used
    coef, tstamp, touched = scratch.coef, scratch.tstamp, scratch.touched
    ws, ak = wk.ws, wk.ak
    n_touched = 0
    total = 0.0
    for a in range(k):
        pa = ws[a]
        da = ak[a] - alpha[pa]
        ak[a] = max(ak[a], 0.0)
        alpha[pa] = ak[a]
        total += ak[a] * cost[pa]
        if da == 0.0:
            continue
        for side in range(2):
            c = pair_pos[pa] if side == 0 else pair_neg[pa]
            sgn = da if side == 0 else -da
            for kk in range(cls_ptr[c], cls_ptr[c + 1]):
                u = cls_node[kk]
                # spread over u's block: coef[v] += Q[v, u] * sgn * val
                b = node_block[u]
                size = blk_ptr[b + 1] - blk_ptr[b]
                base = q_off[b] + node_pos[u]
                for t in range(blk_ptr[b], blk_ptr[b + 1]):
                    v = blk_nodes[t]
                    if tstamp[v] != tst:
                        tstamp[v] = tst
                        coef[v] = 0.0
                        touched[n_touched] = v
                        n_touched += 1
                    coef[v] += Qflat[base + node_pos[v] * size] * sgn * cls_val[kk]
    used[s] = total
    return n_touched


@njit(cache=True)
def block_step(s, p0, p1, slack, r_down, alpha, gall, pairs, classes, qb, wk, settings):
    """A slack's step on its working set: the pairs of ``s`` (``p0:p1``) with ``alpha_p > 0``
    and the ``settings.n_enter`` most violated others (``g_p / cost_p`` above ``r_down``).  The
    block's Hessian is ``||x_s||^2 b_a^T Q b_b`` (from the classes' Gram matrix when
    ``classes.use_gram``), its QP is solved by :func:`~hiercvx.solvers.primitives.budget_qp`
    with the unused budget ``slack``.  The working set goes to ``wk.ws``, its new multipliers
    to ``wk.ak``; returns its size."""
    pair_pos, pair_neg, cost, sqn = pairs.pos, pairs.neg, pairs.cost, pairs.sqn
    cls_ptr, cls_node, cls_val, class_gram, use_gram = classes
    node_block, node_pos, blk_ptr, _blk_nodes, q_off, Qflat = qb
    ws, Hk, gk, ak, ck = wk
    n_enter, _eps, inner_tol = settings
    k = 0
    for p in range(p0, p1):
        if alpha[p] > 0.0:
            ws[k] = p
            k += 1
    n_sup = k
    for e in range(n_enter):
        best = -1
        best_r = max(r_down, 0.0)
        for p in range(p0, p1):
            if alpha[p] > 0.0:
                continue
            r = gall[p - p0] / cost[p]
            if r > best_r:
                taken = False
                for j in range(n_sup, k):
                    if ws[j] == p:
                        taken = True
                        break
                if not taken:
                    best_r = r
                    best = p
        if best < 0:
            break
        ws[k] = best
        k += 1
    # the block's Hessian ||x_s||^2 b_a^T Q b_b over the working set
    for a in range(k):
        pa = ws[a]
        gk[a] = gall[pa - p0]
        ak[a] = alpha[pa]
        ck[a] = cost[pa]
        for b in range(a, k):
            pb = ws[b]
            h = 0.0
            if use_gram:  # b_a^T Q b_b from the classes' Gram matrix Lam Q Lam^T
                ya, na, yb, nb = pair_pos[pa], pair_neg[pa], pair_pos[pb], pair_neg[pb]
                h = class_gram[ya, yb] - class_gram[ya, nb] - class_gram[na, yb] + class_gram[na, nb]
                Hk[a, b] = h * sqn[s]
                Hk[b, a] = Hk[a, b]
                continue
            for side_a in range(2):
                ca = pair_pos[pa] if side_a == 0 else pair_neg[pa]
                sa = 1.0 if side_a == 0 else -1.0
                for side_b in range(2):
                    cb = pair_pos[pb] if side_b == 0 else pair_neg[pb]
                    sb = 1.0 if side_b == 0 else -1.0
                    for ka in range(cls_ptr[ca], cls_ptr[ca + 1]):
                        u = cls_node[ka]
                        for kb in range(cls_ptr[cb], cls_ptr[cb + 1]):
                            v = cls_node[kb]
                            q = q_entry(u, v, node_block, node_pos, blk_ptr, q_off, Qflat)
                            h += sa * sb * cls_val[ka] * cls_val[kb] * q
            Hk[a, b] = h * sqn[s]
            Hk[b, a] = Hk[a, b]
    budget_qp(Hk, gk, ak, ck, slack, k, inner_tol, 50 * k + 50)
    return k


@njit(cache=True, fastmath=ROW_FASTMATH)
def support_matvec(v, sup, pair_slack, rows, pairs, classes, qb, U, Z, out):
    """``out = H_PP v``: the dual Hessian on the pairs ``sup`` (``H_pr = x_s^T x_t b_p^T Q b_r``,
    ``pair_slack`` the slack of each pair) times ``v``, as ``U = sum_p v_p b_p x_s^T``,
    ``Z = Q U``, ``out_p = b_p^T Z x_s``; ``U`` and ``Z`` are ``(m, d)`` work arrays."""
    mode, X, indptr, indices, xvals, Kg = rows
    pair_pos, pair_neg = pairs.pos, pairs.neg
    cls_ptr, cls_node, cls_val = classes.ptr, classes.node, classes.val
    _node_block, _node_pos, blk_ptr, blk_nodes, q_off, Qflat = qb
    U[:, :] = 0.0
    for t in range(sup.shape[0]):
        p = sup[t]
        a = v[t]
        if a == 0.0:
            continue
        s = pair_slack[p]
        for side in range(2):
            c = pair_pos[p] if side == 0 else pair_neg[p]
            sg = a if side == 0 else -a
            for k in range(cls_ptr[c], cls_ptr[c + 1]):
                row_axpy(mode, U, cls_node[k], s, sg * cls_val[k], X, indptr, indices, xvals, Kg)
    apply_blocks(Qflat, blk_ptr, blk_nodes, q_off, U, Z)
    for t in range(sup.shape[0]):
        p = sup[t]
        s = pair_slack[p]
        acc = 0.0
        for side in range(2):
            c = pair_pos[p] if side == 0 else pair_neg[p]
            sg = 1.0 if side == 0 else -1.0
            for k in range(cls_ptr[c], cls_ptr[c + 1]):
                acc += sg * cls_val[k] * row_dot(mode, Z, cls_node[k], s, X, indptr, indices, xvals)
        out[t] = acc
