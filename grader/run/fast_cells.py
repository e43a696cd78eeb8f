"""Running cells with less of IPython's machinery where it provably changes nothing (the student process).

Two parts: ``run_lean``, which runs a cell as IPython's ``run_cell`` would, with only the steps
the cell needs; and ``skip_needless_tokenizing``, which skips IPython's token pass for cells that
provably do not need it.

``run_lean(shell, source)`` does what ``InteractiveShell.run_cell`` does for a cell, in the same
order and with IPython's own pieces (its transform_cell, its compiler and its ``cache`` of the
cell's text for tracebacks, ``builtin_trap``, ``display_trap``, ``run_code`` with its handling of
``SystemExit``, the ``pre_execute``/``post_execute`` events), and leaves out the steps that do
nothing for such a cell: a second full compile of the cell to find out whether it needs an event
loop (a cell without the words ``await`` and ``async`` cannot), the coroutine that runs the cell,
the ExecutionInfo/ExecutionResult objects and the history and logging calls that are off. Each
top-level statement is still compiled and run in turn, the last one in "single" mode if it is an
expression (so the displayhook shows it and sets ``_``, as IPython's ``last_expr``): a statement
that does not compile fails after the ones before it ran, and compile-time warnings come in the
same order. Whatever it does not do as IPython would, it hands to ``shell.run_cell`` untouched
before anything has run: top-level ``await`` (or any cell with those words), a transform that
raises, AST transformers, ``pre_run_cell``/``post_run_cell`` callbacks, a non-default
``ast_node_interactivity``. tests/test_lean_runner.py compares its scorecards with the Jupyter executor's.

IPython tokenizes every cell (Python's pure-Python tokenize, about half a millisecond for a
20-line cell) only to look for its own syntax: `%magic`, `!cmd`, `x = %magic`, `x = !cmd`,
`obj?`, and lines escaped with `!`, `?`, `%`, `,`, `;` or `/`. Most notebook cells contain none
of it, and for them that pass returns its input unchanged. `skip_needless_tokenizing` replaces
the shell's TransformerManager.transform_cell with one that runs IPython's own cleanup and
line transforms (blank leading lines, common indentation, `>>>` and `In [1]:` prompts, `%%`
cell magics) as IPython does, and skips only the token pass, when the text proves that pass
a no-op. Anything doubtful goes through IPython's transform_cell unchanged.

Why the checks below suffice (Python <= 3.11, whose tokenize module is the pure-Python one):
- The four token transformers only fire on: a `?` token (HelpEnd, or escape `?`); a `!` token
  that is not part of `!=` (SystemAssign, escape `!`/`!!`); a `%` token right after a `=`
  token (MagicAssign); and an escape character as the first token of a logical line
  (EscapedCommand), which always starts a physical line after spaces, tabs or form feeds.
  _IPYTHON_SYNTAX matches any text where such a token could be (in code, strings or comments).
- Other line breaks that str.splitlines honours (\r, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029)
  make the tokenizer's lines differ from "\n" lines (and can make IPython warn): doubtful.
- The token pass can raise: tokenize raises IndentationError for a dedent to a column that no
  enclosing block has, which IPython reports with tokenize's own message. _indentation_ok
  finds the lines tokenize treats as new statements (outside strings and brackets, not after a
  backslash) exactly as tokenize does, and replays tokenize's indentation stack on them; any
  string, bracket or backslash it cannot place with certainty counts as doubtful.
tests/test_worker_speed.py compares the result with IPython's on every cell of every notebook
in the repository and on cells written to hit each rule.
"""

from __future__ import annotations

import re
import sys
from typing import Any


class _Outcome:
    """What ``run_code`` writes an exception to (the part of IPython's ExecutionResult it uses)."""

    error_in_exec: BaseException | None = None


_ASYNC_WORDS = re.compile(r"\b(?:await|async)\b")
_TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, as IPython compiles every statement


def run_lean(shell: Any, source: str) -> tuple[bool, BaseException | None]:
    """Run ``source`` in ``shell`` as ``shell.run_cell(source, store_history=False)`` would:
    (True, the cell's error or None); or (False, None), having run nothing, when it must go
    through ``shell.run_cell`` instead."""
    events = shell.events.callbacks
    if (
        shell.ast_transformers
        or shell.trio_runner
        or shell.ast_node_interactivity != "last_expr"
        or events.get("pre_run_cell")
        or events.get("post_run_cell")
    ):
        return False, None
    try:
        cell = shell.transform_cell(source)
    except Exception:  # noqa: BLE001 - IPython reports the transform's error its own way
        return False, None
    if (not source) or source.isspace():
        shell.events.trigger("post_execute")
        return True, None
    if shell.autoawait and _ASYNC_WORDS.search(cell):
        return False, None  # may need an event loop (top-level await): IPython decides
    import ast

    from IPython.core import interactiveshell

    run_sync: Any = interactiveshell._pseudo_sync_runner  # runs a coroutine that never awaits, without a loop
    compiler = shell.compile
    outcome = _Outcome()
    try:
        shell.events.trigger("pre_execute")
        with shell.builtin_trap:
            name = compiler.cache(cell, shell.execution_count, raw_code=source)
            with shell.display_trap:
                try:
                    body = compiler.ast_parse(cell, filename=name).body
                except (OverflowError, SyntaxError, ValueError, TypeError, MemoryError) as exc:
                    shell.last_execution_succeeded = False
                    return True, exc
                shell.displayhook.exec_result = None
                # As IPython's run_ast_nodes with "last_expr": each statement compiled and run in
                # turn (a statement that does not compile fails after the ones before it ran),
                # the last one in "single" mode if it is an expression, so that it is displayed.
                last = len(body) - 1 if body and isinstance(body[-1], ast.Expr) else -1
                for i, node in enumerate(body):
                    try:
                        with compiler.extra_flags(_TOP_LEVEL_AWAIT if shell.autoawait else 0):
                            code = (
                                compiler(ast.Interactive([node]), name, "single")
                                if i == last
                                else compiler(ast.Module([node], []), name, "exec")
                            )
                    except BaseException as exc:  # noqa: BLE001 - as IPython: the cell's error, before this statement ran
                        shell.last_execution_succeeded = False
                        return True, exc
                    if run_sync(shell.run_code(code, outcome)):
                        break
                shell.last_execution_succeeded = outcome.error_in_exec is None
    finally:
        shell.events.trigger("post_execute")
    return True, outcome.error_in_exec


# -- the trusted solution's runs: compiled code, nothing displayed ---------------------------------

# Names a cell reads that only IPython's machinery gives meaning to: such a cell goes through run_lean.
_IPYTHON_NAMES = frozenset(
    {"get_ipython", "display", "exit", "quit", "In", "Out", "_ih", "_oh", "_dh", "_", "__", "___", "_i", "_ii", "_iii"}
)
_PLANS: dict[tuple[str, str], tuple[Any, Any] | None] = {}  # (cell text, file name) -> compiled cell, or None
_MAX_PLANS = 512
_PRINT = print  # the real one, while a trusted cell runs with ``_quiet_print`` in its place


def run_trusted(shell: Any, source: str) -> tuple[bool, BaseException | None]:
    """Run a cell of the trusted solution (``Job.trusted``) as compiled code: what ``run_lean``
    does, less what only shows output. Its statements run as one compiled module (cached by its
    text, so the solution's next run in the same process compiles nothing); ``print`` to the
    screen formats nothing (the output is discarded); the value of a last expression is bound to
    ``_``, ``__``, ``___`` and ``Out`` as the displayhook binds it, but never formatted. A cell
    that needs more than that (IPython's syntax or names, ``await``, a ``__future__`` import, a
    shell with AST transformers or cell callbacks, a cell that does not compile) goes through
    ``run_lean`` instead, before anything has run. Returns as ``run_lean``."""
    events = shell.events.callbacks
    if (
        shell.ast_transformers
        or shell.trio_runner
        or shell.ast_node_interactivity != "last_expr"
        or events.get("pre_run_cell")
        or events.get("post_run_cell")
        or not source
        or source.isspace()
    ):
        return run_lean(shell, source)
    try:
        cell = shell.transform_cell(source)
    except Exception:  # noqa: BLE001 - IPython reports the transform's error its own way
        return run_lean(shell, source)
    compiler = shell.compile
    name = compiler.cache(cell, shell.execution_count, raw_code=source)  # its lines, for tracebacks
    key = (cell, name)
    if key not in _PLANS:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = _compiled(cell, name, compiler.flags)
    plan = _PLANS[key]
    if plan is None:
        return run_lean(shell, source)
    body, last = plan
    import builtins

    hook = shell.displayhook
    ns, global_ns = shell.user_ns, shell.user_global_ns
    error: BaseException | None = None
    printing = builtins.print
    builtins.print = _quiet_print
    try:
        shell.events.trigger("pre_execute")
        try:
            if body is not None:
                exec(body, global_ns, ns)  # noqa: S102 - the instructor's own cell, in the sandbox
            if last is not None:
                value = eval(last, global_ns, ns)  # noqa: S307 - the same
                hook.check_for_underscore()
                if value is not None and not hook.quiet():
                    hook.update_user_ns(value)  # `_` and Out, as the displayhook binds them; not formatted
        except BaseException as exc:  # noqa: BLE001 - the cell's error, as run_code records it
            error = exc
        shell.last_execution_succeeded = error is None
    finally:
        builtins.print = printing
        shell.events.trigger("post_execute")
    return True, error


def _compiled(cell: str, name: str, flags: int) -> tuple[Any, Any] | None:
    """(the cell's statements but a last expression, compiled; that expression, compiled), or None
    when the cell needs IPython (see ``run_trusted``)."""
    import ast

    if _ASYNC_WORDS.search(cell) or "__future__" in cell:
        return None
    try:
        tree = ast.parse(cell, filename=name)
    except (OverflowError, SyntaxError, ValueError, TypeError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (node.id in _IPYTHON_NAMES or re.fullmatch(r"_i?\d+", node.id)):
            return None
    body = tree.body
    last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
    assert last is None or isinstance(last, ast.Expr)
    try:
        code = compile(ast.Module(body, []), name, "exec", flags=flags, dont_inherit=True) if body else None
        expr = (
            compile(ast.Expression(last.value), name, "eval", flags=flags, dont_inherit=True)
            if last is not None
            else None
        )
    except (OverflowError, SyntaxError, ValueError, TypeError, MemoryError):
        return None
    return code, expr


def _quiet_print(
    *args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
) -> None:
    """``print`` that formats nothing for the screen (whose output a trusted run discards) and
    writes to any other file as ``print`` does."""
    if file is None or file is sys.stdout or file is sys.stderr:
        return
    _PRINT(*args, sep=sep, end=end, file=file, flush=flush)


_IPYTHON_SYNTAX = re.compile(r"\?|!(?!=)|=[\s\\]*%|^\s*[!?%,;/]", re.M)
_OTHER_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LEX = re.compile(r"""('''|\"\"\"|'|")|\#[^\n]*|([(\[{])|([)\]}])|(\\\n?)|(\n)""")
_STRING_END = {
    quote: re.compile(pattern, re.S)
    for quote, pattern in (
        ("'", r"[^'\\\n]*(?:\\.[^'\\\n]*)*'"),
        ('"', r'[^"\\\n]*(?:\\.[^"\\\n]*)*"'),
        ("'''", r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"),
        ('"""', r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'),
    )
}
_TABSIZE = 8  # tokenize's


def skip_needless_tokenizing(manager: Any) -> bool:
    """Give ``manager`` (the shell's TransformerManager) a transform_cell that skips the token
    pass whenever ``needs_token_pass`` proves it changes nothing. False (and nothing changed)
    where the reasoning above does not hold."""
    from IPython.core import inputtransformer2 as it2

    if (
        sys.version_info >= (3, 12)
        or set(it2.ESCAPE_SINGLES) != set("!?%,;/")
        or manager.token_transformers != [it2.MagicAssign, it2.SystemAssign, it2.EscapedCommand, it2.HelpEnd]
    ):
        return False
    full = manager.transform_cell

    def transform_cell(cell: str) -> str:
        source = cell if cell.endswith("\n") else cell + "\n"  # as IPython's transform_cell
        lines = source.splitlines(keepends=True)
        for transform in manager.cleanup_transforms + manager.line_transforms:
            lines = transform(lines)
        text = "".join(lines)
        return full(cell) if needs_token_pass(text) else text

    manager.transform_cell = transform_cell
    return True


def needs_token_pass(text: str) -> bool:
    """Whether IPython's token transformers could change ``text`` (a cell after IPython's cleanup
    and line transforms) or raise on it. False only when they provably return it unchanged."""
    return bool(_IPYTHON_SYNTAX.search(text) or _OTHER_LINE_BREAKS.search(text)) or not _indentation_ok(text)


def _indentation_ok(text: str) -> bool:
    """True when tokenize reads ``text`` (lines ending in "\\n") to the end without raising:
    every string closed, brackets balanced, no stray backslash, no inconsistent dedent."""
    starts = [0]  # offsets of the lines tokenize starts a new statement on
    depth, pos = 0, 0
    while (m := _LEX.search(text, pos)) is not None:
        quote, opening, closing, backslash, newline = m.groups()
        pos = m.end()
        if quote is not None:
            end = _STRING_END[quote].match(text, pos)
            if end is None:
                return False  # unterminated: tokenize's error recovery is not worth modelling
            pos = end.end()
        elif opening is not None:
            depth += 1
        elif closing is not None:
            depth -= 1
            if depth < 0:
                return False
        elif backslash is not None:
            if backslash != "\\\n":
                return False  # a backslash outside a string that does not end its line
        elif newline is not None and depth == 0:
            starts.append(pos)
    if depth or text[-2:] == "\\\n":
        return False  # tokenize would hit the end inside a statement
    indents = [0]
    size = len(text)
    for i in starts:
        column = 0
        while i < size and text[i] in " \t":
            column = column + 1 if text[i] == " " else (column // _TABSIZE + 1) * _TABSIZE
            i += 1
        if i == size or text[i] in "#\n":
            continue  # blank or comment-only lines do not count
        if column > indents[-1]:
            indents.append(column)
        while column < indents[-1]:
            if column not in indents:
                return False  # tokenize raises IndentationError here
            indents.pop()
    return True
