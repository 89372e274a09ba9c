"""``HierarchicalSVC()`` on the Clus-HMC yeast label sets vs one-vs-rest ``LinearSVC`` over
the nodes, measured in one run.

Data: cellcycle_FUN (FunCat tree) and cellcycle_GO (GO DAG) from the shared Clus-HMC folder,
train + valid for training, test for scoring; missing values imputed by the mean and features
standardized on the training rows; labels as the loader gives them (label sets of node names).

Per dataset:
1. one-vs-rest ``LinearSVC`` (C = 1, scikit-learn defaults) over the evaluated nodes
   (:func:`hiercvx.metrics.evaluated_nodes` with a positive in training), its node
   scores on the test set;
2. ``HierarchicalSVC(hierarchy=H)`` at its defaults (C = 1, tol = 1e-6 relative duality gap,
   the margin engine's choice of solver): fit time (wall and CPU), certified gap, solver,
   passes, the time at which the certified gap first reached 1e-2 ... 1e-6, test prediction
   time (``predict`` and ``node_decision_function``);
3. AU(PRC) of both (:func:`hiercvx.metrics.au_prc`, micro-averaged over the evaluated nodes).
Ratio = HierarchicalSVC fit time / one-vs-rest fit time, wall and CPU (target: at most 10).

Run: ``.venv/bin/python benchmarks/bench_labelsets.py [--n N] [--datasets cellcycle_FUN ...]
[--max-iter K] [--inner working_set|proximal|interior_point]`` (``--n``: a seeded random
subset of N training rows; ``--inner``: the label-set engine's inner solver,
:class:`hiercvx.solvers.labelset.Options`; ``interior_point`` is the matrix-free interior
point of :mod:`hiercvx.solvers.interior_point_cg`).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from hiercvx import metrics
from hiercvx.datasets import load_arff
from hiercvx.estimators import HierarchicalSVC
from hiercvx.solvers import labelset, margin_engine
from hiercvx.datasets._common import hmc_data_dir

from _rows import converged, estimator_label, labelset_data, page_row, warm_up  # the page row line

DATA = str(hmc_data_dir())  # $HIERCVX_HMC_DATA, else shared/data/hmc


def load(name: str, n: int | None, seed: int = 0):
    """Train + valid (a random subset of ``n`` rows when given) and test, imputed and scaled."""
    parts = [load_arff(os.path.join(DATA, f"{name}.{s}.arff")) for s in ("train", "valid", "test")]
    X = np.vstack([parts[0].X, parts[1].X])
    y = list(parts[0].y) + list(parts[1].y)
    if n is not None and n < len(y):
        idx = np.random.default_rng(seed).choice(len(y), n, replace=False)
        X, y = X[idx], [y[i] for i in idx]
    pre = make_pipeline(SimpleImputer(), StandardScaler()).fit(X)
    return pre.transform(X), y, pre.transform(parts[2].X), list(parts[2].y), parts[0].hierarchy


def one_vs_rest(X, y, Xt, H):
    """Fit time and test node scores ``(m, M)`` of one-vs-rest LinearSVC on the evaluated nodes."""
    T = np.asarray(H.closure(y), dtype=bool)
    mask = metrics.evaluated_nodes(y, H, with_positives=True)   # the nodes it can learn
    t0, c0 = time.perf_counter(), time.process_time()
    ovr = OneVsRestClassifier(LinearSVC(C=1.0)).fit(X, T[:, mask])
    fit, cpu = time.perf_counter() - t0, time.process_time() - c0
    P = np.zeros((Xt.shape[0], len(H.nodes)))
    P[:, mask] = ovr.decision_function(Xt)
    P[:, ~mask] = P[:, mask].min() - 1.0   # no positive in training: below every learned score
    return fit, cpu, P, int(mask.sum())


def time_to_gap(history, marks=(1e-2, 1e-3, 1e-4, 1e-5, 1e-6)) -> str:
    """Seconds until the certified gap first reached each mark (the engine's rounds)."""
    gaps, times = history.get("gap", []), history.get("time", [])
    out = []
    for m in marks:
        t = next((t for g, t in zip(gaps, times) if g <= m), None)
        out.append(f"{m:.0e}: " + ("-" if t is None else f"{t:.1f} s"))
    return ", ".join(out)


def hierarchical(X, y, Xt, H, max_iter, inner=None):
    options = None if inner in (None, labelset.Options().inner) else margin_engine.Options(
        labelset=labelset.Options(inner=inner))
    est = HierarchicalSVC(hierarchy=H, max_iter=max_iter, solver_options=options)
    warm_up(est, X, y, Xt)  # compiled kernels built before the clock starts
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    fit, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    est.predict(Xt)
    P = est.node_decision_function(Xt)
    return est, (fit, cpu), time.perf_counter() - t0, P


def run(name, n, max_iter, inner=None):
    X, y, Xt, yt, H = load(name, n)
    t_ovr, cpu_ovr, P_ovr, n_nodes = one_vs_rest(X, y, Xt, H)
    a_ovr = metrics.au_prc(yt, P_ovr, hierarchy=H, y_train=y)
    print(f"{name}: n={X.shape[0]} d={X.shape[1]} nodes={len(H.nodes)} evaluated={n_nodes}",
          flush=True)
    print(f"  one-vs-rest LinearSVC   fit {t_ovr:8.1f} s (CPU {cpu_ovr:.1f} s)   AU(PRC) "
          f"{a_ovr:.3f}", flush=True)
    est, (t_h, cpu_h), t_pred, P_h = hierarchical(X, y, Xt, H, max_iter, inner)
    a_h = metrics.au_prc(yt, P_h, hierarchy=H, y_train=y)
    res = est.result_
    print(f"  HierarchicalSVC()       fit {t_h:8.1f} s (CPU {cpu_h:.1f} s)   AU(PRC) {a_h:.3f}   "
          f"gap {est.gap_:.2e} "
          f"({'converged' if res.converged else 'NOT converged'}, {res.solver}: {res.name}, "
          f"{est.n_iter_} passes)   test prediction {t_pred:.2f} s", flush=True)
    print(f"  time to gap: {time_to_gap(res.history)}", flush=True)
    print(f"  ratio HierarchicalSVC / one-vs-rest: {t_h / t_ovr:.1f} (CPU {cpu_h / cpu_ovr:.1f})",
          flush=True)
    page_row(labelset_data(name, X.shape[0], X.shape[1], len(H.nodes), n == X.shape[0]),
             estimator_label(est), t_h,
             f"one-vs-rest `LinearSVC` over the {n_nodes} evaluated nodes", t_ovr,
             f"gap {est.gap_:.1e}" + ("" if converged(est) else ", not converged")
             + f"; AU(PRC) {a_h:.3f} (one-vs-rest {a_ovr:.3f}); predict {t_pred:.2f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="random subset of training rows")
    ap.add_argument("--datasets", nargs="+", default=["cellcycle_FUN", "cellcycle_GO"])
    ap.add_argument("--max-iter", type=int, default=10000, help="HierarchicalSVC max_iter")
    ap.add_argument("--inner", choices=["working_set", "proximal", "interior_point"],
                    default=None,
                    help="the label-set engine's inner solver (default: its own default)")
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} on {os.cpu_count()} CPUs", flush=True)
    for name in args.datasets:
        if not os.path.exists(os.path.join(DATA, f"{name}.train.arff")):
            print(f"{name}: not found in {os.path.abspath(DATA)}; skipped")
            continue
        run(name, args.n, args.max_iter, args.inner)


if __name__ == "__main__":
    main()
