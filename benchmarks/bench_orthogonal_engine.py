"""The orthogonal-transfer family's fast solvers, side by side.

Rows (one run, ratios against LIBLINEAR's Crammer-Singer measured in the same run):

* ``cellcycle_FUN single-path`` (the train + valid samples whose FunCat labels lie on one
  path, 480 x 77, 107 classes on the 201-node pruned tree with "self" leaves:
  ``hiercvx.reproduce.leaderboard.dataset``), features standardized, C = 1 (LIBLINEAR's
  meaning), estimator defaults (``tol=1e-4``): ``OrthogonalTransferSVC(method=...)`` with
  ``solver_options={"method": "dual_cd"}`` (dual block-coordinate ascent,
  :mod:`hiercvx.solvers.orthogonal_dual`, the default) and ``{"method": "rda"}`` (Algorithm 1,
  :mod:`hiercvx.solvers.rda`, its
  ``max_iter`` = ``--rda-max-iter``, default the estimator's 20000), for each ``--methods``
  (default ``orthogonal,treeloss``), and ``LinearSVC(multi_class="crammer_singer")`` (defaults)
  on the same data;
* ``star``: a ``--leaves``-leaf star (default 5000), 60 samples x 5 features labelled with 3
  leaves and with 1 leaf (the wide rows), and ``chain``: a path of ``--depth`` nodes
  (default 1000) whose two deepest nodes are the leaves, labelled alternately;
  ``OrthogonalTransferSVC()`` with its defaults (``dual_cd``), the ``rows`` column the weight
  rows of the problem it solved after :func:`hiercvx.models.orthogonal.reduce_model` (the used
  rows, interchangeable negatives merged); RDA is not run there (it did not finish in 7
  minutes).

Each row prints the fit time, its ratio to LIBLINEAR's, the passes / iterations, the
certified relative gap, whether the solver converged (a ``ConvergenceWarning`` otherwise) and
the objective (the dual_cd and rda rows of one method solve the same problem: compare).

    .venv/bin/python benchmarks/bench_orthogonal_engine.py [--methods orthogonal,treeloss]
        [--solvers dual_cd,rda] [--rda-max-iter 20000] [--leaves 5000] [--depth 1000] [--quick]

``--quick``: RDA capped at 2000 iterations, a 500-leaf star and a 100-node chain.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from hiercvx.estimators import OrthogonalTransferSVC
from hiercvx.hierarchy import Hierarchy
from hiercvx.reproduce.leaderboard import data_missing, dataset, quiet_alpha_heuristic


def timed_fit(est, X, y):
    """``(seconds, warned)`` of ``est.fit(X, y)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
    return seconds, any(issubclass(w.category, ConvergenceWarning) for w in caught)


def row(data, what, seconds, base, n_iter="", gap=float("nan"), converged="", objective=float("nan")):
    ratio = seconds / base if base else float("nan")
    print(f"{data:28s} {what:30s} {seconds:9.2f} {ratio:8.1f}x {n_iter!s:>7s} {gap:10.2e} "
          f"{converged!s:>9s} {objective:14.8g}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="orthogonal,treeloss")
    ap.add_argument("--solvers", default="dual_cd,rda")
    ap.add_argument("--rda-max-iter", type=int, default=20000)
    ap.add_argument("--leaves", type=int, default=5000)
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    rda_max_iter = min(args.rda_max_iter, 2000) if args.quick else args.rda_max_iter
    leaves = min(args.leaves, 500) if args.quick else args.leaves
    depth = min(args.depth, 100) if args.quick else args.depth
    logging.basicConfig(level=logging.WARNING)
    print(f"{'data':28s} {'solver':30s} {'fit s':>9s} {'/ LIBLIN':>9s} {'n_iter':>7s} {'gap':>10s} "
          f"{'converged':>9s} {'objective':>14s}")
    with threadpool_limits(limits=1), quiet_alpha_heuristic():
        missing = data_missing()
        if missing:
            print(f"cellcycle_FUN rows skipped: {missing}")
        else:
            X, y, _, _, H = dataset("cellcycle_FUN single-path")
            X = StandardScaler().fit_transform(X)
            name = f"cellcycle_FUN sp {X.shape[0]}x{X.shape[1]}"
            seconds, _ = timed_fit(LinearSVC(multi_class="crammer_singer"), X, np.array([str(v) for v in y]))
            base = seconds
            row(name, "LinearSVC crammer_singer", seconds, base)
            for method in args.methods.split(","):
                budgets = {"dual_cd": 20000, "rda": rda_max_iter}
                for solver in args.solvers.split(","):
                    max_iter = budgets[solver]
                    est = OrthogonalTransferSVC(hierarchy=H, method=method, max_iter=max_iter,
                                                solver_options={"method": solver})
                    seconds, warned = timed_fit(est, X, y)
                    row(name, f"{method} {solver}", seconds, base, est.n_iter_, est.gap_,
                        "warn" if warned else "yes", est.objective_)
        rng = np.random.default_rng(0)
        Xs = rng.standard_normal((60, 5))
        Hs = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(leaves)}})
        spine = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, depth - 2)}}
        Hc = Hierarchy.from_parents({**spine, "a": f"n{depth - 3}", "b": f"n{depth - 3}"})
        wide = [(f"star {leaves} leaves, 3 labels", Hs, [f"c{i % 3}" for i in range(60)]),
                (f"star {leaves} leaves, 1 label", Hs, ["c0"] * 60),
                (f"chain {depth} nodes", Hc, ["a" if i % 2 else "b" for i in range(60)])]
        for name, H, labels in wide:
            est = OrthogonalTransferSVC(hierarchy=H)
            seconds, warned = timed_fit(est, Xs, np.array(labels, dtype=object))
            solved = est.result_.extras.get("n_rows_solved")
            row(name, f"orthogonal dual_cd, rows {solved}", seconds, None, est.n_iter_, est.gap_,
                "warn" if warned else "yes", est.objective_)


if __name__ == "__main__":
    main()
