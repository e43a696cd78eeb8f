"""Where a check is taken in a student's notebook (``at_cell``, ``after_line``), read without running
anything: given cells found by id, or by their unchanged source where an editor renumbered them; a
cell moved, copied or deleted; a tool's call written with other quotes; and the settings' checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.course import config
from grader.errors import ConfigError
from grader.notebook import Cell, cell_point, restore_locked

TEST = "assert value == 3"


def cells(*items: tuple[str, str], tags: dict[str, tuple[str, ...]] | None = None) -> list[Cell]:
    return [
        Cell(index=k, source=src, cell_id=cid, tags=(tags or {}).get(cid, ())) for k, (cid, src) in enumerate(items, 1)
    ]


def test_a_check_at_a_cell_is_taken_where_that_cell_stands():
    nb = cells(("a", "value = 3"), ("t", TEST), ("b", "value = 100"))
    assert cell_point(nb, "t", None) == 1  # before the test cell: after everything above it
    moved = cells(("a", "value = 3"), ("b", "value = 100"), ("t", TEST))
    assert cell_point(moved, "t", None) == 2
    copied = cells(("a", "value = 3"), ("t", TEST), ("b", "value = 100"), ("t", TEST))
    assert cell_point(copied, "t", None) == 3  # the last copy, as the last run of a cell is the one recorded
    deleted = cells(("a", "value = 3"), ("b", "value = 100"))
    assert cell_point(deleted, "t", None) is None  # at the end, on what the notebook ends with
    # A cell the grader cut in two keeps its id: the check goes before its first part.
    cut = [Cell(1, "value = 3", cell_id="a"), Cell(2, "x = 1", cell_id="t"), Cell(2, "\ny = 2", cell_id="t")]
    assert cell_point(cut, "t", None) == 1


def test_a_check_after_a_line_is_taken_after_the_last_cell_holding_it():
    nb = cells(
        ("a", "x = 1"), ("c", 'grader.check("q1")'), ("b", "x = 2"), ("d", "grader.check( 'q1' )  "), ("e", "x = 3")
    )
    assert cell_point(nb, None, 'grader.check("q1")') == 4  # quotes and spaces do not matter
    assert cell_point(nb[:4], None, 'grader.check("q1")') is None  # the last cell: at the end
    assert cell_point(nb, None, 'grader.check("q2")') is None  # never called: the final environment
    assert cell_point(nb, None, None) is None


def test_a_given_cell_an_editor_renumbered_is_known_by_its_unchanged_source():
    given = cells(
        ("g1", "setup = 1"),
        ("t1", TEST),
        ("t2", "assert ok"),
        ("t3", "assert ok"),
        tags={k: ("locked",) for k in ("g1", "t1", "t2", "t3")},
    )
    student = cells(("new1", "setup = 1"), ("new2", TEST), ("new3", "assert ok"), ("t1", "assert True  # edited"))
    out, changed = restore_locked(student, given)
    assert [c.cell_id for c in out] == ["g1", "t1", "new3", "t1"]
    assert (
        all("locked" in c.tags for c in out[:2]) and out[2].tags == ()
    )  # a source two given cells share names neither
    assert out[3].source == TEST and changed == (4,)  # the edited copy under the test's id is put back


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("at_cell: 'has space'", "at_cell must be a notebook cell id"),
        ("after_line: ''", "after_line must be one line of code"),
        ('after_line: "a()\\nb()"', "after_line must be one line of code"),
        ("at_cell: abc\n            before: x", "says where it is taken twice (before and at_cell): give one"),
    ],
)
def test_where_a_check_is_taken_is_checked_on_loading(tmp_path: Path, extra: str, message: str):
    (tmp_path / "sol.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    text = (
        "course:\n  name: t\nassignments:\n  a1:\n    solution: sol.ipynb\n    questions:\n"
        f"      - id: q1\n        points: 1\n        checks:\n          - test: assert x\n            {extra}\n"
    )
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        config.load(tmp_path / "config.yaml")
    assert message in str(info.value)


def test_a_check_at_a_cell_loads(tmp_path: Path):
    (tmp_path / "sol.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    text = (
        "course:\n  name: t\nassignments:\n  a1:\n    solution: sol.ipynb\n    questions:\n"
        "      - id: q1\n        points: 2\n        checks:\n          - test: assert x\n            at_cell: c-1_x\n"
        "          - test: assert y\n            after_line: grader.check('q1')\n"
    )
    (tmp_path / "config.yaml").write_text(text)
    first, second = config.load(tmp_path / "config.yaml").assignment("a1").questions[0].checks
    assert (first.at_cell, first.after_line) == ("c-1_x", None)
    assert (second.at_cell, second.after_line) == (None, "grader.check('q1')")
