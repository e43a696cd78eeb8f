"""Every output format, registered once under its name (``grader.vocab.Format``).

A format is either written per submission (``OUT/<name><suffix>``, right after it is graded) or
once per run (``OUT/<filename>``, about the whole class). Each entry says which, with a line of
help for ``--formats``, and the function that renders it; the renderers themselves live one per
module beside this one and see only finished scorecards. Adding a format: a member of
``Format``, a renderer module, and one entry here (``tests/test_render.py`` checks that every
``Format`` has exactly one entry).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from grader.course.model import Assignment, Course
from grader.judge.scorecard import Scorecard
from grader.vocab import Format

if TYPE_CHECKING:
    from grader.outputs import classroom50, roster

Submission = tuple[Path, str, Scorecard]  # (notebook path, output name, scorecard)


@dataclass(frozen=True)
class Output:
    """What renderers may know besides the scorecards: the course settings, and nothing of grading."""

    course: Course
    assignment: Assignment
    now: datetime | None = None
    executor_name: str = "subprocess"
    roster: Path | None = None  # which student each submission is (``grader.outputs.roster``): for an LMS


@dataclass(frozen=True)
class PerSubmission:
    format: Format
    suffix: str
    help: str
    render: Callable[[Path, Scorecard, Output], str]  # (notebook path, scorecard, settings) -> text
    # Files written beside the main one, ``<name><suffix>`` each (Classroom 50's release body).
    companions: tuple[tuple[str, Callable[[Path, Scorecard, Output], str]], ...] = ()


@dataclass(frozen=True)
class PerRun:
    format: Format
    filename: str
    help: str
    write: Callable[[Sequence[Submission], Output, Path], Path]  # writes the file; returns its path


def _yaml(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs.yaml import to_yaml

    return to_yaml(card, out.course.scorecard.rounding)


def _json(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs.json import to_json

    return to_json(card)


def _md(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs.markdown import to_markdown
    from grader.outputs.view import student_view

    return to_markdown(student_view(card, out.assignment, out.course.scorecard, out.now))


def _html(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs.html import to_html
    from grader.outputs.view import student_view

    return to_html(student_view(card, out.assignment, out.course.scorecard, out.now), out.assignment, path)


def _gradescope(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs import gradescope

    return gradescope.to_json(gradescope.results(card, out.assignment, out.course.scorecard))


def _classroom(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs import classroom
    from grader.outputs.view import student_view

    return classroom.to_json(classroom.result(card, student_view(card, out.assignment, out.course.scorecard, out.now)))


def _classroom50_identity(path: Path, out: Output) -> classroom50.Identity:
    import os

    from grader.outputs import classroom50

    return classroom50.Identity.from_env(
        os.environ, classroom=out.course.name, assignment=out.assignment.name, owner=path.stem, submitted=out.now
    )


def _classroom50(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs import classroom50
    from grader.outputs.view import student_view

    view = student_view(card, out.assignment, out.course.scorecard, out.now)
    return classroom50.to_json(classroom50.result(card, view, _classroom50_identity(path, out), now=out.now))


def _classroom50_body(path: Path, card: Scorecard, out: Output) -> str:
    from grader.outputs import classroom50
    from grader.outputs.view import student_view

    view = student_view(card, out.assignment, out.course.scorecard, out.now)
    return classroom50.release_body(view, classroom50.result(card, view, _classroom50_identity(path, out), now=out.now))


# A batch's submissions may be a ``grader.batch.Graded``, whose cards are read back one at a time:
# each writer goes through them in order and keeps what it writes, not the cards.


def _junit(submissions: Sequence[Submission], out: Output, path: Path) -> Path:
    from grader.outputs.junit import write_junit

    return write_junit(
        ((p, c) for p, _, c in submissions), out.course, out.assignment, path, executor_name=out.executor_name
    )


def _gradebook(submissions: Sequence[Submission], out: Output, path: Path) -> Path:
    from grader.outputs.gradebook import write_gradebook

    return write_gradebook((c for _, _, c in submissions), path, rounding=out.course.scorecard.rounding)


def _report(submissions: Sequence[Submission], out: Output, path: Path) -> Path:
    from grader.outputs.report import row_from_card, write_report

    return write_report([row_from_card(c) for _, _, c in submissions], path, course=out.course)


def roster_of(out: Output, fmt: str) -> roster.Roster:
    from grader.errors import UsageError
    from grader.outputs import roster

    if out.roster is None:
        raise UsageError(
            f"--formats {fmt} needs a roster that says which student each submission is: "
            "--roster FILE (a CSV file; see grader.outputs.roster for its columns)."
        )
    return roster.load(out.roster)


def _canvas(submissions: Sequence[Submission], out: Output, path: Path) -> Path:
    from grader.files import write_atomic
    from grader.outputs import canvas

    canvas.write_canvas_feedback(
        ((c, _html(p, c, out)) for p, _, c in submissions if c.origin is not None),
        path.with_name("canvas-feedback.zip"),
    )
    if out.roster is None and canvas.from_download(c for _, _, c in submissions):
        text = canvas.canvas_csv_from_download(
            ((n, c) for _, n, c in submissions),
            column=out.assignment.title or out.assignment.name,
            points=out.assignment.max_score,
            rounding=out.course.scorecard.rounding,
        )
        return write_atomic(path, text)
    return canvas.write_canvas(
        ((n, c) for _, n, c in submissions),
        roster_of(out, "canvas"),
        path,
        column=out.assignment.title or out.assignment.name,
        points=out.assignment.max_score,
        rounding=out.course.scorecard.rounding,
    )


def _moodle(submissions: Sequence[Submission], out: Output, path: Path) -> Path:
    from grader.files import write_atomic
    from grader.outputs import moodle

    written = moodle.write_moodle_feedback(
        ((c, _html(p, c, out)) for p, _, c in submissions if c.origin is not None),
        path.with_name("moodle-feedback.zip"),
    )
    if written is not None:
        worksheet = moodle.worksheet_csv(
            ((n, c) for _, n, c in submissions), now=out.now or datetime.now(), rounding=out.course.scorecard.rounding
        )
        written = write_atomic(path.with_name("moodle-worksheet.csv"), worksheet)
        if out.roster is None:
            return written
    return moodle.write_moodle(
        ((n, c) for _, n, c in submissions),
        roster_of(out, "moodle"),
        path,
        item=out.assignment.title or out.assignment.name,
        rounding=out.course.scorecard.rounding,
    )


FORMATS: dict[Format, PerSubmission | PerRun] = {
    f.format: f
    for f in (
        PerSubmission(Format.YAML, ".yaml", "the core scorecard", _yaml),
        PerSubmission(
            Format.JSON, ".json", "the scorecard's document: every record, for tools and grader report", _json
        ),
        PerSubmission(Format.MD, ".md", "Markdown feedback (what students may see)", _md),
        PerSubmission(Format.HTML, ".html", "the student's notebook with each result next to its cells", _html),
        PerSubmission(Format.GRADESCOPE, ".gradescope.json", "Gradescope's results.json", _gradescope),
        PerSubmission(
            Format.CLASSROOM, ".classroom.json", "GitHub Classroom's grading reporter input (legacy)", _classroom
        ),
        PerSubmission(
            Format.CLASSROOM50,
            ".result.json",
            "Classroom 50's result.json (and .release-body.md)",
            _classroom50,
            companions=((".release-body.md", _classroom50_body),),
        ),
        PerRun(Format.JUNIT, "junit.xml", "JUnit XML, one test case per question", _junit),
        PerRun(Format.GRADEBOOK, "gradebook.csv", "one row per submission, for any gradebook", _gradebook),
        PerRun(Format.REPORT, "report.html", "the class report, with plots", _report),
        PerRun(
            Format.CANVAS,
            "canvas.csv",
            "Canvas's gradebook import CSV (needs --roster, unless graded from Canvas's download), "
            "and canvas-feedback.zip for Re-Upload Submissions",
            _canvas,
        ),
        PerRun(
            Format.MOODLE,
            "moodle.csv",
            "Moodle's grade import CSV (needs --roster); from Moodle's download: moodle-worksheet.csv "
            "and moodle-feedback.zip",
            _moodle,
        ),
    )
}
