"""``test`` checks: the instructor's own Python with asserts, split so the student cannot touch it.

A test is read with ``ast``. Every *site*, a sub-expression rooted at one of the student's names
(``f(x)``, ``model.weight.shape``, ``causal_weights[0, 3]``, ``list(model.parameters())``), is
evaluated in the student's sandbox as a capture and comes back as plain data; everything else,
the asserts, ``np.allclose``, ``pytest.raises``, comparisons and arithmetic, runs here in the
grader on those values, with the grader's own numpy and pytest. The student's process receives
the sites and nothing else: never an assert, an expected value or the test's logic.

The test's own inputs (``x`` in ``for x in inputs: assert f(x).shape == ...``) are computed here
and sent to the site as plain data. Which inputs a test needs is found by running it once here
with every site answering a placeholder (*planning*, once per assignment): the sites reached and
their inputs become the job's captures. Then, per submission, the test runs for real (*judging*)
and each site answers its captured value, or raises the student's exception again (type and
message), so ``pytest.raises(ValueError)`` sees the student's ``ValueError``. A site whose inputs
depend on the student's own values cannot be planned; the test then fails with a message that
says so, and ``grader validate`` reports it against the solution.

A result assigned to a name (``model = Net()``) stays in the test's scratch namespace in the
student's process, so later sites can use it (``model(x).shape``); where the grader holds it as
plain data, the grader computes on its own copy instead.

Why one module: planning and judging share the rewritten test, its sites and its runtime; split,
each half would need the other's private forms.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import json
import operator
import random
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.capture import CaptureFailed, encode, number_text, shape_text, to_python, trim
from grader.course import testcode
from grader.course.model import Check
from grader.judge.scorecard import CheckResult
from grader.run.job import Captured, CaptureSpec
from grader.vocab import CaptureKind, CheckStatus

SITE = "__grader_site__"
ASSERT = "__grader_assert__"
HIDE, UNHIDE = "__grader_hide__", "__grader_unhide__"
AT = "__grader_at__"
ENTRY = "__grader_test__"
# Builtins whose call on a student's value runs in the student's process: they turn a generator
# or an iterator the grader could not carry into a list it can.
CONVERTERS = frozenset({"list", "tuple", "sorted", "dict", "set"})
RAISES = frozenset({"raises", "assert_raises", "assertRaises"})
MAX_SITES = 2000  # site evaluations one test may plan
BUDGET = 64 * 1024 * 1024

_OPS: dict[type[ast.cmpop], tuple[Callable[[Any, Any], Any], str]] = {
    ast.Eq: (operator.eq, "equal"), ast.NotEq: (operator.ne, "differ from"), ast.Lt: (operator.lt, "be less than"),
    ast.LtE: (operator.le, "be at most"), ast.Gt: (operator.gt, "be greater than"),
    ast.GtE: (operator.ge, "be at least"), ast.Is: (operator.is_, "be"), ast.IsNot: (operator.is_not, "not be"),
    ast.In: (lambda a, b: a in b, "be in"), ast.NotIn: (lambda a, b: a not in b, "not be in"),
}


# --------------------------------------------------------------------------------------------
# Reading and rewriting the test


@dataclass(frozen=True)
class Site:
    index: int
    source: str  # as the test writes it, for messages
    expr: str  # as the student's process evaluates it: the test's inputs replaced by binding names
    store: str | None  # the scratch name its value is kept under (``model = Net()``)


@dataclass(frozen=True)
class AssertInfo:
    index: int
    source: str
    left: str = ""  # a single comparison's two sides, for generated messages
    right: str = ""
    op: str = ""
    literal: bool = False  # the right side is a literal written in the test (safe to show)


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

        import copy

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

    def visit_Assert(self, node: ast.Assert) -> Any:
        info = AssertInfo(index=len(self.asserts), source=self._text(node.test))
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS:
            info = AssertInfo(index=info.index, source=info.source, left=self._text(test.left),
                              right=self._text(test.comparators[0]), op=type(test.ops[0]).__name__,
                              literal=_literal(test.comparators[0]))
            body: ast.expr = ast.Tuple(elts=[self.visit(test.left), self.visit(test.comparators[0])], ctx=ast.Load())
        else:
            body = ast.Tuple(elts=[self.visit(test)], ctx=ast.Load())
        self.asserts.append(info)
        msg: ast.expr = ast.Lambda(args=_no_args(), body=self.visit(node.msg)) if node.msg else ast.Constant(None)
        call = ast.Call(func=ast.Name(id=ASSERT, ctx=ast.Load()),
                        args=[ast.Constant(info.index), ast.Lambda(args=_no_args(), body=body), msg], keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)


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

    import copy

    guarded = [_Guard().visit(copy.deepcopy(s)) for s in body]
    marker = _Mark(source)
    marked = marker.visit(ast.Module(body=copy.deepcopy(body), type_ignores=[])).body
    return Program(judge_code=compiled(marked), plan_code=compiled(guarded), sites=tuple(rewriter.sites),
                   asserts=tuple(rewriter.asserts), statements=tuple(marker.statements))


# --------------------------------------------------------------------------------------------
# Running it in the grader


class Pending:
    """What a site answers while planning: absorbs every use, false, empty."""

    def __getattr__(self, name: str) -> Pending:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Pending:
        return self

    def __getitem__(self, key: Any) -> Pending:
        return self

    def __bool__(self) -> bool:
        return False

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        raise TypeError("no length while planning")  # a length of the student's value is no input to plan with

    def _op(self, *args: Any) -> Pending:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _op
    __matmul__ = __rmatmul__ = __pow__ = __neg__ = __abs__ = __floordiv__ = __mod__ = _op
    __lt__ = __le__ = __gt__ = __ge__ = _op

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class Unusable(Exception):
    """A student's value that could not come back as data was used as data in the grader."""


class Handle:
    """The grader's stand-in for a student's value that stayed in the student's process (a module,
    a function): later sites may use it there; here, any use of it fails with ``why``."""

    def __init__(self, source: str, why: str):
        self._source, self._why = source, why

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise Unusable(f"`{self._source}` cannot be checked: it {self._why}")

    __getattr__ = __call__ = __getitem__ = __bool__ = __iter__ = __len__ = __eq__ = __ne__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __mul__ = __float__ = __array__ = _fail
    __hash__ = object.__hash__


class StudentException(Exception):
    """Base of exceptions re-raised from the student's code whose type is not a builtin one."""


class Unplanned(Exception):
    """A site was reached with inputs planning could not foresee (they came from the student's values)."""


class _Stop(Exception):
    """The first failed assert ends an all-or-nothing test."""


def _raise_again(site: Site, got: Captured) -> Any:
    """The student's exception, as an exception of the same builtin type (``pytest.raises`` sees it)."""
    ename, _, evalue = (got.error or "Exception: ").partition(": ")
    cls = getattr(builtins, ename, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)) or cls is AssertionError:
        cls = type(ename if ename.isidentifier() else "StudentError", (StudentException,), {})
    try:
        exc = cls(evalue)
    except Exception:  # noqa: BLE001 - a builtin whose constructor wants other arguments
        exc = type(ename, (StudentException,), {})(evalue)
    exc.__dict__["grader_site"] = site.source
    raise exc


def _encoded(value: Any) -> dict[str, Any]:
    if isinstance(value, (Pending, Handle)):
        raise CaptureFailed("depends on the student's values")
    return encode(value, budget=[BUDGET])


def _seed() -> None:
    random.seed(0)
    np.random.seed(0)
    torch = sys.modules.get("torch")  # seeded when the test uses it; never imported for this
    if torch is not None:
        torch.manual_seed(0)


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


class _PlanRaises:
    """``pytest.raises`` while planning: nothing is raised yet, so nothing is expected."""

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def __enter__(self) -> Pending:
        return Pending()

    def __exit__(self, *exc: object) -> bool:
        return True


def _assert_equal(first: Any, second: Any, msg: str | None = None) -> None:
    if not first == second:
        raise AssertionError(msg or f"got {_show(first)}, which is not the expected value")


def _assert_not_equal(first: Any, second: Any, msg: str | None = None) -> None:
    if first == second:
        raise AssertionError(msg or f"got {_show(first)}, which should differ")


def _assert_true(value: Any, msg: str | None = None) -> None:
    if not value:
        raise AssertionError(msg or f"got {_show(value)}, which is not true")


def _assert_false(value: Any, msg: str | None = None) -> None:
    if value:
        raise AssertionError(msg or f"got {_show(value)}, which is not false")


def _assert_almost_equal(first: Any, second: Any, places: int = 7, msg: str | None = None, delta: Any = None) -> None:
    ok = abs(first - second) <= delta if delta is not None else round(abs(first - second), places) == 0
    if not ok:
        raise AssertionError(msg or f"got {_show(first)}, which is not close enough to the expected value")


class _Raises:
    """nose's ``assert_raises`` as a context manager: an AssertionError when nothing is raised."""

    def __init__(self, exc: Any):
        self.exc = exc

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise AssertionError(f"{getattr(self.exc, '__name__', self.exc)} was not raised")
        return issubclass(kind, self.exc)


def _assert_raises(exc: Any, func: Any = None, *args: Any, **kwargs: Any) -> Any:
    if func is None:
        return _Raises(exc)
    with _Raises(exc):
        func(*args, **kwargs)
    return None


# nose.tools, which many nbgrader courses import in their test cells; nose itself no longer installs.
_NOSE_TOOLS = types.ModuleType("nose.tools")
_NOSE_TOOLS.__dict__.update(
    assert_equal=_assert_equal, assert_equals=_assert_equal, assert_not_equal=_assert_not_equal,
    assert_true=_assert_true, assert_false=_assert_false, assert_almost_equal=_assert_almost_equal,
    assert_raises=_assert_raises, ok_=_assert_true, eq_=_assert_equal,
    assert_in=lambda a, b, msg=None: _assert_true(a in b, msg), assert_not_in=lambda a, b, msg=None: _assert_true(
        a not in b, msg), assert_is_none=lambda a, msg=None: _assert_true(a is None, msg),
    assert_is_instance=lambda a, t, msg=None: _assert_true(isinstance(a, t), msg),
)
_NOSE = types.ModuleType("nose")
_NOSE.__dict__["tools"] = _NOSE_TOOLS


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if name == "nose.tools" or name == "nose":
        return _NOSE_TOOLS if fromlist and name == "nose.tools" else _NOSE
    return builtins.__import__(name, globals, locals, fromlist, level)


def _namespace(source: str, planning: bool) -> dict[str, Any]:
    grader_builtins = dict(vars(builtins))
    grader_builtins["__import__"] = _import
    ns: dict[str, Any] = {"__builtins__": grader_builtins}
    used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    for alias, name in testcode.GRADER_MODULES.items():
        if alias not in used:
            continue  # torch and pandas are imported only for a test that uses them
        module = _module(name)
        if module is not None:
            ns[alias] = module
    ns.update({name: getattr(_NOSE_TOOLS, name) for name in testcode.GRADER_HELPERS})
    if planning and "pytest" in ns:
        ns["pytest"] = types.SimpleNamespace(**{k: getattr(ns["pytest"], k) for k in dir(ns["pytest"])
                                                if not k.startswith("__")})
        ns["pytest"].raises = _PlanRaises
    return ns


@dataclass
class Plan:
    """The site evaluations one test needs, in order, and how many asserts it runs."""

    # (site, key, bindings, names hidden): one per site evaluation, in order
    calls: list[tuple[int, str, dict[str, dict[str, Any]], tuple[str, ...]]] = field(default_factory=list)
    asserts: int = 0
    problems: list[str] = field(default_factory=list)


def _key(site: int, bindings: dict[str, dict[str, Any]], hidden: set[str]) -> str:
    return f"{site}:{','.join(sorted(hidden))}:" + json.dumps(bindings, sort_keys=True)


@functools.lru_cache(maxsize=256)
def plan(source: str) -> Plan:
    prog = program(source)
    out = Plan()
    hidden: set[str] = set()

    def site(index: int, bindings: dict[str, Any], local: Callable[[], Any] | None = None) -> Any:
        try:
            enc = {k: _encoded(v) for k, v in bindings.items()}
        except CaptureFailed:
            out.problems.append(f"`{prog.sites[index].source}` is called with inputs computed from the "
                                "student's values, which cannot be sent ahead")
            return Pending()
        if len(out.calls) < MAX_SITES:
            out.calls.append((index, _key(index, enc, hidden), enc, tuple(sorted(hidden))))
        return Pending()

    def assert_(index: int, thunk: Callable[[], Any], msg: Any) -> None:
        out.asserts += 1
        with contextlib.suppress(BaseException):
            thunk()

    ns = _namespace(source, planning=True)
    ns[SITE], ns[ASSERT] = site, assert_
    ns[HIDE], ns[UNHIDE] = (lambda *names: hidden.update(names)), (lambda *names: hidden.difference_update(names))
    _seed()
    with contextlib.suppress(BaseException):
        exec(prog.plan_code, ns)  # noqa: S102 - the instructor's test, in the grader
        ns[ENTRY]()
    return out


def captures(check: Check, point: int | None) -> list[CaptureSpec]:
    """The job's captures for one ``test`` check: one per site evaluation, in the test's order."""
    prog, p = program(check.target), plan(check.target)
    return [
        CaptureSpec(id=f"{check.id}@{i}", kind=CaptureKind.SITE, target=prog.sites[site].expr, point=point,
                    seed=check.seed, bindings=tuple(bindings.items()), scope=check.id, store=prog.sites[site].store,
                    hide=hide)
        for i, (site, _, bindings, hide) in enumerate(p.calls)
    ]


# --------------------------------------------------------------------------------------------
# Judging one submission


def _show(value: Any) -> str:
    """The student's value, briefly (their own value: always fine to show them)."""
    if isinstance(value, Handle):
        return "a value that cannot be shown"
    if isinstance(value, (bool, type(None), str)):
        return trim(repr(value), 60)
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return number_text(value, 6)
    if hasattr(value, "shape") and hasattr(value, "tolist"):
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
        if arr.size <= 6:
            return trim(np.array2string(arr, precision=4, separator=", "), 80)
        return f"an array of shape {shape_text(tuple(arr.shape))}"
    if isinstance(value, (list, tuple, dict)):
        return trim(repr(value), 60)
    return f"a {type(value).__name__}"


# Lines of np.testing's messages that give the expected value away (directly, or as a difference
# from the student's own value).
_REVEALING = ("y:", "DESIRED:", "Max absolute difference", "Max relative difference", "Expected:")


def _assertion_text(exc: BaseException, reveal: bool) -> str:
    """ An AssertionError's own message (``np.testing``'s, say), without the expected values unless allowed."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not reveal:
        lines = [line for line in lines if not line.startswith(_REVEALING)]
    lines = [line.replace("ACTUAL:", "yours:").replace("x:", "yours:", 1) if line.startswith(("ACTUAL:", "x:"))
             else line for line in lines]
    return trim(" ".join(lines), 300)


@dataclass
class Outcome:
    passed: int = 0
    run: int = 0
    messages: list[str] = field(default_factory=list)
    error: bool = False  # the student's code raised (not an assert that failed)


def judge(check: Check, student: dict[str, Captured], *, reveal: bool) -> Outcome:
    prog, p = program(check.target), plan(check.target)
    ids = {}
    seen: dict[str, int] = {}
    for i, (_, key, _, _) in enumerate(p.calls):
        ids[(key, seen.get(key, 0))] = f"{check.id}@{i}"
        seen[key] = seen.get(key, 0) + 1
    counts: dict[str, int] = {}
    hidden: set[str] = set()
    out = Outcome()
    show_expected = reveal or not check.hidden

    def site(index: int, bindings: dict[str, Any], local: Callable[[], Any] | None = None) -> Any:
        s = prog.sites[index]
        if local is not None:
            try:
                return local()
            except Exception:  # noqa: BLE001 - the grader's copy cannot answer: ask the student's
                pass
        try:
            key = _key(index, {k: _encoded(v) for k, v in bindings.items()}, hidden)
        except CaptureFailed:
            raise Unplanned(f"`{s.source}` is used with inputs computed from your values") from None
        n = counts.get(key, 0)
        counts[key] = n + 1
        cid = ids.get((key, n))
        got = student.get(cid) if cid else None
        if cid is None:
            raise Unplanned(f"`{s.source}` is reached with inputs the test could not prepare ahead "
                            "(they come from the notebook's own values)")
        if got is None:
            raise Unplanned(f"`{s.source}` was not reached: the notebook stopped before the test could run")
        if got.value is not None:
            return to_python(got.value)
        if got.uncapturable:
            return Handle(s.source, got.error.removeprefix(s.expr).strip())
        if got.missing:
            raise NameError(got.error or f"`{s.source}` is not defined")
        return _raise_again(s, got)

    def fail(text: str) -> None:
        if text not in out.messages:
            out.messages.append(text)
        if not check.partial:
            raise _Stop

    def assert_(index: int, thunk: Callable[[], Any], msg: Callable[[], Any] | None) -> None:
        info = prog.asserts[index]
        out.run += 1
        try:
            parts = thunk()
            if info.op:
                left, right = parts
                ok = bool(_OPS[getattr(ast, info.op)][0](left, right))
            else:
                ok = bool(parts[0])
        except (Unusable, Unplanned) as exc:
            fail(f"{exc}.")
            return
        except AssertionError as exc:
            fail(_assertion_text(exc, reveal) or f"`{info.source}` does not hold.")
            return
        except Exception as exc:  # noqa: BLE001 - the student's exception, raised again here, or the test's own
            out.error = out.error or _from_student(exc)
            fail(_exception_text(exc, info.source))
            return
        if ok:
            out.passed += 1
            return
        if msg is not None:
            with contextlib.suppress(Exception):
                fail(str(msg()))
                return
        if info.op:
            verb = _OPS[getattr(ast, info.op)][1]
            if info.literal and show_expected and info.op == "Eq":
                fail(f"`{info.left}` should be {info.right}; it is {_show(left)}.")
            elif info.literal and show_expected:
                fail(f"`{info.left}` should {verb} {info.right}; it is {_show(left)}.")
            else:
                fail(f"`{info.left}` is {_show(left)}, which does not pass `{info.source}`.")
        else:
            fail(f"`{info.source}` does not hold.")

    at = [-1]

    def where() -> str:
        return prog.statements[at[0]] if 0 <= at[0] < len(prog.statements) else ""

    ns = _namespace(check.target, planning=False)
    ns[SITE], ns[ASSERT] = site, assert_
    ns[AT] = lambda n: at.__setitem__(0, n)
    ns[HIDE], ns[UNHIDE] = (lambda *names: hidden.update(names)), (lambda *names: hidden.difference_update(names))
    _seed()
    try:
        exec(prog.judge_code, ns)  # noqa: S102 - the instructor's test, in the grader
        ns[ENTRY]()
    except _Stop:
        pass
    except AssertionError as exc:  # np.testing.assert_*, nose's assert_*, a bare raise
        out.run += 1
        text = _assertion_text(exc, reveal)
        out.messages.append(f"`{where()}`: {text}" if where() and text else text or f"`{where()}` failed.")
    except (Unusable, Unplanned) as exc:
        out.run += 1
        out.messages.append(f"{exc}.")
    except BaseException as exc:  # noqa: BLE001 - pytest's Failed is a BaseException
        out.run += 1
        out.error = _from_student(exc)
        text = str(exc)
        if type(exc).__name__ == "Failed" and text.startswith("DID NOT RAISE"):
            out.messages.append(f"`{where()}` should raise {text.removeprefix('DID NOT RAISE').strip()}; it did not.")
        else:
            out.messages.append(_exception_text(exc, where()))
    return out


def _from_student(exc: BaseException) -> bool:
    return "grader_site" in getattr(exc, "__dict__", {})


def _exception_text(exc: BaseException, source: str) -> str:
    site = getattr(exc, "__dict__", {}).get("grader_site")
    text = trim(str(exc), 200)
    name = type(exc).__name__
    if site:
        return f"`{site}` raised {name}: {text}" if text else f"`{site}` raised {name}"
    if name == "Failed":  # pytest.raises(...) whose block raised nothing
        return f"{text}." if text else "the test failed."
    where = f" while checking `{source}`" if source else ""
    return f"the test raised {name}{where}: {text}"


def grade(check: Check, student: dict[str, Captured], res: CheckResult, *, reveal: bool) -> CheckResult:
    """The verdict of one ``test`` check (``grader.judge.checks.grade_check`` after the blanks)."""
    out = judge(check, student, reveal=reveal)
    total = max(out.run, plan(check.target).asserts, 1)
    if not out.messages:
        res.status, res.score = CheckStatus.PASSED, res.max_score
        return res
    res.messages.extend(out.messages)
    res.status = CheckStatus.ERROR if out.error and not out.passed else CheckStatus.FAILED
    if check.partial and out.passed:
        res.score = res.max_score * out.passed / total
    return res


def problems(check: Check) -> list[str]:
    """What keeps a test from being planned, for ``grader validate``."""
    return list(dict.fromkeys(plan(check.target).problems))

