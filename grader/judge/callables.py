"""A wrong value computed with the student's own functions or classes that are wrong themselves.

A descent loop that calls the student's ``gradient()``, or a multi-head wrapper built from the
student's ``CausalAttention``, is wrong whenever the function or class is, however right its own
code. The question that tests the function or class first (in the assignment's order) is where
such a mistake belongs; a later step computed with it, when that question does not pass, says so
and points there (``verdicts.UsesWrongCallable``). Whether the step is right given the student's
function is the carry-forward run's (the student's calls replayed in the solution's, ``carry``);
whether a step left without a value by a function that raised works with a working one is
``grader.judge.fixes``'s.
"""

from __future__ import annotations

from dataclasses import replace

from grader.course.model import Assignment, Check
from grader.judge import carry
from grader.judge import verdicts as v
from grader.judge.context import Context, changes, holds_on
from grader.notebook import direct_inputs


def defined(ctx: Context) -> dict[str, bool]:
    """The functions and classes the student's notebook defines -> whether a class."""

    def make() -> dict[str, bool]:
        out: dict[str, bool] = {}
        for info in ctx.infos:
            if not info.cell.skipped:
                out.update(info.defines)
        return out

    return ctx.remember("defined", make)


def _uses(check: Check, ctx: Context, names: tuple[str, ...]) -> set[str]:
    flow = ctx.remember(
        ("callable_flow", names),
        lambda: direct_inputs(ctx.infos, {c.variable for c in ctx.checks if c.variable is not None} | set(names)),
    )
    return carry.uses(check, flow, set(names))


def _passes(check: Check, ctx: Context) -> bool:
    """Whether a check's value holds on the notebook's data and on every variant that changes it."""
    if not holds_on(check, ctx.student, ctx.reference):
        return False
    return all(
        holds_on(check, run.student, run.reference)
        for run in ctx.variants
        if changes(run.reference.get(check.id), ctx.reference.get(check.id))
    )


def with_checks(assignment: Assignment, ctx: Context) -> Context:
    """The context with the assignment's checks and titles, which these facts read (the verdicts'
    context has them; the grader asks before building it)."""
    if ctx.checks:
        return ctx
    return replace(ctx, checks=assignment.checks, titles={q.id: q.title for q in assignment.questions})


def wrong_used(check: Check, ctx: Context) -> list[tuple[str, bool, str]]:
    """The student's functions and classes a value is computed with, whose own question (the first
    that tests them) is another and does not pass: (name, whether a class, that question's id)."""
    names = defined(ctx)
    if not names:
        return []
    ordered = tuple(sorted(names))
    used = _uses(check, ctx, ordered)
    out: list[tuple[str, bool, str]] = []
    for name in ordered:
        if name not in used:
            continue
        testing = [c for c in ctx.checks if not c.is_test and name in _uses(c, ctx, ordered)]
        if not testing or carry.owner(name, testing) == check.question_id:
            continue  # this very question is where it is tested: its own mistake
        owner = carry.owner(name, testing)
        if all(_passes(c, ctx) for c in testing if c.question_id == owner):
            continue
        out.append((name, names[name], owner))
    return out


def wrong_callables(check: Check, ctx: Context) -> v.UsesWrongCallable | None:
    """The student's functions and classes a wrong value is computed with, whose own question (the
    first that tests them) is another and does not pass; None when there are none."""
    used = wrong_used(check, ctx)
    if not used:
        return None
    roots: list[str] = []
    for _, _, owner in used:
        title = ctx.titles.get(owner, owner)
        if title not in roots:
            roots.append(title)
    functions = tuple(name for name, is_class, _ in used if not is_class)
    classes = tuple(name for name, is_class, _ in used if is_class)
    return v.UsesWrongCallable(check.label, functions, classes, tuple(roots))
