"""The kernel margin model solved on a pivoted-Cholesky factor of its kernel
(hiercvx.solvers.low_rank_kernel, taken by the margin engine at its entry)."""

import numpy as np
import pytest

from hiercvx.datasets.synthetic import make_cai_synthetic
from hiercvx.exceptions import InputError
from hiercvx.models import hsvm
from hiercvx.solvers import low_rank_kernel as lrk
from hiercvx.solvers import margin_engine


def _model(n=60, seed=0, **kw):
    ds = make_cai_synthetic(n, 5, random_state=seed)
    kw.setdefault("fit_intercept", True)
    return hsvm.prepare(ds.X, ds.y, ds.hierarchy, kernel="rbf", **kw), ds


def _options(**low_rank):
    low_rank = {"from_samples": 0, "exact_when_affordable": False, **low_rank}
    return margin_engine.Options(low_rank=lrk.Options(**low_rank))


EXACT = margin_engine.Options(low_rank=lrk.Options(from_samples=None))


def test_pivoted_cholesky_reproduces_pivot_columns_and_leaves_psd_residual():
    model, _ = _model()
    K = model.K
    kf = lrk.factor(model, lrk.Options(rtol=1e-2))
    assert 0 < kf.rank < K.shape[0]
    assert kf.relative_residual <= 1e-2
    np.testing.assert_allclose(K[:, kf.pivots], kf.L @ kf.L[kf.pivots].T, atol=1e-10)
    R = K - kf.L @ kf.L.T
    assert np.linalg.eigvalsh(R).min() > -1e-10
    assert np.trace(R) == pytest.approx(kf.residual_trace, abs=1e-8)


def test_full_rank_factor_gives_the_exact_kernel_solution():
    model, ds = _model()
    exact = margin_engine.solve(model, 1.0, tol=1e-9, options=EXACT)
    assert "kernel_approximation" not in exact.extras
    low = margin_engine.solve(model, 1.0, tol=1e-9, options=_options(rtol=1e-12))
    ka = low.kernel_approximation
    assert ka.rank == model.data.n_samples
    assert low.objective == pytest.approx(exact.objective, rel=1e-6)
    assert ka.gap < 1e-6
    np.testing.assert_allclose(model.scores(low.weights, ds.X), model.scores(exact.weights, ds.X),
                               atol=1e-4 * np.abs(model.scores(exact.weights, ds.X)).max())


def test_approximation_error_shrinks_with_rank():
    model, _ = _model()
    exact = margin_engine.solve(model, 1.0, tol=1e-9, options=EXACT).objective
    ranks, excess = [], []
    for rtol in (0.3, 0.1, 1e-2, 1e-4):
        res = margin_engine.solve(model, 1.0, tol=1e-9, options=_options(rtol=rtol))
        ka = res.kernel_approximation
        # the exact problem's optimum lies between the returned bounds
        assert ka.lower_bound <= exact * (1 + 1e-7) and exact <= res.objective * (1 + 1e-7)
        ranks.append(ka.rank)
        excess.append(res.objective - exact)
    assert ranks == sorted(ranks) and ranks[0] < ranks[-1]
    assert all(a >= b - 1e-6 * exact for a, b in zip(excess, excess[1:]))
    assert excess[-1] < 1e-2 * excess[0]


def test_predictions_are_kernel_rows_against_the_pivots_through_the_factor():
    model, ds = _model()
    res = margin_engine.solve(model, 1.0, tol=1e-8, options=_options(rtol=1e-2))
    G = res.weights
    pivots = res.kernel_pivots
    assert np.all(G[np.setdiff1d(np.arange(G.shape[0]), pivots)] == 0)
    # the exact kernel model at G has the rank-r problem's objective (pivot columns exact)
    assert model.objective(G, 1.0) == pytest.approx(res.objective, rel=1e-8)
    kf = lrk.factor(model, lrk.Options(rtol=1e-2))
    X_new = make_cai_synthetic(20, 5, random_state=1).X
    phi = np.linalg.solve(np.tril(kf.L[kf.pivots]), model.kernel_rows(X_new)[:, kf.pivots].T).T
    twin = lrk.linear_twin(model, kf)
    W = np.asarray(model.data.Lam).T @ (G[kf.pivots].T @ np.tril(kf.L[kf.pivots]))  # Lam^T B
    np.testing.assert_allclose(model.scores(G, X_new), twin.scores(W, phi), atol=1e-8)


def test_applies_only_to_large_kernel_models_with_class_attributes():
    model, ds = _model()
    never = lambda m: False  # noqa: E731
    assert not lrk.applies(model, lrk.Options(), never)                     # 60 < from_samples
    assert lrk.applies(model, lrk.Options(from_samples=0), never)
    assert not lrk.applies(model, lrk.Options(from_samples=0), lambda m: True)
    linear = hsvm.prepare(ds.X, ds.y, ds.hierarchy)
    assert not lrk.applies(linear, lrk.Options(from_samples=0), never)
    with pytest.raises(InputError):
        lrk.solve(linear, 1.0, lambda m: None)


@pytest.mark.parametrize("bad", [dict(rtol=-1e-3), dict(rtol=1.0), dict(max_rank=0),
                                 dict(from_samples=-1), dict(block_rows=0)])
def test_options_refuse_bad_settings(bad):
    with pytest.raises(InputError):
        lrk.Options(**bad)


def test_estimator_fits_on_the_factor_and_reports_the_approximation():
    from hiercvx.estimators import HierarchicalSVC

    ds = make_cai_synthetic(80, 5, random_state=2)
    est = HierarchicalSVC(hierarchy=ds.hierarchy, kernel="rbf", tol=1e-6,
                          solver_options=_options(rtol=1e-2)).fit(ds.X, ds.y)
    ka = est.result_.kernel_approximation
    assert 0 < ka.rank < 80 and ka.relative_residual <= 1e-2
    exact = HierarchicalSVC(hierarchy=ds.hierarchy, kernel="rbf", tol=1e-6,
                            solver_options=EXACT).fit(ds.X, ds.y)
    assert exact.objective_ <= est.objective_ * (1 + 1e-6)
    assert est.objective_ - exact.objective_ <= 0.05 * exact.objective_
    S = est.node_decision_function(ds.X)
    assert S.shape == (80, len(ds.hierarchy.nodes)) and np.all(np.isfinite(S))


def test_verbose_reports_the_factor_on_the_log_not_on_stdout(capsys, caplog):
    model, _ = _model()
    solve_linear = lambda m: margin_engine.solve(m, 1.0, tol=1e-6, options=EXACT)  # noqa: E731
    with caplog.at_level("INFO", logger="hiercvx.solvers.low_rank_kernel"):
        lrk.solve(model, 1.0, solve_linear, options=lrk.Options(rtol=1e-2), verbose=True)
    assert capsys.readouterr().out == ""
    assert any("low_rank_kernel: rank" in r.getMessage() for r in caplog.records)
