"""From an instructor's solution notebook to the student skeleton (``grader assign``).

Markers, typed in the solution notebook:

    Q = X @ W_q.T  # SOLUTION        ->   Q = ?
    print(answer)  # SOLUTION        ->   ?
    # BEGIN SOLUTION                 ->   ?      (one blank for the whole block,
    ...                                          at the marker's indentation)
    # END SOLUTION

Cells tagged ``instructor`` are dropped; outputs, execution counts and metadata other than the
kernel and the ``skip-grading`` and ``answer`` tags are cleared. A markdown cell tagged ``answer``
(a written answer a person grades) becomes the prompt ``YOUR ANSWER HERE``, tagged ``answer``. The
first markdown cell ends with how to check one's work before submitting (``CHECK_NOTE``: the light
student install from where the course's ``student_install`` says, ``check()`` and ``grader
check``); a notebook that starts with code gets that note as a new first cell. With
``student_install: wheel`` (the default) the checker's wheel (``grader.authoring.wheel``) is
written beside the skeleton, and the note installs it from there. The output is a pure function of
the solution and the course's install line, so running ``assign`` twice gives byte-identical files.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat

from grader.authoring.public import PUBLIC_CHECKS
from grader.course.config import WHEEL
from grader.course.model import Assignment
from grader.errors import UsageError
from grader.notebook.answers import ANSWER_PROMPT as ANSWER_PROMPT
from grader.notebook.answers import ANSWER_TAG as ANSWER_TAG
from grader.notebook.read import LOCKED_TAG as LOCKED_TAG

LINE_MARK = re.compile(r"#\s*SOLUTION\s*$")
BEGIN = re.compile(r"^(\s*)#+\s*BEGIN SOLUTION\s*#*\s*$")  # "### BEGIN SOLUTION" and "### BEGIN SOLUTION ###" too
END = re.compile(r"^\s*#+\s*END SOLUTION\s*#*\s*$")
INSTRUCTOR_TAG = "instructor"
# A markdown cell tagged ``answer`` is the model answer to a question graded by a person: the
# skeleton has a prompt in its place, still tagged, so the grader, the self-check and the review
# page find the student's answer there (the importers tag nbgrader's and otter's written answers so).
# A cell tagged ``locked`` is given and read-only: grading runs it as released, whatever the
# submission holds in its place (the cell with the same id), as nbgrader restores its locked cells.
KEPT_TAGS = ("skip-grading", ANSWER_TAG, LOCKED_TAG)
CHECK_NOTE = (
    "**Check your work before you submit.** Install the checker once with `{install}` ({where}it is "
    "light: no PyTorch, none of the instructor's tools), then run `from grader import check; check()` in a "
    "cell, or `grader check {notebook}` in a terminal. It runs the public checks; the grader also compares "
    "values you cannot see."
)
WHEEL_WHERE = "run it in this notebook's folder, where that file is; "
_SHELL_PLAIN = re.compile(r"^[A-Za-z0-9._=+:/@#%-]+$")


def install_line(student_install: str = WHEEL) -> str:
    """The student's install command for a course's ``student_install`` (the light install: no torch,
    none of the instructor's tooling), quoted where a shell would read a character of it."""
    from grader.authoring import wheel

    spec = wheel.filename() if student_install == WHEEL else student_install
    return f"pip install {spec}" if _SHELL_PLAIN.match(spec) else f'pip install "{spec}"'


def _assignment_target(code: str) -> str | None:
    """The left-hand side and operator of an assignment (``'S_scaled ='``), or None."""
    depth, quote, i = 0, "", 0
    while i < len(code):
        ch = code[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if code.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif ch in "\"'":
            quote = code[i : i + 3] if code[i : i + 3] in ('"""', "'''") else ch
            i += len(quote)
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "=" and depth == 0:
            prev, nxt = code[i - 1 : i], code[i + 1 : i + 2]
            if nxt == "=" or prev in "=!<>":
                i += 2 if nxt == "=" else 1
                continue
            lhs = code[: i + 1]
            return lhs.rstrip()
        i += 1
    return None


def blank_source(source: str, *, where: str = "") -> str:
    """The student's version of one solution cell."""
    out: list[str] = []
    block_indent: str | None = None
    for n, line in enumerate(source.splitlines(), 1):
        if block_indent is not None:
            if END.match(line):
                out.append(f"{block_indent}?")
                block_indent = None
            continue
        m = BEGIN.match(line)
        if m:
            block_indent = m.group(1)
            continue
        if END.match(line):
            raise UsageError(f"{where} line {n}: '# END SOLUTION' without a '# BEGIN SOLUTION' before it.")
        if LINE_MARK.search(line):
            code = LINE_MARK.sub("", line).rstrip()
            indent = code[: len(code) - len(code.lstrip())]
            lhs = _assignment_target(code.strip())
            out.append(f"{indent}{lhs} ?" if lhs else f"{indent}?")
            continue
        out.append(line)
    if block_indent is not None:
        raise UsageError(f"{where}: '# BEGIN SOLUTION' is never closed by '# END SOLUTION'.")
    return "\n".join(out)


def _prompted(source: str) -> str:
    """A written answer's cell as students get it: each ``BEGIN SOLUTION`` ... ``END SOLUTION``
    region the prompt ``YOUR ANSWER HERE``, the question's text around it kept (as nbgrader releases
    it); a cell without regions is the answer whole."""
    out: list[str] = []
    inside = found = False
    for line in source.splitlines():
        if BEGIN.match(line):
            inside = found = True
            out.append(ANSWER_PROMPT)
        elif END.match(line) and inside:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out).strip() if found and not inside else ANSWER_PROMPT


def skeleton(solution: Path, student_install: str = WHEEL) -> nbformat.NotebookNode:
    nb = nbformat.read(str(solution), as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    cells = []
    for i, cell in enumerate(nb.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if INSTRUCTOR_TAG in tags:
            continue
        kept = [t for t in tags if t in KEPT_TAGS]
        meta: dict[str, Any] = {"tags": kept} if kept else {}
        own = cell.get("metadata", {}).get("grader")
        if ANSWER_TAG in tags and isinstance(own, dict) and isinstance(own.get("question"), str):
            meta["grader"] = {"question": own["question"]}  # which question the answer cell answers
        where = f"{solution.name}, cell {i + 1}"
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(blank_source(cell.source, where=where), metadata=meta)  # type: ignore[no-untyped-call]  # nbformat has no annotations
        elif cell.cell_type == "markdown":
            source = _prompted(cell.source) if ANSWER_TAG in tags else cell.source
            new = nbformat.v4.new_markdown_cell(source, metadata=meta)  # type: ignore[no-untyped-call]  # nbformat has no annotations
        else:
            new = nbformat.v4.new_raw_cell(cell.source, metadata=meta)  # type: ignore[no-untyped-call]  # nbformat has no annotations
        new.id = cell.get("id") or f"cell-{i}"
        if cell.cell_type == "markdown" and cell.get("attachments"):
            new.attachments = cell.attachments
        cells.append(new)
    note = CHECK_NOTE.format(
        install=install_line(student_install),
        notebook=solution.name,
        where=WHEEL_WHERE if student_install == WHEEL else "",
    )
    if cells and cells[0].cell_type == "markdown":
        cells[0].source = cells[0].source.rstrip() + "\n\n" + note
    else:
        first = nbformat.v4.new_markdown_cell(note)  # type: ignore[no-untyped-call]  # nbformat has no annotations
        first.id = "check-your-work"
        cells.insert(0, first)
    out: nbformat.NotebookNode = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]  # nbformat has no annotations
    out.cells = cells
    out.metadata = {k: nb.metadata[k] for k in ("kernelspec", "language_info") if k in nb.metadata}
    out.nbformat, out.nbformat_minor = 4, max(nb.nbformat_minor, 5)
    return out


def skeleton_text(solution: Path, student_install: str = WHEEL) -> str:
    """The skeleton file's exact text: what ``grader assign`` writes, and ``validate`` compares."""
    text: str = nbformat.writes(skeleton(solution, student_install))  # type: ignore[no-untyped-call]  # nbformat has no annotations
    return text + "\n"


def write_assignment(assignment: Assignment, public_checks: dict[str, Any] | None) -> list[Path]:
    """Write the skeleton, its data files, the public checks and (``student_install: wheel``) the
    checker's wheel; returns the files written."""
    dest = assignment.skeleton.parent
    dest.mkdir(parents=True, exist_ok=True)
    assignment.skeleton.write_text(skeleton_text(assignment.solution, assignment.student_install), encoding="utf-8")
    return [assignment.skeleton, *write_beside(assignment, dest, public_checks)]


def write_beside(assignment: Assignment, dest: Path, public_checks: dict[str, Any] | None) -> list[Path]:
    """What goes beside a student's notebook: the checker's wheel (``student_install: wheel``), the
    data files and the public checks; returns the files written."""
    written = []
    if assignment.student_install == WHEEL:
        from grader.authoring import wheel

        built = wheel.build(dest)
        for old in dest.glob(wheel.PATTERN):
            if old != built:
                old.unlink()  # an earlier version's: the note names this one
        written.append(built)
    for rel in assignment.data:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(assignment.solution_dir / rel, target)
        written.append(target)
    if public_checks is not None:
        path = dest / PUBLIC_CHECKS
        path.write_text(json.dumps(public_checks, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written
