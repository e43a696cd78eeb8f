"""Reading submissions and understanding their code without running it.

- ``read(path)`` turns a file into a list of code cells, or raises NotebookError with one sentence.
- ``find_blanks(source)`` finds the course's ``?`` blanks, which are not valid Python.
- ``analyse(cells)`` works out, per cell, which names it binds and reads (by parsing, never by
  running), which cells hold unfilled blanks, and which names cannot have a value because of them.

Answers are found by what the notebook computes, not by cell ids or metadata, which students'
editors drop, copy and reorder.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader.errors import NotebookError

MAX_NOTEBOOK_BYTES = 20_000_000  # 20 MB, as the message says
SKIP_TAG = "skip-grading"
BLANK_NAME = "__grader_blank__"


@dataclass(frozen=True)
class Cell:
    index: int  # position among the notebook's code cells, 1-based as students count
    source: str
    tags: tuple[str, ...] = ()

    @property
    def skipped(self) -> bool:
        return SKIP_TAG in self.tags


@dataclass(frozen=True)
class Blank:
    cell: int
    line: int
    text: str  # the line as the student sees it

    def where(self) -> str:
        return f"cell {self.cell}, line {self.line}: `{self.text.strip()}`"


def read(path: Path, *, max_bytes: int = MAX_NOTEBOOK_BYTES) -> list[Cell]:
    """The code cells of a notebook file. Raises NotebookError with a one-sentence reason."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NotebookError(f"The file cannot be opened ({exc.strerror}).") from None
    if size == 0:
        raise NotebookError("The file is empty.")
    if size > max_bytes:
        raise NotebookError(
            f"The notebook is {size / 1e6:.1f} MB, larger than the {max_bytes / 1e6:.0f} MB limit; "
            "clear large outputs or embedded images and submit again."
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"The file is not UTF-8 text (undecodable byte at offset {exc.start}).") from None
    if not text.strip():
        raise NotebookError("The file is empty.")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"The file is not JSON, so not a notebook (line {exc.lineno}: {exc.msg}).") from None
    except RecursionError:
        raise NotebookError("The file is JSON nested too deeply to be a notebook.") from None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        raise NotebookError("The file is JSON but not a Jupyter notebook (it has no cells).")
    major = data.get("nbformat")
    if not isinstance(major, int) or major < 4:
        if major in (1, 2, 3):
            try:
                nb = nbformat.reads(text, as_version=4)
            except Exception as exc:
                raise NotebookError(f"The notebook uses format version {major} and cannot be upgraded: {_one_line(exc)}.") from None
        else:
            raise NotebookError(f"The notebook format version {major!r} is not supported (expected 4).")
    elif major > 4:
        raise NotebookError(f"The notebook format version {major} is newer than this grader supports (4).")
    else:
        # Editors write slightly off notebooks all the time (missing ids, extra metadata): only
        # reject what cannot be used, and say exactly what that is.
        problem = _unusable(data)
        if problem:
            raise NotebookError(f"The notebook structure is invalid: {problem}.")
        nb = nbformat.from_dict(data)
    cells = []
    for cell in nb.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        if not isinstance(source, str):
            raise NotebookError("A code cell's source is not text.")
        tags = cell.get("metadata", {}).get("tags", []) if isinstance(cell.get("metadata"), dict) else []
        tags = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
        cells.append(Cell(index=len(cells) + 1, source=source, tags=tags))
    return cells


def _unusable(data: dict) -> str:
    cells = data.get("cells")
    if not isinstance(cells, list):
        return "'cells' is not a list"
    for n, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            return f"cell {n} is not an object"
        source = cell.get("source", "")
        if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
            return f"the source of cell {n} is not text"
    return ""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__).rstrip(".")[:200]


# --------------------------------------------------------------------------------------------
# The same cell text is read again and again: by ``analyse``, again for every variant run
# (``variants.with_injections``), and in every submission that keeps the notebook's given cells
# as they were. Tokenizing and walking syntax trees are most of the grader's own time per
# submission, so their results are kept by exact text. Those results are immutable (strings,
# tuples, frozen dataclasses), so handing the same one out again is safe.

# Bounded by count and by text length: ordinary cells (the course's are at most ~1,200 characters)
# take a few MB in all, and cells written to fill the caches (2,000 characters of one-statement
# lines) keep them under 70 MB.
CACHED_TEXT_CHARS = 2_000  # longer texts are worked out each time
CACHED_TEXTS = 256  # per cache: the cells of several submissions (a batch grades two at a time)


def _cached_by_text(fn):
    """``fn(text)``, kept by exact text in a bounded cache; ``fn.uncached`` is the plain function."""
    cached = functools.lru_cache(maxsize=CACHED_TEXTS)(fn)

    @functools.wraps(fn)
    def wrapper(text: str):
        return cached(text) if len(text) <= CACHED_TEXT_CHARS else fn(text)

    wrapper.uncached, wrapper.cache_info, wrapper.cache_clear = fn, cached.cache_info, cached.cache_clear
    return wrapper


# --------------------------------------------------------------------------------------------
# Blanks

_HELP_RE = re.compile(r"^\s*\?{1,2}[A-Za-z_]")  # IPython help: ?name, ??name


def find_blanks(source: str, cell: int = 0) -> list[Blank]:
    """Every ``?`` that stands for missing code: ``x = ?``, a bare ``?``, ``f(?, 1)``.

    IPython's help syntax (``obj?``, ``?obj``) is not a blank.
    """
    if "?" not in source:
        return []
    return [Blank(cell=cell, line=line, text=text) for line, text in _blank_lines(source)]


@_cached_by_text
def _blank_lines(source: str) -> tuple[tuple[int, str], ...]:
    """(line number, line) of every blank in the source."""
    blanks: list[tuple[int, str]] = []
    lines = source.splitlines()
    prev: tokenize.TokenInfo | None = None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = _fallback_tokens(source)
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                prev = None
            continue
        if tok.string == "?" or (tok.type == tokenize.ERRORTOKEN and tok.string.strip() == "?"):
            line = lines[tok.start[0] - 1] if tok.start[0] - 1 < len(lines) else ""
            after_name = prev is not None and (prev.type == tokenize.NAME or prev.string in (")", "]", "?"))
            if not after_name and not _HELP_RE.match(line):
                blanks.append((tok.start[0], line))
        prev = tok
    return tuple(blanks)


def _fallback_tokens(source: str) -> list[tokenize.TokenInfo]:
    """Tokens up to the first tokenizer error, line by line, so a broken cell still shows blanks."""
    out: list[tokenize.TokenInfo] = []
    for n, line in enumerate(source.splitlines(), 1):
        try:
            for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
                out.append(tok._replace(start=(n, tok.start[1]), end=(n, tok.end[1])))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            continue
    return out


@_cached_by_text
def fill_blanks(source: str) -> str:
    """The source with every blank replaced by a name that raises when evaluated."""
    blanks = find_blanks(source)
    if not blanks:
        return source
    lines = source.splitlines(keepends=True)
    for b in blanks:
        line = lines[b.line - 1]
        lines[b.line - 1] = _replace_blank_marks(line)
    return "".join(lines)


def _replace_blank_marks(line: str) -> str:
    out = []
    in_str: str | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if in_str:
            out.append(ch)
            if ch == "\\":
                out.append(line[i + 1 : i + 2])
                i += 2
                continue
            if line.startswith(in_str, i):
                out.append(line[i + 1 : i + len(in_str)])
                i += len(in_str)
                in_str = None
                continue
        elif ch == "#":
            out.append(line[i:])
            break
        elif ch in "\"'":
            in_str = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else ch
            out.append(in_str)
            i += len(in_str)
            continue
        elif ch == "?":
            out.append(BLANK_NAME)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


# --------------------------------------------------------------------------------------------
# Static analysis of what each cell binds and reads


_MAGIC_RE = re.compile(r"^(\s*)([%!].*)$", re.M)


def python_source(source: str) -> str:
    """The cell as plain Python for parsing: IPython magics and shell lines become `pass`."""
    if source.lstrip().startswith("%%"):
        return "pass\n"
    return _MAGIC_RE.sub(lambda m: f"{m.group(1)}pass", source)


@dataclass
class CellInfo:
    cell: Cell
    binds: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    blanks: list[Blank] = field(default_factory=list)
    blanked: dict[str, Blank] = field(default_factory=dict)  # names a blank keeps from being computed
    statements: list[tuple[frozenset[str], frozenset[str]]] = field(default_factory=list)  # (binds, reads) per statement
    syntax_error: str | None = None


def module_level_binds(tree: ast.Module) -> set[str]:
    """Names a cell binds in the notebook's namespace (not inside functions or classes)."""
    binds: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(child.name)
                for sub in ast.walk(child):
                    if isinstance(sub, ast.Global):
                        binds.update(sub.names)
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                binds.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    if alias.name != "*":
                        binds.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for sub in ast.walk(child):
                    if isinstance(sub, ast.NamedExpr):
                        binds.add(sub.target.id)
                continue
            visit(child)

    visit(tree)
    return binds


@dataclass(frozen=True, slots=True)  # slots: a cell can hold a thousand of these, and they are cached
class Statement:
    """One top-level statement of a cell: where it is, and the names it binds and reads."""

    lineno: int
    end_lineno: int | None
    end_col_offset: int | None  # counted in UTF-8 bytes, as ast counts
    binds: frozenset[str]  # what module_level_binds finds in the statement alone
    reads: frozenset[str]


@dataclass(frozen=True)
class ParsedCell:
    """A cell's code as the grader reads it: its statements, or why it is not valid Python."""

    statements: tuple[Statement, ...] = ()
    syntax_error: str | None = None  # "line N: message"


@_cached_by_text
def parse_cell(source: str) -> ParsedCell:
    """The top-level statements of a cell (magics read as ``pass``), or its syntax error."""
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError as exc:
        return ParsedCell(syntax_error=f"line {exc.lineno}: {exc.msg}")
    statements = []
    shared: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set keeps a cached parse small
    for stmt in tree.body:
        binds = frozenset(module_level_binds(ast.Module(body=[stmt], type_ignores=[])))
        reads = frozenset(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and not isinstance(n.ctx, (ast.Store, ast.Del)))
        statements.append(Statement(stmt.lineno, stmt.end_lineno, stmt.end_col_offset,
                                    shared.setdefault(binds, binds), shared.setdefault(reads, reads)))
    return ParsedCell(statements=tuple(statements))


_ASSIGNED_RE = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)", re.M)


def analyse(cells: list[Cell]) -> list[CellInfo]:
    infos = []
    for cell in cells:
        info = CellInfo(cell=cell, blanks=find_blanks(cell.source, cell.index))
        text = fill_blanks(cell.source) if info.blanks else cell.source
        parsed = parse_cell(text)
        if parsed.syntax_error is not None:
            info.syntax_error = parsed.syntax_error
            # Keep what can be known: names assigned at the start of lines still count as bound,
            # so a question depending on them is reported against this cell, not as missing.
            info.binds = set(_ASSIGNED_RE.findall(python_source(text)))
            infos.append(info)
            continue
        for stmt in parsed.statements:  # the cell's sets are the unions of its statements'
            info.statements.append((stmt.binds, stmt.reads))
            info.binds |= stmt.binds
            info.reads |= stmt.reads
        if info.blanks:
            info.blanked = _blanked_names(parsed.statements, info.blanks)
        infos.append(info)
    return infos


def _blanked_names(statements: tuple[Statement, ...], blanks: list[Blank]) -> dict[str, Blank]:
    """Names that cannot get the student's value in a cell with blanks, each with its blank.

    A statement holding a blank cannot produce its names; statements after the first blank
    never run. Statements before it run normally, so what they bind is the student's.
    """
    out: dict[str, Blank] = {}
    first = min(b.line for b in blanks)
    for stmt in statements:
        end = stmt.end_lineno or stmt.lineno
        inside = [b for b in blanks if stmt.lineno <= b.line <= end]
        if not inside and end < first:
            continue
        cause = inside[0] if inside else max((b for b in blanks if b.line < stmt.lineno), key=lambda b: b.line)
        for name in stmt.binds:
            out.setdefault(name, cause)
    return out


@dataclass(frozen=True)
class BlankReport:
    """Which names cannot have the student's own value because of unfilled blanks."""

    blanks: tuple[Blank, ...]
    tainted: dict[str, Blank]  # name -> the blank it depends on

    def cause(self, names: set[str]) -> Blank | None:
        """The first blank, in notebook order, that any of these names depends on."""
        found = [self.tainted[n] for n in names if n in self.tainted]
        return min(found, key=lambda b: (b.cell, b.line)) if found else None


def blank_report(infos: list[CellInfo]) -> BlankReport:
    """Propagate blanks forward through the cells: a cell that reads a name that depends on a
    blank makes everything it binds depend on that blank too."""
    tainted: dict[str, Blank] = {}
    blanks: list[Blank] = []
    for info in infos:
        if info.cell.skipped:
            continue
        if info.blanks:
            blanks.extend(info.blanks)
            blanked = info.blanked or {name: info.blanks[0] for name in info.binds}
            for name, blank in blanked.items():
                tainted.setdefault(name, blank)
        # Statement by statement, so a cell that defines a function next to a blanked line keeps it.
        statements = info.statements or [(info.binds, info.reads)]
        for binds, reads in statements:
            source = next((tainted[n] for n in sorted(reads) if n in tainted), None)
            for name in binds:
                if name in info.blanked:
                    continue
                if source is not None:
                    tainted.setdefault(name, source)
                elif name in tainted and name not in reads:
                    # Rebound from scratch by a later, complete statement: answered there.
                    del tainted[name]
    return BlankReport(blanks=tuple(blanks), tainted=tainted)


def first_binds(infos: list[CellInfo]) -> dict[str, int]:
    """Each name -> the position (0-based, among code cells) of the first cell that binds it: where
    a question with ``before: NAME`` is answered, just before that cell."""
    out: dict[str, int] = {}
    for pos, info in enumerate(infos):
        for name in info.binds:
            out.setdefault(name, pos)
    return out


def identifiers(expr: str) -> set[str]:
    """Free names an expression reads (for deciding what a check depends on)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def dependencies(infos: list[CellInfo], sources: tuple[str, ...]) -> dict[str, set[str]]:
    """Which of ``sources`` each name's value is computed from, following the data flow statement
    by statement (a fresh rebinding that reads none of them clears the dependency)."""
    deps: dict[str, set[str]] = {s: {s} for s in sources}
    for info in infos:
        if info.cell.skipped:
            continue
        for binds, reads in info.statements or [(info.binds, info.reads)]:
            found: set[str] = set()
            for name in reads:
                found |= deps.get(name, set())
            for name in binds:
                if found:
                    deps[name] = (deps.get(name, set()) | found) if name in reads else set(found)
                elif name not in reads and name not in sources:
                    deps.pop(name, None)
    return deps
