"""Every registered method: fast solver(s) vs the certified CVXPY reference, side by side.

Driven by the registry (:mod:`hiercvx.methods`): for each method and each structure of its
built-in problems, the data are regenerated at ``--n`` samples x ``--d`` features the way the
method's own case was built (seeded), once with the class signal and once with the
labels randomly permuted among the samples (no signal: the hard row for dual methods, many
support vectors).  Per row:

- reference: the registered ``primal`` builder, declared + compiled + solved (default solver
  choice), wall clock of one run, with its certified gap;
- fast: each registered fast solver on the method's model (``prepare`` + ``solve`` with the
  registered options), best of ``--repeat`` runs after one warm-up (numba compiles once);
- ratio = reference seconds / fast seconds, and the relative objective difference.

Run: ``.venv/bin/python benchmarks/bench_methods.py [--n 400] [--d 10] [METHOD ...]``;
``--quick`` uses n = 60 (a smoke run).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

import numpy as np

from hiercvx import methods
from hiercvx.exceptions import HierCVXError
from hiercvx.testing.problems import regenerate


def permuted(case, seed: int = 1):
    """``case`` with its labels permuted among the samples (random labels)."""
    rng = np.random.default_rng(seed)
    Y = list(case.Y) if not isinstance(case.Y, np.ndarray) else case.Y
    order = rng.permutation(len(Y))
    Y = Y[order] if isinstance(Y, np.ndarray) else [Y[k] for k in order]
    return dataclasses.replace(case, name=case.name + ", random labels", Y=Y)


def scaled_cases(method, n: int, d: int):
    """One case per structure of ``method``, regenerated at ``n`` x ``d`` the way the method's
    own case was built (:func:`hiercvx.testing.problems.regenerate`), and its random-label twin."""
    seen = set()
    for case in method.cases(True):
        if case.structure in seen:
            continue
        seen.add(case.structure)
        p = regenerate(method, case, n, d, 0)
        big = dataclasses.replace(case, name=f"{case.name.split(' n=')[0]}, n={n}", X=p.X, Y=p.Y,
                                  H=p.H)
        yield big
        yield permuted(big)


def best_time(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def run(names, n: int, d: int, repeat: int):
    print(f"{'method':<12} {'case':<28} {'fast solver':<16} {'ref s':>8} {'fast s':>8} "
          f"{'ratio':>8} {'rel diff':>9} {'fast gap':>9} {'ref gap':>9}")
    for name in names:
        method = methods.get(name)
        for case in scaled_cases(method, n, d):
            try:
                t0 = time.perf_counter()
                ref = method.build("primal", case).solve(verbose=False)
                t_ref = time.perf_counter() - t0
            except HierCVXError as exc:
                print(f"{name:<12} {case.name:<28} reference failed: {exc}")
                continue
            for solver in method.fast_solvers:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    method.run_fast(solver, case)  # warm-up: numba compilation
                    fast, t_fast = best_time(lambda: method.run_fast(solver, case), repeat)
                rel = abs(fast.objective - ref.objective) / max(1.0, abs(ref.objective))
                print(f"{name:<12} {case.name:<28} {solver:<16} {t_ref:8.3f} {t_fast:8.3f} "
                      f"{t_ref / t_fast:7.1f}x {rel:9.1e} {fast.gap:9.1e} {ref.gap:9.1e}"
                      + ("" if fast.converged else "  (not converged)"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("methods", nargs="*", help="registered methods (default: all)")
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 60, one repeat")
    args = parser.parse_args(argv)
    n, repeat = (60, 1) if args.quick else (args.n, args.repeat)
    run(args.methods or methods.names(), n, args.d, repeat)


if __name__ == "__main__":
    main()
