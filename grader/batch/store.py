"""Finished scorecards on disk, keyed by submission content and assignment fingerprint.

One JSON file per submission content, written as soon as it is graded: an interrupted batch
resumes, and an unchanged submission is not graded again. Each file is the scorecard's document
(``grader.judge.document``); one that cannot be read (damaged, or of another ``format_version``)
is a miss, and the submission is graded again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from grader import PACKAGE_DIR, __version__
from grader.course.model import Assignment
from grader.errors import DocumentError
from grader.files import write_atomic
from grader.judge import document
from grader.judge.grading import Grader
from grader.judge.scorecard import Scorecard


def fingerprint(grader: Grader, assignment: Assignment) -> str:
    """Everything a scorecard depends on besides the submission itself."""
    h = hashlib.sha256()
    h.update(__version__.encode())
    h.update(code_digest().encode())  # a changed grader (a fixed message, a new check) grades again
    h.update(grader.references.key(assignment).encode())  # config digest, limits, solution and data bytes
    for path in (assignment.skeleton,):
        try:
            h.update(path.read_bytes())  # its skip-grading cells are recognised in submissions
        except OSError:
            pass
    h.update(repr(grader.course.scorecard).encode())
    # Settings a course default can give every check (carry_forward) are not in the section's digest.
    h.update(repr([c.carry_forward for c in assignment.checks]).encode())
    h.update(repr(grader.reveal()).encode())
    h.update(grader.executor.name.encode())
    return h.hexdigest()


def code_digest() -> str:
    """A hash of the grader's own source: a cluster's workers must run the same code as the client."""
    h = hashlib.sha256()
    package = Path(PACKAGE_DIR)
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


class ResultStore:
    """Finished scorecards on disk, one file per submission content, written atomically."""

    def __init__(self, root: Path, assignment: Assignment, key: str):
        self.dir = Path(root) / "results" / f"{assignment.name}-{key[:16]}"
        self.key = key

    def _file(self, sha: str) -> Path:
        return self.dir / f"{sha}.json"

    def get(self, sha: str) -> Scorecard | None:
        if not sha:
            return None
        try:
            return document.load(json.loads(self._file(sha).read_text(encoding="utf-8")))
        except (OSError, ValueError, DocumentError):  # not there, damaged, or another format: graded again
            return None

    def put(self, sha: str, card: Scorecard) -> bool:
        """Store the card; whether it is there to be read back (not without a content hash)."""
        if not sha:
            return False
        write_atomic(self._file(sha), json.dumps(document.dump(card)))
        return True
