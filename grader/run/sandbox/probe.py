"""What the platform allows: which protections a student process can get here, probed once.

``features()`` forks a child that tries each namespace; the answer (``Features``) is what every
run is planned with, what the report header shows, and what tests narrow to check the fallbacks.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.errors import SandboxError
from grader.run.sandbox import cgroup, landlock, seccomp
from grader.run.sandbox.linux import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    MS_NODEV,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    map_ids,
    mount,
    unshare,
)
from grader.run.sandbox.root import python_paths

UID_BASE = 1_900_000_000  # + the keeper's pid: a uid (and gid) used by one run only, never a real user's

# What a run can report as in force, with the words used in reports.
FEATURES = {
    "session": "own session and process group",
    "env": "scrubbed environment",
    "limits": "limits on CPU time, memory, open files and file size",
    "memory": "one memory limit for all its processes and the files, memfd and shared memory they hold (cgroup)",
    "processes": "process limit",
    "processes_watched": "processes and threads counted in its tree, the run ended past the limit (uid 0, which the "
    "kernel's limit exempts)",
    "turns": "a process limit no other student's run counts against (runs that share its uid take turns)",
    "cleanup": "every process it starts is ended with it",
    "network": "no network (own network namespace)",
    "filesystem": "private filesystem view (solutions, caches, other submissions and scorecards absent)",
    "disk": "what it writes bounded by disk_mb (its writes kept to its working directory, which the grader watches)",
    "user": "unprivileged user of its own",
    "userns": "user namespace, no capabilities",
    "no_caps": "root without any capability",
    "no_new_privs": "no privilege gain through setuid programs",
    "landlock": "files beyond Python, the grader and its own working directory out of reach (Landlock)",
    "landlock_net": "no TCP connection or listening socket (Landlock)",
    "scoped": "no signal or abstract socket beyond its own processes (Landlock)",
    "seccomp": "no ptrace, keyrings, System V IPC, memfd or new namespaces (seccomp)",
    "no_sockets": "no new network or Unix sockets (seccomp)",
}


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
    landlock: int = 0  # the Landlock ABI applied (0: none); grader.run.sandbox.landlock
    seccomp: bool = False  # grader.run.sandbox.seccomp
    memory_cgroup: bool = False  # a memory cgroup per sandbox: grader.run.sandbox.cgroup

    def to_wire(self) -> dict[str, bool]:
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: Mapping[str, object]) -> Features:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(
            **{
                k: (int(v) if k == "landlock" else bool(v))  # type: ignore[arg-type]
                for k, v in data.items()
                if k in names and isinstance(v, (bool, int))
            }
        )

    @property
    def private_files(self) -> bool:
        """Whether student code is kept from the grader's files: a private view or Landlock."""
        return self.mount_ns or self.landlock >= 1

    @property
    def seccomp_sockets(self) -> bool:
        """Whether the seccomp filter refuses new sockets: Internet and packet ones without a network
        namespace, Unix ones (a host's daemon socket) without a private view as well."""
        return self.seccomp and not (self.net_ns and self.mount_ns)

    @property
    def disk_watched(self) -> bool:
        """Whether a run's disk is bounded by a watch on its working directory (``sandbox.disk``): no
        tmpfs of its own (no mount namespace), but Landlock keeps every write it makes in that folder."""
        return self.linux and not self.mount_ns and self.landlock >= 1

    @property
    def processes_watched(self) -> bool:
        """Whether the keeper counts the run's processes and threads itself: uid 0 without a uid of its
        own, which the kernel's process limit exempts."""
        return self.linux and self.root and not self.drop_user and not self.user_ns

    @property
    def takes_turns(self) -> bool:
        """Whether runs take turns (``host.turn``): student code runs as the grader's own uid with no
        user namespace, so every run's processes count against one per-user limit."""
        return self.linux and not self.root and not self.user_ns

    def active(self) -> tuple[str, ...]:
        """The ids (keys of FEATURES) a run gets on this platform."""
        if not self.linux:
            return ("env", "limits")
        out = ["session", "env", "limits"]
        if self.memory_cgroup:
            out.append("memory")
        if self.drop_user or self.user_ns or not self.root:
            out.append("processes")
        elif self.processes_watched:
            out.append("processes_watched")
        if self.takes_turns:
            out.append("turns")
        out.append("cleanup")
        if self.net_ns:
            out.append("network")
        if self.mount_ns:
            out.append("filesystem")
        elif self.disk_watched:
            out.append("disk")
        if self.drop_user:
            out.append("user")
        elif self.root:
            out.append("no_caps")
        if self.user_ns:
            out.append("userns")
        out.append("no_new_privs")
        out.extend(landlock.features_for(self.landlock))
        if self.seccomp:
            out.append("seccomp")
            if self.seccomp_sockets:
                out.append("no_sockets")
        return tuple(out)

    def missing(self) -> list[str]:
        """What is not enforced here, and why, in words for the report."""
        out = []
        if not self.linux:
            return ["no isolation beyond resource limits and a scrubbed environment (not Linux)"]
        if not self.net_ns and not self.seccomp and self.landlock < 4:
            out.append(
                "network: no network namespace, seccomp filter or Landlock network rules here, "
                "so student code can reach the network"
            )
        elif not self.net_ns and not self.seccomp:
            out.append(
                "network: no network namespace or seccomp filter here, so student code can use UDP "
                "(TCP is refused by Landlock)"
            )
        if not self.private_files:
            out.append(
                "filesystem: no mount namespace or Landlock here, so student code can read whatever its user can read"
            )
            out.append(DISK_UNBOUNDED)
        if self.root and not self.drop_user:
            out.append(NO_UID)
            out.append(NPROC_WATCHED)
            if self.landlock < 6 and not self.pid_ns:
                out.append(
                    "signals: as root without a pid namespace or Landlock scopes, student code can "
                    "signal the grader's processes"
                )
        if self.linux and not self.seccomp:
            out.append(
                "seccomp: no filter (pyseccomp or libseccomp.so.2 missing), so ptrace of its own "
                "processes, the kernel keyrings, System V IPC and memfd files (memory that no limit but "
                "the file size counts) are open to student code"
            )
        if self.takes_turns:
            out.append(TURNS)
        if not self.pid_ns:
            out.append("cleanup: by process tree and group, not by namespace")
        if not self.memory_cgroup:
            out.append(
                "memory: no memory cgroup can be made here, so the limit is each process's address space, "
                "not what all the run's processes and files hold together"
            )
        return out

    def describe(self) -> str:
        return "; ".join(FEATURES[f] for f in self.active())


DISK_UNBOUNDED = (
    "disk: no mount namespace for a tmpfs of disk_mb and no Landlock to keep its writes in one "
    "folder, so nothing but the file size limit bounds what student code writes"
)
TURNS = (
    "user: runs as the grader's own user (not root, no user namespace), whose process limit all runs share, "
    "so student runs take turns (one at a time) and one run's processes never count against another's"
)
NO_UID = "user: runs as root without capabilities (Python is not readable by another user and no mount namespace)"
NO_NPROC = "processes: not limited (the kernel does not apply the limit to root)"
NPROC_WATCHED = (
    "processes: the kernel does not limit uid 0, so the keeper counts the run's processes and threads "
    "every 20 ms and ends the run past the limit (a fork loop gets past it by what it starts in between)"
)


def not_enforced(active: Iterable[str]) -> list[str]:
    """What a run that reported ``active`` (its protections, keys of FEATURES) did not have, among
    the limits a scorecard should own up to: the words for its ``execution.sandbox_not_enforced``."""
    have = set(active)
    out: list[str] = []
    if not have & {"network", "landlock_net", "no_sockets"}:
        out.append(
            "network: no network namespace, seccomp filter or Landlock network rules, so student code "
            "could reach the network"
        )
    if not have & {"filesystem", "landlock"}:
        out.append("filesystem: no mount namespace or Landlock, so student code could read whatever its user can")
    if not have & {"filesystem", "disk"}:
        out.append(DISK_UNBOUNDED)
    if "no_caps" in have:
        out.append(NO_UID)
    if "processes" not in have:
        out.append(NPROC_WATCHED if "processes_watched" in have else NO_NPROC)
    elif "turns" in have:
        out.append(TURNS)
    if "memory" in have:  # the cgroup counts memfd files and shared memory with the rest
        return out
    if "seccomp" not in have:
        out.append("memfd: no seccomp filter, so memfd files could hold memory that no limit but the file size counts")
    out.append(
        "memory: bounded per process by its address space (RLIMIT_AS) only, not for all processes of "
        "the run together (no memory cgroup could be made)"
    )
    return out


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
            result: dict[str, bool] = {}
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
        linux=True,
        root=root,
        user_ns=got.get("user_ns", False),
        mount_ns=mount_ns,
        net_ns=got.get("net_ns", False),
        pid_ns=got.get("pid_ns", False),
        ipc_ns=got.get("ipc_ns", False),
        drop_user=root
        and (mount_ns or usable_by_another_user(python_paths(), sys.executable, search=[tempfile.gettempdir()])),
        landlock=landlock.abi(),
        seccomp=seccomp.available(),
        memory_cgroup=cgroup.available(),
    )


def _probe(root: bool, spot: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if not root:
        uid, gid = os.getuid(), os.getgid()

        def user_ns() -> None:
            unshare(CLONE_NEWUSER)
            map_ids(uid, gid)

        out["user_ns"] = _attempt(user_ns)
        if not out["user_ns"]:
            return out
    for name, flag in (
        ("net_ns", CLONE_NEWNET),
        ("pid_ns", CLONE_NEWPID),
        ("ipc_ns", CLONE_NEWIPC),
        ("mount_ns", CLONE_NEWNS),
    ):
        out[name] = _attempt(functools.partial(unshare, flag))
    if out["mount_ns"]:

        def private_tmpfs() -> None:
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            mount("tmpfs", spot, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")

        out["mount_ns"] = _attempt(private_tmpfs)
    return out


def _attempt(step: Callable[[], object]) -> bool:
    try:
        step()
        return True
    except (SandboxError, OSError):
        return False


def header(plan: Features | None = None) -> list[str]:
    """The lines a grading run prints before it starts (``grader grade``, the pytest report
    header): what every run here will lack, one line each."""
    return [f"grader sandbox, not enforced here: {m}" for m in (plan or features()).missing()]


def usable_by_another_user(paths: Iterable[str], executable: str | None = None, search: Iterable[str] = ()) -> bool:
    """Whether a uid other than the grader's could run Python from these paths: every directory
    on the way to each of them searchable, each directory readable and searchable, each file
    readable, ``executable`` executable and each of ``search`` searchable (the temporary folder
    that holds the run's working directory), along the paths as given and along their real paths
    (a virtual environment's ``bin/python`` is a link into the base installation).

    As root this asks the kernel itself: a forked child takes a uid no user has and no group, and
    tries ``access(2)`` on each (so ACLs and every parent directory count, as when the student's
    process starts). Otherwise the mode bits for others are read the same way."""
    wanted = [(p, _need(p)) for p in paths] + [(p, os.X_OK) for p in search]
    if executable:
        wanted.append((executable, os.R_OK | os.X_OK))
    if os.geteuid() == 0:
        return _access_as(UID_BASE, wanted)
    return all(_others_may(path, need) for path, need in wanted)


def _need(path: str) -> int:
    return os.R_OK | os.X_OK if os.path.isdir(path) else os.R_OK


def _access_as(uid: int, wanted: list[tuple[str, int]]) -> bool:
    """Whether ``uid`` (with no groups) may do ``need`` with each path, as the kernel answers it."""
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:  # pragma: no cover - runs in the forked child
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            code = 0 if all(os.access(path, need) for path, need in wanted) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _others_may(path: str, need: int) -> bool:
    """Whether the permission bits for others allow ``need`` on ``path``, and a search of every
    directory on the way to it, through the path as written and through its real path."""
    bits = {os.R_OK: stat.S_IROTH, os.W_OK: stat.S_IWOTH, os.X_OK: stat.S_IXOTH}
    for chain in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        for parent in reversed(chain.parents):
            try:
                if not os.stat(parent).st_mode & stat.S_IXOTH:  # a link is searched where it leads
                    return False
            except OSError:
                return False
        try:
            mode = os.stat(chain).st_mode
        except OSError:
            return False
        if any(need & flag and not mode & bit for flag, bit in bits.items()):
            return False
    return True


def job_uid(keeper_pid: int) -> int:
    """The uid (and gid) the student runs as, when the grader is root: one per run."""
    return UID_BASE + keeper_pid


def sessions_possible(plan: Features) -> bool:
    """Whether runs of one submission can share one sandbox: only with a pid namespace (its init
    ends whatever a run leaves behind) and a private root (whose writable places init empties)."""
    return plan.linux and plan.pid_ns and plan.mount_ns
