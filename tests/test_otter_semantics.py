"""otter-grader's semantics, on a master notebook of our own that uses each of its idioms: the
assignment config's seed (every cell seeded when otter grades, or a seed variable set), success and
failure messages, exception-based test files and test cells (``@test_case`` functions taking
``env``), a notebook that defines its own ``sum``, and otter's own cells in a submission
(``otter.Notebook``, ``grader.check``, ``grader.export``), which grade as if absent."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import pytest
import yaml

from grader.authoring import importing
from grader.authoring.otter import importer as otter_import
from grader.authoring.otter import ok as otter_ok
from grader.course import config
from grader.judge.grading import Grader

SEED = 42
# np.random.seed(42); np.random.rand(3), as otter's seeded cell gives it (its doctest output).
DRAWN = "array([0.37454012, 0.95071431, 0.73199394])"

OK_FILE = """test = {"name": "q_ok", "points": 2, "suites": [{"type": "doctest", "setup": "", "teardown": "", "cases": [
    {"code": ">>> scale(2)\\n4", "hidden": False, "success_message": "scale doubles", "failure_message": "scale must double"},
    {"code": ">>> scale(0)\\n0"},
]}]}
"""

EXCEPTION_FILE = """from otter.test_files import test_case
import numpy as np

OK_FORMAT = False

name = "q_exc"
points = 3

@test_case(points=1, hidden=False, success_message="shape checked")
def test_shape(env):
    assert env["table"].shape == (2, 2)

@test_case(points=2, hidden=False, failure_message="rows must sum to one")
def test_rows(table, np_sum=None):
    assert np.allclose(table.sum(axis=1), 1), f"row sums {table.sum(axis=1)}"
"""


def _cell(kind: str, source: str, output: str | None = None) -> nbformat.NotebookNode:
    if kind == "raw":
        return nbformat.v4.new_raw_cell(source)
    if kind == "md":
        return nbformat.v4.new_markdown_cell(source)
    cell = nbformat.v4.new_code_cell(source)
    if output is not None:
        cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": output}, execution_count=1)]
    return cell


def master(path: Path) -> Path:
    cells = [
        ("raw", f"# ASSIGNMENT CONFIG\nname: lab\ngenerate:\n    seed: {SEED}\nfiles:\n    - data/w.csv\n"),
        (
            "code",
            "import numpy as np\nimport otter\ngrader = otter.Notebook('lab.ipynb')\n"
            "w = np.loadtxt('data/w.csv', delimiter=',')",
        ),
        ("raw", "# BEGIN QUESTION\nname: q_seed\npoints: 1"),
        ("code", f"np.random.seed({SEED}) # SEED\nx = np.random.rand(3) # SOLUTION"),
        ("raw", "# BEGIN TESTS"),
        ("code", "x", DRAWN),
        ("raw", "# END TESTS"),
        ("raw", "# END QUESTION"),
        ("raw", "# BEGIN QUESTION\nname: q_msg\npoints: 2"),
        ("code", "def sum(a, b):\n    return a + b # SOLUTION"),
        ("raw", "# BEGIN TESTS"),
        (
            "code",
            '""" # BEGIN TEST CONFIG\npoints: 1\nsuccess_message: well summed\n'
            'failure_message: sum adds its two arguments\n""" # END TEST CONFIG\nassert sum(1, 2) == 3',
        ),
        ("code", "# HIDDEN\nassert sum(-1, 1) == 0"),
        ("raw", "# END TESTS"),
        ("raw", "# END QUESTION"),
        ("code", "def scale(v):\n    return 2 * v # SOLUTION"),
        ("code", "table = np.array([[0.5, 0.5], [0.25, 0.75]]) # SOLUTION"),
        ("code", "grader.export(pdf=False)"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [_cell(*c) for c in cells]
    nbformat.write(nb, str(path))
    (path.parent / "data").mkdir()
    (path.parent / "data/w.csv").write_text("1,2\n3,4\n")
    (path.parent / "tests").mkdir()
    (path.parent / "tests/q_ok.py").write_text(OK_FILE)
    (path.parent / "tests/q_exc.py").write_text(EXCEPTION_FILE)
    return path


def submission(path: Path, *, x: str, total: str, scale: str, table: str) -> Path:
    # As otter releases it: no ``# SEED`` line; otter's own cells kept, as students leave them.
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(s)
        for s in [
            "import numpy as np\nimport otter\ngrader = otter.Notebook('lab.ipynb')\nw = np.loadtxt('data/w.csv', delimiter=',')",
            "noise = np.random.rand(5)  # draws of the student's own, before the answer",
            x,
            'grader.check("q_seed")',
            total,
            'grader.check("q_msg")',
            scale,
            table,
            "grader.check_all()",
            "grader.export(pdf=False)",
        ]
    ]
    nbformat.write(nb, str(path))
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("otter")
    items = otter_import.read(master(root / "master/lab.ipynb"))
    importing.write(items, root / "config.yaml", course_name="otter")
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)


def grade(lab, name: str, **answers: str) -> dict:
    root, course, grader = lab
    card = grader.grade(course.assignment("lab"), submission(root / f"{name}.ipynb", **answers))
    return {q.id: q for q in card.questions}


RIGHT = {
    "x": "x = np.random.rand(3)",
    "total": "def sum(a, b):\n    return a + b",
    "scale": "def scale(v):\n    return v * 2",
    "table": "table = np.array([[0.5, 0.5], [0.3, 0.7]])",
}


def test_the_import_reads_otters_seed_messages_and_test_files(lab):
    root, _, _ = lab
    section = yaml.safe_load((root / "config.yaml").read_text())["assignments"]["lab"]
    assert section["seed_each_cell"] == SEED
    assert section["inert_lines"] == list(otter_import.INERT_LINES)  # otter's own lines, run as ``pass``
    # A data file stays in its folder, where the notebook reads it (the solution's run reads it there).
    assert section["data"] == ["data/w.csv"] and (root / "solutions/lab/data/w.csv").is_file()
    qs = {q["id"]: q for q in section["questions"]}
    solution = nbformat.read(str(root / "solutions/lab/lab.ipynb"), as_version=4)
    after_q_msg = next(c.id for c in solution.cells if c.source.startswith("def scale"))
    assert qs["q_msg"]["checks"][0] == {
        "test": "assert sum(1, 2) == 3",
        "success_message": "well summed",
        "failure_message": "sum adds its two arguments",
        "points": 1,
        "notebook_names": ["sum"],
        "seed": SEED,
        "after_line": 'grader.check("q_msg")',  # taken where the student's notebook checks the question,
        "at_cell": after_q_msg,  # and where the question ends in a notebook without the call (the solution's)
    }
    assert {c["after_line"] for c in qs["q_ok"]["checks"]} == {'grader.check("q_ok")'}  # a test file's too
    # The question's other point goes to the test without points of its own, as otter resolves them.
    assert [c["points"] for c in qs["q_msg"]["checks"]] == [1, 1] and qs["q_msg"]["checks"][1]["hidden"] is True
    # An OK-format case is hidden unless it says otherwise; exception-based cases keep their points.
    assert [(c.get("hidden", False), c["points"]) for c in qs["q_ok"]["checks"]] == [(False, 1), (True, 1)]
    assert [c["points"] for c in qs["q_exc"]["checks"]] == [1, 2]
    assert "def test_rows():" in qs["q_exc"]["checks"][1]["test"]


def test_a_correct_submission_grades_as_otter_grades_it(lab):
    qs = grade(lab, "right", **RIGHT)
    assert {k: q.score for k, q in qs.items()} == {"q_seed": 1, "q_msg": 2, "q_ok": 2, "q_exc": 3}
    # Success messages after the verdict, as otter prints them under "All test cases passed!".
    assert qs["q_msg"].lines == ["Correct.", "well summed"]
    assert qs["q_ok"].lines == ["Correct.", "scale doubles"]
    assert qs["q_exc"].lines == ["Correct.", "shape checked"]


def test_mistakes_show_the_authors_messages_and_never_a_hidden_value(lab):
    qs = grade(
        lab,
        "wrong",
        x="x = np.random.rand(3) + 0.5",
        total="def sum(a, b):\n    return a + b + (a > 0)",
        scale="def scale(v):\n    return v * 2 + (v > 0)",
        table="table = np.array([[0.5, 0.5], [0.5, 0.75]])",
    )
    assert {k: q.score for k, q in qs.items()} == {"q_seed": 0, "q_msg": 1, "q_ok": 1, "q_exc": 1}
    assert qs["q_msg"].lines[0] == "sum adds its two arguments"
    assert qs["q_ok"].lines[0] == "scale must double"
    # The assert's own message calls the student's code, which the student's copy of the test never runs
    # for a message: the grader says how the value differs instead.
    assert qs["q_exc"].lines[0] == "rows must sum to one"
    assert (
        qs["q_exc"]
        .lines[1]
        .startswith(
            "`np.allclose(table.sum(axis=1), 1)` does not hold: `table.sum(axis=1)`: "
            "1 / 2 elements (50.0%) differ beyond tolerance"
        )
    )
    assert qs["q_exc"].lines[-1] == "shape checked"


def test_a_question_is_checked_where_the_notebook_calls_grader_check(lab):
    """otter runs a question's tests at each ``grader.check`` call (the last counting), and on the
    final environment only those never called: a later cell that reassigns the answer changes
    nothing for a checked question, and fails one never checked."""
    root, course, grader = lab
    cells = [
        "import numpy as np\nimport otter\ngrader = otter.Notebook('lab.ipynb')",
        RIGHT["x"],
        "grader.check('q_seed')",  # otter writes double quotes: the same call
        RIGHT["total"],
        RIGHT["scale"],
        RIGHT["table"],
        "x = np.zeros(3)  # a later experiment reuses the name",
    ]

    def q_seed(name: str, sources: list[str]) -> float:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
        nbformat.write(nb, str(root / f"{name}.ipynb"))
        card = grader.grade(course.assignment("lab"), root / f"{name}.ipynb")
        return next(q.score for q in card.questions if q.id == "q_seed")

    assert q_seed("checked", cells) == 1
    assert q_seed("never_checked", [c for c in cells if "grader.check" not in c]) == 0


def test_a_seed_variable_is_set_before_every_cell(tmp_path):
    nb = tmp_path / "solutions/hw/hw.ipynb"
    nb.parent.mkdir(parents=True)
    cells = ["import numpy as np", "rng_seed = 42", "rng = np.random.default_rng(rng_seed)\ny = rng.random(2)"]
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "course": {"name": "s"},
                "assignments": {
                    "hw": {
                        "variants": {"count": 0},
                        "seed_each_cell": {"variable": "rng_seed", "value": 7},
                        "questions": [
                            {
                                "id": "q",
                                "points": 1,
                                "checks": [{"test": "assert np.allclose(y, np.random.default_rng(7).random(2))"}],
                            }
                        ],
                    }
                },
            }
        )
    )
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(book, str(nb))
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    # The student's copy sets its own value (otter's student_value); otter's grading sets 7 before each cell.
    book.cells[1].source = "rng_seed = 90"
    nbformat.write(book, str(tmp_path / "student.ipynb"))
    card = Grader(course).grade(course.assignment("hw"), tmp_path / "student.ipynb")
    assert card.questions[0].score == 1, card.questions[0].lines


@pytest.mark.parametrize(
    ("points", "own", "expected"),
    [
        (None, [None, None], [0.5, 0.5]),  # no points anywhere: the test is worth 1
        (None, [2, None], [2, 0]),  # some cases give points: the others 0
        (3, [2, None, None], [2, 0.5, 0.5]),
        ([1, 2], [None, None], [1, 2]),
        ({"each": 2}, [None, None, None], [2, 2, 2]),
    ],
)
def test_points_are_resolved_as_otter_resolves_them(points, own, expected):
    assert otter_ok.shares(points, [{"points": p} for p in own]) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("np.True_", "assert np.isclose(r, 1)"),  # NumPy 2's repr in a master notebook: a boolean, on any NumPy
        ("np.False_", "assert not (np.isclose(r, 1))"),
        ("True", "assert np.isclose(r, 1)"),
    ],
)
def test_a_stored_boolean_is_compared_as_a_boolean(output, expected):
    assert otter_import.expected_assert("np.isclose(r, 1)", output) == (expected, None)


def test_a_master_notebook_without_its_solutions_is_named_as_such(tmp_path):
    # Some published otter courses keep only the released notebook (`z = ...`): the import says so.
    from grader.errors import SolutionError

    (tmp_path / "solutions/hw").mkdir(parents=True)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("import numpy as np"), nbformat.v4.new_code_cell("z = ...")]
    nbformat.write(book, str(tmp_path / "solutions/hw/hw.ipynb"))
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "course": {"name": "b"},
                "assignments": {
                    "hw": {
                        "variants": {"count": 0},
                        "questions": [{"id": "q", "points": 1, "checks": [{"test": "assert z > 1"}]}],
                    }
                },
            }
        )
    )
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    with pytest.raises(
        SolutionError,
        match=r"leaves a blank to fill in cell 2 \(`\?`, `\.\.\.` or a `raise NotImplementedError\(\)` stub\): the solution "
        "must hold every answer",
    ):
        Grader(course).grade(course.assignment("hw"), tmp_path / "solutions/hw/hw.ipynb")


def test_the_students_own_check_seeds_the_cells_as_grading_does(tmp_path):
    import json

    import numpy as np

    from grader import capture, selfcheck
    from grader.authoring.public import public_checks
    from grader.run.subprocess_executor import SubprocessExecutor

    nb = tmp_path / "solutions/hw/hw.ipynb"
    nb.parent.mkdir(parents=True)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(c) for c in ["import numpy as np", "x = np.random.rand(3)"]]
    nbformat.write(book, str(nb))
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "course": {"name": "s"},
                "assignments": {
                    "hw": {
                        "variants": {"count": 0},
                        "seed_each_cell": SEED,
                        "questions": [{"id": "q", "points": 1, "checks": [{"value": "x", "public": True}]}],
                    }
                },
            }
        )
    )
    assignment = config.load(tmp_path / "config.yaml").assignment("hw")
    expected = capture.decode(capture.encode(np.random.RandomState(SEED).rand(3), budget=[1 << 20]))
    from grader.run.job import Captured

    data = public_checks(assignment, {"q/0": Captured(value=expected)})
    assert data["seed_each_cell"] == {"seed": SEED, "variable": ""}
    (tmp_path / "public_checks.json").write_text(json.dumps(data))
    book.cells.insert(1, nbformat.v4.new_code_cell("noise = np.random.rand(7)"))  # draws of the student's own
    nbformat.write(book, str(tmp_path / "mine.ipynb"))
    verdicts = selfcheck.check_notebook(
        tmp_path / "mine.ipynb", selfcheck.load(tmp_path / "public_checks.json"), executor=SubprocessExecutor()
    )  # one run: no server to start
    assert [(v.id, v.status) for v in verdicts] == [("q", "passed")]


def test_a_tools_own_lines_are_inert_by_the_courses_setting_alone(lab, tmp_path):
    """otter's lines in a submission run as ``pass`` because the import wrote them as the
    assignment's ``inert_lines``: the grader reads that setting, for any tool's lines, and nothing else."""
    from grader import notebook

    _, course, grader = lab
    cell = "import numpy as np\nimport otter\ngrader = otter.Notebook('lab.ipynb')\nw = 1"
    inert = course.assignment("lab").inert_lines
    assert notebook.without_inert_lines(cell, inert) == "import numpy as np\npass\npass\nw = 1"
    assert notebook.without_inert_lines(cell, ()) == cell
    assert (
        notebook.without_inert_lines("if ok:\n    tool.submit(1)\n", (r"tool\.submit\(.*\)",)) == "if ok:\n    pass\n"
    )
    # Without the setting, otter's lines run: its import fails in the student's notebook, and the
    # cells that use ``grader`` after it fail too.
    plain = dataclasses.replace(course.assignment("lab"), inert_lines=())
    path = submission(tmp_path / "sub.ipynb", **RIGHT)
    assert not grader.grade(course.assignment("lab"), path).execution.errors
    (error,) = grader.grade(plain, path).execution.errors
    assert (error.cell, error.error, error.blocked_cells) == (
        1,
        "ModuleNotFoundError: No module named 'otter'",
        (4, 6, 9, 10),
    )


def test_inert_lines_must_be_regular_expressions(tmp_path):
    nb = tmp_path / "solutions/hw/hw.ipynb"
    nb.parent.mkdir(parents=True)
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(book, str(nb))
    section = {
        "inert_lines": ["grader.check("],
        "questions": [{"id": "q", "points": 1, "checks": [{"value": "x"}]}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"course": {"name": "c"}, "assignments": {"hw": section}}))
    with pytest.raises(config.ConfigError) as err:
        config.load(tmp_path / "config.yaml")
    assert str(err.value) == (
        f"{tmp_path / 'config.yaml'}:4: assignments.hw.inert_lines[0] is not a regular expression: "
        "missing ), unterminated subpattern at position 12"
    )


def test_files_naming_folders_and_globs_are_copied_whole(tmp_path):
    """ASSIGNMENT CONFIG's ``files`` as otter copies them: a folder whole (nested too), a glob, a file."""
    nb = nbformat.v4.new_notebook()
    config_cell = (
        "# ASSIGNMENT CONFIG\nname: lab\nfiles:\n    - data\n    - extra/*.txt\n    - notes.md\n    - absent\n"
    )
    nb.cells = [
        _cell("raw", config_cell),
        _cell("code", "import pandas as pd\nframe = pd.read_csv('data/sub/a.csv')"),
        _cell("raw", "# BEGIN QUESTION\nname: q1\npoints: 1"),
        _cell("code", "n = len(frame) # SOLUTION"),
        _cell("raw", "# BEGIN TESTS"),
        _cell("code", "assert n == 1"),
        _cell("raw", "# END TESTS"),
        _cell("raw", "# END QUESTION"),
    ]
    for rel, text in {
        "data/top.csv": "x\n1\n",
        "data/sub/a.csv": "x\n2\n",
        "data/.hidden": "",
        "extra/one.txt": "1",
        "extra/two.md": "2",
        "notes.md": "n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    nbformat.write(nb, str(tmp_path / "lab.ipynb"))
    (item,) = otter_import.read(tmp_path / "lab.ipynb")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in item.data) == [
        "data/sub/a.csv",
        "data/top.csv",
        "extra/one.txt",
        "notes.md",
    ]
    assert any("absent, listed in ASSIGNMENT CONFIG's files, is no file or folder" in n for n in item.notes)
    importing.write([item], tmp_path / "course" / "config.yaml", course_name="c")
    assert (tmp_path / "course/solutions/lab/data/sub/a.csv").read_text() == "x\n2\n"


def test_checks_a_test_imports_from_a_module_in_files_are_written_into_it(tmp_path):
    """A test that hands the student's function to a check of the course's module (``files:``)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _cell("raw", "# ASSIGNMENT CONFIG\nname: lab\nfiles:\n    - checks.py\n"),
        _cell("raw", "# BEGIN QUESTION\nname: q1\npoints: 1"),
        _cell("code", "def double(x):\n    return 2 * x # SOLUTION"),
        _cell("raw", "# BEGIN TESTS"),
        _cell("code", "from checks import check_double\n_ = check_double(double)"),
        _cell("raw", "# END TESTS"),
        _cell("raw", "# END QUESTION"),
    ]
    (tmp_path / "checks.py").write_text("def check_double(f):\n    assert f(3) == 6\n")
    nbformat.write(nb, str(tmp_path / "lab.ipynb"))
    (item,) = otter_import.read(tmp_path / "lab.ipynb")
    (test,) = [c["test"] for q in item.questions for c in q.get("checks", ()) if "test" in c]
    assert "def check_double(f):" in test and "from checks import" not in test


@pytest.mark.parametrize(
    "end",
    ['""" # END PROMPT', '"""; # END PROMPT', '# END PROMPT """', '## END PROMPT """', '# END PROMPT\n"""'],
)
def test_a_code_prompt_ends_in_every_shape_otter_reads(end):
    """Berkeley's Data Science Capstone closes its prompts with the quotes after ``# END PROMPT``, on
    that line or the next; otter reads each as the shape it documents, and so does the import: the
    prompt is not the solution's code, and what follows it is."""
    source = f'""" # BEGIN PROMPT\nx = ...\n{end}\n# BEGIN SOLUTION NO PROMPT\nx = 2\n# END SOLUTION\ny = x + 1'
    assert otter_import.solution_code(source) == "# BEGIN SOLUTION\nx = 2\n# END SOLUTION\ny = x + 1"


def test_closing_quotes_are_dropped_only_right_after_the_prompt():
    source = '""" # BEGIN PROMPT\nx = ...\n# END PROMPT\nx = 2  # SOLUTION\ns = """\n"""'
    assert otter_import.solution_code(source) == 'x = 2  # SOLUTION\ns = """\n"""'
