"""The package as a user installs it: the sheets ship inside it, and a plain (not editable)
``pip install`` into a fresh virtual environment runs ``hiercvx verify --quick``."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hiercvx import methods

ROOT = Path(__file__).resolve().parents[1]
BIN = "Scripts" if os.name == "nt" else "bin"


def test_every_sheet_is_shipped_by_the_build():
    """setup.py installs ``formulations/*.md`` as ``hiercvx/sheets/``: every registered sheet is
    one of those files, and the source distribution lists them."""
    shipped = {p.name for p in (ROOT / "formulations").glob("*.md")}
    for m in methods.REGISTRY.values():
        assert m.sheet.startswith("formulations/") and Path(m.sheet).name in shipped, m.name
    setup = (ROOT / "setup.py").read_text()
    assert '"hiercvx.sheets": "formulations"' in setup and '"*.md"' in setup
    assert "formulations/*.md" in (ROOT / "MANIFEST.in").read_text()


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_verifies(tmp_path):
    """``pip install .`` (dependencies from the package index), then ``hiercvx methods`` names
    the installed sheets and ``hiercvx verify --quick`` exits 0, run outside the checkout."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python, hiercvx = venv / BIN / "python", venv / BIN / "hiercvx"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(ROOT)], check=True,
                   cwd=tmp_path, env=env, timeout=3600)
    out = subprocess.run([str(hiercvx), "methods"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=True).stdout
    sheets = re.findall(r"^  sheet\s+(\S+)$", out, re.M)
    assert len(sheets) == len(methods.REGISTRY)
    for sheet in sheets:
        path = Path(sheet)
        assert path.is_file() and venv in path.parents and path.parent.name == "sheets", sheet
    assert "@phdthesis{cai2008multilabel," in out
    verify = subprocess.run([str(hiercvx), "verify", "--quick", "--quiet"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=3600)
    assert verify.returncode == 0, verify.stdout[-4000:] + verify.stderr[-4000:]


def test_readme_is_a_users_page():
    """The README: at most ~250 lines, the make targets named literally, no measurement
    history (dates, sessions, commit hashes); the licence, changelog and citation files exist,
    and the citation lists the five papers."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 260
    assert "make demo" in text and "make test" in text and "docs/benchmarks.md" in text
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\bsession \d|\b[0-9a-f]{7}\b \(|tried", text)
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()
    cff = (ROOT / "CITATION.cff").read_text()
    for title in ("Multilabel Classification over Category Taxonomies",
                  "Hierarchical Classification via Orthogonal Transfer", "Normalized Hierarchical SVM",
                  "Large Margin Hierarchical Classification with Mutually Exclusive Class Membership",
                  "EE6550 Machine Learning, Lecture 7: Multi-Class Classification"):
        assert title in cff


@pytest.mark.slow
def test_readme_code_runs_and_prints_what_it_says(tmp_path):
    """The README's Python blocks, run in order from the repository's directory, print the
    numbers the README shows (the quick start needs the ImageCLEF07A files beside the
    repository; skipped without them)."""
    if not (ROOT.parent / "shared" / "data" / "hmc" / "ImCLEF07A_Train.arff").is_file():
        pytest.skip("ImageCLEF07A not found beside the repository")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks))
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]
    for shown in ("hierarchical F1 0.765", "relative gap", "25.979305 25.979305",
                  "primal 28.130353  dual 28.130353", "(4.10)"):
        assert shown in out.stdout, shown


def test_every_exception_is_exported_from_the_package():
    """``except hiercvx.<Error>`` works for every error class the package raises."""
    import inspect

    import hiercvx
    from hiercvx import exceptions
    classes = {name for name, obj in inspect.getmembers(exceptions, inspect.isclass)
               if issubclass(obj, Exception) and obj.__module__ == exceptions.__name__}
    assert classes and classes <= set(hiercvx.__all__)
    assert all(getattr(hiercvx, name) is getattr(exceptions, name) for name in classes)


def test_readme_labels_the_dual_value_as_the_dual():
    """A dual solution's ``objective`` is the primal recomputed at the weights it recovers; its
    own value is ``lower_bound``: the README prints that one as "dual"."""
    blocks = "\n".join(re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S))
    printed = [line for line in blocks.splitlines() if line.startswith("print(") and " dual {" in line]
    assert printed and all("dual {d.lower_bound" in line for line in printed), printed
