"""The student's copy of a test, cut down to what feeds the calls into the student's code.

``grader.judge.testrewrite`` gives the student's process a copy of the test whose asserts keep only
the parts that call the student's code. The test's other statements would still run there: a
hidden test's ``expected = np.array([...])``, a helper that computes the reference, the constant a
result is scaled by. Code of the student's that walks the caller's frames (``sys._getframe``,
``inspect.stack()``, ``gc.get_referrers``) could read them and show them back in another test's
message. So the copy is sliced over the test's data flow: a statement stays when it calls the
student's code (a site), rebinds one of the notebook's names, binds a name a kept statement reads,
or is a block holding such a statement (with its header, and every ``except`` of a kept ``try``,
so exceptions are caught as in the grader's run). A statement kept only for its calls keeps only
the calls: ``total = squares(x) * 7`` reaches the student's process as ``(squares(x),)``, and an
assert as the tuple of its calls, when that changes neither which calls happen nor their order
(no ``and``/``or``, conditional expression, lambda or comprehension around them). A ``raise``
stays (its exception's type only, no message) where a ``try`` of the test may catch it.

The grader's run is the whole test; it decides the verdict. The student's run only has to make
the same calls in the same order, which the slice keeps.
"""

from __future__ import annotations

import ast
import copy

from grader.judge.testvocab import reads as _vocab_reads
from grader.judge.testvocab import targets as _targets
from grader.names import TEST_ASSERT, TEST_DEL, TEST_ITER, TEST_SITE, TEST_WITH

_CALLS = frozenset({TEST_SITE, TEST_ITER, TEST_WITH, TEST_DEL})
# Around a call, these may skip it or run it several times: its calls stay with the whole expression.
_GUARDED = (
    ast.BoolOp,
    ast.IfExp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
)


def _is_call(node: ast.AST, names: frozenset[str] = _CALLS) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _has_call(node: ast.AST) -> bool:
    return any(_is_call(n) for n in ast.walk(node))


def _outer_calls(node: ast.AST, own: frozenset[str] = frozenset()) -> list[ast.expr] | None:
    """The calls into the student's code in ``node`` (and of the test's ``own`` functions that
    make some), outermost first, in the order Python runs them; None when one sits where lifting it
    out would change whether or how often it runs."""
    names = _CALLS | own
    if _is_call(node, names):
        return [node]  # type: ignore[list-item]  # _is_call says it is an ast.Call
    if isinstance(node, _GUARDED) and any(_is_call(n, names) for n in ast.walk(node)):
        return None
    out: list[ast.expr] = []
    for child in ast.iter_child_nodes(node):
        inner = _outer_calls(child, own)
        if inner is None:
            return None
        out.extend(inner)
    return out


def _reads(node: ast.AST) -> set[str]:
    """The names read, ``score`` of ``score += check(...)`` included (its value is read first)."""
    loads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads | {
        n.target.id for n in ast.walk(node) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    }


def _binds(stmt: ast.stmt) -> set[str]:
    names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return names


def _stores_into(stmt: ast.stmt) -> bool:
    """An assignment into an object (``data['col'] = ...``, ``model.w += 1``): it changes a value
    the student's code may read, so it stays whole."""
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = stmt.targets
    return any(
        isinstance(n, (ast.Subscript, ast.Attribute)) and not isinstance(n.ctx, ast.Load)
        for t in targets
        for n in ast.walk(t)
    )


# A call of one of these draws random numbers or sets a generator: a statement that makes one stays
# whole, wherever its result goes, so the draws the test feeds the student's code come out the same
# in both runs (``np.random.seed(1234)``, then ``x2 = np.random.uniform(0, 10, 5)``).
_RANDOM_MODULES = frozenset({"random"})
_TORCH_DRAWS = frozenset(
    {
        "manual_seed",
        "seed",
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
    }
)
_GENERATORS = frozenset({"default_rng", "RandomState", "Random", "Generator", "SeedSequence"})


def _chain(func: ast.expr) -> list[str]:
    """``np.random.seed`` -> ["np", "random", "seed"]; [] when not a plain chain of names."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return []
    return [func.id, *reversed(parts)]


def _draws(stmt: ast.AST, generators: set[str]) -> bool:
    """Whether the statement calls a random generator (NumPy's, ``random``'s, torch's, or a
    generator object the test made)."""
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call):
            continue
        chain = _chain(node.func)
        if not chain:
            continue
        if (
            "random" in chain[1:]
            or chain[0] in _RANDOM_MODULES
            or chain[0] in generators
            or chain[-1] in _GENERATORS
            or (chain[0] == "torch" and chain[-1] in _TORCH_DRAWS)
        ):
            return True
    return False


def _checks(expr: ast.expr) -> bool:
    """A call that only checks (``np.testing.assert_allclose``, nose's ``assert_equal``, ``self.assertTrue``)."""
    chain = _chain(expr.func) if isinstance(expr, ast.Call) else []
    return bool(chain) and (chain[-1].lower().startswith("assert") or chain[-1] == TEST_ASSERT)


_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Import, ast.ImportFrom)


class _Slicer:
    def __init__(self, student: set[str], generators: set[str]):
        self.student, self.generators = student, generators
        self.needed: set[str] = set()  # names a kept statement reads (last pass)
        self.effectful: set[str] = set()  # the test's functions that call the student's code
        self.reads: set[str] = set()  # this pass
        self.in_function = 0  # how deep in the test's own functions the slicer is

    def module(self, body: list[ast.stmt]) -> list[ast.stmt]:
        while True:
            before = (set(self.needed), set(self.effectful))
            self.reads = set()
            out = self.body(copy.deepcopy(body), in_try=False)
            self.needed |= self.reads
            if (self.needed, self.effectful) == before:
                return out

    def body(self, stmts: list[ast.stmt], *, in_try: bool) -> list[ast.stmt]:
        return [s for s in (self.stmt(s, in_try) for s in stmts) if s is not None]

    def keep(self, node: ast.stmt) -> ast.stmt:
        self.reads |= _reads(node)
        return node

    def stmt(self, s: ast.stmt, in_try: bool) -> ast.stmt | None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self.definition(s)
        if isinstance(s, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            return self.block(s, in_try)
        if isinstance(s, ast.Try):
            return self.try_(s)
        if isinstance(s, ast.Raise):
            if s.exc is None:
                return s  # a bare ``raise`` in an ``except``: the exception goes on as in the grader's run
            if not in_try:
                return None
            kind = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
            return self.keep(ast.copy_location(ast.Raise(exc=kind, cause=None), s))
        if isinstance(s, (ast.Break, ast.Continue, ast.Return, ast.Global, ast.Nonlocal)):
            return self.keep(s)
        if isinstance(s, ast.Pass):
            return None
        if isinstance(s, _SIMPLE):
            return self.simple(s)
        return self.keep(s)  # anything else (``match``): kept whole

    def simple(self, s: ast.stmt) -> ast.stmt | None:
        binds = _binds(s)
        # An expression statement run for its effect on what feeds the calls (``x.sort()``,
        # ``np.fill_diagonal(a, 0)``, a helper of the test's that calls the student's code); not
        # one that only checks (``np.testing.assert_allclose(f(x), expected)``).
        checking = isinstance(s, ast.Expr) and _checks(s.value)
        effect = isinstance(s, ast.Expr) and not checking and bool(_reads(s) & self.needed)
        # A call of the test's own function that calls the student's code (``got = run(3)``); in
        # an assert, only the call is kept, below.
        calls_own = not checking and bool(_reads(s) & self.effectful)
        if (
            calls_own
            and isinstance(s, ast.Assign)
            and isinstance(s.value, ast.Call)
            and _reads(s.value.func) & self.effectful
        ):
            self.effectful |= binds  # an object of the test's own class (``c = C()``): ``c.check()`` calls it
        if binds & (self.student | self.needed) or effect or calls_own or _stores_into(s) or _draws(s, self.generators):
            return self.keep(s)
        if not (_has_call(s) or _reads(s) & self.effectful):
            return None
        if isinstance(s, ast.Expr) and _is_call(s.value, frozenset({TEST_ASSERT})):
            call = s.value
            assert isinstance(call, ast.Call)  # noqa: S101 - _is_call says so
            thunk = call.args[1]
            calls = _outer_calls(thunk.body, frozenset(self.effectful)) if isinstance(thunk, ast.Lambda) else None
            if calls is None:
                return self.keep(s)
            lifted = ast.Lambda(args=thunk.args, body=ast.Tuple(elts=calls, ctx=ast.Load()))  # type: ignore[attr-defined]
            new = ast.Call(func=call.func, args=[call.args[0], lifted, *call.args[2:]], keywords=[])
            return self.keep(ast.copy_location(ast.Expr(value=new), s))
        calls = _outer_calls(s, frozenset(self.effectful))
        if calls is None:
            return self.keep(s)
        return self.keep(ast.copy_location(ast.Expr(value=ast.Tuple(elts=calls, ctx=ast.Load())), s))

    def substantive(self, stmts: list[ast.stmt]) -> bool:
        return any(
            not isinstance(s, (ast.Pass, ast.Break, ast.Continue, ast.Return, ast.Raise, ast.Global, ast.Nonlocal))
            for s in stmts
        )

    def definition(self, s: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.stmt | None:
        outer, self.reads = self.reads, set()
        self.in_function += not isinstance(s, ast.ClassDef)
        body = self.body(s.body, in_try=False)
        self.in_function -= not isinstance(s, ast.ClassDef)
        inner, self.reads = self.reads, outer
        calls = self.substantive(body) or any(_has_call(b) for b in body)
        if calls:
            self.effectful.add(s.name)
        if not calls and s.name not in self.needed:
            return None
        self.reads |= inner
        s.body = body or [ast.Pass()]
        for part in [
            *s.decorator_list,
            *(s.bases if isinstance(s, ast.ClassDef) else []),
            *(ast.walk(s.args) if not isinstance(s, ast.ClassDef) else []),
        ]:
            self.reads |= _reads(part)
        return s

    def block(
        self, s: ast.If | ast.While | ast.For | ast.AsyncFor | ast.With | ast.AsyncWith, in_try: bool
    ) -> ast.stmt | None:
        body = self.body(s.body, in_try=in_try)
        orelse = self.body(s.orelse, in_try=in_try) if not isinstance(s, (ast.With, ast.AsyncWith)) else []
        header: list[ast.AST]
        if isinstance(s, (ast.With, ast.AsyncWith)):
            header = list(s.items)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            header = [s.target, s.iter]
        else:
            header = [s.test]
        binds = {n.id for h in header for n in ast.walk(h) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if not (
            self.substantive(body)
            or self.substantive(orelse)
            or any(_has_call(h) for h in header)
            or binds & (self.student | self.needed)
            # in a function of the test's: the branches that say what it returns (``if x >= 0.85:
            # return 30 else: return 0``), whose result a kept statement may use (``g(x) + 1``)
            or self.in_function
            and any(isinstance(n, ast.Return) for n in (*body, *orelse))
        ):
            return None
        s.body = body or [ast.Pass()]
        if not isinstance(s, (ast.With, ast.AsyncWith)):
            s.orelse = orelse
        for h in header:
            self.reads |= _reads(h)
        return s

    def try_(self, s: ast.Try) -> ast.stmt | None:
        body = self.body(s.body, in_try=bool(s.handlers))
        handlers = [(h, self.body(h.body, in_try=False)) for h in s.handlers]
        orelse, final = self.body(s.orelse, in_try=False), self.body(s.finalbody, in_try=False)
        if not any(self.substantive(b) for b in [body, orelse, final, *(b for _, b in handlers)]):
            return None
        s.body, s.orelse, s.finalbody = body or [ast.Pass()], orelse, final
        for h, hbody in handlers:
            h.body = hbody or [ast.Pass()]
            if h.type is not None:
                self.reads |= _reads(h.type)
        return s


def student_copy(body: list[ast.stmt], student: set[str]) -> list[ast.stmt]:
    """The statements of the student's copy (already rewritten: sites, asserts without their
    expected side) that feed its calls into the student's code, in their order."""
    module = ast.Module(body=body, type_ignores=[])
    generators = {
        n.id
        for node in ast.walk(module)
        if isinstance(node, ast.Assign) and _draws(node, set())
        for t in node.targets
        for n in ast.walk(t)
        if isinstance(n, ast.Name)
    }
    return _Slicer(student, generators).module(body) or [ast.Pass()]


def tainted_names(tree: ast.Module, student: set[str]) -> set[str]:
    """The test's own names that may hold a value of the student's: bound from an expression that
    reads one (``gen = fiberator()``, ``for row in table``, ``with open_db() as db``), and the
    arguments of the test's own functions (``def check(fn): ...`` called as ``check(squares)``)."""
    tainted = set(student)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            tainted.update(a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg))
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.For, ast.comprehension)):
                pairs = [(node.target, node.iter)]
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                pairs = [(node.optional_vars, node.context_expr)]
            elif isinstance(node, ast.NamedExpr):
                pairs = [(node.target, node.value)]
            for target, value in pairs:
                new = _targets(target) - tainted
                if new and _vocab_reads(value, tainted):
                    tainted |= new
                    changed = True
    return tainted
