"""Issues 12 and 15: the GO DAG, a deep chain and a wide star for the hierarchical SVMs.

Rows (each fit runs in a child process with a time cap, ``--cap`` seconds, so one slow row
does not hide the others; a capped row prints ``> cap``):

* ``go``: cellcycle_GO training set (``../shared/data/hmc/cellcycle_GO.train.arff``: 1625
  samples, 77 features, mean-imputed and standardized; GO DAG of 4126 nodes).  GO labels often
  stop at internal terms, so every internal term used as a label gets a "self" leaf
  (``Hierarchy.with_self_leaves``): 4227+ nodes, ~2500 classes, ~20 million (relevant,
  irrelevant) pairs for the hierarchical SVM (12000 per example: the margin engine runs
  :mod:`hiercvx.solvers.smoothing` on it).  Every estimator of ``bench_wide`` is fitted
  with its defaults (``--max-iter`` caps the passes, or the smoothing solver's L-BFGS
  iterations) and predicts the training set; printed:
  fit and predict times, passes, certified gap, training hierarchical F1 -- or the
  ``ValueError`` with which a tree-only or single-label method refuses the multi-label DAG.
* ``chain`` / ``star``: ``benchmarks/bench_wide.py``'s rows (1000-node chain, 5000-leaf star
  with ``--classes`` labelled leaves; ``1``: the one-class case) for
  ``HierarchicalSVC``, ``NormalizedHierarchicalSVC`` and ``SharedNormSVC``.

    .venv/bin/python benchmarks/bench_go.py [--rows go,chain,star] [--n 1625] [--max-iter N]
        [--classes 1] [--cap 600]

``--quick``: 200 GO samples, 20 passes, cap 120 s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wide import ESTIMATORS, run_capped, run_row  # the chain / star rows, same child process
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc
GO_ESTIMATORS = ESTIMATORS  # every estimator: fitted, or refused with its ValueError
WIDE_ESTIMATORS = ("HierarchicalSVC", "NormalizedHierarchicalSVC", "SharedNormSVC")

GO_CHILD = r"""
import json, sys, time, warnings
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
import hiercvx.estimators as E
from hiercvx.datasets import load_arff
from hiercvx.metrics import hierarchical_precision_recall_f1

name, path, n, max_iter = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
train = load_arff(path)
H = train.hierarchy
X = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()).fit_transform(train.X)[:n]
labels = list(train.y)[:n]
used = {v for s in labels for v in s}
pp = H.with_self_leaves([v for v in used if not H.is_leaf(v)])
y = pp.transform(labels)
F = pp.hierarchy
est = getattr(E, name)(hierarchy=F)
if max_iter > 0 and "max_iter" in est.get_params():  # the perceptron counts epochs instead
    est.set_params(max_iter=max_iter)
t0 = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    try:
        est.fit(X, y)
    except ValueError as exc:  # a clean refusal (tree-only or single-label method) is the row
        print("RESULT " + json.dumps({"refused": f"{type(exc).__name__}: {exc}",
                                      "fit": time.perf_counter() - t0}))
        sys.exit(0)
t_fit = time.perf_counter() - t0
t0 = time.perf_counter()
pred = est.predict(X)
t_pred = time.perf_counter() - t0
pred = pp.inverse_transform([p if isinstance(p, frozenset) else frozenset([p]) for p in pred])
hf = hierarchical_precision_recall_f1(labels, pred, H)[2]
print("RESULT " + json.dumps({
    "nodes": len(F), "classes": len(F.leaves), "fit": t_fit, "predict": t_pred,
    "n_iter": getattr(est, "n_iter_", None), "gap": float(getattr(est, "gap_", float("nan"))),
    "warn": any(issubclass(w.category, ConvergenceWarning) for w in caught), "hF": hf,
    "warning": next((str(w.message) for w in caught
                     if issubclass(w.category, ConvergenceWarning)), "")}))
"""


def go_row(name: str, n: int, max_iter: int, cap: float) -> str:
    path = DATA / "cellcycle_GO.train.arff"
    if not path.exists():
        return f"data absent ({path})"
    r = run_capped(GO_CHILD, (name, path, n, max_iter), cap)
    if isinstance(r, str):
        return r
    if "refused" in r:
        return f"refused in {r['fit']:.2f}s: {r['refused'][:110]}"
    return (f"fit {r['fit']:8.1f}s  predict {r['predict']:7.2f}s  passes {r['n_iter']!s:>6}  "
            f"gap {r['gap']:.1e}  train hF {r['hF']:.3f}  ({r['nodes']} nodes, {r['classes']} classes)"
            + ("  warn (not certified)" if r["warn"] else "")
            + (f"\n      warning: {r['warning']}" if r.get("warning") else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rows", default="go,chain,star")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--classes", type=int, default=1)
    ap.add_argument("--only", default=None)
    ap.add_argument("--cap", type=float, default=None)
    args = ap.parse_args(argv)
    n = args.n or (200 if args.quick else 1625)
    max_iter = args.max_iter if args.max_iter is not None else (20 if args.quick else 0)
    cap = args.cap or (120.0 if args.quick else 600.0)
    only = None if args.only is None else set(args.only.split(","))
    for row in args.rows.split(","):
        if row == "go":
            print(f"\ncellcycle_GO train, {n} samples, self leaves for internal labels; "
                  f"max_iter {'default' if max_iter <= 0 else max_iter}; cap {cap:.0f} s")
            for name in GO_ESTIMATORS:
                if only is None or name in only:
                    print(f"  {name:<28}{go_row(name, n, max_iter, cap)}", flush=True)
            continue
        size = 5000 if row == "star" else 1000
        what = (f"star, {size} leaves, labels on {args.classes} of them" if row == "star"
                else f"chain, {size} nodes, two leaves at depth {size - 2}")
        print(f"\n{what}; 60 samples x 5 features; cap {cap:.0f} s")
        for name in WIDE_ESTIMATORS:
            if only is None or name in only:
                print(f"  {name:<28}{run_row(name, row, size, args.classes, cap)}", flush=True)


if __name__ == "__main__":
    main()
