"""Reading an instructor's ``test`` check and rewriting it so the student cannot touch it.

Every *site*, a sub-expression rooted at one of the student's names (``f(x)``,
``model.weight.shape``, ``list(model.parameters())``), becomes a call ``__grader_site__(n, inputs)``
that the grader answers with the value the student's process computed; every ``assert`` becomes a
call ``__grader_assert__(n, thunk, message)`` so the grader judges it and keeps going where the
test gives partial credit. ``grader.judge.testcheck`` runs the result (planning, then judging).
"""

from __future__ import annotations

import ast
import copy
import functools
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.capture import trim
from grader.course import testcode

SITE = "__grader_site__"
ASSERT = "__grader_assert__"
HIDE, UNHIDE = "__grader_hide__", "__grader_unhide__"
AT = "__grader_at__"
ENTRY = "__grader_test__"
# Builtins whose call on a student's value runs in the student's process: they turn a generator
# or an iterator the grader could not carry into a list it can.
CONVERTERS = frozenset({"list", "tuple", "sorted", "dict", "set"})
RAISES = frozenset({"raises", "assert_raises", "assertRaises"})

# The comparisons an ``assert`` may make that the grader evaluates itself, by ``ast`` class name.
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
    "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not, "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
}


# --------------------------------------------------------------------------------------------
# Reading and rewriting the test


@dataclass(frozen=True)
class Site:
    index: int
    source: str  # as the test writes it, for messages
    expr: str  # as the student's process evaluates it: the test's inputs replaced by binding names
    store: str | None  # the scratch name its value is kept under (``model = Net()``)


# Calls that compare two values within tolerance: ``assert np.allclose(yours, expected)``. The
# grader keeps both sides, so a failure says how the student's value differs, in kind.
CLOSE = frozenset({"allclose", "array_equal", "isclose", "array_equiv"})


@dataclass(frozen=True)
class AssertInfo:
    index: int
    source: str
    left: str = ""  # a single comparison's two sides, for generated messages
    right: str = ""
    op: str = ""  # ``ast``'s class name of the comparison, or "Close" for ``np.allclose(left, right)``
    literal: bool = False  # the right side is a literal written in the test (safe to show)
    # The assert computes something from the student's values besides them (arithmetic): its source
    # may hold the reference formula, so messages do not quote it.
    formula: bool = False


@dataclass(frozen=True)
class Program:
    judge_code: types.CodeType
    plan_code: types.CodeType  # every statement guarded, so planning reaches every site it can
    sites: tuple[Site, ...]
    asserts: tuple[AssertInfo, ...]
    statements: tuple[str, ...] = ()  # each statement's text, by the number ``__grader_at__`` is called with


def _root(node: ast.expr) -> ast.expr:
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            if (isinstance(node.func, ast.Name) and node.func.id in CONVERTERS and len(node.args) == 1
                    and not node.keywords):
                node = node.args[0]
            else:
                node = node.func
        else:
            return node


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


class _Rewriter(ast.NodeTransformer):
    def __init__(self, source: str, student: set[str], stored: set[str], hideable: set[str]):
        self.source, self.student, self.stored, self.hideable = source, student, stored, hideable
        self.tainted = student | stored
        self.sites: list[Site] = []
        self.asserts: list[AssertInfo] = []

    def _text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def _is_site(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id in self.stored:
            return False  # the grader's own copy of a stored result
        root = _root(node)
        return isinstance(root, ast.Name) and isinstance(root.ctx, ast.Load) and root.id in self.tainted

    def _site(self, node: ast.expr, store: str | None = None) -> ast.expr:
        bindings: list[tuple[str, ast.expr]] = []
        tainted = self.tainted

        class Bind(ast.NodeTransformer):
            def visit(self, n: ast.AST) -> Any:
                if isinstance(n, ast.expr) and not _reads(n, tainted) and not _literal(n):
                    name = f"__grader_in{len(bindings)}__"
                    bindings.append((name, n))
                    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), n)
                return self.generic_visit(n)

        expr = Bind().visit(copy.deepcopy(node))
        site = Site(index=len(self.sites), source=self._text(node), expr=ast.unparse(expr), store=store)
        self.sites.append(site)
        args: list[ast.expr] = [
            ast.Constant(site.index),
            ast.Dict(keys=[ast.Constant(n) for n, _ in bindings], values=[b for _, b in bindings]),
        ]
        if not _reads(node, self.student):
            # Only stored results: the grader computes on its own copy when it holds one as data.
            args.append(ast.Lambda(args=_no_args(), body=copy.deepcopy(node)))
        return ast.copy_location(ast.Call(func=ast.Name(id=SITE, ctx=ast.Load()), args=args, keywords=[]), node)

    def visit_Name(self, node: ast.Name) -> Any:
        return self._site(node) if isinstance(node.ctx, ast.Load) and self._is_site(node) else node

    def _chain(self, node: ast.expr) -> Any:
        if getattr(node, "ctx", ast.Load()).__class__ is ast.Load and self._is_site(node):
            return self._site(node)
        return self.generic_visit(node)

    visit_Attribute = visit_Subscript = _chain

    def visit_Call(self, node: ast.Call) -> Any:
        # ``assert_raises(ValueError, f, 0)``: the student's function is called here, in the
        # grader's ``raises``, so the call becomes a site: ``assert_raises(ValueError, lambda: f(0))``.
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in RAISES and len(node.args) >= 2 and _reads(node.args[1], self.tainted):
            call = ast.Call(func=node.args[1], args=node.args[2:], keywords=node.keywords)
            node = ast.Call(func=node.func, args=[node.args[0], ast.Lambda(args=_no_args(), body=call)], keywords=[])
        return self._chain(node)

    def _hide_call(self, func: str, names: list[str], node: ast.stmt) -> ast.stmt:
        call = ast.Call(func=ast.Name(id=func, ctx=ast.Load()), args=[ast.Constant(n) for n in names], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)

    def visit_Delete(self, node: ast.Delete) -> Any:
        # ``del f``: the notebook's ``f`` is absent from the sites that follow, until the test puts it back.
        names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id in self.hideable]
        if names and len(names) == len(node.targets):
            return self._hide_call(HIDE, names, node)
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in self.hideable:
            return self._hide_call(UNHIDE, [node.targets[0].id], node)  # ``f = orig_f``: the notebook's own is back
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in self.stored and self._is_site(node.value)):
            node.value = self._site(node.value, store=node.targets[0].id)
            return node
        return self.generic_visit(node)

    def _formula(self, node: ast.expr) -> bool:
        """Whether the expression computes with the student's values outside a site (arithmetic on
        them, or on the test's own values next to them)."""
        return any(isinstance(n, ast.BinOp) and not _literal(n) for n in ast.walk(node)) and _reads(node, self.tainted)

    def visit_Assert(self, node: ast.Assert) -> Any:
        test = node.test
        info = AssertInfo(index=len(self.asserts), source=self._text(test), formula=self._formula(test))
        close = _close_call(test)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]).__name__ in OPS:
            info = AssertInfo(index=info.index, source=info.source, left=self._text(test.left),
                              right=self._text(test.comparators[0]), op=type(test.ops[0]).__name__,
                              literal=_literal(test.comparators[0]), formula=info.formula)
            body: ast.expr = ast.Tuple(elts=[self.visit(test.left), self.visit(test.comparators[0])], ctx=ast.Load())
        elif close is not None:
            # ``np.allclose(a, b, rtol=...)``: the function, both sides and the options, each once,
            # so the grader calls it and still holds both values for the message.
            info = AssertInfo(index=info.index, source=info.source, left=self._text(close.args[0]),
                              right=self._text(close.args[1]), op="Close", literal=_literal(close.args[1]),
                              formula=info.formula)
            options = ast.Dict(keys=[ast.Constant(k.arg) for k in close.keywords],
                               values=[self.visit(k.value) for k in close.keywords])
            body = ast.Tuple(elts=[self.visit(close.func), self.visit(close.args[0]), self.visit(close.args[1]),
                                   options], ctx=ast.Load())
        else:
            body = ast.Tuple(elts=[self.visit(test)], ctx=ast.Load())
        self.asserts.append(info)
        msg: ast.expr = ast.Lambda(args=_no_args(), body=self.visit(node.msg)) if node.msg else ast.Constant(None)
        call = ast.Call(func=ast.Name(id=ASSERT, ctx=ast.Load()),
                        args=[ast.Constant(info.index), ast.Lambda(args=_no_args(), body=body), msg], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)


def _close_call(test: ast.expr) -> ast.Call | None:
    """``np.allclose(a, b, ...)`` (or another ``CLOSE`` function) with two plain arguments, else None."""
    if not isinstance(test, ast.Call) or len(test.args) != 2 or any(k.arg is None for k in test.keywords):
        return None
    name = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
    return test if name in CLOSE and not any(isinstance(a, ast.Starred) for a in test.args) else None


class _Mark(ast.NodeTransformer):
    """Before every statement, ``__grader_at__(n)``: a failure outside an assert names its statement."""

    def __init__(self, source: str):
        self.source = source
        self.statements: list[str] = []

    def generic_visit(self, node: ast.AST) -> Any:
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                new: list[ast.stmt] = []
                for stmt in value:
                    self.statements.append(_statement_text(self.source, stmt))
                    mark = ast.Expr(value=ast.Call(func=ast.Name(id=AT, ctx=ast.Load()),
                                                   args=[ast.Constant(len(self.statements) - 1)], keywords=[]))
                    new.extend([ast.copy_location(mark, stmt), self.visit(stmt)])
                setattr(node, name, new)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node


def _statement_text(source: str, stmt: ast.stmt) -> str:
    """How a message names a statement: its first line, or for ``with pytest.raises(E):`` its body."""
    if isinstance(stmt, ast.With) and stmt.body:
        stmt = stmt.body[0]
    text = (ast.get_source_segment(source, stmt) or ast.unparse(stmt)).strip().splitlines()
    return trim(text[0], 80) if text else ""


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _stored(tree: ast.Module, student: set[str]) -> set[str]:
    """Names the test assigns from a site (``model = Net()``): kept in the student's scratch too."""
    stored: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id not in stored | student):
                root = _root(node.value)
                if isinstance(root, ast.Name) and root.id in student | stored:
                    stored.add(node.targets[0].id)
                    changed = True
    return stored


class _Guard(ast.NodeTransformer):
    """Planning runs every statement inside ``try``, so a placeholder that breaks one statement
    does not hide the sites of the next."""

    def _wrap(self, node: ast.stmt) -> ast.stmt:
        handler = ast.ExceptHandler(type=ast.Name(id="BaseException", ctx=ast.Load()), name=None, body=[ast.Pass()])
        return ast.copy_location(ast.Try(body=[node], handlers=[handler], orelse=[], finalbody=[]), node)

    def generic_visit(self, node: ast.AST) -> Any:
        node = super().generic_visit(node)
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Return,
                                                                ast.Break, ast.Continue, ast.Global, ast.Nonlocal)):
            return self._wrap(node)
        return node


@functools.lru_cache(maxsize=256)
def program(source: str) -> Program:
    tree = ast.parse(source)
    student = set(testcode.student_names(source))
    rewriter = _Rewriter(source, student, _stored(tree, student), testcode.deleted_names(tree) & student)
    body = [rewriter.visit(stmt) for stmt in tree.body] or [ast.Pass()]

    def compiled(stmts: list[ast.stmt]) -> types.CodeType:
        fn = ast.FunctionDef(name=ENTRY, args=_no_args(), body=stmts, decorator_list=[], returns=None)
        if "type_params" in ast.FunctionDef._fields:
            setattr(fn, "type_params", [])  # noqa: B010 - a field from Python 3.12 on
        module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
        return compile(module, "<test>", "exec")

    guarded = [_Guard().visit(copy.deepcopy(s)) for s in body]
    marker = _Mark(source)
    marked = marker.visit(ast.Module(body=copy.deepcopy(body), type_ignores=[])).body
    return Program(judge_code=compiled(marked), plan_code=compiled(guarded), sites=tuple(rewriter.sites),
                   asserts=tuple(rewriter.asserts), statements=tuple(marker.statements))
