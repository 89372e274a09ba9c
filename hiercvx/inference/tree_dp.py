"""The tree dynamic program for the best label set of ``Y_m`` (method ``"dp"``), O(M) per sample.

With ``f(n)`` the best value of a label set inside the subtree of ``n`` that contains ``n``::

    f(l) = s_l                                                            (leaf)
    f(n) = s_n + sum_{c in C(n)} max(f(c), 0) + min(0, max_{c in C(n)} f(c))   (internal)

(every child subtree that gains is taken; when none gains, the least-losing one, since a chosen
internal node needs a chosen child in ``Y_m``).  The optimum of program (19) of Choi, Sasaki
and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016, on a tree is ``f(root)``;
backtracking from the root recovers the set.  The recursion is compiled and runs sample by
sample over the nodes in reverse topological order (``H.nodes`` lists parents first).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..hierarchy import Hierarchy

__all__ = ["TreeDP"]


@njit(cache=True)
def _tree_dp(S, parent, child_ptr, child_idx, Z, value):
    """The recursion for every row of ``S`` ``(n, M)``: the best sets into ``Z`` (bool) and
    their values into ``value``.  Bottom-up ``f``; top-down, a child of a chosen node is in
    iff ``f(c) > 0`` or it is its parent's first best child (children in increasing index)."""
    n, M = S.shape
    f = np.empty(M)
    best = np.full(M, -1, dtype=np.int64)
    for i in range(n):
        for v in range(M - 1, -1, -1):
            start, stop = child_ptr[v], child_ptr[v + 1]
            if start == stop:
                f[v] = S[i, v]
                continue
            gain = 0.0
            top = -np.inf
            for k in range(start, stop):
                fc = f[child_idx[k]]
                if fc > 0.0:
                    gain += fc
                if fc > top:
                    top = fc
                    best[v] = child_idx[k]
            f[v] = S[i, v] + gain + min(0.0, top)
        value[i] = f[0]
        Z[i, 0] = True
        for v in range(1, M):
            u = parent[v]
            Z[i, v] = Z[i, u] and (f[v] > 0.0 or best[u] == v)


class TreeDP:
    """A tree's parent and child arrays (children in increasing node index), built once, for
    the compiled DP."""

    def __init__(self, H: Hierarchy):
        parent = np.asarray(H.parent_index, dtype=np.int64).copy()
        self.n_nodes = len(H)
        parent[0] = 0  # the root (node 0) has none; never read
        children = np.arange(1, self.n_nodes)
        children = children[np.argsort(parent[1:], kind="stable")]  # by parent, then index
        self.parent = parent
        self.child_idx = children.astype(np.int64)
        self.child_ptr = np.searchsorted(parent[children], np.arange(self.n_nodes + 1)).astype(np.int64)

    def solve(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best sets ``(n, M)`` bool and their values ``(n,)`` for the score rows of ``S``."""
        S = np.ascontiguousarray(S, dtype=float)
        Z = np.zeros(S.shape, dtype=np.bool_)
        value = np.empty(S.shape[0])
        _tree_dp(S, self.parent, self.child_ptr, self.child_idx, Z, value)
        return Z, value
