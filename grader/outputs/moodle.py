"""``moodle.csv``: Moodle's grade import file (Grades → Import → CSV file), from the roster.

Moodle maps one column of the file to a user field (``Email address`` here, or the roster's
``sis_user_id`` as the user's ID number where there is no e-mail) and each other column to a grade
item or to an item's feedback. So the file has the identifier column, the assignment's grade
column, and its feedback column: each question's points and a person's comment, one line each.
A submission still waiting for a person's grade has a blank grade (Moodle skips blank cells). Rows
follow the roster's order, one per student matched to a submission (``Roster.match``).

Submissions from Moodle's own download ("Download all submissions", ``grader.batch.lms``) carry
the participant id: they go back without a roster as the grading worksheet
(``moodle-worksheet.csv``, ``worksheet_csv``) and their HTML feedback as ``moodle-feedback.zip``,
named for "Upload multiple feedback files in a zip" (``feedback_name``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path, PurePosixPath

from grader.files import safe_stem, write_atomic, write_zip_atomic
from grader.judge.scorecard import Scorecard, points_text
from grader.outputs.canvas import pending
from grader.outputs.roster import Matching, Roster, conflict
from grader.outputs.spreadsheet import cell_text
from grader.vocab import QuestionStatus


def feedback(card: Scorecard, rounding: int = 2) -> str:
    lines = []
    for q in card.questions:
        if q.status == QuestionStatus.MANUAL:
            lines.append(f"{q.id}: waiting for a person ({points_text(q.max_score, rounding)} points)")
            continue
        line = f"{q.id}: {points_text(q.score, rounding)}/{points_text(q.max_score, rounding)}"
        if q.person is not None and q.person.comment.strip():
            line += f" ({q.person.comment.strip()})"
        lines.append(line)
    if card.late is not None:
        lines.append(card.late_line(rounding))
    return "\n".join(lines)


def moodle_csv(
    submissions: Iterable[tuple[str, Scorecard]], roster: Roster, *, item: str, rounding: int = 2
) -> tuple[str, Matching[tuple[str, str]]]:
    """The CSV text, and how the roster placed the submissions (those it does not name, its conflicts)."""
    by_email = any(s.email for s in roster.students)
    ident = "Email address" if by_email else "ID number"
    placed = roster.match(
        submissions, lambda card: ("" if pending(card) else points_text(card.score, rounding), feedback(card, rounding))
    )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([ident, item, f"{item} feedback"])
    for i, student in enumerate(roster.students):
        key = student.email if by_email else student.sis_user_id
        if i not in placed.rows or not key:
            continue
        grade, comments = placed.rows[i]
        w.writerow([cell_text(key), grade, cell_text(comments)])
    return buf.getvalue(), placed


def write_moodle(
    submissions: Iterable[tuple[str, Scorecard]], roster: Roster, path: Path, *, item: str, rounding: int = 2
) -> Path:
    """Write the file; then, where the roster could not place a submission without a guess, raise
    ``RosterConflict`` naming both sides (no row is written for them: no change in Moodle)."""
    text, placed = moodle_csv(submissions, roster, item=item, rounding=rounding)
    write_atomic(path, text)
    if placed.conflicts:
        raise conflict(path, placed.conflicts)
    return path


WORKSHEET = ("Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments")


def worksheet_csv(submissions: Iterable[tuple[str, Scorecard]], *, now: datetime, rounding: int = 2) -> str:
    """Moodle's grading worksheet (Assignment → "Upload grading worksheet") for the submissions of a
    Moodle download, by their participant ids: ``Identifier`` is ``Participant 123456``, the columns
    Moodle requires are ``Identifier``, ``Grade`` and ``Last modified (grade)`` (written as now, in
    the worksheet's own format), and ``Feedback comments`` holds each question's points and the
    late policy's line. Other submissions are left out (they have no participant id)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(WORKSHEET)
    stamp = now.strftime("%A, %d %B %Y, %I:%M %p")
    for _, card in submissions:
        if card.origin is None or card.origin.lms != "moodle" or not card.origin.user_id:
            continue
        w.writerow(
            [
                f"Participant {card.origin.user_id}",
                cell_text(card.origin.name),
                "" if pending(card) else points_text(card.score, rounding),
                points_text(card.max_score, rounding),
                stamp,
                cell_text(feedback(card, rounding)),
            ]
        )
    return buf.getvalue()


def feedback_name(card: Scorecard) -> str:
    """A feedback file named as Moodle's "Upload multiple feedback files in a zip" expects: the
    download's ``<full name>_<participant id>_<plugin>`` then ``_`` and the file's name (Moodle reads
    the participant id from the second part)."""
    assert card.origin is not None
    name = PurePosixPath(card.origin.file).name
    if name.startswith(card.origin.prefix):  # a flat download: the prefix is in the file's own name
        name = name[len(card.origin.prefix) :].lstrip("_")
    stem = safe_stem(PurePosixPath(name).stem or "submission")
    return f"{card.origin.prefix}_{stem}-feedback.html"


def write_moodle_feedback(submissions: Iterable[tuple[Scorecard, str]], path: Path) -> Path | None:
    """``moodle-feedback.zip``: each Moodle submission's HTML feedback (``(card, html)``), named by
    ``feedback_name``; None (nothing written) when no submission came from a Moodle download."""
    members = [
        (feedback_name(card), html)
        for card, html in submissions
        if card.origin and card.origin.lms == "moodle" and card.origin.user_id
    ]
    return write_zip_atomic(path, members) if members else None
