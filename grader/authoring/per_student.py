"""One notebook per student (``grader assign NAME --per-student roster.csv --out DIR``).

Each student's folder ``DIR/<id>/`` gets the skeleton with its data cells holding the inputs
drawn for that student (``grader.judge.per_student.draw``: the course secret and the student's
id, so the same roster always gives the same notebooks), the student's id, the assignment and
their signature in the notebook's metadata (``grader.student``), the data files, the public
checks (kinds, shapes and properties only: no reference value, since each student's differ) and
the checker's wheel where the course installs it from one.

The roster is read and every student's inputs drawn before anything is written; the notebooks are
written into a folder beside ``DIR`` that takes its place at the end, so an error leaves nothing
half-written.
"""

from __future__ import annotations

import ast
import copy
import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import nbformat

from grader import notebook
from grader.capture import Value
from grader.course.model import Assignment
from grader.errors import SolutionError, UsageError
from grader.files import printable, write_atomic
from grader.judge import per_student
from grader.judge.scorecard import Scorecard
from grader.outputs.roster import load as load_roster
from grader.outputs.spreadsheet import cell_text
from grader.run.job import Captured
from grader.vocab import StudentDataStatus

# The roster's id column, the first found: ``submission`` as the course's roster has it
# (grader.outputs.roster: what a submission's folder is named), else one of the others.
ID_COLUMNS = ("submission", "id", "student_id", "github", "email", "sis_login_id")
_BAD_ID_CHARS = set('/\\:*?"<>|')


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster CSV, in its order: the first column named one of ``ID_COLUMNS``.
    Raises UsageError naming the row of a missing or repeated id, or a file that is not a roster."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"The roster {path} cannot be read: {exc}.") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise UsageError(
            f"The roster {path} is empty: it needs a header row with an `id` column and a row per student."
        )
    header = [h.strip().lower() for h in rows[0]]
    column = next((header.index(c) for c in ID_COLUMNS if c in header), None)
    if column is None:
        raise UsageError(
            f"The roster {path} has no id column: its header ({', '.join(rows[0]) or 'empty'}) names none of "
            f"{', '.join(ID_COLUMNS)}."
        )
    ids: list[str] = []
    seen: dict[str, int] = {}
    for n, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        sid = row[column].strip() if column < len(row) else ""
        if not sid:
            raise UsageError(f"The roster {path}, row {n}, has no {rows[0][column]}: every student needs one.")
        if sid in seen:
            raise UsageError(
                f"The roster {path} lists the id {sid!r} twice (rows {seen[sid]} and {n}): each student needs their own."
            )
        if sid.startswith(".") or any(ch in _BAD_ID_CHARS or ord(ch) < 32 for ch in sid):
            raise UsageError(
                f'The roster {path}, row {n}: the id {sid!r} cannot name a folder (no leading dot, no / \\ : * ? " < > |).'
            )
        seen[sid] = n
        ids.append(sid)
    if not ids:
        raise UsageError(f"The roster {path} lists no students.")
    return ids


class Template:
    """The skeleton with its data cells marked: each student's notebook is this with their literals."""

    def __init__(self, assignment: Assignment, skeleton: nbformat.NotebookNode) -> None:
        self.assignment = assignment
        self.data: dict[str, Any] = json.loads(nbformat.writes(skeleton))  # type: ignore[no-untyped-call]  # nbformat has no annotations
        names = per_student._spec(assignment).names
        code = [(i, c) for i, c in enumerate(self.data["cells"]) if c["cell_type"] == "code"]
        cells = [notebook.Cell(index=i + 1, source=_text(c["source"])) for i, c in code]
        infos = notebook.analyse(cells)
        found = notebook.input_definitions(infos, names, assignment.given)
        # cell position in the notebook -> [(statement index, name)]
        self.places: dict[int, list[tuple[int, str]]] = {}
        for name in names:
            if not found.get(name):
                raise SolutionError(
                    f"The skeleton of {assignment.name} never defines `{name}`, which `per_student.inputs` "
                    'draws per student: its data cell must bind it (for example `sentence = "..."`).'
                )
            for pos, k in found[name]:
                self.places.setdefault(code[pos][0], []).append((k, name))

    def notebook(self, values: dict[str, Any], stamp: dict[str, str]) -> str:
        nb = copy.deepcopy(self.data)
        for cell_pos, places in self.places.items():
            cell = nb["cells"][cell_pos]
            cell["source"] = _rewrite(_text(cell["source"]), places, values).splitlines(keepends=True)
        nb["metadata"][per_student.META_KEY] = {per_student.STAMP_KEY: stamp}
        return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _rewrite(source: str, places: list[tuple[int, str]], values: dict[str, Any]) -> str:
    """The data cell with each listed statement (index, name) replaced by ``name = <the student's
    value>``: in place where the statement only assigns the name, else right after it."""
    tree = ast.parse(source)
    lines = source.split("\n")
    edits = []
    for k, name in places:
        stmt = tree.body[k]
        indent = lines[stmt.lineno - 1][: stmt.col_offset]
        new = f"{indent}{name} = {per_student.literal(values[name])}"
        simple = (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
        ) or (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name)
        end = stmt.end_lineno or stmt.lineno
        before = lines[stmt.lineno - 1][: stmt.col_offset].strip()
        after = lines[end - 1][stmt.end_col_offset or 0 :].strip()
        alone = not before and (not after or after.startswith("#"))
        if simple and alone:
            edits.append((stmt.lineno - 1, end, [new]))
        else:
            edits.append((end, end, [new]))
    for start, stop, new_lines in sorted(edits, reverse=True):
        lines[start:stop] = new_lines
    return "\n".join(lines)


def public_for_students(
    public: dict[str, Any], original: dict[str, Captured], samples: Sequence[dict[str, Captured]]
) -> dict[str, Any]:
    """The public checks every student's notebook can run on its own data: no reference value
    (each student's differs), and a shape or kind only where every sampled student's is the same."""
    out = copy.deepcopy(public)
    for q in out.get("questions", []):
        for item in q.get("checks", []):
            item.pop("value", None)
            item.pop("rtol", None)
            item.pop("atol", None)
            for sample in samples:
                got = sample.get(item["id"])
                base = original.get(item["id"])
                a = got.value if got is not None else None
                b = base.value if base is not None else None
                if a is None or b is None:
                    continue
                if a.shape != b.shape:
                    item.pop("shape", None)
                if a.kind != b.kind:
                    item.pop("type", None)
                    item.pop("dtype_kind", None)
    return out


def write_per_student(
    assignment: Assignment,
    roster: Path,
    out: Path,
    secret: bytes,
    shared: Callable[[Path], list[Path]],
    *,
    given: dict[str, Value] | None = None,
    advance: Callable[[int], None] | None = None,
) -> list[Path]:
    """Write ``out/<id>/`` for every student of ``roster``; ``shared(folder)`` writes what every
    student's folder holds besides the notebook (data files, public checks, the wheel) into one
    folder, linked into each. ``given``: the solution's given values (``Reference.given``), for
    rules that draw like them. Returns the notebooks written (at their final place)."""
    from grader.authoring.assign import skeleton

    ids = read_roster(roster)
    template = Template(assignment, skeleton(assignment.solution, assignment.student_install))
    texts = []
    for sid in ids:  # every draw before anything is written: a failing rule leaves nothing behind
        values = per_student.draw(assignment, secret, sid, given)
        texts.append(template.notebook(values, per_student.stamp(secret, assignment.name, sid)))
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}-"))
    try:
        common = staging / ".shared"
        common.mkdir()
        files = shared(common)
        name = assignment.skeleton.name
        for sid, text in zip(ids, texts, strict=True):
            folder = staging / sid
            folder.mkdir()
            (folder / name).write_text(text, encoding="utf-8")
            for f in files:
                rel = f.relative_to(common)
                target = folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(f, target)
                except OSError:
                    shutil.copyfile(f, target)
            if advance is not None:
                advance(1)
        shutil.rmtree(common)
        if out.exists():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}-old-"))
            os.rename(out, old / out.name)
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / sid / assignment.skeleton.name for sid in ids]


FLAGS_FILE = "student-data.csv"  # beside a per-student batch's scorecards: the submissions for a person
FLAG_WORDS = {
    StudentDataStatus.CLASSMATE: "a classmate's notebook",
    StudentDataStatus.EDITED: "its student id was edited",
    StudentDataStatus.GENERIC: "the generic skeleton, not the student's own notebook",
    StudentDataStatus.OTHER_ASSIGNMENT: "a notebook of another assignment",
}
NOT_ON_ROSTER = "not_on_roster"


def flagged(
    names: Sequence[str], cards: Sequence[Scorecard], out: Path | None = None, roster: Path | None = None
) -> list[str]:
    """The lines of a batch's report on per-student submissions that do not hold their student's
    own data (which, whose, graded on whose) or whose student is not on ``roster``, and
    ``out/student-data.csv`` with the same rows for a person to follow up (written whenever the
    batch has per-student cards, so an old list never stays)."""
    on_roster = load_roster(roster) if roster is not None else None
    rows: list[tuple[str, str, str, str, str, float]] = []
    lines: list[str] = []
    per_student_cards = False
    for name, card in zip(names, cards, strict=True):
        record = card.student_data
        per_student_cards = per_student_cards or record is not None
        if on_roster is not None and not on_roster.candidates(name, card):
            rows.append((name, NOT_ON_ROSTER, record.notebook_id if record else "", card.student, "", card.score))
            lines.append(f"  {printable(name)}: not on the roster {on_roster.path.name}: no gradebook row for it")
        if record is None or not record.flagged:
            continue
        rows.append((name, str(record.status), record.notebook_id, record.expected, record.graded_on, card.score))
        what = FLAG_WORDS.get(record.status, "not on the roster the autograder was built with")
        if record.status == StudentDataStatus.CLASSMATE:
            what += f" (made for {printable(record.notebook_id)})"
        elif record.status == StudentDataStatus.EDITED and record.notebook_id:
            what += f" (it says {printable(record.notebook_id)}; its signature does not match)"
        elif record.status == StudentDataStatus.OTHER_ASSIGNMENT and record.made_for:
            what += f" ({printable(record.made_for)})"
        if not record.graded_on:
            what += ", not graded"
        else:
            what += f", graded on {printable(record.graded_on)}'s data"
            what += "" if record.own_data else ", which it does not hold: its answers on other data earn nothing"
        lines.append(f"  {printable(name)}: {what}")
    if out is not None and per_student_cards:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["submission", "status", "notebook_id", "expected", "graded_on", "score"])
        writer.writerows([cell_text(printable(str(v))) for v in row] for row in rows)
        write_atomic(out / FLAGS_FILE, buffer.getvalue())
    if not rows:
        return []
    head = f"{len(rows)} submission{'s' if len(rows) != 1 else ''} for a person to look at (per-student data"
    head += f", also in {FLAGS_FILE}):" if out is not None else "):"
    return [head, *lines]
