"""What the student's run of a test recorded, as the grader reads it back (``Records.read``): the
records ``grader.run.test_recorder`` wrote, by key (plain data, a handle with its class and which of
the student's objects it is, an exception, an iteration's end, a site the grader computes itself),
how that run ended, and the course's own modules as the notebook left them. Anything malformed is
no record at all: the check then says the test did not run there."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from grader.capture import ClassRef, Value
from grader.judge import testmodules
from grader.run.job import Captured
from grader.run.student_state import array_slots

ARRAYS = re.compile(r"#\d{1,7}(?:,\d{1,7}){0,999}")
IDENT = re.compile(r"@(\d+)(?:=([\w.]{1,200}:[\w.]{1,200}))?")


@dataclass(frozen=True)
class Record:
    # v (plain data), h (a handle), e (an exception), end (an iteration ended), l (a site the grader
    # computes itself, on values it holds as data: the student's process sent nothing of it)
    kind: str
    value: Value | None = None  # plain data; a handle's class
    detail: str = ""  # a handle: what it is; an exception: its message
    ename: str = ""
    base: str = ""  # an exception's first builtin class
    ident: int = -1  # a handle: which of the student's objects (the same number, the same object)
    name: str = ""  # a handle of a library's function: ``module:qualname`` (``math:sqrt``)
    arrays: tuple[int, ...] = ()  # plain data: which of the student's objects its arrays are, in order


@dataclass(frozen=True)
class Records:
    """What the student's run of a test recorded, by key, and how that run ended."""

    by_key: dict[str, Record]
    ended: str  # the exception the student's run of the test ended with, or ""
    stderr: str = ""  # the first line the test wrote to stderr in the student's process (a warning...)
    modules: dict[str, testmodules.Recorded] = field(default_factory=dict)  # the course's own, by name
    printed: dict[str, str] = field(default_factory=dict)  # what the student's code printed in a call, by key

    @classmethod
    def read(cls, got: Captured | None) -> Records | None:
        """The records of a capture, or None when the test did not run there (or sent nonsense)."""
        if got is None or got.value is None or got.value.kind != "list":
            return None
        out: dict[str, Record] = {}
        modules: dict[str, testmodules.Recorded] = {}
        ended = stderr = ""
        printed: dict[str, str] = {}
        for item in got.value.data:
            parts: tuple[Value, ...] = item.data if item.kind == "tuple" else ()
            if len(parts) < 2 or any(p.kind != "str" for p in parts[:2]):
                return None
            kind, key = parts[0].data, parts[1].data
            ident, name = -1, ""
            told = (
                IDENT.fullmatch(str(parts[-1].data))
                if kind == "h" and len(parts) > 3 and parts[-1].kind == "str"
                else None
            )
            if told is not None:  # the object's number (``identity``), and a library function's name
                ident, name, parts = int(told.group(1)), told.group(2) or "", parts[:-1]
            texts = [p.data if p.kind == "str" else "" for p in parts[2:]]
            if kind == "v" and len(parts) == 3:
                out[key] = Record("v", value=parts[2])
            elif kind == "v" and len(parts) == 4 and parts[3].kind == "str" and ARRAYS.fullmatch(str(parts[3].data)):
                arrays = tuple(int(n) for n in str(parts[3].data)[1:].split(","))
                out[key] = Record("v", value=parts[2], arrays=arrays)
            elif kind == "h" and len(parts) == 3:
                out[key] = Record("h", detail=texts[0], ident=ident, name=name)
            elif kind == "h" and len(parts) == 4 and isinstance(parts[3].data, ClassRef):
                out[key] = Record("h", value=parts[3], detail=texts[0], ident=ident, name=name)  # with its class
            elif kind == "e" and len(texts) == 3:
                out[key] = Record("e", ename=texts[0], base=texts[1], detail=texts[2])
            elif kind in ("end", "l"):
                out[key] = Record(kind)
            elif kind == "stop" and len(texts) == 2:
                ended = texts[0]
            elif kind == "stderr" and len(texts) == 1:
                stderr = texts[0]
            elif kind == "o" and len(texts) == 1:
                printed[key] = texts[0]
            elif not testmodules.read(kind, key, parts[2:], modules):
                return None
        return cls(out, ended, stderr, modules, printed)


def one_array_each(value: Any, idents: tuple[int, ...], seen: dict[int, Any]) -> Any:
    """The value of a record with each array that is one the test met before (``idents``: the same
    object of the student's, by its number; ``seen``: those met so far, which this adds to) and
    unchanged since as that very array, as it is in the student's process."""
    import numpy as np

    slots = array_slots(value)
    if len(slots) != len(idents):
        return value
    for (container, where, arr), ident in zip(slots, idents, strict=True):
        before = seen.get(ident)
        if before is None or before.dtype != arr.dtype or not np.array_equal(before, arr):
            seen[ident] = arr
        elif container is None:
            value = before
        elif type(container) is not tuple:
            container[where] = before
    return value
