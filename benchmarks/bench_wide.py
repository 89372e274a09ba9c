"""Wide and deep hierarchies as first-class rows.

Every estimator that takes a hierarchy is fitted (its default, fast solver) on

* ``star``: a star of ``--leaves`` leaves (default 5000) under one root, 60 samples x 5
  features, the labels spread over ``--classes`` leaves (default 3; ``1``: the one-class case);
* ``chain``: a path of ``--depth`` nodes (default 1000) whose two deepest nodes are the leaves
  (siblings at depth ``depth - 2``), the samples labelled with them alternately,

with the fit time, ``n_iter_``, the training accuracy and whether the solver certified its gap
(a ``ConvergenceWarning`` is reported as ``warn``).  Each fit runs in a child process with a
time cap (``--cap`` seconds, default 420: seven minutes), so one slow row
does not hide the others; a capped row prints ``> cap``.

    .venv/bin/python benchmarks/bench_wide.py [--quick] [--only NAME,...] [--rows star,chain]
        [--leaves 5000] [--depth 1000] [--classes 3] [--cap 420]

``--quick``: a 500-leaf star and a 100-node chain, cap 60 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

ESTIMATORS = ("HierarchicalSVC", "TopDownSVC", "OrthogonalTransferSVC", "SiblingMarginSVC",
              "HierarchicalPsiClassifier", "SequentialHierarchicalSVC",
              "NormalizedHierarchicalSVC", "SharedNormSVC", "HierarchicalPerceptron")

CHILD = r"""
import json, sys, time, warnings
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from hiercvx.hierarchy import Hierarchy
import hiercvx.estimators as E

name, row, size, n_classes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0)
X = rng.standard_normal((60, 5))
if row == "star":
    H = Hierarchy.from_parents({"r": None, **{f"c{i}": "r" for i in range(size)}})
    y = np.array([f"c{i % n_classes}" for i in range(60)], dtype=object)
else:  # a path of size - 2 nodes with two leaves at its bottom: depth size - 2
    spine = {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, size - 2)}}
    H = Hierarchy.from_parents({**spine, "a": f"n{size - 3}", "b": f"n{size - 3}"})
    y = np.array(["a" if i % 2 else "b" for i in range(60)], dtype=object)
kw = {"C": 0.5} if name in ("SharedNormSVC", "NormalizedHierarchicalSVC") else {}  # lam = 1
est = getattr(E, name)(hierarchy=H, **kw)
t0 = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    try:
        est.fit(X, y)
        error = None
    except Exception as exc:  # reported as the row's result
        error = f"{type(exc).__name__}: {str(exc)[:80]}"
elapsed = time.perf_counter() - t0
out = {"time": elapsed, "error": error,
       "warn": any(issubclass(w.category, ConvergenceWarning) for w in caught)}
if error is None:
    out["n_iter"] = getattr(est, "n_iter_", None)
    out["accuracy"] = float(np.mean(est.predict(X) == y))
print("RESULT " + json.dumps(out, default=str))
"""


def run_capped(code: str, args, cap: float):
    """Run ``code`` in a child Python with ``args``, at most ``cap`` seconds: its last
    ``RESULT {json}`` line as a dict, or the text of the table cell when it was capped or
    crashed."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                              capture_output=True, text=True, timeout=cap, check=False)
    except subprocess.TimeoutExpired:
        return f"{f'> {cap:.0f} s':>10}  (capped)"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"{time.perf_counter() - t0:9.2f}s  crashed: {tail[:100]}"
    return json.loads(lines[-1][len("RESULT "):])


def run_row(name: str, row: str, size: int, n_classes: int, cap: float) -> str:
    r = run_capped(CHILD, (name, row, size, n_classes), cap)
    if isinstance(r, str):
        return r
    if r["error"]:
        return f"{r['time']:9.2f}s  error: {r['error']}"
    return (f"{r['time']:9.2f}s  n_iter {r['n_iter']!s:>6}  train acc {r['accuracy']:.3f}"
            + ("  warn (not certified)" if r["warn"] else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(ESTIMATORS))
    ap.add_argument("--rows", default="star,chain")
    ap.add_argument("--leaves", type=int, default=None)
    ap.add_argument("--depth", type=int, default=None)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--cap", type=float, default=None)
    args = ap.parse_args(argv)
    leaves = args.leaves or (500 if args.quick else 5000)
    depth = args.depth or (100 if args.quick else 1000)
    cap = args.cap or (60.0 if args.quick else 420.0)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(ESTIMATORS)
    if unknown:
        ap.error(f"unknown estimators {sorted(unknown)}; choose from {ESTIMATORS}")
    for row in args.rows.split(","):
        size = leaves if row == "star" else depth
        what = (f"star, {size} leaves, labels on {args.classes} of them" if row == "star"
                else f"chain, {size} nodes, two leaves at depth {size - 2}")
        print(f"\n{what}; 60 samples x 5 features; cap {cap:.0f} s")
        for name in names:
            print(f"  {name:<28}{run_row(name, row, size, args.classes, cap)}", flush=True)


if __name__ == "__main__":
    main()
