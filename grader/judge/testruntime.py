"""What an instructor's test runs with in the grader: its modules (numpy, pandas, pytest, torch when
it uses them; numpy's and pandas' ``testing`` comparisons failing as data), nose's ``assert_*``
helpers (``grader.nose_tools``), and the stand-in for a student's value that stayed in the
student's process (``Handle``).

Why one module: the names a test is given, the stand-in it meets for a student's value, and the
``isinstance``, ``type`` and ``is`` that answer for that stand-in from its record must agree on one
``Handle``; a module of names and one of handles would each need the other. What a test's last
value is worth (``partial_credit``) is read in ``grader.judge.testcopies``, beside its name.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import inspect
import sys
import types
from collections.abc import Callable, ItemsView, KeysView, ValuesView
from typing import Any

import numpy as np

from grader import nose_tools
from grader.capture import ClassRef, number_text, shape_text, trim
from grader.capture.classes import as_ref
from grader.course import testcode
from grader.errors import SiteUnrecorded, SiteUnusable, TestComparisonFailed, TestDidNotRaise, TestSiteError
from grader.judge import verdicts as v
from grader.judge.testmodules import CourseModules
from grader.names import PRINTOPTION_KEYS
from grader.vocab import Unprepared


class Handle:
    """The grader's stand-in for a student's value that stayed in the student's process (a
    generator, a module, an instance of the student's class): the test may pass it back into the
    student's code, where the record of that call answers; here, any use of it as data fails
    (``SiteUnusable``), and the site that used it answers from its own record instead."""

    # No ``__dict__`` of its own: ``acct.__dict__["balance"]`` asks the student's object, as any
    # attribute does (``__getattr__``), not this stand-in's fields.
    __slots__ = ("_source", "_why", "_kind", "_ident", "_name")
    _source: str
    _why: str
    _kind: ClassRef | None
    _ident: int
    _name: str

    def __init__(self, source: str, why: str, kind: ClassRef | None = None, ident: int = -1, name: str = ""):
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_why", why)
        object.__setattr__(self, "_kind", kind)  # its class, as ``type`` said
        object.__setattr__(self, "_ident", ident)  # which of the student's objects, where the record says
        object.__setattr__(self, "_name", name)  # a library's function: ``module:qualname``

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise SiteUnusable(self._source, self._why)

    __getattr__ = __call__ = __getitem__ = __bool__ = __iter__ = __next__ = _fail
    __len__ = __contains__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __mod__ = __pow__ = __matmul__ = __neg__ = __abs__ = __invert__ = __round__ = _fail
    __float__ = __int__ = __index__ = __complex__ = __array__ = __enter__ = __exit__ = _fail
    __str__ = __repr__ = __format__ = __dir__ = __reversed__ = _fail
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        """``particle.efield_method == fields.constant_field``: two of the student's functions are
        equal when they are one function, as Python compares them; anything else is theirs to say."""
        if type(other) is Handle and _functions(self, other):
            return self._ident == other._ident
        if self._name and isinstance(other, (types.FunctionType, types.BuiltinFunctionType)):
            # ``OPERATIONS["sqrt"] == math.sqrt``: a library's function of the student's, and the grader's
            return self._name == f"{getattr(other, '__module__', '')}:{getattr(other, '__qualname__', '')}"
        if self._name and type(other) is Handle and other._name:
            return self._name == other._name
        raise SiteUnusable(self._source, self._why)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``frame["col"] = ...``: done on the real value in the student's run of the test."""

    def __delitem__(self, key: Any) -> None:
        """``del frame["col"]``: likewise."""

    def __setattr__(self, name: str, value: Any) -> None:
        """``bus.num_passengers = 20``: likewise; a later ``bus.num_passengers`` answers from its record."""

    def __delattr__(self, name: str) -> None:
        """``del bus.route``: likewise."""

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # ``isinstance(handle, T)`` asks the record, not this stand-in
        raise SiteUnusable(self._source, self._why)


FUNCTIONS = {("builtins", "function"), ("builtins", "builtin_function_or_method")}


def _functions(*handles: Handle) -> bool:
    """Whether each handle is a plain function of the student's process (``def``, ``lambda``, a
    library's ``math.sqrt``), told apart from the others by its record: its ``==`` is ``is``."""
    return all(
        h._ident >= 0 and h._kind is not None and (h._kind.__module__, h._kind.__qualname__) in FUNCTIONS
        for h in handles
    )


def handle_class(value: Any) -> ClassRef | None:
    """The class of the student's value a handle stands for, where its record says it."""
    return value._kind if type(value) is Handle else None


def _type(*args: Any) -> Any:
    """``type`` while judging: a handle's is the student's class (its record), any other value's
    the grader's copy's; with three arguments, ``type`` itself."""
    if len(args) == 1 and type(args[0]) is Handle:
        kind = handle_class(args[0])
        return Handle if kind is None else kind  # ``Handle``: not known here (``testcheck`` asks the record)
    return type(*args)


def _mro(value: Any, source: str) -> tuple[ClassRef, ...]:
    """The MRO of a value's class, as records: a handle's from the student's process."""
    if type(value) is Handle:
        kind = handle_class(value)
        if kind is None:
            raise SiteUnusable(value._source, value._why)
        return kind.__mro__
    return ClassRef.of(type(value)).__mro__


def _derives(mro: tuple[ClassRef, ...], kind: Any, why: str) -> bool:
    """Whether a class whose MRO is ``mro`` is ``kind`` or derives from it, as Python says: by the MRO,
    unless ``kind``'s metaclass may say otherwise (an ABC), which only the student's process knows."""
    if isinstance(kind, tuple):
        return any(_derives(mro, k, why) for k in kind)
    target = as_ref(kind)
    if target is None:
        raise TypeError("isinstance() arg 2 must be a type, a tuple of types, or a union")
    found = mro[0].subclass_of(target) if mro else False
    if found is None:
        raise SiteUnusable(why, "is checked against an abstract class, which only the student's process can answer")
    return found


def _isinstance(value: Any, kind: Any) -> bool:
    """``isinstance`` while judging: on the grader's own values and classes, Python's own; where
    the value stayed in the student's process or the class is the student's, by their records."""
    if type(value) is not Handle and not _has_ref(kind):
        return isinstance(value, kind)
    return _derives(_mro(value, "isinstance"), kind, "isinstance(...)")


def _issubclass(sub: Any, kind: Any) -> bool:
    """``issubclass`` while judging, likewise."""
    if not isinstance(sub, ClassRef) and not _has_ref(kind):
        return issubclass(sub, kind)
    ref = as_ref(sub)
    if ref is None:
        raise TypeError("issubclass() arg 1 must be a class")
    return _derives(ref.__mro__, kind, "issubclass(...)")


def _has_ref(kind: Any) -> bool:
    return isinstance(kind, ClassRef) or isinstance(kind, tuple) and any(_has_ref(k) for k in kind)


def same_object(a: Any, b: Any) -> bool:
    """``a is b`` while judging: classes by their records (``grader.capture.classes``), anything else
    by Python's ``is``. A handle stands for an object of the student's that is no plain value, so
    never ``None`` (``assert ax.get_legend() is not None``)."""
    if type(a) is Handle and type(b) is Handle:  # two records of one object of the student's are one
        return a is b or a._ident >= 0 and a._ident == b._ident
    if type(a) is Handle or type(b) is Handle:
        return a is b
    if isinstance(a, ClassRef) or isinstance(b, ClassRef):
        ra, rb = as_ref(a), as_ref(b)
        return ra is not None and rb is not None and ra == rb
    return a is b


class JudgedIs(ast.NodeTransformer):
    """The grader's copy: ``a is b`` and ``a is not b`` as ``__grader_is__(a, b)``, so that the
    student's class (a record) is the grader's ``int`` where Python would say so (``same_object``)."""

    def __init__(self, name: str):
        self.name = name  # the name ``same_object`` goes by in the test's namespace

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return node  # ``a is b is c`` stays Python's: its operands are evaluated once there
        out: ast.expr = ast.Call(
            func=ast.Name(id=self.name, ctx=ast.Load()), args=[node.left, node.comparators[0]], keywords=[]
        )
        if isinstance(node.ops[0], ast.IsNot):
            out = ast.UnaryOp(op=ast.Not(), operand=out)
        return ast.copy_location(out, node)


def doctest_match(got: Any, want: Any) -> bool:
    """Whether printed text ``got`` is ``want`` as Python's doctest compares an example's output
    with its expected output (``doctest.OutputChecker``, no option flags: exact, but for ``1`` for
    ``True`` and lines of blanks), as a doctest-based tool's tests compare them."""
    import doctest

    if not isinstance(got, str) or not isinstance(want, str):
        return False
    if want and not want.endswith("\n"):
        want += "\n"
    return bool(doctest.OutputChecker().check_output(want, got, 0))


class Output:
    """What a test prints while judging (``print`` to standard output): kept, never shown, and read
    by the test with ``printed_text()``."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.stderr = ""  # the first line the test printed to standard error

    def print(self, *args: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False) -> None:
        if file is not None and file is not sys.stdout:
            if file is sys.stderr and not self.stderr:
                self.stderr = (" " if sep is None else str(sep)).join(str(a) for a in args).strip()[:200] or " "
            return  # to standard error or a file: not the test's output
        self.parts.append((" " if sep is None else str(sep)).join(str(a) for a in args))
        self.parts.append("\n" if end is None else str(end))

    def take(self) -> str:
        """The text printed since the test began, or since it last asked."""
        text = "".join(self.parts)
        self.parts.clear()
        return text


def show(value: Any) -> str:
    """The student's value, briefly (their own value: always fine to show them)."""
    if isinstance(value, Handle):
        return "a value that cannot be shown"
    if isinstance(value, ClassRef):  # a class named like another is told apart from it
        return repr(value) if value.importable else f"{value!r}, not the class importable under that name"
    if isinstance(value, (bool, type(None), str)):
        return trim(repr(value), 60)
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return number_text(value, 6)
    if hasattr(value, "shape") and hasattr(value, "tolist"):
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
        if arr.size <= 6:
            return trim(np.array2string(arr, precision=4, separator=", "), 80)
        return f"an array of shape {shape_text(tuple(arr.shape))}"
    if isinstance(value, (list, tuple, dict, KeysView, ValuesView, ItemsView)):  # dict_keys(['a', 'b'])
        return trim(repr(value), 60)
    return f"a {type(value).__name__}"


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# nose.tools, which tests import; nose itself no longer installs (``grader.nose_tools``).
_NOSE_TOOLS = nose_tools.tools(show)
_NOSE = nose_tools.package(_NOSE_TOOLS)


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if name == "nose.tools" or name == "nose":
        return _NOSE_TOOLS if fromlist and name == "nose.tools" else _NOSE
    module = builtins.__import__(name, globals, locals, fromlist, level)
    if module is np:  # ``import numpy``, ``import numpy.testing as npt``, ``from numpy import testing``
        return _judged_numpy()[0]
    if module is np.testing:  # ``from numpy.testing import assert_allclose``
        return _judged_numpy()[1]
    pandas = sys.modules.get("pandas")
    if pandas is not None and module is pandas:  # ``import pandas as pd``, ``import pandas.testing as pdt``
        return _judged_pandas()[0]
    if pandas is not None and module is getattr(pandas, "testing", None):  # ``from pandas.testing import ...``
        return _judged_pandas()[1]
    return module


class _Expecting:
    """``with pytest.raises(E):`` while judging: pytest's own context, except that a block that
    raised nothing ends the test with ``TestDidNotRaise`` (the expected exception as data), not
    with pytest's sentence."""

    def __init__(self, real: Any, expected: Any):
        self.real, self.expected = real, expected

    def __enter__(self) -> Any:
        return self.real.__enter__()

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise TestDidNotRaise(_exception_names(self.expected))
        return bool(self.real.__exit__(kind, value, tb))


def _exception_names(expected: Any) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(getattr(k, "__name__", str(k)) for k in kinds)


def _judging_pytest(real: Any) -> Any:
    """pytest as a test sees it while judging: ``raises`` says structurally that nothing was raised."""

    def raises(expected: Any, *args: Any, **kwargs: Any) -> Any:
        if not args:
            return _Expecting(real.raises(expected, **kwargs), expected)
        func, rest = args[0], args[1:]
        with _Expecting(real.raises(expected, **kwargs), expected) as info:
            func(*rest)
        return info

    return _module_with(real, raises=raises)


def _module_with(real: Any, **replaced: Any) -> Any:
    return types.SimpleNamespace(**{**{k: getattr(real, k) for k in dir(real) if not k.startswith("__")}, **replaced})


class _Judged(types.ModuleType):
    """A module as a test sees it while judging: the real one, but for the names replaced."""

    def __init__(self, real: types.ModuleType, **replaced: Any):
        super().__init__(real.__name__, real.__doc__)
        self.__dict__.update(replaced, __grader_real__=real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["__grader_real__"], name)


def _decimal(arguments: dict[str, Any]) -> tuple[float, float]:
    return 0.0, 1.5 * 10.0 ** -float(arguments["decimal"])


# numpy.testing's comparisons, each with the tolerance it compares with (rtol, atol), read from its
# arguments as it binds them.
_TOLERANCE: dict[str, Callable[[dict[str, Any]], tuple[float, float]]] = {
    "assert_allclose": lambda arguments: (float(arguments["rtol"]), float(arguments["atol"])),
    "assert_array_equal": lambda arguments: (0.0, 0.0),
    "assert_array_almost_equal": _decimal,
    "assert_almost_equal": _decimal,
    "assert_equal": lambda arguments: (0.0, 0.0),
}


def _pandas_tolerance(arguments: dict[str, Any]) -> tuple[float, float]:
    """pandas.testing's tolerance as it binds it: none with ``check_exact=True``, else its
    ``rtol`` and ``atol`` (1e-5 and 1e-8 when left to pandas)."""
    if arguments.get("check_exact") is True:
        return 0.0, 0.0
    rtol, atol = arguments.get("rtol"), arguments.get("atol")
    return (
        float(rtol) if isinstance(rtol, (int, float)) else 1e-5,
        float(atol) if isinstance(atol, (int, float)) else 1e-8,
    )


# pandas.testing's comparisons, likewise.
_PANDAS_TESTING = ("assert_frame_equal", "assert_series_equal", "assert_index_equal", "assert_extension_array_equal")


def _comparing(real: Callable[..., Any], tolerance: Callable[[dict[str, Any]], tuple[float, float]]) -> Any:
    """numpy.testing's comparison as a test sees it while judging: numpy decides, as it does
    anywhere; when it fails, the failure is ``TestComparisonFailed`` (both values, the tolerance and
    the test's ``err_msg``), not numpy's sentence, whose lines would show the expected value."""
    signature = inspect.signature(real)

    @functools.wraps(real)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        except AssertionError:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            actual, desired = list(bound.arguments.values())[:2]
            rtol, atol = tolerance(bound.arguments)
            err_msg = bound.arguments.get("err_msg")
            raise TestComparisonFailed(
                actual, desired, rtol, atol, err_msg if isinstance(err_msg, str) else ""
            ) from None

    return stand_in


@functools.cache
def _judged_numpy() -> tuple[types.ModuleType, types.ModuleType]:
    """numpy and numpy.testing as a test sees them while judging (``_comparing``)."""
    testing = _Judged(np.testing, **{name: _comparing(getattr(np.testing, name), t) for name, t in _TOLERANCE.items()})
    return _Judged(np, testing=testing), testing


@functools.cache
def _judged_pandas() -> tuple[types.ModuleType, types.ModuleType]:
    """pandas and pandas.testing as a test sees them while judging (``_comparing``)."""
    import pandas

    real = pandas.testing
    testing = _Judged(
        real,
        **{name: _comparing(getattr(real, name), _pandas_tolerance) for name in _PANDAS_TESTING if hasattr(real, name)},
    )
    return _Judged(pandas, testing=testing), testing


def namespace(source: str, output: Output | None = None, modules: CourseModules | None = None) -> dict[str, Any]:
    """The test's globals: the grader's own modules it uses (numpy's comparisons failing as data,
    ``_comparing``), nose's helpers, pytest with a ``raises`` that says structurally what it
    expected, a ``print`` that prints nothing here but keeps the text in ``output`` (a test that
    only prints passes when it raises nothing), ``doctest_match``, and ``type``, ``isinstance`` and
    ``issubclass`` that read the student's classes from their records; the course's own modules,
    as ``modules`` loads them (``grader.judge.testmodules``)."""
    grader_builtins = dict(vars(builtins))
    grader_builtins["print"] = (output or Output()).print
    grader_builtins.update(type=_type, isinstance=_isinstance, issubclass=_issubclass)
    wrapped: dict[str, Any] = {}

    def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name == "pytest" and "pytest" in wrapped:
            return wrapped["pytest"]
        return _import(name, globals, locals, fromlist, level)

    if modules is not None:
        modules.builtins["print"] = grader_builtins["print"]
    grader_builtins["__import__"] = import_ if modules is None else modules.importer(import_)
    ns: dict[str, Any] = {"__builtins__": grader_builtins, "__name__": "__main__"}  # as in the kernel
    used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    for alias, name in testcode.GRADER_MODULES.items():
        if alias not in used:
            continue  # torch and pandas are imported only for a test that uses them
        module = _judged_numpy()[0] if name == "numpy" else _module(name)
        if name == "pandas" and module is not None:
            module = _judged_pandas()[0]
        if module is not None:
            ns[alias] = module
    ns.update({name: getattr(_NOSE_TOOLS, name) for name in testcode.GRADER_HELPERS if hasattr(_NOSE_TOOLS, name)})
    ns["doctest_match"] = doctest_match
    real = ns.get("pytest") or (_module("pytest") if "pytest" in source else None)
    if real is not None:
        wrapped["pytest"] = _judging_pytest(real)
        if "pytest" in ns:
            ns["pytest"] = wrapped["pytest"]
    return ns


def printing(options: Any) -> contextlib.AbstractContextManager[Any]:
    """NumPy's print options as the notebook left them where a test runs (the record under
    ``grader.names.PRINTOPTIONS``), for the grader's replay of it: NumPy keeps them per context, so
    other threads print with their own, and they are back as they were after the test, its own
    ``np.set_printoptions`` included."""
    if not isinstance(options, dict):
        return np.printoptions()
    try:
        return np.printoptions(**{k: v for k, v in options.items() if k in PRINTOPTION_KEYS})
    except (TypeError, ValueError):  # options this NumPy does not take: its own
        return np.printoptions()


def message_of(exc: BaseException) -> str:
    """An exception's message on one line."""
    return trim(" ".join(line.strip() for line in str(exc).splitlines() if line.strip()), 300)


def failed_by_pytest(exc: BaseException) -> bool:
    """The test ended itself with pytest's ``Failed`` (``pytest.fail``). pytest is loaded where a
    test could have raised it, so a process that never loaded it has seen none."""
    outcomes = sys.modules.get("_pytest.outcomes")
    failed = getattr(outcomes, "Failed", None)
    return isinstance(failed, type) and isinstance(exc, failed)


def site_finding(exc: TestSiteError) -> v.TestFinding:
    if isinstance(exc, SiteUnrecorded):
        return v.SiteUnprepared(exc.site, Unprepared(exc.why), exc.ended)
    return v.SiteUnusable(exc.site, exc.why)


def from_student(exc: BaseException) -> bool:
    return "grader_site" in getattr(exc, "__dict__", {})


def raised(exc: BaseException, source: str) -> v.TestFinding:
    """An exception that ended an assert or the test: the student's (raised again at a site), a
    ``pytest.raises`` whose block raised nothing, or the test's own."""
    site = getattr(exc, "__dict__", {}).get("grader_site")
    text = trim(str(exc), 200)
    name = type(exc).__name__
    if site:
        return v.SiteRaised(site, name, text)
    if failed_by_pytest(exc):  # ``pytest.fail(...)``
        return v.TestFailedItself(text)
    return v.TestRaised(name, text, source)
