"""Numba's on-disk cache for hiercvx's compiled kernels, invalidated by every source they use.

Numba stamps a cached kernel with its own file only (numba's documentation, "Cache
invalidation"; numba issue #1833): a kernel that calls a compiled helper of another module, or
reads a constant from one, keeps the machine code built from that module's *old* source after
it changes.  A stale kernel computes with old code and nothing says so.

This module adds the missing dependency to numba's stamp.  For every file of the package that
uses numba it follows the package's relative imports (``from .x import ...``,
``from .. import x``) transitively and hashes the contents of every file reached; that digest
joins the stamp numba keeps in each cache index.  When any of those files changes, every
index of the package's kernels no longer matches and numba compiles them again (and
overwrites the stale files), exactly as if the kernel's own file had changed.

:func:`install` registers the locators; ``hiercvx/__init__.py`` calls it before any kernel
module is imported.  They claim only functions defined inside the package's directory; every
other numba function keeps numba's own locators.  If numba's cache internals are not where
this module expects them, :func:`install` leaves numba as it is and reports it through
:func:`installed`.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

__all__ = ["dependency_files", "install", "installed", "source_digest"]

_PACKAGE_ROOT = Path(__file__).resolve().parent
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+(\.+)([\w.]*)\s+import\s+(\([^)]*\)|[^#\n]*)", re.MULTILINE)
_USES_NUMBA = re.compile(r"^\s*(?:from\s+numba\b|import\s+numba\b)", re.MULTILINE)
_installed: list[type] = []


def _module_file(package_dir: Path, dotted: str) -> Path | None:
    """The file of module ``dotted`` (relative to ``package_dir``), or None."""
    base = package_dir.joinpath(*dotted.split(".")) if dotted else package_dir
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_files(path: Path, root: Path) -> set[Path]:
    """Files of ``root``'s package that ``path`` imports relatively: ``from .x import a``
    names the module ``x`` and, where ``a`` is a submodule, ``x.a``; ``from . import a``
    names the package's ``__init__`` only for names that are not submodules."""
    found = set()
    for dots, dotted, names in _RELATIVE_IMPORT.findall(path.read_text(encoding="utf-8")):
        package_dir = path.parent
        for _ in range(len(dots) - 1):
            package_dir = package_dir.parent
        names_only = True
        for item in names.strip("()").split(","):
            name = item.split("#")[0].split(" as ")[0].strip()
            if not name.isidentifier():
                continue
            sub = _module_file(package_dir, f"{dotted}.{name}" if dotted else name)
            if sub is None:
                names_only = False
            else:
                found.add(sub)
        module = _module_file(package_dir, dotted)
        if module is not None and (dotted or not names_only):
            found.add(module)
    return {f.resolve() for f in found if root in f.resolve().parents}


def dependency_files(root: Path | str = _PACKAGE_ROOT) -> tuple[Path, ...]:
    """Every file of the package at ``root`` that uses numba, and every file of the package
    they import from, transitively; sorted."""
    root = Path(root).resolve()
    todo = [p.resolve() for p in sorted(root.rglob("*.py"))
            if _USES_NUMBA.search(p.read_text(encoding="utf-8"))]
    seen = set(todo)
    while todo:
        for dep in _imported_files(todo.pop(), root):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return tuple(sorted(seen))


@lru_cache(maxsize=None)
def source_digest(root: Path | str = _PACKAGE_ROOT) -> str:
    """SHA-256 over the paths (relative to ``root``) and contents of
    :func:`dependency_files`: the part of every kernel's cache stamp that numba omits.
    Computed once per process (sources do not change under a running interpreter)."""
    root = Path(root).resolve()
    digest = hashlib.sha256()
    for path in dependency_files(root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _stamped(locator: type, root: Path) -> type:
    """A subclass of numba locator class ``locator`` that claims the functions defined under
    ``root`` and adds :func:`source_digest` of ``root`` to their stamp."""

    class Stamped(locator):
        @classmethod
        def from_function(cls, py_func, py_file):
            path = Path(os.path.abspath(py_file))
            if root not in path.parents:
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), source_digest(root))

    Stamped.__name__ = Stamped.__qualname__ = f"DependencyStamped{locator.__name__}"
    return Stamped


def install(root: Path | str = _PACKAGE_ROOT) -> bool:
    """Put dependency-stamped locators for the functions under ``root`` in front of numba's
    own (the user's ``NUMBA_CACHE_DIR``, the in-tree ``__pycache__``, the user-wide cache
    directory keep their places: each gets a stamped twin just before it).  Returns whether
    they are installed; idempotent."""
    root = Path(root).resolve()
    if any(getattr(cls, "_hiercvx_root", None) == root for cls in _installed):
        return True
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
        classes = impl._locator_classes
        bases = [getattr(caching, name) for name in
                 ("_UserProvidedCacheLocator", "UserProvidedCacheLocator", "InTreeCacheLocator",
                  "_InTreeCacheLocator", "_UserWideCacheLocator", "UserWideCacheLocator")
                 if hasattr(caching, name)]
    except (ImportError, AttributeError):
        return False
    for base in bases:
        if base not in classes:
            continue
        stamped = _stamped(base, root)
        stamped._hiercvx_root = root
        classes.insert(classes.index(base), stamped)
        _installed.append(stamped)
    return any(getattr(cls, "_hiercvx_root", None) == root for cls in _installed)


def installed() -> bool:
    """Whether the package's kernels are cached with dependency stamps."""
    return any(getattr(cls, "_hiercvx_root", None) == _PACKAGE_ROOT for cls in _installed)
