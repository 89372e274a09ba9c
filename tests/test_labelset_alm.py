"""The proximal dual of the label-set engine (``hiercvx.solvers.labelset_alm``).

Its kernels (the budget projection against its optimality conditions, the Jacobian against
finite differences, ``B`` against ``B^T``, the preconditioners' diagonal and Kronecker factor
against the Newton matrix); the solver against the CVXPY reference (tree and DAG, both
rescalings, sample weights, intercept) and the working-set solver; its certificate recomputed;
the label-set engine with it from the first round.
"""

import numpy as np
import pytest

from hiercvx import testing
from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.solvers import labelset, labelset_alm, working_set

from labelset_cases import HIERARCHIES, dag, label_sets, tree  # noqa: F401


def operators(rescaling="slack", intercept=True, seed=1):
    H = tree()
    X, Y = label_sets(H, 30, 4, seed=seed)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, fit_intercept=intercept)
    return model, labelset_alm._Operators(model, 1.0)


# ------------------------------------------------------------------ kernels
@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_projection_is_the_nearest_point_of_the_budget_sets(rescaling):
    _, ops = operators(rescaling)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(ops.pi.size) * np.where(ops.pi % 2 == 0, 3.0, 0.001)
    alpha, (_, tau) = ops.project(v)
    used = np.bincount(ops.pi, weights=alpha * ops.cost, minlength=ops.budget.size)
    assert np.all(alpha >= 0) and np.all(used <= ops.budget * (1 + 1e-12))
    # optimality: alpha = max(v - tau c, 0), tau >= 0, tau > 0 only on a tight budget
    assert np.allclose(alpha, np.maximum(v - tau[ops.pi] * ops.cost, 0), atol=1e-12)
    assert np.all(tau >= 0)
    assert np.allclose(used[tau > 0], ops.budget[tau > 0], rtol=1e-10)
    assert np.any(tau > 0) and np.any(tau == 0)


def test_operators_are_adjoint_and_the_newton_matrix_is_the_gradients_derivative():
    _, ops = operators()
    rng = np.random.default_rng(1)
    W, g = rng.standard_normal(ops.shape), rng.standard_normal(ops.pi.size)
    assert np.sum(ops.forward(W) * g) == pytest.approx(np.sum(W * ops.adjoint(g)), rel=1e-12)
    alpha_k = ops.project(np.abs(rng.standard_normal(ops.pi.size)))[0]
    env = labelset_alm._Envelope(ops, alpha_k, 0.7, 0.0)

    def phi(V):
        return env.at(V, ops.forward(V))[0]

    def grad(V):
        return V - ops.adjoint(env.at(V, ops.forward(V))[1])

    D, h = rng.standard_normal(ops.shape), 1e-6
    assert (phi(W + h * D) - phi(W - h * D)) / (2 * h) == pytest.approx(np.sum(grad(W) * D),
                                                                      rel=1e-6)
    _, _, jac = env.at(W, ops.forward(W))
    fd = np.sum(D * (grad(W + h * D) - grad(W - h * D))) / (2 * h)
    assert fd == pytest.approx(np.sum(D * env.hessian_product(D, None, jac)), rel=1e-5)
    # the diagonal preconditioner is the Newton matrix's diagonal
    diag = 1 + 0.7 * ops.diagonal(jac)
    for (m, f) in [(0, 0), (3, 2), (ops.shape[0] - 1, ops.shape[1] - 1)]:
        E = np.zeros(ops.shape)
        E[m, f] = 1.0
        assert diag[m, f] == pytest.approx(env.hessian_product(E, None, jac)[m, f], rel=1e-10)


def test_kronecker_preconditioner_is_exact_with_one_example():
    H = tree()
    X, Y = label_sets(H, 1, 4, seed=2)
    model = hsvm_model.prepare(X, [set(Y[0])], H)
    ops = labelset_alm._Operators(model, 1.0)
    rng = np.random.default_rng(3)
    env = labelset_alm._Envelope(ops, np.zeros(ops.pi.size), 0.5, 0.0)
    W = rng.standard_normal(ops.shape)
    _, _, jac = env.at(W, ops.forward(W))
    inverse = ops.kronecker(jac, 0.5)
    R = rng.standard_normal(ops.shape)
    assert np.allclose(env.hessian_product(inverse(R), None, jac), R, atol=1e-9)


# ------------------------------------------------------------------ the solver
CASES = [("tree", "slack", False, False), ("tree", "margin", True, False),
         ("dag", "slack", False, True), ("dag", "margin", True, True)]


@pytest.mark.parametrize("shape, rescaling, weighted, intercept", CASES)
def test_solver_matches_the_reference_and_its_certificate_holds(shape, rescaling, weighted,
                                                                 intercept):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 24, 4, seed=6)
    sw = np.random.default_rng(7).uniform(0.5, 2.0, 24) if weighted else None
    kw = dict(rescaling=rescaling, sample_weight=sw, fit_intercept=intercept)
    model = hsvm_model.prepare(X, Y, H, **kw)
    C = 1.5
    fast = labelset_alm.solve(model, C, tol=1e-9)
    assert fast.converged and fast.gap <= 1e-9
    ref = hsvm.primal(X, Y, H, C=C, **kw).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)
    assert np.allclose(fast.weights, ref.weights, atol=1e-3)
    # the certificate: the objective recomputed at the weights, the bound at a feasible dual
    assert model.objective(fast.weights, C, intercept=fast.intercept) == \
        pytest.approx(fast.objective, rel=1e-12)
    d, alpha = model.data, fast.dual
    used = np.bincount(d.pair_i, weights=alpha * d.pair_cost, minlength=d.n_samples)
    assert np.all(alpha >= 0) and np.all(used <= C * d.Cw * (1 + 1e-9))
    assert model.lower_bound(alpha, C) == pytest.approx(fast.lower_bound, rel=1e-9)


@pytest.mark.parametrize("preconditioner", ["kronecker", "diagonal"])
def test_solver_agrees_with_the_working_set(preconditioner):
    H = dag()
    X, Y = label_sets(H, 40, 5, seed=8)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    opts = labelset_alm.Options(preconditioner=preconditioner)
    fast = labelset_alm.solve(model, 0.8, tol=1e-9, options=opts)
    old = working_set.solve(model, 0.8, tol=1e-9)
    assert fast.objective == pytest.approx(old.objective, rel=1e-7)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_engine_with_the_proximal_dual_from_the_first_round(rescaling):
    H = tree()
    X, Y = label_sets(H, 40, 5, seed=9)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, fit_intercept=True)
    C = 0.8
    fast = labelset.solve(model, C, tol=1e-9,
                          options=labelset.Options(enter=2, inner="proximal",
                                                   proximal_below=np.inf))
    old = working_set.solve(model, C, tol=1e-9)
    assert fast.converged and fast.objective == pytest.approx(old.objective, rel=1e-7)
    assert model.objective(fast.weights, C, intercept=fast.intercept) == \
        pytest.approx(fast.objective, rel=1e-12)
    assert model.lower_bound(fast.dual, C) == pytest.approx(fast.lower_bound, rel=1e-9)


def test_refuses_a_kernel_model():
    H = tree()
    X, Y = label_sets(H, 10, 3)
    model = hsvm_model.prepare(X, Y, H, kernel="rbf", sigma=1.0)
    with pytest.raises(InputError, match="linear model"):
        labelset_alm.solve(model, 1.0)


def test_refuses_an_unknown_preconditioner():
    H = tree()
    X, Y = label_sets(H, 10, 3)
    model = hsvm_model.prepare(X, Y, H)
    with pytest.raises(InputError, match="preconditioner"):
        labelset_alm.solve(model, 1.0, options=labelset_alm.Options(preconditioner="none"))


def test_engine_keeps_the_working_set_on_sparse_features():
    import scipy.sparse as sp

    H = tree()
    X, Y = label_sets(H, 30, 4, seed=11)
    dense = hsvm_model.prepare(X, Y, H)
    sparse = hsvm_model.prepare(sp.csr_matrix(X), Y, H)
    opts = labelset.Options(proximal_below=np.inf)
    a = labelset.solve(dense, 1.0, tol=1e-8, options=opts)
    b = labelset.solve(sparse, 1.0, tol=1e-8, options=opts)
    assert a.converged and b.converged
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
