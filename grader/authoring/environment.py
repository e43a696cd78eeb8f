"""A course's environment, read at import: the modules the grading environment lacks (each named
with the line that installs it, from what the course declares: ``authoring.requirements``), the
data files it reads but does not ship, the kernel it names, the files its notebook writes itself,
and the module names its notebook imports as other modules. A cell that fails only for a missing
module, an unshipped file or a run-time installer, that nothing graded depends on, is not run when
grading (with a note); one something depends on stops the import, naming the cell and what needs it.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from grader.authoring.importing import Imported
from grader.authoring.requirements import install_line
from grader.errors import UsageError

if TYPE_CHECKING:
    from grader.run.job import CaptureSpec, RunResult

_NO_MODULE = re.compile(r"No module named '([^']+)'")


def missing_module(ename: str, evalue: str) -> str | None:
    """The module a cell's error says is not installed (``ModuleNotFoundError: No module named 'x'``)."""
    if ename != "ModuleNotFoundError":
        return None
    m = _NO_MODULE.search(evalue)
    if m is None or m.group(1).partition(".")[0] == "nose":  # the grader has nose's helpers where tests run
        return None
    return m.group(1)


def modules_rebound(sources: list[str | None]) -> set[str]:
    """The names of modules a test may use without importing them (``np``, ``random``) that the
    notebook imports as another module (``from numpy import random``): in the notebook's tests they
    are the notebook's, so each test reads them from the notebook (``notebook_names``)."""
    from grader.course.testcode import GRADER_MODULES
    from grader.notebook import python_source

    out: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(python_source(source or ""))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bound = {
                    (a.asname or a.name.partition(".")[0]): (a.name if a.asname else a.name.partition(".")[0])
                    for a in node.names
                }
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                bound = {(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names if a.name != "*"}
            else:
                continue
            out |= {alias for alias, module in bound.items() if GRADER_MODULES.get(alias, module) != module}
    return out


def also_missing(item: Imported, sources: list[str | None], module: str) -> tuple[str, ...]:
    """The other modules the notebook imports that are not installed here either (nor beside it),
    in the order the notebook first imports them: named with ``module``, so one install does."""
    import importlib.util

    from grader.notebook import imported_modules

    folder = item.source.parent
    out: list[str] = []
    for source in sources:
        for name in imported_modules([source or ""]):
            top = name.partition(".")[0]
            if top in out or top == module.partition(".")[0] or top in sys.stdlib_module_names:
                continue
            if (folder / f"{top}.py").is_file() or (folder / top).is_dir():
                continue
            try:
                found = importlib.util.find_spec(top) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                out.append(top)
    return tuple(out)


def _binds_from(source: str, module: str) -> set[str]:
    """The names a cell binds from its first statement that imports ``module`` on (all it binds
    where no top-level statement does): what is missing when that import fails."""
    from grader.notebook import parse_cell, python_source

    top = module.partition(".")[0]
    statements = parse_cell(source).statements
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError:
        return {n for st in statements for n in st.binds}
    start = 0
    for k, node in enumerate(tree.body):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        if any(n.partition(".")[0] == top for n in names):
            start = k
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                return {"*"}  # names unknown here: whatever a later cell reads may come from it
            break
    return {n for st in statements[start:] for n in st.binds}


def optional_cells(
    item: Imported,
    sources: list[str | None],
    missing: dict[int, str],
    tests: list[str],
    declared: list[str],
    *,
    testing: set[int] | frozenset[int] = frozenset(),
) -> set[int]:
    """The cells (by position in ``sources``, None for a cell that is not code) that fail only
    because a module is not installed here, and on whose names no later cell and no test depends:
    they are not run when grading, with a note naming the line that installs the module. A cell
    something depends on stops the import: a UsageError names the notebook, the cell, the module,
    the line that installs it and what depends on it (``testing``: the positions of test cells,
    which are never optional)."""
    from grader.notebook import parse_cell

    reads = outer_reads
    out: set[int] = set()
    for pos, module in sorted(missing.items()):
        line = install_line(module, declared)
        others = also_missing(item, sources, module)
        where = f"{item.source.name}, cell {item.number(pos + 1)}"
        lost = _binds_from(sources[pos] or "", module)
        if "*" in lost:  # what later cells read that no cell binds and is no builtin may come from it
            bound = {
                n
                for k, src in enumerate(sources)
                if k != pos
                for st in parse_cell(src or "").statements
                for n in st.binds
            }
            later = {n for k in range(pos + 1, len(sources)) for n in reads(sources[k] or "")}
            lost = {n for n in later - bound if not hasattr(builtins, n)} or {"*"}
        needs = [
            f"cell {item.number(k + 1)}"
            for k in range(pos + 1, len(sources))
            if sources[k] is not None and reads(sources[k] or "") & lost
        ]
        needs += ["a test"] if any(reads(t) & lost for t in tests) and not needs else []
        if pos in testing or needs:
            what = "it is a test" if pos in testing else f"{needs[0]} uses what it makes ({', '.join(sorted(lost))})"
            install = f"install it (`{line}`)"
            if others:  # every module the notebook lacks here, in one install line
                named = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + others[-1]
                install = (
                    f"install it and the notebook's other modules missing here, {named} "
                    f"(`{install_line(module, declared, others)}`),"
                )
            raise UsageError(
                f"{where} needs the module {module}, which is not installed here, and {what}: {install} and import again; nothing was written"
            )
        out.add(pos)
        note = (
            f"A cell that needs the module {module} is not run when grading: grading does not install "
            "it, and nothing graded uses what that cell makes."
        )
        if note not in item.settings.setdefault("notes", []):
            item.settings["notes"].append(note)
        item.note(
            item.number(pos + 1),
            f"needs the module {module}, which is not installed here (`{line}`); nothing graded uses "
            "what it makes, so it is not run when grading",
        )
    return out


def kernel(path: Path, nb: Any, item: Imported) -> None:
    """A notebook written for another Python kernel (``conda-env-x-py``, one labelled ``python2``)
    runs on the grading kernel, with a note; one in another language cannot be graded here."""
    spec = nb.metadata.get("kernelspec", {}) or {}
    info = nb.metadata.get("language_info", {}) or {}
    language = str(spec.get("language") or info.get("name") or "python").lower()
    name = str(spec.get("name") or "python3")
    if language != "python":
        shown = spec.get("display_name") or name
        raise UsageError(
            f"{path.name} is written for the {shown} kernel ({language}); only Python notebooks are graded "
            "here, so nothing was imported"
        )
    if name != "python3":
        item.notes.append(
            f"{path.name}: written for the kernel {name!r}; it runs on the grading kernel (Python 3), and the "
            "notebooks written here name that one"
        )
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}


WRITTEN = "written"  # the capture of a detection run that names the given files the notebook wrote


def written_capture(names: list[str]) -> tuple[CaptureSpec, CaptureSpec]:
    """Two captures for a run of the instructor's notebook that say which of its given files
    (``names``, paths inside the working directory) the notebook writes: before the first cell,
    each file's modification time is set to 0 (the run's own copy); at the end, the files whose
    time is no longer 0 were written (or replaced) by a cell. Read with ``written_files``."""
    from grader.run.job import CaptureSpec
    from grader.vocab import CaptureKind

    listed = repr(sorted(names))
    mark = f"[__import__('os').utime(p, (0, 0)) for p in {listed} if __import__('os').path.isfile(p)]"
    seen = f"[p for p in {listed} if __import__('os').path.isfile(p) and __import__('os').stat(p).st_mtime != 0]"
    return (
        CaptureSpec("written/mark", CaptureKind.EXPR, mark, 0),
        CaptureSpec(WRITTEN, CaptureKind.EXPR, seen, None),
    )


def written_files(result: RunResult) -> list[str]:
    """The given files the run's notebook wrote (``written_capture``), by their path inside it."""
    from grader.capture.decoding import to_python

    got = result.captures.get(WRITTEN)
    if got is None or got.value is None:
        return []
    value = to_python(got.value)
    return [str(x) for x in value] if isinstance(value, list) else []


def withhold_written(item: Imported, written: list[Path]) -> None:
    """The data files the instructor's notebook writes itself (a cell writes the file its test reads
    back) are not given with the assignment: the student's run makes its own, and a test that
    reads one reads what that run wrote, as the course's tool does. Each is noted."""
    folder = item.source.parent
    for path in written:
        if path in item.data:
            item.data.remove(path)
            shown = path.relative_to(folder).as_posix() if path.is_relative_to(folder) else path.name
            item.notes.append(
                f"{item.source.name}: {shown} is written by the notebook itself, so it is not given with it "
                "(the student's notebook makes it)"
            )


class InRun(NamedTuple):
    """What one run of the instructor's notebook, in the sandbox, says of its cells (by position)."""

    missing: dict[int, str]  # fails because a module is not installed here: the module
    unread: dict[int, str]  # fails because a file it reads is not there: the file
    errors: dict[int, str]  # fails otherwise: the error
    written: list[Path]  # the data files the notebook writes itself
    lines: dict[int, int]  # of ``errors``: the line of the cell's top-level statement it stopped at


def stopped_line(index: int, frames: tuple[str, ...]) -> int | None:
    """The line of cell ``index`` (1-based, as the run numbers cells) at which the cell's own code
    was when it raised: its outermost frame in that cell (``"cell 3, line 5: inst()"``)."""
    head = f"cell {index}, line "
    for frame in frames:
        if frame.startswith(head):
            number = frame[len(head) :].partition(":")[0]
            return int(number) if number.isdigit() else None
    return None


def missing_in_run(folder: Path, sources: list[str | None], data: list[Path]) -> InRun:
    """The cells (by position, None for a cell that is not code) that fail, run once in the sandbox
    as the notebook stands with its data files, because a module is not installed here (with the
    module), those that fail because a file they read is not there (with the file's name), and
    those that fail otherwise (with the error: a lesson's ``print("..."`` that shows a SyntaxError);
    and the data files the notebook writes itself (the file its test reads back)."""
    from grader.course.model import Limits
    from grader.notebook import imported_modules
    from grader.run.forking import default_executor
    from grader.run.job import Job, JobCell

    code = [(k, src) for k, src in enumerate(sources) if src is not None and src.strip()]
    given = {p.relative_to(folder).as_posix(): p for p in data if p.is_relative_to(folder)}
    job = Job(
        cells=tuple(JobCell(index=k + 1, source=src) for k, src in code),
        captures=written_capture(list(given)) if code else (),
        limits=Limits(),
        files=tuple((p, rel) for rel, p in given.items()),
        preload=tuple(
            sorted(
                m for m in imported_modules([s for _, s in code]) if m.partition(".")[0] not in sys.stdlib_module_names
            )
        ),
    )
    out: dict[int, str] = {}
    files: dict[int, str] = {}
    errors: dict[int, str] = {}
    lines: dict[int, int] = {}
    result = default_executor().run(job)
    written = [given[rel] for rel in written_files(result) if rel in given]
    for run in result.cells:
        module = missing_module(run.ename, run.evalue)
        if module is not None:
            out[run.index - 1] = module
        elif run.ename == "FileNotFoundError" and run.filename:
            files[run.index - 1] = run.filename.removeprefix("./")
        elif run.ename and run.ename not in ("ModuleNotFoundError", "ImportError"):
            text = f"{run.ename}: {run.evalue}".strip()
            errors[run.index - 1] = text if len(text) <= 120 else text[:117] + "..."
            line = stopped_line(run.index, run.traceback)
            if line is not None:
                lines[run.index - 1] = line
    return InRun(out, files, errors, written, lines)


def outer_reads(text: str) -> set[str]:
    """The names a cell reads from before it: each statement's reads, in the order they run, less what
    the cell has bound by then (a cell that imports ``lowess`` or sets ``ysmooth`` in its loop before
    using it needs neither from an earlier cell)."""
    import ast

    from grader.notebook import module_level_binds, parse_cell, python_source
    from grader.notebook.scopes import free_reads

    try:
        tree = ast.parse(python_source(text))
    except SyntaxError:
        return {n for st in parse_cell(text).statements for n in st.reads}
    bound: set[str] = set()
    out: set[str] = set()

    def read(node: ast.AST | None) -> None:
        if node is not None:
            out.update(free_reads(node) - bound)

    def bind(node: ast.AST | None) -> None:
        if node is not None:
            bound.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))

    def visit(stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if isinstance(st, (ast.For, ast.AsyncFor)):
                read(st.iter)
                bind(st.target)
                visit(st.body + st.orelse)
            elif isinstance(st, (ast.While, ast.If)):
                read(st.test)
                visit(st.body + st.orelse)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    read(item.context_expr)
                    bind(item.optional_vars)
                visit(st.body)
            elif isinstance(st, ast.Try):
                visit(st.body + [s for h in st.handlers for s in h.body] + st.orelse + st.finalbody)
            else:
                read(st)
                bound.update(module_level_binds(ast.Module(body=[st], type_ignores=[])))

    visit(tree.body)
    return out


def needed_by(
    sources: list[str | None], pos: int, tests: list[str], skipped: set[int], number: Any = None
) -> tuple[set[str], list[str]]:
    """What a cell binds, and the later cells (or a test) that read any of it (named by ``number``,
    the source notebook's numbering, where given)."""
    from grader.notebook import parse_cell

    reads = outer_reads
    lost = {n for st in parse_cell(sources[pos] or "").statements for n in st.binds}
    needs = [
        f"cell {number(k + 1) if number else k + 1}"
        for k in range(pos + 1, len(sources))
        if sources[k] is not None and k not in skipped and reads(sources[k] or "") & lost
    ]
    return lost, needs + (["a test"] if any(reads(t) & lost for t in tests) and not needs else [])


def erring_cells(
    item: Imported,
    sources: list[str | None],
    errors: dict[int, str],
    tests: list[str],
    answers: set[int],
    lines: dict[int, int] | None = None,
) -> set[int]:
    """The given cells (not ``answers``) that raise in the instructor's notebook and on whose names
    nothing later and no test depends (a lesson's cell that shows an error on purpose): the
    course's tool runs on past them; here they are not run when grading, with a note.

    A cell whose earlier statements something later uses, and whose statement that raised (at
    ``lines``, a line of its own) and those after it nothing uses (``import tools`` then
    ``tools.install()``, which pip-installs at run time, or a download: grading has neither), runs
    its earlier statements: those from the one that raised on are inert lines (run as ``pass``), as
    the course's tool, stopping at the error, never ran them; with a note naming the cell, the line
    and the error. A cell something needs of what it could not make is left as it is: the
    solution's run then names it and the import stops."""
    out: set[int] = set()
    for pos, error in sorted(errors.items()):
        if pos in answers:
            continue
        if not needed_by(sources, pos, tests, out, item.number)[1]:
            out.add(pos)
            item.note(
                item.number(pos + 1),
                f"raises {error} in the master notebook, and nothing graded uses what it makes: the course's tool "
                "runs on past the error; here it is not run when grading",
            )
            continue
        rest = _from_line(sources[pos] or "", (lines or {}).get(pos))
        if rest is None or _read_later(sources, pos, tests, out, rest[1]):
            continue
        inert = item.settings.setdefault("inert_lines", [])
        inert.extend(p for p in (re.escape(line.strip()) for line in rest[0]) if p not in inert)
        shown = rest[0][0].strip()
        what = "that line makes" if len(rest[0]) == 1 else "it and the lines after it make"
        lines_are = "that line is" if len(rest[0]) == 1 else "those lines are"
        item.note(
            item.number(pos + 1),
            f"`{shown}` raises {error} in the master notebook, and nothing graded uses what {what}: the course's "
            f"tool runs on past the error; here {lines_are} run as `pass` when grading (the cell's earlier lines run)",
        )
    return out


def _from_line(source: str, line: int | None) -> tuple[list[str], set[str]] | None:
    """The lines of a cell's top-level statements from the one holding ``line`` to the end, and the
    names they bind: None where no statement holds it, it is the cell's first (nothing of the cell
    ran), or one of them shares a line or spans several (a line made ``pass`` must be exactly one
    statement)."""
    from grader.notebook import parse_cell

    if line is None:
        return None
    statements = parse_cell(source).statements
    at = next((k for k, st in enumerate(statements) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
    if not at:  # None, or the first statement: nothing of the cell ran
        return None
    rest = statements[at:]
    if statements[at - 1].end_lineno in (None, rest[0].lineno) or any(
        st.compound or st.end_lineno != st.lineno for st in rest
    ):
        return None
    text = source.splitlines()
    numbers = [st.lineno for st in rest]
    if len(set(numbers)) != len(numbers) or max(numbers) > len(text):
        return None
    return [text[n - 1] for n in numbers], {n for st in rest for n in st.binds}


def _read_later(sources: list[str | None], pos: int, tests: list[str], skipped: set[int], names: set[str]) -> bool:
    """Whether a later cell (not ``skipped``) or a test reads any of ``names``."""
    reads = outer_reads
    later = any(reads(sources[k] or "") & names for k in range(pos + 1, len(sources)) if k not in skipped)
    return later or any(reads(t) & names for t in tests)


def unshipped_cells(item: Imported, sources: list[str | None], unread: dict[int, str], tests: list[str]) -> set[int]:
    """The cells (by position in ``sources``) that fail only because a file they read is not shipped
    with the course (``unread``: the file each one reads), and on whose names no later cell and no
    test depends: they are not run when grading, with a note (a course's own tool runs on past the
    error). A cell something depends on stops the import: a UsageError names the notebook, the
    cell, the file and what depends on it."""
    out: set[int] = set()
    for pos, name in sorted(unread.items()):
        where = f"{item.source.name}, cell {item.number(pos + 1)}"
        lost, needs = needed_by(sources, pos, tests, out, item.number)
        if needs:
            raise UsageError(
                f"{where} reads the file {name}, which is not beside the notebook, and {needs[0]} uses what it "
                f"makes ({', '.join(sorted(lost))}): add the file (and list it in the course's files) and import "
                "again; nothing was written"
            )
        out.add(pos)
        item.note(
            item.number(pos + 1),
            f"reads the file {name}, which is not beside the notebook; nothing graded uses what it makes, so it "
            "is not run when grading",
        )
    return out
