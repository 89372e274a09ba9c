"""Hierarchy: construction, navigation, closure, transforms, class attributes, bad input."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx._sparse import expand_ranges
from hiercvx.exceptions import HierarchyError, LabelError


@pytest.fixture
def tree():
    return hc.Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                      "B1": "B", "A1a": "A1"})


@pytest.fixture
def dag():
    # C has two parents (A and B); D hangs under C
    return hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "C"), ("B", "C"), ("C", "D"),
                                    ("A", "E")])


def brute_ancestors(edges, v):
    g = nx.DiGraph(edges)
    return set(nx.ancestors(g, v))


@st.composite
def random_dags(draw, max_nodes=14):
    """Random DAG: node k picks 1..3 parents among 0..k-1 (some one-child chains)."""
    n = draw(st.integers(2, max_nodes))
    edges = []
    for k in range(1, n):
        n_par = draw(st.integers(1, min(3, k)))
        pars = draw(st.lists(st.integers(0, k - 1), min_size=n_par, max_size=n_par, unique=True))
        edges += [(f"n{p}", f"n{k}") for p in pars]
    return edges


def test_contract_examples():
    H = hc.Hierarchy.from_parents({"root": None, "A": "root", "A1": "A"})
    assert H.nodes == ("root", "A", "A1") and H.root == "root" and H.is_tree
    D = hc.Hierarchy.from_edges([("root", "A"), ("A", "A1"), ("B", "A1")])
    assert D.root == hc.hierarchy.ARTIFICIAL_ROOT and not D.is_tree
    assert set(D.parents("A1")) == {"A", "B"}
    P = hc.Hierarchy.from_paths(["A/A1", "B"])
    assert set(P.nodes) == {P.root, "A", "A/A1", "B"} and P.parents("A/A1") == ("A",)


def test_navigation(tree):
    H = tree
    assert H.nodes[0] == "root"
    assert H.children("A") == ("A1", "A2")
    assert H.siblings("A1") == ("A2",) and H.siblings("root") == ()
    assert H.ancestors("A1a") == ("root", "A", "A1")
    assert H.ancestors("A1a", inclusive=True)[-1] == "A1a"
    assert set(H.descendants("A")) == {"A1", "A2", "A1a"}
    assert set(H.leaves) == {"A1a", "A2", "B1"}
    assert H.depth("A1a") == 3 and H.depth("root") == 0
    assert H.index("B") == H.nodes.index("B")
    # parents before children
    for p, c in H.edges:
        assert H.index(p) < H.index(c)
    assert list(H.parent_index) == [-1] + [H.index(H.parents(v)[0]) for v in H.nodes[1:]]


def test_dag_navigation(dag):
    assert dag.depth("D") == 3  # longest path r-A-C-D
    assert set(dag.siblings("C")) == {"E"}  # children of A and B other than C
    assert set(dag.ancestors("D")) == {"r", "A", "B", "C"}
    assert not dag.is_tree
    with pytest.raises(HierarchyError, match="trees only"):
        dag.parent_index


def test_roundtrips(tree, dag):
    for H in (tree, dag):
        assert hc.Hierarchy.from_networkx(H.to_networkx()) == H
        back = hc.Hierarchy.from_parents(H.to_dict())
        assert back == H
    assert tree.to_dict()["A1"] == "A"


@given(random_dags())
@settings(max_examples=60, deadline=None)
def test_ancestors_match_networkx(edges):
    H = hc.Hierarchy.from_edges(edges)
    assert H.root == "n0"
    for v in H.nodes:
        assert set(H.ancestors(v)) == brute_ancestors(edges, v)  # n0 is the only source
        # topological: every ancestor precedes v
        assert all(H.index(a) < H.index(v) for a in H.ancestors(v))
        assert set(H.descendants(v)) == {u for u in H.nodes if v in H.ancestors(u)}
        longest = max((H.depth(p) for p in H.parents(v)), default=-1) + 1
        assert H.depth(v) == longest


@given(random_dags(), st.data())
@settings(max_examples=40, deadline=None)
def test_closure_matches_brute_force(edges, data):
    H = hc.Hierarchy.from_edges(edges)
    n_samples = data.draw(st.integers(1, 6))
    sets = [data.draw(st.sets(st.sampled_from(H.nodes), max_size=3)) for _ in range(n_samples)]
    Z = H.closure(sets)
    for row, s in zip(Z, sets):
        expect = set(s)
        for v in s:
            expect |= set(H.ancestors(v))
        assert {H.nodes[j] for j in np.flatnonzero(row)} == expect
    assert H.is_closed(Z).all()
    Zs = H.closure(sets, sparse=True)
    assert sp.issparse(Zs) and np.array_equal(Zs.toarray(), Z)
    assert H.label_sets(Z) == [frozenset(H.nodes[j] for j in np.flatnonzero(r)) for r in Z]


def test_closure_single_and_multi(tree):
    Z = tree.closure(["A1a", "B"])
    assert Z.dtype == bool and Z.shape == (2, len(tree))
    assert {tree.nodes[j] for j in np.flatnonzero(Z[0])} == {"root", "A", "A1", "A1a"}
    Zm = tree.closure([{"A2", "B1"}, ["A"]])
    assert {tree.nodes[j] for j in np.flatnonzero(Zm[0])} == {"root", "A", "A2", "B", "B1"}
    assert tree.closure([set()]).sum() == 0  # empty sets stay empty, the caller decides
    # numpy array of names
    assert np.array_equal(tree.closure(np.array(["A1a", "B"])), Z)



@pytest.mark.parametrize("make", [list, np.array, lambda v: np.array(v, dtype=object)])
def test_label_indicator_single_labels_any_container(make):
    """One name per sample, looked up by name once (the fast route) or per sample: the same
    indicator from a list, a numpy array and an object array, ints and numpy ints alike, and
    an unknown name is named in the error from every container."""
    H = hc.Hierarchy.from_parents({0: None, 1: 0, 2: 0, 3: 1, 4: 1})
    names = [3, 4, 2, 3, 1]
    expect = np.zeros((5, 5), dtype=bool)
    expect[np.arange(5), [H.index(v) for v in names]] = True
    assert np.array_equal(H.label_indicator(make(names)).toarray(), expect)
    assert np.array_equal(H.label_indicator([np.int64(v) for v in names]).toarray(), expect)
    mixed = [3, {4, 2}, 1]                                     # a set among names: per sample
    assert H.label_sets(H.label_indicator(mixed)) == [{3}, {2, 4}, {1}]
    with pytest.raises(LabelError, match=r"7\)? \(sample 2\)"):
        H.label_indicator(make([3, 4, 7]))
    with pytest.raises(LabelError, match="'3'"):
        H.label_indicator(make(["3", "4"]))                   # names are ints, not strings

def test_closure_large_is_fast_enough():
    rng = np.random.default_rng(0)
    n = 3000
    parents = {0: None}
    parents.update({k: int(rng.integers(0, k)) for k in range(1, n)})
    H = hc.Hierarchy.from_parents(parents)
    labels = rng.choice(np.array(H.leaves), size=20000)
    Z = H.closure(labels, sparse=True)
    assert Z.shape == (20000, n)
    assert np.array_equal(np.asarray(Z.sum(axis=1)).ravel(),
                          H.depths[H.indices(labels)] + 1)


def test_bad_input():
    with pytest.raises(HierarchyError, match="cycle"):
        hc.Hierarchy.from_edges([("a", "b"), ("b", "c"), ("c", "a")])
    with pytest.raises(HierarchyError, match="cycle"):
        hc.Hierarchy.from_edges([("r", "a"), ("a", "b"), ("b", "a")])
    with pytest.raises(HierarchyError, match="self-loop"):
        hc.Hierarchy.from_edges([("a", "a")])
    with pytest.raises(HierarchyError, match="not declared"):
        hc.Hierarchy.from_parents({"a": None, "b": "ghost"})
    with pytest.raises(HierarchyError, match="duplicate"):
        hc.Hierarchy.from_parents([("a", None), ("b", "a"), ("b", None)])
    with pytest.raises(HierarchyError, match="empty"):
        hc.Hierarchy.from_parents({})
    with pytest.raises(HierarchyError, match="empty"):
        hc.Hierarchy.from_edges([])
    with pytest.raises(HierarchyError, match="empty component"):
        hc.Hierarchy.from_paths(["A//B"])
    with pytest.raises(HierarchyError, match="already a node"):
        hc.Hierarchy.from_edges([("a", "b"), ("<root>", "c")])
    H = hc.Hierarchy.from_paths(["A/B", "C"])
    with pytest.raises(LabelError, match="not nodes"):
        H.closure(["A/B", "Z"])
    with pytest.raises(LabelError):
        H.index("Z")
    with pytest.raises(ValueError):  # every input error is a ValueError
        H.closure("A/B")


def test_self_leaves(tree):
    pp = tree.with_self_leaves(["A", "A2"])  # A2 is a leaf: nothing to add
    H2 = pp.hierarchy
    assert "A/<self>" in H2 and H2.parents("A/<self>") == ("A",) and H2.is_leaf("A/<self>")
    assert len(H2) == len(tree) + 1
    assert pp.transform(["A", "A1a"]) == ["A/<self>", "A1a"]
    assert pp.inverse_transform(pp.transform(["A", "B1"])) == ["A", "B1"]
    assert pp.transform([{"A", "B1"}]) == [frozenset({"A/<self>", "B1"})]
    every = tree.with_self_leaves()
    assert set(every.self_leaf) == {"root", "A", "A1", "B"}


def test_minimal_graph(tree):
    # A1 and A1a always co-occur (A1a is A1's only child); so do B and B1
    labels = ["A1a", "A2", "B1", "A1a"]
    mg = tree.minimal_graph(labels)
    assert mg.groups["A1"] == ("A1", "A1a") and mg.groups["B"] == ("B", "B1")
    assert set(mg.hierarchy.nodes) == {"root", "A", "A1", "A2", "B"}
    assert mg.transform(["A1a", {"B1", "A2"}]) == ["A1", frozenset({"B", "A2"})]
    # the merged graph's closure equals the original closure restricted to representatives
    Z = tree.closure(labels)
    Zm = mg.hierarchy.closure(mg.transform(labels))
    for j, v in enumerate(mg.hierarchy.nodes):
        assert np.array_equal(Zm[:, j], Z[:, tree.index(v)])


def test_minimal_graph_reads_tuple_names_as_labels():
    """Node names that are tuples (e.g. (level, code)) are labels, not label sets."""
    T = hc.Hierarchy.from_parents({("r",): None, ("A",): ("r",), ("A", 1): ("A",),
                                   ("B",): ("r",), ("B", 1): ("B",), ("B", 2): ("B",)})
    mg = T.minimal_graph([("A", 1), ("B", 1), ("B", 2)])
    assert mg.transform([("A", 1), {("B", 1)}]) == [("A",), frozenset({("B", 1)})]


def test_class_attributes(tree):
    classes = tree.leaves
    ind = hc.class_attributes(tree)
    assert ind.shape == (3, len(tree))
    assert np.array_equal(ind.astype(bool), tree.closure(classes))
    td = hc.class_attributes(tree, scheme="tree_depth")
    assert np.allclose(td[:, 0], 0) and np.isclose(td.max(), 1 / np.sqrt(3))
    cd = hc.class_attributes(tree, scheme="class_depth")
    assert np.allclose(np.linalg.norm(cd, axis=1), 1.0)  # unit norm for every class (thesis 7.2)
    alpha = np.linspace(0.1, 0.7, len(tree))
    nz = hc.class_attributes(tree, scheme="normalized", alpha=alpha)
    assert np.allclose(nz ** 2, ind * alpha)
    no_root = hc.class_attributes(tree, include_root=False)
    assert np.all(no_root[:, 0] == 0)
    custom = hc.class_attributes(tree, scheme=lambda H, v, y: H.depth(v) + 1.0)
    assert custom[classes.index("A1a"), tree.index("A1")] == 3.0
    with pytest.raises(LabelError, match="alpha"):
        hc.class_attributes(tree, scheme="normalized")
    with pytest.raises(LabelError, match="unknown"):
        hc.class_attributes(tree, scheme="nope")


def test_self_leaves_order_does_not_depend_on_the_callers_order(tree):
    a = tree.with_self_leaves(["B", "A", "A1"]).hierarchy.nodes
    b = tree.with_self_leaves({"A1", "A", "B"}).hierarchy.nodes
    assert a == b == tree.with_self_leaves(["A", "A1", "B"]).hierarchy.nodes


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=12))
def test_expand_ranges_is_concatenated_aranges(pairs):
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    counts = np.array([c for _, c in pairs], dtype=np.int64)
    expected = np.concatenate([np.arange(s, s + c) for s, c in pairs] + [np.zeros(0, np.int64)])
    got = expand_ranges(starts, counts)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------- robustness
def test_closure_refuses_non_indicator_matrices():
    H = hc.Hierarchy.from_paths(["a/b", "c"])
    n = len(H)
    with pytest.raises(LabelError, match="list of lists"):
        H.closure(np.array([["a", "b"], ["c", "a/b"]]))
    for bad in (-np.ones((2, n)), 2 * np.ones((2, n), dtype=int), np.full((2, n), np.nan)):
        with pytest.raises(LabelError, match="0 or 1"):
            H.closure(bad)
        with pytest.raises(LabelError, match="0 or 1"):
            H.closure(sp.csr_matrix(np.nan_to_num(bad, nan=0.5)))
    one_hot = np.eye(n)[[H.index("a/b"), H.index("c")]]
    for ok in (one_hot, one_hot.astype(int), one_hot > 0, sp.csr_matrix(one_hot)):
        np.testing.assert_array_equal(H.closure(ok), H.closure(["a/b", "c"]))


def test_from_paths_refuses_a_single_string():
    with pytest.raises(HierarchyError, match="single string 'A/B'; wrap it in a list"):
        hc.Hierarchy.from_paths("A/B")
    with pytest.raises(HierarchyError, match="single string"):
        hc.Hierarchy.from_paths(b"A/B")


def test_labels_equal_to_a_name_only_in_python_are_refused():
    """``True`` and ``1.0`` equal the node name ``1`` as dict keys; they are not that name, as
    construction already refuses merging them."""
    H = hc.Hierarchy.from_edges([(0, 1), (0, 2), (1, 3)])
    assert True not in H and 1 in H and np.int64(1) in H
    for labels in ([True, False], np.array([3.0]), [{1.0, 2}]):
        with pytest.raises(LabelError, match=r"equals the name \d \(int\) in Python but is not it"):
            H.closure(labels)
    with pytest.raises(LabelError, match="equals the name 1"):
        H.index(True)
    assert H.closure(np.array([3, 1])).sum() == 5   # numpy integers are the names
    with pytest.raises(LabelError, match="equals the name"):
        hc.losses.symmetric_difference(H, [True], [2])


def test_tree_depth_uses_the_depth_of_the_hierarchy_not_of_the_classes_passed():
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "A1": "A", "B": "r"})  # depth 2
    td = hc.class_attributes(H, classes=["A", "B"], scheme="tree_depth")
    expected = np.zeros((2, len(H)))
    expected[0, H.index("A")] = expected[1, H.index("B")] = 1 / np.sqrt(2)
    np.testing.assert_allclose(td, expected)
    # thesis 7.2: D = max_y |anc(y)| - 1 over the hierarchy; on a DAG no row exceeds unit norm
    D = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("r", "d")])
    rows = hc.class_attributes(D, classes=["d"], scheme="tree_depth")
    np.testing.assert_allclose(rows[0, D.index("d")], 1 / np.sqrt(3))
    assert np.all(np.linalg.norm(hc.class_attributes(D, scheme="tree_depth"), axis=1) <= 1 + 1e-12)


def test_to_dict_round_trips_when_a_tuple_is_a_node_name():
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("r", ("a", "b")), ("a", "c"), ("b", "c")])
    d = H.to_dict()
    assert d["c"] == ["a", "b"] and d[("a", "b")] == ["r"]
    back = hc.Hierarchy.from_parents(d)
    assert back.parents("c") == ("a", "b") and back == H


def test_equality_and_hash_tell_names_of_other_types_apart():
    ints = hc.Hierarchy.from_edges([(1, 2), (1, 3)])
    floats = hc.Hierarchy.from_edges([(1.0, 2.0), (1.0, 3.0)])
    assert ints != floats and hash(ints) != hash(floats)
    again = hc.Hierarchy.from_edges([(1, 2), (1, 3)])
    assert ints == again and hash(ints) == hash(again)
    numpy_names = hc.Hierarchy.from_edges([(np.int64(1), np.int64(2)), (np.int64(1), np.int64(3))])
    assert ints == numpy_names and hash(ints) == hash(numpy_names)  # the same names, as labels


def test_hash_is_kept_in_the_process_and_left_out_of_pickles():
    import pickle
    import subprocess
    import sys
    H = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")])
    first = hash(H)
    assert hash(H) == first and H == H
    blob = pickle.dumps(H)
    assert "_hash_value" not in pickle.loads(blob).__dict__
    # another process hashes strings with another seed: its hash is its own, equal to that of
    # the same hierarchy built there
    code = ("import pickle, sys, hiercvx as hc; H = pickle.loads(sys.stdin.buffer.read()); "
            "G = hc.Hierarchy.from_edges([('r', 'a'), ('r', 'b'), ('a', 'c'), ('b', 'c')]); "
            "print(hash(H) == hash(G) and H == G and {H: 1}[G] == 1)")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "12345"}, check=True)
    assert out.stdout.decode().strip() == "True"


@pytest.mark.parametrize("build", [
    lambda: hc.Hierarchy.from_edges([("a", "b")], nodes=[None]),
    lambda: hc.Hierarchy.from_edges([("a", "b")], nodes=[["x"]]),
    lambda: hc.Hierarchy.from_edges([("a", "b"), ("c", "d")], root=float("nan")),
    lambda: hc.Hierarchy.from_edges([("a", "b"), ("c", "d")], root=frozenset()),
    lambda: hc.Hierarchy.from_edges([("a", "b"), ("c", "d")], root=["R"]),
    lambda: hc.Hierarchy.from_edges([("a", ["b"])]),
    lambda: hc.Hierarchy.from_parents([(["x"], None)]),
    lambda: hc.Hierarchy.from_parents({"r": None, "a": [["r"]]}),
    lambda: hc.Hierarchy.from_parents({"r": None, "a": np.array([["r"]])}),
    lambda: hc.Hierarchy.from_parents({"r": None, "a": float("nan")}),
    lambda: hc.Hierarchy.from_edges(["ab", "bc"]),
])
def test_bad_names_and_edges_are_refused_everywhere(build):
    with pytest.raises(HierarchyError):
        build()


def test_parent_lists_none_and_generators_get_a_fix_that_works():
    with pytest.raises(HierarchyError, match="drop it from the list") as err:
        hc.Hierarchy.from_parents({"r": None, "a": [None, "r"]})
    assert "None: None" not in str(err.value)
    with pytest.raises(HierarchyError, match="NaN"):
        hc.Hierarchy.from_parents({"r": None, "a": float("nan")})
    with pytest.raises(HierarchyError, match="list of parent names"):
        hc.Hierarchy.from_parents({"r": None, "a": (p for p in ["r"])})
    H = hc.Hierarchy.from_parents({"r": None, "s": None, "a": np.array(["r", "s"])})
    assert H.parents("a") == ("r", "s")


def test_tuple_names_holding_numpy_scalars_are_found_by_their_values():
    H = hc.Hierarchy.from_edges([((np.int64(1), 2), "x"), ((np.int64(1), 2), "y")])
    assert H.closure([(1, 2)])[0].tolist() == [True, False, False]
    P = hc.Hierarchy.from_edges([((1, 2), "x"), ((1, 2), "y")])
    assert P.closure([(np.int64(1), 2)])[0].tolist() == [True, False, False]
    with pytest.raises(LabelError):
        P.closure([(1.0, 2)])  # equal in Python, another name


def test_label_containers_that_would_be_misread_are_refused(tree):
    with pytest.raises(LabelError, match=r"pass \[\{"):
        tree.closure({"A1", "B"})
    assert tree.closure([{"A1", "B"}]).shape == (1, len(tree))
    with pytest.raises(LabelError, match="0-d array"):
        tree.closure(np.array("A1"))
    with pytest.raises(LabelError, match="n_samples"):
        tree.label_indicator(["A1", "B"], n_samples=1)
    assert tree.label_indicator(["A1", "B"], n_samples=3).shape == (3, len(tree))


@pytest.mark.parametrize("sep", ["", None, 1])
def test_from_paths_refuses_a_separator_that_is_not_a_string(sep):
    with pytest.raises(HierarchyError, match="sep"):
        hc.Hierarchy.from_paths(["a/b"], sep=sep)


def test_repr_counts_in_the_singular():
    assert "1 node, 1 leaf" in repr(hc.Hierarchy.from_edges([], nodes=["x"]))
