"""The grader side: plain data parsed strictly (``decode``), and made ordinary objects again
(``to_python``) or plain data again (``to_wire``).

Known keys only, whitelisted dtypes, byte counts that match shapes, bounded sizes and depth; pandas
objects are rebuilt from their checked parts by pandas' own constructors. Nothing is ever
unpickled or evaluated, so a forged payload can at worst be rejected (``ProtocolError``).
``to_python`` runs on either side (a ``test`` check's inputs in the student process, its results in
the grader); each call makes a new copy.

Why one module: every form's strict reader, its rebuilding and its writing back (``to_wire``) change
together with the form.
"""

from __future__ import annotations

import base64
import math
import re
from typing import TYPE_CHECKING, Any

from grader.capture.classes import ClassRef
from grader.capture.encoding import encode
from grader.capture.plain import decode_array, decode_plain, decode_strings, shape_of, str_of
from grader.capture.values import (
    DICTS,
    FACTORIES,
    MASKED,
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STR,
    PANDAS,
    VIEWS,
    Value,
)
from grader.errors import ProtocolError, SiteUnusable

if TYPE_CHECKING:
    pass


_KEYS = {
    form: frozenset(keys.split())
    for form, keys in {  # the keys each form of encoded value may have
        "none": "t",
        "bool": "t v",
        "str": "t v origin",
        "int": "t x",
        "bytes": "t b64 origin",
        "array": "t dtype shape b64 origin odtype grad",
        "text": "t dtype shape v origin",
        "objects": "t shape items strs nan origin",
        "list": "t items origin",
        "tuple": "t items",
        "set": "t items origin",
        "dict": "t items origin factory made_by",
        "view": "t k items",
        "fraction": "t n d",
        "decimal": "t v",
        "range": "t v",
        "time": "t k v tz",
        "pandas": "t k v unit tz dtype left right closed",
        "dtype": "t values",
        "frame": "t columns index labels origin",
        "series": "t values index name origin",
        "index": "t k range levels codes values names freq",
        "class": "t mro plain process",
        "values": "t k values codes categories ordered storage na v dtype mask tz closed left right origin",
    }.items()
}
_PERIOD = re.compile(r"period\[[A-Za-z0-9-]{1,20}\]")


def decode(obj: Any, *, depth: int = 0) -> Value:
    """Strictly parse one encoded value. Raises ProtocolError on anything unexpected."""
    try:
        return _decode(obj, depth)
    except ProtocolError:
        raise
    except Exception:  # noqa: BLE001 - a part of a forged payload no check above foresaw (a list for a name...)
        raise ProtocolError("a captured value is malformed") from None


def _decode(obj: Any, depth: int) -> Value:
    if depth > MAX_DEPTH or not isinstance(obj, dict):
        raise ProtocolError("a captured value is malformed")
    raw = obj.get("t")
    t = raw if isinstance(raw, str) else ""  # an unhashable tag is an unknown form too
    allowed = _KEYS.get(t)
    if allowed is None or not allowed.issuperset(obj):
        raise ProtocolError(f"a captured value has an unknown form ({str(raw)[:20]!r})")
    if t == "none":
        return Value("none", None)
    if t == "bool":
        if type(obj.get("v")) is not bool:
            raise ProtocolError("a captured boolean is malformed")
        return Value("bool", obj["v"], origin="bool")
    if t == "str":
        origin = obj.get("origin", "str")
        if type(obj.get("v")) is not str or len(obj["v"]) > MAX_STR or origin not in ("str", "numpy.str_"):
            raise ProtocolError("a captured string is malformed or too long")
        return Value("str", obj["v"], origin=origin)
    if t == "array":
        return decode_array(obj)
    if t == "objects" and "strs" in obj:
        return decode_strings(obj)
    if t in ("list", "tuple", "set", "objects"):
        items = obj.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise ProtocolError(f"a captured {t} is malformed")
        origin = obj.get("origin", t)  # a list of strings may be an array of them
        if not isinstance(origin, str) or t == "set" and origin not in ("set", "frozenset"):
            raise ProtocolError(f"a captured {t}'s origin is malformed")
        values = tuple(decode(v, depth=depth + 1) for v in items)
        if t == "set":
            _hashable(values, depth)
        if t != "objects":
            return Value(t, values, origin=origin[:60])
        shape = shape_of(obj.get("shape"))
        if math.prod(shape) != len(values):
            raise ProtocolError("a captured array's items do not match its shape")
        return Value("objects", values, origin=origin[:60], dims=shape)
    if t == "dict":
        return _decode_dict(obj, depth)
    if t == "view":
        return _decode_view(obj, depth)
    if t in ("int", "bytes", "text", "fraction", "decimal", "range", "time"):
        return decode_plain(t, obj)
    if t == "pandas":
        return _decode_pandas_scalar(obj, depth)
    if t == "class":  # names only: a class is never rebuilt, and no code of it runs here
        return Value("scalar", ClassRef.read(obj), origin="type")
    if t == "dtype":  # the dtype of an empty array of it
        try:
            dtype = _build_values(obj.get("values"), depth + 1).dtype
        except Exception:  # noqa: BLE001 - whatever pandas or numpy refuses in a forged payload
            raise ProtocolError("a captured dtype is malformed") from None
        return Value("scalar", dtype, origin=f"{type(dtype).__module__.split('.')[0]}.dtype")
    return _decode_pandas(t, obj, depth)


def _hashable(values: tuple[Value, ...], depth: int) -> list[Any]:
    out = []
    for v in values:
        if v.kind in ("list", "dict", "objects", "text") or v.kind in PANDAS or v.kind == "set" and v.origin == "set":
            raise ProtocolError("a captured set or key holds an unhashable value")
        if v.kind == "array" and v.data.ndim:
            raise ProtocolError("a captured set or key holds an array")
        x = to_python(v)
        try:
            hash(x)
        except TypeError:  # a tuple holding a list or an array
            raise ProtocolError("a captured set or key holds an unhashable value") from None
        out.append(x)
    return out


def _decode_dict(obj: dict[str, Any], depth: int) -> Value:
    items = obj.get("items")
    origin = obj.get("origin", "dict")
    factory, made_by = obj.get("factory", ""), obj.get("made_by")
    if not isinstance(items, list) or len(items) > MAX_ITEMS or origin not in DICTS.values():
        raise ProtocolError("a captured dict is malformed")
    if factory and (origin != "collections.defaultdict" or factory not in FACTORIES):
        raise ProtocolError("a captured defaultdict is malformed")
    if made_by is not None:
        if origin != "collections.defaultdict" or factory or type(made_by) is not str or len(made_by) > 60:
            raise ProtocolError("a captured defaultdict is malformed")
        factory = "*" + made_by  # the student's function, by its name (``to_python``)
    out: dict[Any, Value] = {}
    for pair in items:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise ProtocolError("a captured dict entry is malformed")
        key = pair[0]
        if isinstance(key, dict):
            (key,) = _hashable((decode(key, depth=depth + 1),), depth)
        elif type(key) not in (str, int, float, bool):
            raise ProtocolError("a captured dict entry is malformed")
        out[key] = decode(pair[1], depth=depth + 1)
    return Value("dict", out, origin=origin, dtype=factory)


def _decode_view(obj: dict[str, Any], depth: int) -> Value:
    """A dict's keys, values or items view: its keys (hashable), values, or (key, value) pairs."""
    items, kind = obj.get("items"), obj.get("k")
    if not isinstance(items, list) or len(items) > MAX_ITEMS or kind not in VIEWS:
        raise ProtocolError("a captured dict view is malformed")
    values = tuple(decode(v, depth=depth + 1) for v in items)
    if kind.endswith("_items"):
        if not all(v.kind == "tuple" and len(v.data) == 2 for v in values):
            raise ProtocolError("a captured dict view's item is not a (key, value) pair")
        _hashable(tuple(v.data[0] for v in values), depth)
    elif kind.endswith("_keys"):
        _hashable(values, depth)
    return Value("view", values, origin=kind)


def _decode_pandas_scalar(obj: dict[str, Any], depth: int) -> Value:
    import numpy as np
    import pandas

    kind = obj.get("k")
    try:
        value: Any
        if kind == "NaT":
            value = pandas.NaT
        elif kind == "NA":
            value = pandas.NA
        elif kind in ("Timestamp", "Timedelta"):
            n, unit = obj.get("v"), str_of(obj.get("unit"), 2)
            if type(n) is not int or unit not in ("s", "ms", "us", "ns"):
                raise ValueError(unit)
            if kind == "Timedelta":
                value = pandas.Timedelta(np.array(n).view(f"m8[{unit}]")[()])
            else:
                value = pandas.Timestamp(np.array(n).view(f"M8[{unit}]")[()])
                if "tz" in obj:
                    value = value.tz_localize("UTC").tz_convert(str_of(obj["tz"], 60))
        elif kind == "Period":
            dtype = str_of(obj.get("dtype"), 40)
            if not _PERIOD.fullmatch(dtype) or type(obj.get("v")) is not int:
                raise ValueError(dtype)
            value = pandas.Period(ordinal=obj["v"], freq=pandas.PeriodDtype(dtype[7:-1]).freq)
        elif kind == "Interval":
            left, right = (to_python(decode(obj.get(side), depth=depth + 1)) for side in ("left", "right"))
            value = pandas.Interval(left, right, closed=str_of(obj.get("closed"), 10))
        else:
            raise ValueError(kind)
    except Exception:  # noqa: BLE001 - whatever pandas or numpy refuses in a forged payload
        raise ProtocolError("a captured pandas value is malformed") from None
    return Value("scalar", value, origin=f"pandas.{type(value).__name__}".replace("NaTType", "NaT"))


def _decode_pandas(t: str, obj: dict[str, Any], depth: int) -> Value:
    """A pandas frame, series, index or array, rebuilt from its checked parts."""
    import pandas

    try:
        if t == "frame":
            columns = obj.get("columns")
            if not isinstance(columns, list) or len(columns) > MAX_ITEMS:
                raise ValueError("columns")
            index = _build_index(obj.get("index"), depth)
            labels = _build_index(obj.get("labels"), depth)
            parts = {i: _series(_build_values(c, depth), index, None) for i, c in enumerate(columns)}
            frame = pandas.DataFrame(parts, index=index) if parts else pandas.DataFrame(index=index)
            if len(labels) != len(columns):
                raise ValueError("labels")
            frame.columns = labels
            return Value("frame", frame, origin="pandas.DataFrame")
        if t == "series":
            name = decode(obj.get("name"), depth=depth + 1)
            (key,) = _hashable((name,), depth)
            series = _series(_build_values(obj.get("values"), depth), _build_index(obj.get("index"), depth), key)
            return Value("series", series, origin="pandas.Series")
        if t == "index":
            return Value("index", _build_index(obj, depth), origin="pandas.Index")
        values = _build_values(obj, depth)
        origin = str_of(obj.get("origin", ""), 60)
        return Value("pdarray", pandas.array(values, dtype=values.dtype, copy=False), origin=origin)
    except ProtocolError:
        raise
    except Exception:  # noqa: BLE001 - whatever pandas or numpy refuses in a forged payload
        raise ProtocolError(f"a captured pandas {t.replace('values', 'array')} is malformed") from None


def _series(values: Any, index: Any, name: Any) -> Any:
    import pandas

    if len(values) != len(index):
        raise ValueError("length")
    return pandas.Series(values, index=index, name=name, dtype=values.dtype, copy=False)


def _part(obj: Any, kinds: tuple[str, ...], depth: int) -> Value:
    value = decode(obj, depth=depth + 1)
    if value.kind not in kinds or value.kind in ("array", "text", "objects") and len(value.shape or ()) != 1:
        raise ProtocolError("a captured pandas value has a malformed part")
    return value


def _flat(value: Value) -> Any:
    import numpy as np

    if value.kind == "objects":
        return to_python(value)
    return np.array(value.data)


def _build_values(obj: Any, depth: int) -> Any:
    """One-dimensional values with their dtype (``_values``' inverse)."""
    import numpy as np
    import pandas

    if not isinstance(obj, dict) or obj.get("t") != "values" or not _KEYS["values"].issuperset(obj):
        raise ProtocolError("a captured pandas value has a malformed part")
    kind = obj.get("k")
    if kind == "numpy":
        return _flat(_part(obj.get("values"), ("array", "text", "objects"), depth))
    if kind == "category":
        codes = _part(obj.get("codes"), ("array",), depth).data
        categories = _build_index(obj.get("categories"), depth)
        if codes.dtype.kind != "i" or len(codes) and (codes.min() < -1 or codes.max() >= len(categories)):
            raise ValueError("codes")
        dtype = pandas.CategoricalDtype(categories, ordered=obj.get("ordered") is True)
        return pandas.Categorical.from_codes(codes, dtype=dtype)
    if kind == "string":
        texts, storage, na = obj.get("v"), obj.get("storage"), obj.get("na")
        if not isinstance(texts, list) or len(texts) > MAX_ITEMS or storage not in ("python", "pyarrow"):
            raise ValueError("string")
        if not all(x is None or type(x) is str and len(x) <= MAX_STR for x in texts):
            raise ValueError("string")
        dtype = pandas.StringDtype(storage, na_value=np.nan if na == "nan" else pandas.NA)
        return pandas.array(texts, dtype=dtype)
    if kind == "masked":
        name = obj.get("dtype")
        if name not in MASKED:
            raise ValueError("masked")
        data, mask = (_part(obj.get(k), ("array",), depth).data for k in ("values", "mask"))
        dtype = pandas.api.types.pandas_dtype(name)
        if mask.dtype != bool or data.shape != mask.shape or data.dtype != dtype.numpy_dtype:
            raise ValueError("masked")
        return dtype.construct_array_type()(np.array(data), np.array(mask))
    if kind == "datetimetz":
        utc = _part(obj.get("values"), ("array",), depth).data
        if utc.dtype.kind != "M":
            raise ValueError("datetimetz")
        return pandas.array(pandas.DatetimeIndex(utc).tz_localize("UTC").tz_convert(str_of(obj.get("tz"), 60)))
    if kind == "period":
        dtype = str_of(obj.get("dtype"), 40)
        ordinals = _part(obj.get("values"), ("array",), depth).data
        if not _PERIOD.fullmatch(dtype) or ordinals.dtype != np.int64:
            raise ValueError("period")
        return pandas.PeriodIndex.from_ordinals(ordinals, freq=pandas.PeriodDtype(dtype[7:-1]).freq).array
    if kind == "interval":
        left, right = (_build_values(obj.get(side), depth + 1) for side in ("left", "right"))
        closed = obj.get("closed")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError("closed")
        return pandas.arrays.IntervalArray.from_arrays(left, right, closed=closed)
    raise ValueError("kind")


def _build_index(obj: Any, depth: int) -> Any:
    """A pandas index (``_index``' inverse)."""
    import pandas

    if depth > MAX_DEPTH or not isinstance(obj, dict) or obj.get("t") != "index" or not _KEYS["index"].issuperset(obj):
        raise ProtocolError("a captured pandas index is malformed")
    names_obj = obj.get("names")
    if not isinstance(names_obj, list) or len(names_obj) > 64:
        raise ValueError("names")
    names = _hashable(tuple(decode(n, depth=depth + 1) for n in names_obj), depth)
    kind = obj.get("k")
    if kind == "range":
        bounds = obj.get("range")
        if not isinstance(bounds, list) or len(bounds) != 3 or not all(type(n) is int for n in bounds):
            raise ValueError("range")
        if len(names) != 1:
            raise ValueError("names")
        return pandas.RangeIndex(*bounds, name=names[0])
    if kind == "multi":
        levels, codes = obj.get("levels"), obj.get("codes")
        if (
            not isinstance(levels, list)
            or not isinstance(codes, list)
            or not 0 < len(levels) == len(codes) == len(names)
        ):
            raise ValueError("multi")
        built = [_build_index(level, depth + 1) for level in levels]
        codes_arrays = [_part(c, ("array",), depth).data for c in codes]
        return pandas.MultiIndex(levels=built, codes=codes_arrays, names=names, verify_integrity=True)
    if kind != "values" or len(names) != 1:
        raise ValueError("index")
    values = _build_values(obj.get("values"), depth + 1)
    index = pandas.Index(values, dtype=values.dtype, name=names[0], copy=False)
    freq = obj.get("freq")
    if freq is not None and isinstance(index, (pandas.DatetimeIndex, pandas.TimedeltaIndex)):
        index = type(index)(index, freq=str_of(freq, 40))
    return index


def to_python(value: Value) -> Any:
    """A decoded value as an ordinary Python object of the kind it came from: a Python number for
    a Python number, a NumPy scalar or array, a torch tensor (when torch can be imported), lists,
    tuples, sets, dicts, pandas objects with their dtypes and labels. Used where code runs on
    captured data (``test`` checks); each call makes a new copy, which that code may change."""
    import numpy as np

    if value.kind in ("none", "bool", "str", "int", "bytes", "scalar"):
        if value.origin == "bytearray":
            return bytearray(value.data)
        return np.str_(value.data) if value.origin == "numpy.str_" else value.data
    if value.kind in ("list", "tuple"):
        items = [to_python(v) for v in value.data]
        if value.origin == "pandas.FrozenList":
            import pandas

            return pandas.api.typing.FrozenList(items)
        return items if value.kind == "list" else tuple(items)
    if value.kind == "set":
        return (set if value.origin == "set" else frozenset)(to_python(v) for v in value.data)
    if value.kind == "view":  # a view of a dict of its own, made in the same order
        import collections

        items = [to_python(v) for v in value.data]
        mapping = collections.OrderedDict if value.origin.startswith("odict_") else dict
        if value.origin.endswith("_keys"):
            return mapping.fromkeys(items).keys()
        if value.origin.endswith("_values"):
            return mapping(enumerate(items)).values()
        return mapping(items).items()
    if value.kind == "objects":
        out = np.empty(len(value.data), dtype=object)
        for i, item in enumerate(value.data):
            out[i] = to_python(item)
        return out.reshape(value.dims)
    if value.kind == "text":
        return np.array(value.data)
    if value.kind == "dict":
        import collections

        pairs = {k: to_python(v) for k, v in value.data.items()}
        if value.origin == "collections.Counter":
            return collections.Counter(pairs)
        if value.origin == "collections.OrderedDict":
            return collections.OrderedDict(pairs)
        if value.origin == "collections.defaultdict" and value.dtype.startswith("*"):
            return collections.defaultdict(_StudentDefault(value.dtype[1:]), pairs)
        if value.origin == "collections.defaultdict":
            return collections.defaultdict(FACTORIES.get(value.dtype), pairs)
        return pairs
    if value.kind in PANDAS:
        return value.data.copy(deep=True) if value.kind in ("frame", "series") else value.data.copy()
    arr = np.array(value.data)  # a writable copy
    if value.origin in ("int", "float", "complex", "bool") and arr.ndim == 0:
        return arr.item()
    if value.origin.startswith("numpy.") and value.origin != "numpy.ndarray" and arr.ndim == 0:
        return arr[()]
    if value.origin.startswith("torch"):
        try:
            import torch
        except ImportError:
            return arr
        tensor = torch.from_numpy(arr)
        dtype = getattr(torch, value.dtype.removeprefix("torch."), None) if value.dtype else None
        if isinstance(dtype, torch.dtype) and dtype != tensor.dtype:
            tensor = tensor.to(dtype)
        if value.origin == "torch.nn.Parameter":
            return torch.nn.Parameter(tensor, requires_grad=bool(value.requires_grad))
        return tensor.requires_grad_(True) if value.requires_grad and tensor.is_floating_point() else tensor
    return arr


class _StudentDefault:
    """A defaultdict's default made by the student's function (a lambda, a class), which stays in
    the student's process: a missing key's default cannot be made here (a test's site that reads one
    answers from the student's run instead)."""

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self) -> Any:
        raise SiteUnusable(f"{self.__name__}()", "is the default of a defaultdict, made in your notebook's process")

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"


def to_wire(value: Value) -> dict[str, Any]:
    """The encoded form of a decoded value (for caches and for values sent into a notebook)."""
    import numpy as np

    if value.kind == "none":
        return {"t": "none"}
    if value.kind == "bool":
        return {"t": value.kind, "v": value.data}
    if value.kind == "array":
        arr = np.ascontiguousarray(value.data).reshape(np.shape(value.data))  # keeps 0-d scalars 0-d
        out = {
            "t": "array",
            "dtype": arr.dtype.name,
            "shape": list(arr.shape),
            "b64": base64.b64encode(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()).decode("ascii"),
            "origin": value.origin,
        }
        if value.dtype and value.dtype != arr.dtype.name:
            out["odtype"] = value.dtype
        if value.requires_grad is not None:
            out["grad"] = value.requires_grad
        return out
    if value.kind in ("list", "tuple"):
        return {"t": value.kind, "items": [to_wire(v) for v in value.data]}
    if value.kind == "dict" and value.origin == "dict":
        items = [[k if type(k) is str else encode(k, budget=[1 << 62]), to_wire(v)] for k, v in value.data.items()]
        return {"t": "dict", "items": items}
    return encode(to_python(value), budget=[1 << 62])  # the other kinds are made of what ``encode`` takes
