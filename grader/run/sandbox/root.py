"""The private filesystem view of a student process: a new root holding only what it may see.

Read-only binds of the system and Python directories and of the grader package, a fresh /dev
(a few devices and pseudo-terminals of its own), its own /proc, size-limited tmpfs for /tmp,
/dev/shm and the working directory (with the submission and data files bound in read-only). ``build_root`` makes it in one go; a session
makes the submission-independent part ahead (``build_view``) and adds the working directory
once the submission is known (``finish_view``).
"""

from __future__ import annotations

import os
import sys

from grader import PACKAGE_DIR
from grader.errors import SandboxError
from grader.run.sandbox.linux import (
    MNT_DETACH,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    bind,
    check,
    libc,
    mount,
    pivot_root,
)

ROOT_NAME = ".sandbox-root"  # inside the grader's fresh working directory; removed with it
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom")
PTYS = 16  # pseudo-terminals a run may hold at once


def python_paths() -> list[str]:
    """Directories the Python running us needs (never a whole project folder)."""
    out = []
    for prefix in {sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix}:
        for sub in ("bin", "lib", "lib64", "pyvenv.cfg"):
            out.append(os.path.join(prefix, sub))
    for entry in sys.path:
        if entry and ("site-packages" in entry or "dist-packages" in entry or entry.endswith(".zip")):
            out.append(entry)
    out.append(PACKAGE_DIR)  # the whole grader package (not this file's folder), and nothing beside it
    return [p for p in out if os.path.exists(p)]


def _readonly_paths() -> list[tuple[str, str]]:
    """(path in the view, real source) for every read-only bind, parents before children."""
    wanted: dict[str, str] = {}
    for path in [*SYSTEM_DIRS, *python_paths()]:
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


def build_root(workdir: str, disk_mb: int, owner: int, *, fresh_proc: bool, group: int | None = None) -> None:
    """A new root holding only what the student may see; pivot into it; drop the old one."""
    root = os.path.join(workdir, ROOT_NAME)
    os.mkdir(root, 0o755)
    build_view(root, disk_mb, fresh_proc=fresh_proc)
    finish_view(root, workdir, disk_mb, owner, resize=False, group=group)


# Files a run may create on each of its tmpfs (the working directory, /tmp, /dev/shm): every inode
# is kernel memory that no size limit counts (400,000 empty files held about 400 MB of it).
TMPFS_INODES = 16384


def _sized(disk_mb: int) -> str:
    return f"size={disk_mb}m,nr_inodes={TMPFS_INODES}"


def build_view(root: str, disk_mb: int, *, fresh_proc: bool) -> None:
    """The part of the new root that does not depend on the submission, mounted on ``root``."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m,nr_inodes=4096")
    size = _sized(disk_mb)
    # /tmp first: a project or virtual environment that lives under /tmp (a CI checkout, say) is
    # bound in below and must stay visible on top of the student's empty /tmp.
    mount("tmpfs", _make_point(root, "/tmp", directory=True), "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
    for path, source in _readonly_paths():
        if source.startswith("link:"):
            target = root + path
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(source[5:], target)
            continue
        bind(source, _make_point(root, path, directory=os.path.isdir(source)))
    dev = _make_point(root, "/dev", directory=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=64k,nr_inodes=64")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            bind(f"/dev/{name}", _make_point(root, f"/dev/{name}", directory=False), writable=True)
    for name, to in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(to, f"{dev}/{name}")
    mount("tmpfs", _make_point(root, "/dev/shm", directory=True), "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,{size}")
    # Terminals of its own (a new devpts instance, none of the host's), for `!cmd`, which IPython
    # runs on a pseudo-terminal as Jupyter does.
    try:
        mount(
            "devpts",
            _make_point(root, "/dev/pts", directory=True),
            "devpts",
            MS_NOSUID | MS_NOEXEC,
            f"newinstance,ptmxmode=0666,mode=0620,max={PTYS}",
        )
        os.symlink("pts/ptmx", f"{dev}/ptmx")
    except SandboxError:
        pass  # no terminals here: `!cmd` fails in the cell, as on a machine without them
    proc = _make_point(root, "/proc", directory=True)
    try:
        if not fresh_proc:
            raise SandboxError("no pid namespace of its own")
        mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except SandboxError:  # e.g. a container that masks parts of /proc forbids a new one
        bind("/proc", proc, writable=True)
    if os.path.isdir("/sys"):
        bind("/sys", _make_point(root, "/sys", directory=True))


def finish_view(
    root: str, workdir: str, disk_mb: int, owner: int, *, resize: bool = True, group: int | None = None
) -> None:
    """Add the working directory to the view on ``root``, then pivot into it and make it read-only.
    ``resize``: the view was built ahead of the job, so /tmp and /dev/shm take the job's size now.
    ``owner`` and ``group`` (the same as ``owner`` if None) own the working directory: in a user
    namespace the grader's own uid and gid, which differ as a rule (and only they are mapped)."""
    group = owner if group is None else group
    size = _sized(disk_mb)
    for place in ("/tmp", "/dev/shm") if resize else ():
        mount(None, root + place, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, size)
    # The working directory: a tmpfs of the student's own, the prepared files bound in read-only.
    home = _make_point(root, workdir, directory=True)
    mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=700,uid={owner},gid={group},{size}")
    for base, dirs, files in os.walk(workdir):
        rel = os.path.relpath(base, workdir)
        if rel == ROOT_NAME or rel.startswith(ROOT_NAME + os.sep):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not (rel == "." and d == ROOT_NAME)]
        for d in dirs:
            inner = os.path.normpath(os.path.join(home, rel, d))
            os.mkdir(inner, 0o755)
            os.chown(inner, owner, group)
        for name in files:
            src = os.path.join(base, name)
            inner = os.path.normpath(os.path.join(home, rel, name))
            with open(inner, "wb"):
                pass
            bind(src, inner)
    dev = root + "/dev"
    mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    os.mkdir(".old")
    try:
        pivot_root(".", ".old")
    except SandboxError:
        os.chroot(".")  # the student has no capability left to climb out of it
    else:
        os.chdir("/")
        check(libc().umount2(b"/.old", MNT_DETACH), "detaching the old root")
        os.rmdir("/.old")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
