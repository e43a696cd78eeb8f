"""What the test's recorder reads of the student's process around the test's calls into the
student's code (``grader.run.test_recorder``): the generators' states (put back so the student's
draws go on as in a kernel), a seeding call of the test's own, a digest of a value the test hands in
(whether the call changed it in place), and the name of a library's function the student keeps."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from typing import Any


def rng_state() -> tuple[Any, ...]:
    import random

    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    return (
        random.getstate(),
        np.random.get_state() if np is not None else None,
        torch.random.get_rng_state() if torch is not None else None,
    )


def library_name(value: Any) -> str:
    """``=module:qualname`` for a library's function (``math.sqrt`` kept in the student's dict), which
    the grader compares with its own; "" for anything else (the notebook's own functions)."""
    if not isinstance(value, (types.FunctionType, types.BuiltinFunctionType)):
        return ""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module in ("__main__", "builtins"):
        return ""
    if not re.fullmatch(r"[\w.]{1,200}", module) or not re.fullmatch(r"[\w.]{1,200}", qualname) or "<" in qualname:
        return ""
    return f"={module}:{qualname}"


_UNCHANGEABLE = (int, float, complex, str, bytes, bool, type(None), frozenset, range)


def fingerprint(value: Any) -> Any:
    """What tells whether a value changed in place: a digest of its contents (an array's bytes, a
    list's or a frame's pickle); None where none can be made, which counts as changed."""
    import hashlib
    import pickle

    if isinstance(value, _UNCHANGEABLE):
        return ("same", id(value))
    np = sys.modules.get("numpy")
    try:
        if np is not None and type(value) is np.ndarray:
            return (
                "array",
                value.shape,
                value.dtype.str,
                hashlib.blake2b(np.ascontiguousarray(value).tobytes()).digest(),
            )
        return ("pickle", hashlib.blake2b(pickle.dumps(value, protocol=4)).digest())
    except Exception:  # noqa: BLE001 - an object that cannot be read whole counts as changed
        return None


SEEDING = (("random", "seed"), ("numpy.random", "seed"), ("torch", "manual_seed"))


def watch_seeding(seeded: Callable[[], None]) -> Callable[[], None]:
    """While the test runs, a seeding call of the test's own (``np.random.seed(42)`` before each of
    two calls of the student's function) starts the student's next draws from it, as one generator
    does in a kernel: even where it seeds the state it was left in, which alone would look untouched.
    Returns what puts the functions back."""
    saved = []
    for module_name, name in SEEDING:
        module = sys.modules[module_name] if module_name in sys.modules else None
        original = getattr(module, name, None) if module is not None else None
        if original is None:
            continue

        def seeding(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            seeded()
            return _original(*args, **kwargs)

        try:
            setattr(module, name, seeding)
        except (AttributeError, TypeError):
            continue
        saved.append((module, name, original))

    def unwatch() -> None:
        for module, name, original in saved:
            setattr(module, name, original)

    return unwatch


def same_state(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two ``rng_state`` snapshots are the same state of every generator."""
    if a[0] != b[0]:
        return False
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if (a[1] is None) != (b[1] is None) or (a[2] is None) != (b[2] is None):
        return False
    if a[1] is not None and np is not None:
        if a[1][0] != b[1][0] or not np.array_equal(a[1][1], b[1][1]) or tuple(a[1][2:]) != tuple(b[1][2:]):
            return False
    return a[2] is None or torch is None or bool(torch.equal(a[2], b[2]))


def put_back(state: tuple[Any, ...]) -> None:
    import random

    random.setstate(state[0])
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if np is not None and state[1] is not None:
        np.random.set_state(state[1])
    if torch is not None and state[2] is not None:
        torch.random.set_rng_state(state[2])


MAX_SLOTS = 1000


def array_slots(value: Any, depth: int = 0) -> list[tuple[Any, Any, Any]]:
    """The NumPy arrays a value holds, in order, each with where it sits: ``(container, index or
    key, array)``, ``(None, None, array)`` for the value itself. Lists, tuples and dicts are walked
    (8 levels, 1,000 arrays): the same walk on both sides of the test's replay, so that one array of
    the student's held in two places is one array in the grader too (``[0, 1, xarray] == [0, 1,
    xarray]`` compares it by identity first, as Python does)."""
    np = sys.modules.get("numpy")
    if np is None:
        return []
    out: list[tuple[Any, Any, Any]] = []

    def walk(container: Any, where: Any, item: Any, level: int) -> None:
        if len(out) >= MAX_SLOTS or level > 8:
            return
        if type(item) is np.ndarray:
            out.append((container, where, item))
        elif type(item) in (list, tuple):
            for i, x in enumerate(item):
                walk(item, i, x, level + 1)
        elif type(item) is dict:
            for k, x in item.items():
                walk(item, k, x, level + 1)

    walk(None, None, value, depth)
    return out
