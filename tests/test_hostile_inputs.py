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
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *args],
        capture_output=True,
        cwd=cwd,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


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
    nb = fill(SKELETON, NUMPY_CORRECT, append=["s = '\\ud800'  # a lone surrogate", "t = 'a\\x00b'", "u = '\ud800'"])
    text = json.dumps(nb, ensure_ascii=True)  # a lone surrogate escaped as JSON allows
    (root / "surrogate.ipynb").write_text(text, encoding="ascii")
    names[b"surrogate.ipynb"] = "lone surrogate and NUL in cells"
    return names


def test_no_name_or_cell_crashes_the_grader_or_loses_a_scorecard(tmp_path, course_dir):  # noqa: F811
    names = hostile_class(tmp_path / "class")
    out = tmp_path / "out"
    done = run_cli(
        "grade",
        str(tmp_path / "class"),
        "-a",
        "attention_numpy",
        "-o",
        str(out),
        "-j",
        "2",
        "--formats",
        "yaml,md,html,gradebook",
        cwd=course_dir,
    )
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


def costly_cell(k: int) -> str:
    """A cell just under the 100,000-character limit: thousands of statements, each reading the last."""
    body = "\n".join(f"c{k}_{i} = c{k}_{i - 1} + X" if i else f"c{k}_0 = X" for i in range(9000))
    return body[:99_000].rsplit("\n", 1)[0]


def test_a_notebook_too_costly_to_analyse_ends_with_its_reason_not_the_batch(tmp_path, course_dir):  # noqa: F811
    """Four cells of 99,000 characters (within every size limit) cost the grader about a second of
    CPU to analyse, against a few hundredths for an ordinary notebook. With a budget of 0.4 s of the
    grader's CPU time per submission, that notebook stops after its analysis, with the reason; the
    correct notebook beside it is graded as usual."""
    config = course_dir / "config.yaml"
    config.write_text(
        config.read_text().replace("      capture_mb: 64\n", "      capture_mb: 64\n      grader_cpu: 0.4\n")
    )
    root = tmp_path / "class"
    root.mkdir()
    nbformat.write(fill(SKELETON, NUMPY_CORRECT), str(root / "honest.ipynb"))
    nbformat.write(fill(SKELETON, NUMPY_CORRECT, append=[costly_cell(k) for k in range(4)]), str(root / "costly.ipynb"))
    out = tmp_path / "out"
    done = run_cli(
        "grade",
        str(root),
        "-a",
        "attention_numpy",
        "-o",
        str(out),
        "-j",
        "2",
        "--formats",
        "yaml,json,md,gradebook",
        cwd=course_dir,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    honest = json.loads((out / "honest.json").read_text())
    costly = json.loads((out / "costly.json").read_text())
    assert (honest["status"], honest["score"]) == ("graded", 11)
    assert (costly["status"], costly["score"]) == ("over_budget", 0)
    assert costly["reason"].startswith("the grader spent ")
    assert (
        "(reading and analysing the notebook), more than the 0.4 s it may (limits.grader_cpu); "
        "it was not graded further"
    ) in costly["reason"]
    assert costly["execution"]["grader_cpu"] > 0.4
    assert all(
        q["status"] == "error" and [f["text"] for f in q["feedback"]] == [f"Not graded: {costly['reason']}"]
        for q in costly["questions"]
    )
    assert "stopped: too costly for the grader to analyse" in (out / "costly.md").read_text()
    assert b"over_budget" in done.stdout
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        assert {row["submission"]: row["status"] for row in csv.DictReader(f)} == {
            "honest.ipynb": "graded",
            "costly.ipynb": "over_budget",
        }


def test_a_capture_too_costly_to_decode_ends_that_submission_after_its_run(grader, numpy_assignment, tmp_path):
    """25,000 small dicts as an answer: within the frame's size and item limits (275,000 of the
    300,000 objects a frame may carry), yet about 0.7 s of the grader's CPU to decode and compare,
    against a few hundredths for the honest notebook. With a budget of 0.3 s the check after the
    run's values are read stops it there."""
    import dataclasses

    a = dataclasses.replace(numpy_assignment, limits=dataclasses.replace(numpy_assignment.limits, grader_cpu=0.3))
    honest = grader.grade(a, write_notebook(fill(SKELETON, NUMPY_CORRECT), tmp_path / "honest.ipynb"))
    assert (honest.status, honest.score) == ("graded", 11)
    costly = grader.grade(
        a,
        write_notebook(
            fill(SKELETON, {**NUMPY_CORRECT, "output": '[{"a": [i, (i,)]} for i in range(25_000)]'}),
            tmp_path / "costly.ipynb",
        ),
    )
    assert (costly.status, costly.score) == ("over_budget", 0)
    assert (
        "of its own CPU time on this submission (reading the values its run sent), more than the 0.3 s" in costly.reason
    )
    assert costly.execution.to_dict()["grader_cpu"] > 0.3


def write_notebook(nb, path: Path) -> Path:
    nbformat.write(nb, str(path))
    return path
