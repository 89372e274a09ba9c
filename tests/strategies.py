"""The hypothesis strategies of :mod:`hiercvx.testing.strategies` (where they live, installed
with the package) and the fixed test data shared by several test modules.

``trees()``, ``dags()``, ``hierarchies()``, ``chains()``, ``stars()``, ``one_child_trees()``,
``label_samples(H)``, ``hierarchy_and_labels()``, ``label_sets_and_scores(H)``, ``datasets()``
and ``clustered_data(H, n)`` are re-exported from the package.

Fixed test data: the pytest fixtures ``tree`` and ``dag`` (two small hand-drawn hierarchies for
hand-computed values; import ``tree_fixture`` / ``dag_fixture``, pytest finds an imported
fixture under its ``name``).

Import with ``from strategies import trees, dags, hierarchies`` (pytest puts ``tests/`` on
``sys.path``).
"""

from __future__ import annotations

import pytest

from hiercvx import Hierarchy
from hiercvx.testing.strategies import (
    chains,
    clustered_data,
    dags,
    datasets,
    hierarchies,
    hierarchy_and_labels,
    label_samples,
    label_sets_and_scores,
    one_child_trees,
    stars,
    trees,
)

__all__ = [
    "chains",
    "clustered_data",
    "dag_fixture",
    "dags",
    "datasets",
    "hierarchies",
    "hierarchy_and_labels",
    "label_samples",
    "label_sets_and_scores",
    "one_child_trees",
    "stars",
    "tree_fixture",
    "trees",
]


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
