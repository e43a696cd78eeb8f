"""nose.tools' helpers, which published courses still import, hold exactly when unittest's asserts
(nose's own implementation) hold; a failure says the test's message or describes the student's
value, never the expected one."""

from __future__ import annotations

import math
import unittest
import warnings

import pytest

from grader import nose_tools
from grader.errors import HelperFailed

NOSE = nose_tools.tools(lambda value: f"<{value!r}>")
CASE = unittest.TestCase("__init__")

# (helper, arguments): each run here and by unittest's own method
CALLS = [
    ("assert_equal", (math.factorial(30), math.factorial(30))),
    ("assert_equal", (math.factorial(30) + 1, math.factorial(30))),
    ("assert_equal", ({"a": {1, 2}}, {"a": {2, 1}})),
    ("assert_almost_equal", (float("inf"), float("inf"))),
    ("assert_almost_equal", (1.0, 1.00000001)),
    ("assert_almost_equal", (1.0, 1.01)),
    ("assert_almost_equal", (1.0, 1.01, 1)),
    ("assert_not_almost_equal", (1.0, 1.5)),
    ("assert_count_equal", ([1, 2, 2], [2, 1, 2])),
    ("assert_count_equal", ([1, 2], [2, 2])),
    ("assert_set_equal", ({"a"}, {"A"})),
    ("assert_dict_equal", ({"a": 1}, {"a": 1.0})),
    ("assert_sequence_equal", ([1, 2], (1, 2))),
    ("assert_list_equal", ([1, 2], [1, 2])),
    ("assert_greater", (3, 2)),
    ("assert_less_equal", (3, 2)),
    ("assert_is_none", (None,)),
    ("assert_is_instance", (3, float)),
    ("assert_in", ("a", "abc")),
    ("assert_multi_line_equal", ("a\nb", "a\nc")),
]


def _outcome(func, args, **kwargs):
    try:
        func(*args, **kwargs)
    except AssertionError:
        return "fails"
    except Exception as exc:  # noqa: BLE001 - the type is the outcome
        return type(exc).__name__
    return "holds"


@pytest.mark.parametrize("name, args", CALLS)
def test_each_helper_holds_when_unittests_does(name, args):
    method = getattr(CASE, "assert" + name.title().replace("_", "")[6:])
    assert _outcome(getattr(NOSE, name), args) == _outcome(method, args)


def test_a_failure_says_the_tests_message_or_the_students_value():
    with pytest.raises(HelperFailed, match=r"^got <1\.0>, which is not close enough to the expected value$"):
        NOSE.assert_almost_equal(1.0, 1.2, delta=0.1)
    with pytest.raises(HelperFailed, match="^sum is wrong$"):
        NOSE.assert_equal(2, 3, "sum is wrong")
    with pytest.raises(HelperFailed, match="^sets differ$"):
        NOSE.assert_set_equal({1}, {2}, msg="sets differ")
    with pytest.raises(HelperFailed) as info:
        NOSE.assert_dict_equal({"a": 1}, {"a": 987654})
    assert "987654" not in str(info.value)
    with pytest.raises(TypeError):  # as unittest: places and delta together are the test's error
        NOSE.assert_almost_equal(1.0, 1.0001, places=2, delta=0.1)


def test_context_manager_helpers_stay_context_managers():
    with NOSE.assert_warns(UserWarning):
        warnings.warn("x", UserWarning, stacklevel=1)
    with NOSE.assert_raises(ValueError):
        int("x")
    with pytest.raises(HelperFailed, match="ValueError was not raised"), NOSE.assert_raises(ValueError):
        pass
