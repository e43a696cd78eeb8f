"""The student side of a test's import of a module the assignment ships: which of the modules a
test imports are the course's own, and what the notebook left in them.

A module is the course's own when its file is in the run's working folder (``helper.py``, a
package folder's ``pkg/mod.py``), where the assignment's files are; a library (numpy, a module of
the grader's) never is, and is neither imported nor read here. Each of the course's modules the
test imports is imported as the test's own import would (a module the notebook never imported
then stands as shipped), and recorded: its file, then each of its values that is plain data, as
it stands at the test's point. A function, a class or a module is never sent: the grader's copy
keeps its own (``grader.judge.testmodules``).

Like ``grader.run.test_recorder``, it imports nothing of the grader's side.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import types
from typing import Any

from grader import capture
from grader.errors import CaptureFailed
from grader.run import frames

# The bytes one test's records may spend on the values of the course's modules, and the objects
# and lists their encoding may hold (the frame they travel in holds at most ``MAX_FRAME_CONTAINERS``).
BUDGET = 8 * 1024 * 1024
CONTAINERS = 30_000


def _origin(module: Any) -> str | None:
    """Where a module's code is: its file, or a namespace package's first folder."""
    found = getattr(module, "__file__", None)
    if isinstance(found, str):
        return found
    path = getattr(module, "__path__", None)
    return next((p for p in path if isinstance(p, str)), None) if path is not None else None


def course_file(origin: str | None, workdir: str) -> str | None:
    """A module's file relative to the run's working folder (``helper.py``, ``pkg/__init__.py``),
    or None for a module from anywhere else (a library)."""
    if origin is None or not os.path.isabs(origin):  # ``built-in``, ``frozen``
        return None
    real, base = os.path.realpath(origin), os.path.realpath(workdir)
    return os.path.relpath(real, base).replace(os.sep, "/") if real.startswith(base + os.sep) else None


def _course_top(name: str, workdir: str) -> bool:
    """Whether the top-level module ``name`` is one of the course's own: loaded from, or found
    (without importing it) in, the working folder."""
    if name in sys.modules:
        return course_file(_origin(sys.modules[name]), workdir) is not None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin, *(spec.submodule_search_locations or ())]
    return any(course_file(p, workdir) is not None for p in places if isinstance(p, str))


def _str(text: str) -> dict[str, Any]:
    return {"t": "str", "v": text}


def record(names: Any, workdir: str, budget: list[int]) -> list[tuple[Any, ...]]:
    """The records of the course's own modules among ``names`` (what the test imports): ``("m",
    module, file)`` for each, then ``("ma", module, name, value)`` for each of its plain-data values,
    the value encoded (``budget``: bytes still allowed, at most ``BUDGET`` of them spent here)."""
    wanted = [n for n in names if isinstance(n, str)] if isinstance(names, tuple) else []
    tops = {top for top in {n.partition(".")[0] for n in wanted} if _course_top(top, workdir)}
    for name in wanted:
        if name.partition(".")[0] in tops:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001,S112 - not a module (``from m import x`` of a value), or it fails
                continue
    out: list[tuple[Any, ...]] = []
    spend = [min(BUDGET, budget[0])]
    start, left = spend[0], CONTAINERS
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] not in tops:
            continue
        try:  # what the notebook left under that name decides what its attributes do
            path = course_file(_origin(module), workdir)
            items = list(vars(module).items()) if path is not None else []
        except Exception:  # noqa: BLE001,S112 - not a module as Python makes them: nothing to send
            continue
        if path is None:
            continue
        out.append(("m", name, _str(path)))
        for attr, value in items:
            if attr.startswith("__") or isinstance(value, (type, types.ModuleType)) or callable(value):
                continue
            try:
                encoded = capture.encode(value, budget=spend)
            except (CaptureFailed, RecursionError):
                continue  # the grader's copy keeps its own value
            held = frames.items_in(json.dumps(encoded).encode())
            if held <= left:
                left -= held
                out.append(("ma", name, _str(attr), encoded))
    budget[0] -= start - spend[0]
    return out
