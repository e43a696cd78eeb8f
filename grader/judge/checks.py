"""Verdicts, computed in the grader's process from captured plain data.

For each check: is it answered at all (blanks), was the value computed (errors), does it match the
reference within tolerance, do its properties hold, and if not, does it match a typical mistake
(a hint)? A wrong value that is right given the student's own wrong upstream values (the
solution's code run on them, ``grader.judge.carry``) is carried forward, and hints are taken on
those values too. Questions add their checks' points up, all-or-nothing unless the config splits
them. A value missing because an earlier cell failed points to that first error.

Each step returns a frozen record (``grader.judge.verdicts``); ``grader.judge.wording`` words
them. Re-checking a value on the variants is ``grader.judge.rechecks``; the facts both read are
``grader.judge.context``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import replace

from grader.capture import Value
from grader.course.model import Assignment, Check, Question
from grader.course.properties import check_property
from grader.judge import callables, carry, rechecks, testcheck, wording
from grader.judge import verdicts as v
from grader.judge.compare import compare, matches
from grader.judge.context import (
    Context,
    VariantRun,
    carried_from_steps,
    changed_answers,
    changes,
    explains,
    holds_on,
    root_failure,
    roots,
    without_constant_links,
)
from grader.judge.scorecard import CheckResult, Feedback, QuestionResult
from grader.names import hint_id
from grader.notebook import BLANK_NAME, Blank, blank_report, cell_point
from grader.run.job import Captured
from grader.vocab import CheckStatus, QuestionStatus

__all__ = [
    "Context",
    "VariantRun",
    "blocked_questions",
    "changed_answers",
    "grade_assignment",
    "grade_check",
    "grade_question",
    "root_failure",
]


def _blank(check: Check, ctx: Context) -> Blank | None:
    """The unfilled blank that leaves the check unanswered, if any."""
    blanks, infos = ctx.blanks, ctx.infos
    if check.before or check.at_cell or check.after_line:
        # Answered at an earlier point (``before: NAME``, ``at_cell``, ``after_line``): only the
        # blanks above that point count, not a later blank that rebinds the same name.
        point = (
            ctx.before_point(check)
            if check.before
            else cell_point([i.cell for i in ctx.infos], check.at_cell, check.after_line)
        )
        if point is not None:
            infos = ctx.infos[:point]
            blanks = blank_report(infos)
    blank = blanks.cause(check.names)
    if blank is None and blanks.blanks:
        unbound = sorted(n for n in check.names if not any(n in info.binds for info in infos))
        if unbound:
            blank = blanks.blanks[0]
    return blank


def _difference(check: Check, value: Value, ref: Value, reveal: bool) -> tuple[str, ...]:
    """How the value differs from the reference, or which property it breaks; () when it matches."""
    if check.compare:
        cmp = compare(
            check.label, value, ref, rtol=check.rtol, atol=check.atol, strict_types=check.strict_types, reveal=reveal
        )
        if not cmp.ok:
            return cmp.messages
    for prop in check.properties:
        problem = check_property(prop, check.label, value, ref, atol=check.atol)
        if problem:
            return (problem,)
    return ()


def grade_check(check: Check, ctx: Context, points: float) -> CheckResult:
    """One check's verdict: answered, computed, matching, and matching on every variant."""
    base = CheckResult(
        id=check.id, target=check.target, status=CheckStatus.FAILED, score=0.0, max_score=points, hidden=check.hidden
    )
    label = check.label
    ref = ctx.reference.get(check.id)
    if not check.is_test and (ref is None or ref.value is None):
        return replace(base, status=CheckStatus.ERROR, reasons=(v.NotProduced(label),))
    blank = _blank(check, ctx)
    if blank is not None:
        return replace(
            base,
            status=CheckStatus.UNANSWERED,
            reasons=(v.Unanswered(label, blank.where(), blank.mark, blank.place()),),
        )
    if check.is_test:
        return testcheck.grade(check, ctx.student, base, reveal=ctx.reveal, data_dir=ctx.data_dir)
    assert ref is not None and ref.value is not None  # every other kind has a reference value (above)
    got = ctx.student.get(check.id)
    if got is None or got.value is None:
        fixed = _right_once_fixed(check, ctx, base, points)
        if fixed is not None:
            return fixed
        why, blocked_by, follow_on = _why_missing(check, got, ctx)
        raised = (got is not None and got.raised) or any(ctx.failed_binder(n) for n in check.names)
        return replace(
            base,
            status=CheckStatus.ERROR if raised else CheckStatus.FAILED,
            reasons=(v.Missing(label, why),),
            blocked_by=blocked_by,
            follow_on=follow_on,
        )
    value = got.value
    carried_from: tuple[str, ...] = ()
    report = _difference(check, value, ref.value, ctx.reveal)
    if report:
        carried = ctx.carried.get(check.id)
        wrong = carried_from_steps(check, value, ref.value, carried, ctx, ctx.student, ctx.reference)
        if wrong is None:
            # A hint names a mistake only where the carried-forward reference does not explain the
            # value: the hint's own expression is taken on the student's upstream values too.
            hint = (
                ""
                if explains(check, value, carried) and not _replays_own(check, ctx)
                else _matching_hint(check, value, ctx)
            )
            uses = callables.wrong_callables(check, ctx)
            return replace(base, reasons=(v.Differs(label, report, hint),) + ((uses,) if uses else ()), hint=hint)
        carried_from = tuple(u.id for u in wrong)
    again = rechecks.on_variants(check, ctx)
    if again.reason is not None:
        # Not right given its inputs on every run, so not carried forward.
        return replace(base, reasons=(again.reason,), variants=again.variants)
    carried_from += tuple(i for i in again.carried_from if i not in carried_from)
    base = replace(base, variants=again.variants, carried_from=carried_from)
    if carried_from:
        return _carried_verdict(check, ctx, base, points)
    return replace(base, status=CheckStatus.PASSED, score=points)


def _carried_verdict(check: Check, ctx: Context, res: CheckResult, points: float) -> CheckResult:
    """A value right given the student's own upstream values: the step's points times the
    course's ``carry_forward`` share, and a reason that says where the mistake is."""
    by_id = {u.id: u for u in ctx.upstream.get(check.id, ())}
    called = ctx.calls.get(check.id, {})
    classes = callables.defined(ctx)
    inputs = tuple(
        dict.fromkeys(
            # a function is named called (`gradient()`); a class, or an instance made by assignment, by name
            (f"{called[i]}()" if classes.get(called[i]) is False else called[i])
            if i in called
            else ctx.through.get(i, by_id[i].target)
            for i in res.carried_from
            if i in by_id
        )
    )
    where = roots(check, ctx) or [by_id[i].question_id for i in res.carried_from if i in by_id]
    pairs = ctx.fixed_by.get(check.id, ())
    if pairs and not inputs:  # carried on the variants where the student's docked function raised
        inputs = tuple(dict.fromkeys(n if classes.get(n) else f"{n}()" for n, _ in pairs))
        where = where or list(dict.fromkeys(owner for _, owner in pairs))
    share = check.carry_forward
    reason = v.CarriedForward(check.label, inputs, tuple(dict.fromkeys(ctx.titles.get(q, q) for q in where)), share)
    return replace(
        res, score=points * share, status=CheckStatus.PASSED if share > 0 else CheckStatus.FAILED, reasons=(reason,)
    )


def _right_once_fixed(check: Check, ctx: Context, res: CheckResult, points: float) -> CheckResult | None:
    """A step without a value because a function or class of the student's raised (another
    question tests it and docks it) whose value, with the solution's definition in its place, is
    right on the notebook's data and on every variant that changes it (``grader.judge.fixes``):
    carried forward from that question. None otherwise."""
    pairs = ctx.fixed_by.get(check.id)
    if not pairs or not holds_on(check, ctx.fixed, ctx.reference):
        return None
    base = ctx.reference.get(check.id)
    for run in ctx.variants:
        if changes(run.reference.get(check.id), base) and not holds_on(check, run.fixed, run.reference):
            return None
    names = tuple(dict.fromkeys(name for name, _ in pairs))
    owners = tuple(dict.fromkeys(owner for _, owner in pairs))
    classes = callables.defined(ctx)
    shown = tuple(name if classes.get(name) else f"{name}()" for name in names)
    where = tuple(dict.fromkeys(ctx.titles.get(q, q) for q in owners))
    share = check.carry_forward
    carried_from = tuple(dict.fromkeys(c.id for c in ctx.checks if c.question_id in owners and not c.is_test))
    return replace(
        res,
        status=CheckStatus.PASSED if share > 0 else CheckStatus.FAILED,
        score=points * share,
        carried_from=carried_from,
        reasons=(v.RightOnceFixed(check.label, shown, where, share),),
    )


def _why_missing(check: Check, got: Captured | None, ctx: Context) -> tuple[v.Absence, int, bool]:
    """Why the check has no value, and the cell of the first error behind it (0: none) and whether
    that error is in an earlier cell than the one computing the value."""
    if got is not None and got.uncapturable is not None:
        return v.CannotBeJudged(check.target, got.uncapturable, got.detail, got.error), 0, False
    # A name the student's code reads (inside a function the check calls) that a failed cell should
    # have bound: the mistake is in that cell, as for a name the check reads itself.
    read = got.error.name if got is not None and got.error is not None else ""
    failed = _failed_before(check, (read,) if read else (), ctx)
    if failed is not None:
        return failed
    if got is not None and got.raised and got.error is not None:
        return v.Raised(check.spec.computing, got.error), 0, False
    failed = _failed_before(check, tuple(sorted(check.names)), ctx)
    if failed is not None:
        return failed
    if got is None:
        return v.NotReached(), 0, False
    if got.name and not ctx.bound_anywhere(got.name):
        return v.NeverDefined(got.name, called=_calls(check.target, got.name)), 0, False
    missing = sorted(n for n in check.names if not ctx.bound_anywhere(n))
    if missing:
        return v.NeverDefined(missing[0], called=_calls(check.target, missing[0])), 0, False
    if check.before:
        return v.NotYetDefined(check.before), 0, False
    return v.NotDefinedAtEnd(), 0, False


def _failed_before(check: Check, names: tuple[str, ...], ctx: Context) -> tuple[v.Absence, int, bool] | None:
    """The first failed cell that should have bound one of ``names``, traced back to the error it
    follows from: why the value is missing, that error's cell, and whether it is an earlier one."""
    for name in names:
        run = ctx.failed_binder(name)
        if run is None:
            continue
        root, needed = root_failure(run, ctx.infos, ctx.cells)
        if root is run:
            return v.CellFailed(run), root.index, False
        if root.name == BLANK_NAME:
            return v.NeedsBlank(needed, root.index), root.index, True
        owner = next(
            (ctx.titles.get(c.question_id, c.question_id) for c in ctx.checks if c.names & ctx.infos[root.pos].binds),
            "",
        )
        return v.NeedsFailed(needed, root, owner), root.index, True
    return None


def _calls(target: str, name: str) -> bool:
    """Whether the check's expression calls ``name`` (a function the question asks for)."""
    try:
        tree = ast.parse(target, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name for n in ast.walk(tree))


def _replays_own(check: Check, ctx: Context) -> bool:
    """Whether the check tests a function or module of the student's that carry-forward replays."""
    return any(check.id in by_owner for by_owner in ctx.calls.values())


def _matching_hint(check: Check, value: Value, ctx: Context) -> str:
    # Evaluated on the student's own upstream values when the carry-forward run was made (the
    # plain reference's hints would name a mistake the student did not make, on the wrong inputs).
    # Not for a check of the student's own function or module: the carry-forward run replays the
    # student's answers in the solution's, so its hints there would be the student's mistake itself.
    # Nor a hint whose mistake makes no difference on the student's own upstream values (its value
    # there is the carried-forward reference itself): what it names is the upstream's mistake, made
    # and charged there ("masked scores were set to 0" said again of the weights computed from them).
    hints = ctx.carried if ctx.carried and not _replays_own(check, ctx) else ctx.reference
    carried = ctx.carried.get(check.id) if hints is ctx.carried else None
    for i, hint in enumerate(check.hints):
        hv = hints.get(hint_id(check.id, i))
        if hv is None or hv.value is None:
            continue
        if carried is not None and carried.value is not None and matches(hv.value, carried.value, rtol=0, atol=0):
            continue
        if matches(value, hv.value, rtol=check.rtol, atol=check.atol):
            return hint.message
    return ""


def grade_question(question: Question, ctx: Context) -> QuestionResult:
    """A question's verdict from its checks': points (all or nothing unless split), status, and
    the feedback lines of the checks that did not simply pass."""
    if question.manual:
        return QuestionResult(
            id=question.id,
            title=question.title,
            score=0.0,
            max_score=question.points,
            status=QuestionStatus.MANUAL,
            feedback=(wording.manual(),),
        )
    n = len(question.checks)
    results = tuple(
        # A split question gives every check its points (the loader sees to it); else they share the question's.
        grade_check(c, ctx, c.points if c.points is not None else question.points / n)
        for c in question.checks
    )
    score = _score(question, results)
    status = _status(question, results, score)
    carried = [r for r in results if r.carried_from]
    feedback: list[Feedback] = []
    # What the authors of the tests that pass wrote for them (``success_message``), after the verdict.
    said = [
        line
        for r in results
        if r.status == CheckStatus.PASSED and not r.hidden
        for reason in r.reasons
        if isinstance(reason, v.AuthorSaid)
        for line in wording.check_feedback(reason)
    ]
    for r in results:
        if r.status == CheckStatus.PASSED and not r.carried_from:
            continue
        if r.hidden and r.status != CheckStatus.UNANSWERED:
            feedback.append(wording.hidden_failed(question.title))
            continue
        for reason in r.reasons:
            for line in wording.check_feedback(reason):
                if all(line.text != f.text for f in feedback):
                    feedback.append(line)
    if status in (QuestionStatus.FAILED, QuestionStatus.PARTIAL):
        changed = ctx.changed_givens()
        if changed:
            feedback.append(wording.given_changed(changed))
    if status == QuestionStatus.PASSED and not carried:
        feedback.append(wording.correct(max(r.variants for r in results) if ctx.variants else 0))
    feedback.extend(said)
    # The root mistakes only (what a class report counts), else the steps right before.
    upstream = [qid for r in carried for qid in roots(_check_of(question, r.id), ctx)]
    owners = {c.id: c.question_id for c in ctx.checks}
    upstream = [q for q in upstream or [owners.get(i, i) for r in carried for i in r.carried_from] if q != question.id]
    return QuestionResult(
        id=question.id,
        title=question.title,
        score=score,
        max_score=question.points,
        status=status,
        feedback=tuple(feedback),
        checks=results,
        variants=max((r.variants for r in results), default=0),
        carried_forward=tuple(dict.fromkeys(upstream)),
    )


def _score(question: Question, results: tuple[CheckResult, ...]) -> float:
    if question.split:
        return sum(r.score for r in results)
    if {r.status for r in results} != {CheckStatus.PASSED}:
        return 0.0
    # All or nothing: every check passed, each with its share (less for a carried-forward one).
    return question.points * min(1.0, min(r.score / r.max_score if r.max_score else 1.0 for r in results))


def _status(question: Question, results: tuple[CheckResult, ...], score: float) -> QuestionStatus:
    statuses = {r.status for r in results}
    if statuses == {CheckStatus.PASSED}:
        return QuestionStatus.PARTIAL if score < question.points - 1e-9 else QuestionStatus.PASSED
    if statuses == {CheckStatus.UNANSWERED}:
        return QuestionStatus.UNANSWERED
    if score > 0:
        return QuestionStatus.PARTIAL
    if CheckStatus.ERROR in statuses:
        return QuestionStatus.ERROR
    return QuestionStatus.FAILED


def _check_of(question: Question, check_id: str) -> Check:
    return next(c for c in question.checks if c.id == check_id)


def grade_assignment(assignment: Assignment, ctx: Context) -> list[QuestionResult]:
    """Every question's verdict; a question whose own cell raised says which later questions the
    same error left without a value."""
    answers = frozenset(c.variable for c in assignment.checks if c.variable is not None)
    wrong = set()
    for c in assignment.checks:
        got, ref = ctx.student.get(c.id), ctx.reference.get(c.id)
        if (
            c.variable is not None
            and ref is not None
            and ref.value is not None
            and (
                got is None
                or got.value is None
                or not matches(got.value, ref.value, rtol=c.rtol, atol=c.atol, strict_types=c.strict_types)
            )
        ):
            wrong.add(c.variable)
    ctx = replace(
        ctx,
        answers=ctx.answers | answers,
        wrong=ctx.wrong | frozenset(wrong),
        upstream=ctx.upstream or carry.upstream(assignment, ctx.infos),
        through=ctx.through or {c.id: n for n, cs in carry.carriers(assignment, ctx.infos).items() for c in cs},
        titles={q.id: q.title for q in assignment.questions},
        checks=assignment.checks,
    )
    ctx = without_constant_links(ctx, assignment.checks)
    results = [grade_question(q, ctx) for q in assignment.questions]
    # Root causes first: the question whose own cell raised says, once, which later questions the
    # same error left without a value; theirs point back to it instead of repeating it.
    blocked = blocked_questions(results)
    out = []
    for r in results:
        extra = []
        for cell in dict.fromkeys(c.blocked_by for c in r.checks if c.blocked_by and not c.follow_on):
            later = [q.title for q in results if q.id in blocked.get(cell, ()) and q.id != r.id]
            if later:
                extra.append(wording.leaves_without_value(cell, later))
        out.append(replace(r, feedback=r.feedback + tuple(extra)) if extra else r)
    return out


def blocked_questions(results: Iterable[QuestionResult]) -> dict[int, list[str]]:
    """The cell of each first error -> the questions left without a value by it (directly or not)."""
    out: dict[int, list[str]] = {}
    for r in results:
        for c in r.checks:
            if c.blocked_by and r.id not in out.get(c.blocked_by, []):
                out.setdefault(c.blocked_by, []).append(r.id)
    return out
