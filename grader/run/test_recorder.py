"""The student side of an instructor's ``test`` check: run it over the notebook's namespace and
record what every call into the student's code gave back.

The test arrives rewritten (``grader.judge.testrewrite``): each site is ``__grader_site__(n,
thunk)`` and so on. Here the thunks run on the student's real objects, as the test's author wrote
them, and each result is recorded under a key that says where it happened (the site, its
occurrence, and the site it ran inside): as plain data, as an opaque handle (what it is, in
``grader.capture``'s words), or as the exception it raised. The grader runs the test again on
those records. Nothing recorded here decides a verdict: a record says only what the student's
code returned, which the student's code decides anyway.

A site the grader computes itself (``local``: a chain on a value the test got, a builtin called on
one) is recorded only where the grader may need the record: where computing it reaches a value the
grader holds only as a handle. Elsewhere its record says only that (``l``): a test's own reference
function run on frames of millions of rows is computed in the grader, never encoded here.

A test that times the student's code reads a clock (``time.perf_counter()`` at a site, the notebook's
``time``): its readings here leave out the time this thread waited, runnable, for a CPU that other
work held (the kernel's count, ``/proc/thread-self/schedstat``), so ``elapsed < 0.1`` or ``actual /
expected < 1.5`` measures the code as on an idle machine, as the course means it, whatever else
the grading machine runs.

Around each call into the student's code the random generators of ``random``, NumPy and torch are
put back as they were, so the test's own random inputs are the same here as in the grader (where
the student's code does not run). The student's calls draw from a stream of their own: from the
generators as the test left them, and where the test has neither drawn nor seeded since the last
call, on from where that call left off, as in one process (``np.random.seed(88)`` and then a
function of the student's that draws, called a thousand times, gives the thousand draws a test
run in the student's kernel gives).

Like ``grader.run.worker``, it imports nothing of the grader's side.

Why one module: what is recorded, under which key (a value, a handle and which object it is, what a
call printed), and when a local site needs its record are one protocol with
``grader.judge.testrecords``, which reads it; the generators' stream, the clock and the
handles a walk looks for are all state of one run of one test (``Recorder``). The course's own
modules a test imports are read apart (``grader.run.course_modules``), and what is read of the
process around a call (the generators' states, a seeding call of the test's own, a digest of a value
the test hands in) is ``grader.run.student_state``.
"""

from __future__ import annotations

import builtins
import collections
import functools
import io
import os
import sys
import time
import types
from typing import Any

from grader import capture, nose_tools
from grader.capture import classes
from grader.capture.values import FACTORIES
from grader.errors import CaptureFailed
from grader.names import (
    CHECK_FILE,
    PRINTOPTION_KEYS,
    PRINTOPTIONS,
    TEST_ASSERT,
    TEST_AT,
    TEST_DEL,
    TEST_ITER,
    TEST_MODULES,
    TEST_SITE,
    TEST_SNAP,
    TEST_SYNC,
    TEST_WITH,
)
from grader.run import course_modules
from grader.run.student_state import (
    array_slots,
    fingerprint,
    library_name,
    put_back,
    rng_state,
    same_state,
    watch_seeding,
)
from grader.seeding import seed_everything

MAX_RECORDS = 50_000
# How many values ``Recorder.reaches_handle`` looks at before it takes the site to need its record.
MAX_WALK = 10_000


MAX_PRINTED = 20_000  # characters of what one call into the student's code prints, kept for the grader


class _FirstText(io.TextIOBase):
    """Standard output during a call from the test: the first ``limit`` characters kept, the rest
    let go (a loop that prints forever costs the run no memory)."""

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0
        self.parts: list[str] = []

    encoding = "utf-8"  # as a real stream says it (code that prints may ask)

    def writable(self) -> bool:
        return True

    def write(self, text: Any) -> int:
        text = str(text)
        if self.size < self.limit:
            kept = text[: self.limit - self.size]
            self.parts.append(kept)
            self.size += len(kept)
        return len(text)

    def getvalue(self) -> str:
        return "".join(self.parts)


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


@functools.cache
def _printoptions() -> dict[str, Any]:
    """NumPy's print options as the notebook left them, those that are plain data (a ``formatter``
    of functions stays here): how ``str(array)`` reads in this process; none without NumPy."""
    np = sys.modules.get("numpy")
    if np is None:
        return {}
    try:
        current = dict(np.get_printoptions())
    except Exception:  # noqa: BLE001 - a numpy whose options cannot be read: the grader's own are used
        return {}
    return {k: v for k, v in current.items() if k in PRINTOPTION_KEYS and isinstance(v, (bool, int, float, str))}


def _names(code: types.CodeType) -> frozenset[str]:
    """The global names a function's code (and the code nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return frozenset(n for n in names if not n.startswith("__grader"))


def _default_stays(value: Any) -> bool:
    """A defaultdict whose default the student's function makes (a lambda, a class): it crosses
    with its items, and the grader cannot make a missing key's default."""
    if type(value) is not collections.defaultdict or value.default_factory is None:
        return False
    factory = value.default_factory
    return FACTORIES.get(getattr(factory, "__name__", "")) is not factory


def _free_values(fn: types.FunctionType) -> list[Any]:
    """What a function of the test's can read besides its arguments: its closure, its defaults and
    the globals its code names."""
    out: list[Any] = []
    for cell in fn.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            pass
    out.extend(fn.__defaults__ or ())
    out.extend((fn.__kwdefaults__ or {}).values())
    found = fn.__globals__
    out.extend(found[n] for n in _names(fn.__code__) if n in found)
    return out


# The clocks a test times code with, as the library defines them (``timeit.default_timer`` is
# ``time.perf_counter``).
_CLOCKS = frozenset(
    {time.perf_counter, time.perf_counter_ns, time.monotonic, time.monotonic_ns, time.time, time.time_ns}
)


def _reads_clock(thunk: Any) -> bool:
    """Whether a site is a clock's reading: ``time.perf_counter()``, ``perf_counter()`` imported from
    ``time``, ``timeit.default_timer()``; told by the function it names, the library's own."""
    code = getattr(thunk, "__code__", None)
    if code is None or not 1 <= len(code.co_names) <= 2 or thunk.__closure__:
        return False
    found: Any = thunk.__globals__.get(code.co_names[0])
    if len(code.co_names) == 2:
        if not isinstance(found, types.ModuleType):
            return False
        found = getattr(found, code.co_names[1], None)
    return any(found is clock for clock in _CLOCKS)


def _waited() -> float:
    """Seconds this thread has waited, runnable, for a CPU other work held (0 where the kernel does
    not say)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


class OwnClock:
    """What a test's clock reads here: the clock's reading less the time this thread has waited
    for a CPU since the test began. The kernel counts a wait from a clock it updates at its ticks,
    so its count can run a tick ahead: between two readings the time taken out is at most the time
    the thread was off its CPU (its CPU time, ``time.thread_time``, always counts), so readings
    never go back, and a function that only waits (on a thread of its own) takes its whole time."""

    def __init__(self) -> None:
        self.wall, self.cpu, self.wait = time.perf_counter(), time.thread_time(), _waited()
        self.taken = 0.0  # seconds taken out of the readings so far

    def __call__(self, reading: Any) -> Any:
        if type(reading) not in (float, int):
            return reading
        wall, cpu, wait = time.perf_counter(), time.thread_time(), _waited()
        self.taken += max(0.0, min(wait - self.wait, (wall - self.wall) - (cpu - self.cpu)))
        self.wall, self.cpu, self.wait = wall, cpu, wait
        return reading - self.taken if type(reading) is float else reading - int(self.taken * 1e9)


def _class_of(value: Any) -> list[dict[str, Any]]:
    """A handle's class, as ``type`` says it (``grader.capture.classes``): the grader answers
    ``type(handle)``, ``isinstance`` and ``issubclass`` from it."""
    try:
        return [classes.type_of(value)]
    except Exception:  # noqa: BLE001 - a class whose names cannot be read: the handle goes without
        return []


class Recorder:
    """The records of one run of one test: ``key -> (kind, payload)`` in the order they happened."""

    def __init__(self, budget: list[int], local: frozenset[int] = frozenset()):
        self.budget = budget
        self.local = local  # the sites the grader computes itself where it holds their inputs as data
        self.records: list[dict[str, Any]] = []
        self.stack: list[tuple[str, dict[int, int]]] = [("", {})]
        # The values recorded as handles (or as exceptions), by id, held so no id is reused: the
        # grader holds them only as handles, so a site of its own that reads one needs its record.
        self.handles: dict[int, Any] = {}
        self.idents: dict[int, int] = {}  # a handle's object -> the number that tells it (``identity``)
        self.opaque = 0  # how many handle and exception records were made
        self.own_time = OwnClock()  # what the test's clock readings are here
        # The student's stream: where their last call left the generators, and the test's state
        # that was put back after it (the student's next call goes on from there if the test's
        # generators are still in that state).
        self.student: tuple[Any, ...] | None = None
        self.left: tuple[Any, ...] | None = None
        self.snaps: dict[int, Any] = {}  # a value the test hands the student's code, as it was before

    def forget_left(self) -> None:
        """The test seeded a generator itself: the student's next draws start from there."""
        self.left = None

    def into_student(self) -> tuple[Any, ...]:
        """Before a top-level call into the student's code: the test's generators, as they stand
        (put back afterwards); the student's stream goes on where the test has not touched them."""
        test = rng_state()
        if self.student is not None and self.left is not None and same_state(test, self.left):
            put_back(self.student)
        return test

    def out_of_student(self, test: tuple[Any, ...]) -> None:
        self.student = rng_state()
        put_back(test)
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
            encoded = capture.encode(value, budget=self.budget)
            arrays = array_slots(value)
            if arrays:  # which of the student's arrays these are: one array in two places is one
                for _, _, arr in arrays:
                    self.handles[id(arr)] = arr
                told = ",".join(str(self.idents.setdefault(id(arr), len(self.idents))) for _, _, arr in arrays)
                self.add("v", key, encoded, _str(f"#{told}"))
            else:
                self.add("v", key, encoded)
            # A class the notebook made crosses as its record, which the grader cannot call (a site of
            # the grader's own that calls it, ``B(10)`` for ``check(Bus)``, needs its record); a
            # defaultdict's missing keys' defaults are made here only.
            if isinstance(value, type) and not classes.importable(value) or _default_stays(value):
                self.handles[id(value)] = value
            return True
        except CaptureFailed as exc:
            self.add("h", key, _str(str(exc)), *_class_of(value), self.identity(value))
        except RecursionError:
            self.add("h", key, _str("is nested too deeply to compare"), *_class_of(value), self.identity(value))
        self.handles[id(value)] = value
        self.opaque += 1
        return False

    def identity(self, value: Any) -> dict[str, Any]:
        """``@n``: the same n for the same object each time it is a handle here, so the grader's
        ``fig.axes[0] is ax`` is what it is here."""
        self.handles[id(value)] = value  # held: its id is not reused while the test runs
        return _str(f"@{self.idents.setdefault(id(value), len(self.idents))}{library_name(value)}")

    def error(self, key: str, exc: BaseException) -> None:
        self.opaque += 1
        self.add("e", key, _str(type(exc).__name__[:100]), _str(_builtin_base(exc)), _str(_safe_str(exc)))

    def reaches_handle(self, thunk: types.FunctionType) -> bool:
        """Whether a site's thunk reads a value the grader holds only as a handle: one recorded as
        a handle, or a list, tuple, set or dict, a function of the test's or an object of a class
        the notebook or the test defines that holds one, as far as a walk of ``MAX_WALK`` values
        sees (past it, it may)."""
        if not self.handles:
            return False
        main = thunk.__globals__.get("__name__")
        todo, seen = _free_values(thunk), set()
        while todo:
            value = todo.pop()
            if id(value) in seen:
                continue
            seen.add(id(value))
            if id(value) in self.handles or len(seen) > MAX_WALK:
                return True
            kind = type(value)
            if kind in (list, tuple, set, frozenset):
                todo.extend(value)
            elif kind is dict:
                todo.extend(value)
                todo.extend(value.values())
            elif kind is types.FunctionType and value.__code__.co_filename == CHECK_FILE:
                todo.extend(_free_values(value))
            elif kind is types.MethodType:
                todo.extend((value.__self__, value.__func__))
            elif getattr(kind, "__module__", None) == main and not isinstance(value, type):
                try:
                    todo.extend(object.__getattribute__(value, "__dict__").values())
                except (AttributeError, TypeError):
                    pass
        return False

    def call(self, key: str, thunk: Any) -> Any:
        """Run a thunk within ``key``: the sites inside it are recorded under it. What it prints is
        recorded too (``o``): where the grader answers the site from its record, it prints that
        where the test's own output goes, into ``printed_text()`` or the test's ``redirect_stdout``."""
        self.stack.append((key, {}))
        state = self.into_student() if len(self.stack) == 2 else None
        # what this call prints itself; a call within it keeps what it prints under its own key
        printed, stdout = _FirstText(MAX_PRINTED), sys.stdout
        sys.stdout = printed
        try:
            return thunk()
        except BaseException as exc:
            self.error(key, exc)
            raise
        finally:
            self.stack.pop()
            sys.stdout = stdout
            text = printed.getvalue()
            if text:
                self.add("o", key, _str(text))
            if state is not None:
                self.out_of_student(state)

    # The helpers the rewritten test calls ------------------------------------------------------

    def snap(self, index: int, thunk: Any) -> Any:
        """Before a call of the student's code is handed one of the test's own values: how it is."""
        value = thunk()
        self.snaps[index] = fingerprint(value)
        return value

    def sync(self, index: int, thunk: Any) -> Any:
        """After that call: the value as the call left it, recorded where the call changed it (the
        grader's copy then reads it), else ``l``: the grader's own copy is still right."""
        key = self.key(index)
        value = thunk()
        before = self.snaps.pop(index, None)
        if before is not None and before == fingerprint(value):
            self.add("l", key)
        else:
            self.keep(key, value)
        return value

    def site(self, index: int, thunk: Any) -> Any:
        key = self.key(index)
        opaque = self.opaque
        value = self.call(key, thunk)
        if _reads_clock(thunk):
            value = self.own_time(value)
        if index in self.local and self.opaque == opaque and not self.reaches_handle(thunk):
            self.add("l", key)  # the grader computes it on its own copies: nothing to send
        else:
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


def record_test(
    source: str,
    ns: dict[str, Any],
    seed: int,
    budget: list[int],
    local: frozenset[int] = frozenset(),
    workdir: str = "",
) -> dict[str, Any]:
    """Run the rewritten test in the notebook's namespace (as a test cell runs there), then put the
    namespace and the random generators back as they were (a test taken in the middle of the
    notebook changes nothing the later cells see); the records, encoded, end with how the run ended.
    ``local``: the sites the grader computes itself where it holds their inputs as data;
    ``workdir``: the run's working folder, where the course's own modules are."""
    nose_tools.install(_not_described)
    recorder = Recorder(budget, local)
    saved = dict(ns)
    ns.update(
        {
            TEST_SITE: recorder.site,
            TEST_ITER: recorder.iterate,
            TEST_WITH: recorder.with_,
            TEST_SNAP: recorder.snap,
            TEST_SYNC: recorder.sync,
            TEST_ASSERT: _assert,
            TEST_AT: lambda n: None,
            TEST_DEL: lambda name: _delete(ns, name),
            TEST_MODULES: lambda names: _course_modules(recorder, names, workdir or os.getcwd()),
        }
    )
    printing = _printoptions()
    if printing:  # ``str(array)`` in the test reads as it would in the notebook (``np.set_printoptions``)
        recorder.add("v", PRINTOPTIONS, capture.encode(printing, budget=budget))
    state = rng_state()  # the test's own seeding is its own: the notebook's draws go on as they were
    seed_everything(seed)
    unwatch = watch_seeding(recorder.forget_left)
    ended: tuple[str, str] = ("", "")
    stderr, sys.stderr = sys.stderr, _ErrorStream(sys.stderr)  # warnings too: they are written there
    try:
        exec(compile(source, CHECK_FILE, "exec"), ns)  # noqa: S102 - student process, student namespace
    except BaseException as exc:  # noqa: BLE001 - how the test ended here is a record, whatever it was
        ended = (type(exc).__name__[:100], _safe_str(exc))
    finally:
        unwatch()
        written, sys.stderr = getattr(sys.stderr, "first", ""), stderr
        ns.clear()
        ns.update(saved)
        put_back(state)
    if written:  # for a check with ``stderr_fails``: what the test showed on stderr fails it
        recorder.records.append({"t": "tuple", "items": [_str("stderr"), _str(""), _str(written)]})
    recorder.records.append({"t": "tuple", "items": [_str("stop"), _str(""), _str(ended[0]), _str(ended[1])]})
    return {"t": "list", "items": recorder.records}


def _course_modules(recorder: Recorder, names: Any, workdir: str) -> None:
    """``__grader_modules__(names)``: the course's own modules among those the test imports, as
    they stand (``grader.run.course_modules``); a module that seeds or draws as it loads leaves the
    test's draws alone."""
    state = rng_state()
    try:
        found = course_modules.record(names, workdir, recorder.budget)
    finally:
        put_back(state)
    for kind, key, *payload in found:
        recorder.add(kind, key, *payload)


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
