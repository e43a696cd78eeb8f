"""Which notebook names a statement binds and reads: a function's parameters and local variables
are its own, not the notebook's (a method's ``keys`` is no read of the notebook's ``keys``), and a
change made in place (``x[i] = v``, ``x.append(v)``) binds the name whose value it changes."""

from __future__ import annotations

import ast


def free_reads(node: ast.AST) -> set[str]:
    """The notebook names a statement reads: every name it loads, except a function's own
    parameters and local variables (``keys`` inside a method is not the notebook's ``keys``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        outer: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        if not isinstance(node, ast.Lambda):
            outer += node.decorator_list
        params = {
            a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None
        }
        body = node.body if isinstance(node.body, list) else [node.body]
        declared = {
            n
            for stmt in body
            for sub in ast.walk(stmt)
            if isinstance(sub, (ast.Global, ast.Nonlocal))
            for n in sub.names
        }
        local = params | {
            sub.id
            for stmt in body
            for sub in ast.walk(stmt)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del))
        }
        local |= {
            sub.name
            for stmt in body
            for sub in ast.walk(stmt)
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        inner = set().union(*(free_reads(stmt) for stmt in body)) - (local - declared)
        return inner.union(*(free_reads(o) for o in outer))
    found: set[str] = set()
    stack = [node]  # a loop, not recursion: a chain of ten thousand ``+`` is as deep as it is long
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Name):
            if not isinstance(sub.ctx, (ast.Store, ast.Del)):
                found.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found |= free_reads(sub)
        else:
            stack.extend(ast.iter_child_nodes(sub))
    return found


# Methods that change their object in place (lists, dicts, NumPy arrays); torch's end in ``_`` (``add_``).
_IN_PLACE = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "remove",
        "clear",
        "sort",
        "reverse",
        "fill",
        "resize",
        "put",
        "itemset",
    }
)


def _base_name(node: ast.AST) -> str:
    """``x`` of ``x[i]``, ``x.a[i].b`` and the like; "" when the base is not a name."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def module_level_binds(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace (not inside functions or classes), or whose
    value it changes in place: ``x[i] = v``, ``x.a = v``, ``x.append(v)``, ``x.add_(v)`` (such a
    statement also reads ``x``, so it builds on the value there, as ``x += v`` does)."""
    binds: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(child.name)
                for sub in ast.walk(child):
                    if isinstance(sub, ast.Global):
                        binds.update(sub.names)
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                binds.add(child.id)
            elif isinstance(child, (ast.Subscript, ast.Attribute)) and isinstance(child.ctx, (ast.Store, ast.Del)):
                binds.add(_base_name(child))
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and (
                    child.func.attr in _IN_PLACE
                    or (child.func.attr.endswith("_") and not child.func.attr.startswith("_"))
                )
            ):
                binds.add(_base_name(child.func.value))
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    if alias.name != "*":
                        binds.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for sub in ast.walk(child):
                    if isinstance(sub, ast.NamedExpr):
                        binds.add(sub.target.id)
                continue
            visit(child)

    visit(tree)
    binds.discard("")
    return binds
