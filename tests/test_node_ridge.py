"""NodeKernelRidge: the kernel ridge solution of every node at once, its exact leave-one-out
outputs, calibrated node scores that never exceed an ancestor's, label sets and single labels."""

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.utils.estimator_checks import check_estimator

from hiercvx import Hierarchy, metrics
from hiercvx.targets import flat_hierarchy
from hiercvx.estimators import NodeKernelRidge
from hiercvx.estimators.node_ridge import ridge_certificate
from hiercvx.exceptions import InputError, LabelError
from hiercvx.kernels import Kernel
from hiercvx.methods.cases import problem

X, Y, H = problem("multilabel", n=40, d=4, seed=0)
KERNEL = Kernel("rbf", sigma=1.5)


def test_ridge_outputs_are_kernel_ridge_of_the_centered_node_indicators():
    est = NodeKernelRidge(hierarchy=H, alpha=0.7, kernel=KERNEL).fit(X, Y)
    T = np.asarray(H.closure(Y), dtype=float)
    ref = KernelRidge(alpha=0.7, kernel="rbf", gamma=1 / (2 * 1.5 ** 2)).fit(X, T - T.mean(0))
    X_new = X[:7] + 0.1
    np.testing.assert_allclose(est.node_decision_function(X_new, method="ridge"),
                               ref.predict(X_new) + T.mean(0), atol=1e-8)


def test_fit_is_certified_against_an_independent_solve_and_the_bound_can_fail():
    est = NodeKernelRidge(hierarchy=H, alpha=0.7, kernel=KERNEL).fit(X, Y)
    assert abs(est.gap_) < 1e-10
    T = np.asarray(H.closure(Y), dtype=float)
    R = T - T.mean(0)
    K = KERNEL(X)
    # scikit-learn's Cholesky solve: the same optimum, within the certified gap
    ref = KernelRidge(alpha=0.7, kernel="rbf", gamma=1 / (2 * 1.5 ** 2)).fit(X, R)
    ref_objective, ref_bound = ridge_certificate(K, R, ref.dual_coef_, alpha=0.7)
    assert est.objective_ == pytest.approx(ref_objective, rel=1e-9)
    # weak duality: each bound sits below the other solve's objective
    assert est.lower_bound_ <= ref_objective * (1 + 1e-12)
    assert ref_bound <= est.objective_ * (1 + 1e-12)
    # coefficients off the optimum: the objective rises and the certificate says so
    off = est.dual_coef_ * 1.01
    objective, bound = ridge_certificate(K, R, off, alpha=0.7)
    assert objective > est.objective_
    assert (objective - bound) / objective > 1e-5
    # at U = 2 alpha A the gap is the squared residual of (K + alpha I) A = R
    residual = R - (K + 0.7 * np.eye(len(K))) @ off
    assert objective - bound == pytest.approx(np.sum(residual ** 2), rel=1e-8)


def test_calibration_is_fitted_on_exact_leave_one_out_outputs():
    est = NodeKernelRidge(hierarchy=H, alpha=0.5, kernel=KERNEL, shrinkage=None).fit(X, Y)
    T = np.asarray(H.closure(Y), dtype=float)
    R = T - T.mean(0)
    loo = np.empty_like(R)
    for i in range(len(X)):   # refit without sample i (the centering kept, as the estimator does)
        keep = np.arange(len(X)) != i
        model = KernelRidge(alpha=0.5, kernel="rbf", gamma=1 / (2 * 1.5 ** 2)).fit(X[keep], R[keep])
        loo[i] = model.predict(X[i:i + 1])[0]
    ref = metrics.fit_node_calibration(loo, T, H, method="leave_one_out")
    assert est.node_calibration_.slope == pytest.approx(ref.slope, rel=1e-6)
    assert est.node_calibration_.intercept == pytest.approx(ref.intercept, rel=1e-6)


def test_calibrated_scores_are_consistent_and_rank_the_nodes():
    est = NodeKernelRidge(hierarchy=H, kernel=KERNEL).fit(X, Y)
    N = est.node_decision_function(X)
    assert N.shape == (len(X), len(H.nodes)) and np.all(np.isfinite(N))
    for k, v in enumerate(H.nodes):
        for a in H.ancestors(v):
            assert np.all(N[:, k] <= N[:, H.index(a)] + 1e-12)
    frequency = np.broadcast_to(metrics.node_log_odds(Y, H), N.shape)
    assert metrics.au_prc(Y, N, H, y_train=Y) > metrics.au_prc(Y, frequency, H, y_train=Y)
    pred = est.predict(X)
    assert len(pred) == len(X) and all(isinstance(s, frozenset) and s for s in pred)
    assert 0.0 < est.score(X, Y) <= 1.0
    np.testing.assert_array_equal(est.decision_function(X), N)


def test_single_labels_and_refusals():
    Xs, ys, Hs = problem("tree", n=30, d=3, seed=1)
    est = NodeKernelRidge(hierarchy=Hs).fit(Xs, ys)
    assert set(est.predict(Xs)) <= set(ys) and est.decision_function(Xs).shape[1] == len(set(ys))
    with pytest.raises(InputError, match="hierarchy"):
        NodeKernelRidge(hierarchy={"r": None, "a": "r"}).fit(Xs, ys)
    with pytest.raises(LabelError, match="not nodes"):
        NodeKernelRidge(hierarchy=Hs).fit(Xs, ["nope"] * len(ys))
    with pytest.raises(InputError, match="alpha"):
        NodeKernelRidge(hierarchy=Hs, alpha=0.0).fit(Xs, ys)
    with pytest.raises(InputError, match="max_samples"):
        NodeKernelRidge(hierarchy=Hs, max_samples=10).fit(Xs, ys)
    with pytest.raises(InputError, match="method must be one of"):
        est.node_decision_function(Xs, method="nope")


def test_multiscale_kernel_is_the_mean_of_its_gaussians_and_a_kernel():
    from hiercvx.kernels import MultiScaleRBF
    k = MultiScaleRBF((1.0, 2.0, 4.0))
    A, B = X[:9], X[5:20] + 0.3
    expected = sum(Kernel("rbf", sigma=s)(A, B) for s in (1.0, 2.0, 4.0)) / 3
    np.testing.assert_allclose(k(A, B), expected, rtol=1e-12)
    np.testing.assert_allclose(np.diag(k(A)), 1.0)
    assert np.linalg.eigvalsh(k(X)).min() > -1e-10
    # in an estimator: the ridge outputs are scikit-learn's on the same Gram matrix
    est = NodeKernelRidge(hierarchy=H, alpha=0.7, kernel=k).fit(X, Y)
    T = np.asarray(H.closure(Y), dtype=float)
    ref = KernelRidge(alpha=0.7, kernel="precomputed").fit(k(X), T - T.mean(0))
    np.testing.assert_allclose(est.node_decision_function(B, method="ridge"),
                               ref.predict(k(B, X)) + T.mean(0), atol=1e-8)
    for bad in ((), (1.0, 0.0), (np.inf,), (-2.0,)):
        with pytest.raises(InputError, match="positive, finite widths"):
            MultiScaleRBF(bad)


def test_score_reads_the_test_labels_without_changing_the_fit():
    est = NodeKernelRidge(hierarchy=H, kernel=KERNEL).fit(X, Y)
    first = est.score(X, Y)
    est.score(X[:5], [next(iter(s)) for s in Y[:5]])   # single labels at test time
    assert est.multilabel_ and est.score(X, Y) == first


def test_without_a_hierarchy_the_labels_seen_sit_under_one_root():
    Xs, ys, Hs = problem("tree", n=30, d=3, seed=1)
    flat = NodeKernelRidge(kernel=KERNEL).fit(Xs, ys)
    H = flat_hierarchy(sorted(set(ys)))
    given = NodeKernelRidge(hierarchy=H, kernel=KERNEL).fit(Xs, ys)
    assert flat.hierarchy is None and flat.hierarchy_.nodes == H.nodes
    np.testing.assert_array_equal(flat.classes_, given.classes_)
    np.testing.assert_allclose(flat.decision_function(Xs), given.decision_function(Xs))
    sets = NodeKernelRidge(kernel=KERNEL).fit(X, Y)   # label sets: every node of the flat tree
    seen = sorted({v for s in Y for v in s})
    assert sets.multilabel_ and list(sets.classes_[1:]) == seen
    with pytest.raises(ValueError):
        NodeKernelRidge().fit(Xs, [ys[0]] + [{ys[1]}] * (len(ys) - 1))   # a mix, no hierarchy


def test_two_classes_give_one_column_positive_for_the_second():
    Xs, ys, Hs = problem("tree", n=30, d=3, seed=1)
    two = np.where(np.asarray(ys) == ys[0], ys[0], "other")
    est = NodeKernelRidge(kernel=KERNEL).fit(Xs, two)
    N = est.node_decision_function(Xs)[:, est.hierarchy_.indices(list(est.classes_))]
    d = est.decision_function(Xs)
    assert d.shape == (len(Xs),)
    np.testing.assert_allclose(d, N[:, 1] - N[:, 0])
    np.testing.assert_array_equal(est.predict(Xs), est.classes_[(d > 0).astype(int)])


def test_check_estimator():
    results = check_estimator(NodeKernelRidge(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


# ------------------------------------------------- single labels that stop at an internal node
TREE = Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                               "B1": "B", "B2": "B"})
CENTERS = {"A1": [3, 0, 0], "A2": [0, 3, 0], "B1": [0, 0, 3], "B2": [-3, -3, 0], "A": [3, 3, 3]}


def _clusters(labels, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.array(labels)
    X = np.array([CENTERS[c] for c in labels], float) + 0.3 * rng.standard_normal((len(labels), 3))
    return X, labels


def test_an_internal_training_label_does_not_take_its_subtree():
    X, truth = _clusters(["A1", "A2", "B1", "B2"] * 10)
    y = truth.copy()
    y[0] = "A"   # one A1 sample labelled at its parent
    est = NodeKernelRidge(hierarchy=TREE).fit(X, y)
    assert "A" in est.classes_
    pred = est.predict(X)
    in_A = np.isin(truth, ["A1", "A2"])
    np.testing.assert_array_equal(pred[in_A], truth[in_A])
    assert est.score(X, y) >= 0.975
    # predict is the argmax of decision_function; a leaf class keeps its calibrated node score
    D = est.decision_function(X)
    np.testing.assert_array_equal(pred, est.classes_[np.argmax(D, axis=1)])
    leaf = [k for k, c in enumerate(est.classes_) if TREE.is_leaf(c)]
    N = est.node_decision_function(X)[:, TREE.indices(list(est.classes_[leaf]))]
    np.testing.assert_allclose(D[:, leaf], N)
    # the internal class is still predicted where its own samples lie
    X2, y2 = _clusters(["A1", "A2", "B1", "B2", "A"] * 8, seed=1)
    assert NodeKernelRidge(hierarchy=TREE).fit(X2, y2).score(X2, y2) == 1.0


def test_two_classes_one_the_parent_of_the_other():
    X, y = _clusters(["A1", "A"] * 10)
    est = NodeKernelRidge(hierarchy=TREE).fit(X, y)
    d = est.decision_function(X)
    assert list(est.classes_) == ["A", "A1"] and d.shape == (len(X),)
    np.testing.assert_array_equal(est.predict(X), y)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(d > 0).astype(int)])


def test_a_tie_goes_to_the_descendant_not_to_the_ancestor():
    X, y = _clusters(["A1", "A2", "B1", "B2", "A"] * 4)
    est = NodeKernelRidge(hierarchy=TREE).fit(X, y)
    assert est.classes_[0] == "A"   # first in classes_ order: a plain argmax would pick it
    est._class_scores = lambda X: np.zeros((len(X), len(est.classes_)))   # every class tied
    assert set(est.predict(X[:3])) == {"A1"}


def test_single_label_score_reduces_label_sets_with_their_ancestors():
    X, y = _clusters(["A1", "A2", "B1", "B2"] * 4)
    est = NodeKernelRidge(hierarchy=TREE).fit(X, y)
    sets = [{"root", v[0], v} for v in y]
    assert est.score(X, sets) == est.score(X, y) == 1.0
    with pytest.raises(LabelError, match="several most specific labels"):
        est.score(X, [{"A1", "B1"}] + sets[1:])


def test_a_01_indicator_is_read_over_the_leaves_as_every_estimator_reads_it():
    import scipy.sparse as sp
    from hiercvx.estimators import HierarchicalSVC

    H = Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                                "B1": "B", "B2": "B"})
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    Yi = np.zeros((20, 4), int)
    Yi[np.arange(20), np.arange(20) % 4] = 1
    Yi[::3, 3] = 1
    sets = [frozenset(np.array(H.leaves)[row.astype(bool)].tolist()) for row in Yi]
    a = NodeKernelRidge(hierarchy=H).fit(X, Yi)
    b = NodeKernelRidge(hierarchy=H).fit(X, sets)
    np.testing.assert_allclose(a.node_decision_function(X), b.node_decision_function(X))
    assert a.score(X, Yi) == a.score(X, sp.csr_matrix(Yi)) == a.score(X, sets)
    # fitted on the leaf indicator, it answers in it: leaves only
    assert a.predict(X).shape == Yi.shape and all(len(s) for s in b.predict(X))
    assert HierarchicalSVC(hierarchy=H).fit(X, Yi).classes_.tolist() == list(H.leaves)
    with pytest.raises(LabelError, match=r"one column per leaf of the hierarchy \(4, in H.leaves order\) or one per node "
                                          r"\(7, .*got 3 columns"):
        NodeKernelRidge(hierarchy=H).fit(X, Yi[:, :3])
