"""Every python block of the user guide (docs/guide/*.md) runs as printed.

The blocks of one page share a namespace and run in order in an empty directory, as a reader
pasting them into one session would run them.
"""

import re
from pathlib import Path

import pytest

from snippets import run_blocks

ROOT = Path(__file__).resolve().parents[1]
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
PAGES = [p for p in GUIDE if p.stem != "index"]


def test_the_guide_has_its_pages():
    index = (ROOT / "docs" / "guide" / "index.md").read_text()
    listed = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1)
    names = [line.strip() for line in listed.splitlines()
             if line.strip() and not line.strip().startswith(":")]
    assert sorted(names) == sorted(p.stem for p in PAGES)
    assert "guide/index" in (ROOT / "docs" / "index.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_guide_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_blocks(page, "__guide__")
