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

__all__ = ["closure_batch", "closure_forced", "closure_one", "cut_sets", "dangling", "workspace"]


@njit(cache=True)
def _bfs_levels(head, nxt_ptr, to, cap, src, snk, level, queue):
    """Distances from ``src`` in the residual graph (``-1``: unreachable); True if ``snk`` is.
    The search stops at the sink's level: an augmenting path of the level graph never passes
    a vertex further away."""
    level[:] = -1
    level[src] = 0
    qh, qt = 0, 1
    queue[0] = src
    while qh < qt:
        u = queue[qh]
        qh += 1
        if level[snk] >= 0 and level[u] >= level[snk] - 1:
            break
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
def _tree_push(tree, cap, src_arc, snk_arc, rev, work):
    """A first flow along a spanning tree of the hierarchy in two linear passes.

    ``tree = (parent, arc)``: each node's tree parent and its arc to it (``-1`` at the root;
    nodes in topological order, parents first).  Children first, every node's supply plus
    what its children send is absorbed by its sink capacity as far as it goes and the rest
    sent to its tree parent; then parents first, what reached the root unabsorbed is returned
    down the tree (from a node's own supply first, then from its children's shipments, in
    index order), so the flow is feasible.  The root's source arc is infinite: it supplies
    nothing here."""
    parent, arc = tree
    sup, inflow, push, rem = work
    M = parent.shape[0]
    for v in range(M):
        sup[v] = 0.0 if parent[v] < 0 else cap[src_arc[v]]
        inflow[v] = 0.0
    for v in range(M - 1, -1, -1):
        excess = sup[v] + inflow[v]
        room = cap[snk_arc[v]]
        absorbed = excess if excess < room else room
        if absorbed > 0.0:
            cap[snk_arc[v]] -= absorbed
            cap[rev[snk_arc[v]]] += absorbed
        push[v] = excess - absorbed
        if parent[v] >= 0:
            inflow[parent[v]] += push[v]
    for v in range(M):
        if parent[v] < 0:
            back = push[v]  # unabsorbed at the root: returned
        else:
            p = parent[v]
            back = rem[p] if rem[p] < push[v] else push[v]
            rem[p] -= back
            push[v] -= back
            if push[v] > 0.0:
                cap[rev[arc[v]]] += push[v]
        own = back if back < sup[v] else sup[v]
        rem[v] = back - own
        used = sup[v] - own
        if used > 0.0:
            cap[src_arc[v]] -= used
            cap[rev[src_arc[v]]] += used


@njit(cache=True)
def _greedy_flow(M, head, nxt_ptr, to, rev, base_cap, cap, src_arc, snk_arc, work):
    """A first feasible flow: each node's source supply sent up to the nearest ancestors that
    still have sink capacity, along the (infinite) child -> parent arcs of an upward search.
    Dinic's phases then only correct it; the minimum cut does not depend on the start.

    A search that ends with supply left has emptied the sink capacity of every node it
    reached, i.e. of a node and all its ancestors; those nodes are marked ``dead`` and no later
    search enters them (capacities only fall here).  When most supply cannot be absorbed (a
    loss-augmented set holds nearly every node) the searches then cost ``O(nodes + edges)``
    in all, not a walk over every positive node's ancestors."""
    stamp, queue, via, dead = work
    for v in range(M):
        dead[v] = False
    for v in range(M):
        rem = cap[src_arc[v]]
        if rem <= 0.0 or rem == np.inf or dead[v]:
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
                if p < M and base_cap[a] == np.inf and stamp[p] != mark and not dead[p]:
                    stamp[p] = mark
                    via[p] = a
                    queue[qt] = p
                    qt += 1
        if rem > 0.0:  # every node reached (v and its live ancestors) has no sink capacity left
            for q in range(qt):
                dead[queue[q]] = True


@njit(cache=True)
def dangling(z, child_ptr, child_idx, is_leaf) -> int:
    """The last node (in topological order) of the closed set ``z`` that is internal and has
    no child in ``z``; ``-1`` when there is none."""
    for v in range(z.shape[0] - 1, -1, -1):
        if not z[v] or is_leaf[v]:
            continue
        found = False
        for k in range(child_ptr[v], child_ptr[v + 1]):
            if z[child_idx[k]]:
                found = True
                break
        if not found:
            return v
    return -1


@njit(cache=True)
def _extendable(z, child_ptr, child_idx, is_leaf):
    """Whether the closed set ``z`` is a label set of ``Y_m``: a leaf is in, and every chosen
    internal node has a chosen child (:func:`dangling` finds none)."""
    any_leaf = False
    for v in range(z.shape[0]):
        if z[v] and is_leaf[v]:
            any_leaf = True
            break
    return any_leaf and dangling(z, child_ptr, child_idx, is_leaf) < 0


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
def workspace(net, M):
    """The scratch arrays of :func:`closure_one` for a network of ``M`` nodes."""
    n_arcs = net[4].shape[0]
    n_vertices = M + 2
    work = (np.empty(n_vertices, dtype=np.int64), np.empty(n_vertices, dtype=np.int64),
            np.empty(n_vertices, dtype=np.int64), np.empty(n_vertices + 1, dtype=np.int64),
            np.empty(n_vertices + 1, dtype=np.int64))
    greedy = (np.zeros(M, dtype=np.int64), np.empty(M, dtype=np.int64), np.empty(M, dtype=np.int64),
              np.zeros(M, dtype=np.bool_))
    pushed = (np.empty(M), np.empty(M), np.empty(M), np.empty(M))
    return (np.empty(n_arcs), np.empty(n_arcs), work, np.zeros(n_vertices, dtype=np.bool_),
            greedy, pushed)


@njit(cache=True)
def closure_one(s, net, tree, graph, ws, z):
    """The largest-score closed set for the scores ``s`` (source side of a minimum cut, the
    smallest such set first, then the largest), written into ``z``; returns its score and
    whether it is a label set of ``Y_m`` (then it solves (19)).  ``ws``: :func:`workspace`;
    the other arguments as in :func:`closure_batch`."""
    head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc = net
    child_ptr, child_idx, is_leaf = graph
    cap, cap_t, work, seen, greedy, pushed = ws
    M = s.shape[0]
    src, snk = M, M + 1
    queue = work[1]
    for a in range(cap.shape[0]):
        cap[a] = base_cap[a]
    for v in range(M):
        sv = s[v]
        if sv > 0.0:
            cap[src_arc[v]] += sv
        elif sv < 0.0:
            cap[snk_arc[v]] -= sv
    _tree_push(tree, cap, src_arc, snk_arc, rev, pushed)
    greedy[0][:] = 0
    _greedy_flow(M, head, nxt_ptr, to, rev, base_cap, cap, src_arc, snk_arc, greedy)
    # Dinic's phases search from the terminal with fewer open arcs left (the maximum flow
    # and its residual graph do not depend on the direction): after a loss augmentation
    # most supply stays unabsorbed, and a search from the source would sweep all of it
    n_supply = 0
    n_demand = 0
    for v in range(M):
        if cap[src_arc[v]] > 0.0:
            n_supply += 1
        if cap[snk_arc[v]] > 0.0:
            n_demand += 1
    if n_demand < n_supply:  # on the transposed network: arc a carries rev[a]'s capacity
        for a in range(cap.shape[0]):
            cap_t[a] = cap[rev[a]]
        _max_flow(head, nxt_ptr, to, rev, cap_t, snk, src, work)
        for a in range(cap.shape[0]):
            cap[a] = cap_t[rev[a]]
    else:
        _max_flow(head, nxt_ptr, to, rev, cap, src, snk, work)
    return cut_sets(s, net, graph, ws, z)


@njit(cache=True)
def cut_sets(s, net, graph, ws, z):
    """The closed set of the maximum flow held in ``ws`` (its residual capacities): the source
    side of the smallest minimum cut, or when that is no label set of ``Y_m``, of the largest;
    written into ``z``, with its score under ``s`` and whether it is a label set."""
    head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc = net
    child_ptr, child_idx, is_leaf = graph
    cap, seen, queue = ws[0], ws[3], ws[2][1]
    M = s.shape[0]
    src, snk = M, M + 1
    # smallest optimal closure: reachable from the source in the residual graph
    _residual_reach(src, False, head, nxt_ptr, to, rev, cap, seen, queue)
    for v in range(M):
        z[v] = seen[v]
    good = _extendable(z, child_ptr, child_idx, is_leaf)
    if not good:
        # largest optimal closure: all but the nodes that reach the sink in the residual
        _residual_reach(snk, True, head, nxt_ptr, to, rev, cap, seen, queue)
        for v in range(M):
            z[v] = not seen[v]
        good = _extendable(z, child_ptr, child_idx, is_leaf)
    total = 0.0
    for v in range(M):
        if z[v]:
            total += s[v]
    return total, good


@njit(cache=True)
def closure_forced(s, net, graph, ws, z, start, v, force_in, big):
    """:func:`closure_one` for a subproblem that adds one force to a solved one: ``start``
    holds the residual capacities of the solved subproblem's maximum flow, ``v`` the node now
    forced in (``force_in``: its source arc gains ``big``) or out (its sink arc becomes
    infinite).  Either is a capacity increase, so that flow stays feasible and the maximum
    flow continues from it (a node with source capacity ``a`` and sink capacity ``b`` has
    the score ``a - b`` up to a constant: every cut pays one of the two)."""
    head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc = net
    cap, work = ws[0], ws[2]
    M = s.shape[0]
    for a in range(cap.shape[0]):
        cap[a] = start[a]
    if force_in:
        cap[src_arc[v]] += big
    else:
        cap[snk_arc[v]] = np.inf
    _max_flow(head, nxt_ptr, to, rev, cap, M, M + 1, work)
    return cut_sets(s, net, graph, ws, z)


@njit(cache=True)
def closure_batch(S, net, tree, graph, Z, value, ok):
    """For every row ``s`` of ``S``: the largest-score closed set (source side of a minimum cut,
    the smallest such set first, then the largest), written into ``Z[i]`` with its score
    ``value[i]`` and ``ok[i]`` True when it is a label set of ``Y_m`` (then it solves (19)).

    ``net``: ``(head, nxt_ptr, to, rev, base_cap, src_arc, snk_arc)`` the network in CSR form
    (``base_cap`` holds the infinite arcs; ``src_arc[v]`` / ``snk_arc[v]`` the arc of node ``v``
    from the source / to the sink); ``tree``: ``(parent, arc)`` a spanning tree of the
    hierarchy (:func:`_tree_push`), ``graph``: ``(child_ptr, child_idx, is_leaf)``.  The flow
    starts from :func:`_tree_push` and :func:`_greedy_flow`; Dinic's phases finish it,
    searching from the sink on the transposed network when fewer sink arcs than source arcs
    are open.
    """
    n, M = S.shape
    ws = workspace(net, M)
    for i in range(n):
        value[i], ok[i] = closure_one(S[i], net, tree, graph, ws, Z[i])
