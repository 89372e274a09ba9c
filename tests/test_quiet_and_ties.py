"""OrthogonalTransferSVC is quiet at its default alpha (heuristic (6) lowering it is logged at
INFO) and warns when it lowers an alpha the user set; TopDownSVC predicts the same on dense
and CSR copies of X, whose products round differently, at exact ties with the threshold."""

import logging
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import hiercvx as hc
from hiercvx.estimators import OrthogonalTransferSVC, TopDownSVC

H = hc.Hierarchy.from_paths(["a/a1/x", "a/a1/y", "a/a2", "b/b1", "b/b2"])


def test_default_alpha_lowering_is_info_and_an_explicit_one_warns(caplog):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = rng.choice(np.array(H.leaves, dtype=object), 30)
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="hiercvx"):
        warnings.simplefilter("error")
        OrthogonalTransferSVC(hierarchy=H).fit(X, y)
    lowered = [r for r in caplog.records if "heuristic (6)" in r.getMessage()]
    assert lowered and all(r.levelno == logging.INFO for r in lowered)
    with pytest.warns(UserWarning, match="alpha=3.0 .* lowered to"):
        OrthogonalTransferSVC(hierarchy=H, alpha=3.0).fit(X, y)


def test_topdown_label_sets_are_the_same_on_dense_and_csr_features():
    rng = np.random.default_rng(0)
    leaves = np.array(H.leaves, dtype=object)
    n = 60
    # binary features: many rows share their scores exactly, so gaps sit at the threshold
    X = (rng.random((n, 30)) < 0.15).astype(float) * rng.choice([0.1, 0.3, 0.7], size=(n, 30))
    y = [frozenset(rng.choice(leaves, size=rng.integers(1, 3), replace=False).tolist())
         for _ in range(n)]
    dense = TopDownSVC(hierarchy=H).fit(X, y)
    csr = TopDownSVC(hierarchy=H).fit(sp.csr_matrix(X), y)
    assert dense.predict(X) == dense.predict(sp.csr_matrix(X))
    assert csr.predict(sp.csr_matrix(X)) == csr.predict(X)
