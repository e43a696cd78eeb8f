"""An import never leaves a broken course: before anything is written into the course, the
imported assignments are written into a staging copy of it and graded there.

The solution must pass every test it brings (nbgrader's test cells, otter's test cases). When it
does not, ``grader import`` names each failing test (the question, the test's line and what went
wrong), writes nothing, and offers ``--keep-failing-tests``: those questions are then imported as
questions a person grades, with their points, and the rest as usual. What else ``grader validate``
would say of the staged course (a skeleton that earns points) is reported with the import.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grader.authoring import importing
from grader.authoring.importing import Imported
from grader.authoring.requirements import versions_ran
from grader.authoring.validate import validate
from grader.course import config
from grader.errors import SolutionError, UsageError
from grader.judge import verdicts as v
from grader.judge import wording
from grader.judge.grading import Grader
from grader.notebook.read import SKIP_TAG
from grader.vocab import QuestionStatus, SubmissionStatus

_RELEASED_FAILS = re.compile(r"^question (\S+) is (?:failed|error) in the skeleton, not unanswered")
_RELEASED_PASSES = re.compile(r"^question (\S+) is (?:passed|partial) in the skeleton, not unanswered")


@dataclass(frozen=True)
class FailingTest:
    """A test the solution does not pass: where it is and what its verdict says."""

    assignment: str
    question: str
    line: int  # in the test, 0 when unknown
    code: str  # that line
    why: tuple[str, ...]  # the verdict's lines, as a student would read them

    def describe(self) -> str:
        where = f", line {self.line} `{self.code}`" if self.line and self.code else ""
        return f"{self.assignment}, question {self.question}{where}: {' '.join(self.why) or 'it does not pass'}"


@dataclass(frozen=True)
class Staged:
    failing: tuple[FailingTest, ...]
    problems: tuple[str, ...]  # the rest of what ``grader validate`` says of the staged course


def _failing(item: Imported, card: Any, course: Any) -> list[FailingTest]:
    out = []
    for q in card.questions:
        if q.status in (QuestionStatus.PASSED, QuestionStatus.MANUAL):
            continue
        for check in q.checks:
            for reason in check.reasons:
                if isinstance(reason, v.TestFailed):
                    source = next(c.target for c in course.assignment(item.name).checks if c.id == check.id)
                    lines = source.splitlines()
                    code = lines[reason.line - 1].strip() if 0 < reason.line <= len(lines) else ""
                    hidden = next(c.hidden for c in course.assignment(item.name).checks if c.id == check.id)
                    # The instructor sees what a hidden test found, which a student is never told.
                    why = tuple(wording.finding(f) for f in reason.findings) if hidden else tuple(q.lines)
                    out.append(FailingTest(item.name, q.id, reason.line, code[:100], why))
                    break
            else:
                continue
            break
    return out


def stage(items: list[Imported], config_path: Path, *, course_name: str) -> Staged:
    """Write the assignments into a staging copy of the course (its settings, none of its other
    assignments), grade each solution there and validate it. A file that cannot be written there
    (a full disk) is a UsageError naming it: nothing is written into the course."""
    try:
        return _stage(items, config_path, course_name=course_name)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise UsageError(
            f"the import could not be checked: {exc.strerror or exc}{where}; nothing was written"
        ) from None


def _stage(items: list[Imported], config_path: Path, *, course_name: str) -> Staged:
    failing: list[FailingTest] = []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="grader-import-") as tmp:
        staged = Path(tmp) / "config.yaml"
        if config_path.is_file():
            existing = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
            if isinstance(existing, dict):
                settings = {k: val for k, val in existing.items() if k != "assignments"}
                staged.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
        importing.write(items, staged, course_name=course_name)
        course = config.load(staged)
        grader = Grader(course)
        for item in items:
            assignment = course.assignment(item.name)
            try:
                card = grader.grade(assignment, assignment.solution)
            except SolutionError as exc:  # with the versions of the libraries it ran with, as facts
                sources = [c.source for c in item.notebook.cells if c.cell_type == "code"]
                told = SolutionError(f"{exc}{versions_ran(exc.ename, sources, item.requirements)}")
                told.ename = exc.ename
                raise told from None
            if card.status != SubmissionStatus.GRADED:
                problems.append(f"{item.name}: the solution's run ended {card.status}: {card.reason}")
                continue
            found = _failing(item, card, course)
            failing.extend(found)
            named = {f"the solution does not pass question {f.question}" for f in found}
            said = [p for p in validate(course, assignment, grader) if not any(p.startswith(n) for n in named)]
            given = [m.group(1) for p in said if (m := _RELEASED_PASSES.match(p))]
            if given:
                # The release's given code already answers these questions (``answer_1a = "B"`` above
                # the solution): every notebook earns them in the course's own tool, and here too.
                _given_away(item, given)
                importing.write(items, staged, course_name=course_name, force=True)
                course = config.load(staged)
                grader = Grader(course)
                assignment = course.assignment(item.name)
                said = [p for p in validate(course, assignment, grader) if not any(p.startswith(n) for n in named)]
            for p in said:
                m = _RELEASED_FAILS.match(p)
                if m and not any(x.startswith("the skeleton scores") for x in said):
                    # The released notebook runs and fails the test (``ans = None`` before the answer):
                    # 0 points, as the course's own tool gives it; not a broken course, and written so
                    # that ``grader validate`` says the same (``skeleton_fails``).
                    for q in item.questions:
                        if q["id"] == m.group(1):
                            q["skeleton_fails"] = True
                    item.notes.append(
                        f"{item.source.name}: question {m.group(1)}: the released notebook fails its test rather "
                        "than leaving it unanswered (it holds a placeholder value before the answer); it scores "
                        "0 there, as in the course's own tool"
                    )
                else:
                    problems.append(f"{item.name}: {p}")
    return Staged(tuple(failing), tuple(problems))


def _given_away(item: Imported, ids: list[str]) -> None:
    for q in item.questions:
        if q["id"] in ids:
            q["skeleton_passes"] = True
            item.notes.append(
                f"{item.source.name}: question {q['id']}: the released notebook already passes its tests (its "
                "given code holds an answer they accept), so every notebook earns its points, as in the course's "
                "own tool; change the release or the test if it should not"
            )


def keep_for_a_person(items: list[Imported], failing: tuple[FailingTest, ...]) -> None:
    """The questions whose test the solution fails, as questions a person grades (their points kept)."""
    for item in items:
        ids = {f.question for f in failing if f.assignment == item.name}
        for i, q in enumerate(item.questions):
            if q["id"] in ids:
                # The test's own cell, which ran in place as the test, is the answer a person reads;
                # it is not run when grading (what it raises is no error of the student's notebook).
                places = {c.get("at_cell") for c in q.get("checks", []) if c.get("at_cell")}
                for cell in item.notebook.cells:
                    if cell.get("id") in places and "locked" in cell.get("metadata", {}).get("tags", []):
                        importing.answer(cell, q["id"])
                        tags = cell.metadata["tags"]
                        if SKIP_TAG not in tags:
                            cell.metadata["tags"] = [*tags, SKIP_TAG]
                item.questions[i] = {
                    "id": q["id"],
                    "title": f"{q['id']} (its test fails on the solution)",
                    "points": q["points"],
                    "manual": True,
                }
                item.notes.append(
                    f"question {q['id']}: its test fails on the solution; kept for a person (--keep-failing-tests)"
                )
