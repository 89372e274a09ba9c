"""The example a user copies, run as the user runs it: ``examples/test_my_solver.py`` copied out of
the project's tree into an empty directory and run by pytest there, with the hiercvx plugin loaded
from the installed package.  Every test must pass and none may be skipped or warn of a skipped
problem."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_solver_test_passes_as_copied(tmp_path):
    shutil.copy(ROOT / "examples" / "test_my_solver.py", tmp_path / "test_my_solver.py")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         "-W", "error::hiercvx.testing.SkippedProblemWarning", "test_my_solver.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    tail = run.stdout[-4000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    summary = run.stdout.strip().splitlines()[-1]
    assert "passed" in summary and "failed" not in summary and "skipped" not in summary, tail
    assert "error" not in summary, tail
