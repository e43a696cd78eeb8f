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
import builtins
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MIN_EXPR = 4  # an expression shorter than this (``V . shape``) is no fragment of its own
MIN_STATEMENT = 3  # nor a statement (``V``, ``break``)
MAX_INLINE = 3  # helpers written out inside helpers written out, at most this deep

DEFAULT_LIBRARIES = frozenset(
    {"np", "numpy", "torch", "F", "nn", "plt", "sns", "pd", "math", "scipy", "tf", "jnp", "jax", "sklearn", "random"}
)
_BUILTINS = frozenset(dir(builtins))

# One operation, one form.
_BINARY = {
    "matmul": ast.MatMult,
    "mm": ast.MatMult,
    "bmm": ast.MatMult,
    "mv": ast.MatMult,
    "dot": ast.MatMult,
    "divide": ast.Div,
    "true_divide": ast.Div,
    "div": ast.Div,
    "multiply": ast.Mult,
    "mul": ast.Mult,
    "add": ast.Add,
    "subtract": ast.Sub,
    "sub": ast.Sub,
    "power": ast.Pow,
    "pow": ast.Pow,
}
_TRANSPOSE = frozenset({"transpose", "t", "swapaxes", "swapdims", "permute", "T", "mT", "H", "mH"})
_SAME = {
    "amax": "max",
    "amin": "min",
    "concatenate": "cat",
    "concat": "cat",
    "Softmax": "softmax",
    "special_softmax": "softmax",
    "newaxis": "None",
    "argsort": "argsort",
    "topk": "topk",
}
# Conversions that change nothing a person would read in the value: the first argument stands alone.
_STRIP = frozenset(
    {
        "float",
        "double",
        "detach",
        "cpu",
        "numpy",
        "clone",
        "copy",
        "contiguous",
        "to",
        "type",
        "astype",
        "asarray",
        "array",
        "tensor",
        "as_tensor",
        "from_numpy",
        "Tensor",
        "FloatTensor",
        "DoubleTensor",
        "item",
        "tolist",
        "float32",
        "float64",
        "requires_grad_",
        "bool",
        "long",
        "half",
    }
)
_OPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.And: "and",
    ast.Or: "or",
    ast.Not: "not",
    ast.Invert: "~",
    ast.USub: "-",
    ast.UAdd: "+",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "add", "setdefault", "fill_", "copy_", "add_", "mul_", "div_", "sub_"}
    | {"zero_", "masked_fill_", "sort", "reverse", "pop", "remove", "clear"}
)


def fragment_key(kind: str, parts: Iterable[object]) -> int:
    """A stable 63-bit key for a fragment (the same in every process)."""
    text = kind + "\x1f" + "\x1f".join(str(p) for p in parts)
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

    @property
    def key(self) -> int:
        return fragment_key("S", self.tokens)

    def span_key(self, start: int, end: int) -> int:
        return fragment_key("E", self.tokens[start:end])

    @property
    def coarse_key(self) -> int:
        """The statement's key with names, numbers and strings alike (``np.ones(3)`` and ``np.ones(n)``)."""
        return fragment_key("S", _coarse(self.tokens))

    @property
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


@dataclass(frozen=True)
class Context:
    """What a notebook's statements are read with: the names its imports bind (libraries, never the
    student's), the names it defines itself, and its one-expression helpers."""

    libraries: frozenset[str] = DEFAULT_LIBRARIES
    defined: frozenset[str] = frozenset()  # every name the notebook binds (a builtin it shadows too)
    helpers: dict[str, tuple[tuple[str, ...], ast.expr]] = field(default_factory=dict)
    attributes: frozenset[str] = frozenset()  # attributes it sets (``self.W_key = ...``): its own names
    fixed: frozenset[str] = frozenset()  # names the assignment fixes (given, checked): kept as written


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
        frozenset(fixed) - libraries - _BUILTINS,
    )


def _docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _number(node: ast.expr) -> float | None:
    """The value of a constant numeric expression (``0.5``, ``1/2``, ``-0.5``), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _number(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult, ast.Add, ast.Sub)):
        a, b = _number(node.left), _number(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Div):
            return a / b if b else None
        return a * b if isinstance(node.op, ast.Mult) else a + b if isinstance(node.op, ast.Add) else a - b
    return None


def _sqrt_of(node: ast.expr) -> ast.expr | None:
    """``b`` when ``node`` is ``b ** 0.5``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _number(node.right) == 0.5:
        return node.left
    return None


def _inverse_sqrt_of(node: ast.expr) -> ast.expr | None:
    """``b`` when ``node`` is ``b ** -0.5``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _number(node.right) == -0.5:
        return node.left
    return None


_EINSUM = re.compile(r"^\s*([a-zA-Z]{1,2})\s*,\s*([a-zA-Z]{1,2})\s*->\s*([a-zA-Z]{0,2})\s*$")


class _Emitter:
    """Writes canonical tokens for statements and expressions, recording the fragment spans."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tokens: list[str] = []
        self.lines: list[int] = []
        self.spans: list[tuple[int, int]] = []
        self.line = 0
        # While a helper is written out: its parameters, each with the argument and the
        # substitutions in force where the call is; and how deep the helpers are nested.
        self.subst: dict[str, tuple[ast.expr, dict[str, Any]]] = {}
        self.depth = 0
        self.local: frozenset[str] = frozenset()  # inside a function: its parameters and locals
        self.calls: set[str] = set()  # the functions called, by canonical name ("V": the notebook's own)
        self.inlined = False  # whether a helper was written out

    def tok(self, *texts: str) -> None:
        for t in texts:
            self.tokens.append(t)
            self.lines.append(self.line)

    # ---- expressions -------------------------------------------------------------------------

    def expr(self, node: ast.expr) -> None:
        start, saved = len(self.tokens), self.line
        if not self.depth and hasattr(node, "lineno"):
            self.line = node.lineno
        self._expr(node)
        # A helper's body written out where it is called is the helper's code, counted in its own
        # statements: only the whole call, and the arguments the caller wrote, are fragments here.
        if len(self.tokens) - start >= MIN_EXPR and not self.depth:
            self.spans.append((start, len(self.tokens)))
        self.line = saved

    def _bag(self, nodes: list[ast.expr]) -> None:
        """``nodes`` separated by commas, ordered by their canonical tokens (the fragments inside move
        with them)."""
        start, first_span = len(self.tokens), len(self.spans)
        parts: list[tuple[int, int]] = []
        for n, node in enumerate(nodes):
            if n:
                self.tok(",")
            begin = len(self.tokens)
            self.expr(node)
            parts.append((begin, len(self.tokens)))
        if len(parts) < 2:
            return
        order = sorted(range(len(parts)), key=lambda k: self.tokens[parts[k][0] : parts[k][1]])
        if order == list(range(len(parts))):
            return
        tokens, lines = self.tokens[start:], self.lines[start:]
        new_tokens: list[str] = []
        new_lines: list[int] = []
        moved: dict[int, int] = {}  # old start of a part -> its new start
        for n, k in enumerate(order):
            if n:
                new_tokens.append(",")
                new_lines.append(lines[parts[k][0] - start - 1] if parts[k][0] > start else lines[0])
            moved[k] = start + len(new_tokens)
            a, b = parts[k][0] - start, parts[k][1] - start
            new_tokens.extend(tokens[a:b])
            new_lines.extend(lines[a:b])
        self.tokens[start:] = new_tokens
        self.lines[start:] = new_lines
        for i in range(first_span, len(self.spans)):
            a, b = self.spans[i]
            k = next(k for k, (pa, pb) in enumerate(parts) if pa <= a and b <= pb)
            self.spans[i] = (a - parts[k][0] + moved[k], b - parts[k][0] + moved[k])

    def _exprs(self, nodes: Iterable[ast.expr], sep: str = ",") -> None:
        for n, node in enumerate(nodes):
            if n:
                self.tok(sep)
            self.expr(node)

    def _expr(self, node: ast.expr) -> None:  # noqa: C901, PLR0912 - one case per kind of expression
        if isinstance(node, ast.Name):
            self._name(node.id)
        elif isinstance(node, ast.Constant):
            v = node.value
            if v is None or isinstance(v, bool):
                self.tok(repr(v))
            elif isinstance(v, (int, float, complex)):
                self.tok("N")
            elif v is Ellipsis:
                self.tok("...")
            else:
                self.tok("S")
        elif isinstance(node, ast.JoinedStr):
            self.tok("S")
        elif isinstance(node, ast.UnaryOp):
            if _number(node) is not None:
                self.tok("N")
            else:
                self.tok("(", _OPS.get(type(node.op), "?"))
                self.expr(node.operand)
                self.tok(")")
        elif isinstance(node, ast.BinOp):
            self._binop(node)
        elif isinstance(node, ast.BoolOp):
            self.tok("(")
            self._exprs(node.values, _OPS.get(type(node.op), "?"))
            self.tok(")")
        elif isinstance(node, ast.Compare):
            self.tok("(")
            self.expr(node.left)
            for op, right in zip(node.ops, node.comparators, strict=True):
                self.tok(_OPS.get(type(op), "?"))
                self.expr(right)
            self.tok(")")
        elif isinstance(node, ast.IfExp):
            self.tok("(")
            self.expr(node.body)
            self.tok("if")
            self.expr(node.test)
            self.tok("else")
            self.expr(node.orelse)
            self.tok(")")
        elif isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.Attribute):
            self._attribute(node)
        elif isinstance(node, ast.Subscript):
            self.expr(node.value)
            self.tok("[")
            self.expr(node.slice)
            self.tok("]")
        elif isinstance(node, ast.Slice):
            for n, part in enumerate((node.lower, node.upper, node.step)):
                if n and (n == 1 or part is not None):
                    self.tok(":")
                if part is not None:
                    self.expr(part)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            opening = {ast.Tuple: "(", ast.List: "[", ast.Set: "{"}[type(node)]
            self.tok(opening)
            self._exprs(node.elts)
            self.tok({"(": ")", "[": "]", "{": "}"}[opening])
        elif isinstance(node, ast.Dict):
            self.tok("{")
            for n, (key, value) in enumerate(zip(node.keys, node.values, strict=True)):
                if n:
                    self.tok(",")
                if key is None:
                    self.tok("**")
                else:
                    self.expr(key)
                    self.tok(":")
                self.expr(value)
            self.tok("}")
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self.tok({ast.ListComp: "[", ast.SetComp: "{", ast.GeneratorExp: "(", ast.DictComp: "{"}[type(node)])
            if isinstance(node, ast.DictComp):
                self.expr(node.key)
                self.tok(":")
                self.expr(node.value)
            else:
                self.expr(node.elt)
            for gen in node.generators:
                self.tok("for")
                self.expr(gen.target)
                self.tok("in")
                self.expr(gen.iter)
                for cond in gen.ifs:
                    self.tok("if")
                    self.expr(cond)
            self.tok({ast.ListComp: "]", ast.SetComp: "}", ast.GeneratorExp: ")", ast.DictComp: "}"}[type(node)])
        elif isinstance(node, ast.Lambda):
            self.tok("lambda", str(len(node.args.args)), ":")
            self.expr(node.body)
        elif isinstance(node, ast.Starred):
            self.tok("*")
            self.expr(node.value)
        elif isinstance(node, ast.NamedExpr):
            self.tok("V", ":=")
            self.expr(node.value)
        else:  # await, yield, and what else a cell may hold: its kind and its parts
            self.tok(type(node).__name__, "(")
            self._exprs(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr))
            self.tok(")")

    def _name(self, name: str) -> None:
        if name in self.subst:
            arg, outer = self.subst[name]
            saved_subst, saved_depth = self.subst, self.depth
            self.subst, self.depth = outer, self.depth - 1
            self.expr(arg)
            self.subst, self.depth = saved_subst, saved_depth
        elif name in self.ctx.fixed and name not in self.local:
            self.tok("$" + name)
        elif name in self.ctx.defined:
            self.tok("V")
        elif name in self.ctx.libraries or name in _BUILTINS:
            self.tok(_SAME.get(name, name))
        else:
            self.tok("V")

    def _is_library(self, node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.ctx.libraries and node.id not in self.subst

    def _attribute(self, node: ast.Attribute) -> None:
        if self._is_library(node.value):
            self.tok(_SAME.get(node.attr, node.attr))
        elif node.attr in self.ctx.attributes:  # an attribute the notebook sets: its own name
            self.expr(node.value)
            self.tok(".V")
        elif node.attr in _TRANSPOSE:
            self._function("T", [node.value])
        else:
            self.expr(node.value)
            self.tok("." + node.attr)

    def _binop(self, node: ast.BinOp) -> None:
        root = _sqrt_of(node)
        if root is not None:
            self._function("sqrt", [root])
            return
        left, op, right = node.left, node.op, node.right
        if isinstance(op, ast.Mult):  # a * b ** -0.5 is a / sqrt(b)
            for a, b in ((left, right), (right, left)):
                inv = _inverse_sqrt_of(b)
                if inv is not None:
                    self.tok("(")
                    self.expr(a)
                    self.tok("/")
                    self._spanned("sqrt", [inv])
                    self.tok(")")
                    return
        inv = _inverse_sqrt_of(node)
        if inv is not None:
            self.tok("(", "N", "/")
            self._spanned("sqrt", [inv])
            self.tok(")")
            return
        self.tok("(")
        self.expr(left)
        self.tok(_OPS.get(type(op), "?"))
        self.expr(right)
        self.tok(")")

    def _spanned(self, name: str, args: list[ast.expr]) -> None:
        """``_function`` as a fragment of its own (a call written in another form)."""
        start = len(self.tokens)
        self._function(name, args)
        if len(self.tokens) - start >= MIN_EXPR:
            self.spans.append((start, len(self.tokens)))

    def _function(self, name: str, args: list[ast.expr]) -> None:
        self.tok(name, "(")
        self._exprs(args)
        self.tok(")")

    def _call(self, node: ast.Call) -> None:  # noqa: C901, PLR0911, PLR0912 - one case per spelling
        func = node.func
        args = list(node.args)
        keywords = sorted((k for k in node.keywords if k.arg is not None), key=lambda k: k.arg or "")
        spread = [k.value for k in node.keywords if k.arg is None]
        name: str | None = None
        receiver: ast.expr | None = None
        if isinstance(func, ast.Call) and self._callee(func.func) in ("Softmax", "softmax"):  # nn.Softmax(dim=-1)(x)
            name = "softmax"
            args = args + list(func.args)
            keywords = sorted([*keywords, *(k for k in func.keywords if k.arg is not None)], key=lambda k: k.arg or "")
        elif isinstance(func, ast.Attribute):
            name = func.attr
            if not self._is_library(func.value):
                receiver = func.value
                if name in self.ctx.attributes:  # a method or attribute of the notebook's own
                    self.calls.add("V")
                    self.expr(func.value)
                    self.tok(".V")
                    self._arguments(args, keywords, spread)
                    return
        elif isinstance(func, ast.Name):
            called: ast.expr = func
            env = self.subst
            while isinstance(called, ast.Name) and called.id in env:  # a helper passed as an argument
                called, env = env[called.id]
            if not isinstance(called, ast.Name):
                self.expr(func)
                self._arguments(args, keywords, spread)
                return
            helper = self.ctx.helpers.get(called.id)
            if (
                helper is not None
                and self.depth < MAX_INLINE
                and not keywords
                and not spread
                and len(args) == len(helper[0])
            ):
                if not any(isinstance(a, ast.Starred) for a in args):
                    self._inline(helper, args)
                    return
            if called.id in self.ctx.defined or not (called.id in self.ctx.libraries or called.id in _BUILTINS):
                self.calls.add("V")
                self.tok("V")
                self._arguments(args, keywords, spread)
                return
            name = called.id
        else:
            self.calls.add("V")
            self.expr(func)
            self._arguments(args, keywords, spread)
            return
        name = _SAME.get(name, name)
        values = ([receiver] if receiver is not None else []) + args + [k.value for k in keywords]
        if spread or any(isinstance(a, ast.Starred) for a in values):
            pass
        elif name in _STRIP and values:
            self.expr(values[0])
            return
        elif name in _BINARY and len(values) == 2:
            self._binop(ast.copy_location(ast.BinOp(values[0], _BINARY[name](), values[1]), node))
            return
        elif name in _TRANSPOSE and values:
            self._function("T", values[:1])
            return
        elif name == "size" and receiver is not None:  # torch's x.size(i) is x.shape[i]
            self.expr(receiver)
            self.tok(".shape")
            if args:
                self.tok("[")
                self.expr(args[0])
                self.tok("]")
            return
        elif name == "einsum" and self._einsum(values):
            return
        self.calls.add(name)
        self.tok(name)
        self._arguments(values, [], spread)

    def _callee(self, func: ast.expr) -> str | None:
        if isinstance(func, ast.Attribute) and self._is_library(func.value):
            return func.attr
        if isinstance(func, ast.Name) and func.id in self.ctx.libraries:
            return func.id
        return None

    def _arguments(self, args: list[ast.expr], keywords: list[ast.keyword], spread: list[ast.expr]) -> None:
        """A call's arguments as a bag: positional and keyword ones alike, in the order of their
        canonical forms, so ``f(x, axis=1, arr=y)``, ``f(x, 1, y)`` and ``f(arr=y, axis=1, x)`` are one."""
        self.tok("(")
        self._bag([*args, *(k.value for k in keywords)])
        for s in spread:
            self.tok(",", "**")
            self.expr(s)
        self.tok(")")

    def _inline(self, helper: tuple[tuple[str, ...], ast.expr], args: list[ast.expr]) -> None:
        self.inlined = True
        params, body = helper
        saved_subst, saved_depth = self.subst, self.depth
        self.subst = {p: (a, saved_subst) for p, a in zip(params, args, strict=True)}
        self.depth += 1
        self.expr(body)
        self.subst, self.depth = saved_subst, saved_depth

    def _einsum(self, values: list[ast.expr]) -> bool:
        """A two-operand einsum that is a matrix or vector product, written as one."""
        if len(values) != 3 or not (isinstance(values[0], ast.Constant) and isinstance(values[0].value, str)):
            return False
        m = _EINSUM.match(values[0].value)
        if m is None:
            return False
        a, b, out = m.groups()
        shared = set(a) & set(b)
        if len(shared) != 1 or len(set(a)) != len(a) or len(set(b)) != len(b):
            return False
        k = shared.pop()
        free = [c for c in a if c != k] + [c for c in b if c != k]
        if sorted(out) != sorted(free):
            return False
        left, right = values[1], values[2]
        node: ast.expr
        lt = ast.Attribute(left, "T", ast.Load()) if len(a) == 2 and a[0] == k else left
        rt = ast.Attribute(right, "T", ast.Load()) if len(b) == 2 and b[1] == k else right
        node = ast.BinOp(lt, ast.MatMult(), rt)
        if len(out) == 2 and list(out) != free:
            node = ast.Attribute(node, "T", ast.Load())
        self.expr(ast.copy_location(node, values[0]))
        return True

    # ---- statements --------------------------------------------------------------------------

    def target(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name):
            self.tok("$" + node.id if node.id in self.ctx.fixed and node.id not in self.local else "V")
        elif isinstance(node, (ast.Tuple, ast.List)):
            self.tok("(")
            for n, elt in enumerate(node.elts):
                if n:
                    self.tok(",")
                self.target(elt)
            self.tok(")")
        elif isinstance(node, ast.Starred):
            self.tok("*")
            self.target(node.value)
        else:
            self.expr(node)


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
    e = _Emitter(ctx)
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


def _usual(stmt: ast.stmt, e: _Emitter) -> bool:
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
