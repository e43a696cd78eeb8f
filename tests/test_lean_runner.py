"""The lean cell runner (``fast_cells.run_lean``, what the forking executor's worker runs cells with)
gives the scorecards a Jupyter kernel gives: on every assignment's solution, a skeleton, and a
notebook of the cells where IPython's semantics are easiest to get wrong. The examples are compared
the same way, executor against executor, by tests/test_executors.py.

The run-level comparison (every frame, output sizes included) of the lean runner against
IPython's own run_cell on those cells is tests/test_worker_speed.py; this one goes through the
whole grader, each executor as ``grader grade`` uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, notebook_with, own_data_only
from test_executors import comparable
from test_worker_speed import CELLS

from grader import batch
from grader.files import sha256_file
from grader.judge.grading import Grader
from grader.run.jupyter_executor import JupyterExecutor

# Cells a student may well write that take each of run_lean's ways: plain statements, a displayed
# last expression, `_`, magics, `!` (on a pseudo-terminal, and captured), `?`, top-level await, an error after some statements ran,
# a statement that only fails to compile once the ones before it ran, SystemExit, warnings.
FIDELITY = [
    "import numpy as np\nX = np.array([[1.0, 0.5], [0.2, 0.9], [0.4, 0.4]])\nX",
    "X[:2, :]",
    "W_q = _ * 0 + np.eye(2)\nW_k = W_q.copy()\nW_v = W_q.T;",
    "%time Q = X @ W_q.T\nlisting = !echo from the shell\nK = X @ W_k.T",
    "!echo on a terminal of its own\n!ls /dev/pts > /dev/null",
    "np.sum?",
    "import asyncio\nasync def later():\n    await asyncio.sleep(0)\n    return X @ W_v.T\nV = await later()",
    "scores = Q @ K.T\nprint('scores', scores.shape)\nreturn scores",
    "import warnings\nwarnings.warn('check the axis')\nscores = Q @ K.T\nscaled_scores = scores / np.sqrt(K.shape[1])",
    "def softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()\n"
    "attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)",
    "raise SystemExit('done early')",
    "output = attention_weights @ V\noutput",
] + [c for c in CELLS if "return" not in c]


def _submissions(tmp: Path) -> list[tuple[str, Path]]:
    """(assignment, notebook) for every case: the solutions, a skeleton, the fidelity notebook."""
    from grader.course import config

    course = config.load(ROOT / "config.yaml")
    cases: list[tuple[str, Path]] = []
    for assignment in course.assignments.values():
        cases.append((assignment.name, assignment.solution))
    # One skeleton: every blank of every skeleton is the same `?` (a SyntaxError at the blank's
    # line, the cells after it run), so the others would be more kernels comparing the same path.
    numpy = course.assignment("attention_numpy")
    cases.append((numpy.name, numpy.skeleton))
    cases.append(("attention_numpy", notebook_with(FIDELITY, tmp / "fidelity.ipynb")))
    return cases


@pytest.fixture(scope="module")
def cards(grader, course, tmp_path_factory):
    """Every case graded by the forking executor (lean runner) and by Jupyter kernels, on each
    notebook's own data: how cells run is what is compared, and each variant would be one more
    kernel per notebook (tests/test_executors.py compares the executors on variants)."""
    cases = _submissions(tmp_path_factory.mktemp("fidelity"))
    names = list(dict.fromkeys(n for n, _ in cases))
    for name in names:  # the solutions' runs, once: the Jupyter grader reads them from the cache
        grader.references.get(own_data_only(course.assignment(name)))
    executor = JupyterExecutor()
    jupyter = Grader(course, executor)

    def grade(g: Grader, name: str) -> dict[tuple[str, Path], object]:
        paths = [p for n, p in cases if n == name]
        subs = [batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p)) for p in paths]
        found = batch.grade_all(g, own_data_only(course.assignment(name)), subs, jobs=2).cards
        return {(name, p): card for p, card in zip(paths, found, strict=True)}

    out: dict[str, dict[tuple[str, Path], object]] = {}
    try:
        # Two assignments at a time, the Jupyter ones (slowest) first: a kernel's start is mostly waiting.
        with ThreadPoolExecutor(2) as pool:
            started = [(g.executor.name, pool.submit(grade, g, name)) for g in (jupyter, grader) for name in names]
            for executor_name, done in started:
                out.setdefault(executor_name, {}).update(done.result())
    finally:
        executor.close()
    return out


@pytest.mark.slow
def test_lean_runner_and_jupyter_give_the_same_scorecards(cards):
    lean, jupyter = cards["forking"], cards["jupyter"]
    assert lean.keys() == jupyter.keys() and len(lean) == 5 + 1 + 1
    differ = [
        f"{name}: {path.name}"
        for (name, path) in lean
        if comparable(lean[(name, path)]) != comparable(jupyter[(name, path)])
    ]
    assert differ == []
    fidelity = next(card for (_, path), card in lean.items() if path.name == "fidelity.ipynb")
    errors = {e["cell"]: e["error"].partition(":")[0] for e in fidelity.execution.to_dict()["errors"]}
    # `_`, the magics, `?`, `!` (on a terminal too) and top-level await worked (nothing before
    # cell 8 failed), and the cells that fail did so the same way in both
    assert [(cell, name) for cell, name in sorted(errors.items()) if cell <= 12] == [
        (8, "SyntaxError"),
        (11, "SystemExit"),
    ]


RUN = textwrap.dedent("""
    import json, sys
    from grader.run import fast_cells, worker

    shell = worker.make_shell()
    taken = {}
    for cell in json.loads(sys.stdin.read()):
        done, error = fast_cells.run_lean(shell, cell)
        if not done:
            shell.run_cell(cell, store_history=False)
        taken[cell] = done
    print(json.dumps(taken))
""")


def test_cells_take_the_lean_way_unless_they_need_ipython():
    cells = [
        "x = 1\nx",
        "%precision 3\n1 / 3",
        "y = 2;",
        "def f():\n    return 1\nf()",
        "1 / 0",
        "z = await __import__('asyncio').sleep(0)",
        "w = 1\nreturn w",
        "get_ipython().events.register('post_run_cell', lambda result: None)",
        "x + 1",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", RUN],
        input=json.dumps(cells),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=True,
    )
    taken = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [c for c in cells if not taken[c]] == [
        "z = await __import__('asyncio').sleep(0)",  # top-level await: IPython's event loop
        "x + 1",  # a post_run_cell callback was registered: IPython's run_cell from then on
    ]
