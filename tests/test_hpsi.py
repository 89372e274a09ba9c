"""Sibling-margin HSVM and HPSI (Wang, Shen & Pan): references, DC loop and helpers.

Independent routes: the pairs Q(y) against the paper's set definition; d^H against a
recursive walk; Lemma 1 on random scores; the vectorized primal against a literal
loop-by-loop CVXPY transcription of (2); primal vs dual (9)-(11) (HSVM and a DC step,
linear and Gaussian); the two bias-recovery routes; the flat special cases against the
Liu-Shen multi-class SVM and against scikit-learn's binary SVC; the DC majorant; the DC
cost path; two QP solvers.
"""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hiercvx as hc
from hiercvx import testing
from hiercvx.datasets import make_wang_example3
from hiercvx.formulations import hpsi
from hiercvx.kernels import make_kernel
from hiercvx.solvers import dc as dc_loop
from strategies import trees

FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------- fixtures
def random_tree(rng, n_nodes):
    parents = {"n0": None}
    for i in range(1, n_nodes):
        parents[f"n{i}"] = f"n{int(rng.integers(0, i))}"
    return hc.Hierarchy.from_parents(parents)


def random_problem(seed, n=16, d=2, n_nodes=7, internal=True):
    """A random tree (chains and one-child nodes included), labels on any non-root node
    (internal ones when ``internal``), Gaussian features."""
    rng = np.random.default_rng(seed)
    while True:
        H = random_tree(rng, n_nodes)
        if len(H.leaves) >= 2:
            break
    pool = [v for v in H.nodes if v != H.root and (internal or H.is_leaf(v))]
    y = [pool[k] for k in rng.integers(0, len(pool), n)]
    X = rng.standard_normal((n, d))
    return X, y, H


@pytest.fixture(scope="module")
def wang3():
    ds = make_wang_example3(40, random_state=3)
    return ds.X, ds.y, ds.hierarchy


# ---------------------------------------------------------------------- helpers: Q(y), d^H, Lemma 1
@FAST
@given(trees(min_nodes=3, max_nodes=10), st.data())
def test_pairs_are_the_papers_Q(H, data):
    assume(len(H.leaves) >= 2)
    nodes = [v for v in H.nodes if v != H.root]
    y = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=6))
    pairs = hpsi.sibling_pairs(y, H, partial_paths=False)
    names = H.nodes
    for i, label in enumerate(y):
        # (8): Q(y) = {(j, t): t in sib(j), j in {y} + anc(y)}
        expected = {(j, t) for j in H.ancestors(label, inclusive=True) for t in H.siblings(j)}
        sl = slice(pairs.pair_ptr[i], pairs.pair_ptr[i + 1])
        got = {(names[j], names[t]) for j, t in zip(pairs.pair_pos[sl], pairs.pair_neg[sl])}
        assert got == expected
        assert len(got) == pairs.pair_ptr[i + 1] - pairs.pair_ptr[i]


def _walk(H, s):
    v = H.root
    while H.children(v):
        kids = sorted(H.children(v), key=H.index)
        v = max(kids, key=lambda c: (s[H.index(c)], -H.index(c)))  # first child wins ties
    return v


@FAST
@given(trees(min_nodes=2, max_nodes=12), st.integers(0, 2**31 - 1))
def test_top_down_rule_matches_a_recursive_walk(H, seed):
    S = np.random.default_rng(seed).standard_normal((7, len(H)))
    S[0] = 0.0  # ties everywhere: the first child in node order
    got = hpsi.predict_top_down(S, H)
    assert list(got) == [_walk(H, s) for s in S]
    assert all(H.is_leaf(v) for v in got)


@FAST
@given(trees(min_nodes=3, max_nodes=12), st.integers(0, 2**31 - 1))
def test_lemma1_error_iff_negative_margin(H, seed):
    """Lemma 1 on random (tie-free) scores: d^H(f(x)) != y  iff  u_min(f(x), y) < 0."""
    assume(len(H.leaves) >= 2)
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((40, len(H)))
    y = rng.choice(np.array(H.leaves, dtype=object), 40)
    err = hpsi.predict_top_down(S, H) != y
    u = hpsi.u_min(S, list(y), H)
    np.testing.assert_array_equal(err, u < 0)


def test_lemma1_with_internal_labels_on_the_self_leaf_hierarchy():
    X, y, H = random_problem(5, n=30, internal=True)
    pairs = hpsi.sibling_pairs(y, H)
    Hw = pairs.hierarchy
    S = np.random.default_rng(1).standard_normal((len(y), len(Hw)))
    pred = hpsi.predict_top_down(S, Hw, return_index=True)
    u = pairs.u_min(S)
    np.testing.assert_array_equal(pred != pairs.labels, u < 0)


def test_lemma1_needs_tie_free_scores():
    """At f = 0 every u_min is 0 (so Lemma 1 predicts no error), but d^H still picks one
    child: errors happen with u_min = 0.  What holds: u_min > 0 => correct, u_min < 0 => error."""
    H = hc.Hierarchy.from_parents({0: None, 5: 0, 6: 0, 1: 5, 2: 5, 3: 6, 4: 6})
    y = [1, 2, 3, 4]
    S = np.zeros((4, len(H)))
    u = hpsi.u_min(S, y, H)
    pred = hpsi.predict_top_down(S, H)
    assert np.all(u == 0)
    assert list(pred) == [1, 1, 1, 1]
    assert (pred != np.array(y)).sum() == 3


def test_u_min_returns_the_minimizing_pair():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a"})
    S = np.zeros((1, len(H)))
    S[0, H.index("a")], S[0, H.index("b")] = 2.0, 1.5       # top margin 0.5
    S[0, H.index("a1")], S[0, H.index("a2")] = 1.0, -1.0    # bottom margin 2.0
    u, which = hpsi.u_min(S, ["a1"], H, return_pairs=True)
    assert u[0] == pytest.approx(0.5) and which == [("a", "b")]


def test_psi_is_the_papers_piecewise_loss():
    u = np.linspace(-3, 3, 61)
    paper = np.where((u >= 1) | (u < 0), 1.0 - (u > 0), 1.0 - u)  # 1 - sign(u), sign(u) = I(u > 0)
    np.testing.assert_allclose(hpsi.psi(u), paper)
    np.testing.assert_allclose(hpsi.psi(u), hpsi.hinge(u) - np.maximum(0, -u))  # psi_1 - psi_2


# ---------------------------------------------------------------------- the primal against a literal transcription
def loop_hsvm(X, y, H, C):
    """(2) written literally, one constraint per pair and per (sibling group, sample)."""
    n, d = X.shape
    nodes = [v for v in H.nodes if v != H.root]
    W = {v: cp.Variable(d) for v in nodes}
    b = {v: cp.Variable() for v in nodes}
    xi = cp.Variable(n)

    def f(v, i):
        return X[i] @ W[v] + b[v]

    cons = [xi >= 0]
    for i in range(n):
        for j in H.ancestors(y[i], inclusive=True):
            for t in H.siblings(j):
                cons.append(f(j, i) - f(t, i) >= 1 - xi[i])
    for s in H.nodes:  # sum over sib(j) + {j} for every j with sib(j) nonempty
        kids = H.children(s)
        if len(kids) >= 2:
            cons += [sum(f(t, i) for t in kids) == 0 for i in range(n)]
    obj = 0.5 * sum(cp.sum_squares(W[v]) for v in nodes) + C * cp.sum(xi)
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    return prob.value


@pytest.mark.parametrize("seed", [0, 1])
def test_primal_matches_the_literal_transcription(seed):
    X, y, H = random_problem(seed, n=14, internal=False)
    sol = hpsi.primal(X, y, H, C=0.7).solve()
    testing.assert_certified(sol)
    assert sol.objective == pytest.approx(loop_hsvm(X, y, H, 0.7), rel=1e-6)
    assert np.all(sol.weights[0] == 0) and sol.values["biases"][0] == 0   # the root row


def test_internal_labels_get_a_self_leaf_as_in_the_paper():
    """Labels on an internal node = a child "defined as itself" (section 2): same optimum
    as the literal transcription on a hand-built tree with that child."""
    H = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A"})
    Hself = hc.Hierarchy.from_parents({"r": None, "A": "r", "B": "r", "A1": "A", "A2": "A",
                                       "A-itself": "A"})
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 2))
    y = list(rng.choice(["A", "B", "A1", "A2"], 15))
    prob = hpsi.primal(X, y, H, C=1.3)
    sol = prob.solve()
    Hw = prob.data["hierarchy"]
    assert len(Hw) == len(H) + 1 and sol.weights.shape == (len(Hw), 2)
    y_self = ["A-itself" if v == "A" else v for v in y]
    assert sol.objective == pytest.approx(loop_hsvm(X, y_self, Hself, 1.3), rel=1e-6)
    pred = hpsi.predict(prob, sol, X)
    assert set(pred) <= {"A", "B", "A1", "A2"}               # mapped back to the caller's names
    S = hpsi.decision_function(prob, sol, X)
    np.testing.assert_array_equal(hpsi.predict_top_down(S, Hw, return_index=True) ==
                                  prob.data["pairs"].labels, pred == np.array(y, dtype=object))


def test_sum_to_zero_constraints_do_not_move_the_optimum():
    """Pairs compare siblings, so subtracting a group's mean function changes no margin and
    does not raise the penalty: the constraints of Theorem 1 only pin the biases' means."""
    X, y, H = random_problem(3, n=18)
    prob = hpsi.primal(X, y, H, C=2.0)
    sol = prob.solve()
    free = cp.Problem(prob.problem.objective, [prob.constraints["pairs"], prob.constraints["xi_nonneg"]])
    free.solve(solver="CLARABEL")
    assert free.value == pytest.approx(sol.objective, rel=1e-6)
    # the returned functions sum to zero over every sibling group at *new* points too
    S = hpsi.decision_function(prob, sol, np.random.default_rng(9).standard_normal((5, 2)))
    for g in prob.data["pairs"].groups:
        np.testing.assert_allclose(S[:, g].sum(axis=1), 0, atol=1e-12)


# ---------------------------------------------------------------------- primal vs dual
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("dc_step", [False, True])
def test_primal_equals_dual(kernel, dc_step):
    X, y, H = random_problem(11, n=20, d=2)
    C = 1.5
    prob = hpsi.primal(X, y, H, C=C, kernel=kernel)
    sol = prob.solve()
    lam = None
    if dc_step:  # the dual of a DC step (8), at the linearization of the HSVM solution
        model = prob.data["model"]
        lam = hpsi.linearization(prob, model.train_scores(sol.weights, sol.values["biases"]), C)
        assert lam.sum() > 0
        sol = prob.set(pair_weights=lam).solve()
    dsol = hpsi.dual(X, y, H, C=C, kernel=kernel, pair_weights=lam).solve()
    for s in (sol, dsol):
        testing.assert_certified(s, gap_tol=1e-6)
    testing.assert_same_optimum(sol, dsol, rtol=1e-6)
    # w is unique (strictly convex in w); recovered from (10)
    np.testing.assert_allclose(dsol.weights, sol.weights, atol=1e-4)


def test_literal_dual_with_delta(wang3):
    """(9) with delta kept (free): summing (10) over a sibling group forces
    sum_i delta_{i,s} = 0, so the paper's delta >= 0 would force delta = 0."""
    X, y, H = wang3
    d_lit = hpsi.dual(X, y, H, C=1.0, keep_delta=True).solve()
    d_red = hpsi.dual(X, y, H, C=1.0).solve()
    testing.assert_same_optimum(d_lit, d_red)
    delta = d_lit.values["delta"]
    np.testing.assert_allclose(delta.sum(axis=0), 0, atol=1e-7)


def test_bias_routes_agree(wang3):
    X, y, H = wang3
    kkt = hpsi.dual(X, y, H, C=1.0, bias="kkt").solve()
    lp = hpsi.dual(X, y, H, C=1.0, bias="lp").solve()
    assert kkt.values["bias_route"] == "kkt" and lp.values["bias_route"] == "lp"
    testing.assert_same_optimum(kkt, lp)
    primal = hpsi.primal(X, y, H, C=1.0).solve()
    np.testing.assert_allclose(kkt.values["biases"], primal.values["biases"], atol=1e-5)


def test_kkt_route_refuses_when_biases_are_not_pinned():
    # C tiny: every example at its budget, no free support pair pins a bias difference
    X, y, H = random_problem(2, n=10)
    with pytest.raises(hc.InputError, match="do not pin the biases"):
        hpsi.dual(X, y, H, C=1e-3, bias="kkt").solve()
    # "auto" certifies either way: the LP route, or the KKT route when a retry with tight
    # solver tolerances (reference.TIGHT_SETTINGS) leaves a free pair that pins the biases
    sol = hpsi.dual(X, y, H, C=1e-3).solve()
    lp = hpsi.dual(X, y, H, C=1e-3, bias="lp").solve()
    assert sol.values["bias_route"] in ("lp", "kkt")
    assert lp.values["bias_route"] == "lp"
    assert sol.objective == pytest.approx(lp.objective, rel=1e-6)


def test_two_solvers_and_a_C_sweep(wang3):
    X, y, H = wang3
    sols = testing.solve_with_each(lambda: hpsi.primal(X, y, H, C=0.5), ["CLARABEL", "ECOS"])
    testing.assert_same_optimum(*sols.values())
    prob = hpsi.primal(X, y, H, C=0.5)
    prob.solve()
    param_prog = prob.problem._cache.param_prog
    swept = prob.set(C=4.0).solve()
    assert prob.problem._cache.param_prog is param_prog           # no recompilation
    testing.assert_same_optimum(swept, hpsi.primal(X, y, H, C=4.0).solve())


def test_kernel_forms_and_new_points(wang3):
    X, y, H = wang3
    sigma = 0.8
    rbf = hpsi.primal(X, y, H, C=1.0, kernel="rbf", sigma=sigma)
    srbf = rbf.solve()
    k = make_kernel("rbf", sigma=sigma)
    scall = hpsi.primal(X, y, H, C=1.0, kernel=lambda A, B: k(A, B)).solve()
    testing.assert_same_optimum(srbf, scall)
    # scores of the training points through the kernel rows = the model's scores
    model = rbf.data["model"]
    np.testing.assert_allclose(hpsi.decision_function(rbf, srbf, X),
                               model.train_scores(srbf.weights, srbf.values["biases"]), atol=1e-6)
    assert srbf.weights.shape == (len(H), len(y))                   # representer coefficients


# ---------------------------------------------------------------------- flat special cases
def test_flat_hierarchy_is_the_liu_shen_multiclass_svm():
    """One level: Q(y) = {(y, j): j != y}, u_min = min_j f_y - f_j, one sum-to-zero over all
    classes -- the multicategory SVM of Liu & Shen (2006), written here independently."""
    rng = np.random.default_rng(4)
    k, n, d, C = 4, 24, 3, 0.8
    H = hc.Hierarchy.from_parents({"root": None, **{f"c{j}": "root" for j in range(k)}})
    yi = rng.integers(0, k, n)
    X = rng.standard_normal((n, d)) + 0.8 * np.eye(k, d)[yi]
    y = [f"c{j}" for j in yi]
    W, b, xi = cp.Variable((k, d)), cp.Variable(k), cp.Variable(n)
    F = X @ W.T + np.ones((n, 1)) @ cp.reshape(b, (1, k), order="C")
    onehot = np.eye(k)[yi]
    own = cp.sum(cp.multiply(onehot, F), axis=1)
    cons = [xi >= 0, cp.sum(F, axis=1) == 0]
    cons += [own - F[:, j] >= 1 - xi - 10 * onehot[:, j] for j in range(k)]  # j = y_i: vacuous
    liu_shen = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(W) + C * cp.sum(xi)), cons)
    liu_shen.solve(solver="CLARABEL")
    prob = hpsi.primal(X, y, H, C=C)
    sol = prob.solve()
    assert sol.objective == pytest.approx(liu_shen.value, rel=1e-6)
    # u_min is the multi-class margin
    S = hpsi.decision_function(prob, sol, X)[:, 1:]
    margin = np.array([S[i, yi[i]] - np.max(np.delete(S[i], yi[i])) for i in range(n)])
    np.testing.assert_allclose(hpsi.u_min(hpsi.decision_function(prob, sol, X), y, H), margin)
    # flat psi-learning runs and never ends above its SVM start
    res = hpsi.dc(X, y, H, C=C, max_iter=5)
    assert res.objective <= res.dc_objectives[0] + 1e-9


def test_two_classes_is_half_the_binary_svm_with_twice_C():
    """k = 2: f_2 = -f_1, margin 2 f_1; with g = 2 f_1 the cost is 1/2 (1/2||v||^2 + 2C sum
    hinge(s g)).  Checked against scikit-learn's SVC (libsvm)."""
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    n, C = 30, 0.6
    X = rng.standard_normal((n, 2))
    s = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.standard_normal(n) > 0, 1, -1)
    H = hc.Hierarchy.from_parents({"root": None, "neg": "root", "pos": "root"})
    y = np.where(s > 0, "pos", "neg")
    sol = hpsi.primal(X, y, H, C=C).solve()
    svc = SVC(kernel="linear", C=2 * C, tol=1e-10).fit(X, s)
    g = svc.decision_function(X)
    svm_obj = 0.5 * float(np.sum(svc.coef_ ** 2)) + 2 * C * np.maximum(0, 1 - s * g).sum()
    assert sol.objective == pytest.approx(0.5 * svm_obj, rel=1e-5)
    assert sol.objective <= 0.5 * svm_obj + 1e-9                      # ours is certified optimal
    pos = H.index("pos")
    np.testing.assert_allclose(2 * sol.weights[pos], svc.coef_[0], atol=1e-3)


# ---------------------------------------------------------------------- the DC algorithm (3)
def test_linearization_gives_a_convex_majorant(wang3):
    """s(f) <= s_1(f) + sum_p lam_p m_p(f) - s_2(f0) - sum_p lam_p m_p(f0), equality at f0."""
    X, y, H = wang3
    C = 2.0
    prob = hpsi.primal(X, y, H, C=C)
    sol = prob.solve()
    model = prob.data["model"]
    f0 = (sol.weights, sol.values["biases"])
    lam = hpsi.linearization(model, model.train_scores(*f0), C)

    def s1(W, b):
        return model.primal_value(W, b, C)

    def s2(W, b):
        u = model.pairs.u_min(model.train_scores(W, b))
        return C * np.maximum(0, -u).sum()

    def majorant(W, b):
        m = model.pairs.margins
        return (s1(W, b) + lam @ m(model.train_scores(W, b)) - s2(*f0) - lam @ m(model.train_scores(*f0)))

    assert majorant(*f0) == pytest.approx(model.psi_value(*f0, C), rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(50):
        W = f0[0] + rng.normal(scale=0.5, size=f0[0].shape)
        b = f0[1] + rng.normal(scale=0.5, size=f0[1].shape)
        W[0], b[0] = 0, 0
        assert model.psi_value(W, b, C) <= majorant(W, b) + 1e-9


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_dc_cost_never_increases_and_reuses_one_compiled_problem(wang3, kernel):
    X, y, H = wang3
    C = 2.0
    res = hpsi.dc(X, y, H, C=C, kernel=kernel, tol=1e-8, max_iter=20)
    path = res.dc_objectives
    scale = max(1.0, abs(path[0]))
    assert np.all(np.diff(path) <= 1e-7 * scale), path
    assert res.objective <= path[0] + 1e-12 and res.objective == pytest.approx(path.min())
    assert res.converged and res.n_iter == len(path) - 1
    assert np.all(res.step_gaps <= 1e-6)
    # first entry: the psi cost (2) of the HSVM solution, recomputed through the public helpers
    prob = res.problem
    S0 = hpsi.decision_function(prob, res.hsvm, X)
    J0 = prob.data["model"].penalty(res.hsvm.weights)
    assert path[0] == pytest.approx(hpsi.cost(S0, y, H, C, penalty=J0), rel=1e-12)
    assert res.hsvm.objective == pytest.approx(hpsi.cost(S0, y, H, C, penalty=J0, loss="hinge"), rel=1e-9)
    # one compiled problem for the HSVM start and every step (parameters only)
    assert prob.problem.is_dpp() and res.compilations == 1
    # the best iterate's cost, recomputed from its functions
    Sb = hpsi.decision_function(prob, res, X)
    assert res.objective == pytest.approx(
        hpsi.cost(Sb, y, H, C, penalty=prob.data["model"].penalty(res.weights)), rel=1e-9)
    assert set(hpsi.predict(prob, res, X)) <= set(H.leaves)


def test_dc_on_random_trees_with_partial_paths():
    for seed in (21, 22):
        X, y, H = random_problem(seed, n=18, internal=True)
        res = hpsi.dc(X, y, H, C=3.0, max_iter=8)
        path = res.dc_objectives
        assert np.all(np.diff(path) <= 1e-7 * max(1.0, path[0]))
        assert res.compilations == 1
        assert set(hpsi.predict(res.problem, res, X)) <= set(H.nodes) - {H.root}


def test_dc_result_certifies_a_fixed_point():
    """What a DC result's lower bound means: the last step's majorant s_1 + lam.m (the primal
    (8) with the DC term) equals the psi cost at the iterate it was linearized at, lies above
    it everywhere, and its certified minimum is the bound; at convergence the gap is small."""
    X, y, H = random_problem(5, n=20)
    C = 4.0
    res = hpsi.dc(X, y, H, C=C, tol=1e-9, max_iter=30)
    assert res.converged and res.status == "fixed_point" and len(res.steps) == res.n_iter + 1
    assert res.lower_bound == res.steps[-1].lower_bound
    scale = max(1.0, abs(res.objective))
    assert -1e-6 * scale <= res.objective - res.lower_bound <= 1e-5 * scale
    model = res.problem.data["model"]
    prev, last = res.steps[-2], res.steps[-1]
    f_prev = (prev.weights, prev.values["biases"])
    lam = hpsi.linearization(model, model.train_scores(*f_prev), C, dc_loop.Options().tie_rtol)
    majorant_at_prev = model.objective(f_prev[0], biases=f_prev[1], C=C, pair_weights=lam)
    assert majorant_at_prev == pytest.approx(model.psi_value(*f_prev, C), abs=1e-5 * C)
    f_last = (last.weights, last.values["biases"])
    assert model.objective(f_last[0], biases=f_last[1], C=C, pair_weights=lam) >= \
        model.psi_value(*f_last, C) - 1e-9 * scale
    assert last.lower_bound <= majorant_at_prev + 1e-9 * scale


def test_model_interface():
    """The SiblingModel answers the Model questions: objective, lower bound, scores, oracle."""
    X, y, H = random_problem(6, n=20)
    prob = hpsi.primal(X, y, H, C=2.0)
    sol = prob.solve()
    model = prob.data["model"]
    b = sol.values["biases"]
    assert model.objective(sol.weights, biases=b, C=2.0) == pytest.approx(sol.objective, rel=1e-12)
    bound = model.lower_bound(sol.duals["pairs"], C=2.0)
    assert bound <= sol.objective + 1e-9 and bound == pytest.approx(sol.lower_bound, rel=1e-12)
    S = model.scores(sol.weights, X, b)
    np.testing.assert_allclose(S, model.train_scores(sol.weights, b), atol=1e-12)
    u, arg = model.oracle(S)
    np.testing.assert_allclose(u, model.pairs.u_min(S))
    np.testing.assert_array_equal(model.pairs.margins(S)[arg], u)
    assert model.method == "sibling_svm" and "beta" in model.variables
    assert "(9)-(11)" in model.describe()


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("build", [hpsi.primal, hpsi.dual])
def test_bad_input_is_refused_clearly(build):
    H = hc.Hierarchy.from_parents({0: None, 5: 0, 6: 0, 1: 5, 2: 5, 3: 6, 4: 6})
    X = np.random.default_rng(0).standard_normal((4, 2))
    y = [1, 2, 3, 4]
    with pytest.raises(hc.LabelError, match="not nodes of the hierarchy"):
        build(X, [1, 2, 3, 99], H)
    with pytest.raises(hc.LabelError, match="root"):
        build(X, [1, 2, 3, 0], H)
    with pytest.raises(hc.LabelError, match="exactly one label"):
        build(X, [1, 2, 3, frozenset({3, 4})], H)
    with pytest.raises(hc.InputError, match="C must be positive"):
        build(X, y, H, C=0)
    with pytest.raises(hc.InputError, match="C must be positive"):
        build(X, y, H, C=-1.0)
    Xbad = X.copy()
    Xbad[1, 1] = np.nan
    with pytest.raises(hc.InputError, match="non-finite"):
        build(Xbad, y, H)
    with pytest.raises(hc.InputError, match="rows"):
        build(X[:3], y, H)
    with pytest.raises(hc.HierarchyError, match="single leaf"):
        build(X, ["a", "a", "b", "b"], hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "a"}))
    dag = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c"), ("a", "d")])
    with pytest.raises(hc.HierarchyError, match="trees"):
        build(X, ["c", "d", "c", "d"], dag)
    with pytest.raises(hc.InputError, match="pair_weights"):
        build(X, y, H, pair_weights=np.ones(3))
    for bad in (hc.InputError, ValueError):  # input errors are ValueErrors too
        with pytest.raises(bad):
            build(X, y, H, C=float("inf"))


def test_bad_input_for_dc_and_helpers():
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r"})
    X = np.zeros((2, 1))
    with pytest.raises(hc.InputError, match="tol"):
        hpsi.dc(X, ["a", "b"], H, tol=-1)
    with pytest.raises(hc.InputError, match="one column per node"):
        hpsi.predict_top_down(np.zeros((2, 2)), H)
    with pytest.raises(hc.InputError, match="non-finite"):
        hpsi.u_min(np.full((1, 3), np.nan), ["a"], H)
    with pytest.raises(hc.InputError, match="X="):
        hpsi.predict_top_down(lambda Z: Z, H)
    with pytest.raises(hc.InputError, match="'psi' or 'hinge'"):
        hpsi.cost(np.zeros((1, 3)), ["a"], H, C=1.0, loss="log")


def test_sparse_features_precomputed_kernel_and_size_limit(wang3):
    import scipy.sparse as sp

    X, y, H = wang3
    dense = hpsi.primal(X, y, H, C=1.0).solve()
    sparse = hpsi.primal(sp.csr_matrix(X), y, H, C=1.0).solve()
    testing.assert_same_optimum(dense, sparse)
    k = make_kernel("rbf", sigma=0.7)
    rbf_prob = hpsi.primal(X, y, H, C=1.0, kernel="rbf", sigma=0.7)
    rbf = rbf_prob.solve()
    pre_prob = hpsi.dual(k(X, X), y, H, C=1.0, kernel="precomputed")
    pre = pre_prob.solve()
    testing.assert_same_optimum(rbf, pre)
    np.testing.assert_allclose(hpsi.decision_function(pre_prob, pre, k(X[:5], X)),
                               hpsi.decision_function(rbf_prob, rbf, X[:5]), atol=1e-4)
    with pytest.raises(hc.ProblemTooLargeError, match="max_size"):
        hpsi.primal(X, y, H, max_size=100)


def test_dc_reference_inspects_its_convex_step():
    """The registry's hpsi reference is the DC loop: what a user of a ReferenceProblem inspects
    (problem, formulation, variables, constraints, parameters, data, size, describe) is that of
    the convex step (8) it re-solves, the same program as hpsi.primal."""
    from hiercvx import methods
    method = methods.get("hpsi")
    case = method.cases(True)[0]
    ref = method.build("primal", case)
    step = methods.get("sibling_svm").build("primal", case)  # hpsi.primal on the same case
    assert isinstance(ref.step, hc.ReferenceProblem)
    assert isinstance(ref.problem, cp.Problem) and ref.problem is ref.step.problem
    assert ref.formulation == step.formulation
    assert set(ref.variables) == set(step.variables) and set(ref.constraints) == set(step.constraints)
    assert set(ref.parameters) == {"C", "pair_weights"} and "model" in ref.data
    assert ref.size() == step.size()
    assert "its convex step (8): .step" in repr(ref)
    sol = ref.solve()
    assert ref.step is sol.extras["problem"]  # the problem the loop compiled
    assert not np.any(ref.parameters["pair_weights"].value)
