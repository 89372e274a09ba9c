"""Fast hierarchical SVM (Cai thesis Algorithm 2, ``solvers.working_set``) vs its CVXPY reference.

Problem: a synthetic 3-level tree (root -> 2 -> 4 -> 20 leaves), n = 1000 examples, d = 50
features, about 10% of the examples with a second leaf label (multi-label).  Each node has a
random mean; a leaf's class mean is the sum of its ancestors' means; x = mean of the example's
leaves + Gaussian noise, rows scaled by 1/sqrt(d).  Thesis defaults: loss Delta_h (half the
symmetric difference of the ancestor sets), attributes t = 1/sqrt(depth), slack rescaling, C = 1.

Reference: ``hsvm.primal`` (thesis (4.10)) declared, compiled and solved by CLARABEL, with its
certificate; time = declaration + compilation + solve (wall clock, one run).
Fast: ``models.hsvm.prepare`` + ``working_set.solve(model, tol=1e-6)`` (certified relative gap), best of
3 runs, after one warm-up call so that numba's one-off compilation is not counted.

Run: ``.venv/bin/python benchmarks/bench_hsvm_fast.py [--regimes] [--quick]`` (``--quick``: n = 300); ``--regimes`` adds a
noisier (more overlapping) and a cleaner data set (the passes the dual method needs grow with
the overlap of the classes).  Target: ratio >= 50.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import hiercvx as hc
from hiercvx.formulations import hsvm
from hiercvx.models.hsvm import prepare
from hiercvx.solvers import working_set

SEED = 0


def make_tree_data(n=1000, d=50, branching=(2, 2, 5), multi=0.1, noise=1.0, seed=SEED):
    rng = np.random.default_rng(seed)
    parents, level = {"root": None}, ["root"]
    for b in branching:
        nxt = []
        for p in level:
            for k in range(b):
                child = f"{p}/{k}" if p != "root" else str(k)
                parents[child] = p
                nxt.append(child)
        level = nxt
    H = hc.Hierarchy.from_parents(parents)
    leaves = list(H.leaves)
    q = len(leaves)
    node_mean = rng.standard_normal((len(H), d))
    A = H.ancestor_matrix[H.indices(leaves)].toarray().astype(float)
    A[:, 0] = 0.0  # the root's mean would shift every class alike
    class_mean = A @ node_mean / np.sqrt(len(branching))
    first = rng.integers(q, size=n)
    second = np.where(rng.random(n) < multi, rng.integers(q, size=n), first)
    X = 0.5 * (class_mean[first] + class_mean[second]) + noise * rng.standard_normal((n, d))
    X /= np.sqrt(d)
    Y = [frozenset({leaves[a], leaves[b]}) for a, b in zip(first, second)]
    return X, Y, H


def run(noise: float, C: float = 1.0, tol: float = 1e-6, n: int = 1000):
    X, Y, H = make_tree_data(n=n, noise=noise)
    t0 = time.perf_counter()
    model = prepare(X, Y, H)
    prep = time.perf_counter() - t0
    working_set.solve(prepare(X[:60], Y[:60], H), C=C, max_iter=3)  # numba warm-up
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fast = working_set.solve(model, C=C, tol=tol, max_iter=100_000)
        best = min(best, time.perf_counter() - t0)
    fast_time = prep + best

    t0 = time.perf_counter()
    problem = hsvm.primal(X, Y, H, C=C, max_size=10**8)
    ref = problem.solve(solver="CLARABEL")
    ref_time = time.perf_counter() - t0
    rel = abs(fast.objective - ref.objective) / max(1.0, abs(ref.objective))
    return dict(noise=noise, n=X.shape[0], pairs=model.data.n_pairs, ref_time=ref_time,
                ref_build=ref.build_time, ref_solve=ref.solve_time, ref_obj=ref.objective,
                ref_gap=ref.gap, fast_time=fast_time, fast_obj=fast.objective, fast_gap=fast.gap,
                passes=fast.n_iter, newton=fast.history.get("n_newton", 0), rel=rel,
                ratio=ref_time / fast_time)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", action="store_true", help="also noise 0.5 and 2.0")
    parser.add_argument("--quick", action="store_true", help="n=300, noise 1 only")
    args = parser.parse_args()
    noises = [1.0, 0.5, 2.0] if args.regimes and not args.quick else [1.0]
    n = 300 if args.quick else 1000
    warnings.simplefilter("ignore", category=UserWarning)
    rows = [run(noise, n=n) for noise in noises]
    print("hierarchical SVM, thesis (4.10): fast working-set solver vs CVXPY/CLARABEL reference")
    print(f"tree 2x2x5 (20 leaves, 27 nodes), n={n}, d=50, ~10% two labels, C=1, tol 1e-6\n")
    head = (f"{'noise':>5} {'pairs':>6} | {'ref build+solve':>19} {'ref objective':>15} {'ref gap':>8} | "
            f"{'fast':>7} {'fast objective':>15} {'fast gap':>8} {'passes':>6} {'newton':>6} | "
            f"{'rel diff':>8} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        ref = f"{r['ref_time']:>7.2f}s ({r['ref_build']:.1f}+{r['ref_solve']:.1f})"
        print(f"{r['noise']:>5.1f} {r['pairs']:>6d} | {ref} {r['ref_obj']:>15.8f} {r['ref_gap']:>8.1e} | "
              f"{r['fast_time']:>6.3f}s {r['fast_obj']:>15.8f} {r['fast_gap']:>8.1e} {r['passes']:>6d} "
              f"{r['newton']:>6d} | {r['rel']:>8.1e} {r['ratio']:>5.0f}x")
    print("\nratio = reference (declare + compile + solve) / fast (prepare + solve, best of 3, "
          "numba compiled beforehand); target >= 50x")


if __name__ == "__main__":
    main()
