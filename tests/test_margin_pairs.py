"""The pair enumeration and the per-pair reductions of :mod:`hiercvx.models.margin`, checked
against the dense / ``ufunc.at`` forms they replace (same values, same order)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx.models import margin


@pytest.mark.parametrize("seed", range(6))
def test_label_pairs_is_the_order_of_the_dense_cube(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, q = int(rng.integers(0, 7)), int(rng.integers(1, 8))
        Y = rng.random((n, q)) < rng.random()
        expected = np.nonzero(Y[:, :, None] & ~Y[:, None, :])
        got = margin.label_pairs(Y)
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a, b)


def _reference_pieces(data, alpha, S):
    """``coefficients``, ``slacks`` and the oracle's violations with ``np.add.at`` /
    ``np.maximum.at`` (the previous implementation)."""
    G = np.zeros((data.n_samples, data.n_classes))
    np.add.at(G, (data.pair_i, data.pair_y), alpha)
    np.add.at(G, (data.pair_i, data.pair_ybar), -alpha)
    diff = S[data.pair_i, data.pair_y] - S[data.pair_i, data.pair_ybar]
    viol = data.pair_loss * (1.0 - diff) if data.rescaling == "slack" else data.pair_loss - diff
    xi = np.zeros(data.n_samples)
    np.maximum.at(xi, data.pair_i, viol)
    return G, xi


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
def test_reductions_match_the_unbuffered_ufuncs(rescaling):
    rng = np.random.default_rng(1)
    H = hc.Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a",
                                   "b1": "b", "b2": "b", "b3": "b"})
    leaves = list(H.leaves)
    labels = [frozenset(rng.choice(leaves, size=int(rng.integers(1, 3)), replace=False).tolist())
              for _ in range(12)]
    labels[3] = frozenset(leaves)  # an example without pairs
    Y = np.array([[c in s for c in leaves] for s in labels])
    Lam = hc.class_attributes(H, leaves, scheme="class_depth")
    loss = 1.0 + rng.random((len(leaves), len(leaves)))
    data = margin.margin_data(Y, loss, Lam=Lam, rescaling=rescaling)
    alpha = rng.random(data.n_pairs)
    S = rng.normal(size=(len(labels), len(leaves)))
    G_ref, xi_ref = _reference_pieces(data, alpha, S)
    np.testing.assert_allclose(margin.coefficients(alpha, data), G_ref, atol=1e-12)
    np.testing.assert_allclose(margin.slacks(S, data), xi_ref, atol=1e-12)
    assert margin.slacks(S, data)[3] == 0.0
    np.testing.assert_allclose(data.Q, Lam @ Lam.T, atol=1e-12)


def test_sparse_and_dense_products_agree():
    rng = np.random.default_rng(2)
    Lam = np.where(rng.random((30, 50)) < 0.05, rng.random((30, 50)), 0.0)  # mostly zeros
    W = rng.normal(size=(50, 4))
    X = rng.normal(size=(7, 4))
    np.testing.assert_allclose(margin.class_gram(Lam), Lam @ Lam.T, atol=1e-12)
    np.testing.assert_allclose(margin.class_scores(W, X, Lam), X @ W.T @ Lam.T, atol=1e-12)
    np.testing.assert_allclose(margin.class_scores(W, sp.csr_matrix(X), Lam), X @ W.T @ Lam.T,
                               atol=1e-12)
    G = rng.normal(size=(7, 30))
    np.testing.assert_allclose(margin.weights_from_coefficients(G, X, Lam), Lam.T @ G.T @ X,
                               atol=1e-12)
    dense = rng.random((5, 6))
    np.testing.assert_allclose(margin.class_gram(dense), dense @ dense.T, atol=1e-12)


@pytest.mark.parametrize("n, d, q, M, density", [(7, 4, 30, 50, 0.05), (2, 50, 30, 10, 1.0),
                                                 (40, 3, 12, 20, 0.3)])
def test_class_scores_in_either_order(n, d, q, M, density):
    """``(X W^T) Lam^T`` and, with ``cheapest``, ``X (Lam W)^T`` where that is cheaper agree
    with the dense product, for dense and CSR inputs."""
    rng = np.random.default_rng(n + d)
    Lam = np.where(rng.random((q, M)) < density, rng.random((q, M)), 0.0)
    W, X = rng.normal(size=(M, d)), rng.normal(size=(n, d))
    X[:, 0] = 0.0
    want = X @ W.T @ Lam.T
    for Xin in (X, sp.csr_matrix(X)):
        for Lin in (Lam, sp.csr_matrix(Lam)):
            for cheapest in (False, True):
                got = margin.class_scores(W, Xin, Lin, cheapest=cheapest)
                assert isinstance(got, np.ndarray) and got.shape == (n, q)
                np.testing.assert_allclose(got, want, atol=1e-12)


def test_segment_max_with_empty_segments():
    values = np.array([1.0, -2.0, 5.0, 0.5])
    ptr = np.array([0, 2, 2, 4, 4])
    np.testing.assert_array_equal(margin.segment_max(values, ptr), [1.0, -np.inf, 5.0, -np.inf])
