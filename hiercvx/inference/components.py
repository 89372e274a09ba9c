"""Program (19) split at the root: one smaller program per disjoint sub-hierarchy, combined exactly.

When the root's children have pairwise disjoint descendant sets (the Gene Ontology's three
namespaces under an artificial root, a forest of FunCat-like top categories), a label set of
``Y_m`` (Choi, Sasaki and Srebro, "Normalized Hierarchical SVM", arXiv:1508.02479, 2016,
section 3) is the root together with a label set of each of a non-empty choice of those
sub-hierarchies: ``anc(L) = {root} + sum_k anc_k(L_k)`` with ``L_k`` the chosen leaves in
component ``k``.  Its score is ``s_root + sum_k v_k``, so the argmax of (19) takes every
component whose own best label set ``v_k*`` is positive, and when none is, the single component
of largest ``v_k*``.  Each component is solved by its own
:class:`~hiercvx.inference.LabelSetOracle` (the tree DP when the component is a tree; program
(19) with its closure cut and bounds otherwise, which splits again at the component's root when
it can): the bounds and programs of a component see only its nodes, and they are much tighter
and smaller there than on the whole graph.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from ..hierarchy import Hierarchy
from .labelsets import label_set_scores

__all__ = ["RootSplit", "root_components"]


def root_components(H: Hierarchy) -> list[np.ndarray] | None:
    """The node indices (in ``H.nodes`` order) under each child of the root, child first, when
    these descendant sets are pairwise disjoint and there are at least two of them; else None."""
    top = list(H.children_indices[0])
    if len(top) < 2:
        return None
    desc = H.ancestor_matrix.tocsc()  # column c: the nodes that have c as an ancestor or are c
    owner = np.full(len(H), -1, dtype=np.int64)
    members = []
    for k, c in enumerate(top):
        rows = np.sort(desc.indices[desc.indptr[c]:desc.indptr[c + 1]])
        if np.any(owner[rows] >= 0):
            return None
        owner[rows] = k
        members.append(rows)
    return members


def _sub_hierarchy(H: Hierarchy, rows: np.ndarray) -> Hierarchy:
    """The sub-hierarchy of ``H`` on ``rows`` (a child of the root and all its descendants)."""
    inside = np.zeros(len(H), dtype=bool)
    inside[rows] = True
    names = H.nodes
    edges = [(names[p], names[m]) for m in rows.tolist() for p in H.parent_indices[m] if inside[p]]
    return Hierarchy.from_edges(edges, nodes=[names[m] for m in rows.tolist()], root=names[rows[0]])


class RootSplit:
    """Program (19) on a hierarchy whose root splits (:func:`root_components`), one oracle per
    component (module docstring).

    Parameters
    ----------
    H : Hierarchy
    components : list of arrays
        From :func:`root_components`.
    make_oracle : callable
        ``make_oracle(sub_hierarchy)`` -> a :class:`~hiercvx.inference.LabelSetOracle` for one
        component with more than one node.
    """

    def __init__(self, H: Hierarchy, components: list[np.ndarray], make_oracle):
        self.root = H.index(H.root)
        self.parts = []
        for rows in components:
            if len(rows) == 1:  # a leaf under the root: its only label set is itself
                self.parts.append((rows, None, None))
                continue
            sub = _sub_hierarchy(H, rows)
            order = np.array([H.index(v) for v in sub.nodes], dtype=np.int64)
            self.parts.append((order, sub, make_oracle(sub)))

    def solve(self, S: np.ndarray, show: bool = False):
        """``(Z, exact, counts)``: the best label set of each score row of ``S`` ``(n, M)``
        (bool over the nodes); per row whether every component was answered exactly without a
        program (by its closure cut, or by the tree DP on a tree component); and the
        components' ``(n_closure, n_bounded, n_branched)`` summed (so a row counts once per
        component that a stage answered).  ``show``: one progress bar over all components."""
        n, M = S.shape
        values = np.empty((len(self.parts), n))
        sets = []
        exact = np.ones(n, dtype=bool)
        counts = np.zeros(3, dtype=np.int64)
        bar = tqdm(total=n * len(self.parts), desc="inference (ilp, by component)", unit="sample",
                   disable=not show)
        for k, (order, sub, oracle) in enumerate(self.parts):
            Sk = np.ascontiguousarray(S[:, order])
            if oracle is None:
                Zk = np.ones((n, 1), dtype=bool)
            else:
                Zk, info = oracle.solve(Sk, verbose=False, return_info=True)
                if oracle.method != "dp":  # the tree DP is exact and its sets valid by construction
                    cut = oracle.__dict__.get("_cut_exact")
                    exact &= cut if cut is not None else False
                counts += (info.n_closure, info.n_bounded, info.n_branched)
            values[k] = label_set_scores(Sk, Zk)
            sets.append(Zk)
            bar.update(n)
        bar.close()
        # every component of positive value; when none is positive, the best one alone
        take = values > 0.0
        none = ~take.any(axis=0)
        take[np.argmax(values, axis=0)[none], np.flatnonzero(none)] = True
        Z = np.zeros((n, M), dtype=bool)
        Z[:, self.root] = True
        for k, (order, _, _) in enumerate(self.parts):
            rows = np.flatnonzero(take[k])
            Z[np.ix_(rows, order)] = sets[k][rows]
        return Z, exact, tuple(int(c) for c in counts)
