"""JUnit XML, written by pytest itself.

The already-graded scorecards are handed to a pytest session that runs the grader's own plugin
(``--submission``), with ``--junitxml``: the test cases, failure texts (the student's feedback)
and the ``score``/``max_score`` properties are exactly what ``pytest --submission ... --junitxml``
would write, without running any notebook a second time.

The inner session is isolated from whatever project it runs in: no ini file (``-c`` the null
device), no conftest.py files (a submissions folder may hold a hostile one), no cache folder,
and ``PYTEST_ADDOPTS`` ignored, so nothing is written outside the output file.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from grader import plugin
from grader.course.model import Assignment, Course
from grader.errors import GraderError
from grader.judge.scorecard import Scorecard


class _Graded:
    """Stands in for the Grader inside the inner session: returns the scorecards already made."""

    name = "already graded"

    def __init__(self, cards: dict[Path, Scorecard], executor_name: str):
        self.cards = cards
        self.executor = type("Executor", (), {"name": executor_name})()

    def grade(self, assignment: Assignment, path: Path, **_: object) -> Scorecard:
        return self.cards[Path(path).resolve()]


class _Reuse:
    def __init__(self, cards: dict[Path, Scorecard], executor_name: str):
        self.graded = _Graded(cards, executor_name)

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        state = config.stash.get(plugin.STATE, None)
        if state is not None:
            state.grader = self.graded

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = session.config.stash.get(plugin.STATE, None)
        if state is not None:
            state.cards.clear()  # the scorecards are written by the caller, in the formats asked for


def _registered() -> bool:
    """Whether pytest will load the grader plugin by itself, through its ``pytest11`` entry point."""
    from importlib.metadata import entry_points

    return any(ep.value == "grader.plugin" for ep in entry_points(group="pytest11"))


def write_junit(cards: list[tuple[Path, Scorecard]], course: Course, assignment: Assignment, path: Path, *,
                executor_name: str = "subprocess") -> Path:
    """Write pytest's JUnit XML for these (submission path, scorecard) pairs to ``path``."""
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    paths = [Path(p).resolve() for p, _ in cards]
    root = Path(os.path.commonpath([str(p.parent) for p in paths])) if paths else path.parent
    args = []
    for p in paths:
        args += ["--submission", str(p)]
    args += [
        "--assignment", assignment.name,
        "--grader-config", str(course.file.resolve()),
        "--junitxml", str(path),
        "-o", f"junit_suite_name={assignment.name}",
        "-c", os.devnull, "--rootdir", str(root), "--noconftest",
        "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
    ]
    reuse = _Reuse({p: card for p, (_, card) in zip(paths, cards)}, executor_name)
    plugins: list[object] = [reuse]
    if not _registered():  # running from a source tree that was never pip-installed
        plugins.append(plugin)
    saved = os.environ.pop("PYTEST_ADDOPTS", None)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = pytest.main(args, plugins=plugins)
    finally:
        if saved is not None:
            os.environ["PYTEST_ADDOPTS"] = saved
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) or not path.is_file():
        tail = out.getvalue().strip().splitlines()[-1:] or ["no output"]
        raise GraderError(f"pytest could not write the JUnit XML ({tail[0]}).")
    return path
