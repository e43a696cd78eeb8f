"""Calls into a student's function, recorded in the student's process and replayed in the
solution's: how a later solution step is run "with the student's function in place of its own"
while the solution's code never runs in the student's process and the student's code never
anywhere else.

In the student's run, ``recorder`` wraps the student's function where the notebook defines it and
keeps each call's arguments (copied before the call, so a change made in place later does not
rewrite them) and its result; the record comes back as plain data like any captured value. In
the solution's carry-forward run, ``replayer`` stands in for the solution's own function and
answers each call with the result the student's function gave for the same arguments, looked up
within a tight tolerance; a call the student's run never made is answered by the solution's own
function, so a step computed otherwise than the student's (a second mistake) does not come out
as the student's value. Only functions whose
arguments and results are plain data (numbers, arrays, tensors, lists, tuples, dicts) can be
followed; a record that cannot be captured is not replayed.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

MAX_CALLS = 2000  # calls recorded per function; a call after them is answered by the solution's own
MAX_BYTES = 16 * 2**20  # and the data they hold: a record is captured like any value, within its limits
RTOL, ATOL = 1e-6, 1e-9  # arguments the solution's code computes from replayed results may differ in the last bits


def _keep(*values: Any) -> list[Any] | None:
    """Copies of the values for the record, or None when one cannot be copied (a generator, a
    file): that call is not recorded, and recording never changes what the student's code does."""
    try:
        return [_snapshot(v) for v in values]
    except Exception:  # noqa: BLE001 - whatever copying raises, the call itself goes on
        return None


def _snapshot(value: Any) -> Any:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        items = [_snapshot(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    return copy.copy(value)


def _nbytes(value: Any) -> int:
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    size = getattr(value, "nbytes", None)
    if isinstance(size, int):
        return size
    numel = getattr(value, "numel", None)
    return int(numel()) * int(getattr(value, "element_size", lambda: 8)()) if callable(numel) else 64


def recorder(fn: Callable[..., Any], log: list[dict[str, Any]], ns: dict[str, Any], name: str) -> Callable[..., Any]:
    """``fn``, recording each call in ``log`` (up to ``MAX_CALLS`` calls and ``MAX_BYTES`` of data).
    While a call runs, ``ns[name]`` is ``fn`` itself, so a function that calls itself by name
    recurses as deep as it would without the grader (and only the outer call is recorded)."""
    spent = [0]

    @functools.wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        keep = len(log) < MAX_CALLS and spent[0] < MAX_BYTES
        kept = _keep(list(args), kwargs) if keep else None
        keep = kept is not None
        entry = {"args": kept[0], "kwargs": kept[1]} if kept is not None else {}
        rebound = ns.get(name) is recorded
        if rebound:
            ns[name] = fn
        try:
            result = fn(*args, **kwargs)
        finally:
            if rebound and ns.get(name) is fn:
                ns[name] = recorded
        answer = _keep(result) if keep else None
        if answer is not None:
            entry["result"] = answer[0]
            spent[0] += _nbytes(entry)
            log.append(entry)
        return result

    return recorded


def _numbers(value: Any) -> Any:
    """An array for a tensor, an array or a number; None for anything else."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().double().numpy() if value.is_floating_point() else value.cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic, int, float)) and not isinstance(value, bool):
        return np.asarray(value)
    return None


def same(a: Any, b: Any) -> bool:
    """Whether two arguments are the same data: equal in structure, numbers within tolerance."""
    import numpy as np

    x, y = _numbers(a), _numbers(b)
    if x is not None or y is not None:
        if x is None or y is None or x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            return bool(np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True))
        return bool(np.array_equal(x, y))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - data that cannot be compared is not the same
        return False


def replayer(
    name: str,
    table: list[dict[str, Any]],
    own: Callable[..., Any] | None = None,
    differs: dict[str, bool] | None = None,
) -> Callable[..., Any]:
    """A stand-in for ``name`` answering from the student's recorded calls. Calls are looked for
    from the one after the last answered (a loop calls in the same order), then from the start.
    A call the student's code never made is answered by the solution's ``own`` function: the
    solution's step then computes what it computes without the student's function there (the
    softmax of rows where the student took it of columns), so only a step whose calls all match
    the student's is computed with the student's answers alone. ``differs[name]`` says whether some
    answer given differs from what ``own`` gives for the same arguments: whether the student's
    function is wrong where the solution's step calls it."""
    if differs is not None:
        differs.setdefault(name, False)
    at = [0]

    def replayed(*args: Any, **kwargs: Any) -> Any:
        call: tuple[list[Any], dict[str, Any]] = (list(args), kwargs)
        n = len(table)
        for step in range(n):
            i = (at[0] + step) % n
            entry = table[i]
            if same(entry.get("args", []), call[0]) and same(entry.get("kwargs", {}), call[1]):
                at[0] = i + 1
                answer = entry.get("result")
                if differs is not None and own is not None and not differs[name]:
                    differs[name] = not same(answer, own(*copy.deepcopy(call[0]), **copy.deepcopy(call[1])))
                return copy.deepcopy(answer)
        if own is not None:
            return own(*args, **kwargs)
        raise LookupError(f"{name}() was not called with these arguments in the student's notebook")

    replayed.__name__ = replayed.__qualname__ = name
    return replayed


# --------------------------------------------------------------------------------------------
# A student's torch module (``class CausalAttention(nn.Module)``): each instance made and each
# forward call, with torch's random state before and after (its number in the record's
# ``states``), so a dropout or a weight drawn at construction is replayed exactly where the
# solution's code draws it.


def _rng() -> Any:
    import torch

    return torch.get_rng_state()


def _state_keeper(states: list[Any]) -> Callable[[], int]:
    """The number of torch's random state now in ``states``, the distinct states of one record
    (added when new): a state is 5 KB, and a record's entries mostly repeat a few (the state after
    one call is the next call's, a seed set again gives the same), so each is kept and sent once."""
    known: dict[bytes, int] = {}

    def number() -> int:
        state = _rng()
        try:
            key = state.numpy().tobytes()
        except Exception:  # noqa: BLE001 - a torch without NumPy: slower, and recording still never fails a call
            key = bytes(state.tolist())
        if key not in known:
            known[key] = len(states)
            states.append(state)
        return known[key]

    return number


def module_recorder(cls: type, log: dict[str, list[dict[str, Any]]], ns: dict[str, Any], name: str) -> type:
    """A subclass of the student's module class that records its instances and forward calls.
    While its own code runs, ``ns[name]`` is the class itself, so ``super(CausalAttention, self)``
    in it means what it meant without the grader."""
    made, calls = log.setdefault("made", []), log.setdefault("calls", [])
    state = _state_keeper(log.setdefault("states", []))

    @contextlib.contextmanager
    def original() -> Iterator[None]:
        rebound = ns.get(name) is Recorded
        if rebound:
            ns[name] = cls
        try:
            yield
        finally:
            if rebound and ns.get(name) is cls:
                ns[name] = Recorded

    class Recorded(cls):  # type: ignore[misc]  # a class the notebook defines
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # A subclass the student derives from it is another module: not recorded as this one.
            kept = _keep(list(args), kwargs) if type(self) is Recorded else None
            # The state is kept only for an entry that can still be kept (a new state is 5 KB).
            rng = state() if kept is not None and len(made) < MAX_CALLS else -1
            entry = {"args": kept[0], "kwargs": kept[1], "rng": rng} if kept is not None else None
            with original():
                super().__init__(*args, **kwargs)
            object.__setattr__(self, "_grader_made", len(made) if entry is not None else -1)
            if entry is not None and len(made) < MAX_CALLS:
                entry["after"] = state()
                made.append(entry)

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            kept = _keep(list(args), kwargs) if type(self) is Recorded else None
            entry = (
                {
                    "made": self._grader_made,
                    "training": bool(self.training),
                    "args": kept[0],
                    "kwargs": kept[1],
                    "rng": state() if len(calls) < MAX_CALLS else -1,
                }
                if kept is not None
                else None
            )
            with original():
                result = super().forward(*args, **kwargs)
            answer = _keep(result) if entry is not None and len(calls) < MAX_CALLS else None
            if entry is not None and answer is not None:
                entry["after"], entry["result"] = state(), answer[0]
                calls.append(entry)
            return result

    Recorded.__name__, Recorded.__qualname__, Recorded.__module__ = cls.__name__, cls.__qualname__, cls.__module__
    return Recorded


def module_replayer(name: str, log: dict[str, list[dict[str, Any]]], differs: dict[str, bool] | None = None) -> type:
    """A torch module standing in for the solution's class ``name``: an instance is the student's
    instance made with the same arguments from the same random state, and its forward answers as
    the student's did for the same input, mode and random state. Anything else raises LookupError."""
    import torch

    made, calls, states = log.get("made", []), log.get("calls", []), log.get("states", [])

    def now() -> int | None:  # the number of torch's random state now in the record, if it is one of them
        state = _rng()
        return next((i for i, kept in enumerate(states) if same(kept, state)), None)

    if differs is not None:
        differs[name] = True  # the solution's own module is not built to compare: its question says if it is right

    class Replayed(torch.nn.Module):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            state = now()
            for i, entry in enumerate(made):
                if entry["rng"] == state and same(entry["args"], list(args)) and same(entry["kwargs"], kwargs):
                    object.__setattr__(self, "_grader_made", i)
                    torch.set_rng_state(states[entry["after"]])
                    return
            raise LookupError(f"{name} was not made with these arguments in the student's notebook")

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            state = now()
            for entry in calls:
                if (
                    entry["made"] == self._grader_made
                    and entry["training"] == self.training
                    and entry["rng"] == state
                    and same(entry["args"], list(args))
                    and same(entry["kwargs"], kwargs)
                ):
                    torch.set_rng_state(states[entry["after"]])
                    return copy.deepcopy(entry["result"])
            raise LookupError(f"{name} was not called on this input in the student's notebook")

    Replayed.__name__ = Replayed.__qualname__ = name
    return Replayed


# --------------------------------------------------------------------------------------------
# A torch module *instance* the notebook makes and calls (``multihead_attn = nn.MultiheadAttention(
# ...)``, ``self_attention = SelfAttention(scale=False)``): its forward calls are recorded and
# replayed as a function's are, the instance itself kept (its class swapped for a subclass whose
# forward records or replays), so ``.eval()``, its parameters and attributes behave as before.


def _swap_forward(obj: Any, forward: Callable[..., Any]) -> bool:
    cls = type(obj)
    if getattr(cls, "_grader_forward", False):
        return False  # recorded or replayed already (the same instance bound again)
    try:
        obj.__class__ = type(
            cls.__name__,
            (cls,),
            {
                "forward": lambda self, *a, **k: forward(*a, **k),
                "_grader_forward": True,
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
            },
        )
    except TypeError:  # a class whose instances cannot change class: not followed
        return False
    return True


def instance_recorder(obj: Any, log: list[dict[str, Any]], name: str) -> bool:
    """Record each forward call of the torch module instance ``obj`` in ``log``, in place; False
    when it cannot be (then the instance is left as it was)."""
    own = obj.forward
    return _swap_forward(obj, recorder(own, log, {}, name))


def instance_replayer(obj: Any, name: str, table: list[dict[str, Any]], differs: dict[str, bool] | None = None) -> bool:
    """The solution's module instance ``obj`` answering its forward calls from the student's
    recorded ones (``replayer``), its own forward for a call the student never made."""
    own = obj.forward
    return _swap_forward(obj, replayer(name, table, own, differs))
