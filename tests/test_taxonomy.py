"""Taxonomy learning (Cai thesis Algorithm 8) and random hierarchies (thesis 7.4.3).

Independent routes: Algorithm 8's inconsistency coefficients and cut transcribed literally
(lines 13-27) against the scipy-based implementation; centroid distances by explicit class
means (and kernel means) against the Gram-matrix formula (6.1).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster import hierarchy as sch

import hiercvx as hc
from hiercvx import taxonomy as T
from hiercvx.estimators.perceptron import HierarchicalPerceptron
from hiercvx.kernels import Kernel, make_kernel


def _planted(seed, n=600, noise=0.2):
    """Four groups of three classes: groups in two far-apart pairs, classes in tight triangles."""
    rng = np.random.default_rng(seed)
    centres = np.array([[200, 20], [200, -20], [-200, 20], [-200, -20]], float)
    tri = np.array([[1, 0], [-0.5, 0.87], [-0.5, -0.87]])
    cls_c = np.concatenate([c + tri + 0.1 * rng.standard_normal((3, 2)) for c in centres])
    y = rng.integers(0, 12, n)
    X = cls_c[y] + noise * rng.standard_normal((n, 2))
    return X, y, np.repeat(np.arange(4), 3)


def _same_partition(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def _algorithm8_coefficients(Z):
    """Lines 13-24: S = the link's merge distance plus those of the non-leaf clusters it
    merges; IC = (m - mean S) / std S (sample std), 0 when std is 0 / undefined."""
    q = Z.shape[0] + 1
    out = np.zeros(len(Z))
    for t, (a, b, m, _) in enumerate(Z):
        S = [m] + [Z[int(c) - q, 2] for c in (a, b) if c >= q]
        sd = np.std(S, ddof=1) if len(S) > 1 else 0.0
        out[t] = (m - np.mean(S)) / sd if sd > 0 else 0.0
    return out


def _algorithm8_cut(Z, coeff, threshold, rtol=1e-9):
    """Line 27 and the text: links above the threshold (beyond the relative tolerance
    ``rtol``) are cut, and every link built on a cut link is cut too; classes joined by the
    remaining links form one cluster."""
    q = Z.shape[0] + 1
    kept = np.zeros(len(Z), dtype=bool)
    for t, (a, b, _, _) in enumerate(Z):
        kids_ok = all(kept[int(c) - q] for c in (a, b) if c >= q)
        kept[t] = coeff[t] <= threshold + rtol * abs(threshold) and kids_ok
    parent = list(range(2 * q - 1))

    def find(u):
        while parent[u] != u:
            u = parent[u]
        return u
    for t, (a, b, _, _) in enumerate(Z):
        if kept[t]:
            parent[find(int(a))] = q + t
            parent[find(int(b))] = q + t
    return np.array([find(k) for k in range(q)])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10 ** 6), q=st.integers(3, 25), d=st.integers(1, 5))
def test_inconsistency_and_cut_follow_algorithm_8(seed, q, d):
    rng = np.random.default_rng(seed)
    # classes of random sizes around random centres (some clumped): generic dendrograms
    centres = rng.standard_normal((q, d)) * rng.choice([0.3, 3.0], size=(q, 1))
    y = np.concatenate([np.arange(q), rng.integers(0, q, 5 * q)])
    X = centres[y] + 0.1 * rng.standard_normal((len(y), d))
    res = T.learn_taxonomy(X, y)
    Z = res.linkage
    coeff = _algorithm8_coefficients(Z)
    assert np.allclose(res.inconsistency[:, 3], coeff, atol=1e-10)
    assert np.allclose(res.inconsistency[:, 3], sch.inconsistent(Z, 2)[:, 3])
    nonzero = coeff[np.abs(coeff) > 1e-12]
    assert res.threshold == pytest.approx(nonzero.mean() if len(nonzero) else 0.0, abs=1e-10)
    # the cut, on the same coefficients (a coefficient equal to the threshold -- e.g. the only
    # non-zero one -- is not "above" it, and rounding must not decide that)
    assert _same_partition(res.clusters, _algorithm8_cut(Z, res.inconsistency[:, 3], res.threshold))
    # a two-level tree: root -> clusters -> every class once
    H = res.hierarchy
    assert H.is_tree and set(H.leaves) == set(range(q)) and len(H.children(H.root)) == res.n_clusters
    for k, c in enumerate(res.classes):
        assert H.parents(c) == (res.cluster_names[res.clusters[k]],)
    # average linkage over the centroid distances (6.2): each merge height is the mean distance
    members = {k: [k] for k in range(q)}
    for t, (a, b, m, _) in enumerate(Z):
        A, B = members.pop(int(a)), members.pop(int(b))
        assert m == pytest.approx(res.distances[np.ix_(A, B)].mean(), rel=1e-9, abs=1e-12)
        members[q + t] = A + B


@pytest.mark.parametrize("seed", range(5))
def test_planted_cluster_structure_is_recovered(seed):
    X, y, truth = _planted(seed)
    res = T.learn_taxonomy(X, y)
    assert _same_partition(res.clusters, truth)
    H = T.learn_hierarchy(X, y)
    assert H == res.hierarchy and len(H.children(H.root)) == 4
    for g in range(4):
        assert len({H.parents(c) for c in np.flatnonzero(truth == g)}) == 1


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10 ** 6))
def test_noisier_planted_groups_are_refined_never_merged(seed):
    """The thesis calls the learned hierarchy conservative: with noisier classes the groups may
    split, but classes of far-apart groups never share a cluster."""
    X, y, truth = _planted(seed, noise=3.0)
    res = T.learn_taxonomy(X, y)
    far = truth[:, None] // 2 != truth[None, :] // 2  # groups 200 units apart
    assert not np.any((res.clusters[:, None] == res.clusters[None, :]) & far)


def test_centroid_distances_multilabel_and_kernels():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 3))
    Y = [frozenset(rng.choice(["a", "b", "c", "d"], rng.integers(1, 3), replace=False).tolist())
         for _ in range(40)]
    Y[:4] = [frozenset({c}) for c in "abcd"]
    classes, D = T.centroid_distances(X, Y)
    assert classes == ("a", "b", "c", "d")
    member = np.array([[c in s for c in classes] for s in Y])
    C = np.array([X[member[:, k]].mean(axis=0) for k in range(4)])  # an example counts for each class
    assert np.allclose(D, np.linalg.norm(C[:, None] - C[None, :], axis=2))
    # kernelized (6.1): distances between mean feature maps, by explicit kernel means
    k = make_kernel("rbf", sigma=1.5)
    _, Dk = T.centroid_distances(X, Y, kernel=k)
    Kf = k(X)
    ref = np.zeros((4, 4))
    for a in range(4):
        for b in range(4):
            A, B = member[:, a], member[:, b]
            ref[a, b] = np.sqrt(max(Kf[np.ix_(A, A)].mean() + Kf[np.ix_(B, B)].mean()
                                    - 2 * Kf[np.ix_(A, B)].mean(), 0))
    assert np.allclose(Dk, ref)
    _, Dp = T.centroid_distances(Kf, Y, kernel="precomputed")
    assert np.allclose(Dp, ref)
    _, Dc = T.centroid_distances(X, Y, kernel=lambda A, B: k(A, B))
    assert np.allclose(Dc, ref)
    # a precomputed class distance gives the same hierarchy
    assert T.hierarchy_from_distances(Dk, classes).hierarchy == T.learn_hierarchy(X, Y, kernel=k)


def test_learned_hierarchy_trains_a_hierarchical_estimator():
    X, y, _ = _planted(0, n=200)
    H = T.learn_hierarchy(X, y)
    # classes 1 apart, 200 away from the origin: a local (rbf) kernel, not a linear one
    est = HierarchicalPerceptron(hierarchy=H, variant="averaged", kernel=Kernel("rbf", sigma=1.0)).fit(X, y)
    assert set(est.classes_) == set(range(12)) and np.mean(est.predict(X) == y) > 0.9


def test_taxonomy_bad_input():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 2))
    with pytest.raises(ValueError, match="two classes"):
        T.learn_hierarchy(X, np.zeros(10, dtype=int))
    with pytest.raises(ValueError, match="semidefinite|eigenvalue"):
        T.learn_hierarchy(-np.eye(10), np.arange(10) % 3, kernel="precomputed")
    with pytest.raises(ValueError, match="semidefinite|eigenvalue"):
        T.learn_hierarchy(X, np.arange(10) % 3, kernel=lambda A, B: -(A @ B.T) - 5.0)
    with pytest.raises(ValueError, match="no examples"):
        T.learn_hierarchy(X, np.eye(3, dtype=int)[np.arange(10) % 2])
    with pytest.raises(ValueError, match="rows"):
        T.learn_hierarchy(X, np.arange(9) % 3)
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="non-finite"):
        T.learn_hierarchy(Xn, np.arange(10) % 3)
    with pytest.raises(ValueError, match="symmetric"):
        T.hierarchy_from_distances(np.array([[0, 1, 2], [1, 0, 1], [3, 1, 0]]), "abc")
    with pytest.raises(ValueError, match="two classes"):
        T.hierarchy_from_distances(np.zeros((1, 1)), "a")


def test_chain_coefficients_equal_in_exact_arithmetic_are_not_above_their_mean():
    """Each class joining one growing cluster gives every link the coefficient 1/sqrt(2); their
    mean is the threshold, so no link is above it and all classes form one cluster, in every
    row order (without the tolerance, rounding alone decides between 1 and 3 clusters)."""
    y = np.array(["a", "b", "c", "d"])
    for last in (6.0, 7.0, 10.0, 11.0):
        X = np.array([[0.0], [1.0], [3.0], [last]])
        for p in itertools.permutations(range(4)):
            res = T.learn_taxonomy(X[list(p)], y[list(p)])
            assert res.n_clusters == 1
            nonzero = res.inconsistency[:, 3][res.inconsistency[:, 3] != 0]
            np.testing.assert_allclose(nonzero, 1 / np.sqrt(2), rtol=1e-12)


def test_row_order_does_not_change_the_taxonomy():
    rng = np.random.default_rng(1)
    y = np.repeat(list("abcdef"), 3)

    def groups(res):
        return sorted(sorted(map(str, res.hierarchy.children(c))) for c in res.cluster_names)
    for _ in range(60):
        X = np.round(rng.standard_normal((18, 2)) * 3, 1) + rng.choice([0.0, 1e2, 1e4])
        p = rng.permutation(18)
        assert groups(T.learn_taxonomy(X, y)) == groups(T.learn_taxonomy(X[p], y[p]))


def test_inconsistency_statistics_are_scipys_with_equal_distances_at_zero():
    rng = np.random.default_rng(4)
    C = rng.standard_normal((12, 3))
    Z = sch.linkage(C, method="average")
    for d in (1, 2, 3, 4):
        np.testing.assert_allclose(T.inconsistency(Z, d), sch.inconsistent(Z, d), atol=1e-7)
    # merge distances equal up to rounding: a spread of 0, not an arbitrary coefficient
    Z = sch.linkage(np.array([1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 2.0)]), "average")
    assert Z[1, 2] != Z[0, 2] and np.all(T.inconsistency(Z)[:, [1, 3]] == 0)


def test_taxonomy_options_are_refused_naming_the_valid_values():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((12, 2)), np.arange(12) % 4
    D = np.abs(np.subtract.outer(np.arange(4.0), np.arange(4.0)))
    for bad, match in ((dict(threshold=np.nan), "threshold must be a finite number or None"),
                       (dict(threshold=np.inf), "threshold must be a finite number"),
                       (dict(threshold="a"), "threshold must be a finite number"),
                       (dict(depth="x"), "depth must be a positive integer"),
                       (dict(depth=True), "depth must be a positive integer"),
                       (dict(method="bogus"), r"method must be one of \('single', 'complete', 'average'"),
                       (dict(rtol=-1e-9), "rtol must be non-negative"),
                       (dict(rtol=np.nan), "rtol must be a finite number")):
        with pytest.raises(hc.InputError, match=match):
            T.learn_taxonomy(X, y, **bad)
        with pytest.raises(hc.InputError, match=match):
            T.hierarchy_from_distances(D, "abcd", **bad)
    assert T.learn_taxonomy(X, y, method="single", depth=2.0, threshold=1).n_clusters >= 1


def test_samples_without_a_label_are_refused():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    sets = [{"a"}, {"b"}, {"c"}, {"d"}] * 3
    indicator = np.eye(4, dtype=int)[np.arange(12) % 4]
    indicator[5] = 0
    for y in ([set()] + sets[1:], indicator):
        with pytest.raises(hc.LabelError, match="sample (0|5) has no label.*every sample needs a label"):
            T.learn_taxonomy(X, y)
    with pytest.raises(hc.LabelError, match=r"y\[0\] is None: every sample needs a label"):
        T.learn_taxonomy(X, [None] + ["a", "b", "c", "d"] * 2 + ["a", "b", "c"])
    with pytest.raises(hc.LabelError, match="class name is None"):
        T.hierarchy_from_distances(np.ones((3, 3)) - np.eye(3), [None, "b", "c"])


# ------------------------------------------------------------------------------ random hierarchies
@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(lambda s: np.cumsum(s).tolist()),
       seed=st.integers(0, 10 ** 6))
def test_random_hierarchy_has_the_level_sizes(sizes, seed):
    H = T.random_hierarchy(sizes, random_state=seed)
    assert T.hierarchy_level_sizes(H) == tuple(sizes)
    assert H.is_tree and np.all(H.depths[H.leaf_indices] == len(sizes))  # no childless interior node
    assert H == T.random_hierarchy(sizes, random_state=seed)


def test_random_hierarchy_like_a_true_one_is_uniform_and_keeps_classes():
    true = hc.Hierarchy.from_paths([f"{a}/{a}{b}" for a in "xyz" for b in range(3)])
    sizes = T.hierarchy_level_sizes(true)
    assert sizes == (3, 9)
    R = T.random_hierarchy(sizes, random_state=0, classes=true.leaves)
    assert set(R.leaves) == set(true.leaves) and R != true
    # uniform over maps of 3 children onto 2 parents with no childless parent (6 of them)
    counts = {}
    rng = np.random.default_rng(0)
    for _ in range(1200):
        H = T.random_hierarchy((2, 3), random_state=rng, classes=["a", "b", "c"])
        key = tuple(H.parents(c)[0] for c in "abc")
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6 and all(120 < v < 280 for v in counts.values())


def test_random_hierarchy_bad_input():
    with pytest.raises(ValueError, match="not decrease"):
        T.random_hierarchy((3, 2))
    with pytest.raises(ValueError, match="positive"):
        T.random_hierarchy((0, 2))
    with pytest.raises(ValueError, match="classes"):
        T.random_hierarchy((2, 3), classes=["a", "b"])
    with pytest.raises(hc.InputError, match="root name 'x' is also a class name"):
        T.random_hierarchy((2, 3), root="x", classes=["x", "y", "z"])
    with pytest.raises(hc.HierarchyError):
        T.hierarchy_level_sizes(hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")]))


@pytest.mark.parametrize("block", [0, -5, 2.5, True, "8"])
def test_centroid_distances_refuses_a_bad_block(block):
    X = np.random.default_rng(0).standard_normal((12, 2))
    with pytest.raises(hc.InputError, match="block must be a positive integer"):
        T.centroid_distances(X, np.arange(12) % 3, kernel="rbf", sigma=1.0, block=block)


def test_taxonomy_kernel_instances_are_checked_like_make_kernel():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((18, 3))
    y = np.arange(18) % 3
    _, D = T.centroid_distances(X, y, kernel="rbf")
    _, D_inst = T.centroid_distances(X, y, kernel=Kernel("rbf"))
    np.testing.assert_allclose(D_inst, D)
    _, D3 = T.centroid_distances(X, y, kernel="rbf", sigma=3.0)
    np.testing.assert_allclose(T.centroid_distances(X, y, kernel=Kernel("gaussian", sigma=3.0))[1], D3)
    with pytest.raises(hc.InputError, match="carries its own width"):
        T.learn_taxonomy(X, y, kernel=Kernel("rbf", sigma=3.0), sigma=100.0)
    K = X @ X.T
    _, D_lin = T.centroid_distances(X, y)
    np.testing.assert_allclose(T.centroid_distances(K, y, kernel=Kernel("precomputed"))[1], D_lin,
                               atol=1e-10)


@pytest.mark.parametrize("random_state", [1.5, "a", -1])
def test_random_hierarchy_refuses_a_bad_random_state(random_state):
    with pytest.raises(hc.InputError, match="random_state must be"):
        T.random_hierarchy((2, 3), random_state=random_state)


@pytest.mark.parametrize("sizes", [("2", "3"), (True, 2), (2.0, np.nan), (2, None)])
def test_random_hierarchy_refuses_level_sizes_that_are_not_integers(sizes):
    with pytest.raises(hc.InputError, match="level_sizes must be"):
        T.random_hierarchy(sizes)


def test_unhashable_root_and_class_names_are_refused():
    D = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(hc.LabelError, match="hashable"):
        T.hierarchy_from_distances(D, [[1], [2]])
    with pytest.raises(hc.InputError, match="root name must be hashable"):
        T.hierarchy_from_distances(D, ["a", "b"], root=[1])
    X = np.random.default_rng(0).standard_normal((12, 2))
    with pytest.raises(hc.InputError, match="root name must be hashable"):
        T.learn_taxonomy(X, np.arange(12) % 3, root=[1])
