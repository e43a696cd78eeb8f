"""config.yaml's value checks (``grader.judge.compare``) on every kind of value a course compares:
the verdict is what the library's own comparison says with the check's tolerance (floats within it;
integers of any size, strings, booleans, dates and labels exactly), and the message a student reads
never shows a value only the reference holds.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from grader.capture import decode, encode
from grader.judge.compare import compare

RTOL, ATOL = 1e-5, 1e-8


def V(x: Any):
    return decode(json.loads(json.dumps(encode(x, budget=[1 << 24]))))


def frames_equal(a: Any, e: Any) -> bool:
    """pandas' own verdict, with the check's tolerance and without its strictness about dtypes and names."""
    test = pd.testing.assert_frame_equal if isinstance(e, pd.DataFrame) else pd.testing.assert_series_equal
    try:
        test(
            a,
            e,
            check_dtype=False,
            rtol=RTOL,
            atol=ATOL,
            check_names=False,
            check_index_type=False,
            check_categorical=False,
        )
    except AssertionError:
        return False
    return True


def arrays_equal(a: Any, e: Any) -> bool:
    try:
        np.testing.assert_array_equal(a, e)
    except AssertionError:
        return False
    return True


F = pd.DataFrame({"name": ["Ann", "bob", None], "age": [31, 42, 27], "score": [1.5, np.nan, 3.25]})
MIXED = pd.DataFrame(
    {
        "s": pd.array(["a", None, "c"], dtype="string"),
        "cat": pd.Categorical(["lo", "hi", "lo"]),
        "when": pd.to_datetime(["2024-01-01", "2024-03-05", None]),
        "n": pd.array([1, None, 3], dtype="Int64"),
        "flag": [True, False, True],
    }
)
BIG = math.factorial(40)

# (name, student's value, reference, the library's verdict)
PAIRS: list[tuple[str, Any, Any, bool]] = [
    ("big int", BIG, math.factorial(40), BIG == math.factorial(40)),
    ("big int off by one", BIG - 1, BIG, BIG - 1 == BIG),
    (
        "big int as float",
        float(math.factorial(20)),
        math.factorial(20),
        bool(np.isclose(float(math.factorial(20)), math.factorial(20))),
    ),
    ("big int vs float overflow", math.factorial(200), 1e300, False),
    ("int64 exact", 10**12 + 1, 10**12, 10**12 + 1 == 10**12),
    ("list of big ints", [BIG, 1], [BIG, 1], True),
    ("set", {"a", "b"}, {"b", "a"}, {"a", "b"} == {"b", "a"}),
    ("set differs", {"a", "c"}, {"a", "b"}, False),
    ("frozenset vs set", frozenset({1}), {1}, True),
    ("dict of sets", {"k": {1, 2}}, {"k": {2, 1}}, True),
    ("tuple keys", {(0, 1): 0.5}, {(0, 1): 0.5 + 1e-12}, True),
    (
        "string array",
        np.array(["cat", "dog"]),
        np.array(["cat", "dog"]),
        arrays_equal(np.array(["cat", "dog"]), np.array(["cat", "dog"])),
    ),
    ("string array case", np.array(["cat", "Dog"]), np.array(["cat", "dog"]), False),
    ("object array", np.array(["x", 1, 2.5], dtype=object), np.array(["x", 1, 2.5 + 1e-9], dtype=object), True),
    ("datetime array", np.array(["2024-01-01"], dtype="M8[D]"), np.array(["2024-01-02"], dtype="M8[D]"), False),
    ("frame", F, F.copy(), frames_equal(F, F.copy())),
    ("frame close", F.assign(score=F.score + 1e-9), F, frames_equal(F.assign(score=F.score + 1e-9), F)),
    ("frame off", F.assign(score=F.score + 1e-2), F, frames_equal(F.assign(score=F.score + 1e-2), F)),
    ("frame strings", F.assign(name=["Ann", "Bob", None]), F, frames_equal(F.assign(name=["Ann", "Bob", None]), F)),
    ("frame int32", F.astype({"age": "int32"}), F, frames_equal(F.astype({"age": "int32"}), F)),
    ("frame rows", F.iloc[[1, 0, 2]], F, frames_equal(F.iloc[[1, 0, 2]], F)),
    ("frame index", F.set_axis(["a", "b", "c"]), F, frames_equal(F.set_axis(["a", "b", "c"]), F)),
    ("frame columns", F[["age", "name", "score"]], F, frames_equal(F[["age", "name", "score"]], F)),
    ("frame missing column", F[["name", "age"]], F, False),
    ("mixed", MIXED, MIXED.copy(), frames_equal(MIXED, MIXED.copy())),
    ("mixed object strings", MIXED.astype({"s": object}), MIXED, frames_equal(MIXED.astype({"s": object}), MIXED)),
    ("mixed date", MIXED.assign(when=pd.to_datetime(["2024-01-01", "2024-03-06", None])), MIXED, False),
    # without strict types, a dtype is not checked: the same numbers, missing in the same rows
    (
        "mixed Int64 as float",
        MIXED.astype({"n": float}),
        MIXED,
        frames_equal(MIXED.astype({"n": float}), MIXED.astype({"n": float})),
    ),
    ("series", F.name, F.name.copy(), frames_equal(F.name, F.name.copy())),
    ("series value_counts", pd.Series(list("aab")).value_counts(), pd.Series(list("abb")).value_counts(), False),
    ("keys view", {"a": 1, "b": 2}.keys(), {"b": 0, "a": 0}.keys(), {"a": 1, "b": 2}.keys() == {"b": 0, "a": 0}.keys()),
    ("keys view differs", {"a": 1}.keys(), {"b": 1}.keys(), {"a": 1}.keys() == {"b": 1}.keys()),
    ("items view", {"a": [1], "b": 2}.items(), {"b": 2, "a": [1]}.items(), True),
    ("items view differs", {"a": [1]}.items(), {"a": [2]}.items(), False),
    # values views: Python's == is identity, never true of two captures; compared as lists, in order
    ("values view", {"a": 1, "b": 2}.values(), {"x": 1, "y": 2}.values(), [1, 2] == [1, 2]),
    ("values view order", {"a": 1, "b": 2}.values(), {"x": 2, "y": 1}.values(), False),
    ("keys view is not a values view", {"a": 1}.keys(), {"a": 1}.values(), False),
    ("bytearray", bytearray(b"ab"), b"ab", bytearray(b"ab") == b"ab"),
]


@pytest.mark.parametrize("name, actual, expected, truth", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_verdict_is_the_librarys(name, actual, expected, truth):
    result = compare("`x`", V(actual), V(expected), rtol=RTOL, atol=ATOL)
    assert result.ok == truth, result.messages
    if not result.ok:
        assert result.messages and all(m.endswith((".", "?")) for m in result.messages)


SECRETS = ["Zed", "Quill", "2031"]


@pytest.mark.parametrize(
    "actual, expected",
    [
        (F, F.assign(name=["Zed", "bob", None])),
        (F.name, F.name.replace("Ann", "Quill")),
        ({"Ann", "bob"}, {"Ann", "Zed"}),
        (np.array(["Ann"]), np.array(["Quill"])),
        (np.array(["Ann", 1], dtype=object), np.array(["Zed", 1], dtype=object)),
        (F.set_axis(["a", "b", "c"]), F.set_axis(["a", "b", "Quill"])),
        (pd.Timestamp("2024-01-01"), pd.Timestamp("2031-01-01")),
        (math.factorial(30), math.factorial(30) + 2031),
        ({"Ann": 1}.keys(), {"Zed": 1}.keys()),
    ],
)
def test_messages_never_show_what_only_the_reference_holds(actual, expected):
    result = compare("`x`", V(actual), V(expected), rtol=RTOL, atol=ATOL)
    assert not result.ok
    text = " ".join(result.messages)
    assert not any(secret in text for secret in SECRETS), text


def test_messages_say_what_differs():
    def said(actual: Any, expected: Any, **kw: Any) -> str:
        return compare("`x`", V(actual), V(expected), rtol=RTOL, atol=ATOL, **kw).messages[0]

    assert said(F[["name", "age"]], F) == (
        "`x`: expected a DataFrame with columns ['name', 'age', 'score']; yours has ['name', 'age']."
    )
    assert said(F.iloc[[1, 0, 2]], F) == (
        "`x`'s index (row labels) is [1, 0, 2]; the expected labels, in another order (sort it, or keep the "
        "original order?)."
    )
    assert said(F.assign(name=["Ann", "Bob", None]), F) == (
        "`x`['name']: 1 / 3 items (33.3%) differ; first: [1] is 'Bob'."
    )
    assert said(math.factorial(30) + 1, math.factorial(30)) == (
        "`x` is 265252859812191058636308480000001, which is not the expected value: it is slightly too large."
    )
    assert said(math.factorial(60) - 1, math.factorial(60)) == (
        "`x` is an integer of 82 digits, 832098711274...999999, which is not the expected value: it is slightly "
        "too small."
    )
    beyond_str = said(math.factorial(2000) + 1, math.factorial(2000))  # more digits than str() writes
    assert beyond_str.startswith("`x` is an integer of ") and beyond_str.endswith(": it is slightly too large.")
    assert said({"a", "z"}, {"a", "b"}) == "`x` has 2 items; 1 unexpected item ('z'); 1 expected item missing."
    assert said(F.astype({"age": "int32"}), F, strict_types=True) == "`x`['age'] has dtype int32; expected int64."
    assert said(np.array([1, 2]), np.array([1, 3])) == ("`x`: 1 / 2 elements (50.0%) differ; first: [1] is 2.")
