"""Installing the grader: the Makefile's first steps, the package's metadata, the light student install."""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from email.parser import Parser

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(folder, *args):
    return subprocess.run(["make", "-s", "--no-print-directory", "-C", str(folder), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    for name in ("Makefile", "pyproject.toml"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def test_make_checks_the_python_version_before_installing_anything(project, tmp_path):
    old = tmp_path / "python3.10"  # answers as a Python 3.10 would
    old.write_text("#!/bin/sh\necho '3.10 0'\n")
    old.chmod(0o755)
    for python, says in ((str(old), f"make: {old} is Python 3.10; the grader needs Python 3.11 or newer"),
                         ("no-such-python", "make: cannot run no-such-python; the grader needs Python 3.11 or newer")):
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
    (tmp_path / "whl/cpu/torch").mkdir(parents=True)
    (tmp_path / "whl/cpu/torch/index.html").write_text("<a href='torch-2.13.0+cpu-cp311-none-any.whl'>torch</a>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
        proc = make(project, "torch-index-args", f"PYTHON={sys.executable}", f"TORCH_INDEX={url}")
        assert (proc.returncode, proc.stdout) == (0, f"--extra-index-url {url}\n")
    finally:
        server.shutdown()
        server.server_close()


def test_the_wheel_builds_without_warnings_and_the_student_install_is_light(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "grader", src / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "absent from the `packages` configuration" not in proc.stdout + proc.stderr
    assert "absent from the packages configuration" not in proc.stdout + proc.stderr
    [wheel] = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert {"grader/templates/classroom50_autograder", "grader/templates/gradescope_setup.sh",
            "grader/templates/gradescope_run_autograder", "grader/templates/classroom.yml"} <= names
    requires = meta.get_all("Requires-Dist")
    base = sorted(r.split(">")[0].split("=")[0] for r in requires if "extra ==" not in r)
    assert base == ["ipykernel", "ipython", "nbclient", "nbformat", "numpy", "pyyaml"]
    assert 'torch==2.13.0; extra == "instructor"' in requires


HEAVY = ("torch", "pandas", "matplotlib", "nbconvert", "pytest", "xdist", "tqdm")
BLOCKER = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HEAVY!r}:
            raise ImportError(f"{{name}} is not part of the student install")
sys.meta_path.insert(0, Block())
"""


def test_grader_check_runs_without_the_instructors_tooling(tmp_path):
    """`grader check` and `from grader import check`, with torch, pandas, matplotlib, nbconvert and
    pytest impossible to import: what a student has after the light install."""
    shutil.copytree(ROOT / "assignments/attention_numpy", tmp_path / "attention_numpy")
    shutil.copyfile(ROOT / "examples/attention_numpy/carol_no_sqrt.ipynb", tmp_path / "attention_numpy/mine.ipynb")
    code = BLOCKER + "from grader.cli import main\nsys.exit(main(['check', 'attention_numpy/mine.ipynb', " \
                     "'--assignment', 'attention_numpy']))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("6 of 6 questions pass the public checks.")
    code = BLOCKER + "import numpy as np\nfrom grader import check\nQ = np.zeros((3, 2))\ncheck('qkv')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path / "attention_numpy")
    assert proc.returncode == 0, proc.stderr
    assert "`K` is not defined in this session yet" in proc.stdout  # Q was checked; K and V are missing
    assert "is not part of the student install" not in proc.stdout + proc.stderr
