"""Compiled maximum-weight closure by a minimum cut (Dinic's algorithm), one sample at a time.

The policy around it is :mod:`hiercvx.inference.closure`.  The flow network of a hierarchy
(Picard, "Maximal closure of a graph and applications to combinatorial problems", Management
Science 22, 1976): a source arc ``src -> v`` of capacity ``max(s_v, 0)``, a sink arc ``v -> snk``
of capacity ``max(-s_v, 0)``, an arc ``c -> p`` of infinite capacity for every edge ``p -> c``
(a chosen node has its parents chosen) and an infinite source arc into the root (the root is
always in).  The source side of a minimum cut is a closed set of largest score.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["closure_batch"]


@njit(cache=True)
def _bfs_levels(head, nxt_ptr, to, cap, src, snk, level, queue):
    """Distances from ``src`` in the residual graph (``-1``: unreachable); True if ``snk`` is."""
    level[:] = -1
    level[src] = 0
    qh, qt = 0, 1
    queue[0] = src
    while qh < qt:
        u = queue[qh]
        qh += 1
        for a in range(head[u], nxt_ptr[u]):
            v = to[a]
            if cap[a] > 0.0 and level[v] < 0:
                level[v] = level[u] + 1
                queue[qt] = v
                qt += 1
    return level[snk] >= 0


@njit(cache=True)
def _augment(head, nxt_ptr, to, rev, cap, src, snk, level, it, stack, arcs):
    """One augmenting path along the level graph (iterative DFS with current-arc pointers);
    returns the flow pushed (0: the blocking flow is complete)."""
    depth = 0
    stack[0] = src
    while True:
        u = stack[depth]
        if u == snk:
            push = np.inf
            for k in range(depth):
                if cap[arcs[k]] < push:
                    push = cap[arcs[k]]
            for k in range(depth):
                cap[arcs[k]] -= push
                cap[rev[arcs[k]]] += push
            return push
        advanced = False
        while it[u] < nxt_ptr[u]:
            a = it[u]
            v = to[a]
            if cap[a] > 0.0 and level[v] == level[u] + 1:
                arcs[depth] = a
                depth += 1
                stack[depth] = v
                advanced = True
                break
            it[u] += 1
        if not advanced:
            if depth == 0:
                return 0.0
            level[u] = -1  # dead end: never visit again in this phase
            depth -= 1
            it[stack[depth]] += 1


@njit(cache=True)
def _max_flow(head, nxt_ptr, to, rev, cap, src, snk, work):
    level, queue, it, stack, arcs = work
    while _bfs_levels(head, nxt_ptr, to, cap, src, snk, level, queue):
        for u in range(head.shape[0]):
            it[u] = head[u]
        while _augment(head, nxt_ptr, to, rev, cap, src, snk, level, it, stack, arcs) > 0.0:
            pass


@njit(cache=True)
def _greedy_flow(M, head, nxt_ptr, to, rev, base_cap, cap, src_arc, snk_arc, work):
    """A first feasible flow: each node's source supply sent up to the nearest ancestors that
    still have sink capacity, along the (infinite) child -> parent arcs of an upward search.
    Dinic's phases then only correct it; the minimum cut does not depend on the start."""
    stamp, queue, via = work
    for v in range(M):
        rem = cap[src_arc[v]]
        if rem <= 0.0 or rem == np.inf:
            continue
        mark = v + 1
        stamp[v] = mark
        via[v] = -1
        qh, qt = 0, 1
        queue[0] = v
        while qh < qt and rem > 0.0:
            u = queue[qh]
            qh += 1
            room = cap[snk_arc[u]]
            if room > 0.0:
                amt = rem if rem < room else room
                rem -= amt
                cap[snk_arc[u]] -= amt
                cap[rev[snk_arc[u]]] += amt
                w = u
                while via[w] >= 0:  # back along the search path: the reverse arcs gain
                    a = via[w]
                    cap[rev[a]] += amt
                    w = to[rev[a]]
                cap[src_arc[v]] -= amt
                cap[rev[src_arc[v]]] += amt
            for a in range(head[u], nxt_ptr[u]):
                p = to[a]
                if p < M and base_cap[a] == np.inf and stamp[p] != mark:
                    stamp[p] = mark
                    via[p] = a
                    queue[qt] = p
                    qt += 1


@njit(cache=True)
def _extendable(z, child_ptr, child_idx, is_leaf):
    """Whether the closed set ``z`` is a label set of ``Y_m``: a leaf is in, and every chosen
    internal node has a chosen child."""
    M = z.shape[0]
    any_leaf = False
    for v in range(M):
        if not z[v]:
            continue
        if is_leaf[v]:
            any_leaf = True
            continue
        found = False
        for k in range(child_ptr[v], child_ptr[v + 1]):
            if z[child_idx[k]]:
                found = True
                break
        if not found:
            return False
    return any_leaf


@njit(cache=True)
def _residual_reach(start, backward, head, nxt_ptr, to, rev, cap, seen, queue):
    """Mark in ``seen`` the vertices ``start`` reaches in the residual graph (``backward``: the
    vertices that reach ``start``; ``w -> u`` has residual capacity iff the reverse of the arc
    ``u -> w`` does)."""
    seen[:] = False
    seen[start] = True
    qh, qt = 0, 1
    queue[0] = start
    while qh < qt:
        u = queue[qh]
        qh += 1
        for a in range(head[u], nxt_ptr[u]):
            w = to[a]
            residual = cap[rev[a]] if backward else cap[a]
            if residual > 0.0 and not seen[w]:
                seen[w] = True
                queue[qt] = w
                qt += 1


@njit(cache=True)
def closure_batch(S, net, graph, Z, value, ok):
    """For every row ``s`` of ``S``: the largest-score closed set (source side of a minimum cut,
    the smallest such set first, then the largest), written into ``Z[i]`` with its score
    ``value[i]`` and ``ok[i]`` True when it is a label set of ``Y_m`` (then it solves (19)).

    ``net``: ``(head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc)`` the network in CSR form
    (``base_cap`` holds the infinite arcs; ``src_arc[v]`` / ``snk_arc[v]`` the arc of node ``v``
    from the source / to the sink); ``graph``: ``(child_ptr, child_idx, is_leaf)``.
    """
    head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc = net
    child_ptr, child_idx, is_leaf = graph
    n, M = S.shape
    src, snk = M, M + 1
    n_vertices = M + 2
    cap = np.empty(base_cap.shape[0])
    work = (np.empty(n_vertices, dtype=np.int64), np.empty(n_vertices, dtype=np.int64),
            np.empty(n_vertices, dtype=np.int64), np.empty(n_vertices + 1, dtype=np.int64),
            np.empty(n_vertices + 1, dtype=np.int64))
    seen = np.zeros(n_vertices, dtype=np.bool_)
    queue = work[1]
    greedy = (np.zeros(M, dtype=np.int64), np.empty(M, dtype=np.int64), np.empty(M, dtype=np.int64))
    for i in range(n):
        for a in range(cap.shape[0]):
            cap[a] = base_cap[a]
        for v in range(M):
            sv = S[i, v]
            if sv > 0.0:
                cap[src_arc[v]] += sv
            elif sv < 0.0:
                cap[snk_arc[v]] -= sv
        greedy[0][:] = 0
        _greedy_flow(M, head, nxt_ptr, to, rev, base_cap, cap, src_arc, snk_arc, greedy)
        _max_flow(head, nxt_ptr, to, rev, cap, src, snk, work)
        # smallest optimal closure: reachable from the source in the residual graph
        _residual_reach(src, False, head, nxt_ptr, to, rev, cap, seen, queue)
        for v in range(M):
            Z[i, v] = seen[v]
        good = _extendable(Z[i], child_ptr, child_idx, is_leaf)
        if not good:
            # largest optimal closure: all but the nodes that reach the sink in the residual
            _residual_reach(snk, True, head, nxt_ptr, to, rev, cap, seen, queue)
            for v in range(M):
                Z[i, v] = not seen[v]
            good = _extendable(Z[i], child_ptr, child_idx, is_leaf)
        total = 0.0
        for v in range(M):
            if Z[i, v]:
                total += S[i, v]
        value[i] = total
        ok[i] = good
