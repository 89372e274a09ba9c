"""How the class list of a Clus-HMC ``hierarchical`` attribute is read: as paths or as
parent/child edges (the ``dialect`` of :func:`hiercvx.datasets.load_arff`).

Both readings are tried against the labels of the data before one is chosen, so that a
wrong reading is never taken silently: a reading that leaves a label unexplained or builds
an invalid hierarchy is dropped, and two readings that both explain the data are refused
unless the class list has the Gene Ontology form (``root`` at the top).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import DataFormatError, HierarchyError
from ..hierarchy import ARTIFICIAL_ROOT, Hierarchy

__all__ = ["DIALECTS", "class_parts", "choose_reading"]

DIALECTS = ("auto", "paths", "edges")
_PATH_SEP = "/"
_GO_TOP = "root"
_OTHER = {"paths": "edges", "edges": "paths"}
_AS = {"paths": "as paths", "edges": "as parent/child edges"}


@dataclass
class _Reading:
    """One reading of the class list: the hierarchy it builds, or why it does not fit."""

    dialect: str
    hierarchy: Hierarchy | None = None
    unknown: frozenset = frozenset()   # labels of the data it does not declare
    problem: str = ""                  # why it cannot be built (not pairs, cycle, ...)

    @property
    def ok(self) -> bool:
        return self.hierarchy is not None


def class_parts(entries, path, line) -> list[list[str]]:
    """Every class entry split at ``/``; an empty component raises
    :class:`~hiercvx.exceptions.DataFormatError`."""
    parts = [e.split(_PATH_SEP) for e in entries]
    for e, p in zip(entries, parts):
        if any(c.strip() == "" for c in p):
            raise DataFormatError(f"malformed header: class entry {e!r} has an empty component",
                                  path=path, line=line)
    return parts


def _build(dialect, entries, parts) -> Hierarchy:
    """The hierarchy of one reading; in the paths reading the top-level entries are classes
    (as in Clus-HMC) and hang under the artificial root even when there is only one."""
    if dialect == "edges":
        return Hierarchy.from_edges([(p[0], p[1]) for p in parts])
    H = Hierarchy.from_paths(entries, sep=_PATH_SEP)
    if H.root != ARTIFICIAL_ROOT:   # one top-level class: from_paths made it the root
        H = Hierarchy([(ARTIFICIAL_ROOT, H.root), *H.edges], nodes=[ARTIFICIAL_ROOT, *H.nodes])
    return H


def _read(dialect, entries, parts, used) -> _Reading:
    """The reading ``dialect`` of the class list, checked against the labels ``used``."""
    if dialect == "edges":
        bad = next((e for e, p in zip(entries, parts) if len(p) != 2), None)
        if bad is not None:
            return _Reading(dialect, problem=f"dialect='edges' needs parent/child pairs, but "
                                             f"class entry {bad!r} is not one")
        nodes = {c for p in parts for c in p}
    else:
        nodes = {_PATH_SEP.join(p[:j]) for p in parts for j in range(1, len(p) + 1)}
    unknown = frozenset(used - nodes)
    if unknown:
        return _Reading(dialect, unknown=unknown)
    try:
        return _Reading(dialect, hierarchy=_build(dialect, entries, parts))
    except HierarchyError as exc:
        return _Reading(dialect, problem=f"the hierarchy declared by the class attribute is "
                                         f"invalid ({dialect} reading): {exc}")


def _is_go_form(parts) -> bool:
    """Parent/child pairs with ``root`` at the top: every parent is ``root`` or the child
    of another pair (the Gene Ontology files of Clus-HMC)."""
    if not all(len(p) == 2 and p[0] != p[1] for p in parts):
        return False
    children = {p[1] for p in parts}
    parents = {p[0] for p in parts}
    return _GO_TOP in parents and all(v == _GO_TOP or v in children for v in parents)


def _ambiguity(paths: _Reading, edges: _Reading, used, hattr) -> str:
    """Why two readings that both explain the data are refused, naming what each gives."""
    gives = (f"as paths it gives {paths.hierarchy!r}, as parent/child edges "
             f"{edges.hierarchy!r}")
    P, E = paths.hierarchy, edges.hierarchy

    def place(H, v):
        return "the root" if v == H.root else "a child of " + ", ".join(map(repr, H.parents(v)))

    # a label placed differently by the two readings, one under a parent in both if any
    moved = sorted((v for v in used if P.parents(v) != E.parents(v)),
                   key=lambda v: (v in (P.root, E.root), str(v)))
    if moved:
        v = moved[0]
        gives += f"; label {v!r} is {place(P, v)} as paths and {place(E, v)} as edges"
    fit = "every label of the data is a node of both" if used else "the data has no labels"
    return (f"the class list of attribute {hattr.name!r} reads both as paths and as "
            f"parent/child edges, and {fit}: {gives}. Say which it is: pass dialect='paths' "
            "or dialect='edges'")


def choose_reading(dialect, parts, used, hattr, unknown_error, path) -> tuple[str, Hierarchy]:
    """``(dialect, hierarchy)``: the reading of the class list of ``hattr`` that explains
    the labels ``used``.

    ``dialect="auto"``: a class list that is not all parent/child pairs is read as paths;
    one in the Gene Ontology form (:func:`_is_go_form`) as edges, or as paths when only
    that explains the labels; any other list of pairs by the one reading that explains
    the labels and builds a valid hierarchy, and refused when both do (they differ: path
    nodes are named by prefixes ``A/B``, edge nodes by components ``B``).  A forced
    dialect that fails names the other one when the other would work.
    ``unknown_error(labels, dialect, fix)`` builds the error for undeclared labels (an
    empty ``fix``: add them to the class list).
    """
    entries = hattr.values
    memo = {}

    def read(d):
        if d not in memo:
            memo[d] = _read(d, entries, parts, used)
        return memo[d]

    def fail(r: _Reading, hint: bool):
        other = read(_OTHER[r.dialect]) if hint else None
        tail = (f"; read {_AS[other.dialect]}, the class list declares every label and builds "
                f"a valid hierarchy: pass dialect={other.dialect!r}" if other and other.ok else "")
        if r.unknown:
            return unknown_error(r.unknown, r.dialect, tail)
        return DataFormatError(r.problem + tail, path=path, line=hattr.line)

    if dialect != "auto":
        r = read(dialect)
        if r.ok:
            return r.dialect, r.hierarchy
        raise fail(r, hint=True)
    pairs = all(len(p) == 2 and p[0] != p[1] for p in parts)
    if not pairs:
        r = read("paths")
        if r.ok:
            return r.dialect, r.hierarchy
        raise fail(r, hint=False)
    if _is_go_form(parts):
        r = read("edges")
        if r.ok:
            return r.dialect, r.hierarchy
        if r.unknown and read("paths").ok:
            return "paths", read("paths").hierarchy
        raise fail(r, hint=True)
    p, e = read("paths"), read("edges")
    if p.ok and e.ok:
        raise DataFormatError(_ambiguity(p, e, used, hattr), path=path, line=hattr.line)
    if p.ok or e.ok:
        r = p if p.ok else e
        return r.dialect, r.hierarchy
    # neither works: an invalid hierarchy that explains the labels says more than an unknown label
    raise fail(e if not e.unknown else p, hint=False)
