"""The documentation site builds with warnings as errors, and its math is rendered by a local MathJax.

The quick build runs into a temporary directory without the slow parts: the gallery's
scripts are not executed (``-D plot_gallery=0``; tests/test_sheets_and_examples.py runs them),
the API reference is left out (``HIERCVX_DOCS_API=0``) and so are the highlighted module
sources (``HIERCVX_DOCS_VIEWCODE=0``).  The slow test builds the whole site as `make docs` does,
gallery execution aside.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
VENDOR = DOCS / "_vendor"
MATHJAX = VENDOR / "node_modules" / "mathjax" / "es5" / "tex-chtml.js"
SHEETS = sorted(p.stem for p in (ROOT / "formulations").glob("*.md"))


def _mathjax():
    """MathJax 3 as `make docs` installs it (npm), or a skip saying why it cannot be had."""
    if MATHJAX.is_file():
        return MATHJAX
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed, so MathJax cannot be installed: apt-get install npm")
    proc = subprocess.run([npm, "install", "--prefix", str(VENDOR), "--no-save", "--no-package-lock",
                           "--no-audit", "--no-fund", "mathjax@3"], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0 or not MATHJAX.is_file():
        pytest.skip(f"npm could not install mathjax@3 (registry unreachable?): {proc.stderr[-500:]}")
    return MATHJAX


def _source_copy(tmp):
    """docs/ copied (without build products) beside links to the rest of the project (the
    sheets, the examples, the figures pages include), so that the generated pages (API stubs,
    gallery) are written there, never into the work tree."""
    src = tmp / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns(
        "_build", "_vendor", "_screenshots", "generated", "auto_examples", "sg_execution_times.rst"))
    for item in ROOT.iterdir():
        if item.name != "docs" and not item.name.startswith("."):
            (tmp / item.name).symlink_to(item, target_is_directory=item.is_dir())
    return src


def _build(tmp, **env):
    pytest.importorskip("sphinx", reason="the docs tools are missing: pip install -e '.[docs]'")
    for module in ("myst_parser", "numpydoc", "sphinx_gallery", "furo"):
        pytest.importorskip(module, reason="the docs tools are missing: pip install -e '.[docs]'")
    env["HIERCVX_MATHJAX_DIR"] = str(_mathjax().parent)
    src, out = _source_copy(tmp), tmp / "site"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-D", "plot_gallery=0", str(src), str(out)],
                          capture_output=True, text=True, timeout=3600, env=dict(os.environ, **env))
    assert proc.returncode == 0, "sphinx -W failed:\n" + proc.stdout[-3000:] + proc.stderr[-6000:]
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("docs"), HIERCVX_DOCS_VIEWCODE="0", HIERCVX_DOCS_API="0")


def test_site_builds_with_every_page(site):
    for page in ["index", "reproductions", "benchmarks", "sheets/index", "guide/index",
                 *(f"guide/{p.stem}" for p in (DOCS / "guide").glob("*.md")),
                 "auto_examples/index", *(f"sheets/{s}" for s in SHEETS)]:
        assert (site / f"{page}.html").is_file(), f"{page}.html was not built"
    for example in ("plot_duality_gap", "plot_flat_vs_hierarchical", "plot_hierarchy_confusions",
                    "plot_label_sets_aupr"):
        assert (site / "auto_examples" / f"{example}.html").is_file(), f"gallery: {example} missing"


@pytest.mark.slow
def test_whole_site_with_the_api_reference_builds(tmp_path):
    site = _build(tmp_path)
    assert (site / "api.html").is_file()
    assert (site / "generated" / "hiercvx.hierarchy.Hierarchy.html").is_file()
    assert (site / "generated" / "hiercvx.formulations.hsvm.primal.html").is_file()


def test_sheets_have_rendered_math_and_local_mathjax(site):
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()
    for sheet in SHEETS:
        html = (site / "sheets" / f"{sheet}.html").read_text()
        assert 'src="../_static/mathjax/tex-chtml.js"' in html, f"{sheet}: MathJax not served locally"
        assert "cdn.jsdelivr" not in html and "mathjax.org" not in html
        displays = re.findall(r'<div class="math notranslate nohighlight">\s*\\\[', html)
        assert len(displays) >= 2, f"{sheet}: fewer than two display equations"
        assert '<span class="math notranslate nohighlight">\\(' in html, f"{sheet}: no inline math"


def _within_counts(table):
    rows = list(csv.DictReader((ROOT / "results" / f"{table}-r100" / f"{table}.csv").open()))
    ok = sum(r["within"] == "True" for r in rows)
    other = [r for r in rows if r["metric"] != "TE_Delta"]
    return ok, len(rows), sum(r["within"] == "True" for r in other), len(other)


@pytest.mark.parametrize("table", ["wang-table2", "wang-table3", "wang-table4", "wang-table5"])
def test_reproductions_counts_match_the_kept_runs(table):
    """The first table of the Reproductions page says what results/ holds."""
    ok, n, ok_other, n_other = _within_counts(table)
    page = (DOCS / "reproductions.md").read_text()
    row = next(line for line in page.splitlines() if f"`{table}`" in line)
    assert f"{ok} of {n}" in row and f"{ok_other} of {n_other}" in row, row
