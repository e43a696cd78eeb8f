"""Questions graded by a person (``manual: true``): their answers, and a person's grade in the scorecard.

The autograder gives such a question no points and no verdict of its own: it finds the cells that
answer it (``grader.notebook.answers``), puts them in the scorecard, and says it waits for a
person. A person's grade (``verdicts.PersonGrade``, stored by ``grader.review``) replaces that
waiting verdict in every output; ``graded`` and ``awaiting`` are the only ways it does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from grader.course.model import Assignment
from grader.judge import wording
from grader.judge.scorecard import QuestionResult
from grader.judge.verdicts import AwaitingPerson, PersonGrade
from grader.notebook import answers
from grader.vocab import QuestionStatus


@functools.lru_cache(maxsize=16)
def _given(path: Path, mtime: int) -> tuple[answers.NbCell, ...]:
    return tuple(answers.read_cells(path))


def given_cells(assignment: Assignment) -> tuple[answers.NbCell, ...]:
    """The cells a student starts from: the skeleton's, or the solution's where there is no skeleton."""
    for path in (assignment.skeleton, assignment.solution):
        try:
            return _given(path, path.stat().st_mtime_ns)
        except OSError:
            continue
    return ()


def manual_questions(assignment: Assignment) -> list[tuple[str, str]]:
    return [(q.id, q.title) for q in assignment.questions if q.manual]


def with_answers(assignment: Assignment, path: Path, questions: Sequence[QuestionResult]) -> list[QuestionResult]:
    """The questions, each one graded by a person carrying the cells that answer it."""
    manual = manual_questions(assignment)
    if not manual:
        return list(questions)
    found = answers.locate(answers.read_cells(path), given_cells(assignment), manual)
    out = []
    for q in questions:
        if q.status == QuestionStatus.MANUAL:
            a = found.get(q.id)
            q = replace(q, answer=a, feedback=(wording.manual(AwaitingPerson(untouched=a is not None and a.untouched)),))
        out.append(q)
    return out


def graded(q: QuestionResult, grade: PersonGrade) -> QuestionResult:
    """The question as a person graded it."""
    return replace(q, score=grade.points, status=QuestionStatus.GRADED, person=grade,
                   feedback=wording.person_grade(grade))


def awaiting(q: QuestionResult, *, review_again: bool) -> QuestionResult:
    """The question waiting for a person (again, when its answer changed since it was graded)."""
    untouched = q.answer is not None and q.answer.untouched
    return replace(q, score=0.0, status=QuestionStatus.MANUAL, person=None,
                   feedback=(wording.manual(AwaitingPerson(untouched=untouched, review_again=review_again)),))
