"""The canonical form of an expression: how ``canon`` writes a statement's parts out.

One form for each of a library's spellings of one operation (``@``, ``np.dot``, ``torch.mm``;
``.T``, ``transpose``; a method or the function of its object; ``d ** 0.5`` or ``sqrt``), keyword
and positional arguments alike (a call's arguments are a bag), conversions that change no value a
person reads left out, and a helper that returns one expression written out where it is called.
Names the student chose are ``V``, numbers ``N``, strings ``S``; builtins, library functions and
the names the assignment fixes stay as written. ``Emitter`` writes the tokens and records which
spans of them are expressions (fragments of their own).

Why one module: every kind of expression is written by one recursive walk, and each spelling it
folds (a call that is an operator, a transpose, an inlined helper) hands back into that walk.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from grader.similarity.spellings import BINARY, BUILTINS, DEFAULT_LIBRARIES, OPS, SAME, STRIP, TRANSPOSE

MIN_EXPR = 4  # an expression shorter than this (``V . shape``) is no fragment of its own
MIN_STATEMENT = 3  # nor a statement (``V``, ``break``)
MAX_INLINE = 3  # helpers written out inside helpers written out, at most this deep


@dataclass(frozen=True)
class Context:
    """What a notebook's statements are read with: the names its imports bind (libraries, never the
    student's), the names it defines itself, and its one-expression helpers."""

    libraries: frozenset[str] = DEFAULT_LIBRARIES
    defined: frozenset[str] = frozenset()  # every name the notebook binds (a builtin it shadows too)
    helpers: dict[str, tuple[tuple[str, ...], ast.expr]] = field(default_factory=dict)
    attributes: frozenset[str] = frozenset()  # attributes it sets (``self.W_key = ...``): its own names
    fixed: frozenset[str] = frozenset()  # names the assignment fixes (given, checked): kept as written


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


class Emitter:
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
        # A helper's body written out where it is called has the fragments it would have written
        # there by hand (the helper's own statements are not counted: ``documents``), so a helper
        # inlined or extracted is the same code.
        if len(self.tokens) - start >= MIN_EXPR:
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
                self.tok("(", OPS.get(type(node.op), "?"))
                self.expr(node.operand)
                self.tok(")")
        elif isinstance(node, ast.BinOp):
            self._binop(node)
        elif isinstance(node, ast.BoolOp):
            self.tok("(")
            self._exprs(node.values, OPS.get(type(node.op), "?"))
            self.tok(")")
        elif isinstance(node, ast.Compare):
            self.tok("(")
            self.expr(node.left)
            for op, right in zip(node.ops, node.comparators, strict=True):
                self.tok(OPS.get(type(op), "?"))
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
        elif name in self.ctx.libraries or name in BUILTINS:
            self.tok(SAME.get(name, name))
        else:
            self.tok("V")

    def _is_library(self, node: ast.expr) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.ctx.libraries and node.id not in self.subst

    def _attribute(self, node: ast.Attribute) -> None:
        if self._is_library(node.value):
            self.tok(SAME.get(node.attr, node.attr))
        elif node.attr in self.ctx.attributes:  # an attribute the notebook sets: its own name
            self.expr(node.value)
            self.tok(".V")
        elif node.attr in TRANSPOSE:
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
        self.tok(OPS.get(type(op), "?"))
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
            if called.id in self.ctx.defined or not (called.id in self.ctx.libraries or called.id in BUILTINS):
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
        name = SAME.get(name, name)
        values = ([receiver] if receiver is not None else []) + args + [k.value for k in keywords]
        if spread or any(isinstance(a, ast.Starred) for a in values):
            pass
        elif name in STRIP and values:
            self.expr(values[0])
            return
        elif name in BINARY and len(values) == 2:
            self._binop(ast.copy_location(ast.BinOp(values[0], BINARY[name](), values[1]), node))
            return
        elif name in TRANSPOSE and values:
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
