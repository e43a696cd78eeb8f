"""A person's grades in the autograder's scorecards, as every output is written.

``grader grade`` keeps each card in the output folder's grade store and writes the outputs of the
card with the grades in it (``merge``), so grading again never puts a person's points back to 0;
``grader review`` writes them again when a person changes a grade (``rewrite``). This is the one
place a person's grades are put into a card (``apply``); the store only stores them, keyed by the
submission's id.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, overload

import yaml

from grader.course import late
from grader.course.model import Assignment, Course
from grader.errors import RosterConflict
from grader.judge import manual
from grader.judge.scorecard import QuestionResult, Scorecard, with_late, with_questions
from grader.judge.verdicts import PersonGrade, RubricMark
from grader.notebook import answers
from grader.review.store import FILENAME, Grade, GradeStore, now
from grader.vocab import QuestionStatus


def has_manual(assignment: Assignment) -> bool:
    return any(q.manual for q in assignment.questions)


def store_for(out: Path, assignment: Assignment) -> GradeStore | None:
    """The output folder's grade store, where the assignment has questions graded by a person (or
    a store is there already). A store missing from a folder whose scorecards record grades given
    by a person is said, not passed over: those grades are rebuilt from the records as each
    submission is graded into it again (``merge``)."""
    path = Path(out) / FILENAME
    if not has_manual(assignment) and not path.exists():
        return None
    if not path.exists():
        held = recorded(Path(out))
        if held:
            print(
                f"grader: {path} is missing; the {held} grade(s) given by a person that the scorecards in "
                f"{out}/ record are rebuilt from those records.",
                file=sys.stderr,
                flush=True,
            )
    return GradeStore.in_folder(out)


def recorded(out: Path) -> int:
    """How many grades given by a person the scorecards (``NAME.yaml``) in ``out`` record."""
    n = 0
    for path in sorted(Path(out).glob("*.yaml")):
        for q in _questions(path).values():
            n += isinstance(q.get("graded_by"), dict) and q.get("status") == "graded"
    return n


def merge(store: GradeStore, out: Path, name: str, path: Path, card: Scorecard) -> Scorecard:
    """Keep the autograder's card, and return it with a person's grades. Points a person typed
    into the previous ``NAME.yaml`` by hand, for a question still waiting, become their grade."""
    sid = card.id or name
    store.put_card(sid, name, path, card)
    take_records(store, Path(out) / f"{name}.yaml", sid, card)
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


def with_pick(store: GradeStore, id: str, q: QuestionResult) -> QuestionResult:
    """A question the autograder found no answer to, with the cells a person picked as its answer."""
    if q.answer is not None and q.answer.found_by != answers.FoundBy.PERSON:
        return q
    chosen = store.picked(id, q.id)
    s = store.submission(id) if chosen else None
    answer = answers.picked(answers.read_cells(s.path), chosen) if s is not None else None
    return replace(q, answer=answer)


def apply(store: GradeStore, id: str, card: Scorecard) -> Scorecard:
    """The card with a person's grades in place of the questions waiting for them (and, where the
    autograder found no answer, the cells the person picked as it)."""
    questions: list[QuestionResult] = []
    for q in card.questions:
        if q.status in (QuestionStatus.MANUAL, QuestionStatus.GRADED):
            q = with_pick(store, id, q)
            grade = store.grade(id, q.id)
            digest = q.answer.digest if q.answer is not None else ""
            if grade is None:
                q = manual.awaiting(q, review_again=False) if q.status == QuestionStatus.GRADED else q
            elif grade.digest != digest:
                q = manual.awaiting(q, review_again=True)
            else:
                q = manual.graded(q, person_grade(store, grade, q.max_score))
        questions.append(q)
    return with_waiver(store, id, with_questions(card, questions))


WAIVER = "late_waiver:"  # + a submission's id: a person's waiver of its late penalty, in the store's meta


def with_waiver(store: GradeStore, id: str, card: Scorecard) -> Scorecard:
    """The card with its late penalty waived, where a person waived it (``set_waiver``)."""
    w = store.meta(WAIVER + id) if card.late is not None else None
    if card.late is None or not isinstance(w, dict):
        return card
    return with_late(card, late.waive(card.late, str(w.get("by", "")), str(w.get("at", "")), str(w.get("reason", ""))))


def set_waiver(store: GradeStore, id: str, by: str, reason: str, waive: bool) -> None:
    """Record (or take back) a person's waiver of a submission's late penalty."""
    store.set_meta(WAIVER + id, {"by": by or "a person", "at": now(), "reason": reason} if waive else None)


def with_grades(store: GradeStore, id: str) -> Scorecard:
    """The stored card of a submission, with a person's grades."""
    return apply(store, id, store.card(id))


def _questions(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return {str(q["id"]): q for q in data["questions"] if isinstance(q, dict)}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError):
        return {}


def take_records(store: GradeStore, previous: Path, sid: str, card: Scorecard) -> int:
    """What the previous ``NAME.yaml`` of a submission holds that the store does not, taken in
    once: points a person typed into it by hand for a question still waiting (a grade, "edited in
    NAME.yaml"), and a grade it records (``graded_by``) that the store has lost. How many."""
    old = _questions(previous)
    rows = []
    restored = 0
    for q in card.questions:
        before = old.get(q.id)
        if q.status not in (QuestionStatus.MANUAL, QuestionStatus.GRADED) or not isinstance(before, dict):
            continue
        if store.grade(sid, q.id) is not None:
            continue
        digest = q.answer.digest if q.answer is not None else ""
        points = before.get("score")
        record = before.get("graded_by")
        if before.get("status") == "graded" and isinstance(record, dict):
            answer = before.get("answer")
            same = q.answer is not None and isinstance(answer, dict) and answer.get("text") == q.answer.text
            marks = [
                (str(m["text"]), float(m["points"]))
                for m in record.get("rubric") or []
                if isinstance(m, dict) and "text" in m and isinstance(m.get("points"), int | float)
            ]
            adjustment = record.get("adjustment", 0.0)
            store.restore(
                sid,
                q.id,
                marks=marks,
                adjustment=float(adjustment) if isinstance(adjustment, int | float) else 0.0,
                comment=str(record.get("comment") or ""),
                grader=str(record.get("grader") or previous.name),
                at=str(record.get("at") or ""),
                digest=digest if same or q.answer is None else "",
                source=previous.name,
            )
            restored += 1
        elif before.get("status") == "manual" and isinstance(points, int | float) and points != 0:
            rows.append((sid, q.id, float(points), None, digest))
    if rows:
        store.set_many(rows, grader=f"edited in {previous.name}")
    return restored + len(rows)


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

    mark = store.last_change()
    subs = store.submissions()
    for s in subs:  # points typed into a scorecard are taken in before it is written again
        if ids is None or s.id in ids:
            take_records(store, Path(out) / f"{s.name}.yaml", s.id, store.card(s.id))
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
    try:
        written += outputs.write_run(
            run,
            course=course,
            assignment=assignment,
            out=out,
            formats=tuple(formats),
            roster=Path(roster) if isinstance(roster, str) else None,
        )
    except RosterConflict:  # every other file is written, and holds every change up to ``mark``
        if ids is None:
            store.set_meta(WRITTEN, mark)
        raise
    if ids is None:
        store.set_meta(WRITTEN, mark)
    return written


WRITTEN = "outputs written through change"  # meta: the last change (``last_change``) every output holds


def behind(store: GradeStore) -> bool:
    """Whether a grade changed after the outputs were last written (a server killed before it wrote
    them, a disk that was full)."""
    through = store.meta(WRITTEN, 0)
    return store.last_change() > (through if isinstance(through, int) else 0)


def catch_up(
    store: GradeStore, course: Course, assignment: Assignment, out: Path, formats: Sequence[str]
) -> list[Path] | None:
    """Write again the outputs of every submission whose grade changed after the outputs were last
    written, and the run's files (the files written); ``None`` where they hold every change.
    The store's log says which changed, so nothing is missed whoever made the change (this page,
    another, an import) and whenever the last writer stopped. An ``OSError`` (a full disk) leaves
    the outputs as behind as they were, to be tried again."""
    through = store.meta(WRITTEN, 0)
    through = through if isinstance(through, int) else 0
    mark = store.last_change()
    if mark <= through:
        return None
    ids = store.changed_between(through, mark)
    try:
        written = rewrite(store, course, assignment, out, formats, ids=None if ids is None else sorted(ids))
    except RosterConflict:  # every other file is written
        store.set_meta(WRITTEN, mark)
        raise
    store.set_meta(WRITTEN, mark)
    return written


def formats_in(store: GradeStore, course: Course) -> tuple[str, ...]:
    """The formats the run wrote (kept in the store by ``grader grade``), or the course's."""
    found = store.meta("formats")
    if isinstance(found, list) and all(isinstance(f, str) for f in found):
        return tuple(found)
    return tuple(course.scorecard.formats)
