"""Node scores of the hierarchical estimators: a score per node, never above an ancestor's, and
AU(PRC) on them; a flat model has none."""

import numpy as np
import pytest

from hiercvx import metrics
from hiercvx.estimators import (HierarchicalSVC, MulticlassSVC, NormalizedHierarchicalSVC,
                                OrthogonalTransferSVC, TopDownSVC)
from hiercvx.exceptions import InputError
from hiercvx.methods.cases import problem

X, Y, H = problem("multilabel", n=40, d=4, seed=0)
Xs, ys, _ = problem("tree", n=40, d=4, seed=0)


def assert_consistent(N):
    assert N.shape == (X.shape[0], len(H.nodes)) and np.all(np.isfinite(N))
    for k, v in enumerate(H.nodes):
        for a in H.ancestors(v):
            assert np.all(N[:, k] <= N[:, H.index(a)] + 1e-12)


@pytest.mark.parametrize("make", [lambda: HierarchicalSVC(hierarchy=H),
                                  lambda: NormalizedHierarchicalSVC(hierarchy=H)],
                         ids=["HierarchicalSVC", "NormalizedHierarchicalSVC"])
def test_label_set_estimators_give_node_scores_and_au_prc(make):
    est = make().fit(X, Y)
    N = est.node_decision_function(X)
    assert_consistent(N)
    value = metrics.au_prc(Y, N, hierarchy=H, y_train=Y)
    assert 0.0 < value <= 1.0
    # the best class of each sample is where its top leaf scores: node scores carry the ranking
    S = est.decision_function(X)
    leaves = [H.index(c) for c in est.classes_]
    np.testing.assert_allclose(N[:, leaves].max(axis=1), S.max(axis=1))


@pytest.mark.parametrize("make", [lambda: OrthogonalTransferSVC(hierarchy=H),
                                  lambda: TopDownSVC(hierarchy=H)],
                         ids=["OrthogonalTransferSVC", "TopDownSVC"])
def test_single_label_estimators_give_node_scores(make):
    est = make().fit(Xs, ys)
    assert_consistent(est.node_decision_function(Xs))


def test_a_flat_model_has_no_node_scores():
    est = MulticlassSVC().fit(Xs, ys)
    with pytest.raises(InputError, match="hierarchy"):
        est.node_decision_function(Xs)
