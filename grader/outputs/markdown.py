"""Markdown feedback for one submission: a summary table, then each question's feedback.

Also the job summary on GitHub Actions and the ``output`` of Gradescope tests.
"""

from __future__ import annotations

import re

from grader.files import printable
from grader.outputs.view import SUBMISSION_WORDS, ShownQuestion, View, question_label

MARKS = {
    "passed": "✅",
    "partial": "🟡",
    "failed": "❌",
    "error": "❌",
    "unanswered": "⬜",
    "withheld": "🔒",
    "manual": "⏳",
    "graded": "✍",
}


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


_MARKUP = re.compile(r"([\\`*\[\]<>|])")


def inline(text: str) -> str:
    """A name or reason a student chose, as plain text in Markdown: escapes (``files.printable``)
    for control characters, and a backslash before every character Markdown would read as markup
    (a link, an image, code, raw HTML, a table cell), so a file name cannot add a row, a link or a heading."""
    return _MARKUP.sub(r"\\\1", printable(text))


def question_points(view: View, q: ShownQuestion) -> str:
    if q.withheld:
        return f"–/{view.points(q.max_score)}"
    return f"{view.points(q.score or 0.0)}/{view.points(q.max_score)}"


def summary_lines(view: View) -> list[str]:
    who = f"{inline(view.who)} · " if view.who else ""
    lines = [
        f"**{who}{inline(view.submission)}** · {SUBMISSION_WORDS.get(view.status, view.status)} · "
        f"score **{view.score_line}**",
    ]
    if view.reason:
        lines += ["", f"> {inline(view.reason)}"]
    if view.late:
        lines += ["", f"Late: {inline(view.late)}"]
    lines += ["", "| Question | Result | Points |", "|---|---|---|"]
    for q in view.questions:
        lines.append(
            f"| {cell(question_label(q.id, q.title))} | {MARKS.get(q.status, '')} "
            f"{q.status_text} | {question_points(view, q)} |"
        )
    return lines


def question_lines(view: View, q: ShownQuestion) -> list[str]:
    return [f"- {line}" for line in q.feedback]


def to_markdown(view: View) -> str:
    lines = [f"# {view.assignment}: {view.title}", ""]
    lines += summary_lines(view)
    for q in view.questions:
        lines += ["", f"## {question_label(q.id, q.title)} — {q.status_text}, {question_points(view, q)} points", ""]
        lines += question_lines(view, q)
    if view.errors:
        lines += ["", "## Errors in the notebook", ""]
        lines += [f"- {printable(e)}" for e in view.errors]
    return "\n".join(lines) + "\n"
