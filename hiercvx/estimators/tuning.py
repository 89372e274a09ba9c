"""The tuning protocol of Wang, Shen & Pan (section 4.1), for any estimator.

An independent tuning sample (of the training sample's size in the paper) and a grid of
tuning parameters: every grid point is fitted on the training sample, the tuning error
(6) is measured on the tuning sample, and the grid point with the smallest error is kept --
the estimator fitted on the training sample only (no refit on training + tuning data).
The paper's grid is ``C = 10^(l / 10)``, ``l = -30, ..., 30`` (:func:`wang_C_grid`).
"""

from __future__ import annotations

import logging
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.metrics import get_scorer as get_sklearn_scorer
from sklearn.model_selection import ParameterGrid
from tqdm.auto import tqdm

from .. import metrics
from ..exceptions import InputError, LabelError
from ..hierarchy import Hierarchy
from ._labels import predicted_labels, read_test_labels

logger = logging.getLogger(__name__)

__all__ = ["wang_C_grid", "tune_on_holdout", "HoldoutTuning"]


def wang_C_grid(step: int = 1) -> np.ndarray:
    """The 61 grid points of Wang, Shen & Pan section 4.1, ``C = 10^(l/10)`` for
    ``l = -30, ..., 30`` (every ``step``-th one).

    Parameters
    ----------
    step : int
        A positive integer: keep every ``step``-th grid point, from ``l = -30``.

    Returns
    -------
    ndarray of the kept values of ``C``, increasing
    """
    try:
        integral = not isinstance(step, (bool, np.bool_)) and int(step) == step
    except (TypeError, ValueError):
        integral = False
    if not integral or step < 1:
        raise InputError(f"step must be a positive integer (every step-th of the 61 grid points), "
                         f"got {step!r}")
    return 10.0 ** (np.arange(-30, 31, int(step)) / 10.0)


@dataclass
class HoldoutTuning:
    """Outcome of :func:`tune_on_holdout`.

    ``best_estimator``: fitted on the training sample with ``best_params``;
    ``best_score``: its tuning score (greater is better; for the default scoring, minus
    the tuning error); ``params`` / ``scores``: every grid point and its tuning score, in
    grid order; ``n_failed``: grid points whose fit raised (scored ``error_score``, never
    chosen); ``best_index``: the position of ``best_params`` in ``params``.
    """

    best_params: dict
    best_estimator: Any
    best_score: float
    params: list = field(default_factory=list)
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_failed: int = 0
    best_index: int = 0


def _label_hierarchy(estimator, hierarchy):
    """The hierarchy the tuning labels are read on: ``hierarchy`` when given, else the
    estimator's own ``hierarchy`` parameter (None for an estimator without one)."""
    if hierarchy is not None:
        return hierarchy
    own = estimator.get_params().get("hierarchy") if hasattr(estimator, "get_params") else None
    return own if isinstance(own, Hierarchy) else None


def _read_labels(est, y, hierarchy):
    """``y`` as the fitted estimator's ``score`` reads it (:func:`read_test_labels`): label
    sets that include their ancestors reduced to their most specific members, one label per
    sample after a single-label fit."""
    H = _label_hierarchy(est, hierarchy)
    try:
        return read_test_labels(y, H, getattr(est, "multilabel_", False))
    except LabelError as exc:
        if H is not None:
            raise
        raise LabelError(f"tune_on_holdout: {exc}. Without a hierarchy label sets are read as "
                         "they are: give the estimator (or tune_on_holdout) hierarchy=H, which "
                         "reduces sets that include their ancestors to their most specific "
                         "label, or pass y_tune in the form y has") from None


def _as_label(label):
    """A label set as a frozenset (so sets, lists and frozensets of the same nodes are equal);
    a single label as it is."""
    return frozenset(label) if isinstance(label, (set, frozenset, list)) else label


def _zero_one(est, X, y, hierarchy) -> float:
    """Minus the tuning error under ``l_{0-1}``, on labels read as the estimator reads them.
    Without a hierarchy a truth and a prediction of different kinds (a label set beside a
    single label) cannot be compared and are refused, not counted as errors."""
    y = _read_labels(est, y, hierarchy)
    pred = predicted_labels(est, X)
    H = _label_hierarchy(est, hierarchy)
    if H is not None:
        return -metrics.test_error(y, pred, hierarchy=H, loss="zero_one")
    truth, pred = [_as_label(t) for t in y], [_as_label(p) for p in pred]
    kinds = {isinstance(v, frozenset) for v in truth}, {isinstance(v, frozenset) for v in pred}
    if len(kinds[0] | kinds[1]) > 1:
        raise LabelError(
            "tune_on_holdout: the tuning labels and the predictions are of different kinds (label "
            "sets beside single labels), so the tuning error cannot be measured. Give the "
            "estimator its hierarchy (hierarchy=H), which reduces label sets that include their "
            "ancestors to their most specific label, or pass y_tune in the form y has")
    return -float(np.mean([t != p for t, p in zip(truth, pred)]))


def _scorer(scoring, hierarchy) -> Callable:
    """``scorer(estimator, X, y)``, greater is better.  The default and the named scorers read
    the tuning labels as the fitted estimator does (:func:`_read_labels`), with ``hierarchy``
    defaulting to the estimator's; a callable gets the labels as given."""
    if scoring is None:
        return lambda est, X, y: _zero_one(est, X, y, hierarchy)
    if callable(scoring):
        return scoring
    if not isinstance(scoring, str):
        raise InputError(f"scoring must be None, a scorer name or a callable, got "
                         f"{type(scoring).__name__}")
    if scoring in metrics.SCORERS:
        def named(est, X, y):
            scorer = metrics.get_scorer(scoring, hierarchy=_label_hierarchy(est, hierarchy))
            return scorer(est, X, _read_labels(est, y, hierarchy))
        return named
    try:
        sklearn_scorer = get_sklearn_scorer(scoring)
    except ValueError:
        raise InputError(f"unknown scoring {scoring!r}: use a hiercvx scorer name "
                         f"({sorted(metrics.SCORERS)}), a scikit-learn scorer name or a "
                         "callable scorer(estimator, X, y) (greater is better)") from None
    return lambda est, X, y: sklearn_scorer(est, X, _read_labels(est, y, hierarchy))


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


def _check_error_score(error_score) -> None:
    """``error_score`` is ``"raise"`` or a real number; checked before any fit, so that a bad
    value is not found only when a grid point fails."""
    if isinstance(error_score, str) and error_score == "raise":
        return
    if isinstance(error_score, (bool, np.bool_)) or not isinstance(error_score, numbers.Real):
        raise InputError(f"error_score must be 'raise' or a number (the score of a grid point "
                         f"whose fit fails, e.g. np.nan), got {error_score!r}")


def _n_rows(X) -> int:
    """Rows of ``X``: an array, a sparse matrix or a list of rows."""
    if hasattr(X, "shape") and len(X.shape):
        return int(X.shape[0])
    try:
        return len(X)
    except TypeError:
        raise InputError(f"X_tune must be a 2-D array or a list of rows, got "
                         f"{type(X).__name__}") from None


def _refuse_nan_scores(scores: np.ndarray, ok: np.ndarray, grid: list) -> None:
    """Refuse a NaN tuning score of a fitted grid point: NaN is not ordered, so no grid point
    can be chosen by it (failed fits take ``error_score``, NaN included, and are never chosen)."""
    nan = np.flatnonzero(ok & np.isnan(scores))
    if len(nan):
        raise InputError(f"the scoring returned NaN for {len(nan)} fitted grid point(s), the first "
                         f"{grid[nan[0]]}; a tuning score must be a number (greater is better): "
                         "make the scorer return a finite value for every fit, e.g. 0 where its "
                         "measure is undefined")

def _warn_if_constant(scores: np.ndarray, ok: np.ndarray, kept: dict) -> None:
    """Warn when every fitted grid point has the same tuning score: the choice then rests on
    grid order alone, which the caller should know (a scorer that cannot tell the fits apart
    gives this, as does a tuning sample on which every fit errs alike)."""
    values = scores[ok]
    if len(values) >= 2 and np.all(values == values[0]):
        warnings.warn(
            f"tune_on_holdout: every grid point scored {values[0]:.6g} on the tuning sample, so "
            f"none is better and the first, {kept}, is kept. Check that y_tune is in the form "
            "of y and that the scoring can tell the fits apart (e.g. a hiercvx scorer such as "
            "scoring='neg_te_symmetric_difference', or a larger tuning sample)",
            UserWarning, stacklevel=3)


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
    better).  ``hierarchy``: the hierarchy of the labels, by default the estimator's own
    ``hierarchy`` parameter.  Except for a callable, which gets ``y_tune`` as given, the
    tuning labels are read as the fitted estimator's ``score`` reads them: label sets that
    include their ancestors (as loaders give them) are reduced to their most specific
    members, one label per sample after a single-label fit.  Ties go to the first grid point
    in ``ParameterGrid`` order (for a C grid in increasing order: the smallest C, the most
    regularized fit); a ``UserWarning`` says so when every grid point scores the same.
    ``n_jobs``: joblib workers over the grid; ``error_score``: ``"raise"`` or the number
    recorded for a grid point whose fit raises (such a point is never chosen; e.g. ``np.nan``
    as in ``GridSearchCV``).  A NaN score of a fitted grid point is refused
    (:class:`~hiercvx.exceptions.InputError`): NaN has no place in the order the choice is made by.
    Progress is shown with tqdm when ``verbose``.
    """
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise InputError(f"estimator must be a scikit-learn estimator, got {type(estimator).__name__}")
    if isinstance(param_grid, dict):
        param_grid = {k: (list(v) if np.ndim(v) else [v]) for k, v in param_grid.items()}
    try:
        grid = list(ParameterGrid(param_grid))
    except (TypeError, ValueError) as exc:
        raise InputError(f"param_grid: {exc}") from None
    if not grid:
        raise InputError("param_grid is empty: give at least one parameter value")
    unknown = sorted({k for p in grid for k in p} - set(estimator.get_params()))
    if unknown:
        raise InputError(f"param_grid names {unknown}, which {type(estimator).__name__} does not "
                         f"take; its parameters are {sorted(estimator.get_params())}")
    _check_error_score(error_score)
    n_tune = _n_rows(X_tune)
    if len(y_tune) != n_tune:
        raise InputError(f"y_tune has {len(y_tune)} entries but X_tune has {n_tune} rows: give one "
                         "label (or label set) per row of X_tune")
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
    _refuse_nan_scores(scores, ok, grid)
    # first maximum over the fitted points: ties -> grid order; -inf scores stay choosable
    best = int(np.flatnonzero(ok)[np.argmax(scores[ok])])
    _warn_if_constant(scores, ok, grid[best])
    return HoldoutTuning(best_params=grid[best], best_estimator=out[best][0],
                         best_score=float(scores[best]), params=grid, scores=scores,
                         n_failed=int(failed), best_index=best)
