"""Comparing a captured value with the reference, and saying how they differ.

Comparing and reporting are separate: ``compare`` returns a ``Comparison``; its ``messages``
are written for a student. The order of checks is fixed, as in numpy.testing: missing -> type ->
shape/dtype -> NaN/inf positions -> values. The value rule is numpy's
``|actual - expected| <= atol + rtol * |expected|``.

Expected values never appear in a message unless ``reveal`` is set; what may always be said is
what was expected *in kind*: the type, the shape, the property.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.capture import MAX_INDICES, Value, indices_text, number_text, numeric, shape_text, trim
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
    if expected.kind in ("frame", "series"):
        return _compare_frame(name, actual, expected, ctx)
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
        msg += f" within rtol={ctx.rtol:g}, atol={ctx.atol:g}" if not boolean else ""
        if diff is not None and not boolean and not np.iscomplexobj(act) and not np.iscomplexobj(exp):
            msg += f": it is {_error_in_words(float(act.item()), float(exp.item()))}"
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
        + ("" if boolean else f" beyond tolerance (rtol={ctx.rtol:g}, atol={ctx.atol:g})")
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


def _error_in_words(actual: float, expected: float) -> str:
    """The direction and rough size of a scalar's error, in words. A number here (a relative
    difference next to the student's own value) would let them work out the hidden reference, so
    the size is only a band: within 10%, within a factor of 2, or beyond."""
    if actual * expected < 0:
        return "of the wrong sign"
    direction = "too large" if actual > expected else "too small"
    if expected == 0:
        return direction
    rel = abs(actual - expected) / abs(expected)
    return f"slightly {direction}" if rel <= 0.1 else direction if rel <= 1.0 else f"much {direction}"


def _band(rel: float) -> str:
    """A relative difference as a band a student can act on but not invert."""
    return "under 10%" if rel <= 0.1 else "between 10% and 100%" if rel <= 1.0 else "over 100%"


def _compare_frame(name: str, actual: Value, expected: Value, ctx: _Ctx) -> Comparison:
    if actual.kind != expected.kind:
        if actual.kind == NUMERIC and not ctx.strict:
            return _comparenumeric(name, actual, expected.data, expected.data.data, ctx)
        return _fail(Reason.TYPE, f"{name} is {actual.describe()}; expected {expected.describe()}")
    if tuple(map(str, actual.index)) != tuple(map(str, expected.index)):
        what = f"{name}'s index (row labels) is {trim(str(list(actual.index)))}"
        return _fail(
            Reason.LABELS,
            what + (f"; expected {list(expected.index)}" if ctx.reveal else "; it is not the expected labels"),
        )
    if expected.kind == "frame" and tuple(map(str, actual.columns)) != tuple(map(str, expected.columns)):
        what = f"{name}'s columns are {trim(str(list(actual.columns)))}"
        return _fail(
            Reason.LABELS,
            what + (f"; expected {list(expected.columns)}" if ctx.reveal else "; they are not the expected labels"),
        )
    return _comparenumeric(f"{name}'s values", actual.data, expected.data, expected.data.data, ctx)


def _fail(reason: Reason, message: str) -> Comparison:
    return Comparison(False, reason, (message + ("" if message.endswith((".", "?")) else "."),))
