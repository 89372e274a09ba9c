"""Data containers and loaders of the plain-text formats other than ARFF.

- :class:`Dataset`: what every loader and generator of :mod:`hiercvx.datasets` returns.
- :func:`load_libsvm`: LIBSVM / SVMlight files with comma-separated multi-labels
  (``3,17 1:0.5 7:1.2``), parsed by :func:`sklearn.datasets.load_svmlight_file`.
- :func:`load_lshtc_hierarchy`: LSHTC hierarchy files, one ``parent child`` pair a line.
- :func:`labels_from_paths`: a column of path strings (``"A/A1/A1b"``) to a hierarchy and
  labels.
- :func:`load` (dispatch on extension and content) and :func:`describe` (a text summary),
  which the ``hiercvx data FILE`` command uses.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable, Iterable
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from ..exceptions import DataFormatError, HierarchyError, LabelError
from ..hierarchy import Hierarchy
from ._common import Dataset, open_text, read_lines
from .arff import load_arff

logger = logging.getLogger(__name__)

__all__ = [
    "Dataset",
    "load_libsvm",
    "load_lshtc_hierarchy",
    "labels_from_paths",
    "load",
    "describe",
]


def _maybe_int(token: str):
    try:
        return int(token)
    except ValueError:
        return None


# ---------------------------------------------------------------------- LSHTC hierarchy
def load_lshtc_hierarchy(path, root: Hashable | None = None) -> Hierarchy:
    """Read an LSHTC hierarchy file: one ``parent child`` pair per line.

    Tokens are whitespace separated.  When every token of the file is an integer the node
    names are ``int``; otherwise they are all strings (never a mix, so ``"7"`` and ``7``
    cannot both appear).  Blank lines and lines starting with ``#`` or ``%`` are skipped.
    Several top nodes hang under an artificial root (``root``, default ``"<root>"``).
    Errors (a line without exactly two tokens, a self-loop, a cycle) raise
    :class:`~hiercvx.exceptions.DataFormatError` with the line number.
    """
    path, lines = read_lines(path)
    pairs, linenos = [], []
    for k, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s or s[0] in "#%":
            continue
        tok = s.split()
        if len(tok) != 2:
            raise DataFormatError(
                f"expected 'parent child' (two whitespace-separated names), got {len(tok)} "
                f"token(s): {s[:80]!r}", path=path, line=k)
        if tok[0] == tok[1]:
            raise DataFormatError(f"self-loop: node {tok[0]!r} is given as its own parent",
                                  path=path, line=k)
        pairs.append(tok)
        linenos.append(k)
    if not pairs:
        raise DataFormatError("contains no 'parent child' line", path=path)
    ints = [[_maybe_int(a), _maybe_int(b)] for a, b in pairs]
    if all(a is not None and b is not None for a, b in ints):
        edges = [(a, b) for a, b in ints]
    else:
        edges = [(a, b) for a, b in pairs]
    try:
        return Hierarchy.from_edges(edges, root=root)
    except HierarchyError as exc:
        line = _cycle_line(edges, linenos)
        raise DataFormatError(f"invalid hierarchy: {exc}", path=path, line=line) from None


def _cycle_line(edges, linenos) -> int | None:
    """The line of one edge on a cycle, to point the user at it (None if acyclic)."""
    g = nx.DiGraph()
    g.add_edges_from(edges)
    try:
        cyc = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    where = {e: ln for e, ln in zip(edges, linenos)}
    return min(where.get((u, v), 10**12) for u, v, *_ in cyc)


# ---------------------------------------------------------------------- path strings
def labels_from_paths(strings: Iterable[str], sep: str = "/", multi_sep: str | None = None,
                      root: Hashable | None = None):
    """Hierarchy and labels from a column of path strings.

    Every prefix of a path is a node named by the prefix (``"A/A1/A1b"`` gives nodes
    ``"A"``, ``"A/A1"``, ``"A/A1/A1b"``), as in :meth:`Hierarchy.from_paths`.  With
    ``multi_sep`` (e.g. ``"@"`` or ``";"``) one string may hold several paths, and the
    labels are a list of frozensets; without it each string is one label and the labels
    are a 1-D object array of node names.  A label that stops at an internal node (a
    partial path, e.g. ``"A"`` next to ``"A/A1"``) stays as given.

    Returns ``(hierarchy, labels)``.  Empty strings or empty paths raise
    :class:`~hiercvx.exceptions.LabelError` naming the sample.
    """
    if isinstance(strings, (str, bytes)):
        raise LabelError("labels_from_paths takes a sequence of strings, one per sample, got "
                         "a single string; wrap it in a list")
    strings = list(strings)
    if not strings:
        raise LabelError("labels_from_paths got no samples")
    per_sample = []
    for i, s in enumerate(strings):
        if not isinstance(s, str):
            raise LabelError(f"sample {i}: label {s!r} is not a string; labels_from_paths takes "
                             "path strings like 'A/A1'")
        parts = [s] if multi_sep is None else s.split(multi_sep)
        parts = [p.strip() for p in parts]
        if any(not p for p in parts):
            raise LabelError(f"sample {i}: empty path in {s!r}; every sample needs a label "
                             "(and no doubled or trailing separators)")
        bad = [p for p in parts if any(c == "" for c in p.split(sep))]
        if bad:
            raise LabelError(f"sample {i}: path {bad[0]!r} has an empty component (leading, "
                             f"trailing or doubled {sep!r})")
        per_sample.append(parts)
    unique = list(dict.fromkeys(p for parts in per_sample for p in parts))
    H = Hierarchy.from_paths(unique, sep=sep, root=root)
    if multi_sep is None:
        labels = np.empty(len(per_sample), dtype=object)
        labels[:] = [parts[0] for parts in per_sample]
    else:
        labels = [frozenset(parts) for parts in per_sample]
    return H, labels


# ---------------------------------------------------------------------- LIBSVM / SVMlight
def _label_value(v: float):
    """LIBSVM labels are parsed as floats; integral ones become ``int``."""
    return int(v) if float(v).is_integer() else float(v)


def _data_line_numbers(lines) -> np.ndarray:
    """1-based line numbers of the sample lines of an SVMlight file (no comments, no blanks)."""
    return np.array([k for k, raw in enumerate(lines, start=1)
                     if raw.split("#", 1)[0].strip()], dtype=np.int64)


def _locate_svmlight_error(path: Path):
    """Find the first line an SVMlight parser would reject (slow path, only after a failure)."""
    _, lines = read_lines(path)
    for k, raw in enumerate(lines, start=1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        tok = s.split()
        if ":" in tok[0]:  # no label at all, the line starts with a feature
            return k, f"the line starts with {tok[0]!r}: the label(s) are missing"
        for lab in tok[0].split(","):
            if lab:
                try:
                    float(lab)
                except ValueError:
                    return k, f"label {lab!r} is not a number"
        for t in tok[1:]:
            idx, colon, val = t.partition(":")
            if not colon:
                return k, f"token {t!r} is not 'index:value'"
            if idx == "qid":
                continue
            try:
                int(idx)
                float(val)
            except ValueError:
                return k, f"token {t!r} is not 'index:value' with an integer index and a number"
    return None, None


def load_libsvm(path, hierarchy=None, n_features: int | None = None,
                zero_based="auto") -> Dataset:
    """Load a LIBSVM / SVMlight multi-label file (``label1,label2 idx:val idx:val ...``).

    Parsing is :func:`sklearn.datasets.load_svmlight_file` with ``multilabel=True``;
    ``X`` is CSR.  Integral labels become ``int``.  ``y`` is a list of frozensets.

    ``hierarchy``: a :class:`Hierarchy`, or the path of an LSHTC hierarchy file (read
    with :func:`load_lshtc_hierarchy`).  Every label must then be a node; a label ``7``
    also matches a node named ``"7"``.  A label that is not a node raises
    :class:`~hiercvx.exceptions.DataFormatError` naming the line.  Without a hierarchy
    the labels become the leaves of a flat one (every label a child of ``"<root>"``).
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError("no such file; check the path", path=path)
    if isinstance(hierarchy, (str, os.PathLike)):
        hierarchy = load_lshtc_hierarchy(hierarchy)
    elif hierarchy is not None and not isinstance(hierarchy, Hierarchy):
        raise LabelError(f"hierarchy must be a Hierarchy or the path of a hierarchy file, got "
                         f"{type(hierarchy).__name__}")
    try:
        X, raw = load_svmlight_file(str(path), n_features=n_features, multilabel=True,
                                    zero_based=zero_based)
    except (ValueError, RuntimeError) as exc:
        line, what = _locate_svmlight_error(path)
        msg = what if what is not None else str(exc)
        raise DataFormatError(f"not a valid LIBSVM/SVMlight file: {msg}", path=path,
                              line=line) from None
    X = X.tocsr()
    label_tuples = [tuple(_label_value(v) for v in labs) for labs in raw]
    if hierarchy is None:
        unique = list(dict.fromkeys(v for labs in label_tuples for v in labs))
        if not unique:
            raise DataFormatError("no sample has a label; give labels before the features",
                                  path=path)
        hierarchy = Hierarchy.from_edges([], nodes=unique)
        y = [frozenset(labs) for labs in label_tuples]
    else:
        mapping, unknown = {}, []
        for i, labs in enumerate(label_tuples):
            for v in labs:
                if v in mapping:
                    continue
                if v in hierarchy:
                    mapping[v] = v
                elif str(v) in hierarchy:
                    mapping[v] = str(v)
                else:
                    unknown.append((i, v))
                    mapping[v] = None
        if unknown:
            _, lines = read_lines(path)
            line_of = _data_line_numbers(lines)
            i, v = unknown[0]
            line = int(line_of[i]) if i < len(line_of) else None
            shown = ", ".join(repr(u) for _, u in unknown[:5])
            raise DataFormatError(
                f"{len(unknown)} label(s) are not nodes of the hierarchy ({shown}); the first, "
                f"{v!r}, is on this line. Check that the hierarchy file belongs to this data",
                path=path, line=line)
        y = [frozenset(mapping[v] for v in labs) for labs in label_tuples]
    return Dataset(X=X, y=y, hierarchy=hierarchy,
                   feature_names=[f"x{j}" for j in range(X.shape[1])],
                   name=path.name.split(".")[0] or path.name, path=path,
                   metadata={"format": "libsvm"})


# ---------------------------------------------------------------------- dispatch
_ARFF_EXT = {".arff"}
_LIBSVM_EXT = {".svm", ".svmlight", ".libsvm"}
_HIER_EXT = {".hier", ".hierarchy", ".cat_hier"}


def _sniff(path: Path) -> str:
    """Guess the format from the first meaningful line."""
    try:
        with open_text(path) as fh:
            for raw in fh:
                s = raw.strip()
                if not s or s[0] in "%#":
                    continue
                if s[0] == "@":
                    return "arff"
                tok = s.split("#", 1)[0].split()
                if any(":" in t for t in tok[1:]):
                    return "libsvm"
                if len(tok) == 2 and ":" not in s:
                    return "lshtc"
                break
    except (UnicodeDecodeError, OSError):
        pass
    raise DataFormatError(
        "cannot tell the format from the file name or its first line; supported: Clus-HMC "
        "ARFF (.arff), LIBSVM/SVMlight (.svm, .libsvm, .svmlight), LSHTC 'parent child' "
        "hierarchies (.hier)", path=path)


def load(path, format: str | None = None, **kwargs) -> Dataset:
    """Load any supported file: ARFF, LIBSVM/SVMlight, or an LSHTC hierarchy.

    The format comes from ``format`` (``"arff"``, ``"libsvm"``, ``"lshtc"``), else the
    extension (``.gz`` is looked through), else the first meaningful line.  Keyword
    arguments go to the loader (e.g. ``hierarchy=`` for LIBSVM).  A hierarchy file gives
    a :class:`Dataset` with no samples (``X`` of shape ``(0, 0)``).
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError("no such file; check the path", path=path)
    if format is None:
        suffixes = [s.lower() for s in path.suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes = suffixes[:-1]
        ext = suffixes[-1] if suffixes else ""
        if ext in _ARFF_EXT:
            format = "arff"
        elif ext in _LIBSVM_EXT:
            format = "libsvm"
        elif ext in _HIER_EXT:
            format = "lshtc"
        else:
            format = _sniff(path)
    if format == "arff":
        return load_arff(path, **kwargs)
    if format == "libsvm":
        return load_libsvm(path, **kwargs)
    if format == "lshtc":
        H = load_lshtc_hierarchy(path, **kwargs)
        return Dataset(X=np.zeros((0, 0)), y=[], hierarchy=H, feature_names=[],
                       name=path.name.split(".")[0], path=path,
                       metadata={"format": "lshtc-hierarchy"})
    raise DataFormatError(f"unknown format {format!r}; use 'arff', 'libsvm' or 'lshtc'",
                          path=path)


# ---------------------------------------------------------------------- summary
def _label_statistics(H: Hierarchy, label_sets: list) -> dict:
    """Label statistics over closed label sets; the root is left out of every count."""
    n = len(label_sets)
    given = np.fromiter((len(s) for s in label_sets), dtype=np.int64, count=n)
    Z = H.closure(label_sets, sparse=True).tocsr().astype(np.int32)
    not_root = np.ones(len(H), dtype=bool)
    not_root[0] = False
    Z = (Z @ sp.diags(not_root.astype(np.int32), dtype=np.int32)).tocsr()
    Z.eliminate_zeros()
    closed = np.diff(Z.indptr)
    # P[c, v] = 1 when v is a parent of c: (Z @ P)[i, v] counts v's children in sample i
    ei = H.edge_index
    P = sp.csr_matrix((np.ones(len(ei), dtype=np.int32), (ei[:, 1], ei[:, 0])), shape=(len(H),) * 2)
    child_count = (Z @ P).tocsr()
    deepest = Z - Z.multiply(child_count > 0)  # members none of whose children are members
    deepest = sp.csr_matrix(deepest)
    deepest.eliminate_zeros()
    internal = ~H.leaf_mask
    n_internal_deepest = deepest @ sp.diags(internal.astype(np.int32), dtype=np.int32)
    partial = np.asarray(n_internal_deepest.sum(axis=1)).ravel() > 0
    depths = H.depths
    max_depth = int(depths.max())
    D = sp.csr_matrix((np.ones(len(H), dtype=np.int32), (np.arange(len(H)), depths)),
                      shape=(len(H), max_depth + 1))
    per_depth = np.asarray((Z @ D).todense())  # (n, depth+1) labels at each depth
    used = np.asarray(Z.sum(axis=0)).ravel() > 0
    return {
        "given": given, "closed": closed, "partial": partial, "per_depth": per_depth,
        "used": used,
    }


def describe(dataset: Dataset) -> str:
    """A text summary: the hierarchy and the label statistics of ``dataset``.

    Hierarchy: tree or DAG, nodes, edges, leaves, depth (longest root path), nodes with
    several parents.  Samples: count, features, missing-value fraction, mean labels per
    sample as given and closed upward (the root not counted), the fraction of samples
    whose deepest label is an internal node (partial paths), samples without labels, and
    per depth the number of nodes and the mean number of (closed) labels per sample.
    """
    H = dataset.hierarchy
    depths = H.depths
    max_depth = int(depths.max())
    n_multi_parent = int(sum(len(p) > 1 for p in H.parent_indices))
    out = []
    title = dataset.name or "dataset"
    if dataset.path is not None:
        title += f"  ({dataset.path})"
    out.append(title)
    kind = "tree" if H.is_tree else "DAG"
    line = (f"hierarchy: {kind}, {len(H)} nodes, {len(H.edge_index)} edges, {len(H.leaves)} "
            f"leaves, depth {max_depth}, root {H.root!r}")
    if not H.is_tree:
        line += f", {n_multi_parent} nodes with several parents"
    out.append(line)
    n = dataset.n_samples
    if n == 0:
        out.append("samples: none (a hierarchy without data)")
        return "\n".join(out)
    X = dataset.X
    if sp.issparse(X):
        n_missing = int(np.isnan(X.data).sum())
        density = X.nnz / max(1, X.shape[0] * X.shape[1])
        feat = f"features: {X.shape[1]} (sparse, density {density:.4f})"
    else:
        Xa = np.asarray(X, dtype=float)
        n_missing = int(np.isnan(Xa).sum())
        feat = f"features: {X.shape[1]}"
    frac_missing = n_missing / max(1, X.shape[0] * X.shape[1])
    out.append(f"samples: {n}")
    out.append(f"{feat}, missing values {frac_missing:.2%} ({n_missing})")
    stats = _label_statistics(H, dataset.label_sets())
    n_empty = int((stats["closed"] == 0).sum())
    out.append(f"labels per sample: mean {stats['given'].mean():.3f} as given, "
               f"{stats['closed'].mean():.3f} closed upward (root not counted), "
               f"max {int(stats['closed'].max())}")
    out.append(f"partial paths: {stats['partial'].mean():.2%} of samples have a deepest label "
               f"that is an internal node")
    out.append(f"samples without labels: {n_empty}; nodes used by some sample: "
               f"{int(stats['used'].sum())} of {len(H) - 1} (root excluded)")
    out.append("depth  nodes  leaves  labels/sample  samples with a label there")
    leaf = H.leaf_mask
    pd = stats["per_depth"]
    for d in range(1, max_depth + 1):
        at = depths == d
        out.append(f"{d:>5}  {int(at.sum()):>5}  {int((at & leaf).sum()):>6}  "
                   f"{pd[:, d].mean():>13.3f}  {(pd[:, d] > 0).mean():>26.2%}")
    if dataset.bayes_error is not None:
        out.append(f"Bayes error (as defined by the source): {dataset.bayes_error:.4f}")
    return "\n".join(out)
