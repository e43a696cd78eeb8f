"""Notebooks reuse names: a check takes its value where its question is answered (`before:`)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import notebook_with, question

from grader.course import config
from grader.judge.grading import Grader

CONFIG = """\
course: {name: reuse}
assignments:
  reuse:
    solution: reuse.ipynb
    questions:
      - id: first
        points: 1
        checks:
          - value: attn_scores_2
            before: query_2
      - id: second
        points: 1
        checks:
          - value: attn_scores_2
"""

SOLUTION = [
    "import torch\ninputs = torch.tensor([[0.43, 0.15], [0.55, 0.87], [0.57, 0.85]])",
    "attn_scores_2 = torch.empty(inputs.shape[0])\nfor i, x in enumerate(inputs):\n    attn_scores_2[i] = torch.dot(inputs[1], x)",
    "query_2 = inputs[1] * 2\nkeys = inputs * 3",
    "attn_scores_2 = query_2 @ keys.T",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("reuse")
    notebook_with(SOLUTION, root / "reuse.ipynb")
    (root / "config.yaml").write_text(CONFIG)
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)


def test_both_meanings_are_graded(setup):
    root, course, grader = setup
    card = grader.grade(course.assignment("reuse"), root / "reuse.ipynb")
    assert [q.status for q in card.questions] == ["passed", "passed"]


def test_split_and_merged_cells_still_find_the_answer(setup, tmp_path):
    root, course, grader = setup
    cells = [
        SOLUTION[0],
        "attn_scores_2 = torch.empty(inputs.shape[0])",
        "for i, x in enumerate(inputs):\n    attn_scores_2[i] = torch.dot(inputs[1], x)",
        SOLUTION[2] + "\n" + SOLUTION[3],
    ]
    card = grader.grade(course.assignment("reuse"), notebook_with(cells, tmp_path / "student.ipynb"))
    assert [q.status for q in card.questions] == ["passed", "passed"]


def test_first_meaning_wrong_second_right(setup, tmp_path):
    root, course, grader = setup
    cells = list(SOLUTION)
    cells[1] = "attn_scores_2 = inputs @ inputs[0]"
    card = grader.grade(course.assignment("reuse"), notebook_with(cells, tmp_path / "student.ipynb"))
    assert question(card, "first").status == "failed"
    assert question(card, "second").status == "passed"


def test_the_next_parts_name_used_early_for_the_students_own_query(setup, tmp_path):
    # The student calls part 1's query `query_2` too: the question is answered where part 2 binds
    # it again, not before the student's own early `query_2`, where nothing is computed yet.
    root, course, grader = setup
    cells = [
        SOLUTION[0],
        "query_2 = inputs[1]\nattn_scores_2 = torch.empty(inputs.shape[0])\n"
        "for i, x in enumerate(inputs):\n    attn_scores_2[i] = torch.dot(query_2, x)",
        SOLUTION[2],
        SOLUTION[3],
    ]
    card = grader.grade(course.assignment("reuse"), notebook_with(cells, tmp_path / "early.ipynb"))
    assert [q.status for q in card.questions] == ["passed", "passed"], [q.lines for q in card.questions]


def test_the_next_parts_data_moved_to_the_top(setup, tmp_path):
    # Part 2's cell of data first: part 1 is answered where part 2 computes `attn_scores_2` again
    # from that data, and a wrong part 1 is still caught there.
    root, course, grader = setup
    top = [SOLUTION[0] + "\n" + SOLUTION[2], SOLUTION[1], SOLUTION[3]]
    card = grader.grade(course.assignment("reuse"), notebook_with(top, tmp_path / "top.ipynb"))
    assert [q.status for q in card.questions] == ["passed", "passed"], [q.lines for q in card.questions]
    wrong = [top[0], "attn_scores_2 = inputs @ inputs[0]", top[2]]
    card = grader.grade(course.assignment("reuse"), notebook_with(wrong, tmp_path / "top-wrong.ipynb"))
    assert [question(card, q).status for q in ("first", "second")] == ["failed", "passed"]


def test_a_part_left_blank_is_still_unanswered_where_the_next_part_starts(setup, tmp_path):
    root, course, grader = setup
    cells = [SOLUTION[0], "?", SOLUTION[2], SOLUTION[3]]
    card = grader.grade(course.assignment("reuse"), notebook_with(cells, tmp_path / "blank.ipynb"))
    first = question(card, "first")
    assert first.status == "unanswered" and question(card, "second").status == "passed", first.lines
