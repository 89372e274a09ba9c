"""Compiled branch and bound on the closure relaxation of program (19), one sample at a time.

The closure cut (:mod:`hiercvx.inference.closure`) solves (19) of Choi, Sasaki and Srebro,
"Normalized Hierarchical SVM", arXiv:1508.02479, 2016, without its extendability rows; its
closed set fails to be a label set only where a chosen internal node has no chosen child (it
*dangles*).  Every label set either leaves a dangling node ``u`` out or holds one of its
children, so the subproblems "``u`` out" and "child ``c`` in" (one per child) cover the label
sets of their parent; each is again a closure problem (a node forced in gets a score above
every set's total, a node forced out the score ``-inf``), its closed set bounds the
subproblem from above and, when it is a label set, solves it.  Both forces only raise
capacities of the parent's flow network (a source arc gains a large capacity; a sink arc
becomes infinite), so the parent's maximum flow stays feasible and the child's continues
from it.  Best-first search on these bounds is exact; it stops after a budget of minimum
cuts, and the caller then solves the sample another way.  The nodes the bounds of
:mod:`hiercvx.inference.bounds` exclude from every optimal set are forced out from the start,
and the bounds' label set is the first incumbent.
Loss-augmented samples of a large DAG, whose closed set holds nearly every node and dangles at
one to three nodes, are proved in a few cuts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._closure_kernels import closure_forced, closure_one, dangling, workspace

__all__ = ["branch_batch"]


@njit(cache=True)
def _forced(base, big, link, node, sign_of, shifted) -> bool:
    """``shifted = base`` with the forces of the chain ending at ``node`` applied (``+big`` in,
    ``-inf`` out); False when the chain forces one node both ways.  ``sign_of`` (zeros) is
    used as scratch and left zero."""
    parent, var, sign = link[0], link[1], link[2]
    for v in range(base.shape[0]):
        shifted[v] = base[v]
    ok = True
    k = node
    while k >= 0:
        v = var[k]
        if sign_of[v] != 0.0 and sign_of[v] != sign[k]:
            ok = False
        sign_of[v] = sign[k]
        shifted[v] = base[v] + big if sign[k] > 0 else -np.inf
        k = parent[k]
    k = node
    while k >= 0:
        sign_of[var[k]] = 0.0
        k = parent[k]
    return ok


@njit(cache=True)
def _kept(z, keep, link, node) -> bool:
    """Whether the closed set ``z`` lies inside ``keep`` and honours every force of the chain
    ending at ``node``."""
    parent, var, sign = link[0], link[1], link[2]
    for v in range(z.shape[0]):
        if z[v] and not keep[v]:
            return False
    k = node
    while k >= 0:
        if z[var[k]] != (sign[k] > 0):
            return False
        k = parent[k]
    return True


@njit(cache=True)
def _push_children(u, node, value, keep, graph, link, work, counts, snap) -> bool:
    """Open the subproblems "``u`` out" and "child ``c`` of ``u`` in" (``c`` kept) under
    ``node``, each bounded by ``value`` and starting from the flow in snapshot ``snap``; False
    when the tables are full."""
    child_ptr, child_idx, is_leaf = graph
    parent, var, sign, start = link
    open_node, open_ub = work[1], work[2]
    n_links, n_open = counts[0], counts[1]
    width = 1 + child_ptr[u + 1] - child_ptr[u]
    if n_links + width > parent.shape[0] or n_open + width > open_node.shape[0]:
        return False
    for b in range(width):  # u out (never the root: it is in every set), then each kept child in
        v = u if b == 0 else child_idx[child_ptr[u] + b - 1]
        if (b == 0 and u == 0) or (b > 0 and not keep[v]):
            continue
        parent[n_links] = node
        var[n_links] = v
        sign[n_links] = -1.0 if b == 0 else 1.0
        start[n_links] = snap
        open_node[n_open] = n_links
        open_ub[n_open] = value
        n_links += 1
        n_open += 1
    counts[0], counts[1] = n_links, n_open
    return True


@njit(cache=True)
def _branch_one(s, keep, incumbent, net, tree, graph, ws, work, flows, max_cuts, rtol, best):
    """Best-first branch and bound for one score row ``s`` inside the nodes ``keep``, from an
    incumbent label set ``best`` of value ``incumbent`` (``-inf``: none); the optimum goes into
    ``best``.  Returns ``(value, cuts)``, ``value = nan`` when ``max_cuts`` minimum cuts (or
    the tables) ran out before a proof.  A subproblem's force is a capacity increase of its
    parent's network, so its maximum flow continues from the parent's (kept in ``flows``, one
    row per expanded subproblem) rather than starting afresh."""
    child_ptr, child_idx, is_leaf = graph
    link, open_node, open_ub, z, shifted, base, sign_of = work
    var, sign, start = link[1], link[2], link[3]
    M = s.shape[0]
    rest = 0.0  # sum |s| without the root's score, which every set has
    for v in range(M):
        if v > 0:
            rest += abs(s[v])
        base[v] = s[v] if keep[v] or v == 0 else -np.inf  # node 0, the root, is always in
    big = 2.0 * (1.0 + rest + abs(s[0]))
    tol = rtol * rest  # relative to the scores' magnitude: the search is scale-free
    counts = np.zeros(2, dtype=np.int64)  # links used, open subproblems
    counts[1] = 1
    open_node[0] = -1
    open_ub[0] = np.inf
    cuts = 0
    while counts[1] > 0:
        n_open = counts[1]
        pick = 0
        for q in range(1, n_open):
            if open_ub[q] > open_ub[pick]:
                pick = q
        if open_ub[pick] <= incumbent + tol:
            break  # no open subproblem can beat the incumbent: it is optimal
        node = open_node[pick]
        counts[1] = n_open - 1
        open_node[pick] = open_node[n_open - 1]
        open_ub[pick] = open_ub[n_open - 1]
        if not _forced(base, big, link, node, sign_of, shifted):
            continue
        if cuts >= max_cuts:
            return np.nan, cuts
        if node < 0:
            _, good = closure_one(shifted, net, tree, graph, ws, z)
        else:
            _, good = closure_forced(s, net, graph, ws, z, flows[start[node]], var[node],
                                     sign[node] > 0, big)
        cuts += 1
        if not _kept(z, keep, link, node):
            continue  # the forces conflict: no label set here
        value = 0.0
        for v in range(M):
            if z[v]:
                value += s[v]
        if value <= incumbent + tol:
            continue
        if good:
            incumbent = value
            for v in range(M):
                best[v] = z[v]
            continue
        u = dangling(z, child_ptr, child_idx, is_leaf)
        flows[cuts - 1, :] = ws[0]  # its flow, where its children start (cuts <= max_cuts rows)
        if not _push_children(u, node, value, keep, graph, link, work, counts, cuts - 1):
            return np.nan, cuts
    if incumbent == -np.inf:
        return np.nan, cuts
    return incumbent, cuts


@njit(cache=True)
def branch_batch(S, rows, keep, start, net, tree, graph, max_cuts, max_links, rtol, Z, value):
    """:func:`_branch_one` for the score rows ``S[rows]`` inside ``keep[e]`` (bool ``(len(rows),
    M)``) from the incumbents ``start = (values, sets)`` (over ``rows``; ``-inf``: none): each
    proved optimum into ``Z[r]`` and its score into ``value[r]`` (``nan`` where the budget ran
    out, ``Z[r]`` untouched).  Returns the minimum cuts spent."""
    M = S.shape[1]
    ws = workspace(net, M)
    link = (np.empty(max_links, dtype=np.int64), np.empty(max_links, dtype=np.int64),
            np.empty(max_links), np.empty(max_links, dtype=np.int64))
    flows = np.empty((max_cuts, net[4].shape[0]))
    work = (link, np.empty(max_links + 1, dtype=np.int64), np.empty(max_links + 1),
            np.zeros(M, dtype=np.bool_), np.empty(M), np.empty(M), np.zeros(M))
    best = np.zeros(M, dtype=np.bool_)
    start_value, start_set = start
    spent = 0
    for e in range(rows.shape[0]):
        r = rows[e]
        for m in range(M):
            best[m] = start_set[e, m]
        v, cuts = _branch_one(S[r], keep[e], start_value[e], net, tree, graph, ws, work, flows,
                              max_cuts, rtol, best)
        spent += cuts
        value[r] = v
        if not np.isnan(v):
            for m in range(M):
                Z[r, m] = best[m]
    return spent
