"""Tests of hiercvx.datasets: loaders on fixtures written here, generators of the papers."""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiercvx import DataFormatError, Hierarchy, InputError, LabelError
from hiercvx.datasets import (
    Dataset,
    describe,
    labels_from_paths,
    load,
    load_arff,
    load_libsvm,
    load_lshtc_hierarchy,
    make_cai_synthetic,
    make_nhsvm_balanced,
    make_nhsvm_unbalanced,
    make_wang_example1,
    make_wang_example2,
    make_wang_example3,
)
from hiercvx.datasets import _common
from hiercvx.datasets import arff as arff_module
from hiercvx.datasets.formats import _label_statistics
from hiercvx.hierarchy import ARTIFICIAL_ROOT

HMC = Path(__file__).resolve().parents[2] / "shared" / "data" / "hmc"


def write(tmp_path, name, text, newline="\n"):
    p = tmp_path / name
    with open(p, "w", newline=newline) as fh:
        fh.write(text)
    return p


# ---------------------------------------------------------------------- ARFF fixtures
FUNCAT = """\
% a FunCat-style file
@RELATION 'tiny funcat'

@ATTRIBUTE 'gene expr 1' numeric
@attribute "second one" REAL
@Attribute third integer
@ATTRIBUTE class hierarchical 01,01/01,01/01/03,01/02,02,02/05
% the data
@DATA
0.5,?,3,01/01/03@02
-1.25,2,?,01

?,?,7,01/01/03@01/02@02/05
% trailing comment
"""

GO = """\
@relation go
@attribute a numeric
@attribute b numeric
@attribute class hierarchical root/A,root/B,A/C,B/C,C/D,B/E
@data
1,2,C@E
3,4,D
5,6,A
"""


def test_arff_funcat_tree(tmp_path):
    p = write(tmp_path, "tiny.arff", FUNCAT)
    d = load_arff(p)
    assert d.name == "tiny"
    assert d.metadata["relation"] == "tiny funcat"
    assert d.metadata["dialect"] == "paths"
    assert d.feature_names == ["gene expr 1", "second one", "third"]
    expected = np.array([[0.5, np.nan, 3], [-1.25, 2, np.nan], [np.nan, np.nan, 7]])
    np.testing.assert_array_equal(d.X, expected)
    assert d.X.dtype == float
    assert d.y == [frozenset({"01/01/03", "02"}), frozenset({"01"}),
                   frozenset({"01/01/03", "01/02", "02/05"})]
    H = d.hierarchy
    assert H.is_tree
    # every prefix a node, named by the prefix; two top nodes under an artificial root
    assert set(H.nodes) == {"<root>", "01", "01/01", "01/01/03", "01/02", "02", "02/05"}
    assert H.parents("01/01/03") == ("01/01",)
    assert H.parents("01") == ("<root>",)
    assert H == Hierarchy.from_paths(["01", "01/01", "01/01/03", "01/02", "02", "02/05"])
    # row 2 stops at internal node 01 (a partial path); row 1's deepest labels include the
    # internal node 02; row 3 reaches leaves only
    stats = _label_statistics(H, d.y)
    np.testing.assert_array_equal(stats["given"], [2, 1, 3])
    np.testing.assert_array_equal(stats["closed"], [4, 1, 6])  # {01,01/01,01/01/03,02}, {01}, all
    np.testing.assert_array_equal(stats["partial"], [True, True, False])


def test_arff_go_dag(tmp_path):
    d = load_arff(write(tmp_path, "go.arff", GO))
    H = d.hierarchy
    assert d.metadata["dialect"] == "edges"
    assert not H.is_tree
    assert H.root == "root"
    assert set(H.parents("C")) == {"A", "B"}
    assert set(H.ancestors("D")) == {"root", "A", "B", "C"}
    assert d.y == [frozenset({"C", "E"}), frozenset({"D"}), frozenset({"A"})]
    np.testing.assert_array_equal(d.X, [[1, 2], [3, 4], [5, 6]])
    stats = _label_statistics(H, d.y)
    np.testing.assert_array_equal(stats["closed"], [4, 4, 1])  # {A,B,C,E}, {A,B,C,D}, {A}
    np.testing.assert_array_equal(stats["partial"], [True, False, True])  # C and A are internal


def test_arff_crlf_and_forced_dialect(tmp_path):
    p = write(tmp_path, "crlf.arff", GO, newline="\r\n")
    d = load_arff(p)
    assert d.y[0] == frozenset({"C", "E"})  # no stray '\r' in the last field
    with pytest.raises(DataFormatError) as e:
        load_arff(p, dialect="paths")  # labels C, E are not path nodes (they'd be 'A/C')
    assert e.value.line == 6
    with pytest.raises(InputError):
        load_arff(p, dialect="tree")


@pytest.mark.parametrize("labels, dialect, node", [("A/x", "paths", "A/x"), ("x", "edges", "x")])
def test_arff_ambiguous_pairs_decided_by_labels(tmp_path, labels, dialect, node):
    text = ("@relation r\n@attribute a numeric\n@attribute c hierarchical A/x,A/y\n@data\n"
            f"1,{labels}\n")
    d = load_arff(write(tmp_path, "amb.arff", text))
    assert d.metadata["dialect"] == dialect
    assert node in d.hierarchy
    assert d.y == [frozenset({node})]


def test_arff_nominal_onehot_and_refusal(tmp_path):
    text = ("@relation r\n@attribute a numeric\n@attribute colour {red, 'dark green'}\n"
            "@attribute c hierarchical 1,1/2\n@data\n1.5,red,1\n2,'dark green',1/2\n?,?,1\n")
    p = write(tmp_path, "nom.arff", text)
    d = load_arff(p)
    assert d.feature_names == ["a", "colour=red", "colour=dark green"]
    np.testing.assert_array_equal(d.X, [[1.5, 1, 0], [2, 0, 1], [np.nan, np.nan, np.nan]])
    assert d.metadata["nominal_attributes"] == ["colour"]
    with pytest.raises(DataFormatError) as e:
        load_arff(p, nominal="error")
    assert e.value.line == 3


def test_arff_hierarchical_not_last_and_empty_label(tmp_path):
    text = ("@relation r\n@attribute c hierarchical 1,1/2\n@attribute a numeric\n@data\n"
            "1/2,0.5\n?,1\n")
    d = load_arff(write(tmp_path, "mid.arff", text))
    np.testing.assert_array_equal(d.X, [[0.5], [1.0]])
    assert d.y == [frozenset({"1/2"}), frozenset()]


HEADER = ("@relation r\n@attribute a numeric\n@attribute b numeric\n"
          "@attribute c hierarchical 1,1/1,2\n@data\n")
BAD_ARFF = {
    # name: (text, expected line)
    "garbage in header": ("@relation r\nthis is not a directive\n@data\n", 2),
    "attribute without type": ("@relation r\n@attribute lonely\n@data\n", 2),
    "unknown type": ("@relation r\n@attribute a numbr\n@data\n", 2),
    "string attribute": ("@relation r\n% c\n@attribute s string\n@data\n", 3),
    "unknown directive": ("@relation r\n@atribute a numeric\n@data\n", 2),
    "unclosed quote": ("@relation r\n@attribute 'a numeric\n@data\n", 2),
    "empty class entry": ("@relation r\n@attribute c hierarchical 1,,2\n@data\n", 2),
    "no hierarchical attribute": ("@relation r\n@attribute a numeric\n@data\n1\n", 3),
    "no data section": ("@relation r\n@attribute a numeric\n", 2),
    "too few fields": (HEADER + "1,2,1\n1,2\n", 7),
    "too many fields": (HEADER + "\n% c\n1,2,3,1\n", 8),
    "non-numeric value": (HEADER + "1,2,1\n1,2,2\n\n1,abc,1\n", 9),
    "empty numeric value": (HEADER + "1,,1\n", 6),
    "undeclared label": (HEADER + "1,2,1\n1,2,1/1@3\n", 7),
    "undeclared deeper label": (HEADER + "1,2,1/1/1\n", 6),
    "empty label": (HEADER + "1,2,1@@2\n", 6),
    "sparse row": (HEADER + "{0 1, 2 1}\n", 6),
    "cyclic GO": ("@relation r\n@attribute a numeric\n"
                  "@attribute c hierarchical root/A,A/B,B/C,C/A\n@data\n1,A\n", 3),
    "nominal value not declared": ("@relation r\n@attribute n {x,y}\n@attribute c hierarchical 1\n"
                                   "@data\nx,1\nz,1\n", 6),
}


@pytest.mark.parametrize("case", sorted(BAD_ARFF))
def test_arff_malformed_gives_line(tmp_path, case):
    text, line = BAD_ARFF[case]
    p = write(tmp_path, "bad.arff", text)
    with pytest.raises(DataFormatError) as e:
        load_arff(p)
    assert e.value.line == line, str(e.value)
    assert e.value.path == p
    assert f"{p}:{line}" in str(e.value)
    assert isinstance(e.value, ValueError)


@st.composite
def arff_cases(draw):
    """A random path tree, random features with holes, random multi-labels."""
    n_top = draw(st.integers(1, 3))
    paths = []
    frontier = [str(i + 1) for i in range(n_top)]
    paths += frontier
    for _ in range(draw(st.integers(0, 6))):
        parent = draw(st.sampled_from(paths))
        child = f"{parent}/{len(paths)}"
        paths.append(child)
    n, m = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    vals = draw(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)),
                         min_size=n * m, max_size=n * m))
    labels = [draw(st.sets(st.sampled_from(paths), min_size=1, max_size=3)) for _ in range(n)]
    order = draw(st.permutations(paths))  # declaration order must not matter
    return paths, order, np.array([np.nan if v is None else v for v in vals]).reshape(n, m), labels


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=arff_cases())
def test_arff_round_trip(tmp_path, case):
    paths, order, X, labels = case
    lines = ["@RELATION rt"] + [f"@ATTRIBUTE f{j} numeric" for j in range(X.shape[1])]
    lines += ["@ATTRIBUTE class hierarchical " + ",".join(order), "@DATA"]
    for row, labs in zip(X, labels):
        vals = ["?" if np.isnan(v) else repr(float(v)) for v in row]
        lines.append(",".join(vals + ["@".join(sorted(labs))]))
    d = load_arff(write(tmp_path, "rt.arff", "\n".join(lines) + "\n"))
    np.testing.assert_array_equal(d.X, X)
    assert d.y == [frozenset(s) for s in labels]
    expected = Hierarchy.from_paths(order)
    if expected.root != ARTIFICIAL_ROOT:   # a single top-level class stays a class, under <root>
        expected = Hierarchy([(ARTIFICIAL_ROOT, expected.root), *expected.edges],
                             nodes=[ARTIFICIAL_ROOT, *expected.nodes])
    assert d.hierarchy == expected
    # closure against brute force: a node is in the closed set iff it prefixes a label
    Z = d.closure(sparse=False)
    for i, labs in enumerate(labels):
        brute = {v for v in d.hierarchy.nodes if v != d.hierarchy.root
                 and any(lab == v or lab.startswith(v + "/") for lab in labs)}
        got = {v for j, v in enumerate(d.hierarchy.nodes) if Z[i, j]} - {d.hierarchy.root}
        assert got == brute


# ---------------------------------------------------------------------- real data
@pytest.mark.skipif(not HMC.is_dir(), reason=f"shared data directory {HMC} absent")
def test_real_cellcycle_go_is_dag_and_fun_is_tree():
    go = load_arff(HMC / "cellcycle_GO.train.arff")
    fun = load_arff(HMC / "cellcycle_FUN.train.arff")
    assert not go.hierarchy.is_tree and go.hierarchy.root == "root"
    assert fun.hierarchy.is_tree
    assert go.X.shape == (1625, 77) and fun.X.shape == (1628, 77)
    assert np.isnan(go.X).any() and np.isnan(fun.X).any()
    for d in (go, fun):
        assert all(s and s <= set(d.hierarchy.nodes) for s in d.y)
    text = describe(go)
    assert "DAG" in text and "1625" in text


# ---------------------------------------------------------------------- LSHTC hierarchy
def test_lshtc_hierarchy_ints_strings_and_roots(tmp_path):
    H = load_lshtc_hierarchy(write(tmp_path, "h.txt", "# comment\n1 2\n1 3\n\n3 4\n5 6\n"))
    assert set(H.nodes) == {"<root>", 1, 2, 3, 4, 5, 6}
    assert H.parents(4) == (3,)
    assert set(H.children("<root>")) == {1, 5}
    H2 = load_lshtc_hierarchy(write(tmp_path, "h2.txt", "top a\ntop 7\na b\n7 b\n"))
    assert set(H2.nodes) == {"top", "a", "7", "b"}  # not all ints: all strings
    assert not H2.is_tree and set(H2.parents("b")) == {"a", "7"}


@pytest.mark.parametrize("text, line", [
    ("1 2\n2 3 4\n", 2),
    ("1 2\n\n# c\n3\n", 4),
    ("1 2\n2 2\n", 2),
    ("0 1\n1 2\n5 6\n2 3\n3 1\n", 2),  # the cycle 1 -> 2 -> 3 -> 1; first of its lines
])
def test_lshtc_hierarchy_errors(tmp_path, text, line):
    with pytest.raises(DataFormatError) as e:
        load_lshtc_hierarchy(write(tmp_path, "h.txt", text))
    assert e.value.line == line, str(e.value)


# ---------------------------------------------------------------------- LIBSVM
LIBSVM = """\
# a comment line
1,2 1:0.5 3:1.5
3 2:2.0

2 1:-1 4:4
"""


def test_libsvm_flat_and_with_hierarchy(tmp_path):
    p = write(tmp_path, "d.svm", LIBSVM)
    d = load_libsvm(p)
    assert sp.issparse(d.X)
    np.testing.assert_array_equal(d.X.toarray(), [[0.5, 0, 1.5, 0], [0, 2, 0, 0], [-1, 0, 0, 4]])
    assert d.y == [frozenset({1, 2}), frozenset({3}), frozenset({2})]
    assert set(d.hierarchy.leaves) == {1, 2, 3} and d.hierarchy.root == "<root>"
    hier = write(tmp_path, "h.txt", "0 10\n10 1\n10 2\n0 3\n")
    d2 = load_libsvm(p, hierarchy=hier)
    assert d2.hierarchy.parents(1) == (10,)
    assert d2.y == d.y
    # a hierarchy with string names: label 3 matches node "3"
    H = Hierarchy.from_parents({"r": None, "1": "r", "2": "r", "3": "r"})
    assert load_libsvm(p, hierarchy=H).y[1] == frozenset({"3"})
    assert load_libsvm(p, n_features=6).X.shape == (3, 6)


def test_libsvm_errors_have_lines(tmp_path):
    p = write(tmp_path, "d.svm", LIBSVM)
    H = Hierarchy.from_parents({0: None, 1: 0, 2: 0})
    with pytest.raises(DataFormatError) as e:
        load_libsvm(p, hierarchy=H)  # label 3 unknown, third line of the file
    assert e.value.line == 3 and "3" in str(e.value)
    bad = write(tmp_path, "bad.svm", "1 1:0.5\n2 1:x\n")
    with pytest.raises(DataFormatError) as e:
        load_libsvm(bad)
    assert e.value.line == 2
    with pytest.raises(LabelError):
        load_libsvm(p, hierarchy=42)


# ---------------------------------------------------------------------- path strings
def test_labels_from_paths():
    H, y = labels_from_paths(["a/b", "a", "c/d/e", "a/b"])
    assert list(y) == ["a/b", "a", "c/d/e", "a/b"] and y.dtype == object
    assert H == Hierarchy.from_paths(["a/b", "a", "c/d/e"])
    assert H.depth("c/d/e") == 3  # under the artificial root
    H2, y2 = labels_from_paths(["a.b; c", "c.d"], sep=".", multi_sep=";")
    assert y2 == [frozenset({"a.b", "c"}), frozenset({"c.d"})]
    assert H2.parents("c.d") == ("c",)
    for bad in (["a", ""], ["a//b"], ["a;"], "a/b", [3]):
        with pytest.raises(LabelError):
            labels_from_paths(bad, multi_sep=";" if bad == ["a;"] else None)


# ---------------------------------------------------------------------- dispatch + describe
def test_load_dispatch_and_describe(tmp_path):
    a = load(write(tmp_path, "x.arff", FUNCAT))
    assert a.metadata["format"] == "arff"
    s = load(write(tmp_path, "x.txt", LIBSVM))          # sniffed
    assert s.metadata["format"] == "libsvm"
    h = load(write(tmp_path, "x.hier", "1 2\n2 3\n"))
    assert h.n_samples == 0 and h.hierarchy.depth(3) == 2
    h2 = load(write(tmp_path, "y.txt", "1 2\n2 3\n"))  # sniffed
    assert h2.metadata["format"] == "lshtc-hierarchy"
    g = load(write(tmp_path, "g.dat", GO))            # sniffed from '@'
    with gzip.open(tmp_path / "x.arff.gz", "wt") as fh:
        fh.write(FUNCAT)
    z = load(tmp_path / "x.arff.gz")
    assert z.name == "x" and z.y == a.y and z.hierarchy == a.hierarchy
    assert not g.hierarchy.is_tree
    with pytest.raises(DataFormatError):
        load(write(tmp_path, "z.dat", "just some words here\n"))
    with pytest.raises(DataFormatError):
        load(tmp_path / "missing.arff")

    text = describe(a)
    assert "tree" in text and "7 nodes" in text and "3 leaves" in text and "depth 3" in text
    assert "samples: 3" in text
    # 4 missing values among 9
    assert f"{4 / 9:.2%}" in text
    assert "mean 2.000 as given" in text and "3.667 closed" in text
    assert f"{2 / 3:.2%} of samples" in text
    assert "DAG" in describe(g) and "nodes with several parents" in describe(g)
    assert "samples: none" in describe(h)
    assert "sparse, density" in describe(s) and "samples: 3" in describe(s)


def test_a_directory_or_an_empty_path_is_named_as_such(tmp_path):
    """A folder is "a directory", whatever its name; renaming it is no fix."""
    for folder in (tmp_path, tmp_path / "d.arff"):
        folder.mkdir(exist_ok=True)
        with pytest.raises(DataFormatError, match="is a directory, not a data file"):
            load(folder)
    with pytest.raises(DataFormatError, match="the path is empty"):
        load("")


def test_a_single_top_level_class_stays_a_class(tmp_path):
    """ARFF paths ``01,01/01``: ``01`` is a class under the artificial root (as in Clus-HMC),
    so a sample labelled ``01`` is labelled, in the hierarchy and in the summary."""
    d = load_arff(write(tmp_path, "one.arff", "@RELATION t\n@ATTRIBUTE x numeric\n"
                        "@ATTRIBUTE class hierarchical 01,01/01\n@DATA\n1,01\n2,01/01\n"))
    assert d.hierarchy.root == ARTIFICIAL_ROOT and d.hierarchy.children(ARTIFICIAL_ROOT) == ("01",)
    text = describe(d)
    assert "samples without labels: 0;" in text and "1.500 closed upward" in text


def test_describe_tells_a_root_label_from_no_label():
    """A sample whose one label is the root is labelled (with nothing), not unlabelled."""
    H = Hierarchy.from_parents({"r": None, "a": "r"})
    d = Dataset(X=np.zeros((3, 1)), y=[frozenset({"a"}), frozenset({"r"}), frozenset()],
                hierarchy=H)
    assert "samples without labels: 1; labelled with the root 'r' only: 1;" in describe(d)


def test_default_data_folder_is_never_inside_an_installed_copy(tmp_path):
    """A checkout (``pyproject.toml`` beside the package): ``shared/data/hmc`` next to it; an
    installed copy (``site-packages``): the user's ``~/hiercvx_data/hmc``."""
    checkout = tmp_path / "work" / "main"
    (checkout / "hiercvx").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'hiercvx'\n")
    assert _common.default_hmc_dir(checkout / "hiercvx") == tmp_path / "work" / "shared" / "data" / "hmc"
    installed = tmp_path / "lib" / "python3.11" / "site-packages" / "hiercvx"
    installed.mkdir(parents=True)
    default = _common.default_hmc_dir(installed)
    assert tmp_path not in default.parents
    assert default == Path(os.path.expanduser("~")) / "hiercvx_data" / "hmc"


def test_describe_per_depth_counts(tmp_path):
    d = load_arff(write(tmp_path, "x.arff", FUNCAT))
    stats = _label_statistics(d.hierarchy, d.y)
    # depth 1 nodes {01, 02}; depth 2 {01/01, 01/02, 02/05}; depth 3 {01/01/03}
    np.testing.assert_array_equal(stats["per_depth"][:, 1:], [[2, 1, 1], [1, 0, 0], [2, 3, 1]])


# ---------------------------------------------------------------------- generators
def _same(a: Dataset, b: Dataset):
    np.testing.assert_array_equal(a.X, b.X)
    if isinstance(a.y, np.ndarray):
        np.testing.assert_array_equal(a.y, b.y)
    else:
        assert a.y == b.y


GENERATORS = {
    "cai": lambda rs: make_cai_synthetic(n_samples=60, random_state=rs),
    "nhsvm_b": lambda rs: make_nhsvm_balanced(n_samples=80, n_features=30, random_state=rs),
    "nhsvm_u": lambda rs: make_nhsvm_unbalanced(n_samples=80, n_features=30, random_state=rs),
    "wang1": lambda rs: make_wang_example1(n_samples=80, random_state=rs),
    "wang2": lambda rs: make_wang_example2(n_samples=80, random_state=rs),
    "wang3": lambda rs: make_wang_example3(n_samples=80, random_state=rs),
}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_deterministic(name):
    gen = GENERATORS[name]
    a, b, c = gen(3), gen(3), gen(4)
    _same(a, b)
    assert not np.array_equal(a.X, c.X)
    _same(gen(np.random.default_rng(5)), gen(np.random.default_rng(5)))
    labels = a.label_sets()
    assert len(labels) == a.n_samples == a.X.shape[0]
    assert all(s and s <= set(a.hierarchy.leaves) for s in labels)
    assert a.bayes_rule is not None and a.bayes_error is not None
    describe(a)


@pytest.mark.parametrize("branching, depth, n_nodes", [(3, 3, 40), (6, 2, 43)])
def test_cai_synthetic(branching, depth, n_nodes):
    d = make_cai_synthetic(n_samples=150, n_features=20, branching=branching, depth=depth,
                           random_state=0)
    H = d.hierarchy
    q = branching ** depth
    assert len(H) == n_nodes and len(H.leaves) == q and d.X.shape == (150, 20)
    assert all(1 <= len(s) < math.sqrt(q) for s in d.y)
    W = d.metadata["node_weights"]
    assert np.all(W[0] == 0)
    # variances decrease with depth: empirical per-depth variance of node weights
    var = [W[H.depths == k].var() for k in range(1, depth + 1)]
    assert all(a > b for a, b in zip(var, var[1:]))
    # independent route: walk each root path by name and sum node weights
    for i in range(10):
        x = d.X[i]
        expect = set()
        for leaf in H.leaves:
            w = sum(W[H.index(v)] for v in H.ancestors(leaf, inclusive=True))
            if w @ x > 0:
                expect.add(leaf)
        assert d.y[i] == frozenset(expect)
    assert d.bayes_rule.predict(d.X) == d.y and d.bayes_error == 0.0


def test_nhsvm_balanced_labels_by_brute_force():
    d = make_nhsvm_balanced(n_samples=200, n_features=25, random_state=1)
    H = d.hierarchy
    assert len(H) == 15 and len(H.leaves) == 8 and max(H.depths) == 3 and H.is_tree
    W = d.metadata["node_weights"]
    for i in range(0, 200, 20):
        pot = {leaf: sum(W[H.index(v)] @ d.X[i] for v in H.ancestors(leaf, inclusive=True))
               for leaf in H.leaves}
        assert d.y[i] == max(pot, key=pot.get)
    np.testing.assert_array_equal(d.bayes_rule.predict(d.X), d.y)
    assert len(np.unique(d.y)) > 4


def test_nhsvm_unbalanced_cascade():
    d = make_nhsvm_unbalanced(n_samples=400, n_features=40, random_state=2)
    H = d.hierarchy
    assert len(H) == 19 and len(H.leaves) == 10 and max(H.depths) == 9
    assert all(len(H.children(v)) in (0, 2) for v in H.nodes)
    np.testing.assert_allclose(np.linalg.norm(d.X, axis=1), 1.0)
    A = d.metadata["normals"]
    for i in range(0, 400, 37):  # walk down the tree by hand
        node = H.root
        k = 0
        while not H.is_leaf(node):
            left, right = H.children(node)
            node = left if A[k] @ d.X[i] < 0 else right
            k += 1
        assert d.y[i] == node
    # about half the mass leaves at the first cut
    assert 0.35 < np.mean(d.y == H.children(H.root)[0]) < 0.65


def test_wang_example1_bayes_error():
    d = make_wang_example1(n_samples=20000, random_state=11)
    H = d.hierarchy
    assert set(H.children(0)) == {4, 5} and set(H.children(5)) == {1, 2, 3}
    assert d.X.min() >= 0 and d.X.max() <= 1
    np.testing.assert_allclose(np.bincount(d.y, minlength=5)[1:] / 20000, [.17, .17, .17, .49],
                               atol=0.015)
    err = np.mean(d.bayes_rule.predict(d.X) != d.y)
    assert abs(err - 0.51) < 0.015 and d.bayes_error == 0.51


def test_wang_example2_bayes_error():
    p = 0.05
    exact = 1 - (6 * ((1 - p) ** 2 + p ** 2) + (1 - p) + (1 - p + p * p)) / 8
    d = make_wang_example2(n_samples=20000, random_state=12)
    assert d.bayes_error == pytest.approx(exact) and abs(exact - 0.083) < 0.001
    H = d.hierarchy
    assert len(H) == 15 and H.parents(1) == (9,) and H.parents(8) == (12,)
    assert H.parents(9) == (13,) and H.parents(12) == (14,) and H.parents(14) == (0,)
    P = d.bayes_rule.predict_proba(d.X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    err = np.mean(d.bayes_rule.predict(d.X) != d.y)
    assert abs(err - exact) < 0.01 and abs(err - 0.083) < 0.01
    # the Bayes rule is the clean label, and every shift moves by one class at most
    np.testing.assert_array_equal(d.bayes_rule.predict(d.X), d.metadata["clean_labels"])
    assert np.abs(d.y - d.metadata["clean_labels"]).max() == 1


def test_wang_example3_bayes_error():
    d = make_wang_example3(n_samples=3000, random_state=13)
    H = d.hierarchy
    assert set(H.children(5)) == {1, 2} and set(H.children(6)) == {3, 4}
    clean = d.metadata["clean_labels"]
    np.testing.assert_array_equal(clean, 1 + 2 * (d.X[:, 0] >= 0) + (d.X[:, 1] >= 0))
    flipped = d.y != clean
    assert flipped.sum() == 600  # exactly 20 %
    # flipped labels go to the other three classes uniformly
    shift = (d.y[flipped] - clean[flipped]) % 4
    assert set(np.unique(shift)) == {1, 2, 3}
    assert np.all(np.abs(np.bincount(shift)[1:] / 600 - 1 / 3) < 0.08)
    # Monte Carlo on fresh data drawn from the stated conditional law
    rng = np.random.default_rng(0)
    Xt = rng.uniform(-1, 1, size=(20000, 2))
    P = d.bayes_rule.predict_proba(Xt)
    yt = 1 + (rng.random(20000)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    err = np.mean(d.bayes_rule.predict(Xt) != yt)
    assert abs(err - 0.2) < 0.015 and d.bayes_error == 0.2


def test_generator_argument_errors():
    with pytest.raises(InputError):
        make_wang_example3(noise=0.9)
    with pytest.raises(InputError):
        make_cai_synthetic(n_samples=0)
    with pytest.raises(InputError):
        make_cai_synthetic(variances=[1.0, -1.0, 0.5])
    with pytest.raises(InputError):
        make_nhsvm_balanced(n_samples=10, n_features=5, random_state="seed")


# ---------------------------------------------------------------------- robustness
def test_lshtc_byte_order_mark_is_not_part_of_an_id(tmp_path):
    H = load_lshtc_hierarchy(write(tmp_path, "h.txt", "\ufeffa b\na c\n"))
    assert H.root == "a" and set(H.children("a")) == {"b", "c"}
    H2 = load_lshtc_hierarchy(write(tmp_path, "h2.txt", "\ufeff1 2\n1 3\n"))
    assert H2.root == 1 and set(H2.nodes) == {1, 2, 3}


@pytest.mark.parametrize("first, second", [("08", "8"), ("+2", "2"), ("1_1", "11"),
                                           ("\u0661", "1"), ("-0", "0"), ("2.0", "2")])
def test_lshtc_distinct_ids_stay_distinct(tmp_path, first, second):
    H = load_lshtc_hierarchy(write(tmp_path, "h.txt", f"{first} x\n{second} y\n"))
    # not every token is a plain integer, so every name keeps its spelling
    assert set(H.nodes) == {"<root>", first, second, "x", "y"}
    assert H.children(first) == ("x",) and H.children(second) == ("y",)


def test_lshtc_ids_are_split_at_ascii_blanks_only(tmp_path):
    H = load_lshtc_hierarchy(write(tmp_path, "h.txt", "a\u00a0b c\n"))
    assert set(H.nodes) == {"a\u00a0b", "c"}
    H2 = load_lshtc_hierarchy(write(tmp_path, "h2.txt", "1\t2\n2 \f 3\n"))
    assert set(H2.nodes) == {1, 2, 3}


@pytest.mark.parametrize("separator", ["\x0c", "\x85", "\u2028", "\u2029", "\x1c", "\x0b"])
def test_line_numbers_ignore_unicode_line_separators(tmp_path, separator):
    comment = f"# a comment with {separator} inside\n"
    with pytest.raises(DataFormatError) as e:
        load_lshtc_hierarchy(write(tmp_path, "h.txt", comment + "1 2\n2 3 4\n"))
    assert e.value.line == 3
    with pytest.raises(DataFormatError) as e:
        load_libsvm(write(tmp_path, "d.svm", comment + "1 1:0.5\n2 1:x\n"))
    assert e.value.line == 3
    arff = (FUNCAT.replace("% the data\n", f"% the data {separator} here\n")
            .replace("-1.25,2,?", "-1.25,x,?"))
    with pytest.raises(DataFormatError) as e:
        load_arff(write(tmp_path, "t.arff", arff))
    assert e.value.line == 11


def test_crlf_and_cr_line_ends_count_as_one_line(tmp_path):
    for newline in ("\r\n", "\r"):
        with pytest.raises(DataFormatError) as e:
            load_libsvm(write(tmp_path, "d.svm", "# c\n1 1:0.5\n2 1:x\n", newline=newline))
        assert e.value.line == 3


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "NaN", "Infinity", "1e999", "-1e400",
                                   "9" * 400, "1_0", "\u0661", "0x1", "1.5.2", ""])
def test_arff_refuses_non_finite_and_non_decimal_values(tmp_path, value):
    arff = FUNCAT.replace("-1.25,2,?,01", f"-1.25,{value},?,01")
    with pytest.raises(DataFormatError) as e:
        load_arff(write(tmp_path, "t.arff", arff))
    assert e.value.line == 11 and str(e.value).startswith(str(tmp_path / "t.arff"))


def test_arff_large_finite_integer_is_read(tmp_path):
    text = FUNCAT.replace("-1.25,2,?,01", f"-1.25,{'9' * 300},?,01")
    d = load_arff(write(tmp_path, "t.arff", text))
    assert d.X[1, 1] == float("9" * 300)


@pytest.mark.parametrize("token, what", [
    ("1:inf", "not a finite decimal"), ("1:nan", "not a finite decimal"),
    ("1:1_0", "not a finite decimal"), ("1:1e999", "overflows"), ("1:" + "9" * 400, "overflows"),
    ("1:\u0661", "not a finite decimal"), ("2147483648:1", "too large"),
    ("99999999999999999999999:1", "too large"), ("-1:1", "negative"),
    ("1_1:1", "not a non-negative"),
    ("1:2 1:3", "repeated"), ("3:1 2:2", "comes after"), ("1:", "not a finite decimal"),
])
def test_libsvm_strict_tokens_name_file_and_line(tmp_path, token, what):
    p = write(tmp_path, "d.svm", f"# header\n1 1:0.5\n2 {token}\n")
    with pytest.raises(DataFormatError) as e:
        load_libsvm(p)
    assert e.value.line == 3 and what in str(e.value)
    assert str(e.value).startswith(f"{p}:3: ")


@pytest.mark.parametrize("label", ["inf", "nan", "1_0", "1e999", "1,,2", "x"])
def test_libsvm_refuses_bad_labels(tmp_path, label):
    with pytest.raises(DataFormatError) as e:
        load_libsvm(write(tmp_path, "d.svm", f"1 1:0.5\n{label} 1:1\n"))
    assert e.value.line == 2


def test_libsvm_largest_index_and_zero_based_options(tmp_path):
    d = load_libsvm(write(tmp_path, "d.svm", f"1 1:0.5 {2**31 - 1}:2\n"))
    assert d.X.shape == (1, 2**31 - 1) and d.X[0, 2**31 - 2] == 2.0
    z = write(tmp_path, "z.svm", "1 0:1 2:3\n2 1:4\n")
    assert load_libsvm(z).X.toarray().tolist() == [[1, 0, 3], [0, 4, 0]]  # auto: zero-based
    with pytest.raises(DataFormatError) as e:
        load_libsvm(z, zero_based=False)
    assert e.value.line == 1
    with pytest.raises(DataFormatError) as e:
        load_libsvm(z, n_features=2)
    assert e.value.line == 1
    for bad in ({"zero_based": "yes"}, {"n_features": -1}, {"n_features": 2.5}):
        with pytest.raises(InputError):
            load_libsvm(z, **bad)


def test_libsvm_byte_order_mark_qid_comments_and_unlabelled_lines(tmp_path):
    d = load_libsvm(write(tmp_path, "d.svm", "\ufeff1,2 qid:7 1:0.5 3:2 # c\n 2:1\n3\n"))
    np.testing.assert_array_equal(d.X.toarray(), [[0.5, 0, 2], [0, 1, 0], [0, 0, 0]])
    assert d.y == [frozenset({1, 2}), frozenset(), frozenset({3})]
    with pytest.raises(DataFormatError, match="no sample"):
        load_libsvm(write(tmp_path, "e.svm", "# only a comment\n\n"))


def test_arff_byte_order_mark_and_quoted_nominal_values_with_commas(tmp_path):
    text = ("\ufeff@relation r\n@attribute a numeric\n"
            "@attribute colour {'red, dark', green, \"x,y\", 'it\\'s'}\n"
            "@attribute class hierarchical A,A/B\n@data\n"
            "1,'red, dark',A/B\n2,\"x,y\",A\n?,green,A\n4,'it\\'s',A\n")
    d = load_arff(write(tmp_path, "q.arff", text))
    assert d.feature_names == ["a", "colour=red, dark", "colour=green", "colour=x,y", "colour=it's"]
    np.testing.assert_array_equal(d.X[:, 1:], np.eye(4)[[0, 2, 1, 3]])
    assert np.isnan(d.X[2, 0]) and d.y[0] == frozenset({"A/B"})
    with pytest.raises(DataFormatError) as e:
        load_arff(write(tmp_path, "u.arff", text.replace("2,\"x,y\",A", "2,'x,y,A")))
    assert e.value.line == 7 and "never closed" in str(e.value)
    with pytest.raises(DataFormatError) as e:
        load_arff(write(tmp_path, "v.arff", text.replace("2,\"x,y\",A", "2,'x, y',A")))
    assert e.value.line == 7 and "'x, y'" in str(e.value)
    same = load_arff(write(tmp_path, "w.arff", text.replace("2,\"x,y\",A", "2,'x,y',A")))
    np.testing.assert_array_equal(same.X, d.X)


def test_gz_input_is_capped_with_a_clear_error(tmp_path, monkeypatch):
    with gzip.open(tmp_path / "d.svm.gz", "wt") as fh:
        fh.write("1 1:0.5\n" * 1000)
    assert load(tmp_path / "d.svm.gz").n_samples == 1000
    monkeypatch.setenv("HIERCVX_MAX_GZ_BYTES", "4096")
    with pytest.raises(DataFormatError) as e:
        load(tmp_path / "d.svm.gz")
    assert "4096" in str(e.value) and "HIERCVX_MAX_GZ_BYTES" in str(e.value)
    monkeypatch.setenv("HIERCVX_MAX_GZ_BYTES", "lots")
    with pytest.raises(InputError, match="HIERCVX_MAX_GZ_BYTES"):
        load(tmp_path / "d.svm.gz")
    (tmp_path / "bad.svm.gz").write_bytes(b"not gzip at all")
    monkeypatch.delenv("HIERCVX_MAX_GZ_BYTES")
    with pytest.raises(DataFormatError, match="cannot be read"):
        load_libsvm(tmp_path / "bad.svm.gz")


def test_non_utf8_file_names_the_line(tmp_path):
    (tmp_path / "h.txt").write_bytes(b"1 2\n2 3\n3 \xff\n")
    with pytest.raises(DataFormatError) as e:
        load_lshtc_hierarchy(tmp_path / "h.txt")
    assert e.value.line == 3 and "UTF-8" in str(e.value)


# ---------------------------------------------------------------------- complex features
def test_complex_features_are_refused_not_truncated():
    from hiercvx._validation import check_features
    from hiercvx.estimators import MulticlassSVC, TopDownSVC

    Z = np.array([[1 + 2j, 0], [0, 1j], [1, 1], [2, 0]])
    for X in (Z, sp.csr_matrix(Z), [[np.complex128(1 + 1j), 2.0]], Z.astype(np.complex64)):
        with pytest.raises(InputError, match="complex"):
            check_features(X)
    flat = Hierarchy.from_parents({"r": None, 0: "r", 1: "r"})
    for estimator in (MulticlassSVC(), TopDownSVC(hierarchy=flat)):
        for X in (Z, sp.csr_matrix(Z)):
            with pytest.raises(InputError, match="complex"):
                estimator.fit(X, [0, 1, 0, 1])
    np.testing.assert_array_equal(check_features(Z.real), Z.real)  # the real part, when asked


# ---------------------------------------------------------------------- as real files come
def test_arff_percent_starts_a_comment_outside_quotes(tmp_path):
    """Weka's rule: ``%`` outside quotes ends the line's content, after a declaration or a
    row as well; inside quotes it is data."""
    text = ("@RELATION r % the relation\n@ATTRIBUTE a numeric % first\n"
            "@ATTRIBUTE c {x,'y%z'} % {legacy}\n"
            "@ATTRIBUTE class hierarchical A,A/A1,B   % FunCat 2.1\n@DATA\n"
            "1,x,A/A1 % note\n2,'y%z',B@A   %another\n")
    d = load_arff(write(tmp_path, "c.arff", text))
    assert set(d.hierarchy.leaves) == {"A/A1", "B"} and d.metadata["relation"] == "r"
    assert d.feature_names == ["a", "c=x", "c=y%z"]
    np.testing.assert_array_equal(d.X, [[1, 1, 0], [2, 0, 1]])
    assert d.y == [frozenset({"A/A1"}), frozenset({"B", "A"})]
    unquoted = load_arff(write(tmp_path, "d.arff", FUNCAT.replace("01/01/03@02\n",
                                                                  "01/01/03@02 % c\n")))
    assert unquoted.y == load_arff(write(tmp_path, "e.arff", FUNCAT)).y


def test_arff_quoted_class_field_and_numbers_are_unquoted(tmp_path):
    text = ("@RELATION r\n@ATTRIBUTE a numeric\n@ATTRIBUTE class hierarchical A,A/A1,B\n@DATA\n"
            "'1.5','A/A1'\n\"2\",\"B@A\"\n'?',B\n")
    d = load_arff(write(tmp_path, "q.arff", text))
    np.testing.assert_array_equal(d.X, [[1.5], [2], [np.nan]])
    assert d.y == [frozenset({"A/A1"}), frozenset({"B", "A"}), frozenset({"B"})]


def test_the_arff_module_docstring_example_loads(tmp_path):
    block = arff_module.__doc__.split("::\n\n", 1)[1]
    lines = []
    for line in block.split("\n"):
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line[4:])
    d = load_arff(write(tmp_path, "doc.arff", "\n".join(lines).strip() + "\n"))
    assert d.feature_names == ["a1", "a2", "colour=red", "colour=green"]
    np.testing.assert_array_equal(d.X, [[0.3, np.nan, 1, 0]])
    assert d.y == [frozenset({"01/01/03", "02"})]


def test_libsvm_labels_keep_their_spelling(tmp_path):
    big = load_libsvm(write(tmp_path, "b.svm", "9007199254740993 1:1\n9007199254740992 2:1\n"))
    assert big.y == [frozenset({9007199254740993}), frozenset({9007199254740992})]
    for hier, data, want in (("r 08\nr 8\n", "08 1:1\n8 2:1\n", ["08", "8"]),
                             ("r 1.0\nr 2\n", "1.0 1:1\n2 2:1\n", ["1.0", "2"]),
                             ("0 9007199254740993\n0 9007199254740992\n",
                              "9007199254740993 1:1\n+9007199254740992 2:1\n",
                              [9007199254740993, 9007199254740992])):
        d = load_libsvm(write(tmp_path, "d.svm", data), hierarchy=write(tmp_path, "h.hier", hier))
        assert d.y == [frozenset({w}) for w in want]


def test_libsvm_single_label_is_a_class_under_the_root(tmp_path):
    d = load_libsvm(write(tmp_path, "one.svm", "7 1:1\n7 2:1\n"))
    assert d.hierarchy.root == ARTIFICIAL_ROOT and d.hierarchy.children(ARTIFICIAL_ROOT) == (7,)
    assert "labelled with the root" not in describe(d)


def test_gzip_is_recognised_by_its_bytes_whatever_the_name(tmp_path):
    plain = load_arff(write(tmp_path, "x.arff", FUNCAT))
    for name in ("x.ARFF.GZ", "renamed.arff"):
        with gzip.open(tmp_path / name, "wt") as fh:
            fh.write(FUNCAT)
        for d in (load_arff(tmp_path / name), load(tmp_path / name)):
            np.testing.assert_array_equal(d.X, plain.X)
            assert d.y == plain.y and d.hierarchy == plain.hierarchy


def test_labels_from_paths_puts_a_given_root_above_a_single_top():
    H, y = labels_from_paths(["A/A1", "A/A2"], root="R")
    assert H.root == "R" and H.children("R") == ("A",) and list(y) == ["A/A1", "A/A2"]
    assert labels_from_paths(["A/A1", "B"], root="R")[0].children("R") == ("A", "B")
    assert labels_from_paths(["A/A1"])[0].root == "A"  # without root: as Hierarchy.from_paths


def test_describe_counts_in_words():
    """``hiercvx data`` / ``describe``: one leaf is "1 leaf", not "1 leaves"."""
    from hiercvx.datasets import Dataset, describe

    H = Hierarchy.from_parents({"r": None, "a": "r"})
    text = describe(Dataset(X=np.zeros((2, 1)), y=["a", "a"], hierarchy=H, name="tiny"))
    assert "2 nodes, 1 edge, 1 leaf," in text
