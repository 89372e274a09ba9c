"""LIBLINEAR's regularized bias through the NHSVM family: models, CVXPY references,
fast solvers and estimators agree, and the bias is the constant feature of ``hiercvx.bias``."""

import numpy as np
import pytest

from hiercvx.bias import append_constant
from hiercvx.estimators import NormalizedHierarchicalSVC, SharedNormSVC
from hiercvx.exceptions import InputError
from hiercvx.formulations import nhsvm
from hiercvx.methods.cases import problem
from hiercvx.models import nhsvm as nhsvm_model
from hiercvx.solvers import nhsvm_fw, shared_norm
from hiercvx.testing import check_solver, problems_for

LAM = 0.2
SCALING = 2.0


@pytest.fixture(scope="module")
def data():
    return problem("tree", n=24, d=3, seed=0)


@pytest.fixture(scope="module")
def references(data):
    X, y, H = data
    kw = {"fit_intercept": True, "intercept_scaling": SCALING}
    return {"primal": nhsvm.primal(X, y, H, lam=LAM, **kw).solve(),
            "dual": nhsvm.dual(X, y, H, lam=LAM, **kw).solve(),
            "shared": nhsvm.shared_primal(X, y, H, lam=LAM, **kw).solve(),
            "shared_dual": nhsvm.shared_dual(X, y, H, lam=LAM, **kw).solve()}


def test_the_intercept_is_the_constant_feature(data, references):
    """(10) with fit_intercept is (10) without on [X, s]: same optimum, W~ = [W, b / s]."""
    X, y, H = data
    plain = nhsvm.primal(append_constant(X, SCALING), y, H, lam=LAM).solve()
    ref = references["primal"]
    assert ref.objective == pytest.approx(plain.objective, rel=1e-6)
    assert ref.weights.shape == (len(H), X.shape[1])
    np.testing.assert_allclose(ref.weights, plain.weights[:, :-1], atol=1e-4)
    np.testing.assert_allclose(ref.values["intercept"], SCALING * plain.weights[:, -1], atol=1e-4)

    shared_plain = nhsvm.shared_primal(append_constant(X, SCALING), y, H, lam=LAM).solve()
    assert references["shared"].objective == pytest.approx(shared_plain.objective, rel=1e-5)


def test_duals_report_weights_and_intercept(references):
    for primal, dual in (("primal", "dual"), ("shared", "shared_dual")):
        p, d = references[primal], references[dual]
        assert abs(p.objective - d.lower_bound) <= 1e-5 * max(1.0, p.objective)
        assert d.weights.shape == p.weights.shape
        np.testing.assert_allclose(d.values["intercept"], p.values["intercept"], atol=1e-3)


def test_model_objective_and_scores_take_the_intercept(data, references):
    X, y, H = data
    model = nhsvm.prepare(X, y, H, fit_intercept=True, intercept_scaling=SCALING)
    ref = references["primal"]
    W, b = ref.weights, ref.values["intercept"]
    assert model.objective(W, LAM, intercept=b) == pytest.approx(ref.objective, rel=1e-12)
    assert model.objective_at(ref, lam=LAM) == pytest.approx(ref.objective, rel=1e-12)
    # without its biases the point is worse (the optimum has nonzero biases)
    assert model.objective(W, LAM) > ref.objective + 1e-6
    S = model.scores(W, X, intercept=b)
    expected = (X @ W.T + b) * np.sqrt(model.alpha)
    np.testing.assert_allclose(S, expected, atol=1e-12)
    np.testing.assert_allclose(model.scores(W, model.X, intercept=b), expected, atol=1e-12)
    np.testing.assert_allclose(model.scores(W, intercept=b), expected, atol=1e-12)

    shared = nhsvm_model.prepare_shared(X, y, H, fit_intercept=True, intercept_scaling=SCALING)
    sref = references["shared"]
    assert shared.objective_at(sref, lam=LAM) == pytest.approx(sref.objective, rel=1e-9)
    np.testing.assert_allclose(shared.scores(sref.weights, X, intercept=sref.values["intercept"]),
                               X @ sref.weights.T + sref.values["intercept"], atol=1e-12)


@pytest.mark.parametrize("method", ["pairwise", "auto", "working_set"])
def test_fast_nhsvm_reports_the_intercept(data, references, method):
    X, y, H = data
    model = nhsvm.prepare(X, y, H, fit_intercept=True, intercept_scaling=SCALING)
    res = nhsvm_fw.solve(model, LAM, method=method, tol=1e-8, max_iter=20000)
    ref = references["primal"]
    assert res.converged
    assert res.weights.shape == ref.weights.shape
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(res.extras["intercept"], ref.values["intercept"], atol=1e-3)
    assert model.objective(res.weights, LAM, intercept=res.extras["intercept"]) == pytest.approx(
        res.objective, rel=1e-10)


def test_fast_shared_norm_reports_the_intercept(data, references):
    X, y, H = data
    model = nhsvm_model.prepare_shared(X, y, H, fit_intercept=True, intercept_scaling=SCALING)
    res = shared_norm.solve(model, LAM, tol=1e-7, max_iter=1000)
    ref = references["shared"]
    assert res.converged and res.weights.shape == ref.weights.shape
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    assert model.objective(res.weights, LAM, alpha=res.extras["alpha"],
                           intercept=res.extras["intercept"]) == pytest.approx(res.objective, rel=1e-8)


def test_no_intercept_reports_none(data):
    X, y, H = data
    model = nhsvm.prepare(X, y, H)
    res = nhsvm_fw.solve(model, LAM, tol=1e-6)
    assert "intercept" not in res.extras and res.weights.shape == (len(H), X.shape[1])
    assert "intercept" not in nhsvm.primal(X, y, H, lam=LAM).solve().values


@pytest.mark.parametrize("Estimator, reference", [(NormalizedHierarchicalSVC, "primal"),
                                                  (SharedNormSVC, "shared")])
def test_estimators_intercept_matches_reference(data, references, Estimator, reference):
    """``C = 1 / (2 lam)``; ``intercept_`` is the reference's ``values["intercept"]``."""
    X, y, H = data
    ref = references[reference]
    est = Estimator(hierarchy=H, C=1.0 / (2.0 * LAM), intercept_scaling=SCALING, tol=1e-8,
                    max_iter=2000).fit(X, y)
    assert est.coef_.shape == ref.weights.shape
    assert est.objective_ == pytest.approx(ref.objective / (2.0 * LAM), rel=1e-4)
    np.testing.assert_allclose(est.intercept_, ref.values["intercept"], atol=2e-3)
    ref_est = Estimator(hierarchy=H, C=1.0 / (2.0 * LAM), intercept_scaling=SCALING,
                        solver="reference").fit(X, y)
    np.testing.assert_allclose(ref_est.intercept_, ref.values["intercept"], atol=1e-6)


def test_estimator_multilabel_reference_splits_the_bias():
    X, Y, H = problem("multilabel", n=20, d=3, seed=0)
    fast = NormalizedHierarchicalSVC(hierarchy=H, C=2.5, tol=1e-7).fit(X, Y)
    ref = NormalizedHierarchicalSVC(hierarchy=H, C=2.5, solver="reference").fit(X, Y)
    assert ref.coef_.shape == fast.coef_.shape == (len(H), X.shape[1])
    assert ref.objective_ == pytest.approx(fast.objective_, rel=1e-4)
    np.testing.assert_allclose(ref.intercept_, fast.intercept_, atol=5e-3)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_bad_intercept_scaling_is_refused_by_prepare(data, bad):
    X, y, H = data
    with pytest.raises(InputError, match="intercept_scaling"):
        nhsvm.prepare(X, y, H, fit_intercept=True, intercept_scaling=bad)
    with pytest.raises(InputError, match="intercept_scaling"):
        nhsvm_model.prepare_shared(X, y, H, fit_intercept=True, intercept_scaling=bad)
    with pytest.raises(InputError, match="fit_intercept"):
        nhsvm.prepare(X, y, H, fit_intercept="yes")


# ------------------------------------------------------------------ the oracle API
def _fit_nhsvm(X, Y, H, lam=1.0, fit_intercept=False, intercept_scaling=1.0, ignore_bias=False,
               **options):
    """A user's NHSVM solver (the project's pairwise Frank-Wolfe on the model); ``ignore_bias``
    plants the bug of solving the problem without the intercept."""
    model = nhsvm.prepare(X, Y, H, fit_intercept=fit_intercept and not ignore_bias,
                                intercept_scaling=intercept_scaling, **options)
    res = nhsvm_fw.solve(model, lam, tol=1e-9, max_iter=50000)
    intercept = res.extras.get("intercept", np.zeros(len(H)))
    return {"weights": res.weights, "intercept": intercept}


def _nhsvm_intercept_problems():
    return [p for p in problems_for("nhsvm", structures=["tree"])
            if p.model_options.get("fit_intercept")]


def test_check_solver_certifies_nhsvm_with_biases_and_diagnoses_a_forgotten_one():
    problems = _nhsvm_intercept_problems()
    assert problems, "the registry has an NHSVM case with an intercept"
    assert all(o.ok for o in check_solver(_fit_nhsvm, "nhsvm", problems=problems))
    with pytest.raises(AssertionError) as info:
        check_solver(lambda *a, **kw: _fit_nhsvm(*a, ignore_bias=True, **kw), "nhsvm",
                     problems=problems[:1], shrink_failures=False)
    assert "diagnosis: the intercept is not fitted" in str(info.value)
