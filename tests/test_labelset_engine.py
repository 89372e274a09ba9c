"""The label-set engine of the margin family (``hiercvx.solvers.labelset``).

The oracle (most violated pair per example, without listing the pairs) against brute force
over the listed pairs; the engine against the CVXPY reference (tree and DAG, both rescalings,
sample weights, intercept) and the working-set solver; its certificate recomputed from the
weights and the dual; ``check_solver`` on it; the margin engine's choice of it.
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import hiercvx as hc
from hiercvx import methods, testing
from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.solvers import interior_point, labelset, margin_engine, working_set
from hiercvx.models._labelset_kernels import violated_pairs

from labelset_cases import HIERARCHIES, dag, label_sets, tree  # noqa: F401


# ------------------------------------------------------------------ the oracle
@pytest.mark.parametrize("rescaling", ["slack", "margin"])
@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_oracle_is_the_brute_force_maximum_over_the_pairs(shape, rescaling):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 25, 3, seed=1)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, loss="zero_one"
                               if rescaling == "margin" else "half_symmetric")
    S = np.random.default_rng(2).standard_normal((25, model.data.n_classes))
    y, ybar, v = labelset.oracle(S, model.data)
    by, bybar, bv = model.oracle(S)  # over the listed pairs
    assert np.allclose(v, bv, rtol=0, atol=1e-12)
    # the returned pair is a pair of the example and attains the maximum
    d = model.data
    assert np.all(d.Y[np.arange(25), y]) and not np.any(d.Y[np.arange(25), ybar])
    diff = S[np.arange(25), y] - S[np.arange(25), ybar]
    L = d.loss[y, ybar]
    again = L * (1 - diff) if rescaling == "slack" else L - diff
    assert np.allclose(again, v, atol=1e-12)
    assert np.allclose(labelset.full_slacks(S, d), hc.models.margin.slacks(S, d), atol=1e-12)


def test_violated_pairs_are_the_largest_above_the_floor():
    H = dag()
    X, Y = label_sets(H, 20, 3, seed=3)
    model = hsvm_model.prepare(X, Y, H)
    d = model.data
    S = np.random.default_rng(4).standard_normal((20, d.n_classes))
    floor = np.random.default_rng(5).uniform(0.5, 1.5, 20)
    k = 3
    ptr, rel = hc.models.margin.relevant_lists(d.Y)
    out_y = np.empty((20, k), np.int64)
    out_b = np.empty((20, k), np.int64)
    count = violated_pairs(S, ptr, rel, d.loss, True, floor, out_y, out_b)
    for i in range(20):
        lo, hi = d.pair_ptr[i], d.pair_ptr[i + 1]
        py, pb = d.pair_y[lo:hi], d.pair_ybar[lo:hi]
        v = d.pair_loss[lo:hi] * (1 - (S[i, py] - S[i, pb]))
        per_ybar = {}
        for yy, bb, vv in zip(py, pb, v):
            per_ybar[bb] = max(per_ybar.get(bb, -np.inf), vv)
        best = sorted((val for val in per_ybar.values() if val > floor[i]), reverse=True)[:k]
        assert count[i] == len(best)
        got = [d.loss[out_y[i, t], out_b[i, t]] * (1 - (S[i, out_y[i, t]] - S[i, out_b[i, t]]))
               for t in range(count[i])]
        assert np.allclose(got, best, atol=1e-12)
        assert np.all(out_y[i, count[i]:] == -1)


# ------------------------------------------------------------------ the engine
CASES = [("tree", "slack", False, False), ("tree", "margin", True, False),
         ("dag", "slack", False, True), ("dag", "margin", True, True)]


@pytest.mark.parametrize("shape, rescaling, weighted, intercept", CASES)
def test_engine_matches_the_reference(shape, rescaling, weighted, intercept):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 24, 4, seed=6)
    sw = np.random.default_rng(7).uniform(0.5, 2.0, 24) if weighted else None
    kw = dict(rescaling=rescaling, sample_weight=sw, fit_intercept=intercept)
    model = hsvm_model.prepare(X, Y, H, **kw)
    fast = labelset.solve(model, 1.5, tol=1e-9, options=labelset.Options(enter=2))
    assert fast.converged and fast.gap <= 1e-9
    ref = hsvm.primal(X, Y, H, C=1.5, **kw).solve()
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)
    if intercept:
        assert np.allclose(fast.intercept, ref.values["intercept"], atol=1e-3)
    assert np.allclose(fast.weights, ref.weights, atol=1e-3)


@pytest.mark.parametrize("shape, rescaling, weighted, intercept", CASES)
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_reduced_qp_tolerance_leaves_the_certified_optimum(shape, rescaling, weighted, intercept,
                                                          kernel):
    # the engine's inner solver solves a visit's reduced QP loosely (Options.working_set); the
    # single-label setting (an exact reduced QP) certifies the same optimum
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 24, 4, seed=16)
    sw = np.random.default_rng(17).uniform(0.5, 2.0, 24) if weighted else None
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, sample_weight=sw,
                               fit_intercept=intercept, kernel=kernel)
    assert labelset.Options().working_set.sub_cap == np.inf
    loose = labelset.solve(model, 1.2, tol=1e-9, options=labelset.Options(enter=2))
    exact = labelset.solve(model, 1.2, tol=1e-9, options=labelset.Options(
        enter=2, working_set=working_set.Options()))
    assert loose.converged and exact.converged
    assert loose.objective == pytest.approx(exact.objective, rel=1e-7)
    assert loose.lower_bound <= exact.objective * (1 + 1e-12)
    assert np.allclose(loose.weights, exact.weights, atol=1e-3)


def test_working_set_reduced_qp_tolerance_option():
    # the working-set solver itself, with and without the cap, on the explicit pairs
    H = dag()
    X, Y = label_sets(H, 30, 4, seed=18)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    capped = working_set.solve(model, 1.0, tol=1e-9)
    loose = working_set.solve(model, 1.0, tol=1e-9,
                              options=working_set.Options(sub_share=0.5, sub_cap=np.inf))
    assert capped.converged and loose.converged
    assert loose.objective == pytest.approx(capped.objective, rel=1e-7)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_engine_agrees_with_the_working_set_and_its_certificate_holds(rescaling):
    H = tree()
    X, Y = label_sets(H, 40, 5, seed=8)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, fit_intercept=True)
    C = 0.8
    fast = labelset.solve(model, C, tol=1e-9)
    old = working_set.solve(model, C, tol=1e-9)
    assert fast.objective == pytest.approx(old.objective, rel=1e-7)
    # the objective recomputed from the weights over every listed pair
    assert model.objective(fast.weights, C, intercept=fast.intercept) == \
        pytest.approx(fast.objective, rel=1e-12)
    # the dual: feasible on the model's pairs, the bound the model computes at it
    d, alpha = model.data, fast.dual.toarray()   # sparse over the model's pair list
    assert fast.dual.shape == (d.n_pairs,) and np.all(alpha >= 0)
    used = np.bincount(d.pair_i, weights=alpha * d.pair_cost, minlength=d.n_samples)
    assert np.all(used <= C * d.Cw * (1 + 1e-9))
    assert model.lower_bound(alpha, C) == pytest.approx(fast.lower_bound, rel=1e-9)
    assert model.lower_bound(fast.dual, C) == pytest.approx(fast.lower_bound, rel=1e-9)
    # fewer pairs than the model lists
    assert fast.working_pairs[0].size < d.n_pairs


def test_kernel_model():
    H = dag()
    X, Y = label_sets(H, 20, 3, seed=9)
    model = hsvm_model.prepare(X, Y, H, kernel="rbf", sigma=1.5)
    fast = labelset.solve(model, 1.0, tol=1e-8)
    old = working_set.solve(model, 1.0, tol=1e-8)
    assert fast.converged and fast.objective == pytest.approx(old.objective, rel=1e-6)
    assert model.objective(fast.weights, 1.0) == pytest.approx(fast.objective, rel=1e-10)


def test_check_solver_accepts_the_engine():
    def fit(X, Y, H, C=1.0, **options):
        model = methods.get("hsvm").prepare(X, Y, H, **options)
        sol = labelset.solve(model, C, tol=1e-9)
        intercept = sol.intercept if model.fit_intercept else None
        return {"weights": sol.weights, "intercept": intercept}

    outcomes = testing.check_solver(fit, "hsvm", structures=["multilabel"])
    assert outcomes and all(o.ok for o in outcomes)


def test_margin_engine_runs_and_chooses_it():
    H = tree()
    X, Y = label_sets(H, 30, 4, seed=10)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    sol = margin_engine.solve(model, 1.0, solver="labelset", tol=1e-8)
    assert sol.solver == "labelset" and sol.converged
    no_ipm = interior_point.Options(max_dimension=1)  # the small problem fits it otherwise
    eager = margin_engine.Options(labelset_from_pairs=1, interior_point=no_ipm)
    assert margin_engine.choose(model, options=eager) == "labelset"
    assert margin_engine.solve(model, 1.0, tol=1e-8, options=eager).solver == "labelset"
    single = hsvm_model.prepare(X, [sorted(s)[0] for s in Y], H)
    assert margin_engine.choose(single, options=eager) != "labelset"  # label sets only


@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_warm_start_along_a_C_path_reaches_the_cold_optimum(shape):
    """A previous solve's dual at another C (smaller, then larger: projected onto the budget)
    starts the engine: the same certified optimum as a cold start, the certificate recomputed
    at the returned point, and the first working set holds the warm start's support."""
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 40, 4, seed=7)
    model = hsvm_model.prepare(X, Y, H)
    previous = labelset.solve(model, 0.3, tol=1e-8)
    for C in (1.0, 0.1):
        cold = labelset.solve(model, C, tol=1e-8)
        warm = labelset.solve(model, C, tol=1e-8, alpha0=previous.dual)
        assert warm.converged and warm.gap <= 1e-8
        np.testing.assert_allclose(warm.objective, cold.objective, rtol=1e-7)
        W, b = warm.weights, warm.extras.get("intercept")
        np.testing.assert_allclose(warm.objective, model.objective(W, C, intercept=b), rtol=1e-12)
        assert warm.lower_bound <= cold.objective * (1 + 1e-12)
        pi, py, pyb = warm.extras["working_pairs"]
        q = model.data.n_classes
        keys = (pi * q + py) * q + pyb
        d = model.data
        carried = ((d.pair_i * q + d.pair_y) * q + d.pair_ybar)[previous.dual.toarray() > 0]
        assert np.isin(carried, keys).all()


def test_warm_start_is_checked():
    H = tree()
    X, Y = label_sets(H, 10, 3)
    model = hsvm_model.prepare(X, Y, H)
    P = model.data.n_pairs
    with pytest.raises(InputError, match=rf"one value per pair of the model \({P}\)"):
        labelset.solve(model, 1.0, alpha0=np.zeros(model.data.n_pairs + 1))
    with pytest.raises(InputError, match="finite"):
        labelset.solve(model, 1.0, alpha0=np.full(model.data.n_pairs, np.nan))


def test_margin_engine_takes_a_warm_start_to_the_label_set_engine():
    """auto with a dual start on label sets stays with the label-set engine (not the working
    set over every listed pair)."""
    H = dag()
    X, Y = label_sets(H, 30, 4, seed=2)
    model = hsvm_model.prepare(X, Y, H)
    eager = margin_engine.Options(labelset_from_pairs=1)
    first = margin_engine.solve(model, 0.5, tol=1e-8, options=eager)
    assert margin_engine.choose(model, warm=True, options=eager) == "labelset"
    warm = margin_engine.solve(model, 1.0, tol=1e-8, alpha0=first.dual, options=eager)
    assert warm.solver == "labelset" and warm.gap <= 1e-8
    cold = margin_engine.solve(model, 1.0, tol=1e-8, solver="working_set")
    np.testing.assert_allclose(warm.objective, cold.objective, rtol=1e-7)


def test_the_history_counts_passes_for_the_warnings_rate():
    """A round runs many inner passes: the history's n_iter holds the passes done at each
    round, so the ConvergenceWarning's rate is per pass, as its unit says, not per round."""
    H = HIERARCHIES["tree"]()
    X, Y = label_sets(H, 24, 4, seed=6)
    model = hsvm_model.prepare(X, Y, H)
    options = labelset.Options(enter=1, round_passes=3)
    with pytest.warns(ConvergenceWarning, match="stopped after 12 passes"):
        res = labelset.solve(model, 1.5, tol=1e-14, max_iter=12, options=options)
    passes = np.asarray(res.history["n_iter"])
    assert passes[-1] == res.n_iter == 12 and np.all(np.diff(passes) > 0)
    assert len(passes) == len(res.history["round"]) < 12
