"""Tests of the routes of hiercvx.inference's programs: the root split
(:mod:`hiercvx.inference.components`), method "lp"'s fallback to method "ilp"'s route, what
the InferenceInfo counters and the progress bar report there, and tolerances that ignore the
root's score.

The split is forced on small hierarchies with ``Options(split_root_from=1)``; optima are
checked against brute force over :func:`hiercvx.inference.enumerate_label_sets`.
"""

from __future__ import annotations

import numpy as np
import pytest

import hiercvx as hc
from hiercvx import inference as inf

SPLIT = inf.Options(split_root_from=1)
WHOLE = inf.Options(split_root_from=0)

# under the root: a tree "T" and a DAG "D" with disjoint descendants
TREE_AND_DAG = [("T", "T1"), ("T", "T2"), ("D", "Da"), ("D", "Db"), ("Da", "Dc"), ("Db", "Dc"),
                ("Da", "Dd"), ("Db", "De")]
# under the root: two copies of a DAG whose LP relaxation is fractional (1/3 everywhere)
TWO_TRIANGLES = [(f"{k}", f"{k}{p}") for k in "PQ" for p in "ABC"] + [
    (f"{k}{p}", f"{k}{leaf}") for k in "PQ"
    for p, leaves in (("A", "xy"), ("B", "yz"), ("C", "xz")) for leaf in leaves]


def optimum(S, H):
    sets = inf.enumerate_label_sets(H, max_nodes=64)
    return (S @ sets.T.astype(float)).max(axis=1)


def fractional_scores(H, n: int = 3):
    """Every node -1 but the roots: the LP of each triangle is fractional."""
    S = -np.ones((n, len(H)))
    for v in ("P", "Q"):
        S[:, H.index(v)] = 0.5
    S[:, 0] = 0.0
    return S + 0.01 * np.arange(n)[:, None]


# ---------------------------------------------------------------------- "lp" falls back to "ilp"
def test_lp_solves_fractional_rows_the_way_of_ilp(monkeypatch):
    H = hc.Hierarchy.from_edges(TWO_TRIANGLES)
    S = fractional_scores(H)
    built = []
    original = inf.BACKENDS["highs"]

    class Counting(original):
        def __init__(self, G, *args, **kwargs):
            built.append((len(G), kwargs.get("integer")))
            super().__init__(G, *args, **kwargs)

    monkeypatch.setitem(inf.BACKENDS, "highs", Counting)
    Z, info = inf.best_label_set(S, H, "lp", return_info=True, options=SPLIT)
    assert info.fractional.all()
    np.testing.assert_allclose(info.objective, optimum(S, H), atol=1e-12)
    assert inf.is_valid_label_set(Z, H).all()
    # the integer program is never built on the whole graph: the fractional rows are split
    # at the root, one component at a time, as method "ilp" does
    assert (len(H), True) not in built
    np.testing.assert_array_equal(Z, inf.best_label_set(S, H, "ilp", options=SPLIT))


@pytest.mark.parametrize("options", [SPLIT, WHOLE])
def test_lp_fallback_agrees_with_ilp_and_brute_force(options):
    rng = np.random.default_rng(0)
    H = hc.Hierarchy.from_edges(TWO_TRIANGLES)
    S = np.vstack([fractional_scores(H), rng.normal(size=(30, len(H)))])
    Z, info = inf.best_label_set(S, H, "lp", return_info=True, options=options)
    assert info.n_fractional >= 3
    np.testing.assert_allclose(info.objective, optimum(S, H), atol=1e-9)
    assert np.all(info.relaxation_objective >= info.objective - 1e-9)


# ---------------------------------------------------------------------- counters and progress
@pytest.mark.parametrize("edges", [TREE_AND_DAG, TWO_TRIANGLES])
def test_split_counters_sum_the_components(edges):
    rng = np.random.default_rng(1)
    H = hc.Hierarchy.from_edges(edges)
    S = rng.normal(size=(80, len(H)))
    Z, info = inf.best_label_set(S, H, "ilp", return_info=True, options=SPLIT)
    np.testing.assert_allclose(info.objective, optimum(S, H), atol=1e-9)
    # one count per (sample, DAG component) that a stage answered
    dag_parts = sum(not c.is_tree for c in _components(H))
    counted = info.n_closure + info.n_bounded + info.n_branched
    assert 0 < counted <= dag_parts * len(S)
    assert info.n_closure > 0 and info.n_bounded + info.n_branched > 0
    # the same counts as the components solved one by one
    expected = np.zeros(3, dtype=int)
    for sub in _components(H):
        if sub.is_tree:
            continue
        cols = [H.index(v) for v in sub.nodes]
        _, part = inf.best_label_set(S[:, cols], sub, "ilp", return_info=True, options=SPLIT)
        expected += (part.n_closure, part.n_bounded, part.n_branched)
    assert (info.n_closure, info.n_bounded, info.n_branched) == tuple(expected)


def _components(H):
    """The sub-hierarchies under the root's children, built from node names."""
    out = []
    for top in H.children(H.root):
        nodes = [top] + [v for v in H.nodes if top in H.ancestors(v)]
        edges = [(p, v) for v in nodes[1:] for p in H.parents(v)]
        out.append(hc.Hierarchy.from_edges(edges, nodes=nodes, root=top))
    return out


def test_split_rows_answered_by_cut_or_dp_count_as_exact():
    H = hc.Hierarchy.from_edges(TREE_AND_DAG)
    S = np.full((2, len(H)), -1.0)
    S[:, [H.index("D"), H.index("Da"), H.index("Dd")]] = 1.0  # the cut's closed set is a label set
    oracle = inf.LabelSetOracle(H, "ilp", options=SPLIT)
    Z, info = oracle.solve(S, return_info=True)
    assert info.n_closure == 2 and oracle._cut_exact.all()
    np.testing.assert_allclose(info.objective, optimum(S, H))


def test_split_shows_one_progress_bar(capsys):
    H = hc.Hierarchy.from_edges(TWO_TRIANGLES)
    S = np.random.default_rng(2).normal(size=(20, len(H)))
    inf.best_label_set(S, H, "ilp", options=SPLIT, verbose=True)
    err = capsys.readouterr().err
    assert "inference" in err and "100%" in err
    assert len({line.split(":")[0] for line in err.replace("\r", "\n").split("\n") if line}) == 1
    inf.best_label_set(S, H, "ilp", options=SPLIT, verbose=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------- the root's score
ROOTED_DAG = [("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("a", "d"), ("b", "e"), ("c", "f"),
              ("c", "g"), ("d", "h"), ("e", "h")]


@pytest.mark.parametrize("root", [1e8, 1e12])
@pytest.mark.parametrize("method, options", [
    ("ilp", inf.Options()), ("lp", inf.Options()), ("enumerate", inf.Options()),
    ("ilp", inf.Options(closure_cut=False, closure_branch_cuts=0)),
    ("lp", inf.Options(closure_cut=False))])
def test_a_large_root_score_does_not_change_the_best_set(root, method, options):
    """Every set has the root: its score shifts every value alike and must not blur the
    differences between sets (values compared without it)."""
    rng = np.random.default_rng(3)
    H = hc.Hierarchy.from_edges(ROOTED_DAG)
    S = rng.normal(size=(300, len(H)))
    S[:, 0] = root
    without_root = S.copy()
    without_root[:, 0] = 0.0
    Z, info = inf.best_label_set(S, H, method, options=options, return_info=True)
    assert inf.is_valid_label_set(Z, H).all()
    np.testing.assert_allclose(inf.label_set_scores(without_root, Z), optimum(without_root, H),
                               rtol=0, atol=1e-12)
    if info.relaxation_objective is not None:  # the LP optimum is reported with the root's score
        assert np.all(info.relaxation_objective - root >= optimum(without_root, H) - 1e-3)
