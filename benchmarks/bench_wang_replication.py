"""Where one replication of ``hiercvx reproduce wang-table3`` / ``wang-table4`` spends its time.

One setting of Wang, Shen & Pan's Example 3 (a kernel and a training size n): the samples of
one replication (``hiercvx.reproduce.wang.make_data``), then every method tuned over the
61-point grid and scored on the test sample exactly as the table does it
(``hiercvx.reproduce.wang.run_method``), the wall clock per method printed as it finishes.
``--profile`` adds cProfile's most expensive functions over all the methods; ``--grid-step``
and ``--n-test`` shrink the run (every k-th grid point, a smaller test sample).

    .venv/bin/python benchmarks/bench_wang_replication.py                      # Gaussian, n = 500
    .venv/bin/python benchmarks/bench_wang_replication.py --n 1500 --grid-step 10 --profile

Measured 2026-11-28 (session 20, two niced ``hiercvx reproduce wang-table4`` workers beside
it), ``--n 500`` (the default): SVM 6.4 s, psi 27.8 s, HSVM_c 11.2 s, SHSVM 6.0 s, HSVM 4.6 s,
HPSI 22.5 s, Bayes 0.1 s; the profile's first lines are the sibling QP's Newton matrices
(``primitives.kronecker_sum``, 18 s of 78 s), their solves and Cholesky factorizations.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from hiercvx.estimators.tuning import wang_C_grid
from hiercvx.reproduce import wang


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=500, help="training size (Tables 3-4: 50..1500)")
    p.add_argument("--kernel", choices=("linear", "gaussian"), default="gaussian",
                   help="gaussian: Table 4, linear: Table 3")
    p.add_argument("--seed", type=int, default=777, help="seed of the replication's samples")
    p.add_argument("--grid-step", type=int, default=1, help="every k-th of the 61 grid points")
    p.add_argument("--n-test", type=int, default=wang.DEFAULTS.n_test)
    p.add_argument("--methods", nargs="+", default=list(wang.METHODS) + ["Bayes"])
    p.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    p.add_argument("--top", type=int, default=20, help="functions the profile prints")
    args = p.parse_args(argv)

    train, tune, test = wang.make_data(3, args.n, args.seed, args.n_test)
    grid = wang_C_grid(args.grid_step)
    print(f"Example 3, {args.kernel}, n = {args.n}, {grid.size} grid points, "
          f"{args.n_test} test points")
    prof = cProfile.Profile() if args.profile else None
    total = 0.0
    for method in args.methods:
        t0 = time.perf_counter()
        if prof is not None:
            prof.enable()
        values, best_C = wang.run_method(method, args.kernel, grid, train, tune, test)
        if prof is not None:
            prof.disable()
        dt = time.perf_counter() - t0
        total += dt
        print(f"  {method:7s} {dt:7.1f} s   TE_0-1 {values['TE_0-1']:.3f}   C {best_C:.3g}",
              flush=True)
    print(f"  {'all':7s} {total:7.1f} s")
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
