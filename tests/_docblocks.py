"""The ```python blocks of the Markdown pages (README.md, docs/), found for the tests that run
them: tests/docs/test_code_blocks.py (every block that needs nothing outside ``make test``'s
venv) and tests/engines/test_readme_engines.py (the README's Spark, Daft and datasets block).

A block's info string may carry ``notest="reason"``: the docs suite reports it as skipped with
that reason; a reason naming ``make test-engines`` means the engine suite runs it.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
_NOTEST = re.compile(r'\bnotest="(?P<reason>[^"]*)"')


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    code: str
    notest: Optional[str]  # the reason, for a block marked notest="..."

    @property
    def name(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, in order (indented ones too)."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        indent = len(lines[i]) - len(stripped)
        m = _FENCE.match(stripped)
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(fence):
            j += 1
        if info.split(" ", 1)[0] in ("python", "py", "pycon"):
            body = "\n".join(line[indent:] for line in lines[i + 1 : j])
            notest = _NOTEST.search(info)
            blocks.append(
                Block(
                    path, i + 1, textwrap.dedent(body), notest.group("reason") if notest else None
                )
            )
        i = j + 1
    return blocks
