"""The roster: which student each submission is, for the gradebooks of an LMS (Canvas, Moodle).

A CSV file with a header and any of these columns (one row per student)::

    submission    the submission's name as the outputs use it (the notebook's file name without .ipynb)
    name          the student's name as the LMS shows it
    email         their e-mail address
    github        their GitHub login (GitHub Classroom's submissions are named by it)
    lms_id        the LMS's own user id (Canvas's ID)
    sis_user_id   the student information system's user id
    sis_login_id  the SIS login
    section       the course section

A submission is matched to a row by its name, then by its student id (``Scorecard.student``)
against ``submission``, ``github``, ``email`` and ``sis_login_id``, in that order.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.judge.scorecard import Scorecard

COLUMNS = ("submission", "name", "email", "github", "lms_id", "sis_user_id", "sis_login_id", "section")
MATCHED_BY = ("submission", "github", "email", "sis_login_id")


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


@dataclass(frozen=True)
class Roster:
    students: tuple[Student, ...]
    path: Path

    def find(self, name: str, card: Scorecard) -> Student | None:
        keys = [k.lower() for k in (name, card.student, Path(card.submission).stem) if k]
        for column in MATCHED_BY:
            for s in self.students:
                value = getattr(s, column).strip().lower()
                if value and value in keys:
                    return s
        return None


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
        students.append(Student(**{c: clean.get(c, "") for c in COLUMNS}))
    return Roster(tuple(students), Path(path))
