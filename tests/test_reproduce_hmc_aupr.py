"""``hiercvx reproduce hmc-aupr``: AU(PRC) on the Clus-HMC data, published numbers beside ours."""

import math

import numpy as np
import pytest

from hiercvx import Hierarchy, reproduce
from hiercvx.datasets import make_cai_synthetic
from hiercvx.reproduce import hmc_aupr


def test_registered_with_the_published_numbers_and_their_source():
    table = reproduce.get("hmc-aupr")
    assert table.reported[("cellcycle_FUN", "C-HMCNN (published)", "AU(PRC)")].mean == 0.255
    assert table.reported[("cellcycle_GO", "C-HMCNN (published)", "AU(PRC)")].mean == 0.413
    assert table.reported[("cellcycle_FUN", "CLUS-ENS (published)", "AU(PRC)")].mean == 0.227
    assert table.reported[("cellcycle_GO", "CLUS-ENS (published)", "AU(PRC)")].mean == 0.387
    assert "NeurIPS 2020" in table.source and "ICML 2018" in table.source
    assert table.reported[("cellcycle_FUN", "CLUS-HMC (published)", "AU(PRC)")].mean == 0.172
    assert table.reported[("cellcycle_GO", "CLUS-HMC (published)", "AU(PRC)")].mean == 0.357


def _synthetic_splits():
    ds = make_cai_synthetic(120, 5, random_state=0)
    X, y = np.asarray(ds.X, dtype=float), [frozenset(s) for s in ds.y]
    X[::17, 0] = np.nan   # missing values, imputed inside every fit
    parts = {part: (X[k::3], y[k::3]) for k, part in enumerate(("train", "valid", "test"))}
    return hmc_aupr.Splits("synthetic", ds.hierarchy, parts)


@pytest.mark.parametrize("method", list(hmc_aupr.METHODS))
def test_every_method_is_selected_on_valid_and_scored_on_test(method):
    settings = hmc_aupr.Settings(C_grid=(0.1, 1.0), sigma_factors=(1.0,), rank=15, tol=1e-2)
    rows = hmc_aupr._rows_of("synthetic", method, _synthetic_splits(), settings, seed=0)
    got = {r["metric"]: r["value"] for r in rows}
    assert 0.0 < got["AU(PRC)"] <= 1.0
    assert got.get("C", settings.C_grid[0]) in settings.C_grid and got["fit s"] >= 0
    assert ("C" in got) == hmc_aupr.METHODS[method].takes_C
    assert ("sigma" in got) == hmc_aupr.METHODS[method].kernel
    # the certified gap of every fit that has one: the hierarchical SVMs and the node ridge
    assert ("gap" in got) == (method.startswith(("HierarchicalSVC", "NormalizedHierarchicalSVC",
                                                  "TopDownSVC", "NodeKernelRidge")))
    assert -1e-12 <= got.get("gap", 0.0) <= settings.tol   # a closed-form solve: round-off


def test_absent_data_is_reported_not_failed(monkeypatch, tmp_path):
    monkeypatch.setenv(hmc_aupr.hmc.HMC_DATA_ENV, str(tmp_path))
    assert hmc_aupr._missing() is not None
    with pytest.raises(reproduce.DataUnavailable):
        hmc_aupr.run_settings(hmc_aupr.QUICK)


@pytest.mark.skipif(hmc_aupr._missing() is not None, reason="Clus-HMC data absent")
def test_real_data_rows_beside_the_published():
    """The quick table's path on the real data (cellcycle_FUN read, cut at its second level,
    subsampled) with two cheap methods, one with a C and a width to choose and one without:
    their rows beside the published rows.  Every method's rows: the synthetic test above."""
    methods = ("NormalizedHierarchicalSVC, RBF (Nystroem)", "HierarchicalPerceptron")
    settings = hmc_aupr.Settings(data_sets=("cellcycle_FUN",), C_grid=(0.1, 1.0),
                                 sigma_factors=(1.0,), rank=15, tol=1e-2, subsample=(60, 30, 60),
                                 max_depth=2, methods=methods)
    rows = hmc_aupr.run_settings(settings)
    got = {(r["method"], r["metric"]): r["value"] for r in rows}
    assert {r["setting"] for r in rows} == {"cellcycle_FUN"}
    for method in methods:
        spec = hmc_aupr.METHODS[method]
        assert 0.0 < got[(method, "AU(PRC)")] < 1.0
        assert ((method, "C") in got) == spec.takes_C and ((method, "sigma") in got) == spec.kernel
        assert got.get((method, "C"), settings.C_grid[0]) in settings.C_grid
    for method in hmc_aupr.PUBLISHED_METHODS:
        assert got[(method, "AU(PRC)")] == hmc_aupr.PUBLISHED[("cellcycle_FUN", method)]
    assert {m for m, _ in got} == set(methods) | set(hmc_aupr.PUBLISHED_METHODS)
    assert not any(math.isnan(r["value"]) for r in rows)


@pytest.mark.slow  # every method on the real data (25 s); test_real_data_rows_beside_the_published
# runs the same path with two methods, the synthetic test every method, tests/test_reproduce.py
# run_table's files
@pytest.mark.skipif(hmc_aupr._missing() is not None, reason="Clus-HMC data absent")
def test_quick_table_runs_every_row_and_writes_csv_and_png(tmp_path):
    # every method (linear and Gaussian, hierarchical and one-vs-rest) chosen on valid,
    # refitted on train + valid, scored on test, beside the published rows
    result = reproduce.run_table("hmc-aupr", quick=True, verbose=False, out=tmp_path)
    cells = {(c["setting"], c["method"], c["metric"]): c for c in result.cells}
    assert hmc_aupr.QUICK.methods is None
    for method, spec in hmc_aupr.METHODS.items():
        value = cells[("cellcycle_FUN", method, "AU(PRC)")]["mean"]
        assert 0.0 < value < 1.0
        if spec.takes_C:
            assert cells[("cellcycle_FUN", method, "C")]["mean"] in hmc_aupr.QUICK.C_grid
        assert (("cellcycle_FUN", method, "sigma") in cells) == spec.kernel
    for method in hmc_aupr.PUBLISHED_METHODS:
        published = cells[("cellcycle_FUN", method, "AU(PRC)")]
        assert published["paper_mean"] == hmc_aupr.PUBLISHED[("cellcycle_FUN", method)]
        assert math.isnan(published["mean"]) and published["within"] is None
    assert not any(math.isnan(c["mean"]) for c in result.cells
                   if c["method"] not in hmc_aupr.PUBLISHED_METHODS)
    assert [f.suffix for f in result.files] == [".csv", ".csv", ".png"]
    assert all(f.exists() for f in result.files)


@pytest.mark.slow  # the whole FunCat tree (500 nodes): minutes for every method on a grid
@pytest.mark.skipif(hmc_aupr._missing() is not None, reason="Clus-HMC data absent")
def test_whole_funcat_tree_subsampled():
    settings = hmc_aupr.Settings(data_sets=("cellcycle_FUN",), C_grid=(0.1, 1.0),
                                 sigma_factors=(1.0,), rank=60, tol=1e-2,
                                 subsample=(150, 80, 150))
    rows = hmc_aupr.run_settings(settings)
    got = {(r["method"], r["metric"]): r["value"] for r in rows}
    for method in hmc_aupr.METHODS:
        assert 0.0 < got[(method, "AU(PRC)")] < 1.0
    assert got[("C-HMCNN (published)", "AU(PRC)")] == 0.255


def test_top_levels_keeps_parents_and_cuts_label_sets():
    H = Hierarchy.from_edges([("r", "a"), ("r", "b"), ("a", "a1"), ("b", "a1"),
                              ("a1", "a11"), ("b", "b1")])
    X = np.arange(8.0).reshape(4, 2)
    y = [frozenset({"a11"}), frozenset({"b1", "a"}), frozenset({"a1"}), frozenset({"b"})]
    splits = hmc_aupr.Splits("dag", H, {"train": (X, y), "valid": (X, y), "test": (X, y)})
    top = hmc_aupr.top_levels(splits, 1)
    assert set(top.hierarchy.nodes) == {"r", "a", "b"}
    # a11's parent a1 has two parents: both are kept
    assert top.parts["train"][1] == [frozenset({"a", "b"}), frozenset({"a", "b"}),
                                     frozenset({"a", "b"}), frozenset({"b"})]
    deeper = hmc_aupr.top_levels(splits, 2)
    assert set(deeper.hierarchy.parents("a1")) == {"a", "b"}
    assert deeper.parts["test"][1][0] == frozenset({"a1"})


def test_max_iter_caps_the_hierarchical_svms_and_the_gap_says_how_far_they_got():
    capped = hmc_aupr.Settings(C_grid=(1.0,), tol=1e-9, max_iter=2)
    H = _synthetic_splits().hierarchy
    for name in ("HierarchicalSVC", "NormalizedHierarchicalSVC"):
        default = hmc_aupr.METHODS[name].make(H, 1.0, None, hmc_aupr.Settings(), 0)
        assert default.max_iter == type(default)().max_iter
        assert hmc_aupr.METHODS[name].make(H, 1.0, None, capped, 0).max_iter == 2
        rows = hmc_aupr._rows_of("synthetic", name, _synthetic_splits(), capped, seed=0)
        got = {r["metric"]: r["value"] for r in rows}
        assert got["gap"] > capped.tol   # two passes do not reach 1e-9: the table shows it


def test_published_rows_are_shown_not_compared():
    """The published rows repeat the papers' numbers: their cells carry them as the paper's,
    with nothing of ours and no verdict, so the summary counts no cell as within."""
    table = reproduce.get("hmc-aupr")
    rows = [dict(replication=0, setting="cellcycle_FUN", method="HierarchicalSVC",
                 metric="AU(PRC)", value=0.2)]
    rows += [dict(replication=0, setting="cellcycle_FUN", method=m, metric="AU(PRC)",
                  value=hmc_aupr.PUBLISHED[("cellcycle_FUN", m)]) for m in hmc_aupr.PUBLISHED_METHODS]
    cells = reproduce.aggregate(table, rows)
    for cell in cells[1:]:
        assert cell["within"] is None and math.isnan(cell["mean"])
        assert cell["paper_mean"] == hmc_aupr.PUBLISHED[("cellcycle_FUN", cell["method"])]
    text = str(reproduce.TableResult(table, True, 1, 0, cells, rows))
    assert "within the paper's spread" not in text and "no paper numbers to compare" in text
    line = next(t for t in text.splitlines() if t.startswith("cellcycle_FUN  C-HMCNN"))
    assert "(0.255)" in line and " ok" not in line and " NO" not in line
