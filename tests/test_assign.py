"""Skeletons are generated from solutions, deterministically, and the committed ones are current."""

from __future__ import annotations

import json

import nbformat
import pytest
from conftest import ROOT

from grader.authoring import assign
from grader.course import config
from grader.errors import UsageError


def test_line_and_block_markers():
    src = (
        "S = X @ X.T\n"
        "S_scaled = torch.softmax(S, dim=-1)  # SOLUTION\n"
        "total += f(a, b=2)  # SOLUTION\n"
        "print(S == 2)  # SOLUTION\n"
        "def softmax(x):\n"
        "    # BEGIN SOLUTION\n"
        "    e = np.exp(x)\n"
        "    return e / e.sum()\n"
        "    # END SOLUTION\n"
    )
    assert assign.blank_source(src) == (
        "S = X @ X.T\nS_scaled = ?\ntotal += ?\n?\ndef softmax(x):\n    ?"
    )


def test_unbalanced_block_markers_are_reported():
    with pytest.raises(UsageError, match="never closed"):
        assign.blank_source("# BEGIN SOLUTION\nx = 1\n", where="nb, cell 2")
    with pytest.raises(UsageError, match="nb, cell 2 line 1: '# END SOLUTION' without"):
        assign.blank_source("# END SOLUTION\n", where="nb, cell 2")


@pytest.fixture(scope="module")
def courses():
    course = config.load(ROOT / "config.yaml")
    return course


def test_committed_skeletons_are_up_to_date_and_assign_is_deterministic(courses):
    for a in courses.assignments.values():
        first = assign.skeleton(a.solution)
        text1 = nbformat.writes(first) + "\n"
        text2 = nbformat.writes(assign.skeleton(a.solution)) + "\n"
        assert text1 == text2, f"{a.name}: assign is not deterministic"
        assert a.skeleton.read_text(encoding="utf-8") == text1, (
            f"{a.skeleton.relative_to(ROOT)} is out of date: run `grader assign {a.name}`"
        )


def test_skeleton_has_no_outputs_or_instructor_cells(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["authors"] = ["prof"]
    code = nbformat.v4.new_code_cell("x = 1  # SOLUTION", execution_count=3,
                                     outputs=[nbformat.v4.new_output("stream", text="1")])
    secret = nbformat.v4.new_code_cell("assert x == 1", metadata={"tags": ["instructor"]})
    demo = nbformat.v4.new_code_cell("download()", metadata={"tags": ["skip-grading"], "collapsed": True})
    nb.cells = [code, secret, demo]
    path = tmp_path / "sol.ipynb"
    nbformat.write(nb, str(path))
    out = assign.skeleton(path)
    # A solution that starts with code gets the note on checking one's work as a new first cell
    note, *cells = out.cells
    assert note.cell_type == "markdown" and note.source == assign.CHECK_NOTE.format(
        install=assign.STUDENT_INSTALL, notebook="sol.ipynb")
    assert [c.source for c in cells] == ["x = ?", "download()"]
    assert cells[0].outputs == [] and cells[0].execution_count is None
    assert cells[1].metadata == {"tags": ["skip-grading"]}
    assert "authors" not in out.metadata


def test_every_skeleton_tells_students_how_to_check_their_work(courses):
    for a in courses.assignments.values():
        first = nbformat.read(str(a.skeleton), as_version=4).cells[0]
        solution_first = nbformat.read(str(a.solution), as_version=4).cells[0]
        assert first.cell_type == "markdown" and first.source.startswith(solution_first.source.rstrip())
        assert f"`{assign.STUDENT_INSTALL}`" in first.source
        assert "from grader import check; check()" in first.source
        assert f"grader check {a.skeleton.name}" in first.source
    assert f"{assign.STUDENT_INSTALL}\n" in (ROOT / "README.md").read_text()  # the same line for students there


def test_public_checks_hold_kinds_not_hidden_values():
    data = json.loads((ROOT / "assignments/attention_numpy/public_checks.json").read_text())
    weights = next(q for q in data["questions"] if q["id"] == "weights")["checks"][0]
    assert weights == {"id": "weights/0", "kind": "value", "target": "attention_weights",
                       "properties": ["shape", "rows_sum_to_one"], "type": "array", "shape": [3, 3],
                       "dtype_kind": "float"}
