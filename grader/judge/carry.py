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

import ast
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from grader.course.model import Assignment, Check
from grader.judge.compare import matches
from grader.notebook import CellInfo, before_point, direct_inputs, python_source
from grader.notebook.flow import Version, direct_input_versions
from grader.run.job import Captured

CARRIED = "__grader_carried__"  # the worker keeps the solution's value of each replaced step here


def capture_points(assignment: Assignment, infos: list[CellInfo]) -> dict[str, int]:
    """Each check -> the position of the cell its value is taken before (the end: ``len(infos)``)."""
    end = len(infos)
    out = {}
    for check in assignment.checks:
        point = before_point(infos, check.before, check.names) if check.before else None
        out[check.id] = end if point is None else point
    return out


def steps(assignment: Assignment) -> list[Check]:
    """The checks that are steps of the data flow: those that look up one variable."""
    return [c for c in assignment.checks if c.variable is not None]


CARRIER = "__carry__/"  # the capture id of the student's value of a name an expression check reads


def carrier_id(name: str) -> str:
    """The capture id of the student's value of a name graded through an expression (``carriers``)."""
    return CARRIER + name


def carriers(assignment: Assignment, infos: list[CellInfo]) -> dict[str, tuple[Check, ...]]:
    """The names graded through an expression over them -> the checks that grade them: ``heads`` in
    ``torch.stack(heads)``, ``attention_df`` in ``attention_df.values``. Each is a step of the data
    flow like a variable: the student's value of the name goes into the solution's run, so a later
    step computed from the student's list or table is judged on it, and the expression's own
    reference is the solution's expression over the solution's value of the name there. Only an
    expression reading one such name (besides the given inputs, the steps, the notebook's
    functions, classes and imports) is followed: its value is what that name is graded by."""
    variables = {c.variable for c in steps(assignment)}
    defined = {n for info in infos for n in info.defines}
    skip = set(assignment.given) | variables | _imported(infos) | defined
    bound = set().union(*(info.binds for info in infos if not info.cell.skipped)) if infos else set()
    out: dict[str, list[Check]] = {}
    for c in assignment.checks:
        if c.variable is not None or c.is_test or c.names & defined:
            continue  # an expression calling the notebook's function or class grades that, not a value
        names = [n for n in c.names if n not in skip and n in bound]
        if len(names) == 1 and names[0] not in _called(c.target):
            out.setdefault(names[0], []).append(c)
    return {n: tuple(cs) for n, cs in out.items()}


def _called(expr: str) -> set[str]:
    """The names an expression calls, or calls a method of (``multihead_attn(...)``,
    ``tokenizer.tokenize(...)``): an object whose behaviour is graded, not a value."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            func = n.func.value if isinstance(n.func, ast.Attribute) else n.func
            if isinstance(func, ast.Name):
                out.add(func.id)
    return out


def _imported(infos: list[CellInfo]) -> set[str]:
    found: set[str] = set()
    for info in infos:
        try:
            tree = ast.parse(python_source(info.cell.source))  # magics read as ``pass``
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return found


def carried_expression(expr: str, name: str) -> str:
    """An expression (a check's, or one of its hints') over the solution's own value of ``name`` kept
    in the carry-forward run (the student's stands there after it): its value on the student's inputs."""
    return f"(lambda {name}: {expr})({CARRIED}[{carrier_id(name)!r}])"


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
    through = carriers(assignment, infos)
    own = {c.id: n for n, cs in through.items() for c in cs}  # an expression check -> the name it grades
    for n, cs in through.items():
        by_name.setdefault(n, []).extend(cs)
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
            inputs = set().union(
                *(
                    {(n, _last_binding(infos[:point], n))} if n in names and n != own.get(c.id) else flow.get(n, set())
                    for n in c.names
                )
            )
        found: list[Check] = []
        for name, version in sorted(inputs, key=lambda f: (f[0], f[1] or (-1, -1))):
            candidates = sorted(by_name[name], key=lambda u: points[u.id])
            exact = [u for u in candidates if version is not None and where.get(u.id) == version]
            later = [u for u in exact or candidates if points[u.id] >= point]
            pick = later[0] if later else (exact or candidates)[-1]
            # A name graded through expressions is graded by all of them (its values, its labels).
            for u in [pick, *(u for u in through.get(name, ()) if u.id != c.id and points[u.id] == points[pick.id])]:
                if u not in found:
                    found.append(u)
        out[c.id] = tuple(u for u in found if u.id != c.id)
    return out


def with_solution(
    own: dict[str, tuple[Check, ...]], solution: dict[str, tuple[Check, ...]]
) -> tuple[dict[str, tuple[Check, ...]], dict[str, tuple[str, ...]]]:
    """Each step's upstream steps in the student's notebook, then those the solution's step reads;
    and, for each step, the ids of those it has from the solution's notebook only.
    The carry-forward run is the solution's code: its value of a step is computed from the
    student's values of the steps the *solution* reads there, whatever route the student's data
    took (a function called again for each value, a row taken from a re-computed matrix); those
    are the values a step can be right given. A link of the solution's only holds for a value the
    student's code computes from data (``grader.judge.checks`` drops it for one that never changes
    on the variants: typed in, it would be "right given" upstream values typed in with it)."""
    out = dict(own)
    added: dict[str, tuple[str, ...]] = {}
    for cid, ups in solution.items():
        have = out.get(cid, ())
        more = tuple(u for u in ups if u not in have and u.id != cid)
        if more:
            out[cid] = (*have, *more)
            added[cid] = tuple(u.id for u in more)
    return out, added


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
    return (
        got is not None
        and got.value is not None
        and ref is not None
        and ref.value is not None
        and not matches(got.value, ref.value, rtol=check.rtol, atol=check.atol)
    )


def needed(
    assignment: Assignment,
    ups: dict[str, tuple[Check, ...]],
    student: dict[str, Captured],
    reference: dict[str, Captured],
) -> bool:
    """Whether some step is wrong on a run while a step it is computed from is wrong too: only
    then can a carried-forward reference differ from the plain one, so only then is it computed."""
    return any(
        wrong(c, student, reference) and any(wrong(u, student, reference) for u in ups.get(c.id, ()))
        for c in assignment.checks
    )


def places(assignment: Assignment, infos: list[CellInfo]) -> dict[str, tuple[int, int]]:
    """Each step -> (cell position, statement number) in the solution after which the student's
    value goes in: the last statement binding the variable before the point the step is taken."""
    points = capture_points(assignment, infos)
    out: dict[str, tuple[int, int]] = {}
    named = [(c, c.variable) for c in steps(assignment)]
    named += [(c, n) for n, cs in carriers(assignment, infos).items() for c in cs]
    for c, name in named:
        for pos in range(min(points[c.id], len(infos)) - 1, -1, -1):
            info = infos[pos]
            if info.cell.skipped or info.syntax_error is not None:
                continue
            hits = [i for i, (binds, _) in enumerate(info.statements) if name in binds]
            if hits:
                out[c.id] = (pos, hits[-1])
                break
    return out


# --------------------------------------------------------------------------------------------
# Through the student's functions (``grader.run.calls``)


def uses(check: Check, flow: dict[str, set[str]], names: AbstractSet[str]) -> set[str]:
    """Which of ``names`` (the student's functions and classes) the check's own step calls, and
    those they call in turn; ``flow`` is ``direct_inputs`` over the steps and ``names``, so a
    function behind another graded step it reads is not counted: that step's verdict covers it."""
    found = {n for n in check.names if n in names}
    for n in check.names:
        found |= flow.get(n, set()) & names
    todo = list(found)
    while todo:
        for more in flow.get(todo.pop(), set()) & names:
            if more not in found:
                found.add(more)
                todo.append(more)
    return found


def callable_flow(assignment: Assignment, infos: list[CellInfo], names: AbstractSet[str]) -> dict[str, set[str]]:
    steps_read = {c.variable for c in assignment.checks if c.variable is not None}
    return direct_inputs(infos, steps_read | set(names))


@dataclass(frozen=True)
class Calls:
    """The student's functions a later question's step calls: each -> the checks of the question
    that tests it first (``owners``), and each such later check -> {owner check id: function}."""

    owners: dict[str, tuple[Check, ...]]
    via: dict[str, dict[str, str]]


def followed_calls(assignment: Assignment, infos: list[CellInfo]) -> Calls:
    """Which of the student's functions to follow: a function or a torch module class the notebook
    defines, tested first by one question and used directly by a step of a later one. The later step's
    carried-forward reference is the solution's step with the student's function's answers."""
    functions = {
        n
        for info in infos
        if not info.cell.skipped
        for n, is_class in info.defines.items()
        if not is_class or n in info.modules
    } | called_objects(assignment, infos)
    if not functions:
        return Calls({}, {})
    flow = callable_flow(assignment, infos, functions)
    used = {c.id: uses(c, flow, functions) for c in assignment.checks if not c.is_test}
    owners: dict[str, tuple[Check, ...]] = {}
    via: dict[str, dict[str, str]] = {}
    for name in sorted(functions):
        testing = [c for c in assignment.checks if name in used.get(c.id, set())]
        if not testing:
            continue
        first = owner(name, testing)
        own = tuple(c for c in testing if c.question_id == first)
        later = [c for c in testing if c.question_id != first]
        if not later:
            continue
        owners[name] = own
        for c in later:
            for o in own:
                via.setdefault(c.id, {})[o.id] = name
    return Calls(owners, via)


def called_objects(assignment: Assignment, infos: list[CellInfo]) -> set[str]:
    """Names a check calls directly (``self_attention(torch.eye(3), ...)``, ``multihead_attn(x, x,
    x)``) that the student's notebook binds by assignment, not by ``def``: a module instance (or a
    lambda) playing the part of a function. Its calls are followed like a function's."""
    variables = {c.variable for c in steps(assignment)}
    skip = set(assignment.given) | variables | _imported(infos) | {n for info in infos for n in info.defines}
    bound = set().union(*(info.binds for info in infos if not info.cell.skipped)) if infos else set()
    out: set[str] = set()
    for c in assignment.checks:
        if c.variable is None and not c.is_test:
            out |= {n for n in _called_directly(c.target) if n in bound and n not in skip}
    return out


def _called_directly(expr: str) -> set[str]:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    return {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def owner(name: str, testing: list[Check]) -> str:
    """The question a student's function or class belongs to, among the checks that use it (in the
    assignment's order): the first whose own expression calls it (``self_attention(torch.eye(3),
    ...)`` tests the function itself), else the first that uses it. A function written early and
    reused in an earlier question's step is still the later question's to answer for."""
    direct = [c for c in testing if c.variable is None and name in _called(c.target)]
    return (direct or testing)[0].question_id


def with_calls(
    ups: dict[str, tuple[Check, ...]], calls: Calls
) -> tuple[dict[str, tuple[Check, ...]], dict[str, dict[str, str]]]:
    """The upstream steps, with the checks testing each function a step calls added to its own;
    and, for each step, those it has only through a call (check id -> function), which its
    feedback names as the function ("given your `gradient()`") rather than as a value."""
    out = dict(ups)
    via: dict[str, dict[str, str]] = {}
    owners = {o.id: o for checks in calls.owners.values() for o in checks}
    for cid, by_owner in calls.via.items():
        direct = {u.id for u in ups.get(cid, ())}
        only = {o: f for o, f in by_owner.items() if o not in direct}
        if only:
            via[cid] = only
            out[cid] = (*out.get(cid, ()), *(owners[o] for o in only))
    return out, via
