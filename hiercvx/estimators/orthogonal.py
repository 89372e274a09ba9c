"""scikit-learn classifier for orthogonal transfer (Zhou, Xiao, Wu 2011) and its baselines.

One estimator, :class:`OrthogonalTransferSVC`, with a ``method`` switch over the five problems
of the paper: ``"orthogonal"`` (4), ``"flatmult"`` (12) over the leaves, ``"hiermult"`` (12)
at every internal node, ``"transfer"`` and ``"treeloss"`` (section 5).  Training is done by
dual block-coordinate ascent (:mod:`hiercvx.solvers.orthogonal_dual`, ``solver="fast"``, the
default ``solver_options={"method": "dual_cd"}``; HIERMULT's node problems go to the interior
point and FLATMULT to the Crammer--Singer solver, certified the same way), by RDA with
optimality bounds (:mod:`hiercvx.solvers.rda`, ``solver_options={"method": "rda"}``, the
paper's Algorithm 1) or by the certified
CVXPY reference (:func:`hiercvx.formulations.orthogonal.primal_from_model`, ``solver="reference"``),
both on the model the registry's ``prepare`` builds (:mod:`hiercvx.models.orthogonal`); either way
the certificate is kept (``objective_``, ``gap_``).  Prediction follows the paper: the recursive
classifier (1) for orthogonal / HIERMULT / TRANSFER, the flat classifier (2) for FLATMULT
(over the leaves) and TREELOSS (over its classes, with ``w_y = sum_{A+(y)} u``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .. import methods
from .._validation import check_positive
from ..exceptions import HierarchyError, InputError
from ..result import check_iteration_options
from ._base import (SOLVERS, NodeScoresMixin, held_nodes, solver_route, validate_training_X,
                    validate_X)
from ._habits import LightPickleMixin, reports_progress, verbosity
from ._labels import (in_target_form, predicted_labels, read_test_labels, read_training_labels,
                      user_names)

#: the reference on a model, the recursive classifier (1) and the paper's error (section 2)
_PARTS = methods.parts("orthogonal")

__all__ = ["OrthogonalTransferSVC"]

_TOP_DOWN = ("orthogonal", "hiermult", "transfer")
#: the registered fast solvers of the five methods (``hiercvx.methods.orthogonal``)
FAST_SOLVERS = ("dual_cd", "rda")


class OrthogonalTransferSVC(LightPickleMixin, NodeScoresMixin, ClassifierMixin, BaseEstimator):
    """Hierarchical SVM with orthogonal transfer (Zhou, Xiao, Wu), or one of its baselines.

    Labels are node names, one path per sample: label sets that are one path with its
    ancestors (as ``hiercvx.datasets.load_arff`` gives them) are read as their deepest node;
    several paths are refused.  ``classes_`` are the leaves (the non-root nodes for TREELOSS
    over ``"nodes"``), in the caller's names.  ``score`` is 1 minus the paper's error rate
    (section 2: a prediction is right iff the true label is one of its ancestors or itself),
    which is accuracy for leaf labels.

    Parameters
    ----------
    hierarchy : Hierarchy (a tree) or None (a flat hierarchy over the labels seen in ``fit``)
    C : the LIBLINEAR meaning, ``Omega(W) + C sum_k xi_k`` (``Omega = 1/2 ||W||^2`` for the
        baselines); the papers' (4) / (12) scale the hinge by ``C_paper / N``, so the solver and
        the reference get ``C_paper = C * N`` (N training samples)
    fit_intercept, intercept_scaling : a regularized bias per node through a constant feature of
        value ``intercept_scaling`` (LIBLINEAR's treatment, :mod:`hiercvx.bias`; under ``K`` like
        every other feature), passed to the model's ``prepare``; the scores are
        ``<w_n, x> + b_n``
    K : ``(m, m)`` matrix over ``hierarchy.nodes[1:]`` satisfying Theorem 1 (method
        ``"orthogonal"`` only); default heuristic (6) with ``alpha`` (lowered when its
        comparison matrix is not positive definite, logged at INFO, which ``verbose`` shows)
    alpha : heuristic (6)'s off-diagonal value; the default 1.0 is lowered as the heuristic
        needs, an ``alpha`` set to another value is lowered with a ``UserWarning``
    method : ``"orthogonal"``, ``"flatmult"``, ``"hiermult"``, ``"transfer"`` or ``"treeloss"``
        (the registered methods of the paper, ``hiercvx.methods.get(method)``)
    solver : ``"fast"`` (stops on a certified relative gap ``tol``) or ``"reference"`` (the
        exact SDP / QP, certified)
    tol, max_iter : the certified relative gap (both routes; ``solver_options={"gap_tol": ...}``
        overrides it for the reference) and the fast solver's iteration budget
    treeloss_classes : TREELOSS's classes, ``"nodes"`` (the paper: every non-root node) or
        ``"leaves"``
    verbose : ``True`` (or an int > 0) prints the solver's progress to stderr; ``"progress"``:
        a progress bar on long fits (as in :class:`~hiercvx.estimators.HierarchicalSVC`)
    internal_labels : ``"self_leaf"`` (default) or ``"refuse"``.  Orthogonal transfer,
        HIERMULT, TRANSFER and TREELOSS over ``"nodes"`` take a label that stops at an internal
        node as the paper does (its path ``A+(y)`` ends there); FLATMULT and TREELOSS over
        ``"leaves"`` learn it through a leaf for the node itself (Cai thesis section 3.1),
        predicted back as the internal node; ``"refuse"`` refuses such labels for every method
    solver_options : the settings of the route ``solver`` selects, as in
        :class:`~hiercvx.estimators.HierarchicalSVC`.  ``solver="fast"``: a dict with
        ``"method"``, the registered fast solver: ``"dual_cd"`` (the default: dual
        block-coordinate ascent; ``max_iter`` counts passes over the samples; HIERMULT and
        FLATMULT take the faster routes of :func:`hiercvx.solvers.orthogonal_dual.solve`,
        ``result_.extras["route"]``) or ``"rda"`` (Algorithm 1; ``max_iter`` counts
        subgradient steps), ``"random_state"`` (``"dual_cd"``'s visiting order),
        ``"keep_dual"`` and fields of its Options
        (:class:`hiercvx.solvers.orthogonal_dual.Options`, :class:`hiercvx.solvers.rda.Options`),
        or such an Options itself.  ``solver="reference"``: ``{"solver": "SCS", "max_size":
        ..., ...}`` (default: the conic solver chosen by hiercvx; ``max_size`` as in
        :class:`~hiercvx.estimators.HierarchicalSVC`)

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    result_ : Solution
        The :class:`~hiercvx.result.Solution` (the fast solver's or the reference's).
    n_iter_ : int
        The fast solver's passes / iterations (reference: the conic solver's iterations).
    objective_ : float
        ``Omega(W) + C sum xi`` at the fitted weights.
    lower_bound_ : float
        The certified lower bound on the optimal objective.
    gap_ : float
        The certified relative gap.
    K_ : ndarray of shape (n_nodes - 1, n_nodes - 1) or None
        The K used over ``hierarchy_.nodes[1:]`` (method ``"orthogonal"``; None for the
        baselines).
    coef_ : ndarray of shape (n_nodes, n_features)
        Weights in ``hierarchy_.nodes`` order (TREELOSS: the increments u), without the bias
        column.
    intercept_ : ndarray of shape (n_nodes,)
        Node biases (zeros without ``fit_intercept``).
    hierarchy_ : Hierarchy
        The hierarchy trained on (with self leaves when FLATMULT or TREELOSS over
        ``"leaves"`` learn a label that stops at an internal node).
    self_leaves_ : PartialPaths or None
        The self-leaf map (:class:`~hiercvx.hierarchy.PartialPaths`), or None.
    classes_ : ndarray of shape (n_classes,)
        The leaves (the non-root nodes for TREELOSS over ``"nodes"``), in the caller's names.
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function``; None
        without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0, K=None,
                 alpha=1.0, method="orthogonal", solver="fast", tol=1e-4, max_iter=20000,
                 treeloss_classes="nodes", verbose=False, internal_labels="self_leaf",
                 solver_options=None):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.K = K
        self.alpha = alpha
        self.method = method
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.treeloss_classes = treeloss_classes
        self.verbose = verbose

    # ------------------------------------------------------------------ fit
    def _check_params(self):
        """The estimator's own switches and C (scaled to the paper's ``C * N`` here); tol,
        max_iter, K, fit_intercept and intercept_scaling are checked once, where they are used
        (the fast solver, the reference builder, ``prepare``)."""
        check_positive(self.C, "C")
        if self.solver not in SOLVERS:
            raise InputError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        if self.method not in _PARTS.methods:
            raise InputError(f"method must be one of {_PARTS.methods}, got {self.method!r}")
        check_positive(self.alpha, "alpha")
        check_iteration_options(self.tol, self.max_iter, who=type(self).__name__)
        route = solver_route(self)
        if self.solver == "fast" and route.method not in (None, *FAST_SOLVERS):
            raise InputError(f"solver_options['method'] must be one of {FAST_SOLVERS}, got "
                             f"{route.method!r}")
        route.refuse(type(self).__name__, "warm_start")
        if route.method == "rda":
            route.refuse(type(self).__name__, "random_state")
        if self.treeloss_classes not in ("nodes", "leaves"):
            raise InputError(f"treeloss_classes must be 'nodes' or 'leaves', got {self.treeloss_classes!r}")

    def _model_options(self) -> dict:
        bias = {"fit_intercept": self.fit_intercept, "intercept_scaling": self.intercept_scaling}
        if self.method == "treeloss":
            return {"classes": self.treeloss_classes, "K": self.K, **bias}  # K refused by prepare
        if self.method == "orthogonal":  # prepare takes K or alpha, not both
            return {"K": self.K, "alpha": self.alpha if self.K is None else 1.0, **bias}
        return {"K": self.K, **bias}  # K refused by prepare unless None

    def _takes_internal_labels(self) -> bool:
        """Whether the method itself takes labels that stop at an internal node."""
        return self.method != "flatmult" and not (self.method == "treeloss"
                                                  and self.treeloss_classes == "leaves")

    def _warn_if_alpha_lowered(self, model) -> None:
        """A ``UserWarning`` when heuristic (6) lowered an ``alpha`` the user set (not the
        default 1.0, which the heuristic lowers as documented)."""
        used = getattr(model, "K_alpha", None)
        if used is not None and float(self.alpha) != 1.0 and used < float(self.alpha):
            warnings.warn(f"{type(self).__name__}: alpha={self.alpha!r} makes heuristic (6)'s "
                          f"comparison matrix not positive definite; it was lowered to {used:.6g} "
                          f"(pass alpha <= {used:.6g} to use your own value)", UserWarning,
                          stacklevel=3)

    @reports_progress
    def fit(self, X, y):
        """Fit on ``X`` ``(n_samples, n_features)`` (dense or CSR) and ``y`` (one node name per
        sample, or one path's label set)."""
        self._check_params()
        X = validate_training_X(self, X)
        targets = read_training_labels(y, self.hierarchy, X.shape[0], who=type(self).__name__,
                                       internal_labels=self.internal_labels, single_label=True,
                                       keep_internal=self._takes_internal_labels())
        H, classes, labels = targets.hierarchy, targets.classes, targets.labels
        self._target_form = targets.form   # predict answers in the form of an indicator y
        method = methods.get(self.method)
        C_paper = float(self.C) * X.shape[0]  # (4) / (12) weigh the hinge by C_paper / N
        # the model appends the bias feature itself (fit_intercept): solutions come back
        # without the bias column, the biases under "intercept"
        model = method.prepare(X, labels, H, check_input=False, **self._model_options())
        self._warn_if_alpha_lowered(model)
        if model.data.n_pairs == 0:  # one leaf: no class to tell apart, every score infinite
            raise HierarchyError(f"{type(self).__name__}: nothing to classify, the labels give no "
                                 f"two classes to separate (the hierarchy's leaves: "
                                 f"{', '.join(map(repr, H.leaves[:3]))}); give a hierarchy with at "
                                 "least two leaves")
        route = solver_route(self)
        if self.solver == "fast":
            fast = method.fast_solvers[route.method or "dual_cd"]
            self.result_ = fast.solve(
                model, C=C_paper, tol=float(self.tol), max_iter=self.max_iter,
                verbose=verbosity(self.verbose), options=route.fast_options(fast.options_type),
                **route.seeded())
            self.n_iter_ = self.result_.n_iter
            intercept = self.result_.extras.get("intercept")
        else:
            prob = _PARTS.from_model["primal"](model, C=C_paper, max_size=route.max_size)
            # progress is the estimator's (verbose): CVXPY's and the solver's own logs would
            # go to stdout
            self.result_ = prob.solve(solver=route.solver,
                                      **{"gap_tol": float(self.tol), **route.settings})
            self.n_iter_ = int(getattr(prob.problem.solver_stats, "num_iters", None) or 1)
            intercept = self.result_.values.get("intercept")
        res = self.result_
        self.objective_, self.lower_bound_, self.gap_ = res.objective, res.lower_bound, res.gap
        self.K_ = model.K
        self.coef_ = np.asarray(res.weights, dtype=float)
        self.intercept_ = (np.zeros(len(H)) if intercept is None
                           else np.asarray(intercept, dtype=float).copy())
        self.hierarchy_ = H
        if self.method == "treeloss" and self.treeloss_classes == "nodes" and self.hierarchy is not None:
            classes = np.empty(len(H) - 1, dtype=object)
            classes[:] = H.nodes[1:]  # TREELOSS's classes: every non-root node (internal ones too)
        class_nodes = H.indices(classes.tolist())
        self.self_leaves_ = targets.paths
        self.classes_ = user_names(classes, targets.paths)
        self._class_nodes = class_nodes
        position = np.full(len(H), -1)
        position[class_nodes] = np.arange(len(class_nodes))
        self._position = position
        # the class scores of the validated X: validating it again would lose its feature names
        self._fit_node_calibration(X, held=held_nodes(labels, H, self.hierarchy),
                                   scores=self._class_scores_of(self._scores_of(X)))
        return self

    # ------------------------------------------------------------------ predict
    def _node_scores(self, X):
        check_is_fitted(self)
        return self._scores_of(validate_X(self, X, accept_sparse="csr", dtype=np.float64,
                                          reset=False))

    def _scores_of(self, X):
        """Node scores ``<w_n, x> + b_n`` ``(n_samples, n_nodes)`` of a validated ``X``."""
        S = X @ self.coef_.T
        return np.asarray(S.toarray() if hasattr(S, "toarray") else S) + self.intercept_[None, :]

    def _path_margins(self, S):
        """Per leaf, the smallest margin ``<w_i, x> - max_{j in S(i)} <w_j, x>`` over
        ``i in A+(leaf)``: positive exactly on the leaf the recursive classifier (1) reaches
        (barring ties); the margins of (4)'s constraints."""
        H = self.hierarchy_
        margin = np.full_like(S, np.inf)
        for group in H.sibling_groups():
            if len(group) < 2:
                continue
            block = S[:, group]
            order = np.argsort(-block, axis=1, kind="stable")
            first = np.take_along_axis(block, order[:, :1], axis=1)
            second = np.take_along_axis(block, order[:, 1:2], axis=1)
            best_other = np.where(np.arange(len(group))[None, :] == order[:, :1], second, first)
            margin[:, group] = block - best_other
        path = np.full_like(S, np.inf)
        parent = H.parent_index
        for depth in range(1, int(H.depths.max()) + 1):  # root to leaves, one level at a time
            level = np.flatnonzero(H.depths == depth)
            path[:, level] = np.minimum(path[:, parent[level]], margin[:, level])
        return path

    def class_scores(self, X):
        """Scores ``(n_samples, n_classes)`` in ``classes_`` order whose argmax is ``predict``:
        path margins (top-down methods), ``<w_y, x>`` (FLATMULT), ``<sum_{A+(y)} u, x>``
        (TREELOSS)."""
        return self._class_scores_of(self._node_scores(X))

    def _class_scores_of(self, S):
        """:meth:`class_scores` from the node scores ``S``."""
        if self.method in _TOP_DOWN:
            S = self._path_margins(S)
        elif self.method == "treeloss":
            A = self.hierarchy_.ancestor_matrix.astype(float)
            S = np.asarray(A @ S.T).T - S[:, [0]]  # sum over A+(y); the root's row is zero anyway
        return S[:, self._class_nodes]

    def decision_function(self, X):
        """:meth:`class_scores`; with two classes, ``score(classes_[1]) - score(classes_[0])``."""
        S = self.class_scores(X)
        return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S

    def predict(self, X):
        """The paper's classifier: recursive (1) for orthogonal / HIERMULT / TRANSFER, flat (2)
        for FLATMULT and TREELOSS.  After a fit on a 0/1 indicator ``y``, an indicator with its
        columns (one label per row)."""
        check_is_fitted(self)
        if self.method in _TOP_DOWN:
            X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
            node = _PARTS.predict_top_down(self.coef_, X, self.hierarchy_, return_index=True,
                                        intercept=self.intercept_)
        else:
            node = self._class_nodes[np.argmax(self.class_scores(X), axis=1)]
        return in_target_form(self, self.classes_[self._position[node]])

    def score(self, X, y, sample_weight=None):
        """1 - the paper's error rate (section 2): accuracy for leaf labels; an internal test
        label counts as right when the prediction lies in its subtree."""
        check_is_fitted(self)
        y = read_test_labels(y, self.hierarchy, multilabel=False)
        wrong = _PARTS.top_down_errors(self.hierarchy_, np.asarray(y, dtype=object),
                                       predicted_labels(self, X))
        return float(np.average(~wrong, weights=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

