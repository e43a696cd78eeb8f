"""Idioms of courses instructors published with nbgrader and otter (docs/imported-courses.md, the
last section), each in a small course of our own: the import takes it, ``grader validate`` says the
course is sound, and the grading scores what the course's own tool scores."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
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


def test_a_release_whose_given_code_holds_the_answer_pays_every_notebook_as_nbgrader_does(tmp_path):
    """TU Delft's multiple choice: ``answer_1a = "B"`` above the solution in the released cell, and
    "B" is right. nbgrader pays every notebook that question, the unanswered one too; the import
    takes it, says so, and ``grader validate`` accepts the skeleton earning those points only."""
    given = 'answer_1a = "B"  # "A", "B" or "C"\n### BEGIN SOLUTION\nanswer_1a = "B"\n### END SOLUTION'
    blank = 'answer_1b = ""  # "A", "B" or "C"\n### BEGIN SOLUTION\nanswer_1b = "C"\n### END SOLUTION'
    cells = [
        ("code", given, meta("Q1-a-answer", solution=True)),
        (
            "code",
            'assert answer_1a in ("A", "B", "C")\n### BEGIN HIDDEN TESTS\nassert answer_1a == "B"\n### END HIDDEN TESTS',
            meta("Q1-a-test", grade=True, locked=True, points=0.5),
        ),
        ("code", blank, meta("Q1-b-answer", solution=True)),
        (
            "code",
            'assert answer_1b in ("A", "B", "C")\n### BEGIN HIDDEN TESTS\nassert answer_1b == "C"\n### END HIDDEN TESTS',
            meta("Q1-b-test", grade=True, locked=True, points=0.5),
        ),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any("Q1-a-test" in n and "already passes" in n for n in items[0].notes)
    assignment = course.assignment("ps1")
    assert [q.skeleton_passes for q in assignment.questions] == [True, False]
    assert validate(course, assignment) == []
    card = Grader(course).grade(assignment, assignment.skeleton)
    assert {q.id: q.score for q in card.questions} == {"Q1-a-test": 0.5, "Q1-b-test": 0}
    assert Grader(course).grade(assignment, assignment.solution).score == 1


def test_skeleton_passes_leaves_the_other_questions_guarded(tmp_path):
    """``skeleton_passes`` frees its own question only: another the skeleton earns is still named."""
    root = tmp_path / "c"
    (root / "solutions" / "a").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 2\nk = 4"), nbformat.v4.new_code_cell("m = 3  # SOLUTION")]
    nbformat.write(nb, str(root / "solutions" / "a" / "a.ipynb"))
    (root / "config.yaml").write_text(
        "course: {name: c}\nassignments:\n  a:\n    variants: {count: 0}\n    questions:\n"
        "    - id: q\n      points: 1\n      skeleton_passes: true\n      checks:\n      - test: assert n == 2\n"
        "    - id: r\n      points: 1\n      checks:\n      - value: m\n"
        "    - id: s\n      points: 2\n      checks:\n      - test: assert k == 4\n"
    )
    from grader.authoring.assign import write_assignment

    course = config.load(root / "config.yaml")
    write_assignment(course.assignment("a"), None)
    problems = validate(course, course.assignment("a"))
    assert problems[0] == "the skeleton scores 2, not 0"
    assert any(p.startswith("question s is passed in the skeleton") for p in problems)
    assert not any(p.startswith("question q ") for p in problems)


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


def test_a_test_opening_the_file_the_students_code_wrote_reads_that_file(tmp_path):
    """``with open("kind.txt") as f: text = f.read()`` in a test, the file written by the student's
    cell: the test reads what the student's run wrote (text and bytes alike); a wrong file fails."""
    given = "import numpy as np\nx = np.arange(5, dtype='int64')"
    answer = "### BEGIN SOLUTION\nkind = str(x.dtype)\n### END SOLUTION"
    write = "with open('kind.txt', 'w') as out:\n    out.write(kind)"
    test = (
        "with open('kind.txt', 'r') as f:\n    text = f.read()\nassert text == 'int64'\n"
        "raw = open('kind.txt', mode='rb').read()\nassert raw == b'int64'"
    )
    cells = [
        ("code", given, None),
        ("code", answer, meta("kind", solution=True)),
        ("code", write, None),
        ("code", test, meta("t_kind", grade=True, locked=True, points=1)),
    ]
    staged, _, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    wrong = _answered(assignment.skeleton, tmp_path / "wrong.ipynb", {"?": "kind = 'float64'"})
    card = grader.grade(assignment, wrong)
    assert card.score == 0 and card.questions[0].status == "failed"


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
        and item.notes[0].endswith("the course's tool runs on past the error; here it is not run when grading")
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


def _otter_imported(root: Path, master: Path):
    """An otter master notebook imported as ``grader import otter`` does: staged, checked, written."""
    from grader.authoring.otter import importer as otter_import

    items = otter_import.read(master)
    staged = import_check.stage(items, root / "c" / "config.yaml", course_name="c")
    importing.write(items, root / "c" / "config.yaml", course_name="c")
    return staged, items, config.load(root / "c" / "config.yaml")


def _edited(notebook_path: Path, out: Path, find: str, replace: str) -> Path:
    """The notebook with ``find`` replaced in the one code cell that holds it."""
    nb = nbformat.read(str(notebook_path), as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and find in c.source]
    cell.source = cell.source.replace(find, replace)
    nbformat.write(nb, str(out))
    return out


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_otter_solution_that_writes_the_file_its_test_reads_back_into_the_data_folder_grades(tmp_path):
    """UC Santa Barbara EDS 220's idiom: an unmarked line after the solution writes the very file
    the test reads back, into the ``data`` folder the course ships (with an old copy of that file).
    The import takes it (that file is the student's to write, so it is not given), the solution
    scores full marks, a wrong answer writes a wrong file and fails, and the course's own files are
    as they were."""
    src = tmp_path / "src"
    (src / "data").mkdir(parents=True)
    (src / "data" / "catch.csv").write_text("region,catch\nA,1\nB,2\nA,3\n")
    (src / "data" / "by_region.csv").write_text("region,catch\nstale,0\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\nfiles:\n  - data\n"),
        nbformat.v4.new_code_cell("import pandas as pd\ncatch = pd.read_csv('data/catch.csv')"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 2"),
        nbformat.v4.new_code_cell(
            "by_region = catch.groupby('region')['catch'].sum() # SOLUTION\nby_region.to_csv('data/by_region.csv')"
        ),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell(
            "back = pd.read_csv('data/by_region.csv', index_col='region')['catch']\n"
            "assert back.to_dict() == {'A': 4, 'B': 2}"
        ),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
    ]
    nbformat.write(nb, str(src / "lab.ipynb"))
    before = _tree(src)
    staged, items, course = _otter_imported(tmp_path, src / "lab.ipynb")
    assert staged.failing == () and staged.problems == ()
    assert (
        "lab.ipynb: data/by_region.csv is written by the notebook itself, so it is not given with it "
        "(the student's notebook makes it)"
    ) in items[0].notes
    assignment = course.assignment("lab")
    given = _tree(assignment.solution_dir / "data")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    wrong = _edited(assignment.solution, tmp_path / "wrong.ipynb", "].sum()", "].max()")
    card = grader.grade(assignment, wrong)
    assert card.score == 0 and card.questions[0].status == "failed"
    assert _tree(src) == before and _tree(assignment.solution_dir / "data") == given == {
        "catch.csv": before["data/catch.csv"]
    }


def test_an_nbgrader_solution_that_writes_into_the_data_folder_it_ships_grades(tmp_path):
    """The same in an nbgrader course: the solution overwrites a file of the ``data`` folder the
    release holds, and the next test reads it back."""
    frame = "import pandas as pd\nraw = pd.read_csv('data/raw.csv')"
    write = "### BEGIN SOLUTION\nclean = raw.dropna()\n### END SOLUTION\nclean.to_csv('data/clean.csv', index=False)"
    test = "back = pd.read_csv('data/clean.csv')\nassert len(back) == 2 and back['v'].sum() == 4"
    cells = [
        ("code", frame, None),
        ("code", write, meta("clean", solution=True)),
        ("code", test, meta("t_clean", grade=True, locked=True, points=1)),
    ]
    src = nbgrader_source(
        tmp_path, cells, files={"data/raw.csv": "k,v\na,1\nb,\nc,3\n", "data/clean.csv": "k,v\nz,0\n"}
    )
    before = _tree(src / "data")
    staged, items, course = imported(tmp_path, src)
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    kept_all = _edited(assignment.solution, tmp_path / "all.ipynb", "raw.dropna()", "raw")
    assert grader.grade(assignment, kept_all).score == 0
    assert _tree(src / "data") == before


# A course's helper module whose installer pip-installs at run time (UBC Okanagan's PHYS121.Installer()):
# grading has no network (and installs nothing), so it fails there.
TOOLS = """import subprocess, sys
def Installer():
    # in the course: pip install --user pdfkit ..., which fails where there is no network; a child
    # that exits 1 as pip then does stands in for it (pip itself takes a second to start)
    subprocess.check_call([sys.executable, '-c', 'raise SystemExit(1)'])
    return 'installed'
def twice(x):
    return 2 * x
"""


def _installer_course(folder: Path, setup: str, after: str = "") -> Path:
    (folder / "tools.py").write_text(TOOLS)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\nfiles:\n  - tools.py\n"),
        nbformat.v4.new_code_cell(setup),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 2"),
        nbformat.v4.new_code_cell("n = tools.twice(3) # SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell("assert n == 6"),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
        *([nbformat.v4.new_code_cell(after)] if after else []),
    ]
    nbformat.write(nb, str(folder / "lab.ipynb"))
    return folder / "lab.ipynb"


def test_a_run_time_installer_that_fails_and_that_nothing_uses_is_run_as_pass_when_grading(tmp_path):
    """``import tools`` then ``tools.Installer()``, which pip-installs when the notebook runs: it fails
    in the sandbox, and otter runs on past it. Later cells use ``tools``, nothing uses what the
    installer makes: the import takes the course, the installer's line is run as ``pass`` (the
    import before it runs), a note names the cell, the line and the error, and grading scores as
    otter does."""
    master = _installer_course(tmp_path, "import tools\ntools.Installer()")
    staged, items, course = _otter_imported(tmp_path, master)
    assert staged.failing == () and staged.problems == ()
    [note] = [n for n in items[0].notes if "Installer" in n]
    assert note.startswith("lab.ipynb, cell 2: `tools.Installer()` raises CalledProcessError: ")  # the master's cell 2
    assert note.endswith(
        "and nothing graded uses what that line makes: the course's tool runs on past the error; here that line is "
        "run as `pass` when grading (the cell's earlier lines run)"
    )
    assignment = course.assignment("lab")
    assert r"tools\.Installer\(\)" in assignment.inert_lines
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    assert (
        grader.grade(assignment, _edited(assignment.solution, tmp_path / "w.ipynb", "twice(3)", "twice(4)")).score == 0
    )


def test_a_failing_installer_whose_result_a_later_cell_uses_still_stops_the_import(tmp_path):
    """What the failing line makes a later cell uses (``status``): the solution cannot run for what
    is graded, so the import stops, naming the cell."""
    from grader.errors import SolutionError

    master = _installer_course(tmp_path, "import tools\nstatus = tools.Installer()", after="print(status)")
    with pytest.raises(SolutionError) as info:
        _otter_imported(tmp_path, master)
    assert str(info.value).startswith("The solution of lab (lab.ipynb) fails in cell 1: CalledProcessError: ")
    assert not (tmp_path / "c" / "config.yaml").exists()


def test_a_solution_failing_inside_a_library_says_which_versions_it_ran_with(tmp_path):
    """UC Santa Barbara's salmon homework assigns an int into a column of strings, which pandas 3
    refuses: the import's message names the cell and the error, and, as facts, the versions of the
    libraries the notebook imports it ran with here and that the course declares none."""
    from grader.errors import SolutionError

    master = _otter_master(
        tmp_path, ["frame = pd.DataFrame({'c': ['a', 'I']})\nfirst = frame.loc['nope']", "shown = first"]
    )
    with pytest.raises(SolutionError) as info:
        _otter_imported(tmp_path, master)
    said = str(info.value)
    assert said.startswith("The solution of lab (lab.ipynb) fails in cell 3: KeyError: ")
    assert said.endswith(f" (it ran here with pandas {pd.__version__}; the course declares no version of it)")
    master = _otter_master(tmp_path, ["first = undefined_name", "shown = first"])
    with pytest.raises(SolutionError) as info:  # the notebook's own mistake: no versions named
        _otter_imported(tmp_path, master)
    assert str(info.value).endswith("NameError: name 'undefined_name' is not defined")


def test_an_otter_test_that_ran_and_showed_nothing_expects_none(tmp_path):
    """A test cell that calls the course's own checking function last (``test_q5(catch_I)``), run in
    the master notebook with no output: otter's doctest expects nothing there, so the call must
    return None without raising; a test cell never run still asks for its output."""
    nb = nbformat.v4.new_notebook()
    ran = nbformat.v4.new_code_cell("def test_n(x):\n    assert x == 3, 'Incorrect answer.'\ntest_n(n)")
    ran.execution_count = 4
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\n"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 1"),
        nbformat.v4.new_code_cell("n = 3 # SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        ran,
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
    ]
    nbformat.write(nb, str(tmp_path / "lab.ipynb"))
    staged, items, course = _otter_imported(tmp_path, tmp_path / "lab.ipynb")
    assert staged.failing == () and items[0].notes == []
    assignment = course.assignment("lab")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    assert grader.grade(assignment, _edited(assignment.solution, tmp_path / "w.ipynb", "n = 3", "n = 4")).score == 0
    from grader.authoring.otter.importer import test_source

    assert test_source("def f():\n    pass\nf()", "", ran=False)[1].startswith("it ends in an expression but")


def test_an_otter_question_marked_manual_with_tests_is_scored_by_its_tests_as_otter_scores_it(tmp_path):
    """``manual: true`` on a question that also has tests (UC Santa Barbara EDS 220's q8): otter's
    autograder writes and runs those tests and scores the question by them; so does the import, with
    a note; a wrong answer fails them."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\n"),
        nbformat.v4.new_code_cell("import numpy as np"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q8\npoints: 2\nmanual: true"),
        nbformat.v4.new_raw_cell("# BEGIN SOLUTION"),
        nbformat.v4.new_code_cell("total = np.arange(4).sum() # SOLUTION"),
        nbformat.v4.new_raw_cell("# END SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell("assert total == 6"),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
    ]
    master = tmp_path / "lab.ipynb"
    nbformat.write(nb, str(master))
    staged, items, course = _otter_imported(tmp_path, master)
    assert staged.failing == () and staged.problems == ()
    assert any("is marked manual and has tests: otter's autograder runs them" in n for n in items[0].notes)
    assignment = course.assignment("lab")
    (question,) = assignment.questions
    assert not question.manual and question.points == 2
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    wrong = _edited(assignment.solution, tmp_path / "wrong.ipynb", "np.arange(4).sum()", "np.arange(4).prod()")
    assert grader.grade(assignment, wrong).score == 0


def test_a_test_reading_candidate_files_by_a_computed_path_reads_the_one_the_students_run_wrote(tmp_path):
    """``for answer_file in [...]: expected = pd.read_csv(answer_file)`` in a test's own function
    (UC Santa Barbara EDS 220's q8): each path the test computes reads the file the student's run
    wrote, as in the student's kernel; a wrong file fails."""
    given = "import pandas as pd\ndf = pd.DataFrame({'region': ['a', 'b'], 'catch': [3.0, 5.0]})"
    answer = "### BEGIN SOLUTION\nmeans = df.groupby('region')['catch'].mean()\n### END SOLUTION"
    write = "means.to_csv('means.csv')"
    test = (
        "def check(values):\n"
        "    for answer_file in ['means.csv', 'means_sorted.csv']:\n"
        "        expected = pd.read_csv(answer_file, index_col='region')['catch']\n"
        "        if expected.tolist() == list(values):\n"
        "            return True\n"
        "    return False\n"
        "assert check(means)"
    )
    cells = [
        ("code", given, None),
        ("code", answer, meta("means", solution=True)),
        ("code", write, None),
        ("code", test, meta("t_means", grade=True, locked=True, points=1)),
    ]
    staged, _, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    # The wrong answer's file (no ``region`` index) is read as the student's kernel reads it, and the
    # test fails as it does there.
    wrong = _answered(assignment.skeleton, tmp_path / "wrong.ipynb", {"?": "means = df['catch']"})
    card = grader.grade(assignment, wrong)
    assert card.score == 0 and "raised ValueError: Index region invalid" in card.questions[0].lines[0]


def test_an_empty_test_cell_gives_its_points_to_every_notebook_as_in_nbgrader_and_the_import_says_so(tmp_path):
    answer = "def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
    cells = [
        ("code", answer, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
        ("code", "", meta("t_later", grade=True, locked=True, points=2)),  # a test the instructor never wrote
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any(
        "'t_later' (2 points) has no code: nbgrader gives its points to every notebook" in n for n in items[0].notes
    )
    assignment = course.assignment("ps1")
    card = Grader(course).grade(assignment, assignment.skeleton)
    assert {q.id: q.score for q in card.questions} == {"t_twice": 0, "t_later": 2}


def test_an_ungraded_exercise_left_with_its_placeholder_in_the_solution_is_not_a_missing_answer(tmp_path):
    """A cell outside nbgrader's markers that keeps ``...`` in the source notebook (an exercise the
    course does not grade): the solution runs past it, and the graded answers score as before."""
    answer = "def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
    cells = [
        ("markdown", "**Question 1.** Write an expression equal to 42 (not graded).", None),
        ("code", "...", None),
        ("code", answer, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 1
    assert Grader(course).grade(assignment, assignment.skeleton).score == 0


def test_an_otter_answer_a_person_grades_that_raises_in_the_master_does_not_stop_the_import(tmp_path):
    """q2's answer, graded by a person, raises here (pandas 2 and later refuse ``mean`` over a text
    column): otter runs on past it and scores q1; the import takes the course, that cell is not run."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(
        tmp_path,
        [],
    )
    nb = nbformat.read(str(master), as_version=4)
    nb.cells[2:2] = [nbformat.v4.new_code_cell("df = pd.DataFrame({'g': [1, 1, 2], 't': ['a', 'b', 'c']})")]
    nb.cells += [
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q2\nmanual: true\npoints: 2"),
        nbformat.v4.new_code_cell("means = df.groupby('g')  # SOLUTION\nraise TypeError('no mean of text')"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
    ]
    nbformat.write(nb, str(master))
    (item,) = otter_import.read(master)
    assert [n for n in item.notes if "raises TypeError" in n], item.notes
    assert "skip-grading" in item.notebook.cells[-1].metadata["tags"]
    staged = import_check.stage([item], tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    assert {q["id"]: q.get("manual", False) for q in item.questions} == {"q1": False, "q2": True}


def test_solution_and_hidden_test_markers_closed_by_hashes_pair_with_plain_ones(tmp_path):
    """``### BEGIN SOLUTION ###`` closed by ``### END SOLUTION`` (and the reverse), as nbgrader reads
    any line holding the words."""
    answer = "def f(x):\n    ### BEGIN SOLUTION ###\n    y = 2 * x\n    ### END SOLUTION\n    return y"
    other = "def g(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION ###"
    test = "assert f(2) == 4\n### BEGIN HIDDEN TESTS ###\nassert f(3) == 6\n### END HIDDEN TESTS ###"
    cells = [
        ("code", answer, meta("f", solution=True)),
        ("code", test, meta("t_f", grade=True, locked=True, points=1)),
        ("code", other, meta("g", solution=True)),
        ("code", "assert g(1) == 2", meta("t_g", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    skeleton = assignment.skeleton.read_text()
    assert "2 * x" not in skeleton and "f(3)" not in skeleton
    assert Grader(course).grade(assignment, assignment.solution).score == 2


def test_a_given_cell_importing_a_name_its_library_no_longer_has_does_not_stop_the_import(tmp_path):
    """``from scipy.misc import comb`` (gone from SciPy) in a demo cell: nbgrader runs on past its
    error; the import notes it and the cell is not run when grading."""
    answer = "### BEGIN SOLUTION\nx = 6\n### END SOLUTION"
    cells = [
        ("code", "from math import comb_of_old  # a demo of a library's old function", None),
        ("code", answer, meta("x", solution=True)),
        ("code", "assert x == 6", meta("t_x", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any("cannot import name 'comb_of_old'" in n and "library has changed" in n for n in items[0].notes)
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 1


def test_a_hidden_test_that_sets_a_builtin_aside_holds_over_the_notebooks_names_as_in_the_kernel(tmp_path):
    """``map = None`` in a hidden test, so that ``mymap`` may not call the builtin: nbgrader runs the
    test cell in the kernel, where that binding is the notebook's ``map``, for that test and the later
    ones. A ``mymap`` written with ``map`` fails both, as nbgrader scores it; one without passes."""
    mymap = "def mymap(f, xs):\n    ### BEGIN SOLUTION\n    return [f(x) for x in xs]\n    ### END SOLUTION"
    test = "### BEGIN HIDDEN TESTS\nmap = None\n### END HIDDEN TESTS\nassert mymap(abs, [-1, 2]) == [1, 2]"
    doubled = "def doubled(xs):\n    ### BEGIN SOLUTION\n    return mymap(lambda x: 2 * x, xs)\n    ### END SOLUTION"
    cells = [
        ("code", mymap, meta("mymap", solution=True)),
        ("code", test, meta("t_mymap", grade=True, locked=True, points=1)),
        ("code", doubled, meta("doubled", solution=True)),
        ("code", "assert doubled([1, 2]) == [2, 4]", meta("t_doubled", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert "map = None" not in assignment.skeleton.read_text()  # still hidden
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 2
    nb = nbformat.read(str(assignment.solution), as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("return [f(x) for x in xs]", "return list(map(f, xs))")
    builtin = tmp_path / "builtin.ipynb"
    nbformat.write(nb, str(builtin))
    assert {q.id: q.score for q in grader.grade(assignment, builtin).questions} == {"t_mymap": 0, "t_doubled": 0}


def test_a_later_cell_that_imports_or_sets_a_name_before_using_it_does_not_need_the_earlier_one():
    """What a cell reads from the cells before it: a name it imports or sets before reading (in
    order, into loops and ``with``) is its own."""
    from grader.authoring.environment import outer_reads

    cell = (
        "from statsmodels.nonparametric.smoothers_lowess import lowess\n"
        "for day in bike['weekday'].unique():\n"
        "    ysmooth = lowess(day, bike)\n"
        "    sns.lineplot(x=bike['temp'], y=ysmooth)\n"
        "with open(path) as f:\n"
        "    text = f.read()\n"
        "print(text, total)\n"
        "total = 1\n"
        "%matplotlib inline\n"
    )
    assert outer_reads(cell) == {"bike", "sns", "path", "open", "print", "total"}
    assert outer_reads("while n:\n    print(total)\n    total = 1") == {"n", "print", "total"}


def test_a_notebook_as_nbgrader_released_it_is_named_as_such_and_nothing_is_written(tmp_path):
    stub = "def twice(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    cells = [
        ("code", stub, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
    ]
    src = nbgrader_source(tmp_path, cells)
    with pytest.raises(UsageError, match=r"ps1.ipynb is a notebook as nbgrader releases it to students: .*source/"):
        nbgrader_import.read(src)


def test_a_given_cell_importing_nose_tools_runs_where_nose_is_not_installed(tmp_path):
    """``from nose.tools import assert_equal`` in the course's read-only setup cell (Illinois): the
    helpers the tests are judged with are what it imports, so the solution runs and scores."""
    cells = [
        ("code", "from nose.tools import assert_equal, assert_almost_equal", meta("setup", locked=True)),
        ("code", "### BEGIN SOLUTION\nx = 1.0\n### END SOLUTION", meta("x", solution=True)),
        (
            "code",
            "assert_equal(x, 1.0)\nassert_almost_equal(x, 1.0000001, places=5)",
            meta("t_x", grade=True, locked=True, points=1),
        ),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 1
    assert grader.grade(assignment, assignment.skeleton).score == 0


def test_a_hidden_part_that_sets_up_the_visible_asserts_is_judged_whole(tmp_path):
    """The hidden block binds ``params`` before the visible asserts that read it (Paris): nbgrader
    runs the cell whole, so the visible asserts are judged with the hidden setting, not alone."""
    answer = "def step(x, alpha):\n    ### BEGIN SOLUTION\n    return x - alpha * x\n    ### END SOLUTION\nparams = {'alpha': 3.0}"
    test = (
        "### BEGIN HIDDEN TESTS\nparams = {'alpha': 0.5}\n### END HIDDEN TESTS\n"
        "assert abs(step(1.0, params['alpha']) - 0.5) < 1e-9"
    )
    cells = [
        ("code", answer, meta("step", solution=True)),
        ("code", test, meta("t_step", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert [c.get("hidden", False) for c in items[0].questions[0]["checks"]] == [True]
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 1


def test_a_solution_that_asks_for_input_stops_there_and_the_tests_judge_what_it_defined(tmp_path):
    """``name = input("?")`` after the answer's function, and code using ``name`` (Madrid): nbgrader's
    kernel has no input either, so the cell stops there and the test judges the function; the import
    notes the line, and the solution is not refused for it."""
    answer = (
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\nname = input('Your name? ')\n"
        "if name:\n    print('Hello', name.upper())"
    )
    cells = [
        ("code", answer, meta("f", solution=True)),
        ("code", "assert f() == 1", meta("t_f", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any("`name = input('Your name? ')` asks for input" in n for n in items[0].notes), items[0].notes
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 1


def test_a_written_answer_keeps_its_question_above_the_prompt_and_unchanged_scores_zero(tmp_path):
    """A markdown answer with its question above ``### BEGIN SOLUTION``: students get the question
    and ``YOUR ANSWER HERE`` (as nbgrader releases it), and that cell left unchanged scores 0 there
    as in nbgrader; a written answer waits for a person."""
    written = "Are these two sets standardized? Explain why.\n\n### BEGIN SOLUTION\nOnly the first.\n### END SOLUTION"
    cells = [
        ("code", "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", meta("x", solution=True)),
        ("code", "assert x == 1", meta("t_x", grade=True, locked=True, points=1)),
        ("markdown", written, meta("why", grade=True, solution=True, points=2)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assignment = course.assignment("ps1")
    skeleton = nbformat.read(str(assignment.skeleton), as_version=4)
    [why] = [c for c in skeleton.cells if c.cell_type == "markdown" and "standardized" in c.source]
    assert why.source == "Are these two sets standardized? Explain why.\n\nYOUR ANSWER HERE"
    grader = Grader(course)
    assert {q.id: q.status for q in grader.grade(assignment, assignment.skeleton).questions}["why"] == "unanswered"
    why.source = "Are these two sets standardized? Explain why.\n\nNeither, I think."
    nbformat.write(skeleton, str(tmp_path / "answered.ipynb"))
    assert {q.id: q.status for q in grader.grade(assignment, tmp_path / "answered.ipynb").questions}["why"] == "manual"


def test_an_otter_test_that_prints_and_shows_a_value_compares_both_as_otters_doctest(tmp_path):
    """OkPy's jassign example: the test cell ``str(print(n))`` stored what it printed, ``3``, then
    the value it shows, ``'None'``. otter's doctest compares both, in order; so does the import, and
    a notebook whose ``n`` prints otherwise fails it."""
    from grader.authoring.otter import importer as otter_import

    master = _otter_master(tmp_path, [])
    nb = nbformat.read(str(master), as_version=4)
    nb.cells[5].source = "str(print(n))"
    nb.cells[5].execution_count = 2
    nb.cells[5].outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="3\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "'None'"}, execution_count=2),
    ]
    nbformat.write(nb, str(master))
    items = otter_import.read(master)
    staged = import_check.stage(items, tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    importing.write(items, tmp_path / "c" / "config.yaml", course_name="c")
    course = config.load(tmp_path / "c" / "config.yaml")
    assignment = course.assignment("lab")
    assert Grader(course).grade(assignment, assignment.solution).score == 1
    other = _answered(assignment.skeleton, tmp_path / "o.ipynb", {"n = ?": "n = 4"})
    assert Grader(course).grade(assignment, other).score == 0


def test_a_doubled_end_solution_is_left_out_as_nbgrader_leaves_it_out(tmp_path):
    """Phys 260's plotting answer closes its region twice (``### END SOLUTION`` on two lines):
    nbgrader reads the second as nothing. The import leaves it out too, and says where."""
    answer = "def twice(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n### END SOLUTION"
    cells = [
        ("code", answer, meta("twice", solution=True)),
        ("code", "assert twice(3) == 6", meta("t_twice", grade=True, locked=True, points=1)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assert any("line 5: an END SOLUTION with no region open" in n for n in items[0].notes)
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 1
    assert Grader(course).grade(assignment, assignment.skeleton).score == 0


def test_a_given_cell_reading_data_the_course_does_not_ship_names_the_file_not_a_later_nameerror(tmp_path):
    """A course whose data file is not in its repository (``DATA_PATH = "employee_data.csv"``, then
    ``pd.read_csv(DATA_PATH)``): the import names the cell, the file and the answer that needs it,
    rather than the answer's NameError; without a later use, the cell is run past as nbgrader runs on."""
    load = 'import pandas as pd\nDATA_PATH = "employee_data.csv"\ndf = pd.read_csv(DATA_PATH)'
    cells = [
        ("code", load, {}),
        ("code", "### BEGIN SOLUTION\nn_rows = len(df)\n### END SOLUTION", meta("rows", solution=True)),
        ("code", "assert n_rows > 0", meta("t_rows", grade=True, locked=True, points=1)),
    ]
    src = nbgrader_source(tmp_path, cells)
    with pytest.raises(UsageError) as info:
        nbgrader_import.read(src)
    assert str(info.value) == (
        "ps1.ipynb, cell 1 reads the file employee_data.csv, which is not beside the notebook, and cell 2 uses what "
        "it makes (df): add the file (and list it in the course's files) and import again; nothing "
        "was written"
    )
    (src / "ps1.ipynb").write_text(
        notebook([cells[0], ("code", "n_rows = 3  # SOLUTION", meta("rows", solution=True)), cells[2]])
    )
    (item,) = nbgrader_import.read(src)
    assert (
        "cell 1: reads the file employee_data.csv, which is not beside the notebook; nothing graded uses"
        in " ".join(item.notes)
    )


def test_a_test_cell_ending_in_an_object_of_the_students_earns_its_points(tmp_path):
    """The French k-NN course's test ends in ``monImage``, a PIL image the student's function made,
    which the notebook shows. nbgrader reads points from a number shown there, and gives them all
    for anything else; so does the import, where before the grading stopped on it."""
    given = "class Box:\n    def __init__(self, n):\n        self.n = n"
    answer = "### BEGIN SOLUTION\ndef make(n):\n    return Box(n)\n### END SOLUTION"
    cells = [
        ("code", given, {}),
        ("code", answer, meta("make", solution=True)),
        ("code", "b = make(3)\nassert b.n == 3\nb", meta("t_make", grade=True, locked=True, points=2)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 2
    wrong = _answered(assignment.skeleton, tmp_path / "w.ipynb", {"?": "def make(n):\n    return Box(n + 1)"})
    assert Grader(course).grade(assignment, wrong).score == 0


def test_tests_that_look_inside_objects_unpack_figures_and_catch_printing_grade_as_in_the_kernel(tmp_path):
    """From a blind corpus of test cells (tests/corpora/test_idioms_blind): ``obj.__dict__[...]``,
    ``fig, ax = plt.subplots()`` then the figure as the cell's last line, ``import matplotlib`` then
    ``matplotlib.axes.Axes``, and a helper class that swaps ``sys.stdout`` to catch what the
    student's function prints. Each passes on the solution and fails where the answer is wrong."""
    given = "import io, sys\nimport matplotlib.pyplot as plt\nclass Acct:\n    def __init__(self):\n        self.balance = 0"
    answer = (
        "### BEGIN SOLUTION\nacct = Acct()\ndef greet(n):\n    print('Hello', n)\n"
        "def results():\n    return [1, 2, 3]\n### END SOLUTION"
    )
    tests = {
        "t_dict": 'assert acct.__dict__["balance"] == 0',
        "t_fig": "fig, ax = plt.subplots()\nax.plot(results())\nassert len(ax.lines) == 1 and len(results()) == 3\nfig",
        "t_axes": "import matplotlib\nfig2, ax2 = plt.subplots()\nassert isinstance(ax2, matplotlib.axes.Axes)",
        "t_capsys": "class Cap:\n    def __enter__(self):\n        self.old = sys.stdout\n        sys.stdout = io.StringIO()\n"
        "        return self\n    def __exit__(self, *a):\n        self.out = sys.stdout.getvalue()\n        sys.stdout = self.old\n"
        'with Cap() as c:\n    greet("Ann")\nassert c.out == "Hello Ann\\n", c.out',
    }
    cells = [("code", given, {}), ("code", answer, meta("ans", solution=True))]
    cells += [("code", t, meta(k, grade=True, locked=True, points=1)) for k, t in tests.items()]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 4
    wrong = "acct = Acct()\nacct.balance = 5\ndef greet(n):\n    print('Hi', n)\ndef results():\n    return [1, 2]"
    card = Grader(course).grade(assignment, _answered(assignment.skeleton, tmp_path / "w.ipynb", {"?": wrong}))
    assert {q.id: q.score for q in card.questions} == {"t_dict": 0, "t_fig": 0, "t_axes": 1, "t_capsys": 0}


def test_a_stream_swapped_in_a_tuple_and_a_score_added_up_grade_as_in_the_kernel(tmp_path):
    """Two more from the blind corpus: ``self.old, sys.stdout = sys.stdout, io.StringIO()`` in a
    capsys-like helper (before, the grader's copy dropped the statement as a change to a library),
    and ``score = 0.0`` then ``score += check(...)`` ending in ``score`` (before, the student's copy
    of the test kept the additions without the ``score = 0.0`` they add to)."""
    answer = (
        "### BEGIN SOLUTION\ndef greet(name, times=1):\n    for _ in range(times):\n        print(f'Hello, {name}!')\n"
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s.lower())\n### END SOLUTION"
    )
    capsys = (
        "import io, sys\nclass capsys:\n    def __enter__(self):\n        self.old, sys.stdout = sys.stdout, io.StringIO()\n"
        "        return self\n    def __exit__(self, *exc):\n        self.out = sys.stdout.getvalue()\n"
        "        sys.stdout = self.old\nwith capsys() as cap:\n    greet('Bob', times=3)\n"
        "assert cap.out.count('Hello, Bob!') == 3, cap.out"
    )
    partial = (
        "def check(f, *args, expected):\n    try:\n        return f(*args) == expected\n    except Exception as e:\n"
        "        print(f.__name__, 'raised', repr(e))\n        return False\n\nscore = 0.0\n"
        "score += check(count_vowels, 'Education', expected=5)\nscore += check(count_vowels, 'xyz', expected=0)\n"
        "score"
    )
    cells = [
        ("code", "import math", {}),
        ("code", answer, meta("ans", solution=True)),
        ("code", capsys, meta("t_greet", grade=True, locked=True, points=1)),
        ("code", partial, meta("t_partial", grade=True, locked=True, points=2)),
    ]
    staged, items, course = imported(tmp_path, nbgrader_source(tmp_path, cells))
    assert staged.failing == () and staged.problems == ()
    assignment = course.assignment("ps1")
    assert Grader(course).grade(assignment, assignment.solution).score == 3
    wrong = "def greet(name, times=1):\n    print(f'Hello, {name}!')\ndef count_vowels(s):\n    return sum(c in 'aeiou' for c in s)"
    card = Grader(course).grade(assignment, _answered(assignment.skeleton, tmp_path / "w.ipynb", {"?": wrong}))
    assert {q.id: q.score for q in card.questions} == {"t_greet": 0, "t_partial": 1}
