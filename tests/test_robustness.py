"""Regression tests of issue 15 (robustness), solver and estimator side: a scale-aware
certificate (item 2), validated certificate tolerances (1), no silently ignored option (7),
one ConvergenceWarning for every uncertified stop and no HiGHS banner (8), wide hierarchies
at the cost of what the data use (5)."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import hiercvx.estimators as E
from hiercvx import methods
from hiercvx.exceptions import InputError
from hiercvx.hierarchy import Hierarchy
from hiercvx.methods.cases import TREE, problem
from hiercvx.models import orthogonal as otm
from hiercvx.models import sibling as sm
from hiercvx.result import gap_scale, relative_gap
from hiercvx.solvers import rda, sibling_qp

X_TREE, Y_TREE, _ = problem("tree", n=40, d=4)
X_FLAT, Y_FLAT, _ = problem("flat", n=40, d=4)


# ------------------------------------------------------------------ item 2: the gap at every scale
def test_relative_gap_is_scale_free():
    for s in (1e-12, 1e-6, 1.0, 1e6):
        assert relative_gap(3.0 * s, 2.0 * s) == pytest.approx(1 / 3)
        assert gap_scale(3.0 * s, -4.0 * s) == pytest.approx(4.0 * s)
    # zero weights against the zero dual point: never certified, however small the objective
    assert relative_gap(4e-7, 0.0) == 1.0
    assert relative_gap(0.0, 0.0) == 0.0
    # at_zero: relative to the decrease still possible from W = 0
    assert relative_gap(1.0, 1.0 - 1e-9, at_zero=1.0 + 1e-9) == pytest.approx(0.25)
    assert relative_gap(10.0, 9.0, at_zero=1000.0) == pytest.approx(0.1)  # ordinary scale: unchanged
    assert relative_gap(1.0, 0.5, at_zero=0.4) == relative_gap(1.0, 0.5)  # zero is optimal: no effect


def _scaled(make, X, y, C, scale):
    """The same estimator on ``X * scale`` with ``C / scale^2`` (and the intercept's constant
    feature scaled too, ``intercept_scaling=scale``): the same problem, every objective scaled
    by ``1 / scale^2``, the same predictions."""
    return make(C=C / scale ** 2, intercept_scaling=scale).fit(X * scale, y)


SCALE_CASES = {
    "HierarchicalSVC": (lambda **kw: E.HierarchicalSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "MulticlassSVC": (lambda **kw: E.MulticlassSVC(**kw), X_FLAT, Y_FLAT),
    "TopDownSVC": (lambda **kw: E.TopDownSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "OrthogonalTransferSVC": (lambda **kw: E.OrthogonalTransferSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
    "SiblingMarginSVC": (lambda **kw: E.SiblingMarginSVC(hierarchy=TREE, **kw), X_TREE, Y_TREE),
}


@pytest.mark.parametrize("name", sorted(SCALE_CASES))
def test_rescaled_problem_gives_the_same_fit(name):
    """X * 1e6 with C * 1e-12 is the problem at C = 1: before the scale-aware gap the fast
    solvers stopped at W = 0 after 0 iterations (training accuracy 0.2-0.25)."""
    make, X, y = SCALE_CASES[name]
    base = make(C=1.0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        tiny = _scaled(make, X, y, 1.0, 1e6)
    agree = np.mean(tiny.predict(X * 1e6) == base.predict(X))
    assert agree >= 0.95, agree
    assert np.mean(tiny.predict(X * 1e6) == y) >= np.mean(base.predict(X) == y) - 0.05
    if hasattr(base, "objective_"):
        assert tiny.objective_ * 1e12 == pytest.approx(base.objective_, rel=1e-3)
        assert tiny.n_iter_ > 0


def test_tiny_C_matches_the_reference_objective():
    """C = 1e-8: the working-set solver's answer has the reference's objective (relative)
    and is not the zero weight matrix; the reference certifies with tight solver tolerances."""
    C = 1e-8
    fast = E.HierarchicalSVC(hierarchy=TREE, C=C).fit(X_TREE, Y_TREE)
    ref = methods.get("hsvm").references["primal"](X_TREE, Y_TREE, TREE, C=C).solve(
        "CLARABEL", tol_gap_abs=1e-30, tol_gap_rel=1e-10, tol_feas=1e-12, tol_ktratio=1e-10)
    assert fast.n_iter_ > 0 and np.abs(fast.coef_).max() > 0
    assert abs(fast.objective_ - ref.objective) <= 1e-6 * ref.objective + (ref.objective - ref.lower_bound)
    assert fast.gap_ <= 1e-6 * (1 + 1e-6)


@pytest.mark.parametrize("name", ["MulticlassSVC", "OrthogonalTransferSVC", "SiblingMarginSVC"])
def test_tiny_C_does_not_certify_zero_weights(name):
    make, X, y = SCALE_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = make(C=1e-8).fit(X, y)
    coef = getattr(est, "coef_", None)
    if coef is None:
        coef = est.coef_class_
    assert np.abs(np.asarray(coef)).max() > 0
    assert len(np.unique(est.predict(X))) > 1  # W = 0 predicts one class for every sample


def test_rda_at_tiny_C_returns_the_certified_nonzero_point():
    """At C = 1e-8 W = 0 is within tol of the optimum, and so is the dual's minimizer: RDA
    returns the latter (the direction the data give), certified, with its own objective."""
    model = otm.prepare(X_TREE, Y_TREE, TREE, "orthogonal")
    res = rda.solve(model, C=1e-8, tol=1e-4)
    assert res.converged and res.gap <= 1e-4 * (1 + 1e-6)
    assert np.abs(res.weights).max() > 0
    assert res.objective == pytest.approx(model.objective(res.weights, C=1e-8), rel=1e-9)


def test_rda_certifies_a_zero_optimum():
    """A problem whose optimum is W = 0 (three of 500 leaves of a star, noise features): the
    decrease-from-zero term does not apply at zero itself, so the gap certifies it."""
    X, y, H = wide_data(500, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = rda.solve(otm.prepare(X, y, H, "orthogonal"), 1.0, tol=1e-4)
    assert res.converged


# ------------------------------------------------------------------ item 1: certificate tolerances
@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0, float("inf"), "x", None, True])
@pytest.mark.parametrize("which", ["gap_tol", "feas_tol"])
def test_reference_tolerances_are_validated(which, bad):
    prob = methods.get("hsvm").references["primal"](X_TREE, Y_TREE, TREE, C=1.0)
    with pytest.raises(InputError, match=which):
        prob.solve(**{which: bad})


# ------------------------------------------------------------------ item 7: no ignored option
MAX_ITER_ESTIMATORS = {
    "HierarchicalSVC": lambda **kw: E.HierarchicalSVC(hierarchy=TREE, **kw),
    "TopDownSVC": lambda **kw: E.TopDownSVC(hierarchy=TREE, **kw),
    "OrthogonalTransferSVC": lambda **kw: E.OrthogonalTransferSVC(hierarchy=TREE, **kw),
    "SiblingMarginSVC": lambda **kw: E.SiblingMarginSVC(hierarchy=TREE, **kw),
    "HierarchicalPsiClassifier": lambda **kw: E.HierarchicalPsiClassifier(hierarchy=TREE, **kw),
    "SequentialHierarchicalSVC": lambda **kw: E.SequentialHierarchicalSVC(hierarchy=TREE, **kw),
    "NormalizedHierarchicalSVC": lambda **kw: E.NormalizedHierarchicalSVC(hierarchy=TREE, **kw),
    "SharedNormSVC": lambda **kw: E.SharedNormSVC(hierarchy=TREE, **kw),
}


@pytest.mark.parametrize("solver", ["fast", "reference"])
@pytest.mark.parametrize("name", sorted(MAX_ITER_ESTIMATORS))
@pytest.mark.parametrize("max_iter", [1.5, 0, -3, "10", True])
def test_max_iter_is_validated_at_fit(name, solver, max_iter):
    est = MAX_ITER_ESTIMATORS[name](max_iter=max_iter, solver=solver)
    with pytest.raises(InputError, match="max_iter"):
        est.fit(X_TREE, Y_TREE)


def test_multiclass_max_iter_is_validated_at_fit():
    with pytest.raises(InputError, match="max_iter"):
        E.MulticlassSVC(max_iter=1.5, solver="reference").fit(X_FLAT, Y_FLAT)


def test_shared_norm_inner_max_iter_is_validated():
    with pytest.raises(InputError, match="inner_max_iter"):
        E.SharedNormSVC(hierarchy=TREE, inner_max_iter=2.5, solver="reference").fit(X_TREE, Y_TREE)


@pytest.mark.parametrize("bad", ["nope", None, 3])
def test_nhsvm_inference_is_validated_on_single_label_fits(bad):
    with pytest.raises(InputError, match="inference"):
        E.NormalizedHierarchicalSVC(hierarchy=TREE, inference=bad).fit(X_TREE, Y_TREE)


def test_hpsi_max_iter_bounds_every_convex_step():
    """max_iter reaches the fast solver's convex steps: one ALM step cannot certify them."""
    with pytest.warns(ConvergenceWarning):
        E.HierarchicalPsiClassifier(hierarchy=TREE, method="alm", max_iter=1, dc_max_iter=1).fit(
            X_TREE, Y_TREE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        E.HierarchicalPsiClassifier(hierarchy=TREE, method="alm", max_iter=500, dc_max_iter=20).fit(
            X_TREE, Y_TREE)


# ------------------------------------------------------------------ item 8: warned, and quiet
def test_dc_loop_warns_when_it_stops_on_max_iter():
    model = sm.prepare(X_TREE, Y_TREE, TREE)
    with pytest.warns(ConvergenceWarning, match="DC steps without reaching a fixed point"):
        res = sibling_qp.solve_dc(model, 1.0, tol=0.0, max_iter=1)
    assert not res.converged and res.status == "iteration_limit"


def test_nhsvm_sgd_warns():
    model = methods.get("nhsvm").prepare(X_TREE, Y_TREE, TREE)
    with pytest.warns(ConvergenceWarning, match="without a certificate"):
        res = methods.get("nhsvm").fast_solvers["pairwise"].solve(model, 1.0, method="sgd", max_iter=3)
    assert not res.converged


def test_highs_banner_does_not_reach_stdout():
    code = ("import numpy as np\n"
            "from hiercvx.inference import LabelSetOracle, new_highs\n"
            "from hiercvx.methods.cases import DAG\n"
            "new_highs()\n"
            "LabelSetOracle(DAG, 'ilp').solve(np.ones((2, len(DAG))))\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done", out.stdout


# ------------------------------------------------------------------ item 5: wide hierarchies
def star(n_leaves):
    return Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(n_leaves)}})


def wide_data(n_leaves, n_classes, n=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.array([f"c{i % n_classes}" for i in range(n)], dtype=object)
    return X, y, star(n_leaves)


def test_rda_on_a_star_keeps_omega_sparse():
    """K = I on a star: S(W) stays in K's sparse pattern and its solve is a division."""
    X, y, H = wide_data(2000, 3)
    model = otm.prepare(X, y, H, "orthogonal")
    reg = rda.regularizer_for(model)
    assert reg.sparse
    W = np.random.default_rng(1).standard_normal((reg.size, 5))
    S, R = reg.pattern(W)
    assert sp.issparse(S) and S.nnz == reg.size
    assert R == pytest.approx(otm.omega(W, model.K))
    Z, _ = reg.minorant_solve(S, W)
    assert np.allclose(Z, W / np.diag(model.K)[:, None])
    with pytest.warns(ConvergenceWarning):
        res = rda.solve(model, 1.0, max_iter=30)
    assert np.isfinite(res.objective) and res.lower_bound <= res.objective


def test_sparse_omega_matches_the_dense_path():
    """The sparse pattern path (a tree with 300 non-root nodes, K banded by subtrees) solves
    the same minorant as the dense one."""
    H = Hierarchy.from_parents({"r": None, **{f"a{i}": "r" for i in range(100)},
                                **{f"b{i}_{j}": f"a{i}" for i in range(100) for j in range(2)}})
    K = otm.heuristic_K(H, alpha=0.3)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((K.shape[0], 3))
    sparse_reg = rda.Regularizer("omega", K, np.full(K.shape[0], 0.5))
    assert sparse_reg.sparse
    S, R = sparse_reg.pattern(W)
    dense = K * np.sign(W @ W.T)
    np.fill_diagonal(dense, np.diag(K))
    assert np.allclose(S.toarray(), dense) and R == pytest.approx(otm.omega(W, K))
    Sd = dense + 5 * np.eye(K.shape[0])  # PD
    Z, _ = sparse_reg.minorant_solve(sp.csr_matrix(Sd), W)
    assert np.allclose(Z, np.linalg.solve(Sd, W))
    assert otm.half_inverse_quadratic(W, sp.csr_matrix(Sd)) == pytest.approx(
        otm.half_inverse_quadratic(W, Sd))
    assert otm.strong_convexity(K) == pytest.approx(
        float(np.linalg.eigvalsh(otm.comparison_matrix(K))[0]))


def test_orthogonal_pairs_only_on_used_paths():
    X, y, H = wide_data(2000, 3)
    model = otm.prepare(X, y, H, "orthogonal")
    assert model.data.n_pairs == 60 * 1999


def test_sibling_repair_sparse_matches_dense():
    rng = np.random.default_rng(0)
    A = sp.random(400, 900, density=0.01, random_state=1, format="csr")
    A = A + sp.eye(400, 900, format="csr")
    x = rng.standard_normal(900)
    rhs = A @ x
    step = sibling_qp.least_norm_step(A.tocsr(), rhs)
    dense, *_ = np.linalg.lstsq(A.toarray(), rhs, rcond=None)
    assert np.allclose(A @ step, rhs, atol=1e-9)
    assert np.allclose(step, dense, atol=1e-7)


def test_sibling_svm_on_a_wide_star_needs_no_dense_basis():
    X, y, H = wide_data(2000, 3)
    model = sm.prepare(X, y, H)
    engine = sibling_qp.SiblingQPSolver(model)
    assert engine.method == "alm" and engine._basis is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = engine.solve(1.0, tol=1e-6, max_iter=2, max_passes=5)
    assert np.isfinite(res.objective) and res.lower_bound <= res.objective * (1 + 1e-9)
