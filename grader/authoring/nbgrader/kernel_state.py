"""What an nbgrader test cell leaves in the kernel for the cells after it: nbgrader runs test cells
in the student's kernel, in order, so a later test may call a helper an earlier one defined, and a
builtin an earlier one set aside (``map = None``) stays set aside; a notebook cell that binds the
same name again takes its place."""

from __future__ import annotations

import ast
import builtins

_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def helpers_of(source: str) -> dict[str, str]:
    """What a test cell defines at its top level, by name (functions, classes, imports, variables):
    nbgrader runs test cells in the student's kernel, so a later test cell may use them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, _DEFINES):
            text = ast.get_source_segment(source, node) or ast.unparse(node)
            for name in _bound(node):
                out[name] = text
    return out


def rebinds(source: str) -> set[str]:
    """The names a cell binds at its top level (assignments, loops, ``with``, definitions, imports):
    after it, a later test reads the notebook's value of each, not an earlier test cell's."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out = set(helpers_of(source))
    for node in tree.body:
        targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.AugAssign)) else []
        if isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        out.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return out


def builtins_set(source: str) -> set[str]:
    """The builtins a test binds at its top level (``map = None``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {
        n.id
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        for t in stmt.targets
        for n in ast.walk(t)
        if isinstance(n, ast.Name) and hasattr(builtins, n.id)
    }


def with_helpers(source: str, helpers: dict[str, tuple[int, str]]) -> str:
    """The test with what it uses from earlier test cells put before it (each statement once, in
    the order the cells ran it), as it stands in the kernel when nbgrader runs the test."""
    own = helpers_of(source)
    # an earlier test's builtin set aside (``map = None``) holds for every later test, as in the kernel
    needed: dict[int, str] = {
        k: text for name, (k, text) in helpers.items() if hasattr(builtins, name) and name not in own
    }
    todo = [source, *needed.values()]
    while todo:
        text = todo.pop()
        try:
            names = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
        except SyntaxError:
            continue
        for name in names:
            if name in helpers and name not in own and helpers[name][0] not in needed:
                needed[helpers[name][0]] = helpers[name][1]
                todo.append(helpers[name][1])
    return "\n".join([*(needed[k] for k in sorted(needed)), source]) if needed else source
