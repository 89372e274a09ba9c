"""Fuzzing the file loaders: small valid ARFF, LIBSVM and LSHTC files mutated by
hypothesis (inserted characters and tokens, deleted spans, doubled and swapped lines,
byte-order marks, odd line ends, gzip).

Contract checked on every mutation: the loader either returns exactly what the file says
(compared with an independent reading written here) or raises a
:class:`~hiercvx.exceptions.DataFormatError` (a ValueError) naming the file and, unless the
fault is the file as a whole, the line.  Any other exception fails the test.  The bounded
runs are part of ``make test``; the ``slow`` variants run 1000 mutations per loader.
"""

from __future__ import annotations

import gzip
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hiercvx.datasets import load_arff, load_libsvm, load_lshtc_hierarchy
from hiercvx.exceptions import DataFormatError

ARFF = """\
% a small Clus-HMC file
@RELATION tiny
@ATTRIBUTE a numeric
@ATTRIBUTE 'b two' REAL
@ATTRIBUTE colour {red, 'dark, green'}
@ATTRIBUTE class hierarchical 01,01/01,01/02,02
@DATA
0.5,?,red,01/01@02
-1.25,2e3,'dark, green',01
?,7,?,01/02
"""

LIBSVM = """\
# labels, then index:value pairs
1,2 1:0.5 3:1.5
3 qid:4 2:2.0
 1:-1e-3 4:4 # no label
2 1:7
"""

LSHTC = """\
# parent child
1 2
1 3
3 4
5 6
"""

# pieces that trip parsers: separators of every kind, numbers that float() takes and the
# formats do not, quotes, comment starters, line breaks that str.splitlines sees
ALPHABET = ["\ufeff", "\x0c", "\x85", "\u2028", "\u2029", "\x0b", "\x1c", "\x00", "\xa0", ",",
            ":", "#", "%", "'", '"', "\\", "?", "@", "/", "{", "}", " ", "\t", "\n", "\r",
            "\r\n", "-", "+", ".", "e", "0", "1", "9", "_", "inf", "nan", "NaN", "1e999",
            "9" * 400, "\u0661", "x", "2147483648", "99999999999", "-1", "qid:1"]

# whole-file faults: the message names the file but no single line is to blame
WHOLE_FILE = ("contains no", "no @DATA", "no attribute of type 'hierarchical'",
              "hierarchical attributes", "no sample has a label", "decompresses to more than",
              "cannot be read", "the hierarchy is empty", "has no root")


@st.composite
def mutated(draw, text: str):
    """``(text, gzipped)``: ``text`` after 1-4 random edits."""
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "insert", "delete", "replace", "double", "swap"]))
        n = len(text)
        if kind in ("insert", "replace"):
            piece = draw(st.sampled_from(ALPHABET) | st.text(min_size=1, max_size=3))
            i = draw(st.integers(0, n))
            j = i if kind == "insert" else min(n, i + draw(st.integers(1, 4)))
            text = text[:i] + piece + text[j:]
        elif kind == "delete" and n:
            i = draw(st.integers(0, n - 1))
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        else:
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            if kind == "double":
                lines.insert(k, lines[k])
            else:
                m = draw(st.integers(0, len(lines) - 1))
                lines[k], lines[m] = lines[m], lines[k]
            text = "\n".join(lines)
    return text, draw(st.booleans())


def write(directory: str, name: str, text: str, gz: bool) -> Path:
    if gz:
        path = Path(directory) / (name + ".gz")
        with gzip.open(path, "wb") as fh:
            fh.write(text.encode("utf-8", errors="surrogatepass"))
    else:
        path = Path(directory) / name
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    return path


def file_lines(text: str) -> list[str]:
    """The file's lines as a reader of the formats counts them: a leading byte-order mark
    dropped, CR LF / CR / LF end a line, nothing else does."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def check_error(exc: Exception, path: Path, text: str) -> None:
    """A refusal must be a DataFormatError naming the file and, for a local fault, a line."""
    assert isinstance(exc, DataFormatError), f"{type(exc).__name__}: {exc}"
    assert isinstance(exc, ValueError)
    assert exc.path is not None and Path(exc.path) == path and str(path) in str(exc)
    if exc.line is None:
        assert any(w in str(exc) for w in WHOLE_FILE), f"no line in: {exc}"
    else:
        assert 1 <= exc.line <= max(1, len(file_lines(text))), str(exc)
        assert f"{path}:{exc.line}: " in str(exc)


def run_loader(loader, name: str, text: str, gz: bool, expect) -> None:
    """Load the mutated file (lone surrogates are written as such: a non-UTF-8 file); on
    success compare with ``expect(text, result)``."""
    with tempfile.TemporaryDirectory() as d:
        path = write(d, name, text, gz)
        try:
            result = loader(path)
        except Exception as exc:  # noqa: BLE001 - the contract is about every exception
            check_error(exc, path, text)
            return
    expect(text, result)


# ---------------------------------------------------------------------- independent readings
_BLANKS = re.compile(r"[ \t\v\f\r]+")
_PLAIN_INT = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def expect_lshtc(text: str, H) -> None:
    pairs = []
    for raw in file_lines(text):
        s = raw.strip(" \t\v\f\r")
        if s and s[0] not in "#%":
            pairs.append(tuple(_BLANKS.split(s)))
    if all(_PLAIN_INT.fullmatch(t) for p in pairs for t in p):
        pairs = [(int(a), int(b)) for a, b in pairs]
    edges = {(H.nodes[u], H.nodes[v]) for u, v in H.edge_index}
    named = {v for p in pairs for v in p}
    assert set(pairs) <= edges
    extra = edges - set(pairs)  # only the artificial root's edges to the top nodes
    assert all(u == H.root and u not in named for u, _ in extra)
    assert set(H.nodes) - {H.root} <= named | {H.root}


def expect_libsvm(text: str, d) -> None:
    rows = []
    for raw in file_lines(text):
        body = raw.split("#", 1)[0].strip(" \t\v\f\r")
        if not body:
            continue
        tok = re.split(r"[ \t]+", body)
        labels = () if ":" in tok[0] else tuple(float(v) for v in tok.pop(0).split(","))
        if tok and tok[0].startswith("qid:"):
            tok.pop(0)
        pairs = [t.split(":") for t in tok]
        assert all(_DECIMAL.fullmatch(v) for _, v in pairs)
        rows.append((labels, [(int(i), float(v)) for i, v in pairs]))
    assert d.n_samples == len(rows)
    offset = 0 if any(i == 0 for _, p in rows for i, _ in p) else 1
    X = d.X.tocsr()
    for k, (labels, pairs) in enumerate(rows):
        assert {float(v) for v in d.y[k]} == set(labels)
        got = dict(zip(X.indices[X.indptr[k]:X.indptr[k + 1]], X.data[X.indptr[k]:X.indptr[k + 1]]))
        assert got == {i - offset: v for i, v in pairs if v != 0}
        assert np.all(np.isfinite(X.data))


def expect_arff(text: str, d) -> None:
    lines = file_lines(text)
    start = next(k for k, s in enumerate(lines) if s.strip().lower().startswith("@data")) + 1
    data = [s for s in lines[start:] if s.strip() and s.strip()[0] != "%"]
    assert d.n_samples == len(data)
    numeric = [j for j, name in enumerate(d.feature_names) if "=" not in name]
    assert np.all(np.isfinite(d.X) | np.isnan(d.X))
    nodes = set(d.hierarchy.nodes)
    for k, row in enumerate(data):
        assert d.y[k] <= nodes
        if "'" in row or '"' in row:
            continue
        fields = [f.strip() for f in row.split("%", 1)[0].split(",")]  # '%' starts a comment
        for c, j in enumerate(numeric):
            want = np.nan if fields[c] == "?" else float(fields[c])
            np.testing.assert_equal(d.X[k, j], want)


def comments_appended(draw_lines, text: str) -> str:
    """``text`` with a ``%`` comment (holding commas, quotes, braces) after some of its lines."""
    lines = text.split("\n")
    for k, note in draw_lines:
        lines[k % (len(lines) - 1)] += note
    return "\n".join(lines)


# ---------------------------------------------------------------------- the suites
BOUNDED = settings(max_examples=60, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=1000, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def test_the_unmutated_files_load():
    for text, loader, expect, name in ((ARFF, load_arff, expect_arff, "t.arff"),
                                       (LIBSVM, load_libsvm, expect_libsvm, "t.svm"),
                                       (LSHTC, load_lshtc_hierarchy, expect_lshtc, "t.hier")):
        with tempfile.TemporaryDirectory() as d:
            expect(text, loader(write(d, name, text, gz=False)))


@BOUNDED
@given(mutated(ARFF))
def test_fuzz_arff(case):
    run_loader(load_arff, "t.arff", *case, expect_arff)


@BOUNDED
@given(st.lists(st.tuples(st.integers(0, 100),
                          st.sampled_from([" % c", "% 1,2", "\t%{x}", " %'q", " % \"a, b\""])),
                min_size=1, max_size=4))
def test_arff_trailing_comments_change_nothing(notes):
    """Weka's rule: ``%`` outside quotes starts a comment, after a declaration or a row too
    (not inside the quoted value ``'dark, green'``)."""
    with tempfile.TemporaryDirectory() as d:
        plain = load_arff(write(d, "p.arff", ARFF, gz=False))
        noted = load_arff(write(d, "n.arff", comments_appended(notes, ARFF), gz=False))
    np.testing.assert_array_equal(noted.X, plain.X)
    assert noted.y == plain.y and noted.hierarchy == plain.hierarchy
    assert noted.feature_names == plain.feature_names


@BOUNDED
@given(mutated(LIBSVM))
def test_fuzz_libsvm(case):
    run_loader(load_libsvm, "t.svm", *case, expect_libsvm)


@BOUNDED
@given(mutated(LSHTC))
def test_fuzz_lshtc(case):
    run_loader(load_lshtc_hierarchy, "t.hier", *case, expect_lshtc)


@pytest.mark.slow
@LONG
@given(mutated(ARFF))
def test_fuzz_arff_long(case):
    run_loader(load_arff, "t.arff", *case, expect_arff)


@pytest.mark.slow
@LONG
@given(mutated(LIBSVM))
def test_fuzz_libsvm_long(case):
    run_loader(load_libsvm, "t.svm", *case, expect_libsvm)


@pytest.mark.slow
@LONG
@given(mutated(LSHTC))
def test_fuzz_lshtc_long(case):
    run_loader(load_lshtc_hierarchy, "t.hier", *case, expect_lshtc)
