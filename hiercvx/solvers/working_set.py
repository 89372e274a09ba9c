"""The Cai–Hofmann hierarchical SVM by variable selection (Cai thesis, section 4.3, Algorithm 2).

The dual (thesis (4.15), and its margin-rescaled analogue; see :mod:`hiercvx.models.margin`)::

    max_alpha  sum_p b_p alpha_p - 1/2 ||w(alpha)||^2
    s.t.       alpha >= 0,   sum_{p of example i} cost_p alpha_p <= C_i      (one budget per example)

decouples over examples in its constraints, so the solver works example by example:

* the margin violations ``H_iyybar = (b_p - <dPhi_i(y, ybar), w>) / cost_p`` (thesis (4.24): for
  slack rescaling ``Delta (1 - <dPhi, w>)``, for margin rescaling ``Delta - <dPhi, w>``) are read
  from the class scores ``s_i``, which are kept up to date incrementally: a change ``dG_i`` of
  example i's expansion coefficients moves the class-weight matrix ``U = Q G^T X`` by the rank-one
  term ``(Q dG_i) x_i^T`` (linear kernel; the n x n Gram matrix is never formed) or all class
  scores ``S = K G Q`` by ``K[:, i] (Q dG_i)^T`` (other kernels);
* the violation score ``psi_i = l_i - u_i`` of thesis (4.29)-(4.32) decides which examples are
  visited and when a visit ends: Proposition 3 says alpha is optimal iff every ``psi_i = 0``;
* at a visited example the most violated pair (thesis Algorithm 2, step 6) joins the working set
  ``S_i`` (step 7), the reduced QP over ``S_i`` is solved exactly by :func:`solve_subproblem`
  (step 8a), the pairs whose alpha dropped to 0 leave ``S_i`` (step 9); this repeats until
  example i is optimal with the others frozen, and then the global state is updated once.

Stopping is certified (celer-style): every few passes the dual objective at the current
(feasible) alpha and the primal objective (4.10) recomputed at ``w(alpha)`` (4.12) are evaluated
with :mod:`hiercvx.models.margin`; the solver stops when
``(primal - dual) / max(1, |primal|) <= tol``.  Since ``gap <= sum_i C_i psi_i`` (both are
read off the same H), psi also gives the per-example tolerances.

Implementation choices where the thesis leaves room (each checked against the references):

* selection: the thesis picks ``argmax_i psi_i`` after every update, which needs all of H after
  each step (a full pass over the data).  We visit the examples in a seeded random order and
  skip those whose psi_i (recomputed just before the visit) is below a threshold that shrinks
  as the passes converge, and is capped at every certificate so that the skipped examples
  carry at most 5% of ``sum_i C_i psi_i`` (without the cap the passes stalled at a 3% gap
  on 446 classes; 5% reached a 1e-3 gap in 460 passes where 50% needed 780, and cut the
  time on the thesis-sized tree of bench_hsvm_fast by 1.4x at noise 1 and 0.5, none at 2).
  Visiting in decreasing order of psi was tried and needed more passes.  Examples without
  support whose margins all hold strictly are shrunk (skipped) until a certificate finds them
  violated again.
* pair shrinking (LIBLINEAR's shrinking of classes, on pairs): a pair with ``alpha_p = 0``
  whose violation lies ``eps`` below ``min(0, u_i)`` leaves its example's list of live pairs,
  and a pass computes the scores of the live pairs' classes only (``q`` dot products with
  ``x_i`` per example otherwise).  Every pair is live again after each certificate and when a
  pass over the live pairs meets nothing above ``eps``, so the certificate and the stopping
  rule are those of the unshrunk passes.  ImageCLEF07A (63 classes, 62 pairs per example):
  2.8 live pairs per active example, a pass at a 1e-2 gap 22 -> 7 ms.
* step 7 adds up to 8 of the most violated pairs per round instead of one: a visit that needs
  many pairs then costs a few reduced QPs, not one per pair (1.6x faster early on with 446
  classes and C = 10, the gap after 40 passes the same to 4 digits).
* the scores of the visited example are updated through the columns of Q of the classes the
  step touched only (``O(q)`` per touched class instead of ``O(q^2)`` per round).
* the passes keep their scores in class rows (``U = Q G^T X``) or in node rows (``W``, class
  scores read through ``Lam``), whichever a visit touches fewer rows of
  (:func:`.margin_dual.choose_factor`): on ImageCLEF07A's tree a visit moves 21 class rows
  but 6 node rows, and reads 4 class rows or 8 node rows.  Measured (1500 passes from 0,
  same run): counted multiply-adds 9.8e9 -> 7.0e9, time 8.6-9.0 s -> 7.8-7.9 s; the rest
  of a visit (violations, reduced QP, local scores) is untouched by the form.
* step 8a is carried to the end: the visit of example i repeats steps 6-9 until psi_i is
  below a tenth of the threshold, so each visit is an exact block coordinate ascent step.
* step 8b ("optimize over all selected variables", which the thesis needs for finite
  convergence but skips in practice) is done exactly once the working sets have settled (the
  support changed by at most 1% between two certificates): the dual is maximized on the face
  the passes identified (which pairs are in the working sets, which budgets are exhausted) by
  one dense factorization of a matrix with a row per support pair, and the face is corrected
  and solved again while few pairs change (:meth:`.margin_dual.MarginDualState.face_step`).
  Coordinate ascent crawls near the optimum (ImageCLEF07A, 63 classes: 10000 passes left a
  4e-4 gap); the face step ends the run from a gap of about 2e-3 (5140 passes) in ten rounds
  of about a second (gap 6e-8, 107 s in all; with pair shrinking 5895 passes, gap 7.9e-7,
  57 s where LIBLINEAR's Crammer–Singer took 67 s in the same run).  On a degenerate face
  (noisy labels, label sets, a bias column: the face's nearest maximizer leaves the feasible
  set) the dual restricted to the working pairs is solved with its bounds by an interior
  point, violated pairs joining (:meth:`.margin_dual.MarginDualState.support_step`; the
  registry's multi-label case with biases: 10000 passes to gap 9.3e-7 -> 280 passes to
  3e-10), or, when that is cheaper (random labels: more support pairs than primal
  dimensions), the primal restricted to the examples with support by the interior point of
  :mod:`.interior_point` (random labels on a 5-class tree, n = 1000: 10000 passes, gap 4e-5
  -> 20 passes and one such step, gap 2e-10).  Working sets too large to factorize get a Newton step on their union by projected
  conjugate gradients instead, kept only if the dual improves.
* certificates are spaced by counted work (multiply-adds), not time, so runs are reproducible.

Entry point: ``solve(model, C)`` with ``model = hiercvx.models.hsvm.prepare(X, Y, H, ...)`` (any
:class:`~hiercvx.models.margin.MarginModel` works, e.g. the Crammer–Singer model).  The
certificate, the score factor ``F`` and the Newton step are
:class:`~hiercvx.solvers.margin_dual.MarginDualState` (shared with Crammer–Singer); the reduced
QP of step 8a is :func:`~hiercvx.solvers.primitives.budget_qp`; the certificate schedule
:class:`~hiercvx.solvers.primitives.CertificateSchedule`.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from numba import njit

from .._validation import check_positive
from ..exceptions import InputError
from ..models import margin as _margin
from ..models.margin import MarginModel
from ..result import Solution, check_iteration_options, gap_scale, reached, relative_gap
from .margin_dual import (BUDGET_RTOL, ROW_FASTMATH, MarginDualState, primal_point,
                          violation_scores)
from .primitives import (MODE_CSR, MODE_DENSE, MODE_GRAM, CertificateSchedule, blas_threads,
                         budget_qp, row_axpy, row_data, row_dot)

logger = logging.getLogger(__name__)

__all__ = ["solve", "solve_subproblem", "violation_scores"]

# Skip threshold: starts at _EPS_INIT * max psi, shrinks by _EPS_SHRINK when a pass meets no psi
# above it; a visit ends when psi_i <= _LOCAL * threshold.
_EPS_INIT, _EPS_SHRINK, _LOCAL = 0.1, 0.1, 0.1
_SKIP_MASS = 0.05
_ENTER = 8  # pairs entering a working set per round (the thesis adds one)
#: the pass reads the data of the example this many places ahead in its order (its feature row,
#: its live pairs' records) before it handles the current one: numba has no prefetch, and the
#: loads, issued early, overlap with the current example's work (see :func:`_touch_ahead`)
_AHEAD = 8


# --------------------------------------------------------------------------------------------
# The reduced QP over one example's working set
# --------------------------------------------------------------------------------------------

def solve_subproblem(hessian, gradient, alpha, cost, budget, tol: float = 1e-12,
                     max_iter: int | None = None):
    """Exact solution of one example's reduced QP (thesis Algorithm 2, step 8a).

    ``max_a  gradient . (a - alpha) - 1/2 (a - alpha)^T hessian (a - alpha)``
    s.t. ``a >= 0`` and ``cost . a <= budget``, from the feasible start ``alpha``;
    ``hessian = K_ii B Q B^T`` restricted to the working set (B: rows ``e_y - e_ybar``).
    Returns ``(a, gradient_at_a)``.
    """
    H = np.ascontiguousarray(hessian, dtype=float)
    g = np.array(gradient, dtype=float)
    a = np.array(alpha, dtype=float)
    c = np.ascontiguousarray(cost, dtype=float)
    k = len(a)
    if H.shape != (k, k) or g.shape != (k,) or c.shape != (k,):
        raise InputError(f"inconsistent sub-problem sizes: hessian {H.shape}, gradient {g.shape}, "
                         f"alpha {a.shape}, cost {c.shape}")
    if np.any(a < 0) or np.any(c <= 0) or c @ a > budget * (1 + 1e-12):
        raise InputError("the starting point must be feasible (alpha >= 0, cost . alpha <= budget) "
                         "with positive costs")
    slack = max(float(budget) - float(c @ a), 0.0)
    budget_qp(H, g, a, c, slack, k, float(tol), int(max_iter or 200 * k + 1000))
    return a, g


# --------------------------------------------------------------------------------------------
# One pass over the examples
# --------------------------------------------------------------------------------------------

@njit(cache=True)
def _example_violation(alpha, Hp, L, m, cost, budget_i):
    """``psi_i = l_i - u_i`` (thesis (4.29)-(4.32)) over example i's live pairs ``L[:m]``
    (the shrunk ones have ``alpha_p = 0`` and no violation) and the position in ``L`` of the
    most violated one (-1 when ``m == 0``)."""
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
    if used < budget_i * (1.0 - BUDGET_RTOL):  # zeta_i > 0: the slack may stay at 0
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
    mark-and-append helper, even inlined, made the passes 1.5x slower, measured.)"""
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
def _reduced_hessian(Hk, ws, k, kii, pair_y, pair_ybar, Q):
    """``K_ii (e_y - e_ybar)^T Q (e_y' - e_ybar')`` over the working set (step 8a's Hessian)."""
    for r in range(k):
        yr = pair_y[ws[r]]
        br = pair_ybar[ws[r]]
        for t in range(r, k):
            yt = pair_y[ws[t]]
            bt = pair_ybar[ws[t]]
            h = kii * (Q[yr, yt] - Q[yr, bt] - Q[br, yt] + Q[br, bt])
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
def _local_scores(s, QT, kii, dg, touched, n_touched, in_round, dg_total, in_total,
                  touched_total, n_total):
    """``s += K_ii Q dg`` through the touched columns of Q only (rows of ``QT = Q^T``, read
    contiguously); ``dg`` moves into the visit's total ``dg_total``.  Returns the number of
    classes the visit touched so far."""
    q = s.shape[0]
    for t in range(n_touched):
        e = touched[t]
        de = kii * dg[e]
        for c in range(q):
            s[c] += QT[e, c] * de
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
def _touch_ahead(i, mode, X, indptr, xvals, alpha, live, pair_ptr, n_live, pair_y, pair_ybar,
                 offset, cost):
    """Read, and sum, one value per cache line of example i's feature row and the records of
    its live pairs (a software prefetch).  In random order every example's data is a cache
    miss once the pair arrays outgrow the caches (ImageCLEF07A: 620 000 pairs, 30 MB): a pass
    that only checks its examples took 1.5 us per example there against 0.6 us on a tenth of
    the data; reading the example 8 places ahead first brings it to 0.7-0.9 us (passes of
    8.7-10.3 ms -> 5.8-6.9 ms, measured on one state)."""
    acc = 0.0
    if mode == MODE_DENSE:
        for f in range(0, X.shape[1], 8):
            acc += X[i, f]
    elif mode == MODE_CSR:
        for jj in range(indptr[i], indptr[i + 1], 8):
            acc += xvals[jj]
    for jj in range(pair_ptr[i], pair_ptr[i] + n_live[i]):
        p = live[jj]
        acc += alpha[p] + offset[p] + cost[p] + pair_y[p] + pair_ybar[p]
    return acc


@njit(cache=True, fastmath=ROW_FASTMATH)
def _sweep(order, mode, X, indptr, indices, xvals, K, F, read, move, alpha, kdiag, pair_ptr,
           pair_y, pair_ybar, offset, cost, budget, Q, eps, local_tol, sub_tol, max_rounds,
           active, live, n_live, shrink_margin):
    """Visit the examples of ``order`` (thesis Algorithm 2, steps 3-9, one example at a time).

    Returns (largest psi met before a visit, visits, multiply-adds done, the sum of the values
    read ahead by :func:`_touch_ahead`).  ``F`` is the score factor of
    :class:`~.margin_dual.MarginDualState` (class or node rows: ``ScoreFactor``), read by
    ``row_dot`` through the CSR triple ``read`` (``s = P (F x_i)``) and updated by ``row_axpy``
    through ``move`` (``F += (B^T dG_i) x_i^T``).

    Examples with ``psi_i <= eps`` are skipped; the others are re-optimized (working set grown by
    the most violated pairs, reduced QP, zeros dropped) until ``psi_i <= local_tol``.  An
    example without support whose every margin holds strictly is marked inactive
    (``active[i] = 0``, shrinking).

    Example i works on its live pairs ``live[pair_ptr[i]:pair_ptr[i] + n_live[i]]`` only (all
    of its pairs when nothing is shrunk): a pair with ``alpha_p = 0`` violated by less than
    ``min(0, u_i) - shrink_margin`` leaves that list (:func:`_shrink_pairs`; ``shrink_margin =
    inf``: never), and only the scores of the live pairs' classes are computed (``q`` dot
    products with ``x_i`` per example otherwise: most of a pass once the blocks have settled
    to a few live pairs each).  The caller restores the lists (:func:`_solve`).
    """
    q = Q.shape[0]
    QT = np.ascontiguousarray(Q.T)  # its rows are Q's columns (Q dg reads columns)
    read_ptr, read_idx, read_val = read
    move_ptr, move_idx, move_val = move
    n_factor = F.shape[0]
    r = np.empty(n_factor)  # F x_i on the rows read
    v = np.empty(n_factor)  # B^T dG_i on the rows moved
    row_mark = np.zeros(n_factor, dtype=np.bool_)
    factor_rows = np.empty(n_factor, dtype=np.int64)
    max_pairs = 0
    for i in order:
        max_pairs = max(max_pairs, n_live[i])
    s = np.empty(q)
    dg = np.zeros(q)
    dg_total = np.zeros(q)
    # classes touched in this round / this visit (dg is sparse: Q dg costs q per touched class)
    touched = np.empty(q, dtype=np.int64)
    touched_total = np.empty(q, dtype=np.int64)
    in_total = np.zeros(q, dtype=np.bool_)
    in_round = np.zeros(q, dtype=np.bool_)
    Hp = np.empty(max_pairs)
    ws = np.empty(max_pairs, dtype=np.int64)
    a = np.empty(max_pairs)
    gk = np.empty(max_pairs)
    ck = np.empty(max_pairs)
    # the reduced Hessian grows with the largest working set met, not with the example that
    # has the most pairs (70k pairs on the GO DAG: a (max_pairs, max_pairs) array is 39 GB)
    Hk = np.empty((min(max_pairs, 64), min(max_pairs, 64)))
    enter = np.empty(_ENTER, dtype=np.int64)
    entering = np.zeros(max_pairs, dtype=np.bool_)
    mark = np.zeros(q, dtype=np.bool_)
    need = np.empty(q, dtype=np.int64)
    visits = 0
    psi_max = 0.0
    work = 0.0
    touched_sum = 0.0  # returned, so that the reads ahead are not optimized away
    n_order = order.shape[0]
    for k_order in range(n_order):
        i = order[k_order]
        if k_order + _AHEAD < n_order:
            touched_sum += _touch_ahead(order[k_order + _AHEAD], mode, X, indptr, xvals, alpha,
                                        live, pair_ptr, n_live, pair_y, pair_ybar, offset, cost)
        m = n_live[i]
        if m == 0 or budget[i] <= 0.0:
            continue
        L = live[pair_ptr[i]:pair_ptr[i] + m]
        kii = kdiag[i]
        row = X.shape[1] if mode == MODE_DENSE else (indptr[i + 1] - indptr[i] if mode == MODE_CSR else 1)
        # class scores of example i: s = U x_i (features) or S[i] (Gram), for the classes of its
        # live pairs; the switch outside the loop, so that row_dot compiles per mode
        n_need = _needed_classes(L, m, pair_y, pair_ybar, mark, need)
        n_read = _needed_rows(need, n_need, read_ptr, read_idx, row_mark, factor_rows)
        work += n_read * row + m
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
        for t in range(n_need):
            c = need[t]
            acc = 0.0
            for jj in range(read_ptr[c], read_ptr[c + 1]):
                acc += read_val[jj] * r[read_idx[jj]]
            s[c] = acc
        _pair_violations(s, L, m, pair_y, pair_ybar, offset, cost, Hp)
        psi, best = _example_violation(alpha, Hp, L, m, cost, budget[i])
        psi_max = max(psi_max, psi)
        if psi <= eps:
            if _shrinkable(alpha, Hp, best, L, m):
                active[i] = 0
            elif shrink_margin < np.inf:
                n_live[i] = _shrink_pairs(alpha, Hp, L, m, shrink_margin)
            continue
        visits += 1
        n_total = 0
        for _ in range(max_rounds):
            # several pairs enter at once, else a visit needing many pairs costs O(k^3)
            u_i = max(0.0, Hp[best]) - psi
            n_enter = _entering_pairs(alpha, Hp, L, m, u_i, enter)
            k, used = _working_set(alpha, Hp, L, m, best, cost, enter, n_enter, entering, ws, a,
                                   ck, gk)
            if k > Hk.shape[0]:
                size = min(max_pairs, max(2 * Hk.shape[0], k))
                Hk = np.empty((size, size))
            _reduced_hessian(Hk, ws, k, kii, pair_y, pair_ybar, Q)
            budget_qp(Hk, gk, a, ck, max(budget[i] - used, 0.0), k, sub_tol, 200 * k + 1000)
            work += k * k + m
            n_touched = _take_step(ws, a, k, alpha, pair_y, pair_ybar, dg, in_round, touched)
            n_total = _local_scores(s, QT, kii, dg, touched, n_touched, in_round, dg_total,
                                    in_total, touched_total, n_total)
            work += q * n_touched
            _pair_violations(s, L, m, pair_y, pair_ybar, offset, cost, Hp)
            psi, best = _example_violation(alpha, Hp, L, m, cost, budget[i])
            if psi <= local_tol:
                break
        if shrink_margin < np.inf:
            n_live[i] = _shrink_pairs(alpha, Hp, L, m, shrink_margin)
        # global state: v = B^T dG_i, then F += v x_i^T  or  F += v K[i]
        n_moved = _visit_change(move_ptr, move_idx, move_val, dg_total, in_total,
                                touched_total, n_total, v, row_mark, factor_rows)
        work += n_moved * (row if mode != MODE_GRAM else F.shape[1])
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
    return psi_max, visits, work, touched_sum


# --------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------

def _mass_threshold(psi, budget, share: float) -> float:
    """The largest ``t`` among the psi values with ``sum_{psi_i <= t} C_i psi_i <= share *
    sum_i C_i psi_i`` (0 when no such value): skipping examples below it keeps most of the
    certificate's mass in the pass."""
    mass = budget * psi
    total = float(mass.sum())
    if not total > 0:
        return 0.0
    order = np.argsort(psi, kind="stable")
    below = np.cumsum(mass[order]) <= share * total
    return float(psi[order][below][-1]) if below.any() else 0.0


def solve(model: MarginModel, C: float = 1.0, *, tol: float = 1e-6, max_iter: int = 10_000,
          verbose: bool = False, alpha0=None, max_rounds: int = 100, check_every: int = 10,
          polish: bool = True, shrink: bool = True, random_state=0, stop_when=None,
          factor: str = "auto") -> Solution:
    """Cai–Hofmann hierarchical SVM (thesis (4.10)/(4.15)) by variable selection, Algorithm 2.

    Parameters
    ----------
    model : :class:`~hiercvx.models.hsvm.HSVMModel` from ``hiercvx.models.hsvm.prepare(X, Y, H,
        ...)`` (labels, loss, class attributes or class kernel, rescaling, sample weights,
        kernel), or any :class:`~hiercvx.models.margin.MarginModel`
        (:func:`~hiercvx.models.margin.model_from_data`).  The linear kernel with class
        attributes works on the features and never forms the Gram matrix.
    C : positive float; example i's budget is ``C * data.Cw[i]``
    tol : certified relative duality gap ``(primal - dual) / max(1, |primal|)`` to reach
    max_iter : passes over the data; a ``ConvergenceWarning`` is issued when they run out
    alpha0 : optional warm start (one value per pair of ``model.data``), made feasible first
    max_rounds : reduced-QP rounds per visit of an example
    check_every : least number of passes between certificates (more when a certificate is
        expensive relative to a pass; one is also computed whenever a pass over all examples
        meets no psi above the current threshold)
    polish : when the working sets settled (at most 1% of the support changed between two
        certificates), solve the dual on their face (Algorithm 2, step 8b; see
        :meth:`~.margin_dual.MarginDualState.face_step`; the support step
        :meth:`~.margin_dual.MarginDualState.support_step` on degenerate faces, settled or not;
        the Newton step :meth:`~.margin_dual.MarginDualState.newton_step` on faces too large
        to factorize),
        kept only where it improves the certificate; such steps get at most as much work as
        the passes between them
    shrink : shrink pairs (module docstring: selection); the optimum and its certificate are the
        same either way, only the work per pass changes
    random_state : seed of the order in which the examples are visited
    factor : the rows the passes keep their scores in: ``"classes"`` (class weights, or class
        scores with a Gram matrix), ``"nodes"`` (node weights / node scores; needs class
        attributes) or ``"auto"`` (:func:`~.margin_dual.choose_factor`: the form with fewer
        row operations per visit).  The same iterates either way, up to rounding.
    stop_when : optional ``stop_when(n_iter, pass_work, alpha) -> bool``, asked at every
        certificate that did not reach ``tol`` (passes so far, the multiply-adds they counted,
        the dual point): True ends the solve there, unconverged (the margin engine's budget)

    Returns
    -------
    :class:`~hiercvx.result.Solution` with ``weights`` the node weights ``W`` ``(M, d)``
    (linear kernel with class attributes) or the expansion coefficients ``G`` ``(n, q)``
    (other kernels: class scores ``k(x, X) G Q``), ``dual`` the pair multipliers alpha,
    ``history`` per certificate (n_iter: the pass it follows, objective, lower_bound, gap,
    max_psi, time, live_pairs: pairs not shrunk in the pass before; ``n_newton``: accepted
    face or Newton steps).  Extras: ``coefficients``
    (``G`` of the reported weights: ``G(alpha)``, or the face step's primal point when its
    objective is lower), ``n_newton``, ``pass_work`` (multiply-adds counted by the passes).
    """
    if not isinstance(model, MarginModel):
        raise InputError("model must be a margin model: hiercvx.models.hsvm.prepare(X, Y, H, ...) "
                         f"(or hiercvx.models.margin.model_from_data), got {type(model).__name__}")
    C = check_positive(C)
    check_iteration_options(tol, max_iter, who="working_set.solve")
    if factor not in ("auto", "classes", "nodes"):
        raise InputError(f"factor must be 'auto', 'classes' or 'nodes', got {factor!r}")
    if factor == "nodes" and model.data.Lam is None:
        raise InputError("factor='nodes' needs class attributes (the model has a class kernel "
                         "Q only); use factor='classes' or 'auto'")
    # The products below are small: threaded BLAS only adds synchronisation (badly so on a
    # loaded machine), so the whole solve runs single-threaded.
    with blas_threads(1):
        return _solve(model, C, float(tol), int(max_iter), alpha0, verbose, max_rounds,
                      check_every, polish, random_state, bool(shrink), stop_when, factor)


def _initial_dual(alpha0, data, C) -> np.ndarray:
    """Zero, or the warm start ``alpha0`` projected onto the dual feasible set."""
    P = data.n_pairs
    if alpha0 is None:
        return np.zeros(P)
    alpha0 = np.asarray(alpha0, dtype=float)
    if alpha0.shape != (P,) or not np.all(np.isfinite(alpha0)):
        raise InputError(f"alpha0 must hold {P} finite values (one per pair of data), got "
                         f"shape {alpha0.shape}")
    return np.ascontiguousarray(_margin.project_dual(alpha0, data, C))


class _Threshold:
    """The skip threshold eps of the passes (module docstring: selection)."""

    def __init__(self, tol, total_budget):
        self.tol, self.total_budget = tol, total_budget
        self.eps = None

    def update(self, psi, budget, primal, max_psi, pass_max) -> float:
        # every psi_i <= psi_ok would certify tol, since gap <= sum_i C_i psi_i
        psi_ok = self.tol * gap_scale(primal, 0.0) / self.total_budget
        if self.eps is None:
            self.eps = _EPS_INIT * max_psi
        elif pass_max <= self.eps:  # the last pass met nothing above eps: tighten it
            self.eps *= _EPS_SHRINK
        # the skipped examples (psi_i <= eps) may carry at most _SKIP_MASS of the bound
        # sum_i C_i psi_i >= gap: otherwise the passes stall on the rest (seen on 500 classes)
        self.eps = min(self.eps, _mass_threshold(psi, budget, _SKIP_MASS))
        self.eps = max(self.eps, 0.1 * psi_ok)
        return self.eps


def _unshrink(live, n_live, n_pairs):
    """Every pair live again (:func:`_sweep`)."""
    live[:] = np.arange(live.size)
    n_live[:] = n_pairs


def _solve(model, C, tol, max_iter, alpha0, verbose, max_rounds, check_every, polish,
           random_state, shrink=True, stop_when=None, factor="auto"):
    t_start = time.perf_counter()
    data = model.data
    rows = row_data(X=model.X) if model.node_weights else row_data(K=model.K)
    alpha = _initial_dual(alpha0, data, C)
    state = MarginDualState(model, rows, C, warm=alpha0 is not None, factor=factor)
    budget, offset, cost = state.budget, state.offset, state.cost
    pairs = tuple(np.ascontiguousarray(a, dtype=np.int64)
                  for a in (data.pair_ptr, data.pair_y, data.pair_ybar))
    threshold = _Threshold(tol, max(float(budget.sum()), np.finfo(float).tiny))
    log = logger.info if verbose else logger.debug

    rng = np.random.default_rng(random_state)
    history = {k: [] for k in ("n_iter", "objective", "lower_bound", "gap", "max_psi", "time",
                               "live_pairs")}
    n_iter = 0
    converged = False
    active = np.ones(data.n_samples, dtype=np.int8)
    n_pairs = np.diff(pairs[0])  # the live pairs (not shrunk) of each example: _sweep
    live, n_live = np.arange(data.n_pairs, dtype=np.int64), n_pairs.copy()
    eps = None
    pass_max = np.inf  # largest psi met by the last pass (none yet)
    schedule = CertificateSchedule(check_every, state.certificate_work())
    while True:
        if schedule.due():
            primal, dual, psi = state.checkpoint(alpha, tol, polish)
            gap = relative_gap(primal, dual)
            schedule.certified()
            max_psi = float(psi.max()) if psi.size else 0.0
            for key, val in (("n_iter", n_iter), ("objective", primal), ("lower_bound", dual),
                             ("gap", gap), ("max_psi", max_psi),
                             ("time", time.perf_counter() - t_start),
                             ("live_pairs", int(n_live.sum()))):
                history[key].append(val)
            log("pass %d: primal %.10g dual %.10g gap %.3e max psi %.3e", n_iter, primal, dual,
                gap, max_psi)
            if reached(gap, tol):
                converged = True
                break
            if stop_when is not None and stop_when(n_iter, state.work_done, alpha):
                break
            eps = threshold.update(psi, budget, primal, max_psi, pass_max)
            active[psi > eps] = 1  # shrunk examples that became violated come back
            _unshrink(live, n_live, n_pairs)  # and every pair is checked again
        if n_iter >= max_iter:
            break
        local_tol = _LOCAL * eps
        sub_tol = min(0.1 * local_tol, 1e-9)
        order = rng.permutation(np.flatnonzero(active)).astype(np.int64)
        # a pass over every example and pair can certify convergence at eps (the sweep itself
        # shrinks pairs of the examples it skips, so this is known only before it)
        whole = order.size == data.n_samples and np.array_equal(n_live, n_pairs)
        pass_max, visits, work, _ = _sweep(
            order, rows.mode, rows.X, rows.indptr, rows.indices, rows.xvals, rows.K, state.F,
            state.factor.read, state.factor.move, alpha, state.kdiag, *pairs, offset, cost,
            budget, state.Q, eps, local_tol, sub_tol, int(max_rounds), active, live, n_live,
            eps if shrink else np.inf)
        logger.debug("pass %d: %d of %d active examples visited (threshold %.3e)", n_iter, visits,
                     order.size, eps)
        n_iter += 1
        schedule.passed(work)
        state.pass_work += work
        state.work_done += work
        if pass_max <= eps:
            if whole:
                schedule.now()  # converged at eps over every example and pair: certify
            else:  # shrunk examples and pairs are checked again before any certificate
                active[:] = 1
                _unshrink(live, n_live, n_pairs)
    return _result(model, alpha, C, tol, n_iter, converged, history, state, t_start)


def _result(model, alpha, C, tol, n_iter, converged, history, state, t_start) -> Solution:
    """The reported certificate: the model's own bound at the final alpha and objective at
    ``w(alpha)`` or at the face step's better primal point (:func:`.margin_dual.primal_point`;
    over the model's own features: a Crammer-Singer model's include its bias column)."""
    alpha = _margin.project_dual(alpha, model.data, C)
    G, weights, objective = primal_point(model, _margin.coefficients(alpha, model.data), C,
                                         state.best_G)
    n_newton = state.n_newton
    lower = model.lower_bound(alpha, C)
    converged = converged and reached(relative_gap(objective, lower), tol)
    history["n_newton"] = n_newton
    extras = {"coefficients": G, "n_newton": n_newton, "pass_work": state.work_done}
    split = getattr(model, "split_weights", None)
    if model.node_weights and split is not None:
        weights, extras["intercept"] = split(weights)
    res = Solution(weights=weights, objective=float(objective), lower_bound=float(lower),
                   n_iter=n_iter, converged=converged, tol=tol, dual=alpha, history=history,
                   solve_time=time.perf_counter() - t_start, solver="working_set",
                   name="hsvm working set (Alg. 2)", extras=extras)
    res.warn_unless_converged("passes", stacklevel=4)  # points at the caller of solve
    return res
