"""Hierarchical perceptrons and Hieron vs the hierarchical SVM, with the
lecture's baselines and the divide-and-conquer SVM.

Data: ``cellcycle_FUN`` (train+valid / test) and ``Enron_corr`` (trainvalid / test) from
``../shared/data/hmc`` (skipped with a message when absent), loaded by ``runner.load_hmc``:
labels reduced to their most specific members, labels on internal nodes get a "self" leaf
(thesis 3.1).  Every method runs in ``Pipeline(mean imputation, standardization, constant
column, model)`` (``runner.preprocessing``; the constant column is the bias of thesis 3.2).
Thesis metrics on the test set (7.3-7.6 and (4.18)): one-accuracy, average precision,
ranking loss, maximal loss (half symmetric difference), parent one-accuracy; and the training
time.  Flat models ("F-") use a one-level hierarchy over the same classes.  kappa = 20 epochs
as in thesis Tables 7.20-7.22, except Minover (one pass of n steps: each Minover step costs
one sweep over all pairs).  Baselines (``runner.REGISTRY``): DNC-SVM (thesis 7.4.2), a
cost-complexity-pruned decision tree, one-vs-rest and output-code LinearSVCs (scikit-learn).

The SVMs (flat, hierarchical, DNC) see unit-length rows (``runner.UnitRows``: C = 1 on the
standardized Enron features, n < d, is practically hard-margin) and are solved to a certified
gap of 1e-3 on the whole training set (``SVM_MAX_TRAIN``: a cap per data set, marked ``*``
when it applies).  The whole run takes about 5 minutes on two cores.

    .venv/bin/python benchmarks/bench_perceptrons_vs_hsvm.py [--quick] [--no-baselines]
"""

from __future__ import annotations

import sys

from runner import DATA, load_hmc, run, subsample

SETS = ("cellcycle_FUN", "Enron_corr")
PERCEPTRONS = ("PERC online", "PERC averaged", "PERC minover", "Hieron online", "Hieron averaged")
METHODS = [f"{h}-{m}" for h in "FH" for m in PERCEPTRONS + ("SVM",)]
BASELINES = ["DNC-SVM", "tree (CCP, CV)", "OvR LinearSVC", "ECOC LinearSVC"]
SVM_MAX_TRAIN = {"cellcycle_FUN": 10_000, "Enron_corr": 10_000}


def main(quick: bool = False, baselines: bool = True):
    if not DATA.exists():
        print(f"shared data not found at {DATA}; nothing to benchmark")
        return
    names = METHODS + (BASELINES if baselines else [])
    for name in SETS:
        split = load_hmc(name)
        if quick:
            split = subsample(split, 400)
        H = split.hierarchy
        print(f"\n{name}: train {split.X.shape[0], split.X.shape[1] + 1}, test "
              f"{split.X_test.shape[0], split.X_test.shape[1] + 1}, {len(H.leaves)} classes, {H!r}")
        cap = SVM_MAX_TRAIN[name]
        run(names, split, quick=quick,
            max_train={m: cap for m in ("F-SVM", "H-SVM", "DNC-SVM")})
        sys.stdout.flush()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv, baselines="--no-baselines" not in sys.argv)
