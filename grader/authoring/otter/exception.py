"""otter's exception-based tests, as ``test`` checks.

A test file (``tests/q1.py``, or the test cells of a master notebook whose ASSIGNMENT CONFIG says
``tests: {ok_format: false}``) holds functions decorated with ``@test_case(points=..., hidden=...,
success_message=..., failure_message=...)``, beside ``name = "q1"``, ``points = ...`` and
``all_or_nothing = ...``. otter calls each function with its parameters taken from the notebook's
names (``env`` is the whole namespace); a case passes when its function raises nothing.

The file is read with ``ast`` and never run. A case becomes one ``test`` check: the file's own
statements (its imports and helpers), then the function with its parameters made the notebook's
names (``env["x"]`` and ``env.get("x")`` read ``x``), then a call of it.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Any

_FILE_KEYS = {"name", "points", "all_or_nothing", "OK_FORMAT"}
_CASE_KEYS = ("name", "points", "hidden", "success_message", "failure_message")


@dataclass
class TestFile:
    """One exception-based test file as otter reads it."""

    name: str | None
    points: Any
    all_or_nothing: bool
    cases: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (test source, its config)
    problems: list[str] = field(default_factory=list)


def _decorator(fn: ast.FunctionDef) -> ast.Call | None:
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and (
            getattr(d.func, "id", "") == "test_case" or getattr(d.func, "attr", "") == "test_case"
        ):
            return d
    return None


def is_test_file(tree: ast.Module) -> bool:
    """Whether a module is an exception-based test file (a function decorated with ``@test_case(...)``)."""
    return any(isinstance(n, ast.FunctionDef) and _decorator(n) is not None for n in tree.body)


class _Env(ast.NodeTransformer):
    """``env["x"]`` and ``env.get("x")`` read the notebook's ``x``."""

    def __init__(self, env: str):
        self.env = env

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == self.env
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and node.slice.value.isidentifier()
        ):
            return ast.copy_location(ast.Name(id=node.slice.value, ctx=node.ctx), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> Any:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "get"
            and isinstance(f.value, ast.Name)
            and f.value.id == self.env
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and node.args[0].value.isidentifier()
        ):
            return ast.copy_location(ast.Name(id=node.args[0].value, ctx=ast.Load()), node)
        return self.generic_visit(node)


def case_source(fn: ast.FunctionDef, prelude: list[str]) -> tuple[str, str | None]:
    """(the ``test`` source, a problem) for one test function."""
    fn = copy.deepcopy(fn)
    fn.decorator_list = []
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    if "env" in params:
        fn = _Env("env").visit(fn)
        if any(isinstance(n, ast.Name) and n.id == "env" for n in ast.walk(fn) if n is not fn):
            return "", "it reads the notebook's namespace `env` other than as env['name']"
    # Its parameters are the notebook's names, read where the function runs.
    fn.args = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    ast.fix_missing_locations(fn)
    return "\n".join([*prelude, ast.unparse(fn), f"{fn.name}()"]) + "\n", None


def _config(call: ast.Call) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg in _CASE_KEYS:
            try:
                out[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                continue
    return out


def read(source: str) -> TestFile | None:
    """The file's cases, or None when it is not an exception-based test file."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not is_test_file(tree):
        return None
    values: dict[str, Any] = {}
    prelude: list[str] = []
    functions: list[ast.FunctionDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _decorator(node) is not None:
            functions.append(node)
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in _FILE_KEYS
        ):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "otter":
            continue
        prelude.append(ast.get_source_segment(source, node) or ast.unparse(node))
    out = TestFile(
        name=values.get("name"), points=values.get("points"), all_or_nothing=bool(values.get("all_or_nothing"))
    )
    for fn in functions:
        call = _decorator(fn)
        assert call is not None  # noqa: S101 - kept above for having one
        test, problem = case_source(fn, prelude)
        if problem:
            out.problems.append(f"the case {fn.name} not converted: {problem}")
            test = ""
        out.cases.append((test, _config(call)))
    return out


def notebook_cell(body: str) -> tuple[str, str | None]:
    """(the ``test`` source, a problem) for a master notebook's exception-based test cell: a test
    function, and perhaps a call of it (otter keeps the function only)."""
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        return "", f"its code is not Python ({exc.msg}, line {exc.lineno})"
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not fns or len(tree.body) > 2:
        return "", "an exception-based test cell holds one test function (and perhaps a call of it)"
    return case_source(fns[0], [])
