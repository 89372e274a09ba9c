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
