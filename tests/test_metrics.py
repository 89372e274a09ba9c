"""Tests of hiercvx.metrics: hand-computed values, scikit-learn and brute-force oracles,
properties on random hierarchies, scorers inside GridSearchCV, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, label_ranking_average_precision_score, label_ranking_loss
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import MultiLabelBinarizer
from sklearn.tree import DecisionTreeClassifier

from hiercvx import losses as L
from hiercvx import metrics as M
from hiercvx.exceptions import InputError, LabelError
from hiercvx.hierarchy import most_specific

try:
    from strategies import dag_fixture, tree_fixture  # noqa: F401 (the fixtures dag, tree)
    from strategies import hierarchies, hierarchy_and_labels, label_samples, label_sets_and_scores
except ImportError:  # tests/ imported as a package
    from tests.strategies import dag_fixture, tree_fixture  # noqa: F401
    from tests.strategies import (hierarchies, hierarchy_and_labels, label_samples,
                                  label_sets_and_scores)

PROPS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def anc(H, Y):
    Y = Y if isinstance(Y, (set, frozenset)) else {Y}
    out = set()
    for y in Y:
        out |= set(H.ancestors(y, inclusive=True))
    return out - {H.root}


# ---------------------------------------------------------------------- hierarchical P / R / F1
def test_hierarchical_prf_hand_values_tree(tree):
    yt = ["A1", "A1", "A", "B1a", "A1"]
    yp = ["A2", "B1a", "A1", "B1b", "A1"]
    # overlaps 1 + 0 + 1 + 2 + 2 = 6; |pred| = 2+3+2+3+2 = 12; |true| = 2+2+1+3+2 = 10
    p, r, f = M.hierarchical_precision_recall_f1(yt, yp, hierarchy=tree)
    assert (p, r) == pytest.approx((0.5, 0.6))
    assert f == pytest.approx(2 * 0.3 / 1.1)
    assert M.hierarchical_f1(yt, yp, hierarchy=tree) == pytest.approx(f)
    assert M.hierarchical_precision(yt, yp, hierarchy=tree) == pytest.approx(0.5)
    assert M.hierarchical_recall(yt, yp, hierarchy=tree) == pytest.approx(0.6)


def test_hierarchical_prf_dag_counts_shared_ancestors_once(dag):
    # true C -> {A, B, C}; predicted D -> {A, D}; overlap {A}.  Counting paths instead of
    # nodes would see C twice (via A and via B); node identities give these values:
    p, r, f = M.hierarchical_precision_recall_f1(["C"], ["D"], hierarchy=dag)
    assert (p, r, f) == pytest.approx((1 / 2, 1 / 3, 0.4))


def test_hierarchical_f1_zero_not_nan(tree):
    assert M.hierarchical_precision_recall_f1(["A1"], ["B1a"], hierarchy=tree) == (0.0, 0.0, 0.0)
    assert M.hierarchical_f1(["root"], ["root"], hierarchy=tree) == 0.0  # nothing to count
    assert M.hierarchical_f1([set()], ["A1"], hierarchy=tree) == 0.0


def test_hierarchical_f1_label_sets_and_weights(tree):
    yt = [{"A1", "B1a"}, {"A2"}]
    yp = [{"A1"}, {"A2", "B1b"}]
    # overlaps: {A, A1} 2 and {A, A2} 2; |pred| 2 + 5; |true| 5 + 2
    assert M.hierarchical_f1(yt, yp, hierarchy=tree) == pytest.approx(4 / 7)
    # weight 3 on the first sample: P = (6+2)/(6+5) , R = (6+2)/(15+2)
    p, r, _ = M.hierarchical_precision_recall_f1(yt, yp, hierarchy=tree, sample_weight=[3, 1])
    assert (p, r) == pytest.approx((8 / 11, 8 / 17))
    assert M.hierarchical_f1("A1", "A1", hierarchy=tree) == 1.0  # single labels


@PROPS
@given(hierarchy_and_labels())
def test_hierarchical_prf_match_brute_force(data):
    H, yt, yp = data
    inter = sum(len(anc(H, a) & anc(H, b)) for a, b in zip(yt, yp))
    n_pred = sum(len(anc(H, b)) for b in yp)
    n_true = sum(len(anc(H, a)) for a in yt)
    p = inter / n_pred if n_pred else 0.0
    r = inter / n_true if n_true else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    got = M.hierarchical_precision_recall_f1(yt, yp, hierarchy=H)
    assert got == pytest.approx((p, r, f))
    assert all(0.0 <= v <= 1.0 for v in got)


@PROPS
@given(hierarchy_and_labels())
def test_perfect_prediction(data):
    H, yt, _ = data
    if all(not anc(H, y) for y in yt):  # only the root: nothing to count, F is 0 by convention
        return
    assert M.hierarchical_f1(yt, yt, hierarchy=H) == pytest.approx(1.0)
    te = M.test_errors(yt, yt, hierarchy=H, multi_parent="mean")
    assert te == {"TE_0-1": 0.0, "TE_Delta": 0.0, "TE_sib": 0.0, "TE_sub": 0.0}
    assert M.micro_f1(yt, yt, hierarchy=H) == pytest.approx(1.0)
    assert M.weighted_f1(yt, yt, hierarchy=H) == pytest.approx(1.0)


# ---------------------------------------------------------------------- flat F1 scores
def test_micro_and_weighted_f1_against_sklearn_multiclass():
    rng = np.random.default_rng(1)
    yt = rng.choice(list("abcde"), 40)
    yp = rng.choice(list("abcdf"), 40)
    assert M.micro_f1(yt, yp) == pytest.approx(np.mean(yt == yp))  # = accuracy
    assert M.micro_f1(yt, yp) == pytest.approx(f1_score(yt, yp, average="micro"))
    assert M.weighted_f1(yt, yp) == pytest.approx(f1_score(yt, yp, average="weighted", zero_division=0))
    w = rng.uniform(0.1, 2.0, 40)
    assert M.weighted_f1(yt, yp, sample_weight=w) == pytest.approx(
        f1_score(yt, yp, average="weighted", zero_division=0, sample_weight=w))


def test_micro_and_weighted_f1_against_sklearn_multilabel(tree):
    rng = np.random.default_rng(2)
    nodes = list(tree.nodes)
    yt = [frozenset(rng.choice(nodes, rng.integers(1, 3), replace=False)) for _ in range(30)]
    yp = [frozenset(rng.choice(nodes, rng.integers(0, 3), replace=False)) for _ in range(30)]
    mlb = MultiLabelBinarizer(classes=nodes).fit([nodes])
    T, P = mlb.transform(yt), mlb.transform(yp)
    assert M.micro_f1(yt, yp) == pytest.approx(f1_score(T, P, average="micro"))  # no hierarchy
    # with the hierarchy, a set that includes ancestors of its labels counts as its most specific labels
    Tr, Pr = mlb.transform(most_specific(tree, yt)), mlb.transform(most_specific(tree, yp))
    assert M.micro_f1(yt, yp, hierarchy=tree) == pytest.approx(f1_score(Tr, Pr, average="micro"))
    assert M.weighted_f1(yt, yp, hierarchy=tree) == pytest.approx(
        f1_score(Tr, Pr, average="weighted", zero_division=0))


# ---------------------------------------------------------------------- test errors, regret
def test_test_errors_hand_values(tree):
    yt = ["A1", "A1", "A", "B1a", "A1"]
    yp = ["A2", "B1a", "A1", "B1b", "A1"]
    te = M.test_errors(yt, yp, hierarchy=tree)
    assert te["TE_0-1"] == pytest.approx(4 / 5)
    assert te["TE_Delta"] == pytest.approx((2 + 5 + 1 + 2) / 5)
    assert te["TE_sib"] == pytest.approx((0.5 + 1 + 0.25 + 0.5) / 5)
    assert te["TE_sub"] == pytest.approx((2 + 7 + 1 + 2) / 7 / 5)
    assert M.test_error(yt, yp, hierarchy=tree, loss="symmetric_difference") == te["TE_Delta"]
    assert M.test_error(yt, yp, tree, loss="subtree") == te["TE_sub"]
    assert M.test_error(yt, yp, tree, loss="structural", alpha=np.ones(8)) == pytest.approx(
        np.mean(np.sqrt([2, 5, 1, 2, 0])))


@PROPS
@given(hierarchy_and_labels())
def test_test_errors_are_means_of_losses(data):
    H, yt, yp = data
    te = M.test_errors(yt, yp, hierarchy=H, multi_parent="mean")
    assert te["TE_0-1"] == pytest.approx(np.mean(L.zero_one(H, yt, yp)))
    assert te["TE_Delta"] == pytest.approx(np.mean(L.symmetric_difference(H, yt, yp)))
    assert te["TE_sib"] == pytest.approx(np.mean(L.sibling_loss(H, yt, yp, multi_parent="mean")))
    assert te["TE_sub"] == pytest.approx(np.mean(L.subtree_loss(H, yt, yp)))
    assert 0.0 <= te["TE_0-1"] <= 1.0


def test_bayes_regret_improvement():
    # (TE(base) - Bayes) - (TE - Bayes) over (TE(base) - Bayes)
    assert M.bayes_regret_improvement(0.3, 0.4, bayes_error=0.2) == pytest.approx(0.5)
    assert M.bayes_regret_improvement(0.2, 0.4, bayes_error=0.2) == pytest.approx(1.0)  # reaches Bayes
    assert M.bayes_regret_improvement(0.5, 0.4, bayes_error=0.2) == pytest.approx(-0.5)  # worse
    assert M.bayes_regret_improvement(0.3, 0.4) == pytest.approx(0.25)  # real data: / TE(base)
    np.testing.assert_allclose(M.bayes_regret_improvement([0.3, 0.35], [0.4, 0.4], 0.2), [0.5, 0.25])
    with pytest.raises(InputError, match="positive"):
        M.bayes_regret_improvement(0.3, 0.2, bayes_error=0.2)


# ---------------------------------------------------------------------- metrics on scores
CLASSES = ("A1", "A2", "B1a", "B1b")


def test_score_metrics_hand_values(tree):
    S = np.array([[0.9, 0.1, 0.0, 0.0],    # top A1, true {A1}
                  [0.1, 0.8, 0.3, 0.0],    # top A2, true {A1}: sibling error
                  [0.0, 0.2, 0.1, 0.7],    # top B1b, true {A2, B1a}
                  ])
    Y = [["A1"], ["A1"], ["A2", "B1a"]]
    assert M.one_accuracy(Y, S, classes=CLASSES) == pytest.approx(1 / 3)
    # AP: 1; A1 is ranked 3rd -> 1/3; A2 2nd -> 1/2... sample 3: order B1b, A2, B1a, A1:
    #     A2 at rank 2 with 1 true -> 1/2, B1a at rank 3 with 2 true -> 2/3
    assert M.average_precision(Y, S, classes=CLASSES) == pytest.approx((1 + 1 / 3 + (1 / 2 + 2 / 3) / 2) / 3)
    # rloss: 0; A1 below A2, B1a -> 2/3; A2 below B1b, B1a below B1b -> 2/4
    assert M.ranking_loss(Y, S, classes=CLASSES) == pytest.approx((0 + 2 / 3 + 2 / 4) / 3)
    # Delta_h: A1-A2 = 1, A1-B1a = 2.5, A2-B1b = 2.5, B1a-B1b = 1
    # maximal: 0; max(1, 2.5) = 2.5; max(Delta_h(A2, B1b), Delta_h(B1a, B1b)) = 2.5
    assert M.maximal_loss(Y, S, hierarchy=tree, classes=CLASSES) == pytest.approx(5 / 3)
    # top: 0; Delta_h(A1, A2) = 1; max(Delta_h(A2, B1b), Delta_h(B1a, B1b)) = 2.5
    assert M.top_loss(Y, S, hierarchy=tree, classes=CLASSES) == pytest.approx(3.5 / 3)
    # parent: yes; A2 shares parent A with A1: yes; B1b shares B1 with B1a: yes
    assert M.parent_one_accuracy(Y, S, hierarchy=tree, classes=CLASSES) == 1.0
    assert M.parent_one_accuracy([["B1a"]], [[0, 1, 0, 0]], hierarchy=tree) == 0.0  # default classes = leaves


def test_parent_one_accuracy_dag_shares_a_parent(dag):
    # classes C, D, F: C's parents {A, B}; D's {A}; F's {B}: every pair shares a parent except D-F
    classes = ("C", "D", "F")
    assert M.parent_one_accuracy([["D"], ["F"]], [[1, 0, 0], [1, 0, 0]], classes, dag) == 1.0
    assert M.parent_one_accuracy([["D"]], [[0, 0, 1]], classes, dag) == 0.0


def _random_scores(rng, n, k, ties):
    return rng.integers(0, 3, (n, k)).astype(float) if ties else rng.normal(size=(n, k))


@pytest.mark.parametrize("ties", [False, True])
def test_ranking_metrics_against_sklearn(ties):
    rng = np.random.default_rng(3)
    n, k = 50, 6
    R = rng.random((n, k)) < 0.35
    R[np.arange(n), rng.integers(0, k, n)] = True  # every sample has a true label
    S = _random_scores(rng, n, k, ties)
    classes = list(range(k))
    assert M.average_precision(R.astype(int), S, classes=classes) == pytest.approx(
        label_ranking_average_precision_score(R, S))
    assert M.ranking_loss(R.astype(int), S, classes=classes) == pytest.approx(label_ranking_loss(R, S))
    ysets = [frozenset(np.flatnonzero(r).tolist()) for r in R]  # label-set input, same values
    assert M.ranking_loss(ysets, S, classes=classes) == pytest.approx(label_ranking_loss(R, S))


@PROPS
@given(hierarchies(), st.data())
def test_score_metrics_against_brute_force(H, data):
    classes = H.leaves
    Y, S = data.draw(label_sets_and_scores(H, max_samples=5))
    n = len(Y)
    Dh = L.loss_matrix(H, "half_symmetric", classes)
    col = {c: j for j, c in enumerate(classes)}
    acc, prec, rl, mx, top, pacc = [], [], [], [], [], []
    for i in range(n):
        s = S[i]
        f = classes[int(np.argmax(s))]
        pos = Y[i]
        neg = set(classes) - pos
        acc.append(f in pos)
        prec.append(np.mean([sum(s[col[r]] >= s[col[y]] for r in pos)
                             / sum(s[col[r]] >= s[col[y]] for r in classes) for y in pos]))
        bad = [(y, yb) for y in pos for yb in neg if s[col[y]] <= s[col[yb]]]
        rl.append(len(bad) / (len(pos) * len(neg)) if neg else 0.0)
        mx.append(max([Dh[col[y], col[yb]] for y, yb in bad], default=0.0))
        top.append(0.0 if f in pos else max(Dh[col[y], col[f]] for y in pos))
        pacc.append(any(set(H.parents(f)) & set(H.parents(y)) or f == y for y in pos))
    kw = dict(classes=classes, hierarchy=H)
    got = {"acc": M.one_accuracy(Y, S, **kw), "prec": M.average_precision(Y, S, **kw),
           "rl": M.ranking_loss(Y, S, **kw), "mx": M.maximal_loss(Y, S, **kw),
           "top": M.top_loss(Y, S, **kw), "pacc": M.parent_one_accuracy(Y, S, **kw)}
    want = {"acc": np.mean(acc), "prec": np.mean(prec), "rl": np.mean(rl), "mx": np.mean(mx),
            "top": np.mean(top), "pacc": np.mean(pacc)}
    assert got == pytest.approx(want)
    for name in ("acc", "prec", "rl", "pacc"):
        assert 0.0 <= got[name] <= 1.0
    # thesis 4.2.2: the maximal loss bounds the top loss; pacc >= acc
    assert got["mx"] >= got["top"] - 1e-12
    assert got["pacc"] >= got["acc"]


@PROPS
@given(hierarchies(), st.data())
def test_perfect_scores(H, data):
    classes = H.leaves
    Y = data.draw(label_samples(H, multilabel=True, leaves_only=True))
    S = np.array([[1.0 if c in y else 0.0 for c in classes] for y in Y])
    kw = dict(classes=classes, hierarchy=H)
    assert M.one_accuracy(Y, S, **kw) == 1.0
    assert M.average_precision(Y, S, **kw) == pytest.approx(1.0)
    assert M.ranking_loss(Y, S, **kw) == 0.0
    assert M.maximal_loss(Y, S, **kw) == 0.0
    assert M.top_loss(Y, S, **kw) == 0.0
    assert M.parent_one_accuracy(Y, S, **kw) == 1.0


def test_top_loss_with_zero_one_matrix_is_one_error(tree):
    rng = np.random.default_rng(4)
    S = rng.normal(size=(20, 4))
    Y = [[CLASSES[i]] for i in rng.integers(0, 4, 20)]
    zo = 1.0 - np.eye(4)
    assert M.top_loss(Y, S, classes=CLASSES, loss=zo) == pytest.approx(
        1 - M.one_accuracy(Y, S, classes=CLASSES))
    assert M.top_loss(Y, S, classes=CLASSES, hierarchy=tree, loss="zero_one") == pytest.approx(
        1 - M.one_accuracy(Y, S, classes=CLASSES))


# ---------------------------------------------------------------------- scikit-learn scorers
def _leaf_data(tree, n=120, seed=0):
    rng = np.random.default_rng(seed)
    leaves = np.array(tree.leaves, dtype=object)
    y = leaves[rng.integers(0, len(leaves), n)]
    centers = {v: rng.normal(scale=2.0, size=3) for v in tree.leaves}
    X = np.stack([centers[v] for v in y]) + rng.normal(size=(n, 3))
    return X, y


def test_scorer_in_grid_search(tree):
    X, y = _leaf_data(tree)
    scorer = M.get_scorer("hierarchical_f1", hierarchy=tree)
    gs = GridSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 4]}, scoring=scorer, cv=3)
    gs.fit(X, y)
    assert 0.0 <= gs.best_score_ <= 1.0
    est = gs.best_estimator_
    assert scorer(est, X, y) == pytest.approx(M.hierarchical_f1(y, est.predict(X), hierarchy=tree))
    # a loss scorer is negated; a score-based scorer reads predict_proba and classes_
    neg = M.make_hierarchical_scorer("neg_te_symmetric_difference", hierarchy=tree)
    assert neg(est, X, y) == pytest.approx(-M.test_error(y, est.predict(X), tree, loss="symmetric_difference"))
    acc = M.get_scorer("one_accuracy", hierarchy=tree)
    assert acc(est, X, y) == pytest.approx(np.mean(est.predict(X) == y))
    mx = M.get_scorer("neg_maximal_loss", hierarchy=tree)
    assert mx(est, X, y) <= 0.0
    gs2 = GridSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 4]},
                       scoring={"hF": scorer, "pacc": M.get_scorer("parent_one_accuracy", hierarchy=tree)},
                       refit="hF", cv=3).fit(X, y)
    assert set(gs2.cv_results_) >= {"mean_test_hF", "mean_test_pacc"}


def test_every_named_scorer_builds(tree):
    X, y = _leaf_data(tree, n=30)
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    for name in M.SCORERS:
        kw = {"multi_parent": "error"} if name == "neg_te_sibling" else {}
        value = M.get_scorer(name, hierarchy=tree, **kw)(est, X, y)
        assert np.isfinite(value)
        assert (value >= 0) == (not name.startswith("neg_")) or value == 0


# ---------------------------------------------------------------------- bad input
def test_bad_input(tree, dag):
    with pytest.raises(InputError, match="hierarchy=H"):
        M.hierarchical_f1(["A1"], ["A1"])
    with pytest.raises(LabelError, match="y_pred.*'Q'"):
        M.hierarchical_f1(["A1"], ["Q"], hierarchy=tree)
    with pytest.raises(LabelError, match="2 samples but y_pred has 1"):
        M.hierarchical_f1(["A1", "A2"], ["A1"], hierarchy=tree)
    with pytest.raises(LabelError, match="2 samples but y_pred has 1"):
        M.micro_f1(["A1", "A2"], ["A1"])
    with pytest.raises(InputError, match="sample_weight"):
        M.hierarchical_f1(["A1", "A2"], ["A1", "A2"], hierarchy=tree, sample_weight=[1.0])
    with pytest.raises(LabelError, match="no true label"):
        M.one_accuracy([set(), {"A1"}], np.zeros((2, 4)), classes=CLASSES)
    with pytest.raises(LabelError, match="not among the 4 classes"):
        M.average_precision([["A"]], np.zeros((1, 4)), classes=CLASSES)
    with pytest.raises(InputError, match="shape"):
        M.ranking_loss([["A1"]], np.zeros((1, 3)), classes=CLASSES)
    with pytest.raises(InputError, match="classes="):
        M.one_accuracy([["A1"]], np.zeros((1, 4)))
    with pytest.raises(LabelError, match="not a node"):
        M.maximal_loss([["A1"]], np.zeros((1, 2)), classes=["A1", "zz"], hierarchy=tree)
    with pytest.raises(InputError, match="hierarchy=H"):
        M.parent_one_accuracy([["A1"]], np.zeros((1, 4)), classes=CLASSES)
    with pytest.raises(InputError, match=r"\(4, 4\)"):
        M.top_loss([["A1"]], np.zeros((1, 4)), classes=CLASSES, loss=np.ones((2, 2)))
    with pytest.raises(InputError, match="unknown scorer"):
        M.get_scorer("accuracy_of_everything", hierarchy=tree)
    with pytest.raises(ValueError, match="multi_parent"):
        M.test_errors(["C"], ["D"], hierarchy=dag)


def test_score_shape_errors_name_the_columns():
    """A score matrix of the wrong shape or type is refused with the columns it needs:
    ``n_classes`` (ranked by ``classes``) or ``n_nodes`` (node scores, ``H.nodes``)."""
    H = M.Hierarchy.from_paths(["a/1", "a/2", "b/1"])
    with pytest.raises(InputError, match=r"\(n_samples, n_classes\) = \(2, 6\), got \(2, 5\)"):
        M.ranking_loss(["a/1", "b/1"], np.zeros((2, 5)), H)
    with pytest.raises(InputError, match=r"numeric \(n_samples, n_classes\) array"):
        M.one_accuracy(["a/1", "b/1"], ["a/1", "b/1"], H)
    with pytest.raises(InputError, match=r"\(n_samples, n_nodes\) = \(2, 6\), got \(2, 3\); "
                                         r"columns follow H.nodes"):
        M.au_prc([{"a/1"}, {"b/1"}], np.zeros((2, 3)), H)
    with pytest.raises(InputError, match="non-finite entry at sample 0, class 1"):
        M.ranking_loss(["a/1", "b/1"], np.where(np.eye(2, 6, k=1) > 0, np.nan, 0.0), H)


# ---------------------------------------------------------------------- labels as they come
LEAVES = ("A1", "A2", "B1a", "B1b")   # tree.leaves


def test_score_metrics_indicators_hold_0_or_1_only(tree):
    """A -1/+1 matrix (or NaN, or 2) is not an indicator: its -1 entries are not "true"."""
    S = np.array([[0.0, 5.0, 0.0, 0.0]])
    for bad in ([[1, -1, -1, -1]], [[1, np.nan, 0, 0]], [[1, 2, 0, 0]]):
        for metric in (M.one_accuracy, M.average_precision, M.ranking_loss):
            with pytest.raises(LabelError, match="holds 0 or 1 only"):
                metric(np.array(bad), S, hierarchy=tree)
    assert M.one_accuracy(np.array([[1, 0, 0, 0]]), S, hierarchy=tree) == 0.0


def test_flat_f1_reduce_label_sets_with_ancestors(tree):
    """{"A", "A1"} is the label A1 with its ancestor: with the hierarchy it counts as A1."""
    assert M.micro_f1([{"A", "A1"}], ["A1"], hierarchy=tree) == 1.0
    assert M.weighted_f1([{"A", "A1"}, {"B", "B1a"}], ["A1", "B1a"], hierarchy=tree) == 1.0
    closed = tree.closure([{"A1"}, {"B1a"}]).astype(int)   # closed indicators too
    assert M.micro_f1(closed, ["A1", "B1a"], hierarchy=tree) == 1.0
    assert M.micro_f1([{"A", "A1"}], [{"A2"}], hierarchy=tree) == 0.0   # not a partial hit


def test_flat_f1_without_hierarchy_refuses_none_and_nan():
    for bad in ([None], [np.nan], [float("nan")], [{"a", None}]):
        with pytest.raises(LabelError, match="None|NaN"):
            M.micro_f1(bad, bad)
        with pytest.raises(LabelError, match="None|NaN"):
            M.weighted_f1(["a"], bad)
    # True and 1.0 are not the label 1, though Python finds them equal
    assert M.micro_f1([1], [True]) == 0.0 and M.micro_f1([1], [1]) == 1.0


def test_score_metrics_reduce_label_sets_with_ancestors(tree):
    S = np.array([[0.0, 5.0, 0.0, 1.0], [3.0, 0.0, 1.0, 0.0]])
    reduced, with_ancestors = [{"A2"}, {"A1", "B1a"}], [{"A", "A2"}, {"root", "A", "A1", "B1", "B1a"}]
    for metric in (M.one_accuracy, M.average_precision, M.ranking_loss, M.maximal_loss,
                   M.top_loss, M.parent_one_accuracy):
        assert metric(with_ancestors, S, hierarchy=tree) == metric(reduced, S, hierarchy=tree)
    # an internal label that is not implied by another one is still no class
    with pytest.raises(LabelError, match="'A' \\(sample 0\\)"):
        M.one_accuracy([{"A"}], S[:1], hierarchy=tree)
    # without the hierarchy the ancestors are unknown: the error says how to reduce them
    with pytest.raises(LabelError, match="hierarchy=H.*most_specific"):
        M.one_accuracy([{"A", "A2"}], S[:1], classes=LEAVES)


def test_score_scorers_take_the_labels_the_estimator_was_fitted_on(tree):
    X, y = _leaf_data(tree, n=40)
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    with_ancestors = [set(tree.ancestors(v, inclusive=True)) for v in y]
    for name in ("one_accuracy", "average_precision", "neg_ranking_loss", "neg_maximal_loss"):
        scorer = M.get_scorer(name, hierarchy=tree)
        assert scorer(est, X, with_ancestors) == pytest.approx(scorer(est, X, y))


def test_score_metrics_read_indicators_over_the_nodes(tree):
    """The module's label forms hold for the metrics on scores: a 0/1 indicator over H.nodes
    (closed or not) is read as its most specific labels."""
    S = np.array([[0.0, 5.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    names = [{"A2"}, {"B1a", "B1b"}]
    closed = tree.closure(names).astype(int)
    unclosed = tree.label_indicator(names).toarray()   # the most specific nodes only
    for metric in (M.one_accuracy, M.average_precision, M.ranking_loss, M.top_loss):
        want = metric(names, S, hierarchy=tree)
        assert metric(closed, S, hierarchy=tree) == want
        assert metric(unclosed, S, hierarchy=tree) == want
    with pytest.raises(LabelError, match=r"one column per class \(4\); an indicator over "
                                         r"H.nodes is read with hierarchy=H"):
        M.one_accuracy(closed, S, classes=LEAVES)


def test_loss_keywords_the_metric_does_not_use_are_refused(tree):
    S = np.array([[0.0, 5.0, 0.0, 0.0]])
    with pytest.raises(InputError, match="does not take costs="):
        M.test_error(["A1"], ["B1a"], hierarchy=tree, loss="symmetric_difference",
                     costs=np.zeros(8))
    with pytest.raises(InputError, match="does not take multi_parnet="):
        M.test_error(["A1"], ["B1a"], hierarchy=tree, loss="sibling", multi_parnet="mean")
    with pytest.raises(InputError, match="'half_symmetric' does not take costs="):
        M.maximal_loss(["A1"], S, hierarchy=tree, costs=np.zeros(8))
    with pytest.raises(InputError, match="loss is a matrix here"):
        M.top_loss(["A1"], S, classes=LEAVES, loss=1 - np.eye(4), alpha=np.ones(8))
    assert M.test_error(["A1"], ["B1a"], hierarchy=tree, loss="subtree",
                        costs=np.zeros(8)) == 0.0


def test_test_errors_on_a_dag_name_a_fix_that_works(dag):
    with pytest.raises(ValueError) as info:
        M.test_errors(["C"], ["A"], hierarchy=dag)
    assert "pass costs=" not in str(info.value)
    assert "multi_parent" in str(info.value) and "h_loss" in str(info.value)
    assert M.test_errors(["C"], ["A"], hierarchy=dag, multi_parent="mean")["TE_sib"] >= 0
    assert M.test_error(["C"], ["A"], hierarchy=dag, loss="h_loss", costs=np.ones(len(dag))) == 1.0


def test_scorers_refuse_keywords_that_would_misname_or_break_them(tree):
    with pytest.raises(InputError, match="computes loss='zero_one', not loss='subtree'; use the "
                                         "scorer 'neg_te_subtree'"):
        M.get_scorer("neg_te_zero_one", hierarchy=tree, loss="subtree")
    with pytest.raises(InputError, match="passes classes= itself"):
        M.get_scorer("one_accuracy", hierarchy=tree, classes=LEAVES)
    with pytest.raises(InputError, match="does not take foo="):
        M.get_scorer("hierarchical_f1", hierarchy=tree, foo=1)
    with pytest.raises(InputError, match="does not take costs="):
        M.get_scorer("neg_maximal_loss", hierarchy=tree, costs=np.zeros(8))
    M.get_scorer("neg_te_zero_one", hierarchy=tree, loss="0-1")   # the same loss
    M.get_scorer("neg_maximal_loss", hierarchy=tree, loss="sibling", multi_parent="mean")


def test_bad_options_and_labels_get_input_errors(tree):
    S = np.zeros((1, 4))
    with pytest.raises(InputError, match="threshold must be a number"):
        M.node_margins(S, LEAVES, tree, method="threshold", threshold="x")
    with pytest.raises(InputError, match="smoothing must be a number"):
        M.node_log_odds([{"A1"}], tree, smoothing="a")
    with pytest.raises(InputError, match=r"te has shape \(3,\), te_baseline \(2,\)"):
        M.bayes_regret_improvement([0.1, 0.2, 0.3], [0.2, 0.3])
    with pytest.raises(InputError, match="te must be a number"):
        M.bayes_regret_improvement("a", 0.2)
    with pytest.raises(LabelError, match="this metric requires y_true"):
        M.micro_f1(None, None)
    with pytest.raises(LabelError, match="y_true is None"):
        M.micro_f1(None, ["A1"], hierarchy=tree)
    with pytest.raises(InputError, match="y_true must be a sequence"):
        M.micro_f1(5, 5)
    with pytest.raises(InputError, match="cannot be a node name"):
        M.micro_f1([{"a": 1}], ["a"])
    with pytest.raises(LabelError, match="this metric requires y_true to be passed"):
        M.one_accuracy(None, S, hierarchy=tree)
    assert M.test_error(np.array("A1"), np.array("A1"), hierarchy=tree) == 0.0


def test_complex_scores_are_refused_as_scores(tree):
    with pytest.raises(InputError, match=r"real scores. Pass scores.real") as info:
        M.one_accuracy(["A1"], np.zeros((1, 4)) + 1j, hierarchy=tree)
    assert "features" not in str(info.value) and "X.real" not in str(info.value)
    assert "section 7.2" in M.maximal_loss.__doc__ and "thesis 7.3" not in M.maximal_loss.__doc__
