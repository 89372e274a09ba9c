"""Every python block of the user guide (docs/guide/*.md) runs as printed.

The blocks of one page share a namespace and run in order in an empty directory, as a reader
pasting them into one session would run them.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
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
    blocks = BLOCK.findall(page.read_text())
    assert blocks, f"{page.name} has no runnable ```python block"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__guide__"}
    for code in blocks:
        exec(compile(code, str(page), "exec"), namespace)
