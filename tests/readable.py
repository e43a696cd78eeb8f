"""This checkout and its packages where another uid can read them, for the tests that run Python
as one (tests/test_settings.py, tests/test_limits.py).

A checkout is often where no other user may look: under /root, or under a /tmp of mode 0700 as on
the development machine. Then a copy is made in a folder every user may search: hard links where
the file system allows them (a fraction of a second, nothing written twice), plain copies where it
does not. The packages are this checkout's virtual environment's, less torch and CUDA's libraries
(no test that runs as another uid imports them) and less the editable install's path hooks, which
point back into the checkout.

The compiled bytecode (``__pycache__``) comes along: the other uid cannot write it, so without it
every Python that uid starts compiles IPython, NumPy's Python half and the grader again (about 4 s
of CPU for tests/test_settings.py, measured)."""

from __future__ import annotations

import os
import shutil
import stat
import sysconfig
from collections.abc import Iterable
from pathlib import Path

from conftest import ROOT

from grader.run.sandbox.probe import usable_by_another_user

NOT_COPIED = (
    ".git",
    ".venv",
    "*.egg-info",
    "build",
    "dist",
    "demo-out",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
)
HEAVY = {"torch", "torchgen", "functorch", "triton", "nvidia"}  # never imported by these tests, and gigabytes


def packages() -> Path:
    """Where this checkout's Python keeps its packages."""
    return Path(sysconfig.get_paths()["purelib"])


def _link(src: str, dst: str) -> None:
    """A hard link to ``src`` at ``dst`` when ``src`` is readable by everyone, else a copy readable by everyone."""
    if os.stat(src).st_mode & stat.S_IROTH:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IROTH | (stat.S_IXOTH if os.stat(dst).st_mode & stat.S_IXUSR else 0))


def _open_folders(top: Path) -> None:
    for folder, _, _ in os.walk(top):
        os.chmod(folder, 0o755)


def _copy(src: Path, dst: Path, ignore: object) -> Path:
    if dst.exists():  # made before, for this folder
        return dst
    shutil.copytree(src, dst, ignore=ignore, copy_function=_link, symlinks=True)  # type: ignore[arg-type]
    _open_folders(dst)
    return dst


def _site_ignore(top: Path) -> object:
    def ignore(folder: str, names: Iterable[str]) -> set[str]:
        out: set[str] = set()
        if Path(folder) == top:
            out |= {
                n
                for n in names
                if n.split(".")[0].split("-")[0] in HEAVY
                or n.startswith(("__editable__", "nvidia"))
                or n.endswith(".pth")
            }
        return out

    return ignore


def checkout(place: Path) -> Path:
    """This checkout, or a copy of its files in ``place`` if another user cannot read it where it is."""
    if usable_by_another_user([str(ROOT)], None):
        return ROOT
    return _copy(ROOT, place / "checkout", shutil.ignore_patterns(*NOT_COPIED))


def site_packages(place: Path) -> Path:
    """This checkout's packages, or a copy of them in ``place`` if another user cannot read them."""
    own = packages()
    if usable_by_another_user([str(own)], None):
        return own
    return _copy(own, place / "packages", _site_ignore(own))
