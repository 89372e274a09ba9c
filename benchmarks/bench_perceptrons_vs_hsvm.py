"""Issue 7, benchmark 1: hierarchical perceptrons and Hieron vs the hierarchical SVM.

Data: ``cellcycle_FUN`` (train+valid / test) and ``Enron_corr`` (trainvalid / test) from
``../shared/data/hmc`` (skipped with a message when absent).  Labels are reduced to their
most specific members (a label's ancestors are implied), labels on internal nodes get a
"self" leaf (thesis 3.1), features are mean-imputed, standardized and get a constant column
(the bias of thesis 3.2).  Thesis metrics on the test set (7.3-7.6 and (4.18)): one-accuracy,
average precision, ranking loss, maximal loss (half symmetric difference), parent
one-accuracy; and the training time.  Flat models use a one-level hierarchy over the same
classes.  kappa = 20 epochs as in thesis Tables 7.20-7.22, except Minover (one pass of n
steps: each Minover step costs one sweep over all pairs).

    .venv/bin/python benchmarks/bench_perceptrons_vs_hsvm.py [--quick]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from hiercvx import metrics
from hiercvx.datasets.arff import load_arff
from hiercvx.estimators import HierarchicalSVC
from hiercvx.estimators._base import flat_hierarchy
from hiercvx.estimators.perceptron import HierarchicalPerceptron

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hmc"
SETS = {"cellcycle_FUN": (["cellcycle_FUN.train.arff", "cellcycle_FUN.valid.arff"], "cellcycle_FUN.test.arff"),
        "Enron_corr": (["Enron_corr_trainvalid.arff"], "Enron_corr_test.arff")}


def _most_specific(H, sets):
    out = []
    for s in sets:
        implied = {a for v in s for a in H.ancestors(v)}
        out.append(frozenset(v for v in s if v not in implied))
    return out


def _load(name):
    train_files, test_file = SETS[name]
    parts = [load_arff(DATA / f) for f in train_files]
    test = load_arff(DATA / test_file)
    H = parts[0].hierarchy
    X = np.vstack([p.X for p in parts])
    y = _most_specific(H, [s for p in parts for s in p.y])
    yt = _most_specific(H, list(test.y))
    keep, keep_t = [i for i, s in enumerate(y) if s], [i for i, s in enumerate(yt) if s]
    X, y, Xt, yt = X[keep], [y[i] for i in keep], test.X[keep_t], [yt[i] for i in keep_t]
    internal = {v for s in y + yt for v in s if not H.is_leaf(v)}
    pp = H.with_self_leaves(internal)
    y, yt = pp.transform(y), pp.transform(yt)
    mean = np.nanmean(X, axis=0)
    mean = np.where(np.isfinite(mean), mean, 0.0)
    X, Xt = np.where(np.isnan(X), mean, X), np.where(np.isnan(Xt), mean, Xt)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    X, Xt = (X - mean) / sd, (Xt - mean) / sd
    X, Xt = np.hstack([X, np.ones((len(X), 1))]), np.hstack([Xt, np.ones((len(Xt), 1))])
    return pp.hierarchy, X, y, Xt, yt


def _models(H, quick):
    flat = flat_hierarchy(list(H.leaves))
    epochs = 5 if quick else 20
    out = []
    for hname, hier in (("F", flat), ("H", H)):
        for variant in ("online", "averaged", "minover"):
            kappa = 1 if variant == "minover" else epochs
            out.append((f"{hname}-PERC {variant}", HierarchicalPerceptron(hierarchy=hier, variant=variant,
                                                                           max_epochs=kappa)))
        for variant in ("online", "averaged"):
            out.append((f"{hname}-Hieron {variant}", HierarchicalPerceptron(
                hierarchy=hier, variant=variant, update="hieron", max_epochs=epochs)))
        out.append((f"{hname}-SVM", HierarchicalSVC(hierarchy=hier, C=1.0, tol=1e-3,
                                                     max_iter=50 if quick else 300)))
    return out


def main(quick: bool = False):
    if not DATA.exists():
        print(f"shared data not found at {DATA}; nothing to benchmark")
        return
    for name in SETS:
        H, X, y, Xt, yt = _load(name)
        if quick:
            X, y = X[:400], y[:400]
        print(f"\n{name}: train {X.shape}, test {Xt.shape}, {len(H.leaves)} classes, {H!r}")
        print(f"{'model':>20} {'time s':>8} {'one-acc':>8} {'avg prec':>8} {'rank loss':>9} "
              f"{'max loss':>8} {'parent acc':>10}")
        for label, est in _models(H, quick):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                est.fit(X, y)
                fit_time = time.perf_counter() - t0
            S = est.class_scores(Xt)
            classes = list(est.classes_)
            row = [metrics.one_accuracy(yt, S, classes=classes),
                   metrics.average_precision(yt, S, classes=classes),
                   metrics.ranking_loss(yt, S, classes=classes),
                   metrics.maximal_loss(yt, S, classes=classes, hierarchy=H),
                   metrics.parent_one_accuracy(yt, S, classes=classes, hierarchy=H)]
            print(f"{label:>20} {fit_time:>8.2f} {row[0]:>8.3f} {row[1]:>8.3f} {row[2]:>9.3f} "
                  f"{row[3]:>8.3f} {row[4]:>10.3f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
