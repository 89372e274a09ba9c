"""Crammer--Singer references: the primal is LIBLINEAR's objective, the dual is the lecture
notes' multi-class kernel SVM dual; both certified and checked against independent routes."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC
from sklearn.utils.class_weight import compute_class_weight

import hiercvx as hc
from hiercvx.formulations import multiclass
from hiercvx.testing import assert_certified, assert_same_optimum, solve_with_each


def blobs(n=36, d=4, q=3, seed=0, labels=None):
    rng = np.random.default_rng(seed)
    y_index = np.arange(n) % q
    rng.shuffle(y_index)
    centers = 1.5 * rng.standard_normal((q, d))
    X = centers[y_index] + rng.standard_normal((n, d))
    y = y_index if labels is None else np.asarray(labels)[y_index]
    return X, y


def liblinear_fit(X, y, C, **kw):
    sample_weight = kw.pop("sample_weight", None)
    clf = LinearSVC(multi_class="crammer_singer", C=C, tol=1e-10, max_iter=100_000, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clf.fit(X, y, sample_weight=sample_weight)


def at(clf, fit_intercept):
    """LIBLINEAR's solution as values of the reference's variables."""
    values = {"W": clf.coef_}
    if fit_intercept:
        values["intercept"] = clf.intercept_
    return values


# --------------------------------------------------------------------- primal == LIBLINEAR

SW = np.random.default_rng(5).uniform(0.3, 2.0, 36)


@pytest.mark.parametrize("kw", [
    dict(fit_intercept=False),
    dict(fit_intercept=True),
    dict(fit_intercept=True, intercept_scaling=3.0, sample_weight=SW),
    dict(fit_intercept=True, class_weight={"b": 2.5, "c": 0.4}, sample_weight=SW),
    dict(fit_intercept=False, class_weight="balanced", sample_weight=SW),
], ids=["plain", "intercept", "scaling+sw", "dict_cw+sw", "balanced+sw"])
def test_primal_optimum_equals_liblinear_objective(kw):
    X, y = blobs(labels=["c", "a", "b"])  # unsorted names: rows must follow classes_
    C = 0.7
    prob = multiclass.primal(X, y, C=C, **kw)
    sol = prob.solve()
    assert_certified(sol, 1e-7)
    clf = liblinear_fit(X, y, C, **kw)
    assert list(prob.data["classes"]) == list(clf.classes_)
    lib = prob.objective_value(at(clf, kw["fit_intercept"]))
    # the reference at LIBLINEAR's point: equal to the optimum (LIBLINEAR is inexact) and
    # never below the certified lower bound
    assert abs(lib - sol.objective) <= 1e-4 * abs(sol.objective)
    assert lib >= sol.lower_bound - 1e-9 * abs(sol.objective)
    # strictly convex in (W, b): the minimizers agree too
    np.testing.assert_allclose(sol.weights, clf.coef_, atol=1e-4)
    if kw["fit_intercept"]:
        np.testing.assert_allclose(sol.values["intercept"], clf.intercept_, atol=1e-4)


def test_a_different_objective_does_not_match_liblinear():
    """The comparison can fail: dropping the intercept penalty or the 1/2 changes the optimum."""
    X, y = blobs(seed=3)
    clf = liblinear_fit(X, y, 1.0, fit_intercept=True)
    sol = multiclass.primal(X, y, C=2.0, fit_intercept=True).solve()  # 1/2 removed <=> C doubled
    lib = multiclass.primal(X, y, C=2.0, fit_intercept=True).objective_value(at(clf, True))
    assert lib - sol.objective > 1e-3 * sol.objective


def test_class_weights_match_scikit_learn():
    X, y = blobs(n=30, labels=["x", "y", "z"])
    sw = np.linspace(0.5, 2.0, 30)
    classes, y_index = multiclass.encode_labels(y, 30)
    cw = compute_class_weight("balanced", classes=classes, y=y, sample_weight=sw)
    np.testing.assert_allclose(multiclass.example_weights(y_index, classes, sw, "balanced"),
                               sw * cw[y_index])
    np.testing.assert_allclose(multiclass.example_weights(y_index, classes, None, {"y": 3.0}),
                               np.where(y == "y", 3.0, 1.0))


def test_binary_problem_is_a_hinge_svm_with_double_c():
    """Two classes: scikit-learn reports coef_[1] - coef_[0]; the optimum has w_0 = -w_1, so
    the objective is 1/4 ||c||^2 + C sum hinge, the binary hinge SVM with C' = 2C."""
    X, y = blobs(n=30, q=2, seed=2, labels=[7, 2])
    sol = multiclass.primal(X, y, C=0.5, fit_intercept=True).solve()
    W, b = sol.weights, sol.values["intercept"]
    np.testing.assert_allclose(W[0], -W[1], atol=1e-7)
    cs = liblinear_fit(X, y, 0.5, fit_intercept=True)
    np.testing.assert_allclose(W[1] - W[0], cs.coef_[0], atol=1e-4)
    np.testing.assert_allclose(b[1] - b[0], cs.intercept_[0], atol=1e-4)
    hinge = LinearSVC(loss="hinge", C=1.0, tol=1e-10, max_iter=200_000, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        hinge.fit(X, y)
    np.testing.assert_allclose(W[1] - W[0], hinge.coef_[0], atol=1e-3)


def test_sparse_input_and_c_sweep():
    X, y = blobs(seed=4)
    dense = multiclass.primal(X, y, C=1.0, fit_intercept=True)
    sparse = multiclass.primal(sp.csr_matrix(X), y, C=1.0, fit_intercept=True)
    at_one = sparse.solve()
    assert_same_optimum(dense.solve(), at_one, 1e-7)
    swept = dense.set(C=4.0).solve()  # re-solves with the parameter, no new declaration
    fresh = multiclass.primal(X, y, C=4.0, fit_intercept=True).solve()
    assert_same_optimum(swept, fresh, 1e-7)
    assert swept.objective > at_one.objective


def test_primal_two_solvers_agree():
    X, y = blobs(seed=6)
    sols = solve_with_each(lambda: multiclass.primal(X, y, C=0.8, fit_intercept=True),
                           ["CLARABEL", "ECOS"], gap_tol=1e-6)
    a, b = sols.values()
    assert_same_optimum(a, b, 1e-6)
    osqp = multiclass.primal(X, y, C=0.8, fit_intercept=True).solve(
        "OSQP", gap_tol=1e-5, eps_abs=1e-9, eps_rel=1e-9, max_iter=100_000)
    assert_same_optimum(a, osqp, 1e-6)


# --------------------------------------------------------------------- dual

def test_linear_dual_equals_primal_and_recovers_its_weights():
    X, y = blobs(seed=7, labels=["p", "q", "r"])
    sw = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    kw = dict(C=0.6, sample_weight=sw, class_weight={"q": 2.0})
    p = multiclass.primal(X, y, **kw).solve()
    d = multiclass.dual(X, y, **kw).solve()
    assert_certified(d, 1e-7)
    assert_same_optimum(p, d, 1e-7)
    assert abs(d.solver_objective - p.objective) <= 1e-6 * p.objective  # the declared dual's value
    np.testing.assert_allclose(d.weights.linear_weights, p.weights, atol=1e-5)
    np.testing.assert_allclose(d.weights.decision_function(X), X @ p.weights.T, atol=1e-5)
    assert list(d.weights.classes) == ["p", "q", "r"]


def test_notes_recovery_sign_typo():
    """The notes' final algorithm scores with f_y = sum_i (-1)^{delta(c_i, y)} lambda_iy Phi(x_i):
    that is -f_y (it predicts the least likely class).  The Kuhn-Tucker form, and the sign
    +1 for y = c_i, -1 otherwise, recover the primal's class functions."""
    X, y = blobs(seed=8)
    p = multiclass.primal(X, y, C=1.0).solve()
    d = multiclass.dual(X, y, C=1.0).solve()
    Lam = d.values["Lambda"]
    Y = np.eye(3, dtype=bool)[y]
    notes_literal = np.where(Y, -1.0, 1.0) * Lam  # (-1)^delta
    corrected = multiclass.recover_coefficients(Lam, Y)
    np.testing.assert_allclose(X @ (X.T @ corrected), X @ p.weights.T, atol=1e-5)
    np.testing.assert_allclose(X @ (X.T @ notes_literal), -X @ p.weights.T, atol=1e-5)
    # the notes' equality lambda_{i c_i} = sum_{y != c_i} lambda_iy makes both forms agree
    np.testing.assert_allclose(corrected, d.weights.coef, atol=1e-6)
    train_accuracy = np.mean(np.argmax(X @ p.weights.T, axis=1) == y)
    literal_accuracy = np.mean(np.argmax(X @ (X.T @ notes_literal), axis=1) == y)
    assert train_accuracy > 0.8 > literal_accuracy


def test_dual_two_solvers_agree():
    X, y = blobs(seed=9)
    build = lambda: multiclass.dual(X, y, C=0.5, kernel="rbf")  # noqa: E731
    a = build().solve("CLARABEL")
    b = build().solve("ECOS", abstol=1e-10, reltol=1e-10, feastol=1e-10)  # ECOS' defaults give ~1e-6
    assert_same_optimum(a, b, 1e-6)
    osqp = multiclass.dual(X, y, C=0.5, kernel="rbf").solve("OSQP", gap_tol=1e-5, eps_abs=1e-9,
                                                            eps_rel=1e-9, max_iter=100_000)
    assert_same_optimum(a, osqp, 1e-6)


def test_rbf_precomputed_and_callable_kernels_agree():
    X, y = blobs(seed=10)
    X_new = np.random.default_rng(2).standard_normal((6, X.shape[1]))
    rbf = multiclass.dual(X, y, C=2.0, kernel="rbf")
    k = rbf.data["kernel"]
    r = rbf.solve()
    pre = multiclass.dual(k(X, X), y, C=2.0, kernel="precomputed").solve()
    call = multiclass.dual(X, y, C=2.0, kernel=lambda A, B: k(A, B)).solve()
    for s in (r, pre, call):
        assert_certified(s, 1e-7)
    assert_same_optimum(r, pre, 1e-7)
    assert_same_optimum(r, call, 1e-7)
    scores = r.weights.decision_function(X_new)
    np.testing.assert_allclose(pre.weights.decision_function(k(X_new, X)), scores, atol=1e-5)
    np.testing.assert_allclose(call.weights.decision_function(X_new), scores, atol=1e-5)
    assert list(r.weights.predict(X_new)) == list(np.argmax(scores, axis=1))
    # the certificate's objective is the notes' primal at f_y = sum_i G_iy k(x_i, .):
    # recompute it by hand (hinge of the Crammer-Singer margin, RKHS norm G^T K G)
    G, K = r.weights.coef, k(X, X)
    S = K @ G
    violation = S - S[np.arange(len(y)), y][:, None] + 1.0 - np.eye(3)[y]
    by_hand = 0.5 * np.trace(G.T @ K @ G) + 2.0 * np.maximum(violation.max(axis=1), 0).sum()
    assert abs(by_hand - r.objective) <= 1e-6 * r.objective


def test_callable_linear_kernel_equals_linear():
    X, y = blobs(seed=11)
    lin = multiclass.dual(X, y, C=1.0).solve()
    call = multiclass.dual(X, y, C=1.0, kernel=lambda A, B: A @ B.T).solve()
    assert_same_optimum(lin, call, 1e-7)


def test_gram_factor_is_exact_on_psd_and_clips_round_off():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 3))
    K = A @ A.T
    F, K_psd = multiclass.gram_factor(K)
    assert F.shape == (8, 3)
    np.testing.assert_allclose(K_psd, K, atol=1e-10)
    lam, V = np.linalg.eigh(K)
    K_neg = K - 1e-13 * np.outer(V[:, 0], V[:, 0])  # a round-off negative eigenvalue
    F2, K2 = multiclass.gram_factor(K_neg)
    assert np.linalg.eigvalsh(K2).min() >= -1e-12 and np.abs(K2 - K).max() < 1e-10


@settings(max_examples=25, deadline=None)
@given(n=st.integers(4, 12), d=st.integers(1, 3), q=st.integers(2, 4), seed=st.integers(0, 10**6),
       C=st.floats(0.05, 20.0))
def test_property_primal_equals_linear_dual(n, d, q, seed, C):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.r_[0, 1, rng.integers(0, q, n - 2)]  # at least two classes
    p = multiclass.primal(X, y, C=C).solve()
    dl = multiclass.dual(X, y, C=C).solve()
    assert_same_optimum(p, dl, 1e-6)
    # the optimum is no worse than W = 0 (objective C * sum_i 1)
    assert p.lower_bound <= C * n * (1 + 1e-12)


# --------------------------------------------------------------------- bad input

@pytest.mark.parametrize("build", [multiclass.primal, multiclass.dual])
def test_bad_input(build):
    X, y = blobs(n=12)
    Xbad = X.copy()
    Xbad[3, 1] = np.nan
    with pytest.raises(hc.InputError, match="non-finite"):
        build(Xbad, y)
    for C in (0.0, -1.0, np.inf):
        with pytest.raises(hc.InputError, match="C must be positive"):
            build(X, y, C=C)
    with pytest.raises(hc.LabelError, match="single class"):
        build(X, np.zeros(12, dtype=int))
    with pytest.raises(hc.InputError, match="11 labels but X has 12 rows"):
        build(X, y[:-1])
    with pytest.raises(hc.LabelError, match="class_weight names class 9"):
        build(X, y, class_weight={0: 1.0, 9: 2.0})
    with pytest.raises(hc.InputError, match="sample_weight"):
        build(X, y, sample_weight=-np.ones(12))
    with pytest.raises(ValueError):  # every hiercvx input error is a ValueError
        build(X, y, C=0)


def test_non_psd_precomputed_kernel_is_refused():
    X, y = blobs(n=10)
    K = X @ X.T
    K[0, 1] = K[1, 0] = K[0, 1] + 50.0
    lmin = np.linalg.eigvalsh(K).min()
    with pytest.raises(hc.InputError, match=f"smallest eigenvalue is {lmin:.3g}"):
        multiclass.dual(K, y, kernel="precomputed")
    with pytest.raises(hc.InputError, match="not positive semidefinite"):
        multiclass.dual(X, y, kernel=lambda A, B: -(A @ B.T))
    with pytest.raises(hc.InputError, match="square"):
        multiclass.dual(X, y, kernel="precomputed")


@pytest.mark.parametrize("build", [multiclass.primal, multiclass.dual])
def test_too_large_is_refused_before_compiling(build, monkeypatch):
    X, y = blobs(n=12)

    def no_problem(*args, **kwargs):
        raise AssertionError("a cvxpy.Problem was declared before the size check")

    monkeypatch.setattr(cp, "Problem", no_problem)
    with pytest.raises(hc.ProblemTooLargeError, match="max_size="):
        build(X, y, max_size=50)


# --------------------------------------------------------------------- the model layer

def test_model_answers_what_the_references_certify():
    """MulticlassModel (hiercvx.models.multiclass.prepare): the primal's recomputed objective at
    its weights and intercept, the dual's bound at its Lambda, and the class order given."""
    from hiercvx.models.multiclass import MulticlassModel, prepare

    X, y = blobs(labels=["c", "a", "b"])
    model = prepare(X, y, fit_intercept=True, intercept_scaling=2.0, sample_weight=SW)
    assert isinstance(model, MulticlassModel) and model.classes.tolist() == ["a", "b", "c"]
    p = multiclass.primal_from_model(model, C=0.8).solve()
    assert model.objective(p.weights, C=0.8, intercept=p.values["intercept"]) == pytest.approx(
        p.objective, rel=1e-12)
    assert_same_optimum(p, multiclass.primal(X, y, C=0.8, fit_intercept=True, intercept_scaling=2.0,
                                             sample_weight=SW).solve(), 1e-9)
    plain = prepare(X, y)
    d = multiclass.dual_from_model(plain, C=0.8).solve()
    lam = d.values["Lambda"]
    alpha = lam[plain.data.pair_i, plain.data.pair_ybar]
    assert plain.lower_bound(alpha, C=0.8) == pytest.approx(d.lower_bound, rel=1e-12)
    ordered = prepare(X, y, classes=["c", "b", "a"])
    assert ordered.classes.tolist() == ["c", "b", "a"] and ordered.y_index[0] == ["c", "b", "a"].index(y[0])
    with pytest.raises(hc.InputError, match="intercept"):
        multiclass.dual_from_model(model, C=1.0)
    with pytest.raises(hc.InputError, match="flat"):
        prepare(X, y, hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"}))
    with pytest.raises(hc.InputError, match="linear kernel"):
        prepare(X, y, kernel="rbf", fit_intercept=True)
