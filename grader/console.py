"""The command line's standard output: the table of a batch, and a reader that may leave early."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from grader.files import printable

if TYPE_CHECKING:
    from grader.course.model import Assignment
    from grader.judge.scorecard import Scorecard


class ReaderMayLeave:
    """Standard output whose reader may go away (``grader grade ... | head``): what is printed after
    that is dropped, and the work goes on to its end, every scorecard written."""

    def __init__(self, inner: Any):
        self.inner, self.gone = inner, False

    def _left(self) -> None:
        self.gone = True
        try:  # what Python flushes at exit goes nowhere too
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.inner.fileno())
        except (OSError, ValueError):
            pass

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return int(self.inner.write(text))
            except BrokenPipeError:
                self._left()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._left()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def print_table(assignment: Assignment, names: list[str], cards: Iterable[Scorecard], rounding: int) -> None:
    from grader.judge.scorecard import points_text

    width = max([len("submission")] + [len(n) for n in names])
    print(f"{assignment.name}: {assignment.title}")
    print(f"{'submission':<{width}}  {'score':>13}  status")
    for name, card in zip(names, cards, strict=True):
        score = f"{points_text(card.score, rounding)}/{points_text(card.max_score, rounding)}"
        # Names and reasons come from students (a scorecard read back may be older than this grader):
        # escaped, so none can start a row of its own or send the terminal a command.
        extra = f" ({printable(card.reason)})" if card.reason else ""
        print(f"{printable(name):<{width}}  {score:>13}  {card.status}{extra}")
