"""The worker's cheaper cell transformation (fast_cells.skip_needless_tokenizing) gives exactly what
IPython's own TransformerManager.transform_cell gives: on every code cell in the repository, as
the grader sends it, and on cells written to hit IPython's special syntax; and a notebook run by
worker.Runner in a real process reports the same frames with and without it (and without the
shell's history tee, which make_shell also turns off)."""

from __future__ import annotations

import gc
import json
import os
import random
import struct
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from grader import capture, notebook
from grader.errors import NotebookError
from grader.judge import variants
from grader.run import fast_cells

ROOT = Path(__file__).resolve().parent.parent


class Counted(TransformerManager):
    """IPython's manager, counting how often its token pass (the tokenizer) runs."""

    def __init__(self):
        super().__init__()
        self.token_passes = 0

    def do_token_transforms(self, lines):
        self.token_passes += 1
        return super().do_token_transforms(lines)


def fast_manager() -> Counted:
    manager = Counted()
    assert fast_cells.skip_needless_tokenizing(manager), "the fast path is not installed on this Python/IPython"
    return manager


def outcome(manager: TransformerManager, cell: str) -> tuple:
    """The transformed text or the exception, and the warnings the transform gave on the way: only
    its own. The garbage collector is off meanwhile, so nothing an earlier test left behind is
    finalised in the middle (an unclosed event loop's ResourceWarning), and a ResourceWarning, which
    a transform of text cannot give, is not counted (another thread's object may be finalised then)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with warnings.catch_warnings(record=True) as given:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                result: tuple = ("ok", manager.transform_cell(cell))
            except Exception as exc:  # noqa: BLE001 - whatever IPython's transform raises, the fast path must too
                result = ("raises", type(exc).__name__, str(exc))
    finally:
        if collecting:
            gc.enable()
    return result + tuple(f"{w.category.__name__}: {w.message}" for w in given)


def repository_cells(course) -> list[tuple[str, bool, str]]:
    """(where, sent, source) for every code cell of every notebook under solutions/, assignments/
    and examples/: as written, and (sent=True) as the grader sends it, with blanks filled, without
    and with variant injections."""
    out = []
    for top in ("solutions", "assignments", "examples"):
        for path in sorted((ROOT / top).rglob("*.ipynb")):
            try:
                cells = notebook.read(path)
            except NotebookError:
                continue  # examples/ has a file that is not a notebook on purpose
            name = path.parent.name
            names = variants.varied_names(course.assignment(name)) if name in course.assignments else ()
            for cell in cells:
                where = f"{path.relative_to(ROOT)} cell {cell.index}"
                filled = notebook.fill_blanks(cell.source)
                out += [
                    (where, False, cell.source),
                    (where + " filled", True, filled),
                    (where + " injected", True, variants.with_injections(filled, names)),
                ]
    return out


def test_same_as_ipython_on_every_repository_cell(course):
    cells = repository_cells(course)
    assert len(cells) > 500
    ipython, fast, fast_sent = TransformerManager(), fast_manager(), fast_manager()
    for where, sent, source in cells:
        assert outcome(fast_sent if sent else fast, source) == outcome(ipython, source), where
    # The comparison is not vacuous: of the cells as the grader sends them, nearly all skip the
    # tokenizer (the exceptions have a `?` in a comment or string). Skeletons as written have `?`
    # blanks, so they take IPython's path.
    sent = sum(1 for _, s, _ in cells if s)
    assert fast_sent.token_passes < 0.02 * sent
    assert fast.token_passes > 40


def test_garbage_an_earlier_test_left_is_not_counted_as_the_transforms_warning():
    """A resource left unclosed elsewhere (an event loop, a file) and collected while a cell is
    transformed gives its ResourceWarning there: the comparison counts only what the transform
    itself gave. (An unclosed event loop in a cycle can also fail in its own ``__del__``, when the
    collector finalises its self-pipe first, which would add a warning of its own to the suite's;
    an unclosed file gives the ResourceWarning alone.)"""

    class CollectedMeanwhile(TransformerManager):
        def transform_cell(self, cell):
            gc.collect()  # as a collection that happens to fall in the middle of the transform
            warnings.warn("the transform's own", stacklevel=1)
            return super().transform_cell(cell)

    class Left:  # what an earlier test left: an unclosed file in a cycle, which only the collector frees
        pass

    left = Left()
    left.file = open(os.devnull)  # noqa: SIM115 - left open on purpose
    left.itself = left
    del left
    assert outcome(CollectedMeanwhile(), "x = 1") == ("ok", "x = 1\n", "UserWarning: the transform's own")


TRICKY = [
    # magics, shell commands, help
    "%time x = 1",
    "%%time\nx = 1\ny = 2\n",
    "%%capture out\nprint('hi')",
    "%matplotlib inline\nx = 1",
    "x = 1\n%time y = x",
    "!ls",
    "!!ls",
    "files = !ls",
    "x = %pwd",
    "x = \\\n  %pwd",
    "x=%pwd",
    "x = !ls -l",
    "x?",
    "x??",
    "?x",
    "??x",
    "%timeit?",
    "np.sum?",
    "x.shape?\n",
    "x = 1\nx?",
    "%%time?\nx = 1",
    "  %time x = 1",
    "if x:\n    %time y = 1",
    "if x:\n    !ls",
    "%pwd  # where?",
    # escapes at the start of a line
    "/print 1 2",
    ",print a b",
    ";print a b",
    "  /print 1",
    "x = 1\n/print x",
    # leading indentation, leading blank lines, prompts
    "  x = 1\n  y = 2",
    "    x = 1\n\n    y = 2\n",
    "\n\n\nx = 1",
    "   \n\t\nx = 1",
    "\n",
    "",
    "   ",
    ">>> x = 1\n>>> y = 2",
    ">>> def f():\n...     return 1\n",
    "In [1]: x = 1\n   ...: y = 2",
    "x = '''\n>>> not a prompt\n'''",
    "...",
    "x = ...\nprint(...)",
    # Python that only looks like IPython syntax
    "a = b % c",
    "a %= 3",
    "print('%d items' % n)",
    "s = 'why?'",
    's = "100%"',
    "s = '!ls'",
    "a != b",
    "print(a!=b)",
    "x = f'{a!r}'",
    "# really?\nx = 1",
    "x = 1  # why?",
    "x = '''\n?\n'''",
    "d = {'a': 1}\nd['a']",
    "x = (1\n/ 2)",
    "x = 1 \\\n/ 2",
    "x = [1,\n,2]",
    "x = 1;",
    "x;",
    "f(x);\n",
    "x = 1; y = 2;",
    "a = b = 2",
    # indentation tokenize rejects, and the kinds it accepts
    "if True:\n        a = 1\n    b = 2",
    "if x:\n\ty = 1\n    z = 2",
    "if x:\n\ty = 1\n        z = 2",
    "def f():\n    if x:\n        return 1\n  return 2",
    "class A:\n    def f(self):\n        pass\n\n    def g(self):\n        pass",
    "def f(a,\n      b):\n    return a",
    "x = (\n1)\n    y = 2",
    "if x:\n        y = (\n)\n    z = 1",
    "if x:\n    y = '''\n  a\n'''\n  z = 1",
    "if x:\n    y = 1 + \\\n  2\n    z = 3",
    "if x:\n    y = 1  # \\\n  z = 2",
    # strings, brackets and backslashes tokenize cannot finish
    "s = 'abc",
    "s = '''abc",
    "x = (1,",
    "x = 1)",
    "\\",
    "x = 1 + \\",
    "x = 1 + \\\n",
    "s = 'a\\\nb'\n  y = 1",
    "s = r'\\''\nif x:\n        a\n    b",
    "s = '\\\\'\nif x:\n        a\n    b",
    "x = \\ y",
    # other line breaks str.splitlines honours
    "x = 1\r\ny = 2",
    "x = 1\ry = 2",
    "x = 1\x0cy = 2",
    "s = 'a\u2028b'",
    "x = 1\x0b",
    "\x0c\nx = 1",
    # non-ASCII whitespace
    "\u00a0x = 1",
    "x\u00a0= 1",
    "\u3000/print 1",
]


@pytest.mark.parametrize("cell", TRICKY)
def test_same_as_ipython_on_tricky_cells(cell):
    assert outcome(fast_manager(), cell) == outcome(TransformerManager(), cell)


FRAGMENTS = [
    "x = 1",
    "if x:",
    "    y = 2",
    "        z = 3",
    "  w = 4",
    "\tq = 5",
    "    \tq = 5",
    "def f(a,",
    "      b):",
    "return a",
    "s = '''abc",
    "def'''",
    'u = """',
    '"""',
    "t = 'a\\",
    "b'",
    "c = 'open",
    "d = (1,",
    "2)",
    ")",
    "]",
    "(",
    "# comment ' with quote",
    "# why?",
    "x?",
    "%time x",
    "!ls",
    "a = !ls",
    "b = %pwd",
    "a = b % c",
    "a != b",
    "/f 1 2",
    ",f a b",
    ";f a b",
    "x = 1 + \\",
    "  2",
    "\\",
    "",
    "   ",
    ">>> x = 1",
    "... y",
    "In [1]: z",
    "%%time",
    "x = '#'",
    'y = "?"',
    "z = 1; y = 2;",
    "class A:",
    "    def g(self):",
    "        pass",
    "else:",
    "  # indented comment",
    "x = [",
    "  1, 2",
    "r'\\'",
    "\u00a0x = 1",
    "x = 1\r",
    "\f x = 1",
    "'''",
    '"',
]


def test_same_as_ipython_on_random_cells():
    """Cells put together at random from the fragments above (a fixed seed): mostly not Python,
    to reach the fast path's rules for strings, brackets, backslashes and indentation."""
    rng = random.Random(5)
    ipython, fast = TransformerManager(), fast_manager()
    for _ in range(4000):
        cell = "\n".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8))) + rng.choice(["", "\n"])
        assert outcome(fast, cell) == outcome(ipython, cell), repr(cell)
    assert 500 < 4000 - fast.token_passes < 3500  # both paths are exercised


@pytest.mark.parametrize(
    "cell, tokenizes",
    [
        ("x = 1\nprint(x)", False),
        ("  x = 1\n  x", False),
        ("\n\nx = 1", False),
        ("a = b % c", False),
        ("class A:\n    def f(self):\n        return (1,\n                2)\n\nA().f()", False),
        ("s = '''\ntext\n'''\nif s:\n    t = 1", False),
        ("x = 1;", False),
        (">>> x = 1", False),
        ("%time x = 1", True),
        ("x?", True),
        ("x = !ls", True),
        ("s = 'why?'", True),
        ("x = 1\r\n", True),
        ("if True:\n        a = 1\n    b = 2", True),
        ("s = 'abc", True),
        ("/print 1", True),
    ],
)
def test_which_cells_skip_the_tokenizer(cell, tokenizes):
    manager = fast_manager()
    outcome(manager, cell)
    assert manager.token_passes == (1 if tokenizes else 0)


# --------------------------------------------------------------------------------------------
# A notebook through worker.Runner, in a fresh process, with and without the fast path

RUN = textwrap.dedent("""
    import io, json, os, sys
    from grader.run import worker

    job = json.loads(sys.stdin.read())
    shell = worker.make_shell()
    manager = shell.input_transformer_manager
    installed = "transform_cell" in vars(manager) and "_tee" in vars(shell)
    if sys.argv[1] == "ipython":
        del manager.transform_cell, shell._tee  # IPython's own methods again
    job["trusted"] = sys.argv[1] == "trusted"  # the solution's runs: fast_cells.run_trusted
    out = io.BytesIO()
    runner = worker.Runner(job, out, shell)
    runner.lean = sys.argv[1] != "ipython"  # IPython's run_cell for every cell, or fast_cells.run_lean
    runner.run()
    kept = [text for outputs in shell.history_manager.outputs.values() for o in outputs
            for text in o.bundle.get("stream", [])]
    os.write(1, json.dumps({"installed": installed, "kept": kept}).encode() + b"\\n" + out.getvalue())
""")

CELLS = [
    "x = 6 * 7\nx",  # the last expression is displayed: "Out[0]: 42\n"
    "y = _ + 1",  # `_` is the last displayed value
    "%precision 3\n1 / 3",  # a line magic that changes the display: "Out[0]: 0.333\n"
    "%%capture captured\nprint('hidden')",  # a cell magic
    "here = %pwd",  # a magic's value
    "from IPython.display import display\ndisplay(3)",
    "  m = 7 % 4\n  m",  # common indentation removed; `%` as an operator
    "s = 'why?'  # really?",
    "1 / 0",
    "if True:\n        a = 1\n    b = 2",  # tokenize's IndentationError, as IPython reports it
    "z = y +",  # the parser's SyntaxError
    "import sys\nfor i in range(3):\n    print(i)\n    print('e', i, file=sys.stderr)",
    # the cells below go through fast_cells.run_lean or hand themselves to IPython's run_cell
    "import warnings\nwarnings.warn('careful')\nw = '\\d'",  # a warning (stderr), a compile-time one
    "print('before')\nreturn 5",  # compiles only statement by statement: prints, then fails
    "raise SystemExit(3)",  # IPython catches it and warns
    "len?",  # help, printed
    "async def g():\n    return 4\nv = await g()",  # top-level await: IPython's loop runner
    "from __future__ import annotations\ndef h(a: Undefined) -> None: pass\nann = h.__annotations__",
    "def k(a: Undefined2): pass\nann2 = k.__annotations__",  # the __future__ import holds in later cells
    "q = 5;\nq;\n# a comment",  # a trailing semicolon, then a comment
    "",  # an empty cell
]
CAPTURES = [
    ("v", "value", "v"),
    ("ann", "expr", "ann['a'] + ann['return']"),
    ("ann2", "expr", "ann2['a']"),
    ("y", "value", "y"),
    ("s", "value", "s"),
    ("m", "value", "m"),
    ("hidden", "expr", "captured.stdout"),
    ("here", "expr", "here == __import__('os').getcwd()"),
    ("precision", "expr", "repr(1 / 3)"),
]


def run_notebook(
    mode: str, tmp_path: Path, cells: list[str] = CELLS, captures: list[tuple[str, str, str]] = CAPTURES
) -> tuple[dict, list[dict]]:
    job = {
        "cells": [{"index": i + 1, "source": s, "skip": ""} for i, s in enumerate(cells)],
        "captures": [{"id": i, "kind": k, "target": t, "point": None, "seed": None} for i, k, t in captures],
        "injections": {},
        "limits": {"capture_mb": 1, "output_kb": 64},
        "traceback_lines": 8,
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", RUN, mode],
        input=json.dumps(job).encode(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    head, _, body = proc.stdout.partition(b"\n")
    frames = []
    while body:
        (size,) = struct.unpack(">I", body[:4])
        frames.append(json.loads(body[4 : 4 + size]))
        body = body[4 + size :]
    for f in frames:
        f.pop("duration", None)
        f.pop("pid", None)
    return json.loads(head), frames


def test_runner_reports_the_same_with_and_without_the_fast_path(tmp_path):
    fast_info, fast = run_notebook("fast", tmp_path)
    ipython_info, ipython = run_notebook("ipython", tmp_path)
    assert fast_info["installed"] and ipython_info["installed"]  # make_shell() installs both
    assert fast == ipython
    # IPython's per-cell tee copies every write into history_manager.outputs: the last cell's
    # three writes of "e" are kept twice each (stdout and stderr are one stream here). Off: none.
    assert ipython_info["kept"].count("e") == 6
    assert fast_info["kept"] == []

    ends = {f["pos"]: f for f in fast if f["ev"] == "cell" and f["phase"] == "end"}
    assert [ends[i]["status"] for i in range(len(CELLS))] == (
        ["ok"] * 8 + ["error"] * 3 + ["ok"] * 2 + ["error"] * 2 + ["ok"] * 6
    )
    # No output is kept: a last expression's value is bound to `_` and Out (cell 2 reads it, the
    # capture `y` below) but never formatted, so it counts for nothing; display() still writes.
    assert ends[0]["output_bytes"] == 0
    assert ends[2]["output_bytes"] == 0
    assert ends[3]["output_bytes"] == 0  # %%capture kept it
    assert ends[5]["output_bytes"] == len("3\n")
    assert ends[6]["output_bytes"] == 0
    assert (ends[8]["ename"], ends[8]["evalue"]) == ("ZeroDivisionError", "division by zero")
    assert (ends[9]["ename"], ends[9]["evalue"]) == (
        "IndentationError",
        "unindent does not match any outer indentation level (<tokenize>, line 3)",
    )
    assert ends[10]["ename"] == "SyntaxError"
    assert ends[11]["output_bytes"] == len("0\ne 0\n1\ne 1\n2\ne 2\n")
    assert ends[12]["output_bytes"] > len("careful")
    assert (ends[13]["ename"], ends[13]["output_bytes"]) == ("SyntaxError", len("before\n"))
    assert ends[14]["ename"] == "SystemExit" and ends[14]["output_bytes"] > 0

    captured = {f["id"]: capture.decode(f["value"]).data for f in fast if f["ev"] == "capture"}
    assert captured == {
        "v": 4,
        "ann": "UndefinedNone",
        "ann2": "Undefined2",
        "y": 43,
        "m": 3,
        "s": "why?",
        "hidden": "hidden\n",
        "here": True,
        "precision": "0.3333333333333333",
    }  # %precision changes the display only


# The trusted solution's cells (``Job.trusted``): compiled code, output discarded, ``_`` still bound

TRUSTED_CELLS = [
    "import numpy as np\nX = np.arange(6.0).reshape(2, 3)\nX",  # compiled; X bound to `_`, not shown
    "S = X @ X.T\nprint('S:', S)\nS.sum()",  # print formats nothing
    "def f(v):\n    return v / 0\nr = f(1)",  # an error inside a function
    "import io\nbuf = io.StringIO()\nprint('kept', file=buf)",  # print to a file still writes
    "u = _ * 2",  # reads `_`: through run_lean
    "%precision 2",  # IPython syntax: through run_lean
    "t = 1\nt;",  # a trailing semicolon
]
TRUSTED_CAPTURES = [
    ("S", "value", "S"),
    ("buf", "expr", "buf.getvalue()"),
    ("u", "value", "u"),
    ("out", "expr", "sorted(Out.items())"),
    ("under", "expr", "_"),
    ("t", "value", "t"),
]


def test_trusted_runs_report_what_the_lean_runner_reports_but_output(tmp_path):
    """The captures, statuses, errors and tracebacks of a trusted run are the lean runner's; only
    the sizes of output differ (nothing printed to the screen or displayed is formatted)."""
    everything = [c for c in CELLS if "await" not in c]  # every IPython feature run_lean covers
    _, first = run_notebook("trusted", tmp_path, TRUSTED_CELLS, TRUSTED_CAPTURES)
    for cells, captures in ((TRUSTED_CELLS, TRUSTED_CAPTURES), (everything, CAPTURES)):
        _, trusted = (
            run_notebook("trusted", tmp_path, cells, captures)
            if cells is not TRUSTED_CELLS
            else (None, [dict(f) for f in first])
        )
        _, lean = run_notebook("fast", tmp_path, cells, captures)
        for f in trusted + lean:
            f.pop("output_bytes", None)
        assert trusted == lean
    trusted = first
    ends = {f["pos"]: f for f in trusted if f["ev"] == "cell" and f["phase"] == "end"}
    assert [ends[0]["output_bytes"], ends[1]["output_bytes"], ends[3]["output_bytes"]] == [0, 0, 0]
    assert ends[2]["ename"] == "ZeroDivisionError" and ends[2]["traceback"][-1] == "cell 3, line 2: return v / 0"
    captured = {f["id"]: capture.decode(f["value"]).data for f in trusted if f["ev"] == "capture"}
    assert captured["buf"] == "kept\n" and captured["under"] == captured["t"] == 1
    assert captured["u"] == 2 * captured["S"].sum()  # `_` was S.sum(): bound though never shown
