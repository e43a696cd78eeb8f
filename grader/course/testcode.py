"""The source of a ``test`` check, read without running it: which names are the student's.

A test is ordinary Python that passes when it raises nothing (``assert`` statements, or
``raise AssertionError`` in an ``else``, or only a ``print``). Every name it reads that it does not bind
itself (by assignment, a loop, ``import``, a function or a comprehension) and that is not a
builtin or one of the grader's own modules (``GRADER_MODULES``) is the student's: a variable,
function or class of the notebook. ``grader.judge.testcheck`` records what touches those names
in the student's sandbox, and runs the test on those records in the grader.
"""

from __future__ import annotations

import ast
import builtins
import functools

# Modules a test may use without importing them; the test's own imports are the grader's too.
# They are always the grader's copies: a student who patches ``np.allclose`` patches their own.
GRADER_MODULES = {
    "np": "numpy",
    "numpy": "numpy",
    "pytest": "pytest",
    "math": "math",
    "torch": "torch",
    "pd": "pandas",
    "pandas": "pandas",
    "random": "random",
    "F": "torch.nn.functional",
}
# nose.tools' helpers (``grader.nose_tools``), which a test cell may import once for every later one.
GRADER_HELPERS = frozenset(
    {
        "assert_equal",
        "assert_equals",
        "assert_not_equal",
        "assert_true",
        "assert_false",
        "assert_almost_equal",
        "assert_raises",
        "assert_in",
        "assert_not_in",
        "assert_is_none",
        "assert_is_instance",
        "ok_",
        "eq_",
        "partial_credit",  # ``partial_credit(points)``: the test earns that many of its check's points
        "printed_text",  # ``printed_text()``: what the test printed since it began or since it last asked
        "doctest_match",  # ``doctest_match(got, want)``: printed text compared as Python's doctest compares it
    }
)
BUILTINS = frozenset(dir(builtins))


def problem(source: str) -> str | None:
    """Why ``source`` cannot be a test (for a config error), or None."""
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"is not Python code: {exc.msg} (line {exc.lineno})"
    return None  # any Python is a test: it passes when it raises nothing, as a test cell does


def deleted_names(tree: ast.AST) -> set[str]:
    """The notebook's names a test deletes for a while (``del f`` ... ``f = orig`` in ``finally``),
    to see what else depends on them: read before the test first binds them."""
    deleted = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)}
    out = set()
    for name in deleted:
        loads = [
            (n.lineno, n.col_offset)
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        stores = [
            (n.lineno, n.col_offset)
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        ]
        if loads and (not stores or min(loads) < min(stores)):
            out.add(name)
    return out


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the test binds anywhere (its locals), including imports and function arguments."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scope_parts(node: ast.AST) -> tuple[list[ast.AST], list[ast.AST]]:
    """What runs in a scope (its own nodes, nested scopes' names, defaults and decorators) and the
    scopes nested in it, whose bodies run in scopes of their own."""
    own: list[ast.AST] = []
    nested: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if isinstance(child, _SCOPES):
            nested.append(child)
            outer = [*getattr(child, "decorator_list", []), *getattr(child, "bases", [])]
            if not isinstance(child, ast.ClassDef):
                outer += [d for d in (*child.args.defaults, *child.args.kw_defaults) if d is not None]
            todo.extend(outer)
            continue
        own.append(child)
        todo.extend(ast.iter_child_nodes(child))
    return own, nested


def free_reads(tree: ast.AST) -> set[str]:
    """The names the test reads where none of its scopes binds them: a helper function's argument
    ``test`` is its own, and ``test`` read outside that function is still the notebook's."""
    out: set[str] = set()
    scopes: list[tuple[ast.AST, set[str]]] = [(tree, set())]
    while scopes:
        node, outer = scopes.pop()
        own, nested = _scope_parts(node)
        here = set(outer) | {
            n.name for n in nested if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            here |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        for n in own:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                here.add(n.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                here.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                here.add(n.name)
        if node is tree:
            here -= deleted_names(tree)
        out |= {n.id for n in own if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - here
        scopes.extend((n, here) for n in nested)
    return out


@functools.lru_cache(maxsize=512)
def student_names(source: str) -> frozenset[str]:
    """The notebook's names the test reads."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    asked = {  # ``"x" in vars()``: whether the notebook defines ``x`` reads it
        n.left.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare)
        and isinstance(n.left, ast.Constant)
        and isinstance(n.left.value, str)
        and n.left.value.isidentifier()
        and len(n.ops) == 1
        and isinstance(n.ops[0], (ast.In, ast.NotIn))
        and isinstance(n.comparators[0], ast.Call)
        and isinstance(n.comparators[0].func, ast.Name)
        and n.comparators[0].func.id in ("vars", "globals", "locals", "dir")
        and not n.comparators[0].args
    }
    return frozenset((free_reads(tree) | asked) - BUILTINS - set(GRADER_MODULES) - GRADER_HELPERS)


def student_reads(source: str) -> set[str]:
    """Every name the test reads and does not bind itself, builtins included."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - (bound_names(tree) - deleted_names(tree))


def used_modules(source: str) -> set[str]:
    """The grader's modules a test reads without importing them (``np`` -> ``numpy``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - bound_names(tree)
    return {GRADER_MODULES[a].partition(".")[0] for a in read if a in GRADER_MODULES}
