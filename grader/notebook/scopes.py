"""Which notebook names a statement reads: a function's parameters and local variables are its
own, not the notebook's, so a method's ``keys`` is no read of the notebook's ``keys``."""

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
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
                  if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        declared = {n for stmt in body for sub in ast.walk(stmt) if isinstance(sub, (ast.Global, ast.Nonlocal))
                    for n in sub.names}
        local = params | {sub.id for stmt in body for sub in ast.walk(stmt)
                          if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del))}
        local |= {sub.name for stmt in body for sub in ast.walk(stmt)
                  if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
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
