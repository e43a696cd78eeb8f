"""A bound on what a run keeps on disk where it has no size-limited file system of its own.

With a mount namespace the working directory, /tmp and /dev/shm are tmpfs of ``disk_mb`` each
(``root``). Without one (an ordinary user without user namespaces, a container without
``CAP_SYS_ADMIN``) the working directory is a plain folder of the host's temporary directory, and
Landlock keeps every write of the run inside it (``landlock.restrict``: nothing else is
writable). There the keeper, outside the run and under the grader's uid, watches that folder:
every ``interval`` seconds it adds up the blocks of what the folder holds, and once that passes
``disk_mb`` (or the files pass ``TMPFS_INODES``, as on a tmpfs) it stops and kills the whole run
and leaves a mark beside the folder (``<workdir>.disk``) for the grader to give the reason.
``RLIMIT_FSIZE`` (at most ``disk_mb``) bounds each single write; the watch bounds their sum, up to
what the run can write within one interval.

Where the run's writes are not confined to one folder (no Landlock and no mount namespace),
nothing but the file size limit bounds them, and the scorecard says so.
"""

from __future__ import annotations

import contextlib
import os
import time

from grader.run.sandbox.probe import Features

MARKS = ("disk", "processes")  # why the keeper ended a run: ``<workdir>.disk``, beside the working directory (out of
# the run's reach, Landlock), or ``<workdir>.processes`` (as uid 0, past its process limit: ``tree``)
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
        clear(workdir)

    def over(self) -> bool:
        """Whether the folder holds more than the limit now; the next look comes sooner or later
        as a look costs (at most a fifth of the keeper's time)."""
        started = time.monotonic()
        size, files = usage(self.workdir, self.limit, self.max_files)
        self.interval = min(0.25, max(0.02, 5 * (time.monotonic() - started)))
        return size > self.limit or files > self.max_files


def mark(workdir: str, why: str) -> None:
    """The keeper's note that it ended the run in ``workdir`` for ``why`` (one of ``MARKS``)."""
    with contextlib.suppress(OSError):
        os.close(os.open(f"{workdir.rstrip('/')}.{why}", os.O_WRONLY | os.O_CREAT, 0o600))


def clear(workdir: str) -> None:
    for why in MARKS:
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
