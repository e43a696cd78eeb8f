"""A test that imports its checks from a module of the course: ``from more_tests import
test_exercise_2(read_products)``, then ``test_exercise_2(read_products)``.

In nbgrader and otter the test runs in the student's kernel, so the course's function is called
with the student's function there. Here a test is replayed in the grader, on records of what the
student's code did: a function of the student's cannot cross the process boundary as data. So the
import becomes the functions it names, with what they use from their module (its imports,
constants and other functions), written into the test where the import stood: the test's own
functions, whose asserts are the grader's and whose calls into the student's code are taken in
the student's process, as for any helper a test defines.

``from MODULE import name`` of a module shipped beside the notebook (``MODULE.py``) is written in,
and ``import MODULE`` where the test only calls the module's functions and classes
(``MODULE.check(f)`` becomes ``check(f)``). An import whose code would hide a name the test reads
from the notebook is left as it is, as is a module the test reads values of (which the notebook may
have changed: ``grader.judge.testmodules`` takes those).
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.course import testcode


def course_modules(notebook: Path, files: list[Path]) -> dict[str, str]:
    """The modules shipped beside a notebook, by name: their source."""
    out: dict[str, str] = {}
    for path in files:
        if path.suffix == ".py" and path.parent == notebook.parent and path.stem.isidentifier():
            try:
                out[path.stem] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return out


def _top_level(source: str) -> list[tuple[set[str], str, set[str]]]:
    """Each top-level statement of a module: the names it binds, its text, the names it reads."""
    tree = ast.parse(source)
    out = []
    for node in tree.body:
        bound = testcode.bound_names(ast.Module(body=[node], type_ignores=[]))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {node.name}
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        text = ast.get_source_segment(source, node) or ast.unparse(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not text.startswith("@"):
            decorators = [f"@{ast.get_source_segment(source, d) or ast.unparse(d)}" for d in node.decorator_list]
            text = "\n".join([*decorators, text])
        out.append((bound, text, reads))
    return out


def _callables(source: str) -> set[str]:
    """The functions and classes a module defines at its top level."""
    return {
        n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def _closure(statements: list[tuple[set[str], str, set[str]]], names: set[str]) -> list[str]:
    """The module's statements that define ``names`` and what they read, in the module's order."""
    wanted, keep = set(names), set()
    changed = True
    while changed:
        changed = False
        for i, (bound, _, reads) in enumerate(statements):
            if i not in keep and bound & wanted:
                keep.add(i)
                wanted |= reads
                changed = True
    return [statements[i][1] for i in sorted(keep)]


def _indented(text: str, col: int) -> str:
    lines = text.split("\n")
    return "\n".join([lines[0], *((" " * col + line) if line.strip() else line for line in lines[1:])])


def inline(source: str, modules: dict[str, str]) -> tuple[str, list[str]]:
    """``source`` with each ``from MODULE import name`` of a course module replaced by the code it
    names; and the modules written in."""
    if not modules:
        return source, []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    notebook = testcode.student_names(source)
    edits: list[tuple[ast.stmt | ast.expr, str, bool]] = []  # (the node replaced, its new text, a block of statements)
    used: list[str] = []
    parsed: dict[str, list[tuple[set[str], str, set[str]]]] = {}

    def written(module: str, names: set[str]) -> str | None:
        """The module's code for ``names``, or None where it cannot be written into the test."""
        try:
            statements = parsed.setdefault(module, _top_level(modules[module]))
        except SyntaxError:
            return None
        code = _closure(statements, names)
        defined: set[str] = set()
        for bound, text, _ in statements:
            if text in code:
                defined |= bound
        if not names <= defined or defined & notebook:
            return None  # a name the module does not define at its top level, or one the notebook's would lose
        return "\n".join(code)

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
            if any(a.name == "*" for a in node.names):
                continue
            code = written(node.module, {a.name for a in node.names})
            if code is None:
                continue
            aliases = [f"{a.asname} = {a.name}" for a in node.names if a.asname and a.asname != a.name]
            edits.append((node, "\n".join([code, *aliases]), True))
            used.append(node.module)
        elif isinstance(node, ast.Import) and len(node.names) == 1 and node.names[0].name in modules:
            # ``import more_tests`` and ``more_tests.check(f)``: the functions and classes it calls
            alias = node.names[0].asname or node.names[0].name
            uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == alias]
            reads = [
                a
                for a in ast.walk(tree)
                if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == alias
            ]
            if not reads or len(reads) != len(uses) or any(not isinstance(a.ctx, ast.Load) for a in reads):
                continue  # the module itself is used, or written to: left as an import
            module = node.names[0].name
            code = written(module, {a.attr for a in reads})
            if code is None or not _callables(modules[module]) >= {a.attr for a in reads}:
                continue  # a value of the module's (which the notebook may have changed): left as an import
            edits.append((node, code, True))
            edits.extend((a, a.attr, False) for a in reads)
            used.append(module)
    if not edits:
        return source, []
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def at(line: int, col: int) -> int:  # ``ast``'s columns count UTF-8 bytes
        return offsets[line - 1] + len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    out = source
    for node, text, block in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        start = at(node.lineno, node.col_offset)
        end = at(node.end_lineno or node.lineno, node.end_col_offset or 0)
        out = out[:start] + (_indented(text, start - offsets[node.lineno - 1]) if block else text) + out[end:]
    return out, sorted(set(used))
