"""Hypothesis strategies for hierarchies, label sets and datasets (``pip install hypothesis``).

``trees()``, ``dags()`` and ``hierarchies()`` draw :class:`hiercvx.Hierarchy` objects covering
the shapes the papers care about: deep chains, unbalanced branches, one-child nodes, forests that
need an artificial root and (DAGs) shared children; ``chains()``, ``stars()`` and
``one_child_trees()`` draw the extreme shapes on purpose.  ``label_samples(H)`` draws single
labels or label sets for a hierarchy, ``datasets()`` whole ``(X, Y, H)`` problems (features
clustered by leaf, optionally CSR, with internal labels), ``clustered_data(H, n)`` the
deterministic version.

>>> from hypothesis import given
>>> from hiercvx.testing.strategies import trees, datasets
>>> @given(datasets(kind="tree"))
... def test_my_solver(data):
...     X, Y, H = data
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from ..hierarchy import Hierarchy

__all__ = [
    "chains",
    "clustered_data",
    "dags",
    "datasets",
    "hierarchies",
    "hierarchy_and_labels",
    "label_samples",
    "label_sets_and_scores",
    "one_child_trees",
    "stars",
    "trees",
]


def _name(i: int, style: str):
    return f"n{i}" if style == "str" else i


@st.composite
def trees(draw, min_nodes: int = 1, max_nodes: int = 12, allow_forest: bool = True,
          name_style: str | None = None):
    """A random tree.  Each new node hangs under the previous node (making chains and one-child
    nodes) or under any earlier node (making bushy or unbalanced shapes).  With
    ``allow_forest`` some nodes may start new top-level trees, so the hierarchy gets an
    artificial root."""
    n = draw(st.integers(min_nodes, max_nodes))
    style = name_style or draw(st.sampled_from(["str", "int"]))
    forest = allow_forest and n > 1 and draw(st.booleans())
    parents = {_name(0, style): None}
    for i in range(1, n):
        if forest and draw(st.integers(0, 5)) == 0:
            parent = None
        else:
            p = draw(st.one_of(st.just(i - 1), st.integers(0, i - 1)))
            parent = _name(p, style)
        parents[_name(i, style)] = parent
    return Hierarchy.from_parents(parents)


@st.composite
def dags(draw, min_nodes: int = 4, max_nodes: int = 12, max_parents: int = 3,
         name_style: str | None = None):
    """A random DAG that is not a tree: every node after the first picks 1..max_parents
    earlier nodes as parents, and at least one node has two parents (a shared child)."""
    n = draw(st.integers(max(min_nodes, 3), max(max_nodes, 3)))
    style = name_style or draw(st.sampled_from(["str", "int"]))
    edges = []
    shared = draw(st.integers(2, n - 1))  # this node gets at least two parents
    for i in range(1, n):
        k_min = 2 if i == shared else 1
        k = draw(st.integers(k_min, max(k_min, min(max_parents, i))))
        ps = draw(st.lists(st.integers(0, i - 1), min_size=k, max_size=k, unique=True))
        edges.extend((_name(p, style), _name(i, style)) for p in ps)
    H = Hierarchy.from_edges(edges, nodes=[_name(i, style) for i in range(n)])
    assert not H.is_tree
    return H


def hierarchies(min_nodes: int | None = None, max_nodes: int | None = None,
                name_style: str | None = None, allow_forest: bool = True, max_parents: int = 3):
    """Trees (:func:`trees`) or DAGs (:func:`dags`).

    ``min_nodes``, ``max_nodes`` and ``name_style`` apply to both (None: each one's default;
    a DAG has at least 3 nodes, so with ``max_nodes < 3`` only trees are drawn; an artificial
    root, where a hierarchy has several sources, comes on top); ``allow_forest`` applies to the
    trees, ``max_parents`` to the DAGs."""
    shared = {k: v for k, v in (("min_nodes", min_nodes), ("max_nodes", max_nodes),
                                ("name_style", name_style)) if v is not None}
    tree = trees(allow_forest=allow_forest, **shared)
    if max_nodes is not None and max_nodes < 3:
        return tree
    return st.one_of(tree, dags(max_parents=max_parents, **shared))


@st.composite
def label_samples(draw, H: Hierarchy, n_samples=None, multilabel: bool | None = None,
                  leaves_only: bool = False, allow_empty: bool = False, max_set: int = 3):
    """A list of labels for ``H``: node names (single-label) or frozensets (multi-label)."""
    pool = list(H.leaves if leaves_only else H.nodes)
    n = draw(st.integers(1, 6)) if n_samples is None else n_samples
    multi = draw(st.booleans()) if multilabel is None else multilabel
    if multi:
        lo = 0 if allow_empty else 1
        return [frozenset(draw(st.lists(st.sampled_from(pool), min_size=lo, max_size=max_set)))
                for _ in range(n)]
    return [draw(st.sampled_from(pool)) for _ in range(n)]


@st.composite
def hierarchy_and_labels(draw, kind: str = "any", **label_kwargs):
    """``(H, y_true, y_pred)`` with the same number of samples on both sides."""
    H = draw({"tree": trees(), "dag": dags(), "any": hierarchies()}[kind])
    n = draw(st.integers(1, 6))
    multi = draw(st.booleans()) if label_kwargs.get("multilabel") is None else label_kwargs["multilabel"]
    kw = dict(label_kwargs, n_samples=n, multilabel=multi)
    return H, draw(label_samples(H, **kw)), draw(label_samples(H, **kw))


@st.composite
def label_sets_and_scores(draw, H: Hierarchy, max_samples: int = 5):
    """``(Y, S)`` for ranking measures: 1..max_samples non-empty label sets of leaves of ``H``
    and class scores ``S`` ``(n, len(H.leaves))`` in ``H.leaves`` order, small integers so that
    ties are frequent."""
    k = len(H.leaves)
    n = draw(st.integers(1, max_samples))
    Y = draw(label_samples(H, n_samples=n, multilabel=True, leaves_only=True))
    S = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=k, max_size=k),
                               min_size=n, max_size=n)), dtype=float)
    return Y, S


@st.composite
def chains(draw, min_depth: int = 2, max_depth: int = 8):
    """A deep chain of nodes ``n0`` to ``n_k`` ending in two leaves (every inner node but the
    last has one child)."""
    k = draw(st.integers(min_depth, max_depth))
    parents = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, k)}}
    parents.update({"leafA": f"n{k - 1}", "leafB": f"n{k - 1}"})
    return Hierarchy.from_parents(parents)


@st.composite
def stars(draw, min_leaves: int = 2, max_leaves: int = 10):
    """A root with ``min_leaves..max_leaves`` leaves (the flat multi-class case)."""
    k = draw(st.integers(min_leaves, max_leaves))
    return Hierarchy.from_parents({"root": None, **{f"c{i}": "root" for i in range(k)}})


@st.composite
def one_child_trees(draw, max_nodes: int = 10):
    """A tree in which at least one internal node has exactly one child."""
    H = draw(trees(min_nodes=3, max_nodes=max_nodes, allow_forest=False, name_style="str"))
    single = [v for v in H.nodes if len(H.children(v)) == 1]
    if single:
        return H
    parents = {v: (H.parents(v)[0] if H.parents(v) else None) for v in H.nodes}
    leaf = H.leaves[0]
    parents["only_child"] = leaf  # a leaf that gains one child is a one-child node
    return Hierarchy.from_parents(parents)


def _with_leaves(H: Hierarchy, k: int) -> Hierarchy:
    """``H`` with new leaves hung beside one of its leaves until it has at least ``k`` leaves (a
    hierarchy with fewer leaves has fewer classes than a classifier needs)."""
    if len(H.leaves) >= k:
        return H
    # beside a leaf with siblings where there is one, so one-child nodes stay one-child
    leaf = next((v for v in H.leaves if len(H.children(H.parents(v)[0])) > 1), H.leaves[0])
    parent = H.parents(leaf)[0]
    edges = [(p, v) for v in H.nodes for p in H.parents(v)]
    ints = all(isinstance(v, (int, np.integer)) for v in H.nodes)
    taken, fresh, i = set(H.nodes), [], len(H.nodes)
    while len(H.leaves) + len(fresh) < k:
        name = i if ints else f"n{i}"
        if name not in taken:
            fresh.append(name)
        i += 1
    edges += [(parent, v) for v in fresh]
    return Hierarchy.from_edges(edges, nodes=[*H.nodes, *fresh])


@st.composite
def datasets(draw, kind: str = "tree", n_min: int = 4, n_max: int = 24, d_max: int = 4,
             multilabel: bool = False, sparse: bool | None = None, partial: bool = False):
    """``(X, Y, H)``: a hierarchy of ``kind`` (``"tree"``, ``"dag"``, ``"chain"``, ``"star"``,
    ``"one_child"``) with at least two leaves (three with ``multilabel``), features clustered by
    leaf (:func:`clustered_data`; CSR when ``sparse`` draws True), every leaf a label when ``n``
    allows, single leaf labels or (``multilabel``) label sets of one or two leaves, never every
    leaf, and (``partial``) a few samples labelled at an internal node.

    Every draw is a valid problem of the methods that support its structure
    (``hiercvx.methods.get(m).structures``): ``Problem.from_arrays(m, X, Y, H)`` for the
    hierarchical methods, ``Problem.from_arrays("multiclass", X, Y)`` for a ``"star"``; label
    sets for the multi-label methods; ``partial`` labels for the methods that take partial paths
    (``hsvm`` through ``H.with_self_leaves``, see its model)."""
    H = draw({"tree": trees(min_nodes=3, allow_forest=False), "dag": dags(), "chain": chains(),
              "star": stars(), "one_child": one_child_trees()}[kind])
    H = _with_leaves(H, 3 if multilabel else 2)
    n = draw(st.integers(max(n_min, len(H.leaves)), max(n_max, len(H.leaves))))
    d = draw(st.integers(1, d_max))
    seed = draw(st.integers(0, 2**16))
    inner = [v for v in H.nodes if not H.is_leaf(v) and H.parents(v)] if partial else []
    internal = draw(st.lists(st.sampled_from(inner), max_size=3)) if inner else []
    X, y = clustered_data(H, n, d=d, seed=seed, internal=internal)
    if sparse if sparse is not None else draw(st.booleans()):
        X = sp.csr_matrix(np.where(np.random.default_rng(seed).random(X.shape) < 0.5, X, 0.0))
    if multilabel:
        leaves = list(H.leaves)
        extra = draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))
        return X, [frozenset({a, b}) for a, b in zip(y, extra)], H
    return X, y, H


def clustered_data(H, n, d=3, seed=0, internal=(), noise=0.8):
    """``n`` samples ``(X, y)``: features clustered around one random centre per leaf of ``H``
    (``d`` dimensions, Gaussian ``noise``), labels cycling through the leaves so every leaf is
    used (when ``n`` allows); ``internal`` labels replace the first few samples' labels
    (partial paths).  ``y`` is an object array."""
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    y = [leaves[i % len(leaves)] for i in range(n)]
    centre = {v: rng.standard_normal(d) for v in leaves}
    X = np.array([centre[v] for v in y]) + noise * rng.standard_normal((n, d))
    for k, v in enumerate(internal):
        y[k] = v
    return X, np.array(y, dtype=object)
