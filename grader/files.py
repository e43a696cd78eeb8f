"""Files the grader writes and reads back: written whole or not at all, and hashed by content."""

from __future__ import annotations

import hashlib
import os
import threading
import unicodedata
import zipfile
from collections.abc import Iterable
from pathlib import Path

# What the grader writes (scorecards, reference values, the results store) is its own and its
# group's: never readable or writable by another user, such as the uid a student process runs as.
FILE_MODE, DIR_MODE = 0o640, 0o750
# The longest file stem the grader makes from a student's name: room for a suffix
# (``.gradescope.json``, ``.12345.140000000000.tmp``) within the 255 bytes most file systems allow.
MAX_STEM_BYTES = 160


def make_dir(path: Path) -> Path:
    """Make a folder and each missing folder above it, every one it makes closed to other users
    (``DIR_MODE``); folders already there are left as they are."""
    path = Path(path)
    missing = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)  # less what the umask takes away
        except FileExistsError:
            continue
    return path


def private_file(path: Path) -> Path:
    """A file the grader keeps (a database written by a library, such as SQLite): made empty with
    ``FILE_MODE`` where it is missing, and closed to other users where it is there already, with the
    companions SQLite writes beside it (``-wal``, ``-shm``, ``-journal``), which take its mode."""
    path = Path(path)
    make_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))
    except FileExistsError:
        pass
    for each in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        try:
            mode = each.stat().st_mode & 0o777
            if mode & 0o007:
                os.chmod(each, mode & ~0o007)
        except OSError:
            continue
    return path


def write_zip_atomic(path: Path, members: Iterable[tuple[str, str]]) -> Path:
    """A zip archive of ``(name, text)`` members, written whole or not at all (as ``write_atomic``)."""
    path = Path(path)
    make_dir(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        with open(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in members:
                zf.writestr(name, text.encode("utf-8", errors="backslashreplace"))
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file beside it, so a reader (or a run killed
    halfway) never sees half a file. Safe from several threads and processes at once. The file
    (and any folder made for it) is closed to other users."""
    path = Path(path)
    make_dir(path.parent)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        # A lone surrogate (from a student's cell or file name) cannot be UTF-8: written as an escape.
        with open(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def printable(text: str) -> str:
    """Text a student chose (a file name, a folder, a message), safe to print to a terminal or
    write to any file: control characters (newlines, terminal escapes), format characters (text
    direction overrides) and surrogates (a name's bytes that are not UTF-8, or a lone surrogate in
    a cell) are written as escapes (``\\n``, ``\\x1b``, ``\\xff``, ``\\ud800``), so nothing a student
    chose can start a line of its own, move the cursor or forge a row."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif (
            ch == " " or ch.isprintable() or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        ):
            out.append(ch)
        elif ch in "\n\r\t":
            out.append(repr(ch)[1:-1])
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def safe_stem(name: str) -> str:
    """A file stem for the grader's outputs made from a name a student chose: printable, no path
    separator, and at most ``MAX_STEM_BYTES`` bytes of UTF-8 (a longer one is cut and keeps a
    digest of the whole, so two long names stay distinct)."""
    stem = printable(name).replace("/", "_").replace("\\", "_") or "_"
    if stem.startswith("."):
        stem = "_" + stem[1:]
    raw = stem.encode("utf-8")
    if len(raw) <= MAX_STEM_BYTES:
        return stem
    digest = hashlib.sha256(raw).hexdigest()[:12]
    return raw[: MAX_STEM_BYTES - 13].decode("utf-8", errors="ignore") + "-" + digest


def sha256_file(path: Path) -> str:
    """The file's sha256, read in blocks (a submission may be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
