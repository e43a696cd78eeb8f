"""Questions whose ids a tool generated (nbgrader's ``cell-<hex>``) are titled by the heading the
student reads above them in the notebook."""

from __future__ import annotations

import nbformat
from nbgrader_course import meta, notebook

from grader.authoring.nbgrader import importer as nbgrader_import
from grader.authoring.titles import Titles, heading_above, is_machine_id


def md(text):
    return nbformat.v4.new_markdown_cell(text)


def code(text):
    return nbformat.v4.new_code_cell(text)


def test_generated_ids_are_told_from_chosen_ones():
    assert is_machine_id("cell-512e08e2a1f4c3d0") and is_machine_id("cell12") and is_machine_id("cell-512e08e2_")
    assert not is_machine_id("q1_sum") and not is_machine_id("cellular") and not is_machine_id("test_scaled")


def test_the_nearest_heading_above_without_its_markup():
    cells = [
        md("# Lab 2\nIntro."),
        md("## **Exercise 1:** the `mean` <em>of</em> rows ##"),
        code("x = 1"),
        md("Some words.\n\nMore words."),
        code("assert x"),
    ]
    assert heading_above(cells, 4) == "Exercise 1: the `mean` of rows"
    assert heading_above(cells, 1) == "Lab 2"
    assert (
        heading_above([md("What is the *variance* of `x`?\nSay why."), code("")], 1) == "What is the variance of `x`?"
    )
    assert heading_above([code("a"), code("b")], 1) == ""
    long = heading_above([md("# " + "word " * 30), code("")], 1)
    assert len(long) == 70 and long.endswith("…")


def test_tests_under_one_heading_are_numbered_and_chosen_ids_keep_no_title():
    cells = [md("### Exercise 3"), code("a"), code("t1"), code("t2"), md("### Exercise 4"), code("t3")]
    titles = Titles(cells)
    assert [titles.title("cell-aaaaaaaaaaaaaaaa", 2), titles.title("cell-bbbbbbbbbbbbbbbb", 3)] == [
        "Exercise 3",
        "Exercise 3, part 2",
    ]
    assert titles.title("q4", 5) is None
    assert titles.title("cell-cccccccccccccccc", 5) == "Exercise 4"


def test_an_nbgrader_import_titles_generated_ids_by_their_heading(tmp_path):
    src = tmp_path / "source" / "ps1"
    src.mkdir(parents=True)
    cells = [
        ("markdown", "## Exercise 1: squares", None),
        (
            "code",
            "def sq(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
            meta("cell-0a1b2c3d4e5f6a7b", solution=True),
        ),
        ("code", "assert sq(3) == 9", meta("cell-1a1b2c3d4e5f6a7b", grade=True, locked=True, points=1)),
        ("code", "assert sq(-2) == 4", meta("cell-2a1b2c3d4e5f6a7b", grade=True, locked=True, points=1)),
        ("markdown", "## Exercise 2: in words", None),
        ("markdown", "YOUR ANSWER HERE", meta("cell-3a1b2c3d4e5f6a7b", solution=True, grade=True, points=2)),
        ("code", "assert sq(0) == 0", meta("t_zero", grade=True, locked=True, points=1)),
    ]
    (src / "ps1.ipynb").write_text(notebook(cells))
    (item,) = nbgrader_import.read(src)
    titles = {q["id"]: q.get("title") for q in item.questions}
    assert titles == {
        "cell-1a1b2c3d4e5f6a7b": "Exercise 1: squares",
        "cell-2a1b2c3d4e5f6a7b": "Exercise 1: squares, part 2",
        "cell-3a1b2c3d4e5f6a7b": "Exercise 2: in words (graded by a person)",
        "t_zero": None,  # its own id reads as a title
    }


def test_a_part_is_titled_with_the_question_it_belongs_to():
    cells = [
        md("# Coding test"),
        md("## Question 1\nRead the data."),
        md("### Part I  (2 points)"),
        code("t1"),
        md("## Question 2"),
        md("### Part I (2 points)\nWords."),
        code("t2"),
    ]
    titles = Titles(cells)
    assert [titles.title("cell-aaaaaaaaaaaaaaaa", 3), titles.title("cell-bbbbbbbbbbbbbbbb", 6)] == [
        "Question 1, Part I (2 points)",
        "Question 2, Part I (2 points)",
    ]
    assert heading_above(cells, 2) == "Question 1"  # under the notebook's title alone: no prefix


def test_a_generated_id_gives_way_to_the_title_and_a_repeated_one_is_said_once():
    from grader.outputs.view import question_label

    assert question_label("cell-3169e339199d3588", "Exercise 2, Part I") == "Exercise 2, Part I"
    assert question_label("cell-3169e339199d3588", "cell-3169e339199d3588") == "cell-3169e339199d3588"
    assert question_label("q2", "Scaled scores") == "q2: Scaled scores"
    assert question_label("q2", "") == "q2"


def test_a_placeholder_left_in_many_cells_is_one_line_of_the_errors():
    from types import SimpleNamespace

    from grader.judge import wording
    from grader.judge.scorecard import CellError
    from grader.outputs.view import error_lines

    stub = wording.unfilled("raise NotImplementedError()")
    errors = [
        CellError(cell=n, status="blank", error=stub, traceback=(f"cell {n}, line 2: raise NotImplementedError()",))
        for n in (5, 7, 8, 9)
    ]
    errors.insert(1, CellError(cell=6, status="error", error="NameError: name 'x' is not defined"))
    errors.append(
        CellError(cell=12, status="blank", error=wording.unfilled("?"), traceback=("cell 12, line 1: Q = ?",))
    )
    card = SimpleNamespace(execution=SimpleNamespace(cell_errors=errors))
    assert error_lines(card) == [
        "cells 5, 7–9 still have the placeholder `raise NotImplementedError()` of the notebook you were given; "
        "replace it with your code",
        "cell 6: NameError: name 'x' is not defined",
        "cell 12: the cell still has an unfilled blank `?` (cell 12, line 1: Q = ?)",
    ]
