"""Grading many submissions at once: ``jobs`` at a time, identical contents once, nothing lost."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import overload

from grader.batch.intake import Intake, Submission
from grader.batch.progress import Progress
from grader.batch.store import ResultStore, fingerprint
from grader.course.late import Late
from grader.course.model import Assignment
from grader.errors import GraderError, SolutionError, UsageError
from grader.files import printable
from grader.judge.grading import Grader, not_graded
from grader.judge.scorecard import Execution, Origin, Scorecard, with_late
from grader.vocab import QuestionStatus, SubmissionStatus


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


Own = tuple[str, str, str, str, Origin | None, Late | None]  # (key, student, submission, id, origin, late)


class Cards(Sequence[Scorecard]):
    """A batch's scorecards in intake order. Those the result store holds are read back from it
    when asked for, so a batch of 10,000 keeps their keys in memory, not the cards (about 11 KB
    each); the others (no store, or an internal error, which is not stored) are kept as they are."""

    def __init__(self, size: int, store: ResultStore | None):
        self.store = store
        self.items: list[Scorecard | Own | None] = [None] * size

    def keep(self, i: int, card: Scorecard, key: str, stored: bool) -> None:
        # A stored card is read back and given its own identity again: its key and what is the
        # submission's own (its id, what its LMS said of it, its late record) are kept.
        own = (key, card.student, card.submission, card.id, card.origin, card.late)
        self.items[i] = own if stored and self.store is not None else card

    def done(self) -> Cards:
        """The cards delivered, in order (a submission without one, left out)."""
        self.items = [item for item in self.items if item is not None]
        return self

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> Scorecard: ...

    @overload
    def __getitem__(self, i: slice) -> list[Scorecard]: ...

    def __getitem__(self, i: int | slice) -> Scorecard | list[Scorecard]:
        if isinstance(i, slice):
            return [self._card(item) for item in self.items[i]]
        return self._card(self.items[i])

    def __iter__(self) -> Iterator[Scorecard]:
        return (self._card(item) for item in self.items)

    def _card(self, item: Scorecard | Own | None) -> Scorecard:
        if item is None:
            raise IndexError("this submission has no scorecard yet")
        if isinstance(item, Scorecard):
            return item
        key, student, submission, sid, origin, late = item
        assert self.store is not None  # keep() stores keys only with a store
        card = self.store.get(key)
        if card is None:
            raise GraderError(
                f"The scorecard of {submission} can no longer be read from the results in "
                f"{self.store.dir}; grade again (the others are read from there)."
            )
        return own_card(card, student, submission, sid, origin, late)


class Graded(Sequence[tuple[Path, str, Scorecard]]):
    """(notebook path, output name, scorecard) of each submission; a card is read when asked for
    (``Cards``), so writing the run's outputs holds one card at a time, not the class's."""

    def __init__(self, submissions: Sequence[Submission], cards: Sequence[Scorecard]):
        self.where = [(s.path, s.name) for s in submissions]
        self.cards = cards
        if len(self.where) != len(cards):
            raise ValueError(f"{len(self.where)} submissions but {len(cards)} scorecards")

    @property
    def names(self) -> list[str]:
        return [name for _, name in self.where]

    def __len__(self) -> int:
        return len(self.where)

    @overload
    def __getitem__(self, i: int) -> tuple[Path, str, Scorecard]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[Path, str, Scorecard]]: ...

    def __getitem__(self, i: int | slice) -> tuple[Path, str, Scorecard] | list[tuple[Path, str, Scorecard]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        path, name = self.where[i]
        return path, name, self.cards[i]


@dataclass
class Outcome:
    cards: Sequence[Scorecard]  # one per submission, in intake order (``Cards``)
    ran: int  # distinct contents graded in this run
    cached: int  # distinct contents whose result came from the store
    elapsed: float


def grade_all(
    grader: Grader,
    assignment: Assignment,
    submissions: list[Submission],
    *,
    jobs: int = 1,
    store: ResultStore | None = None,
    force: bool = False,
    on_card: Callable[[Submission, Scorecard], None] | None = None,
    progress: Progress | None = None,
    cluster: str | None = None,
    say: Callable[[str], None] | None = None,
) -> Outcome:
    """Grade every submission, ``jobs`` at a time; identical contents are graded once.

    Each result is stored the moment it is ready, so after an interruption (Ctrl-C, a kill) the
    same call picks up where it stopped. ``on_card`` runs in the calling thread for each submission
    as soon as its scorecard exists (cached ones first). A slow notebook holds one worker only.
    With ``cluster`` (a Dask scheduler's address) the grading runs on that cluster's workers
    (``grader.batch.cluster``); the store, the outputs and the order stay here, the same as
    on one machine. ``say`` gets lines for the person running it.
    """
    started = time.monotonic()
    grader.references.get(assignment)  # a broken solution stops the batch before anything runs
    groups: dict[str, list[int]] = {}
    order: list[str] = []
    for i, s in enumerate(submissions):
        key = s.sha256 or f"unreadable:{i}"
        if assignment.per_student is not None and s.sha256:
            # Graded on its student's own data: the same file from two students is two gradings.
            key = hashlib.sha256(f"{s.sha256}/{s.student}".encode()).hexdigest()
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    cards = Cards(len(submissions), store)

    def deliver(key: str, card: Scorecard, stored: bool) -> None:
        for i in groups[key]:
            s = submissions[i]
            own = own_card(card, s.student, printable(s.path.name), s.id, s.lms, s.late)
            cards.keep(i, own, key, stored)
            if on_card is not None:
                on_card(s, own)
        if progress is not None:
            progress.advance(len(groups[key]))

    todo: list[str] = []
    cached = 0
    for key in order:
        hit = None if force or store is None else store.get(key)
        if hit is not None:
            cached += 1
            deliver(key, hit, stored=True)
        else:
            todo.append(key)

    def finish(key: str, card: Scorecard) -> None:
        stored = store is not None and not card.execution.internal_error and store.put(key, card)
        deliver(key, card, stored)

    if cluster is not None and todo:
        from grader.batch.cluster import grade_on_cluster

        def crashed(sub: Submission, reason: str, internal: bool) -> Scorecard:
            return crashed_card(sub, assignment, grader.executor.name, reason, internal=internal)

        with _interrupt_on_sigterm():
            grade_on_cluster(
                grader,
                assignment,
                [(k, submissions[groups[k][0]]) for k in todo],
                address=cluster,
                fingerprint=store.key if store is not None else fingerprint(grader, assignment),
                finish=finish,
                crashed=crashed,
                say=say,
            )
        return Outcome(cards=cards.done(), ran=len(todo), cached=cached, elapsed=time.monotonic() - started)

    def work(key: str) -> Scorecard:
        s = submissions[groups[key][0]]
        return grader.grade(assignment, s.path, student=s.student, id=s.id)

    jobs = max(1, int(jobs))
    pending = iter(todo)
    running: dict[cf.Future[Scorecard], str] = {}
    pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grader")
    try:
        with _interrupt_on_sigterm():
            for key in _take(pending, 2 * jobs):
                running[pool.submit(work, key)] = key
            while running:
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    key = running.pop(fut)
                    finish(key, _result(fut, submissions[groups[key][0]], assignment, grader))
                    for nxt in _take(pending, 1):
                        running[pool.submit(work, nxt)] = nxt
    except BaseException as exc:
        for fut in running:
            fut.cancel()
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            grader.executor.close()  # ends the notebooks still running, so the workers return at once
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return Outcome(cards=cards.done(), ran=len(todo), cached=cached, elapsed=time.monotonic() - started)


def _take(it: Iterator[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def _result(fut: cf.Future[Scorecard], sub: Submission, assignment: Assignment, grader: Grader) -> Scorecard:
    """The future's scorecard; a fault of the grader itself stops the batch or becomes a crashed card."""
    try:
        return fut.result()
    except (SolutionError, UsageError):
        raise
    except GraderError:
        raise  # the executor cannot run notebooks at all: nothing else would be graded either
    except Exception as exc:  # noqa: BLE001 - a bug in the grader: this submission says so, the rest goes on
        return crashed_card(
            sub,
            assignment,
            grader.executor.name,
            f"the grader itself failed on this submission ({type(exc).__name__}: {exc}); please report it",
            internal=True,
        )


def own_card(
    card: Scorecard, student: str, submission: str, sid: str, origin: Origin | None, late: Late | None
) -> Scorecard:
    """A graded card (shared by identical files, or read from the results) as this submission's own:
    its identity, what its LMS said of it, and its late policy applied (a new card, never changed)."""
    return with_late(dataclasses.replace(card, student=student, submission=submission, id=sid, origin=origin), late)


def crashed_card(sub: Submission, assignment: Assignment, executor: str, reason: str, *, internal: bool) -> Scorecard:
    """The scorecard of a submission that could not be graded; ``internal`` when the grader is at fault
    (such a card is not stored, so the next run tries again)."""
    return Scorecard(
        assignment=assignment.name,
        submission=printable(sub.path.name),
        sha256=sub.sha256,
        status=SubmissionStatus.CRASHED,
        score=0.0,
        max_score=assignment.max_score,
        student=sub.student,
        reason=reason,
        questions=not_graded(
            assignment, QuestionStatus.ERROR, reason if not internal else "the grader failed on this submission."
        ),
        execution=Execution(executor=executor, internal_error=internal),
        id=sub.id,
        origin=sub.lms,
    )


class _interrupt_on_sigterm:
    """SIGTERM (a CI cancel, ``kill``) ends the batch like Ctrl-C: stored results stay, children end."""

    def __enter__(self) -> None:
        self.saved = None
        if threading.current_thread() is threading.main_thread():
            self.saved = signal.signal(signal.SIGTERM, _raise_interrupt)

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            signal.signal(signal.SIGTERM, self.saved)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def summary_lines(intake_: Intake, outcome: Outcome | None = None) -> list[str]:
    """What the person running the batch should know besides the scores."""
    lines = [f"note: {n}" for n in intake_.notes]
    for group in intake_.identical():
        who = ", ".join(f"{s.student} ({s.origin})" if s.student != s.path.stem else s.origin for s in group)
        lines.append(f"identical files: {who}")
    if outcome is not None and outcome.cached:
        lines.append(
            f"{outcome.cached} unchanged submission(s) taken from the results cache (--force grades them again)"
        )
    return lines
