"""The result of grading one submission: the scorecard, a frozen record of frozen records.

A ``Scorecard`` is built once, by the code that grades, from the records that decide it (its
questions' verdicts, the run's summary), and never changed afterwards: a person's grade or any
later policy makes a new card from the old one (``dataclasses.replace``, ``with_questions``).
``grader.judge.document`` writes and reads it (JSON with a ``format_version``, every record kept);
every output format is a rendering of it, the YAML scorecard (``to_dict``) among them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from grader import __version__
from grader.course.late import Late
from grader.judge.verdicts import CheckReason, PersonGrade
from grader.notebook.answers import Answer
from grader.vocab import CheckStatus, FeedbackKind, QuestionStatus, StudentDataStatus, SubmissionStatus


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


@dataclass(frozen=True)
class Feedback:
    """One line of a question's feedback: its kind (what renderers choose by) and its text
    (``grader.judge.wording`` writes it)."""

    kind: FeedbackKind
    text: str


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict. ``reasons`` say why it did not simply pass, as records
    (``grader.judge.verdicts``); ``grader.judge.wording`` turns them into feedback."""

    id: str
    target: str
    status: CheckStatus
    score: float
    max_score: float
    reasons: tuple[CheckReason, ...] = ()
    hint: str = ""
    hidden: bool = False
    variants: int = 0  # how many variants the check was also run on
    carried_from: tuple[str, ...] = ()  # wrong upstream checks its value is right given
    blocked_by: int = 0  # the cell of the first error that left it without a value (0: none)
    follow_on: bool = False  # that error is in an earlier cell, not in the cell computing this value


@dataclass(frozen=True)
class QuestionResult:
    id: str
    title: str
    score: float
    max_score: float
    status: QuestionStatus
    feedback: tuple[Feedback, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    variants: int = 0
    # Error carried forward: the questions where the mistake is that this question's value is
    # right given (the root mistakes first); empty when it is not carried forward.
    carried_forward: tuple[str, ...] = ()
    # A question graded by a person: the cells that answer it (what the person reads), and the
    # person's grade once there is one.
    answer: Answer | None = None
    person: PersonGrade | None = None

    @property
    def lines(self) -> list[str]:
        """The feedback as students read it, line by line."""
        return [f.text for f in self.feedback]


def person_dict(q: QuestionResult) -> dict[str, Any]:
    """A question graded by a person, in the scorecard: its answer's cells and text, and who
    graded it, when, with which rubric items and comment."""
    out: dict[str, Any] = {}
    if q.answer is not None:
        out["answer"] = {"cells": list(q.answer.cells), "found_by": str(q.answer.found_by), "text": q.answer.text}
    if q.person is not None:
        g = q.person
        out["graded_by"] = {
            "grader": g.grader,
            "at": g.at,
            "rubric": [{"text": m.text, "points": m.points} for m in g.marks],
            **({"adjustment": g.adjustment} if g.adjustment else {}),
            "comment": g.comment,
        }
    return out


@dataclass(frozen=True)
class CellError:
    """A notebook error as the scorecard lists it: by its first cause, with the cells and
    questions that only failed because of it."""

    cell: int
    status: str  # a ``CellStatus`` value, or "blank" for a cell that still has a blank
    error: str = ""  # ``ValueError: ...`` as Python prints it, or the blank's note
    traceback: tuple[str, ...] = ()
    blocked_cells: tuple[int, ...] = ()
    blocked_questions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cell": self.cell, "status": self.status, "error": self.error}
        if self.traceback:
            out["traceback"] = list(self.traceback)
        if self.blocked_cells:
            out["blocked_cells"] = list(self.blocked_cells)
        if self.blocked_questions:
            out["blocked_questions"] = list(self.blocked_questions)
        return out


@dataclass(frozen=True)
class Execution:
    """How the notebook ran, as the scorecard reports it. A field left None is not reported (a
    notebook that could not be read ran no cells; a crashed grading has no time)."""

    executor: str
    cells_run: int | None = None
    cells_skipped: int | None = None
    errors: tuple[CellError, ...] | None = None
    time: float | None = None
    grader_cpu: float | None = None
    output_truncated_in_cells: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    attempts: int | None = None
    sandbox: tuple[str, ...] | None = None  # the protections the student process had
    sandbox_not_enforced: tuple[str, ...] | None = None
    variant_inputs: str | None = None  # whose variants the submission was checked on
    internal_error: bool = False  # the grader failed on it (such a card is not stored)

    @property
    def cell_errors(self) -> tuple[CellError, ...]:
        return self.errors or ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"executor": self.executor}
        for name in ("cells_run", "cells_skipped"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.errors is not None:
            out["errors"] = [e.to_dict() for e in self.errors]
        for name in ("time", "grader_cpu"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.output_truncated_in_cells:
            out["output_truncated_in_cells"] = list(self.output_truncated_in_cells)
        if self.notes:
            out["notes"] = list(self.notes)
        if self.attempts is not None:
            out["attempts"] = self.attempts
        for name in ("sandbox", "sandbox_not_enforced"):
            if getattr(self, name) is not None:
                out[name] = list(getattr(self, name))
        if self.variant_inputs is not None:
            out["variant_inputs"] = self.variant_inputs
        if self.internal_error:
            out["internal_error"] = True
        return out


@dataclass(frozen=True)
class StudentData:
    """Whose data a per-student submission holds and whose it was graded on (grader.judge.per_student).

    ``status``: own (a valid stamp naming who handed it in, or nobody else is known), classmate (a
    valid stamp naming another student), edited (a stamp whose signature does not match its id),
    generic (no stamp: the skeleton anyone could download), other_assignment. ``notebook_id``: the
    id the notebook claims ("" without one); ``expected``: who the grader knows handed it in (""
    when nothing says); ``graded_on``: whose inputs the solution ran on ("" when nobody's: then no
    question is paid); ``own_data``: whether the notebook's run held those inputs (a notebook with
    someone else's data earns nothing for an answer that depends on them)."""

    status: StudentDataStatus
    notebook_id: str = ""
    expected: str = ""
    graded_on: str = ""
    made_for: str = ""  # the assignment the notebook was made for (other_assignment)
    own_data: bool = True  # whether its run held the inputs of ``graded_on`` (else nothing that depends on them pays)
    not_on_roster: bool = False  # who handed it in is not among the students the grader has data for

    @property
    def flagged(self) -> bool:
        return self.status != StudentDataStatus.OWN or self.not_on_roster

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": str(self.status), "notebook_id": self.notebook_id, "expected": self.expected}
        out.update(graded_on=self.graded_on, own_data=self.own_data)
        if self.not_on_roster:
            out["not_on_roster"] = True
        return {**out, "made_for": self.made_for} if self.made_for else out


@dataclass(frozen=True)
class Origin:
    """Where an LMS's download says a submission came from (``grader.batch.lms``): the LMS, its id of
    the student (Canvas's user id, Moodle's participant id, Gradescope's student id), the student's
    name as the download writes it, the file's name there and the prefix the LMS named it by
    (feedback files going back are named by it), the LMS's late marker and time, the files of the
    same student not graded (an earlier one, or a group's other members)."""

    lms: str
    user_id: str
    name: str = ""
    file: str = ""
    prefix: str = ""
    marked_late: bool = False
    submitted_at: str = ""  # ISO 8601 with its zone, as the LMS gives it; "" when it does not
    email: str = ""
    earlier: tuple[str, ...] = ()
    others: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"lms": self.lms, "user_id": self.user_id, "name": self.name, "file": self.file}
        if self.marked_late:
            out["marked_late"] = True
        if self.submitted_at:
            out["submitted_at"] = self.submitted_at
        if self.earlier:
            out["not_graded"] = list(self.earlier)
        return out


@dataclass(frozen=True)
class Scorecard:
    """One submission's result. ``submission`` is its file's name as students see it; ``id`` its
    identity, derived at intake and the key machines use (empty where the caller has none);
    ``student`` who handed it in, as the layout says."""

    assignment: str
    submission: str
    sha256: str
    status: SubmissionStatus
    score: float
    max_score: float
    reason: str = ""
    questions: tuple[QuestionResult, ...] = ()
    execution: Execution = field(default_factory=lambda: Execution(executor=""))
    student: str = ""
    id: str = ""  # the submission's identity, from where it came (``grader.batch.intake``)
    grader_version: str = __version__
    student_data: StudentData | None = None  # a per-student assignment's: whose data it holds
    origin: Origin | None = None  # what an LMS's download said of it
    late: Late | None = None  # the late policy applied (``score`` is after it; ``with_late``)

    def __post_init__(self) -> None:
        # Part of building it: a list of questions is kept as a tuple, so no one can change it later.
        if not isinstance(self.questions, tuple):
            object.__setattr__(self, "questions", tuple(self.questions))

    @property
    def earned(self) -> float:
        """The points of the questions, before a late penalty."""
        return sum(q.score for q in self.questions) if self.questions else self.score

    def late_line(self, rounding: int = 2) -> str:
        """The late policy's sentence for this card ("" when no policy applied)."""
        return self.late.line(self.earned, self.max_score, rounding) if self.late is not None else ""

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
        if self.id:
            out["id"] = self.id
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
                        "feedback": list(q.lines),
                        **person_dict(q),
                    }
                    for q in self.questions
                ],
                **({"origin": self.origin.to_dict()} if self.origin is not None else {}),
                **({"late": self.late_dict(rounding)} if self.late is not None else {}),
                "execution": self.execution.to_dict(),
                "grader_version": self.grader_version,
            }
        )
        if not self.reason:
            del out["reason"]
        if self.student_data is not None:
            out["student_data"] = self.student_data.to_dict()
        return out

    def late_dict(self, rounding: int = 2) -> dict[str, Any]:
        late = self.late
        assert late is not None
        out: dict[str, Any] = {
            "line": self.late_line(rounding),
            "due": late.due,
            "late_by_seconds": round(late.late_by),
            "percent": late.percent if late.applies else 0,
            "points": rounded(late.deduction(self.earned, self.max_score), rounding),
        }
        if late.submitted_at:
            out["submitted_at"] = late.submitted_at
        if late.not_accepted:
            out["not_accepted"] = True
        if late.waived:
            out["waived"] = {"by": late.waived_by, "at": late.waived_at, "reason": late.waiver}
        return out


def with_questions(card: Scorecard, questions: Iterable[QuestionResult]) -> Scorecard:
    """A new card with these questions in place of the card's own, its score their sum (a person's
    grade, or any later verdict on a question, makes its card this way), less its late penalty."""
    questions = tuple(questions)
    earned = sum(q.score for q in questions)
    score = card.late.score_after(earned, card.max_score) if card.late is not None else earned
    return replace(card, questions=questions, score=score)


def with_late(card: Scorecard, late: Late | None) -> Scorecard:
    """A new card with this late policy's record (or none), its score the questions' points less the penalty."""
    earned = card.earned
    score = late.score_after(earned, card.max_score) if late is not None else earned
    return replace(card, late=late, score=score)
