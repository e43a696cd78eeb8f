"""Every value a course's test compares says, after the trip out of the student's process, what the
library's own comparison says of the original: pairs equal and unequal in each way (dtype, label,
order, NaN, a big integer off by one, a string's case), the truth computed here by pandas, numpy and
Python on the original objects, then asked again of the grader's copy of the student's side.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from grader.capture import decode, encode, to_python
from grader.run import frames

# The libraries warn about their own defaults (pandas' ``exact="equiv"``, duplicate columns in
# ``to_dict``) on the originals as on the copies: the same warnings, not this test's concern.
pytestmark = pytest.mark.filterwarnings("ignore::Warning")


def trip(x: Any) -> Any:
    """The grader's copy of a student's value: encoded, sent as a frame's JSON, decoded, rebuilt."""
    body = frames._ENCODER.encode({"ev": "capture", "value": encode(x, budget=[1 << 24])}).encode()
    return to_python(decode(frames.parse_frame(body)["value"]))


def outcome(op: Callable[[Any, Any], Any], x: Any, y: Any) -> tuple[Any, ...]:
    """What a test sees of ``op(x, y)``: a truth value, an ``AssertionError``, or another exception."""
    try:
        result = op(x, y)
        return ("value", True if result is None else bool(result))
    except AssertionError:
        return ("fails",)
    except Exception as exc:  # noqa: BLE001 - the exception's type is what a test would see
        return ("raises", type(exc).__name__)


def _eq(x: Any, y: Any) -> Any:
    return x == y


def _ne(x: Any, y: Any) -> Any:
    return x != y


def _type_is(x: Any, y: Any) -> Any:
    return type(x) is type(y)


PYTHON = {"==": _eq, "!=": _ne, "same type": _type_is}
ARRAYS = {
    **PYTHON,
    "np.array_equal": np.array_equal,
    "np.array_equal nan": lambda x, y: np.array_equal(x, y, equal_nan=True),
    "np.array_equiv": np.array_equiv,
    "np.allclose": np.allclose,
    "np.isclose.all": lambda x, y: np.isclose(x, y).all(),
    "assert_array_equal": np.testing.assert_array_equal,
    "assert_array_equal strict": lambda x, y: np.testing.assert_array_equal(x, y, strict=True),
    "assert_equal": np.testing.assert_equal,
    "assert_allclose": np.testing.assert_allclose,
    "assert_array_almost_equal": np.testing.assert_array_almost_equal,
    "assert_almost_equal": np.testing.assert_almost_equal,
    "dtype ==": lambda x, y: np.asarray(x).dtype == np.asarray(y).dtype,
    "shape ==": lambda x, y: np.shape(x) == np.shape(y),
}
FRAMES = {
    "equals": lambda x, y: x.equals(y),
    "assert_frame_equal": pd.testing.assert_frame_equal,
    "assert_frame_equal no dtype": lambda x, y: pd.testing.assert_frame_equal(x, y, check_dtype=False),
    "assert_frame_equal exact": lambda x, y: pd.testing.assert_frame_equal(x, y, check_exact=True),
    "assert_frame_equal like": lambda x, y: pd.testing.assert_frame_equal(x, y, check_like=True),
    "assert_frame_equal no names": lambda x, y: pd.testing.assert_frame_equal(x, y, check_names=False),
    "assert_frame_equal no index type": lambda x, y: pd.testing.assert_frame_equal(
        x, y, check_index_type=False, check_column_type=False
    ),
    "dtypes": lambda x, y: x.dtypes.equals(y.dtypes),
    "columns": lambda x, y: list(x.columns) == list(y.columns),
    "index equals": lambda x, y: x.index.equals(y.index),
    "== all": lambda x, y: (x == y).all().all(),
    "shape": lambda x, y: x.shape == y.shape,
    "to_dict": lambda x, y: x.to_dict() == y.to_dict(),
    "values": lambda x, y: np.array_equal(x.values, y.values),
    "same type": _type_is,
}
SERIES = {
    "equals": lambda x, y: x.equals(y),
    "assert_series_equal": pd.testing.assert_series_equal,
    "assert_series_equal no dtype": lambda x, y: pd.testing.assert_series_equal(x, y, check_dtype=False),
    "assert_series_equal exact": lambda x, y: pd.testing.assert_series_equal(x, y, check_exact=True),
    "assert_series_equal no names": lambda x, y: pd.testing.assert_series_equal(x, y, check_names=False),
    "assert_series_equal no index": lambda x, y: pd.testing.assert_series_equal(x, y, check_index=False),
    "dtype": lambda x, y: x.dtype == y.dtype,
    "name": lambda x, y: x.name == y.name,
    "== all": lambda x, y: (x == y).all(),
    "tolist": lambda x, y: x.tolist() == y.tolist(),
    "to_dict": lambda x, y: x.to_dict() == y.to_dict(),
    "sort_index equals": lambda x, y: x.sort_index().equals(y.sort_index()),
    "same type": _type_is,
}
INDEXES = {
    "equals": lambda x, y: x.equals(y),
    "identical": lambda x, y: x.identical(y),
    "assert_index_equal": pd.testing.assert_index_equal,
    "assert_index_equal exact": lambda x, y: pd.testing.assert_index_equal(x, y, exact=True),
    "assert_index_equal unordered": lambda x, y: pd.testing.assert_index_equal(x, y, check_order=False),
    "tolist": lambda x, y: x.tolist() == y.tolist(),
    "same type": _type_is,
}


def _frame(**columns: Any) -> pd.DataFrame:
    return pd.DataFrame(columns)


BIG = math.factorial(30)
F = _frame(name=["Ann", "bob", None], age=[31, 42, 27], score=[1.5, np.nan, 3.25])
TS = pd.to_datetime(["2024-01-01", "2024-03-05", None])
MIXED = pd.DataFrame(
    {
        "s": pd.array(["a", None, "c"], dtype="string"),
        "cat": pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True),
        "when": TS,
        "flag": [True, False, True],
        "n": pd.array([1, None, 3], dtype="Int64"),
        "obj": ["x", 1, 2.5],
        "tz": pd.date_range("2024-01-01", periods=3, freq="D", tz="Europe/Paris"),
        "dt": pd.to_timedelta([1, 2, 3], unit="s"),
    }
)

# (name, student's value, the test's value)
PAIRS: list[tuple[str, Any, Any]] = [
    ("big int equal", BIG, math.factorial(30)),
    ("big int off by one", BIG + 1, BIG),
    ("huge int equal", math.factorial(1200), math.factorial(1200)),
    ("huge int off by one", math.factorial(1200) - 1, math.factorial(1200)),
    ("binomial", math.comb(100, 50), math.comb(100, 50)),
    ("big negative int", -(2**80), -(2**80)),
    ("big int vs float", 2**70, float(2**70)),
    ("int vs float", 3, 3.0),
    ("int64 edge", 2**63 - 1, 2**63 - 1),
    ("uint64 edge", 2**63, 2**63),
    ("bool vs int", True, 1),
    ("string equal", "Hello", "Hello"),
    ("string case", "hello", "Hello"),
    ("None", None, None),
    ("None vs 0", None, 0),
    ("set equal", {1, 2, 3}, {3, 2, 1}),
    ("set differs", {1, 2}, {1, 2, 3}),
    ("set of strings", {"a", "B"}, {"a", "b"}),
    ("frozenset vs set", frozenset({1, 2}), {1, 2}),
    ("set of tuples", {(1, "a"), (2, "b")}, {(2, "b"), (1, "a")}),
    ("set of big ints", {BIG, 1}, {1, BIG}),
    ("dict equal", {"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}),
    ("dict int keys", {1: "x", 2: "y"}, {1: "x", 2: "y"}),
    ("dict tuple keys", {(0, 1): 0.5, (1, 0): 0.25}, {(0, 1): 0.5, (1, 0): 0.25}),
    ("dict None key", {None: 1}, {None: 1}),
    ("dict float nan key", {float("nan"): 1}, {float("nan"): 1}),
    ("dict of sets", {"a": {1, 2}}, {"a": {2, 1}}),
    ("dict of arrays", {"a": np.arange(3)}, {"a": np.arange(3)}),
    ("dict of frozenset keys", {frozenset({1}): "x"}, {frozenset({1}): "x"}),
    ("dict numpy int keys", {np.int64(1): 2}, {1: 2}),
    ("list of mixed", [1, "a", None, 2.5, True], [1, "a", None, 2.5, True]),
    ("list order", [1, 2, 3], [3, 2, 1]),
    ("tuple vs list", (1, 2), [1, 2]),
    ("nested list of strings", [["a", "b"], ["c"]], [["a", "b"], ["c"]]),
    ("list of arrays", [np.arange(2), np.arange(3)], [np.arange(2), np.arange(3)]),
    ("fraction", fractions.Fraction(1, 3), fractions.Fraction(1, 3)),
    ("fraction vs float", fractions.Fraction(1, 3), 1 / 3),
    ("decimal", decimal.Decimal("1.10"), decimal.Decimal("1.1")),
    ("complex", 1 + 2j, 1 + 2j),
    ("date", datetime.date(2024, 1, 2), datetime.date(2024, 1, 2)),
    ("datetime", datetime.datetime(2024, 1, 2, 3, 4, 5, 6), datetime.datetime(2024, 1, 2, 3, 4, 5, 6)),
    ("timedelta", datetime.timedelta(days=2, seconds=3), datetime.timedelta(days=2, seconds=3)),
    ("range", range(5), range(5)),
    ("range vs list", range(3), [0, 1, 2]),
    ("numpy str scalar", np.str_("abc"), "abc"),
    ("numpy int scalar", np.int32(7), 7),
    ("numpy bool scalar", np.bool_(True), True),
    ("numpy datetime scalar", np.datetime64("2024-01-02"), np.datetime64("2024-01-02")),
    ("pandas Timestamp", pd.Timestamp("2024-01-02 03:04:05.000000007"), pd.Timestamp("2024-01-02 03:04:05.000000007")),
    ("pandas Timestamp tz", pd.Timestamp("2024-01-02", tz="US/Eastern"), pd.Timestamp("2024-01-02", tz="US/Eastern")),
    ("pandas Timedelta", pd.Timedelta("1 day 2 ns"), pd.Timedelta("1 day 2 ns")),
    ("pandas NaT", pd.NaT, pd.NaT),
    ("pandas NA", pd.NA, pd.NA),
    ("float nan", float("nan"), float("nan")),
    ("float inf", float("inf"), float("inf")),
    ("negative zero", -0.0, 0.0),
    ("numpy dtype", np.dtype("int64"), np.dtype("int64")),
    ("numpy dtype vs name", np.dtype("int32"), "int64"),
    ("numpy dtype vs type", np.dtype("float64"), np.float64),
    ("pandas dtype vs name", pd.CategoricalDtype(["a"]), "category"),
    ("pandas dtype", pd.Int64Dtype(), pd.Int64Dtype()),
    ("index names", F.set_index(["name", "age"]).index.names, ["name", "age"]),
    ("index names differ", F.set_index(["age", "name"]).index.names, F.set_index(["name", "age"]).index.names),
]
ARRAY_PAIRS: list[tuple[str, Any, Any]] = [
    ("int array equal", np.arange(4), np.arange(4)),
    ("int array dtype", np.arange(4, dtype=np.int32), np.arange(4)),
    ("float array nan", np.array([1.0, np.nan]), np.array([1.0, np.nan])),
    ("float array close", np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])),
    ("float array off", np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    ("object array strings", np.array(["a", None, "c"], dtype=object), np.array(["a", None, "c"], dtype=object)),
    ("object array mixed", np.array([1, "a", 2.5], dtype=object), np.array([1, "a", 2.5], dtype=object)),
    ("object array big ints", np.array([BIG, 1], dtype=object), np.array([BIG, 1], dtype=object)),
    ("object array big off", np.array([BIG + 1, 1], dtype=object), np.array([BIG, 1], dtype=object)),
    ("object array of lists", np.array([[1, 2], [3]], dtype=object), np.array([[1, 2], [3]], dtype=object)),
    ("string array", np.array(["cat", "dog"]), np.array(["cat", "dog"])),
    ("string array case", np.array(["cat", "Dog"]), np.array(["cat", "dog"])),
    ("string array 2d", np.array([["a", "bb"], ["c", "d"]]), np.array([["a", "bb"], ["c", "d"]])),
    ("string array width", np.array(["a", "b"], dtype="<U5"), np.array(["a", "b"])),
    ("bytes array", np.array([b"a", b"bc"]), np.array([b"a", b"bc"])),
    ("bool array", np.array([True, False]), np.array([True, False])),
    ("bool vs int array", np.array([True, False]), np.array([1, 0])),
    ("complex array", np.array([1 + 1j, 2]), np.array([1 + 1j, 2])),
    (
        "datetime array",
        np.array(["2024-01-01", "NaT"], dtype="datetime64[D]"),
        np.array(["2024-01-01", "NaT"], dtype="datetime64[D]"),
    ),
    (
        "datetime array unit",
        np.array(["2024-01-01"], dtype="datetime64[s]"),
        np.array(["2024-01-01"], dtype="datetime64[D]"),
    ),
    ("timedelta array", np.array([1, 2], dtype="timedelta64[ms]"), np.array([1, 2], dtype="timedelta64[ms]")),
    ("float16 array", np.array([0.5, 1.5], dtype=np.float16), np.array([0.5, 1.5])),
    ("longdouble array", np.array([0.5], dtype=np.longdouble), np.array([0.5])),
    ("empty string array", np.array([], dtype="<U1"), np.array([], dtype="<U1")),
    ("0-d object array", np.array("x", dtype=object), np.array("x", dtype=object)),
    ("uint64 big", np.array([2**64 - 1], dtype=np.uint64), np.array([2**64 - 1], dtype=np.uint64)),
]
FRAME_PAIRS: list[tuple[str, Any, Any]] = [
    ("frame of strings", F, F.copy()),
    ("frame string case", F.assign(name=["ann", "bob", None]), F),
    ("frame int dtype", F.astype({"age": "int32"}), F),
    ("frame float vs int", F.astype({"age": float}), F),
    ("frame column order", F[["age", "name", "score"]], F),
    ("frame row order", F.iloc[[1, 0, 2]], F),
    ("frame index labels", F.set_axis(["a", "b", "c"]), F),
    ("frame index name", F.rename_axis("row"), F),
    ("frame columns name", F.rename_axis(columns="field"), F),
    ("frame nan vs value", F.fillna({"score": 0.0}), F),
    ("frame close", F.assign(score=F.score + 1e-9), F),
    ("frame off", F.assign(score=F.score + 1e-3), F),
    ("frame mixed", MIXED, MIXED.copy()),
    ("frame mixed string vs object", MIXED.astype({"s": object}), MIXED),
    ("frame mixed category vs object", MIXED.astype({"cat": object}), MIXED),
    ("frame mixed categories order", MIXED.assign(cat=MIXED.cat.cat.reorder_categories(["hi", "lo"])), MIXED),
    ("frame mixed tz", MIXED.assign(tz=MIXED.tz.dt.tz_convert("UTC")), MIXED),
    ("frame mixed Int64 vs float", MIXED.astype({"n": float}), MIXED),
    ("frame datetime unit", MIXED.astype({"when": "datetime64[s]"}), MIXED),
    ("frame range vs int index", F.set_axis(pd.Index([0, 1, 2])), F),
    ("frame multiindex", F.set_index(["name", "age"]), F.set_index(["name", "age"])),
    ("frame multiindex order", F.set_index(["age", "name"]), F.set_index(["name", "age"])),
    (
        "frame datetime index",
        F.set_axis(pd.date_range("2024-01-01", periods=3, freq="D")),
        F.set_axis(pd.date_range("2024-01-01", periods=3, freq="D")),
    ),
    (
        "frame datetime index freq",
        F.set_axis(pd.DatetimeIndex(["2024-01-01", "2024-01-02", "2024-01-03"])),
        F.set_axis(pd.date_range("2024-01-01", periods=3, freq="D")),
    ),
    ("frame duplicate columns", pd.DataFrame([[1, 2]], columns=["a", "a"]), pd.DataFrame([[1, 2]], columns=["a", "a"])),
    ("frame int columns", pd.DataFrame([[1, 2]], columns=[0, 1]), pd.DataFrame([[1, 2]])),
    (
        "frame tuple columns",
        pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", 1), ("a", 2)])),
        pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", 1), ("a", 2)])),
    ),
    ("frame empty", pd.DataFrame(), pd.DataFrame()),
    ("frame empty with columns", pd.DataFrame(columns=["a", "b"]), pd.DataFrame(columns=["a", "b"])),
    (
        "frame groupby result",
        F.groupby("name", dropna=False).age.sum().to_frame(),
        F.groupby("name", dropna=False).age.sum().to_frame(),
    ),
    ("frame value_counts", F.name.value_counts().to_frame(), F.name.value_counts().to_frame()),
    ("frame bool", pd.DataFrame({"a": [True, False]}), pd.DataFrame({"a": [True, False]})),
    ("frame big ints", pd.DataFrame({"a": [BIG, 1]}), pd.DataFrame({"a": [BIG, 1]})),
    ("frame float index", F.set_axis([0.5, np.nan, 2.0]), F.set_axis([0.5, np.nan, 2.0])),
]
SERIES_PAIRS: list[tuple[str, Any, Any]] = [
    ("frame dtypes", MIXED.dtypes, MIXED.dtypes.copy()),
    ("frame dtypes differ", MIXED.astype({"n": float}).dtypes, MIXED.dtypes),
    ("series strings", F.name, F.name.copy()),
    ("series name", F.name.rename("who"), F.name),
    ("series order", F.age.iloc[::-1], F.age),
    ("series dtype", F.age.astype("int32"), F.age),
    ("series string dtype", F.name.astype("string"), F.name),
    ("series category", MIXED.cat, MIXED.cat.copy()),
    ("series datetime", MIXED.when, MIXED.when.copy()),
    ("series tz", MIXED.tz, MIXED.tz.copy()),
    ("series Int64", MIXED.n, MIXED.n.copy()),
    ("series boolean", pd.Series([True, None], dtype="boolean"), pd.Series([True, None], dtype="boolean")),
    ("series value_counts", F.name.value_counts(), F.name.value_counts()),
    ("series value_counts normalize", F.name.value_counts(normalize=True), F.name.value_counts(normalize=True)),
    ("series label index", pd.Series([1, 2], index=["x", "y"]), pd.Series([1, 2], index=["x", "y"])),
    ("series label swap", pd.Series([1, 2], index=["y", "x"]), pd.Series([1, 2], index=["x", "y"])),
    ("series nan", F.score, F.score.copy()),
    ("series close", F.score + 1e-12, F.score),
    ("series object mixed", MIXED.obj, MIXED.obj.copy()),
    ("series no name", pd.Series([1.0]), pd.Series([1.0], name=None)),
    ("series int name", pd.Series([1.0], name=3), pd.Series([1.0], name=3)),
    (
        "series period",
        pd.Series(pd.period_range("2024-01", periods=2, freq="M")),
        pd.Series(pd.period_range("2024-01", periods=2, freq="M")),
    ),
    (
        "series interval",
        pd.Series(pd.IntervalIndex.from_breaks([0, 1, 2])),
        pd.Series(pd.IntervalIndex.from_breaks([0, 1, 2])),
    ),
    ("series cut", pd.cut(pd.Series([1, 5, 9]), 3), pd.cut(pd.Series([1, 5, 9]), 3)),
]
INDEX_PAIRS: list[tuple[str, Any, Any]] = [
    ("index strings", pd.Index(["a", "b"]), pd.Index(["a", "b"])),
    ("index name", pd.Index(["a", "b"], name="k"), pd.Index(["a", "b"])),
    ("index order", pd.Index(["b", "a"]), pd.Index(["a", "b"])),
    ("range index", pd.RangeIndex(3), pd.RangeIndex(3)),
    ("range vs int index", pd.RangeIndex(3), pd.Index([0, 1, 2])),
    (
        "multiindex",
        pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["x", "y"]),
        pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["x", "y"]),
    ),
    ("categorical index", pd.CategoricalIndex(["a", "b"]), pd.CategoricalIndex(["a", "b"])),
    ("datetime index", pd.date_range("2024", periods=2), pd.date_range("2024", periods=2)),
]


TABLES = ((PAIRS, PYTHON), (ARRAY_PAIRS, ARRAYS), (FRAME_PAIRS, FRAMES), (SERIES_PAIRS, SERIES), (INDEX_PAIRS, INDEXES))


def agreement() -> tuple[int, int, list[str]]:
    """How many (pair, comparison, side) triples say after the trip what they say before."""
    agree, total, differ = 0, 0, []
    for table, ops in TABLES:
        for name, student, test in table:
            try:
                copy = trip(student)
            except Exception as exc:  # noqa: BLE001 - a value that cannot cross is a comparison that differs
                copy = exc
            for op_name, op in ops.items():
                for side, (truth, got) in {
                    "student first": (outcome(op, student, test), outcome(op, copy, test)),
                    "test first": (outcome(op, test, student), outcome(op, test, copy)),
                }.items():
                    total += 1
                    if truth == got:
                        agree += 1
                    else:
                        differ.append(f"{name} / {op_name} / {side}: {truth} vs {got}")
    return agree, total, differ


def test_the_library_says_the_same_after_the_trip():
    agree, total, differ = agreement()
    assert not differ, f"{agree}/{total} agree; first differences:\n" + "\n".join(differ[:40])


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    agree, total, differ = agreement()
    print(f"{agree}/{total} agree")
    print("\n".join(differ))
