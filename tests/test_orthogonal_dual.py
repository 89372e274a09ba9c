"""Dual block-coordinate ascent (``hiercvx.solvers.orthogonal_dual``) for orthogonal transfer
(4) and its four baselines.

Independent routes:
* the certified CVXPY references (lifted SDP for (4), QPs for the baselines) on the
  registry's cases, quick and full (the full ones under ``slow``);
* the certificate recomputed by the model: ``model.objective`` at the returned weights,
  ``quadratic_lower_bound`` / ``model.lower_bound`` at the returned multipliers and S, which
  are checked to be feasible (alpha >= 0 within the budgets, S in the box of K);
* the block inverse against ``numpy.linalg.inv``; the Crammer--Singer block step against the
  general working-set step (``budget_qp``) on the same slack;
* RDA (the paper's Algorithm 1) reaching the same objective.
"""

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from strategies import clustered_data

import hiercvx as hc
from hiercvx import methods
from hiercvx.datasets import make_nhsvm_balanced
from hiercvx.estimators.orthogonal import OrthogonalTransferSVC
from hiercvx.formulations import orthogonal as ot_ref
from hiercvx.models import orthogonal as otm
from hiercvx.result import certified_by, relative_gap
from hiercvx.solvers import _orthogonal_kernels as kern
from hiercvx.solvers import orthogonal_dual as od
from hiercvx.solvers import rda
from hiercvx.solvers.primitives import budget_qp

T8 = {"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b", "b2": "b", "b3": "b"}
DEEP = {"r": None, "a": "r", "b": "r", "c": "r", "a1": "a", "a2": "a", "b1": "b", "b2": "b",
        "a11": "a1", "a12": "a1", "c1": "c"}


def tree(spec):
    return hc.Hierarchy.from_parents(spec)


def star(n_leaves):
    return hc.Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(n_leaves)}})


def _agree(method, case, tol=1e-8):
    ref = method.build("primal", case).solve()
    fast = od.solve(method.model(case), **case.params, tol=tol, max_iter=50_000)
    assert fast.converged, (method.name, case.name)
    slack = 1e-6 * max(1.0, abs(ref.objective)) + (ref.objective - ref.lower_bound)
    assert abs(fast.objective - ref.objective) <= slack, (method.name, case.name, fast, ref)
    assert fast.lower_bound <= ref.objective * (1 + 1e-9) + 1e-12
    assert ref.lower_bound <= fast.objective * (1 + 1e-9) + 1e-12
    assert fast.weights.shape == ref.weights.shape


@pytest.mark.parametrize("name", otm.METHODS)
def test_registry_quick_cases_agree_with_reference(name):
    method = methods.get(name)
    for case in method.cases(True):
        _agree(method, case)


@pytest.mark.slow
@pytest.mark.parametrize("name", otm.METHODS)
def test_registry_full_cases_agree_with_reference(name):
    method = methods.get(name)
    for case in method.cases(False):
        _agree(method, case)


@pytest.mark.parametrize("name", otm.METHODS)
def test_certificate_is_recomputed_by_the_model(name):
    """Objective = model.objective at the weights; lower bound = the model's Lagrangian bound at
    the returned (alpha, S), which are feasible."""
    H = tree(DEEP)
    X, y = clustered_data(H, n=30, d=4, seed=3)
    if name == "flatmult":
        y = np.array([v if H.is_leaf(v) else next(c for c in H.descendants(v) if H.is_leaf(c))
                      for v in y], dtype=object)
    model = otm.prepare(X, y, H, name)
    C = 3.0
    res = od.solve(model, C, tol=1e-6)
    assert res.converged and res.gap <= 1e-6
    assert res.objective == pytest.approx(model.objective(res.weights, C), rel=1e-10, abs=1e-12)
    d = model.data
    alpha = res.dual
    assert np.all(alpha >= 0)
    used = np.bincount(d.pair_i, weights=alpha * d.pair_cost, minlength=d.n_samples)
    assert np.all(used <= C * d.Cw * (1 + 1e-9) + 1e-12)
    S = res.dual_S
    if name == "orthogonal":
        K = model.K
        assert np.allclose(np.diag(S), np.diag(K))
        assert np.all(np.abs(S) <= K + 1e-12)
        assert np.allclose(S, S.T)
    lb = otm.quadratic_lower_bound(model, alpha, S)
    assert lb == pytest.approx(res.lower_bound, rel=1e-9, abs=1e-10)
    assert model.lower_bound((alpha, S) if name == "orthogonal" else alpha, C) == pytest.approx(
        res.lower_bound, rel=1e-9, abs=1e-10)
    assert relative_gap(res.objective, res.lower_bound) == res.gap
    assert res.converged_by == certified_by(res.objective, res.lower_bound, res.tol, res.at_zero)


@pytest.mark.parametrize("name", ["orthogonal", "treeloss"])
def test_matches_rda(name):
    H = tree(T8)
    X, y = clustered_data(H, n=24, d=3, seed=1)
    model = otm.prepare(X, y, H, name)
    fast = od.solve(model, 2.0, tol=1e-8)
    slow = rda.solve(model, 2.0, tol=1e-5, max_iter=200_000)
    assert fast.converged and slow.converged
    assert fast.objective <= slow.objective * (1 + 1e-8)
    assert fast.objective >= slow.lower_bound * (1 - 1e-9)
    assert slow.objective - fast.objective <= 1e-5 * slow.objective


def test_sparse_X_is_the_dense_problem():
    H = tree(DEEP)
    X, y = clustered_data(H, n=30, d=5, seed=4)
    X[np.abs(X) < 0.7] = 0.0
    dense = od.solve(otm.prepare(X, y, H, "orthogonal"), 1.5, tol=1e-9)
    csr = od.solve(otm.prepare(sp.csr_matrix(X), y, H, "orthogonal"), 1.5, tol=1e-9)
    assert csr.objective == pytest.approx(dense.objective, rel=1e-7)
    assert np.allclose(csr.weights, dense.weights, atol=1e-4)


def test_explicit_K_and_refusals():
    H = tree(T8)
    X, y = clustered_data(H, n=20, d=3, seed=2)
    model = otm.prepare(X, y, H, "orthogonal")
    K = otm.heuristic_K(H, alpha=0.3)
    res = od.solve(model, 1.0, K=K, tol=1e-8)
    ref = od.solve(otm.prepare(X, y, H, "orthogonal", K=K), 1.0, tol=1e-8)
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    assert res.alpha is None and np.array_equal(res.K, K)
    with pytest.raises(hc.InputError, match="does not take it"):
        od.solve(otm.prepare(X, y, H, "transfer"), K=np.eye(7))
    with pytest.raises(hc.InputError, match=r"\(7, 7\)"):
        od.solve(model, K=np.eye(8))
    with pytest.raises(hc.InputError, match="PairModel"):
        od.solve(object())
    for bad in ({"tol": float("nan")}, {"max_iter": 0}, {"n_enter": 0}, {"s_steps": -1},
                {"check_every": 1.5}):
        with pytest.raises(hc.InputError):
            od.solve(model, **bad)


def test_options_are_settings_of_one_call():
    """``options=`` and the keywords set the same fields; a keyword overrides its field; the
    options are frozen and checked when built."""
    H = tree(T8)
    X, y = clustered_data(H, n=20, d=3, seed=2)
    model = otm.prepare(X, y, H, "orthogonal")
    by_options = od.solve(model, 1.0, options=od.Options(tol=1e-8, n_enter=2, s_steps=1, polish=False))
    by_keywords = od.solve(model, 1.0, tol=1e-8, n_enter=2, s_steps=1, polish=False)
    assert by_options.objective == by_keywords.objective and by_options.n_iter == by_keywords.n_iter
    with pytest.warns(ConvergenceWarning):
        overridden = od.solve(model, 1.0, max_iter=3, options=od.Options(tol=1e-12), polish=False)
    assert overridden.n_iter == 3 and not overridden.converged
    with pytest.raises(dataclasses.FrozenInstanceError):
        od.Options().tol = 1.0
    for bad in ({"full_every": 0}, {"blocks": "sometimes"}, {"tol": 0.0}):
        with pytest.raises(hc.InputError):
            od.Options(**bad)
    with pytest.raises(hc.InputError, match="Options"):
        od.solve(model, options={"tol": 1e-3})


def test_one_convergence_warning_when_passes_run_out():
    H = tree(DEEP)
    X, y = clustered_data(H, n=40, d=4, seed=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = od.solve(otm.prepare(X, y, H, "orthogonal"), 10.0, tol=1e-12, max_iter=2)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1 and "passes" in str(conv[0].message)
    assert not res.converged and res.n_iter == 2 and res.gap > 1e-12


def test_tiny_C_is_not_certified_at_zero():
    """With a tiny C the objective at W = 0 is within tol of the bound, but
    the gap is also taken against the decrease from zero."""
    H = tree(T8)
    X, y = clustered_data(H, n=30, d=3, seed=6)
    model = otm.prepare(X, y, H, "orthogonal")
    res = od.solve(model, 1e-6, tol=1e-4)
    assert res.converged and np.any(res.weights)
    big = od.solve(model, 1.0, tol=1e-6)
    pred_small = otm.predict_top_down(res.weights, X, H)
    pred_big = otm.predict_top_down(big.weights, X, H)
    assert np.mean(pred_small == y) >= 0.5 * np.mean(pred_big == y)


def test_block_inverse_matches_numpy():
    rng = np.random.default_rng(0)
    m = 90
    A = np.zeros((m, m))
    for b in (np.arange(0, 5), np.arange(10, 80), np.arange(85, 88)):  # one block > SMALL_BLOCK
        B = rng.standard_normal((len(b), len(b)))
        A[np.ix_(b, b)] = B @ B.T + len(b) * np.eye(len(b))
    A[np.diag_indices(m)] = np.where(np.diag(A) == 0, 2.0, np.diag(A))
    pattern = sp.csr_matrix(A)
    blocks = od.BlockInverse(pattern)
    assert blocks.factor(pattern.data)
    U = rng.standard_normal((m, 3))
    assert np.allclose(blocks.solve(U), np.linalg.solve(A, U))
    bad = pattern.copy()
    bad.data = -bad.data
    assert not blocks.factor(bad.data)
    assert np.allclose(blocks.solve(U), np.linalg.solve(A, U))  # unchanged after a refusal


def test_crammer_singer_step_matches_the_general_step():
    """The closed-form step of a Crammer--Singer-shaped slack against budget_qp on its Hessian."""
    rng = np.random.default_rng(1)
    for trial in range(50):
        n = int(rng.integers(1, 8))
        g = rng.standard_normal(n)
        a0 = np.maximum(rng.standard_normal(n), 0.0) * 0.3
        qn = rng.uniform(0.5, 2.0, n)
        A, q0 = rng.uniform(0.5, 3.0), rng.uniform(0.5, 2.0)
        budget = a0.sum() + rng.uniform(0.0, 1.0)
        out = np.zeros(n)
        assert kern.cs_block(g, a0.copy(), qn, A, q0, budget, n, out)
        Hk = A * (q0 + np.diag(qn))
        a = a0.copy()
        budget_qp(Hk, g.copy(), a, np.ones(n), budget - a0.sum(), n, 1e-13, 100_000)

        def gain(x, g=g, a0=a0, Hk=Hk):
            dx = x - a0
            return g @ dx - 0.5 * dx @ Hk @ dx

        assert np.all(out >= 0) and out.sum() <= budget * (1 + 1e-12)
        assert gain(out) == pytest.approx(gain(a), rel=1e-9, abs=1e-12)


def test_wide_star_has_no_coupled_block():
    """A star: K is diagonal, so S^{-1} is a vector (no dense m x m factorization), every slack
    takes the closed-form step, and the problem converges."""
    H = star(300)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    y = np.array([f"c{i % 3}" for i in range(30)], dtype=object)
    model = otm.prepare(X, y, H, "orthogonal")
    prob = od.Problem(model, 30.0, model.K)
    assert prob.blocks.blocks == [] and prob.cs_slack.all()
    res = od.solve(model, 30.0, tol=1e-4)
    assert res.converged
    assert res.objective == pytest.approx(model.objective(res.weights, 30.0), rel=1e-10)


def test_estimator_defaults_to_dual_cd():
    H = tree(DEEP)
    X, y = clustered_data(H, n=40, d=4, seed=7)
    est = OrthogonalTransferSVC(hierarchy=H).fit(X, y)
    assert est.result_.solver == "orthogonal_dual" and est.gap_ <= 1e-4
    paper = OrthogonalTransferSVC(hierarchy=H, tol=1e-4, max_iter=200_000,
                                  solver_options={"method": "rda"}).fit(X, y)
    assert paper.result_.solver == "rda"
    assert abs(est.objective_ - paper.objective_) <= 2e-4 * paper.objective_
    with pytest.raises(hc.InputError, match="method"):
        OrthogonalTransferSVC(hierarchy=H, solver_options={"method": "nope"}).fit(X, y)


def test_hiermult_node_problems_are_solved_block_by_block():
    """HIERMULT's weight rows split into one block per internal node (its children); no slack
    couples two blocks, so each is solved by the interior point and the whole is certified
    once.  Same optimum as coordinate ascent and as the CVXPY reference; the methods whose
    regularizer or slacks couple all rows stay on coordinate ascent."""
    H = tree(DEEP)
    X, y = clustered_data(H, n=40, d=4, seed=6)
    model = otm.prepare(X, y, H, "hiermult")
    C = 2.0
    prob = od.Problem(model, C, None)
    blocks = od.weight_blocks(prob)
    parents = {H.parents(H.nodes[v])[0] for rows, _ in blocks for v in model.var_nodes[rows]}
    assert len(blocks) == len(parents) and sum(len(s) for _, s in blocks) == prob.n_slacks
    fast = od.solve(model, C, tol=1e-9)
    coord = od.solve(model, C, tol=1e-9, blocks="never", max_iter=50_000)
    ref = ot_ref.primal_from_model(model, C).solve()
    assert fast.extras["route"] == "blocks" and coord.extras["route"] == "coordinate"
    assert fast.converged and fast.gap <= 1e-9
    assert fast.objective == pytest.approx(coord.objective, rel=1e-8)
    np.testing.assert_allclose(fast.weights, coord.weights, atol=1e-4 * np.abs(coord.weights).max())
    assert fast.objective == pytest.approx(model.objective(fast.weights, C), rel=1e-10)
    assert abs(fast.objective - ref.objective) <= 1e-6 * ref.objective + ref.objective - ref.lower_bound
    for name in ("orthogonal", "transfer", "treeloss"):
        assert od.solve(otm.prepare(X, y, H, name), C, tol=1e-6).extras["route"] == "coordinate"
    with pytest.raises(hc.exceptions.InputError, match="blocks"):
        od.solve(model, C, blocks="always")


def test_hiermult_on_a_deep_balanced_tree_converges():
    """The NHSVM balanced tree (depth 6) at the estimator's C: coordinate ascent crawls
    (gap 1.5e-3 after 5000 passes at n = 1000, d = 50; 2.2e-3 after 20000 at the Zhou
    comparison's n = 5000, d = 200), the node problems by the interior point certify."""
    ds = make_nhsvm_balanced(n_samples=300, n_features=20, depth=6, random_state=1)
    X = (ds.X - ds.X.mean(axis=0)) / ds.X.std(axis=0)
    est = OrthogonalTransferSVC(hierarchy=ds.hierarchy, method="hiermult", tol=1e-6).fit(X, ds.y)
    assert est.result_.extras["route"] == "blocks" and est.gap_ <= 1e-6
    with pytest.warns(ConvergenceWarning):
        slow = od.solve(est.result_.extras["model"], est.C * len(X), tol=1e-6, blocks="never",
                        max_iter=300)
    assert slow.objective >= est.result_.objective * (1 - 1e-9)


def test_hiermult_blocks_on_merged_negatives():
    """Unlabelled siblings are merged into one row by the reduction (its S entry is the group's
    size, not 1): the blocks route rescales that row and certifies the same optimum as
    coordinate ascent and the CVXPY reference."""
    spec = {"r": None, "a": "r", "b": "r", **{f"a{i}": "a" for i in range(1, 7)},
            "b1": "b", "b2": "b"}
    H = tree(spec)
    rng = np.random.default_rng(2)
    labels = np.array(["a1", "a2", "b1", "b2"], dtype=object)[rng.integers(0, 4, 40)]
    X = rng.standard_normal((40, 3)) + np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]])[
        np.searchsorted(["a1", "a2", "b1", "b2"], labels)]
    model = otm.prepare(X, labels, H, "hiermult")
    reduced = otm.reduce_model(model, model.S)
    assert reduced is not None and not np.allclose(sp.csr_matrix(reduced.model.S).diagonal(), 1.0)
    C = 5.0
    fast = od.solve(model, C, tol=1e-9)
    coord = od.solve(model, C, tol=1e-9, blocks="never", max_iter=100_000)
    ref = ot_ref.primal_from_model(model, C).solve()
    assert fast.extras["route"] == "blocks" and fast.converged
    assert fast.objective == pytest.approx(coord.objective, rel=1e-7)
    assert abs(fast.objective - ref.objective) <= 1e-6 * ref.objective + ref.objective - ref.lower_bound
    assert fast.objective == pytest.approx(model.objective(fast.weights, C), rel=1e-10)


def test_flatmult_is_solved_by_the_crammer_singer_solver():
    """FLATMULT is Crammer-Singer's problem on the leaves: the margin engine's solver takes it
    and the whole is certified here; the same optimum as coordinate ascent and the reference."""
    H = tree(T8)
    X, y = clustered_data(H, n=40, d=3, seed=8)
    y = np.array([v if H.is_leaf(v) else next(c for c in H.descendants(v) if H.is_leaf(c))
                  for v in y], dtype=object)
    for fit_intercept in (False, True):
        model = otm.prepare(X, y, H, "flatmult", fit_intercept=fit_intercept)
        C = 4.0
        fast = od.solve(model, C, tol=1e-9)
        coord = od.solve(model, C, tol=1e-9, blocks="never", max_iter=100_000)
        ref = ot_ref.primal_from_model(model, C).solve()
        assert fast.extras["route"] == "crammer_singer" and fast.converged and fast.gap <= 1e-9
        assert fast.objective == pytest.approx(coord.objective, rel=1e-7)
        assert abs(fast.objective - ref.objective) <= 1e-6 * ref.objective + ref.objective - ref.lower_bound
        assert fast.objective == pytest.approx(
            model.objective(fast.weights, C, intercept=fast.extras.get("intercept")), rel=1e-10)


def test_the_history_counts_passes_for_the_warnings_rate():
    """Certificates at most every third pass: the history's n_iter holds the pass of each, so the
    ConvergenceWarning's rate is per pass, not per certificate."""
    ds = make_nhsvm_balanced(n_samples=120, n_features=10, depth=3, random_state=0)
    model = otm.prepare(ds.X, ds.y, ds.hierarchy, "orthogonal")
    with pytest.warns(ConvergenceWarning, match="stopped after 9 passes"):
        res = od.solve(model, C=1.0, tol=1e-14, max_iter=9, check_every=3, polish=False,
                       blocks="never")
    passes = np.asarray(res.history["n_iter"])
    assert passes[0] == 0 and passes[-1] == res.n_iter == 9 and np.all(np.diff(passes) >= 3)
    assert len(passes) == len(res.history["gap"])
