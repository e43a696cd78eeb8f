"""What one submission may spend: the grader's own CPU time on it, and the wall-clock time of its
runs beyond the first (variants, a working function in place)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from grader.course.model import Limits
from grader.errors import OverBudget


class CpuBudget:
    """The grader's own CPU time on one submission: reading and analysing the notebook, decoding
    what its runs send, preparing variants and carry-forward runs, comparing.

    Measured with ``time.thread_time()``, the CPU time of the grading thread alone (batches grade
    several submissions at once, one per thread; the student processes' time is theirs, bounded by
    ``cpu_time``). Checked between phases: a notebook within every size limit can still be costly
    to analyse or to decode (a cell of thousands of statements, a frame of many small items), and
    past ``limits.grader_cpu`` it is graded no further, its scorecard says why, and the batch goes
    on. Work that is not the submission's doing (the solution's runs) is kept out (``aside``)."""

    def __init__(self, seconds: float) -> None:
        self.limit = seconds
        self.start = time.thread_time()
        self.excluded = 0.0

    def spent(self) -> float:
        return time.thread_time() - self.start - self.excluded

    def check(self, phase: str) -> None:
        """Raise OverBudget when the budget is used up; ``phase`` says what the grader was doing."""
        spent = self.spent()
        if spent > self.limit:
            raise OverBudget(
                f"the grader spent {spent:.1f} s of its own CPU time on this submission ({phase}), "
                f"more than the {self.limit:g} s it may (limits.grader_cpu); it was not graded further"
            )

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Time spent in this block is not the submission's."""
        t = time.thread_time()
        try:
            yield
        finally:
            self.excluded += time.thread_time() - t


class Budget:
    """The wall-clock time the variant runs of one submission may take, all together.

    A variant run has the notebook's own sizes give or take a few rows, so honest code takes about
    as long on it as on the notebook's data: each variant run may take at most twice the original
    run plus one cell's limit, and all of a submission's runs together at most twice the
    notebook's limit. Code that is slow only when its inputs change (a sleep behind a test of the
    data) runs out of it, and the variants it did not finish fail."""

    def __init__(self, limits: Limits, original: float) -> None:
        self.base, self.original = limits, original
        self.total = 2 * limits.notebook_timeout - original

    def left(self) -> float:
        return min(self.total, self.base.notebook_timeout, 2 * self.original + self.base.cell_timeout)

    def limits(self) -> Limits:
        return replace(self.base, notebook_timeout=max(self.left(), 0.1))

    def spend(self, seconds: float) -> None:
        self.total -= seconds

    def reason(self) -> str:
        return (
            f"the submission's runs together used up their {2 * self.base.notebook_timeout:g} s "
            "(twice the notebook's limit)"
        )
