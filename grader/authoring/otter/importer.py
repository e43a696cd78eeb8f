"""``grader import otter NOTEBOOK``: an otter-grader master notebook (otter assign format), as this grader's.

The master notebook is read by its raw cells: ``# ASSIGNMENT CONFIG`` (YAML; its ``name`` names
the assignment), ``# BEGIN QUESTION`` (YAML: ``name``, ``points``, ``manual``, ``all_or_nothing``)
... ``# END QUESTION``, ``# BEGIN TESTS`` ... ``# END TESTS`` (one test per code cell, ``# HIDDEN``
on its first line for a hidden one, or a ``# BEGIN TEST CONFIG`` docstring with ``points`` and
``hidden``), ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` around written answers, and
``# BEGIN PROMPT`` ... ``# END PROMPT`` around what students see instead.

Each test becomes a ``test`` check of its question. A test that ends in an expression is a
doctest in otter: the expected value is the output stored in the master notebook, and the check
asserts it (``np.testing.assert_allclose`` for numbers and arrays, ``==`` for other literals, the
text of ``repr`` otherwise). Points follow otter: a question's points are shared evenly among
its tests unless a test or a list gives its own, and each test earns its share (partial credit)
unless the question is ``all_or_nothing``. In code, ``# BEGIN SOLUTION NO PROMPT`` becomes an
ordinary solution block, prompts are dropped (the skeleton gets a blank ``?``), ``# SEED`` lines
are kept for everyone (so results stay reproducible), ``# IGNORE`` lines are dropped, and otter's
own lines (``import otter``, ``grader.check(...)``, ``grader.export()``) are removed. A notebook
in otter's first format (``otter assign --v0``: Markdown blocks, ``## Test ##`` cells) is first
rewritten in these raw cells (``v0``); one in neither format is refused, saying which it is.

otter's rules are lowered to generic settings of config.yaml: a question's tests taken where the
student's notebook calls ``grader.check("q1")`` (``after_line``; otter's grading runs them at each
call and keeps the last, and runs on the final environment only those never called; in a notebook
without the call, the solution's, where the question ends: ``at_cell``), its seeding
of every cell (``seed_each_cell``), its own lines in a student's notebook run as ``pass`` (``inert_lines``), a
test over the notebook's own names (``notebook_names``), its messages (``success_message``,
``failure_message``) and its points (each test its share of its question's, or all or nothing).

Why one module: the master notebook is read in one pass over its raw cells, where what a cell is
(a prompt, a solution, a test, a question's config) depends on the markers around it; otter's
first notebook format (``v0.py``, rewritten into the current one before that pass), the test files
(``ok.py``, which also shares a question's points among its tests, ``exception.py``), the course's environment (``authoring.environment``) and what it
declares it installs (``authoring.requirements``) are their own modules.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from grader.authoring import imported_checks
from grader.authoring.assign import BEGIN, LINE_MARK
from grader.authoring.environment import (
    erring_cells,
    kernel,
    missing_in_run,
    modules_rebound,
    optional_cells,
    unshipped_cells,
    withhold_written,
)
from grader.authoring.importing import (
    Imported,
    answer,
    clean_id,
    given_files,
    normalise,
    read_notebook,
)
from grader.authoring.otter import exception as otter_exception
from grader.authoring.otter import ok as otter_ok
from grader.authoring.otter import v0
from grader.authoring.requirements import declared_requirements
from grader.course import testcode
from grader.course.testcode import BUILTINS
from grader.errors import UsageError
from grader.notebook.blanks import inert_line

RAW = re.compile(
    r"^\s*#\s*(ASSIGNMENT CONFIG|BEGIN QUESTION|END QUESTION|BEGIN TESTS|END TESTS|BEGIN SOLUTION|"
    r"END SOLUTION|BEGIN PROMPT|END PROMPT)\s*$",
    re.I,
)
TEST_CONFIG_BEGIN = re.compile(r'^(?:.\s*=\s*)?"""?\s*#\s*BEGIN\s*TEST\s*CONFIG', re.I)
TEST_CONFIG_END = re.compile(r'^\s*"""?\s*#\s*END\s*TEST\s*CONFIG', re.I)
NO_PROMPT = re.compile(r"^(\s*)#\s*BEGIN SOLUTION NO PROMPT\s*$")
CODE_PROMPT_BEGIN = re.compile(r'^\s*(?:"""|\'\'\')\s*#+\s*BEGIN PROMPT\s*$')
# The prompt's end, as otter reads it: ``""" # END PROMPT`` (the shape otter documents), ``"""; # END
# PROMPT``, ``# END PROMPT """`` and ``## END PROMPT """``, or ``# END PROMPT`` with the closing
# quotes alone on the next line (Berkeley's Data Science Capstone writes all of these).
CODE_PROMPT_END = re.compile(r'^\s*(?:(?:"""|\'\'\')\s*;?\s*)?#+\s*END PROMPT\b')
PROMPT_QUOTES = re.compile(r'"""|\'\'\'')
QUOTES_ALONE = re.compile(r'^\s*(?:"""|\'\'\')\s*;?\s*$')
SEED = re.compile(r"\s*#\s*SEED\s*$")
# otter's own lines in the notebooks it releases (``import otter``, ``grader = otter.Notebook()``,
# ``grader.check("q1")``, ...): where otter is not installed they would only fail. The import drops
# them from the solution and writes them as the assignment's ``inert_lines``, so a submission made
# on otter's notebook runs them as ``pass``.
INERT_LINES = (
    r"import otter\b.*",
    r"from otter\b.*",
    r"grader\s*=\s*otter\..*",
    r"grader\.(check|check_all|export|to_pdf)\(.*\).*",
    r"otter\.\w+\(.*\).*",
)
OTTER_LINE = inert_line(INERT_LINES)
IGNORE = re.compile(r"#\s*IGNORE\s*$")


def _raw_marker(cell: Any) -> tuple[str, str] | None:
    if cell.cell_type != "raw":
        return None
    first, _, rest = cell.source.strip().partition("\n")
    m = RAW.match(first)
    return (m.group(1).upper(), rest) if m else None


def is_otter_line(line: str) -> bool:
    """One of otter's own lines in a student's notebook, which this grader does without."""
    return bool(OTTER_LINE.match(line))


def solution_code(source: str) -> str:
    """A master notebook's code cell in this grader's markers."""
    out: list[str] = []
    in_prompt = quotes_next = False
    for line in source.splitlines():
        if quotes_next:
            quotes_next = False
            if QUOTES_ALONE.match(line):
                continue
        if CODE_PROMPT_BEGIN.match(line):
            in_prompt = True
            continue
        if in_prompt:
            if CODE_PROMPT_END.match(line):
                in_prompt = False
                quotes_next = not PROMPT_QUOTES.search(line)
            continue
        if is_otter_line(line) or IGNORE.search(line):
            continue
        m = NO_PROMPT.match(line)
        if m:
            out.append(f"{m.group(1)}# BEGIN SOLUTION")
            continue
        out.append(SEED.sub("", line))
    return "\n".join(out).strip("\n")


def _output_text(cell: Any, strip: bool = True) -> str:
    """The output otter assign reads of a test cell (what it printed, then its value's text)."""
    text = ""
    for out in cell.get("outputs", []):
        text += "".join(out.get("text", ""))
        data = out.get("data", {}).get("text/plain")
        if data:
            text += "".join(data) if isinstance(data, list) else data
    return text.strip() if strip else text


_NUMERIC_NAMES = {
    "array": np.array,
    "np": np,
    "nan": math.nan,
    "inf": math.inf,
    "float64": np.float64,
    "int64": np.int64,
    "float32": np.float32,
    "True": True,
    "False": False,
    "None": None,
    # NumPy 2 writes a boolean scalar as ``np.True_``: the value, whatever NumPy grades it
    "True_": np.True_,
    "False_": np.False_,
    "bool": np.bool_,
}


def expected_assert(expr: str, output: str) -> tuple[str, str | None]:
    """An assert that the expression gives the stored output, and a note when it compares text."""
    try:
        value = ast.literal_eval(output)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = _NOT_LITERAL
    if value is True:
        return f"assert {expr}", None
    if value is False:
        return f"assert not ({expr})", None
    if value is not _NOT_LITERAL and not isinstance(value, float):
        return f"assert ({expr}) == {output}", None
    text = output.replace("np.", "")
    try:
        numeric = eval(text, {"__builtins__": {}}, dict(_NUMERIC_NAMES))  # noqa: S307 - the instructor's own stored output
        arr = np.asarray(numeric)
        if arr.dtype.kind in "biufc":
            if arr.dtype.kind == "b" and arr.ndim == 0:
                return (f"assert {expr}" if bool(arr) else f"assert not ({expr})"), None
            src = ("np." + output.strip()) if output.strip().startswith("array(") else output.strip()
            src = src.replace("np.np.", "np.")
            return f"np.testing.assert_allclose({expr}, {src}, rtol=1e-6, atol=1e-8)", None
    except Exception:  # noqa: BLE001,S110 - any output that is not numbers is compared as text below
        pass
    return f"assert repr({expr}).strip() == {output!r}", "compared as the text of repr(), as otter does"


_NOT_LITERAL = object()


def convert_test(source: str) -> tuple[str, dict[str, Any], str | None, str | None]:
    """(test source, its config (points, hidden), a problem, a note) for one otter test cell."""
    lines = source.strip("\n").splitlines()
    config: dict[str, Any] = {}
    if lines and lines[0].lstrip().startswith("#") and re.search(r"\bhidden\b", lines[0], re.I):
        config["hidden"] = True
        lines = lines[1:]
    if lines and TEST_CONFIG_BEGIN.match(lines[0]):
        end = next((i for i, line in enumerate(lines) if i and TEST_CONFIG_END.match(line)), None)
        if end is None:
            return "", config, "its '# BEGIN TEST CONFIG' is never closed", None
        loaded = yaml.safe_load("\n".join(lines[1:end])) or {}
        if isinstance(loaded, dict):
            config.update(loaded)
        lines = lines[end + 1 :]
    body = "\n".join(line for line in lines if not is_otter_line(line)).strip("\n")
    return body, config, None, None


def test_source(
    body: str, output: str, printed: str | None = None, ran: bool = False, streamed: str = ""
) -> tuple[str, str | None, str | None]:
    """(the ``test`` source, a problem, a note) for a test body and its stored output (``printed``:
    that output as the cell wrote it, for a test that prints; ``streamed``: the part of it the cell
    printed, before the value it shows). A cell that ran (``ran``: it has an execution count) and
    stored no output ends in an expression that showed nothing: otter's doctest expects nothing
    there, so the expression must be None."""
    try:
        tree = ast.parse(body)
    except SyntaxError as exc:
        return "", f"its code is not Python ({exc.msg}, line {exc.lineno})", None
    if not tree.body:
        return "", "it is empty", None
    note = None
    last = tree.body[-1]
    if isinstance(last, ast.Expr) and not (
        isinstance(last.value, ast.Call) and getattr(last.value.func, "id", "") == "print"
    ):
        if not output and not ran:
            return (
                "",
                (
                    "it ends in an expression but the master notebook stores no output for it "
                    "(run the master notebook, then import again)"
                ),
                None,
            )
        expr = ast.get_source_segment(body, last.value) or ast.unparse(last.value)
        if output and streamed.strip():
            # it prints and shows a value (``str(print(x))``): otter's doctest reads both, in order
            want = otter_ok.doctest_want(printed or output)
            check = (
                f"_shown = ({expr})\nassert doctest_match(printed_text() + "
                f"('' if _shown is None else repr(_shown) + '\\n'), {want!r})"
            )
        elif output:
            check, note = expected_assert(f"({expr})" if "\n" in expr else expr, output)
        else:  # it ran and showed nothing
            check = f"assert ({expr}) is None"
        head = body.splitlines()[: last.lineno - 1]
        body = "\n".join([*head, check])
    elif output:  # it prints: what it prints is compared with the stored output, as otter's doctest does
        body += f"\nassert doctest_match(printed_text(), {otter_ok.doctest_want(printed or output)!r})"
    p = testcode.problem(body)
    return body, (f"the test {p}" if p else None), note


def _builtins_bound(cells: list[Any]) -> set[str]:
    """The builtin names the solution notebook binds for itself at its top level (``def sum(a, b)``)."""
    out: set[str] = set()
    for cell in cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            else:
                out.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return out & BUILTINS


def cell_seed(config: dict[str, Any]) -> int | dict[str, Any] | None:
    """How otter seeds a submission's cells when it grades it (its ``seed`` and ``generate.seed``),
    as ``seed_each_cell`` writes it; None when it does not."""
    seed, generate = config.get("seed"), config.get("generate")
    if isinstance(seed, dict) and seed.get("variable"):
        value = seed.get("autograder_value")
        return {"variable": str(seed["variable"]), "value": value} if isinstance(value, int) else None
    value = generate.get("seed") if isinstance(generate, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _config_file(path: Path, rel: str) -> dict[str, Any]:
    """The ASSIGNMENT CONFIG a ``config_file:`` names (beside the notebook or above it, as otter reads
    it); the notebook's own keys win. One that cannot be read stops the import, naming it."""
    try:
        loaded = yaml.safe_load((path.parent / rel).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path.name}: its ASSIGNMENT CONFIG's config_file {rel} cannot be read ({exc})") from None
    if not isinstance(loaded, dict):
        raise UsageError(f"{path.name}: its ASSIGNMENT CONFIG's config_file {rel} is not a mapping of settings")
    return loaded


def read(path: Path, name: str | None = None) -> list[Imported]:
    path = Path(path)
    if not path.is_file() or path.suffix != ".ipynb":
        raise UsageError(f"{path} is not a notebook (give otter's master notebook, NAME.ipynb)")
    nb = normalise(read_notebook(path))
    first_format = v0.is_v0(nb)
    nb, numbers = v0.as_raw_cells(nb, path.name) if first_format else (nb, list(range(1, len(nb.cells) + 1)))
    master_cells = list(nb.cells)
    assignment_config: dict[str, Any] = {}
    item = Imported(name="", title="", notebook=nb, source=path)
    kernel(path, nb, item)
    kept: list[Any] = []
    question: dict[str, Any] | None = None
    tests: list[tuple[int, Any]] = []
    places: list[tuple[int, list[dict[str, Any]]]] = []  # where each question ends among the kept cells
    in_tests = in_prompt = in_answer = False
    exception_tests = False  # ASSIGNMENT CONFIG's ``tests: {ok_format: false}``: test cells are test functions
    owner: dict[int, int] = {}  # a kept code cell inside a question -> that question's number
    by_hand: set[int] = set()  # the numbers of the questions a person grades, without tests
    number_of = [0]  # the question being read, counted from 1

    def finish(i: int) -> None:
        nonlocal question, tests
        if question is None:
            return
        qid = clean_id(str(question.get("name") or f"q{len(item.questions) + 1}"), f"q{len(item.questions) + 1}")
        if question.get("manual") and not tests:
            by_hand.add(number_of[0])
            item.questions.append(
                {
                    "id": qid,
                    "title": f"{qid} (graded by a person)",
                    "points": float(question.get("points") or 0),
                    "manual": True,
                }
            )
        else:
            if question.get("manual"):  # otter writes a manual question's tests and its run scores them
                item.note(
                    tests[0][0],
                    f"question {qid!r} is marked manual and has tests: otter's autograder runs them and scores the "
                    "question by them, and so does this grader",
                )
            converted: list[tuple[dict[str, Any], dict[str, Any]]] = []
            configs = []
            for cell_no, cell in tests:
                body, config, problem, _ = convert_test(cell.source)
                configs.append(config)
                note = None
                if problem is None and exception_tests:
                    body, problem = otter_exception.notebook_cell(body)
                elif problem is None:
                    body, problem, note = test_source(
                        body,
                        _output_text(cell),
                        _output_text(cell, strip=False),
                        cell.get("execution_count") is not None,
                        "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])),
                    )
                if problem:
                    item.note(cell_no, f"a test of question {qid!r} not converted: {problem}")
                    converted.append(({}, config))
                    continue
                if note:
                    item.note(cell_no, f"a test of question {qid!r}: {note}")
                converted.append(({"test": body, **otter_ok.messages(config)}, config))
            try:
                shares = otter_ok.shares(question.get("points"), configs) if configs else []
            except ValueError as exc:
                item.note(i, f"question {qid!r}: {exc}; its tests share its points evenly")
                total = float(sum(question["points"])) if isinstance(question.get("points"), list) else 1.0
                shares = [total / len(configs)] * len(configs)
            checks = []
            lost = 0.0
            for (check, _), share in zip(converted, shares, strict=True):
                if not check:
                    lost += share
                    continue
                check["after_line"] = otter_ok.check_call(str(question.get("name") or qid))
                if not question.get("all_or_nothing"):
                    check["points"] = round(share, 10)
                checks.append(check)
            total = sum(shares) if shares else float(question.get("points") or 0)
            places.append((len(kept), checks))
            if checks:
                # Rounded as a person writes points (1, not 0.9999999999 from three thirds): within
                # the 1e-9 config.yaml allows between a question and its checks.
                q: dict[str, Any] = {
                    "id": qid,
                    "points": otter_ok.question_points(total - lost, checks),
                    "checks": checks,
                }
                item.questions.append(q)
                if lost:
                    item.questions.append(
                        {
                            "id": f"{qid}_by_hand",
                            "title": f"{qid}: tests to grade by hand",
                            "points": round(lost, 10),
                            "manual": True,
                        }
                    )
            elif tests:
                item.questions.append(
                    {
                        "id": qid,
                        "title": f"{qid} (its tests could not be converted)",
                        "points": round(total, 10),
                        "manual": True,
                    }
                )
            else:
                item.note(i, f"question {qid!r} has no tests and is not manual: nothing to grade; left out")
        question, tests = None, []

    for i, cell in enumerate(nb.cells, 1):
        marker = _raw_marker(cell)
        if marker is not None:
            kind, rest = marker
            if kind == "ASSIGNMENT CONFIG":
                loaded = yaml.safe_load(rest) or {}
                assignment_config = loaded if isinstance(loaded, dict) else {}
                if isinstance(assignment_config.get("config_file"), str):  # shared by a course's notebooks
                    assignment_config = {**_config_file(path, assignment_config["config_file"]), **assignment_config}
                tests_config = assignment_config.get("tests")
                exception_tests = isinstance(tests_config, dict) and tests_config.get("ok_format") is False
            elif kind == "BEGIN QUESTION":
                finish(i)
                number_of[0] += 1
                loaded = yaml.safe_load(rest) or {}
                question = loaded if isinstance(loaded, dict) else {}
            elif kind == "END QUESTION":
                finish(i)
            elif kind == "BEGIN TESTS":
                in_tests = True
            elif kind == "END TESTS":
                in_tests = False
            elif kind == "BEGIN PROMPT":
                in_prompt = True
            elif kind == "END PROMPT":
                in_prompt = False
            elif kind == "BEGIN SOLUTION":
                in_answer = True
            elif kind == "END SOLUTION":
                in_answer = False
            continue
        if in_tests and cell.cell_type == "code":
            tests.append((i, cell))
            continue
        if in_prompt:
            continue  # what otter shows students instead of the answer: the skeleton has its own blank
        if cell.cell_type == "code":
            cell.source = solution_code(cell.source)
            if not cell.source.strip():
                continue
            cell.outputs, cell.execution_count = [], None
            if question is not None:
                owner[len(kept)] = number_of[0]
        elif in_answer and cell.cell_type == "markdown":
            answer(cell)
        kept.append(cell)
    finish(len(nb.cells))
    item.notes = v0.renumber(item.notes, path.name, numbers)  # cells as the master notebook numbers them
    number = dict(zip(map(id, master_cells), numbers, strict=True))
    item.cell_numbers = [number[id(c)] for c in kept]
    nb.cells = kept
    normalise(nb)
    item.name = clean_id(name or str(assignment_config.get("name") or path.stem), "assignment")
    item.title = str(assignment_config.get("name") or path.stem).replace("_", " ")
    files = assignment_config.get("files") or []
    for rel in files if isinstance(files, list) else [files]:
        found = given_files(path.parent, str(rel))
        if found:
            item.data.extend(f for f in found if f not in item.data)
        else:
            item.notes.append(
                f"{path.name}: {rel}, listed in ASSIGNMENT CONFIG's files, is no file or folder beside "
                "the notebook; not copied"
            )
    modules = imported_checks.course_modules(path, item.data)  # checks a test imports from the course
    for question in item.questions if modules else ():
        for check in question.get("checks", ()):
            if "test" in check:
                check["test"] = imported_checks.inline(check["test"], modules)[0]
    requirement_files = [
        path.parent / str(f)
        for key in ("requirements", "environment")
        for f in ([assignment_config.get(key)] if isinstance(assignment_config.get(key), str) else [])
    ] or [path.parent / f for f in ("requirements.txt", "environment.yml") if (path.parent / f).is_file()]
    item.requirements = declared_requirements([f for f in requirement_files if f.is_file()])
    taken = {q["id"] for q in item.questions}
    for q in otter_ok.questions(path.parent / "tests", item, otter_ok.shares, expected_assert):
        if q["id"] in taken:
            item.notes.append(f"tests/: question {q['id']!r} is in the notebook too; the notebook's tests are kept")
        else:
            item.questions.append(q)
    if not item.questions:
        raise UsageError(v0.unread_format(path.name, master_cells, first_format))
    shadowed = _builtins_bound(kept) | modules_rebound([c.source if c.cell_type == "code" else None for c in kept])
    for q in item.questions:
        for check in q.get("checks", []):
            mine = sorted(shadowed & testcode.student_reads(check["test"]))
            if mine:  # otter runs a test over the notebook's names: its ``sum`` is the notebook's
                check["notebook_names"] = mine
    # A cell that fails only because a module is not installed here, which nothing graded uses (a
    # widget in a demo cell), is not run when grading; one something uses stops the import.
    sources = [c.source if c.cell_type == "code" else None for c in kept]
    test_sources = [check["test"] for q in item.questions for check in q.get("checks", [])]
    run = missing_in_run(path.parent, sources, item.data)  # otter's own lines are gone
    missing, unread, errors = run.missing, run.unread, run.errors
    withhold_written(item, run.written)  # the file its test reads back: the student's run writes it
    # A cell that reads a file the course does not ship (a demo of the data), or that shows an error
    # on purpose, nothing graded using it: otter runs on past its error; here it is not run.
    skipped = optional_cells(item, sources, missing, test_sources, item.requirements)
    skipped |= unshipped_cells(item, sources, {k: f for k, f in unread.items() if k not in skipped}, test_sources)
    answers = {
        k
        for k, c in enumerate(kept)
        if c.cell_type == "code" and any(BEGIN.match(ln) or LINE_MARK.search(ln) for ln in c.source.splitlines())
    }
    errors = {k: e for k, e in errors.items() if k not in skipped}
    # An answer a person grades that raises here (a library changed since), nothing graded using it:
    # otter runs on past it, and the person reads it; here it is not run either.
    answers -= {k for k, q in owner.items() if q in by_hand}
    skipped |= erring_cells(item, sources, errors, test_sources, answers, run.lines)
    for pos in sorted(skipped):
        tags = list(kept[pos].metadata.get("tags", []))
        kept[pos].metadata["tags"] = [*tags, "skip-grading"]
    for pos, checks in places:  # otter's check cell follows its question: there in a notebook without the call
        ids = [
            c["id"] for c in kept[pos:] if c.cell_type == "code" and "skip-grading" not in c.metadata.get("tags", [])
        ]
        for check in checks if ids else []:
            check["at_cell"] = str(ids[0])
    item.settings["inert_lines"] = [*INERT_LINES, *item.settings.get("inert_lines", [])]  # and a run-time installer's
    seeding = cell_seed(assignment_config)
    if seeding is not None:
        item.settings["seed_each_cell"] = seeding
        if isinstance(seeding, int):  # otter's check cell is seeded too: a test's own draws come out alike
            for q in item.questions:
                for check in q.get("checks", []):
                    check.setdefault("seed", seeding)
    return [item]
