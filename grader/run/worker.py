"""The student side: runs a notebook's cells with IPython semantics and sends back plain data.

This module runs in the sandboxed child process, never in the grader. It receives a job (cells,
what to capture and when, values to inject) and writes frames to an inherited pipe:

    {"ev": "start"}                                   once, after setup
    {"ev": "cell", "pos": i, "phase": "start"}        before each cell
    {"ev": "cell", "pos": i, "phase": "end", ...}     after it: status, error, output size
    {"ev": "capture", "id": ..., "value" | "error" | "missing": ...}
    {"ev": "done"}

The grader enforces every deadline from outside, so nothing here has to trust the student's
code to give control back.

Why one module: everything the student process does (running cells, capturing values, the
test checks' recording, ``grader.run.test_recorder``) is here and in the few small modules it imports,
so what runs next to student code is one short list to audit, and a forked child starts without
importing the grader's side.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from grader import capture, nose_tools
from grader.errors import CaptureFailed, CheckFailed
from grader.names import CELL_FILE, CHECK_FILE, FIGURES_BEFORE
from grader.run import fast_cells, figures, frames, test_recorder
from grader.run.injections import install_injections
from grader.run.student_values import add_error, evaluate_check, raised_in_student_code
from grader.seeding import seed_everything
from grader.vocab import Uncapturable

if TYPE_CHECKING:  # the job's shape, for the type checker only: this process imports nothing of the grader's side
    from grader.run.job import CaptureMessage, CaptureWire, CellEndMessage, CellWire, JobWire, Message


class BoundedText(io.TextIOBase):
    """A write-only text stream that keeps the first ``limit`` characters and counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.kept, self.total = limit, 0, 0
        self.parts: list[str] = []

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = str(s)
        self.total += len(s)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(room, len(s))
        return len(s)

    def take(self) -> tuple[str, int]:
        text, total = "".join(self.parts), self.total
        self.parts, self.kept, self.total = [], 0, 0
        return text, total


def make_shell() -> Any:
    """An IPython shell with no history file, no colours and inert matplotlib magics."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        existing: Any = InteractiveShell.instance()
        if getattr(existing, "_grader_shell", False):
            return existing  # set up already (a run's process forked from the server that made it)
    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.InteractiveShell.colors = "NoColor"
    cfg.InteractiveShell.autocall = 0
    shell: Any = InteractiveShell.instance(config=cfg)  # Any: some of its methods are replaced below
    shell.showtraceback = lambda *a, **k: None  # errors are reported as data instead
    shell.showsyntaxerror = lambda *a, **k: None
    shell.register_magic_function(lambda line="": None, "line", "matplotlib")
    fast_cells.skip_needless_tokenizing(shell.input_transformer_manager)
    if hasattr(shell, "_tee"):
        # IPython wraps sys.stdout/sys.stderr.write for each cell to copy every write into
        # history_manager.outputs, which only `%notebook` reads, from the history disabled above.
        # It made a print several times slower and kept all output in memory, past output_kb.
        shell._tee = lambda channel: contextlib.nullcontext()
    shell.display_trap.hook = _binding_hook(shell.displayhook)
    shell._grader_shell = True
    # ``from nose.tools import assert_equal`` in a notebook's own cell, where nose (gone from
    # Python 3.12's packages, unmaintained) is not installed: the helpers tests are judged with
    nose_tools.install(_own_value)
    return shell


def _own_value(value: Any) -> str:
    """How a nose helper the notebook calls itself describes the value (the student's own)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails
        return "a value"
    return text if len(text) <= 80 else text[:77] + "..."


def _binding_hook(hook: Any) -> Any:
    """The displayhook of a cell whose output nobody keeps (the grader keeps none): the value of
    the cell's last expression is bound to ``_``, ``__``, ``___`` and ``Out`` as IPython's
    displayhook binds it, and never formatted or written. ``display()`` still formats and writes."""

    def bind(result: Any = None) -> None:
        hook.check_for_underscore()
        if result is not None and not hook.quiet():
            hook.update_user_ns(result)
            hook.fill_exec_result(result)

    return bind


@contextlib.contextmanager
def state_kept(shell: Any, workdir: str | None = None) -> Iterator[None]:
    """Put the process back as it was once the block has run cells in it: the shell's namespace
    (``In``, ``Out`` and the displayhook's last values included), sys.path, the environment and
    the working directory; open figures are closed, and modules imported from ``workdir`` (a
    notebook's own helpers) are forgotten, so they are imported afresh next time. What libraries
    imported lazily stays loaded, as it does in the server after its warm-up."""
    namespace = dict(shell.user_ns)
    contents = {id(v): (v, v.copy()) for v in namespace.values() if type(v) in (dict, list)}  # In, Out
    code_name = shell.compile.__dict__.get("get_code_name")
    # The displayhook's own copy of the last three shown values: it sets `_` only while the
    # namespace's `_` is still the value it showed last, so a value left here would make the next
    # notebook treat `_` as its own and never update it. The same for user_ns_hidden.
    hook = shell.displayhook
    shown = {k: getattr(hook, k) for k in ("_", "__", "___")}
    hidden = dict(shell.user_ns_hidden)
    count = shell.execution_count
    path, environ, modules = list(sys.path), dict(os.environ), set(sys.modules)
    try:
        yield
    finally:
        for k, v in shown.items():
            setattr(hook, k, v)
        shell.user_ns_hidden.clear()
        shell.user_ns_hidden.update(hidden)
        shell.user_ns.clear()
        shell.user_ns.update(namespace)
        for v, saved in contents.values():
            if type(v) is list:
                v[:] = saved
            else:
                v.clear()
                v.update(saved)
        if code_name is None:
            shell.compile.__dict__.pop("get_code_name", None)
        else:
            shell.compile.get_code_name = code_name
        shell.execution_count = count
        sys.path[:] = path
        if os.environ != environ:
            os.environ.clear()
            os.environ.update(environ)
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].__dict__["tempdir"] = None  # chosen again from TMPDIR, whatever a run set
        if workdir is not None:
            _forget_modules_from(workdir, set(sys.modules) - modules)
            with contextlib.suppress(OSError):
                os.chdir(workdir)
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None:
            with contextlib.suppress(Exception):
                pyplot.close("all")


def _forget_modules_from(workdir: str, names: set[str]) -> None:
    bases = tuple(os.path.realpath(p) + os.sep for p in (workdir, "/tmp", "/dev/shm"))
    for name in names:
        origin = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(origin, str) and os.path.realpath(origin).startswith(bases):
            sys.modules.pop(name, None)


RUN_CAPTURES = 4  # a run's captures together may carry this many times ``limits.capture_mb``


class Runner:
    def __init__(self, job: JobWire, out: BinaryIO, shell: Any):
        self.job, self.out, self.shell = job, out, shell
        self.pid = os.getpid()
        self.sandbox: tuple[str, ...] = ()  # the protections sandbox.enter() put in place
        # Each capture (a value, a test's records) may carry ``capture_mb``, and the run all of them
        # together ``RUN_CAPTURES`` times that: a hidden test that iterates over a 0.1 MB array, or an
        # image course's 29 MB arrays, fit where one allowance for the whole run was spent early.
        self.per_capture = int(job["limits"]["capture_mb"]) * 1024 * 1024
        self.run_left = RUN_CAPTURES * self.per_capture
        self.budget = self._allowance()
        self.output_limit = int(job["limits"]["output_kb"]) * 1024
        self.disk_limit = int(job["limits"].get("disk_mb", 256)) * 1024 * 1024
        self.filled: set[str] = set()  # the run's tmpfs places reported full already
        self.file_too_large = False  # a write of this process met the file size limit (SIGXFSZ) in the cell
        self.current = 0
        self.traceback_lines = int(job.get("traceback_lines", 8))
        self.lean = True  # cells through fast_cells.run_lean where it can (False: always IPython's run_cell)
        # The trusted solution's runs (``Job.trusted``): cells as compiled code, nothing displayed.
        self.trusted = job.get("trusted") is True
        original = shell.compile.get_code_name

        def code_name(raw: str, transformed: str, number: int) -> str:
            name = CELL_FILE.format(self.current)
            return name if self.current else original(raw, transformed, number)

        shell.compile.get_code_name = code_name

    def send(self, message: Message) -> None:
        if os.getpid() != self.pid:  # a copy made by the student's os.fork() must not speak for the notebook
            os._exit(0)
        frames.write_frame(self.out, message)

    def send_body(self, body: bytes) -> None:
        """``send`` for a message encoded already (``frames.encode_frame``)."""
        if os.getpid() != self.pid:
            os._exit(0)
        frames.write_body(self.out, body)

    def run(self) -> None:
        cells = self.job["cells"]
        captures: dict[int, list[CaptureWire]] = {}
        for c in self.job["captures"]:
            captures.setdefault(c["point"] if c["point"] is not None else len(cells), []).append(c)
        install_injections(self.shell.user_ns, self.job)
        drawn = any(c["kind"] == "figures" for c in self.job["captures"])  # a plot question's figures
        self.send({"ev": "start", "pid": os.getpid(), "sandbox": list(self.sandbox)})
        previous: CellEndMessage | None = None
        for pos, cell in enumerate(cells):
            self.capture_all(captures.get(pos, []))
            if drawn:
                figures.install()
            if cell.get("skip"):
                self.send({"ev": "cell", "pos": pos, "phase": "end", "status": "skipped"})
                previous = None
                continue
            self.send({"ev": "cell", "pos": pos, "phase": "start"})
            ended = continued_error(previous, cells, pos) or self.run_cell(pos, cell)
            self.send(ended)
            previous = ended
        self.capture_all(captures.get(len(cells), []))
        self.send({"ev": "done"})

    def seed_cell(self, source: str) -> None:
        """The course's seeding before a code cell (``seed_each_cell``; not before a ``%%`` cell magic)."""
        seed = self.job.get("cell_seed")
        if not seed or source.startswith("%%"):
            return
        if seed["variable"]:
            self.shell.user_ns[seed["variable"]] = seed["seed"]
            return
        import random

        import numpy

        numpy.random.seed(seed["seed"])
        random.seed(seed["seed"])

    def run_cell(self, pos: int, cell: CellWire) -> CellEndMessage:
        self.current = cell["index"]
        self.seed_cell(cell["source"])
        stream = BoundedText(self.output_limit)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = stream
        started = time.perf_counter()
        try:
            run = fast_cells.run_trusted if self.trusted else fast_cells.run_lean
            done, error = run(self.shell, cell["source"]) if self.lean else (False, None)
            if not done:
                result = self.shell.run_cell(cell["source"], store_history=False, silent=False)
                error = result.error_before_exec or result.error_in_exec
        except BaseException as exc:  # noqa: BLE001 - a shell that itself breaks is still this cell's error
            error = exc
        finally:
            sys.stdout, sys.stderr = saved
            self.current = 0
        text, total = stream.take()
        message: CellEndMessage = {
            "ev": "cell",
            "pos": pos,
            "phase": "end",
            "status": "ok" if error is None else "error",
            "duration": time.perf_counter() - started,
            "output_bytes": total,
        }
        if error is not None:
            add_error(message, error, self.traceback_lines)
        full = self.full_places()
        if full:
            message["disk"] = full
        return message

    def watch_file_size(self) -> None:
        """Note each write that meets the file size limit (``RLIMIT_FSIZE``): the kernel sends
        ``SIGXFSZ`` before the write fails with ``EFBIG``. Python ignores the signal; noted, the write
        fails all the same. Programs the student starts get the default action back (``subprocess``)."""

        def noted(signum: int, frame: object) -> None:
            self.file_too_large = True

        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGXFSZ, noted)

    def full_places(self) -> list[list[Any]]:
        """The run's own size-limited places (a tmpfs of ``disk_mb``: the working directory, /tmp,
        /dev/shm, where it has a private view) that the cell left full, each once: [place, bytes
        held]. Where a place is a folder of the host's (no tmpfs of its own) the keeper watches it
        instead (``sandbox.disk``). Reported by the student process, so it speaks only of its own run."""
        out: list[list[Any]] = []
        if self.file_too_large:
            self.file_too_large = False
            size = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            if size > 0:  # 0: the grader's watch filled the run's disk, and notes it itself (``sandbox.disk``)
                out.append(["file", size])
        for place in ("workdir", "/tmp", "/dev/shm"):
            if place in self.filled:
                continue
            try:
                st = os.statvfs(self.job["workdir"] if place == "workdir" else place)
            except (OSError, KeyError):
                continue
            if st.f_blocks * st.f_frsize != self.disk_limit:  # not a tmpfs of the run's own
                continue
            if st.f_bavail * st.f_frsize < min(FULL_BELOW, self.disk_limit // 16) or (st.f_files and st.f_favail == 0):
                self.filled.add(place)
                out.append([place, (st.f_blocks - st.f_bfree) * st.f_frsize])
        return out

    def _allowance(self) -> list[int]:
        """What the next capture may carry: ``capture_mb``, or what is left of the run's; then the
        two whole allowances and what is left of the run's, which a refusal names (``capture.encoding``)."""
        whole = RUN_CAPTURES * self.per_capture
        return [min(self.per_capture, self.run_left), self.per_capture, whole, self.run_left]

    def capture_all(self, items: list[CaptureWire]) -> None:
        for item in items:
            self.budget = self._allowance()
            start = self.budget[0]
            message = self.capture_one(item)
            self.run_left -= start - self.budget[0]
            body = frames.encode_frame(message)
            if frames.items_in(body) > frames.MAX_FRAME_CONTAINERS:
                # what the grader would refuse (``frames.FrameReader``): the value is too large to judge
                message = {"ev": "capture", "id": item["id"], "uncapturable": Uncapturable.FORM.value}
                message["detail"] = TOO_MANY_ITEMS
                body = frames.encode_frame(message)
            self.send_body(body)

    def test(self, item: CaptureWire) -> dict[str, Any]:
        """An instructor's test, run over the notebook's names (``grader.run.test_recorder``): what
        each call into the student's code gave back, already encoded. The verdict is the grader's."""
        seed = item.get("seed")
        local = frozenset(i for i in item.get("local", ()) if type(i) is int)
        return test_recorder.record_test(
            item["target"], self.shell.user_ns, int(seed or 0), self.budget, local, self.job["workdir"]
        )

    def capture_one(self, item: CaptureWire) -> CaptureMessage:
        message: CaptureMessage = {"ev": "capture", "id": item["id"]}
        ns = self.shell.user_ns
        stream = BoundedText(self.output_limit)
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = stream
        try:
            if item["kind"] == "value":
                if item["target"] not in ns:
                    message["missing"] = True
                    return message
                value = ns[item["target"]]
            elif item["kind"] == "test":
                message["value"] = self.test(item)
                return message
            elif item["kind"] == "figures":
                if item["target"] == FIGURES_BEFORE:
                    figures.drop()
                    message["missing"] = True
                else:
                    message["value"] = capture.encode(figures.take(), budget=self.budget)
                return message
            else:
                seed = item.get("seed")
                if seed is not None:
                    seed_everything(int(seed))
                code = compile(item["target"], CHECK_FILE, "eval")
                value = evaluate_check(code, item["target"], ns, seed)
            if items_over(value, frames.MAX_FRAME_CONTAINERS):
                raise CaptureFailed(TOO_MANY_ITEMS)
            message["value"] = capture.encode(value, budget=self.budget)
        except CheckFailed as exc:
            # The check's own expression, not the student's code: what it raised, as data.
            add_error(message, exc.first, self.traceback_lines)
            message["uncapturable"] = Uncapturable.INAPPLICABLE.value
        except CaptureFailed as exc:
            message["uncapturable"] = Uncapturable.FORM.value
            message["detail"] = str(exc)
        except NameError as exc:
            # A name the check itself reads is missing; one the student's own code reads is an
            # error of that code, like any other it raises.
            message["missing"] = not raised_in_student_code(exc)
            add_error(message, exc, self.traceback_lines)
        except RecursionError:
            message["uncapturable"] = Uncapturable.RECURSION.value
        except BaseException as exc:  # noqa: BLE001 - the student's code raised while the check ran, whatever it raised
            add_error(message, exc, self.traceback_lines)
        finally:
            sys.stdout, sys.stderr = saved
        return message


FULL_BELOW = 1 << 20  # a tmpfs of the run with less free space than this is full: the cell's writes met its limit
TOO_MANY_ITEMS = (
    f"holds more than {frames.MAX_FRAME_CONTAINERS:,} items in all (counting every list, tuple, dict and "
    "what they hold), too many to send to the grader"
)


def items_over(value: Any, bound: int) -> bool:
    """Whether ``value``, encoded, would hold more than ``bound`` objects and arrays (what a frame may
    carry, as ``capture.encode`` writes it): lists, tuples and dicts count two, each item of a dict one
    more, ``None``, booleans and strings one, anything else (numbers, arrays) two. The walk stops at
    the bound, so a value of millions of items costs what ``bound`` of them cost; what it misses
    (brackets inside strings) the count of the encoded frame catches (``capture_all``)."""
    count, todo = 0, [(value, 0)]
    while todo:
        v, depth = todo.pop()
        kind = type(v)
        if depth > capture.MAX_DEPTH:  # what ``capture.encode`` refuses for its depth (a list that holds itself)
            return False
        if kind is list or kind is tuple:
            count += 2
            if count + len(v) > bound:  # each item counts one at least: over, before a single one is looked at
                return True
            todo.extend((item, depth + 1) for item in v)
        elif kind is dict:
            count += 2 + len(v)
            if count + len(v) > bound:
                return True
            todo.extend((item, depth + 1) for item in v.values())
        elif v is None or kind is bool or kind is str:
            count += 1
        else:
            count += 2
        if count > bound:
            return True
    return False


def continued_error(previous: CellEndMessage | None, cells: list[CellWire], pos: int) -> CellEndMessage | None:
    """A cell the grader cut in two (where a question is answered) is still one cell: when its
    first part raised, the rest does not run, as in Jupyter, and ends with the same error."""
    if previous is None or previous["status"] != "error" or pos == 0 or cells[pos - 1]["index"] != cells[pos]["index"]:
        return None
    return {**previous, "pos": pos, "duration": 0.0, "output_bytes": 0}


def main() -> None:
    """Entry point of a fresh worker process: ``python -m grader.run.worker FD`` with the job on stdin."""
    import json

    fd = int(sys.argv[1])
    out = os.fdopen(fd, "wb", buffering=0)
    ahead = sys.argv[2:3] == ["--ahead"]  # started before its job (worker_process.start): load IPython now
    if ahead:
        from IPython.core.interactiveshell import InteractiveShell  # noqa: F401 - what make_shell needs
        from traitlets.config import Config  # noqa: F401
    data = sys.stdin.buffer.read()
    if not data:  # discarded before it got a job
        return
    job: JobWire = json.loads(data)
    if ahead and sys.path and sys.path[0] == os.getcwd():
        sys.path[0] = job["workdir"]  # as for `python -m` started in the working directory
    serve(job, out)


def serve(job: JobWire, out: BinaryIO) -> None:
    """Isolate this fresh process (``sandbox.enter``), then run one job in it."""
    from grader.run import sandbox

    try:
        applied = sandbox.enter(job, channel=out.fileno())
    except sandbox.SandboxError as exc:
        frames.write_frame(out, {"ev": "fatal", "reason": str(exc)[:300]})
        return
    run_isolated(job, out, applied)


def run_isolated(job: JobWire, out: BinaryIO, applied: tuple[str, ...]) -> None:
    """Run one job in this process, isolated already (``applied`` says how)."""
    os.set_inheritable(out.fileno(), False)  # programs the student starts do not get the channel
    shell = make_shell()
    os.chdir(job["workdir"])
    runner = Runner(job, out, shell)
    runner.sandbox = applied
    runner.watch_file_size()
    if applied:
        from grader.run import sandbox

        sandbox.settle()  # a session's run: the next run's process is there before student code runs
    runner.run()
    out.flush()


if __name__ == "__main__":
    main()
