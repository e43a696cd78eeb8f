"""Text in a CSV file a spreadsheet opens: a cell that a spreadsheet would run as a formula (it
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is written with an apostrophe
before it, so text a student chose never runs as one. The one guard every CSV this grader writes
uses, and its inverse for a CSV a person edited and gives back."""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell_text(value: str) -> str:
    """``value`` as a cell that a spreadsheet shows as text."""
    return "'" + value if value.startswith(FORMULA_START) else value


def typed_text(cell: str) -> str:
    """A cell as typed: without the apostrophe ``cell_text`` put before a formula-like text."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_START) else cell
