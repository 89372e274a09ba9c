"""MulticlassSVC and HierarchicalSVC: scikit-learn rules, fast vs reference, multi-label, kernels."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import check_estimator

import hiercvx as hc
from hiercvx import testing
from hiercvx.estimators import HierarchicalSVC, MulticlassSVC
from hiercvx.formulations import hsvm, multiclass
from hiercvx.models.multiclass import prepare as prepare_multiclass

# Justified exceptions to scikit-learn's checks:
# - sample-weight equivalence compares decision functions at rtol=1e-7, atol=1e-9; weighting
#   is exact in our objective (C_i = C * w_i, tested below at solver accuracy), but two
#   different QP solves agree only to the certified gap (about 1e-7 on the scores).
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": "scores agree to solver accuracy only",
    "check_sample_weight_equivalence_on_sparse_data": "scores agree to solver accuracy only",
}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(120, 8, n_informative=6, n_redundant=0, n_classes=4,
                               n_clusters_per_class=1, random_state=0)
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b",
                                   "b2": "b"})
    return X, np.array(["a1", "a2", "b1", "b2"])[y], y, H


@pytest.mark.parametrize("Est", [HierarchicalSVC, MulticlassSVC])
@pytest.mark.parametrize("solver", [pytest.param("reference", marks=pytest.mark.slow), "fast"])
def test_check_estimator(Est, solver):
    results = check_estimator(Est(solver=solver, tol=1e-7, max_iter=5000), on_fail=None,
                              expected_failed_checks=EXPECTED_FAILURES)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


def test_fast_matches_reference_and_certificate(data):
    X, yl, _, H = data
    ref = HierarchicalSVC(hierarchy=H, solver="reference", fit_intercept=False).fit(X, yl)
    fast = HierarchicalSVC(hierarchy=H, solver="fast", tol=1e-8, max_iter=20000,
                           fit_intercept=False).fit(X, yl)
    assert ref.gap_ <= 1e-6 and fast.gap_ <= 1e-8
    testing.assert_fast_matches_reference(fast.result_, ref.result_, rtol=1e-6)
    # predictions agree except on exact ties at the optimum (scores agree to ~1e-7)
    S_ref, S_fast = ref.class_scores(X), fast.class_scores(X)
    assert np.allclose(S_ref, S_fast, atol=1e-5)
    top2 = np.sort(S_ref, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4
    assert np.array_equal(ref.predict(X)[clear], fast.predict(X)[clear])
    assert ref.coef_.shape == (len(H), X.shape[1])
    assert set(ref.predict(X)) <= set(H.leaves)


def test_multiclass_equals_crammer_singer_reference(data):
    X, _, y, _ = data
    est = MulticlassSVC(solver="reference", C=0.5, fit_intercept=False).fit(X, y)
    sol = multiclass.primal(X, y, C=0.5).solve()
    testing.assert_same_optimum(est.result_, sol, rtol=1e-6)
    assert np.allclose(est.coef_class_, sol.weights, atol=1e-4)
    assert np.array_equal(est.intercept_, np.zeros(len(est.classes_)))


@pytest.mark.parametrize("solver", ["reference", "fast"])
def test_multiclass_intercept_equals_crammer_singer_reference(data, solver):
    """The default fit_intercept=True is the notes' primal with LIBLINEAR's bias feature."""
    X, _, y, _ = data
    est = MulticlassSVC(solver=solver, C=0.5, intercept_scaling=2.0, tol=1e-8).fit(X, y)
    sol = multiclass.primal(X, y, C=0.5, fit_intercept=True, intercept_scaling=2.0).solve()
    testing.assert_same_optimum(est.result_, sol, rtol=1e-6)
    assert np.allclose(est.coef_class_, sol.weights, atol=1e-4)
    assert est.intercept_.shape == (len(est.classes_),)
    assert np.allclose(est.intercept_, sol.values["intercept"], atol=1e-4)
    S = X @ est.coef_class_.T + est.intercept_
    assert np.allclose(est.class_scores(X), S, atol=1e-10)


def test_multilabel_dag_predicts_label_sets():
    rng = np.random.default_rng(3)
    H = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("A", "y"), ("B", "y"),
                                 ("B", "z")])
    X = rng.standard_normal((60, 5))
    classes = np.array(["x", "y", "z"])
    Y = [set(classes[rng.random(3) < 0.4]) or {classes[i % 3]} for i in range(60)]
    Y = [s if len(s) < 3 else {"x"} for s in Y]
    est = HierarchicalSVC(hierarchy=H, solver="reference", fit_intercept=False).fit(X, Y)
    pred = est.predict(X)
    assert est.multilabel_ and all(isinstance(p, frozenset) and p for p in pred)
    assert est.class_scores(X).shape == (60, 3) and est.decision_function(X).shape == (60, 3)
    ref = hsvm.primal(X, Y, H, classes=tuple(est.classes_)).solve()
    testing.assert_same_optimum(est.result_, ref)
    assert 0 <= est.score(X, Y) <= 1


def test_kernels_and_grid_search(data):
    X, yl, _, H = data
    rbf = HierarchicalSVC(hierarchy=H, kernel="rbf", solver="fast").fit(X, yl)
    rbf_ref = HierarchicalSVC(hierarchy=H, kernel="rbf", solver="reference").fit(X, yl)
    testing.assert_same_optimum(rbf.result_, rbf_ref.result_, rtol=1e-5)
    K = rbf.kernel_(X)
    pre = HierarchicalSVC(hierarchy=H, kernel="precomputed", solver="reference").fit(K, yl)
    assert np.allclose(pre.decision_function(K), rbf_ref.decision_function(X), atol=1e-5)
    search = GridSearchCV(HierarchicalSVC(hierarchy=H), {"C": [0.1, 1.0]}, cv=3,
                          scoring=hc.metrics.get_scorer("hierarchical_f1", hierarchy=H))
    search.fit(X, yl)
    assert search.best_params_["C"] in (0.1, 1.0)


def test_bad_input(data):
    X, yl, _, H = data
    with pytest.raises(ValueError, match="positive"):
        HierarchicalSVC(hierarchy=H, C=0).fit(X, yl)
    with pytest.raises(ValueError, match="solver"):
        HierarchicalSVC(hierarchy=H, solver="magic").fit(X, yl)
    with pytest.raises(hc.LabelError):
        HierarchicalSVC(hierarchy=H).fit(X, np.where(yl == "a1", "zz", yl))
    with pytest.raises(hc.LabelError, match="internal_labels='self_leaf'"):  # internal node, refused
        HierarchicalSVC(hierarchy=H, internal_labels="refuse").fit(X, np.where(yl == "a1", "a", yl))
    with pytest.raises(ValueError, match="internal_labels"):
        HierarchicalSVC(hierarchy=H, internal_labels="map").fit(X, yl)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        HierarchicalSVC(hierarchy=H).fit(Xn, yl)
    with pytest.raises(ValueError, match="semidefinite|eigenvalue"):
        HierarchicalSVC(hierarchy=H, kernel="precomputed").fit(-np.eye(len(yl)), yl)


@pytest.mark.parametrize("make", [
    lambda: MulticlassSVC(tol=1e-6, solver_options={"warm_start": True}),
    lambda: HierarchicalSVC(tol=1e-6, solver_options={"warm_start": True})])
def test_warm_start_along_a_C_path(make):
    """warm_start reuses the previous dual (projected onto the new budget) in the coordinate
    methods (the engine's interior-point method has no use for a dual start): same certified
    optimum as a cold fit at every C.  Cold fits of these 5-feature problems go to the
    interior-point method."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 5))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + 0.8 * rng.standard_normal((120, 3)), axis=1)]
    warm = make()
    for k, C in enumerate((0.1, 0.3, 1.0, 3.0)):
        warm.set_params(C=C).fit(X, y)
        cold = clone(warm).set_params(solver_options=None).fit(X, y)
        assert warm.gap_ <= 1e-6 and cold.gap_ <= 1e-6
        np.testing.assert_allclose(warm.objective_, cold.objective_, rtol=3e-6)
        assert cold.result_.solver == "interior_point"
        assert warm.result_.solver == ("interior_point" if k == 0
                                       else ("crammer_singer", "working_set")[
                                           isinstance(warm, HierarchicalSVC)])
    # a different training set (other number of dual variables): a cold start, not an error
    warm.fit(X[:60], y[:60])
    assert warm.gap_ <= 1e-6 and warm.result_.solver == "interior_point"


def test_n_iter_counts_the_exact_steps_of_a_warm_fit():
    """A warm fit at a nearby C that the exact steps certify before any pass reports those
    steps as its iterations, not 0; a fit that starts at the optimum reports 0."""
    from hiercvx.datasets import make_cai_synthetic
    ds = make_cai_synthetic(random_state=0)
    est = HierarchicalSVC(hierarchy=ds.hierarchy, solver_options={"warm_start": True})
    est.fit(ds.X, ds.y)
    est.set_params(C=2.0).fit(ds.X, ds.y)
    steps = est.result_.extras["n_newton"]
    assert est.result_.solver == "working_set" and est.gap_ <= 1e-6
    assert steps >= 1 and est.n_iter_ == est.result_.n_iter + steps
    est.fit(ds.X, ds.y)  # the same C again: already optimal
    assert est.n_iter_ == 0 and est.gap_ <= 1e-6


def test_warm_start_on_label_sets_stays_with_the_label_set_engine():
    """A C path on label sets: every warm fit runs the label-set engine (started from the
    previous dual), at the cold fit's certified optimum."""
    from labelset_cases import dag, label_sets
    H = dag()
    X, Y = label_sets(H, 40, 4, seed=5)
    engine = {"labelset_from_pairs": 1, "interior_point": {"max_dimension": 1}}
    warm = HierarchicalSVC(hierarchy=H, tol=1e-7, solver_options={**engine, "warm_start": True})
    for C in (0.2, 1.0, 5.0):
        warm.set_params(C=C).fit(X, Y)
        cold = clone(warm).set_params(solver_options=engine).fit(X, Y)
        assert warm.result_.solver == cold.result_.solver == "labelset"
        assert warm.gap_ <= 1e-7 and cold.gap_ <= 1e-7
        np.testing.assert_allclose(warm.objective_, cold.objective_, rtol=1e-6)


def test_multiclass_defaults_match_linearsvc_crammer_singer():
    """MulticlassSVC() and LinearSVC(multi_class="crammer_singer") at their defaults (C=1,
    fit_intercept=True, intercept_scaling=1: LIBLINEAR's regularized bias column) solve the
    same problem: same LIBLINEAR objective (LinearSVC run to tol=1e-8 so that its stopping
    rule does not limit the comparison) and the same predictions."""
    X, y = make_classification(150, 6, n_informative=4, n_redundant=0, n_classes=3,
                               n_clusters_per_class=1, random_state=1)
    X = X + 2.0  # a bias matters: the classes are not centred at the origin
    ours = MulticlassSVC(tol=1e-8).fit(X, y)
    lib = LinearSVC(multi_class="crammer_singer", tol=1e-8, max_iter=200_000).fit(X, y)
    model = prepare_multiclass(X, y, fit_intercept=True, intercept_scaling=1.0)
    obj_lib = model.objective(lib.coef_, 1.0, intercept=lib.intercept_)
    obj_ours = model.objective(ours.coef_class_, 1.0, intercept=ours.intercept_)
    assert abs(obj_ours - ours.objective_) <= 1e-8 * max(1.0, ours.objective_)
    # ours is certified within tol; LIBLINEAR's dual stopping rule leaves it slightly above
    assert obj_ours <= obj_lib * (1 + 1e-6)
    assert obj_lib <= obj_ours * (1 + 1e-4)
    np.testing.assert_allclose(ours.coef_class_, lib.coef_, atol=1e-2)
    np.testing.assert_allclose(ours.intercept_, lib.intercept_, atol=1e-2)
    assert np.array_equal(ours.predict(X), lib.predict(X))


def test_hierarchical_intercept_is_the_bias_column(data):
    """fit_intercept=True is the model on [X, s]; intercept_ is that column times s, per node;
    fit_intercept=False is the model on X itself (the former behaviour)."""
    X, yl, _, H = data
    s = 3.0
    est = HierarchicalSVC(hierarchy=H, intercept_scaling=s, tol=1e-8, max_iter=20000).fit(X, yl)
    ref = hsvm.primal(np.hstack([X, np.full((len(X), 1), s)]), yl, H,
                      classes=tuple(est.classes_)).solve()
    testing.assert_same_optimum(est.result_, ref, rtol=1e-5)
    assert est.coef_.shape == (len(H), X.shape[1]) and est.intercept_.shape == (len(H),)
    W = np.hstack([est.coef_, est.intercept_[:, None] / s])
    assert np.allclose(W, ref.weights, atol=1e-3)
    off = HierarchicalSVC(hierarchy=H, fit_intercept=False, tol=1e-8, max_iter=20000).fit(X, yl)
    testing.assert_same_optimum(off.result_, hsvm.primal(X, yl, H, classes=tuple(off.classes_)).solve(),
                                rtol=1e-5)
    assert np.array_equal(off.intercept_, np.zeros(len(H)))
    # sparse input: the bias column is appended to the CSR matrix alike
    sparse = HierarchicalSVC(hierarchy=H, intercept_scaling=s, tol=1e-8, max_iter=20000).fit(
        sp.csr_matrix(X), yl)
    np.testing.assert_allclose(sparse.objective_, est.objective_, rtol=1e-6)
    assert np.allclose(sparse.class_scores(sp.csr_matrix(X)), est.class_scores(X), atol=1e-4)


def test_kernel_intercept_is_a_constant_in_the_kernel(data):
    """With a non-linear kernel the bias feature enters the kernel: rbf + s^2, the same as a
    precomputed Gram matrix K + s^2 (both at fit and at predict)."""
    X, yl, _, H = data
    rbf = HierarchicalSVC(hierarchy=H, kernel="rbf", intercept_scaling=2.0, solver="reference").fit(X, yl)
    K = rbf.kernel_(X)
    shifted = HierarchicalSVC(hierarchy=H, kernel="precomputed", fit_intercept=False,
                              solver="reference").fit(K + 4.0, yl)
    testing.assert_same_optimum(rbf.result_, shifted.result_, rtol=1e-5)
    assert np.allclose(rbf.decision_function(X), shifted.decision_function(K + 4.0), atol=1e-4)
    pre = HierarchicalSVC(hierarchy=H, kernel="precomputed", intercept_scaling=2.0,
                          solver="reference").fit(K, yl)
    assert np.allclose(pre.decision_function(K), rbf.decision_function(X), atol=1e-4)
    with pytest.raises(ValueError, match="intercept_scaling"):
        HierarchicalSVC(hierarchy=H, intercept_scaling=0.0).fit(X, yl)
