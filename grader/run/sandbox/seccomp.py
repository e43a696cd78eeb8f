"""A seccomp filter for the student process: system calls numerical code never needs, refused.

Built with libseccomp (through the ``pyseccomp`` binding, which loads the system's
``libseccomp.so.2``), not hand-written BPF: libseccomp knows each architecture's syscall numbers
and argument layouts. Built once per process (the forking server builds it before it forks) and
exported as BPF; loaded with ``prctl(PR_SET_SECCOMP)`` in the student process, after
no_new_privs and before any student code; inherited by whatever that process starts. Every refused call fails with EPERM
(student code sees an ``OSError``), nothing is killed, so a scorecard can say what was tried.

Refused everywhere: ptrace and reading or writing another process's memory; the kernel keyrings
(``add_key``, ``request_key``, ``keyctl``: a key in a user keyring would outlive the run); System
V IPC (message queues, semaphores, shared memory); new namespaces (``unshare``, ``setns``,
``clone`` with a CLONE_NEW* flag; ``clone3``, whose flags a filter cannot read, is answered
ENOSYS so the C library falls back to ``clone``); mount, pivot_root, chroot; bpf,
perf_event_open, userfaultfd, io_uring; loading kernel modules and kexec; ``memfd_secret``.
Where the run lacks a network namespace or a private filesystem view, new sockets too (Internet:
UDP, which Landlock does not cover; Unix: a host daemon's socket; packet and netlink).

Refused unless the course allows it (``limits.memfd``): ``memfd_create``, whose anonymous files
hold memory that no address-space limit counts (only ``file_size_mb`` per file, so
``open_files`` x ``processes`` of them can hold far more than ``memory_mb``). The five course
assignments (NumPy, PyTorch, pandas) grade unchanged without it.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import socket
import tempfile
from types import ModuleType

from grader.errors import SandboxError
from grader.run.sandbox.linux import libc

# Imported with this module, not in the student process: finding libseccomp.so runs ldconfig, a
# process of its own, which a run should neither pay for nor count against its pids.
# The binding looks both libraries up with ``ctypes.util.find_library``, which runs ``ldconfig -p``
# twice (about 10 ms each, on the way to the first notebook); where the loader finds them by their
# usual names, those names are given straight away.
_KNOWN = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def _binding() -> ModuleType | None:
    import ctypes.util

    search = ctypes.util.find_library

    def find(name: str) -> str | None:
        known = _KNOWN.get(name)
        if known is not None:
            try:
                ctypes.CDLL(known)
                return known
            except OSError:
                pass
        return search(name)

    ctypes.util.find_library = find
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError):  # not installed, or libseccomp.so.2 missing
        return None
    finally:
        ctypes.util.find_library = search
    module: ModuleType = pyseccomp
    return module


sc = _binding()

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "add_key",
    "request_key",
    "keyctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "memfd_secret",
)
CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
SOCKET_FAMILIES = (
    socket.AF_UNIX,
    socket.AF_INET,
    socket.AF_INET6,
    getattr(socket, "AF_PACKET", 17),
    getattr(socket, "AF_NETLINK", 16),
)


def available() -> bool:
    """Whether a filter can be built here: the binding is installed and finds libseccomp."""
    return sc is not None


def install(*, deny_sockets: bool, deny_memfd: bool = True) -> None:
    """Load the filter into this process. ``deny_sockets``: refuse new Unix, Internet, packet and
    netlink sockets too (``socketpair``, which multiprocessing uses, stays allowed). ``deny_memfd``:
    refuse ``memfd_create`` (memory outside every limit but the file size). The process must have
    no_new_privs set already (``enter`` does, before this)."""
    code = program(deny_sockets, deny_memfd)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc().prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"loading the seccomp filter failed: {os.strerror(err)}")


PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@functools.lru_cache(maxsize=4)
def program(deny_sockets: bool, deny_memfd: bool) -> bytes:
    """The filter as BPF, built by libseccomp once per process and kept: a forking server builds it
    before it forks (``prepare``), so each run only loads it (about 10 ms less per run)."""
    if sc is None:
        raise SandboxError("seccomp is not available here (pyseccomp or libseccomp.so.2 is missing)")
    refuse = sc.ERRNO(errno.EPERM)
    try:
        f = sc.SyscallFilter(sc.ALLOW)
        for name in DENIED:
            _rule(f, refuse, name)
        for flag in CLONE_NEW:  # clone's first argument is its flags on every architecture libseccomp knows
            _rule(f, refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        _rule(f, sc.ERRNO(errno.ENOSYS), "clone3")
        if deny_memfd:
            _rule(f, refuse, "memfd_create")
        if deny_sockets:
            for family in SOCKET_FAMILIES:
                _rule(f, refuse, "socket", sc.Arg(0, sc.EQ, family))
        with tempfile.TemporaryFile() as out:
            f.export_bpf(out)
            out.seek(0)
            code = out.read()
    except OSError as exc:
        raise SandboxError(f"building the seccomp filter failed: {exc.strerror or exc}") from None
    if not code or len(code) % 8:
        raise SandboxError(f"libseccomp exported a filter of {len(code)} bytes, not whole instructions")
    return code


def prepare(deny_sockets: bool) -> None:
    """Build the filters a run may load (with and without memfd), ahead of the forks that use them."""
    if sc is not None:
        for deny_memfd in (True, False):
            program(deny_sockets, deny_memfd)


def _rule(f: object, action: int, name: str, *args: object) -> None:
    try:
        f.add_rule(action, name, *args)  # type: ignore[attr-defined]
    except OSError as exc:
        if exc.errno in (errno.EDOM, errno.EFAULT, errno.EINVAL):  # a call this architecture does not have
            return
        raise
