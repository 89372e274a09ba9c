"""LIBLINEAR's regularized bias through the orthogonal-transfer family: the model,
the CVXPY references (primal and dual), the fast solvers, the estimator and the oracle API.

The independent route: with ``fit_intercept`` every problem is the paper's problem on the
augmented features ``[X, s]``, so each reference is checked against the same reference
without intercept on an explicitly augmented X (``b = s * last weight column``).
"""

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx import methods, testing
from hiercvx.bias import append_constant
from hiercvx.estimators import OrthogonalTransferSVC
from hiercvx.formulations import orthogonal as ot
from hiercvx.methods.cases import problem
from hiercvx.models import orthogonal as otm
from hiercvx.solvers import orthogonal_dual, rda

METHODS = otm.METHODS
S = 2.0  # intercept_scaling away from 1: the bias is regularized, so s changes the optimum
BIAS = {"fit_intercept": True, "intercept_scaling": S}


def _data(method, structure="partial", n=24, d=3, seed=0):
    X, y, H = problem("tree" if method == "flatmult" else structure, n=n, d=d, seed=seed)
    return X, y, H


def _primal(method, X, y, H, C=1.0, **options):
    model = otm.prepare(X, y, H, method, **options)
    return ot.primal_from_model(model, C=C).solve()


@pytest.mark.parametrize("method", METHODS)
def test_reference_is_the_problem_on_the_augmented_features(method):
    """primal(fit_intercept, s) = primal on [X, s] without intercept: same optimum, the bias
    column split off as coef and s * its weight as intercept; the dual reports the same."""
    X, y, H = _data(method)
    with_b = _primal(method, X, y, H, **BIAS)
    on_augmented = _primal(method, append_constant(X, S), y, H)
    assert with_b.objective == pytest.approx(on_augmented.objective, rel=1e-6)
    W_aug = on_augmented.weights
    assert with_b.weights.shape == (len(H), X.shape[1])
    np.testing.assert_allclose(with_b.weights, W_aug[:, :-1], atol=1e-4)
    np.testing.assert_allclose(with_b.values["intercept"], S * W_aug[:, -1], atol=1e-4)
    assert np.abs(with_b.values["intercept"]).max() > 1e-3  # the bias is not trivially zero
    model = otm.prepare(X, y, H, method, **BIAS)
    dual = ot.dual_from_model(model, C=1.0).solve()
    assert dual.lower_bound == pytest.approx(with_b.objective, rel=1e-5)
    np.testing.assert_allclose(dual.weights, with_b.weights, atol=1e-4)
    np.testing.assert_allclose(dual.values["intercept"], with_b.values["intercept"], atol=1e-4)
    # the root, and for FLATMULT the internal nodes, carry no weight vector, hence no bias
    unweighted = np.setdiff1d(np.arange(len(H)), model.var_nodes)
    assert 0 in unweighted
    assert np.all(with_b.values["intercept"][unweighted] == 0)


def test_intercept_scaling_changes_the_regularized_optimum():
    X, y, H = _data("hiermult")
    one = _primal("hiermult", X, y, H, fit_intercept=True, intercept_scaling=1.0)
    two = _primal("hiermult", X, y, H, **BIAS)
    none = _primal("hiermult", X, y, H)
    # a larger s makes the bias cheaper (b^2 / (2 s^2)), so the optimum decreases
    assert two.objective < one.objective < none.objective


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("solve", [orthogonal_dual.solve, rda.solve], ids=["dual_cd", "rda"])
def test_fast_solvers_split_the_bias(method, solve):
    X, y, H = _data(method)
    model = otm.prepare(X, y, H, method, **BIAS)
    ref = ot.primal_from_model(model, C=1.0).solve()
    tol = 1e-7 if solve is orthogonal_dual.solve else 1e-4
    fast = solve(model, C=1.0, tol=tol, max_iter=100_000)
    assert fast.converged
    testing.assert_fast_matches_reference(fast, ref, rtol=10 * tol)
    assert fast.weights.shape == (len(H), X.shape[1]) and fast.extras["intercept"].shape == (len(H),)
    assert fast.objective == pytest.approx(model.objective(fast.weights, C=1.0, intercept=fast.intercept),
                                           rel=1e-10)
    if solve is orthogonal_dual.solve:
        np.testing.assert_allclose(fast.intercept, ref.values["intercept"], atol=1e-3)
    # the certificate's multipliers are over the augmented features
    assert model.lower_bound((fast.dual, fast.dual_S), C=1.0) <= ref.objective * (1 + 1e-9)
    plain = solve(otm.prepare(X, y, H, method), C=1.0, tol=1e-4, max_iter=100_000)
    assert "intercept" not in plain.extras


def test_representer_basis_with_intercept():
    """d > n: the SDP in the representer basis of X plus the constant coordinate (Theorem 3)
    has the optimum of the SDP over all features."""
    X, y, H = problem("partial", n=12, d=20, seed=3)
    model = otm.prepare(X, y, H, "orthogonal", **BIAS)
    reduced_problem = ot.primal_from_model(model, C=4.0)
    assert reduced_problem.data["representer"]  # the default when n_features > n_samples
    reduced = reduced_problem.solve()
    full = ot.primal_from_model(model, C=4.0, representer=False).solve()
    assert reduced.objective == pytest.approx(full.objective, rel=1e-5)
    np.testing.assert_allclose(reduced.values["intercept"], full.values["intercept"], atol=1e-4)
    dual = ot.dual_from_model(model, C=4.0).solve()
    assert dual.lower_bound == pytest.approx(full.objective, rel=1e-5)


def test_sparse_X_fits_the_same_model():
    X, y, H = _data("orthogonal")
    dense = orthogonal_dual.solve(otm.prepare(X, y, H, "orthogonal", **BIAS), C=1.0, tol=1e-8)
    csr = orthogonal_dual.solve(otm.prepare(sp.csr_matrix(X), y, H, "orthogonal", **BIAS), C=1.0, tol=1e-8)
    assert csr.objective == pytest.approx(dense.objective, rel=1e-6)
    np.testing.assert_allclose(csr.intercept, dense.intercept, atol=1e-4)


def test_model_converts_weights_and_scores():
    X, y, H = _data("treeloss")
    model = otm.prepare(X, y, H, "treeloss", **BIAS)
    assert model.fit_intercept and model.intercept_scaling == S and model.n_features == X.shape[1]
    assert model.X.shape == (len(y), X.shape[1] + 1) and np.all(model.X[:, -1] == S)
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((len(H), X.shape[1])), rng.standard_normal(len(H))
    W_aug = model.augmented_weights(W, b)
    np.testing.assert_allclose(W_aug[:, -1], b / S)
    back_W, back_b = model.split_weights(W_aug)
    np.testing.assert_allclose(back_W, W)
    np.testing.assert_allclose(back_b, b)
    # scores of the features as given and of the model's augmented X agree: (X W^T + 1 b^T) Lam^T
    by_hand = (X @ W.T + b[None, :]) @ model.data.Lam.T
    np.testing.assert_allclose(model.scores(W, X, intercept=b), by_hand, atol=1e-12)
    np.testing.assert_allclose(model.scores(W, model.X, intercept=b), by_hand, atol=1e-12)
    # the objective is the regularizer and hinge of the augmented weights
    assert model.objective(W, C=3.0, intercept=b) == pytest.approx(
        model.regularizer(W_aug) + model.hinge(W_aug, 3.0), rel=1e-12)
    assert model.objective(W, C=3.0) == pytest.approx(model.objective(W, C=3.0, intercept=0 * b))
    with pytest.raises(hc.InputError, match="without the bias column"):
        model.objective(W_aug, C=1.0)
    with pytest.raises(hc.InputError, match="one bias per node"):
        model.objective(W, C=1.0, intercept=b[1:])
    plain = otm.prepare(X, y, H, "treeloss")
    with pytest.raises(hc.InputError, match="fit_intercept=False"):
        plain.objective(W, C=1.0, intercept=b)
    assert plain.objective(W, C=1.0, intercept=np.zeros(len(H))) == pytest.approx(plain.objective(W, C=1.0))


def test_prepare_refuses_bad_intercept_options():
    X, y, H = _data("orthogonal")
    with pytest.raises(hc.InputError, match="fit_intercept must be True or False"):
        otm.prepare(X, y, H, "orthogonal", fit_intercept="yes")
    with pytest.raises(hc.InputError, match="intercept_scaling"):
        otm.prepare(X, y, H, "orthogonal", fit_intercept=True, intercept_scaling=0.0)
    with pytest.raises(hc.InputError, match="intercept_scaling"):
        OrthogonalTransferSVC(H, intercept_scaling=-1.0).fit(X, y)
    # without an intercept the scaling is not used, hence not checked (LIBLINEAR's behaviour)
    assert not otm.prepare(X, y, H, "orthogonal", intercept_scaling=0.0).fit_intercept


def test_classifiers_take_the_intercept():
    X, _, H = _data("treeloss")
    rng = np.random.default_rng(1)
    W, b = rng.standard_normal((len(H), X.shape[1])), rng.standard_normal(len(H))
    W1, X1 = np.hstack([W, b[:, None]]), np.hstack([X, np.ones((len(X), 1))])  # b as a unit feature
    assert np.array_equal(otm.predict_top_down(W, X, H, intercept=b), otm.predict_top_down(W1, X1, H))
    for cumulative in (False, True):
        assert np.array_equal(otm.predict_flat(W, X, H, "nodes", cumulative, intercept=b),
                              otm.predict_flat(W1, X1, H, "nodes", cumulative))
    with pytest.raises(hc.InputError, match="one bias per node"):
        otm.predict_top_down(W, X, H, intercept=b[:3])


@pytest.mark.parametrize("method", METHODS)
def test_estimator_intercept_from_the_model(method):
    """The estimator passes fit_intercept to prepare: its coef_ / intercept_ are the solver's
    weights / extras['intercept'] at C_paper = C N, the reference's values['intercept'] agree,
    and predict uses the biases."""
    X, y, H = _data(method)
    C = 1.0 / len(y)
    fast = OrthogonalTransferSVC(H, C=C, method=method, intercept_scaling=S, tol=1e-8,
                                 max_iter=100_000).fit(X, y)
    solved = orthogonal_dual.solve(otm.prepare(X, y, H, method, **BIAS), C=1.0, tol=1e-8, max_iter=100_000)
    np.testing.assert_allclose(fast.coef_, solved.weights, atol=1e-10)
    np.testing.assert_allclose(fast.intercept_, solved.intercept, atol=1e-10)
    ref = OrthogonalTransferSVC(H, C=C, method=method, intercept_scaling=S, solver="reference").fit(X, y)
    np.testing.assert_allclose(ref.intercept_, fast.intercept_, atol=1e-3)
    assert ref.objective_ == pytest.approx(fast.objective_, rel=1e-5)
    if method in ("orthogonal", "hiermult", "transfer"):
        expected = otm.predict_top_down(fast.coef_, X, H, intercept=fast.intercept_)
    else:
        classes = "nodes" if method == "treeloss" else "leaves"
        expected = otm.predict_flat(fast.coef_, X, H, classes, method == "treeloss", intercept=fast.intercept_)
    assert np.array_equal(fast.predict(X), expected)
    off = OrthogonalTransferSVC(H, C=C, method=method, fit_intercept=False, tol=1e-6).fit(X, y)
    assert np.array_equal(off.intercept_, np.zeros(len(H)))


@pytest.mark.parametrize("method", ["orthogonal", "transfer"])
def test_oracle_reads_the_intercept(method):
    X, y, H = _data(method)
    sol = orthogonal_dual.solve(otm.prepare(X, y, H, method, **BIAS), C=1.0, tol=1e-8)
    assert testing.objective(method, sol, X, y, H, C=1.0, **BIAS) == pytest.approx(sol.objective, rel=1e-10)
    as_dict = {"weights": sol.weights, "intercept": sol.intercept}
    assert testing.objective(method, as_dict, X, y, H, C=1.0, **BIAS) == pytest.approx(sol.objective, rel=1e-10)
    # dropping the biases is seen: the objective rises and the report says so
    without = testing.objective(method, {"weights": sol.weights}, X, y, H, C=1.0, **BIAS)
    assert without > sol.objective * (1 + 1e-4)
    report = testing.kkt_report(method, {"weights": sol.weights}, X, y, H, C=1.0, **BIAS)
    assert report.suboptimality > 1e-4


def test_registry_has_intercept_cases():
    """Every method of the family is checked against its reference with an intercept, at
    least once with intercept_scaling != 1 (tests/test_against_reference.py runs them)."""
    for name in METHODS:
        cases = [c for c in methods.get(name).cases(True) if c.model_options.get("fit_intercept")]
        assert cases, name
        assert any(c.model_options.get("intercept_scaling", 1.0) != 1.0 for c in cases), name
