"""Interchangeable unused classes collapsed by the margin engine (hiercvx.models.symmetry).

The collapsed solve is checked against the full model solved without the collapse (the
working set called directly), against the certified CVXPY reference, and the detected groups
against brute force: swapping two members of a group must leave the class kernel and the
losses of the held classes unchanged, and classes that fail it must not be grouped.
"""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import hiercvx as hc
from hiercvx.estimators import HierarchicalSVC
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models.symmetry import collapse_interchangeable, interchangeable_groups
from hiercvx.solvers import margin_engine, smoothing, working_set


def star(leaves: int) -> hc.Hierarchy:
    return hc.Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(leaves)}})


def two_level(branches: int, leaves: int) -> hc.Hierarchy:
    """A root with ``branches`` inner nodes of ``leaves`` leaves each."""
    parents = {"r": None}
    for b in range(branches):
        parents[f"b{b}"] = "r"
        parents.update({f"b{b}l{j}": f"b{b}" for j in range(leaves)})
    return hc.Hierarchy.from_parents(parents)


def data_on(H, used, n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array([used[i % len(used)] for i in range(n)], dtype=object)
    centers = {c: rng.standard_normal(d) for c in used}
    X = np.array([centers[c] for c in y]) + 0.8 * rng.standard_normal((n, d))
    return X, [[c] for c in y]


def brute_force_interchangeable(data, a, b) -> bool:
    """Swap classes a and b: is the class kernel unchanged, and the loss from every held class?"""
    perm = np.arange(data.n_classes)
    perm[[a, b]] = [b, a]
    held = np.flatnonzero(data.Y.any(axis=0))
    return (not data.Y[:, [a, b]].any()
            and np.allclose(data.Q[np.ix_(perm, perm)], data.Q, rtol=0, atol=1e-12)
            and np.allclose(data.loss[np.ix_(held, perm)], data.loss[held], rtol=0, atol=1e-12))


@pytest.mark.parametrize("loss", ["half_symmetric", "zero_one", "symmetric_difference"])
def test_groups_agree_with_brute_force(loss):
    H = two_level(3, 4)
    X, Y = data_on(H, ["b0l0", "b0l1", "b1l0"])
    model = hsvm_model.prepare(X, Y, H, loss=loss)
    data = model.data
    groups = interchangeable_groups(data)
    grouped = {int(c) for g in groups for c in g}
    for g in groups:
        for a in g[1:]:
            assert brute_force_interchangeable(data, int(g[0]), int(a))
    q = data.n_classes
    for a in range(q):  # maximal: an interchangeable pair is never left apart
        for b in range(a + 1, q):
            if brute_force_interchangeable(data, a, b):
                assert any(a in g and b in g for g in groups), (a, b)
    # b2's four leaves are alike; b0l2/b0l3 alike; b1's three unused leaves alike
    assert len(grouped) == 9


def test_collapsed_star_matches_full_solve():
    H = star(30)
    X, Y = data_on(H, ["c0", "c1", "c2"])
    model = hsvm_model.prepare(X, Y, H)
    collapsed = collapse_interchangeable(model)
    assert collapsed is not None and collapsed.n_removed == 26
    assert collapsed.model.data.n_classes == 4
    fast = margin_engine.solve(model, C=1.0, tol=1e-8)
    assert fast.extras["collapsed_classes"] == 26
    assert fast.gap <= 1e-8 and fast.converged
    full = working_set.solve(model, C=1.0, tol=1e-8)  # the full model, nothing collapsed
    assert "collapsed_classes" not in full.extras
    assert fast.objective == pytest.approx(full.objective, rel=1e-7)
    np.testing.assert_allclose(fast.weights, full.weights, atol=1e-4)
    # the certificate is the full model's: recompute it
    assert fast.objective == pytest.approx(model.objective(fast.weights, 1.0), rel=1e-12)
    assert fast.lower_bound == pytest.approx(model.lower_bound(fast.dual, 1.0), rel=1e-12)
    assert fast.dual.shape == (model.data.n_pairs,)


def test_collapsed_primal_solver_stopped_early_keeps_its_own_weights():
    """Smoothing (a primal method) stopped after a few L-BFGS iterations: its weights are a far
    better point than ``W(alpha)`` of its unfinished dual, and they live in the full model's
    node space, so the lifted solution keeps them, valued on the full model, and its gap is
    the one the solver's warning printed (GO: the warning said 0.21, ``gap_`` said 0.32).

    The dual phase is switched off (``dual_passes=0``): the dual is then the soft multipliers'
    alone, unfinished for certain. With its 100 default passes the dual phase's ``W(alpha)``
    may overtake the primal phase on this small model, as it does with SciPy 1.17's L-BFGS-B
    (5 iterations: primal 5.46 where the passes reach 1.184) -- and the two points then tie."""
    H = star(30)
    X, Y = data_on(H, ["c0", "c1", "c2"], n=60, seed=3)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    with pytest.warns(ConvergenceWarning) as caught:
        fast = margin_engine.solve(model, C=10.0, solver="smoothing", tol=1e-12, max_iter=5,
                                   options=margin_engine.Options(
                                       smoothing=smoothing.Options(dual_passes=0)))
    assert fast.extras["collapsed_classes"] == 26
    # the certificate is the full model's, recomputed at the returned weights and dual
    assert fast.objective == pytest.approx(
        model.objective(fast.weights, 10.0, fast.extras["intercept"]), rel=1e-12)
    assert fast.lower_bound == pytest.approx(model.lower_bound(fast.dual, 10.0), rel=1e-12)
    at_dual = _margin_objective(model, model.weights_from_dual(fast.dual), 10.0)
    assert fast.objective < 0.1 * at_dual                    # not W(alpha): the solver's own W
    assert "coefficients" not in fast.extras                 # G(alpha) would not describe it
    printed = float(str(caught[0].message).split("gap of ")[1].split(" ")[0])
    assert fast.gap == pytest.approx(printed, rel=1e-3)


def _margin_objective(model, W_aug, C):
    weights, intercept = model.split_weights(W_aug)
    return model.objective(weights, C, intercept)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_collapsed_matches_reference(rescaling):
    H = two_level(2, 4)
    X, Y = data_on(H, ["b0l0", "b1l1"], n=16, d=3, seed=1)
    weights = np.linspace(0.5, 2.0, 16)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling, sample_weight=weights,
                               loss="symmetric_difference")
    fast = margin_engine.solve(model, C=2.0, tol=1e-9)
    assert fast.extras["collapsed_classes"] > 0
    ref = hsvm.primal_from_model(model, C=2.0).solve()
    assert fast.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-8)
    assert fast.lower_bound <= ref.objective * (1 + 1e-7)


def test_collapsed_kernel_model_matches_full_solve():
    H = star(12)
    X, Y = data_on(H, ["c0", "c5"], n=24, seed=2)
    model = hsvm_model.prepare(X, Y, H, kernel="rbf")
    fast = margin_engine.solve(model, C=1.0, tol=1e-8)
    assert fast.extras["collapsed_classes"] == 9
    assert fast.weights.shape == (24, 12)  # coefficients G over every class
    full = working_set.solve(model, C=1.0, tol=1e-8)
    assert fast.objective == pytest.approx(full.objective, rel=1e-7)


def test_nothing_to_collapse():
    H = star(4)
    X, Y = data_on(H, ["c0", "c1", "c2", "c3"])
    assert collapse_interchangeable(hsvm_model.prepare(X, Y, H)) is None


def test_unequal_attributes_are_not_grouped():
    """Two unused leaves whose attributes differ (a weighted own column) stay apart."""
    H = star(5)
    X, Y = data_on(H, ["c0", "c1"])
    Lam = hc.class_attributes(H, H.leaves, scheme="class_depth")
    Lam[3, H.nodes.index("c3")] *= 2.0
    model = hsvm_model.prepare(X, Y, H, attributes=Lam)
    groups = interchangeable_groups(model.data)
    assert [sorted(g.tolist()) for g in groups] == [[2, 4]]
    fast = margin_engine.solve(model, C=1.0, tol=1e-8)
    full = working_set.solve(model, C=1.0, tol=1e-8)
    assert fast.objective == pytest.approx(full.objective, rel=1e-7)


def test_wide_star_estimator_fits():
    """The issue's row at a test size: one class used on a 2000-leaf star."""
    H = star(2000)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = np.array(["c0"] * 59 + ["c1"], dtype=object)
    est = HierarchicalSVC(hierarchy=H).fit(X, y)
    assert est.gap_ <= 1e-6
    assert est.result_.extras["collapsed_classes"] == 1997
    assert np.mean(est.predict(X) == y) >= 59 / 60


def test_collapsed_with_intercept_matches_full_solve():
    H = star(20)
    X, Y = data_on(H, ["c0", "c1"], seed=3)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True, intercept_scaling=2.0)
    fast = margin_engine.solve(model, C=1.0, tol=1e-8)
    assert fast.extras["collapsed_classes"] == 17
    full = working_set.solve(model, C=1.0, tol=1e-8)
    assert fast.objective == pytest.approx(full.objective, rel=1e-7)
    np.testing.assert_allclose(fast.extras["intercept"], full.extras["intercept"], atol=1e-4)
    assert fast.weights.shape == (len(H.nodes), X.shape[1])  # the bias column split off
