r"""Loader of the Clus-HMC dialect of ARFF (hierarchical multi-label data).

The dialect (see ``shared/data/hmc/README.md``)::

    @RELATION name
    @ATTRIBUTE a1 numeric                 % numeric / real / integer
    @ATTRIBUTE a2 numeric
    @ATTRIBUTE colour {red, green}        % nominal: one-hot encoded (see below)
    @ATTRIBUTE class hierarchical 01,01/01,01/01/03,02
    @DATA
    0.3,?,red,01/01/03@02                 % '?' = missing, labels separated by '@'

As in Weka, ``%`` outside quotes starts a comment, on a line of its own or after a
declaration or a data row.

The ``hierarchical`` attribute declares the hierarchy in one of two forms:

- **paths** (FunCat, Enron, ImageCLEF): each entry is a path ``01/01/03``; every prefix
  is a node named by the full prefix string (``01``, ``01/01``, ``01/01/03``), built
  with :meth:`Hierarchy.from_paths() <hiercvx.hierarchy.Hierarchy.from_paths>`.  The top-level
  entries hang under an artificial root ``"<root>"``, even a single one: it is a class of the data,
  as in Clus-HMC.  The result is a tree.
- **edges** (Gene Ontology): each entry is a ``parent/child`` pair of node names, with
  ``root`` at the top (``root/GO0003674,GO0003674/GO0003774,...``), built with
  :meth:`Hierarchy.from_edges() <hiercvx.hierarchy.Hierarchy.from_edges>`.  The result is usually a
  DAG.

``dialect="auto"`` tells them apart by the class list and the labels of the data:
entries that are not all two-component pairs, or a pair ``x/x``, can only be paths; pairs
with ``root`` at the top (every first name ``root`` or the child of another pair) read as
edges, or as paths when only that reading declares every label.  Any other list of pairs
is read the one way that declares every label and gives a valid hierarchy; when both
ways do, the list is refused and ``dialect="paths"`` or ``"edges"`` must say which it is
(a wrong guess would give other classes).  A forced dialect that does not fit the file
names the other one when that one would.

Nominal attributes (Clus-HMC's own data have none; some other ARFF files do) are
one-hot encoded: an attribute ``colour {red, green}`` becomes the columns
``colour=red`` and ``colour=green``; a ``?`` gives NaN in all of its columns.  Pass
``nominal="error"`` to refuse them instead.  ``string``, ``date`` and ``relational``
attributes and sparse rows (``{0 1.5, 7 2}``) are refused with a clear error.

Reading is strict: a numeric value is a finite number or ``?`` (``inf``, ``nan``, ``1e999``,
a 400-digit integer, ``1_0``, ``-?`` are refused with their line); a UTF-8 byte-order mark
is dropped; quoted values (``'dark, green'``, with ``\'`` escapes) may hold commas, in the
header's value lists and in the data, and quotes around a number or the class field are
dropped (``'1.5'``, ``'01/02@03'``) as Weka does; lines end at ``\n``, ``\r\n`` or ``\r``
only, so a form feed or a Unicode line separator in a comment does not shift the line
numbers.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from dataclasses import dataclass

import numpy as np

from ..exceptions import DataFormatError, InputError
from ._arff_classes import DIALECTS, choose_reading, class_parts
from ._common import Dataset, read_lines

logger = logging.getLogger(__name__)

__all__ = ["load_arff"]

_NUMERIC_TYPES = {"numeric", "real", "integer"}
_UNSUPPORTED_TYPES = {"string", "date", "relational"}
_LABEL_SEP = "@"
_MISSING = "?"
_SPELLED_NON_FINITE = re.compile(r"[nNiI]")  # the letters of every spelling of nan and inf
_SIGNED_MISSING = re.compile(r"[+-]\?")      # '-?' would read as -nan, a missing value


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


def _unquoted(text: str, chars: str, opens) -> tuple[list[int], str | None]:
    """The positions of the characters ``chars`` that stand outside ``'...'`` / ``"..."``
    quotes in ``text`` (backslash escapes inside quotes), and the quote still open at the end
    (None when every quote closes).  ``opens(i, found)`` says whether a quote character at
    ``i`` opens a quote, given the positions ``found`` so far."""
    found, quote, i = [], None, 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in chars:
            found.append(i)
        elif c in "'\"" and opens(i, found):
            quote = c
        i += 1
    return found, quote


def split_quoted(text: str, path=None, line: int | None = None) -> list[str]:
    """Split ``text`` at the commas outside ``'...'`` / ``"..."`` quotes (backslash escapes
    inside quotes), so that a quoted value may hold commas; the fields keep their quotes
    and blanks.  A quote opens at the start of a field.  An unclosed quote raises
    :class:`~hiercvx.exceptions.DataFormatError`."""
    def at_field_start(i, commas):
        return not text[commas[-1] + 1 if commas else 0:i].strip()
    commas, quote = _unquoted(text, ",", at_field_start)
    starts = [0] + [k + 1 for k in commas]
    if quote is not None:
        start = starts[-1]
        raise DataFormatError(f"the quote {quote} opened in {text[start:start + 40]!r} is never "
                              "closed", path=path, line=line)
    return [text[a:b] for a, b in zip(starts, commas + [len(text)])]


def strip_comment(text: str) -> str:
    """``text`` up to its first ``%`` outside ``'...'`` / ``"..."`` quotes, where Weka starts
    a comment.  A quote opens at the start of a token (after a blank, ``,`` or ``{``), with
    backslash escapes inside; text with an unclosed quote before any comment comes back
    whole, for the parser to report."""
    if "%" not in text:
        return text
    def at_token_start(i, _):
        return i == 0 or text[i - 1].isspace() or text[i - 1] in ",{"
    marks, _ = _unquoted(text, "%", at_token_start)
    return text[:marks[0]] if marks else text


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
        values = tuple(_unquote(v.strip()) for v in split_quoted(spec[1:close], path, line))
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
        s = strip_comment(raw).strip()
        if not s:
            continue
        if s[0] != "@":
            raise DataFormatError(f"malformed header: expected @RELATION, @ATTRIBUTE, @DATA or a "
                                  f"'%' comment before the data, got {s[:60]!r}",
                                  path=path, line=k + 1)
        if len(s) == 1 or s[1].isspace():   # ARFF has no blank between '@' and its keyword
            raise DataFormatError("malformed header: '@' must be followed at once by RELATION, "
                                  f"ATTRIBUTE or DATA, got {s[:60]!r}; remove the blank after '@'",
                                  path=path, line=k + 1)
        head = s[1:].split(None, 1)
        key = head[0].lower() if head else ""
        rest = head[1] if len(head) > 1 else ""
        if key == "relation":
            relation = _unquote(rest.strip())
        elif key == "attribute":
            attr = _parse_attribute(rest, len(attrs), path, k + 1, nominal)
            twin = next((a for a in attrs if a.name == attr.name), None)
            if twin is not None:
                raise DataFormatError(f"attribute {attr.name!r} is declared twice (lines {twin.line} "
                                      "and this one); attribute names must be unique: rename one",
                                      path=path, line=k + 1)
            attrs.append(attr)
        elif key == "data":
            return relation, attrs, k + 1
        else:
            raise DataFormatError(f"malformed header: unknown directive @{head[0] if head else ''}"
                                  " (expected @RELATION, @ATTRIBUTE or @DATA)",
                                  path=path, line=k + 1)
    raise DataFormatError("malformed header: no @DATA line", path=path, line=len(lines) or None)


# ---------------------------------------------------------------------- data block
def _reads_as_number(text: str) -> bool:
    """Does the vectorized parser read ``text`` as one number?  (Stricter than ``float``:
    no underscores, no non-ASCII digits.)"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return np.loadtxt(io.StringIO(text), delimiter=",", comments=None, ndmin=2,
                              dtype=float).shape == (1, 1)
    except ValueError:
        return False


def _locate_bad_value(feature_lines, linenos, feat_attrs, path):
    """Slow path after a vectorized parse failed: find the first offending value (blocks
    of rows first, so that a bad value far down the file is found in a few passes)."""
    block = 512
    numeric_columns = [j for j, a in enumerate(feat_attrs) if a.kind == "numeric"]
    for lo in range(0, len(feature_lines), block):
        chunk = feature_lines[lo:lo + block]
        try:
            with warnings.catch_warnings():  # an all-empty chunk is a failure, not a warning
                warnings.simplefilter("ignore", UserWarning)
                parsed = np.loadtxt(io.StringIO("\n".join(chunk).replace(_MISSING, "nan")),
                                    delimiter=",", comments=None, ndmin=2, dtype=float,
                                    usecols=numeric_columns)
            if parsed.shape[0] == len(chunk):
                continue
        except ValueError:
            pass
        for text, ln in zip(chunk, linenos[lo:lo + block]):
            for a, v in zip(feat_attrs, text.split(",")):
                t = v.strip()
                if a.kind == "numeric" and t != _MISSING and not _reads_as_number(t):
                    raise DataFormatError(
                        f"value {t[:40]!r} of numeric attribute {a.name!r} (field "
                        f"{a.position + 1}) is not a number; write missing values as '?'",
                        path=path, line=int(ln))
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
    that are not nodes of the declared hierarchy, invalid hierarchies and class lists that
    read both as paths and as edges raise :class:`~hiercvx.exceptions.DataFormatError` with
    the file and the line number.
    """
    if nominal not in ("onehot", "error"):
        raise InputError(f"nominal must be 'onehot' or 'error', got {nominal!r}")
    if not isinstance(dialect, str) or dialect not in DIALECTS:
        raise InputError(f"dialect must be 'auto', 'paths' or 'edges', got {dialect!r}")
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
    parts = class_parts(hattr.values, path, hattr.line)
    feat_attrs = [a for a in attrs if a.kind != "hierarchical"]
    rows, linenos, fields = _data_rows(lines, start, len(attrs), path)
    features, label_strings = _split_class_field(rows, fields, hattr.position, len(attrs))
    X, feature_names, nom_idx = _parse_features(features, feat_attrs, linenos, path)
    y, dialect_used, H = _parse_labels(label_strings, dialect, parts, linenos, hattr, path)
    name = path.name
    for suffix in (".gz", ".arff"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Dataset(X=X, y=y, hierarchy=H, feature_names=list(feature_names), name=name, path=path,
                   metadata={"format": "arff", "relation": relation, "dialect": dialect_used,
                             "class_attribute": hattr.name,
                             "nominal_attributes": [feat_attrs[j].name for j in nom_idx]})


def _data_rows(lines, start: int, n_attr: int, path):
    """``(rows, linenos, fields)``: the data rows after ``@DATA`` (blank and ``%`` lines
    dropped, trailing ``%`` comments cut), their 1-based line numbers, and, when some row
    has quotes, every row split into its fields (else ``None``); sparse rows and rows with
    the wrong number of fields are refused."""
    body = lines[start:]
    keep = [i for i, raw in enumerate(body) if (t := raw.strip()) and t[0] != "%"]
    rows = [strip_comment(body[i]) if "%" in body[i] else body[i] for i in keep]
    linenos = np.asarray(keep, dtype=np.int64) + start + 1
    sparse = next((i for i, r in enumerate(rows) if r.lstrip()[:1] == "{"), None)
    if sparse is not None:
        what = ("sparse ARFF rows ('{index value, ...}') are not supported" if sparse == 0 else
                "this row is sparse ('{index value, ...}') while the rows before it are dense; "
                "sparse rows are not supported")
        raise DataFormatError(f"{what}; write every row in dense form", path=path,
                              line=int(linenos[sparse]))
    fields = None
    if any("'" in r or '"' in r for r in rows):  # quoted values may hold commas
        fields = [split_quoted(r, path, int(ln)) for r, ln in zip(rows, linenos)]
        counts = np.fromiter((len(f) - 1 for f in fields), dtype=np.int64, count=len(rows))
    else:
        counts = np.fromiter((r.count(",") for r in rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(counts != n_attr - 1)
    if bad.size:
        i = int(bad[0])
        raise DataFormatError(f"this row has {counts[i] + 1} comma-separated fields but the header "
                              f"declares {n_attr} attributes", path=path, line=int(linenos[i]))
    return rows, linenos, fields


def _split_class_field(rows, fields, position: int, n_attr: int):
    """``(features, label_strings)``: every row without / with only its class field;
    ``features`` are text lines, or lists of fields when the rows were split already."""
    if fields is not None:  # a quoted class field holds its labels as they are: unquote it
        return ([f[:position] + f[position + 1:] for f in fields],
                [_unquote(f[position].strip()) for f in fields])
    if position == n_attr - 1:
        split = [r.rpartition(",") for r in rows]
        return [s[0] for s in split], [s[2].strip() for s in split]
    fields = [r.split(",") for r in rows]
    return ([",".join(f[:position] + f[position + 1:]) for f in fields],
            [f[position].strip() for f in fields])


def _parse_numeric(lines, attrs, usecols, linenos, path) -> np.ndarray:
    """The numeric block of comma-separated ``lines`` (fields ``attrs``; ``usecols`` the
    numeric ones, None for all): one vectorized parse, ``?`` as NaN.  Values the parser
    reads as infinite or NaN that are not ``?`` in the file (``inf``, ``nan``, ``1e999``, a
    400-digit integer) are refused with their line."""
    n = len(lines)
    text = "\n".join(lines)
    try:
        with warnings.catch_warnings():  # empty lines are reported below, with their line
            warnings.simplefilter("ignore", UserWarning)
            X = np.loadtxt(io.StringIO(text.replace(_MISSING, "nan")), delimiter=",",
                           comments=None, ndmin=2, dtype=float, usecols=usecols)
    except ValueError:
        _locate_bad_value(lines, linenos, attrs, path)
    if X.shape[0] != n:  # loadtxt skips lines it sees as empty
        _locate_bad_value(lines, linenos, attrs, path)
    numeric = [a for a in attrs if a.kind == "numeric"]
    if (usecols is None and _SPELLED_NON_FINITE.search(text) is None
            and _SIGNED_MISSING.search(text) is None):
        # every field is numeric and none spells inf / nan or '-?': NaN can only come from '?'
        rows, cols = np.nonzero(np.isinf(X))
    else:
        rows, cols = np.nonzero(~np.isfinite(X))
    for i in np.unique(rows):
        values = lines[i].split(",")
        for c in cols[rows == i]:
            a = numeric[c]
            t = values[attrs.index(a)].strip()
            if _SIGNED_MISSING.fullmatch(t):
                raise DataFormatError(
                    f"value {t!r} of numeric attribute {a.name!r} is not a number: a missing "
                    f"value is a bare '?', without a sign", path=path, line=int(linenos[i]))
            if t != _MISSING:
                raise DataFormatError(
                    f"value {t[:40]!r} of numeric attribute {a.name!r} is not a finite number "
                    f"(it reads as {X[i, c]}); write missing values as '?'", path=path,
                    line=int(linenos[i]))
    return X


def _numeric_texts(features, num_idx, num_attrs, linenos, path) -> list[str]:
    """Per row the comma-joined numeric fields, quotes dropped (Weka reads ``'1.5'`` as
    1.5); a quoted value holding a comma (``'1,5'``) is refused whole, before the join
    would split it."""
    out = []
    for f, ln in zip(features, linenos):
        values = [f[j] for j in num_idx]
        for c, v in enumerate(values):
            if "'" in v or '"' in v:
                values[c] = _unquote(v.strip())
                if "," in values[c]:
                    raise DataFormatError(
                        f"value {v.strip()[:40]!r} of numeric attribute {num_attrs[c].name!r} "
                        "is not a number (a comma inside the quotes: write numbers with a decimal "
                        "point and no thousands separators)",
                        path=path, line=int(ln))
        out.append(",".join(values))
    return out


def _parse_features(features, feat_attrs, linenos, path):
    """``(X, feature_names, nominal_indices)``: the numeric block parsed strictly and at once,
    nominal attributes one-hot encoded.  ``features``: per row the text of its feature
    fields, or the list of those fields (rows with quoted values)."""
    n = len(features)
    num_idx = [j for j, a in enumerate(feat_attrs) if a.kind == "numeric"]
    nom_idx = [j for j, a in enumerate(feat_attrs) if a.kind == "nominal"]
    all_names = []
    for a in feat_attrs:
        all_names += [a.name] if a.kind == "numeric" else [f"{a.name}={v}" for v in a.values]
    if n == 0 or not feat_attrs:
        return np.empty((n, len(all_names))), all_names, nom_idx
    X_num = np.empty((n, 0))
    if isinstance(features[0], list):  # already split: quoted values may hold commas
        if num_idx:
            num_attrs = [feat_attrs[j] for j in num_idx]
            X_num = _parse_numeric(_numeric_texts(features, num_idx, num_attrs, linenos, path),
                                   num_attrs, None, linenos, path)
        S = np.array([[f[j] for j in nom_idx] for f in features], dtype=str).reshape(n, -1)
    else:
        if num_idx:
            X_num = _parse_numeric(features, feat_attrs, num_idx if nom_idx else None, linenos,
                                   path)
        if nom_idx:
            S = np.loadtxt(io.StringIO("\n".join(features)), delimiter=",", comments=None,
                           ndmin=2, dtype=str, usecols=nom_idx)
    if not nom_idx:
        return X_num, [a.name for a in feat_attrs], nom_idx
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


def _parse_labels(label_strings, dialect, parts, linenos, hattr, path):
    """``(y, dialect, hierarchy)``: each distinct label string parsed once into a frozenset,
    and the reading of the class list (:func:`~._arff_classes.choose_reading`) that
    declares every label used."""
    sets, first, inv = [], np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    if label_strings:
        uniq, first, inv = np.unique(np.asarray(label_strings, dtype=str), return_index=True,
                                     return_inverse=True)
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

    def unknown_error(unknown, reading, fix):
        # the first row holding an unknown label
        f_bad = min(int(f) for s, f in zip(sets, first) if s & unknown)
        lab = sorted(next(s for s, f in zip(sets, first) if int(f) == f_bad) & unknown)[0]
        return DataFormatError(
            f"label {lab!r} is not declared in the hierarchy of attribute {hattr.name!r} "
            f"({reading} reading; {len(unknown)} undeclared label(s) in the file)"
            f"{fix or '; add it to the class list'}", path=path, line=int(linenos[f_bad]))

    used = set().union(*sets)
    dialect, H = choose_reading(dialect, parts, used, hattr, unknown_error, path)
    inv = inv.ravel()
    y = [sets[i] for i in inv]
    if any(not s for s in sets):
        n_rows = int(sum(1 for i in inv if not sets[i]))
        logger.warning("%s: %d row(s) have no label ('?' or empty class field)", path, n_rows)
    return y, dialect, H
