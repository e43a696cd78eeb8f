"""The warm forking executor: one long-lived server with the heavy imports done, forking per submission.

Starting Python and importing torch costs seconds; the student's code in these exercises costs
milliseconds. So a server process is started once (``python -m grader.run.forkserver``, a fresh
interpreter, never a fork of the grader), imports numpy, torch, pandas, matplotlib (Agg) and builds
an IPython shell, then forks children ahead of time, one per submission.

With pid and mount namespaces (``sandbox.sessions_possible``), each child sets up a sandbox as
soon as it is forked and then serves a *session*: the runs of one submission (its own data, then
variants), each in a process of its own that init forks and cleans up after
(``sandbox.enter_session``; ``_Session`` here is the grader's side):

    grader process                              server (python -m grader.run.forkserver)
      _Session._open ── job pipe + control ──►    hands them to a child set up ahead of time
        writes {workdir, limits, sandbox} ───────────►  init: adds the working directory, pivots
      _Session.spawn ── on control: job + event pipe ──►  a run's process, forked ahead:
        writes the run's job ─────────────────────────►     worker.run_isolated -> frames
        run_with_retries ◄──────── event pipe ────────────
        finish: wait for init's "ready"; at the end (or after a bad run) close control,
          then the cleaner thread: sandbox.terminate(child), then ── release ──►  waitpid(child)

Without them, a child takes one job and its event pipe and runs ``grader.run.worker.serve``
(``sandbox.enter``, then the cells), as the subprocess executor's worker does, only warm.

What the server never does before it forks, because every child would inherit it:
  * touch CUDA (children see no GPU; a CUDA context does not survive fork);
  * start thread pools (one intra-op thread, OMP/MKL/OpenBLAS told one thread; a forked child
    has only the forking thread, so a pool would be dead weight or a deadlock);
  * see anything of a submission or a reference value: the job goes from the grader straight to
    the child through a pipe, and the server was exec'd with a scrubbed environment.

The server keeps a child as a zombie until the grader has ended its process tree and released
it, so neither its pid nor its process group can be reused by an unrelated process in between.

If the server dies (a student can kill its parent), the next notebook starts a new one; a
notebook that was running keeps its own pipe and finishes normally.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from grader import PACKAGE_DIR
from grader.errors import ExecutorError, SandboxError
from grader.run import sandbox

PRELOAD = ("numpy", "torch", "pandas", "matplotlib.pyplot")
REPLY_TIMEOUT = 15.0  # seconds the server may take to fork; longer means it is stopped or stuck
START_TIMEOUT = 120.0  # seconds for the server to import everything and say it is ready
MAX_MESSAGE = 4096
SPAWN_TRIES = 3  # a server found dead is replaced, then the request is sent again
POOL = 2  # children forked ahead of time, waiting for a notebook


# --------------------------------------------------------------------------------------------
# Server side: runs in ``python -m grader.run.forkserver FD MODULES``


def preload(modules: tuple[str, ...]) -> tuple[Any, list[str]]:
    """Import the modules and build the shell, leaving no thread pool and no CUDA state behind."""
    import gc
    import importlib

    loaded = []
    for name in modules:
        try:
            if name.startswith("matplotlib"):
                import matplotlib

                matplotlib.use("Agg")
            module = importlib.import_module(name)
        except Exception:  # an optional library that is not installed is simply not preloaded
            continue
        if name == "torch":
            module.set_num_threads(1)  # no intra-op pool; never torch.cuda.*
        loaded.append(name)
    from grader import capture  # noqa: F401 - the child needs them; import once, here
    from grader.run import worker

    shell = worker.make_shell()
    _warm_up(shell, loaded)
    gc.collect()
    gc.freeze()  # children's collections then leave the preloaded objects (and their pages) alone
    return shell, loaded


WARM_UP = {
    "numpy": ["import numpy as np\na = np.arange(6.0).reshape(2, 3)\nb = a @ a.T / np.sqrt(3.0)", "b",
              "print(a, np.exp(a - a.max(axis=1, keepdims=True)).sum(axis=-1))"],
    "torch": ["import torch\nt = torch.arange(6.0).reshape(2, 3)\nu = torch.softmax(t @ t.T, dim=-1)", "u",
              "print(t, u.sum(dim=1), torch.nn.functional.relu(t))"],
    "pandas": ["import pandas as pd\nf = pd.DataFrame({'x': [1.0, 2.0]})", "f"],
}


def _warm_up(shell: Any, loaded: list[str]) -> None:
    """Run the code paths every child runs (cell compilation, display, errors, captures) once here,
    so their lazy imports and caches are shared by all children instead of paid by each. Leaves
    the shell's namespace as it was and draws nothing from any random generator."""
    import io

    from grader.run import worker

    cells = ["x = 1\nx", "def f(v):\n    return v * 2\nf(3)", "%matplotlib inline", "1 / 0"]
    for name in loaded:
        cells += WARM_UP.get(name, [])
    captures = [{"id": "a", "kind": "expr", "target": "f(2)", "point": None, "seed": None},
                {"id": "b", "kind": "value", "target": "x", "point": None, "seed": None}]
    for name in ("numpy", "torch"):
        if name in loaded:
            captures.append({"id": name, "kind": "value", "target": "b" if name == "numpy" else "u",
                             "point": None, "seed": None})
    job = {"cells": [{"index": i + 1, "source": s, "skip": ""} for i, s in enumerate(cells)],
           "captures": captures, "injections": {},
           "limits": {"capture_mb": 1, "output_kb": 64}, "traceback_lines": 8}
    namespace = dict(shell.user_ns)
    contents = {id(v): (v, v.copy()) for v in namespace.values() if type(v) in (dict, list)}  # In, Out
    code_name = shell.compile.__dict__.get("get_code_name")
    try:
        worker.Runner(job, io.BytesIO(), shell).run()
    finally:
        shell.user_ns.clear()
        shell.user_ns.update(namespace)
        for v, saved in contents.values():
            if type(v) is list:
                v[:] = saved
            else:
                v.clear()
                v.update(saved)
        if code_name is None:
            shell.compile.__dict__.pop("get_code_name", None)
        else:
            shell.compile.get_code_name = code_name


class _Pool:
    """Children forked ahead of time, each waiting on its own channel for a job's two fds.

    Forking a process with torch loaded costs a few milliseconds (page tables); doing it ahead of
    the request, while the previous notebook runs, takes it off every notebook's critical path."""

    def __init__(self, sock: socket.socket, size: int, plan: dict | None = None):
        self.sock, self.size, self.plan = sock, size, plan
        self.path0 = sys.path[0] if sys.path else ""
        self.idle: list[tuple[int, socket.socket]] = []
        self.children: set[int] = set()  # every child not yet reaped, idle or running
        self.released: set[int] = set()  # killed by the grader, to be reaped

    def fill(self) -> None:
        while len(self.idle) < self.size:
            self.idle.append(self._fork())

    def _fork(self) -> tuple[int, socket.socket]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            _child(theirs, self.path0, self.plan)  # never returns
        theirs.close()
        self.children.add(pid)
        return pid, ours

    def hand_over(self, fds: list[int]) -> int | None:
        """Give the job's fds to an idle child; its pid, or None if it could not take them."""
        for _ in range(3):
            pid, chan = self.idle.pop(0) if self.idle else self._fork()
            try:
                socket.send_fds(chan, [b"job"], fds)
                return pid
            except OSError:
                self.released.add(pid)  # it died while idle (a student killed it); take another
            finally:
                chan.close()
        return None

    def release(self, pid: int) -> None:
        if pid in self.children:
            _kill_group(pid)
            self.released.add(pid)
            self.reap()

    def reap(self) -> None:
        for pid in list(self.released):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.released.discard(pid)
                self.children.discard(pid)

    def end(self) -> None:
        for _, chan in self.idle:
            chan.close()
        for pid in self.children:
            _kill_group(pid)
        self.released |= self.children
        deadline = time.monotonic() + 5
        while self.released and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)


def serve_forever(sock: socket.socket, pool_size: int = POOL, plan: dict | None = None) -> None:
    """Hand jobs to forked children until the grader closes its end of the socket; then end every child."""
    import select

    pool = _Pool(sock, pool_size, plan)
    try:
        while True:
            pool.fill()
            ready, _, _ = select.select([sock], [], [], 1.0 if pool.released else None)
            pool.reap()
            if not ready:
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
            except OSError:
                break
            if not data:
                break
            try:
                req = json.loads(data)
                op = req.get("op")
            except (ValueError, AttributeError):
                op = None
            if op == "fork" and len(fds) == 2:
                pid = pool.hand_over(fds)
                sock.sendall(json.dumps({"pid": pid}).encode())
            elif op == "release" and type(req.get("pid")) is int:
                pool.release(req["pid"])
            elif op == "ping":
                sock.sendall(json.dumps({"pid": os.getpid(), "threads": _threads(),
                                         "children": len(pool.children), "idle": len(pool.idle)}).encode())
            elif op == "stop":
                break
            for fd in fds:
                os.close(fd)
    finally:
        pool.end()


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _child(chan: socket.socket, path0: str, plan: dict | None) -> None:
    """A forked child. With a ``plan`` for sessions: set up the sandbox at once, then serve the
    runs of the submission it is given (``_session_child``). Otherwise: wait for a job, then run
    it as the subprocess executor's worker does (``worker.serve``: ``sandbox.enter`` isolates,
    then the cells run). Never returns."""
    code = 1
    try:
        os.setsid()  # out of the server's group at once, so killing either leaves the other alone
        keep = chan.fileno()
        os.closerange(3, keep)  # the server's socket (its end-of-file must reach the grader when
        os.closerange(keep + 1, 1 << 16)  # the server dies) and the other children's channels
        null = os.open(os.devnull, os.O_RDWR)  # not the server's log
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if null > 2:
            os.close(null)
        if plan is not None:
            _session_child(chan.detach(), path0, plan)
            code = 0
            return
        _, fds, _, _ = socket.recv_fds(chan, 16, 2)
        chan.close()
        if len(fds) != 2:  # the server ended before this child got a job
            code = 0
            return
        job_fd, event_fd = fds
        with os.fdopen(job_fd, "rb") as f:
            job = json.loads(f.read())
        if sys.path and sys.path[0] == path0:
            sys.path[0] = job["workdir"]  # as for `python -m` started in the working directory
        from grader.run import worker

        _reseed()
        with os.fdopen(event_fd, "wb", buffering=0) as out:
            worker.serve(job, out)
        code = 0
    except BaseException:  # the grader sees the stream end early and reports it
        code = 1
    finally:
        os._exit(code)


def _session_child(channel: int, path0: str, plan: dict) -> None:
    """Set up a session's sandbox now, before a submission is handed over on ``channel``
    (``sandbox.enter_session``); returns in each run's process once the run is over, or in the
    process where the setup failed, once the first run has been told why."""
    from grader.run import worker

    try:
        applied, run, event_fd = sandbox.enter_session(plan, channel)
    except SandboxError as exc:
        control = getattr(exc, "control", None)
        if control is None:  # it failed before the job came: wait for it, to answer its first run
            control = _take(channel, keep=1)
        if control is not None:
            event_fd = _take(control, keep=1)
            if event_fd is not None:
                from grader import capture

                with os.fdopen(event_fd, "wb", buffering=0) as out:
                    capture.write_frame(out, {"ev": "fatal", "reason": str(exc)[:300]})
        return
    if sys.path and sys.path[0] == path0:
        sys.path[0] = run["workdir"]  # as for `python -m` started in the working directory
    _reseed()
    with os.fdopen(event_fd, "wb", buffering=0) as out:
        worker.run_isolated(run, out, applied)


def _take(fd: int, keep: int) -> int | None:
    """The ``keep``-th of the two descriptors the next message on socket ``fd`` carries (closing the other)."""
    sock = socket.socket(fileno=fd)
    sock.settimeout(REPLY_TIMEOUT)
    try:
        _, fds, _, _ = socket.recv_fds(sock, 64, 2)
    except OSError:
        return None
    if len(fds) != 2:
        return None
    os.close(fds[1 - keep])
    return fds[keep]


def _reseed() -> None:
    """Random state as a fresh process would have it, not a copy of the server's."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()  # the CPU generator only: nothing here may touch CUDA


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(argv[0]))
    modules = tuple(m for m in (argv[1] if len(argv) > 1 else "").split(",") if m)
    pool = int(argv[2]) if len(argv) > 2 else POOL
    plan = json.loads(argv[3]) if len(argv) > 3 and argv[3] else None  # sandbox.Features: children serve sessions
    _, loaded = preload(modules)
    sock.sendall(json.dumps({"ev": "ready", "pid": os.getpid(), "preloaded": loaded, "threads": _threads()}).encode())
    serve_forever(sock, pool, plan)


# --------------------------------------------------------------------------------------------
# Grader side


class _ServerGone(Exception):
    """The server did not answer: it died, was stopped, or closed the socket."""


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ForkServer:
    """One running server process and the socket to it. Not thread-safe: the executor locks."""

    def __init__(self, python: str, modules: tuple[str, ...], start_timeout: float = START_TIMEOUT,
                 pool: int = POOL, reply_timeout: float = REPLY_TIMEOUT, plan: dict | None = None):
        self.home = tempfile.mkdtemp(prefix="grader-forkserver-")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.log = open(os.path.join(self.home, "server.log"), "w+b")
        env = {**sandbox.environment(self.home), "PYTHONPATH": os.path.dirname(PACKAGE_DIR)}
        try:
            self.proc = subprocess.Popen(
                [python, "-m", "grader.run.forkserver", str(theirs.fileno()), ",".join(modules), str(pool),
                 json.dumps(plan) if plan is not None else ""],
                stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, cwd=self.home, env=env,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        except OSError as exc:
            self._cleanup()
            raise ExecutorError(f"The forking server could not be started with {python}: {exc.strerror}.") from None
        finally:
            theirs.close()
        self.sock.settimeout(start_timeout)
        try:
            hello = self._receive()
        except _ServerGone:
            tail = self._log_tail()
            self.close()
            raise ExecutorError("The forking server did not start" + (f": {tail}" if tail else ".")) from None
        self.sock.settimeout(reply_timeout)
        self.pid: int = hello["pid"]
        self.preloaded: list[str] = hello.get("preloaded", [])
        self.threads: int = hello.get("threads", 0)

    def _receive(self) -> dict:
        try:
            data = self.sock.recv(MAX_MESSAGE)
        except (OSError, ValueError):
            raise _ServerGone from None
        if not data:
            raise _ServerGone
        try:
            return json.loads(data)
        except ValueError:
            raise _ServerGone from None

    def _send(self, message: dict, fds: tuple[int, ...] = ()) -> None:
        try:
            if fds:
                socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
            else:
                self.sock.sendall(json.dumps(message).encode())
        except (OSError, ValueError):
            raise _ServerGone from None

    def fork(self, job_fd: int, event_fd: int) -> int:
        self._send({"op": "fork"}, (job_fd, event_fd))
        pid = self._receive().get("pid")
        if type(pid) is not int:
            raise _ServerGone
        return pid

    def release(self, pid: int) -> None:
        try:
            self._send({"op": "release", "pid": pid})
        except _ServerGone:
            pass  # a dead server's children were handed to init, which reaps them

    def ping(self) -> dict:
        self._send({"op": "ping"})
        return self._receive()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stop the server; it ends its remaining children before it exits."""
        try:
            self.sock.close()  # the server reads end-of-file, kills its children and exits
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            self._cleanup()

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.close()

    def _log_tail(self) -> str:
        try:
            self.log.seek(0)
            lines = self.log.read().decode(errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1][:300] if lines else ""

    def _cleanup(self) -> None:
        import shutil

        try:
            self.log.close()
        except (OSError, AttributeError):
            pass
        shutil.rmtree(self.home, ignore_errors=True)


@dataclass
class _Child:
    pid: int
    server: ForkServer
    workdir: str


class _Cleaner:
    """Ends finished children off the critical path: ``sandbox.terminate``, then the server may reap.

    A notebook's result is complete at its last frame; killing what is left of its process tree
    takes a few milliseconds more (mostly waiting for SIGKILL to land). Doing that here lets the
    grader go on at once. The child stays unreaped (a zombie held by the server) until then, so its
    pid and process group cannot be reused; its working directory is removed again afterwards in
    case anything it left running wrote there. With more than ``backlog`` waiting, finish() does
    the work itself, so the backlog stays bounded however fast notebooks end."""

    def __init__(self, release: Any, backlog: int = 16):
        self.release, self.backlog = release, backlog
        self.queue: list[_Child] = []
        self.cond = threading.Condition()
        self.busy = 0
        self.stopped = False
        self.thread: threading.Thread | None = None

    def submit(self, child: _Child) -> None:
        with self.cond:
            if len(self.queue) < self.backlog and not self.stopped:
                self.queue.append(child)
                if self.thread is None:
                    self.thread = threading.Thread(target=self._loop, name="grader-cleaner", daemon=True)
                    self.thread.start()
                self.cond.notify_all()
                return
        self.clean(child)

    def clean(self, child: _Child) -> None:
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
            except Exception:  # never lose the thread; the server ends the rest when it stops
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

    def stop(self) -> None:
        self.drain()
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
            thread, self.thread = self.thread, None
        if thread is not None:
            thread.join()


def _write_all(fd: int, data: dict) -> None:
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(data).encode())
    except BrokenPipeError:
        pass  # the reader is gone already; its channel says so


class _Session:
    """Several runs of one submission in one sandbox: ``sandbox.enter_session`` in a pool child.

    The namespaces, the private root and the working directory are made once per submission
    instead of once per run; each run is still a process of its own, forked by the namespace's
    init, which ends whatever the run left behind and empties its writable places before saying
    ``ready``. Speaks ``run_with_retries``' executor protocol (spawn, finish, shared_workdir).

    A run that ended cleanly (its ``done`` frame arrived) leaves the session open for the next
    one; any other ending (a timeout, a crash, a broken protocol) ends the whole session, and the
    next run (the re-run without the bad cell, say) starts a fresh one. So a misbehaving run is
    handled exactly as a lone run would be.
    """

    READY_TIMEOUT = 5.0  # seconds for init to clean up after a finished run

    def __init__(self, executor: ForkingExecutor):
        self.executor = executor
        self.name = executor.name
        self.features = executor.features
        self.child: _Child | None = None  # the session's keeper, while it is open
        self.control: socket.socket | None = None
        self.workdir: str | None = None
        self.waiting = False  # a run finished; init has not said ready yet
        self.files: tuple = ()

    def shared_workdir(self, job: Any) -> str:
        """The session's working directory (made for the first run, or after a session ended)."""
        if self.waiting and not self._ready():
            self._end()
        if job.files != self.files:  # another submission's files: not this session's runs
            self._end()
        if self.workdir is None:
            self.workdir = sandbox.prepare_workdir(job.files)
            self.files = job.files
        return self.workdir

    def spawn(self, wire: dict, workdir: str) -> tuple[_Child, int]:
        event_r = self._send_run(wire)
        if event_r is None:  # the session is gone (its keeper was killed): start another
            event_r = self._send_run(wire)
            if event_r is None:
                raise ExecutorError("The sandbox of this submission ends before its runs can start.")
        return self.child, event_r

    def _send_run(self, wire: dict) -> int | None:
        """Send a run to the session (opening one if there is none); the read end of its event
        pipe, or None if the session turned out to be gone (it is ended then)."""
        if self.child is None and self.workdir is None:  # the session it was made for has just ended
            self.workdir = sandbox.prepare_workdir(self.files)
        wire = dict(wire, workdir=self.workdir)
        if self.child is None:
            self._open(wire)
        job_r, job_w = os.pipe()
        event_r, event_w = os.pipe()
        try:
            socket.send_fds(self.control, [b"run"], [job_r, event_w])
        except OSError:
            os.close(event_r)
            os.close(job_w)
            self._end()
            return None
        finally:
            os.close(job_r)
            os.close(event_w)
        _write_all(job_w, wire)
        return event_r

    def _open(self, wire: dict) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        setup = {"session": True, "workdir": wire["workdir"], "limits": wire["limits"], "sandbox": wire.get("sandbox")}
        try:
            self.child = self.executor._start_child(setup, wire["workdir"], theirs.fileno())
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(self.READY_TIMEOUT)
        self.control = ours

    def _ready(self) -> bool:
        self.waiting = False
        try:
            return self.control.recv(16) == b"ready"
        except OSError:  # a timeout: a run's processes do not end, or init is gone
            return False

    def finish(self, handle: _Child, complete: bool = True) -> None:
        if complete and handle is self.child:
            self.waiting = True  # init cleans up while the grader reads the results
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
        self._drop_workdir()  # what the grader prepared; the session's own view of it is gone with it

    def _drop_workdir(self) -> None:
        if self.workdir is not None:
            sandbox.remove_workdir(self.workdir)
            self.workdir = None

    def run(self, job: Any) -> Any:
        from grader.run.execute import run_with_retries

        return run_with_retries(self, job)

    def close(self) -> None:
        self._end()

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LIVE: "weakref.WeakSet[ForkingExecutor]" = weakref.WeakSet()


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
        self._cleaner = _Cleaner(self._release)
        _LIVE.add(self)

    # -- the two calls run_with_retries needs --------------------------------------------------

    def spawn(self, wire: dict, workdir: str) -> tuple[_Child, int]:
        """Fork a child for this job; returns (handle, read end of its event pipe). Without
        sessions only: with them, the server's children expect a session (``_Session.spawn``)."""
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

    def _start_child(self, wire: dict, workdir: str, second_fd: int) -> _Child:
        """Hand a pool child the job (written to a pipe) and ``second_fd`` (its channel)."""
        job_r, job_w = os.pipe()
        try:
            with self._lock:
                for _ in range(SPAWN_TRIES):
                    server = self._ensure()
                    try:
                        pid = server.fork(job_r, second_fd)
                        break
                    except _ServerGone:
                        self._replace(server)
                else:
                    raise ExecutorError("The forking server keeps dying before it can start a notebook.")
        except BaseException:
            os.close(job_w)
            raise
        finally:
            os.close(job_r)
        _write_all(job_w, wire)
        return _Child(pid, server, workdir)

    def finish(self, handle: _Child, complete: bool = True) -> None:
        """The notebook is over: its process tree is ended (here, or soon by the cleaner thread)."""
        self._cleaner.submit(handle)

    def _plan(self) -> sandbox.Features:
        return self.features or sandbox.features()

    @property
    def sessions(self) -> bool:
        """Whether notebooks run in sessions (``sandbox.enter_session``): with pid and mount namespaces."""
        return sandbox.sessions_possible(self._plan())

    def session(self) -> Any:
        """Runs of one submission (its data, then variants) in one sandbox when the platform allows
        (``sandbox.sessions_possible``); otherwise each run is started on its own, as by ``run``."""
        if self.sessions:
            return _Session(self)
        from grader.run.execute import Separate

        return Separate(self)

    def _release(self, handle: _Child) -> None:
        with self._lock:
            if handle.server is self._server:
                handle.server.release(handle.pid)  # now the server may reap it

    def run(self, job: Any) -> Any:
        from grader.run.execute import run_with_retries

        if self.sessions:  # the server's children are sandboxed ahead, for sessions: a session of one run
            with _Session(self) as session:
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
        except Exception:
            pass


if __name__ == "__main__":
    main()
