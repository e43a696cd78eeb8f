"""Files the grader writes and reads back: written whole or not at all, and hashed by content."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file beside it, so a reader (or a run killed
    halfway) never sees half a file. Safe from several threads and processes at once."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
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
