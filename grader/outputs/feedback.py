"""A question's result as a test outcome: whether it passes, and the failure text a student reads.

The pytest plugin (a failing item's report) and the JUnit writer (a ``<failure>``'s text) both
take their wording from here, so a test report and the JUnit file cannot drift apart.
"""

from __future__ import annotations

from grader.judge.scorecard import QuestionResult, Scorecard
from grader.vocab import QuestionStatus


def question_passed(result: QuestionResult) -> bool:
    """A question is a passing test only when it earns full marks; partial credit is a failure.
    A person's grade passes when it gives every point."""
    if result.status == QuestionStatus.GRADED:
        return result.score >= result.max_score - 1e-9
    return result.status == QuestionStatus.PASSED


def waiting_for_person(result: QuestionResult) -> bool:
    """A question graded by a person (``manual``): neither passed nor failed yet, a skipped test."""
    return result.status == "manual"


def failure_text(result: QuestionResult, card: Scorecard) -> str:
    """The question's title, status and points, the notebook's status when it was not graded
    normally, then one indented line per feedback line."""
    status = f"{result.status} (error carried forward)" if result.carried_forward else str(result.status)
    head = f"{result.title}: {status}, {result.score:g}/{result.max_score:g} points"
    if card.status != "graded":
        head += f" (notebook {card.status}: {card.reason})"
    return "\n".join([head] + [f"  - {line}" for line in result.lines])
