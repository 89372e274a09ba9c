"""Small label-set problems shared by the label-set engine's tests: a two-level tree, a DAG
whose leaves have several parents, and Gaussian features around the mean of each sample's
leaves.  Import with ``from labelset_cases import HIERARCHIES, label_sets`` (pytest puts
``tests/`` on the path)."""

import numpy as np

import hiercvx as hc
from hiercvx import inference as inf


def tree():
    parents = {"r": None}
    for g in range(3):
        parents[f"g{g}"] = "r"
    for k in range(9):
        parents[f"l{k}"] = f"g{k % 3}"
    return hc.Hierarchy.from_parents(parents)


def dag():
    edges = [("r", "a"), ("r", "b"), ("r", "c"), ("a", "l0"), ("a", "l1"), ("a", "l2"),
             ("b", "l2"), ("b", "l3"), ("b", "l4"), ("c", "l4"), ("c", "l5"), ("c", "l6")]
    return hc.Hierarchy.from_edges(edges)


def label_sets(H, n, d, seed=0):
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    means = rng.standard_normal((len(leaves), d))
    Y = [frozenset(rng.choice(leaves, size=rng.integers(1, 4), replace=False)) for _ in range(n)]
    X = np.array([means[[leaves.index(v) for v in s]].mean(axis=0) for s in Y])
    return 2 * (X + 0.5 * rng.standard_normal(X.shape)), Y


HIERARCHIES = {"tree": tree, "dag": dag}


def random_hierarchy(rng, n_nodes: int, dag: bool) -> hc.Hierarchy:
    """Nodes ``n1..`` under earlier nodes (one parent, or up to two on a DAG), root ``n0``."""
    edges = []
    for k in range(1, n_nodes):
        k_parents = int(rng.integers(1, 3)) if dag and k > 1 else 1
        for p in rng.choice(k, size=min(k, k_parents), replace=False):
            edges.append((f"n{p}", f"n{k}"))
    return hc.Hierarchy.from_edges(edges)


def planted_sets(H, n, d, seed):
    """Features and label sets from a planted node-weight model."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    S = X @ rng.standard_normal((len(H), d)).T
    Z = inf.best_label_set(S + 0.5 * rng.standard_normal(S.shape), H, "enumerate")
    leaves = np.array(H.leaves, dtype=object)
    cols = [H.index(v) for v in H.leaves]
    return X, [frozenset(leaves[row].tolist()) for row in Z[:, cols]]
