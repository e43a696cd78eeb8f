"""Grades in a spreadsheet: ``grader review NAME --export grades.csv`` and ``--import grades.csv``.

Columns ``student, question, points, comment`` (``student``: the submission's id, as the export
writes it; or the name of its output files, or its student id where only one submission has it), one row per answer to a question graded by a person; the export adds
``max_points``, the ``grader`` who gave the grade, and the ``answer`` text for whoever grades in the sheet, and the import ignores
columns it does not know. A row with no points is left out (not graded yet). The import checks
every row first and applies all of them in one transaction, or none: a bad row is refused with
its row number and the reason.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from grader.errors import UsageError
from grader.files import write_atomic
from grader.judge.scorecard import Scorecard, points_text
from grader.outputs.spreadsheet import cell_text, typed_text
from grader.review.merge import with_grades
from grader.review.store import GradeStore
from grader.vocab import QuestionStatus

COLUMNS = ("student", "question", "points", "comment")
BY_PERSON = (QuestionStatus.MANUAL, QuestionStatus.GRADED)


def export_csv(store: GradeStore, path: Path) -> int:
    """Write every answer to a question graded by a person; returns the number of rows."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*COLUMNS, "max_points", "grader", "answer"])
    n = 0
    for s in store.submissions():
        card = with_grades(store, s.id)
        for q in card.questions:
            if q.status not in BY_PERSON:
                continue
            points = points_text(q.score) if q.status == QuestionStatus.GRADED else ""
            comment = q.person.comment if q.person is not None else ""
            answer = q.answer.text if q.answer is not None else ""
            who = q.person.grader if q.person is not None else ""
            w.writerow(
                [
                    cell_text(s.id),
                    q.id,
                    points,
                    cell_text(comment),
                    points_text(q.max_score),
                    cell_text(who),
                    cell_text(answer),
                ]
            )
            n += 1
    write_atomic(Path(path), buf.getvalue())
    return n


def import_csv(store: GradeStore, path: Path, *, grader: str) -> int:
    """Apply the sheet's grades; returns the number applied. Raises UsageError listing every bad
    row (nothing applied then)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} cannot be read: {exc}.") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(f"{path} has no column {', '.join(missing)}; the columns are {', '.join(COLUMNS)}.")
    stored = store.submissions()
    cards = {s.id: store.card(s.id) for s in stored}
    by_name = {s.name: s.id for s in stored}
    by_student = _by_student(cards)
    rows: list[tuple[str, str, float, str | None, str]] = []
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for n, row in enumerate(reader, 2):  # row 1 is the header, as a spreadsheet numbers it
        who, qid = _plain(row.get("student")), _plain(row.get("question"))
        raw, comment = (row.get("points") or "").strip(), _plain(row.get("comment"))
        if not raw:
            continue
        name = who if who in cards else by_name.get(who) or by_student.get(who, "")
        if not name:
            problems.append(f"row {n}: no submission or student {who!r} in this run")
            continue
        q = next((q for q in cards[name].questions if q.id == qid), None)
        if q is None:
            problems.append(f"row {n}: {who!r} has no question {qid!r}")
            continue
        if q.status not in BY_PERSON:
            problems.append(f"row {n}: question {qid!r} is graded by the autograder, not by a person")
            continue
        try:
            points = float(raw)
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            problems.append(f"row {n}: points {raw!r} is not a number")
            continue
        if not 0 <= points <= q.max_score:
            problems.append(f"row {n}: {points:g} points is outside 0 to {q.max_score:g} for question {qid!r}")
            continue
        if (name, qid) in seen:
            problems.append(f"row {n}: {who!r}, question {qid!r} is graded already in row {seen[name, qid]}")
            continue
        seen[name, qid] = n
        rows.append((name, qid, points, comment, q.answer.digest if q.answer is not None else ""))
    if problems:
        raise UsageError(f"{path}: nothing imported; {len(problems)} row(s) refused:\n  " + "\n  ".join(problems))
    store.set_many(rows, grader=grader)
    return len(rows)


def _plain(value: str | None) -> str:
    """A cell as typed, without the apostrophe the export puts before a formula-like text."""
    text = (value or "").strip()
    return typed_text(text)


def _by_student(cards: dict[str, Scorecard]) -> dict[str, str]:
    """Student id -> submission id, for the student ids that name one submission only."""
    count: dict[str, list[str]] = {}
    for name, card in cards.items():
        if card.student:
            count.setdefault(card.student, []).append(name)
    return {s: names[0] for s, names in count.items() if len(names) == 1}
