"""Sparse ``X`` costs what its nonzeros cost, with the model of its dense twin.

AdaBoost.MH sweeps each sparse column over its nonzeros only (the zeros one tied group): the
stumps must be those of the dense sweep, on real Enron rows and on random sparse data with
negative and positive values, columns without zeros and all-zero columns.  The
orthogonal-transfer solvers work on the columns that hold a nonzero: padding ``X`` with zero
columns must give the same objective, the same weights on the used columns and zeros
elsewhere.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from hiercvx.datasets import load_arff
from hiercvx.datasets._common import hmc_data_dir
from hiercvx.estimators.boosting import AdaBoostMH, _sorted_columns, best_stump

STUMPS = ("features_", "thresholds_", "votes_", "alphas_", "errors_", "training_hamming_")


def _same_boosting(X, y, n_rounds):
    dense = AdaBoostMH(n_rounds=n_rounds).fit(X, y)
    sparse = AdaBoostMH(n_rounds=n_rounds).fit(sp.csr_matrix(X), y)
    assert sparse.n_iter_ == dense.n_iter_
    for name in STUMPS:
        assert np.array_equal(getattr(sparse, name), getattr(dense, name)), name
    return dense


def _random_sparse(seed, n=120, d=25):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).round(1)  # ties between values
    X[rng.random(X.shape) < 0.75] = 0.0
    X[:, rng.choice(d, 4, replace=False)] = 0.0  # all-zero columns
    X[:, 0] = rng.standard_normal(n)  # no zeros at all
    X[:, 1] = np.abs(X[:, 1])  # zeros and positives
    X[:, 2] = -np.abs(X[:, 2])  # negatives and zeros
    return X, rng


@pytest.mark.parametrize("seed", range(4))
def test_adaboost_sparse_stumps_are_the_dense_stumps_on_random_data(seed):
    X, rng = _random_sparse(seed)
    _same_boosting(X, rng.integers(0, 5, len(X)), 60)
    labels = [frozenset(np.flatnonzero(rng.random(4) < 0.35).tolist()) for _ in range(len(X))]
    _same_boosting(X, labels, 60)


def test_best_stump_sparse_equals_dense_on_ties_and_zero_edges():
    """Uniform weights on integer data make exactly tied splits and edges that are exactly 0:
    the choice and the votes must not depend on the summation order of either sweep."""
    for seed in range(400):
        rng = np.random.default_rng(seed)
        m, d, k = int(rng.integers(5, 30)), int(rng.integers(1, 4)), int(rng.integers(2, 5))
        X = rng.integers(-2, 3, (m, d)).astype(float)
        X[rng.random(X.shape) < 0.4] = 0.0
        D = np.full((m, k), 1.0 / (m * k))
        C = rng.choice([-1.0, 1.0], (m, k))
        a, b = best_stump(X, D, C), best_stump(sp.csr_matrix(X), D, C)
        assert a[:2] == b[:2] and np.array_equal(a[2], b[2]) and a[3] == b[3], seed


def test_sparse_columns_hold_only_the_nonzeros():
    X, _ = _random_sparse(0, n=50, d=2000)
    Xs = sp.csr_matrix(X)
    Xs.data[:3] = 0.0  # stored zeros are zeros
    columns, rows = _sorted_columns(Xs.tocsc())
    assert len(columns.values) == len(rows) == np.count_nonzero(X) - np.count_nonzero(Xs.data == 0)
    for j in (0, 1, 2, 7):
        v = columns.values[columns.indptr[j]:columns.indptr[j + 1]]
        r = rows[columns.indptr[j]:columns.indptr[j + 1]]
        assert np.all(np.diff(v) >= 0) and np.array_equal(Xs[r, j].toarray().ravel(), v)


def test_adaboost_sparse_stumps_are_the_dense_stumps_on_enron():
    path = hmc_data_dir() / "Enron_corr_trainvalid.arff"
    if not path.exists():
        pytest.skip(f"{path} not found")
    ds = load_arff(path)
    rows = np.sort(np.random.default_rng(0).choice(len(ds.y), 300, replace=False))
    X = ds.X[rows]
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _same_boosting(X, [ds.y[i] for i in rows], 150)
    assert model.n_iter_ == 150


# ---------------------------------------------------------------------- zero columns
def _padded(X, width, seed=0, sparse=True):
    """``X`` among ``width`` columns, the others zero, scattered; and where its columns went."""
    where = np.sort(np.random.default_rng(seed).choice(width, X.shape[1], replace=False))
    Xp = np.zeros((X.shape[0], width))
    Xp[:, where] = X
    return (sp.csr_matrix(Xp) if sparse else Xp), where


def _orthogonal_data(seed=0, n=30, d=4):
    import hiercvx as hc
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                   "b1": "b", "b2": "b", "c": "r"})
    rng = np.random.default_rng(seed)
    labels = ("a1", "a2", "b1", "b2", "c")
    y = np.array([labels[k % len(labels)] for k in range(n)], dtype=object)
    centre = {v: rng.standard_normal(d) for v in labels}
    X = np.array([centre[v] for v in y]) + 0.8 * rng.standard_normal((n, d))
    return X, y, H


@pytest.mark.parametrize("method", ["orthogonal", "transfer", "hiermult", "flatmult", "treeloss"])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("sparse", [True, False])
def test_orthogonal_zero_columns_change_nothing(method, fit_intercept, sparse):
    from hiercvx.models import orthogonal as otm
    from hiercvx.solvers import orthogonal_dual as od

    X, y, H = _orthogonal_data()
    Xp, where = _padded(X, 300, sparse=sparse)
    if sparse:
        Xp.data[Xp.indices == where[0]] *= 0.0  # a stored zero: the column is then unused
        X = X.copy()
        X[:, 0] = 0.0
    plain = otm.prepare(X, y, H, method, fit_intercept=fit_intercept)
    wide = otm.prepare(Xp, y, H, method, fit_intercept=fit_intercept)
    a = od.solve(plain, 2.0, tol=1e-9, max_iter=50_000)
    b = od.solve(wide, 2.0, tol=1e-9, max_iter=50_000)
    assert a.converged and b.converged
    assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-9)
    assert np.allclose(b.weights[:, where], a.weights, rtol=1e-7, atol=1e-9)
    off = np.setdiff1d(np.arange(Xp.shape[1]), where)
    assert np.all(b.weights[:, off] == 0.0)
    if fit_intercept:
        assert np.allclose(b.extras["intercept"], a.extras["intercept"], rtol=1e-7, atol=1e-9)
    # the certificate, recomputed by the wide model at the returned point
    intercept = b.extras.get("intercept")
    assert b.objective == pytest.approx(wide.objective(b.weights, 2.0, intercept=intercept), rel=1e-10)
    S = b.extras["dual_S"]
    assert otm.quadratic_lower_bound(wide, b.dual, S) == pytest.approx(b.lower_bound, rel=1e-9)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_shared_norm_zero_columns_change_nothing(fit_intercept):
    from hiercvx.models.nhsvm import prepare_shared
    from hiercvx.solvers import shared_norm

    X, y, H = _orthogonal_data(1)
    Xp, where = _padded(X, 200)
    a = shared_norm.solve(prepare_shared(sp.csr_matrix(X), y, H, fit_intercept=fit_intercept), 0.5,
                          tol=1e-8)
    wide = prepare_shared(Xp, y, H, fit_intercept=fit_intercept)
    b = shared_norm.solve(wide, 0.5, tol=1e-8)
    assert a.converged and b.converged
    assert b.objective == pytest.approx(a.objective, rel=1e-9)
    assert b.lower_bound == pytest.approx(a.lower_bound, rel=1e-9)
    assert np.allclose(b.weights[:, where], a.weights, rtol=1e-7, atol=1e-9)
    assert np.all(np.delete(b.weights, where, axis=1) == 0.0)
    if fit_intercept:
        assert np.allclose(b.extras["intercept"], a.extras["intercept"], rtol=1e-7, atol=1e-9)
