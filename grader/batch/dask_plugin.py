"""The worker side of cluster grading: a Dask worker plugin holding one grader per worker process.

``GraderPlugin`` reaches every worker of the cluster (and every worker that joins later) through
the scheduler, carrying the ``Bundle`` the client made (``grader.batch.bundle``). On a worker it
makes one ``WorkerGrader``: the executor named by the client, started on the first submission and
kept alive across tasks and runs (for the forking executor: its warm server and sandboxes set up
ahead, until the worker process ends), and the assignment graded from its reference bundle as
received, with the data files students' notebooks read beside it, in a folder of its own.
``grade_task`` is the task the client submits per submission.

This module imports Dask's ``distributed`` and is imported only when a cluster is used.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin, get_client, get_worker

from grader.batch.bundle import Bundle
from grader.batch.store import code_digest
from grader.errors import GraderError, UsageError
from grader.judge import document
from grader.judge.grading import Grader
from grader.run import executors

MAX_STARTS = 2  # a task started this many times has killed as many workers: its next start gives up


class WorkerGrader:
    """The grader of one worker process: its executor, started on first use and kept across tasks."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.lock = threading.Lock()
        self.grader: Grader | None = None
        self.root: Path | None = None
        self.assignment = bundle.assignment
        self.problem = ""
        if bundle.code != code_digest():
            self.problem = (
                "this worker runs other grader code than the client; install the same "
                "version of the grader on every worker"
            )

    def _ready(self) -> Grader:
        with self.lock:
            if self.grader is None:
                self.root = Path(tempfile.mkdtemp(prefix="grader-worker-"))
                # The assignment graded from its reference bundle, with the data files beside it
                # (where an assignment with a bundle has them); no solution on this machine.
                home = self.root / "course"
                home.mkdir()
                bundle = home / "references.json"
                bundle.write_bytes(self.bundle.references)
                os.chmod(bundle, 0o600)
                for rel, content in self.bundle.data:
                    target = home / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(content)
                a = self.bundle.assignment
                self.assignment = dataclasses.replace(
                    a, solution=home / a.solution.name, skeleton=home / a.skeleton.name, bundle=bundle
                )
                self.grader = Grader(self.bundle.course, executors.make_executor(self.bundle.executor))
                if self.bundle.variant_secret:
                    self.grader.references.secret = self.bundle.variant_secret
            return self.grader

    def grade(self, name: str, content: bytes, student: str) -> dict[str, Any]:
        if self.problem:
            raise UsageError(self.problem)
        grader = self._ready()
        assert self.root is not None
        folder = self.root / "submissions" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        path = folder / (Path(name).name or "submission.ipynb")
        try:
            path.write_bytes(content)
            return document.dump(grader.grade(self.assignment, path, student=student))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        with self.lock:
            if self.grader is not None:
                # An executor that lives with the process (the forking executor's warm server, the
                # process's own, shared by every grader in it) stays for the next run and ends with
                # the worker process (at exit, or when the process is killed and the server reads
                # end-of-file). Others are closed here.
                if not self.grader.executor.capabilities.lives_with_process:
                    self.grader.executor.close()
                self.grader = None
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None


class GraderPlugin(WorkerPlugin):
    """Sent by the scheduler to every worker; holds that worker process's grader."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.grader: WorkerGrader | None = None

    def setup(self, worker: Any) -> None:
        self.grader = WorkerGrader(self.bundle)

    def teardown(self, worker: Any) -> None:
        if self.grader is not None:
            self.grader.close()


def grade_task(plugin: str, name: str, content: bytes, student: str) -> dict[str, Any]:
    """Runs on a worker: one submission graded by that worker's grader, as plain data.

    Every start is logged on the scheduler under the task's own key first: a task started more
    than ``MAX_STARTS`` times has had its worker die under it that often, and returns
    ``{"died": True}`` instead of running the notebook once more.
    """
    worker = get_worker()
    topic = f"grader-starts-{worker.get_current_task()}"
    client = get_client()
    client.log_event(topic, {"worker": worker.address})
    if len(client.get_events(topic)) > MAX_STARTS:
        return {"died": True}
    found = worker.plugins.get(plugin)
    if not isinstance(found, GraderPlugin) or found.grader is None:
        raise GraderError(f"The grader's worker plugin {plugin} is not set up on the Dask worker {worker.address}.")
    return found.grader.grade(name, content, student)
