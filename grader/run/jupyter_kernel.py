"""The grader's helper inside a Jupyter kernel (``--executor jupyter``): captures, errors and injections.

The Jupyter executor (``grader.run.jupyter_executor``) runs the student's cells with the kernel's
own ``execute_request`` and calls ``kernel.setup``, ``kernel.before(pos)`` and ``kernel.after(pos)``
through user expressions around each cell. They reuse ``grader.run.worker`` and answer with the
same plain-data messages the worker writes as frames (as ``application/json`` expression results;
nothing is pickled). This module is imported inside the kernel, so it imports nothing of the
grader's side.
"""

from __future__ import annotations

import base64
import json
import os
import time
from typing import TYPE_CHECKING, Any

from grader.run import injections, sandbox, student_values, worker

if TYPE_CHECKING:  # the job's shape, for the type checker only: the kernel imports nothing of the grader's side
    from grader.run.job import CaptureWire, CellEndMessage, JobWire, StartMessage


class _Json:
    """An expression result that IPython formats as ``application/json`` (plain data only)."""

    def __init__(self, data: Any):
        self.data = data

    def _repr_json_(self) -> Any:
        return self.data

    def __repr__(self) -> str:
        return "<grader data>"


class KernelSide:
    """The grader's helper inside the kernel: captures, errors and injections, as the worker does."""

    def __init__(self) -> None:
        self.runner: worker.Runner | None = None

    def setup(self, payload: str) -> _Json:
        job: JobWire = json.loads(base64.b64decode(payload))
        applied = sandbox.enter(job)  # a kernel has threads: limits, environment, no_new_privs in place
        from IPython import get_ipython

        shell = get_ipython()
        self.job = job
        # No channel: in a kernel, the runner's messages go back as expression results, never as frames.
        self.runner = worker.Runner(job, None, shell)  # type: ignore[arg-type]
        self.captures: dict[int, list[CaptureWire]] = {}
        for c in job["captures"]:
            self.captures.setdefault(c["point"] if c["point"] is not None else len(job["cells"]), []).append(c)
        injections.install_injections(shell.user_ns, job)  # as worker.Runner.run
        self.error: BaseException | None = None
        self.started = 0.0
        shell.events.register("post_run_cell", self._post_run_cell)
        start: StartMessage = {"ev": "start", "pid": os.getpid(), "sandbox": list(applied)}
        return _Json(start)

    def _post_run_cell(self, result: Any) -> None:
        self.error = result.error_before_exec or result.error_in_exec

    def before(self, pos: int) -> _Json:
        """Capture what is due before cell ``pos`` and get ready to run it."""
        assert self.runner is not None
        messages = [self.runner.capture_one(c) for c in self.captures.get(pos, [])]
        if pos < len(self.job["cells"]):
            self.runner.current = self.job["cells"][pos]["index"]
        self.error, self.started = None, time.perf_counter()
        return _Json(messages)

    def after(self, pos: int) -> _Json:
        """How cell ``pos`` ended, as the worker reports it."""
        assert self.runner is not None
        self.runner.current = 0
        message: CellEndMessage = {
            "ev": "cell",
            "pos": pos,
            "phase": "end",
            "status": "ok" if self.error is None else "error",
            "duration": time.perf_counter() - self.started,
        }
        if self.error is not None:
            student_values.add_error(message, self.error, self.runner.traceback_lines)
        self.error = None
        return _Json(message)


kernel = KernelSide()
