"""A small otter-grader course, written from otter assign's documented notebook format: raw
``# ASSIGNMENT CONFIG`` / ``# BEGIN QUESTION`` / ``# BEGIN TESTS`` / ``# BEGIN SOLUTION`` cells,
``# SOLUTION`` and ``# BEGIN SOLUTION NO PROMPT`` in code, ``# HIDDEN`` and ``# BEGIN TEST CONFIG``
tests, expression tests whose expected value is the output stored in the master notebook, and
``# SEED``. ``student`` makes the notebook otter assign gives students (``...`` placeholders,
``import otter``, ``grader.check``); ``otter_points`` scores a submission the way otter does:
each test a doctest run in the student's namespace, points shared among a question's tests.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import nbformat
import yaml

V4 = nbformat.v4


def raw(src):
    return V4.new_raw_cell(src)


def md(src):
    return V4.new_markdown_cell(src)


def code(src, output=None):
    cell = V4.new_code_cell(src)
    if output is not None:
        cell.outputs = [V4.new_output("execute_result", data={"text/plain": output}, execution_count=1)]
    return cell


STANDARDIZE = '''def standardize(x):
    # BEGIN SOLUTION NO PROMPT
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError("standardize needs a 1-D array")
    return (x - x.mean()) / x.std()
    # END SOLUTION
    """ # BEGIN PROMPT
    ...
    """ # END PROMPT'''

MASTER = [
    raw("# ASSIGNMENT CONFIG\nname: hw01\nfiles:\n  - data.csv\nexport_cell: false"),
    md("# Homework 1"),
    code("import numpy as np\nnp.random.seed(42) # SEED"),
    raw("# BEGIN QUESTION\nname: q1\npoints: 2"),
    md("**Question 1.** The mean of `data`."),
    code("data = np.array([1.0, 2.0, 3.0, 4.0])\nmean = data.mean() # SOLUTION"),
    raw("# BEGIN TESTS"),
    code("mean", "2.5"),
    code("# HIDDEN\nisinstance(mean, float)", "True"),
    raw("# END TESTS"),
    raw("# END QUESTION"),
    raw("# BEGIN QUESTION\nname: q2\npoints: [0.5, 0.5, 1]"),
    md("**Question 2.** Standardize a 1-D array; raise `ValueError` for anything else."),
    code(STANDARDIZE),
    raw("# BEGIN TESTS"),
    code("standardize(np.array([1.0, 2.0, 3.0])).mean()", "0.0"),
    code("import pytest\nwith pytest.raises(ValueError):\n    standardize(np.ones((2, 2)))"),
    code("# HIDDEN\nz = standardize(np.arange(10.0))\nassert np.isclose(z.std(), 1)"),
    raw("# END TESTS"),
    raw("# END QUESTION"),
    raw("# BEGIN QUESTION\nname: q3\npoints: 1\nmanual: true"),
    md("**Question 3.** Why divide by the standard deviation?"),
    raw("# BEGIN SOLUTION"),
    md("So that every feature has unit variance."),
    raw("# END SOLUTION"),
    raw("# END QUESTION"),
    raw("# BEGIN QUESTION\nname: q4\npoints: 1.5\nall_or_nothing: true"),
    md("**Question 4.** `m`, the 3x3 identity scaled by 2."),
    code("m = np.eye(3) * 2 # SOLUTION"),
    raw("# BEGIN TESTS"),
    code("m.shape", "(3, 3)"),
    code("np.trace(m)", "6.0"),
    code('""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\nassert (m == m.T).all()'),
    raw("# END TESTS"),
    raw("# END QUESTION"),
    raw("# BEGIN QUESTION\nname: q5\npoints: 0.5"),
    code("words = ['a', 'b'] # SOLUTION"),
    raw("# BEGIN TESTS"),
    code("for w in words:\n    print(w)", "a\nb"),
    raw("# END TESTS"),
    raw("# END QUESTION"),
]

# What otter assign gives students (its placeholders and its own lines).
STUDENT = [
    ("code", 'import otter\ngrader = otter.Notebook("hw01.ipynb")'),
    ("code", "import numpy as np"),
    ("code", "data = np.array([1.0, 2.0, 3.0, 4.0])\nmean = ..."),
    ("code", 'grader.check("q1")'),
    ("code", "def standardize(x):\n    ..."),
    ("code", 'grader.check("q2")'),
    ("code", "m = ..."),
    ("code", 'grader.check("q4")'),
    ("code", "words = ..."),
    ("code", 'grader.check("q5")'),
    ("code", "grader.export(pdf=False)"),
]


def master(path: Path):
    nb = V4.new_notebook()
    nb.cells = MASTER
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    (path.parent / "data.csv").write_text("x\n1\n")


def student(path: Path, answers: dict[int, str] | None = None):
    nb = V4.new_notebook()
    for i, (_kind, src) in enumerate(STUDENT):
        nb.cells.append(V4.new_code_cell((answers or {}).get(i, src)))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def _doctest(code: str, ns: dict) -> str:
    """What a doctest of the code prints: its output, then the repr of a final expression."""
    tree = ast.parse(code)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        body = tree.body[:-1] if last is not None else tree.body
        exec(compile(ast.Module(body=body, type_ignores=[]), "<test>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<test>", "eval"), ns)
            if value is not None:
                print(repr(value))
    return out.getvalue().strip()


def otter_points(master_path: Path, submission: nbformat.NotebookNode) -> dict[str, float]:
    """Each question's points from otter's rule, for a submission run without otter installed."""
    import numpy as np

    saved = dict(vars(np)), dict(vars(np.testing))  # a cheat patches numpy for the whole process
    try:
        return _otter_points(master_path, submission)
    finally:
        vars(np).update(saved[0])
        vars(np.testing).update(saved[1])


def _otter_points(master_path: Path, submission: nbformat.NotebookNode) -> dict[str, float]:
    ns: dict = {}
    for cell in submission.cells:
        if cell.cell_type == "code" and "otter" not in cell.source and "grader." not in cell.source:
            with contextlib.suppress(Exception):
                exec(cell.source, ns)
    nb = nbformat.read(str(master_path), as_version=4)
    questions: dict[str, tuple[dict, list]] = {}
    current, in_tests = None, False
    for cell in nb.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first == "# BEGIN QUESTION":
            config = yaml.safe_load(cell.source.split("\n", 1)[1])
            current = config["name"]
            questions[current] = (config, [])
        elif cell.cell_type == "raw":
            in_tests = first == "# BEGIN TESTS" or (in_tests and first != "# END TESTS")
        elif in_tests and cell.cell_type == "code":
            output = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in cell.outputs)
            code = re.sub(r'^""" # BEGIN TEST CONFIG.*?""" # END TEST CONFIG\n', "", cell.source, flags=re.S)
            questions[current][1].append((code, output.strip()))
    # The master's outputs were stored by a NumPy that printed scalars as "2.5", not "np.float64(2.5)".
    import numpy as np

    np.set_printoptions(legacy="1.25")
    try:
        return _score(questions, ns)
    finally:
        np.set_printoptions(legacy=False)


def _score(questions: dict[str, tuple[dict, list]], ns: dict) -> dict[str, float]:
    scores = {}
    for name, (config, tests) in questions.items():
        if config.get("manual") or not tests:
            continue
        points = config.get("points", 1)
        shares = points if isinstance(points, list) else [points / len(tests)] * len(tests)
        passed = []
        for code, output in tests:
            try:
                passed.append(_doctest(code, dict(ns)) == output)
            except BaseException:  # noqa: BLE001 - a test that raises fails (pytest.fail too)
                passed.append(False)
        if config.get("all_or_nothing"):
            scores[name] = float(sum(shares)) if all(passed) else 0.0
        else:
            scores[name] = float(sum(s for s, ok in zip(shares, passed, strict=True) if ok))
    return scores
