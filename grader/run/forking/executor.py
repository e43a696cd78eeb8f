"""The forking executor: what the grader runs notebooks with by default.

``ForkingExecutor`` starts a server at the first notebook (``client.ForkServer``), replaces it
when it dies, and hands each notebook to one of its children, or each submission to a session
(``session.Session``) where the platform allows. ``default_executor`` is the one shared by every
Grader of the process; all of them are closed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING

from grader.errors import ExecutorError
from grader.run import sandbox
from grader.run.forking import POOL, PRELOAD, REPLY_TIMEOUT, SPAWN_TRIES, START_TIMEOUT
from grader.run.forking.client import ForkServer, ServerGone
from grader.run.forking.session import Child, Cleaner, Session, write_all

if TYPE_CHECKING:
    from grader.run import execute
    from grader.run.job import Job, JobWire, RunResult, SessionSetup

_LIVE: weakref.WeakSet[ForkingExecutor] = weakref.WeakSet()


class ForkingExecutor:
    """Runs each notebook in a child forked from a warm server (the default executor)."""

    name = "forking"

    def __init__(self, preload: tuple[str, ...] = PRELOAD, python: str = sys.executable,
                 start_timeout: float = START_TIMEOUT, pool: int = POOL, reply_timeout: float = REPLY_TIMEOUT,
                 features: sandbox.Features | None = None):
        self.modules, self.python, self.pool = tuple(preload), python, pool
        self.start_timeout, self.reply_timeout = start_timeout, reply_timeout
        self._server: ForkServer | None = None
        self._lock = threading.Lock()
        self.restarts = 0  # how many times a dead server was replaced
        self.closed = False
        self.features = features  # None: whatever sandbox.features() finds on this platform
        self._cleaner = Cleaner(self._release)
        _LIVE.add(self)

    # -- the two calls run_with_retries needs --------------------------------------------------

    def spawn(self, wire: JobWire, workdir: str) -> tuple[Child, int]:
        """Fork a child for this job; returns (handle, read end of its event pipe). Without
        sessions only: with them, the server's children expect a session (``Session.spawn``)."""
        if self.sessions:
            raise ExecutorError("This forking executor runs notebooks in sessions; use run() or session().")
        event_r, event_w = os.pipe()
        try:
            child = self._start_child(wire, workdir, event_w)
        except BaseException:
            os.close(event_r)
            raise
        finally:
            os.close(event_w)
        return child, event_r

    def _start_child(self, wire: JobWire | SessionSetup, workdir: str, second_fd: int) -> Child:
        """Hand a pool child the job (or a session's setup, written to a pipe) and ``second_fd`` (its channel)."""
        job_r, job_w = os.pipe()
        try:
            with self._lock:
                for _ in range(SPAWN_TRIES):
                    server = self._ensure()
                    try:
                        pid = server.fork(job_r, second_fd)
                        break
                    except ServerGone:
                        self._replace(server)
                else:
                    raise ExecutorError("The forking server keeps dying before it can start a notebook.")
        except BaseException:
            os.close(job_w)
            raise
        finally:
            os.close(job_r)
        write_all(job_w, wire)
        return Child(pid, server, workdir)

    def finish(self, handle: Child, complete: bool = True) -> None:
        """The notebook is over: its process tree is ended (here, or soon by the cleaner thread)."""
        self._cleaner.submit(handle)

    def _plan(self) -> sandbox.Features:
        return self.features or sandbox.features()

    @property
    def sessions(self) -> bool:
        """Whether notebooks run in sessions (``sandbox.enter_session``): with pid and mount namespaces."""
        return sandbox.sessions_possible(self._plan())

    def workdir_for(self, job: Job) -> str | None:
        """Each run outside a session prepares its own working directory."""
        return None

    def session(self) -> execute.Session:
        """Runs of one submission (its data, then variants) in one sandbox when the platform allows
        (``sandbox.sessions_possible``); otherwise each run is started on its own, as by ``run``."""
        if self.sessions:
            return Session(self)
        from grader.run.execute import Separate

        return Separate(self)

    def _release(self, handle: Child) -> None:
        with self._lock:
            if handle.server is self._server:
                handle.server.release(handle.pid)  # now the server may reap it

    def run(self, job: Job) -> RunResult:
        from grader.run.execute import run_with_retries

        if self.sessions:  # the server's children are sandboxed ahead, for sessions: a session of one run
            with Session(self) as session:
                return session.run(job)
        return run_with_retries(self, job)

    # -- the server's life ---------------------------------------------------------------------

    def start(self) -> ForkServer:
        """Start the server now (it starts at the first notebook otherwise)."""
        with self._lock:
            return self._ensure()

    def _ensure(self) -> ForkServer:
        if self.closed:
            raise ExecutorError("The forking executor was stopped; no more notebooks are run.")
        if self._server is not None and not self._server.alive():
            self._replace(self._server)
        if self._server is None:
            self._server = ForkServer(self.python, self.modules, self.start_timeout, self.pool, self.reply_timeout,
                                      plan=self._plan().to_wire() if self.sessions else None)
        return self._server

    def _replace(self, server: ForkServer) -> None:
        server.kill()
        if self._server is server:
            self._server = None
            self.restarts += 1

    @property
    def server(self) -> ForkServer | None:
        return self._server

    def settle(self) -> None:
        """Wait until every finished notebook's processes are gone (they are ended in the background)."""
        self._cleaner.drain()

    def close(self) -> None:
        """Stop the server and every notebook still running; later notebooks are refused."""
        self._cleaner.stop()
        with self._lock:
            self.closed = True
            if self._server is not None:
                self._server.close()
                self._server = None

    def __enter__(self) -> ForkingExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DEFAULT: ForkingExecutor | None = None
_DEFAULT_LOCK = threading.Lock()


def default_executor() -> ForkingExecutor:
    """The process-wide forking executor (one warm server however many Graders use it)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT.closed:
            _DEFAULT = ForkingExecutor()
        return _DEFAULT


@atexit.register
def _close_all() -> None:
    for executor in list(_LIVE):
        try:
            executor.close()
        except Exception:  # noqa: BLE001 - at exit, one executor failing to stop must not keep the others running
            pass
