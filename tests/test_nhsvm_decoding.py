"""Program (19) split at the root (``hiercvx.inference.components``): exact on small DAGs.

NHSVM prediction on the Gene Ontology solves (19) per namespace; here hierarchies whose root
has disjoint sub-DAGs (some trees, some single leaves, some DAGs that split again) are decoded
with the split forced on and compared with enumeration of ``Y_m`` and with the unsplit program,
on scores with ties, all-negative scores and the tiny path weights of deep nodes.
"""

from __future__ import annotations

import numpy as np
import pytest

import hiercvx as hc
from hiercvx import inference as inf
from hiercvx.inference.components import root_components

SPLIT = inf.Options(split_root_from=1)
WHOLE = inf.Options(split_root_from=0)


def split_hierarchy(rng, sizes) -> hc.Hierarchy:
    """A root ``r`` over disjoint components of the given sizes (1: a leaf; DAGs otherwise)."""
    edges, nodes = [], ["r"]
    for k, size in enumerate(sizes):
        names = [f"c{k}_{v}" for v in range(size)]
        edges.append(("r", names[0]))
        for v in range(1, size):
            n_parents = min(v, 1 + int(rng.random() < 0.5))
            for p in rng.choice(v, size=n_parents, replace=False):
                edges.append((names[int(p)], names[v]))
        nodes += names
    return hc.Hierarchy.from_edges(edges, nodes=nodes)


def score_kinds(rng, H, n):
    """Gaussian, all negative, integer ties, and tiny weights below the top two levels."""
    M = len(H)
    depth = np.array([H.depth(v) for v in H.nodes])
    tiny = rng.normal(size=(n, M)) * np.where(depth >= 2, 1e-6, 1.0)
    return np.vstack([rng.normal(size=(n, M)), -np.abs(rng.normal(size=(n, M))),
                      rng.integers(-2, 3, size=(n, M)).astype(float), tiny])


def test_root_components_only_when_disjoint():
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "a1"), ("b", "b1")])
    parts = root_components(H)
    assert parts is not None and sorted(len(p) for p in parts) == [2, 2]
    shared = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x")])
    assert root_components(shared) is None
    chain = hc.Hierarchy.from_edges([("r", "a"), ("a", "b")])
    assert root_components(chain) is None


@pytest.mark.parametrize("seed", range(8))
def test_split_program_matches_enumeration_and_the_whole_program(seed):
    rng = np.random.default_rng(4000 + seed)
    sizes = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(2, 4)))]
    H = split_hierarchy(rng, sizes)
    S = score_kinds(rng, H, 3)
    sets = inf.enumerate_label_sets(H, max_nodes=len(H))
    optimum = (S @ sets.T.astype(float)).max(axis=1)
    Z, info = inf.LabelSetOracle(H, "ilp", options=SPLIT).solve(S, return_info=True)
    _, whole = inf.LabelSetOracle(H, "ilp", options=WHOLE).solve(S, return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(info.objective, optimum, atol=1e-12)
    np.testing.assert_allclose(whole.objective, optimum, atol=1e-12)
    assert 0 <= info.n_closure <= len(S)


def test_nested_split_and_tree_components():
    """A component whose own root splits again, a tree component and a single leaf."""
    edges = [("r", "t"), ("t", "t1"), ("t", "t2"), ("t1", "t11"),          # a tree
             ("r", "d"), ("d", "e"), ("d", "f"), ("e", "g"), ("f", "g"),    # splits? no: g shared
             ("r", "n"), ("n", "n1"), ("n", "n2"), ("n1", "x"), ("n1", "y"),
             ("n2", "z"), ("x", "w"), ("y", "w"),                         # n splits at n1 / n2
             ("r", "leaf")]
    H = hc.Hierarchy.from_edges(edges)
    rng = np.random.default_rng(7)
    S = score_kinds(rng, H, 5)
    optimum = (S @ inf.enumerate_label_sets(H, max_nodes=len(H)).T.astype(float)).max(axis=1)
    oracle = inf.LabelSetOracle(H, "ilp", options=SPLIT)
    Z, info = oracle.solve(S, return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(info.objective, optimum, atol=1e-12)
    methods = sorted(o.method if o is not None else "leaf" for _, _, o in oracle._split.parts)
    assert methods == ["dp", "ilp", "ilp", "leaf"]
    nested = [o for _, sub, o in oracle._split.parts if sub is not None and sub.root == "n"][0]
    assert nested._split is not None and len(nested._split.parts) == 2
