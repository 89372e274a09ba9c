"""Public docstrings: every public method and property of ``Hierarchy`` and every name in
``hiercvx.kernels.__all__`` has one, and a callable with parameters (besides ``self`` /
``cls``) has a numpydoc Parameters section naming them in signature order."""

import inspect
import re
import warnings

import pytest

from hiercvx import Hierarchy, kernels


def _hierarchy_members():
    """``(label, function or None, docstring)`` for each public name defined on Hierarchy."""
    out = []
    for name, attr in vars(Hierarchy).items():
        if name.startswith("_"):
            continue
        if isinstance(attr, property):
            out.append((f"Hierarchy.{name}", None, attr.fget.__doc__))
        elif isinstance(attr, (classmethod, staticmethod)):
            out.append((f"Hierarchy.{name}", attr.__func__, attr.__func__.__doc__))
        elif inspect.isfunction(attr):
            out.append((f"Hierarchy.{name}", attr, attr.__doc__))
        else:
            out.append((f"Hierarchy.{name}", None, None))  # a data attribute cannot carry one
    return out


def _kernels_members():
    out = []
    for name in kernels.__all__:
        obj = getattr(kernels, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            doc = obj.__doc__
            if inspect.isclass(obj) and doc and doc.startswith(f"{name}("):
                doc = None  # the signature a dataclass without a docstring gets as one
            out.append((f"kernels.{name}", obj, doc))
    return out


MEMBERS = _hierarchy_members() + _kernels_members()
IDS = [label for label, _, _ in MEMBERS]


def _signature_parameters(obj) -> list:
    """Parameter names as numpydoc writes them, without ``self`` / ``cls``."""
    if obj is None:
        return []
    params = list(inspect.signature(obj).parameters.values())
    if params and params[0].name in ("self", "cls") and not inspect.isclass(obj):
        params = params[1:]
    prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [prefix.get(p.kind, "") + p.name for p in params]


def _section(doc: str, title: str):
    """The lines of a numpydoc section (title underlined by dashes), or None."""
    lines = inspect.cleandoc(doc).splitlines()

    def header(i):
        return (i + 1 < len(lines) and lines[i].strip() and lines[i + 1].strip()
                and set(lines[i + 1].strip()) == {"-"})

    for i in range(len(lines)):
        if header(i) and lines[i].strip() == title:
            body = []
            for j in range(i + 2, len(lines)):
                if header(j):
                    break
                body.append(lines[j])
            return body
    return None


def _documented_parameters(doc: str) -> list:
    """Names on the unindented lines of the Parameters section (``a, b : type`` gives two)."""
    body = _section(doc, "Parameters") or []
    names = []
    for line in body:
        if line.strip() and not line[0].isspace():
            head = re.match(r"^([^:]+?)\s*(?::|$)", line).group(1)
            names.extend(n.strip() for n in head.split(","))
    return names


def test_the_member_list_is_complete():
    for name in ("nodes", "root", "parents", "children", "descendants", "leaves", "is_leaf",
                 "is_tree", "closure", "depths", "leaf_mask", "leaf_indices", "from_parents"):
        assert f"Hierarchy.{name}" in IDS
    assert {"kernels.make_kernel", "kernels.gram", "kernels.median_heuristic",
            "kernels.psd_factor", "kernels.Kernel"} <= set(IDS)


@pytest.mark.parametrize("label, obj, doc", MEMBERS, ids=IDS)
def test_public_member_has_a_docstring(label, obj, doc):
    assert doc and doc.strip(), f"{label} has no docstring"


@pytest.mark.parametrize("label, obj, doc", MEMBERS, ids=IDS)
def test_parameters_section_names_the_signature(label, obj, doc):
    expected = _signature_parameters(obj)
    if not expected:
        return
    assert doc and _section(doc, "Parameters") is not None, \
        f"{label} takes {expected} but its docstring has no Parameters section"
    documented = _documented_parameters(doc)
    assert documented == expected, \
        f"{label}: the Parameters section names {documented}, the signature {expected}"


@pytest.mark.parametrize("label, obj, doc", [m for m in MEMBERS if m[2]],
                         ids=[m[0] for m in MEMBERS if m[2]])
def test_numpydoc_reads_the_docstring(label, obj, doc):
    docscrape = pytest.importorskip("numpydoc.docscrape")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown or malformed section is a warning
        parsed = docscrape.NumpyDocString(inspect.cleandoc(doc))
    names = [n.strip() for p in parsed["Parameters"] for n in p.name.split(",")]
    assert names == _documented_parameters(doc)


def test_kernels_constants_are_named_in_the_module_docstring():
    for name in kernels.__all__:
        obj = getattr(kernels, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            assert f"``{name}``" in kernels.__doc__, f"kernels.{name} is not described anywhere"
