"""otter-grader's first master-notebook format (``otter assign --v0``, otter 1 to 4), imported and
graded as otter grades it. The fixture is written from otter's documented v0 format: a Markdown
``BEGIN ASSIGNMENT`` block (``generate: {seed: 88}``, ``requirements``), Markdown ``BEGIN QUESTION``
blocks (``points``, ``manual``), ``## Ignore ##`` cells that reseed, ``# SOLUTION`` lines, a written
``**SOLUTION**`` answer, ``## Test ##`` / ``# TEST`` / ``## Hidden Test ##`` cells whose stored output
is the expected one, a hidden test that reseeds and calls the student's own random function many
times, and a later cell that reuses an answer's name. Submissions are made as otter releases the
notebook (``import otter``, ``...`` answers, ``grader.check("q1")`` after each question)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import nbformat
import pytest
import yaml

from grader import cli
from grader.authoring import importing
from grader.authoring.otter import importer as otter_import
from grader.authoring.otter import v0
from grader.course import config
from grader.errors import UsageError
from grader.judge.grading import Grader

V4 = nbformat.v4
FENCE = "```"


def md(source: str):
    return V4.new_markdown_cell(source)


def code(source: str, output: str | None = None):
    cell = V4.new_code_cell(source)
    if output is not None:
        cell.outputs = [V4.new_output("execute_result", {"text/plain": output}, execution_count=1)]
    return cell


PIVOT = "def one_pivot(n, p):\n    return 1*(np.random.binomial(n=n, p=p) == n/2)"
LATER = "rate = sum(one_pivot(n=50, p=.5) for _ in range(200))/200  # an experiment reusing the name"
MASTER = [
    md(f"{FENCE}\nBEGIN ASSIGNMENT\nrequirements: requirements.txt\ngenerate:\n    seed: 88\n{FENCE}"),
    md("# Lab 3: pivotal voters"),
    code("import numpy as np"),
    md(f"**Question 1.** Flip 100 fair coins.\n{FENCE}\nBEGIN QUESTION\nname: q1\npoints: 2\n{FENCE}"),
    code("## Ignore ##\nnp.random.seed(88)"),
    code("flips = np.random.binomial(n=100, p=.5) # SOLUTION\nflips", "47"),
    code("## Test ##\n0 <= flips <= 100", "True"),
    code("## Hidden Test ##\nnp.random.seed(88)\nflips == np.random.binomial(n=100, p=.5)", "True"),
    md(f"{FENCE}\nBEGIN QUESTION\nname: q2\nmanual: true\npoints: 1\n{FENCE}\n**Question 2.** Why seed?"),
    md("**SOLUTION**: so that every run draws the same numbers."),
    code(PIVOT),
    md(f"**Question 3.** How often is a voter pivotal among 10?\n{FENCE}\nBEGIN QUESTION\nname: q3\n{FENCE}"),
    code("## Ignore ##\nnp.random.seed(88)"),
    code(
        "trials = [one_pivot(n=10, p=.5) for _ in range(200)] # SOLUTION\nrate = sum(trials)/200 #SOLUTION\nrate",
        "0.245",
    ),
    code("# TEST\n0 <= rate <= 1", "True"),
    code(
        "## Hidden Test ##\nnp.random.seed(88)\nassert trials == [one_pivot(n=10, p=.5) for _ in range(200)]\n"
        "assert rate == sum(trials)/200"
    ),
    code(f"{LATER}\nshown = True # IGNORE\n# BEGIN IGNORE\nprint('instructor only')\n# END IGNORE"),
]
# A conda export saved as requirements.txt (``conda list --export``).
CONDA = (
    "# This file may be used to create an environment using:\n# $ conda create --name <env> --file <this file>\n"
    "# platform: linux-64\n_libgcc_mutex=0.1=main\nblas=1.0=mkl\nnumpy=1.20.2=pypi_0\n"
    "scipy=1.6.2=py38h91f5cce_0\nseaborn=0.11.1=pyhd3eb1b0_0\nmatplotlib=3.4.1=pypi_0\n"
    "matplotlib-base=3.3.4=py38h62a2d02_0\n"
)


def write_master(path: Path, cells=MASTER) -> Path:
    nb = V4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    (path.parent / "requirements.txt").write_text(CONDA)
    return path


def released(path: Path, flips: str = "...", trials: str = "...", rate: str = "...") -> Path:
    """The notebook otter assign --v0 releases, with the student's answers."""
    nb = V4.new_notebook()
    nb.cells = [
        code('# Initialize Otter\nimport otter\ngrader = otter.Notebook("lab3.ipynb")'),
        md("# Lab 3: pivotal voters"),
        code("import numpy as np"),
        md("**Question 1.** Flip 100 fair coins."),
        code(f"flips = {flips}\nflips"),
        code('grader.check("q1")'),
        md("**Question 2.** Why seed?"),
        md("_Type your answer here, replacing this text._"),
        code(PIVOT),
        md("**Question 3.** How often is a voter pivotal among 10?"),
        code(f"trials = {trials}\nrate = {rate}\nrate"),
        code('grader.check("q3")'),
        code(LATER),
        code("grader.export(pdf=False)"),
    ]
    nbformat.write(nb, str(path))
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("otter_v0")
    items = otter_import.read(write_master(root / "master/lab3.ipynb"))
    importing.write(items, root / "config.yaml", course_name="ps")
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, items[0], course, Grader(course)


def scores(lab, name: str, **answers: str) -> dict[str, float]:
    root, _, course, grader = lab
    card = grader.grade(course.assignment("lab3"), released(root / f"{name}.ipynb", **answers))
    return {q.id: q.score for q in card.questions if q.id != "q2"}


def test_the_first_format_is_read_as_otter_4_reads_it(lab):
    root, item, _, _ = lab
    section = yaml.safe_load((root / "config.yaml").read_text())["assignments"]["lab3"]
    qs = {q["id"]: q for q in section["questions"]}
    assert list(qs) == ["q1", "q2", "q3"]
    assert section["seed_each_cell"] == 88  # generate: {seed: 88}: every cell seeded, as otter grades
    # q1: 2 points shared by its public and its hidden test; q3: otter's default 1 point.
    assert [(c["points"], c.get("hidden", False)) for c in qs["q1"]["checks"]] == [(1, False), (1, True)]
    assert qs["q1"]["checks"][0]["test"] == "assert 0 <= flips <= 100"  # stored output True: an assert
    assert qs["q2"] == {"id": "q2", "title": "q2 (graded by a person)", "points": 1, "manual": True}
    assert qs["q3"]["points"] == 1 and [c.get("hidden", False) for c in qs["q3"]["checks"]] == [False, True]
    solution = nbformat.read(str(root / "solutions/lab3/lab3.ipynb"), as_version=4)
    text = "\n".join(c.source for c in solution.cells)
    # The Ignore cells, the ignored lines and the BEGIN ASSIGNMENT block are otter's alone.
    assert "Ignore" not in text and "instructor only" not in text and "shown" not in text
    assert "BEGIN ASSIGNMENT" not in text and "BEGIN QUESTION" not in text and "## Test" not in text
    skeleton = nbformat.read(str(root / "assignments/lab3/lab3.ipynb"), as_version=4)
    blanks = "\n".join(c.source for c in skeleton.cells)
    assert "flips = ?" in blanks and "rate = ?" in blanks and "np.random.binomial(n=100" not in blanks
    assert "every run draws" not in blanks  # the written answer is the solution's only
    # The conda export is read as pip reads requirements: C libraries dropped, pure-Python and
    # PyPI builds pinned, a build compiled for another Python not (pip's own version of it).
    assert item.requirements == ["numpy==1.20.2", "scipy", "seaborn==0.11.1", "matplotlib==3.4.1"]


def test_submissions_made_on_otters_release_score_as_otter_scores_them(lab):
    right = {"flips": "np.random.binomial(n=100, p=.5)", "trials": "[one_pivot(n=10, p=.5) for _ in range(200)]"}
    right["rate"] = "sum(trials)/200"
    # Checked at grader.check("q3"): the later cell that reuses ``rate`` changes nothing.
    assert scores(lab, "correct", **right) == {"q1": 2, "q3": 1}
    assert scores(lab, "unanswered") == {"q1": 0, "q3": 0}
    # The public test passes, the hidden one (the seeded draw) does not: one of two points.
    assert scores(lab, "early", **{**right, "flips": "np.random.binomial(n=100, p=.6)"}) == {"q1": 1, "q3": 1}
    late = {**right, "trials": "[one_pivot(n=12, p=.5) for _ in range(200)]"}
    assert scores(lab, "late", **late) == {"q1": 2, "q3": 0.5}


def test_the_solution_scores_full_marks_with_the_question_checked_where_it_ends(lab):
    _, _, course, grader = lab
    assignment = course.assignment("lab3")
    card = grader.grade(assignment, assignment.solution)
    # No grader.check call in the solution: q3 is checked where the question ends, before the
    # later cell reassigns ``rate`` (at the end of the notebook it would fail).
    assert {q.id: q.score for q in card.questions if q.id != "q2"} == {"q1": 2, "q3": 1}


def test_a_notebook_in_no_format_it_reads_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    plain = tmp_path / "plain.ipynb"
    write_master(plain, [md("# Notes"), code("x = 1")])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["import", "otter", str(plain)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip() == (
        "grader: plain.ipynb is in no otter format: neither otter assign's raw cells ('# ASSIGNMENT CONFIG', "
        "'# BEGIN QUESTION') nor its first format's ```BEGIN QUESTION``` Markdown blocks; nothing was imported"
    )
    assert not (tmp_path / "config.yaml").exists()
    first = tmp_path / "first.ipynb"
    write_master(first, [MASTER[0], code("x = 1")])
    with pytest.raises(UsageError, match=r"^first.ipynb is in otter's first format \(otter assign --v0\) but has no"):
        otter_import.read(first)
    typed = tmp_path / "typed.ipynb"
    write_master(typed, [md("# BEGIN QUESTION\nname: q1"), code("x = 1")])
    with pytest.raises(UsageError, match=r"^typed.ipynb, cell 1: '# BEGIN QUESTION' is in a markdown cell"):
        otter_import.read(typed)


def test_a_structure_otter_refuses_is_refused_naming_the_cell():
    nb = V4.new_notebook()
    nb.cells = [MASTER[0], code("## Test ##\nx == 1", "True")]
    with pytest.raises(UsageError, match=r"^lab.ipynb, cell 2: a test cell \(## Test ##\) outside any question"):
        v0.as_raw_cells(nb, "lab.ipynb")
    nb.cells = [md(f"{FENCE}\nBEGIN QUESTION\nname: 2a\n{FENCE}"), code("x = 1 # SOLUTION")]
    with pytest.raises(UsageError, match=r"^lab.ipynb, cell 1: its question has no name otter accepts"):
        v0.as_raw_cells(nb, "lab.ipynb")
    nb.cells = [md(f"{FENCE}\nBEGIN QUESTION\nname: q1\n")]
    with pytest.raises(UsageError, match=r"never closed"):
        v0.as_raw_cells(nb, "lab.ipynb")


def test_messages_name_cells_as_the_master_notebook_numbers_them(tmp_path):
    cells = [*MASTER[:8], code("import widgetlib_not_here as wl"), code("w = wl.slider()")]
    with pytest.raises(UsageError) as info:
        otter_import.read(write_master(tmp_path / "lab3.ipynb", cells))
    # The solution written would hold these as its cells 5 and 6 (the blocks and Ignore cells are otter's).
    assert str(info.value).startswith(
        "lab3.ipynb, cell 9 needs the module widgetlib_not_here, which is not installed here, and cell 10 uses"
    )
