"""Per-node calibration pairs (fit_node_calibration(shrinkage=...)) and coherent_node_scores: each
node's pair is the penalized logistic fit of that node alone, the pull towards the pooled pair
grows with the shrinkage, and the scores never exceed an ancestor's."""

import numpy as np
import pytest
from scipy.optimize import minimize

from hiercvx import Hierarchy, metrics
from hiercvx.exceptions import InputError

DAG = Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "x"), ("b", "x"), ("a", "y"),
                            ("b", "z"), ("x", "x1"), ("x", "x2")])


def _brute_coherent(S, H):
    out = np.empty_like(S)
    for j, v in enumerate(H.nodes):
        below = [H.index(u) for u in H.descendants(v, inclusive=True)]
        out[:, j] = S[:, below].max(axis=1)
    return out


def test_coherent_node_scores_is_the_max_over_descendants():
    S = np.random.default_rng(0).normal(size=(7, len(DAG.nodes)))
    C = metrics.coherent_node_scores(S, DAG)
    np.testing.assert_array_equal(C, _brute_coherent(S, DAG))
    for k, v in enumerate(DAG.nodes):
        for a in DAG.ancestors(v):
            assert np.all(C[:, k] <= C[:, DAG.index(a)])
    np.testing.assert_array_equal(metrics.coherent_node_scores(C, DAG), C)   # idempotent


def _draw(n=3000, seed=1):
    """Margins and labels drawn from a logistic model whose slope differs by node."""
    rng = np.random.default_rng(seed)
    M = len(DAG.nodes)
    m = rng.normal(size=(n, M))
    slopes = np.linspace(0.2, 3.0, M)
    Y = rng.random((n, M)) < 1 / (1 + np.exp(-(-1.0 + slopes * m)))
    return m, Y, slopes


def test_per_node_pairs_are_each_nodes_penalized_logistic_fit():
    m, Y, slopes = _draw()
    nodes = np.isin(np.asarray(DAG.nodes, dtype=object), DAG.leaves)   # drawn as is
    rho = 2.0
    cal = metrics.fit_node_calibration(m, Y.astype(int), DAG, nodes=nodes, shrinkage=rho)
    pooled = metrics.fit_node_calibration(m, Y.astype(int), DAG, nodes=nodes)
    scale = np.std(m[:, nodes])
    lo = cal.log_odds
    for v in np.flatnonzero(nodes):   # the same problem by a general-purpose solver
        z, y = m[:, v] / scale, Y[:, v]
        prior = np.array([pooled.slope * scale, pooled.intercept])

        def f(p):
            u = lo[v] + p[1] + p[0] * z
            return np.sum(np.logaddexp(0, u) - y * u) + rho / 2 * np.sum((p - prior) ** 2)
        ref = minimize(f, prior, bounds=[(0, None), (None, None)], method="L-BFGS-B",
                       options=dict(ftol=1e-14, gtol=1e-10)).x
        assert cal.slope[v] * scale == pytest.approx(ref[0], abs=2e-3)
        assert cal.intercept[v] == pytest.approx(ref[1], abs=2e-3)
        assert cal.slope[v] == pytest.approx(slopes[v], rel=0.2)   # each node its own slope
    # scores pass through the max over descendants
    S = cal.scores(m)
    np.testing.assert_allclose(S, _brute_coherent(lo + cal.intercept + cal.slope * m, DAG))


def test_a_large_shrinkage_gives_the_pooled_pair():
    m, Y, _ = _draw(n=500)
    pooled = metrics.fit_node_calibration(m, Y.astype(int), DAG)
    tight = metrics.fit_node_calibration(m, Y.astype(int), DAG, shrinkage=1e9)
    loose = metrics.fit_node_calibration(m, Y.astype(int), DAG, shrinkage=1e-3)
    nodes = metrics.evaluated_nodes(Y.astype(int), DAG)
    np.testing.assert_allclose(tight.slope[nodes], pooled.slope, rtol=1e-5)
    np.testing.assert_allclose(tight.intercept[nodes], pooled.intercept, atol=1e-5)
    assert np.ptp(loose.slope[nodes]) > 100 * np.ptp(tight.slope[nodes])
    assert np.all(loose.slope >= 0)
    with pytest.raises(InputError, match="shrinkage"):
        metrics.fit_node_calibration(m, Y.astype(int), DAG, shrinkage=0.0)


def test_cross_fitted_calibration_of_an_estimator():
    from sklearn.base import clone
    from sklearn.model_selection import KFold

    from hiercvx.estimators import HierarchicalSVC
    from hiercvx.methods.cases import problem

    X, Y, H = problem("multilabel", n=30, d=4, seed=0)
    est = HierarchicalSVC(hierarchy=H, tol=1e-4).fit(X, Y)
    weights = est.coef_.copy()
    est.fit_node_calibration_cv(X, Y, cv=3, shrinkage=1.0, random_state=2)
    np.testing.assert_array_equal(est.coef_, weights)   # the model itself is kept
    method = est._node_margin_method
    margins = np.empty((len(Y), len(H.nodes)))
    for train, test in KFold(3, shuffle=True, random_state=2).split(X):
        fold = clone(est).fit(X[train], [Y[i] for i in train])
        margins[test] = fold.node_decision_function(X[test], method=method)
    ref = metrics.fit_node_calibration(margins, Y, H, method=method, shrinkage=1.0)
    np.testing.assert_allclose(est.node_calibration_.slope, ref.slope, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(est.node_calibration_.intercept, ref.intercept, rtol=1e-6)
    N = est.node_decision_function(X)
    for k, v in enumerate(H.nodes):
        for a in H.ancestors(v):
            assert np.all(N[:, k] <= N[:, H.index(a)] + 1e-12)
    with pytest.raises(InputError, match="cv must be"):
        est.fit_node_calibration_cv(X, Y, cv=1)


def test_cross_fitted_margins_of_a_precomputed_kernel_are_those_of_the_kernel():
    """A precomputed Gram matrix's columns are the training samples: each fold fits on its own
    block and scores the left-out rows against its training columns, which gives the margins
    of the same kernel passed as a function of X."""
    from hiercvx.estimators import HierarchicalSVC
    from hiercvx.kernels import Kernel
    from hiercvx.methods.cases import problem

    X, Y, H = problem("multilabel", n=30, d=4, seed=0)
    rbf = Kernel("rbf", sigma=1.5)
    K = rbf(X)
    on_X = HierarchicalSVC(hierarchy=H, kernel=rbf, tol=1e-8).fit(X, Y)
    on_K = HierarchicalSVC(hierarchy=H, kernel="precomputed", tol=1e-8).fit(K, Y)
    np.testing.assert_allclose(on_K.cross_fitted_node_margins(K, Y, cv=3),
                               on_X.cross_fitted_node_margins(X, Y, cv=3), atol=1e-5)
    with pytest.raises(InputError, match="at least 31 samples, got 30; lower cv"):
        on_X.fit_node_calibration_cv(X, Y, cv=31)
    with pytest.raises(InputError, match="one row per label"):
        on_X.fit_node_calibration_cv(X[:-1], Y)


def test_node_score_errors_name_nodes_not_classes():
    """au_prc, coherent_node_scores and fit_node_calibration take one column per node of
    H.nodes: their errors say so (not `classes`, which they do not take)."""
    Y = [{"x1"}, {"y"}]
    with pytest.raises(InputError, match=r"\(n_samples, n_nodes\) = \(2, 8\), got \(2, 2\); "
                                         r"columns follow H.nodes"):
        metrics.au_prc(Y, np.zeros((2, 2)), DAG)
    with pytest.raises(InputError, match="non-finite entry at sample 0, node 0"):
        metrics.coherent_node_scores(np.full((2, len(DAG.nodes)), np.nan), DAG)
    with pytest.raises(InputError, match=r"margins must have shape \(n_samples, n_nodes\)"):
        metrics.fit_node_calibration(np.zeros((2, 3)), Y, DAG)
