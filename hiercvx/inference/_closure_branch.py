"""Compiled branch and bound on the closure relaxation of program (19), one sample at a time.

The closure cut (:mod:`hiercvx.inference.closure`) solves (19) of Choi, Sasaki and Srebro,
"Normalized Hierarchical SVM", arXiv:1508.02479, 2016, without its extendability rows; its
closed set fails to be a label set only where a chosen internal node has no chosen child (it
*dangles*).  Every label set either leaves a dangling node ``u`` out or holds one of its
children, so the subproblems "``u`` out" and "child ``c`` in" (one per child) cover the label
sets of their parent; each is again a closure problem (a node forced in gets a score above
every set's total, a node forced out one below), its closed set bounds the subproblem from
above and, when it is a label set, solves it.  Best-first search on these bounds is exact; it
stops after a budget of minimum cuts, and the caller then solves the sample another way.
Loss-augmented samples of a large DAG, whose closed set holds nearly every node and dangles at
one to three nodes, are proved in a few cuts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._closure_kernels import closure_one, workspace

__all__ = ["branch_batch"]


@njit(cache=True)
def _dangling(z, child_ptr, child_idx, is_leaf) -> int:
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
def _forced(s, big, link, node, shifted) -> bool:
    """``shifted = s`` with the forces of the chain ending at ``node`` applied (``+big`` in,
    ``-big`` out); False when the chain forces one node both ways."""
    parent, var, sign = link
    for v in range(s.shape[0]):
        shifted[v] = s[v]
    k = node
    while k >= 0:
        v = var[k]
        if (sign[k] > 0 and shifted[v] < s[v]) or (sign[k] < 0 and shifted[v] > s[v]):
            return False
        shifted[v] = s[v] + sign[k] * big
        k = parent[k]
    return True


@njit(cache=True)
def _kept(z, link, node) -> bool:
    """Whether the closed set ``z`` honours every force of the chain ending at ``node``."""
    parent, var, sign = link
    k = node
    while k >= 0:
        if z[var[k]] != (sign[k] > 0):
            return False
        k = parent[k]
    return True


@njit(cache=True)
def _branch_one(s, net, tree, graph, ws, work, max_cuts, rtol, best):
    """Best-first branch and bound for one score row ``s``; the optimum goes into ``best``.
    Returns ``(value, cuts)``, ``value = nan`` when ``max_cuts`` minimum cuts (or the link
    table) ran out before a proof."""
    child_ptr, child_idx, is_leaf = graph
    link, open_node, open_ub, z, shifted = work
    parent, var, sign = link
    cap_links = parent.shape[0]
    total = 0.0
    for v in range(s.shape[0]):
        total += abs(s[v])
    big = 2.0 * (1.0 + total)
    tol = rtol * (1.0 + total)
    incumbent = -np.inf
    n_open = 1
    open_node[0] = -1
    open_ub[0] = np.inf
    n_links = 0
    cuts = 0
    while n_open > 0:
        pick = 0
        for q in range(1, n_open):
            if open_ub[q] > open_ub[pick]:
                pick = q
        if open_ub[pick] <= incumbent + tol:
            break  # no open subproblem can beat the incumbent: it is optimal
        node = open_node[pick]
        n_open -= 1
        open_node[pick] = open_node[n_open]
        open_ub[pick] = open_ub[n_open]
        if not _forced(s, big, link, node, shifted):
            continue
        if cuts >= max_cuts:
            return np.nan, cuts
        cuts += 1
        _, good = closure_one(shifted, net, tree, graph, ws, z)
        if not _kept(z, link, node):
            continue  # the forces conflict: no label set here
        value = 0.0
        for v in range(s.shape[0]):
            if z[v]:
                value += s[v]
        if value <= incumbent + tol:
            continue
        if good:
            incumbent = value
            for v in range(s.shape[0]):
                best[v] = z[v]
            continue
        u = _dangling(z, child_ptr, child_idx, is_leaf)
        width = 1 + child_ptr[u + 1] - child_ptr[u]
        if n_links + width > cap_links or n_open + width > open_node.shape[0]:
            return np.nan, cuts
        for b in range(width):  # u out, then each child of u in
            parent[n_links] = node
            var[n_links] = u if b == 0 else child_idx[child_ptr[u] + b - 1]
            sign[n_links] = -1.0 if b == 0 else 1.0
            open_node[n_open] = n_links
            open_ub[n_open] = value
            n_links += 1
            n_open += 1
    if incumbent == -np.inf:
        return np.nan, cuts
    return incumbent, cuts


@njit(cache=True)
def branch_batch(S, rows, net, tree, graph, max_cuts, max_links, rtol, Z, value):
    """:func:`_branch_one` for the score rows ``S[rows]``: each proved optimum into ``Z[r]``
    and its score into ``value[r]`` (``nan`` where the budget ran out, ``Z[r]`` untouched).
    Returns the minimum cuts spent."""
    M = S.shape[1]
    ws = workspace(net, M)
    link = (np.empty(max_links, dtype=np.int64), np.empty(max_links, dtype=np.int64),
            np.empty(max_links))
    work = (link, np.empty(max_links + 1, dtype=np.int64), np.empty(max_links + 1),
            np.zeros(M, dtype=np.bool_), np.empty(M))
    best = np.zeros(M, dtype=np.bool_)
    spent = 0
    for e in range(rows.shape[0]):
        r = rows[e]
        v, cuts = _branch_one(S[r], net, tree, graph, ws, work, max_cuts, rtol, best)
        spent += cuts
        value[r] = v
        if not np.isnan(v):
            for m in range(M):
                Z[r, m] = best[m]
    return spent
