"""A fresh worker process (``python -m grader.run.worker``), started when its job comes or ahead of it.

Light on purpose (it imports no numpy, nbformat or course model): ``grader check`` starts the
worker first thing, so that it imports IPython while the grader itself loads the course, the
checks and the notebook. Started ahead, the worker knows nothing of the job; it gets it on stdin
like any other, enters the sandbox, then runs it. Nothing of the student's runs before that.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader import PACKAGE_DIR
from grader.run.sandbox.host import environment

if TYPE_CHECKING:
    from grader.run.job import JobWire

AHEAD = "--ahead"  # the worker's flag: started before its job, so it loads IPython while it waits


@dataclass
class Started:
    """A worker process and the read end of its event pipe; ``used`` once it has its job."""

    proc: subprocess.Popen[bytes]
    events: int
    used: bool = False


def start(python: str, workdir: str | None) -> Started:
    """Start a worker for a job in ``workdir``; ``None``: ahead of a job not known yet."""
    r, w = os.pipe()
    place = workdir or tempfile.gettempdir()
    try:
        proc = subprocess.Popen(
            [python, "-m", "grader.run.worker", str(w), *([] if workdir else [AHEAD])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=place,
            env={**environment(place), "PYTHONPATH": os.path.dirname(PACKAGE_DIR)},
            pass_fds=(w,),
            start_new_session=True,
        )
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    return Started(proc, r)


def hand_over(started: Started, wire: JobWire) -> None:
    """Give the worker its job (it reads stdin to the end)."""
    started.used = True
    try:
        assert started.proc.stdin is not None
        started.proc.stdin.write(json.dumps(wire).encode())
        started.proc.stdin.close()
    except BrokenPipeError:
        pass  # it has ended already; its event pipe says so


def discard(started: Started) -> None:
    """End a worker that never got its job: at the end of its stdin it exits."""
    if started.used:
        return
    started.used = True
    with contextlib.suppress(OSError):
        os.close(started.events)
    with contextlib.suppress(OSError):
        assert started.proc.stdin is not None
        started.proc.stdin.close()
    try:
        started.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        started.proc.kill()
        started.proc.wait()
