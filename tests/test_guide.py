"""Every python block of the user guide (docs/guide/*.md) and of the front page (docs/index.md)
runs as printed, and prints what the page shows.

The blocks of one page share a namespace and run in order in an empty directory, as a reader
pasting them into one session would run them.  A ```text block that follows a ```python block
with nothing but blank lines between them is that block's output: what the block writes to
stdout must equal it line by line (trailing spaces and blank lines aside), with two
wildcards the page may use where a value varies from run to run on one machine (times):
``…`` inside a line stands for any text on that line, and a line ``...`` for any number of
lines (none included).  Everything else, numbers included, is compared exactly, so a page
whose shown output is stale fails.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
PAGES = [p for p in GUIDE if p.stem != "index"]
FRONT = ROOT / "docs" / "index.md"

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def examples(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, shown)`` for each ```python block of ``page``, in order: the line of its
    fence, its code, and the ```text block right after it (None when there is none)."""
    text = Path(page).read_text()
    fences = [(m.group(1).strip(), m.group(2), m.start(), m.end(),
               text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]
    found = []
    for i, (lang, body, _, end, line) in enumerate(fences):
        if lang != "python":
            continue
        shown = None
        if i + 1 < len(fences) and fences[i + 1][0] == "text" \
                and not text[end:fences[i + 1][2]].strip():
            shown = fences[i + 1][1]
        found.append((line, body, shown))
    return found


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _line_matches(shown: str, printed: str) -> bool:
    if "…" not in shown:
        return shown == printed
    pattern = ".*".join(re.escape(part) for part in shown.split("…"))
    return re.fullmatch(pattern, printed, re.S) is not None


def matches(shown: str, printed: str) -> bool:
    """Whether ``printed`` is the output ``shown`` on the page (wildcards ``…`` and ``...``)."""
    want, got = _lines(shown), _lines(printed)

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and _line_matches(want[i], got[j]) and match(i + 1, j + 1)

    return match(0, 0)


def run_and_compare(page: Path) -> None:
    """Run the python blocks of ``page`` in one namespace; each block followed by an output
    block must print that output."""
    blocks = examples(page)
    assert blocks, f"{page.name} has no runnable ```python block"
    namespace = {"__name__": "__guide__"}
    stale = []
    for line, code, shown in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(page), "exec"), namespace)
        if shown is not None and not matches(shown, out.getvalue()):
            stale.append(f"{page.name}:{line}: the block prints\n{out.getvalue()}"
                         f"but the page shows\n{shown}")
    assert not stale, "\n".join(stale)


def test_the_guide_has_its_pages():
    index = (ROOT / "docs" / "guide" / "index.md").read_text()
    listed = re.search(r"```\{toctree\}\n(.*?)```", index, re.S).group(1)
    names = [line.strip() for line in listed.splitlines()
             if line.strip() and not line.strip().startswith(":")]
    assert sorted(names) == sorted(p.stem for p in PAGES)
    assert "guide/index" in FRONT.read_text()


def test_output_blocks_are_compared_with_their_wildcards():
    assert matches("a 1\n...\nz …s\n", "a 1\nb\nc\nz 0.25s\n\n")
    assert matches("a\n...\n", "a\n")
    assert not matches("a 1\n", "a 2\n")
    assert not matches("passes 34 | gap 6.1e-06", "passes 29 | gap 1.0e-05")
    assert not matches("a\nb\n", "a\n")
    assert not matches("x …s", "y 1s")


@pytest.mark.parametrize("page", [*PAGES, FRONT], ids=[*(p.name for p in PAGES), "docs/index.md"])
def test_guide_snippets_print_what_the_page_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_and_compare(page)
