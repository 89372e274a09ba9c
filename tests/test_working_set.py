"""Fast solvers of the hierarchical SVM against their certified CVXPY references.

* ``solvers.working_set.solve(model)`` (Cai thesis Algorithm 2) on ``models.hsvm.prepare``'s
  model vs ``hsvm.primal`` / ``hsvm.dual``
  on seeded and hypothesis-generated trees and DAGs, both rescalings, rbf kernel, sparse X;
* ``solvers.crammer_singer.solve(model)`` on ``models.multiclass.prepare``'s model vs ``multiclass.primal`` (with intercept, sample and class
  weights) and vs LIBLINEAR's objective through weak duality;
* the reduced QP routine vs CVXPY; Proposition 3 (psi = 0 exactly at the optimum); the bound
  ``gap <= sum_i C_i psi_i``; certificates valid at every reported pass; warm starts.
"""

import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from strategies import hierarchies

import hiercvx as hc
from hiercvx import testing
from hiercvx.exceptions import InputError, LabelError
from hiercvx.formulations import hsvm, multiclass
from hiercvx.kernels import make_kernel
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.models import multiclass as mc_model
from hiercvx.solvers import crammer_singer, working_set
from hiercvx.solvers._working_set_kernels import sweep
from hiercvx.solvers.margin_dual import MarginDualState, choose_factor
from hiercvx.solvers.primitives import row_data
from hiercvx.solvers.working_set import solve_subproblem, violation_scores


# ----------------------------------------------------------------------------- problems
def small_tree():
    """Unbalanced tree with a one-child node: root -> a -> (a1, a2), b -> b1 -> (b11, b12), c."""
    return hc.Hierarchy.from_parents({"r": None, "a": "r", "a1": "a", "a2": "a", "b": "r",
                                      "b1": "b", "b11": "b1", "b12": "b1", "c": "r"})


def labelled_data(H, n=36, d=5, seed=0, multi=0.25, scale=1.0):
    """Gaussian classes around leaf means; about ``multi`` of the examples get a second leaf."""
    rng = np.random.default_rng(seed)
    leaves = list(H.leaves)
    q = len(leaves)
    means = rng.standard_normal((q, d)) * 1.5
    first = rng.integers(q, size=n)
    second = np.where(rng.random(n) < multi, rng.integers(q, size=n), first)
    if q == 2:  # two labels would be every class: such an example constrains nothing
        second = first
    X = scale * (0.5 * (means[first] + means[second]) + rng.standard_normal((n, d)))
    Y = [frozenset({leaves[a], leaves[b]}) for a, b in zip(first, second)]
    return X, Y


def prepared(X, Y, H, rescaling="slack", **kw):
    return hsvm_model.prepare(X, Y, H, rescaling=rescaling, **kw)


# ----------------------------------------------------------------------------- reduced QP
@pytest.mark.parametrize("seed", range(4))
def test_subproblem_matches_cvxpy(seed):
    """The dedicated reduced-QP routine (Algorithm 2, step 8a) vs CVXPY, with a singular
    Hessian (rank 2 < k) and a start that is not optimal."""
    rng = np.random.default_rng(seed)
    k = 7
    B = rng.standard_normal((k, 2))
    Hm = B @ B.T
    lin = rng.standard_normal(k) * 3
    cost = rng.random(k) + 0.3
    budget = 1.7
    a0 = np.zeros(k)
    a0[rng.integers(k)] = 0.5 / cost.max()
    grad0 = lin - Hm @ a0  # gradient of  lin.a - 1/2 a'Ha  at a0
    a, grad = solve_subproblem(Hm, grad0, a0, cost, budget)
    x = cp.Variable(k)
    ref = cp.Problem(cp.Maximize(lin @ x - 0.5 * cp.quad_form(x, cp.psd_wrap(Hm))),
                     [x >= 0, cost @ x <= budget])
    ref.solve(solver="CLARABEL")

    def f(z):
        return lin @ z - 0.5 * z @ Hm @ z

    assert np.all(a >= 0) and cost @ a <= budget * (1 + 1e-12)
    assert f(a) >= ref.value - 1e-7 * max(1, abs(ref.value))
    np.testing.assert_allclose(grad, lin - Hm @ a, atol=1e-10)


# ----------------------------------------------------------------------------- hsvm vs reference
@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_hsvm_matches_primal_reference(rescaling):
    H = small_tree()
    X, Y = labelled_data(H, seed=1)
    ref = hsvm.primal(X, Y, H, C=1.0, rescaling=rescaling).solve()
    fast = working_set.solve(prepared(X, Y, H, rescaling), C=1.0)
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)
    assert fast.gap <= 1e-6 and fast.history["gap"][-1] <= 1e-6
    # same weights, up to the accuracy a 1e-6 gap allows (the primal is strongly convex)
    assert np.linalg.norm(fast.weights - ref.weights) <= 1e-2 * max(1.0, np.linalg.norm(ref.weights))


def test_hsvm_other_attributes_and_sample_weights():
    H = small_tree()
    X, Y = labelled_data(H, seed=2)
    w = np.random.default_rng(0).uniform(0.2, 2.0, len(Y))
    kw = dict(attributes="indicator", loss="zero_one", sample_weight=w)
    ref = hsvm.primal(X, Y, H, C=0.5, **kw).solve()
    fast = working_set.solve(prepared(X, Y, H, **kw), C=0.5)
    testing.assert_fast_matches_reference(fast, ref)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(H=hierarchies(max_nodes=9), seed=st.integers(0, 2**16), rescaling=st.sampled_from(["slack", "margin"]))
def test_hsvm_matches_reference_on_random_hierarchies(H, seed, rescaling):
    """Trees (unbalanced, one-child nodes, forests under an artificial root) and DAGs."""
    assume(len(H.leaves) >= 2)
    X, Y = labelled_data(H, n=14, d=3, seed=seed, multi=0.3)
    ref = hsvm.primal(X, Y, H, C=1.0, rescaling=rescaling).solve()
    fast = working_set.solve(prepared(X, Y, H, rescaling), C=1.0)
    testing.assert_fast_matches_reference(fast, ref, rtol=1e-6)


def test_rbf_kernel_matches_kernel_dual():
    H = small_tree()
    X, Y = labelled_data(H, n=30, d=3, seed=3)
    sigma = 1.3
    ref = hsvm.dual(X, Y, H, C=1.0, kernel="rbf", sigma=sigma).solve()
    fast = working_set.solve(prepared(X, Y, H, kernel=make_kernel("rbf", sigma=sigma)), C=1.0)
    testing.assert_fast_matches_reference(fast, ref)
    assert fast.weights.shape == (len(Y), len(H.leaves))  # expansion coefficients G


def test_precomputed_linear_gram_equals_linear_route():
    """The Gram-matrix route (kernel mode) and the feature route (W kept, no Gram matrix)."""
    H = small_tree()
    X, Y = labelled_data(H, seed=4)
    data = prepared(X, Y, H).data
    lin = working_set.solve(prepared(X, Y, H), tol=1e-9)
    pre = working_set.solve(prepared(X @ X.T, Y, H, kernel="precomputed"), tol=1e-9)
    testing.assert_same_optimum(lin, pre, rtol=1e-8)
    np.testing.assert_allclose(_margin.weights_from_coefficients(pre.weights, X, data.Lam),
                               lin.weights, atol=1e-3)


def test_sparse_equals_dense():
    H = small_tree()
    X, Y = labelled_data(H, seed=5)
    X[np.abs(X) < 0.8] = 0.0  # a genuinely sparse matrix
    dense = working_set.solve(prepared(X, Y, H), tol=1e-10)
    sparse = working_set.solve(prepared(sp.csr_matrix(X), Y, H), tol=1e-10)
    np.testing.assert_allclose(sparse.weights, dense.weights, atol=1e-4)
    testing.assert_same_optimum(sparse, dense, rtol=1e-9)


# ----------------------------------------------------------------------------- score factor
def deep_tree(branching=3, depth=3):
    """A full tree: 27 leaves three levels down (class rows share most of their nodes)."""
    parents = {"r": None}
    level = ["r"]
    for _ in range(depth):
        level = [f"{v}{k}" for v in level for k in range(branching)]
        parents.update({child: child[:-1] for child in level})
    return hc.Hierarchy.from_parents(parents)


def _sweep_once(model, rows, state, alpha, block_share=0.125):
    """One pass of the working set's compiled sweep over every example from ``alpha`` (in
    place); ``block_share`` 0 reads the class Gram matrix directly, 1 through every visit's
    block of it."""
    data = model.data
    pairs = tuple(np.ascontiguousarray(a, dtype=np.int64)
                  for a in (data.pair_ptr, data.pair_y, data.pair_ybar)) + (state.offset,
                                                                            state.cost)
    n_pairs = np.diff(pairs[0])
    control = (0.0, 1e-9, 1e-12, 100, np.inf, state.options.budget_rtol, 8, 8, block_share, 0)
    sweep(np.arange(data.n_samples, dtype=np.int64), rows,
          (state.F, state.factor.read, state.factor.move),
          (alpha, state.kdiag, state.budget, state.Q), pairs, control,
          (np.ones(data.n_samples, dtype=np.int8), np.arange(data.n_pairs, dtype=np.int64),
           n_pairs.copy()))


@pytest.mark.parametrize("block_share", [0.0, 1.0])
@pytest.mark.parametrize("factor", ["classes", "nodes"])
@pytest.mark.parametrize("route", ["dense", "csr", "rbf"])
def test_score_factor_is_kept_exactly_by_a_pass(factor, route, block_share):
    """After a pass that moved alpha from 0, the incrementally updated factor equals its
    definition at the new alpha: class weights ``Lam W`` / node weights ``W``, or class /
    node scores ``(K G Q)^T`` / ``(K G Lam)^T`` with a Gram matrix."""
    H = deep_tree()
    X, Y = labelled_data(H, n=40, d=6, seed=11, multi=0.2)
    kw = {"kernel": make_kernel("rbf", sigma=1.5)} if route == "rbf" else {}
    model = prepared(sp.csr_matrix(X) if route == "csr" else X, Y, H, **kw)
    rows = row_data(X=model.X) if model.node_weights else row_data(K=model.K)
    state = MarginDualState(model, rows, 1.0, factor=factor)
    alpha = np.zeros(model.data.n_pairs)
    state.certify(alpha)
    _sweep_once(model, rows, state, alpha, block_share)
    assert np.count_nonzero(alpha) > 10
    G = _margin.coefficients(alpha, model.data)
    Lam = model.data.Lam
    if route == "rbf":
        KG = model.K @ G
        expected = (KG @ model.data.Q).T if factor == "classes" else (KG @ Lam).T
    else:
        W = _margin.weights_from_coefficients(G, model.X, Lam)
        expected = Lam @ W if factor == "classes" else W
    np.testing.assert_allclose(state.F, expected, atol=1e-10 * max(1.0, np.abs(expected).max()))


def test_a_pass_through_the_class_gram_blocks_takes_the_direct_steps():
    """Reading ``Q`` through each visit's block of it (:func:`_local_gram`) changes where the
    numbers come from, not the steps: the same pass from the same point ends at the same
    alpha and the same factor."""
    H = deep_tree()
    X, Y = labelled_data(H, n=40, d=6, seed=5, multi=0.3)
    model = prepared(X, Y, H)
    rows = row_data(X=model.X)
    ends = []
    for share in (0.0, 1.0):
        state = MarginDualState(model, rows, 1.0, factor="nodes")
        alpha = np.zeros(model.data.n_pairs)
        state.certify(alpha)
        for _ in range(3):
            _sweep_once(model, rows, state, alpha, share)
        ends.append((alpha, state.F.copy()))
    assert np.count_nonzero(ends[0][0]) > 10
    np.testing.assert_allclose(ends[1][0], ends[0][0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ends[1][1], ends[0][1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kernel", [None, "rbf"])
def test_node_and_class_factors_reach_the_same_certified_optimum(kernel):
    H = deep_tree()
    X, Y = labelled_data(H, n=60, d=4, seed=12, multi=0.2)
    kw = {"kernel": make_kernel("rbf", sigma=1.2)} if kernel else {}
    model = prepared(X, Y, H, **kw)
    by_class = working_set.solve(model, tol=1e-9, factor="classes")
    by_node = working_set.solve(model, tol=1e-9, factor="nodes")
    assert by_class.converged and by_node.converged
    testing.assert_same_optimum(by_class, by_node, rtol=1e-8)


def test_choose_factor_takes_nodes_on_deep_trees_and_classes_when_flat():
    H = deep_tree()
    X, Y = labelled_data(H, n=60, d=4, seed=13, multi=0.0)
    assert choose_factor(prepared(X, Y, H).data) == "nodes"
    flat = mc_model.prepare(X, [next(iter(labels)) for labels in Y])
    assert choose_factor(flat.data) == "classes"
    with pytest.raises(InputError, match="factor must be"):
        working_set.solve(prepared(X, Y, H), factor="rows")


# ----------------------------------------------------------------------------- psi, certificates
def test_proposition_3_psi_vanishes_exactly_at_the_optimum():
    H = small_tree()
    X, Y = labelled_data(H, seed=6)
    model = prepared(X, Y, H)
    data = model.data
    C = 1.0
    sol = working_set.solve(model, C=C, tol=1e-11)

    def scores(alpha):
        W = _margin.weights_from_coefficients(_margin.coefficients(alpha, data), X, data.Lam)
        return _margin.class_scores(W, X, data.Lam)

    psi_opt = violation_scores(sol.dual, scores(sol.dual), data, C)
    assert psi_opt.max() <= 1e-4, psi_opt.max()
    # away from the optimum psi is large: alpha = 0 gives psi_i = l_i = max(0, max_p H_p)
    zero = np.zeros(data.n_pairs)
    psi0 = violation_scores(zero, scores(zero), data, C)
    expect = np.zeros(data.n_samples)
    np.maximum.at(expect, data.pair_i, data.pair_offset / data.pair_cost)
    np.testing.assert_allclose(psi0, expect)
    half = 0.5 * sol.dual
    assert violation_scores(half, scores(half), data, C).max() > 0.05
    # gap <= sum_i C_i psi_i at any feasible alpha (both read off the same H)
    rng = np.random.default_rng(0)
    for alpha in (zero, half, _margin.project_dual(rng.random(data.n_pairs), data, C)):
        W = _margin.weights_from_coefficients(_margin.coefficients(alpha, data), X, data.Lam)
        gap = _margin.primal_objective(W, X, data, C) - _margin.dual_objective_linear(alpha, X, data)
        psi = violation_scores(alpha, scores(alpha), data, C)
        assert gap <= C * data.Cw @ psi + 1e-9


def test_certificate_holds_at_every_reported_pass():
    H = small_tree()
    X, Y = labelled_data(H, seed=7)
    ref = hsvm.primal(X, Y, H, C=2.0).solve()
    fast = working_set.solve(prepared(X, Y, H), C=2.0, check_every=1)
    hist = fast.history
    assert len(hist["gap"]) > 3
    testing.assert_bounds_bracket(hist["lower_bound"], hist["objective"], ref.objective, rtol=1e-7)
    # block coordinate ascent with exact blocks: the dual never decreases
    assert np.all(np.diff(hist["lower_bound"]) >= -1e-9 * abs(ref.objective))
    assert hist["gap"][-1] <= 1e-6 < hist["gap"][0]


def test_warm_start_needs_fewer_passes():
    H = small_tree()
    X, Y = labelled_data(H, seed=8)
    model = prepared(X, Y, H)
    first = working_set.solve(model, C=1.0)
    # the passes alone (polish=False): with step 8b the support step may end either run early,
    # whenever the passes since the last one paid for it
    cold = working_set.solve(model, C=1.3, polish=False)
    warm = working_set.solve(model, C=1.3, alpha0=first.dual, polish=False)
    assert warm.converged and warm.n_iter < cold.n_iter
    testing.assert_same_optimum(warm, cold)
    testing.assert_same_optimum(working_set.solve(model, C=1.3, alpha0=first.dual), cold)
    at_optimum = working_set.solve(model, C=1.0, alpha0=first.dual)
    assert at_optimum.n_iter == 0 and at_optimum.converged


def test_convergence_warning_and_bad_input():
    H = small_tree()
    X, Y = labelled_data(H, seed=9)
    model = prepared(X, Y, H)
    data = model.data
    with pytest.warns(ConvergenceWarning, match="relative duality gap"):
        res = working_set.solve(model, max_iter=1)
    assert not res.converged and res.lower_bound <= res.objective
    with pytest.raises(InputError, match="alpha0"):
        working_set.solve(model, alpha0=np.ones(3))
    with pytest.raises(InputError, match="rows"):
        _margin.model_from_data(X[:-1], data)
    with pytest.raises(InputError, match="entries but X has"):
        prepared(X[:-1], Y, H)
    with pytest.raises(InputError, match="MarginData"):
        _margin.model_from_data(X, data.Y)
    with pytest.raises(InputError, match="model"):
        working_set.solve(data)
    with pytest.raises(InputError, match="C"):
        working_set.solve(model, C=0.0)
    with pytest.raises(InputError, match="tol"):
        working_set.solve(model, tol=-1.0)
    with pytest.raises(InputError, match="precomputed"):
        _margin.model_from_data(X, data, kernel="precomputed")
    with pytest.raises(InputError, match="precomputed"):
        prepared(X, Y, H, kernel="precomputed")


# ----------------------------------------------------------------------------- Crammer–Singer
def flat_data(n=60, d=6, q=4, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((q, d))
    y = rng.integers(q, size=n)
    return means[y] + rng.standard_normal((n, d)), y


@pytest.mark.parametrize("options", [
    {},
    {"fit_intercept": True, "intercept_scaling": 2.0},
    {"sample_weight": "random", "class_weight": {0: 2.0, 2: 0.5}},
])
def test_crammer_singer_matches_primal_reference(options):
    X, y = flat_data(seed=1)
    options = dict(options)
    if options.get("sample_weight") == "random":
        options["sample_weight"] = np.random.default_rng(0).uniform(0.1, 3.0, len(y))
    ref = multiclass.primal(X, y, C=0.7, **options).solve()
    fast = crammer_singer.solve(mc_model.prepare(X, y, **options), C=0.7)
    testing.assert_fast_matches_reference(fast, ref)
    if options.get("fit_intercept"):
        np.testing.assert_allclose(fast.intercept, ref.values["intercept"], atol=5e-3)


def test_crammer_singer_against_liblinear_by_weak_duality():
    """Our certified lower bound is below LIBLINEAR's objective, and our objective is at most
    LIBLINEAR's plus the tolerance; predictions agree."""
    from sklearn.svm import LinearSVC

    X, y = flat_data(n=150, seed=2)
    for fit_intercept in (False, True):
        fast = crammer_singer.solve(mc_model.prepare(X, y, fit_intercept=fit_intercept), C=1.0)
        svc = LinearSVC(multi_class="crammer_singer", C=1.0, fit_intercept=fit_intercept, tol=1e-8,
                        max_iter=100_000).fit(X, y)
        data = mc_model.flat_margin_data(y, 4)
        Xa = np.hstack([X, np.ones((len(y), 1))]) if fit_intercept else X
        Wa = np.hstack([svc.coef_, svc.intercept_[:, None]]) if fit_intercept else svc.coef_
        liblinear = _margin.primal_objective(Wa, Xa, data, 1.0)
        assert fast.lower_bound <= liblinear + 1e-9
        assert fast.objective <= liblinear + 1e-6 * liblinear
        ours = np.argmax(X @ fast.weights.T + fast.intercept, axis=1)
        assert np.mean(ours == svc.predict(X)) >= 0.98


def test_crammer_singer_equals_flat_working_set():
    """The same flat problem through the hierarchical working-set solver (Lam = I, 0/1 loss):
    the Crammer-Singer model is a margin model, so both solvers take it."""
    X, y = flat_data(seed=3)
    model = mc_model.prepare(X, y)
    cs = crammer_singer.solve(model, C=1.0, tol=1e-9)
    ws = working_set.solve(model, C=1.0, tol=1e-9)
    legacy = working_set.solve(_margin.model_from_data(X, mc_model.flat_margin_data(y, 4)),
                               C=1.0, tol=1e-9)
    testing.assert_same_optimum(ws, legacy, rtol=1e-8)
    testing.assert_same_optimum(cs, ws, rtol=1e-8)
    np.testing.assert_allclose(cs.weights, ws.weights, atol=1e-3)


def test_crammer_singer_sparse_warm_start_and_bad_input():
    X, y = flat_data(seed=4)
    X[np.abs(X) < 0.7] = 0.0
    model = mc_model.prepare(X, y, fit_intercept=True)
    dense = crammer_singer.solve(model, tol=1e-10)
    sparse = crammer_singer.solve(mc_model.prepare(sp.csr_matrix(X), y, fit_intercept=True), tol=1e-10)
    np.testing.assert_allclose(sparse.weights, dense.weights, atol=1e-8)
    np.testing.assert_allclose(sparse.intercept, dense.intercept, atol=1e-8)
    assert crammer_singer.solve(model, alpha0=dense.dual).n_iter == 0
    # from a rough solution (tol 1e-3): fewer passes than from zero, summed over three problems
    # (coordinate ascent in random order does not promise it on every single problem)
    cold = warm = 0
    for seed in range(3):
        Xs, ys = flat_data(n=200, seed=seed)
        Xs *= 0.3
        small = mc_model.prepare(Xs, ys)
        rough = crammer_singer.solve(small, tol=1e-3)
        cold += crammer_singer.solve(small).n_iter
        warm_start = crammer_singer.solve(small, alpha0=rough.dual)
        assert warm_start.converged
        warm += warm_start.n_iter
    assert warm < cold
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            crammer_singer.solve(model, max_iter=1)
    # labels outside the given classes (formerly: class indices outside 0..n_classes - 1)
    with pytest.raises(LabelError, match="not among the classes"):
        mc_model.prepare(X, y, classes=[0, 1])
    with pytest.raises(LabelError, match="NaN"):
        mc_model.prepare(X, np.where(y == 0, np.nan, y))
    with pytest.raises(InputError, match="MulticlassModel"):
        crammer_singer.solve(X, y)
    with pytest.raises(InputError, match="C"):
        crammer_singer.solve(model, C=-1)
    with pytest.raises(InputError, match="max_iter"):
        crammer_singer.solve(model, max_iter=0)


@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 10))
@settings(max_examples=60, deadline=None)
def test_entering_pairs_are_the_largest_violations(seed, n_pairs, m):
    """The pairs that join a working set per round: brute force = sort the eligible ones."""
    from hiercvx.solvers._working_set_kernels import _entering_pairs

    rng = np.random.default_rng(seed)
    Hp = np.round(rng.standard_normal(n_pairs), 1)  # ties on purpose
    alpha = np.where(rng.random(n_pairs) < 0.3, rng.random(n_pairs), 0.0)
    u_i, p0 = 0.2 * rng.standard_normal(), 5
    alpha_full = np.concatenate([np.ones(p0), alpha])
    enter = np.empty(m, dtype=np.int64)
    live = np.arange(p0, p0 + n_pairs, dtype=np.int64)  # the example's live pairs
    k = _entering_pairs(alpha_full, Hp, live, n_pairs, u_i, enter)  # positions in `live`
    eligible = np.flatnonzero((alpha == 0) & (Hp > u_i))
    expected = np.sort(Hp[eligible])[::-1][:m]
    assert k == min(m, eligible.size)
    np.testing.assert_array_equal(Hp[enter[:k]], expected)  # the values, ties aside
    assert np.all(alpha_full[live[enter[:k]]] == 0) and len(set(enter[:k])) == k


def test_mass_threshold_keeps_the_certificate_mass():
    """Examples skipped below the threshold carry at most the given share of sum C_i psi_i."""
    from hiercvx.solvers.working_set import _mass_threshold

    rng = np.random.default_rng(0)
    psi, budget = rng.exponential(size=200), rng.uniform(0.5, 2.0, size=200)
    t = _mass_threshold(psi, budget, 0.5)
    skipped = psi <= t
    assert (budget * psi)[skipped].sum() <= 0.5 * (budget * psi).sum() + 1e-12
    above = np.min(psi[~skipped])  # the next value up would break the bound
    assert (budget * psi)[psi <= above].sum() > 0.5 * (budget * psi).sum()
    assert _mass_threshold(np.zeros(3), np.ones(3), 0.5) == 0.0




# ----------------------------------------------------------------------------- options
def test_options_and_keywords_are_the_same_settings():
    """``solve(..., options=Options(...))`` and the keywords it kept (``polish``, ``shrink``,
    ``check_every``, ``factor``, ``max_rounds``) run the same iterations; a keyword overrides
    the field of the same name; the options are frozen."""
    import dataclasses

    H = small_tree()
    model = prepared(*labelled_data(H, n=30, seed=4), H)
    by_keywords = working_set.solve(model, C=1.0, tol=1e-8, polish=False, shrink=False,
                                    check_every=5, factor="classes", max_rounds=50)
    opts = working_set.Options(polish=False, shrink=False, check_every=5, factor="classes",
                               max_rounds=50)
    by_options = working_set.solve(model, C=1.0, tol=1e-8, options=opts)
    assert by_options.n_iter == by_keywords.n_iter
    np.testing.assert_array_equal(by_options.dual, by_keywords.dual)
    overridden = working_set.solve(model, C=1.0, tol=1e-8, options=opts, polish=True)
    assert overridden.extras["n_newton"] >= by_options.extras["n_newton"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.polish = True
    with pytest.raises(InputError, match="factor"):
        working_set.solve(model, options=working_set.Options(factor="rows"))
