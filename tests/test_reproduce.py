"""``hiercvx reproduce``: the registered papers' tables, their quick runs, determinism and the
Dask path."""

import csv
import dataclasses
import json
import math
import os
import time
import warnings
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.preprocessing import Normalizer, StandardScaler

from hiercvx import cli, reproduce
from hiercvx.datasets import make_cai_synthetic
from hiercvx.exceptions import InputError
from hiercvx.hierarchy import Hierarchy
from hiercvx.metrics import hierarchical_f1
from hiercvx.reproduce import (
    _runner,
    cai,
    flat_hierarchical,
    hmc,
    leaderboard,
    wang,
    wang_funcat,
    zhou,
)


def comparable(dicts):
    """Rows or cells with NaN (the paper's missing sd) made equal to itself."""
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()}
            for d in dicts]


TABLE_NAMES = ["wang-table1", "wang-table2", "wang-table3", "wang-table4", "nhsvm-table3"]
OURS_ONLY = ["leaderboard", "zhou-comparison"]   # no comparable paper numbers
# registered in session 4; their quick runs are tested with one replication (cost)
NEW_TABLES = ["wang-table5", "cai-table7.5"]
NEEDS_DATA = {"leaderboard", "wang-table5", "flat-vs-hierarchical"}


def test_list_shows_every_table(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in TABLE_NAMES + OURS_ONLY + NEW_TABLES + ["flat-vs-hierarchical"]:
        assert name in out
    assert "Table 3" in out and "section 4.1" in out and "section 8.1" in out


def test_paper_numbers_are_stored_with_their_source():
    for name in TABLE_NAMES:
        table = reproduce.get(name)
        assert table.source and table.reference and table.paper_replications > 1
        assert all(key[0] in table.settings for key in table.reported)
    t3 = reproduce.get("wang-table3").reported
    assert t3[("linear, n=1500", "HPSI", "TE_0-1")] == reproduce.Reported(0.205, 0.003)
    assert t3[("linear, n=50", "Bayes", "TE_sib")] == reproduce.Reported(0.167, None)
    assert reproduce.get("wang-table2").reported[("gaussian, n=100", "SVM", "TE_Delta")].sd == 0.001
    assert reproduce.get("nhsvm-table3").reported[("unbalanced", "HSVM", "accuracy %")] == \
        reproduce.Reported(68.4, 0.07)


@pytest.mark.parametrize("name", TABLE_NAMES)
def test_quick_run_end_to_end(name, tmp_path, capsys):
    """Each table's --quick: exit 0, ours beside the paper's in the output, CSV + PNG written."""
    assert cli.main(["reproduce", name, "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    table = reproduce.get(name)
    assert table.reference in out and "within the paper's spread" in out
    assert " ok" in out or " NO" in out
    with open(tmp_path / f"{name}.csv") as fh:
        cells = list(csv.DictReader(fh))
    assert {c["metric"] for c in cells} == set(table.metrics)
    assert all(int(c["n"]) == table.quick_replications for c in cells)
    compared = [c for c in cells if c["paper_mean"] != "nan"]
    assert compared and all(c["within"] in ("True", "False") for c in compared)
    with open(tmp_path / f"{name}_replications.csv") as fh:
        assert {r["replication"] for r in csv.DictReader(fh)} == {"0", "1"}
    png = (tmp_path / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_same_seed_same_numbers_other_seed_other_numbers():
    first = reproduce.run_table("wang-table3", quick=True, replications=1, verbose=False, seed=3)
    again = reproduce.run_table("wang-table3", quick=True, replications=1, verbose=False, seed=3)
    other = reproduce.run_table("wang-table3", quick=True, replications=1, verbose=False, seed=4)
    assert first.rows == again.rows and comparable(first.cells) == comparable(again.cells)
    assert [r["value"] for r in first.rows] != [r["value"] for r in other.rows]


def test_an_interrupted_run_resumes_from_its_finished_replications(tmp_path, monkeypatch):
    """Every finished replication is kept under ``out``; ``resume`` runs only the others and
    gives the numbers of an uninterrupted run.  Files of another seed or a damaged file are
    not read back; a damaged file is refused, and run again once deleted."""
    full = reproduce.run_table("wang-table3", quick=True, replications=3, verbose=False, seed=5,
                               out=tmp_path)
    kept = sorted((tmp_path / "wang-table3.replications").glob("*-r*.json"))   # not outputs.json
    assert [json.loads(p.read_text())["replication"] for p in kept] == [0, 1, 2]
    kept[1].unlink()                                   # replication 1 was in flight
    kept[2].write_text(kept[2].read_text()[:40])       # a damaged file
    with pytest.raises(InputError, match=f"{kept[2].name} is damaged.*delete it"):
        reproduce.run_table("wang-table3", quick=True, replications=3, verbose=False, seed=5,
                            out=tmp_path, resume=True)
    kept[2].unlink()                                   # is run again once deleted
    table = reproduce.get("wang-table3")
    ran = []

    def counting(r, quick, seed):
        ran.append(r)
        return table.run(r, quick, seed)

    monkeypatch.setitem(reproduce.TABLES, "wang-table3", dataclasses.replace(table, run=counting))
    resumed = reproduce.run_table("wang-table3", quick=True, replications=3, verbose=False,
                                  seed=5, out=tmp_path, resume=True)
    assert ran == [1, 2] and resumed.resumed == 1
    assert comparable(resumed.rows) == comparable(full.rows)
    assert "1 of them read back" in str(resumed)
    ran.clear()
    again = reproduce.run_table("wang-table3", quick=True, replications=3, verbose=False,
                                seed=5, out=tmp_path, resume=True)
    assert ran == [] and again.resumed == 3 and comparable(again.cells) == comparable(full.cells)
    other_seed = reproduce.run_table("wang-table3", quick=True, replications=1, verbose=False,
                                     seed=6, out=tmp_path, resume=True, force=True)
    assert ran == [0] and other_seed.resumed == 0
    with pytest.raises(InputError, match="give out"):
        reproduce.run_table("wang-table3", quick=True, resume=True)
    # collect: the table of what is kept so far, nothing run, nothing written
    ran.clear()
    csv_before = (tmp_path / "wang-table3.csv").read_bytes()
    (tmp_path / "wang-table3.replications" / kept[1].name).unlink()
    partial = reproduce.run_table("wang-table3", quick=True, replications=3, verbose=False,
                                  seed=5, out=tmp_path, collect=True)
    assert ran == [] and partial.replications == 2 and partial.planned == 3
    assert comparable(partial.rows) == comparable([r for r in full.rows if r["replication"] != 1])
    assert "2 of the 3 planned" in str(partial)
    whole = reproduce.run_table("wang-table3", quick=True, replications=1, verbose=False,
                                seed=5, out=tmp_path, collect=True)
    assert ran == [] and whole.replications == 1 and whole.planned == 1
    assert "all 1 asked for" in str(whole) and "unfinished" not in str(whole)
    assert "1 more kept there, past the first 1, are left out" in str(whole)
    assert partial.files == whole.files == []
    assert (tmp_path / "wang-table3.csv").read_bytes() == csv_before
    with pytest.raises(InputError, match="no finished replication"):
        reproduce.run_table("wang-table3", quick=True, seed=9, out=tmp_path, collect=True)


def test_replication_seeds_do_not_depend_on_the_count():
    assert reproduce.replication_seeds(7, 5)[:2] == reproduce.replication_seeds(7, 2)
    assert len(set(reproduce.replication_seeds(7, 100))) == 100


def test_within_spread_rule():
    paper = reproduce.Reported(0.30, 0.02)
    assert reproduce.within_spread(0.34, 0.0, paper, 0.0005)        # 2 sd
    assert not reproduce.within_spread(0.3406, 0.0, paper, 0.0005)
    exact = reproduce.Reported(0.20)                                # a Bayes row: our sd counts
    assert reproduce.within_spread(0.21, 0.005, exact, 0.0005)
    assert not reproduce.within_spread(0.21, 0.001, exact, 0.0005)
    assert reproduce.within_spread(0.21, 0.0, None, 0.0005) is None


def test_bad_requests_are_input_errors(capsys):
    with pytest.raises(InputError, match="unknown table"):
        reproduce.run_table("nope")
    with pytest.raises(InputError, match="replications"):
        reproduce.run_table("wang-table3", quick=True, replications=0)
    assert cli.main(["reproduce", "nope"]) == 2
    assert cli.main(["reproduce"]) == 2
    assert "--list" in capsys.readouterr().err


def test_unreachable_scheduler_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setattr("hiercvx.reproduce._runner.CONNECT_TIMEOUT", "1s")
    assert cli.main(["reproduce", "wang-table3", "--quick", "--quiet",
                     "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "Dask scheduler" in capsys.readouterr().err


@pytest.mark.slow  # the two-job cai-table7.5 run checks loky worker processes in the default run
def test_local_processes_give_the_serial_numbers():
    serial = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=1)
    parallel = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=1, n_jobs=2)
    assert serial.rows == parallel.rows


@pytest.mark.parametrize("processes", [
    # worker processes start a Python each and import the package (11 s on two cores): slow;
    # the same scheduler and client routes, over TCP, run on in-process workers in the default run
    pytest.param(True, marks=pytest.mark.slow, id="processes"),
    pytest.param(False, id="threads")])
def test_dask_cluster_gives_the_serial_table(tmp_path, processes):
    """Two workers on loopback: the same cells, to the last bit, as the serial run."""
    distributed = pytest.importorskip("distributed")
    serial = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=2)
    with distributed.LocalCluster(n_workers=2, processes=processes, threads_per_worker=1,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        on_address = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=2,
                                         scheduler=cluster.scheduler_address, out=tmp_path)
        with distributed.Client(cluster) as client:
            on_client = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=2,
                                            scheduler=client)
    assert serial.rows == on_address.rows == on_client.rows
    assert comparable(serial.cells) == comparable(on_address.cells) == comparable(on_client.cells)
    assert all(math.isfinite(c["mean"]) for c in serial.cells)
    assert (tmp_path / "wang-table3.png").exists()


def needs_data(name):
    table = reproduce.get(name)
    reason = table.missing_data() if table.missing_data else None
    if reason:
        pytest.skip(reason)


# the quick leaderboard (every single-label method on two real data sets, 13 s) is slow: the
# zhou-comparison run checks the same table output, test_leaderboard_single_label_methods_on_real_data
# the leaderboard's rows
@pytest.mark.parametrize("name", [pytest.param("leaderboard", marks=pytest.mark.slow),
                                  "zhou-comparison"])
def test_quick_run_of_a_table_without_paper_numbers(name, tmp_path, capsys):
    """Ours only: exit 0, empty paper columns (no cell compared), CSV + PNG written."""
    needs_data(name)
    assert cli.main(["reproduce", name, "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    table = reproduce.get(name)
    assert table.reported == {} and "(paper -)" not in out and "no paper numbers to compare with" in out
    with open(tmp_path / f"{name}.csv") as fh:
        cells = list(csv.DictReader(fh))
    assert {c["metric"] for c in cells} == set(table.metrics)
    assert {c["setting"] for c in cells} <= set(table.settings)
    assert all(c["paper_mean"] == "nan" and c["within"] == "" for c in cells)
    assert all(int(c["n"]) == table.quick_replications for c in cells)
    assert all(math.isfinite(float(c["mean"])) for c in cells)
    assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # 22 s; determinism is checked on the paper tables in the default run
def test_leaderboard_is_deterministic_but_for_fit_time():
    needs_data("leaderboard")
    first = leaderboard.run_leaderboard(0, True, 11)
    again = leaderboard.run_leaderboard(1, True, 11)
    assert [r for r in first if r["metric"] != "fit s"] == [r for r in again if r["metric"] != "fit s"]
    methods = {r["method"] for r in first}
    assert {"LinearSVC-cs", "LinearSVC-ovr", "HierarchicalSVC", "NormalizedHierarchicalSVC"} <= methods
    hf1 = [r["value"] for r in first if r["metric"] == "hF1"]
    assert all(0.0 < v <= 1.0 for v in hf1)


@pytest.mark.parametrize("name", sorted(NEEDS_DATA))
def test_a_table_without_its_data_is_an_error_naming_the_fix(name, tmp_path, monkeypatch, capsys):
    """Missing data files: the command exits 2 naming a missing file, the folder it looked in,
    the variable and the option that point elsewhere; nothing written.  ``run_table`` itself
    reports the table as skipped."""
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path))
    assert "not found" in reproduce.get(name).missing_data()
    out_dir = tmp_path / "out"
    assert cli.main(["reproduce", name, "--quick", "--quiet", "--out", str(out_dir)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert "data files not found" in captured.err and str(tmp_path) in captured.err
    assert "HIERCVX_HMC_DATA=DIR" in captured.err and "--data DIR" in captured.err
    assert not out_dir.exists()
    result = reproduce.run_table(name, quick=True, verbose=False)
    assert result.skipped and result.cells == [] and result.rows == [] and result.files == []


def test_data_option_names_the_folder_of_the_real_data(tmp_path, monkeypatch, capsys):
    """``reproduce --data DIR`` is where the tables look (here an empty folder, so the error
    names it); a folder that does not exist is refused before anything runs."""
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path / "elsewhere"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["reproduce", "wang-table5", "--quick", "--quiet", "--data", str(empty),
                     "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{empty}/cellcycle_FUN.train.arff" in err and "elsewhere" not in err
    assert cli.main(["reproduce", "wang-table5", "--quick", "--data", str(tmp_path / "no")]) == 2
    assert "--data" in capsys.readouterr().err


def test_a_replication_raising_data_unavailable_skips_the_table(monkeypatch, capsys):
    """The runner also turns a DataUnavailable raised inside a replication into a skip, which
    the command reports as an error."""
    def run(replication, quick, seed):
        raise reproduce.DataUnavailable("data files not found: /nowhere/x.arff")
    base = reproduce.get("cai-table7.5")
    fake = reproduce.Table(name="fake", title="t", paper="p", reference="r", source="s", run=run,
                           metrics=base.metrics, reported={}, paper_replications=1, resolution=0.05)
    monkeypatch.setitem(reproduce.TABLES, "fake", fake)
    assert reproduce.run_table("fake", quick=True, verbose=False).skipped == \
        "data files not found: /nowhere/x.arff"
    assert cli.main(["reproduce", "fake", "--quick", "--quiet"]) == 2
    assert "cannot run fake: data files not found: /nowhere/x.arff" in capsys.readouterr().err


def _reports_its_data_dir(replication, quick, seed):
    """A replication that says which Clus-HMC folder it reads (as a skip, the one message a
    replication hands back without rows)."""
    raise reproduce.DataUnavailable(f"reads {os.environ.get(hmc.HMC_DATA_ENV)}")


def _fake_table(monkeypatch, run):
    base = reproduce.get("cai-table7.5")
    fake = reproduce.Table(name="fake", title="t", paper="p", reference="r", source="s", run=run,
                           metrics=base.metrics, reported={}, paper_replications=1, resolution=0.05)
    monkeypatch.setitem(reproduce.TABLES, "fake", fake)


def test_data_dir_reaches_the_replications_wherever_they_run(tmp_path, monkeypatch):
    """data_dir (--data) is the folder of every replication: in this process, and on a Dask
    worker, whose environment is its own; the caller's environment is left as it was."""
    _fake_table(monkeypatch, _reports_its_data_dir)
    monkeypatch.setenv(hmc.HMC_DATA_ENV, "/elsewhere")
    folder = str(tmp_path)
    assert reproduce.run_table("fake", quick=True, verbose=False,
                               data_dir=folder).skipped == f"reads {folder}"
    assert os.environ[hmc.HMC_DATA_ENV] == "/elsewhere"
    # the task carries the folder: a worker without the variable reads it all the same
    monkeypatch.delenv(hmc.HMC_DATA_ENV)
    with pytest.raises(reproduce.DataUnavailable, match=f"reads {folder}"):
        _runner._numbered(_reports_its_data_dir, 0, True, 1, folder)
    assert hmc.HMC_DATA_ENV not in os.environ
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        assert reproduce.run_table("fake", quick=True, verbose=False, data_dir=folder,
                                   scheduler=cluster.scheduler_address
                                   ).skipped == f"reads {folder}"
    with pytest.raises(InputError, match="no such folder"):
        reproduce.run_table("fake", quick=True, verbose=False, data_dir=tmp_path / "none")


def test_zhou_runs_on_synthetic_data_without_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(hmc.HMC_DATA_ENV, str(tmp_path))
    rows = zhou.run_comparison(0, True, 5)
    assert {r["setting"] for r in rows} == {"balanced", "unbalanced"}
    assert {r["method"] for r in rows} == set(zhou.METHODS)
    assert rows == zhou.run_comparison(1, True, 5)       # depends on the seed only


def test_zhou_stores_the_papers_rcv1_numbers_as_a_note_only():
    table = reproduce.get("zhou-comparison")
    assert table.reported == {} and "RCV1" in table.notes and "not compared" in table.source
    assert zhou.RCV1_REPORTED["MCAT.H"]["ORTHOGONAL"] == (3.00, 3.56)
    assert zhou.RCV1_REPORTED["CCAT"]["TREELOSS"] == (37.57, 50.45)


def test_single_path_subset_and_leaf_classes():
    H = Hierarchy.from_edges([("r", "a"), ("a", "a1"), ("a", "a2"), ("r", "b"), ("b", "b1")], root="r")
    keep, classes = leaderboard.single_path_classes(H, [{"a", "a1"}, {"a1", "b1"}, {"b"}, {"a2"}])
    assert keep.tolist() == [0, 2, 3] and classes.tolist() == ["a1", "b", "a2"]
    pruned, to_leaf = leaderboard.leaf_classes(H, ["a1", "a", "b"])
    assert "b1" not in pruned.nodes and "a2" not in pruned.nodes   # only the classes' ancestors
    assert to_leaf["a1"] == "a1" and to_leaf["b"] == "b"             # b is a leaf once b1 goes
    assert to_leaf["a"] != "a" and pruned.is_leaf(to_leaf["a"])      # a keeps a child: self leaf


# ------------------------------------------------------------------ tables added in session 4
@pytest.mark.parametrize("name, jobs", [("wang-table5", 1), ("cai-table7.5", 2)])
def test_quick_run_of_a_new_table_end_to_end(name, jobs, tmp_path, capsys):
    """One quick replication: exit 0, ours beside the paper's, CSV + PNG, and the replication's
    rows are those of the table's serial run at that replication's seed (deterministic; with
    two jobs and one replication the cross-validation folds run in two processes)."""
    needs_data(name)
    assert cli.main(["reproduce", name, "--quick", "--replications", "1", "--seed", "3",
                     "--n-jobs", str(jobs), "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    table = reproduce.get(name)
    assert table.reference in out
    with open(tmp_path / f"{name}.csv") as fh:
        cells = list(csv.DictReader(fh))
    assert {c["metric"] for c in cells} == set(table.metrics)
    compared = [c for c in cells if c["paper_mean"] != "nan"]
    # one replication has no sd: a verdict where the paper prints its sd, none where it does not
    assert compared
    for c in compared:
        assert c["within"] in (("",) if c["paper_sd"] == "nan" else ("True", "False"))
    if any(c["within"] for c in compared):
        assert "within the paper's spread" in out and (" NO" in out or " ok" in out)
    else:
        assert "(no verdict: one replication gives no sd" in out
    assert all(math.isfinite(float(c["mean"])) for c in cells)
    assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / f"{name}_replications.csv") as fh:
        values = [float(r["value"]) for r in csv.DictReader(fh)]
    again = table.run(0, True, reproduce.replication_seeds(3, 1)[0])
    assert values == [r["value"] for r in again]


def test_paper_numbers_of_the_new_tables():
    t5 = reproduce.get("wang-table5").reported
    assert t5[("linear", "HPSI", "TE_0-1")] == reproduce.Reported(0.958, 0.008)
    assert t5[("gaussian", "SHSVM", "F1")] == reproduce.Reported(0.016, 0.002)
    assert len(t5) == 2 * 5 * 5 and "section 4.2" in reproduce.get("wang-table5").reference
    t75 = reproduce.get("cai-table7.5").reported
    assert t75[("fan-out 3, depth 3", "H-SVM", "max loss")] == reproduce.Reported(1.39)
    assert t75[("fan-out 6, depth 2", "F-SVM", "rloss %")] == reproduce.Reported(3.09)
    assert len(t75) == 2 * 2 * 5 and "Table 7.5" in reproduce.get("cai-table7.5").reference
    assert reproduce.get("flat-vs-hierarchical").reported == {}


def test_cai_svms_are_the_thesis_flat_and_hierarchical_models():
    ds = make_cai_synthetic(30, 5, branching=2, depth=2, random_state=0)
    flat, hier = cai.make_svm("F-SVM", ds.hierarchy), cai.make_svm("H-SVM", ds.hierarchy)
    assert len(flat.hierarchy.nodes) == len(ds.hierarchy.leaves) + 1 and flat.C == hier.C == 1e4
    assert hier.hierarchy is ds.hierarchy and not flat.fit_intercept and not hier.fit_intercept


def test_funcat_two_branches_rebuild():
    needs_data("wang-table5")
    X, y, H = wang_funcat.load_two_branches()
    assert X.shape[0] == len(y) > 1000 and all(H.is_leaf(v) for v in set(y))
    assert {str(c).split("/")[0] for c in H.children(H.root)} <= set(wang_funcat.BRANCHES)
    tr, tu, te = wang_funcat.partition(len(y), np.random.default_rng(0))
    assert len(set(tr) | set(tu) | set(te)) == len(y)
    assert abs(len(tr) / len(y) - 303 / 1103) < 0.01


def test_flat_vs_hierarchical_quick_rows():
    needs_data("flat-vs-hierarchical")
    rows = flat_hierarchical.run_flat_vs_hierarchical(0, True, 5)
    assert {(r["setting"], r["method"]) for r in rows} == {
        (s, m) for s in flat_hierarchical.SETS for m in flat_hierarchical.METHODS}
    assert {r["metric"] for r in rows} == set(flat_hierarchical.METRICS)
    values = {(r["setting"], r["method"], r["metric"]): r["value"] for r in rows}
    assert all(0 <= values[(s, m, "acc %")] <= values[(s, m, "pacc %")] <= 100
               for s in flat_hierarchical.SETS for m in flat_hierarchical.METHODS)


def test_leaderboard_multilabel_methods_on_label_sets():
    """The multi-label rows' machinery on a small synthetic multi-label problem: every method
    of the rows takes label sets (a single-label one would end a full replication with its
    refusal), the same CV picks C for every method, binary relevance predicts non-empty
    label sets."""
    ds = make_cai_synthetic(60, 6, branching=3, depth=2, random_state=1)
    X, y, H = ds.X, list(ds.y), ds.hierarchy
    assert any(len(labels) > 1 for labels in y)
    for name in leaderboard.MULTILABEL_METHODS:
        grid = (0.1, 1.0) if name == "LinearSVC-ovr" else (1.0,)
        C = leaderboard.cross_validated_C(name, H, X[:40], y[:40], grid, 2, 0, multilabel=True)
        values = leaderboard.evaluate(name, H, X[:40], y[:40], X[40:], y[40:], C, multilabel=True)
        assert C in grid and 0 < values["hF1"] <= 1 and 0 <= values["exact match"] <= 1
    pred = leaderboard.BinaryRelevanceSVC(C=1.0).fit(X, y).predict(X[:5])
    assert all(isinstance(p, frozenset) and p for p in pred)
    assert leaderboard.methods_for("Enron_corr") == leaderboard.MULTILABEL_METHODS
    assert "LinearSVC-cs" not in leaderboard.MULTILABEL_METHODS
    assert leaderboard.exact_match([frozenset({1}), 2], [frozenset({1}), 3]) == 0.5
    assert np.isfinite(values["tree distance"])
    assert values["converged"] in (0.0, 1.0)


def test_leaderboard_single_label_methods_on_real_data():
    """The quick leaderboard's single-label rows on a small draw of ImageCLEF07A: every method
    it runs there, C chosen by cross-validation, scored on held-out images."""
    needs_data("leaderboard")
    setting = "ImageCLEF07A"
    Xtr, ytr, Xte, yte, H, multilabel = leaderboard.setting_data(setting, 60, 30,
                                                                 np.random.default_rng(0))
    names = [m for m in leaderboard.methods_for(setting) if not leaderboard.skipped_in_quick(setting, m)]
    assert {"LinearSVC-cs", "LinearSVC-ovr", "HierarchicalSVC", "NormalizedHierarchicalSVC"} <= set(names)
    assert not multilabel
    with leaderboard.quiet_alpha_heuristic():
        for name in names:
            grid = (0.1, 1.0) if name == "LinearSVC-cs" else (1.0,)
            C = leaderboard.cross_validated_C(name, H, Xtr, ytr, grid, 2, 0)
            values = leaderboard.evaluate(name, H, Xtr, ytr, Xte, yte, C)
            assert C in grid and 0 < values["hF1"] <= 1 and 0 <= values["exact match"] <= 1
            assert np.isfinite(values["tree distance"]) and values["converged"] in (0.0, 1.0)


def test_leaderboard_reports_unconverged_refits_and_normalizes_documents(monkeypatch):
    """A refit stopped by max_iter counts as not converged (its warning is recorded, not
    lost); Enron's pipeline scales documents to unit length, the others standardize."""
    ds = make_cai_synthetic(60, 6, branching=3, depth=2, random_state=2)
    X, y, H = ds.X, list(ds.y), ds.hierarchy
    make = leaderboard.make_method
    converged = leaderboard.evaluate("HierarchicalSVC", H, X[:40], y[:40], X[40:], y[40:], 1.0, True)
    assert converged["converged"] == 1.0
    monkeypatch.setattr(leaderboard, "make_method", lambda *a: make(*a).set_params(
        hierarchicalsvc__max_iter=1, hierarchicalsvc__tol=1e-12))
    stopped = leaderboard.evaluate("HierarchicalSVC", H, X[:40], y[:40], X[40:], y[40:], 1.0, True)
    assert stopped["converged"] == 0.0 and 0 < stopped["hF1"] <= 1
    assert isinstance(make("HierarchicalSVC", H, 1.0, True, True).steps[1][1], Normalizer)
    assert isinstance(make("HierarchicalSVC", H, 1.0, True).steps[1][1], StandardScaler)
    assert leaderboard.NORMALIZED_ROWS == {"Enron_corr"} and "converged" in leaderboard.METRICS


def test_leaderboard_hiclass_rows_only_when_hiclass_is_importable():
    single = leaderboard.methods_for("ImageCLEF07A")
    if leaderboard.LocalClassifierPerNode is None:
        assert not set(leaderboard.HICLASS) & set(single) and "not installed" in leaderboard.HICLASS_NOTE
        assert "not installed" in reproduce.get("leaderboard").notes
        return
    assert set(leaderboard.HICLASS) <= set(single)
    H = Hierarchy.from_edges([("r", "a"), ("a", "a1"), ("a", "a2"), ("r", "b")], root="r")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = np.array(["a1" if x[0] > 0.5 else "a2" if x[0] > 0 else "b" for x in X], dtype=object)
    for kind in ("node", "parent", "level"):
        pred = leaderboard.HiclassPaths(H, kind, 1.0).fit(X, y).predict(X)
        # hiclass may stop at an internal node (a partial path): a node of H, scored as such
        assert set(pred) <= {"a", "a1", "a2", "b"}
        assert np.mean(pred == y) > 0.6 and hierarchical_f1(list(y), list(pred), hierarchy=H) > 0.7


def _second_finishes_first(directory, r, quick, seed):
    """A replication's rows; replication 0 waits until the runner has kept replication 1 (the
    marker is written by ``on_done``, in the parent), so the order of keeping is fixed whatever
    the load: an in-order runner would keep nothing before replication 0 and fail the test."""
    if r == 0:
        marker = Path(directory) / "kept-1"
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return [{"setting": "s", "method": "m", "metric": "TE_0-1", "value": float(seed)}]


def test_replications_are_kept_as_they_finish_not_in_order(tmp_path):
    """A slow replication must not hold back the keeping of those that finish after it (in
    order, a stopped run would lose the replications finished behind a hung one)."""
    table = SimpleNamespace(name="two", run=partial(_second_finishes_first, str(tmp_path)))
    kept = []

    def keep(r, part):
        kept.append(r)
        (tmp_path / f"kept-{r}").write_text("kept")

    rows = _runner.execute(table, False, [7, 8], n_jobs=2, verbose=False, on_done=keep)
    assert kept == [1, 0]
    assert [row["replication"] for row in rows] == [0, 1]  # the table is in replication order
    assert [row["value"] for row in rows] == [7.0, 8.0]


@pytest.mark.parametrize("address", ["foo", "http://127.0.0.1:8786"])
def test_a_malformed_scheduler_address_is_a_clear_error(address, tmp_path, capsys):
    """Dask's parser refuses the address: an input error naming the form, no traceback."""
    with pytest.raises(InputError, match="tcp://HOST:PORT"):
        reproduce.run_table("wang-table3", quick=True, verbose=False, scheduler=address)
    assert cli.main(["reproduce", "wang-table3", "--quick", "--quiet", "--scheduler", address,
                     "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "tcp://HOST:PORT" in err and "Traceback" not in err


def _counting_table(monkeypatch, name="wang-table3"):
    """Table ``name`` with a ``run`` that records the replications it is asked for."""
    table, ran = reproduce.get(name), []

    def counting(r, quick, seed):
        ran.append(r)
        return table.run(r, quick, seed)
    monkeypatch.setitem(reproduce.TABLES, name, dataclasses.replace(table, run=counting))
    return ran


def test_an_unwritable_out_is_refused_before_the_work(tmp_path, monkeypatch, capsys):
    """``--out`` that is a file, or under one, is refused before any replication runs."""
    ran = _counting_table(monkeypatch)
    afile = tmp_path / "afile"
    afile.write_text("")
    for out in (afile, afile / "sub"):
        assert cli.main(["reproduce", "wang-table3", "--quick", "--quiet", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert str(afile) in err and "is a file" in err and "Errno" not in err
    with pytest.raises(InputError, match="is a file"):
        reproduce.run_table("wang-table3", quick=True, verbose=False, out=afile)
    assert ran == []


def test_one_replication_has_no_sd_and_no_verdict_that_needs_one():
    """One replication: the sd is undefined (NaN, not 0), an exact row (no paper sd) gets no
    verdict, a row with the paper's sd still does; the text shows no ±0.000."""
    table = reproduce.get("wang-table3")
    exact, spread = ("linear, n=50", "Bayes", "TE_sib"), ("linear, n=1500", "HPSI", "TE_0-1")
    rows = [dict(replication=0, setting=s, method=m, metric=k, value=v)
            for (s, m, k), v in ((exact, 0.167), (spread, 0.205))]
    cells = {(c["setting"], c["method"], c["metric"]): c for c in reproduce.aggregate(table, rows)}
    assert math.isnan(cells[exact]["std"]) and cells[exact]["within"] is None
    assert math.isnan(cells[spread]["std"]) and cells[spread]["within"] is True
    text = str(reproduce.TableResult(table, True, 1, 0, list(cells.values()), rows))
    assert "±0.000" not in text and "1 replication (paper" in text
    assert "1 of 1 cells within the paper's spread; 1 more without a verdict" in text


def test_collect_names_the_options_of_the_kept_run(tmp_path):
    """Replications kept by a --quick run: collecting without --quick names --quick."""
    table = reproduce.get("wang-table1")
    seed = reproduce.replication_seeds(0, 1)[0]
    _runner.Checkpoints(tmp_path, table, quick=True, seed=0).save(0, seed, [])
    with pytest.raises(InputError, match="runs with --quick, --seed 0: give the same options"):
        reproduce.run_table("wang-table1", out=tmp_path, collect=True)
    with pytest.raises(InputError, match="run the table with --out"):
        reproduce.run_table("wang-table1", out=tmp_path / "empty", collect=True)


def test_conflicting_arguments_are_refused(tmp_path, capsys):
    """--list takes no TABLE nor a run's options; --collect runs nothing, so no --resume."""
    assert cli.main(["reproduce", "wang-table3", "--list"]) == 2
    assert "drop wang-table3" in capsys.readouterr().err
    assert cli.main(["reproduce", "--list", "--quick"]) == 2
    assert "drop --quick" in capsys.readouterr().err
    with pytest.raises(InputError, match="resume"):
        reproduce.run_table("wang-table3", quick=True, out=tmp_path, collect=True, resume=True)
    assert cli.main(["reproduce", "wang-table3", "--out", str(tmp_path), "--collect",
                     "--n-jobs", "2"]) == 2
    err = capsys.readouterr().err
    assert "--n-jobs" in err and "n_jobs" not in err


def test_funcat_flat_baseline_does_not_warn_about_its_path_labels():
    """The flat SVM of Table 5 ignores the FunCat tree on purpose: no advice to pass one."""
    H = Hierarchy.from_paths(["10/01/03", "10/01/05", "11/02"])
    rng = np.random.default_rng(0)
    y = np.array([H.leaves[i % len(H.leaves)] for i in range(60)], dtype=object)
    X = rng.normal(size=(60, 4)) + np.array([H.leaves.index(v) for v in y])[:, None]
    parts = (np.arange(0, 20), np.arange(20, 40), np.arange(40, 60))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wang.make_estimator("SVM", H, "linear", None).fit(X, y)
    assert any("got no hierarchy" in str(w.message) for w in caught)    # what is silenced
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for method in ("SVM", "SHSVM"):
            wang_funcat.run_method(X, y, H, parts, "linear", method, [1.0])
    assert not any("got no hierarchy" in str(w.message) for w in caught)


def test_each_published_cell_carries_the_rounding_of_its_printed_digits():
    reported = reproduce.parse_reported("s | A | 0.30 (0.02) | 0.545 (0.02) | 68.4", ("a", "b", "c"))
    assert [reported[("s", "A", k)].resolution for k in "abc"] == [0.005, 0.0005, 0.05]
    # 0.30 printed with two decimals: 0.344 is within 2 sd + 0.005, whatever the table's rounding
    assert reproduce.within_spread(0.344, 0.0, reported[("s", "A", "a")], 0.0005)
    assert not reproduce.within_spread(0.586, 0.0, reported[("s", "A", "b")], 0.05)
    cai_cells = reproduce.get("cai-table7.5").reported.values()
    assert {r.resolution for r in cai_cells} == {0.05, 0.005}
