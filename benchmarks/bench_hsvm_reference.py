"""Build + solve time of the hierarchical SVM reference vs n, per QP solver.

Prints, for n in 100..1000, the declaration + compilation time and the solve time of
``hsvm.primal`` on the Cai thesis synthetic data (multi-label tree) with each installed QP
solver, the build/solve ratio, and the certified gap.  Build time should stay a small
fraction of solve time.

    .venv/bin/python benchmarks/bench_hsvm_reference.py [--quick]
"""

from __future__ import annotations

import sys
import time


import hiercvx as hc
from hiercvx.datasets import make_cai_synthetic
from hiercvx.formulations import hsvm
from hiercvx.reference import installed_solvers

QP_SOLVERS = [s for s in ("CLARABEL", "OSQP", "ECOS", "SCS") if s in installed_solvers()]
SOLVER_OPTIONS = {"OSQP": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 200000},
                  "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200000}}


def main(quick: bool = False):
    sizes = [100, 300] if quick else [100, 250, 500, 1000]
    print(f"{'n':>5} {'pairs':>6} {'solver':>9} {'build s':>8} {'solve s':>8} {'build/solve':>11} "
          f"{'objective':>14} {'gap':>9}")
    for n in sizes:
        ds = make_cai_synthetic(n_samples=n, n_features=20, branching=3, depth=2, random_state=0)
        for solver in QP_SOLVERS:
            t0 = time.perf_counter()
            prob = hsvm.primal(ds.X, ds.y, ds.hierarchy, C=1.0)
            declare = time.perf_counter() - t0
            try:
                sol = prob.solve(solver=solver, gap_tol=1e-4, **SOLVER_OPTIONS.get(solver, {}))
            except hc.SolverError as exc:
                print(f"{n:>5} {'':>6} {solver:>9}  failed: {exc}")
                continue
            build = declare + (prob.problem.compilation_time or 0.0)
            pairs = prob.data["margin_data"].n_pairs if "margin_data" in prob.data else -1
            print(f"{n:>5} {pairs:>6} {solver:>9} {build:>8.3f} {sol.solve_time:>8.3f} "
                  f"{build / max(sol.solve_time, 1e-9):>11.2f} {sol.objective:>14.8g} {sol.gap:>9.1e}")
    sys.stdout.flush()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
