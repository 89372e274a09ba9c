"""Kernels on inputs: check_psd's precision of the entries, and the checks every Kernel gets."""

from __future__ import annotations

import numpy as np
import pytest

import hiercvx as hc
from hiercvx.kernels import Kernel, check_psd, gram, make_kernel, median_heuristic


def test_integer_valued_matrix_gets_float64_tolerance():
    """Integers are float32 numbers too, but exact in float64: a non-PSD count matrix whose
    smallest eigenvalue is -1 is refused (float32's n eps max|lambda| would let it pass)."""
    n = 500
    A = 100.0 * np.ones((n, n)) + np.eye(n)
    A[0, 1] = A[1, 0] = 102.0
    assert np.linalg.eigvalsh(A).min() < -0.99
    with pytest.raises(hc.InputError, match="not positive semidefinite"):
        check_psd(A)
    # a PSD integer Gram matrix (binary features) passes
    B = (np.random.default_rng(0).uniform(size=(60, 8)) > 0.5).astype(float)
    check_psd(B @ B.T)


def test_float32_gram_of_real_features_converted_to_float64_passes():
    rng = np.random.RandomState(0)
    X = (rng.uniform(size=(30, 5)) * 10).astype(np.float32)
    K = (X @ X.T).astype(float)
    assert np.linalg.eigvalsh(K).min() < -1e-8 * np.abs(K).max()  # float64's bound fails
    check_psd(K)


@pytest.mark.parametrize("tol", [-1.0, np.nan, np.inf, "1e-8", True])
def test_check_psd_refuses_bad_tol(tol):
    with pytest.raises(hc.InputError, match="tol must be"):
        check_psd(np.eye(3), tol=tol)


def test_check_psd_refuses_an_empty_matrix():
    with pytest.raises(hc.InputError, match="empty"):
        check_psd(np.zeros((0, 0)))


def test_kernel_without_width_takes_the_median_heuristic():
    X = np.random.default_rng(0).standard_normal((20, 3))
    expected = gram(X, kernel="rbf", sigma=median_heuristic(X))
    np.testing.assert_allclose(gram(X, kernel=Kernel("rbf")), expected)
    np.testing.assert_allclose(gram(X, kernel=Kernel("gaussian")), expected)
    with pytest.raises(hc.InputError, match="sigma=0.5"):
        Kernel("rbf")(X, X)


def test_gaussian_alias_is_rbf():
    X = np.random.default_rng(1).standard_normal((10, 2))
    k = Kernel("gaussian", sigma=3.0)
    assert k.name == "rbf"
    np.testing.assert_allclose(gram(X, kernel=k), gram(X, kernel="rbf", sigma=3.0))


@pytest.mark.parametrize("sigma", [0.0, -1.0, np.nan, np.inf, "1", True, [1.0]])
def test_bad_widths_are_refused_by_kernel_and_make_kernel(sigma):
    with pytest.raises(hc.InputError, match="sigma must be a positive, finite number"):
        Kernel("rbf", sigma=sigma)
    with pytest.raises(hc.InputError, match="sigma must be a positive, finite number"):
        make_kernel("rbf", sigma=sigma)


def test_kernel_construction_checks():
    with pytest.raises(hc.InputError, match="unknown kernel 'foo'"):
        Kernel("foo")
    with pytest.raises(hc.InputError, match="function=k"):
        Kernel("callable")
    with pytest.raises(hc.InputError, match="has none"):
        Kernel("linear", sigma=1.0)


def test_gram_refuses_sigma_beside_a_kernel():
    X = np.eye(3)
    with pytest.raises(hc.InputError, match="carries its own width"):
        gram(X, kernel=Kernel("rbf", sigma=1.0), sigma=5.0)
