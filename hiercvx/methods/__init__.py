"""The method registry: every method of the source papers with everything hiercvx has for it.

``REGISTRY`` maps a method's name to its :class:`Method`: paper, equation numbers, model
(``prepare``), reference builders (primal, and dual where declared), fast solvers, estimator,
sheet and built-in problems.  The estimators, ``tests/test_against_reference.py``, the
benchmarks and ``hiercvx verify`` iterate it, so a new paper is one entry module here.

>>> from hiercvx import methods
>>> sorted(methods.REGISTRY)                                  # doctest: +SKIP
>>> m = methods.get("hsvm"); m.equations["primal"]            # doctest: +SKIP
'(4.10)'
"""

from __future__ import annotations

from ..exceptions import InputError
from . import hsvm, multiclass, nhsvm, orthogonal, sibling
from ._registry import STRUCTURES, Case, FastSolver, Method
from .cases import problem
from ._parts import Parts, parts

__all__ = ["REGISTRY", "get", "names", "Method", "FastSolver", "Case", "STRUCTURES", "problem",
           "parts", "Parts"]

REGISTRY: dict[str, Method] = {}
for _module in (multiclass, hsvm, orthogonal, nhsvm, sibling):
    for _method in _module.METHODS:
        if _method.name in REGISTRY:
            raise InputError(f"method {_method.name!r} is registered twice")
        REGISTRY[_method.name] = _method


def names() -> tuple[str, ...]:
    """The registered method names, in registry order."""
    return tuple(REGISTRY)


def get(name: str) -> Method:
    """The registered method ``name``; an unknown name lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown method {name!r}; registered methods: {', '.join(REGISTRY)}") from None
