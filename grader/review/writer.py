"""The review page's writer: the outputs written again, off the request's thread, after grades change."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from grader.course.model import Assignment, Course
from grader.errors import GraderError
from grader.review import merge
from grader.review.store import GradeStore


class Writer:
    """Writes the outputs again shortly after grades change, off the request's thread: those of the
    submissions the store's log says changed since they were last written (``merge.catch_up``), so
    a change is never passed over. A write that fails (a full disk) is kept as ``problem``, shown in
    the page, and tried again until it succeeds; it is never reported as done."""

    RETRY = 5.0  # seconds between tries of a write that failed

    def __init__(self, store: GradeStore, course: Course, assignment: Assignment, out: Path, formats: Sequence[str]):
        self.args = (store, course, assignment, out, tuple(formats))
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.stopped = False
        self.said = ""
        self.problem = ""
        self.thread = threading.Thread(target=self._loop, name="grader-review-writer", daemon=True)
        self.thread.start()
        self.wake.set()  # whatever is behind already, written at once

    def changed(self, ids: Sequence[str]) -> None:
        self.wake.set()

    def flush(self) -> bool:
        """Write what is behind; whether the outputs now hold every change."""
        store, course, assignment, out, formats = self.args
        with self.lock:
            try:
                merge.catch_up(store, course, assignment, out, formats)
            except GraderError as exc:  # a roster conflict: every other file is written; said once
                if str(exc) != self.said:
                    self.said = str(exc)
                    print(f"grader: {exc}", file=sys.stderr, flush=True)
            except OSError as exc:
                problem = f"the outputs in {out}/ could not be written: {exc.strerror or exc} ({exc.filename or out})"
                if problem != self.problem:
                    print(f"grader: {problem}; trying again", file=sys.stderr, flush=True)
                self.problem = problem
                return False
            self.problem = ""
            return True

    def _loop(self) -> None:
        while not self.stopped:
            self.wake.wait(self.RETRY if self.problem else None)
            self.wake.clear()
            if self.stopped:
                return
            self.wake.wait(0.5)  # a burst of keys writes once
            self.wake.clear()
            self.flush()

    def stop(self) -> str:
        """Stop, writing what is behind once more; the problem that kept it from being written, if any."""
        self.stopped = True
        self.wake.set()
        self.thread.join(timeout=5)
        self.flush()
        return self.problem
