"""``moodle.csv``: Moodle's grade import file (Grades → Import → CSV file), from the roster.

Moodle maps one column of the file to a user field (``Email address`` here, or the roster's
``sis_user_id`` as the user's ID number where there is no e-mail) and each other column to a grade
item or to an item's feedback. So the file has the identifier column, the assignment's grade
column, and its feedback column: each question's points and a person's comment, one line each.
A submission still waiting for a person's grade has a blank grade (Moodle skips blank cells). Rows
follow the roster's order, one per student matched to a submission (``Roster.match``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from grader.files import write_atomic
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
