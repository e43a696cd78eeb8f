"""Grading one submission end to end: read, analyse, run, check, scorecard.

    read (nbformat) -> analyse (blanks, names) -> plan captures -> executor.run
    -> verdicts against the reference (cached run of the solution) -> Scorecard

Every path through ``grade`` returns a Scorecard; nothing a submission contains can raise out of it.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import __version__, capture, notebook
from .checks import Context, grade_assignment, hint_id
from .config import Assignment, Course
from .errors import NotebookError, ProtocolError, SolutionError
from .execute import Captured, CaptureSpec, Executor, Job, JobCell, RunResult, SubprocessExecutor
from .scorecard import Scorecard


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def skip_sources(assignment: Assignment) -> set[str]:
    """Sources of the cells the instructor tagged to be skipped, to recognise them untagged."""
    out: set[str] = set()
    for path in (assignment.solution, assignment.skeleton):
        try:
            cells = notebook.read(path)
        except NotebookError:
            continue
        out.update(c.source.strip() for c in cells if c.skipped)
    return out


def plan(assignment: Assignment, infos: list[notebook.CellInfo], *, hints: bool) -> tuple[CaptureSpec, ...]:
    """What to capture and at which point of this particular notebook."""
    first_bind: dict[str, int] = {}
    for pos, info in enumerate(infos):
        for name in info.binds:
            first_bind.setdefault(name, pos)
    specs = []
    for check in assignment.checks:
        point = first_bind.get(check.before) if check.before else None
        specs.append(CaptureSpec(check.id, check.kind, check.target, point, check.seed))
        if hints:
            for i, h in enumerate(check.hints):
                specs.append(CaptureSpec(hint_id(check, i), "expr", h.expr, point, check.seed))
    return tuple(specs)


def build_job(assignment: Assignment, cells: list[notebook.Cell], infos: list[notebook.CellInfo],
              submission: Path, *, hints: bool, skip: set[str], traceback_lines: int = 8) -> Job:
    job_cells = []
    for cell, info in zip(cells, infos):
        why = "skip-grading" if cell.skipped or (skip and cell.source.strip() in skip) else ""
        source = notebook.fill_blanks(cell.source) if info.blanks else cell.source
        job_cells.append(JobCell(index=cell.index, source=source, skip=why))
    files = tuple((assignment.solution_dir / rel, rel) for rel in assignment.data)
    files += ((submission, submission.name),)
    return Job(cells=tuple(job_cells), captures=plan(assignment, infos, hints=hints), limits=assignment.limits,
               files=files, traceback_lines=traceback_lines)


# --------------------------------------------------------------------------------------------
# Reference values


@dataclass
class Reference:
    captures: dict[str, Captured]
    key: str


class References:
    """Reference values from running each solution the same way, cached on disk by content hash."""

    def __init__(self, course: Course, executor: Executor):
        self.course, self.executor = course, executor
        self.memory: dict[str, Reference] = {}

    def key(self, assignment: Assignment) -> str:
        h = hashlib.sha256()
        h.update(__version__.encode())
        h.update(assignment.config_digest.encode())
        h.update(repr(assignment.limits).encode())
        for path in [assignment.solution] + [assignment.solution_dir / d for d in assignment.data]:
            h.update(path.name.encode())
            h.update(path.read_bytes())
        return h.hexdigest()

    def path(self, assignment: Assignment, key: str) -> Path:
        return self.course.cache_dir / "references" / f"{assignment.name}-{key[:20]}.json"

    def get(self, assignment: Assignment) -> Reference:
        key = self.key(assignment)
        if key in self.memory:
            return self.memory[key]
        path = self.path(assignment, key)
        ref = self._load(path, key)
        if ref is None:
            ref = self._compute(assignment, key)
            self._store(path, ref)
        self.memory[key] = ref
        return ref

    def _load(self, path: Path, key: str) -> Reference | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            captures = {}
            for cid, item in data["captures"].items():
                if "value" in item:
                    captures[cid] = Captured(value=capture.decode(item["value"]))
                else:
                    captures[cid] = Captured(missing=item.get("missing", False), error=item.get("error", ""))
            return Reference(captures=captures, key=key)
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            return None

    def _store(self, path: Path, ref: Reference) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"captures": {
            cid: ({"value": capture.to_wire(c.value)} if c.value is not None else {"missing": c.missing, "error": c.error})
            for cid, c in ref.captures.items()
        }}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(path)

    def _compute(self, assignment: Assignment, key: str) -> Reference:
        run, _ = run_notebook(assignment, assignment.solution, self.executor, hints=True)
        if isinstance(run, NotebookError):
            raise SolutionError(f"The solution notebook {assignment.solution} cannot be read: {run}")
        where = f"solution of {assignment.name} ({assignment.solution.name})"
        if run.status != "ok":
            raise SolutionError(f"The {where} did not run to the end: {run.reason}.")
        for cell in run.errors:
            raise SolutionError(f"The {where} fails in cell {cell.index}: {cell.ename}: {cell.evalue}")
        for check in assignment.checks:
            got = run.captures.get(check.id)
            if got is None or got.value is None:
                why = got.error if got is not None and got.error else "it is not defined"
                raise SolutionError(f"The {where} does not produce {check.label} for question "
                                    f"{check.id.split('/')[0]}: {why}.")
        return Reference(captures=run.captures, key=key)


def run_notebook(assignment: Assignment, path: Path, executor: Executor, *, hints: bool = False,
                 skip: set[str] | None = None, traceback_lines: int = 8
                 ) -> tuple[RunResult | NotebookError, list[notebook.CellInfo]]:
    try:
        cells = notebook.read(path)
    except NotebookError as exc:
        return exc, []
    infos = notebook.analyse(cells)
    job = build_job(assignment, cells, infos, path, hints=hints, skip=skip or set(),
                    traceback_lines=traceback_lines)
    return executor.run(job), infos


# --------------------------------------------------------------------------------------------


@dataclass
class Grader:
    """Grades submissions of one course; holds the executor and the reference store."""

    course: Course
    executor: Executor = field(default_factory=SubprocessExecutor)
    references: References | None = None
    now: datetime | None = None

    def __post_init__(self) -> None:
        if self.references is None:
            self.references = References(self.course, self.executor)
        self._skip: dict[str, set[str]] = {}

    def reveal(self) -> bool:
        s = self.course.scorecard
        if s.show_expected == "always":
            return True
        if s.show_expected == "after_due" and s.due:
            due = datetime.fromisoformat(s.due)
            if due.tzinfo is None:
                due = due.replace(tzinfo=timezone.utc)
            return (self.now or datetime.now(timezone.utc)) > due
        return False

    def grade(self, assignment: Assignment, path: Path, *, student: str = "") -> Scorecard:
        path = Path(path)
        started = time.monotonic()
        ref = self.references.get(assignment)  # a broken solution is an error for the whole run
        card = Scorecard(assignment=assignment.name, submission=path.name, sha256="", status="graded",
                         score=0.0, max_score=assignment.max_score, student=student)
        try:
            card.sha256 = sha256_file(path)
        except OSError as exc:
            card.sha256 = ""
            return self._invalid(card, assignment, f"The file cannot be opened ({exc.strerror}).")
        try:
            cells = notebook.read(path)
        except NotebookError as exc:
            return self._invalid(card, assignment, str(exc))
        infos = notebook.analyse(cells)
        if assignment.name not in self._skip:
            self._skip[assignment.name] = skip_sources(assignment)
        job = build_job(assignment, cells, infos, path, hints=False, skip=self._skip[assignment.name],
                        traceback_lines=self.course.scorecard.traceback_lines)
        run = self.executor.run(job)
        ctx = Context(infos=infos, blanks=notebook.blank_report(infos), cells=run.cells, student=run.captures,
                      reference=ref.captures, reveal=self.reveal())
        card.questions = grade_assignment(assignment, ctx)
        card.score = sum(q.score for q in card.questions)
        if run.status != "ok":
            card.status, card.reason = ("timeout" if run.status == "timeout" else "crashed"), run.reason
        card.execution = execution_summary(run, self.executor.name, time.monotonic() - started)
        return card

    def _invalid(self, card: Scorecard, assignment: Assignment, reason: str) -> Scorecard:
        from .scorecard import QuestionResult

        card.status, card.reason = "invalid_notebook", reason
        card.questions = [
            QuestionResult(id=q.id, title=q.title, score=0.0, max_score=q.points, status="unanswered",
                           feedback=["Not graded: the submission is not a readable notebook."])
            for q in assignment.questions
        ]
        card.execution = {"executor": self.executor.name, "cells_run": 0, "errors": [], "time": 0.0}
        return card


def execution_summary(run: RunResult, executor: str, elapsed: float) -> dict:
    errors = []
    for c in run.errors:
        item = {"cell": c.index, "status": c.status, "error": f"{c.ename}: {c.evalue}".strip(": ")}
        if notebook.BLANK_NAME in c.evalue:
            item["status"], item["error"] = "blank", "the cell still has an unfilled blank `?`"
        if c.traceback:
            item["traceback"] = [t.replace(notebook.BLANK_NAME, "?") for t in c.traceback]
        errors.append(item)
    truncated = [c.index for c in run.cells if c.output_truncated]
    out = {
        "executor": executor,
        "cells_run": sum(1 for c in run.cells if c.status in ("ok", "error")),
        "cells_skipped": sum(1 for c in run.cells if c.status == "skipped"),
        "errors": errors,
        "time": round(elapsed, 3),
    }
    if truncated:
        out["output_truncated_in_cells"] = truncated
    if run.attempts > 1:
        out["attempts"] = run.attempts
    return out
