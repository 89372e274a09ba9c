"""The method registry, the one result type, ``hiercvx verify`` and the package's import layers."""

import ast
import functools
import json
from pathlib import Path

import networkx as nx
import pytest
from sklearn.base import BaseEstimator

from hiercvx import cli, methods
from hiercvx.methods import Case, FastSolver, Method
from hiercvx.methods._papers import PAPERS
from hiercvx.models import Model
from hiercvx.result import Solution

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hiercvx"


@pytest.mark.parametrize("name", methods.names())
def test_entry_is_complete(name):
    m = methods.get(name)
    assert m.title and m.paper and m.equations and m.equations.get("primal")
    assert (ROOT / m.sheet).is_file(), f"{name}: sheet {m.sheet} missing"
    assert issubclass(m.estimator_class, BaseEstimator)
    cases = m.cases(True)
    assert cases, f"{name} has no built-in problems"
    covered = {c.structure for c in cases}
    assert set(m.structures) <= covered, f"{name}: no case for {set(m.structures) - covered}"
    assert all(isinstance(c, Case) for c in cases)
    assert all(isinstance(s, FastSolver) for s in m.fast_solvers.values())


@pytest.mark.parametrize("name", methods.names())
def test_model_recomputes_the_reference_objective(name):
    """The model's objective at the reference's weights is the reference's recomputed objective,
    and the reference and every fast solver return the one result type."""
    m = methods.get(name)
    case = m.cases(True)[0]
    model = m.model(case)
    assert isinstance(model, Model)
    assert model.variables and model.equations
    sol = m.build("primal", case).solve()
    assert type(sol) is Solution
    value = model.objective_at(sol, **case.params)
    assert value == pytest.approx(sol.objective, rel=1e-7, abs=1e-9)
    for solver in m.fast_solvers:
        assert type(m.run_fast(solver, case)) is Solution


@pytest.mark.parametrize("name", methods.names())
def test_entry_cites_its_paper_with_bibtex(name):
    """Every entry names its paper in words and carries its BibTeX entry; a method without
    one is refused at registration."""
    m = methods.get(name)
    assert m.bibtex.startswith("@") and "author" in m.bibtex and "year" in m.bibtex
    assert m.bibtex.count("{") == m.bibtex.count("}")
    assert any(p.citation in m.paper for p in PAPERS.values())
    assert m.sheet_path is not None and m.sheet_path.is_file()
    with pytest.raises(ValueError, match="BibTeX"):
        Method(**{**m.__dict__, "bibtex": ""})


def test_get_refuses_an_unknown_method():
    with pytest.raises(ValueError, match="registered methods"):
        methods.get("no-such-method")


def _broken_method(base: Method) -> Method:
    """``base`` with a fast solver that answers 1% above the optimum."""
    good = next(iter(base.fast_solvers.values()))

    def off_by_one_percent(model, **kw):
        sol = good.solve(model, **kw)
        return Solution(objective=sol.objective * 1.01 + 0.01, lower_bound=sol.lower_bound,
                        weights=sol.weights, solver="broken")

    return Method(**{**base.__dict__, "name": "broken",
                     "fast_solvers": {"broken": FastSolver("broken", off_by_one_percent, "wrong on purpose",
                                                           good.options, good.rtol)}})


def test_verify_exits_1_and_names_the_case(monkeypatch, capsys, tmp_path):
    base = next(m for m in methods.REGISTRY.values() if m.fast_solvers)
    monkeypatch.setitem(methods.REGISTRY, "broken", _broken_method(base))
    out_json = tmp_path / "rows.json"
    code = cli.main(["verify", "broken", "--quick", "--quiet", "--json", str(out_json)])
    text = capsys.readouterr().out
    assert code == 1
    case = base.cases(True)[0]
    assert "DISAGREE" in text and f"broken / {case.structure}" in text
    rows = json.loads(out_json.read_text())
    assert rows and not any(r["ok"] for r in rows)


def test_verify_passes_on_a_registered_method(capsys):
    name = next(m.name for m in methods.REGISTRY.values() if m.fast_solvers)
    assert cli.main(["verify", name, "--quick", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "agree" in text and "speedup" in text


def test_verify_times_the_fast_solver_warm(monkeypatch):
    """The speedup column divides by the faster of two runs of the fast solver: the first call
    of a process may include compiling its kernels.  A fake clock: the first call takes 9 s,
    the second 1 s; the reference 1 s."""
    from hiercvx import verify
    ticks = iter(range(1000))
    monkeypatch.setattr(verify.time, "perf_counter", lambda: float(next(ticks)))
    calls = []
    out, seconds = verify._timed_warm(lambda: calls.append(len(calls)) or len(calls))
    assert calls == [0, 1] and out == 2 and seconds == 1.0
    ticks = iter([0.0, 9.0, 9.0, 10.0])
    _, seconds = verify._timed_warm(lambda: None)
    assert seconds == 1.0


def test_verify_refuses_an_unknown_method(capsys):
    assert cli.main(["verify", "no-such-method", "--quiet"]) == 2
    assert "registered methods" in capsys.readouterr().err


def test_verify_lists_inference_among_the_names_it_takes(capsys):
    assert cli.main(["verify", "Inference", "--quick", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown method 'Inference'" in err and err.rstrip().endswith(", hpsi, inference")


def test_verify_runs_a_repeated_name_once(monkeypatch):
    from hiercvx import verify
    ran = []
    monkeypatch.setattr(verify, "verify_method",
                        lambda method, **k: ran.append(method.name) or [])
    monkeypatch.setattr(verify, "verify_inference", lambda **k: ran.append("inference") or [])
    monkeypatch.setattr(verify, "inference_problems", lambda **k: [])
    verify.verify(["multiclass", "hsvm", "multiclass", "inference", "inference"], verbose=False)
    assert ran == ["multiclass", "hsvm", "inference"]


def test_verify_prints_a_small_speedup_with_its_digits():
    """A fast solver 25 times slower than its reference reads 0.038x, not 0.0x."""
    from hiercvx.verify import Row, format_table
    rows = [Row("orthogonal", "(4)", "tree", 1.0, 0.0, 1e-9, "rda", 1.0, 0.0, speedup, "ok")
            for speedup in (0.038, 12.34)]
    text = format_table(rows)
    assert "0.038x" in text and "12.3x" in text and "0.0x" not in text


# ------------------------------------------------------------------ import layers
#: the layers of DESIGN.md, bottom up; a module may import its own layer or a lower one
LAYERS = {
    "exceptions": 0, "result": 0, "_sparse": 0, "_kernel_cache": 0, "_attributes": 1, "_label_lookup": 0, "_node_names": 0, "_label_forms": 0, "_validation": 1, "hierarchy": 1, "kernels": 1,
    "targets": 2, "losses": 2, "inference": 2, "metrics": 2, "reference": 2, "describe": 2, "datasets": 2,
    "taxonomy": 2, "bias": 2, "_metric_inputs": 2, "_solver_choice": 1, "_reference_scaling": 1, "_node_margin_parts": 1,
    "models": 3,
    "formulations": 4, "solvers": 4, "methods": 5, "estimators": 6,
    "testing": 6, "verify": 6, "reproduce": 6, "demo": 7, "cli": 8, "__init__": 9, "__main__": 9,
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("hiercvx"):
        return []
    if node.module is None or node.level and not node.module:
        return [f"{target}.{a.name}" for a in node.names]
    return [target]


@functools.cache
def _imports():
    """(importer, imported, line, in_function, names) for every import of a hiercvx module:
    the package's sources parsed once for the four tests below."""
    return tuple(_scan_imports())


def _scan_imports():
    for module, path in _modules():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        functions = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                     for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for target in _resolve(module, is_package, node):
                    yield module, target, node.lineno, id(node) in functions, [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("hiercvx"):
                        yield module, a.name, node.lineno, id(node) in functions, []


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else LAYERS["__init__"]


#: modules whose imports of the package wait for first use on purpose: the pytest plugin is
#: loaded by every pytest run in an environment with hiercvx installed, used or not
IMPORTS_ON_FIRST_USE = {"hiercvx.testing.plugin"}


def test_no_function_local_imports_of_the_package():
    local = [f"{m}:{line} imports {t}" for m, t, line, inside, _ in _imports()
             if inside and m not in IMPORTS_ON_FIRST_USE]
    assert not local, "function-local imports:\n" + "\n".join(local)


def test_imports_flow_down():
    up = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
          for m, t, _, _, _ in _imports() if _layer(t) > _layer(m)]
    assert not up, "upward imports:\n" + "\n".join(up)


def test_no_import_circles():
    known = {m for m, _ in _modules()}
    graph = nx.DiGraph()
    for m, t, _, _, _ in _imports():
        while t not in known and "." in t:  # "pkg.mod.name" -> "pkg.mod"
            t = t.rsplit(".", 1)[0]
        if t != m and not m.startswith(t + ".") and not t.startswith(m + "."):
            graph.add_edge(m, t)
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_across_modules():
    """A private function or class stays in its module; a private module (a package's compiled
    ``_kernels``, say) may be imported by its package."""
    known = {m for m, _ in _modules()}
    private = [f"{m} takes {n} from {t}" for m, t, _, _, names in _imports() for n in names
               if n.startswith("_") and not n.startswith("__")
               and f"{t}.{n}" not in known and not (t in known and t.endswith("." + n))]
    assert not private, "private names imported across modules:\n" + "\n".join(private)
