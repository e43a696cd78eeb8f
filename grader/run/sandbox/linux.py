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
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NAME, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 15, 36, 38
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


def set_name(name: str) -> None:
    """Name this process as ``ps``, ``top`` and ``perf`` show it (at most 15 bytes; best effort)."""
    try:
        libc().prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


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
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

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
    for st, ms in (
        (2, MS_NOSUID),
        (4, MS_NODEV),
        (8, MS_NOEXEC),
        (1024, MS_NOATIME),
        (2048, MS_NODIRATIME),
        (4096, MS_RELATIME),
    ):
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


# The kernel's key retention service. Keys live in the kernel, not in any namespace the sandbox
# makes (but a user namespace): a key a run puts in its user keyring, readable by everyone, would
# outlive the run and reach the next submission's run (``/proc/keys`` lists it).
KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 311, "s390x": 280, "i686": 288}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SETPERM, KEYCTL_CLEAR, KEYCTL_INVALIDATE = 1, 5, 7, 21
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
KEY_OWNER_ALL = 0x3F3F0000  # possessor and owner may do everything; group and others nothing
_NO_KEYS = (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM)  # no keyrings here (EPERM: a seccomp filter)


def keyctl(op: int, *args: int | None) -> int:
    """keyctl(2); -1 with errno set when refused (or ENOSYS where the machine's number is not known)."""
    number = KEYCTL.get(os.uname().machine)
    if number is None:
        ctypes.set_errno(errno.ENOSYS)
        return -1
    values = [ctypes.c_long(a) if a is not None else None for a in args]
    result: int = libc().syscall(ctypes.c_long(number), ctypes.c_long(op), *values)
    return result


def new_session_keyring() -> None:
    """Join a fresh, empty, anonymous session keyring: the run does not possess the keys of the
    grader's session (possession grants what a key's possessor may do, whoever its owner is), and
    what it adds there goes with its last process. Where the kernel has no keys, or a seccomp filter
    around the grader refuses them (Docker's default profile: EPERM, for the student too), nothing
    to do."""
    if keyctl(KEYCTL_JOIN_SESSION_KEYRING, None) < 0 and ctypes.get_errno() not in _NO_KEYS:
        err = ctypes.get_errno()
        raise SandboxError(f"joining a new session keyring failed: {os.strerror(err)}")


def forget_keys_of(uid: int) -> None:
    """As root: drop every key the run's uid holds in the kernel, so nothing it stored reaches a
    later run that gets the same uid, and nothing of the uid stays in the kernel. A uid that owns
    no key (``/proc/key-users`` does not list it, as for almost every run: the seccomp filter
    refuses keys to student code) is left alone: looking its keyrings up would make them, two keys
    per uid that the kernel keeps (thousands of runs made the key collector and ``/proc/keys`` a
    fifth of the machine's CPU). Otherwise: takes the uid as its real and effective id for a
    moment (the saved id stays root's, to come back), empties its user and user-session keyrings
    and invalidates them with every other key it owns that /proc/keys lists; keys linked nowhere
    any more are then freed by the kernel. Call only when no process of that uid is left."""
    if not _owns_keys(uid):
        return
    if keyctl(0, KEY_SPEC_USER_KEYRING, 0) < 0 and ctypes.get_errno() in _NO_KEYS:
        return  # keyctl(KEYCTL_GET_KEYRING_ID) refused outright: no keys here, for anyone
    ruid, euid, suid = os.getresuid()
    rgid, egid, sgid = os.getresgid()
    os.setresgid(uid, uid, sgid)
    os.setresuid(uid, uid, suid)
    try:
        rings = [keyctl(0, spec, 0) for spec in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING)]
        rings = [r for r in rings if r > 0]
        for ring in rings:  # unlinks what they hold, keys the owner can no longer see included
            keyctl(KEYCTL_CLEAR, ring)
        owned = []
        try:
            with open("/proc/keys", "rb") as f:  # bytes: nothing to import while running as the uid
                for line in f:
                    fields = line.split()
                    if len(fields) > 5 and fields[5] == b"%d" % uid:
                        owned.append(int(fields[0], 16))
        except (OSError, ValueError):
            pass
        for serial in dict.fromkeys([*owned, *rings]):
            keyctl(KEYCTL_SETPERM, serial, KEY_OWNER_ALL)  # the owner may always set them
            keyctl(KEYCTL_INVALIDATE, serial)
    finally:
        os.setresuid(ruid, euid, suid)
        os.setresgid(rgid, egid, sgid)


def _owns_keys(uid: int) -> bool:
    """Whether the kernel tracks keys of this uid (``/proc/key-users``); True when it cannot tell."""
    prefix = b"%d:" % uid
    try:
        with open("/proc/key-users", "rb") as f:
            return any(line.lstrip().startswith(prefix) for line in f)
    except OSError:
        return True


MADV_PAGEOUT = 21  # Linux 5.4


def page_out_libraries() -> int:
    """Ask the kernel to reclaim the pages of this process's read-only file mappings (the code and
    constants of the libraries it imported) that no other process maps; the MB of them that were
    resident. Called by the forking server once its imports and warm-up are done: most of what
    importing torch touched runs once (static initialisers, registration); its children fault in
    the part they use, shared, and the rest stops counting against the server. Pages stay correct
    whatever happens (a file page is read again on its next use); writable mappings (relocated
    data, the heap) are never touched; a kernel without ``MADV_PAGEOUT`` refuses the call and
    nothing changes."""
    call = libc().madvise
    call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    before = _file_kb()
    try:
        with open("/proc/self/maps") as maps:
            ranges = [line.split() for line in maps]
    except OSError:
        return 0
    for fields in ranges:
        if len(fields) < 6 or not fields[5].startswith("/") or "w" in fields[1]:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        call(start, end - start, MADV_PAGEOUT)  # refused (an older kernel, a locked mapping): left as it is
    return max(0, before - _file_kb()) // 1024


def _file_kb() -> int:
    try:
        with open("/proc/self/smaps_rollup") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("Pss_File:")), 0)
    except OSError:
        return 0
