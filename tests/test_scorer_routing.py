"""The scorers on class scores take part in scikit-learn's metadata routing as
``make_scorer``'s do: ``set_score_request(sample_weight=True)`` routes the weights, weights
that were not requested raise."""

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.model_selection import KFold, cross_validate

import hiercvx as hc
from hiercvx.estimators import HierarchicalSVC
from hiercvx.metrics import get_scorer

H = hc.Hierarchy.from_paths(["a/a1", "a/a2", "b/b1", "b/b2"])


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(np.array(H.leaves, dtype=object), n)
    X = rng.normal(size=(n, 4)) + 0.8 * np.eye(4)[[H.leaves.index(v) for v in y]]
    return X, y


@pytest.fixture
def routing():
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


@pytest.mark.parametrize("name", ["one_accuracy", "average_precision", "neg_ranking_loss"])
def test_score_scorers_route_sample_weight_when_requested(routing, name):
    X, y = _data()
    sw = np.where(np.arange(len(y)) % 2 == 0, 0.01, 5.0)
    cv = KFold(3)
    est = HierarchicalSVC(hierarchy=H).set_fit_request(sample_weight=False)
    with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
        cross_validate(est, X, y, cv=cv, scoring=get_scorer(name, hierarchy=H),
                       params={"sample_weight": sw})
    scorer = get_scorer(name, hierarchy=H).set_score_request(sample_weight=True)
    r = cross_validate(est, X, y, cv=cv, scoring=scorer, params={"sample_weight": sw},
                       return_estimator=True)
    for k, (_, test) in enumerate(cv.split(X)):
        fitted = r["estimator"][k]
        assert r["test_score"][k] == pytest.approx(
            scorer(fitted, X[test], y[test], sample_weight=sw[test]))


def test_score_scorers_request_only_the_metadata_of_their_metric(routing):
    scorer = get_scorer("one_accuracy", hierarchy=H)
    requests = scorer.get_metadata_routing().score.requests
    assert "sample_weight" in requests and "scores" not in requests and "classes" not in requests
    assert repr(scorer) == "hierarchical_scorer('one_accuracy')"


def test_score_scorers_take_sample_weight_without_routing():
    X, y = _data()
    est = HierarchicalSVC(hierarchy=H).fit(X, y)
    sw = np.linspace(0.1, 2.0, len(y))
    scorer = get_scorer("one_accuracy", hierarchy=H)
    top = np.asarray(est.classes_)[np.argmax(est.decision_function(X), axis=1)]
    assert scorer(est, X, y, sample_weight=sw) == pytest.approx(np.average(top == y, weights=sw))
