"""Epoch time of the hierarchical perceptrons on 10^5 synthetic examples.

Cai thesis 7.1.1 data (``make_cai_synthetic``: multi-label, perfect tree, fan-out 3, depth 3,
27 classes), 10^5 examples, 100 features, dense and as CSR.  For each variant / update the
script prints the time per epoch, the updates per epoch, and the ratio to scikit-learn's
``Perceptron`` (one-vs-rest over the classes, one binary problem per class, on the first label
of each example) measured in the same run on the same matrix: the peer does q binary
perceptron epochs, ours one ranking epoch over all pairs of every example.  The last column
is the training hinge of (4.10) at the returned weights (the solution's ``objective``).

    .venv/bin/python benchmarks/bench_perceptron_epochs.py [--quick]
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Perceptron

from hiercvx.datasets import make_cai_synthetic
from hiercvx.models import hsvm
from hiercvx.solvers.perceptron import perceptron

CONFIGS = [("online", "perceptron"), ("averaged", "perceptron"), ("online", "hieron"),
           ("averaged", "hieron")]


def _peer_epoch(X, y_first) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        Perceptron(max_iter=2, tol=None, shuffle=True, random_state=0).fit(X, y_first)
    return (time.perf_counter() - t0) / 2


def main(quick: bool = False):
    n = 20_000 if quick else 100_000
    epochs = 2 if quick else 3
    t0 = time.perf_counter()
    ds = make_cai_synthetic(n_samples=n, n_features=100, branching=3, depth=3, random_state=0)
    _, _, data = hsvm.prepare(ds.X, ds.y, ds.hierarchy)
    print(f"data: n={n}, d=100, q={data.n_classes}, pairs={data.n_pairs} "
          f"(generated and prepared in {time.perf_counter() - t0:.1f}s)")
    y_first = np.array([min(s) for s in ds.y])
    perceptron(ds.X[:50], _prepared_head(ds, 50), max_epochs=1)  # compile the numba kernels first
    dense = np.ascontiguousarray(ds.X)
    mats = {"dense": dense, "csr (100% nnz)": sp.csr_matrix(dense)}
    print(f"{'matrix':>16} {'variant':>9} {'update':>10} {'s/epoch':>8} {'updates/ep':>10} "
          f"{'sklearn OvR s/ep':>16} {'ratio':>6} {'hinge/n':>8}")
    for name, X in mats.items():
        peer = _peer_epoch(X, y_first)
        for variant, update in CONFIGS:
            res = perceptron(X, data, variant=variant, update=update, max_epochs=epochs, random_state=0)
            per_epoch = res.solve_time / res.n_epochs
            print(f"{name:>16} {variant:>9} {update:>10} {per_epoch:>8.3f} "
                  f"{res.n_updates / res.n_epochs:>10.0f} {peer:>16.3f} {per_epoch / peer:>6.2f} "
                  f"{res.objective / X.shape[0]:>8.3f}")
        sys.stdout.flush()


def _prepared_head(ds, m):
    return hsvm.prepare(ds.X[:m], ds.y[:m], ds.hierarchy).data


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
