"""scikit-learn classifiers for the Crammer–Singer and Cai–Hofmann hierarchical SVMs.

Thin wrappers over the method registry (:mod:`hiercvx.methods`): ``fit`` validates with
scikit-learn once, reads the labels as they come (``hiercvx.estimators._labels``), prepares
the method's model (``hsvm``; the flat linear single-label case of :class:`MulticlassSVC`:
``multiclass``), then runs the registered fast solver or the certified CVXPY reference declared
on the model (``methods.parts("hsvm").from_model``); the certificate (``objective_``,
``gap_``) is kept on the fitted estimator.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .. import methods
from ..bias import ShiftedKernel, bias_scaling, with_bias
from ..kernels import ClassKernel, make_kernel
from ..targets import label_array
from ._base import (LabelSetScoreMixin, NodeScoresMixin, check_solver_options, check_training_weights,
                    fit_label_set_threshold, is_precomputed, predict_from_scores, solver_route,
                    validate_training_X, validate_X)
from ._habits import LightPickleMixin, reports_progress, verbosity
from ._labels import in_target_form, read_training_labels, user_label_sets, user_names

#: the margin model's scoring (class scores (3.8), expansion coefficients, class attributes)
_PARTS = methods.parts("hsvm")

__all__ = ["HierarchicalSVC", "MulticlassSVC", "MarginSVC", "ShiftedKernel", "with_bias"]


class MarginSVC(LightPickleMixin, NodeScoresMixin, LabelSetScoreMixin, ClassifierMixin, BaseEstimator):
    """Shared fit/predict of the pairwise-ranking classifiers (subclasses fix the model options;
    :class:`~hiercvx.estimators.HierarchicalPerceptron` reuses the scoring)."""

    def _model_options(self):  # -> (hierarchy, loss, attributes, rescaling, class_kernel)
        raise NotImplementedError

    def _flat_crammer_singer(self, multilabel: bool) -> bool:
        """Whether the dedicated Crammer–Singer solver applies (MulticlassSVC, linear)."""
        return False

    #: whether a linear fit reports one weight vector and one bias per class in ``coef_`` and
    #: ``intercept_`` (MulticlassSVC, scikit-learn's contract) rather than one per node
    _class_weights = False

    def _check_params(self):
        check_solver_options(self.C, "C", self.tol, self.solver, self.max_iter, who=type(self).__name__)

    def _bias_scaling(self):
        """``intercept_scaling`` (checked) when ``fit_intercept``, else None."""
        return bias_scaling(getattr(self, "fit_intercept", False),
                            getattr(self, "intercept_scaling", 1.0))

    def _warm_dual(self, n_dual: int, solver_name: str):
        """The previous fit's dual variables as the starting point when ``warm_start`` is set and
        they fit this problem (same solver, same number of dual variables; the solver projects
        them onto the new feasible set, e.g. for a new ``C``); else None (a cold start)."""
        prev = getattr(self, "result_", None)
        if not (solver_route(self).warm_start and prev is not None
                and getattr(self, "_dual_solver", None) == solver_name):
            return None
        dual = getattr(prev, "dual", None)
        return dual if dual is not None and np.shape(dual) == (n_dual,) else None

    def _fast_options(self, model, solver_name: str) -> dict:
        route = solver_route(self)
        options_type = methods.get(solver_name).fast_solvers["auto"].options_type
        return dict(tol=float(self.tol), max_iter=self.max_iter, verbose=verbosity(self.verbose),
                    options=route.fast_options(options_type), **route.seeded(),
                    alpha0=self._warm_dual(model.data.n_pairs, solver_name))

    def _read_labels(self, y, n_samples: int):
        """The training labels as they come (:func:`~hiercvx.estimators._labels.read_training_labels`)."""
        return read_training_labels(y, getattr(self, "hierarchy", None), n_samples,
                                    who=type(self).__name__,
                                    internal_labels=getattr(self, "internal_labels", "self_leaf"),
                                    flat_by_design=not hasattr(self, "hierarchy"))

    @reports_progress
    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` and ``y``: one label per sample, or label sets (ancestors included or
        not); labels may stop at internal nodes (module ``hiercvx.estimators._labels``)."""
        self._check_params()
        route = solver_route(self)
        route.refuse(type(self).__name__, "method")
        precomputed = is_precomputed(self.kernel)
        X, targets, sample_weight, kernel, scaling = self._training_inputs(X, y, sample_weight)
        H, classes, labels, multilabel = (targets.hierarchy, targets.classes, targets.labels,
                                          targets.multilabel)
        self._target_form = targets.form   # predict answers in the form of an indicator y
        if self.solver == "fast" and kernel.is_linear and self._flat_crammer_singer(multilabel):
            self._fit_crammer_singer(X, H, classes, labels, sample_weight, scaling)
            return self
        model = self._margin_model(X, targets, sample_weight, kernel, scaling)
        if self.solver == "fast":  # the margin engine picks the solver (margin_engine.choose)
            res = methods.get("hsvm").fast_solvers["auto"].solve(
                model, C=float(self.C), **self._fast_options(model, "hsvm"))
            # exact steps count as iterations: a warm start may need no pass after one
            self._dual_solver = "hsvm"
            n_iter = res.n_iter + int(res.extras.get("n_newton", 0))
            coef = res.weights if model.node_weights else res.coefficients
        else:
            declare = _PARTS.from_model["primal" if model.node_weights else "dual"]
            res = declare(model, C=float(self.C), max_size=route.max_size).solve(
                solver=route.solver, **{"gap_tol": float(self.tol), **route.settings})
            self._dual_solver, n_iter = None, 1
            coef = res.weights if model.node_weights else _PARTS.coefficients(res.values["alpha"],
                                                                             model.data)
        self.objective_, self.gap_, self.n_iter_, self.result_ = res.objective, res.gap, n_iter, res
        node_bias = None
        if scaling is not None and model.node_weights:
            node_bias = np.asarray(model.solution_intercept(res), dtype=float)
        self._store_model(X, H, classes, multilabel, model.data, class_attributes=model.Lam,
                          kernel=kernel, linear=model.node_weights, coef=coef,
                          X_train=None if (model.node_weights or precomputed) else X,
                          node_bias=node_bias, scaling=scaling, paths=targets.paths)
        return self

    def _training_inputs(self, X, y, sample_weight):
        """What ``fit`` trains on: ``X`` validated, the targets read as they come, the sample
        weights, the kernel and the bias scaling (None without ``fit_intercept``)."""
        precomputed = is_precomputed(self.kernel)
        X = validate_training_X(self, X, precomputed=precomputed)
        targets = self._read_labels(y, X.shape[0])
        sample_weight = check_training_weights(sample_weight, X, self.C)
        kernel = make_kernel(self.kernel, X=None if precomputed else X)
        return X, targets, sample_weight, kernel, self._bias_scaling()

    def _margin_model(self, X, targets, sample_weight, kernel, scaling):
        """The ``hsvm`` model of the fit (the model adds the bias, :func:`hiercvx.bias.with_bias`;
        its solutions report it apart)."""
        _, loss, attributes, rescaling, class_kernel = self._model_options()
        return methods.get("hsvm").prepare(
            X, targets.labels, targets.hierarchy, loss=loss, attributes=attributes,
            classes=tuple(targets.classes.tolist()), rescaling=rescaling,
            sample_weight=sample_weight, kernel=kernel, class_kernel=class_kernel,
            fit_intercept=scaling is not None,
            intercept_scaling=1.0 if scaling is None else scaling, check_input=False)

    def _reference_size(self, X, y, sample_weight=None):
        """``(size, name)``: the estimated size (:class:`hiercvx.reference.ProblemSize`) and the
        name of the CVXPY declaration that ``fit`` with ``solver="reference"`` builds on
        ``(X, y)``, found without declaring it: what ``solver_options={"max_size": ...}`` must
        admit."""
        model = self._margin_model(*self._training_inputs(X, y, sample_weight))
        size, name = _PARTS.reference_sizes["primal" if model.node_weights else "dual"]
        return size(model), name

    def _fit_crammer_singer(self, X, H, classes, labels, sample_weight, scaling=None):
        """The flat linear single-label fit by the ``multiclass`` method's fast solver (its
        model appends LIBLINEAR's bias feature itself when ``scaling`` is given)."""
        method = methods.get("multiclass")
        model = method.prepare(X, label_array(labels), None, classes=classes,
                               sample_weight=sample_weight, fit_intercept=scaling is not None,
                               intercept_scaling=1.0 if scaling is None else scaling,
                               check_input=False)
        res = method.fast_solvers["auto"].solve(
            model, C=float(self.C), **self._fast_options(model, "multiclass"))
        self.objective_, self.gap_, self.n_iter_, self.result_ = res.objective, res.gap, res.n_iter, res
        self._dual_solver = "multiclass"
        # node weights of the flat hierarchy: root row 0 (shared by every class), then classes
        coef = np.vstack([np.zeros((1, X.shape[1])), res.weights])
        Lam = _PARTS.class_attributes(H, self._model_options()[2], tuple(classes.tolist()))
        data = dataclasses.replace(model.data, Lam=Lam, Q=Lam @ Lam.T)
        node_bias = None if scaling is None else np.concatenate([[0.0], res.intercept])
        self._store_model(X, H, classes, False, data, class_attributes=Lam, kernel=model.kernel,
                          linear=True, coef=coef, X_train=None, node_bias=node_bias, scaling=scaling)

    def _store_model(self, X, H, classes, multilabel, data, *, class_attributes, kernel, linear,
                     coef, X_train, node_bias=None, scaling=None, paths=None):
        """Keep what scoring needs (``coef``: node weights ``W`` ``(M, d)`` when ``linear``, else
        expansion coefficients over the rows of ``X_train``, or of the precomputed kernel's
        columns when ``X_train`` is None), the bias (``node_bias`` ``(M,)``: per node, linear;
        for other kernels it lives in the shifted kernel) and, for a multi-label fit, fit the
        label-set threshold and the node calibration on the training data ``X`` (``data.Y``
        the true label sets).
        ``classes_`` are in the caller's names (``paths``: the self-leaf map, or None)."""
        self.hierarchy_ = H
        self.self_leaves_ = paths
        self.classes_ = user_names(classes, paths)
        self.multilabel_ = multilabel
        self.class_attributes_ = class_attributes
        self.class_gram_ = data.Q
        self.kernel_ = kernel
        self._linear = linear
        if linear and self._class_weights:  # W and b folded into the classes: Lam W, Lam b
            coef = np.asarray(class_attributes @ coef)
            node_bias = None if node_bias is None else np.asarray(class_attributes @ node_bias)
        self.coef_ = coef
        self._X_train = X_train
        self._scaling = scaling
        self._node_bias = node_bias
        self.intercept_ = self._intercept(coef, data.Q)
        self.threshold_ = 0.0
        S = self._scores(X)
        if multilabel:
            self.threshold_ = fit_label_set_threshold(S, data.Y)
        self._fit_node_calibration(X, data.Y, scores=S)   # node_decision_function's default

    def _intercept(self, coef, Q):
        """``intercept_``: linear kernel, the bias per row of ``coef_`` (per node; per class for
        MulticlassSVC); other kernels, the constant part of each class score,
        ``scaling**2 1^T coef Q``; zeros without ``fit_intercept``."""
        if not self._linear:
            if self._scaling is None:
                return np.zeros(Q.shape[0])
            return self._scaling ** 2 * np.asarray(coef).sum(axis=0) @ Q
        return np.zeros(coef.shape[0]) if self._node_bias is None else self._node_bias

    def _scores(self, X):
        if self._linear and self._class_weights:  # class weights: X coef_^T + intercept_
            S = np.asarray(X @ self.coef_.T)
            return S if self._node_bias is None else S + self._node_bias
        if self._linear:
            S = _PARTS.class_scores(self.coef_, X, self.class_attributes_)
            return S if self._node_bias is None else S + self.class_attributes_ @ self._node_bias
        K = self.kernel_(X) if self.kernel_.name == "precomputed" else self.kernel_(X, self._X_train)
        if self._scaling is not None:  # the bias feature in the kernel (see with_bias)
            K = K + self._scaling ** 2
        return K @ self.coef_ @ self.class_gram_

    def class_scores(self, X):
        """Class scores ``(n_samples, n_classes)`` in ``classes_`` order (thesis (3.8))."""
        check_is_fitted(self)
        precomputed = self.kernel_.name == "precomputed"
        X = validate_X(self, X, accept_sparse=False if precomputed else "csr", dtype=np.float64,
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
        within ``threshold_`` of the top score (``threshold_`` fitted on the training data).
        After a fit on a 0/1 indicator ``y``, an indicator with its columns (int 0/1; CSR if
        ``y`` was sparse)."""
        pred = predict_from_scores(self.class_scores(X), self.classes_, self.multilabel_,
                                   self.threshold_)
        return in_target_form(self, user_label_sets(pred, self.self_leaves_)
                              if self.multilabel_ else pred)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = is_precomputed(self.kernel)
        return tags


class HierarchicalSVC(MarginSVC):
    """The Cai–Hofmann hierarchical SVM (thesis (4.10)), multi-label, trees and DAGs.

    Labels come as loaders give them: one node per sample, or label sets with or without
    their ancestors (reduced to the most specific labels; when that leaves one label per
    sample, the fit is single-label), stopping at leaves or at internal nodes.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The class hierarchy (tree or DAG); None: a flat hierarchy over the labels seen in
        ``fit``.
    C : float, default=1.0
        Slack penalty of (4.10): the objective is ``1/2 ||W||^2 + C sum_i xi_i`` (LIBLINEAR's
        meaning of C).
    fit_intercept, intercept_scaling : bool, default=True; float, default=1.0
        LIBLINEAR's regularized bias (on by default, as in ``LinearSVC``): a constant feature of
        value ``intercept_scaling`` appended to ``X`` at fit and predict; ``intercept_``
        ``(n_nodes,)`` is its weight column times ``intercept_scaling`` and ``coef_`` excludes
        it.  With a non-linear kernel the same feature enters the kernel,
        ``k + intercept_scaling**2``, and ``intercept_`` is the constant part of each class
        score.
    loss : str, array of shape (n_classes, n_classes) or callable, default="half_symmetric"
        The name of a loss in ``hiercvx.losses`` (default half the symmetric difference of the
        ancestor sets, thesis 7.2), a loss matrix over the classes or a callable.
    attributes : str, array of shape (n_classes, n_nodes), callable or ClassKernel, \
default="class_depth"
        The class-attribute scheme (``"class_depth"``: unit-norm rows), the matrix ``Lam``
        itself, a callable ``t(H, node, cls)``, or a :class:`hiercvx.kernels.ClassKernel`
        replacing ``Lam Lam^T`` (thesis (4.17)).
    rescaling : {"slack", "margin"}, default="slack"
        Slack rescaling (thesis (4.10)) or margin rescaling of the loss.
    kernel : str, Kernel or callable, default="linear"
        ``"linear"``, ``"rbf"`` (width by the median heuristic), a
        :class:`hiercvx.kernels.Kernel` carrying its width (``Kernel("rbf", sigma=0.5)``),
        ``"precomputed"`` (``X`` is the Gram matrix) or a callable ``k(A, B)``.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: the margin engine (:mod:`hiercvx.solvers.margin_engine`): the
        interior-point method when a Newton step is affordable (few features or samples),
        L-BFGS on the smoothed primal for thousands of pairs per example (label sets over a
        large DAG) or hundreds per example on a million pairs in all, else the working-set
        Algorithm 2.  ``"reference"``: the CVXPY primal (linear kernel) or dual (4.15) (other
        kernels), solved by a conic solver and certified.
    tol : float, default=1e-6
        The certified relative duality gap at which the fit stops (both routes; with
        ``solver="reference"`` it is the certificate's ``gap_tol``, which
        ``solver_options={"gap_tol": ...}`` overrides).
    max_iter : int or None, default=10000
        The fast solver's budget: passes of the working-set method over the examples, L-BFGS
        iterations of the smoothing solver (those a stall leaves unused go to its dual
        passes), Newton steps of the interior-point method (at most 100 whatever
        ``max_iter``); None: each solver's own default.  An L-BFGS iteration evaluates every
        pair, so on label sets over a large DAG a smaller ``max_iter`` stops at a looser
        certified gap, and the ``ConvergenceWarning`` says so.  Not used by
        ``solver="reference"``.
    verbose : bool, int or "progress", default=False
        ``True`` (or an int > 0) prints the solver's progress to stderr (iteration, gap, time
        since the fit started); ``"progress"``: a progress bar on fits longer than a few
        seconds.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        ``"self_leaf"``: a label that stops at an internal node is a class of its own, a leaf
        for the node itself under it (Cai thesis section 3.1,
        :func:`hiercvx.hierarchy.self_leaves`), predicted back as the internal node;
        ``"refuse"``: such labels raise a ``LabelError``.
    solver_options : dict, Options or None, default=None
        The settings of the route ``solver`` selects (None: defaults), as CVXPY's
        ``problem.solve(solver=..., **options)``.  ``solver="fast"``: a
        :class:`hiercvx.solvers.margin_engine.Options` or a dict of its fields (a dict for a
        field that is itself an Options, e.g. ``{"labelset": {"enter": 4}}``, builds it), with
        the keys ``"random_state"`` (seed of the visiting order), ``"warm_start"`` (start from
        the previous fit's dual variables when they fit the new problem: same training
        labels, e.g. a path of increasing ``C``) and ``"keep_dual"`` (``tol`` and ``max_iter``
        are the estimator's parameters).  ``solver="reference"``: a dict with ``"solver"``
        (the conic solver, e.g. ``"CLARABEL"``), ``"max_size"`` (the limit on the
        declaration's estimated nonzeros, default 5,000,000: a larger one is refused before
        compiling, and the error gives the value that admits it), ``"keep_dual"`` and keywords
        of :meth:`hiercvx.ReferenceProblem.solve`.  ``"keep_dual": True`` pickles the solver's
        state with the model (``result_``'s dual variables, for a warm start after
        unpickling); by default a pickled model keeps its coefficients and the certificate.

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    objective_ : float
        The primal objective of (4.10) at the fitted weights (LIBLINEAR's scale), recomputed
        from them.
    gap_ : float
        Its certified relative duality gap.
    n_iter_ : int
        The fast solver's iterations: its passes over the examples plus the exact steps it
        accepted (face, support or Newton steps), or its L-BFGS iterations; 1 with
        ``solver="reference"``.
    result_ : Solution
        The solver's :class:`~hiercvx.result.Solution` (certificate, duals, extras).
    hierarchy_ : Hierarchy
        The hierarchy the model is trained on: ``hierarchy`` (or the flat one over the labels),
        with self leaves when some label stops at an internal node; ``coef_``'s rows follow its
        nodes.
    self_leaves_ : PartialPaths or None
        The self-leaf map (:class:`~hiercvx.hierarchy.PartialPaths`) when some training label
        stops at an internal node, else None.
    classes_ : ndarray of shape (n_classes,)
        The classes in the caller's names: the leaves, and the internal nodes that training
        labels stop at.
    multilabel_ : bool
        Whether the training labels were label sets (``predict`` then returns label sets).
    class_attributes_ : ndarray of shape (n_classes, n_nodes)
        The class attributes ``Lam`` (thesis (3.8)): class ``y`` scores
        ``sum_v Lam[y, v] <w_v, x>``.
    class_gram_ : ndarray of shape (n_classes, n_classes)
        ``Lam Lam^T``, or the Gram of a :class:`~hiercvx.kernels.ClassKernel` (thesis (4.17)).
    kernel_ : Kernel
        The fitted :class:`~hiercvx.kernels.Kernel`, width included.
    coef_ : ndarray of shape (n_nodes, n_features) or (n_train, n_classes)
        Linear kernel: the node weights ``W`` in ``hierarchy_.nodes`` order, without the bias
        column.  Other kernels: the expansion coefficients over the training samples (the
        precomputed kernel's columns), class scores ``k(x, X) coef_ class_gram_``.
    intercept_ : ndarray of shape (n_nodes,) or (n_classes,)
        Linear kernel: the bias per node (zeros without ``fit_intercept``).  Other kernels:
        the constant part of each class score.
    threshold_ : float
        The multi-label decision rule's gap: ``predict`` returns every class whose score is
        within ``threshold_`` of the top score, fitted on the training data for the mean
        example-based F1; 0.0 for a single-label fit.
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function``; None
        without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 loss="half_symmetric", attributes="class_depth", rescaling="slack",
                 kernel="linear", solver="fast", tol=1e-6, max_iter=10000, verbose=False,
                 internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.loss = loss
        self.attributes = attributes
        self.rescaling = rescaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose

    def _model_options(self):
        if isinstance(self.attributes, ClassKernel):  # the attributes given by their Gram (4.17)
            return self.hierarchy, self.loss, "class_depth", self.rescaling, self.attributes.gram
        return self.hierarchy, self.loss, self.attributes, self.rescaling, None


class MulticlassSVC(MarginSVC):
    """The Crammer–Singer multi-class SVM (flat; 0/1 loss, one weight vector per class).

    The objective is LIBLINEAR's ``crammer_singer`` one, ``1/2 ||W||^2 + C sum_i xi_i`` (C in
    LIBLINEAR's meaning; see ``formulations/multiclass.md``); at the defaults
    (``fit_intercept=True``, ``intercept_scaling=1.0``, ``C=1.0``) it is the problem of
    ``sklearn.svm.LinearSVC(multi_class="crammer_singer")``, and ``coef_``, ``intercept_``
    mean what they mean there: ``decision_function(X) = X @ coef_.T + intercept_`` (linear
    kernel).
    It is flat: labels are read as they are (label sets are multi-label over the names seen,
    fitted by the margin model of :class:`HierarchicalSVC` over the flat hierarchy, with
    indicator class attributes, the 0/1 loss and margin rescaling).

    Parameters
    ----------
    C : float, default=1.0
        Slack penalty: the objective is ``1/2 ||W||^2 + C sum_i xi_i`` (LIBLINEAR's meaning).
    fit_intercept, intercept_scaling : bool, default=True; float, default=1.0
        LIBLINEAR's regularized bias: a constant feature of value ``intercept_scaling``
        appended to ``X`` at fit and predict; ``intercept_`` ``(n_classes,)`` is that
        feature's weight times ``intercept_scaling`` and ``coef_`` excludes it.  With a
        non-linear kernel the feature enters the kernel (``k + intercept_scaling**2``).
    kernel : str, Kernel or callable, default="linear"
        As in :class:`HierarchicalSVC`.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: the margin engine (:mod:`hiercvx.solvers.margin_engine`): the
        interior-point method when a Newton step is affordable, else the sequential dual
        (Crammer–Singer) solver (linear kernel, single-label) or the working-set solver, with
        a certified gap.  ``"reference"``: CVXPY, certified at ``tol``.
    tol : float, default=1e-6
        The certified relative duality gap at which the fit stops (both routes; with
        ``solver="reference"`` ``solver_options={"gap_tol": ...}`` overrides it).
    max_iter : int or None, default=10000
        The fast solver's budget: passes over the examples of the sequential dual or
        working-set solver, L-BFGS iterations of the smoothing solver (label sets), Newton
        steps of the interior-point method (at most 100 whatever ``max_iter``); None: each
        solver's own default.  Not used by ``solver="reference"``.
    verbose : bool, int or "progress", default=False
        As in :class:`HierarchicalSVC`.
    solver_options : dict, Options or None, default=None
        As in :class:`HierarchicalSVC`.

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    objective_ : float
        The primal objective at the fitted weights, recomputed from them.
    gap_ : float
        Its certified relative duality gap.
    n_iter_ : int
        The fast solver's iterations; 1 with ``solver="reference"``.
    result_ : Solution
        The solver's :class:`~hiercvx.result.Solution`.
    hierarchy_ : Hierarchy
        The flat hierarchy of the fit: an artificial root over the classes.
    self_leaves_ : None
        Always None (a flat model has no internal nodes).
    classes_ : ndarray of shape (n_classes,)
        The class labels seen in ``fit``.
    multilabel_ : bool
        Whether the training labels were label sets (``predict`` then returns label sets).
    class_attributes_ : ndarray of shape (n_classes, n_classes + 1)
        The indicator class attributes over ``hierarchy_.nodes`` (root first).
    class_gram_ : ndarray of shape (n_classes, n_classes)
        ``class_attributes_ class_attributes_^T``.
    kernel_ : Kernel
        The fitted :class:`~hiercvx.kernels.Kernel`, width included.
    coef_ : ndarray of shape (n_classes, n_features) or (n_train, n_classes)
        Linear kernel: one weight vector per class, in ``classes_`` order, without the bias
        column (``coef_class_`` is the same array).  Other kernels: the expansion
        coefficients over the training samples (the precomputed kernel's columns), class
        scores ``k(x, X) coef_ class_gram_``.
    intercept_ : ndarray of shape (n_classes,)
        The bias per class (linear kernel; zeros without ``fit_intercept``), or the constant
        part of each class score (other kernels).
    threshold_ : float
        The multi-label decision rule's gap (as in :class:`HierarchicalSVC`); 0.0 for a
        single-label fit.
    node_calibration_ : None
        Always None: a flat model has no node scores.
    """

    _class_weights = True

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0, kernel="linear",
                 solver="fast", tol=1e-6, max_iter=10000, verbose=False, solver_options=None):
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose

    def _model_options(self):
        # flat hierarchy, indicator attributes on the classes, 0/1 loss, margin rescaling
        return None, "zero_one", "indicator", "margin", None

    def _flat_crammer_singer(self, multilabel: bool) -> bool:
        return not multilabel

    @property
    def coef_class_(self):
        """``coef_``: the class weight vectors ``(n_classes, n_features)`` (linear kernel)."""
        check_is_fitted(self)
        if not self._linear:
            raise AttributeError("coef_class_ exists for the linear kernel only")
        return self.coef_

