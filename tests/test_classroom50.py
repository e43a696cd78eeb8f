"""`grader classroom50-autograder`: the folder it writes, and its autograder.py run the way
Classroom 50's runner runs it (in the student's checkout, with the runner's variables)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest
from conftest import ROOT
from test_consumers import CLASSROOM50, RUNNER_ENV, valid_classroom50

EXAMPLES = ROOT / "examples/attention_numpy"


def grader_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("classroom50")
    proc = grader_cli(
        "classroom50-autograder",
        "attention_numpy",
        "--config",
        str(ROOT / "config.yaml"),
        "--out",
        str(base / "nlp-2026"),
        cwd=base,
    )
    assert proc.returncode == 0, proc.stderr
    return base / "nlp-2026/autograders/attention-numpy"


def git(checkout, *args):
    subprocess.run(
        ["git", "-C", str(checkout), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "Carol",
            "GIT_AUTHOR_EMAIL": "carol@example.org",
            "GIT_COMMITTER_NAME": "Carol",
            "GIT_COMMITTER_EMAIL": "carol@example.org",
            "GIT_COMMITTER_DATE": "2026-11-20T09:30:00+01:00",
        },
    )


def run_autograder(folder, tmp_path, files: dict[str, bytes], python: str | None = sys.executable):
    """A student's checkout with these files committed, graded by autograder.py as the runner would."""
    checkout = tmp_path / "nlp-2026-attention-numpy-carol"
    shutil.rmtree(checkout, ignore_errors=True)
    checkout.mkdir()
    for name, content in files.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_bytes(content)
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "submit")
    env = {
        **os.environ,
        **RUNNER_ENV,
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
        "CLASSROOM50_BUNDLE_DIR": str(folder),
    }
    env.pop("GRADER_PYTHON", None)
    if python is not None:
        env["GRADER_PYTHON"] = python
    proc = subprocess.run(
        [sys.executable, str(folder / "autograder.py")], cwd=checkout, env=env, capture_output=True, text=True
    )
    result = json.loads((checkout / "result.json").read_text())
    return proc, result, (checkout / "release-body.md").read_text()


def test_the_folder_holds_the_script_the_course_and_the_reference_values(folder):
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {
        "autograder.py",
        "constraints.txt",
        "course/config.yaml",
        "course/grading/attention_numpy/attention_numpy.references.json",
        "grader-src/pyproject.toml",
        "grader-src/grader/outputs/classroom50.py",
    } <= names
    assert not any(n.startswith("course/solutions/") for n in names)  # graded from the bundle, no solution
    script = (folder / "autograder.py").read_text()
    assert os.access(folder / "autograder.py", os.X_OK) and "@ASSIGNMENT@" not in script and "@VERSION@" not in script
    assert 'ASSIGNMENT = "attention_numpy"' in script
    import numpy

    assert f"numpy=={numpy.__version__}" in (folder / "constraints.txt").read_text().splitlines()


def test_autograder_grades_the_checkout_into_result_json_and_the_release_body(folder, tmp_path):
    # No GRADER_PYTHON: the Python running autograder.py has this grader, so nothing is installed
    proc, result, body = run_autograder(
        folder,
        tmp_path,
        {"attention_numpy.ipynb": (EXAMPLES / "carol_no_sqrt.ipynb").read_bytes(), "README.md": b"mine"},
        python=None,
    )
    assert proc.returncode == 0, proc.stderr
    assert "installing" not in proc.stdout and not (tmp_path / "runner-temp").exists()
    valid_classroom50(result)
    assert (result["score"], result["max-score"]) == (5, 11)
    assert result["datetime"] == "2026-11-20T08:30:00Z"  # the commit's time, in UTC
    assert (result["classroom"], result["assignment"], result["owner"]) == ("nlp-2026", "attention-numpy", "carol")
    assert "- Likely mistake: The scores are not divided by sqrt(d_k)." in body
    assert "graded attention_numpy.ipynb: graded, 5/11 (recorded as 5/11)" in proc.stdout


def test_autograder_writes_both_files_for_broken_submissions(folder, tmp_path):
    proc, result, body = run_autograder(folder, tmp_path, {"notes.txt": b"hello"})
    assert proc.returncode == 0
    valid_classroom50(result)
    assert (result["score"], result["max-score"], len(result["tests"])) == (0, 11, 6)
    assert "The submission has no notebook (.ipynb file) (it holds: notes.txt); commit attention_numpy.ipynb." in body
    proc, result, body = run_autograder(folder, tmp_path, {"attention_numpy.ipynb": b"not json"})
    assert proc.returncode == 0
    valid_classroom50(result)
    assert result["score"] == 0 and "not a readable notebook" in body
    # A result.json the student committed is never taken for the grader's
    forged = {**result, "score": 11}
    proc, result, body = run_autograder(
        folder,
        tmp_path,
        {
            "attention_numpy.ipynb": (EXAMPLES / "grace_half_done.ipynb").read_bytes(),
            "result.json": json.dumps(forged).encode(),
        },
    )
    assert proc.returncode == 0 and result["score"] == 4


def test_autograder_that_cannot_start_still_leaves_a_valid_result(folder, tmp_path):
    proc, result, body = run_autograder(
        folder,
        tmp_path,
        {"attention_numpy.ipynb": (EXAMPLES / "bob_correct.ipynb").read_bytes()},
        python="/nonexistent/python",
    )
    assert proc.returncode == 1
    CLASSROOM50.validate(result)
    assert (result["score"], result["max-score"], result["tests"]) == (0, 0, [])
    assert body.startswith(
        "### Autograder: not graded\n\nThe autograder could not start: the grader could not be installed."
    )


def test_bad_slug_is_a_usage_error(tmp_path):
    proc = grader_cli(
        "classroom50-autograder",
        "attention_numpy",
        "--slug",
        "Attention_NumPy",
        "--config",
        str(ROOT / "config.yaml"),
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("grader: 'Attention_NumPy' is not a Classroom 50 assignment")
    assert not (tmp_path / "autograders").exists()


def test_schema_rejects_what_classroom50_would_reject():
    """The validator in these tests is not vacuous: fractional points and a missing tag fail it."""
    ok = {
        "schema": "classroom50/result/v1",
        "classroom": "c",
        "assignment": "a",
        "assignment_type": "individual",
        "owner": "o",
        "submission": "submit/x",
        "commit": "c",
        "release": "r",
        "review": "r",
        "datetime": "2026-11-23T10:00:00Z",
        "score": 1,
        "max-score": 2,
        "tests": [],
    }
    CLASSROOM50.validate(ok)
    for bad in (
        {**ok, "score": 1.5},
        {**ok, "submission": "v1"},
        {**ok, "extra": 1},
        {**ok, "tests": [{"test-name": "q", "passed": True, "score": 0.5, "max-score": 1}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            CLASSROOM50.validate(bad)
