"""One pristine process per submission, each of its runs a fork of it (the session's zygote).

In a session's sandbox (``enter_session``), init forks one process for runs, which takes every
layer that comes before student code: its uid, the limits, the environment, no_new_privs,
seccomp and Landlock. That process stays as the session's *zygote*: it runs no student code and
is sent no job, so it holds neither; each run of the submission (its data, each variant, a
re-run without a cell that hung) is a fork of it, made before its job is sent, so a run starts
from exactly the state every other run of the submission starts from (``serve``).

A run cannot reach the zygote or another run:

* the zygote is not dumpable: no process of the run's uid may ptrace it, read its
  ``/proc/PID/mem`` or ``environ``, or open its descriptors; the seccomp filter refuses
  ``ptrace``, ``process_vm_*``, ``pidfd_getfd`` and ``kcmp`` besides;
* each run's process restricts itself again with a Landlock domain of its own that scopes
  signals and abstract Unix sockets (ABI 6): it cannot signal the zygote (its parent domain),
  the next run's process (forked already, in a sibling domain) or anything outside, and cannot
  connect to an abstract socket they would listen on;
* the run's files go with it: init empties the working directory, ``/tmp`` and ``/dev/shm`` once
  the run and everything it started have ended, before the next run is sent; System V IPC and
  POSIX message queues, which a run would share with the next one (one IPC namespace per
  session), are refused by the seccomp filter.

The zygote is a child subreaper: whatever a run leaves running comes back to it, and it kills and
collects all of it before it tells init the run has ended (``ENDED``); init checks that nothing
but itself, the zygote and the next run's process is left in the namespace, empties the writable
places and tells the grader ``ready``. The next run's process was forked while the run ran, so
only that cleanup lies between two runs of a submission.

Used where all of that holds (``possible``); elsewhere init forks each run's process itself as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader.errors import SandboxError
from grader.run.sandbox import landlock
from grader.run.sandbox.linux import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG, prctl, set_name
from grader.run.sandbox.probe import Features
from grader.run.sandbox.tree import LAST_RUN, NO_MORE_RUNS, await_run, close_fds, empty_places, writable_places

if TYPE_CHECKING:  # the job's shape, for the type checker only: the student process never imports grader.run.job
    from grader.run.job import JobWire

TAKEN, STAYS, LAST = b"t", b"s", b"l"  # a run's process to the zygote: it has its job (it stays; it is the last)
ENDED = b"e"  # the zygote to init: a run and all it started have ended (then the next run's pid)


def possible(plan: Features) -> bool:
    """Whether runs can be forks of one zygote: the scoped Landlock domain that keeps each run
    from signalling it (ABI 6), and the seccomp filter that keeps runs from sharing IPC objects."""
    return plan.pid_ns and plan.mount_ns and plan.seccomp and plan.landlock >= 6


def start(control: int, workdir: str) -> int:
    """pid 1 of a session's namespace: fork the zygote, then, each time it says a run has ended,
    check that nothing of the run is left, empty the writable places and tell the grader
    ``ready``. Returns in the zygote, not yet set up (the write end of its pipe to init); never
    returns here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores whatever it has no handler for
    close_fds(control)
    places = writable_places(workdir)
    set_name("grader-init")
    r, w = os.pipe()
    zygote = os.fork()
    if zygote == 0:
        os.close(r)
        return w
    os.close(w)
    buffer = b""
    while True:
        try:
            data = os.read(r, 64)
        except InterruptedError:
            continue
        if not data:
            os._exit(0)  # the zygote has ended, and with it the session: the kernel ends the namespace
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.startswith(ENDED) or _others({1, zygote, int(line[1:] or 0)}):
                os._exit(0)  # something outlived its run: the session ends with it
            empty_places(places)
            try:
                os.write(control, b"ready")
            except OSError:
                os._exit(0)


def _others(expected: set[int]) -> bool:
    """Whether the namespace holds a process besides ``expected`` (its own /proc lists only its own)."""
    try:
        return any(name.isdigit() and int(name) not in expected for name in os.listdir("/proc"))
    except OSError:
        return True


def keep_fds(a: int, b: int) -> None:
    """Close every descriptor but 0-2, ``a`` and ``b`` (the zygote's control socket and its pipe to init)."""
    low, high = sorted((a, b))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(
        high + 1,
        max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)
        if resource.getrlimit(resource.RLIMIT_NOFILE)[0] != resource.RLIM_INFINITY
        else 1 << 20,
    )


def serve(control: int, ends: int) -> tuple[JobWire, int, int | None]:
    """In the zygote, set up: fork each run's process ahead of its job, and clean up after it.
    Returns in each run's process, as ``tree.await_run`` does; never returns in the zygote."""
    set_name("grader-zygote")
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    started = _serve(control, ends)
    os.close(ends)  # in a run's process, forked and given its job
    return started.job, started.event_fd, started.control


@dataclass
class _Started:
    """In a run's process, forked and given its job: what ``serve`` returns there."""

    job: JobWire
    event_fd: int
    control: int | None


def _serve(control: int, ends: int) -> _Started:
    """The zygote's loop; returns only in a run's process."""
    pending = _fork_run(control)
    while True:
        if isinstance(pending, _Started):
            return pending
        if pending is None:
            os._exit(1)  # no process could be forked for the next run: the session ends
        pid, taken = pending
        try:
            said = os.read(taken, 1)
        except OSError:
            said = b""
        os.close(taken)
        pending = None
        if said == TAKEN:  # the next run's process, now, while this one runs
            pending = _fork_run(control, quiet=True)
            if isinstance(pending, _Started):
                return pending
        code = _wait_for(pid, pending[0] if pending is not None else None)
        if pending is not None and not _alive(pending[0]):
            os.close(pending[1])
            pending = None
        _end_the_rest(pending[0] if pending is not None else None)
        if said not in (TAKEN, STAYS) or code in (NO_MORE_RUNS, LAST_RUN):
            os._exit(0)  # the session is over (or its run's process died first): init ends the namespace
        if pending is None:
            pending = _fork_run(control)
            if isinstance(pending, _Started):
                return pending
        try:
            os.write(ends, ENDED + str(pending[0] if pending is not None else 0).encode() + b"\n")
        except OSError:
            os._exit(0)


def _fork_run(control: int, quiet: bool = False) -> tuple[int, int] | _Started | None:
    """Fork the process of the next run; in it, restrict it further and wait for its job. The pid
    and the read end of the pipe on which it says it has its job; None if no process can be forked
    now (the run's processes use up the process limit: ``quiet``, tried again once it has ended).
    In the run's process, once its job has come: the job (``_Started``)."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        if quiet:
            return None
        raise
    if pid:
        os.close(w)
        return pid, r
    try:
        os.close(r)
        set_name("grader-run")
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # goes with the zygote
        restrict_scope()
        prctl(PR_SET_DUMPABLE, 1)  # its /proc/self is its own again (the zygote's is not)
        job, event_fd, kept = await_run(control)
        said = STAYS if kept is not None else LAST if job.get("last") else TAKEN
        if said != TAKEN:
            _one_less_process()  # no process is forked ahead of this run: its slot is not the run's
        os.write(w, said)
        os.close(w)
        global _AHEAD
        _AHEAD = said == TAKEN  # the zygote forks the next run's process now (``settle``)
    except BaseException:  # noqa: BLE001 - the grader and init see this run end early
        os._exit(1)
    return _Started(job, event_fd, kept)


_AHEAD = False  # in a run's process: the zygote was told to fork the next run's process ahead of it


def settle(timeout: float = 1.0) -> None:
    """In a run's process, last before student code: wait until the zygote has forked the next
    run's process, which the process limit counts (``processes`` + 2); if none comes within
    ``timeout`` (the zygote could not fork it), hold one process less instead. Without this, a
    burst at the very start of a run on a loaded machine could take the slot first (65 of 64).
    The zygote forks it as soon as this process has its job, so the wait is rarely any."""
    global _AHEAD
    if not _AHEAD:
        return
    _AHEAD = False
    me, zygote, uid = os.getpid(), os.getppid(), os.getuid()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for name in os.listdir("/proc"):  # this pid namespace's: init, the zygote, this run, the next one
            if name.isdigit() and int(name) not in (me, zygote):
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        return
        time.sleep(0.002)
    _one_less_process()


def _one_less_process() -> None:
    """The process limit counts the zygote and the next run's process besides the run's own
    (``processes`` + 2); where no next run's process is forked (the session's last run, or one that
    stays), this run's limit is one less, so it holds at most ``processes`` all the same."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and soft > 1:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft - 1, hard if hard == resource.RLIM_INFINITY else hard - 1))


def restrict_scope() -> None:
    """A Landlock domain of this process's own, nested in the zygote's: no signal to, and no
    abstract Unix socket of, any process outside it (the zygote, the other runs)."""
    attr = landlock._RulesetAttr(0, 0, landlock.SCOPE_ABSTRACT_UNIX_SOCKET | landlock.SCOPE_SIGNAL)
    fd = landlock._syscall(
        landlock.SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
    )
    if fd < 0:
        raise SandboxError(f"creating a run's Landlock scope failed: {os.strerror(ctypes.get_errno())}")
    try:
        if landlock._syscall(landlock.SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise SandboxError(f"applying a run's Landlock scope failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return not done


def _wait_for(pid: int, pending: int | None) -> int:
    """Wait for the run's process to end, collecting what it left behind on the way (they come back
    to the zygote, a subreaper); its exit code."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code
        # else: an orphan of the run, or the next run's process that found the session over


def _children() -> set[int]:
    out: set[int] = set()
    me = os.getpid()
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{task}/children") as f:
                out.update(int(p) for p in f.read().split())
    return out


def _end_the_rest(keep: int | None) -> None:
    """Kill and collect every process of the zygote's but ``keep`` (the next run's): what the run
    left running came back here as orphans; their own orphans come back as each one dies."""
    while True:
        others = _children() - {keep}
        if not others:
            return
        for pid in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in others:
            with contextlib.suppress(ChildProcessError, InterruptedError):
                os.waitpid(pid, 0)
