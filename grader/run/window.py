"""The time limit of one cell, or of one check evaluated between cells, as the grader keeps it from
outside the student process (``grader.run.execute``): ``cell_timeout`` seconds of the run's own time.

The run's own time is wall-clock time less what the run's threads waited, runnable, for a CPU that
other work held, as the kernel counts it (``sandbox.cpu_waits``). A test that times the student's
function on frames of millions of rows (ITMO's RecSys homework, docs/imported-courses.md) then
gets the limit on a machine loaded by a batch's other submissions as on an idle one, while a loop,
a ``sleep`` or a blocked read is stopped after ``cell_timeout`` seconds as before: none of them
waits for a CPU. The notebook's limit stays wall-clock time and bounds every window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from grader.run import sandbox

# The run's waits for a CPU are read this far into a cell's or a check's window (or a quarter of
# its limit, if less): a window that ends sooner costs nothing, and its first moments go uncredited.
PROBE = 1.0


@dataclass
class Window:
    """The time limit of one cell, or of one check evaluated between cells: ``cell_timeout``
    seconds of the run's own time, which is wall-clock time less what the run's processes waited,
    runnable, for a CPU that other work held (``sandbox.cpu_waits``, the kernel's count, read from
    outside). On an idle machine that is the wall clock; on a loaded one a correct answer is not
    stopped for the machine's load, while a loop, a sleep or a blocked read is stopped at the
    limit as before. The notebook's limit stays wall-clock time, and bounds every window."""

    pid: int | None  # the run's process tree, whose waits are read (None: none to read)
    end: float
    probe: float
    base: dict[int, tuple[int, int]] | None = None  # each thread's time run and waited at the probe
    based: float = 0.0  # when
    used: float = 0.0  # the CPU seconds the run had used then
    granted: float = 0.0  # seconds the end has moved

    @classmethod
    def open(cls, pid: int | None, limit: float) -> Window:
        now = time.monotonic()
        return cls(pid, now + limit, now + min(PROBE, limit / 4))

    def stop(self) -> float:
        """When to look again: the probe, then the end."""
        return self.probe if self.pid is not None and self.base is None and self.probe < self.end else self.end

    def over(self) -> bool:
        """At ``stop()``: whether the limit is used up; else the waits were read and the end moved by
        the time the run waited for a CPU since the probe."""
        if self.pid is None:
            return True
        waits, now = sandbox.cpu_waits(self.pid), time.monotonic()
        used, cpus = sandbox.tree_cpu(self.pid)
        if self.base is None:
            self.base, self.based, self.used = waits, now, used
            return now >= self.end
        # The kernel counts a wait from a clock it updates at its ticks, so a thread's count can run
        # ahead by a tick: a thread is credited no more than the time it was off its CPU.
        waited = 0.0
        for tid, (ran, wait) in waits.items():
            ran0, wait0 = self.base.get(tid, (0, 0))
            waited = max(waited, min((wait - wait0) / 1e9, now - self.based - (ran - ran0) / 1e9))
        # A wait is credited only for CPUs other work held: a run that fills the CPUs it may use with
        # its own processes (many spinning threads, each waiting for its siblings) earns nothing.
        # Its CPU time counts threads that ended and children reaped, so churning threads hide none.
        waited = min(waited, max(0.0, (now - self.based) - (used - self.used) / cpus))
        extra = waited - self.granted
        if extra < 0.01:
            return True
        self.granted += extra
        self.end += extra
        return False
