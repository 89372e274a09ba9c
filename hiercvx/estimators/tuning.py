"""The tuning protocol of Wang, Shen & Pan (section 4.1), for any estimator.

An independent tuning sample (of the training sample's size in the paper) and a grid of
tuning parameters: every grid point is fitted on the training sample, the tuning error
(6) is measured on the tuning sample, and the grid point with the smallest error is kept --
the estimator fitted on the training sample only (no refit on training + tuning data).
The paper's grid is ``C = 10^(l / 10)``, ``l = -30, ..., 30`` (:func:`wang_C_grid`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.metrics import get_scorer as get_sklearn_scorer
from sklearn.model_selection import ParameterGrid
from tqdm.auto import tqdm

from .. import metrics
from ..exceptions import InputError

logger = logging.getLogger(__name__)

__all__ = ["wang_C_grid", "tune_on_holdout", "HoldoutTuning"]


def wang_C_grid(step: int = 1) -> np.ndarray:
    """The 61 grid points of section 4.1, ``C = 10^(l/10)`` for ``l = -30, ..., 30``
    (every ``step``-th one)."""
    step = int(step)
    if step < 1:
        raise InputError(f"step must be a positive integer, got {step!r}")
    return 10.0 ** (np.arange(-30, 31, step) / 10.0)


@dataclass
class HoldoutTuning:
    """Outcome of :func:`tune_on_holdout`.

    ``best_estimator``: fitted on the training sample with ``best_params``;
    ``best_score``: its tuning score (greater is better; for the default scoring, minus
    the tuning error); ``params`` / ``scores``: every grid point and its tuning score, in
    grid order; ``n_failed``: grid points whose fit raised (scored ``-inf``).
    """

    best_params: dict
    best_estimator: Any
    best_score: float
    params: list = field(default_factory=list)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_failed: int = 0

    @property
    def best_index(self) -> int:
        return int(np.argmax(self.scores))


def _scorer(scoring, hierarchy) -> Callable:
    if scoring is None:
        def zero_one(est, X, y):
            pred = est.predict(X)
            if hierarchy is None:
                return -float(np.mean(np.asarray(pred, dtype=object) != np.asarray(y, dtype=object)))
            return -metrics.test_error(y, pred, hierarchy=hierarchy, loss="zero_one")
        return zero_one
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in metrics.SCORERS:
            return metrics.get_scorer(scoring, hierarchy=hierarchy)
        try:
            return get_sklearn_scorer(scoring)
        except ValueError:
            raise InputError(f"unknown scoring {scoring!r}: use a hiercvx scorer name "
                             f"({sorted(metrics.SCORERS)}), a scikit-learn scorer name or a "
                             "callable scorer(estimator, X, y) (greater is better)") from None
    raise InputError(f"scoring must be None, a scorer name or a callable, got {type(scoring).__name__}")


def _fit_and_score(estimator, params, X, y, X_tune, y_tune, scorer, error_score):
    est = clone(estimator).set_params(**params)
    try:
        est.fit(X, y)
    except Exception as exc:  # noqa: BLE001 -- a failing grid point is reported, not fatal
        if error_score == "raise":
            raise
        logger.warning("tune_on_holdout: fit failed for %s: %s", params, exc)
        return None, float(error_score)
    return est, float(scorer(est, X_tune, y_tune))


def tune_on_holdout(estimator, param_grid, X, y, X_tune, y_tune, *, scoring=None,
                    hierarchy=None, n_jobs=None, error_score="raise",
                    verbose: bool = False) -> HoldoutTuning:
    """Section 4.1's tuning: fit ``estimator`` on ``(X, y)`` at every point of
    ``param_grid`` (a dict of lists or a list of such dicts, as in ``GridSearchCV``; e.g.
    ``{"C": wang_C_grid()}``), score it on the independent tuning sample
    ``(X_tune, y_tune)``, and keep the best fit.

    ``scoring``: None -- minus the tuning error (6) under ``l_{0-1}`` (the paper's
    criterion); a hiercvx scorer name (``"neg_te_symmetric_difference"``,
    ``"neg_te_sibling"``, ``"neg_te_subtree"``, ``"weighted_f1"``, ...; ``hierarchy`` is
    passed to it); a scikit-learn scorer name; or ``scorer(estimator, X, y)`` (greater is
    better).  Ties go to the first grid point in ``ParameterGrid`` order (for a C grid in
    increasing order: the smallest C, the most regularized fit).  ``n_jobs``: joblib
    workers over the grid; ``error_score``: ``"raise"`` or the score given to a failed fit.
    Progress is shown with tqdm when ``verbose``.
    """
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise InputError(f"estimator must be a scikit-learn estimator, got {type(estimator).__name__}")
    if isinstance(param_grid, dict):
        param_grid = {k: (list(v) if np.ndim(v) else [v]) for k, v in param_grid.items()}
    grid = list(ParameterGrid(param_grid))
    if not grid:
        raise InputError("param_grid is empty: give at least one parameter value")
    if len(y_tune) != (X_tune.shape[0] if hasattr(X_tune, "shape") else len(X_tune)):
        raise InputError(f"y_tune has {len(y_tune)} entries but X_tune has {X_tune.shape[0]} rows")
    scorer = _scorer(scoring, hierarchy)
    items = grid
    if verbose:
        items = tqdm(grid, desc=f"tuning {type(estimator).__name__}")
    out = Parallel(n_jobs=n_jobs)(
        delayed(_fit_and_score)(estimator, p, X, y, X_tune, y_tune, scorer, error_score)
        for p in items)
    scores = np.array([s for _, s in out], dtype=float)
    failed = sum(est is None for est, _ in out)
    if failed == len(out):
        raise InputError("every grid point failed to fit; see the logged errors")
    ok = np.array([est is not None for est, _ in out])
    best = int(np.argmax(np.where(ok, scores, -np.inf)))  # first maximum: ties -> grid order
    return HoldoutTuning(best_params=grid[best], best_estimator=out[best][0],
                         best_score=float(scores[best]), params=grid, scores=scores,
                         n_failed=int(failed))
