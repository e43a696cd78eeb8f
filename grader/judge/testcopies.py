"""The finishing passes of a test's two copies (``grader.judge.testrewrite``): the student's copy's
asserts reduced to what it records, and the modules and helpers bound before it runs; the grader's
copy marked statement by statement."""

from __future__ import annotations

import ast
import copy
from typing import Any, cast

from grader.course import testcode
from grader.judge.testruntime import Handle
from grader.judge.testvocab import call as _call
from grader.judge.testvocab import imported, statement_text
from grader.judge.testvocab import thunk as _thunk
from grader.names import TEST_ASSERT, TEST_AT, TEST_MODULES

# ``partial_credit(value)``: the test earns ``value`` points of its check's (a number between 0 and
# them; anything else earns them all).
PARTIAL = "partial_credit"
# ``printed_text()``: what the test printed so far (``testruntime.Output``); ``doctest_match(got,
# want)``: printed text compared as doctest compares it. Both the grader's alone.
PRINTED = "printed_text"
DOCTEST = "doctest_match"


class Recorded(ast.NodeTransformer):
    """The student's copy: each assert keeps only what the rewriter's ``recorded`` says, with no message."""

    def __init__(self, recorded: dict[int, ast.expr]):
        self.recorded = recorded

    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name) and node.func.id == TEST_ASSERT and isinstance(node.args[0], ast.Constant):
            body = self.visit(copy.deepcopy(self.recorded[cast(int, node.args[0].value)]))
            return ast.copy_location(_call(TEST_ASSERT, node.args[0], _thunk(body), ast.Constant(None)), node)
        return self.generic_visit(node)


class Mark(ast.NodeTransformer):
    """Before every statement, ``__grader_at__(n)``: a failure outside an assert names its statement."""

    def __init__(self, source: str):
        self.source = source
        self.statements: list[str] = []

    def generic_visit(self, node: ast.AST) -> Any:
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                new: list[ast.stmt] = []
                for stmt in value:
                    self.statements.append(statement_text(self.source, stmt))
                    mark = ast.Expr(value=_call(TEST_AT, ast.Constant(len(self.statements) - 1)))
                    new.extend([ast.copy_location(mark, stmt), self.visit(stmt)])
                setattr(node, name, new)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node


def prelude(source: str, tree: ast.Module) -> str:
    """The student's copy first records the course's own modules the test imports, as the notebook
    left them (``grader.judge.testmodules``), then binds the modules and helpers the test uses
    without importing them, where the notebook has not bound them itself."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - testcode.bound_names(tree)
    modules = imported(tree)  # the course's own among them, as the notebook left them, recorded first
    lines = [f"{TEST_MODULES}({modules!r})"] if modules else []
    for alias in sorted(used & set(testcode.GRADER_MODULES)):
        module = testcode.GRADER_MODULES[alias]
        head, _, tail = module.rpartition(".")
        stmt = f"from {head} import {tail} as {alias}" if head else f"import {module} as {alias}"
        lines.append(f"if {alias!r} not in globals():\n    try:\n        {stmt}\n    except ImportError:\n        pass")
    for helper in sorted(used & testcode.GRADER_HELPERS - {PARTIAL, PRINTED, DOCTEST}):
        lines.append(f"if {helper!r} not in globals():\n    from nose.tools import {helper}")
    if PARTIAL in used:
        lines.append(f"{PARTIAL} = lambda value: value")
    if PRINTED in used:  # the printed text is the grader's to judge
        lines.append(f"{PRINTED} = lambda: ''")
    if DOCTEST in used:
        lines.append(f"{DOCTEST} = lambda got, want: True")
    return "\n".join(lines)


def partial_points(value: Any, points: float) -> float:
    """``partial_credit(value)``: the value's text (``repr``, as a notebook shows it) read as a
    number of points between 0 and the check's; anything else earns them all."""
    if value is None or type(value) is Handle:  # an object of the student's shows no number here
        return points
    try:
        earned = float(repr(value))
    except (TypeError, ValueError):
        return points
    return min(earned, points) if earned >= 0 else points
