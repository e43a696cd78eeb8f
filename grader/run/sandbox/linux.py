"""The kernel calls the sandbox needs that Python does not wrap: unshare, mount, pivot_root, prctl
and capset through ctypes, the id maps of a user namespace, and bringing up a loopback device.

A refused call raises SandboxError naming the call and its errno; whether that is fatal is for
the caller to say (the probe expects refusals, ``enter`` does not run a notebook after one).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
import socket
import struct

from grader.errors import SandboxError

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


@functools.lru_cache(maxsize=1)
def libc() -> ctypes.CDLL:
    """The C library of this process, with errno kept for ``check``."""
    return ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    """Raise SandboxError for a libc call that returned non-zero."""
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what} failed: {os.strerror(err)} (errno {errno.errorcode.get(err, err)})")


def prctl(option: int, value: int) -> None:
    check(libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl({option})")


def unshare(flags: int) -> None:
    check(libc().unshare(flags), f"unshare({flags:#x})")


def map_ids(uid: int, gid: int) -> None:
    """Map the grader's own uid and gid into a new user namespace (the same numbers inside)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"), ("gid_map", f"{gid} {gid} 1\n")):
        try:
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        except OSError as exc:
            raise SandboxError(f"writing /proc/self/{name} failed: {exc.strerror}") from None


def drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    check(libc().capset(ctypes.byref(header), ctypes.byref(data)), "dropping capabilities")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def b(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    check(libc().mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), b(data)), f"mounting {target}")


def _locked_flags(path: str) -> int:
    """The flags a bind of ``path`` must keep when remounted (a user namespace may not clear them)."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME),
                   (4096, MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def bind(source: str, target: str, *, writable: bool = False) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | _locked_flags(source)
        mount(None, target, None, flags)


def loopback_up() -> None:
    """Bring up the new namespace's own loopback: connecting to it is refused, not unroutable."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH14x", b"lo", 0)
            flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, req)[:18])[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    except OSError:
        pass  # without it, loopback is unreachable instead of refused: just as closed


def pivot_root(new: str, old: str) -> None:
    number = PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SandboxError(f"pivot_root is not known on {os.uname().machine}")
    check(libc().syscall(ctypes.c_long(number), os.fsencode(new), os.fsencode(old)), "pivot_root")
