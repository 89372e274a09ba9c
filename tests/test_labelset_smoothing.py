"""The label-set engine's primal polish by smoothing (``hiercvx.solvers.labelset_smoothing``).

The compiled soft maximum over every pair (never listed) against the same quantities computed
over the model's listed pairs; the smoothing's sandwich ``P <= P_mu <= P + mu sum C_i log(1 +
P_i)`` and its gradient against finite differences; the polished point's exact primal against
the CVXPY reference optimum; the engine with the polish against the reference.
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.solvers import labelset, labelset_smoothing, working_set
from hiercvx.models._labelset_kernels import soft_slacks

from labelset_cases import HIERARCHIES, label_sets


def _problem(shape, rescaling, n=20, seed=1):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, n, 3, seed=seed)
    kw = dict(rescaling=rescaling, loss="half_symmetric" if rescaling == "slack" else "zero_one")
    return hsvm_model.prepare(X, Y, H, **kw), (X, Y, H, kw)


def _model(shape, rescaling, n=20, seed=1):
    return _problem(shape, rescaling, n, seed)[0]


def _parts(model):
    return _margin.relevant_lists(model.data.Y), _margin.sparse_attributes(model.data.Lam)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_soft_maximum_over_every_pair_matches_the_listed_pairs(shape, rescaling):
    model = _model(shape, rescaling)
    d = model.data
    n, q = d.n_samples, d.n_classes
    S = np.random.default_rng(3).standard_normal((n, q))
    budget = np.linspace(0.5, 2.0, n)
    mu = 0.3
    rel, _ = _parts(model)
    G, linear = np.empty((n, q)), np.empty(n)
    total = soft_slacks(S, *rel, np.ascontiguousarray(d.loss), rescaling == "slack", budget, mu,
                        G, linear)
    # the same over the listed pairs, in numpy
    v = (d.pair_offset - (S[d.pair_i, d.pair_y] - S[d.pair_i, d.pair_ybar])) / d.pair_cost
    want_total, want_G, want_linear = 0.0, np.zeros((n, q)), np.zeros(n)
    for i in range(n):
        p = np.arange(d.pair_ptr[i], d.pair_ptr[i + 1])
        z = np.r_[0.0, v[p] / mu]
        top = z.max()
        want_total += budget[i] * mu * (top + np.log(np.exp(z - top).sum()))
        pi = np.exp(z[1:] - top) / np.exp(z - top).sum()
        alpha = budget[i] * pi / d.pair_cost[p]   # dual feasible: sum_p cost_p alpha_p <= C_i
        assert d.pair_cost[p] @ alpha <= budget[i] * (1 + 1e-12)
        np.add.at(want_G[i], d.pair_y[p], alpha)
        np.add.at(want_G[i], d.pair_ybar[p], -alpha)
        want_linear[i] = d.pair_offset[p] @ alpha
    assert total == pytest.approx(want_total, rel=1e-12)
    np.testing.assert_allclose(G, want_G, atol=1e-12)
    np.testing.assert_allclose(linear, want_linear, atol=1e-12)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_smoothed_primal_sandwich_and_gradient(rescaling):
    model = _model("dag", rescaling)
    d = model.data
    rel, Lam = _parts(model)
    C, mu = 1.5, 0.05
    smoothed = labelset_smoothing._Smoothed(model, C, rel, Lam)
    W = np.random.default_rng(4).standard_normal(smoothed.shape)
    value, grad = smoothed(W.ravel(), mu)
    exact = _margin.primal_objective(W, model.X, d, C)
    assert exact <= value <= exact + mu * smoothed.log_pairs + 1e-12
    assert value == pytest.approx(labelset_smoothing.smoothed_primal(model, W, C, mu, rel, Lam))
    direction = np.random.default_rng(5).standard_normal(W.size)
    h = 1e-6
    numeric = (smoothed(W.ravel() + h * direction, mu)[0]
               - smoothed(W.ravel() - h * direction, mu)[0]) / (2 * h)
    assert grad @ direction == pytest.approx(numeric, rel=1e-5)


@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_polish_brings_the_primal_within_its_smoothing_bias(shape):
    model, (X, Y, H, kw) = _problem(shape, "slack", n=30, seed=2)
    C = 1.0
    optimum = hsvm.primal(X, Y, H, C=C, **kw).solve().objective  # certified by CVXPY
    # a rough dual solve: its w(alpha) is well above the optimum
    with pytest.warns(ConvergenceWarning):
        rough = working_set.solve(model, C, tol=1e-1, max_iter=3, polish=False)
    W0 = model.augmented_weights(rough.weights, rough.extras.get("intercept"))
    P0 = _margin.primal_objective(W0, model.X, model.data, C)
    bias = P0 - rough.lower_bound
    rel, Lam = _parts(model)
    options = labelset_smoothing.Options(share=0.1, max_iter=500)
    W, n_eval = labelset_smoothing.polish(model, W0, C, bias, rel, Lam, options)
    assert 1 < n_eval <= options.max_iter + 30
    P = _margin.primal_objective(W, model.X, model.data, C)
    assert P < P0
    # the smoothed minimizer is within the smoothing's bias of the optimum
    assert optimum - 1e-6 * abs(optimum) <= P <= optimum + options.share * bias * (1 + 1e-3)


def _objective_at_returned_weights(model, sol, C):
    W = model.augmented_weights(sol.weights, getattr(sol, "intercept", None))
    return _margin.primal_objective(W, model.X, model.data, C)


@pytest.mark.parametrize("shape, intercept", [("tree", False), ("dag", True)])
def test_engine_with_the_polish_matches_the_reference(shape, intercept):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 24, 4, seed=6)
    kw = dict(rescaling="slack", fit_intercept=intercept)
    model = hsvm_model.prepare(X, Y, H, **kw)
    C = 1.5
    fast = labelset.solve(model, C, tol=1e-9,
                          options=labelset.Options(enter=2, primal_below=1.0))
    assert fast.converged and fast.gap <= 1e-9
    assert _objective_at_returned_weights(model, fast, C) == pytest.approx(fast.objective,
                                                                           rel=1e-12)
    ref = hsvm.primal(X, Y, H, C=C, **kw).solve()
    assert fast.objective == pytest.approx(ref.objective, rel=1e-6)


@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_a_polished_point_is_returned_with_its_own_certificate(shape):
    # stopped early, the polished point beats every w(alpha) met: it is returned, with the
    # objective recomputed at it and the dual bound of the best round
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 40, 4, seed=8)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    C = 1.0
    runs = {}
    for below in (0.0, 1.0):
        with pytest.warns(ConvergenceWarning):
            runs[below] = labelset.solve(model, C, tol=1e-12, max_iter=4, options=labelset.Options(
                enter=2, round_passes=2, primal_below=below))
    plain, polished = runs[0.0], runs[1.0]
    assert polished.lower_bound == pytest.approx(plain.lower_bound, rel=1e-12)  # same passes
    assert polished.objective < plain.objective
    assert _objective_at_returned_weights(model, polished, C) == pytest.approx(
        polished.objective, rel=1e-12)
    assert polished.lower_bound <= polished.objective


def test_a_loose_tol_stops_on_the_polished_certificate():
    # the rounds' inner solves ask the polish at their certificates and stop once the best
    # primal point and the inner dual certify tol: the answer is certified all the same
    H = HIERARCHIES["dag"]()
    X, Y = label_sets(H, 40, 4, seed=9)
    kw = dict(rescaling="slack", fit_intercept=True)
    model = hsvm_model.prepare(X, Y, H, **kw)
    C = 1.0
    sol = labelset.solve(model, C, tol=1e-3, options=labelset.Options(enter=2, primal_below=1.0,
                                                                     primal_passes=0.0))
    assert sol.converged and sol.gap <= 1e-3
    assert _objective_at_returned_weights(model, sol, C) == pytest.approx(sol.objective,
                                                                          rel=1e-12)
    optimum = hsvm.primal(X, Y, H, C=C, **kw).solve().objective
    assert sol.lower_bound <= optimum * (1 + 1e-7) and optimum <= sol.objective * (1 + 1e-7)
