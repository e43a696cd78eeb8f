"""Moving a course from nbgrader or otter-grader: import, validate, and grade honest, unanswered and
cheating submissions through the real command. Honest submissions score what the original tool
gives them (its rule is re-run here on the same notebooks); cheats that pass the original tool's
in-kernel asserts earn nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import ROOT
from nbgrader_course import answer, build, nbgrader_points, release
from otter_course import master, otter_points, student


def grader(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


def cards(out: Path) -> dict[str, dict]:
    return {p.stem: yaml.safe_load(p.read_text()) for p in out.glob("*.yaml")}


def q(card: dict, qid: str) -> dict:
    return next(x for x in card["questions"] if x["id"] == qid)


def auto_score(card: dict) -> float:
    return sum(x["score"] for x in card["questions"] if x["status"] != "manual")


# --------------------------------------------------------------------------------------------
# nbgrader

NB_CORRECT = {
    "squares": 'def squares(n):\n    if n < 1:\n        raise ValueError("n < 1")\n    return [i * i for i in range(1, n + 1)]',
    "sum_of_squares": "def sum_of_squares(n):\n    return sum(squares(n))",
    "normalize": "def normalize(x):\n    x = np.asarray(x, dtype=float)\n    return x / np.sqrt((x ** 2).sum())",
}
NB_PARTLY = {
    **NB_CORRECT,
    "sum_of_squares": "def sum_of_squares(n):\n    return sum(i * i for i in range(1, n + 1))",  # right, but not using squares
    "normalize": "def normalize(x):\n    x = np.asarray(x, dtype=float)\n    return x / x.sum()",
}
NB_WRONG_NORMALIZE = {**NB_CORRECT, "normalize": NB_PARTLY["normalize"]}
ALWAYS_EQUAL = (
    "class AlwaysEqual(list):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
    "        return False\n"
)


@pytest.fixture(scope="module")
def nbgrader_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader")
    build(root)
    course = root / "course"
    course.mkdir()
    proc = grader("import", "nbgrader", str(root / "source" / "ps1"), "--course", "Problem sets", cwd=course)
    assert proc.returncode == 0, proc.stderr
    source = root / "source" / "ps1" / "problem1.ipynb"
    subs = root / "subs"
    subs.mkdir()
    variants = {
        "correct": answer(release(source), NB_CORRECT),
        "partly": answer(release(source), NB_PARTLY),
        "placeholder": release(source),
        "cheat_allclose": answer(
            release(source), NB_WRONG_NORMALIZE, "np.allclose = lambda *a, **k: True\nnp.isclose = lambda *a, **k: True"
        ),
        "cheat_equal": answer(
            release(source), {**NB_CORRECT, "squares": ALWAYS_EQUAL + "def squares(n):\n    return AlwaysEqual()"}
        ),
        "cheat_assert": answer(
            release(source),
            NB_WRONG_NORMALIZE,
            "import builtins\nclass Quiet(Exception):\n    pass\nbuiltins.AssertionError = Quiet\n"
            "AssertionError = Quiet",
        ),
    }
    for name, nb in variants.items():
        nbformat.write(nb, str(subs / f"{name}.ipynb"))
    out = root / "out"
    graded = grader("grade", str(subs), "-a", "ps1_problem1", "-o", str(out), cwd=course)
    assert graded.returncode == 0, graded.stderr
    return {
        "root": root,
        "course": course,
        "source": source,
        "import": proc,
        "cards": cards(out),
        "submissions": variants,
    }


def test_nbgrader_import_writes_course_and_reports_what_it_could_not_convert(nbgrader_course):
    course, proc = nbgrader_course["course"], nbgrader_course["import"]
    config = yaml.safe_load((course / "config.yaml").read_text())
    a = config["assignments"]["ps1_problem1"]
    ids = [x["id"] for x in a["questions"]]
    assert ids == [
        "correct_squares",
        "squares_invalid_input",
        "correct_sum_of_squares",
        "sum_of_squares_uses_squares",
        "normalize_test",
        "squares_printed",
        "explain",
    ]
    points = {x["id"]: x["points"] for x in a["questions"]}
    assert points["squares_invalid_input"] == 0.5 and points["normalize_test"] == 1.5
    squares = a["questions"][0]
    assert [c.get("hidden", False) for c in squares["checks"]] == [False, True]
    assert "squares(10)" in squares["checks"][1]["test"] and "squares(10)" not in squares["checks"][0]["test"]
    assert a["questions"][-1]["manual"] is True  # the markdown answer graded by a person
    # One notebook per assignment: the task-only notebook is an assignment of its own, all manual.
    assert [x["manual"] for x in config["assignments"]["ps1_problem2"]["questions"]] == [True]
    # A test cell without asserts is a test too: it passes when it raises nothing, as in nbgrader.
    assert "not converted" not in proc.stdout
    (printed,) = next(x for x in a["questions"] if x["id"] == "squares_printed")["checks"]
    assert printed == {
        "test": '"""Look at the output"""\nprint(squares(3))\n',
        "stderr_fails": True,
        "at_cell": printed["at_cell"],
    }
    # The skeleton: blanks for the solutions, visible tests only, no written answer.
    skeleton = nbformat.read(str(course / "assignments/ps1_problem1/ps1_problem1.ipynb"), as_version=4)
    text = "\n".join(c.source for c in skeleton.cells)
    assert "### BEGIN SOLUTION" not in text and "return [i ** 2" not in text and "?" in text
    assert "squares(10)" not in text and "HIDDEN" not in text
    assert "YOUR ANSWER HERE" in text and "nothing to square" not in text
    assert (course / "solutions/ps1_problem1/data.csv").is_file()
    # nbformat 4.0 without cell ids came in; what was written has them.
    assert all(c.get("id") for c in skeleton.cells)
    # The test is taken where its cell stands: the skeleton's cell of that id is the test, locked.
    (cell,) = [c for c in skeleton.cells if c.id == printed["at_cell"]]
    assert "print(squares(3))" in cell.source and "locked" in cell.metadata["tags"]
    assert skeleton.cells[0].source.startswith("Course header: write your name here.\n\n**Check your work")


def test_nbgrader_course_validates(nbgrader_course):
    proc = grader("validate", cwd=nbgrader_course["course"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ps1_problem1: ok" in proc.stdout and "ps1_problem2: ok" in proc.stdout


def test_nbgrader_honest_submissions_score_what_nbgrader_gives(nbgrader_course):
    got, source = nbgrader_course["cards"], nbgrader_course["source"]
    for name in ("correct", "partly"):
        expected = nbgrader_points(source, nbgrader_course["submissions"][name])
        assert auto_score(got[name]) == pytest.approx(expected), name
    assert auto_score(got["correct"]) == 4.5
    partly = got["partly"]
    assert q(partly, "sum_of_squares_uses_squares")["score"] == 0  # the test that deletes `squares` for a while
    assert q(partly, "correct_sum_of_squares")["score"] == 0.5
    assert q(partly, "normalize_test")["status"] == "failed"
    for card in got.values():  # the written answer left as released: 0, as nbgrader's checksum rule gives it
        assert q(card, "explain")["status"] == "unanswered" and q(card, "explain")["score"] == 0


def test_nbgrader_placeholders_are_unanswered(nbgrader_course):
    card = nbgrader_course["cards"]["placeholder"]
    assert card["score"] == 0
    assert q(card, "correct_squares")["status"] == "unanswered"
    assert "raise NotImplementedError()" in " ".join(q(card, "correct_squares")["feedback"])


def test_nbgrader_cheats_earn_nothing_here_though_nbgrader_pays_them(nbgrader_course):
    got, source, subs = nbgrader_course["cards"], nbgrader_course["source"], nbgrader_course["submissions"]
    # Run in the student's kernel, as nbgrader does, the patched np.allclose passes the wrong normalize.
    assert nbgrader_points(source, subs["cheat_allclose"]) == nbgrader_points(source, subs["correct"])
    assert q(got["cheat_allclose"], "normalize_test")["score"] == 0
    # An object equal to everything passes nose's assert_equal in the kernel; here it is no data at all.
    assert q(got["cheat_equal"], "correct_squares")["score"] == 0
    assert "cannot be checked" in " ".join(q(got["cheat_equal"], "correct_squares")["feedback"])
    assert q(got["cheat_assert"], "normalize_test")["score"] == 0
    assert auto_score(got["cheat_assert"]) == auto_score(got["correct"]) - 1.5


# --------------------------------------------------------------------------------------------
# otter

OT_GOOD = {
    2: "data = np.array([1.0, 2.0, 3.0, 4.0])\nmean = np.mean(data)",
    4: "def standardize(x):\n    x = np.asarray(x, dtype=float)\n    if x.ndim != 1:\n        raise ValueError('1-D only')\n"
    "    return (x - x.mean()) / x.std()",
    6: "m = 2 * np.eye(3)",
    8: "words = ['a', 'b']",
}
OT_PARTLY = {
    **OT_GOOD,
    4: "def standardize(x):\n    x = np.asarray(x, dtype=float)\n    return x - x.mean()",
    6: "m = np.eye(3)",
}
OT_CHEAT = {
    2: "data = np.array([1.0, 2.0, 3.0, 4.0])\nclass Eq(float):\n    def __eq__(self, o):\n        return True\n"
    "mean = Eq(0.0)\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None",
    4: "class Anything:\n    def __eq__(self, o):\n        return True\n    def mean(self):\n        return Anything()\n"
    "def standardize(x):\n    return Anything()",
    6: "class M:\n    shape = (3, 3)\n    def __eq__(self, o):\n        return True\nm = M()",
}


@pytest.fixture(scope="module")
def otter_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("otter")
    master_path = root / "master" / "hw01.ipynb"
    master(master_path)
    course = root / "course"
    course.mkdir()
    proc = grader("import", "otter", str(master_path), cwd=course)
    assert proc.returncode == 0, proc.stderr
    subs = root / "subs"
    for name, answers in (("good", OT_GOOD), ("partly", OT_PARTLY), ("placeholder", {}), ("cheat", OT_CHEAT)):
        student(subs / f"{name}.ipynb", answers)
    out = root / "out"
    graded = grader("grade", str(subs), "-a", "hw01", "-o", str(out), "-f", "yaml,md,junit,gradescope", cwd=course)
    assert graded.returncode == 0, graded.stderr
    return {"root": root, "course": course, "master": master_path, "import": proc, "cards": cards(out), "subs": subs}


def test_otter_import_questions_points_and_report(otter_course):
    course, proc = otter_course["course"], otter_course["import"]
    a = yaml.safe_load((course / "config.yaml").read_text())["assignments"]["hw01"]
    qs = {x["id"]: x for x in a["questions"]}
    assert [c["points"] for c in qs["q2"]["checks"]] == [0.5, 0.5, 1]  # points: [0.5, 0.5, 1]
    assert [c["points"] for c in qs["q1"]["checks"]] == [1, 1]  # 2 points shared by two tests
    assert [c.get("hidden", False) for c in qs["q1"]["checks"]] == [False, True]  # "# HIDDEN"
    assert qs["q4"]["points"] == 1.5 and all("points" not in c for c in qs["q4"]["checks"])  # all_or_nothing
    assert qs["q4"]["checks"][2]["hidden"] is True  # BEGIN TEST CONFIG: hidden: true
    assert "2.5" in qs["q1"]["checks"][0]["test"]  # the expected value is the master's stored output
    assert qs["q3"]["manual"] is True and "manual" not in qs["q5"]
    # A test that prints: what it prints is the stored output, as otter's doctest compares them.
    assert qs["q5"]["checks"][0]["test"].rstrip().endswith("assert doctest_match(printed_text(), 'a\\nb\\n')")
    assert "not converted" not in proc.stdout
    skeleton = nbformat.read(str(course / "assignments/hw01/hw01.ipynb"), as_version=4)
    text = "\n".join(c.source for c in skeleton.cells)
    assert "BEGIN" not in text and "SOLUTION" not in text and "PROMPT" not in text
    assert "(x - x.mean()) / x.std()" not in text and "np.random.seed(42)" in text and "# SEED" not in text
    assert "So that every feature" not in text and "YOUR ANSWER HERE" in text
    assert (course / "solutions/hw01/data.csv").is_file()


def test_otter_course_validates(otter_course):
    proc = grader("validate", cwd=otter_course["course"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hw01: ok" in proc.stdout


def test_otter_honest_submissions_score_what_otter_gives(otter_course):
    got = otter_course["cards"]
    for name in ("good", "partly"):
        nb = nbformat.read(str(otter_course["subs"] / f"{name}.ipynb"), as_version=4)
        expected = otter_points(otter_course["master"], nb)
        for qid in ("q1", "q2", "q4", "q5"):
            assert q(got[name], qid)["score"] == pytest.approx(expected[qid]), (name, qid)
    assert q(got["partly"], "q2")["status"] == "partial" and q(got["partly"], "q2")["score"] == 0.5
    assert q(got["partly"], "q4")["score"] == 0  # all or nothing
    feedback = " ".join(q(got["partly"], "q2")["feedback"])
    assert "`standardize(np.ones((2, 2)))` should raise ValueError; it did not." in feedback
    assert q(got["good"], "q3")["status"] == "manual"


def test_manual_questions_wait_for_a_person_in_every_output(otter_course):
    out = otter_course["root"] / "out"
    assert "q3 (graded by a person) | ⏳ waiting for a person to grade it | 0/1" in (out / "good.md").read_text()
    junit = (out / "junit.xml").read_text()
    assert junit.count("<skipped") == 4  # q3 of every submission
    gradescope = yaml.safe_load((out / "good.gradescope.json").read_text())
    assert any("waiting for a person" in t["output"] for t in gradescope["tests"] if t["name"].startswith("q3"))


def test_otter_placeholders_and_otter_lines_cost_nothing(otter_course):
    got = otter_course["cards"]
    assert got["placeholder"]["score"] == 0
    assert {q(got["placeholder"], x)["status"] for x in ("q1", "q2", "q4")} == {"unanswered"}
    # `import otter`, `grader.check(...)`, `grader.export()` in the notebook raise nothing here.
    assert got["good"]["execution"]["errors"] == []


def test_otter_cheats_earn_nothing(otter_course):
    card = otter_course["cards"]["cheat"]
    # Only q1's hidden `isinstance(mean, float)` holds: the always-equal `Eq` is a float subclass,
    # as true in the student's process as in otter's; every comparison earns nothing.
    assert card["score"] == 1 and q(card, "q1")["score"] == 1
    assert "cannot be checked" in " ".join(q(card, "q1")["feedback"])
    nb = nbformat.read(str(otter_course["subs"] / "cheat.ipynb"), as_version=4)
    assert sum(otter_points(otter_course["master"], nb).values()) > 0  # in the kernel, some of it passes


def test_import_refuses_an_existing_assignment_and_bad_sources(otter_course, tmp_path):
    proc = grader("import", "otter", str(otter_course["master"]), cwd=otter_course["course"])
    assert proc.returncode == 2 and "already has an assignment 'hw01'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = grader("import", "nbgrader", str(tmp_path / "nope"), cwd=tmp_path)
    assert proc.returncode == 2 and "is not a folder" in proc.stderr
    proc = grader("import", "otter", str(ROOT / "README.md"), cwd=tmp_path)
    assert proc.returncode == 2 and "is not a notebook" in proc.stderr


def test_nbgrader_answers_graded_by_a_person_are_found_for_the_grader(nbgrader_course):
    # nbgrader's released notebook carries none of this grader's tags, but its own metadata names
    # each answer cell's question (``grade_id``); the test whose output a person reads is found by
    # the skeleton.
    for card in nbgrader_course["cards"].values():
        if card["status"] != "graded":
            continue
        assert q(card, "explain")["answer"]["found_by"] == "tag"
        # A test cell that only prints passes when it raises nothing, as in nbgrader: no person needed.
        assert "answer" not in q(card, "squares_printed") and q(card, "squares_printed")["status"] != "manual"
    placeholder = q(nbgrader_course["cards"]["placeholder"], "explain")
    assert placeholder["answer"]["text"] == "YOUR ANSWER HERE" and "Not answered" in placeholder["feedback"][0]


def test_an_import_whose_solution_fails_a_test_writes_nothing_unless_kept_for_a_person(tmp_path):
    from nbgrader_course import meta, notebook

    src = tmp_path / "source" / "ps9"
    src.mkdir(parents=True)
    (src / "p.ipynb").write_text(
        notebook(
            [
                (
                    "code",
                    "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
                    meta("double", solution=True),
                ),
                ("code", "assert double(2) == 4", meta("double_ok", grade=True, locked=True, points=1)),
                (
                    "code",
                    '"""A test the solution fails"""\nx = 3\nassert double(x) == 7, "double(3) should be 7"',
                    meta("double_wrong", grade=True, locked=True, points=2),
                ),
                (
                    "code",
                    "### BEGIN HIDDEN TESTS\nassert double(5) == 11\n### END HIDDEN TESTS",
                    meta("double_hidden", grade=True, locked=True, points=1),
                ),
            ]
        )
    )
    course = tmp_path / "course"
    course.mkdir()
    proc = grader("import", "nbgrader", str(src), cwd=course)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        "the solution fails 2 imported tests:",
        '  - ps9, question double_wrong, line 3 `assert double(x) == 7, "double(3) should be 7"`: double(3) should be 7',
        # A hidden test: the instructor is told what it found, which a student never is.
        "  - ps9, question double_hidden, line 1 `assert double(5) == 11`: `double(5)` is 10, which does not pass "
        "`double(5) == 11`.",
        "nothing was written: fix the source, or pass --keep-failing-tests to import these tests' questions for a "
        "person to grade",
    ]
    assert list(course.iterdir()) == []  # nothing half-imported
    proc = grader("import", "nbgrader", str(src), "--keep-failing-tests", cwd=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "question double_wrong: its test fails on the solution; kept for a person" in proc.stdout
    questions = yaml.safe_load((course / "config.yaml").read_text())["assignments"]["ps9"]["questions"]
    assert [(q["id"], q["points"], q.get("manual", False)) for q in questions] == [
        ("double_ok", 1, False),
        ("double_wrong", 2, True),
        ("double_hidden", 1, True),
    ]
    assert "validate:" not in proc.stdout  # the import validated the course it wrote: nothing to fix


OK_TEST = '''test = {
    "name": "q6",
    "points": 3,
    "suites": [{
        "cases": [
            {"code": r"""
            >>> round(float(mean), 2)
            2.5
            """, "hidden": False, "locked": False, "failure_message": "mean is the average of data"},
            {"code": r"""
            >>> z = standardize(data)
            >>> bool(abs(z.mean()) < 1e-9)
            True
            """, "hidden": True, "locked": False, "points": 2},
        ],
        "scored": True, "setup": "", "teardown": "", "type": "doctest",
    }],
}
'''


def test_otter_ok_format_test_files_beside_the_notebook_become_questions(tmp_path):
    master_path = tmp_path / "master" / "hw01.ipynb"
    master(master_path)
    (master_path.parent / "tests").mkdir()
    (master_path.parent / "tests" / "q6.py").write_text(OK_TEST)
    course = tmp_path / "course"
    course.mkdir()
    proc = grader("import", "otter", str(master_path), cwd=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    q6 = next(
        x
        for x in yaml.safe_load((course / "config.yaml").read_text())["assignments"]["hw01"]["questions"]
        if x["id"] == "q6"
    )
    assert q6 == {
        "id": "q6",
        "points": 3,
        "checks": [
            {
                "test": "np.testing.assert_allclose(round(float(mean), 2), 2.5, rtol=1e-6, atol=1e-8)",
                "failure_message": "mean is the average of data",
                "points": 1,
                "after_line": 'grader.check("q6")',
            },
            {
                "test": "z = standardize(data)\nassert bool(abs(z.mean()) < 1e-9)\n",
                "hidden": True,
                "points": 2,
                "after_line": 'grader.check("q6")',
            },
        ],
    }
    wrong = tmp_path / "wrong.ipynb"
    student(wrong, {**OT_GOOD, 2: "data = np.array([1.0, 2.0, 3.0, 4.0])\nmean = 2.0"})
    out = tmp_path / "out"
    assert grader("grade", str(wrong), "-a", "hw01", "-o", str(out), cwd=course).returncode == 0
    card = yaml.safe_load((out / "wrong.yaml").read_text())
    # The case's failure message, then what differs (as otter shows the message above the doctest's result).
    assert q(card, "q6")["score"] == 2 and q(card, "q6")["feedback"] == [
        "mean is the average of data",
        "`np.testing.assert_allclose(round(float(mean), 2), 2.5, rtol=1e-6, atol=1e-8)` does not hold: "
        "`round(float(mean), 2)` is 2, which is not the expected value within rtol=1e-06, atol=1e-08: it is too small.",
    ]


def test_nbgraders_answer_cells_one_after_another_each_answer_their_own_question():
    # A released nbgrader notebook: five cells for a person in a row, each a comment above nbgrader's
    # stub, none with this grader's tags. Each is its own question's answer, not all the first's.
    from grader.notebook import answers

    stub = "# YOUR CODE HERE\nraise NotImplementedError()"
    names = ["closeness", "betweenness", "ranking"]

    def cell(source, meta=None, tags=()):
        return {"cell_type": "code", "source": source, "metadata": {"nbgrader": meta or {}, "tags": list(tags)}}

    given = answers.cells_of(
        {"cells": [cell("import networkx"), *(cell(f"# {n}\n\n?", tags=["answer"]) for n in names), cell("print(1)")]}
    )
    released = answers.cells_of(
        {
            "cells": [
                cell("import networkx"),
                *(cell(f"# {n}\n\n{stub}", {"grade": True, "solution": True, "grade_id": n}) for n in names),
                cell("print(1)"),
            ]
        },
        answer_ids="nbgrader.grade_id",  # as the import writes it in config.yaml
    )
    found = answers.locate(released, given, [(n, n) for n in names])
    assert {n: a.cells for n, a in found.items()} == {"closeness": (2,), "betweenness": (3,), "ranking": (4,)}
