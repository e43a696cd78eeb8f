"""``canvas.csv``: Canvas's gradebook import file, from the roster (``grader.outputs.roster``).

The layout of the file Canvas exports and imports (Gradebook → Import): the columns ``Student,
ID, SIS User ID, SIS Login ID, Section``, then one column per assignment; a second row named
``Points Possible`` holds each assignment's points. Each row of the roster is a row, with the score
of the submission matched to it (``Roster.match``: by declared identity only); a submission still
waiting for a person's grade has its cell left blank (Canvas imports a blank cell as no change), and
so has a student of the roster without a submission, or with a conflict the roster cannot settle.

Submissions from Canvas's own download ("Download Submissions", ``grader.batch.lms``) carry
Canvas's user id: without a roster, each is a row by that id (``canvas_csv_from_download``). Their
feedback goes back as ``canvas-feedback.zip``, one HTML file per student named by the download's
scheme, for the assignment's "Re-Upload Submissions" (each file becomes a comment on that
student's submission).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from grader.files import safe_stem, write_atomic, write_zip_atomic
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


def from_download(cards: Iterable[Scorecard]) -> bool:
    """Whether every card came from a Canvas download (its ids then place it without a roster)."""
    cards = list(cards)
    return bool(cards) and all(c.origin is not None and c.origin.lms == "canvas" for c in cards)


def canvas_csv_from_download(
    submissions: Iterable[tuple[str, Scorecard]], *, column: str, points: float, rounding: int = 2
) -> str:
    """The gradebook import file from the download's own ids: ``ID`` is Canvas's user id (what Canvas
    matches rows by), ``Student`` the download's name of the student; no roster needed."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*HEADER, column])
    w.writerow(["Points Possible", "", "", "", "", points_text(points, rounding)])
    for _, card in submissions:
        if card.origin is None or not card.origin.user_id:
            continue  # a file that follows no scheme: no student is guessed for it
        score = "" if pending(card) else points_text(card.score, rounding)
        w.writerow([cell_text(card.origin.name), card.origin.user_id, "", "", "", score])
    return buf.getvalue()


def feedback_name(card: Scorecard) -> str:
    """A feedback file named by the download's scheme: Canvas's "Re-Upload Submissions" reads the
    user id and the id of the file commented on from the first two all-digit parts of the name."""
    assert card.origin is not None
    stem = safe_stem(PurePosixPath(card.origin.file[len(card.origin.prefix) :]).stem or "submission")
    return f"{card.origin.prefix}{stem}-feedback.html"


def write_canvas_feedback(submissions: Iterable[tuple[Scorecard, str]], path: Path) -> Path | None:
    """``canvas-feedback.zip``: each Canvas submission's HTML feedback (``(card, html)``), named by
    ``feedback_name``; None (nothing written) when no submission came from a Canvas download."""
    members = [
        (feedback_name(card), html)
        for card, html in submissions
        if card.origin and card.origin.lms == "canvas" and card.origin.user_id
    ]
    return write_zip_atomic(path, members) if members else None
