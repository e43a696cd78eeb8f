"""A value that matched on the notebook's data, checked again on the variants (the given inputs
replaced by values the student never saw): a typed-in answer, a fixed size or a failure that shows
only on other data is found here, and an answer whose code broke first is not blamed on this one.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.course.model import Check
from grader.course.properties import check_property
from grader.judge import verdicts as v
from grader.judge.compare import compare
from grader.judge.context import Context, VariantRun, carried_from_steps, changes, holds_on
from grader.notebook import module_level_binds
from grader.notebook.flow import parse_quietly
from grader.run.job import CellRun
from grader.vocab import CellStatus, Reason


def _inputs_behind(check: Check, ctx: Context, names: tuple[str, ...]) -> tuple[str, ...]:
    """The varied inputs this check's value is computed from in the student's notebook (all of
    them when the data flow cannot tell), so the message names what matters."""
    deps = ctx.dependencies(names)
    found = set().union(*(deps.get(n, set()) for n in check.names))
    return tuple(n for n in names if n in found) or names


def _blamed_names(check: Check, cell: CellRun, run: VariantRun, ctx: Context) -> set[str]:
    """The names whose code a variant run's failure belongs to, when the data flow shows it is
    code that computes something other than this check: the statement that raised binds other
    names (``Q = ...`` failing before ``V = ...`` in the same cell), or a NameError for a value an
    earlier cell failed to compute. Empty when it cannot tell."""
    if cell.status != CellStatus.ERROR:
        return set()
    undefined = cell.name if cell.ename == "NameError" else ""
    if undefined and undefined not in check.names:
        earlier = next(
            (c for info, c in zip(ctx.infos, run.cells, strict=True) if undefined in info.binds and c.status.failed),
            None,
        )
        if earlier is not None and earlier.pos < cell.pos:
            return {undefined}
    if not cell.source:
        return set()
    try:
        tree = parse_quietly(cell.source)
    except SyntaxError:
        return set()
    binds = module_level_binds(tree)
    return set() if binds & check.names else set(binds)


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
        if not holds_on(owner, ctx.student, ctx.reference):
            continue  # wrong already: its question pays for it
        changed = (
            owner.id in run.changed
            if run.changed is not None
            else changes(run.reference.get(owner.id), ctx.reference.get(owner.id))
        )
        if not changed or not holds_on(owner, run.student, run.reference):
            return None
    return tuple(owners)


@dataclass(frozen=True)
class Recheck:
    """What the variants say of a value that matched (or was carried forward) on the notebook's
    data: a reason it does not hold on them (None: it holds), how many variants tested it, and the
    wrong upstream steps it is right given on some variant."""

    reason: v.CheckReason | None = None
    variants: int = 0
    carried_from: tuple[str, ...] = ()


def on_variants(check: Check, ctx: Context) -> Recheck:
    """Re-check a value that matched on the notebook's data on every variant that changes it.
    Reasons never carry a variant's values: the student never sees those inputs."""
    broken: list[Check] = []  # wrong answers whose code failed first on some variant
    tested = 0
    carried: list[str] = []
    for run in ctx.variants:
        changed = (
            check.id in run.changed
            if run.changed is not None
            else changes(run.reference.get(check.id), ctx.reference.get(check.id))
        )
        if not changed:
            continue  # this variant does not change the answer, so it tests nothing here
        ref = run.reference[check.id].value
        if ref is None:
            continue  # never: only a value that exists can change (``changes``)
        if check.variable is not None and check.variable in run.names:
            continue  # the variant put this very value in place: comparing it would test nothing
        got = run.student.get(check.id)
        failed_cell = None
        pairs = ctx.fixed_by.get(check.id, ())
        if (got is None or got.value is None) and pairs and holds_on(check, run.fixed, run.reference):
            # The student's function or class that another question tests raised on this variant;
            # with the solution's in its place the step's value is right here: carried from there.
            tested += 1
            testers = {owner for _, owner in pairs}
            carried += [c.id for c in ctx.checks if c.question_id in testers and not c.is_test and c.id not in carried]
            continue
        if got is None or got.value is None:
            for name in sorted(check.names):
                failed_cell = next(
                    (
                        cell
                        for info, cell in zip(ctx.infos, run.cells, strict=True)
                        if name in info.binds and cell.status.failed
                    ),
                    None,
                )
                if failed_cell is not None:
                    break
            owners = _someone_elses_failure(check, failed_cell, run, ctx) if failed_cell is not None else None
            if owners is not None:
                # Another answer's code broke first: that answer loses its points, not this one.
                broken += [o for o in owners if o not in broken and not holds_on(o, ctx.student, ctx.reference)]
                continue
        tested += 1
        varied = _inputs_behind(check, ctx, run.names)
        if got is None or got.value is None:
            # Never "typed in": the cause is an error, a timeout or a crash, named by kind only.
            cause = v.VariantCause(
                cell=failed_cell,
                error=got.error if got is not None and got.raised else None,
                uncapturable=got is not None and got.uncapturable is not None,
                run=run.status,
            )
            return Recheck(v.VariantFails(check.label, varied, cause), tested)
        cmp = compare(check.label, got.value, ref, rtol=check.rtol, atol=check.atol, strict_types=check.strict_types)
        lost = (
            next((p for p in check.properties if check_property(p, check.label, got.value, ref, atol=check.atol)), "")
            if cmp.ok
            else ""
        )
        if cmp.ok and not lost:
            continue
        # Right on this variant given the student's own upstream values of it: the mistake (a
        # typed-in upstream value, say) costs the upstream question, not this one.
        wrong = carried_from_steps(check, got.value, ref, run.carried.get(check.id), ctx, run.student, run.reference)
        if wrong is not None:
            carried += [u.id for u in wrong if u.id not in carried]
            continue
        upstream = _wrong_inputs(check, ctx)
        if upstream and check.id not in run.carried:
            # (With a carried-forward reference for this run, the wrong input does not explain the
            # value either: it is judged as any other value that does not follow.)
            # Not a typed-in value: it is computed from an answer that is itself wrong.
            return Recheck(v.VariantUpstream(check.label, varied, lost, upstream), tested)
        return Recheck(v.VariantTypedIn(check.label, varied, lost, shape=cmp.reason == Reason.SHAPE), tested)
    if broken and not tested:
        # Every variant that would test this value broke first in a wrong answer's code: nothing
        # shows the value is computed rather than typed in, so it is not carried forward blindly.
        found = tuple(sorted({n for o in broken for n in o.names}))
        return Recheck(v.VariantUntestable(check.label, found))
    return Recheck(None, tested, tuple(carried))


def _wrong_inputs(check: Check, ctx: Context) -> tuple[str, ...]:
    """The graded answers this check's value is computed from in the student's notebook that do
    not match on the notebook's data."""
    others = tuple(sorted(ctx.wrong - check.names))
    if not others:
        return ()
    deps = ctx.dependencies(others)
    found = set().union(*(deps.get(n, set()) for n in check.names))
    return tuple(n for n in others if n in found)
