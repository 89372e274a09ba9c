"""``hiercvx reproduce hmc-aupr``: AU(PRC) on the Clus-HMC data, published numbers beside ours."""

import math

import numpy as np
import pytest

from hiercvx import reproduce
from hiercvx.datasets import make_cai_synthetic
from hiercvx.reproduce import hmc_aupr


def test_registered_with_the_published_numbers_and_their_source():
    table = reproduce.get("hmc-aupr")
    assert table.reported[("cellcycle_FUN", "C-HMCNN (published)", "AU(PRC)")].mean == 0.255
    assert table.reported[("cellcycle_GO", "C-HMCNN (published)", "AU(PRC)")].mean == 0.413
    assert table.reported[("cellcycle_FUN", "CLUS-ENS (published)", "AU(PRC)")].mean == 0.227
    assert table.reported[("cellcycle_GO", "CLUS-ENS (published)", "AU(PRC)")].mean == 0.387
    assert "NeurIPS 2020" in table.source and "ICML 2018" in table.source
    assert set(hmc_aupr.QUICK.methods) <= set(hmc_aupr.METHODS)


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
    assert got["C"] in settings.C_grid and got["fit s"] >= 0
    assert ("sigma" in got) == hmc_aupr.METHODS[method].kernel


def test_absent_data_is_reported_not_failed(monkeypatch, tmp_path):
    monkeypatch.setattr(hmc_aupr.hmc, "DATA_DIR", tmp_path)
    assert hmc_aupr._missing() is not None
    with pytest.raises(reproduce.DataUnavailable):
        hmc_aupr.run_settings(hmc_aupr.QUICK)


@pytest.mark.slow  # the quick table loads the ARFF files and fits four methods on a grid
@pytest.mark.skipif(hmc_aupr._missing() is not None, reason="Clus-HMC data absent")
def test_quick_table_runs_and_writes_csv_and_png(tmp_path):
    result = reproduce.run_table("hmc-aupr", quick=True, verbose=False, out=tmp_path)
    cells = {(c["setting"], c["method"], c["metric"]): c for c in result.cells}
    for method in hmc_aupr.QUICK.methods:
        value = cells[("cellcycle_FUN", method, "AU(PRC)")]["mean"]
        assert 0.0 < value < 1.0
    published = cells[("cellcycle_FUN", "C-HMCNN (published)", "AU(PRC)")]
    assert published["mean"] == published["paper_mean"] == 0.255
    assert not any(math.isnan(c["mean"]) for c in result.cells)
    assert [f.suffix for f in result.files] == [".csv", ".csv", ".png"]
    assert all(f.exists() for f in result.files)
