"""``test`` checks: the instructor's own Python with asserts, split so the student cannot touch it.

A test is read with ``ast``. Every *site*, a sub-expression rooted at one of the student's names
(``f(x)``, ``model.weight.shape``, ``causal_weights[0, 3]``, ``list(model.parameters())``), is
evaluated in the student's sandbox as a capture and comes back as plain data; everything else,
the asserts, ``np.allclose``, ``pytest.raises``, comparisons and arithmetic, runs here in the
grader on those values, with the grader's own numpy and pytest. The student's process receives
the sites and nothing else: never an assert, an expected value or the test's logic.

The test's own inputs (``x`` in ``for x in inputs: assert f(x).shape == ...``) are computed here
and sent to the site as plain data. Which inputs a test needs is found by running it once here
with every site answering a placeholder (*planning*, once per assignment): the sites reached and
their inputs become the job's captures. Then, per submission, the test runs for real (*judging*)
and each site answers its captured value, or raises the student's exception again (type and
message), so ``pytest.raises(ValueError)`` sees the student's ``ValueError``. A site whose inputs
depend on the student's own values cannot be planned; the test then fails with a message that
says so, and ``grader validate`` reports it against the solution.

A result assigned to a name (``model = Net()``) stays in the test's scratch namespace in the
student's process, so later sites can use it (``model(x).shape``); where the grader holds it as
plain data, the grader computes on its own copy instead.

Reading and rewriting the test is ``grader.judge.testrewrite``; this module runs it (planning,
then judging) and returns what failed as records (``grader.judge.verdicts``), worded by
``grader.judge.wording``.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from grader.capture import Value, decode, encode, to_python, trim
from grader.course.model import Check
from grader.errors import (
    CaptureFailed,
    SiteUnplanned,
    SiteUnusable,
    StudentException,
    TestDidNotRaise,
    TestSiteError,
    TestStopped,
)
from grader.judge import verdicts as v
from grader.judge.compare import compare
from grader.judge.scorecard import CheckResult
from grader.judge.testrewrite import (
    ASSERT,
    AT,
    ENTRY,
    HIDE,
    OPS,
    SITE,
    UNHIDE,
    AssertInfo,
    Site,
    program,
)
from grader.judge.testruntime import Handle, Pending, namespace, show
from grader.names import site_id
from grader.run.job import Captured, CaptureSpec
from grader.seeding import seed_everything
from grader.vocab import CaptureKind, CheckStatus, Unprepared

MAX_SITES = 2000  # site evaluations one test may plan
BUDGET = 64 * 1024 * 1024

# --------------------------------------------------------------------------------------------
# Running it in the grader


def _raise_again(site: Site, got: Captured) -> Any:
    """The student's exception, as an exception of the same builtin type (``pytest.raises`` sees it)."""
    ename, evalue = (got.error.ename, got.error.evalue) if got.error is not None else ("Exception", "")
    cls = getattr(builtins, ename, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)) or cls is AssertionError:
        cls = type(ename if ename.isidentifier() else "StudentError", (StudentException,), {})
    try:
        exc = cls(evalue)
    except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments
        exc = type(ename, (StudentException,), {})(evalue)
    exc.__dict__["grader_site"] = site.source
    raise exc


def _encoded(value: Any) -> dict[str, Any]:
    if isinstance(value, (Pending, Handle)):
        raise CaptureFailed("depends on the student's values")
    return encode(value, budget=[BUDGET])


@dataclass
class Plan:
    """The site evaluations one test needs, in order, and how many asserts it runs."""

    # (site, key, bindings, names hidden): one per site evaluation, in order
    calls: list[tuple[int, str, dict[str, dict[str, Any]], tuple[str, ...]]] = field(default_factory=list)
    asserts: int = 0
    problems: list[str] = field(default_factory=list)


def _key(site: int, bindings: dict[str, dict[str, Any]], hidden: set[str]) -> str:
    return f"{site}:{','.join(sorted(hidden))}:" + json.dumps(bindings, sort_keys=True)


@functools.lru_cache(maxsize=256)
def plan(source: str) -> Plan:
    prog = program(source)
    out = Plan()
    hidden: set[str] = set()

    def site(index: int, bindings: dict[str, Any], local: Callable[[], Any] | None = None) -> Any:
        try:
            enc = {k: _encoded(v) for k, v in bindings.items()}
        except CaptureFailed:
            out.problems.append(f"`{prog.sites[index].source}` is called with inputs computed from the "
                                "student's values, which cannot be sent ahead")
            return Pending()
        if len(out.calls) < MAX_SITES:
            out.calls.append((index, _key(index, enc, hidden), enc, tuple(sorted(hidden))))
        return Pending()

    def assert_(index: int, thunk: Callable[[], Any], msg: Any) -> None:
        out.asserts += 1
        with contextlib.suppress(BaseException):
            thunk()

    ns = namespace(source, planning=True)
    ns[SITE], ns[ASSERT] = site, assert_
    ns[HIDE], ns[UNHIDE] = (lambda *names: hidden.update(names)), (lambda *names: hidden.difference_update(names))
    seed_everything(0)
    with contextlib.suppress(BaseException):
        exec(prog.plan_code, ns)  # noqa: S102 - the instructor's test, in the grader
        ns[ENTRY]()
    return out


def captures(check: Check, point: int | None) -> list[CaptureSpec]:
    """The job's captures for one ``test`` check: one per site evaluation, in the test's order."""
    prog, p = program(check.target), plan(check.target)
    return [
        CaptureSpec(id=site_id(check.id, i), kind=CaptureKind.SITE, target=prog.sites[site].expr, point=point,
                    seed=check.seed, bindings=tuple(bindings.items()), scope=check.id, store=prog.sites[site].store,
                    hide=hide)
        for i, (site, _, bindings, hide) in enumerate(p.calls)
    ]


# --------------------------------------------------------------------------------------------
# Judging one submission


# Lines of np.testing's messages that give the expected value away (directly, or as a difference
# from the student's own value).
_REVEALING = ("y:", "DESIRED:", "Max absolute difference", "Max relative difference", "Expected:")


def _assertion_text(exc: BaseException, reveal: bool) -> str:
    """An AssertionError's own message (``np.testing``'s, say), without the expected values unless allowed."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not reveal:
        lines = [line for line in lines if not line.startswith(_REVEALING)]
    lines = [line.replace("ACTUAL:", "yours:").replace("x:", "yours:", 1) if line.startswith(("ACTUAL:", "x:"))
             else line for line in lines]
    return trim(" ".join(lines), 300)


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


class _Judging:
    """One test run for real on one submission's captured values. Sites answer from ``student``;
    asserts are judged here and each failure is kept as a finding."""

    def __init__(self, check: Check, student: dict[str, Captured], reveal: bool):
        self.check, self.student, self.reveal = check, student, reveal
        self.prog, self.plan = program(check.target), plan(check.target)
        self.show_expected = reveal or not check.hidden
        self.ids: dict[tuple[str, int], str] = {}
        seen: dict[str, int] = {}
        for i, (_, key, _, _) in enumerate(self.plan.calls):
            self.ids[(key, seen.get(key, 0))] = site_id(check.id, i)
            seen[key] = seen.get(key, 0) + 1
        self.counts: dict[str, int] = {}
        self.hidden: set[str] = set()
        self.at = -1  # the statement running (``__grader_at__``), for failures outside an assert
        self.values: list[tuple[str, Any]] = []  # the sites an assert read, for its message
        self.passed = self.run = 0
        self.findings: list[v.TestFinding] = []
        self.error = False

    # The functions the rewritten test calls -----------------------------------------------

    def site(self, index: int, bindings: dict[str, Any], local: Callable[[], Any] | None = None) -> Any:
        s = self.prog.sites[index]
        if local is not None:
            try:
                return local()
            except Exception:  # noqa: BLE001 - the grader's copy cannot answer: ask the student's
                pass
        try:
            key = _key(index, {k: _encoded(x) for k, x in bindings.items()}, self.hidden)
        except CaptureFailed:
            raise SiteUnplanned(s.source, Unprepared.FROM_VALUES) from None
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        cid = self.ids.get((key, n))
        if cid is None:
            raise SiteUnplanned(s.source, Unprepared.UNFORESEEN)
        got = self.student.get(cid)
        if got is None:
            raise SiteUnplanned(s.source, Unprepared.NOT_REACHED)
        if got.value is not None:
            value = to_python(got.value)
            self.values.append((s.source, value))
            return value
        if got.uncapturable is not None:
            return Handle(s.source, got.detail or "is nested too deeply to compare")
        if got.missing:
            raise NameError(got.error.evalue if got.error is not None else f"`{s.source}` is not defined")
        return _raise_again(s, got)

    def assert_(self, index: int, thunk: Callable[[], Any], msg: Callable[[], Any] | None) -> None:
        info = self.prog.asserts[index]
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
        except (SiteUnusable, SiteUnplanned) as exc:
            return self.fail(_site_finding(exc))
        except AssertionError as exc:
            text = _assertion_text(exc, self.reveal)
            return self.fail(v.AssertionSaid(text) if text else self._does_not_hold(info))
        except Exception as exc:  # noqa: BLE001 - the student's exception, raised again here, or the test's own
            self.error = self.error or _from_student(exc)
            return self.fail(_raised(exc, info.source))
        if ok:
            self.passed += 1
            return None
        if msg is not None:
            with contextlib.suppress(Exception):
                return self.fail(v.Said(str(msg())))
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
        mine, expected = _as_value(left), _as_value(right)
        exact = getattr(func, "__name__", "") in ("array_equal", "array_equiv")
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

    def where(self) -> str:
        return self.prog.statements[self.at] if 0 <= self.at < len(self.prog.statements) else ""

    def outcome(self) -> Outcome:
        ns = namespace(self.check.target, planning=False)
        ns[SITE], ns[ASSERT] = self.site, self.assert_
        ns[AT] = self._mark
        ns[HIDE], ns[UNHIDE] = self._hide, self._unhide
        seed_everything(0)
        try:
            exec(self.prog.judge_code, ns)  # noqa: S102 - the instructor's test, in the grader
            ns[ENTRY]()
        except TestStopped:
            pass
        except AssertionError as exc:  # np.testing.assert_*, nose's assert_*, a bare raise
            self.run += 1
            self.findings.append(v.AssertionSaid(_assertion_text(exc, self.reveal), self.where()))
        except (SiteUnusable, SiteUnplanned) as exc:
            self.run += 1
            self.findings.append(_site_finding(exc))
        except TestDidNotRaise as exc:
            self.run += 1
            self.findings.append(v.DidNotRaise(self.where(), exc.expected))
        except BaseException as exc:  # noqa: BLE001 - pytest's Failed is a BaseException
            self.run += 1
            self.error = _from_student(exc)
            self.findings.append(_raised(exc, self.where()))
        return Outcome(self.passed, self.run, tuple(self.findings), self.error)

    def _mark(self, n: int) -> None:
        self.at = n

    def _hide(self, *names: str) -> None:
        self.hidden.update(names)

    def _unhide(self, *names: str) -> None:
        self.hidden.difference_update(names)


def judge(check: Check, student: dict[str, Captured], *, reveal: bool) -> Outcome:
    """Run the test on one submission's captured values."""
    return _Judging(check, student, reveal).outcome()


def _site_finding(exc: TestSiteError) -> v.TestFinding:
    if isinstance(exc, SiteUnplanned):
        return v.SiteUnprepared(exc.site, Unprepared(exc.why))
    return v.SiteUnusable(exc.site, exc.why)


def _from_student(exc: BaseException) -> bool:
    return "grader_site" in getattr(exc, "__dict__", {})


def _raised(exc: BaseException, source: str) -> v.TestFinding:
    """An exception that ended an assert or the test: the student's (raised again at a site), a
    ``pytest.raises`` whose block raised nothing, or the test's own."""
    site = getattr(exc, "__dict__", {}).get("grader_site")
    text = trim(str(exc), 200)
    name = type(exc).__name__
    if site:
        return v.SiteRaised(site, name, text)
    if name == "Failed":  # pytest.raises(...) whose block raised nothing
        return v.TestFailedItself(text)
    return v.TestRaised(name, text, source)


def grade(check: Check, student: dict[str, Captured], base: CheckResult, *, reveal: bool) -> CheckResult:
    """The verdict of one ``test`` check (``grader.judge.checks.grade_check`` after the blanks)."""
    out = judge(check, student, reveal=reveal)
    if not out.findings:
        return replace(base, status=CheckStatus.PASSED, score=base.max_score)
    total = max(out.run, plan(check.target).asserts, 1)
    status = CheckStatus.ERROR if out.error and not out.passed else CheckStatus.FAILED
    score = base.max_score * out.passed / total if check.partial and out.passed else 0.0
    return replace(base, status=status, score=score, reasons=(v.TestFailed(check.label, out.findings),))


def problems(check: Check) -> list[str]:
    """What keeps a test from being planned, for ``grader validate``."""
    return list(dict.fromkeys(plan(check.target).problems))
