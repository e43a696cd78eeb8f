"""Gradescope's ``results.json`` for one submission.

Schema (Gradescope autograder specification): top-level ``score``, ``execution_time``,
``output``, ``output_format``, ``visibility``, ``stdout_visibility`` and ``tests[]``, each with
``name``, ``number``, ``score``, ``max_score``, ``status`` (``passed`` | ``failed``), ``output``,
``output_format`` and ``visibility``. A question still waiting for a person has no score and no
status (a neutral test, not a failed one); once a person graded it, it has their points. Gradescope enforces visibility itself, so every question's
feedback goes in, with the question's visibility from config.yaml (``after_due`` becomes
``after_due_date``). A run that could not grade at all still produces a results file
(``failure_results``), so the student sees why instead of Gradescope's generic error.
"""

from __future__ import annotations

import json
from typing import Any

from grader.course.model import Assignment, ScorecardSettings
from grader.judge.scorecard import Scorecard, points_text, rounded
from grader.outputs.feedback import question_passed
from grader.outputs.view import SUBMISSION_WORDS, error_lines, question_label, status_words
from grader.vocab import QuestionStatus

VISIBILITY = {"visible": "visible", "after_due": "after_due_date", "hidden": "hidden"}


def results(card: Scorecard, assignment: Assignment | None, settings: ScorecardSettings) -> dict[str, Any]:
    r = settings.rounding
    tests: list[dict[str, Any]] = []
    for i, q in enumerate(card.questions, 1):
        try:
            level = (
                settings.question_visibility(card.assignment, assignment.question(q.id)) if assignment else "visible"
            )
        except KeyError:
            level = "visible"
        if q.status == QuestionStatus.MANUAL:
            # Waiting for a person: neither passed nor failed, so no score and no status (Gradescope
            # shows such a test neutral, not red); its points are named in the text instead.
            head = f"**{status_words(q.status)}** ({points_text(q.max_score, r)} points)"
            tests.append(
                {
                    "name": f"{question_label(q.id, q.title)} (graded by a person)",
                    "number": str(i),
                    "output": "\n".join([head, ""] + [f"- {line}" for line in q.lines]),
                    "output_format": "md",
                    "visibility": VISIBILITY[level],
                }
            )
            continue
        head = f"**{status_words(q.status, q.carried_forward)}**, {points_text(q.score, r)}/{points_text(q.max_score, r)} points"
        tests.append(
            {
                "name": question_label(q.id, q.title),
                "number": str(i),
                "score": float(rounded(q.score, r)),
                "max_score": float(rounded(q.max_score, r)),
                "status": "passed" if question_passed(q) else "failed",
                "output": "\n".join([head, ""] + [f"- {line}" for line in q.lines]),
                "output_format": "md",
                "visibility": VISIBILITY[level],
            }
        )
    lines = [
        f"**{card.submission}**: {SUBMISSION_WORDS.get(card.status, card.status)}, "
        f"{points_text(card.score, r)}/{points_text(card.max_score, r)} points."
    ]
    if card.reason:
        lines += ["", card.reason]
    if card.late is not None:
        lines += ["", f"Late: {card.late_line(r)}"]
    errors = error_lines(card)
    if errors:
        lines += ["", "Errors in the notebook:"] + [f"- {e}" for e in errors]
    return {
        "score": float(rounded(card.score, r)),
        "execution_time": float(card.execution.time or 0.0),
        "output": "\n".join(lines),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def failure_results(message: str, assignment: Assignment | None = None) -> dict[str, Any]:
    """Results for a submission that could not be graded at all (no notebook, a broken setup)."""
    tests = []
    if assignment is not None:
        for i, q in enumerate(assignment.questions, 1):
            tests.append(
                {
                    "name": question_label(q.id, q.title),
                    "number": str(i),
                    "score": 0.0,
                    "max_score": float(q.points),
                    "status": "failed",
                    "output": "Not graded: see the message above.",
                    "output_format": "md",
                    "visibility": "visible",
                }
            )
    return {
        "score": 0.0,
        "execution_time": 0.0,
        "output": message,
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
