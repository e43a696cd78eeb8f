"""Finished scorecards on disk, keyed by submission content and assignment fingerprint.

One JSON file per submission content, written as soon as it is graded: an interrupted batch
resumes, and an unchanged submission is not graded again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from grader import PACKAGE_DIR, __version__
from grader.course.model import Assignment
from grader.files import write_atomic
from grader.judge.grading import Grader
from grader.judge.scorecard import CheckResult, Execution, Feedback, QuestionResult, Scorecard
from grader.judge.verdicts import PersonGrade, RubricMark
from grader.notebook.answers import Answer, FoundBy
from grader.vocab import FeedbackKind


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


def card_to_data(card: Scorecard) -> dict[str, Any]:
    """The card as plain data. A check's reasons are left out: what outputs read of them is in
    the feedback already (each line with its kind)."""
    data = dataclasses.asdict(card)
    data["execution"] = card.execution.to_dict()
    for q in data["questions"]:
        for c in q["checks"]:
            del c["reasons"]
    return data


def card_from_data(data: dict[str, Any]) -> Scorecard:
    """The inverse of card_to_data; raises (KeyError, TypeError, ValueError) on anything else."""
    questions = []
    for q in data["questions"]:
        checks = tuple(CheckResult(**{**c, "carried_from": tuple(c["carried_from"])}) for c in q.get("checks", []))
        feedback = tuple(Feedback(FeedbackKind(f["kind"]), str(f["text"])) for f in q["feedback"])
        answer = (
            Answer(
                **{**q["answer"], "cells": tuple(q["answer"]["cells"]), "found_by": FoundBy(q["answer"]["found_by"])}
            )
            if q.get("answer")
            else None
        )
        person = (
            PersonGrade(**{**q["person"], "marks": tuple(RubricMark(**m) for m in q["person"]["marks"])})
            if q.get("person")
            else None
        )
        questions.append(
            QuestionResult(
                **{
                    **q,
                    "checks": checks,
                    "feedback": feedback,
                    "carried_forward": tuple(q.get("carried_forward", ())),
                    "answer": answer,
                    "person": person,
                }
            )
        )
    return Scorecard(**{**data, "questions": questions, "execution": Execution.from_dict(data["execution"])})


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
            return card_from_data(json.loads(self._file(sha).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, sha: str, card: Scorecard) -> bool:
        """Store the card; whether it is there to be read back (not without a content hash)."""
        if not sha:
            return False
        write_atomic(self._file(sha), json.dumps(card_to_data(card)))
        return True
