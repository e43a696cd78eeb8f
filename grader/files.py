"""Files the grader writes and reads back: written whole or not at all, and hashed by content."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

# What the grader writes (scorecards, reference values, the results store) is its own and its
# group's: never readable or writable by another user, such as the uid a student process runs as.
FILE_MODE, DIR_MODE = 0o640, 0o750


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file beside it, so a reader (or a run killed
    halfway) never sees half a file. Safe from several threads and processes at once. The file
    (and any folder made for it) is closed to other users."""
    path = Path(path)
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(text)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def sha256_file(path: Path) -> str:
    """The file's sha256, read in blocks (a submission may be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
