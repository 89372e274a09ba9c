"""The exact label-set oracle on the GO DAG at the scores of a trained NHSVM, small and large C.

Program (19) of Choi, Sasaki & Srebro (*Normalized Hierarchical SVM*, arXiv:1508.02479, 2016)
over cellcycle_GO's 4126 terms (with the self leaves of labels that stop at internal terms),
at the node scores of ``NormalizedHierarchicalSVC`` after a few passes on the training split
(Nystroem features of the Gaussian kernel, rank 1000, width the median distance), for C = 1
and C = 10:

* **loss-augmented** (what every certificate of the fit solves, once per sample per pass):
  the scores plus the leaf-Hamming loss against each sample's true set;
* **plain** (what ``predict`` solves) on the test split.

Each is solved by ``LabelSetOracle(method="ilp")`` with branch and bound on the closure cut
off (``closure_branch_cuts=0``: the bounds, then an LP per undecided sample and its branching),
with a budget of 8 cuts and with the default budget, side by side in one run: seconds, the
samples the first cut answers in every namespace, and whether every route returns the same
optimal value.

    HIERCVX_HMC_DATA=../shared/data/hmc .venv/bin/python benchmarks/bench_dag_oracle.py [--passes 8]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.kernel_approximation import Nystroem
from sklearn.metrics import pairwise_distances
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from hiercvx import inference
from hiercvx.estimators import NormalizedHierarchicalSVC
from hiercvx.hierarchy import most_specific
from hiercvx.reproduce import hmc_aupr

BUDGETS = (0, 8, inference.Options().closure_branch_cuts)


def features(splits):
    """Train and test features: imputed and standardized on train + valid, then Nystroem
    (rank 1000, width the median distance between training points)."""
    (Xtr, ytr), (Xva, _), (Xte, _) = (splits.parts[p] for p in ("train", "valid", "test"))
    prep = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()).fit(np.vstack([Xtr, Xva]))
    Xtr, Xte = prep.transform(Xtr), prep.transform(Xte)
    sigma = float(np.median(pairwise_distances(Xtr)[np.triu_indices(len(Xtr), 1)]))
    ny = Nystroem(gamma=1.0 / (2.0 * sigma ** 2), n_components=1000, random_state=0).fit(Xtr)
    return ny.transform(Xtr), ytr, ny.transform(Xte), sigma


def solve_all(H, S, label):
    """Every budget of :data:`BUDGETS` on the score rows ``S``: one line each."""
    values = []
    for cuts in BUDGETS:
        oracle = inference.LabelSetOracle(H, "ilp",
                                          options=inference.Options(closure_branch_cuts=cuts))
        t0 = time.perf_counter()
        Z, info = oracle.solve(S, verbose=False, return_info=True)
        seconds = time.perf_counter() - t0
        values.append(info.objective)
        base = seconds if cuts == 0 else base
        print(f"  {label:<15} cuts {cuts:>3}: {seconds:7.1f} s ({1e3 * seconds / len(S):6.2f} ms/sample, "
              f"{base / seconds:4.1f}x as fast as without branching on the cut); (sample, component) pairs "
              f"the first cut answers: {info.n_closure} ({len(S)} samples)", flush=True)
    spread = max(float(np.max(np.abs(v - values[0]))) for v in values)
    print(f"  {label:<15} largest difference of the optimal values between routes: {spread:.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=8, help="NHSVM passes before the scores are taken")
    args = parser.parse_args()
    splits = hmc_aupr.load_splits("cellcycle_GO")
    Ftr, ytr, Fte, sigma = features(splits)
    print(f"cellcycle_GO: {len(ytr)} training and {len(Fte)} test samples, Nystroem rank 1000, "
          f"sigma {sigma:.3g}, {args.passes} passes")
    for C in (1.0, 10.0):
        est = NormalizedHierarchicalSVC(hierarchy=splits.hierarchy, C=C, max_iter=args.passes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            est.fit(Ftr, ytr)
        H = est.hierarchy_
        print(f"C = {C:g}: {args.passes} passes in {time.perf_counter() - t0:.1f} s, gap {est.gap_:.2e}, "
              f"{len(H)} nodes")
        T = H.closure(est.self_leaves_.transform(most_specific(splits.hierarchy, ytr)))
        augmented, _ = inference.loss_augmented_scores(est.node_scores(Ftr), H, T, "leaf_hamming")
        solve_all(H, augmented, "loss-augmented")
        solve_all(H, est.node_scores(Fte), "plain (test)")


if __name__ == "__main__":
    main()
