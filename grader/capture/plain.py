"""Strict readers of the captured forms made of plain parts only (no captured value inside another):
numbers and times as bytes, integers as hexadecimal digits, strings in arrays, bytes, fractions,
decimals, ranges and Python's times. ``grader.capture.decoding`` reads the rest with them.
"""

from __future__ import annotations

import base64
import math
import re
from typing import TYPE_CHECKING, Any

from grader.capture.values import DTYPES, MAX_ITEMS, MAX_STR, TIMES, Value
from grader.errors import ProtocolError

if TYPE_CHECKING:
    import numpy as np

_DTYPES: dict[str, tuple[np.dtype[Any], np.dtype[Any]]] = {}  # each of DTYPES, and its little-endian form, made once
_TEXT_DTYPE = re.compile(r"[<>|=]?[US][0-9]{1,7}")


def decode_strings(obj: dict[str, Any]) -> Value:
    """An array of objects that are strings, None or NaN, sent as one list."""
    import numpy as np

    shape, texts, nan, origin = shape_of(obj.get("shape")), obj.get("strs"), obj.get("nan", []), obj.get("origin", "")
    if not (isinstance(texts, list) and isinstance(nan, list) and isinstance(origin, str)):
        raise ProtocolError("a captured array of strings is malformed")
    if len(texts) != math.prod(shape) or not all(x is None or type(x) is str and len(x) <= MAX_STR for x in texts):
        raise ProtocolError("a captured array of strings is malformed")
    if not all(type(i) is int and 0 <= i < len(texts) and texts[i] is None for i in nan):
        raise ProtocolError("a captured array of strings is malformed")
    missing, not_a_number = Value("none", None), Value("array", np.array(np.nan), origin="float")
    items = [missing if x is None else Value("str", x, origin="str") for x in texts]
    for i in nan:
        items[i] = not_a_number
    return Value("objects", tuple(items), origin=origin[:60], dims=shape)


def shape_of(obj: Any) -> tuple[int, ...]:
    if not isinstance(obj, list) or len(obj) > 32 or not all(type(n) is int and 0 <= n for n in obj):
        raise ProtocolError("a captured array has a malformed shape")
    if math.prod(obj) > MAX_ITEMS * 1000:
        raise ProtocolError("a captured array is too large")
    return tuple(obj)


def decode_plain(t: str, obj: dict[str, Any]) -> Value:
    """Exact numbers, bytes, strings in arrays, Python's times: rebuilt here from checked parts."""
    import datetime
    import decimal
    import fractions

    import numpy as np

    try:
        if t == "int":
            return Value("int", int_of(obj.get("x")), origin="int")
        if t == "bytes":
            origin = obj.get("origin", "bytes")
            raw = base64.b64decode(str_of(obj.get("b64"), 2 * MAX_STR), validate=True)
            if origin not in ("bytes", "bytearray", "numpy.bytes_"):
                raise ValueError(origin)
            return Value("bytes", np.bytes_(raw) if origin == "numpy.bytes_" else raw, origin=origin)
        if t == "text":
            dtype, shape, texts = obj.get("dtype"), shape_of(obj.get("shape")), obj.get("v")
            if not isinstance(dtype, str) or not _TEXT_DTYPE.fullmatch(dtype) or not isinstance(texts, list):
                raise ValueError(dtype)
            if len(texts) != math.prod(shape) or not all(type(x) is str and len(x) <= MAX_STR for x in texts):
                raise ValueError(shape)
            items: list[Any] = [x.encode("latin-1") for x in texts] if "S" in dtype else texts
            arr = np.array(items, dtype=dtype).reshape(shape)
            arr.setflags(write=False)
            return Value("text", arr, origin=str_of(obj.get("origin", "numpy.ndarray"), 60))
        if t == "fraction":
            return Value(
                "scalar", fractions.Fraction(int_of(obj.get("n")), int_of(obj.get("d"))), origin="fractions.Fraction"
            )
        if t == "decimal":
            return Value("scalar", decimal.Decimal(str_of(obj.get("v"), 1000)), origin="decimal.Decimal")
        parts = obj.get("v")
        if not isinstance(parts, list) or not all(type(n) is int and abs(n) < 2**63 for n in parts):
            raise ValueError(parts)
        if t == "range":
            return Value("scalar", range(*parts), origin="range")
        kind, tz = obj.get("k"), obj.get("tz")
        zone = datetime.timezone(datetime.timedelta(microseconds=tz)) if type(tz) is int else None
        if tz is not None and zone is None:
            raise ValueError(tz)
        value: Any
        if kind == "timedelta" and len(parts) == 3:
            value = datetime.timedelta(days=parts[0], seconds=parts[1], microseconds=parts[2])
        elif kind == "date" and len(parts) == 3:
            value = datetime.date(*parts)
        elif kind == "datetime" and len(parts) == 7:
            y, mo, d, h, mi, sec, us = parts
            value = datetime.datetime(y, mo, d, h, mi, sec, us, tzinfo=zone)
        elif kind == "time" and len(parts) == 4:
            value = datetime.time(parts[0], parts[1], parts[2], parts[3], tzinfo=zone)
        else:
            raise ValueError(kind)
        return Value("scalar", value, origin=f"datetime.{kind}")
    except (ValueError, TypeError, ArithmeticError, OverflowError):
        raise ProtocolError(f"a captured {t} is malformed") from None


def int_of(x: Any) -> int:
    text = str_of(x, MAX_STR)
    if not re.fullmatch(r"-?[0-9a-f]+", text):
        raise ValueError(text[:20])
    return int(text, 16)


def str_of(x: Any, limit: int) -> str:
    if type(x) is not str or len(x) > limit:
        raise ValueError("not a string")
    return x


def decode_array(obj: dict[str, Any]) -> Value:
    import numpy as np

    dtype, shape, b64 = obj.get("dtype"), obj.get("shape"), obj.get("b64")
    if dtype not in DTYPES and not (isinstance(dtype, str) and TIMES.fullmatch(dtype)):
        raise ProtocolError(f"a captured array has an unsupported dtype {str(dtype)[:20]!r}")
    if not isinstance(shape, list) or len(shape) > 32 or not all(type(n) is int and 0 <= n for n in shape):
        raise ProtocolError("a captured array has a malformed shape")
    if not isinstance(b64, str):
        raise ProtocolError("a captured array has no data")
    native, dt = _DTYPES.get(dtype) or _DTYPES.setdefault(dtype, (np.dtype(dtype), np.dtype(dtype).newbyteorder("<")))
    count = math.prod(shape)
    if count * dt.itemsize != (len(b64) // 4) * 3 - b64[-2:].count("="):
        raise ProtocolError("a captured array's data does not match its shape")
    try:
        raw = base64.b64decode(b64, validate=True)
    except ValueError:
        raise ProtocolError("a captured array's data is not base64") from None
    arr = np.frombuffer(raw, dtype=dt).reshape(shape).astype(native, copy=True)
    arr.setflags(write=False)
    grad = obj.get("grad")
    if grad is not None and type(grad) is not bool:
        raise ProtocolError("a captured tensor's requires_grad is malformed")
    return Value(
        "array",
        arr,
        origin=str(obj.get("origin", ""))[:60],
        dtype=str(obj.get("odtype", dtype))[:40],
        requires_grad=grad,
    )
