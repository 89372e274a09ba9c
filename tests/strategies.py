"""Hypothesis strategies for random hierarchies and labels, shared by the test modules.

``trees()``, ``dags()`` and ``hierarchies()`` draw :class:`hiercvx.Hierarchy` objects that
cover the shapes the papers care about: deep chains, unbalanced branches, one-child
nodes, forests that need an artificial root, and (for DAGs) shared children.
``label_samples(H)`` draws single labels or label sets for a given hierarchy.

Fixed test data shared by several modules: the pytest fixtures ``tree`` and ``dag`` (two small
hand-drawn hierarchies for hand-computed values; import ``tree_fixture`` / ``dag_fixture``,
pytest finds an imported fixture under its ``name``) and ``clustered_data(H, n)`` (features
clustered by leaf).

Import with ``from strategies import trees, dags, hierarchies`` (pytest puts ``tests/`` on
``sys.path``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from hiercvx import Hierarchy

__all__ = ["trees", "dags", "hierarchies", "label_samples", "hierarchy_and_labels",
           "label_sets_and_scores", "tree_fixture", "dag_fixture", "clustered_data"]


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


def hierarchies(**kwargs):
    """Trees or DAGs."""
    return st.one_of(trees(**kwargs), dags())


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


# ---------------------------------------------------------------------- fixed test data
@pytest.fixture(name="tree")
def tree_fixture():
    #  root ─ A ─ A1, A2
    #       └ B ─ B1 ─ B1a, B1b      (B has one child)
    return Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                   "B1": "B", "B1a": "B1", "B1b": "B1"})


@pytest.fixture(name="dag")
def dag_fixture():
    #  root ─ A ─ C, D ;  root ─ B ─ C, F   (C is shared by A and B)
    return Hierarchy.from_edges([("root", "A"), ("root", "B"), ("A", "C"), ("B", "C"),
                                 ("A", "D"), ("B", "F")])


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
