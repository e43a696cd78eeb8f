"""What each cell binds and reads, worked out by parsing, never by running; and which names a
blank leaves without a value."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal, overload

from grader.notebook.blanks import Blank, fill_blanks, find_blanks
from grader.notebook.read import Cell
from grader.notebook.scopes import free_reads, module_level_binds
from grader.notebook.textcache import cached_by_text

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
    statements: list[tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=list
    )  # (binds, reads) per statement
    syntax_error: str | None = None
    defines: dict[str, bool] = field(default_factory=dict)  # functions and classes defined here -> whether a class
    modules: set[str] = field(default_factory=set)  # the classes among them that are torch modules

    def by_statement(self) -> Sequence[tuple[AbstractSet[str], AbstractSet[str]]]:
        """(binds, reads) per statement; the whole cell as one when it was not split."""
        return self.statements or [(self.binds, self.reads)]


@dataclass(frozen=True, slots=True)  # slots: a cell can hold a thousand of these, and they are cached
class Statement:
    """One top-level statement of a cell: where it is, and the names it binds and reads."""

    lineno: int
    end_lineno: int | None
    end_col_offset: int | None  # counted in UTF-8 bytes, as ast counts
    binds: frozenset[str]  # what module_level_binds finds in the statement alone
    reads: frozenset[str]
    compound: bool = (
        False  # a block (loop, ``if``, ``with``, ``try``, ``def``, ``class``): nothing follows it on its line
    )
    # A function defined here that binds notebook names when called (``global S``): its name and those names.
    function: str = ""
    sets_globals: frozenset[str] = frozenset()
    defines: str = ""  # the function or class a ``def`` or ``class`` statement defines
    defines_class: bool = False
    defines_module: bool = False  # a class whose bases include a ``Module`` (``nn.Module``)


@dataclass(frozen=True)
class ParsedCell:
    """A cell's code as the grader reads it: its statements, or why it is not valid Python."""

    statements: tuple[Statement, ...] = ()
    syntax_error: str | None = None  # "line N: message"


@overload
def parse_quietly(text: str) -> ast.Module: ...
@overload
def parse_quietly(text: str, mode: Literal["eval"]) -> ast.Expression: ...
def parse_quietly(text: str, mode: str = "exec") -> ast.Module | ast.Expression:
    """``ast.parse`` without the warnings compiling emits (``invalid escape sequence`` and the
    like): they are the student's code's to show, in the run, not the grader's to print."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(text, mode=mode)
    assert isinstance(tree, (ast.Module, ast.Expression))
    return tree


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_COMPOUND = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    getattr(ast, "TryStar", ast.Try),
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
)


@cached_by_text
def parse_cell(source: str) -> ParsedCell:
    """The top-level statements of a cell (magics read as ``pass``), or its syntax error."""
    try:
        tree = parse_quietly(python_source(source))
    except SyntaxError as exc:
        return ParsedCell(syntax_error=f"line {exc.lineno}: {exc.msg}")
    statements = []
    shared: dict[frozenset[str], frozenset[str]] = {}  # one object per distinct set keeps a cached parse small
    for stmt in tree.body:
        binds = frozenset(module_level_binds(ast.Module(body=[stmt], type_ignores=[])))
        reads = frozenset(free_reads(stmt))
        function, sets = "", frozenset[str]()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sets = frozenset(n for sub in ast.walk(stmt) if isinstance(sub, ast.Global) for n in sub.names)
            function = stmt.name if sets else ""
        statements.append(
            Statement(
                stmt.lineno,
                stmt.end_lineno,
                stmt.end_col_offset,
                shared.setdefault(binds, binds),
                shared.setdefault(reads, reads),
                compound=isinstance(stmt, _COMPOUND),
                function=function,
                sets_globals=sets,
                defines=stmt.name if isinstance(stmt, _DEFINITIONS) else "",
                defines_class=isinstance(stmt, ast.ClassDef),
                defines_module=isinstance(stmt, ast.ClassDef)
                and any(
                    (b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) == "Module" for b in stmt.bases
                ),
            )
        )
    return ParsedCell(statements=tuple(statements))


_ASSIGNED_RE = re.compile(r"^([A-Za-z_]\w*)\s*=(?!=)", re.M)


def analyse(cells: list[Cell]) -> list[CellInfo]:
    """What each cell binds and reads, statement by statement. A statement that calls a function
    which assigns notebook names (``global S`` in its body) binds them there, where they get their
    value, as well as where the function is defined."""
    infos = []
    setters: dict[str, frozenset[str]] = {}  # function -> the notebook names a call of it binds
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
            called = frozenset().union(*(setters[n] for n in stmt.reads if n in setters)) if setters else frozenset()
            if stmt.function:
                setters[stmt.function] = stmt.sets_globals
            elif stmt.binds & setters.keys():
                for name in stmt.binds & setters.keys():
                    del setters[name]  # rebound to something else
            info.statements.append((stmt.binds | called, stmt.reads))
            if stmt.defines:
                info.defines[stmt.defines] = stmt.defines_class
                if stmt.defines_module:
                    info.modules.add(stmt.defines)
            info.binds |= called
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

    def cause(self, names: AbstractSet[str]) -> Blank | None:
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
        for binds, reads in info.by_statement():
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


def input_definitions(
    infos: list[CellInfo], names: tuple[str, ...], given: tuple[str, ...] = ()
) -> dict[str, list[tuple[int, int]]]:
    """For each name, the statements (cell position, statement index) that define it as the given
    input: every statement that binds it afresh (without reading it), so a student who repeats the
    data cell still gets the variant, while ``X = X.astype(...)`` keeps working on it. When some of
    these statements compute the name from another given input and others do not, only the others
    count: a student's own ``bank = X[11]`` in part 1 is not the data a later part gives as
    ``bank = torch.tensor([...])``. (A name only ever computed from other inputs, such as weights
    sized by the data, keeps all its definitions.)"""
    inputs = set(given)
    plain: dict[str, list[tuple[int, int]]] = {n: [] for n in names}
    derived: dict[str, list[tuple[int, int]]] = {n: [] for n in names}
    deps: dict[str, set[str]] = {}  # name -> the given inputs its value is computed from
    for pos, info in enumerate(infos):
        if info.cell.skipped:
            continue
        for k, (binds, reads) in enumerate(info.by_statement()):
            found: set[str] = set().union(*(deps.get(r, set()) for r in reads))
            for name in binds:
                own = name not in reads and not (found - {name})
                if name in plain and name not in reads:
                    (plain if own else derived)[name].append((pos, k))
                if name in inputs and own:
                    deps[name] = {name}
                else:
                    deps[name] = (deps.get(name, set()) | found) if name in reads else set(found)
    return {n: plain[n] or derived[n] for n in names}


def first_binds(infos: list[CellInfo], given: tuple[str, ...] = ()) -> dict[str, int]:
    """Each name -> the position (0-based, among code cells) of the first cell that binds it. A
    given input counts where the notebook defines it as that input (``input_definitions``), not
    where a student's own variable of the same name is computed from other data earlier. Where a
    question with ``before: NAME`` is answered is ``before_point``."""
    out: dict[str, int] = {}
    for pos, info in enumerate(infos):
        for name in info.binds:
            out.setdefault(name, pos)
    for name, found in input_definitions(infos, given, given).items():
        if found:
            out[name] = found[0][0]
    return out


Place = tuple[int, int]  # (cell position among code cells, statement index in the cell)


def _first_binding(infos: list[CellInfo], name: str) -> Place | None:
    return next(
        (
            (pos, k)
            for pos, info in enumerate(infos)
            if not info.cell.skipped
            for k, (binds, _) in enumerate(info.by_statement())
            if name in binds
        ),
        None,
    )


def before_statement(
    infos: list[CellInfo], before: str, names: AbstractSet[str], given: tuple[str, ...] = ()
) -> Place | None:
    """Where a value checked ``before: NAME`` is taken: just before the statement that first binds
    NAME (a given input: where the notebook defines it as that input), the point where the next
    part of the notebook starts. None: at the end.

    A notebook may bind NAME before the checked ``names`` are computed at all: the next part's data
    cell moved to the top, or a student's own variable that happens to be called NAME. The next
    part then starts at the first statement after the checked names are first bound that binds
    NAME again, or that binds a checked name afresh (without reading it) from a value computed
    from NAME: the point where the part that reuses the checked names begins. Where no statement
    does, the first binding of NAME stays the point (the checked names are computed only in the
    next part: a blank left in this one)."""
    if before in given:
        found = input_definitions(infos, (before,), given)[before]
        first = found[0] if found else None
    else:
        first = _first_binding(infos, before)
    if first is None:
        return None
    ready = [b for n in names if n != before and (b := _first_binding(infos, n)) is not None]
    if not ready or first > max(ready):
        return first
    computed = max(ready)
    from_before = {before}  # names whose value is computed from NAME's, as the notebook goes
    for pos, info in enumerate(infos):
        if info.cell.skipped:
            continue
        for k, (binds, reads) in enumerate(info.by_statement()):
            if (pos, k) < first:
                continue
            derived = (pos, k) == first or bool(reads & from_before)
            if (pos, k) > computed and (
                before in binds or (derived and any(n in binds and n not in reads for n in names))
            ):
                return (pos, k)
            if derived:
                from_before |= set(binds)
            else:
                from_before -= set(binds)
    return first  # no such part: the checked names are computed only after NAME (a blank above)


def before_point(
    infos: list[CellInfo], before: str, names: AbstractSet[str], given: tuple[str, ...] = ()
) -> int | None:
    """The cell position ``before_statement`` falls in (a cell that ``split_before_binds`` cut there
    starts with it); None: at the end."""
    place = before_statement(infos, before, names, given)
    return None if place is None else place[0]


def split_before_binds(
    cells: list[Cell], befores: AbstractSet[tuple[str, frozenset[str]]], given: tuple[str, ...] = ()
) -> list[Cell]:
    """The cells, with a cell cut in two right before the statement where a question with
    ``before: NAME`` is answered (``before_statement``; ``befores`` holds each check's NAME and the
    names it reads) when that statement is not the cell's first: the question is then captured at
    that statement, not before the whole cell, so a notebook that computes `S` and the next part's
    data in one cell keeps its answer. Both parts keep the cell's number; the second starts with
    blank lines, so line numbers (and tracebacks) are those of the student's cell."""
    if not befores:
        return cells
    infos = analyse(cells)
    at: dict[int, set[int]] = {}  # cell position -> indices of the statements to cut before
    for before, names in befores:
        first = before_statement(infos, before, names, given)
        if first is not None and first[1] > 0 and infos[first[0]].statements:
            at.setdefault(first[0], set()).add(first[1])
    out: list[Cell] = []
    for pos, cell in enumerate(cells):
        statements = parse_cell(fill_blanks(cell.source)).statements
        cuts = sorted(statements[k].lineno for k in at.get(pos, ()))  # 1-based first lines of the parts
        if not cuts:
            out.append(cell)
            continue
        lines = cell.source.splitlines(keepends=True)
        start = 1
        for cut in [*cuts, len(lines) + 1]:
            part = "".join(lines[start - 1 : cut - 1])
            out.append(Cell(index=cell.index, source="\n" * (start - 1) + part, tags=cell.tags, cell_id=cell.cell_id))
            start = cut
    return out


def identifiers(expr: str) -> set[str]:
    """Free names an expression reads (for deciding what a check depends on)."""
    try:
        tree = parse_quietly(expr, mode="eval")
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
        for binds, reads in info.by_statement():
            found: set[str] = set()
            for name in reads:
                found |= deps.get(name, set())
            for name in binds:
                if found:
                    deps[name] = (deps.get(name, set()) | found) if name in reads else set(found)
                elif name not in reads and name not in sources:
                    deps.pop(name, None)
    return deps


Version = tuple[int, int]  # a binding statement: (cell position, statement index)


def direct_input_versions(
    infos: list[CellInfo], sources: AbstractSet[str]
) -> dict[str, set[tuple[str, Version | None]]]:
    """``direct_inputs`` with the binding of each source that was read: (source, the statement that
    gave it the value read), so a name bound twice (``S`` in part 1, ``S`` again in part 3) is
    told apart by which of its values a later step read. None: read before any binding here."""
    through: dict[str, set[tuple[str, Version | None]]] = {}  # a name that is not a source -> the sources behind it
    inputs: dict[str, set[tuple[str, Version | None]]] = {}
    last: dict[str, Version] = {}
    for pos, info in enumerate(infos):
        if info.cell.skipped:
            continue
        for k, (binds, reads) in enumerate(info.by_statement()):
            found: set[tuple[str, Version | None]] = set()
            for name in reads:
                found |= {(name, last.get(name))} if name in sources else through.get(name, set())
            for name in binds:
                keep = name in reads  # ``x = x + 1`` or ``x += 1`` builds on what was there
                if name in sources:
                    inputs[name] = (inputs.get(name, set()) if keep else set()) | {f for f in found if f[0] != name}
                elif found or not keep:
                    through[name] = (through.get(name, set()) if keep else set()) | found
            for name in binds:
                last[name] = (pos, k)
    inputs.update({n: s for n, s in through.items() if n not in inputs and n not in sources})
    return inputs


def direct_inputs(infos: list[CellInfo], sources: AbstractSet[str]) -> dict[str, set[str]]:
    """Which of ``sources`` each name is computed from directly, as of the end of these cells: the
    sources its last binding reads, itself or through names that are not sources. A source is a
    step of its own, so what it is computed from is not passed on (``weights`` comes from
    ``scaled``, not from the ``scores`` behind it): the inputs of a step, for carrying an error
    forward one step at a time."""
    return {n: {s for s, _ in found} for n, found in direct_input_versions(infos, sources).items()}


def imported_modules(sources: Sequence[str]) -> tuple[str, ...]:
    """The modules the cells import by absolute name (``import a.b`` gives ``a.b``, ``from a.b import c``
    gives ``a.b``), sorted, wherever the import statement is (in a function, a ``try``, ...). Cells
    that are not valid Python are skipped."""
    found: set[str] = set()
    for source in sources:
        if "import" not in source:
            continue
        try:
            tree = parse_quietly(python_source(fill_blanks(source)))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
    return tuple(sorted(found))
