"""Reading a notebook file into its code cells, or a one-sentence reason why it cannot be read."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.errors import NotebookError

MAX_NOTEBOOK_BYTES = 20_000_000  # 20 MB, as the message says (outputs and images count; they are not analysed)
# The code the grader analyses (``notebook.analyse``: parsing and data flow, in the grader's own
# process) is bounded, so one submission's analysis stays within a fixed budget (about a second):
# code cells of at most MAX_CELL_CHARS characters, and MAX_CODE_CHARS of code in all.
MAX_CELL_CHARS = 100_000
MAX_CODE_CHARS = 400_000
# Python source cannot hold these, and JSON or UTF-8 writers fail on them: replaced on reading.
_UNUSABLE_CHARS = re.compile("[\x00\ud800-\udfff]")
SKIP_TAG = "skip-grading"
LOCKED_TAG = "locked"  # a given, read-only cell: graded as released (``restore_locked``)


@dataclass(frozen=True)
class Cell:
    # 1-based position among *all* the notebook's cells, markdown included: "cell 9" is the ninth
    # cell a student sees from the top, in every message and output (authoring ones too)
    index: int
    source: str
    tags: tuple[str, ...] = ()
    cell_id: str = ""  # the notebook's own id for the cell (nbformat 4.5), where it has one

    @property
    def locked(self) -> bool:
        return LOCKED_TAG in self.tags

    @property
    def skipped(self) -> bool:
        return SKIP_TAG in self.tags


def read(path: Path, *, max_bytes: int = MAX_NOTEBOOK_BYTES) -> list[Cell]:
    """The code cells of a notebook file. Raises NotebookError with a one-sentence reason."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NotebookError(f"The file cannot be opened ({exc.strerror}).") from None
    if size == 0:
        raise NotebookError("The file is empty.")
    if size > max_bytes:
        raise NotebookError(
            f"The notebook is {size / 1e6:.1f} MB, larger than the {max_bytes / 1e6:.0f} MB limit; "
            "clear large outputs or embedded images and submit again."
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"The file is not UTF-8 text (undecodable byte at offset {exc.start}).") from None
    if not text.strip():
        raise NotebookError("The file is empty.")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"The file is not JSON, so not a notebook (line {exc.lineno}: {exc.msg}).") from None
    except RecursionError:
        raise NotebookError("The file is JSON nested too deeply to be a notebook.") from None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        raise NotebookError("The file is JSON but not a Jupyter notebook (it has no cells).")
    major = data.get("nbformat")
    if not isinstance(major, int) or major < 4:
        if major in (1, 2, 3):
            import nbformat  # only to upgrade an old format: a version-4 notebook is read as the JSON it is

            try:
                nb = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
            except Exception as exc:  # noqa: BLE001 - nbformat fails many ways on a student's file; never a crash
                raise NotebookError(
                    f"The notebook uses format version {major} and cannot be upgraded: {_one_line(exc)}."
                ) from None
        else:
            raise NotebookError(f"The notebook format version {major!r} is not supported (expected 4).")
    elif major > 4:
        raise NotebookError(f"The notebook format version {major} is newer than this grader supports (4).")
    else:
        # Editors write slightly off notebooks all the time (missing ids, extra metadata): only
        # reject what cannot be used, and say exactly what that is.
        problem = _unusable(data)
        if problem:
            raise NotebookError(f"The notebook structure is invalid: {problem}.")
        nb = data
    cells: list[Cell] = []
    total = 0
    for number, cell in enumerate(nb.get("cells", []), 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise NotebookError("A code cell's source is not text.")
        if len(source) > MAX_CELL_CHARS:
            raise NotebookError(
                f"Cell {number} holds {len(source):,} characters, more than the "
                f"{MAX_CELL_CHARS:,} the grader analyses in one cell; keep data in files, not in code."
            )
        total += len(source)
        if total > MAX_CODE_CHARS:
            raise NotebookError(
                f"The notebook holds more than {MAX_CODE_CHARS:,} characters of code, more than the "
                "grader analyses in one notebook; keep data in files, not in code."
            )
        source = _UNUSABLE_CHARS.sub("\ufffd", source)  # a lone surrogate or NUL: the replacement character
        tags = cell.get("metadata", {}).get("tags", []) if isinstance(cell.get("metadata"), dict) else []
        tags = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
        cell_id = cell.get("id")
        cells.append(Cell(index=number, source=source, tags=tags, cell_id=cell_id if isinstance(cell_id, str) else ""))
    return cells


def restore_locked(cells: list[Cell], given: list[Cell]) -> tuple[list[Cell], tuple[int, ...]]:
    """The cells as they run: each cell that has the id of a given cell tagged ``locked`` holds
    that cell's source and tags again (read-only cells are put back before grading); with the
    positions of the cells that had been changed.

    A cell whose id is none of the given cells' (a notebook saved by an editor that gave its cells
    new ids) but that holds, unchanged, the source of a given locked cell is that cell: it takes
    its id and tags. Where given cells share a source (the same test after two parts), the cells
    holding it are theirs in order, if there are as many of them; else they are none of them."""
    locked = {c.cell_id: c for c in given if c.locked and c.cell_id}
    if not locked:
        return cells, ()
    shared: dict[str, list[Cell]] = {}
    for c in locked.values():
        shared.setdefault(c.source.strip(), []).append(c)
    holding: dict[str, int] = {}
    for c in cells:
        if c.cell_id not in locked and c.source.strip() in shared:
            holding[c.source.strip()] = holding.get(c.source.strip(), 0) + 1
    seen: dict[str, int] = {}
    out, changed = [], []
    for c in cells:
        was = locked.get(c.cell_id)
        key = c.source.strip()
        if was is None and c.cell_id not in locked and key:
            mine = shared.get(key, [])
            n = seen[key] = seen.get(key, -1) + 1
            was = mine[n] if len(mine) == holding.get(key) else None
            if was is not None:
                c = Cell(index=c.index, source=c.source, tags=was.tags, cell_id=was.cell_id)
        if was is not None and (c.source != was.source or c.tags != was.tags):
            if c.source.strip() != was.source.strip():
                changed.append(c.index)
            c = Cell(index=c.index, source=was.source, tags=was.tags, cell_id=was.cell_id)
        out.append(c)
    return out, tuple(changed)


def cell_point(cells: list[Cell], at_cell: str | None, after_line: str | None) -> int | None:
    """Where a check with ``at_cell`` or ``after_line`` is taken among these cells (as they run), as
    a capture point: before the cell at that position; None at the end of the notebook.

    ``at_cell``: just before the cell with that id (given cells keep their ids: a locked one is put
    back as released, ``restore_locked``). Where the student copied it, the last copy counts (the
    last run of a cell is the one a notebook's tools record); where they moved it, it is taken
    where it now stands; where they deleted it, at the end of the notebook, on what the notebook
    ends with. ``after_line``: just after the last cell holding that line (compared as code, so
    quotes and spaces do not matter), or at the end where no cell holds it; with ``at_cell`` too,
    where no cell holds it, as ``at_cell`` says."""
    if after_line is not None:
        want = _as_code(after_line)
        holding = [k for k, c in enumerate(cells) if any(_as_code(line) == want for line in c.source.splitlines())]
        if holding:
            return holding[-1] + 1 if holding[-1] + 1 < len(cells) else None
    if at_cell is not None:
        found = [k for k, c in enumerate(cells) if c.cell_id == at_cell]
        if not found:
            return None
        index = cells[found[-1]].index  # the first part of the last copy (a cell cut in two keeps its id)
        return next(k for k in found if cells[k].index == index)
    return None


def _as_code(line: str) -> str:
    text = line.strip()
    if not text or text.startswith("#"):
        return text
    try:
        return ast.dump(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text


def _unusable(data: dict[str, Any]) -> str:
    cells = data.get("cells")
    if not isinstance(cells, list):
        return "'cells' is not a list"
    for n, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            return f"cell {n} is not an object"
        source = cell.get("source", "")
        if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            return f"the source of cell {n} is not text"
    return ""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__).rstrip(".")[:200]
