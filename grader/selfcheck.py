"""The student's self-check: run the public checks before submitting.

    grader check NOTEBOOK                       in a terminal: runs the notebook with the grader's executor
    from grader import check; check("q2")      inside a running notebook: reads the live namespace

Both read ``public_checks.json``, which ``grader assign`` writes next to the skeleton, so they work
with only ``assignments/`` present: no ``solutions/``, no ``config.yaml``. That file says what each
check looks at and what is expected *in kind* (type, shape, kind of numbers, properties); it holds
reference values only for checks the instructor marked ``public: true``. So a self-check judges:

- whether the question is answered at all (blanks, missing names, errors), with the grader's own
  messages (``grader.judge.checks.grade_check``);
- the type and shape, with the messages of ``grader.judge.compare.compare``;
- the declared properties (``grader.course.properties.check_property``);
- values, only where the instructor made them public.

Passing it is necessary, not sufficient: the real grader also compares values students never see.
A question that fails here fails in the real grader too.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grader import capture, notebook
from grader.authoring.public import PUBLIC_CHECKS, PublicCheck, PublicChecks, PublicQuestion, locate
from grader.authoring.public import load as load  # selfcheck.load: what tests and notebooks call
from grader.capture import Value
from grader.course.kinds import KINDS
from grader.course.model import Limits
from grader.course.properties import check_property
from grader.errors import CaptureFailed, NotebookError, UsageError
from grader.judge import wording
from grader.judge.checks import Context, grade_check
from grader.judge.compare import compare
from grader.judge.scorecard import CheckResult, Feedback, QuestionResult
from grader.judge.verdicts import AwaitingPerson, Differs
from grader.notebook import answers
from grader.notebook.answers import Answer
from grader.run.execute import Executor
from grader.run.job import Captured, CaptureSpec, ErrorWire, Job, JobCell, RunError
from grader.vocab import CaptureKind, CheckStatus, FeedbackKind, QuestionStatus, Reason, SkipReason, Uncapturable

if TYPE_CHECKING:
    from grader.run.worker_process import Started

SHAPE_REASONS = (Reason.TYPE, Reason.SHAPE, Reason.LENGTH, Reason.KEYS)
MAX_DATA_BYTES = 512 * 1024 * 1024
LIVE_MISSING = (
    "{label} is not defined in this session yet: run the cell that computes it (fill in its blank `?` "
    "first), then check again."
)
LIVE_BEFORE = (
    "{label} is checked at the point just before `{before}` is computed, and `{before}` already exists "
    "in this session, so the value here may not be the one this question asks about; run "
    "`grader check NOTEBOOK` in a terminal to check it at the right point."
)
MARKS = {"passed": "✅", "failed": "❌", "error": "❌", "unanswered": "⬜", "skipped": "➖", "manual": "⏳"}
WORDS = {
    "passed": "passes the public checks",
    "failed": "does not pass",
    "error": "raised an error",
    "unanswered": "not answered",
    "skipped": "not checked here",
    "manual": "answered; a person grades it",
}


# --------------------------------------------------------------------------------------------
# Verdicts: the grader's own records (``CheckResult``, ``QuestionResult``), worded by its wording


def judge_check(pc: PublicCheck, question_id: str, ctx: Context) -> CheckResult:
    """The check's verdict, with the real grader's records: its reasons say why it did not pass."""
    expected = pc.expected()
    stand_in = expected if expected is not None else Value("none", None)
    base = replace(pc.as_check(question_id), compare=False, properties=())
    res = grade_check(base, replace(ctx, reference={pc.id: Captured(value=stand_in)}), 0.0)
    if res.status != CheckStatus.PASSED:
        return res

    def differs(*report: str) -> CheckResult:
        return replace(res, status=CheckStatus.FAILED, reasons=(Differs(pc.label, tuple(report)),))

    got = ctx.student[pc.id].value
    assert got is not None, "a check passes only on a value that exists"
    if pc.value is not None:
        cmp = compare(pc.label, got, pc.value, rtol=pc.rtol, atol=pc.atol, reveal=False)
        if not cmp.ok:
            return differs(*cmp.messages)
    elif expected is not None:
        cmp = compare(pc.label, got, expected, rtol=pc.rtol, atol=pc.atol, reveal=False)
        if not cmp.ok and cmp.reason in SHAPE_REASONS:
            if cmp.reason == Reason.TYPE:
                shape = f" of shape {capture.shape_text(pc.shape)}" if pc.shape else ""
                return differs(f"{pc.label} is {got.describe()}; expected numbers{shape}.")
            return differs(*cmp.messages)
    elif not _same_kind(pc.type, got):
        return differs(f"{pc.label} is {got.describe()}; expected a {pc.type}.")
    if pc.shape is not None and pc.type in ("frame", "series"):
        problem = check_property("shape", pc.label, got, Value("array", np.zeros(pc.shape)), atol=pc.atol)
        if problem:
            return differs(problem)
    for prop in pc.properties:
        problem = check_property(prop, pc.label, got, expected, atol=pc.atol)
        if problem:
            return differs(problem)
    return res


def _same_kind(expected: str | None, got: Value) -> bool:
    if expected in (None, "array", "bool", "int"):  # numbers: an integer of any size among them
        return True
    if expected in ("text", "objects"):
        return got.kind in ("text", "objects", "list", "tuple")
    if expected in ("list", "tuple"):
        return got.kind in ("list", "tuple", "array")
    if expected in ("frame", "series", "index", "pdarray"):
        return got.kind in ("frame", "series", "index", "pdarray", "array")
    return got.kind == expected


def judge(
    public: PublicChecks,
    ctx: Context,
    *,
    only: str | None = None,
    live_ns: dict[str, Any] | None = None,
    written: dict[str, Answer] | None = None,
) -> tuple[QuestionResult, ...]:
    """The verdict of each question, as the grader's records (no points: the self-check gives
    none); ``written``: the answers found to questions graded by a person (None where the
    notebook's cells are not known, as in a live namespace)."""
    out = []
    for q in public.questions:
        if only is not None and q.id != only:
            continue
        if q.manual:
            found = (written or {}).get(q.id)
            if found is not None and found.untouched:
                out.append(_question(q, QuestionStatus.UNANSWERED, (wording.manual(AwaitingPerson(untouched=True)),)))
            else:
                out.append(_question(q, QuestionStatus.MANUAL, (wording.manual_selfcheck(),)))
            continue
        checks: list[CheckResult] = []
        statuses: list[str] = []
        lines: list[Feedback] = []
        for pc in q.checks:
            if live_ns is not None and pc.before and pc.before in live_ns:
                statuses.append(QuestionStatus.SKIPPED)
                lines.append(Feedback(FeedbackKind.NOTE, LIVE_BEFORE.format(label=pc.label, before=pc.before)))
                continue
            got = ctx.student.get(pc.id)
            if live_ns is not None and got is not None and got.missing:
                statuses.append(CheckStatus.UNANSWERED)
                lines.append(Feedback(FeedbackKind.MISSING, LIVE_MISSING.format(label=pc.label)))
                continue
            res = judge_check(pc, q.id, ctx)
            checks.append(res)
            statuses.append(res.status)
            lines += [line for reason in res.reasons for line in wording.check_feedback(reason)]
        if all(s == "passed" for s in statuses):
            status = QuestionStatus.PASSED
        elif all(s in ("passed", "skipped") for s in statuses):
            status = QuestionStatus.SKIPPED if all(s == "skipped" for s in statuses) else QuestionStatus.PASSED
        elif all(s in ("unanswered", "skipped") for s in statuses):
            status = QuestionStatus.UNANSWERED
        elif "error" in statuses:
            status = QuestionStatus.ERROR
        elif "failed" in statuses:
            status = QuestionStatus.FAILED
        else:
            status = QuestionStatus.UNANSWERED
        out.append(_question(q, status, tuple(dict.fromkeys(lines)), tuple(checks)))
    return tuple(out)


def _question(
    q: PublicQuestion, status: QuestionStatus, feedback: tuple[Feedback, ...], checks: tuple[CheckResult, ...] = ()
) -> QuestionResult:
    return QuestionResult(
        id=q.id, title=q.title, score=0.0, max_score=0.0, status=status, feedback=feedback, checks=checks
    )


def _no_blanks() -> notebook.BlankReport:
    return notebook.BlankReport(blanks=(), tainted={})


# --------------------------------------------------------------------------------------------
# The two ways to run: a notebook file in a fresh process, or the live namespace


def _executor() -> Executor:
    """The grader's own default executor (the warm forking server, shared per process)."""
    from grader.run.executors import DEFAULT, make_executor

    return make_executor(DEFAULT)


def data_files(folder: Path, notebook_path: Path) -> tuple[tuple[Path, str], ...]:
    """The files handed out with the assignment (everything in its folder but notebooks and the
    checks file), for the notebook to read, plus the notebook itself."""
    files, total = [], 0
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if not p.is_file() or p.suffix == ".ipynb" or p.name == PUBLIC_CHECKS:
            continue
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        total += p.stat().st_size
        if total > MAX_DATA_BYTES:
            break
        files.append((p, rel.as_posix()))
    return tuple(files) + ((notebook_path, notebook_path.name),)


def check_notebook(
    path: Path,
    public: PublicChecks,
    *,
    only: str | None = None,
    executor: Executor | None = None,
    limits: Limits | None = None,
) -> tuple[QuestionResult, ...]:
    """Run the notebook the way the grader does (blanks found first, then a sandboxed run) and judge
    the public checks. Raises NotebookError for a file that is not a notebook."""
    path = Path(path)
    befores = {(pc.before, pc.as_check("").names) for q in public.questions for pc in q.checks if pc.before is not None}
    cells = notebook.split_before_binds(notebook.read(path), befores)
    infos = notebook.analyse(cells)
    specs = tuple(
        CaptureSpec(
            pc.id,
            KINDS[pc.kind].capture,
            pc.target,
            notebook.before_point(infos, pc.before, pc.as_check("").names) if pc.before else None,
            pc.seed,
        )
        for q in public.questions
        for pc in q.checks
    )
    job_cells = tuple(
        JobCell(
            index=c.index,
            source=notebook.fill_blanks(c.source) if i.blanks else c.source,
            skip=SkipReason.TAGGED if c.skipped else SkipReason.RUN,
        )
        for c, i in zip(cells, infos, strict=True)
    )
    job = Job(
        cells=job_cells,
        captures=specs,
        limits=limits or Limits(),
        files=data_files(public.folder, path.resolve()),
        cell_seed=public.seed_each_cell,
    )
    run = (executor or _executor()).run(job)
    # Titles and checks, so a value missing because of an earlier error points where the grader does.
    ctx = Context(
        infos=infos,
        blanks=notebook.blank_report(infos),
        cells=run.cells,
        student=run.captures,
        reference={},
        titles={q.id: q.title for q in public.questions},
        checks=tuple(pc.as_check(q.id) for q in public.questions for pc in q.checks),
    )
    manual = [(q.id, q.title) for q in public.questions if q.manual]
    written = answers.locate(answers.read_cells(path), (), manual) if manual else {}
    return judge(public, ctx, only=only, written=written)


@contextlib.contextmanager
def _rng_kept() -> Iterator[None]:
    """Seeded checks must not change the random numbers the student's session goes on to draw."""
    state = random.getstate()
    np_state = np.random.get_state()
    torch = sys.modules.get("torch")
    t_state = torch.get_rng_state() if torch is not None else None
    try:
        yield
    finally:
        random.setstate(state)
        np.random.set_state(np_state)
        if torch is not None and t_state is not None:
            torch.set_rng_state(t_state)


def capture_live(ns: dict[str, Any], pc: PublicCheck) -> Captured:
    """What the worker would capture, taken from a live namespace (the student's own session)."""
    from grader.run.student_values import describe_error
    from grader.seeding import seed_everything

    try:
        if KINDS[pc.kind].capture == CaptureKind.VALUE:
            if pc.target not in ns:
                return Captured(missing=True)
            value = ns[pc.target]
        else:
            with _rng_kept():
                if pc.seed is not None:
                    seed_everything(int(pc.seed))
                value = eval(compile(pc.target, "<check>", "eval"), ns)  # noqa: S307 - the student's own session
        return Captured(value=capture.decode(capture.encode(value, budget=[Limits().capture_mb * 1024 * 1024])))
    except CaptureFailed as exc:
        return Captured(uncapturable=Uncapturable.FORM, detail=str(exc))
    except NameError as exc:
        return Captured(missing=True, error=_error(describe_error(exc, 8)))
    except RecursionError:
        return Captured(uncapturable=Uncapturable.RECURSION)
    except Exception as exc:  # noqa: BLE001 - the student's code raised while the check ran: a verdict, not a crash
        return Captured(error=_error(describe_error(exc, 8)))


def _error(info: ErrorWire) -> RunError:
    return RunError(info["ename"], info["evalue"], tuple(info["traceback"]), info["name"], info["source"])


def check_namespace(ns: dict[str, Any], public: PublicChecks, *, only: str | None = None) -> tuple[QuestionResult, ...]:
    captures = {pc.id: capture_live(ns, pc) for q in public.questions if only in (None, q.id) for pc in q.checks}
    ctx = Context(infos=[], blanks=_no_blanks(), cells=[], student=captures, reference={})
    return judge(public, ctx, only=only, live_ns=ns)


# --------------------------------------------------------------------------------------------
# Report


def format_report(public: PublicChecks, verdicts: Sequence[QuestionResult]) -> str:
    width = max([len(v.id) for v in verdicts] + [2])
    lines = [
        f"Public checks for {public.assignment}: {public.title}",
        "(type, shape and properties, plus any values your instructor made public; passing them does not mean "
        "the values are right: the grader also compares values you cannot see.)",
        "",
    ]
    for v in verdicts:
        lines.append(f"{MARKS.get(v.status, ' ')} {v.id:<{width}}  {v.title}: {WORDS.get(v.status, v.status)}")
        lines += [f"{'':<{width + 4}}- {m}" for m in v.lines]
    n = sum(v.status == "passed" for v in verdicts)
    by_person = sum(v.status == "manual" for v in verdicts)
    auto = len(verdicts) - sum(v.id in manual_ids(public) for v in verdicts)
    verb = "pass" if auto != 1 else "passes"
    total = f"{n} of {auto} question{'s' if auto != 1 else ''} {verb} the public checks."
    if auto < len(verdicts):
        total += (
            f" {by_person} of {len(verdicts) - auto} graded by a person {'are' if by_person != 1 else 'is'} answered."
        )
    lines += ["", total]
    return "\n".join(lines)


def manual_ids(public: PublicChecks) -> set[str]:
    return {q.id for q in public.questions if q.manual}


def check(
    question: str | None = None,
    *,
    assignment: str | None = None,
    checks: str | Path | None = None,
    namespace: dict[str, Any] | None = None,
) -> tuple[QuestionResult, ...]:
    """In a notebook: ``check("q2")`` or ``check()`` for every question. Prints the report and
    returns the verdicts. Reads the variables of the running notebook; runs nothing again."""
    if namespace is None:
        namespace = sys._getframe(1).f_globals  # the notebook's namespace (IPython runs cells in it)
    public = load(locate(assignment=assignment, explicit=checks, question=question))
    if question is not None:
        public.question(question)  # a clear error for a wrong id
    verdicts = check_namespace(namespace, public, only=question)
    print(format_report(public, verdicts))
    return verdicts


def run_cli(
    path: Path, *, assignment: str | None, checks: str | None, question: str | None, ahead: Started | None = None
) -> int:
    """``grader check NOTEBOOK``: 0 when every question passes the public checks, 1 otherwise.
    ``ahead``: a worker started already (``worker_process.start``), for the notebook's run."""
    public = load(locate(notebook_path=path, assignment=assignment, explicit=checks, question=question))
    if question is not None:
        public.question(question)
    if not path.exists():
        raise UsageError(f"{path} does not exist.")
    from grader.run.subprocess_executor import SubprocessExecutor

    try:
        # One notebook: a fresh process is quicker than starting the warm forking server for it.
        verdicts = check_notebook(path, public, only=question, executor=SubprocessExecutor(ahead=ahead))
    except NotebookError as exc:
        print(f"{path.name} cannot be checked: {exc}")
        return 1
    print(format_report(public, verdicts))
    return 0 if all(v.status in ("passed", "manual") for v in verdicts) else 1
