"""A person's grades, kept in SQLite beside a run's outputs (``OUT/grades.sqlite``).

The standard library's sqlite3 in WAL mode: every change is its own short transaction, committed
before the request that made it returns, so a killed server loses nothing saved, and two people
grading at once (two browsers, or a browser and ``--import``) lose neither's work. Each change
touches only what it changes (one rubric item on one answer, the free points, the comment), and
every change is also appended to a log.

    submissions(name, path, position, card)          the autograder's scorecard of each submission
    answers(submission, question, digest)             what each answer to a manual question is now
    rubric(id, question, position, text, points)     items shared by every answer to a question
    grades(submission, question, adjustment, comment, grader, at, digest)
    marks(submission, question, item)                 the rubric items applied to an answer
    log(at, grader, submission, question, action, data)
    meta(key, value)                                  the run's assignment and output formats

A grade's ``digest`` is that of the answer it was given to (``Answer.digest``): when a regrade
finds the answer changed, the grade is kept but the question waits for a person again.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.errors import DocumentError
from grader.judge import document
from grader.judge.scorecard import QuestionResult, Scorecard, with_questions
from grader.judge.verdicts import PersonGrade, RubricMark
from grader.vocab import QuestionStatus

FILENAME = "grades.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (name TEXT PRIMARY KEY, path TEXT NOT NULL, position INTEGER NOT NULL,
                                        card TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rubric (id INTEGER PRIMARY KEY AUTOINCREMENT, question TEXT NOT NULL,
                                   position INTEGER NOT NULL, text TEXT NOT NULL, points REAL NOT NULL);
CREATE TABLE IF NOT EXISTS grades (submission TEXT NOT NULL, question TEXT NOT NULL,
                                   adjustment REAL NOT NULL DEFAULT 0, comment TEXT NOT NULL DEFAULT '',
                                   grader TEXT NOT NULL DEFAULT '', at TEXT NOT NULL DEFAULT '',
                                   digest TEXT NOT NULL DEFAULT '', PRIMARY KEY (submission, question));
CREATE TABLE IF NOT EXISTS marks (submission TEXT NOT NULL, question TEXT NOT NULL, item INTEGER NOT NULL,
                                  PRIMARY KEY (submission, question, item));
CREATE TABLE IF NOT EXISTS answers (submission TEXT NOT NULL, question TEXT NOT NULL, digest TEXT NOT NULL,
                                    PRIMARY KEY (submission, question));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, grader TEXT NOT NULL,
                                submission TEXT NOT NULL, question TEXT NOT NULL, action TEXT NOT NULL,
                                data TEXT NOT NULL);
"""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Item:
    """A rubric item: shared by every answer to its question; changing its points changes them all."""

    id: int
    question: str
    text: str
    points: float


@dataclass(frozen=True)
class Grade:
    """What a person entered for one answer, as stored."""

    submission: str
    question: str
    items: tuple[int, ...]
    adjustment: float
    comment: str
    grader: str
    at: str
    digest: str


class GradeStore:
    """The grades of one output folder. Opens a connection per operation, so any thread may use it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @classmethod
    def in_folder(cls, out: Path) -> GradeStore:
        return cls(Path(out) / FILENAME)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 30000")
            # In WAL mode a committed change survives the process being killed at any point.
            db.execute("PRAGMA synchronous = NORMAL")
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, taken for writing at once (so two writers queue instead of failing)."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # ----------------------------------------------------------------------------------------
    # The autograder's scorecards

    def put_card(self, name: str, path: Path, card: Scorecard) -> None:
        with self._write() as db:
            row = db.execute("SELECT position FROM submissions WHERE name = ?", (name,)).fetchone()
            position = row[0] if row else db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
            db.execute(
                "INSERT OR REPLACE INTO submissions VALUES (?, ?, ?, ?)",
                (name, str(path), position, json.dumps(document.dump(card))),
            )
            db.execute("DELETE FROM answers WHERE submission = ?", (name,))
            db.executemany(
                "INSERT INTO answers VALUES (?, ?, ?)",
                [
                    (name, q.id, q.answer.digest if q.answer is not None else "")
                    for q in card.questions
                    if q.status in (QuestionStatus.MANUAL, QuestionStatus.GRADED)
                ],
            )

    def set_meta(self, key: str, value: object) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def meta(self, key: str, default: object = None) -> object:
        with self._db() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def submissions(self) -> list[tuple[str, Path]]:
        with self._db() as db:
            return [(n, Path(p)) for n, p in db.execute("SELECT name, path FROM submissions ORDER BY name")]

    def card(self, name: str) -> Scorecard:
        """The autograder's scorecard of a submission, without a person's grades."""
        with self._db() as db:
            row = db.execute("SELECT card FROM submissions WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(name)
        try:
            return document.load(json.loads(row[0]))
        except DocumentError as exc:
            raise DocumentError(f"{self.path}: the scorecard of {name}: {exc}") from None

    # ----------------------------------------------------------------------------------------
    # Rubrics

    def rubric(self, question: str) -> list[Item]:
        with self._db() as db:
            return [
                Item(*row)
                for row in db.execute(
                    "SELECT id, question, text, points FROM rubric WHERE question = ? ORDER BY position, id",
                    (question,),
                )
            ]

    def add_item(self, question: str, text: str, points: float, grader: str = "") -> Item:
        with self._write() as db:
            position = db.execute("SELECT COUNT(*) FROM rubric WHERE question = ?", (question,)).fetchone()[0]
            cur = db.execute(
                "INSERT INTO rubric (question, position, text, points) VALUES (?, ?, ?, ?)",
                (question, position, text, float(points)),
            )
            item = Item(int(cur.lastrowid or 0), question, text, float(points))
            self._log(db, grader, "", question, "add item", {"id": item.id, "text": text, "points": points})
        return item

    def seed_rubric(self, question: str, items: Sequence[tuple[str, float]]) -> int:
        """Add config.yaml's rubric items (text, points) of a question that this store has never
        been given and does not hold under that text: an item added to config.yaml later appears,
        an item edited or re-pointed on the page stays as the page has it. How many were added."""
        key = f"rubric from config.yaml: {question}"
        added = 0
        with self._write() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            given = set(json.loads(row[0])) if row else set()
            held = {t for (t,) in db.execute("SELECT text FROM rubric WHERE question = ?", (question,))}
            position = db.execute("SELECT COUNT(*) FROM rubric WHERE question = ?", (question,)).fetchone()[0]
            for text, points in items:
                if text in given or text in held:
                    continue
                cur = db.execute(
                    "INSERT INTO rubric (question, position, text, points) VALUES (?, ?, ?, ?)",
                    (question, position + added, text, float(points)),
                )
                self._log(
                    db, "config.yaml", "", question, "add item", {"id": cur.lastrowid, "text": text, "points": points}
                )
                added += 1
            given |= {text for text, _ in items}
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(sorted(given))))
        return added

    def update_item(self, item: int, *, text: str | None = None, points: float | None = None, grader: str = "") -> None:
        with self._write() as db:
            row = db.execute("SELECT question FROM rubric WHERE id = ?", (item,)).fetchone()
            if row is None:
                raise KeyError(item)
            if text is not None:
                db.execute("UPDATE rubric SET text = ? WHERE id = ?", (text, item))
            if points is not None:
                db.execute("UPDATE rubric SET points = ? WHERE id = ?", (float(points), item))
            self._log(db, grader, "", row[0], "edit item", {"id": item, "text": text, "points": points})

    # ----------------------------------------------------------------------------------------
    # Grades: each change its own transaction, touching only what it changes

    def grade(self, submission: str, question: str) -> Grade | None:
        with self._db() as db:
            row = db.execute(
                "SELECT adjustment, comment, grader, at, digest FROM grades WHERE submission = ? AND question = ?",
                (submission, question),
            ).fetchone()
            if row is None:
                return None
            items = tuple(
                i
                for (i,) in db.execute(
                    "SELECT item FROM marks WHERE submission = ? AND question = ? ORDER BY item", (submission, question)
                )
            )
        return Grade(submission, question, items, float(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4]))

    def _touch(self, db: sqlite3.Connection, submission: str, question: str, grader: str, digest: str) -> None:
        db.execute(
            "INSERT INTO grades (submission, question) VALUES (?, ?) ON CONFLICT DO NOTHING", (submission, question)
        )
        db.execute(
            "UPDATE grades SET grader = ?, at = ?, digest = ? WHERE submission = ? AND question = ?",
            (grader, now(), digest, submission, question),
        )

    def mark(self, submission: str, question: str, item: int, on: bool, *, grader: str, digest: str) -> None:
        """Apply a rubric item to an answer (``on``), or take it off."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM rubric WHERE id = ? AND question = ?", (item, question)).fetchone() is None:
                raise KeyError(item)
            self._touch(db, submission, question, grader, digest)
            if on:
                db.execute("INSERT OR IGNORE INTO marks VALUES (?, ?, ?)", (submission, question, item))
            else:
                db.execute(
                    "DELETE FROM marks WHERE submission = ? AND question = ? AND item = ?", (submission, question, item)
                )
            self._log(db, grader, submission, question, "mark" if on else "unmark", {"item": item})

    def set_adjustment(self, submission: str, question: str, adjustment: float, *, grader: str, digest: str) -> None:
        with self._write() as db:
            self._touch(db, submission, question, grader, digest)
            db.execute(
                "UPDATE grades SET adjustment = ? WHERE submission = ? AND question = ?",
                (float(adjustment), submission, question),
            )
            self._log(db, grader, submission, question, "points", {"adjustment": adjustment})

    def set_comment(self, submission: str, question: str, comment: str, *, grader: str, digest: str) -> None:
        with self._write() as db:
            self._touch(db, submission, question, grader, digest)
            db.execute(
                "UPDATE grades SET comment = ? WHERE submission = ? AND question = ?", (comment, submission, question)
            )
            self._log(db, grader, submission, question, "comment", {"comment": comment})

    def set_many(self, rows: Sequence[tuple[str, str, float, str | None, str]], *, grader: str) -> None:
        """(submission, question, points, comment or None to keep it, digest) for each row, all in one
        transaction: the points are the rubric items applied plus free points, so the free points
        become what makes up the difference."""
        with self._write() as db:
            for submission, question, points, comment, digest in rows:
                applied = db.execute(
                    "SELECT COALESCE(SUM(r.points), 0) FROM marks m JOIN rubric r ON r.id = m.item "
                    "WHERE m.submission = ? AND m.question = ?",
                    (submission, question),
                ).fetchone()[0]
                self._touch(db, submission, question, grader, digest)
                db.execute(
                    "UPDATE grades SET adjustment = ? WHERE submission = ? AND question = ?",
                    (float(points) - float(applied), submission, question),
                )
                if comment is not None:
                    db.execute(
                        "UPDATE grades SET comment = ? WHERE submission = ? AND question = ?",
                        (comment, submission, question),
                    )
                self._log(db, grader, submission, question, "import", {"points": points, "comment": comment})

    def _log(
        self, db: sqlite3.Connection, grader: str, submission: str, question: str, action: str, data: object
    ) -> None:
        db.execute(
            "INSERT INTO log (at, grader, submission, question, action, data) VALUES (?, ?, ?, ?, ?, ?)",
            (now(), grader, submission, question, action, json.dumps(data)),
        )

    def progress(self, question: str) -> tuple[int, int]:
        """(graded, answers): how many answers to the question have a grade given to them as they are now."""
        with self._db() as db:
            row = db.execute(
                "SELECT COUNT(g.submission), COUNT(*) FROM answers a LEFT JOIN grades g "
                "ON g.submission = a.submission AND g.question = a.question AND g.digest = a.digest "
                "WHERE a.question = ?",
                (question,),
            ).fetchone()
        return int(row[0]), int(row[1])

    # ----------------------------------------------------------------------------------------
    # A grade as a verdict

    def person_grade(self, grade: Grade, max_points: float) -> PersonGrade:
        items = {i.id: i for i in self.rubric(grade.question)}
        marks = tuple(RubricMark(items[i].text, items[i].points) for i in grade.items if i in items)
        raw = sum(m.points for m in marks) + grade.adjustment
        return PersonGrade(
            points=min(max(raw, 0.0), max_points),
            max_points=max_points,
            grader=grade.grader,
            at=grade.at,
            marks=marks,
            adjustment=grade.adjustment,
            comment=grade.comment,
        )

    def apply(self, name: str, card: Scorecard) -> Scorecard:
        """The card with a person's grades in place of the questions waiting for them."""
        from grader.judge import manual

        questions: list[QuestionResult] = []
        for q in card.questions:
            if q.status in (QuestionStatus.MANUAL, QuestionStatus.GRADED):
                grade = self.grade(name, q.id)
                digest = q.answer.digest if q.answer is not None else ""
                if grade is None:
                    q = manual.awaiting(q, review_again=False) if q.status == QuestionStatus.GRADED else q
                elif grade.digest != digest:
                    q = manual.awaiting(q, review_again=True)
                else:
                    q = manual.graded(q, self.person_grade(grade, q.max_score))
            questions.append(q)
        return with_questions(card, questions)
