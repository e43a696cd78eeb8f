"""``gradebook.csv``: one row per submission, one column per question, for any LMS import.

Columns: ``student, submission, status, score, max_score, percent``, then one column per
question (its score, or ``pending`` while a person has not graded it), then ``reason`` (why a notebook was not fully graded) and ``sha256``,
and ``late`` (the late policy's line) when a late policy applied to any.
Text cells that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``) are quoted
with a leading apostrophe, since student ids and file names come from students.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

from grader.files import write_atomic
from grader.judge.scorecard import Scorecard, points_text
from grader.outputs.spreadsheet import cell_text
from grader.vocab import QuestionStatus

PENDING = "pending"  # a question graded by a person, not graded yet: its cell, in place of points


def gradebook_csv(cards: Iterable[Scorecard], *, rounding: int = 2) -> str:
    """The CSV text. One pass over the cards (a batch's are read back one at a time): each card
    leaves only its row's cells, and the question columns are known at the end."""
    qids: dict[str, None] = {}
    rows = []
    late = False  # a ``late`` column (the policy's line) once any card has one
    for card in cards:
        late = late or card.late is not None
        scores = {}
        for q in card.questions:
            qids.setdefault(q.id, None)
            scores[q.id] = PENDING if q.status == QuestionStatus.MANUAL else points_text(q.score, rounding)
        rows.append(
            (
                [
                    cell_text(card.student),
                    cell_text(card.submission),
                    card.status,
                    points_text(card.score, rounding),
                    points_text(card.max_score, rounding),
                    points_text(card.percent, 1),
                ],
                scores,
                [cell_text(card.reason), card.sha256, cell_text(card.late_line(rounding))],
            )
        )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        ["student", "submission", "status", "score", "max_score", "percent", *qids, "reason", "sha256"]
        + (["late"] if late else [])
    )
    for head, scores, tail in rows:
        w.writerow([*head, *[scores.get(q, "") for q in qids], *(tail if late else tail[:2])])
    return buf.getvalue()


def write_gradebook(cards: Iterable[Scorecard], path: Path, *, rounding: int = 2) -> Path:
    """Write ``gradebook.csv`` for these scorecards (in the order given) atomically; returns the path."""
    return write_atomic(path, gradebook_csv(cards, rounding=rounding))
