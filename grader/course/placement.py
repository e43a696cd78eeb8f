"""Where a check is taken in a student's notebook, as config.yaml says it: ``before`` (a name, read
by the check's loader), ``at_cell`` (a cell's id) or ``after_line`` (one line of code); at most one,
or ``after_line`` and ``at_cell`` together (the line where the notebook holds it, else the cell).
``grader.notebook.cell_point`` finds the point in a notebook."""

from __future__ import annotations

import re

from grader.course.reader import Reader, describe

CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # nbformat 4.5's cell id


def where(r: Reader, before: str | None) -> tuple[str | None, str | None]:
    """``at_cell`` (a cell id) and ``after_line`` (one line of code): where the check is taken."""
    at_cell, after_line = r.get("at_cell"), r.get("after_line")
    if at_cell is not None and not (isinstance(at_cell, str) and CELL_ID.fullmatch(at_cell)):
        raise r.error(
            r.sub("at_cell"), f"must be a notebook cell id (letters, digits, - and _), got {describe(at_cell)}"
        )
    if after_line is not None and not (
        isinstance(after_line, str) and after_line.strip() and "\n" not in after_line.strip()
    ):
        raise r.error(r.sub("after_line"), f"must be one line of code, got {describe(after_line)}")
    given = [k for k, v in (("before", before), ("at_cell", at_cell), ("after_line", after_line)) if v is not None]
    if len(given) > 1 and given != ["at_cell", "after_line"]:  # both: the line where a notebook holds it, else the cell
        raise r.error(r.path, f"says where it is taken twice ({' and '.join(given)}): give one")
    return at_cell, after_line.strip() if isinstance(after_line, str) else None
