"""Evaluation metrics for hierarchical classification, and scikit-learn scorers.

Two kinds of metric:

- **on predictions** ``(y_true, y_pred)``: hierarchical precision / recall / F1
  (Kiritchenko et al.), micro-F1, the sample-weighted F1 of Wang et al. section 4.1, the
  test errors ``TE_{0-1}, TE_Delta, TE_sib, TE_sub`` of Wang et al. eq. (6);
- **on class scores** ``(y_true, scores)`` with ``scores`` of shape ``(n_samples,
  n_classes)`` and columns following ``classes``: one-accuracy (Cai thesis (7.3)), average
  precision (7.4), ranking loss (7.5), maximal loss (4.19), top loss (4.23), parent
  one-accuracy (7.6);
- **on node scores** ``(y_true, scores)`` with ``scores`` of shape ``(n_samples, n_nodes)``:
  AU(PRC), the micro-averaged area under the precision-recall curve of the Clus-HMC benchmarks
  (:func:`au_prc`); :func:`node_scores` and :func:`node_margins` turn class scores into node
  scores consistent with the hierarchy (the margins free of each sample's offset), and
  :class:`NodeCalibration` (:func:`fit_node_calibration`) puts them on one scale across nodes:
  the default ``node_decision_function`` of the hierarchical estimators.

Labels are node names, label sets of node names, or 0/1 indicator matrices over ``H.nodes``
(as in :mod:`hiercvx.losses`; the metrics on class scores also take one column per class).
Where the hierarchy is known, a label set that includes ancestors of its labels is reduced to
its most specific labels (:func:`hiercvx.hierarchy.most_specific`), as the estimators do.
Every metric takes ``hierarchy=H`` where it needs one.  Metrics return the sample mean
(optionally weighted by ``sample_weight``).

:func:`get_scorer` / :func:`make_hierarchical_scorer` wrap them for
``GridSearchCV(..., scoring=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.metrics import make_scorer
from sklearn.metrics._scorer import _BaseScorer

from . import losses as _losses
from ._metric_inputs import (as_samples as _as_samples, check_scorer_kwargs as _check_scorer_kwargs,
                             class_loss as _class_loss, class_nodes as _class_nodes,
                             closed as _closed, closed_pair as _closed_pair,
                             finite_number as _finite_number, flat_counts as _flat_counts,
                             float_values as _float_values, need_hierarchy as _need_hierarchy,
                             node_mask as _node_mask, ratio as _ratio,
                             sample_weights as _sample_weight, score_inputs as _score_inputs,
                             weighted_mean as _mean)
from .exceptions import InputError, LabelError
from .hierarchy import Hierarchy
from ._node_margin_parts import (best_below as _best_below, best_outside as _best_outside,
                                 descendant_max as _descendant_max, logistic_fit as _logistic_fit,
                                 per_node_logistic_fit as _per_node_logistic_fit)

__all__ = ["hierarchical_precision", "hierarchical_recall", "hierarchical_f1",
           "hierarchical_precision_recall_f1", "micro_f1", "weighted_f1", "test_error",
           "test_errors", "bayes_regret_improvement", "one_accuracy", "average_precision",
           "ranking_loss", "maximal_loss", "top_loss", "parent_one_accuracy", "node_scores",
           "node_margins", "node_log_odds", "NodeCalibration", "fit_node_calibration",
           "coherent_node_scores", "evaluated_nodes", "au_prc", "SCORERS", "get_scorer",
           "make_hierarchical_scorer"]


# ---------------------------------------------------------------------- hierarchical P / R / F1
def hierarchical_precision_recall_f1(y_true, y_pred, hierarchy=None, sample_weight=None):
    """Micro-averaged hierarchical precision, recall and F1 (Kiritchenko et al.).

    With ``C_i = anc(Y_i)`` and ``C'_i = anc(Y'_i)`` (ancestors included, the root
    excluded, counted as node identities so a node shared by two paths of a DAG counts once):

    ``hP = sum_i |C_i n C'_i| / sum_i |C'_i|``, ``hR = sum_i |C_i n C'_i| / sum_i |C_i|``,
    ``hF = 2 hP hR / (hP + hR)``.

    A zero denominator gives 0, never NaN (also when every label is the root only).
    Returns ``(hP, hR, hF)``.
    """
    H = _need_hierarchy(hierarchy, "hierarchical_precision_recall_f1")
    A, B = _closed_pair(H, y_true, y_pred)
    keep = np.ones(len(H))
    keep[H.index(H.root)] = 0.0  # the root is in every closed set and carries no information
    inter = np.asarray(A.multiply(B).astype(float) @ keep).ravel()
    n_true = np.asarray(A.astype(float) @ keep).ravel()
    n_pred = np.asarray(B.astype(float) @ keep).ravel()
    w = _sample_weight(sample_weight, A.shape[0])
    if w is not None:
        inter, n_true, n_pred = inter * w, n_true * w, n_pred * w
    p = _ratio(inter.sum(), n_pred.sum())
    r = _ratio(inter.sum(), n_true.sum())
    return p, r, _ratio(2 * p * r, p + r)


def hierarchical_precision(y_true, y_pred, hierarchy=None, sample_weight=None) -> float:
    """Micro hierarchical precision ``hP``; see :func:`hierarchical_precision_recall_f1`."""
    return hierarchical_precision_recall_f1(y_true, y_pred, hierarchy, sample_weight)[0]


def hierarchical_recall(y_true, y_pred, hierarchy=None, sample_weight=None) -> float:
    """Micro hierarchical recall ``hR``; see :func:`hierarchical_precision_recall_f1`."""
    return hierarchical_precision_recall_f1(y_true, y_pred, hierarchy, sample_weight)[1]


def hierarchical_f1(y_true, y_pred, hierarchy=None, sample_weight=None) -> float:
    """Micro hierarchical F1 ``hF = 2 hP hR / (hP + hR)`` (Kiritchenko et al.).

    ``y_true`` / ``y_pred``: node names or label sets (or indicator matrices over
    ``H.nodes``); ancestors are added, the root is left out.  0 when nothing overlaps.
    """
    return hierarchical_precision_recall_f1(y_true, y_pred, hierarchy, sample_weight)[2]


# ---------------------------------------------------------------------- flat F1 scores
def micro_f1(y_true, y_pred, hierarchy=None, sample_weight=None) -> float:
    """Micro-averaged F1 over the labels (not closed): ``2 TP / (2 TP + FP + FN)``.

    For one label per sample on both sides this equals accuracy.  ``hierarchy`` checks the
    labels, reads indicator matrices and reduces each label set to its most specific labels
    (``{"A", "A1"}`` counts as ``{"A1"}``); without it labels are taken as given, and
    ``None`` or NaN labels are refused.  0 when there is nothing to count.
    """
    T, P = _flat_counts(y_true, y_pred, hierarchy)
    w = _sample_weight(sample_weight, T.shape[0])
    W = sp.diags(np.ones(T.shape[0]) if w is None else w)
    tp = (W @ T.multiply(P)).sum()
    return _ratio(2 * tp, (W @ T).sum() + (W @ P).sum())


def weighted_f1(y_true, y_pred, hierarchy=None, sample_weight=None) -> float:
    """F1 of Wang et al. section 4.1: per-class F1 averaged with weights = class frequency.

    Per class ``c``: precision ``rho_c = TP_c / #predicted c``, recall ``r_c = TP_c / #true c``,
    ``F1_c = 2 rho_c r_c / (rho_c + r_c)`` (0 when ``TP_c = 0``); the score is
    ``sum_c n_c F1_c / sum_c n_c`` with ``n_c`` the number of samples whose true label is
    ``c`` (scikit-learn's ``average="weighted"``).  Labels are not closed; with
    ``hierarchy`` each label set is reduced to its most specific labels, as in :func:`micro_f1`.
    """
    T, P = _flat_counts(y_true, y_pred, hierarchy)
    w = _sample_weight(sample_weight, T.shape[0])
    W = sp.diags(np.ones(T.shape[0]) if w is None else w)
    tp = np.asarray((W @ T.multiply(P)).sum(axis=0)).ravel()
    n_true = np.asarray((W @ T).sum(axis=0)).ravel()
    n_pred = np.asarray((W @ P).sum(axis=0)).ravel()
    den = n_true + n_pred
    f1 = np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)  # = 2 rho r / (rho + r)
    return _ratio((n_true * f1).sum(), n_true.sum())


# ---------------------------------------------------------------------- test errors (Wang (6))
_TE_LOSSES = {"TE_0-1": "zero_one", "TE_Delta": "symmetric_difference",
              "TE_sib": "sibling", "TE_sub": "subtree"}


def test_error(y_true, y_pred, hierarchy=None, loss: str = "zero_one", sample_weight=None,
               **loss_kwargs) -> float:
    """Test error of Wang et al. eq. (6): ``TE = mean_i l(Y_i, d(X_i))``.

    ``loss``: ``"zero_one"`` (``TE_{0-1}``), ``"symmetric_difference"`` (``TE_Delta``),
    ``"sibling"`` (``TE_sib``, costs (5)), ``"subtree"`` (``TE_sub``, costs (4)) or any other
    key of :data:`hiercvx.losses.LOSSES`; ``loss_kwargs`` go to the loss, which refuses those
    it does not take (``hiercvx.losses.loss_keywords``).
    """
    H = _need_hierarchy(hierarchy, "test_error")
    values = _losses.pairwise_loss(H, _as_samples(H, y_true, "y_true"),
                                   _as_samples(H, y_pred, "y_pred"), loss, **loss_kwargs)
    return _mean(values, sample_weight)


test_error.__test__ = False  # not a pytest test despite its name


def test_errors(y_true, y_pred, hierarchy=None, sample_weight=None, multi_parent: str = "error") -> dict:
    """The four test errors of Wang et al. section 3.5: ``{"TE_0-1", "TE_Delta", "TE_sib", "TE_sub"}``.

    ``multi_parent`` is passed to the sibling costs (needed on a DAG, see
    :func:`hiercvx.losses.sibling_costs`); for sibling costs of your own use
    :func:`test_error` with ``loss="h_loss", costs=...``.
    """
    H = _need_hierarchy(hierarchy, "test_errors")
    A, B = _closed_pair(H, y_true, y_pred)
    pairs = _losses.LabelSetPairs(H, A, B)
    out = {}
    for name, loss in _TE_LOSSES.items():
        kw = {"multi_parent": multi_parent} if loss == "sibling" else {}
        out[name] = _mean(_losses.LOSSES[loss](pairs, H, **kw), sample_weight)
    return out


test_errors.__test__ = False


def bayes_regret_improvement(te, te_baseline, bayes_error=None):
    """Improvement of a method over a baseline in Bayes regret (Wang et al. section 4.1):

    ``((TE(base) - Bayes) - (TE(.) - Bayes)) / (TE(base) - Bayes) = (TE(base) - TE(.)) / (TE(base) - Bayes)``.

    Without a Bayes error (real data) the paper uses ``(TE(base) - TE(.)) / TE(base)``,
    which may understate the improvement.  A fraction (multiply by 100 for the paper's
    percentages); negative when the method is worse.  Works elementwise on arrays.
    """
    te, base = _float_values(te, "te"), _float_values(te_baseline, "te_baseline")
    ref = 0.0 if bayes_error is None else _float_values(bayes_error, "bayes_error")
    try:
        np.broadcast_shapes(te.shape, base.shape, np.shape(ref))
    except ValueError:
        raise InputError(f"te has shape {te.shape}, te_baseline {base.shape} and bayes_error "
                         f"{np.shape(ref)}: give one value per setting on each (equal shapes) "
                         "or scalars") from None
    regret = base - ref
    if np.any(~np.isfinite(regret)) or np.any(~np.isfinite(te)):
        raise InputError("test errors and the Bayes error must be finite")
    if np.any(regret <= 0):
        what = "TE(baseline)" if bayes_error is None else "TE(baseline) - Bayes error"
        raise InputError(f"{what} must be positive to measure an improvement relative to it; got "
                         f"{regret!r}")
    out = (base - te) / regret
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------- metrics on scores
def _ranks(R, S):
    """For each (i, k): #classes scored >= s_ik, and #true classes scored >= s_ik (if k true)."""
    n_at_least = rankdata(-S, method="max", axis=1)
    n_true_at_least = rankdata(np.where(R, -S, np.inf), method="max", axis=1)
    return n_at_least, n_true_at_least


def one_accuracy(y_true, scores, classes=None, hierarchy=None, sample_weight=None) -> float:
    """One-accuracy, Cai thesis (7.3): the fraction of samples whose top-scored class is true.

    Ties in the top score go to the first class in ``classes`` order.
    """
    classes, R, S = _score_inputs(y_true, scores, classes, hierarchy, "one_accuracy")
    top = np.argmax(S, axis=1)
    return _mean(R[np.arange(len(top)), top], sample_weight)


def average_precision(y_true, scores, classes=None, hierarchy=None, sample_weight=None) -> float:
    """Average precision, Cai thesis (7.4):

    ``1/n sum_i 1/|Y_i| sum_{y in Y_i} |{r in Y_i: F(r) >= F(y)}| / |{r: F(r) >= F(y)}|``.
    """
    classes, R, S = _score_inputs(y_true, scores, classes, hierarchy, "average_precision")
    n_all, n_true = _ranks(R, S)
    ratio = np.where(R, n_true / n_all, 0.0)
    return _mean(ratio.sum(axis=1) / R.sum(axis=1), sample_weight)


def ranking_loss(y_true, scores, classes=None, hierarchy=None, sample_weight=None) -> float:
    """Ranking loss, Cai thesis (7.5): the fraction of (true, false) class pairs misordered,

    ``1/n sum_i |{(y, y') in Y_i x Ybar_i : F(y) <= F(y')}| / (|Y_i| |Ybar_i|)`` (ties count).
    A sample whose label set is every class has no pair and contributes 0.  For the
    hierarchy-weighted ranking loss (3.15) see :func:`hiercvx.losses.ranking_loss`.
    """
    classes, R, S = _score_inputs(y_true, scores, classes, hierarchy, "ranking_loss")
    n_all, n_true = _ranks(R, S)
    misordered = np.where(R, n_all - n_true, 0).sum(axis=1)
    n_pairs = R.sum(axis=1) * (~R).sum(axis=1)
    per = np.divide(misordered, n_pairs, out=np.zeros(len(n_pairs)), where=n_pairs > 0)
    return _mean(per, sample_weight)


def maximal_loss(y_true, scores, classes=None, hierarchy=None, loss="half_symmetric",
                 sample_weight=None, **loss_kwargs) -> float:
    """Maximal loss, Cai thesis (4.18)-(4.19): the mean over samples of

    ``max {loss(y, y') : y in Y_i, y' not in Y_i, F(y) <= F(y')}`` (0 when no pair is misordered).

    (4.18) prints ``g(y) >= g(y')``; the surrounding text and the proof of Proposition 2 use
    misordered pairs ``F(y) <= F(y')``, which is what is implemented.  ``loss`` defaults to
    ``Delta_h`` (half symmetric difference, thesis section 7.2); a name from
    :data:`hiercvx.losses.LOSSES` (``loss_kwargs`` go to it) or a ``(n_classes, n_classes)``
    matrix (no ``loss_kwargs`` then).
    """
    H = hierarchy if not isinstance(loss, str) else _need_hierarchy(hierarchy, "maximal_loss")
    classes, R, S = _score_inputs(y_true, scores, classes, H, "maximal_loss")
    L = _class_loss(H, classes, loss, loss_kwargs)
    out = np.zeros(R.shape[0])
    for sl in _losses.row_chunks(R.shape[0], len(classes)):
        s, r = S[sl], R[sl]
        mis = r[:, :, None] & ~r[:, None, :] & (s[:, :, None] <= s[:, None, :])
        out[sl] = np.where(mis, L[None], 0.0).max(axis=(1, 2))
    return _mean(out, sample_weight)


def top_loss(y_true, scores, classes=None, hierarchy=None, loss="half_symmetric",
             sample_weight=None, **loss_kwargs) -> float:
    """Top loss, Cai thesis (4.22)-(4.23): 0 when the top-scored class ``f`` is a true class,
    else ``max_{y in Y_i} loss(y, f)``; averaged over samples.

    With the 0/1 loss this is the one-error ``1 - one_accuracy``.  ``loss`` as in
    :func:`maximal_loss`.
    """
    H = hierarchy if not isinstance(loss, str) else _need_hierarchy(hierarchy, "top_loss")
    classes, R, S = _score_inputs(y_true, scores, classes, H, "top_loss")
    L = _class_loss(H, classes, loss, loss_kwargs)
    top = np.argmax(S, axis=1)
    idx = np.arange(len(top))
    per = np.where(R, L[:, top].T, 0.0).max(axis=1)
    per[R[idx, top]] = 0.0
    return _mean(per, sample_weight)


def parent_one_accuracy(y_true, scores, classes=None, hierarchy=None, sample_weight=None) -> float:
    """Parent one-accuracy, Cai thesis (7.6): the fraction of samples for which the
    top-scored class ``f`` has the same parent as some true class, ``P(f) = P(y)``.

    On a DAG "same parent" means sharing at least one parent.  A class always shares its
    own parent(s), so this is at least :func:`one_accuracy`.
    """
    H = _need_hierarchy(hierarchy, "parent_one_accuracy")
    classes, R, S = _score_inputs(y_true, scores, classes, H, "parent_one_accuracy", True)
    Pc = _losses.parent_matrix(H)[H.indices(classes)].astype(float)
    same_parent = np.asarray((Pc @ Pc.T).todense()) > 0
    np.fill_diagonal(same_parent, True)
    top = np.argmax(S, axis=1)
    hit = (R & same_parent[:, top].T).any(axis=1)
    return _mean(hit, sample_weight)


# ---------------------------------------------------------------------- scikit-learn scorers
# name -> (metric, greater_is_better, what the metric reads from the estimator, fixed kwargs)
SCORERS = {
    "hierarchical_f1": (hierarchical_f1, True, "predict", {}),
    "hierarchical_precision": (hierarchical_precision, True, "predict", {}),
    "hierarchical_recall": (hierarchical_recall, True, "predict", {}),
    "micro_f1": (micro_f1, True, "predict", {}),
    "weighted_f1": (weighted_f1, True, "predict", {}),
    "neg_te_zero_one": (test_error, False, "predict", {"loss": "zero_one"}),
    "neg_te_symmetric_difference": (test_error, False, "predict", {"loss": "symmetric_difference"}),
    "neg_te_sibling": (test_error, False, "predict", {"loss": "sibling"}),
    "neg_te_subtree": (test_error, False, "predict", {"loss": "subtree"}),
    "one_accuracy": (one_accuracy, True, "scores", {}),
    "average_precision": (average_precision, True, "scores", {}),
    "parent_one_accuracy": (parent_one_accuracy, True, "scores", {}),
    "neg_ranking_loss": (ranking_loss, False, "scores", {}),
    "neg_maximal_loss": (maximal_loss, False, "scores", {}),
    "neg_top_loss": (top_loss, False, "scores", {}),
}
"""Scorer names for :func:`get_scorer`: ``name -> (metric, greater_is_better, input, kwargs)``.

Losses are negated (``neg_`` prefix) so that greater is better, as scikit-learn expects.
``input`` is ``"predict"`` (the metric reads ``estimator.predict``) or ``"scores"`` (it
reads ``decision_function`` or ``predict_proba`` with columns ``estimator.classes_``).
"""


# ---------------------------------------------------------------------- node scores, AU(PRC)
def node_scores(scores, classes, hierarchy) -> np.ndarray:
    """Scores per node of ``hierarchy`` from scores per class: a node scores as the best class
    at or below it, ``(n_samples, n_nodes)`` with columns in ``H.nodes`` order.

    The result is consistent with the hierarchy: a node never scores above its ancestors (the
    classes below a node are among those below each ancestor), so thresholding it at any level
    gives an ancestor-closed label set.  It keeps each sample's offset: :func:`node_margins`
    gives node scores free of it, :class:`NodeCalibration` scores on one scale across nodes.
    """
    return _best_below(*_class_nodes(scores, classes, hierarchy, "node_scores")[::-1])


#: the node decodings of :func:`node_margins`
NODE_MARGINS = ("max_marginal", "threshold", "standardized", "best_class")

#: the margins a :class:`NodeCalibration` is fitted on: those of :func:`node_margins`, and the
#: exact leave-one-out ridge outputs of :class:`hiercvx.estimators.NodeKernelRidge`
CALIBRATION_MARGINS = NODE_MARGINS + ("leave_one_out",)


def node_margins(scores, classes, hierarchy, *, method: str = "max_marginal",
                 threshold: float = 0.0) -> np.ndarray:
    """Node margins ``(n_samples, n_nodes)`` from class scores: scores per node that do not
    change when a constant is added to a sample's class scores, and never exceed an
    ancestor's (every threshold gives an ancestor-closed label set).

    A label-set margin model -- the hierarchical SVM on label sets (Cai thesis (4.10) with
    label sets), the Crammer-Singer SVM -- constrains only differences of class scores within a
    sample, ``F(x, y) - F(x, ybar) >= Delta(y, ybar) - xi``: each sample's scores carry an
    offset the training loss never sees, so raw class scores are not comparable across
    samples.  With ``b_v(x) = max_{k <= v} F_k(x)`` the best class at or below node ``v``:

    * ``"max_marginal"``: ``m_v = b_v - max_{k not <= v} F_k``, the margin by which the best
      class under ``v`` beats every class outside it (positive exactly on the path of the top
      class; where every class is under ``v`` the outside maximum is the lowest class score);
    * ``"threshold"``: ``m_v = b_v - max_k F_k + threshold``, so that ``m_v >= 0`` exactly for
      the nodes of the label set of every class within ``threshold`` of the top score, closed
      upward (the multi-label decision rule of the estimators);
    * ``"standardized"``: ``m_v = (b_v - mean_k F_k) / std_k F_k``: also free of each sample's
      scale (a constant row gives zeros);
    * ``"best_class"``: ``b_v`` itself (:func:`node_scores`; not offset-free).

    A node that no class reaches takes the lowest class score for ``b_v``; under
    ``"threshold"`` it is in no label set, so its margin is the float just below
    ``min(0, min_k F_k - max_k F_k + threshold)``: negative, and under every reached node's.

    Parameters
    ----------
    scores : array ``(n_samples, n_classes)``, columns following ``classes``
    classes : sequence of node names of ``hierarchy`` (leaves or internal nodes)
    hierarchy : Hierarchy
    method : one of ``"max_marginal"``, ``"threshold"``, ``"standardized"``, ``"best_class"``
    threshold : float, the gap of the ``"threshold"`` rule (an estimator's ``threshold_``)

    Returns
    -------
    margins : ndarray ``(n_samples, n_nodes)`` over ``hierarchy.nodes``
    """
    if not isinstance(method, str) or method not in NODE_MARGINS:
        raise InputError(f"method must be one of {NODE_MARGINS}, got {method!r}")
    t = _finite_number(threshold, "threshold")
    H, classes, S = _class_nodes(scores, classes, hierarchy, "node_margins")
    best = _best_below(S, classes, H)
    if method == "best_class":
        return best
    if method == "max_marginal":
        below = H.ancestor_matrix[H.indices(classes)].toarray().astype(bool)  # class k under v
        return best - _best_outside(S, below)
    if method == "threshold":
        m = best - S.max(axis=1, keepdims=True) + t
        # a node no class reaches is in no class's label set, whatever the gap
        unreached = np.asarray(H.ancestor_matrix[H.indices(classes)].sum(axis=0)).ravel() == 0
        m[:, unreached] = np.nextafter(np.minimum(m[:, unreached], 0.0), -np.inf)
        return m
    spread = S.std(axis=1, keepdims=True)
    return (best - S.mean(axis=1, keepdims=True)) / np.where(spread > 0, spread, 1.0)


def node_log_odds(y_train, hierarchy, *, smoothing: float = 0.5) -> np.ndarray:
    """Log-odds of each node's frequency in the training labels (closed upward), ``(n_nodes,)``:
    ``log((c_v + a) / (n - c_v + a))`` with ``c_v`` the training samples that hold node ``v``
    and ``a = smoothing`` (Jeffreys' prior at the default).  An ancestor's count is at least
    its descendants', so these never exceed an ancestor's."""
    H = _need_hierarchy(hierarchy, "node_log_odds")
    T = _closed(y_train, H, "y_train")
    a = _finite_number(smoothing, "smoothing", positive=True)
    counts = T.sum(axis=0).astype(float)
    return np.log(counts + a) - np.log(T.shape[0] - counts + a)


@dataclass(frozen=True)
class NodeCalibration:
    """Calibrated node scores: ``log_odds_v + intercept_v + slope_v * m_v(x)``, the log-odds of
    node ``v`` given the node margin ``m_v(x)`` (:func:`node_margins`) under a logistic model
    whose per-node offsets are the training frequencies (:func:`node_log_odds`) and whose
    slope and intercept are fitted (:func:`fit_node_calibration`): one pair shared by every
    node (pooled), or one pair per node (Platt scaling per node, shrunk towards the pooled pair).

    Micro-averaged AU(PRC) (:func:`au_prc`) pools the (sample, node) pairs of all nodes: the
    frequency term puts the nodes on one scale, the margin term orders the samples.  With one
    pair no score exceeds an ancestor's (``slope >= 0``); with a pair per node ``hierarchy``
    is set and scores go through :func:`coherent_node_scores`.  Fit on held-out margins where
    the estimator has them: training margins of a large-margin fit make the slope too steep.

    Attributes
    ----------
    log_odds : ndarray ``(n_nodes,)``
    slope : float or ndarray ``(n_nodes,)`` (>= 0)
    intercept : float or ndarray ``(n_nodes,)``
    method : str, the margins fitted on, one of ``CALIBRATION_MARGINS``
    hierarchy : Hierarchy or None
        Set for per-node pairs: the scores go through :func:`coherent_node_scores`.
    """

    log_odds: np.ndarray
    slope: float
    intercept: float
    method: str = "standardized"
    hierarchy: Hierarchy | None = None

    def scores(self, margins) -> np.ndarray:
        """Calibrated node scores (log-odds) ``(n_samples, n_nodes)`` of node margins."""
        m = _losses.check_scores(margins, None, len(self.log_odds), over="nodes", name="margins")
        S = self.log_odds[None, :] + self.intercept + self.slope * m
        return S if self.hierarchy is None else _descendant_max(S, self.hierarchy)


def coherent_node_scores(scores, hierarchy) -> np.ndarray:
    """Node scores raised to the best score at or below each node, ``max_{u <= v} s_u``, so no
    node scores above an ancestor: the max constraint module of Giunchiglia and Lukasiewicz
    (Coherent hierarchical multi-label classification networks, NeurIPS 2020), on scores.

    Parameters
    ----------
    scores : array ``(n_samples, n_nodes)`` over ``hierarchy.nodes``
    hierarchy : Hierarchy

    Returns
    -------
    ndarray ``(n_samples, n_nodes)``
    """
    H = _need_hierarchy(hierarchy, "coherent_node_scores")
    S = _losses.check_scores(scores, None, len(H.nodes), over="nodes")
    return _descendant_max(S, H)


def fit_node_calibration(margins, y_train, hierarchy, *, method: str = "standardized",
                         nodes=None, smoothing: float = 0.5,
                         shrinkage: float | None = None) -> NodeCalibration:
    """Fit :class:`NodeCalibration` on samples with known labels: the node frequencies of
    ``y_train`` and, by maximum likelihood over the (sample, node) pairs of ``nodes``, the
    slope (``>= 0``) and intercept of the logistic model
    ``P(v in Y | x) = sigmoid(log_odds_v + intercept + slope * m_v(x))``.

    ``shrinkage=None`` (default): one pair for every node.  ``rho > 0``: a pair per node (Platt,
    Probabilistic outputs for support vector machines, 1999) penalized by
    ``rho / 2 ((a_v - s0)^2 + (b_v - c0)^2)`` towards the pooled pair ``(s0, c0)``, on margins
    scaled to unit standard deviation (``rho`` is free of their unit): a node with few
    positives stays near the pooled pair.  Fit per-node pairs on held-out margins.

    Parameters
    ----------
    margins : array ``(n_samples, n_nodes)``, the samples' node margins (:func:`node_margins`
        with ``method``, or an estimator's own node margins)
    y_train : the samples' label sets (or node names, or an indicator over ``hierarchy.nodes``)
    hierarchy : Hierarchy
    method : str, what ``margins`` are (recorded): one of ``CALIBRATION_MARGINS``
    nodes : bool array over ``hierarchy.nodes`` or a list of node names, optional; default
        :func:`evaluated_nodes`
    smoothing : float, the pseudo-count of :func:`node_log_odds`
    shrinkage : float or None, the per-node penalty ``rho`` (None: one pooled pair)

    Returns
    -------
    NodeCalibration
    """
    H = _need_hierarchy(hierarchy, "fit_node_calibration")
    if not isinstance(method, str) or method not in CALIBRATION_MARGINS:
        raise InputError(f"method must name the margins, one of {CALIBRATION_MARGINS}, got "
                         f"{method!r}")
    T = _closed(y_train, H, "y_train")
    m = _losses.check_scores(margins, T.shape[0], len(H.nodes), over="nodes", name="margins")
    if shrinkage is not None and (isinstance(shrinkage, (bool, np.bool_)) or not isinstance(
            shrinkage, (int, float, np.number)) or not (np.isfinite(shrinkage) and shrinkage > 0)):
        raise InputError(f"shrinkage must be None (one pooled pair) or a positive number, got "
                         f"{shrinkage!r}")
    log_odds = node_log_odds(T, H, smoothing=smoothing)
    nodes = evaluated_nodes(T, H) if nodes is None else _node_mask(nodes, H)
    if not nodes.any() or T[:, nodes].all() or not T[:, nodes].any():
        return NodeCalibration(log_odds, 0.0, 0.0, method)   # nothing to order
    offsets = np.broadcast_to(log_odds[nodes], (T.shape[0], nodes.sum()))
    slope, intercept = _logistic_fit(m[:, nodes].ravel(), offsets.ravel(),
                                     T[:, nodes].ravel().astype(float))
    if shrinkage is None:
        return NodeCalibration(log_odds, slope, intercept, method)
    scale = float(np.std(m[:, nodes])) or 1.0   # per-node pairs on margins of unit spread
    a, b = np.full(len(H.nodes), slope * scale), np.full(len(H.nodes), intercept)
    a[nodes], b[nodes] = _per_node_logistic_fit(m[:, nodes] / scale, log_odds[nodes],
                                                T[:, nodes].astype(float),
                                                (slope * scale, intercept), float(shrinkage))
    return NodeCalibration(log_odds, a / scale, b, method, H)


def evaluated_nodes(y_train, hierarchy, *, with_positives: bool = False) -> np.ndarray:
    """The nodes the Clus-HMC benchmarks score, bool over ``H.nodes``: every node but those
    that every training sample holds -- the root and, on the Gene Ontology data, the three
    namespace roots -- as Giunchiglia and Lukasiewicz's C-HMCNN evaluation does (NeurIPS 2020:
    499 FunCat and 4122 GO classes on the yeast data, whose published AU(PRC) the reproduction
    sets beside its own).  A node with no positive in training is scored too: a model should
    rank it low.

    ``with_positives=True`` keeps only those with a positive in ``y_train`` (closed upward):
    the nodes a one-vs-rest model can be trained on (the others take its lowest score).
    """
    H = _need_hierarchy(hierarchy, "evaluated_nodes")
    T = _closed(y_train, H, "y_train")
    mask = ~T.all(axis=0) if T.shape[0] else np.ones(T.shape[1], dtype=bool)
    mask[H.index(H.root)] = False
    if with_positives:
        mask &= T.any(axis=0)
    return mask


def au_prc(y_true, scores, hierarchy=None, *, nodes=None, y_train=None) -> float:
    """AU(PRC): the area under the micro-averaged precision-recall curve of per-node scores,
    the ranking measure of the Clus-HMC benchmarks (Vens et al., Decision trees for hierarchical
    multi-label classification, Machine Learning 73, 2008; computed as Giunchiglia and
    Lukasiewicz, Coherent hierarchical multi-label classification networks, NeurIPS 2020, do:
    scikit-learn's micro-averaged average precision over the evaluated nodes).

    Every (sample, node) pair of the evaluated nodes is one prediction scored by ``scores``; the
    true label of the pair is whether the node is in the sample's label set closed upward.

    Parameters
    ----------
    y_true : label sets, node names, or a 0/1 indicator ``(n_samples, n_nodes)`` over ``H.nodes``
    scores : array ``(n_samples, n_nodes)``, one score per node in ``H.nodes`` order (for
        example :func:`node_scores` of a model's class scores)
    hierarchy : Hierarchy
    nodes : bool array over ``H.nodes`` or a list of node names, optional
        The nodes evaluated (integer positions are refused: pass their names); default
        :func:`evaluated_nodes` of ``y_train`` when given (the literature's choice: every node
        but those every training sample holds), else every node but the root.
    y_train : training labels, optional
    """
    from sklearn.metrics import average_precision_score

    H = _need_hierarchy(hierarchy, "au_prc")
    T = _closed(y_true, H)
    S = _losses.check_scores(scores, T.shape[0], len(H.nodes), over="nodes")
    if nodes is None:
        nodes = evaluated_nodes(y_train, H) if y_train is not None else \
            np.arange(len(H.nodes)) != H.index(H.root)
    else:
        nodes = _node_mask(nodes, H)
    if not nodes.any():
        raise InputError("nodes must be a selection of at least one node to evaluate; it "
                         "selects none")
    truth = T[:, nodes].ravel()
    if not truth.any():
        raise LabelError("au_prc: no positive (sample, node) pair among the evaluated nodes; the "
                         "test labels must hold at least one evaluated node")
    return float(average_precision_score(truth, S[:, nodes].ravel()))


class _ScoreScorer(_BaseScorer):
    """A scikit-learn scorer for metrics on class scores: ``scorer(estimator, X, y)``.

    Built on scikit-learn's scorer base class, so it takes part in metadata routing as the
    scorers of ``sklearn.metrics.make_scorer`` do: ``set_score_request(sample_weight=True)``
    asks for the weights, and weights passed to ``cross_validate(..., params=...)`` that it
    did not ask for raise."""

    #: ``scores`` and ``classes`` come from the estimator, never from metadata
    _OWN = ("scores", "classes")

    def __init__(self, metric, sign: float, kwargs: dict, name: str):
        super().__init__(metric, sign, kwargs, response_method=("decision_function",
                                                                 "predict_proba"))
        self._name = name

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        if hasattr(estimator, "decision_function"):
            scores = np.asarray(estimator.decision_function(X), dtype=float)
        elif hasattr(estimator, "predict_proba"):
            scores = np.asarray(estimator.predict_proba(X), dtype=float)
        else:
            raise InputError(f"scorer {self._name!r} needs class scores, but "
                             f"{type(estimator).__name__} has neither decision_function nor "
                             "predict_proba; use a prediction-based scorer such as 'hierarchical_f1'")
        classes = list(getattr(estimator, "classes_"))
        if scores.ndim == 1:  # binary decision_function: score of classes_[1]
            scores = np.column_stack([-scores, scores])
        return self._sign * self._score_func(y_true, scores, classes=classes,
                                             **{**self._kwargs, **kwargs})

    def _get_metadata_request(self):
        requests = super()._get_metadata_request()
        if not hasattr(self, "_metadata_request"):   # the class-level defaults, from the metric
            for param in self._OWN:
                requests.score._requests.pop(param, None)
        return requests

    def __repr__(self):
        return f"hierarchical_scorer({self._name!r})"


def make_hierarchical_scorer(name: str, hierarchy=None, **kwargs):
    """A scikit-learn scorer for the metric ``name`` (a key of :data:`SCORERS`).

    ``hierarchy=H`` and ``kwargs`` are passed to the metric.  Prediction-based scorers are
    built with ``sklearn.metrics.make_scorer``, so any classifier whose ``predict``
    returns node names or label sets works in ``GridSearchCV(..., scoring=...)``.  Refused
    when the scorer is built: keyword arguments the metric (or its loss) does not take, those
    the scorer passes itself (``sample_weight``; ``classes``, from ``estimator.classes_``, for
    the scorers on class scores), and a ``loss`` other than the one the scorer's name says.
    """
    if not isinstance(name, str) or name not in SCORERS:
        raise InputError(f"unknown scorer {name!r}; choose one of {sorted(SCORERS)}")
    _check_scorer_kwargs(name, SCORERS, kwargs)
    metric, greater, kind, fixed = SCORERS[name]
    kw = dict(fixed)
    kw.update(kwargs)
    if hierarchy is not None:
        kw["hierarchy"] = _need_hierarchy(hierarchy, name)
    if kind == "predict":
        return make_scorer(metric, greater_is_better=greater, **kw)
    return _ScoreScorer(metric, 1.0 if greater else -1.0, kw, name)


def get_scorer(name: str, hierarchy=None, **kwargs):
    """Alias of :func:`make_hierarchical_scorer`, named like ``sklearn.metrics.get_scorer``."""
    return make_hierarchical_scorer(name, hierarchy=hierarchy, **kwargs)
