"""ReferenceProblem / ReferenceSolution: certification, refusal, solver choice, size limit; kernels."""

import cvxpy as cp
import numpy as np
import pytest

import hiercvx as hc
from hiercvx import kernels, testing
from hiercvx._validation import check_features, check_positive
from hiercvx.reference import (SOLVER_PREFERENCE, ReferenceProblem, check_size, choose_solver,
                               problem_class, usable_solvers)


def binary_svm(seed=0, n=30, lower_bound=None):
    """A soft-margin SVM without bias: a QP whose dual (0 <= a <= C) is known in closed form."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.sign(X[:, 0] + 0.3 * rng.standard_normal(n))
    C = cp.Parameter(nonneg=True, value=1.0)
    w, xi = cp.Variable(3), cp.Variable(n)
    margin = cp.multiply(y, X @ w) >= 1 - xi
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * cp.sum(xi)), [margin, xi >= 0])

    def objective(v):
        return 0.5 * v["w"] @ v["w"] + C.value * np.maximum(0, 1 - y * (X @ v["w"])).sum()

    def dual_bound(v, d):
        a = np.clip(d["margin"], 0, C.value)
        u = X.T @ (a * y)
        return a.sum() - 0.5 * u @ u

    return ReferenceProblem(prob, variables={"w": w, "xi": xi}, objective=objective,
                            lower_bound=lower_bound or dual_bound, weights=lambda v: v["w"],
                            constraints={"margin": margin}, parameters={"C": C}, name="binary SVM")


def test_certified_solution_and_two_solvers():
    sol = binary_svm().solve()
    testing.assert_certified(sol)
    assert sol.status == "optimal" and sol.solver == "CLARABEL" and sol.problem_class == "QP"
    assert sol.weights.shape == (3,) and set(sol.values) == {"w", "xi"}
    assert abs(sol.objective - sol.solver_objective) < 1e-6 * max(1, abs(sol.objective))
    assert sol.build_time >= 0 and sol.solve_time >= 0
    assert "relative gap" in sol.certificate()
    sols = testing.solve_with_each(binary_svm, ["CLARABEL", "ECOS", "OSQP"])
    a, b = list(sols.values())[:2]
    testing.assert_same_optimum(a, b, rtol=1e-6)


def test_parameter_sweep_matches_fresh_build():
    prob = binary_svm()
    prob.solve()
    swept = prob.set(C=7.5).solve()
    fresh = binary_svm()
    fresh.parameters["C"].value = 7.5
    testing.assert_same_optimum(swept, fresh.solve(), rtol=1e-7)
    with pytest.raises(hc.InputError, match="not a parameter"):
        prob.set(lam=1.0)
    with pytest.raises(hc.InputError, match="non-negative"):
        prob.set(C=-1.0)


def test_bad_certificate_is_refused():
    # a "lower bound" that is not a dual bound: gap far over tolerance
    with pytest.raises(hc.SolverError, match="gap") as err:
        binary_svm(lower_bound=lambda v, d: -100.0).solve()
    assert err.value.solver == "CLARABEL" and err.value.gap > 1
    # a lower bound above the objective violates weak duality
    with pytest.raises(hc.SolverError, match="weak duality"):
        binary_svm(lower_bound=lambda v, d: 1e6).solve()


def test_infeasible_and_unbounded_are_refused():
    x = cp.Variable(2)
    prob = cp.Problem(cp.Minimize(cp.sum(x)), [x >= 1, x <= 0])
    rp = ReferenceProblem(prob, variables={"x": x}, objective=lambda v: v["x"].sum(),
                          lower_bound=lambda v, d: 0.0, weights=lambda v: v["x"], name="infeasible")
    with pytest.raises(hc.SolverError, match="infeasible") as err:
        rp.solve()
    assert err.value.status.startswith("infeasible")
    prob = cp.Problem(cp.Minimize(cp.sum(x)), [x <= 0])
    rp = ReferenceProblem(prob, variables={"x": x}, objective=lambda v: v["x"].sum(),
                          lower_bound=lambda v, d: 0.0, weights=lambda v: v["x"], name="unbounded")
    with pytest.raises(hc.SolverError, match="unbounded"):
        rp.solve()


def test_infeasibility_residual_is_checked():
    x = cp.Variable(2)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x)), [cp.sum(x) == 1])
    rp = ReferenceProblem(prob, variables={"x": x}, objective=lambda v: float(v["x"] @ v["x"]),
                          lower_bound=lambda v, d: 0.5, weights=lambda v: v["x"],
                          infeasibility=lambda v: 1.0, name="residual")
    with pytest.raises(hc.SolverError, match="violates"):
        rp.solve()


def test_solver_choice():
    x = cp.Variable(3)
    assert problem_class(cp.Problem(cp.Minimize(cp.sum(x)), [x >= 0])) == "LP"
    assert problem_class(cp.Problem(cp.Minimize(cp.sum_squares(x)))) == "QP"
    assert problem_class(cp.Problem(cp.Minimize(cp.norm(x, 2)), [x >= 1])) == "SOCP"
    Xs = cp.Variable((2, 2), symmetric=True)
    assert problem_class(cp.Problem(cp.Minimize(cp.trace(Xs)), [Xs >> 0])) == "SDP"
    z = cp.Variable(2, boolean=True)
    assert problem_class(cp.Problem(cp.Maximize(cp.sum(z)), [cp.sum(z) <= 1])) == "MILP"
    assert choose_solver(cp.Problem(cp.Maximize(cp.sum(z)), [cp.sum(z) <= 1])) == "HIGHS"
    assert choose_solver(cp.Problem(cp.Minimize(cp.sum_squares(x))), "ecos") == "ECOS"
    with pytest.raises(hc.SolverUnavailableError, match="not installed"):
        choose_solver(cp.Problem(cp.Minimize(cp.sum_squares(x))), "NOSUCHSOLVER")
    if "GUROBI" not in usable_solvers():
        with pytest.raises(hc.SolverUnavailableError, match="not installed"):
            binary_svm().solve(solver="GUROBI")
    assert usable_solvers()["CLARABEL"] == "ok"


def test_size_limit():
    check_size(10, 10, 100, max_size=1000)
    with pytest.raises(hc.ProblemTooLargeError, match="max_size=5000") as err:
        check_size(100, 200, 5000, max_size=1000)
    assert isinstance(err.value, ValueError)


def test_validation_helpers():
    with pytest.raises(hc.InputError, match="non-finite"):
        check_features([[1.0, np.nan]])
    with pytest.raises(hc.InputError, match="equal length|2-D"):
        check_features([[1.0, 2.0], [1.0]])
    with pytest.raises(hc.InputError, match="positive"):
        check_positive(0.0)
    with pytest.raises(hc.InputError, match="positive"):
        check_positive("abc")


def test_kernels():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((25, 4))
    K = kernels.gram(X, kernel="linear", check=True)
    assert np.allclose(K, X @ X.T)
    k = kernels.make_kernel("rbf", X=X)
    d = np.linalg.norm(X[:, None] - X[None], axis=2)
    assert np.isclose(k.sigma, np.median(d[np.triu_indices(25, 1)]))
    assert np.allclose(k(X), np.exp(-d ** 2 / (2 * k.sigma ** 2)))
    y = np.arange(25) % 3
    between = d[np.triu_indices(25, 1)][(y[:, None] != y[None])[np.triu_indices(25, 1)]]
    assert np.isclose(kernels.median_heuristic(X, y), np.median(between))
    import scipy.sparse as sp
    assert np.allclose(kernels.make_kernel("rbf", sigma=1.3)(sp.csr_matrix(X), X),
                       kernels.make_kernel("rbf", sigma=1.3)(X, X))
    with pytest.raises(hc.InputError, match="smallest eigenvalue"):
        kernels.check_psd(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(hc.InputError, match="symmetric"):
        kernels.check_psd(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(hc.InputError, match="unknown kernel"):
        kernels.make_kernel("poly")


def test_automatic_choice_falls_back_to_the_next_solver(monkeypatch):
    """solver=None: a first choice that cannot be certified hands over to the next installed
    solver of the class; a named solver is tried alone; when all fail, the first choice's
    error (status, solver, gap) is raised naming the fallbacks' reasons."""
    real = ReferenceProblem._solve_with
    broken = set()

    def flaky(self, name, *args):
        if name in broken:
            raise hc.SolverError(f"{self.name}: inaccurate", status="optimal_inaccurate", solver=name,
                                 gap=0.5)
        return real(self, name, *args)

    monkeypatch.setattr(ReferenceProblem, "_solve_with", flaky)
    prob = binary_svm()
    first, second = [n for n in SOLVER_PREFERENCE["QP"] if n in hc.reference.installed_solvers()][:2]
    broken.add(first)
    sol = prob.solve()
    assert sol.solver == second and [n for n, _ in sol.failed_solvers] == [first]
    testing.assert_certified(sol)
    testing.assert_same_optimum(sol, binary_svm().solve(solver=second), rtol=1e-6)
    with pytest.raises(hc.SolverError, match="inaccurate"):
        prob.solve(solver=first)
    broken.update(SOLVER_PREFERENCE["QP"])
    with pytest.raises(hc.SolverError, match="fallbacks failed too") as err:
        prob.solve()
    assert err.value.solver == first and err.value.status == "optimal_inaccurate" and err.value.gap == 0.5


def test_gaussian_sibling_margin_primal_is_certified_at_large_C():
    """The kernel primal of Wang et al. (2) at C = 1000 (Example 3, n = 150, Gaussian kernel of
    numerical rank ~76) is certified by each QP solver on its own, and matches the dual.

    Declared in the representer coefficients ``c_v`` (scores ``K c_v``), it left every solver
    ``optimal_inaccurate`` or over the gap: ``c_v`` was free on the null space of ``K`` and
    nearly free on its eigenvalues down to 1e-12 lambda_max.  It is declared in the features
    ``z_v = L^T c_v`` of ``K = L L^T`` instead (identity Hessian, no free direction)."""
    from hiercvx.datasets import make_wang_example3
    from hiercvx.estimators.sibling import paper_sigma
    from hiercvx.formulations import hpsi

    ds = make_wang_example3(n_samples=150, random_state=0)
    sigma = paper_sigma(ds.X, ds.y)

    def build():
        return hpsi.primal(ds.X, ds.y, ds.hierarchy, C=1e3, kernel="rbf", sigma=sigma)

    primal = build().solve()
    dual = hpsi.dual(ds.X, ds.y, ds.hierarchy, C=1e3, kernel="rbf", sigma=sigma).solve()
    testing.assert_certified(primal)
    assert not primal.failed_solvers      # the first choice certifies: no fallback needed
    testing.assert_same_optimum(primal, dual, rtol=1e-6)
    for sol in testing.solve_with_each(build, ["CLARABEL", "ECOS", "OSQP"]).values():
        testing.assert_certified(sol)
        testing.assert_same_optimum(sol, dual, rtol=1e-6)


def test_options_set_the_certificate_and_the_retries():
    """``solve(options=Options(...))``: the tolerances, the tight settings of the second try and
    the fallback; the keywords ``gap_tol`` / ``feas_tol`` still override them; a bad tolerance
    is an InputError; a reference never returns an uncertified answer whatever the options."""
    from hiercvx.reference import Options
    sol = binary_svm().solve(options=Options(gap_tol=1e-7))
    assert sol.tol == 1e-7 and sol.gap <= 1e-7
    assert binary_svm().solve(gap_tol=1e-5, options=Options(gap_tol=1e-7)).tol == 1e-5
    with pytest.raises(hc.InputError, match="gap_tol"):
        Options(gap_tol=float("nan"))
    with pytest.raises(hc.InputError, match="feas_tol"):
        binary_svm().solve(feas_tol=-1.0)
    with pytest.raises(hc.InputError, match="options"):
        binary_svm().solve(options={"gap_tol": 1e-6})
    # a bound that never certifies: each try says why, with the tight settings given
    tries = Options(tight_settings={"CLARABEL": {"max_iter": 300}}, fallback=False)
    with pytest.raises(hc.SolverError, match="tight tolerances") as err:
        binary_svm(lower_bound=lambda v, d: -100.0).solve(options=tries)
    assert err.value.solver == "CLARABEL" and "fallbacks" not in str(err.value)
    assert not Options().worth_rescaling(10.0) and Options().worth_rescaling(1e4)
    assert Options(rescale_outside=(1e-3, 1.0)).worth_rescaling(10.0)


def test_a_swept_C_is_refused_where_the_builder_refuses_it():
    from hiercvx.datasets import make_cai_synthetic
    from hiercvx.formulations import hsvm

    ds = make_cai_synthetic(n_samples=12, n_features=2, depth=2, random_state=0)
    prob = hsvm.primal(ds.X, ds.y, ds.hierarchy, C=1.0)
    with pytest.raises(hc.InputError, match="C must be positive"):
        hsvm.primal(ds.X, ds.y, ds.hierarchy, C=0.0)
    with pytest.raises(hc.InputError, match="parameter C must be positive, as the builder requires"):
        prob.set(C=0.0)
