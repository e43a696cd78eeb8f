"""One way to name a cell: "cell N" counts every cell from the top (markdown included) in
authoring messages, runtime messages and the HTML feedback, saved outputs or not."""

from __future__ import annotations

import re

import nbformat
from conftest import NUMPY_CORRECT, question

from grader.course.model import ScorecardSettings
from grader.outputs.html import to_html
from grader.outputs.view import student_view
from grader.testing import fill, write


def test_a_runtime_message_and_the_html_page_name_the_same_cell(grader, numpy_assignment, tmp_path):
    # A notebook saved without outputs (every prompt would read `In [ ]:`), with an error in the
    # cell that computes the scores.
    nb = fill(numpy_assignment.skeleton, {**NUMPY_CORRECT, "scores": "Q @ K.T @ np.ones((4, 4))"})
    path = write(nb, tmp_path / "sub.ipynb")
    card = grader.grade(numpy_assignment, path)
    line = " ".join(question(card, "scores").lines)
    number = int(re.search(r"cell (\d+) raised ValueError", line).group(1))
    # "cell N" counts every cell from the top: it is the Nth cell of the file, the one computing scores.
    assert nb.cells[number - 1].cell_type == "code" and nb.cells[number - 1].source.startswith("scores =")
    assert [e["cell"] for e in card.execution.to_dict()["errors"]][0] == number

    page = to_html(student_view(card, numpy_assignment, ScorecardSettings()), numpy_assignment, path)
    assert "In&nbsp;[&nbsp;]" not in page and "In [ ]" not in page
    shown = [int(n) for n in re.findall(r"cell&nbsp;(\d+)", page)]
    assert shown == [n for n, c in enumerate(nb.cells, 1) if c.cell_type == "code"]
    assert number in shown


def test_authoring_and_runtime_count_cells_the_same_way(tmp_path, grader, numpy_assignment):
    from grader import notebook

    cells = notebook.read(numpy_assignment.skeleton)
    raw = nbformat.read(str(numpy_assignment.skeleton), as_version=4).cells
    for cell in cells:  # the number of each code cell is its place among all cells
        assert raw[cell.index - 1].source == cell.source
    blank = next(b for c in cells for b in notebook.find_blanks(c.source, c.index))
    assert blank.where() == "cell 8, line 1: `Q = ?`"
    assert raw[7].source.startswith("Q = ?")
