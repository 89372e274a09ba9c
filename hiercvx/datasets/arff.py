"""Loader of the Clus-HMC dialect of ARFF (hierarchical multi-label data).

The dialect (see ``shared/data/hmc/README.md``)::

    @RELATION name
    @ATTRIBUTE a1 numeric                 % numeric / real / integer
    @ATTRIBUTE colour {red, green}        % nominal: one-hot encoded (see below)
    @ATTRIBUTE class hierarchical 01,01/01,01/01/03,02
    @DATA
    0.3,?,red,01/01/03@02                 % '?' = missing, labels separated by '@'

The ``hierarchical`` attribute declares the hierarchy in one of two forms:

- **paths** (FunCat, Enron, ImageCLEF): each entry is a path ``01/01/03``; every prefix
  is a node named by the full prefix string (``01``, ``01/01``, ``01/01/03``), built
  with :meth:`Hierarchy.from_paths`.  Several top-level entries hang under an
  artificial root ``"<root>"``.  The result is a tree.
- **edges** (Gene Ontology): each entry is a ``parent/child`` pair of node names, with
  ``root`` at the top (``root/GO0003674,GO0003674/GO0003774,...``), built with
  :meth:`Hierarchy.from_edges`.  The result is usually a DAG.

``dialect="auto"`` tells them apart: entries that are not all two-component pairs, or a
pair ``x/x``, can only be paths; when every entry is a pair whose first name is
``root`` or is the child of some other pair, the list reads as edges (in a path list
such as ``01/01`` the first component ``01`` is not itself a pair's child unless the
declaration is a GO-style edge list).  If the first reading leaves labels of the data
unexplained and the other reading explains them all, the other reading is used.  Pass
``dialect="paths"`` or ``"edges"`` to force one.

Nominal attributes (Clus-HMC's own data have none; some other ARFF files do) are
one-hot encoded: an attribute ``colour {red, green}`` becomes the columns
``colour=red`` and ``colour=green``; a ``?`` gives NaN in all of its columns.  Pass
``nominal="error"`` to refuse them instead.  ``string``, ``date`` and ``relational``
attributes and sparse rows (``{0 1.5, 7 2}``) are refused with a clear error.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

import numpy as np

from ..exceptions import DataFormatError, HierarchyError, InputError
from ..hierarchy import Hierarchy
from ._common import Dataset, read_lines

logger = logging.getLogger(__name__)

__all__ = ["load_arff"]

_NUMERIC_TYPES = {"numeric", "real", "integer"}
_UNSUPPORTED_TYPES = {"string", "date", "relational"}
_PATH_SEP = "/"
_LABEL_SEP = "@"
_MISSING = "?"


@dataclass
class _Attribute:
    name: str
    kind: str                 # "numeric" | "nominal" | "hierarchical"
    position: int             # 0-based field position in a data row
    line: int                 # line of its declaration
    values: tuple = ()        # nominal values, or hierarchy entries


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        q = s[0]
        return s[1:-1].replace("\\" + q, q)
    return s


def _split_name(rest: str, path, line: int) -> tuple[str, str]:
    """Split ``name type...`` where the name may be quoted and contain spaces."""
    rest = rest.strip()
    if not rest:
        raise DataFormatError("malformed header: @ATTRIBUTE without a name and a type",
                              path=path, line=line)
    q = rest[0]
    if q in "'\"":
        i = 1
        while i < len(rest):
            if rest[i] == "\\":
                i += 2
                continue
            if rest[i] == q:
                break
            i += 1
        else:
            raise DataFormatError(f"malformed header: the attribute name opened with {q} is "
                                  "never closed", path=path, line=line)
        return rest[1:i].replace("\\" + q, q), rest[i + 1:].strip()
    j = next((k for k, c in enumerate(rest) if c.isspace() or c == "{"), len(rest))
    return rest[:j], rest[j:].strip()


def _parse_attribute(rest: str, position: int, path, line: int, nominal: str) -> _Attribute:
    name, spec = _split_name(rest, path, line)
    if not spec:
        raise DataFormatError(f"malformed header: attribute {name!r} has no type (expected "
                              "numeric, {v1,v2,...} or hierarchical ...)", path=path, line=line)
    if spec.startswith("{"):
        close = spec.rfind("}")
        if close < 0:
            raise DataFormatError(f"malformed header: the value list of nominal attribute "
                                  f"{name!r} has no closing '}}'", path=path, line=line)
        values = tuple(_unquote(v.strip()) for v in spec[1:close].split(","))
        if any(v == "" for v in values) or len(set(values)) != len(values):
            raise DataFormatError(f"malformed header: nominal attribute {name!r} has an empty "
                                  "or repeated value in its list", path=path, line=line)
        if nominal == "error":
            raise DataFormatError(f"attribute {name!r} is nominal, and nominal='error' refuses "
                                  "nominal attributes; use nominal='onehot' to encode them",
                                  path=path, line=line)
        return _Attribute(name, "nominal", position, line, values)
    kind = spec.split(None, 1)[0].lower()
    if kind in _NUMERIC_TYPES:
        return _Attribute(name, "numeric", position, line)
    if kind == "hierarchical":
        body = spec[len("hierarchical"):].strip()
        if not body:
            raise DataFormatError(f"malformed header: hierarchical attribute {name!r} declares "
                                  "no classes", path=path, line=line)
        entries = tuple(e.strip() for e in body.split(","))
        if any(e == "" for e in entries):
            raise DataFormatError(f"malformed header: the class list of {name!r} has an empty "
                                  "entry (doubled or trailing comma)", path=path, line=line)
        return _Attribute(name, "hierarchical", position, line, entries)
    if kind in _UNSUPPORTED_TYPES:
        raise DataFormatError(f"attribute {name!r} has type {kind}, which hiercvx does not "
                              "load; remove the attribute or convert it to numeric",
                              path=path, line=line)
    raise DataFormatError(f"malformed header: attribute {name!r} has unknown type {kind!r} "
                          "(expected numeric, real, integer, {v1,v2,...} or hierarchical)",
                          path=path, line=line)


def _parse_header(lines, path, nominal):
    """Return (relation, attributes, index of the first line after @DATA)."""
    relation = None
    attrs: list[_Attribute] = []
    for k, raw in enumerate(lines):
        s = raw.strip()
        if not s or s[0] == "%":
            continue
        if s[0] != "@":
            raise DataFormatError(f"malformed header: expected @RELATION, @ATTRIBUTE, @DATA or a "
                                  f"'%' comment before the data, got {s[:60]!r}",
                                  path=path, line=k + 1)
        head = s[1:].split(None, 1)
        key = head[0].lower() if head else ""
        rest = head[1] if len(head) > 1 else ""
        if key == "relation":
            relation = _unquote(rest.strip())
        elif key == "attribute":
            attrs.append(_parse_attribute(rest, len(attrs), path, k + 1, nominal))
        elif key == "data":
            return relation, attrs, k + 1
        else:
            raise DataFormatError(f"malformed header: unknown directive @{head[0] if head else ''}"
                                  " (expected @RELATION, @ATTRIBUTE or @DATA)",
                                  path=path, line=k + 1)
    raise DataFormatError("malformed header: no @DATA line", path=path, line=len(lines) or None)


# ---------------------------------------------------------------------- hierarchy reading
def _readings(entries, dialect, path, line):
    """Candidate readings of the class list, most plausible first: (dialect, node set)."""
    parts = [e.split(_PATH_SEP) for e in entries]
    for e, p in zip(entries, parts):
        if any(c.strip() == "" for c in p):
            raise DataFormatError(f"malformed header: class entry {e!r} has an empty component",
                                  path=path, line=line)
    all_pairs = all(len(p) == 2 for p in parts)
    if dialect not in ("auto", "paths", "edges"):
        raise InputError(f"dialect must be 'auto', 'paths' or 'edges', got {dialect!r}")
    if dialect == "edges" and not all_pairs:
        bad = next(e for e, p in zip(entries, parts) if len(p) != 2)
        raise DataFormatError(f"dialect='edges' needs parent/child pairs, but class entry {bad!r} "
                              f"is not one", path=path, line=line)
    if dialect == "auto":
        if not all_pairs or any(p[0] == p[1] for p in parts):
            order = ["paths"]
        else:
            children = {p[1] for p in parts}
            go_like = all(p[0] == "root" or p[0] in children for p in parts)
            order = ["edges", "paths"] if go_like else ["paths", "edges"]
    else:
        order = [dialect]
    out = []
    for d in order:
        if d == "edges":
            nodes = {c for p in parts for c in p}
        else:
            nodes = {_PATH_SEP.join(p[:j]) for p in parts for j in range(1, len(p) + 1)}
        out.append((d, nodes))
    return out, parts


def _build_hierarchy(dialect, entries, parts, path, line) -> Hierarchy:
    try:
        if dialect == "edges":
            return Hierarchy.from_edges([(p[0], p[1]) for p in parts])
        return Hierarchy.from_paths(entries, sep=_PATH_SEP)
    except HierarchyError as exc:
        raise DataFormatError(f"the hierarchy declared by the class attribute is invalid "
                              f"({dialect} reading): {exc}", path=path, line=line) from None


# ---------------------------------------------------------------------- data block
def _locate_bad_value(feature_lines, linenos, feat_attrs, path):
    """Slow path after a vectorized parse failed: find the first offending value."""
    for text, ln in zip(feature_lines, linenos):
        for a, v in zip(feat_attrs, text.split(",")):
            if a.kind != "numeric":
                continue
            t = v.strip()
            if t == _MISSING:
                continue
            try:
                float(t)
            except ValueError:
                raise DataFormatError(
                    f"value {t!r} of numeric attribute {a.name!r} (field {a.position + 1}) is not "
                    "a number; write missing values as '?'", path=path, line=int(ln)) from None
    raise DataFormatError("the numeric block could not be parsed", path=path)


def _encode_nominal(values: np.ndarray, attr: _Attribute, linenos, path):
    """One-hot columns of a nominal attribute; NaN rows where the value is '?'."""
    n, k = len(values), len(attr.values)
    code_of = {v: c for c, v in enumerate(attr.values)}
    uniq, first, inv = np.unique(values, return_index=True, return_inverse=True)
    codes_u = np.empty(len(uniq), dtype=np.int64)
    for u, (v, f) in enumerate(zip(uniq, first)):
        v = _unquote(str(v).strip())
        if v == _MISSING:
            codes_u[u] = -1
        elif v in code_of:
            codes_u[u] = code_of[v]
        else:
            raise DataFormatError(f"value {v!r} of nominal attribute {attr.name!r} is not one of "
                                  f"its declared values {list(attr.values)}", path=path,
                                  line=int(linenos[f]))
    codes = codes_u[inv.ravel()]
    block = np.zeros((n, k))
    ok = codes >= 0
    block[np.flatnonzero(ok), codes[ok]] = 1.0
    block[~ok] = np.nan
    return block, [f"{attr.name}={v}" for v in attr.values]


def load_arff(path, *, dialect: str = "auto", nominal: str = "onehot") -> Dataset:
    """Load a Clus-HMC ARFF file (module docstring: the dialect and how it is read).

    Returns a :class:`~hiercvx.datasets.Dataset` with ``X`` (float, NaN where the file
    has ``?``), ``y`` (a list of frozensets of node names, exactly as written in the
    file: not closed upward), ``hierarchy``, ``feature_names`` and ``name`` (the file
    name without ``.arff``); ``metadata`` holds the relation name and the dialect.

    Malformed headers, rows with the wrong number of fields, non-numeric values, labels
    that are not nodes of the declared hierarchy and invalid hierarchies raise
    :class:`~hiercvx.exceptions.DataFormatError` with the file and the line number.
    """
    if nominal not in ("onehot", "error"):
        raise InputError(f"nominal must be 'onehot' or 'error', got {nominal!r}")
    path, lines = read_lines(path)
    relation, attrs, start = _parse_header(lines, path, nominal)
    hier = [a for a in attrs if a.kind == "hierarchical"]
    if not hier:
        raise DataFormatError("no attribute of type 'hierarchical': this is not a Clus-HMC "
                              "file (declare the classes as '@ATTRIBUTE class hierarchical ...')",
                              path=path, line=start or None)
    if len(hier) > 1:
        raise DataFormatError(f"{len(hier)} hierarchical attributes; a Clus-HMC file has exactly "
                              "one", path=path, line=hier[1].line)
    hattr = hier[0]
    readings, parts = _readings(hattr.values, dialect, path, hattr.line)
    feat_attrs = [a for a in attrs if a.kind != "hierarchical"]
    rows, linenos = _data_rows(lines, start, len(attrs), path)
    feature_lines, label_strings = _split_class_field(rows, hattr.position, len(attrs))
    X, feature_names, nom_idx = _parse_features(feature_lines, feat_attrs, linenos, path)
    y, reading = _parse_labels(label_strings, readings, linenos, hattr, path)
    dialect_used = reading[0]
    H = _build_hierarchy(dialect_used, hattr.values, parts, path, hattr.line)
    name = path.name
    for suffix in (".gz", ".arff", ".ARFF"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return Dataset(X=X, y=y, hierarchy=H, feature_names=list(feature_names), name=name, path=path,
                   metadata={"format": "arff", "relation": relation, "dialect": dialect_used,
                             "class_attribute": hattr.name,
                             "nominal_attributes": [feat_attrs[j].name for j in nom_idx]})


def _data_rows(lines, start: int, n_attr: int, path):
    """The data rows after ``@DATA`` (blank and ``%`` lines dropped) and their 1-based line
    numbers; sparse rows and rows with the wrong number of fields are refused."""
    body = lines[start:]
    keep = [i for i, raw in enumerate(body) if (t := raw.strip()) and t[0] != "%"]
    rows = [body[i] for i in keep]
    linenos = np.asarray(keep, dtype=np.int64) + start + 1
    if rows and rows[0].lstrip().startswith("{"):  # a sparse file has sparse rows from the first on
        raise DataFormatError("sparse ARFF rows ('{index value, ...}') are not supported; "
                              "write the rows in dense form", path=path, line=int(linenos[0]))
    counts = np.fromiter((r.count(",") for r in rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(counts != n_attr - 1)
    if bad.size:
        i = int(bad[0])
        raise DataFormatError(f"this row has {counts[i] + 1} comma-separated fields but the header "
                              f"declares {n_attr} attributes", path=path, line=int(linenos[i]))
    return rows, linenos


def _split_class_field(rows, position: int, n_attr: int):
    """``(feature_lines, label_strings)``: every row without / with only its class field."""
    if position == n_attr - 1:
        split = [r.rpartition(",") for r in rows]
        return [s[0] for s in split], [s[2].strip() for s in split]
    fields = [r.split(",") for r in rows]
    return ([",".join(f[:position] + f[position + 1:]) for f in fields],
            [f[position].strip() for f in fields])


def _parse_features(feature_lines, feat_attrs, linenos, path):
    """``(X, feature_names, nominal_indices)``: one vectorized parse of the numeric block,
    nominal attributes one-hot encoded."""
    n = len(feature_lines)
    num_idx = [j for j, a in enumerate(feat_attrs) if a.kind == "numeric"]
    nom_idx = [j for j, a in enumerate(feat_attrs) if a.kind == "nominal"]
    all_names = []
    for a in feat_attrs:
        all_names += [a.name] if a.kind == "numeric" else [f"{a.name}={v}" for v in a.values]
    if n == 0 or not feat_attrs:
        return np.empty((n, len(all_names))), all_names, nom_idx
    text = "\n".join(feature_lines)
    X_num = np.empty((n, 0))
    if num_idx:
        try:
            X_num = np.loadtxt(io.StringIO(text.replace(_MISSING, "nan")), delimiter=",",
                               comments=None, ndmin=2, dtype=float,
                               usecols=num_idx if nom_idx else None)
        except ValueError:
            _locate_bad_value(feature_lines, linenos, feat_attrs, path)
        if X_num.shape[0] != n:  # loadtxt skips lines it sees as empty
            _locate_bad_value(feature_lines, linenos, feat_attrs, path)
    if not nom_idx:
        return X_num, [a.name for a in feat_attrs], nom_idx
    S = np.loadtxt(io.StringIO(text), delimiter=",", comments=None, ndmin=2, dtype=str,
                   usecols=nom_idx)
    blocks, feature_names = [], []
    num_col = {j: c for c, j in enumerate(num_idx)}
    nom_col = {j: c for c, j in enumerate(nom_idx)}
    for j, a in enumerate(feat_attrs):
        if a.kind == "numeric":
            blocks.append(X_num[:, num_col[j]:num_col[j] + 1])
            feature_names.append(a.name)
        else:
            block, names = _encode_nominal(np.char.strip(S[:, nom_col[j]]), a, linenos, path)
            blocks.append(block)
            feature_names += names
    logger.info("%s: one-hot encoded %d nominal attribute(s)", path, len(nom_idx))
    return np.hstack(blocks), feature_names, nom_idx


def _parse_labels(label_strings, readings, linenos, hattr, path):
    """``(y, reading)``: each distinct label string parsed once into a frozenset, and the
    first reading of the hierarchy (paths / edges) that declares every label used."""
    if not label_strings:
        return [], readings[0]
    uniq, first, inv = np.unique(np.asarray(label_strings, dtype=str), return_index=True,
                                 return_inverse=True)
    sets = []
    for s, f in zip(uniq, first):
        s = str(s)
        if s in ("", _MISSING):
            sets.append(frozenset())
            continue
        members = [m.strip() for m in s.split(_LABEL_SEP)]
        if any(m == "" for m in members):
            raise DataFormatError(f"label list {s!r} has an empty label (doubled or trailing "
                                  f"'{_LABEL_SEP}')", path=path, line=int(linenos[f]))
        sets.append(frozenset(members))
    used = set().union(*sets)
    fits = [r for r in readings if used <= r[1]]
    reading = fits[0] if fits else readings[0]
    unknown = used - reading[1]
    if unknown:
        # first row holding an unknown label
        f_bad = min(int(f) for s, f in zip(sets, first) if s & unknown)
        lab = sorted(next(s for s, f in zip(sets, first) if int(f) == f_bad) & unknown)[0]
        raise DataFormatError(
            f"label {lab!r} is not declared in the hierarchy of attribute {hattr.name!r} "
            f"({len(unknown)} undeclared label(s) in the file); add it to the class list",
            path=path, line=int(linenos[f_bad]))
    inv = inv.ravel()
    y = [sets[i] for i in inv]
    if any(not s for s in sets):
        n_rows = int(sum(1 for i in inv if not sets[i]))
        logger.warning("%s: %d row(s) have no label ('?' or empty class field)", path, n_rows)
    return y, reading
