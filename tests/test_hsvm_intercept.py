"""LIBLINEAR's regularized bias (``fit_intercept``) through the Cai–Hofmann hierarchical SVM:
model, references, fast solvers and the oracle API (the thesis' (4.10) has no bias; with one
the problem is (4.10) on ``[X, s]``, which is what every check below compares against).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hiercvx import methods, testing
from hiercvx.bias import append_constant
from hiercvx.estimators import HierarchicalSVC
from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm
from hiercvx.kernels import make_kernel
from hiercvx.methods.cases import problem
from hiercvx.models.hsvm import prepare
from hiercvx.testing import check_solver, kkt_report, problems_for

X, Y, H = problem("tree", n=30, d=3, seed=1)


@pytest.fixture(scope="module", params=[1.0, 2.5], ids=["s=1", "s=2.5"])
def augmented(request):
    """``(s, primal with the bias, the thesis' primal on [X, s])``, both certified."""
    s = request.param
    with_bias = hsvm.primal(X, Y, H, C=1.0, fit_intercept=True, intercept_scaling=s).solve()
    on_augmented = hsvm.primal(append_constant(X, s), Y, H, C=1.0).solve()
    return s, with_bias, on_augmented


# ------------------------------------------------------------------ references
def test_primal_with_bias_is_the_thesis_primal_on_the_augmented_features(augmented):
    s, pb, aug = augmented
    testing.assert_certified(pb)
    assert pb.objective == pytest.approx(aug.objective, rel=1e-7)
    assert pb.weights.shape == (len(H), X.shape[1])  # the bias column is not in the weights
    assert np.allclose(pb.weights, aug.weights[:, :-1], atol=1e-5)
    assert np.allclose(pb.values["intercept"], s * aug.weights[:, -1], atol=1e-5)
    assert np.any(np.abs(pb.values["intercept"]) > 1e-3)  # the bias is used on this data
    plain = hsvm.primal(X, Y, H, C=1.0).solve()
    assert plain.objective > pb.objective * (1 + 1e-4)  # and lowers the optimum


def test_dual_and_class_form_recover_weights_and_node_biases(augmented):
    s, pb, _ = augmented
    for build in (hsvm.dual, hsvm.class_form):
        sol = build(X, Y, H, C=1.0, fit_intercept=True, intercept_scaling=s).solve()
        testing.assert_certified(sol)
        assert sol.objective == pytest.approx(pb.objective, rel=1e-6)
        assert np.allclose(sol.weights, pb.weights, atol=1e-4)
        assert np.allclose(sol.values["intercept"], pb.values["intercept"], atol=1e-4)


def test_sparse_inputs_give_the_dense_optimum(augmented):
    s, pb, _ = augmented
    sol = hsvm.primal(sp.csr_matrix(X), Y, H, C=1.0, fit_intercept=True,
                      intercept_scaling=s).solve()
    assert sol.objective == pytest.approx(pb.objective, rel=1e-7)
    assert np.allclose(sol.values["intercept"], pb.values["intercept"], atol=1e-5)


def test_kernel_duals_put_the_bias_in_the_kernel():
    s = 1.5
    linear = hsvm.primal(X, Y, H, C=1.0, fit_intercept=True, intercept_scaling=s).solve()
    K = X @ X.T
    pre = hsvm.dual(K, Y, H, C=1.0, kernel="precomputed", fit_intercept=True, intercept_scaling=s)
    sol = pre.solve()
    assert sol.objective == pytest.approx(linear.objective, rel=1e-6)
    model = prepare(X, Y, H, fit_intercept=True, intercept_scaling=s)
    expected = model.scores(linear.weights, X[:7], intercept=linear.values["intercept"])
    assert np.allclose(hsvm.dual_scores(pre, sol, K[:7]), expected, atol=1e-4)
    rbf = make_kernel("rbf", sigma=1.0)
    biased = hsvm.dual(X, Y, H, C=1.0, kernel="rbf", sigma=1.0, fit_intercept=True,
                       intercept_scaling=s).solve()
    shifted = hsvm.dual(X, Y, H, C=1.0, kernel=lambda A, B: rbf(A, B) + s ** 2).solve()
    assert biased.objective == pytest.approx(shifted.objective, rel=1e-6)


# ------------------------------------------------------------------ model
def test_model_objective_scores_and_bias_column(augmented):
    s, pb, aug = augmented
    model = prepare(X, Y, H, fit_intercept=True, intercept_scaling=s)
    b = pb.values["intercept"]
    assert model.X.shape == (X.shape[0], X.shape[1] + 1) and model.X_features is not model.X
    assert model.objective(pb.weights, 1.0, intercept=b) == pytest.approx(pb.objective, rel=1e-9)
    # no intercept given: the biases are zero, a worse point
    assert model.objective(pb.weights, 1.0) > pb.objective * (1 + 1e-4)
    W_aug = model.augmented_weights(pb.weights, b)
    assert np.allclose(W_aug, aug.weights, atol=1e-5)
    W, b_back = model.split_weights(W_aug)
    assert np.allclose(W, pb.weights) and np.allclose(b_back, b)
    S = model.scores(pb.weights, X, intercept=b)
    assert np.allclose(S, model.scores(W_aug, append_constant(X, s)), atol=1e-10)
    assert np.allclose(S - model.scores(pb.weights, X), model.Lam @ b)  # a class gets Lam_y . b
    plain = prepare(X, Y, H)
    assert not plain.fit_intercept and np.array_equal(plain.split_weights(pb.weights)[1],
                                                      np.zeros(len(H)))


def test_prepare_refuses_bad_intercept_options():
    with pytest.raises(InputError, match="intercept_scaling"):
        prepare(X, Y, H, fit_intercept=True, intercept_scaling=0.0)
    with pytest.raises(ValueError, match="fit_intercept"):
        prepare(X, Y, H, fit_intercept="yes")


# ------------------------------------------------------------------ fast solvers
INTERCEPT_CASES = [k for k, case in enumerate(methods.get("hsvm").cases(True))
                   if case.model_options.get("fit_intercept")]


def test_registry_has_intercept_cases_one_with_another_scaling():
    options = [methods.get("hsvm").cases(True)[k].model_options for k in INTERCEPT_CASES]
    assert len(options) >= 2 and any(o.get("intercept_scaling", 1.0) != 1.0 for o in options)


@pytest.mark.parametrize("k", INTERCEPT_CASES)
@pytest.mark.parametrize("solver", sorted(methods.get("hsvm").fast_solvers))
def test_fast_solvers_report_weights_and_node_biases_apart(k, solver):
    method = methods.get("hsvm")
    case = method.cases(True)[k]
    ref = method.build("primal", case).solve()
    model = method.model(case)
    fast = method.run_fast(solver, case, model=model)
    assert fast.converged
    assert fast.weights.shape == ref.weights.shape
    assert np.allclose(fast.intercept, ref.values["intercept"], atol=1e-3)
    assert np.allclose(fast.weights, ref.weights, atol=1e-3)
    # the solver's objective is the model's at its (weights, intercept)
    assert model.objective_at(fast, C=case.params["C"]) == pytest.approx(fast.objective, rel=1e-9)


# ------------------------------------------------------------------ the oracle API
def _fit_hsvm(X, Y, H, C=1.0, fit_intercept=False, intercept_scaling=1.0, ignore_bias=False,
              **options):
    """A user's solver (the project's interior point on the model); ``ignore_bias`` plants
    the bug of solving the problem without the intercept."""
    method = methods.get("hsvm")
    model = method.prepare(X, Y, H, fit_intercept=fit_intercept and not ignore_bias,
                           intercept_scaling=intercept_scaling, **options)
    sol = method.fast_solvers["interior_point"].solve(model, C=C, tol=1e-9)
    intercept = sol.intercept if model.fit_intercept else np.zeros(len(H))
    return {"weights": sol.weights, "intercept": intercept}


def _intercept_problems(n=None):
    return [p for p in problems_for("hsvm", structures=["multilabel", "sparse"], n=n)
            if p.model_options.get("fit_intercept")]


def test_check_solver_certifies_a_solution_with_node_biases():
    outcomes = check_solver(_fit_hsvm, "hsvm", problems=_intercept_problems())
    assert len(outcomes) == 2 and all(o.ok for o in outcomes)


def test_a_solver_without_the_intercept_is_diagnosed():
    with pytest.raises(AssertionError) as info:
        check_solver(lambda *a, **kw: _fit_hsvm(*a, ignore_bias=True, **kw), "hsvm",
                     problems=_intercept_problems()[:1], shrink_failures=False)
    msg = str(info.value)
    assert msg.startswith("check_solver('hsvm') failed on ")
    assert "your intercept differs from the optimum's" in msg
    assert "diagnosis: the intercept is not fitted" in msg


def test_kkt_report_and_objective_take_weights_and_intercept():
    p = _intercept_problems(n=20)[0]
    ref = p.reference()
    user = {"weights": ref.weights, "intercept": ref.values["intercept"]}
    assert testing.objective("hsvm", user, p.X, p.Y, p.H, **p.options) == pytest.approx(
        ref.objective, rel=1e-9)
    good = kkt_report("hsvm", user, p.X, p.Y, p.H, reference=ref, **p.options)
    assert good.ok() and good.max_slack_difference < 1e-5
    no_bias = kkt_report("hsvm", ref.weights, p.X, p.Y, p.H, reference=ref, **p.options)
    assert not no_bias.ok() and no_bias.suboptimality > 1e-4 and no_bias.optimality


# ------------------------------------------------------------------ the estimator
@pytest.mark.parametrize("solver", ["fast", "reference"])
def test_estimator_intercept_is_the_references_node_biases(augmented, solver):
    s, pb, _ = augmented
    clf = HierarchicalSVC(hierarchy=H, C=1.0, fit_intercept=True, intercept_scaling=s,
                          solver=solver, tol=1e-9).fit(X, Y)
    assert clf.objective_ == pytest.approx(pb.objective, rel=1e-6)
    assert np.allclose(clf.coef_, pb.weights, atol=1e-3)
    assert np.allclose(clf.intercept_, pb.values["intercept"], atol=1e-3)
