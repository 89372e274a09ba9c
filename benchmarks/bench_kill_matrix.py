"""The oracle's kill matrix: every planted bug of :mod:`hiercvx.testing.bugs` against
``check_solver`` for every registered method, and the planted label-set inference bugs against
``check_inference``.

A cell says whether the wrong answer failed the check (``x``: it passed, a miss) and whether a
diagnosis named the bug (``caught+diag``) or only other, verified, statements were printed
(``caught+other``) or none (``caught``).  ``tests/test_oracle.py`` asserts the same matrix.

    python benchmarks/bench_kill_matrix.py [--methods hsvm nhsvm ...] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
import warnings

from hiercvx.testing.bugs import BUGS, format_kill_matrix, kill_matrix
from hiercvx.testing.inference import INFERENCE_BUGS, inference_kill_matrix


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=None, help="registered methods (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # skipped-problem and convergence warnings of the planted fits
    print(f"{len(BUGS)} planted solver bugs (option_ignored: one per option probe)")
    for bug in BUGS:
        print(f"  {bug.key:24s} {bug.what}")
    t0 = time.perf_counter()
    rows = kill_matrix(args.methods, seed=args.seed)
    print(f"\ncheck_solver kill matrix ({time.perf_counter() - t0:.0f} s)\n")
    print(format_kill_matrix(rows))
    t0 = time.perf_counter()
    inf = inference_kill_matrix(seed=args.seed)
    print(f"\ncheck_inference kill matrix ({time.perf_counter() - t0:.0f} s)\n")
    width = max(len(key) for key, *_ in INFERENCE_BUGS)
    what = {key: text for key, text, *_ in INFERENCE_BUGS}
    for key, caught, first in inf:
        print(f"  {key:{width}s}  {'caught' if caught else 'MISSED'}  {what[key]}: {first}")
    print(f"\n{sum(c for _, c, _ in inf)} of {len(inf)} planted inference bugs caught")
    missed = sum(not r.caught for r in rows) + sum(not c for _, c, _ in inf)
    unnamed = sum(r.diagnosis != "right" for r in rows)
    return 1 if missed or unnamed else 0


if __name__ == "__main__":
    raise SystemExit(main())
