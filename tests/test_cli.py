"""The ``hiercvx`` command as a shell user meets it."""

import io
import os
import sys

import pytest

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


def test_unknown_subcommand_is_a_usage_error(capsys):
    # in this process (a new interpreter costs seconds): the exit status the shell would see
    with pytest.raises(SystemExit) as exit_:
        cli.main(["nope"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_methods_prints_each_paper_with_its_bibtex(capsys):
    """``hiercvx methods``: each method names its paper, where its sheet is and its BibTeX key;
    the BibTeX entries follow, each once."""
    assert cli.main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "Lijuan Cai, Multilabel Classification over Category Taxonomies" in out
    assert "bibtex      cai2008multilabel" in out
    assert out.count("@phdthesis{cai2008multilabel,") == 1
    assert "@article{wang2011large," in out and "@misc{choi2016normalized," in out
    assert "sheet       " in out and "hsvm.md" in out
    assert "seed" not in out.lower()


def test_show_ends_with_the_bibtex(capsys):
    """``hiercvx show``: the formulation, then the sheet and the paper's BibTeX (as LaTeX
    comments with ``--latex``)."""
    assert cli.main(["show", "hsvm"]) == 0
    text = capsys.readouterr().out
    assert "cite as:\n@phdthesis{cai2008multilabel," in text
    assert cli.main(["show", "nhsvm", "--latex"]) == 0
    latex = capsys.readouterr().out
    assert "% @misc{choi2016normalized," in latex


@pytest.mark.parametrize("where, fix", [("missing/rows.json", "does not exist"),
                                        (".", "is a directory")])
def test_verify_refuses_an_unwritable_json_before_the_work(where, fix, tmp_path, monkeypatch,
                                                           capsys):
    """``verify --json`` to a missing folder or a directory: exit 2 naming the fix, and the
    verification is not run (its rows would be lost)."""
    ran = []
    monkeypatch.setattr(cli, "verify", lambda *a, **k: ran.append(1) or [])
    assert cli.main(["verify", "multiclass", "--quick", "--quiet", "--json",
                     str(tmp_path / where)]) == 2
    err = capsys.readouterr().err
    assert ran == [] and fix in err and "Errno" not in err
