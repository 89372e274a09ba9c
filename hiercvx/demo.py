"""``hiercvx demo`` / ``make demo``: the main job, shown end to end.

1. ``hiercvx verify --quick``: every registered method's fast solvers against its certified
   references on the built-in problems (:mod:`hiercvx.verify`), as one table;
2. one fit / predict on real data: the hierarchical SVM (Cai thesis (4.10)) on ImageCLEF07A
   (Clus-HMC ARFF, when present), fitted on the loader's label sets as they are, beside the flat
   Crammer–Singer SVM on the same classes, scored by hierarchical F1 and exact match.

The data folder is ``data_dir`` (``hiercvx demo --data DIR``), else ``$HIERCVX_HMC_DATA``, else
``shared/data/hmc`` beside the project's checkout, or ``~/hiercvx_data/hmc`` for an installed
copy (:func:`default_data_dir`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from . import datasets, metrics
from .datasets import _common
from .estimators import HierarchicalSVC, MulticlassSVC
from .hierarchy import most_specific
from .verify import format_table, verify

__all__ = ["run_demo", "real_data_fit", "deepest_labels", "default_data_dir", "DATA_DIR",
           "DATA_ENV"]

logger = logging.getLogger(__name__)

#: the environment variable naming the folder of the Clus-HMC ARFF files
DATA_ENV = _common.HMC_DATA_ENV
#: the data folder when ``$HIERCVX_HMC_DATA`` is not set: ``shared/data/hmc`` beside a checkout
#: of the project, ``~/hiercvx_data/hmc`` for an installed copy
DATA_DIR = _common.DEFAULT_HMC_DIR


def default_data_dir() -> Path:
    """``$HIERCVX_HMC_DATA`` when set, else :data:`DATA_DIR`."""
    return _common.hmc_data_dir()


def deepest_labels(label_sets, H) -> np.ndarray:
    """One label per sample of single-path data (ImageCLEF07A): the one most specific label of
    each label set (:func:`hiercvx.hierarchy.most_specific`)."""
    reduced = most_specific(H, label_sets)
    out = np.empty(len(reduced), dtype=object)
    out[:] = [max(s, key=H.depth) for s in reduced]
    return out


def real_data_fit(data_dir=None, n_train: int = 2000, C: float = 1.0, out=print,
                  random_state: int = 0) -> dict | None:
    """Hierarchical vs flat SVM on ``n_train`` training images of ImageCLEF07A drawn at random
    (the file is sorted by class; all of them when there are fewer), scored on the whole test
    set; ``None`` (and a note) when the files are absent.  The hierarchical SVM takes the
    loader's label sets as they are (each image's path with its ancestors); the flat SVM is
    given each path's end, the same classes."""
    data_dir = default_data_dir() if data_dir is None else Path(data_dir)
    train, test = data_dir / "ImCLEF07A_Train.arff", data_dir / "ImCLEF07A_Test.arff"
    if not (train.exists() and test.exists()):
        out(f"(real data: {train.name} / {test.name} not found under {data_dir}; skipped; "
            f"pass --data DIR or set {DATA_ENV})")
        return None
    tr, te = datasets.load(train), datasets.load(test)
    H = tr.hierarchy
    n_train = min(n_train, len(tr.y))
    rows = np.sort(np.random.default_rng(random_state).choice(len(tr.y), n_train, replace=False))
    X_tr, sets_tr = tr.X[rows], [tr.y[i] for i in rows]
    y_te = deepest_labels(te.y, H)
    out(f"Real data: ImageCLEF07A, {n_train} of {len(tr.y)} training images x {tr.X.shape[1]} "
        f"features, {len(te.y)} test images, {len(H.leaves)} leaves")
    results = {}
    for name, clf, y_tr in (
            ("hierarchical SVM (4.10)", HierarchicalSVC(hierarchy=H, C=C), sets_tr),
            ("flat Crammer-Singer", MulticlassSVC(C=C), deepest_labels(sets_tr, H))):
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


def run_demo(verbose: bool = True, data_dir=None, out=print) -> dict:
    """Verify every registered method (quick problems), then the real-data fit.

    Parameters
    ----------
    verbose : bool
        Show the progress bar of the verification; the table and the results are written
        either way (``hiercvx demo --quiet`` drops the bar only).
    data_dir : path-like, optional
        The folder of the ARFF files (default :func:`default_data_dir`).
    out : callable
        Where the table and the results go, one string per call.

    Returns
    -------
    dict
        ``"verify"``: the rows of :func:`hiercvx.verify.verify`; ``"real_data"``: the results
        of :func:`real_data_fit` (None when the files are absent).
    """
    out("hiercvx verify --quick: every fast solver against its certified CVXPY reference\n")
    rows = verify(quick=True, verbose=verbose)
    out(format_table(rows) + "\n")
    real = real_data_fit(data_dir, out=out)
    return {"verify": rows, "real_data": real}
