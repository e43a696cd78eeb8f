"""Code as canonical statements and expressions, the same whatever the usual disguises.

Each statement of a notebook (a block's header alone: its body's statements come after it) is
written out as canonical tokens, read from Python's own syntax tree:

- a name the student chose is ``V``, a number ``N``, a string ``S``; comments, whitespace and
  blank lines are not in the tree at all;
- what the student did not choose stays: builtins, library functions, attributes (``.shape``);
- a library's spellings of one operation are one form: ``np.dot(a, b)``, ``np.matmul``,
  ``torch.mm``, ``a.dot(b)`` are ``a @ b``; ``a.T``, ``a.t()``, ``np.transpose(a)``,
  ``a.transpose(0, 1)`` are ``T(a)``; ``x.sum(1)`` is ``sum(x, 1)``; ``d ** 0.5``,
  ``math.sqrt(d)`` and ``torch.sqrt(d)`` are ``sqrt(d)``; ``nn.Softmax(dim=-1)(x)``,
  ``F.softmax(x, dim=-1)`` and ``x.softmax(-1)`` are one call; conversions that change no value
  a person reads (``float(x)``, ``torch.tensor(x)``, ``.detach()``, ``.numpy()``) are left out;
- keyword arguments lose their names (sorted by name, after the positional ones), so
  ``softmax(x, dim=-1)`` and ``softmax(x, -1)`` are one form;
- ``x += y`` is ``x = x + y``, ``return E`` is ``V = E``, and a call to a helper that returns one
  expression is that expression with the arguments put in (a helper inlined or extracted reads
  the same).

A statement yields fragments: itself, and every expression inside it of ``MIN_EXPR`` tokens or
more (a token span of the statement). Fragments are hashed with BLAKE2b, so they are the same in
every process and every run.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from grader.similarity.forms import MIN_STATEMENT, Context, Emitter, _docstring
from grader.similarity.spellings import BUILTINS, DEFAULT_LIBRARIES

_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "add", "setdefault", "fill_", "copy_", "add_", "mul_", "div_", "sub_"}
    | {"zero_", "masked_fill_", "sort", "reverse", "pop", "remove", "clear"}
)


def fragment_key(kind: str, parts: Iterable[str]) -> int:
    """A stable 63-bit key for a fragment (the same in every process)."""
    text = kind + "\x1f" + "\x1f".join(parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@dataclass(frozen=True)
class Statement:
    """One statement, canonical (a block's header alone)."""

    tokens: tuple[str, ...]
    lines: tuple[int, ...]  # each token's line in its cell
    spans: tuple[tuple[int, int], ...]  # the expressions inside it that are fragments: token ranges
    binds: frozenset[str]  # the names it binds or changes (for the data flow between statements)
    reads: frozenset[str]
    top: int  # which top-level statement of the cell it is part of
    first: int  # its first and last line in the cell
    last: int
    scope: tuple[int, ...] = ()  # the functions it is inside (their names' scopes), outermost first
    opens: frozenset[str] = frozenset()  # a function's header: the parameters its body sees
    usual: bool = False  # a kind of statement everyone writes: a print, a plot, a check, typed-in data
    plain: tuple[str, ...] = ()  # when a helper was written out in it: the statement with the calls as calls

    @functools.cached_property
    def key(self) -> int:
        return fragment_key("S", self.tokens)

    def span_key(self, start: int, end: int) -> int:
        return fragment_key("E", self.tokens[start:end])

    @functools.cached_property
    def coarse_key(self) -> int:
        """The statement's key with names, numbers and strings alike (``np.ones(3)`` and ``np.ones(n)``)."""
        return fragment_key("S", _coarse(self.tokens))

    @functools.cached_property
    def plain_keys(self) -> tuple[int, int]:
        """The key and coarse key of ``plain`` (0, 0 without)."""
        if not self.plain:
            return (0, 0)
        return (fragment_key("S", self.plain), fragment_key("S", _coarse(self.plain)))

    def coarse_span_key(self, start: int, end: int) -> int:
        return fragment_key("E", _coarse(self.tokens[start:end]))


_LEAVES = frozenset({"V", "N", "S"})


def _coarse(tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple("L" if t in _LEAVES or t.startswith("$") else t for t in tokens)


def parse_chunks(code: str) -> list[ast.stmt]:
    """The statements of a cell; a cell that is not valid Python as a whole keeps the pieces that
    are (each run of lines from one unindented line to the next), so an unfinished cell still says
    something."""
    try:
        return list(_parse(code).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    lines = code.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() and not line[0].isspace() and line[0] not in ")]}"]
    out: list[ast.stmt] = []
    for a, b in zip(starts, [*starts[1:], len(lines)], strict=True):
        try:
            tree = _parse("".join(lines[a:b]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        ast.increment_lineno(tree, a)
        out.extend(tree.body)
    return out


def _parse(code: str) -> ast.Module:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code)


@dataclass(frozen=True)
class CellNames:
    """What a cell contributes to its notebook's context, and the names it uses."""

    imported: frozenset[str]
    defined: frozenset[str]
    helpers: tuple[tuple[str, tuple[str, ...], ast.expr], ...]
    used: frozenset[str]
    bound: frozenset[str]  # names it binds: assigned, loop and comprehension variables, parameters
    attributes: frozenset[str]  # attributes it assigns


def _statements_within(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _statements_within(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements_within(handler.body)


def cell_names(body: list[ast.stmt]) -> CellNames:
    """The names a cell's imports bind, the functions and classes it defines, its helpers that
    return one expression, and every name it uses."""
    imported: set[str] = set()
    defined: set[str] = set()
    helpers: list[tuple[str, tuple[str, ...], ast.expr]] = []
    for stmt in _statements_within(body):
        if isinstance(stmt, ast.Import):
            imported.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            imported.update(a.asname or a.name for a in stmt.names if a.name != "*")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(stmt.name)
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = [s for s in stmt.body if not _docstring(s)]
            a = stmt.args
            if (
                len(inner) == 1
                and isinstance(inner[0], ast.Return)
                and inner[0].value is not None
                and not (a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs)
            ):
                helpers.append((stmt.name, tuple(p.arg for p in a.args), inner[0].value))
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Lambda)
        ):
            a = stmt.value.args
            if not (a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs):
                helpers.append((stmt.targets[0].id, tuple(p.arg for p in a.args), stmt.value.body))
                defined.add(stmt.targets[0].id)
    used: set[str] = set()
    bound: set[str] = set()
    attributes: set[str] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                used.add(n.id)
                if not isinstance(n.ctx, ast.Load):
                    bound.add(n.id)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
            elif isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load):
                attributes.add(n.attr)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.add(n.name)
            elif isinstance(n, ast.ClassDef):  # its methods are the notebook's own names too
                attributes.update(m.name for m in n.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return CellNames(
        frozenset(imported),
        frozenset(defined),
        tuple(helpers),
        frozenset(used),
        frozenset(bound),
        frozenset(attributes),
    )


def context(cells: Iterable[CellNames], extra_libraries: Iterable[str] = (), fixed: Iterable[str] = ()) -> Context:
    """The context of a notebook from what its cells import and define."""
    libraries = set(DEFAULT_LIBRARIES) | set(extra_libraries)
    defined: set[str] = set()
    bound: set[str] = set()
    attributes: set[str] = set()
    helpers: dict[str, tuple[tuple[str, ...], ast.expr]] = {}
    for cell in cells:
        libraries |= cell.imported
        defined |= cell.defined
        bound |= cell.bound
        attributes |= cell.attributes
        for name, params, body in cell.helpers:
            helpers[name] = (params, body)
    defined |= bound - libraries
    return Context(
        frozenset(libraries - defined),
        frozenset(defined),
        helpers,
        frozenset(attributes),
        frozenset(fixed) - libraries - BUILTINS,
    )


def _names(nodes: Iterable[ast.AST | None], ctx: type[ast.expr_context] = ast.Load) -> set[str]:
    """The names read (or stored) in these nodes, less those a comprehension or lambda binds."""
    out: set[str] = set()
    local: set[str] = set()
    for top in nodes:
        if top is None:
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ctx):
                out.add(node.id)
            elif isinstance(node, ast.comprehension):
                local |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.Lambda):
                local |= {a.arg for a in node.args.args}
    return out - local if ctx is ast.Load else out


def _changed(node: ast.AST) -> set[str]:
    """Names changed in place: ``x[i] = ...``, ``x.attr = ...``, ``x.append(...)``."""
    out: set[str] = set()
    for n in ast.walk(node):
        target: ast.expr | None = None
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            target = n.value
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
            target = n.func.value
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            target = target.value
        if isinstance(target, ast.Name):
            out.add(target.id)
    return out


def statements(body: Iterable[ast.stmt], ctx: Context) -> list[Statement]:
    """Every statement of a cell, canonical, in order (a block's header, then its body's statements)."""
    out: list[Statement] = []
    for top, stmt in enumerate(body):
        out.extend(_statement(stmt, ctx, top, (), frozenset()))
    return out


def _statement(  # noqa: C901, PLR0912, PLR0915 - one case per kind of statement
    stmt: ast.stmt, ctx: Context, top: int, scope: tuple[int, ...], local: frozenset[str]
) -> Iterator[Statement]:
    e = Emitter(ctx)
    e.local = local
    inner_local = local
    opens: set[str] = set()
    inner_scope = scope
    e.line = stmt.lineno
    inner: list[ast.stmt] = []
    binds: set[str] = set()
    reads: set[str] = set()
    last = stmt.lineno
    if isinstance(stmt, ast.Assign):
        if (
            len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Tuple)
            and isinstance(stmt.value, ast.Tuple)
            and len(stmt.targets[0].elts) == len(stmt.value.elts)
            and not any(isinstance(x, ast.Starred) for x in [*stmt.targets[0].elts, *stmt.value.elts])
        ):  # q, k = a, b: two statements
            for t, v in zip(stmt.targets[0].elts, stmt.value.elts, strict=True):
                yield from _statement(ast.copy_location(ast.Assign([t], v), stmt), ctx, top, scope, local)
            return
        for t in stmt.targets:
            e.target(t)
            e.tok("=")
        e.expr(stmt.value)
        binds = _names(stmt.targets, ast.Store) | _changed(stmt)
        reads = _names([stmt.value]) | _names([t for t in stmt.targets if not isinstance(t, ast.Name)])
    elif isinstance(stmt, ast.AugAssign):
        e.target(stmt.target)
        e.tok("=")
        load = _as_load(stmt.target)
        e.expr(ast.copy_location(ast.BinOp(load, stmt.op, stmt.value), stmt))
        binds = _names([stmt.target], ast.Store) | _changed(stmt)
        reads = _names([stmt.value, load])
    elif isinstance(stmt, ast.AnnAssign):
        if stmt.value is None:
            return
        e.target(stmt.target)
        e.tok("=")
        e.expr(stmt.value)
        binds = _names([stmt.target], ast.Store) | _changed(stmt)
        reads = _names([stmt.value])
    elif isinstance(stmt, ast.Return):
        if stmt.value is None:
            return
        e.tok("V", "=")
        e.expr(stmt.value)
        reads = _names([stmt.value])
    elif isinstance(stmt, ast.Expr):
        if _docstring(stmt):
            return
        e.expr(stmt.value)
        binds = _changed(stmt)
        reads = _names([stmt.value])
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        e.tok("for")
        e.target(stmt.target)
        e.tok("in")
        e.expr(stmt.iter)
        e.tok(":")
        inner = [*stmt.body, *stmt.orelse]
        binds = _names([stmt.target], ast.Store)
        reads = _names([stmt.iter])
    elif isinstance(stmt, (ast.While, ast.If)):
        e.tok("while" if isinstance(stmt, ast.While) else "if")
        e.expr(stmt.test)
        e.tok(":")
        inner = [*stmt.body, *stmt.orelse]
        reads = _names([stmt.test])
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        e.tok("with")
        for item in stmt.items:
            e.expr(item.context_expr)
            if item.optional_vars is not None:
                e.tok("as")
                e.target(item.optional_vars)
        e.tok(":")
        inner = list(stmt.body)
        binds = _names([i.optional_vars for i in stmt.items], ast.Store)
        reads = _names([i.context_expr for i in stmt.items])
    elif isinstance(stmt, ast.Try):
        inner = [*stmt.body, *(s for h in stmt.handlers for s in h.body), *stmt.orelse, *stmt.finalbody]
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for d in stmt.decorator_list:
            e.expr(d)
        e.tok("def", "V", "(", *(["V"] * len(stmt.args.args)), ")", ":")
        inner = [s for s in stmt.body if not _docstring(s)]
        binds = {stmt.name}
        opens = {a.arg for a in (*stmt.args.args, *stmt.args.kwonlyargs, *stmt.args.posonlyargs)}
        inner_scope = (*scope, id(stmt))
        inner_local = local | opens | _stored(stmt.body)
        reads = _names([*stmt.args.defaults, *stmt.decorator_list])
    elif isinstance(stmt, ast.ClassDef):
        e.tok("class", "V", "(")
        e._exprs(stmt.bases)
        e.tok(")", ":")
        inner = [s for s in stmt.body if not _docstring(s)]
        binds = {stmt.name}
        inner_scope = (*scope, id(stmt))
        reads = _names(stmt.bases)
    elif isinstance(stmt, ast.Assert):
        e.tok("assert")
        e.expr(stmt.test)
        reads = _names([stmt.test])
    elif isinstance(stmt, ast.Raise):
        if stmt.exc is None:
            return
        e.tok("raise")
        e.expr(stmt.exc)
        reads = _names([stmt.exc])
    elif isinstance(stmt, ast.Delete):
        e.tok("del")
        e._exprs(stmt.targets)
    else:  # import, pass, break, global, match: nothing a person writes in their own way here
        return
    if inner:
        last = max(stmt.lineno, min(s.lineno for s in inner) - 1)
    else:
        last = stmt.end_lineno or stmt.lineno
    if len(e.tokens) >= MIN_STATEMENT:
        yield Statement(
            tuple(e.tokens),
            tuple(e.lines),
            tuple(sp for sp in e.spans if sp[1] - sp[0] < len(e.tokens)),
            frozenset(binds),
            frozenset(reads),
            top,
            stmt.lineno,
            last,
            scope,
            frozenset(opens),
            _usual(stmt, e),
            _plain(stmt, ctx, top, scope, local) if e.inlined else (),
        )
    for s in inner:
        yield from _statement(s, ctx, top, inner_scope, inner_local)


# What students print, plot and check around any answer: a statement that calls one of these, and
# otherwise only the summaries and helpers in _LOOKING, is a check or a display (``print(x.shape)``,
# ``assert np.allclose(w.sum(-1), 1)``, a heat map with its ticks and labels, an argmax printed "to
# explore"): a common kind of statement, whatever its details.
_SHOWING = frozenset(
    {"print", "display", "imshow", "matshow", "pcolormesh", "colorbar", "title", "suptitle", "xlabel", "ylabel"}
    | {"xticks", "yticks", "set_xticks", "set_yticks", "set_xticklabels", "set_yticklabels", "set_xlabel"}
    | {"set_ylabel", "set_title", "show", "figure", "subplots", "subplot", "tight_layout", "heatmap", "savefig"}
    | {"legend", "plot", "bar", "barh", "hist", "scatter", "grid", "text", "annotate", "axis", "set_printoptions"}
    | {"allclose", "isclose", "assert_allclose", "assert_array_equal", "assert_array_almost_equal", "array_equal"}
)
_LOOKING = frozenset(
    {"sum", "max", "min", "mean", "std", "abs", "round", "argmax", "argmin", "argsort", "topk", "sort", "sorted"}
    | {"len", "range", "zip", "enumerate", "list", "tuple", "str", "repr", "format", "int", "all", "any", "ones"}
    | {"ones_like", "zeros", "tolist", "item", "T", "sqrt", "exp", "reshape", "squeeze", "unsqueeze", "flatten"}
    | {"isnan", "isfinite", "tensor", "array", "norm", "values", "indices", "keys", "items", "get", "count"}
)
_LOOPS = frozenset({"range", "len", "zip", "enumerate"})
_DATA = frozenset({"V", "=", "[", "]", "(", ")", "{", "}", ",", ":", "N", "S", "True", "False", "None"})


def _usual(stmt: ast.stmt, e: Emitter) -> bool:
    """A print, a plot, a check, a loop over a range, or data typed in: what every student writes."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return e.calls <= _LOOPS
    if isinstance(stmt, ast.Assert):
        return e.calls <= _SHOWING | _LOOKING
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)):
        if not e.calls:
            return isinstance(stmt, (ast.Assign, ast.AnnAssign)) and set(e.tokens) <= _DATA and "S" in e.tokens
        return bool(e.calls & _SHOWING) and e.calls <= _SHOWING | _LOOKING
    return False


def _plain(stmt: ast.stmt, ctx: Context, top: int, scope: tuple[int, ...], local: frozenset[str]) -> tuple[str, ...]:
    """The statement's tokens with its helpers' calls left as calls (as the baseline writes them)."""
    bare = Context(ctx.libraries, ctx.defined, {}, ctx.attributes, ctx.fixed)
    header = next(_statement(stmt, bare, top, scope, local), None)
    return header.tokens if header is not None else ()


def _stored(body: list[ast.stmt]) -> frozenset[str]:
    """The names a function's body binds: its locals."""
    return frozenset(
        n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    )


def _as_load(target: ast.expr) -> ast.expr:
    """An assignment's target read as a value (for ``x += y``, which is ``x = x + y``)."""
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    if isinstance(target, ast.Subscript):
        return ast.copy_location(ast.Subscript(target.value, target.slice, ast.Load()), target)
    if isinstance(target, ast.Attribute):
        return ast.copy_location(ast.Attribute(target.value, target.attr, ast.Load()), target)
    return target
