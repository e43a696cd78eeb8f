"""The cells a person reads while grading, as HTML: a student's answer, the question and its reference.

Cells are rendered with nbconvert's HTML exporter (markdown rendered, code highlighted by Pygments,
outputs with their images), its scripts removed, and the body cleaned with nh3 as the feedback
page is (``grader.outputs.html.sanitize``). The review app serves this HTML in a sandboxed frame (scripts,
but no origin of its own) under a Content-Security-Policy that allows no script at all, or, where
a markdown cell has math, exactly one: the bundled KaTeX (``grader.outputs.pages``), which
typesets it. A student's ``<script>``, ``onerror=`` or ``javascript:`` link never runs.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import html
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.notebook.answers import ANSWER_TAG, NbCell, cells_of
from grader.outputs import figures

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'self'"
)
MATH_SELECTOR = ".jp-RenderedMarkdown"  # math in markdown only, never in code or outputs
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.M)
_EXPORTER: list[Any] = []  # one exporter, made once (its templates take a while to load), used in turn
_LOCK = threading.Lock()


def notebook_data(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("cells"), list) else None


@dataclass(frozen=True)
class Page:
    """A page of cells as rendered, and whether it carries the bundled KaTeX (its markdown has math)."""

    html: str
    math: bool = False

    @property
    def policy(self) -> str:
        """The Content-Security-Policy to serve it with: KaTeX's one script where it has math, none otherwise."""
        return math_policy() if self.math else CSP


def render(raw_cells: Sequence[dict[str, Any]], *, note: str = "") -> Page:
    """A standalone, script-free page of these notebook cells."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbformat.v4.rwbase import rejoin_lines

    from grader.outputs import pages
    from grader.outputs.html import sanitize

    nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]  # nbformat has no annotations
    cells: list[Any] = []
    # Sources and outputs saved as lists of lines, joined as nbformat does when it reads a file.
    joined = rejoin_lines(
        nbformat.from_dict(
            {
                "cells": [
                    copy.deepcopy(c)
                    for c in raw_cells  # type: ignore[no-untyped-call]
                    if isinstance(c, dict)
                ]
            }
        )
    )
    for raw in joined.cells:
        try:
            cell = nbformat.from_dict(raw)  # type: ignore[no-untyped-call]  # nbformat has no annotations
            if cell.get("cell_type") not in ("code", "markdown", "raw"):
                continue
            if cell.cell_type == "markdown":
                cell["attachments"], cell["source"] = attachments(cell.get("attachments"), str(cell.source))
            else:
                cell.pop("attachments", None)
            cell["id"] = f"cell-{len(cells)}"  # a student's may be missing or repeated
            if cell.cell_type == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            cells.append(cell)
        except Exception:  # noqa: BLE001 - a student's malformed cell: shown as its text
            cells.append(nbformat.v4.new_raw_cell(str(raw.get("source", ""))))  # type: ignore[no-untyped-call]
    nb.cells = cells
    with _LOCK:
        if not _EXPORTER:
            _EXPORTER.append(HTMLExporter(template_name="lab", sanitize_html=False))  # type: ignore[no-untyped-call]
        try:
            full, _ = _EXPORTER[0].from_notebook_node(nb)
        except Exception:  # noqa: BLE001 - a cell nbconvert cannot render: every cell shown as its text
            nb.cells = [nbformat.v4.new_raw_cell(str(c.get("source", ""))) for c in cells]  # type: ignore[no-untyped-call]
            note = (note + " " if note else "") + "These cells cannot be rendered as saved: their text."
            full, _ = _EXPORTER[0].from_notebook_node(nb)
    head, _, body = full.partition("<body")
    body = body[body.index(">") + 1 :].replace("</body>", "").replace("</html>", "")
    body = sanitize(body)
    styles = "".join(re.findall(r"<style\b.*?</style>", head, flags=re.S))
    top = f'<p class="review-note">{html.escape(note)}</p>' if note else ""
    math = any(c.cell_type == "markdown" and pages.has_math(str(c.source)) for c in cells)
    head_math, tail = (pages.math_head(), _math_tail()) if math else ("", "")
    return Page(
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{math_policy() if math else CSP}">{styles}'
        "<style>body{margin:0.4em 0.8em;font-family:system-ui,sans-serif}"
        f".jp-InputPrompt,.jp-OutputPrompt{{display:none}}.review-note{{color:#555;font-size:13px}}"
        f"{figures.STYLE}</style>{head_math}"
        f"</head><body>{top}{body}{tail}</body></html>\n",
        math,
    )


IMAGE_TYPES = figures.IMAGE_TYPES  # shown as data: images, which run nothing
MAX_ATTACHMENT = 8 << 20  # characters of base64 an attachment may have to be shown
_ATTACHMENT = re.compile(r"attachment:([^\s)\"'<>]+)")


def attachments(raw: object, source: str) -> tuple[dict[str, dict[str, str]], str]:
    """A markdown cell's attachments (a pasted image: Jupyter keeps it in the cell, referred to as
    ``attachment:NAME``) that can be shown: images of a raster type, valid base64, of a bounded
    size; and its source, where a reference to any other now points at nothing (so nbconvert,
    which fails on a missing one, embeds only these, as ``data:`` images)."""
    kept: dict[str, dict[str, str]] = {}
    for name, bundle in raw.items() if isinstance(raw, dict) else ():
        if not isinstance(bundle, dict):
            continue
        for mime in IMAGE_TYPES:
            data = bundle.get(mime)
            data = "".join(data) if isinstance(data, list) else data
            if not isinstance(data, str) or len(data) > MAX_ATTACHMENT:
                continue
            data = "".join(data.split())
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                continue
            kept[str(name)] = {mime: data}
            break
    source = _ATTACHMENT.sub(lambda m: m.group(0) if m.group(1) in kept else "#attachment-not-shown", source)
    return kept, source


@functools.cache
def _math_tail() -> str:
    from grader.outputs import pages

    return pages.math_tail(MATH_SELECTOR)


@functools.cache
def math_policy() -> str:
    """The frame's policy where its markdown has math: the bundled KaTeX's one script, nothing else."""
    from grader.outputs import pages

    script = pages.script_source(pages.katex_script(MATH_SELECTOR))
    return CSP.replace("default-src 'none'; ", f"default-src 'none'; script-src {script}; ", 1)


@functools.lru_cache(maxsize=256)
def _answer_page(
    path: Path, mtime: int, cells: tuple[int, ...], fallback: str, drawn: tuple[str, ...] | None, left_out: int
) -> Page:
    data = notebook_data(path)
    if data is None:
        return render(
            [{"cell_type": "markdown", "source": fallback, "metadata": {}}],
            note="The notebook is not here any more: the answer's text as the scorecard keeps it.",
        )
    raw = data["cells"]
    picked = [raw[i - 1] for i in cells if 0 < i <= len(raw) and isinstance(raw[i - 1], dict)]
    if not picked:
        return render([], note="No cell of this notebook answers the question.")
    return render(picked + figures.drawn_cells(picked, drawn, left_out))


def answer_page(
    path: Path, cells: tuple[int, ...], fallback: str, drawn: tuple[str, ...] | None = None, left_out: int = 0
) -> Page:
    """The student's answer cells, rendered (cached while the file is unchanged), with the figures
    its code drew in the grader's run (None: the run took none)."""
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _answer_page(Path(path), mtime, tuple(cells), fallback, drawn, left_out)


def notebook_page(path: Path, unclaimed: frozenset[int], picked: tuple[int, ...]) -> Page:
    """The whole notebook, each cell under its number, those no question claims and those a
    person picked as the answer marked: where no cell was found for a question."""
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _notebook_page(Path(path), mtime, unclaimed, tuple(picked))


@functools.lru_cache(maxsize=64)
def _notebook_page(path: Path, mtime: int, unclaimed: frozenset[int], picked: tuple[int, ...]) -> Page:
    data = notebook_data(path)
    if data is None:
        return render([], note="The notebook is not here any more, or cannot be read: nothing to show.")
    raw = data["cells"]
    shown: list[dict[str, Any]] = []
    if picked:  # the answer first, then the notebook it was picked from
        shown += [raw[i - 1] for i in picked if 0 < i <= len(raw) and isinstance(raw[i - 1], dict)]
        shown.append({"cell_type": "markdown", "metadata": {}, "source": "<hr>\n\n**The whole notebook**"})
    for n, cell in enumerate(raw, 1):
        marks = ["picked as the answer"] if n in picked else []
        marks += ["not claimed by any question"] if n in unclaimed else []
        label = f"**cell {n}**" + "".join(f" · *{m}*" for m in marks)
        shown.append({"cell_type": "markdown", "metadata": {}, "source": f"<hr>\n\n{label}"})
        shown.append(cell)
    free = ", ".join(str(n) for n in sorted(unclaimed)) or "none"
    note = (
        f"The cells picked as the answer ({', '.join(map(str, picked))}), then the whole notebook."
        if picked
        else "No cell was found for this question: the whole notebook as the student saved it (markdown "
        f"rendered, outputs as saved), each cell under its number. Cells no question claims: {free}. "
        "Tick the cells that answer it below the frame."
    )
    return render(shown, note=note)


def question_cells(data: dict[str, Any], answer_start: int) -> list[dict[str, Any]]:
    """The markdown cells just before an answer (1-based index), back to the heading that opens
    them: the question's text as the notebook gives it."""
    raw = data["cells"]
    found: list[dict[str, Any]] = []
    i = answer_start - 2
    while i >= 0 and len(found) < 4:
        cell = raw[i]
        if (
            not isinstance(cell, dict)
            or cell.get("cell_type") != "markdown"
            or ANSWER_TAG in (cell.get("metadata") or {}).get("tags", [])
        ):
            break
        found.insert(0, cell)
        if _HEADING.search(
            "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) else str(cell.get("source", ""))
        ):
            break
        i -= 1
    return found


def reference_page(solution: Path, answer: tuple[int, ...] | None, drawn: tuple[str, ...] = ()) -> Page:
    """The question's text and the instructor's reference answer, from the solution notebook, with
    the figures the solution's code draws in its own run."""
    try:
        mtime = Path(solution).stat().st_mtime_ns
    except OSError:
        mtime = 0
    return _reference_page(Path(solution), mtime, answer, drawn)


@functools.lru_cache(maxsize=64)
def _reference_page(solution: Path, mtime: int, answer: tuple[int, ...] | None, drawn: tuple[str, ...]) -> Page:
    data = notebook_data(solution)
    if data is None or not answer:
        return render([], note="The solution notebook is not here: no reference answer to show.")
    raw = data["cells"]
    question = [unmarked(c) for c in question_cells(data, answer[0])]
    model = [unmarked(raw[i - 1]) for i in answer if 0 < i <= len(raw) and isinstance(raw[i - 1], dict)]
    heading = {"cell_type": "markdown", "metadata": {}, "source": "---\n**Reference answer**"}
    shown = figures.figure_cell(drawn, "**The reference figure, from the solution's run**") if drawn else []
    return render([*question, heading, *model, *shown])


# The solution's markers, as every authoring tool writes them: a line of its own, or ``# SOLUTION`` after code.
_MARKER_LINE = re.compile(
    r"^[ \t]*(?:#+|<!--)[ \t]*(?:BEGIN|END)[ \t]+(?:SOLUTION|PROMPT)(?:[ \t]+NO[ \t]+PROMPT)?[ \t]*(?:-->)?[ \t]*(?:\n|$)",
    re.M,
)
_MARKER_END = re.compile(r"[ \t]*#[ \t]*SOLUTION[ \t]*$", re.M)


def unmarked(cell: dict[str, Any]) -> dict[str, Any]:
    """A cell of the solution as a reference shows it: the code or text, without the markers that
    tell ``grader assign`` what to blank (``# BEGIN SOLUTION``, ``### END SOLUTION``, ``# SOLUTION``)."""
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return {**cell, "source": _MARKER_END.sub("", _MARKER_LINE.sub("", text))}


def solution_cells(solution: Path) -> list[NbCell]:
    data = notebook_data(solution)
    return cells_of(data) if data is not None else []
