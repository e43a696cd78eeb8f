"""The student side of an instructor's ``test`` check: run it over the notebook's namespace and
record what every call into the student's code gave back.

The test arrives rewritten (``grader.judge.testrewrite``): each site is ``__grader_site__(n,
thunk)`` and so on. Here the thunks run on the student's real objects, as the test's author wrote
them, and each result is recorded under a key that says where it happened (the site, its
occurrence, and the site it ran inside): as plain data, as an opaque handle (what it is, in
``grader.capture``'s words), or as the exception it raised. The grader runs the test again on
those records. Nothing recorded here decides a verdict: a record says only what the student's
code returned, which the student's code decides anyway.

Around each call into the student's code the random generators of ``random``, NumPy and torch are
put back as they were, so the test's own random inputs are the same here as in the grader (where
the student's code does not run). The student's calls draw from a stream of their own: from the
generators as the test left them, and where the test has neither drawn nor seeded since the last
call, on from where that call left off, as in one process (``np.random.seed(88)`` and then a
function of the student's that draws, called a thousand times, gives the thousand draws a test
run in the student's kernel gives).

Like ``grader.run.worker``, it imports nothing of the grader's side.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

from grader import capture, nose_tools
from grader.capture import classes
from grader.errors import CaptureFailed
from grader.names import CHECK_FILE, TEST_ASSERT, TEST_AT, TEST_DEL, TEST_ITER, TEST_SITE, TEST_WITH
from grader.seeding import seed_everything

MAX_RECORDS = 50_000


def _str(kind: str) -> dict[str, Any]:
    return {"t": "str", "v": kind}


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)[:500]
    except BaseException:  # noqa: BLE001 - the student's exception class decides what str() does
        return "<unprintable message>"


def _builtin_base(exc: BaseException) -> str:
    """The first builtin class among the exception's bases (``ValueError`` for a ``class
    ShapeError(ValueError)``), so the test's ``except ValueError`` catches it in the grader too."""
    for cls in type(exc).__mro__:
        if getattr(builtins, cls.__name__, None) is cls:
            return str(cls.__name__)
    return "Exception"


def _rng_state() -> tuple[Any, ...]:
    import random

    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    return (
        random.getstate(),
        np.random.get_state() if np is not None else None,
        torch.random.get_rng_state() if torch is not None else None,
    )


def _same_state(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two ``_rng_state`` snapshots are the same state of every generator."""
    if a[0] != b[0]:
        return False
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if (a[1] is None) != (b[1] is None) or (a[2] is None) != (b[2] is None):
        return False
    if a[1] is not None and np is not None:
        if a[1][0] != b[1][0] or not np.array_equal(a[1][1], b[1][1]) or tuple(a[1][2:]) != tuple(b[1][2:]):
            return False
    return a[2] is None or torch is None or bool(torch.equal(a[2], b[2]))


def _put_back(state: tuple[Any, ...]) -> None:
    import random

    random.setstate(state[0])
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if np is not None and state[1] is not None:
        np.random.set_state(state[1])
    if torch is not None and state[2] is not None:
        torch.random.set_rng_state(state[2])


def _class_of(value: Any) -> list[dict[str, Any]]:
    """A handle's class, as ``type`` says it (``grader.capture.classes``): the grader answers
    ``type(handle)``, ``isinstance`` and ``issubclass`` from it."""
    try:
        return [classes.type_of(value)]
    except Exception:  # noqa: BLE001 - a class whose names cannot be read: the handle goes without
        return []


class Recorder:
    """The records of one run of one test: ``key -> (kind, payload)`` in the order they happened."""

    def __init__(self, budget: list[int]):
        self.budget = budget
        self.records: list[dict[str, Any]] = []
        self.stack: list[tuple[str, dict[int, int]]] = [("", {})]
        # The student's stream: where their last call left the generators, and the test's state
        # that was put back after it (the student's next call goes on from there if the test's
        # generators are still in that state).
        self.student: tuple[Any, ...] | None = None
        self.left: tuple[Any, ...] | None = None

    def into_student(self) -> tuple[Any, ...]:
        """Before a top-level call into the student's code: the test's generators, as they stand
        (put back afterwards); the student's stream goes on where the test has not touched them."""
        test = _rng_state()
        if self.student is not None and self.left is not None and _same_state(test, self.left):
            _put_back(self.student)
        return test

    def out_of_student(self, test: tuple[Any, ...]) -> None:
        self.student = _rng_state()
        _put_back(test)
        self.left = test

    def key(self, index: int) -> str:
        parent, counts = self.stack[-1]
        n = counts.get(index, 0)
        counts[index] = n + 1
        return f"{parent}/{index}.{n}"

    def add(self, kind: str, key: str, *payload: dict[str, Any]) -> None:
        if len(self.records) < MAX_RECORDS:
            self.records.append({"t": "tuple", "items": [_str(kind), _str(key), *payload]})

    def keep(self, key: str, value: Any) -> bool:
        """Record a value; whether it went as plain data."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Size):
            value = tuple(int(n) for n in value)  # a shape is plain data
        try:
            self.add("v", key, capture.encode(value, budget=self.budget))
            return True
        except CaptureFailed as exc:
            self.add("h", key, _str(str(exc)), *_class_of(value))
        except RecursionError:
            self.add("h", key, _str("is nested too deeply to compare"), *_class_of(value))
        return False

    def error(self, key: str, exc: BaseException) -> None:
        self.add("e", key, _str(type(exc).__name__[:100]), _str(_builtin_base(exc)), _str(_safe_str(exc)))

    def call(self, key: str, thunk: Any) -> Any:
        """Run a thunk within ``key``: the sites inside it are recorded under it."""
        self.stack.append((key, {}))
        state = self.into_student() if len(self.stack) == 2 else None
        try:
            return thunk()
        except BaseException as exc:
            self.error(key, exc)
            raise
        finally:
            self.stack.pop()
            if state is not None:
                self.out_of_student(state)

    # The helpers the rewritten test calls ------------------------------------------------------

    def site(self, index: int, thunk: Any) -> Any:
        key = self.key(index)
        value = self.call(key, thunk)
        self.keep(key, value)
        return value

    def iterate(self, index: int, thunk: Any) -> Any:
        key = self.key(index)
        obj = self.call(key, thunk)
        try:
            capture.encode(obj, budget=[self.budget[0]])
            return iter(obj)  # the grader holds it as data and iterates its own copy
        except (CaptureFailed, RecursionError):
            pass
        return self._items(key, obj)

    def _items(self, key: str, obj: Any) -> Any:
        it = self.call(f"{key}/iter", lambda: iter(obj))
        k = 0
        while True:
            item_key = f"{key}/#{k}"
            self.stack.append((item_key, {}))
            state = self.into_student() if len(self.stack) == 2 else None
            try:
                item = next(it)
            except StopIteration:
                self.add("end", f"{key}/end")
                return
            except BaseException as exc:
                self.error(item_key, exc)
                raise
            finally:
                self.stack.pop()
                if state is not None:
                    self.out_of_student(state)
            self.keep(item_key, item)
            yield item
            k += 1

    def with_(self, index: int, thunk: Any) -> Any:
        key = self.key(index)
        obj = self.call(key, thunk)
        recorder = self

        class Entered:
            def __enter__(self) -> Any:
                value = recorder.call(f"{key}/enter", lambda: type(obj).__enter__(obj))
                recorder.keep(f"{key}/enter", value)
                return value

            def __exit__(self, *exc: Any) -> bool:
                out = bool(recorder.call(f"{key}/exit", lambda: type(obj).__exit__(obj, *exc)))
                recorder.keep(f"{key}/exit", out)
                return out

        return Entered()


def _assert(index: int, thunk: Any, message: Any) -> None:
    """Here an assert only reaches the student's code; the grader judges it."""
    try:
        thunk()
    except Exception:  # noqa: BLE001,S110 - the grader sees the same failure on its records
        pass


def _not_described(value: Any) -> str:
    """How a helper's failure describes the student's value here: not at all (the grader judges the
    test again and words it; here only whether the helper raised matters), so no code of the
    student's runs for it."""
    return "a value"


def record_test(source: str, ns: dict[str, Any], seed: int, budget: list[int]) -> dict[str, Any]:
    """Run the rewritten test in the notebook's namespace (as a test cell runs there), then put the
    namespace and the random generators back as they were (a test taken in the middle of the
    notebook changes nothing the later cells see); the records, encoded, end with how the run ended."""
    nose_tools.install(_not_described)
    recorder = Recorder(budget)
    saved = dict(ns)
    ns.update(
        {
            TEST_SITE: recorder.site,
            TEST_ITER: recorder.iterate,
            TEST_WITH: recorder.with_,
            TEST_ASSERT: _assert,
            TEST_AT: lambda n: None,
            TEST_DEL: lambda name: _delete(ns, name),
        }
    )
    state = _rng_state()  # the test's own seeding is its own: the notebook's draws go on as they were
    seed_everything(seed)
    ended: tuple[str, str] = ("", "")
    stderr, sys.stderr = sys.stderr, _ErrorStream(sys.stderr)  # warnings too: they are written there
    try:
        exec(compile(source, CHECK_FILE, "exec"), ns)  # noqa: S102 - student process, student namespace
    except BaseException as exc:  # noqa: BLE001 - how the test ended here is a record, whatever it was
        ended = (type(exc).__name__[:100], _safe_str(exc))
    finally:
        written, sys.stderr = getattr(sys.stderr, "first", ""), stderr
        ns.clear()
        ns.update(saved)
        _put_back(state)
    if written:  # for a check with ``stderr_fails``: what the test showed on stderr fails it
        recorder.records.append({"t": "tuple", "items": [_str("stderr"), _str(""), _str(written)]})
    recorder.records.append({"t": "tuple", "items": [_str("stop"), _str(""), _str(ended[0]), _str(ended[1])]})
    return {"t": "list", "items": recorder.records}


class _ErrorStream:
    """``sys.stderr`` while a test runs: passes everything on, keeps the first line written."""

    def __init__(self, inner: Any):
        self.inner, self.first = inner, ""

    def write(self, text: Any) -> int:
        if not self.first and isinstance(text, str) and text.strip():
            self.first = text.strip().splitlines()[0][:200]
        return int(self.inner.write(text) or 0)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _delete(ns: dict[str, Any], name: str) -> None:
    if name not in ns:
        raise NameError(f"name {name!r} is not defined")
    del ns[name]
