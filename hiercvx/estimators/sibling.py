"""scikit-learn classifiers for the sibling-margin methods of Wang, Shen & Pan.

* :class:`SiblingMarginSVC` -- HSVM, the cost (2) with the hinge loss of the generalized
  margin ``u_min``; on a one-level hierarchy (``hierarchy=None``) it is the multi-class SVM
  of Liu & Shen, the paper's "SVM";
* :class:`HierarchicalPsiClassifier` -- HPSI, (2) with the psi-loss by the DC algorithm (3);
  on a one-level hierarchy the paper's flat "psi-learning";
* :class:`SequentialHierarchicalSVC` -- the paper's SHSVM baseline: one flat (Liu-Shen) SVM
  per parent node, trained on the examples below that node, applied top-down.

All three predict with the top-down rule ``d^H`` and return node names of the caller's
hierarchy; a label on an internal node (partial path) is learnt through a "self" leaf under
that node (section 2) and predicted back as the internal node.  ``fit`` validates once,
prepares the model of the registry entry (``hiercvx.methods.get("sibling_svm")`` /
``get("hpsi")``; :mod:`hiercvx.models.sibling`) and runs the certified fast solver
(:mod:`hiercvx.solvers.sibling_qp`, ``solver="fast"``) or the CVXPY reference declared from
that model (:mod:`hiercvx.formulations.hpsi`, ``solver="reference"``); both keep the
certificate (``objective_``, ``gap_``).

Gaussian kernel: ``kernel="rbf"`` (or ``Kernel("rbf")`` without a width) is section 4.1's
choice, ``exp(-||x - z||^2 / m^2)`` with ``m`` the median distance between training points of
different classes; hiercvx's Gaussian is ``exp(-||x - z||^2 / (2 sigma^2))``, so
``sigma_ = m / sqrt(2)``.  A width given as ``Kernel("rbf", sigma=0.5)`` is used as is.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .. import methods
from .._validation import check_positive
from ..exceptions import InputError
from ..hierarchy import Hierarchy
from ..kernels import Kernel, median_heuristic
from ..reference import check_size
from ..result import rewritten_convergence_warnings
from ._base import (check_solver_options, is_precomputed, kernel_parts, solver_route,
                    validate_training_X, validate_X)
from ._habits import LightPickleMixin, reports_progress, verbosity
from ._labels import (accuracy, in_target_form, predicted_labels, read_test_labels,
                      read_training_labels)

#: the sibling pairs, the top-down rule d^H, the references on a model, the DC options
_SIBLING = methods.parts("sibling_svm")
_HPSI = methods.parts("hpsi")

logger = logging.getLogger(__name__)

__all__ = ["SiblingMarginSVC", "HierarchicalPsiClassifier", "SequentialHierarchicalSVC",
           "paper_sigma", "check_fit_intercept"]

def paper_sigma(X, y) -> float:
    """Section 4.1's Gaussian bandwidth in hiercvx's convention: ``m / sqrt(2)`` with ``m``
    the median distance between points of different classes (the paper's kernel is
    ``exp(-||x - z||^2 / m^2)``)."""
    return median_heuristic(X, np.asarray(y, dtype=object)) / np.sqrt(2.0)


def _is_gaussian(kernel) -> bool:
    name = kernel_parts(kernel)[0]
    return isinstance(name, str) and name in ("rbf", "gaussian")


def _with_width(kernel, sigma):
    """The estimator's ``kernel`` with the Gaussian width fixed to ``sigma`` (other kernels as
    they are): what the node SVMs of the sequential baseline share."""
    return Kernel("rbf", sigma=sigma) if _is_gaussian(kernel) else kernel


def _resolve_sigma(kernel, sigma, X, labels):
    """The Gaussian width: the one the Kernel carries, or section 4.1's rule."""
    if not _is_gaussian(kernel):
        return sigma
    if sigma is None:
        return paper_sigma(X, labels)
    return check_positive(sigma, "sigma")


def _set_leaf_classes(est, pairs):
    """``est.classes_`` (the working hierarchy's leaves as the caller's names, sorted when
    comparable, with a plain dtype when possible) and the lookup leaf index -> class."""
    Hw = pairs.hierarchy
    leaf_idx = np.asarray(Hw.leaf_indices, dtype=np.int64)
    names = list(pairs.to_original(leaf_idx))
    try:
        order = sorted(range(len(names)), key=lambda k: names[k])
    except TypeError:
        order = list(range(len(names)))
    ordered = [names[k] for k in order]
    plain = (all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in ordered)
             or all(isinstance(v, str) for v in ordered))
    if plain:
        classes = np.asarray(ordered)
    else:  # mixed or tuple names: keep the objects as they are
        classes = np.empty(len(ordered), dtype=object)
        for k, v in enumerate(ordered):
            classes[k] = v
    est.classes_ = classes
    est._class_leaf = leaf_idx[order]
    lookup = np.full(len(Hw), -1, dtype=np.int64)
    lookup[est._class_leaf] = np.arange(len(order))
    est._leaf_to_class = lookup


def check_fit_intercept(fit_intercept, who: str) -> None:
    """Only ``fit_intercept=True``: (2)'s node functions ``f_v = w_v^T x + b_v`` carry
    unregularized biases, and the dual (9) and the bias recoveries of Appendix B (the model and
    both solvers) are written for them; fixing ``b = 0`` would change the dual's constraints."""
    if fit_intercept is not True and not (isinstance(fit_intercept, np.bool_) and fit_intercept):
        raise InputError(f"{who}: fit_intercept must be True (Wang et al.'s (2) has unregularized "
                         f"node biases b_v, fitted always; the solvers do not fix b = 0), "
                         f"got {fit_intercept!r}")


class _SiblingBase(LightPickleMixin, ClassifierMixin, BaseEstimator):
    """Shared fit / predict plumbing (subclasses implement ``fit``).  ``__init__`` takes the
    parameters of :class:`SiblingMarginSVC`, which inherits it; a subclass with more
    parameters declares its own (scikit-learn reads them from the signature)."""

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 kernel="linear", solver="fast", tol=1e-6, max_iter=None, verbose=False,
                 internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.internal_labels = internal_labels
        self.solver_options = solver_options

    def score(self, X, y, sample_weight=None):
        """Accuracy; ``y`` read as ``fit`` reads it (a path's label set is its deepest node)."""
        check_is_fitted(self)
        y = read_test_labels(y, self.hierarchy, multilabel=False)
        return accuracy(y, predicted_labels(self, X), sample_weight)

    def _check_params(self):
        check_solver_options(self.C, "C", self.tol, self.solver, self.max_iter, who=type(self).__name__)
        check_fit_intercept(self.fit_intercept, type(self).__name__)
        solver_route(self).refuse(type(self).__name__, "warm_start")

    @property
    def _precomputed(self):
        return is_precomputed(self.kernel)

    def _prepare(self, X, y, who=None):
        """Validated ``(X, labels, H, sigma)``; ``who`` names the estimator in the errors (the
        one the user fitted, when it trains through this one)."""
        self._check_params()
        # a precomputed kernel is checked (square, PSD) once, by the model's prepare
        X = validate_training_X(self, X, precomputed=self._precomputed, check_kernel=False)
        # one path per sample (Wang et al. section 4.2 make a set of co-occurring categories a
        # category of its own); internal labels go to self leaves in the model (sibling_pairs)
        targets = read_training_labels(y, self.hierarchy, X.shape[0],
                                       who=who or type(self).__name__,
                                       internal_labels=getattr(self, "internal_labels", "self_leaf"),
                                       single_label=True, keep_internal=True)
        H, labels = targets.hierarchy, targets.labels
        self._target_form = targets.form   # predict answers in the form of an indicator y
        sigma = _resolve_sigma(self.kernel, kernel_parts(self.kernel)[1], X, labels)
        return X, labels, H, sigma

    def _model(self, name, X, labels, H, sigma):
        """The model of the registry entry ``name`` (:func:`hiercvx.models.sibling.prepare`) on
        this training set: labels, tree and kernel validated here, once."""
        return methods.get(name).prepare(X, labels, H, kernel=kernel_parts(self.kernel)[0],
                                         sigma=sigma)

    def _engine_options(self, fast):
        """The keywords of the fast solver ``fast`` (a registered FastSolver) from
        ``solver_options``."""
        route = solver_route(self)
        method = {} if route.method is None else {"method": route.method}
        return {**method, **route.seeded(), "options": route.fast_options(fast.options_type),
                "verbose": bool(verbosity(self.verbose))}

    def _store_model(self, X, H, sigma, model, coef, biases):
        """Keep the fitted model: the caller's and the working hierarchy, the kernel and
        ``sigma_``, ``classes_`` and what prediction needs (``model``: the solved
        :class:`~hiercvx.formulations.hpsi` model, ``coef`` / ``biases``: its node functions)."""
        self.hierarchy_ = H
        self.pairs_ = model.pairs
        self.working_hierarchy_ = model.pairs.hierarchy
        self.kernel_ = model.kernel
        self.sigma_ = sigma
        self._set_classes(model.pairs)
        self._store_functions(X, coef, biases, model.linear)

    def _set_classes(self, pairs):
        """``classes_``: the leaves of the working hierarchy as the caller's names (a self
        leaf stands for its internal node), sorted when they are comparable."""
        _set_leaf_classes(self, pairs)

    def _pairs_of_classes(self):
        """``Q(c)`` of every class as (pos, neg, start, counts).  Built by
        :meth:`decision_function` at each call, not stored by ``fit``: its size is that of the
        computation (on a 5000-leaf star, 25 million pairs that ``fit`` does not need)."""
        ptr, pos, neg = _SIBLING.node_pair_table(self.working_hierarchy_, self._class_leaf)
        return pos, neg, ptr[:-1], np.diff(ptr)

    def _store_functions(self, X, coef, biases, linear):
        """Keep what prediction needs: weights (linear) or the support points (kernel)."""
        self.intercept_ = np.asarray(biases, dtype=float)
        if linear or self._precomputed:
            self.coef_ = np.asarray(coef, dtype=float)
            self._support = None
            self._X_support = None
        else:
            support = np.flatnonzero(np.any(coef != 0, axis=0))
            self._support = support
            self._X_support = X[support]
            self.coef_ = np.asarray(coef[:, support], dtype=float)
        self._linear = linear

    def node_scores(self, X):
        """``f_v(x)`` ``(n_samples, len(working_hierarchy_))`` in ``working_hierarchy_.nodes``
        order (the root's column is 0)."""
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse=False if self._precomputed else "csr",
                       dtype=np.float64, reset=False)
        if self._linear:
            out = X @ self.coef_.T
            out = out.toarray() if sp.issparse(out) else np.asarray(out)
        elif self._precomputed:
            out = X @ self.coef_.T
        elif self._X_support.shape[0]:
            out = self.kernel_(X, self._X_support) @ self.coef_.T
        else:
            out = np.zeros((X.shape[0], len(self.intercept_)))
        return out + self.intercept_[None, :]

    def decision_function(self, X):
        """The generalized margin ``u_min(f(x), c)`` of every class ``c`` in ``classes_``
        (section 3.1): by Lemma 1 it is positive exactly for the class ``d^H`` picks (without
        ties), so ``argmax`` is the prediction.  Two classes: ``u(classes_[1]) - u(classes_[0])``."""
        S = self.node_scores(X)
        pos, neg, start, counts = self._pairs_of_classes()
        U = np.full((S.shape[0], len(self.classes_)), np.inf)
        if len(pos):
            m = S[:, pos] - S[:, neg]
            has = counts > 0
            U[:, has] = np.minimum.reduceat(m, start[has], axis=1)
        if U.shape[1] == 2:
            return U[:, 1] - U[:, 0]
        return U

    def predict(self, X):
        """The top-down rule ``d^H`` (section 2), as node names of the caller's hierarchy (after
        a fit on a 0/1 indicator ``y``, an indicator with its columns)."""
        S = self.node_scores(X)
        idx = _SIBLING.predict_top_down(S, self.working_hierarchy_, return_index=True)
        return in_target_form(self, self.classes_[self._leaf_to_class[idx]])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self._precomputed
        tags.input_tags.pairwise = self._precomputed
        return tags


class SiblingMarginSVC(_SiblingBase):
    """HSVM of Wang, Shen & Pan: (2) with the hinge loss of the sibling margin ``u_min``.

    Labels: one path per sample; a label set that is one path with its ancestors (as
    ``hiercvx.datasets.load_arff`` gives it) is read as its deepest node.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The tree; None: one level over the labels seen in ``fit``, which is the multi-class
        SVM of Liu & Shen (the paper's flat "SVM").
    C : float, default=1.0
        The tuning parameter of (2), ``J(f) + C sum_i loss_i`` with
        ``J(f) = 1/2 sum_v ||w_v||^2``: already the LIBLINEAR meaning (no mapping).
    fit_intercept : bool, default=True
        Must be True: (2) has an unregularized bias ``b_v`` per node, always fitted
        (``intercept_``); the model and solvers do not support ``b = 0``.
    intercept_scaling : float, default=1.0
        Unused (the biases are unregularized, so their scale does not matter); kept for the
        same signature as the other hiercvx estimators.
    kernel : str, Kernel or callable, default="linear"
        ``"linear"``, ``"rbf"`` (width by section 4.1's rule, see the module docstring), a
        :class:`hiercvx.kernels.Kernel` carrying its width (``Kernel("rbf", sigma=0.5)``:
        ``exp(-||x - z||^2 / (2 sigma^2))``), ``"precomputed"`` or a callable ``k(A, B)``.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: :mod:`hiercvx.solvers.sibling_qp`, certified; ``"reference"``: CVXPY,
        certified.
    tol : float, default=1e-6
        The certified relative duality gap.
    max_iter : int or None, default=None
        The fast solver's iteration budget: interior-point iterations (``"ipm"``,
        ``"dual_ipm"``), iterations over all rounds of the working set, or multiplier steps
        of the ALM; None: the solver's own default (the fields ``ipm_max_iter``,
        ``working_set_max_iter``, ``alm_max_iter`` of
        :class:`hiercvx.solvers.sibling_qp.Options`).  Not used by ``solver="reference"``.
    verbose : bool, int or "progress", default=False
        ``True`` (or an int > 0) prints the solver's progress to stderr; ``"progress"``: a
        progress bar on long fits.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        ``"self_leaf"``: a label that stops at an internal node is learnt through a leaf for
        the node itself (the paper's section 2) and predicted back as the node;
        ``"refuse"``: such labels raise a ``LabelError``.
    solver_options : dict, Options or None, default=None
        The settings of the route ``solver`` selects, as in
        :class:`~hiercvx.estimators.HierarchicalSVC`.  ``solver="fast"``: a
        :class:`hiercvx.solvers.sibling_qp.Options` or a dict of its fields, with the keys
        ``"method"`` (``"auto"`` | ``"ipm"`` | ``"dual_ipm"`` | ``"working_set"`` | ``"alm"``,
        see :class:`hiercvx.solvers.sibling_qp.SiblingQPSolver`), ``"random_state"`` and
        ``"keep_dual"``; ``tol`` and ``max_iter`` override the fields of the same name.
        ``solver="reference"``: ``{"solver": "CLARABEL", "max_size": ..., ...}`` (as
        :class:`~hiercvx.estimators.HierarchicalSVC`).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    objective_ : float
        The HSVM cost (2) at the fitted node functions.
    gap_ : float
        Its certified relative duality gap.
    n_iter_ : int
        The fast solver's iterations; 1 with ``solver="reference"``.
    result_ : Solution
        The solver's :class:`~hiercvx.result.Solution`.
    hierarchy_ : Hierarchy
        The caller's tree (or the one-level hierarchy over the labels).
    pairs_ : SiblingPairs
        The sibling pairs of the training labels (the generalized margin's comparisons) and
        the working hierarchy they live on.
    working_hierarchy_ : Hierarchy
        ``hierarchy_`` with self leaves for labels that stop at internal nodes; ``coef_``'s
        rows follow its nodes.
    kernel_ : Kernel
        The fitted kernel.
    sigma_ : float or None
        The Gaussian width used (section 4.1's rule unless the kernel carries one); None for
        other kernels.
    classes_ : ndarray of shape (n_classes,)
        The leaves of ``working_hierarchy_`` in the caller's names (a self leaf stands for its
        internal node).
    intercept_ : ndarray of shape (n_nodes,)
        The node biases ``b_v``.
    coef_ : ndarray of shape (n_nodes, n_features), (n_nodes, n_support) or (n_nodes, n_train)
        The node weights ``w_v`` (linear kernel); the expansion coefficients over the support
        samples (other kernels) or over the precomputed kernel's columns.
    """

    @reports_progress
    def fit(self, X, y):
        """Fit on ``X`` and ``y`` (one node name of the hierarchy per sample)."""
        X, labels, H, sigma = self._prepare(X, y)
        C = float(self.C)
        model = self._model("sibling_svm", X, labels, H, sigma)
        if self.solver == "fast":
            fast = methods.get("sibling_svm").fast_solvers["ipm"]
            res = fast.solve(model, C, tol=float(self.tol), max_iter=self.max_iter,
                             **self._engine_options(fast))
            coef, b = res.weights, res.biases
            self.objective_, self.gap_, self.n_iter_ = res.objective, res.gap, res.n_iter
        else:
            route = solver_route(self)
            prob = _SIBLING.from_model["primal"](model, C, max_size=route.max_size)
            res = prob.solve(route.solver, **{"gap_tol": float(self.tol), **route.settings})
            coef, b = res.weights, res.values["biases"]
            self.objective_, self.gap_, self.n_iter_ = res.objective, res.gap, 1
        self.result_ = res
        self._store_model(X, H, sigma, model, coef, b)
        return self

    def _reference_size(self, X, y):
        """``(size, name)``: the estimated size of the reference ``fit`` declares on ``(X, y)``
        with ``solver="reference"`` (:func:`hiercvx.formulations.hpsi.primal_size`, a bound for
        a kernel), found without declaring it."""
        X, labels, H, sigma = self._prepare(X, y)
        size, name = _SIBLING.reference_sizes["primal"]
        return size(self._model("sibling_svm", X, labels, H, sigma)), name


class HierarchicalPsiClassifier(_SiblingBase):
    """HPSI of Wang, Shen & Pan: (2) with the psi-loss, minimized by the DC algorithm (3)
    from the HSVM solution.  On a one-level hierarchy (``hierarchy=None``) it is the flat
    psi-learning of Liu & Shen (the paper's "psi-learning").

    Labels as in :class:`SiblingMarginSVC`.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The tree; None: one level over the labels seen in ``fit``, which is the multi-class
        SVM of Liu & Shen (the paper's flat "SVM").
    C : float, default=1.0
        The tuning parameter of (2), ``J(f) + C sum_i loss_i`` with
        ``J(f) = 1/2 sum_v ||w_v||^2``: already the LIBLINEAR meaning (no mapping).
    fit_intercept : bool, default=True
        Must be True: (2) has an unregularized bias ``b_v`` per node, always fitted
        (``intercept_``); the model and solvers do not support ``b = 0``.
    intercept_scaling : float, default=1.0
        Unused (the biases are unregularized, so their scale does not matter); kept for the
        same signature as the other hiercvx estimators.
    kernel : str, Kernel or callable, default="linear"
        ``"linear"``, ``"rbf"`` (width by section 4.1's rule, see the module docstring), a
        :class:`hiercvx.kernels.Kernel` carrying its width (``Kernel("rbf", sigma=0.5)``:
        ``exp(-||x - z||^2 / (2 sigma^2))``), ``"precomputed"`` or a callable ``k(A, B)``.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: :mod:`hiercvx.solvers.sibling_qp`, certified; ``"reference"``: CVXPY,
        certified.
    tol : float, default=1e-6
        The certified relative duality gap of every convex step.
    max_iter : int or None, default=None
        The iteration budget of every convex step of the fast solver (as ``max_iter`` of
        :class:`SiblingMarginSVC`; None: the solver's own default).  Not used by
        ``solver="reference"``.
    dc_tol : float, default=1e-6
        The DC loop stops when the psi cost changes by at most this much (absolute, as in the
        paper).
    dc_max_iter : int, default=50
        The largest number of DC steps.
    verbose : bool, int or "progress", default=False
        As in :class:`SiblingMarginSVC`.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`SiblingMarginSVC`.
    solver_options : dict, Options or None, default=None
        As in :class:`SiblingMarginSVC` (for every convex step).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    hsvm_objective_ : float
        The HSVM cost (2) at the start of the DC loop.
    result_ : Solution
        The HSVM start's solver result.
    step_gaps_ : ndarray of shape (n_steps,)
        The certified gap of each convex step.
    objective_ : float
        The psi cost (2) of the returned iterate.
    dc_objectives_ : ndarray of shape (n_steps,)
        The cost path (first entry: the HSVM start).
    gap_ : float
        The largest certified gap over the convex steps (the psi cost is not convex: no gap
        certifies it).
    n_iter_ : int
        The DC steps taken.
    best_iteration_ : int
        The iteration returned: the one at which the last linearization was taken.
    hierarchy_ : Hierarchy
        The caller's tree (or the one-level hierarchy over the labels).
    pairs_ : SiblingPairs
        The sibling pairs of the training labels (the generalized margin's comparisons) and
        the working hierarchy they live on.
    working_hierarchy_ : Hierarchy
        ``hierarchy_`` with self leaves for labels that stop at internal nodes; ``coef_``'s
        rows follow its nodes.
    kernel_ : Kernel
        The fitted kernel.
    sigma_ : float or None
        The Gaussian width used (section 4.1's rule unless the kernel carries one); None for
        other kernels.
    classes_ : ndarray of shape (n_classes,)
        The leaves of ``working_hierarchy_`` in the caller's names (a self leaf stands for its
        internal node).
    intercept_ : ndarray of shape (n_nodes,)
        The node biases ``b_v``.
    coef_ : ndarray of shape (n_nodes, n_features), (n_nodes, n_support) or (n_nodes, n_train)
        The node weights ``w_v`` (linear kernel); the expansion coefficients over the support
        samples (other kernels) or over the precomputed kernel's columns.
    """

    # the psi cost is not convex: no gap certifies it, only each convex step's
    _summary_names = ("DC steps", "psi cost", "largest certified gap of its convex steps")

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 kernel="linear", solver="fast", tol=1e-6, max_iter=None, dc_tol=1e-6,
                 dc_max_iter=50, verbose=False, internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.verbose = verbose
        self.internal_labels = internal_labels
        self.solver_options = solver_options
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.dc_tol = dc_tol
        self.dc_max_iter = dc_max_iter

    @reports_progress
    def fit(self, X, y):
        """Fit on ``X`` and ``y`` (one node name of the hierarchy per sample)."""
        try:
            _HPSI.check_dc_options(self.dc_tol, self.dc_max_iter)
        except (InputError, TypeError, ValueError) as exc:  # int("x"), a list's truth value
            raise InputError(f"dc_tol / dc_max_iter: {exc}") from None
        X, labels, H, sigma = self._prepare(X, y)
        C = float(self.C)
        model = self._model("hpsi", X, labels, H, sigma)
        with _dc_limits_named():
            if self.solver == "fast":
                fast = methods.get("hpsi").fast_solvers["solve_dc"]
                res = fast.solve(model, C, tol=float(self.dc_tol), max_iter=int(self.dc_max_iter),
                                 gap_tol=float(self.tol), step_max_iter=self.max_iter,
                                 **self._engine_options(fast))
            else:
                route = solver_route(self)
                res = _HPSI.from_model["dc"](model, C, tol=float(self.dc_tol),
                                            max_iter=int(self.dc_max_iter), solver=route.solver,
                                            max_size=route.max_size,
                                            **{"gap_tol": float(self.tol), **route.settings})
        self.hsvm_objective_ = res.hsvm.objective
        self.result_ = res.hsvm  # the HSVM start's certificate; the DC result is not stored
        self.step_gaps_ = np.asarray(res.step_gaps)
        self.objective_ = res.objective
        self.dc_objectives_ = np.asarray(res.dc_objectives)
        self.gap_ = float(np.max(res.step_gaps))
        self.n_iter_ = res.n_iter
        self.best_iteration_ = res.best_iteration
        self._store_model(X, H, sigma, model, res.weights, res.biases)
        return self


def _dc_limits_named():
    """The DC loop's ``ConvergenceWarning`` in the estimator's terms: the loop's ``tol`` and
    ``max_iter`` are its ``dc_tol`` and ``dc_max_iter`` (``tol`` and ``max_iter`` bound each
    convex step, whose warnings pass unchanged)."""
    def rewrite(message: str) -> str:
        if not message.startswith("HPSI DC algorithm"):
            return message
        return message.replace("> tol=", "> dc_tol=").replace("raise max_iter", "raise dc_max_iter")
    return rewritten_convergence_warnings(rewrite)


class SequentialHierarchicalSVC(ClassifierMixin, BaseEstimator):
    """SHSVM, the sequential baseline of Wang, Shen & Pan (section 4.1, after Davies et al.):
    one flat multi-class SVM (Liu & Shen; :class:`SiblingMarginSVC` on the node's children)
    per parent node, trained on the examples whose label lies below that node (labelled by
    the child they pass through), applied top-down.

    Every node's SVM uses the same ``C``, kernel and ``sigma_`` (resolved once on the whole
    training set).  A node whose training examples all go to one child predicts that child;
    a node no training example reaches predicts its first child.  Labels on internal nodes
    go to a self leaf, as in :class:`SiblingMarginSVC`.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default=None
        The tree; None: one level over the labels seen in ``fit``, which is the multi-class
        SVM of Liu & Shen (then one SVM in all).
    C : float, default=1.0
        The tuning parameter of (2), ``J(f) + C sum_i loss_i`` with
        ``J(f) = 1/2 sum_v ||w_v||^2``: already the LIBLINEAR meaning (no mapping).
    fit_intercept : bool, default=True
        Must be True: (2) has an unregularized bias ``b_v`` per node, always fitted
        (``intercept_``); the model and solvers do not support ``b = 0``.
    intercept_scaling : float, default=1.0
        Unused (the biases are unregularized, so their scale does not matter); kept for the
        same signature as the other hiercvx estimators.
    kernel : str, Kernel or callable, default="linear"
        ``"linear"``, ``"rbf"`` (width by section 4.1's rule, see the module docstring), a
        :class:`hiercvx.kernels.Kernel` carrying its width (``Kernel("rbf", sigma=0.5)``:
        ``exp(-||x - z||^2 / (2 sigma^2))``), ``"precomputed"`` or a callable ``k(A, B)``.
    solver : {"fast", "reference"}, default="fast"
        ``"fast"``: :mod:`hiercvx.solvers.sibling_qp`, certified; ``"reference"``: CVXPY,
        certified.
    tol : float, default=1e-6
        The certified relative duality gap of every node's SVM.
    max_iter : int or None, default=None
        The fast solver's iteration budget of every node's SVM (as in
        :class:`SiblingMarginSVC`; None: the solver's own default).
    verbose : bool, int or "progress", default=False
        As in :class:`SiblingMarginSVC`.
    internal_labels : {"self_leaf", "refuse"}, default="self_leaf"
        As in :class:`SiblingMarginSVC`.
    solver_options : dict, Options or None, default=None
        As in :class:`SiblingMarginSVC`, for every node's SVM.

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    node_models_ : dict
        ``{parent node index: fitted SiblingMarginSVC or the constant child index}``.
    objective_ : float
        The sum of the node SVMs' costs.
    gap_ : float
        Their largest certified gap.
    hierarchy_ : Hierarchy
        The caller's tree (or the one-level hierarchy over the labels).
    pairs_ : SiblingPairs
        The sibling pairs of the training labels and the working hierarchy they live on.
    working_hierarchy_ : Hierarchy
        ``hierarchy_`` with self leaves for labels that stop at internal nodes.
    sigma_ : float or None
        The Gaussian width used; None for other kernels.
    n_iter_ : int
        The node SVMs' total solver iterations.
    classes_ : ndarray of shape (n_classes,)
        The leaves of ``working_hierarchy_`` in the caller's names.
    """

    def __init__(self, hierarchy=None, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 kernel="linear", solver="fast", tol=1e-6, max_iter=None, verbose=False,
                 internal_labels="self_leaf", solver_options=None):
        self.hierarchy = hierarchy
        self.verbose = verbose
        self.internal_labels = internal_labels
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.kernel = kernel
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options

    @reports_progress
    def fit(self, X, y):
        """Fit one flat SVM per parent node of the hierarchy."""
        if is_precomputed(self.kernel):
            raise InputError("SequentialHierarchicalSVC trains on subsets of the examples and "
                             "does not take kernel='precomputed'; pass the features and a kernel")
        check_fit_intercept(self.fit_intercept, type(self).__name__)
        X = validate_training_X(self, X, check_kernel=False)  # its errors name this estimator
        base = SiblingMarginSVC(hierarchy=self.hierarchy, C=self.C, kernel=self.kernel,
                                solver=self.solver, tol=self.tol, max_iter=self.max_iter,
                                solver_options=self.solver_options,
                                internal_labels=self.internal_labels)
        X, labels, H, sigma = base._prepare(X, y, who=type(self).__name__)
        self._target_form = base._target_form   # predict answers in the form of an indicator y
        self.n_features_in_ = X.shape[1]
        pairs = _SIBLING.sibling_pairs(labels, H)  # validates; self leaves for internal labels
        Hw = pairs.hierarchy
        models, svms = self._node_problems(X, Hw, pairs.labels, sigma)
        if self.solver == "reference":
            self._check_reference_sizes(X, svms, Hw)
        objective, gap, n_iter = 0.0, 0.0, 0
        log = logger.info if verbosity(self.verbose) else logger.debug
        for s, (svm, rows, child) in svms.items():
            present = np.unique(child)
            svm.fit(X[rows], child)
            models[s] = svm
            objective += svm.objective_
            gap = max(gap, svm.gap_)
            n_iter += svm.n_iter_
            log("%s node %r: %d samples over %d children, %d iterations, certified gap %.3e",
                type(self).__name__, Hw.nodes[s], rows.size, present.size, svm.n_iter_, svm.gap_)
        self.node_models_ = models
        self.objective_, self.gap_ = objective, gap
        self.hierarchy_ = H
        self.pairs_ = pairs
        self.working_hierarchy_ = Hw
        self.sigma_ = sigma
        self.n_iter_ = n_iter
        _set_leaf_classes(self, pairs)
        return self

    def score(self, X, y, sample_weight=None):
        """Accuracy; ``y`` read as ``fit`` reads it (a path's label set is its deepest node)."""
        check_is_fitted(self)
        y = read_test_labels(y, self.hierarchy, multilabel=False)
        return accuracy(y, predicted_labels(self, X), sample_weight)

    def _node_problems(self, X, Hw, lab, sigma):
        """``(models, svms)``: each parent node with one child on its examples' paths (or
        none) mapped to that child in ``models``; every other to ``(svm, rows, child)`` in
        ``svms``: the flat SVM over its children, its examples and the child on each one's
        path."""
        A = Hw.ancestor_matrix.tocsr()           # A[v, u] = 1 iff u is v or an ancestor of v
        models, svms = {}, {}
        for s, kids in enumerate(Hw.children_indices):
            kids = np.asarray(kids, dtype=np.int64)
            if len(kids) < 2:
                continue
            on_path = A[lab][:, kids].toarray()              # (n, |kids|)
            rows = np.flatnonzero(on_path.any(axis=1))
            child = kids[np.argmax(on_path[rows], axis=1)] if rows.size else kids[:1]
            present = np.unique(child)
            if present.size == 1:
                models[s] = int(present[0])
                continue
            flat = Hierarchy.from_parents({-1: None, **{int(c): -1 for c in kids}})
            svms[s] = (SiblingMarginSVC(hierarchy=flat, C=self.C,
                                        kernel=_with_width(self.kernel, sigma), solver=self.solver,
                                        tol=self.tol, max_iter=self.max_iter,
                                        solver_options=self.solver_options), rows, child)
        return models, svms

    def _check_reference_sizes(self, X, svms, Hw) -> None:
        """Refuse, before any node is fitted, a fit whose largest node reference is over
        ``solver_options["max_size"]``, naming that node's size, which admits them all."""
        sizes = {s: svm._reference_size(X[rows], child) for s, (svm, rows, child) in svms.items()}
        if not sizes:
            return
        node = max(sizes, key=lambda s: sizes[s][0].nonzeros)
        size, what = sizes[node]
        check_size(size.variables, size.constraints, size.nonzeros, solver_route(self).max_size,
                   what=f"{what} at node {Hw.nodes[node]!r} (the largest of the {len(sizes)} "
                        "node SVMs)")

    def decision_function(self, X):
        """Class scores ``(n_samples, n_classes)`` in ``classes_`` order: the smallest, along
        the class's path, of the node SVMs' margins for the child the path takes
        (``SiblingMarginSVC.decision_function`` at each parent; ``+inf`` below a node with
        one child, or whose training examples all went to that child, ``-inf`` for the other
        children there).  Every margin on the predicted path is positive and the other classes
        leave it at a negative one, so ``argmax`` is ``predict`` (without ties).  Two classes:
        ``score(classes_[1]) - score(classes_[0])``."""
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        Hw = self.working_hierarchy_
        edge = np.full((X.shape[0], len(Hw)), np.inf)   # margin of entering each node
        for s, kids in enumerate(Hw.children_indices):
            if len(kids) < 2:
                continue
            edge[:, kids] = -np.inf
            model = self.node_models_[s]
            if isinstance(model, int):
                edge[:, model] = np.inf
                continue
            U = np.asarray(model.decision_function(X), dtype=float)
            if U.ndim == 1:
                U = np.column_stack([-U, U])
            edge[:, np.asarray(model.classes_, dtype=np.int64)] = U
        path = edge.copy()
        for v, parents in enumerate(Hw.parent_indices):   # parents come first in node order
            if len(parents):
                path[:, v] = np.minimum(path[:, parents[0]], edge[:, v])
        S = path[:, self._class_leaf]
        return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S

    def predict(self, X):
        """Top-down: at each parent node, the node's SVM picks the child (after a fit on a 0/1
        indicator ``y``, an indicator with its columns)."""
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        Hw = self.working_hierarchy_
        current = np.zeros(X.shape[0], dtype=np.int64)
        children = Hw.children_indices
        for _ in range(int(Hw.depths.max())):
            moved = False
            for s in np.unique(current):
                kids = children[s]
                if len(kids) == 0:
                    continue
                rows = np.flatnonzero(current == s)
                moved = True
                if len(kids) == 1:
                    current[rows] = kids[0]
                    continue
                model = self.node_models_[s]
                current[rows] = model if isinstance(model, int) else model.predict(X[rows])
            if not moved:
                break
        return in_target_form(self, self.classes_[self._leaf_to_class[current]])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
