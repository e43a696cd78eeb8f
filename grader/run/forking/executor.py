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
from collections.abc import Hashable
from dataclasses import replace
from typing import TYPE_CHECKING

from grader.errors import ExecutorError, ServerGone
from grader.run import sandbox
from grader.run.execute import Capabilities, Separate, run_with_retries
from grader.run.forking import POOL, PRELOAD, REPLY_TIMEOUT, SPAWN_TRIES, STANDING, START_TIMEOUT
from grader.run.forking.client import ForkServer
from grader.run.forking.session import Child, Cleaner, Session, write_all

# Servers kept at most before a submission's own libraries (``Job.warm``) are no longer given one:
# each holds its libraries in memory for the rest of the batch.
WARM_SERVERS = 4

if TYPE_CHECKING:
    from grader.run import execute
    from grader.run.job import Job, JobWire, RunResult, SessionSetup

_LIVE: weakref.WeakSet[ForkingExecutor] = weakref.WeakSet()


class ForkingExecutor:
    """Runs each notebook in a child forked from a warm server (the default executor)."""

    name = "forking"
    # A warm server to start ahead; every forking executor is ended at the process's exit (``_close_all``).
    capabilities = Capabilities(starts_ahead=True, lives_with_process=True)

    def __init__(
        self,
        preload: tuple[str, ...] | None = None,
        python: str = sys.executable,
        start_timeout: float = START_TIMEOUT,
        pool: int = POOL,
        reply_timeout: float = REPLY_TIMEOUT,
        features: sandbox.Features | None = None,
    ):
        # preload None: each job says what its server imports (``Job.preload``, from the assignment),
        # and jobs that say nothing get PRELOAD. A tuple: one server with those modules for every job.
        self.fixed = tuple(preload) if preload is not None else None
        self.modules = self.fixed if self.fixed is not None else PRELOAD
        self.python, self.pool = python, pool
        self.start_timeout, self.reply_timeout = start_timeout, reply_timeout
        self._servers: dict[tuple[str, ...], ForkServer] = {}  # one warm server per distinct preload set
        self._server: ForkServer | None = None  # the one started or used last
        self._lock = threading.Lock()
        self.restarts = 0  # how many times a dead server was replaced
        self.closed = False
        self.features = features  # None: whatever sandbox.features() finds on this platform
        self._cleaner = Cleaner(self._release)
        self._standing: list[Session] = []  # sessions given back (``session(reuse=...)``), oldest first
        self._lent = self._most_lent = 0  # such sessions in use now, and at most so far
        _LIVE.add(self)

    def preload_for(self, job: Job | None) -> tuple[str, ...]:
        """The preload set (the key of its server) a job runs with: with the libraries the
        submission adds (``Job.warm``) while the executor keeps fewer than ``WARM_SERVERS`` servers,
        or already has that one."""
        if job is None or job.preload is None:
            return self.modules
        base = self.preload_for_set(job.preload)
        if not job.warm or self.fixed is not None:
            return base
        warm = self.preload_for_set(job.preload + job.warm)
        with self._lock:
            return warm if warm in self._servers or len(self._servers) < WARM_SERVERS else base

    # -- children: run_with_retries' calls (spawn, finish) and a session's (session.SessionHost) --

    def spawn(self, wire: JobWire, workdir: str, preload: tuple[str, ...] | None = None) -> tuple[Child, int]:
        """Fork a child for this job, from the server of ``preload`` (the default set if None);
        returns (handle, read end of its event pipe). Without sessions only: with them, the
        server's children expect a session (``Session.spawn``)."""
        if self.sessions:
            raise ExecutorError("This forking executor runs notebooks in sessions; use run() or session().")
        event_r, event_w = os.pipe()
        try:
            child = self.start_child(wire, workdir, event_w, preload if preload is not None else self.modules)
        except BaseException:
            os.close(event_r)
            raise
        finally:
            os.close(event_w)
        return child, event_r

    def start_child(self, wire: JobWire | SessionSetup, workdir: str, channel: int, preload: tuple[str, ...]) -> Child:
        """A child of ``preload``'s server, handed ``wire`` (a job, or a session's setup) through a
        pipe and ``channel`` (a descriptor: its event pipe, or a session's control socket).
        ``session.SessionHost``'s call, and ``spawn``'s."""
        job_r, job_w = os.pipe()
        try:
            with self._lock:
                for _ in range(SPAWN_TRIES):
                    server = self._ensure(preload)
                    try:
                        pid = server.fork(job_r, channel, workdir)
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

    def session(self, reuse: Hashable | None = None) -> execute.Session:
        """Runs of one submission (its data, then variants) in one sandbox when the platform allows
        (``sandbox.sessions_possible``); otherwise each run is started on its own, as by ``run``.

        ``reuse`` (a key; for the trusted solution's runs, never a student's): an open session
        given back under the same key is taken again, and this one is given back on exit instead
        of ending. The solution's runs for each submission then cost no new sandbox, and a run
        whose job says ``stay`` leaves its process, put back as it was, to take the next one
        (``Job.stay``); any other run is a fresh process, after init has cleaned up the one before."""
        if not self.sessions:
            return Separate(self)
        session = None
        if reuse is not None:
            with self._lock:
                self._lent += 1
                self._most_lent = max(self._most_lent, self._lent)
                for i in range(len(self._standing) - 1, -1, -1):
                    if self._standing[i].reuse == reuse:
                        session = self._standing.pop(i)
                        break
        if session is None:
            session = Session(self, reuse=reuse)
        return session

    def end_kept(self) -> None:
        """End the sessions kept for ``session(reuse=...)`` (each holds a sandbox: a keeper, its
        init and a warm process, and one descriptor here); the next such session opens a new one."""
        with self._lock:
            kept, self._standing = self._standing, []
        for session in kept:
            session.end()

    def give_back(self, session: Session) -> None:
        """Keep a session made by ``session(reuse=...)`` whose caller's runs are over, for the next
        such call (``session.SessionHost``'s call, from ``Session.close``). As many are kept as were
        ever in use at once (``STANDING`` at least); beyond that the one given back longest ago ends."""
        ended = [session]
        with self._lock:
            self._lent -= 1
            if session.child is not None and not self.closed:
                self._standing.append(session)
                keep = max(STANDING, self._most_lent)
                ended, self._standing = self._standing[:-keep], self._standing[-keep:]
        for old in ended:
            old.end()

    def _release(self, handle: Child) -> None:
        with self._lock:
            if any(handle.server is server for server in self._servers.values()):
                handle.server.release(handle.pid)  # now the server may reap it

    def run(self, job: Job) -> RunResult:
        if self.sessions:  # the server's children are sandboxed ahead, for sessions: a session of one run
            with Session(self) as session:
                return session.run(replace(job, last=True))
        return run_with_retries(_Lone(self, self.preload_for(job)), job)

    # -- the server's life ---------------------------------------------------------------------

    def start(self, preload: tuple[str, ...] | None = None) -> ForkServer:
        """Start the server of ``preload`` (the default set if None) now; servers start at their
        first notebook otherwise."""
        with self._lock:
            return self._ensure(self.modules if preload is None else self.preload_for_set(preload))

    def preload_for_set(self, preload: tuple[str, ...]) -> tuple[str, ...]:
        """The server's key for a preload set: the executor's fixed set if it has one."""
        return self.fixed if self.fixed is not None else tuple(sorted(set(preload)))

    def _ensure(self, preload: tuple[str, ...]) -> ForkServer:
        if self.closed:
            raise ExecutorError("The forking executor was stopped; no more notebooks are run.")
        server = self._servers.get(preload)
        if server is not None and not server.alive():
            self._replace(server)
            server = None
        if server is None:
            server = ForkServer(
                self.python,
                preload,
                self.start_timeout,
                self.pool,
                self.reply_timeout,
                plan=lambda: self._plan().to_wire() if self.sessions else None,
            )
            self._servers[preload] = server
        self._server = server
        return server

    def _replace(self, server: ForkServer) -> None:
        server.kill()
        for key, running in list(self._servers.items()):
            if running is server:
                del self._servers[key]
                self.restarts += 1
        if self._server is server:
            self._server = None

    @property
    def server(self) -> ForkServer | None:
        return self._server

    @property
    def servers(self) -> dict[tuple[str, ...], ForkServer]:
        """The running servers, by preload set."""
        return dict(self._servers)

    def settle(self) -> None:
        """Wait until every finished notebook's processes are gone (they are ended in the background)."""
        self._cleaner.drain()

    def close(self, wait: bool = True) -> None:
        """Stop the server and every notebook still running; later notebooks are refused.
        ``wait=False`` (at the grader's exit): the servers end what is left (they kill their
        children when their socket closes) without the grader waiting for them."""
        with self._lock:
            self.closed = True
        self.end_kept()
        self._cleaner.stop(drain=wait)
        with self._lock:
            servers, self._servers, self._server = list(self._servers.values()), {}, None
        for server in servers:
            server.close(wait=wait)

    def __enter__(self) -> ForkingExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Lone:
    """A spawner for ``run_with_retries`` that starts each attempt from the server of one preload set."""

    def __init__(self, executor: ForkingExecutor, preload: tuple[str, ...]):
        self.executor, self.preload = executor, preload
        self.name, self.features = executor.name, executor.features

    def spawn(self, wire: JobWire, workdir: str) -> tuple[Child, int]:
        return self.executor.spawn(wire, workdir, self.preload)

    def finish(self, handle: Child, complete: bool = True) -> None:
        self.executor.finish(handle, complete)

    def workdir_for(self, job: Job) -> str | None:
        return None


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
            executor.close(wait=False)  # a CI job grading one notebook would wait ~0.1 s for the servers' cleanup
        except Exception:  # noqa: BLE001 - at exit, one executor failing to stop must not keep the others running
            pass
