"""scikit-learn classifier for the hierarchical perceptrons of Cai thesis chapter 5 and Hieron.

A thin wrapper: the labels are read as they come (``hiercvx.estimators._labels``), the
inputs validated and the bias added by the ``hsvm`` method's ``prepare`` (the perceptrons share
the hierarchical SVM's margin model); training is ``methods.parts("perceptron").train``, and
scoring / prediction are the SVM estimators' (same class scores, same multi-label rule).
"""

from __future__ import annotations

from .. import methods
from ..exceptions import InputError, LabelError
from ..kernels import make_kernel
from ._base import check_training_weights, is_precomputed, ravel_column_target, validate_training_X
from ._habits import reports_progress, verbosity
from .svm import MarginSVC

_PERCEPTRON = methods.parts("perceptron")
_SOLVER_OPTIONS = _PERCEPTRON.Options()
_CHECKED_GRAM = _PERCEPTRON.Options(psd_check_max=0)   # the estimator checked it, before the bias

__all__ = ["HierarchicalPerceptron"]


class HierarchicalPerceptron(MarginSVC):
    """Hierarchical multi-label perceptron (Cai thesis Algorithms 4-7) or Hieron (thesis 7.5.2).

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The class hierarchy; None gives the flat multi-label perceptron (Algorithm 3): one
        level under an artificial root; with the default attributes and loss that is exactly
        ``w_y += x``, ``w_ybar -= x``.
    variant : {"online", "averaged", "minover"}, default="online"
        ``"online"`` (Alg. 4/5, the last weight vector), ``"averaged"`` (Alg. 6, the average
        of all intermediate weight vectors, computed from the update log (5.15)) or
        ``"minover"`` (Alg. 7, perceptron update only).
    update : {"perceptron", "hieron"}, default="perceptron"
        ``"perceptron"`` (step ``Delta(y, ybar) dPhi``) or ``"hieron"`` (the step (7.8)).
    loss, attributes : default="half_symmetric", "class_depth"
        As for :class:`~hiercvx.estimators.HierarchicalSVC` (default half the symmetric
        difference of ancestor sets and ``t_v(y) = 1/sqrt(depth(y))``, thesis 7.2).
    fit_intercept, intercept_scaling : bool, default=True; float, default=1.0
        A bias per node through a constant feature of value ``intercept_scaling`` appended to
        X (LIBLINEAR's treatment, as for :class:`~hiercvx.estimators.HierarchicalSVC`; the
        perceptron updates it like any weight); ``intercept_`` ``(n_nodes,)`` is its weight
        times ``intercept_scaling`` and ``coef_`` excludes it.  Other kernels:
        ``k + intercept_scaling**2``.  ``fit_intercept=False``: the thesis's perceptron on X
        itself.
    kernel : str, Kernel or callable, default="linear"
        ``"linear"`` (primal form, Alg. 4), ``"rbf"`` (width by the median heuristic), a
        :class:`hiercvx.kernels.Kernel` carrying its width (``Kernel("rbf", sigma=0.5)``),
        ``"precomputed"`` or a callable (dual form, Alg. 5).  A precomputed Gram matrix is
        checked whole for symmetry, a non-negative diagonal and ``|K_ij| <= sqrt(K_ii K_jj)``,
        and by its eigenvalues on its leading
        ``hiercvx.solvers.perceptron.Options().psd_check_max`` (2000) rows only (the cubic
        part); a callable is checked on the Gram matrix of the first 300 examples.
    max_epochs : int or None, default=20
        kappa, the number of epochs (Minover: at most ``kappa n`` steps).  Training also stops
        on an epoch without mistakes (no visited example ranked wrongly; thesis Alg. 6 step
        12; averaged Hieron keeps updating on a positive hinge until then).  ``None`` trains
        until such an epoch, refusing provably non-separable data and capping at
        ``hiercvx.solvers.perceptron.Options().max_epochs_cap`` epochs with a
        ``ConvergenceWarning``.
    shuffle, random_state : bool, default=True; int, default=0
        A fresh seeded order of the examples in every epoch.
    verbose : bool, int or "progress", default=False
        As in :class:`~hiercvx.estimators.HierarchicalSVC`.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`~hiercvx.estimators.HierarchicalSVC` (labels come as loaders give them).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    n_updates_ : int
        The number of updates (mistakes) in training.
    n_iter_ : int
        The number of epochs run.
    converged_ : bool
        Whether the returned classifier separates the training data: training stopped on an
        epoch without mistakes (Minover: every pair margin positive) and the returned
        classifier ranks every training example (of positive weight) correctly.  For
        ``variant="averaged"`` the last iterate can separate while the average does not;
        ``result_.status`` is then ``"not_separated"`` and ``converged_`` False.
    result_ : Solution
        The training run's :class:`~hiercvx.result.Solution`.
    hierarchy_ : Hierarchy
        The hierarchy trained on (with self leaves when some label stops at an internal node;
        ``coef_``'s rows follow its nodes).
    self_leaves_ : PartialPaths or None
        The self-leaf map (:class:`~hiercvx.hierarchy.PartialPaths`), or None.
    classes_ : ndarray of shape (n_classes,)
        The classes in the caller's names.
    multilabel_ : bool
        Whether the training labels were label sets.
    class_attributes_ : ndarray of shape (n_classes, n_nodes)
        The class attributes ``Lam`` (as in :class:`~hiercvx.estimators.HierarchicalSVC`).
    class_gram_ : ndarray of shape (n_classes, n_classes)
        ``Lam Lam^T``.
    kernel_ : Kernel
        The fitted :class:`~hiercvx.kernels.Kernel`, width included.
    coef_ : ndarray of shape (n_nodes, n_features) or (n_support, n_classes)
        Node weights (linear kernel, without the bias column) or the expansion coefficients
        over the support examples (other kernels; all examples for precomputed).
    intercept_ : ndarray of shape (n_nodes,) or (n_classes,)
        The bias per node (linear kernel), or the constant part of each class score.
    threshold_ : float
        The multi-label decision rule's gap (as in
        :class:`~hiercvx.estimators.HierarchicalSVC`); 0.0 for a single-label fit.
    node_calibration_ : NodeCalibration or None
        The :class:`~hiercvx.metrics.NodeCalibration` of ``node_decision_function``; None
        without a ``hierarchy``.
    """

    def __init__(self, hierarchy=None, variant="online", update="perceptron", loss="half_symmetric",
                 attributes="class_depth", fit_intercept=True, intercept_scaling=1.0,
                 kernel="linear", max_epochs=20, shuffle=True, random_state=0,
                 verbose=False, internal_labels="self_leaf"):
        self.hierarchy = hierarchy
        self.internal_labels = internal_labels
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.variant = variant
        self.update = update
        self.loss = loss
        self.attributes = attributes
        self.kernel = kernel
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self):
        if self.variant not in _PERCEPTRON.variants:
            raise InputError(f"variant must be one of {_PERCEPTRON.variants}, got {self.variant!r}")
        if self.update not in _PERCEPTRON.updates:
            raise InputError(f"update must be one of {_PERCEPTRON.updates}, got {self.update!r}")

    @reports_progress
    def fit(self, X, y, sample_weight=None):
        """Fit on ``X`` and ``y``: one label per sample, or label sets (ancestors included or
        not), stopping at leaves or internal nodes (see ``internal_labels``).

        ``sample_weight`` (non-negative, one per sample) scales each sample's perceptron step:
        ``tau = (w_i / max w) Delta(y, ybar)`` (the update of Alg. 4-7; only ratios matter, as
        the perceptron's classifier is unchanged by a common factor of its steps), and Hieron's
        step (7.8) by the same ``w_i / max w`` (a relaxed projection: the fraction ``w_i / max w``
        of the way to the sample's margin constraint); a sample of weight 0 is not trained on.
        Weights are not repetitions: a sample of weight 2 is visited once per epoch, with a
        doubled step (hiercvx.solvers.perceptron.step_scale)."""
        self._check_params()
        precomputed = is_precomputed(self.kernel)
        # a precomputed Gram matrix is checked here, before the bias is added to it: rounding is
        # judged at the precision of the user's entries (float32 stays float32); capped in size
        X = validate_training_X(self, X, precomputed=precomputed, check_kernel=False)
        if precomputed:
            _PERCEPTRON.check_gram_block(X, _SOLVER_OPTIONS.psd_check_max)
        sample_weight = check_training_weights(sample_weight, X)
        y = ravel_column_target(y)
        targets = self._read_labels(y, X.shape[0])
        H, classes, labels, multilabel = (targets.hierarchy, targets.classes, targets.labels,
                                          targets.multilabel)
        self._target_form = targets.form   # predict answers in the form of an indicator y
        if len(classes) < 2:  # refused here so that the message names the perceptron
            raise LabelError(f"HierarchicalPerceptron needs at least two classes, got "
                             f"{len(classes)} ({classes.tolist()}): give a hierarchy with two or "
                             "more leaves, or labels of two or more classes")
        scaling = self._bias_scaling()
        kernel = make_kernel(self.kernel, X=None if precomputed else X)
        # the model adds the bias: [X, s] (linear) or k + s^2 (bias.with_bias)
        model = methods.get("hsvm").prepare(X, labels, H, loss=self.loss, attributes=self.attributes,
                              classes=tuple(classes.tolist()), kernel=kernel,
                              fit_intercept=scaling is not None,
                              intercept_scaling=1.0 if scaling is None else scaling,
                              sample_weight=sample_weight, check_input=False)
        data, Lam = model.data, model.Lam
        res = _PERCEPTRON.train(model.X, data, variant=self.variant, update=self.update,
                         kernel=model.kernel, max_epochs=self.max_epochs, shuffle=self.shuffle,
                         random_state=self.random_state, verbose=verbosity(self.verbose),
                         options=_CHECKED_GRAM if precomputed else _SOLVER_OPTIONS)
        linear = kernel.is_linear
        node_bias = None
        if linear:  # the constant feature's column split off (node biases)
            coef, node_bias = model.split_weights(res.weights)
            X_train = None
            if scaling is None:
                node_bias = None
        elif precomputed:
            coef, X_train = res.coefficients.toarray(), None
        else:
            sv = res.support
            coef, X_train = res.coefficients[sv].toarray(), X[sv]
        self.n_updates_ = res.n_updates
        self.n_iter_ = res.n_epochs
        self.converged_ = res.converged
        self.result_ = res
        self._store_model(X, H, classes, multilabel, data, class_attributes=Lam, kernel=kernel,
                          linear=linear, coef=coef, X_train=X_train, node_bias=node_bias,
                          scaling=scaling, paths=targets.paths)
        return self
