"""The used part of a wide or deep hierarchy (``hiercvx.models.orthogonal.reduce_model``): rows
off every margin row dropped, interchangeable negatives merged, the solution lifted back.

Independent routes:
* the certified CVXPY reference of the *full* model (lifted SDP for (4), QPs for the
  baselines): the objective, and the weights the reduction claims (zero rows off every pair,
  equal rows inside a group of interchangeable negatives);
* the certificate recomputed by the full model at the lifted point: ``model.objective`` at
  the weights, ``quadratic_lower_bound`` at the lifted multipliers and S, which are feasible
  (alpha >= 0 within the budgets, S in the box of K);
* hand-computed reduced K (``K'_GG = g K_aa + g (g - 1) c_G``), and the merged model's sizes.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx.estimators.orthogonal import OrthogonalTransferSVC
from hiercvx.formulations import orthogonal as ot
from hiercvx.models import margin
from hiercvx.models import orthogonal as otm
from hiercvx.solvers import orthogonal_dual as od

# labels on a1, a2, b1: a3 and b2 are negatives; c, d, e are the negatives of a and b (d and e
# interchangeable, c not: its subtree makes K_cc = 5); c's subtree is on no margin row
WIDE = {"r": None, "a": "r", "b": "r", "c": "r", "d": "r", "e": "r",
        "a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b",
        "c1": "c", "c2": "c", "c21": "c2", "c22": "c2"}
LABELS = ("a1", "a2", "b1")
OFF_PAIRS = ("c1", "c2", "c21", "c22")


def tree(spec):
    return hc.Hierarchy.from_parents(spec)


def chain(depth):
    """A path r - n1 - ... - n{depth-2} with two leaves x, y at its bottom."""
    spec = {"r": None, **{f"n{i}": ("r" if i == 1 else f"n{i - 1}") for i in range(1, depth - 1)}}
    return tree({**spec, "x": f"n{depth - 2}", "y": f"n{depth - 2}"})


def star(n_leaves):
    return tree({"r": None, **{f"c{i}": "r" for i in range(n_leaves)}})


def data(labels, n=24, d=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.array([labels[k % len(labels)] for k in range(n)], dtype=object)
    centre = {v: rng.standard_normal(d) for v in labels}
    X = np.array([centre[v] for v in y]) + 0.8 * rng.standard_normal((n, d))
    return X, y


def check_against_reference(model, C, *, tol=1e-8):
    """The fast solution on the reduced problem, lifted, against the full model's reference and
    its own certificate recomputed on the full model; returns ``(fast, reference)``."""
    ref = ot.primal_from_model(model, C).solve()
    fast = od.solve(model, C, tol=tol, max_iter=50_000)
    assert fast.converged
    slack = 1e-6 * max(1.0, abs(ref.objective)) + (ref.objective - ref.lower_bound)
    assert abs(fast.objective - ref.objective) <= slack, (fast, ref)
    assert fast.lower_bound <= ref.objective * (1 + 1e-9) + 1e-12
    # the certificate, recomputed on the full model at the lifted point
    intercept = fast.extras.get("intercept")
    assert fast.objective == pytest.approx(model.objective(fast.weights, C, intercept=intercept),
                                           rel=1e-10, abs=1e-12)
    alpha = fast.dual
    assert alpha.shape == (model.data.n_pairs,)
    assert np.allclose(margin.project_dual(alpha, model.data, C), alpha, rtol=0, atol=1e-12)
    S = fast.extras["dual_S"]
    S = S.toarray() if sp.issparse(S) else S
    if model.method == "orthogonal":
        K = model.K
        assert np.allclose(np.diag(S), np.diag(K)) and np.allclose(S, S.T)
        assert np.all(np.abs(S) <= K * (1 + 1e-12) + 1e-12)
    assert otm.quadratic_lower_bound(model, alpha, S) == pytest.approx(fast.lower_bound, rel=1e-9, abs=1e-10)
    return fast, ref


def rows(H, names):
    return H.indices(list(names))


@pytest.mark.parametrize("name", otm.METHODS)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_wide_tree_agrees_with_the_full_reference(name, fit_intercept):
    H = tree(WIDE)
    X, y = data(LABELS)
    model = otm.prepare(X, y, H, name, fit_intercept=fit_intercept)
    fast, ref = check_against_reference(model, 2.0)
    reduced = otm.reduce_model(model)
    scale = np.abs(ref.weights).max()
    if name in ("orthogonal", "hiermult"):
        # c's subtree is on no margin row: zero in the reference too (the docstring's proof)
        # orthogonal: e merged into d; HIERMULT (S = I) also merges c, whose subtree K ignores
        merged = 1 if name == "orthogonal" else 2
        assert reduced is not None and fast.extras["n_rows_solved"] == len(model.var_nodes) - 4 - merged
        assert np.all(fast.weights[rows(H, OFF_PAIRS)] == 0.0)
        assert np.abs(ref.weights[rows(H, OFF_PAIRS)]).max() <= 1e-4 * scale
    if name in ("orthogonal", "hiermult", "transfer"):
        # d and e are interchangeable: one row, the same weights (and the reference's agree)
        d, e = rows(H, ["d", "e"])
        assert np.array_equal(fast.weights[d], fast.weights[e])
        assert np.abs(ref.weights[d] - ref.weights[e]).max() <= 1e-4 * scale
    if name == "flatmult":  # the 7 unlabelled leaves are one row: 3 + 1
        assert fast.extras["n_rows_solved"] == 4
    if name == "treeloss":  # every non-root node is a class: nothing to drop
        assert reduced is None


def test_reduced_K_by_hand():
    """K'_GG = g K_aa + g (g - 1) c_G, K'_tG = g K_ta; the pairs of a merged negative once."""
    H = tree(WIDE)
    X, y = data(LABELS)
    K = otm.heuristic_K(H, alpha=0.2)
    names = H.nodes[1:]
    d, e = names.index("d"), names.index("e")
    K[d, e] = K[e, d] = 0.3  # a common entry inside the group (Theorem 1 still holds)
    model = otm.prepare(X, y, H, "orthogonal", K=K)
    red = otm.reduce_model(model)
    small = red.model
    kept = list(small.var_nodes)
    assert {H.nodes[v] for v in kept} == {"a", "b", "c", "d", "a1", "a2", "a3", "b1", "b2"}
    g = kept.index(H.index("d"))
    assert small.K[g, g] == pytest.approx(2 * 1.0 + 2 * 1 * 0.3)
    assert np.allclose(np.delete(small.K[g], g), 0.0)  # d, e have no ancestor pairs
    assert red.size[g] == 2 and otm.check_convexity(small.K)
    # each example under a: a1/a2 vs a3, a vs b, c, d (e merged): 4 pairs; under b: 4 as well
    assert small.data.n_pairs == model.data.n_pairs - len(y)
    check_against_reference(model, 2.0)


def test_asymmetric_K_keeps_the_rows_apart():
    """d and e with different diagonals are not interchangeable: both kept, still correct."""
    H = tree(WIDE)
    X, y = data(LABELS)
    K = otm.heuristic_K(H, alpha=0.2)
    names = H.nodes[1:]
    K[names.index("e"), names.index("e")] = 1.5
    model = otm.prepare(X, y, H, "orthogonal", K=K)
    assert len(otm.reduce_model(model).model.var_nodes) == len(names) - 4
    fast, _ = check_against_reference(model, 2.0)
    assert not np.array_equal(fast.weights[H.index("d")], fast.weights[H.index("e")])


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_deep_chain_keeps_the_two_leaves(fit_intercept):
    """A 12-node chain labelled at its two bottom leaves: (4) has pairs (x, y) and (y, x) only,
    so the 10 spine nodes are zero (the dense K of heuristic (6) couples them to the leaves)."""
    H = chain(12)
    X, y = data(("x", "y"), n=20)
    model = otm.prepare(X, y, H, "orthogonal", fit_intercept=fit_intercept)
    assert np.count_nonzero(model.K) > 50  # every spine pair is an ancestor pair
    fast, ref = check_against_reference(model, 1.0)
    assert fast.extras["n_rows_solved"] == 2
    spine = [v for v in H.nodes[1:] if v not in ("x", "y")]
    assert np.all(fast.weights[rows(H, spine)] == 0.0)
    assert np.abs(ref.weights[rows(H, spine)]).max() <= 1e-4 * np.abs(ref.weights).max()


@pytest.mark.parametrize("labels", [("c0",), ("c0", "c1", "c2")])
def test_star_merges_the_unlabelled_leaves(labels):
    H = star(30)
    X, y = data(labels, n=18)
    model = otm.prepare(X, y, H, "orthogonal", fit_intercept=True)
    fast, _ = check_against_reference(model, 1.0)
    assert fast.extras["n_rows_solved"] == len(labels) + 1
    red = otm.reduce_model(model)
    g = red.row_of[np.searchsorted(model.var_nodes, H.index("c29"))]
    assert red.model.K[g, g] == 30 - len(labels)
    other = rows(H, [f"c{i}" for i in range(len(labels), 30)])
    assert np.all(fast.weights[other] == fast.weights[other[0]])


def test_lift_dual_spreads_evenly_and_keeps_the_budgets():
    H = star(12)
    X, y = data(("c0", "c1"), n=10)
    model = otm.prepare(X, y, H, "orthogonal")
    red = otm.reduce_model(model)
    small = red.model
    rng = np.random.default_rng(0)
    beta = margin.project_dual(rng.random(small.data.n_pairs), small.data, 3.0)
    alpha = red.lift_dual(beta)
    def per_slack(a, d):
        return np.bincount(d.pair_i, weights=a, minlength=d.n_samples)

    assert np.allclose(per_slack(alpha, model.data), per_slack(beta, small.data))
    # U(alpha) on a merged negative is U'(beta) / g
    U = model.node_gradient(alpha)
    U_small = small.node_gradient(beta)
    assert np.allclose(U[H.index("c5")], U_small[H.index("c2")] / 10)
    assert np.allclose(U[H.index("c0")], U_small[H.index("c0")])


def test_sparse_heuristic_K_matches_the_dense_one():
    H = tree(WIDE)
    X, y = data(LABELS)
    model = otm.prepare(X, y, H, "orthogonal", alpha=0.7)
    assert np.array_equal(model.sparse_K().toarray(), model.K)
    assert np.array_equal(model.K, otm.heuristic_K(H, alpha=0.7))


def test_many_classes_use_sparse_class_data():
    """Above 2000 classes (the default ``dense_max`` of the model's pair data) the model's Lam
    and Q are sparse: objective and scores still agree with a hand computation."""
    n_leaves = 2005
    H = star(n_leaves)
    X, y = data(("c0", "c1"), n=8)
    model = otm.prepare(X, y, H, "orthogonal", fit_intercept=True)
    assert sp.issparse(model.data.Lam)
    rng = np.random.default_rng(1)
    W = rng.standard_normal((len(H), X.shape[1])) * 0.1
    W[0] = 0.0
    b = rng.standard_normal(len(H)) * 0.1
    b[0] = 0.0
    scores = X @ W.T + b
    yi = H.indices(list(y))
    hinge = sum(max(0.0, max(1.0 - scores[k, yi[k]] + scores[k, j] for j in range(1, len(H)) if j != yi[k]))
                for k in range(len(y))) / len(y)
    Wt = np.c_[W, b][1:]
    reg = 0.5 * float(np.sum(np.abs(Wt @ Wt.T) * model.K))
    assert model.objective(W, 2.0, intercept=b) == pytest.approx(reg + 2.0 * hinge, rel=1e-12)
    assert np.allclose(model.scores(W, X, intercept=b), scores)


def test_estimator_on_a_wide_star_solves_the_merged_problem():
    H = star(400)
    X, y = data(("c0", "c1", "c2"), n=30, d=4)
    est = OrthogonalTransferSVC(hierarchy=H, tol=1e-6).fit(X, y)
    assert est.result_.converged and est.result_.extras["n_rows_solved"] == 4
    unlabelled = rows(H, [f"c{i}" for i in range(3, 400)])
    assert np.all(est.coef_[unlabelled] == est.coef_[unlabelled[0]])
    assert np.all(est.intercept_[unlabelled] == est.intercept_[unlabelled[0]])
    ref = OrthogonalTransferSVC(hierarchy=star(3), tol=1e-6).fit(X, y)
    # the 397 unlabelled leaves add margin rows and regularized rows: never a lower optimum
    assert est.objective_ >= ref.objective_ * (1 - 1e-6)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_group_coupled_to_its_ancestor(fit_intercept):
    """p2, p3, p4 (negatives of p1) are merged but coupled to their parent p by K (heuristic
    (6)): the S step moves S'_{G,p}, and the lifted S spreads it as S'_{G,p} / g."""
    H = tree({"r": None, "p": "r", "q": "r", "p1": "p", "p2": "p", "p3": "p", "p4": "p", "q1": "q"})
    X, y = data(("p1", "q1"), n=20, seed=2)
    model = otm.prepare(X, y, H, "orthogonal", alpha=0.4, fit_intercept=fit_intercept)
    red = otm.reduce_model(model)
    assert red.size.max() == 3
    fast, _ = check_against_reference(model, 4.0)
    S = fast.extras["dual_S"]
    p, p2 = H.index("p") - 1, H.index("p2") - 1
    assert S[p, p2] != 0.0  # the coupling is in use: the test sees the spreading
    assert np.allclose(fast.weights[rows(H, ["p2", "p3"])], fast.weights[H.index("p4")])


@pytest.mark.parametrize("name", ["orthogonal", "flatmult", "hiermult", "transfer"])
def test_reduced_model_is_its_own_reduction(name):
    """Classes of a reduced model are positions in its class list, not node indices: reducing
    it again finds nothing, and solving it gives the full model's optimum."""
    H = tree(WIDE)
    X, y = data(LABELS)
    model = otm.prepare(X, y, H, name)
    small = otm.reduce_model(model).model
    assert otm.reduce_model(small) is None
    full = od.solve(model, 2.0, tol=1e-8)
    direct = od.solve(small, 2.0, tol=1e-8)
    assert direct.objective == pytest.approx(full.objective, rel=1e-6)
