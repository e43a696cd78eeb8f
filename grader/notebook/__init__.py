"""Reading submissions and understanding their code without running it.

- ``read(path)`` turns a file into a list of code cells, or raises NotebookError with one sentence.
- ``find_blanks(source)`` finds the course's ``?`` blanks, which are not valid Python.
- ``analyse(cells)`` works out, per cell, which names it binds and reads (by parsing, never by
  running), which cells hold unfilled blanks, and which names cannot have a value because of them.

Answers are found by what the notebook computes, not by cell ids or metadata, which students'
editors drop, copy and reorder.
"""

from grader.notebook.blanks import BLANK_NAME, Blank, fill_blanks, find_blanks, without_inert_lines
from grader.notebook.flow import (
    BlankReport,
    CellInfo,
    ParsedCell,
    Statement,
    analyse,
    before_point,
    before_statement,
    blank_report,
    dependencies,
    direct_inputs,
    first_binds,
    identifiers,
    imported_modules,
    input_definitions,
    parse_cell,
    python_source,
    split_before_binds,
)
from grader.notebook.read import LOCKED_TAG, MAX_NOTEBOOK_BYTES, SKIP_TAG, Cell, cell_point, read, restore_locked
from grader.notebook.scopes import module_level_binds

__all__ = [
    "BLANK_NAME",
    "LOCKED_TAG",
    "MAX_NOTEBOOK_BYTES",
    "SKIP_TAG",
    "Blank",
    "BlankReport",
    "Cell",
    "CellInfo",
    "ParsedCell",
    "Statement",
    "analyse",
    "before_point",
    "before_statement",
    "blank_report",
    "dependencies",
    "direct_inputs",
    "fill_blanks",
    "find_blanks",
    "first_binds",
    "identifiers",
    "imported_modules",
    "input_definitions",
    "module_level_binds",
    "parse_cell",
    "python_source",
    "read",
    "restore_locked",
    "cell_point",
    "split_before_binds",
    "without_inert_lines",
]
