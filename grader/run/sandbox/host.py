"""The grader's side of the sandbox: the working directory and environment a student process
gets, and ending that process with everything it started, wherever it went.

``terminate`` finds the process tree through /proc; the helpers for that live here too.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from grader.errors import SandboxError
from grader.run.sandbox import cgroup
from grader.run.sandbox.disk import overran as disk_overran
from grader.run.sandbox.probe import Features, job_uid

ALLOWED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
WORKDIR_PREFIX = "grader-run-"  # a run's working directory in the temporary folder (``prepare_workdir``)


def environment(workdir: str) -> dict[str, str]:
    """The whole environment of a student process."""
    env = {k: os.environ[k] for k in ALLOWED_ENV if k in os.environ}
    env.update(
        {
            "HOME": workdir,
            "TMPDIR": workdir,
            "USER": "student",
            "LOGNAME": "student",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": workdir,
            "IPYTHONDIR": os.path.join(workdir, ".ipython"),
            "CUDA_VISIBLE_DEVICES": "",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    return env


def prepare_workdir(files: Iterable[tuple[Path, str]]) -> str:
    """A fresh private directory holding only these files: (source, name inside)."""
    workdir = tempfile.mkdtemp(prefix=WORKDIR_PREFIX)
    try:
        for src, name in files:
            dest = Path(workdir) / name
            if Path(workdir) not in dest.resolve().parents:
                raise SandboxError(f"the data file name {name!r} points outside the working directory")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    except BaseException:
        remove_workdir(workdir)
        raise
    return workdir


def remove_workdir(workdir: str) -> None:
    """Remove a working directory, whatever permissions the student left on it."""

    top = os.path.abspath(workdir)

    def unlock(func: Callable[[str], object], path: str, _exc: object) -> None:
        # a directory the student made unreadable or unwritable (never the temporary folder holding
        # the working directory: another uid's runs must still reach theirs through it)
        try:
            if os.path.abspath(path) != top:
                os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(workdir, onexc=unlock)
    else:
        shutil.rmtree(workdir, onerror=unlock)


def terminate(pid: int) -> None:
    """End the process ``enter()`` ran in (the keeper) and everything started under it.

    Call it before reaping ``pid``, so that neither the pid nor its process group can have been
    reused. Kills, in this order of reach: the process tree (stopped first so it cannot grow), the
    process group, and, when the grader is root, every process of the run's own uid. Then removes
    the run's memory cgroup, if it had one.
    """
    victims = stop_tree(pid) | {pid}
    gone = _exit_watch(victims - {pid})  # opened while they are stopped: each is still the process it was
    for p in victims:
        send_signal(p, signal.SIGKILL)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    uid = job_uid(pid) if os.geteuid() == 0 else None
    end = time.monotonic() + 5.0
    # SIGKILL takes effect soon, not at once: wait until they are gone, then look once for anything
    # of the run's own uid left anywhere (safe to signal again), and again after each that was.
    gone(end)
    while uid is not None and time.monotonic() < end:
        mine = processes_of(uid)
        if not mine:
            break
        watch = _exit_watch(set(mine))
        for p in mine:
            send_signal(p, signal.SIGKILL)
        watch(end)
    if cgroup.place() is not None:
        cgroup.remove(pid)


PIDFDS = 128  # descriptors ``_exit_watch`` may hold at once


def _exit_watch(pids: set[int]) -> Callable[[float], None]:
    """A wait, until a deadline (``time.monotonic``), for these processes to have exited: on a
    descriptor of each (``pidfd_open``, taken now) where the kernel gives them, so the wait costs
    nothing while it lasts; else by looking at /proc every 2 ms. At most ``PIDFDS`` descriptors are
    held (a run allowed many processes must not use up the grader's own)."""
    fds: list[int] = []
    rest: set[int] = set()
    for p in pids:
        if len(fds) >= PIDFDS:
            rest.add(p)
            continue
        try:
            fds.append(os.pidfd_open(p))
        except ProcessLookupError:
            continue  # gone already
        except (OSError, AttributeError):
            rest.add(p)

    def wait(end: float) -> None:
        try:
            poller = select.poll()
            for fd in fds:
                poller.register(fd, select.POLLIN)
            left = len(fds)
            while left and (timeout := end - time.monotonic()) > 0:
                for fd, _ in poller.poll(max(1, int(timeout * 1000))):
                    poller.unregister(fd)  # readable: the process has exited (a zombie or reaped)
                    left -= 1
            while any(_alive(p) for p in rest) and time.monotonic() < end:
                time.sleep(0.002)
        finally:
            for fd in fds:
                os.close(fd)

    return wait


def limit_reached(keeper: object, workdir: str, memory_mb: int, disk_mb: int, processes: int) -> str:
    """Which limit of the whole run ended it, in words after "cell 14 " or "the notebook ", if one
    did: its memory cgroup ended one of its processes for lack of memory, or the keeper ended it for
    writing more than ``disk_mb`` (``disk``) or, as uid 0, for holding more than ``processes``; else ""."""
    if isinstance(keeper, int) and cgroup.oom_kills(keeper):
        return (
            f"used more memory than the run may hold ({memory_mb} MB for all its processes and files together) "
            "and was stopped"
        )
    why = disk_overran(workdir)
    if why == "disk_end":
        return f"went on writing past twice the {disk_mb} MB the run may keep on disk and was stopped"
    if why == "processes":
        return f"started more than the {processes} processes and threads the run may hold and was stopped"
    return ""


class Turn:
    """A run's turn (``turn``): the keepers it started, which must be gone before the next run's."""

    def __init__(self) -> None:
        self.keepers: list[int] = []

    def started(self, pid: object) -> None:
        """The process ``enter()`` ran in (the keeper) for one attempt of the run."""
        if isinstance(pid, int):
            self.keepers.append(pid)

    def wait_gone(self, timeout: float = 10.0, collected: float = 2.0) -> None:
        """Until every keeper has ended: a keeper ends once its whole tree is gone (it is the
        tree's subreaper, and kills what is left), or the grader's ``terminate`` ended them all;
        then, for at most ``collected`` seconds more, until its parent has collected it (a zombie
        still counts against the uid's process limit, which the next run's limit is made of)."""
        end = time.monotonic() + timeout
        while any(_alive(p) for p in self.keepers) and time.monotonic() < end:
            time.sleep(0.005)
        end = min(end, time.monotonic() + collected)
        while any(os.path.exists(f"/proc/{p}") for p in self.keepers) and time.monotonic() < end:
            time.sleep(0.005)


_TURN_FALLBACK = threading.Lock()  # where no lock file can be had: the runs of this grader take turns


@contextlib.contextmanager
def turn(plan: Features) -> Iterator[Turn]:
    """Hold the turn of this uid's student runs, where they take turns (``Features.takes_turns``:
    not root and no user namespace, so every run's processes count against the one per-user limit,
    ``RLIMIT_NPROC``). A run's limit is then the uid's processes when it starts plus ``processes``,
    and no other student's run is there to use it up (a fork bomb beside an honest notebook costs
    the honest one nothing). The turn is a lock on a file of the uid's own in the temporary folder,
    so the graders of one user on a machine take turns too; it is let go once the run's processes
    are gone. Elsewhere (a uid of each run's own, or a user namespace's own count) it holds nothing."""
    out = Turn()
    if not plan.takes_turns:
        yield out
        return
    fd = _turn_file()
    if fd is None:
        with _TURN_FALLBACK:
            try:
                yield out
            finally:
                out.wait_gone()
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield out
        finally:
            out.wait_gone()
            fcntl.flock(fd, fcntl.LOCK_UN)  # for every copy a fork may have made of the descriptor too
    finally:
        os.close(fd)


def _turn_file() -> int | None:
    path = os.path.join(tempfile.gettempdir(), f"grader-turns-{os.getuid()}")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    if os.fstat(fd).st_uid != os.getuid():  # someone else's file: no turn of ours can be trusted to it
        os.close(fd)
        return None
    return fd


def send_signal(pid: int, sig: int) -> None:
    """Signal a process that may be gone already, or no longer one the grader may signal."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie (dead, only waiting to be collected)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(c) for c in f.read().split())
        except FileNotFoundError:
            if tid == str(pid) and os.path.isdir(f"/proc/{pid}"):
                return _children_by_scan(pid)  # a kernel without /proc/PID/task/TID/children
        except OSError:
            pass
    return out


def _children_by_scan(pid: int) -> list[int]:
    out = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                if int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    out.append(int(name))
        except (OSError, IndexError, ValueError):
            pass
    return out


def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        for c in _children(todo.pop()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def cpu_waits(pid: int) -> dict[int, tuple[int, int]]:
    """For each thread of the process tree at ``pid`` (itself included), by thread id: how long it
    has run on a CPU and how long it has waited, runnable, for a CPU that other work held, in
    nanoseconds: the kernel's count (``/proc/PID/task/TID/schedstat``), which nothing in the tree
    can change. Empty where the kernel keeps no such count."""
    out: dict[int, tuple[int, int]] = {}
    for p in {pid} | _descendants(pid):
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat", "rb") as f:
                    ran, waited = f.read().split()[:2]
                out[int(tid)] = (int(ran), int(waited))
            except (OSError, ValueError, IndexError):
                pass
    return out


def tree_cpu(pid: int) -> tuple[float, int]:
    """(CPU seconds the process tree at ``pid`` has used, its threads' that ended and its reaped
    children's included, as ``/proc/PID/stat`` counts them; how many CPUs the tree may run on)."""
    tick = os.sysconf("SC_CLK_TCK")
    used = 0.0
    for p in {pid} | _descendants(pid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            used += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        except (OSError, ValueError, IndexError):
            pass
    try:
        cpus = len(os.sched_getaffinity(pid))
    except OSError:
        cpus = os.cpu_count() or 1
    return used, max(1, cpus)


def tasks_in_tree(pid: int) -> int:
    """The processes and threads below ``pid`` (what ``RLIMIT_NPROC`` would count, for uid 0, which it
    does not limit)."""
    count = 0
    for p in _descendants(pid):
        try:
            count += len(os.listdir(f"/proc/{p}/task"))
        except OSError:
            pass
    return count


def stop_tree(pid: int) -> set[int]:
    """Stop every descendant of pid until none is left running, so that a fork loop cannot outrun us."""
    stopped: set[int] = set()
    for _ in range(50):
        new = _descendants(pid) - stopped
        if not new:
            break
        for p in new:
            send_signal(p, signal.SIGSTOP)
        stopped |= new
    return stopped


def tasks_of(uid: int, zombies: bool = True) -> int:
    """What the kernel counts against ``uid``'s process limit (``RLIMIT_NPROC``): every thread of
    its processes, zombies included (a process counts until its parent has collected it); without
    ``zombies``, what it will count once they are collected (a run's limit made of it can only
    shrink as they go, never grow)."""
    count = 0
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                if not zombies and not _alive(int(name)):
                    continue
                count += max(1, len(os.listdir(f"/proc/{name}/task")))
        except OSError:
            pass
    return count


def processes_of(uid: int) -> list[int]:
    """Live processes whose real uid is ``uid``."""
    out = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{name}").st_uid != uid:  # the effective uid; equal to the real one here
                continue
            with open(f"/proc/{name}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid and _alive(int(name)):
                            out.append(int(name))
                        break
        except (OSError, ValueError):
            pass
    return out
