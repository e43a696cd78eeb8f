"""The private filesystem view of a student process: a new root holding only what it may see.

Read-only binds of the system and Python directories and of the grader package, a fresh /dev
(a few devices and pseudo-terminals of its own), its own /proc, size-limited tmpfs for /tmp,
/dev/shm and the working directory (holding the run's own copies of the submission and data files). ``build_root`` makes it in one go; a session
makes the submission-independent part ahead (``build_view``) and adds the working directory
once the submission is known (``finish_view``).
"""

from __future__ import annotations

import os
import shutil
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


# The files a run is given (the submission, the course's data files, in folders too) are its own
# copies in its working directory: a run may change or overwrite them (a course's cell writes the
# very file its test reads back into the data folder the course ships), never the course's. Read-only
# binds of the prepared files under GIVEN are what ``put_back`` copies again before a session's next
# run. The copies are part of what the working directory holds (``disk_mb``); a file they cannot
# take (past a quarter of ``disk_mb`` or COPY_BYTES on its own or with those before it, smallest
# first, or past COPY_FILES files) stays a read-only bind in the working directory.
GIVEN = "/.grader-given"
COPY_BYTES = 64 << 20
COPY_FILES = 1024


def _given(workdir: str, disk_mb: int) -> tuple[list[str], dict[str, str], set[str]]:
    """The prepared working directory's folders and files (by path inside it, with the file's real
    path), and which of the files are copied rather than bound."""
    dirs: list[str] = []
    files: dict[str, str] = {}
    for base, subdirs, names in os.walk(workdir):
        rel = os.path.relpath(base, workdir)
        if rel == ROOT_NAME or rel.startswith(ROOT_NAME + os.sep):
            subdirs[:] = []
            continue
        subdirs[:] = [d for d in subdirs if not (rel == "." and d == ROOT_NAME)]
        dirs += [os.path.normpath(os.path.join(rel, d)) for d in subdirs]
        files.update({os.path.normpath(os.path.join(rel, n)): os.path.join(base, n) for n in names})
    copied: set[str] = set()
    total = 0
    room = min(COPY_BYTES, (disk_mb << 20) // 4)
    for rel in sorted(files, key=lambda r: (os.path.getsize(files[r]), r)):
        size = os.path.getsize(files[rel])
        if total + size > room or len(copied) >= COPY_FILES:
            break
        copied.add(rel)
        total += size
    return dirs, files, copied


def _copy_in(source: str, target: str, owner: int, group: int) -> None:
    shutil.copyfile(source, target)
    os.chown(target, owner, group)
    os.chmod(target, 0o644)


def _folder(workdir: str, rel: str, owner: int, group: int) -> None:
    """``rel`` inside ``workdir`` a folder of the student's again, each level made as it was."""
    here = workdir
    for part in [] if rel == "." else rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here) or (os.path.lexists(here) and not os.path.isdir(here)):
            os.unlink(here)  # a run's file or link in the folder's place
        if not os.path.isdir(here):
            os.mkdir(here, 0o755)
        os.chown(here, owner, group)  # a folder the run made unreadable (chmod 000 data/) is readable again
        os.chmod(here, 0o755)


def put_back(workdir: str, owner: int, group: int) -> None:
    """After a run of a session, in its view: the given files it removed or changed are the
    course's again (copied from GIVEN), in their folders. A no-op where nothing was copied."""
    if not os.path.isdir(GIVEN):
        return
    device = os.stat(workdir).st_dev
    for base, _dirs, names in os.walk(GIVEN):
        rel = os.path.relpath(base, GIVEN)
        here = os.path.normpath(os.path.join(workdir, rel))
        for name in names:
            target = os.path.join(here, name)
            try:
                if os.path.lexists(target) and os.stat(target, follow_symlinks=False).st_dev != device:
                    continue  # a read-only bind (never copied)
                _folder(workdir, rel, owner, group)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target, ignore_errors=True)
                elif os.path.lexists(target):
                    os.unlink(target)
                _copy_in(os.path.join(base, name), target, owner, group)
            except OSError:
                pass  # the next run reads what is there; it cannot reach the course's files either way


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
    # The working directory: a tmpfs of the student's own holding its copies of the prepared files
    # (read-only binds of them under GIVEN, to put them back from), or a read-only bind of a file
    # too big to copy.
    dirs, files, copied = _given(workdir, disk_mb)
    home = _make_point(root, workdir, directory=True)
    mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=700,uid={owner},gid={group},{size}")
    for rel in dirs:
        inner = os.path.normpath(os.path.join(home, rel))
        os.mkdir(inner, 0o755)
        os.chown(inner, owner, group)
    for rel, src in files.items():
        inner = os.path.normpath(os.path.join(home, rel))
        if rel in copied:
            bind(src, _make_point(root, os.path.join(GIVEN, rel), directory=False))
            _copy_in(src, inner, owner, group)
            continue
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
