"""Renderers: one small module per output format, each over a finished Scorecard.

No renderer reaches into grading logic. Per submission (``OUT/<name>.<ext>``):

    yaml        <name>.yaml              the core scorecard (grader.scorecard)
    json        <name>.json              the same content as JSON
    md          <name>.md                Markdown feedback (what students may see)
    html        <name>.html              the student's notebook with each result next to its cells
    gradescope  <name>.gradescope.json   Gradescope's results.json schema
    classroom   <name>.classroom.json    GitHub Classroom's grading reporter input

Per run: ``junit`` -> ``OUT/junit.xml`` (what pytest's ``--junitxml`` writes), ``gradebook`` -> ``OUT/gradebook.csv``,
``report`` -> ``OUT/report.html`` (the class report, grader.report).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

from grader.course.config import FORMATS, Assignment, Course
from grader.errors import UsageError
from grader.files import write_atomic
from grader.judge.scorecard import Scorecard, to_yaml
from grader.outputs.gradebook import write_gradebook

__all__ = ["FORMATS", "Submission", "parse_formats", "write_gradebook", "write_outputs", "write_run",
           "write_submission"]

PER_SUBMISSION = {
    "yaml": ".yaml",
    "json": ".json",
    "md": ".md",
    "html": ".html",
    "gradescope": ".gradescope.json",
    "classroom": ".classroom.json",
}
PER_RUN = {"junit": "junit.xml", "gradebook": "gradebook.csv", "report": "report.html"}

Submission = tuple[Path, str, Scorecard]  # (notebook path, output name, scorecard)


def parse_formats(text: str) -> tuple[str, ...]:
    """``yaml,json,md`` -> a tuple of known formats, or a UsageError naming the unknown one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in FORMATS:
            raise UsageError(f"Unknown format {n!r} in --formats; known: {', '.join(FORMATS)}.")
    if not names:
        raise UsageError(f"--formats lists no format; known: {', '.join(FORMATS)}.")
    return tuple(dict.fromkeys(names))


def render_one(fmt: str, path: Path, card: Scorecard, course: Course, assignment: Assignment | None,
               now: datetime | None = None) -> str:
    """The text of one per-submission format."""
    settings = course.scorecard
    if fmt == "yaml":
        return to_yaml(card, settings.rounding)
    if fmt == "json":
        from grader.outputs.json import to_json

        return to_json(card, settings.rounding)
    if fmt == "gradescope":
        from grader.outputs import gradescope

        return gradescope.to_json(gradescope.results(card, assignment, settings))
    from grader.outputs.view import student_view

    view = student_view(card, assignment, settings, now)
    if fmt == "md":
        from grader.outputs.markdown import to_markdown

        return to_markdown(view)
    if fmt == "html":
        from grader.outputs.html import to_html

        return to_html(view, assignment, path)
    if fmt == "classroom":
        from grader.outputs import classroom

        return classroom.to_json(classroom.result(card, view))
    raise UsageError(f"Unknown format {fmt!r}.")


def write_submission(path: Path, name: str, card: Scorecard, *, course: Course, assignment: Assignment,
                     out: Path, formats: tuple[str, ...], now: datetime | None = None) -> list[Path]:
    """Write one submission's files (``OUT/<name>.<ext>``) right after it is graded."""
    return [
        write_atomic(Path(out) / f"{name}{PER_SUBMISSION[fmt]}", render_one(fmt, path, card, course, assignment, now))
        for fmt in formats if fmt in PER_SUBMISSION
    ]


def write_run(submissions: list[Submission], *, course: Course, assignment: Assignment, out: Path,
              formats: tuple[str, ...], executor_name: str = "subprocess") -> list[Path]:
    """Write the files about the whole run: junit.xml, gradebook.csv, report.html."""
    cards = [card for _, _, card in submissions]
    per_run: dict[str, Callable[[Path], Path]] = {
        "gradebook": lambda p: write_gradebook(cards, p, rounding=course.scorecard.rounding),
        "junit": lambda p: _junit(submissions, course, assignment, p, executor_name),
        "report": lambda p: _report(cards, course, p),
    }
    return [per_run[fmt](Path(out) / PER_RUN[fmt]) for fmt in formats if fmt in PER_RUN and submissions]


def write_outputs(submissions: list[Submission], *, course: Course, assignment: Assignment, out: Path,
                  formats: tuple[str, ...], now: datetime | None = None,
                  executor_name: str = "subprocess") -> list[Path]:
    """Every asked-for format under ``out``; returns the files written."""
    written: list[Path] = []
    for path, name, card in submissions:
        written += write_submission(path, name, card, course=course, assignment=assignment, out=out,
                                    formats=formats, now=now)
    return written + write_run(submissions, course=course, assignment=assignment, out=out, formats=formats,
                               executor_name=executor_name)


def _junit(submissions: list[Submission], course: Course, assignment: Assignment, path: Path,
           executor_name: str) -> Path:
    from grader.outputs.junit import write_junit

    return write_junit([(p, c) for p, _, c in submissions], course, assignment, path, executor_name=executor_name)


def _report(cards: list[Scorecard], course: Course, path: Path) -> Path:
    from grader.outputs.report import write_report

    return write_report(cards, path, course=course)
