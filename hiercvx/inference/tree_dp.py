"""The tree dynamic program for the best label set of ``Y_m`` (method ``"dp"``), O(M) per sample.

With ``f(n)`` the best value of a label set inside the subtree of ``n`` that contains ``n``::

    f(l) = s_l                                                            (leaf)
    f(n) = s_n + sum_{c in C(n)} max(f(c), 0) + min(0, max_{c in C(n)} f(c))   (internal)

(every child subtree that gains is taken; when none gains, the least-losing one, since a chosen
internal node needs a chosen child in ``Y_m``).  The optimum of program (19) of Choi, Sasaki
and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016, on a tree is ``f(root)``;
backtracking from the root recovers the set.  The recursion runs level by level with
``numpy.reduceat`` over the children of each level, on all samples at once.
"""

from __future__ import annotations

import numpy as np

from ..hierarchy import Hierarchy

__all__ = ["TreeDP"]


class TreeDP:
    """Per-depth index arrays of a tree, built once, for the vectorized DP."""

    def __init__(self, H: Hierarchy):
        parent = H.parent_index
        depths = H.depths
        self.n_nodes = len(H)
        # per depth d: (parents at d that have children, children at d+1 grouped by parent,
        #              parent of each child, start of each group, group sizes)
        self.levels = []
        for d in range(int(depths.max()) if len(H) > 1 else 0):
            children = np.flatnonzero(depths == d + 1)
            # group the children by parent (stable, so ties keep H.nodes order)
            children = children[np.argsort(parent[children], kind="stable")]
            par = parent[children]
            starts = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            counts = np.diff(np.r_[starts, len(children)])
            self.levels.append((par[starts], children, par, starts, counts))

    def solve(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best sets ``(n, M)`` bool and their values ``(n,)`` for the score rows of ``S``.

        Bottom-up: ``f(n) = s_n + sum_c max(f(c), 0) + min(0, max_c f(c))`` for internal n
        (take every child subtree that gains; if none does, the least-losing one), f = s at a
        leaf.  Top-down: root in; a child of a chosen node is in iff ``f(c) > 0`` or it is its
        parent's first best child.
        """
        # node-major layout: each node's values over the samples are one contiguous row
        f = np.array(S.T, order="C")
        n = S.shape[0]
        forced = np.zeros((self.n_nodes, n), dtype=np.int64)  # first best child of each node
        for parents, children, _, starts, counts in reversed(self.levels):
            fc = f[children]
            group_max = np.maximum.reduceat(fc, starts, axis=0)
            gain = np.add.reduceat(np.maximum(fc, 0.0), starts, axis=0)
            f[parents] += gain + np.minimum(group_max, 0.0)
            is_best = fc == np.repeat(group_max, counts, axis=0)
            position = np.where(is_best, np.arange(len(children))[:, None], len(children))
            forced[parents] = children[np.minimum.reduceat(position, starts, axis=0)]
        chosen = np.zeros((self.n_nodes, n), dtype=bool)
        chosen[0] = True
        for _, children, par, _, _ in self.levels:
            chosen[children] = chosen[par] & ((f[children] > 0) | (forced[par] == children[:, None]))
        return chosen.T, f[0]

