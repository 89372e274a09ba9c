"""The closure relaxation of program (19): a minimum cut that answers some samples exactly.

Program (19) of Choi, Sasaki and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479,
2016, asks for the best label set of ``Y_m``: an ancestor-closed set (closure rows), every
chosen internal node with a chosen child (extendability rows), a leaf chosen, the root in.
Dropping the extendability rows leaves a maximum-weight closure problem, which a minimum cut
solves exactly in polynomial time (Picard, Management Science 22, 1976).  Its optimum bounds
(19) from above; when the closed set it returns is itself a label set of ``Y_m`` it is optimal
for (19), and no LP or integer program is needed.

How often depends on the scores.  Loss-augmented inference with the leaf-Hamming loss (every
leaf outside the true set gains 1) is answered this way for every sample when the scores are
zero and for most when they are near zero, as early in training; at the scores of a trained
model (node scores of order 1), loss-augmented or plain, few samples or none are, on the Gene
Ontology DAG.  The :class:`~hiercvx.inference.LabelSetOracle` sends the rest on to the bounds,
the LP relaxation and (19) itself.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..hierarchy import Hierarchy
from ._closure_branch import branch_batch
from ._closure_kernels import closure_batch

__all__ = ["ClosureCut"]


class ClosureCut:
    """The flow network of a hierarchy, built once;
    :meth:`~hiercvx.inference.closure.ClosureCut.run` solves the closure relaxation of (19) for
    many score rows (compiled, ``closure_batch``).

    Parameters
    ----------
    H : Hierarchy
    """

    def __init__(self, H: Hierarchy):
        M = len(H)
        src, snk = M, M + 1
        parent, child = H.edge_index[:, 0], H.edge_index[:, 1]
        nodes = np.arange(M)
        # forward arcs: child -> parent (infinite), source -> node, node -> sink
        tail = np.concatenate([child, np.full(M, src), nodes])
        headv = np.concatenate([parent, nodes, np.full(M, snk)])
        base = np.concatenate([np.full(len(child), np.inf), np.zeros(M), np.zeros(M)])
        base[len(child) + H.index(H.root)] = np.inf  # the root is always in
        n_fwd = len(tail)
        # each forward arc a has its reverse a + n_fwd (capacity 0)
        all_tail = np.concatenate([tail, headv])
        all_head = np.concatenate([headv, tail])
        all_cap = np.concatenate([base, np.zeros(n_fwd)])
        order = np.argsort(all_tail, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        reverse = np.concatenate([np.arange(n_fwd) + n_fwd, np.arange(n_fwd)])
        ptr = np.zeros(M + 3, dtype=np.int64)
        np.add.at(ptr, all_tail + 1, 1)
        ptr = np.cumsum(ptr)
        self.net = (ptr[:-1].copy(), ptr[1:].copy(), all_head[order].astype(np.int64),
                    position[reverse[order]].astype(np.int64), all_cap[order].astype(float),
                    position[len(child) + nodes].astype(np.int64),
                    position[len(child) + M + nodes].astype(np.int64))
        # the spanning tree of the first flow: each node under its first parent
        first = np.full(M, -1, dtype=np.int64)
        first_arc = np.full(M, -1, dtype=np.int64)
        for e in range(len(child) - 1, -1, -1):
            first[child[e]], first_arc[child[e]] = parent[e], position[e]
        self.tree = (first, first_arc)
        children = H.children_indices
        child_ptr = np.zeros(M + 1, dtype=np.int64)
        np.cumsum([len(c) for c in children], out=child_ptr[1:])
        child_idx = (np.concatenate([np.asarray(c, dtype=np.int64) for c in children])
                     if child_ptr[-1] else np.zeros(0, dtype=np.int64))
        self.graph = (child_ptr, child_idx, np.asarray(H.leaf_mask, dtype=np.bool_))
        self._widest = int(np.max(np.diff(child_ptr))) if M > 1 else 0
        # child -> parent incidence, for the dangling nodes of many closed sets at once
        self._up = sp.csr_matrix((np.ones(len(child)), (child, parent)), shape=(M, M))
        self._width = np.diff(child_ptr) + 1.0

    def run(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Z, value, exact)`` for the score rows of ``S`` ``(n, M)``: a largest-score closed
        set per row, its score, and whether it is a label set of ``Y_m`` (then it is an optimum
        of (19); otherwise ``value`` is only an upper bound on it)."""
        S = np.ascontiguousarray(S, dtype=float)
        n, M = S.shape
        Z = np.zeros((n, M), dtype=np.bool_)
        value = np.empty(n)
        exact = np.zeros(n, dtype=np.bool_)
        if n:
            closure_batch(S, self.net, self.tree, self.graph, Z, value, exact)
        return Z, value, exact

    def branch_width(self, Z: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
        """For closed sets ``Z`` ``(n, M)``: the subproblems the first branching creates, one
        per dangling node (internal, in the set, no child in it) and one per child of each
        (each child in ``keep``, when given)."""
        Z = np.asarray(Z, dtype=bool)
        has_child = np.asarray((self._up.T @ Z.T.astype(float)).T) > 0
        dangling = Z & ~self.graph[2][None, :] & ~has_child
        if keep is None:
            return dangling.astype(float) @ self._width
        kept_children = np.asarray((self._up.T @ np.asarray(keep, dtype=float).T).T)
        return np.sum(dangling * (1.0 + kept_children), axis=1)

    def branch(self, S: np.ndarray, rows: np.ndarray, max_cuts: int, rtol: float,
               closed: np.ndarray | None = None, keep: np.ndarray | None = None,
               start: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Program (19) for the score rows ``S[rows]`` by best-first branch and bound on the
        closure relaxation (``_closure_branch``), each within
        ``max_cuts`` minimum cuts; a subproblem is pruned when its bound is within ``rtol *
        sum |s|`` (the root's score left out: every set has it) of the best label set.

        Over ``rows``, when known: ``closed``, the closed sets from
        :meth:`~hiercvx.inference.closure.ClosureCut.run` (rows whose first branching alone would
        take more than half the cuts, :meth:`branch_width`, are not tried: a proof needs at least
        one more level); ``keep``, the nodes that can be in an optimal set (the others are forced
        out from the start); ``start``, ``(values, sets)`` label sets to start from.  Returns
        ``(Z, solved)``, both over ``rows``: the optimal label sets (bool, rows not solved left
        empty) and which rows were proved."""
        S = np.ascontiguousarray(S, dtype=float)
        rows = np.asarray(rows, dtype=np.int64)
        n, M = len(rows), S.shape[1]
        keep = np.ones((n, M), dtype=np.bool_) if keep is None else np.asarray(keep, dtype=np.bool_)
        if start is None:
            start = (np.full(n, -np.inf), np.zeros((n, M), dtype=np.bool_))
        start = (np.asarray(start[0], dtype=float), np.asarray(start[1], dtype=np.bool_))
        Z = np.zeros(S.shape, dtype=np.bool_)
        value = np.full(S.shape[0], np.nan)
        tried = np.ones(n, dtype=bool)
        if closed is not None and n:
            tried = 2 * self.branch_width(closed, keep) <= max_cuts
        if tried.any() and max_cuts > 0:
            pick = np.flatnonzero(tried)
            branch_batch(S, rows[pick], np.ascontiguousarray(keep[pick]),
                         (start[0][pick], np.ascontiguousarray(start[1][pick])), self.net,
                         self.tree, self.graph, int(max_cuts),
                         int(max_cuts) * (1 + self._widest), float(rtol), Z, value)
        return Z[rows], ~np.isnan(value[rows])
