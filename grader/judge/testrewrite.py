"""Reading an instructor's ``test`` check and rewriting it for record, then replay.

The test runs twice, from one rewrite. First in the student's sandbox, over the notebook's own
namespace, as its author wrote it (``del`` of a notebook name, ``try``/``except``/``else``, loops,
helper functions, ``with``): every *site*, an expression that calls into or reads the student's
values, is evaluated there and its result recorded as plain data, as an opaque handle, or as the
exception it raised (``grader.run.test_recorder``). Then in the grader, with the grader's own
modules, where each site answers from that record (``grader.judge.testcheck``). The asserts, and
so the verdict, are the grader's.

Sites are:
- a chain rooted at one of the notebook's names: ``f(x)``, ``model.weight.shape``, ``W[0, 3]``;
- a chain rooted at a value the test got from one (``model(x).shape`` after ``model = Net()``), or
  at an argument of a function the test defines: the grader computes it on its own copy when it
  holds one as data, and takes the record only for what stayed in the student's process;
- a builtin called on either (``next(gen)``, ``len(xs)``, ``type(frame)``), the same way;
- the iterable of a ``for`` or a comprehension and the context manager of a ``with``, when they
  are the student's: each item, entering and leaving are recorded.

Each ``assert`` becomes ``__grader_assert__(n, thunk, message)``. The student's process gets a
copy in which asserts keep only the parts that call the student's code: their messages and the
expected side of a comparison never leave the grader.

Why one module: the grader's copy and the student's copy come from one rewrite, so their sites
are numbered alike; two modules would have to agree on the numbering. What the rewrite knows by
name (library calls that compare, test or read files, methods that draw) and its syntax-tree
builders are ``grader.judge.testvocab``; which names may hold the student's values, and the cut of the
student's copy, are ``grader.judge.testslice``; the passes that finish the two copies (the
student's asserts, its prelude, the grader's statement marks) are ``grader.judge.testcopies``.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import operator
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from grader.capture import trim
from grader.course import testcode
from grader.judge.testcopies import DOCTEST, Mark, Recorded, prelude
from grader.judge.testruntime import JudgedIs, same_object
from grader.judge.testslice import student_copy, tainted_names
from grader.judge.testvocab import (
    NAMESPACES,
    READERS,
    TESTING,
    LeaveLibrariesAlone,
    calls_student,
    catches_assertion,
    close_call,
    draws,
    introspects,
    libraries,
    recorded_warnings,
)
from grader.judge.testvocab import call as _call
from grader.judge.testvocab import literal as _literal
from grader.judge.testvocab import open_for_reading as _open_for_reading
from grader.judge.testvocab import reads as _reads
from grader.judge.testvocab import root as _root
from grader.judge.testvocab import thunk as _thunk
from grader.names import (
    TEST_ASSERT,
    TEST_DEL,
    TEST_ITER,
    TEST_SITE,
    TEST_SNAP,
    TEST_SYNC,
    TEST_WITH,
)

RAISES = frozenset({"raises", "assert_raises", "assertRaises"})
TEST_FILE = "<test>"  # the file name the grader's copy is compiled under: frames in it are the test's own
IS = "__grader_is__"  # ``a is b`` in the grader's copy: classes by their records (``testruntime.same_object``)
BUILTINS = frozenset(dir(builtins))

# The comparisons an ``assert`` may make that the grader evaluates itself, by ``ast`` class name.
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtE": operator.le,
    "Gt": operator.gt,
    "GtE": operator.ge,
    "Is": same_object,
    "IsNot": lambda a, b: not same_object(a, b),
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
}


@dataclass(frozen=True)
class Site:
    index: int
    source: str  # as the test writes it, for messages
    # The grader may compute it itself, on its own copies of the student's values, before asking
    # the record: it reads the notebook's names only through sites of its own.
    local: bool = False
    # A call that reads a file the test names (``pd.read_csv("out.tsv")``): read here from the
    # assignment's files, or, where they have none of that name, taken from the student's run,
    # whose working folder holds what the student's code wrote.
    reads_file: bool = False


@dataclass(frozen=True)
class AssertInfo:
    index: int
    source: str
    line: int = 0  # its line in the test
    left: str = ""  # a single comparison's two sides, for generated messages
    right: str = ""
    op: str = ""  # ``ast``'s class name of the comparison, or "Close" for ``np.allclose(left, right)``
    literal: bool = False  # the right side is a literal written in the test (safe to show)
    # The assert computes something from the student's values besides them (arithmetic): its source
    # may hold the reference formula, so messages do not quote it.
    formula: bool = False
    # Within a ``try`` of the test whose ``except`` catches its failure (``except AssertionError``):
    # a failure is raised for the test to catch, as Python would, not the test's verdict.
    caught: bool = False


@dataclass(frozen=True)
class Program:
    judge_code: types.CodeType  # what the grader runs (module code, its globals the test's namespace)
    record_source: str  # what the student's process runs, over the notebook's namespace
    sites: tuple[Site, ...]
    asserts: tuple[AssertInfo, ...]
    statements: tuple[str, ...] = ()  # each statement's text, by the number ``__grader_at__`` is called with
    comparisons: tuple[AssertInfo, ...] = ()  # the test's ``TESTING`` calls, each at its line

    def comparison(self, line: int) -> AssertInfo | None:
        """The ``TESTING`` call of the test's line ``line``, if it has one."""
        return next((c for c in self.comparisons if c.line == line), None)


class _Rewriter(ast.NodeTransformer):
    def __init__(
        self,
        source: str,
        student: set[str],
        tainted: set[str],
        bound: set[str],
        helpers: frozenset[str],
        assigned: frozenset[str] = frozenset(),
    ):
        self.source, self.student, self.tainted, self.bound = source, student, tainted, bound
        self.helpers = helpers  # the test's own functions
        self.assigned = assigned  # the names the test assigns values to (its data, not its functions)
        self.scopes: list[set[str]] = []  # the locals of each of the test's functions the rewrite is in
        self.catching = 0  # how many ``try`` bodies around here catch an AssertionError
        self.live: set[str] = set()  # names whose every read is taken in the student's process (``recorded_warnings``)
        self.sites: list[Site] = []
        self.asserts: list[AssertInfo] = []
        self.comparisons: list[AssertInfo] = []
        self.recorded: dict[int, ast.expr] = {}  # assert index -> what the student's copy evaluates

    def _text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)

    def _new_site(self, node: ast.AST, local: bool = False, reads_file: bool = False) -> int:
        site = Site(index=len(self.sites), source=trim(self._text(node), 120), local=local, reads_file=reads_file)
        self.sites.append(site)
        return len(self.sites) - 1

    def _site(self, node: ast.expr, body: ast.expr) -> ast.expr:
        call = _call(TEST_SITE, ast.Constant(self._new_site(node)), _thunk(body))
        return ast.copy_location(call, node)

    def _builtin_call(self, node: ast.expr) -> bool:
        """A builtin, or ``inspect``'s functions (``inspect.getsource(f)``), called on the student's values."""
        if not isinstance(node, ast.Call) or not any(
            _reads(a, self.tainted) for a in [*node.args, *(k.value for k in node.keywords)]
        ):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.value.id == "inspect"
        return isinstance(func, ast.Name) and func.id in BUILTINS and func.id not in self.bound

    def _builtin_base(self, node: ast.expr) -> bool:
        """A chain on the result of a builtin called on the student's values (``type(gen).__name__``)."""
        cur = node
        while True:
            if isinstance(cur, ast.Call) and self._builtin_call(cur):
                return cur is not node
            if isinstance(cur, (ast.Attribute, ast.Subscript)):
                cur = cur.value
            elif isinstance(cur, ast.Call):
                cur = cur.func
            else:
                return False

    def _own_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Any:
        """A function of the test's: its arguments and locals are its own, never the notebook's
        names they share a spelling with (``def correct(reco, test)`` beside the notebook's ``test``)."""
        mine = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} | {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        self.scopes.append(mine)  # a name synced after a call in here must be the function's own
        outer, self.student = self.student, self.student - mine
        try:
            return self.generic_visit(node)
        finally:
            self.student = outer
            self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _own_scope

    def visit_Name(self, node: ast.Name) -> Any:
        if isinstance(node.ctx, ast.Load) and node.id in self.student:
            return self._site(node, node)
        return node

    def _chain(self, node: ast.expr) -> Any:
        if getattr(node, "ctx", ast.Load()).__class__ is ast.Load:
            root = _root(node)
            if isinstance(root, ast.Name) and root.id in self.tainted and root is not node:
                # The root is read where the value lives (the notebook's own name only in the
                # student's process; a value the test got from it on both sides); the chain's
                # arguments may hold sites of their own, recorded within this one.
                index = self._new_site(node, local=root.id not in self.student and not draws(node))
                body = _ChainArgs(self).visit(copy.deepcopy(node))
                return ast.copy_location(_call(TEST_SITE, ast.Constant(index), _thunk(body)), node)
        if self._builtin_call(node) or self._builtin_base(node):
            index = self._new_site(node, local=not _reads(node, self.live) and not introspects(node))
            inner = cast(ast.expr, self.generic_visit(copy.deepcopy(node)))
            return ast.copy_location(_call(TEST_SITE, ast.Constant(index), _thunk(inner)), node)
        return self.generic_visit(node)

    visit_Attribute = visit_Subscript = _chain

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        # ``a + b`` of two objects of the student's class (a ``Tensor``): the grader computes it
        # where it holds both as data, else it is taken where they live, as a method call would be.
        if not _reads(node, self.tainted - self.student):
            return self.generic_visit(node)
        index = self._new_site(node, local=True)
        inner = cast(ast.expr, self.generic_visit(copy.deepcopy(node)))
        return ast.copy_location(_call(TEST_SITE, ast.Constant(index), _thunk(inner)), node)

    def visit_Call(self, node: ast.Call) -> Any:
        # ``assert_raises(ValueError, f, 0)``: the student's function is called inside the test's
        # ``raises``, so the call becomes a site: ``assert_raises(ValueError, lambda: f(0))``.
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in TESTING and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            self.comparisons.append(
                AssertInfo(
                    index=len(self.comparisons),
                    source=self._text(node),
                    line=node.lineno,
                    left=self._text(node.args[0]),
                    right=self._text(node.args[1]),
                    op="Close",
                    literal=_literal(node.args[1]),
                    formula=self._formula(node),
                )
            )
        if (
            name in READERS
            and isinstance(node.func, ast.Attribute)
            and isinstance(_root(node.func), ast.Name)
            and not _reads(node, self.tainted)
            and node.args
            and (
                isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                # a path the test computes (``for answer_file in [...]: pd.read_csv(answer_file)``),
                # for a reader that takes nothing but a path or a buffer
                or (name != "load" and not _reads(node.args[0], self.student))
            )
        ):
            index = self._new_site(node, local=True, reads_file=True)
            return ast.copy_location(_call(TEST_SITE, ast.Constant(index), _thunk(node)), node)
        mode = _open_for_reading(node)
        if (
            mode is not None
            and "open" not in self.bound
            and "open" not in self.student
            and not _reads(node, self.tainted)
        ):
            # ``with open("data/out.txt") as f: f.read()``: the file's whole content is the site (the
            # assignment's file read here, else the one the student's run wrote, read there), and the
            # test reads it from memory as it would from the file.
            reader = "read_bytes" if "b" in mode else "read_text"
            path = ast.Call(
                func=ast.Attribute(value=_call("__import__", ast.Constant("pathlib")), attr="Path", ctx=ast.Load()),
                args=[node.args[0]],
                keywords=[],
            )
            content = ast.Call(func=ast.Attribute(value=path, attr=reader, ctx=ast.Load()), args=[], keywords=[])
            index = self._new_site(node, local=True, reads_file=True)
            memory = "BytesIO" if "b" in mode else "StringIO"
            opened = ast.Call(
                func=ast.Attribute(value=_call("__import__", ast.Constant("io")), attr=memory, ctx=ast.Load()),
                args=[_call(TEST_SITE, ast.Constant(index), _thunk(content))],
                keywords=[],
            )
            return ast.copy_location(opened, node)
        if name in NAMESPACES and isinstance(node.func, ast.Name) and not node.args and name not in self.bound:
            # ``"x" in vars()``: whether the notebook defines a name, read where its names are.
            index = self._new_site(node)
            names = _call("set", _call("globals"))
            return ast.copy_location(_call(TEST_SITE, ast.Constant(index), _thunk(names)), node)
        if (
            name == "print"
            and isinstance(node.func, ast.Name)
            and "print" not in self.bound
            and "print" not in self.student
            and _reads(node, self.tainted)
        ):
            # ``print(table)``: each of the student's values as the text ``print`` writes of it, taken
            # where the value is (a table stays in the student's process; its text is data)
            node.args = [
                a
                if isinstance(a, ast.Starred) or not _reads(a, self.tainted)
                else ast.copy_location(ast.Call(func=ast.Name(id="str", ctx=ast.Load()), args=[a], keywords=[]), a)
                for a in node.args
            ]
        if name in RAISES and len(node.args) >= 2 and _reads(node.args[1], self.tainted):
            call = ast.Call(func=node.args[1], args=node.args[2:], keywords=node.keywords)
            node = ast.Call(func=node.func, args=[node.args[0], _thunk(ast.copy_location(call, node))], keywords=[])
        return self._chain(node)

    def _iterated(self, node: ast.expr) -> ast.expr:
        if not _reads(node, self.tainted):
            return cast(ast.expr, self.visit(node))
        index = self._new_site(node)
        return ast.copy_location(_call(TEST_ITER, ast.Constant(index), _thunk(self.visit(node))), node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        # ``fig, ax = plt.subplots()``: unpacked as the loop takes its items, each one data or an
        # object that stays in the student's process, where the pair whole is neither.
        if len(node.targets) == 1 and isinstance(node.targets[0], (ast.Tuple, ast.List)):
            node.value = self._iterated(node.value)
            node.targets = [self.visit(t) for t in node.targets]
            return node
        return self._synced(node, node.value)

    def visit_For(self, node: ast.For) -> Any:
        node.iter = self._iterated(node.iter)
        node.body = self._body(node.body)
        node.orelse = self._body(node.orelse)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> Any:
        node.iter = self._iterated(node.iter)
        node.ifs = [self.visit(i) for i in node.ifs]
        return node

    def visit_Try(self, node: ast.Try) -> Any:
        catches = any(catches_assertion(h.type) for h in node.handlers)
        self.catching += catches
        node.body = self._body(node.body)
        self.catching -= catches
        node.handlers = [self.visit(h) for h in node.handlers]
        node.orelse = self._body(node.orelse)
        node.finalbody = self._body(node.finalbody)
        return node

    def visit_With(self, node: ast.With) -> Any:
        for item in node.items:
            expr = item.context_expr
            name = expr.func.attr if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) else ""
            if _reads(expr, self.tainted) and name not in RAISES:
                index = self._new_site(expr)
                item.context_expr = ast.copy_location(
                    _call(TEST_WITH, ast.Constant(index), _thunk(self.visit(expr))), expr
                )
            else:
                item.context_expr = self.visit(expr)
        node.body = self._body(node.body)
        return node

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def _handed(self, call: ast.expr) -> list[str]:
        """The test's own values a call into the student's code is handed by name (``grid`` of
        ``set_dipole_conditions(grid, ...)``), which the call may change in place."""
        names: list[str] = []
        if isinstance(call, ast.Call) and isinstance(root := _root(call.func), ast.Name) and root.id in self.tainted:
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(arg, ast.Starred):
                    arg = arg.value
                if (
                    isinstance(arg, ast.Name)
                    and arg.id in (self.scopes[-1] if self.scopes else self.assigned)
                    and arg.id not in self.student | self.helpers
                    and arg.id not in names
                ):
                    names.append(arg.id)
        return names

    def _synced(self, node: ast.stmt, call: ast.expr | None) -> Any:
        # ``set_dipole_conditions(grid, (0, 0), (-1, -1))``, ``res = running_total(nums)``: the call ran
        # in the student's process, on that process's copy of the test's value, which it may have
        # changed. Snapshot before, and after it the test's name reads that copy where it changed.
        names = self._handed(call) if call is not None else []
        new = self.generic_visit(node)
        if not names:
            return new
        before, after = [], []
        for name in names:
            index = self._new_site(ast.Name(id=name, ctx=ast.Load()))
            read = _thunk(ast.Name(id=name, ctx=ast.Load()))
            before.append(ast.copy_location(ast.Expr(value=_call(TEST_SNAP, ast.Constant(index), read)), node))
            synced = _call(TEST_SYNC, ast.Constant(index), _thunk(ast.Name(id=name, ctx=ast.Load())))
            after.append(
                ast.copy_location(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=synced), node)
            )
        return [*before, new, *after]

    def visit_Expr(self, node: ast.Expr) -> Any:
        return self._synced(node, node.value)

    def visit_Delete(self, node: ast.Delete) -> Any:
        # ``del squares``: the notebook's name is gone for the student's code until the test puts it back.
        if all(isinstance(t, ast.Name) for t in node.targets) and any(
            isinstance(t, ast.Name) and t.id in self.student for t in node.targets
        ):
            calls = [
                ast.copy_location(ast.Expr(value=_call(TEST_DEL, ast.Constant(t.id))), node)
                for t in node.targets
                if isinstance(t, ast.Name)
            ]
            return calls
        return self.generic_visit(node)

    def _formula(self, node: ast.expr) -> bool:
        """Whether the expression computes with the student's values outside a site (arithmetic on
        them, or on the test's own values next to them)."""
        return any(isinstance(n, ast.BinOp) and not _literal(n) for n in ast.walk(node)) and _reads(node, self.tainted)

    def visit_Assert(self, node: ast.Assert) -> Any:
        test = node.test
        # ``doctest_match(printed_text(), "...")``: its source holds the expected output, so it is not quoted
        expects_output = any(isinstance(n, ast.Name) and n.id == DOCTEST for n in ast.walk(test))
        info = AssertInfo(
            index=len(self.asserts),
            source=self._text(test),
            line=node.lineno,
            formula=self._formula(test) or expects_output,
            caught=self.catching > 0,
        )
        close = close_call(test)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]).__name__ in OPS:
            info = AssertInfo(
                index=info.index,
                source=info.source,
                line=info.line,
                left=self._text(test.left),
                right=self._text(test.comparators[0]),
                op=type(test.ops[0]).__name__,
                literal=_literal(test.comparators[0]),
                formula=info.formula,
                caught=info.caught,
            )
            parts = [self.visit(test.left), self.visit(test.comparators[0])]
        elif close is not None:
            # ``np.allclose(a, b, rtol=...)``: the function, both sides and the options, each once,
            # so the grader calls it and still holds both values for the message.
            info = AssertInfo(
                index=info.index,
                source=info.source,
                line=info.line,
                left=self._text(close.args[0]),
                right=self._text(close.args[1]),
                op="Close",
                literal=_literal(close.args[1]),
                formula=info.formula,
                caught=info.caught,
            )
            options = ast.Dict(
                keys=[ast.Constant(k.arg) for k in close.keywords], values=[self.visit(k.value) for k in close.keywords]
            )
            parts = [self.visit(close.func), self.visit(close.args[0]), self.visit(close.args[1]), options]
        else:
            parts = [self.visit(test)]
        self.asserts.append(info)
        # The student's copy evaluates the parts that reach the student's code, and nothing else:
        # no expected side, no message.
        self.recorded[info.index] = ast.Tuple(
            elts=[p if calls_student(p, self.helpers) else ast.Constant(None) for p in parts], ctx=ast.Load()
        )
        body = ast.Tuple(elts=parts, ctx=ast.Load())
        msg: ast.expr = _thunk(self.visit(node.msg)) if node.msg else ast.Constant(None)
        call = _call(TEST_ASSERT, ast.Constant(info.index), _thunk(body), msg)
        return ast.copy_location(ast.Expr(value=call), node)


class _ChainArgs(ast.NodeTransformer):
    """Inside a chain rooted at a notebook name: the root stays as it is (the student's process
    reads it), the arguments and indices are rewritten (they may call the student's code too)."""

    def __init__(self, outer: _Rewriter):
        self.outer = outer

    def visit_Call(self, node: ast.Call) -> Any:
        node.func = self.visit(node.func)
        node.args = [self.outer.visit(a) for a in node.args]
        for k in node.keywords:
            k.value = self.outer.visit(k.value)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        node.value = self.visit(node.value)
        node.slice = self.outer.visit(node.slice)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        node.value = self.visit(node.value)
        return node


@functools.lru_cache(maxsize=256)
def program(source: str, notebook_names: tuple[str, ...] = ()) -> Program:
    """The test's two copies; ``notebook_names``: builtins it means as the notebook's (``Check.notebook_names``)."""
    tree = testcode.own_after_binding(ast.parse(source))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    student = set(testcode.student_names(source)) | (set(notebook_names) & read - testcode.bound_names(tree))
    # a listed name the test binds at its top level is bound over the notebook's names, as in a test
    # cell run in the kernel: ``map = None`` there, and the student's function that calls ``map`` fails
    student |= set(notebook_names) & testcode.top_level_binds(tree)
    live = recorded_warnings(tree)
    student |= live
    tainted = tainted_names(tree, student)
    helpers = frozenset(n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    imports = {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    assigned = (
        frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)) - imports
    )
    rewriter = _Rewriter(source, student, tainted, testcode.bound_names(tree), helpers, assigned)
    rewriter.live = live
    body: list[ast.stmt] = []
    for stmt in tree.body:
        out = rewriter.visit(stmt)
        body.extend(out if isinstance(out, list) else [out])
    body = body or [ast.Pass()]
    module = ast.fix_missing_locations(ast.Module(body=copy.deepcopy(body), type_ignores=[]))
    module = LeaveLibrariesAlone(libraries(tree)).visit(module)
    marker = Mark(source)
    marked = ast.fix_missing_locations(marker.visit(JudgedIs(IS).visit(module)))
    recorded = Recorded(rewriter.recorded).visit(ast.Module(body=body, type_ignores=[]))
    recorded = ast.fix_missing_locations(ast.Module(body=student_copy(recorded.body, student), type_ignores=[]))
    record_source = "\n".join(filter(None, [prelude(source, tree), ast.unparse(recorded)]))
    with ast.parse.lock:  # type: ignore[attr-defined]  # one tree at a time: grader/__init__.py says why
        judge_code = compile(marked, TEST_FILE, "exec")
    return Program(
        judge_code=judge_code,
        record_source=record_source,
        sites=tuple(rewriter.sites),
        asserts=tuple(rewriter.asserts),
        statements=tuple(marker.statements),
        comparisons=tuple(rewriter.comparisons),
    )
