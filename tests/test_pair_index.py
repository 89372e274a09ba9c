"""The margin model's pair list without listing it (``hiercvx.models._pair_index``,
``MarginData``'s pairs listed on demand): positions and their inverse against the listed
pairs, slacks by the oracle against slacks over the list, sparse duals against dense ones, and
the label-set engine, which never lists the pairs of the model it solves."""

import numpy as np
import pytest
import scipy.sparse as sp

from hiercvx.exceptions import InputError
from hiercvx.models import hsvm as hsvm_model
from hiercvx.models import margin
from hiercvx.models._pair_index import pair_offsets, pair_positions, pairs_at
from hiercvx.solvers import labelset, working_set

from labelset_cases import HIERARCHIES, dag, label_sets, tree  # noqa: F401


def _random_Y(seed, n=30, q=9):
    rng = np.random.default_rng(seed)
    Y = rng.random((n, q)) < rng.uniform(0.05, 0.6, (n, 1))
    Y[0] = True          # every class relevant: no pair
    Y[1] = False         # none relevant: no pair
    Y[2] = False
    Y[2, q - 1] = True   # one relevant class, the last
    return Y


@pytest.mark.parametrize("seed", range(5))
def test_positions_and_their_inverse_are_the_listed_order(seed):
    Y = _random_Y(seed)
    pi, py, pyb = margin.label_pairs(Y)
    assert pair_offsets(Y)[-1] == pi.size
    np.testing.assert_array_equal(pair_positions(Y, pi, py, pyb), np.arange(pi.size))
    rng = np.random.default_rng(seed)
    some = np.sort(rng.choice(pi.size, size=min(50, pi.size), replace=False))
    i, y, ybar = pairs_at(Y, some)
    np.testing.assert_array_equal(i, pi[some])
    np.testing.assert_array_equal(y, py[some])
    np.testing.assert_array_equal(ybar, pyb[some])


@pytest.mark.parametrize("rescaling", ["slack", "margin"])
@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_pairs_are_listed_on_demand_and_slacks_agree(shape, rescaling):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 25, 3, seed=4)
    model = hsvm_model.prepare(X, Y, H, rescaling=rescaling)
    d = model.data
    assert not d.pairs_listed
    pi, py, pyb = margin.label_pairs(d.Y)
    assert d.n_pairs == pi.size and not d.pairs_listed   # counted, not listed
    S = np.random.default_rng(5).standard_normal((25, d.n_classes))
    by_oracle = margin.slacks(S, d)
    assert not d.pairs_listed
    np.testing.assert_array_equal(d.pair_i, pi)           # the first read lists them
    assert d.pairs_listed
    np.testing.assert_array_equal(d.pair_loss, d.loss[py, pyb])
    np.testing.assert_allclose(margin.slacks(S, d), by_oracle, rtol=0, atol=1e-12)


def test_a_zero_loss_pair_is_refused_without_the_list():
    Y = np.array([[True, False, False], [False, True, False]])
    loss = np.ones((3, 3)) - np.eye(3)
    loss[1, 2] = 0.0       # sample 1: relevant 1, irrelevant 2
    with pytest.raises(InputError, match=r"relevant class 1 and irrelevant class 2 \(sample 1\)"):
        margin.margin_data(Y, loss, Lam=np.eye(3))
    loss[1, 2], loss[2, 1] = 1.0, 0.0   # no example has class 2 relevant and 1 irrelevant
    assert margin.margin_data(Y, loss, Lam=np.eye(3)).n_pairs == 4


def test_sparse_duals_give_what_dense_ones_give():
    H = dag()
    X, Y = label_sets(H, 20, 3, seed=6)
    model = hsvm_model.prepare(X, Y, H)
    d = model.data
    rng = np.random.default_rng(7)
    dense = np.where(rng.random(d.n_pairs) < 0.05, rng.random(d.n_pairs), 0.0)
    support = np.flatnonzero(dense)
    sparse = margin.sparse_dual(d, *margin.pairs_at(d.Y, support, offsets=d.offsets()),
                                dense[support])
    np.testing.assert_array_equal(sparse.toarray(), dense)
    assert model.lower_bound(sparse, 0.7) == pytest.approx(model.lower_bound(dense, 0.7),
                                                           rel=1e-12)
    np.testing.assert_allclose(model.weights_from_dual(sparse), model.weights_from_dual(dense),
                               atol=1e-12)


@pytest.mark.parametrize("shape", ["tree", "dag"])
def test_the_label_set_engine_never_lists_the_models_pairs(shape):
    H = HIERARCHIES[shape]()
    X, Y = label_sets(H, 40, 4, seed=8)
    model = hsvm_model.prepare(X, Y, H, fit_intercept=True)
    first = labelset.solve(model, 0.5, tol=1e-8)
    warm = labelset.solve(model, 1.0, tol=1e-8, alpha0=first.dual)
    assert not model.data.pairs_listed
    assert sp.issparse(first.dual) and first.dual.shape == (model.data.n_pairs,)
    assert first.dual.nnz <= first.extras["working_pairs"][0].size
    assert warm.converged and model.lower_bound(warm.dual, 1.0) == \
        pytest.approx(warm.lower_bound, rel=1e-9)
    assert not model.data.pairs_listed
    # the same optimum as the working set over the listed pairs
    np.testing.assert_allclose(working_set.solve(model, 1.0, tol=1e-9).objective,
                               warm.objective, rtol=1e-7)
