"""What both sides of the process boundary share about captured values: the limits and forms of
the plain data (``grader.capture.encoding`` writes it, ``grader.capture.decoding`` reads it), the
grader's ``Value``, and how values are described to students (shapes, positions, numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    "float128",  # long double, where the platform has it (both sides of the boundary are one machine)
    "complex256",
}
MAX_DEPTH = 24
MAX_ITEMS = 100_000
MAX_STR = 100_000

Label = str | int | float | bool  # a frame's index or column label, or a dict key
TIMES = re.compile(r"(datetime64|timedelta64)(\[(Y|M|W|D|h|m|s|ms|us|ns|ps|fs|as)\])?")
DICTS = {"dict": "dict", "Counter": "collections.Counter", "OrderedDict": "collections.OrderedDict"}
DICTS["defaultdict"] = "collections.defaultdict"
FACTORIES = {"int": int, "float": float, "list": list, "set": set, "str": str, "dict": dict, "tuple": tuple}
MASKED = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64", "boolean"}
VIEWS = ("dict_keys", "dict_values", "dict_items", "odict_keys", "odict_values", "odict_items")  # a dict's views
PANDAS = ("frame", "series", "index", "pdarray")  # kinds whose data is a pandas object, rebuilt at decode


@dataclass(frozen=True)
class Value:
    """A captured value: plain data plus what the student's object was, for feedback."""

    # array | int | str | bytes | bool | none | list | tuple | set | dict | view | text | objects
    # | scalar | frame | series | index | pdarray
    kind: str
    # np.ndarray (array, text) | int | str | bytes | bool | None | tuple[Value, ...] (list, tuple, set,
    # objects; a dict view's keys, values or (key, value) tuples) | dict[key, Value] | an immutable
    # Python object (scalar) | a pandas object (PANDAS)
    data: Any
    origin: str = ""  # e.g. "torch.Tensor", "numpy.ndarray", "float", "pandas.DataFrame"
    dtype: str = ""  # the original dtype, e.g. "torch.float32"; a defaultdict's default ("*name": the student's)
    requires_grad: bool | None = None
    dims: tuple[int, ...] = ()  # the shape of an array of objects

    @property
    def shape(self) -> tuple[int, ...] | None:
        if self.kind in ("array", "text"):
            return tuple(self.data.shape)
        if self.kind == "objects":
            return self.dims
        if self.kind in PANDAS:
            return tuple(self.data.shape)
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
        if self.kind in ("text", "objects"):
            what = "strings" if self.kind == "text" else "Python objects (dtype object)"
            return f"a {self.origin or 'array'} of {what} of shape {shape_text(self.shape or ())}"
        if self.kind in ("list", "tuple", "dict", "set", "view"):
            n = len(self.data)
            kind = self.origin if self.kind in ("set", "dict", "view") and self.origin else self.kind
            return f"a {kind.removeprefix('collections.')} of {n} item{'s' if n != 1 else ''}"
        if self.kind == "frame":
            return f"a pandas.DataFrame of shape {shape_text(self.shape or ())}"
        if self.kind == "series":
            return f"a pandas.Series of length {len(self.data)}, dtype {self.data.dtype}"
        if self.kind == "index":
            return f"a pandas.{type(self.data).__name__} of {len(self.data)} labels"
        if self.kind == "pdarray":
            return f"a pandas array of length {len(self.data)}, dtype {self.data.dtype}"
        if self.kind == "int":
            return "a Python int"
        if self.kind == "scalar" and self.origin == "type":  # a class (``grader.capture.classes``)
            return f"the class {trim(repr(self.data).removeprefix('<class ').removesuffix('>'), 80)}"
        if self.kind == "scalar":
            return f"a {self.origin}"
        if self.kind == "none":
            return "None"
        if self.kind == "bytes":
            return f"a {self.origin or 'bytes'}"
        if self.kind == "str" and self.origin == "numpy.str_":
            return "a numpy.str_"
        return f"a {self.kind}"


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
    if v.kind in PANDAS:  # a frame, series, index or array of numbers only, with NumPy dtypes
        dtypes = list(v.data.dtypes) if v.kind == "frame" else [v.data.dtype]
        if not all(isinstance(d, np.dtype) and d.kind in "biufc" for d in dtypes):
            return None
        return np.asarray(v.data.to_numpy())
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
        return _int_text(int(x))
    return f"{float(x):.{digits}g}"  # type: ignore[arg-type]


def _int_text(n: int) -> str:
    """An integer whole up to 40 digits; beyond, its number of digits, first and last digits (a
    factorial of 2000 has more digits than Python will even write out)."""
    size, sign = abs(n), "-" if n < 0 else ""
    if size < 10**40:
        return str(n)
    digits = int(size.bit_length() * 0.30102999566398)
    while 10**digits <= size:
        digits += 1
    return f"an integer of {digits} digits, {sign}{size // 10 ** (digits - 12)}...{size % 10**6:06d}"


def trim(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
