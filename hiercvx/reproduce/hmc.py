"""The Clus-HMC ARFF data the real-data tables read, and how they say when it is absent.

``DATA_DIR`` is ``$HIERCVX_HMC_DATA`` if set, else ``shared/data/hmc`` beside the checkout; every table that
needs a file registers :func:`missing` for its files (``Table.missing_data``), so that
``hiercvx reproduce`` prints a "skipped" line and exits 0 when they are not there.

:func:`load_multilabel` reads a split as the Cai thesis's multi-label experiments need it
(section 7.1 / 3.1): label sets reduced to their most specific members (ancestors are implied),
labels on internal nodes given a "self" leaf (``Hierarchy.with_self_leaves``), samples without
a label left out; missing feature values stay NaN (imputed inside each method's pipeline).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..datasets import load
from ..datasets._common import hmc_data_dir
from ..hierarchy import Hierarchy, most_specific

DATA_DIR = hmc_data_dir()

# name -> (training files, test files)
MULTILABEL_SETS = {
    "cellcycle_FUN": (("cellcycle_FUN.train.arff", "cellcycle_FUN.valid.arff"), ("cellcycle_FUN.test.arff",)),
    "Enron_corr": (("Enron_corr_trainvalid.arff",), ("Enron_corr_test.arff",)),
}


def missing(files) -> str | None:
    """Why a table cannot run here (the files of ``files`` absent from ``DATA_DIR``), or None."""
    absent = [str(DATA_DIR / f) for f in files if not (DATA_DIR / f).exists()]
    return f"data files not found: {', '.join(absent)}" if absent else None


def files_of(*names) -> tuple[str, ...]:
    return tuple(f for name in names for part in MULTILABEL_SETS[name] for f in part)


@dataclass(frozen=True)
class Split:
    """Training and test parts over one hierarchy; ``y`` / ``y_test`` are label sets of
    leaves of ``hierarchy`` (frozensets)."""

    name: str
    hierarchy: Hierarchy
    X: np.ndarray
    y: tuple
    X_test: np.ndarray
    y_test: tuple

    def subsample(self, n_train: int, n_test: int, rng) -> Split:
        """A seeded random subset of ``n_train`` training and ``n_test`` test samples (all of
        a part when it is smaller), rows kept in file order."""
        tr = np.sort(rng.permutation(len(self.y))[:min(n_train, len(self.y))])
        te = np.sort(rng.permutation(len(self.y_test))[:min(n_test, len(self.y_test))])
        return Split(self.name, self.hierarchy, self.X[tr], tuple(self.y[i] for i in tr),
                     self.X_test[te], tuple(self.y_test[i] for i in te))


@functools.cache
def load_multilabel(name: str) -> Split:
    """The multi-label split ``name`` of :data:`MULTILABEL_SETS` (module docstring; cached per
    process, so replications in one worker read the files once)."""
    train_files, test_files = MULTILABEL_SETS[name]
    train = [load(DATA_DIR / f) for f in train_files]
    test = [load(DATA_DIR / f) for f in test_files]
    H = train[0].hierarchy
    parts = []
    for loaded in (train, test):
        X = np.vstack([np.asarray(ds.X, dtype=float) for ds in loaded])
        y = most_specific(H, [labels for ds in loaded for labels in ds.y])
        keep = [i for i, labels in enumerate(y) if labels]
        parts.append((X[keep], [y[i] for i in keep]))
    internal = {v for _, y in parts for labels in y for v in labels if not H.is_leaf(v)}
    paths = H.with_self_leaves(sorted(internal, key=H.index))   # node order: reproducible classes
    (X, y), (X_test, y_test) = parts
    return Split(name, paths.hierarchy, X, tuple(map(frozenset, paths.transform(y))), X_test,
                 tuple(map(frozenset, paths.transform(y_test))))
