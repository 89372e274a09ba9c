"""Class hierarchies (trees and DAGs), label closure and class-attribute encodings.

A :class:`Hierarchy` is an immutable rooted DAG over hashable node names.  At the public
surface everything is a node name; arrays over nodes follow ``H.nodes`` (a topological
order, parents before children, root first).  Inside, the index-based views
(``parent_indices``, ``ancestor_matrix``, ``depths`` ...) are what solvers use.

Notation of the papers: ``anc(y)`` is the set of ancestors of ``y`` *including* ``y``
(Cai thesis, section 3.2); here that is ``H.ancestors(y, inclusive=True)``.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ._attributes import class_attributes  # noqa: F401 -- public here, defined apart
from ._label_lookup import (is_label_set, label_positions, name_key,  # noqa: F401 -- public here
                            same_name, unknown_label_hint)
from ._label_forms import internal_labels, most_specific, self_leaves, single_path  # noqa: F401
from ._node_names import check_name, not_none, parent_list
from .exceptions import HierarchyError, LabelError

ARTIFICIAL_ROOT = "<root>"

__all__ = [
    "Hierarchy",
    "PartialPaths",
    "MinimalGraph",
    "class_attributes",
    "most_specific",
    "internal_labels",
    "self_leaves",
    "single_path",
    "ARTIFICIAL_ROOT",
]


class Hierarchy:
    """A rooted class hierarchy: a tree or a DAG with a single root.

    Build one with :meth:`from_parents`, :meth:`from_edges`, :meth:`from_paths` or
    :meth:`from_networkx`; an invalid graph (cycle, self-loop, undeclared parent, invalid or
    duplicate name, no node) raises ``HierarchyError``.  Several sources (top nodes) get one
    artificial root named by the ``root`` argument (default ``"<root>"``).  ``H.nodes`` is a
    topological order, ties broken by first appearance in the input.  Methods that take a node
    name ``v`` raise ``LabelError`` when ``v`` is not a node (``1.0`` is not the node ``1``).
    """

    # ------------------------------------------------------------------ construction
    def __init__(self, edges: Iterable[tuple[Hashable, Hashable]], nodes: Iterable[Hashable] = (),
                 root: Hashable | None = None):
        """Low-level constructor from ``(parent, child)`` edges plus isolated ``nodes``; prefer
        the ``from_*`` class methods.  ``root`` names the artificial root (default ``"<root>"``)."""
        not_none(edges, "edges", "Hierarchy")
        if root is not None:
            check_name({}, root, "root name")
        order: dict = {}
        given: dict = {}
        for v in nodes:
            check_name(given, v)
            order.setdefault(v, len(order))
        edge_list = []
        seen_edges = set()
        for e in edges:
            if isinstance(e, (str, bytes)):  # "ab" would unpack into the edge a -> b
                raise HierarchyError(f"each edge must be a (parent, child) pair, got the string "
                                     f"{e!r}; write it as a pair, e.g. ('a', 'b')")
            try:
                p, c = e
            except (TypeError, ValueError):
                raise HierarchyError(f"an edge must be a (parent, child) pair, got {e!r}") from None
            check_name(given, p, f"in edge {e!r} the parent")
            check_name(given, c, f"in edge {e!r} the child")
            if p == c:
                raise HierarchyError(f"self-loop on node {p!r}: a node cannot be its own parent")
            order.setdefault(p, len(order))
            order.setdefault(c, len(order))
            if (p, c) not in seen_edges:  # repeated edges carry no information
                seen_edges.add((p, c))
                edge_list.append((p, c))
        if not order:
            raise HierarchyError("the hierarchy is empty: give at least one node or edge")

        names = list(order)
        n = len(names)
        pos = {v: i for i, v in enumerate(names)}
        parents = [[] for _ in range(n)]
        for p, c in edge_list:
            parents[pos[c]].append(pos[p])
        sources = [i for i in range(n) if not parents[i]]
        if not sources:
            raise HierarchyError("the hierarchy has no source node: every node has a parent, "
                                 "so the graph contains a cycle")
        if len(sources) > 1:
            rname = ARTIFICIAL_ROOT if root is None else root
            if rname in pos:
                raise HierarchyError(
                    f"the graph has {len(sources)} source nodes and needs an artificial root, but "
                    f"the name {rname!r} is already a node; pass root=<unused name>")
            names.append(rname)
            pos[rname] = n
            parents.append([])
            for s in sources:
                parents[s].append(n)
            edge_list = [(rname, names[s]) for s in sources] + edge_list
            n += 1
            root_pos = n - 1
        else:
            root_pos = sources[0]

        topo = self._topological_order(names, parents, root_pos)
        # re-index into topological order
        new_of_old = np.empty(n, dtype=np.int64)
        new_of_old[np.asarray(topo)] = np.arange(n)
        new_parents = [None] * n
        for old in range(n):
            new_parents[new_of_old[old]] = sorted(int(new_of_old[p]) for p in parents[old])
        self._build(tuple(names[i] for i in topo), new_parents)

    @staticmethod
    def _topological_order(names, parents, root_pos):
        """Kahn's algorithm, ties broken by first appearance in the input (stable)."""
        n = len(names)
        children = [[] for _ in range(n)]
        indeg = np.zeros(n, dtype=np.int64)
        for c in range(n):
            for p in parents[c]:
                children[p].append(c)
                indeg[c] += 1
        heap = [root_pos]
        topo = []
        while heap:
            v = heapq.heappop(heap)
            topo.append(v)
            for c in children[v]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(heap, c)
        if len(topo) != n:
            stuck = [names[i] for i in range(n) if indeg[i] > 0][:5]
            raise HierarchyError(f"the hierarchy contains a cycle through nodes such as {stuck!r}; "
                                 "a class hierarchy must be acyclic")
        return topo

    def _build(self, names, parents):
        n = len(names)
        self._nodes = tuple(names)
        self._index = {v: i for i, v in enumerate(names)}
        self._parents = tuple(np.asarray(p, dtype=np.int64) for p in parents)
        children = [[] for _ in range(n)]
        for c in range(n):
            for p in self._parents[c]:
                children[p].append(c)
        self._children = tuple(np.asarray(c, dtype=np.int64) for c in children)
        # the edge list, as index pairs, parents first in node order
        self._edge_index = np.array([(p, c) for c in range(n) for p in self._parents[c]],
                                    dtype=np.int64).reshape(-1, 2)
        # longest-path depth; ancestor sets by one pass in topological order
        depths = np.zeros(n, dtype=np.int64)
        anc_rows = [None] * n
        for v in range(n):
            ps = self._parents[v]
            if len(ps):
                depths[v] = depths[ps].max() + 1
                if len(ps) == 1:
                    anc_rows[v] = anc_rows[ps[0]] | {v}
                else:
                    acc = {v}
                    for p in ps:
                        acc |= anc_rows[p]
                    anc_rows[v] = acc
            else:
                anc_rows[v] = frozenset({v})
            anc_rows[v] = frozenset(anc_rows[v])
        self._depths = depths
        indptr = np.zeros(n + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(a) for a in anc_rows])
        indices = np.fromiter((u for a in anc_rows for u in sorted(a)), dtype=np.int64,
                              count=int(indptr[-1]))
        self._anc = sp.csr_matrix((np.ones(len(indices), dtype=bool), indices, indptr), shape=(n, n))
        self._anc.sort_indices()
        self._desc = self._anc.T.tocsr()
        self._desc.sort_indices()
        self._is_leaf = np.array([len(c) == 0 for c in self._children], dtype=bool)
        self._is_tree = all(len(p) <= 1 for p in self._parents)
        self._root = self._nodes[0]

    @classmethod
    def from_parents(cls, parents, root: Hashable | None = None) -> "Hierarchy":
        """From a mapping ``child -> parent`` (``None`` for a top node).

        Parameters
        ----------
        parents : mapping or iterable of (child, parent) pairs
            Every node once as a child; every parent must be declared as a child too.  A parent
            may be a list of parents (a DAG; what :meth:`to_dict` gives) or a tuple, set or 1-D
            array of them; a tuple that is a declared node name is that one parent.
        root : hashable, optional"""
        not_none(parents, "parents", "Hierarchy.from_parents")
        if isinstance(parents, Mapping):
            items = list(parents.items())
        else:
            items = []
            for k, item in enumerate(parents):
                try:
                    child, par = item
                except (TypeError, ValueError):
                    raise HierarchyError(f"from_parents item {k} is {item!r}; expected a "
                                         "(child, parent) pair") from None
                items.append((child, par))
        if not items:
            raise HierarchyError("the hierarchy is empty: from_parents got no nodes")
        declared: dict = {}
        given: dict = {}
        for child, _ in items:
            check_name(given, child)
            if child in declared:
                raise HierarchyError(f"duplicate node name {child!r} in from_parents input; give a "
                                     "list of parents for a node with several parents")
            declared[child] = True
        edges = []
        for child, par in items:
            if par is None:
                continue
            for p in parent_list(child, par, declared):
                if p not in declared:
                    raise HierarchyError(
                        f"node {child!r} has parent {p!r}, which is not declared; add {p!r}: None "
                        "(or its own parent) to the mapping")
                edges.append((p, child))
        return cls(edges, nodes=declared.keys(), root=root)

    @classmethod
    def from_edges(cls, edges, nodes: Iterable[Hashable] = (), root: Hashable | None = None) -> "Hierarchy":
        """From ``(parent, child)`` pairs; a node with several parents makes a DAG.

        Parameters
        ----------
        edges : iterable of (parent, child) pairs
            A repeated pair counts once.
        nodes : iterable of node names, optional
            Nodes to include (isolated ones, say); they count as appearing before the edges.
        root : hashable, optional"""
        not_none(edges, "edges", "Hierarchy.from_edges")
        edges = list(edges)
        nodes = list(nodes)
        if not edges and not nodes:
            raise HierarchyError("the hierarchy is empty: from_edges got no edges")
        return cls(edges, nodes=nodes, root=root)

    @classmethod
    def from_paths(cls, paths: Iterable[str], sep: str = "/", root: Hashable | None = None) -> "Hierarchy":
        """From path strings such as ``"A/A1/A1b"``: every prefix is a node, named by the prefix.

        Parameters
        ----------
        paths : iterable of str
            Without empty components; the top-level names hang under an artificial root unless
            there is exactly one.
        sep : str, default "/"
        root : hashable, optional"""
        not_none(paths, "paths", "Hierarchy.from_paths")
        if not isinstance(sep, str) or not sep:
            raise HierarchyError(f"sep must be a non-empty string such as '/', got {sep!r}")
        if isinstance(paths, (str, bytes)):
            raise HierarchyError(f"from_paths takes a list of path strings, got the single string "
                                 f"{paths[:60]!r}; wrap it in a list: from_paths([{paths[:60]!r}])")
        nodes, edges = [], []
        seen = set()
        for k, path in enumerate(paths):
            if not isinstance(path, str):
                raise HierarchyError(f"path {k} is {path!r}; from_paths takes strings like 'A/A1'")
            parts = path.split(sep)
            if any(p == "" for p in parts):
                raise HierarchyError(f"path {path!r} has an empty component (leading, trailing or "
                                     f"doubled {sep!r})")
            prev = None
            for j in range(1, len(parts) + 1):
                name = sep.join(parts[:j])
                if name not in seen:
                    seen.add(name)
                    nodes.append(name)
                    if prev is not None:
                        edges.append((prev, name))
                prev = name
        if not nodes:
            raise HierarchyError("the hierarchy is empty: from_paths got no paths")
        return cls(edges, nodes=nodes, root=root)

    @classmethod
    def from_networkx(cls, graph, root: Hashable | None = None) -> "Hierarchy":
        """From a ``networkx.DiGraph`` whose edges point from parent to child.

        Parameters
        ----------
        graph : networkx.DiGraph
        root : hashable, optional"""
        if not isinstance(graph, nx.DiGraph):
            raise HierarchyError(f"from_networkx needs a networkx.DiGraph (edges parent -> child), "
                                 f"got {type(graph).__name__}")
        return cls(list(graph.edges()), nodes=list(graph.nodes()), root=root)

    def to_networkx(self):
        """A ``networkx.DiGraph`` with edges parent -> child, nodes in ``H.nodes`` order."""
        g = nx.DiGraph()
        g.add_nodes_from(self._nodes)
        g.add_edges_from(self.edges)
        return g

    def to_dict(self) -> dict:
        """``child -> parent`` for trees, ``child -> list of parents`` for DAGs (root -> None).

        A list, never a tuple: a tuple can be a node name, and :meth:`from_parents` reads a
        list as parents, so ``from_parents(H.to_dict()) == H``."""
        out = {}
        for i, v in enumerate(self._nodes):
            ps = [self._nodes[p] for p in self._parents[i]]
            if not ps:
                out[v] = None
            elif self._is_tree:
                out[v] = ps[0]
            else:
                out[v] = ps
        return out

    # ------------------------------------------------------------------ navigation
    @property
    def nodes(self) -> tuple:
        """Node names in topological order, root first."""
        return self._nodes

    @property
    def n_nodes(self) -> int:
        """Number of nodes, ``len(H)``."""
        return len(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, v) -> bool:
        try:
            return v in self._index and same_name(v, self._nodes[self._index[v]])
        except TypeError:
            return False

    def __iter__(self):
        return iter(self._nodes)

    def __eq__(self, other) -> bool:
        if other is self:   # the lru_caches keyed by a hierarchy hit this on every call
            return True
        # names only equal in Python (1 and 1.0) are other names: labels tell them apart
        return (isinstance(other, Hierarchy) and self._nodes == other._nodes
                and np.array_equal(self._edge_index, other._edge_index)
                and all(same_name(a, b) for a, b in zip(self._nodes, other._nodes)))

    def __hash__(self):
        # computed once (milliseconds on a GO DAG; the hierarchy never changes), and never
        # pickled: string hashes differ between processes
        value = self.__dict__.get("_hash_value")
        if value is None:
            value = hash((tuple(map(name_key, self._nodes)), self._edge_index.tobytes()))
            self._hash_value = value
        return value

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_hash_value", None)
        return state

    def __repr__(self) -> str:
        kind = "tree" if self._is_tree else "DAG"
        n, k = len(self._nodes), int(self._is_leaf.sum())
        return (f"Hierarchy({kind}, {n} node{'s' * (n != 1)}, {k} lea{'ves' if k != 1 else 'f'}, "
                f"depth {int(self._depths.max())}, root={self._root!r})")

    @property
    def root(self):
        """Name of the root, ``H.nodes[0]`` (the artificial root if there were several sources)."""
        return self._root

    def index(self, v) -> int:
        """Position of node ``v`` in ``H.nodes``; ``LabelError`` when ``v`` is not a node.

        Parameters
        ----------
        v : node name"""
        try:
            j = self._index[v]
        except (KeyError, TypeError):
            raise LabelError(f"{v!r} is not a node of this hierarchy ({self!r})") from None
        if not same_name(v, self._nodes[j]):
            raise LabelError(f"{v!r} is not a node of this hierarchy ({self!r})"
                             f"{unknown_label_hint([(0, v)], self._index)}")
        return j

    def indices(self, names) -> np.ndarray:
        """Positions of several nodes: an int64 array, one per name (vectorized :meth:`index`).

        Parameters
        ----------
        names : iterable of node names"""
        return np.fromiter((self.index(v) for v in names), dtype=np.int64)

    def _names(self, idx) -> tuple:
        return tuple(self._nodes[i] for i in idx)

    def parents(self, v) -> tuple:
        """Names of the parents of ``v`` in node order (several in a DAG, none for the root).

        Parameters
        ----------
        v : node name"""
        return self._names(self._parents[self.index(v)])

    def children(self, v) -> tuple:
        """Names of the children of ``v`` in node order (none for a leaf).

        Parameters
        ----------
        v : node name"""
        return self._names(self._children[self.index(v)])

    def siblings(self, v) -> tuple:
        """Other children of ``v``'s parents (all parents, for a DAG), in node order.

        Parameters
        ----------
        v : node name"""
        i = self.index(v)
        sib = set()
        for p in self._parents[i]:
            sib.update(int(c) for c in self._children[p])
        sib.discard(i)
        return self._names(sorted(sib))

    def ancestors(self, v, inclusive: bool = False) -> tuple:
        """Ancestors of ``v`` in node order, root first; ``inclusive`` adds ``v`` (last): anc(v).

        Parameters
        ----------
        v : node name
        inclusive : bool, default False"""
        i = self.index(v)
        row = self._anc.indices[self._anc.indptr[i]:self._anc.indptr[i + 1]]
        return self._names(r for r in row if inclusive or r != i)

    def descendants(self, v, inclusive: bool = False) -> tuple:
        """Names of the descendants of ``v`` in node order; ``inclusive`` adds ``v`` (first).

        Parameters
        ----------
        v : node name
        inclusive : bool, default False"""
        i = self.index(v)
        row = self._desc.indices[self._desc.indptr[i]:self._desc.indptr[i + 1]]
        return self._names(r for r in row if inclusive or r != i)

    @property
    def leaves(self) -> tuple:
        """Names of the nodes without children, in node order."""
        return self._names(np.flatnonzero(self._is_leaf))

    def is_leaf(self, v) -> bool:
        """Whether ``v`` has no children.

        Parameters
        ----------
        v : node name"""
        return bool(self._is_leaf[self.index(v)])

    def depth(self, v) -> int:
        """Length of the longest path from the root to ``v`` (the root has depth 0).

        Parameters
        ----------
        v : node name"""
        return int(self._depths[self.index(v)])

    @property
    def is_tree(self) -> bool:
        """Whether every node has at most one parent."""
        return self._is_tree

    @property
    def edges(self) -> tuple:
        """``(parent, child)`` name pairs."""
        return tuple((self._nodes[p], self._nodes[c]) for p, c in self._edge_index)

    # ------------------------------------------------------------------ index views
    @property
    def edge_index(self) -> np.ndarray:
        """``(n_edges, 2)`` int array of ``(parent, child)`` node indices."""
        return self._edge_index

    @property
    def parent_indices(self) -> tuple:
        """For each node in node order, an int array of its parents' indices (ascending)."""
        return self._parents

    @property
    def children_indices(self) -> tuple:
        """For each node in node order, an int array of its children's indices (ascending)."""
        return self._children

    @property
    def parent_index(self) -> np.ndarray:
        """Trees only: each node's parent index, ``-1`` for the root."""
        if not self._is_tree:
            raise HierarchyError("parent_index is defined for trees only; this hierarchy is a DAG "
                                 "(use parent_indices)")
        out = np.full(len(self._nodes), -1, dtype=np.int64)
        for v, ps in enumerate(self._parents):
            if len(ps):
                out[v] = ps[0]
        return out

    @property
    def depths(self) -> np.ndarray:
        """``(n_nodes,)`` int array: each node's :meth:`depth`."""
        return self._depths

    @property
    def leaf_mask(self) -> np.ndarray:
        """``(n_nodes,)`` bool array: which nodes are leaves."""
        return self._is_leaf

    @property
    def leaf_indices(self) -> np.ndarray:
        """Int array of the leaves' indices, ascending."""
        return np.flatnonzero(self._is_leaf)

    @property
    def ancestor_matrix(self) -> sp.csr_matrix:
        """Bool CSR ``A`` with ``A[v, u]`` true when ``u`` is an ancestor of ``v`` or ``u == v``."""
        return self._anc

    @property
    def descendant_matrix(self) -> sp.csr_matrix:
        """Transpose of :attr:`ancestor_matrix`."""
        return self._desc

    def sibling_groups(self) -> list[np.ndarray]:
        """Children of each internal node, one int array per parent (in node order)."""
        return [c for c in self._children if len(c)]

    # ------------------------------------------------------------------ labels
    def label_indicator(self, labels, n_samples: int | None = None) -> sp.csr_matrix:
        """Bool CSR ``(n_samples, n_nodes)`` of the given labels, *not* closed.

        Parameters
        ----------
        labels : sequence, or array or sparse matrix of shape (n_samples, n_nodes)
            A 1-D sequence of node names (one label per sample), a list of iterables of node
            names (multi-label), or a bool or 0/1 indicator matrix over ``H.nodes``.  A name
            that is not a node, or an unusable form, raises ``LabelError``.
        n_samples : int, optional
            Rows of the result, at least one per sample (the extra rows are empty); default one
            per sample.  Ignored for an indicator matrix."""
        not_none(labels, "labels", "Hierarchy.label_indicator")
        n = len(self._nodes)
        if sp.issparse(labels) or (isinstance(labels, np.ndarray) and labels.ndim == 2):
            return self._indicator_matrix(labels)
        if isinstance(labels, (str, bytes)):
            raise LabelError("labels must be a sequence with one entry per sample, got a single "
                             "string; wrap it in a list")
        if isinstance(labels, (set, frozenset)):  # a set has no sample order
            raise LabelError(f"labels must be a sequence with one entry per sample, got a set "
                             f"{labels!r}; for one sample's label set pass [{labels!r}], for one "
                             "label per sample pass a list")
        if isinstance(labels, np.ndarray) and labels.ndim == 0:
            raise LabelError(f"labels must be a sequence with one entry per sample, got the 0-d "
                             f"array {labels!r} (one label); wrap it in a list: [{labels.item()!r}]")
        if not (isinstance(labels, np.ndarray) and labels.ndim == 1):
            labels = list(labels)
        if n_samples is not None and not (isinstance(n_samples, (int, np.integer))
                                          and not isinstance(n_samples, bool)
                                          and n_samples >= len(labels)):
            raise LabelError(f"n_samples must be an integer >= the {len(labels)} samples given "
                             f"(one row per sample), got {n_samples!r}; omit it for one row per "
                             "sample")
        rows, cols, unknown = label_positions(labels, self._index)
        if unknown:
            shown = ", ".join(f"{v!r} (sample {s})" for s, v in unknown[:5])
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            hint = unknown_label_hint(unknown, self._index)
            raise LabelError(f"{len(unknown)} label(s) are not nodes of the hierarchy: {shown}{more}"
                             f"{hint or '. Check the spelling or build the hierarchy from all labels'}")
        m = len(labels) if n_samples is None else n_samples
        data = np.ones(len(rows), dtype=bool)
        out = sp.csr_matrix((data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                            shape=(m, n))
        out.sum_duplicates()
        return out

    def _indicator_matrix(self, labels) -> sp.csr_matrix:
        """A 2-D indicator over ``H.nodes`` as sparse bool: its entries must be bool or the
        numbers 0 / 1 (a -1, a 2 or a NaN is not an indicator value and is refused, not read
        as True); a 2-D array of names is refused with how to pass label sets."""
        n = len(self._nodes)
        dtype = labels.dtype
        if not (dtype == bool or np.issubdtype(dtype, np.integer)
                or np.issubdtype(dtype, np.floating)):
            what = "node names" if dtype.kind in "USO" else f"dtype {dtype}"
            raise LabelError(f"a 2-D label array must be a 0/1 indicator over the {n} nodes, got "
                             f"{what} of shape {labels.shape}; for label sets of node names pass a "
                             "list of lists (e.g. labels.tolist())")
        m = sp.csr_matrix(labels)
        if m.shape[1] != n:
            raise LabelError(f"a label indicator matrix needs one column per node ({n}), "
                             f"got shape {m.shape}")
        if dtype != bool:
            bad = np.flatnonzero((m.data != 0) & (m.data != 1))
            if bad.size:
                row = int(np.searchsorted(m.indptr, bad[0], side="right") - 1)
                value = m.data[bad[0]].item()
                raise LabelError(f"a label indicator matrix holds 0 or 1 only; row {row}, column "
                                 f"{int(m.indices[bad[0]])} is {value!r}. Use a bool matrix, or "
                                 "(M > 0) if that is what you mean")
        return (m != 0).tocsr()

    def closure(self, labels, sparse: bool = False):
        """Each sample's label set closed upward: ``(n_samples, n_nodes)`` bool.

        Parameters
        ----------
        labels : sequence or indicator matrix
            As in :meth:`label_indicator`; an empty label set gives an empty row.
        sparse : bool, default False
            Return CSR instead of a dense array (what 10^5 samples on 10^4 nodes need)."""
        not_none(labels, "labels", "Hierarchy.closure")
        ind = self.label_indicator(labels).astype(np.int32)
        closed = (ind @ self._anc.astype(np.int32)).tocsr()
        closed.data = closed.data > 0
        closed = closed.astype(bool)
        closed.eliminate_zeros()
        return closed if sparse else closed.toarray()

    def label_sets(self, indicator) -> list[frozenset]:
        """Inverse of :meth:`label_indicator`: per row, the frozenset of its nonzero columns' names.

        Parameters
        ----------
        indicator : array or sparse matrix of shape (n_samples, n_nodes)"""
        m = sp.csr_matrix(indicator)
        m.eliminate_zeros()
        return [frozenset(self._nodes[j] for j in m.indices[m.indptr[i]:m.indptr[i + 1]])
                for i in range(m.shape[0])]

    def is_closed(self, indicator) -> np.ndarray:
        """Per row, whether its nonzero columns form an ancestor-closed set: bool ``(n_samples,)``.

        Parameters
        ----------
        indicator : array or sparse matrix of shape (n_samples, n_nodes)"""
        m = sp.csr_matrix(indicator).astype(bool)
        return np.asarray((self.closure(m, sparse=True) != m).sum(axis=1)).ravel() == 0

    # ------------------------------------------------------------------ transforms
    def with_self_leaves(self, nodes=None, suffix: str = "/<self>") -> "PartialPaths":
        """Give every internal node in ``nodes`` a leaf child standing for "the node itself".

        For labels that stop at an internal node (partial paths; Cai thesis section 3.1, Wang
        et al. section 3).  Returns a :class:`~hiercvx.hierarchy.PartialPaths` (new hierarchy, maps
        both ways).

        Parameters
        ----------
        nodes : iterable of node names, optional
            Leaves among them are skipped; ``None``: every internal node.
        suffix : str, default "/<self>"
            The self leaf of ``v`` is ``f"{v}{suffix}"`` for a string ``v``, else ``(v, suffix)``;
            a name that is already a node raises ``HierarchyError``."""
        if nodes is None:
            internal = [v for v in self._nodes if not self.is_leaf(v)]
        else:
            # node order, whatever the caller's container (a set's order varies between runs)
            internal = [v for v in sorted(set(nodes), key=self.index) if not self.is_leaf(v)]
        self_leaf = {}
        for v in internal:
            name = f"{v}{suffix}" if isinstance(v, str) else (v, suffix)
            if name in self._index:
                raise HierarchyError(f"the self-leaf name {name!r} for {v!r} is already a node; "
                                     "pass another suffix")
            self_leaf[v] = name
        edges = list(self.edges) + [(v, leaf) for v, leaf in self_leaf.items()]
        new = Hierarchy(edges, nodes=self._nodes)
        return PartialPaths(hierarchy=new, original=self, self_leaf=self_leaf,
                            owner={leaf: v for v, leaf in self_leaf.items()})

    def minimal_graph(self, labels) -> "MinimalGraph":
        """NHSVM section 5.2: merge nodes that co-occur in every training label set.

        Two nodes are duplicated when each sample's closed label set contains both or
        neither.  Each duplicated set becomes one node, named by its top-most member.
        Nodes no sample uses are kept as they are (the paper assumes there are none).
        Returns a :class:`~hiercvx.hierarchy.MinimalGraph`.

        Parameters
        ----------
        labels : sequence or indicator matrix
            The training labels, as in :meth:`label_indicator`."""
        z = self.closure(labels, sparse=True).tocsc().astype(np.int8)
        n = len(self._nodes)
        keys = {}
        rep = np.arange(n)
        for j in range(n):
            col = z.indices[z.indptr[j]:z.indptr[j + 1]]
            if len(col) == 0:
                continue
            key = col.tobytes()
            if key in keys:
                rep[j] = keys[key]
            else:
                keys[key] = j
        groups: dict = {}
        for j in range(n):
            groups.setdefault(self._nodes[rep[j]], []).append(self._nodes[j])
        edges = {(self._nodes[rep[p]], self._nodes[rep[c]]) for p, c in self._edge_index if rep[p] != rep[c]}
        reps = [self._nodes[j] for j in range(n) if rep[j] == j]
        edges = sorted(edges, key=lambda e: (self._index[e[0]], self._index[e[1]]))
        new = Hierarchy(edges, nodes=reps)
        return MinimalGraph(hierarchy=new, groups={k: tuple(v) for k, v in groups.items()},
                            representative={self._nodes[j]: self._nodes[rep[j]] for j in range(n)})


@dataclass(frozen=True)
class PartialPaths:
    """The partial-path transform of :meth:`Hierarchy.with_self_leaves` and its inverse."""

    hierarchy: Hierarchy
    original: Hierarchy
    self_leaf: dict  # internal node -> its self leaf
    owner: dict      # self leaf -> internal node

    def transform(self, labels):
        """Map labels on internal nodes to their self leaves (single or multi-label)."""
        def one(v):
            return self.self_leaf.get(v, v)
        return [frozenset(one(v) for v in item) if is_label_set(item, self.original._index)
                else one(item) for item in labels]

    def inverse_transform(self, labels):
        """Map self leaves back to their internal nodes (single or multi-label)."""
        def one(v):
            return self.owner.get(v, v)
        return [frozenset(one(v) for v in item) if is_label_set(item, self.hierarchy._index)
                else one(item) for item in labels]


@dataclass(frozen=True)
class MinimalGraph:
    """The minimal graph M(G) of NHSVM section 5.2 and the map from nodes to their group."""

    hierarchy: Hierarchy
    groups: dict          # representative -> tuple of merged original nodes
    representative: dict  # original node -> representative

    def transform(self, labels):
        """Labels on the original nodes as labels on their representatives (single or
        multi-label; a tuple that is a node name is a label, as everywhere)."""
        return [frozenset(self.representative[v] for v in item)
                if is_label_set(item, self.representative) else self.representative[item]
                for item in labels]
