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
    # ``sys.stdout = io.StringIO()`` in a test that catches what the student's code prints: the
    # stream the grader prints that code's recorded output into
    "sys": "sys",
    "io": "io",
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


OWN = "{}__own"  # the test's own name for one it first reads from the notebook, then binds itself


def _binding_end(stmt: ast.AST) -> tuple[int, int] | None:
    """Where a binding takes effect: after the value it binds is computed (``h = h[::-1]`` reads the
    notebook's ``h``); None for a binding this reading leaves alone."""
    value: ast.expr | None = None
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        value = stmt.value
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        value = stmt.iter
    elif isinstance(stmt, ast.withitem):
        value = stmt.context_expr
    if value is None or value.end_lineno is None:
        return None
    return (value.end_lineno, value.end_col_offset or 0)


def _first_bindings(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """For each name the test reads at its top level before it first binds it there, where that
    first binding takes effect. Only names bound by plain assignments, loops and ``with`` at the
    top level, nowhere else (not in a function, a comprehension, an import or a ``del``)."""
    own, nested = _scope_parts(tree)
    odd = {
        n.id for scope in nested for n in ast.walk(scope) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    } | {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.comprehension)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    firsts: dict[str, tuple[int, int]] = {}
    for node in own:
        targets: list[ast.AST] = []
        if isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            targets = [node.target]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            odd.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            odd.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            odd.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del):
            odd.add(node.id)
        for target in targets:
            for name in ast.walk(target):
                if not (isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)):
                    continue
                end = None if isinstance(node, ast.AugAssign) else _binding_end(node)
                if end is None:
                    odd.add(name.id)
                elif name.id not in firsts or end < firsts[name.id]:
                    firsts[name.id] = end
    early = {
        n.id
        for n in own
        if isinstance(n, ast.Name)
        and isinstance(n.ctx, ast.Load)
        and n.id in firsts
        and (n.lineno, n.col_offset) < firsts[n.id]
    }
    for loop in (n for n in own if isinstance(n, (ast.For, ast.AsyncFor, ast.While))):
        # read and bound in one loop: the test's own from the second time round (``if i: prev < x``, ``prev = x``)
        inside = [n for n in ast.walk(loop) if isinstance(n, ast.Name)]
        stored: dict[str, int] = {}  # the first line that binds it there (``total = total + x`` reads it first)
        for n in inside:
            if isinstance(n.ctx, ast.Store):
                stored[n.id] = min(stored.get(n.id, n.lineno), n.lineno)
        odd |= {n.id for n in inside if isinstance(n.ctx, ast.Load) and n.lineno <= stored.get(n.id, 0)}
    keep = early - odd - BUILTINS - set(GRADER_MODULES) - GRADER_HELPERS
    return {name: firsts[name] for name in keep}


def read_then_bound(tree: ast.Module) -> set[str]:
    """The names the test reads at its top level before it first binds them there: as at a
    module's top level in Python, those first reads are the notebook's (a test cell's visible part
    reads the notebook's ``h``, its hidden part then draws an ``h`` of its own)."""
    return set(_first_bindings(tree))


def own_after_binding(tree: ast.Module) -> ast.Module:
    """``tree`` with each name of ``read_then_bound`` renamed (``OWN``) from its first binding on:
    the reads before it stay the notebook's, the rest is the test's own name."""
    firsts = _first_bindings(tree)
    if not firsts:
        return tree
    own, _ = _scope_parts(tree)
    top_loads = {id(n) for n in own if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in firsts:
            if id(n) in top_loads and (n.lineno, n.col_offset) < firsts[n.id]:
                continue
            n.id = OWN.format(n.id)
    return tree


def top_level_binds(tree: ast.Module) -> set[str]:
    """The names the test assigns at its top level (``map = None``)."""
    return {
        n.id
        for stmt in tree.body
        if isinstance(stmt, (ast.Assign, ast.AnnAssign))
        for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        for n in ast.walk(t)
        if isinstance(n, ast.Name)
    }


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
        if node is tree and isinstance(tree, ast.Module):
            out |= read_then_bound(tree)
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
