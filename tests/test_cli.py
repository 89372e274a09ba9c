"""The ``hiercvx`` command as a shell user meets it."""

import io
import os
import sys

import pytest

import hiercvx as hc
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


def test_info_keeps_its_solver_columns(monkeypatch, capsys):
    """``hiercvx info``: the problem classes start in one column on every solver row, a long
    state (Gurobi's size-limited licence) included; its detail goes on the next line."""
    states = {"CLARABEL": "ok", "GUROBI": "size-limited licence (at most 2000 variables (QP))",
              "OSQP": "ok"}
    monkeypatch.setattr(cli, "usable_solvers", lambda: dict(states))
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    block = out.split("Solvers (CVXPY):\n")[1].split("Default solver")[0].splitlines()
    rows = {line.split()[0]: line for line in block if not line.startswith("   ")}
    assert set(rows) == set(states)
    last = {name: line.rsplit("  ", 1)[1].strip() for name, line in rows.items()}  # the classes
    assert last["GUROBI"].startswith("LP, QP") and last["OSQP"] == "QP"
    assert len({len(line) - len(last[name]) for name, line in rows.items()}) == 1, block
    detail = block[block.index(rows["GUROBI"]) + 1]
    assert detail.strip() == "at most 2000 variables (QP)"


def test_verify_table_prints_round_off_as_zero_and_each_case_once():
    """Differences within ``ROUNDOFF`` of zero (the last bits of two sums) print as 0; a case
    named after its structure is not prefixed by it again."""
    from hiercvx.verify import Row, format_table, verify_method

    row = Row("inference", "(19)", "tree seed=0 n=12", -77.246736, -3.6e-15, -1.2e-16, "dp",
              -77.246736, 0.0, 2.0, "ok")
    line = format_table([row]).splitlines()[2]
    assert "-3.6e-15" not in line and "-1.2e-16" not in line
    assert line.split()[6:8] == ["0.0e+00", "0.0e+00"], line
    real = Row("m", "(1)", "c", 10.0, 2e-9, 3e-10, "f", 10.0, 0.0, 1.0, "ok")
    assert "2.0e-09" in format_table([real]) and "3.0e-10" in format_table([real])

    class Named:  # a method whose references fail at once: only the labels are built
        name, equations, fast_solvers, references = "m", {"primal": "(1)"}, {}, {}

        @staticmethod
        def cases(quick):
            from hiercvx.methods import Case
            return [Case("flat n=36 d=4", "flat", None, None, None),
                    Case("flat", "flat", None, None, None),
                    Case("two trees", "dag", None, None, None)]

        @staticmethod
        def build(role, case):
            raise hc.InputError("not built")

    labels = [r.case for r in verify_method(Named())]
    assert labels == ["flat n=36 d=4", "flat", "dag: two trees"]


def test_verify_reports_a_crashing_fast_solver_as_a_row(monkeypatch, capsys):
    """A fast solver that raises an exception hiercvx does not know (a RuntimeError) is one
    ``FAST FAILED`` row naming the exception's type and message; the other rows are kept and
    the exit code is non-zero."""
    import dataclasses

    from hiercvx import methods, verify as verify_module
    method = methods.get("multiclass")
    good = method.fast_solvers["crammer_singer"]

    def boom(model, **options):
        raise RuntimeError("boom")

    crashing = dataclasses.replace(method, fast_solvers={
        "crashing": dataclasses.replace(good, name="crashing", solve=boom), "crammer_singer": good},
        cases=lambda quick: method.cases(quick)[:1])
    rows = verify_module.verify_method(crashing)
    assert [r.fast_solver for r in rows] == ["crashing", "crammer_singer"]
    assert rows[0].status == "FAST FAILED: RuntimeError: boom" and rows[1].status == "ok"
    monkeypatch.setattr(verify_module.registry, "get", lambda name: crashing)
    assert cli.main(["verify", "multiclass", "--quick", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAST FAILED: RuntimeError: boom" in out and "1 of 2 agree" in out
