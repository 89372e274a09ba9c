"""Label-set inference.

1. The tree dynamic program on a random 5*10^4-node tree (time per sample, batch of samples),
   against the integer program on a few samples (same objective).
2. ILP vs LP relaxation on the GO DAG of ../shared/data/hmc/cellcycle_GO (time per sample, how
   often the LP answer is fractional and falls back).  Scores are node scores of the kind a
   trained model gives: the closure of a random training label set (+1 on its nodes, -1
   elsewhere) plus Gaussian noise, and plain Gaussian scores.

    .venv/bin/python benchmarks/bench_inference.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import hiercvx as hc
from hiercvx.datasets import load_arff
from hiercvx.inference import LabelSetOracle, label_set_scores
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc


def random_tree(n_nodes: int, rng) -> hc.Hierarchy:
    # random recursive tree: node k attaches to a uniformly chosen earlier node (depth ~ e ln n)
    parents = {0: None}
    parents.update({k: int(rng.integers(0, k)) for k in range(1, n_nodes)})
    return hc.Hierarchy.from_parents(parents)


def tree_dp(quick: bool):
    rng = np.random.default_rng(0)
    n_nodes = 5_000 if quick else 50_000
    t0 = time.perf_counter()
    H = random_tree(n_nodes, rng)
    build = time.perf_counter() - t0
    print(f"Tree: {H!r} (built in {build:.2f}s)")
    for n_samples in (1, 100, 1000):
        S = rng.standard_normal((n_samples, len(H)))
        dp = LabelSetOracle(H, "dp")
        t0 = time.perf_counter()
        Z = dp.solve(S)
        t = time.perf_counter() - t0
        print(f"  dp   {n_samples:>5} samples: {t:8.3f}s total, {1e3 * t / n_samples:8.3f} ms/sample")
    ilp = LabelSetOracle(H, "ilp")
    k = 2 if quick else 3
    t0 = time.perf_counter()
    Zi = ilp.solve(S[:k])
    t = time.perf_counter() - t0
    agree = np.allclose(label_set_scores(S[:k], Z[:k]), label_set_scores(S[:k], Zi), atol=1e-8)
    print(f"  ilp  {k:>5} samples: {t:8.3f}s total, {1e3 * t / k:8.1f} ms/sample; same objective as dp: {agree}")


def go_dag(quick: bool):
    path = DATA / "cellcycle_GO.train.arff"
    if not path.exists():
        print(f"GO DAG: {path} is absent; skipped")
        return
    ds = load_arff(path)
    H = ds.hierarchy
    print(f"GO DAG: {H!r}")
    rng = np.random.default_rng(0)
    n = 20 if quick else 100
    Z = H.closure([ds.y[i] for i in rng.integers(0, len(ds.y), n)])
    kinds = {"trained-like": np.where(Z, 1.0, -1.0) + 0.8 * rng.standard_normal(Z.shape),
             "gaussian": rng.standard_normal((n, len(H)))}
    for kind, S in kinds.items():
        res = {}
        for method in ("lp", "ilp"):
            oracle = LabelSetOracle(H, method)
            oracle.solve(S[:1])  # model build outside the timing
            t0 = time.perf_counter()
            out, info = oracle.solve(S, return_info=True)
            res[method] = (out, info, time.perf_counter() - t0)
        (zl, il, tl), (zi, ii, ti) = res["lp"], res["ilp"]
        same = np.allclose(label_set_scores(S, zl), label_set_scores(S, zi), atol=1e-7)
        print(f"  {kind:>12}: ilp {1e3 * ti / n:8.1f} ms/sample, lp {1e3 * tl / n:8.1f} ms/sample "
              f"(ratio ilp/lp {ti / tl:5.1f}); LP fractional on {int(np.sum(il.fractional))}/{n} samples "
              f"(fell back to the ILP there); same objective: {same}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    tree_dp(quick)
    go_dag(quick)
