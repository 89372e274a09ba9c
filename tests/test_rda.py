"""RDA with optimality bounds (Zhou, Xiao, Wu, Algorithm 1) and OrthogonalTransferSVC.

Independent routes:
* the certified CVXPY references of ``hiercvx.formulations.orthogonal`` (lifted SDP for (4), QPs
  for the baselines): RDA's two bounds must bracket their optimum at *every* iteration, and
  RDA's certified objective must match it, on seeded and hypothesis-generated trees;
* the hinge value against ``PairModel.hinge`` (the shared margin model) and explicit loops;
* subgradients against central finite differences where the functions are differentiable;
* the dual bound recomputed by the model's ``quadratic_lower_bound`` / ``lower_bound`` at the
  solver's averaged multipliers, which are checked to be feasible;
* the starting upper bound computed by hand (the paper's ``J(1) = C`` is wrong when an
  example has no constraint row).
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

import hiercvx as hc
from hiercvx import methods, testing
from hiercvx.estimators.orthogonal import OrthogonalTransferSVC
from hiercvx.formulations import orthogonal as ot
from hiercvx.models import orthogonal as otm
from hiercvx.result import Solution
from hiercvx.solvers import rda

from strategies import clustered_data, trees

BUILDERS = {"orthogonal": ot.primal, "flatmult": ot.flatmult, "hiermult": ot.hiermult,
            "transfer": ot.transfer, "treeloss": ot.treeloss}
T8 = {"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b", "b2": "b", "b3": "b"}
DEEP = {"r": None, "a": "r", "b": "r", "c": "r", "a1": "a", "a2": "a", "b1": "b", "b2": "b",
        "a11": "a1", "a12": "a1", "c1": "c"}  # a one-child node (c), depth 3


def tree(spec):
    return hc.Hierarchy.from_parents(spec)


def run_rda(X, y, H, method="orthogonal", *, K=None, alpha=1.0, classes="nodes", **options):
    """``rda.solve`` on the model of ``(X, y, H)``: validation in ``prepare``, then Algorithm 1."""
    return rda.solve(otm.prepare(X, y, H, method, classes, K=K, alpha=alpha), **options)


def to_leaves(H, y):
    """Internal labels moved to their first leaf (FLATMULT (12) is over the leaves)."""
    return np.array([v if H.is_leaf(v) else next(d for d in H.descendants(v) if H.is_leaf(d))
                     for v in y], dtype=object)


_REFS = {}


def reference(method, H, X, y, C):
    key = (method, id(H), X.tobytes(), tuple(y), C)
    if key not in _REFS:
        _REFS[key] = BUILDERS[method](X, y, H, C=C).solve()
    return _REFS[key]


# ---------------------------------------------------------------------- bounds and optimum
@pytest.fixture(scope="module")
def deep_problem():
    H = tree(DEEP)
    X, y = clustered_data(H, n=30, seed=3, internal=("a", "b"))
    return H, X, y


@pytest.mark.parametrize("method", ot.METHODS)
def test_bounds_bracket_the_reference_at_every_iteration(method, deep_problem):
    H, X, y = deep_problem
    if method == "flatmult":  # (12) is over the leaves
        y = to_leaves(H, y)
    ref = reference(method, H, X, y, 2.0)
    res = run_rda(X, y, H, method, C=2.0, tol=1e-4)
    assert res.converged and res.gap <= 1e-4
    h = res.history
    assert len(h["upper"]) == res.n_iter + 1
    testing.assert_bounds_bracket(h["lower"], h["upper"], ref.objective, rtol=2 * ref.gap + 1e-7)
    testing.assert_bounds_bracket(h["lower_rda"][1:], h["upper"], ref.objective, rtol=2 * ref.gap + 1e-7)
    assert np.all(np.diff(h["upper"]) <= 0) and np.all(np.diff(h["lower"]) >= 0)
    testing.assert_fast_matches_reference(res, ref, rtol=1e-4)
    # the certified objective is J at the returned weights, recomputed by the formulation module
    W = res.weights
    reg = ot.omega(W[1:], res.K) if method == "orthogonal" else None
    if method == "transfer":
        reg = 0.5 * np.sum(W[1:] * (ot.transfer_matrix(H) @ W[1:]))
    elif reg is None:
        reg = 0.5 * np.sum(W * W)
    assert res.objective == pytest.approx(reg + res.model.hinge(W, 2.0), rel=1e-12)
    # the paper's step 4 as printed, max{J_low(t), J(t+1)}, would be an upper-bound value:
    assert h["upper"][1] > ref.objective + 1e-3


@pytest.mark.parametrize("psi", ["identity", "diagonal", "averaged"])
@pytest.mark.parametrize("averaging", ["uniform", "linear"])
def test_every_splitting_and_averaging_is_certified(psi, averaging):
    H = tree(T8)
    X, y = clustered_data(H, n=16, seed=5, internal=("a",))
    ref = reference("orthogonal", H, X, y, 1.0)
    tol = 1e-3 if averaging == "uniform" and psi != "averaged" else 1e-4
    res = run_rda(X, y, H, C=1.0, psi=psi, averaging=averaging, tol=tol, max_iter=40_000)
    assert res.converged
    testing.assert_bounds_bracket(res.history["lower"], res.history["upper"], ref.objective,
                                  rtol=2 * ref.gap + 1e-7)
    testing.assert_fast_matches_reference(res, ref, rtol=tol)


def test_paper_algorithm_as_printed_and_the_dual_bound():
    """Algorithm 1 exactly (uniform averages, Psi = sigma/2 ||W||^2, step-4 bound alone): its
    bounds are valid, and the bound of the averaged multipliers is never below the paper's."""
    H = tree(T8)
    X, y = clustered_data(H, n=16, seed=5)
    ref = reference("orthogonal", H, X, y, 1.0)
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        paper = run_rda(X, y, H, averaging="uniform", psi="identity", dual_bound=False, max_iter=300)
    assert not paper.converged and paper.dual is None
    testing.assert_bounds_bracket(paper.history["lower"], paper.history["upper"], ref.objective)
    assert np.array_equal(paper.history["lower"][1:], np.maximum.accumulate(
        np.maximum(paper.history["lower_rda"][1:], 0.0)))
    with pytest.warns(ConvergenceWarning):
        both = run_rda(X, y, H, averaging="uniform", psi="identity", max_iter=300, tol=1e-12)
    lo_rda, lo_dual = both.history["lower_rda"][1:], both.history["lower_dual"][1:]
    assert np.all(lo_dual >= lo_rda - 1e-9 * np.maximum(1, np.abs(lo_rda)))
    assert both.lower_bound > paper.lower_bound  # the paper's bound lags far behind here
    assert np.array_equal(both.history["upper"], paper.history["upper"])  # same iterates


@settings(max_examples=4, deadline=None)
@given(H=trees(min_nodes=3, max_nodes=8), seed=st.integers(0, 10_000), partial=st.booleans(),
       C=st.sampled_from([0.5, 2.0]))
@pytest.mark.parametrize("method", ot.METHODS)
def test_matches_reference_on_generated_trees(method, H, seed, partial, C):
    assume(len(H.leaves) >= 2)
    rng = np.random.default_rng(seed)
    internal = [v for v in H.nodes[1:] if not H.is_leaf(v)]
    labels = internal[:2] if (partial and internal and method != "flatmult") else ()
    X, y = clustered_data(H, n=12, seed=seed, internal=labels,
                          noise=float(rng.uniform(0.3, 1.5)))
    ref = BUILDERS[method](X, y, H, C=C).solve()
    res = run_rda(X, y, H, method, C=C, tol=1e-4, max_iter=50_000)
    testing.assert_fast_matches_reference(res, ref, rtol=1e-4)
    testing.assert_bounds_bracket(res.history["lower"], res.history["upper"], ref.objective,
                                  rtol=2 * ref.gap + 1e-7)


# ---------------------------------------------------------------------- pieces of the algorithm
def explicit_hinge(W, X, y, H, C):
    """(7)'s hinge H(w) by loops over H.ancestors / H.siblings."""
    total = 0.0
    for k, label in enumerate(y):
        worst = 0.0
        for i in H.ancestors(label, inclusive=True):
            if i == H.root:
                continue
            for j in H.siblings(i):
                worst = max(worst, 1.0 - (W[H.index(i)] - W[H.index(j)]) @ X[k])
        total += worst
    return C / len(y) * total


@pytest.mark.parametrize("method", ot.METHODS)
def test_hinge_value_and_subgradient(method):
    H = tree(DEEP)
    X, y = clustered_data(H, n=15, d=4, seed=2)
    C = 3.0
    model = ot.prepare(X, y, H, method)
    hinge = rda.Hinge(model, C)
    rng = np.random.default_rng(0)
    var = model.var_nodes

    def full(Wv):
        W = np.zeros((len(H), X.shape[1]))
        W[var] = Wv.reshape(len(var), -1)
        return W

    Wv = rng.standard_normal((len(var), X.shape[1]))  # generic point: H is differentiable there
    value, U, a_sum, chosen, alpha = hinge.evaluate(Wv)
    assert value == pytest.approx(model.hinge(full(Wv), C), rel=1e-12)
    if method in ("orthogonal", "transfer"):
        assert value == pytest.approx(explicit_hinge(full(Wv), X, y, H, C), rel=1e-12)
    assert value > 0 and np.all(alpha > 0)
    testing.check_gradient(lambda w: hinge.evaluate(w.reshape(Wv.shape))[0], lambda w: -U.ravel(),
                           Wv.ravel(), eps=1e-7)
    # H(W) = sum alpha - <U, W>: the linearization is exact on the chosen pairs
    assert value == pytest.approx(a_sum - np.sum(U * Wv), rel=1e-10)


def test_phi_subgradient_of_the_splitting_uses_theorem4():
    """g = (S(W) - P) W - U is the gradient of phi = Omega - sigma/2 ||W||^2 + H at a generic W,
    and S(W) W is omega_subgradient (Theorem 4)."""
    H = tree(DEEP)
    X, y = clustered_data(H, n=15, d=4, seed=4)
    model = ot.prepare(X, y, H)
    K = ot.heuristic_K(H, alpha=0.3)
    reg = rda.regularizer_for(model, K, psi="identity")
    assert reg.sigma == pytest.approx(ot.strong_convexity(K))
    hinge = rda.Hinge(model, 1.0)
    W = np.random.default_rng(1).standard_normal((len(H) - 1, 4))
    S, R = reg.pattern(W)
    assert R == pytest.approx(ot.omega(W, K), rel=1e-12)
    assert np.allclose(S @ W, ot.omega_subgradient(W, K), atol=1e-12)

    def phi(w):
        w = w.reshape(W.shape)
        return ot.omega(w, K) - 0.5 * reg.sigma * np.sum(w * w) + hinge.evaluate(w)[0]

    def grad(w):
        w = w.reshape(W.shape)
        S, _ = reg.pattern(w)
        return ((S @ w) - reg.psi_apply(w) - hinge.evaluate(w)[1]).ravel()

    testing.check_gradient(phi, grad, W.ravel(), eps=1e-7)


@pytest.mark.parametrize("method", ["orthogonal", "transfer", "treeloss"])
def test_dual_bound_is_the_formulations_certificate(method, deep_problem):
    H, X, y = deep_problem
    C = 2.0
    res = run_rda(X, y, H, method, C=C, tol=1e-3)
    model = res.model
    a = res.dual
    assert np.all(a >= 0)
    used = np.bincount(model.data.pair_i, weights=a * model.data.pair_cost, minlength=model.data.n_samples)
    assert np.all(used <= C * model.data.Cw * (1 + 1e-12))  # per-slack budgets of the dual
    S = res.dual_S
    if method == "orthogonal":  # the averaged sign patterns stay in the box B(K)
        assert np.allclose(np.diag(S), np.diag(res.K)) and np.all(np.abs(S) <= res.K + 1e-12)
    bound = otm.quadratic_lower_bound(model, a, S)
    assert bound == pytest.approx(res.history["lower_dual"][-1], rel=1e-9, abs=1e-12)


def test_starting_upper_bound_is_not_C_when_an_example_has_no_row():
    # the paper starts with J(1) = C; an example labelled 'c' (an only child) has no margin row
    H = tree({"r": None, "c": "r", "x": "c", "z": "c"})
    X, y = clustered_data(H, n=10, seed=1, internal=("c", "c", "c", "c"))
    res = run_rda(X, y, H, C=5.0, tol=1e-4)
    assert res.history["upper"][0] == pytest.approx(5.0 * 6 / 10)  # J(0): 6 of 10 have rows
    testing.assert_fast_matches_reference(res, reference("orthogonal", H, X, y, 5.0), rtol=1e-4)


def test_sparse_input_and_explicit_K():
    import scipy.sparse as sp

    H = tree(T8)
    X, y = clustered_data(H, n=16, d=5, seed=7)
    X[np.abs(X) < 0.5] = 0.0
    K = ot.heuristic_K(H, alpha=0.5)
    dense = run_rda(X, y, H, K=K, tol=1e-5)
    sparse = run_rda(sp.csr_matrix(X), y, H, K=K, tol=1e-5)
    assert sparse.n_iter == dense.n_iter and np.allclose(sparse.weights, dense.weights, atol=1e-10)
    testing.assert_fast_matches_reference(dense, ot.primal(X, y, H, K=K).solve(), rtol=1e-5)


# ---------------------------------------------------------------------- the one signature
def test_solve_runs_on_the_model_and_takes_K():
    """``rda.solve(model, C, K=...)``: K defaults to the model's (validated once in prepare); an
    explicit K is validated here and equals preparing with it; the baselines refuse K."""
    H = tree(T8)
    X, y = clustered_data(H, n=16, seed=5)
    K = ot.heuristic_K(H, alpha=0.5)
    model = otm.prepare(X, y, H)
    explicit = rda.solve(model, 1.0, K=K, tol=1e-4)
    prepared = rda.solve(otm.prepare(X, y, H, K=K), 1.0, tol=1e-4)
    assert explicit.n_iter == prepared.n_iter and np.allclose(explicit.weights, prepared.weights)
    assert np.allclose(explicit.K, K) and explicit.alpha is None and prepared.alpha is None
    assert rda.solve(model, 1.0, tol=1e-3).alpha == 1.0  # heuristic (6), alpha not lowered
    assert isinstance(explicit, Solution) and explicit.solver == "rda" and explicit.status == "optimal"
    # the certificate: objective and bound recomputed by the model at the solver's point
    with_K = prepared.model
    assert prepared.objective == pytest.approx(with_K.objective(prepared.weights, C=1.0), rel=1e-12)
    assert with_K.lower_bound((prepared.dual, prepared.dual_S), C=1.0) == pytest.approx(
        prepared.history["lower_dual"][-1], rel=1e-9)
    with pytest.raises(hc.InputError, match="does not take it"):
        rda.solve(otm.prepare(X, y, H, "transfer"), K=K)
    with pytest.raises(hc.InputError, match=r"\(7, 7\)"):
        rda.solve(model, K=np.eye(8))


@pytest.mark.parametrize("name", otm.METHODS)
def test_registry_cases_agree(name):
    """Every registered quick case: RDA (registered options) agrees with the reference within
    rtol + the reference's gap, converged, and each lower bound lies below the other's objective."""
    method = methods.get(name)
    cases = method.cases(True)
    assert {c.structure for c in cases} == set(method.structures)
    fast_solver = method.fast_solvers["rda"]
    for case in cases:
        ref = method.build("primal", case).solve()
        fast = method.run_fast("rda", case)
        assert fast.converged, (name, case.name)
        slack = fast_solver.rtol * max(1.0, abs(ref.objective)) + (ref.objective - ref.lower_bound)
        assert abs(fast.objective - ref.objective) <= slack, (name, case.name)
        assert fast.lower_bound <= ref.objective * (1 + 1e-9) + 1e-12
        assert ref.lower_bound <= fast.objective * (1 + 1e-9) + 1e-12
        assert fast.weights.shape == ref.weights.shape


# ---------------------------------------------------------------------- bad input
def test_options_are_settings_of_one_call():
    """``options=`` and the keywords set the same fields; the sparse-storage thresholds are
    settings too, and both storages give the same iterates."""
    H = tree(T8)
    X, y = clustered_data(H, n=20, d=3, seed=2)
    model = otm.prepare(X, y, H, "orthogonal")
    # psi="identity" with uniform averaging needs tens of thousands of iterations for 1e-3:
    # both calls stop at the same budget, where the objective tells the settings apart
    with pytest.warns(ConvergenceWarning):
        by_options = rda.solve(model, 1.0, options=rda.Options(tol=1e-3, max_iter=2000, psi="identity",
                                                               averaging="uniform"))
    with pytest.warns(ConvergenceWarning):
        by_keywords = rda.solve(model, 1.0, tol=1e-3, max_iter=2000, psi="identity", averaging="uniform")
    assert by_options.objective == by_keywords.objective and by_options.n_iter == by_keywords.n_iter
    assert by_options.objective != rda.solve(model, 1.0, tol=1e-3, max_iter=2000).objective
    sparse = rda.solve(model, 1.0, tol=1e-3, options=rda.Options(sparse_omega_min=1, sparse_omega_density=1.0))
    dense = rda.solve(model, 1.0, tol=1e-3)
    assert sparse.converged and dense.converged
    assert sparse.objective == pytest.approx(dense.objective, rel=1e-6)
    for bad in ({"psi": "full"}, {"averaging": "cubic"}, {"sparse_omega_density": 2.0}, {"max_iter": 0}):
        with pytest.raises(hc.InputError):
            rda.Options(**bad)


def test_bad_input():
    H = tree(T8)
    X, y = clustered_data(H, n=8)
    with pytest.raises(hc.InputError, match="method must be one of"):
        run_rda(X, y, H, "svm")
    with pytest.raises(hc.InputError, match="does not take it"):
        run_rda(X, y, H, "transfer", K=np.eye(7))
    with pytest.raises(hc.InputError, match="either K or alpha"):
        run_rda(X, y, H, K=np.eye(7), alpha=0.5)
    with pytest.raises(ot.NonConvexKError, match="smallest eigenvalue"):
        run_rda(X, y, H, K=ot.heuristic_K(H) + 3.0 * (1 - np.eye(7)))
    singular = np.array([[2.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])  # Theorem 1, not Cor. 2
    H3 = tree({"r": None, "a": "r", "b": "a", "c": "a"})
    with pytest.raises(hc.InputError, match="not strongly convex"):
        run_rda(X[:4], ["b", "c", "b", "c"], H3, K=singular)
    with pytest.raises(hc.InputError, match=r"\(7, 7\)"):
        run_rda(X, y, H, K=np.eye(8))
    for kw, match in (({"tol": -1.0}, "tol"), ({"max_iter": -1}, "max_iter"), ({"max_iter": "x"}, "max_iter"),
                      ({"averaging": "cubic"}, "averaging"), ({"psi": "full"}, "psi"), ({"C": 0.0}, "C")):
        with pytest.raises(hc.InputError, match=match):
            run_rda(X, y, H, **kw)
    with pytest.raises(hc.LabelError, match="not a node"):
        run_rda(X, ["zz"] + list(y[1:]), H)
    with pytest.raises(hc.LabelError, match="internal node"):
        run_rda(X, ["a"] + list(y[1:]), H, "flatmult")
    dag = hc.Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "c"), ("b", "c")])
    with pytest.raises(hc.HierarchyError, match="trees"):
        run_rda(X, ["c"] * 8, dag)
    with pytest.warns(ConvergenceWarning, match="stopped after 3 iterations"):
        res = run_rda(X, y, H, max_iter=3)
    assert res.n_iter == 3 and not res.converged and res.gap > res.tol


# ---------------------------------------------------------------------- estimator
# No expected failures: every scikit-learn check passes with hierarchy=None (a flat tree, where
# the five problems coincide with Crammer--Singer under the C/N scaling).  The top-down
# (orthogonal) and flat (TREELOSS) prediction paths are checked with RDA, the SDP with CVXPY.
EXPECTED_FAILURES = {}


@pytest.mark.parametrize("method,solver", [("orthogonal", "fast"), ("treeloss", "fast"),
                                           pytest.param("orthogonal", "reference",
                                                        marks=pytest.mark.slow)])
def test_check_estimator(method, solver):
    est = OrthogonalTransferSVC(method=method, solver=solver, tol=1e-3, max_iter=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # badly scaled check data, capped budget
        results = check_estimator(est, on_fail=None, expected_failed_checks=EXPECTED_FAILURES)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


@pytest.mark.parametrize("method", ot.METHODS)
def test_estimator_fast_matches_reference(method, deep_problem):
    H, X, y = deep_problem
    if method == "flatmult":
        y = to_leaves(H, y)
    C = 2.0 / len(X)  # the papers' C = 2 (the estimator's C sums the hinge, C_paper = C N)
    ref = OrthogonalTransferSVC(H, C=C, method=method, solver="reference").fit(X, y)
    fast = OrthogonalTransferSVC(H, C=C, method=method, tol=1e-4, max_iter=50_000).fit(X, y)
    assert ref.gap_ <= 1e-6 and fast.gap_ <= 1e-4
    testing.assert_fast_matches_reference(fast.result_, ref.result_, rtol=1e-4)
    assert ref.coef_.shape == fast.coef_.shape == (len(H), X.shape[1])
    pf, pr = fast.predict(X), ref.predict(X)
    assert np.mean(pf == pr) >= 0.9
    S = fast.decision_function(X)
    assert S.shape == (len(X), len(fast.classes_))
    assert np.array_equal(fast.classes_[np.argmax(S, axis=1)], pf)
    # the fitted bias (fit_intercept=True) enters as a unit feature
    W1 = np.hstack([fast.coef_, fast.intercept_[:, None]])
    X1 = np.hstack([X, np.ones((len(X), 1))])
    if method == "treeloss":  # the paper's TREELOSS ranks every non-root node
        assert list(fast.classes_) == list(H.nodes[1:])
        assert np.array_equal(pf, ot.predict_flat(W1, X1, H, "nodes", cumulative=True))
    else:
        assert list(fast.classes_) == list(H.leaves) and set(pf) <= set(H.leaves)
        predict = ot.predict_flat if method == "flatmult" else ot.predict_top_down
        assert np.array_equal(pf, predict(W1, X1, H))
    # score = 1 - the paper's error rate; 'a' and 'b' are internal labels (partial paths)
    assert fast.score(X, y) == pytest.approx(1 - ot.top_down_errors(H, y, pf).mean())
    if method == "orthogonal":
        assert np.allclose(fast.K_, ot.heuristic_K(H)) and np.allclose(ref.K_, fast.K_)


def test_estimator_bad_input(deep_problem):
    H, X, y = deep_problem
    with pytest.raises(hc.InputError, match="method"):
        OrthogonalTransferSVC(H, method="svm").fit(X, y)
    with pytest.raises(hc.InputError, match="solver"):
        OrthogonalTransferSVC(H, solver="magic").fit(X, y)
    with pytest.raises(hc.InputError, match="does not use it"):
        OrthogonalTransferSVC(H, K=np.eye(len(H) - 1), method="hiermult").fit(X, y)
    with pytest.raises(hc.InputError, match="does not use it"):
        OrthogonalTransferSVC(H, K=np.eye(len(H) - 1), method="treeloss").fit(X, y)
    with pytest.raises(ot.NonConvexKError):
        OrthogonalTransferSVC(H, K=-np.eye(len(H) - 1)).fit(X, y)
    with pytest.raises(hc.InputError, match="C must be positive"):
        OrthogonalTransferSVC(H, C=-1).fit(X, y)
    with pytest.raises(hc.InputError, match="max_iter"):
        OrthogonalTransferSVC(H, max_iter=0).fit(X, y)
    with pytest.raises(hc.InputError, match="treeloss_classes"):
        OrthogonalTransferSVC(H, method="treeloss", treeloss_classes="all").fit(X, y)
    with pytest.raises(hc.LabelError, match="not a node"):
        OrthogonalTransferSVC(H).fit(X, np.where(y == "a2", "zz", y))
    with pytest.raises(hc.LabelError, match="internal node"):  # FLATMULT: self leaves unless refused
        OrthogonalTransferSVC(H, method="flatmult", internal_labels="refuse").fit(X, y)
    with pytest.raises(hc.LabelError, match="single-label"):
        OrthogonalTransferSVC(H).fit(X, [{"a1", "b1"}] * len(X))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        OrthogonalTransferSVC(H).fit(Xn, y)
