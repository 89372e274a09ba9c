"""scikit-learn classifiers for the Normalized Hierarchical SVM and the shared-norm SVM
(Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*, arXiv:1508.02479, 2016).

Thin wrappers over the registry (:mod:`hiercvx.methods`, entries ``"nhsvm"`` and
``"shared_norm"``): scikit-learn validation once, the labels read as they come
(``hiercvx.estimators._labels``), the method's model
(:func:`hiercvx.models.nhsvm.prepare` / :func:`~hiercvx.models.nhsvm.prepare_shared`), then its
fast certified solver (:func:`hiercvx.solvers.nhsvm_fw.solve`,
:func:`hiercvx.solvers.shared_norm.solve`) or, with ``solver="reference"``, the CVXPY
declaration built from the model (:func:`~hiercvx.formulations.nhsvm.primal_from_model`,
:func:`~hiercvx.formulations.nhsvm.cutting_plane_from_model`,
:func:`~hiercvx.formulations.nhsvm.shared_primal_from_model`).  The certificate
(``objective_``, ``gap_``) is kept on the fitted estimator.  Prediction is
the paper's: the best leaf (:func:`hiercvx.inference.best_leaf`) for single-label fits, the best
label set of ``Y_m`` (:func:`hiercvx.inference.best_label_set`) for multi-label fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .. import methods
from ..exceptions import InputError
from ._base import (LabelSetScoreMixin, NodeScoresMixin, check_solver_options, held_nodes,
                    solver_route, validate_training_X, validate_X)
from ._habits import LightPickleMixin, reports_progress, verbosity
from ._labels import in_target_form, read_training_labels, user_label_sets, user_names

#: the models, declarations and inference reach the estimators through the registry
_NHSVM = methods.parts("nhsvm")
_SHARED = methods.parts("shared_norm")

__all__ = ["NormalizedHierarchicalSVC", "SharedNormSVC", "PathWeights"]


@dataclass(frozen=True)
class PathWeights:
    """The node weights ``alpha`` of the NHSVM as one of the paper's programs, with its
    settings: ``NormalizedHierarchicalSVC(alpha=PathWeights("power", rho=3.0))``.

    Heejin Choi, Yutaka Sasaki, Nathan Srebro, *Normalized Hierarchical SVM*,
    arXiv:1508.02479, 2016: ``"power"`` is (6) with exponent ``rho``, ``"maxmin"`` (7),
    ``"dag"`` (6) under the relaxation (8) with ``T``; computed by
    :func:`hiercvx.formulations.nhsvm.path_weights`.

    Parameters
    ----------
    method : str
        ``"power"``, ``"maxmin"`` or ``"dag"``.
    rho : float
        The exponent of (6) (> 1).
    T : float, optional
        The bound of (8) (None: the paper's 1.5 for ``"dag"``, equality (4) otherwise).
    directional : bool, optional
        The directional constraints (None: on for ``"maxmin"`` only).
    """

    method: str = "power"
    rho: float = 2.0
    T: float | None = None
    directional: bool | None = None


class _NodeScoreClassifier(LightPickleMixin, NodeScoresMixin, LabelSetScoreMixin, ClassifierMixin,
                           BaseEstimator):
    """Shared prediction: node scores -> best leaf (single-label) or best label set."""

    #: calibrated node scores on the margin of the best path under a node over the best path
    #: outside it (they rank better than standardized path scores for these models)
    _node_margin_method = "max_marginal"

    def _check_common(self) -> float:
        """Validate the shared options; return the paper's ``lam = 1 / (2 C)``."""
        check_solver_options(self.C, "C", self.tol, self.solver, self.max_iter,
                             who=type(self).__name__)
        return 1.0 / (2.0 * float(self.C))

    def _set_weights(self, model, res, lam):
        """``coef_`` / ``intercept_`` from the solution (weights without the bias column and
        the node biases, :meth:`~hiercvx.models.nhsvm.NHSVMModel.solution_weights`; zeros
        without ``fit_intercept``); ``objective_`` on the C scale, ``1/2 ||W||^2 + C sum loss
        = C * (10)`` with ``C = 1 / (2 lam)``."""
        self.coef_, self.intercept_ = model.solution_weights(res)
        self.objective_, self.gap_ = res.objective / (2.0 * lam), res.gap
        self.C_ = 1.0 / (2.0 * lam)
        self.result_ = res

    def _targets(self, X, y, single_label: bool = False):
        X = validate_training_X(self, X)
        targets = read_training_labels(y, self.hierarchy, X.shape[0], who=type(self).__name__,
                                       internal_labels=self.internal_labels,
                                       single_label=single_label)
        return X, targets

    def _set_classes(self, targets):
        """``classes_`` in the caller's names; the model's class nodes on ``hierarchy_``."""
        H, classes = targets.hierarchy, targets.classes
        self.hierarchy_ = H
        self.self_leaves_ = targets.paths
        self.classes_ = user_names(classes, targets.paths)
        self.multilabel_ = targets.multilabel
        self._target_form = targets.form   # predict answers in the form of an indicator y
        self._class_nodes = np.array([H.index(c) for c in classes.tolist()], dtype=np.int64)
        position = np.full(len(H), -1, dtype=np.int64)
        position[self._class_nodes] = np.arange(len(classes))
        self._class_position = position

    def _calibrate_nodes(self, X, targets):
        """``node_decision_function``'s calibration on the training samples."""
        held = held_nodes(targets.labels, targets.hierarchy, self.hierarchy)
        self._fit_node_calibration(X, held=held, scores=self._class_scores_of(self._node_scores(X)))

    def node_scores(self, X):
        """Node scores ``(n_samples, n_nodes)`` over ``hierarchy_.nodes``; a label set's score is
        the sum over its nodes (eq. (10))."""
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self._node_scores(X)

    def class_scores(self, X):
        """Leaf (class) scores ``(n_samples, n_classes)`` in ``classes_`` order: the sum of the node
        scores on each class's ancestor set."""
        return self._class_scores_of(self.node_scores(X))

    def _class_scores_of(self, S):
        paths = self.hierarchy_.ancestor_matrix[self._class_nodes].astype(float)
        return np.asarray((paths @ S.T).T)

    def decision_function(self, X):
        """Class scores; with two classes (single-label), the scikit-learn convention: one
        column, ``score(classes_[1]) - score(classes_[0])``."""
        S = self.class_scores(X)
        if S.shape[1] == 2 and not self.multilabel_:
            return S[:, 1] - S[:, 0]
        return S

    def predict(self, X):
        """Single-label: the leaf of largest path score (``best_leaf``).  Multi-label: the label
        set of ``Y_m`` with the largest total node score (``best_label_set``), as a frozenset of
        leaves.  After a fit on a 0/1 indicator ``y``, an indicator with its columns."""
        S = self.node_scores(X)
        H = self.hierarchy_
        if not self.multilabel_:
            return in_target_form(self, self.classes_[self._class_position[_NHSVM.best_leaf(S, H)]])
        oracle = _NHSVM.label_set_oracle(H, getattr(self, "inference", "auto"))
        Z = oracle.solve(S, verbose=bool(verbosity(getattr(self, "verbose", False))))
        Z = Z[:, self._class_nodes]
        return in_target_form(self, user_label_sets(
            [frozenset(self.classes_[row].tolist()) for row in Z], self.self_leaves_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class NormalizedHierarchicalSVC(_NodeScoreClassifier):
    """The Normalized Hierarchical SVM, NHSVM paper eq. (10) (or its variant (13)).

    ``min_W lam sum_n ||W_n||^2 + sum_i max_y [s_i(y) - s_i(y_i) + Delta(y, y_i)]`` with node
    scores ``s_n(x) = sqrt(alpha_n) W_n . x``.  Single-label (one leaf per sample; ``Delta`` the
    normalized margin (9)) or multi-label (label sets of leaves; ``Delta`` a decomposable loss,
    section 7.1), on trees and DAGs.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The class hierarchy (tree or DAG); None: a flat hierarchy over the labels seen in
        ``fit``.
    C : float, default=1.0
        The LIBLINEAR meaning, ``1/2 ||W||^2 + C sum_i loss_i``; the paper's (10) is solved
        with ``lam = 1 / (2 C)`` (its objective times ``C``).
    fit_intercept, intercept_scaling : bool, default=True; float, default=1.0
        A regularized bias per node through a constant feature of value ``intercept_scaling``
        appended to ``X`` at fit and predict (LIBLINEAR's treatment); node scores
        ``sqrt(alpha_n) (W_n . x + b_n)``.
    alpha : str, PathWeights, array of shape (n_nodes,) or None, default=None
        The node weights: ``"power"`` ((6) with ``rho = 2``), ``"maxmin"`` ((7)), ``"dag"``
        ((6) under (8) with ``T = 1.5``), a :class:`PathWeights` carrying the program's
        settings (``PathWeights("power", rho=3.0)``, ``PathWeights("dag", T=2.0)``), an array
        over ``hierarchy.nodes`` (every leaf's ancestor sum 1, as in (4); the weights of the
        relaxation (8) are given as ``PathWeights("dag", T=...)``), or None (``"power"`` on
        trees, ``"dag"`` on DAGs).
    variant : {"nhsvm", "13"}, default="nhsvm"
        Eq. (10), or eq. (13) (single-label only).
    loss : str, DecomposableLoss or None, default=None
        The multi-label loss: ``"leaf_hamming"`` (None), ``"hamming"`` or a
        :class:`~hiercvx.inference.DecomposableLoss`; single-label fits use the normalized
        margin (9).
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: :mod:`hiercvx.solvers.nhsvm_fw`, certified gap ``tol``.
        ``"reference"``: CVXPY, certified at ``tol`` (cutting planes for multi-label).
    tol : float, default=1e-5
        The certified relative gap at which the fit stops (both routes; for the reference
        ``solver_options={"gap_tol": ...}`` overrides it).
    max_iter : int, default=1000
        The fast solver's budget: passes over the data of the Frank–Wolfe methods (one
        certificate each), rounds of the cutting planes, epochs of SGD; on single-label (10)
        the margin engine's passes (Newton steps of its interior point, at most 100).  A
        ``ConvergenceWarning`` when it runs out.  Not used by ``solver="reference"`` (its
        cutting-plane rounds take ``solver_options={"max_iter": ...}``).
    inference : {"auto", "dp", "enumerate", "ilp", "lp"}, default="auto"
        Label-set inference for multi-label training and prediction (``"auto"``: tree DP; on
        DAGs enumeration up to 10 leaves, else the integer program (19); ``"lp"``: LP
        relaxation with ILP fallback).
    verbose : bool, int or "progress", default=False
        As in :class:`~hiercvx.estimators.HierarchicalSVC`.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`~hiercvx.estimators.HierarchicalSVC`: labels come as loaders give them
        (label sets with their ancestors, labels that stop at internal nodes).
    solver_options : dict, Options or None, default=None
        The settings of the route ``solver`` selects, as in
        :class:`~hiercvx.estimators.HierarchicalSVC`.  ``solver="fast"``: a
        :class:`hiercvx.solvers.nhsvm_fw.Options` or a dict of its fields, with the keys
        ``"method"`` (``"auto"``, the default: the margin engine on single-label (10) — the
        interior point when affordable —; otherwise pairwise Frank-Wolfe, finished after 50
        passes by n-slack cutting planes with an interior-point master while ``n_nodes *
        n_features`` is at most 4000; ``"pairwise"``, ``"cutting_plane"``, ``"bcfw"``,
        ``"sgd"``, ``"working_set"``, ``"interior_point"``), ``"random_state"`` and
        ``"keep_dual"``; ``tol`` and ``max_iter`` override the fields of the same name.
        ``solver="reference"``: ``{"solver": "CLARABEL", "max_size": ..., ...}`` (as
        :class:`~hiercvx.estimators.HierarchicalSVC`).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    n_iter_ : int
        The fast solver's passes (rounds, epochs); the reference's cutting-plane rounds
        (multi-label) or 1.
    coef_ : ndarray of shape (n_nodes, n_features)
        The node weights ``W`` in ``hierarchy_.nodes`` order, without the bias column.
    intercept_ : ndarray of shape (n_nodes,)
        The node biases (zeros without ``fit_intercept``).
    objective_ : float
        ``1/2 ||W||^2 + C sum loss`` at the fit (``C`` times (10); with the bias in ``W``).
    gap_ : float
        Its certified relative gap.
    C_ : float
        The C used, ``1 / (2 lam)``.
    result_ : Solution
        The solver's :class:`~hiercvx.result.Solution`, on the paper's scale ((10) with
        ``lam``).
    alpha_ : ndarray of shape (n_nodes,)
        The node weights used.
    hierarchy_ : Hierarchy
        The hierarchy trained on (with self leaves when labels stop at internal nodes).
    self_leaves_ : PartialPaths or None
        The self-leaf map (:class:`~hiercvx.hierarchy.PartialPaths`), or None.
    classes_ : ndarray of shape (n_classes,)
        The leaves, in the caller's names.
    multilabel_ : bool
        Whether the training labels were label sets.
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function``; None
        without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0, alpha=None,
                 variant="nhsvm", loss=None, solver="fast", tol=1e-5, max_iter=1000,
                 inference="auto", verbose=False, internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.alpha = alpha
        self.variant = variant
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.inference = inference
        self.verbose = verbose

    def _path_weights(self, H):
        """``(alpha, T)``: the node weights over ``H.nodes`` and the T of (8) they satisfy."""
        alpha = self.alpha
        if alpha is None:
            alpha = "power" if H.is_tree else "dag"
        if isinstance(alpha, str):
            alpha = PathWeights(alpha)
        if not isinstance(alpha, PathWeights):
            return _NHSVM.check_path_weights(alpha, H), None
        T = _NHSVM.dag_T if (alpha.method == "dag" and alpha.T is None) else alpha.T
        return _NHSVM.path_weights(H, method=alpha.method, rho=alpha.rho, T=T,
                                   directional=alpha.directional), T

    @reports_progress
    def fit(self, X, y):
        """Fit on ``X`` and ``y``: one node per sample, or label sets (ancestors included or
        not), stopping at leaves or internal nodes (see ``internal_labels``)."""
        lam = self._check_common()
        route = solver_route(self)
        route.refuse(type(self).__name__, "warm_start")
        known = _NHSVM.inference_methods
        if not isinstance(self.inference, str) or self.inference not in known:
            raise InputError(f"inference must be one of {known}, got {self.inference!r}")
        X, targets = self._targets(X, y)
        H, labels, multilabel = targets.hierarchy, targets.labels, targets.multilabel
        if multilabel:  # refuses a method that cannot run on H, naming inference=, not method=
            _NHSVM.label_set_oracle(H, self.inference, param="inference")
        alpha, T = self._path_weights(H)
        registered = methods.get("nhsvm")
        model = registered.prepare(X, labels, H, alpha=alpha, variant=self.variant,
                                   multilabel=multilabel, loss=self.loss, T=T,
                                   fit_intercept=self.fit_intercept,
                                   intercept_scaling=self.intercept_scaling, check_input=False)
        if self.solver == "fast":
            fast = registered.fast_solvers["pairwise"]
            res = fast.solve(
                model, lam, method="auto" if route.method is None else route.method, tol=float(self.tol),
                max_iter=self.max_iter, inference=self.inference, verbose=verbosity(self.verbose),
                options=route.fast_options(fast.options_type), **route.seeded())
            res.extras["state"] = None  # the dual caches are for warm starts only; keep the model light
            self.n_iter_ = res.n_iter
        elif model.multilabel:
            res = _NHSVM.from_model["cutting_plane"](
                model, lam, inference=self.inference, max_size=route.max_size,
                max_iter=route.settings.get("max_iter", getattr(route.settings.get("options"),
                                                                "max_iter", None))).solve(
                # no bar of its own: its rounds are logged, which verbose shows
                solver=route.solver, **{"gap_tol": float(self.tol), "verbose": False,
                                        **route.settings})
            self.n_iter_ = res.n_iter
        else:
            res = _NHSVM.from_model["primal"](model, lam, max_size=route.max_size).solve(
                solver=route.solver, **{"gap_tol": float(self.tol), **route.settings})
            self.n_iter_ = 1
        self._set_weights(model, res, lam)
        self.alpha_ = np.asarray(alpha, dtype=float)
        self._set_classes(targets)
        self._calibrate_nodes(X, targets)
        return self

    def _node_scores(self, X):
        S = _NHSVM.node_scores(self.coef_, X, self.alpha_)
        return S + (np.sqrt(self.alpha_) * self.intercept_)[None, :]


class SharedNormSVC(_NodeScoreClassifier):
    """The shared-norm SVM, NHSVM paper eq. (14): node weights ``U`` and sharing weights ``alpha``
    learned jointly (single-label: the paper's section 6 is multi-class).

    ``min_{U, alpha} lam sum_n ||U_n||^2 / alpha_n + sum_i max_l [S_il - S_{i l_i} + Delta(l, l_i)]``
    with ``S = X U^T A^T``, ``sum_{n in anc(l)} alpha_n <= 1``, ``alpha >= 0``.

    Labels as for :class:`NormalizedHierarchicalSVC` (``internal_labels``), one path per
    sample: label sets with their ancestors are taken, several paths are refused.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The class hierarchy; None: flat.
    C : float, default=1.0
        The LIBLINEAR meaning, ``1/2 sum_n ||U_n||^2 / alpha_n + C sum_i loss_i``; (14) is
        solved with ``lam = 1 / (2 C)`` (its objective times ``C``).
    fit_intercept, intercept_scaling : bool, default=True; float, default=1.0
        A regularized bias per node through a constant feature of value ``intercept_scaling``
        appended to ``X`` at fit and predict; node scores ``U_n . x + b_n``.
    loss : str or array of shape (n_classes, n_classes), default="zero_one"
        ``Delta``: a loss name of :mod:`hiercvx.losses` or a ``(q, q)`` array over
        ``hierarchy.leaves``.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: the alternating algorithm (:func:`hiercvx.solvers.shared_norm.solve`,
        certified gap ``tol``); ``"reference"``:
        :func:`hiercvx.formulations.nhsvm.shared_primal`, certified at ``tol``.
    tol : float, default=1e-4
        The certified relative gap (both routes).
    max_iter : int, default=1000
        The fast solver's alternations (weight step + alpha step, each certified).
    verbose : bool, int or "progress", default=False
        As in :class:`NormalizedHierarchicalSVC`.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`NormalizedHierarchicalSVC`.
    solver_options : dict, Options or None, default=None
        As in :class:`NormalizedHierarchicalSVC`, with the fields of
        ``hiercvx.solvers.shared_norm.Options`` (e.g. ``{"inner_max_iter": 1000}``:
        passes of each weight step) and the keys ``"random_state"`` and ``"keep_dual"``.

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    n_iter_ : int
        The fast solver's alternations; 1 with ``solver="reference"``.
    alpha_ : ndarray of shape (n_nodes,)
        The learned sharing weights.
    coef_ : ndarray of shape (n_nodes, n_features)
        ``U`` (node scores ``X U^T + intercept_``).
    intercept_ : ndarray of shape (n_nodes,)
        The node biases.
    objective_ : float
        ``C`` times (14) (the C scale).
    gap_ : float
        Its certified relative gap.
    C_ : float
        The C used, ``1 / (2 lam)``.
    result_ : Solution
        The solver's :class:`~hiercvx.result.Solution` (the paper's scale).
    hierarchy_ : Hierarchy
        The hierarchy trained on (with self leaves when labels stop at internal nodes).
    self_leaves_ : PartialPaths or None
        The self-leaf map, or None.
    classes_ : ndarray of shape (n_classes,)
        The leaves, in the caller's names.
    multilabel_ : bool
        Always False (single-label).
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function``; None
        without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 loss="zero_one", solver="fast", tol=1e-4, max_iter=1000, verbose=False,
                 internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose

    @reports_progress
    def fit(self, X, y):
        """Fit on ``X`` and ``y`` (one path per sample)."""
        lam = self._check_common()
        route = solver_route(self)
        route.refuse(type(self).__name__, "method", "warm_start")
        X, targets = self._targets(X, y, single_label=True)
        H, labels = targets.hierarchy, targets.labels
        registered = methods.get("shared_norm")
        model = registered.prepare(X, labels, H, loss=self.loss, fit_intercept=self.fit_intercept,
                                   intercept_scaling=self.intercept_scaling, check_input=False)
        if self.solver == "fast":
            fast = registered.fast_solvers["alternating"]
            res = fast.solve(model, lam, tol=float(self.tol), max_iter=self.max_iter,
                             verbose=verbosity(self.verbose),
                             options=route.fast_options(fast.options_type),
                             **route.seeded())
            self.n_iter_, self.alpha_ = res.n_iter, res.alpha
        else:
            res = _SHARED.from_model["primal"](model, lam, max_size=route.max_size).solve(
                solver=route.solver, **{"gap_tol": float(self.tol), **route.settings})
            self.n_iter_ = 1
            self.alpha_ = _SHARED.scaled_alpha(res.values["alpha"], model.A)
        self._set_weights(model, res, lam)
        self._set_classes(targets)
        self._calibrate_nodes(X, targets)
        return self

    def _node_scores(self, X):
        XU = X @ self.coef_.T
        XU = XU.toarray() if hasattr(XU, "toarray") else np.asarray(XU)
        return XU + self.intercept_[None, :]
