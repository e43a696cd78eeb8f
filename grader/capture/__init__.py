"""Values crossing the process boundary as plain data.

The student side (``encoding.encode``) turns a Python value into JSON-safe plain data; the grader
side (``decoding.decode``) parses it strictly and rebuilds it (``to_python``), so that the grader's
copy compares, under the libraries' own comparisons (``==``, ``DataFrame.equals``,
``pd.testing.assert_frame_equal``, ``np.testing.assert_*``), as the student's object does: exact
integers of any size, strings, sets, dicts of any hashable keys and their views, arrays of any dtype, pandas objects
with their dtypes, labels and names. Nothing is ever unpickled. ``values`` holds what both sides
share: the limits, the grader's ``Value`` and how values are described to students.
"""

from grader.capture.classes import ClassRef
from grader.capture.decoding import decode, to_python, to_wire
from grader.capture.encoding import encode
from grader.capture.values import (
    DTYPES,
    MAX_DEPTH,
    MAX_INDICES,
    MAX_ITEMS,
    MAX_STR,
    NUMBER_KINDS,
    PANDAS,
    Label,
    NumberKind,
    Value,
    indices_text,
    number_kind,
    number_text,
    numeric,
    shape_text,
    trim,
)

__all__ = [
    "ClassRef",
    "DTYPES",
    "MAX_DEPTH",
    "MAX_INDICES",
    "MAX_ITEMS",
    "MAX_STR",
    "NUMBER_KINDS",
    "PANDAS",
    "Label",
    "NumberKind",
    "Value",
    "decode",
    "encode",
    "indices_text",
    "number_kind",
    "number_text",
    "numeric",
    "shape_text",
    "to_python",
    "to_wire",
    "trim",
]
