"""NHSVM references (paper 001): path weights (6)-(8), NHSVM (10)/(13) single- and multi-label,
the shared-norm SVM (14), the alpha step (20) and its closed form, the shared norms (16)/(17).

Every reference is checked against an independent route: hand-computed optima, a second
declaration (dual QP, form (11), full enumeration of the label space), scipy, or identities
of the paper (Theorem 2, Lemma 3, Table 1).
"""

import cvxpy as cp
import numpy as np
import pytest
import scipy.optimize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import inference
from hiercvx.formulations import nhsvm
from hiercvx.models import nhsvm as nhsvm_model
from hiercvx.models.nhsvm import optimal_alpha, ratio_sum
from hiercvx.testing import assert_certified, assert_same_optimum

from strategies import trees

# ---------------------------------------------------------------------- fixtures
TREE = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "C": "r", "A1": "A", "A2": "A",
                                  "B1": "B", "A1a": "A1", "A1b": "A1"})
SMALL_TREE = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A",
                                        "B1": "B", "B2": "B"})
DAG = hc.Hierarchy.from_edges([("r", "A"), ("r", "B"), ("A", "x"), ("B", "x"), ("A", "a1"),
                               ("B", "b1"), ("r", "c")])


def data(H, n=12, d=3, seed=0, multilabel=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if multilabel:
        Y = [set(rng.choice(H.leaves, rng.integers(1, 3), replace=False)) for _ in range(n)]
    else:
        Y = rng.choice(np.array(H.leaves, dtype=object), n)
    return X, Y


def leaf_paths(H):
    return H.ancestor_matrix[H.leaf_indices].toarray().astype(float)


# ====================================================================== path weights
@pytest.mark.parametrize("rho", [2.0, 3.0, 1.5])
@pytest.mark.parametrize("k", [2, 5])
def test_power_weights_on_a_star_match_the_closed_form(rho, k):
    # root + k leaves: rho a_r^(rho-1) = k rho a_l^(rho-1), a_r + a_l = 1
    H = hc.Hierarchy.from_parents({"r": None, **{f"l{j}": "r" for j in range(k)}})
    alpha, sol = nhsvm.path_weights(H, "power", rho=rho, return_solution=True)
    ratio = k ** (1.0 / (rho - 1.0))
    a_leaf = 1.0 / (1.0 + ratio)
    exact = np.array([1 - a_leaf] + [a_leaf] * k)
    assert abs(sol.objective - np.sum(exact ** rho)) <= 1e-7
    # the objective is flat at the optimum: weights are accurate to about sqrt(solver tolerance)
    np.testing.assert_allclose(alpha, exact, atol=5e-5)
    assert_certified(sol, 1e-6)


@pytest.mark.parametrize("rho", [2.0, 2.5])
def test_power_weights_match_scipy_on_an_unbalanced_tree(rho):
    A = leaf_paths(TREE)
    M = len(TREE)
    res = scipy.optimize.minimize(
        lambda a: np.sum(np.abs(a) ** rho), np.full(M, 0.3), method="SLSQP",
        bounds=[(0, 1)] * M, constraints=[{"type": "eq", "fun": lambda a: A @ a - 1}],
        options={"ftol": 1e-14, "maxiter": 500})
    alpha, sol = nhsvm.path_weights(TREE, "power", rho=rho, return_solution=True)
    assert abs(sol.objective - res.fun) <= 1e-6
    np.testing.assert_allclose(alpha, res.x, atol=1e-4)


@pytest.mark.parametrize("H", [TREE, SMALL_TREE, DAG], ids=["tree", "balanced", "dag"])
@pytest.mark.parametrize("method,T,directional", [("power", None, False), ("power", None, True),
                                                  ("maxmin", None, None), ("dag", None, False),
                                                  ("maxmin", 1.5, True)])
def test_path_weight_constraints_hold(H, method, T, directional):
    alpha, sol = nhsvm.path_weights(H, method, T=T, directional=directional, return_solution=True)
    assert_certified(sol, 1e-6)
    sums = leaf_paths(H) @ alpha
    hi = 1.5 if (method == "dag" or T is not None) else 1.0
    assert np.all(sums >= 1 - 1e-7) and np.all(sums <= hi + 1e-7)
    if hi == 1.0:
        np.testing.assert_allclose(sums, 1.0, atol=1e-7)
    assert np.all(alpha >= 0)
    if directional or (method == "maxmin" and directional is None):
        p, c = H.edge_index[:, 0], H.edge_index[:, 1]
        assert np.all(alpha[c] >= alpha[p] - 1e-7)
    assert nhsvm.check_path_weights(alpha, H, T=hi if hi > 1 else None).shape == (len(H),)


CHAIN_TREE = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "a", "c": "b", "l1": "c", "l2": "a",
                                        "l3": "r"})


@pytest.mark.parametrize("H", [TREE, SMALL_TREE, CHAIN_TREE], ids=["tree", "balanced", "chain"])
def test_maxmin_value_is_one_over_the_longest_path(H):
    # on a tree min alpha <= 1/k for a path of k nodes, and alpha = 1/k_max on internal nodes
    # with the leaves taking the rest attains it (and meets the directional constraints)
    alpha, sol = nhsvm.path_weights(H, "maxmin", return_solution=True)
    k_max = leaf_paths(H).sum(axis=1).max()
    assert abs(alpha.min() - 1 / k_max) <= 1e-7
    assert abs(-sol.objective - 1 / k_max) <= 1e-7


def test_dag_relaxation_is_a_relaxation():
    exact = nhsvm.path_weights(DAG, "power", return_solution=True)[1]
    relaxed = nhsvm.path_weights(DAG, "dag", T=1.5, return_solution=True)[1]
    assert relaxed.objective <= exact.objective + 1e-8
    same = nhsvm.path_weights(DAG, "power", T=1.0, return_solution=True)[1]
    assert abs(same.objective - exact.objective) <= 1e-7


DUPLICATED = hc.Hierarchy.from_parents({"r": None, "A": "r", "A'": "A", "a1": "A'", "a2": "A'",
                                        "b": "r"})


def test_theorem_1_node_duplication():
    # A and A' (A's only child) are duplicated nodes (section 5.2); M(G) merges them
    G = DUPLICATED
    merged = G.minimal_graph(list(G.leaves)).hierarchy
    assert merged.nodes == ("r", "A", "a1", "a2", "b")
    # (6) at rho = 2 by hand: G gives (7/12, 1/6, 1/6, 1/12, 1/12, 5/12), M(G) (5/8, 1/4, 1/8, 1/8, 3/8)
    np.testing.assert_allclose(nhsvm.path_weights(G), [7 / 12, 1 / 6, 1 / 6, 1 / 12, 1 / 12, 5 / 12], atol=1e-6)
    np.testing.assert_allclose(nhsvm.path_weights(merged), [5 / 8, 1 / 4, 1 / 8, 1 / 8, 3 / 8], atol=1e-6)
    for rho in (2.0, 1.5, 1.25):
        aG, aM = nhsvm.path_weights(G, rho=rho), nhsvm.path_weights(merged, rho=rho)
        # Appendix A's Jensen step holds: duplicates share their weight equally ...
        assert abs(aG[1] - aG[2]) <= 1e-6
        # ... but the group's total relative to its child is |F| = 2 times M(G)'s for every rho:
        # (22) is really sum |F| (K/|F|)^rho = |F|^(1-rho) K^rho, whose minimizer scales K by
        # |F|^(1/(rho-1) * (rho-1)) = |F|; the factor does not vanish as rho -> 1
        # (KKT: (A / a)^(rho-1) = 2 in both graphs, since A lies on both leaves' paths)
        ratio_G = (aG[1] + aG[2]) / aG[3]
        ratio_M = aM[1] / aM[2]
        exact_M = 2.0 ** (1.0 / (rho - 1.0))
        # weights are accurate to ~sqrt(solver tolerance): 1e-2 relative is ample to tell 2x apart
        np.testing.assert_allclose([ratio_M, ratio_G], [exact_M, 2 * exact_M], rtol=1e-2)
    # what does hold (any alpha): NHSVM on G equals NHSVM on M(G) with the duplicates' weights
    # summed (two nodes with attributes sqrt(K/2) cost exactly what one with sqrt(K) costs)
    X, y = data(G, n=16, seed=20)
    aG = nhsvm.path_weights(G)
    summed = np.array([aG[0], aG[1] + aG[2], aG[3], aG[4], aG[5]])
    on_G = nhsvm.primal(X, y, G, lam=0.1, alpha=aG).solve()
    on_M = nhsvm.primal(X, y, merged, lam=0.1, alpha=summed).solve()
    assert_same_optimum(on_G, on_M, rtol=1e-7)
    own = nhsvm.primal(X, y, merged, lam=0.1).solve()          # M(G) with its own (6) weights
    assert abs(own.objective - on_G.objective) > 1e-3


# ====================================================================== NHSVM single-label (10) / (13)
@pytest.mark.parametrize("H", [TREE, DAG], ids=["tree", "dag"])
def test_normalized_attributes_and_margin(H):
    X, y = data(H, n=6, seed=21)
    nd = nhsvm.primal(X, y, H).data["nhsvm"]
    A = leaf_paths(H)
    # (5): [Lam(y)]_n = sqrt(alpha_n) on anc(y); on a tree (4) makes every row a unit vector
    np.testing.assert_allclose(nd.Lam, A * np.sqrt(nd.alpha), atol=0)
    if H.is_tree:
        np.testing.assert_allclose(np.linalg.norm(nd.Lam, axis=1), 1.0, atol=1e-7)
    # (9): sqrt of alpha summed over the symmetric difference = distance of the attributes
    sym = np.abs(A[:, None, :] - A[None, :, :])
    np.testing.assert_allclose(nd.structural, np.sqrt(sym @ nd.alpha), atol=1e-12)
    dist = np.linalg.norm(nd.Lam[:, None, :] - nd.Lam[None, :, :], axis=2)
    np.testing.assert_allclose(nd.structural, dist, atol=1e-12)
    # node scores summed along a leaf's path are the class scores of (10)
    W = np.random.default_rng(0).standard_normal((len(H), X.shape[1]))
    np.testing.assert_allclose(nhsvm.node_scores(W, X, nd.alpha) @ A.T, X @ W.T @ nd.Lam.T, atol=1e-12)


def margin_dual_value(X, y_pos, Lam, Delta, lam):
    """Independent route: the dual QP of (10), declared here from scratch.

    max sum_p Delta_p a_p - 1/(4 lam) ||sum_p a_p (Lam_{y_i} - Lam_m) (x) x_i||^2,
    a >= 0, sum_m a_{im} <= 1."""
    n, q = len(y_pos), Lam.shape[0]
    a = cp.Variable((n, q), nonneg=True)
    mask = np.ones((n, q))
    mask[np.arange(n), y_pos] = 0
    G = cp.multiply(mask, a)
    own = cp.sum(G, axis=1)
    E = np.zeros((n, q))
    E[np.arange(n), y_pos] = 1
    coef = cp.multiply(E, cp.reshape(own, (n, 1), order="C") @ np.ones((1, q))) - G
    V = Lam.T @ coef.T @ X
    gain = cp.sum(cp.multiply(Delta[y_pos], G))
    prob = cp.Problem(cp.Maximize(gain - cp.sum_squares(V) / (4 * lam)), [cp.sum(G, axis=1) <= 1])
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("H", [TREE, DAG], ids=["tree", "dag"])
def test_primal_10_matches_its_dual_qp(H):
    X, y = data(H, n=14, seed=1)
    lam = 0.3
    prob = nhsvm.primal(X, y, H, lam=lam)
    sol = prob.solve()
    assert_certified(sol, 1e-6)
    nd = prob.data["nhsvm"]
    dual = margin_dual_value(X, nd.leaf_pos, nd.Lam, nd.structural, lam)
    assert abs(sol.objective - dual) <= 1e-6 * max(1, abs(dual))
    # the objective is the paper's (10), evaluated directly
    S = nhsvm.node_scores(sol.weights, X, nd.alpha) @ leaf_paths(H).T          # (n, q)
    own = S[np.arange(len(y)), nd.leaf_pos][:, None]
    hinge = np.max(S - own + nd.structural[nd.leaf_pos], axis=1)
    assert abs(lam * np.sum(sol.weights ** 2) + hinge.sum() - sol.objective) <= 1e-9 * sol.objective


def test_primal_10_equals_the_change_of_variables_11():
    # (11): U_n = sqrt(alpha_n) W_n, regularizer lam sum ||U_n||^2 / alpha_n, plain indicators
    X, y = data(TREE, n=12, seed=2)
    lam = 0.2
    prob = nhsvm.primal(X, y, TREE, lam=lam)
    sol = prob.solve()
    nd = prob.data["nhsvm"]
    A = leaf_paths(TREE)
    n, q = len(y), A.shape[0]
    U = cp.Variable((len(TREE), X.shape[1]))
    S = X @ U.T @ A.T
    own = cp.reshape(cp.sum(cp.multiply(S, np.eye(q)[nd.leaf_pos]), axis=1), (n, 1), order="C")
    hinge = cp.max(S - own @ np.ones((1, q)) + nd.structural[nd.leaf_pos], axis=1)
    reg = cp.sum(cp.multiply(1 / nd.alpha, cp.sum(cp.square(U), axis=1)))
    p11 = cp.Problem(cp.Minimize(lam * reg + cp.sum(hinge)))
    p11.solve(solver="CLARABEL")
    assert abs(p11.value - sol.objective) <= 1e-6 * sol.objective
    np.testing.assert_allclose(U.value, np.sqrt(nd.alpha)[:, None] * sol.weights, atol=1e-5)


def test_primal_two_solvers_and_lam_sweep():
    X, y = data(SMALL_TREE, n=10, seed=3)
    prob = nhsvm.primal(X, y, SMALL_TREE, lam=1.0)
    a = prob.solve(solver="CLARABEL")
    b = nhsvm.primal(X, y, SMALL_TREE, lam=1.0).solve(solver="ECOS", gap_tol=1e-5)
    assert_same_optimum(a, b, rtol=1e-6)
    swept = prob.set(lam=0.05).solve()
    fresh = nhsvm.primal(X, y, SMALL_TREE, lam=0.05).solve()
    assert_same_optimum(swept, fresh, rtol=1e-7)


def test_variant_13_on_a_flat_hierarchy_is_a_rescaled_10():
    # every pair of leaves has the same distance c = sqrt(2 alpha_leaf), so with W = c V:
    # min (10)(lam c) = c * min (13)(lam)
    H = hc.Hierarchy.from_parents({"r": None, **{f"l{j}": "r" for j in range(4)}})
    X, y = data(H, n=12, seed=4)
    alpha = nhsvm.path_weights(H)
    c = np.sqrt(2 * alpha[1])
    lam = 0.4
    s13 = nhsvm.primal(X, y, H, lam=lam, variant="13").solve()
    s10 = nhsvm.primal(X, y, H, lam=lam * c).solve()
    assert_certified(s13, 1e-6)
    assert abs(s10.objective - c * s13.objective) <= 1e-6 * s10.objective
    np.testing.assert_allclose(s13.weights, s10.weights, atol=1e-5)


def test_variant_13_on_a_deep_tree_is_certified_and_differs_from_10():
    X, y = data(TREE, n=12, seed=5)
    s13 = nhsvm.primal(X, y, TREE, lam=0.3, variant="13").solve()
    s10 = nhsvm.primal(X, y, TREE, lam=0.3).solve()
    assert_certified(s13, 1e-6)
    assert abs(s13.objective - s10.objective) > 1e-3
    # recomputed objective: (13) with max over y including y_i (term 0)
    prob = nhsvm.primal(X, y, TREE, lam=0.3, variant="13")
    nd = prob.data["nhsvm"]
    S = nhsvm.node_scores(s13.weights, X, nd.alpha) @ leaf_paths(TREE).T
    own = S[np.arange(len(y)), nd.leaf_pos][:, None]
    D = nd.structural[nd.leaf_pos]
    terms = np.where(D > 0, (S - own) / np.where(D > 0, D, 1) + 1, 0.0)
    value = 0.3 * np.sum(s13.weights ** 2) + terms.max(axis=1).sum()
    assert abs(value - s13.objective) <= 1e-9 * value


# ====================================================================== multi-label cutting planes
def enumeration_value(X, T, H, alpha, lam, loss):
    """Independent route: (10) over the whole of Y_m, one constraint per sample and label set."""
    Z = inference.enumerate_label_sets(H).astype(float)               # (S, M)
    n, M = T.shape
    Delta = np.array([[loss(z.astype(bool), t) for z in Z] for t in T])  # (n, S)
    W = cp.Variable((M, X.shape[1]))
    SX = cp.multiply(X @ W.T, np.ones((n, 1)) @ np.sqrt(alpha)[None, :])
    own = cp.reshape(cp.sum(cp.multiply(SX, T.astype(float)), axis=1), (n, 1), order="C")
    xi = cp.Variable(n)
    cons = [cp.reshape(xi, (n, 1), order="C") @ np.ones((1, len(Z))) >= SX @ Z.T
            - own @ np.ones((1, len(Z))) + Delta]
    prob = cp.Problem(cp.Minimize(lam * cp.sum_squares(W) + cp.sum(xi)), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("H,inference_method", [(SMALL_TREE, "auto"), (DAG, "auto"), (DAG, "enumerate")],
                         ids=["tree-dp", "dag-ilp", "dag-enumerate"])
def test_cutting_planes_match_full_enumeration(H, inference_method):
    X, Y = data(H, n=10, seed=6, multilabel=True)
    lam = 0.25
    prob = nhsvm.primal(X, Y, H, lam=lam, inference=inference_method)
    assert isinstance(prob, nhsvm.CuttingPlaneProblem) and isinstance(prob, hc.ReferenceProblem)
    sol = prob.solve(verbose=False)
    assert_certified(sol, 1e-6)
    nd = prob.nhsvm_data
    full = enumeration_value(X, nd.T, H, nd.alpha, lam, nd.loss)
    assert abs(sol.objective - full) <= 1e-6 * max(1, full)
    assert sol.lower_bound <= full + 1e-7 * full
    # the reported objective is the exact one at the returned weights
    assert abs(nhsvm.primal_objective(sol.weights, nd, lam) - sol.objective) <= 1e-10 * sol.objective
    gaps = sol.history["gap"]
    assert all(b <= a + 1e-12 for a, b in zip(gaps, gaps[1:]))     # best-so-far gap never grows
    assert sol.n_cuts < len(X) * (2 ** len(H.leaves) - 1)


def test_cutting_planes_keep_their_working_set_across_a_lam_sweep():
    X, Y = data(SMALL_TREE, n=8, seed=7, multilabel=True)
    prob = nhsvm.primal(X, Y, SMALL_TREE, lam=0.1)
    first = prob.solve(verbose=False)
    assert first.n_rebuilds == first.n_iter - 1          # one rebuild per round that added cuts
    cuts = sum(len(s) for s in prob.working_set())
    assert cuts == first.n_cuts
    # every working-set member is a valid label set of Y_m and differs from the sample's own set
    sets = np.concatenate([SMALL_TREE.closure([s]) for s in sum(prob.working_set(), [])])
    assert inference.is_valid_label_set(sets, SMALL_TREE).all()
    # the cuts do not depend on lam: the sweep starts from them and agrees with a fresh solve
    swept = prob.set(lam=1.0).solve(verbose=False)
    fresh = nhsvm.primal(X, Y, SMALL_TREE, lam=1.0).solve(verbose=False)
    assert_same_optimum(swept, fresh, rtol=1e-6)
    assert swept.n_iter <= fresh.n_iter


def _advised(err) -> int:
    advised = int(str(err.value).split("pass max_size=")[1].split(" ")[0])
    assert advised == err.value.size
    return advised


@pytest.mark.parametrize("when", ["before the loop", "in the loop"])
def test_cutting_plane_size_advice_admits_the_whole_loop(when):
    """The master grows by its cuts, so a refusal (before the loop, or at a round that adds
    cuts) names a limit for every master of the loop: following it, the loop runs to its
    certified gap with every master under it."""
    X, Y = data(SMALL_TREE, n=12, seed=9, multilabel=True)
    empty = nhsvm.primal(X, Y, SMALL_TREE, lam=0.25)._master_size()[2]   # 0 cuts
    limit = empty - 1 if when == "before the loop" else empty
    with pytest.raises(hc.ProblemTooLargeError, match="max_iter=200 rounds") as err:
        nhsvm.primal(X, Y, SMALL_TREE, lam=0.25, max_size=limit).solve(verbose=False)
    advised = _advised(err)
    prob = nhsvm.primal(X, Y, SMALL_TREE, lam=0.25, max_size=advised)
    sol = prob.solve(verbose=False)
    assert_certified(sol, 1e-6)
    assert empty < prob._master_size()[2] <= advised
    # a shorter loop admits a smaller master: solve's max_iter sets the bound
    with pytest.raises(hc.ProblemTooLargeError, match="max_iter=3 rounds") as short:
        nhsvm.primal(X, Y, SMALL_TREE, lam=0.25, max_size=empty).solve(verbose=False, max_iter=3)
    assert empty < _advised(short) < advised


def test_cutting_plane_refusal_before_the_loop_counts_the_rounds_it_will_run():
    """A first master refused at construction names the limit for the rounds its solve will
    run: the constructor's max_iter, which the estimator passes from its solver_options."""
    from hiercvx.estimators import NormalizedHierarchicalSVC

    X, Y = data(SMALL_TREE, n=12, seed=9, multilabel=True)
    empty = nhsvm.primal(X, Y, SMALL_TREE, lam=0.25)._master_size()[2]
    model = nhsvm.primal(X, Y, SMALL_TREE, lam=0.25).nhsvm_data
    with pytest.raises(hc.ProblemTooLargeError, match="max_iter=500 rounds") as err:
        nhsvm.cutting_plane_from_model(model, 0.25, max_size=empty - 1, max_iter=500)
    long_loop = _advised(err)
    with pytest.raises(hc.ProblemTooLargeError, match="max_iter=200 rounds") as err:
        nhsvm.cutting_plane_from_model(model, 0.25, max_size=empty - 1)
    assert _advised(err) < long_loop
    est = NormalizedHierarchicalSVC(hierarchy=SMALL_TREE, solver="reference", C=2.0,
                                    solver_options={"max_size": empty - 1, "max_iter": 500})
    with pytest.raises(hc.ProblemTooLargeError, match="max_iter=500 rounds"):
        est.fit(X, Y)


def test_multilabel_hamming_loss_also_matches_enumeration():
    X, Y = data(SMALL_TREE, n=8, seed=8, multilabel=True)
    prob = nhsvm.primal(X, Y, SMALL_TREE, lam=0.5, loss="hamming")
    sol = prob.solve(verbose=False)
    nd = prob.nhsvm_data
    full = enumeration_value(X, nd.T, SMALL_TREE, nd.alpha, 0.5, nd.loss)
    assert abs(sol.objective - full) <= 1e-6 * full


def test_sparse_features_give_the_same_references():
    import scipy.sparse as sp

    rng = np.random.default_rng(22)
    X, y = data(SMALL_TREE, n=10, seed=22)
    X[rng.random(X.shape) < 0.5] = 0.0
    _, Y = data(SMALL_TREE, n=10, seed=22, multilabel=True)
    def solve(prob):
        return prob.solve(verbose=False) if isinstance(prob, nhsvm.CuttingPlaneProblem) else prob.solve()

    for labels in (y, Y):   # single-label (10) and the multi-label cutting planes
        dense = solve(nhsvm.primal(X, labels, SMALL_TREE, lam=0.3))
        sparse = solve(nhsvm.primal(sp.csr_matrix(X), labels, SMALL_TREE, lam=0.3))
        assert_same_optimum(dense, sparse, rtol=1e-7)
    a = nhsvm.shared_primal(X, y, SMALL_TREE, lam=0.3).solve()
    b = nhsvm.shared_primal(sp.csr_matrix(X), y, SMALL_TREE, lam=0.3).solve()
    assert_same_optimum(a, b, rtol=1e-7)


# ====================================================================== shared-norm SVM (14)
def fixed_alpha_value(X, leaf_pos, H, alpha, lam, L):
    """min_U lam sum ||U_n||^2 / alpha_n + multi-class hinge, alpha fixed (declared here)."""
    A = leaf_paths(H)
    n, q = len(leaf_pos), A.shape[0]
    keep = alpha > 1e-12
    U = cp.Variable((len(H), X.shape[1]))
    S = X @ U.T @ A.T
    own = cp.reshape(cp.sum(cp.multiply(S, np.eye(q)[leaf_pos]), axis=1), (n, 1), order="C")
    hinge = cp.max(S - own @ np.ones((1, q)) + L[leaf_pos], axis=1)
    reg = cp.sum(cp.multiply(1 / alpha[keep], cp.sum(cp.square(U[np.flatnonzero(keep)]), axis=1)))
    cons = [U[np.flatnonzero(~keep)] == 0] if (~keep).any() else []
    prob = cp.Problem(cp.Minimize(lam * reg + cp.sum(hinge)), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


def test_shared_primal_is_certified_and_its_alpha_is_the_alpha_step_optimum():
    X, y = data(TREE, n=14, seed=9)
    lam = 0.2
    prob = nhsvm.shared_primal(X, y, TREE, lam=lam)
    sol = prob.solve()
    assert_certified(sol, 1e-6)
    U = sol.weights
    # independent route: fix alpha at the closed-form optimum for the returned U and solve the
    # remaining problem in U from scratch; joint optimality means the values agree
    a_star = optimal_alpha(U, TREE)
    fixed = fixed_alpha_value(X, prob.data["leaf_pos"], TREE, a_star, lam, prob.data["loss"])
    assert abs(fixed - sol.objective) <= 1e-5 * sol.objective
    # and fixing alpha at the hierarchy's (6) weights can only do worse
    a6 = nhsvm.path_weights(TREE)
    assert fixed_alpha_value(X, prob.data["leaf_pos"], TREE, a6, lam, prob.data["loss"]) >= sol.objective - 1e-7
    second = nhsvm.shared_primal(X, y, TREE, lam=lam).solve(solver="ECOS", gap_tol=1e-5)
    assert_same_optimum(sol, second, rtol=1e-5)


def test_shared_primal_on_a_dag():
    X, y = data(DAG, n=10, seed=10)
    sol = nhsvm.shared_primal(X, y, DAG, lam=0.5, loss="half_symmetric").solve()
    assert_certified(sol, 1e-6)


# ====================================================================== alpha step (20)
def random_U(H, rng, d=3, zero_frac=0.3):
    U = rng.standard_normal((len(H), d))
    U[rng.random(len(H)) < zero_frac] = 0.0
    return U


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(H=trees(min_nodes=3, max_nodes=14), seed=st.integers(0, 10_000))
def test_closed_form_alpha_matches_the_reference_on_random_trees(H, seed):
    if len(H.leaves) < 2:
        return
    U = random_U(H, np.random.default_rng(seed))
    alpha, value = optimal_alpha(U, H, return_value=True)
    sums = leaf_paths(H) @ alpha
    np.testing.assert_allclose(sums, 1.0, atol=1e-12)
    b = np.sum(U ** 2, axis=1)
    closed = float(np.sum(b[b > 0] / alpha[b > 0])) if np.any(b > 0) else 0.0
    assert abs(closed - value) <= 1e-9 * max(1, value)
    sol = nhsvm.alpha_step(U, H).solve()
    assert_certified(sol, 1e-6)
    assert abs(sol.objective - value) <= 1e-6 * max(1, value)
    assert sol.lower_bound <= value + 1e-9 * max(1, value)
    pos = b > 1e-12
    np.testing.assert_allclose(sol.weights[pos], alpha[pos], rtol=2e-3, atol=1e-5)


def test_closed_form_alpha_on_a_chain_is_cauchy_schwarz():
    # a single path: min sum b_n / a_n s.t. sum a_n <= 1 gives (sum ||U_n||)^2, a_n ~ ||U_n||
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "a", "l1": "b", "l2": "r"})
    U = np.zeros((len(H), 2))
    U[[0, 1, 2, 3]] = [[3, 4], [1, 0], [0, 2], [6, 8]]
    alpha, value = optimal_alpha(U, H, return_value=True)
    norms = np.linalg.norm(U, axis=1)
    chain = [H.index(v) for v in ("r", "a", "b", "l1")]
    assert abs(value - norms[chain].sum() ** 2) <= 1e-9 * value
    np.testing.assert_allclose(alpha[chain], norms[chain] / norms[chain].sum(), rtol=1e-12)


def paper_algorithm_1(U, H):
    """Algorithm 1 exactly as printed (nodes sorted by depth, 1-based in the paper)."""
    M = len(H)
    alpha, N, E, L = np.zeros(M), np.zeros(M), np.zeros(M), np.ones(M)
    children = H.children_indices
    for n in range(M - 1, -1, -1):
        N[n] = np.sum(U[n] ** 2)
        E[n] = 0.0
        if len(children[n]):
            S = N[children[n]].sum()
            if np.sqrt(S) + np.sqrt(N[n]) != 0:
                N[n] = (np.sqrt(N[n]) + np.sqrt(S)) ** 2
                E[n] = np.sqrt(N[n]) / (np.sqrt(S) + np.sqrt(N[n]))
    L[0] = 1 - E[0]
    parent = H.parent_index
    for n in range(1, M):
        p = parent[n]
        alpha[n] = np.sqrt(L[p] * E[n])
        L[n] = L[p] * (1 - E[n])
    return alpha


def test_paper_algorithm_1_as_printed_is_not_optimal():
    H = SMALL_TREE
    U = random_U(H, np.random.default_rng(11), zero_frac=0.0)
    printed = paper_algorithm_1(U, H)
    reference = nhsvm.alpha_step(U, H).solve()
    b = np.sum(U ** 2, axis=1)
    # as printed, leaves keep E = 0, so every leaf gets alpha = 0: objective infinite
    assert np.all(printed[H.leaf_mask] == 0)
    assert ratio_sum(b, printed) == np.inf
    # the root is never assigned either
    assert printed[0] == 0 and reference.weights[0] > 0.01
    # the corrected closed form agrees with the reference
    fixed = optimal_alpha(U, H)
    assert abs(ratio_sum(b, fixed) - reference.objective) <= 1e-6 * reference.objective


def test_alpha_step_on_a_dag_and_zero_weights():
    rng = np.random.default_rng(12)
    sol = nhsvm.alpha_step(random_U(DAG, rng), DAG).solve()
    assert_certified(sol, 1e-6)
    assert np.all(leaf_paths(DAG) @ sol.weights <= 1 + 1e-12)
    zero = nhsvm.alpha_step(np.zeros((len(DAG), 2)), DAG).solve()
    assert zero.objective == 0.0
    with pytest.raises(hc.HierarchyError, match="tree"):
        optimal_alpha(np.ones((len(DAG), 2)), DAG)


# ====================================================================== shared norms, Theorem 2
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_theorem_2_chain_of_norms(seed):
    rng = np.random.default_rng(seed)
    H = [TREE, SMALL_TREE, DAG][seed]
    r, c = len(H.leaves), 3
    U = rng.standard_normal((r, c)) * rng.random((r, 1))
    trace = nhsvm.trace_norm(U)
    s = nhsvm.shared_norm(U)
    s_G = nhsvm.shared_norm(U, H)
    mx = nhsvm.max_norm(U)
    fro = np.linalg.norm(U)
    tol = 1e-5
    assert trace / np.sqrt(r * c) <= s / np.sqrt(c) + tol
    assert s / np.sqrt(c) <= mx + tol
    assert s <= s_G + tol
    assert s_G <= fro + tol
    # Lemma 3 (squared norm bounds the squared rows): ||U||_s >= max_y ||U_y||
    assert s >= np.linalg.norm(U, axis=1).max() - tol
    # the two-sided bounds are not all equalities on generic data
    assert s_G < fro - 1e-3 or s < s_G - 1e-3


def test_table_1_full_sharing_and_factor_scaling():
    rng = np.random.default_rng(13)
    u = rng.standard_normal(3)
    q = len(TREE.leaves)
    same = np.tile(u, (q, 1))
    # full sharing: a node (the root) is shared by every class
    assert abs(nhsvm.shared_norm(same, TREE) - np.linalg.norm(u)) <= 1e-5
    assert abs(nhsvm.shared_norm(same) - np.linalg.norm(u)) <= 1e-5
    assert abs(nhsvm.trace_norm(same) - np.sqrt(q) * np.linalg.norm(u)) <= 1e-9
    # factor scaling: ||U||_s = max |a_l| ||u||
    a = rng.uniform(-2, 2, q)
    scaled = a[:, None] * u[None, :]
    assert abs(nhsvm.shared_norm(scaled) - np.abs(a).max() * np.linalg.norm(u)) <= 1e-5


def test_structured_shared_norm_by_alternating_minimization():
    # independent route for (16) on a tree: alternate alpha <- closed form (20) and the best
    # node split W = D A^T (A D A^T)^-1 U; the value decreases to ||U||_{s,G}^2
    H = TREE
    rng = np.random.default_rng(14)
    U = rng.standard_normal((len(H.leaves), 2))
    A = leaf_paths(H)
    W = np.zeros((len(H), 2))
    W[H.leaf_indices] = U
    for _ in range(3000):
        alpha = optimal_alpha(W, H)
        D = np.diag(alpha)
        W = D @ A.T @ np.linalg.solve(A @ D @ A.T, U)
    value = float(np.sum(np.sum(W ** 2, axis=1)[alpha > 0] / alpha[alpha > 0]))
    ref, sol = nhsvm.shared_norm(U, H, return_solution=True)
    assert_certified(sol, 1e-6)
    assert value >= sol.lower_bound - 1e-9
    assert abs(value - ref ** 2) <= 1e-4 * value


# ====================================================================== bad input
def test_bad_input_is_refused_with_clear_errors():
    X, y = data(TREE, n=6, seed=15)
    with pytest.raises(hc.InputError, match="rho"):
        nhsvm.path_weights(TREE, rho=1.0)
    with pytest.raises(hc.InputError, match="rho"):
        nhsvm.path_weights(TREE, rho=float("nan"))
    with pytest.raises(hc.InputError, match="T must be"):
        nhsvm.path_weights(DAG, "dag", T=0.9)
    with pytest.raises(hc.InputError, match="unknown path-weight method"):
        nhsvm.path_weights(TREE, "uniform")
    with pytest.raises(hc.InputError, match="one weight per node"):
        nhsvm.primal(X, y, TREE, alpha=np.ones(3))
    bad = nhsvm.path_weights(TREE) * 1.1
    with pytest.raises(hc.InputError, match="infeasible.*sum to"):
        nhsvm.primal(X, y, TREE, alpha=bad)
    with pytest.raises(hc.InputError, match="non-negative"):
        nhsvm.check_path_weights(-np.ones(len(TREE)), TREE)
    with pytest.raises(hc.InputError, match="lam"):
        nhsvm.primal(X, y, TREE, lam=0.0)
    with pytest.raises(hc.InputError, match="lam"):
        nhsvm.shared_primal(X, y, TREE, lam=-1)
    with pytest.raises(hc.LabelError, match="not nodes"):
        nhsvm.primal(X, ["nope"] + list(y[1:]), TREE)
    with pytest.raises(hc.LabelError, match="internal"):
        nhsvm.primal(X, ["A"] + list(y[1:]), TREE)
    with pytest.raises(hc.LabelError, match="exactly one"):
        nhsvm.primal(X, [{"A2", "B1"}] + list(y[1:]), TREE, multilabel=False)
    with pytest.raises(hc.InputError, match="single-label only"):
        nhsvm.primal(X, [{"A2", "B1"}] * 6, TREE, variant="13")
    with pytest.raises(hc.InputError, match="unknown NHSVM variant"):
        nhsvm.primal(X, y, TREE, variant="12")
    with pytest.raises(hc.InputError, match="multi-label problems only"):
        nhsvm.primal(X, y, TREE, loss="hamming")
    with pytest.raises(hc.InputError, match="rows"):
        nhsvm.primal(X[:5], y, TREE)
    with pytest.raises(hc.InputError, match="non-finite"):
        nhsvm.primal(np.full_like(X, np.nan), y, TREE)
    with pytest.raises(hc.InputError, match="one row per node"):
        nhsvm.alpha_step(np.ones((3, 2)), TREE)
    with pytest.raises(hc.InputError, match="one row per node"):
        optimal_alpha(np.ones((3, 2)), TREE)
    with pytest.raises(hc.InputError, match="one row per leaf"):
        nhsvm.shared_norm(np.ones((2, 2)), TREE)
    with pytest.raises(hc.InputError, match="distance"):
        flat = np.zeros(len(TREE))
        flat[0] = 1.0  # all weight on the root: every leaf has distance 0 to every other
        nhsvm.primal(X, y, TREE, alpha=flat)


@settings(max_examples=20, deadline=None)
@given(H=trees(min_nodes=3, max_nodes=14), rho=st.sampled_from([1.5, 2.0, 3.0]))
def test_closed_form_path_weights_are_the_certified_optimum_of_6(H, rho):
    # the model's numpy route for (6) on trees against the certified CVXPY program
    if len(H.leaf_indices) < 2:
        return
    alpha = nhsvm_model.tree_path_weights(H, rho)
    _, sol = nhsvm.path_weights(H, "power", rho=rho, return_solution=True)
    A = nhsvm_model.leaf_paths(H)
    assert np.all(alpha >= 0)
    np.testing.assert_allclose(A @ alpha, 1.0, atol=1e-12)
    value = float(np.sum(alpha ** rho))
    assert sol.lower_bound - 1e-9 <= value <= sol.objective * (1 + 1e-9) + 1e-12


def test_model_prepare_solves_only_the_closed_form_and_formulations_prepare_the_programs():
    X, y = data(DAG)
    with pytest.raises(hc.InputError, match="formulations.nhsvm"):
        nhsvm_model.prepare(X, y, DAG)
    with pytest.raises(hc.InputError, match="formulations.nhsvm"):
        nhsvm_model.prepare(*data(TREE), TREE, alpha="maxmin")
    model = nhsvm.prepare(X, y, DAG)                        # (6) under (8), T = 1.5
    np.testing.assert_allclose(model.alpha, nhsvm.path_weights(DAG, "dag"), atol=1e-12)
    tree = nhsvm_model.prepare(*data(TREE), TREE)
    np.testing.assert_allclose(tree.alpha, nhsvm_model.tree_path_weights(TREE), atol=0)
