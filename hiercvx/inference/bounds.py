"""Bounds on program (19) before solving it: a label set, per-node upper bounds, and the nodes
that can be in no optimal set, batched over samples in one compiled loop.

For the argmax of ``sum_{n in y} s_n`` over the multi-label space ``Y_m`` of Choi, Sasaki and
Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016 (program (19)), every sample gets

* a feasible label set (a lower bound): the best of the leaf of largest path score and a
  tree-relaxation set repaired into ``Y_m``, grown leaf by leaf;
* upper bounds ``ub(v)`` on every label set containing ``v``: the leaf bound, a tree relaxation
  over a spanning tree (each node under its first parent) with Lagrange multipliers on the
  other edges (a few subgradient steps, Polyak step sizes), and extendability (a set containing
  ``v`` contains a leaf below ``v``).

A sample whose lower bound meets ``ub(root)`` is certified optimal without a solver; for the
others the nodes with ``ub(v) < value`` are in no optimal set, so (19) is solved on the rest.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from ..hierarchy import Hierarchy
from .options import Options

__all__ = ["DagBounds"]

#: Index arrays of a hierarchy, as the compiled loop reads them (CSR lists of ancestors,
#: children and parents; the spanning tree; the non-tree edges; the leaves).
Graph = namedtuple("Graph", ["anc_ptr", "anc_idx", "child_ptr", "child_idx", "parent_ptr",
                             "parent_idx", "first_parent", "extra_parent", "extra_child", "leaves"])
#: Per-sample outputs of the compiled loop (see ``_bound_kernel``).
Bounds = namedtuple("Bounds", ["value", "Z", "certified", "keep", "ub"])


class DagBounds:
    """Index arrays of a hierarchy for ``_bound_kernel``, built once per oracle.

    Parameters
    ----------
    H : Hierarchy
    options : Options, optional
        ``lagrange_steps`` and ``bound_rtol`` are read.
    """

    def __init__(self, H: Hierarchy, options: Options | None = None):
        options = options or Options()
        M = len(H)
        anc = H.ancestor_matrix
        child_ptr, child_idx = _csr_lists(H.children_indices, M)
        parents = H.parent_indices
        parent_ptr, parent_idx = _csr_lists(parents, M)
        # the spanning tree T of the tree relaxation: each node under its first parent; the
        # other edges (extra_parent -> extra_child) get Lagrange multipliers
        first_parent = np.array([ps[0] if len(ps) else -1 for ps in parents], dtype=np.int64)
        extra = [(int(p), v) for v, ps in enumerate(parents) for p in ps[1:]]
        self.graph = Graph(
            np.asarray(anc.indptr, dtype=np.int64), np.asarray(anc.indices, dtype=np.int64),
            child_ptr, child_idx, parent_ptr, parent_idx, first_parent,
            np.array([e[0] for e in extra], dtype=np.int64),
            np.array([e[1] for e in extra], dtype=np.int64),
            np.asarray(H.leaf_indices, dtype=np.int64))
        self.steps = int(options.lagrange_steps)
        self.rtol = float(options.bound_rtol)

    def run(self, S: np.ndarray) -> Bounds:
        """``(value, Z, certified, keep, ub)`` per row of ``S``: see ``_bound_kernel``."""
        n, M = S.shape
        out = Bounds(np.empty(n), np.zeros((n, M), dtype=np.bool_), np.zeros(n, dtype=np.bool_),
                     np.ones((n, M), dtype=np.bool_), np.empty((n, M)))
        _bound_kernel(np.ascontiguousarray(S, dtype=float), self.graph, self.steps, self.rtol, out)
        return out


def _csr_lists(lists, M: int) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(M + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    idx = np.concatenate(lists).astype(np.int64) if ptr[-1] else np.zeros(0, dtype=np.int64)
    return ptr, idx


@njit(cache=True)
def _tree_values(s, first_parent, f, g):
    """Tree relaxation over T: ``f(v) = s_v + sum_{T-children c} max(f(c), 0)`` (best T-closed
    set inside v's T-subtree that contains v), ``g(v) = g(T-parent) + min(f(v), 0)`` (best
    T-closed set containing v)."""
    M = s.shape[0]
    for v in range(M):
        f[v] = s[v]
    for v in range(M - 1, 0, -1):
        f[first_parent[v]] += max(f[v], 0.0)
    g[0] = f[0]
    for v in range(1, M):
        g[v] = g[first_parent[v]] + min(f[v], 0.0)


@njit(cache=True)
def _repaired_set(s, f, first_parent, parent_ptr, parent_idx, child_ptr, child_idx, anc_ptr,
                  anc_idx, cand) -> float:
    """The tree relaxation's best set (``v`` in iff its T-parent is and ``f(v) > 0``) made a
    label set of the DAG: closed upward, then every chosen internal node without a chosen child
    extended by its child of largest ``f`` (with that child's ancestors).  Returns its value."""
    M = s.shape[0]
    cand[0] = True
    for v in range(1, M):
        cand[v] = cand[first_parent[v]] and f[v] > 0.0
    for v in range(M - 1, 0, -1):
        if cand[v]:
            for k in range(parent_ptr[v], parent_ptr[v + 1]):
                cand[parent_idx[k]] = True
    for v in range(M):
        if not cand[v] or child_ptr[v + 1] == child_ptr[v]:
            continue
        best_c = -1
        for k in range(child_ptr[v], child_ptr[v + 1]):
            c = child_idx[k]
            if cand[c]:
                best_c = -2
                break
            if best_c == -1 or f[c] > f[best_c]:
                best_c = c
        if best_c >= 0:
            for k in range(anc_ptr[best_c], anc_ptr[best_c + 1]):
                cand[anc_idx[k]] = True
    total = 0.0
    for v in range(M):
        if cand[v]:
            total += s[v]
    return total


@njit(cache=True)
def _node_bounds(s, positive, up, g, child_ptr, child_idx, ub):
    """``ub(v)``: the smallest bound that applies (leaf bound, tree bound ``g``, the largest
    bound of the children), children first."""
    M = s.shape[0]
    for v in range(M - 1, -1, -1):
        if child_ptr[v + 1] == child_ptr[v]:
            bound = s[0] + positive + up[v]
        else:
            bound = -np.inf
            for k in range(child_ptr[v], child_ptr[v + 1]):
                bound = max(bound, ub[child_idx[k]])
        ub[v] = min(bound, g[v], ub[v])


@njit(cache=True)
def _path_sums(s, g, up, path):
    """``up(v)``: the negative mass of ``anc(v)`` without the root; ``path(v)``: the score of
    ``anc(v)`` (one parent: from the parent's, else summed over the ancestor list)."""
    up[0] = 0.0
    path[0] = s[0]
    for v in range(1, s.shape[0]):
        if g.parent_ptr[v + 1] - g.parent_ptr[v] == 1:
            p = g.first_parent[v]
            up[v] = up[p] + min(s[v], 0.0)
            path[v] = path[p] + s[v]
        else:
            a = 0.0
            b = 0.0
            for k in range(g.anc_ptr[v], g.anc_ptr[v + 1]):
                j = g.anc_idx[k]
                b += s[j]
                if j > 0:
                    a += min(s[j], 0.0)
            up[v] = a
            path[v] = b


@njit(cache=True)
def _repair(s, f, g, cand):
    return _repaired_set(s, f, g.first_parent, g.parent_ptr, g.parent_idx, g.child_ptr,
                         g.child_idx, g.anc_ptr, g.anc_idx, cand)


@njit(cache=True)
def _lagrange(s, g, work, positive, up, ub, z, val, tol, steps):
    """Subgradient steps (Polyak step towards the lower bound ``val``) on the multipliers of
    the non-tree edges; every bound met is kept in ``ub``, every better repaired set in ``z``.
    Returns the lower bound reached."""
    f, gt, moved, cand, lam, direction = work
    M = s.shape[0]
    n_extra = g.extra_parent.shape[0]
    for e in range(n_extra):
        lam[e] = 0.0
    best = ub[0]
    theta = 1.0
    stall = 0
    for _ in range(steps):
        for v in range(M):
            moved[v] = s[v]
        for e in range(n_extra):
            moved[g.extra_parent[e]] += lam[e]
            moved[g.extra_child[e]] -= lam[e]
        _tree_values(moved, g.first_parent, f, gt)
        _node_bounds(s, positive, up, gt, g.child_ptr, g.child_idx, ub)
        cand_val = _repair(s, f, g, cand)
        if cand_val > val:
            val = cand_val
            for v in range(M):
                z[v] = cand[v]
        if ub[0] < best - 1e-9 * (1.0 + abs(best)):
            best = ub[0]
            stall = 0
        else:
            stall += 1
            if stall >= 4:  # no progress for a while: halve the Polyak step
                theta *= 0.5
                stall = 0
        if ub[0] <= val + tol:
            break
        # subgradient of the bound f(root): z_p - z_c at the tree optimum (cand before the
        # repair: recompute it)
        norm = 0.0
        cand[0] = True
        for v in range(1, M):
            cand[v] = cand[g.first_parent[v]] and f[v] > 0.0
        for e in range(n_extra):
            d = (1.0 if cand[g.extra_parent[e]] else 0.0) - (1.0 if cand[g.extra_child[e]] else 0.0)
            direction[e] = d
            norm += d * d
        if norm == 0.0:
            break  # the tree optimum is closed in the DAG: the multipliers are optimal
        step = theta * (f[0] - val) / norm
        for e in range(n_extra):
            lam[e] = max(0.0, lam[e] - step * direction[e])
    return val


@njit(cache=True)
def _grow(s, g, order, z, val, bound, tol):
    """Two sweeps over the leaves in decreasing path score, each adding a leaf whose uncovered
    ancestors add a positive score; returns the set's value."""
    for _ in range(2):
        if val >= bound - tol:
            break
        for r in range(g.leaves.shape[0]):
            leaf = g.leaves[order[r]]
            if z[leaf]:
                continue
            gain = 0.0
            for k in range(g.anc_ptr[leaf], g.anc_ptr[leaf + 1]):
                if not z[g.anc_idx[k]]:
                    gain += s[g.anc_idx[k]]
            if gain > 0.0:
                for k in range(g.anc_ptr[leaf], g.anc_ptr[leaf + 1]):
                    z[g.anc_idx[k]] = True
                val += gain
    return val


@njit(cache=True)
def _bound_kernel(S, g, steps, rtol, out):
    """Per sample (row of ``S``): a label set of (19) (lower bound), upper bounds per node, and
    the nodes that can be in no optimal set, written into ``out`` (:data:`Bounds`).

    Upper bounds on the value of a label set containing node ``v``:

    * leaves, ``P = sum_{j != root} max(s_j, 0)``: a set containing leaf ``l`` contains
      ``anc(l)`` and at most the positive scores beyond it, so its value is at most
      ``s_root + P + sum_{j in anc(l), j != root} min(s_j, 0)``;
    * tree relaxation (:func:`_tree_values`): with every node under its first parent only (a
      spanning tree T) each label set is T-closed, so ``g(v)`` bounds it; with multipliers
      ``lam >= 0`` on the other edges ``p -> c`` (score ``+lam`` at p, ``-lam`` at c: a label
      set has ``z_c <= z_p``, so its value can only grow) the same holds for the moved scores.
      The multipliers take ``steps`` subgradient steps on uncertified samples
      (:func:`_lagrange`); every bound met is kept, node by node;
    * a set containing ``v`` contains a leaf below ``v`` (extendability): at most the largest
      bound of ``v``'s children.

    Lower bound: the best of the leaf of largest path score and the repaired tree-relaxation
    sets met on the way (:func:`_repaired_set`), grown by :func:`_grow`.  ``certified``: the
    lower bound reaches ``ub(root)`` within ``rtol * sum_{j != root} |s_j|``; ``keep``:
    ``ub(v) >= value - tol`` (outside it, a node lowers every set containing it below the
    value found).
    """
    n, M = S.shape
    up = np.empty(M)
    path = np.empty(M)
    n_extra = g.extra_parent.shape[0]
    work = (np.empty(M), np.empty(M), np.empty(M), np.zeros(M, dtype=np.bool_),
            np.zeros(n_extra), np.zeros(n_extra))
    f, gt, cand = work[0], work[1], work[3]
    leaf_path = np.empty(g.leaves.shape[0])
    for i in range(n):
        s = S[i]
        ub = out.ub[i]
        z = out.Z[i]
        total = 0.0
        positive = 0.0
        for j in range(1, M):  # the root (node 0) is in every set: not part of the scale
            total += abs(s[j])
            if s[j] > 0.0:
                positive += s[j]
        tol = rtol * total  # relative to the scores' magnitude: the certificate is scale-free
        _path_sums(s, g, up, path)
        _tree_values(s, g.first_parent, f, gt)
        for v in range(M):
            ub[v] = np.inf
        _node_bounds(s, positive, up, gt, g.child_ptr, g.child_idx, ub)
        # lower bound: best leaf or repaired tree set
        for r in range(g.leaves.shape[0]):
            leaf_path[r] = path[g.leaves[r]]
        order = np.argsort(-leaf_path, kind="mergesort")
        first = g.leaves[order[0]]
        val = path[first]
        cand_val = _repair(s, f, g, cand)
        if cand_val > val:
            val = cand_val
            for v in range(M):
                z[v] = cand[v]
        else:
            for k in range(g.anc_ptr[first], g.anc_ptr[first + 1]):
                z[g.anc_idx[k]] = True
        if n_extra and val < ub[0] - tol:
            val = _lagrange(s, g, work, positive, up, ub, z, val, tol, steps)
        val = _grow(s, g, order, z, val, ub[0], tol)
        out.value[i] = val
        out.certified[i] = val >= ub[0] - tol
        for v in range(M):
            out.keep[i, v] = ub[v] >= val - tol
