"""Questions graded by a person: pending in every output, then graded through the review app's
store, its HTTP interface, its CSV import and export, and (tests/test_review_browser.py) a browser.

One class of three submissions is graded once for the module (``graded``); tests that change
grades work on a copy of its output folder.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import review_course
import yaml

HERE = Path(__file__).resolve().parent


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course with two questions graded by a person; ada answered both, bob one (tags dropped,
    a cell added, hostile HTML), cy none; graded once."""
    root = review_course.build(tmp_path_factory.mktemp("review"))
    assert grader("assign", cwd=root).returncode == 0
    skeleton = root / "assignments" / "rv" / "rv.ipynb"
    subs = root / "subs"
    subs.mkdir()
    review_course.student(skeleton, subs / "ada.ipynb", explain="Symmetric values around 2.",
                          weights="A weighted mean.")
    review_course.student(skeleton, subs / "bob.ipynb", mean="2.0", explain="Because 10/5 = 2.", drop_tags=True,
                          extra_cell="And a second thought.", hostile=True)
    review_course.student(skeleton, subs / "cy.ipynb", mean="x.sum()")
    proc = grader("grade", "subs", "--out", "out", "--formats", "yaml,json,md,html,gradescope,gradebook,report",
                  cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def card(out: Path, name: str) -> dict:
    return yaml.safe_load((out / f"{name}.yaml").read_text())


def question(data: dict, qid: str) -> dict:
    return next(q for q in data["questions"] if q["id"] == qid)


def test_the_skeleton_keeps_the_answer_tag(graded):
    nb = json.loads((graded / "assignments/rv/rv.ipynb").read_text())
    prompts = [c for c in nb["cells"] if "answer" in c.get("metadata", {}).get("tags", [])]
    assert ["".join(c["source"]) for c in prompts] == ["YOUR ANSWER HERE"] * 2
    public = json.loads((graded / "assignments/rv/public_checks.json").read_text())
    assert [q.get("manual", False) for q in public["questions"]] == [False, True, True]


def test_self_check_says_an_untouched_answer_is_not_answered(graded, tmp_path):
    shutil.copy(graded / "subs/cy.ipynb", graded / "assignments/rv/cy.ipynb")
    proc = grader("check", "assignments/rv/cy.ipynb", cwd=graded)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1  # not answered yet
    assert any(line.startswith("⬜ explain") and line.endswith("not answered") for line in lines), proc.stdout
    assert "passes the public checks" not in next(line for line in lines if "weights" in line)
    assert "1 of 1 question passes the public checks. 0 of 2 graded by a person are answered." in proc.stdout
    shutil.copy(graded / "subs/ada.ipynb", graded / "assignments/rv/ada.ipynb")
    proc = grader("check", "assignments/rv/ada.ipynb", cwd=graded)
    assert proc.returncode == 0, proc.stdout
    assert "⏳ explain  Why the mean is 2: answered; a person grades it" in proc.stdout


def test_pending_in_every_output(graded):
    out = graded / "out"
    bob = card(out, "bob")
    explain = question(bob, "explain")
    assert explain["status"] == "manual" and explain["score"] == 0
    # The answer, found although bob's editor dropped the tag, with the cells bob added after it.
    assert explain["answer"]["found_by"] == "skeleton"
    assert explain["answer"]["text"].startswith("Because 10/5 = 2.\n\nAnd a second thought.")
    assert len(explain["answer"]["cells"]) == 4
    assert question(card(out, "ada"), "explain")["answer"]["found_by"] == "tag"
    untouched = question(card(out, "cy"), "weights")
    assert untouched["answer"]["text"] == "YOUR ANSWER HERE" and "not answered yet" in untouched["feedback"][0]
    # Markdown and HTML: waiting, placed after the answer (not "not found in the notebook").
    assert "| explain: Why the mean is 2 | ⏳ waiting for a person to grade it | 0/3 |" in (out / "bob.md").read_text()
    page = (out / "bob.html").read_text()
    assert "answers were not found" not in page
    assert page.index('id="question-explain"') > page.index("And a second thought.")
    assert 'class="grader-box grader-manual"' in page
    # Gradescope: a neutral test, no score, no failed status.
    tests = json.loads((out / "bob.gradescope.json").read_text())["tests"]
    pending = next(t for t in tests if t["name"].startswith("explain"))
    assert "status" not in pending and "score" not in pending and "waiting for a person" in pending["output"]
    # The gradebook marks it; the report leaves it out of pass rates and full marks.
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}
    assert rows["bob"]["explain"] == "pending" and rows["bob"]["mean"] == "2"
    report = (out / "report.html").read_text()
    assert "full marks: 2 ·" in report and "by a person: 0 of 3 graded" in report
