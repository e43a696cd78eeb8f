"""Isolation of the student process: what it can see, reach, use, and leave behind.

Any executor uses the same few calls. On the grader's side:

    features()             what this platform allows, probed once (the report header shows it)
    prepare_workdir(files) a fresh private directory with the submission and the data files
    environment(workdir)   the whole environment of a student process (an allow-list)
    terminate(pid)         end a student process and everything it started, wherever it went
    remove_workdir(path)

In the student process, first thing, before any student code and before the job's cells are even
looked at, ``enter(job, channel=fd)``. It must run in a fresh single-threaded process: one just
started (``python -m grader.run.worker``) or just forked (the warm forking server's child). It forks
twice and returns only in the process that runs the notebook:

    keeper      (the grader's uid)   waits; if the grader stops reading the channel, kills the rest
      init      (root, pid 1 of a new pid namespace)   builds the filesystem view, reaps orphans
        student (an unprivileged uid of its own, pid 2)   returns from enter() and runs the cells

Everything the student starts lives in that pid namespace, so when init ends, the kernel ends
every one of them, whatever they did with sessions, process groups or double forks.

``enter_session(plan, channel)`` is the same with pid and mount namespaces, for the runs of one
submission: the forking server's child calls it before any submission exists, init then serves
one run after another (a student process each, forked ahead of its job) and resets the sandbox
between them; it returns in each run's process.

What enter() puts in place, each where the platform allows it (``features()`` says which):

* own session and process group; stdin, stdout and stderr on /dev/null; no inherited descriptors
  but the channel; a scrubbed environment;
* rlimits: CPU time, address space, file size, open files, processes (as root, counted for a
  uid used by this run only, so the limit holds even though the grader is root);
* a new network namespace: no network at all, and the host's loopback servers unreachable (its
  own loopback is up and empty, so a connection is refused);
* a new mount namespace and a new root: read-only system and Python directories, the grader
  package, a fresh /dev, /proc of its own, and a size-limited tmpfs as working directory (holding
  read-only binds of the submission and the data files) and as /tmp. The course, solutions/, the
  reference cache, other submissions and scorecards are simply not there;
* as root: an unprivileged uid and gid of its own (``job_uid``), no supplementary groups;
  not root but user namespaces allowed: a user namespace, every capability dropped;
* no_new_privs, so no setuid program gives privileges back.

A process that has threads already (a Jupyter kernel) cannot fork-isolate itself; there enter()
applies the limits, the environment and no_new_privs in place, and reports exactly that.
Reference values never reach this module: the job holds the student's cells, what to capture,
and the given inputs, nothing of the solution's results.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import fcntl
import functools
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from grader import PACKAGE_DIR
from grader.errors import GraderError

ALLOWED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
UID_BASE = 1_900_000_000  # + the keeper's pid: a uid (and gid) used by one run only, never a real user's
ROOT_NAME = ".sandbox-root"  # inside the grader's fresh working directory; removed with it

# What a run can report as in force, with the words used in reports.
FEATURES = {
    "session": "own session and process group",
    "env": "scrubbed environment",
    "limits": "limits on CPU time, memory, open files and file size",
    "processes": "process limit",
    "cleanup": "every process it starts is ended with it",
    "network": "no network (own network namespace)",
    "filesystem": "private filesystem view (solutions, caches, other submissions and scorecards absent)",
    "user": "unprivileged user of its own",
    "userns": "user namespace, no capabilities",
    "no_new_privs": "no privilege gain through setuid programs",
}

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217, "i686": 217}
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")


class SandboxError(GraderError):
    """The sandbox could not be set up as planned; the notebook is not run without it."""


# --------------------------------------------------------------------------------------------
# What the platform allows


@dataclass(frozen=True)
class Features:
    """Which protections enter() applies. ``features()`` probes them; tests may turn some off."""

    linux: bool = False
    root: bool = False
    user_ns: bool = False  # not root: a user namespace gives the namespaces below
    mount_ns: bool = False
    net_ns: bool = False
    pid_ns: bool = False
    ipc_ns: bool = False
    drop_user: bool = False  # root: the student runs as job_uid(keeper pid)

    def to_wire(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> Features:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: bool(v) for k, v in data.items() if k in names})

    def active(self) -> tuple[str, ...]:
        """The ids (keys of FEATURES) a run gets on this platform."""
        if not self.linux:
            return ("env", "limits")
        out = ["session", "env", "limits"]
        if self.drop_user or self.user_ns or not self.root:
            out.append("processes")
        out.append("cleanup")
        if self.net_ns:
            out.append("network")
        if self.mount_ns:
            out.append("filesystem")
        if self.drop_user:
            out.append("user")
        if self.user_ns:
            out.append("userns")
        out.append("no_new_privs")
        return tuple(out)

    def missing(self) -> list[str]:
        """What is not enforced here, and why, in words for the report."""
        out = []
        if not self.linux:
            return ["no isolation beyond resource limits and a scrubbed environment (not Linux)"]
        if not self.net_ns:
            out.append("network: no network namespace here, so student code can reach the network")
        if not self.mount_ns:
            out.append("filesystem: no mount namespace here, so student code can read whatever its user can read")
        if self.root and not self.drop_user:
            out.append("user: runs as root (Python is not readable by another user and no mount namespace)")
            out.append("processes: not limited (the kernel does not apply the limit to root)")
        if not self.root and not self.user_ns:
            out.append("processes: limited per user, counting the grader's own processes")
        if not self.pid_ns:
            out.append("cleanup: by process tree and group, not by namespace")
        return out

    def describe(self) -> str:
        return "; ".join(FEATURES[f] for f in self.active())


@functools.lru_cache(maxsize=1)
def features() -> Features:
    """Probe, once per process, which protections work here: a forked child tries each of them."""
    if not sys.platform.startswith("linux"):
        return Features()
    root = os.geteuid() == 0
    spot = tempfile.mkdtemp(prefix="grader-probe-")
    r, w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the probe child
            result = {}
            try:
                os.close(r)
                result = _probe(root, spot)
            finally:
                os.write(w, json.dumps(result).encode())
                os._exit(0)
        os.close(w)
        w = -1
        data = b""
        while chunk := os.read(r, 4096):
            data += chunk
        os.waitpid(pid, 0)
        got = json.loads(data or b"{}")
    except (OSError, ValueError):
        got = {}
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
        shutil.rmtree(spot, ignore_errors=True)
    got = {k: bool(v) for k, v in got.items()}
    mount_ns = got.get("mount_ns", False)
    return Features(
        linux=True, root=root, user_ns=got.get("user_ns", False), mount_ns=mount_ns,
        net_ns=got.get("net_ns", False), pid_ns=got.get("pid_ns", False), ipc_ns=got.get("ipc_ns", False),
        drop_user=root and (mount_ns or _world_readable(_python_paths())),
    )


def _probe(root: bool, spot: str) -> dict:
    out: dict[str, bool] = {}
    if not root:
        uid, gid = os.getuid(), os.getgid()
        out["user_ns"] = _attempt(lambda: (_unshare(CLONE_NEWUSER), _map_ids(uid, gid)))
        if not out["user_ns"]:
            return out
    for name, flag in (("net_ns", CLONE_NEWNET), ("pid_ns", CLONE_NEWPID), ("ipc_ns", CLONE_NEWIPC),
                       ("mount_ns", CLONE_NEWNS)):
        out[name] = _attempt(lambda: _unshare(flag))
    if out["mount_ns"]:
        out["mount_ns"] = _attempt(lambda: (_mount(None, "/", None, MS_REC | MS_PRIVATE),
                                            _mount("tmpfs", spot, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")))
    return out


def _attempt(step) -> bool:
    try:
        step()
        return True
    except (SandboxError, OSError):
        return False


def _world_readable(paths: Iterable[str]) -> bool:
    """Whether another user could use these directories (every parent traversable, each readable)."""
    for path in paths:
        p = Path(path)
        for part in [*reversed(p.parents), p]:
            try:
                mode = part.stat().st_mode
            except OSError:
                return False
            if not mode & stat.S_IXOTH or (part == p and not mode & stat.S_IROTH):
                return False
    return True


def job_uid(keeper_pid: int) -> int:
    """The uid (and gid) the student runs as, when the grader is root: one per run."""
    return UID_BASE + keeper_pid


# --------------------------------------------------------------------------------------------
# Grader side


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
    workdir = tempfile.mkdtemp(prefix="grader-run-")
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

    def unlock(func, path, _exc):  # a directory the student made unreadable or unwritable
        try:
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
    process group, and, when the grader is root, every process of the run's own uid.
    """
    victims = _stop_tree(pid) | {pid}
    for p in victims:
        _signal(p, signal.SIGKILL)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    uid = job_uid(pid) if os.geteuid() == 0 else None
    end = time.monotonic() + 5.0
    while time.monotonic() < end:  # SIGKILL takes effect soon, not at once: wait until they are gone
        mine = _processes_of(uid) if uid is not None else []  # this run's own uid: safe to signal again
        if not mine and not any(_alive(p) for p in victims - {pid}):
            break
        for p in mine:
            _signal(p, signal.SIGKILL)
        time.sleep(0.002)


def _signal(pid: int, sig: int) -> None:
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
    out = []
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


def _stop_tree(pid: int) -> set[int]:
    """Stop every descendant of pid until none is left running, so that a fork loop cannot outrun us."""
    stopped: set[int] = set()
    for _ in range(50):
        new = _descendants(pid) - stopped
        if not new:
            break
        for p in new:
            _signal(p, signal.SIGSTOP)
        stopped |= new
    return stopped


def _processes_of(uid: int) -> list[int]:
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


# --------------------------------------------------------------------------------------------
# Student side


def enter(job: dict, channel: int | None = None) -> tuple[str, ...]:
    """Isolate this fresh process before any student code runs; returns the protections in force.

    ``job["sandbox"]`` is ``Features.to_wire()`` (what to apply; absent: the probe's answer),
    ``job["limits"]`` the Limits as a dict, ``job["workdir"]`` the prepared directory. ``channel``
    is the descriptor of the event pipe to the grader: the only one the student process keeps.
    Raises SandboxError if a planned protection cannot be applied (nothing is run without it).
    """
    plan = Features.from_wire(job["sandbox"]) if job.get("sandbox") is not None else features()
    limits, workdir = job["limits"], job["workdir"]
    if not plan.linux or _threads() > 1:
        return _in_place(limits, workdir)
    try:
        return _isolate(plan, limits, workdir, channel)[0]
    except OSError as exc:
        raise SandboxError(f"{exc.strerror or exc} ({type(exc).__name__})") from None


def sessions_possible(plan: Features) -> bool:
    """Whether runs of one submission can share one sandbox: only with a pid namespace (its init
    ends whatever a run leaves behind) and a private root (whose writable places init empties)."""
    return plan.linux and plan.pid_ns and plan.mount_ns


class SessionSetupError(SandboxError):
    """A session's sandbox could not be finished once its submission arrived; ``control`` is the
    session's control socket, on which the first run can still be told why."""

    def __init__(self, message: str, control: int):
        super().__init__(message)
        self.control = control


def enter_session(plan_wire: dict, channel: int) -> tuple[tuple[str, ...], dict, int]:
    """Isolate this fresh process for the runs of one submission, as far as possible before the
    submission is even known; returns in each run's process.

    Called in a child of the forking server as soon as it is forked, while it waits to be handed
    a job. The namespaces, the keeper, the namespace's init and the submission-independent part
    of the new root (``_build_view``) are set up at once, off the grader's critical path. Init
    then waits on ``channel`` for the session: a job pipe (``{"workdir", "limits", "sandbox"}``)
    and the session's control socket (Unix, from the grader). It adds the working directory to
    the view, pivots into it, and serves runs: for each ``(job pipe, event pipe)`` pair the grader
    sends on the control socket, it forks the run's process, which drops to the student's uid,
    takes the limits and returns ``(protections, the run's job, its event fd)`` here. When that
    process has exited, init kills every other process in the namespace, empties the working
    directory (but for the read-only submission and data files), /tmp and /dev/shm, and writes
    ``ready``. So a run starts as fresh as a run in a sandbox of its own. The grader closing the
    control socket ends the session.
    """
    plan = Features.from_wire(plan_wire)
    if not sessions_possible(plan) or _threads() > 1:
        raise SandboxError("runs can share a sandbox only with a pid namespace and a private root")
    view = tempfile.mkdtemp(prefix="grader-view-")  # where the new root is mounted (in its namespace only)
    try:
        return _isolate(plan, {}, "", None, ahead=(channel, view))
    except OSError as exc:
        raise SandboxError(f"{exc.strerror or exc} ({type(exc).__name__})") from None


def _await_session(channel: int, plan: Features) -> tuple[dict, int]:
    """In init: the session's setup and control socket, once the server hands them over."""
    sock = socket.socket(fileno=channel)
    _, fds, _, _ = socket.recv_fds(sock, 16, 2)
    sock.close()
    if len(fds) != 2:  # the server ended before this child got a job
        os._exit(0)
    job_fd, control = fds
    try:
        with os.fdopen(job_fd, "rb") as f:
            setup = json.loads(f.read())
        if Features.from_wire(setup["sandbox"]) != plan:
            raise SandboxError("the session asks for other protections than this child was prepared with")
        return setup, control
    except (SandboxError, OSError, ValueError, KeyError, TypeError) as exc:
        raise SessionSetupError(f"the session's setup cannot be read: {exc}", control) from None


def _isolate(plan: Features, limits: dict, workdir: str, channel: int | None,
             ahead: tuple[int, str] | None = None) -> tuple[tuple[str, ...], dict, int | None]:
    """The protections in force, and for a session (``ahead``: the server's channel and the
    directory to build the view on) the run's job and event fd; else {} and ``channel``."""
    run: dict = {}
    _own_session()
    keeper = os.getpid()
    uid = job_uid(keeper) if plan.drop_user else None
    real_uid, real_gid = os.getuid(), os.getgid()
    # The keeper takes only what its child needs from it (a user namespace for privileges, a pid
    # namespace to be born into); the child takes the rest, so the keeper keeps the host's view.
    first = (CLONE_NEWUSER if plan.user_ns else 0) | (CLONE_NEWPID if plan.pid_ns else 0)
    rest = (CLONE_NEWNS if plan.mount_ns else 0) | (CLONE_NEWNET if plan.net_ns else 0) | (
        CLONE_NEWIPC if plan.ipc_ns else 0)
    if first:
        _unshare(first)
    if plan.user_ns:
        _map_ids(real_uid, real_gid)
    _fork_keeper(channel, workdir, subreaper=not plan.pid_ns, view=ahead[1] if ahead else None)
    if plan.pid_ns:
        _die_with_parent()  # the namespace's init goes with the keeper, and everything in it with init
    # Without a pid namespace the student outlives a keeper it killed and finishes the notebook; the
    # grader ends it afterwards through its group (and its uid, as root).
    if rest:
        _unshare(rest)
    if plan.net_ns:
        _loopback_up()
    owner = uid if uid is not None else real_uid
    disk_mb = int(limits.get("disk_mb", 256))
    if ahead is not None:  # pid 1 of a session: the view now, the submission when it comes
        _build_view(ahead[1], disk_mb, fresh_proc=True)
        setup, control = _await_session(ahead[0], plan)
        try:
            limits, workdir = setup["limits"], setup["workdir"]
            _finish_view(ahead[1], workdir, int(limits.get("disk_mb", 256)), owner)
        except (OSError, SandboxError, KeyError, TypeError, ValueError) as exc:
            raise SessionSetupError(f"the working directory cannot be set up: {exc}", control) from None
        _serve_runs(control, workdir)
        channel = control  # until its job comes (_await_run, below)
        if plan.ipc_ns:
            _unshare(CLONE_NEWIPC)  # no System V object of an earlier run either
        _die_with_parent()
    elif plan.pid_ns:  # this is pid 1: it mounts the namespace's /proc, then stays as its init
        if plan.mount_ns:
            _build_root(workdir, disk_mb, owner, fresh_proc=True)
        _fork_init()
        _die_with_parent()
    elif plan.mount_ns:
        _build_root(workdir, disk_mb, owner, fresh_proc=False)
    elif uid is not None:
        _chown_tree(workdir, uid)
    _close_fds(channel)
    _quiet_stdio()
    os.environ.clear()
    os.environ.update(environment(workdir))
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        _prctl(PR_SET_DUMPABLE, 1)  # /proc/self stays the student's own after the uid change
        if plan.pid_ns:
            _die_with_parent()  # cleared by the uid change
    elif plan.user_ns:
        _drop_capabilities()
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if uid is not None or plan.user_ns:
        nproc = int(limits["processes"]) + (0 if uid is not None else 1 + plan.pid_ns)
    elif not plan.root:
        nproc = len(_processes_of(real_uid)) + int(limits["processes"])  # counts the user's other processes
    else:
        nproc = None
    _apply_limits(limits, nproc)
    os.chdir(workdir)
    if ahead is not None:  # ready for a run: now wait for it
        run, channel = _await_run(channel)
    return plan.active(), run, channel


def _in_place(limits: dict, workdir: str) -> tuple[str, ...]:
    """What a process with threads (or not on Linux) can do to itself."""
    os.environ.clear()
    os.environ.update(environment(workdir))
    _apply_limits(limits, None)
    applied = ["env", "limits"]
    try:
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        applied.append("no_new_privs")
    except (SandboxError, AttributeError, OSError):
        pass
    return tuple(applied)


def _apply_limits(limits: dict, nproc: int | None) -> None:
    mb = 1024 * 1024
    _set(resource.RLIMIT_CPU, int(limits["cpu_time"]))
    _set(resource.RLIMIT_AS, int(limits["memory_mb"]) * mb)
    _set(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * mb)
    _set(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    _set(resource.RLIMIT_CORE, 0)
    if nproc is not None:
        _set(resource.RLIMIT_NPROC, nproc)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))


def _set(limit: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, value))
    except (ValueError, OSError):
        pass


# -- processes --------------------------------------------------------------------------------


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _own_session() -> None:
    try:
        os.setsid()
    except PermissionError:  # already a process group leader (started with start_new_session)
        pass


def _fork_keeper(channel: int | None, workdir: str, *, subreaper: bool, view: str | None = None) -> None:
    """Fork; the parent stays behind as the keeper and never returns. It removes ``view`` (the
    empty directory a session's root was mounted on, in the child's namespace) at the end."""
    if subreaper:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the student come back to the keeper
    pid = os.fork()
    if pid == 0:
        return
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    _close_fds(channel)
    code, abandoned = _wait_watching(pid, channel)
    if subreaper:
        for p in _stop_tree(os.getpid()):
            _signal(p, signal.SIGKILL)
        _reap_all()
    if abandoned:  # the grader may be gone for good: do not leave its working directory behind
        try:
            remove_workdir(workdir)
        except OSError:
            pass
    if view is not None:
        try:
            os.rmdir(view)
        except OSError:
            pass
    os._exit(code)


def _reap_all(timeout: float = 5.0) -> None:
    """Collect every child (orphans come back to a subreaper), so none is left as a zombie."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            time.sleep(0.005)


def _wait_watching(pid: int, channel: int | None) -> tuple[int, bool]:
    """Wait for the child; kill it if nobody reads the channel any more (the grader has gone).

    Returns the child's exit code, and whether the channel was abandoned."""
    abandoned = False
    poller = select.poll()
    try:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
    except (OSError, AttributeError):
        pidfd = None
    if channel is not None:
        poller.register(channel, 0)  # a pipe's write end reports POLLERR once its reader is closed
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 1, abandoned
        if done:
            return _exit_code(status), abandoned
        try:
            events = poller.poll(None if pidfd is not None else 200)
        except InterruptedError:
            continue
        for fd, ev in events:
            if fd == channel and ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                _signal(pid, signal.SIGKILL)
                poller.unregister(channel)
                abandoned = True


def _fork_init() -> None:
    """In pid 1 of the new namespace: fork the student, then reap until it has ended."""
    pid = os.fork()
    if pid == 0:
        return
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores whatever it has no handler for
    _close_fds(None)
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if done == pid:
            os._exit(_exit_code(status))  # and the kernel ends everything left in the namespace


NO_MORE_RUNS = 3  # exit code of a run's process that found the session over before its job came


def _serve_runs(control: int, workdir: str) -> None:
    """pid 1 of a session's namespace: fork the process for the next run before its job comes,
    and clean up after each run. Returns in that process (which finishes its setup, then takes its
    job from ``control`` with ``_await_run``); never returns here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 ignores whatever it has no handler for
    _close_fds(control)
    places = [(p, os.stat(p)) for p in (workdir, "/tmp", "/dev/shm") if os.path.isdir(p)]
    while True:
        pid = os.fork()
        if pid == 0:
            return
        code = 0
        while True:  # until the run's process ends, collecting orphans on the way
            try:
                done, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
            if done == pid:
                code = _exit_code(status)
                break
        if code == NO_MORE_RUNS:  # the grader closed the session
            os._exit(0)
        _end_others()
        _empty_places(places)
        try:  # the grader may send the next run; the process forked next takes it
            os.write(control, b"ready")
        except OSError:
            os._exit(0)


def _await_run(control: int) -> tuple[dict, int]:
    """In a run's process, set up already: its job and event fd, from the session's control socket."""
    sock = socket.socket(fileno=control)
    try:
        _, fds, _, _ = socket.recv_fds(sock, 64, 2)
    except (OSError, ValueError):
        fds = []
    sock.close()
    if len(fds) != 2:  # end of the session (the grader closed its end), or nonsense
        os._exit(NO_MORE_RUNS)
    job_fd, event_fd = fds
    with os.fdopen(job_fd, "rb") as f:
        return json.loads(f.read()), event_fd


def _end_others() -> None:
    """In pid 1 of a namespace: kill every other process in it and collect them all."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # from pid 1: every process of the namespace but itself
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            pass


def _empty_places(places: list[tuple[str, os.stat_result]]) -> None:
    """Remove what a run wrote (in the working directory, /tmp and /dev/shm), keeping the mounted
    submission and data files, and give each place back its owner and mode."""
    for place, st in places:
        for step in (lambda: os.chown(place, st.st_uid, st.st_gid), lambda: os.chmod(place, stat.S_IMODE(st.st_mode))):
            try:
                step()
            except OSError:
                pass
        try:
            entries = list(os.scandir(place))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_dev != st.st_dev:
                    continue  # a mount point: a submission or data file, or the working directory in /tmp
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)  # never follows a symlink; mounted files stay
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def _exit_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _die_with_parent() -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _close_fds(keep: int | None) -> None:
    top = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024)
    if top == resource.RLIM_INFINITY:
        top = 1 << 20
    if keep is None or keep < 3:
        os.closerange(3, top)
    else:
        os.closerange(3, keep)
        os.closerange(keep + 1, top)


def _quiet_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _chown_tree(path: str, uid: int) -> None:
    for base, dirs, files in os.walk(path):
        os.chown(base, uid, uid)
        for name in files:
            os.chown(os.path.join(base, name), uid, uid)


# -- kernel calls -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what} failed: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")


def _prctl(option: int, value: int) -> None:
    _check(_libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def _unshare(flags: int) -> None:
    _check(_libc().unshare(flags), f"unshare({flags:#x})")


def _map_ids(uid: int, gid: int) -> None:
    """Map the grader's own uid and gid into a new user namespace (the same numbers inside)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"), ("gid_map", f"{gid} {gid} 1\n")):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError as exc:
            raise SandboxError(f"writing /proc/self/{name} failed: {exc.strerror}") from None


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc().capset(ctypes.byref(header), ctypes.byref(data)), "dropping capabilities")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def b(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    _check(_libc().mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), b(data)), f"mounting {target}")


def _locked_flags(path: str) -> int:
    """The flags a bind of ``path`` must keep when remounted (a user namespace may not clear them)."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME),
                   (4096, MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def _bind(source: str, target: str, *, writable: bool = False) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | _locked_flags(source)
        _mount(None, target, None, flags)


def _loopback_up() -> None:
    """Bring up the new namespace's own loopback: connecting to it is refused, not unroutable."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH14x", b"lo", 0)
            flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, req)[:18])[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    except OSError:
        pass  # without it, loopback is unreachable instead of refused: just as closed


def _pivot_root(new: str, old: str) -> None:
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SandboxError(f"pivot_root is not known on {os.uname().machine}")
    _check(_libc().syscall(ctypes.c_long(number), os.fsencode(new), os.fsencode(old)), "pivot_root")


# -- the filesystem view ----------------------------------------------------------------------


def _python_paths() -> list[str]:
    """Directories the Python running us needs (never a whole project folder)."""
    out = []
    for prefix in {sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix}:
        for sub in ("bin", "lib", "lib64", "pyvenv.cfg"):
            out.append(os.path.join(prefix, sub))
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry or entry.endswith(".zip")):
            out.append(entry)
    out.append(PACKAGE_DIR)  # the grader package, and nothing beside it
    return [p for p in out if os.path.exists(p)]


def _readonly_paths() -> list[tuple[str, str]]:
    """(path in the view, real source) for every read-only bind, parents before children."""
    wanted: dict[str, str] = {}
    for path in [*SYSTEM_DIRS, *_python_paths()]:
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if os.path.islink(path) and os.path.dirname(path) == "/":
            wanted[path] = "link:" + os.readlink(path)  # /bin -> usr/bin on merged-/usr systems
            continue
        wanted.setdefault(real, real)
        if os.path.abspath(path) != real:
            wanted.setdefault(os.path.abspath(path), "link:" + real)
    out: list[tuple[str, str]] = []
    for path in sorted(wanted, key=lambda p: (p.count("/"), p)):
        if any(path.startswith(done.rstrip("/") + "/") for done, src in out if not src.startswith("link:")):
            continue  # already visible through a parent
        out.append((path, wanted[path]))
    return out


def _make_point(root: str, path: str, *, directory: bool) -> str:
    target = root + path
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if directory:
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.exists(target):
        with open(target, "wb"):
            pass
    return target


def _build_root(workdir: str, disk_mb: int, owner: int, *, fresh_proc: bool) -> None:
    """A new root holding only what the student may see; pivot into it; drop the old one."""
    root = os.path.join(workdir, ROOT_NAME)
    os.mkdir(root, 0o755)
    _build_view(root, disk_mb, fresh_proc=fresh_proc)
    _finish_view(root, workdir, disk_mb, owner, resize=False)


def _build_view(root: str, disk_mb: int, *, fresh_proc: bool) -> None:
    """The part of the new root that does not depend on the submission, mounted on ``root``."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m")
    size = f"size={disk_mb}m"
    # /tmp first: a project or virtual environment that lives under /tmp (a CI checkout, say) is
    # bound in below and must stay visible on top of the student's empty /tmp.
    _mount("tmpfs", _make_point(root, "/tmp", directory=True), "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
    for path, source in _readonly_paths():
        if source.startswith("link:"):
            target = root + path
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(source[5:], target)
            continue
        _bind(source, _make_point(root, path, directory=os.path.isdir(source)))
    dev = _make_point(root, "/dev", directory=True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            _bind(f"/dev/{name}", _make_point(root, f"/dev/{name}", directory=False), writable=True)
    for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                     ("stderr", "/proc/self/fd/2")):
        os.symlink(to, f"{dev}/{name}")
    _mount("tmpfs", _make_point(root, "/dev/shm", directory=True), "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
    proc = _make_point(root, "/proc", directory=True)
    try:
        if not fresh_proc:
            raise SandboxError("no pid namespace of its own")
        _mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except SandboxError:  # e.g. a container that masks parts of /proc forbids a new one
        _bind("/proc", proc, writable=True)
    if os.path.isdir("/sys"):
        _bind("/sys", _make_point(root, "/sys", directory=True))


def _finish_view(root: str, workdir: str, disk_mb: int, owner: int, *, resize: bool = True) -> None:
    """Add the working directory to the view on ``root``, then pivot into it and make it read-only.
    ``resize``: the view was built ahead of the job, so /tmp and /dev/shm take the job's size now."""
    size = f"size={disk_mb}m"
    for place in ("/tmp", "/dev/shm") if resize else ():
        _mount(None, root + place, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, size)
    # The working directory: a tmpfs of the student's own, the prepared files bound in read-only.
    home = _make_point(root, workdir, directory=True)
    _mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=700,uid={owner},gid={owner},{size}")
    for base, dirs, files in os.walk(workdir):
        rel = os.path.relpath(base, workdir)
        if rel == ROOT_NAME or rel.startswith(ROOT_NAME + os.sep):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not (rel == "." and d == ROOT_NAME)]
        for d in dirs:
            inner = os.path.normpath(os.path.join(home, rel, d))
            os.mkdir(inner, 0o755)
            os.chown(inner, owner, owner)
        for name in files:
            src = os.path.join(base, name)
            inner = os.path.normpath(os.path.join(home, rel, name))
            with open(inner, "wb"):
                pass
            _bind(src, inner)
    dev = root + "/dev"
    _mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    os.mkdir(".old")
    try:
        _pivot_root(".", ".old")
    except SandboxError:
        os.chroot(".")  # the student has no capability left to climb out of it
    else:
        os.chdir("/")
        _check(_libc().umount2(b"/.old", MNT_DETACH), "detaching the old root")
        os.rmdir("/.old")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
