"""Verdicts, computed in the grader's process from captured plain data.

For each check: is it answered at all (blanks), was the value computed (errors), does it match the
reference within tolerance, do its properties hold, and if not, does it match a typical mistake
(a hint)? Questions add their checks' points up, all-or-nothing unless the config splits them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Any

from grader.capture import Value
from grader.course.kinds import Test
from grader.course.model import Assignment, Check, Question
from grader.course.properties import check_property
from grader.judge import testcheck
from grader.judge.compare import compare, matches
from grader.judge.scorecard import CheckResult, QuestionResult
from grader.judge.variants import GIVEN_PREFIX
from grader.notebook import (
    BLANK_NAME,
    BlankReport,
    CellInfo,
    blank_report,
    dependencies,
    first_binds,
    module_level_binds,
)
from grader.run.job import Captured, CellRun
from grader.vocab import CellStatus, CheckStatus, QuestionStatus, Reason, RunStatus


@dataclass(frozen=True)
class VariantRun:
    """The submission and the solution run again with the given inputs replaced."""

    number: int
    names: tuple[str, ...]  # the inputs this variant replaces
    student: dict[str, Captured]
    reference: dict[str, Captured]
    cells: list[CellRun]
    status: RunStatus = RunStatus.OK
    reason: str = ""
    # The ids whose reference value this variant changes (``changed_answers``), when the caller
    # worked them out once for the reference; None: each check works it out for itself.
    changed: frozenset[str] | None = None


def _changes(variant: Captured | None, base: Captured | None) -> bool:
    """Whether a variant's reference value differs from the original one: only then can the
    variant tell a computed answer from a typed-in one."""
    return (variant is not None and variant.value is not None and base is not None and base.value is not None
            and not matches(variant.value, base.value, rtol=0, atol=0))


def changed_answers(reference: dict[str, Captured], variant: dict[str, Captured]) -> frozenset[str]:
    """The ids whose reference value a variant changes. It depends on the solution's runs alone, so
    a grader can work it out once per variant instead of once per submission (``VariantRun.changed``)."""
    return frozenset(cid for cid, captured in variant.items() if _changes(captured, reference.get(cid)))


@dataclass(frozen=True)
class Context:
    """Everything about one submission's run that verdicts depend on."""

    infos: list[CellInfo]
    blanks: BlankReport
    cells: list[CellRun]
    student: dict[str, Captured]
    reference: dict[str, Captured]
    reveal: bool = False
    variants: tuple[VariantRun, ...] = ()
    answers: frozenset[str] = frozenset()  # names graded by value checks: the student's work, not given data
    # Results that depend on this context alone, asked for by many checks; ``replace`` starts afresh.
    _memo: dict[object, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def changed_givens(self) -> list[str]:
        """Given inputs whose values in the submission differ from the notebook's own data. A given
        input that the student computes (``embeddings = ?``, graded by its own check) is not data
        the student changed, so it is left out: its check already says what is wrong."""
        if "changed_givens" not in self._memo:
            out = []
            for cid, ref in self.reference.items():
                if not cid.startswith(GIVEN_PREFIX) or ref.value is None or cid[len(GIVEN_PREFIX):] in self.answers:
                    continue
                got = self.student.get(cid)
                if got is not None and got.value is not None and not matches(got.value, ref.value, rtol=1e-7, atol=0):
                    out.append(cid[len(GIVEN_PREFIX):])
            self._memo["changed_givens"] = out
        return list(self._memo["changed_givens"])

    def dependencies(self, names: tuple[str, ...]) -> dict[str, set[str]]:
        """``notebook.dependencies`` of the submission, once per context (every check and variant asks)."""
        key = ("dependencies", names)
        if key not in self._memo:
            self._memo[key] = dependencies(self.infos, names)
        deps: dict[str, set[str]] = self._memo[key]
        return deps

    def first_binds(self) -> dict[str, int]:
        """``notebook.first_binds`` of the submission, once per context."""
        if "first_binds" not in self._memo:
            self._memo["first_binds"] = first_binds(self.infos)
        binds: dict[str, int] = self._memo["first_binds"]
        return binds

    def bound_anywhere(self, name: str) -> bool:
        return any(name in info.binds for info in self.infos)

    def failed_binder(self, name: str) -> CellRun | None:
        """The first cell that should have bound ``name`` but raised, hung or crashed."""
        for info, run in zip(self.infos, self.cells, strict=True):
            if name in info.binds and run.status.failed:
                return run
        return None


def hint_id(check: Check, i: int) -> str:
    return f"{check.id}#h{i}"


def _cell_error(run: CellRun) -> str:
    if run.status == CellStatus.TIMEOUT:
        return f"cell {run.index} did not finish: {run.evalue}"
    if run.status == CellStatus.CRASHED:
        return f"cell {run.index} stopped the notebook: {run.evalue}"
    where = f" ({run.traceback[-1]})" if run.traceback else ""
    return f"cell {run.index} raised {run.ename}: {run.evalue}{where}"


def grade_check(check: Check, ctx: Context, points: float) -> CheckResult:
    res = CheckResult(id=check.id, target=check.target, status=CheckStatus.FAILED, score=0.0, max_score=points,
                      hidden=check.hidden)
    label = check.label
    ref = ctx.reference.get(check.id)
    if check.kind != Test.key and (ref is None or ref.value is None):
        res.status = CheckStatus.ERROR
        res.messages.append(f"{label} could not be checked: the solution does not produce it "
                            "(an instructor's configuration problem, not yours).")
        return res
    names = check.names
    blanks, infos = ctx.blanks, ctx.infos
    if check.before:
        # Answered at an earlier point (``before: NAME``): only the blanks above that point count,
        # not a later blank that rebinds the same name.
        point = ctx.first_binds().get(check.before)
        if point is not None:
            infos = ctx.infos[:point]
            blanks = blank_report(infos)
    blank = blanks.cause(names)
    if blank is None and blanks.blanks:
        unbound = sorted(n for n in names if not any(n in info.binds for info in infos))
        if unbound:
            blank = blanks.blanks[0]
    if blank is not None:
        res.status = CheckStatus.UNANSWERED
        res.messages.append(f"{label} is not answered yet: fill in the blank `?` at {blank.where()}.")
        return res
    if check.kind == Test.key:
        return testcheck.grade(check, ctx.student, res, reveal=ctx.reveal)
    assert ref is not None and ref.value is not None  # every other kind has a reference value (above)
    got = ctx.student.get(check.id)
    if got is None or got.value is None:
        res.messages.append(_why_missing(check, got, ctx))
        res.status = CheckStatus.ERROR if _raised(check, got, ctx) else CheckStatus.FAILED
        return res
    value = got.value
    messages: list[str] = []
    if check.compare:
        cmp = compare(label, value, ref.value, rtol=check.rtol, atol=check.atol,
                      strict_types=check.strict_types, reveal=ctx.reveal)
        if not cmp.ok:
            messages.extend(cmp.messages)
            res.hint = _matching_hint(check, value, ctx)
    if not messages:
        for prop in check.properties:
            problem = check_property(prop, label, value, ref.value, atol=check.atol)
            if problem:
                messages.append(problem)
                if not res.hint:
                    res.hint = _matching_hint(check, value, ctx)
    if messages:
        res.messages.extend(messages)
        if res.hint:
            res.messages.append(f"Likely mistake: {res.hint}")
        return res
    problem = _variant_problem(check, ctx, res)
    if problem:
        res.messages.append(problem)
        return res
    res.status, res.score = CheckStatus.PASSED, points
    return res


def _names_list(names: tuple[str, ...]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _inputs_behind(check: Check, ctx: Context, names: tuple[str, ...]) -> tuple[str, ...]:
    """The varied inputs this check's value is computed from in the student's notebook (all of
    them when the data flow cannot tell), so the message names what matters."""
    deps = ctx.dependencies(names)
    found = set().union(*(deps.get(n, set()) for n in check.names))
    return tuple(n for n in names if n in found) or names


_FRAME = re.compile(r"^cell \d+, line \d+: (.*)$")


def _someone_elses_failure(check: Check, cell: CellRun, run: VariantRun, ctx: Context) -> bool:
    """Whether a variant run lost this check's value to a failure in code that computes something
    else: a statement binding other names (``Q = ...`` failing before ``V = ...`` in the same cell),
    or a NameError for a value an earlier cell failed to compute."""
    if cell.status != CellStatus.ERROR:
        return False
    m = _UNDEFINED.match(cell.evalue) if cell.ename == "NameError" else None
    if m and m.group(1) not in check.names:
        earlier = next((c for info, c in zip(ctx.infos, run.cells, strict=True)
                        if m.group(1) in info.binds and c.status.failed), None)
        if earlier is not None and earlier.pos < cell.pos:
            return True
    frame = _FRAME.match(cell.traceback[-1]) if cell.traceback else None
    if frame is None:
        return False
    try:
        tree = ast.parse(frame.group(1).strip())
    except SyntaxError:
        return False
    binds = module_level_binds(tree)
    return bool(binds) and not (binds & check.names)


def _variant_problem(check: Check, ctx: Context, res: CheckResult) -> str:
    """Re-check a value that matched on the notebook's data on every variant that changes it.
    Messages never show a variant's values: the student never sees those inputs."""
    for run in ctx.variants:
        changes = (check.id in run.changed if run.changed is not None
                   else _changes(run.reference.get(check.id), ctx.reference.get(check.id)))
        if not changes:
            continue  # this variant does not change the answer, so it tests nothing here
        ref = run.reference[check.id].value
        if ref is None:
            continue  # never: only a value that exists can change (``_changes``)
        if check.variable is not None and check.variable in run.names:
            continue  # the variant put this very value in place: comparing it would test nothing
        got = run.student.get(check.id)
        failed_cell = None
        if got is None or got.value is None:
            for name in sorted(check.names):
                failed_cell = next((cell for info, cell in zip(ctx.infos, run.cells, strict=True)
                                    if name in info.binds and cell.status.failed), None)
                if failed_cell is not None:
                    break
            if failed_cell is not None and _someone_elses_failure(check, failed_cell, run, ctx):
                continue  # another answer's code broke first: that answer loses its points, not this one
        res.variants += 1
        varied = _inputs_behind(check, ctx, run.names)
        changed = _names_list(varied)
        verb = "changes" if len(varied) == 1 else "change"
        if got is None or got.value is None:
            cause = f": {_cell_error(failed_cell)}" if failed_cell is not None else ""
            if not cause and got is not None and got.error:
                where = f" ({got.traceback[-1]})" if got.traceback else ""
                cause = f": {got.error}{where}"
            if not cause and run.reason:
                cause = f": {run.reason}"
            return (f"{check.label} is correct for the notebook's data, but the code fails when {changed} {verb}"
                    f"{cause}.")
        cmp = compare(check.label, got.value, ref, rtol=check.rtol, atol=check.atol,
                      strict_types=check.strict_types)
        problem = "" if cmp.ok else "its values do not follow"
        if not problem:
            for prop in check.properties:
                if check_property(prop, check.label, got.value, ref, atol=check.atol):
                    problem = f"it loses the property {prop.replace('_', ' ')}"
                    break
        if problem:
            what = "a size fixed" if cmp.reason == Reason.SHAPE else "a size or constant fixed"
            return (f"{check.label} is correct for the notebook's data but not when {changed} {verb} "
                    f"({problem}): is a value typed in, or {what}, rather than computed?")
    return ""


def _raised(check: Check, got: Captured | None, ctx: Context) -> bool:
    if got is not None and got.error and not got.missing and not got.uncapturable:
        return True
    return any(ctx.failed_binder(n) for n in check.names)


def _why_missing(check: Check, got: Captured | None, ctx: Context) -> str:
    label = check.label
    if got is not None and got.uncapturable:
        return f"{label} cannot be graded: {got.error}."
    if got is not None and got.error and not got.missing:
        where = f" ({got.traceback[-1]})" if got.traceback else ""
        kind = check.spec.computing
        return f"{label}: {kind} raised {got.error}{where}."
    for name in sorted(check.names):
        run = ctx.failed_binder(name)
        if run is not None:
            return f"{label} has no value because {_cell_error(run)}{_root_cause(run, ctx)}."
    if got is None:
        return f"{label} was not reached: the notebook stopped before this check could run."
    missing = sorted(n for n in check.names if not ctx.bound_anywhere(n))
    if missing:
        return (f"`{missing[0]}` is never defined in the notebook; the question expects a variable with that exact "
                "name (was it renamed or deleted?).")
    if check.before:
        return f"{label} is not defined yet at the point where this question is answered (before `{check.before}`)."
    return f"{label} is not defined when the notebook finishes."


_UNDEFINED = re.compile(r"^name '(\w+)' is not defined$")


def _root_cause(run: CellRun, ctx: Context, depth: int = 0) -> str:
    """When a cell failed only because an earlier cell did, say where the chain starts."""
    m = _UNDEFINED.match(run.evalue) if run.ename == "NameError" else None
    if not m or depth > 20:
        return ""
    earlier = ctx.failed_binder(m.group(1))
    if earlier is None or earlier.pos >= run.pos:
        return ""
    deeper = _root_cause(earlier, ctx, depth + 1)
    if deeper:
        return deeper
    if BLANK_NAME in earlier.evalue:
        return f"; `{m.group(1)}` comes from cell {earlier.index}, which still has a blank `?`"
    return f"; `{m.group(1)}` is missing because {_cell_error(earlier)}"


def _matching_hint(check: Check, value: Value, ctx: Context) -> str:
    for i, hint in enumerate(check.hints):
        hv = ctx.reference.get(hint_id(check, i))
        if hv is None or hv.value is None:
            continue
        if matches(value, hv.value, rtol=check.rtol, atol=check.atol):
            return hint.message
    return ""


def grade_question(question: Question, ctx: Context) -> QuestionResult:
    if question.manual:
        return QuestionResult(id=question.id, title=question.title, score=0.0, max_score=question.points,
                              status=QuestionStatus.MANUAL, feedback=[MANUAL_FEEDBACK])
    n = len(question.checks)
    results = [
        # A split question gives every check its points (the loader sees to it); else they share the question's.
        grade_check(c, ctx, c.points if c.points is not None else question.points / n) for c in question.checks
    ]
    statuses = {r.status for r in results}
    if question.split:
        score = sum(r.score for r in results)
    else:
        score = question.points if statuses == {CheckStatus.PASSED} else 0.0
    if statuses == {CheckStatus.PASSED}:
        status = QuestionStatus.PASSED
    elif statuses == {CheckStatus.UNANSWERED}:
        status = QuestionStatus.UNANSWERED
    elif score > 0:
        status = QuestionStatus.PARTIAL
    elif CheckStatus.ERROR in statuses:
        status = QuestionStatus.ERROR
    elif statuses <= {CheckStatus.UNANSWERED, CheckStatus.FAILED} and CheckStatus.FAILED not in statuses:
        status = QuestionStatus.UNANSWERED
    else:
        status = QuestionStatus.FAILED
    feedback: list[str] = []
    for r in results:
        if r.status == CheckStatus.PASSED:
            continue
        if r.hidden and r.status != CheckStatus.UNANSWERED:
            feedback.append(f"A hidden check on {question.title.lower()} did not pass.")
            continue
        for m in r.messages:
            if m not in feedback:
                feedback.append(m)
    if status in (QuestionStatus.FAILED, QuestionStatus.PARTIAL):
        changed = ctx.changed_givens()
        if changed:
            feedback.append(f"Note: {_names_list(tuple(changed))} in your notebook {'is' if len(changed) == 1 else 'are'} "
                            "not the data the notebook gives, so answers computed from it cannot match; the grade is "
                            "for what your notebook computed.")
    if status == QuestionStatus.PASSED:
        feedback.append("Correct." if not ctx.variants or not any(r.variants for r in results)
                        else f"Correct, also on {max(r.variants for r in results)} variant(s) of the given inputs.")
    return QuestionResult(id=question.id, title=question.title, score=score, max_score=question.points,
                          status=status, feedback=feedback, checks=results,
                          variants=max((r.variants for r in results), default=0))


MANUAL_FEEDBACK = "Graded by a person: waiting for a grader (the autograder gives it 0 points for now)."


def grade_assignment(assignment: Assignment, ctx: Context) -> list[QuestionResult]:
    answers = frozenset(c.variable for c in assignment.checks if c.variable is not None)
    ctx = replace(ctx, answers=ctx.answers | answers)
    return [grade_question(q, ctx) for q in assignment.questions]
