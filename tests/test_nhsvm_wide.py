"""Wide hierarchies for NHSVM (10) / (13) and the shared-norm SVM (14): interchangeable idle leaves
solved as one, lifted and certified on the full model, against the CVXPY references; the
models stay sparse (nothing over all leaf pairs is built on the fast path)."""

import numpy as np
import pytest

from hiercvx import testing
from hiercvx.estimators import NormalizedHierarchicalSVC, SharedNormSVC
from hiercvx.exceptions import InputError
from hiercvx.formulations import nhsvm
from hiercvx.hierarchy import Hierarchy
from hiercvx.losses import loss_matrix
from hiercvx.models import margin as margin_model
from hiercvx.models import nhsvm as nhsvm_model
from hiercvx.solvers import nhsvm_fw, shared_norm

DENSE = ("loss", "Lam", "structural", "margin", "_vertices")


def _two_level():
    """Two internal nodes with 5 and 4 leaves; samples on a0, a1, b0 only."""
    H = Hierarchy.from_parents({"r": None, "A": "r", "B": "r",
                                **{f"a{i}": "A" for i in range(5)},
                                **{f"b{i}": "B" for i in range(4)}})
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    y = np.array([["a0", "a1", "b0"][i % 3] for i in range(30)], dtype=object)
    X[y == "a0", 0] += 1.5
    X[y == "b0", 1] += 1.5
    return X, y, H


def _dag():
    """Idle leaves x1, x2 under both A and B (interchangeable), x3 under A only."""
    H = Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "a"), ("B", "b"), ("A", "x1"),
                              ("B", "x1"), ("A", "x2"), ("B", "x2"), ("A", "x3")])
    rng = np.random.default_rng(2)
    X = rng.standard_normal((24, 3))
    y = np.array(["a" if i % 2 else "b" for i in range(24)], dtype=object)
    X[y == "a", 0] += 1.0
    return X, y, H


@pytest.mark.parametrize("loss", ["zero_one", "half_symmetric"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_collapsed_solve_matches_the_reference(loss, fit_intercept):
    X, y, H = _two_level()
    kw = {"loss": loss, "fit_intercept": fit_intercept}
    ref = nhsvm.shared_primal(X, y, H, lam=0.1, **kw).solve()
    model = nhsvm_model.prepare_shared(X, y, H, **kw)
    collapse = model.collapsed()
    assert collapse is not None and collapse.model.n_nodes == len(H) - 4  # a2-a4 and b1-b3: one leaf each
    res = shared_norm.solve(model, 0.1, tol=1e-7, max_iter=2000)
    assert res.n_collapsed == 4
    testing.assert_fast_matches_reference(res, ref, rtol=1e-5)
    # certified on the full model: the objective recomputed there
    b = res.extras.get("intercept")
    assert model.objective(res.weights, 0.1, alpha=res.alpha, intercept=b) == pytest.approx(
        res.objective, rel=1e-9)
    # the lifted weights treat a group alike
    idle_a = [H.index(f"a{i}") for i in range(2, 5)]
    np.testing.assert_allclose(res.weights[idle_a], res.weights[idle_a[0]][None, :].repeat(3, 0),
                               atol=1e-12)


def test_collapsed_solve_on_a_dag():
    X, y, H = _dag()
    model = nhsvm_model.prepare_shared(X, y, H)
    collapse = model.collapsed()
    assert collapse is not None and collapse.model.n_nodes == len(H) - 1  # x1, x2 merged, not x3
    ref = nhsvm.shared_primal(X, y, H, lam=0.2).solve()
    res = shared_norm.solve(model, 0.2, tol=1e-7, max_iter=2000)
    testing.assert_fast_matches_reference(res, ref, rtol=1e-5)


def test_one_class_star_against_the_reference():
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(12)}})
    X = np.random.default_rng(0).standard_normal((30, 3))
    y = np.array(["c0"] * 30, dtype=object)
    ref = nhsvm.shared_primal(X, y, H, lam=1.0).solve()
    res = shared_norm.solve(nhsvm_model.prepare_shared(X, y, H), 1.0, tol=1e-8, max_iter=2000)
    assert res.n_collapsed == 10
    testing.assert_fast_matches_reference(res, ref, rtol=1e-6)


def test_wide_star_stays_sparse_and_certified():
    """3000 leaves, one class: the alternation runs on 3 nodes; nothing (q, q) or (q, M) dense
    is ever built; the gap is certified on the full model."""
    q = 3000
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(q)}})
    X = np.random.default_rng(0).standard_normal((60, 5))
    y = np.array(["c0"] * 60, dtype=object)
    model = nhsvm_model.prepare_shared(X, y, H, fit_intercept=True)
    res = shared_norm.solve(model, 1.0, tol=1e-6, max_iter=500)
    assert res.converged and res.gap <= 1e-6
    assert res.n_collapsed == q - 2 and res.weights.shape == (q + 1, 5)
    for dense in DENSE:
        assert dense not in model.__dict__, f"the full model built its dense {dense}"
    # the bound is the full model's dual at the lifted point: it cannot exceed the objective
    assert res.lower_bound <= res.objective
    value = model.objective(res.weights, 1.0, alpha=res.alpha, intercept=res.intercept)
    assert value == pytest.approx(res.objective, rel=1e-10)
    est = SharedNormSVC(hierarchy=H, C=0.5).fit(X, y)
    assert est.gap_ <= est.tol and np.all(est.predict(X) == "c0")


@pytest.mark.parametrize("loss", ["zero_one", "half_symmetric", "symmetric_difference", "sibling", "normalized"])
def test_loss_rows_are_the_rows_of_the_loss_matrix(loss):
    X, y, H = _two_level()
    model = nhsvm_model.prepare_shared(X, y, H, loss=loss)
    np.testing.assert_allclose(model.loss_rows, model.loss[model.held_leaves], atol=1e-12)


def test_sparse_hinge_and_bound_match_the_pair_model():
    X, y, H = _two_level()
    model = nhsvm_model.prepare_shared(X, y, H, loss="half_symmetric")
    rng = np.random.default_rng(3)
    U = rng.standard_normal((len(H), X.shape[1]))
    dense = margin_model.slacks(margin_model.class_scores(U, model.X, model.Lam), model.margin)
    np.testing.assert_allclose(model.hinge(U), dense, atol=1e-12)
    beta = rng.random((X.shape[0], len(H.leaves)))
    n = X.shape[0]
    b = beta.copy()
    b[np.arange(n), model.leaf_pos] = 0.0
    b /= np.maximum(b.sum(axis=1), 1.0)[:, None]
    G = b.sum(axis=1)[:, None] * model.T - b @ model.paths
    l = (b * model.offset[model.leaf_pos]).sum(axis=1)
    assert model.lower_bound(beta, 0.3) == pytest.approx(model.dual_value(G, l, 0.3), rel=1e-12)


# ---------------------------------------------------------------------------- NHSVM (10) / (13)
@pytest.mark.parametrize("variant, methods", [("nhsvm", ("auto", "pairwise", "working_set")),
                                              ("13", ("auto",))])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_nhsvm_collapsed_solve_matches_the_reference(variant, methods, fit_intercept):
    X, y, H = _two_level()
    kw = {"variant": variant, "fit_intercept": fit_intercept}
    ref = nhsvm.primal(X, y, H, lam=0.05, **kw).solve()
    assert ref.objective < 0.9 * len(y)                      # W = 0 is not the optimum
    model = nhsvm.prepare(X, y, H, **kw)
    assert model.collapsed().n_removed == 4
    for method in methods:
        res = nhsvm_fw.solve(model, 0.05, method=method, tol=1e-8, max_iter=5000)
        assert res.n_collapsed == 4
        testing.assert_fast_matches_reference(res, ref, rtol=1e-6)
        b = res.extras.get("intercept")
        assert model.objective(res.weights, 0.05, intercept=b) == pytest.approx(res.objective,
                                                                               rel=1e-10)
        np.testing.assert_allclose(res.weights, ref.weights, atol=1e-3)


def test_nhsvm_wide_star_stays_sparse_and_certified():
    q = 3000
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(q)}})
    X = np.random.default_rng(0).standard_normal((60, 5))
    y = np.array([f"c{i % 2}" for i in range(60)], dtype=object)
    alpha = np.r_[0.5, np.full(q, 0.5)]
    model = nhsvm.prepare(X, y, H, alpha=alpha, fit_intercept=True)
    res = nhsvm_fw.solve(model, 0.5, tol=1e-8, max_iter=2000)
    assert res.converged and res.n_collapsed == q - 3
    for dense in ("Lam", "structural", "margin", "_vertices"):
        assert dense not in model.__dict__, f"the full model built its dense {dense}"
    assert model.objective(res.weights, 0.5, intercept=res.intercept) == pytest.approx(
        res.objective, rel=1e-10)
    est = NormalizedHierarchicalSVC(hierarchy=H, C=1.0, tol=1e-6).fit(X, np.array(["c0"] * 60))
    assert est.gap_ <= 1e-6 and np.all(est.predict(X) == "c0")


@pytest.mark.parametrize("seed", range(8))
def test_zero_distance_check_is_the_dense_one(seed):
    """The O(q depth) refusal of leaves at distance (9) zero is the check on the (q, q) matrix."""
    rng = np.random.default_rng(seed)
    H = Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "a1": "A", "a2": "A", "a3": "A",
                                "b1": "B", "b2": "B"})
    X = rng.standard_normal((8, 2))
    y = np.array(["a1", "b1"] * 4, dtype=object)
    A = nhsvm_model.leaf_paths(H)
    alpha = rng.random(len(H)) * (rng.random(len(H)) < 0.6)   # seeds 0-7: both outcomes
    alpha[H.index("r")] = 0.5                                 # every path sum positive
    alpha = alpha / float((A @ alpha).min())                  # feasible for (8) with a large T
    T = float((A @ alpha).max()) + 1e-9
    dist = loss_matrix(H, "structural", classes=H.leaves, alpha=alpha)
    zero = bool(np.any(dist[~np.eye(len(dist), dtype=bool)] <= 0))
    if zero:
        with pytest.raises(InputError, match="distance"):
            nhsvm.prepare(X, y, H, alpha=alpha, T=T)
    else:
        nhsvm.prepare(X, y, H, alpha=alpha, T=T)


def test_zero_distance_refused():
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "c": "r"})
    X = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(InputError, match="distance"):
        nhsvm.prepare(X, ["a", "b"] * 3, H, alpha=np.array([1.0, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize("variant", ["nhsvm", "13"])
def test_nhsvm_rows_are_the_rows_of_the_dense_pieces(variant):
    """The held rows of b and sigma (prepare, sparse) are the rows of the dense (q, q) pieces."""
    for X, y, H in (_two_level(), _dag()):
        model = nhsvm.prepare(X, y, H, variant=variant)
        np.testing.assert_allclose(model.offset_rows, model.offset[model.held_leaves], atol=1e-12)
        np.testing.assert_allclose(model.scale_rows, model.scale[model.held_leaves], atol=1e-12)


def test_warm_start_from_a_collapsed_solve():
    X, y, H = _two_level()
    model = nhsvm.prepare(X, y, H, variant="13")
    first = nhsvm_fw.solve(model, 0.05, method="pairwise", tol=1e-4)
    again = nhsvm_fw.solve(model, 0.05, method="pairwise", tol=1e-8, max_iter=5000,
                           state=first.state)
    assert again.converged and again.n_collapsed == 4
    assert again.objective <= first.objective + 1e-9
