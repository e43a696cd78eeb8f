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

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.course.model import Assignment, ScorecardSettings
from grader.judge import wording
from grader.judge.scorecard import Scorecard, points_text
from grader.vocab import FeedbackKind

STATUS_WORDS = {
    "passed": "passed",
    "failed": "not yet correct",
    "partial": "partly correct",
    "unanswered": "not answered",
    "error": "raised an error",
    "withheld": "result not shown yet",
    "manual": "waiting for a person to grade it",
    "graded": "graded by a person",
}
SUBMISSION_WORDS = {
    "graded": "graded",
    "invalid_notebook": "not a readable notebook",
    "timeout": "stopped: ran out of time",
    "crashed": "stopped: the notebook's process ended",
    "over_budget": "stopped: too costly for the grader to analyse",
}


def status_words(status: str, carried_forward: Sequence[str] = ()) -> str:
    """A question's status as students read it; a value right given an earlier mistake says so."""
    words = STATUS_WORDS.get(status, status)
    return f"{words} (error carried forward)" if carried_forward and status != "withheld" else words


@dataclass(frozen=True)
class ShownQuestion:
    id: str
    title: str
    status: str  # a scorecard status, or "withheld"
    score: float | None  # None when withheld
    max_score: float
    feedback: tuple[str, ...]
    carried_forward: tuple[str, ...] = ()  # the questions where the mistake it is right given is
    # A question graded by a person: what its answer's code drew in the grader's run (None: not taken).
    figures: tuple[str, ...] | None = None
    figures_left_out: int = 0

    @property
    def withheld(self) -> bool:
        return self.status == "withheld"

    @property
    def status_text(self) -> str:
        return status_words(self.status, self.carried_forward)


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
    late: str = ""  # the late policy's line ("" when none applied); ``score`` is after it

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


# An id a tool generated for a question (``cell-512e08e2a1f4c3d0``): shown only where the question has no title.
_GENERATED_ID = re.compile(r"cell-?[0-9a-f]{8,}_*")


def label_parts(qid: str, title: str) -> tuple[str, str]:
    """What names a question to a reader, (id, title), either possibly ``""``: both, unless the title
    only repeats the id or the id is a generated one the title stands for."""
    if not title or title == qid:
        return qid, ""
    if _GENERATED_ID.fullmatch(qid):
        return "", title
    return qid, title


def question_label(qid: str, title: str) -> str:
    """``q2: Scaled scores``, or one of the two alone (``label_parts``)."""
    return ": ".join(part for part in label_parts(qid, title) if part)


def withheld_message(level: str, settings: ScorecardSettings) -> str:
    if level == "after_due":
        return f"The result of this question is shown after the due date ({settings.due})."
    return "The result of this question is not shown to students."


def student_view(
    card: Scorecard, assignment: Assignment | None, settings: ScorecardSettings, now: datetime | None = None
) -> View:
    """The scorecard as students may see it now."""
    questions = []
    withheld = set()
    for q in card.questions:
        try:
            question = assignment.question(q.id) if assignment is not None else None
        except KeyError:
            continue
        if question is not None and not settings.shown(card.assignment, question, now):
            withheld.add(q.id)
    for q in card.questions:
        try:
            question = assignment.question(q.id) if assignment is not None else None
        except KeyError:
            question = None
        if question is None or settings.shown(card.assignment, question, now):
            lines, carried = q.feedback, tuple(q.carried_forward)
            if withheld & set(carried):
                # Carried forward from a question whose result is not shown yet: saying where the
                # mistake is would show that result.
                lines = tuple(f for f in lines if f.kind != FeedbackKind.CARRIED) or (wording.withheld_carried(),)
                carried = ()
            feedback = tuple(f.text for f in lines)
            drawn = q.answer.figures if q.answer is not None else None
            left_out = q.answer.figures_left_out if q.answer is not None else 0
            questions.append(
                ShownQuestion(q.id, q.title, q.status, q.score, q.max_score, feedback, carried, drawn, left_out)
            )
        else:
            level = settings.question_visibility(card.assignment, question)
            questions.append(
                ShownQuestion(q.id, q.title, "withheld", None, q.max_score, (withheld_message(level, settings),))
            )
    shown = [q for q in questions if not q.withheld]
    taken = card.earned - card.score if card.late is not None else 0.0
    return View(
        assignment=card.assignment,
        title=assignment.title if assignment is not None else card.assignment,
        submission=card.submission,
        student=card.student,
        status=card.status,
        reason=card.reason,
        score=max(0.0, sum(q.score or 0.0 for q in shown) - taken),
        max_score=sum(q.max_score for q in shown),
        complete=len(shown) == len(questions),
        questions=tuple(questions),
        errors=tuple(error_lines(card)),
        rounding=settings.rounding,
        late=card.late_line(settings.rounding),
    )


def error_lines(card: Scorecard) -> list[str]:
    """The notebook's own errors, one line each, with the trimmed traceback's last frame."""
    out = []
    alike: dict[str, list[int]] = {}  # a blank left in several cells, nothing else following from it: one line
    for e in card.execution.cell_errors:
        if (
            e.status == "blank"
            and e.error.startswith(wording.STILL_HAS)
            and not (e.blocked_cells or e.blocked_questions)
        ):
            alike.setdefault(e.error, []).append(e.cell)
    said: set[str] = set()
    for e in card.execution.cell_errors:
        cells = alike.get(e.error, []) if e.status == "blank" else []
        if len(cells) > 1 and e.cell in cells:
            if e.error not in said:
                said.add(e.error)
                out.append(wording.still_have(_numbers(cells), e.error))
            continue
        where = f" ({e.traceback[-1]})" if e.traceback else ""
        line = f"cell {e.cell}: {e.error or e.status}{where}"
        # Errors that only follow from this one are not listed one by one: what they stopped is.
        blocked_cells = list(e.blocked_cells)
        if blocked_cells:
            line += f"; cell{'s' if len(blocked_cells) > 1 else ''} {_numbers(blocked_cells)} then failed because of it"
        questions = e.blocked_questions
        if questions:
            line += f"; it leaves question{'s' if len(questions) > 1 else ''} {', '.join(questions)} without a value"
        out.append(line)
    return out


def _numbers(cells: list[int]) -> str:
    """``8–13, 15, 16``: cell numbers with runs shortened."""
    parts: list[str] = []
    start = prev = cells[0]
    for n in [*cells[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}, {prev}" if prev == start + 1 else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)
