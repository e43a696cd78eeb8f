"""Correct notebooks written freely keep full marks: each solution, rewritten the way students
reshape notebooks (everything in one cell, scratch cells in between, an editor's metadata and
outputs), is graded by the real grader on its data and on every variant.

The rewrites are built from the solution notebooks themselves, so each one is correct by
construction: the same statements, in the same order, only laid out differently."""

from __future__ import annotations

import copy

import nbformat
import pytest
from test_assignments import NAMES

from grader.notebook import SKIP_TAG
from grader.testing import write


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def one_cell(nb):
    """Every cell's code in one cell (the cell tagged skip-grading left out, as the grader does)."""
    kept = [c.source for c in code_cells(nb) if SKIP_TAG not in c.get("metadata", {}).get("tags", [])]
    nb.cells = [nbformat.v4.new_code_cell("\n\n".join(kept))]
    return nb


def scratch_cells(nb):
    """A scratch cell and a note after every code cell: printing, peeking at shapes, a throwaway name."""
    cells = []
    for i, cell in enumerate(nb.cells):
        cells.append(cell)
        if cell.cell_type == "code" and SKIP_TAG not in cell.get("metadata", {}).get("tags", []):
            cells.append(
                nbformat.v4.new_code_cell(f"# scratch\n_scratch_{i} = {i} * 2\nprint('checking', _scratch_{i})")
            )
            cells.append(nbformat.v4.new_markdown_cell("My notes: this looks right."))
    nb.cells = cells
    return nb


def colab_metadata(nb):
    """As Google Colab saves a notebook: its metadata, cell ids, execution counts and outputs."""
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True}
    nb.metadata["accelerator"] = "GPU"
    for n, cell in enumerate(code_cells(nb), 1):
        cell.metadata.update({"colab": {"base_uri": "https://localhost:8080/"}, "outputId": f"abc-{n}"})
        cell.execution_count = n
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output {n}\n")]
    return nb


def split_every_statement_line(nb):
    """Each top-level line group in a cell of its own where the cell is made of simple one-line statements."""
    cells = []
    for cell in nb.cells:
        lines = cell.source.splitlines()
        simple = (
            cell.cell_type == "code"
            and len(lines) > 1
            and all(
                line
                and not line[0].isspace()
                and not line.rstrip().endswith((":", "(", "[", "{", ",", "\\"))
                and line.count("(") == line.count(")")
                and line.count("[") == line.count("]")
                for line in lines
            )
        )
        if simple and SKIP_TAG not in cell.get("metadata", {}).get("tags", []):
            cells.extend(nbformat.v4.new_code_cell(line) for line in lines)
        else:
            cells.append(cell)
    nb.cells = cells
    return nb


REWRITES = {
    "one-cell": one_cell,
    "scratch-cells": scratch_cells,
    "colab-metadata": colab_metadata,
    "split-cells": split_every_statement_line,
}


@pytest.mark.parametrize("rewrite", list(REWRITES))
@pytest.mark.parametrize("name", NAMES)
def test_a_rewritten_solution_keeps_full_marks(grader, course, tmp_path, name, rewrite):
    a = course.assignment(name)
    nb = REWRITES[rewrite](copy.deepcopy(nbformat.read(str(a.solution), as_version=4)))
    path = write(nb, tmp_path / a.solution.name)
    for rel in a.data:  # the data files next to the notebook, as students have them
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((a.solution_dir / rel).read_bytes())
    card = grader.grade(a, path)
    lost = {q.id: q.lines for q in card.questions if q.status != "passed"}
    assert lost == {}
    assert card.score == card.max_score


def test_a_cell_cut_where_a_question_is_answered_still_stops_at_its_first_error(grader, course, tmp_path):
    # One big cell that raises between S (answered before `bank`) and the next part's data: as in
    # Jupyter, nothing after the error runs, and the error is reported once, for cell 1.
    a = course.assignment("attention_similarity")
    nb = one_cell(copy.deepcopy(nbformat.read(str(a.solution), as_version=4)))
    source = nb.cells[0].source
    at = source.index("# Original embeddings of the words")
    nb.cells[0].source = source[:at] + "int('not a number')\n" + source[at:]
    path = write(nb, tmp_path / a.solution.name)
    (tmp_path / "data").mkdir()
    for rel in a.data:
        (tmp_path / rel).write_bytes((a.solution_dir / rel).read_bytes())
    card = grader.grade(a, path)
    assert [(e["cell"], e["error"].split(":")[0]) for e in card.execution.to_dict()["errors"]] == [(1, "ValueError")]
    status = {q.id: q.status for q in card.questions}
    assert status["similarity_matrix"] == "passed"  # S, before `bank`, was computed before the error
    assert status["q2_qkv"] != "passed"  # the next part's data never ran
