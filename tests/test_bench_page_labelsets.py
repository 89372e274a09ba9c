"""``benchmarks/page.py``: the label-set rows (``HierarchicalSVC()`` and
``NormalizedHierarchicalSVC()`` against one-vs-rest ``LinearSVC`` over the evaluated nodes),
read from the row lines ``benchmarks/_rows.py`` prints, from a log as ``--from-log`` reads it
and as ``--run --labelsets --n N`` writes it (no benchmark is run here)."""

import importlib.util
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


page = _load("page")
rows = _load("_rows")

# as `make bench-targets` writes it: date, load, commit, then each script under `set -x`;
# the scripts' own tables around their row lines, one row line cut short, one peer missing
LOG = """Sun Nov 29 01:00:00 UTC 2026
 01:00:00 up 1 day,  load average: 1.10, 1.20, 1.30
1eddf7b
+ .venv/bin/python benchmarks/bench_labelsets.py --n 100
load average 2.88 3.51 2.51 on 2 CPUs
cellcycle_FUN: n=100 d=77 nodes=500 evaluated=210
  one-vs-rest LinearSVC   fit      0.8 s   AU(PRC) 0.073
  HierarchicalSVC()       fit      8.2 s   AU(PRC) 0.083   gap 9.81e-07 (converged, labelset)
  ratio HierarchicalSVC / one-vs-rest: 10.1
PAGE-ROW {"data": "cellcycle_FUN label sets, n = 100 (random subset of train + valid), d = 77, 500 nodes", "ours": "`HierarchicalSVC()`", "seconds": 8.2, "peer": "one-vs-rest `LinearSVC` over the 210 evaluated nodes", "peer_seconds": 0.82, "certificate": "gap 9.8e-07; AU(PRC) 0.083 (one-vs-rest 0.073); predict 0.65 s"}
PAGE-ROW {"data": "cellcycle_GO label sets", "ours": "`HierarchicalSVC()`", "seco
+ .venv/bin/python benchmarks/bench_nhsvm_labelsets.py --n 100
cellcycle_GO: 100 train+valid samples, 77 features, 1278 test
  NHSVM                  3.9      3.9      0.18     42  8.9e-06    0.045   (tol 1e-05)
PAGE-ROW {"data": "cellcycle_GO label sets, n = 100 (random subset of train + valid), d = 77, 4126 nodes", "ours": "`NormalizedHierarchicalSVC(max_iter=20)`", "seconds": 30.0, "peer": "one-vs-rest `LinearSVC` over the 1500 evaluated nodes", "peer_seconds": null, "certificate": "gap 2.1e-01, not converged; AU(PRC) 0.301 (one-vs-rest 0.350); predict 1.20 s"}
+ .venv/bin/python benchmarks/bench_labelsets.py
cellcycle_FUN: not found in /nowhere; skipped
"""


def test_label_set_rows_are_read_from_the_row_lines():
    found, missed = page.parse_log(LOG)
    assert missed == ["benchmarks/bench_labelsets.py"]   # the run that found no data
    hsvm, nhsvm = found
    assert hsvm.ours == "`HierarchicalSVC()`" and hsvm.seconds == 8.2
    assert hsvm.peer_seconds == 0.82 and hsvm.peer.startswith(page.ONE_VS_REST)
    assert "n = 100 (random subset" in hsvm.data and "500 nodes" in hsvm.data
    assert page._ratio(hsvm) == "10× slower"
    assert hsvm.script == "benchmarks/bench_labelsets.py --n 100"
    assert nhsvm.ours == "`NormalizedHierarchicalSVC(max_iter=20)`"
    assert math.isnan(nhsvm.peer_seconds) and page._ratio(nhsvm) == "–"
    assert "not converged" in nhsvm.certificate
    table = page.table(found)
    assert table.count("\n| cellcycle_") == 2 and "AU(PRC) 0.083" in table


def test_row_line_round_trip(capsys):
    line = rows.page_row(rows.labelset_data("cellcycle_GO", 2476, 77, 4126, subset=False),
                         "`HierarchicalSVC()`", 12.5, "one-vs-rest `LinearSVC`", math.nan,
                         "gap 1.0e-06")
    assert capsys.readouterr().out.strip() == line
    (record,) = rows.read_rows([line, "not a row", rows.PREFIX + "{broken"])
    assert record["data"] == "cellcycle_GO label sets, n = 2476 (train + valid), d = 77, 4126 nodes"
    assert record["seconds"] == 12.5 and math.isnan(record["peer_seconds"])


def test_estimator_label_names_what_differs_from_the_defaults():
    from hiercvx.estimators import HierarchicalSVC
    assert rows.estimator_label(HierarchicalSVC()) == "`HierarchicalSVC()`"
    assert rows.estimator_label(HierarchicalSVC(max_iter=300)) == "`HierarchicalSVC(max_iter=300)`"


def test_from_log_page_has_the_label_set_rows(tmp_path):
    log = tmp_path / "targets.log"
    log.write_text(LOG)
    out, figure = tmp_path / "benchmarks.md", tmp_path / "speed.png"
    assert page.main(["--from-log", str(log), "--out", str(out), "--figure", str(figure)]) == 0
    text = out.read_text()
    assert text.count("| data | hiercvx |") == 1 and "- **commit:** 1eddf7b" in text
    assert "`NormalizedHierarchicalSVC(max_iter=20)`" in text and figure.is_file()


@pytest.mark.parametrize("argv", [["--from-log", "x", "--labelsets"], ["--run", "--n", "100"],
                                  ["--run", "--labelsets", "--n", "0"]])
def test_run_flags_are_checked(argv):
    with pytest.raises(SystemExit):
        page.main(argv)


@pytest.fixture
def scripts_run(monkeypatch, tmp_path):
    """``run_quick`` with the scripts not run: the list of ``(script, arguments)`` it would
    have run (the quick rows left out), filled as it goes."""
    calls = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    def fake_run(command, **kwargs):
        if len(command) > 1 and "bench_" in command[1]:
            calls.append((Path(command[1]).name, command[2:]))
        return Done()

    monkeypatch.setattr(page.subprocess, "run", fake_run)
    monkeypatch.setattr(page, "RUN_LOG", tmp_path / "page-run.log")
    monkeypatch.setattr(page, "QUICK", ())
    return calls


def test_run_labelsets_passes_the_subset_to_both_scripts(scripts_run):
    log = page.run_quick(imageclef=False, labelsets=True, n=100)
    assert scripts_run == [("bench_labelsets.py", ["--n", "100"]),
                           ("bench_nhsvm_labelsets.py", ["--n", "100"])]
    assert [name for name, _ in page.split_scripts(log)] == [
        "benchmarks/bench_labelsets.py --n 100", "benchmarks/bench_nhsvm_labelsets.py --n 100"]


def test_run_full_nhsvm_adds_the_full_size_rows_once(scripts_run, tmp_path):
    """``--full-nhsvm`` runs NHSVM on the full label sets after the subset rows, with the
    hinge-loss peer; with ``--labelsets`` on the full sets already (no ``--n``) it adds
    nothing, and the full-set NHSVM run has that peer."""
    page.run_quick(imageclef=False, labelsets=True, n=100, full_nhsvm=True)
    assert scripts_run == [("bench_labelsets.py", ["--n", "100"]),
                           ("bench_nhsvm_labelsets.py", ["--n", "100"]),
                           ("bench_nhsvm_labelsets.py", ["--hinge-peer"])]
    scripts_run.clear()
    page.run_quick(imageclef=False, labelsets=True, n=None, full_nhsvm=True)
    assert scripts_run == [("bench_labelsets.py", []),
                           ("bench_nhsvm_labelsets.py", ["--hinge-peer"])]
    with pytest.raises(SystemExit):
        page.main(["--from-log", str(tmp_path / "page-run.log"), "--full-nhsvm"])


def test_run_full_hsvc_adds_the_full_size_hierarchical_svm_rows(scripts_run, tmp_path):
    """``--full-hsvc`` runs ``HierarchicalSVC()`` on each full label set, cellcycle_GO with a
    cap on its passes that its row's label shows; with ``--labelsets`` on the full sets
    already it adds nothing; it goes with ``--run`` only."""
    page.run_quick(imageclef=False, labelsets=True, n=100, full_hsvc=True)
    assert scripts_run == [("bench_labelsets.py", ["--n", "100"]),
                           ("bench_nhsvm_labelsets.py", ["--n", "100"]),
                           ("bench_labelsets.py", ["--datasets", "cellcycle_FUN"]),
                           ("bench_labelsets.py", ["--datasets", "cellcycle_GO",
                                                   "--max-iter", "2000"])]
    scripts_run.clear()
    page.run_quick(imageclef=False, labelsets=True, n=None, full_hsvc=True, full_nhsvm=True)
    assert scripts_run == [("bench_labelsets.py", []),
                           ("bench_nhsvm_labelsets.py", ["--hinge-peer"])]
    scripts_run.clear()
    page.run_quick(imageclef=False, full_hsvc=True)
    assert [args for _, args in scripts_run] == [list(a) for _, a in page.FULL_HSVC]
    with pytest.raises(SystemExit):
        page.main(["--from-log", str(tmp_path / "page-run.log"), "--full-hsvc"])


def test_hinge_peer_row_is_liblinear_on_the_hinge_loss(capsys, monkeypatch):
    """``bench_nhsvm_labelsets.py --hinge-peer``: one-vs-rest ``LinearSVC(loss="hinge")``
    beside the NHSVM fit of the same run, its own row line naming the loss and counting the
    node problems that stopped at ``max_iter`` (a tiny tree here, no shared data)."""
    import numpy as np

    from hiercvx import Hierarchy
    from hiercvx.estimators import NormalizedHierarchicalSVC

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    bench = _load("bench_nhsvm_labelsets")
    H = Hierarchy.from_parents({"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b"})
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    leaves = ["a1", "a2", "b1"]
    best = [leaves[int(np.argmax(x[:3]))] for x in X]
    y = [{leaf, "b1"} if x[3] > 1 else {leaf} for leaf, x in zip(best, X)]
    _, _, squared, n_nodes, _ = bench.one_vs_rest(H, X, y, X[:7])
    _, _, hinge, n_hinge, stopped = bench.one_vs_rest(H, X, y, X[:7], loss="hinge")
    assert n_hinge == n_nodes and 0 <= stopped <= n_nodes
    assert hinge.shape == (7, len(H)) and not np.allclose(hinge, squared)  # another loss
    est = NormalizedHierarchicalSVC(hierarchy=H).fit(X, y)
    capsys.readouterr()
    fit = bench.Clock()
    fit.wall = 2.5
    bench.hinge_row("FUN", H, X, y, X[:7], y[:7], est, fit, 0.5, None)
    (record,) = rows.read_rows(capsys.readouterr().out.splitlines())
    assert record["peer"].startswith("one-vs-rest `LinearSVC(loss='hinge')`")
    assert record["peer"].endswith(f"({stopped} stopped at max_iter)")
    assert record["seconds"] == 2.5 and record["peer_seconds"] > 0
    assert record["ours"] == "`NormalizedHierarchicalSVC()`"
    assert record["certificate"].startswith(f"gap {est.gap_:.1e}")
