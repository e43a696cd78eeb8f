"""``gradebook.csv``: one row per submission, one column per question, for any LMS import.

Columns: ``student, submission, status, score, max_score, percent``, then one column per
question (its score), then ``reason`` (why a notebook was not fully graded) and ``sha256``.
Text cells that a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``) are quoted
with a leading apostrophe, since student ids and file names come from students.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.files import write_atomic
from grader.judge.scorecard import Scorecard, points_text

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


def question_ids(cards: Iterable[Scorecard]) -> list[str]:
    """Question ids in the order they first appear across the cards."""
    seen: dict[str, None] = {}
    for card in cards:
        for q in card.questions:
            seen.setdefault(q.id, None)
    return list(seen)


def gradebook_csv(cards: Sequence[Scorecard], *, rounding: int = 2) -> str:
    """The CSV text: the question columns are those of every card, so the cards are gone through twice."""
    qids = question_ids(cards)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", "submission", "status", "score", "max_score", "percent", *qids, "reason", "sha256"])
    for card in cards:
        by_id = {q.id: q for q in card.questions}
        w.writerow([
            _text(card.student),
            _text(card.submission),
            card.status,
            points_text(card.score, rounding),
            points_text(card.max_score, rounding),
            points_text(card.percent, 1),
            *[points_text(by_id[q].score, rounding) if q in by_id else "" for q in qids],
            _text(card.reason),
            card.sha256,
        ])
    return buf.getvalue()


def write_gradebook(cards: Sequence[Scorecard], path: Path, *, rounding: int = 2) -> Path:
    """Write ``gradebook.csv`` for these scorecards (in the order given) atomically; returns the path."""
    return write_atomic(path, gradebook_csv(cards, rounding=rounding))
