"""One door: the estimators reach models, declarations, solvers and inference only through the
method registry (``hiercvx.methods``: ``get(name)`` and ``parts(name)``)."""

from __future__ import annotations

import ast
from pathlib import Path

import hiercvx
from hiercvx import methods

ESTIMATORS = Path(hiercvx.__file__).parent / "estimators"
SIDE_DOORS = ("formulations", "models", "solvers", "inference")


def _imported(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [a.name for a in node.names]
            yield node.lineno, module, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, []


def test_estimators_import_no_side_door():
    found = []
    for path in sorted(ESTIMATORS.glob("*.py")):
        for line, module, names in _imported(path):
            parts = module.split(".")
            if any(p in SIDE_DOORS for p in parts) or (
                    module in ("", "hiercvx") and set(names) & set(SIDE_DOORS)):
                found.append(f"{path.name}:{line} imports {module} {names}")
    assert not found, "\n".join(found)


def test_no_compatibility_alias():
    from hiercvx.estimators import svm
    assert not hasattr(svm, "_MarginSVC")


def test_every_registered_method_has_its_parts():
    for name in methods.names():
        assert methods.parts(name).name in (name, "orthogonal")
