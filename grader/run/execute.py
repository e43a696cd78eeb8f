"""The executor contract, and running one job through any executor that can start a student process.

Layers, from the outside in:

    Executor.run(job)             one notebook, start to finish, always returns a RunResult
      -> attempt (one process)    spawn, stream frames, enforce deadlines, kill the process group
        -> worker (student side)  grader.run.worker, IPython semantics, plain-data captures

Deadlines are kept here, outside the student process, so a notebook that ignores signals or
loops forever still ends. A cell that times out or takes the process down is recorded, and the
notebook runs again without it, so later questions are still graded.

Two protocols, declared here and nowhere else:

* ``Executor``: what the grader uses. ``run(job)`` for one run; ``session()`` for the runs of
  one submission (its own data, then variants), in one sandbox where the executor can share one
  (the forking executor) and one ``run`` each otherwise (``Separate``); ``features``, the
  protections its runs get; ``capabilities``, what it offers beyond runs (``Capabilities``:
  ``start`` ahead of the first run, ended with the process); ``close()``.
* ``Spawner``: what ``run_with_retries`` needs to drive attempts: ``spawn`` a student process
  for a wire job and return its event pipe, ``finish`` it, and the working directory to use (``workdir_for``).

``SpawningExecutor`` turns a spawner into an executor; the subprocess and Jupyter executors are
such spawners. The executors a user can name are registered in ``grader.run.executors``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

from grader import capture
from grader.errors import ProtocolError
from grader.files import printable
from grader.run import sandbox
from grader.run.frames import FrameReader
from grader.run.job import Captured, CellRun, DiskFull, Job, JobWire, RunError, RunResult
from grader.run.window import Window
from grader.vocab import CellStatus, RunStatus, SkipReason, Uncapturable

MAX_ATTEMPTS = 4  # a first run plus re-runs that skip cells which hung or crashed


class Session(Protocol):
    """The runs of one submission; a context manager that ends them all on exit."""

    def run(self, job: Job) -> RunResult: ...

    def close(self) -> None: ...

    def __enter__(self) -> Session: ...

    def __exit__(self, *exc: object) -> None: ...


@dataclass(frozen=True)
class Capabilities:
    """What an executor offers beyond running jobs, declared so that no caller probes for it."""

    # ``start(preload)`` starts ahead of the first run what runs then take (a warm server), so
    # a caller can overlap that with its own work; otherwise ``start`` does nothing.
    starts_ahead: bool = False
    # Ended when the process exits, so a holder done with it leaves it open for the next one
    # rather than ``close`` it (the forking executor's ``default_executor()`` serves every grader
    # of the process).
    lives_with_process: bool = False


class Executor(Protocol):
    """Runs jobs in student processes; every executor of ``grader.run.executors`` is one."""

    name: str
    features: sandbox.Features | None  # the protections runs get; None: whatever ``sandbox.features()`` finds
    capabilities: Capabilities

    def run(self, job: Job) -> RunResult: ...

    def session(self, reuse: Hashable | None = None) -> Session:
        """The runs of one submission. ``reuse``: for the trusted solution's runs only, a key; the
        session goes back to the executor on exit and the next ``session(reuse=key)`` may get it
        again, with the process of a run whose job said ``stay`` (``Job.stay``). An executor
        without sessions ignores both."""
        ...

    def start(self, preload: tuple[str, ...] | None = None) -> object:
        """Start now what the runs of notebooks importing ``preload`` (None: the default set) will
        take, instead of at the first run (``capabilities.starts_ahead``); may take seconds, so a
        caller runs it beside its own work. Does nothing for an executor with nothing to start."""
        ...

    def close(self) -> None: ...


class Spawner(Protocol):
    """Starts one student process per attempt (``run_with_retries``' side of an executor)."""

    name: str
    features: sandbox.Features | None

    def spawn(self, wire: JobWire, workdir: str) -> tuple[Any, int]:
        """Start the student process on ``wire``; (a handle for ``finish``, the read end of its event pipe)."""
        ...

    def finish(self, handle: Any, complete: bool = True) -> None:
        """The attempt is over (``complete``: its last frame arrived): end the process and all it started."""
        ...

    def workdir_for(self, job: Job) -> str | None:
        """A working directory shared by the attempts of a session, or None: each attempt makes its own."""
        ...


class SpawningExecutor:
    """An executor made of a spawner: each run is ``run_with_retries`` in processes of its own.
    A subclass writes ``spawn`` and ``finish``."""

    name = "spawning"
    features: sandbox.Features | None = None
    capabilities = Capabilities()  # a process per attempt: nothing to start ahead, nothing to keep

    def spawn(self, wire: JobWire, workdir: str) -> tuple[Any, int]:
        raise NotImplementedError

    def finish(self, handle: Any, complete: bool = True) -> None:
        raise NotImplementedError

    def run(self, job: Job) -> RunResult:
        return run_with_retries(self, job)

    def session(self, reuse: Hashable | None = None) -> Session:
        return Separate(self)

    def workdir_for(self, job: Job) -> str | None:
        return None

    def start(self, preload: tuple[str, ...] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class Separate:
    """Runs of one submission, each started on its own by ``executor.run``: the session of an
    executor that cannot share a sandbox between runs."""

    def __init__(self, executor: Executor | SpawningExecutor):
        self.executor = executor

    def run(self, job: Job) -> RunResult:
        return self.executor.run(job)

    def close(self) -> None:
        pass

    def __enter__(self) -> Separate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Ending(Enum):
    """How one attempt ended (internal to this module)."""

    DONE = "done"  # the process sent its last frame: the notebook ran to its end
    CELL_TIMEOUT = "cell_timeout"  # a cell ran past its limit: run again without it
    CHECK_TIMEOUT = "check_timeout"  # a check between cells ran past its limit: run again without it
    NOTEBOOK_TIMEOUT = "notebook_timeout"
    CRASHED = "crashed"  # the process ended during a cell (run again without it), or before its last frame
    PROTOCOL = "protocol"  # the channel carried something malformed


@dataclass
class _Attempt:
    """One attempt: one student process, what it reported, and how it ended."""

    ending: _Ending | None = None  # None while the process runs
    reason: str = ""
    bad_pos: int | None = None  # the cell to run the notebook again without (a timeout, a crash)
    bad_capture: str | None = None  # the check to run the notebook again without (a timeout)
    cells: dict[int, CellRun] = field(default_factory=dict)
    captures: dict[str, Captured] = field(default_factory=dict)
    sandbox: tuple[str, ...] | None = None  # from the start message; None until it arrives
    disk_full: dict[str, DiskFull] = field(default_factory=dict)  # where the run met its disk limit, by place


def run_with_retries(executor: Spawner, job: Job) -> RunResult:
    """Run the job (its clock starts when its turn comes: ``sandbox.turn``); re-run without any cell
    that hung or crashed the process."""
    with sandbox.turn(executor.features or sandbox.features()) as turn:
        return _retries(executor, job, turn)


def _retries(executor: Spawner, job: Job, turn: sandbox.Turn) -> RunResult:
    started = time.monotonic()
    deadline = started + job.limits.notebook_timeout
    lost: dict[int, CellRun] = {}
    stopped: dict[str, Captured] = {}  # checks that ran past their limit, left out of the later attempts
    attempt = _Attempt()
    attempts = 0
    current = job
    while attempts < MAX_ATTEMPTS:
        attempts += 1
        attempt = _one_attempt(executor, current, deadline, turn)
        if attempt.ending is _Ending.CHECK_TIMEOUT and attempt.bad_capture is not None:
            # the notebook runs again without that check, so the later questions are graded all the same
            stopped[attempt.bad_capture] = Captured(
                error=RunError(ename="TimeoutError", evalue=attempt.reason + " and was stopped")
            )
            current = replace(current, captures=tuple(c for c in current.captures if c.id != attempt.bad_capture))
            continue
        if attempt.ending not in (_Ending.CELL_TIMEOUT, _Ending.CRASHED) or attempt.bad_pos is None:
            break
        pos = attempt.bad_pos
        lost[pos] = attempt.cells[pos]
        cells = list(current.cells)
        cells[pos] = replace(cells[pos], skip=SkipReason(str(attempt.cells[pos].status)))
        current = replace(current, cells=tuple(cells))
    result = RunResult(status=RunStatus.OK, duration=time.monotonic() - started, attempts=attempts)
    for pos, cell in enumerate(job.cells):
        run = lost.get(pos) or attempt.cells.get(pos)
        if run is None:
            run = CellRun(pos=pos, index=cell.index, status=CellStatus.SKIPPED if cell.skip else CellStatus.NOT_RUN)
        result.cells.append(run)
    result.captures = {**stopped, **attempt.captures}
    result.sandbox = attempt.sandbox or ()
    result.disk_full = tuple(attempt.disk_full.values())
    crashed = [c for c in result.cells if c.status == CellStatus.CRASHED]
    if attempt.ending is _Ending.NOTEBOOK_TIMEOUT:
        result.status, result.reason = RunStatus.TIMEOUT, attempt.reason
    elif attempt.ending in (_Ending.CRASHED, _Ending.PROTOCOL):
        result.status, result.reason = RunStatus.CRASHED, attempt.reason
    elif attempt.ending in (_Ending.CELL_TIMEOUT, _Ending.CHECK_TIMEOUT):  # ran out of attempts
        result.status, result.reason = RunStatus.TIMEOUT, attempt.reason
    elif any(c.status == CellStatus.TIMEOUT for c in result.cells):
        first = next(c for c in result.cells if c.status == CellStatus.TIMEOUT)
        result.status = RunStatus.TIMEOUT
        result.reason = f"cell {first.index} ran past the {job.limits.cell_timeout:g} s limit and was stopped"
    elif crashed:  # the notebook ran again without that cell, so the rest is graded all the same
        result.status, result.reason = RunStatus.CRASHED, crashed[0].evalue
    elif stopped:
        result.status = RunStatus.TIMEOUT
        result.reason = f"evaluating a check ran past the {job.limits.cell_timeout:g} s limit and was stopped"
    result.reason = printable(result.reason)  # parts of it can come from the student process: a forged `fatal`
    return result


def _one_attempt(executor: Spawner, job: Job, deadline: float, turn: sandbox.Turn) -> _Attempt:
    """One student process's whole life: start it on the job, follow its frames until the run
    ends, then end it and all it started, and remove the working directory it was given (unless
    a session keeps that). How the run ended is ``_Attempt.ending``."""
    out = _Attempt()
    shared = executor.workdir_for(job)  # a session's, kept from run to run
    workdir = shared if shared is not None else sandbox.prepare_workdir(job.files)
    handle: Any = None
    fd: int | None = None
    try:
        wire = job.to_wire(workdir, (executor.features or sandbox.features()).to_wire())
        handle, fd = executor.spawn(wire, workdir)
        turn.started(getattr(handle, "pid", None))
        frames = FrameReader(fd, max_frame=job.limits.capture_mb * 1024 * 1024 * 2 + (1 << 20))
        _follow(frames, handle, job, deadline, out, workdir)
    finally:
        if fd is not None:
            os.close(fd)
        if handle is not None:
            executor.finish(handle, complete=out.ending is _Ending.DONE)
            held = sandbox.disk_filled(workdir)  # the keeper's note, once the run is over
            if held is not None:
                out.disk_full["workdir"] = DiskFull("workdir", held, watched=True)
        if shared is None:
            sandbox.remove_workdir(workdir)
    return out


def _follow(frames: FrameReader, handle: Any, job: Job, deadline: float, out: _Attempt, workdir: str) -> None:
    """Read the process's frames into ``out`` until the run ends: its last frame, a deadline (the
    notebook's, or the running cell's or check's, ``Window``), its channel closing, or the channel
    carrying something malformed. Sets ``out.ending``."""
    pid = getattr(handle, "pid", None)
    pid = pid if isinstance(pid, int) else None
    running: int | None = None  # the cell the process is in, if any
    window = Window(None, deadline, deadline)  # until the first cell: the notebook's limit only
    while True:
        try:
            msg = frames.next(min(deadline, window.stop()))
            if msg is None:
                break
            running, opens = _handle(msg, job, out, running)
        except TimeoutError:
            if time.monotonic() < deadline and not window.over():
                continue
            _timed_out(out, job, running, cell=window.end <= deadline)
            return
        except ProtocolError as exc:
            _channel_broken(out, job, running, exc)
            return
        if msg.get("ev") == "done":
            out.ending = _Ending.DONE
            return
        if opens:
            window = Window.open(pid, job.limits.cell_timeout)
    limits = job.limits
    _channel_closed(
        out,
        job,
        running,
        sandbox.limit_reached(pid, workdir, limits.memory_mb, limits.disk_mb, limits.processes),
    )


def _timed_out(out: _Attempt, job: Job, running: int | None, *, cell: bool) -> None:
    """A deadline passed: the running cell's (``cell``), else the notebook's."""
    if running is not None and cell:
        index = job.cells[running].index
        out.cells[running] = CellRun(
            pos=running,
            index=index,
            status=CellStatus.TIMEOUT,
            ename="TimeoutError",
            evalue=f"cell {index} ran past the {job.limits.cell_timeout:g} s limit and was stopped",
            duration=job.limits.cell_timeout,
        )
        out.ending, out.bad_pos, out.reason = _Ending.CELL_TIMEOUT, running, out.cells[running].evalue
    elif cell:
        # between cells, the checks at that point run in their order: the first not sent back hung
        order = sorted(job.captures, key=lambda c: len(job.cells) if c.point is None else c.point)
        out.bad_capture = next((c.id for c in order if c.id not in out.captures), None)
        out.ending = _Ending.CHECK_TIMEOUT if out.bad_capture is not None else _Ending.NOTEBOOK_TIMEOUT
        out.reason = f"evaluating a check ran past the {job.limits.cell_timeout:g} s limit"
    else:
        out.ending = _Ending.NOTEBOOK_TIMEOUT
        where = f" (in cell {job.cells[running].index})" if running is not None else ""
        out.reason = f"the notebook ran past its {job.limits.notebook_timeout:g} s limit{where}"
        if running is not None:
            out.cells[running] = CellRun(
                pos=running,
                index=job.cells[running].index,
                status=CellStatus.TIMEOUT,
                ename="TimeoutError",
                evalue=out.reason,
            )


def _channel_closed(out: _Attempt, job: Job, running: int | None, stopped: str) -> None:
    """The process ended before its last frame (``stopped``: the run's limit that ended it, if one did)."""
    out.ending = _Ending.CRASHED
    if running is not None:
        index = job.cells[running].index
        why = stopped or "ended the Python process (sys.exit, os._exit, a kill signal or running out of memory)"
        out.cells[running] = CellRun(
            pos=running, index=index, status=CellStatus.CRASHED, ename="ProcessExit", evalue=f"cell {index} {why}"
        )
        out.bad_pos, out.reason = running, out.cells[running].evalue
    else:
        out.reason = (
            f"the notebook {stopped}" if stopped else "the notebook's process ended before grading could finish"
        )


def _channel_broken(out: _Attempt, job: Job, running: int | None, exc: ProtocolError) -> None:
    """The channel carried something malformed; during a cell, the cell wrote on it itself: run again without it."""
    out.ending, out.reason = _Ending.PROTOCOL, str(exc)
    if running is not None:
        index = job.cells[running].index
        out.cells[running] = CellRun(
            pos=running,
            index=index,
            status=CellStatus.CRASHED,
            ename="ProtocolError",
            evalue=f"cell {index} interfered with the grader's channel ({exc}); it was not graded",
        )
        out.ending, out.bad_pos, out.reason = _Ending.CRASHED, running, out.cells[running].evalue


def _handle(msg: dict[str, Any], job: Job, out: _Attempt, running: int | None) -> tuple[int | None, bool]:
    """The message read into ``out``: the cell now running, and whether a new time window opens
    (a cell starts or ends, or a check between cells was evaluated: each check has the limit)."""
    try:
        return _handle_one(msg, job, out, running)
    except ProtocolError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a forged message trips over, it is the sender's fault
        raise ProtocolError(f"the student process sent a malformed message ({type(exc).__name__})") from None


def _run_error(msg: dict[str, Any], tb: list[Any]) -> RunError:
    """The exception a cell's or a capture's message describes (``worker.describe_error``), its
    fields cut to what a scorecard shows."""
    return RunError(
        ename=str(msg.get("ename", ""))[:100],
        evalue=str(msg.get("evalue", ""))[:500],
        frames=tuple(str(t)[:300] for t in tb[:20]),
        name=str(msg.get("name", ""))[:100],
        source=str(msg.get("source", ""))[:300],
        errno=msg["errno"] if type(msg.get("errno")) is int else 0,
        filename=str(msg.get("filename", ""))[:300],
    )


def _captured_without_value(msg: dict[str, Any], tb: list[Any]) -> Captured:
    """Why a capture came back without a value, as the record the judges read."""
    why = msg.get("uncapturable")
    if why is not None and why not in set(Uncapturable):
        raise ProtocolError("the student process sent an unknown reason for a value it could not send")
    return Captured(
        missing=bool(msg.get("missing")),
        error=_run_error(msg, tb) if msg.get("ename") else None,
        uncapturable=Uncapturable(why) if why is not None else None,
        detail=str(msg.get("detail", ""))[:500],
    )


def _handle_one(msg: dict[str, Any], job: Job, out: _Attempt, running: int | None) -> tuple[int | None, bool]:
    ev = msg.get("ev")
    if ev == "cell":
        pos = msg.get("pos")
        if type(pos) is not int or not 0 <= pos < len(job.cells):
            raise ProtocolError("the student process reported a cell that does not exist")
        if msg.get("phase") == "start":
            return pos, True
        status = msg.get("status")
        if status not in (CellStatus.OK, CellStatus.ERROR, CellStatus.SKIPPED):
            raise ProtocolError("the student process reported an unknown cell status")
        tb = msg.get("traceback") or []
        if not isinstance(tb, list) or not all(isinstance(t, str) for t in tb):
            raise ProtocolError("the student process sent a malformed traceback")
        total = msg.get("output_bytes", 0)
        total = total if type(total) is int else 0
        error = _run_error(msg, tb)
        for place, held in msg.get("disk") or ():
            if place not in ("workdir", "/tmp", "/dev/shm", "file") or type(held) is not int:
                raise ProtocolError("the student process sent a malformed report of its disk")
            out.disk_full.setdefault(place, DiskFull(place, held, job.cells[pos].index))
        out.cells[pos] = CellRun(
            pos=pos,
            index=job.cells[pos].index,
            status=status,
            ename=error.ename,
            evalue=error.evalue,
            traceback=error.frames,
            name=error.name,
            source=error.source,
            errno=error.errno,
            filename=error.filename,
            duration=float(msg.get("duration", 0.0)) if isinstance(msg.get("duration"), (int, float)) else 0.0,
            output_bytes=total,
            output_truncated=total > job.limits.output_kb * 1024,
        )
        return None, True
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
            out.captures[cid] = _captured_without_value(msg, tb)
        return running, running is None
    if ev == "start":
        if out.sandbox is not None:
            raise ProtocolError("the student process sent a second start message")
        names = msg.get("sandbox") or []
        if not isinstance(names, list) or not all(n in sandbox.FEATURES for n in names):
            raise ProtocolError("the student process reported an unknown sandbox")
        out.sandbox = tuple(names)
        return running, False
    if ev == "fatal":
        raise ProtocolError(f"the sandbox could not be set up: {str(msg.get('reason', ''))[:300]}")
    if ev == "done":
        return None, False
    raise ProtocolError("the student process sent a message of unknown kind")
