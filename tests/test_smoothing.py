"""The smoothing solver of the margin family (``hiercvx.solvers.smoothing``).

The soft maximum is checked against its defining inequalities and a finite-difference
gradient; its multipliers against the dual feasible set and the recovery map (4.12); the
solver against the working-set solver and the CVXPY reference, with and without the dual
phase; the margin engine's choice of it on many pairs per example.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

import hiercvx as hc
from hiercvx import testing
from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.solvers import margin_engine, smoothing, working_set


def wide_tree(n_leaves=12):
    parents = {"r": None}
    for g in range(3):
        parents[f"g{g}"] = "r"
    for k in range(n_leaves):
        parents[f"l{k}"] = f"g{k % 3}"
    return hc.Hierarchy.from_parents(parents)


def label_sets(H, n, d, size, seed=0):
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    means = rng.standard_normal((len(leaves), d))
    Y = [frozenset(rng.choice(leaves, size=size, replace=False)) for _ in range(n)]
    X = np.array([means[[leaves.index(v) for v in s]].mean(axis=0) for s in Y])
    return X + 0.7 * rng.standard_normal(X.shape), Y


@pytest.fixture(autouse=True)
def one_blas_thread():
    """One BLAS thread: the solvers here take thousands of L-BFGS and working-set steps on
    arrays of a few hundred numbers, where a second thread only adds its wake-ups (and on a
    busy machine waits for a core)."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def model():
    H = wide_tree()
    X, Y = label_sets(H, n=30, d=4, size=3)
    return hsvm_model.prepare(X, Y, H, fit_intercept=True)


def test_soft_maximum_brackets_the_slacks(model):
    rng = np.random.default_rng(1)
    data, C = model.data, 0.7
    P_i = np.diff(data.pair_ptr)
    for mu in (1.0, 0.1, 1e-3):
        W = rng.standard_normal((data.Lam.shape[1], model.X.shape[1]))
        exact = _margin.primal_objective(W, model.X, data, C)
        smooth = smoothing.smoothed_objective(model, W, C, mu)
        assert exact <= smooth + 1e-9
        assert smooth <= exact + mu * C * float(data.Cw @ np.log1p(P_i)) + 1e-9


def test_gradient_matches_finite_differences(model):
    rng = np.random.default_rng(2)
    smooth = smoothing._Smoothed(model, 1.3)
    w = 0.3 * rng.standard_normal(int(np.prod(smooth.shape)))
    _, grad = smooth.value_and_gradient(w, 0.5)
    for _ in range(5):
        direction = rng.standard_normal(w.size)
        h = 1e-6
        up = smooth.value_and_gradient(w + h * direction, 0.5)[0]
        down = smooth.value_and_gradient(w - h * direction, 0.5)[0]
        assert (up - down) / (2 * h) == pytest.approx(grad @ direction, rel=1e-5, abs=1e-6)


def test_soft_multipliers_are_dual_feasible_and_recover_the_gradient(model):
    rng = np.random.default_rng(3)
    data, C, mu = model.data, 2.0, 0.2
    W = rng.standard_normal((data.Lam.shape[1], model.X.shape[1]))
    alpha = smoothing.soft_multipliers(model, W, C, mu)
    assert np.all(alpha >= 0)
    used = np.bincount(data.pair_i, weights=alpha * data.pair_cost, minlength=data.n_samples)
    assert np.all(used <= C * data.Cw * (1 + 1e-12))
    # the smoothed gradient is W - w(alpha) (thesis (4.12)): zero exactly when W = w(alpha)
    smooth = smoothing._Smoothed(model, C)
    _, grad = smooth.value_and_gradient(W.ravel(), mu)
    assert np.allclose(grad.reshape(W.shape), W - model.weights_from_dual(alpha), atol=1e-10)
    # weak duality: any of them bounds the optimum from below
    opt = working_set.solve(model, C, tol=1e-10)
    assert model.lower_bound(alpha, C) <= opt.objective + 1e-8


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_solver_matches_the_reference(rescaling):
    H = wide_tree()
    X, Y = label_sets(H, n=24, d=5, size=2, seed=4)
    model = hsvm_model.prepare(3 * X, Y, H, rescaling=rescaling)
    fast = smoothing.solve(model, 2.0, tol=1e-9)
    assert fast.converged and fast.gap <= 1e-9
    assert fast.objective == pytest.approx(model.objective(fast.weights, 2.0), rel=1e-12)
    ref = hsvm.primal(3 * X, Y, H, C=2.0, rescaling=rescaling).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)


def test_dual_phase_finishes_what_lbfgs_leaves(model, passes_only):
    # ten L-BFGS iterations cannot certify 1e-9: the working set, warm-started, has to
    opts = smoothing.Options(working_set=passes_only)
    with pytest.warns(ConvergenceWarning, match=r"no dual phase ran \(dual_passes=0\)"):
        short = smoothing.solve(model, 1.0, tol=1e-9, max_iter=10, dual_passes=0, options=opts)
    assert short.extras["dual_passes"] == 0 and short.gap > 1e-6
    # the bound is the model's own dual (4.14) at the returned point, not a running sum
    assert short.lower_bound == pytest.approx(model.lower_bound(short.dual, 1.0), rel=1e-10)
    assert short.objective == pytest.approx(model.objective_at(short, 1.0), rel=1e-12)
    full = smoothing.solve(model, 1.0, tol=1e-9, max_iter=10, dual_passes=5000, options=opts)
    assert full.converged and full.extras["dual_passes"] > 0
    ref = working_set.solve(model, 1.0, tol=1e-10)
    assert full.objective == pytest.approx(ref.objective, rel=1e-7)
    assert full.objective == pytest.approx(model.objective_at(full, 1.0), rel=1e-12)
    assert full.lower_bound == pytest.approx(model.lower_bound(full.dual, 1.0), rel=1e-12)


def test_a_stall_leaves_its_iterations_to_the_dual_phase(model, monkeypatch, passes_only):
    # every stage counts as a stall: the L-BFGS iterations left over become dual passes
    stalls = smoothing.Options(stall=np.inf, working_set=passes_only)
    budgets = []
    solve = working_set.solve
    monkeypatch.setattr(working_set, "solve",
                        lambda *a, **k: budgets.append(k["max_iter"]) or solve(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = smoothing.solve(model, 1.0, tol=1e-15, max_iter=700, dual_passes=3, options=stalls)
    assert res.n_iter <= stalls.stage_iter and budgets == [700 - res.n_iter]
    assert res.extras["dual_passes"] <= budgets[0]
    budgets.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        smoothing.solve(model, 1.0, tol=1e-15, max_iter=700, dual_passes=0, options=stalls)
    assert budgets == []  # dual_passes=0: no dual phase at all
    # max_iter runs out in the primal phase (no stall): the warning says so
    never = smoothing.Options(stall=-np.inf, working_set=passes_only)
    with pytest.warns(ConvergenceWarning, match="max_iter ran out while L-BFGS was still lowering"):
        smoothing.solve(model, 1.0, tol=1e-12, max_iter=5, dual_passes=0, options=never)
    # one dual pass cannot finish: the warning says which side lags and what to raise
    with pytest.warns(ConvergenceWarning, match=r"stalled and 1 working-set passes .*dual side"):
        smoothing.solve(model, 1.0, tol=1e-12, max_iter=5, dual_passes=1, options=stalls)


def test_warm_start_keeps_feasibility(model):
    rng = np.random.default_rng(5)
    alpha = smoothing.soft_multipliers(
        model, rng.standard_normal((model.data.Lam.shape[1], model.X.shape[1])), 1.0, 1.0)
    warm = smoothing._sparsified(alpha, model.data)
    assert np.all((warm == 0) | (warm == alpha)) and np.count_nonzero(warm) < alpha.size
    assert np.allclose(_margin.project_dual(warm, model.data, 1.0), warm)


def test_engine_chooses_smoothing_for_many_pairs_per_example():
    H = wide_tree(n_leaves=120)  # 120 classes x 60 features: no affordable Newton step
    X, Y = label_sets(H, n=60, d=60, size=30, seed=6)
    model = hsvm_model.prepare(X, Y, H)
    assert model.data.n_pairs >= margin_engine.Options().smooth_from_pairs * 60
    # the label-set engine (solvers.labelset) aside: its own rule is tested with it
    pairs_listed = margin_engine.Options(labelset_from_pairs=10 ** 9)
    assert margin_engine.choose(model, options=pairs_listed) == "smoothing"
    # smoothing takes no dual start: a warm start goes to the coordinate methods, or to the
    # label-set engine where that is the choice
    assert margin_engine.choose(model, warm=True, options=pairs_listed) == "working_set"
    assert margin_engine.choose(model, warm=True) == "labelset"
    few = hsvm_model.prepare(*label_sets(wide_tree(), n=20, d=3, size=2), wide_tree())
    assert margin_engine.choose(few, options=pairs_listed) != "smoothing"
    with pytest.raises(InputError, match="warm start"):
        margin_engine.solve(model, 1.0, solver="smoothing", alpha0=np.zeros(model.data.n_pairs))


def test_engine_chooses_smoothing_for_millions_of_pairs():
    # hundreds of pairs per example: the working set below the total, smoothing above it
    H = wide_tree(n_leaves=120)
    model = hsvm_model.prepare(*label_sets(H, n=60, d=60, size=5, seed=7), H)
    per_example = model.data.n_pairs / 60
    # the label-set engine (solvers.labelset) aside: its own rule is tested with it
    defaults = margin_engine.Options(labelset_from_pairs=10 ** 9)
    assert defaults.smooth_label_sets_from_pairs <= per_example < defaults.smooth_from_pairs
    assert margin_engine.choose(model, options=defaults) == "working_set"
    total = dataclasses.replace(defaults, smooth_from_total_pairs=model.data.n_pairs)
    assert margin_engine.choose(model, options=total) == "smoothing"
    assert margin_engine.choose(model, warm=True, options=total) == "working_set"
    fewer = dataclasses.replace(total, smooth_label_sets_from_pairs=int(per_example) + 1)
    assert margin_engine.choose(model, options=fewer) == "working_set"


def test_refuses_models_without_node_weights():
    H = wide_tree()
    X, Y = label_sets(H, n=20, d=3, size=2)
    with pytest.raises(InputError, match="node weights"):
        smoothing.solve(hsvm_model.prepare(X, Y, H, kernel="rbf"), 1.0)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_product_kernel_matches_the_kernel_over_pair_arrays(rescaling):
    """The soft maximum read from each example's class lists and the loss matrix (the route of
    models built by ``margin_data``) equals the one read from the per-pair arrays, on examples
    with many, one and no pairs and with sample weights."""
    rng = np.random.default_rng(5)
    n, q, M = 9, 7, 11
    Y = rng.random((n, q)) < 0.4
    Y[0] = True    # every class relevant: no pairs
    Y[1] = False   # none relevant: no pairs
    Y[2] = False
    Y[2, 3] = True
    loss = 1.0 + 3.0 * rng.random((q, q))
    Lam = (rng.random((q, M)) < 0.4).astype(float)
    data = _margin.margin_data(Y, loss, Lam=Lam, rescaling=rescaling,
                               sample_weight=rng.uniform(0.5, 2.0, n))
    model = _margin.model_from_data(rng.standard_normal((n, 3)), data)
    smooth = smoothing._Smoothed(model, 1.7)
    assert smooth.lists is not None
    pair_arrays = tuple(np.ascontiguousarray(a, dtype=np.int64)
                        for a in (data.pair_ptr, data.pair_y, data.pair_ybar))
    S = rng.standard_normal((n, q))
    for mu in (2.0, 0.05):
        G1, a1 = np.zeros((n, q)), np.zeros(data.n_pairs)
        G2, a2 = np.zeros((n, q)), np.zeros(data.n_pairs)
        by_pairs = smoothing._soft_slacks(S, *pair_arrays, np.asarray(data.pair_offset, float),
                                          np.asarray(data.pair_cost, float), smooth.budget, mu,
                                          G1, a1)
        by_lists = smooth.soft_slacks(S, mu, G2, a2)
        np.testing.assert_allclose(by_lists, by_pairs, rtol=1e-13)
        np.testing.assert_allclose(G2, G1, atol=1e-13)
        np.testing.assert_allclose(a2, a1, atol=1e-13)


def test_pairs_other_than_the_products_take_the_per_pair_kernel(model):
    import dataclasses
    data = model.data
    keep = np.ones(data.n_pairs, dtype=bool)
    keep[::3] = False
    pi = data.pair_i[keep]
    ptr = np.r_[0, np.cumsum(np.bincount(pi, minlength=data.n_samples))]
    fewer = dataclasses.replace(data, pair_i=pi, pair_y=data.pair_y[keep],
                                pair_ybar=data.pair_ybar[keep], pair_loss=data.pair_loss[keep],
                                pair_ptr=ptr)
    assert smoothing._product_lists(data) is not None
    assert smoothing._product_lists(fewer) is None
    swapped = dataclasses.replace(data, pair_ybar=data.pair_ybar[::-1].copy())
    assert smoothing._product_lists(swapped) is None
