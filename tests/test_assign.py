"""Skeletons are generated from solutions, deterministically, and the committed ones are current."""

from __future__ import annotations

import dataclasses
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
    assert assign.blank_source(src) == ("S = X @ X.T\nS_scaled = ?\ntotal += ?\n?\ndef softmax(x):\n    ?")


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
    code = nbformat.v4.new_code_cell(
        "x = 1  # SOLUTION", execution_count=3, outputs=[nbformat.v4.new_output("stream", text="1")]
    )
    secret = nbformat.v4.new_code_cell("assert x == 1", metadata={"tags": ["instructor"]})
    demo = nbformat.v4.new_code_cell("download()", metadata={"tags": ["skip-grading"], "collapsed": True})
    nb.cells = [code, secret, demo]
    path = tmp_path / "sol.ipynb"
    nbformat.write(nb, str(path))
    out = assign.skeleton(path)
    # A solution that starts with code gets the note on checking one's work as a new first cell
    note, *cells = out.cells
    assert note.cell_type == "markdown" and note.source == assign.CHECK_NOTE.format(
        install=assign.install_line(), notebook="sol.ipynb", where=assign.WHEEL_WHERE
    )
    assert [c.source for c in cells] == ["x = ?", "download()"]
    assert cells[0].outputs == [] and cells[0].execution_count is None
    assert cells[1].metadata == {"tags": ["skip-grading"]}
    assert "authors" not in out.metadata


def test_every_skeleton_tells_students_how_to_check_their_work(courses):
    for a in courses.assignments.values():
        first = nbformat.read(str(a.skeleton), as_version=4).cells[0]
        solution_first = nbformat.read(str(a.solution), as_version=4).cells[0]
        assert first.cell_type == "markdown" and first.source.startswith(solution_first.source.rstrip())
        assert f"`{assign.install_line(a.student_install)}`" in first.source
        assert "from grader import check; check()" in first.source
        assert f"grader check {a.skeleton.name}" in first.source


def test_the_install_line_follows_the_course(tmp_path):
    from importlib import metadata

    version = metadata.version("notebook-grader")
    assert assign.install_line("wheel") == f"pip install notebook_grader-{version}-py3-none-any.whl"
    assert assign.install_line("notebook-grader==0.2.0") == "pip install notebook-grader==0.2.0"
    # quoted where a shell would read a character: extras are a glob to zsh, '>' a redirection
    assert assign.install_line("notebook-grader[plots]>=0.2") == 'pip install "notebook-grader[plots]>=0.2"'
    url = "git+https://github.com/course-org/notebook-grader@v0.2.0"
    assert assign.install_line(url) == f"pip install {url}"
    solution = ROOT / "solutions/attention_numpy/attention_numpy.ipynb"
    first = assign.skeleton(solution, url).cells[0].source
    assert f"`pip install {url}` (it is light" in first and "this notebook's folder" not in first


def test_assign_places_the_checkers_wheel_beside_the_skeleton_and_nothing_else(tmp_path):
    import shutil
    import zipfile

    (tmp_path / "solutions").symlink_to(ROOT / "solutions")
    shutil.copyfile(ROOT / "config.yaml", tmp_path / "config.yaml")
    folder = tmp_path / "assignments/attention_numpy"
    folder.mkdir(parents=True)
    (folder / "notebook_grader-0.0.1-py3-none-any.whl").write_bytes(b"an older version")
    course = config.load(tmp_path / "config.yaml")
    a = course.assignment("attention_numpy")
    written = assign.write_assignment(a, None)
    [wheel] = folder.glob("*.whl")  # the older one is gone
    assert wheel in written and assign.install_line() == f"pip install {wheel.name}"
    first = wheel.read_bytes()
    assign.write_assignment(a, None)
    assert wheel.read_bytes() == first  # byte-identical: assign twice changes nothing
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        record = z.read(next(n for n in names if n.endswith("/RECORD"))).decode()
    assert "grader/selfcheck.py" in names and "grader/templates/gradescope_setup.sh" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert {line.split(",")[0] for line in record.splitlines()} == set(names)
    # Another install source: the note says it, and no wheel is written
    for old in folder.glob("*.whl"):
        old.unlink()
    a = dataclasses.replace(a, student_install="notebook-grader==0.2.0")
    assign.write_assignment(a, None)
    assert not list(folder.glob("*.whl"))
    assert "`pip install notebook-grader==0.2.0`" in nbformat.read(str(a.skeleton), as_version=4).cells[0].source


@pytest.mark.parametrize(
    "value",
    ["notebook-grader; rm -rf ~", "pip install x", "https://example.org/x whl", "git+https://example.org/$(id)"],
)
def test_a_student_install_no_shell_could_run_safely_is_refused(tmp_path, value):
    from grader.errors import ConfigError

    text = (
        (ROOT / "config.yaml")
        .read_text()
        .replace("  student_install: wheel\n", f"  student_install: {json.dumps(value)}\n")
    )
    (tmp_path / "config.yaml").write_text(text)
    (tmp_path / "solutions").symlink_to(ROOT / "solutions")
    with pytest.raises(ConfigError, match=r"course.student_install must be 'wheel', a package requirement"):
        config.load(tmp_path / "config.yaml")


def test_public_checks_hold_kinds_not_hidden_values():
    data = json.loads((ROOT / "assignments/attention_numpy/public_checks.json").read_text())
    weights = next(q for q in data["questions"] if q["id"] == "weights")["checks"][0]
    assert weights == {
        "id": "weights/0",
        "kind": "value",
        "target": "attention_weights",
        "properties": ["shape", "rows_sum_to_one"],
        "type": "array",
        "shape": [3, 3],
        "dtype_kind": "float",
    }
