"""The student side: a Python value as JSON-safe plain data (``encode``).

Numbers and times as raw little-endian bytes (base64) with their dtype; integers beyond 64 bits as
hexadecimal digits; strings, bytes, bytearrays, lists, tuples, sets, dicts (any hashable key) and their views, arrays of any
dtype (strings as text, objects item by item); pandas frames, series, indexes, arrays and scalars
with their dtypes (category, string, nullable, time zones, periods, intervals), labels and names;
torch tensors with their type, dtype and ``requires_grad``; classes as the names that identify
them (``grader.capture.classes``). Anything else fails with
``CaptureFailed``, which says why. Sizes are bounded by a byte budget, item counts and depth.

Runs in the sandboxed student process: it imports nothing of the grader's side.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from grader.capture import classes
from grader.capture.values import (
    DICTS,
    DTYPES,
    FACTORIES,
    MASKED,
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STR,
    TIMES,
    trim,
)
from grader.errors import CaptureFailed

if TYPE_CHECKING:
    import numpy as np

# ``d.keys()``, ``d.values()``, ``d.items()`` of a dict (a Counter's, a defaultdict's) and of an
# OrderedDict: their exact types, by name
_MAPPINGS: tuple[dict[Any, Any], ...] = ({}, collections.OrderedDict())
_VIEW_TYPES = {type(v): type(v).__name__ for m in _MAPPINGS for v in (m.keys(), m.values(), m.items())}


def encode(value: Any, *, budget: list[int], depth: int = 0) -> dict[str, Any]:
    """Plain data for ``value``; ``budget`` is a one-element list of bytes still allowed."""
    import numpy as np

    if depth > MAX_DEPTH:
        raise CaptureFailed(f"is nested more than {MAX_DEPTH} levels deep")
    if value is None:
        return {"t": "none"}
    kind = type(value)
    if kind is bool:
        return {"t": "bool", "v": value}
    if kind is str or kind is np.str_:
        out = {"t": "str", "v": _text(str(value), budget)}
        if kind is np.str_:
            out["origin"] = "numpy.str_"
        return out
    if kind is int and not -(2**63) <= value < 2**63:  # beyond int64: exact, as hexadecimal digits
        return {"t": "int", "x": _hex(value, budget)}
    if kind in (int, float, complex):
        return _array(np.array(value), kind.__name__, budget)
    if kind is list or kind is tuple:  # the common containers first: no library's type is one
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        return {"t": kind.__name__, "items": [encode(v, budget=budget, depth=depth + 1) for v in value]}
    if kind is dict:
        return _dict(value, budget, depth)
    if kind is bytes or kind is np.bytes_ or kind is bytearray:
        return _bytes(bytes(value), "numpy.bytes_" if kind is np.bytes_ else kind.__name__, budget)
    if kind in _VIEW_TYPES:  # keys, values or (key, value) tuples, in the dict's order
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        items = [encode(v, budget=budget, depth=depth + 1) for v in value]
        return {"t": "view", "k": _VIEW_TYPES[kind], "items": items}
    if isinstance(value, np.dtype):  # a dtype, as the values of an empty array of it
        if value.fields is not None:
            raise CaptureFailed("is a NumPy structured dtype, which cannot be compared as data")
        return {
            "t": "dtype",
            "values": {"t": "values", "k": "numpy", "values": _ndarray(np.empty(0, value), "", budget, depth)},
        }
    if isinstance(value, np.generic):
        if isinstance(value, np.void):
            raise CaptureFailed("is a NumPy structured record, which cannot be compared as data")
        return _array(np.asarray(np.ndarray.copy(np.array([value]))[0]), f"numpy.{kind.__name__}", budget)
    if isinstance(value, np.ndarray):
        origin = "numpy.ndarray" if kind is np.ndarray else f"{kind.__module__}.{kind.__name__}"
        return _ndarray(np.ndarray.view(value, np.ndarray), origin, budget, depth)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _tensor(value, torch, budget)
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        found = _pandas(value, pandas, budget, depth)
        if found is not None:
            return found
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple: equal to its plain tuple
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        return {"t": "tuple", "items": [encode(v, budget=budget, depth=depth + 1) for v in value]}
    if kind in (set, frozenset):
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        return {
            "t": "set",
            "items": [encode(v, budget=budget, depth=depth + 1) for v in value],
            "origin": kind.__name__,
        }
    if kind.__name__ in DICTS and kind.__module__ in ("builtins", "collections"):
        return _dict(value, budget, depth)
    if isinstance(value, dict):  # a library's dict (plotnine's ``aes``), or the notebook's own: its items, as a dict
        return _dict(value, budget, depth)
    found = _scalar(value, budget)
    if found is not None:
        return found
    if issubclass(kind, type):  # a class: the names that identify it, never its code
        return classes.describe(value)
    if kind is classes.ClassRef:  # the grader's record of one, written back (``to_wire``)
        return classes.ClassRef.wire(value)
    if torch is not None and isinstance(value, torch.nn.Module):
        raise CaptureFailed(f"is a {kind.__name__} module, not numbers; call it on an input to get a tensor")
    if callable(value):
        raise CaptureFailed(f"is a function ({kind.__name__}), not a value")
    raise CaptureFailed(f"is a {kind.__module__}.{kind.__qualname__}, which cannot be compared as data")


def _over(budget: list[int], size: int) -> str:
    """Why ``size`` bytes do not fit. ``budget`` may also say the whole allowances: one capture's
    (``budget[1]``, ``limits.capture_mb``), the run's (``budget[2]``) and what was left of the run's
    when this capture began (``budget[3]``), so that a small value refused because the capture, or
    the run, has carried its fill says which."""
    if len(budget) > 1 and size > budget[1]:
        return f"more than the grader will carry ({budget[1] / 2**20:.0f} MB at a time, `limits.capture_mb`)"
    if len(budget) > 3 and budget[3] < budget[1]:
        return (
            f"more than is left of what the grader carries out of one run ({budget[2] / 2**20:.0f} MB in all, "
            f"{budget[2] // budget[1]} times `limits.capture_mb`) after the values carried before it"
        )
    if len(budget) > 1:
        return (
            f"more than is left of what the grader carries at a time ({budget[1] / 2**20:.0f} MB, "
            "`limits.capture_mb`) after the values carried with it"
        )
    return "more than the grader will carry"


def _text(text: str, budget: list[int]) -> str:
    if len(text) > MAX_STR:
        raise CaptureFailed(f"is a string of {len(text):,} characters, more than {MAX_STR:,}")
    if len(text) > budget[0]:
        raise CaptureFailed("holds more text than the grader will carry")
    budget[0] -= len(text)
    return text


def _hex(n: int, budget: list[int]) -> str:
    """An integer of any size as hexadecimal digits (which Python reads back at any length)."""
    return _text(format(n, "x"), budget)


def _bytes(data: bytes, origin: str, budget: list[int]) -> dict[str, Any]:
    if len(data) > MAX_STR:
        raise CaptureFailed(f"is {len(data):,} bytes, more than the grader will carry")
    if len(data) > budget[0]:
        raise CaptureFailed(f"is {len(data):,} bytes, {_over(budget, len(data))}")
    budget[0] -= len(data)
    return {"t": "bytes", "b64": base64.b64encode(data).decode("ascii"), "origin": origin}


def _dict(value: Any, budget: list[int], depth: int) -> dict[str, Any]:
    if len(value) > MAX_ITEMS:
        raise CaptureFailed(f"has {len(value):,} keys, more than {MAX_ITEMS:,}")
    items = []
    for k, v in dict.items(value):  # a string key as it is; any other as an encoded value
        key = k if type(k) is str else encode(k, budget=budget, depth=depth + 1)
        items.append([key, encode(v, budget=budget, depth=depth + 1)])
    out: dict[str, Any] = {"t": "dict", "items": items}
    kind = type(value)
    origin = DICTS.get(kind.__name__, "dict") if kind.__module__ in ("builtins", "collections") else "dict"
    if origin != "dict":
        out["origin"] = origin
    factory = value.default_factory if origin == "collections.defaultdict" else None
    if factory is not None:
        name = getattr(factory, "__name__", "")
        if FACTORIES.get(name) is factory:
            out["factory"] = name
        else:  # the student's function stays here: its items cross, and its name
            out["made_by"] = trim(name if isinstance(name, str) and name else "a function", 60)
    return out


def _ndarray(arr: np.ndarray, origin: str, budget: list[int], depth: int) -> dict[str, Any]:
    """An array of any dtype: numbers and times as bytes, strings as text, objects item by item."""
    if arr.size > MAX_ITEMS and arr.dtype.kind in "OUS":
        raise CaptureFailed(f"has {arr.size:,} items, more than {MAX_ITEMS:,}")
    if arr.dtype.kind in "US":
        items = arr.reshape(-1).tolist()
        texts = [x.decode("latin-1") if isinstance(x, bytes) else x for x in items]
        for x in texts:
            _text(x, budget)
        return {"t": "text", "dtype": arr.dtype.str, "shape": list(arr.shape), "v": texts, "origin": origin}
    if arr.dtype.kind == "O":
        flat = arr.reshape(-1)
        if all(type(x) is str or x is None or type(x) is float and x != x for x in flat):
            # strings with missing ones (a pandas column of text): one list, not an object per item
            texts = [_text(x, budget) if type(x) is str else None for x in flat]
            nan = [i for i, x in enumerate(flat) if type(x) is float]
            return {"t": "objects", "shape": list(arr.shape), "strs": texts, "nan": nan, "origin": origin}
        items = [encode(x, budget=budget, depth=depth + 1) for x in flat]
        return {"t": "objects", "shape": list(arr.shape), "items": items, "origin": origin}
    if arr.dtype.fields is not None:
        raise CaptureFailed("is a NumPy structured array, which cannot be compared as data")
    return _array(arr, origin, budget)


def _array(arr: np.ndarray, origin: str, budget: list[int], **meta: Any) -> dict[str, Any]:
    import numpy as np

    if arr.dtype.kind == "O":
        raise CaptureFailed("holds Python objects (dtype object), not numbers")
    if arr.dtype.kind in "mM" and TIMES.fullmatch(arr.dtype.name):
        pass  # datetime64 and timedelta64: 64-bit integers with a unit, NaT the smallest
    elif arr.dtype.kind not in "biufc" or arr.dtype.name not in DTYPES:
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        else:
            raise CaptureFailed(f"has dtype {arr.dtype}, which is not a plain numeric type")
    nbytes = int(arr.size) * arr.dtype.itemsize
    if nbytes > budget[0]:
        raise CaptureFailed(f"is an array of {nbytes / 1e6:.1f} MB, {_over(budget, nbytes)}")
    budget[0] -= nbytes
    data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    out = {
        "t": "array",
        "dtype": arr.dtype.name,
        "shape": [int(n) for n in arr.shape],
        "b64": base64.b64encode(data).decode("ascii"),
        "origin": origin,
    }
    out.update(meta)
    return out


def _tensor(t: Any, torch: Any, budget: list[int]) -> dict[str, Any]:
    import numpy as np

    origin = f"{type(t).__module__}.{type(t).__name__}".replace("torch.nn.parameter.", "torch.nn.")
    guard = getattr(torch._C, "DisableTorchFunctionSubclass", None)
    with guard() if guard else contextlib.nullcontext():
        requires_grad = bool(torch.Tensor.requires_grad.__get__(t))
        t = torch.Tensor.detach(t)
        if t.layout != torch.strided:
            t = t.to_dense()
        t = t.cpu()
        dtype = str(t.dtype)
        shape = [int(n) for n in t.shape]
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.float()
        if t.is_quantized or t.is_complex() and t.dtype not in (torch.complex64, torch.complex128):
            raise CaptureFailed(f"is a tensor of dtype {dtype}, which cannot be compared as data")
        arr = t.numpy()
    enc = _array(np.asarray(arr), origin, budget, odtype=dtype, grad=requires_grad)
    enc["shape"] = shape
    return enc


def _scalar(value: Any, budget: list[int]) -> dict[str, Any] | None:
    """Python's exact numbers and times (``Fraction``, ``Decimal``, ``datetime``...), and ``range``."""
    import datetime
    import decimal
    import fractions

    kind = type(value)
    if kind is fractions.Fraction:
        return {"t": "fraction", "n": _hex(value.numerator, budget), "d": _hex(value.denominator, budget)}
    if kind is decimal.Decimal:
        return {"t": "decimal", "v": _text(str(value), budget)}
    if kind is range:
        if not all(-(2**63) <= n < 2**63 for n in (value.start, value.stop, value.step)):
            raise CaptureFailed("is a range beyond 64-bit integers")
        return {"t": "range", "v": [value.start, value.stop, value.step]}
    if kind is datetime.timedelta:
        return {"t": "time", "k": "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if kind is datetime.date:
        return {"t": "time", "k": "date", "v": [value.year, value.month, value.day]}
    if kind in (datetime.datetime, datetime.time):
        parts = [value.hour, value.minute, value.second, value.microsecond]
        if kind is datetime.datetime:
            parts = [value.year, value.month, value.day, *parts]
        out: dict[str, Any] = {"t": "time", "k": kind.__name__, "v": parts}
        offset = value.utcoffset()
        if offset is not None:
            out["tz"] = offset // datetime.timedelta(microseconds=1)
        return out
    return None


def _pandas(value: Any, pandas: Any, budget: list[int], depth: int) -> dict[str, Any] | None:
    """A pandas frame, series, index, array or scalar, with its dtypes, labels and names; None for
    anything else."""
    import numpy as np

    if isinstance(value, pandas.DataFrame):
        if type(value) is not pandas.DataFrame:
            value = pandas.DataFrame(value)
        return {
            "t": "frame",
            "columns": [_column(value.iloc[:, i], pandas, budget, depth) for i in range(value.shape[1])],
            "index": _index(value.index, pandas, budget, depth),
            "labels": _index(value.columns, pandas, budget, depth),
            "origin": "pandas.DataFrame",
        }
    if isinstance(value, pandas.Series):
        return {
            "t": "series",
            "values": _column(value, pandas, budget, depth),
            "index": _index(value.index, pandas, budget, depth),
            "name": encode(value.name, budget=budget, depth=depth + 1),
            "origin": "pandas.Series",
        }
    if type(value).__name__ == "FrozenList" and isinstance(value, list):  # an index's names or levels
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        items = [encode(v, budget=budget, depth=depth + 1) for v in value]
        return {"t": "list", "items": items, "origin": "pandas.FrozenList"}
    if isinstance(value, pandas.api.extensions.ExtensionDtype):
        return {"t": "dtype", "values": _values(pandas.array([], dtype=value), pandas, budget, depth)}
    if isinstance(value, pandas.Index):
        return _index(value, pandas, budget, depth)
    if isinstance(value, pandas.api.extensions.ExtensionArray):
        out = _values(value, pandas, budget, depth)
        out["origin"] = f"pandas.{type(value).__name__}"
        return out
    if value is pandas.NaT:
        return {"t": "pandas", "k": "NaT"}
    if value is pandas.NA:
        return {"t": "pandas", "k": "NA"}
    if isinstance(value, (pandas.Timestamp, pandas.Timedelta)):
        out = {"t": "pandas", "k": type(value).__name__, "v": int(value.asm8.view(np.int64)), "unit": value.unit}
        if getattr(value, "tz", None) is not None:
            out["tz"] = _zone(value.tz, pandas)
        return out
    if isinstance(value, pandas.Period):
        return {"t": "pandas", "k": "Period", "v": int(value.ordinal), "dtype": str(pandas.PeriodDtype(value.freq))}
    if isinstance(value, pandas.Interval):
        return {
            "t": "pandas",
            "k": "Interval",
            "left": encode(value.left, budget=budget, depth=depth + 1),
            "right": encode(value.right, budget=budget, depth=depth + 1),
            "closed": value.closed,
        }
    return None


def _zone(tz: Any, pandas: Any) -> str:
    name = str(tz)
    try:
        same = pandas.Timestamp(0, tz=name).utcoffset() == pandas.Timestamp(0, tz=tz).utcoffset()
    except Exception:  # noqa: BLE001 - a time zone pandas cannot name again
        same = False
    if not same:
        raise CaptureFailed(f"has a time zone ({trim(name, 40)}) the grader cannot name")
    return name


def _column(series: Any, pandas: Any, budget: list[int], depth: int) -> dict[str, Any]:
    import numpy as np

    dtype = series.dtype
    values = series.to_numpy() if isinstance(dtype, np.dtype) else series.array
    return _values(values, pandas, budget, depth)


def _values(arr: Any, pandas: Any, budget: list[int], depth: int) -> dict[str, Any]:
    """One-dimensional values of a pandas object, with their dtype: NumPy's, or pandas' own
    (category, string, nullable numbers, time zones, periods, intervals)."""
    import numpy as np

    dtype = arr.dtype
    if isinstance(arr, np.ndarray):
        return {"t": "values", "k": "numpy", "values": _ndarray(arr, "numpy.ndarray", budget, depth)}
    if isinstance(dtype, np.dtype):  # a NumPy-backed pandas array
        return _values(np.asarray(arr.to_numpy()), pandas, budget, depth)
    if isinstance(dtype, pandas.CategoricalDtype):
        return {
            "t": "values",
            "k": "category",
            "codes": _array(np.asarray(arr.codes), "numpy.ndarray", budget),
            "categories": _index(dtype.categories, pandas, budget, depth),
            "ordered": bool(dtype.ordered),
        }
    if isinstance(dtype, pandas.StringDtype):
        missing = np.asarray(arr.isna())
        texts = [None if m else _text(str(x), budget) for x, m in zip(arr.to_numpy(dtype=object), missing, strict=True)]
        na = "nan" if dtype.na_value is not pandas.NA else "NA"
        return {"t": "values", "k": "string", "storage": str(dtype.storage), "na": na, "v": texts}
    if isinstance(arr, pandas.api.extensions.ExtensionArray) and dtype.name in MASKED:
        data = arr.to_numpy(dtype=dtype.numpy_dtype, na_value=dtype.numpy_dtype.type(0))
        return {
            "t": "values",
            "k": "masked",
            "dtype": dtype.name,
            "values": _array(np.asarray(data), "numpy.ndarray", budget),
            "mask": _array(np.asarray(arr.isna()), "numpy.ndarray", budget),
        }
    if isinstance(dtype, pandas.DatetimeTZDtype):
        utc = np.asarray(arr.tz_convert("UTC").tz_localize(None).to_numpy())
        return {
            "t": "values",
            "k": "datetimetz",
            "tz": _zone(dtype.tz, pandas),
            "values": _array(utc, "numpy.ndarray", budget),
        }
    if isinstance(dtype, pandas.PeriodDtype):
        return {"t": "values", "k": "period", "dtype": str(dtype), "values": _array(np.asarray(arr.asi8), "", budget)}
    if isinstance(dtype, pandas.IntervalDtype):
        return {
            "t": "values",
            "k": "interval",
            "closed": str(arr.closed),
            "left": _column(pandas.Series(arr.left), pandas, budget, depth),
            "right": _column(pandas.Series(arr.right), pandas, budget, depth),
        }
    raise CaptureFailed(f"holds pandas values of dtype {trim(str(dtype), 40)}, which the grader cannot carry")


def _index(idx: Any, pandas: Any, budget: list[int], depth: int) -> dict[str, Any]:
    """A pandas index: a range as its bounds, a MultiIndex as levels and codes, any other as values."""
    import numpy as np

    if len(idx) > MAX_ITEMS:
        raise CaptureFailed(f"has {len(idx):,} labels, more than {MAX_ITEMS:,}")
    names = [encode(n, budget=budget, depth=depth + 1) for n in idx.names]
    if isinstance(idx, pandas.RangeIndex):
        return {"t": "index", "k": "range", "range": [idx.start, idx.stop, idx.step], "names": names}
    if isinstance(idx, pandas.MultiIndex):
        return {
            "t": "index",
            "k": "multi",
            "levels": [_index(level, pandas, budget, depth + 1) for level in idx.levels],
            "codes": [_array(np.asarray(c), "numpy.ndarray", budget) for c in idx.codes],
            "names": names,
        }
    out = {"t": "index", "k": "values", "values": _column(pandas.Series(idx), pandas, budget, depth), "names": names}
    freq = getattr(idx, "freqstr", None)
    if isinstance(freq, str) and not isinstance(idx, pandas.PeriodIndex):
        out["freq"] = freq
    return out
