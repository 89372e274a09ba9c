"""Label sets with thousands of pairs per example -- smoothing vs the working set.

Rows (thesis defaults: loss Delta_h, attributes 1/sqrt(depth), slack rescaling, intercept,
C = 1, features mean-imputed and standardized; every internal term used as a label gets a
"self" leaf):

- ``go``: the first ``--n`` samples of cellcycle_GO's training set (GO DAG, ~2200 classes and
  ~10000 (relevant, irrelevant) pairs per example at n = 200);
- ``fun``: the first ``--n`` samples of cellcycle_FUN's multi-label training set (FunCat tree,
  ~450 classes, ~1400 pairs per example).

Per row, in one run: :func:`hiercvx.solvers.smoothing.solve` with ``--iters`` L-BFGS
iterations (its dual phase included), then the working set (thesis Algorithm 2, the engine's
solver below 2000 pairs per example) for as many passes as fit in the same time (rerun with
the passes rescaled until its time is within 80% of the smoothing solver's).  Printed: time, certified relative gap, primal objective
(recomputed) and dual bound of each, and the ratio of the gaps.  No CVXPY reference: at 2
million pairs the declared primal does not fit in memory.

    .venv/bin/python benchmarks/bench_smoothing.py [--rows go,fun] [--n 200] [--iters 1500]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from hiercvx import methods
from hiercvx.datasets import load_arff
from hiercvx.solvers import smoothing, working_set
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc
FILES = {"go": "cellcycle_GO.train.arff", "fun": "cellcycle_FUN.train.arff"}


def model_of(row: str, n: int):
    train = load_arff(DATA / FILES[row])
    X = make_pipeline(SimpleImputer(strategy="mean", keep_empty_features=True),
                      StandardScaler()).fit_transform(train.X)
    labels = [s for s in train.y][:]
    keep = [i for i, s in enumerate(labels) if s][:n]
    labels = [labels[i] for i in keep]
    H = train.hierarchy
    used = {v for s in labels for v in s}
    paths = H.with_self_leaves(sorted((v for v in used if not H.is_leaf(v)), key=H.index))
    return methods.get("hsvm").prepare(X[keep], paths.transform(labels), paths.hierarchy,
                                       fit_intercept=True)


def row(name: str, n: int, iters: int) -> None:
    if not (DATA / FILES[name]).exists():
        print(f"{name}: data absent ({DATA / FILES[name]})")
        return
    model = model_of(name, n)
    data = model.data
    print(f"\n{name}: n = {data.n_samples}, {data.n_classes} classes, {data.n_pairs} pairs "
          f"({data.n_pairs / data.n_samples:.0f} per example), largest loss "
          f"{data.pair_loss.max():g}", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        soft = smoothing.solve(model, 1.0, max_iter=iters)
        t_soft = time.perf_counter() - t
        passes, t_ws = 5, 0.0
        for _ in range(4):  # later passes are cheaper (shrinking): rescale until the times match
            passes = max(5, int(passes * t_soft / t_ws)) if t_ws else passes
            t = time.perf_counter()
            ws = working_set.solve(model, 1.0, max_iter=passes)
            t_ws = time.perf_counter() - t
            if t_ws >= 0.8 * t_soft or ws.converged:
                break
    for label, res, secs, what in (
            ("smoothing", soft, t_soft, f"{soft.n_iter} L-BFGS it + {soft.dual_passes} passes"),
            ("working set", ws, t_ws, f"{ws.n_iter} passes")):
        print(f"  {label:<12} {secs:7.1f} s  gap {res.gap:.2e}  primal {res.objective:.6g}  "
              f"dual {res.lower_bound:.6g}  ({what})", flush=True)
    print(f"  working-set gap / smoothing gap: {ws.gap / max(soft.gap, 1e-300):.1f}x at "
          f"{t_ws / t_soft:.2f}x the time; working-set primal / smoothing primal: "
          f"{ws.objective / soft.objective:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="go,fun")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--iters", type=int, default=1500)
    args = ap.parse_args(argv)
    for name in args.rows.split(","):
        row(name, args.n, args.iters)


if __name__ == "__main__":
    main()
