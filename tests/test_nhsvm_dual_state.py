"""The NHSVM pairwise solver's dual state on label sets (Choi, Sasaki & Srebro, "Normalized
Hierarchical SVM", arXiv:1508.02479, 2016: the dual of (10) over ``Y_m``).

* what the compiled sweeps keep per block agrees with a dense recomputation: the support
  (every node where a cached vertex differs from the true set, or the true set's nodes and
  those a cached vertex lacks when that is smaller and at most ``support_ones_share`` of the
  nodes), the Gram matrix of the cached
  directions ``<a_j, a_l>``, ``g_i`` and ``l_i`` from the cached masses;
* the label-set pool recycles the ids no cache slot holds, and each pooled row is the set its
  key names;
* a vertex that evicts a cached vertex holding mass resyncs ``g_i`` and ``l_i`` of the samples
  that lost it, to what a resync of every sample gives;
* a cache of four vertices per sample (evictions and recycling) still reaches the CVXPY
  reference's optimum with an independent certificate (two cannot: an optimal block may need
  more vertices than that).
"""

from __future__ import annotations

import numpy as np
import pytest

from hiercvx import inference as inf
from hiercvx.formulations import nhsvm
from hiercvx.solvers import nhsvm_fw
from hiercvx.solvers._nhsvm_options import Options

from labelset_cases import planted_sets, random_hierarchy


def _fitted_state(seed: int, cache_size: int, passes: int, ones_share: float = 0.25):
    rng = np.random.default_rng(seed)
    H = random_hierarchy(rng, 10, dag=True)
    X, Y = planted_sets(H, n=20, d=3, seed=seed)
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    view = nhsvm_fw.vertex_model(model)
    res = nhsvm_fw.pairwise(view, 0.5, Options(max_iter=passes, tol=1e-12, cache_size=cache_size,
                                               support_ones_share=ones_share), quiet=True)
    return view, res.extras["state"]


@pytest.mark.parametrize("ones_share", [0.25, 1.0])
@pytest.mark.parametrize("seed", range(3))
def test_support_gram_and_dual_point_agree_with_a_dense_recomputation(seed, ones_share):
    view, state = _fitted_state(seed, cache_size=3, passes=15, ones_share=ones_share)
    state.sync_gram(view)
    T = view.T.astype(float)
    sqa = view.sqrt_alpha
    G = np.zeros_like(state.G)
    l = np.zeros(len(T))
    for i in range(len(T)):
        k = state.clen[i]
        Z = state.pool[state.cid[i, :k]].astype(float)
        C = state.cscale[i, :k, None] * (T[i] - Z)          # (k, M) directions t_i - z_j
        support = np.zeros(T.shape[1], dtype=bool)
        support[state.supp[i, :state.slen[i]]] = True
        if state.sref[i] == 0:  # relative to the true set
            assert not np.any(C[:, ~support]), "a cached vertex differs from t_i off the support"
        else:  # relative to the all-ones set: off the support t_i = 0 and every z_j = 1
            assert not np.any(T[i, ~support]) and np.all(Z[:, ~support] == 1), \
                "off the support a cached vertex lacks a node or t_i holds one"
        # of the two unions (over every vertex ever cached), the all-ones one when it is the
        # smaller and at most ones_share of the nodes, else the true set's
        r = state.sref[i]
        ones = state.count[i, 1] < state.count[i, 0] and \
            state.count[i, 1] <= ones_share * T.shape[1]
        assert r == int(ones) and state.slen[i] == state.count[i, r]
        A = C * sqa
        np.testing.assert_allclose(state.Q[i, :k, :k], A @ A.T, atol=1e-12)
        beta = np.maximum(state.cbeta[i, :k], 0.0)
        G[i] = beta @ C
        l[i] = beta @ state.coff[i, :k]
        assert beta.sum() <= state.budget[i] * (1 + 1e-12)
    np.testing.assert_allclose(state.G, G, atol=1e-10)
    np.testing.assert_allclose(state.l, l, atol=1e-10)


def test_the_pool_recycles_ids_and_keeps_each_set_under_its_key():
    view, state = _fitted_state(1, cache_size=2, passes=30)
    held = np.unique(state.cid[state.cid >= 0])
    assert set(state._keys.values()) == set(held.tolist())
    assert len(state._free) + len(held) == state._pool_size
    for key, j in state._keys.items():
        row = np.packbits(state.pool[j].astype(bool)).tobytes()
        assert row == key
    counts = np.bincount(state.cid[state.cid >= 0], minlength=state._pool_size)
    np.testing.assert_array_equal(state._refs[:state._pool_size], counts)


@pytest.mark.parametrize("seed", range(3))
def test_an_eviction_resyncs_the_samples_that_lost_mass(seed):
    view, state = _fitted_state(seed, cache_size=2, passes=15)
    state.resync(view)  # as at a certificate: g and l fresh before the new vertices
    rng = np.random.default_rng(seed)
    T = view.T.astype(bool)
    Z = T.copy()
    flip = rng.integers(1, T.shape[1], size=len(T))  # one node flipped, never the root
    Z[np.arange(len(T)), flip] ^= True
    full = state.clen >= state.K
    held = state.cbeta[np.arange(len(T)), np.argmin(state.cbeta, axis=1)] > 0
    assert np.any(full & held), "no sample would lose mass: the case is not exercised"
    before = state.n_evicted
    added, evicted = state.add(view, Z)
    assert evicted and state.n_evicted > before
    G, l = state.G.copy(), state.l.copy()
    state.resync(view)
    np.testing.assert_array_equal(G, state.G)
    np.testing.assert_array_equal(l, state.l)


@pytest.mark.parametrize("structure", ["tree", "dag"])
def test_a_small_cache_still_reaches_the_reference(structure):
    rng = np.random.default_rng(21)
    H = random_hierarchy(rng, 9, dag=structure == "dag")
    X, Y = planted_sets(H, n=20, d=3, seed=8)
    lam = 0.5
    model = nhsvm.prepare(X, Y, H, multilabel=True)
    res = nhsvm_fw.solve(model, lam, method="pairwise", tol=1e-7, max_iter=5000, cache_size=4)
    ref = nhsvm.primal(X, Y, H, lam=lam, multilabel=True).solve(verbose=False)
    assert res.converged
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    W = model.augmented_weights(res.weights, res.extras.get("intercept"))
    P = nhsvm.primal_objective(W, model, lam, inf.LabelSetOracle(H, "enumerate"))
    D = model.dual_value(res.extras["dual_coef"], np.array([res.extras["loss_term"]]), lam)
    assert P == pytest.approx(res.objective, rel=1e-10)
    assert D <= ref.objective * (1 + 1e-9) and (P - D) / max(abs(P), 1.0) <= 1e-7
