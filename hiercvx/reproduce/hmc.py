"""The Clus-HMC ARFF data the real-data tables read, and how they say when it is absent.

:func:`data_dir` is ``$HIERCVX_HMC_DATA`` if set, else ``shared/data/hmc`` beside the checkout
(``~/hiercvx_data/hmc`` for an installed copy), read at each call so that ``hiercvx reproduce
--data DIR`` (which sets the variable) reaches the local worker processes too (``--n-jobs``;
the workers of a Dask cluster read their own environment).  Every
table that needs a file registers :func:`missing` for its files (``Table.missing_data``):
``run_table`` then reports the table as skipped, and ``hiercvx reproduce`` exits with an error
naming the absent files and how to point at them.

:func:`load_multilabel` reads a split as the Cai thesis's multi-label experiments need it
(section 7.1 / 3.1): label sets reduced to their most specific members (ancestors are implied),
labels on internal nodes given a "self" leaf (``Hierarchy.with_self_leaves``), samples without
a label left out; missing feature values stay NaN (imputed inside each method's pipeline).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datasets import load
from ..datasets._common import HMC_DATA_ENV, hmc_data_dir, hmc_data_source
from ..hierarchy import Hierarchy, most_specific

# name -> (training files, test files)
MULTILABEL_SETS = {
    "cellcycle_FUN": (("cellcycle_FUN.train.arff", "cellcycle_FUN.valid.arff"), ("cellcycle_FUN.test.arff",)),
    "Enron_corr": (("Enron_corr_trainvalid.arff",), ("Enron_corr_test.arff",)),
}


def data_dir() -> Path:
    """The folder of the Clus-HMC ARFF files (:func:`hiercvx.datasets._common.hmc_data_dir`)."""
    return hmc_data_dir()


def how_to_point() -> str:
    """Where the data folder came from and how to name another, for the messages of absent
    files."""
    return (f"looked in {data_dir()} ({hmc_data_source()}); put the Clus-HMC ARFF files there, "
            f"or set {HMC_DATA_ENV}=DIR (`hiercvx reproduce --data DIR`) to the folder that "
            "holds them")


def missing(files) -> str | None:
    """Why a table cannot run here (the files of ``files`` absent from :func:`data_dir`), or
    None."""
    folder = data_dir()
    absent = [str(folder / f) for f in files if not (folder / f).exists()]
    return f"data files not found: {', '.join(absent)}; {how_to_point()}" if absent else None


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


def load_multilabel(name: str) -> Split:
    """The multi-label split ``name`` of :data:`MULTILABEL_SETS` in :func:`data_dir` (module
    docstring; cached per process and folder, so replications in one worker read the files
    once)."""
    return _load_multilabel(name, data_dir())


@functools.cache
def _load_multilabel(name: str, folder: Path) -> Split:
    train_files, test_files = MULTILABEL_SETS[name]
    train = [load(folder / f) for f in train_files]
    test = [load(folder / f) for f in test_files]
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
