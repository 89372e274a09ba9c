"""The margin engine on the problems users bring: noisy labels, few features, many samples.

Rows (issue "The fast side made fast"):

- random labels on a 25-node tree (root -> 4 -> 20 leaves), n = 600, d = 20, C = 1;
- the same tree with n = 1000 and class signal 0 / 0.5 / 1 / 2 (x = signal * class mean +
  N(0, I); a leaf's mean is the sum of its ancestors' random means; signal 0 = random labels).

Thesis defaults: loss Delta_h, attributes 1/sqrt(depth), slack rescaling.  Per row, in one run:

- reference: ``hsvm.primal`` declared, compiled and solved by CLARABEL, certified (wall clock
  of declare + compile + solve, one run);
- working set (thesis Algorithm 2), interior point and the engine's own choice (``auto``),
  each ``prepare`` + ``solve`` at tol 1e-8 (certified relative gap), best of ``--repeat``
  runs after a warm-up (numba compiled beforehand), max 10000 passes;
- ``rel``: (fast objective - reference objective) / reference objective; ``x``: reference
  time / fast time.

``--imageclef``: the whole ImageCLEF07A training set (10000 x 80, 63 leaves, standardized,
C = 1, intercept) with the estimators' defaults: LIBLINEAR Crammer–Singer (``LinearSVC``,
default tol; its objective recomputed), ``MulticlassSVC()`` and ``HierarchicalSVC()`` (time,
certified gap, passes), and the Crammer–Singer solver run to LIBLINEAR's objective (the tol
that certifies it: time at equal objective).

``--imageclef-noisy``: 3000 of those samples (``np.random.default_rng(0)`` draws them) with
their labels permuted among them, ``HierarchicalSVC()`` at its defaults beside the CVXPY
reference (``hsvm.primal`` with the estimator's defaults, 16 M nonzeros: past the reference's
default size limit, so ``max_size`` is raised; certified; it ran for more than 48 minutes and
10 GB on 2026-11-25 without finishing, so the fit is printed first): the noisy row
where Algorithm 2 had stalled (10000 passes, 673 s, gap 7.1e-5, before the engine handed
degenerate supports to the interior point).

``--imageclef-face``: ``HierarchicalSVC()`` on that training set twice in one run, its face
steps (:mod:`hiercvx.solvers.face`) factorizing every round afresh (``update_share = 0``),
then reusing the previous round's factor (the default): the face steps' time, the fresh
factorizations and bordered updates, passes and fit time.  2026-11-28 10:02 (session 19's
machine, the reproduce workers paused): face steps 16.7 s (12 fresh factorizations) -> 10.0 s
(3 fresh, 9 bordered): x0.60; fit 58.4 s -> 52.8 s (x0.90), 4757 passes and gap 6.2e-8 both.

Run: ``.venv/bin/python benchmarks/bench_engine.py [--repeat 3] [--quick] [--imageclef]
[--imageclef-only] [--imageclef-noisy] [--imageclef-face]`` (``--quick``: the n = 600 row and the n = 1000 row at signal 1 only).
Targets: random labels >= 10x, every n = 1000 row >= 50x, each at <= 1e-6 relative objective.

ImageCLEF07A, one run (2026-11-24, loaded 2-core machine, before -> after the face step of
:mod:`hiercvx.solvers.margin_dual`): LIBLINEAR 366 s -> 88 s (the load); ``MulticlassSVC()``
10000 passes, gap 2.6e-5, not converged -> 14 s, 2970 passes, gap 1e-12 (0.16x LIBLINEAR);
``HierarchicalSVC()`` 608 s, gap 3.9e-4, not converged -> 107 s, 5140 passes, gap 6e-8
(1.22x); Crammer–Singer to LIBLINEAR's objective 9.5 s (0.11x).  Then pair shrinking in
:mod:`hiercvx.solvers.working_set` and the one-pass certificate (one run, 2026-11-24):
LIBLINEAR 67.1 s, ``MulticlassSVC()`` 9.9 s (0.15x), ``HierarchicalSVC()`` 57.0 s, 5895
passes, gap 7.9e-7, converged (0.85x: target met; 81.2 s vs 95.7 s in an earlier, more
loaded run); Crammer–Singer to LIBLINEAR's objective 9.1 s (0.14x).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import hiercvx as hc
from hiercvx import datasets
from hiercvx.demo import DATA_DIR, deepest_labels
from hiercvx.estimators import HierarchicalSVC, MulticlassSVC
from hiercvx.exceptions import ProblemTooLargeError, SolverError
from hiercvx.formulations import hsvm
from hiercvx.models import multiclass
from hiercvx.models.hsvm import prepare
from hiercvx.solvers import crammer_singer, face, interior_point, margin_engine
from hiercvx.solvers.face_step import FaceStep
from hiercvx.solvers import working_set

SOLVERS = {
    "working set": lambda model: working_set.solve(model, C=1.0, tol=1e-8, max_iter=10000),
    "interior point": lambda model: interior_point.solve(model, C=1.0, tol=1e-8),
    "auto": lambda model: margin_engine.solve(model, C=1.0, tol=1e-8, max_iter=10000),
}


def tree_problem(n: int, signal: float, d: int = 20, seed: int = 1):
    """``(X, Y, H)``: the 25-node tree and ``n`` samples with class signal ``signal``."""
    rng = np.random.default_rng(seed)
    parents = {"root": None}
    for a in range(4):
        parents[f"{a}"] = "root"
        for b in range(5):
            parents[f"{a}/{b}"] = f"{a}"
    H = hc.Hierarchy.from_parents(parents)
    leaves = list(H.leaves)
    A = H.ancestor_matrix[H.indices(leaves)].toarray().astype(float)
    A[:, 0] = 0.0
    means = A @ rng.standard_normal((len(H), d)) / np.sqrt(2)
    k = rng.integers(len(leaves), size=n)
    X = signal * means[k] + rng.standard_normal((n, d))
    return X, [leaves[j] for j in k], H


def best_time(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_row(label, n, signal, repeat):
    X, Y, H = tree_problem(n, signal)
    t0 = time.perf_counter()
    try:
        ref = hsvm.primal(X, Y, H, C=1.0).solve(solver="CLARABEL")
        ref_time, ref_obj, ref_note = time.perf_counter() - t0, ref.objective, ""
    except SolverError as err:
        ref_time, ref_obj, ref_note = time.perf_counter() - t0, np.nan, f" (reference: {err})"
    cells = []
    for name, fn in SOLVERS.items():
        elapsed, res = best_time(lambda: fn(prepare(X, Y, H)), repeat)
        base = ref_obj if np.isfinite(ref_obj) else res.objective
        rel = (res.objective - base) / abs(base)
        cells.append((name, elapsed, res, rel))
    chosen = margin_engine.choose(prepare(X, Y, H))
    return label, n, ref_time, ref_obj, ref_note, cells, chosen


def imageclef_training_set(data_dir=DATA_DIR):
    """ImageCLEF07A's training set standardized, its deepest labels and hierarchy, or None
    (with a note) when the data directory does not hold it."""
    path = Path(data_dir) / "ImCLEF07A_Train.arff"
    if not path.exists():
        print(f"(ImageCLEF07A: {path} not found; skipped)")
        return None
    tr = datasets.load(path)
    return StandardScaler().fit_transform(tr.X), deepest_labels(tr.y, tr.hierarchy), tr.hierarchy


def announced_training_set(data_dir, what: str):
    """:func:`imageclef_training_set` with its header line (``what``: the row), or None."""
    data = imageclef_training_set(data_dir)
    if data is not None:
        X, _, H = data
        print(f"\nImageCLEF07A training set: {X.shape[0]} x {X.shape[1]}, {len(H.leaves)} "
              f"leaves, {what}")
    return data


def imageclef(data_dir=DATA_DIR):
    """The ImageCLEF07A rows (module docstring)."""
    data = announced_training_set(data_dir, "standardized, C = 1, intercept; estimators at "
                                  "their defaults")
    if data is None:
        return
    X, y, H = data
    t0 = time.perf_counter()
    ll = LinearSVC(multi_class="crammer_singer", C=1.0).fit(X, y)
    t_ll = time.perf_counter() - t0
    model = multiclass.prepare(X, y, fit_intercept=True)
    order = np.searchsorted(model.classes, ll.classes_)
    W, b = np.empty_like(ll.coef_), np.empty_like(ll.intercept_)
    W[order], b[order] = ll.coef_, ll.intercept_
    obj_ll = model.objective(W, 1.0, intercept=b)
    print(f"  LIBLINEAR Crammer-Singer    {t_ll:7.1f}s  objective {obj_ll:.6f} "
          f"({ll.n_iter_} iterations)")
    for est in (MulticlassSVC(), HierarchicalSVC(hierarchy=H)):
        t0 = time.perf_counter()
        est.fit(X, y)
        t_est = time.perf_counter() - t0
        res = est.result_
        print(f"  {type(est).__name__ + '()':<27} {t_est:7.1f}s  objective {res.objective:.6f} "
              f"gap {res.gap:.1e} ({res.solver}, {res.n_iter} iterations, "
              f"{res.extras.get('n_newton', 0)} face/Newton steps"
              f"{'' if res.converged else ', NOT converged'})  x LIBLINEAR {t_est / t_ll:.2f}")
        if isinstance(est, MulticlassSVC):
            lower = res.lower_bound
    matched = max((obj_ll - lower) / obj_ll, 1e-12)  # LIBLINEAR's certified suboptimality
    t0 = time.perf_counter()
    res = crammer_singer.solve(model, C=1.0, tol=matched, max_iter=100000)
    t_cs = time.perf_counter() - t0
    print(f"  Crammer-Singer at LIBLINEAR's objective (tol {matched:.1e}) {t_cs:7.1f}s  "
          f"objective {res.objective:.6f}  x LIBLINEAR {t_cs / t_ll:.2f}")


def imageclef_face(data_dir=DATA_DIR):
    """The face-step row (module docstring): fresh factorizations, then bordered updates."""
    data = announced_training_set(data_dir, "HierarchicalSVC() at its defaults; face steps "
                                  "factorizing every round / reusing the previous round's factor")
    if data is None:
        return
    X, y, H = data
    face_step = FaceStep.step
    seen = {}

    def timed(self, *args, **kwargs):  # the face steps' wall clock and the factor counters
        self.solver.options = dataclasses.replace(self.solver.options, update_share=seen["share"])
        t0 = time.perf_counter()
        out = face_step(self, *args, **kwargs)
        seen["time"] = seen.get("time", 0.0) + time.perf_counter() - t0
        seen["solver"] = self.solver
        return out

    FaceStep.step = timed
    try:
        times = {}
        for label, share in (("fresh every round", 0.0),
                             ("bordered updates", face.Options().update_share)):
            seen.clear()
            seen["share"] = share
            t0 = time.perf_counter()
            res = HierarchicalSVC(hierarchy=H).fit(X, y).result_
            t_fit = time.perf_counter() - t0
            fs = seen.get("solver")
            counts = (f"{fs.n_factor} fresh, {fs.n_update} bordered, {fs.n_fallback} dropped"
                      if fs is not None else "no face step")
            times[label] = (seen.get("time", 0.0), t_fit)
            print(f"  {label:<18} face steps {seen.get('time', 0.0):6.1f}s ({counts})  fit "
                  f"{t_fit:6.1f}s  {res.n_iter} passes  gap {res.gap:.1e}")
        (f0, t0_), (f1, t1_) = times.values()
        print(f"  bordered / fresh: face steps x{f1 / max(f0, 1e-12):.2f}, fit x{t1_ / t0_:.2f}")
    finally:
        FaceStep.step = face_step


def imageclef_noisy(data_dir=DATA_DIR, n=3000):
    """The noisy ImageCLEF07A row (module docstring)."""
    data = imageclef_training_set(data_dir)
    if data is None:
        return
    X, y, H = data
    y = np.asarray(y, dtype=object)
    rng = np.random.default_rng(0)
    keep = rng.permutation(len(y))[:n]
    X, y = X[keep], list(y[keep][rng.permutation(n)])
    print(f"\nImageCLEF07A, {n} training samples, labels permuted, standardized, C = 1, "
          "intercept; estimator defaults (tol 1e-6)")
    t0 = time.perf_counter()
    est = HierarchicalSVC(hierarchy=H).fit(X, y)
    elapsed, res = time.perf_counter() - t0, est.result_
    print(f"  HierarchicalSVC()           {elapsed:7.1f}s  objective {res.objective:.6f} gap "
          f"{res.gap:.1e} ({res.solver}, {res.n_iter} iterations"
          f"{'' if res.converged else ', NOT converged'})", flush=True)
    t0 = time.perf_counter()
    try:
        # the estimator's model (its defaults) declared past the reference's default size limit
        ref = hsvm.primal(X, y, H, C=1.0, fit_intercept=True, max_size=20_000_000).solve()
        t_ref, ref_obj, note = time.perf_counter() - t0, ref.objective, f"gap {ref.gap:.1e}"
    except (SolverError, ProblemTooLargeError) as err:
        t_ref, ref_obj, note = time.perf_counter() - t0, np.nan, str(err)[:120]
    print(f"  CVXPY reference (CLARABEL)  {t_ref:7.1f}s  objective {ref_obj:.6f} ({note}); "
          f"HierarchicalSVC() x reference {t_ref / elapsed:.2f}, "
          f"rel {(res.objective - ref_obj) / abs(ref_obj):+.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--imageclef", action="store_true", help="the ImageCLEF07A rows")
    parser.add_argument("--imageclef-only", action="store_true",
                        help="the ImageCLEF07A rows alone (not the tree rows)")
    parser.add_argument("--imageclef-noisy", action="store_true",
                        help="the noisy ImageCLEF07A row alone")
    parser.add_argument("--imageclef-face", action="store_true",
                        help="the face steps' factor reuse on ImageCLEF07A, off then on")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.imageclef_face:
        imageclef_face()
        return
    if args.imageclef_noisy:
        imageclef_noisy()
        return
    if args.imageclef_only:
        imageclef()
        return
    X, Y, H = tree_problem(60, 1.0)
    for fn in SOLVERS.values():  # numba compiles once
        fn(prepare(X, Y, H))
    rows = [("random labels", 600, 0.0)]
    rows += [("signal 1", 1000, 1.0)] if args.quick else [
        (f"signal {s:g}", 1000, s) for s in (0.0, 0.5, 1.0, 2.0)]
    print("hierarchical SVM (4.10), 25-node tree, d = 20, C = 1, tol 1e-8: fast solvers vs the "
          "CLARABEL reference")
    head = (f"{'row':>14} {'n':>5} {'reference':>10} | " + " | ".join(
        f"{name:>14}: {'time':>7} {'rel':>8} {'it':>5} {'x':>5}" for name in SOLVERS) +
        " | auto ran")
    print(head)
    print("-" * len(head))
    for label, n, ref_time, ref_obj, note, cells, chosen in (run_row(*r, args.repeat)
                                                             for r in rows):
        parts = [f"{label:>14} {n:>5} {ref_time:>9.2f}s"]
        for name, elapsed, res, rel in cells:
            flag = "" if res.converged else "*"
            parts.append(f"{'':>14}  {elapsed:>6.3f}s {rel:>+8.1e} {res.n_iter:>4d}{flag:1} "
                         f"{ref_time / elapsed:>5.1f}")
        print(" | ".join(parts) + f" | {chosen}{note}")
    print("\nit: passes (working set) or Newton steps (interior point); * = not converged "
          "within 10000 passes; x = reference time / fast time")
    if args.imageclef:
        imageclef()


if __name__ == "__main__":
    main()
