"""A small nbgrader course, written from nbgrader's documented format: source notebooks whose cells
carry ``nbgrader`` metadata (solution, grade, locked, task, points, grade_id), solution regions
between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, hidden tests between ``### BEGIN HIDDEN
TESTS`` and ``### END HIDDEN TESTS``. ``release`` makes the notebook nbgrader gives students, and
``nbgrader_points`` scores a submission the way nbgrader does: each test cell, hidden parts
included, run after the student's cells in the student's own namespace, earns its points when it
raises nothing."""

from __future__ import annotations

import json
import re
import sys
import types
import unittest
from pathlib import Path

import nbformat


def meta(grade_id, *, solution=False, grade=False, locked=False, points=None, task=False):
    m = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if task:
        m["task"] = True
    if points is not None:
        m["points"] = points
    return {"nbgrader": m}


PROBLEM1 = [
    ("markdown", "# Problem set 1\nWrite `squares`, `sum_of_squares` and `normalize`.", None),
    ("code", "import numpy as np", meta("imports", locked=True)),
    (
        "code",
        'def squares(n):\n    """The squares of 1..n."""\n    ### BEGIN SOLUTION\n    if n < 1:\n        raise ValueError("n must be at least 1")\n    return [i ** 2 for i in range(1, n + 1)]\n    ### END SOLUTION',
        meta("squares", solution=True),
    ),
    (
        "code",
        '"""Check that squares returns the correct output for several inputs"""\nfrom nose.tools import assert_equal\nassert_equal(squares(1), [1])\nassert_equal(squares(2), [1, 4])\n### BEGIN HIDDEN TESTS\nassert_equal(squares(10), [1, 4, 9, 16, 25, 36, 49, 64, 81, 100])\n### END HIDDEN TESTS',
        meta("correct_squares", grade=True, locked=True, points=1),
    ),
    (
        "code",
        '"""Check that squares raises an error for invalid inputs"""\nfrom nose.tools import assert_raises\nassert_raises(ValueError, squares, 0)\nassert_raises(ValueError, squares, -4)',
        meta("squares_invalid_input", grade=True, locked=True, points=0.5),
    ),
    (
        "code",
        "def sum_of_squares(n):\n    ### BEGIN SOLUTION\n    return sum(squares(n))\n    ### END SOLUTION",
        meta("sum_of_squares", solution=True),
    ),
    (
        "code",
        '"""Check that sum_of_squares returns the correct answer"""\nassert sum_of_squares(1) == 1\nassert sum_of_squares(3) == 14\n### BEGIN HIDDEN TESTS\nassert sum_of_squares(10) == 385\n### END HIDDEN TESTS',
        meta("correct_sum_of_squares", grade=True, locked=True, points=0.5),
    ),
    (
        "code",
        '"""Check that sum_of_squares relies on squares."""\norig_squares = squares\ndel squares\ntry:\n    assert_raises(NameError, sum_of_squares, 1)\nexcept AssertionError:\n    raise AssertionError("sum_of_squares does not use squares")\nfinally:\n    squares = orig_squares',
        meta("sum_of_squares_uses_squares", grade=True, locked=True, points=0.5),
    ),
    (
        "code",
        "def normalize(x):\n    ### BEGIN SOLUTION\n    x = np.asarray(x, dtype=float)\n    return x / np.linalg.norm(x)\n    ### END SOLUTION",
        meta("normalize", solution=True),
    ),
    (
        "code",
        'x = np.array([3.0, 4.0])\nassert np.allclose(normalize(x), [0.6, 0.8])\nfor v in [np.ones(3), np.arange(1.0, 5.0)]:\n    assert np.isclose(np.linalg.norm(normalize(v)), 1.0), "normalize(v) should have norm 1"\n### BEGIN HIDDEN TESTS\nassert normalize(np.array([0.0, 2.0])).shape == (2,)\n### END HIDDEN TESTS',
        meta("normalize_test", grade=True, locked=True, points=1.5),
    ),
    (
        "code",
        '"""Look at the output"""\nprint(squares(3))',
        meta("squares_printed", grade=True, locked=True, points=0.5),
    ),
    ("markdown", "Why does `squares` raise for n < 1?", None),
    (
        "markdown",
        "Because there is nothing to square: 1..n is empty.",
        meta("explain", solution=True, grade=True, points=2),
    ),
]

PROBLEM2 = [
    ("markdown", "Plot the squares and describe the curve.", meta("plot_task", task=True, points=1, locked=True)),
    ("code", "import numpy as np\nys = np.arange(5) ** 2", None),
]


def notebook(cells, *, v40=False):
    nb = nbformat.v4.new_notebook()
    for kind, src, m in cells:
        cell = nbformat.v4.new_code_cell(src) if kind == "code" else nbformat.v4.new_markdown_cell(src)
        if m:
            cell.metadata.update(m)
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if v40:  # nbformat 4.0: no cell ids
        nb.nbformat_minor = 0
        for c in nb.cells:
            c.pop("id", None)
        return json.dumps(nb, indent=1)
    return nbformat.writes(nb)


def build(root: Path):
    src = root / "source" / "ps1"
    src.mkdir(parents=True, exist_ok=True)
    (src / "problem1.ipynb").write_text(notebook(PROBLEM1, v40=True))
    (src / "problem2.ipynb").write_text(notebook(PROBLEM2))
    (src / "data.csv").write_text("a,b\n1,2\n")
    # nbgrader's header notebook, put at the top of every notebook of the course.
    (root / "source" / "header.ipynb").write_text(
        notebook([("markdown", "Course header: write your name here.", None)])
    )


SOLUTION_BLOCK = re.compile(r"^(\s*)### BEGIN SOLUTION\n.*?^\s*### END SOLUTION", re.M | re.S)
HIDDEN_BLOCK = re.compile(r"^\s*### BEGIN HIDDEN TESTS\n.*?^\s*### END HIDDEN TESTS\n?", re.M | re.S)


def release(source: Path) -> nbformat.NotebookNode:
    """What nbgrader's generate_assignment gives students."""
    nb = nbformat.read(str(source), as_version=4)
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code":
            cell.source = SOLUTION_BLOCK.sub(
                lambda mm: f"{mm.group(1)}# YOUR CODE HERE\n{mm.group(1)}raise NotImplementedError()", cell.source
            )
            cell.source = HIDDEN_BLOCK.sub("", cell.source).rstrip("\n")
        elif m.get("solution"):
            cell.source = "YOUR ANSWER HERE"
    return nb


def answer(nb: nbformat.NotebookNode, answers: dict[str, str], extra: str = "") -> nbformat.NotebookNode:
    """The released notebook with the solution cells named by grade_id replaced; ``extra`` is code
    the student adds after the imports (a cheat, say)."""
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        if extra and gid == "imports":
            cell.source += "\n" + extra
    return nb


def _nose() -> None:
    """nose.tools is unittest's assertions with PEP 8 names; nose itself no longer installs."""
    if "nose.tools" in sys.modules:
        return
    case = unittest.TestCase()
    tools = types.ModuleType("nose.tools")
    tools.assert_equal = case.assertEqual
    tools.assert_raises = case.assertRaises
    nose = types.ModuleType("nose")
    nose.tools = tools
    sys.modules["nose"], sys.modules["nose.tools"] = nose, tools


def nbgrader_points(source: Path, submission: nbformat.NotebookNode) -> float:
    """What nbgrader's autograder gives: every test cell from the source (hidden tests included)
    replaces the student's copy and runs in the student's namespace; it scores when it raises nothing."""
    import builtins

    import numpy as np

    saved = dict(vars(np)), dict(vars(np.testing)), builtins.AssertionError  # a cheat patches them process-wide
    try:
        return _points(source, submission)
    finally:
        vars(np).update(saved[0])
        vars(np.testing).update(saved[1])
        builtins.AssertionError = saved[2]


def _points(source: Path, submission: nbformat.NotebookNode) -> float:
    _nose()
    tests = {
        c.metadata["nbgrader"]["grade_id"]: c
        for c in nbformat.read(str(source), as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    }
    ns: dict = {}
    total = 0.0
    for cell in submission.cells:
        if cell.cell_type != "code":
            continue
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        code = tests[gid].source if gid in tests else cell.source
        code = "\n".join(line for line in code.splitlines() if "HIDDEN TESTS" not in line)
        try:
            exec(compile(code, "<cell>", "exec"), ns)
        except BaseException:  # noqa: BLE001 - nbgrader's rule: any error costs the cell its points
            continue
        if gid in tests:
            total += float(tests[gid].metadata["nbgrader"]["points"])
    return total
