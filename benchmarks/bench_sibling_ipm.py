"""The interior points of the sibling-margin family with and without Gondzio's centrality
correctors (:func:`hiercvx.solvers.primitives.centrality_correctors`), side by side in one run.

Psi-learning and HPSI (Wang, Shen & Pan (3)) solve one convex step (8) per DC iteration per
grid point of C; every step is an interior point whose cost is its Newton matrices (a dense
Cholesky each).  Rows, each the reproduction's own protocol (``hiercvx reproduce``):

* ``fun-linear``, ``fun-gaussian``: Table 5's protocol on one partition of the rebuilt FunCat
  genes (``hiercvx.reproduce.wang_funcat``; 299 training genes, 3-point C grid), psi and HPSI;
  the linear rows run the primal interior point (``solvers._sibling.ipm``), which has the
  correctors; the Gaussian psi row mostly the dual one (``dual_qp.solve_dual_qp``), which
  does not (they saved 5% of its factorizations and no time): a control row;
* ``example3-N``: Table 4's protocol (Example 3, Gaussian kernel, n = N training points, a
  test sample of 5000), psi and HPSI over every third point of the 61-point grid.

Per row: wall clock and Newton factorizations with ``max_correctors = 0`` (Mehrotra's method
alone, as before) and with the default, their ratios, and whether the test errors are
identical (the certified steps land on the same DC path).

    .venv/bin/python benchmarks/bench_sibling_ipm.py [--rows fun-linear,fun-gaussian,example3-500]

Measured 2026-11-28 (two niced ``hiercvx reproduce`` workers beside it).  First version (aim
``a + 0.2``, up to 3 correctors), 01:40 UTC: fun-linear 61.2 s / 706 factorizations -> 49.6 s /
593 (1.24x); fun-gaussian 102.6 s -> 98.4 s (1.04x; with the correctors then also in the dual
route: 247 -> 235 factorizations, no time saved, so that route keeps Mehrotra's steps alone);
example3-500 13.7 s / 3911 -> 13.3 s / 3580 (1.03x).  After every step shorter than 0.9
instead of 0.5: 1.19x / 1.01x / 1.04x in time for 1.27x / 1.12x / 1.25x fewer factorizations
(the extra solves cost what the factorizations saved), and a DC path of a test problem left
the reference's.  With the margin engine's rules, now the one shared kernel (aim
``1.5 a + 0.1``, up to 2 correctors), 02:10 UTC: fun-linear 58.2 s / 706 -> 49.3 s / 597
(**1.18x**), example3-500 13.3 s / 3911 -> 13.1 s / 3615 (1.02x); test errors identical on
every row.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import time

import numpy as np

from hiercvx.estimators.tuning import wang_C_grid
from hiercvx.reproduce import hmc, wang, wang_funcat
from hiercvx.solvers import dual_qp, primitives, sibling_qp
from hiercvx.solvers._sibling import ipm as sibling_ipm

COUNT = {"factor": 0}


def _counting(factor):
    def counted(*args, **kwargs):
        COUNT["factor"] += 1
        return factor(*args, **kwargs)
    return counted


# every Newton factorization of both interior points is counted
sibling_ipm.factor_newton = _counting(sibling_ipm.factor_newton)
dual_qp.DenseNewton.factor = _counting(dual_qp.DenseNewton.factor)
dual_qp.GroupNewton.factor = _counting(dual_qp.GroupNewton.factor)


def run_row(row: str) -> dict:
    if row.startswith("fun-"):
        kernel = row.split("-", 1)[1]
        X, y, H = wang_funcat.load_two_branches()
        parts = wang_funcat.partition(len(y), np.random.default_rng(5), wang_funcat.PAPER_SIZES)
        grid = wang_C_grid(wang_funcat.DEFAULTS.grid_step)
        return {m: wang_funcat.run_method(X, y, H, parts, kernel, m, grid) for m in ("psi", "HPSI")}
    n = int(row.rsplit("-", 1)[1])
    train, tune, test = wang.make_data(3, n, 0, 5000)
    return {m: wang.run_method(m, "gaussian", wang_C_grid(3), train, tune, test)[0]
            for m in ("psi", "HPSI")}


def measure(row: str, correctors: int):
    sibling_ipm.centrality_correctors = functools.partial(primitives.centrality_correctors,
                                                          max_correctors=correctors)
    COUNT["factor"] = 0
    t0 = time.perf_counter()
    out = run_row(row)
    return time.perf_counter() - t0, COUNT["factor"], out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="fun-linear,fun-gaussian,example3-500")
    args = ap.parse_args(argv)
    default = inspect.signature(primitives.centrality_correctors).parameters[
        "max_correctors"].default
    print(f"{'row':<14} {'Mehrotra s':>10} {'factor.':>8} | {'correctors s':>12} {'factor.':>8} | "
          f"{'time x':>6} {'factor. x':>9} same errors")
    for row in args.rows.split(","):
        if row.startswith("fun-") and hmc.missing(wang_funcat.FILES):
            print(f"{row:<14} skipped: {hmc.missing(wang_funcat.FILES)}")
            continue
        t_off, f_off, out_off = measure(row, 0)
        t_on, f_on, out_on = measure(row, default)
        same = all(out_off[m] == out_on[m] for m in out_off)
        print(f"{row:<14} {t_off:10.1f} {f_off:8d} | {t_on:12.1f} {f_on:8d} | "
              f"{t_off / t_on:5.2f}x {f_off / f_on:8.2f}x {same}", flush=True)
    sibling_ipm.centrality_correctors = primitives.centrality_correctors


if __name__ == "__main__":
    main()
