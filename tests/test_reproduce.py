"""``hiercvx reproduce``: the registered papers' tables, their quick runs, determinism and the
Dask path (issue 14)."""

import csv
import math

import pytest

from hiercvx import cli, reproduce
from hiercvx.exceptions import InputError
from hiercvx.hierarchy import Hierarchy
from hiercvx.reproduce import leaderboard, zhou


def comparable(dicts):
    """Rows or cells with NaN (the paper's missing sd) made equal to itself."""
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()}
            for d in dicts]


TABLE_NAMES = ["wang-table1", "wang-table2", "wang-table3", "wang-table4", "nhsvm-table3"]
OURS_ONLY = ["leaderboard", "zhou-comparison"]   # no comparable paper numbers


def test_list_shows_every_table(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in TABLE_NAMES + OURS_ONLY:
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
    first = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=3)
    again = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=3)
    other = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=4)
    assert first.rows == again.rows and comparable(first.cells) == comparable(again.cells)
    assert [r["value"] for r in first.rows] != [r["value"] for r in other.rows]


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


def test_local_processes_give_the_serial_numbers():
    serial = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=1)
    parallel = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=1, n_jobs=2)
    assert serial.rows == parallel.rows


def test_dask_cluster_gives_the_serial_table(tmp_path):
    """Two worker processes on loopback: the same cells, to the last bit, as the serial run."""
    distributed = pytest.importorskip("distributed")
    serial = reproduce.run_table("wang-table3", quick=True, verbose=False, seed=2)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
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
    if name == "leaderboard" and leaderboard.data_missing():
        pytest.skip(leaderboard.data_missing())


@pytest.mark.parametrize("name", OURS_ONLY)
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


def test_leaderboard_is_deterministic_but_for_fit_time():
    needs_data("leaderboard")
    first = leaderboard.run_leaderboard(0, True, 11)
    again = leaderboard.run_leaderboard(1, True, 11)
    assert [r for r in first if r["metric"] != "fit s"] == [r for r in again if r["metric"] != "fit s"]
    methods = {r["method"] for r in first}
    assert {"LinearSVC-cs", "LinearSVC-ovr", "HierarchicalSVC", "NormalizedHierarchicalSVC"} <= methods
    hf1 = [r["value"] for r in first if r["metric"] == "hF1"]
    assert all(0.0 < v <= 1.0 for v in hf1)


def test_leaderboard_without_data_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(leaderboard, "DATA_DIR", tmp_path)
    assert "not found" in leaderboard.data_missing()
    assert cli.main(["reproduce", "leaderboard", "--quick", "--quiet", "--out", str(tmp_path)]) == 2
    assert "skipped" in capsys.readouterr().err


def test_zhou_runs_on_synthetic_data_without_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(leaderboard, "DATA_DIR", tmp_path)
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
