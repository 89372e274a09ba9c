"""The sibling-margin QP on wide hierarchies and the dense dual interior point
method (hiercvx.solvers.sibling_qp, method="dual_ipm"): work proportional to the pairs the data
use, certificates checked against the CVXPY reference (hiercvx.formulations.hpsi)."""

import warnings

import numpy as np
import pytest

from hiercvx import testing
from hiercvx.estimators import HierarchicalPsiClassifier, SiblingMarginSVC
from hiercvx.formulations import hpsi
from hiercvx.hierarchy import Hierarchy
from hiercvx.models.sibling import node_pair_table, prepare
from hiercvx.result import stopping_gap
from hiercvx.solvers import sibling_qp
from hiercvx.solvers.sibling_qp import SiblingQPSolver


def star_problem(n_leaves, n_classes=3, n=30, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(n_leaves)}})
    y = np.array([f"c{i % n_classes}" for i in range(n)], dtype=object)
    return X, y, H


def test_node_pair_table_of_some_nodes_is_the_full_table_restricted():
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r", "a1": "a", "a2": "a",
                                "b1": "b", "a11": "a1", "a12": "a1"})
    ptr, pos, neg = node_pair_table(H)
    some = np.array([H.index("a12"), H.index("b1"), H.index("c")])
    sptr, spos, sneg = node_pair_table(H, some)
    for k, v in enumerate(some):
        np.testing.assert_array_equal(spos[sptr[k]:sptr[k + 1]], pos[ptr[v]:ptr[v + 1]])
        np.testing.assert_array_equal(sneg[sptr[k]:sptr[k + 1]], neg[ptr[v]:ptr[v + 1]])


def test_star_uses_only_the_labelled_leaves_pairs():
    X, y, H = star_problem(2000, n=60, d=5)
    engine = SiblingQPSolver(prepare(X, y, H))
    assert engine.method == "dual_ipm"
    assert engine.problem.live_pairs(np.zeros(engine.P)).size == 60 * 2   # against the 2 other classes
    res = engine.solve(1.0, tol=1e-6)
    assert res.converged and res.gap <= 1e-6
    assert res.lower_bound <= res.objective
    # unlabelled leaves: zero weight, every pair against them at margin >= 1 (no loss)
    S = engine.model.train_scores(res.weights, res.biases)
    assert engine.pairs.u_min(S).min() > -np.inf
    labelled = [H.index(f"c{k}") for k in range(3)]
    others = np.setdiff1d(np.arange(1, len(H)), labelled)
    assert np.abs(res.weights[others]).max() <= 1e-12
    assert np.abs(res.biases.reshape(1, -1)[:, 1:].sum()) < 1e-8 * len(H)   # sum-to-zero


@pytest.mark.parametrize("C", [0.1, 1.0, 20.0])
def test_dual_ipm_on_a_small_star_matches_the_reference(C):
    X, y, H = star_problem(40, n=24, d=3, seed=1)
    model = prepare(X, y, H)
    with warnings.catch_warnings(record=True):
        fast = sibling_qp.solve(model, C, tol=1e-8, method="dual_ipm")
    assert fast.extras["method"] == "dual_ipm"
    # converged means the reported gap: at C = 0.1 the optimum is within 1.6e-6 of zero
    # functions, and the gap (which then also asks for 1 - 1e-4 of that decrease, i.e. 4e-10
    # absolute) stops at 1e-7, where the biases recovered from the dual's multipliers limit it
    assert fast.converged == (fast.gap <= 1e-8) and fast.gap <= 1e-6
    assert fast.converged or C == 0.1
    ref = hpsi.primal(X, y, H, C=C).solve()
    if fast.converged:
        testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)
    assert fast.objective == pytest.approx(ref.objective, rel=1e-8)
    assert model.objective(fast.weights, biases=fast.biases, C=C) == pytest.approx(fast.objective,
                                                                                  rel=1e-9)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_dual_ipm_matches_the_reference_on_a_tree_and_a_dc_step(kernel):
    rng = np.random.default_rng(3)
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r", "a1": "a", "a2": "a",
                                "b1": "b", "b2": "b", "b3": "b"})
    leaves = ["a1", "a2", "b1", "b2", "c", "a"]   # "a": a partial path (self leaf)
    y = np.array([leaves[k] for k in rng.integers(0, len(leaves), 30)], dtype=object)
    X = rng.standard_normal((30, 3))
    sigma = 1.0 if kernel == "rbf" else None
    model = prepare(X, y, H, kernel, sigma)
    engine = SiblingQPSolver(model, method="dual_ipm")
    fast = engine.solve(2.0, tol=1e-8)
    ref = hpsi.primal(X, y, H, C=2.0, kernel=kernel, sigma=sigma).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)
    lam = hpsi.linearization(model, model.train_scores(fast.weights, fast.biases), 2.0)
    step = engine.solve(2.0, lam, tol=1e-8)
    ref_step = hpsi.primal(X, y, H, C=2.0, kernel=kernel, sigma=sigma, pair_weights=lam).solve()
    testing.assert_fast_matches_reference(step, ref_step, rtol=1e-6)


def test_hpsi_on_a_star_follows_the_reference_dc_path():
    X, y, H = star_problem(30, n=24, d=3, seed=2)
    fast = sibling_qp.solve_dc(prepare(X, y, H), 5.0, tol=1e-8, gap_tol=1e-8)
    ref = hpsi.dc(X, y, H, C=5.0, tol=1e-8)
    assert fast.converged
    np.testing.assert_allclose(fast.dc_objectives, ref.dc_objectives, rtol=1e-5)


def test_estimators_fit_and_predict_a_wide_star():
    X, y, H = star_problem(3000, n=60, d=5)
    svm = SiblingMarginSVC(hierarchy=H).fit(X, y)
    assert svm.gap_ <= 1e-6 and set(svm.predict(X)) <= {"c0", "c1", "c2"}
    psi = HierarchicalPsiClassifier(hierarchy=H).fit(X, y)
    assert psi.gap_ <= 1e-6 and set(psi.predict(X)) <= {"c0", "c1", "c2"}


@pytest.mark.parametrize("C", [0.3, 3.0])
def test_working_set_matches_the_reference_and_warm_starts_a_dc_step(C):
    """A tree whose pairs outnumber what the first working set keeps: the set grows until the
    certificate holds on every pair; a DC step warm-starts from the last set."""
    rng = np.random.default_rng(5)
    parents = {"r": None, **{f"a{i}": "r" for i in range(5)},
               **{f"a{i}_{j}": f"a{i}" for i in range(5) for j in range(3)}}
    H = Hierarchy.from_parents(parents)
    leaves = [v for v in H.leaves]
    k = rng.integers(0, len(leaves), 50)
    y = np.array([leaves[c] for c in k], dtype=object)
    X = rng.standard_normal((50, 3)) + 2.0 * rng.standard_normal((len(leaves), 3))[k]
    model = prepare(X, y, H)
    engine = SiblingQPSolver(model, method="working_set")
    fast = engine.solve(C, tol=1e-6, max_passes=2)   # 8 sweeps: a rough first set
    assert fast.converged and fast.extras["method"] == "working_set"
    ref = hpsi.primal(X, y, H, C=C).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-5)
    lam = hpsi.linearization(model, model.train_scores(fast.weights, fast.biases), C)
    step = engine.solve(C, lam, tol=1e-6)
    assert step.converged
    ref_step = hpsi.primal(X, y, H, C=C, pair_weights=lam).solve()
    testing.assert_fast_matches_reference(step, ref_step, rtol=1e-5)


@pytest.mark.parametrize("n_leaves", [20, 3000])
@pytest.mark.parametrize("Estimator", [SiblingMarginSVC, HierarchicalPsiClassifier])
def test_one_class_star_fits_certified(Estimator, n_leaves):
    """One class in use: free biases meet every margin at zero weights, so the optimum is 0
    (the QP kept no pair on the wide star and the interior point met an empty system).  On
    20 leaves the engine takes the dense dual interior point, which stops at an objective of 0
    against a lower bound of round-off size."""
    X, y, H = star_problem(n_leaves, n_classes=1, n=60, d=5)
    est = Estimator(hierarchy=H).fit(X, y)
    res = est.result_  # an optimum of 0: certified by the decrease from zero (or the relative gap)
    assert n_leaves > 20 or res.extras["method"] == "ipm"
    assert res.converged_by in ("relative_gap", "decrease_from_zero")
    assert abs(stopping_gap(res.objective, res.lower_bound, res.extras.get("at_zero"))) <= 1e-6
    assert np.all(est.predict(X) == "c0")


def test_one_class_star_reference_certifies_the_zero_optimum():
    X, y, H = star_problem(50, n_classes=1, n=60, d=5)
    ref = hpsi.primal(X, y, H, C=1.0).solve()
    assert ref.objective <= 1e-9 * ref.extras["at_zero"]
    assert ref.converged_by in ("relative_gap", "decrease_from_zero")
    assert abs(stopping_gap(ref.objective, ref.lower_bound, ref.extras["at_zero"])) <= 1e-6
