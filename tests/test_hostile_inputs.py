"""Names, cells and messages made to break the grader itself, through the real CLI.

A batch holds submissions whose file names are 250-odd bytes long, hold a byte that is not UTF-8,
newlines and terminal escapes, and whose cells hold lone surrogates and NUL characters. Every one
gets a scorecard, the batch's gradebook is written, and nothing a student chose is printed raw.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from conftest import NUMPY_CORRECT, ROOT
from test_batch import course_dir  # noqa: F401 - the batch tests' course folder fixture

from grader.testing import fill

SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"
ESC = "\x1b"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, cwd=cwd, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def hostile_class(root: Path) -> dict[bytes, str]:
    """Submissions with names and cells that broke the grader; name (bytes) -> what it is."""
    root.mkdir(parents=True)
    names = {
        b"L" * 249 + b".ipynb": "255-byte name",
        b"caf\xff.ipynb": "not UTF-8",
        b"forged\n11 of 11 graded\x1b[2J.ipynb": "newline and terminal escape",
    }
    for i, name in enumerate(names):
        nb = fill(SKELETON, NUMPY_CORRECT, append=[f"# {i}"])
        with open(os.path.join(os.fsencode(root), name), "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
    nb = fill(SKELETON, NUMPY_CORRECT, append=["s = '\\ud800'  # a lone surrogate", "t = 'a\\x00b'",
                                               "u = '\ud800'"])
    text = json.dumps(nb, ensure_ascii=True)  # a lone surrogate escaped as JSON allows
    (root / "surrogate.ipynb").write_text(text, encoding="ascii")
    names[b"surrogate.ipynb"] = "lone surrogate and NUL in cells"
    return names


def test_no_name_or_cell_crashes_the_grader_or_loses_a_scorecard(tmp_path, course_dir):  # noqa: F811
    names = hostile_class(tmp_path / "class")
    out = tmp_path / "out"
    done = run_cli("grade", str(tmp_path / "class"), "-a", "attention_numpy", "-o", str(out), "-j", "2",
                   "--formats", "yaml,md,html,gradebook", cwd=course_dir)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    # nothing a student named reaches the terminal raw: no escape, no line of its own
    assert ESC.encode() not in done.stdout
    assert not any(line.startswith(b"11 of 11") for line in done.stdout.splitlines())
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        book = list(csv.DictReader(f))
    assert len(book) == len(names)
    assert all(row["status"] == "graded" and row["score"] == "11" for row in book), book
    assert not any(ESC in v for row in book for v in row.values())
    written = list(out.iterdir())
    assert len([p for p in written if p.suffix == ".yaml"]) == len(names)
    for p in written:
        assert len(os.fsencode(p.name)) <= 255
        if p.suffix in (".md", ".html"):
            text = p.read_text(encoding="utf-8")
            assert ESC not in text
