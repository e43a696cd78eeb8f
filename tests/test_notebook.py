"""Reading submissions and finding blanks, without running anything."""

from __future__ import annotations

import json

import nbformat
import pytest

from grader import notebook
from grader.errors import NotebookError


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "The file is empty."),
        (b"   \n", "The file is empty."),
        (b"\xff\xfe\x00junk", "The file is not UTF-8 text (undecodable byte at offset 0)."),
        (b"print('hello')\n", "The file is not JSON, so not a notebook (line 1: Expecting value)."),
        (b'{"hello": 1}', "The file is JSON but not a Jupyter notebook (it has no cells)."),
        (b"[1, 2, 3]", "The file is JSON but not a Jupyter notebook (it has no cells)."),
        (
            b'{"cells": [], "metadata": {}, "nbformat": 5, "nbformat_minor": 0}',
            "The notebook format version 5 is newer than this grader supports (4).",
        ),
        (
            b'{"cells": [], "metadata": {}, "nbformat": "four", "nbformat_minor": 0}',
            "The notebook format version 'four' is not supported (expected 4).",
        ),
        (
            b'{"cells": [{"cell_type": "code", "source": 5}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
            "The notebook structure is invalid: the source of cell 1 is not text.",
        ),
    ],
    ids=["empty", "blank", "not-utf8", "not-json", "json-object", "json-list", "version-5", "version-text", "bad-cell"],
)
def test_unreadable_files_give_one_sentence(tmp_path, content, reason):
    path = tmp_path / "sub.ipynb"
    path.write_bytes(content)
    with pytest.raises(NotebookError) as info:
        notebook.read(path)
    assert str(info.value) == reason


def test_too_large_notebook(tmp_path):
    path = tmp_path / "big.ipynb"
    path.write_bytes(b" " * 2048 + b"{}")
    with pytest.raises(NotebookError) as info:
        notebook.read(path, max_bytes=1024)
    assert str(info.value).startswith("The notebook is 0.0 MB, larger than the 0 MB limit")


def test_old_format_is_upgraded(tmp_path):
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {},
        "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "outputs": [], "language": "python"}]}],
    }
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(v3))
    assert [c.source for c in notebook.read(path)] == ["x = 1"]


def test_code_cells_are_numbered_among_all_cells_as_students_see_them(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# hi"),
        nbformat.v4.new_code_cell("a = 1"),
        nbformat.v4.new_code_cell("b = 2", metadata={"tags": ["skip-grading"]}),
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    cells = notebook.read(path)
    assert [(c.index, c.source, c.skipped) for c in cells] == [(2, "a = 1", False), (3, "b = 2", True)]


@pytest.mark.parametrize(
    "source, lines",
    [
        ("S_scaled = ?", [1]),
        ("?", [1]),
        ("x = 1\n  ?\n", [2]),
        ("Y = torch.matmul(?, X)", [1]),
        ("d = np.sqrt(?) + ?", [1, 1]),
        ("print('is this ?')  # what ?", []),
        ("np.sum?", []),
        ("?np.sum", []),
        ('s = """\n?\n"""', []),
    ],
)
def test_find_blanks(source, lines):
    assert [b.line for b in notebook.find_blanks(source, cell=3)] == lines


def test_fill_blanks_keeps_strings_and_comments():
    assert notebook.fill_blanks("x = ?  # why ?\nprint('?')") == "x = __grader_blank__  # why ?\nprint('?')"


def test_blank_taint_follows_data_flow_statement_by_statement():
    cells = [
        notebook.Cell(1, "import numpy as np\nX = np.eye(2)"),
        notebook.Cell(2, "A = X + 1\nB = ?\nC = A * 2"),
        notebook.Cell(3, "def f(x):\n    return x + 1\nD = B + 1\nE = f(A)"),
        notebook.Cell(4, "B = np.ones(2)\nF = B"),
    ]
    report = notebook.blank_report(notebook.analyse(cells))
    assert set(report.tainted) == {"C", "D"}
    assert report.tainted["C"].line == 2 and report.tainted["D"].where() == "cell 2, line 2: `B = ?`"


def test_magics_do_not_break_analysis():
    info = notebook.analyse([notebook.Cell(1, "%matplotlib inline\n!ls\nx = 1")])[0]
    assert info.binds == {"x"} and info.syntax_error is None


def test_dependencies_follow_the_data_flow():
    cells = [
        notebook.Cell(1, "X = np.eye(2)\nW_q = np.eye(2)\nW_v = np.eye(2)"),
        notebook.Cell(2, "Q = X @ W_q.T\nV = X @ W_v.T\nd_k = 2"),
        notebook.Cell(3, "scores = Q @ Q.T / d_k\nout = scores @ V"),
        notebook.Cell(4, "V = np.ones(2)"),
    ]
    deps = notebook.dependencies(notebook.analyse(cells), ("X", "W_q", "W_v"))
    assert deps["scores"] == {"X", "W_q"}
    assert deps["out"] == {"X", "W_q", "W_v"}
    assert "d_k" not in deps and "V" not in deps  # V rebound from constants in cell 4


def test_blank_cause_is_the_first_blank_in_notebook_order():
    cells = [notebook.Cell(1, "W_Q = ?\nW_K = ?"), notebook.Cell(2, "Q = W_Q + W_K")]
    report = notebook.blank_report(notebook.analyse(cells))
    assert report.cause({"Q", "W_K", "W_Q"}).where() == "cell 1, line 1: `W_Q = ?`"
