"""NHSVM on Clus-HMC label sets beside one-vs-rest LinearSVC over the evaluated nodes.

Data: ``../shared/data/hmc/cellcycle_{FUN,GO}.{train,valid,test}.arff`` (yeast cell-cycle
expression, 77 features with missing values; FunCat tree / Gene Ontology DAG).  The models
train on train + valid (mean imputation and standardization fitted there) and are scored on
test.

Rows per dataset, all measured in the same run (wall and CPU seconds; the machine's load is
printed before and after, since only ratios from one run compare):

* ``OvR LinearSVC``: one ``sklearn.svm.LinearSVC(C=1)`` per evaluated node
  (:func:`hiercvx.metrics.evaluated_nodes` with a positive in training) on the
  closed label sets; a node positive for every sample scores a constant.
* ``NHSVM``: ``NormalizedHierarchicalSVC(hierarchy=H)`` with its defaults (C = 1, leaf-Hamming
  loss, default ``tol``; on GO the loss-augmented oracle is program (19) per namespace behind
  the closure cut, its branch and bound and the bounds): fit time, passes, certified relative
  gap, predict time of the test set (best label set per sample: the tree DP on FunCat; on GO program (19) per namespace,
  :mod:`hiercvx.inference.components`, each by the closure cut / bounds / LP / (19)) and the
  share of samples the closure cut on the whole DAG answered.

* ``OvR hinge`` (``--hinge-peer``): the same with ``LinearSVC(C=1, loss="hinge")``, the hinge
  loss NHSVM minimizes (scikit-learn's default is its square), with the number of node
  problems that stopped at ``max_iter`` (1000) before LIBLINEAR's tolerance; its own page row.

All rows report AU(PRC) (:func:`hiercvx.metrics.au_prc`, the literature's measure) on the
test set: the OvR decision values, and NHSVM's ``node_decision_function``.  The ratio column
is NHSVM's fit time over OvR's.

    .venv/bin/python benchmarks/bench_nhsvm_labelsets.py [--n 600] [--datasets FUN,GO]
        [--data cellcycle_GO] [--max-iter N] [--hinge-peer]
        [--option method=auto --option master_newton=matrix_free ...]

``--option key=value`` (repeatable) passes ``solver_options`` to the estimator: ``method`` and
the fields of :class:`hiercvx.solvers.nhsvm_fw.Options` (numbers parsed as such); with options
the NHSVM row also prints the solver's method, its pairwise passes and, for cutting planes,
the rounds, the masters' Newton steps and conjugate-gradient steps.  ``--also
key=value[,key=value]`` (repeatable) fits NHSVM once more in the same run with those options on
top of ``--option``'s and prints its row and ratio beside the first (e.g. ``--also
primal_average=0``: a setting's effect measured under the same load).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from hiercvx.datasets import load_arff
from hiercvx.estimators import NormalizedHierarchicalSVC
from hiercvx.inference.closure import ClosureCut
from hiercvx.metrics import au_prc, evaluated_nodes
from hiercvx.datasets._common import hmc_data_dir

from _rows import converged, estimator_label, labelset_data, page_row, warm_up  # the page row line

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc


class Clock:
    """Wall and CPU seconds of a block."""

    def __enter__(self):
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0


def load(name: str, n: int | None, seed: int = 0):
    """Train + valid (optionally ``n`` of them at random) and test, imputed and standardized."""
    train, valid, test = (load_arff(DATA / f"cellcycle_{name}.{s}.arff")
                          for s in ("train", "valid", "test"))
    X = np.vstack([train.X, valid.X])
    y = list(train.y) + list(valid.y)
    prep = make_pipeline(SimpleImputer(strategy="mean"), StandardScaler()).fit(X)
    X, Xte = prep.transform(X), prep.transform(test.X)
    if n is not None and n < len(y):
        keep = np.sort(np.random.default_rng(seed).choice(len(y), n, replace=False))
        X, y = X[keep], [y[i] for i in keep]
    return train.hierarchy, X, y, Xte, list(test.y)


def one_vs_rest(H, X, y, Xte, loss="squared_hinge", C=1.0):
    """LinearSVC (``loss`` and ``C``, seeded; otherwise scikit-learn's defaults) per evaluated node; returns the
    fit and predict Clocks, the node scores on test, the number of evaluated nodes and how
    many of their problems stopped at ``max_iter`` (LIBLINEAR's ``ConvergenceWarning``)."""
    nodes = np.flatnonzero(evaluated_nodes(y, H, with_positives=True))
    T = H.closure(y)
    S = np.zeros((Xte.shape[0], len(H)))
    models = {}
    with Clock() as fit, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # counted below instead
        for j in nodes:
            if T[:, j].all():
                continue
            models[j] = LinearSVC(C=C, loss=loss, random_state=0).fit(X, T[:, j])
    stopped = sum(int(np.max(m.n_iter_) >= m.max_iter) for m in models.values())
    with Clock() as pred:
        for j in nodes:
            S[:, j] = models[j].decision_function(Xte) if j in models else 1.0
    others = np.setdiff1d(np.arange(len(H)), nodes)
    S[:, others] = S[:, nodes].min() - 1.0   # no positive in training: below every learned score
    return fit, pred, S, len(nodes), stopped


def parse_options(pairs) -> dict | None:
    """``["key=value", ...]`` as a dict (ints and floats parsed), or None when empty."""
    out = {}
    for pair in pairs or ():
        key, _, value = pair.partition("=")
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                continue
        out[key.strip()] = value
    return out or None


def solver_work(est) -> str:
    """The solver's method and, for cutting planes, rounds, Newton and CG steps of the masters."""
    res = est.result_
    h = res.history if isinstance(res.history, dict) else {}
    text = f"method {res.extras.get('method')}, pairwise passes {res.extras.get('pairwise_passes')}"
    if "master_newton_steps" in h:
        text += (f", rounds {len(h['master_newton_steps'])}, master Newton steps "
                 f"{sum(h['master_newton_steps'])}, CG steps {sum(h['master_cg_steps'])} over "
                 f"{sum(h['master_systems'])} systems, master time {sum(h['master_time']):.1f} s")
    return text


def nhsvm(H, X, y, Xte, max_iter, solver_options=None):
    est = NormalizedHierarchicalSVC(hierarchy=H, solver_options=solver_options)
    if max_iter:
        est.set_params(max_iter=max_iter)
    warm_up(est, X, y, Xte)  # compiled kernels built before the clock starts
    with Clock() as fit, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    with Clock() as pred:
        est.predict(Xte)
    S = est.node_decision_function(Xte)
    F = est.hierarchy_
    share = np.nan
    if not F.is_tree:  # the test samples the closure cut decides (the rest: bounds, LP, (19))
        share = float(ClosureCut(F).run(est.node_scores(Xte))[2].mean())
    return est, fit, pred, S, share


def run(name: str, n, max_iter, solver_options=None, also=(), hinge_peer=False) -> None:
    H, X, y, Xte, yte = load(name, n)
    print(f"\ncellcycle_{name}: {X.shape[0]} train+valid samples, {X.shape[1]} features, "
          f"{Xte.shape[0]} test; {H!r}", flush=True)
    fo, po, So, n_nodes, stopped = one_vs_rest(H, X, y, Xte)
    ap_o = au_prc(yte, So, H, y_train=y)
    if stopped:
        print(f"  OvR LinearSVC: {stopped} of {n_nodes} node problems stopped at max_iter")
    est, fn, pn, Sn, share = nhsvm(H, X, y, Xte, max_iter, solver_options)
    ap_n = au_prc(yte, Sn, H, y_train=y)
    print(f"  {'model':<16} {'fit wall':>9} {'fit cpu':>8} {'pred wall':>9} {'passes':>6} "
          f"{'gap':>8} {'AU(PRC)':>8}")
    print(f"  {'OvR LinearSVC':<16} {fo.wall:9.1f} {fo.cpu:8.1f} {po.wall:9.2f} {'-':>6} {'-':>8} "
          f"{ap_o:8.3f}   ({n_nodes} evaluated nodes)")
    print(f"  {'NHSVM':<16} {fn.wall:9.1f} {fn.cpu:8.1f} {pn.wall:9.2f} {est.n_iter_:>6} "
          f"{est.gap_:8.1e} {ap_n:8.3f}   (tol {est.tol:g}; {len(est.hierarchy_)} nodes)")
    print(f"  ratio NHSVM / OvR fit: wall {fn.wall / fo.wall:.2f}, cpu {fn.cpu / fo.cpu:.2f}"
          + ("" if np.isnan(share) else f"; test samples decided by the closure cut: {share:.0%}"),
          flush=True)
    if solver_options:
        print(f"  solver_options {solver_options}: {solver_work(est)}", flush=True)
    for extra in also:
        options = {**(solver_options or {}), **extra}
        other, fa, pa, Sa, _ = nhsvm(H, X, y, Xte, max_iter, options)
        print(f"  {'NHSVM ' + ','.join(f'{k}={v}' for k, v in extra.items()):<16} {fa.wall:9.1f} "
              f"{fa.cpu:8.1f} {pa.wall:9.2f} {other.n_iter_:>6} {other.gap_:8.1e} "
              f"{au_prc(yte, Sa, H, y_train=y):8.3f}   (ratio / OvR fit: wall "
              f"{fa.wall / fo.wall:.2f}, cpu {fa.cpu / fo.cpu:.2f})", flush=True)
    page_row(labelset_data(f"cellcycle_{name}", X.shape[0], X.shape[1], len(H.nodes),
                           n == X.shape[0]),
             estimator_label(est), fn.wall,
             f"one-vs-rest `LinearSVC` over the {n_nodes} evaluated nodes", fo.wall,
             f"{certified(est)}; AU(PRC) {ap_n:.3f} (one-vs-rest {ap_o:.3f}); "
             f"predict {pn.wall:.2f} s")
    if hinge_peer:
        hinge_row(name, H, X, y, Xte, yte, est, fn, ap_n, n)


def hinge_row(name, H, X, y, Xte, yte, est, fn, ap_n, n) -> None:
    """One-vs-rest ``LinearSVC(loss="hinge")`` (the hinge loss of the papers' SVMs, which
    NHSVM minimizes; LIBLINEAR's dual coordinate descent for it, scikit-learn's defaults
    otherwise) beside the NHSVM fit ``fn`` of the same run: its row, with how many node
    problems stopped at ``max_iter``."""
    fh, _, Sh, n_nodes, stopped = one_vs_rest(H, X, y, Xte, loss="hinge")
    ap_h = au_prc(yte, Sh, H, y_train=y)
    print(f"  {'OvR hinge':<16} {fh.wall:9.1f} {fh.cpu:8.1f} {'':>9} {'-':>6} {'-':>8} "
          f"{ap_h:8.3f}   ({stopped} of {n_nodes} node problems stopped at max_iter); ratio "
          f"NHSVM / OvR hinge fit: wall {fn.wall / fh.wall:.2f}", flush=True)
    page_row(labelset_data(f"cellcycle_{name}", X.shape[0], X.shape[1], len(H.nodes),
                           n == X.shape[0]),
             estimator_label(est), fn.wall,
             f"one-vs-rest `LinearSVC(loss='hinge')` over the {n_nodes} evaluated nodes "
             f"({stopped} stopped at max_iter)", fh.wall,
             f"{certified(est)}; AU(PRC) {ap_n:.3f} (one-vs-rest hinge {ap_h:.3f})")


def certified(est) -> str:
    """The certificate cell's start: the certified gap, and whether the fit converged."""
    return f"gap {est.gap_:.1e}" + ("" if converged(est) else ", not converged")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="subsample train+valid to n samples")
    ap.add_argument("--datasets", default="FUN,GO")
    ap.add_argument("--data", default=None,
                    help="one data set, e.g. cellcycle_GO (overrides --datasets)")
    ap.add_argument("--max-iter", type=int, default=0, help="cap NHSVM's passes (0: default)")
    ap.add_argument("--option", action="append", default=[],
                    help="key=value of NHSVM's solver_options (repeatable)")
    ap.add_argument("--hinge-peer", action="store_true",
                    help="also one-vs-rest LinearSVC(loss='hinge') (the papers' loss), its own row")
    ap.add_argument("--also", action="append", default=[],
                    help="key=value[,key=value]: one more NHSVM fit with these options (repeatable)")
    args = ap.parse_args(argv)
    names = [d.strip() for d in args.datasets.split(",") if d.strip()]
    if args.data:
        names = [args.data.strip().removeprefix("cellcycle_")]
    missing = [f"cellcycle_{d}" for d in names if not (DATA / f"cellcycle_{d}.train.arff").exists()]
    if missing:
        print(f"data absent in {DATA}: {', '.join(missing)}; nothing to benchmark")
        return
    print("load average before:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
    for name in names:
        run(name, args.n, args.max_iter, parse_options(args.option),
            [parse_options(a.split(",")) for a in args.also], args.hinge_peer)
    print("\nload average after:", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
