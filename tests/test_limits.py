"""The limits that must hold wherever the grader runs: whether another uid can run this Python
(the question that decides whether a root grader gives student code a uid of its own)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from grader.run.sandbox import probe

DEBIAN_PYTHON = "/usr/bin/python3.11"  # `make setup` installs it where it runs as root


@pytest.fixture(scope="module")
def venv():
    """A virtual environment as Gradescope's setup.sh or a CI step makes one: pyvenv.cfg 0644, in
    a folder every user may search."""
    if not os.path.exists(DEBIAN_PYTHON):
        pytest.skip(f"{DEBIAN_PYTHON} is missing: `make setup` installs Debian's python3.11 where it runs as root")
    base = Path(tempfile.mkdtemp(prefix="grader-venv-", dir="/var/tmp"))  # /tmp may be closed to others
    base.chmod(0o755)
    subprocess.run([DEBIAN_PYTHON, "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=60)
    yield base / "venv"
    shutil.rmtree(base, ignore_errors=True)


def usable_there(python: Path) -> bool:
    """What ``probe.usable_by_another_user`` answers in that Python, for that Python's own paths."""
    code = ("import json, sys; from grader.run.sandbox import probe, root; "
            "print(json.dumps(probe.usable_by_another_user(root.python_paths(), sys.executable)))")
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return bool(json.loads(proc.stdout))


def test_a_virtual_environment_every_user_may_read_is_usable_by_another_uid(venv):
    cfg = venv / "pyvenv.cfg"
    assert cfg.stat().st_mode & 0o777 == 0o644  # a data file: nobody executes it
    paths = [str(venv / "bin"), str(venv / "lib"), str(cfg)]
    python = str(venv / "bin" / "python")
    assert probe.usable_by_another_user(paths, python)
    assert all(probe._others_may(p, probe._need(p)) for p in paths)
    if os.geteuid() == 0:
        assert usable_there(venv / "bin" / "python")  # the probe the grader runs in that Python
    venv.parent.chmod(0o700)  # now no other user can search the folder it lives in
    try:
        assert not probe.usable_by_another_user(paths, python)
        assert not probe._others_may(paths[0], probe._need(paths[0]))
    finally:
        venv.parent.chmod(0o755)
    (venv / "lib").chmod(0o750)  # the standard library's folder closed to others
    try:
        assert not probe.usable_by_another_user(paths, python)
    finally:
        (venv / "lib").chmod(0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's own answer for another uid needs root")
def test_a_python_under_a_private_home_is_not_usable_by_another_uid(tmp_path):
    """The interpreter's real path counts: a link in a readable folder to a Python under a home
    of mode 0700 cannot be run by another uid."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    target = home / "python"
    shutil.copy("/bin/true", target)  # any executable file will do
    public = Path(tempfile.mkdtemp(prefix="grader-link-", dir="/var/tmp"))
    try:
        public.chmod(0o755)
        (public / "python").symlink_to(target)
        assert not probe.usable_by_another_user([str(public)], str(public / "python"))
        assert not probe._others_may(str(public / "python"), os.R_OK | os.X_OK)
        assert probe.usable_by_another_user([str(public)], None)
        assert not probe.usable_by_another_user([str(public)], None, search=[str(home)])
    finally:
        shutil.rmtree(public)
