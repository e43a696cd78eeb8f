"""One memory limit for everything a run holds: a memory cgroup per sandbox, where the grader may make one.

The address-space limit (RLIMIT_AS) bounds each process on its own. A cgroup bounds them all
together, and counts what no per-process limit sees: the files a run writes to its tmpfs
(working directory, /tmp, /dev/shm), memfd files and shared memory, page tables and the kernel
memory of its inodes. When the run needs more, the kernel ends its largest process (the student's
Python, as a rule) and counts an ``oom_kill``, which the grader reads to say why the run ended.

Where: a child of the grader's own memory cgroup, named after the keeper's pid
(``grader-<pid>``), so the grader finds it again from the pid alone. Under cgroup v1 that is the
memory hierarchy; under cgroup v2 it needs the memory controller delegated to the grader's
cgroup's children (``cgroup.subtree_control`` lists ``memory``). ``available()`` tries it once;
where it fails (a container's read-only /sys/fs/cgroup, a user without a delegated subtree), no
cgroup is made and the scorecard says so (``execution.sandbox_not_enforced``).

Who does what: the keeper (the grader's uid, outside the cgroup) makes the cgroup before it forks
(``create``); its child joins it before any namespace or student code (``Group.join``); the
session's init sets the limit once the session's limits arrive (``Group.set_limit``, through a
descriptor opened before the private root hides /sys/fs/cgroup); the grader reads ``oom_kills``
after a run ends and removes the cgroup with the run's processes (``remove``), or the keeper does
if the grader has gone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from dataclasses import dataclass

PREFIX = "grader-"


@dataclass(frozen=True)
class Place:
    """The grader's own memory cgroup: its directory and the cgroup version."""

    path: str
    version: int  # 1 or 2

    @property
    def limit_file(self) -> str:
        return "memory.limit_in_bytes" if self.version == 1 else "memory.max"

    @property
    def events_file(self) -> str:
        return "memory.oom_control" if self.version == 1 else "memory.events"


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root within the hierarchy, mount point, file system type, super options) of each mount."""
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, more = left.split(), right.split()
                if len(fields) >= 5 and len(more) >= 3:
                    out.append((fields[3], fields[4].replace("\\040", " "), more[0], set(more[2].split(","))))
    except OSError:
        pass
    return out


def _joined(mount_point: str, mount_root: str, path: str) -> str:
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root) :] or "/"
    return os.path.join(mount_point, path.lstrip("/"))


@functools.lru_cache(maxsize=1)
def place() -> Place | None:
    """This process's memory cgroup, if there is a memory controller to make children under."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
    except OSError:
        return None
    mounts = _mounts()
    for parts in lines:
        if len(parts) == 3 and "memory" in parts[1].split(","):
            for root, point, fstype, options in mounts:
                if fstype == "cgroup" and "memory" in options:
                    return Place(_joined(point, root, parts[2]), 1)
    for parts in lines:
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            for root, point, fstype, _options in mounts:
                if fstype == "cgroup2":
                    path = _joined(point, root, parts[2])
                    if _delegates_memory(path):
                        return Place(path, 2)
    return None


def _delegates_memory(path: str) -> bool:
    try:
        with open(os.path.join(path, "cgroup.subtree_control")) as f:
            if "memory" in f.read().split():
                return True
        with open(os.path.join(path, "cgroup.subtree_control"), "w") as f:
            f.write("+memory")  # refused while the cgroup holds processes, unless it is the root
        return True
    except OSError:
        return False


def path_of(keeper: int | str, where: Place | None = None) -> str | None:
    where = where or place()
    return os.path.join(where.path, f"{PREFIX}{keeper}") if where else None


class Group:
    """A run's memory cgroup, as its keeper made it; passed down to the processes that use it."""

    def __init__(self, path: str, where: Place):
        self.path, self.where = path, where
        self.limit_fds = [os.open(os.path.join(path, where.limit_file), os.O_WRONLY | os.O_CLOEXEC)]
        if where.version == 1:  # with swap, the limit must count it too, or pages just move there
            with contextlib.suppress(OSError):
                self.limit_fds.append(
                    os.open(os.path.join(path, "memory.memsw.limit_in_bytes"), os.O_WRONLY | os.O_CLOEXEC)
                )
        else:
            with contextlib.suppress(OSError):
                self.limit_fds.append(os.open(os.path.join(path, "memory.swap.max"), os.O_WRONLY | os.O_CLOEXEC))

    def join(self) -> None:
        """Move this process into the cgroup (everything it starts from now on is in it too)."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write("0")

    def set_limit(self, megabytes: int) -> None:
        """The memory all the run's processes and files may hold together. Works after the private
        root is in place: the descriptors were opened before."""
        value = str(max(int(megabytes), 16) * 1024 * 1024)
        first, *swap = self.limit_fds
        os.write(first, value.encode())
        for fd in swap:  # v1: memory and swap together (>= the memory limit); v2: no swap at all
            with contextlib.suppress(OSError):
                os.write(fd, (value if self.where.version == 1 else "0").encode())

    def close(self) -> None:
        for fd in self.limit_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.limit_fds = []


def create(keeper: int | str) -> Group:
    """Make the cgroup of the run whose keeper is ``keeper`` (this process). Raises OSError."""
    where = place()
    if where is None:
        raise OSError("no memory cgroup to make a child in")
    path = os.path.join(where.path, f"{PREFIX}{keeper}")
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:  # left by an earlier run whose keeper had the same pid, and empty by now
        os.rmdir(path)
        os.mkdir(path, 0o755)
    try:
        return Group(path, where)
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise


def oom_kills(keeper: int) -> int:
    """How many processes of this run the kernel ended for lack of memory (0: none, or no cgroup)."""
    path = path_of(keeper)
    where = place()
    if path is None or where is None:
        return 0
    try:
        with open(os.path.join(path, where.events_file)) as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def remove(keeper: int | str, timeout: float = 1.0) -> bool:
    """Remove the run's cgroup once its processes are gone (they leave it as they exit); whether
    it is gone."""
    path = path_of(keeper)
    if path is None:
        return True
    end = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:  # EBUSY: a process still exiting
            if time.monotonic() >= end:
                return False
            time.sleep(0.005)


def sweep() -> None:
    """Remove the cgroups of keepers that have ended (a grader killed outright leaves them behind)."""
    where = place()
    if where is None:
        return
    try:
        names = os.listdir(where.path)
    except OSError:
        return
    for name in names:
        pid = name[len(PREFIX) :]
        if name.startswith(PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(where.path, name))  # refused while a process is in it


_probing = threading.Lock()


def available() -> bool:
    """Whether this process can make a memory cgroup, limit it and move a process into it (tried
    once per process; the grading threads of a batch may all ask at once)."""
    with _probing:
        return _available()


@functools.lru_cache(maxsize=1)
def _available() -> bool:
    if place() is None:
        return False
    name = f"probe-{os.getpid()}"  # a name no keeper has, and that sweep() leaves alone
    try:
        group = create(name)
    except OSError:
        return False
    try:
        group.set_limit(64)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the probe child
            code = 0
            try:
                group.join()
            except OSError:
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0
    except OSError:
        return False
    finally:
        group.close()
        remove(name)
