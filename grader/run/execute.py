"""Running a notebook's cells in a separate, limited process and collecting what the checks need.

Layers, from the outside in:

    Executor.run(job)             one notebook, start to finish, always returns a RunResult
      -> attempt (one process)    spawn, stream frames, enforce deadlines, kill the process group
        -> worker (student side)  grader.run.worker, IPython semantics, plain-data captures

Deadlines are kept here, outside the student process, so a notebook that ignores signals or
loops forever still ends. A cell that times out or takes the process down is recorded, and the
notebook runs again without it, so later questions are still graded.

An executor is anything with ``name`` and ``run(job) -> RunResult``; the checks never see more.
The runs of one submission (its own data, then variants) go through ``session(executor)``: one
sandbox for all of them where the executor has ``session()`` (the forking executor), else one
``run`` each (``Separate``).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from grader import PACKAGE_DIR, capture
from grader.capture import Value
from grader.course.config import Limits
from grader.errors import ProtocolError
from grader.run import sandbox

MAX_ATTEMPTS = 4  # a first run plus re-runs that skip cells which hung or crashed


@dataclass(frozen=True)
class JobCell:
    index: int  # the student's cell number (1-based among code cells)
    source: str
    skip: str = ""  # why the cell is not run: "" | "skip-grading" | "timeout" | "crashed"


@dataclass(frozen=True)
class CaptureSpec:
    id: str
    kind: str  # value | expr
    target: str
    point: int | None  # capture before the cell at this position; None = at the end
    seed: int | None = None


@dataclass(frozen=True)
class Injection:
    """A value that replaces a name wherever the (rewritten) cells call ``__grader_inject__``."""

    name: str
    value: dict  # encoded plain data


@dataclass(frozen=True)
class Job:
    cells: tuple[JobCell, ...]
    captures: tuple[CaptureSpec, ...]
    limits: Limits
    files: tuple[tuple[Path, str], ...] = ()  # (source, name in the working directory)
    injections: tuple[Injection, ...] = ()
    traceback_lines: int = 8

    def to_wire(self, workdir: str) -> dict:
        return {
            "cells": [{"index": c.index, "source": c.source, "skip": c.skip} for c in self.cells],
            "captures": [
                {"id": c.id, "kind": c.kind, "target": c.target, "point": c.point, "seed": c.seed}
                for c in self.captures
            ],
            "injections": {i.name: i.value for i in self.injections},
            "limits": self.limits.__dict__,
            "workdir": workdir,
            "traceback_lines": self.traceback_lines,
        }


@dataclass(frozen=True)
class CellRun:
    pos: int
    index: int
    status: str  # ok | error | timeout | crashed | skipped | not_run
    ename: str = ""
    evalue: str = ""
    traceback: tuple[str, ...] = ()
    duration: float = 0.0
    output_bytes: int = 0
    output_truncated: bool = False


@dataclass(frozen=True)
class Captured:
    """What came back for one capture: a value, or why there is none."""

    value: Value | None = None
    missing: bool = False  # the name does not exist at that point
    error: str = ""  # the value could not be computed or carried
    traceback: tuple[str, ...] = ()
    uncapturable: bool = False


@dataclass
class RunResult:
    status: str  # ok | timeout | crashed
    reason: str = ""
    cells: list[CellRun] = field(default_factory=list)
    captures: dict[str, Captured] = field(default_factory=dict)
    duration: float = 0.0
    attempts: int = 1
    sandbox: tuple[str, ...] = ()  # the protections the student process reported in force (sandbox.FEATURES)

    @property
    def errors(self) -> list[CellRun]:
        return [c for c in self.cells if c.status in ("error", "timeout", "crashed")]


class Executor(Protocol):
    name: str

    def run(self, job: Job) -> RunResult: ...


# --------------------------------------------------------------------------------------------


class _Frames:
    """Reads length-prefixed frames from a pipe with deadlines and a size bound."""

    def __init__(self, fd: int, max_frame: int):
        self.fd, self.max_frame, self.buf = fd, max_frame, b""

    def next(self, deadline: float) -> dict | None:
        """The next message, None at end of stream; raises TimeoutError past the deadline."""
        while True:
            if len(self.buf) >= 4:
                (size,) = capture.HEADER.unpack(self.buf[:4])
                if size > self.max_frame:
                    raise ProtocolError(f"the student process sent a message of {size:,} bytes, over the limit")
                if len(self.buf) >= 4 + size:
                    body, self.buf = self.buf[4 : 4 + size], self.buf[4 + size :]
                    return capture.parse_frame(body)
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                if self.buf:
                    raise ProtocolError("the student process ended in the middle of a message")
                return None
            self.buf += chunk


@dataclass
class _Attempt:
    status: str = "ok"  # ok | cell_timeout | notebook_timeout | crashed | protocol
    reason: str = ""
    bad_pos: int | None = None
    cells: dict[int, CellRun] = field(default_factory=dict)
    captures: dict[str, Captured] = field(default_factory=dict)
    sandbox: tuple[str, ...] | None = None  # from the start message; None until it arrives


class SubprocessExecutor:
    """A fresh Python process per notebook: simple, slow to start (imports every time)."""

    name = "subprocess"

    def __init__(self, python: str = sys.executable, features: sandbox.Features | None = None):
        self.python = python
        self.features = features  # None: whatever sandbox.features() finds on this platform

    def spawn(self, wire: dict, workdir: str) -> tuple[Any, int]:
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
            proc.stdin.write(json.dumps(wire).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        return proc, r

    def finish(self, handle: Any, complete: bool = True) -> None:
        sandbox.terminate(handle.pid)  # before reaping it, so its pid and group cannot be reused yet
        try:
            handle.wait(timeout=5)
        except subprocess.TimeoutExpired:
            handle.kill()

    def run(self, job: Job) -> RunResult:
        return run_with_retries(self, job)


class Separate:
    """Runs of one submission, each started on its own by ``executor.run``: what an executor
    without shared sandboxes (``executor.session()``) gives."""

    def __init__(self, executor: Executor):
        self.executor = executor

    def run(self, job: Job) -> RunResult:
        return self.executor.run(job)

    def close(self) -> None:
        pass

    def __enter__(self) -> Separate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def session(executor: Executor) -> Any:
    """A context for the runs of one submission (``.run(job)`` each): in one sandbox when the
    executor can (the forking executor, with pid and mount namespaces), else one run at a time."""
    opener = getattr(executor, "session", None)
    return opener() if opener is not None else Separate(executor)


def run_with_retries(executor: Any, job: Job) -> RunResult:
    """Run the job; re-run without any cell that hung or crashed the process."""
    started = time.monotonic()
    deadline = started + job.limits.notebook_timeout
    lost: dict[int, CellRun] = {}
    attempt = _Attempt()
    attempts = 0
    current = job
    while attempts < MAX_ATTEMPTS:
        attempts += 1
        attempt = _one_attempt(executor, current, deadline)
        if attempt.status not in ("cell_timeout", "crashed") or attempt.bad_pos is None:
            break
        pos = attempt.bad_pos
        lost[pos] = attempt.cells[pos]
        cells = list(current.cells)
        cells[pos] = replace(cells[pos], skip=attempt.cells[pos].status)
        current = replace(current, cells=tuple(cells))
    result = RunResult(status="ok", duration=time.monotonic() - started, attempts=attempts)
    for pos, cell in enumerate(job.cells):
        run = lost.get(pos) or attempt.cells.get(pos)
        if run is None:
            run = CellRun(pos=pos, index=cell.index, status="skipped" if cell.skip else "not_run")
        result.cells.append(run)
    result.captures = attempt.captures
    result.sandbox = attempt.sandbox or ()
    crashed = [c for c in result.cells if c.status == "crashed"]
    if attempt.status == "notebook_timeout":
        result.status, result.reason = "timeout", attempt.reason
    elif attempt.status in ("crashed", "protocol"):
        result.status, result.reason = "crashed", attempt.reason
    elif attempt.status == "cell_timeout":  # ran out of attempts
        result.status, result.reason = "timeout", attempt.reason
    elif any(c.status == "timeout" for c in result.cells):
        first = next(c for c in result.cells if c.status == "timeout")
        result.status = "timeout"
        result.reason = f"cell {first.index} ran past the {job.limits.cell_timeout:g} s limit and was stopped"
    elif crashed:  # the notebook ran again without that cell, so the rest is graded all the same
        result.status, result.reason = "crashed", crashed[0].evalue
    return result


def _one_attempt(executor: Any, job: Job, deadline: float) -> _Attempt:
    out = _Attempt()
    shared = getattr(executor, "shared_workdir", None)  # a session's, kept from run to run
    workdir = shared(job) if shared is not None else sandbox.prepare_workdir(job.files)
    handle = None
    try:
        wire = job.to_wire(workdir)
        wire["sandbox"] = (getattr(executor, "features", None) or sandbox.features()).to_wire()
        handle, fd = executor.spawn(wire, workdir)
        frames = _Frames(fd, max_frame=job.limits.capture_mb * 1024 * 1024 * 2 + (1 << 20))
        running: int | None = None
        cell_deadline = deadline
        try:
            while True:
                try:
                    msg = frames.next(min(deadline, cell_deadline))
                except TimeoutError:
                    if running is not None and cell_deadline <= deadline:
                        cell = job.cells[running]
                        out.cells[running] = CellRun(
                            pos=running, index=cell.index, status="timeout", ename="TimeoutError",
                            evalue=f"cell {cell.index} ran past the {job.limits.cell_timeout:g} s limit and was stopped",
                            duration=job.limits.cell_timeout,
                        )
                        out.status, out.bad_pos = "cell_timeout", running
                        out.reason = out.cells[running].evalue
                    elif cell_deadline <= deadline:
                        out.status = "notebook_timeout"
                        out.reason = f"evaluating a check ran past the {job.limits.cell_timeout:g} s limit"
                    else:
                        out.status = "notebook_timeout"
                        where = f" (in cell {job.cells[running].index})" if running is not None else ""
                        out.reason = f"the notebook ran past its {job.limits.notebook_timeout:g} s limit{where}"
                        if running is not None:
                            cell = job.cells[running]
                            out.cells[running] = CellRun(pos=running, index=cell.index, status="timeout",
                                                         ename="TimeoutError", evalue=out.reason)
                    return out
                if msg is None:
                    if running is not None:
                        cell = job.cells[running]
                        out.cells[running] = CellRun(
                            pos=running, index=cell.index, status="crashed", ename="ProcessExit",
                            evalue=f"cell {cell.index} ended the Python process (sys.exit, os._exit, a kill signal "
                                   "or running out of memory)",
                        )
                        out.status, out.bad_pos, out.reason = "crashed", running, out.cells[running].evalue
                    elif out.status == "ok" and not _done(out):
                        out.status = "crashed"
                        out.reason = "the notebook's process ended before grading could finish"
                    return out
                running, cell_deadline = _handle(msg, job, out, running, cell_deadline)
                if msg.get("ev") == "done":
                    out.captures["__done__"] = Captured()
                    return out
        except ProtocolError as exc:
            out.status, out.reason = "protocol", str(exc)
            if running is not None:  # the cell wrote on the channel itself: run again without it
                cell = job.cells[running]
                out.cells[running] = CellRun(
                    pos=running, index=cell.index, status="crashed", ename="ProtocolError",
                    evalue=f"cell {cell.index} interfered with the grader's channel ({exc}); it was not graded",
                )
                out.status, out.bad_pos, out.reason = "crashed", running, out.cells[running].evalue
            return out
        finally:
            os.close(fd)
    finally:
        if handle is not None:
            executor.finish(handle, complete=_done(out))
        if shared is None:
            sandbox.remove_workdir(workdir)
        out.captures.pop("__done__", None)


def _done(out: _Attempt) -> bool:
    return "__done__" in out.captures


def _handle(msg: dict, job: Job, out: _Attempt, running: int | None, cell_deadline: float) -> tuple[int | None, float]:
    try:
        return _handle_one(msg, job, out, running, cell_deadline)
    except ProtocolError:
        raise
    except Exception as exc:  # whatever a forged message trips over, it is the sender's fault
        raise ProtocolError(f"the student process sent a malformed message ({type(exc).__name__})") from None


def _handle_one(msg: dict, job: Job, out: _Attempt, running: int | None, cell_deadline: float
                ) -> tuple[int | None, float]:
    ev = msg.get("ev")
    if ev == "cell":
        pos = msg.get("pos")
        if type(pos) is not int or not 0 <= pos < len(job.cells):
            raise ProtocolError("the student process reported a cell that does not exist")
        if msg.get("phase") == "start":
            return pos, time.monotonic() + job.limits.cell_timeout
        status = msg.get("status")
        if status not in ("ok", "error", "skipped"):
            raise ProtocolError("the student process reported an unknown cell status")
        tb = msg.get("traceback") or []
        if not isinstance(tb, list) or not all(isinstance(t, str) for t in tb):
            raise ProtocolError("the student process sent a malformed traceback")
        total = msg.get("output_bytes", 0)
        total = total if type(total) is int else 0
        out.cells[pos] = CellRun(
            pos=pos,
            index=job.cells[pos].index,
            status=status,
            ename=str(msg.get("ename", ""))[:100],
            evalue=str(msg.get("evalue", ""))[:500],
            traceback=tuple(t[:300] for t in tb[:20]),
            duration=float(msg.get("duration", 0.0)) if isinstance(msg.get("duration"), (int, float)) else 0.0,
            output_bytes=total,
            output_truncated=total > job.limits.output_kb * 1024,
        )
        return None, time.monotonic() + job.limits.cell_timeout
    if ev == "capture":
        cid = msg.get("id")
        if not isinstance(cid, str) or cid not in {c.id for c in job.captures}:
            raise ProtocolError("the student process sent a value nobody asked for")
        tb = msg.get("traceback") or []
        if not isinstance(tb, list):
            raise ProtocolError("the student process sent a malformed traceback")
        if "value" in msg:
            out.captures[cid] = Captured(value=capture.decode(msg["value"]))
        else:
            out.captures[cid] = Captured(
                missing=bool(msg.get("missing")),
                error=str(msg.get("error", ""))[:500],
                traceback=tuple(str(t)[:300] for t in tb[:20]),
                uncapturable=bool(msg.get("uncapturable")),
            )
        return running, cell_deadline
    if ev == "start":
        if out.sandbox is not None:
            raise ProtocolError("the student process sent a second start message")
        names = msg.get("sandbox") or []
        if not isinstance(names, list) or not all(n in sandbox.FEATURES for n in names):
            raise ProtocolError("the student process reported an unknown sandbox")
        out.sandbox = tuple(names)
        return running, cell_deadline
    if ev == "fatal":
        raise ProtocolError(f"the sandbox could not be set up: {str(msg.get('reason', ''))[:300]}")
    if ev == "done":
        return None, float("inf")
    raise ProtocolError("the student process sent a message of unknown kind")
