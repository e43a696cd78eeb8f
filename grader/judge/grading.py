"""Grading one submission end to end: read, analyse, run, check, scorecard.

    read (nbformat) -> analyse (blanks, names) -> plan captures -> executor.run
    -> verdicts against the reference (cached run of the solution) -> Scorecard

Every path through ``grade`` returns a Scorecard; nothing a submission contains can raise out of it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from pathlib import Path

from grader import notebook
from grader.course.model import Assignment, Check, Course, Limits
from grader.errors import NotebookError, OverBudget, SolutionError
from grader.files import printable, sha256_file
from grader.judge import carry, fixes, manual, per_student, wording
from grader.judge.budgets import Budget, CpuBudget
from grader.judge.checks import Context, VariantRun, blocked_questions, grade_assignment, grade_check, root_failure
from grader.judge.context import without_right_calls
from grader.judge.jobs import JobTemplate, answer_cells, build_carry_job, figure_captures
from grader.judge.reference import Reference, References, VariantSet
from grader.judge.scorecard import CellError, Execution, QuestionResult, Scorecard
from grader.judge.students import Students
from grader.judge.variants import Variant
from grader.run.execute import Executor, Session
from grader.run.forking import default_executor
from grader.run.job import Captured, DiskFull, Job, RunResult
from grader.run.sandbox import not_enforced
from grader.vocab import CellStatus, CheckStatus, QuestionStatus, RunStatus, SubmissionStatus

# A submission's card, its fields known so far given: called once, with the rest, to build the card.
CardOf = partial[Scorecard]

# --------------------------------------------------------------------------------------------


@dataclass(init=False)
class Grader:
    """Grades submissions of one course; holds the executor and the reference store."""

    course: Course
    executor: Executor
    references: References
    now: datetime | None

    # Written out rather than generated so that ``references`` is always set once built: it needs
    # the executor, and callers use it without a check for None.
    def __init__(
        self,
        course: Course,
        executor: Executor | None = None,
        references: References | None = None,
        now: datetime | None = None,
    ) -> None:
        self.course = course
        self.executor = executor if executor is not None else default_executor()  # warm forking server, per process
        self.references = references if references is not None else References(course, self.executor)
        self.now = now
        self.__post_init__()  # as a generated __init__ would: subclasses extend it

    def __post_init__(self) -> None:
        self.students = Students(self.references)  # each student's own data (``per_student``)
        self._skip: dict[str, set[str]] = {}
        self._locked: dict[str, list[notebook.Cell]] = {}
        self._solution: dict[str, tuple[list[notebook.Cell], list[notebook.CellInfo]] | None] = {}

    def reveal(self) -> bool:
        return self.course.scorecard.reveal(self.now)

    def grade(
        self, assignment: Assignment, path: Path, *, student: str = "", id: str = "", course_variants: bool = False
    ) -> Scorecard:
        """The submission's scorecard. ``id``: the submission's identity (``Scorecard.id``), empty
        where the caller has none. ``course_variants``: check it on the course's variants even
        where the assignment draws variants per submission (``grader validate`` checks those)."""
        path = Path(path)
        started = time.monotonic()
        ref = self.references.get(assignment)  # a broken solution is an error for the whole run
        cpu = CpuBudget(assignment.limits.grader_cpu)  # from here on, the submission's own cost
        # What every card of this submission says whatever happens to it; the rest is computed
        # below, and the card built once, at the end of the path grading takes.
        card = partial(
            Scorecard,
            assignment=assignment.name,
            submission=printable(path.name),
            max_score=assignment.max_score,
            student=printable(student),
            id=id,
        )
        try:
            sha = sha256_file(path)
        except OSError as exc:
            return self._invalid(partial(card, sha256=""), assignment, f"The file cannot be opened ({exc.strerror}).")
        card = partial(card, sha256=sha)
        own = None  # a per-student assignment's: whose data it holds, the inputs it is graded on
        if assignment.per_student is not None:
            with cpu.aside():  # the solution's run on the student's inputs: not the submission's cost
                own = self.students.inputs(assignment, path, student)
            card = partial(card, student_data=own.record)
            if own.captures is None:  # nobody's data: nothing is paid
                questions = not_graded(assignment, QuestionStatus.FAILED, own.told)
                return card(status=SubmissionStatus.GRADED, reason=own.told, score=0.0, questions=questions)
            ref = replace(ref, captures=own.captures)
        try:
            graded = self._grade(
                assignment,
                path,
                card,
                sha,
                ref,
                cpu,
                started,
                own_variants=assignment.variants.per_submission and not course_variants,
                own=own,
            )
        except OverBudget as exc:
            return self._over_budget(card, assignment, str(exc), cpu, started)
        return graded if own is None else per_student.settle(graded, own)

    def _grade(
        self,
        assignment: Assignment,
        path: Path,
        card: CardOf,
        sha: str,
        ref: Reference,
        cpu: CpuBudget,
        started: float,
        *,
        own_variants: bool,
        own: per_student.StudentInputs | None = None,
    ) -> Scorecard:
        if assignment.name not in self._locked:
            self._locked[assignment.name] = self.references.locked_cells(assignment)
        try:
            cells, restored = notebook.restore_locked(notebook.read(path), self._locked[assignment.name])
            cells = answer_cells(assignment, cells)
        except NotebookError as exc:
            return self._invalid(card, assignment, str(exc))
        infos = notebook.analyse(cells)
        cpu.check("reading and analysing the notebook")
        if assignment.name not in self._skip:
            self._skip[assignment.name] = self.references.skip_sources(assignment)
        calls = carry.followed_calls(assignment, infos)
        record = tuple(sorted(calls.owners))  # the student's callables a later step uses: their calls recorded
        jobs = JobTemplate.of(
            assignment,
            cells,
            infos,
            path,
            hints=False,
            skip=self._skip[assignment.name],
            traceback_lines=self.course.scorecard.traceback_lines,
            record=record,
        )
        job = jobs.job()  # its run's, and its variants' below
        drawn = manual.drawn_cells(assignment, path)
        if drawn:  # the figures a plot question's cells draw, from this run only
            job = replace(job, captures=job.captures + figure_captures(infos, drawn))
        with self.executor.session() as runner:  # one sandbox for the run and its variants
            run = runner.run(job)
            cpu.check("reading the values its run sent")
            flow, links = self._upstream(assignment, infos)
            upstream, via = carry.with_calls(flow, calls)
            ctx = Context(
                infos=infos,
                blanks=notebook.blank_report(infos),
                cells=run.cells,
                student=run.captures,
                reference=ref.captures,
                reveal=self.reveal(),
                given=assignment.given,
                upstream=upstream,
                solution_links=links,
                calls=via,
                data_dir=assignment.solution_dir,
            )
            # A per-student notebook whose run held another's data gets no credit for steps right
            # given its own upstream values: those were computed on someone else's data.
            own = own.ran_on(ctx.changed_givens()) if own is not None else None
            carries = own is None or own.record.own_data
            need_carry = carries and carry.needed(assignment, ctx.upstream, run.captures, ref.captures)
            # Steps without a value because a function or class of the student's, tested by another
            # question, raised: run again with the solution's definition in its place (``fixes``).
            fixing = fixes.needed(assignment, ctx) if carries and self._solution_steps(assignment) is not None else {}
            # Variants run whatever the original run's ending (a crash, a timeout, a last cell that
            # ends the process): only a question that matched on every variant earns its points. They
            # also check a value that is right only given the student's own upstream values.
            vset: VariantSet | None = None
            if ref.variants and (need_carry or _anything_passes(assignment, ctx)):
                if own_variants:
                    with cpu.aside():  # the solution's runs: not the submission's cost
                        vset = self.references.variants_for(assignment, sha)
                else:
                    vset = ref.course_set()
                runs = []
                budget = Budget(assignment.limits, run.duration)
                for variant, vref, changed in zip(vset.variants, vset.captures, vset.changed, strict=True):
                    vjob = replace(
                        jobs.job(variant), last=variant is vset.variants[-1] and not fixing
                    )  # its sandbox prepares no further run
                    if budget.left() <= 0:
                        vrun = RunResult(status=RunStatus.TIMEOUT, reason=budget.reason())
                    else:
                        vrun = runner.run(replace(vjob, limits=budget.limits()))
                        budget.spend(vrun.duration)
                        cpu.check(f"reading the values of variant run {variant.number}")
                    runs.append(
                        VariantRun(
                            number=variant.number,
                            names=variant.names,
                            student=vrun.captures,
                            reference=vref,
                            cells=vrun.cells,
                            status=vrun.status,
                            reason=vrun.reason,
                            changed=changed,
                        )
                    )
                ctx = replace(ctx, variants=tuple(runs))
                need_carry = (
                    need_carry
                    or carries
                    and any(carry.needed(assignment, ctx.upstream, r.student, r.reference) for r in runs)
                )
            if carries and (fixing or ctx.variants):  # a step the variants left without a value that way too
                fixing = fixes.needed(assignment, ctx) if self._solution_steps(assignment) is not None else {}
            if fixing:
                solution = self._solution_steps(assignment)
                assert solution is not None  # asked only where the solution's code is here
                variants = list(vset.variants) if vset is not None else []
                budget = Budget(assignment.limits, run.duration)
                ctx = fixes.with_runs(ctx, jobs, fixing, solution[0], runner, variants, budget)
                cpu.check("reading the values of the runs with a working function in place")
        if need_carry:
            ctx = self._carry_forward(assignment, ctx, vset.variants if vset is not None else [], own)
            cpu.check("reading the values of the error-carried-forward runs")
        questions = tuple(manual.with_answers(assignment, path, grade_assignment(assignment, ctx), ctx.student))
        status, reason = SubmissionStatus.GRADED, ""
        if run.status != RunStatus.OK:
            status = SubmissionStatus.TIMEOUT if run.status == RunStatus.TIMEOUT else SubmissionStatus.CRASHED
            reason = run.reason
        execution = execution_summary(
            run,
            self.executor.name,
            time.monotonic() - started,
            limits=assignment.limits,
            infos=infos,
            blocked=blocked_questions(questions),
        )
        if restored:
            execution = replace(execution, notes=(*execution.notes, wording.restored_cells(restored)))
        if assignment.notes:  # the course's own, once per scorecard
            execution = replace(execution, notes=(*execution.notes, *assignment.notes))
        if vset is not None and own_variants:
            # Whether its variants were its own (never which values or seed): the course's stand in
            # where the solution's steps or the secret are not here, or no draw tested as much.
            execution = replace(
                execution, variant_inputs=("this submission's own" if vset.own and not vset.note else vset.note)
            )
        return card(
            **({"student_data": own.record} if own is not None else {}),
            status=status,
            reason=reason,
            score=sum(q.score for q in questions),
            questions=questions,
            execution=execution,
        )

    def _carry_forward(
        self, assignment: Assignment, ctx: Context, variants: list[Variant], own: per_student.StudentInputs | None
    ) -> Context:
        """The solution's values computed from the student's own upstream values (``carry``): one
        sandboxed run of the solution for the notebook's data and one per variant, in the solution's
        own sandbox (never the student's), only for a submission with a wrong step after a wrong step."""
        solution = self._solution_steps(assignment)
        if solution is None:
            # A bundle built for a place students can read (``grader grading-bundle``) holds no
            # solution code: graded there without carry-forward.
            return ctx
        cells, infos = solution
        skip = self._skip[assignment.name]
        by_number = {v.number: v for v in variants}
        # The solution's sandbox and warm process, as for its draws (``References._draw``): the
        # student's values come in as plain data, and no student code runs there.
        with self.executor.session(reuse=("solution", assignment.name)) as runner:
            carried = self._trusted(
                runner,
                build_carry_job(assignment, cells, infos, ctx.student, skip=skip, variant=own.variant if own else None),
            )
            runs = tuple(
                replace(
                    v,
                    carried=self._trusted(
                        runner,
                        build_carry_job(assignment, cells, infos, v.student, skip=skip, variant=by_number[v.number]),
                    ),
                )
                for v in ctx.variants
            )
        return without_right_calls(replace(ctx, carried=carried, variants=runs))

    def _trusted(self, runner: Session, job: Job) -> dict[str, Captured]:
        """The captures of a run of the solution's code (trusted, in the solution's sandbox). A run
        that timed out or whose process died is the grader's own failure, not the student's (a
        loaded machine, a kernel slow to start): it is run once more in a process of its own before
        its values, whatever they are, are taken."""
        job = replace(job, stay=True, trusted=True)
        done = runner.run(job)
        if done.status != RunStatus.OK:
            with self.executor.session() as fresh:
                again = fresh.run(replace(job, stay=False))
            if again.status == RunStatus.OK or len(again.captures) > len(done.captures):
                done = again
        return done.captures

    def _solution_steps(self, assignment: Assignment) -> tuple[list[notebook.Cell], list[notebook.CellInfo]] | None:
        """The solution's cells as the carry-forward runs run them, and what each reads and binds;
        None where no solution code is here (a reference bundle without it)."""
        if assignment.name not in self._solution:
            try:
                cells = self.references.solution_cells(assignment)  # the notebook, or the reference bundle's steps
            except SolutionError:
                self._solution[assignment.name] = None
                return None
            cells = answer_cells(assignment, cells)  # split as the reference runs split them
            self._solution[assignment.name] = (cells, notebook.analyse(cells))
        return self._solution[assignment.name]

    def _upstream(
        self, assignment: Assignment, infos: list[notebook.CellInfo]
    ) -> tuple[dict[str, tuple[Check, ...]], dict[str, tuple[str, ...]]]:
        """Each step's upstream steps in the student's notebook and in the solution's, and those
        of the solution's only (``carry.with_solution``)."""
        solution = self._solution_steps(assignment)
        theirs = carry.upstream(assignment, solution[1]) if solution is not None else {}
        return carry.with_solution(carry.upstream(assignment, infos), theirs)

    def _invalid(self, card: CardOf, assignment: Assignment, reason: str) -> Scorecard:
        return card(
            status=SubmissionStatus.INVALID_NOTEBOOK,
            reason=reason,
            score=0.0,
            questions=not_graded(assignment, QuestionStatus.UNANSWERED, "the submission is not a readable notebook."),
            execution=Execution(executor=self.executor.name, cells_run=0, errors=(), time=0.0),
        )

    def _over_budget(
        self, card: CardOf, assignment: Assignment, reason: str, cpu: CpuBudget, started: float
    ) -> Scorecard:
        return card(
            status=SubmissionStatus.OVER_BUDGET,
            reason=reason,
            score=0.0,
            questions=not_graded(assignment, QuestionStatus.ERROR, reason),
            execution=Execution(
                executor=self.executor.name,
                errors=(),
                time=round(time.monotonic() - started, 3),
                grader_cpu=round(cpu.spent(), 3),
            ),
        )


def _anything_passes(assignment: Assignment, ctx: Context) -> bool:
    """Whether any check passes on the original data (else variants cannot change the grade)."""
    return any(grade_check(c, ctx, 1.0).status == CheckStatus.PASSED for c in assignment.checks)


def execution_summary(
    run: RunResult,
    executor: str,
    elapsed: float,
    *,
    limits: Limits | None = None,
    infos: list[notebook.CellInfo] | None = None,
    blocked: dict[int, list[str]] | None = None,
) -> Execution:
    """The run as the scorecard reports it. Errors are listed by their first cause: a ``NameError``
    that only follows from an earlier failed cell (the data flow says so) is folded into that
    cell's entry (``blocked_cells``), with the questions the error left without a value."""
    first: dict[int, CellError] = {}  # by cell, in the order the errors came
    for c in run.errors:
        root = root_failure(c, infos, run.cells)[0] if infos is not None and len(infos) == len(run.cells) else c
        if root is not c and root.index in first:
            entry = first[root.index]
            first[root.index] = replace(entry, blocked_cells=entry.blocked_cells + (c.index,))
            continue
        blank = c.name == notebook.BLANK_NAME
        mark = _mark(infos[c.pos].blanks if infos is not None and len(infos) == len(run.cells) else [])
        first[c.index] = CellError(
            cell=c.index,
            status="blank" if blank else str(c.status),
            error=wording.unfilled(mark) if blank else f"{c.ename}: {c.evalue}".strip(": "),
            traceback=tuple(t.replace(notebook.BLANK_NAME, mark) for t in c.traceback),
        )
    for cell, questions in (blocked or {}).items():
        if cell in first:
            first[cell] = replace(first[cell], blocked_questions=tuple(questions))
    truncated = [c for c in run.cells if c.output_truncated]
    limit = f"the {_size(limits.output_kb * 1024)} limit" if limits is not None else "the limit"
    return Execution(
        executor=executor,
        # by the student's cell numbers: a cell cut where a question is answered is still one cell
        cells_run=len({c.index for c in run.cells if c.status in (CellStatus.OK, CellStatus.ERROR)}),
        cells_skipped=len({c.index for c in run.cells if c.status == CellStatus.SKIPPED}),
        errors=tuple(first.values()),
        time=round(elapsed, 3),
        output_truncated_in_cells=tuple(c.index for c in truncated),
        notes=tuple(
            f"cell {c.index} printed {_size(c.output_bytes)} of output, more than {limit}; the rest was discarded"
            for c in truncated
        )
        + tuple(_disk_note(d, limits) for d in run.disk_full),
        attempts=run.attempts if run.attempts > 1 else None,
        sandbox=tuple(run.sandbox),
        # a sandboxed process reported its protections (a Jupyter kernel reports none yet)
        sandbox_not_enforced=tuple(not_enforced(run.sandbox)) if "session" in run.sandbox else None,
    )


def _disk_note(full: DiskFull, limits: Limits | None) -> str:
    """What a run wrote where it met its disk limit, and the error its writes got from then on."""
    if full.place == "file":
        return (
            f"cell {full.cell} wrote a file up to the {_size(full.held)} a file may hold: its write past that "
            "failed with 'File too large' (EFBIG)"
        )
    where = "its working directory" if full.place == "workdir" else full.place
    mb = f"the {limits.disk_mb} MB" if limits is not None else "the most"
    if full.watched:
        over = full.held - limits.disk_mb * (1 << 20) if limits is not None else 0
        past = f"; {_size(over)} past it before the grader's look" if over > 0 else ""
        return (
            f"the notebook filled {where}: it held {_size(full.held)} at most, against {mb} a run may keep on "
            f"disk{past}; every later write to a file failed with 'File too large' (EFBIG)"
        )
    return (
        f"cell {full.cell} filled {where} ({_size(full.held)}, {mb} a run may keep there): writes there "
        "failed with 'No space left on device' (ENOSPC)"
    )


def _mark(blanks: Sequence[notebook.Blank]) -> str:
    """The placeholder a cell's first blank was (``?`` where the cell has none a run could meet)."""
    return blanks[0].mark if blanks else "?"


def _size(n: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{n} bytes"


def not_graded(assignment: Assignment, status: QuestionStatus, why: str) -> tuple[QuestionResult, ...]:
    """Every question of the assignment at 0 with ``status``, each saying why it was not graded."""
    return tuple(
        QuestionResult(
            id=q.id, title=q.title, score=0.0, max_score=q.points, status=status, feedback=wording.not_graded(why)
        )
        for q in assignment.questions
    )
