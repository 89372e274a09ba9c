"""Learned vs true vs random hierarchies (Cai thesis Tables 7.17-7.19, 7.23).

* ``ImCLEF07A`` (``../shared/data/hmc``; skipped when absent): single-label X-ray images, a
  balanced tree with 8 / 25 / 63 nodes per level.  The learner does not see the true tree:
  the learned hierarchy comes from Algorithm 8 on the training data alone.  Models: the flat
  model, the true tree, the learned two-level tree, and random trees with the true level
  sizes (thesis 7.4.3); parent one-accuracy is measured against the *true* tree.
* scikit-learn's bundled ``digits`` (no true hierarchy): flat vs learned vs random two-level
  trees with as many clusters as the learned one.

Each hierarchy is used by the averaged hierarchical perceptron (kappa = 20, as in Table 7.23)
and by the hierarchical SVM (C = 1, on a training subsample for ImCLEF07A).

    .venv/bin/python benchmarks/bench_taxonomy.py [--quick]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from hiercvx import metrics, taxonomy
from hiercvx.datasets.arff import load_arff
from hiercvx.estimators import HierarchicalSVC
from hiercvx.targets import flat_hierarchy
from hiercvx.estimators.perceptron import HierarchicalPerceptron
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc


def _leaf_labels(ds):
    H = ds.hierarchy
    return np.array([next(v for v in s if H.is_leaf(v)) for s in ds.y], dtype=object)


def _standardize(X, Xt):
    mean, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    X, Xt = (X - mean) / sd, (Xt - mean) / sd
    return np.hstack([X, np.ones((len(X), 1))]), np.hstack([Xt, np.ones((len(Xt), 1))])


def _evaluate(name, hierarchies, X, y, Xt, yt, true_H, n_svm, quick):
    print(f"\n{name}: train {X.shape}, test {Xt.shape}")
    print(f"{'hierarchy':>14} {'model':>6} {'fit s':>7} {'one-acc':>8} {'avg prec':>8} "
          f"{'parent acc':>10}")
    rng = np.random.default_rng(0)
    sub = np.sort(rng.choice(len(y), min(n_svm, len(y)), replace=False))
    for hname, H in hierarchies:
        for mname, est, idx in (("PERC", HierarchicalPerceptron(hierarchy=H, variant="averaged",
                                                                 max_epochs=5 if quick else 20), None),
                                ("SVM", HierarchicalSVC(hierarchy=H, C=1.0, tol=1e-3,
                                                        max_iter=100 if quick else 500), sub)):
            Xf, yf = (X, y) if idx is None else (X[idx], y[idx])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = time.perf_counter()
                est.fit(Xf, yf)
                fit = time.perf_counter() - t0
            S = est.class_scores(Xt)
            classes = list(est.classes_)
            pacc = (metrics.parent_one_accuracy(list(yt), S, classes=classes, hierarchy=true_H)
                    if true_H is not None else float("nan"))
            print(f"{hname:>14} {mname:>6} {fit:>7.2f} {metrics.one_accuracy(list(yt), S, classes=classes):>8.3f} "
                  f"{metrics.average_precision(list(yt), S, classes=classes):>8.3f} {pacc:>10.3f}")
            sys.stdout.flush()


def imageclef(quick):
    if not (DATA / "ImCLEF07A_Train.arff").exists():
        print(f"ImCLEF07A not found in {DATA}; skipped")
        return
    tr, te = load_arff(DATA / "ImCLEF07A_Train.arff"), load_arff(DATA / "ImCLEF07A_Test.arff")
    true_H = tr.hierarchy
    y, yt = _leaf_labels(tr), _leaf_labels(te)
    X, Xt = _standardize(np.asarray(tr.X, float), np.asarray(te.X, float))
    if quick:  # a random subsample: the file is ordered by class
        keep = np.sort(np.random.default_rng(0).choice(len(y), 3000, replace=False))
        X, y = X[keep], y[keep]
    classes = list(true_H.leaves)
    t0 = time.perf_counter()
    res = taxonomy.learn_taxonomy(X, y)
    print(f"ImCLEF07A: learned {res.n_clusters} clusters over {len(res.classes)} classes in "
          f"{time.perf_counter() - t0:.2f}s (true tree: levels {taxonomy.hierarchy_level_sizes(true_H)}); "
          f"classes without training examples: {len(set(classes) - set(res.classes))}")
    learned = res.hierarchy
    missing = [c for c in classes if c not in set(res.classes)]
    if missing:  # classes absent from the training part hang under the root
        learned = type(learned)(list(learned.edges) + [(learned.root, c) for c in missing], root=learned.root)
    sizes = taxonomy.hierarchy_level_sizes(true_H)
    hierarchies = [("flat", flat_hierarchy(classes)), ("true", true_H), ("learned", learned)]
    hierarchies += [(f"random {s}", taxonomy.random_hierarchy(sizes, random_state=s, classes=classes))
                    for s in range(2 if quick else 5)]
    _evaluate("ImCLEF07A", hierarchies, X, y, Xt, yt, true_H, 1000 if quick else 3000, quick)


def digits(quick):
    d = load_digits()
    X, Xt, y, yt = train_test_split(d.data, d.target, test_size=0.5, random_state=0, stratify=d.target)
    X, Xt = _standardize(X, Xt)
    res = taxonomy.learn_taxonomy(X, y)
    print(f"\ndigits: learned clusters {[[int(v) for v in np.array(res.classes)[res.clusters == c]] for c in range(res.n_clusters)]}")
    classes = list(range(10))
    hierarchies = [("flat", flat_hierarchy(classes)), ("learned", res.hierarchy)]
    hierarchies += [(f"random {s}", taxonomy.random_hierarchy((res.n_clusters, 10), random_state=s,
                                                               classes=classes))
                    for s in range(2 if quick else 5)]
    _evaluate("digits", hierarchies, X, y, Xt, yt, None, len(y), quick)


def main(quick: bool = False):
    imageclef(quick)
    digits(quick)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
