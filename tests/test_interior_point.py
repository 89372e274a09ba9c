"""The interior-point method of the margin family (:mod:`hiercvx.solvers.interior_point`).

The registry's tests (test_against_reference.py) compare it with the CVXPY references on every
built-in problem of Crammer–Singer and the hierarchical SVM.  Here: the options the registry's
cases do not reach (kernels, class kernels, zero weights, extreme C, random labels), its dual
point, its agreement with the working-set solver, and its refusals.
"""

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hiercvx import methods, testing
from sklearn.exceptions import ConvergenceWarning

from hiercvx.exceptions import InputError
from hiercvx.formulations import hsvm as hsvm_ref
from hiercvx.methods.cases import TREE, problem
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin as _margin
from hiercvx.models import multiclass as mc_model
from hiercvx.solvers import interior_point, working_set


def _tree(n=40, d=4, seed=0):
    return problem("tree", n=n, d=d, seed=seed)


def _agrees(model, C, ref_objective, rtol=1e-6):
    res = interior_point.solve(model, C=C, tol=1e-9)
    assert res.converged and res.gap <= 1e-9
    assert res.objective == pytest.approx(ref_objective, rel=rtol, abs=1e-9)
    # the certificate is the model's own: recomputed objective and a valid bound
    assert res.objective == pytest.approx(model.objective(res.weights, C), rel=1e-12)
    assert res.lower_bound <= ref_objective * (1 + 1e-9) + 1e-12
    return res


@pytest.mark.parametrize("options", [{"kernel": "rbf", "sigma": 1.5}, {"rescaling": "margin"},
                                     {"loss": "zero_one", "attributes": "indicator"}])
def test_hsvm_options_match_the_reference(options):
    X, Y, H = _tree()
    model = hsvm_model.prepare(X, Y, H, **options)
    build = hsvm_ref.dual_from_model if not model.node_weights else hsvm_ref.primal_from_model
    ref = build(model, C=1.0).solve()
    _agrees(model, 1.0, ref.objective)


def test_precomputed_kernel_and_class_kernel():
    X, Y, H = _tree()
    K = X @ X.T + 1.0
    model = hsvm_model.prepare(K, Y, H, kernel="precomputed")
    ref = hsvm_ref.dual_from_model(model, C=2.0).solve()
    _agrees(model, 2.0, ref.objective)
    Qc = np.eye(len(H.leaves)) + 0.5
    model = hsvm_model.prepare(X, Y, H, class_kernel=Qc)
    ref = hsvm_ref.dual_from_model(model, C=1.0).solve()
    _agrees(model, 1.0, ref.objective)


@pytest.mark.parametrize("C", [1e-4, 1e3])
def test_extreme_C(C):
    X, Y, H = _tree(seed=3)
    model = hsvm_model.prepare(X, Y, H)
    ref = hsvm_ref.primal_from_model(model, C=C).solve()
    _agrees(model, C, ref.objective, rtol=1e-5)


def test_zero_sample_weights_and_sparse_input():
    X, Y, H = _tree(n=30)
    w = np.ones(30)
    w[::4] = 0.0
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    model = hsvm_model.prepare(Xs, Y, H, sample_weight=w)
    ref = hsvm_ref.primal_from_model(model, C=1.0).solve()
    res = _agrees(model, 1.0, ref.objective)
    # examples with no budget keep alpha = 0 (thesis (4.13) with C_i = 0)
    assert np.all(res.dual[np.isin(model.data.pair_i, np.flatnonzero(w == 0))] == 0)


def test_random_labels_agree_with_working_set_and_reference():
    """The regime the method is for: labels independent of X, most examples support vectors."""
    rng = np.random.default_rng(5)
    X, _, H = _tree(n=120, d=5)
    Y = np.array(TREE.leaves, dtype=object)[rng.integers(0, len(TREE.leaves), 120)]
    model = hsvm_model.prepare(X, Y, H)
    ref = hsvm_ref.primal_from_model(model, C=1.0).solve()
    ipm = _agrees(model, 1.0, ref.objective)
    ws = working_set.solve(model, C=1.0, tol=1e-9, max_iter=100000)
    assert ws.objective == pytest.approx(ipm.objective, rel=1e-7)
    testing.assert_fast_matches_reference(ipm, ref, rtol=1e-6)


def test_dual_point_is_feasible_and_bounds_every_primal_point():
    X, Y, H = _tree(seed=2)
    model = hsvm_model.prepare(X, Y, H)
    res = interior_point.solve(model, C=0.7, tol=1e-8)
    alpha, data = res.dual, model.data
    assert alpha.shape == (data.n_pairs,) and np.all(alpha >= 0)
    used = np.bincount(data.pair_i, weights=data.pair_cost * alpha, minlength=data.n_samples)
    assert np.all(used <= 0.7 * data.Cw * (1 + 1e-12))
    # weak duality against primal points other than the optimum
    rng = np.random.default_rng(0)
    for _ in range(5):
        W = res.weights + 0.1 * rng.standard_normal(res.weights.shape)
        assert model.objective(W, 0.7) >= res.lower_bound
    G = _margin.coefficients(alpha, data)
    assert np.allclose(res.coefficients, G)


def test_on_a_subset_of_examples_certifies_on_the_full_model():
    """``examples``: the others get ``alpha = 0``; the answer is the restricted problem's
    optimum, its certificate the full model's; on the examples that carry support at the
    optimum it is the full optimum (what the coordinate solvers' support step relies on)."""
    X, Y, H = _tree(n=60, seed=3)
    model = hsvm_model.prepare(X, Y, H)
    data = model.data
    full = interior_point.solve(model, C=1.0, tol=1e-10)
    some = np.arange(0, data.n_samples, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        part = interior_point.solve(model, C=1.0, tol=1e-10, examples=some, warn=False)
    assert not caught
    outside = ~np.isin(data.pair_i, some)
    assert np.all(part.dual[outside] == 0.0)
    assert part.lower_bound == pytest.approx(model.lower_bound(part.dual, 1.0), rel=1e-12)
    assert part.objective == pytest.approx(model.objective(part.weights, 1.0), rel=1e-12)
    assert part.lower_bound <= full.objective * (1 + 1e-10) <= part.objective * (1 + 1e-10)
    # the restricted problem's optimum: its own CVXPY reference on those examples
    sub = hsvm_model.prepare(X[some], [Y[i] for i in some], H)
    ref = hsvm_ref.primal_from_model(sub, C=1.0).solve()
    assert sub.objective(part.weights, 1.0) == pytest.approx(ref.objective, rel=1e-7)
    # on the examples with support at the optimum: the optimum
    support = np.unique(data.pair_i[full.dual > 1e-8 * full.dual.max()])
    assert support.size < data.n_samples
    again = interior_point.solve(model, C=1.0, tol=1e-10, examples=support)
    assert again.converged and again.objective == pytest.approx(full.objective, rel=1e-9)
    with pytest.raises(InputError, match="examples must index"):
        interior_point.solve(model, examples=[data.n_samples])


def test_crammer_singer_with_intercept_matches_the_dedicated_solver():
    X, y, _ = problem("flat", n=60, d=3, seed=4)
    model = mc_model.prepare(X, y, fit_intercept=True, intercept_scaling=2.0)
    cs = methods.get("multiclass").fast_solvers["crammer_singer"].solve(model, C=1.0, tol=1e-10)
    ipm = interior_point.solve(model, C=1.0, tol=1e-10)
    assert ipm.weights.shape == cs.weights.shape and ipm.intercept.shape == cs.intercept.shape
    assert ipm.objective == pytest.approx(cs.objective, rel=1e-8)
    assert model.objective(ipm.weights, 1.0, intercept=ipm.intercept) == pytest.approx(
        ipm.objective, rel=1e-12)


def test_not_converged_warns_once_and_reports_the_best_certified_point():
    X, Y, H = _tree()
    model = hsvm_model.prepare(X, Y, H)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = interior_point.solve(model, C=1.0, tol=1e-12, max_iter=3)
    assert not res.converged and res.gap > 1e-12
    assert [w.category for w in caught] == [ConvergenceWarning]
    assert res.objective == pytest.approx(model.objective(res.weights, 1.0))
    assert res.lower_bound <= res.objective


def test_refusals_and_applicability():
    X, Y, H = _tree()
    model = hsvm_model.prepare(X, Y, H)
    assert interior_point.applicable(model)
    assert not interior_point.applicable(object())
    with pytest.raises(InputError, match="margin model"):
        interior_point.solve(object())
    with pytest.raises(ValueError):
        interior_point.solve(model, C=-1.0)
    with pytest.raises(ValueError):
        interior_point.solve(model, tol=float("nan"))


def test_more_features_than_samples_runs_on_the_gram_factor():
    """d > n: the primal dimension is q * n (features from the Gram matrix), not q * d."""
    X, Y, H = _tree(n=30)
    rng = np.random.default_rng(1)
    wide = sp.csr_matrix(np.hstack([X, 0.3 * rng.standard_normal((30, 200))]))
    model = hsvm_model.prepare(wide, Y, H)
    assert interior_point.applicable(model)
    ref = hsvm_ref.primal_from_model(model, C=1.0).solve()
    res = _agrees(model, 1.0, ref.objective)
    assert res.weights.shape == ref.weights.shape
    small = interior_point.Options(max_dimension=50)
    assert not interior_point.applicable(model, small)
    with pytest.raises(InputError, match="working-set"):
        interior_point.solve(model, options=small)


# --- the margin engine ------------------------------------------------------------------------

def test_engine_choice_and_fallbacks():
    from hiercvx.solvers import margin_engine
    X, Y, H = _tree()
    model = hsvm_model.prepare(X, Y, H)
    assert margin_engine.choose(model) == "interior_point"
    assert margin_engine.choose(model, warm=True) == "working_set"
    flat = mc_model.prepare(*problem("flat", n=40, d=3, seed=0)[:2])
    assert margin_engine.choose(flat, warm=True) == "crammer_singer"
    ref = hsvm_ref.primal_from_model(model, C=1.0).solve()
    for solver in margin_engine.SOLVERS[:2] + ("working_set",):
        res = margin_engine.solve(model, 1.0, solver=solver, tol=1e-9, max_iter=100000)
        assert res.converged and res.objective == pytest.approx(ref.objective, rel=1e-6)
    warm = margin_engine.solve(model, 1.0, tol=1e-9, alpha0=res.dual, max_iter=100000)
    assert warm.solver == "working_set" and warm.converged
    with pytest.raises(InputError, match="solver must be"):
        margin_engine.solve(model, solver="newton")
    with pytest.raises(InputError, match="margin model"):
        margin_engine.solve(object())


def test_engine_tries_the_coordinate_method_first_on_expensive_newton_steps(monkeypatch):
    """Above ``try_coordinates_above`` the coordinate method goes first (ski rental): an easy
    problem ends there; a noisy one whose support is degenerate after the probe's passes
    switches then; a non-degenerate one switches once its passes spent the interior point's
    predicted time.  No warning either way."""
    from hiercvx.solvers import margin_dual, margin_engine
    calls = []
    solve_ws = margin_engine.working_set.solve

    def spy(model, C, **options):
        res = solve_ws(model, C, **options)
        calls.append(res)
        return res

    monkeypatch.setattr(margin_engine.working_set, "solve", spy)
    X, Y, H = _tree(n=40)
    easy = hsvm_model.prepare(10 * X, Y, H)  # well separated: few support vectors
    # the coordinate method first, with a budget of many passes
    opts = margin_engine.Options(try_coordinates_above=0.0, newton_steps=10 ** 4)
    res = margin_engine.solve(easy, 1.0, tol=1e-8, options=opts)
    assert res.solver == "working_set" and res.converged
    ref = hsvm_ref.primal_from_model(easy, C=1.0).solve()
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)

    rng = np.random.default_rng(0)
    noisy = hsvm_model.prepare(rng.standard_normal((300, 2)),
                               np.array(TREE.leaves, dtype=object)[rng.integers(0, 5, 300)], H)
    dim = noisy.data.n_classes * interior_point.feature_dimension(noisy)
    noisy_ref = hsvm_ref.primal_from_model(noisy, C=1.0).solve()

    # on a problem this small the support step's primal form (the interior point on the
    # examples with support) is cheap and finishes the probe itself
    res = margin_engine.solve(noisy, 1.0, tol=1e-9, options=opts)
    assert res.solver == "working_set" and res.converged and res.extras["n_newton"] >= 1
    assert res.objective == pytest.approx(noisy_ref.objective, rel=1e-7)
    # the switch, as on problems where that form is as dear as the interior point itself
    no_primal = margin_dual.Options(interior_point=interior_point.Options(max_dimension=0))
    opts = dataclasses.replace(opts, working_set=working_set.Options(dual=no_primal))

    def coordinates_then_interior_point(opts):
        """The one coordinate run before the engine switched (no warning on the way), and the
        interior point's answer against the reference."""
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = margin_engine.solve(noisy, 1.0, tol=1e-9, options=opts)
        assert res.solver == "interior_point" and res.converged
        assert res.objective == pytest.approx(noisy_ref.objective, rel=1e-7)
        (first,) = calls
        return first

    # stopped at the first certificate after the probe: a degenerate support
    probe = coordinates_then_interior_point(opts)
    assert opts.probe_passes <= probe.n_iter < opts.probe_passes + 50
    assert np.count_nonzero(probe.dual > 0) > opts.degenerate_support * dim
    per_pass = probe.extras["pass_work"] / probe.n_iter

    # not judged degenerate: passes until they spent the interior point's predicted time
    budget = 300 * per_pass  # about 300 passes' worth
    opts = dataclasses.replace(opts, degenerate_support=np.inf,
                               newton_steps=budget * opts.pass_work_speedup
                               / interior_point.step_cost(noisy))
    first = coordinates_then_interior_point(opts)
    assert not first.converged and first.extras["pass_work"] >= budget
    assert first.n_iter < 400


def test_coordinate_solvers_stop_when_asked():
    """``stop_when`` is asked at every certificate short of tol with the passes so far, their
    counted work and the dual point; True ends the solve there (unconverged, one warning)."""
    from hiercvx.solvers import crammer_singer, working_set
    X, Y, H = _tree(n=60)
    flat = mc_model.prepare(*problem("flat", n=60, d=3, seed=0)[:2])
    for solve, model in ((working_set.solve, hsvm_model.prepare(X, Y, H)),
                         (crammer_singer.solve, flat)):
        seen = []

        def stop_when(n_iter, work, alpha):
            seen.append((n_iter, work, alpha.copy()))
            return n_iter >= 10  # both solvers converge later (hsvm: pass 21, Crammer-Singer: 97)

        with pytest.warns(ConvergenceWarning):
            res = solve(model, 1.0, tol=1e-14, check_every=10, stop_when=stop_when)
        assert not res.converged and res.n_iter == seen[-1][0] >= 10
        assert [s[0] for s in seen] == sorted(s[0] for s in seen)
        assert seen[-1][1] == res.extras["pass_work"] > seen[0][1] >= 0
        assert seen[-1][2].shape == (model.data.n_pairs,)


def test_every_engine_solver_on_crammer_singer_with_intercept():
    """The working-set solver on a Crammer-Singer model splits off the bias column too."""
    from hiercvx.solvers import margin_engine
    X, y, _ = problem("flat", n=50, d=3, seed=2)
    model = mc_model.prepare(X, y, fit_intercept=True, intercept_scaling=1.5)
    results = [margin_engine.solve(model, 1.0, solver=s, tol=1e-9, max_iter=100000)
               for s in margin_engine.SOLVERS]
    for res in results:
        assert res.converged and res.weights.shape == (5, 3) and res.intercept.shape == (5,)
        assert res.objective == pytest.approx(results[0].objective, rel=1e-7)
        assert model.objective(res.weights, 1.0, intercept=res.intercept) == pytest.approx(
            res.objective, rel=1e-10)


# --- generated problems: the interior point, the working set and the reference agree -----------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from strategies import label_samples, trees  # noqa: E402


@st.composite
def margin_problems(draw):
    """A small tree with at least two leaves, leaf labels (single or sets), features (dense or
    integer-valued, ties and duplicates allowed), options and C over six decades."""
    H = draw(trees(min_nodes=3, max_nodes=9, allow_forest=False).filter(
        lambda H: len(H.leaves) >= 2))
    n = draw(st.integers(2, 14))
    Y = draw(label_samples(H, n_samples=n, leaves_only=True, max_set=2))
    if any(len(y) == len(H.leaves) for y in Y if isinstance(y, frozenset)):
        Y = [next(iter(y)) if isinstance(y, frozenset) else y for y in Y]
    d = draw(st.integers(1, 4))
    X = np.array(draw(st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d),
                               min_size=n, max_size=n)), dtype=float)
    options = {"rescaling": draw(st.sampled_from(["slack", "margin"]))}
    if draw(st.booleans()):
        options["sample_weight"] = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]),
                                                          min_size=n, max_size=n)))
    C = draw(st.sampled_from([1e-3, 0.1, 1.0, 10.0, 1e3]))
    return X, Y, H, options, C


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(margin_problems())
def test_interior_point_agrees_with_working_set_on_generated_problems(problem_):
    X, Y, H, options, C = problem_
    model = hsvm_model.prepare(X, Y, H, **options)
    ipm = interior_point.solve(model, C=C, tol=1e-9)
    ws = working_set.solve(model, C=C, tol=1e-9, max_iter=200000)
    assert ipm.converged, ipm
    scale = max(abs(ws.objective), 1e-12)
    assert abs(ipm.objective - ws.objective) <= 2e-7 * scale + 1e-12
    # weak duality across the two solvers
    assert ipm.lower_bound <= ws.objective * (1 + 1e-9) + 1e-12
    assert ws.lower_bound <= ipm.objective * (1 + 1e-9) + 1e-12


# ------------------------------------------------------------------ low-rank kernel factors
def _two_dimensional(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    leaves = TREE.leaves
    Y = [frozenset([leaves[i]]) for i in rng.integers(0, len(leaves), n)]
    return X, Y


def test_low_rank_factor_reproduces_the_kernel_or_says_none():
    X, _ = _two_dimensional(300)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 2.0)
    F = interior_point.low_rank_factor(K, max_rank=300)
    assert F is not None and F.shape[1] < 150  # a smooth kernel on 2-D inputs
    R = K - F @ F.T
    rtol = interior_point.Options().low_rank_rtol
    assert np.trace(R) <= rtol * np.trace(K) * (1 + 1e-6) + 1e-12
    assert np.linalg.eigvalsh(R).min() >= -1e-9  # the dropped residual is PSD
    assert interior_point.low_rank_factor(K, max_rank=F.shape[1] - 5) is None
    assert interior_point.low_rank_factor(np.eye(50), max_rank=49) is None
    assert interior_point.low_rank_factor(np.eye(50), max_rank=50).shape == (50, 50)
    assert interior_point.low_rank_factor(np.zeros((5, 5)), max_rank=5) is None


def test_a_low_rank_kernel_runs_in_its_rank_and_matches_the_reference():
    """An RBF kernel on 2-D inputs: the Newton step works in q x rank(K) (not q x n), so the
    method applies where q x n is above ``max_dimension``, and its certified optimum is the
    reference's (the certificate is evaluated on the model's own kernel)."""
    X, Y = _two_dimensional(120, seed=1)
    model = hsvm_model.prepare(X, Y, TREE, kernel="rbf", sigma=1.0, fit_intercept=True)
    rank = interior_point.feature_dimension(model)
    assert rank < 100
    ref = hsvm_ref.dual_from_model(model, C=100.0).solve()
    _agrees(model, 100.0, ref.objective, rtol=1e-6)
    wide = hsvm_model.prepare(*_two_dimensional(1500, seed=2), TREE, kernel="rbf", sigma=1.0)
    assert wide.data.n_classes * 1500 > interior_point.Options().max_dimension
    assert interior_point.applicable(wide)


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_explicit_pair_rows_solve_the_margin_model_they_spell_out(rescaling):
    # the same hierarchical SVM, once through the class factor and once with every pair's row
    # Lam_y - Lam_ybar written out: the same optimum, and a certificate valid for both
    X, y, H = problem("tree", n=60, d=3, seed=4)
    rng = np.random.default_rng(4)
    y = rng.permutation(y)  # random labels: most examples are support vectors
    model = hsvm_model.prepare(X, y, H, rescaling=rescaling)
    C = 2.0
    ref = interior_point.solve(model, C=C, tol=1e-10)
    data = model.data
    R = data.Lam[data.pair_y] - data.Lam[data.pair_ybar]
    rows = interior_point.solve_pair_rows(np.asarray(X), R, data.pair_ptr, data.pair_offset,
                                          data.pair_cost, C * data.Cw, tol=1e-10)
    assert rows.converged and rows.gap <= 1e-10
    assert rows.objective == pytest.approx(ref.objective, rel=1e-8)
    # the rows' w is the node weights: the model recomputes the same objective at it
    assert model.objective(rows.weights, C) == pytest.approx(rows.objective, rel=1e-10)
    assert model.lower_bound(rows.dual, C) == pytest.approx(rows.lower_bound, rel=1e-10)
    assert rows.lower_bound <= ref.objective * (1 + 1e-12)


def test_explicit_pair_rows_refuse_inconsistent_shapes():
    F = np.ones((2, 2))
    with pytest.raises(InputError, match="pair rows"):
        interior_point.solve_pair_rows(F, np.ones((3, 2)), np.array([0, 1, 3]), np.ones(2),
                                       np.ones(3), np.ones(2))


def test_explicit_pair_rows_with_an_example_without_pairs():
    # a cutting plane's master before the example's first cut: it takes no budget, raises
    # no warning, and the others' optimum is unchanged (one pair: w = C a / ... by hand)
    F = np.array([[1.0, 0.0], [0.0, 2.0]])
    R = np.array([[1.0], [1.0]])          # one node: two pairs of example 1 (x = (0, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = interior_point.solve_pair_rows(F, R, np.array([0, 0, 2]), np.array([1.0, 0.5]),
                                             np.ones(2), np.array([1.0, 1.0]), tol=1e-12)
    # min 1/2 ||w||^2 + max(0, 1 - 2 w_2): w = (0, 1/2) meets the margin at cost 1/8 < 1
    np.testing.assert_allclose(res.weights, [[0.0, 0.5]], atol=1e-7)
    assert res.objective == pytest.approx(0.125, rel=1e-9) and res.gap <= 1e-9


@pytest.mark.parametrize("n, r, d", [(300, 2, 60), (200, 5, 70), (150, 12, 60), (100, 3, 10)])
def test_pair_rows_newton_matrix_by_products_and_by_triangles(n, r, d):
    """``I + sum_i T_i (x) F_i F_i^T``: one product per entry of the T's (few rows, many
    features) and the per-example triangles give the same matrix, and both match the sum."""
    rng = np.random.default_rng(n + r)
    counts = rng.integers(1, 4, n)
    ptr = np.r_[0, np.cumsum(counts)]
    P = int(ptr[-1])
    R = sp.random(P, r, density=0.6, random_state=r, format="csr")
    F = rng.standard_normal((n, d))
    prob = interior_point.PairRows(F, R, ptr, np.ones(P), rng.random(P) + 0.5, np.ones(n))
    D, cD, delta = rng.random(P), rng.random(P), rng.random(n) + 1.0
    H_auto, V_auto = prob.newton_matrix(D, cD, delta)
    triangles = interior_point.PairRows(F, R, ptr, np.ones(P), prob.c, np.ones(n),
                                        options=interior_point.Options(gemm_min_features=10 ** 9))
    H_tri, V_tri = triangles.newton_matrix(D, cD, delta)
    np.testing.assert_allclose(H_auto, H_tri, atol=1e-11)
    np.testing.assert_array_equal(V_auto, V_tri)
    # the definition, example by example
    Rd = R.toarray()
    H = np.eye(r * d)
    for i in range(n):
        rows = slice(ptr[i], ptr[i + 1])
        v = Rd[rows].T @ cD[rows]
        T = Rd[rows].T @ (D[rows, None] * Rd[rows]) - np.outer(v, v) / delta[i]
        H += np.kron(T, np.outer(F[i], F[i]))
    np.testing.assert_allclose(H_auto, H, atol=1e-9)


def test_features_in_raw_units_certify_through_a_regularized_newton_matrix():
    """``X x 1e6``: round-off makes the Newton matrix indefinite near the optimum; the shifted
    factorization keeps stepping, and the answer is certified on the user's problem (the same
    optimum as the standardized problem at ``C s^2``, scaled by ``1 / s^2``)."""
    X, Y, H = problem("tree", n=40, d=4, seed=0)
    scaled = hsvm_model.prepare(X * 1e6, Y, H)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sol = interior_point.solve(scaled, 1.0)
    assert sol.converged and sol.gap <= 1e-8
    assert sol.objective == pytest.approx(_margin.primal_objective(sol.weights, scaled.X, scaled.data, 1.0))
    same = interior_point.solve(hsvm_model.prepare(X, Y, H), 1e12)
    assert sol.objective == pytest.approx(same.objective / 1e12, rel=1e-6)


def test_a_newton_matrix_that_will_not_factorize_stops_with_the_true_reason(monkeypatch):
    """A stop by round-off is not reported as a spent budget: no 'raise max_iter'."""
    X, Y, H = problem("tree", n=30, d=3, seed=1)
    model = hsvm_model.prepare(X, Y, H)

    def indefinite(self, *args):
        H_, V = original(self, *args)
        return -np.eye(H_.shape[0]), V

    original = interior_point._Factored.newton_matrix
    monkeypatch.setattr(interior_point._Factored, "newton_matrix", indefinite)
    with pytest.warns(ConvergenceWarning) as record:
        sol = interior_point.solve(model, 1.0)
    text = " ".join(str(w.message) for w in record)
    assert not sol.converged and "positive definiteness" in text and "raise max_iter" not in text
    assert sol.lower_bound <= sol.objective


@pytest.mark.parametrize("steps", [1, 2, 4])
def test_the_iterate_after_the_last_step_is_certified(steps):
    """Stopped at max_iter, the interior point certifies the iterate its last Newton step made
    (no step is taken and thrown away): the history's last record is after ``steps`` steps and
    its gap is the one a longer run records there."""
    X, y, H = problem("tree", n=60, d=4, seed=3)
    model = hsvm_model.prepare(X, y, H)
    longer = interior_point.solve(model, C=1.0, tol=1e-12, max_iter=steps + 5, warn=False)
    with pytest.warns(ConvergenceWarning, match=f"stopped after {steps} Newton steps"):
        res = interior_point.solve(model, C=1.0, tol=1e-12, max_iter=steps)
    assert res.history["n_iter"] == list(range(steps + 1)) and res.n_iter == steps
    assert res.history["gap"][-1] == pytest.approx(longer.history["gap"][steps], rel=1e-12)
    assert res.gap <= min(res.history["gap"]) * (1 + 1e-12)
