"""Questions graded by a person (``manual: true``): their answers, and a person's grade in the scorecard.

The autograder gives such a question no points and no verdict of its own: it finds the cells that
answer it (``grader.notebook.answers``), puts them in the scorecard, and says it waits for a
person. A person's grade (``verdicts.PersonGrade``, stored by ``grader.review``) replaces that
waiting verdict in every output; ``graded`` and ``awaiting`` are the only ways it does.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from grader.course.model import Assignment
from grader.judge import wording
from grader.judge.scorecard import QuestionResult
from grader.judge.verdicts import AwaitingPerson, LeftAsReleased, PersonGrade
from grader.names import figures_id
from grader.notebook import answers
from grader.run.job import Captured
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


def drawn_cells(assignment: Assignment, path: Path) -> dict[str, tuple[int, ...]]:
    """The code cells that answer each question graded by a person (its plot's code), by number:
    the grader's run takes the figures they draw (``jobs.figure_captures``)."""
    manual = manual_questions(assignment)
    if not manual:
        return {}
    cells = answers.read_cells(path)
    kinds = {c.index: c.kind for c in cells}
    found = answers.locate(cells, given_cells(assignment), manual)
    out = {qid: tuple(i for i in a.cells if kinds.get(i) == "code") for qid, a in found.items()}
    return {qid: cells_ for qid, cells_ in out.items() if cells_}


def figures_of(qid: str, captured: Mapping[str, Captured]) -> tuple[tuple[str, ...], int] | None:
    """The figures a question's cells drew in a run (base64 PNG images) and how many were left
    out; None where the run took none (no code to answer it, or the run ended before)."""
    got = captured.get(figures_id(qid))
    if got is None or got.value is None or got.value.kind != "list" or not got.value.data:
        return None
    items = [item.data for item in got.value.data if item.kind == "str"]
    if len(items) != len(got.value.data):
        return None
    *sent, left_out = items
    # The student's process sent them: only what is a PNG image in base64 is kept (a page puts it
    # in a ``data:`` URL, so nothing else may reach one), the rest counted as left out.
    images = tuple(i for i in sent if _is_png(i))
    return images, (int(left_out) if left_out.isdigit() else 0) + len(sent) - len(images)


_PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(text: str) -> bool:
    try:
        head = base64.b64decode(text[:16], validate=True)
    except (ValueError, binascii.Error):
        return False
    return head.startswith(_PNG) and all(c.isalnum() or c in "+/=" for c in text)


def with_figures(found: answers.Answer, qid: str, captured: Mapping[str, Captured]) -> answers.Answer:
    """The answer with the figures its cells drew in the grader's run, where it took them."""
    drawn = figures_of(qid, captured)
    if drawn is None:
        return found
    return replace(found, figures=drawn[0], figures_left_out=drawn[1])


def with_answers(
    assignment: Assignment,
    path: Path,
    questions: Sequence[QuestionResult],
    captured: Mapping[str, Captured] | None = None,
) -> list[QuestionResult]:
    """The questions, each one graded by a person carrying the cells that answer it (with the
    figures they drew, from ``captured``: the grader's run of the notebook)."""
    manual = manual_questions(assignment)
    if not manual:
        return list(questions)
    given = given_cells(assignment)
    found = answers.locate(answers.read_cells(path, assignment.answer_ids), given, manual)
    found = {qid: with_figures(a, qid, captured or {}) for qid, a in found.items()}
    zero = {q.id for q in assignment.questions if q.unchanged_scores_zero}
    out = []
    for q in questions:
        if q.status == QuestionStatus.MANUAL:
            a = found.get(q.id)
            released = [c for c in given if c.question == q.id]
            if q.id in zero and a is not None and _same_text(a.text, released, assignment.blank_released_as):
                markdown = bool(released) and all(c.kind == "markdown" for c in released)
                q = replace(
                    q,
                    answer=a,
                    score=0.0,
                    status=QuestionStatus.UNANSWERED,
                    feedback=(wording.left_as_released(LeftAsReleased(markdown=markdown)),),
                )
            else:
                q = replace(
                    q, answer=a, feedback=(wording.manual(AwaitingPerson(untouched=a is not None and a.untouched)),)
                )
        out.append(q)
    return out


_BLANK_LINE = re.compile(r"^(\s*)\?\s*$", re.M)


def _same_text(text: str, released: list[answers.NbCell], blank_released_as: str = "") -> bool:
    """The answer holds exactly what the released notebook holds there (the skeleton's blank ``?``,
    or ``blank_released_as`` in its place, where students got their notebooks from elsewhere),
    whitespace aside."""
    given = "\n\n".join(c.source.strip() for c in released if c.source.strip())
    if not blank_released_as:
        return bool(released) and text.split() == given.split()
    stub = blank_released_as.splitlines()
    stubbed = _BLANK_LINE.sub(lambda m: "\n".join(m.group(1) + line for line in stub), given)
    return bool(released) and text.split() in (given.split(), stubbed.split())


def graded(q: QuestionResult, grade: PersonGrade) -> QuestionResult:
    """The question as a person graded it."""
    return replace(
        q, score=grade.points, status=QuestionStatus.GRADED, person=grade, feedback=wording.person_grade(grade)
    )


def awaiting(q: QuestionResult, *, review_again: bool) -> QuestionResult:
    """The question waiting for a person (again, when its answer changed since it was graded)."""
    untouched = q.answer is not None and q.answer.untouched
    return replace(
        q,
        score=0.0,
        status=QuestionStatus.MANUAL,
        person=None,
        feedback=(wording.manual(AwaitingPerson(untouched=untouched, review_again=review_again)),),
    )
