"""The grader's side of the server's children once they run: the runs of one submission in one
sandbox (``Session``), and ending a finished child's process tree off the critical path (``Cleaner``).

A session needs four things of the executor it belongs to, declared here as ``SessionHost``:
which server a job's runs come from (``preload_for``), a child of that server to set the sandbox
up in (``start_child``), ending a child (``finish``), and taking back a session kept for reuse
(``give_back``). ``ForkingExecutor`` is such a host; this module does not import it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from grader.errors import ExecutorError
from grader.run import sandbox
from grader.run.execute import run_with_retries
from grader.run.forking import STAY_RUNS

if TYPE_CHECKING:
    from grader.run.forking.client import ForkServer
    from grader.run.job import Job, JobWire, RunResult, SessionSetup


@dataclass
class Child:
    """A child that took a job: the pid to end, the server that holds it, the directory to remove."""

    pid: int
    server: ForkServer
    workdir: str


class Cleaner:
    """Ends finished children off the critical path: ``sandbox.terminate``, then the server may reap.

    A notebook's result is complete at its last frame; killing what is left of its process tree
    takes a few milliseconds more (mostly waiting for SIGKILL to land). Doing that here lets the
    grader go on at once. The child stays unreaped (a zombie held by the server) until then, so its
    pid and process group cannot be reused; its working directory is removed again afterwards in
    case anything it left running wrote there. With more than ``backlog`` waiting, finish() does
    the work itself, so the backlog stays bounded however fast notebooks end."""

    def __init__(self, release: Callable[[Child], None], backlog: int = 16):
        self.release, self.backlog = release, backlog
        self.queue: list[Child] = []
        self.cond = threading.Condition()
        self.busy = 0
        self.stopped = False
        self.thread: threading.Thread | None = None

    def submit(self, child: Child) -> None:
        with self.cond:
            if len(self.queue) < self.backlog and not self.stopped:
                self.queue.append(child)
                if self.thread is None:
                    self.thread = threading.Thread(target=self._loop, name="grader-cleaner", daemon=True)
                    self.thread.start()
                self.cond.notify_all()
                return
        self.clean(child)

    def clean(self, child: Child) -> None:
        sandbox.terminate(child.pid)
        self.release(child)
        if os.path.isdir(child.workdir):
            sandbox.remove_workdir(child.workdir)

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.stopped:
                    self.cond.wait()
                if not self.queue:
                    return
                child = self.queue.pop(0)
                self.busy += 1
            try:
                self.clean(child)
            except Exception:  # noqa: BLE001 - never lose the thread; the server ends the rest when it stops
                pass
            finally:
                with self.cond:
                    self.busy -= 1
                    self.cond.notify_all()

    def drain(self) -> None:
        """Clean everything still waiting, here and now."""
        while True:
            with self.cond:
                if not self.queue:
                    while self.busy:
                        self.cond.wait(timeout=1.0)
                    return
                child = self.queue.pop(0)
            self.clean(child)

    def stop(self, drain: bool = True) -> None:
        """No more children. ``drain``: end the waiting ones first; else (the grader is exiting)
        the server ends their processes, and only their working directories are removed here."""
        if drain:
            self.drain()
        with self.cond:
            self.stopped = True
            left, self.queue = self.queue, []
            self.cond.notify_all()
            thread, self.thread = self.thread, None
        for child in left:
            if os.path.isdir(child.workdir):
                sandbox.remove_workdir(child.workdir)
        if thread is not None:
            thread.join(timeout=None if drain else 2.0)  # the clean under way, if any


class SessionHost(Protocol):
    """What a ``Session`` needs from its executor (``ForkingExecutor`` is one)."""

    name: str
    features: sandbox.Features | None  # the protections runs get; None: whatever ``sandbox.features()`` finds
    modules: tuple[str, ...]  # the preload set of a job that names none

    def preload_for(self, job: Job | None) -> tuple[str, ...]:
        """The preload set (the key of its server) ``job`` runs with."""
        ...

    def start_child(self, wire: JobWire | SessionSetup, workdir: str, channel: int, preload: tuple[str, ...]) -> Child:
        """A child of ``preload``'s server, handed ``wire`` (a job, or a session's setup) through a
        pipe and ``channel`` (a descriptor: its event pipe, or a session's control socket)."""
        ...

    def finish(self, handle: Child, complete: bool = True) -> None:
        """The child is done with: its process tree is ended (now, or soon in the background)."""
        ...

    def give_back(self, session: Session) -> None:
        """Take back a session made with ``reuse`` whose caller's runs are over: it is kept open for
        the next ``session(reuse=...)`` of the same key, or ended."""
        ...


def write_all(fd: int, data: JobWire | SessionSetup) -> None:
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(data).encode())
    except BrokenPipeError:
        pass  # the reader is gone already; its channel says so


class Session:
    """Several runs of one submission in one sandbox: ``sandbox.enter_session`` in a pool child.

    The namespaces, the private root and the working directory are made once per submission
    instead of once per run; each run is still a process of its own, forked by the namespace's
    init, which ends whatever the run left behind and empties its writable places before saying
    ``ready``. A ``grader.run.execute.Spawner`` for ``run_with_retries`` (spawn, finish, workdir_for).

    A run that ended cleanly (its ``done`` frame arrived) leaves the session open for the next
    one; any other ending (a timeout, a crash, a broken protocol) ends the whole session, and the
    next run (the re-run without the bad cell, say) starts a fresh one. So a misbehaving run is
    handled exactly as a lone run would be.

    The one exception is a session kept for the trusted solution (``reuse``, a key given by
    ``ForkingExecutor.session``): there a run whose job says ``stay`` leaves its process, put back
    as it was, to take the next run (``Job.stay``). Any other session sends ``stay`` as false.
    """

    READY_TIMEOUT = 5.0  # seconds for init to clean up after a finished run

    def __init__(self, executor: SessionHost, reuse: Hashable | None = None):
        self.executor = executor
        self.name = executor.name
        self.features = executor.features
        self.child: Child | None = None  # the session's keeper, while it is open
        self.control: socket.socket | None = None
        self.workdir: str | None = None
        self.waiting = False  # a run finished; init has not said ready yet
        self.files: tuple[tuple[Path, str], ...] = ()
        self.preload: tuple[str, ...] = executor.modules  # the server the session's child comes from
        self.reuse = reuse  # None, or the key it is given back to the executor under on close
        self.stayed = 0  # runs in a row the same process took (``Job.stay``); 0: the last one's process ended

    def workdir_for(self, job: Job) -> str:
        """The session's working directory (made for the first run, or after a session ended)."""
        if self.waiting and not self._ready():
            self._end()
        preload = self.executor.preload_for(job)
        if job.files != self.files or preload != self.preload:  # another submission's: not this session's runs
            self._end()
        self.preload = preload
        if self.workdir is None:
            self.workdir = sandbox.prepare_workdir(job.files)
            self.files = job.files
        return self.workdir

    def spawn(self, wire: JobWire, workdir: str) -> tuple[Child, int]:
        sent = self._send_run(wire)
        if sent is None:  # the session is gone (its keeper was killed): start another
            sent = self._send_run(wire)
            if sent is None:
                raise ExecutorError("The sandbox of this submission ends before its runs can start.")
        return sent

    def _send_run(self, wire: JobWire) -> tuple[Child, int] | None:
        """Send a run to the session (opening one if there is none); the session's child and the
        read end of the run's event pipe, or None if the session turned out to be gone (it is ended then)."""
        if self.child is None and self.workdir is None:  # the session it was made for has just ended
            self.workdir = sandbox.prepare_workdir(self.files)
        assert self.workdir is not None  # an open session keeps its directory (both end in _end)
        # Only a session kept for the trusted solution's runs keeps a run's process for the next
        # run, and not for more than STAY_RUNS in a row: its CPU-time limit counts them all.
        stay = self.reuse is not None and bool(wire.get("stay")) and (self.stayed + 1) % STAY_RUNS != 0
        run: JobWire = {
            **wire,
            "workdir": self.workdir,
            "stay": stay,
            "trusted": self.reuse is not None and wire.get("trusted") is True,
        }
        if self.child is None:
            self._open(run)
        child, control = self.child, self.control
        assert child is not None and control is not None  # _open sets both, or raises
        job_r, job_w = os.pipe()
        event_r, event_w = os.pipe()
        try:
            socket.send_fds(control, [b"run"], [job_r, event_w])
        except OSError:
            os.close(event_r)
            os.close(job_w)
            self._end()
            return None
        finally:
            os.close(job_r)
            os.close(event_w)
        write_all(job_w, run)
        self.stayed = self.stayed + 1 if stay else 0
        return child, event_r

    def _open(self, wire: JobWire) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        setup: SessionSetup = {
            "session": True,
            "workdir": wire["workdir"],
            "limits": wire["limits"],
            "sandbox": wire.get("sandbox"),
        }
        try:
            self.child = self.executor.start_child(setup, wire["workdir"], theirs.fileno(), self.preload)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(self.READY_TIMEOUT)
        self.control = ours

    def _ready(self) -> bool:
        self.waiting = False
        if self.control is None:  # no session open: nothing to wait for
            return False
        try:
            return self.control.recv(16) == b"ready"
        except OSError:  # a timeout: a run's processes do not end, or init is gone
            return False

    def finish(self, handle: Child, complete: bool = True) -> None:
        if complete and handle is self.child:
            self.waiting = not self.stayed  # init cleans up while the grader reads the results
        else:
            self._end()

    def _end(self) -> None:
        """End the session: init reads end-of-file and exits; the cleaner ends the rest and removes the workdir."""
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.child is not None:
            self.executor.finish(self.child)  # the cleaner ends its processes in the background
            self.child = None
        self.waiting = False
        self.stayed = 0
        self._drop_workdir()  # what the grader prepared; the session's own view of it is gone with it

    def _drop_workdir(self) -> None:
        if self.workdir is not None:
            sandbox.remove_workdir(self.workdir)
            self.workdir = None

    def run(self, job: Job) -> RunResult:
        return run_with_retries(self, job)

    def close(self) -> None:
        """The caller's runs are over: the session ends, or goes back to the executor (``reuse``)."""
        if self.reuse is not None:
            self.executor.give_back(self)
        else:
            self._end()

    def end(self) -> None:
        self._end()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
