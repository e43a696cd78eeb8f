"""What to run for a notebook: the captures a course needs, at the right point of this notebook, and
the job that carries them (with a variant's given inputs swapped in, when there is one).

Answers are found by what the notebook computes: a check is captured where its question is
answered in *this* notebook (at the end, or just before the first statement that binds its
``before`` name), whatever the cells' ids, order or number.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from grader import capture, notebook
from grader.course.imports import preload_for, warm_for
from grader.course.model import Assignment
from grader.errors import NotebookError
from grader.judge import carry, testcheck, variants
from grader.names import ALIAS, CALLS, FIGURES_BEFORE, FIX, RECORD, REPLAY, calls_id, figures_id, hint_id
from grader.notebook.inject import inject_after
from grader.run.execute import Executor, Session
from grader.run.job import Captured, CaptureSpec, Injection, Job, JobCell, RunResult
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


def locked_cells(assignment: Assignment) -> list[notebook.Cell]:
    """The given cells tagged ``locked`` (read-only: graded as released), from the skeleton, or
    from the solution where there is no skeleton."""
    for path in (assignment.skeleton, assignment.solution):
        try:
            return [c for c in notebook.read(path) if c.locked]
        except NotebookError:
            continue
    return []


def answer_cells(assignment: Assignment, cells: list[notebook.Cell]) -> list[notebook.Cell]:
    """The cells to run, cut where a question with ``before: NAME`` is answered in the middle of a
    cell: its value is captured just before the statement where the next part starts
    (``notebook.before_statement``)."""
    return notebook.split_before_binds(
        cells, {(c.before, c.names) for c in assignment.checks if c.before}, assignment.given
    )


def figure_captures(infos: list[notebook.CellInfo], drawn: dict[str, tuple[int, ...]]) -> tuple[CaptureSpec, ...]:
    """For each question graded by a person whose answer has code (``manual.drawn_cells``): before
    its first cell, close what earlier cells drew; after its last, take the figures its cells drew."""
    specs: list[tuple[int, int, CaptureSpec]] = []
    for qid, numbers in drawn.items():
        at = [pos for pos, info in enumerate(infos) if info.cell.index in numbers]
        if not at:
            continue
        end = at[-1] + 1 if at[-1] + 1 < len(infos) else None
        specs.append((at[0], 1, CaptureSpec(figures_id(qid, before=True), CaptureKind.FIGURES, FIGURES_BEFORE, at[0])))
        specs.append(
            (end if end is not None else len(infos), 0, CaptureSpec(figures_id(qid), CaptureKind.FIGURES, "", end))
        )
    return tuple(spec for _, _, spec in sorted(specs, key=lambda s: (s[0], s[1])))


def plan(assignment: Assignment, infos: list[notebook.CellInfo], *, hints: bool) -> tuple[CaptureSpec, ...]:
    """What to capture and at which point of this particular notebook."""
    specs = []
    # The given inputs as the notebook first defines them: the base of variants, and the way to
    # tell a student that the data itself was changed.
    for name, pos in variants.first_definitions(infos, variants.varied_names(assignment), assignment.given).items():
        point = pos + 1 if pos + 1 < len(infos) else None
        specs.append(CaptureSpec(variants.GIVEN_PREFIX + name, CaptureKind.VALUE, name, point))
    for check in assignment.checks:
        point = (
            notebook.before_point(infos, check.before, check.names, assignment.given)
            if check.before
            else notebook.cell_point([i.cell for i in infos], check.at_cell, check.after_line)
        )
        if check.spec.capture == CaptureKind.TEST:
            specs.extend(testcheck.captures(check, point))
            continue
        specs.append(CaptureSpec(check.id, check.spec.capture, check.target, point, check.seed))
        if hints:
            for i, h in enumerate(check.hints):
                specs.append(CaptureSpec(hint_id(check.id, i), CaptureKind.EXPR, h.expr, point, check.seed))
    # The names graded through an expression over them (``carry.carriers``), as the student's notebook
    # holds them where the first such check is taken: carried into the solution's run like a step.
    for name, checks in carry.carriers(assignment, infos).items():
        points = [
            notebook.before_point(infos, c.before, c.names, assignment.given)
            if c.before
            else notebook.cell_point([i.cell for i in infos], c.at_cell, c.after_line)
            for c in checks
        ]
        point = min((p for p in points if p is not None), default=None)
        specs.append(CaptureSpec(carry.carrier_id(name), CaptureKind.VALUE, name, point))
    return tuple(specs)


def in_place(assignment: Assignment, cells: list[notebook.Cell], infos: list[notebook.CellInfo]) -> dict[int, bool]:
    """The given cells a ``test`` check is taken at (``at_cell``, tagged ``locked``, so put back as
    released), by position: whether each runs where it stands. One that binds a name a later cell
    reads runs there, so what it defines is there for later cells, but what it raises is the test's
    verdict (judged apart), never an error of the run. One whose names no later cell reads is not
    run: the test's own run (at that point, namespace and random generators put back after it)
    already judges it, and the student's code is not called twice for nothing."""
    ids = {c.at_cell for c in assignment.checks if c.is_test and c.at_cell is not None}
    if not ids:
        return {}
    out: dict[int, bool] = {}
    for k, cell in enumerate(cells):
        if cell.locked and cell.cell_id in ids:
            out[k] = any(infos[k].binds & later.reads for later in infos[k + 1 :])
    return out


def run_in_place(job_cells: tuple[JobCell, ...] | list[JobCell], where: dict[int, bool]) -> tuple[JobCell, ...]:
    """The cells ``in_place`` names: those that run, so that nothing they raise ends the cell with an
    error (their code, compiled as a cell of its own, runs in the notebook's namespace, and an
    exception stops it there, as in the notebook: the statements after it do not run, unseen by the
    run); the others not run."""
    if not where:
        return tuple(job_cells)
    return tuple(
        (replace(jc, source=_quietly(jc.source)) if where[k] else replace(jc, skip=SkipReason.TAGGED))
        if k in where and jc.skip == SkipReason.RUN
        else jc
        for k, jc in enumerate(job_cells)
    )


def _quietly(source: str) -> str:
    code = notebook.python_source(source)  # magics and shell lines as ``pass``
    return (
        "try:\n"
        f"    exec(compile({code!r}, '<given cell>', 'exec'), globals())\n"
        "except (KeyboardInterrupt, GeneratorExit):\n"
        "    raise\n"
        "except BaseException:\n"
        "    pass\n"
    )


def build_job(
    assignment: Assignment,
    cells: list[notebook.Cell],
    infos: list[notebook.CellInfo],
    submission: Path,
    *,
    hints: bool,
    skip: set[str],
    traceback_lines: int = 8,
    variant: variants.Variant | None = None,
    record: tuple[str, ...] = (),
    quiet: bool = True,
) -> Job:
    return JobTemplate.of(
        assignment, cells, infos, submission, hints=hints, skip=skip, traceback_lines=traceback_lines, record=record
    ).job(variant, quiet=quiet)


class JobTemplate:
    """What every job of one notebook shares, worked out once: its cells as they run, the captures
    at this notebook's points, the files. A submission's own run and each of its variants are
    jobs of one template; the solution's draws for every submission's own variants are jobs of one
    template per assignment (``References``). A variant's job differs only in its injection calls
    (the same for every variant of the same inputs, so kept per set of names) and their values.
    ``record``: the student's functions whose calls a later step uses (``grader.run.calls``); each
    job records them after their definitions."""

    def __init__(
        self,
        assignment: Assignment,
        infos: list[notebook.CellInfo],
        base: Job,
        record: tuple[str, ...] = (),
        quiet: dict[int, bool] | None = None,
    ) -> None:
        self.given, self.infos, self.base, self.record = assignment.given, infos, base, record
        self.fixes: dict[str, dict[str, Any]] = {}  # name -> the solution's definition, encoded
        self.aliases: dict[str, tuple[str, int, int]] = {}  # the student's names for inputs (``variants.aliases``)
        self.quiet = quiet or {}  # the given cells a test is taken at: whether each runs (``in_place``)
        self._cells: dict[tuple[str, ...], tuple[JobCell, ...]] = {}  # names -> the cells with their injections

    def with_fixes(self, fixes: dict[str, str]) -> JobTemplate:
        """The same notebook with the solution's definition of each function or class in ``fixes``
        (name -> its source, ``grader.judge.fixes``) put in place of the student's, right after each
        statement that defines it; its calls are not recorded (that is the student's own run's)."""
        calls = {calls_id(f) for f in self.record}
        base = replace(self.base, captures=tuple(c for c in self.base.captures if c.id not in calls))
        out = JobTemplate.__new__(JobTemplate)
        out.given, out.infos, out.base, out.record, out.quiet = self.given, self.infos, base, (), self.quiet
        out.aliases = self.aliases
        out.fixes = {name: {"t": "str", "v": source} for name, source in fixes.items()}  # plain data
        out._cells = {}
        return out

    @classmethod
    def of(
        cls,
        assignment: Assignment,
        cells: list[notebook.Cell],
        infos: list[notebook.CellInfo],
        submission: Path,
        *,
        hints: bool,
        skip: set[str],
        traceback_lines: int = 8,
        record: tuple[str, ...] = (),
    ) -> JobTemplate:
        job_cells = []
        for cell, info in zip(cells, infos, strict=True):
            why = SkipReason.TAGGED if cell.skipped or (skip and cell.source.strip() in skip) else SkipReason.RUN
            source = notebook.fill_blanks(cell.source) if info.blanks else cell.source
            source = notebook.without_inert_lines(source, assignment.inert_lines)
            job_cells.append(JobCell(index=cell.index, source=source, skip=why))
        files = tuple((assignment.solution_dir / rel, rel) for rel in assignment.data)
        files += ((submission, submission.name),)
        captures = plan(assignment, infos, hints=hints)
        if record:  # the calls of the student's functions a later step uses (``grader.run.calls``)
            captures += tuple(CaptureSpec(calls_id(f), CaptureKind.EXPR, f"{CALLS}[{f!r}]", None) for f in record)
        preload = preload_for(assignment)
        base = Job(
            cells=tuple(job_cells),
            captures=captures,
            limits=assignment.limits,
            files=files,
            traceback_lines=traceback_lines,
            preload=preload,
            warm=warm_for(preload, [jc.source for jc in job_cells if jc.skip == SkipReason.RUN]),
            cell_seed=assignment.seed_each_cell,
        )
        template = cls(assignment, infos, base, record, in_place(assignment, cells, infos))
        if submission != assignment.solution:  # the solution names its inputs as it defines them
            template.aliases = variants.aliases(assignment, [jc.source for jc in job_cells], infos)
        return template

    def job(self, variant: variants.Variant | None = None, *, quiet: bool = True) -> Job:
        """The notebook's job on its own data, or with ``variant``'s given inputs swapped in.
        ``quiet=False``: the cells a test is taken at as they are, for a caller that places calls
        after their statements first (``build_carry_job``) and then runs them ``run_in_place``."""
        names = variant.names if variant is not None else ()
        if names not in self._cells:
            cells = list(self.base.cells)
            if names:  # the variant's injections first: they are placed by the notebook's own statements
                defined = notebook.input_definitions(self.infos, names, self.given)
                extra: dict[int, dict[int, list[str]]] = {}  # cell -> statement -> alias keys
                for alias, (name, pos, k) in self.aliases.items():
                    if name in names:
                        extra.setdefault(pos, {}).setdefault(k, []).append(ALIAS + alias)
                cells = [
                    replace(
                        jc,
                        source=variants.with_injections(
                            jc.source,
                            names,
                            {n: {k for p, k in defined[n] if p == pos} for n in names},
                            extra.get(pos),
                        ),
                    )
                    for pos, jc in enumerate(cells)
                ]
            if self.record:
                cells = _after_definitions(cells, self.record, RECORD)
            if self.fixes:
                cells = _after_definitions(cells, set(self.fixes), FIX)
            self._cells[names] = tuple(cells)
        injections = tuple(Injection(name=name, value=variant.values[name]) for name in names) if variant else ()
        if variant is not None:
            injections += tuple(
                Injection(name=ALIAS + alias, value=variant.values[name])
                for alias, (name, _, _) in self.aliases.items()
                if name in names
            )
        injections += tuple(Injection(name=RECORD + f, value=_NOTHING) for f in self.record)
        injections += tuple(Injection(name=FIX + f, value=source) for f, source in self.fixes.items())
        ready = run_in_place(self._cells[names], self.quiet) if quiet else self._cells[names]
        return replace(self.base, cells=ready, injections=injections)


_NOTHING = {"t": "none"}


def _after_definitions(job_cells: list[JobCell], functions: tuple[str, ...] | set[str], prefix: str) -> list[JobCell]:
    """The cells with ``__grader_inject__(prefix + f)`` after each statement defining function ``f``,
    or binding it (``f = SelfAttention(scale=False)``, a module instance called as a function)."""
    out = []
    for jc in job_cells:
        statements = notebook.parse_cell(jc.source).statements
        calls = {
            k: [prefix + f for f in sorted(({st.defines} | st.binds) & set(functions))]
            for k, st in enumerate(statements)
            if ({st.defines} | st.binds) & set(functions)
        }
        out.append(replace(jc, source=inject_after(jc.source, calls)) if calls else jc)
    return out


def run_notebook(
    assignment: Assignment,
    path: Path,
    executor: Executor | Session,
    *,
    hints: bool = False,
    skip: set[str] | None = None,
    traceback_lines: int = 8,
    variant: variants.Variant | None = None,
) -> tuple[RunResult | NotebookError, list[notebook.CellInfo]]:
    try:
        cells = answer_cells(assignment, notebook.read(path))
    except NotebookError as exc:
        return exc, []
    infos = notebook.analyse(cells)
    job = build_job(
        assignment,
        cells,
        infos,
        path,
        hints=hints,
        skip=skip or set(),
        traceback_lines=traceback_lines,
        variant=variant,
    )
    return executor.run(job), infos


def build_carry_job(
    assignment: Assignment,
    cells: list[notebook.Cell],
    infos: list[notebook.CellInfo],
    student: dict[str, Captured],
    *,
    skip: set[str],
    variant: variants.Variant | None = None,
) -> Job:
    """The solution's run with the student's values of its steps in place of its own (``carry``).

    Each step the student has a value for goes in right after the solution's statement that
    computes it, and the value the solution had there is kept: the reference of that step computed
    from the student's own earlier steps. Hints are evaluated in the same run, at each check's
    point, so they too see the student's own values of the steps before it."""
    where = carry.places(assignment, infos)
    by_cell: dict[int, dict[int, list[str]]] = {}
    injections: list[Injection] = []
    carried: set[str] = set()
    for check in carry.steps(assignment):
        got = student.get(check.id)
        if check.id not in where or got is None or got.value is None or check.variable is None:
            continue
        pos, stmt = where[check.id]
        by_cell.setdefault(pos, {}).setdefault(stmt, []).append(check.id)
        injections.append(Injection(name=check.id, value=capture.to_wire(got.value), target=check.variable))
        carried.add(check.id)
    # A name graded through an expression (``heads`` in ``torch.stack(heads)``): the student's list
    # or table goes in likewise, and each expression over it is taken on the solution's own value.
    over: dict[str, str] = {}  # an expression check -> its expression on the solution's value of the name
    for name, checks in carry.carriers(assignment, infos).items():
        got = student.get(carry.carrier_id(name))
        spots = [where[c.id] for c in checks if c.id in where]
        if got is None or got.value is None or not spots:
            continue
        pos, stmt = min(spots)
        by_cell.setdefault(pos, {}).setdefault(stmt, []).append(carry.carrier_id(name))
        injections.append(Injection(name=carry.carrier_id(name), value=capture.to_wire(got.value), target=name))
        for c in checks:
            over[c.id] = carry.carried_expression(c.target, name)
            over.update({hint_id(c.id, i): carry.carried_expression(h.expr, name) for i, h in enumerate(c.hints)})
    job = build_job(assignment, cells, infos, assignment.solution, hints=True, skip=skip, quiet=False)
    job_cells = [
        replace(jc, source=inject_after(jc.source, by_cell[pos])) if pos in by_cell else jc
        for pos, jc in enumerate(job.cells)
    ]
    # The student's functions a later step calls: the solution's own stand in for them no more,
    # their recorded answers do (``grader.run.calls``), put in after the solution defines each.
    defined = {n for info in infos for n in info.defines} | {n for info in infos for n in info.binds}
    replayed = {
        f: got for f in sorted(defined) if (got := student.get(calls_id(f))) is not None and got.value is not None
    }
    if replayed:
        job_cells = _after_definitions(job_cells, set(replayed), REPLAY)
        injections += [
            Injection(name=REPLAY + f, value=capture.to_wire(got.value))
            for f, got in replayed.items()
            if got.value is not None
        ]
        # Whether each function's answers differ from the solution's own where its steps call it.
        job = replace(
            job,
            captures=job.captures
            + tuple(CaptureSpec(calls_id(f), CaptureKind.EXPR, f"{CALLS}.get({f!r}, False)", None) for f in replayed),
        )
    if variant is not None:  # the variant's inputs go in first, where the solution defines them
        job_cells = [replace(jc, source=variants.with_injections(jc.source, variant.names)) for jc in job_cells]
        injections = [Injection(name=n, value=variant.values[n]) for n in variant.names] + injections
    captures = tuple(
        CaptureSpec(c.id, CaptureKind.EXPR, f"{carry.CARRIED}[{c.id!r}]", None)
        if c.id in carried
        else replace(c, kind=CaptureKind.EXPR, target=over[c.id])
        if c.id in over
        else c
        for c in job.captures
    )
    files = tuple(f for f in job.files if f[0] != assignment.solution)  # its data only: no notebook file needed
    job_cells = list(run_in_place(job_cells, in_place(assignment, cells, infos)))
    return replace(job, cells=tuple(job_cells), captures=captures, injections=tuple(injections), files=files)
