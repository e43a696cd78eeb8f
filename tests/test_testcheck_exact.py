"""Published courses' tests of exact values, recorded in the student's namespace and replayed in the
grader (``grader.judge.testcheck``), pass exactly when the same test run directly on the student's
objects passes: the truth is the test itself, run here by Python, numpy and pandas.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import fractions
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from grader.capture import decode
from grader.course.model import Check
from grader.judge import testcheck, wording
from grader.judge.testrewrite import program
from grader.run import frames
from grader.run.job import Captured
from grader.run.test_recorder import record_test

CHECK = Check(id="q/0", question_id="q", kind="test", target="", points=1, rtol=1e-5, atol=1e-8, strict_types=False)


def judged(test: str, ns: dict[str, Any]) -> tuple[bool, tuple[Any, ...]]:
    """The grader's verdict: recorded in the student's namespace, sent as a frame, replayed here."""
    names = tuple(n for n in ns if n not in ("np", "pd", "math"))
    check = dataclasses.replace(CHECK, target=test, notebook_names=names)
    records = record_test(program(test, names).record_source, dict(ns), seed=0, budget=[1 << 26])
    body = frames._ENCODER.encode({"ev": "capture", "value": records}).encode()
    captured = Captured(value=decode(frames.parse_frame(body)["value"]))
    found = testcheck.judge(check, {check.id: captured}, reveal=False).findings
    return not found, found


def truth(test: str, ns: dict[str, Any]) -> bool:
    """The test run directly on the student's objects, as the notebook would run it."""
    try:
        exec(test, {**ns})  # noqa: S102 - the test table's own code
    except Exception:  # noqa: BLE001 - any failure fails the test cell
        return False
    return True


def perm(n: int) -> int:
    return math.perm(n)


def perm_float(n: int) -> float:
    return float(math.perm(min(n, 170)))


FRAME = pd.DataFrame({"name": ["Ann", "bob", None], "age": [31, 42, 27], "score": [1.5, np.nan, 3.25]})
BASE = {"np": np, "pd": pd, "math": math}
LIBS = {"collections": collections, "fractions": fractions, "decimal": decimal, "datetime": datetime}

# (idiom, test, student's names when right, student's names when wrong)
IDIOMS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "a 205-digit integer",
        f"assert num_permutation(123) == {math.perm(123)}",
        {"num_permutation": perm},
        {"num_permutation": lambda n: perm(n) + 1},
    ),
    (
        "a list of big integers",
        f"assert [num_permutation(n) for n in (30, 60)] == {[math.perm(30), math.perm(60)]}",
        {"num_permutation": perm},
        {"num_permutation": perm_float},
    ),
    (
        "a binomial by math.comb",
        "assert binom(100, 50) == math.comb(100, 50)",
        {"binom": math.comb},
        {"binom": lambda n, k: math.comb(n, k) - 1},
    ),
    (
        "DataFrame.equals of strings",
        "expected = pd.DataFrame({'name': ['Ann', 'bob', None], 'age': [31, 42, 27], 'score': [1.5, np.nan, 3.25]})\n"
        "assert df.equals(expected)",
        {"df": FRAME.copy()},
        {"df": FRAME.assign(name=["ann", "bob", None])},
    ),
    (
        "assert_frame_equal checks dtypes",
        "expected = pd.DataFrame({'name': ['Ann', 'bob', None], 'age': [31, 42, 27], 'score': [1.5, np.nan, 3.25]})\n"
        "pd.testing.assert_frame_equal(df, expected)",
        {"df": FRAME.copy()},
        {"df": FRAME.astype({"age": "int32"})},
    ),
    (
        "assert_frame_equal without dtypes",
        "expected = pd.DataFrame({'name': ['Ann', 'bob', None], 'age': [31, 42, 27], 'score': [1.5, np.nan, 3.25]})\n"
        "pd.testing.assert_frame_equal(df, expected, check_dtype=False)",
        {"df": FRAME.astype({"age": "int32"})},
        {"df": FRAME.iloc[::-1]},
    ),
    (
        "a series' index order",
        "expected = pd.Series([31, 42], index=['Ann', 'bob'], name='age')\n"
        "pd.testing.assert_series_equal(ages, expected)",
        {"ages": pd.Series([31, 42], index=["Ann", "bob"], name="age")},
        {"ages": pd.Series([42, 31], index=["bob", "Ann"], name="age")},
    ),
    (
        "value_counts as a dict",
        "assert counts.to_dict() == {'mint': 2, 'lime': 1}",
        {"counts": pd.Series(["mint", "lime", "mint"]).value_counts()},
        {"counts": pd.Series(["mint", "lime", "Mint"]).value_counts()},
    ),
    (
        "a category column",
        "assert list(df['size'].cat.categories) == ['S', 'M', 'L'] and df['size'].cat.ordered",
        {"df": pd.DataFrame({"size": pd.Categorical(["S", "L"], categories=["S", "M", "L"], ordered=True)})},
        {"df": pd.DataFrame({"size": pd.Categorical(["S", "L"], categories=["L", "M", "S"], ordered=True)})},
    ),
    (
        "dates in a column",
        "assert df['when'].max() == pd.Timestamp('2024-03-05') and df['when'].dt.month.tolist() == [1, 3]",
        {"df": pd.DataFrame({"when": pd.to_datetime(["2024-01-01", "2024-03-05"])})},
        {"df": pd.DataFrame({"when": pd.to_datetime(["2024-01-01", "2024-05-03"])})},
    ),
    (
        "a set of strings",
        "assert vowels == {'a', 'e', 'i', 'o', 'u'}",
        {"vowels": set("aeiou")},
        {"vowels": set("aeiouy")},
    ),
    (
        "a frozenset in a set",
        "assert pairs == {frozenset({1, 2}), frozenset({3})}",
        {"pairs": {frozenset({1, 2}), frozenset({3})}},
        {"pairs": {frozenset({1, 2}), frozenset({4})}},
    ),
    (
        "a dict of arrays",
        "assert set(d) == {'w', 'b'}\nnp.testing.assert_allclose(d['w'], [1.0, 2.0])\nassert d['b'].dtype == np.int64",
        {"d": {"w": np.array([1.0, 2.0]), "b": np.array([0])}},
        {"d": {"w": np.array([1.0, 2.0]), "b": np.array([0.0])}},
    ),
    (
        "an array of strings",
        "np.testing.assert_array_equal(words, np.array(['cat', 'dog']))",
        {"words": np.array(["cat", "dog"])},
        {"words": np.array(["cat", "Dog"])},
    ),
    (
        "a tuple-keyed dict",
        "assert probs[(0, 1)] == 0.5 and len(probs) == 2",
        {"probs": {(0, 1): 0.5, (1, 0): 0.5}},
        {"probs": {(1, 0): 0.5, (0, 2): 0.5}},
    ),
    (
        "an object array of mixed items",
        "assert row.tolist() == ['x', 1, 2.5]",
        {"row": np.array(["x", 1, 2.5], dtype=object)},
        {"row": np.array(["x", 1, 2.5])},
    ),
    (
        "a Counter",
        "from collections import Counter\nassert counts == Counter('banana') and counts['z'] == 0",
        {"counts": __import__("collections").Counter("banana")},
        {"counts": dict(__import__("collections").Counter("banana"))},
    ),
    (
        "a MultiIndex from groupby",
        "assert grouped.index.names == ['a', 'b'] and grouped.loc[('x', 1)] == 3",
        {"grouped": pd.DataFrame({"a": ["x", "x"], "b": [1, 2], "v": [3, 4]}).groupby(["a", "b"])["v"].sum()},
        {"grouped": pd.DataFrame({"a": ["x", "x"], "b": [1, 2], "v": [3, 4]}).groupby(["b", "a"])["v"].sum()},
    ),
    (
        "a dict's keys view held in a name",
        "assert 'x' in keys and keys == {'x', 'y'} and keys | {'z'} == {'x', 'y', 'z'}",
        {"keys": {"x": 1, "y": 2}.keys()},
        {"keys": {"x": 1, "y": 2, "z": 3}.keys()},
    ),
    (
        "a dict's items view",
        "assert ('y', [2]) in sail.items() and sail.items() == {'x': 1, 'y': [2]}.items() and len(sail.items()) == 2",
        {"sail": {"x": 1, "y": [2]}},
        {"sail": {"x": 1, "y": [2.5]}},
    ),
    (
        "an OrderedDict's order and views",
        "assert od == collections.OrderedDict([('a', 1), ('b', 2)]) and list(od.items())[0] == ('a', 1)\n"
        "assert od.keys() == {'b', 'a'}",
        {"od": collections.OrderedDict([("a", 1), ("b", 2)])},
        {"od": collections.OrderedDict([("b", 2), ("a", 1)])},
    ),
    (
        "a defaultdict's items",
        "assert groups == {'a': ['ant'], 'b': ['bee']} and groups['a'] == ['ant']",
        {"groups": collections.defaultdict(list, {"a": ["ant"], "b": ["bee"]})},
        {"groups": collections.defaultdict(list, {"a": ["ant"]})},
    ),
    (
        "a defaultdict made by a lambda",
        "assert counts == {'a': 2} and counts['a'] == 2 and isinstance(counts, collections.defaultdict)",
        {"counts": collections.defaultdict(lambda: 0, {"a": 2})},
        {"counts": collections.defaultdict(lambda: 0, {"a": 3})},
    ),
    (
        "a missing key of a defaultdict made by a lambda",
        "assert counts['zzz'] == 0 and counts['a'] == 2",
        {"counts": collections.defaultdict(lambda: 0, {"a": 2})},
        {"counts": collections.defaultdict(lambda: 1, {"a": 2})},
    ),
    (
        "Counter.most_common and == with a dict",
        "assert counts.most_common(1) == [('a', 3)] and counts == {'a': 3, 'b': 1}",
        {"counts": collections.Counter("abaa")},
        {"counts": collections.Counter("abab")},
    ),
    (
        "a range",
        "assert r == range(0, 5) and r[-1] == 4",
        {"r": range(5)},
        {"r": range(1, 5)},
    ),
    (
        "one-shot iterators a test lists",
        "assert list(pairs('ab')) == [(0, 'a'), (1, 'b')] and list(doubled([1, 2])) == [2, 4]\n"
        "assert list(evens(range(5))) == [0, 2, 4] and list(zipped([1], 'a')) == [(1, 'a')]",
        {
            "pairs": enumerate,
            "doubled": lambda xs: map(lambda x: 2 * x, xs),
            "evens": lambda xs: filter(lambda x: x % 2 == 0, xs),
            "zipped": zip,
        },
        {"pairs": enumerate, "doubled": lambda xs: map(lambda x: 2 * x, xs), "evens": iter, "zipped": zip},
    ),
    (
        "a frozenset",
        "assert fs == frozenset({1, 2}) and type(fs) is frozenset",
        {"fs": frozenset({1, 2})},
        {"fs": {1, 2}},
    ),
    (
        "bytes and a bytearray",
        "assert raw == b'ab' and buf == bytearray(b'ab') and type(buf) is bytearray and buf[0] == 97",
        {"raw": b"ab", "buf": bytearray(b"ab")},
        {"raw": b"ab", "buf": b"ab"},
    ),
    (
        "a complex number",
        "assert z == 1 + 2j and z.imag == 2 and z * z.conjugate() == 5",
        {"z": 1 + 2j},
        {"z": 1 - 2j},
    ),
    (
        "a Fraction and a Decimal",
        "assert q == fractions.Fraction(1, 3) and x == decimal.Decimal('0.1') and x + x == decimal.Decimal('0.2')",
        {"q": fractions.Fraction(1, 3), "x": decimal.Decimal("0.1")},
        {"q": fractions.Fraction(1, 3), "x": 0.1},
    ),
    (
        "a date, a datetime and a timedelta",
        "assert day == datetime.date(2024, 1, 2) and when.hour == 3 and when - datetime.datetime(2024, 1, 1) == gap",
        {
            "day": datetime.date(2024, 1, 2),
            "when": datetime.datetime(2024, 1, 2, 3),
            "gap": datetime.timedelta(1, 10800),
        },
        {"day": datetime.date(2024, 1, 2), "when": datetime.datetime(2024, 1, 2, 3), "gap": datetime.timedelta(1)},
    ),
    (
        "NumPy scalars' types",
        "assert type(x) == np.float32 and type(i) == np.int64 and type(flag) == np.bool_ and flag",
        {"x": np.float32(1.5), "i": np.int64(3), "flag": np.bool_(True)},
        {"x": np.float64(1.5), "i": np.int64(3), "flag": np.bool_(True)},
    ),
]


@pytest.mark.parametrize("idiom, test, right, wrong", IDIOMS, ids=[i[0] for i in IDIOMS])
def test_replayed_tests_say_what_the_test_says(idiom, test, right, wrong):
    for ns in (right, wrong):
        ns = {**BASE, **LIBS, **ns}
        assert judged(test, ns)[0] == truth(test, ns)
    assert truth(test, {**BASE, **LIBS, **right}) and not truth(test, {**BASE, **LIBS, **wrong})  # told apart


def test_two_values_views_are_unequal_as_python_says():
    # Python compares values views by identity: the test fails on any dict, and says where.
    d = {"a": 1, "b": 2}
    ok, found = judged("assert d.values() == d.values()", {**BASE, "d": d})
    assert not ok and not truth("assert d.values() == d.values()", {"d": d})
    assert "d.values() == d.values()" in repr(found) and "cannot be compared" not in repr(found)


def test_a_failed_frame_comparison_does_not_show_the_expected_frame():
    test = (
        "expected = pd.DataFrame({'name': ['Zed', 'bob', None], 'age': [31, 42, 27], 'score': [1.5, np.nan, 3.25]})\n"
        "pd.testing.assert_frame_equal(df, expected)"
    )
    ok, found = judged(test, {**BASE, "df": FRAME.copy()})
    assert not ok and "Zed" not in repr(found)


@pytest.mark.parametrize(
    "test, student, said",
    [
        (
            "expected = pd.DataFrame({'name': ['Ann', 'Zed'], 'age': [31, 42]})\n"
            "pd.testing.assert_frame_equal(df, expected)",
            pd.DataFrame({"name": ["Ann", "bob"], "age": [31, 42]}),
            "`df`['name']: 1 / 2 items (50.0%) differ; first: [1] is 'bob'.",
        ),
        (
            "from pandas.testing import assert_frame_equal\n"
            "assert_frame_equal(df, pd.DataFrame({'name': ['Ann', 'bob'], 'age': [31, 42]}))",
            pd.DataFrame({"name": ["Ann", "bob"], "age": [31.0, 42.0]}),
            "`df`['age'] has dtype float64; expected int64.",
        ),
        (
            "import pandas.testing as pdt\npdt.assert_series_equal(s, pd.Series([1, 2], index=['a', 'b']))",
            pd.Series([2, 1], index=["b", "a"]),
            "`s`'s index (row labels) is ['b', 'a']; the expected labels, in another order (sort it, or keep the "
            "original order?).",
        ),
        ("assert s.keys() == {'x'}", {"y": 1}, "shown=\"dict_keys(['y'])\""),
        (
            f"np.testing.assert_equal(n, {math.perm(40)})",
            math.perm(40) + 1,
            "`n` is an integer of 48 digits, 815915283247...000001, which is not the expected value: it is slightly "
            "too large.",
        ),
    ],
)
def test_library_comparisons_that_fail_say_how(test, student, said):
    ok, found = judged(test, {**BASE, "df": student, "s": student, "n": student})
    assert not ok and said in repr(found), found


def test_a_value_that_cannot_cross_is_named_with_its_type():
    # A memoryview stays in the student's process: the test cannot use it as data, and says which.
    ok, found = judged("assert view == b'ab'", {**BASE, "view": memoryview(b"ab")})
    assert not ok and [wording.finding(f) for f in found] == [
        "`view` cannot be checked: it is a builtins.memoryview, which cannot be compared as data."
    ]
