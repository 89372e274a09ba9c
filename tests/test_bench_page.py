"""``benchmarks/page.py``: the rows the benchmark scripts print become the benchmarks page's
one table (no benchmark is run here; the log is written out)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_page", ROOT / "benchmarks" / "page.py")
page = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(page)

LOG = """Sat Nov 28 09:21:00 UTC 2026
 09:21:00 up 1 day,  load average: 0.10, 0.20, 0.30
289b684
+ .venv/bin/python benchmarks/bench_engine.py --repeat 1 --imageclef
hierarchical SVM (4.10), 25-node tree, d = 20, C = 1, tol 1e-8: fast solvers vs the CLARABEL reference
           row     n  reference |    working set:    time      rel    it     x | interior point:    time      rel    it     x |           auto:    time      rel    it     x | auto ran
---------------------------------------------------------------------------------------------------
 random labels   600      6.14s |                  0.680s +1.7e-09   52    9.0 |                  0.070s +3.2e-09    7   87.7 |                  0.071s +3.2e-09    7   86.5 | interior_point

ImageCLEF07A training set: 10000 x 80, 63 leaves, standardized, C = 1, intercept; estimators at their defaults
  LIBLINEAR Crammer-Singer       73.8s  objective 5306.123456 (15753 iterations)
  MulticlassSVC()                10.8s  objective 5305.000000 gap 1.3e-12 (crammer_singer, 2970 iterations, 0 face/Newton steps)  x LIBLINEAR 0.15
  HierarchicalSVC()              49.7s  objective 5100.000000 gap 6.2e-08 (working_set, 4757 iterations, 3 face/Newton steps)  x LIBLINEAR 0.67
+ .venv/bin/python benchmarks/bench_sibling_fun.py --rows funcat

cellcycle_FUN single-path: n=480 d=77 nodes=201
  LIBLINEAR Crammer-Singer          0.57 s
  SiblingMarginSVC                  5.96 s  gap 4.00e-10  ipm      converged ratio     10.5x
  HierarchicalPsiClassifier        13.96 s  gap 7.00e-09  ipm      warn      ratio     24.5x  DC steps 4
+ .venv/bin/python benchmarks/bench_nothing.py
nothing to see
"""


def test_log_becomes_one_table_with_machine_date_and_commit(tmp_path):
    rows, missed = page.parse_log(LOG)
    assert [r.ours.split()[0] for r in rows] == [
        "margin", "`MulticlassSVC()`", "`HierarchicalSVC()`", "`SiblingMarginSVC()`",
        "`HierarchicalPsiClassifier()`"]
    engine, _, hsvm, sibling, hpsi = rows
    assert engine.seconds == 0.071 and engine.peer_seconds == 6.14
    assert page._ratio(engine) == "**86× faster**"
    assert hsvm.peer_seconds == 73.8 and page._ratio(hsvm) == "1.48× faster"
    assert page._ratio(sibling) == "10× slower" and "not converged" in hpsi.certificate
    assert missed == ["benchmarks/bench_nothing.py"]
    log = tmp_path / "targets.log"
    log.write_text(LOG)
    out = tmp_path / "benchmarks.md"
    figure = tmp_path / "speed.png"
    assert page.main(["--from-log", str(log), "--out", str(out), "--figure", str(figure)]) == 0
    assert figure.is_file() and "](speed.png)" in out.read_text()
    text = out.read_text()
    assert "- **date:** Sat Nov 28 09:21:00 UTC 2026" in text and "- **commit:** 289b684" in text
    assert "cores" in text and text.count("| data | hiercvx |") == 1
