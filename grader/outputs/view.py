"""What a student may see of a scorecard, as configured in the ``scorecard:`` section.

Feedback documents (Markdown, HTML, the GitHub Classroom messages) are rendered from a ``View``,
never from the Scorecard directly, so one function decides visibility:

- a question whose visibility is ``hidden``, or ``after_due`` before the due date, is listed with
  its points available but without its status, score or feedback;
- while any question is withheld, the total shown is over the questions shown, and says so;
- hidden *checks* are already pass/fail only in the scorecard (grader.judge.checks), and expected
  values appear only where ``show_expected`` allowed them when the submission was graded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.course.model import Assignment, ScorecardSettings
from grader.judge.scorecard import Scorecard, points_text

STATUS_WORDS = {
    "passed": "passed",
    "failed": "not yet correct",
    "partial": "partly correct",
    "unanswered": "not answered",
    "error": "raised an error",
    "withheld": "result not shown yet",
    "manual": "waiting for a person to grade it",
}
SUBMISSION_WORDS = {
    "graded": "graded",
    "invalid_notebook": "not a readable notebook",
    "timeout": "stopped: ran out of time",
    "crashed": "stopped: the notebook's process ended",
}


@dataclass(frozen=True)
class ShownQuestion:
    id: str
    title: str
    status: str  # a scorecard status, or "withheld"
    score: float | None  # None when withheld
    max_score: float
    feedback: tuple[str, ...]

    @property
    def withheld(self) -> bool:
        return self.status == "withheld"


@dataclass(frozen=True)
class View:
    assignment: str
    title: str
    submission: str
    student: str
    status: str
    reason: str
    score: float  # over the questions shown
    max_score: float  # over the questions shown
    complete: bool  # every question is shown, so score is the total
    questions: tuple[ShownQuestion, ...]
    errors: tuple[str, ...] = field(default=())  # notebook errors, one line each
    rounding: int = 2

    @property
    def who(self) -> str:
        """The student's id when it says more than the file name does."""
        return self.student if self.student and self.student != Path(self.submission).stem else ""

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0

    def points(self, x: float) -> str:
        return points_text(x, self.rounding)

    @property
    def score_line(self) -> str:
        text = f"{self.points(self.score)}/{self.points(self.max_score)}"
        if not self.complete:
            text += " on the questions shown so far"
        return text


def withheld_message(level: str, settings: ScorecardSettings) -> str:
    if level == "after_due":
        return f"The result of this question is shown after the due date ({settings.due})."
    return "The result of this question is not shown to students."


def student_view(card: Scorecard, assignment: Assignment | None, settings: ScorecardSettings,
                 now: datetime | None = None) -> View:
    """The scorecard as students may see it now."""
    questions = []
    for q in card.questions:
        try:
            question = assignment.question(q.id) if assignment is not None else None
        except KeyError:
            question = None
        if question is None or settings.shown(card.assignment, question, now):
            questions.append(ShownQuestion(q.id, q.title, q.status, q.score, q.max_score, tuple(q.feedback)))
        else:
            level = settings.question_visibility(card.assignment, question)
            questions.append(ShownQuestion(q.id, q.title, "withheld", None, q.max_score,
                                           (withheld_message(level, settings),)))
    shown = [q for q in questions if not q.withheld]
    return View(
        assignment=card.assignment,
        title=assignment.title if assignment is not None else card.assignment,
        submission=card.submission,
        student=card.student,
        status=card.status,
        reason=card.reason,
        score=sum(q.score or 0.0 for q in shown),
        max_score=sum(q.max_score for q in shown),
        complete=len(shown) == len(questions),
        questions=tuple(questions),
        errors=tuple(error_lines(card)),
        rounding=settings.rounding,
    )


def error_lines(card: Scorecard) -> list[str]:
    """The notebook's own errors, one line each, with the trimmed traceback's last frame."""
    out = []
    for e in card.execution.get("errors", []) or []:
        where = f" ({e['traceback'][-1]})" if e.get("traceback") else ""
        out.append(f"cell {e.get('cell')}: {e.get('error', e.get('status', ''))}{where}")
    return out
