"""The reference figure of a plot question: what the solution's answer draws in its own run.

A plot question is graded by a person (``manual: true``); the review page shows, beside the
figure the student's code draws in the grader's run (``grader.run.figures``, taken by
``jobs.figure_captures``), the one the solution's code draws. It is drawn once per solution, kept
beside its references in the course's cache, and shown from there.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import replace

from grader import notebook
from grader.course.model import Assignment, Course
from grader.errors import GraderError, NotebookError, SolutionError
from grader.files import write_atomic
from grader.judge import manual
from grader.judge.jobs import answer_cells, build_job, figure_captures, skip_sources
from grader.judge.reference import References


def reference_figures(references: References, assignment: Assignment) -> dict[str, tuple[str, ...]]:
    """The figures the solution's answer to each question graded by a person draws (base64 PNG
    images), from its own run, kept beside its references; {} where it draws none or where no
    solution code is here. Raises SolutionError when the solution cannot be read."""
    if assignment.bundle is not None:
        return {}
    key = references.key(assignment)
    path = references.course.cache_dir / "references" / f"{assignment.name}-{key[:20]}-figures.json"
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
        ):
            return {str(q): tuple(v) for q, v in data.items()}
    drawn = manual.drawn_cells(assignment, assignment.solution)
    if not drawn:
        return {}
    try:
        cells = answer_cells(assignment, notebook.read(assignment.solution))
    except NotebookError as exc:
        raise SolutionError(f"The solution notebook {assignment.solution} cannot be read: {exc}") from None
    infos = notebook.analyse(cells)
    job = build_job(assignment, cells, infos, assignment.solution, hints=False, skip=skip_sources(assignment))
    run = references.executor.run(replace(job, captures=figure_captures(infos, drawn)))
    out = {}
    for qid in drawn:
        found = manual.figures_of(qid, run.captures)
        if found is not None and found[0]:
            out[qid] = found[0]
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps({q: list(v) for q, v in out.items()}))
    return out


def reference_figures_or_none(course: Course, assignment: Assignment) -> dict[str, tuple[str, ...]]:
    """``reference_figures`` for the review page: none, with a word on the terminal, where the
    solution cannot run here."""
    from grader.run.forking import default_executor

    try:
        return reference_figures(References(course, default_executor()), assignment)
    except GraderError as exc:
        print(f"grader: no reference figure: {exc}", file=sys.stderr, flush=True)
        return {}
