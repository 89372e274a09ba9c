"""``hiercvx demo``'s real-data part on ARFF files written here, and its ``--data`` option."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hiercvx import cli, demo
from hiercvx.verify import Row

NODES = ["2", "2/1", "2/1/3", "2/1/5", "3", "3/1", "3/1/0", "3/2"]
LEAVES = ["2/1/3", "2/1/5", "3/1/0", "3/2"]


def _write(path: Path, n: int, seed: int) -> None:
    """ImageCLEF07A's form: each row's label is one path written with its ancestors."""
    rng = np.random.default_rng(seed)
    lines = ["@RELATION image", ""] + [f"@ATTRIBUTE arg{j} NUMERIC" for j in range(4)]
    lines += [f"@ATTRIBUTE class hierarchical {','.join(NODES)}", "", "@DATA"]
    for i in range(n):
        leaf = LEAVES[i % len(LEAVES)]
        x = np.eye(4)[i % len(LEAVES)] * 3 + 0.5 * rng.standard_normal(4)
        parts = leaf.split("/")
        path_labels = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
        lines.append(",".join(f"{v:.3f}" for v in x) + "," + "@".join(path_labels))
    path.write_text("\n".join(lines) + "\n")


def test_real_data_fit_on_a_folder(tmp_path):
    _write(tmp_path / "ImCLEF07A_Train.arff", 40, 0)
    _write(tmp_path / "ImCLEF07A_Test.arff", 20, 1)
    lines = []
    results = demo.real_data_fit(tmp_path, n_train=2000, out=lines.append)
    assert set(results) == {"hierarchical SVM (4.10)", "flat Crammer-Singer"}
    assert "40 of 40 training images" in lines[0] and "4 leaves" in lines[0]
    for r in results.values():
        assert 0.0 <= r["exact_match"] <= 1.0 and 0.0 <= r["hierarchical_f1"] <= 1.0


def test_missing_folder_names_the_fix(tmp_path):
    lines = []
    assert demo.real_data_fit(tmp_path / "nowhere", out=lines.append) is None
    assert "--data DIR" in lines[0] and demo.DATA_ENV in lines[0]


def test_data_folder_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(demo.DATA_ENV, str(tmp_path))
    assert demo.default_data_dir() == tmp_path
    monkeypatch.delenv(demo.DATA_ENV)
    assert demo.default_data_dir() == demo.DATA_DIR


def test_cli_demo_takes_data_and_documents_the_variable():
    parser = cli.build_parser()
    args = parser.parse_args(["demo", "--data", "/some/dir"])
    assert args.data == "/some/dir" and args.func is cli.cmd_demo
    demo_parser = next(a for a in parser._subparsers._group_actions
                       if a.dest == "command").choices["demo"]
    assert demo.DATA_ENV in demo_parser.format_help()


def test_deepest_labels():
    from hiercvx import Hierarchy
    H = Hierarchy.from_paths(LEAVES)
    labels = demo.deepest_labels([{"2", "2/1", "2/1/3"}, {"3", "3/2"}], H)
    assert labels.tolist() == ["2/1/3", "3/2"]


def test_quiet_drops_the_progress_bar_only(monkeypatch, tmp_path, capsys):
    """``hiercvx demo --quiet``: no progress bar, but the table and the real-data note are
    printed (a disagreement must never pass in silence)."""
    asked = []

    def fake_verify(quick=True, verbose=True):
        asked.append(verbose)
        return [Row("multiclass", "(1)", "tree", 1.0, 0.0, 1e-9, "cs", 1.0, 0.0, 2.0, "ok")]
    monkeypatch.setattr(demo, "verify", fake_verify)
    assert cli.main(["demo", "--quiet", "--data", str(tmp_path / "nowhere")]) == 0
    out = capsys.readouterr().out
    assert asked == [False]
    assert "1 of 1 agree" in out and "ImCLEF07A_Train.arff" in out and demo.DATA_ENV in out
