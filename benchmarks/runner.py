"""The shared benchmark runner: named methods, one data split, the thesis metrics and the time.

* :data:`REGISTRY` maps a method name to a :class:`Method`: a factory ``(H, quick) ->
  estimator`` and a one-line description.  Every estimator it makes is fitted on label sets
  (leaves of ``H``) and exposes ``class_scores(X)`` with columns ``classes_``: the hiercvx
  estimators do so natively; scikit-learn's classifiers are wrapped in
  :class:`LabelSetAdapter`, which only encodes the targets and reads the scores.
* Named baselines of the lecture notes, all scikit-learn's own implementations:
  ``"tree (CCP, CV)"`` (a decision tree grown and pruned by cost complexity, the pruning
  strength chosen by cross-validation over ``cost_complexity_pruning_path``),
  ``"OvR LinearSVC"`` (one-vs-rest, ``OneVsRestClassifier``) and ``"ECOC LinearSVC"``
  (error-correcting output codes, ``OutputCodeClassifier``); and ``"DNC-SVM"``, the
  divide-and-conquer SVM of Cai thesis 7.4.2 (:class:`hiercvx.estimators.topdown.TopDownSVC`).
* :func:`load_hmc` reads a Clus-HMC split from ``../shared/data/hmc``; :func:`run` fits each
  named method as ``Pipeline(mean imputation, standardization, constant column, model)`` and
  prints one table row per method (:func:`evaluate` returns the numbers).

Multi-label targets for the multi-class reductions (tree, output codes) use the *copy*
transformation: a sample with labels ``{a, b}`` becomes two training rows ``(x, a)`` and
``(x, b)``; the class scores are then the predicted class probabilities (tree) or the
negative distances to the code words (output codes).  For the tree, cross-validation folds
keep the copies of a sample together, and accuracy on copies is proportional to the
one-accuracy of the samples, so the CV criterion is the thesis's one-accuracy.
"""

from __future__ import annotations

import inspect
import sys
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.metrics import euclidean_distances
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold
from sklearn.multiclass import OneVsRestClassifier, OutputCodeClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (FunctionTransformer, MultiLabelBinarizer, Normalizer, StandardScaler,
                                   normalize)
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from hiercvx import metrics
from hiercvx.datasets.arff import load_arff
from hiercvx.estimators import HierarchicalSVC
from hiercvx.estimators._base import flat_hierarchy
from hiercvx.estimators.perceptron import HierarchicalPerceptron
from hiercvx.estimators.topdown import TopDownSVC
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc
HMC_SETS = {"cellcycle_FUN": (["cellcycle_FUN.train.arff", "cellcycle_FUN.valid.arff"],
                              "cellcycle_FUN.test.arff"),
            "Enron_corr": (["Enron_corr_trainvalid.arff"], "Enron_corr_test.arff"),
            "ImCLEF07A": (["ImCLEF07A_Train.arff"], "ImCLEF07A_Test.arff")}
METRICS = ("one-acc", "avg prec", "rank loss", "max loss", "parent acc")


# ---------------------------------------------------------------------------- data
@dataclass
class Split:
    """Training and test data over one hierarchy; ``y`` are label sets of leaves of ``H``."""

    name: str
    hierarchy: object
    X: np.ndarray
    y: list
    X_test: np.ndarray
    y_test: list


def _most_specific(H, sets):
    out = []
    for s in sets:
        implied = {a for v in s for a in H.ancestors(v)}
        out.append(frozenset(v for v in s if v not in implied))
    return out


def load_hmc(name: str, data_dir: Path = DATA) -> Split:
    """A Clus-HMC split: labels reduced to their most specific members (ancestors are
    implied), labels on internal nodes given a "self" leaf (thesis 3.1, ``with_self_leaves``),
    samples without any label left out (they have nothing to rank).  ``X`` keeps its missing
    values (NaN): the imputation is part of each method's pipeline."""
    train_files, test_file = HMC_SETS[name]
    parts = [load_arff(data_dir / f) for f in train_files]
    test = load_arff(data_dir / test_file)
    H = parts[0].hierarchy
    X = np.vstack([p.X for p in parts])
    y = _most_specific(H, [s for p in parts for s in p.y])
    yt = _most_specific(H, list(test.y))
    keep, keep_t = [i for i, s in enumerate(y) if s], [i for i, s in enumerate(yt) if s]
    X, y, Xt, yt = X[keep], [y[i] for i in keep], test.X[keep_t], [yt[i] for i in keep_t]
    internal = {v for s in y + yt for v in s if not H.is_leaf(v)}
    # in node order: with_self_leaves adds the leaves in the order given, and a set's order
    # changes with PYTHONHASHSEED (so would the class order and the perceptrons' results)
    pp = H.with_self_leaves(sorted(internal, key=H.index))
    return Split(name, pp.hierarchy, X, pp.transform(y), Xt, pp.transform(yt))


def subsample(split: Split, n: int, random_state=0) -> Split:
    """The split with a seeded random subset of ``n`` training samples (test set unchanged)."""
    if n >= len(split.y):
        return split
    rows = np.sort(np.random.default_rng(random_state).choice(len(split.y), n, replace=False))
    return replace(split, X=split.X[rows], y=[split.y[i] for i in rows])


def _add_constant(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def preprocessing(unit_rows: bool = False) -> list:
    """Mean imputation (all-missing columns become 0), standardization, optionally rows scaled
    to unit length (``Normalizer``), and a constant column (the bias of thesis 3.2), as
    pipeline steps."""
    return ([("impute", SimpleImputer(strategy="mean", keep_empty_features=True)),
             ("scale", StandardScaler())]
            + ([("unit", Normalizer())] if unit_rows else [])
            + [("constant", FunctionTransformer(_add_constant))])


# ---------------------------------------------------------------------------- adapters
def _copies(y):
    """Copy transformation: row indices and one label per copy (labels sorted for determinism)."""
    rows = np.repeat(np.arange(len(y)), [len(s) for s in y])
    labels = np.array([v for s in y for v in sorted(s, key=str)], dtype=object)
    return rows, labels


class LabelSetAdapter(ClassifierMixin, BaseEstimator):
    """A scikit-learn classifier fitted on label sets; ``class_scores`` over ``classes``.

    ``encoding="indicator"``: ``fit(X, MultiLabelBinarizer(classes).fit_transform(y))``, scores
    from ``decision_function`` or the positive-class ``predict_proba``.
    ``encoding="copies"``: the copy transformation (see the module docstring); scores from
    ``predict_proba``, or for ``OutputCodeClassifier`` minus the Euclidean distance of the binary
    outputs to each code word (its own decoding rule).  A class never seen in training scores
    below every seen class.
    """

    def __init__(self, estimator, classes, encoding="indicator"):
        self.estimator = estimator
        self.classes = classes
        self.encoding = encoding

    def fit(self, X, y):
        self.classes_ = np.array(list(self.classes), dtype=object)
        est = clone(self.estimator)
        if self.encoding == "indicator":
            Y = MultiLabelBinarizer(classes=list(self.classes_)).fit_transform(y)
            est.fit(X, Y)
        elif self.encoding == "copies":
            rows, labels = _copies(y)
            kw = {"groups": rows} if "groups" in inspect.signature(est.fit).parameters else {}
            est.fit(X[rows], labels, **kw)
        else:
            raise ValueError(f"encoding must be 'indicator' or 'copies', got {self.encoding!r}")
        self.estimator_ = est
        return self

    def class_scores(self, X):
        est = self.estimator_
        if isinstance(est, Pipeline):  # read the scores of its final step
            X, est = est[:-1].transform(X), est[-1]
        if self.encoding == "indicator":
            if hasattr(est, "decision_function"):
                return np.asarray(est.decision_function(X), dtype=float)
            proba = est.predict_proba(X)  # multi-output: one (n, n_values) array per class
            return np.column_stack([p[:, list(c).index(1)] if 1 in c else np.zeros(len(X))
                                    for p, c in zip(proba, est.classes_)])
        if isinstance(est, OutputCodeClassifier):
            outputs = np.column_stack([e.decision_function(X) if hasattr(e, "decision_function")
                                       else e.predict_proba(X)[:, 1] for e in est.estimators_])
            seen_scores = -euclidean_distances(outputs, est.code_book_)
        else:
            seen_scores = est.predict_proba(X)
        S = np.full((X.shape[0], len(self.classes_)), seen_scores.min() - 1.0)
        col = {c: j for j, c in enumerate(self.classes_)}
        S[:, [col[c] for c in est.classes_]] = seen_scores
        return S


class CCPDecisionTree(ClassifierMixin, BaseEstimator):
    """scikit-learn's decision tree, pruned by cost complexity (lecture notes: grow, then prune
    by ``G_lambda(tree) = sum_leaves |n| F(n) + lambda |leaves|``), with ``lambda`` (sklearn's
    ``ccp_alpha``) chosen by ``cv``-fold cross-validation among ``n_alphas`` values of the
    tree's own pruning path, ``cost_complexity_pruning_path`` (taken so that the pruned trees'
    sizes are about geometrically spaced).  ``groups`` keeps related rows in one fold."""

    def __init__(self, n_alphas=8, cv=3, random_state=0):
        self.n_alphas = n_alphas
        self.cv = cv
        self.random_state = random_state

    def fit(self, X, y, groups=None):
        tree = DecisionTreeClassifier(random_state=self.random_state)
        # [-1]: the root; round-off can make the first alphas slightly negative, which sklearn refuses
        alphas = np.unique(np.clip(tree.cost_complexity_pruning_path(X, y).ccp_alphas[:-1], 0.0, None))
        n = len(alphas)
        keep = n - np.unique(np.geomspace(1, n, min(self.n_alphas, n)).astype(int))
        candidates = alphas[np.unique(keep)]
        cv = (GroupKFold(n_splits=self.cv) if groups is not None
              else KFold(n_splits=self.cv, shuffle=True, random_state=self.random_state))
        search = GridSearchCV(tree, {"ccp_alpha": candidates}, cv=cv)
        search.fit(X, y, groups=groups)
        self.search_ = search
        self.tree_ = search.best_estimator_
        self.ccp_alpha_ = float(search.best_params_["ccp_alpha"])
        self.classes_ = self.tree_.classes_
        return self

    def predict(self, X):
        return self.tree_.predict(X)

    def predict_proba(self, X):
        return self.tree_.predict_proba(X)


class UnitRows(ClassifierMixin, BaseEstimator):
    """``model`` fitted and scored on rows scaled to unit length (``sklearn.preprocessing.
    normalize``), so that the SVMs' C has its usual scale: on standardized features with
    ``n < d`` (Enron) C = 1 is practically hard-margin and dual coordinate methods crawl
    (``formulations/hsvm.md``, "The fast solver in practice")."""

    def __init__(self, model):
        self.model = model

    def fit(self, X, y):
        self.model_ = clone(self.model).fit(normalize(X), y)
        self.classes_ = self.model_.classes_
        return self

    def class_scores(self, X):
        return self.model_.class_scores(normalize(X))

    def predict(self, X):
        return self.model_.predict(normalize(X))

    @property
    def multilabel_(self):
        return getattr(self.model_, "multilabel_", False)

    @property
    def tol(self):
        return getattr(self.model, "tol", None)


# ---------------------------------------------------------------------------- registry
@dataclass
class Method:
    factory: Callable  # (H, quick) -> estimator with fit(X, label sets) and class_scores(X)
    description: str


REGISTRY: dict[str, Method] = {}


def register(name: str, description: str):
    def deco(factory):
        REGISTRY[name] = Method(factory, description)
        return factory
    return deco


def _hier(flat: bool, H):
    return flat_hierarchy(list(H.leaves)) if flat else H


for _prefix, _flat in (("F", True), ("H", False)):
    for _variant in ("online", "averaged", "minover"):
        register(f"{_prefix}-PERC {_variant}",
                 f"{'flat' if _flat else 'hierarchical'} perceptron, {_variant} (thesis Alg. 3-7); "
                 "20 epochs (quick: 5), Minover one pass of n steps")(
            lambda H, quick, f=_flat, v=_variant: HierarchicalPerceptron(
                hierarchy=_hier(f, H), variant=v, fit_intercept=False,  # the pipeline's constant column
                max_epochs=1 if v == "minover" else (5 if quick else 20)))
    for _variant in ("online", "averaged"):
        register(f"{_prefix}-Hieron {_variant}", f"Hieron (thesis 7.5.2), {_variant}")(
            lambda H, quick, f=_flat, v=_variant: HierarchicalPerceptron(
                hierarchy=_hier(f, H), variant=v, update="hieron", fit_intercept=False,
                max_epochs=5 if quick else 20))
    register(f"{_prefix}-SVM", f"{'flat' if _flat else 'hierarchical'} SVM (thesis (4.10)), C=1 on "
             "unit-length rows, working set, gap tol 1e-3")(
        lambda H, quick, f=_flat: UnitRows(HierarchicalSVC(hierarchy=_hier(f, H), C=1.0, tol=1e-3, fit_intercept=False,
                                                           max_iter=200 if quick else 5000)))


@register("DNC-SVM", "divide-and-conquer SVM (thesis 7.4.2): a Crammer-Singer SVM per node, top-down, "
          "C=1 on unit-length rows")
def _dnc_svm(H, quick):
    return UnitRows(TopDownSVC(hierarchy=H, C=1.0, tol=1e-3, fit_intercept=False,  # constant column
                                max_iter=200 if quick else 5000))


@register("tree (CCP, CV)", "decision tree, cost-complexity pruning, ccp_alpha by 3-fold CV "
          "(sklearn), copy transformation")
def _tree(H, quick):
    return LabelSetAdapter(CCPDecisionTree(n_alphas=4 if quick else 8), H.leaves, "copies")


# The LinearSVCs see unit-length rows (Normalizer): on the standardized 1001 Enron features
# liblinear does not converge in 1000 iterations at C = 1 (45 s per binary problem).
@register("OvR LinearSVC", "one-vs-rest LinearSVC, C=1 on unit-length rows (sklearn "
          "OneVsRestClassifier), binary relevance")
def _ovr(H, quick):
    return LabelSetAdapter(Pipeline([("unit", Normalizer()),
                                     ("ovr", OneVsRestClassifier(LinearSVC(C=1.0)))]),
                           H.leaves, "indicator")


@register("ECOC LinearSVC", "error-correcting output codes, LinearSVC, C=1 on unit-length rows "
          "(sklearn OutputCodeClassifier, code size 1.5), copy transformation")
def _ecoc(H, quick):
    ecoc = OutputCodeClassifier(LinearSVC(C=1.0), code_size=1.5, random_state=0)
    return LabelSetAdapter(Pipeline([("unit", Normalizer()), ("ecoc", ecoc)]), H.leaves, "copies")


# ---------------------------------------------------------------------------- evaluation
def _class_scores(pipe, X):
    model = pipe[-1]
    Xp = pipe[:-1].transform(X)
    return model.class_scores(Xp), list(model.classes_)


def evaluate(name: str, split: Split, quick: bool = False, model=None,
             unit_rows: bool = False) -> dict:
    """Fit ``Pipeline(preprocessing, REGISTRY[name])`` (or ``model``) on the training data; the
    thesis metrics on the test data: one-accuracy (7.3), average precision (7.4), ranking loss
    (7.5), maximal loss (4.19, loss half the symmetric difference), parent one-accuracy (7.6);
    the hierarchical F1 of the predicted label sets when the model predicts label sets (NaN
    otherwise); fit time."""
    H = split.hierarchy
    model = REGISTRY[name].factory(H, quick) if model is None else model
    pipe = Pipeline(preprocessing(unit_rows) + [("model", model)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        pipe.fit(split.X, split.y)
        fit_time = time.perf_counter() - t0
    S, classes = _class_scores(pipe, split.X_test)
    yt = split.y_test
    values = (metrics.one_accuracy(yt, S, classes=classes),
              metrics.average_precision(yt, S, classes=classes),
              metrics.ranking_loss(yt, S, classes=classes),
              metrics.maximal_loss(yt, S, classes=classes, hierarchy=H),
              metrics.parent_one_accuracy(yt, S, classes=classes, hierarchy=H))
    hf1 = np.nan
    if getattr(pipe[-1], "multilabel_", False):
        hf1 = metrics.hierarchical_f1(yt, pipe.predict(split.X_test), hierarchy=H)
    return {"method": name, "time": fit_time, "n_train": len(split.y), "gap": _gap(pipe[-1]),
            "tol": getattr(pipe[-1], "tol", None), "hF1": hf1, "model": pipe[-1],
            **dict(zip(METRICS, values))}


def _gap(model):
    """The certified relative duality gap reached (the worst node's for DNC-SVM), or None."""
    model = getattr(model, "model_", model)  # UnitRows
    if hasattr(model, "gap_"):
        return float(model.gap_)
    if isinstance(model, TopDownSVC) and model.estimators_:
        return max(float(e.gap_) for e in model.estimators_.values())
    return None


def header(width: int = 20) -> str:
    return (f"{'model':>{width}} {'time s':>8} {'one-acc':>8} {'avg prec':>8} {'rank loss':>9} "
            f"{'max loss':>8} {'parent acc':>10} {'hF1':>6}")


def format_row(row: dict, label: str | None = None, width: int = 20) -> str:
    label = row["method"] if label is None else label
    return (f"{label:>{width}} {row['time']:>8.2f} {row['one-acc']:>8.3f} {row['avg prec']:>8.3f} "
            f"{row['rank loss']:>9.3f} {row['max loss']:>8.3f} {row['parent acc']:>10.3f} "
            f"{row['hF1']:>6.3f}")


def run(names, split: Split, quick: bool = False, max_train: dict | None = None,
        random_state=0, out=sys.stdout) -> list[dict]:
    """Evaluate each named method on ``split`` and print the table as rows come in.

    ``max_train``: ``{name: n}`` trains that method on a seeded random subsample of ``n``
    training samples (marked ``*`` in the table, with a footnote); the test set is always
    the full one."""
    max_train = max_train or {}
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise KeyError(f"unknown method(s) {unknown}; registered: {sorted(REGISTRY)}")
    print(header(), file=out)
    rows, notes = [], []
    for name in names:
        data = split
        if name in max_train and max_train[name] < len(split.y):
            data = subsample(split, max_train[name], random_state)
        row = evaluate(name, data, quick)
        label = name + ("*" if data is not split else "")
        if data is not split:
            notes.append(f"* {name}: trained on a random subsample of {len(data.y)} of "
                         f"{len(split.y)} training samples")
        print(format_row(row, label), file=out)
        out.flush()
        rows.append(row)
        if row["gap"] is not None and row["gap"] > row["tol"]:
            notes.append(f"  {name}: stopped at max_iter with relative duality gap {row['gap']:.3g} "
                         f"(tol {row['tol']:g})")
    for note in notes:
        print(note, file=out)
    return rows
