"""A person's grades in the autograder's scorecards, as every output is written.

``grader grade`` keeps each card in the output folder's grade store and writes the outputs of the
card with the grades in it (``merge``), so grading again never puts a person's points back to 0;
``grader review`` writes them again when a person changes a grade (``rewrite``). This is the one
place a person's grades are put into a card (``apply``); the store only stores them, keyed by the
submission's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import overload

import yaml

from grader.course.model import Assignment, Course
from grader.judge import manual
from grader.judge.scorecard import QuestionResult, Scorecard, with_questions
from grader.judge.verdicts import PersonGrade, RubricMark
from grader.review.store import FILENAME, Grade, GradeStore
from grader.vocab import QuestionStatus


def has_manual(assignment: Assignment) -> bool:
    return any(q.manual for q in assignment.questions)


def store_for(out: Path, assignment: Assignment) -> GradeStore | None:
    """The output folder's grade store, where the assignment has questions graded by a person (or
    a store is there already)."""
    if has_manual(assignment) or (Path(out) / FILENAME).exists():
        return GradeStore.in_folder(out)
    return None


def merge(store: GradeStore, out: Path, name: str, path: Path, card: Scorecard) -> Scorecard:
    """Keep the autograder's card, and return it with a person's grades. Points a person typed
    into the previous ``NAME.yaml`` by hand, for a question still waiting, become their grade."""
    sid = card.id or name
    store.put_card(sid, name, path, card)
    _take_hand_edits(store, Path(out) / f"{name}.yaml", sid, card)
    return apply(store, sid, card)


def person_grade(store: GradeStore, grade: Grade, max_points: float) -> PersonGrade:
    """A stored grade as a verdict: the rubric items applied, as they are now, and the free points."""
    items = {i.id: i for i in store.rubric(grade.question)}
    marks = tuple(RubricMark(items[i].text, items[i].points) for i in grade.items if i in items)
    raw = sum(m.points for m in marks) + grade.adjustment
    return PersonGrade(
        points=min(max(raw, 0.0), max_points),
        max_points=max_points,
        grader=grade.grader,
        at=grade.at,
        marks=marks,
        adjustment=grade.adjustment,
        comment=grade.comment,
    )


def apply(store: GradeStore, id: str, card: Scorecard) -> Scorecard:
    """The card with a person's grades in place of the questions waiting for them."""
    questions: list[QuestionResult] = []
    for q in card.questions:
        if q.status in (QuestionStatus.MANUAL, QuestionStatus.GRADED):
            grade = store.grade(id, q.id)
            digest = q.answer.digest if q.answer is not None else ""
            if grade is None:
                q = manual.awaiting(q, review_again=False) if q.status == QuestionStatus.GRADED else q
            elif grade.digest != digest:
                q = manual.awaiting(q, review_again=True)
            else:
                q = manual.graded(q, person_grade(store, grade, q.max_score))
        questions.append(q)
    return with_questions(card, questions)


def with_grades(store: GradeStore, id: str) -> Scorecard:
    """The stored card of a submission, with a person's grades."""
    return apply(store, id, store.card(id))


def _take_hand_edits(store: GradeStore, previous: Path, sid: str, card: Scorecard) -> None:
    try:
        data = yaml.safe_load(previous.read_text(encoding="utf-8"))
        old = {str(q["id"]): q for q in data["questions"]}
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return
    rows = []
    for q in card.questions:
        before = old.get(q.id)
        if q.status != QuestionStatus.MANUAL or not isinstance(before, dict) or before.get("status") != "manual":
            continue
        points = before.get("score")
        if isinstance(points, int | float) and points != 0 and store.grade(sid, q.id) is None:
            rows.append((sid, q.id, float(points), None, q.answer.digest if q.answer is not None else ""))
    if rows:
        store.set_many(rows, grader=f"edited in {previous.name}")


class WithGrades(Sequence[Scorecard]):
    """A run's cards, each read with a person's grades when asked for."""

    def __init__(self, cards: Sequence[Scorecard], names: Sequence[str], store: GradeStore):
        self.cards, self.names, self.store = cards, list(names), store

    def __len__(self) -> int:
        return len(self.cards)

    @overload
    def __getitem__(self, i: int) -> Scorecard: ...

    @overload
    def __getitem__(self, i: slice) -> list[Scorecard]: ...

    def __getitem__(self, i: int | slice) -> Scorecard | list[Scorecard]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        card = self.cards[i]
        return apply(self.store, card.id or self.names[i], card)


def rewrite(
    store: GradeStore,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: Sequence[str],
    ids: Sequence[str] | None = None,
) -> list[Path]:
    """Write the outputs again with the grades as they are now: the files of the submissions with
    these ids (default: every one) and the run's files (gradebook, report, ...)."""
    from grader import outputs

    subs = store.submissions()
    written: list[Path] = []
    for s in subs:
        if ids is None or s.id in ids:
            written += outputs.write_submission(
                s.path,
                s.name,
                with_grades(store, s.id),
                course=course,
                assignment=assignment,
                out=out,
                formats=tuple(formats),
            )
    run = [(s.path, s.name, with_grades(store, s.id)) for s in subs]
    roster = store.meta("roster")
    return written + outputs.write_run(
        run,
        course=course,
        assignment=assignment,
        out=out,
        formats=tuple(formats),
        roster=Path(roster) if isinstance(roster, str) else None,
    )


def formats_in(store: GradeStore, course: Course) -> tuple[str, ...]:
    """The formats the run wrote (kept in the store by ``grader grade``), or the course's."""
    found = store.meta("formats")
    if isinstance(found, list) and all(isinstance(f, str) for f in found):
        return tuple(found)
    return tuple(course.scorecard.formats)
