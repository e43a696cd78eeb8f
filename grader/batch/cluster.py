"""Grading a class on a Dask cluster: each worker process runs the grader's own executor.

    grader grade PATH... --cluster tcp://scheduler:8786

The client (the machine running ``grader grade``) reads the submissions, keeps the results cache
and writes every output, exactly as on one machine. Workers (``dask worker`` processes anywhere)
only grade: a submission goes to a worker as its file name and bytes, and comes back as a
scorecard in plain data.

- **What workers get** (``grader.batch.bundle``): the course settings, the assignment, its
  reference bundle (``References.save_bundle``: the reference values the client computed, the
  skipped cells' sources and the solution's steps the carry-forward runs execute) and the data
  files students' notebooks read, and the variant secret submissions' own variants are drawn
  with. A worker grades from the bundle, as an assignment with
  ``reference_bundle:`` does, and gives the scores this machine would. It reaches every worker, including
  one that joins later, as a Dask worker plugin (``grader.batch.dask_plugin``), which also keeps
  one executor per worker process alive across tasks (the forking executor's warm server and its
  sandboxes).
- **Streaming**: a few tasks per worker thread are in flight at a time, so a class of 100,000
  holds neither the scheduler's memory nor the client's.
- **A worker that dies** mid-submission: Dask runs its task again on another worker. Each start
  of a task is logged on the scheduler (an event per task); the third start of the same task does
  not run the notebook again but returns a ``crashed`` scorecard that says so. A scheduler with
  a lower ``allowed-failures`` gives up earlier with ``KilledWorker``, which becomes the same card.

Dask's ``distributed`` is an optional dependency (``pip install 'notebook-grader[cluster]'``);
this module imports it only when a cluster is used.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.batch.bundle import bundle_for_workers
from grader.batch.intake import Submission
from grader.course.model import Assignment
from grader.errors import GraderError, UsageError
from grader.files import printable
from grader.judge import document
from grader.judge.grading import Grader
from grader.judge.scorecard import Scorecard

WORKERS_TIMEOUT = 120.0  # seconds to wait for a first worker
IN_FLIGHT_PER_THREAD = 2  # tasks queued per worker thread: enough to keep each busy, no more

DIED_TWICE = (
    "grading this notebook stopped the grading machine twice (for example by using up its memory), "
    "so it was not run a third time"
)


def distributed_module() -> Any:
    """Dask's ``distributed``, or a UsageError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise UsageError(
            "--cluster needs Dask's distributed package, which is not installed: "
            "pip install 'notebook-grader[cluster]'."
        ) from None
    return distributed


# -- the client ----------------------------------------------------------------------------


def grade_on_cluster(
    grader: Grader,
    assignment: Assignment,
    work: list[tuple[str, Submission]],
    *,
    address: str,
    fingerprint: str,
    finish: Callable[[str, Scorecard], None],
    crashed: Callable[[Submission, str, bool], Scorecard],
    say: Callable[[str], None] | None = None,
) -> None:
    """Grade ``work`` (key, submission) on the cluster at ``address``; ``finish`` gets each card in the
    calling thread, as soon as it is back. ``crashed(submission, reason, internal)`` makes the card
    of one that could not be graded (``internal``: a fault of the grader, not stored, so a rerun
    tries again)."""
    distributed = distributed_module()
    bundle = bundle_for_workers(grader, assignment, fingerprint)
    try:
        # Dask's own setting (distributed.comm.timeouts.connect, 30 s unless configured) bounds the wait.
        client = distributed.Client(address, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"Cannot reach the Dask scheduler at {address}: {exc}") from None
    name = f"grader-{assignment.name}-{fingerprint[:16]}"
    try:
        try:
            client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"No Dask worker joined the scheduler at {address} within {WORKERS_TIMEOUT:.0f} s ({exc})."
            ) from None
        from grader.batch.dask_plugin import GraderPlugin, grade_task

        client.register_plugin(GraderPlugin(bundle), name=name)
        threads = sum(client.nthreads().values())
        if say is not None:
            say(f"grading on the Dask cluster at {address}: {len(client.nthreads())} worker(s), {threads} thread(s)")
        _stream(client, distributed, grade_task, name, work, finish, crashed, run=uuid.uuid4().hex[:8])
    finally:
        try:
            client.unregister_worker_plugin(name)  # each worker drops this assignment's data
        except Exception:  # noqa: BLE001 - a scheduler already gone has nothing to unregister
            pass
        client.close(timeout=10)


def _stream(
    client: Any,
    distributed: Any,
    grade_task: Callable[..., dict[str, Any]],
    plugin: str,
    work: list[tuple[str, Submission]],
    finish: Callable[[str, Scorecard], None],
    crashed: Callable[[Submission, str, bool], Scorecard],
    run: str,
) -> None:
    """Keep a few tasks per worker thread in flight; hand back each card as it arrives."""
    pending = iter(work)
    running: dict[Any, tuple[str, Submission]] = {}
    done = distributed.as_completed(loop=client.loop)
    window, checked = 0, 0.0

    def refill() -> None:
        nonlocal window, checked
        now = time.monotonic()
        if now - checked > 2.0:  # workers join and leave: size the window to the cluster now
            window = max(2, IN_FLIGHT_PER_THREAD * sum(client.nthreads().values()))
            checked = now
        while len(running) < window:
            nxt = next(pending, None)
            if nxt is None:
                return
            key, sub = nxt
            fut = client.submit(
                grade_task,
                plugin,
                printable(sub.path.name),
                _read(sub.path),
                sub.student,
                key=f"grade-{sub.id or 'x'}-{key[:12]}-{run}",
                pure=False,
            )
            running[fut] = nxt
            done.add(fut)

    try:
        refill()
        for fut in done:
            key, sub = running.pop(fut)
            card = _card(fut, sub, crashed, distributed)
            fut.release()
            finish(key, card)
            refill()
    except BaseException:
        client.cancel(list(running))
        raise


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # an unreadable file is graded as what it is: not a notebook


def _card(
    fut: Any, sub: Submission, crashed: Callable[[Submission, str, bool], Scorecard], distributed: Any
) -> Scorecard:
    try:
        data = fut.result()
    except distributed.KilledWorker:
        return crashed(sub, DIED_TWICE, False)
    except GraderError:
        raise  # the workers cannot run notebooks at all, or run other code: nothing else would be graded
    except Exception as exc:  # noqa: BLE001 - a bug in the grader: this submission says so, the rest goes on
        return crashed(
            sub, f"the grader itself failed on this submission ({type(exc).__name__}: {exc}); please report it", True
        )
    if data.get("died"):
        return crashed(sub, DIED_TWICE, False)
    return document.load(data)
