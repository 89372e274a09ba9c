"""AdaBoost.MH with decision stumps (lecture notes on multi-class classification, "AdaBoost.MH").

AdaBoost.MH turns m multi-labelled examples into m k binary ones ``((x_i, l), c_il)`` with
``c_il = +1`` if label l is relevant to example i and ``-1`` otherwise, and runs AdaBoost on
them under a distribution ``D_t`` over the pairs (i, l):

    eps_t = sum_{i,l} D_t(i, l) [h_t(x_i, l) != c_il]            weighted Hamming error
    alpha_t = 1/2 log((1 - eps_t) / eps_t)
    Z_t = 2 sqrt(eps_t (1 - eps_t))                              normalization factor
    D_{t+1}(i, l) = D_t(i, l) exp(-alpha_t c_il h_t(x_i, l)) / Z_t
    g = sum_t alpha_t h_t,   prediction sgn(g)

and ``Z_t = sum_{i,l} D_t(i, l) exp(-alpha_t c_il h_t(x_i, l))`` exactly, so every ``D_t`` is a
distribution; unrolling, ``D_{T+1}(i, l) = D_1(i, l) exp(-c_il g(x_i, l)) / prod_t Z_t`` and the
training Hamming loss of ``sgn(g)`` is at most ``prod_t Z_t`` (``[c g <= 0] <= exp(-c g)``).

Base classifiers: decision stumps with a vote per label, ``h(x, l) = v_l phi(x)`` where
``phi(x) = +1`` if ``x_j > theta`` else ``-1`` (or ``phi = +1`` for the constant stump) and
``v in {-1, +1}^k``.  For a fixed split the best votes are ``v_l = sign(edge_l)`` with
``edge_l = sum_i D(i, l) c_il phi(x_i)``, and the weighted error is ``(1 - sum_l |edge_l|) / 2``;
one sweep over each presorted feature finds the best split in ``O(m k)``: the lecture's
``O(mk log(mk) + mkNT)`` for T rounds over N features.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..exceptions import InputError
from ..targets import indicator_form, ravel_column_target, sort_key
from ._base import LabelSetScoreMixin, check_training_weights, resolve_training_targets, validate_X
from ._labels import in_target_form
from ._stump_kernels import best_sparse_stump

logger = logging.getLogger(__name__)

__all__ = ["AdaBoostMH", "best_stump"]


@njit(cache=True)
def _best_dense_stump(Xs, order, R):
    """Best stump for the signed weights ``R = D * C`` ``(m, k)``.

    ``Xs[j]`` holds feature j's values sorted increasingly, ``order[j]`` the matching row
    indices.  Returns ``(feature, threshold, edges)``; ``feature = -1`` is the constant stump.
    Ties go to the constant stump, then to the first feature and the lowest threshold."""
    n_feat, m = Xs.shape
    k = R.shape[1]
    total = np.zeros(k)
    for i in range(m):
        for l in range(k):
            total[l] += R[i, l]
    best_gamma = 0.0
    for l in range(k):
        best_gamma += abs(total[l])
    best_f = -1
    best_theta = -np.inf
    best_edges = total.copy()
    prefix = np.empty(k)
    for j in range(n_feat):
        prefix[:] = 0.0
        for t in range(m - 1):
            i = order[j, t]
            for l in range(k):
                prefix[l] += R[i, l]
            if Xs[j, t + 1] > Xs[j, t]:  # a split between two distinct values
                gamma = 0.0
                for l in range(k):
                    gamma += abs(total[l] - 2.0 * prefix[l])
                if gamma > best_gamma * (1.0 + 1e-12) + 1e-300:
                    best_gamma = gamma
                    best_f = j
                    best_theta = 0.5 * (Xs[j, t] + Xs[j, t + 1])
                    for l in range(k):
                        best_edges[l] = total[l] - 2.0 * prefix[l]
    return best_f, best_theta, best_edges


def _column(X, feature: int) -> np.ndarray:
    """Column ``feature`` of ``X`` (dense, or scipy.sparse: CSC is the fast one) as a 1-D array."""
    if sp.issparse(X):
        return X[:, [feature]].toarray().ravel()
    return X[:, feature]


def _stump_phi(X, feature: int, threshold: float) -> np.ndarray:
    if feature < 0:
        return np.ones(X.shape[0])
    return np.where(_column(X, feature) > threshold, 1.0, -1.0)


class _SparseColumns(NamedTuple):
    """The columns of a sparse ``X`` as their nonzero entries only: column j's values, sorted
    increasingly, are ``values[indptr[j]:indptr[j + 1]]`` (its zeros are one tied group)."""
    indptr: np.ndarray
    values: np.ndarray


def _sorted_columns(X):
    """``(Xs, order)``: each feature's values sorted increasingly and the matching row indices
    (a stable sort, so ties keep their row order).  Dense ``X``: ``(n_features, m)`` arrays.
    Sparse ``X``: only the nonzero entries, as :class:`_SparseColumns` and their rows
    (``O(nnz)`` memory, never densified); the stumps found are those of its dense twin."""
    if sp.issparse(X):
        X = sp.csc_matrix(X, dtype=float, copy=True)
        X.eliminate_zeros()  # stored zeros (and -0.0) belong to the group of zeros
        X.sort_indices()
        cols = np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))
        idx = np.lexsort((X.data, cols))  # by column, then value; stable: ties in row order
        rows = np.ascontiguousarray(X.indices[idx], dtype=np.int64)
        values = np.ascontiguousarray(X.data[idx])
        return _SparseColumns(X.indptr.astype(np.int64), values), rows
    idx = np.argsort(X, axis=0, kind="stable")
    Xs = np.take_along_axis(X, idx, axis=0).T
    return np.ascontiguousarray(Xs), np.ascontiguousarray(idx.T, dtype=np.int64)


def _best_stump(Xs, order, R):
    """Best stump ``(feature, threshold, edges)`` for ``R = D * C`` over the sorted columns of
    :func:`_sorted_columns`, dense or sparse.  An edge within the rounding error of its sums
    (``m`` terms of ``|R[:, l]|``) is returned as exactly 0, so its vote (+1) does not hang on
    the order of summation, which differs between the dense and the sparse sweep."""
    if isinstance(Xs, _SparseColumns):
        f, theta, edges = best_sparse_stump(Xs.indptr, Xs.values, order, R)
    else:
        f, theta, edges = _best_dense_stump(Xs, order, R)
    rounding = 4.0 * R.shape[0] * np.finfo(float).eps * np.abs(R).sum(axis=0)
    return f, theta, np.where(np.abs(edges) <= rounding, 0.0, edges)


def best_stump(X, D, C):
    """The stump with the smallest weighted Hamming error under ``D`` ``(m, k)`` for labels
    ``C`` in {-1, +1}: returns ``(feature, threshold, votes, error)`` (feature -1: constant).
    ``X``: dense or scipy.sparse."""
    X = X.astype(float) if sp.issparse(X) else np.asarray(X, dtype=float)
    Xs, order = _sorted_columns(X)
    f, theta, edges = _best_stump(Xs, order, np.ascontiguousarray(D * C))
    votes = np.where(edges >= 0, 1.0, -1.0)
    # the misclassified mass itself: the same for the same stump whatever the summation order
    h = _stump_phi(X, int(f), float(theta))[:, None] * votes[None, :]
    eps = float(np.sum(D[h != C]))
    return int(f), float(theta), votes, eps


class AdaBoostMH(LabelSetScoreMixin, ClassifierMixin, BaseEstimator):
    """AdaBoost.MH (lecture notes) with decision stumps, for multi-class and multi-label data.

    ``decision_function`` returns ``g`` (one column per class; for two classes with one label
    per sample, scikit-learn's single column ``g_1 - g_0``).  ``predict``: the top class for
    single-label data; for multi-label data the lecture's rule ``sgn(g)``, i.e. the set of
    labels with ``g > 0`` (possibly empty); after a fit on a 0/1 indicator ``y``, an indicator
    with its columns.  ``score`` is accuracy (single-label) or the mean example-based F1 of the
    predicted label sets, as for the other estimators.  Samples with zero ``sample_weight``
    carry no mass under any ``D_t`` and are left out of the stump search.  ``X`` is dense or
    scipy.sparse (kept sparse: each column's non-zeros are sorted, its zeros are one tied
    group, ``O(nnz)`` memory), with the same model either way.

    Parameters
    ----------
    n_rounds : int, default=100
        T, the number of boosting rounds (fewer if a stump classifies every (example, label)
        pair correctly, or if no stump has an edge).

    Attributes
    ----------
    n_features_in_ : int
        Number of features (columns of ``X``) seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen in ``fit``; only when ``X`` has string column names.
    classes_ : ndarray of shape (n_classes,)
        The labels (columns of ``decision_function``).
    multilabel_ : bool
        Whether the training labels were label sets.
    features_ : ndarray of shape (n_iter_,)
        The feature of each round's stump (-1: a constant stump).
    thresholds_ : ndarray of shape (n_iter_,)
        The threshold of each round's stump.
    votes_ : ndarray of shape (n_iter_, n_classes)
        Each round's stump's vote per label.
    alphas_ : ndarray of shape (n_iter_,)
        The weight of each round's stump.
    errors_ : ndarray of shape (n_iter_,)
        ``eps_t``, each round's weighted error.
    normalizers_ : ndarray of shape (n_iter_,)
        ``Z_t = 2 sqrt(eps_t (1 - eps_t))``.
    training_hamming_ : ndarray of shape (n_iter_,)
        The (weighted) training Hamming loss of ``sgn(g_t)`` after each round, at most
        ``np.cumprod(normalizers_)``.
    n_iter_ : int
        The rounds made.
    """

    def __init__(self, n_rounds=100):
        self.n_rounds = n_rounds

    def fit(self, X, y, sample_weight=None):
        # bool is an int subclass: True would run one round
        if (isinstance(self.n_rounds, (bool, np.bool_))
                or not (isinstance(self.n_rounds, (int, np.integer)) and self.n_rounds >= 1)):
            raise InputError(f"n_rounds must be a positive integer (the number of boosting rounds "
                             f"T), got {self.n_rounds!r}")
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, ensure_min_samples=2)
        y = ravel_column_target(y)
        _, classes, labels, multilabel = resolve_training_targets(y, None, X.shape[0])
        if multilabel and classes.dtype != object and not np.issubdtype(classes.dtype, np.number):
            # keep the label objects themselves (mixed types would be turned into strings)
            classes = np.empty(len(classes), dtype=object)
            classes[:] = sorted({v for s in labels for v in s}, key=sort_key)
        pos = {c: j for j, c in enumerate(classes.tolist())}
        C = -np.ones((X.shape[0], len(classes)))
        for i, lab in enumerate(labels):
            for c in (lab if multilabel else (lab,)):
                C[i, pos[c]] = 1.0
        w = check_training_weights(sample_weight, X)
        w = np.ones(X.shape[0]) if w is None else w
        keep = w > 0
        X, C, w = X[keep], C[keep], w[keep]
        X = X.tocsc() if sp.issparse(X) else X  # a stump reads one column per round
        m, k = C.shape
        D = np.repeat((w / w.sum())[:, None] / k, k, axis=1)  # D_1 = 1/(mk) without weights
        Xs, order = _sorted_columns(X)
        g = np.zeros((m, k))
        feats, thetas, votes, alphas, errors, norms, hamming = [], [], [], [], [], [], []
        for t in range(int(self.n_rounds)):
            f, theta, edges = _best_stump(Xs, order, np.ascontiguousarray(D * C))
            v = np.where(edges >= 0, 1.0, -1.0)
            h = _stump_phi(X, f, theta)[:, None] * v[None, :]
            # eps from the misclassified mass itself (1 - sum|edge| cancels badly when eps is tiny)
            mass = float(D.sum())
            eps = float(D[h != C].sum()) / mass
            if eps >= 0.5 - 1e-15:
                logger.info("AdaBoost.MH: no stump has an edge at round %d; stopping", t + 1)
                break
            perfect = eps == 0.0
            # a perfect stump has alpha = inf; a finite alpha keeps sgn(g) = c on the sample
            alpha = 0.5 * np.log((1.0 - eps) / eps) if not perfect else 0.5 * np.log(1e15)
            Z = 2.0 * np.sqrt(eps * (1.0 - eps))
            g += alpha * h
            feats.append(f)
            thetas.append(theta)
            votes.append(v)
            alphas.append(alpha)
            errors.append(eps)
            norms.append(Z)
            hamming.append(float(w @ (C * g <= 0).mean(axis=1) / w.sum()))
            if perfect:
                logger.info("AdaBoost.MH: a stump is perfect at round %d; stopping", t + 1)
                break
            # divide by Z_t; renormalizing by the actual sum only removes rounding drift
            D = D * np.exp(-alpha * C * h) / Z
            D /= D.sum()
        self.classes_ = classes
        self.multilabel_ = multilabel
        self._target_form = indicator_form(y, None)   # predict answers in the form of an indicator y
        self.features_ = np.array(feats, dtype=np.int64)
        self.thresholds_ = np.array(thetas, dtype=float)
        self.votes_ = np.array(votes, dtype=float).reshape(len(feats), k)
        self.alphas_ = np.array(alphas, dtype=float)
        self.errors_ = np.array(errors, dtype=float)
        self.normalizers_ = np.array(norms, dtype=float)
        self.training_hamming_ = np.array(hamming, dtype=float)
        self.n_iter_ = len(feats)
        return self

    def _g(self, X):
        X = X.tocsc() if sp.issparse(X) else X  # one column per stump
        g = np.zeros((X.shape[0], len(self.classes_)))
        for f, theta, v, a in zip(self.features_, self.thresholds_, self.votes_, self.alphas_):
            g += a * _stump_phi(X, int(f), float(theta))[:, None] * v[None, :]
        return g

    def decision_function(self, X):
        """``g(x, l) = sum_t alpha_t h_t(x, l)`` ``(n_samples, n_classes)``."""
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        g = self._g(X)
        if g.shape[1] == 2 and not self.multilabel_:
            return g[:, 1] - g[:, 0]
        return g

    def predict(self, X):
        check_is_fitted(self)
        X = validate_X(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        g = self._g(X)
        if not self.multilabel_:
            return in_target_form(self, self.classes_[np.argmax(g, axis=1)])
        return in_target_form(self, [frozenset(self.classes_[row].tolist()) for row in g > 0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
