"""HIERMULT and FLATMULT by the margin engine vs coordinate ascent.

HIERMULT (Zhou, Xiao & Wu, section 5) is one Crammer-Singer problem per internal node; no
slack couples two of them, so ``hiercvx.solvers.orthogonal_dual.solve`` (``blocks="auto"``,
the default) solves each by the pair-rows interior point and certifies the whole once;
FLATMULT is Crammer-Singer's problem and goes to :mod:`hiercvx.solvers.crammer_singer`.  This
script runs both beside the same solver's coordinate ascent (``blocks="never"``) on the rows
of ``hiercvx reproduce zhou-comparison`` where they were slow, at that table's C and tol:

* ``balanced``: the NHSVM balanced tree (``make_nhsvm_balanced``, depth 6), 5000 training
  samples x 200 features, standardized, tol 1e-5;
* ``ImageCLEF07A``: 5000 training samples of ImageCLEF07A (when ``../shared/data/hmc`` is
  present), standardized, intercept, tol 1e-3;
* the leaderboard's single-label training sets at the estimator's default tol 1e-4, with
  intercept: ``ImageCLEF07A (all)`` (10000 x 80) and ``cellcycle_FUN single-path`` (480 x 77,
  missing values set to 0 after standardizing).

C is LIBLINEAR's 1 (the model's ``C N``), coordinate ascent capped at ``--max-iter`` passes.
Each row prints the time, the certified gap, whether it converged and the objective; the
ratio is coordinate ascent's time over the blocks' (both certify the same problem).

    .venv/bin/python benchmarks/bench_hiermult_blocks.py [--methods hiermult,flatmult]
        [--max-iter 20000] [--quick]

``--quick``: 1000 samples x 50 features on the balanced tree, ImageCLEF07A skipped.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from hiercvx.datasets import make_nhsvm_balanced
from hiercvx.models import orthogonal as otm
from hiercvx.reproduce import leaderboard, zhou
from hiercvx.solvers import orthogonal_dual
from hiercvx.solvers.primitives import blas_threads


def rows(quick: bool):
    n, d = (1000, 50) if quick else (5000, 200)
    ds = make_nhsvm_balanced(n_samples=n, n_features=d, depth=6, random_state=1)
    yield "balanced", StandardScaler().fit_transform(ds.X), ds.y, ds.hierarchy, False, 1e-5
    if quick:
        return
    data = zhou.imclef_sample(zhou.FULL_PROTOCOL[0], np.random.default_rng(1))
    if data is None:
        print("ImageCLEF07A: data directory absent, row skipped")
        return
    Xtr, ytr, _, _, H = data
    yield "ImageCLEF07A", StandardScaler().fit_transform(Xtr), ytr, H, True, 1e-3
    for name, short in (("ImageCLEF07A", "ImageCLEF (all)"), ("cellcycle_FUN single-path", "FUN 1-path")):
        Xtr, ytr, _, _, H = leaderboard.dataset(name)
        yield short, np.nan_to_num(StandardScaler().fit_transform(Xtr)), ytr, H, True, 1e-4


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=20_000)
    parser.add_argument("--methods", default="hiermult,flatmult")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(f"{'row':<22}{'route':<12}{'time s':>9}{'gap':>10}  converged  objective")
    for (name, X, y, H, intercept, tol), method in ((r, m) for r in rows(args.quick)
                                                   for m in args.methods.split(",")):
        if method == "flatmult" and not all(H.is_leaf(v) for v in set(y)):
            continue
        name = f"{name} {method[:4]}"
        model = otm.prepare(X, y, H, method, fit_intercept=intercept)
        times = {}
        for blocks in ("auto", "never"):
            with warnings.catch_warnings(), blas_threads(1):
                warnings.simplefilter("ignore", ConvergenceWarning)
                t = time.perf_counter()
                res = orthogonal_dual.solve(model, float(X.shape[0]), tol=tol, blocks=blocks,
                                            max_iter=args.max_iter)
                times[blocks] = time.perf_counter() - t
            print(f"{name:<22}{res.extras['route']:<12}{times[blocks]:>9.1f}{res.gap:>10.1e}  "
                  f"{res.converged!s:<9}  {res.objective:.6f}", flush=True)
        print(f"{name:<22}coordinate / blocks: {times['never'] / times['auto']:.1f}x")


if __name__ == "__main__":
    main()
