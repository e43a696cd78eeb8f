"""What crosses into the student process and what comes back: the one definition of the protocol.

    grader                                         student process (grader.run.worker)
      Job (frozen) ── Job.to_wire() -> JobWire ──►  reads JobWire by its typed keys
      run_with_retries ◄──── frames: Message ────  StartMessage, CellStartMessage, CellEndMessage,
                                                    CaptureMessage, DoneMessage, FatalMessage
      RunResult (CellRun, Captured)

The wire forms are ``TypedDict``s of plain JSON data, so both sides, and the type checker, agree
on every key; the frames carrying them are ``grader.run.frames``. Nothing of the solution crosses:
a job holds the student's cells, what to capture, and the given inputs of a variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from grader.capture import Value
from grader.course.model import CellSeed, Limits
from grader.vocab import CaptureKind, CellStatus, RunStatus, SkipReason, Uncapturable

# --------------------------------------------------------------------------------------------
# The job, as the grader builds it


@dataclass(frozen=True)
class JobCell:
    index: int  # the student's cell number (1-based among all the notebook's cells, as in every message)
    source: str
    skip: SkipReason = SkipReason.RUN


@dataclass(frozen=True)
class CaptureSpec:
    id: str
    kind: CaptureKind
    target: str
    point: int | None  # capture before the cell at this position; None = at the end
    seed: int | None = None
    # A ``test`` capture: its sites the grader computes itself where it holds their inputs as data
    # (``testrewrite.Site.local``); the student's process records those only where it may not.
    local: tuple[int, ...] = ()


@dataclass(frozen=True)
class Injection:
    """A value that replaces a name wherever the (rewritten) cells call ``__grader_inject__``.

    With a ``target``, ``name`` is only the key the cells pass, and the value the target held
    there is kept for a capture (``__grader_carried__[name]``): how a carry-forward run gets the
    solution's value of a step computed from the student's own values of the steps before it."""

    name: str
    value: dict[str, Any]  # encoded plain data (``grader.capture.to_wire``)
    target: str = ""


@dataclass(frozen=True)
class Job:
    cells: tuple[JobCell, ...]
    captures: tuple[CaptureSpec, ...]
    limits: Limits
    files: tuple[tuple[Path, str], ...] = ()  # (source, name in the working directory)
    injections: tuple[Injection, ...] = ()
    traceback_lines: int = 8
    # What the forking executor's server should have imported for this job (``course.imports.preload_for``);
    # None: the executor's own list. Never sent to the student process.
    preload: tuple[str, ...] | None = None
    # Libraries the submission imports beyond ``preload`` (``course.imports.warm_for``): a server
    # with them loaded serves the job where the executor can keep one. Never sent either.
    warm: tuple[str, ...] = ()
    # The last run of its session (``execute.Session``): the sandbox prepares no process for another.
    # Only a hint: a run sent after it starts a new session.
    last: bool = False
    # The run's process stays, warm, to take the session's next run itself (its state put back as
    # it was before this one). For the trusted solution's runs only: a session opened for a
    # student's runs never keeps a process (``forking.session.Session``).
    stay: bool = False
    # The instructor's solution fed data (its draws, its carry-forward runs): its cells may run as
    # compiled code with their output discarded (``fast_cells.run_trusted``). Sent only in a session
    # kept for the solution (``forking.session.Session``); a student's run is never trusted.
    trusted: bool = False
    # The seeding of every code cell (``Assignment.seed_each_cell``), applied by the student process.
    cell_seed: CellSeed | None = None

    def to_wire(self, workdir: str, sandbox: dict[str, bool] | None = None) -> JobWire:
        return {
            "cells": [{"index": c.index, "source": c.source, "skip": str(c.skip)} for c in self.cells],
            "captures": [capture_wire(c) for c in self.captures],
            "injections": {i.name: i.value for i in self.injections},
            "carries": {i.name: i.target for i in self.injections if i.target},
            "limits": limits_wire(self.limits),
            "workdir": workdir,
            "traceback_lines": self.traceback_lines,
            "sandbox": sandbox,
            "last": self.last,
            "stay": self.stay,
            "trusted": self.trusted,
            "cell_seed": {"seed": self.cell_seed.seed, "variable": self.cell_seed.variable} if self.cell_seed else None,
        }


def capture_wire(c: CaptureSpec) -> CaptureWire:
    wire: CaptureWire = {"id": c.id, "kind": str(c.kind), "target": c.target, "point": c.point, "seed": c.seed}
    if c.local:
        wire["local"] = list(c.local)
    return wire


def limits_wire(limits: Limits) -> LimitsWire:
    return {
        "cell_timeout": limits.cell_timeout,
        "notebook_timeout": limits.notebook_timeout,
        "cpu_time": limits.cpu_time,
        "memory_mb": limits.memory_mb,
        "output_kb": limits.output_kb,
        "processes": limits.processes,
        "open_files": limits.open_files,
        "file_size_mb": limits.file_size_mb,
        "capture_mb": limits.capture_mb,
        "disk_mb": limits.disk_mb,
        "grader_cpu": limits.grader_cpu,
        "memfd": limits.memfd,
    }


# --------------------------------------------------------------------------------------------
# The job, as it crosses (JSON)


class LimitsWire(TypedDict):
    cell_timeout: float
    notebook_timeout: float
    cpu_time: int
    memory_mb: int
    output_kb: int
    processes: int
    open_files: int
    file_size_mb: int
    capture_mb: int
    disk_mb: int
    grader_cpu: float  # the grader's, not the student process's: carried so the wire names every limit
    memfd: bool


class CellWire(TypedDict):
    index: int
    source: str
    skip: str  # a SkipReason value


class CaptureWire(TypedDict):
    id: str
    kind: str  # a CaptureKind value
    target: str
    point: int | None
    seed: int | None
    local: NotRequired[list[int]]  # a test's sites the grader computes itself (``CaptureSpec.local``)


class CellSeedWire(TypedDict):
    seed: int
    variable: str  # "" : seed NumPy's and random's generators; else set this name to ``seed``


class JobWire(TypedDict):
    cells: list[CellWire]
    captures: list[CaptureWire]
    injections: dict[str, dict[str, Any]]
    carries: NotRequired[dict[str, str]]  # injection key -> the name it replaces, keeping the old value
    limits: LimitsWire
    workdir: str
    traceback_lines: int
    sandbox: dict[str, bool] | None  # ``sandbox.Features.to_wire()``: the protections to apply; None: probe
    last: NotRequired[bool]  # the session's last run (``Job.last``)
    stay: NotRequired[bool]  # the run's process takes the session's next run (``Job.stay``)
    trusted: NotRequired[bool]  # the solution's run: compiled cells, output discarded (``Job.trusted``)
    cell_seed: NotRequired[CellSeedWire | None]  # the seeding before every code cell (``Job.cell_seed``)


class SessionSetup(TypedDict):
    """What a session's sandbox needs once its submission is known (``sandbox.enter_session``)."""

    session: bool
    workdir: str
    limits: LimitsWire
    sandbox: dict[str, bool] | None


# --------------------------------------------------------------------------------------------
# Messages from the student process, one frame each


class ErrorWire(TypedDict):
    """An exception as data (``worker.describe_error``); a cell's or a capture's message carries its keys."""

    ename: str
    evalue: str
    traceback: list[str]  # frames in the student's cells only
    name: str  # a NameError's undefined name (``NameError.name``), else ""
    source: str  # the code of the innermost frame in the student's cells, else ""
    errno: int  # an OSError's ``errno``, else 0
    filename: str  # an OSError's ``filename``, else ""


class StartMessage(TypedDict):
    ev: Literal["start"]
    pid: int
    sandbox: list[str]  # the protections in force (keys of ``sandbox.FEATURES``)


class CellStartMessage(TypedDict):
    ev: Literal["cell"]
    pos: int
    phase: Literal["start"]


class CellEndMessage(TypedDict, total=False):
    ev: Literal["cell"]
    pos: int
    phase: Literal["end"]
    status: str  # "ok" | "error" | "skipped"
    duration: float
    output_bytes: int
    ename: str
    evalue: str
    traceback: list[str]
    name: str
    source: str
    errno: int
    filename: str
    disk: list[
        list[Any]
    ]  # the run's tmpfs places the cell left full: [place, bytes held] ("workdir", "/tmp", "/dev/shm")


class CaptureMessage(TypedDict, total=False):
    ev: Literal["capture"]
    id: str
    value: dict[str, Any]  # encoded plain data
    missing: bool  # a name the capture reads is not defined (``name``)
    uncapturable: str  # why a computed value cannot be judged (``vocab.Uncapturable``)
    detail: str  # for ``uncapturable: form``: what the value is, in ``capture``'s words
    ename: str  # the exception, when one was raised (``describe_error``)
    evalue: str
    traceback: list[str]
    name: str
    source: str
    errno: int
    filename: str


class DoneMessage(TypedDict):
    ev: Literal["done"]


class FatalMessage(TypedDict):
    ev: Literal["fatal"]
    reason: str  # the sandbox could not be set up


Message = StartMessage | CellStartMessage | CellEndMessage | CaptureMessage | DoneMessage | FatalMessage


# --------------------------------------------------------------------------------------------
# What the grader makes of them


@dataclass(frozen=True)
class RunError:
    """An exception raised in the student process, as data: its type, its message, the frames in
    the student's cells (``"cell 3, line 2: code"``), and for a ``NameError`` the name that was not
    defined. Nothing reads these fields back out of a sentence."""

    ename: str
    evalue: str
    frames: tuple[str, ...] = ()
    name: str = ""
    source: str = ""  # the code of the innermost frame, as the student wrote it
    errno: int = 0  # an OSError's ``errno`` (``errno.EROFS``: a file that may not be written), else 0
    filename: str = ""  # an OSError's ``filename``, else ""

    @property
    def where(self) -> str:
        """The innermost frame in the student's code, or ""."""
        return self.frames[-1] if self.frames else ""


@dataclass(frozen=True)
class CellRun:
    pos: int
    index: int
    status: CellStatus
    ename: str = ""
    evalue: str = ""
    traceback: tuple[str, ...] = ()
    duration: float = 0.0
    output_bytes: int = 0
    output_truncated: bool = False
    name: str = ""  # a NameError's undefined name
    source: str = ""  # the code of the innermost frame in the student's cells
    errno: int = 0  # an OSError's ``errno``
    filename: str = ""  # an OSError's ``filename``

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", CellStatus(self.status))

    @property
    def error(self) -> RunError | None:
        """The cell's exception as a record, when it raised one."""
        if not self.ename:
            return None
        return RunError(self.ename, self.evalue, self.traceback, self.name, self.source, self.errno, self.filename)


@dataclass(frozen=True)
class Captured:
    """What came back for one capture: a value, or why there is none."""

    value: Value | None = None
    missing: bool = False  # a name it reads does not exist at that point (``name``)
    error: RunError | None = None  # computing it raised (with ``uncapturable``: the check's own expression did)
    uncapturable: Uncapturable | None = None  # computed, but not in a form the grader can judge
    detail: str = ""  # for ``Uncapturable.FORM``: what the value is, in ``grader.capture``'s words

    @property
    def name(self) -> str:
        """The name that was not defined, when a NameError says which."""
        return self.error.name if self.error is not None else ""

    @property
    def raised(self) -> bool:
        """The student's code raised while the value was computed."""
        return self.error is not None and not self.missing and self.uncapturable is None


@dataclass(frozen=True)
class DiskFull:
    """A place where the run met its disk limit (``disk_mb``), and what it held there."""

    place: str  # "workdir", "/tmp" or "/dev/shm"; "file": one file met the file size limit (``held``: that limit)
    held: int  # bytes: what the place held when full (the keeper's watch: the most it saw)
    cell: int = 0  # the cell whose writes filled it (0: the grader's watch cannot tell which)
    watched: bool = False  # the keeper's watch (writes then failed with EFBIG), not a tmpfs of its size (ENOSPC)


@dataclass
class RunResult:
    status: RunStatus
    reason: str = ""
    cells: list[CellRun] = field(default_factory=list)
    captures: dict[str, Captured] = field(default_factory=dict)
    duration: float = 0.0
    attempts: int = 1
    sandbox: tuple[str, ...] = ()  # the protections the student process reported in force (sandbox.FEATURES)
    disk_full: tuple[DiskFull, ...] = ()  # where the run met its disk limit

    def __post_init__(self) -> None:
        self.status = RunStatus(self.status)

    @property
    def errors(self) -> list[CellRun]:
        """The cells that failed, once per student's cell (a cell cut where a question is answered
        reports its error on each part)."""
        first: dict[int, CellRun] = {}
        for c in self.cells:
            if c.status.failed:
                first.setdefault(c.index, c)
        return list(first.values())
