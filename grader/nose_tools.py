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

import inspect
import re
import sys
import types
import unittest
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


# Why each helper fails, in the words its message uses after the student's value; any other
# ``assert*`` of unittest's fails "which does not pass assert_...".
_WHY = {
    "assert_equal": "which is not the expected value",
    "assert_not_equal": "which should differ",
    "assert_true": "which is not true",
    "assert_false": "which is not false",
    "assert_almost_equal": "which is not close enough to the expected value",
    "assert_not_almost_equal": "which should not be that close",
}


def _pep8(name: str) -> str:
    """``assertAlmostEqual`` -> ``assert_almost_equal``, as nose.tools names unittest's asserts."""
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


# unittest's asserts, bound to a case whose test is nothing (nose's own way), and their signatures:
# made when this module is imported, before any student code runs, so that a notebook that breaks a
# builtin (``builtins.range = None``) breaks none of this.
_CASE = unittest.TestCase("__init__")
_METHODS = {
    _pep8(attr): getattr(_CASE, attr)
    for attr in dir(unittest.TestCase)
    if attr.startswith("assert") and "_" not in attr and attr not in ("assertRaises", "assertRaisesRegex")
}
_SIGNATURES = {name: inspect.signature(method) for name, method in _METHODS.items()}


def tools(describe: Describe) -> types.ModuleType:
    """A ``nose.tools`` module: unittest's asserts under nose's names, as nose made them (so each
    holds exactly when unittest's does: ``assert_almost_equal``'s ``places`` and ``delta``, the
    dict, list and set comparisons, ``assert_count_equal``...), whose failure messages describe
    the student's value with ``describe`` instead of showing the expected one."""
    module = types.ModuleType("nose.tools")

    def helper(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)  # a context manager for ``assert_warns`` and ``assert_logs``
            except AssertionError:
                msg = _SIGNATURES[name].bind(*args, **kwargs).arguments.get("msg")
                why = _WHY.get(name, f"which does not pass {name}")
                raise HelperFailed(msg or f"got {describe(args[0]) if args else 'a value'}, {why}") from None

        run.__name__ = name
        return run

    for name, method in _METHODS.items():
        module.__dict__[name] = helper(name, method)

    def assert_raises(exc: Any, func: Any = None, *args: Any, **kwargs: Any) -> Any:
        if func is None:
            return _Raises(exc)
        with _Raises(exc):
            func(*args, **kwargs)
        return None

    def eq_(first: Any, second: Any, msg: Any = None) -> None:  # nose's own: a bare ``==``
        if not first == second:
            raise HelperFailed(msg or f"got {describe(first)}, {_WHY['assert_equal']}")

    module.__dict__.update(
        assert_equals=module.__dict__["assert_equal"],
        assert_raises=assert_raises,
        ok_=module.__dict__["assert_true"],
        eq_=eq_,
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
