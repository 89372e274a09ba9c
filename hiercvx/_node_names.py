"""Node names as a hierarchy takes them: the checks :class:`hiercvx.Hierarchy` applies to each
name and to each parent list of :meth:`~hiercvx.Hierarchy.from_parents`.

A name must be hashable, equal to itself and not a set (labels read sets as label sets), and no
two names may be equal in Python (``1``, ``1.0``, ``True``) without being the same name.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._label_lookup import same_name
from .exceptions import HierarchyError, InputTypeError

__all__ = ["not_none", "check_name", "parent_list"]


def not_none(value, name: str, where: str) -> None:
    """Refuse ``None`` where a collection is expected (iterating it gives no name)."""
    if value is None:
        raise InputTypeError(f"{where}: {name} is None; pass a collection "
                             f"({'a mapping or pairs' if name == 'parents' else 'a list'})")


def check_name(seen: dict, v, what: str = "node name") -> None:
    """Refuse a name that is None, unhashable, NaN, a set, or one Python merges with another in
    ``seen`` (name -> object first given; ``1``, ``1.0``, ``True``); ``what``: its wording."""
    if v is None:
        raise HierarchyError(f"{what} is None; None stands for 'no parent' in from_parents and "
                             "cannot name a node; name it with a string or an integer")
    try:
        hash(v)
    except TypeError:
        raise HierarchyError(f"{what} {v!r} is not hashable ({type(v).__name__}); name nodes "
                             "with strings, integers or tuples of them") from None
    if v != v:
        raise HierarchyError(f"{what} {v!r} is not equal to itself (NaN), so it could never be "
                             "looked up; name the node with a string or an integer")
    if isinstance(v, (set, frozenset)):
        raise HierarchyError(f"{what} {v!r} is a set, which labels read as a label set (a "
                             "sample's several labels), so it could never be a label; name the "
                             "node with a string, an integer or a tuple")
    first = seen.setdefault(v, v)
    if not same_name(first, v):
        raise HierarchyError(f"node names {first!r} and {v!r} are equal in Python ({first!r} == {v!r}) "
                             "and would be merged into one node; give them distinct names "
                             "(for example strings)")


def parent_list(child, par, declared: dict) -> list:
    """The parents of ``child`` given as ``par`` in :meth:`Hierarchy.from_parents`, each a
    valid name (``declared``: the declared node names)."""
    if isinstance(par, (list, set, frozenset)) or (isinstance(par, np.ndarray) and par.ndim == 1):
        plist = list(par)
    elif isinstance(par, tuple):
        try:
            plist = [par] if par in declared else list(par)
        except TypeError:  # unhashable inside: not a name
            plist = list(par)
    elif isinstance(par, (Iterator, np.ndarray)):
        raise HierarchyError(f"the parents of node {child!r} are a {type(par).__name__}; give "
                             "one parent name, or a list of parent names")
    else:
        plist = [par]
    for p in plist:
        if p is None:
            raise HierarchyError(f"node {child!r} has None among its parents {par!r}; None means "
                                 f"'no parent' only as the whole entry ({child!r}: None); drop it "
                                 "from the list")
        check_name({}, p, f"the parent of node {child!r} given as")
    return plist
