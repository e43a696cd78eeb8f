"""pytest plugin: ``pytest --submission PATH [--assignment NAME]`` grades notebooks as test items.

One item per (submission, question). The items come from the assignment's questions in the course
file, so collecting runs nothing: the first item of a submission that runs grades the notebook and
its other items reuse that scorecard. So ``--collect-only`` runs no notebook, ``-k`` grades only
the submissions of the items it selects, and ``-x`` stops grading at the first failure.

An item passes when the question earns full marks; a failing item's report is the student's
feedback. Scorecards of the submissions graded are written when the session ends. Under
pytest-xdist (``-n``) the items of one submission stay on one worker (``--dist loadfile`` unless
another distribution is chosen), so each notebook is graded once, and each worker writes the
scorecards of the submissions it graded.

Registered through the ``pytest11`` entry point, so it works wherever the package is installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from grader.batch.intake import collect, output_names
from grader.course import config as course_config
from grader.course.locate import find_config, pick_assignment
from grader.errors import GraderError, GradingFailed, QuestionNotEarned
from grader.judge.scorecard import QuestionResult, Scorecard
from grader.outputs.feedback import failure_text, question_passed, waiting_for_person
from grader.outputs.yaml import write_yaml

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

STATE = pytest.StashKey["GradingState"]()

HELP = {
    "submission": "grade this notebook or folder of notebooks (repeatable)",
    "assignment": "assignment name in the course file (default: inferred)",
    "grader_config": "course file (default: config.yaml here or above)",
    "scorecard_dir": "folder for the scorecards written at the end (default: scorecards)",
}

# pytest-xdist distributions that keep all items of one file (one submission) on one worker.
WHOLE_FILE = ("loadfile", "loadscope")


class GradingState:
    """The session's course, assignment and submissions, and the scorecards graded so far."""

    def __init__(
        self, course: course_config.Course, assignment: course_config.Assignment, submissions: list[Path], out: Path
    ):
        from grader.judge.grading import Grader

        self.course, self.assignment, self.out = course, assignment, out
        self.submissions = {p.resolve(): p for p in submissions}
        self.names = output_names(submissions)
        self.grader = Grader(course)
        self.cards: dict[Path, Scorecard] = {}
        self.failed: dict[Path, str] = {}  # submissions whose grading raised: the one-line reason

    def scorecard(self, original: Path) -> Scorecard:
        """The submission's scorecard, graded on first use; a failure to grade is remembered too,
        so the submission's other items report it without running the notebook again."""
        if original in self.failed:
            raise GradingFailed(self.failed[original])
        card = self.cards.get(original)
        if card is None:
            try:
                card = self.grader.grade(self.assignment, original)
            except GraderError as exc:
                self.failed[original] = f"{original.name} could not be graded: {' '.join(str(exc).split())}"
                raise GradingFailed(self.failed[original]) from None
            self.cards[original] = card
        return card


def node_id(path: Path, rootpath: Path) -> str | None:
    """None for a notebook under pytest's rootdir, which keeps pytest's own id (its path from the
    rootdir). pytest gives every notebook outside the rootdir that was named on the command line
    the same empty id, which pytest-xdist cannot tell apart and reports cannot name: such a
    notebook is named by its absolute path instead (reports show it relative to the current folder)."""
    return None if path.is_relative_to(rootpath) else path.as_posix()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grader", "notebook grading")
    group.addoption("--submission", action="append", default=[], help=HELP["submission"])
    group.addoption("--assignment", default=None, help=HELP["assignment"])
    group.addoption("--grader-config", default=None, help=HELP["grader_config"])
    group.addoption("--scorecard-dir", default="scorecards", help=HELP["scorecard_dir"])


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Iterator[None]:
    # A wrapper runs before pytest-xdist's own hook, which turns "-n N without --dist" into
    # --dist load: that would spread one submission's items over workers, each grading it again.
    option = config.option
    if (
        config.getoption("submission")
        and getattr(option, "numprocesses", None)
        and getattr(option, "dist", None) == "no"
        and not getattr(option, "distload", False)
    ):
        option.dist = "loadfile"
    return (yield)


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
    config.pluginmanager.register(JunitPoints(config), "grader-junit-points")


POINTS = "grader_points"  # a report's (score, max_score); xdist carries it from a worker with the report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if call.when == "call" and isinstance(item, QuestionItem) and item.result is not None:
        setattr(report, POINTS, [item.result.score, item.result.max_score])
    return report


class JunitPoints:
    """Each question's points as suite properties of ``--junitxml``, as grader.outputs.junit writes
    them: ``score:<classname>::<name>`` and ``max_score:...``. Not per test case (``record_property``):
    a ``<properties>`` inside ``<testcase>`` makes the file invalid under the JUnit schema. Runs where
    the reports arrive, so under xdist on the controller, which alone writes the file."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from _pytest.junitxml import xml_key  # pytest's handle on --junitxml, as record_testsuite_property uses

        points = getattr(report, POINTS, None)
        xml = self.config.stash.get(xml_key, None)
        if report.when != "call" or points is None or xml is None:
            return
        # classname and name as pytest's junitxml derives them from the node id
        path, _, params = report.nodeid.partition("[")
        names = path.split("::")
        classname = ".".join([re.sub(r"\.py$", "", names[0].replace("/", "."))] + names[1:-1])
        name = names[-1] + (f"[{params}" if params else "")
        xml.add_global_property(f"score:{classname}::{name}", points[0])
        xml.add_global_property(f"max_score:{classname}::{name}", points[1])


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE, None)
    if state is None:
        return None
    from grader.run import sandbox

    found = state.grader.executor.features or sandbox.features()
    lines = [
        f"grader: {state.course.file} · assignment {state.assignment.name} · "
        f"{len(state.submissions)} submission(s) · executor {state.grader.executor.name}",
        f"grader sandbox: {found.describe()}",
    ]
    lines += [f"grader sandbox, not enforced here: {m}" for m in found.missing()]
    dist = getattr(config.option, "dist", "no")
    if dist != "no" and getattr(config.option, "tx", None):
        lines.append(
            f"grader: distributed with --dist {dist}"
            + (
                ""
                if dist in WHOLE_FILE
                else "; a submission whose questions run on several workers is graded on each (--dist loadfile avoids it)"
            )
        )
    return lines


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(STATE, None)
    if state is not None and file_path.resolve() in state.submissions:
        nodeid = node_id(file_path, parent.config.rootpath)
        if nodeid is None:
            return SubmissionFile.from_parent(parent, path=file_path)
        # pytest 8 types the id as a str; pytest 9 as its NodeId, and still takes (and parses) a str
        made: pytest.Collector = SubmissionFile.from_parent(parent, path=file_path, nodeid=nodeid)
        return made
    return None


class SubmissionFile(pytest.File):
    """One submitted notebook: an item per question of the assignment, without running anything."""

    def collect(self) -> Iterator[QuestionItem]:
        state: GradingState = self.config.stash[STATE]
        for question in state.assignment.questions:
            yield QuestionItem.from_parent(self, name=question.id, question=question)


class QuestionItem(pytest.Item):
    """One question of one submission; ``result`` and ``card`` are set once it has run."""

    def __init__(self, *, question: course_config.Question, **kwargs: Any):
        super().__init__(**kwargs)
        self.question = question
        self.result: QuestionResult | None = None
        self.card: Scorecard | None = None

    def runtest(self) -> None:
        state: GradingState = self.config.stash[STATE]
        card = state.scorecard(state.submissions[self.path.resolve()])
        result = next((q for q in card.questions if q.id == self.question.id), None)
        if result is None:  # the grader makes one result per question of the assignment
            raise GradingFailed(f"The scorecard of {self.path.name} has no question {self.question.id}.")
        self.result, self.card = result, card
        if waiting_for_person(result):
            pytest.skip(f"{result.title}: graded by a person, waiting for one")
        if not question_passed(result):
            raise QuestionNotEarned(result.id)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, QuestionNotEarned) and self.result is not None and self.card is not None:
            return failure_text(self.result, self.card)  # set by runtest before it raised
        if isinstance(excinfo.value, GradingFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"question {self.question.id}: {self.question.title}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    for path, card in state.cards.items():
        write_yaml(card, state.out / f"{state.names[path]}.yaml", state.course.scorecard.rounding)
