"""The result of grading one submission, and its YAML form (the core scorecard).

Other formats (JSON, Markdown, HTML, Gradescope, ...) are renderers over ``Scorecard.to_dict()``;
none of them reaches into grading logic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader import __version__
from grader.vocab import CheckStatus, QuestionStatus, SubmissionStatus


def rounded(points: float, rounding: int = 2) -> int | float:
    """Points as scorecards carry them: rounded to ``rounding`` decimals, whole numbers as ints."""
    v = round(float(points), rounding)
    return int(v) if v == int(v) else v


def points_text(points: float, rounding: int = 2) -> str:
    """Points as people read them: ``3``, ``2.5``, ``0.33``."""
    v = round(float(points), rounding)
    if v == int(v):
        return str(int(v))
    return f"{v:.{rounding}f}".rstrip("0").rstrip(".")


@dataclass
class CheckResult:
    id: str
    target: str
    status: CheckStatus
    score: float
    max_score: float
    messages: list[str] = field(default_factory=list)
    hint: str = ""
    hidden: bool = False
    variants: int = 0  # how many variants the check was also run on
    carried_from: list[str] = field(default_factory=list)  # wrong upstream checks its value is right given
    blocked_by: int = 0  # the cell of the first error that left it without a value (0: none)
    follow_on: bool = False  # that error is in an earlier cell, not in the cell computing this value


@dataclass
class QuestionResult:
    id: str
    title: str
    score: float
    max_score: float
    status: QuestionStatus
    feedback: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    variants: int = 0
    # Error carried forward: the questions where the mistake is that this question's value is
    # right given (the root mistakes first); empty when it is not carried forward.
    carried_forward: list[str] = field(default_factory=list)


@dataclass
class Scorecard:
    assignment: str
    submission: str
    sha256: str
    status: SubmissionStatus
    score: float
    max_score: float
    reason: str = ""
    questions: list[QuestionResult] = field(default_factory=list)
    execution: dict[str, Any] = field(default_factory=dict)
    student: str = ""
    grader_version: str = __version__

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0

    def to_dict(self, rounding: int = 2) -> dict[str, Any]:
        def r(x: float) -> int | float:
            return rounded(x, rounding)

        out: dict[str, Any] = {
            "assignment": self.assignment,
            "submission": self.submission,
        }
        if self.student:
            out["student"] = self.student
        out.update(
            {
                "sha256": self.sha256,
                "status": str(self.status),
                "reason": self.reason,
                "score": r(self.score),
                "max_score": r(self.max_score),
                "questions": [
                    {
                        "id": q.id,
                        "title": q.title,
                        "score": r(q.score),
                        "max_score": r(q.max_score),
                        "status": str(q.status),
                        **({"variants": q.variants} if q.variants else {}),
                        **({"carried_forward": list(q.carried_forward)} if q.carried_forward else {}),
                        "feedback": list(q.feedback),
                    }
                    for q in self.questions
                ],
                "execution": self.execution,
                "grader_version": self.grader_version,
            }
        )
        if not self.reason:
            del out["reason"]
        return out
