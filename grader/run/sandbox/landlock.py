"""Landlock: what the student process may read, write and connect to, with no privilege at all.

Landlock (Linux 5.13 and later) lets any process restrict itself and everything it starts, for
good. It works where namespaces do not (a Docker container with the default capabilities, a CI
runner that forbids user namespaces) and also on top of them. ``restrict(workdir, private_tmp)``
is called once, in the student process, after no_new_privs and before any student code:

* files: read (and execute) only the system libraries, the Python installation, its
  site-packages and the grader package, a few files of /etc, /proc and /sys; read and write only
  the run's working directory (and /tmp and /dev/shm where they are the run's own tmpfs) and the
  harmless devices (/dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom), and, in a
  private root, its own pseudo-terminals (/dev/pts, for `!cmd`). Everything else,
  the course, ``solutions/``, the reference cache, scorecards and other submissions, is refused
  whatever the uid (root's ``DAC_OVERRIDE`` does not pass Landlock);
* ABI 4 and later: no TCP bind or connect at all (the host's loopback servers included);
* ABI 6 and later: no signal to a process outside the sandbox, no abstract Unix socket outside it.

A Landlock-restricted process also cannot ptrace, or read ``/proc/PID/environ`` of, a process
outside its domain (since ABI 1). The system calls have no Python wrapper; they are called
through ctypes with the kernel's structures (``include/uapi/linux/landlock.h``).
"""

from __future__ import annotations

import ctypes
import functools
import os

from grader.errors import SandboxError
from grader.run.sandbox.linux import libc
from grader.run.sandbox.root import GIVEN, python_paths

# The same numbers on every architecture (the generic syscall table).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a rule on a file may carry
READ = EXECUTE | READ_FILE | READ_DIR

# Read-only, beside the Python installation: the system's libraries and what libc and the
# scientific libraries read at run time (never all of /etc: /etc/shadow is root's to read).
SYSTEM_READ = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sys",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/fonts",
    "/etc/matplotlibrc",
    "/etc/mime.types",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel's header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(number: int, *args: object) -> int:
    result: int = libc().syscall(ctypes.c_long(number), *args)
    return result


@functools.lru_cache(maxsize=1)
def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where it has none (or it is turned off)."""
    try:
        version = _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def handled_fs(version: int) -> int:
    rights = (MAKE_SYM << 1) - 1  # ABI 1: execute .. make_sym
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(workdir: str, *, private_tmp: bool) -> tuple[str, ...]:
    """Restrict this process (and what it starts) for good; returns the feature ids now in force.

    Needs no_new_privs (or CAP_SYS_ADMIN). Raises SandboxError if the kernel refuses a step:
    a half-built ruleset is never applied.
    """
    version = abi()
    if version < 1:
        raise SandboxError("Landlock is not available in this kernel")
    fs = handled_fs(version)
    attr = _RulesetAttr(
        fs,
        NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0,
    )
    fd = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise SandboxError(f"creating a Landlock ruleset failed: {os.strerror(ctypes.get_errno())}")
    try:
        writable = [workdir, *(("/tmp", "/dev/shm") if private_tmp else ())]
        for path in (*SYSTEM_READ, *python_paths()):
            _allow(fd, path, READ & fs)
        for path in DEVICES:
            _allow(fd, path, (READ_FILE | WRITE_FILE) & fs)
        for path in writable:
            _allow(fd, path, fs)
        if private_tmp and os.path.isdir(GIVEN):  # the given files, read-only, to put back after a run
            _allow(fd, GIVEN, READ & fs)
        if private_tmp:  # the run's own pseudo-terminals (a devpts of its own in its private root)
            _allow(fd, "/dev/pts", (READ_DIR | READ_FILE | WRITE_FILE | IOCTL_DEV) & fs)
        if _syscall(SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise SandboxError(f"applying the Landlock ruleset failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
    out = ["landlock"]
    if version >= 4:
        out.append("landlock_net")
    if version >= 6:
        out.append("scoped")
    return tuple(out)


def _allow(ruleset: int, path: str, rights: int) -> None:
    """Allow ``rights`` beneath ``path`` (a missing path is skipped: nothing to allow there)."""
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, target)
        if (
            _syscall(
                SYS_ADD_RULE,
                ctypes.c_int(ruleset),
                ctypes.c_int(RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
            != 0
        ):
            raise SandboxError(f"a Landlock rule for {path} was refused: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(target)


def features_for(version: int) -> tuple[str, ...]:
    """The feature ids Landlock of this ABI gives (for the probe's report)."""
    if version < 1:
        return ()
    return ("landlock",) + (("landlock_net",) if version >= 4 else ()) + (("scoped",) if version >= 6 else ())
