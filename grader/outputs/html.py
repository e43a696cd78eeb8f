"""HTML feedback: the student's own notebook, rendered with nbconvert, with each question's result
placed right after the cell that answers it.

Answers are found by what the cells compute (``grader.notebook.analyse``), never by cell ids or
metadata: a question sits after the last cell that binds the variable its check names (before the
check's ``before:`` point, if it has one), or for an expression, after the last of the cells that
bind the names it reads. Questions whose names no cell binds are listed at the end.

The notebook is the student's, so its markdown and outputs are untrusted HTML: the rendered body
is cleaned with nh3 (``sanitize``: no scripts, no event handlers, no external loads), and the page carries a
Content-Security-Policy that forbids remote resources and every script but one: when the notebook's
markdown (or a question's title) has math, the bundled KaTeX renders it, from the page itself
(grader.outputs.pages). Status marks are inline SVG, the feedback's `code` and *emphasis* marks
HTML, made after escaping.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.course.model import Assignment
from grader.notebook import CellInfo, analyse, before_point
from grader.outputs import figures, pages
from grader.outputs.markdown import question_points
from grader.outputs.view import SUBMISSION_WORDS, ShownQuestion, View, label_parts

CSP = pages.csp()  # a page without math: no script at all
# Where math is rendered: the notebook's markdown cells and the questions' titles, never code or outputs.
MATH_SELECTOR = ".jp-RenderedMarkdown, .grader-title"

TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "dd",
    "del",
    "details",
    "div",
    "dl",
    "dt",
    "em",
    "figcaption",
    "figure",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "ins",
    "kbd",
    "li",
    "main",
    "mark",
    "ol",
    "p",
    "pre",
    "q",
    "s",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
    "var",
    "svg",
    "path",
    "g",
}
ATTRIBUTES = {
    "*": ["class", "id", "title", "data-mime-type", "tabindex", "align", "colspan", "rowspan"],
    "a": ["href"],
    "img": ["src", "alt", "width", "height"],
}

URL_SCHEMES = {"http", "https", "mailto", "data"}


def sanitize(fragment: str) -> str:
    """Untrusted HTML (a student's rendered cells) with only ``TAGS`` and ``ATTRIBUTES`` left: nh3
    (the Rust ammonia sanitizer) drops every other tag, keeping its text, and drops a script's or a
    style's text with it; links keep only ``URL_SCHEMES``, and comments go."""
    import nh3

    return str(
        nh3.clean(
            fragment,
            tags=TAGS,
            attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
            url_schemes=URL_SCHEMES,
            strip_comments=True,
        )
    )


STYLE = (
    """
<style>
.grader-box { border: 2px solid #888; border-radius: 6px; margin: 0.6em 0 1.2em 0; padding: 0.5em 0.9em;
  font-family: system-ui, sans-serif; font-size: 14px; background: #fafafa; }
.grader-box h3 { margin: 0.1em 0 0.4em 0; font-size: 15px; }
.grader-box ul { margin: 0.2em 0 0.2em 1.2em; padding: 0; }
.grader-passed { border-color: #2e7d32; background: #f1f8f1; }
.grader-partial { border-color: #b58900; background: #fffbea; }
.grader-failed, .grader-error { border-color: #c62828; background: #fdf1f1; }
.grader-unanswered, .grader-withheld { border-color: #777; background: #f5f5f5; }
.grader-manual { border-color: #1565c0; background: #f0f5fc; }
.grader-graded { border-color: #00838f; background: #eef8f8; }
.grader-summary table { border-collapse: collapse; margin-top: 0.4em; }
.grader-summary td, .grader-summary th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
.grader-box code { background: #eceff1; border-radius: 3px; padding: 0 3px; font-size: 13px; }
.grader-mark { vertical-align: -0.125em; margin-right: 0.3em; }
.jp-OutputArea-output pre { max-height: 36em; overflow-y: auto; }  /* a long output scrolls, as in Jupyter */
</style>
"""
).replace("</style>", figures.STYLE + "\n</style>")


# --------------------------------------------------------------------------------------------
# Where each question is answered


def anchors(assignment: Assignment, infos: list[CellInfo]) -> dict[str, int]:
    """Question id -> position (among code cells, 0-based) of the cell that answers it."""
    out: dict[str, int] = {}
    for q in assignment.questions:
        best: int | None = None
        for check in q.checks:
            point = before_point(infos, check.before, check.names, assignment.given) if check.before else None
            limit = len(infos) if point is None else point
            for name in check.names:
                binders = [pos for pos, info in enumerate(infos[:limit]) if name in info.binds]
                if binders and (best is None or binders[-1] > best):
                    best = binders[-1]
        if best is not None:
            out[q.id] = best
    return out


# --------------------------------------------------------------------------------------------
# Fragments (escaped text only; the feedback's `code` and *emphasis* marks become <code> and <em>)


def text_html(text: str) -> str:
    return pages.rich_text(text)


def label_html(qid: str, title: str) -> str:
    """A question's id and title as ``question_label`` gives them, escaped."""
    shown_id, shown_title = label_parts(qid, title)
    parts = [html.escape(shown_id)] if shown_id else []
    return ": ".join(parts + ([title_html(shown_title)] if shown_title else []))


def title_html(title: str) -> str:
    """A question's title, where math is rendered (titles are the instructor's, escaped all the same)."""
    return f'<span class="grader-title">{html.escape(title)}</span>'


def question_box(view: View, q: ShownQuestion) -> str:
    items = "".join(f"<li>{text_html(line)}</li>" for line in q.feedback)
    head = (
        f"{pages.status_mark(q.status)}Question {label_html(q.id, q.title)} — "
        f"{html.escape(q.status_text)}, {question_points(view, q)} points"
    )
    return (
        f'<div class="grader-box grader-{html.escape(q.status)}" id="question-{html.escape(q.id)}">'
        f"<h3>{head}</h3><ul>{items}</ul></div>"
    )


def summary_box(view: View) -> str:
    who = f"{html.escape(view.who)} · " if view.who else ""
    rows = "".join(
        f'<tr><td><a href="#question-{html.escape(q.id)}">{label_html(q.id, q.title)}</a></td>'
        f"<td>{pages.status_mark(q.status)}{html.escape(q.status_text)}</td>"
        f"<td>{question_points(view, q)}</td></tr>"
        for q in view.questions
    )
    reason = f"<p>{text_html(view.reason)}</p>" if view.reason else ""
    if view.late:
        reason += f"<p>Late: {text_html(view.late)}</p>"
    errors = ""
    if view.errors:
        errors = (
            "<p>Errors in the notebook:</p><ul>" + "".join(f"<li>{text_html(e)}</li>" for e in view.errors) + "</ul>"
        )
    return (
        f'<div class="grader-box grader-summary"><h3>{html.escape(view.assignment)}: {html.escape(view.title)}</h3>'
        f"<p><b>{who}{html.escape(view.submission)}</b> · {SUBMISSION_WORDS.get(view.status, view.status)} · "
        f"score <b>{html.escape(view.score_line)}</b></p>{reason}"
        f"<table><tr><th>Question</th><th>Result</th><th>Points</th></tr>{rows}</table>{errors}</div>"
    )


def page(view: View, body: str) -> str:
    """A standalone page for a submission that cannot be rendered as a notebook."""
    title = html.escape(f"{view.assignment}: {view.submission}")
    head, tail, csp = _math(any(pages.has_math(q.title) for q in view.questions))
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>{title}</title>{STYLE}{head}</head>'
        f"<body>{body}{tail}</body></html>\n"
    )


def _math(wanted: bool) -> tuple[str, str, str]:
    """(for the head, for the end of the body, the CSP) of a page with math, or without."""
    if not wanted:
        return "", "", CSP
    return (pages.math_head(), pages.math_tail(MATH_SELECTOR), pages.csp(script=pages.katex_script(MATH_SELECTOR)))


# --------------------------------------------------------------------------------------------


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for ``re.sub`` that puts ``text`` in as it is (no backslash escapes)."""
    return lambda _m: text


def to_html(view: View, assignment: Assignment | None, notebook_path: Path) -> str:
    """The feedback page; falls back to the results alone when the file is not a notebook."""
    boxes = {q.id: question_box(view, q) for q in view.questions}
    try:
        return _notebook_page(view, assignment, Path(notebook_path), boxes)
    except Exception:  # noqa: BLE001 - nbconvert cannot render it: the results alone say the same thing
        return page(view, summary_box(view) + "".join(boxes.values()))


def _notebook_page(view: View, assignment: Assignment | None, path: Path, boxes: dict[str, str]) -> str:
    if view.status == "invalid_notebook":
        raise ValueError("not a notebook")
    import nbformat
    from nbconvert import HTMLExporter

    from grader.notebook import read

    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    code_cells = read(path)
    where = anchors(assignment, analyse(code_cells)) if assignment is not None else {}
    token = "GRADERMARK" + secrets.token_hex(8)
    marker: dict[str, str] = {}

    def mark(key: str) -> nbformat.NotebookNode:
        marker[key] = f"{token}{len(marker)}X"
        cell: nbformat.NotebookNode = nbformat.v4.new_markdown_cell(marker[key])  # type: ignore[no-untyped-call]  # nbformat has no annotations
        return cell

    after: dict[int, list[str]] = {}
    for qid in boxes:
        if qid in where:
            after.setdefault(where[qid], []).append(qid)
    # A question graded by a person sits after the cells that answer it (markdown ones too).
    after_cell: dict[int, list[str]] = {}
    drawn: dict[int, list[dict[str, Any]]] = {}  # a cell number -> the figure cells shown after it
    from grader.judge.manual import given_cells, manual_questions

    if assignment is not None:
        from grader.notebook.answers import cells_of, locate

        saved = cells_of(nb)
        for qid, found in locate(saved, given_cells(assignment), manual_questions(assignment)).items():
            if qid in boxes:
                after_cell.setdefault(found.cells[-1], []).append(qid)
                where[qid] = -1
                shown = next((q for q in view.questions if q.id == qid), None)
                if shown is not None and not shown.withheld:  # what its code drew in the grader's run
                    picked = [dict(nb.cells[i - 1]) for i in found.cells if 0 < i <= len(nb.cells)]
                    drawn[found.cells[-1]] = figures.drawn_cells(picked, shown.figures, shown.figures_left_out)
    cells = [mark("summary")]
    pos = -1
    for number, cell in enumerate(nb.cells, 1):
        if cell.get("cell_type") == "code":
            # Numbered as every message numbers cells (all cells, from the top), saved outputs or not.
            cell.execution_count = number
            for output in cell.get("outputs", []):
                if "execution_count" in output:
                    output.execution_count = number
        cells.append(cell)
        cells.extend(
            nbformat.from_dict({**c, "id": f"grader-figure-{number}-{k}"})  # type: ignore[no-untyped-call]  # nbformat has no annotations
            for k, c in enumerate(drawn.get(number, []))
        )
        for qid in after_cell.get(number, []):
            cells.append(mark(qid))
        if cell.get("cell_type") == "code":
            pos += 1
            for qid in after.get(pos, []):
                cells.append(mark(qid))
    by_person = {qid for qid, _ in manual_questions(assignment)} if assignment is not None else set()
    missing = [qid for qid in boxes if qid not in where and qid not in by_person]
    by_reading = [qid for qid in boxes if qid not in where and qid in by_person]  # a person reads it all
    if missing:
        cells.append(mark("missing"))
    if by_reading:
        cells.append(mark("read"))
    nb.cells = cells
    exporter = HTMLExporter(template_name="lab", sanitize_html=False)  # type: ignore[no-untyped-call]  # nbconvert has no annotations
    full, _ = exporter.from_notebook_node(nb)
    head, sep, body = full.partition("<body")
    if not sep:
        raise ValueError("nbconvert produced no body")
    open_end = body.index(">") + 1
    body_tag, inner = body[:open_end], body[open_end:]
    inner = inner.replace("</body>", "").replace("</html>", "")
    inner = sanitize(inner)
    fragments = dict(boxes)
    fragments["summary"] = summary_box(view)
    if missing:
        fragments["missing"] = (
            '<div class="grader-box grader-summary"><h3>Questions whose answers were not found in the notebook</h3>'
            "<p>No cell computes the names these questions check; they are listed here instead.</p></div>"
            + "".join(boxes[q] for q in missing)
        )
    if by_reading:
        fragments["read"] = (
            '<div class="grader-box grader-summary"><h3>Questions a person grades from your whole notebook</h3>'
            "<p>Where you answered these is for the person grading to see.</p></div>"
            + "".join(boxes[q] for q in by_reading)
        )
    for key, mk in marker.items():
        inner = re.sub(rf"<p>\s*{mk}\s*</p>|{mk}", _literal(fragments[key]), inner, count=1)
    inner = re.sub(r"\b(In|Out)(?:&nbsp;|\s)*\[(\d+)\]:", r"cell&nbsp;\2", inner)  # "cell 9", not "In [9]:"
    head = re.sub(r"<script\b.*?</script>", "", head, flags=re.S)
    math = any(pages.has_math(c.get("source", "")) for c in nb.cells if c.get("cell_type") == "markdown")
    math_head, math_tail, csp = _math(math or any(pages.has_math(q.title) for q in view.questions))
    head = head.replace("<head>", f'<head>\n<meta http-equiv="Content-Security-Policy" content="{csp}">', 1)
    head = head.replace("</head>", STYLE + math_head + "</head>", 1)
    return f"{head}<body{body_tag}{inner}{math_tail}</body>\n</html>\n"
