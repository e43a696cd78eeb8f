"""``test`` checks: the instructor's own Python, run where the student cannot reach its verdict.

A test passes when it raises nothing, as a test cell of a notebook does. It runs twice, from one
rewrite (``grader.judge.testrewrite``):

1. *record*, in the student's sandbox, over the notebook's own namespace, exactly as its author
   wrote it (``del`` of a notebook name and putting it back in ``finally``, ``try``/``except``/
   ``else``, loops, helper functions, ``with``). Every call into the student's code is recorded
   (``grader.run.test_recorder``): plain data, an opaque handle for what is not data (a generator,
   an instance of the student's class), or the exception it raised. The student's copy of the test
   has no assert messages and no expected side of a comparison.
2. *replay*, here, with the grader's own numpy, pytest and builtins. Each site answers from its
   record: data is the grader's own copy, so an ``ndarray`` subclass or an always-equal object
   arrives as plain numbers or not at all; a handle fails when the test uses it as data, and any
   further use of it is a site of its own, answered by its record (``next(gen)``, ``obj.method()``);
   an exception is raised again with its type, so ``except ValueError`` and ``pytest.raises`` see it.

Whatever the student's process does to its own builtins, ``AssertionError``, ``sys.settrace`` or
the test's modules changes only what it records, which is what its code returns anyway: the asserts
and so the verdict run here. What fails is kept as records (``grader.judge.verdicts``), worded by
``grader.judge.wording``: an ``AssertionError`` is told by where it came from (numpy.testing's
comparison as data, ``TestComparisonFailed``; a nose-style helper's, ``HelperFailed``; the test's
own ``raise``), never by reading its message; a library's message is shown only where the course
shows expected values.

Why one module: replaying a record and judging the assert it answers read the same state (which
site ran, which values an assert read), so they live in one class; what it runs within is testruntime,
and the records it replays are read back by ``grader.judge.testrecords``.
"""

from __future__ import annotations

import builtins
import contextlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from grader.capture import PANDAS, Value, decode, encode, to_python, trim
from grader.course.model import Check
from grader.errors import (
    HelperFailed,
    SiteUnrecorded,
    SiteUnusable,
    StudentException,
    TestComparisonFailed,
    TestDidNotRaise,
    TestSiteError,
    TestStopped,
)
from grader.judge import testmodules
from grader.judge import verdicts as v
from grader.judge.compare import compare
from grader.judge.scorecard import CheckResult
from grader.judge.testcopies import PARTIAL, PRINTED, partial_points
from grader.judge.testrecords import Record, Records, one_array_each
from grader.judge.testrewrite import IS, OPS, TEST_FILE, AssertInfo, Site, program
from grader.judge.testruntime import (
    Handle,
    Output,
    from_student,
    message_of,
    namespace,
    printing,
    raised,
    same_object,
    show,
    site_finding,
)
from grader.judge.testvocab import as_in_a_kernel, one_blas_thread
from grader.names import (
    PRINTOPTIONS,
    TEST_ASSERT,
    TEST_AT,
    TEST_DEL,
    TEST_ITER,
    TEST_SITE,
    TEST_SNAP,
    TEST_SYNC,
    TEST_WITH,
)
from grader.run.job import Captured, CaptureSpec
from grader.seeding import seed_everything
from grader.vocab import CaptureKind, CheckStatus, Unprepared

BUDGET = 64 * 1024 * 1024
# A test's own draws (``np.random.seed(1001)``, then ``np.random.choice(y_hat, 5)``) come from the
# process's generators, which the threads of a batch share: one test replays at a time, so no
# other thread's draws fall between its seed and its draws.
_DRAWS = threading.Lock()
_CONTROL = (TestStopped, TestSiteError, TestDidNotRaise)  # the grader's own ways out of a test


def captures(check: Check, point: int | None) -> list[CaptureSpec]:
    """The job's capture for one ``test`` check: the student's copy of the test, run at ``point``,
    and the sites the grader computes itself where it holds their inputs as data."""
    prog = program(check.target, check.notebook_names)
    return [
        CaptureSpec(
            id=check.id,
            kind=CaptureKind.TEST,
            target=prog.record_source,
            point=point,
            seed=check.seed,
            # a file the test reads is read here where the assignment has it, else the record's
            local=tuple(site.index for site in prog.sites if site.local and not site.reads_file),
        )
    ]


def _raise_again(site: Site, rec: Record) -> Any:
    """The student's exception, as an exception of the same builtin type (or a subclass of its
    first builtin base, under its own name), so ``except ValueError`` and ``pytest.raises`` see it."""
    builtin = getattr(builtins, rec.ename, None)
    base = getattr(builtins, rec.base, None)
    if builtin is AssertionError:  # the student's own assert: ``except AssertionError`` in the test takes it
        cls: type[BaseException] = type("AssertionError", (AssertionError, StudentException), {})
    elif isinstance(builtin, type) and issubclass(builtin, Exception):
        cls = builtin
    elif isinstance(base, type) and issubclass(base, Exception) and base not in (AssertionError, Exception):
        cls = type(rec.ename if rec.ename.isidentifier() else "StudentError", (base, StudentException), {})
    else:
        cls = type(rec.ename if rec.ename.isidentifier() else "StudentError", (StudentException,), {})
    try:
        exc = cls(rec.detail)
    except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments
        exc = type(rec.ename, (StudentException,), {})(rec.detail)
    exc.__dict__["grader_site"] = site.source
    raise exc


# --------------------------------------------------------------------------------------------
# Judging one submission


def _test_line(exc: BaseException) -> int:
    """The test's innermost line in the exception's traceback (0: none)."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == TEST_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _raised_by_test(exc: BaseException) -> bool:
    """The exception was raised by the test's own code (its ``raise AssertionError("...")``), not
    inside a library it called."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == TEST_FILE


def _as_value(x: Any) -> Value | None:
    """A value the grader holds, as ``compare`` reads it; None when it is not plain data."""
    try:
        return decode(encode(x, budget=[BUDGET]))
    except Exception:  # noqa: BLE001 - anything that is not plain data cannot be compared as such
        return None


@dataclass(frozen=True)
class Outcome:
    """How one run of a test went: asserts passed of those run, what failed, and whether the
    student's code raised (not an assert that failed)."""

    passed: int = 0
    run: int = 0
    findings: tuple[v.TestFinding, ...] = ()
    error: bool = False
    line: int = 0  # the test's line where it first failed
    partial: Any = None  # the value the test gave ``partial_credit``, if any


class _Judging:
    """One test replayed on one submission's records. Sites answer from them; asserts are judged
    here and each failure is kept as a finding."""

    def __init__(self, check: Check, student: dict[str, Captured], reveal: bool, data_dir: Path | None = None):
        self.check, self.reveal, self.data_dir = check, reveal, data_dir
        self.prog = program(check.target, check.notebook_names)
        self.records = Records.read(student.get(check.id))
        self.show_expected = reveal or not check.hidden
        self.stack: list[tuple[str, dict[int, int]]] = [("", {})]
        self.at = -1  # the statement running (``__grader_at__``), for failures outside an assert
        self.values: list[tuple[str, Any]] = []  # the sites an assert read, for its message
        self.arrays: dict[int, Any] = {}  # the student's arrays met so far, by their number (``arrays``)
        self.passed = self.run = 0
        self.findings: list[v.TestFinding] = []
        self.error = False
        self.line = 0  # the test's line where it first failed
        self.partial: Any = None  # the value given to ``partial_credit``

    # Replaying the student's records ----------------------------------------------------------

    def _key(self, index: int) -> str:
        parent, counts = self.stack[-1]
        n = counts.get(index, 0)
        counts[index] = n + 1
        return f"{parent}/{index}.{n}"

    def _within(self, key: str, thunk: Callable[[], Any]) -> Any:
        self.stack.append((key, {}))
        try:
            return thunk()
        finally:
            self.stack.pop()

    def _record(self, site: Site, key: str) -> Record:
        rec = self.records.by_key.get(key) if self.records is not None else None
        if rec is not None:
            return rec
        if self.records is None:
            raise SiteUnrecorded(site.source, Unprepared.NOT_REACHED)
        if self.records.ended:
            raise SiteUnrecorded(site.source, Unprepared.STOPPED, self.records.ended)
        raise SiteUnrecorded(site.source, Unprepared.OTHER_PATH)

    def _answer(self, site: Site, key: str) -> Any:
        rec = self._record(site, key)
        if rec.kind == "v" and rec.value is not None:
            value = to_python(rec.value)
            if rec.arrays:
                value = one_array_each(value, rec.arrays, self.arrays)
            self.values.append((site.source, value))
            return value
        if rec.kind == "h":
            return Handle(
                site.source, rec.detail, rec.value.data if rec.value is not None else None, rec.ident, rec.name
            )
        if rec.kind == "e":
            return _raise_again(site, rec)
        raise SiteUnrecorded(site.source, Unprepared.OTHER_PATH)

    def _local(self, key: str, thunk: Callable[[], Any]) -> tuple[bool, Any]:
        """The site computed here, on the grader's own copies of the student's values, when they
        are data; (False, None) when it touches a value that stayed in the student's process."""
        try:
            value = self._within(key, thunk)
        except SiteUnusable:
            return False, None
        if value is Handle:  # ``type(handle)``: the record knows the student's type
            return False, None
        return True, value

    def site(self, index: int, thunk: Callable[[], Any]) -> Any:
        site, key = self.prog.sites[index], self._key(index)
        if site.reads_file:
            try:  # the assignment's own file, read here; else the one the student's run wrote
                return self._within(key, thunk)
            except FileNotFoundError:
                pass
        elif site.local:
            done, value = self._local(key, thunk)
            if done:
                return value  # computed here: whatever it prints, printed here
        try:
            return self._answer(site, key)
        finally:
            self._print_there(key)

    def _print_there(self, key: str) -> None:
        """What the student's code printed in the call at ``key``, printed here as it was there: into
        the test's output (``printed_text()``), or where the test sent standard output itself
        (``contextlib.redirect_stdout(buf)``, ``sys.stdout = io.StringIO()``)."""
        text = self.records.printed.get(key, "") if self.records is not None else ""
        if not text:
            return
        if sys.stdout is self.stdout:
            self.output.parts.append(text)
        else:
            sys.stdout.write(text)

    def sync(self, index: int, thunk: Callable[[], Any]) -> Any:
        """After a call of the student's code was handed one of the test's own values: that value as
        the call left it in the student's process, where it changed it; else the grader's own."""
        key = self._key(index)
        rec = self.records.by_key.get(key) if self.records is not None else None
        if rec is None or rec.kind == "l":
            return thunk()
        return self._answer(self.prog.sites[index], key)

    def iterate(self, index: int, thunk: Callable[[], Any]) -> Iterator[Any]:
        site = self.prog.sites[index]
        key = self._key(index)
        obj = self._within(key, thunk)
        if type(obj) is not Handle:
            return iter(obj)
        return self._items(site, key)

    def _items(self, site: Site, key: str) -> Iterator[Any]:
        k = 0
        while self.records is None or f"{key}/end" not in self.records.by_key or f"{key}/#{k}" in self.records.by_key:
            yield self._answer(site, f"{key}/#{k}")
            k += 1

    def with_(self, index: int, thunk: Callable[[], Any]) -> Any:
        site = self.prog.sites[index]
        key = self._key(index)
        self._within(key, thunk)
        judging = self

        class Replayed:
            def __enter__(self) -> Any:
                return judging._answer(site, f"{key}/enter")

            def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
                if kind is not None and issubclass(kind, _CONTROL):
                    return False  # the grader's own way out of the test: never the student's to suppress
                return bool(judging._answer(site, f"{key}/exit"))

        return Replayed()

    def assert_(self, index: int, thunk: Callable[[], Any], msg: Callable[[], Any] | None) -> None:
        info = self.prog.asserts[index]
        self.line = self.line or info.line
        self.run += 1
        self.values = []
        try:
            parts = thunk()
            if info.op == "Close":
                func, left, right, options = parts
                ok = bool(np.all(func(left, right, **options)))
            elif info.op:
                left, right = parts
                ok = bool(OPS[info.op](left, right))
            else:
                ok = bool(parts[0])
        except TestSiteError as exc:
            return self.fail(site_finding(exc))
        except AssertionError as exc:
            if info.caught:
                raise
            if from_student(exc):  # raised by the student's code at a site: told as such
                self.error = True
                return self.fail(raised(exc, info.source))
            found = self._assertion(exc, "")
            return self.fail(self._does_not_hold(info) if found == v.AssertionSaid("") else found)
        except Exception as exc:  # noqa: BLE001 - the student's exception, raised again here, or the test's own
            self.error = self.error or from_student(exc)
            return self.fail(raised(exc, info.source))
        if ok:
            self.passed += 1
            return None
        said = None
        if msg is not None:
            with contextlib.suppress(Exception):  # a message that cannot be computed: the finding below
                said = str(msg())
        if info.caught:  # the test's own ``except`` takes it from here
            raise AssertionError(*([said] if said is not None else []))
        if said is not None:
            return self.fail(v.Said(said))
        if info.op == "Close":
            return self.fail(self._not_close(info, func, left, right, options))
        if info.op:
            shown_right = info.right if info.literal and self.show_expected else ""
            source = "" if info.formula else info.source
            return self.fail(v.Compared(info.left, info.op, show(left), right=shown_right, source=source))
        return self.fail(self._does_not_hold(info))

    def fail(self, finding: v.TestFinding) -> None:
        if finding not in self.findings:
            self.findings.append(finding)
        if not self.check.partial:
            raise TestStopped

    # Findings -------------------------------------------------------------------------------

    def _does_not_hold(self, info: AssertInfo) -> v.DoesNotHold:
        values = tuple(dict.fromkeys((source, show(x)) for source, x in self.values))
        return v.DoesNotHold(info.source, values, shows_source=not info.formula)

    def _not_close(self, info: AssertInfo, func: Any, left: Any, right: Any, options: dict[str, Any]) -> v.TestFinding:
        """``np.allclose(yours, expected)`` that does not hold: how yours differs, in kind, by the
        grader's own comparison with the test's tolerance (no expected value shown unless allowed)."""
        try:  # ``np.allclose(rows, 1)``: the test's own broadcasting, so the difference is told element by element
            right = np.broadcast_to(right, np.shape(left)) if np.ndim(right) < np.ndim(left) else right
        except (ValueError, TypeError):
            pass
        mine, expected = _as_value(left), _as_value(right)
        exact = func in (np.array_equal, np.array_equiv)
        try:
            rtol = 0.0 if exact else float(options.get("rtol", 1e-5))
            atol = 0.0 if exact else float(options.get("atol", 1e-8))
        except (TypeError, ValueError):
            mine = None
        if mine is None or expected is None:
            return self._does_not_hold(info)
        cmp = compare(f"`{info.left}`", mine, expected, rtol=rtol, atol=atol, reveal=self.reveal)
        if cmp.ok:  # a difference ``compare`` does not see (NaN, broadcasting): say what the test says
            return self._does_not_hold(info)
        return v.NotClose(info.left, cmp.messages, source="" if info.formula else info.source)

    def _assertion(self, exc: AssertionError, where: str) -> v.TestFinding:
        """An ``AssertionError`` that ended an assert or the test, by where it came from: numpy's
        comparison (as data), a nose-style helper or the test's own ``raise`` (their messages are
        the test's, or show the student's value only), or a library the test called, whose message
        may hold the expected value and is shown only where the course shows those."""
        if isinstance(exc, TestComparisonFailed):
            return self._comparison(exc, where)
        if isinstance(exc, HelperFailed) or _raised_by_test(exc) or self.reveal:
            return v.AssertionSaid(message_of(exc), where)
        return v.AssertionSaid("", where)

    def _comparison(self, exc: TestComparisonFailed, where: str) -> v.TestFinding:
        """numpy.testing's comparison that failed, told as an ``np.allclose`` assert is: how the
        student's value differs, by the grader's own comparison with the test's tolerance."""
        if exc.err_msg:
            return v.Said(trim(exc.err_msg, 300))
        info = self.prog.comparison(_test_line(exc))
        if info is None:
            return v.AssertionSaid("", where)
        desired = exc.desired
        try:  # ``assert_allclose(rows, 1)``: numpy's own broadcasting, so the difference is told element by element
            desired = (
                np.broadcast_to(desired, np.shape(exc.actual)) if np.ndim(desired) < np.ndim(exc.actual) else desired
            )
        except (ValueError, TypeError):
            pass
        mine, expected = _as_value(exc.actual), _as_value(desired)
        source = "" if info.formula else info.source
        if mine is not None and expected is not None:
            cmp = compare(f"`{info.left}`", mine, expected, rtol=exc.rtol, atol=exc.atol, reveal=self.reveal)
            if cmp.ok and mine.kind in PANDAS:  # pandas.testing checks dtypes and names too
                cmp = compare(
                    f"`{info.left}`",
                    mine,
                    expected,
                    rtol=exc.rtol,
                    atol=exc.atol,
                    reveal=self.reveal,
                    strict_types=True,
                )
            if not cmp.ok:
                return v.NotClose(info.left, cmp.messages, source=source)
        return v.DoesNotHold(info.source, ((info.left, show(exc.actual)),), shows_source=not info.formula)

    def where(self, exc: BaseException | None = None) -> str:
        """The statement an exception came from: the test's innermost line in its traceback (a
        ``finally`` that ran after it does not count), else the last statement begun."""
        line = _test_line(exc) if exc is not None else 0
        lines = self.check.target.splitlines()
        if 0 < line <= len(lines):
            self.line = self.line or line
            text = lines[line - 1].strip()
            return "" if text.startswith("raise ") else trim(text, 80)  # the test's own message says it all
        return self.prog.statements[self.at] if 0 <= self.at < len(self.prog.statements) else ""

    def outcome(self) -> Outcome:
        output = self.output = Output()
        self.stdout = sys.stdout  # the grader's, until the test sends standard output elsewhere
        modules = testmodules.CourseModules(self.data_dir, self.records.modules if self.records else {})
        ns = namespace(self.check.target, output, modules)
        ns.update(
            {
                PRINTED: lambda: self._printed(output),
                IS: same_object,
                TEST_SITE: self.site,
                TEST_ITER: self.iterate,
                TEST_WITH: self.with_,
                TEST_SNAP: lambda index, thunk: thunk(),
                TEST_SYNC: self.sync,
                TEST_ASSERT: self.assert_,
                TEST_AT: self._mark,
                TEST_DEL: lambda name: ns.pop(name, None),
                PARTIAL: self._partial,
            }
        )
        with _DRAWS:
            return self._run(ns)

    def _printing(self) -> contextlib.AbstractContextManager[Any]:
        record = self.records.by_key.get(PRINTOPTIONS) if self.records is not None else None
        return printing(to_python(record.value) if record is not None and record.value is not None else None)

    def _run(self, ns: dict[str, Any]) -> Outcome:
        seed_everything(int(self.check.seed or 0))
        as_in_a_kernel(self.check.target)
        shown: list[warnings.WarningMessage] = []
        streams = sys.stdout, sys.stderr  # put back however the test left them (``sys.stdout = buf``)
        try:
            with self._printing(), warnings.catch_warnings(record=True) as shown:
                warnings.simplefilter("default")  # shown once where they happen, as in a kernel
                try:
                    exec(self.prog.judge_code, ns)  # noqa: S102 - the instructor's test, in the grader
                finally:
                    sys.stdout, sys.stderr = streams
        except TestStopped:
            pass
        except AssertionError as exc:  # np.testing.assert_*, nose's assert_*, a bare raise
            self.run += 1
            student = from_student(exc)
            self.error = self.error or student
            self.findings.append(raised(exc, self.where(exc)) if student else self._assertion(exc, self.where(exc)))
        except TestSiteError as exc:
            self.run += 1
            self.where(exc)
            self.findings.append(site_finding(exc))
        except TestDidNotRaise as exc:
            self.run += 1
            self.where(exc)  # the line, for an instructor; the statement named is the block's
            self.findings.append(v.DidNotRaise(self.where(), exc.expected))
        except BaseException as exc:  # noqa: BLE001 - pytest's Failed is a BaseException
            self.run += 1
            self.error = from_student(exc)
            self.findings.append(raised(exc, self.where(exc)))
        if self.check.stderr_fails and not self.findings:
            # what the test itself shows on stderr (its print, its own code's warning) fails it too
            own = [f"{w.category.__name__}: {w.message}" for w in shown if w.filename == TEST_FILE]
            written = self.records.stderr if self.records is not None and self.records.stderr else ""
            written = written or self.output.stderr or (own[0] if own else "")
            if written:
                self.findings.append(v.WroteToStderr(trim(written, 200)))
        return Outcome(self.passed, self.run, tuple(self.findings), self.error, self.line, self.partial)

    def _printed(self, output: Output) -> str:
        """``printed_text()``: what the test printed, which an assert's failure shows (the student's own)."""
        text = output.take()
        self.values.append(("printed_text()", text))
        return text

    def _mark(self, n: int) -> None:
        self.at = n

    def _partial(self, value: Any) -> Any:
        self.partial = value
        return value


def judge(check: Check, student: dict[str, Captured], *, reveal: bool, data_dir: Path | None = None) -> Outcome:
    """Run the test on one submission's captured values; ``data_dir``: the assignment's data files,
    where the test's own reading of them (``np.load("data/x.npy")``) finds them, as in the notebook."""
    one_blas_thread()
    if data_dir is None or not data_dir.is_dir():
        return _Judging(check, student, reveal).outcome()
    with contextlib.chdir(data_dir):
        return _Judging(check, student, reveal, data_dir).outcome()


def grade(
    check: Check, student: dict[str, Captured], base: CheckResult, *, reveal: bool, data_dir: Path | None = None
) -> CheckResult:
    """The verdict of one ``test`` check (``grader.judge.checks.grade_check`` after the blanks)."""
    out = judge(check, student, reveal=reveal, data_dir=data_dir)
    if not out.findings:
        said = (v.AuthorSaid(check.label, check.success_message, passed=True),) if check.success_message else ()
        return replace(base, status=CheckStatus.PASSED, score=partial_points(out.partial, base.max_score), reasons=said)
    total = max(out.run, len(program(check.target, check.notebook_names).asserts), 1)
    status = CheckStatus.ERROR if out.error and not out.passed else CheckStatus.FAILED
    score = base.max_score * out.passed / total if check.partial and out.passed else 0.0
    said = (v.AuthorSaid(check.label, check.failure_message, passed=False),) if check.failure_message else ()
    return replace(base, status=status, score=score, reasons=(*said, v.TestFailed(check.label, out.findings, out.line)))
