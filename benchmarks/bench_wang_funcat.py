"""HSVM and HPSI on FunCat gene-function data: Wang, Shen & Pan, section 4.2 and Table 5.

The paper predicts MIPS FunCat categories of yeast genes within two top-level branches,
"cell cycle and DNA processing" and "transcription" (a tree of K = 23 categories, n = 1103
genes, p = 300 expression features), over 100 random partitions into 303 training, 300
tuning and 500 test genes, and reports the test errors (6) under l_{0-1}, l_Delta, l_sib,
l_sub and the weighted F1 of section 4.1 for SVM, psi-learning, SHSVM, HSVM and HPSI, with
their improvement over SVM, ``(TE(SVM) - TE) / TE(SVM)`` (no Bayes rule on real data).

Data here (``../shared/data/hmc/cellcycle_FUN.{train,valid,test}.arff``, the Clus-HMC yeast
cell-cycle set, FunCat 2.x numbering, 77 expression features with missing values), pooled
and rebuilt as close to the paper's setting as the files allow:

1. Branches: FunCat 2.x codes the paper's two branches as ``10`` (cell cycle and DNA
   processing) and ``11`` (transcription); the 2005 MIPS release the paper used numbered
   them 03 and 04.  Every annotation outside them is ignored; genes with none inside them
   are left out.
2. Depth: annotations are truncated at depth 3 (``10/03/01/01`` -> ``10/03/01``).  Depth 2
   leaves 7 categories, depth 3 about 25, depth 4 about 50; the paper's Figure 3 reaches
   level 4 (04.05.01.01) with only 23 categories in all, so depth 3 gives the closest size.
   A gene's label set is reduced to its most specific members.
3. Rare categories (``--min-category``, default 5): a category with fewer single-path genes
   than that is folded into its parent (deepest first, repeated), so that a category can
   reach the training, tuning and test parts of a partition.  No gene is dropped by this.
4. Multi-path genes (label set with several most specific members): the paper's rule is one
   new category per common label set, placed as a child of the lowest common ancestor of
   its members (our reading of the example on Figure 2(b), where the common members of two
   categories become a sibling of the nodes below their common ancestor).  Sets shared by
   at least ``--min-merged`` genes (default 20) become such categories; the genes of rarer
   sets are dropped and counted (each would be a category of a handful of genes).
   ``--multi-path drop`` drops every multi-path gene instead.
5. Partial paths: a label on an internal node goes to a "self" leaf under it (the blank
   nodes of the paper's Figure 3, ``Hierarchy.with_self_leaves``); the losses and F1 are
   computed on this tree, the one every method classifies into.
6. Each partition draws training / tuning / test parts in the paper's proportions
   303 : 300 : 500 of the genes kept; missing values are imputed with the training means and
   the features standardized with the training moments, inside the partition.

Methods, tuning and scores are those of ``hiercvx.reproduce.wang`` (section 4.1's protocol):
SVM (Liu & Shen's multi-class SVM), psi-learning, HSVM_c (Cai & Hofmann, with a regularized
intercept), SHSVM, HSVM and HPSI; C tuned on the tuning part over the paper's grid
``10^(l/10)`` (every ``--grid-step``-th point) by the l_{0-1} tuning error; the Gaussian
kernel's width by section 4.1's median rule on the training part.  A grid point whose fit
fails is scored as the worst (and counted); a partition on which a method fails altogether
is counted and left out of that method's averages.

TE_Delta is the raw ``|anc(Y) symdiff anc(d)|``; the paper's l_Delta is on an undocumented
scale (below 1 although l_{0-1} is 0.97), so compare it through the improvement over SVM,
which does not depend on the scale.  The paper's Table 5 has no HSVM_c row.  A "majority"
row (the training part's most frequent class, no fit) shows what no signal scores.

Cost.  Linear psi-learning and HPSI dominate: 10-60 s per fit (every DC step is a cold
interior-point solve of a (K'(p+1))-square Newton system), about 50 s of wall clock per
partition and grid point for all methods on two cores.  The defaults (3 partitions, the
4-point grid C = 10^-3, 10^-1, 10, 10^3) take about 10 minutes; ``--reps 100 --grid-step 1``
is the paper's protocol (days).  The script prints the partitions run and the time per fit.

    .venv/bin/python benchmarks/bench_wang_funcat.py            # default, about 10 min
    .venv/bin/python benchmarks/bench_wang_funcat.py --quick    # smoke run, about 2 min
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

from hiercvx.reproduce.wang import LOSSES, METHODS, scores, tune_and_test
from hiercvx.reproduce.wang_funcat import (
    apply_fold,
    lowest_common_ancestor,
    most_specific_codes,
    parent_code,
    prefixes,
)
from hiercvx.datasets._common import hmc_data_dir

DATA = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc
FILES = [f"cellcycle_FUN.{part}.arff" for part in ("train", "valid", "test")]
BRANCHES = ("10", "11")  # FunCat 2.x: cell cycle and DNA processing; transcription
PAPER_SIZES = (303, 300, 500)  # training, tuning, test genes per partition (of n = 1103)
ROOT = "FunCat"
MAJORITY = "majority"  # the training part's most frequent class: what "no signal" scores

# Table 5 of the paper: method -> (l_0-1, l_Delta, l_sib, l_sub, F1), means over 100 partitions
PAPER = {
    "linear": {"SVM": (0.972, 0.651, 0.926, 0.593, 0.007),
               "psi": (0.961, 0.633, 0.92, 0.581, 0.007),
               "SHSVM": (0.962, 0.552, 0.927, 0.442, 0.015),
               "HSVM": (0.960, 0.520, 0.918, 0.433, 0.008),
               "HPSI": (0.958, 0.517, 0.917, 0.430, 0.009)},
    "gaussian": {"SVM": (0.976, 0.669, 0.921, 0.617, 0.007),
                 "psi": (0.961, 0.660, 0.92, 0.601, 0.007),
                 "SHSVM": (0.963, 0.558, 0.920, 0.430, 0.016),
                 "HSVM": (0.961, 0.515, 0.920, 0.421, 0.008),
                 "HPSI": (0.960, 0.512, 0.920, 0.418, 0.009)},
}


# ---------------------------------------------------------------------- data
def _fold_rare(label_sets, min_category: int) -> tuple[dict, dict]:
    """Map every category with fewer than ``min_category`` single-path genes to its parent,
    deepest categories first so that a folded category's genes count for its parent.
    Returns the map and, for the report, ``{folded category: single-path genes moved}``."""
    counts = Counter(next(iter(s)) for s in label_sets if len(s) == 1)
    nodes = {c for s in label_sets for v in s for c in prefixes(v)}
    fold = {}
    for code in sorted(nodes, key=lambda c: (-c.count("/"), c)):
        parent = parent_code(code)
        if parent is not None and counts[code] < min_category:
            fold[code] = parent
            counts[parent] += counts[code]
    return fold, {c: counts[c] for c in fold if counts[c]}


def load_two_branches(data_dir=DATA, depth=3, min_category=5, multi_path="merge", min_merged=20):
    """The genes of the two FunCat branches as a single-label problem (module docstring,
    steps 1-5).  Returns ``(X, labels, H, info)``: ``X`` with NaN for missing values,
    ``labels`` leaf names of the tree ``H`` (self leaves for internal categories) and
    ``info`` the counts of what was kept, folded, merged and dropped."""
    from hiercvx import Hierarchy
    from hiercvx.datasets import load_arff

    parts = [load_arff(Path(data_dir) / f) for f in FILES]
    X = np.vstack([p.X for p in parts])
    raw = [s for p in parts for s in p.y]
    names = {v for p in parts for v in p.hierarchy.children(p.hierarchy.root)}
    missing = [b for b in BRANCHES if b not in names]
    if missing:
        raise SystemExit(f"FunCat branches {missing} are not top-level nodes of {FILES[0]}")
    trunc = [{"/".join(v.split("/")[:depth]) for v in s if v.split("/")[0] in BRANCHES}
             for s in raw]
    sets = [most_specific_codes(s) for s in trunc]
    fold, folded = _fold_rare(sets, min_category) if min_category > 1 else ({}, {})
    sets = [most_specific_codes({apply_fold(v, fold) for v in s}) for s in sets]
    in_branches = np.array([len(s) > 0 for s in sets])
    multi = Counter(s for s in sets if len(s) > 1)
    merged = ({s: " & ".join(sorted(s)) for s, c in multi.items() if c >= min_merged}
              if multi_path == "merge" else {})
    keep = np.array([len(s) == 1 or s in merged for s in sets])
    labels = [merged[s] if len(s) > 1 else next(iter(s)) for s, k in zip(sets, keep) if k]
    codes = sorted({c for s in sets if len(s) == 1 or s in merged for v in s for c in prefixes(v)})
    parents = {ROOT: None, **{c: parent_code(c) or ROOT for c in codes}}  # sorted: a fixed node order
    for s, name in sorted(merged.items(), key=lambda item: item[1]):
        parents[name] = lowest_common_ancestor(s) or ROOT
    H = Hierarchy.from_parents(parents)
    internal = sorted({v for v in labels if not H.is_leaf(v)}, key=H.index)
    pp = H.with_self_leaves(internal)
    y = np.asarray(pp.transform(labels), dtype=object)
    n_multi = int(sum(multi.values()))
    info = dict(n_files=len(raw), n_in_branches=int(in_branches.sum()), n_kept=int(keep.sum()),
                n_single=int(sum(len(s) == 1 for s in sets)), n_multi=n_multi,
                n_multi_sets=len(multi), n_merged_genes=int(sum(multi[s] for s in merged)),
                merged=sorted(merged.values()), folded=folded, n_self=len(internal),
                K=len(pp.hierarchy) - 1, n_leaves=len(pp.hierarchy.leaves), depth=depth)
    info["n_dropped_multi"] = n_multi - info["n_merged_genes"]
    return X[keep], y, pp.hierarchy, info


def partition(n, seed, sizes=PAPER_SIZES):
    """Random training / tuning / test rows in the paper's proportions."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_train = int(round(n * sizes[0] / sum(sizes)))
    n_tune = int(round(n * sizes[1] / sum(sizes)))
    return perm[:n_train], perm[n_train:n_train + n_tune], perm[n_train + n_tune:]


def preprocess(X, train, *others):
    """Impute with the training means and standardize with the training moments."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    prep = make_pipeline(SimpleImputer(strategy="mean", keep_empty_features=True),
                         StandardScaler()).fit(X[train])
    return [prep.transform(X[rows]) for rows in (train, *others)]


# ---------------------------------------------------------------------- one task
class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def run_task(X, y, H, seed, kernel, method, grid):
    """Tune one method on one partition (C on the tuning part, l_{0-1}); test scores."""
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    from hiercvx.estimators.sibling import paper_sigma
    from hiercvx.exceptions import HierCVXError

    tr, tu, te = partition(len(y), seed)
    collect = _Collect()  # failed grid fits (tuning), DC runs stopped by dc_max_iter (solver)
    hiercvx_log = logging.getLogger("hiercvx")
    hiercvx_log.addHandler(collect)
    row = dict(seed=seed, kernel=kernel, method=method, failed=None, n_failed_grid=0,
               n_fits=len(grid))
    t0 = time.perf_counter()
    try:
        with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Xtr, Xtu, Xte = preprocess(X, tr, tu, te)
            if method == MAJORITY:
                classes, counts = np.unique(y[tr], return_counts=True)
                pred = np.full(len(te), classes[np.argmax(counts)], dtype=object)
                row.update(scores(y[te], pred, H), best_C=float("nan"), n_fits=1)
            else:
                sigma = paper_sigma(Xtr, y[tr]) if kernel == "gaussian" else None
                pred, best_C, n_failed = tune_and_test(method, H, kernel, sigma, grid, Xtr, y[tr],
                                                       Xtu, y[tu], Xte)
                row.update(scores(y[te], pred, H), best_C=best_C, n_failed_grid=n_failed)
        row["n_gap_warnings"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    except HierCVXError as exc:  # SolverError, or every grid point failed: count, report
        row["failed"] = f"{type(exc).__name__}: {exc}"
    finally:
        hiercvx_log.removeHandler(collect)
    row["n_dc_max_iter"] = sum("no convergence within max_iter" in m for m in collect.messages)
    row["grid_errors"] = [m for m in collect.messages if "fit failed" in m][:3]
    row["seconds"] = time.perf_counter() - t0
    return row


# ---------------------------------------------------------------------- report
def _improvement(te, te_svm):
    from hiercvx.metrics import bayes_regret_improvement

    return 100.0 * bayes_regret_improvement(te, te_svm) if te_svm > 0 else float("nan")


def report(rows, kernels, methods, n_parts):
    lines = []
    for kernel in kernels:
        paper = PAPER[kernel]
        ok = defaultdict(list)
        for r in rows:
            if r["kernel"] == kernel and r["failed"] is None:
                ok[r["method"]].append(r)
        means = {m: np.mean([[r[l] for l in LOSSES] for r in rs], axis=0) for m, rs in ok.items()}
        lines.append(f"\n### {kernel.capitalize()} ({n_parts} partitions; paper: 100)\n")
        lines.append("| method | " + " | ".join(f"{l} ours (sd) / paper" for l in LOSSES)
                     + " | % impro. over SVM ours / paper (0-1, Delta, sib, sub) | median C |"
                     " failed partitions | failed grid fits | s per fit |")
        lines.append("|---|" + "---|" * (len(LOSSES) + 5))
        for m in [*methods, MAJORITY]:
            rs = ok.get(m, [])
            n_fail = sum(r["kernel"] == kernel and r["method"] == m and r["failed"] is not None
                         for r in rows)
            if not rs:
                lines.append(f"| {m} | " + " | ".join("-" for _ in LOSSES)
                             + f" | | | {n_fail} | | |")
                continue
            vals = np.array([[r[l] for l in LOSSES] for r in rs])
            sd = vals.std(axis=0, ddof=1) if len(rs) > 1 else np.zeros(len(LOSSES))
            pp = paper.get(m)
            cells = [f"{means[m][k]:.3f} ({sd[k]:.3f})" + (f" / {pp[k]:.3f}" if pp else "")
                     for k in range(len(LOSSES))]
            imp = ""
            if m != "SVM" and "SVM" in means:
                ours = [_improvement(means[m][k], means["SVM"][k]) for k in range(4)]
                theirs = ([_improvement(pp[k], paper["SVM"][k]) for k in range(4)] if pp
                          else [float("nan")] * 4)
                imp = ", ".join(f"{a:.1f}/{b:.1f}" if np.isfinite(b) else f"{a:.1f}/-"
                                for a, b in zip(ours, theirs))
            bestC = np.median([r["best_C"] for r in rs]) if m != MAJORITY else float("nan")
            grid_fail = sum(r["n_failed_grid"] for r in rs)
            secs = np.sum([r["seconds"] for r in rs]) / np.sum([r["n_fits"] for r in rs])
            lines.append(f"| {m} | " + " | ".join(cells) + f" | {imp} | {bestC:.3g} | {n_fail} | "
                         f"{grid_fail} | {secs:.2f} |")
        notes = []
        for m in methods:
            gap = sum(r.get("n_gap_warnings", 0) for r in ok.get(m, []))
            dc = sum(r["n_dc_max_iter"] for r in ok.get(m, []))
            if gap or dc:
                notes.append(f"{m}: {gap} fits short of the certified gap, {dc} DC runs stopped "
                             "at dc_max_iter")
        if notes:
            lines.append("\nWarnings (all grid fits): " + "; ".join(notes))
    failures = [r for r in rows if r["failed"] is not None or r["n_failed_grid"]]
    if failures:
        lines.append("\nFailures (first message each):")
        for r in failures:
            what = r["failed"] or "; ".join(r["grid_errors"])
            lines.append(f"- {r['method']} {r['kernel']} partition {r['seed']}: "
                         f"{r['n_failed_grid']} grid fits failed; {what}")
    return "\n".join(lines)


def describe(info, y, H):
    counts = Counter(y.tolist())
    lines = [f"# data: {len(FILES)} cellcycle_FUN files pooled, {info['n_files']} genes; "
             f"{info['n_in_branches']} annotated in FunCat {BRANCHES[0]} / {BRANCHES[1]}; "
             f"truncated at depth {info['depth']}",
             f"# single-path genes {info['n_single']}, multi-path genes {info['n_multi']} "
             f"({info['n_multi_sets']} distinct label sets): {info['n_merged_genes']} merged into "
             f"{len(info['merged'])} new categories, {info['n_dropped_multi']} dropped",
             "# rare categories folded into their parent (genes moved): "
             + (", ".join(f"{a} ({k})" for a, k in sorted(info["folded"].items())) or "none"),
             f"# kept n = {info['n_kept']} genes (paper: 1103), tree K = {info['K']} non-root "
             f"nodes (paper: 23) with {info['n_self']} self leaves, {info['n_leaves']} classes, "
             f"{len(counts)} of them with genes; features p = {info['p']} (paper: 300)",
             "# class sizes: " + ", ".join(f"{c} {k}" for c, k in sorted(counts.items()))]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3, help="random partitions (paper: 100)")
    p.add_argument("--grid-step", type=int, default=20,
                   help="every k-th point of the paper's 61-point C grid (1 = the paper's; "
                        "default 20: C = 10^-3, 10^-1, 10, 10^3)")
    p.add_argument("--kernels", nargs="+", default=["linear", "gaussian"],
                   choices=["linear", "gaussian"])
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    p.add_argument("--depth", type=int, default=3, help="FunCat depth kept (default 3)")
    p.add_argument("--min-category", type=int, default=5,
                   help="fold categories with fewer single-path genes into their parent (0: off)")
    p.add_argument("--multi-path", choices=["merge", "drop"], default="merge")
    p.add_argument("--min-merged", type=int, default=20,
                   help="genes a common label set needs to become a category of its own")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--data-dir", type=Path, default=DATA)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 partition, C in {10^-3, 10^3} (about 2 min)")
    args = p.parse_args(argv)
    from hiercvx.estimators.tuning import wang_C_grid

    if not all((args.data_dir / f).exists() for f in FILES):
        print(f"skipped: the FunCat files {FILES} are not in {args.data_dir}")
        return 0
    if args.quick:
        args.reps, args.grid_step = 1, 60
    grid = wang_C_grid(args.grid_step)
    X, y, H, info = load_two_branches(args.data_dir, depth=args.depth,
                                      min_category=args.min_category,
                                      multi_path=args.multi_path, min_merged=args.min_merged)
    info["p"] = X.shape[1]
    print(describe(info, y, H))
    sizes = [len(r) for r in partition(len(y), 0)]
    print(f"# {args.reps} random partitions of {len(y)} genes into {sizes[0]} training / "
          f"{sizes[1]} tuning / {sizes[2]} test (paper: 100 x 303 / 300 / 500); grid of "
          f"{len(grid)} C values ({grid[0]:.3g}..{grid[-1]:.3g}); {args.n_jobs} jobs", flush=True)
    tasks = [(seed, kernel, m) for kernel in args.kernels for seed in range(args.reps)
             for m in [*args.methods, MAJORITY]]
    # the slow ones first (linear psi and HPSI) so that the workers finish together
    slow = {"psi": 8, "HPSI": 8}
    tasks.sort(key=lambda t: -(5 if t[1] == "linear" else 1) * slow.get(t[2], 1))
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=args.n_jobs)(delayed(run_task)(X, y, H, seed, kernel, m, grid)
                                        for seed, kernel, m in tasks)
    print(report(rows, args.kernels, args.methods, args.reps))
    secs = defaultdict(float)
    for r in rows:
        secs[r["method"]] += r["seconds"]
    print("\nCPU seconds per method (tuning over the grid + testing, all partitions and kernels): "
          + ", ".join(f"{m} {secs[m]:.0f}" for m in args.methods))
    print(f"{MAJORITY}: the training part's most frequent class for every test gene (no fit)")
    print(f"wall clock: {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
