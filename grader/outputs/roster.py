"""The roster: which student each submission is, for the gradebooks of an LMS (Canvas, Moodle).

A CSV file with a header and any of these columns (one row per student)::

    submission    the submission's id (``grader.batch.intake``: ``alice`` for class/alice.ipynb,
                  class/alice/<any>.ipynb or an exchange layout's submitted/alice/), or its student id
    name          the student's name as the LMS shows it
    email         their e-mail address
    github        their GitHub login (GitHub Classroom's submissions are named by it)
    lms_id        the LMS's own user id (Canvas's ID)
    sis_user_id   the student information system's user id
    sis_login_id  the SIS login
    section       the course section

A submission from an LMS's download (``Scorecard.origin``: Canvas, Moodle, Gradescope) is matched by
the LMS's id of the student alone: Canvas's user id and Moodle's participant id (``Participant
123456`` or ``123456``) against ``lms_id``, or against the LMS's own column where the roster has
one (``canvas_user_id``, ``moodle_participant_id``, ``gradescope_sid``: one roster for several
LMSs); Gradescope's student id against ``sis_user_id`` too and its e-mail against ``email``; its id
against ``submission``. A file of a download that follows no scheme has no LMS id: no row takes it. Otherwise a
submission is matched by a declared identity only: its id (``Scorecard.id``) against the
``submission`` column, and the student id intake found (``Scorecard.student``: the student's folder,
an exchange layout's student, or the notebook's name in a folder of notebooks) against ``submission``,
``github``, ``email`` and ``sis_login_id``, letters compared without case. Never by the name of a
notebook inside a student's folder: alice's folder holding ``bob.ipynb`` is alice's. A submission
that matches two rows, or a row that two submissions match, is a conflict: nothing is written for
them (the others are), and ``RosterConflict`` names both after every file is written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from grader.course.late import lms_key
from grader.errors import RosterConflict, UsageError
from grader.files import printable
from grader.judge.scorecard import Origin, Scorecard

COLUMNS = ("submission", "name", "email", "github", "lms_id", "sis_user_id", "sis_login_id", "section")
MATCHED_BY = ("submission", "github", "email", "sis_login_id", "lms_id")
# Each LMS's own id of a student, where one roster holds several LMSs' ids (else ``lms_id`` is it).
LMS_COLUMNS = {
    "canvas": ("canvas_user_id", "canvas_id"),
    "moodle": ("moodle_participant_id", "participant_id", "moodle_id"),
    "gradescope": ("gradescope_sid", "sid"),
}
BY_STUDENT_ID = ("submission", "github", "email", "sis_login_id")  # the columns a student id is looked up in

T = TypeVar("T")


@dataclass(frozen=True)
class Student:
    submission: str = ""
    name: str = ""
    email: str = ""
    github: str = ""
    lms_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    line: int = 0  # the row's line in the file (the header is line 1)
    extra: tuple[tuple[str, str], ...] = ()  # the other columns (a late policy's extensions column)

    def column(self, name: str) -> str:
        return dict(self.extra).get(name.strip().lower(), "")

    def label(self) -> str:
        who = self.name or self.email or self.github or self.submission or self.sis_login_id or self.lms_id
        return f"row {self.line} ({printable(who)})" if who else f"row {self.line}"


@dataclass
class Matching(Generic[T]):
    """What ``Roster.match`` placed: for each roster row (by index) the value of the one submission
    that is that student's; the submissions no row names; the conflicts, each naming both sides."""

    rows: dict[int, T] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def identity(name: str, card: Scorecard) -> str:
    """How a submission is named in a message: its id (the output name for a card without one)."""
    sid = card.id or name
    return f"{sid!r}" if sid == name else f"{sid!r} ({name})"


@dataclass(frozen=True)
class Roster:
    students: tuple[Student, ...]
    path: Path

    def candidates(self, name: str, card: Scorecard) -> list[int]:
        """The rows this submission's declared identity names (indexes into ``students``)."""
        sid = (card.id or name).strip().lower()
        student = card.student.strip().lower()
        found = []
        if card.origin is not None:
            return self._by_lms(card.origin, sid)
        for i, s in enumerate(self.students):
            if sid and s.submission.strip().lower() == sid:
                found.append(i)
            elif student and any(getattr(s, c).strip().lower() == student for c in BY_STUDENT_ID):
                found.append(i)
        return found

    def _by_lms(self, origin: Origin, sid: str) -> list[int]:
        user = lms_key(origin.user_id)
        email = origin.email.strip().lower()
        # A column of this LMS's own ids, where the roster has one (several LMSs in one roster); else lms_id.
        own = next((c for c in LMS_COLUMNS.get(origin.lms, ()) if any(s.column(c) for s in self.students)), "")
        found = []
        for i, s in enumerate(self.students):
            ids = {lms_key(s.column(own) if own else s.lms_id)}
            if origin.lms == "gradescope":
                ids.add(lms_key(s.sis_user_id))
            ids.discard("")
            if (user and user in ids) or (sid and s.submission.strip().lower() == sid):
                found.append(i)
            elif origin.lms == "gradescope" and email and s.email.strip().lower() == email:
                found.append(i)
        return found

    def match(self, submissions: Iterable[tuple[str, Scorecard]], value: Callable[[Scorecard], T]) -> Matching[T]:
        """Each submission placed on its row, ``value(card)`` kept for it (one card at a time is read)."""
        out: Matching[T] = Matching()
        claims: dict[int, list[tuple[str, T]]] = {}
        for name, card in submissions:
            rows = self.candidates(name, card)
            who = identity(name, card)
            if not rows:
                out.unknown.append(who)
            elif len(rows) > 1:
                both = " and ".join(self.students[i].label() for i in rows)
                out.conflicts.append(f"submission {who} matches {both} of {self.path.name}")
            else:
                claims.setdefault(rows[0], []).append((who, value(card)))
        for i, claimed in sorted(claims.items()):
            if len(claimed) == 1:
                out.rows[i] = claimed[0][1]
            else:
                names = " and ".join(f"submission {w}" for w, _ in claimed)
                out.conflicts.append(f"{self.students[i].label()} of {self.path.name} is matched by {names}")
        return out


def not_on_roster(submissions: Iterable[tuple[str, Scorecard]], roster: Roster) -> list[str]:
    """A line for each submission no row of the roster names: graded, but in no LMS file."""
    files: dict[str, str] = {}

    def seen(card: Scorecard) -> None:
        if card.origin is not None:  # what the download says of it, so a person finds it there
            files[repr(card.id)] = f"{card.origin.name}, {card.origin.file}".strip(", ")

    placed = roster.match(submissions, seen)
    lines = []
    for who in placed.unknown:
        said = next((v for k, v in files.items() if who.startswith(k + " ") or who == k), "")
        lines.append(
            f"{who}{f' ({said})' if said else ''}: not on {roster.path.name}, so in no LMS file (its scorecard is written)"
        )
    return lines


def conflict(path: Path, conflicts: list[str]) -> RosterConflict:
    """The error a writer raises once its file is written without the conflicting submissions."""
    return RosterConflict(
        f"{path.name} is written without {len(conflicts)} conflict(s) the roster cannot settle, "
        "and nothing for the submissions involved:\n  "
        + "\n  ".join(conflicts)
        + "\nGive each submission's id in the roster's `submission` column, one row per student."
    )


def load(path: Path) -> Roster:
    """Read a roster; a missing file or one without a column to match by is a UsageError."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"The roster {path} cannot be read: {exc}.") from None
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip().lower() for f in reader.fieldnames or []]
    if not any(c in fields for c in MATCHED_BY):
        raise UsageError(
            f"The roster {path} has none of the columns a submission is matched by "
            f"({', '.join(MATCHED_BY)}); its columns: {', '.join(fields) or 'none'}."
        )
    students = []
    for row in reader:
        clean = {str(k).strip().lower(): (v or "").strip() for k, v in row.items() if k is not None}
        extra = tuple((k, v) for k, v in clean.items() if k not in COLUMNS)
        students.append(Student(**{c: clean.get(c, "") for c in COLUMNS}, line=reader.line_num, extra=extra))
    return Roster(tuple(students), Path(path))
