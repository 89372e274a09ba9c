"""AdaBoost.MH with decision stumps, against the lecture's identities.

Independent routes: the weight distributions are replayed from the stored stumps with the
lecture's update (steps 5-10), the best stump is found by brute force over features, thresholds
and vote vectors on tiny data, and the training Hamming loss is recomputed from
``decision_function``.
"""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import check_estimator

from hiercvx.estimators.boosting import AdaBoostMH, best_stump


def _data(seed, n=60, d=3, k=4, multilabel=True):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).round(1)  # ties between feature values
    if multilabel:
        W = rng.standard_normal((d, k))
        Y = [frozenset(np.flatnonzero(row).tolist()) for row in (X @ W + 0.5 * rng.standard_normal((n, k)) > 0)]
        return X, Y
    return X, rng.integers(0, k, n)


def _signs(est, y):
    cls = est.classes_.tolist()
    C = -np.ones((len(y), len(cls)))
    for i, lab in enumerate(y):
        for c in (lab if est.multilabel_ else (lab,)):
            C[i, cls.index(c)] = 1
    return C


def _h(est, X, t):
    f, th = est.features_[t], est.thresholds_[t]
    phi = np.ones(len(X)) if f < 0 else np.where(X[:, f] > th, 1.0, -1.0)
    return phi[:, None] * est.votes_[t][None, :]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), multilabel=st.booleans(), n_rounds=st.integers(1, 30))
def test_normalizers_distributions_and_hamming_bound(seed, multilabel, n_rounds):
    X, y = _data(seed, multilabel=multilabel)
    est = AdaBoostMH(n_rounds=n_rounds).fit(X, y)
    C = _signs(est, y)
    m, k = C.shape
    D = np.full((m, k), 1.0 / (m * k))
    g = np.zeros((m, k))
    for t in range(est.n_iter_):
        h = _h(est, X, t)
        eps = D[h != C].sum()
        assert est.errors_[t] == pytest.approx(eps, abs=1e-12) and eps < 0.5
        alpha = 0.5 * np.log((1 - eps) / eps)
        assert est.alphas_[t] == pytest.approx(alpha, rel=1e-9)
        # Z_t = 2 sqrt(eps (1 - eps)) is exactly the normalizer of the update
        Z = np.sum(D * np.exp(-alpha * C * h))
        assert est.normalizers_[t] == pytest.approx(Z, rel=1e-9)
        assert Z == pytest.approx(2 * np.sqrt(eps * (1 - eps)), rel=1e-9)
        D = D * np.exp(-alpha * C * h) / est.normalizers_[t]
        g += alpha * h
        assert D.sum() == pytest.approx(1.0, abs=1e-9)
        # unrolled: D_{t+1} = D_1 exp(-c g_t) / prod_s Z_s
        assert np.allclose(D, np.exp(-C * g) / (m * k) / np.prod(est.normalizers_[:t + 1]), rtol=1e-8)
        # the training Hamming loss of sgn(g_t) is at most prod_s Z_s
        hamming = np.mean(C * g <= 0)
        assert est.training_hamming_[t] == pytest.approx(hamming, abs=1e-12)
        assert hamming <= np.prod(est.normalizers_[:t + 1]) + 1e-12
    G = est.decision_function(X)  # two classes, one label each: scikit-learn's g_1 - g_0
    assert np.allclose(G, g[:, 1] - g[:, 0] if G.ndim == 1 else g)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), m=st.integers(2, 7), d=st.integers(1, 3), k=st.integers(1, 3))
def test_best_stump_is_the_brute_force_minimum(seed, m, d, k):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (m, d)).astype(float)
    D = rng.random((m, k))
    D /= D.sum()
    C = rng.choice([-1.0, 1.0], (m, k))
    f, th, v, eps = best_stump(X, D, C)
    phi = np.ones(m) if f < 0 else np.where(X[:, f] > th, 1.0, -1.0)
    assert eps == pytest.approx(D[phi[:, None] * v[None, :] != C].sum(), abs=1e-12)
    best = np.inf
    splits = [np.ones(m)] + [np.where(X[:, j] > t, 1.0, -1.0) for j in range(d)
                             for t in np.unique(X[:, j])[:-1]]
    for ph in splits:
        for votes in itertools.product([-1.0, 1.0], repeat=k):
            best = min(best, D[ph[:, None] * np.array(votes)[None, :] != C].sum())
    assert eps == pytest.approx(best, abs=1e-12)


def test_training_hamming_loss_reaches_zero_on_stump_separable_labels():
    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    Y = [frozenset(l for l, j in enumerate([0, 1, 2]) if X[i, j] > 0.5) | {"always"} for i in range(200)]
    est = AdaBoostMH(n_rounds=300).fit(X, Y)
    assert est.training_hamming_[-1] == 0.0
    assert np.all(np.diff(np.log(np.cumprod(est.normalizers_))) < 0)  # the bound decreases
    assert est.predict(X) == [frozenset(s) for s in Y]


def test_a_perfect_stump_stops_boosting():
    X = np.linspace(0, 1, 20)[:, None]
    y = np.where(X[:, 0] > 0.5, "hi", "lo")
    est = AdaBoostMH(n_rounds=50).fit(X, y)
    assert est.n_iter_ == 1 and est.errors_[0] == 0 and est.normalizers_[0] == 0
    assert est.training_hamming_[0] == 0 and np.array_equal(est.predict(X), y)


def test_sample_weights_equal_duplication():
    X, y = _data(3, multilabel=False)
    w = np.random.default_rng(1).integers(0, 3, len(y))
    a = AdaBoostMH(n_rounds=15).fit(X, y, sample_weight=w)
    b = AdaBoostMH(n_rounds=15).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert np.array_equal(a.features_, b.features_) and np.allclose(a.thresholds_, b.thresholds_)
    assert np.allclose(a.decision_function(X), b.decision_function(X))


def test_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(AdaBoostMH(n_rounds=30), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed


def test_bad_input():
    X, y = _data(0, multilabel=False)
    for bad in (0, True, np.True_, 2.0):
        with pytest.raises(ValueError, match="n_rounds must be a positive integer"):
            AdaBoostMH(n_rounds=bad).fit(X, y)
    with pytest.raises(ValueError, match="two classes"):
        AdaBoostMH().fit(X, np.zeros(len(y)))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        AdaBoostMH().fit(Xn, y)
    with pytest.raises(ValueError, match="zero everywhere|non-zero"):
        AdaBoostMH().fit(X, y, sample_weight=np.zeros(len(y)))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("multilabel", [False, True])
def test_sparse_X_gives_the_dense_model(fmt, multilabel):
    """Sparse ``X`` (as a LIBSVM loader gives it; CSC and COO as the other estimators take
    them) is kept sparse and gives the model of its dense twin: the same stumps, weights and
    scores, on sparse and on dense test data, with and without sample weights."""
    rng = np.random.default_rng(7)
    X, y = _data(5, n=80, d=6, multilabel=multilabel)
    X[rng.random(X.shape) < 0.6] = 0.0   # mostly zeros, negative values too
    w = rng.integers(0, 3, len(y)).astype(float)
    for weights in (None, w):
        dense = AdaBoostMH(n_rounds=25).fit(X, y, sample_weight=weights)
        sparse = AdaBoostMH(n_rounds=25).fit(sp.csr_matrix(X).asformat(fmt), y,
                                             sample_weight=weights)
        assert sparse.n_iter_ == dense.n_iter_ > 1
        for name in ("features_", "thresholds_", "votes_", "alphas_", "errors_",
                     "training_hamming_"):
            assert np.array_equal(getattr(sparse, name), getattr(dense, name)), name
        for X_test in (sp.csr_matrix(X), X):
            assert np.array_equal(sparse.decision_function(X_test), dense.decision_function(X))
            assert list(sparse.predict(X_test)) == list(dense.predict(X))
    D, C = np.full((len(X), 1), 1 / len(X)), np.where(X[:, :1] > 0, 1.0, -1.0)
    a, b = best_stump(sp.csr_matrix(X), D, C), best_stump(X, D, C)
    assert a[:2] == b[:2] and np.array_equal(a[2], b[2]) and a[3] == b[3]


def test_multilabel_score_is_the_example_f1_with_labels_unseen_in_fit_missed():
    from hiercvx.estimators import AdaBoostMH

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    Y = [{"a"} if i % 2 else {"b", "c"} for i in range(20)]
    est = AdaBoostMH(n_rounds=5).fit(X, Y)
    pred = est.predict(X)
    extra = [s | {"root", "x", "z"} for s in Y]
    # the mean example-based F1 of every estimator's score; root, x, z are never predicted
    expected = np.mean([2 * len(set(p) & t) / max(len(p) + len(t), 1) for p, t in zip(pred, extra)])
    assert est.score(X, extra) == pytest.approx(expected)
    assert 0.0 <= est.score(X, extra) <= est.score(X, Y) <= 1.0
