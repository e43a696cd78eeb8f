"""What of a notebook is the student's own: its code as canonical fragments, each with its cell,
lines and question, and its markdown answers as text.

Left out: outputs (never read), IPython magics and shell lines, markdown cells the skeleton has,
and the skeleton's statements (its given data cells, imports and printing lines, the same whatever
the whitespace and comments): they are not the student's. The fragments the skeleton or the
solution hold are *expected* code, never evidence: writing what the solution writes is not a sign
of copying. The fragments of the common ways of writing each question (``baseline``) are kept, and
weighed as common.

A notebook's fragments (``canon``) are its statements, the expressions inside them, and the data
flow between them: for each statement, the statement whose value it reads (``scores`` computed
this way, then read by that softmax), which reordering cells or statements does not change.

Each statement belongs to the question whose checked names it feeds, by the data flow the grader
reads (the names each top-level statement binds and reads): a statement belongs to the first
question, in the assignment's order, whose checked names are computed from it, directly or
through other names.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from grader.course.model import Assignment
from grader.errors import NotebookError
from grader.notebook import fill_blanks, module_level_binds, read
from grader.notebook.scopes import free_reads
from grader.similarity import baseline
from grader.similarity.canon import (
    CellNames,
    Statement,
    cell_names,
    context,
    fragment_key,
    parse_chunks,
    statements,
)
from grader.similarity.forms import Context
from grader.similarity.tokens import without_magics, word_shingles

NO_QUESTION = -1
MIN_MARKDOWN_WORDS = 8  # a markdown cell shorter than this is a heading or a note, not an answer
STATEMENT, EXPRESSION, FLOW = 0, 1, 2  # the kinds of fragment


@dataclass(frozen=True)
class Expected:
    """What every submission of the assignment may hold without having copied it."""

    statements: frozenset[int]  # the skeleton's statements, as written (names and numbers kept)
    markdown: frozenset[str]  # the skeleton's markdown cells, whitespace collapsed
    fragments: frozenset[int]  # the skeleton's and the solution's fragments: never evidence
    common: frozenset[int]  # fragments of common ways of writing the questions: weak evidence
    questions: tuple[tuple[str, str, frozenset[str]], ...]  # (id, title, checked names), in order
    libraries: frozenset[str] = frozenset()  # names the skeleton's imports bind
    common_coarse: frozenset[int] = frozenset()  # common fragments with names, numbers and strings alike
    fixed: frozenset[str] = frozenset()  # names the assignment fixes: given, checked, bound by the skeleton


@dataclass
class Document:
    """One notebook's own work, as fragments over its canonical tokens."""

    key: str  # unique in the run
    student: str
    origin: str
    past: bool
    cells: npt.NDArray[np.int32]  # each canonical token's cell (1-based among all the notebook's cells)
    lines: npt.NDArray[np.int32]  # each token's line in its cell
    questions: npt.NDArray[np.int16]  # each token's question (index into Expected.questions), or NO_QUESTION
    keys: npt.NDArray[np.int64]  # each fragment occurrence: its key ...
    starts: npt.NDArray[np.int32]  # ... the tokens it covers (start, end) ...
    ends: npt.NDArray[np.int32]
    sizes: npt.NDArray[np.int32]  # ... its size in canonical tokens ...
    kinds: npt.NDArray[np.int8]  # ... its kind (STATEMENT, EXPRESSION, FLOW) ...
    common: npt.NDArray[np.bool_]  # ... whether it is a common way of writing it (the baseline's) ...
    flows: npt.NDArray[np.int64]  # ... and for a flow, the keys of its two statements (n, 2); else 0
    sources: dict[int, str] = field(default_factory=dict)  # cell -> its code, for the side-by-side view
    own_lines: dict[int, set[int]] = field(default_factory=dict)  # cell -> the lines that are the student's
    markdown: dict[int, str] = field(default_factory=dict)  # cell -> the student's own markdown text
    shingles: dict[int, set[int]] = field(default_factory=dict)  # cell -> its word shingles

    @property
    def tokens(self) -> int:
        return len(self.cells)

    def unique_keys(self) -> npt.NDArray[np.int64]:
        return np.unique(self.keys)


_COMMENT = re.compile(r"#[^\n]*")
_SPACE = re.compile(r"\s+")


def _exact(code: str, stmt: ast.stmt) -> int:
    """A statement as written, whatever its whitespace and comments (for the skeleton's own)."""
    text = ast.get_source_segment(code, stmt)
    if text is None:
        return fragment_key("X", [ast.dump(stmt, include_attributes=False)])
    return fragment_key("X", [_SPACE.sub("", _COMMENT.sub("", text))])


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


@dataclass(frozen=True)
class _Cell:
    """A cell's code as read once, whatever notebook it is in (the skeleton's cells are in every one)."""

    body: tuple[ast.stmt, ...]
    names: CellNames
    exact: tuple[int, ...]  # each top-level statement as written (for the skeleton's own)
    binds: tuple[frozenset[str], ...]  # the names each top-level statement binds, and reads
    reads: tuple[frozenset[str], ...]
    lines: tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=4096)
def _cell(source: str) -> _Cell:
    code = fill_blanks(without_magics(source))
    body = parse_chunks(code)
    return _Cell(
        tuple(body),
        cell_names(body),
        tuple(_exact(code, stmt) for stmt in body),
        tuple(frozenset(module_level_binds(ast.Module(body=[stmt], type_ignores=[]))) for stmt in body),
        tuple(frozenset(free_reads(stmt)) for stmt in body),
        tuple((stmt.lineno, stmt.end_lineno or stmt.lineno) for stmt in body),
    )


def _cells(path: Path) -> list[tuple[int, str, _Cell]]:
    """(cell number, source, the cell as read) of each code cell the grader reads."""
    return [(cell.index, cell.source, _cell(cell.source)) for cell in read(path) if not cell.skipped]


_CANONICAL: dict[tuple[object, ...], tuple[Statement, ...]] = {}
_CANONICAL_MAX = 4096


def _canonical(source: str, cell: _Cell, ctx: Context, helpers: dict[str, _Helper]) -> tuple[Statement, ...]:
    """The cell's canonical statements, kept by its text and the part of the context it uses
    (the skeleton's cells read the same in every notebook)."""
    used = set(cell.names.used)
    grew = True
    while grew:  # the helpers it calls, and those they call
        more: set[str] = set()
        for h in used & helpers.keys():
            more |= helpers[h][2]
        grew = not more <= used
        used |= more
    key = (
        source,
        ctx.fixed & used,
        ctx.libraries & used,
        ctx.defined & used,
        tuple(sorted((h, *helpers[h][:2]) for h in used & helpers.keys())),
    )
    found = _CANONICAL.get(key)
    if found is None:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        found = _CANONICAL[key] = tuple(statements(cell.body, ctx))
    return found


_Helper = tuple[tuple[str, ...], str, frozenset[str]]  # parameters, body as written, names it uses


def _helper_signatures(ctx: Context) -> dict[str, _Helper]:
    """Each helper: its parameters, its body as written, and the names its body uses."""
    return {
        name: (params, ast.dump(body), frozenset(n.id for n in ast.walk(body) if isinstance(n, ast.Name)))
        for name, (params, body) in ctx.helpers.items()
    }


@dataclass(frozen=True)
class _Fragment:
    key: int
    kind: int
    size: int
    at: tuple[tuple[int, int], ...]  # (statement number, -1) of each part it covers
    spans: tuple[tuple[int, int], ...]  # token ranges within those statements
    ends: tuple[tuple[int, int], ...] = ()  # a flow's two statements, counted or not: ((t, -1), (n, -1))
    coarse: int = 0  # the key with names, numbers and strings alike (0 for a flow)


def fragments(stmts: list[Statement], counted: list[bool], silent: frozenset[int] = frozenset()) -> list[_Fragment]:
    """Every fragment of a notebook's statements (in notebook order): statements, expressions,
    and the data flow from the statement whose value each one reads. ``counted`` says which
    statements are the student's; a flow fragment covers only its counted ends. The ``silent``
    statements (a helper written out where it is called) are no end of a flow."""
    out: list[_Fragment] = []
    keys = [s.key for s in stmts]
    binder: dict[tuple[tuple[int, ...], str], int] = {}  # (scope, name) -> the statement that last bound it

    def source(scope: tuple[int, ...], name: str) -> int | None:
        for depth in range(len(scope), -1, -1):
            found = binder.get((scope[:depth], name))
            if found is not None:
                return found
        return None

    for n, s in enumerate(stmts):
        whole = (0, len(s.tokens))
        if counted[n]:
            out.append(_Fragment(keys[n], STATEMENT, len(s.tokens), ((n, -1),), (whole,), (), s.coarse_key))
            for start, end in s.spans:
                out.append(
                    _Fragment(
                        s.span_key(start, end),
                        EXPRESSION,
                        end - start,
                        ((n, -1),),
                        ((start, end),),
                        (),
                        s.coarse_span_key(start, end),
                    )
                )
        sources = sorted({t for t in (source(s.scope, r) for r in s.reads) if t is not None and t != n} - silent)
        if n in silent:
            sources = []
        for t in sources:
            if not (counted[t] or counted[n]):
                continue
            ends = [(m, (0, len(stmts[m].tokens))) for m in (t, n) if counted[m]]
            out.append(
                _Fragment(
                    fragment_key("D", (str(keys[t]), str(keys[n]))),
                    FLOW,
                    len(stmts[t].tokens) + len(s.tokens),
                    tuple((m, -1) for m, _ in ends),
                    tuple(span for _, span in ends),
                    ((t, -1), (n, -1)),
                )
            )
        for name in s.binds:
            binder[(s.scope, name)] = n
        if s.opens:  # a function's parameters, seen by its body (the statements that follow, one scope in)
            inner = next((x.scope for x in stmts[n + 1 :] if len(x.scope) > len(s.scope)), None)
            for name in s.opens:
                if inner is not None:
                    binder[(inner, name)] = n
    return out


def _read_statements(
    cells: list[tuple[int, str, _Cell]], ctx: Context
) -> tuple[list[Statement], list[int], list[tuple[int, int]]]:
    """The notebook's statements, each one's cell, and (cell, top-level statement) of each."""
    stmts: list[Statement] = []
    at_cell: list[int] = []
    helpers = _helper_signatures(ctx)
    for number, source, cell in cells:
        found = _canonical(source, cell, ctx, helpers)
        stmts.extend(found)
        at_cell.extend([number] * len(found))
    return stmts, at_cell, [(c, s.top) for c, s in zip(at_cell, stmts, strict=True)]


def _written_out(stmts: list[Statement], ctx: Context) -> set[int]:
    """The statements of the one-expression helpers the notebook calls (their ``def`` and
    ``return``, or the ``lambda``): each call is the helper's expression written out with its
    arguments, so the helper's code counts where it is used, as it would had the student written it
    there by hand."""
    called = {name for s in stmts for name in s.reads} & ctx.helpers.keys()
    out: set[int] = set()
    for n, s in enumerate(stmts):
        if not (len(s.binds) == 1 and next(iter(s.binds)) in called and ("def" in s.tokens or "lambda" in s.tokens)):
            continue
        out.add(n)
        depth = len(s.scope)
        for m in range(n + 1, len(stmts)):
            if len(stmts[m].scope) <= depth:
                break
            out.add(m)
    return out


def expected(assignment: Assignment) -> Expected:
    """The skeleton's statements and markdown, and the expected and common fragments, of an assignment."""
    exact: set[int] = set()
    markdown: set[str] = set()
    keys: set[int] = set()
    libraries: set[str] = set()
    solution_cells: list[tuple[int, str, list[ast.stmt]]] = []
    skeleton_cells: list[tuple[int, str, list[ast.stmt]]] = []
    checked = frozenset().union(*(c.names for q in assignment.questions for c in q.checks))
    fixed = set(assignment.given) | checked
    if assignment.skeleton.is_file():
        try:
            fixed.update(name for _, _, c in _cells(assignment.skeleton) for binds in c.binds for name in binds)
        except (NotebookError, OSError, ValueError):
            pass
    for path, is_skeleton in ((assignment.skeleton, True), (assignment.solution, False)):
        if not path.is_file():
            continue
        try:
            cells = _cells(path)
            raw = _notebook_json(path)
        except (NotebookError, OSError, ValueError):
            continue
        ctx = context((c.names for _, _, c in cells), (), fixed)
        libraries |= ctx.libraries
        stmts, _, _ = _read_statements(cells, ctx)
        for f in fragments(stmts, [True] * len(stmts)):
            keys.add(f.key)
        if is_skeleton:
            exact.update(k for _, _, c in cells for k in c.exact)
            markdown.update(_collapse(_text(c)) for c in raw if c.get("cell_type") == "markdown")
        else:
            solution_cells = [(n, source, list(c.body)) for n, source, c in cells]
        if is_skeleton:
            skeleton_cells = [(n, source, list(c.body)) for n, source, c in cells]
    common: set[int] = set()
    coarse: set[int] = set()
    for source in baseline.sources(solution_cells, skeleton_cells, frozenset(fixed)):
        body = parse_chunks(source)
        if not body:
            continue
        found = statements(body, context([cell_names(body)], libraries, fixed))
        for f in fragments(found, [True] * len(found)):
            common.add(f.key)
            coarse.add(f.coarse)
    questions = tuple((q.id, q.title, frozenset().union(*(c.names for c in q.checks))) for q in assignment.questions)
    return Expected(
        frozenset(exact),
        frozenset(markdown),
        frozenset(keys),
        frozenset(common - keys),
        questions,
        frozenset(libraries),
        frozenset(coarse - {0}),
        frozenset(fixed),
    )


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
    cells = _cells(path)
    raw = _notebook_json(path)
    ctx = context((c.names for _, _, c in cells), known.libraries, known.fixed)
    names = tuple(q[2] for q in known.questions)
    # Which question each top-level statement belongs to, and whether it is the student's own.
    tops: list[tuple[int, int]] = []
    flow: list[tuple[frozenset[str], frozenset[str]]] = []
    own_top: dict[tuple[int, int], bool] = {}
    lines_top: dict[tuple[int, int], tuple[int, int]] = {}
    for number, _, cell in cells:
        for t, stmt in enumerate(cell.body):
            tops.append((number, t))
            binds = cell.binds[t]
            if not isinstance(stmt, (ast.Import, ast.ImportFrom)):  # np.sort(x) changes x, not np
                binds -= ctx.libraries
            flow.append((binds, cell.reads[t]))
            own_top[(number, t)] = cell.exact[t] not in known.statements
            lines_top[(number, t)] = cell.lines[t]
    question_of = dict(zip(tops, owners(flow, names), strict=True))
    stmts, at_cell, at_top = _read_statements(cells, ctx)
    own = [own_top.get(t, False) for t in at_top]
    out = frozenset(_written_out(stmts, ctx))
    counted = [
        o and s.key not in known.fragments and n not in out for n, (o, s) in enumerate(zip(own, stmts, strict=True))
    ]
    # Canonical tokens of the student's own statements, in notebook order.
    offset: list[int] = []
    t_cells: list[int] = []
    t_lines: list[int] = []
    t_questions: list[int] = []
    for s, number, top, is_own in zip(stmts, at_cell, at_top, own, strict=True):
        offset.append(len(t_cells))
        if not is_own:
            continue
        t_cells.extend([number] * len(s.tokens))
        t_lines.extend(s.lines)
        t_questions.extend([question_of.get(top, NO_QUESTION)] * len(s.tokens))
    rows_key: list[int] = []
    rows_start: list[int] = []
    rows_end: list[int] = []
    rows_size: list[int] = []
    rows_kind: list[int] = []
    rows_common: list[bool] = []
    rows_flow: list[tuple[int, int]] = []
    usual = [
        s.usual
        or s.key in known.common
        or s.key in known.fragments
        or s.coarse_key in known.common_coarse
        or (bool(s.plain) and (s.plain_keys[0] in known.common or s.plain_keys[1] in known.common_coarse))
        for s in stmts
    ]
    for f in fragments(stmts, counted, out):
        if f.key in known.fragments:
            continue
        common = (
            f.key in known.common
            or (f.kind != FLOW and (f.coarse in known.common_coarse or usual[f.at[0][0]]))
            or (f.kind == FLOW and all(usual[n] for n, _ in f.ends))
        )
        for (n, _), (start, end) in zip(f.at, f.spans, strict=True):
            rows_key.append(f.key)
            rows_start.append(offset[n] + start)
            rows_end.append(offset[n] + end)
            rows_size.append(f.size)
            rows_kind.append(f.kind)
            rows_common.append(common)
            rows_flow.append((stmts[f.ends[0][0]].key, stmts[f.ends[1][0]].key) if f.kind == FLOW else (0, 0))
    own_lines: dict[int, set[int]] = {}
    for (number, t), is_own in own_top.items():
        if is_own:
            first, last = lines_top[(number, t)]
            own_lines.setdefault(number, set()).update(range(first, last + 1))
    sources = {number: source for number, source, _ in cells if number in own_lines}
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
        cells=np.array(t_cells, dtype=np.int32),
        lines=np.array(t_lines, dtype=np.int32),
        questions=np.array(t_questions, dtype=np.int16),
        keys=np.array(rows_key, dtype=np.int64),
        starts=np.array(rows_start, dtype=np.int32),
        ends=np.array(rows_end, dtype=np.int32),
        sizes=np.array(rows_size, dtype=np.int32),
        kinds=np.array(rows_kind, dtype=np.int8),
        common=np.array(rows_common, dtype=bool),
        flows=np.array(rows_flow, dtype=np.int64).reshape(-1, 2),
        sources=sources,
        own_lines=own_lines,
        markdown=markdown,
        shingles=shingles,
    )
