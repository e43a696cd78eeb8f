"""The executors a course can grade with, by the name the command line and the config use.

One entry per executor: its name, a sentence for ``--help``, and a factory. Adding an executor
is one class (speaking ``grader.run.execute.Executor``) and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.errors import UsageError

if TYPE_CHECKING:  # imported by the command line's parser: the executors themselves load when made
    from grader.run.execute import Executor


def _forking() -> Executor:
    from grader.run.forking import default_executor

    return default_executor()


def _subprocess() -> Executor:
    from grader.run.subprocess_executor import SubprocessExecutor

    return SubprocessExecutor()


def _jupyter() -> Executor:
    from grader.run.jupyter_executor import JupyterExecutor

    return JupyterExecutor()


@dataclass(frozen=True)
class ExecutorEntry:
    name: str
    help: str
    make: Callable[[], Executor]


EXECUTORS: dict[str, ExecutorEntry] = {
    e.name: e
    for e in (
        ExecutorEntry("forking", "children of a warm server (default, fast)", _forking),
        ExecutorEntry("subprocess", "a fresh Python per notebook", _subprocess),
        ExecutorEntry("jupyter", "a Jupyter kernel per notebook (nbclient, slowest)", _jupyter),
    )
}
DEFAULT = "forking"


def make_executor(name: str) -> Executor:
    """The executor called ``name``; a UsageError naming the known ones otherwise."""
    entry = EXECUTORS.get(name)
    if entry is None:
        raise UsageError(f"Unknown executor {name!r}; use one of: {', '.join(EXECUTORS)}.")
    return entry.make()


def help_text() -> str:
    return "; ".join(f"{e.name}: {e.help}" for e in EXECUTORS.values())
