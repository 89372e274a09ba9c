"""tune_on_holdout reads the tuning labels as the fitted estimator does, and says so when the
tuning sample cannot separate the grid points."""

import numpy as np
import pytest

from hiercvx import Hierarchy
from hiercvx.estimators import (HierarchicalSVC, NodeKernelRidge, TopDownSVC, tune_on_holdout,
                                wang_C_grid)
from hiercvx.exceptions import InputError, LabelError

H = Hierarchy.from_parents({"root": None, "A": "root", "B": "root", "A1": "A", "A2": "A",
                            "B1": "B", "B2": "B"})
CENTERS = {"A1": [1, 0, 0], "A2": [0, 1, 0], "B1": [0, 0, 1], "B2": [-1, -1, 0]}
GRID = {"C": [0.001, 0.1, 10.0]}


def _data(spread=0.8, seed=3):
    rng = np.random.default_rng(seed)
    leaves = ["A1", "A2", "B1", "B2"] * 8
    C0 = np.array([CENTERS[v] for v in leaves], float) * (3 if spread < 0.5 else 1)
    X, X_tune = (C0 + spread * rng.standard_normal(C0.shape) for _ in range(2))
    return X, X_tune, leaves, [{"root", v[0], v} for v in leaves]   # sets as loaders give them


def test_label_sets_with_their_ancestors_are_scored_as_their_leaves():
    X, X_tune, leaves, sets = _data()
    errors = [1 - HierarchicalSVC(hierarchy=H, C=C).fit(X, leaves).score(X_tune, leaves)
              for C in GRID["C"]]
    assert len(set(errors)) == 3   # the grid points differ on this tuning sample
    res = tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, sets, X_tune, sets)
    np.testing.assert_allclose(-res.scores, errors)
    assert res.best_params == {"C": GRID["C"][int(np.argmin(errors))]}
    # a named hiercvx scorer takes the estimator's hierarchy and the reduced labels too
    named = tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, sets, X_tune, sets,
                            scoring="weighted_f1")
    plain = tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, leaves, X_tune, leaves,
                            scoring="weighted_f1", hierarchy=H)
    np.testing.assert_allclose(named.scores, plain.scores)
    # a single-label NodeKernelRidge fit, tuned on sets: its own score() on the same labels
    alphas = {"alpha": [0.01, 1.0, 100.0]}
    ridge = tune_on_holdout(NodeKernelRidge(hierarchy=H), alphas, X, leaves, X_tune, sets)
    expected = [NodeKernelRidge(hierarchy=H, alpha=a).fit(X, leaves).score(X_tune, sets) - 1
                for a in alphas["alpha"]]
    np.testing.assert_allclose(ridge.scores, expected)


def test_scores_equal_at_every_grid_point_are_not_kept_silently():
    X, X_tune, leaves, _ = _data(spread=0.3)
    with pytest.warns(UserWarning, match="every grid point scored"):
        res = tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, leaves, X_tune, leaves)
    assert res.best_params == {"C": 0.001}


def test_labels_that_cannot_be_compared_are_refused_with_the_fix():
    X, X_tune, leaves, sets = _data()
    # no hierarchy: a set with its ancestors is not one of the single labels predicted
    with pytest.raises(LabelError, match=r"tune_on_holdout.*hierarchy=H"):
        tune_on_holdout(HierarchicalSVC(), GRID, X, leaves, X_tune, sets)
    # the fix the message gives: the hierarchy, on the estimator or on tune_on_holdout
    for est, hierarchy in ((HierarchicalSVC(hierarchy=H), None), (HierarchicalSVC(), H)):
        res = tune_on_holdout(est, GRID, X, leaves, X_tune, sets, hierarchy=hierarchy)
        errors = [1 - est.set_params(C=C).fit(X, leaves).score(X_tune, leaves)
                  for C in GRID["C"]]
        np.testing.assert_allclose(-res.scores, errors)


def test_best_index_is_the_chosen_grid_point_when_a_fit_fails():
    X, X_tune, leaves, _ = _data()
    res = tune_on_holdout(TopDownSVC(hierarchy=H), {"C": [-1.0, 1.0]}, X, leaves, X_tune, leaves,
                          error_score=0.0)   # the failed fit's 0 beats every fitted score
    assert res.n_failed == 1 and res.scores[0] == 0.0 and res.scores[1] < 0
    assert res.best_params == {"C": 1.0} and res.params[res.best_index] == res.best_params
    assert res.best_score == res.scores[res.best_index]


def test_nan_tuning_scores_are_refused():
    X, X_tune, leaves, _ = _data()

    def scorer(est, X, y):
        return float("nan") if est.C == 0.1 else -est.C
    with pytest.raises(InputError, match=r"NaN for 1 fitted grid point.*\{'C': 0.1\}"):
        tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, leaves, X_tune, leaves,
                        scoring=scorer)
    # a failed fit may be scored NaN (GridSearchCV's error_score): it is never chosen
    res = tune_on_holdout(TopDownSVC(hierarchy=H), {"C": [-1.0, 1.0]}, X, leaves, X_tune, leaves,
                          error_score=np.nan)
    assert np.isnan(res.scores[0]) and res.best_index == 1


def test_tuning_arguments_are_refused_before_any_fit():
    X, X_tune, leaves, _ = _data()
    with pytest.raises(InputError, match="y_tune has 31 entries but X_tune has 32 rows"):
        tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, leaves, X_tune.tolist(), leaves[:-1])
    for bad in ("skip", True, None, [0.0]):
        with pytest.raises(InputError, match="error_score must be 'raise' or a number"):
            tune_on_holdout(HierarchicalSVC(hierarchy=H), GRID, X, leaves, X_tune, leaves,
                            error_score=bad)
    with pytest.raises(InputError, match=r"param_grid names \['Cx'\]"):
        tune_on_holdout(HierarchicalSVC(hierarchy=H), {"Cx": [1.0]}, X, leaves, X_tune, leaves)
    with pytest.raises(InputError, match="param_grid"):
        tune_on_holdout(HierarchicalSVC(hierarchy=H), {"C": []}, X, leaves, X_tune, leaves)


def test_wang_C_grid_step_is_a_positive_integer():
    assert len(wang_C_grid()) == 61 and np.array_equal(wang_C_grid(2.0), wang_C_grid(2))
    np.testing.assert_allclose(wang_C_grid(10), 10.0 ** np.arange(-3, 4))
    for bad in (2.5, 0, -1, True, "2", None):
        with pytest.raises(InputError, match="step must be a positive integer"):
            wang_C_grid(bad)
