"""otter-grader's first master-notebook format (``otter assign --v0``, the only one before otter 4),
read as otter 4.x reads it and rewritten in otter's raw-cell format, which ``importer`` reads.

The first format marks a notebook with Markdown and comments, not raw cells:

- a Markdown cell holding a fenced block whose first line is ``BEGIN ASSIGNMENT`` is the assignment's
  configuration (YAML: ``requirements``, ``files``, ``generate: {seed: ...}``, ...);
- a Markdown cell holding a fenced ``BEGIN QUESTION`` block (YAML: ``name``, ``points``, ``manual``)
  begins a question: the cell is its prompt; the next cell is its answer (for a ``manual`` question,
  Markdown prompt cells may come first); the code cells right after it whose first line is
  ``## Test ##``, ``# TEST``, ``## Hidden Test ##`` (a ``hidden`` test) or a docstring opening
  with ``# BEGIN TEST CONFIG`` are its tests (doctests: the stored output is the expected one); the first
  other cell ends the question;
- answers are marked line by line (``x = 1  # SOLUTION``, as this grader's own format marks them)
  or by ``# BEGIN SOLUTION`` ... ``# END SOLUTION``; a Markdown cell with a line beginning
  ``**SOLUTION**`` (or ``<strong>solution</strong>``) is a written answer;
- a code cell whose first line is ``## Ignore ##`` (or ``# IGNORE``) is dropped from every notebook
  otter writes, as are ``# IGNORE`` lines and ``# BEGIN IGNORE`` ... ``# END IGNORE`` blocks.

``as_raw_cells`` rewrites such a notebook cell by cell (``otter/assign/v0/notebook_transformer.py``'s
walk): each block becomes the raw cell otter's later format has for it, so one reader grades
both, with the same rules for points, hidden tests and check calls. A notebook in neither format,
or in one with no question, is refused in one line that says which format it is in and why
(``unread_format``).

Why a module of its own: the first format is a different grammar (Markdown blocks, header lines,
question boundaries decided by the cell that follows), retired in otter 5; the reader of the
current format stays as it is.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import nbformat
import yaml

from grader.errors import UsageError

FENCE = "```"
ALLOWED_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")  # otter's question names (re.match, as otter)
TEST_CONFIG = r'"""\s*#\s*BEGIN\s*TEST\s*CONFIG'
TEST_HEADER = re.compile(rf"(##\s*(hidden\s*)?test\s*##\s*|#\s*(hidden\s*)?test\s*|{TEST_CONFIG})", re.I)
IGNORE_CELL = re.compile(r"(##\s*ignore\s*##\s*|#\s*ignore\s*)", re.I)
MD_SOLUTION = re.compile(r"(<strong>|\*{2})solution:?(</strong>|\*{2})", re.I)
BEGIN_IGNORE = re.compile(r"\s*#\s*BEGIN\s*IGNORE\s*", re.I)
RAW_MARKER = re.compile(r"^\s*#\s*(ASSIGNMENT CONFIG|BEGIN QUESTION)\s*$", re.I)


def _lines(cell: Any) -> list[str]:
    return str(cell.source).split("\n")


def _block(cell: Any, begin: str, where: str) -> tuple[int, int] | None:
    """The fenced block (first and last line, the fences) whose first line is ``BEGIN <begin>`` in a
    Markdown cell, or None (otter's ``get_spec``: fences are lines starting with three backticks)."""
    if cell.cell_type != "markdown":
        return None
    lines = _lines(cell)
    fences = [i for i, line in enumerate(lines) if line[:3] == FENCE]
    found = [
        (fences[k], fences[k + 1]) if k + 1 < len(fences) else (fences[k], -1)
        for k in range(0, len(fences), 2)
        if fences[k] + 1 < len(lines) and lines[fences[k] + 1].strip(" ") == f"BEGIN {begin}"
    ]
    if not found:
        return None
    if len(found) > 1:
        raise UsageError(f"{where}: more than one 'BEGIN {begin}' block in one cell; nothing was imported")
    start, end = found[0]
    if end < 0:
        raise UsageError(f"{where}: its 'BEGIN {begin}' block is never closed by {FENCE}; nothing was imported")
    return start, end


def _config(cell: Any, span: tuple[int, int], where: str) -> dict[str, Any]:
    lines = _lines(cell)
    text = "\n".join(lines[span[0] + 2 : span[1]])
    try:
        loaded = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem", None) or "not YAML"
        raise UsageError(
            f"{where}: its {lines[span[0] + 1].strip()} block is not YAML ({mark}); nothing was imported"
        ) from None
    if not isinstance(loaded, dict):
        raise UsageError(
            f"{where}: its {lines[span[0] + 1].strip()} block is not a mapping of settings; nothing was imported"
        )
    return loaded


def _first_line(cell: Any) -> str:
    source = str(cell.source)
    return source.split("\n", 1)[0] if source else ""


def is_test_cell(cell: Any) -> bool:
    return cell.cell_type == "code" and bool(TEST_HEADER.match(_first_line(cell)))


def is_ignore_cell(cell: Any) -> bool:
    return bool(str(cell.source)) and bool(IGNORE_CELL.match(_first_line(cell)))


def is_md_solution(cell: Any) -> bool:
    return cell.cell_type == "markdown" and any(MD_SOLUTION.match(line) for line in _lines(cell))


def is_v0(nb: Any) -> bool:
    """Whether the notebook is in otter's first format (a fenced BEGIN QUESTION or BEGIN ASSIGNMENT
    block in a Markdown cell) and not in its raw-cell format."""
    raw = any(c.cell_type == "raw" and RAW_MARKER.match(_first_line(c)) for c in nb.cells)
    if raw:
        return False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and FENCE in cell.source:
            text = "\n".join(line.strip(" ") for line in _lines(cell))
            if re.search(r"^BEGIN (QUESTION|ASSIGNMENT)$", text, re.M):
                return True
    return False


def _raw(text: str) -> Any:
    return nbformat.v4.new_raw_cell(text)  # type: ignore[no-untyped-call]  # nbformat has no annotations


def _without_block(cell: Any, span: tuple[int, int]) -> Any | None:
    """The Markdown cell without its fenced block; None when nothing else is in it."""
    lines = _lines(cell)
    rest = "\n".join(lines[: span[0]] + lines[span[1] + 1 :]).strip("\n")
    if not rest.strip():
        return None
    out = copy.deepcopy(cell)
    out.source = rest
    return out


def _test_cell(cell: Any) -> Any:
    """A test cell as otter's raw-cell format writes it: its header line dropped (``# HIDDEN`` for a
    hidden one), its TEST CONFIG docstring and its stored output kept."""
    first, _, body = str(cell.source).partition("\n")
    out = copy.deepcopy(cell)
    if re.match(TEST_CONFIG, first, re.I):
        return out  # the raw-cell format reads the same docstring
    hidden = bool(re.search("hidden", first, re.I))
    out.source = ("# HIDDEN\n" if hidden else "") + body
    return out


def _strip_ignored(source: str, where: str) -> str:
    """otter's ``remove_ignored_lines``: ``# IGNORE`` lines and ``# BEGIN IGNORE`` ... ``# END IGNORE``."""
    out: list[str] = []
    in_block = False
    for line in source.split("\n"):
        end = line.rstrip()
        if end.endswith("# IGNORE"):
            continue
        if end.endswith("# END IGNORE"):
            if not in_block:
                raise UsageError(f"{where}: '# END IGNORE' without a '# BEGIN IGNORE' before it; nothing was imported")
            in_block = False
            continue
        if in_block:
            continue
        if BEGIN_IGNORE.match(line):
            in_block = True
            continue
        out.append(line)
    if in_block:
        raise UsageError(f"{where}: '# BEGIN IGNORE' is never closed by '# END IGNORE'; nothing was imported")
    return "\n".join(out)


def as_raw_cells(nb: Any, name: str) -> tuple[Any, list[int]]:
    """The notebook in otter's raw-cell format (a copy): what otter 4's ``otter assign --v0`` reads
    from it, marked as ``otter assign`` reads it now; and each cell's number in the master notebook
    (messages name those). A structure otter refuses is refused here, naming the cell."""
    nb = copy.deepcopy(nb)
    out: list[Any] = []
    numbers: list[int] = []
    question: dict[str, Any] | None = None
    answered = tests_open = False

    def close() -> None:
        nonlocal question, answered, tests_open
        if tests_open:
            out.append(_raw("# END TESTS"))
        out.append(_raw("# END QUESTION"))
        question, answered, tests_open = None, False, False

    def tests(cell: Any) -> None:
        nonlocal tests_open
        if not tests_open:
            out.append(_raw("# BEGIN TESTS"))
            tests_open = True
        out.append(_test_cell(cell))

    for i, cell in enumerate(nb.cells, 1):
        numbers.extend([i - 1 or 1] * (len(out) - len(numbers)))  # what the cell before made
        where = f"{name}, cell {i}"
        if is_ignore_cell(cell):
            continue
        if not is_test_cell(cell):  # otter strips ignored lines from what it writes, not from its tests
            cell.source = _strip_ignored(str(cell.source), where)
        if question is not None and not answered:
            if _block(cell, "QUESTION", where):
                raise UsageError(
                    f"{where}: a question begins before question {question['name']!r} has its answer cell "
                    "(otter's first format takes the cell after a question's as its answer); nothing was imported"
                )
            if question.get("manual") and cell.cell_type == "markdown" and not is_md_solution(cell):
                out.append(cell)  # a manual question's prompt, before its answer
                continue
            answered = True
            if is_test_cell(cell):
                tests(cell)  # a question with no answer cell: only tests
            elif is_md_solution(cell):
                out.extend([_raw("# BEGIN SOLUTION"), cell, _raw("# END SOLUTION")])
            else:
                out.append(cell)
            continue
        if question is not None and is_test_cell(cell):
            tests(cell)
            continue
        if question is not None:
            close()
        span = _block(cell, "ASSIGNMENT", where)
        if span is not None:
            config = _config(cell, span, where)
            out.append(_raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)))
            rest = _without_block(cell, span)
            if rest is not None:
                out.append(rest)
            continue
        span = _block(cell, "QUESTION", where)
        if span is not None:
            question = _config(cell, span, where)
            if not ALLOWED_NAME.match(str(question.get("name", ""))):
                raise UsageError(
                    f"{where}: its question has no name otter accepts (a letter, then letters, digits or _): "
                    f"{question.get('name')!r}; nothing was imported"
                )
            out.append(_raw("# BEGIN QUESTION\n" + yaml.safe_dump(question, sort_keys=False)))
            rest = _without_block(cell, span)
            if rest is not None:
                out.append(rest)
            continue
        if is_md_solution(cell):
            out.extend([_raw("# BEGIN SOLUTION"), cell, _raw("# END SOLUTION")])
            continue
        if is_test_cell(cell):
            raise UsageError(
                f"{where}: a test cell ({_first_line(cell).strip()}) outside any question (otter's first format "
                "takes tests only right after a question's answer); nothing was imported"
            )
        out.append(cell)
    if question is not None:
        close()
    numbers.extend([len(nb.cells)] * (len(out) - len(numbers)))
    nb.cells = out
    return nb, numbers


def renumber(notes: list[str], name: str, numbers: list[int]) -> list[str]:
    """Notes naming a cell of the rewritten notebook (``NAME, cell N: ...``), naming it in the master."""
    head = re.compile(rf"^{re.escape(name)}, cell (\d+):")

    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"{name}, cell {numbers[n - 1] if 0 < n <= len(numbers) else n}:"

    return [head.sub(one, note) for note in notes]


def unread_format(name: str, cells: list[Any], v0: bool) -> str:
    """Why a master notebook gives no question, in one line: which format it is in, and what is missing."""
    if v0:
        return (
            f"{name} is in otter's first format (otter assign --v0) but has no question: no ```BEGIN QUESTION``` "
            "block followed by an answer with tests, or 'manual: true'; nothing was imported"
        )
    if any(c.cell_type == "raw" and RAW_MARKER.match(_first_line(c)) for c in cells):
        return (
            f"{name} is in otter assign's format but has no question: no '# BEGIN QUESTION' raw cell with tests "
            "or 'manual: true', and no tests/*.py beside it; nothing was imported"
        )
    if any("nbgrader" in c.get("metadata", {}) for c in cells):
        return f"{name} is an nbgrader notebook (its cells carry nbgrader metadata): import it with `grader import nbgrader`"
    for k, cell in enumerate(cells, 1):
        if cell.cell_type != "raw" and RAW_MARKER.match(_first_line(cell)):
            return (
                f"{name}, cell {k}: '{_first_line(cell).strip()}' is in a {cell.cell_type} cell, where otter reads it "
                "only in a raw cell; make it a raw cell and import again; nothing was imported"
            )
    return (
        f"{name} is in no otter format: neither otter assign's raw cells ('# ASSIGNMENT CONFIG', '# BEGIN "
        "QUESTION') nor its first format's ```BEGIN QUESTION``` Markdown blocks; nothing was imported"
    )
