"""Kernel ridge regression of the node indicators, calibrated per node on its exact
leave-one-out predictions: a node scorer for the ranking measure of the hierarchical
multi-label benchmarks (AU(PRC), :func:`hiercvx.metrics.au_prc`).

This is not a method of the five source papers.  It is the classical kernel ridge regression
(Saunders, Gammerman & Vovk, "Ridge regression learning algorithm in dual variables", ICML
1998) with one output per node of the hierarchy, the target of node ``v`` being whether the
sample's label set closed upward holds ``v``::

    min_f  sum_i sum_v (t_iv - tbar_v - f_v(x_i))^2 + alpha sum_v ||f_v||_K^2

(``tbar_v`` the node's training frequency), a convex problem solved exactly from one
eigendecomposition ``K = U diag(s) U^T`` of the training kernel, shared by every node and every
``alpha``.  Its node outputs are turned into log-odds by :func:`hiercvx.metrics.fit_node_calibration`
with a (slope, intercept) pair per node (Platt, "Probabilistic outputs for support vector
machines", Advances in Large Margin Classifiers, 1999) shrunk towards one pooled pair, fitted
on the exact leave-one-out predictions of the ridge fit, ``(f_i - h_ii r_i) / (1 - h_ii)``
with ``h_ii`` the diagonal of the hat matrix ``K (K + alpha I)^{-1}`` (Cawley & Talbot, "Fast
exact leave-one-out cross-validation of sparse least-squares support vector machines", Neural
Networks 17, 2004), so the calibration sees held-out scores at no extra fit.  The calibrated
scores are made consistent with the hierarchy by raising each node to the best score at or
below it, the max constraint of Giunchiglia & Lukasiewicz (C-HMCNN, NeurIPS 2020)
(:func:`hiercvx.metrics.coherent_node_scores`).

After a single-label fit the classes are the training labels, some of which may stop at an
internal node.  The class ``v`` is the sample's label when the sample holds ``v`` and none of
its children, so a class is scored by the probability ``p_v - sum_c p_c`` (``p`` the
calibrated node probabilities, ``c`` the children of ``v``; exact on a tree, where a single
path holds at most one child of ``v``, a lower bound on a DAG).  A leaf class keeps its
calibrated node score; an internal class does not inherit the scores of its descendants.

Every fit is certified as the package's solvers are: the objective above recomputed from the
returned coefficients, a lower bound from a dual point, and their relative gap.  With
``F = K A`` the fitted outputs and ``R`` the centred targets, the problem is
``min_A ||R - K A||_F^2 + alpha tr(A^T K A)`` and its Lagrange dual (one multiplier ``u`` per
output entry, ``u = 2 (r - f)`` at the optimum) is::

    max_U  tr(U^T R) - ||U||_F^2 / 4 - tr(U^T K U) / (4 alpha)

a concave function of unconstrained ``U``, so every ``U`` gives a lower bound.  The fit takes
``U = 2 alpha A``, the multiplier its coefficients stand for (``R - K A = alpha A`` at the
optimum); the gap is then ``||R - (K + alpha I) A||_F^2``, the squared residual of the linear
system the eigendecomposition solves, and costs no product with ``K`` beyond ``F``.  ``F`` is
computed from ``K`` itself, not from its eigendecomposition, so an inaccurate decomposition
shows as a gap.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..exceptions import InputError, LabelError, ProblemTooLargeError
from ..hierarchy import Hierarchy, is_label_set, most_specific
from ..kernels import make_kernel
from ..metrics import evaluated_nodes, fit_node_calibration
from ..result import relative_gap
from ..targets import indicator_form, is_indicator, resolve_targets
from .._validation import check_hierarchy_argument, check_positive, check_target
from ._base import (LabelSetScoreMixin, class_array, ravel_column_target,
                    resolve_training_targets, sort_key, validate_training_X, validate_X)
from ._labels import in_target_form, single_labels, warn_if_path_labels

__all__ = ["NodeKernelRidge", "ridge_certificate"]

#: the node scores ``node_decision_function`` offers
NODE_RIDGE_METHODS = ("calibrated", "ridge")


def ridge_certificate(K, R, A, F=None, alpha: float = 1.0) -> tuple[float, float]:
    """``(objective, lower_bound)`` of ``min_A ||R - K A||_F^2 + alpha tr(A^T K A)`` at the
    coefficients ``A``: the objective recomputed there, and the Lagrange dual
    ``tr(U^T R) - ||U||_F^2 / 4 - tr(U^T K U) / (4 alpha)`` at ``U = 2 alpha A``, which is
    ``2 alpha tr(A^T R) - alpha^2 ||A||_F^2 - alpha tr(A^T F)`` (module docstring); ``F = K A``
    when already computed."""
    F = K @ A if F is None else F
    E = R - F
    objective = float(np.sum(E * E) + alpha * np.sum(A * F))
    lower = float(2.0 * alpha * np.sum(A * R) - alpha * alpha * np.sum(A * A)
                  - alpha * np.sum(A * F))
    return objective, lower


class NodeKernelRidge(LabelSetScoreMixin, ClassifierMixin, BaseEstimator):
    """Kernel ridge regression of the node indicators of a hierarchy, with node scores
    calibrated per node on leave-one-out predictions (see the module docstring for the
    method and its sources; not one of the five source papers' methods).  ``score`` is the
    accuracy (single-label fit) or the mean example-based F1 of the most specific predicted
    labels (multi-label fit), as for the other estimators.

    Parameters
    ----------
    hierarchy : Hierarchy or None, default None
        The label hierarchy (tree or DAG): the outputs are its nodes.  None: a flat
        hierarchy, one artificial root above the labels seen in ``fit`` (as the other
        estimators).
    alpha : float, default 1.0
        Ridge penalty of every node's function (scikit-learn's ``KernelRidge`` meaning).
    kernel : str, callable or Kernel, default "rbf"
        ``"rbf"`` (the median heuristic for the width unless a
        :class:`~hiercvx.kernels.Kernel` gives ``sigma``), ``"linear"`` or a callable
        ``k(A, B)``.
    shrinkage : float or None, default 1.0
        Penalty of the per-node calibration pairs towards the pooled pair
        (:func:`hiercvx.metrics.fit_node_calibration`; margins of unit spread): 1 weighs the
        pooled pair as much as about four samples near probability one half (the logistic
        curvature is at most 1/4), so nodes with many positives take their own pair.  None:
        one pooled pair.
    max_samples : int, default 20000
        Largest training set taken: the kernel matrix and its eigendecomposition are
        ``n x n`` (the refusal says how to raise it).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    multilabel_ : bool
        Whether ``y`` held label sets.
    hierarchy_ : Hierarchy
        ``hierarchy`` or the flat one built from the training labels.
    kernel_ : Kernel
        The resolved kernel (its width fixed on the training data).
    node_mean_ : ndarray of shape (n_nodes,)
        The training frequency ``tbar_v`` of each node.
    dual_coef_ : ndarray of shape (n_samples, n_nodes)
        ``f_v(x) = k(x, X_fit_) @ dual_coef_[:, v]``.
    objective_ : float
        The ridge objective recomputed at ``dual_coef_`` (module docstring).
    lower_bound_ : float
        The dual value at ``2 alpha dual_coef_``: no coefficients do better.
    gap_ : float
        ``(objective_ - lower_bound_) / max(|objective_|, |lower_bound_|)``, the certified
        relative duality gap: the solve's round-off, of either sign near 1e-15.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training features.
    classes_ : ndarray of shape (n_classes,)
        The columns of ``decision_function``: every node of the hierarchy (multi-label fit:
        ``y`` holds label sets) or the distinct training labels (two of them: one column,
        positive for ``classes_[1]``).
    node_calibration_ : NodeCalibration
        The :class:`hiercvx.metrics.NodeCalibration` fitted on leave-one-out outputs.

    """

    def __init__(self, hierarchy=None, alpha=1.0, kernel="rbf", shrinkage=1.0,
                 max_samples=20000):
        self.hierarchy = hierarchy
        self.alpha = alpha
        self.kernel = kernel
        self.shrinkage = shrinkage
        self.max_samples = max_samples

    def _targets(self, y, n: int, H: Hierarchy) -> tuple[np.ndarray, bool]:
        """``(T, multilabel)``: the closed node indicators of ``y`` over ``H`` and whether it
        holds label sets."""
        y = ravel_column_target(y)
        count = y.shape[0] if sp.issparse(y) else len(y)
        if count != n:
            raise InputError(f"y has {count} samples but X has {n}")
        if is_indicator(y):
            # a 0/1 indicator: its columns are the hierarchy's leaves or its nodes (else column
            # numbers), as every estimator reads it; its rows are label sets
            y = resolve_targets(y, self.hierarchy)[2]
        multilabel = any(is_label_set(lab, H._index) for lab in y)
        labels = [lab if is_label_set(lab, H._index) else (lab,) for lab in y]
        closed = H.closure(labels)   # unknown labels refused there, with a hint when close
        if any(len(s) == 0 for s in labels):
            raise LabelError("every sample needs at least one label (an empty label set was given)")
        return np.asarray(closed, dtype=float), multilabel

    def _training_hierarchy(self, y, n: int) -> tuple[Hierarchy, object]:
        """``(H, y)``: ``hierarchy``, or without one the flat hierarchy (one artificial root)
        over the labels seen in ``y``, and ``y`` as the label reader takes it."""
        check_hierarchy_argument(self.hierarchy)
        # a lone label beside label sets is its singleton set when the hierarchy is given;
        # without one, the flat classes are read from y's first entry, so a mix is refused
        check_target(y, allow_mixed=self.hierarchy is not None)
        if self.hierarchy is not None:
            # one path per sample given with its ancestors (as loaders give it) is single-label
            if not is_indicator(y) and \
                    any(is_label_set(lab, self.hierarchy._index) for lab in y):
                single = single_labels(most_specific(self.hierarchy, list(y)))
                if single is not None:
                    return self.hierarchy, class_array(single)
            return self.hierarchy, y
        H, _, labels, multilabel = resolve_training_targets(y, None, n)
        warn_if_path_labels(labels, type(self).__name__)
        if multilabel:
            return H, [frozenset(s) for s in labels]
        return H, class_array(labels)

    def fit(self, X, y):
        """Solve the kernel ridge problem for every node and fit the node calibration on the
        exact leave-one-out outputs.

        Parameters
        ----------
        X : array ``(n_samples, n_features)``
        y : node names or label sets (iterables of node names) of ``hierarchy``

        Returns
        -------
        self
        """
        check_positive(self.alpha, "alpha")
        size = self.max_samples
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)) or size < 2:
            raise InputError(f"max_samples must be an integer >= 2, got {size!r}")
        if isinstance(self.kernel, str) and self.kernel == "precomputed":
            raise InputError("NodeKernelRidge takes features, not a precomputed kernel; pass "
                             "kernel='rbf', 'linear' or a callable k(A, B)")
        X = validate_training_X(self, X)
        if X.shape[0] > self.max_samples:
            raise ProblemTooLargeError(f"{X.shape[0]} samples: the kernel matrix is n x n; raise "
                                       f"max_samples (now {self.max_samples}) if it fits in memory")
        self._target_form = indicator_form(y, self.hierarchy)   # predict answers in its form
        H, y = self._training_hierarchy(y, X.shape[0])
        T, self.multilabel_ = self._targets(y, X.shape[0], H)
        self.hierarchy_ = H
        self.kernel_ = make_kernel(self.kernel, X=X)
        K = self.kernel_(X)
        s, U = np.linalg.eigh(0.5 * (K + K.T))
        s = np.maximum(s, 0.0)   # round-off below zero of a PSD kernel
        self.node_mean_ = T.mean(axis=0)
        R = T - self.node_mean_
        filt = 1.0 / (s + float(self.alpha))
        self.dual_coef_ = U @ (filt[:, None] * (U.T @ R))
        hat = np.einsum("ij,j,ij->i", U, s * filt, U)   # diagonal of K (K + alpha I)^{-1}
        F = K @ self.dual_coef_
        loo = (F - hat[:, None] * R) / (1.0 - hat)[:, None]
        self.objective_, self.lower_bound_ = ridge_certificate(K, R, self.dual_coef_, F,
                                                               float(self.alpha))
        self.gap_ = relative_gap(self.objective_, self.lower_bound_)
        self.X_fit_ = X
        self.classes_ = (class_array(H.nodes) if self.multilabel_ else
                         class_array(sorted(set(list(ravel_column_target(y))), key=sort_key)))
        self._class_cols = H.indices(list(self.classes_))
        self.node_calibration_ = fit_node_calibration(
            loo, T, H, method="leave_one_out", nodes=evaluated_nodes(T, H),
            shrinkage=self.shrinkage)
        return self

    def _ridge(self, X) -> np.ndarray:
        check_is_fitted(self, "dual_coef_")
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self.kernel_(X, self.X_fit_) @ self.dual_coef_

    def node_decision_function(self, X, method: str = "calibrated") -> np.ndarray:
        """Scores ``(n_samples, n_nodes)`` over ``hierarchy_.nodes``.

        ``"calibrated"`` (default): the log-odds that the sample holds each node
        (:class:`hiercvx.metrics.NodeCalibration` of the ridge outputs; with per-node pairs no
        node scores above an ancestor).  ``"ridge"``: the ridge outputs
        ``tbar_v + f_v(x)``, estimates of the node's probability (not consistent with the
        hierarchy).
        """
        if not isinstance(method, str) or method not in NODE_RIDGE_METHODS:
            raise InputError(f"method must be one of {NODE_RIDGE_METHODS}, got {method!r}")
        F = self._ridge(X)
        if method == "ridge":
            return F + self.node_mean_
        return self.node_calibration_.scores(F)

    def _label_log_odds(self, S: np.ndarray) -> np.ndarray:
        """Single-label fit: the log-odds that each class of ``classes_`` is the sample's label,
        ``(n_samples, n_classes)``, from the calibrated node scores ``S`` over
        ``hierarchy_.nodes``.  A leaf class keeps its node score; an internal class ``v`` takes
        ``q = p_v - sum_c p_c`` over its children ``c`` (module docstring), floored at the
        smallest positive float where the children take all of ``p_v``."""
        H = self.hierarchy_
        out = S[:, self._class_cols].copy()
        for k, v in enumerate(self._class_cols):
            kids = H.children_indices[v]
            if len(kids) == 0:
                continue
            held_kid = expit(S[:, kids]).sum(axis=1)
            q = expit(S[:, v]) - held_kid
            # 1 - q written without the cancellation of 1 - p_v when p_v is near one
            not_q = expit(-S[:, v]) + held_kid
            out[:, k] = np.log(np.maximum(q, np.finfo(float).tiny)) - np.log(not_q)
        return out

    def _class_scores(self, X) -> np.ndarray:
        """Scores ``(n_samples, n_classes)`` over ``classes_``: the calibrated node scores
        (multi-label fit) or the log-odds that each class is the sample's label (single-label
        fit, :meth:`_label_log_odds`)."""
        check_is_fitted(self, "dual_coef_")
        S = self.node_decision_function(X)
        if self.multilabel_:
            return S[:, self._class_cols]
        return self._label_log_odds(S)

    def decision_function(self, X) -> np.ndarray:
        """Scores of the columns ``classes_``, ``(n_samples, n_classes)``.

        Multi-label fit: the calibrated node scores of every node of the hierarchy, the
        log-odds that the sample holds the node.  Single-label fit: the log-odds that the
        class is the sample's label -- the calibrated node score for a leaf class, the
        log-odds of ``p_v - sum_c p_c`` over its children for a class ``v`` at an internal
        node (module docstring).  A single-label fit on two classes gives scikit-learn's
        ``(n_samples,)``, ``score(classes_[1]) - score(classes_[0])`` (positive:
        ``classes_[1]``).
        """
        S = self._class_scores(X)
        if S.shape[1] == 2 and not self.multilabel_:
            return S[:, 1] - S[:, 0]
        return S

    def _best_classes(self, S: np.ndarray) -> np.ndarray:
        """Index of the best class in each row of the class scores ``S``: the first maximum in
        ``classes_`` order, except that a class tied with one of its descendants gives way to
        it (the more specific label)."""
        best = S.max(axis=1, keepdims=True)
        tied = S >= best
        below = self.hierarchy_.descendant_matrix[self._class_cols][:, self._class_cols]
        below = below.toarray().astype(float)
        np.fill_diagonal(below, 0.0)   # below[i, j]: class j is strictly under class i
        beaten = (tied.astype(float) @ below.T) > 0
        return np.argmax(tied & ~beaten, axis=1)

    def predict(self, X) -> list:
        """Multi-label fit: label sets, the most specific nodes of positive calibrated log-odds
        (probability over one half; a sample with none gets its best-scored node below the
        root).  Single-label fit: the class of highest ``decision_function`` score, the
        training label most likely to be the sample's label; of tied classes a descendant
        wins over its ancestor.  After a fit on a 0/1 indicator ``y`` (over the leaves or the
        nodes of ``hierarchy``), an indicator with its columns; over the leaves, the label sets
        are chosen among the leaves (those of positive log-odds, else the best-scored one)."""
        check_is_fitted(self, "dual_coef_")
        if not self.multilabel_:
            return in_target_form(self, self.classes_[self._best_classes(self._class_scores(X))])
        S = self.node_decision_function(X)
        H = self.hierarchy_
        root = H.index(H.root)
        form = getattr(self, "_target_form", None)
        # an indicator over the leaves can only answer with leaves
        allowed = np.asarray(H.leaf_mask, dtype=bool).copy() if (
            form is not None and form.over == "leaves") else np.ones(len(H), dtype=bool)
        allowed[root] = False
        sets = []
        for row in S:
            held = [H.nodes[v] for v in np.flatnonzero((row > 0) & allowed)]
            if not held:
                held = [H.nodes[int(np.argmax(np.where(allowed, row, -np.inf)))]]
            sets.append(frozenset(most_specific(H, [held])[0]))
        return in_target_form(self, sets)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True   # CSR features: the kernels take them
        return tags
