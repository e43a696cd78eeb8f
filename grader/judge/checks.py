"""Verdicts, computed in the grader's process from captured plain data.

For each check: is it answered at all (blanks), was the value computed (errors), does it match the
reference within tolerance, do its properties hold, and if not, does it match a typical mistake
(a hint)? A wrong value that is right given the student's own wrong upstream values (the
solution's code run on them, ``grader.judge.carry``) is carried forward, and hints are taken on
those values too. Questions add their checks' points up, all-or-nothing unless the config splits
them. A value missing because an earlier cell failed points to that first error.

Why one module: every verdict reads the same context and words its feedback the same way, and
the steps of one verdict (blanks, errors, comparison, hints, carry-forward, variants) each decide
what the next may say; split across modules they would import each other in a circle.
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
from grader.judge import carry, testcheck
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
    # The solution's values computed from the student's own values of this run (``grader.judge.carry``).
    carried: dict[str, Captured] = field(default_factory=dict)


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
    given: tuple[str, ...] = ()  # the assignment's given inputs, where ``before:`` points are found
    wrong: frozenset[str] = frozenset()  # answers whose value does not match on the notebook's data
    # Error carried forward (``grader.judge.carry``): the solution's values (and hints) computed from
    # the student's own upstream values, when they were needed; each step's upstream steps; and
    # question titles, to name where a mistake is.
    carried: dict[str, Captured] = field(default_factory=dict)
    upstream: dict[str, tuple[Check, ...]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()  # every check of the assignment: who owns a failing statement
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
            self._memo["first_binds"] = first_binds(self.infos, self.given)
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
        res.messages.append(_why_missing(check, got, ctx, res))
        res.status = CheckStatus.ERROR if _raised(check, got, ctx) else CheckStatus.FAILED
        return res
    value = got.value
    messages: list[str] = []
    if check.compare:
        cmp = compare(label, value, ref.value, rtol=check.rtol, atol=check.atol,
                      strict_types=check.strict_types, reveal=ctx.reveal)
        if not cmp.ok:
            messages.extend(cmp.messages)
    if not messages:
        for prop in check.properties:
            problem = check_property(prop, label, value, ref.value, atol=check.atol)
            if problem:
                messages.append(problem)
                break
    if messages:
        carried = ctx.carried.get(check.id)
        wrong = _carried_from(check, value, ref.value, carried, ctx, ctx.student, ctx.reference)
        if wrong is None:
            # A hint names a mistake only where the carried-forward reference does not explain the
            # value: the hint's own expression is taken on the student's upstream values too.
            if not _explains(check, value, carried):
                res.hint = _matching_hint(check, value, ctx)
            res.messages.extend(messages)
            if res.hint:
                res.messages.append(f"Likely mistake: {res.hint}")
            return res
        res.carried_from = [u.id for u in wrong]
    problem = _variant_problem(check, ctx, res)
    if problem:
        res.messages.append(problem)
        res.carried_from = []  # not right given its inputs on every run, so not carried forward
        return res
    if res.carried_from:
        return _carried_verdict(check, ctx, res, points)
    res.status, res.score = CheckStatus.PASSED, points
    return res


def _carried_from(check: Check, value: Value, ref: Value, carried: Captured | None, ctx: Context,
                  student: dict[str, Captured], reference: dict[str, Captured]) -> list[Check] | None:
    """The wrong upstream steps when the value is right given them (it matches the reference the
    solution computes from the student's own upstream values, and not the plain one); else None."""
    if not _explains(check, value, carried) or carried is None or carried.value is None:
        return None
    if matches(carried.value, ref, rtol=check.rtol, atol=check.atol):
        return None
    wrong = [u for u in ctx.upstream.get(check.id, ()) if carry.wrong(u, student, reference)]
    return wrong or None


def _explains(check: Check, value: Value, carried: Captured | None) -> bool:
    """Whether the value is what the solution computes from the student's own upstream values."""
    if carried is None or carried.value is None:
        return False
    if not compare(check.label, value, carried.value, rtol=check.rtol, atol=check.atol,
                   strict_types=check.strict_types).ok:
        return False
    return not any(check_property(p, check.label, value, carried.value, atol=check.atol) for p in check.properties)


def _roots(check: Check, ctx: Context, seen: frozenset[str] = frozenset()) -> list[str]:
    """The questions where the mistakes behind a carried-forward value are: its wrong upstream
    steps, or theirs when those are right given their own inputs."""
    out: list[str] = []
    for u in ctx.upstream.get(check.id, ()):
        if u.id in seen or not carry.wrong(u, ctx.student, ctx.reference):
            continue
        got, up_ref, up_carried = ctx.student.get(u.id), ctx.reference.get(u.id), ctx.carried.get(u.id)
        explained = (got is not None and got.value is not None and up_ref is not None and up_ref.value is not None
                     and _carried_from(u, got.value, up_ref.value, up_carried, ctx, ctx.student, ctx.reference))
        deeper = _roots(u, ctx, seen | {check.id}) if explained else []
        for qid in deeper or [u.question_id]:
            if qid not in out:
                out.append(qid)
    return out


def _carried_verdict(check: Check, ctx: Context, res: CheckResult, points: float) -> CheckResult:
    """A value right given the student's own upstream values: the step's points times the
    course's ``carry_forward`` share, and feedback that says where the mistake is."""
    by_id = {u.id: u for u in ctx.upstream.get(check.id, ())}
    inputs = tuple(by_id[i].target for i in res.carried_from if i in by_id)
    roots = _roots(check, ctx) or [by_id[i].question_id for i in res.carried_from if i in by_id]
    where = ", ".join(f"*{ctx.titles.get(q, q)}*" for q in roots)
    share = check.carry_forward
    res.score = points * share
    res.status = CheckStatus.PASSED if share > 0 else CheckStatus.FAILED
    if share >= 1:
        credit = "this step keeps its points (error carried forward)"
    elif share > 0:
        credit = f"this step earns {share:.0%} of its points (error carried forward)"
    else:
        credit = "this step earns no points while the mistake before it stands"
    res.messages.append(f"{check.label} is correct given your {_names_list(inputs)}; the mistake is upstream, "
                        f"in {where}: {credit}.")
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


def _blamed_names(check: Check, cell: CellRun, run: VariantRun, ctx: Context) -> set[str]:
    """The names whose code a variant run's failure belongs to, when the data flow shows it is
    code that computes something other than this check: the statement that raised binds other
    names (``Q = ...`` failing before ``V = ...`` in the same cell), or a NameError for a value an
    earlier cell failed to compute. Empty when it cannot tell."""
    if cell.status != CellStatus.ERROR:
        return set()
    m = _UNDEFINED.match(cell.evalue) if cell.ename == "NameError" else None
    if m and m.group(1) not in check.names:
        earlier = next((c for info, c in zip(ctx.infos, run.cells, strict=True)
                        if m.group(1) in info.binds and c.status.failed), None)
        if earlier is not None and earlier.pos < cell.pos:
            return {m.group(1)}
    frame = _FRAME.match(cell.traceback[-1]) if cell.traceback else None
    if frame is None:
        return set()
    try:
        tree = ast.parse(frame.group(1).strip())
    except SyntaxError:
        return set()
    binds = module_level_binds(tree)
    return set() if binds & check.names else set(binds)


def _holds_on(check: Check, captures: dict[str, Captured], reference: dict[str, Captured]) -> bool:
    got, ref = captures.get(check.id), reference.get(check.id)
    if got is None or got.value is None or ref is None or ref.value is None:
        return False
    if check.compare and not matches(got.value, ref.value, rtol=check.rtol, atol=check.atol):
        return False
    return not any(check_property(p, check.label, got.value, ref.value, atol=check.atol) for p in check.properties)


def _someone_elses_failure(check: Check, cell: CellRun, run: VariantRun, ctx: Context) -> tuple[Check, ...] | None:
    """The other answers whose code lost this check's value on a variant run, or None when the
    failure cannot be put on them. Each must be graded and either computed (its own value changed
    with this variant and matched, as it did on the notebook's data) or already wrong on the
    notebook's data, so it loses its own points: that is an error carried forward, and
    ``_variant_problem`` then asks for another variant on which this value is tested. A statement
    that belongs to no graded answer (``_ok = 1 / int(X is data)``), or to a right answer that this
    variant does not test, excuses nothing: else a guard that fails only on variants would hide a
    typed-in answer behind it."""
    blamed = _blamed_names(check, cell, run, ctx)
    owners = [c for c in ctx.checks if c.id != check.id and c.names & blamed and not c.names & check.names]
    if not blamed or not blamed <= set().union(*(c.names for c in owners)):
        return None  # the statement binds a name no other check grades: it is not only an answer's code
    for owner in owners:
        if not _holds_on(owner, ctx.student, ctx.reference):
            continue  # wrong already: its question pays for it
        changes = (owner.id in run.changed if run.changed is not None
                   else _changes(run.reference.get(owner.id), ctx.reference.get(owner.id)))
        if not changes or not _holds_on(owner, run.student, run.reference):
            return None
    return tuple(owners)


def _variant_cause(cell: CellRun | None, got: Captured | None, run: VariantRun) -> str:
    """Why a variant run has no value, summarised: the kind of error and where, never its message,
    output or values (they could show the variant's inputs, which students never see)."""
    if cell is not None:
        if cell.status == CellStatus.TIMEOUT:
            return f"cell {cell.index} did not finish in time"
        if cell.status == CellStatus.CRASHED:
            return f"cell {cell.index} stopped the notebook"
        where = f" ({cell.traceback[-1]})" if cell.traceback else ""
        return f"cell {cell.index} raised {cell.ename or 'an error'}{where}"
    if got is not None and got.error:
        kind = got.error.split(":", 1)[0].strip()
        return f"computing it raised {kind}" if kind.isidentifier() else "it could not be captured"
    if run.status == RunStatus.TIMEOUT:
        return "the run did not finish in time"
    if run.status == RunStatus.CRASHED:
        return "the notebook stopped before this point"
    return "it was not defined at this point"


def _variant_problem(check: Check, ctx: Context, res: CheckResult) -> str:
    """Re-check a value that matched on the notebook's data on every variant that changes it.
    Messages never show a variant's values: the student never sees those inputs."""
    broken: list[Check] = []  # wrong answers whose code failed first on some variant
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
            owners = _someone_elses_failure(check, failed_cell, run, ctx) if failed_cell is not None else None
            if owners is not None:
                # Another answer's code broke first: that answer loses its points, not this one.
                broken += [o for o in owners if o not in broken and not _holds_on(o, ctx.student, ctx.reference)]
                continue
        res.variants += 1
        varied = _inputs_behind(check, ctx, run.names)
        changed = _names_list(varied)
        verb = "changes" if len(varied) == 1 else "change"
        if got is None or got.value is None:
            # Never "typed in": the cause is an error, a timeout or a crash, named by kind only.
            return (f"{check.label} is correct for the notebook's data, but the code fails when {changed} {verb}: "
                    f"{_variant_cause(failed_cell, got, run)}.")
        cmp = compare(check.label, got.value, ref, rtol=check.rtol, atol=check.atol,
                      strict_types=check.strict_types)
        problem = "" if cmp.ok else "its values do not follow"
        if not problem:
            for prop in check.properties:
                if check_property(prop, check.label, got.value, ref, atol=check.atol):
                    problem = f"it loses the property {prop.replace('_', ' ')}"
                    break
        if problem:
            # Right on this variant given the student's own upstream values of it: the mistake
            # (a typed-in upstream value, say) costs the upstream question, not this one.
            wrong = _carried_from(check, got.value, ref, run.carried.get(check.id), ctx, run.student, run.reference)
            if wrong is not None:
                res.carried_from += [u.id for u in wrong if u.id not in res.carried_from]
                continue
        upstream = _wrong_inputs(check, ctx)
        if problem and upstream and check.id not in run.carried:
            # (With a carried-forward reference for this run, the wrong input does not explain the
            # value either: it is judged as any other value that does not follow.)
            # Not a typed-in value: it is computed from an answer that is itself wrong.
            return (f"{check.label} matches for the notebook's data but not when {changed} {verb} ({problem}): it is "
                    f"computed from {_names_list(upstream)}, which {'is' if len(upstream) == 1 else 'are'} not right "
                    "yet; fix that first.")
        if problem:
            what = "a size fixed" if cmp.reason == Reason.SHAPE else "a size or constant fixed"
            return (f"{check.label} is correct for the notebook's data but not when {changed} {verb} "
                    f"({problem}): is a value typed in, or {what}, rather than computed?")
    if broken and not res.variants:
        # Every variant that would test this value broke first in a wrong answer's code: nothing
        # shows the value is computed rather than typed in, so it is not carried forward blindly.
        found = tuple(sorted({n for o in broken for n in o.names}))
        return (f"{check.label} could not be checked on other data: on every variant the code of "
                f"{_names_list(found)}, which {'is' if len(found) == 1 else 'are'} not right yet, fails before it; "
                "fix that first.")
    return ""


def _wrong_inputs(check: Check, ctx: Context) -> tuple[str, ...]:
    """The graded answers this check's value is computed from in the student's notebook that do
    not match on the notebook's data."""
    others = tuple(sorted(ctx.wrong - check.names))
    if not others:
        return ()
    deps = ctx.dependencies(others)
    found = set().union(*(deps.get(n, set()) for n in check.names))
    return tuple(n for n in others if n in found)


def _raised(check: Check, got: Captured | None, ctx: Context) -> bool:
    if got is not None and got.error and not got.missing and not got.uncapturable:
        return True
    return any(ctx.failed_binder(n) for n in check.names)


def _why_missing(check: Check, got: Captured | None, ctx: Context, res: CheckResult) -> str:
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
            root, needed = root_failure(run, ctx.infos, ctx.cells)
            res.blocked_by, res.follow_on = root.index, root is not run
            if root is run:
                return f"{label} has no value because {_cell_error(run)}."
            if BLANK_NAME in root.evalue:
                return (f"{label} has no value: it needs `{needed}`, which comes from cell {root.index}, "
                        "which still has a blank `?`.")
            owner = next((ctx.titles.get(c.question_id, c.question_id) for c in ctx.checks
                          if c.names & ctx.infos[root.pos].binds), None)
            cause = (f"cell {root.index} raised {root.ename}, reported under *{owner}*" if owner is not None
                     else _cell_error(root))
            return f"{label} has no value: it needs `{needed}`, which is missing because {cause}."
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


def root_failure(run: CellRun, infos: list[CellInfo], cells: list[CellRun]) -> tuple[CellRun, str]:
    """The first error a failed cell follows from, and the name that error left undefined: a
    ``NameError`` for a name an earlier cell should have bound but failed to (it raised, hung or
    still has a blank) follows from that cell, back to the first. A cell that failed on its own is
    its own root."""
    name = ""
    for _ in range(len(cells)):
        m = _UNDEFINED.match(run.evalue) if run.ename == "NameError" else None
        if m is None:
            break
        earlier = next((c for info, c in zip(infos, cells, strict=True)
                        if m.group(1) in info.binds and c.status.failed), None)
        if earlier is None or earlier.pos >= run.pos:
            break
        run, name = earlier, m.group(1)
    return run, name


def _matching_hint(check: Check, value: Value, ctx: Context) -> str:
    # Evaluated on the student's own upstream values when the carry-forward run was made (the
    # plain reference's hints would name a mistake the student did not make, on the wrong inputs).
    hints = ctx.carried if ctx.carried else ctx.reference
    for i, hint in enumerate(check.hints):
        hv = hints.get(hint_id(check, i))
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
    carried = [r for r in results if r.carried_from]
    if question.split:
        score = sum(r.score for r in results)
    elif statuses != {CheckStatus.PASSED}:
        score = 0.0
    else:  # all or nothing: every check passed, each with its share (less for a carried-forward one)
        score = question.points * min(1.0, min(r.score / r.max_score if r.max_score else 1.0 for r in results))
    if statuses == {CheckStatus.PASSED} and score < question.points - 1e-9:
        status = QuestionStatus.PARTIAL
    elif statuses == {CheckStatus.PASSED}:
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
        if r.status == CheckStatus.PASSED and not r.carried_from:
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
    if status == QuestionStatus.PASSED and not carried:
        feedback.append("Correct." if not ctx.variants or not any(r.variants for r in results)
                        else f"Correct, also on {max(r.variants for r in results)} variant(s) of the given inputs.")
    # The root mistakes only (what a class report counts), else the steps right before.
    upstream = [qid for r in carried for qid in _roots(_check_of(question, r.id), ctx)]
    upstream = [q for q in upstream or [i.split("/")[0] for r in carried for i in r.carried_from] if q != question.id]
    return QuestionResult(id=question.id, title=question.title, score=score, max_score=question.points,
                          status=status, feedback=feedback, checks=results,
                          variants=max((r.variants for r in results), default=0),
                          carried_forward=list(dict.fromkeys(upstream)))


def _check_of(question: Question, check_id: str) -> Check:
    return next(c for c in question.checks if c.id == check_id)


MANUAL_FEEDBACK = "Graded by a person: waiting for a grader (the autograder gives it 0 points for now)."


def grade_assignment(assignment: Assignment, ctx: Context) -> list[QuestionResult]:
    answers = frozenset(c.variable for c in assignment.checks if c.variable is not None)
    wrong = set()
    for c in assignment.checks:
        got, ref = ctx.student.get(c.id), ctx.reference.get(c.id)
        if c.variable is not None and ref is not None and ref.value is not None and (
                got is None or got.value is None
                or not matches(got.value, ref.value, rtol=c.rtol, atol=c.atol, strict_types=c.strict_types)):
            wrong.add(c.variable)
    ctx = replace(ctx, answers=ctx.answers | answers, wrong=ctx.wrong | frozenset(wrong),
                  upstream=ctx.upstream or carry.upstream(assignment, ctx.infos),
                  titles={q.id: q.title for q in assignment.questions}, checks=assignment.checks)
    results = [grade_question(q, ctx) for q in assignment.questions]
    # Root causes first: the question whose own cell raised says, once, which later questions the
    # same error left without a value; theirs point back to it instead of repeating it.
    blocked = blocked_questions(results)
    for r in results:
        for cell in dict.fromkeys(c.blocked_by for c in r.checks if c.blocked_by and not c.follow_on):
            later = [q.title for q in results if q.id in blocked.get(cell, ()) and q.id != r.id]
            if later:
                titles = _names_list(tuple(later)).replace("`", "*")
                r.feedback.append(f"The same error in cell {cell} leaves {titles} without a value too.")
    return results


def blocked_questions(results: list[QuestionResult]) -> dict[int, list[str]]:
    """The cell of each first error -> the questions left without a value by it (directly or not)."""
    out: dict[int, list[str]] = {}
    for r in results:
        for c in r.checks:
            if c.blocked_by and r.id not in out.get(c.blocked_by, []):
                out.setdefault(c.blocked_by, []).append(r.id)
    return out
