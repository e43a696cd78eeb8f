"""Idioms of courses instructors published with nbgrader and otter (docs/imported-courses.md, the
last section), each in a small course of our own: the import takes it, ``grader validate`` says the
course is sound, and the grading scores what the course's own tool scores."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbgrader_course import meta, notebook

from grader.authoring import import_check, importing
from grader.authoring.nbgrader import importer as nbgrader_import
from grader.authoring.validate import validate
from grader.course import config
from grader.errors import UsageError
from grader.judge.grading import Grader


def nbgrader_source(root: Path, cells: list, files: dict[str, str] | None = None) -> Path:
    src = root / "source" / "ps1"
    src.mkdir(parents=True)
    (src / "ps1.ipynb").write_text(notebook(cells))
    for rel, body in (files or {}).items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)
    return src


def imported(root: Path, src: Path):
    """Import as ``grader import nbgrader`` does: staged, checked, then written; the course loaded."""
    items = nbgrader_import.read(src)
    staged = import_check.stage(items, root / "c" / "config.yaml", course_name="c")
    importing.write(items, root / "c" / "config.yaml", course_name="c")
    return staged, items, config.load(root / "c" / "config.yaml")


def test_a_released_stub_that_runs_and_fails_is_the_skeletons_answer_and_scores_zero(tmp_path):
    """``ans = None`` before the marked solution: the release runs and fails the test. The import takes
    it, ``grader validate`` accepts it (the course marks its solution), and the release left as it is
    scores 0 on that question, as nbgrader gives it."""
    answer = "word = 'abc'\nrev = None\n### BEGIN SOLUTION\nrev = word[::-1]\n### END SOLUTION"
    other = "def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
    cells = [
        ("code", answer, meta("rev", solution=True)),
        ("code", "assert rev == 'cba'", meta("t_rev", grade=True, locked=True, points=2)),
        ("code", other, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert [q.skeleton_fails for q in assignment.questions] == [True, False]
    assert validate(course, assignment) == []
    card = Grader(course).grade(assignment, assignment.skeleton)
    assert card.score == 0
    assert {q.id: q.status for q in card.questions} == {"t_rev": "failed", "t_twice": "unanswered"}
    assert Grader(course).grade(assignment, assignment.solution).score == 3


def test_a_skeleton_that_earns_points_is_still_refused_where_the_course_says_it_fails(tmp_path):
    """``skeleton_fails`` lets the skeleton fail a question, never earn it."""
    root = tmp_path / "c"
    (root / "solutions" / "a").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 2\nm = 3  # SOLUTION")]
    nbformat.write(nb, str(root / "solutions" / "a" / "a.ipynb"))
    (root / "config.yaml").write_text(
        "course: {name: c}\nassignments:\n  a:\n    variants: {count: 0}\n    questions:\n"
        "    - id: q\n      points: 1\n      skeleton_fails: true\n      checks:\n      - test: assert n == 2\n"
        "    - id: r\n      points: 1\n      checks:\n      - value: m\n"
    )
    from grader.authoring.assign import write_assignment

    course = config.load(root / "config.yaml")
    write_assignment(course.assignment("a"), None)
    problems = validate(course, course.assignment("a"))
    assert problems and problems[0] == "the skeleton scores 1, not 0"


def _answered(skeleton: Path, out: Path, fill: dict[str, str]) -> Path:
    """The skeleton with each blank cell (its text a key) answered with the key's value."""
    nb = nbformat.read(str(skeleton), as_version=4)
    used = set()
    for cell in nb.cells:
        for key, text in fill.items():
            if cell.cell_type == "code" and cell.source.strip() == key:
                cell.source = text
                used.add(key)
    assert used == set(fill), "every answer has its blank in the skeleton"
    nbformat.write(nb, str(out))
    return out


def test_a_test_reads_the_file_the_students_code_wrote(tmp_path):
    """The test reads back a file the student's cell writes (``df.to_csv("out.tsv")``): it reads the
    one the student's run wrote, as nbgrader's test does in the student's kernel; a student who wrote
    another file, or none, fails it."""
    frame = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})"
    write = "### BEGIN SOLUTION\ndf.to_csv('out.tsv', sep='\\t', index=False)\n### END SOLUTION"
    test = "back = pd.read_csv('out.tsv', sep='\\t')\nassert back.shape == (3, 2)\nassert back['b'].sum() == 15"
    cells = [
        ("code", frame, None),
        ("code", write, meta("write", solution=True)),
        ("code", test, meta("t_file", grade=True, locked=True, points=1)),
    ]
    staged, _, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    one_column = _answered(
        assignment.skeleton,
        tmp_path / "one.ipynb",
        {"?": "df[['a']].to_csv('out.tsv', sep='\\t', index=False)"},
    )
    card = grader.grade(assignment, one_column)
    assert card.score == 0 and card.questions[0].status == "failed"
    # Left blank, nothing is written: the test's read fails in the student's run, and says so.
    card = grader.grade(assignment, assignment.skeleton)
    assert card.score == 0 and "No such file or directory: 'out.tsv'" in card.questions[0].lines[0]


def test_a_module_name_the_notebook_imports_as_another_module_is_the_notebooks_in_its_tests(tmp_path):
    """``from numpy import random`` in the notebook, then ``random.default_rng(...)`` in a test: the
    test's ``random`` is NumPy's, as in the student's kernel where nbgrader runs it, and its draws feed
    the student's function."""
    given = "import numpy as np\nfrom numpy import random"
    answer = "def running_mean(x):\n    ### BEGIN SOLUTION\n    return np.cumsum(x) / np.arange(1, len(x) + 1)\n    ### END SOLUTION"
    test = (
        "rng = random.default_rng(seed=7)\nxs = rng.uniform(0, 1, 50)\nm = running_mean(xs)\n"
        "assert np.isclose(m[-1], xs.mean())\nassert np.isclose(m[0], xs[0])"
    )
    cells = [
        ("code", given, None),
        ("code", answer, meta("running_mean", solution=True)),
        ("code", test, meta("t_mean", grade=True, locked=True, points=2)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert assignment.questions[0].checks[0].notebook_names == ("random",)
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    wrong = _answered(
        assignment.skeleton,
        tmp_path / "w.ipynb",
        {"def running_mean(x):\n    ?": "def running_mean(x):\n    return np.cumsum(x) / len(x)"},
    )
    assert grader.grade(assignment, wrong).score == 0


def test_the_same_test_after_two_parts_is_each_parts_own_in_a_notebook_saved_without_ids():
    """One test text after the 1-D part and again after the 2-D part; the student's notebook came from
    nbgrader's release, which has no cell ids: each copy is its given cell in turn, so the first
    test is taken after the first part, not at the end (where a later cell reassigned the name)."""
    from grader.notebook import Cell, cell_point, restore_locked

    test = "assert diff <= eps"
    given = [
        Cell(1, "diff = 1", cell_id="p1"),
        Cell(2, test, tags=("locked",), cell_id="t1"),
        Cell(3, "diff = 2", cell_id="p2"),
        Cell(4, test, tags=("locked",), cell_id="t2"),
    ]
    student = [Cell(k, c.source) for k, c in enumerate(given, 1)]
    out, changed = restore_locked(student, given)
    assert [c.cell_id for c in out] == ["", "t1", "", "t2"] and changed == ()
    assert cell_point(out, "t1", None) == 1 and cell_point(out, "t2", None) == 3
    # A third copy of the student's: which is which is unknown, so none is taken as the given cells.
    out, _ = restore_locked([*student, Cell(5, test)], given)
    assert [c.cell_id for c in out] == ["", "", "", "", ""]


def _otter_master(folder: Path, extra: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\n"),
        nbformat.v4.new_code_cell("import pandas as pd"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 1"),
        nbformat.v4.new_code_cell("n = 3 # SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell("assert n == 3"),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
        *(nbformat.v4.new_code_cell(src) for src in extra),
    ]
    nbformat.write(nb, str(folder / "lab.ipynb"))
    return folder / "lab.ipynb"


def test_a_cell_reading_a_file_the_course_does_not_ship_is_left_out_when_nothing_graded_uses_it(tmp_path):
    """A demo cell reads a data file the published course does not hold; otter runs on past its
    error. The import takes the course, that cell is not run when grading, and a note says why."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, ["demo = pd.read_csv('logger_export.txt', sep='\\t')\ndemo"])
    (item,) = otter_import.read(master)
    assert item.notes == [
        "lab.ipynb, cell 9: reads the file logger_export.txt, which is not beside the notebook; nothing graded "
        "uses what it makes, so it is not run when grading"
    ]
    assert "skip-grading" in item.notebook.cells[-1].metadata["tags"]


def test_a_cell_reading_an_unshipped_file_that_a_later_cell_uses_stops_the_import(tmp_path):
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, ["demo = pd.read_csv('logger_export.txt')", "total = demo['v'].sum()"])
    with pytest.raises(UsageError) as info:
        otter_import.read(master)
    assert str(info.value) == (
        "lab.ipynb, cell 9 reads the file logger_export.txt, which is not beside the notebook, and cell 10 uses "
        "what it makes (demo): add the file (and list it in the course's files) and import again; nothing was "
        "written"
    )


def test_a_full_disk_during_the_import_is_one_line_and_an_exit_status_and_takes_back_what_was_written(
    tmp_path, monkeypatch, capsys
):
    """The disk fills while the import writes the course: one line naming the file and why, exit
    status 2, no traceback, and the course as it was (no config.yaml, no folders)."""
    import errno
    import shutil

    from grader import cli

    src = nbgrader_source(
        tmp_path,
        [
            ("code", "### BEGIN SOLUTION\nn = 2\n### END SOLUTION", meta("n", solution=True)),
            ("code", "assert n == 2", meta("t_n", grade=True, locked=True, points=1)),
        ],
        files={"data/values.csv": "a\n1\n"},
    )
    course = tmp_path / "course"
    course.mkdir()
    real = shutil.copyfile

    def full(a, b, *args, **kwargs):
        if str(b).startswith(str(course)):
            raise OSError(errno.ENOSPC, "No space left on device", str(b))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", full)
    monkeypatch.chdir(course)
    status = cli.main(["import", "nbgrader", str(src)])
    err = capsys.readouterr().err
    assert status == 2
    assert err == (
        f"grader: the import could not be written: No space left on device ({course}/solutions/ps1/data/values.csv); "
        "nothing was written\n"
    )
    assert list(course.iterdir()) == []


def test_a_test_kept_for_a_person_whose_cell_raises_on_the_solution_is_not_run_when_grading(tmp_path):
    """A test written for an older library raises on the solution (``np.float``, gone from NumPy);
    with --keep-failing-tests its question goes to a person, its cell is what that person reads, and
    the cell is not run: the solution runs to the end and ``grader validate`` is content."""
    answer = "import numpy as np\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION"
    cells = [
        ("code", answer, meta("x", solution=True)),
        ("code", "assert np.float(x) == 2.0", meta("t_old", grade=True, locked=True, points=1)),
        ("code", "assert x * 3 == 6", meta("t_new", grade=True, locked=True, points=1)),
    ]
    items = nbgrader_import.read(nbgrader_source(tmp_path, cells))
    staged = import_check.stage(items, tmp_path / "c" / "config.yaml", course_name="c")
    assert [f.question for f in staged.failing] == ["t_old"]
    import_check.keep_for_a_person(items, staged.failing)
    importing.write(items, tmp_path / "c" / "config.yaml", course_name="c")
    course = config.load(tmp_path / "c" / "config.yaml")
    assignment = course.assignment("ps1")
    assert validate(course, assignment) == []
    card = Grader(course).grade(assignment, assignment.solution)
    assert {q.id: q.status for q in card.questions} == {"t_old": "manual", "t_new": "passed"}


def test_an_otter_config_file_shared_by_a_courses_notebooks_is_read(tmp_path):
    """``config_file: ../course.yml`` in ASSIGNMENT CONFIG: its settings (the requirements, files)
    are the notebook's, the notebook's own keys first."""
    from grader.authoring.otter import importer as otter_import

    lab = tmp_path / "labs" / "lab1"
    lab.mkdir(parents=True)
    (tmp_path / "labs" / "course.yml").write_text("files: [lengths.csv]\nrequirements: ../needs.txt\nname: shared\n")
    (tmp_path / "labs" / "needs.txt").write_text("tablelib-not-here==2.1\n")
    (lab / "lengths.csv").write_text("x\n1\n")
    master = _otter_master(lab, [])
    nb = nbformat.read(str(master), as_version=4)
    nb.cells[0].source = "# ASSIGNMENT CONFIG\nconfig_file: ../course.yml\nname: lab1\n"
    nbformat.write(nb, str(master))
    (item,) = otter_import.read(master)
    assert item.name == "lab1"
    assert [p.name for p in item.data] == ["lengths.csv"] and item.requirements == ["tablelib-not-here==2.1"]
    nb.cells[0].source = "# ASSIGNMENT CONFIG\nconfig_file: ../missing.yml\n"
    nbformat.write(nb, str(master))
    with pytest.raises(
        UsageError, match=r"^lab.ipynb: its ASSIGNMENT CONFIG's config_file ../missing.yml cannot be read"
    ):
        otter_import.read(master)


def test_a_hidden_tests_helper_whose_argument_shares_a_notebook_names_spelling_reads_both_right(tmp_path):
    """The hidden test defines its own reference function ``def correct_total(frame, k)`` and then
    reads the notebook's ``frame`` outside it: inside, ``frame`` is the argument; outside, the
    notebook's table."""
    given = "import pandas as pd\nframe = pd.DataFrame({'u': [0, 1, 1, 2], 'v': [1.0, 2.0, 3.0, 4.0]})"
    answer = "def total(frame, k):\n    ### BEGIN SOLUTION\n    return float(frame[frame['u'] <= k]['v'].sum())\n    ### END SOLUTION"
    test = (
        "assert total(frame, 2) == 10.0\n"
        "### BEGIN HIDDEN TESTS\n"
        "def correct_total(frame, k):\n    return float(frame[frame['u'] <= k]['v'].sum())\n"
        "for users in [[0], [1, 2]]:\n    part = frame[frame['u'].isin(users)]\n"
        "    for k in range(3):\n        assert total(part, k) == correct_total(part, k)\n"
        "### END HIDDEN TESTS"
    )
    cells = [
        ("code", given, None),
        ("code", answer, meta("total", solution=True)),
        ("code", test, meta("t_total", grade=True, locked=True, points=2)),
    ]
    staged, _, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    wrong = _answered(
        assignment.skeleton,
        tmp_path / "w.ipynb",
        {
            "def total(frame, k):\n    ?": "def total(frame, k):\n    return float(frame[frame['u'] < k]['v'].sum()) + (k == 2) * 4.0"
        },
    )
    assert grader.grade(assignment, wrong).score == 0


def test_an_otter_lesson_cell_that_shows_an_error_on_purpose_is_left_out(tmp_path):
    """A lesson cell missing its closing parenthesis, to show students a SyntaxError: otter runs on
    past it; the import notes it and it is not run when grading, so the course imports."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, ['print("this line is missing something."', "m = n + 1"])
    (item,) = otter_import.read(master)
    assert (
        len(item.notes) == 1
        and item.notes[0].startswith("lab.ipynb, cell 9: raises SyntaxError: ")  # the master's cell 9
        and item.notes[0].endswith("a cell that shows an error on purpose; it is not run when grading")
    )
    assert "skip-grading" in item.notebook.cells[-2].metadata["tags"]
    staged = import_check.stage([item], tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()


def test_a_test_asking_whether_the_notebook_defines_a_name_reads_the_notebooks_names(tmp_path):
    """``assert 'decade' in vars()``, an otter test's check that the student kept the name: vars()
    is the notebook's namespace where the test runs."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, [])
    nb = nbformat.read(str(master), as_version=4)
    nb.cells[5].source = "assert 'n' in vars()\nassert 'unknown_name' not in dir()"
    nbformat.write(nb, str(master))
    items = otter_import.read(master)
    staged = import_check.stage(items, tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    importing.write(items, tmp_path / "c" / "config.yaml", course_name="c")
    course = config.load(tmp_path / "c" / "config.yaml")
    assignment = course.assignment("lab")
    renamed = _answered(assignment.skeleton, tmp_path / "r.ipynb", {"n = ?": "m = 3"})
    assert Grader(course).grade(assignment, renamed).score == 0
    # Left blank, the name is not answered: the question is unanswered, not passed.
    card = Grader(course).grade(assignment, assignment.skeleton)
    assert card.score == 0 and card.questions[0].status == "unanswered"


def test_an_answer_a_person_grades_that_asks_for_input_is_shown_not_run(tmp_path):
    """A guessing game graded by a person calls ``input()``, which has no one to answer when
    grading: nbgrader's kernel raises and runs on. The import takes it; the cell is the answer a
    person reads, not run, and the tests before and after it grade as usual."""
    game = (
        "### BEGIN SOLUTION\nguess = int(input('Guess: '))\nprint('too high' if guess > 5 else 'ok')\n### END SOLUTION"
    )
    twice = "def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
    cells = [
        ("code", twice, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
        ("code", game, meta("game", grade=True, solution=True, points=2)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any("an answer graded by a person raises EOFError" in n for n in items[0].notes)
    assignment = course.assignment("ps1")
    card = Grader(course).grade(assignment, assignment.solution)
    assert {q.id: q.status for q in card.questions} == {"t_twice": "passed", "game": "manual"}
    assert validate(course, assignment) == []


def test_a_test_that_passes_on_every_notebook_does_not_fail_the_skeleton_check(tmp_path):
    """``assert 'n' != ...`` (a course's slip: a string is never Ellipsis) passes everywhere, as in
    otter; ``grader validate`` leaves its points out of what the skeleton may not earn, and the rest
    of the question must still be unanswered there."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, [])
    nb = nbformat.read(str(master), as_version=4)
    nb.cells.insert(6, nbformat.v4.new_code_cell("assert 'n' != ..."))
    nbformat.write(nb, str(master))
    items = otter_import.read(master)
    staged = import_check.stage(items, tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    importing.write(items, tmp_path / "c" / "config.yaml", course_name="c")
    course = config.load(tmp_path / "c" / "config.yaml")
    card = Grader(course).grade(course.assignment("lab"), course.assignment("lab").skeleton)
    assert card.score == 0.5  # the slip's share, as otter pays it


def test_two_of_three_tests_of_a_question_sharing_a_point_write_points_that_add_up():
    """A question of 1 point whose three tests share it, one left for a person: the question's
    two thirds are written as its checks' rounded shares add up, so config.yaml loads."""
    from grader.authoring.otter import ok as otter_ok

    checks = [{"test": "assert a", "points": round(1 / 3, 10)}, {"test": "assert b", "points": round(1 / 3, 10)}]
    points = otter_ok.question_points(1 - 1 / 3, checks)
    assert abs(points - sum(c["points"] for c in checks)) <= 1e-9
    assert otter_ok.question_points(3 * (1 / 3), [{"test": "x", "points": round(1 / 3, 10)}] * 3) == 1.0
