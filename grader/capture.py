"""Values crossing the process boundary as plain data, and the frames that carry them.

The student side (``encode``) turns a Python value into JSON-safe plain data: numbers, strings,
booleans, lists, tuples, dicts, numeric arrays (raw bytes, base64) and pandas frames. Torch
tensors are converted there, and their original type, dtype, shape and ``requires_grad`` travel
with them for feedback.

The grader side (``decode``) parses that data strictly: known keys only, whitelisted dtypes,
byte counts that match shapes, bounded sizes and depth. Nothing is ever unpickled, so a forged
payload can at worst be rejected. ``to_python`` makes a decoded value an ordinary object again,
on either side (a ``test`` check's inputs in the student process, its results in the grader).

Why one module: the format's writer, its strict reader and how values are described change together.
"""

from __future__ import annotations

import base64
import contextlib
import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grader.errors import CaptureFailed, ProtocolError

if TYPE_CHECKING:  # numpy is imported where it is used: reading config.yaml needs none of it
    import numpy as np

DTYPES = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
}
_DTYPES: dict[str, tuple[np.dtype[Any], np.dtype[Any]]] = {}  # each of DTYPES, and its little-endian form, made once
MAX_DEPTH = 24
MAX_ITEMS = 100_000
MAX_STR = 100_000

Label = str | int | float | bool  # a frame's index or column label, or a dict key


# --------------------------------------------------------------------------------------------
# Student side


def encode(value: Any, *, budget: list[int], depth: int = 0) -> dict[str, Any]:
    """Plain data for ``value``; ``budget`` is a one-element list of bytes still allowed."""
    import numpy as np

    if depth > MAX_DEPTH:
        raise CaptureFailed(f"is nested more than {MAX_DEPTH} levels deep")
    if value is None:
        return {"t": "none"}
    if type(value) is bool:
        return {"t": "bool", "v": value}
    if type(value) is str:
        if len(value) > MAX_STR:
            raise CaptureFailed(f"is a string of {len(value):,} characters, more than {MAX_STR:,}")
        return {"t": "str", "v": value}
    if type(value) in (int, float, complex):
        if type(value) is int and not -(2**63) <= value < 2**63:
            return _array(np.array(float(value)), type(value).__name__, budget)
        return _array(np.array(value), type(value).__name__, budget)
    if isinstance(value, np.generic):
        return _array(np.asarray(np.ndarray.copy(np.array([value]))[0]), f"numpy.{type(value).__name__}", budget)
    if isinstance(value, np.ndarray):
        origin = "numpy.ndarray" if type(value) is np.ndarray else f"{type(value).__module__}.{type(value).__name__}"
        base = np.ndarray.view(value, np.ndarray)
        if base.dtype.kind in "USO" and base.ndim == 1:
            with contextlib.suppress(CaptureFailed):  # an array of strings, else the reason below
                return _strings(base, "numpy.ndarray", budget)
        return _array(base, origin, budget)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _tensor(value, torch, budget)
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series)):
        return _frame(value, pandas, budget)
    if pandas is not None and isinstance(value, (pandas.api.extensions.ExtensionArray, pandas.Index)):
        return _pandas_array(value, pandas, budget)
    if type(value) in (list, tuple):
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} items, more than {MAX_ITEMS:,}")
        return {"t": type(value).__name__, "items": [encode(v, budget=budget, depth=depth + 1) for v in value]}
    if type(value) is dict:
        if len(value) > MAX_ITEMS:
            raise CaptureFailed(f"has {len(value):,} keys, more than {MAX_ITEMS:,}")
        items = []
        for k, v in value.items():
            if type(k) not in (str, int, float, bool):
                raise CaptureFailed(f"has a key of type {type(k).__name__}; only str and number keys can be compared")
            items.append([k, encode(v, budget=budget, depth=depth + 1)])
        return {"t": "dict", "items": items}
    kind = type(value)
    if torch is not None and isinstance(value, torch.nn.Module):
        raise CaptureFailed(f"is a {kind.__name__} module, not numbers; call it on an input to get a tensor")
    if callable(value):
        raise CaptureFailed(f"is a function ({kind.__name__}), not a value")
    raise CaptureFailed(f"is a {kind.__module__}.{kind.__qualname__}, which cannot be compared as data")


def _array(arr: np.ndarray, origin: str, budget: list[int], **meta: Any) -> dict[str, Any]:
    import numpy as np

    if arr.dtype.kind == "O":
        raise CaptureFailed("holds Python objects (dtype object), not numbers")
    if arr.dtype.kind not in "biufc" or arr.dtype.name not in DTYPES:
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        else:
            raise CaptureFailed(f"has dtype {arr.dtype}, which is not a plain numeric type")
    nbytes = int(arr.size) * arr.dtype.itemsize
    if nbytes > budget[0]:
        raise CaptureFailed(f"is an array of {nbytes / 1e6:.1f} MB, more than the grader will carry")
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


def _strings(arr: np.ndarray, origin: str, budget: list[int]) -> dict[str, Any]:
    """A one-dimensional array of strings (missing ones as None), as a list that remembers its origin."""
    if arr.size > MAX_ITEMS:
        raise CaptureFailed(f"has {arr.size:,} items, more than {MAX_ITEMS:,}")
    items: list[dict[str, Any]] = []
    for x in arr.tolist():
        if type(x) is str and len(x) <= min(MAX_STR, budget[0]):
            budget[0] -= len(x)
            items.append({"t": "str", "v": x})
        elif x is None or (type(x) is float and math.isnan(x)) or type(x).__name__ == "NAType":
            items.append({"t": "none"})
        else:
            raise CaptureFailed(f"holds {type(x).__name__} items, not numbers or strings the grader will carry")
    return {"t": "list", "items": items, "origin": origin}


def _pandas_array(value: Any, pandas: Any, budget: list[int]) -> dict[str, Any]:
    """A pandas array or index (``StringArray``, ``Categorical``, ...): numbers as an array, strings as a list."""
    import numpy as np

    origin, dtype = f"pandas.{type(value).__name__}", getattr(value, "dtype", None)
    if getattr(value, "ndim", 1) != 1:
        raise CaptureFailed(f"is a {origin} of {value.ndim} dimensions")
    if not (pandas.api.types.is_numeric_dtype(dtype) or pandas.api.types.is_bool_dtype(dtype)):
        return _strings(np.asarray(value, dtype=object), origin, budget)
    arr = np.asarray(value.to_numpy())
    try:
        return _array(arr if arr.dtype.kind != "O" else value.to_numpy(dtype=float, na_value=np.nan), origin, budget)
    except (TypeError, ValueError):
        raise CaptureFailed(f"is a {origin} that cannot be read as numbers") from None


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


def _label(x: Any) -> Any:
    import numpy as np

    if isinstance(x, (np.generic,)):
        x = x.item()
    if type(x) in (str, int, float, bool):
        return x
    return str(x)


def _frame(df: Any, pandas: Any, budget: list[int]) -> dict[str, Any]:
    import numpy as np

    kind = "frame" if isinstance(df, pandas.DataFrame) else "series"
    values = df.to_numpy()
    if values.dtype.kind == "O":
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            raise CaptureFailed(f"is a {kind} holding non-numeric values") from None
    out = {
        "t": kind,
        "values": _array(np.asarray(values), "numpy.ndarray", budget),
        "index": [_label(x) for x in df.index],
        "origin": f"pandas.{type(df).__name__}",
    }
    if kind == "frame":
        out["columns"] = [_label(x) for x in df.columns]
    return out


# --------------------------------------------------------------------------------------------
# Grader side


@dataclass(frozen=True)
class Value:
    """A captured value: plain data plus what the student's object was, for feedback."""

    kind: str  # array | str | bool | none | list | tuple | dict | frame | series
    data: Any  # np.ndarray | str | bool | None | tuple[Value, ...] | dict[key, Value]
    origin: str = ""  # e.g. "torch.Tensor", "numpy.ndarray", "float", "pandas.DataFrame"
    dtype: str = ""  # the original dtype, e.g. "torch.float32"
    requires_grad: bool | None = None
    index: tuple[Label, ...] = ()
    columns: tuple[Label, ...] = ()

    @property
    def shape(self) -> tuple[int, ...] | None:
        if self.kind == "array":
            return tuple(self.data.shape)
        if self.kind in ("frame", "series"):
            return tuple(self.data.data.shape)
        return None

    def describe(self) -> str:
        """What the value is, in a student's words: 'a torch.Tensor of shape (3, 2), torch.float32'."""
        if self.kind == "array":
            if self.data.ndim == 0 and self.origin in ("int", "float", "complex"):
                return f"a Python {self.origin}"
            if self.data.ndim == 0 and self.origin.startswith("numpy.") and self.origin != "numpy.ndarray":
                return f"a {self.origin} scalar"
            dtype = self.dtype or str(self.data.dtype)
            return f"a {self.origin or 'array'} of shape {shape_text(self.data.shape)}, dtype {dtype}"
        if self.kind in ("list", "tuple", "dict"):
            return f"a {self.kind} of {len(self.data)} item{'s' if len(self.data) != 1 else ''}"
        if self.kind in ("frame", "series"):
            return f"a {self.origin} of shape {shape_text(self.shape or ())}"
        if self.kind == "none":
            return "None"
        return f"a {self.kind}"


_KEYS = {
    form: frozenset(keys.split())
    for form, keys in {  # the keys each form of encoded value may have
        "none": "t",
        "bool": "t v",
        "str": "t v",
        "array": "t dtype shape b64 origin odtype grad",
        "list": "t items origin",
        "tuple": "t items",
        "dict": "t items",
        "frame": "t values index columns origin",
        "series": "t values index origin",
    }.items()
}


def decode(obj: Any, *, depth: int = 0) -> Value:
    """Strictly parse one encoded value. Raises ProtocolError on anything unexpected."""
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
        if type(obj.get("v")) is not str or len(obj["v"]) > MAX_STR:
            raise ProtocolError("a captured string is malformed or too long")
        return Value("str", obj["v"], origin="str")
    if t == "array":
        return _decode_array(obj)
    if t in ("list", "tuple"):
        items = obj.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise ProtocolError("a captured list is malformed")
        origin = obj.get("origin", t) if t == "list" else t  # a list of strings may be an array of them
        if not isinstance(origin, str):
            raise ProtocolError("a captured list's origin is malformed")
        return Value(t, tuple(decode(v, depth=depth + 1) for v in items), origin=origin[:60])
    if t == "dict":
        items = obj.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise ProtocolError("a captured dict is malformed")
        out = {}
        for pair in items:
            if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) in (str, int, float, bool)):
                raise ProtocolError("a captured dict entry is malformed")
            out[pair[0]] = decode(pair[1], depth=depth + 1)
        return Value("dict", out, origin="dict")
    values = decode(obj.get("values"), depth=depth + 1)
    if values.kind != "array":
        raise ProtocolError("a captured frame is malformed")
    index = _labels(obj.get("index"))
    columns = _labels(obj.get("columns")) if t == "frame" else ()
    shape = values.data.shape
    if len(index) != (shape[0] if shape else 0) or (t == "frame" and (len(shape) != 2 or len(columns) != shape[1])):
        raise ProtocolError("a captured frame's labels do not match its values")
    return Value(t, values, origin=str(obj.get("origin", ""))[:60], index=index, columns=columns)


def _labels(obj: Any) -> tuple[Label, ...]:
    if not isinstance(obj, list) or len(obj) > MAX_ITEMS or not all(type(x) in (str, int, float, bool) for x in obj):
        raise ProtocolError("captured labels are malformed")
    return tuple(obj)


def _decode_array(obj: dict[str, Any]) -> Value:
    import numpy as np

    dtype, shape, b64 = obj.get("dtype"), obj.get("shape"), obj.get("b64")
    if dtype not in DTYPES:
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


def to_python(value: Value) -> Any:
    """A decoded value as an ordinary Python object of the kind it came from: a Python number for
    a Python number, a NumPy scalar or array, a torch tensor (when torch can be imported), lists,
    tuples, dicts, pandas frames. Used where code runs on captured data (``test`` checks)."""
    import numpy as np

    if value.kind in ("none", "bool", "str"):
        return value.data
    if value.kind in ("list", "tuple"):
        items = [to_python(v) for v in value.data]
        if value.origin == "numpy.ndarray":
            return np.array(items)
        if value.origin.startswith("pandas."):
            import pandas

            return pandas.Index(items) if value.origin.endswith("Index") else pandas.array(items)
        return items if value.kind == "list" else tuple(items)
    if value.kind == "dict":
        return {k: to_python(v) for k, v in value.data.items()}
    if value.kind in ("frame", "series"):
        import pandas

        values = np.array(value.data.data)
        if value.kind == "frame":
            return pandas.DataFrame(values, index=list(value.index), columns=list(value.columns))
        return pandas.Series(values, index=list(value.index))
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


def to_wire(value: Value) -> dict[str, Any]:
    """The encoded form of a decoded value (for caches and for values sent into a notebook)."""
    import numpy as np

    if value.kind == "none":
        return {"t": "none"}
    if value.kind in ("bool", "str"):
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
        wire: dict[str, Any] = {"t": value.kind, "items": [to_wire(v) for v in value.data]}
        if value.kind == "list" and value.origin != "list":
            wire["origin"] = value.origin
        return wire
    if value.kind == "dict":
        return {"t": "dict", "items": [[k, to_wire(v)] for k, v in value.data.items()]}
    out = {"t": value.kind, "values": to_wire(value.data), "index": list(value.index), "origin": value.origin}
    if value.kind == "frame":
        out["columns"] = list(value.columns)
    return out


# --------------------------------------------------------------------------------------------
# Describing values to students: shapes, positions, numbers and kinds of numbers, in one way


MAX_INDICES = 3  # positions listed in a message before "..."


@dataclass(frozen=True)
class NumberKind:
    """A kind of numbers as students and public_checks.json name it, and the dtype codes it covers."""

    name: str  # "float": the word in public_checks.json
    codes: str  # numpy dtype kind codes, e.g. "iu"
    words: str  # "floating-point numbers": the words in feedback
    dtype: str  # the numpy dtype a public check makes a stand-in value of


NUMBER_KINDS = (
    NumberKind("bool", "b", "booleans", "bool"),
    NumberKind("int", "iu", "integers", "int64"),
    NumberKind("float", "f", "floating-point numbers", "float64"),
    NumberKind("complex", "c", "complex numbers", "complex128"),
)


def number_kind(dtype: np.dtype) -> NumberKind | None:
    """The kind of numbers an array of this dtype holds, or None for non-numbers."""
    return next((k for k in NUMBER_KINDS if dtype.kind in k.codes), None)


def numeric(v: Value) -> np.ndarray | None:
    """The value as a numeric array, if it is numbers (an array, a scalar, or a list of numbers)."""
    import numpy as np

    if v.kind == "array":
        arr: np.ndarray = v.data
        return arr
    if v.kind == "bool":
        return np.array(v.data)
    if v.kind not in ("list", "tuple"):
        return None
    parts = [numeric(x) for x in v.data]
    if any(p is None for p in parts):
        return None
    try:
        return np.array(parts) if parts else np.zeros((0,))
    except ValueError:  # ragged
        return None


def shape_text(shape: tuple[int, ...]) -> str:
    """``(3, 2)``, and ``(3,)`` for one dimension, as Python writes them."""
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def indices_text(where: np.ndarray) -> str:
    """The first few positions of ``np.argwhere``'s result: ``[0, 1], [2, 3], ...``."""
    parts = ["[" + ", ".join(str(int(i)) for i in idx) + "]" for idx in where[:MAX_INDICES]]
    return ", ".join(parts) + (", ..." if len(where) > MAX_INDICES else "")


def number_text(x: object, digits: int = 8) -> str:
    """A number as feedback shows it: integers whole, others to ``digits`` significant digits."""
    import numpy as np

    if isinstance(x, bool):
        return str(x)
    if isinstance(x, complex):
        return f"{x:.{digits}g}"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.{digits}g}"  # type: ignore[arg-type]


def trim(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
