"""Runnable ```python blocks of a Markdown page (the formulation sheets, the user guide), run as
printed: in order, in one namespace, in the current directory, as a reader pasting them into
one session would run them.  Import with ``from snippets import python_blocks, run_blocks``
(pytest puts ``tests/`` on the path)."""

import re
from pathlib import Path

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return BLOCK.findall(Path(page).read_text())


def run_blocks(page: Path, name: str) -> None:
    """Execute every python block of ``page`` in one namespace whose ``__name__`` is ``name``;
    a page without one fails."""
    blocks = python_blocks(page)
    assert blocks, f"{Path(page).name} has no runnable ```python block"
    namespace = {"__name__": name}
    for code in blocks:
        exec(compile(code, str(page), "exec"), namespace)
