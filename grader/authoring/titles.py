"""A question's title where its id is a tool's machine name (nbgrader's ``cell-512e08e2a1f4c3d0``, a
cell's position): the heading the notebook puts above it, as the student reads it there."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

# ids no person chose: nbgrader's generated ``cell-<hex>``, and this importer's ``cell12`` fallback
_MACHINE_ID = re.compile(r"^(?:cell-?[0-9a-f]{6,}|cell\d+)_*$")
_HEADING = re.compile(r"^\s{0,3}(?P<level>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
_MARKUP = re.compile(r"</?[A-Za-z][^>]*>|\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w)")
LONGEST = 70


def is_machine_id(qid: str) -> bool:
    return bool(_MACHINE_ID.match(qid))


def heading_above(cells: Sequence[Any], pos: int) -> str:
    """The nearest heading in a markdown cell above ``cells[pos]``, after the heading it is a part of
    where that is not the notebook's title (``Question 2, Part I``); else the first line of the
    nearest markdown cell above it; else ``""``."""
    first_line = ""
    nearest: tuple[int, str] | None = None
    for cell in reversed(cells[:pos]):
        if cell.cell_type != "markdown":
            continue
        lines = [line for line in str(cell.source).splitlines() if line.strip()]
        for line in reversed(lines):
            m = _HEADING.match(line)
            if m is None:
                continue
            level, text = len(m.group("level")), _plain(m.group("text"))
            if nearest is None:
                nearest = (level, text)
                if level <= 2:
                    return _cut(text)
            elif level < nearest[0]:
                return _cut(f"{text}, {nearest[1]}" if level >= 2 else nearest[1])
        if lines and not first_line and nearest is None:
            first_line = _plain(lines[0])
    return _cut(nearest[1] if nearest is not None else first_line)


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split()).rstrip(":").strip()


def _cut(text: str) -> str:
    return text if len(text) <= LONGEST else text[: LONGEST - 1].rstrip() + "…"


class Titles:
    """Titles for one notebook's questions: a heading shared by several tests is numbered
    (``Exercise 2``, ``Exercise 2, part 2``)."""

    def __init__(self, cells: Sequence[Any]) -> None:
        self.cells = cells
        self.seen: dict[str, int] = {}

    def title(self, qid: str, pos: int) -> str | None:
        """The title of the question whose cell is ``cells[pos]``, or None where its id reads as one."""
        if not is_machine_id(qid):
            return None
        heading = heading_above(self.cells, pos)
        if not heading:
            return None
        self.seen[heading] = self.seen.get(heading, 0) + 1
        n = self.seen[heading]
        return heading if n == 1 else f"{heading}, part {n}"
