"""Installing the grader: the Makefile's first steps, the package's metadata, the light student install."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT, torch_cpu_index

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(folder, *args):
    return subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(folder), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def project(tmp_path):
    for name in ("Makefile", "pyproject.toml"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def test_make_checks_the_python_version_before_installing_anything(project, tmp_path):
    old = tmp_path / "python3.10"  # answers as a Python 3.10 would
    old.write_text("#!/bin/sh\necho '3.10 0'\n")
    old.chmod(0o755)
    for python, says in (
        (str(old), f"make: {old} is Python 3.10; the grader needs Python 3.11 or newer"),
        ("no-such-python", "make: cannot run no-such-python; the grader needs Python 3.11 or newer"),
    ):
        proc = make(project, "demo", f"PYTHON={python}")
        assert proc.returncode != 0
        assert proc.stderr.splitlines()[0] == f"{says} (make PYTHON=python3.11 ...)."
        assert not (project / ".venv").exists()  # nothing was installed
    assert make(project, "python-version", f"PYTHON={sys.executable}").returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torch_comes_from_the_cpu_index_only_when_it_answers(project, tmp_path):
    # No server on this port: the index is left out, and pip never waits on its retries
    closed = f"http://127.0.0.1:{free_port()}/whl/cpu"
    proc = make(project, "torch-index-args", f"PYTHON={sys.executable}", f"TORCH_INDEX={closed}")
    assert (proc.returncode, proc.stdout) == (0, "")
    # A (local) index that answers: pip is pointed at it, beside PyPI
    with torch_cpu_index(tmp_path) as url:
        proc = make(project, "torch-index-args", f"PYTHON={sys.executable}", f"TORCH_INDEX={url}")
        assert (proc.returncode, proc.stdout) == (0, f"--extra-index-url {url}\n")


def test_the_wheel_builds_without_warnings_and_the_student_install_is_light(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "grader", src / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-v",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "absent from the `packages` configuration" not in proc.stdout + proc.stderr
    assert "absent from the packages configuration" not in proc.stdout + proc.stderr
    [wheel] = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert {
        "grader/templates/classroom50_autograder",
        "grader/templates/gradescope_setup.sh",
        "grader/templates/gradescope_run_autograder",
        "grader/templates/classroom.yml",
        "grader/static/katex/katex.min.js",
        "grader/static/katex/LICENSE",
        "grader/static/katex/fonts/KaTeX_Main-Regular.woff2",
    } <= names
    requires = meta.get_all("Requires-Dist")
    base = sorted(r.split(">")[0].split("=")[0] for r in requires if "extra ==" not in r)
    assert base == ["ipykernel", "ipython", "nbclient", "nbformat", "numpy", "pyyaml"]
    assert 'torch==2.13.0; extra == "instructor"' in requires


HEAVY = ("torch", "pandas", "matplotlib", "nbconvert", "pytest", "xdist", "tqdm", "bleach", "scipy")


def light_closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions a student's ``pip install`` of the wheel pulls in: its required
    (non-extra) dependencies and theirs, markers evaluated here, found in this environment."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        if name in found:
            continue
        found[name] = dist = metadata.distribution(req.name)
        todo += [Requirement(r) for r in dist.requires or []]
    return found


def _link(source, target):
    """A hard link where it can be made (the same files, at no cost), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def light_dependencies(closure: dict[str, metadata.Distribution]) -> Path:
    """A folder holding exactly the distributions of ``closure``, made once per set of versions and
    kept between runs (as pip's cache keeps wheels): hard links to this environment's files. Its
    name ends in site-packages, which the sandbox's filesystem view shows (grader.run.sandbox.root)."""
    key = hashlib.sha256(repr(sorted((n, d.version) for n, d in closure.items())).encode()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"grader-student-deps-{key}"
    done = home / "site-packages"
    if done.is_dir():
        return done
    home.mkdir(mode=0o755, exist_ok=True)
    home.chmod(0o755)  # the sandbox's uid reads it where the suite runs as root
    building = Path(tempfile.mkdtemp(dir=home, prefix="building-"))
    building.chmod(0o755)
    for dist in closure.values():
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            source, target = Path(dist.locate_file(top)), building / top
            if target.exists():
                continue
            if source.is_dir():
                shutil.copytree(source, target, copy_function=_link, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                _link(source, target)
    try:
        building.rename(done)
    except OSError:  # another run made it first
        shutil.rmtree(building, ignore_errors=True)
    return done


@pytest.fixture(scope="session")
def student_venv():
    """A fresh virtual environment in which pip finds installed what the light install needs, as pip
    would resolve it (the wheel's own dependency list, followed) and nothing else: torch, pandas,
    matplotlib, nbconvert and pytest are installed here but not there. Those distributions come from
    ``light_dependencies`` (on the new environment's path), so no network is needed."""
    import venv

    from grader.authoring import wheel

    # Outside pytest's private temporary folder: where the suite runs as root, the sandbox runs the
    # notebook as an unprivileged uid, which must be able to start this environment's Python.
    with tempfile.TemporaryDirectory(prefix="grader-student-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        built = wheel.build(base / "dist")
        closure = light_closure(metadata.distribution(wheel.DISTRIBUTION).requires or [])
        env = base / "venv"
        venv.EnvBuilder(with_pip=False).create(env)
        [site] = (env / "lib").glob("python3*/site-packages")
        (site / "light-dependencies.pth").write_text(f"{light_dependencies(closure)}\n")
        yield env, built, closure


def test_a_student_installs_the_wheel_in_a_fresh_environment_and_checks_their_work(student_venv, tmp_path):
    """The skeleton's install line, run in a new virtual environment: pip installs the checker from
    the wheel beside the skeleton (no index: every dependency it declares must already be met by
    the light set), then `grader check` and `from grader import check; check()` run there."""
    env, built, closure = student_venv
    assert not set(HEAVY) & set(closure), "the light install pulls in the instructor's tooling"
    folder = tmp_path / "attention_numpy"
    shutil.copytree(ROOT / "assignments/attention_numpy", folder, ignore=shutil.ignore_patterns("*.whl"))
    shutil.copyfile(built, folder / built.name)
    first = json.loads((folder / "attention_numpy.ipynb").read_text())["cells"][0]["source"]
    [line] = re.findall(r"`(pip install [^`]+)`", "".join(first))
    assert line == f"pip install {built.name}"
    pip = [sys.executable, "-m", "pip", "--python", str(env / "bin/python"), "--disable-pip-version-check"]
    proc = subprocess.run(
        [*pip, *shlex.split(line)[1:], "--no-index", "--no-cache-dir", "--quiet"],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.copyfile(ROOT / "examples/attention_numpy/carol_no_sqrt.ipynb", folder / "mine.ipynb")
    proc = subprocess.run(
        [str(env / "bin/grader"), "check", "mine.ipynb", "--assignment", "attention_numpy"],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("6 of 6 questions pass the public checks.")
    code = (
        "import importlib.util, grader\n"
        f"assert not any(importlib.util.find_spec(m) for m in {HEAVY!r})\n"
        "print(grader.__file__)\n"
        "import numpy as np\nfrom grader import check\nQ = np.zeros((3, 2))\ncheck()\n"
    )
    proc = subprocess.run(
        [str(env / "bin/python"), "-c", code], capture_output=True, text=True, timeout=300, cwd=folder
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(env))  # the installed checker, not this checkout
    assert "`K` is not defined in this session yet" in proc.stdout  # Q was checked; K and V are missing


def test_reading_a_notebook_does_not_build_the_iri_grammar_and_an_iri_is_still_checked():
    # jsonschema (under nbformat) imports rfc3987_syntax, whose import builds an Earley grammar:
    # 1.5 to 2 s of CPU in every `grader` command. It is put off until an IRI is checked.
    pytest.importorskip("rfc3987_syntax")
    code = (
        "import sys, grader, nbformat\n"
        "nbformat.validate(nbformat.v4.new_notebook())\n"
        "print('lark' in sys.modules)\n"
        "from jsonschema import Draft7Validator, FormatChecker\n"
        "v = Draft7Validator({'format': 'iri'}, format_checker=FormatChecker())\n"
        "print(v.is_valid('https://example.org/a%20b'), v.is_valid('no scheme ::: <>'), 'lark' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "False", "True"]
