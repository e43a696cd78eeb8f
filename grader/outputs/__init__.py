"""Outputs: one small renderer per format, each over finished Scorecards (``formats.FORMATS``).

No renderer reaches into grading logic. Per submission, ``OUT/<name><suffix>``; per run,
``OUT/<filename>``:

    yaml        <name>.yaml              the core scorecard (grader.outputs.yaml)
    json        <name>.json              the scorecard's document, every record (grader.judge.document)
    md          <name>.md                Markdown feedback (what students may see)
    html        <name>.html              the student's notebook with each result next to its cells
    gradescope  <name>.gradescope.json   Gradescope's results.json schema
    classroom50 <name>.result.json       Classroom 50's result.json, with <name>.release-body.md
    classroom   <name>.classroom.json    GitHub Classroom's grading reporter input (legacy)
    junit       junit.xml                one test case per (submission, question), as pytest's --junitxml
    gradebook   gradebook.csv            one row per submission
    report      report.html              the class report (grader.outputs.report)
    canvas      canvas.csv               Canvas's gradebook import, from a roster (grader.outputs.canvas)
    moodle      moodle.csv               Moodle's grade import, with feedback, from a roster
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from grader.course.model import Assignment, Course
from grader.errors import RosterConflict, UsageError
from grader.files import write_atomic
from grader.judge.scorecard import Scorecard
from grader.outputs.formats import FORMATS, Output, PerRun, PerSubmission, Submission
from grader.vocab import Format

__all__ = ["FORMATS", "Submission", "parse_formats", "render_one", "write_outputs", "write_run", "write_submission"]


def parse_formats(text: str) -> tuple[Format, ...]:
    """``yaml,json,md`` -> a tuple of known formats, or a UsageError naming the unknown one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in FORMATS:
            raise UsageError(f"Unknown format {n!r} in --formats; known: {', '.join(FORMATS)}.")
    if not names:
        raise UsageError(f"--formats lists no format; known: {', '.join(FORMATS)}.")
    return tuple(Format(n) for n in dict.fromkeys(names))


def render_one(
    fmt: str, path: Path, card: Scorecard, course: Course, assignment: Assignment, now: datetime | None = None
) -> str:
    """The text of one per-submission format."""
    spec = FORMATS.get(Format(fmt)) if fmt in FORMATS else None
    if not isinstance(spec, PerSubmission):
        raise UsageError(f"{fmt!r} is not a per-submission format.")
    return spec.render(path, card, Output(course, assignment, now))


def write_submission(
    path: Path,
    name: str,
    card: Scorecard,
    *,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: tuple[str, ...],
    now: datetime | None = None,
) -> list[Path]:
    """Write one submission's files (``OUT/<name><suffix>``) right after it is graded."""
    settings = Output(course, assignment, now)
    written = []
    for fmt in formats:
        spec = FORMATS[Format(fmt)]
        if isinstance(spec, PerSubmission):
            written.append(write_atomic(Path(out) / f"{name}{spec.suffix}", spec.render(path, card, settings)))
            for suffix, render in spec.companions:
                written.append(write_atomic(Path(out) / f"{name}{suffix}", render(path, card, settings)))
    return written


def write_run(
    submissions: Sequence[Submission],
    *,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: tuple[str, ...],
    executor_name: str = "subprocess",
    roster: Path | None = None,
) -> list[Path]:
    """Write the files about the whole run (``junit.xml``, ``gradebook.csv``, ``report.html``, an LMS's).
    A roster that cannot place some submissions without a guess (``RosterConflict``) leaves them out
    of the LMS's file; every file is written, then the conflicts are raised together."""
    if not submissions:
        return []
    settings = Output(course, assignment, executor_name=executor_name, roster=roster)
    written = []
    conflicts: list[str] = []
    for fmt in formats:
        spec = FORMATS[Format(fmt)]
        if isinstance(spec, PerRun):
            path = Path(out) / spec.filename
            try:
                written.append(spec.write(submissions, settings, path))
            except RosterConflict as exc:
                written.append(path)
                conflicts.append(str(exc))
    if conflicts:
        raise RosterConflict("\n".join(conflicts))
    return written


def write_outputs(
    submissions: list[Submission],
    *,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: tuple[str, ...],
    now: datetime | None = None,
    executor_name: str = "subprocess",
    roster: Path | None = None,
) -> list[Path]:
    """Every asked-for format under ``out``; returns the files written."""
    written: list[Path] = []
    for path, name, card in submissions:
        written += write_submission(
            path, name, card, course=course, assignment=assignment, out=out, formats=formats, now=now
        )
    return written + write_run(
        submissions,
        course=course,
        assignment=assignment,
        out=out,
        formats=formats,
        executor_name=executor_name,
        roster=roster,
    )
