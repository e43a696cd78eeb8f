"""Grading one submission end to end: read, analyse, run, check, scorecard.

    read (nbformat) -> analyse (blanks, names) -> plan captures -> executor.run
    -> verdicts against the reference (cached run of the solution) -> Scorecard

Every path through ``grade`` returns a Scorecard; nothing a submission contains can raise out of it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from grader import __version__, capture, notebook
from grader.course.config import Assignment, Course, Limits
from grader.errors import NotebookError, ProtocolError, SolutionError
from grader.files import sha256_file, write_atomic
from grader.judge import variants
from grader.judge.checks import Context, VariantRun, changed_answers, grade_assignment, grade_check, hint_id
from grader.judge.scorecard import Scorecard
from grader.run import execute
from grader.run.execute import Captured, CaptureSpec, Executor, Injection, Job, JobCell, RunResult
from grader.run.forking import default_executor


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
    # The given inputs as the notebook first defines them: the base of variants, and the way to
    # tell a student that the data itself was changed.
    for name, pos in variants.first_definitions(infos, variants.varied_names(assignment)).items():
        point = pos + 1 if pos + 1 < len(infos) else None
        specs.append(CaptureSpec(variants.GIVEN_PREFIX + name, "value", name, point))
    for check in assignment.checks:
        point = first_bind.get(check.before) if check.before else None
        specs.append(CaptureSpec(check.id, check.kind, check.target, point, check.seed))
        if hints:
            for i, h in enumerate(check.hints):
                specs.append(CaptureSpec(hint_id(check, i), "expr", h.expr, point, check.seed))
    return tuple(specs)


def build_job(assignment: Assignment, cells: list[notebook.Cell], infos: list[notebook.CellInfo],
              submission: Path, *, hints: bool, skip: set[str], traceback_lines: int = 8,
              variant: variants.Variant | None = None) -> Job:
    job_cells = []
    for cell, info in zip(cells, infos):
        why = "skip-grading" if cell.skipped or (skip and cell.source.strip() in skip) else ""
        source = notebook.fill_blanks(cell.source) if info.blanks else cell.source
        job_cells.append(JobCell(index=cell.index, source=source, skip=why))
    files = tuple((assignment.solution_dir / rel, rel) for rel in assignment.data)
    files += ((submission, submission.name),)
    injections: tuple[Injection, ...] = ()
    if variant is not None:
        job_cells = [replace(jc, source=variants.with_injections(jc.source, variant.names)) for jc in job_cells]
        injections = tuple(Injection(name=name, value=variant.values[name]) for name in variant.names)
    return Job(cells=tuple(job_cells), captures=plan(assignment, infos, hints=hints), limits=assignment.limits,
               files=files, traceback_lines=traceback_lines, injections=injections)


# --------------------------------------------------------------------------------------------
# Reference values


@dataclass
class Reference:
    captures: dict[str, Captured]
    key: str
    variants: list[variants.Variant] = field(default_factory=list)
    variant_captures: list[dict[str, Captured]] = field(default_factory=list)

    @functools.cached_property
    def changed(self) -> list[frozenset[str]]:
        """Per variant, the ids whose reference value it changes: the same for every submission."""
        return [changed_answers(self.captures, c) for c in self.variant_captures]

    def given(self) -> dict[str, capture.Value]:
        return {cid[len(variants.GIVEN_PREFIX):]: c.value for cid, c in self.captures.items()
                if cid.startswith(variants.GIVEN_PREFIX) and c.value is not None}


class References:
    """Reference values from running each solution the same way, cached on disk by content hash."""

    def __init__(self, course: Course, executor: Executor):
        self.course, self.executor = course, executor
        self.memory: dict[str, Reference] = {}
        self._keys: dict[tuple, str] = {}

    def key(self, assignment: Assignment) -> str:
        paths = [assignment.solution] + [assignment.solution_dir / d for d in assignment.data]
        # Hashing the files is per-submission work otherwise; their stats tell when to do it again.
        stats = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
        memo = (assignment.config_digest, repr(assignment.limits), repr(assignment.variants), stats)
        if memo not in self._keys:
            h = hashlib.sha256()
            h.update(__version__.encode())
            h.update(assignment.config_digest.encode())
            h.update(repr(assignment.limits).encode())
            h.update(repr(assignment.variants).encode())  # a copy of the section with other variants is not the same
            for path in paths:
                h.update(path.name.encode())
                h.update(path.read_bytes())
            self._keys[memo] = h.hexdigest()
        return self._keys[memo]

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

    @staticmethod
    def _decode(raw: dict) -> dict[str, Captured]:
        captures = {}
        for cid, item in raw.items():
            if "value" in item:
                captures[cid] = Captured(value=capture.decode(item["value"]))
            else:
                captures[cid] = Captured(missing=item.get("missing", False), error=item.get("error", ""))
        return captures

    @staticmethod
    def _encode(captures: dict[str, Captured]) -> dict:
        return {
            cid: ({"value": capture.to_wire(c.value)} if c.value is not None else {"missing": c.missing, "error": c.error})
            for cid, c in captures.items()
        }

    def _load(self, path: Path, key: str) -> Reference | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Reference(
                captures=self._decode(data["captures"]),
                key=key,
                variants=[variants.Variant(number=v["number"], values=v["values"]) for v in data["variants"]],
                variant_captures=[self._decode(c) for c in data["variant_captures"]],
            )
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            return None

    def _store(self, path: Path, ref: Reference) -> None:
        data = {
            "captures": self._encode(ref.captures),
            "variants": [{"number": v.number, "values": v.values} for v in ref.variants],
            "variant_captures": [self._encode(c) for c in ref.variant_captures],
        }
        write_atomic(path, json.dumps(data))

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
        ref = Reference(captures=run.captures, key=key)
        ref.variants = variants.make_variants(assignment, ref.given())
        for variant in ref.variants:
            vrun, _ = run_notebook(assignment, assignment.solution, self.executor, hints=False, variant=variant)
            if isinstance(vrun, NotebookError) or vrun.status != "ok" or vrun.errors:
                why = vrun.reason if not isinstance(vrun, NotebookError) and vrun.reason else ""
                if not why and not isinstance(vrun, NotebookError) and vrun.errors:
                    cell = vrun.errors[0]
                    why = f"cell {cell.index} raises {cell.ename}: {cell.evalue}"
                raise SolutionError(f"The {where} fails on variant {variant.number} of its given inputs "
                                    f"({', '.join(variant.names)}): {why}. Fix the variant rules in config.yaml.")
            ref.variant_captures.append(vrun.captures)
        return ref


def run_notebook(assignment: Assignment, path: Path, executor: Executor, *, hints: bool = False,
                 skip: set[str] | None = None, traceback_lines: int = 8, variant: variants.Variant | None = None,
                 ) -> tuple[RunResult | NotebookError, list[notebook.CellInfo]]:
    try:
        cells = notebook.read(path)
    except NotebookError as exc:
        return exc, []
    infos = notebook.analyse(cells)
    job = build_job(assignment, cells, infos, path, hints=hints, skip=skip or set(),
                    traceback_lines=traceback_lines, variant=variant)
    return executor.run(job), infos


# --------------------------------------------------------------------------------------------


@dataclass
class Grader:
    """Grades submissions of one course; holds the executor and the reference store."""

    course: Course
    executor: Executor = field(default_factory=default_executor)  # warm forking server, shared per process
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
        return s.show_expected == "after_due" and s.past_due(self.now)

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
        with execute.session(self.executor) as runner:  # one sandbox for the run and its variants
            run = runner.run(job)
            ctx = Context(infos=infos, blanks=notebook.blank_report(infos), cells=run.cells, student=run.captures,
                          reference=ref.captures, reveal=self.reveal())
            if ref.variants and run.status == "ok" and _anything_passes(assignment, ctx):
                runs = []
                for variant, vref, changed in zip(ref.variants, ref.variant_captures, ref.changed):
                    vjob = build_job(assignment, cells, infos, path, hints=False, skip=self._skip[assignment.name],
                                     traceback_lines=self.course.scorecard.traceback_lines, variant=variant)
                    vrun = runner.run(vjob)
                    runs.append(VariantRun(number=variant.number, names=variant.names, student=vrun.captures,
                                           reference=vref, cells=vrun.cells, status=vrun.status, reason=vrun.reason,
                                           changed=changed))
                ctx = replace(ctx, variants=tuple(runs))
        card.questions = grade_assignment(assignment, ctx)
        card.score = sum(q.score for q in card.questions)
        if run.status != "ok":
            card.status, card.reason = ("timeout" if run.status == "timeout" else "crashed"), run.reason
        card.execution = execution_summary(run, self.executor.name, time.monotonic() - started,
                                           limits=assignment.limits)
        return card

    def _invalid(self, card: Scorecard, assignment: Assignment, reason: str) -> Scorecard:
        from grader.judge.scorecard import QuestionResult

        card.status, card.reason = "invalid_notebook", reason
        card.questions = [
            QuestionResult(id=q.id, title=q.title, score=0.0, max_score=q.points, status="unanswered",
                           feedback=["Not graded: the submission is not a readable notebook."])
            for q in assignment.questions
        ]
        card.execution = {"executor": self.executor.name, "cells_run": 0, "errors": [], "time": 0.0}
        return card


def _anything_passes(assignment: Assignment, ctx: Context) -> bool:
    """Whether any check passes on the original data (else variants cannot change the grade)."""
    return any(grade_check(c, ctx, 1.0).status == "passed" for c in assignment.checks)


def execution_summary(run: RunResult, executor: str, elapsed: float, *, limits: Limits | None = None) -> dict:
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
        limit = f"the {_size(limits.output_kb * 1024)} limit" if limits is not None else "the limit"
        out["notes"] = [f"cell {c.index} printed {_size(c.output_bytes)} of output, more than {limit}; "
                        "the rest was discarded" for c in run.cells if c.output_truncated]
    if run.attempts > 1:
        out["attempts"] = run.attempts
    out["sandbox"] = list(run.sandbox)  # the protections the student process had (sandbox.FEATURES)
    return out


def _size(n: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"
