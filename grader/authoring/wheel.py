"""The checker's wheel that ``grader assign`` places beside each skeleton (``student_install: wheel``).

Students install the checker from the file next to their notebook, so the install works before
the package is on PyPI, offline from PyPI's point of view for the grader itself (its light
dependencies still come from the student's index), and at exactly the version of the grader
the instructor grades with.

The wheel is written from the grader that runs ``grader assign``: this package's files and its
installed distribution's metadata (name, version, dependencies, the ``grader`` command and the
pytest plugin entry point), in the wheel format pip installs (PEP 427: ``*.dist-info/WHEEL``,
``METADATA``, ``entry_points.txt``, ``RECORD`` with each file's hash). No build backend is run,
nothing is written to the source tree, and the file is byte-identical for the same grader: its
entries are sorted and dated 1980-01-01, so running ``grader assign`` twice changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

from grader import PACKAGE_DIR
from grader.errors import UsageError

DISTRIBUTION = "notebook-grader"
PATTERN = "notebook_grader-*-py3-none-any.whl"  # this wheel, at any version
SKIPPED = {"__pycache__", ".ipynb_checkpoints"}
_EPOCH = (1980, 1, 1, 0, 0, 0)
WHEEL_META = "Wheel-Version: 1.0\nGenerator: grader assign\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _distribution() -> metadata.Distribution:
    try:
        return metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise UsageError(
            f"student_install is 'wheel', which is built from the installed grader, but {DISTRIBUTION} "
            "is not installed here (pip install -e . in its source folder), or set student_install to "
            "a requirement or URL in config.yaml."
        ) from None


def filename() -> str:
    """The wheel's file name, e.g. ``notebook_grader-0.1.0-py3-none-any.whl``."""
    dist = _distribution()
    return f"{_escape(dist.metadata['Name'])}-{_escape(dist.version)}-py3-none-any.whl"


def _escape(part: str) -> str:
    return re.sub(r"[^\w\d.]+", "_", part).replace("-", "_")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def contents() -> dict[str, bytes]:
    """Every file of the wheel but RECORD, by its name in the archive."""
    dist = _distribution()
    package = Path(PACKAGE_DIR)
    files: dict[str, bytes] = {}
    for f in sorted(package.rglob("*")):
        rel = f.relative_to(package)
        if f.is_file() and not SKIPPED & set(rel.parts) and f.suffix not in (".pyc", ".pyo"):
            files[f"grader/{rel.as_posix()}"] = f.read_bytes()
    info = f"{_escape(dist.metadata['Name'])}-{_escape(dist.version)}.dist-info"
    meta = dist.read_text("METADATA") or dist.read_text("PKG-INFO")  # a dist-info's, or a source tree's egg-info
    if not meta:
        raise UsageError(f"The installed {DISTRIBUTION} has no METADATA; reinstall it (pip install -e .).")
    files[f"{info}/METADATA"] = meta.encode()
    files[f"{info}/WHEEL"] = WHEEL_META.encode()
    entry_points = dist.read_text("entry_points.txt")
    if entry_points:
        files[f"{info}/entry_points.txt"] = entry_points.encode()
    files[f"{info}/top_level.txt"] = b"grader\n"
    return files


def build(dest: Path) -> Path:
    """Write the wheel into the folder ``dest``; returns its path."""
    files = contents()
    info = next(name.split("/")[0] for name in files if name.endswith(".dist-info/METADATA"))
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / filename()
    tmp = target.with_name(target.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            entry = zipfile.ZipInfo(name, date_time=_EPOCH)
            entry.external_attr = 0o100644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    tmp.replace(target)
    return target
