"""The warm forking executor: one long-lived server with the heavy imports done, forking per submission.

Starting Python and importing torch costs seconds; the student's code in these exercises costs
milliseconds. So a server process is started once (``python -m grader.run.forking.server``, a fresh
interpreter, never a fork of the grader), imports what the assignment's notebooks import (its
*preload set*: ``Job.preload``, from ``grader.course.imports.preload_for``; ``PRELOAD`` for a job
that names none) and builds an IPython shell, warms both up on made-up values, then forks
children ahead of time, one per submission. The executor keeps one server per preload set, started
on demand, so a NumPy assignment's children never map torch and assignments that import the same
libraries share one server.

With pid and mount namespaces (``sandbox.sessions_possible``), each child sets up a sandbox as
soon as it is forked and then serves a *session*: the runs of one submission (its own data, then
variants), each in a process of its own that init forks and cleans up after
(``sandbox.enter_session``; ``session.Session`` is the grader's side):

    grader process                              server (python -m grader.run.forking.server)
      Session._open ─── job pipe + control ──►    hands them to a child set up ahead of time
        writes {workdir, limits, sandbox} ───────────►  init: adds the working directory, pivots
      Session.spawn ─── on control: job + event pipe ──►  a run's process, forked ahead:
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

The package:

    server    the server process: preload, warm-up, the pool of children, and what a child does
    client    ``ForkServer``, the grader's handle on one server process and the socket to it
    session   the grader's side of a session (``Session``), what it needs of the executor (``SessionHost``),
              and the cleaner that ends finished children
    executor  ``ForkingExecutor``, the executor itself: starts, replaces and stops the server

The settings both sides use are here. The classes are imported on first use, not with the
package: the server (``python -m grader.run.forking.server``) imports this package first, and
it must not import the grader's side of it (every child inherits whatever the server holds).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

PRELOAD = ("numpy", "torch", "pandas", "matplotlib.pyplot")  # for jobs that do not say what they import
REPLY_TIMEOUT = 15.0  # seconds the server may take to fork; longer means it is stopped or stuck
START_TIMEOUT = 120.0  # seconds for the server to import everything and say it is ready
MAX_MESSAGE = 4096
HOME_PREFIX = "grader-forkserver-"  # a server's temporary folder, its working directory
SPAWN_TRIES = 3  # a server found dead is replaced, then the request is sent again
POOL = 2  # children forked ahead of time, waiting for a notebook
STANDING = 2  # open sessions kept for the solution's runs at least (``ForkingExecutor.session(reuse=...)``)
STAY_RUNS = 32  # runs in a row one process of such a session takes (``Job.stay``) before a fresh one

if TYPE_CHECKING:
    from grader.run.forking.client import ForkServer
    from grader.run.forking.executor import ForkingExecutor, default_executor

_LAZY = {
    "ForkServer": "grader.run.forking.client",
    "ForkingExecutor": "grader.run.forking.executor",
    "default_executor": "grader.run.forking.executor",
}

__all__ = [
    "HOME_PREFIX",
    "MAX_MESSAGE",
    "POOL",
    "PRELOAD",
    "REPLY_TIMEOUT",
    "SPAWN_TRIES",
    "STANDING",
    "STAY_RUNS",
    "START_TIMEOUT",
    "ForkServer",
    "ForkingExecutor",
    "default_executor",
]


def __getattr__(name: str) -> Any:
    """The grader's side, imported when first asked for (the server never asks)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
