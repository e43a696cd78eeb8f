"""What an instructor's test runs with in the grader: its modules (numpy, pytest, torch when it uses
them), nose's ``assert_*`` helpers that many nbgrader courses import, and the stand-in for a student's
value that stayed in the student's process (``Handle``).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import types
from typing import Any

import numpy as np

from grader.capture import number_text, shape_text, trim
from grader.course import testcode
from grader.errors import SiteUnusable, TestDidNotRaise


class Handle:
    """The grader's stand-in for a student's value that stayed in the student's process (a
    generator, a module, an instance of the student's class): the test may pass it back into the
    student's code, where the record of that call answers; here, any use of it as data fails
    (``SiteUnusable``), and the site that used it answers from its own record instead."""

    def __init__(self, source: str, why: str):
        self._source, self._why = source, why

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise SiteUnusable(self._source, self._why)

    __getattr__ = __call__ = __getitem__ = __bool__ = __iter__ = __next__ = _fail
    __len__ = __contains__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __mod__ = __pow__ = __matmul__ = __neg__ = __abs__ = __invert__ = __round__ = _fail
    __float__ = __int__ = __index__ = __complex__ = __array__ = __enter__ = __exit__ = _fail
    __str__ = __repr__ = __format__ = __dir__ = __reversed__ = _fail
    __hash__ = object.__hash__

    def __setitem__(self, key: Any, value: Any) -> None:
        """``frame["col"] = ...``: done on the real value in the student's run of the test."""

    def __delitem__(self, key: Any) -> None:
        """``del frame["col"]``: likewise."""

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # ``isinstance(handle, T)`` asks the record, not this stand-in
        raise SiteUnusable(self._source, self._why)


def show(value: Any) -> str:
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


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _assert_equal(first: Any, second: Any, msg: str | None = None) -> None:
    if not first == second:
        raise AssertionError(msg or f"got {show(first)}, which is not the expected value")


def _assert_not_equal(first: Any, second: Any, msg: str | None = None) -> None:
    if first == second:
        raise AssertionError(msg or f"got {show(first)}, which should differ")


def _assert_true(value: Any, msg: str | None = None) -> None:
    if not value:
        raise AssertionError(msg or f"got {show(value)}, which is not true")


def _assert_false(value: Any, msg: str | None = None) -> None:
    if value:
        raise AssertionError(msg or f"got {show(value)}, which is not false")


def _assert_almost_equal(first: Any, second: Any, places: int = 7, msg: str | None = None, delta: Any = None) -> None:
    ok = abs(first - second) <= delta if delta is not None else round(abs(first - second), places) == 0
    if not ok:
        raise AssertionError(msg or f"got {show(first)}, which is not close enough to the expected value")


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
    assert_equal=_assert_equal,
    assert_equals=_assert_equal,
    assert_not_equal=_assert_not_equal,
    assert_true=_assert_true,
    assert_false=_assert_false,
    assert_almost_equal=_assert_almost_equal,
    assert_raises=_assert_raises,
    ok_=_assert_true,
    eq_=_assert_equal,
    assert_in=lambda a, b, msg=None: _assert_true(a in b, msg),
    assert_not_in=lambda a, b, msg=None: _assert_true(a not in b, msg),
    assert_is_none=lambda a, msg=None: _assert_true(a is None, msg),
    assert_is_instance=lambda a, t, msg=None: _assert_true(isinstance(a, t), msg),
)
_NOSE = types.ModuleType("nose")
_NOSE.__dict__["tools"] = _NOSE_TOOLS


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if name == "nose.tools" or name == "nose":
        return _NOSE_TOOLS if fromlist and name == "nose.tools" else _NOSE
    return builtins.__import__(name, globals, locals, fromlist, level)


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


def namespace(source: str) -> dict[str, Any]:
    """The test's globals: the grader's own modules it uses, nose's helpers, pytest with a
    ``raises`` that says structurally what it expected, and a ``print`` that prints nothing here
    (a test that only prints passes when it raises nothing, as in nbgrader)."""
    grader_builtins = dict(vars(builtins))
    grader_builtins["print"] = lambda *args, **kwargs: None
    wrapped: dict[str, Any] = {}

    def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name == "pytest" and "pytest" in wrapped:
            return wrapped["pytest"]
        return _import(name, globals, locals, fromlist, level)

    grader_builtins["__import__"] = import_
    ns: dict[str, Any] = {"__builtins__": grader_builtins}
    used = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    for alias, name in testcode.GRADER_MODULES.items():
        if alias not in used:
            continue  # torch and pandas are imported only for a test that uses them
        module = _module(name)
        if module is not None:
            ns[alias] = module
    ns.update({name: getattr(_NOSE_TOOLS, name) for name in testcode.GRADER_HELPERS if hasattr(_NOSE_TOOLS, name)})
    real = ns.get("pytest") or (_module("pytest") if "pytest" in source else None)
    if real is not None:
        wrapped["pytest"] = _judging_pytest(real)
        if "pytest" in ns:
            ns["pytest"] = wrapped["pytest"]
    return ns
