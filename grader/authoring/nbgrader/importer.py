"""``grader import nbgrader SOURCE_DIR``: an nbgrader course's source notebooks, as this grader's.

nbgrader keeps what a cell is in its metadata (``nbgrader``: ``solution``, ``grade``, ``locked``,
``task``, ``points``, ``grade_id``):

- autograded answer (solution, not graded): solution code between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``, which this grader's ``assign`` reads as they are;
- autograder tests (graded, not a solution): assert cells worth their points when they run without
  an error. Each becomes a question of that many points whose ``test`` checks are the cell's code:
  the visible part, and the whole cell, hidden parts included (``### BEGIN HIDDEN TESTS`` /
  ``### END HIDDEN TESTS``), as a hidden check. Both must pass, all or nothing, as in nbgrader.
  The cell stays in the notebook for students (hidden parts removed), ``locked``, and each check
  is taken where it stands (``at_cell``, its cell id), as nbgrader runs test cells in the student's
  kernel in order: the released cell runs there, so what it defines is there for later cells, and
  the test judges the values as they are at that cell. The verdict is the test's from config.yaml,
  replayed outside the student's process, so a student who edits the cell gains nothing. A cell that ends
  with a value (not a ``print``) earns that many points, as nbgrader reads its output: the value
  becomes ``partial_credit(...)``;
- manually graded answers (graded and a solution) and tasks: ``manual`` questions of their points.

Every notebook of an assignment becomes an assignment of its own (``NAME`` for one notebook,
``NAME_NOTEBOOK`` for several); ``header.ipynb`` beside the assignments is put at the top of each.

nbgrader's own rules come along, lowered to generic settings of config.yaml: read-only and test
cells are tagged ``locked`` (grading runs them as released); a test check fails when the test writes
to stderr (``stderr_fails``); an answer left as released scores 0 (``unchanged_scores_zero``), nbgrader's
stub counting as released (``blank_released_as``); a solution cell without markers is blanked whole;
a test gets what earlier test cells defined (``with_helpers``); ``### AUTOTEST`` lines are expanded
first (``grader.authoring.nbgrader.autotest``). The source notebook runs once in the sandbox
(``shows_an_error``) to find the cells that raise on purpose and the released files it writes.

Why one module: a notebook is read in one pass over its cells, in which each cell's nbgrader
metadata, its markers, what the source run found of it and the tests before it decide together
what the cell becomes (a question, a check, a tag, a note); what a test cell leaves in the kernel
(``kernel_state``), AUTOTEST (``autotest``) and titles (``grader.authoring.titles``) are apart.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path
from typing import Any

import nbformat

from grader.authoring import imported_checks
from grader.authoring.assign import BEGIN, END, LOCKED_TAG
from grader.authoring.environment import (
    kernel,
    missing_module,
    modules_rebound,
    needed_by,
    optional_cells,
    outer_reads,
    withhold_written,
    written_capture,
    written_files,
)
from grader.authoring.importing import (
    Imported,
    answer,
    clean_id,
    normalise,
    read_notebook,
)
from grader.authoring.nbgrader import autotest
from grader.authoring.nbgrader.kernel_state import builtins_set, helpers_of, rebinds, with_helpers
from grader.authoring.requirements import declared_requirements
from grader.authoring.titles import Titles
from grader.course import testcode
from grader.course.model import Limits
from grader.errors import UsageError
from grader.run.job import Job, JobCell
from grader.vocab import CellStatus

# What nbgrader releases in place of a solution (its ``ClearSolutions.code_stub`` for Python).
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
HIDDEN_BEGIN = re.compile(r"^\s*#+\s*BEGIN HIDDEN TESTS\s*#*\s*$")
HIDDEN_END = re.compile(r"^\s*#+\s*END HIDDEN TESTS\s*#*\s*$")
SKIP_TAG = "skip-grading"


def split_hidden(source: str) -> tuple[str, str]:
    """(the visible part, the whole test without the markers)."""
    visible, whole, hidden = [], [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN.match(line):
            hidden = True
            continue
        if HIDDEN_END.match(line):
            hidden = False
            continue
        whole.append(line)
        if not hidden:
            visible.append(line)
    return "\n".join(visible).strip("\n"), "\n".join(whole).strip("\n")


def _set_up_hidden(source: str, visible: str) -> bool:
    """Whether a hidden part binds a name the visible part reads (``hyper = {...}`` hidden above the
    visible asserts that use it): the visible part does not stand alone, so only the whole test is a
    check, as nbgrader runs it."""
    blocks: list[list[str]] = []
    inside = False
    for line in source.splitlines():
        if HIDDEN_BEGIN.match(line):
            inside = True
            blocks.append([])
        elif HIDDEN_END.match(line):
            inside = False
        elif inside:
            blocks[-1].append(line)
    try:
        binds = {
            n.id
            for block in blocks
            for n in ast.walk(ast.parse(textwrap.dedent("\n".join(block))))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        reads = {n.id for n in ast.walk(ast.parse(visible)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    except SyntaxError:
        return False
    return bool(binds & reads)


def _meta(cell: Any) -> dict[str, Any]:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _points(meta: dict[str, Any]) -> float:
    try:
        return float(meta.get("points", 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def with_partial_credit(source: str) -> str | None:
    """A test cell that ends with a value (not a ``print``): nbgrader reads its output as the points
    it earns. The value becomes ``partial_credit(...)``; None when the cell ends otherwise."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or isinstance(last.value, ast.Constant):
        return None
    if isinstance(last.value, ast.Call):  # print(...), display(...), assert_equal(...): no value to read
        func = last.value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("print", "display", "ok_", "eq_") or name.startswith("assert"):
            return None
    lines = source.splitlines()
    head = "\n".join(lines[: last.lineno - 1])
    expr = ast.get_source_segment(source, last.value) or ast.unparse(last.value)
    return (head + "\n" if head else "") + f"partial_credit({expr})"


def test_checks(source: str, qid: str) -> tuple[list[dict[str, Any]], str | None]:
    """The ``test`` checks of one autograder cell, or why it cannot be converted. Each fails when
    the test writes to stderr, as nbgrader scores a test cell with stderr output 0."""
    checks, problem = _test_checks(source)
    return [{**c, "stderr_fails": True} for c in checks], problem


def _test_checks(source: str) -> tuple[list[dict[str, Any]], str | None]:
    if not source.strip():
        return [{"test": "pass"}], None  # nbgrader gives an empty test cell's points to every notebook: so does this
    visible, whole = split_hidden(source)
    problem = testcode.problem(whole)
    if problem:
        return [], f"the test {problem}"
    partial = with_partial_credit(whole)
    if partial is not None:  # one check, so the value it ends with is worth the cell's points
        return [{"test": partial, "hidden": True} if whole != visible else {"test": partial}], None
    checks: list[dict[str, Any]] = []
    if whole != visible and visible and testcode.problem(visible) is None and not _set_up_hidden(source, visible):
        checks.append({"test": visible})
    if whole != visible:
        checks.append({"test": whole, "hidden": True})
    else:
        checks.append({"test": whole})
    return checks, None


def _statements(source: str) -> bool:
    """Whether the source holds a statement (not only comments and blank lines)."""
    try:
        return bool(ast.parse(source).body)
    except SyntaxError:
        return True


def _stray_ends(source: str) -> list[int]:
    """The lines (from 1) holding END SOLUTION where no BEGIN SOLUTION region is open."""
    inside, out = False, []
    for n, line in enumerate(source.splitlines(), 1):
        if BEGIN.match(line):
            inside = True
        elif END.match(line):
            if not inside:
                out.append(n)
            inside = False
    return out


def _read_after(sources: list[str | None], pos: int, names: set[str]) -> list[str]:
    """Which of ``names`` the cells after ``pos`` read from before them."""
    return sorted(names & set().union(*(outer_reads(s or "") for s in sources[pos + 1 :])))


def _tag(cell: Any, tag: str) -> None:
    tags = list(cell.get("metadata", {}).get("tags", []))
    if tag not in tags:
        cell.setdefault("metadata", {})["tags"] = [*tags, tag]


def _autotests(path: Path, nb: Any, cells: list[Any], data: list[Path]) -> None:
    """Expand nbgrader's AUTOTEST lines in place, as ``nbgrader generate_assignment`` does."""
    sources = [c.source if c.cell_type == "code" else None for c in cells]
    if not any(s is not None and autotest.has_autotest(s) for s in sources):
        return
    kernel = str(nb.metadata.get("kernelspec", {}).get("name", ""))
    if kernel not in autotest.PYTHON_KERNELS:
        raise UsageError(
            f"{path.name} uses AUTOTEST lines with the kernel {kernel!r}; only Python kernels are graded here"
        )
    found = autotest.find_file(path)
    if found is None:
        raise UsageError(
            f"{path.name} uses AUTOTEST lines, but there is no {autotest.FILENAME} beside it or at the "
            "course's root (the folder above source/), where nbgrader looks for its templates"
        )
    from grader.run.forking import default_executor

    expanded = autotest.expand(sources, autotest.load(found, kernel), default_executor().run, _files(path, data))
    for cell, source in zip(cells, expanded, strict=True):
        if source is not None:
            cell.source = source


def _files(path: Path, data: list[Path]) -> tuple[tuple[Path, str], ...]:
    return tuple((p, p.relative_to(path.parent).as_posix()) for p in data)


def shows_an_error(
    path: Path, cells: list[Any], data: list[Path]
) -> tuple[dict[int, str], list[Path], dict[int, str], dict[int, str], dict[int, str]]:
    """The given cells (neither an answer nor a test) that raise when the source notebook runs, by
    position, with the error: a notebook that shows an error on purpose (``a`` before ``a = 1``).
    nbgrader runs on past them; here they are not run when grading (``skip-grading``). Also the
    files released with the notebook that the notebook itself writes (the student makes them):
    they are not given to it, so that a test that reads one back reads what the student's run
    wrote (``environment.written_capture``). And the cells that fail because a module is not
    installed here, with the module (``environment.optional_cells``). And the cells whose own
    top-level line asks for input (``name = input("?")``), with that line: nbgrader's kernel has no
    input to give either, and runs on past the error. And, of the given cells that raise, those
    that raise because a file they read is not there, with the file."""
    from grader.run.forking import default_executor

    code = [(i, c) for i, c in enumerate(cells) if c.cell_type == "code" and c.source.strip()]
    files = _files(path, data)
    job = Job(
        cells=tuple(JobCell(index=i + 1, source=c.source) for i, c in code),
        captures=written_capture([rel for _, rel in files]) if code else (),
        limits=Limits(),
        files=files,
        preload=autotest.preload(c.source for _, c in code),
    )
    result = default_executor().run(job)
    runs = result.cells
    names = {rel: p for p, rel in files}
    written = [names[rel] for rel in written_files(result) if rel in names]
    out = {}
    missing: dict[int, str] = {}
    asks: dict[int, str] = {}
    unread: dict[int, str] = {}
    for run in runs:
        by_hand = bool(_meta(cells[run.index - 1]).get("grade")) and bool(_meta(cells[run.index - 1]).get("solution"))
        if run.status == CellStatus.ERROR and run.ename in ("EOFError", "StdinNotImplementedError") and not by_hand:
            line = _asking_line(cells[run.index - 1].source, run.traceback)  # an answer a person grades: shown
            if line:
                asks[run.index - 1] = line
                continue
        module = missing_module(run.ename, run.evalue) if run.status == CellStatus.ERROR else None
        if module is not None:
            missing[run.index - 1] = module
        meta = _meta(cells[run.index - 1])
        if (
            run.status == CellStatus.ERROR
            and bool(meta.get("grade")) == bool(meta.get("solution"))  # given, or an answer a person grades
            and (run.ename not in ("ModuleNotFoundError", "ImportError") or (module is None and _gone(run.evalue)))
        ):  # a missing library is no lesson; a name a library no longer has (``scipy.misc.comb``) is its change
            out[run.index - 1] = f"{run.ename}: {run.evalue}".strip()[:120]
            if run.ename == "FileNotFoundError" and run.filename:
                unread[run.index - 1] = run.filename.removeprefix("./")
    return out, written, missing, asks, unread


def _asking_line(source: str, traceback: tuple[str, ...]) -> str:
    """The cell's top-level line that raised, where it calls ``input`` (``cell 3, line 2: ...``)."""
    m = re.match(r"cell \d+, line (\d+): ", traceback[-1]) if traceback else None
    lines = source.splitlines()
    if m is None or not 0 < int(m.group(1)) <= len(lines):
        return ""
    line = lines[int(m.group(1)) - 1]
    return line.strip() if line[:1] not in (" ", "\t") and re.search(r"\binput\(", line) else ""


def _gone(evalue: str) -> bool:
    """Whether an ImportError says a module no longer has a name (``cannot import name 'comb' from 'scipy.misc'``)."""
    return evalue.startswith("cannot import name ")


def _titled(title: str | None) -> dict[str, str]:
    return {"title": title} if title else {}


REQUIREMENT_FILES = ("requirements.txt", "environment.yml", "environment.yaml")


def declared_files(path: Path) -> list[Path]:
    """The requirements a course declares beside a notebook: in its folder, ``source/`` or the
    course's root (the folder above ``source/``), the nearest first."""
    folders = [path.parent, path.parent.parent, path.parent.parent.parent]
    return [f / name for f in folders for name in REQUIREMENT_FILES if (f / name).is_file()]


def _released(nb: Any) -> bool:
    """Whether every code answer cell holds nbgrader's stub, not a solution: the notebook nbgrader
    released to students, not the course's source."""
    answers = [c for c in nb.cells if c.cell_type == "code" and _meta(c).get("solution")]
    stubs = [
        c
        for c in answers
        if "YOUR CODE HERE" in c.source
        and any(line.strip() == "raise NotImplementedError()" for line in c.source.splitlines())
        and not any(BEGIN.match(line) for line in c.source.splitlines())
    ]
    return bool(answers) and len(stubs) == len(answers)


def import_notebook(path: Path, name: str, header: list[Any], data: list[Path] | None = None) -> Imported:
    nb = normalise(read_notebook(path))
    if _released(nb):
        raise UsageError(
            f"{path.name} is a notebook as nbgrader releases it to students: each of its code answer cells holds "
            "nbgrader's stub (`raise NotImplementedError()`), not a solution. Import the "
            "course's source notebook (nbgrader's source/ folder) instead; nothing was written"
        )
    item = Imported(name=name, title=name.replace("_", " "), notebook=nb, source=path)
    cells = [nbformat.from_dict(c) for c in header] + list(nb.cells)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    kernel(path, nb, item)  # first: AUTOTEST's templates are the grading kernel's
    _autotests(path, nb, cells, data or [])
    item.requirements = declared_requirements(declared_files(path))
    errors, written, missing, asks, unread = shows_an_error(path, cells, data or [])
    for pos, line in asks.items():
        item.note(
            pos + 1,
            f"`{line}` asks for input, which grading has none of: the cell stops there, as in nbgrader's kernel, "
            "and what it defined before that line is graded",
        )
    sources = [c.source if c.cell_type == "code" else None for c in cells]
    for pos, error in errors.items():
        if _meta(cells[pos]).get("solution"):
            # An answer a person grades that cannot run here (it asks for ``input()``): shown to that
            # person, not run, where nothing later uses what it makes; else the solution's run says so.
            if needed_by(sources, pos, [], set())[1]:
                continue
            item.note(pos + 1, f"an answer graded by a person raises {error} here; it is shown, not run, when grading")
        elif pos in unread:
            # not a lesson's error: data the course does not ship
            lost, needs = needed_by(sources, pos, [], set())
            if needs:
                read_later = ", ".join(_read_after(sources, pos, lost))
                raise UsageError(
                    f"{path.name}, cell {pos + 1} reads the file {unread[pos]}, which is not beside the notebook, and "
                    f"{needs[0]} uses what it makes ({read_later}): add the file (and list it in the course's files) and "
                    "import again; nothing was written"
                )
            item.note(
                pos + 1,
                f"reads the file {unread[pos]}, which is not beside the notebook; nothing graded uses what it makes, "
                "so it is not run when grading",
            )
        elif error.startswith("ImportError: cannot import name "):
            item.note(
                pos + 1,
                f"raises {error} here: the library has changed since the course was written; the cell is not run "
                "when grading (a cell that needs what it imports then says so)",
            )
        else:
            item.note(
                pos + 1,
                f"raises {error} in the source notebook, a cell that shows an error on purpose; it is not run when "
                "grading",
            )
        _tag(cells[pos], SKIP_TAG)
    item.data = list(data or [])
    modules = imported_checks.course_modules(path, item.data)  # checks a test imports from the course
    withhold_written(item, written)
    kept = []
    used: set[str] = set()
    helpers: dict[str, tuple[int, str]] = {}  # name -> (order, statement) of earlier test cells
    at_cells: list[tuple[list[dict[str, Any]], Any]] = []  # each test's checks, and its cell
    titles = Titles(cells)  # for nbgrader's generated ids: the heading the student reads above the cell
    code = 0
    for i, cell in enumerate(cells, 1):
        meta = _meta(cell)
        if cell.cell_type == "code":
            code += 1
        qid = clean_id(str(meta.get("grade_id") or f"cell{i}"), f"cell{i}")
        while qid in used:
            qid += "_"
        graded, solution = bool(meta.get("grade")), bool(meta.get("solution"))
        points = _points(meta)
        if cell.cell_type == "code" and (stray := _stray_ends(cell.source)):
            # nbgrader reads a line holding END SOLUTION outside a region as nothing, and drops it
            cell.source = "\n".join(line for n, line in enumerate(cell.source.splitlines(), 1) if n not in stray)
            item.note(
                i,
                f"line {', '.join(map(str, stray))}: an END SOLUTION with no region open, left out as nbgrader leaves it out",
            )
        if solution and cell.cell_type == "code" and not any(BEGIN.match(line) for line in cell.source.splitlines()):
            # nbgrader releases a solution cell without markers as its stub: the whole cell is the answer
            cell.source = f"### BEGIN SOLUTION\n{cell.source}\n### END SOLUTION"
        if meta and not solution and (graded or meta.get("locked")):
            _tag(cell, LOCKED_TAG)  # read-only in nbgrader: restored as released before grading
        if cell.cell_type == "code" and not (graded and not solution):
            for name_ in rebinds(cell.source):  # an earlier test cell's value stands until the notebook's own
                helpers.pop(name_, None)
        if graded and not solution and cell.cell_type == "code":
            used.add(qid)
            visible, whole = split_hidden(cell.source)
            test, _ = imported_checks.inline(with_helpers(cell.source, helpers), modules)
            checks, problem = test_checks(test, qid)
            for name_, text in helpers_of(whole).items():
                helpers[name_] = (i * 10**7 + max(whole.find(text), 0), text)  # the cell, then the place in it
            if not _statements(test):
                item.note(
                    i,
                    f"autograder test {qid!r} ({points:g} points) has no code: nbgrader gives its points to every "
                    "notebook, and so does this course until a test is written in it",
                )
            if problem:
                item.note(
                    i,
                    f"autograder test {qid!r} ({points:g} points) not converted: {problem}; "
                    "it is listed as a question graded by a person",
                )
                item.questions.append(
                    {"id": qid, **_titled(titles.title(qid, i - 1)), "points": points, "manual": True}
                )
                answer(cell, qid)  # what a person grades: the test cell, with the output it prints
                _tag(cell, SKIP_TAG)
            else:
                item.questions.append(
                    {"id": qid, **_titled(titles.title(qid, i - 1)), "points": points, "checks": checks}
                )
                at_cells.append((checks, cell))
            cell.source = visible
        elif (graded and solution) or meta.get("task"):
            used.add(qid)
            item.questions.append(
                {
                    "id": qid,
                    "title": f"{titles.title(qid, i - 1) or qid} (graded by a person)",
                    "points": points,
                    "manual": True,
                    **({"unchanged_scores_zero": True} if graded else {}),
                }
            )
            if solution:
                answer(cell, qid)  # a written answer, or the code that draws a plot: what a person grades
        elif graded and cell.cell_type != "code":
            item.note(i, f"a graded {cell.cell_type} cell that is neither a test nor an answer; left as it is")
        cell.metadata.pop("nbgrader", None)
        kept.append(cell)
    sources = [c.source if c.cell_type == "code" else None for c in cells]
    tests = [check["test"] for q in item.questions for check in q.get("checks", [])]
    testing = {k for k, c in enumerate(cells) if _meta(c).get("grade") and not _meta(c).get("solution")}
    for pos in optional_cells(item, sources, missing, tests, item.requirements, testing=testing):
        _tag(cells[pos], SKIP_TAG)
    rebound = modules_rebound(sources)  # ``from numpy import random``: the tests' ``random`` is the notebook's
    for check in (check for q in item.questions for check in q.get("checks", [])):
        # ``map = None`` in a test (so a student's ``mymap`` may not call the builtin): in the kernel
        # it rebinds the notebook's ``map``, for the rest of that test and the later ones (with_helpers)
        mine = sorted(rebound & testcode.student_reads(check["test"]) | builtins_set(check["test"]))
        if mine:
            check["notebook_names"] = mine
    nb.cells = kept
    normalise(nb)
    for checks, cell in at_cells:  # taken where the test cell stands, which runs there (ids are final now)
        for check in checks:
            check["at_cell"] = str(cell["id"])
    if any(q.get("unchanged_scores_zero") for q in item.questions):
        # Students who got nbgrader's release have its stub where the skeleton has a blank.
        item.settings["blank_released_as"] = CODE_STUB
    if any(q.get("manual") for q in item.questions):
        # nbgrader's release names each answer cell's question by its grade_id, the question's id here.
        item.settings["answer_ids"] = "nbgrader.grade_id"
    if not item.questions:
        item.notes.append(f"{path.name}: no graded cells (no nbgrader 'grade' metadata); nothing to grade")
    return item


def read(source_dir: Path, name: str | None = None) -> list[Imported]:
    """The assignments of an nbgrader source folder: ``source/ps1`` (one) or ``source/`` (all)."""
    source_dir = Path(source_dir)
    if not source_dir.is_dir():
        raise UsageError(f"{source_dir} is not a folder (give nbgrader's source/ASSIGNMENT or source/)")
    header_path = next(
        (p for p in (source_dir / "header.ipynb", source_dir.parent / "header.ipynb") if p.is_file()), None
    )
    header = list(read_notebook(header_path).cells) if header_path else []

    def notebooks(folder: Path) -> list[Path]:
        return sorted(p for p in folder.glob("*.ipynb") if p != header_path and not p.name.startswith("."))

    folders = (
        [source_dir]
        if notebooks(source_dir)
        else sorted(p for p in source_dir.iterdir() if p.is_dir() and notebooks(p))
    )
    if not folders:
        raise UsageError(f"{source_dir} holds no notebooks")
    out: list[Imported] = []
    skipped: list[str] = []
    for folder in folders:
        found = notebooks(folder)
        base = clean_id(name if name and len(folders) == 1 else folder.name, "assignment")
        # Everything nbgrader releases with the notebooks, in subfolders too (``data/x.npz``).
        data = sorted(
            p
            for p in folder.rglob("*")
            if p.is_file()
            and p.suffix != ".ipynb"
            and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)
        )
        for nb_path in found:
            nb_name = base if len(found) == 1 else f"{base}_{clean_id(nb_path.stem, 'notebook')}"
            item = import_notebook(nb_path, nb_name, header, data)
            if item.questions:
                out.append(item)
            else:
                skipped.extend(item.notes)
    if not out:
        raise UsageError(f"{source_dir} holds no notebook with graded cells (nbgrader's 'grade' or 'task' metadata)")
    out[0].notes[:0] = [f"{n} (not imported)" for n in skipped]
    return out
