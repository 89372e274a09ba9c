"""``hiercvx demo`` / ``make demo``: the main job, shown end to end.

1. ``hiercvx verify --quick``: every registered method's fast solvers against its certified
   references on the built-in problems (:mod:`hiercvx.verify`), as one table;
2. one fit / predict on real data: the hierarchical SVM (Cai thesis (4.10)) on ImageCLEF07A
   (Clus-HMC ARFF from ``../shared/data/hmc``, when present), beside the flat Crammer–Singer
   SVM on the same classes, scored by hierarchical F1 and exact match.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from . import datasets, metrics
from .estimators import HierarchicalSVC, MulticlassSVC
from .verify import format_table, verify

__all__ = ["run_demo", "real_data_fit", "deepest_labels", "DATA_DIR"]

logger = logging.getLogger(__name__)

#: where the shared real data sets live, relative to a checkout of the project
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "hmc"


def deepest_labels(label_sets, H) -> np.ndarray:
    """One label per sample: the deepest node of each (upward-closed) label set, which is the
    single path's end on single-path data such as ImageCLEF07A."""
    return np.array([max(s, key=H.depth) for s in label_sets], dtype=object)


def real_data_fit(data_dir=DATA_DIR, n_train: int = 2000, C: float = 1.0, out=print,
                  random_state: int = 0) -> dict | None:
    """Hierarchical vs flat SVM on ``n_train`` training images of ImageCLEF07A drawn at random
    (the file is sorted by class), scored on the whole test set; ``None`` (and a note) when the
    files are absent."""
    train, test = Path(data_dir) / "ImCLEF07A_Train.arff", Path(data_dir) / "ImCLEF07A_Test.arff"
    if not (train.exists() and test.exists()):
        out(f"(real data: {train.name} / {test.name} not found under {data_dir}; skipped)")
        return None
    tr, te = datasets.load(train), datasets.load(test)
    H = tr.hierarchy
    rows = np.sort(np.random.default_rng(random_state).choice(len(tr.y), n_train, replace=False))
    X_tr, y_tr = tr.X[rows], deepest_labels([tr.y[i] for i in rows], H)
    y_te = deepest_labels(te.y, H)
    out(f"Real data: ImageCLEF07A, {n_train} of {len(tr.y)} training images x {tr.X.shape[1]} "
        f"features, {len(te.y)} test images, {len(H.leaves)} leaves")
    results = {}
    for name, clf in (("hierarchical SVM (4.10)", HierarchicalSVC(hierarchy=H, C=C)),
                      ("flat Crammer-Singer", MulticlassSVC(C=C))):
        model = make_pipeline(StandardScaler(), clf)
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        seconds = time.perf_counter() - t0
        pred = model.predict(te.X)
        hf1 = metrics.hierarchical_f1(y_te, pred, hierarchy=H)
        exact = float(np.mean(pred == y_te))
        fitted = model[-1]
        out(f"  {name:<25} hierarchical F1 {hf1:.3f}  exact match {exact:.3f}  fit {seconds:5.1f}s  "
            f"certified gap {fitted.gap_:.1e}")
        results[name] = {"hierarchical_f1": hf1, "exact_match": exact, "seconds": seconds}
    return results


def run_demo(verbose: bool = True, data_dir=DATA_DIR) -> dict:
    """Verify every registered method (quick problems), then the real-data fit."""
    out = print if verbose else (lambda *a, **k: None)
    out("hiercvx verify --quick: every fast solver against its certified CVXPY reference\n")
    rows = verify(quick=True, verbose=verbose)
    out(format_table(rows) + "\n")
    real = real_data_fit(data_dir, out=out)
    return {"verify": rows, "real_data": real}
