"""What to run for a notebook: the captures a course needs, at the right point of this notebook, and
the job that carries them (with a variant's given inputs swapped in, when there is one).

Answers are found by what the notebook computes: a check is captured where its question is
answered in *this* notebook (at the end, or just before the first cell that binds its ``before``
name), whatever the cells' ids, order or number.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from grader import notebook
from grader.course.model import Assignment
from grader.errors import NotebookError
from grader.judge import testcheck, variants
from grader.judge.checks import hint_id
from grader.run.execute import Executor
from grader.run.job import CaptureSpec, Injection, Job, JobCell, RunResult
from grader.vocab import CaptureKind, SkipReason


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
    first_bind = notebook.first_binds(infos)
    specs = []
    # The given inputs as the notebook first defines them: the base of variants, and the way to
    # tell a student that the data itself was changed.
    for name, pos in variants.first_definitions(infos, variants.varied_names(assignment)).items():
        point = pos + 1 if pos + 1 < len(infos) else None
        specs.append(CaptureSpec(variants.GIVEN_PREFIX + name, CaptureKind.VALUE, name, point))
    for check in assignment.checks:
        point = first_bind.get(check.before) if check.before else None
        if check.spec.capture == CaptureKind.SITE:
            specs.extend(testcheck.captures(check, point))
            continue
        specs.append(CaptureSpec(check.id, check.spec.capture, check.target, point, check.seed))
        if hints:
            for i, h in enumerate(check.hints):
                specs.append(CaptureSpec(hint_id(check, i), CaptureKind.EXPR, h.expr, point, check.seed))
    return tuple(specs)


def build_job(assignment: Assignment, cells: list[notebook.Cell], infos: list[notebook.CellInfo],
              submission: Path, *, hints: bool, skip: set[str], traceback_lines: int = 8,
              variant: variants.Variant | None = None) -> Job:
    job_cells = []
    for cell, info in zip(cells, infos, strict=True):
        why = SkipReason.TAGGED if cell.skipped or (skip and cell.source.strip() in skip) else SkipReason.RUN
        source = notebook.fill_blanks(cell.source) if info.blanks else cell.source
        source = notebook.without_tool_lines(source)
        job_cells.append(JobCell(index=cell.index, source=source, skip=why))
    files = tuple((assignment.solution_dir / rel, rel) for rel in assignment.data)
    files += ((submission, submission.name),)
    injections: tuple[Injection, ...] = ()
    if variant is not None:
        job_cells = [replace(jc, source=variants.with_injections(jc.source, variant.names)) for jc in job_cells]
        injections = tuple(Injection(name=name, value=variant.values[name]) for name in variant.names)
    return Job(cells=tuple(job_cells), captures=plan(assignment, infos, hints=hints), limits=assignment.limits,
               files=files, traceback_lines=traceback_lines, injections=injections)


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
