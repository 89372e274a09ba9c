"""``hiercvx show`` and ``ReferenceProblem.describe``: every registered method's formulation
rendered from what its builders declare (a :class:`Formulation`, or the CVXPY structure)."""

import re

import cvxpy as cp
import numpy as np
import pytest

import hiercvx as hc
from hiercvx import cli, methods
from hiercvx.formulations import hpsi, hsvm, nhsvm, orthogonal
from hiercvx.describe import Symbol, describe_parts, latex_document
from hiercvx.methods.cases import problem
from hiercvx.reference import (Formulation, ProblemSize, ReferenceProblem, Term, choose_solver,
                               problem_class, problem_size)

ROLES = [(name, role) for name in methods.names() for role in methods.get(name).references]
_BUILT: dict = {}


def built(name, role):
    """The reference ``role`` of ``name`` on its first quick case (built once per module)."""
    if (name, role) not in _BUILT:
        method = methods.get(name)
        _BUILT[name, role] = method.build(role, method.cases(True)[0])
    return _BUILT[name, role]


def equation_numbers(text: str) -> list[str]:
    """``(4.10)``, ``(2)``, ... in ``text`` (ranges such as ``(9)-(11)`` give both ends)."""
    return re.findall(r"\(\d+(?:\.\d+)?\)", text)


@pytest.mark.parametrize("latex", [False, True], ids=["text", "latex"])
@pytest.mark.parametrize("name", methods.names())
def test_show_renders_every_method(name, latex, capsys):
    assert cli.main(["show", name] + (["--latex"] if latex else [])) == 0
    out = capsys.readouterr().out
    method = methods.get(name)
    for eq in method.equations.values():  # the registry's equation numbers head the output
        assert eq in out
    for number in equation_numbers(method.equations["primal"]):
        assert number in out
    if latex:
        assert "\\begin{align*}" in out and "\\end{align*}" in out and "Size:" in out
        assert out.count("\\begin{itemize}") == out.count("\\end{itemize}") == 1
    else:
        assert "minimize" in out or "maximize" in out
        assert "size " in out and "problem class" in out and "solver " in out


DUALS = [name for name in methods.names() if "dual" in methods.get(name).references]


@pytest.mark.parametrize("latex", [False, True], ids=["text", "latex"])
@pytest.mark.parametrize("name", DUALS)
def test_show_dual_renders_every_method(name, latex, capsys):
    """``show METHOD --dual``: the dual as declared, with the equation numbers it is derived
    from (a derived dual says so and names its primal's numbers)."""
    assert cli.main(["show", name, "--dual"] + (["--latex"] if latex else [])) == 0
    out = capsys.readouterr().out
    method = methods.get(name)
    for eq in method.equations.values():
        assert eq in out
    form = built(name, "dual").formulation
    assert form is not None
    assert form.objective.eq and (f"\\tag*{{{form.objective.eq}}}" if latex else form.objective.eq) in out
    if method.equations["dual"].startswith("derived"):
        assert "derived" in form.objective.eq
        for number in equation_numbers(method.equations["primal"]):
            assert number in form.objective.eq
    else:
        assert any(n in out for n in equation_numbers(method.equations["dual"])) or \
            not equation_numbers(method.equations["dual"])
    if not latex:
        assert "maximize" in out or "minimize" in out


@pytest.mark.parametrize("name,role", [(n, r) for n, r in ROLES if r in ("primal", "dual")],
                         ids=[f"{n}-{r}" for n, r in ROLES if r in ("primal", "dual")])
def test_every_reference_declares_its_formulation(name, role):
    """Every CVXPY reference declares a :class:`Formulation` whose objective carries the paper's
    equation number of the problem (the registry's numbers for the primal); every named
    constraint family of the builder is described by it (so it gets its row count)."""
    ref = built(name, role)
    if not isinstance(ref, ReferenceProblem):  # hpsi's DC loop renders its own description
        return
    form = ref.formulation
    assert form is not None, f"{name} {role} declares no formulation"
    assert form.objective.eq
    assert set(ref.constraints) <= set(form.constraints), set(ref.constraints) - set(form.constraints)
    for var_name in ref.variables:
        assert form.variables.get(var_name), var_name
    if role == "primal":
        for number in equation_numbers(methods.get(name).equations["primal"]):
            assert number in form.objective.eq


@pytest.mark.parametrize("name,role", ROLES, ids=[f"{n}-{r}" for n, r in ROLES])
def test_describe_every_reference(name, role):
    """Variables with their shapes, each named constraint with its rows, the size, the class
    and the first solver; every declared equation number in both renderings."""
    ref = built(name, role)
    text, latex = ref.describe(), ref.describe("latex")
    if isinstance(ref, ReferenceProblem):
        size = problem_size(ref.problem)
        assert str(size) in text
        assert f"problem class  {problem_class(ref.problem)}" in text
        assert f"solver         {choose_solver(ref.problem)}" in text
        parts = describe_parts(ref, problem_class(ref.problem), "")
        values = parts["dim_values"]
        for var_name, var in ref.variables.items():  # the shape in symbols; the instance's numbers
            shape = ref.formulation.variables[var_name].shape if ref.formulation else None
            assert shape is not None, var_name
            shown = " x ".join(shape) if shape else "scalar"
            assert re.search(rf"^    {re.escape(var_name)}\s+{re.escape(shown)}\s", text, re.M)
            sizes = [int(np.prod([values[p] for p in dim.split("*")])) for dim in shape]
            assert tuple(sizes) == tuple(var.shape), (var_name, shape, var.shape)
        rows_line = next(line for line in text.splitlines() if line.startswith("    rows  "))
        for c_name, c in ref.constraints.items():
            assert f"{c_name} {c.size:,}" in rows_line, c_name
        if ref.formulation is not None:
            for term in [ref.formulation.objective, *ref.formulation.constraints.values()]:
                if term.eq:
                    assert term.eq in text and f"\\tag*{{{term.eq}}}" in latex
    if role in methods.get(name).equations:
        numbers = equation_numbers(methods.get(name).equations[role])
        assert any(n in text for n in numbers) or not numbers


def test_sibling_formulation_is_rendered_from_the_declaration():
    """The sibling-margin builders declare their formulation: objective and constraint families
    with the paper's numbers, constraint rows from the CVXPY constraints, meanings."""
    ref = built("sibling_svm", "primal")
    assert ref.formulation == hpsi.primal_formulation(linear=True)
    text = ref.describe()
    assert re.search(r"minimize\s+1/2 sum_v \|\|w_v\|\|\^2 .*\(2\)/\(8\)$", text, re.M)
    n_pairs = ref.constraints["pairs"].size
    assert re.search(r"pairs\s+m_p\(f\) \+ xi_i >= 1 .*\(2\)$", text, re.M)
    assert re.search(rf"^    rows\s+pairs {n_pairs:,},", text, re.M)
    assert "m_p(f)  f_j(x_i) - f_t(x_i)" in text  # the notation block
    dual = built("sibling_svm", "dual")
    latex = dual.describe("latex")
    assert "\\max_{\\beta}" in latex and "\\tag*{(9)}" in latex and latex.count("\\tag*{(11)}") == 2
    assert "\\tag*{(10)}" in latex and "(bias\\_stationarity)" in latex
    kernel = hpsi.primal_formulation(linear=False)
    assert "z_v" in kernel.objective.text and "Z" in kernel.variables


def test_hpsi_shows_the_dc_loop_and_its_step():
    text = built("hpsi", "primal").describe()
    assert text.startswith("HPSI DC algorithm (3)") and "(2)/(8)" in text and "tol=1e-08" in text


def _tiny_problem(with_formulation: bool):
    x = cp.Variable(3, name="x")
    A = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]])
    b = np.array([1.0, 0.0])
    rows = A @ x <= b
    C = cp.Parameter(nonneg=True, value=2.0, name="C")
    prob = cp.Problem(cp.Minimize(C * cp.sum(x)), [rows, x >= -1])
    form = Formulation(objective=("C sum_j x_j", "C \\sum_j x_j", "(1)"),
                       constraints={"rows": Term("A x <= b", "A x \\le b", "(2)"),
                                    "box": ("x >= -1", "x \\ge -1")},
                       variables={"x": "the unknowns"}, notation={"A": "a 2 x 3 matrix"})
    return ReferenceProblem(prob, variables={"x": x}, objective=lambda v: 0.0,
                            lower_bound=lambda v, d: 0.0, weights=lambda v: v["x"],
                            constraints={"rows": rows}, parameters={"C": C}, name="tiny LP",
                            formulation=form if with_formulation else None)


def test_problem_size_counts_constant_nonzeros():
    ref = _tiny_problem(False)
    # A has 3 nonzeros, b 1; -1 once; the objective has no constant (C is a parameter)
    assert problem_size(ref.problem) == ProblemSize(3, 5, 5) == ref.size()
    assert str(ref.size()) == "3 variables, 5 constraints, 5 nonzeros"


def test_fallback_renders_the_cvxpy_structure():
    """Without a formulation: the objective says it is not declared, the named constraint keeps
    its name, the others are listed by kind, variables with their shapes."""
    text = _tiny_problem(False).describe()
    assert text.splitlines()[0] == "tiny LP"
    assert "minimize    (not declared; a CVXPY objective over x)" in text
    assert re.search(r"^    rows\s+inequality$", text, re.M)
    assert re.search(r"^    \(unnamed\)\s+inequality$", text, re.M)
    assert re.search(r"^    rows\s+rows 2, \(unnamed\) 3$", text, re.M)
    assert re.search(r"^    x\s+3$", text, re.M)  # no declared shape: the numbers
    assert "  parameters  C\n" in text and "problem class  LP" in text
    assert re.search(r"^    parameters\s+C = 2$", text, re.M)  # its value: the instance's
    latex = _tiny_problem(False).describe("latex")
    assert "\\min_{x}" in latex and "\\text{(not declared; a CVXPY objective over x)} \\notag" in latex


def test_declared_formulation_renders_text_and_latex():
    ref = _tiny_problem(True)
    text = ref.describe()
    assert re.search(r"^  minimize    C sum_j x_j    \(1\)$", text, re.M)
    assert re.search(r"^    rows\s+A x <= b\s+\(2\)$", text, re.M)
    assert re.search(r"^    box\s+x >= -1$", text, re.M)
    # a family without duals takes the rows of the unnamed constraint it declares
    assert re.search(r"^    rows\s+rows 2, box 3$", text, re.M)
    assert "(unnamed)" not in text
    assert re.search(r"^    x\s+3\s+the unknowns$", text, re.M) and "A  a 2 x 3 matrix" in text
    latex = ref.describe("latex")
    assert "\\min_{x} \\quad & C \\sum_j x_j \\tag*{(1)} \\\\" in latex
    assert "\\text{s.t.} \\quad & A x \\le b \\qquad \\text{(rows)} \\tag*{(2)} \\\\" in latex
    assert "& x \\ge -1 \\qquad \\text{(box)} \\notag" in latex
    assert "\\item $x \\in \\mathbb{R}^{3}$: the unknowns" in latex
    with pytest.raises(hc.InputError, match="fmt"):
        ref.describe("html")


def test_latex_escapes_plain_text():
    ref = _tiny_problem(True)
    ref.name = "a_b & 50% <x>"
    latex = ref.describe("latex")
    assert "% a_b & 50% <x>" in latex  # the comment line keeps the name
    assert "a\\_b" not in latex.splitlines()[0]
    form = Formulation(objective="||w||^2 + sum_i xi_i")
    assert form.objective == Term("||w||^2 + sum_i xi_i")
    ref.formulation = form
    assert "\\text{\\textbar{}\\textbar{}w\\textbar{}\\textbar{}\\textasciicircum{}2 + sum\\_i xi\\_i}" \
        in ref.describe("latex")


def test_show_errors_exit_2(capsys):
    assert cli.main(["show", "unknown"]) == 2
    err = capsys.readouterr().err
    assert "unknown method 'unknown'" in err and "hsvm" in err
    assert cli.main(["show", "hpsi", "--dual"]) == 2
    assert "declares no 'dual' reference" in capsys.readouterr().err


@pytest.mark.parametrize("name,role,numbers", [
    ("hsvm", "primal", ["(4.10)", "(3.9)", "(3.10)"]), ("hsvm", "dual", ["(4.15)", "(4.13)", "(4.12)"]),
    ("multiclass", "primal", ["notes (primal)"]), ("multiclass", "dual", ["notes (dual)"]),
    ("sibling_svm", "primal", ["(2)/(8)", "(2)"]), ("sibling_svm", "dual", ["(9)", "(10)", "(11)"]),
    ("orthogonal", "primal", ["(4), (5)", "(4)", "(5)", "(4) lifted"]),
    ("orthogonal", "dual", ["dual of (4), derived", "dual of (5), derived"]),
    ("flatmult", "primal", ["(12)"]), ("flatmult", "dual", ["dual of (12), derived"]),
    ("hiermult", "primal", ["(12)"]), ("hiermult", "dual", ["dual of (12), derived"]),
    ("transfer", "primal", ["section 5"]), ("transfer", "dual", ["dual of section 5, derived"]),
    ("treeloss", "primal", ["section 5, (3)"]), ("treeloss", "dual", ["dual of section 5, (3), derived"]),
    ("nhsvm", "primal", ["(10)"]), ("nhsvm", "dual", ["dual of (10), derived"]),
    ("shared_norm", "primal", ["(14)"]), ("shared_norm", "dual", ["dual of (14), derived"])])
def test_declared_formulations_carry_the_papers_numbers(name, role, numbers):
    ref = built(name, role)
    assert ref.formulation is not None
    text, latex = ref.describe(), ref.describe("latex")
    for number in numbers:
        assert number in text and f"\\tag*{{{number}}}" in latex


@pytest.mark.parametrize("role,numbers", [("primal", ["(13)"]), ("dual", ["dual of (13), derived"])])
def test_nhsvm_variant_13_shows_its_number(role, numbers):
    case = next(c for c in methods.get("nhsvm").cases(True) if "(13)" in c.name)
    ref = methods.get("nhsvm").build(role, case)
    text, latex = ref.describe(), ref.describe("latex")
    for number in numbers:
        assert number in text and f"\\tag*{{{number}}}" in latex
    assert "(10)" not in ref.formulation.objective.eq


def test_nhsvm_multilabel_cutting_plane_shows_its_master():
    """Multi-label (10) is the cutting-plane reference: its master QP is declared too; the cut
    family has no rows before the first round."""
    method = methods.get("nhsvm")
    case = next(c for c in method.cases(True) if c.structure == "multilabel")
    ref = method.build("primal", case)
    text = ref.describe()
    assert ref.formulation == nhsvm.cutting_plane_formulation()
    assert re.search(r"^    cuts\s+sum_n c_kn .*\(10\) over Y_m$", text, re.M)
    assert re.search(r"^    xi_nonneg\s+xi >= 0\s+\(10\)$", text, re.M)
    assert re.search(r"^    rows\s+xi_nonneg [0-9,]+$", text, re.M)
    assert "(unnamed)" not in text


def test_orthogonal_diagonal_K_shows_no_epigraph():
    """With a diagonal K the SDP has no t and no epigraph of (5): neither is shown."""
    case = methods.get("orthogonal").cases(True)[0]
    X, y, H = case.X, case.Y, case.H
    ref = orthogonal.primal(X, y, H, K=np.eye(len(H) - 1))
    assert ref.formulation == orthogonal.sdp_formulation(off_diagonal=False)
    text = ref.describe()
    assert "abs_upper" not in text and "t_ij" not in text and "(4), (5)" in text
    assert re.search(r"^    lift\s+\[\[I, V\^T\], \[V, G\]\] is PSD", text, re.M)


# ---------------------------------------------------------------------- for print (issue: symbols)
def _declared(name, role):
    """The :class:`ReferenceProblem` shown for ``(name, role)`` (HPSI: its convex step (8))."""
    ref = built(name, role)
    if not isinstance(ref, ReferenceProblem):
        ref = hpsi.primal_from_model(ref.model, ref.C)
    return ref


def _body(text: str) -> str:
    """The formulation without the instance block (text) or its comment lines (LaTeX)."""
    return text.split("\n\n  this instance")[0] if "this instance" in text and "\\begin" not in text \
        else "\n".join(line for line in text.splitlines() if not line.startswith("%"))


def _legend(latex: str) -> str:
    return latex[latex.index("\\begin{itemize}"):latex.index("\\end{itemize}")]


@pytest.mark.parametrize("name,role", ROLES, ids=[f"{n}-{r}" for n, r in ROLES])
def test_shapes_are_symbols_and_agree_with_the_instance(name, role):
    """Every variable (named or auxiliary) has its shape in dimension symbols (n, d, M, ...), no
    symbol is bound to two numbers, and the formulation shows no number of the example: the
    numbers are in the instance block only (LaTeX comments)."""
    ref = _declared(name, role)
    parts = describe_parts(ref, problem_class(ref.problem), "")
    assert parts["dim_conflicts"] == []
    for var_name, shape, sym in parts["variables"]:
        declared = ref.formulation.variables.get(var_name)
        assert declared is not None and declared.shape is not None, (name, role, var_name)
        assert all(isinstance(dim, str) and not dim[0].isdigit() for dim in shape), (var_name, shape)
    text, latex = ref.describe(), ref.describe("latex")
    variables = _body(text).split("  variables\n")[1].split("\n  where")[0]
    for line in variables.splitlines():
        assert not re.search(r"^\s+\S+\s+[\d ,x]*\d", line), line
    assert not re.search(r"\\mathbb\{R\}\^\{[^}]*\d", _body(latex))
    for dim in parts["dims"]:  # each symbol the shapes use is in the legend, with its value apart
        assert re.search(rf"^    {re.escape(dim)}\s+\S", text, re.M), dim
        assert f"${dim}$" in _legend(latex)
    assert "this instance" in text and "% this instance" in latex


@pytest.mark.parametrize("name,role", ROLES, ids=[f"{n}-{r}" for n, r in ROLES])
def test_the_legend_is_real_latex_with_the_lines_symbols(name, role):
    """The "where" list is LaTeX, not escaped ASCII, and every symbol it explains is written the
    same way in the lines (objective, constraints) or in another entry, in text and in LaTeX."""
    ref = _declared(name, role)
    form = ref.formulation
    legend = _legend(ref.describe("latex"))
    for escaped in ("\\textasciicircum", "\\textless", "\\textgreater", "\\textbar", "\\_",
                    "\\textbackslash"):
        assert escaped not in legend, (escaped, legend)
    lines_text = " ".join([form.objective.text, *(t.text for t in form.constraints.values())])
    lines_latex = " ".join([form.objective.latex, *(t.latex for t in form.constraints.values())])
    entries = {**form.notation, **form.variables}
    for key, sym in form.notation.items():
        if "recovery" in sym.meaning:  # how the weights follow from the solution: not in the lines
            continue
        others_text = lines_text + " " + " ".join(s.meaning for k, s in entries.items() if k != key)
        others_latex = lines_latex + " " + " ".join(s.latex for k, s in entries.items() if k != key)
        for part in key.split(", "):
            assert re.search(rf"(?<![A-Za-z]){re.escape(_head(part))}(?![A-Za-z])", others_text), \
                (name, role, key)
        for part in re.split(r",\\ ", sym.symbol or key):
            assert re.search(rf"(?<![A-Za-z\\]){re.escape(_head(part))}(?![A-Za-z])", others_latex), \
                (name, role, part)


def _head(symbol: str) -> str:
    """A symbol without its indices and arguments: ``c_i`` -> ``c``, ``G_c(\\beta)`` -> ``G``,
    ``\\tilde\\Delta(l_i, l)`` -> ``\\tilde\\Delta``."""
    return re.split(r"[_(^{ ]", symbol.strip(), maxsplit=1)[0] or symbol.strip()


def test_hsvm_dual_legend_as_the_issue_asked():
    """``hiercvx show hsvm --dual --latex``: c_i in the budget and in the list, shapes in
    symbols, the factor T in LaTeX."""
    latex = built("hsvm", "dual").describe("latex")
    assert "\\le C c_i" in latex and "\\item $c_i$:" in latex and "Cw" not in latex
    assert "\\item $T \\in \\mathbb{R}^{r \\times q}$: $L_K^\\top G$" in latex
    primal = built("hsvm", "primal").describe("latex")
    assert "\\item $W \\in \\mathbb{R}^{M \\times d}$" in primal
    assert "C \\sum_i c_i \\xi_i" in primal and "\\item $c_i$:" in primal
    text = built("hsvm", "primal").describe()
    assert "C sum_i c_i xi_i" in text and re.search(r"^    c_i\s+the weight of example i", text, re.M)
    assert re.search(r"^    W\s+M x d\s+node weights", text, re.M)
    assert re.search(r"^  this instance \(n = 36, d = 4, M = 8, q = 5\)$", text, re.M)


def test_dimension_symbols_are_checked_against_the_problem():
    """A declared shape is checked against the CVXPY variable: a symbol bound to two numbers,
    a wrong rank, a product that does not multiply out are reported (the tests above ask for
    none); an undeclared symbol is an InputError naming the fix."""
    x, y, z = cp.Variable(3, name="x"), cp.Variable(2, name="y"), cp.Variable(6, name="z")
    prob = cp.Problem(cp.Minimize(cp.sum(x) + cp.sum(y) + cp.sum(z)), [x >= 0, y >= 0, z >= 0])

    def ref(shapes, dims=None):
        form = Formulation(objective=("sum x", "\\sum x"), variables={
            k: Symbol(k, shape=v) for k, v in shapes.items()}, dims=dims or {})
        return ReferenceProblem(prob, variables={"x": x, "y": y, "z": z}, objective=lambda v: 0.0,
                                lower_bound=lambda v, d: 0.0, weights=lambda v: v["x"], formulation=form)

    good = describe_parts(ref({"x": ("n",), "y": ("d",), "z": ("n*d",)}), "LP", "")
    assert good["dim_conflicts"] == [] and good["dim_values"] == {"n": 3, "d": 2}
    assert "z  n*d" in ref({"x": ("n",), "y": ("d",), "z": ("n*d",)}).describe()
    assert "\\mathbb{R}^{n d}" in ref({"x": ("n",), "y": ("d",), "z": ("n*d",)}).describe("latex")
    bad = describe_parts(ref({"x": ("n",), "y": ("n",), "z": ("n*n",)}), "LP", "")
    assert any("n = 3 and 2" in c for c in bad["dim_conflicts"])
    assert any("n*n" in c for c in bad["dim_conflicts"])
    assert describe_parts(ref({"x": ("n", "d")}), "LP", "")["dim_conflicts"]
    with pytest.raises(hc.InputError, match="dims="):
        ref({"x": ("w",)}).describe()
    assert "w  widgets" in ref({"x": ("w",)}, dims={"w": "widgets"}).describe()


def _check_document(tex: str) -> None:
    """The structure of a complete LaTeX document: preamble, one body, balanced environments."""
    lines = [line for line in tex.splitlines() if not line.startswith("%")]
    assert lines[0].startswith("\\documentclass") and "\\usepackage{amsmath,amssymb}" in tex
    assert tex.count("\\begin{document}") == tex.count("\\end{document}") == 1
    assert tex.rstrip().endswith("\\end{document}")
    for env in ("align*", "itemize"):
        assert tex.count(f"\\begin{{{env}}}") == tex.count(f"\\end{{{env}}}") >= 1
    assert "\\section*{" in tex


SHOWN = [(name, dual) for name in methods.names() for dual in (False, True)
         if not dual or "dual" in methods.get(name).references]


@pytest.mark.parametrize("name,dual", SHOWN, ids=[f"{n}{'-dual' if d else ''}" for n, d in SHOWN])
def test_standalone_latex_compiles_as_it_is(name, dual, capsys, tmp_path):
    """``hiercvx show METHOD [--dual] --latex --standalone`` is a complete document; where
    ``pdflatex`` is installed it compiles without an error."""
    import shutil
    import subprocess
    assert cli.main(["show", name, "--latex", "--standalone"] + (["--dual"] if dual else [])) == 0
    tex = capsys.readouterr().out
    _check_document(tex)
    assert methods.get(name).title.split(":")[0] in tex
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed; the document's structure was checked")
    (tmp_path / "show.tex").write_text(tex)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "show.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "show.pdf").stat().st_size > 0


def test_latex_document_escapes_its_titles():
    tex = latex_document("\\begin{align*} x \\end{align*}\n\\begin{itemize}\n\\item x\n\\end{itemize}",
                         title="a_b & c", subtitle="50% of\nthe paper", header="first\nsecond")
    _check_document(tex)
    assert tex.startswith("% first\n% second\n\\documentclass")
    assert "\\section*{a\\_b \\& c}" in tex and "50\\% of \\\\\nthe paper" in tex


# ---------------------------------------------------------------------- what is built, in symbols
@pytest.mark.parametrize("name,role", ROLES, ids=[f"{n}-{r}" for n, r in ROLES])
def test_rows_add_up_to_the_size(name, role):
    """The "rows" line counts every constraint row the "size" line counts, each under a declared
    family (auxiliary equalities and the lifts included), none under "(undeclared)"."""
    ref = _declared(name, role)
    parts = describe_parts(ref, problem_class(ref.problem), "")
    rows = {family: n for family, _, n in parts["constraints"] if n is not None}
    assert not [f for f in rows if f.startswith("(")], rows
    assert sum(rows.values()) == problem_size(ref.problem).constraints, rows


def test_hsvm_dual_recovery_has_the_shape_of_W():
    """(4.12) as the dual's legend writes it, Lam^T G^T X, is the M x d node-weight matrix the
    dual recovers; every matrix in the legend has the shape its entry gives."""
    ref = built("hsvm", "dual")
    text = ref.describe()
    assert re.search(r"^    W\s+Lam\^T G\^T X \(M x d\), the node weights", text, re.M)
    assert "X^T G Lam" not in text and "\\Lambda^\\top G^\\top X" in ref.describe("latex")
    assert re.search(r"^    Lam\s+class attributes \(q x M\)", text, re.M)
    sol = ref.solve()
    G, X, Lam = ref.problem.var_dict["G"].value, ref.data["X"], ref.data["Lam"]
    Q, K = ref.data["Q"], X @ X.T
    assert sol.weights.shape == (Lam.shape[1], X.shape[1])                     # M x d
    np.testing.assert_allclose(Lam.T @ G.T @ X, sol.weights, atol=1e-6)
    assert Q.shape == (G.shape[1],) * 2 and K.shape == (G.shape[0],) * 2       # q x q, n x n


@pytest.mark.parametrize("role", ["primal", "dual", "class_form"])
def test_hsvm_classes_are_leaves(role):
    case = methods.get("hsvm").cases(True)[0]
    ref = getattr(hsvm, role)(case.X, case.Y, case.H)
    text = ref.describe()
    assert re.search(r"^    q\s+classes: the leaves of the hierarchy", text, re.M)
    assert "label sets the model scores" not in text


def test_hsvm_class_form_shows_what_it_builds():
    """The class form (4.48): the objective as declared (the factor R^{1/2} of the regularizer R
    of prob.data), evaluated at the solution, is the solver's optimum; the auxiliary scores
    S = X U^T and, for rank-deficient attributes, N U = 0 are listed with their rows."""
    X, Y, H = problem("dag", n=20, d=3)
    ref = hsvm.class_form(X, Y, H, C=1.0)
    text = ref.describe()
    assert re.search(r"^  minimize    1/2 \|\|R\^\{1/2\} U\|\|_F\^2 \+ C sum_i c_i xi_i", text, re.M)
    assert re.search(r"^    R\s+the regularizer \(q x q\)", text, re.M)
    assert re.search(r"^    R\^\{1/2\}\s+a factor of R, \(R\^\{1/2\}\)\^T R\^\{1/2\} = R", text, re.M)
    assert re.search(r"^    class_scores\s+S = X U\^T", text, re.M)
    assert re.search(r"^    rows\s+pairs \d+, xi_nonneg \d+, class_scores \d+$", text, re.M)
    sol = ref.solve()
    U, xi, R, C = sol.values["U"], sol.values["xi"], ref.data["R"], 1.0
    declared = 0.5 * np.trace(U.T @ R @ U) + C * ref.data["margin_data"].Cw @ xi
    assert declared == pytest.approx(ref.problem.value, rel=1e-7)

    Lam = hc.class_attributes(H, scheme="class_depth")
    Lam[1] = Lam[0]                                      # rank q - 1: U stays in Lam's range
    deficient = hsvm.class_form(X, Y, H, attributes=Lam, fit_intercept=True)
    text = deficient.describe()
    assert re.search(r"^    range\s+N U = 0", text, re.M) and re.search(r"^    N\s+a basis", text, re.M)
    assert re.search(r"^    bias\s+b = s Lam\^\+ U", text, re.M)
    assert re.search(r"^    rows\s+.*, range \d+, bias \d+$", text, re.M)


def test_orthogonal_intercept_legend_matches_the_variables():
    """With an intercept the primal's V is m x f with f = d (the bias is the variable b apart),
    values["intercept"] is named as an expression of b, and the dual's f counts s."""
    case = methods.get("orthogonal").cases(True)[0]
    ref = orthogonal.primal(case.X, case.Y, case.H, fit_intercept=True, intercept_scaling=2.0)
    text = ref.describe()
    parts = describe_parts(ref, "", "")
    assert parts["dim_values"]["f"] == ref.variables["V"].shape[1] == case.X.shape[1]
    assert re.search(r"^    f\s+columns of the features F: d, or the representer basis", text, re.M)
    assert "+1 with an intercept" not in text
    assert re.search(r"^    b\s+m\s+biases of the weighted nodes", text, re.M)
    assert re.search(r"^    intercept\s+M\s+b spread over all nodes .*an expression of b", text, re.M)
    dual = orthogonal.dual(case.X, case.Y, case.H, fit_intercept=True, intercept_scaling=2.0)
    parts = describe_parts(dual, "", "")
    assert parts["dim_values"]["f"] == case.X.shape[1] + 1
    assert re.search(r"^    f\s+columns of the features F of x~: d \+ 1", dual.describe(), re.M)
    flat = orthogonal.flatmult(case.X, case.Y, case.H, fit_intercept=True)
    assert "V in the lift" not in flat.describe()  # the baselines have no lift


@pytest.mark.parametrize("role", ["primal", "dual"])
def test_sibling_legend_defines_H_prime(role):
    text = built("sibling_svm", role).describe()
    assert "H'" in text
    assert re.search(r"^    H'\s+the hierarchy trained on: H with a self leaf", text, re.M)


def test_cutting_plane_instance_of_an_empty_working_set():
    """The multi-label master as built (no cuts): d, M and N (the sheet's examples) in the
    instance line, and a note that it has no cuts yet; once solved, the note counts the working
    set."""
    method = methods.get("nhsvm")
    case = next(c for c in method.cases(True) if c.structure == "multilabel")
    ref = method.build("primal", case)
    n, d = case.X.shape
    text = ref.describe()
    assert re.search(rf"^  this instance \(d = {d}, M = {len(case.H)}, N = {n}\)$", text, re.M)
    assert re.search(r"^    note\s+the master of an empty working set: no cuts yet", text, re.M)
    assert "% Note: the master of an empty working set" in ref.describe("latex")
    ref.solve(verbose=False)
    assert re.search(r"^    note\s+the master over its working set of [\d,]+ cuts$", ref.describe(), re.M)


def test_size_line_counts_in_words():
    assert str(ProblemSize(1, 2, 1)) == "1 variable, 2 constraints, 1 nonzero"
    assert str(ProblemSize(1200, 0, 3)) == "1,200 variables, 0 constraints, 3 nonzeros"


def test_standalone_needs_latex(capsys):
    """``--standalone`` alone is refused (exit 2) with the fix, not silently read as --latex."""
    assert cli.main(["show", "hsvm", "--standalone"]) == 2
    err = capsys.readouterr().err
    assert "add --latex" in err and "hiercvx show hsvm --latex --standalone" in err


def test_show_equations_name_each_role_once(capsys):
    """An equation entry that names its role (the lecture notes' "notes: primal") is not
    prefixed with the role again."""
    assert cli.main(["show", "multiclass"]) == 0
    out = capsys.readouterr().out
    assert "equations: notes: primal (= LIBLINEAR MCSVM_CS), notes: Lagrangian dual" in out
    assert "primal notes" not in out and "dual notes" not in out
    assert cli.main(["show", "hsvm"]) == 0
    assert "equations: primal (4.10), dual (4.15), class form (4.48)" in capsys.readouterr().out


# ---------------------------------------------------------------------- the sheets' symbols
def _where(text: str) -> dict:
    """The "where" block of a text rendering: symbol -> meaning."""
    block = _body(text).split("\n  where\n")[1].split("\n  parameters")[0]
    return dict(re.match(r"^    (\S.*?)\s{2,}(\S.*)$", line).groups() for line in block.splitlines())


@pytest.mark.parametrize("role", ["primal", "dual"])
def test_multiclass_legend_uses_the_sheets_c_i_and_C_i(role):
    """formulations/multiclass.md: c_i is the class of sample i, C_i its cost (C times its
    sample and class weights); the show legend says the same, and no y_i."""
    text = built("multiclass", role).describe()
    where = _where(text)
    assert where["c_i"].startswith("the class of example i")
    assert where["C_i"].startswith("the cost of example i: C sample_weight_i")
    assert "y_i" not in _body(text)
    assert ("sum_i C_i xi_i" if role == "primal" else "lambda_{i c_i} <= C_i") in text


@pytest.mark.parametrize("name,role", [("nhsvm", "primal"), ("nhsvm", "dual"),
                                       ("shared_norm", "primal"), ("shared_norm", "dual")])
def test_nhsvm_legend_uses_the_sheets_N_n_and_L(name, role):
    """formulations/nhsvm.md: N examples, n a node, L the set of leaves; the shapes say N (never
    n, the node index of sum_n) and the number of leaves is q = |L|, never L itself."""
    ref = built(name, role)
    text = ref.describe()
    parts = describe_parts(ref, "", "")
    assert "n" not in parts["dims"] and "L" not in parts["dims"]
    assert parts["dims"]["N"][0] == "examples"
    assert re.search(r"^    xi\s+N\s" if role == "primal" else r"^    beta\s+N x q\s", text, re.M)
    where = _where(text)
    if role == "dual":
        assert where["q"].startswith("the number of leaves |L|")
    if name == "shared_norm" and role == "dual":
        assert re.search(r"^    mu\s+q\s", text, re.M) and where["L"] == "the set of leaves"
    if role == "primal":
        assert where["n"].startswith("a node of the hierarchy") and where["L"] == "the set of leaves"


def test_hiermult_slack_count_is_not_N():
    """HIERMULT's slacks (one per example and internal node on its path) have their own symbol;
    N stays the number of examples of the orthogonal-transfer sheet."""
    text = built("hiermult", "primal").describe()
    parts = describe_parts(built("hiermult", "primal"), "", "")
    assert "N" not in parts["dims"]
    assert re.search(r"^    xi\s+T\s+hinge slacks", text, re.M)
    assert re.search(r"^    T\s+slacks: one per example and internal node on its path \(T = sum_j N_j\)",
                     text, re.M)


# ---------------------------------------------------------------------- fit_intercept
def test_nhsvm_intercept_is_described_as_declared():
    """With fit_intercept the legends write the problem solved: the biases in the regularizer
    and in the scores of (10) and (14), the duals on X~ = [X, s 1]; without it, none of that."""
    X, y, H = problem("tree", n=20, d=3)
    kw = dict(lam=0.1, fit_intercept=True, intercept_scaling=2.0)
    primal = nhsvm.primal(X, y, H, **kw)
    text = primal.describe()
    assert "minimize    lam sum_n (||w_n||^2 + b_n^2 / s^2) + sum_i xi_i    (10)" in text
    assert "sqrt(alpha_n) (<w_n, x> + b_n)" in text and re.search(r"^    s\s+intercept_scaling", text, re.M)
    sol = primal.solve()  # the objective as written, at the solution, is the solver's optimum
    W, b, xi = sol.values["W"], sol.values["intercept"], sol.values["xi"]
    assert 0.1 * ((W ** 2).sum() + (b ** 2).sum() / 4.0) + xi.sum() == pytest.approx(
        primal.problem.value, rel=1e-7)
    shared = nhsvm.shared_primal(X, y, H, **kw).describe()
    assert "lam sum_n (||u_n||^2 + b_n^2 / s^2) / alpha_n + sum_i xi_i" in shared
    assert "sum_{n in anc(l)} (<u_n, x> + b_n)" in shared
    dual = nhsvm.dual(X, y, H, **kw).describe()
    assert "||Lam^T Gc(beta)^T X~||_F^2" in dual and re.search(r"^    X~\s+\[X, s 1\]", dual, re.M)
    assert "[W, b / s] = Lam^T Gc^T X~ / (2 lam)" in dual
    shared_dual = nhsvm.shared_dual(X, y, H, **kw).describe()
    assert "A^T Gc(beta)^T X~ (M x (d + 1))" in shared_dual and "[u_n, b_n / s]" in shared_dual
    plain = [nhsvm.primal(X, y, H, lam=0.1).describe(), nhsvm.shared_primal(X, y, H, lam=0.1).describe(),
             nhsvm.dual(X, y, H, lam=0.1).describe(), nhsvm.shared_dual(X, y, H, lam=0.1).describe()]
    for shown in plain:
        assert "b_n" not in shown and "X~" not in shown and "intercept" not in shown
    latex = primal.describe("latex")
    assert "b_n^2 / s^2" in latex and "\\item $b \\in \\mathbb{R}^{M}$" in latex
    Xm, Ym, Hm = problem("multilabel", n=20, d=3)  # the cutting-plane master on x~ = [x, s]
    master = nhsvm.primal(Xm, Ym, Hm, **kw)
    text = master.describe()
    assert "minimize    lam ||W~||_F^2 + sum_i xi_i" in text and "<w~_n, x~_{i_k}>" in text
    assert re.search(r"^    w\s+M\*f\s+vec\(W~\), W~ = \[W, b / s\]", text, re.M)
    assert describe_parts(master, "", "")["dim_values"] == {"M": len(Hm), "f": 4, "N": 20}
    assert "W~" not in nhsvm.primal(Xm, Ym, Hm, lam=0.1).describe()


def test_sibling_sum_to_zero_says_how_it_is_declared():
    """The sum-to-zero family of (2) holds for every i but is declared through the row space of
    B = [X, 1]: the legend says so, and the rows are rank(B) per sibling group."""
    ref = built("sibling_svm", "primal")
    text = ref.describe()
    assert re.search(r"^    sum_to_zero\s+sum_\{t in chi\(s\)\} f_t\(x_i\) = 0 for every internal node s, "
                     r"every i; declared as V_B sum_\{t in chi\(s\)\} \(w_t, b_t\) = 0: rank\(B\) rows "
                     r"per s", text, re.M)
    assert re.search(r"^    V_B\s+an orthonormal basis of the row space of B = \[X, 1\]", text, re.M)
    model = ref.data["model"]
    B = np.hstack([np.asarray(model.X.toarray() if hasattr(model.X, "toarray") else model.X),
                   np.ones((model.n, 1))])
    groups = model.group_matrix.shape[0]
    assert ref.constraints["sum_to_zero"].size == np.linalg.matrix_rank(B) * groups


# ---------------------------------------------------------------------- the command line
def test_show_unknown_option_is_reported_by_show(capsys):
    """``hiercvx show hsvm --duel``: show's own usage (its flags) and the closest flag, not the
    top-level usage."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["show", "hsvm", "--duel"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hiercvx show [-h] [--dual] [--latex] [--standalone] METHOD")
    assert "hiercvx show: error: unrecognized arguments: --duel (did you mean --dual?)" in err
    with pytest.raises(SystemExit):
        cli.main(["verify", "--quik"])
    err = capsys.readouterr().err
    assert err.startswith("usage: hiercvx verify") and "did you mean --quick?" in err


def test_show_hpsi_dual_names_the_dual_of_its_steps(capsys):
    """HPSI has no dual; each convex DC step (8) is the sibling-margin SVM with pair_weights, whose
    dual ``show sibling_svm --dual`` shows (it declares the pair weights lam_p)."""
    assert cli.main(["show", "hpsi", "--dual"]) == 2
    err = capsys.readouterr().err
    assert "declares no 'dual' reference" in err and "hiercvx show sibling_svm --dual" in err
    dual = built("sibling_svm", "dual")
    assert "pair_weights" in dual.parameters and "lam_p" in dual.formulation.notation
