"""What of a notebook is the student's own: its code as tokens, each with its cell, line and
question, and its markdown answers as text.

Left out: outputs (never read), IPython magics and shell lines, and markdown cells the skeleton
has. The skeleton's statements (its given data cells, imports and printing lines, written the same
whatever the whitespace and comments) stay in the token stream, so the runs around them read as
they do in the solution, but they are not the student's (``Document.own``) and never count. The
skeleton's and the solution's runs of tokens are *expected* code: never taken as evidence
(``Expected.grams``), so writing what the solution writes is not a sign of copying.

Each statement belongs to the question whose checked names it feeds, by the data flow the grader
reads (``grader.notebook.parse_cell``: the names each statement binds and reads): a statement
belongs to the first question, in the assignment's order, whose checked names are computed from
it, directly or through other names.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from grader.course.model import Assignment
from grader.errors import NotebookError
from grader.notebook import fill_blanks, parse_cell, read
from grader.notebook.flow import parse_quietly
from grader.notebook.textcache import cached_by_text
from grader.similarity.tokens import Hashes, cell_tokens, kgram_hashes, token_hash, without_magics, word_shingles

NO_QUESTION = -1
MIN_MARKDOWN_WORDS = 8  # a markdown cell shorter than this is a heading or a note, not an answer


@dataclass(frozen=True)
class Expected:
    """What every submission of the assignment may hold without having copied it."""

    statements: frozenset[tuple[str, ...]]  # the skeleton's statements, token by token as written
    markdown: frozenset[str]  # the skeleton's markdown cells, whitespace collapsed
    grams: frozenset[int]  # k-gram hashes of the skeleton's and the solution's code
    questions: tuple[tuple[str, str, frozenset[str]], ...]  # (id, title, checked names), in order


@dataclass
class Document:
    """One notebook's own work, ready to fingerprint."""

    key: str  # unique in the run
    student: str
    origin: str
    past: bool
    tokens: Hashes  # normalised token hashes of the notebook's code, in notebook order
    own: npt.NDArray[np.bool_]  # which tokens are the student's (not a statement of the skeleton's)
    cells: npt.NDArray[np.int32]  # each token's cell (1-based among all the notebook's cells)
    lines: npt.NDArray[np.int32]  # each token's line in its cell
    questions: npt.NDArray[np.int16]  # each token's question (index into Expected.questions), or NO_QUESTION
    sources: dict[int, str] = field(default_factory=dict)  # cell -> its code, for the side-by-side view
    own_lines: dict[int, set[int]] = field(default_factory=dict)  # cell -> the lines that are the student's
    markdown: dict[int, str] = field(default_factory=dict)  # cell -> the student's own markdown text
    shingles: dict[int, set[int]] = field(default_factory=dict)  # cell -> its word shingles


@dataclass(frozen=True)
class _Unit:
    """One top-level statement of a cell, ready to fingerprint."""

    first: int
    last: int
    exact: tuple[str, ...]  # its tokens as written, for telling the skeleton's statements apart
    hashes: tuple[int, ...]  # its normalised tokens' hashes
    lines: tuple[int, ...]  # each token's line


@cached_by_text
def _statement_forms(source: str) -> tuple[_Unit, ...]:
    """Each top-level statement of a cell; a cell that is not valid Python is one statement."""
    code = fill_blanks(without_magics(source))
    tokens = cell_tokens(code)
    parsed = parse_cell(code)
    if parsed.syntax_error is not None or not parsed.statements:
        last = max((t.line for t in tokens), default=1)
        groups = [(1, last, tokens)] if tokens else []
    else:
        groups = []
        k = 0
        for stmt in parsed.statements:
            first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
            start = k
            while k < len(tokens) and tokens[k].line <= last:
                k += 1
            groups.append((first, last, tokens[start:k]))
    return tuple(
        _Unit(
            first,
            last,
            tuple(t.exact for t in toks),
            tuple(token_hash(t.norm) for t in toks),
            tuple(t.line for t in toks),
        )
        for first, last, toks in groups
    )


def _notebook_json(path: Path) -> list[dict[str, object]]:
    """The notebook's cells as JSON (after ``read`` accepted the file)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cells = data.get("cells", []) if isinstance(data, dict) else []
    return [c for c in cells if isinstance(c, dict)]


def _text(cell: dict[str, object]) -> str:
    source = cell.get("source", "")
    return "".join(str(s) for s in source) if isinstance(source, list) else str(source)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def expected(assignment: Assignment) -> Expected:
    """The skeleton's statements and markdown, and the expected code's k-grams, of an assignment."""
    statements: set[tuple[str, ...]] = set()
    markdown: set[str] = set()
    grams: set[int] = set()
    for path, is_skeleton in ((assignment.skeleton, True), (assignment.solution, False)):
        if not path.is_file():
            continue
        try:
            cells = read(path)
            raw = _notebook_json(path)
        except (NotebookError, OSError, ValueError):
            continue
        stream: list[int] = []
        for cell in cells:
            for unit in _statement_forms(cell.source):
                if is_skeleton:
                    statements.add(unit.exact)
                stream.extend(unit.hashes)
        grams.update(kgram_hashes(np.array(stream, dtype=np.uint64)).tolist())
        if is_skeleton:
            markdown.update(_collapse(_text(c)) for c in raw if c.get("cell_type") == "markdown")
    questions = tuple((q.id, q.title, frozenset().union(*(c.names for c in q.checks))) for q in assignment.questions)
    return Expected(frozenset(statements), frozenset(markdown), frozenset(grams), questions)


_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "add",
        "setdefault",
        "fill_",
        "copy_",
        "add_",
        "mul_",
        "div_",
        "sub_",
        "zero_",
        "masked_fill_",
        "sort",
        "reverse",
    }
)


_OP_ASSIGN = r"\s*(?:[-+*/@%&|^]|//|\*\*|<<|>>)?=(?!=)"
_IN_PLACE = re.compile(
    r"\]" + _OP_ASSIGN + r"|\.\w+" + _OP_ASSIGN + r"|\.(?:" + "|".join(sorted(_MUTATORS)) + r")\s*\("
)


@cached_by_text
def changed_in_place(code: str) -> tuple[frozenset[str], ...]:
    """For each top-level statement, the names it changes without binding them: ``rows.append(r)``,
    ``scores[i, j] = ...``, ``W.data += ...``. The data flow the grader reads follows bindings; a
    value built up in place is computed by these statements too."""
    if not _IN_PLACE.search(code):  # most cells: nothing to parse again
        return ()
    try:
        tree = parse_quietly(code)
    except SyntaxError:
        return ()
    out = []
    for stmt in tree.body:
        names: set[str] = set()
        for node in ast.walk(stmt):
            target = None
            if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                target = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
                target = node.func.value
            while isinstance(target, (ast.Subscript, ast.Attribute)):
                target = target.value
            if isinstance(target, ast.Name):
                names.add(target.id)
        out.append(frozenset(names))
    return tuple(out)


def owners(flow: list[tuple[frozenset[str], frozenset[str]]], questions: tuple[frozenset[str], ...]) -> list[int]:
    """For each statement (its binds and reads), the first question whose checked names it feeds,
    or NO_QUESTION: a backward slice from every statement that binds a checked name."""
    behind: dict[str, frozenset[int]] = {}  # name -> the statements its current value comes from
    feeds: list[set[int]] = [set() for _ in questions]
    for s, (binds, reads) in enumerate(flow):
        came = frozenset({s}).union(*(behind.get(r, frozenset()) for r in reads))
        for name in binds:
            behind[name] = came | behind.get(name, frozenset()) if name in reads else came
        for q, names in enumerate(questions):
            if binds & names:
                feeds[q] |= came
    out = []
    for s in range(len(flow)):
        out.append(next((q for q, f in enumerate(feeds) if s in f), NO_QUESTION))
    return out


def document(path: Path, *, key: str, student: str, origin: str, past: bool, known: Expected) -> Document:
    """The student's own work in the notebook at ``path``. Raises NotebookError with the reason
    when the file is not a notebook the grader can read."""
    cells = read(path)
    raw = _notebook_json(path)
    names = tuple(q[2] for q in known.questions)
    flow: list[tuple[frozenset[str], frozenset[str]]] = []
    units: list[tuple[int, _Unit, bool]] = []  # cell, statement, the student's own
    for cell in cells:
        if cell.skipped:
            continue
        code = fill_blanks(without_magics(cell.source))
        parsed = parse_cell(code)
        statements = _statement_forms(cell.source)
        if parsed.syntax_error is None and len(parsed.statements) == len(statements):
            changed = changed_in_place(code)
            if len(changed) != len(parsed.statements):  # nothing changed in place (or parsed otherwise)
                changed = (frozenset(),) * len(parsed.statements)
            flow.extend((s.binds | more, s.reads | more) for s, more in zip(parsed.statements, changed, strict=True))
        else:
            flow.extend((frozenset(), frozenset()) for _ in statements)
        units.extend((cell.index, unit, unit.exact not in known.statements) for unit in statements)
    owner = owners(flow, names)
    tokens: list[int] = []
    lines: list[int] = []
    at_cell: list[int] = []
    at_question: list[int] = []
    at_own: list[bool] = []
    own_lines: dict[int, set[int]] = {}
    for (cell_no, unit, own), q in zip(units, owner, strict=True):
        n = len(unit.hashes)
        tokens.extend(unit.hashes)
        lines.extend(unit.lines)
        at_cell.extend([cell_no] * n)
        at_question.extend([q] * n)
        at_own.extend([own] * n)
        if own and n:
            own_lines.setdefault(cell_no, set()).update(range(unit.first, unit.last + 1))
    sources: dict[int, str] = {}
    for cell in cells:
        if cell.index in own_lines:
            sources[cell.index] = cell.source
    markdown: dict[int, str] = {}
    shingles: dict[int, set[int]] = {}
    for number, c in enumerate(raw, 1):
        if c.get("cell_type") != "markdown":
            continue
        text = _text(c)
        if _collapse(text) in known.markdown or len(text.split()) < MIN_MARKDOWN_WORDS:
            continue
        markdown[number] = text
        shingles[number] = word_shingles(text)
    return Document(
        key=key,
        student=student,
        origin=origin,
        past=past,
        tokens=np.array(tokens, dtype=np.uint64),
        own=np.array(at_own, dtype=bool),
        cells=np.array(at_cell, dtype=np.int32),
        lines=np.array(lines, dtype=np.int32),
        questions=np.array(at_question, dtype=np.int16),
        sources=sources,
        own_lines=own_lines,
        markdown=markdown,
        shingles=shingles,
    )
