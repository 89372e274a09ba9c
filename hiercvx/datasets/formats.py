"""Data containers and loaders of the plain-text formats other than ARFF.

- :class:`Dataset`: what every loader and generator of :mod:`hiercvx.datasets` returns.
- :func:`load_libsvm`: LIBSVM / SVMlight files with comma-separated multi-labels
  (``3,17 1:0.5 7:1.2``), parsed strictly (every error names its line).
- :func:`load_lshtc_hierarchy`: LSHTC hierarchy files, one ``parent child`` pair a line.
- :func:`labels_from_paths`: a column of path strings (``"A/A1/A1b"``) to a hierarchy and
  labels.
- :func:`load` (dispatch on extension and content) and :func:`describe` (a text summary),
  which the ``hiercvx data FILE`` command uses.
"""

from __future__ import annotations

import inspect
import io
import logging
import os
import re
import warnings
from collections.abc import Hashable, Iterable
from decimal import Decimal
from pathlib import Path

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..exceptions import DataFormatError, HierarchyError, InputError, InputTypeError, LabelError
from ..hierarchy import ARTIFICIAL_ROOT, Hierarchy
from ._common import ColumnNames, Dataset, check_path, first_lines, read_lines
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


# A node id written as a plain decimal integer: ASCII digits, no sign, no leading zero, no
# underscore, so that int() of it is one-to-one ("08", "+2", "1_1" and non-ASCII digits are
# not integers here and keep their spelling).
_CANONICAL_INT = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_FIELD_SEP = re.compile(r"[ \t\v\f\r]+")  # ASCII whitespace only: other characters are data


def _is_canonical_int(token: str) -> bool:
    return _CANONICAL_INT.fullmatch(token) is not None


# ---------------------------------------------------------------------- LSHTC hierarchy
def load_lshtc_hierarchy(path, root: Hashable | None = None) -> Hierarchy:
    """Read an LSHTC hierarchy file: one ``parent child`` pair per line.

    Tokens are separated by ASCII blanks (space, tab, vertical tab, form feed); any other
    character, Unicode spaces included, is part of a node id.  When every token of the file
    is a plain decimal integer (ASCII digits, no sign, no leading zero, no underscore) the
    node names are ``int``; otherwise they are all strings, exactly as spelled, so
    distinct ids such as ``08`` and ``8``, ``+2`` and ``2`` or ``1_1`` and ``11`` stay
    distinct.  A UTF-8 byte-order mark is dropped.  Blank lines and lines starting with
    ``#`` or ``%`` are skipped.  Several top nodes hang under an artificial root
    (``root``, default ``"<root>"``).  Errors (a line without exactly two tokens, a
    self-loop, a cycle) raise :class:`~hiercvx.exceptions.DataFormatError` with the line
    number.
    """
    path, lines = read_lines(path)
    pairs, linenos = [], []
    for k, raw in enumerate(lines, start=1):
        s = raw.strip(" \t\v\f\r")
        if not s or s[0] in "#%":
            continue
        tok = _FIELD_SEP.split(s)
        if len(tok) != 2:
            raise DataFormatError(
                f"expected 'parent child' (two names separated by blanks), got {len(tok)} "
                f"token(s): {s[:80]!r}", path=path, line=k)
        if tok[0] == tok[1]:
            raise DataFormatError(f"self-loop: node {tok[0]!r} is given as its own parent",
                                  path=path, line=k)
        pairs.append(tok)
        linenos.append(k)
    if not pairs:
        raise DataFormatError("contains no 'parent child' line", path=path)
    if all(_is_canonical_int(a) and _is_canonical_int(b) for a, b in pairs):
        edges = [(int(a), int(b)) for a, b in pairs]
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
    ``"A"``, ``"A/A1"``, ``"A/A1/A1b"``), as in
    :meth:`Hierarchy.from_paths() <hiercvx.hierarchy.Hierarchy.from_paths>`.  With ``multi_sep``
    (e.g. ``"@"`` or ``";"``) one string may hold several paths, and the labels are a list of
    frozensets; without it each string is one label and the labels are a 1-D object array of node
    names.  A label that stops at an internal node (a partial path, e.g. ``"A"`` next to
    ``"A/A1"``) stays as given.

    The root: without ``root``, an artificial ``"<root>"`` above several top-level names, or
    the single top-level name itself (as
    :meth:`Hierarchy.from_paths() <hiercvx.hierarchy.Hierarchy.from_paths>`); with ``root``, a node
    of that name above the top-level names, even above a single one, which then stays a class of
    its own (``root`` equal to the single top-level name keeps it as the root).

    Returns ``(hierarchy, labels)``.  Empty strings or empty paths raise
    :class:`~hiercvx.exceptions.LabelError` naming the sample; a ``sep`` or ``multi_sep``
    that is not a non-empty string, or the two equal, raises
    :class:`~hiercvx.exceptions.InputError`.
    """
    _check_separators(sep, multi_sep)
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
    if root is not None and H.root != root:   # one top-level name: from_paths made it the root
        if root in H:
            raise HierarchyError(f"root={root!r} is already a node of the paths; pass "
                                 "root=<unused name>")
        H = Hierarchy([(root, H.root), *H.edges], nodes=[root, *H.nodes])
    if multi_sep is None:
        labels = np.empty(len(per_sample), dtype=object)
        labels[:] = [parts[0] for parts in per_sample]
    else:
        labels = [frozenset(parts) for parts in per_sample]
    return H, labels


def _check_separators(sep, multi_sep) -> None:
    """Refuse a separator that is not a non-empty string, and two equal ones."""
    for name, value in (("sep", sep), ("multi_sep", multi_sep)):
        if value is None and name == "multi_sep":
            continue
        if not isinstance(value, str):
            raise InputTypeError(f"{name} must be a non-empty string such as '/', got "
                                 f"{type(value).__name__} {value!r}")
        if not value:
            raise InputError(f"{name} must be a non-empty string such as '/', got ''")
    if sep == multi_sep:
        raise InputError(f"sep and multi_sep are both {sep!r}: one separates the levels of a "
                         "path, the other the paths of a sample; give them different values")


# ---------------------------------------------------------------------- LIBSVM / SVMlight
_INTEGER_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _label_value(token: str, v: float):
    """The number a label token spells: an integer token exactly (``int``, as float would
    merge 9007199254740993 into ...992), another integral number as ``int`` (exactly, through
    ``Decimal``), else the float ``v``."""
    if _INTEGER_RE.fullmatch(token):
        return int(token)
    if v.is_integer():
        return int(Decimal(token))
    return v


# Strict LIBSVM grammar: a decimal number is ASCII digits with an optional sign, point and
# exponent (no inf / nan, no underscores, no non-ASCII digits: float() would take those).
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_RE = re.compile(_NUMBER, re.ASCII)
_LABELS_RE = re.compile(rf"{_NUMBER}(?:,{_NUMBER})*", re.ASCII)
_QID_RE = re.compile(r"[ \t]+qid:[0-9]+(?=[ \t]|$)", re.ASCII)
_FEATURES_RE = re.compile(rf"(?:[ \t]+[0-9]{{1,15}}:{_NUMBER})*[ \t]*", re.ASCII)
_INDEX_RE = re.compile(r"[0-9]+", re.ASCII)
_MAX_COLUMN = 2**31 - 2  # CSR column indices and n_features stay within int32
_BLANKS = " \t\v\f\r"


def _libsvm_token_error(body: str) -> str:
    """Why a sample line (comment removed) breaks the LIBSVM grammar, naming the first
    offending token (slow path, only after the line failed to match)."""
    tok = _FIELD_SEP.split(body)
    first = 0
    if ":" not in tok[0]:
        first = 1
        if _LABELS_RE.fullmatch(tok[0]) is None:
            bad = next((lab for lab in tok[0].split(",") if _NUMBER_RE.fullmatch(lab) is None),
                       tok[0])
            return (f"label {bad!r} is not a decimal number (labels are comma-separated numbers "
                    "such as 3 or 1,7; no inf, nan, underscores or empty labels)")
    for j, t in enumerate(tok[first:]):
        idx, colon, val = t.partition(":")
        if not colon:
            return f"token {t!r} is not 'index:value'"
        if idx == "qid" and j == 0 and _INDEX_RE.fullmatch(val):
            continue
        if idx.startswith("-") and _INDEX_RE.fullmatch(idx[1:]):
            return f"feature index {idx} is negative; indices are non-negative integers"
        if _INDEX_RE.fullmatch(idx) is None:
            return f"feature index {idx!r} in {t!r} is not a non-negative integer"
        if len(idx) > 15:
            shown = idx if len(idx) <= 20 else idx[:20] + "..."
            return f"feature index {shown} is too large (the largest allowed is {_MAX_COLUMN + 1})"
        if _NUMBER_RE.fullmatch(val) is None:
            return (f"value {val!r} of feature {idx} is not a finite decimal number (no inf, nan, "
                    "underscores or non-ASCII digits)")
    return f"not 'label[,label...] index:value ...': {body[:80]!r}"


def _parse_libsvm_lines(lines, path):
    """Parse the sample lines: ``(label_strings, rows, indices, values, linenos)``.

    Each line is matched against the grammar first (a failure raises
    :class:`~hiercvx.exceptions.DataFormatError` with its line); then every ``index:value``
    pair of the file is converted in one vectorized pass.  ``indices`` (int64) and
    ``values`` (float64) are in file order, ``rows[k]`` is the sample of pair ``k``,
    ``linenos[i]`` the 1-based line of sample ``i``."""
    labels, features, linenos = [], [], []
    for k, raw in enumerate(lines, start=1):
        body = raw.split("#", 1)[0].strip(_BLANKS)
        if not body:
            continue
        cut = next((i for i, c in enumerate(body) if c in " \t"), len(body))
        head, rest = body[:cut], body[cut:]
        if ":" in head:  # no labels: the line starts with a feature
            head, rest = "", " " + body
        elif _LABELS_RE.fullmatch(head) is None:
            raise DataFormatError(_libsvm_token_error(body), path=path, line=k)
        q = _QID_RE.match(rest)
        if q is not None:
            rest = rest[q.end():]
        if _FEATURES_RE.fullmatch(rest) is None:
            raise DataFormatError(_libsvm_token_error(body), path=path, line=k)
        labels.append(head)
        features.append(rest)
        linenos.append(k)
    counts = np.fromiter((f.count(":") for f in features), dtype=np.int64, count=len(features))
    rows = np.repeat(np.arange(len(features), dtype=np.int64), counts)
    flat = " ".join(features).replace(":", " ")
    numbers = np.empty(0)
    if rows.size:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            numbers = np.loadtxt(io.StringIO(flat), dtype=np.float64, ndmin=1, comments=None)
    # indices have at most 15 digits (the grammar), so their float reading is exact
    return (labels, rows, numbers[0::2].astype(np.int64), numbers[1::2],
            np.asarray(linenos, dtype=np.int64))


def _check_libsvm_options(n_features, zero_based):
    """``zero_based`` as ``True``, ``False`` or ``"auto"`` (numpy bools and the integers 0
    and 1 taken as bools); bad options raise :class:`~hiercvx.exceptions.InputError`."""
    if isinstance(zero_based, (bool, np.bool_)) or (
            isinstance(zero_based, (int, np.integer)) and zero_based in (0, 1)):
        zero_based = bool(zero_based)
    elif not (isinstance(zero_based, str) and zero_based == "auto"):
        raise InputError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None and (isinstance(n_features, bool)
                                   or not isinstance(n_features, (int, np.integer))
                                   or not 0 <= n_features <= _MAX_COLUMN + 1):
        raise InputError(f"n_features must be None or an integer in [0, {_MAX_COLUMN + 1}], got "
                         f"{n_features!r}")
    return zero_based


def _libsvm_matrix(rows, idx, vals, linenos, n_samples, n_features, zero_based, path):
    """The CSR matrix of the parsed pairs: indices within int32, strictly increasing within
    each line (no duplicates), values finite; each violation names its line."""
    def line(k):
        return int(linenos[rows[k]])

    largest = _MAX_COLUMN + 1  # one-based; zero-based files stop one lower
    too_big = np.flatnonzero(idx > largest)
    if too_big.size:
        k = int(too_big[0])
        raise DataFormatError(f"feature index {idx[k]} is too large (the largest allowed is "
                              f"{largest})", path=path, line=line(k))
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        k = int(bad[0])
        raise DataFormatError(f"the value of feature {idx[k]} overflows to {vals[k]}; values "
                              "must be finite", path=path, line=line(k))
    order = np.flatnonzero((rows[1:] == rows[:-1]) & (idx[1:] <= idx[:-1]))
    if order.size:
        k = int(order[0]) + 1
        what = "is repeated" if idx[k] == idx[k - 1] else f"comes after index {idx[k - 1]}"
        raise DataFormatError(f"feature index {idx[k]} {what}; each line needs strictly "
                              "increasing indices (sort them, merge duplicates)", path=path,
                              line=line(k))
    if zero_based == "auto":
        zero_based = bool(idx.size) and int(idx.min()) == 0
    if not zero_based:
        zeros = np.flatnonzero(idx == 0)
        if zeros.size:
            raise DataFormatError("feature index 0 in a one-based file (zero_based=False); pass "
                                  "zero_based=True or 'auto'", path=path, line=line(int(zeros[0])))
        idx = idx - 1
    big = np.flatnonzero(idx > _MAX_COLUMN)
    if big.size:
        k = int(big[0])
        raise DataFormatError(f"feature index {idx[k]} is too large for a zero-based file (the "
                              f"largest allowed is {_MAX_COLUMN})", path=path, line=line(k))
    width = int(idx.max()) + 1 if idx.size else 0
    if n_features is not None:
        if width > n_features:
            k = int(np.flatnonzero(idx >= n_features)[0])
            raise DataFormatError(f"feature index {idx[k] + (0 if zero_based else 1)} is beyond "
                                  f"n_features={n_features}", path=path, line=line(k))
        width = int(n_features)
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_samples), out=indptr[1:])
    X = sp.csr_matrix((vals, idx, indptr), shape=(n_samples, width))
    X.eliminate_zeros()
    return X


def _libsvm_labels(label_strings, linenos, path) -> tuple[list[tuple], dict]:
    """``(tokens, value)``: each line's label tokens as spelled, and the number of every
    distinct token (:func:`_label_value`); a label overflowing to infinity or underflowing
    to 0 names its line."""
    parsed, value, out = {}, {}, []
    for s, ln in zip(label_strings, linenos):
        if s not in parsed:
            tokens = s.split(",") if s else ()
            for t in tokens:
                if t in value:
                    continue
                v = float(t)
                if not np.isfinite(v):
                    raise DataFormatError(f"label {t[:40]!r} overflows to {v}; labels must be "
                                          "finite", path=path, line=int(ln))
                if v == 0 and any(c in "123456789" for c in t.lower().split("e")[0]):
                    raise DataFormatError(f"label {t[:40]!r} underflows to 0 as a float and would "
                                          "be read as the label 0; write labels as integers or "
                                          "numbers of ordinary size", path=path, line=int(ln))
                value[t] = _label_value(t, v)
            parsed[s] = tuple(dict.fromkeys(tokens))
        out.append(parsed[s])
    return out, value


def _node_of_label(hierarchy: Hierarchy, token: str, v):
    """The node a label token names: the node spelled as the token (``08``, ``1.0``), else
    the node equal to its number (``8`` for ``+8`` in a hierarchy of ints), else the node
    spelled as that number (``"8"``); ``None`` when there is none."""
    for candidate in (token, v, str(v)):
        if candidate in hierarchy:
            return candidate
    return None


def load_libsvm(path, hierarchy=None, n_features: int | None = None,
                zero_based="auto") -> Dataset:
    """Load a LIBSVM / SVMlight multi-label file (``label1,label2 idx:val idx:val ...``).

    ``X`` is CSR.  Labels and values are decimal numbers (ASCII digits, optional sign,
    point and exponent; ``inf``, ``nan``, ``1_0`` and overflowing values are refused);
    integral labels become ``int`` (an integer label exactly, however many digits), others
    ``float``; a line without labels is a sample with none.  ``y`` is a list of frozensets.
    Indices are non-negative integers, strictly increasing within a line;
    ``zero_based="auto"`` reads the file as zero-based when it uses index 0 (``True``,
    ``False``, numpy bools, 0 and 1 force one reading).  A UTF-8 byte-order mark is
    dropped; ``#`` starts a comment.  Every violation raises
    :class:`~hiercvx.exceptions.DataFormatError` with the file and line.

    ``hierarchy``: a :class:`~hiercvx.hierarchy.Hierarchy`, or the path of an LSHTC hierarchy file
    (read with :func:`load_lshtc_hierarchy`).  Every label must then be a node, matched by its
    spelling first (a label ``08`` is node ``"08"`` even when there is a node ``"8"``), else by its
    number (a label ``7`` or ``+7`` matches a node ``7`` or ``"7"``).  A label that is not a node
    raises :class:`~hiercvx.exceptions.DataFormatError` naming the line.  Without a hierarchy the
    labels become the leaves of a flat one: every label a child of ``"<root>"``, also when the file
    has a single label.
    """
    if isinstance(hierarchy, (str, os.PathLike)):
        hierarchy = load_lshtc_hierarchy(hierarchy)
    elif hierarchy is not None and not isinstance(hierarchy, Hierarchy):
        raise LabelError(f"hierarchy must be a Hierarchy or the path of a hierarchy file, got "
                         f"{type(hierarchy).__name__}")
    zero_based = _check_libsvm_options(n_features, zero_based)
    path, lines = read_lines(path)
    label_strings, rows, idx, vals, line_of = _parse_libsvm_lines(lines, path)
    if not label_strings:
        raise DataFormatError("contains no sample line", path=path)
    X = _libsvm_matrix(rows, idx, vals, line_of, len(label_strings), n_features, zero_based,
                       path)
    label_tuples, value = _libsvm_labels(label_strings, line_of, path)
    if hierarchy is None:
        unique = list(dict.fromkeys(value[t] for labs in label_tuples for t in labs))
        if not unique:
            raise DataFormatError("no sample has a label; give labels before the features",
                                  path=path)
        # labels are numbers, never the name "<root>": every one is a class under it
        hierarchy = Hierarchy([(ARTIFICIAL_ROOT, v) for v in unique],
                              nodes=[ARTIFICIAL_ROOT, *unique])
        y = [frozenset(value[t] for t in labs) for labs in label_tuples]
    else:
        y = _labels_on_nodes(hierarchy, label_tuples, value, line_of, path)
    return Dataset(X=X, y=y, hierarchy=hierarchy,
                   feature_names=ColumnNames(X.shape[1]),
                   name=path.name.split(".")[0] or path.name, path=path,
                   metadata={"format": "libsvm"})


def _labels_on_nodes(hierarchy, label_tuples, value, line_of, path) -> list[frozenset]:
    """Every sample's labels as nodes of ``hierarchy`` (:func:`_node_of_label`); labels that
    are not nodes raise :class:`~hiercvx.exceptions.DataFormatError` naming the first line."""
    mapping, unknown = {}, []
    for i, labs in enumerate(label_tuples):
        for t in labs:
            if t not in mapping:
                mapping[t] = _node_of_label(hierarchy, t, value[t])
                if mapping[t] is None:
                    unknown.append((i, t))
    if unknown:
        i, t = unknown[0]
        shown = ", ".join(u for _, u in unknown[:5])
        raise DataFormatError(
            f"{len(unknown)} label(s) are not nodes of the hierarchy ({shown}); the first, "
            f"{t}, is on this line. Check that the hierarchy file belongs to this data",
            path=path, line=int(line_of[i]))
    return [frozenset(mapping[t] for t in labs) for labs in label_tuples]


# ---------------------------------------------------------------------- dispatch
_ARFF_EXT = {".arff"}
_LIBSVM_EXT = {".svm", ".svmlight", ".libsvm"}
_HIER_EXT = {".hier", ".hierarchy", ".cat_hier"}


def _sniff(path: Path) -> str:
    """Guess the format from the first meaningful line."""
    for raw in first_lines(path):
        s = raw.strip()
        if not s or s[0] in "%#":
            continue
        if s[0] == "@":
            return "arff"
        tok = s.split("#", 1)[0].split()
        if any(":" in t for t in tok):
            return "libsvm"
        if len(tok) == 2:
            return "lshtc"
        break
    raise DataFormatError(
        "cannot tell the format from the file name or its first line; supported: Clus-HMC "
        "ARFF (.arff), LIBSVM/SVMlight (.svm, .libsvm, .svmlight), LSHTC 'parent child' "
        "hierarchies (.hier)", path=path)


def load(path, format: str | None = None, **kwargs) -> Dataset:
    """Load any supported file: ARFF, LIBSVM/SVMlight, or an LSHTC hierarchy.

    The format comes from ``format`` (``"arff"``, ``"libsvm"``, ``"lshtc"``), else the
    extension (a last ``.gz``, in any case, is looked through), else the first meaningful
    line.  Gzip files are recognised by their content, whatever their name.  Keyword
    arguments go to the loader (e.g. ``hierarchy=`` for LIBSVM).  A hierarchy file gives
    a :class:`Dataset` with no samples (``X`` of shape ``(0, 0)``).
    """
    if isinstance(path, str) and not path.strip():   # Path("") would be the current folder
        raise DataFormatError("the path is empty; give the data file to load")
    path = check_path(path)
    if not path.exists():
        raise DataFormatError("no such file; check the path", path=path)
    if path.is_dir():   # before sniffing, which would blame the format
        raise DataFormatError("is a directory, not a data file; name a file in it", path=path)
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
        return load_arff(path, **_loader_options(load_arff, format, kwargs, path))
    if format == "libsvm":
        return load_libsvm(path, **_loader_options(load_libsvm, format, kwargs, path))
    if format == "lshtc":
        H = load_lshtc_hierarchy(path, **_loader_options(load_lshtc_hierarchy, format, kwargs, path))
        return Dataset(X=np.zeros((0, 0)), y=[], hierarchy=H, feature_names=[],
                       name=path.name.split(".")[0], path=path,
                       metadata={"format": "lshtc-hierarchy"})
    raise DataFormatError(f"unknown format {format!r}; use 'arff', 'libsvm' or 'lshtc'",
                          path=path)


def _loader_options(loader, format: str, options: dict, path) -> dict:
    """``options`` when ``loader`` takes every one of them, else a clear error naming those it takes."""
    taken = [name for name, p in inspect.signature(loader).parameters.items()
             if p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and name != "path")]
    unknown = sorted(set(options) - set(taken))
    if unknown:
        raise InputError(f"{path}: the {format} loader takes no option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; its options are "
                         f"{', '.join(taken) or 'none'}"
                         + (" (an ARFF file names its own hierarchy)" if format == "arff"
                            and "hierarchy" in unknown else ""))
    return options


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
    whose deepest label is an internal node (partial paths), samples without labels (and
    those labelled with the root only, when there are any), and
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
    counts = ", ".join(f"{k} {word if k == 1 else plural}" for k, word, plural in (
        (len(H), "node", "nodes"), (len(H.edge_index), "edge", "edges"),
        (len(H.leaves), "leaf", "leaves")))
    line = f"hierarchy: {kind}, {counts}, depth {max_depth}, root {H.root!r}"
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
    n_empty = int((stats["given"] == 0).sum())
    # labelled, but with the root only: a label that says nothing, not a missing one
    n_root_only = int(((stats["closed"] == 0) & (stats["given"] > 0)).sum())
    out.append(f"labels per sample: mean {stats['given'].mean():.3f} as given, "
               f"{stats['closed'].mean():.3f} closed upward (root not counted), "
               f"max {int(stats['closed'].max())}")
    out.append(f"partial paths: {stats['partial'].mean():.2%} of samples have a deepest label "
               f"that is an internal node")
    root_only = (f"; labelled with the root {H.root!r} only: {n_root_only}" if n_root_only
                 else "")
    out.append(f"samples without labels: {n_empty}{root_only}; nodes used by some sample: "
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
