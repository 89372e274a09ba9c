"""Cai–Hofmann hierarchical SVM references: primal (4.10), dual (4.15), class form (4.48).

Independent routes: primal vs dual vs class form on random trees and DAGs (single- and
multi-label, slack and margin rescaling); the primal's constraint duals rebuild the primal
weights through (4.12); KKT complementarity of the budgets; two QP solvers; a C sweep vs a
fresh build; the thesis' Proposition 2 / Corollary 1 on the solutions; Crammer–Singer as
the flat special case; the regularizer of (4.40)-(4.46) against (Lam Lam^T)^-1 and against
the closed form (4.47) of the thesis' appendix A.
"""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import testing
from hiercvx.formulations import hsvm
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.losses import loss_matrix


# ---------------------------------------------------------------------- random problems
def random_tree(rng, n_nodes=11):
    """Unbalanced tree: each node hangs under a random earlier node (chains, one-child nodes)."""
    parents = {"n0": None}
    for i in range(1, n_nodes):
        parents[f"n{i}"] = f"n{int(rng.integers(0, i))}"
    return hc.Hierarchy.from_parents(parents)


def random_dag(rng, n_nodes=11):
    """DAG: every node picks one or two earlier parents; at least one shared child."""
    edges = []
    for i in range(1, n_nodes):
        k = 2 if (i == n_nodes // 2 or (i > 2 and rng.random() < 0.3)) else 1
        for p in rng.choice(i, size=min(k, i), replace=False):
            edges.append((f"n{p}", f"n{i}"))
    H = hc.Hierarchy.from_edges(edges)
    assert not H.is_tree
    return H


def random_labels(rng, leaves, n, multilabel):
    """Labels over the leaves; multi-label sets have 1..2 members and never every leaf."""
    out = []
    for _ in range(n):
        if multilabel and rng.random() < 0.6:
            out.append(frozenset(rng.choice(leaves, size=2, replace=False).tolist()))
        else:
            out.append(leaves[int(rng.integers(len(leaves)))])
    return out


def problem(kind="tree", multilabel=False, seed=0, n=24, d=3, min_leaves=4):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        H = (random_tree if kind == "tree" else random_dag)(rng)
        if len(H.leaves) >= min_leaves:
            break
    X = rng.standard_normal((n, d))
    Y = random_labels(rng, list(H.leaves), n, multilabel)
    return X, Y, H


def scores(W, X, Lam):
    return X @ W.T @ Lam.T


def assert_close_weights(Wa, Wb, *sols):
    """The objective is 1-strongly convex in W and ``P(W) - D(alpha) >= 1/2 ||W - W(alpha)||^2``
    for feasible alpha, so each certificate bounds its distance to the optimal weights by
    ``sqrt(2 * absolute gap)``."""
    tol = sum(np.sqrt(2 * max(s.objective - s.lower_bound, 0.0)) for s in sols) + 1e-7
    dist = float(np.linalg.norm(np.asarray(Wa) - np.asarray(Wb)))
    assert dist <= tol, f"weights differ by {dist:.3e} > {tol:.3e} (allowed by the certificates)"


# ---------------------------------------------------------------------- primal = dual = class form
CASES = [(k, m, r) for k in ("tree", "dag") for m in (False, True) for r in ("slack", "margin")]


@pytest.mark.parametrize("kind,multilabel,rescaling", CASES)
def test_primal_dual_class_form_agree(kind, multilabel, rescaling):
    X, Y, H = problem(kind, multilabel, seed=len(kind) + 3 * multilabel)
    C = 0.7
    p = hsvm.primal(X, Y, H, C=C, rescaling=rescaling)
    sp_ = p.solve()
    sd = hsvm.dual(X, Y, H, C=C, rescaling=rescaling).solve()
    sc = hsvm.class_form(X, Y, H, C=C, rescaling=rescaling).solve()
    for s in (sp_, sd, sc):
        testing.assert_certified(s)
    testing.assert_same_optimum(sp_, sd, rtol=1e-6)
    testing.assert_same_optimum(sp_, sc, rtol=1e-6)
    # the optimum is unique in W (strictly convex in W): all three recover the same weights
    assert sp_.weights.shape == (len(H), X.shape[1])
    assert_close_weights(sd.weights, sp_.weights, sd, sp_)
    assert_close_weights(sc.weights, sp_.weights, sc, sp_)
    # the solver's own value agrees with the numpy recomputation
    assert abs(sp_.solver_objective - sp_.objective) < 1e-6 * max(1, sp_.objective)

    # The pair constraints are written as in (4.10), so their duals ARE alpha of (4.11):
    # (4.12) rebuilds W from them, and they satisfy the budgets of (4.15).
    data = p.data["margin_data"]
    alpha = sp_.duals["pairs"]
    feasible = _margin.project_dual(alpha, data, C)
    W_from_duals = _margin.weights_from_coefficients(_margin.coefficients(feasible, data), X, data.Lam)
    assert_close_weights(W_from_duals, sp_.weights, sp_)
    used = np.bincount(data.pair_i, weights=alpha * data.pair_cost, minlength=len(X))
    assert np.all(used <= C + 1e-6)
    # complementarity (4.25d): an example with a positive slack spends its whole budget
    xi = sp_.values["xi"]
    assert np.any(xi > 1e-4), "the test needs margin violations to mean something"
    np.testing.assert_allclose(used[xi > 1e-4], C, atol=1e-5)
    # the loss matters: with non-unit losses, reading the dual as alpha/Delta breaks (4.12)
    if rescaling == "slack" and not np.allclose(data.pair_loss, 1):
        wrong = _margin.weights_from_coefficients(_margin.coefficients(alpha * data.pair_loss, data),
                                                  X, data.Lam)
        assert np.abs(wrong - sp_.weights).max() > 1e-3


def test_sparse_features_and_sample_weights():
    X, Y, H = problem("tree", True, seed=5, n=16)
    dense = hsvm.primal(X, Y, H, C=0.5).solve()
    sparse = hsvm.primal(sp.csr_matrix(X), Y, H, C=0.5).solve()
    testing.assert_same_optimum(dense, sparse, rtol=1e-7)
    testing.assert_same_optimum(dense, hsvm.dual(sp.csr_matrix(X), Y, H, C=0.5).solve(), rtol=1e-6)
    testing.assert_same_optimum(dense, hsvm.class_form(sp.csr_matrix(X), Y, H, C=0.5).solve(), rtol=1e-6)
    # an integer sample weight equals repeating the example
    w = np.ones(len(X))
    w[:3] = 2
    weighted = hsvm.primal(X, Y, H, C=0.5, sample_weight=w).solve()
    Xr = np.vstack([X, X[:3]])
    Yr = list(Y) + list(Y[:3])
    repeated = hsvm.primal(Xr, Yr, H, C=0.5).solve()
    testing.assert_same_optimum(weighted, repeated, rtol=1e-6)
    dual = hsvm.dual(X, Y, H, C=0.5, sample_weight=w).solve()
    testing.assert_same_optimum(weighted, dual, rtol=1e-6)


# ---------------------------------------------------------------------- kernels
def test_rbf_dual_certified_and_objective_at_recovered_coefficients():
    X, Y, H = problem("dag", True, seed=2, n=20)
    prob = hsvm.dual(X, Y, H, C=2.0, kernel="rbf")
    sol = prob.solve()
    testing.assert_certified(sol)
    assert prob.data["weights"] == "G" and sol.weights.shape == (len(X), len(H.leaves))
    # primal objective at the recovered G equals the dual optimum (strong duality)
    assert abs(sol.objective - sol.solver_objective) <= 1e-6 * max(1, sol.objective)
    # recomputed by hand from the Gram matrix, not through _margin
    K = prob.data["K"]
    G, Q = sol.weights, prob.data["Q"]
    S = K @ G @ Q
    data = prob.data["margin_data"]
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    xi = np.zeros(len(X))
    np.maximum.at(xi, data.pair_i, data.pair_loss * (1 - diff))
    by_hand = 0.5 * np.trace(G.T @ K @ G @ Q) + 2.0 * xi.sum()
    assert abs(by_hand - sol.objective) < 1e-8 * max(1, by_hand)
    # scores of the training points through dual_scores
    np.testing.assert_allclose(hsvm.dual_scores(prob, sol, X), S, atol=1e-9)


def test_kernel_and_class_kernel_variants_match_primal():
    X, Y, H = problem("tree", True, seed=3, n=18)
    ref = hsvm.primal(X, Y, H, C=1.0).solve()
    Lam = hc.class_attributes(H, scheme="class_depth")
    # a precomputed linear Gram matrix, and the class kernel Lam Lam^T as an array / callable
    pre = hsvm.dual(X @ X.T, Y, H, kernel="precomputed").solve()
    qarr = hsvm.dual(X, Y, H, class_kernel=Lam @ Lam.T).solve()
    qfun = hsvm.dual(X, Y, H, class_kernel=lambda H_, cls: hc.class_attributes(H_, cls, "class_depth")
                     @ hc.class_attributes(H_, cls, "class_depth").T).solve()
    kfun = hsvm.dual(X, Y, H, kernel=lambda A, B: A @ B.T).solve()
    for s in (pre, qarr, qfun, kfun):
        testing.assert_certified(s)
        testing.assert_same_optimum(ref, s, rtol=1e-6)
    # G from the class-kernel route gives the same class scores as the node weights
    S_ref = scores(ref.weights, X, Lam)
    np.testing.assert_allclose(X @ X.T @ qarr.weights @ (Lam @ Lam.T), S_ref, atol=1e-4)
    # d > n: the linear dual factors the Gram matrix instead of using X
    Xw = np.random.default_rng(0).standard_normal((8, 12))
    Yw = Y[:8]
    testing.assert_same_optimum(hsvm.primal(Xw, Yw, H).solve(), hsvm.dual(Xw, Yw, H).solve(), rtol=1e-6)


# ---------------------------------------------------------------------- solvers and parameters
def test_two_qp_solvers_agree():
    X, Y, H = problem("dag", True, seed=4, n=18)
    sols = testing.solve_with_each(lambda: hsvm.primal(X, Y, H, C=1.3), ["CLARABEL", "ECOS"])
    a, b = sols.values()
    testing.assert_same_optimum(a, b, rtol=1e-6)
    assert_close_weights(a.weights, b.weights, a, b)
    sols = testing.solve_with_each(lambda: hsvm.dual(X, Y, H, C=1.3), ["CLARABEL", "ECOS"])
    testing.assert_same_optimum(*sols.values(), rtol=1e-6)


@pytest.mark.parametrize("builder", [hsvm.primal, hsvm.dual, hsvm.class_form])
def test_C_sweep_reuses_the_compiled_problem(builder):
    X, Y, H = problem("tree", True, seed=6, n=16)
    prob = builder(X, Y, H, C=1.0)
    prob.solve()
    compiled = prob.problem._cache.param_prog
    for C in (0.1, 10.0):
        swept = prob.set(C=C).solve()
        assert prob.problem._cache.param_prog is compiled  # not recompiled
        testing.assert_certified(swept)
        fresh = builder(X, Y, H, C=C).solve()
        testing.assert_same_optimum(swept, fresh, rtol=1e-6)


# ---------------------------------------------------------------------- thesis' bounds on the loss
def maximal_and_top_loss(S, Ybool, L):
    """Thesis (4.18)-(4.19) and (4.21)-(4.23), computed directly from the scores."""
    n, q = S.shape
    mis = Ybool[:, :, None] & ~Ybool[:, None, :] & (S[:, :, None] <= S[:, None, :])
    maximal = np.where(mis, L[None], 0.0).max(axis=(1, 2))
    top = S.argmax(axis=1)
    top_loss = np.where(Ybool[np.arange(n), top], 0.0,
                        np.where(Ybool, L[:, top].T, -np.inf).max(axis=1))
    return maximal.mean(), top_loss.mean()


@pytest.mark.parametrize("kind,rescaling", [("tree", "slack"), ("dag", "slack"), ("dag", "margin")])
def test_proposition_2_and_corollary_1(kind, rescaling):
    X, Y, H = problem(kind, True, seed=7, n=30)
    X = X + 0.3 * np.random.default_rng(1).standard_normal(X.shape)
    prob = hsvm.primal(X, Y, H, C=0.05, rescaling=rescaling)
    sol = prob.solve()
    Lam, data = prob.data["Lam"], prob.data["margin_data"]
    S = scores(sol.weights, X, Lam)
    maximal, top = maximal_and_top_loss(S, data.Y, data.loss)
    assert top > 0, "a meaningful check needs training mistakes"
    mean_xi = sol.values["xi"].mean()
    assert mean_xi >= maximal - 1e-7          # Proposition 2
    assert mean_xi >= top - 1e-7              # Corollary 1
    assert maximal >= top - 1e-12             # the maximal loss bounds the top loss
    # also at a non-optimal feasible point (the propositions hold for any feasible (w, xi))
    W = np.random.default_rng(2).standard_normal(sol.weights.shape)
    xi = _margin.slacks(scores(W, X, Lam), data)
    m2, t2 = maximal_and_top_loss(scores(W, X, Lam), data.Y, data.loss)
    assert xi.mean() >= m2 >= t2


# ---------------------------------------------------------------------- flat special case
def test_flat_indicator_zero_one_is_crammer_singer():
    rng = np.random.default_rng(8)
    H = hc.Hierarchy.from_parents({"r": None, **{f"c{k}": "r" for k in range(4)}})
    X = rng.standard_normal((25, 3))
    y = [f"c{k}" for k in rng.integers(0, 4, 25)]
    sols = {r: hsvm.primal(X, y, H, C=0.8, loss="zero_one", attributes="indicator", rescaling=r).solve()
            for r in ("slack", "margin")}
    testing.assert_same_optimum(sols["slack"], sols["margin"], rtol=1e-7)  # same under 0/1 loss
    W = sols["slack"].weights
    # the root's attribute is the same for every class, so its weight is 0 (thesis 4.2.1)
    assert np.abs(W[H.index("r")]).max() < 1e-6
    leaf_W = W[H.indices([f"c{k}" for k in range(4)])]
    # a direct Crammer–Singer declaration
    Wc, xi = cp.Variable((4, 3)), cp.Variable(25)
    yi = np.array([int(c[1:]) for c in y])
    S = X @ Wc.T
    cons = [xi >= 0]
    for m in range(4):  # one constraint per wrong class m != y_i
        rows = yi != m
        cons.append(S[np.flatnonzero(rows), yi[rows]] - S[np.flatnonzero(rows), m] >= 1 - xi[rows])
    cs = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(Wc) + 0.8 * cp.sum(xi)), cons)
    cs.solve(solver="CLARABEL")
    assert abs(cs.value - sols["slack"].objective) < 1e-6 * cs.value
    np.testing.assert_allclose(leaf_W, Wc.value, atol=1e-4)
    try:
        from hiercvx.formulations import multiclass
    except ImportError:  # pragma: no cover - written by another module's author
        return
    mc = multiclass.primal(X, y, C=0.8).solve()
    testing.assert_same_optimum(mc, sols["slack"], rtol=1e-6)
    assert_close_weights(mc.weights, leaf_W, mc, sols["slack"])


# ---------------------------------------------------------------------- class form and its regularizer
@pytest.mark.parametrize("kind", ["tree", "dag"])
def test_taxonomy_regularizer_is_the_inverse_class_gram(kind):
    X, Y, H = problem(kind, seed=9)
    for scheme in ("class_depth", "indicator", "tree_depth"):
        Lam = hc.class_attributes(H, scheme=scheme)
        R = hsvm.taxonomy_regularizer(Lam, H.indices(H.leaves))
        np.testing.assert_allclose(R, np.linalg.inv(Lam @ Lam.T), atol=1e-9)
        np.testing.assert_allclose(hsvm.class_regularizer(Lam), R, atol=1e-9)
        # the defining property: tr(U^T R U) = min ||W||^2 over Lam W = U
        U = np.random.default_rng(0).standard_normal((len(H.leaves), 2))
        W = hsvm.class_to_node_weights(U, Lam)
        np.testing.assert_allclose(hsvm.node_to_class_weights(W, Lam), U, atol=1e-10)
        assert abs(np.trace(U.T @ R @ U) - np.sum(W * W)) < 1e-9 * max(1, np.sum(W * W))


def test_figure_4_5_closed_form_4_47():
    """Thesis appendix A.1: two perfect depth-2 trees, constant attributes lambda."""
    edges = [(1, 2), (1, 3), (2, 7), (2, 8), (3, 9), (3, 10), (4, 5), (4, 6), (5, 11), (5, 12),
             (6, 13), (6, 14)]
    H = hc.Hierarchy.from_edges(edges)  # a forest: an artificial root joins the two trees
    lam = 0.7
    classes = tuple(range(7, 15))
    Lam = lam * hc.class_attributes(H, classes, scheme="indicator", include_root=False)
    R, A, B, D = hsvm.taxonomy_regularizer(Lam, H.indices(classes), return_parts=True)
    interior = np.setdiff1d(np.arange(len(H)), H.indices(classes))
    names = [H.nodes[k] for k in interior]
    order = [names.index(v) for v in (1, 2, 3, 4, 5, 6)]
    A_thesis = np.array([[5, 2, 2, 0, 0, 0], [2, 3, 0, 0, 0, 0], [2, 0, 3, 0, 0, 0],
                         [0, 0, 0, 5, 2, 2], [0, 0, 0, 2, 3, 0], [0, 0, 0, 2, 0, 3]], float)
    np.testing.assert_allclose(A[np.ix_(order, order)], A_thesis)      # appendix A.1
    U = np.random.default_rng(1).standard_normal((8, 3))
    Uc = dict(zip(classes, U))

    def sq(*ys):
        return float(np.sum(sum(Uc[y] for y in ys) ** 2))

    coupling = (sq(7, 8, 9, 10) / 21 + sq(7, 8) / 3 + sq(9, 10) / 3
                + sq(11, 12, 13, 14) / 21 + sq(11, 12) / 3 + sq(13, 14) / 3) / lam ** 2   # (4.47)
    regularizer = np.sum(U * U) / lam ** 2 - coupling                                  # (4.46a)
    assert abs(np.trace(U.T @ R @ U) - regularizer) < 1e-10


def test_class_form_with_rank_deficient_attributes():
    """Two classes with identical attributes: Lam has rank q-1, U must stay in its range."""
    X, Y, H = problem("tree", True, seed=10, n=16)
    Lam = hc.class_attributes(H, scheme="class_depth")
    Lam[1] = Lam[0]
    a = hsvm.primal(X, Y, H, attributes=Lam).solve()
    b = hsvm.class_form(X, Y, H, attributes=Lam)
    assert b.data["regularizer"].startswith("pseudo-inverse")
    sb = b.solve()
    testing.assert_same_optimum(a, sb, rtol=1e-6)
    assert_close_weights(sb.weights, a.weights, a, sb)


def test_node_class_round_trip():
    X, Y, H = problem("dag", True, seed=11, n=16)
    sol = hsvm.primal(X, Y, H).solve()
    Lam = hc.class_attributes(H, scheme="class_depth")
    U = hsvm.node_to_class_weights(sol.weights, Lam)
    # optimal node weights lie in the row space of Lam, so the min-norm map recovers them
    np.testing.assert_allclose(hsvm.class_to_node_weights(U, Lam), sol.weights, atol=1e-6)
    # an arbitrary W is not recovered, but its class weights (what scores use) are
    W = np.random.default_rng(0).standard_normal(sol.weights.shape)
    W2 = hsvm.class_to_node_weights(hsvm.node_to_class_weights(W, Lam), Lam)
    assert np.abs(W2 - W).max() > 1e-3
    np.testing.assert_allclose(Lam @ W2, Lam @ W, atol=1e-10)
    assert np.sum(W2 ** 2) <= np.sum(W ** 2)


# ---------------------------------------------------------------------- attribute schemes (thesis 7.2)
def test_unit_norm_attribute_schemes_on_unbalanced_trees():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                   "a11": "a1", "a12": "a1"})   # leaves at depths 1, 2, 3
    cd = hc.class_attributes(H, scheme="class_depth")
    td = hc.class_attributes(H, scheme="tree_depth")
    np.testing.assert_allclose(np.linalg.norm(cd, axis=1), 1.0)
    # tree_depth: ||Lam(y)||^2 = depth(y) / D, unit only for the deepest classes
    depth = np.array([H.depth(v) for v in H.leaves])
    np.testing.assert_allclose(np.linalg.norm(td, axis=1) ** 2, depth / depth.max())
    assert hsvm.DEFAULT_ATTRIBUTES == "class_depth"
    X, Y, Hd = problem("dag", seed=12)
    np.testing.assert_allclose(np.linalg.norm(hc.class_attributes(Hd, scheme="class_depth"), axis=1), 1)


def test_partial_paths_via_self_leaves():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                   "b1": "b", "b2": "b"})
    rng = np.random.default_rng(13)
    X = rng.standard_normal((12, 2))
    Y = ["a", "a1", "b2", "b", "a2", "b1"] * 2
    with pytest.raises(hc.LabelError, match="with_self_leaves"):
        hsvm.primal(X, Y, H)
    with pytest.raises(hc.LabelError, match="with_self_leaves"):
        hsvm.primal(X, Y, H, classes=["a", "a1", "a2", "b1", "b2"])
    pp = H.with_self_leaves()
    sol = hsvm.primal(X, pp.transform(Y), pp.hierarchy).solve()
    testing.assert_certified(sol)
    assert sol.weights.shape == (len(pp.hierarchy), 2)


# ---------------------------------------------------------------------- hypothesis: any tree or DAG
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_primal_equals_dual_on_generated_hierarchies(data):
    from strategies import dags, trees

    H = data.draw(st.one_of(trees(min_nodes=4, max_nodes=10), dags(max_nodes=9)))
    leaves = list(H.leaves)
    assume(len(leaves) >= 3)
    seed = data.draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((10, 2))
    Y = random_labels(rng, leaves, 10, multilabel=True)
    a = hsvm.primal(X, Y, H).solve()
    b = hsvm.dual(X, Y, H).solve()
    testing.assert_same_optimum(a, b, rtol=1e-6)


# ---------------------------------------------------------------------- bad input
def test_bad_input_is_refused(monkeypatch):
    X, Y, H = problem("tree", True, seed=14, n=10)
    leaves = list(H.leaves)
    with pytest.raises(hc.LabelError, match="not nodes of the hierarchy"):
        hsvm.primal(X, Y[:-1] + ["nowhere"], H)
    with pytest.raises(hc.LabelError, match="no label"):
        hsvm.primal(X, Y[:-1] + [frozenset()], H)
    with pytest.raises(hc.LabelError, match="every class"):
        hsvm.dual(X, Y[:-1] + [frozenset(leaves)], H)
    for C in (0, -1.0, np.inf):
        with pytest.raises(hc.InputError, match="C must be positive"):
            hsvm.primal(X, Y, H, C=C)
    with pytest.raises(hc.InputError, match="positive semidefinite"):
        hsvm.dual(X, Y, H, class_kernel=-np.eye(len(leaves)))
    with pytest.raises(hc.InputError, match="positive semidefinite"):
        hsvm.dual(-(X @ X.T) - np.eye(len(X)), Y, H, kernel="precomputed")
    Xbad = X.copy()
    Xbad[3, 1] = np.nan
    with pytest.raises(hc.InputError, match="non-finite"):
        hsvm.class_form(Xbad, Y, H)
    with pytest.raises(hc.InputError, match="rescaling"):
        hsvm.primal(X, Y, H, rescaling="both")
    with pytest.raises(hc.InputError, match="loss matrix must be"):
        hsvm.primal(X, Y, H, loss=np.ones((2, 2)))
    with pytest.raises(hc.InputError, match="positive loss"):
        hsvm.primal(X, Y, H, loss=np.zeros((len(leaves), len(leaves))))
    with pytest.raises(hc.InputError, match="one row per class"):
        hsvm.primal(X, Y, H, attributes=np.ones((2, len(H))))
    with pytest.raises(hc.InputError, match="sample_weight"):
        hsvm.primal(X, Y, H, sample_weight=-np.ones(len(X)))
    with pytest.raises(hc.InputError, match="entries but X has"):
        hsvm.primal(X[:5], Y, H)

    # past the size limit: refused before any cvxpy object is built
    def no_cvxpy(*a, **k):
        raise AssertionError("a cvxpy variable was built for a problem past the size limit")

    monkeypatch.setattr(cp, "Variable", no_cvxpy)
    for builder in (hsvm.primal, hsvm.dual, hsvm.class_form):
        with pytest.raises(hc.ProblemTooLargeError, match="max_size="):
            builder(X, Y, H, max_size=50)


def test_prepare_is_the_validation_entry_point():
    X, Y, H = problem("dag", True, seed=15, n=12)
    classes, Lam, data = hsvm_model.prepare(X, Y, H, rescaling="margin")
    assert classes == H.leaves and Lam.shape == (len(classes), len(H))
    assert data.rescaling == "margin" and data.n_samples == 12
    np.testing.assert_allclose(data.loss, loss_matrix(H, "half_symmetric"))
    assert data.Y.sum() == sum(len(y) if isinstance(y, frozenset) else 1 for y in Y)
    # a callable loss and a callable attribute scheme
    _, Lam2, data2 = hsvm_model.prepare(X, Y, H, loss=lambda a, b: float(a != b),
                                        attributes=lambda H_, v, y: 2.0)
    np.testing.assert_allclose(data2.loss, 1 - np.eye(len(classes)))
    assert set(np.unique(Lam2)) <= {0.0, 2.0}
    with pytest.raises(hc.LabelError, match="leaves"):
        hsvm_model.prepare(X, Y, H, classes=list(H.nodes))


def test_pair_features_are_the_joint_feature_differences():
    """dPhi_p = (Lam_y - Lam_ybar) (x) x_i: dPhi vec(W) = score margins, dPhi^T alpha = W(alpha)."""
    X, Y, H = problem("dag", True, seed=16, n=10)
    classes, Lam, data = hsvm_model.prepare(X, Y, H)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((len(H), X.shape[1]))
    for Xin in (X, sp.csr_matrix(X)):
        Phi = hsvm.pair_features(data, Xin, Lam)
        S = scores(W, X, Lam)
        np.testing.assert_allclose(Phi @ W.ravel(), S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar],
                                   atol=1e-12)
        alpha = rng.random(data.n_pairs)
        W_alpha = _margin.weights_from_coefficients(_margin.coefficients(alpha, data), X, Lam)
        np.testing.assert_allclose(Phi.T @ alpha, W_alpha.ravel(), atol=1e-12)


def test_dual_accepts_a_resolved_kernel():
    from hiercvx.kernels import make_kernel

    X, Y, H = problem("tree", True, seed=17, n=14)
    a = hsvm.dual(X, Y, H, kernel="rbf", sigma=1.3).solve()
    b = hsvm.dual(X, Y, H, kernel=make_kernel("rbf", sigma=1.3)).solve()
    testing.assert_same_optimum(a, b, rtol=1e-7)
    lin = hsvm.dual(X, Y, H, kernel=make_kernel("linear"))
    assert lin.data["weights"] == "W"


def test_a_wrong_regularizer_cannot_certify(monkeypatch):
    """The class form's certificate does not use R: dropping the coupling -u^T A^-1 u of
    (4.46a) (i.e. using sum_y ||U_y||^2 / lambda_y(y)^2 alone) must be caught."""
    X, Y, H = problem("dag", True, seed=3)
    monkeypatch.setattr(hsvm, "taxonomy_regularizer",
                        lambda Lam, cols: np.diag(1 / Lam[np.arange(len(cols)), cols] ** 2))
    with pytest.raises(hc.SolverError, match="duality gap"):
        hsvm.class_form(X, Y, H).solve()


# ---------------------------------------------------------------------- the model layer
def test_model_answers_what_the_references_certify():
    """HSVMModel (hiercvx.models.hsvm.prepare): objective / lower bound / scores are the
    references' numbers; the oracle is the brute-force most violated pair; the builders
    declared from one model equal the public ones and sweep C as a parameter."""
    from hiercvx.models.hsvm import HSVMModel, prepare

    X, Y, H = problem("dag", True, seed=21, n=16)
    model = prepare(X, Y, H, rescaling="margin")
    assert isinstance(model, HSVMModel) and model.equations["primal"] == "(4.10)"
    assert "alpha" in model.variables and "HSVMModel" in model.describe()
    classes, Lam, data = model  # a model unpacks as (classes, Lam, data)
    assert classes == H.leaves and Lam is model.Lam and data is model.data
    ref = hsvm.primal_from_model(model, C=0.7).solve()
    public = hsvm.primal(X, Y, H, C=0.7, rescaling="margin").solve()
    testing.assert_same_optimum(ref, public, rtol=1e-9)
    assert model.objective(ref.weights, C=0.7) == pytest.approx(ref.objective, rel=1e-12)
    dual = hsvm.dual_from_model(model, C=0.7).solve()
    assert model.lower_bound(dual.values["alpha"], C=0.7) == pytest.approx(dual.lower_bound, rel=1e-12)
    np.testing.assert_allclose(model.scores(ref.weights, X), scores(ref.weights, X, Lam))
    # the oracle: per example the pair of largest (b_p - margin_p) / cost_p
    S = model.scores(ref.weights, X)
    y, ybar, viol = model.oracle(S)
    for i in range(len(Y)):
        p = np.flatnonzero(data.pair_i == i)
        h = (data.pair_offset[p] - (S[i, data.pair_y[p]] - S[i, data.pair_ybar[p]])) / data.pair_cost[p]
        assert viol[i] == pytest.approx(h.max())
        best = p[np.argmax(h)]
        assert (y[i], ybar[i]) == (data.pair_y[best], data.pair_ybar[best])
    # one declaration, C swept as a parameter
    prob = hsvm.primal_from_model(model, C=0.7)
    swept = prob.set(C=2.0).solve()
    testing.assert_same_optimum(swept, hsvm.primal_from_model(model, C=2.0).solve(), rtol=1e-7)
    # the primal needs features with class attributes
    with pytest.raises(hc.InputError, match="dual"):
        hsvm.primal_from_model(prepare(X, Y, H, kernel="rbf"), C=1.0)
