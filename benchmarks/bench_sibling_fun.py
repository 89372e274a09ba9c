"""Sibling-margin SVM (Wang, Shen & Pan (2), dual (8)-(11)) and HPSI ((3)) against LIBLINEAR's
Crammer-Singer, side by side in one run (the cellcycle_FUN row and the star row).

Rows:

* ``cellcycle_FUN single-path``: the training part of the leaderboard's single-path subset
  (``hiercvx.reproduce.leaderboard.dataset``: train + valid files, label sets on one path, the
  deepest label as the class; 480 samples x 77 features, 107 classes on a 201-node tree),
  features standardized, C = 1;
* ``star``: a star of ``--leaves`` leaves (default 5000), 60 samples x 5 features, labels on 3
  leaves, C = 1.

Each row prints the fit time of ``LinearSVC(multi_class="crammer_singer")`` (LIBLINEAR, its
defaults), of ``SiblingMarginSVC`` and ``HierarchicalPsiClassifier`` with their defaults
(``tol=1e-6``, ``solver="fast"``), the certified relative gap (HPSI: the largest gap over its
convex steps), the solver method chosen, whether it converged (a ``ConvergenceWarning`` prints
``warn``) and the ratio to LIBLINEAR's time.  Targets: sibling SVM <= 30x, HPSI
<= 100x LIBLINEAR on cellcycle_FUN.  Measured 2026-11-24 (three runs, load ~3 on 2 cores):
sibling 7.9x / 10.1x / 10.1x, HPSI 18.8x / 18.2x / 27.6x (before the dual interior point
method's group route, its probe and the DC steps' warm sweeps: 16x and 76-98x).

    .venv/bin/python benchmarks/bench_sibling_fun.py             # both rows (HPSI on FunCat is long)
    .venv/bin/python benchmarks/bench_sibling_fun.py --quick     # no HPSI on cellcycle_FUN
    .venv/bin/python benchmarks/bench_sibling_fun.py --rows star --leaves 5000
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from hiercvx.estimators import HierarchicalPsiClassifier, SiblingMarginSVC
from hiercvx.hierarchy import Hierarchy
from hiercvx.reproduce.leaderboard import data_missing, dataset


def funcat():
    Xtr, ytr, _, _, H = dataset("cellcycle_FUN single-path")
    return StandardScaler().fit_transform(Xtr), ytr, H


def star(leaves):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(leaves)}})
    y = np.array([f"c{i % 3}" for i in range(60)], dtype=object)
    return X, y, H


def timed(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        est = fit()
        elapsed = time.perf_counter() - t0
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return est, elapsed, warned


def row(name, X, y, H, hpsi=True):
    _, t_cs, _ = timed(lambda: LinearSVC(C=1.0, multi_class="crammer_singer").fit(X, y))
    print(f"\n{name}: n={X.shape[0]} d={X.shape[1]} nodes={len(H)}")
    print(f"  {'LIBLINEAR Crammer-Singer':28s} {t_cs:9.2f} s")
    fits = [("SiblingMarginSVC", lambda: SiblingMarginSVC(hierarchy=H).fit(X, y))]
    if hpsi:
        fits.append(("HierarchicalPsiClassifier",
                     lambda: HierarchicalPsiClassifier(hierarchy=H).fit(X, y)))
    for label, fit in fits:
        est, t, warned = timed(fit)
        method = est.result_.extras.get("method", "?")
        print(f"  {label:28s} {t:9.2f} s  gap {est.gap_:.2e}  {method:8s} "
              f"{'warn' if warned else 'converged':9s} ratio {t / t_cs:8.1f}x"
              + (f"  DC steps {est.n_iter_}" if label.startswith("Hier") else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="funcat,star")
    parser.add_argument("--leaves", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="no HPSI on cellcycle_FUN")
    args = parser.parse_args()
    rows = args.rows.split(",")
    with threadpool_limits(limits=1):
        if "funcat" in rows:
            missing = data_missing()
            if missing:
                print(f"cellcycle_FUN row skipped: {missing}")
            else:
                row("cellcycle_FUN single-path", *funcat(), hpsi=not args.quick)
        if "star" in rows:
            row(f"star, {args.leaves} leaves, 3 labelled", *star(args.leaves))


if __name__ == "__main__":
    main()
