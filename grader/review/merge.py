"""A person's grades in the autograder's scorecards, as every output is written.

``grader grade`` keeps each card in the output folder's grade store and writes the outputs of the
card with the grades in it (``merge``), so grading again never puts a person's points back to 0;
``grader review`` writes them again when a person changes a grade (``rewrite``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import overload

import yaml

from grader.course.model import Assignment, Course
from grader.judge.scorecard import Scorecard
from grader.review.store import FILENAME, GradeStore
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
    _take_hand_edits(store, Path(out) / f"{name}.yaml", name, card)
    store.put_card(name, path, card)
    return store.apply(name, card)


def _take_hand_edits(store: GradeStore, previous: Path, name: str, card: Scorecard) -> None:
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
        if isinstance(points, int | float) and points != 0 and store.grade(name, q.id) is None:
            rows.append((name, q.id, float(points), None, q.answer.digest if q.answer is not None else ""))
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
        return self.store.apply(self.names[i], self.cards[i])


def rewrite(
    store: GradeStore,
    course: Course,
    assignment: Assignment,
    out: Path,
    formats: Sequence[str],
    names: Sequence[str] | None = None,
) -> list[Path]:
    """Write the outputs again with the grades as they are now: the named submissions' own files
    (default: every one) and the run's files (gradebook, report, ...)."""
    from grader import outputs

    subs = store.submissions()
    written: list[Path] = []
    for name, path in subs:
        if names is None or name in names:
            written += outputs.write_submission(
                path,
                name,
                store.apply(name, store.card(name)),
                course=course,
                assignment=assignment,
                out=out,
                formats=tuple(formats),
            )
    run = [(path, name, store.apply(name, store.card(name))) for name, path in subs]
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
