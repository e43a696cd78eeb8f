"""The forking server: ``python -m grader.run.forking.server FD MODULES POOL``.

A fresh interpreter that imports the libraries a notebook uses (``preload``), runs a few cells
once so that every child starts warm, reads the grader's first message on FD (the plan: the
sandbox its children set up, which the grader probes for while this process imports), then
forks children ahead of time (``_Pool``) and hands each one a job when the grader asks
(``serve_forever``). What a child does is ``_child``: with a plan (``sandbox.Features``), it sets
up a session's sandbox at once (``_session_child``); without, it waits for one job and runs it as
the subprocess executor's worker would.

This module imports only what the server needs: its children inherit all of it, and nothing of
the grader's side (grading, references, the executor) may be in a process that runs student code.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from grader.errors import SandboxError
from grader.run import sandbox
from grader.run.forking import HOME_PREFIX, MAX_MESSAGE, POOL, REPLY_TIMEOUT
from grader.run.sandbox.linux import page_out_libraries
from grader.seeding import seed_everything

if TYPE_CHECKING:  # the job's shape, for the type checker only: every child inherits what the server imports
    from grader.run.job import CaptureWire, JobWire


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
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional library that is missing or broken is simply not preloaded
            continue
        torch = sys.modules.get("torch")  # imported by name, or by torch.nn or another library
        if torch is not None:
            torch.set_num_threads(1)  # no intra-op pool; never torch.cuda.*
        loaded.append(name)
    import numpy  # noqa: F401 - capture's encoder reads every value's type with it, in every child

    from grader import capture  # noqa: F401 - the child needs them; import once, here
    from grader.run import frames, worker  # noqa: F401

    shell = worker.make_shell()
    _warm_up(shell, loaded)
    gc.collect()
    gc.freeze()  # children's collections then leave the preloaded objects (and their pages) alone
    return shell, loaded


# What students' cells do with each library, run once in the server on made-up values (nothing
# of a solution or a reference): the first use of each of these paths (lazy imports, dispatch
# tables, caches) is then shared by every child instead of paid again in each. The random
# generators are seeded here; every child reseeds them before its run.
WARM_UP = {
    "numpy": [
        "import numpy as np\na = np.arange(6.0).reshape(2, 3)\nb = a @ a.T / np.sqrt(3.0)",
        "b",
        "print(a, np.exp(a - a.max(axis=1, keepdims=True)).sum(axis=-1))",
        "np.random.seed(1)\nr = np.random.default_rng(1).uniform(-1, 1, size=(3, 2))\n"
        "e = np.exp(r - r.max(axis=-1, keepdims=True))\ne = e / e.sum(axis=-1, keepdims=True)\n"
        "m = np.apply_along_axis(lambda v: v / v.sum(), 1, np.abs(r) + 1)\n"
        "d = np.dot(r[0], r[1]), np.linalg.norm(r), np.triu(np.ones((3, 3)), k=1), np.tril(r @ r.T)\n"
        "z = np.zeros((2, 2)), np.ones(3), np.random.rand(2, 2), np.random.randn(2), np.allclose(e, e)",
        "e",
    ],
    "torch": [
        "import torch\nt = torch.arange(6.0).reshape(2, 3)\nu = torch.softmax(t @ t.T, dim=-1)",
        "u",
        "print(t, u.sum(dim=1), torch.nn.functional.relu(t))",
        "import torch.nn as nn\ntorch.manual_seed(1)\n"
        "class Layer(nn.Module):\n"
        "    def __init__(self, d_in, d_out, context, heads=2):\n"
        "        super().__init__()\n"
        "        self.W = nn.Parameter(torch.rand(d_in, d_out))\n"
        "        self.lin = nn.Linear(d_in, d_out, bias=False)\n"
        "        self.heads = nn.ModuleList([nn.Linear(d_in, d_out) for _ in range(heads)])\n"
        "        self.dropout = nn.Dropout(0.5)\n"
        "        self.register_buffer('mask', torch.triu(torch.ones(context, context), diagonal=1))\n"
        "    def forward(self, x):\n"
        "        q, k = x @ self.W, self.lin(x)\n"
        "        s = (q @ k.T).masked_fill(self.mask.bool()[:len(x), :len(x)], -torch.inf)\n"
        "        w = self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1))\n"
        "        return torch.cat([w @ h(x) for h in self.heads], dim=-1)\n"
        "x = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]])\n"
        "y = Layer(3, 2, 4)(x)\nz = Layer(3, 2, 4).eval()(torch.stack((x, x))[0])\n"
        "with torch.no_grad():\n"
        "    v = torch.dot(x[0], x[1]), torch.empty(2, 3), torch.zeros(2), x.unsqueeze(0).transpose(1, 2)\n"
        "    v = x.view(-1), x.T.contiguous(), torch.allclose(y, y), torch.nn.functional.softmax(x, dim=0)\n"
        "y.sum().backward()",
        "y",
        "print(y, x.shape, y.detach().numpy())",
    ],
    "pandas": ["import pandas as pd\nf = pd.DataFrame({'x': [1.0, 2.0]})", "f"],
}


def _warm_up(shell: Any, loaded: list[str]) -> None:
    """Run the code paths every child runs (cell compilation, display, errors, captures) once here,
    so their lazy imports and caches are shared by all children instead of paid by each. Leaves
    the shell's namespace as it was and draws nothing from any random generator."""
    import io

    from grader.run import worker

    cells = ["x = 1\nx", "def f(v):\n    return v * 2\nf(3)", "%matplotlib inline", "1 / 0"]
    libraries = [name for name in WARM_UP if name in sys.modules]  # preloaded, or imported by what was
    for name in libraries:
        cells += WARM_UP[name]
    captures: list[CaptureWire] = [
        {"id": "a", "kind": "expr", "target": "f(2)", "point": None, "seed": None},
        {"id": "b", "kind": "value", "target": "x", "point": None, "seed": None},
    ]
    for name in ("numpy", "torch"):
        if name in libraries:
            captures.append(
                {"id": name, "kind": "value", "target": "b" if name == "numpy" else "u", "point": None, "seed": None}
            )
    # A whole job, though the Runner reads only the cells, captures, injections, traceback_lines and
    # the limits capture_mb and output_kb: nothing is isolated, timed or written to disk here.
    job: JobWire = {
        "cells": [{"index": i + 1, "source": s, "skip": ""} for i, s in enumerate(cells)],
        "captures": captures,
        "injections": {},
        "limits": {
            "cell_timeout": 0.0,
            "notebook_timeout": 0.0,
            "cpu_time": 0,
            "memory_mb": 0,
            "output_kb": 64,
            "processes": 0,
            "open_files": 0,
            "file_size_mb": 0,
            "capture_mb": 1,
            "disk_mb": 0,
            "grader_cpu": 0.0,
            "memfd": False,
        },
        "workdir": "",
        "traceback_lines": 8,
        "sandbox": None,
    }
    with worker.state_kept(shell):
        worker.Runner(job, io.BytesIO(), shell).run()


class _Pool:
    """Children forked ahead of time, each waiting on its own channel for a job's two fds.

    Forking a process with torch loaded costs a few milliseconds (page tables); doing it ahead of
    the request, while the previous notebook runs, takes it off every notebook's critical path."""

    def __init__(self, sock: socket.socket, size: int, plan: dict[str, bool] | None = None):
        self.sock, self.size, self.plan = sock, size, plan
        self.path0 = sys.path[0] if sys.path else ""
        self.idle: list[tuple[int, socket.socket]] = []
        self.children: set[int] = set()  # every child not yet reaped, idle or running
        self.released: set[int] = set()  # killed by the grader, to be reaped
        self.cgroups: set[int] = set()  # memory cgroups of reaped children, to be removed once empty
        # The working directory the grader prepared for each child it has not released: if the
        # grader dies (SIGKILL, the OOM killer), nobody else would remove it.
        self.workdirs: dict[int, str] = {}

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
        self.workdirs.pop(pid, None)  # the grader's to remove now
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
                if self.plan is not None and self.plan.get("memory_cgroup"):
                    self.cgroups.add(pid)  # a child killed before its session ended: its cgroup, once empty
        self.cgroups = {pid for pid in self.cgroups if not sandbox.cgroup.remove(pid, timeout=0)}

    def end(self) -> None:
        for _, chan in self.idle:
            chan.close()
        for pid in self.children:
            _kill_group(pid)
        self.released |= self.children
        deadline = time.monotonic() + 5
        while (self.released or self.cgroups) and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)
        for workdir in self.workdirs.values():  # what the grader had no time to remove
            if os.path.basename(workdir).startswith(sandbox.WORKDIR_PREFIX) and os.path.isdir(workdir):
                sandbox.remove_workdir(workdir)
        self.workdirs.clear()


def serve_forever(sock: socket.socket, pool_size: int = POOL, plan: dict[str, bool] | None = None) -> None:
    """Hand jobs to forked children until the grader closes its end of the socket; then end every child."""
    import select

    pool = _Pool(sock, pool_size, plan)
    try:
        while True:
            pool.fill()
            # children killed are collected soon (20 ms): until then each counts against its uid's process
            # limit, which a run that shares the uid takes its own from (``sandbox.turn``)
            ready, _, _ = select.select([sock], [], [], 0.02 if pool.released else 1.0 if pool.cgroups else None)
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
                if pid is not None and isinstance(req.get("workdir"), str) and req["workdir"]:
                    pool.workdirs[pid] = req["workdir"]
                sock.sendall(json.dumps({"pid": pid}).encode())
            elif op == "release" and type(req.get("pid")) is int:
                pool.release(req["pid"])
            elif op == "ping":
                sock.sendall(
                    json.dumps(
                        {
                            "pid": os.getpid(),
                            "threads": _threads(),
                            "children": len(pool.children),
                            "idle": len(pool.idle),
                        }
                    ).encode()
                )
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


def _child(chan: socket.socket, path0: str, plan: dict[str, bool] | None) -> None:
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
            code = _session_child(chan.detach(), path0, plan)
            return
        _, fds, _, _ = socket.recv_fds(chan, 16, 2)
        chan.close()
        if len(fds) != 2:  # the server ended before this child got a job
            code = 0
            return
        job_fd, event_fd = fds
        with os.fdopen(job_fd, "rb") as f:
            job: JobWire = json.loads(f.read())
        if sys.path and sys.path[0] == path0:
            sys.path[0] = job["workdir"]  # as for `python -m` started in the working directory
        from grader.run import worker

        seed_everything(None)  # random state as a fresh process would have it, not a copy of the server's
        with os.fdopen(event_fd, "wb", buffering=0) as out:
            worker.serve(job, out)
        code = 0
    except BaseException:  # noqa: BLE001 - whatever happened, the child exits; the grader sees the stream end early
        code = 1
    finally:
        os._exit(code)


def _session_child(channel: int, path0: str, plan: dict[str, bool]) -> int:
    """Set up a session's sandbox now, before a submission is handed over on ``channel``
    (``sandbox.enter_session``); returns in each run's process once the run is over, or in the
    process where the setup failed, once the first run has been told why: the exit code, which
    tells the session's init whether to prepare a process for another run."""
    from grader.run import worker

    try:
        applied, run, event_fd, control = sandbox.enter_session(plan, channel)
    except SandboxError as exc:
        control = getattr(exc, "control", None)
        if control is None:  # it failed before the job came: wait for it, to answer its first run
            control = _take(channel, keep=1)
        if control is not None:
            first_run = _take(control, keep=1)  # the event pipe of the session's first run
            if first_run is not None:
                from grader.run import frames

                with os.fdopen(first_run, "wb", buffering=0) as out:
                    frames.write_frame(out, {"ev": "fatal", "reason": str(exc)[:300]})
        return 0
    if sys.path and sys.path[0] == path0:
        sys.path[0] = run["workdir"]  # as for `python -m` started in the working directory
    places = None  # a staying process's writable places, as they were before its first run
    while True:
        seed_everything(None)  # random state as a fresh process would have it, not a copy of the server's
        if control is None:
            with os.fdopen(event_fd, "wb", buffering=0) as out:
                worker.run_isolated(run, out, applied)
            return sandbox.LAST_RUN if run.get("last") else 0
        # A run that stays (the trusted solution's, ``Job.stay``): put back as it was, then take
        # the session's next run here, as init's next process would.
        if places is None:
            places = sandbox.writable_places(run["workdir"])
        with worker.state_kept(worker.make_shell(), run["workdir"]):
            with os.fdopen(event_fd, "wb", buffering=0) as out:
                worker.run_isolated(run, out, applied)
        sandbox.empty_places(places)
        run, event_fd, control = sandbox.await_run(control)


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


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    sock = socket.socket(fileno=int(argv[0]))
    modules = tuple(m for m in (argv[1] if len(argv) > 1 else "").split(",") if m)
    pool = int(argv[2]) if len(argv) > 2 else POOL
    sandbox.set_name("grader-server")
    _, loaded = preload(modules)
    page_out_libraries()  # import-time code, touched once: the children fault in what they use
    # The grader's first message: the sandbox children set up (sandbox.Features.to_wire(), for
    # sessions) or None. It probes the platform while this process imports.
    try:
        plan: dict[str, bool] | None = json.loads(sock.recv(MAX_MESSAGE))["plan"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # the grader is gone, or said nothing it could mean: nothing to serve
    if plan is not None and plan.get("memory_cgroup"):
        sandbox.cgroup.sweep()  # found once here, not again in every child; what a killed grader left, gone
    if plan is not None and plan.get("seccomp"):
        sandbox.prepare_seccomp(sandbox.Features.from_wire(plan).seccomp_sockets)  # built once, loaded per run
    sock.sendall(json.dumps({"ev": "ready", "pid": os.getpid(), "preloaded": loaded, "threads": _threads()}).encode())
    serve_forever(sock, pool, plan)
    # Its home (the grader's temporary folder for it, its working directory) goes last, once every
    # child has ended: the grader may not wait for that (``ForkServer.close(wait=False)``), and a
    # child set up ahead can still be making its view in there when the grader removes the folder.
    home = os.getcwd()
    if os.path.basename(home).startswith(HOME_PREFIX):
        shutil.rmtree(home, ignore_errors=True)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    main()
