"""The interior point with matrix-free Newton systems (``hiercvx.solvers.interior_point_cg``).

Its Newton operator against the dense Newton matrix of ``interior_point``, its conjugate-
gradient solves against the dense solve, its certified optimum against the dense interior
point, the working set and the CVXPY reference (trees and DAGs, both rescalings, sample
weights, intercept, linear and RBF kernels), the label-set engine with it as the inner solver,
and ``solve_pair_rows`` with matrix-free Newton systems.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from hiercvx import testing
from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.solvers import interior_point, interior_point_cg, labelset

from labelset_cases import HIERARCHIES, dag, label_sets, tree  # noqa: F401

FORCE_CG = interior_point_cg.Options(dense_below=0)


def _rows_at_random_iterate(seed=0):
    H = dag()
    X, Y = label_sets(H, 15, 3, seed=seed)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    rows = interior_point_cg.margin_rows(model, 1.0)
    prob = rows.prob
    rng = np.random.default_rng(seed)
    P = prob.b.size
    D = rng.uniform(0.01, 10.0, P)
    cD = prob.c * D
    csum = np.bincount(prob.pi, weights=prob.c * cD, minlength=prob.n)
    delta = csum + rng.uniform(0.01, 1.0, prob.n)
    return prob, D, cD, delta, rng


def test_operator_is_the_dense_newton_matrix():
    prob, D, cD, delta, rng = _rows_at_random_iterate()
    H, V = prob.newton_matrix(D, cD, delta)
    op = interior_point_cg._Operator(prob, D, cD, delta)
    assert np.allclose(op.V, V, atol=1e-12)
    w = rng.standard_normal((prob.r, prob.d))
    assert np.allclose(op(w).ravel(), H @ w.ravel(), rtol=1e-10, atol=1e-10)
    diag = np.diag(H).reshape(prob.r, prob.d) - 1.0
    assert np.allclose(op.diagonals().T @ prob.F ** 2, diag, atol=1e-10)


@pytest.mark.parametrize("name", interior_point_cg.PRECONDITIONERS)
def test_matrix_free_direction_equals_the_dense_one(name):
    prob, D, cD, delta, rng = _rows_at_random_iterate(seed=1)
    H, _ = prob.newton_matrix(D, cD, delta)
    rhs = rng.standard_normal((prob.r, prob.d))
    dense = np.linalg.solve(H, rhs.ravel()).reshape(rhs.shape)
    linear = interior_point_cg.MatrixFreeNewton(
        prob, interior_point_cg.Options(preconditioner=name, cg_rtol_min=1e-13, cg_max=5000))
    _, solve = linear.prepare(prob, D, cD, delta, (1e-14, 1e-14))
    assert np.allclose(solve(rhs), dense, rtol=1e-8, atol=1e-8)
    assert linear.stats["systems"] == 1 and linear.stats["cg_steps"] > 0


CASES = [("tree", "slack", False, False, "linear"), ("tree", "margin", True, True, "linear"),
         ("dag", "slack", True, True, "linear"), ("dag", "margin", False, False, "rbf")]


def _options(kernel):
    """Conjugate gradients for the linear kernel; the RBF kernel's pair rows over its factor
    keep the default (this size is factorized densely: the Newton systems of a kernel factor
    with many tied support pairs are too ill-conditioned for the block preconditioners)."""
    return FORCE_CG if kernel == "linear" else interior_point_cg.Options()


@pytest.mark.parametrize("shape, rescaling, weighted, intercept, kernel", CASES)
def test_certifies_the_optimum_of_the_dense_interior_point(shape, rescaling, weighted,
                                                           intercept, kernel):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 30, 4, seed=3)
    sw = np.random.default_rng(4).uniform(0.5, 2.0, 30) if weighted else None
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, sample_weight=sw,
                               fit_intercept=intercept, kernel=kernel)
    fast = interior_point_cg.solve(model, 1.3, tol=1e-8, options=_options(kernel))
    dense = interior_point.solve(model, 1.3, tol=1e-8)
    assert fast.converged and fast.solver == "interior_point_cg"
    assert fast.objective == pytest.approx(dense.objective, rel=1e-7)
    assert model.objective(fast.weights, 1.3, intercept=fast.extras.get("intercept")) == \
        pytest.approx(fast.objective, rel=1e-10)
    assert model.lower_bound(fast.dual, 1.3) == pytest.approx(fast.lower_bound, rel=1e-10)
    assert kernel != "linear" or fast.history["linear"]["cg_steps"] > 0


def test_matches_the_reference():
    H = dag()
    X, Y = label_sets(H, 20, 3, seed=5)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    fast = interior_point_cg.solve(model, 1.0, tol=1e-9, options=FORCE_CG)
    ref = hsvm.primal(X, Y, H, C=1.0, fit_intercept=True).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)


@pytest.mark.parametrize("shape, rescaling, weighted, intercept, kernel", CASES)
def test_label_set_engine_with_the_interior_point_inside(shape, rescaling, weighted, intercept,
                                                          kernel):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 24, 4, seed=6)
    sw = np.random.default_rng(7).uniform(0.5, 2.0, 24) if weighted else None
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, sample_weight=sw,
                               fit_intercept=intercept, kernel=kernel)
    inner = labelset.Options(enter=2, inner="interior_point", interior_below=np.inf,
                             interior_point=_options(kernel))
    fast = labelset.solve(model, 1.5, tol=1e-8, options=inner)
    ws = labelset.solve(model, 1.5, tol=1e-8, options=labelset.Options(enter=2))
    assert fast.converged and ws.converged
    assert fast.objective == pytest.approx(ws.objective, rel=1e-6)
    d, alpha = model.data, fast.dual.toarray()   # sparse over the model's pair list
    used = np.bincount(d.pair_i, weights=alpha * d.pair_cost, minlength=d.n_samples)
    assert np.all(alpha >= 0) and np.all(used <= 1.5 * d.Cw * (1 + 1e-9))
    assert model.lower_bound(fast.dual, 1.5) == pytest.approx(fast.lower_bound, rel=1e-9)


def test_solve_pair_rows_matrix_free_agrees_with_the_dense_master():
    H = tree()
    X, Y = label_sets(H, 20, 3, seed=8)
    model = hsvm_model.prepare(X, Y, H)
    data = model.data
    L = sp.csr_matrix(data.Lam, dtype=float)
    R = L[data.pair_y] - L[data.pair_ybar]
    args = (np.asarray(X), R, data.pair_ptr, data.pair_offset, data.pair_cost, data.Cw * 1.0)
    dense = interior_point.solve_pair_rows(*args, tol=1e-9)
    direct = interior_point_cg.solve_pair_rows(*args, tol=1e-9, options=FORCE_CG)
    assert dense.converged and direct.converged
    assert direct.solver == "interior_point_cg.rows"
    assert direct.objective == pytest.approx(dense.objective, rel=1e-7)
    assert np.allclose(direct.weights, dense.weights, atol=1e-3)


def test_refuses_an_unknown_preconditioner():
    H = tree()
    X, Y = label_sets(H, 10, 3)
    model = hsvm_model.prepare(X, Y, H)
    with pytest.raises(InputError, match="preconditioner"):
        interior_point_cg.solve(model, 1.0, options=interior_point_cg.Options(
            dense_below=0, preconditioner="none"))


@pytest.mark.slow
def test_dual_regularization_keeps_the_certified_optimum():
    # the RBF kernel's factor: ill-conditioned Newton systems that the regularization bounds
    H = tree()
    X, Y = label_sets(H, 30, 4, seed=3)
    model = hsvm_model.prepare(X, Y, H, kernel="rbf")
    dense = interior_point.solve(model, 1.0, tol=1e-8)
    free = interior_point_cg.solve(model, 1.0, tol=1e-8, options=interior_point_cg.Options(
        dense_below=0, preconditioner="feature_blocks", dual_regularization=1e-2))
    assert free.converged and free.objective == pytest.approx(dense.objective, rel=1e-7)
    regularized = interior_point.solve(model, 1.0, tol=1e-8, options=interior_point.Options(
        dual_regularization=1e-2))
    assert regularized.converged
    assert regularized.objective == pytest.approx(dense.objective, rel=1e-7)
