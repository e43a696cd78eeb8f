"""nbgrader's grading rules, reproduced on an imported course (notebooks written here, in
nbgrader's documented format): read-only cells and test cells run as released whatever the
student changed there; a test cell may call what an earlier test cell defined; an answer graded
by a person left exactly as released scores 0 with no one to wait for (nbgrader's checksum rule),
nbgrader's own stub included; a solution cell without markers is not given away; hidden tests stay
hidden; AUTOTEST directives (and HASHED ones) expand from the course's templates as nbgrader
expands them, and grade."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbgrader_course import meta, notebook

GIVEN = 'SCALE = int(open("data/scale.txt").read())'  # a data file in a subfolder, as nbgrader releases it
SCALED = "def scaled(xs):\n    ### BEGIN SOLUTION\n    return [SCALE * x for x in xs]\n    ### END SOLUTION"
TEST_SCALED = (
    'def check_close(a, b):\n    assert abs(a - b) < 1e-9, "not close"\n'
    "assert scaled([1, 2]) == [10, 20]\ncheck_close(sum(scaled([0.5])), 5.0)\n"
    "### BEGIN HIDDEN TESTS\nassert scaled([7]) == [70]\n### END HIDDEN TESTS"
)
TEST_HELPER = "check_close(scaled([3])[0], 30.0)"  # check_close: defined by the test cell above
DESCRIBE = 'def describe():\n    return "multiplies by SCALE"'  # a manual code answer, no solution markers
SEMANTICS = [
    ("code", GIVEN, meta("given", locked=True)),
    ("code", "a_name_defined_nowhere", None),  # shows a NameError on purpose, as teaching notebooks do
    ("code", SCALED, meta("scaled", solution=True)),
    ("code", TEST_SCALED, meta("test_scaled", grade=True, locked=True, points=1)),
    ("code", TEST_HELPER, meta("test_helper", grade=True, locked=True, points=1)),
    ("code", DESCRIBE, meta("describe", grade=True, solution=True, points=2)),
    ("markdown", "Scaling keeps the order.", meta("why", grade=True, solution=True, points=1)),
    (
        "code",
        "def half(x):\n    ### BEGIN SOLUTION\n    return x / 2\n    ### END SOLUTION",
        meta("half", solution=True),
    ),
    ("code", "assert half(4) == 2", meta("test_half", grade=True, locked=True, points=1)),
    # The notebook writes a file the instructor also shipped (the one the students must make).
    (
        "code",
        'with open("data/made.txt", "w") as f:\n    ### BEGIN SOLUTION\n    f.write("made")\n    ### END SOLUTION',
        meta("make_file", solution=True),
    ),
    # A test that reads a data file itself: replayed in the grader, it finds it too.
    (
        "code",
        'with open("data/scale.txt") as f:\n    assert scaled([1]) == [int(f.read())]',
        meta("test_data", grade=True, locked=True, points=1),
    ),
    # A test cell's variables live on in the kernel for the next one.
    ("code", "twice = scaled([2])\nassert len(twice) == 1", meta("test_twice", grade=True, locked=True, points=1)),
    (
        "code",
        "assert twice == [2 * SCALE] and scaled([2, 2]) == twice * 2",
        meta("test_uses_twice", grade=True, locked=True, points=1),
    ),
]
# Right, but a NumPy warning on the way: nbgrader scores a test cell with stderr output 0.
WARNS = "import numpy as np\ndef half(x):\n    np.float64(1.0) / np.float64(0.0)\n    return x / 2"
AREA = "def area(w, h):\n    ### BEGIN SOLUTION\n    return float(w * h)\n    ### END SOLUTION"
AUTOTEST = [
    ("code", AREA, meta("area", solution=True)),
    (
        "code",
        "### AUTOTEST area(2, 3); area(1, 1)\n### HASHED AUTOTEST area(0.5, 3)",
        meta("test_area", grade=True, locked=True, points=1),
    ),
]
# Test cells keep their place: the first defines what a later answer uses (positions, a helper),
# the last judges ``value`` as it is at its cell, before a later experiment reassigns it.
POSITION = "def position(t):\n    ### BEGIN SOLUTION\n    return 2 * t\n    ### END SOLUTION"
TEST_POSITIONS = (
    "positions = [position(t) for t in range(3)]\ndef report(xs):\n    return sum(xs)\n"
    "assert positions == [0, 2, 4], 'position is not right'"
)
VALUE = "### BEGIN SOLUTION\nvalue = 3\n### END SOLUTION"
TEST_VALUE = "assert value == 3\n### BEGIN HIDDEN TESTS\nassert value * 2 == 6\n### END HIDDEN TESTS"
EXPERIMENT = "value = 100  # an experiment after the test reuses the name"
IN_PLACE = [
    ("code", POSITION, meta("position", solution=True)),
    ("code", TEST_POSITIONS, meta("test_positions", grade=True, locked=True, points=1)),
    ("code", "### BEGIN SOLUTION\ntotal = report(positions)\n### END SOLUTION", meta("total", solution=True)),
    ("code", "assert total == 6", meta("test_total", grade=True, locked=True, points=1)),
    ("code", VALUE, meta("value", solution=True)),
    ("code", TEST_VALUE, meta("test_value", grade=True, locked=True, points=1)),
    ("code", EXPERIMENT, None),
    # A test cell's own h, then the notebook's: the later test reads the notebook's.
    ("code", "h = [0] * 19\nassert len(h) == 19", meta("test_draw", grade=True, locked=True, points=1)),
    ("code", "### BEGIN SOLUTION\nh = [1] * 5\n### END SOLUTION", meta("impulse", solution=True)),
    ("code", "assert h is not None and len(h) == 5", meta("test_impulse", grade=True, locked=True, points=1)),
]
# Templates written here in the documented format of nbgrader's autotests.yml.
TEMPLATES = {
    "python3": {
        "setup": "from hashlib import md5",
        "hash": 'md5({{snippet}}.encode("utf-8")+b"{{salt}}").hexdigest()',
        "dispatch": "type({{snippet}})",
        "normalize": "repr({{snippet}})",
        "check": 'assert {{snippet}} == """{{value}}""", """{{message}}"""',
        "success": "print('checked')",
        "templates": {
            "default": [{"test": "{{snippet}}", "fail": "{{snippet}} is not right"}],
            "float": [
                {"test": "type({{snippet}})", "fail": "{{snippet}} should be a float"},
                {"test": "round({{snippet}}, 3)", "fail": "{{snippet}} is not right (3 decimals)"},
            ],
        },
    }
}


def grader(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


def fill(skeleton: Path, edits: dict[str, str], *, untag: str = "") -> nbformat.NotebookNode:
    """The skeleton with each cell whose source starts with a key replaced by its value; ``untag``:
    a cell start whose tags a student's editor dropped."""
    nb = nbformat.read(str(skeleton), as_version=4)
    for cell in nb.cells:
        if untag and cell.source.startswith(untag):
            cell.metadata.pop("tags", None)
        for start, new in edits.items():
            if cell.source.startswith(start):
                cell.source = new
    return nb


def in_order(skeleton: Path, position: str, *answers: str) -> nbformat.NotebookNode:
    """The in-place skeleton answered: ``position``'s body, then each ``?`` cell in order."""
    nb = fill(skeleton, {"def position": f"def position(t):\n    return {position}"})
    blanks = iter(answers)
    for cell in nb.cells:
        if cell.source == "?":
            cell.source = next(blanks, cell.source)
    return nb


def moved(nb: nbformat.NotebookNode, start: str, below: str) -> nbformat.NotebookNode:
    """The notebook with the cell starting with ``start`` moved just below the one starting with ``below``."""
    cell = next(c for c in nb.cells if c.source.startswith(start))
    nb.cells.remove(cell)
    nb.cells.insert(next(k for k, c in enumerate(nb.cells) if c.source.startswith(below)) + 1, cell)
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbsem")
    src = root / "source" / "ps2"
    src.mkdir(parents=True)
    (src / "a_semantics.ipynb").write_text(notebook(SEMANTICS))
    (src / "b_autotest.ipynb").write_text(notebook(AUTOTEST))
    (src / "d_in_place.ipynb").write_text(notebook(IN_PLACE))
    (src / "c_reading.ipynb").write_text(notebook([("markdown", "Read this first.", None)]))  # nothing graded
    (src / "data").mkdir()
    (src / "data" / "scale.txt").write_text("10")
    (src / "data" / "made.txt").write_text("made")
    (root / "source" / "header.ipynb").write_text(notebook([("code", 'NAME = ""', None)]))
    (root / "autotests.yml").write_text(yaml.safe_dump(TEMPLATES))  # at the course's root, as nbgrader reads it
    course = root / "course"
    course.mkdir()
    imported = grader("import", "nbgrader", str(src), cwd=course)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    a = course / "assignments/ps2_a_semantics/ps2_a_semantics.ipynb"
    b = course / "assignments/ps2_b_autotest/ps2_b_autotest.ipynb"
    d = course / "assignments/ps2_d_in_place/ps2_d_in_place.ipynb"
    right = SCALED.replace("    ### BEGIN SOLUTION\n", "").replace("\n    ### END SOLUTION", "")
    subs = {
        "a": {
            "correct": fill(
                a,
                {
                    "def scaled": right,
                    "?": DESCRIBE,
                    "YOUR ANSWER": "It keeps the order.",
                    "def half": "def half(x):\n    return x / 2",
                },
            ),
            # Changes read-only cells: the given constant, and a test cell emptied with its tags dropped.
            "edits_locked": fill(
                a,
                {
                    "SCALE": "SCALE = 1",
                    "def scaled": right,
                    "def check_close": "check_close = lambda a, b: None\nscaled = lambda xs: xs",
                },
                untag="def check_close",
            ),
            "warns": fill(a, {"def scaled": right, "def half": WARNS, "?": ""}),
            "hidden_wrong": fill(
                a, {"def scaled": "def scaled(xs):\n    return [SCALE * x if x != 7 else 0 for x in xs]"}
            ),
            "nbgrader_stub": fill(
                a,
                {
                    "def scaled": right,
                    "?": "# YOUR CODE HERE\nraise NotImplementedError()",
                    "def half": "def half(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                },
            ),
        },
        "b": {
            "correct": fill(b, {"def area": "def area(w, h):\n    return w * h * 1.0"}),
            "int": fill(b, {"def area": "def area(w, h):\n    return int(w * h)"}),
            "wrong": fill(b, {"def area": "def area(w, h):\n    return float(w + h)"}),
        },
        "d": {
            "correct": in_order(d, "2 * t", "total = report(positions)", "value = 3", "h = [1] * 5"),
            # A wrong step: its test fails in place, yet what the test cell defined is there for later cells.
            "wrong_position": in_order(d, "3 * t", "total = report(positions)", "value = 3"),
            # The test of ``value`` moved below the experiment: it judges the value there, as nbgrader would.
            "moved": moved(
                in_order(d, "2 * t", "total = report(positions)", "value = 3"), "assert value", "value = 100"
            ),
        },
    }
    # Graded in this process with one executor for both assignments (the scorecards as `grader
    # grade` writes them: ``Scorecard.to_dict``); the import above went through the command.
    from grader.course import config
    from grader.judge.grading import Grader

    loaded = config.load(course / "config.yaml")
    graders = Grader(loaded)
    cards: dict[str, dict[str, dict]] = {}
    for part, name in (("a", "ps2_a_semantics"), ("b", "ps2_b_autotest"), ("d", "ps2_d_in_place")):
        folder = root / "subs" / part
        folder.mkdir(parents=True)
        for sub, nb in subs[part].items():
            nbformat.write(nb, str(folder / f"{sub}.ipynb"))
            card = graders.grade(loaded.assignment(name), folder / f"{sub}.ipynb", student=sub)
            cards.setdefault(part, {})[sub] = yaml.safe_load(yaml.safe_dump(card.to_dict()))
    return {
        "course": course,
        "import": imported,
        "cards": cards,
        "a": a,
        "b": b,
        "subs": root / "subs" / "a",
        "loaded": loaded,
        "grader": graders,
    }


def q(card: dict, qid: str) -> dict:
    return next(x for x in card["questions"] if x["id"] == qid)


def test_locked_and_test_cells_run_as_released(course):
    card = course["cards"]["a"]["edits_locked"]
    assert q(card, "test_scaled")["score"] == 1 and q(card, "test_helper")["score"] == 1
    note = " ".join(card["execution"]["notes"])
    assert "Cells 3 and 6 are given read-only, so they ran as released" in note, note
    assert course["cards"]["a"]["correct"]["execution"].get("notes", []) == []


def test_a_test_cell_calls_a_helper_an_earlier_test_cell_defined(course):
    cards = course["cards"]["a"]
    assert q(cards["correct"], "test_data")["score"] == 1 and q(cards["hidden_wrong"], "test_data")["score"] == 1
    assert q(cards["correct"], "test_uses_twice")["score"] == 1
    assert q(cards["hidden_wrong"], "test_uses_twice")["score"] == 1  # 2 is not 7: right there too
    assert q(cards["nbgrader_stub"], "test_uses_twice")["score"] == 1
    assert q(cards["correct"], "test_helper")["score"] == 1
    assert q(cards["hidden_wrong"], "test_helper")["score"] == 1  # scaled([3]) is right there
    assert q(cards["hidden_wrong"], "test_scaled")["score"] == 0  # only the hidden part fails


def test_hidden_tests_are_never_shown(course):
    skeleton = course["a"].read_text()
    assert "scaled([7])" not in skeleton and "[70]" not in skeleton
    said = " ".join(q(course["cards"]["a"]["hidden_wrong"], "test_scaled")["feedback"])
    assert said == "A hidden check on test_scaled did not pass."  # not which input, nor what was expected
    assert "### BEGIN SOLUTION" not in skeleton and "multiplies by SCALE" not in skeleton  # no answer given away


def test_an_answer_left_as_released_scores_zero_without_a_person(course):
    cards = course["cards"]["a"]
    for sub in ("hidden_wrong", "nbgrader_stub"):  # the skeleton's blank, and nbgrader's own stub
        code = q(cards[sub], "describe")
        assert code["status"] == "unanswered" and code["score"] == 0, (sub, code)
        assert code["feedback"][0].startswith("Not answered: the code cell is still the one you were given")
    text = q(cards["hidden_wrong"], "why")
    assert text["status"] == "unanswered" and 'the text cell still says "YOUR ANSWER HERE"' in text["feedback"][0]
    assert q(cards["correct"], "describe")["status"] == "manual"  # answered: a person grades it
    assert q(cards["warns"], "describe")["status"] == "manual"  # emptied: changed, so a person looks (as nbgrader)
    assert q(cards["correct"], "why")["status"] == "manual"


def test_the_stub_counts_as_released_by_the_courses_setting_alone(course):
    """The import lowers nbgrader's stub to the assignment's ``blank_released_as``; the grader knows
    it from that setting only: without it, the stub is an answer a person reads."""
    import dataclasses

    from grader.course import config
    from grader.judge.grading import Grader

    section = yaml.safe_load((course["course"] / "config.yaml").read_text())["assignments"]["ps2_a_semantics"]
    assert section["blank_released_as"].splitlines() == ["# YOUR CODE HERE", "raise NotImplementedError()"]
    assert (
        "blank_released_as"
        not in yaml.safe_load((course["course"] / "config.yaml").read_text())["assignments"]["ps2_b_autotest"]
    )  # nothing graded by a person there
    loaded = config.load(course["course"] / "config.yaml")
    plain = dataclasses.replace(loaded.assignment("ps2_a_semantics"), blank_released_as="")
    card = Grader(loaded).grade(plain, course["subs"] / "nbgrader_stub.ipynb", student="nbgrader_stub")
    assert next(x for x in card.questions if x.id == "describe").status == "manual"


def test_autotest_lines_expand_from_the_templates_and_grade(course):
    config = yaml.safe_load((course["course"] / "config.yaml").read_text())
    at = {c.get("at_cell") for q_ in config["assignments"]["ps2_b_autotest"]["questions"] for c in q_.get("checks", [])}
    tests = [c.source for c in nbformat.read(str(course["b"]), as_version=4).cells if c.id in at]
    assert len(tests) == 1  # the test cell, taken where it stands
    lines = tests[0].splitlines()
    assert lines[0] == "from hashlib import md5" and lines[-1] == "print('checked')"
    assert 'assert repr(type(area(2, 3))) == """<class \'float\'>""", """area(2, 3) should be a float"""' in lines
    assert 'assert repr(round(area(1, 1), 3)) == """1.0""", """area(1, 1) is not right (3 decimals)"""' in lines
    hashed = [line for line in lines if "area(0.5, 3)" in line]
    assert len(hashed) == 2 and all(line.startswith("assert md5(repr(") for line in hashed)
    assert "1.5" not in tests[0]  # a HASHED value is shown only as its hash
    cards = course["cards"]["b"]
    assert {k: q(c, "test_area")["score"] for k, c in cards.items()} == {"correct": 1, "int": 0, "wrong": 0}
    assert json.dumps(config).count("unchanged_scores_zero") == 2


def test_what_a_real_course_holds_imports(course):
    out = course["import"].stdout
    # A notebook with nothing graded is reported and left out; the others get their data subfolder.
    assert "c_reading.ipynb: no graded cells (no nbgrader 'grade' metadata); nothing to grade (not imported)" in out
    assert "ps2_c_reading" not in (course["course"] / "config.yaml").read_text()
    assert (course["course"] / "assignments/ps2_a_semantics/data/scale.txt").read_text() == "10"
    # A shipped file the notebook writes is the student's to make: not given, so it can be written.
    assert "a_semantics.ipynb: data/made.txt is written by the notebook itself, so it is not given with it" in out
    assert not (course["course"] / "assignments/ps2_a_semantics/data/made.txt").exists()
    # A given cell that raises in the source notebook is not run when grading, and says so.
    assert (
        "a_semantics.ipynb, cell 3: raises NameError: name 'a_name_defined_nowhere' is not defined in the "
        "source notebook, a cell that shows an error on purpose; it is not run when grading"
    ) in out


def test_a_test_that_shows_a_warning_scores_zero_as_in_nbgrader(course):
    cards = course["cards"]["a"]
    assert q(cards["correct"], "test_half")["score"] == 1
    warned = q(cards["warns"], "test_half")
    assert warned["score"] == 0 and warned["status"] == "failed"
    assert warned["feedback"] == [
        "the test's checks hold, but while it ran your code wrote to the error "
        "stream (`<cell 10>:3: RuntimeWarning: divide by zero encountered in scalar divide`); this course "
        "counts a test that shows a warning or an error message as failed. Find what prints "
        "it (often a NumPy warning such as a division by zero) and fix it."
    ], warned


def test_read_only_cells_run_as_released_from_a_grading_bundle_too(course, tmp_path):
    # Graded where neither the solution nor the skeleton is (a Gradescope container): the bundle
    # carries the read-only cells.
    import dataclasses

    from grader.judge.grading import Grader

    loaded, grader_here = course["loaded"], course["grader"]
    a = loaded.assignment("ps2_a_semantics")
    shutil.copytree(a.solution_dir / "data", tmp_path / "data")  # the data files beside the bundle
    bundle = grader_here.references.save_bundle(a, tmp_path / "bundle.json")
    gone = tmp_path / "gone"
    there = dataclasses.replace(a, bundle=bundle, solution=gone / "s.ipynb", skeleton=gone / "k.ipynb")
    card = Grader(loaded, executor=grader_here.executor).grade(there, course["subs"] / "edits_locked.ipynb")
    here = {x["id"]: x["score"] for x in course["cards"]["a"]["edits_locked"]["questions"]}
    assert {q.id: q.score for q in card.questions} == here and here["test_scaled"] == here["test_helper"] == 1
    assert card.execution.notes[0].startswith("Cells 3 and 6 are given read-only")


def test_test_cells_keep_their_place(course):
    """What a test cell defines is there for later cells, and a test judges a value as it is at its
    cell, hidden part included; a test that fails in place is the test's verdict, not an error of
    the run."""
    cards = course["cards"]["d"]
    scores = {
        k: {x: q(c, x)["score"] for x in ("test_positions", "test_total", "test_value")} for k, c in cards.items()
    }
    assert scores["correct"] == {"test_positions": 1, "test_total": 1, "test_value": 1}
    # Wrong positions: its own test fails, the later total (computed from them) too; nothing else.
    assert scores["wrong_position"] == {"test_positions": 0, "test_total": 0, "test_value": 1}
    wrong = cards["wrong_position"]
    assert q(wrong, "test_positions")["status"] == "failed"
    text = json.dumps(wrong)
    assert "raised" not in text and "AssertionError" not in json.dumps(wrong["execution"])
    # Moved below the experiment, the test sees the value the experiment left.
    assert scores["moved"] == {"test_positions": 1, "test_total": 1, "test_value": 0}
    # An earlier test cell's h stands until the notebook binds its own.
    assert q(cards["correct"], "test_draw")["score"] == 1 and q(cards["correct"], "test_impulse")["score"] == 1


def test_a_stub_left_in_place_is_named_as_the_student_sees_it(course):
    # nbgrader's `raise NotImplementedError()` is reported as that line, not as this grader's `?`.
    errors = {e["cell"]: e for e in course["cards"]["a"]["nbgrader_stub"]["execution"]["errors"]}
    stub = errors[8]
    assert stub["error"].startswith("the cell still has the placeholder `raise NotImplementedError()`"), stub
    assert stub["traceback"] == ["cell 8, line 2: raise NotImplementedError()"]
    assert errors[12]["error"] == "the cell still has an unfilled blank `?`"  # this grader's own blank, as before
    said = [line for x in course["cards"]["a"]["nbgrader_stub"]["questions"] for line in x["feedback"]]
    assert (
        "the test `assert half(4) == 2` is not answered yet: cell 10, line 3 still has the placeholder "
        "`raise NotImplementedError()`; replace it with your code." in said
    ), said
