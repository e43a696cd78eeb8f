"""Properties a check can ask of a value (``properties: [rows_sum_to_one]`` in config.yaml).

A property is judged on the student's value alone (``shape`` and ``dtype_kind`` against the
reference's), so it holds or fails whatever the exact numbers are, and its message says what a
careful TA would: which rows do not sum to 1, where weight leaks to future positions. Each is
one function registered here with ``@prop``; the loader accepts exactly the names in
``PROPERTIES``, and ``check_property`` judges one. Adding a property: a function here and its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.capture import Value, indices_text, number_kind, number_text, numeric, shape_text

if TYPE_CHECKING:  # numpy is imported where it is used: reading config.yaml needs none of it
    import numpy as np

# (student-facing label, the value as numbers, the reference as numbers or None, tolerance, the value) -> problem
Test = Callable[[str, "np.ndarray", "np.ndarray | None", float, Value], "str | None"]


@dataclass(frozen=True)
class Property:
    name: str
    help: str  # one line, for instructors
    test: Test
    numbers_only: bool = True  # judged only on numeric dtypes (anything else fails with its own message)


PROPERTIES: dict[str, Property] = {}


def prop(name: str, help: str, *, numbers_only: bool = True) -> Callable[[Test], Test]:
    def register(test: Test) -> Test:
        PROPERTIES[name] = Property(name, help, test, numbers_only)
        return test

    return register


def check_property(name: str, label: str, actual: Value, expected: Value | None, *, atol: float) -> str | None:
    """None when the property ``name`` holds for ``actual``, else a message for the student."""
    import numpy as np

    arr = numeric(actual)
    if arr is None:
        return f"{label} is {actual.describe()}; expected numbers"
    exp = None
    if expected is not None:
        exp = numeric(expected)
    spec = PROPERTIES[name]
    if spec.numbers_only and arr.dtype.kind not in "biufc":
        return f"{label} has dtype {arr.dtype}; expected numbers."
    # float32 work (torch's default) is held to float32's precision
    tol = max(atol, 1e-6 if arr.dtype != np.float32 and "float32" not in actual.dtype else 1e-5)
    return spec.test(label, arr, exp, tol, actual)


@prop("shape", "the shape of the reference value", numbers_only=False)
def _shape(label: str, arr: np.ndarray, exp: np.ndarray | None, tol: float, actual: Value) -> str | None:
    if exp is not None and arr.shape != exp.shape:
        return f"{label} has shape {shape_text(arr.shape)}; expected shape {shape_text(exp.shape)}."
    return None


@prop("dtype_kind", "the reference's kind of numbers (booleans, integers, floats, complex)", numbers_only=False)
def _dtype_kind(label: str, arr: np.ndarray, exp: np.ndarray | None, tol: float, actual: Value) -> str | None:
    if exp is None:
        return None
    mine, theirs = number_kind(arr.dtype), number_kind(exp.dtype)
    if mine != theirs:
        return (
            f"{label} holds {mine.words if mine else arr.dtype} ({actual.dtype or arr.dtype}); "
            f"expected {theirs.words if theirs else exp.dtype}."
        )
    return None


@prop("finite", "no NaN or infinite values")
def _finite(label: str, arr: np.ndarray, exp: np.ndarray | None, tol: float, actual: Value) -> str | None:
    import numpy as np

    bad = ~np.isfinite(arr)
    if bad.any():
        return f"{label} has {int(bad.sum())} NaN or infinite value(s), first at {indices_text(np.argwhere(bad))}."
    return None


@prop("rows_sum_to_one", "each row (the last axis) sums to 1, as softmax weights do")
def _rows_sum_to_one(label: str, arr: np.ndarray, exp: np.ndarray | None, tol: float, actual: Value) -> str | None:
    import numpy as np

    if arr.ndim == 0:
        return f"{label} is a single number; expected rows of weights."
    sums = arr.astype(np.float64).sum(axis=-1)
    bad = np.abs(sums - 1.0) > tol * max(1, arr.shape[-1])
    if bad.any():
        where = np.argwhere(np.atleast_1d(bad))
        return (
            f"{label}: {int(bad.sum())} of {bad.size} rows do not sum to 1 (first: row {indices_text(where)}, "
            f"sum {number_text(float(np.atleast_1d(sums)[tuple(where[0])]), 4)}); was the softmax taken over the "
            "last axis (each row)?"
        )
    return None


@prop("causal", "no weight above the diagonal of the last two axes (a causal mask)")
def _causal(label: str, arr: np.ndarray, exp: np.ndarray | None, tol: float, actual: Value) -> str | None:
    import numpy as np

    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        return f"{label} has shape {shape_text(arr.shape)}; expected square matrices for a causal mask."
    upper = np.triu(np.ones(arr.shape[-2:], dtype=bool), k=1)
    vals = arr.astype(np.float64)[..., upper]
    bad = np.abs(vals) > tol
    if bad.any():
        return (
            f"{label} gives weight to future positions ({int(bad.sum())} entries above the diagonal are "
            "not 0): is the mask applied before the softmax, with -inf rather than 0?"
        )
    return None
