"""The vocabulary of a test's rewrite (``grader.judge.testrewrite``): the library calls it knows
by name (comparisons within tolerance, ``numpy.testing`` / ``pandas.testing`` asserts, file
readers, the builtins that list a namespace, ``catch_warnings(record=True)``, the calls that change a
module in place), the names a test holds its libraries and recorded warnings under, and the small
builders and readers of syntax trees it is made of."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import re

from grader.capture import trim
from grader.course import testcode
from grader.names import TEST_ITER, TEST_SITE

# Calls that compare two values within tolerance: ``assert np.allclose(yours, expected)``. The
# grader keeps both sides, so a failure says how the student's value differs, in kind.
CLOSE = frozenset({"allclose", "array_equal", "isclose", "array_equiv"})
# The builtins a test calls for the names defined where it runs (``"x" in vars()``): the
# notebook's names, as a set, taken in the student's process.
NAMESPACES = frozenset({"vars", "globals", "locals", "dir"})
# Library calls that read a file into data, by name (``pd.read_csv``, ``np.load``): with a path
# written in the test, each is a site (``Site.reads_file``).
READERS = frozenset(
    {
        "read_csv",
        "read_table",
        "read_excel",
        "read_json",
        "read_parquet",
        "read_feather",
        "read_fwf",
        "read_pickle",
        "load",
        "loadtxt",
        "genfromtxt",
        "fromfile",
    }
)
# numpy.testing's and pandas.testing's comparisons, called as statements (``np.testing.assert_allclose(yours, expected)``):
# each is kept with its two sides, so that its failure (``TestComparisonFailed``) is told like an
# ``np.allclose`` assert's.
TESTING = frozenset(
    {
        "assert_allclose",
        "assert_array_equal",
        "assert_array_almost_equal",
        "assert_almost_equal",
        "assert_equal",
        "assert_frame_equal",
        "assert_series_equal",
        "assert_index_equal",
        "assert_extension_array_equal",
    }
)


def no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def thunk(body: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=no_args(), body=body)


def call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


def root(node: ast.expr) -> ast.expr:
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return node


def literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def open_for_reading(node: ast.Call) -> str | None:
    """The mode of ``open("path")`` / ``open("path", "r")`` / ``open("path", mode="rb")`` called with
    a constant path to read a whole file; None for any other call (writing, a computed path, other
    arguments)."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "open"):
        return None
    if not node.args or not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return None
    modes = [*node.args[1:], *(k.value for k in node.keywords if k.arg == "mode")]
    if len(node.args) > 2 or any(k.arg not in ("mode", "encoding") for k in node.keywords) or len(modes) > 1:
        return None
    given = modes[0] if modes else ast.Constant("r")
    if not (isinstance(given, ast.Constant) and isinstance(given.value, str)):
        return None
    mode = given.value
    return mode if set(mode) <= {"r", "b", "t"} and "r" in mode else None


def reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# Methods that draw (pandas' ``df.plot()``, ``df.plot.hist()``, ``series.hist()``, an Axes' own): they
# draw on pyplot's current figure, state of the process they run in, so a chain that calls one is
# taken in the student's process, where the notebook's figures are, never computed in the grader's.
DRAWING = frozenset(
    {
        "plot", "hist", "bar", "barh", "scatter", "boxplot", "pie", "area", "kde", "density", "hexbin",
        "imshow", "matshow", "violinplot", "errorbar", "fill_between", "step", "stem", "contour", "contourf",
        "pcolormesh", "axhline", "axvline", "legend", "set_title", "set_xlabel", "set_ylabel", "savefig",
    }
)  # fmt: skip


def draws(node: ast.AST) -> bool:
    """Whether an expression calls, or reaches, a drawing method (``DRAWING``)."""
    return any(isinstance(n, ast.Attribute) and n.attr in DRAWING for n in ast.walk(node))


# Calls that change a module or class in place: ``importlib.reload(np)``, ``setattr(np, "convolve", None)``.
CHANGES_IN_PLACE = frozenset({"reload", "setattr", "delattr"})


def _standard_stream(target: ast.expr) -> bool:
    """``sys.stdout`` or ``sys.stderr`` (the grader's replay puts them back when the test ends)."""
    return (
        isinstance(target, ast.Attribute)
        and target.attr in ("stdout", "stderr")
        and isinstance(target.value, ast.Name)
        and target.value.id == "sys"
    )


class LeaveLibrariesAlone(ast.NodeTransformer):
    """The grader's copy of a test without the statements that change a module, or something
    imported from one, in place: ``np.convolve = None`` (so that the student's function may not
    call it), ``del pd.options...``, ``importlib.reload(np)``, ``setattr(np, "sum", None)``.

    A test cell runs in the student's kernel, where such a statement is part of the test's setting;
    the student's copy keeps it. In the grader's process the module is the grader's own, shared by
    every test it replays: each becomes ``pass`` there. ``libraries`` are the names the test holds
    a module, or what it imported from one, under."""

    def __init__(self, libraries: set[str]):
        self.libraries = libraries

    def _library(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Starred):
            node = node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(self._library(e) for e in node.elts)
        if not isinstance(node, (ast.Attribute, ast.Subscript)):
            return False
        base = root(node)
        return isinstance(base, ast.Name) and base.id in self.libraries

    def _changes_target(self, target: ast.expr) -> bool:
        if isinstance(target, (ast.Tuple, ast.List)):  # ``self.old, sys.stdout = sys.stdout, buf``
            return any(self._changes_target(e) for e in target.elts)
        if isinstance(target, ast.Starred):
            return self._changes_target(target.value)
        # ``sys.stdout = io.StringIO()``: the test catching what is printed, done on both sides
        return not _standard_stream(target) and self._library(target)

    def _changes(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Assign):
            return any(self._changes_target(t) for t in stmt.targets)
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            return self._library(stmt.target)
        if isinstance(stmt, ast.Delete):
            return any(self._library(t) for t in stmt.targets)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = stmt.value.args[0] if stmt.value.args else None
            return (
                name in CHANGES_IN_PLACE
                and isinstance(first, ast.Name)
                and first.id in self.libraries
                or name in ("setattr", "delattr")
                and first is not None
                and self._library(first)
            )
        return False

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and all(isinstance(v, ast.stmt) for v in value):
                setattr(
                    node,
                    field,
                    [ast.copy_location(ast.Pass(), s) if self._changes(s) else self.visit(s) for s in value],
                )
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node


def imported(tree: ast.AST) -> tuple[str, ...]:
    """The modules a test imports by absolute name, and what ``from m import x`` may take as a
    submodule (``m.x``): whether each is one of the course's own is for the student's process to say
    (``grader.run.test_recorder``), by where its file is."""
    names: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(dict.fromkeys(a.name for a in node.names))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names[node.module] = None
            names.update(dict.fromkeys(f"{node.module}.{a.name}" for a in node.names if a.name != "*"))
    return tuple(names)


def recorded_warnings(tree: ast.Module) -> set[str]:
    """The lists of ``with warnings.catch_warnings(record=True) as w``: the warnings the student's
    code gives are added to the list in the student's process, as they happen; so every read of
    ``w`` (``len(w)``, ``str(w[-1].message)``) is taken there, when the test makes it."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call, target = item.context_expr, item.optional_vars
                if (
                    isinstance(call, ast.Call)
                    and isinstance(target, ast.Name)
                    and (call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", ""))
                    == "catch_warnings"
                    and any(k.arg == "record" and literal(k.value) and ast.literal_eval(k.value) for k in call.keywords)
                ):
                    out.add(target.id)
    return out


def libraries(tree: ast.Module) -> set[str]:
    """The names the test holds a module, or something imported from one, under: what it imports,
    and the grader's modules it reads without importing (``np``)."""
    imported = {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return imported | (set(testcode.GRADER_MODULES) - testcode.bound_names(tree))


def close_call(test: ast.expr) -> ast.Call | None:
    """``np.allclose(a, b, ...)`` (or another ``CLOSE`` function) with two plain arguments, else None."""
    if not isinstance(test, ast.Call) or len(test.args) != 2 or any(k.arg is None for k in test.keywords):
        return None
    name = test.func.attr if isinstance(test.func, ast.Attribute) else getattr(test.func, "id", "")
    return test if name in CLOSE and not any(isinstance(a, ast.Starred) for a in test.args) else None


def catches_assertion(kind: ast.expr | None) -> bool:
    """Whether an ``except`` clause of this type catches an AssertionError."""
    if kind is None:
        return True
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    names = {k.attr if isinstance(k, ast.Attribute) else getattr(k, "id", "") for k in kinds}
    return bool(names & {"AssertionError", "Exception", "BaseException"})


def calls_student(node: ast.AST, helpers: frozenset[str] = frozenset()) -> bool:
    """Whether the expression calls the student's code: a site, or a function of the test's own
    (which may call it in turn: ``assert run(3) == [1, 4, 9]``)."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (TEST_SITE, TEST_ITER, *helpers)
        for n in ast.walk(node)
    )


def statement_text(source: str, stmt: ast.stmt) -> str:
    """How a message names a statement: its first line, or for ``with pytest.raises(E):`` its body."""
    if isinstance(stmt, ast.With) and stmt.body:
        stmt = stmt.body[0]
    text = (ast.get_source_segment(source, stmt) or ast.unparse(stmt)).strip().splitlines()
    return trim(text[0], 80) if text else ""


# Builtins that answer from the object itself, not from its value as data: what a class or an
# instance of the student's has (``dir(Person)``, ``vars(marie)``, ``hasattr``), and which object it
# is (``id(pyplot) == id(plt)``). The grader's copies would answer for themselves, so these are
# always taken where the objects live.
INTROSPECTING = frozenset({"dir", "vars", "id", "hasattr", "getattr", "hash"})


def introspects(node: ast.expr) -> bool:
    """Whether a builtin's call in the chain ``node`` asks the object itself (``INTROSPECTING``)."""
    cur: ast.expr = node
    while True:
        if isinstance(cur, ast.Call):
            if isinstance(cur.func, ast.Name) and cur.func.id in INTROSPECTING:
                return True
            cur = cur.func
        elif isinstance(cur, (ast.Attribute, ast.Subscript)):
            cur = cur.value
        else:
            return False


# Submodules a notebook's kernel has loaded whenever it draws, which a test reads as attributes of
# the package it imports itself (``import matplotlib`` then ``matplotlib.axes.Axes``): in the
# kernel they are there because ``matplotlib.pyplot`` loaded them.
_KERNEL_LOADED = {"matplotlib": "matplotlib.pyplot"}
_IMPORTS = re.compile(r"^\s*(?:import|from)\s+(\w+)", re.M)


def as_in_a_kernel(test: str) -> None:
    """Import in the grader what the test's own imports find loaded in a kernel (``_KERNEL_LOADED``)."""
    for package in set(_IMPORTS.findall(test)) & set(_KERNEL_LOADED):
        with contextlib.suppress(ImportError):
            importlib.import_module(_KERNEL_LOADED[package])


@functools.cache
def one_blas_thread() -> None:
    """The grader's BLAS on one thread, as the student's process has it (``OPENBLAS_NUM_THREADS=1``
    in the sandbox): a test's own ``np.linalg.eig(matrix)`` then gives the very bits the student's
    ``find_eigen_decomposition(matrix)`` gave there, which ``np.array_equal`` asks for. Where
    threadpoolctl is not installed, the grader's BLAS is left as it is."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(limits=1, user_api="blas")
