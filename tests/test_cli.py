"""The ``hiercvx`` command as a shell user meets it."""

import io
import os
import subprocess
import sys

from hiercvx import cli


def test_output_cut_short_by_the_reader_is_not_an_error(monkeypatch):
    """``hiercvx methods | head -1``: the reader has closed the pipe; exit 0, no traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # what `head` does after its line
    stdout = io.TextIOWrapper(os.fdopen(write_end, "wb", buffering=0), write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    try:
        assert cli.main(["methods"]) == 0
    finally:
        stdout.close()


def test_unknown_subcommand_is_a_usage_error():
    out = subprocess.run([sys.executable, "-m", "hiercvx.cli", "nope"], capture_output=True, text=True)
    assert out.returncode == 2 and "invalid choice" in out.stderr
