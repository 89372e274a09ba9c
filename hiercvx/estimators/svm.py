"""scikit-learn classifiers for the Crammer–Singer and Cai–Hofmann hierarchical SVMs.

Thin wrappers: inputs are validated by the formulation (``hsvm.prepare``), training is
done by the fast working-set solver or by the certified CVXPY reference, and the
certificate (``objective_``, ``gap_``) is kept on the fitted estimator.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..formulations import hsvm
from ..models import margin as _margin
from ..kernels import make_kernel
from ._base import (LabelSetScoreMixin, check_solver_options, check_training_weights,
                    fit_label_set_threshold, predict_from_scores, resolve_training_targets,
                    store_init_params, validate_training_X)

__all__ = ["HierarchicalSVC", "MulticlassSVC"]


class _MarginSVC(LabelSetScoreMixin, ClassifierMixin, BaseEstimator):
    """Shared fit/predict of the pairwise-ranking SVMs (subclasses fix the model options)."""

    def _model_options(self):  # -> (hierarchy, loss, attributes, rescaling, class_kernel)
        raise NotImplementedError

    def _flat_crammer_singer(self, multilabel: bool) -> bool:
        """Whether the dedicated Crammer–Singer solver applies (MulticlassSVC, linear)."""
        return False

    def _check_params(self):
        check_solver_options(self.C, "C", self.tol, self.solver)

    def _warm_dual(self, n_dual: int, solver_name: str):
        """The previous fit's dual variables as the starting point when ``warm_start`` is set and
        they fit this problem (same solver, same number of dual variables; the solver projects
        them onto the new feasible set, e.g. for a new ``C``); else None (a cold start)."""
        prev = getattr(self, "result_", None)
        if not (getattr(self, "warm_start", False) and prev is not None
                and getattr(self, "_dual_solver", None) == solver_name):
            return None
        dual = getattr(prev, "dual", None)
        return dual if dual is not None and np.shape(dual) == (n_dual,) else None

    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` and ``y`` (one label per sample, or label sets for multi-label)."""
        self._check_params()
        precomputed = isinstance(self.kernel, str) and self.kernel == "precomputed"
        X = validate_training_X(self, X, precomputed=precomputed)
        hierarchy, loss, attributes, rescaling, class_kernel = self._model_options()
        H, classes, labels, multilabel = resolve_training_targets(y, hierarchy, X.shape[0])
        sample_weight = check_training_weights(sample_weight, X)
        classes_t, Lam, data = hsvm.prepare(X, labels, H, loss=loss, attributes=attributes,
                                            classes=tuple(classes.tolist()), rescaling=rescaling,
                                            sample_weight=sample_weight)
        if class_kernel is not None:
            data = dataclasses.replace(data, Q=hsvm._class_kernel(H, classes_t, class_kernel), Lam=None)
        kernel = make_kernel(self.kernel, X=None if precomputed else X, sigma=self.sigma)
        linear = kernel.is_linear and data.Lam is not None
        if self.solver == "fast" and linear and self._flat_crammer_singer(multilabel):
            from ..solvers.crammer_singer import solve as solve_cs

            res = solve_cs(X, np.argmax(data.Y, axis=1), C=float(self.C), sample_weight=sample_weight,
                           tol=float(self.tol), max_iter=self.max_iter, n_classes=len(classes_t),
                           alpha0=self._warm_dual(data.n_pairs, "crammer_singer"),
                           random_state=self.random_state, verbose=self.verbose)
            self.objective_, self.gap_, self.n_iter_ = res.objective, res.gap, res.n_iter
            self._dual_solver = "crammer_singer"
            # node weights of the flat hierarchy: root row 0 (shared by every class), then classes
            coef = np.vstack([np.zeros((1, X.shape[1])), res.weights])
            self.result_ = res
        elif self.solver == "fast":
            from ..solvers.working_set import solve_hsvm

            res = solve_hsvm(X, data, C=float(self.C), kernel=kernel, tol=float(self.tol),
                             max_iter=self.max_iter, alpha0=self._warm_dual(data.n_pairs, "working_set"),
                             random_state=self.random_state, verbose=self.verbose)
            self.objective_, self.gap_, self.n_iter_ = res.objective, res.gap, res.n_iter
            self._dual_solver = "working_set"
            coef = res.weights if linear else res.coefficients
            self.result_ = res
        else:
            if linear:
                prob = hsvm.primal(X, labels, H, C=float(self.C), loss=loss, attributes=attributes,
                                   classes=classes_t, rescaling=rescaling, sample_weight=sample_weight)
            else:
                prob = hsvm.dual(X, labels, H, C=float(self.C), kernel=kernel, class_kernel=class_kernel,
                                 loss=loss, attributes=attributes, classes=classes_t, rescaling=rescaling,
                                 sample_weight=sample_weight)
            sol = prob.solve(solver=self.reference_solver)
            self._dual_solver = None
            self.objective_, self.gap_, self.n_iter_ = sol.objective, sol.gap, 1
            coef = sol.weights if linear else _margin.coefficients(sol.values["alpha"], prob.data["margin_data"])
            self.result_ = sol
        self._store_model(X, H, classes, multilabel, data, class_attributes=data.Lam, kernel=kernel,
                          linear=linear, coef=coef,
                          X_train=None if (linear or precomputed) else X)
        return self

    def _store_model(self, X, H, classes, multilabel, data, *, class_attributes, kernel, linear,
                     coef, X_train):
        """Keep what scoring needs (``coef``: node weights ``W`` ``(M, d)`` when ``linear``, else
        expansion coefficients over the rows of ``X_train``, or of the precomputed kernel's
        columns when ``X_train`` is None) and, for a multi-label fit, fit the label-set
        threshold on the training data ``X`` (``data.Y`` the true label sets)."""
        self.hierarchy_ = H
        self.classes_ = classes
        self.multilabel_ = multilabel
        self.class_attributes_ = class_attributes
        self.class_gram_ = data.Q
        self.kernel_ = kernel
        self._linear = linear
        self.coef_ = coef
        self._X_train = X_train
        self.threshold_ = 0.0
        if multilabel:
            self.threshold_ = fit_label_set_threshold(self._scores(X), data.Y)

    def _scores(self, X):
        if self._linear:
            return _margin.class_scores(self.coef_, X, self.class_attributes_)
        K = self.kernel_(X) if self.kernel_.name == "precomputed" else self.kernel_(X, self._X_train)
        return K @ self.coef_ @ self.class_gram_

    def class_scores(self, X):
        """Class scores ``(n_samples, n_classes)`` in ``classes_`` order (thesis (3.8))."""
        check_is_fitted(self)
        precomputed = self.kernel_.name == "precomputed"
        X = validate_data(self, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
                          reset=False)
        return self._scores(X)

    def decision_function(self, X):
        """Class scores ``(n_samples, n_classes)``; with two classes (single-label), the
        scikit-learn convention: one column, ``score(classes_[1]) - score(classes_[0])``."""
        S = self.class_scores(X)
        if S.shape[1] == 2 and not self.multilabel_:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X):
        """Top-scoring class; for a multi-label fit, the label set of every class whose score is
        within ``threshold_`` of the top score (``threshold_`` fitted on the training data)."""
        return predict_from_scores(self.class_scores(X), self.classes_, self.multilabel_,
                                   self.threshold_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = isinstance(self.kernel, str) and self.kernel == "precomputed"
        return tags


class HierarchicalSVC(_MarginSVC):
    """The Cai–Hofmann hierarchical SVM (thesis (4.10)), multi-label, trees and DAGs.

    Parameters
    ----------
    hierarchy : Hierarchy or None (None: a flat hierarchy over the labels seen in ``fit``)
    C : slack penalty of (4.10)
    loss : name of a loss in ``hiercvx.losses`` (default half symmetric difference, thesis
        7.2), a ``(q, q)`` array or a callable
    attributes : class-attribute scheme (default ``"class_depth"``: unit-norm rows)
    rescaling : ``"slack"`` (thesis (4.10)) or ``"margin"``
    kernel : ``"linear"``, ``"rbf"`` (``sigma`` or the median heuristic), ``"precomputed"``
        or a callable; ``class_kernel`` optionally replaces ``Lam Lam^T`` (thesis (4.17))
    solver : ``"fast"`` (working-set Algorithm 2, certified gap ``tol``) or ``"reference"``
        (CVXPY, certified; ``reference_solver`` picks the QP solver)
    warm_start : fast solver only: start from the previous fit's dual variables when they fit
        the new problem (same training labels; e.g. a path of increasing ``C``)
    """

    def __init__(self, hierarchy=None, C=1.0, loss="half_symmetric", attributes="class_depth",
                 rescaling="slack", kernel="linear", sigma=None, class_kernel=None, solver="fast",
                 tol=1e-6, max_iter=10000, reference_solver=None, warm_start=False, random_state=0,
                 verbose=False):
        store_init_params(self, locals())

    def _model_options(self):
        return self.hierarchy, self.loss, self.attributes, self.rescaling, self.class_kernel


class MulticlassSVC(_MarginSVC):
    """The Crammer–Singer multi-class SVM (flat; 0/1 loss, one weight vector per class).

    The objective is LIBLINEAR's ``crammer_singer`` one without intercept (see
    ``formulations/multiclass.md``); ``solver="reference"`` solves it with CVXPY and
    certifies it, ``solver="fast"`` uses the working-set solver with a certified gap.
    """

    def __init__(self, C=1.0, kernel="linear", sigma=None, solver="fast", tol=1e-6, max_iter=10000,
                 reference_solver=None, warm_start=False, random_state=0, verbose=False):
        store_init_params(self, locals())

    def _model_options(self):
        # flat hierarchy, indicator attributes on the classes, 0/1 loss, margin rescaling
        return None, "zero_one", "indicator", "margin", None

    def _flat_crammer_singer(self, multilabel: bool) -> bool:
        return not multilabel

    @property
    def coef_class_(self):
        """Class weight vectors ``(n_classes, n_features)`` (linear kernel)."""
        check_is_fitted(self)
        if not self._linear:
            raise AttributeError("coef_class_ exists for the linear kernel only")
        return self.class_attributes_ @ self.coef_
