"""A bound on what a run keeps on disk where it has no size-limited file system of its own.

With a mount namespace the working directory, /tmp and /dev/shm are tmpfs of ``disk_mb`` each
(``root``). Without one (an ordinary user without user namespaces, a container without
``CAP_SYS_ADMIN``) the working directory is a plain folder of the host's temporary directory, and
Landlock keeps every write of the run inside it (``landlock.restrict``: nothing else is
writable). There the keeper, outside the run and under the grader's uid, watches that folder:
every ``interval`` seconds it adds up the blocks of what the folder holds, and once that passes
``disk_mb`` (or the files pass ``TMPFS_INODES``, as on a tmpfs) it *fills the disk* for the run:
it stops the run's processes, lowers their ``RLIMIT_FSIZE`` to 0 (soft and hard, which they cannot
raise again) and lets them go on. From then on every write to a file fails with ``EFBIG`` ("File
too large"), which the student's code sees as an ``OSError`` where it wrote, as it would see
``ENOSPC`` on a full tmpfs; the run is not ended. The keeper notes the most the folder held beside
it (``<workdir>.disk``), for the grader's line on the scorecard (``disk_report``). Only a run that
goes on growing the folder anyway (through a file mapped in memory before the limit, say) to twice
the limit is ended. ``RLIMIT_FSIZE`` (at most ``disk_mb``) bounds each single write from the start;
the watch bounds their sum, up to what the run can write within one interval (measured:
``benchmarks/bench_limits.py``, docs/security.md).

Where the run's writes are not confined to one folder (no Landlock and no mount namespace),
nothing but the file size limit bounds them, and the scorecard says so.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time

from grader.run.sandbox.probe import Features

MARKS = ("disk_end", "processes")  # why the keeper ended a run: ``<workdir>.disk_end``, beside the working directory
# (out of the run's reach, Landlock), or ``<workdir>.processes`` (as uid 0, past its process limit: ``tree``); a run
# whose disk it filled has ``<workdir>.disk`` (``note``)
MAX_FILES = 16384  # as many inodes as a run's tmpfs has (``root.TMPFS_INODES``)


def watched(plan: Features) -> bool:
    """Whether a run under ``plan`` has its disk bounded by the keeper's watch (no tmpfs of its own,
    but Landlock keeps its writes in its working directory)."""
    return plan.disk_watched


def usage(path: str, stop_at: int, max_files: int = MAX_FILES) -> tuple[int, int]:
    """The bytes (allocated blocks) and entries under ``path``; counting stops once either passes
    its bound, so a folder of a million files costs no more than one just over the bound. What
    cannot be looked at (a folder closed to its owner that stays closed, paths nested past what
    the kernel resolves) counts as over the bound: nothing may be hidden from the count."""
    total, files, todo = 0, 0, [path]
    while todo and total <= stop_at and files <= max_files:
        folder = todo.pop()
        try:
            entries = os.scandir(folder)
        except PermissionError:  # closed by the run to its owner (the keeper may share its uid): open it again
            try:
                os.chmod(folder, 0o700)
                entries = os.scandir(folder)
            except OSError:  # nothing it holds may hide there: count it as over
                return stop_at + 1, files
        except (FileNotFoundError, NotADirectoryError):  # removed or replaced since it was listed
            continue
        except OSError:  # a path too long to open, say: what is down there cannot be counted, so it is over
            return stop_at + 1, files
        with entries:
            for entry in entries:
                files += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError:  # a path too long to look at, say: what it holds cannot be counted
                    return stop_at + 1, files
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
    return total, files


class Watch:
    """The keeper's watch on a run's working directory (``disk_mb`` for all it holds)."""

    def __init__(self, workdir: str, disk_mb: int, max_files: int = MAX_FILES):
        self.workdir, self.limit, self.max_files = workdir, int(disk_mb) * 1024 * 1024, max_files
        self.interval = 0.02
        self.full = False  # the run's writes are refused (``fill``)
        self.most = 0  # the most the folder held at a look, once full
        clear(workdir)

    def look(self) -> str:
        """ "fill" once the folder holds more than the limit (its files, more than ``max_files``),
        "end" once a run whose disk is full holds twice that anyway, else "". The next look comes
        sooner or later as a look costs (at most a fifth of the keeper's time)."""
        started = time.monotonic()
        bound = 2 * self.limit if self.full else self.limit
        size, files = usage(self.workdir, bound, 2 * self.max_files)
        self.interval = min(0.25, max(0.02, 5 * (time.monotonic() - started)))
        if self.full:
            if size > self.most:
                self.most = size
                note(self.workdir, size)
            return "end" if size > bound or files > 2 * self.max_files else ""
        if size > self.limit or files > self.max_files:
            self.full, self.most = True, size
            note(self.workdir, size)
            return "fill"
        return ""


def fill(pids: set[int], uid: int | None) -> None:
    """Refuse every later write to a file of these (stopped) processes: ``RLIMIT_FSIZE`` 0, soft and
    hard. As root for a run of a uid of its own, from a child that takes the run's uid (lowering
    another uid's limit needs ``CAP_SYS_RESOURCE``, which Docker's default capabilities lack)."""
    if uid is None:
        _clamp(pids)
        return
    child = os.fork()
    if child == 0:  # pragma: no cover - the helper child
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            _clamp(pids)
            code = 0
        finally:
            os._exit(code)
    os.waitpid(child, 0)


def _clamp(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (0, 0))


def note(workdir: str, size: int) -> None:
    """The keeper's note that the run filled its disk, and the most its folder held (bytes)."""
    path = f"{workdir.rstrip('/')}.disk"
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, str(int(size)).encode())
        finally:
            os.close(fd)


def filled(workdir: str) -> int | None:
    """The most the run's folder held, in bytes, if the keeper filled its disk (the note is removed;
    the grader asks once the run has ended); else None."""
    path = f"{workdir.rstrip('/')}.disk"
    try:
        with open(path, "rb") as f:
            text = f.read(32)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.unlink(path)
    try:
        return int(text)
    except ValueError:
        return 0


def mark(workdir: str, why: str) -> None:
    """The keeper's note that it ended the run in ``workdir`` for ``why`` (one of ``MARKS``)."""
    with contextlib.suppress(OSError):
        os.close(os.open(f"{workdir.rstrip('/')}.{why}", os.O_WRONLY | os.O_CREAT, 0o600))


def clear(workdir: str) -> None:
    for why in (*MARKS, "disk"):
        with contextlib.suppress(OSError):
            os.unlink(f"{workdir.rstrip('/')}.{why}")


def overran(workdir: str) -> str:
    """Which of its limits (``MARKS``) the keeper ended the run in ``workdir`` for, if any; else
    "" (the grader asks once the run has ended; the mark is removed)."""
    for why in MARKS:
        try:
            os.unlink(f"{workdir.rstrip('/')}.{why}")
            return why
        except OSError:
            pass
    return ""
