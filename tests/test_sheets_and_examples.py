"""Every runnable snippet in formulations/*.md and every script in examples/ runs (smoke tests);
what the scripts say about their numbers and their run time is true."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from snippets import python_blocks, run_blocks

ROOT = Path(__file__).resolve().parents[1]
SHEETS = sorted((ROOT / "formulations").glob("*.md"))
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_every_formulation_module_has_a_sheet():
    modules = [p.stem for p in (ROOT / "hiercvx" / "formulations").glob("*.py")
               if not p.stem.startswith("_")]
    missing = [m for m in modules if not (ROOT / "formulations" / f"{m}.md").exists()]
    assert not missing, f"formulation modules without a sheet in formulations/: {missing}"


@pytest.mark.parametrize("sheet", SHEETS, ids=[p.name for p in SHEETS])
def test_sheet_snippets_run(sheet, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(sheet, "__sheet__")  # blocks of one sheet share a namespace, like a notebook


# examples run by `make test-slow` only: nhsvm.py (a reference, a cutting-plane loop, the
# shared-norm alternation and three estimators on 300 samples: tests/test_nhsvm*.py,
# tests/test_against_reference.py) and plot_label_sets_aupr.py (two label-set SVMs on 250
# samples, node scores, AU(PRC): tests/test_au_prc.py, tests/test_node_scores*.py,
# tests/test_reproduce_hmc_aupr.py), whose steps the fast tests of their modules check and
# which `make docs` runs; test_my_solver.py, which tests/test_examples_as_a_user.py runs
# under pytest (importing it as this run does)
SLOW_EXAMPLES = {"nhsvm.py", "plot_label_sets_aupr.py", "test_my_solver.py"}


def _orthogonal_objectives_agree(out: str) -> None:
    """The estimator's row of (4) is the reference's problem: same C, no intercept."""
    reference = float(re.search(r"the reference's objective: ([\d.]+)", out).group(1))
    estimator = float(re.search(r"orthogonal: objective ([\d.]+) \(certified gap ([\d.e+-]+)", out).group(1))
    assert estimator == pytest.approx(reference, rel=2e-3), out


def _sibling_errors_in_table_2_regime(out: str) -> None:
    """Wang, Shen & Pan's Table 2 (linear, Example 2): l_0-1 test errors about 0.2 for HSVM and
    HPSI; one replication on 2000 test points stays below 0.25 for both."""
    errors = {name: float(err) for name, err in re.findall(r"^(HSVM|HPSI) \{'TE_0-1': ([\d.]+)", out, re.M)}
    assert set(errors) == {"HSVM", "HPSI"} and max(errors.values()) < 0.25, errors


#: what a script's printed numbers must show, beyond running
OUTPUT_CHECKS = {"orthogonal_transfer.py": _orthogonal_objectives_agree,
                 "sibling_margin.py": _sibling_errors_in_table_2_regime}


@pytest.mark.parametrize("script", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_EXAMPLES
                                    else p for p in EXAMPLES], ids=[p.name for p in EXAMPLES])
def test_examples_run(script, tmp_path):
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    if script.name in OUTPUT_CHECKS:
        OUTPUT_CHECKS[script.name](proc.stdout)


def _timed_fast_solves(tree: ast.Module) -> list[str]:
    """The fast solvers whose Solution a script prints (``fast = <module>.solve(...)``, then
    ``print(fast)``): the ones whose time is shown."""
    calls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "solve" \
                and isinstance(node.value.func.value, ast.Name):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    calls[target.id] = node.value.func.value.id
    printed = [n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call)
               and getattr(n.func, "id", "") == "print" and n.args and isinstance(n.args[0], ast.Name)]
    return [calls[name] for name in printed if name in calls]


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_say_what_their_first_run_costs(script):
    """A script that prints a fast solver's time says that a first run compiles the kernels
    (numba, cached), and warms them with an earlier call of the same solver, so that the
    printed time is the solve's; none claims "a few seconds"."""
    source = script.read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    assert "in a few seconds" not in doc
    for solver in _timed_fast_solves(tree):
        assert "compiles" in doc and "cached" in doc, (script.name, doc)
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "solve"
                 and getattr(n.func.value, "id", "") == solver]
        assert len(calls) >= 2, f"{script.name}: {solver}.solve is timed cold (no warm-up call)"


def test_nhsvm_sheet_prints_plain_numbers(tmp_path, monkeypatch, capsys):
    """The first snippet of the NHSVM sheet prints its path weights as numbers, not reprs."""
    monkeypatch.chdir(tmp_path)
    exec(compile(python_blocks(ROOT / "formulations" / "nhsvm.md")[0], "nhsvm.md", "exec"),
         {"__name__": "__sheet__"})
    out = capsys.readouterr().out
    assert "np.float64(" not in out and re.search(r"\{'root': 0\.\d+, 'A': 0\.\d+", out), out


def test_cli_info_runs():
    proc = subprocess.run([sys.executable, "-m", "hiercvx.cli", "info"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "CLARABEL" in proc.stdout
