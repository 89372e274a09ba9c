"""Pieces every hiercvx estimator shares: the input checks that open
``fit``, target handling and the multi-label decision rule."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data

from .._validation import check_not_complex, check_positive
from ..exceptions import InputError
from ..kernels import check_psd
from ..result import check_iteration_options
# target handling lives in the core (hiercvx.targets); re-exported for the estimators
from ..targets import (class_array, flat_hierarchy, is_multilabel_target,  # noqa: F401
                       ravel_column_target, resolve_targets, resolve_training_targets, sort_key)

SOLVERS = ("fast", "reference")


def check_solver_options(penalty, penalty_name: str, tol, solver, max_iter=None,
                         who: str = "the estimator") -> None:
    """Refuse a non-positive regularization constant (``C`` or ``lam``, named ``penalty_name``
    in the message) or tolerance ``tol``, a ``max_iter`` that is not a positive integer
    (:func:`hiercvx.result.check_iteration_options`; ``None`` allowed) and a ``solver`` not in
    :data:`SOLVERS`.  Called at ``fit`` whichever solver runs, so no option is ignored."""
    check_positive(penalty, penalty_name)
    check_positive(tol, "tol")
    check_iteration_options(tol, max_iter, who=who)
    if solver not in SOLVERS:
        raise InputError(f"solver must be one of {SOLVERS}, got {solver!r}")


def validate_training_X(estimator, X, *, precomputed: bool = False, check_kernel: bool = True):
    """``X`` for ``fit`` through scikit-learn's ``validate_data`` (float64, at least two rows,
    CSR kept unless ``X`` is a precomputed kernel).  A precomputed kernel must be square,
    symmetric and PSD (:func:`hiercvx.kernels.check_psd`); ``check_kernel=False`` leaves that
    to a solver that checks it itself.  Complex ``X`` is refused (InputError)."""
    check_not_complex(X, "X")  # scikit-learn's own refusal names neither the input nor a fix
    X = validate_data(estimator, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
                      ensure_min_samples=2)
    if precomputed and check_kernel:
        check_psd(X, what="precomputed kernel matrix")
    return X


def check_training_weights(sample_weight, X):
    """``sample_weight`` as a float array over the rows of ``X`` (None stays None): non-negative,
    and positive somewhere, else nothing is left to train on."""
    if sample_weight is None:
        return None
    sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
    if not np.any(sample_weight > 0):
        raise InputError("sample_weight is zero everywhere: at least one sample needs a "
                         "positive weight")
    return sample_weight


def fit_label_set_threshold(scores: np.ndarray, Y: np.ndarray) -> float:
    """The multi-label decision rule: predict every class whose score is within ``t`` of the
    top score (the top class is always predicted).  ``t >= 0`` is chosen on the training
    data to maximize the mean example-based F1 (a simple stand-in for the size prediction
    of Cai thesis section 4.2); ties go to the smaller ``t``."""
    gaps = scores.max(axis=1, keepdims=True) - scores  # >= 0, 0 at the top class
    candidates = np.unique(np.concatenate([[0.0], np.quantile(gaps[~Y], np.linspace(0, 0.5, 21))
                                           if (~Y).any() else []]))
    best_t, best_f1 = 0.0, -1.0
    for t in candidates:
        pred = gaps <= t
        tp = (pred & Y).sum(axis=1)
        f1 = np.mean(2 * tp / (pred.sum(axis=1) + Y.sum(axis=1)))
        if f1 > best_f1 + 1e-12:
            best_t, best_f1 = float(t), f1
    return best_t


def predict_from_scores(scores: np.ndarray, classes: np.ndarray, multilabel: bool,
                        threshold: float = 0.0):
    """Top class per sample, or the label sets of :func:`fit_label_set_threshold`'s rule."""
    if not multilabel:
        return classes[np.argmax(scores, axis=1)]
    gaps = scores.max(axis=1, keepdims=True) - scores
    pred = gaps <= threshold
    return [frozenset(classes[row].tolist()) for row in pred]


class LabelSetScoreMixin:
    """``score``: accuracy for single-label fits, mean example-based F1 of the predicted
    label sets for multi-label fits (put before ``ClassifierMixin`` in the bases)."""

    def score(self, X, y, sample_weight=None):
        """Accuracy (single-label) or mean example-based F1 of the predicted label sets."""
        if not getattr(self, "multilabel_", False):
            return super().score(X, y, sample_weight=sample_weight)
        pred = self.predict(X)
        f1 = [2 * len(p & set(t)) / (len(p) + len(set(t))) for p, t in zip(pred, y)]
        return float(np.average(f1, weights=sample_weight))
