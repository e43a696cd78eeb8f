"""nose.tools' assert helpers (``assert_equal``, ``ok_``, ``assert_raises``, ...), which tests still
import where nose no longer installs: one implementation, put in place on both sides of a test.

The student's process records a test with them (``grader.run.test_recorder``, where only whether a
helper raised matters) and the grader judges it with them (``grader.judge.testruntime``). A helper
whose check does not hold raises ``HelperFailed``, an ``AssertionError`` (so a test's ``except
AssertionError`` still catches it) whose message is the test's own ``msg`` or describes the
student's value only, by the ``describe`` each side gives: never an expected value.

Like ``grader.names``, it imports nothing of the grader's side.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from grader.errors import HelperFailed

Describe = Callable[[Any], str]


class _Raises:
    """``assert_raises(E)`` as a context manager: ``HelperFailed`` when nothing is raised."""

    def __init__(self, exc: Any):
        self.exc = exc

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        if kind is None:
            raise HelperFailed(f"{getattr(self.exc, '__name__', self.exc)} was not raised")
        return issubclass(kind, self.exc)


def tools(describe: Describe) -> types.ModuleType:
    """A ``nose.tools`` module whose failure messages describe the student's value with ``describe``."""

    def fail(msg: Any, value: Any, why: str) -> None:
        raise HelperFailed(msg or f"got {describe(value)}, {why}")

    def assert_equal(first: Any, second: Any, msg: str | None = None) -> None:
        if not first == second:
            fail(msg, first, "which is not the expected value")

    def assert_not_equal(first: Any, second: Any, msg: str | None = None) -> None:
        if first == second:
            fail(msg, first, "which should differ")

    def assert_true(value: Any, msg: str | None = None) -> None:
        if not value:
            fail(msg, value, "which is not true")

    def assert_false(value: Any, msg: str | None = None) -> None:
        if value:
            fail(msg, value, "which is not false")

    def assert_almost_equal(
        first: Any, second: Any, places: int = 7, msg: str | None = None, delta: Any = None
    ) -> None:
        ok = abs(first - second) <= delta if delta is not None else round(abs(first - second), places) == 0
        if not ok:
            fail(msg, first, "which is not close enough to the expected value")

    def assert_raises(exc: Any, func: Any = None, *args: Any, **kwargs: Any) -> Any:
        if func is None:
            return _Raises(exc)
        with _Raises(exc):
            func(*args, **kwargs)
        return None

    module = types.ModuleType("nose.tools")
    module.__dict__.update(
        assert_equal=assert_equal,
        assert_equals=assert_equal,
        assert_not_equal=assert_not_equal,
        assert_true=assert_true,
        assert_false=assert_false,
        assert_almost_equal=assert_almost_equal,
        assert_raises=assert_raises,
        ok_=assert_true,
        eq_=assert_equal,
        assert_in=lambda a, b, msg=None: assert_true(a in b, msg),
        assert_not_in=lambda a, b, msg=None: assert_true(a not in b, msg),
        assert_is_none=lambda a, msg=None: assert_true(a is None, msg),
        assert_is_instance=lambda a, t, msg=None: assert_true(isinstance(a, t), msg),
    )
    return module


def package(tools_module: types.ModuleType) -> types.ModuleType:
    """The ``nose`` package around a ``nose.tools`` module."""
    nose = types.ModuleType("nose")
    nose.__dict__["tools"] = tools_module
    return nose


def install(describe: Describe) -> None:
    """Make ``import nose.tools`` give these helpers in this process, where nose is not installed."""
    try:
        import nose.tools  # noqa: F401

        return
    except ImportError:
        pass
    module = tools(describe)
    sys.modules["nose"], sys.modules["nose.tools"] = package(module), module
