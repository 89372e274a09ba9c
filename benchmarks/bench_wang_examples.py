"""Reproduce the simulated Examples 1-3 of Wang, Shen & Pan (section 4.1, Tables 1-4) and time
the fast sibling-margin solver against the CVXPY reference.

Part 1 -- the simulations.  For every example, training size, kernel and replication:
a training sample, an independent tuning sample of the same size and a test sample are drawn
(``hiercvx.datasets.make_wang_example{1,2,3}``); every method is tuned on the tuning sample
over a grid of C with ``hiercvx.estimators.tuning.tune_on_holdout`` (tuning error (6) under
l_{0-1}, the paper's protocol); the tuned fit is scored on the test sample with the four test
errors (6) and the weighted F1 of section 4.1; the Bayes rule of each example is scored on the
same test sample.  Methods (all certified, fast solvers):

    SVM    SiblingMarginSVC(hierarchy=None)             (Liu & Shen's flat multi-class SVM)
    psi    HierarchicalPsiClassifier(hierarchy=None)    (flat psi-learning)
    HSVM_c HierarchicalSVC(hierarchy=H)                 (Cai & Hofmann; thesis (4.10), with a
                                                         regularized intercept, see make_hsvm_c)
    SHSVM  SequentialHierarchicalSVC(H)
    HSVM   SiblingMarginSVC(H)
    HPSI   HierarchicalPsiClassifier(H)

Gaussian kernel: section 4.1's exp(-||x - z||^2 / m^2), m the median distance between
training points of different classes (``sigma_ = m / sqrt(2)`` in hiercvx's convention), the
same for every method.  Replications run in parallel with joblib.  The paper uses 100
replications, the full 61-point grid C = 10^(l/10), l = -30..30, training sizes up to 1500
and 5e4 test points; the defaults here are smaller so that the whole run takes about ten
minutes on two cores: 4 replications for n <= 150 and 1 for n = 500, a 13-point grid
(every 5th point), 2e4 test points, Example 3 without n = 1500 (``--reps``,
``--grid-step``, ``--n-test``, ``--sizes 50 150 500 1500`` restore the paper's protocol).
The script prints how many replications it ran.

Part 2 -- timing.  One HSVM QP and one whole DC run (HPSI) on Example 3, fast solver vs the
CVXPY reference (compile + solve), with the certified objectives side by side.

    .venv/bin/python benchmarks/bench_wang_examples.py            # default (about 10 min)
    .venv/bin/python benchmarks/bench_wang_examples.py --quick    # a smoke run (about 1 min)

Notes on the comparison with the paper.  TE_Delta here is the raw |anc(Y) symdiff anc(d)|;
the paper's l_Delta numbers are on another (undocumented) scale -- its Bayes rows are 1/3
(Example 1), about 1/5.4 (Example 2) and 1/6 (Example 3) of ours -- so compare TE_Delta
through the improvement over SVM in Bayes regret, which is scale free.  TE_sib / TE_sub
follow the costs (5) / (4) as hiercvx.metrics defines them; their Bayes values match the
paper's Bayes rows.  Example 1 gives no training size; n = 100 here.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import defaultdict

import numpy as np
from joblib import Parallel, delayed

from hiercvx.reproduce import wang

# The protocol (samples, estimators, tuning, scores) and the paper's numbers live in the package,
# where `hiercvx reproduce wang-table1..4` uses them too.
METHODS = list(wang.METHODS)
LOSSES = list(wang.LOSSES)
PAPER = wang.reported_means()   # (example, kernel, n) -> method -> (l_0-1, l_Delta, l_sib, l_sub, F1)


def run_task(example, n, kernel, seed, method, grid, n_test):
    """Tune one method on one replication; return its test scores."""
    t0 = time.perf_counter()
    train, tune, test = wang.make_data(example, n, seed, n_test)
    out, best_C = wang.run_method(method, kernel, grid, train, tune, test)
    return dict(example=example, n=n, kernel=kernel, seed=seed, method=method, best_C=best_C,
                seconds=time.perf_counter() - t0, **out)


def improvement(te, te_svm, bayes):
    return 100.0 * (te_svm - te) / (te_svm - bayes) if te_svm - bayes > 1e-12 else float("nan")


def report(rows, settings, reps):
    from hiercvx.estimators.tuning import wang_C_grid  # noqa: F401 -- keeps the import checked

    table = defaultdict(list)
    for r in rows:
        table[(r["example"], r["kernel"], r["n"], r["method"])].append(r)
    lines = []
    for (ex, kernel, n) in settings:
        lines.append(f"\n### Example {ex}, {kernel}, n = {n} ({reps[(ex, kernel, n)]} replications; "
                     f"paper: 100)\n")
        lines.append("| method | " + " | ".join(f"{l} ours (sd) / paper" for l in LOSSES)
                     + " | % impro. ours / paper (0-1, Delta, sib, sub) | median best C |")
        lines.append("|---|" + "---|" * (len(LOSSES) + 2))
        paper = PAPER.get((ex, kernel, n), {})
        means = {}
        for m in ["Bayes"] + METHODS:
            rs = table.get((ex, kernel, n, m), [])
            if not rs:
                continue
            vals = np.array([[r[l] for l in LOSSES] for r in rs])
            means[m] = vals.mean(axis=0)
        for m in METHODS + ["Bayes"]:
            if m not in means:
                continue
            rs = table[(ex, kernel, n, m)]
            vals = np.array([[r[l] for l in LOSSES] for r in rs])
            mu, sd = vals.mean(axis=0), vals.std(axis=0, ddof=1) if len(rs) > 1 else np.zeros(len(LOSSES))
            pp = paper.get(m)
            cells = [f"{mu[k]:.3f} ({sd[k]:.3f}) / {pp[k]:.3f}" if pp else f"{mu[k]:.3f} ({sd[k]:.3f})"
                     for k in range(len(LOSSES))]
            imp = ""
            if m not in ("SVM", "Bayes") and "SVM" in means and "Bayes" in means:
                ours = [improvement(means[m][k], means["SVM"][k], means["Bayes"][k]) for k in range(4)]
                theirs = ([improvement(pp[k], paper["SVM"][k], paper["Bayes"][k]) for k in range(4)]
                          if pp and "SVM" in paper else [float("nan")] * 4)
                imp = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in zip(ours, theirs))
            bestC = np.median([r["best_C"] for r in rs]) if m != "Bayes" else float("nan")
            lines.append(f"| {m} | " + " | ".join(cells) + f" | {imp} | {bestC:.3g} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------- part 2: timing
def timing(linear_sizes=(150, 500, 1500), rbf_sizes=(150,), repeats=3):
    """Fast vs reference wall clock on Example 3 at C = 1 (best of ``repeats`` runs; one run
    when a run takes more than 2 s)."""
    from threadpoolctl import threadpool_limits

    from hiercvx.datasets import make_wang_example3
    from hiercvx.estimators.sibling import paper_sigma
    from hiercvx.formulations import hpsi
    from hiercvx.models.sibling import prepare
    from hiercvx.solvers import sibling_qp

    warnings.simplefilter("ignore")
    lines = ["\n## Fast vs reference (Example 3, C = 1; reference = CVXPY build + CLARABEL solve, "
             "fast = setup + solve; best of up to %d runs)\n" % repeats,
             "| n | kernel | task | reference s | fast s | ratio | objective ref / fast |",
             "|---|---|---|---|---|---|---|"]

    def best(f):
        times, out = [], None
        for _ in range(repeats):
            t = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t)
            if times[-1] > 2.0:
                break
        return min(times), out

    cases = [(n, "linear") for n in linear_sizes] + [(n, "rbf") for n in rbf_sizes]
    with threadpool_limits(limits=1):
        for n, kernel in cases:
            ds = make_wang_example3(n, random_state=0)
            X, y, H = ds.X, ds.y, ds.hierarchy
            s = paper_sigma(X, y) if kernel == "rbf" else None
            tr, ref = best(lambda: hpsi.primal(X, y, H, C=1.0, kernel=kernel, sigma=s).solve())
            tf, fast = best(lambda: sibling_qp.solve(prepare(X, y, H, kernel, s), 1.0))
            lines.append(f"| {n} | {kernel} | HSVM QP | {tr:.3f} | {tf:.3f} | {tr / tf:.1f} | "
                         f"{ref.objective:.8g} / {fast.objective:.8g} |")
            tr, refdc = best(lambda: hpsi.dc(X, y, H, C=1.0, kernel=kernel, sigma=s))
            tf, fastdc = best(lambda: sibling_qp.solve_dc(prepare(X, y, H, kernel, s), 1.0))
            lines.append(f"| {n} | {kernel} | HPSI DC run ({len(refdc.dc_objectives) - 1} / "
                         f"{len(fastdc.dc_objectives) - 1} steps) | {tr:.3f} | {tf:.3f} | "
                         f"{tr / tf:.1f} | {refdc.objective:.8g} / {fastdc.objective:.8g} |")
            print(lines[-2] + "\n" + lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--kernels", nargs="+", default=["linear", "gaussian"])
    p.add_argument("--sizes", type=int, nargs="+", default=[50, 150, 500],
                   help="training sizes of Example 3 (paper: 50 150 500 1500)")
    p.add_argument("--reps", type=int, default=None,
                   help="replications per setting (default: 4 for n <= 150, 1 above)")
    p.add_argument("--grid-step", type=int, default=5,
                   help="use every k-th point of the paper's 61-point C grid (1 = the paper's; "
                        "default 5: 13 points, 10^-3 .. 10^3 by 10^0.5)")
    p.add_argument("--timing-rbf-sizes", type=int, nargs="*", default=[150],
                   help="Gaussian sizes for the timing part (the reference takes about 45 s for "
                        "one QP and 90 s for a DC run at n = 500)")
    p.add_argument("--n-test", type=int, default=20000, help="test sample size (paper: 50000)")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 replication, n <= 150, "
                   "a 7-point grid, 5000 test points")
    args = p.parse_args(argv)
    from hiercvx.estimators.tuning import wang_C_grid

    if args.quick:
        args.sizes = [s for s in args.sizes if s <= 150] or [50]
        args.grid_step, args.n_test, args.reps = 10, 5000, 1
    grid = wang_C_grid(args.grid_step)
    settings = []
    for ex in args.examples:
        for kernel in args.kernels:
            for n in (args.sizes if ex == 3 else [100]):
                settings.append((ex, kernel, n))
    reps = {s: (args.reps if args.reps is not None else (4 if s[2] <= 150 else 1)) for s in settings}
    tasks = [(ex, n, kernel, seed, m) for (ex, kernel, n) in settings
             for seed in range(reps[(ex, kernel, n)]) for m in ["Bayes"] + args.methods]
    tasks.sort(key=lambda t: -t[1] * (3 if t[2] == "gaussian" else 1))  # big tasks first
    t0 = time.perf_counter()
    print(f"# Wang, Shen & Pan, section 4.1: {len(settings)} settings, "
          f"{sum(reps.values())} replications in all, grid of {len(grid)} C values "
          f"({grid[0]:.3g}..{grid[-1]:.3g}), {args.n_test} test points, {args.n_jobs} jobs",
          flush=True)
    rows = Parallel(n_jobs=args.n_jobs, verbose=0)(
        delayed(run_task)(ex, n, kernel, seed, m, grid, args.n_test) for ex, n, kernel, seed, m in tasks)
    print(report(rows, settings, reps))
    secs = defaultdict(float)
    for r in rows:
        secs[r["method"]] += r["seconds"]
    print("\nCPU seconds per method (tuning + testing, all settings): "
          + ", ".join(f"{m} {s:.0f}" for m, s in secs.items()))
    print(f"simulations: {time.perf_counter() - t0:.0f} s wall clock")
    if not args.no_timing:
        print(timing(rbf_sizes=args.timing_rbf_sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
