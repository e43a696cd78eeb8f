"""A person's grades, kept in SQLite beside a run's outputs (``OUT/grades.sqlite``).

The standard library's sqlite3 in WAL mode: every change is its own short transaction, committed
before the request that made it returns, so a killed server loses nothing saved, and two people
grading at once (two browsers, or a browser and ``--import``) lose neither's work. Each change
touches only what it changes (one rubric item on one answer, the free points, the comment), and
every change is also appended to a log. This module only stores: a person's grades are put into
a scorecard by ``grader.review.merge``.

Every row is keyed by the submission's id (``Scorecard.id``, from ``grader.batch.intake``), never
by its place in the class or its output name, so a submission added to the class while a person
grades moves nobody's grade:

    submissions(id, name, path, card)                 the autograder's scorecard of each submission,
                                                      and the stem of its output files
    answers(submission, question, digest)             what each answer to a manual question is now
    rubric(id, question, position, text, points)     items shared by every answer to a question
    grades(submission, question, adjustment, comment, grader, at, digest, version)
    picks(submission, question, cells, grader, at)    the cells a person picked as an answer the
                                                      autograder did not find (kept with the grade)
    marks(submission, question, item)                 the rubric items applied to an answer
    log(at, grader, submission, question, action, data)
    meta(key, value)                                  the run's assignment and output formats

The schema's version is SQLite's ``PRAGMA user_version`` (``VERSION``). Opening a database of an
older version migrates it in one transaction (``MIGRATIONS``); one of a newer version is refused.
Version 0 (before ids) keyed submissions by their output name: each keeps its name as its id, and
the first ``put_card`` of a submission whose id differs but whose output name is that one takes
its rows over (``frank-a`` becomes ``frank/a``), so no grade is left behind.

A grade's ``version`` counts its changes: a change made on the page names the version it was made
on (``base``), and one made on an older version than the stored one (another tab, another grader,
an import) is refused with ``StaleEdit`` rather than laid over it.

A grade's ``digest`` is that of the answer it was given to (``Answer.digest``): when a regrade
finds the answer changed, the grade is kept but the question waits for a person again.

Why one module: the schema, its migrations and every statement that reads or writes it change
together; a column added here is read and written a few lines away.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader import files
from grader.errors import DocumentError, StaleEdit, UsageError
from grader.judge import document
from grader.judge.scorecard import Scorecard
from grader.vocab import QuestionStatus

FILENAME = "grades.sqlite"
VERSION = 2
SUBMISSIONS = """CREATE TABLE submissions (id TEXT PRIMARY KEY, name TEXT NOT NULL, path TEXT NOT NULL,
                                           card TEXT NOT NULL)"""
SCHEMA = f"""
{SUBMISSIONS};
CREATE TABLE rubric (id INTEGER PRIMARY KEY AUTOINCREMENT, question TEXT NOT NULL,
                     position INTEGER NOT NULL, text TEXT NOT NULL, points REAL NOT NULL);
CREATE TABLE grades (submission TEXT NOT NULL, question TEXT NOT NULL,
                     adjustment REAL NOT NULL DEFAULT 0, comment TEXT NOT NULL DEFAULT '',
                     grader TEXT NOT NULL DEFAULT '', at TEXT NOT NULL DEFAULT '',
                     digest TEXT NOT NULL DEFAULT '',
                     version INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (submission, question));
CREATE TABLE marks (submission TEXT NOT NULL, question TEXT NOT NULL, item INTEGER NOT NULL,
                    PRIMARY KEY (submission, question, item));
CREATE TABLE answers (submission TEXT NOT NULL, question TEXT NOT NULL, digest TEXT NOT NULL,
                      PRIMARY KEY (submission, question));
CREATE TABLE picks (submission TEXT NOT NULL, question TEXT NOT NULL, cells TEXT NOT NULL,
                    grader TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (submission, question));
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, grader TEXT NOT NULL,
                  submission TEXT NOT NULL, question TEXT NOT NULL, action TEXT NOT NULL, data TEXT NOT NULL);
"""
KEYED = ("grades", "marks", "answers", "picks", "log")  # the tables whose ``submission`` column holds an id
ADOPT = "ids from output names"  # meta: version 0's names, each waiting for the id that takes its rows


def _from_names(db: sqlite3.Connection) -> None:
    """Version 0 -> 1: submissions keyed by id, not by output name (each name becomes its id, the
    card carries it), and the output name kept beside it; no position."""
    names = []
    db.execute("ALTER TABLE submissions RENAME TO submissions_v0")
    db.execute(SUBMISSIONS)
    for name, path, card in db.execute("SELECT name, path, card FROM submissions_v0 ORDER BY name").fetchall():
        data = json.loads(card)
        data["id"] = name
        db.execute("INSERT INTO submissions VALUES (?, ?, ?, ?)", (name, name, path, json.dumps(data)))
        names.append(name)
    db.execute("DROP TABLE submissions_v0")
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (ADOPT, json.dumps(names)))


def _versioned(db: sqlite3.Connection) -> None:
    """Version 1 -> 2: each grade carries the version it is at (a save made on an older one is
    refused, not laid over it); the cells a person picked as an answer (``picks``) are a new table."""
    db.execute("ALTER TABLE grades ADD COLUMN version INTEGER NOT NULL DEFAULT 0")


# Each step takes a database of the version before it to its own, inside the opening transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _from_names, 2: _versioned}


def unreadable(path: Path, why: str) -> str:
    """What to do about a grades database that cannot be read: it is never replaced by an empty one."""
    return (
        f"{path} is not a grades database this grader can read ({why}). Nothing was changed. Restore it "
        f"from a backup; or move it aside (mv {path} {path}.damaged) and grade the class again into "
        f"{path.parent}/: the grades given by a person are rebuilt from the records in its scorecards."
    )


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
class Stored:
    """A submission the store holds: its id, the stem of its output files, and its notebook."""

    id: str
    name: str
    path: Path


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
    version: int = 0


class GradeStore:
    """The grades of one output folder. Opens a connection per operation, so any thread may use it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        # Made 0640 before SQLite opens it, so its -wal and -shm files (SQLite gives them the
        # database's mode) are closed to other users too.
        files.private_file(self.path)
        try:
            with self._db() as db:
                db.execute("PRAGMA journal_mode=WAL")
                found = [str(r[0]) for r in db.execute("PRAGMA quick_check").fetchall()]
                if found != ["ok"]:
                    raise sqlite3.DatabaseError(f"damaged: {'; '.join(found[:3])}")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise UsageError(unreadable(self.path, str(exc))) from None

    def _migrate(self) -> None:
        """Bring the database to ``VERSION`` (a new one: created), in one transaction."""
        with self._db() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] == VERSION:
                return
        with self._write() as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > VERSION:
                raise UsageError(
                    f"{self.path} was written by a newer grader (its schema is version {version}; this "
                    f"grader reads up to {VERSION}): grade with the grader that wrote it, or upgrade this one."
                )
            if version == VERSION:  # another process migrated it first
                return
            held = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "submissions" in held:
                for step in range(version + 1, VERSION + 1):
                    MIGRATIONS[step](db)
            for statement in SCHEMA.split(";"):  # a new database; or a table an old one never had
                if statement.strip():
                    db.execute(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
            db.execute(f"PRAGMA user_version = {VERSION}")

    @classmethod
    def in_folder(cls, out: Path) -> GradeStore:
        return cls(Path(out) / FILENAME)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        if not self.path.is_file():  # deleted while in use: never made again, empty, in its place
            raise UsageError(
                f"{self.path} is gone: nothing more can be saved. Restore it from a backup; or grade the class "
                f"again into {self.path.parent}/: the grades its scorecards record are rebuilt from them."
            )
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

    def put_card(self, id: str, name: str, path: Path, card: Scorecard) -> None:
        """Keep the autograder's card of the submission ``id`` (output files ``name``), and what its
        answers to the manual questions are now."""
        with self._write() as db:
            self._adopt(db, id, name)
            db.execute(
                "INSERT OR REPLACE INTO submissions VALUES (?, ?, ?, ?)",
                (id, name, str(path), json.dumps(document.dump(card))),
            )
            db.execute("DELETE FROM answers WHERE submission = ?", (id,))
            db.executemany(
                "INSERT INTO answers VALUES (?, ?, ?)",
                [
                    (id, q.id, q.answer.digest if q.answer is not None else "")
                    for q in card.questions
                    if q.status in (QuestionStatus.MANUAL, QuestionStatus.GRADED)
                ],
            )

    def _adopt(self, db: sqlite3.Connection, id: str, name: str) -> None:
        """A version 0 row keyed by this output name: its rows become this id's (see the docstring)."""
        row = db.execute("SELECT value FROM meta WHERE key = ?", (ADOPT,)).fetchone()
        waiting = json.loads(row[0]) if row else []
        if name not in waiting:
            return
        waiting.remove(name)
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (ADOPT, json.dumps(waiting)))
        taken = db.execute("SELECT 1 FROM submissions WHERE id = ?", (id,)).fetchone() is not None
        if id == name or taken:
            return
        for table in KEYED:
            db.execute(
                f"UPDATE {table} SET submission = ? WHERE submission = ?", (id, name)
            )  # KEYED: the tables named above
        db.execute("DELETE FROM submissions WHERE id = ?", (name,))

    def set_meta(self, key: str, value: object) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def meta(self, key: str, default: object = None) -> object:
        with self._db() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def submissions(self) -> list[Stored]:
        """Every submission, by output name (then id): the order a person goes through them."""
        with self._db() as db:
            rows = db.execute("SELECT id, name, path FROM submissions ORDER BY name, id").fetchall()
        return [Stored(i, n, Path(p)) for i, n, p in rows]

    def submission(self, id: str) -> Stored | None:
        with self._db() as db:
            row = db.execute("SELECT id, name, path FROM submissions WHERE id = ?", (id,)).fetchone()
        return Stored(row[0], row[1], Path(row[2])) if row else None

    def card(self, id: str) -> Scorecard:
        """The autograder's scorecard of a submission, without a person's grades."""
        with self._db() as db:
            row = db.execute("SELECT card FROM submissions WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise KeyError(id)
        try:
            return document.load(json.loads(row[0]))
        except DocumentError as exc:
            raise DocumentError(f"{self.path}: the scorecard of {id}: {exc}") from None

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
            return self._grade(db, submission, question)

    def _grade(self, db: sqlite3.Connection, submission: str, question: str) -> Grade | None:
        row = db.execute(
            "SELECT adjustment, comment, grader, at, digest, version FROM grades WHERE submission = ? AND question = ?",
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
        return Grade(
            submission,
            question,
            items,
            float(row[0]),
            str(row[1]),
            str(row[2]),
            str(row[3]),
            str(row[4]),
            int(row[5]),
        )

    def _touch(
        self, db: sqlite3.Connection, submission: str, question: str, grader: str, digest: str, base: int | None = None
    ) -> None:
        """The grade's row made (where it is new), checked against ``base`` (the version the change
        was made on; ``None``: no check) and moved on to its next version."""
        if base is not None:
            row = db.execute(
                "SELECT version FROM grades WHERE submission = ? AND question = ?", (submission, question)
            ).fetchone()
            if (int(row[0]) if row else 0) != base:
                raise StaleEdit(self._grade(db, submission, question))
        db.execute(
            "INSERT INTO grades (submission, question) VALUES (?, ?) ON CONFLICT DO NOTHING", (submission, question)
        )
        db.execute(
            "UPDATE grades SET grader = ?, at = ?, digest = ?, version = version + 1 WHERE submission = ? AND question = ?",
            (grader, now(), digest, submission, question),
        )

    def mark(
        self, submission: str, question: str, item: int, on: bool, *, grader: str, digest: str, base: int | None = None
    ) -> None:
        """Apply a rubric item to an answer (``on``), or take it off."""
        with self._write() as db:
            if db.execute("SELECT 1 FROM rubric WHERE id = ? AND question = ?", (item, question)).fetchone() is None:
                raise KeyError(item)
            self._touch(db, submission, question, grader, digest, base)
            if on:
                db.execute("INSERT OR IGNORE INTO marks VALUES (?, ?, ?)", (submission, question, item))
            else:
                db.execute(
                    "DELETE FROM marks WHERE submission = ? AND question = ? AND item = ?", (submission, question, item)
                )
            self._log(db, grader, submission, question, "mark" if on else "unmark", {"item": item})

    def set_adjustment(
        self, submission: str, question: str, adjustment: float, *, grader: str, digest: str, base: int | None = None
    ) -> None:
        with self._write() as db:
            self._touch(db, submission, question, grader, digest, base)
            db.execute(
                "UPDATE grades SET adjustment = ? WHERE submission = ? AND question = ?",
                (float(adjustment), submission, question),
            )
            self._log(db, grader, submission, question, "points", {"adjustment": adjustment})

    def set_comment(
        self, submission: str, question: str, comment: str, *, grader: str, digest: str, base: int | None = None
    ) -> None:
        with self._write() as db:
            self._touch(db, submission, question, grader, digest, base)
            db.execute(
                "UPDATE grades SET comment = ? WHERE submission = ? AND question = ?", (comment, submission, question)
            )
            self._log(db, grader, submission, question, "comment", {"comment": comment})

    def picked(self, submission: str, question: str) -> tuple[int, ...]:
        """The cells a person picked as the answer (1-based), or none."""
        with self._db() as db:
            row = db.execute(
                "SELECT cells FROM picks WHERE submission = ? AND question = ?", (submission, question)
            ).fetchone()
        return tuple(int(c) for c in str(row[0]).split(",") if c.isdigit()) if row else ()

    def pick(self, submission: str, question: str, cells: Sequence[int], *, grader: str, was: str, now_: str) -> None:
        """Keep the cells a person picked as the answer (none: the pick taken back). A grade given to
        the answer as it was (digest ``was``) goes with it to the picked one (digest ``now_``)."""
        picked = sorted({int(c) for c in cells})
        with self._write() as db:
            if picked:
                db.execute(
                    "INSERT OR REPLACE INTO picks VALUES (?, ?, ?, ?, ?)",
                    (submission, question, ",".join(str(c) for c in picked), grader, now()),
                )
            else:
                db.execute("DELETE FROM picks WHERE submission = ? AND question = ?", (submission, question))
            db.execute(
                "UPDATE grades SET digest = ? WHERE submission = ? AND question = ? AND digest = ?",
                (now_, submission, question, was),
            )
            self._log(db, grader, submission, question, "pick cells", {"cells": picked})

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

    def restore(
        self,
        submission: str,
        question: str,
        *,
        marks: Sequence[tuple[str, float]],
        adjustment: float,
        comment: str,
        grader: str,
        at: str,
        digest: str,
        source: str,
    ) -> None:
        """A grade as a scorecard's record keeps it (``graded_by``), put back where the store has
        none: its rubric items (found by their text, or added), free points, comment, grader, time."""
        with self._write() as db:
            if db.execute(
                "SELECT 1 FROM grades WHERE submission = ? AND question = ?", (submission, question)
            ).fetchone():
                return
            self._touch(db, submission, question, grader, digest)
            for text, points in marks:
                row = db.execute("SELECT id FROM rubric WHERE question = ? AND text = ?", (question, text)).fetchone()
                if row is None:
                    position = db.execute("SELECT COUNT(*) FROM rubric WHERE question = ?", (question,)).fetchone()[0]
                    cur = db.execute(
                        "INSERT INTO rubric (question, position, text, points) VALUES (?, ?, ?, ?)",
                        (question, position, text, float(points)),
                    )
                    row = (cur.lastrowid,)
                db.execute("INSERT OR IGNORE INTO marks VALUES (?, ?, ?)", (submission, question, row[0]))
            db.execute(
                "UPDATE grades SET adjustment = ?, comment = ?, at = ? WHERE submission = ? AND question = ?",
                (float(adjustment), comment, at or now(), submission, question),
            )
            self._log(
                db,
                grader,
                submission,
                question,
                "restore",
                {"from": source, "rubric": list(marks), "adjustment": adjustment, "comment": comment},
            )

    def _log(
        self, db: sqlite3.Connection, grader: str, submission: str, question: str, action: str, data: object
    ) -> None:
        db.execute(
            "INSERT INTO log (at, grader, submission, question, action, data) VALUES (?, ?, ?, ?, ?, ?)",
            (now(), grader, submission, question, action, json.dumps(data)),
        )

    def last_change(self) -> int:
        """The number of the latest change to a grade or a rubric (its line in the log)."""
        with self._db() as db:
            return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM log").fetchone()[0])

    def changed_between(self, after: int, upto: int) -> set[str] | None:
        """The submissions whose grades changes ``after`` < n <= ``upto`` touched; ``None`` where
        one of them touched every answer (a rubric item's points or text)."""
        with self._db() as db:
            rows = db.execute(
                "SELECT DISTINCT submission, action FROM log WHERE id > ? AND id <= ?", (after, upto)
            ).fetchall()
        if any(not sub and action != "add item" for sub, action in rows):
            return None
        return {str(sub) for sub, _ in rows if sub}

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

    def graded(self) -> dict[tuple[str, str], str]:
        """Every answer with a grade given to it as it is now: (submission, question) -> who gave it."""
        with self._db() as db:
            rows = db.execute(
                "SELECT g.submission, g.question, g.grader FROM grades g JOIN answers a ON "
                "a.submission = g.submission AND a.question = g.question AND a.digest = g.digest"
            ).fetchall()
        return {(str(s), str(q)): str(w) for s, q, w in rows}
