"""Labels looked up among node names: what is a label set, which column a label names, and why a
label is unknown.

A label is a node name itself, not only a value equal to one in Python: ``True`` and ``1.0``
equal the name ``1`` as dict keys, and are refused as labels of it, as
:class:`hiercvx.Hierarchy` refuses such names side by side.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

import numpy as np

__all__ = ["is_label_set", "label_positions", "unknown_label_hint", "same_name", "name_key",
           "plain_name"]


def is_label_set(item, index: Mapping) -> bool:
    """A sample's label is a set when it is a container that is not itself a node name."""
    if isinstance(item, (str, bytes)):
        return False
    if isinstance(item, (set, frozenset, list, np.ndarray)):
        return True
    if isinstance(item, tuple):
        try:
            return item not in index
        except TypeError:
            return True
    return False


#: label types that are never label sets: one sample, one name (``numpy`` scalars included)
_SCALAR_LABEL_TYPES = (str, bytes, int, float, np.str_, np.bytes_, np.integer, np.floating, np.bool_)


def plain_name(name):
    """``name`` with its numpy scalars as Python scalars, inside tuples too (numpy prints
    ``np.int64(1)`` inside a tuple, which would tell ``(np.int64(1), 2)`` from ``(1, 2)``)."""
    if isinstance(name, np.generic):
        return name.item()
    if type(name) is tuple:
        return tuple(plain_name(v) for v in name)
    return name


def name_key(name) -> str:
    """Text that tells apart names Python merges (``1``, ``1.0``, ``True``) and keeps together
    a numpy scalar and the Python scalar it holds; equal names have equal keys."""
    return str(plain_name(name))


def same_name(label, name) -> bool:
    """Whether ``label`` is the node name ``name`` and not only equal to it in Python (``True``
    and ``1.0`` equal ``1``): the rule :func:`hiercvx._node_names.check_name` applies to the names themselves."""
    return label is name or name_key(label) == name_key(name)


def _lookup(index: Mapping, names: list, v) -> int:
    """``v``'s column in ``index`` (name -> column; ``names`` by column), -1 when it is not a
    name there."""
    try:
        j = index.get(v, -1)
    except TypeError:   # unhashable
        return -1
    return j if j >= 0 and same_name(v, names[j]) else -1


def _by_column(index: Mapping) -> list:
    names = [None] * len(index)
    for name, j in index.items():
        names[j] = name
    return names


def _scalar_label_columns(labels, index: Mapping, names: list):
    """Every sample's column when each label is one known name of a scalar type, else ``None``.

    The common case (one label per sample, e.g. a ``predict`` output of 50 000 test points)
    without a Python step per sample: a 1-D array is looked up once per distinct name."""
    if isinstance(labels, np.ndarray):
        if labels.ndim != 1 or labels.dtype.kind not in "biufUS":
            return None
        distinct, inverse = np.unique(labels, return_inverse=True)
        cols = np.fromiter((_lookup(index, names, v.item()) for v in distinct), dtype=np.int64,
                           count=len(distinct))
        cols = cols[inverse.ravel()]
    else:
        if not all(issubclass(t, _SCALAR_LABEL_TYPES) for t in set(map(type, labels))):
            return None
        cols = np.fromiter((_lookup(index, names, v) for v in labels), dtype=np.int64,
                           count=len(labels))
    return cols if cols.size and cols.min() >= 0 else None


def label_positions(labels, index: Mapping):
    """``(rows, cols, unknown)`` of single labels or label sets looked up in ``index``
    (name -> column): one ``(row, col)`` per known label, ``(row, label)`` per unknown one.  A
    label only equal to a name in Python (``True`` or ``1.0`` for the name ``1``) is unknown."""
    names = _by_column(index)
    cols = _scalar_label_columns(labels, index, names)
    if cols is not None:
        return np.arange(cols.size), cols, []
    rows, cols, unknown = [], [], []
    for s, item in enumerate(labels):
        members = item if is_label_set(item, index) else (item,)
        for v in members:
            j = _lookup(index, names, v)
            if j < 0:
                unknown.append((s, v))
                continue
            rows.append(s)
            cols.append(j)
    return rows, cols, unknown


def unknown_label_hint(unknown, index: Mapping) -> str:
    """A sentence for unknown labels ``[(sample, label), ...]`` when one of them is a name in
    disguise: equal to a name in Python but of another type, spelled like a name of another
    type (``"3"`` for the node ``3``), or a name in another case or with a small typo (first
    five labels looked at); ``""`` when none is."""
    names = _by_column(index)
    for _, v in unknown:
        try:
            j = index.get(v, -1)
        except TypeError:
            continue
        if j >= 0:
            return (f". {v!r} ({type(v).__name__}) equals the name {names[j]!r} "
                    f"({type(names[j]).__name__}) in Python but is not it: give labels of the "
                    "names' own type")
    spelled = {}
    for name in names:
        spelled.setdefault(str(name), name)
    for _, v in unknown[:5]:
        name = spelled.get(str(v))
        if name is not None and type(name) is not type(v):
            kind = type(name).__name__
            return (f". {v!r} ({type(v).__name__}) is spelled like the node {name!r} ({kind}): "
                    f"the hierarchy's names are {kind}s; convert the labels to {kind}"
                    + (" (e.g. [int(v) for v in y])" if kind == "int" else "")
                    + " or build the hierarchy from names spelled as the labels")
    texts = [t for t in spelled if isinstance(spelled[t], str)]
    folded = {}
    for t in texts:
        folded.setdefault(t.casefold(), t)
    for _, v in unknown[:5]:
        if not isinstance(v, str):
            continue
        close = [folded[v.casefold()]] if v.casefold() in folded else \
            difflib.get_close_matches(v, texts, n=3, cutoff=0.8)
        if close:
            return (f". {v!r} is close to the node name{'s' if len(close) > 1 else ''} "
                    f"{', '.join(map(repr, close))} (names are compared exactly, case included)")
    return ""
