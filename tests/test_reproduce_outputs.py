"""``hiercvx reproduce``: what a run writes, what it refuses to replace, how it stops and resumes,
and what its header, CSV, PNG and messages say.  Most tests run a small fake table (one cheap
row per replication) so that they check the runner, not a paper's protocol."""

import csv
import json

import pytest

from hiercvx import cli, reproduce
from hiercvx.exceptions import InputError
from hiercvx.reproduce import _runner, hmc, hmc_aupr, leaderboard, zhou


def _cheap(replication, quick, seed):
    return [{"setting": "s", "method": "A", "metric": "m", "value": float(seed % 97)}]


def _fake(monkeypatch, run=_cheap, **options):
    fields = dict(name="fake", title="a fake table", paper="p", reference="r", source="s",
                  run=run, metrics=("m",), reported={}, paper_replications=5, resolution=0.05)
    table = reproduce.Table(**(fields | options))
    monkeypatch.setitem(reproduce.TABLES, "fake", table)
    return table


# ----------------------------------------------------------------------------- --collect
def test_collect_writes_nothing_and_says_what_it_left_out(tmp_path, monkeypatch):
    _fake(monkeypatch)
    reproduce.run_table("fake", replications=3, verbose=False, out=tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    collected = reproduce.run_table("fake", replications=1, verbose=False, out=tmp_path,
                                    collect=True)
    assert collected.files == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    text = str(collected)
    assert "finished run" not in text
    assert "2 more kept there, past the first 1, are left out" in text
    whole = str(reproduce.run_table("fake", replications=3, verbose=False, out=tmp_path,
                                    collect=True))
    assert "all 3 asked for" in whole and "left out" not in whole


def test_collect_prints_without_writing_from_the_command_line(tmp_path, monkeypatch, capsys):
    _fake(monkeypatch)
    assert cli.main(["reproduce", "fake", "--replications", "2", "--out", str(tmp_path),
                     "--quiet"]) == 0
    assert "wrote" in capsys.readouterr().out
    (tmp_path / "fake.csv").unlink()
    assert cli.main(["reproduce", "fake", "--replications", "2", "--out", str(tmp_path),
                     "--collect"]) == 0
    out = capsys.readouterr().out
    assert "wrote" not in out and "fake: a fake table" in out
    assert not (tmp_path / "fake.csv").exists()


# ------------------------------------------------------------ outputs of an earlier run
def test_a_run_does_not_replace_an_earlier_runs_outputs_made_otherwise(tmp_path, monkeypatch,
                                                                        capsys):
    _fake(monkeypatch)
    reproduce.run_table("fake", quick=True, replications=2, seed=0, verbose=False, out=tmp_path)
    first = (tmp_path / "fake.csv").read_bytes()
    for other in ({"seed": 1}, {"replications": 3}, {"quick": False}):
        options = dict(quick=True, replications=2, seed=0) | other
        with pytest.raises(InputError, match="--quick, --seed 0, --replications 2") as info:
            reproduce.run_table("fake", verbose=False, out=tmp_path, **options)
        assert "another --out, or --force" in str(info.value)
    assert (tmp_path / "fake.csv").read_bytes() == first
    assert cli.main(["reproduce", "fake", "--quick", "--replications", "2", "--seed", "1",
                     "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--seed 0" in err and "--force" in err and "Traceback" not in err
    # the same settings again: allowed; --force: replaced
    reproduce.run_table("fake", quick=True, replications=2, seed=0, verbose=False, out=tmp_path)
    assert cli.main(["reproduce", "fake", "--quick", "--replications", "2", "--seed", "1",
                     "--out", str(tmp_path), "--quiet", "--force"]) == 0
    assert (tmp_path / "fake.csv").read_bytes() != first
    record = json.loads((tmp_path / "fake.replications" / "outputs.json").read_text())
    assert (record["quick"], record["seed"], record["replications"]) == (True, 1, 2)


def test_outputs_whose_settings_are_not_recorded_are_not_replaced(tmp_path, monkeypatch):
    _fake(monkeypatch)
    (tmp_path / "fake.png").write_bytes(b"an earlier plot")
    with pytest.raises(InputError, match="settings are not recorded"):
        reproduce.run_table("fake", replications=1, verbose=False, out=tmp_path)
    assert reproduce.run_table("fake", replications=1, verbose=False, out=tmp_path,
                               force=True).files


# ------------------------------------------------------------------ Ctrl-C and --resume
def test_ctrl_c_says_what_is_kept_and_exits_130(tmp_path, monkeypatch, capsys):
    def stopped_at_the_third(replication, quick, seed):
        if replication == 2:
            raise KeyboardInterrupt
        return _cheap(replication, quick, seed)
    _fake(monkeypatch, run=stopped_at_the_third)
    assert cli.main(["reproduce", "fake", "--replications", "4", "--out", str(tmp_path),
                     "--quiet"]) == 130
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    assert "2 of the 4 replications are kept" in captured.err and "--resume" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    with pytest.raises(KeyboardInterrupt, match="2 of the 4"):   # a library caller's Ctrl-C
        reproduce.run_table("fake", replications=4, verbose=False, out=tmp_path, resume=True)


def test_resume_says_when_no_checkpoint_matches(tmp_path, monkeypatch, capsys):
    _fake(monkeypatch)
    reproduce.run_table("fake", replications=2, seed=0, verbose=False, out=tmp_path / "a",
                        resume=True)
    err = capsys.readouterr().err
    assert "no checkpoint of fake with without --quick, --seed 0" in err
    assert "there are none there" in err
    reproduce.run_table("fake", replications=2, seed=0, verbose=False, out=tmp_path / "a",
                        resume=True)
    assert capsys.readouterr().err == ""                      # both read back: no note
    reproduce.run_table("fake", replications=2, seed=3, verbose=False, out=tmp_path / "a",
                        resume=True, force=True)
    err = capsys.readouterr().err
    assert "--seed 3" in err and "checkpoints there are of runs with without --quick, --seed 0" in err


# ------------------------------------------------------------------ published numbers
def test_published_numbers_are_cells_not_replications(tmp_path, monkeypatch):
    def with_published(replication, quick, seed):
        return _cheap(replication, quick, seed) + [
            {"setting": "s", "method": "P (published)", "metric": "m", "value": 0.5}]
    _fake(monkeypatch, run=with_published, published_methods=("P (published)",),
          reported={("s", "P (published)", "m"): reproduce.Reported(0.5)})
    result = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    assert {r["method"] for r in result.rows} == {"A"}
    with open(tmp_path / "fake_replications.csv") as fh:
        assert {r["method"] for r in csv.DictReader(fh)} == {"A"}
    with open(tmp_path / "fake.csv") as fh:
        cells = {c["method"]: c for c in csv.DictReader(fh)}
    assert cells["A"]["n"] == "2"
    assert cells["P (published)"]["n"] == "" and cells["P (published)"]["paper_mean"] == "0.5"


def test_hmc_aupr_rows_leave_the_published_numbers_to_the_runner(monkeypatch):
    rows = [{"setting": "cellcycle_FUN", "method": "HierarchicalSVC", "metric": "AU(PRC)",
             "value": 0.2}]
    monkeypatch.setattr(hmc_aupr, "run_settings", lambda settings, seed: rows + [
        {"setting": "cellcycle_FUN", "method": m, "metric": "AU(PRC)", "value": 0.1}
        for m in hmc_aupr.PUBLISHED_METHODS])
    assert hmc_aupr._run(0, True, 0) == rows


# ------------------------------------------------------------------ header and plot
def test_header_of_a_table_without_paper_numbers_claims_no_paper_run(monkeypatch):
    table = _fake(monkeypatch)
    cells = reproduce.aggregate(table, [dict(replication=r, **row) for r in (0, 1)
                                        for row in _cheap(r, True, r)])
    text = str(reproduce.TableResult(table, True, 2, 0, cells, []))
    assert "(paper: 5)" not in text and "ok = " not in text
    hmc_table = reproduce.get("hmc-aupr")
    text = "\n".join(_runner._header(reproduce.TableResult(hmc_table, True, 1, 0, [], [])))
    assert "(paper: 1)" not in text and "ok = " not in text
    assert hmc_table.quick_protocol.startswith("quick: ")
    wang = reproduce.get("wang-table3")
    assert "(paper: 100)" in "\n".join(_runner._header(reproduce.TableResult(wang, True, 2, 0,
                                                                                [], [])))


def _legend(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_plot_legend_names_only_what_is_drawn(monkeypatch):
    table = _fake(monkeypatch)
    rows = [dict(replication=0, **row) for row in _cheap(0, True, 1)]
    fig = reproduce.plot(reproduce.TableResult(table, True, 1, 0, reproduce.aggregate(table, rows),
                                               rows))
    assert _legend(fig) == ["hiercvx"]
    hmc_table = reproduce.get("hmc-aupr")
    rows = [dict(replication=0, setting="cellcycle_FUN", method="HierarchicalSVC",
                 metric=m, value=0.2) for m in hmc_table.metrics]
    fig = reproduce.plot(reproduce.TableResult(hmc_table, True, 1, 0,
                                               reproduce.aggregate(hmc_table, rows), rows))
    assert sorted(_legend(fig)) == sorted(["hiercvx", *hmc_aupr.PUBLISHED_METHODS])
    wang = reproduce.get("wang-table3")
    rows = [dict(replication=0, setting="linear, n=50", method="SVM", metric=m, value=0.3)
            for m in wang.metrics]
    fig = reproduce.plot(reproduce.TableResult(wang, True, 1, 0, reproduce.aggregate(wang, rows),
                                               rows))
    assert _legend(fig) == ["hiercvx", "paper"]


def test_plot_wraps_a_long_title_to_the_figure(monkeypatch):
    table = _fake(monkeypatch, reference="a reference " * 20)
    rows = [dict(replication=0, **row) for row in _cheap(0, True, 1)]
    fig = reproduce.plot(reproduce.TableResult(table, True, 1, 0, reproduce.aggregate(table, rows),
                                               rows))
    lines = fig._suptitle.get_text().splitlines()
    assert len(lines) > 1
    assert all(len(line) <= 13 * fig.get_figwidth() for line in lines)


# ------------------------------------------------------------------ data that is absent
def test_zhou_names_the_absent_imageclef_files_and_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path))
    table = reproduce.get("zhou-comparison")
    assert "on ImageCLEF07A and" not in table.title
    reason = table.partial_data()
    assert f"{tmp_path}/ImCLEF07A_Train.arff" in reason and f"looked in {tmp_path}" in reason
    text = "\n".join(_runner._header(reproduce.TableResult(table, True, 1, 0, [], [],
                                                            left_out=reason)))
    assert "left out: the ImageCLEF07A rows: data files not found" in text
    assert zhou.imclef_absent() == reason


def test_a_part_left_out_is_in_the_result(monkeypatch):
    _fake(monkeypatch, partial_data=lambda: "the X rows: x.arff not found")
    result = reproduce.run_table("fake", replications=1, verbose=False)
    assert result.left_out == "the X rows: x.arff not found"
    assert "left out: the X rows" in str(result)


def test_leaderboard_names_each_absent_file_once(tmp_path, monkeypatch):
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path))
    message = leaderboard.data_missing()
    assert message.count("cellcycle_FUN.train.arff") == 1


# ------------------------------------------------------------------ the command's words
@pytest.mark.parametrize("argv, expected", [
    (["--replications", "0"], "--replications must be a positive integer, got 0"),
    (["--n-jobs", "0"], "--n-jobs must be a non-zero integer"),
    (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    (["--collect", "--n-jobs", "2"], "--collect runs and writes nothing, so it takes no --n-jobs"),
    (["--collect", "--resume"], "so it takes no --resume"),
])
def test_the_command_names_its_options(argv, expected, tmp_path, capsys):
    assert cli.main(["reproduce", "wang-table3", "--quick", "--out", str(tmp_path)] + argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert "n_jobs" not in err and "collect=True" not in err and "replications must" not in \
        err.replace("--replications must", "")


def test_data_that_is_a_file_is_called_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("")
    assert cli.main(["reproduce", "wang-table5", "--quick", "--data", str(afile)]) == 2
    assert "it is a file, not a folder" in capsys.readouterr().err
    with pytest.raises(InputError, match="it is a file, not a folder"):
        reproduce.run_table("wang-table5", quick=True, data_dir=afile)


def test_help_says_what_quick_and_replications_do():
    help_text = " ".join(cli.build_parser()._subparsers._group_actions[0]
                         .choices["reproduce"].format_help().split())
    assert "runs in seconds" not in help_text and "seconds to a few minutes" in help_text
    assert "default: 2 with --quick" not in help_text and "quick count" in help_text
    assert "--force" in help_text


# ------------------------------------------------------------------ damaged checkpoints
def _counting(monkeypatch, **options):
    ran = []

    def run(replication, quick, seed):
        ran.append(replication)
        return _cheap(replication, quick, seed)
    _fake(monkeypatch, run=run, **options)
    return ran


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["rows"][0].update(value="oops"), "value is 'oops', not a number"),
    (lambda d: d["rows"][0].pop("metric"), "missing metric"),
    (lambda d: d["rows"][0].update(extra=1), "unexpected extra"),
    (lambda d: d["rows"][0].update(metric="nope"), "metric 'nope' is not one of"),
    (lambda d: d.update(rows=[]), "it holds no rows"),
    (lambda d: d.update(seed=7), "it records seed 7 where this run has 0"),
])
def test_a_malformed_checkpoint_is_refused_before_any_work(change, expected, tmp_path,
                                                           monkeypatch, capsys):
    ran = _counting(monkeypatch)
    reproduce.run_table("fake", replications=3, verbose=False, out=tmp_path)
    folder = tmp_path / "fake.replications"
    (folder / "full-seed0-r0002.json").unlink()
    _edit(folder / "full-seed0-r0001.json", change)
    ran.clear()
    for argv in (["--resume"], ["--collect"]):
        assert cli.main(["reproduce", "fake", "--replications", "3", "--out", str(tmp_path),
                         "--quiet"] + argv) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and expected in err
        assert f"{folder / 'full-seed0-r0001.json'} is damaged" in err and "delete it" in err
    assert ran == []
    (folder / "full-seed0-r0001.json").unlink()          # the fix the message names
    resumed = reproduce.run_table("fake", replications=3, verbose=False, out=tmp_path,
                                  resume=True)
    assert ran == [1, 2] and resumed.resumed == 1


def test_a_truncated_checkpoint_is_refused_not_skipped(tmp_path, monkeypatch):
    ran = _counting(monkeypatch)
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    path = tmp_path / "fake.replications" / "full-seed0-r0001.json"
    path.write_text(path.read_text()[:40])
    for option in ("resume", "collect"):
        with pytest.raises(InputError, match="r0001.json is damaged: it is not whole JSON"):
            reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path,
                                **{option: True})
    assert ran == [0, 1]


def test_a_nan_value_is_read_back(tmp_path, monkeypatch):
    _fake(monkeypatch, run=lambda r, q, s: [{"setting": "s", "method": "A", "metric": "m",
                                             "value": float("nan")}])
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    again = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path, resume=True)
    assert again.resumed == 2


def test_another_version_is_read_back_with_a_warning(tmp_path, monkeypatch, capsys):
    _fake(monkeypatch)
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    _edit(tmp_path / "fake.replications" / "full-seed0-r0000.json",
          lambda d: d.update(version="0.0.1"))
    capsys.readouterr()
    again = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path, resume=True)
    err = capsys.readouterr().err
    assert again.resumed == 2 and "1 checkpoint in" in err and "hiercvx 0.0.1" in err


# ------------------------------------------------------------------ the data a run had
def _optional_table(monkeypatch, state):
    """A fake table whose optional data set D runs (a row of setting D) when present."""
    def run(replication, quick, seed):
        rows = _cheap(replication, quick, seed)
        return rows + ([dict(rows[0], setting="D")] if state["D"] is None else [])
    _fake(monkeypatch, run=run, optional_data=lambda quick: dict(state))


def test_resume_refuses_replications_made_with_other_data(tmp_path, monkeypatch, capsys):
    state = {"D": None}
    _optional_table(monkeypatch, state)
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    folder = tmp_path / "fake.replications"
    assert json.loads((folder / "full-seed0-r0000.json").read_text())["data_sets"] == ["D"]
    assert json.loads((folder / "outputs.json").read_text())["data_sets"] == ["D"]
    (folder / "full-seed0-r0001.json").unlink()
    state["D"] = "the D rows: d.arff not found"
    assert cli.main(["reproduce", "fake", "--replications", "2", "--out", str(tmp_path),
                     "--resume", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "made with D (replication 0)" in err and "this run would be without D" in err
    assert "another --out" in err and "--force" in err and "Traceback" not in err
    # started again without --resume: the rows say what is left out
    fresh = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path, force=True)
    assert fresh.left_out == "the D rows: d.arff not found"
    # collected while D is present again: left out as the kept rows show, not as the data
    # present at collect time
    state["D"] = None
    collected = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path,
                                    collect=True)
    assert "the D rows: the replications read back were run without" in collected.left_out


def test_collect_refuses_replications_made_with_different_data(tmp_path, monkeypatch):
    state = {"D": None}
    _optional_table(monkeypatch, state)
    reproduce.run_table("fake", replications=1, verbose=False, out=tmp_path)
    state["D"] = "absent"
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path / "b")
    (tmp_path / "b" / "fake.replications" / "full-seed0-r0000.json").replace(
        tmp_path / "b" / "fake.replications" / "kept.json")
    (tmp_path / "fake.replications" / "full-seed0-r0000.json").replace(
        tmp_path / "b" / "fake.replications" / "full-seed0-r0000.json")
    with pytest.raises(InputError, match="made with different data .*replication 0 with D; "
                                         "replication 1 without D"):
        reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path / "b",
                            collect=True)


def test_checkpoints_without_a_data_record_are_read_with_a_warning(tmp_path, monkeypatch,
                                                                    capsys):
    state = {"D": None}
    _optional_table(monkeypatch, state)
    reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path)
    _edit(tmp_path / "fake.replications" / "full-seed0-r0001.json", lambda d: d.pop("data_sets"))
    capsys.readouterr()
    again = reproduce.run_table("fake", replications=2, verbose=False, out=tmp_path, resume=True)
    assert again.resumed == 2 and again.left_out is None
    assert "do not record which data sets they used" in capsys.readouterr().err


def test_hmc_aupr_names_the_shipped_data_set_it_leaves_out(tmp_path, monkeypatch):
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path))
    for part in ("train", "valid", "test"):
        (tmp_path / f"cellcycle_FUN.{part}.arff").write_text("")
    table = reproduce.get("hmc-aupr")
    assert table.missing_data() is None
    assert "the cellcycle_GO rows: data files not found" in table.partial_data()
    assert "cellcycle_FUN" not in table.partial_data()
    rows = [{"setting": "cellcycle_FUN", "method": "x", "metric": "AU(PRC)", "value": 0.1}]
    assert "cellcycle_GO" in _runner.left_out(table, False, rows)
    assert _runner.left_out(table, True, rows) is None        # quick runs cellcycle_FUN only


def test_an_unknown_table_gets_the_close_names(capsys):
    with pytest.raises(InputError, match="did you mean 'wang-table3'"):
        reproduce.get("wang-tabel3")
    assert cli.main(["reproduce", "hmc-auprc"]) == 2
    assert "did you mean 'hmc-aupr'" in capsys.readouterr().err
