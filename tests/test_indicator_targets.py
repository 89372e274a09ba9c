"""0/1 indicator targets: every estimator that takes one predicts one, with the same columns
(over the leaves, over the nodes closed upward or not, or column numbers without a
hierarchy), dense or CSR as scikit-learn's ``OneVsRestClassifier`` answers; ``score`` and
scikit-learn's multi-label scorers work on them; ``score`` is one metric everywhere."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import f1_score
from sklearn.model_selection import cross_val_score

import hiercvx as hc
from hiercvx.exceptions import LabelError
from hiercvx.estimators import (AdaBoostMH, HierarchicalPerceptron, HierarchicalSVC,
                                MulticlassSVC, NodeKernelRidge, NormalizedHierarchicalSVC,
                                OrthogonalTransferSVC, SequentialHierarchicalSVC, SharedNormSVC,
                                SiblingMarginSVC, TopDownSVC)
from hiercvx.hierarchy import most_specific

H = hc.Hierarchy.from_paths(["a/a1", "a/a2", "b/b1", "b/b2"])
LEAVES = np.array(H.leaves, dtype=object)


def _data(n=40, seed=0, multi=True):
    rng = np.random.default_rng(seed)
    y = rng.choice(4, n)
    X = rng.normal(size=(n, 5)) + np.eye(4)[y] @ rng.normal(size=(4, 5)) * 3
    Y = np.eye(4, dtype=int)[y]
    if multi:
        rows = np.arange(0, n, 3)
        Y[rows, (y[rows] + 1) % 4] = 1
    return X, Y


def _sets(Y):
    return [frozenset(LEAVES[row.astype(bool)].tolist()) for row in Y]


MULTI = {
    "HierarchicalSVC": lambda: HierarchicalSVC(hierarchy=H),
    "MulticlassSVC": lambda: MulticlassSVC(),
    "NormalizedHierarchicalSVC": lambda: NormalizedHierarchicalSVC(hierarchy=H),
    "TopDownSVC": lambda: TopDownSVC(hierarchy=H),
    "HierarchicalPerceptron": lambda: HierarchicalPerceptron(hierarchy=H),
    "AdaBoostMH": lambda: AdaBoostMH(n_rounds=5),
    "NodeKernelRidge": lambda: NodeKernelRidge(hierarchy=H),
}
SINGLE = {
    "OrthogonalTransferSVC": lambda: OrthogonalTransferSVC(hierarchy=H),
    "SharedNormSVC": lambda: SharedNormSVC(hierarchy=H),
    "SiblingMarginSVC": lambda: SiblingMarginSVC(hierarchy=H),
    "SequentialHierarchicalSVC": lambda: SequentialHierarchicalSVC(hierarchy=H),
}


@pytest.mark.parametrize("name", sorted(MULTI))
def test_a_leaf_indicator_is_predicted_back_as_one(name):
    X, Y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MULTI[name]().fit(X, Y)
        on_sets = MULTI[name]().fit(X, _sets(Y))
    P = est.predict(X)
    assert isinstance(P, np.ndarray) and P.shape == Y.shape and P.dtype == np.int64
    assert set(np.unique(P)) <= {0, 1}
    # the same model as on the label sets, answered over the same columns (flat estimators:
    # columns are numbers; NodeKernelRidge answers an indicator over the leaves with leaves)
    if name not in ("MulticlassSVC", "AdaBoostMH", "NodeKernelRidge"):
        assert _sets(P) == [frozenset(s) for s in on_sets.predict(X)]
    # scikit-learn's multi-label metrics and scorers take it
    expected = f1_score(Y, P, average="samples", zero_division=0)
    assert est.score(X, Y) == pytest.approx(expected)
    assert est.score(X, sp.csr_matrix(Y)) == pytest.approx(expected)
    S = sp.csr_matrix(Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Ps = MULTI[name]().fit(X, S).predict(X)
    assert isinstance(Ps, sp.csr_matrix) and Ps.dtype == np.int64
    np.testing.assert_array_equal(Ps.toarray(), P)


def test_cross_val_score_f1_samples_on_an_indicator_is_a_number():
    X, Y = _data(60)
    scores = cross_val_score(HierarchicalSVC(hierarchy=H), X, Y, cv=3, scoring="f1_samples")
    assert np.all(np.isfinite(scores)) and np.all(scores > 0.3)
    default = cross_val_score(HierarchicalSVC(hierarchy=H), X, Y, cv=3)
    np.testing.assert_allclose(default, scores)


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_path_estimators_take_a_one_label_indicator_and_answer_in_it(name):
    X, Y = _data(multi=False)
    est = SINGLE[name]().fit(X, Y)
    P = est.predict(X)
    assert P.shape == Y.shape and P.dtype == np.int64 and np.all(P.sum(axis=1) == 1)
    names = SINGLE[name]().fit(X, LEAVES[Y.argmax(axis=1)]).predict(X)
    assert list(LEAVES[P.argmax(axis=1)]) == list(names)
    assert est.score(X, Y) == pytest.approx(np.mean(np.all(P == Y, axis=1)))


def test_a_node_indicator_is_read_and_answered_closed_or_not():
    X, Y = _data()
    sets = _sets(Y)
    closed = H.closure(sets).astype(int)                       # as H.closure gives it
    open_ = H.label_indicator(sets).toarray().astype(int)       # most specific labels only
    ref = HierarchicalSVC(hierarchy=H).fit(X, sets).predict(X)
    est = HierarchicalSVC(hierarchy=H).fit(X, closed)
    P = est.predict(X)
    assert P.shape == (len(X), len(H.nodes)) and P.dtype == np.int64
    np.testing.assert_array_equal(P, H.closure(ref).astype(int))
    assert H.is_closed(P).all() and np.all(P[:, H.index(H.root)] == 1)
    assert est.score(X, closed) == pytest.approx(
        HierarchicalSVC(hierarchy=H).fit(X, sets).score(X, sets))
    P = HierarchicalSVC(hierarchy=H).fit(X, open_).predict(X)
    np.testing.assert_array_equal(P, H.label_indicator(ref).toarray().astype(int))
    Ps = HierarchicalSVC(hierarchy=H).fit(X, sp.csr_matrix(closed)).predict(X)
    assert isinstance(Ps, sp.csr_matrix)
    np.testing.assert_array_equal(Ps.toarray(), H.closure(ref).astype(int))
    # a node indicator with ancestors but without the root is not closed: most specific back
    no_root = closed.copy()
    no_root[:, H.index(H.root)] = 0
    P = HierarchicalSVC(hierarchy=H).fit(X, no_root).predict(X)
    np.testing.assert_array_equal(P, H.label_indicator(ref).toarray().astype(int))


def test_node_kernel_ridge_takes_an_indicator_over_its_own_classes():
    X, Y = _data()
    closed = H.closure(_sets(Y)).astype(int)
    est = NodeKernelRidge(hierarchy=H).fit(X, closed)
    assert list(est.classes_) == list(H.nodes)
    P = est.predict(X)
    assert P.shape == closed.shape and H.is_closed(P).all()
    # over the leaves it answers with leaves only
    P = NodeKernelRidge(hierarchy=H).fit(X, Y).predict(X)
    assert P.shape == Y.shape and np.all(P.sum(axis=1) >= 1)


def test_an_indicator_of_neither_width_is_refused_naming_both():
    X, Y = _data()
    with pytest.raises(LabelError, match=r"one column per leaf .*\(4, in H.leaves order\) or one "
                                         r"per node \(7, in H.nodes order"):
        HierarchicalSVC(hierarchy=H).fit(X, np.hstack([Y, Y[:, :1]]))


def test_predictions_without_an_indicator_stay_names_and_sets():
    X, Y = _data()
    P = HierarchicalSVC(hierarchy=H).fit(X, _sets(Y)).predict(X)
    assert isinstance(P, list) and isinstance(P[0], frozenset)


@pytest.mark.parametrize("name", ["AdaBoostMH", "NodeKernelRidge", "HierarchicalSVC"])
def test_score_on_label_sets_is_the_mean_example_f1_of_most_specific_labels(name):
    X, Y = _data(seed=1)
    sets = [set(s) | {"a" if "a/a1" in s else "b"} for s in _sets(Y)]   # with an ancestor
    sw = np.random.default_rng(0).uniform(0.2, 2.0, len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MULTI[name]().fit(X, _sets(Y))
    pred = est.predict(X)
    truth = most_specific(H, sets) if name != "AdaBoostMH" else sets
    f1 = [2 * len(set(p) & set(t)) / max(len(p) + len(t), 1) for p, t in zip(pred, truth)]
    assert est.score(X, sets) == pytest.approx(np.mean(f1))
    assert est.score(X, sets, sample_weight=sw) == pytest.approx(np.average(f1, weights=sw))


def test_sequential_svc_decision_function_agrees_with_predict():
    X, Y = _data(multi=False)
    y = LEAVES[Y.argmax(axis=1)]
    est = SequentialHierarchicalSVC(hierarchy=H).fit(X, y)
    S = est.decision_function(X)
    assert S.shape == (len(X), len(est.classes_))
    assert list(est.classes_[np.argmax(S, axis=1)]) == list(est.predict(X))


def test_flat_multiclass_svc_has_no_node_score_methods():
    est = MulticlassSVC().fit(*_data(multi=False))
    for method in ("node_decision_function", "fit_node_calibration_cv",
                   "cross_fitted_node_margins"):
        assert not hasattr(est, method)
        assert hasattr(HierarchicalSVC(hierarchy=H), method)
