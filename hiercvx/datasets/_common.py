"""What every loader and generator of :mod:`hiercvx.datasets` shares: the :class:`Dataset`
container and the reading of a (possibly gzipped) UTF-8 text file into lines.

It sits below :mod:`.arff`, :mod:`.formats` and :mod:`.synthetic`, so that they import it
and not each other.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..exceptions import DataFormatError
from ..hierarchy import Hierarchy

__all__ = ["Dataset", "open_text", "read_lines"]


# ---------------------------------------------------------------------- container
@dataclass
class Dataset:
    """Features, labels and their hierarchy.

    ``X`` is ``(n_samples, n_features)`` (dense float with NaN for missing values, or
    CSR); ``y`` is either a list of frozensets of node names (multi-label, what the file
    loaders return) or a 1-D array of node names (single label, what the single-label
    generators return).  Labels are as given: *not* closed upward (use
    ``dataset.hierarchy.closure(dataset.y)``).  Generators fill ``bayes_rule`` (an object
    with ``predict(X)``) and ``bayes_error`` where the paper defines them.
    """

    X: np.ndarray | sp.spmatrix
    y: list | np.ndarray
    hierarchy: Hierarchy
    feature_names: list = field(default_factory=list)
    name: str = ""
    path: Path | None = None
    bayes_rule: object | None = None
    bayes_error: float | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def is_multilabel(self) -> bool:
        return not isinstance(self.y, np.ndarray)

    def label_sets(self) -> list[frozenset]:
        """``y`` as a list of frozensets (single labels become singletons)."""
        if self.is_multilabel:
            return list(self.y)
        return [frozenset((v,)) for v in self.y]

    def closure(self, sparse: bool = True):
        """The labels closed upward, ``(n_samples, n_nodes)`` bool (CSR by default)."""
        return self.hierarchy.closure(self.label_sets(), sparse=sparse)

    def __repr__(self) -> str:
        kind = "multi-label" if self.is_multilabel else "single-label"
        return (f"Dataset({self.name!r}, {self.n_samples} samples, {self.n_features} features, "
                f"{kind}, {self.hierarchy!r})")


def open_text(path: Path):
    """Open a text file, transparently gunzipping ``*.gz``; universal newlines."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="strict", newline=None)
    return open(path, encoding="utf-8", errors="strict", newline=None)


def read_lines(path) -> tuple[Path, list[str]]:
    """``(path, lines)`` of a UTF-8 text file (``*.gz`` gunzipped); a missing, unreadable or
    non-UTF-8 file raises :class:`~hiercvx.exceptions.DataFormatError`."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError("no such file; check the path", path=path)
    if path.is_dir():
        raise DataFormatError("is a directory, not a data file", path=path)
    try:
        with open_text(path) as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"is not UTF-8 text ({exc}); convert the file to UTF-8",
                              path=path) from None
    except (OSError, EOFError) as exc:
        raise DataFormatError(f"cannot be read: {exc}", path=path) from None
    return path, text.splitlines()
