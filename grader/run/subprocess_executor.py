"""The subprocess executor: a fresh Python process per run (``python -m grader.run.worker``).

Simple and slow to start (every import is paid by every run); its runs enter the same sandbox
as the forking executor's (``grader.run.sandbox.enter``), one run at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from grader import PACKAGE_DIR
from grader.run import sandbox
from grader.run.execute import SpawningExecutor
from grader.run.job import JobWire


class SubprocessExecutor(SpawningExecutor):
    """A fresh Python process per notebook: simple, slow to start (imports every time)."""

    name = "subprocess"

    def __init__(self, python: str = sys.executable, features: sandbox.Features | None = None):
        self.python = python
        self.features = features  # None: whatever sandbox.features() finds on this platform

    def spawn(self, wire: JobWire, workdir: str) -> tuple[subprocess.Popen[bytes], int]:
        """Start the student process; returns (handle, read end of its event pipe)."""
        r, w = os.pipe()
        proc = subprocess.Popen(
            [self.python, "-m", "grader.run.worker", str(w)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=workdir,
            env={**sandbox.environment(workdir), "PYTHONPATH": os.path.dirname(PACKAGE_DIR)},
            pass_fds=(w,),
            start_new_session=True,
        )
        os.close(w)
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(wire).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        return proc, r

    def finish(self, handle: subprocess.Popen[bytes], complete: bool = True) -> None:
        sandbox.terminate(handle.pid)  # before reaping it, so its pid and group cannot be reused yet
        try:
            handle.wait(timeout=5)
        except subprocess.TimeoutExpired:
            handle.kill()
