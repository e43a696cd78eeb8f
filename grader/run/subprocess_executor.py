"""The subprocess executor: a fresh Python process per run (``python -m grader.run.worker``).

Simple and slow to start (every import is paid by every run); its runs enter the same sandbox
as the forking executor's (``grader.run.sandbox.enter``), one run at a time.
"""

from __future__ import annotations

import subprocess
import sys

from grader.run import sandbox, worker_process
from grader.run.execute import SpawningExecutor
from grader.run.job import JobWire


class SubprocessExecutor(SpawningExecutor):
    """A fresh Python process per notebook: simple, slow to start (imports every time)."""

    name = "subprocess"

    def __init__(
        self,
        python: str = sys.executable,
        features: sandbox.Features | None = None,
        ahead: worker_process.Started | None = None,
    ):
        self.python = python
        self.features = features  # None: whatever sandbox.features() finds on this platform
        self.ahead = ahead  # a worker started before the first job (``grader check``), for that job

    def spawn(self, wire: JobWire, workdir: str) -> tuple[subprocess.Popen[bytes], int]:
        """Start the student process; returns (handle, read end of its event pipe)."""
        started, self.ahead = self.ahead, None
        if started is None or started.used or started.proc.poll() is not None:
            if started is not None:
                worker_process.discard(started)
            started = worker_process.start(self.python, workdir)
        worker_process.hand_over(started, wire)
        return started.proc, started.events

    def finish(self, handle: subprocess.Popen[bytes], complete: bool = True) -> None:
        sandbox.terminate(handle.pid)  # before reaping it, so its pid and group cannot be reused yet
        try:
            handle.wait(timeout=5)
        except subprocess.TimeoutExpired:
            handle.kill()
            handle.wait()

    def close(self) -> None:
        if self.ahead is not None:
            worker_process.discard(self.ahead)
            self.ahead = None
