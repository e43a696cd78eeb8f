"""pytest plugin: ``pytest --submission PATH [--assignment NAME]`` grades notebooks as test items.

One item per (submission, question). An item passes when the question earns full marks; a
failing item's report is the student's feedback. Scorecards are written when the session ends.
Registered through the ``pytest11`` entry point, so it works wherever the package is installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.batch.intake import collect, output_names
from grader.course import config as course_config
from grader.course.locate import find_config, pick_assignment
from grader.errors import GraderError
from grader.judge.scorecard import QuestionResult, Scorecard
from grader.outputs.yaml import write_yaml

STATE = pytest.StashKey["GradingState"]()

HELP = {
    "submission": "grade this notebook or folder of notebooks (repeatable)",
    "assignment": "assignment name in the course file (default: inferred)",
    "grader_config": "course file (default: config.yaml here or above)",
    "scorecard_dir": "folder for the scorecards written at the end (default: scorecards)",
}


class GradingState:
    def __init__(self, course: course_config.Course, assignment: course_config.Assignment,
                 submissions: list[Path], out: Path):
        from grader.judge.grading import Grader

        self.course, self.assignment, self.out = course, assignment, out
        self.submissions = {p.resolve(): p for p in submissions}
        self.names = output_names(submissions)
        self.grader = Grader(course)
        self.cards: dict[Path, Scorecard] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grader", "notebook grading")
    group.addoption("--submission", action="append", default=[], help=HELP["submission"])
    group.addoption("--assignment", default=None, help=HELP["assignment"])
    group.addoption("--grader-config", default=None, help=HELP["grader_config"])
    group.addoption("--scorecard-dir", default="scorecards", help=HELP["scorecard_dir"])


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("submission")
    if not given:
        return
    try:
        course = course_config.load(find_config(config.getoption("grader_config")))
        paths = collect([Path(p) for p in given])
        assignment = pick_assignment(course, config.getoption("assignment"), paths)
    except GraderError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = GradingState(course, assignment, paths, Path(config.getoption("scorecard_dir")))
    # Collect the submissions instead of the project's own tests.
    config.args[:] = [str(p) for p in paths]


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE, None)
    if state is None:
        return None
    from grader.run import sandbox

    found = getattr(state.grader.executor, "features", None) or sandbox.features()
    lines = [
        f"grader: {state.course.file} · assignment {state.assignment.name} · "
        f"{len(state.submissions)} submission(s) · executor {state.grader.executor.name}",
        f"grader sandbox: {found.describe()}",
    ]
    lines += [f"grader sandbox, not enforced here: {m}" for m in found.missing()]
    return lines


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(STATE, None)
    if state is not None and file_path.resolve() in state.submissions:
        return SubmissionFile.from_parent(parent, path=file_path)
    return None


class QuestionNotEarned(Exception):
    """A question did not earn full marks; carries its result for the report."""

    def __init__(self, result: QuestionResult):
        super().__init__(result.id)
        self.result = result


class SubmissionFile(pytest.File):
    def collect(self):
        state: GradingState = self.config.stash[STATE]
        original = state.submissions[self.path.resolve()]
        try:
            card = state.grader.grade(state.assignment, original)
        except GraderError as exc:
            raise pytest.UsageError(str(exc)) from None
        state.cards[original] = card
        for q in card.questions:
            yield QuestionItem.from_parent(self, name=q.id, result=q, card=card)


class QuestionItem(pytest.Item):
    def __init__(self, *, result: QuestionResult, card: Scorecard, **kwargs):
        super().__init__(**kwargs)
        self.result, self.card = result, card
        self.user_properties.append(("score", result.score))
        self.user_properties.append(("max_score", result.max_score))

    def runtest(self) -> None:
        if self.result.status != "passed":
            raise QuestionNotEarned(self.result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, QuestionNotEarned):
            r = excinfo.value.result
            head = f"{r.title}: {r.status}, {r.score:g}/{r.max_score:g} points"
            if self.card.status != "graded":
                head += f" (notebook {self.card.status}: {self.card.reason})"
            return "\n".join([head] + [f"  - {line}" for line in r.feedback])
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"question {self.result.id}: {self.result.title}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    for path, card in state.cards.items():
        write_yaml(card, state.out / f"{state.names[path]}.yaml", state.course.scorecard.rounding)
