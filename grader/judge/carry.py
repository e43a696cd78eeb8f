"""Error carried forward: each step judged on the student's own inputs.

When a student's ``scaled_scores`` are wrong, the softmax step is still checked against the
softmax *of the student's own scaled scores*, as a careful TA would. The grader knows, from the
notebook's data flow, which checked values each checked value is computed from (its upstream
steps). When a value is wrong and one of its upstream values is wrong too, the solution is run
once more in the sandbox, like any reference run, with the student's captured upstream values put
in place of the solution's own right after the statement that computes each of them; what the
solution's code then computes for each step is that step's carried-forward reference. Nothing of
the solution reaches the student's process, and the student's values cross as plain data.

This module says which steps feed which (``upstream``), whether a submission needs the extra
runs at all (``needed``), and where in the solution each student value goes (``places``);
``grader.judge.jobs.build_carry_job`` builds the run and ``grader.judge.checks`` judges with it.
"""

from __future__ import annotations

from grader.course.model import Assignment, Check
from grader.judge.compare import matches
from grader.notebook import CellInfo, first_binds
from grader.notebook.flow import Version, direct_input_versions
from grader.run.job import Captured

CARRIED = "__grader_carried__"  # the worker keeps the solution's value of each replaced step here


def capture_points(assignment: Assignment, infos: list[CellInfo]) -> dict[str, int]:
    """Each check -> the position of the cell its value is taken before (the end: ``len(infos)``)."""
    binds = first_binds(infos)
    end = len(infos)
    out = {}
    for check in assignment.checks:
        point = binds.get(check.before, end) if check.before else end
        out[check.id] = point
    return out


def steps(assignment: Assignment) -> list[Check]:
    """The checks that are steps of the data flow: those that look up one variable."""
    return [c for c in assignment.checks if c.variable is not None]


def upstream(assignment: Assignment, infos: list[CellInfo]) -> dict[str, tuple[Check, ...]]:
    """Each check -> the steps its value is computed from directly, in this notebook.

    A step's inputs are the steps its last binding reads (through names that are not steps); an
    expression check's are the steps it reads, or those behind the names it reads (a table built
    from ``attention_weights``). A name checked twice (``S`` before ``bank`` and ``S`` at the end)
    is the check that captures the very binding that was read: ``S_scaled`` computed from part 1's
    ``S`` has the check taken ``before: bank`` as its input, whatever point ``S_scaled`` is taken
    at. A binding no check captures falls back to the check taken at the earliest point not before
    this check's own."""
    points = capture_points(assignment, infos)
    where = places(assignment, infos)
    by_name: dict[str, list[Check]] = {}
    for c in steps(assignment):
        assert c.variable is not None
        by_name.setdefault(c.variable, []).append(c)
    names = frozenset(by_name)
    cache: dict[int, dict[str, set[tuple[str, Version | None]]]] = {}
    out: dict[str, tuple[Check, ...]] = {}
    for c in assignment.checks:
        point = points[c.id]
        if point not in cache:
            cache[point] = direct_input_versions(infos[:point], names)
        flow = cache[point]
        if c.variable is not None:
            inputs = flow.get(c.variable, set())
        else:
            inputs = set().union(*({(n, _last_binding(infos[:point], n))} if n in names else flow.get(n, set())
                                   for n in c.names))
        found: list[Check] = []
        for name, version in sorted(inputs, key=lambda f: (f[0], f[1] or (-1, -1))):
            candidates = sorted(by_name[name], key=lambda u: points[u.id])
            exact = [u for u in candidates if version is not None and where.get(u.id) == version]
            later = [u for u in exact or candidates if points[u.id] >= point]
            pick = later[0] if later else (exact or candidates)[-1]
            if pick not in found:
                found.append(pick)
        out[c.id] = tuple(u for u in found if u.id != c.id)
    return out


def _last_binding(infos: list[CellInfo], name: str) -> Version | None:
    """The statement that last binds ``name`` in these cells: the value an expression check reads."""
    for pos in range(len(infos) - 1, -1, -1):
        if infos[pos].cell.skipped:
            continue
        hits = [k for k, (binds, _) in enumerate(infos[pos].by_statement()) if name in binds]
        if hits:
            return (pos, hits[-1])
    return None


def wrong(check: Check, student: dict[str, Captured], reference: dict[str, Captured]) -> bool:
    """Whether the student has a value for this step that does not match the reference."""
    got, ref = student.get(check.id), reference.get(check.id)
    return (got is not None and got.value is not None and ref is not None and ref.value is not None
            and not matches(got.value, ref.value, rtol=check.rtol, atol=check.atol))


def needed(assignment: Assignment, ups: dict[str, tuple[Check, ...]], student: dict[str, Captured],
           reference: dict[str, Captured]) -> bool:
    """Whether some step is wrong on a run while a step it is computed from is wrong too: only
    then can a carried-forward reference differ from the plain one, so only then is it computed."""
    return any(wrong(c, student, reference) and any(wrong(u, student, reference) for u in ups.get(c.id, ()))
               for c in assignment.checks)


def places(assignment: Assignment, infos: list[CellInfo]) -> dict[str, tuple[int, int]]:
    """Each step -> (cell position, statement number) in the solution after which the student's
    value goes in: the last statement binding the variable before the point the step is taken."""
    points = capture_points(assignment, infos)
    out: dict[str, tuple[int, int]] = {}
    for c in steps(assignment):
        for pos in range(min(points[c.id], len(infos)) - 1, -1, -1):
            info = infos[pos]
            if info.cell.skipped or info.syntax_error is not None:
                continue
            hits = [i for i, (binds, _) in enumerate(info.statements) if c.variable in binds]
            if hits:
                out[c.id] = (pos, hits[-1])
                break
    return out
