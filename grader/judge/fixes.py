"""Error carried forward past a function or class that raised: the student's notebook run again
with the solution's definition in its place.

A multi-head step built on the student's ``self_attention()`` has no value at all when that function
raises, so no value of it can be "right given" the student's: the error is already docked in the
question that tests the function. A TA reading the step's code pays it when it works once the
function is fixed. The grader asks exactly that: the student's own notebook, run again (in the
student's sandbox, on the notebook's data and on every variant) with the solution's definition of
each such function or class put in right after the student's own, its helpers defined apart so that
every other name stays the student's. A step whose value is then right, on every run, is carried
forward from the question that tests the function; a step wrong on its own stays wrong.

Only whether each step then holds leaves that run: no value, output or error of it reaches any
feedback, so the solution's code put there says nothing to the student.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from grader.course.model import Assignment, Check, Limits
from grader.judge import callables
from grader.judge.context import Context, changes
from grader.judge.jobs import JobTemplate
from grader.judge.variants import Variant
from grader.notebook import Cell, python_source
from grader.notebook.flow import parse_quietly
from grader.notebook.scopes import free_reads
from grader.run.execute import Session
from grader.run.job import Captured

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def needed(assignment: Assignment, ctx: Context) -> dict[str, tuple[tuple[str, str], ...]]:
    """The steps without a value (on the notebook's data or on a variant) that are computed with
    the student's functions or classes tested by another question that does not pass
    (``callables.wrong_used``), or from a step without a value for that reason (a tokenizer that
    raised leaves its ids, their embeddings and everything after without a value): check id ->
    (name, the question that tests it) of each. Empty for a submission whose every step has a
    value (no extra run)."""
    ctx = callables.with_checks(assignment, ctx)
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for check in assignment.checks:  # in the assignment's order: a step's upstream steps come first
        if check.is_test:
            continue
        if not _missing(check, ctx):
            continue
        found = [(name, owner) for name, _, owner in callables.wrong_used(check, ctx)]
        for upstream in ctx.upstream.get(check.id, ()):
            found.extend(out.get(upstream.id, ()))
        if found:
            out[check.id] = tuple(dict.fromkeys(found))
    return out


def _missing(check: Check, ctx: Context) -> bool:
    """Whether the step has no value on the notebook's data, or on a variant that changes it (where
    the notebook's data gives one)."""
    got, ref = ctx.student.get(check.id), ctx.reference.get(check.id)
    if ref is None or ref.value is None:
        return False
    if got is None or got.value is None:
        return True
    for run in ctx.variants:
        again = run.student.get(check.id)
        if changes(run.reference.get(check.id), ref) and (again is None or again.value is None):
            return True
    return False


def definitions(cells: Iterable[Cell], names: Iterable[str]) -> dict[str, str]:
    """The solution's source for each of ``names`` it defines at the top level of a cell (its last
    definition), after the solution's functions and classes that definition uses, each once, in the
    order the solution defines them. A name the solution does not define is left out."""
    defined: dict[str, tuple[int, str, set[str]]] = {}  # name -> (order, source, names it reads)
    for cell in cells:
        text = python_source(cell.source)
        try:
            tree = parse_quietly(text)
        except SyntaxError:
            continue
        lines = text.splitlines()
        for node in tree.body:
            if not isinstance(node, _DEFINITIONS) or node.end_lineno is None:
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            source = "\n".join(lines[first - 1 : node.end_lineno])
            defined[node.name] = (len(defined), source, free_reads(node))
    out: dict[str, str] = {}
    for name in names:
        if name not in defined:
            continue
        needed_names: set[str] = set()
        todo = [name]
        while todo:
            current = todo.pop()
            if current in needed_names:
                continue
            needed_names.add(current)
            todo.extend(n for n in defined[current][2] if n in defined and n not in needed_names)
        ordered = sorted(needed_names, key=lambda n: defined[n][0])
        out[name] = "\n\n".join(defined[n][1] for n in ordered)
    return out


class TimeLeft(Protocol):
    """The wall-clock time a submission's further runs may still take (``budgets.Budget``)."""

    def left(self) -> float: ...
    def limits(self) -> Limits: ...
    def spend(self, seconds: float) -> None: ...


def with_runs(
    ctx: Context,
    template: JobTemplate,
    fixing: dict[str, tuple[tuple[str, str], ...]],
    solution: list[Cell],
    runner: Session,
    variants: list[Variant],
    budget: TimeLeft,
) -> Context:
    """The context with the student's values run again with the solution's definition of each
    function or class in ``fixing`` in place of the student's, on the notebook's data and on each
    of the submission's variants, in the student's sandbox (``runner``); only for the steps whose
    every such name the solution defines."""
    found = definitions(solution, sorted({n for pairs in fixing.values() for n, _ in pairs}))
    fixing = {cid: pairs for cid, pairs in fixing.items() if all(n in found for n, _ in pairs)}
    if not fixing:
        return ctx
    fixed_template = template.with_fixes({n: found[n] for pairs in fixing.values() for n, _ in pairs})

    def run(variant: Variant | None, last: bool) -> dict[str, Captured]:
        if budget.left() <= 0:
            return {}
        got = runner.run(replace(fixed_template.job(variant), last=last, limits=budget.limits()))
        budget.spend(got.duration)
        return got.captures

    fixed = run(None, not variants)
    by_number = {v.number: run(v, v is variants[-1]) for v in variants}
    runs = tuple(replace(r, fixed=by_number.get(r.number, {})) for r in ctx.variants)
    return replace(ctx, fixed_by=fixing, fixed=fixed, variants=runs)
