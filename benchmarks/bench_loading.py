"""Loading and label-closure timings.

1. Every Clus-HMC ARFF file in ``../shared/data/hmc`` (relative to the repository): rows,
   features, nodes, tree or DAG, load time, and the time of ``H.closure(y, sparse=True)``.
2. LIBSVM parsing: a seeded 20000-line file with 50 nonzeros a line (and its gzipped copy),
   read by the strict :func:`load_libsvm` (every line checked against the grammar, every
   error with its line); the peer is scikit-learn's ``load_svmlight_file`` (C parser, which
   takes ``inf``, ``nan`` and ``1_0``), ratio printed.
3. The closure benchmark: 10^5 label sets on a random 10^4-node tree (built with
   ``Hierarchy.from_parents`` from a seeded random recursive tree), and 10^5 label sets
   resampled from the training labels of cellcycle_GO on its GO DAG.  The peer is a
   plain-Python closure (union of precomputed ancestor sets per sample) on the same
   label sets; the ratio peer / hiercvx is printed.

Run: ``.venv/bin/python benchmarks/bench_loading.py``.  Without the shared data the
file benchmarks are skipped (with a message) and the script exits 0.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file  # the peer of load_libsvm

from hiercvx import Hierarchy
from hiercvx.datasets import load_arff, load_libsvm
from hiercvx.datasets._common import hmc_data_dir

REPO = Path(__file__).resolve().parents[1]
HMC = hmc_data_dir()  # $HIERCVX_HMC_DATA, else shared/data/hmc
SEED = 0


def best_of(fn, repeats=3):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def python_closure(H: Hierarchy, label_sets):
    """The peer: per sample, the union of each label's ancestor set (names, inclusive)."""
    anc = {v: frozenset(H.ancestors(v, inclusive=True)) for v in H.nodes}
    return [frozenset().union(*(anc[v] for v in s)) for s in label_sets]


def closure_row(title, H, label_sets):
    t_h, Z = best_of(lambda: H.closure(label_sets, sparse=True))
    t_py, ref = best_of(lambda: python_closure(H, label_sets), repeats=1)
    # the two routes must agree (checked on the first rows, to keep the script quick)
    nodes = H.nodes
    for i in range(min(200, len(label_sets))):
        row = Z.indices[Z.indptr[i]:Z.indptr[i + 1]]
        assert {nodes[j] for j in row} == ref[i], f"closure mismatch on row {i}"
    print(f"{title:<44} {len(label_sets):>7} rows  {len(H):>6} nodes  nnz {Z.nnz:>9}  "
          f"hiercvx {t_h:7.3f} s   python {t_py:7.3f} s   ratio {t_py / t_h:6.1f}x")


def bench_files():
    if not HMC.is_dir():
        print(f"shared data directory {HMC} is absent: skipping the ARFF benchmarks")
        return None
    files = sorted(HMC.glob("*.arff"))
    print(f"ARFF files in {HMC}")
    print(f"{'file':<30} {'rows':>6} {'feat':>5} {'nodes':>6} {'kind':>5} {'load s':>8} "
          f"{'closure s':>10}")
    go = None
    for f in files:
        t0 = time.perf_counter()
        d = load_arff(f)
        t_load = time.perf_counter() - t0
        t_clo, _ = best_of(lambda: d.hierarchy.closure(d.y, sparse=True))
        kind = "tree" if d.hierarchy.is_tree else "DAG"
        print(f"{f.name:<30} {d.n_samples:>6} {d.n_features:>5} {len(d.hierarchy):>6} {kind:>5} "
              f"{t_load:8.3f} {t_clo:10.4f}")
        if f.name == "cellcycle_GO.train.arff":
            go = d
    return go


def random_tree(n_nodes: int, rng) -> Hierarchy:
    # random recursive tree: node i hangs under a uniformly chosen earlier node
    parent = [None] + [int(rng.integers(0, i)) for i in range(1, n_nodes)]
    return Hierarchy.from_parents({i: parent[i] for i in range(n_nodes)})


def random_label_sets(n_rows: int, n_nodes: int, rng):
    sizes = rng.integers(1, 4, size=n_rows)
    flat = rng.integers(1, n_nodes, size=int(sizes.sum()))
    cuts = np.cumsum(sizes)[:-1]
    return [frozenset(part.tolist()) for part in np.split(flat, cuts)]


def bench_libsvm(rng, n_rows: int = 20_000, nnz: int = 50, n_features: int = 5_000) -> None:
    """Strict LIBSVM loading against scikit-learn's C parser, plain and gzipped."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.svm"
        with open(path, "w") as fh:
            for _ in range(n_rows):
                cols = np.sort(rng.choice(n_features, nnz, replace=False)) + 1
                vals = rng.normal(size=nnz)
                labels = ",".join(map(str, rng.integers(1, 100, size=2)))
                fh.write(labels + " " + " ".join(f"{j}:{v:.6g}" for j, v in zip(cols, vals)) + "\n")
        with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        t_ours, data = best_of(lambda: load_libsvm(path))
        t_gz, _ = best_of(lambda: load_libsvm(str(path) + ".gz"))
        t_peer, (X_peer, _) = best_of(lambda: load_svmlight_file(str(path), multilabel=True))
        assert abs(data.X - X_peer).max() == 0  # the same matrix
        print(f"LIBSVM {n_rows} lines x {nnz} nonzeros: load_libsvm {t_ours:.3f} s "
              f"(gzipped {t_gz:.3f} s), sklearn load_svmlight_file {t_peer:.3f} s, "
              f"ratio {t_ours / t_peer:.2f}")


def main() -> int:
    rng = np.random.default_rng(SEED)
    go = bench_files()
    print()
    bench_libsvm(rng)
    print()
    print("closure of 10^5 label sets")
    t0 = time.perf_counter()
    H = random_tree(10_000, rng)
    t_build = time.perf_counter() - t0
    print(f"random 10^4-node tree: built in {t_build:.3f} s, depth {int(H.depths.max())}, "
          f"{len(H.leaves)} leaves")
    closure_row("random tree, 1-3 random nodes per row", H, random_label_sets(100_000, len(H), rng))
    if go is None:
        print("GO DAG closure skipped: cellcycle_GO.train.arff not available")
    else:
        idx = rng.integers(0, go.n_samples, size=100_000)
        closure_row("GO DAG, cellcycle_GO train resampled", go.hierarchy, [go.y[i] for i in idx])
    return 0


if __name__ == "__main__":
    sys.exit(main())
