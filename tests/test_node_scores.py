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
    B = est.node_decision_function(X, method="best_class")
    assert_consistent(B)
    np.testing.assert_allclose(B[:, leaves].max(axis=1), S.max(axis=1))


@pytest.mark.parametrize("make", [lambda: OrthogonalTransferSVC(hierarchy=H),
                                  lambda: TopDownSVC(hierarchy=H)],
                         ids=["OrthogonalTransferSVC", "TopDownSVC"])
def test_single_label_estimators_give_node_scores(make):
    est = make().fit(Xs, ys)
    assert_consistent(est.node_decision_function(Xs))


def test_a_flat_model_has_no_node_scores():
    est = MulticlassSVC().fit(Xs, ys)
    assert not hasattr(est, "node_decision_function")   # absent, not a method that raises
    with pytest.raises(AttributeError):
        est.node_decision_function(Xs)


# ---------------------------------------------------------------------- solver_options
def test_estimators_take_their_fast_solvers_options():
    from hiercvx.solvers import margin_engine, nhsvm_fw, orthogonal_dual

    a = HierarchicalSVC(hierarchy=H).fit(Xs, ys)
    b = HierarchicalSVC(hierarchy=H, solver_options=margin_engine.Options()).fit(Xs, ys)
    assert b.objective_ == pytest.approx(a.objective_, rel=1e-6)
    NormalizedHierarchicalSVC(hierarchy=H, solver_options=nhsvm_fw.Options()).fit(Xs, ys)
    OrthogonalTransferSVC(hierarchy=H, solver_options=orthogonal_dual.Options()).fit(Xs, ys)
    # a dict of the Options' fields is the same settings
    c = HierarchicalSVC(hierarchy=H, solver_options={
        "newton_steps": margin_engine.Options().newton_steps}).fit(Xs, ys)
    assert c.objective_ == pytest.approx(a.objective_, rel=1e-6)
    with pytest.raises(InputError, match="not settings of"):
        HierarchicalSVC(hierarchy=H, solver_options={"tol": 1e-3}).fit(Xs, ys)
    # a dict for a field that is itself an Options builds that Options, checked the same way
    from hiercvx.estimators._base import solver_route
    nested = HierarchicalSVC(hierarchy=H, solver_options={
        "interior_point": {"max_dimension": 1}, "working_set": {"n_enter": 2}})
    built = solver_route(nested).fast_options(margin_engine.Options)
    assert built.interior_point.max_dimension == 1 and built.working_set.n_enter == 2
    assert built.working_set.dual == margin_engine.Options().working_set.dual
    assert nested.fit(Xs, ys).result_.solver != "interior_point"
    with pytest.raises(InputError, match=r"solver_options\['working_set'\]: \['bogus'\] are not "
                                         r"settings of hiercvx.solvers.working_set.Options"):
        HierarchicalSVC(hierarchy=H, solver_options={"working_set": {"bogus": 1}}).fit(Xs, ys)
    with pytest.raises(InputError, match="solver_options must be None, a dict or the fast solver's"):
        HierarchicalSVC(hierarchy=H, solver_options=3).fit(Xs, ys)
    with pytest.raises(InputError, match="Options but solver='reference'"):
        HierarchicalSVC(hierarchy=H, solver="reference",
                        solver_options=margin_engine.Options()).fit(Xs, ys)
