"""A formulation as a reader writes it: the declaration beside a CVXPY reference, and its text
and LaTeX renderings (``hiercvx show``, :meth:`hiercvx.ReferenceProblem.describe`).

A builder declares a :class:`Formulation`: the objective and each constraint family as a
:class:`Term` (plain text, LaTeX, the paper's equation number), and a legend of
:class:`Symbol`\\ s -- each variable with its meaning and its shape in dimension symbols
(``n`` examples, ``d`` features, ``M`` nodes, ...), each other symbol the lines use with its
meaning in text and in LaTeX.  The rendering writes the formulation in those symbols; the numbers
of the problem at hand (its dimensions, rows, size, problem class and solver) follow in a
separate "instance" block (LaTeX comments in the LaTeX rendering, so a printed page shows the
formulation only).  :func:`latex_document` wraps a rendering into a document that compiles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import cvxpy as cp
import numpy as np
from cvxpy.constraints import PSD, SOC, Equality, ExpCone, Inequality, NonNeg, NonPos, Zero

from .exceptions import InputError

__all__ = ["Term", "Symbol", "Formulation", "DIMENSIONS", "describe_parts", "render_text",
           "render_latex", "latex_document", "latex_text", "latex_symbol"]

#: Meanings of the dimension symbols the formulations' shapes use (a formulation's ``dims``
#: may add its own or say more).
DIMENSIONS = {
    "n": ("examples", "examples"),
    "d": ("features", "features"),
    "M": ("nodes of the hierarchy, the root included", "nodes of the hierarchy, the root included"),
    "m": ("nodes of the hierarchy without the root (M - 1)",
          "nodes of the hierarchy without the root ($M - 1$)"),
    "k": ("classes", "classes"),
    "q": ("classes (label sets the model scores)", "classes (label sets the model scores)"),
    "L": ("leaves", "leaves"),
    "P": ("margin pairs (one constraint each)", "margin pairs (one constraint each)"),
}


@dataclass(frozen=True)
class Term:
    """One line of a formulation: plain ``text``, its ``latex`` and the paper's equation ``eq``."""

    text: str
    latex: str = ""
    eq: str = ""

    @classmethod
    def of(cls, value) -> "Term":
        """A :class:`Term` from a ``Term``, a string or a ``(text, latex, eq)`` tuple."""
        if isinstance(value, Term):
            return value
        if isinstance(value, str):
            return cls(value)
        return cls(*value)


@dataclass(frozen=True)
class Symbol:
    """One entry of a formulation's legend.

    Parameters
    ----------
    meaning : str
        What it is, in plain text.
    latex : str, optional
        The meaning in LaTeX (text mode, mathematics between ``$``); without it the plain
        meaning is escaped, which prints ASCII notation literally.
    symbol : str, optional
        The symbol in LaTeX mathematics, when the name does not say it (``"c_i"``, ``"b"``
        for a variable named ``intercept``).
    shape : tuple of str, optional
        A variable's shape in dimension symbols (:data:`~hiercvx.describe.DIMENSIONS`):
        ``("M", "d")``; ``()`` for a scalar; ``None`` (undeclared) shows the numbers of the problem
        at hand.
    """

    meaning: str
    latex: str = ""
    symbol: str = ""
    shape: tuple | None = None

    @classmethod
    def of(cls, value) -> "Symbol":
        """A :class:`Symbol` from a ``Symbol``, a string (the meaning) or a tuple of fields."""
        if isinstance(value, Symbol):
            return value
        if isinstance(value, str):
            return cls(value)
        return cls(*value)


@dataclass(frozen=True)
class Formulation:
    """The problem as a reader writes it, declared by the builder next to the CVXPY problem.

    ``objective`` and each of ``constraints`` (name -> family; the names of the
    :class:`~hiercvx.reference.ReferenceProblem`'s ``constraints`` dict where the family has
    duals) are :class:`Term`\\ s or ``(text, latex, eq)`` tuples; ``variables`` maps a
    variable's name to a :class:`Symbol` (or its meaning); ``notation`` maps each other symbol
    the lines use, as the text lines write it, to a :class:`Symbol`; ``dims`` gives meanings of
    dimension symbols beyond (or instead of) :data:`~hiercvx.describe.DIMENSIONS`, as
    ``(text, latex)`` pairs; ``parameters`` the LaTeX symbol of a swept parameter whose name does
    not say it.
    """

    objective: Any
    constraints: Mapping[str, Any] = field(default_factory=dict)
    variables: Mapping[str, Any] = field(default_factory=dict)
    notation: Mapping[str, Any] = field(default_factory=dict)
    dims: Mapping[str, Any] = field(default_factory=dict)
    parameters: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "objective", Term.of(self.objective))
        object.__setattr__(self, "constraints",
                           {k: Term.of(v) for k, v in dict(self.constraints).items()})
        object.__setattr__(self, "variables", {k: Symbol.of(v) for k, v in dict(self.variables).items()})
        object.__setattr__(self, "notation", {k: Symbol.of(v) for k, v in dict(self.notation).items()})
        object.__setattr__(self, "dims", {k: (v, v) if isinstance(v, str) else tuple(v)
                                          for k, v in dict(self.dims).items()})
        object.__setattr__(self, "parameters", dict(self.parameters))

    def dimension(self, sym: str) -> tuple[str, str]:
        """``(text, latex)`` meaning of the dimension symbol ``sym``."""
        if sym in self.dims:
            return self.dims[sym]
        if sym in DIMENSIONS:
            return DIMENSIONS[sym]
        raise InputError(f"the dimension symbol {sym!r} has no meaning; declare it in "
                         "Formulation(dims={...})")


# ---------------------------------------------------------------------- LaTeX helpers
_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "kappa", "lambda",
          "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega"}
_CAPITAL_GREEK = {"Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega"}


def latex_symbol(name: str) -> str:
    """A variable name as a LaTeX symbol: ``xi`` -> ``\\xi``, ``W`` -> ``W``, ``x_k`` -> ``x_{k}``."""
    base, _, sub = name.partition("_")
    if base == "lam":
        base = "lambda"
    if base in _GREEK or base in _CAPITAL_GREEK:
        head = f"\\{base}"
    else:
        head = base if len(base) == 1 else f"\\mathrm{{{base}}}"
    if not sub:
        return head
    return head + (f"_{{{sub}}}" if re.fullmatch(r"[A-Za-z0-9]{1,2}", sub) else f"_{{\\mathrm{{{sub}}}}}")


def latex_text(text: str) -> str:
    """Escape plain text for LaTeX's text mode."""
    special = {"\\": "\\textbackslash{}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
               "<": "\\textless{}", ">": "\\textgreater{}", "|": "\\textbar{}",
               **{ch: "\\" + ch for ch in "&%$#_{}"}}
    return "".join(special.get(ch, ch) for ch in text)


def _is_dim(sym) -> bool:
    return isinstance(sym, str) and not sym.isdigit()


def _shape_text(shape) -> str:
    """``("M", "d")`` -> ``"M x d"``; ``()`` -> ``"scalar"``; numbers as they are."""
    if not shape:
        return "scalar"
    return " x ".join(str(s) for s in shape)


def _shape_latex(shape) -> str:
    dims = [str(s).replace("*", " ") for s in shape]
    return "\\mathbb{R}" + ("" if not shape else "^{" + " \\times ".join(dims) + "}")


# ---------------------------------------------------------------------- the parts
def _constraint_kind(c) -> str:
    """A CVXPY constraint's family in words (the fallback when no formulation is declared)."""
    if isinstance(c, (Inequality, NonNeg, NonPos)):
        return "inequality"
    if isinstance(c, (Equality, Zero)):
        return "equality"
    if isinstance(c, PSD):
        return "positive semidefinite"
    if isinstance(c, SOC):
        return "second-order cone"
    if isinstance(c, ExpCone):
        return "exponential cone"
    return type(c).__name__


def _constraint_parts(ref) -> list:
    """``(name, Term, rows or None)`` per constraint family: the declared ones first, then the
    named ones the declaration misses, then the rows no family accounts for.

    A declared family without a named constraint takes its rows from the problem's unnamed
    constraints: the builders hand them to CVXPY in the order they declare the families, so
    the two lists pair up when their lengths agree.  Otherwise (or without a declaration) the
    unnamed constraints are listed by kind, so the rows always add up to :meth:`size`."""
    form = ref.formulation
    named = {id(c) for c in ref.constraints.values()}
    unnamed = [c for c in ref.problem.constraints if id(c) not in named]
    constraints, paired = [], {}
    if form is not None:
        bare = [name for name in form.constraints if name not in ref.constraints]
        if len(bare) == len(unnamed):
            paired = dict(zip(bare, unnamed))
            unnamed = []
        for name, term in form.constraints.items():
            c = ref.constraints.get(name, paired.get(name))
            constraints.append((name, term, None if c is None else int(c.size)))
    listed = {name for name, *_ in constraints}
    for name, c in ref.constraints.items():
        if name not in listed:
            constraints.append((name, Term(_constraint_kind(c)), int(c.size)))
    label = "(unnamed)" if form is None else "(undeclared)"
    constraints += [(label, Term(_constraint_kind(c)), int(c.size)) for c in unnamed]
    return constraints


def _variable_parts(ref) -> list:
    """``(name, shape, Symbol)`` per variable: the named ones, then the auxiliary ones of the
    problem; the shape in dimension symbols where declared, else the numbers."""
    form = ref.formulation
    declared = form.variables if form is not None else {}
    model_vars = getattr(ref.data.get("model"), "variables", {}) or {}
    out, seen = [], set()
    pairs = list(ref.variables.items())
    pairs += [(v.name(), v) for v in ref.problem.variables() if id(v) not in {id(x) for _, x in pairs}]
    for name, var in pairs:
        if id(var) in seen:
            continue
        seen.add(id(var))
        auxiliary = name not in ref.variables
        sym = declared.get(name) or Symbol(
            "auxiliary" if auxiliary else getattr(model_vars.get(name), "meaning", ""))
        out.append((name, var, sym))
    return out


def _dimensions(form, variables, known=None) -> tuple[dict, dict, list]:
    """The dimension symbols the shapes use with their meanings, their values in this problem
    (read from the variables' shapes; ``known`` gives those no single shape binds, such as
    the factors of ``M*d``), and the symbols bound to two different values (a declaration
    error the tests look for)."""
    meanings, values, conflicts, products = {}, dict(known or {}), [], []
    for name, var, sym in variables:
        if sym.shape is None or form is None:
            continue
        if len(sym.shape) != len(var.shape):
            conflicts.append(f"{name}: declared {sym.shape}, has {tuple(var.shape)}")
            continue
        for dim, size in zip(sym.shape, var.shape):
            if not _is_dim(dim):
                continue
            if "*" in dim:  # a product of dimensions: checked once every factor is known
                for part in dim.split("*"):
                    meanings.setdefault(part, form.dimension(part))
                products.append((name, dim, int(size)))
                continue
            meanings.setdefault(dim, form.dimension(dim))
            if values.setdefault(dim, int(size)) != int(size):
                conflicts.append(f"{dim} = {values[dim]} and {int(size)} ({name})")
    for name, dim, size in products:
        parts = dim.split("*")
        if all(p in values for p in parts) and int(np.prod([values[p] for p in parts])) != size:
            conflicts.append(f"{dim} = {size} but the factors give another number ({name})")
    lines = " ".join([form.objective.text, *(t.text for t in form.constraints.values())]) \
        if form is not None else ""
    for dim in form.dims if form is not None else ():  # declared, and written in the lines
        if re.search(rf"(?<![\w.]){re.escape(dim)}(?![\w(])", lines):
            meanings.setdefault(dim, form.dimension(dim))
    order = list(DIMENSIONS)  # n, d, M, ... first, in that order; a formulation's own after
    rank = {k: (order.index(k) if k in order else len(order)) for k in meanings}
    meanings = dict(sorted(meanings.items(), key=lambda kv: rank[kv[0]]))
    values = {k: int(values[k]) for k in meanings if k in values}
    return meanings, values, conflicts


def describe_parts(ref, problem_class: str, solver: str) -> dict:
    """What :meth:`~hiercvx.reference.ReferenceProblem.describe` renders, from the reference's
    ``formulation`` or its CVXPY structure; ``ref.data["dimensions"]`` gives the values of
    dimension symbols that no variable's shape binds alone, and ``ref.instance_note`` (where
    the reference has one) a last line of the instance block."""
    form = ref.formulation
    variables = _variable_parts(ref)
    dims, values, conflicts = _dimensions(form, variables, ref.data.get("dimensions"))
    params = []
    for name, p in ref.parameters.items():
        value = p.value
        params.append((name, f"{name} = {float(value):g}" if p.size == 1 and value is not None
                       else f"{name} {tuple(p.shape)}",
                       (form.parameters.get(name) if form is not None else None) or latex_symbol(name)))
    sense = "maximize" if isinstance(ref.problem.objective, cp.Maximize) else "minimize"
    if form is not None:
        objective = form.objective
    else:
        objective = Term(f"(not declared; a CVXPY objective over "
                         f"{', '.join(n for n, *_ in variables)})")
    shaped = [(name, sym.shape if sym.shape is not None and form is not None else tuple(var.shape),
               sym) for name, var, sym in variables]
    return {"title": ref.name or "reference problem", "sense": sense, "objective": objective,
            "constraints": _constraint_parts(ref), "variables": shaped, "dims": dims,
            "dim_values": values, "dim_conflicts": conflicts,
            "notation": dict(form.notation) if form is not None else {},
            "parameters": params, "size": ref.size(), "class": problem_class, "solver": solver,
            "note": getattr(ref, "instance_note", "")}


# ---------------------------------------------------------------------- text
def render_text(d: dict) -> str:
    """The plain-text rendering of :meth:`~hiercvx.reference.ReferenceProblem.describe`'s parts."""
    lines = [d["title"], ""]
    obj = d["objective"]
    lines.append(f"  {d['sense']:<11} {obj.text}" + (f"    {obj.eq}" if obj.eq else ""))
    if d["constraints"]:
        lines.append("  subject to")
        wname = max(len(name) for name, *_ in d["constraints"])
        wtext = max(len(term.text) for _, term, _ in d["constraints"])
        for name, term, _ in d["constraints"]:
            lines.append(f"    {name:<{wname}}  {term.text:<{wtext}}  {term.eq}".rstrip())
    lines.append("  variables")
    wname = max((len(n) for n, *_ in d["variables"]), default=0)
    wshape = max((len(_shape_text(s)) for _, s, _ in d["variables"]), default=0)
    for name, shape, sym in d["variables"]:
        lines.append(f"    {name:<{wname}}  {_shape_text(shape):<{wshape}}  {sym.meaning}".rstrip())
    legend = [(k, text) for k, (text, _) in d["dims"].items()]
    legend += [(k, s.meaning) for k, s in d["notation"].items()]
    if legend:
        lines.append("  where")
        wsym = max(len(k) for k, _ in legend)
        lines += [f"    {k:<{wsym}}  {v}" for k, v in legend]
    if d["parameters"]:
        lines.append("  parameters  " + ", ".join(name for name, *_ in d["parameters"]))
    lines += ["", "  this instance" + (f" ({_dims_values(d)})" if d["dim_values"] else "")]
    rows = ", ".join(f"{name} {rows:,}" for name, _, rows in d["constraints"] if rows is not None)
    facts = [("rows", rows), ("parameters", ", ".join(v for _, v, _ in d["parameters"])),
             ("size", str(d["size"])), ("problem class", d["class"]), ("solver", d["solver"]),
             ("note", d.get("note", ""))]
    lines += [f"    {label:<13}  {value}" for label, value in facts if value]
    return "\n".join(lines)


def _dims_values(d: dict) -> str:
    return ", ".join(f"{k} = {v:,}" for k, v in d["dim_values"].items())


# ---------------------------------------------------------------------- LaTeX
def render_latex(d: dict) -> str:
    """The LaTeX rendering: an ``align*`` with the paper's equation numbers as tags, the legend
    as an ``itemize`` in real LaTeX, the instance's numbers as comments."""
    obj = d["objective"]
    under = ",\\, ".join(sym.symbol or latex_symbol(n) for n, _, sym in d["variables"])
    op = "\\min" if d["sense"] == "minimize" else "\\max"

    def tag(term):
        return f" \\tag*{{{term.eq}}}" if term.eq else " \\notag"

    def body(term):
        return term.latex or f"\\text{{{latex_text(term.text)}}}"

    lines = [f"% {d['title']}", "\\begin{align*}",
             f"  {op}_{{{under}}} \\quad & {body(obj)}{tag(obj)} \\\\"]
    for i, (name, term, _) in enumerate(d["constraints"]):
        lead = "\\text{s.t.} \\quad " if i == 0 else ""
        label = f"\\text{{({latex_text(name)})}}"
        lines.append(f"  {lead}& {body(term)} \\qquad {label}{tag(term)} \\\\")
    lines[-1] = lines[-1].rstrip(" \\")
    lines += ["\\end{align*}", "where", "\\begin{itemize}"]
    for name, shape, sym in d["variables"]:
        meaning = sym.latex or latex_text(sym.meaning)
        lines.append(f"  \\item ${sym.symbol or latex_symbol(name)} \\in {_shape_latex(shape)}$"
                     + (f": {meaning}" if meaning else ""))
    dims = "; ".join(f"${k}$ {latex}" for k, (_, latex) in d["dims"].items())
    if dims:
        lines.append(f"  \\item dimensions: {dims}")
    for key, sym in d["notation"].items():
        lines.append(f"  \\item ${sym.symbol or key}$: {sym.latex or latex_text(sym.meaning)}")
    lines.append("\\end{itemize}")
    if d["parameters"]:
        lines.append("Parameters: " + ", ".join(f"${sym}$" for _, _, sym in d["parameters"]) + ".")
    instance = "% this instance" + (f" ({_dims_values(d)})" if d["dim_values"] else "")
    rows = ", ".join(f"{name} {rows:,}" for name, _, rows in d["constraints"] if rows is not None)
    lines += [instance] + ([f"% rows: {rows}"] if rows else []) + [
        f"% Size: {d['size']}; problem class {d['class']}; solver {d['solver']}"
        + (f"; {', '.join(v for _, v, _ in d['parameters'])}" if d["parameters"] else "")]
    if d.get("note"):
        lines.append(f"% Note: {d['note']}")
    return "\n".join(lines)


_PREAMBLE = r"""\documentclass[11pt]{article}
\usepackage{amsmath,amssymb}
\usepackage[margin=2cm]{geometry}
\allowdisplaybreaks
"""


def latex_document(body: str, *, title: str, subtitle: str = "", header: str = "") -> str:
    """``body`` (a LaTeX rendering) as a complete document that ``pdflatex`` compiles as it is:
    article class, ``amsmath``/``amssymb``, ``title`` as a section, ``subtitle`` (plain text,
    escaped) under it, ``header`` (plain text) as comments before ``\\documentclass``."""
    comments = "".join(f"% {line}\n" for line in header.splitlines())
    head = f"\\section*{{{latex_text(title)}}}\n"
    if subtitle:
        head += "\\noindent " + " \\\\\n".join(latex_text(s) for s in subtitle.splitlines()) + "\n"
    return (comments + _PREAMBLE + "\\begin{document}\n" + head + "\n" + body.rstrip()
            + "\n\\end{document}\n")
