"""The Gaussian-kernel hierarchical SVM on label sets through a low-rank kernel factor, against
one-vs-rest LinearSVC over the nodes on the same Nystrom features, in one run.

Data: cellcycle_FUN (Clus-HMC, FunCat tree), train + valid, label sets, features mean-imputed
and standardized, the Gaussian kernel at the median distance (the median heuristic), C = 1.
Per rank cap (``--ranks``), one row:

* ``rank``, ``resid``: columns of the pivoted-Cholesky factor and the residual trace share
  (:mod:`hiercvx.solvers.low_rank_kernel`, ``rtol`` 1e-2 unless the cap stops it first);
* ``hsvm``: ``HierarchicalSVC(kernel="rbf")`` fit time, the certified gap of the rank-r
  problem and the exact kernel problem's gap (approximation included), AU(PRC) on the test
  split (``node_decision_function``);
* ``ovr``: ``OneVsRestClassifier(LinearSVC())`` over the nodes with a positive on Nystrom
  features of the same rank: fit time and AU(PRC); ``x``: hsvm time / ovr time.

    .venv/bin/python benchmarks/bench_lowrank_labelsets.py [--ranks 250,1000] [--n 2476]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.kernel_approximation import Nystroem
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from hiercvx.estimators import HierarchicalSVC
from hiercvx.kernels import Kernel, median_heuristic
from hiercvx.metrics import au_prc, evaluated_nodes
from hiercvx.reproduce import hmc
from hiercvx.solvers import low_rank_kernel, margin_engine


def row(split, X, X_test, sigma: float, rank: int, tol: float) -> str:
    H, y, y_test = split.hierarchy, list(split.y), list(split.y_test)
    options = margin_engine.Options(low_rank=low_rank_kernel.Options(max_rank=rank,
                                                                     from_samples=0))
    kernel = ({"kernel": "rbf", "sigma": sigma} if "sigma" in HierarchicalSVC().get_params()
              else {"kernel": Kernel("rbf", sigma=sigma)})
    est = HierarchicalSVC(hierarchy=H, tol=tol, solver_options=options, **kernel)
    t0 = time.perf_counter()
    est.fit(X, y)
    t_h = time.perf_counter() - t0
    ka = est.result_.kernel_approximation
    ap_h = au_prc(y_test, est.node_decision_function(X_test), H, y_train=y)
    nodes = evaluated_nodes(y, H)
    ovr = make_pipeline(Nystroem(gamma=0.5 / sigma ** 2, n_components=ka.rank, random_state=0),
                        OneVsRestClassifier(LinearSVC()))
    t0 = time.perf_counter()
    ovr.fit(X, np.asarray(H.closure(y), dtype=int)[:, nodes])
    t_o = time.perf_counter() - t0
    S = np.full((X_test.shape[0], len(H.nodes)), -np.inf)
    S[:, nodes] = ovr.decision_function(X_test)
    ap_o = au_prc(y_test, np.where(np.isfinite(S), S, S[:, nodes].min() - 1), H, nodes=nodes)
    return (f"{rank:6d} {ka.rank:5d} {ka.relative_residual:7.1e} | {t_h:8.1f}s gap "
            f"{est.result_.gap:.1e} exact {ka.gap:.1e} AU(PRC) {ap_h:.3f} | {t_o:7.1f}s "
            f"AU(PRC) {ap_o:.3f} | x{t_h / t_o:5.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="250,1000")
    ap.add_argument("--n", type=int, default=None, help="training genes (default: all)")
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args(argv)
    split = hmc.load_multilabel("cellcycle_FUN")
    if args.n is not None:
        split = split.subsample(args.n, len(split.y_test), np.random.default_rng(0))
    prep = make_pipeline(SimpleImputer(), StandardScaler()).fit(split.X)
    X, X_test = prep.transform(split.X), prep.transform(split.X_test)
    sigma = median_heuristic(X)
    print(f"cellcycle_FUN: {X.shape[0]} training genes, sigma {sigma:.3g}")
    print("   cap  rank   resid |  hsvm time  gaps (rank r, exact)       AU(PRC) | ovr time"
          "  AU(PRC) | hsvm / ovr")
    for rank in map(int, args.ranks.split(",")):
        print(row(split, X, X_test, sigma, rank, args.tol), flush=True)


if __name__ == "__main__":
    main()
