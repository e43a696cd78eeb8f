"""Comparing a captured value with the reference, and saying how they differ.

Comparing and reporting are separate: ``compare`` returns a ``Comparison``; its ``messages``
are written for a student. The order of checks is fixed, as in numpy.testing: missing -> type ->
shape/dtype -> NaN/inf positions -> values. The value rule for floats is numpy's
``|actual - expected| <= atol + rtol * |expected|``; integers of any size, strings, booleans, dates
and other items compare exactly, missing values (None, NaN, NA, NaT) alike.

Expected values never appear in a message unless ``reveal`` is set; what may always be said is
what was expected *in kind*: the type, the shape, a frame's column labels, the property.

Why one module: every kind of value (numbers, exact integers, strings, sets, arrays of objects,
pandas frames) is compared by the same rules of tolerance, missing values and what may be revealed,
and each kind's comparison calls the others' for its parts.
"""

from __future__ import annotations

import fractions
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.capture import MAX_INDICES, PANDAS, Value, indices_text, number_text, numeric, shape_text, to_python, trim
from grader.vocab import Reason

NUMERIC = "array"


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: Reason = Reason.NONE
    messages: tuple[str, ...] = ()
    mismatched: int = 0
    total: int = 0


@dataclass
class _Ctx:
    rtol: float
    atol: float
    strict: bool
    reveal: bool
    explain: bool = True  # False: the verdict only, no messages (see ``matches``)
    path: str = ""
    messages: list[str] = field(default_factory=list)


def compare(
    name: str,
    actual: Value,
    expected: Value,
    *,
    rtol: float,
    atol: float,
    strict_types: bool = False,
    reveal: bool = False,
) -> Comparison:
    """Whether ``actual`` matches ``expected`` within tolerance, and if not, why."""
    ctx = _Ctx(rtol=rtol, atol=atol, strict=strict_types, reveal=reveal)
    return _compare(name, actual, expected, ctx)


def matches(actual: Value, expected: Value, *, rtol: float, atol: float, strict_types: bool = False) -> bool:
    """``compare(...).ok``, without writing the messages nobody reads: for the verdicts the grader
    uses on its own (typical mistakes, variants that change an answer, changed given data)."""
    ctx = _Ctx(rtol=rtol, atol=atol, strict=strict_types, reveal=False, explain=False)
    return _compare("", actual, expected, ctx).ok


def _compare(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    if expected.kind in PANDAS:
        return _compare_pandas(name, actual, expected, ctx)
    if expected.kind == "int" or actual.kind == "int" and _number(expected) is not None:
        return _compare_int(name, actual, expected, ctx)
    if expected.kind in ("text", "objects"):
        return _compare_items(name, actual, expected, ctx)
    if expected.kind == "set":
        return _compare_set(name, actual, expected, ctx)
    if expected.kind == "view":
        return _compare_view(name, actual, expected, ctx)
    if expected.kind in ("scalar", "bytes"):
        if actual.kind != expected.kind or ctx.strict and actual.origin != expected.origin:
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
        if not _same(to_python(actual), to_python(expected), ctx):
            return _fail(Reason.VALUES, f"{name} is {trim(repr(actual.data))}, which is not the expected value")
        return Comparison(True)
    if expected.kind in (NUMERIC, "bool") or (expected.kind in ("list", "tuple") and actual.kind == NUMERIC):
        exp = numeric(expected)
        if exp is not None:
            return _comparenumeric(name, actual, expected, exp, ctx)
    if expected.kind in ("list", "tuple"):
        if actual.kind not in ("list", "tuple") or (ctx.strict and actual.kind != expected.kind):
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected a {expected.kind}")
        if len(actual.data) != len(expected.data):
            return _fail(Reason.LENGTH, f"{name} has {len(actual.data)} items; expected {len(expected.data)}")
        for i, (a, e) in enumerate(zip(actual.data, expected.data, strict=True)):
            sub = _compare(f"{name}[{i}]", a, e, ctx)
            if not sub.ok:
                return sub
        return Comparison(True)
    if expected.kind == "dict":
        if actual.kind != "dict":
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected a dict")
        missing = [k for k in expected.data if k not in actual.data]
        extra = [k for k in actual.data if k not in expected.data]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"{len(missing)} expected key{'s' if len(missing) > 1 else ''} missing")
            if extra:
                parts.append(
                    f"unexpected key{'s' if len(extra) > 1 else ''} {', '.join(repr(k) for k in extra[:MAX_INDICES])}"
                )
            return _fail(Reason.KEYS, f"{name}: " + "; ".join(parts))
        for k in expected.data:
            sub = _compare(f"{name}[{k!r}]", actual.data[k], expected.data[k], ctx)
            if not sub.ok:
                return sub
        return Comparison(True)
    if expected.kind == "str":
        if actual.kind != "str":
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected a string")
        if actual.data != expected.data:
            shown = f" (expected {expected.data!r})" if ctx.reveal else ""
            return _fail(Reason.VALUES, f"{name} is {trim(repr(actual.data))}, which is not the expected text{shown}")
        return Comparison(True)
    if expected.kind == "none":
        if actual.kind != "none":
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected None")
        return Comparison(True)
    return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")


def _comparenumeric(name: str, actual: Value, expected: Value, exp: np.ndarray, ctx: _Ctx) -> Comparison:
    act = numeric(actual)
    if act is None:
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected numbers ({expected.describe()})")
    if ctx.strict:
        if actual.origin != expected.origin:
            return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
        if (actual.dtype or str(act.dtype)) != (expected.dtype or str(exp.dtype)):
            return _fail(
                Reason.DTYPE, f"{name} has dtype {actual.dtype or act.dtype}; expected {expected.dtype or exp.dtype}"
            )
    if act.shape != exp.shape:
        hint = ""
        if act.shape == exp.shape[::-1] and act.ndim == 2:
            hint = " (the transpose of the expected shape)"
        elif act.size == exp.size:
            hint = " (same number of elements: a reshape, squeeze or unsqueeze too many or too few?)"
        return _fail(
            Reason.SHAPE, f"{name} has shape {shape_text(act.shape)}; expected shape {shape_text(exp.shape)}{hint}"
        )
    if exp.dtype.kind == "b" or act.dtype.kind == "b":
        if exp.dtype.kind != act.dtype.kind and ctx.strict:
            return _fail(Reason.DTYPE, f"{name} has dtype {act.dtype}; expected booleans")
        a, e = (
            act.astype(bool) if act.dtype.kind in "biu" else act,
            exp.astype(bool) if exp.dtype.kind in "biu" else exp,
        )
        if act.dtype.kind == "f" or exp.dtype.kind == "f":
            a, e = act.astype(float), exp.astype(float)
        bad = np.asarray(a != e)
        return _value_failure(name, act, exp, bad, ctx, boolean=True)
    if act.dtype.kind in "mM" or exp.dtype.kind in "mM":
        return _compare_times(name, act, exp, ctx)
    if act.dtype.kind in "iu" and exp.dtype.kind in "iu":  # integers: exact, never through floats
        return _value_failure(name, act, exp, np.asarray(act != exp), ctx, exact=True)
    if np.iscomplexobj(act) or np.iscomplexobj(exp):
        a, e = act.astype(np.complex128), exp.astype(np.complex128)
    else:
        a, e = act.astype(np.float64), exp.astype(np.float64)
    if ctx.rtol >= 0 and ctx.atol >= 0 and np.array_equal(a, e):
        # Equal element for element (so no NaN): no check below can fail, and this is the common case.
        return Comparison(True, total=int(a.size))
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    if (a_nan != e_nan).any():
        where = np.argwhere(a_nan & ~e_nan)
        if len(where):
            return _fail(
                Reason.NAN,
                f"{name} has NaN at {indices_text(where)} ({int((a_nan & ~e_nan).sum())} in all) "
                "where a number was expected: a division by zero, log of 0 or an overflow?",
            )
        where = np.argwhere(e_nan & ~a_nan)
        return _fail(Reason.NAN, f"{name} has numbers at {indices_text(where)} where NaN was expected")
    a_inf, e_inf = np.isinf(a), np.isinf(e)
    if (a_inf != e_inf).any() or (a_inf & (a != e)).any():
        where = np.argwhere((a_inf != e_inf) | (a_inf & (a != e)))
        return _fail(
            Reason.NAN,
            f"{name} has infinite values where they were not expected, or the wrong sign of "
            f"infinity, at {indices_text(where)}",
        )
    finite = ~(a_nan | a_inf)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        bad = finite & (diff > ctx.atol + ctx.rtol * np.abs(e))
    return _value_failure(name, act, exp, np.asarray(bad), ctx, diff=diff)


def _value_failure(
    name: str,
    act: np.ndarray,
    exp: np.ndarray,
    bad: np.ndarray,
    ctx: _Ctx,
    *,
    diff: np.ndarray | None = None,
    boolean: bool = False,
    exact: bool = False,
) -> Comparison:
    n_bad, total = int(bad.sum()), int(bad.size)
    if n_bad == 0:
        return Comparison(True, total=total)
    if not ctx.explain:
        return Comparison(False, Reason.VALUES, (), n_bad, total)
    if act.ndim == 0:
        msg = f"{name} is {number_text(act.item())}, which is not the expected value"
        if ctx.reveal:
            msg += f" {number_text(exp.item())}"
        msg += f" within rtol={ctx.rtol:g}, atol={ctx.atol:g}" if not (boolean or exact) else ""
        if (diff is not None or exact) and not boolean and not np.iscomplexobj(act) and not np.iscomplexobj(exp):
            msg += f": it is {_error_in_words(act.item(), exp.item())}"
        return Comparison(False, Reason.VALUES, (msg + ".",), n_bad, total)
    where = np.argwhere(bad)
    shown = []
    for idx in where[:MAX_INDICES]:
        t = tuple(int(i) for i in idx)
        item = f"[{', '.join(map(str, t))}] is {number_text(act[t].item())}"
        if ctx.reveal:
            item += f" (expected {number_text(exp[t].item())})"
        shown.append(item)
    more = ", ..." if n_bad > MAX_INDICES else ""
    msg = (
        f"{name}: {n_bad} / {total} elements ({100.0 * n_bad / total:.1f}%) differ"
        + ("" if boolean or exact else f" beyond tolerance (rtol={ctx.rtol:g}, atol={ctx.atol:g})")
        + f"; first: {'; '.join(shown)}{more}"
        + ("" if more else ".")
    )
    if diff is not None and not boolean:
        with np.errstate(divide="ignore", invalid="ignore"):
            rels = np.where(bad, diff / np.abs(exp.astype(np.float64) if not np.iscomplexobj(exp) else exp), 0)
        max_abs = float(np.max(np.where(bad, diff, 0)))
        max_rel = float(np.nanmax(np.abs(rels))) if rels.size else 0.0
        if ctx.reveal:
            msg += (
                f" Largest absolute difference {number_text(max_abs, 2)}, largest relative difference "
                f"{number_text(max_rel, 2)}."
            )
        else:
            # In words only: a difference as a number, next to the student's own value at the same
            # position, would give the hidden reference away.
            msg += f" The largest relative difference is {_band(max_rel)}."
    return Comparison(False, Reason.VALUES, (msg,), n_bad, total)


def _error_in_words(actual: Any, expected: Any) -> str:
    """The direction and rough size of a scalar's error, in words. A number here (a relative
    difference next to the student's own value) would let them work out the hidden reference, so
    the size is only a band: within 10%, within a factor of 2, or beyond."""
    if actual < 0 < expected or expected < 0 < actual:
        return "of the wrong sign"
    direction = "too large" if actual > expected else "too small"
    if expected == 0:
        return direction
    rel = abs(fractions.Fraction(actual) - fractions.Fraction(expected)) / abs(fractions.Fraction(expected))
    return f"slightly {direction}" if rel <= 0.1 else direction if rel <= 1.0 else f"much {direction}"


def _band(rel: float) -> str:
    """A relative difference as a band a student can act on but not invert."""
    return "under 10%" if rel <= 0.1 else "between 10% and 100%" if rel <= 1.0 else "over 100%"


def _number(v: Value) -> Any:
    """A single number as Python holds it exactly (an int of any size, a float, a complex), else None."""
    if v.kind == "int":
        return v.data
    if v.kind == "array" and v.data.ndim == 0 and v.data.dtype.kind in "iufc":
        return v.data.item()
    return None


def _compare_int(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    """An integer beyond 64 bits (a factorial, a binomial): exact against an integer, within tolerance
    against a float, never through a float that would round it."""
    a, e = _number(actual), _number(expected)
    if a is None or e is None or ctx.strict and actual.origin != expected.origin:
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    if _numbers_match(a, e, ctx):
        return Comparison(True, total=1)
    if not ctx.explain:
        return Comparison(False, Reason.VALUES, (), 1, 1)
    mine = number_text(a)
    shown = f" {number_text(e)}" if ctx.reveal else ""
    close = "" if isinstance(a, int) and isinstance(e, int) else f" within rtol={ctx.rtol:g}, atol={ctx.atol:g}"
    words = f": it is {_error_in_words(a, e)}" if not isinstance(a, complex) and not isinstance(e, complex) else ""
    if isinstance(a, float) and not math.isfinite(a) or isinstance(e, float) and not math.isfinite(e):
        words = ""
    return Comparison(
        False, Reason.VALUES, (f"{name} is {mine}, which is not the expected value{shown}{close}{words}.",), 1, 1
    )


def _numbers_match(a: Any, e: Any, ctx: _Ctx) -> bool:
    """Two numbers: integers exactly, others by numpy's rule, computed exactly (no rounding of a
    big integer to a float, and no overflow)."""
    if isinstance(a, bool) or isinstance(e, bool):
        return bool(a == e)
    if isinstance(a, int) and isinstance(e, int):
        return a == e
    if isinstance(a, complex) or isinstance(e, complex):
        with np.errstate(all="ignore"):
            return bool(np.isclose(complex(a), complex(e), rtol=ctx.rtol, atol=ctx.atol))
    try:
        fa, fe = fractions.Fraction(a), fractions.Fraction(e)
    except (ValueError, OverflowError):  # NaN or infinity: equal only to itself
        return bool(a == e) or (isinstance(a, float) and isinstance(e, float) and math.isnan(a) and math.isnan(e))
    return abs(fa - fe) <= fractions.Fraction(ctx.atol) + fractions.Fraction(ctx.rtol) * abs(fe)


def _missing(x: Any) -> bool:
    """None, NaN, pandas' NA and NaT: a missing value, equal to any other missing value."""
    if x is None:
        return True
    if isinstance(x, (float, np.floating)):
        return bool(np.isnan(x))
    if isinstance(x, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(x))
    return type(x).__name__ in ("NAType", "NaTType")


def _same(a: Any, e: Any, ctx: _Ctx) -> bool:
    """Two items of an array of objects or of a column: numbers by ``_numbers_match``, missing
    values alike, anything else by Python's ``==`` (arrays inside them by ``np.array_equal``)."""
    if _missing(a) or _missing(e):
        return _missing(a) and _missing(e)
    numbers = (int, float, complex, np.number)
    if isinstance(a, numbers) and isinstance(e, numbers) and not isinstance(a, (bool, np.bool_)):
        return not isinstance(e, (bool, np.bool_)) and _numbers_match(_py(a), _py(e), ctx)
    try:
        return bool(a == e)
    except (ValueError, TypeError):  # arrays, or objects whose == is not a truth value
        try:
            return bool(np.array_equal(a, e))
        except Exception:  # noqa: BLE001 - not comparable: not the same
            return False


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _compare_items(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    """Arrays of strings or of Python objects: the shape, then each item."""
    if actual.kind not in ("text", "objects", "list", "tuple") or ctx.strict and actual.kind != expected.kind:
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    mine = to_python(actual)
    try:
        act = np.array(mine, dtype=object) if actual.kind in ("list", "tuple") else mine
    except ValueError:  # a ragged list: not an array of the expected shape
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    exp = to_python(expected)
    if act.shape != exp.shape:
        return _fail(Reason.SHAPE, f"{name} has shape {shape_text(act.shape)}; expected shape {shape_text(exp.shape)}")
    flat_a, flat_e = act.reshape(-1), exp.reshape(-1)
    bad = np.array([not _same(a, e, ctx) for a, e in zip(flat_a, flat_e, strict=True)], dtype=bool)
    return _items_failure(name, act, bad.reshape(act.shape), ctx, exp)


def _items_failure(name: str, act: np.ndarray, bad: np.ndarray, ctx: _Ctx, exp: np.ndarray) -> Comparison:
    """Which items differ, showing the student's own items (and the expected ones only if revealed)."""
    n_bad, total = int(bad.sum()), int(bad.size)
    if n_bad == 0:
        return Comparison(True, total=total)
    if not ctx.explain:
        return Comparison(False, Reason.VALUES, (), n_bad, total)
    if act.ndim == 0:
        shown = f" {trim(repr(_py(exp[()])), 40)}" if ctx.reveal else ""
        return Comparison(
            False,
            Reason.VALUES,
            (f"{name} is {trim(repr(_py(act[()])), 60)}, which is not the expected value{shown}.",),
        )
    parts = []
    for idx in np.argwhere(bad)[:MAX_INDICES]:
        t = tuple(int(i) for i in idx)
        item = f"[{', '.join(map(str, t))}] is {trim(repr(_py(act[t])), 40)}"
        if ctx.reveal:
            item += f" (expected {trim(repr(_py(exp[t])), 40)})"
        parts.append(item)
    more = ", ..." if n_bad > MAX_INDICES else "."
    msg = f"{name}: {n_bad} / {total} items ({100.0 * n_bad / total:.1f}%) differ; first: {'; '.join(parts)}{more}"
    return Comparison(False, Reason.VALUES, (msg,), n_bad, total)


def _compare_times(name: str, act: np.ndarray, exp: np.ndarray, ctx: _Ctx) -> Comparison:
    """datetime64 and timedelta64: exactly, NaT matching NaT."""
    if act.dtype.kind != exp.dtype.kind:
        what = "dates and times" if exp.dtype.kind == "M" else "time spans"
        return _fail(Reason.DTYPE, f"{name} has dtype {act.dtype}; expected {what}")
    with np.errstate(all="ignore"):
        bad = (act != exp) & ~(np.isnat(act) & np.isnat(exp))
    return _items_failure(name, act.astype(object), np.asarray(bad), ctx, exp.astype(object))


def _compare_set(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    """Sets and frozensets: the same items, in any order. The student's unexpected items are theirs
    to see; the missing ones are only counted."""
    if actual.kind != "set" or ctx.strict and actual.origin != expected.origin:
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected a {expected.origin}")
    mine, wanted = to_python(actual), to_python(expected)
    if mine == wanted:
        return Comparison(True, total=len(wanted))
    extra, missing = [x for x in mine if x not in wanted], [x for x in wanted if x not in mine]
    parts = []
    if extra:
        shown = ", ".join(trim(repr(x), 30) for x in sorted(extra, key=repr)[:MAX_INDICES])
        parts.append(
            f"{len(extra)} unexpected item{'s' if len(extra) > 1 else ''} ({shown}{', ...' if len(extra) > MAX_INDICES else ''})"
        )
    if missing:
        shown = f" ({', '.join(trim(repr(x), 30) for x in missing[:MAX_INDICES])})" if ctx.reveal else ""
        parts.append(f"{len(missing)} expected item{'s' if len(missing) > 1 else ''} missing{shown}")
    return _fail(Reason.VALUES, f"{name} has {len(mine)} item{'s' if len(mine) != 1 else ''}; " + "; ".join(parts))


def _compare_view(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    """A dict's view: keys as a set and items as a dict, as Python compares them; values as a list
    in the dict's order (Python compares two values views by identity, which no capture keeps)."""
    part = expected.origin.rsplit("_", 1)[-1]
    if actual.kind != "view" or not actual.origin.endswith(part) or ctx.strict and actual.origin != expected.origin:
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    mine: Value
    wanted: Value
    if part == "items":
        mine, wanted = (Value("dict", {to_python(p.data[0]): p.data[1] for p in v.data}) for v in (actual, expected))
    else:
        kind = "list" if part == "values" else "set"
        mine, wanted = (Value(kind, v.data, origin=kind) for v in (actual, expected))
    return _compare(name, mine, wanted, ctx)


def _labels_text(labels: Any) -> str:
    return trim(str([_py(x) for x in labels]), 120)


def _labels_match(a: Any, e: Any) -> bool:
    return len(a) == len(e) and all(
        _missing(x) and _missing(y) or str(_py(x)) == str(_py(y)) for x, y in zip(a, e, strict=True)
    )


def _compare_pandas(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    """A frame, series, index or pandas array: its kind, shape, column labels, row labels, then each
    column's values (numbers within tolerance, anything else exactly)."""
    exp = expected.data
    if actual.kind != expected.kind:
        numbers = numeric(expected)
        if actual.kind == NUMERIC and not ctx.strict and numbers is not None:
            return _comparenumeric(name, actual, Value("array", numbers, origin=expected.origin), numbers, ctx)
        if expected.kind == "frame":
            return _fail(
                Reason.TYPE,
                f"{name} is {actual.describe()}; expected a DataFrame with columns {_labels_text(exp.columns)}",
            )
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    act = actual.data
    if expected.kind == "frame":
        if not _labels_match(act.columns, exp.columns):
            same = sorted(map(str, act.columns)) == sorted(map(str, exp.columns))
            how = " (the same columns, in another order)" if same else ""
            return _fail(
                Reason.LABELS,
                f"{name}: expected a DataFrame with columns {_labels_text(exp.columns)}; "
                f"yours has {_labels_text(act.columns)}{how}",
            )
        if len(act) != len(exp):
            return _fail(Reason.SHAPE, f"{name} has {len(act)} rows; expected {len(exp)}")
    elif len(act) != len(exp):
        return _fail(Reason.SHAPE, f"{name} has {len(act)} items; expected {len(exp)}")
    if expected.kind in ("frame", "series"):
        if not _labels_match(act.index, exp.index):
            same = sorted(map(str, act.index)) == sorted(map(str, exp.index))
            what = f"{name}'s index (row labels) is {_labels_text(act.index)}"
            if ctx.reveal:
                what += f"; expected {_labels_text(exp.index)}"
            elif same:
                what += "; the expected labels, in another order (sort it, or keep the original order?)"
            else:
                what += "; it is not the expected labels"
            return _fail(Reason.LABELS, what)
        if ctx.strict and expected.kind == "series" and act.name != exp.name:
            return _fail(
                Reason.LABELS, f"{name} is named {trim(repr(act.name), 40)}; expected {trim(repr(exp.name), 40)}"
            )
    columns = (
        [(f"{name}[{_py(c)!r}]", act.iloc[:, i], exp.iloc[:, i]) for i, c in enumerate(exp.columns)]
        if expected.kind == "frame"
        else [(name, act, exp)]
    )
    total = 0
    for label, a, e in columns:
        result = _compare_column(label, a, e, ctx)
        if not result.ok:
            return result
        total += result.total
    return Comparison(True, total=total)


def _compare_column(name: str, act: Any, exp: Any, ctx: _Ctx) -> Comparison:
    import pandas as pd

    if ctx.strict and act.dtype != exp.dtype:
        return _fail(Reason.DTYPE, f"{name} has dtype {act.dtype}; expected {exp.dtype}")
    a_num, e_num = _column_numbers(act, pd), _column_numbers(exp, pd)
    if a_num is not None and e_num is not None:
        return _comparenumeric(name, Value("array", a_num), Value("array", e_num), e_num, ctx)
    if e_num is not None and a_num is None:
        return _fail(Reason.DTYPE, f"{name} has dtype {act.dtype}; expected numbers")
    a_obj, e_obj = np.asarray(act, dtype=object), np.asarray(exp, dtype=object)
    bad = np.array([not _same(x, y, ctx) for x, y in zip(a_obj, e_obj, strict=True)], dtype=bool)
    return _items_failure(name, a_obj, bad, ctx, e_obj)


def _column_numbers(values: Any, pd: Any) -> np.ndarray | None:
    """A column's values as a NumPy array of numbers (missing ones NaN), or None if they are not numbers."""
    dtype = values.dtype
    if isinstance(dtype, np.dtype):
        arr = np.asarray(values)
        return arr if arr.dtype.kind in "biufcmM" else None
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        with np.errstate(all="ignore"):
            try:
                kind = np.complex128 if pd.api.types.is_complex_dtype(dtype) else np.float64
                if not values.isna().any() and dtype.name in ("boolean",) + tuple(
                    f"{p}{n}" for p in ("Int", "UInt") for n in (8, 16, 32, 64)
                ):
                    return np.asarray(values.to_numpy(dtype=dtype.numpy_dtype))
                return np.asarray(values.to_numpy(dtype=kind, na_value=np.nan))
            except (TypeError, ValueError):
                return None
    return None


def _fail(reason: Reason, message: str) -> Comparison:
    return Comparison(False, reason, (message + ("" if message.endswith((".", "?")) else "."),))
