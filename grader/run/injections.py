"""What the rewritten cells call in the student process (``__grader_inject__(key)``): a variant's
input put in place, a carried step's value kept and replaced, the student's function wrapped so its
calls are recorded or a recorded one replayed, the solution's definition put in place of one that
raised. Student side: it imports nothing of the grader's side (``grader.run.worker`` installs it).
"""

from __future__ import annotations

import functools
import inspect
import sys
from typing import TYPE_CHECKING, Any

from grader import capture
from grader.names import ALIAS, CALLS, CARRIED, FIX, INJECT, RECORD, REPLAY
from grader.run import calls

if TYPE_CHECKING:  # the job's shape, for the type checker only
    from grader.run.job import JobWire


FIX_FILE = "<solution>"


def install_injections(ns: dict[str, Any], job: JobWire) -> None:
    """Put the function the rewritten cells call (``__grader_inject__(key)``) into the namespace.

    A plain injection replaces the name ``key`` (a variant's input). A carried one (``carries``:
    key -> name) first keeps the value the name holds there, under ``__grader_carried__[key]``,
    for a capture to read at the end, then replaces it: the solution's own value of a step computed
    from the student's values of the steps before it."""
    values = job.get("injections") or {}
    if not values:
        return
    carries = job.get("carries") or {}
    kept: dict[str, Any] = {}

    def inject(key: str) -> None:
        if key.startswith(RECORD):  # the student's function, its calls recorded (``grader.run.calls``)
            name = key[len(RECORD) :]
            record = ns.get(CALLS)
            if not isinstance(record, dict):
                record = ns[CALLS] = {}
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(ns.get(name), type) and issubclass(ns[name], torch.nn.Module):
                ns[name] = calls.module_recorder(ns[name], record.setdefault(name, {}), ns, name)
            elif torch is not None and isinstance(ns.get(name), torch.nn.Module):  # an instance, kept
                calls.instance_recorder(ns[name], record.setdefault(name, []), name)
            elif inspect.isroutine(ns.get(name)) or isinstance(ns.get(name), functools.partial):
                ns[name] = calls.recorder(ns[name], record.setdefault(name, []), ns, name)
            return
        if key.startswith(FIX):  # the solution's definition in place of the student's (``judge.fixes``)
            name = key[len(FIX) :]
            source = capture.to_python(capture.decode(values[key]))
            apart = dict(ns)  # its helpers are defined apart: the notebook's own names stay the student's
            exec(compile(source, FIX_FILE, "exec"), apart)  # noqa: S102 - the course's own solution code
            if name in apart:
                ns[name] = apart[name]
            return
        if key.startswith(REPLAY):  # in the solution's run: the student's recorded answers stand in
            name = key[len(REPLAY) :]
            record = ns.get(CALLS)
            if not isinstance(record, dict):
                record = ns[CALLS] = {}
            table = capture.to_python(capture.decode(values[key]))
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(table, list) and isinstance(ns.get(name), torch.nn.Module):
                calls.instance_replayer(ns[name], name, table, record)  # the solution's instance, kept
                return
            ns[name] = (
                calls.module_replayer(name, table, record)
                if isinstance(table, dict)
                else calls.replayer(name, table, ns.get(name), record)
            )
            return
        if key.startswith(ALIAS):  # a variant's input under the student's own name for it
            name = key[len(ALIAS) :]
            ns[name] = rebuild(values[key], like=ns.get(name))
            return
        name = carries.get(key, key)
        if key in carries and name in ns:
            kept[key] = ns[name]
        ns[name] = rebuild(values[key], like=ns.get(name))

    ns[INJECT] = inject
    if carries:
        ns[CARRIED] = kept


def rebuild(enc: dict[str, Any], like: Any = None) -> Any:
    """An injected value (a variant's input) in the form the notebook itself used for that name:
    a tensor (or Parameter) for a tensor, an array for an array, lists for lists, keeping dtypes."""
    return _as_like(capture.decode(enc), like)


def _as_like(value: Any, like: Any) -> Any:
    import numpy as np

    if value.kind in ("list", "tuple", "dict"):
        if value.kind == "dict":
            return {k: _as_like(v, like.get(k) if isinstance(like, dict) else None) for k, v in value.data.items()}
        items = [
            _as_like(v, like[i] if isinstance(like, (list, tuple)) and i < len(like) else None)
            for i, v in enumerate(value.data)
        ]
        return items if value.kind == "list" else tuple(items)
    if value.kind != "array":  # a student's table, set, string... carried into the solution's run: a copy
        return capture.to_python(value)
    arr = np.array(value.data)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        t = torch.from_numpy(arr).to(like.dtype)
        if isinstance(like, torch.nn.Parameter):
            return torch.nn.Parameter(t, requires_grad=like.requires_grad)
        return t.requires_grad_(like.requires_grad) if like.is_floating_point() else t
    if isinstance(like, np.ndarray):
        return arr.astype(like.dtype, copy=False)
    if isinstance(like, (list, tuple)):
        return arr.tolist() if isinstance(like, list) else tuple(arr.tolist())
    if isinstance(like, (int, float)) and arr.ndim == 0:
        return type(like)(arr.item())
    if like is None and value.origin.startswith("torch"):
        import torch as _torch

        return _torch.from_numpy(arr)
    return arr
