"""What the certified tolerance costs on Clus-HMC label sets: fit time, gap and AU(PRC) of
``NormalizedHierarchicalSVC`` and ``HierarchicalSVC`` at several ``tol``, beside one-vs-rest
``LinearSVC`` over the nodes fitted in the same run.

Data: ``cellcycle_{FUN,GO}`` train + valid (mean imputation and standardization fitted there),
scored on test, as in ``bench_nhsvm_labelsets.py``.  For each estimator and each ``tol`` of
``--tols`` (then the estimator's default ``tol``), one fit from scratch, C = 1, every other
parameter at its default (``HierarchicalSVC`` capped at ``--max-iter`` passes; once a fit stops
at the cap, the tighter ``tol`` are not run): wall seconds,
the ratio to the one-vs-rest fit, passes, the certified relative gap, AU(PRC)
(:func:`hiercvx.metrics.au_prc`) of the node scores on test, and the share of test samples
whose predicted label set equals the one of the tightest converged fit.  The table shows what
a user gives up with a looser ``tol`` (the objective is within ``tol`` of its optimum, relative)
and what it saves.

    .venv/bin/python benchmarks/bench_labelset_tol.py [--datasets FUN GO] [--n 600]
        [--tols 1e-2 1e-3 1e-4] [--estimators nhsvm hsvc] [--max-iter 3000]
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from hiercvx.estimators import HierarchicalSVC, NormalizedHierarchicalSVC
from hiercvx.metrics import au_prc

from _rows import converged, warm_up
from bench_nhsvm_labelsets import Clock, load, one_vs_rest

ESTIMATORS = {"nhsvm": NormalizedHierarchicalSVC, "hsvc": HierarchicalSVC}


def fit_at(cls, H, X, y, Xte, tol, max_iter):
    """One fit of ``cls`` at ``tol`` (None: its default) from scratch: the estimator, the fit
    Clock, the test node scores and predicted label sets."""
    est = cls(hierarchy=H)
    if tol is not None:
        est.set_params(tol=tol)
    if cls is HierarchicalSVC:
        est.set_params(max_iter=max_iter)
    warm_up(est, X, y, Xte)  # compiled kernels built before the clock starts
    with Clock() as fit, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # reported as "not converged"
        est.fit(X, y)
    return est, fit, est.node_decision_function(Xte), est.predict(Xte)


def same_sets(a, b) -> float:
    """Share of samples whose two predicted label sets are equal."""
    return float(np.mean([frozenset(p) == frozenset(q) for p, q in zip(a, b)]))


def run(name: str, n, tols, estimators, max_iter) -> None:
    H, X, y, Xte, yte = load(name, n)
    print(f"\ncellcycle_{name}: {X.shape[0]} train+valid samples, {X.shape[1]} features, "
          f"{Xte.shape[0]} test; {H!r}", flush=True)
    fo, _, So, n_nodes, stopped = one_vs_rest(H, X, y, Xte)
    print(f"  one-vs-rest LinearSVC over {n_nodes} evaluated nodes: {fo.wall:.1f} s "
          f"({stopped} stopped at max_iter), AU(PRC) {au_prc(yte, So, H, y_train=y):.3f}",
          flush=True)
    print(f"  {'estimator':<28} {'tol':>7} {'fit s':>8} {'/ OvR':>7} {'passes':>7} "
          f"{'gap':>9} {'AU(PRC)':>8} {'same sets':>9}")
    for key in estimators:
        cls = ESTIMATORS[key]
        fits = []   # loosest tol first, so the last converged fit is the tightest
        for tol in sorted(tols, reverse=True) + [None]:
            est, clock, S, pred = fit_at(cls, H, X, y, Xte, tol, max_iter)
            fits.append((tol, est, clock, S, pred))
            if not converged(est):   # a tighter tol would rerun the same capped passes
                break
        done = [pred for _, est, _, _, pred in fits if converged(est)]
        tightest = done[-1] if done else fits[-1][-1]
        for tol, est, clock, S, pred in fits:
            tol_text = f"{est.tol:g}" + ("" if tol is not None else "*")
            print(f"  {cls.__name__:<28} {tol_text:>7} {clock.wall:8.1f} "
                  f"{clock.wall / fo.wall:6.2f}x {est.n_iter_:>7} {est.gap_:9.1e} "
                  f"{au_prc(yte, S, H, y_train=y):8.3f} {same_sets(pred, tightest):9.1%}"
                  + ("" if converged(est) else "  (not converged)"), flush=True)
    print("  * the estimator's default tol; same sets: against the tightest converged fit; "
          "after a fit that did not converge the tighter tols are not run")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["FUN", "GO"])
    ap.add_argument("--n", type=int, default=None, help="random subset of train + valid")
    ap.add_argument("--tols", nargs="+", type=float, default=[1e-2, 1e-3, 1e-4])
    ap.add_argument("--estimators", nargs="+", choices=sorted(ESTIMATORS),
                    default=["nhsvm", "hsvc"])
    ap.add_argument("--max-iter", type=int, default=3000, help="HierarchicalSVC's passes")
    args = ap.parse_args(argv)
    print(f"load before: {os.getloadavg()[0]:.2f}", flush=True)
    for name in args.datasets:
        run(name, args.n, args.tols, args.estimators, args.max_iter)
    print(f"load after: {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
