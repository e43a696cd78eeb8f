"""What a course declares about its environment, at import: its requirements (a requirements.txt or
environment.yml beside an nbgrader course, otter's ``requirements``), a module grading lacks used
by a cell nothing graded depends on (the import goes on, and says which line installs it) or by one
something depends on (the import stops, naming the notebook, the cell and the line, and writes
nothing), and a kernelspec naming another kernel."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbgrader_course import meta, notebook

from grader.authoring import importing
from grader.authoring.nbgrader import importer as nbgrader_import
from grader.authoring.otter import importer as otter_import
from grader.course import config
from grader.errors import UsageError
from grader.judge.grading import Grader

DOUBLE = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"
WIDGET = "import widgetlib_not_here as wl\nwl.interact(double)"


def course(root: Path, cells: list, *, kernel: dict | None = None, files: dict[str, str] | None = None) -> Path:
    src = root / "source" / "ps1"
    src.mkdir(parents=True)
    text = notebook(cells)
    if kernel is not None:
        nb = json.loads(text)
        nb["metadata"]["kernelspec"] = kernel
        text = json.dumps(nb)
    (src / "ps1.ipynb").write_text(text)
    for rel, body in (files or {}).items():
        (root / rel).write_text(body)
    return src


BASE = [
    ("code", DOUBLE, meta("double", solution=True)),
    ("code", "assert double(2) == 4", meta("test_double", grade=True, locked=True, points=1)),
]


def test_a_cell_that_only_lacks_an_optional_module_is_left_out_with_its_install_line(tmp_path):
    env = "name: c\ndependencies:\n  - python=3.11\n  - numpy=1.26\n  - pip:\n    - widgetlib-not-here==1.0\n"
    src = course(tmp_path, [*BASE, ("code", WIDGET, None)], files={"source/environment.yml": env})
    (item,) = nbgrader_import.read(src)
    assert item.requirements == ["numpy==1.26", "widgetlib-not-here==1.0"]
    assert item.notes == [
        "ps1.ipynb, cell 3: needs the module widgetlib_not_here, which is not installed here "
        "(`pip install widgetlib-not-here==1.0`); nothing graded uses what it makes, so it is not run when grading"
    ]
    assert "skip-grading" in item.notebook.cells[2].metadata["tags"]
    importing.write([item], tmp_path / "c" / "config.yaml", course_name="c")
    wanted = (tmp_path / "c/solutions/ps1/requirements.txt").read_text().splitlines()
    assert wanted[1:] == ["numpy==1.26", "widgetlib-not-here==1.0"]
    # Grading runs without it, full marks, and the scorecard says so once, in words.
    course_ = config.load(tmp_path / "c" / "config.yaml")
    card = Grader(course_).grade(course_.assignment("ps1"), course_.assignment("ps1").solution)
    assert card.score == 1 and not card.execution.errors
    assert card.execution.notes == (
        "A cell that needs the module widgetlib_not_here is not run when grading: grading does not install it, "
        "and nothing graded uses what that cell makes.",
    )


def test_a_missing_module_something_graded_uses_stops_the_import(tmp_path):
    uses = ("code", "assert wl.version", meta("test_widget", grade=True, locked=True, points=1))
    src = course(tmp_path, [*BASE, ("code", WIDGET, None), ("code", "n = wl.count()", None), uses])
    with pytest.raises(UsageError) as info:
        nbgrader_import.read(src)
    assert str(info.value) == (
        "ps1.ipynb, cell 3 needs the module widgetlib_not_here, which is not installed here, and cell 4 uses "
        "what it makes (wl): install it (`pip install widgetlib_not_here`) and import again; nothing was written"
    )


def test_a_kernelspec_of_another_python_kernel_runs_on_the_grading_kernel(tmp_path):
    src = course(
        tmp_path,
        BASE,
        kernel={"name": "conda-env-ds-py", "display_name": "Python [conda env:ds]", "language": "python"},
    )
    (item,) = nbgrader_import.read(src)
    assert item.notes == [
        "ps1.ipynb: written for the kernel 'conda-env-ds-py'; it runs on the grading kernel (Python 3), and "
        "the notebooks written here name that one"
    ]
    assert item.notebook.metadata["kernelspec"]["name"] == "python3"


def test_a_notebook_in_another_language_is_refused(tmp_path):
    src = course(tmp_path, BASE, kernel={"name": "ir", "display_name": "R", "language": "R"})
    with pytest.raises(UsageError, match=r"^ps1.ipynb is written for the R kernel \(r\); only Python notebooks"):
        nbgrader_import.read(src)


def test_otter_reads_the_requirements_its_config_names(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\nrequirements: reqs/needs.txt\n"),
        nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 1"),
        nbformat.v4.new_code_cell("n = 1 # SOLUTION"),
        nbformat.v4.new_raw_cell("# BEGIN TESTS"),
        nbformat.v4.new_code_cell("assert n == 1"),
        nbformat.v4.new_raw_cell("# END TESTS"),
        nbformat.v4.new_raw_cell("# END QUESTION"),
        nbformat.v4.new_code_cell("import widgetlib_not_here\nwidgetlib_not_here.show()"),
    ]
    nbformat.write(nb, str(tmp_path / "lab.ipynb"))
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs/needs.txt").write_text("-r base.txt\nwidgetlib_not_here>=2  # the demo\n")
    (item,) = otter_import.read(tmp_path / "lab.ipynb")
    assert item.requirements == ["widgetlib_not_here>=2"]
    assert any("`pip install 'widgetlib_not_here>=2'`" in n for n in item.notes)  # quoted: the shell reads >
    assert "skip-grading" in item.notebook.cells[-1].metadata["tags"]


def test_a_released_placeholder_that_fails_its_test_imports_with_a_note(tmp_path):
    """A released answer cell that assigns a placeholder before the solution region (``ans = None``)
    fails its test rather than leaving it unanswered: 0 points, as nbgrader gives it; a note, not a
    refusal."""
    from grader.authoring import import_check

    answer = "s = 'hello'\nans = None\n### BEGIN SOLUTION\nans = s[::-1]\n### END SOLUTION"
    test = "### BEGIN HIDDEN TESTS\nassert ans == 'hello'[::-1]\n### END HIDDEN TESTS"
    src = course(
        tmp_path,
        [("code", answer, meta("ans", solution=True)), ("code", test, meta("t", grade=True, locked=True, points=1))],
    )
    items = nbgrader_import.read(src)
    staged = import_check.stage(items, tmp_path / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    assert items[0].notes == [
        "ps1.ipynb: question t: the released notebook fails its test rather than leaving it unanswered (it "
        "holds a placeholder value before the answer); it scores 0 there, as in the course's own tool"
    ]


def test_a_star_import_of_a_missing_module_counts_as_used(tmp_path):
    star = ("code", "from widgetlib_not_here import *", None)
    src = course(tmp_path, [star, *BASE, ("code", "interact(double)", None)])
    with pytest.raises(
        UsageError, match=r"cell 1 needs the module widgetlib_not_here, .* and cell 4 uses what it makes"
    ):
        nbgrader_import.read(src)


EXPLICIT = """# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
@EXPLICIT
https://repo.anaconda.com/pkgs/main/linux-64/_libgcc_mutex-0.1-main.conda
https://repo.anaconda.com/pkgs/main/noarch/seaborn-0.11.1-pyhd3eb1b0_0.tar.bz2
https://repo.anaconda.com/pkgs/main/linux-64/scikit-learn-0.24.1-py38ha9443f7_0.conda
https://conda.anaconda.org/conda-forge/noarch/ipywidgets-7.6.3-pyhd3deb0d_0.tar.bz2
"""


def test_a_conda_export_saved_as_requirements_is_read_as_pip_reads_it(tmp_path):
    """``conda list --export`` and ``--explicit`` files, which courses save as requirements.txt: C
    libraries left out, pure-Python builds and those from PyPI keep their version, a build compiled for
    one Python does not (pip's wheel of that version may not exist for the grading Python)."""
    from grader.authoring.requirements import declared_requirements, install_line

    (tmp_path / "explicit.txt").write_text(EXPLICIT)
    (tmp_path / "export.txt").write_text("datascience=0.17.0=pypi_0\npytorch=1.8.1=py3.8_cuda10.2_cudnn7.6.5_0\n")
    (tmp_path / "environment.yml").write_text(
        "dependencies:\n  - conda-forge::seaborn=0.11.1=pyhd3eb1b0_0\n  - numpy=1.26\n"
    )
    got = declared_requirements([tmp_path / "explicit.txt", tmp_path / "export.txt", tmp_path / "environment.yml"])
    assert got == [
        "seaborn==0.11.1",
        "scikit-learn",
        "ipywidgets==7.6.3",
        "datascience==0.17.0",
        "torch",
        "numpy==1.26",
    ]
    # The install line names pip's distribution for a module (sklearn is scikit-learn), quoted only
    # where a shell would read a character of it.
    assert install_line("sklearn.linear_model", got, ("datascience",)) == "pip install scikit-learn datascience==0.17.0"
    assert install_line("widgets_not_here", ["widgets-not-here>=2"]) == "pip install 'widgets-not-here>=2'"


def test_every_module_the_notebook_lacks_is_named_in_one_install_line(tmp_path):
    cells = [
        ("code", "import numpy as np\nimport plotlib_not_here as pl\nfrom tablelib_not_here import Table", None),
        *BASE,
        ("code", "t = Table(pl.x)", None),
        ("code", "from widgetlib_not_here import interact", None),
    ]
    src = course(tmp_path, cells, files={"source/requirements.txt": "tablelib_not_here=0.17.0=pypi_0\n"})
    with pytest.raises(UsageError) as info:
        nbgrader_import.read(src)
    assert str(info.value) == (
        "ps1.ipynb, cell 1 needs the module plotlib_not_here, which is not installed here, and cell 4 uses what "
        "it makes (Table, pl): install it and the notebook's other modules missing here, tablelib_not_here and "
        "widgetlib_not_here (`pip install plotlib_not_here tablelib_not_here==0.17.0 widgetlib_not_here`), and "
        "import again; nothing was written"
    )
