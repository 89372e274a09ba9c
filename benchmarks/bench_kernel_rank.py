"""The hierarchical SVM with a Gaussian kernel on low-dimensional inputs: the interior point on
a low-rank factor of the kernel against the working-set solver and the CVXPY reference.

Data: Wang, Shen & Pan's Example 3 (``make_wang_example3``: 2-D inputs, 4 leaves on a
7-node tree), Gaussian kernel with the paper's width (the median distance between training
points of different classes, ``hiercvx.reproduce.wang.paper_sigma``), intercept, C = 1 and
C = 1e3 (the top of the paper's grid, where the margin is hard).  Per row, in one run:

* ``rank``: columns of the pivoted-Cholesky factor of K (dropped residual trace <= 1e-12
  trace(K)), the dimension the Newton step works in per class;
* ``auto``: ``margin_engine.solve`` (what ``HierarchicalSVC`` runs; the interior point here),
  tol 1e-6: time, certified gap;
* ``working set``: thesis Algorithm 2 at the same tol (its default 10000 passes at most);
* ``reference``: ``hsvm.dual`` by CLARABEL (n <= ``--max-reference-n``), and the relative
  difference of the fast objective to it.

    .venv/bin/python benchmarks/bench_kernel_rank.py [--n 500,1500] [--max-reference-n 500]
"""

from __future__ import annotations

import argparse
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from hiercvx import methods
from hiercvx.datasets.synthetic import make_wang_example3
from hiercvx.formulations import hsvm
from hiercvx.reproduce.wang import paper_sigma
from hiercvx.solvers import interior_point, margin_engine, working_set


def row(n: int, C: float, max_reference_n: int) -> str:
    ds = make_wang_example3(n, random_state=0)
    X, y, H = ds.X, ds.y, ds.hierarchy
    model = methods.get("hsvm").prepare(X, [frozenset([v]) for v in y], H, kernel="rbf",
                                        sigma=paper_sigma(X, y), fit_intercept=True)
    rank = interior_point.feature_dimension(model)
    t0 = time.perf_counter()
    fast = margin_engine.solve(model, C, tol=1e-6)
    t_fast = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        ws = working_set.solve(model, C, tol=1e-6)
        t_ws = time.perf_counter() - t0
    out = (f"{n:6d} {C:8.0e} {rank:5d} | {margin_engine.choose(model):>14} {t_fast:7.2f}s "
           f"gap {fast.gap:.1e} | {t_ws:7.2f}s gap {ws.gap:.1e}{'' if ws.converged else '*'} "
           f"x{t_ws / t_fast:6.1f}")
    if n <= max_reference_n:
        t0 = time.perf_counter()
        ref = hsvm.dual_from_model(model, C=C).solve()
        t_ref = time.perf_counter() - t0
        rel = (fast.objective - ref.objective) / abs(ref.objective)
        out += f" | {t_ref:7.2f}s rel {rel:+.1e} x{t_ref / t_fast:6.1f}"
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="500,1500")
    ap.add_argument("--C", default="1,1000")
    ap.add_argument("--max-reference-n", type=int, default=500)
    args = ap.parse_args(argv)
    row(40, 1.0, 0)  # compile the numba kernels before timing
    print("     n        C  rank |  auto ran          time  gap      | working set  gap       x "
          "| reference     rel         x   (* = not converged)")
    for n in map(int, args.n.split(",")):
        for C in map(float, args.C.split(",")):
            print(row(n, C, args.max_reference_n), flush=True)


if __name__ == "__main__":
    main()
