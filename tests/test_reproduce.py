"""``hiercvx reproduce``: the registered papers' tables, their quick runs, determinism and the
Dask path (issue 14)."""

import csv
import math

import pytest

from hiercvx import cli, reproduce
from hiercvx.exceptions import InputError


def comparable(dicts):
    """Rows or cells with NaN (the paper's missing sd) made equal to itself."""
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in d.items()}
            for d in dicts]


TABLE_NAMES = ["wang-table1", "wang-table2", "wang-table3", "wang-table4", "nhsvm-table3"]


def test_list_shows_every_table(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in TABLE_NAMES:
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
