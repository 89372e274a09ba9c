"""Compiled kernels of the working-set passes (:mod:`.working_set`, Cai thesis Algorithm 2).

:func:`sweep` visits examples one at a time (steps 3-9 of Algorithm 2): it reads the class
scores of the example's live pairs from the score factor, computes the violations ``H_p``
(thesis (4.24)) and the score ``psi_i`` (4.29)-(4.32), grows the working set by the most
violated pairs (steps 6-7), solves the reduced QP (step 8a, :func:`~.primitives.budget_qp`),
drops the pairs whose alpha fell to 0 (step 9), and finally moves the score factor by the
visit's change of the expansion coefficients (4.12).  The helpers below it are the pieces of
one visit; all are compiled in nopython mode and cached.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._margin_kernels import ROW_FASTMATH
from .primitives import MODE_CSR, MODE_DENSE, MODE_GRAM, budget_qp, row_axpy, row_dot

__all__ = ["sweep"]


@njit(cache=True)
def _example_violation(alpha, Hp, L, m, cost, budget_i, rtol):
    """``psi_i = l_i - u_i`` (thesis (4.29)-(4.32)) over example i's live pairs ``L[:m]``
    (the shrunk ones have ``alpha_p = 0`` and no violation) and the position in ``L`` of the
    most violated one (-1 when ``m == 0``).  The budget counts as not exhausted below
    ``1 - rtol`` of ``budget_i``."""
    l_i = 0.0
    u_i = np.inf
    used = 0.0
    best = -1
    h_best = -np.inf
    for j in range(m):
        p = L[j]
        h = Hp[j]
        if h > h_best or best < 0:
            h_best = h
            best = j
        if alpha[p] > 0.0:
            used += cost[p] * alpha[p]
            if h < u_i:
                u_i = h
    if h_best > l_i:
        l_i = h_best
    if used < budget_i * (1.0 - rtol):  # zeta_i > 0: the slack may stay at 0
        u_i = min(u_i, 0.0)
    return l_i - u_i, best


@njit(cache=True)
def _entering_pairs(alpha, Hp, L, m, u_i, enter):
    """The (at most ``len(enter)``) live pairs ``L[:m]`` outside the support with the largest
    violations ``H_p > u_i`` (those whose entry raises the dual): their positions in ``L``
    written to ``enter``; returns how many."""
    cap = enter.shape[0]
    n = 0
    for j in range(m):
        h = Hp[j]
        if alpha[L[j]] > 0.0 or h <= u_i:
            continue
        if n == cap and h <= Hp[enter[n - 1]]:
            continue
        r = n if n < cap else cap - 1  # insertion into the buffer sorted by decreasing H
        while r > 0 and Hp[enter[r - 1]] < h:
            if r < cap:
                enter[r] = enter[r - 1]
            r -= 1
        enter[r] = j
        if n < cap:
            n += 1
    return n


@njit(cache=True)
def _pair_violations(s, L, m, pair_y, pair_ybar, offset, cost, Hp):
    """Thesis (4.24) for the live pairs ``L[:m]`` of one example from its class scores ``s``."""
    for j in range(m):
        p = L[j]
        Hp[j] = (offset[p] - (s[pair_y[p]] - s[pair_ybar[p]])) / cost[p]


@njit(cache=True)
def _needed_classes(L, m, pair_y, pair_ybar, mark, need):
    """The classes of the live pairs ``L[:m]``, listed in ``need`` (``mark`` all False on entry
    and on return); returns how many.  (Written out like :func:`_needed_rows`: a shared
    mark-and-append helper, even inlined, compiles to slower code.)"""
    n_need = 0
    for j in range(m):
        p = L[j]
        e = pair_y[p]
        if not mark[e]:
            mark[e] = True
            need[n_need] = e
            n_need += 1
        e = pair_ybar[p]
        if not mark[e]:
            mark[e] = True
            need[n_need] = e
            n_need += 1
    for t in range(n_need):
        mark[need[t]] = False
    return n_need


@njit(cache=True)
def _shrink_pairs(alpha, Hp, L, m, margin):
    """Shrinking (LIBLINEAR's, on pairs): a live pair with ``alpha_p = 0`` whose violation lies
    ``margin`` below every level at which it could enter (``H_p < min(0, u_i) - margin``, u_i of
    thesis (4.30)) leaves the live list ``L[:m]`` (compacted in place, order kept) until the
    shrunk pairs are checked again.  Returns the new number of live pairs."""
    u_i = 0.0
    for j in range(m):
        if alpha[L[j]] > 0.0 and Hp[j] < u_i:
            u_i = Hp[j]
    level = u_i - margin
    k = 0
    for j in range(m):
        p = L[j]
        if alpha[p] > 0.0 or Hp[j] >= level:
            L[k] = p
            k += 1
    return k


@njit(cache=True)
def _shrinkable(alpha, Hp, best, L, m):
    """An example without support whose every live margin holds strictly (all ``H < 0``)."""
    if best >= 0 and Hp[best] >= 0.0:
        return False
    for j in range(m):
        if alpha[L[j]] > 0.0:
            return False
    return True


@njit(cache=True)
def _working_set(alpha, Hp, L, m, best, cost, enter, n_enter, entering, ws, a, ck, gk):
    """Working set S_i (steps 6, 7, 9): the support of alpha_i, the most violated pair
    ``L[best]`` and the ``n_enter`` pairs at the positions ``enter``; their ids into ``ws``,
    their alpha, cost and dual gradient ``b_p - <dPhi_p, w>`` into ``a``, ``ck``, ``gk``.
    Returns (size, budget used)."""
    for r in range(n_enter):
        entering[enter[r]] = True
    k = 0
    used = 0.0
    for j in range(m):
        p = L[j]
        if alpha[p] > 0.0 or j == best or entering[j]:
            ws[k] = p
            a[k] = alpha[p]
            ck[k] = cost[p]
            gk[k] = cost[p] * Hp[j]
            used += cost[p] * alpha[p]
            k += 1
    for r in range(n_enter):
        entering[enter[r]] = False
    return k, used


@njit(cache=True)
def _local_gram(Q, need, n_need, pos, Qloc):
    """``Qloc[a, b] = Q[need[a], need[b]]`` for the classes of one example's live pairs, and
    ``pos[need[a]] = a``: the visit reads ``Q`` only here, once, in order along each row (on a
    GO DAG ``Q`` has millions of entries, and reading them at random is most of a visit).
    Returns ``Qloc``, replaced by a larger buffer when it has fewer than ``n_need`` rows."""
    if n_need > Qloc.shape[0]:
        size = min(Q.shape[0], max(2 * Qloc.shape[0], n_need))
        Qloc = np.empty((size, size))
    need[:n_need].sort()
    for a in range(n_need):
        pos[need[a]] = a
    for a in range(n_need):
        row = need[a]
        for b in range(a, n_need):
            v = Q[row, need[b]]
            Qloc[a, b] = v
            Qloc[b, a] = v
    return Qloc


@njit(cache=True)
def _reduced_hessian(Hk, ws, k, kii, pair_y, pair_ybar, Qloc, pos):
    """``K_ii (e_y - e_ybar)^T Q (e_y' - e_ybar')`` over the working set (step 8a's Hessian),
    class ``c`` of ``Q`` at row and column ``pos[c]`` of ``Qloc`` (``Q`` itself with ``pos`` the
    identity, or the visit's block of it, :func:`_local_gram`)."""
    for r in range(k):
        yr = pos[pair_y[ws[r]]]
        br = pos[pair_ybar[ws[r]]]
        for t in range(r, k):
            yt = pos[pair_y[ws[t]]]
            bt = pos[pair_ybar[ws[t]]]
            h = kii * (Qloc[yr, yt] - Qloc[yr, bt] - Qloc[br, yt] + Qloc[br, bt])
            Hk[r, t] = h
            Hk[t, r] = h


@njit(cache=True)
def _take_step(ws, a, k, alpha, pair_y, pair_ybar, dg, in_round, touched):
    """``alpha[ws] = a``; the change of example i's coefficients into ``dg`` (sparse: the
    classes touched listed in ``touched``).  Returns how many classes were touched."""
    n_touched = 0
    for r in range(k):
        p = ws[r]
        d = a[r] - alpha[p]
        if d != 0.0:
            e = pair_y[p]
            if not in_round[e]:
                in_round[e] = True
                touched[n_touched] = e
                n_touched += 1
            dg[e] += d
            e = pair_ybar[p]
            if not in_round[e]:
                in_round[e] = True
                touched[n_touched] = e
                n_touched += 1
            dg[e] -= d
        alpha[p] = a[r]
    return n_touched


@njit(cache=True)
def _local_scores(s, Qloc, pos, kii, dg, touched, n_touched, cols, n_cols, in_round, dg_total,
                  in_total, touched_total, n_total):
    """``s += K_ii Q dg`` through the touched columns of Q only (``Q`` through ``Qloc`` and
    ``pos`` as in :func:`_reduced_hessian`), on the classes ``cols[:n_cols]``: every class, or
    those of the example's live pairs only (no other score is read before the next visit
    recomputes them; on a GO DAG a visit needs a hundred of 2000 classes).  ``dg`` moves into
    the visit's total ``dg_total``.  Returns the number of classes the visit touched so far."""
    for t in range(n_touched):
        e = touched[t]
        de = kii * dg[e]
        row = pos[e]
        if n_cols == s.shape[0]:  # every class: cols and pos are the identity, a contiguous row
            for c in range(n_cols):
                s[c] += Qloc[row, c] * de
        else:
            for u in range(n_cols):
                c = cols[u]
                s[c] += Qloc[row, pos[c]] * de
        if not in_total[e]:
            in_total[e] = True
            touched_total[n_total] = e
            n_total += 1
        dg_total[e] += dg[e]
        dg[e] = 0.0
        in_round[e] = False
    return n_total


@njit(cache=True)
def _needed_rows(need, n_need, read_ptr, read_idx, row_mark, rows_needed):
    """The rows of ``F`` that the scores of the classes ``need[:n_need]`` read (``P``'s
    columns in their rows: the classes themselves, or their nodes), listed in
    ``rows_needed``; returns how many (``row_mark`` all False on entry and on return)."""
    n_rows = 0
    for t in range(n_need):
        c = need[t]
        for jj in range(read_ptr[c], read_ptr[c + 1]):
            j = read_idx[jj]
            if not row_mark[j]:
                row_mark[j] = True
                rows_needed[n_rows] = j
                n_rows += 1
    for t in range(n_rows):
        row_mark[rows_needed[t]] = False
    return n_rows


@njit(cache=True)
def _visit_change(move_ptr, move_idx, move_val, dg_total, in_total, touched_total, n_total, v,
                  row_mark, rows_moved):
    """``v = B^T dG_i`` (``B`` the factor's move map: ``Q``, or ``Lam`` for node rows), the
    visit's change of ``F``'s rows per unit of ``x_i`` (or ``K[i]``), on the rows listed in
    ``rows_moved``; returns how many.  Rows whose terms cancel (exactly, in exact arithmetic:
    the nodes the pairs' classes share) are left out rather than moved by rounding noise."""
    n_rows = 0
    scale = 0.0
    for t in range(n_total):
        e = touched_total[t]
        de = dg_total[e]
        for jj in range(move_ptr[e], move_ptr[e + 1]):
            j = move_idx[jj]
            if not row_mark[j]:
                row_mark[j] = True
                rows_moved[n_rows] = j
                n_rows += 1
                v[j] = 0.0
            term = move_val[jj] * de
            v[j] += term
            scale = max(scale, abs(term))
        dg_total[e] = 0.0
        in_total[e] = False
    kept = 0
    for t in range(n_rows):
        j = rows_moved[t]
        row_mark[j] = False
        if abs(v[j]) > 1e-14 * scale:
            rows_moved[kept] = j
            kept += 1
    return kept


@njit(cache=True, inline="always")
def _touch_ahead(i, rows, alpha, live, n_live, pairs):
    """Read, and sum, one value per cache line of example i's feature row and the records of
    its live pairs: a software prefetch.  In random order every example's data is a cache
    miss once the pair arrays outgrow the caches; reading the example a few places ahead
    first lets those loads overlap with the current example's work (numba has no prefetch
    instruction)."""
    pair_ptr, pair_y, pair_ybar, offset, cost = pairs
    acc = 0.0
    if rows.mode == MODE_DENSE:
        for f in range(0, rows.X.shape[1], 8):
            acc += rows.X[i, f]
    elif rows.mode == MODE_CSR:
        for jj in range(rows.indptr[i], rows.indptr[i + 1], 8):
            acc += rows.xvals[jj]
    for jj in range(pair_ptr[i], pair_ptr[i] + n_live[i]):
        p = live[jj]
        acc += alpha[p] + offset[p] + cost[p] + pair_y[p] + pair_ybar[p]
    return acc


@njit(cache=True, fastmath=ROW_FASTMATH)
def sweep(order, rows, factor, duals, pairs, control, lists):
    """Visit the examples of ``order`` (thesis Algorithm 2, steps 3-9, one example at a time).

    Arguments, grouped: ``rows`` the :class:`~.primitives.RowData`; ``factor = (F, read,
    move)`` the score factor of :class:`~.margin_dual.MarginDualState` (class or node rows:
    :class:`~.score_factor.ScoreFactor`), read by ``row_dot`` through the CSR triple ``read``
    (``s = P (F x_i)``) and updated by ``row_axpy`` through ``move`` (``F += (B^T dG_i)
    x_i^T``); ``duals = (alpha, kdiag, budget, Q)``; ``pairs = (pair_ptr, pair_y, pair_ybar,
    offset, cost)``; ``control = (eps, local_tol, sub_tol, max_rounds, shrink_margin,
    budget_rtol, n_enter, ahead, block_share, block_min)``; ``lists = (active, live,
    n_live)``.  Returns (largest psi met before a visit, visits, multiply-adds done, the sum
    of the values read ahead by :func:`_touch_ahead`).

    Examples with ``psi_i <= eps`` are skipped, the others re-optimized by
    :func:`_visit_rounds` until ``psi_i <= local_tol``; an example without support whose every
    margin holds strictly is marked inactive (``active[i] = 0``).  Example i reads the scores
    of its live pairs ``live[pair_ptr[i]:][:n_live[i]]`` only, from which
    :func:`_shrink_pairs` drops the pairs that cannot enter (``shrink_margin = inf``: never);
    the caller restores the lists.
    """
    # the tuples are unpacked here, once: a visit's helpers take arrays (unpacking RowData
    # inside an inlined helper of every example cost 6 % on ImageCLEF07A)
    mode, X, indptr, indices, xvals, K = rows
    F, read, move = factor
    alpha, kdiag, budget, Q = duals
    pair_ptr, pair_y, pair_ybar, offset, cost = pairs
    (eps, local_tol, sub_tol, max_rounds, shrink_margin, budget_rtol, n_enter_max, ahead,
     block_share, block_min) = control
    active, live, n_live = lists
    read_ptr, read_idx, read_val = read
    move_ptr, move_idx, move_val = move
    q = Q.shape[0]
    Q = np.ascontiguousarray(Q)  # one array type for Q and the visits' blocks of it
    identity = np.arange(q)
    max_pairs = n_live[order].max() if order.shape[0] > 0 else 0
    r, v, row_mark, factor_rows, s, mark, need, pos = _score_buffers(F.shape[0], q)
    dg, in_round, touched, dg_total, in_total, touched_total = _step_buffers(q)
    Hp, Hk, ws, a, ck, gk, enter, entering = _qp_buffers(max_pairs, n_enter_max)
    Qloc = np.empty((min(q, 128), min(q, 128)))  # grows with the most classes a visit needs
    visits, psi_max, work = 0, 0.0, 0.0
    touched_sum = 0.0  # returned, so that the reads ahead are not optimized away
    n_order = order.shape[0]
    for k_order in range(n_order):
        i = order[k_order]
        if k_order + ahead < n_order:
            touched_sum += _touch_ahead(order[k_order + ahead], rows, alpha, live, n_live, pairs)
        m = n_live[i]
        if m == 0 or budget[i] <= 0.0:
            continue
        L = live[pair_ptr[i]:pair_ptr[i] + m]
        row = X.shape[1] if mode == MODE_DENSE else (indptr[i + 1] - indptr[i] if mode == MODE_CSR else 1)
        n_need, n_read = _example_scores(i, L, m, mode, X, indptr, indices, xvals, F, read_ptr,
                                         read_idx, read_val, pair_y, pair_ybar, mark, need,
                                         row_mark, factor_rows, r, s)
        work += n_read * row + m
        _pair_violations(s, L, m, pair_y, pair_ybar, offset, cost, Hp)
        psi, best = _example_violation(alpha, Hp, L, m, cost, budget[i], budget_rtol)
        psi_max = max(psi_max, psi)
        if psi <= eps:
            if _shrinkable(alpha, Hp, best, L, m):
                active[i] = 0
            elif shrink_margin < np.inf:
                n_live[i] = _shrink_pairs(alpha, Hp, L, m, shrink_margin)
            continue
        visits += 1
        # Q read directly (the scores of every class kept), or through the visit's block of
        # it when the visit needs few classes (the scores of those classes only)
        Qv, at, cols, n_cols = Q, identity, identity, q
        if q >= block_min and n_need <= block_share * q:
            Qloc = _local_gram(Q, need, n_need, pos, Qloc)
            Qv, at, cols, n_cols = Qloc, pos, need, n_need
            work += n_need * n_need
        n_total, Hk, spent = _visit_rounds(
            L, m, kdiag[i], budget[i], psi, best, (Qv, at, cols, n_cols), alpha, Hp, s, pairs,
            (max_rounds, local_tol, sub_tol, budget_rtol, max_pairs),
            (Hk, ws, a, ck, gk, enter, entering),
            (dg, in_round, touched, dg_total, in_total, touched_total))
        work += spent
        if shrink_margin < np.inf:
            n_live[i] = _shrink_pairs(alpha, Hp, L, m, shrink_margin)
        # global state: v = B^T dG_i, then F += v x_i^T  or  F += v K[i]
        n_moved = _visit_change(move_ptr, move_idx, move_val, dg_total, in_total, touched_total,
                                n_total, v, row_mark, factor_rows)
        work += n_moved * (row if mode != MODE_GRAM else F.shape[1])
        _move_factor(i, mode, X, indptr, indices, xvals, K, F, factor_rows, n_moved, v)
    return psi_max, visits, work, touched_sum


@njit(cache=True, inline="always")
def _score_buffers(n_factor, q):
    """The per-example score buffers of :func:`sweep`: ``F x_i`` on the factor rows read,
    ``B^T dG_i`` on the rows moved, the rows' marks and list, the scores by class, the
    classes' marks and list, their places in a visit's block of ``Q``."""
    return (np.empty(n_factor), np.empty(n_factor), np.zeros(n_factor, dtype=np.bool_),
            np.empty(n_factor, dtype=np.int64), np.empty(q), np.zeros(q, dtype=np.bool_),
            np.empty(q, dtype=np.int64), np.full(q, -1, dtype=np.int64))


@njit(cache=True, inline="always")
def _step_buffers(q):
    """A visit's changes by class: this round's ``dg`` with its marks and list of the
    classes touched, and the visit's total (``dg`` is sparse: ``Q dg`` costs ``q`` per
    touched class)."""
    return (np.zeros(q), np.zeros(q, dtype=np.bool_), np.empty(q, dtype=np.int64), np.zeros(q),
            np.zeros(q, dtype=np.bool_), np.empty(q, dtype=np.int64))


@njit(cache=True, inline="always")
def _qp_buffers(max_pairs, n_enter):
    """The violations ``Hp`` of an example's pairs and its reduced QP: ``Hk`` (which grows
    with the largest working set met, not with the example that has the most pairs: 70k
    pairs on the GO DAG make a ``(max_pairs, max_pairs)`` array of 39 GB), the working set,
    multipliers, costs, gradients, and the pairs entering."""
    side = min(max_pairs, 64)
    return (np.empty(max_pairs), np.empty((side, side)), np.empty(max_pairs, dtype=np.int64),
            np.empty(max_pairs), np.empty(max_pairs), np.empty(max_pairs),
            np.empty(n_enter, dtype=np.int64), np.zeros(max_pairs, dtype=np.bool_))


@njit(cache=True, inline="always")
def _example_scores(i, L, m, mode, X, indptr, indices, xvals, F, read_ptr, read_idx, read_val,
                    pair_y, pair_ybar, mark, need, row_mark, factor_rows, r, s):
    """The class scores ``s = U x_i`` (features) or ``S[i]`` (Gram) of example i on the
    classes of its live pairs ``L[:m]``, read from the score factor ``F`` through the CSR
    triple ``read_*``.  Returns (the classes read, ``need[:n]``; the factor rows read)."""
    n_need = _needed_classes(L, m, pair_y, pair_ybar, mark, need)
    n_read = _needed_rows(need, n_need, read_ptr, read_idx, row_mark, factor_rows)
    _read_factor(i, mode, X, indptr, indices, xvals, F, factor_rows, n_read, r)
    for t in range(n_need):
        c = need[t]
        acc = 0.0
        for jj in range(read_ptr[c], read_ptr[c + 1]):
            acc += read_val[jj] * r[read_idx[jj]]
        s[c] = acc
    return n_need, n_read


@njit(cache=True, inline="always")
def _visit_rounds(L, m, kii, budget_i, psi, best, gram, alpha, Hp, s, pairs, control, qp, step):
    """The rounds of one visit (thesis Algorithm 2, steps 6-9) on example i's live pairs
    ``L[:m]``: grow the working set by the most violated pairs, solve the reduced QP, take
    the step and update the scores ``s`` of the classes touched, until ``psi_i <= local_tol``.

    ``gram = (Qv, at, cols, n_cols)``: the Gram matrix of the classes read (``Q`` or the
    visit's block of it); ``control = (max_rounds, local_tol, sub_tol, budget_rtol,
    max_pairs)``; ``qp = (Hk, ws, a, ck, gk, enter, entering)`` and ``step = (dg, in_round,
    touched, dg_total, in_total, touched_total)`` the sweep's buffers.  Returns (classes
    touched in the visit, the reduced Hessian's buffer, grown when a working set outgrew
    it, multiply-adds).
    """
    _, pair_y, pair_ybar, offset, cost = pairs
    Qv, at, cols, n_cols = gram
    max_rounds, local_tol, sub_tol, budget_rtol, max_pairs = control
    Hk, ws, a, ck, gk, enter, entering = qp
    dg, in_round, touched, dg_total, in_total, touched_total = step
    n_total = 0
    work = 0.0
    for _ in range(max_rounds):
        # several pairs enter at once, else a visit needing many pairs costs O(k^3)
        u_i = max(0.0, Hp[best]) - psi
        n_enter = _entering_pairs(alpha, Hp, L, m, u_i, enter)
        k, used = _working_set(alpha, Hp, L, m, best, cost, enter, n_enter, entering, ws, a,
                               ck, gk)
        if k > Hk.shape[0]:
            size = min(max_pairs, max(2 * Hk.shape[0], k))
            Hk = np.empty((size, size))
        _reduced_hessian(Hk, ws, k, kii, pair_y, pair_ybar, Qv, at)
        budget_qp(Hk, gk, a, ck, max(budget_i - used, 0.0), k, sub_tol, 200 * k + 1000)
        work += k * k + m
        n_touched = _take_step(ws, a, k, alpha, pair_y, pair_ybar, dg, in_round, touched)
        n_total = _local_scores(s, Qv, at, kii, dg, touched, n_touched, cols, n_cols,
                                in_round, dg_total, in_total, touched_total, n_total)
        work += n_cols * n_touched
        _pair_violations(s, L, m, pair_y, pair_ybar, offset, cost, Hp)
        psi, best = _example_violation(alpha, Hp, L, m, cost, budget_i, budget_rtol)
        if psi <= local_tol:
            break
    return n_total, Hk, work




@njit(cache=True, inline="always")
def _read_factor(i, mode, X, indptr, indices, xvals, F, factor_rows, n_read, r):
    """``r[j] = F[j] . x_i`` (or ``F[j] . K[i]``) on the factor rows ``factor_rows[:n_read]``;
    the switch on the mode outside the loop, so that ``row_dot`` compiles per mode."""
    if mode == MODE_DENSE:
        for t in range(n_read):
            j = factor_rows[t]
            r[j] = row_dot(MODE_DENSE, F, j, i, X, indptr, indices, xvals)
    elif mode == MODE_CSR:
        for t in range(n_read):
            j = factor_rows[t]
            r[j] = row_dot(MODE_CSR, F, j, i, X, indptr, indices, xvals)
    else:
        for t in range(n_read):
            j = factor_rows[t]
            r[j] = row_dot(MODE_GRAM, F, j, i, X, indptr, indices, xvals)


@njit(cache=True, inline="always")
def _move_factor(i, mode, X, indptr, indices, xvals, K, F, factor_rows, n_moved, v):
    """``F[j] += v[j] x_i`` (or ``v[j] K[i]``) on the factor rows ``factor_rows[:n_moved]``."""
    if mode == MODE_DENSE:
        for t in range(n_moved):
            j = factor_rows[t]
            row_axpy(MODE_DENSE, F, j, i, v[j], X, indptr, indices, xvals, K)
    elif mode == MODE_CSR:
        for t in range(n_moved):
            j = factor_rows[t]
            row_axpy(MODE_CSR, F, j, i, v[j], X, indptr, indices, xvals, K)
    else:
        for t in range(n_moved):
            j = factor_rows[t]
            row_axpy(MODE_GRAM, F, j, i, v[j], X, indptr, indices, xvals, K)
