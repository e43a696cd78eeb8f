"""``canvas.csv``: Canvas's gradebook import file, from the roster (``grader.outputs.roster``).

The layout of the file Canvas exports and imports (Gradebook → Import): the columns ``Student,
ID, SIS User ID, SIS Login ID, Section``, then one column per assignment; a second row named
``Points Possible`` holds each assignment's points. Each row of the roster is a row, with the score
of the submission matched to it (``Roster.match``: by declared identity only); a submission still
waiting for a person's grade has its cell left blank (Canvas imports a blank cell as no change), and
so has a student of the roster without a submission, or with a conflict the roster cannot settle.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from grader.files import write_atomic
from grader.judge.scorecard import Scorecard, points_text
from grader.outputs.roster import Matching, Roster, conflict
from grader.outputs.spreadsheet import cell_text
from grader.vocab import QuestionStatus

HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def pending(card: Scorecard) -> bool:
    return any(q.status == QuestionStatus.MANUAL for q in card.questions)


def canvas_csv(
    submissions: Iterable[tuple[str, Scorecard]], roster: Roster, *, column: str, points: float, rounding: int = 2
) -> tuple[str, Matching[str]]:
    """The CSV text, and how the roster placed the submissions (those it does not name, its conflicts)."""
    placed = roster.match(submissions, lambda card: "" if pending(card) else points_text(card.score, rounding))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*HEADER, column])
    w.writerow(["Points Possible", "", "", "", "", points_text(points, rounding)])
    for i, s in enumerate(roster.students):
        w.writerow(
            [cell_text(s.name), s.lms_id, s.sis_user_id, s.sis_login_id, cell_text(s.section), placed.rows.get(i, "")]
        )
    return buf.getvalue(), placed


def write_canvas(
    submissions: Iterable[tuple[str, Scorecard]],
    roster: Roster,
    path: Path,
    *,
    column: str,
    points: float,
    rounding: int = 2,
) -> Path:
    """Write the file; then, where the roster could not place a submission without a guess, raise
    ``RosterConflict`` naming both sides (their cells are left blank: no change in Canvas)."""
    text, placed = canvas_csv(submissions, roster, column=column, points=points, rounding=rounding)
    write_atomic(path, text)
    if placed.conflicts:
        raise conflict(path, placed.conflicts)
    return path
