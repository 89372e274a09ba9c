"""Every runnable snippet in formulations/*.md and every script in examples/ runs (smoke tests)."""

import subprocess
import sys
from pathlib import Path

import pytest

from snippets import run_blocks

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


@pytest.mark.parametrize("script", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_EXAMPLES
                                    else p for p in EXAMPLES], ids=[p.name for p in EXAMPLES])
def test_examples_run(script, tmp_path):
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]


def test_cli_info_runs():
    proc = subprocess.run([sys.executable, "-m", "hiercvx.cli", "info"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "CLARABEL" in proc.stdout
