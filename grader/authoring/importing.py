"""What every course import shares (``grader import nbgrader`` / ``grader import otter``).

An importer (``grader.authoring.nbgrader.importer``, ``grader.authoring.otter.importer``) reads the
other tool's notebooks into ``Imported`` assignments: a solution notebook in this grader's
markers, the questions as config.yaml writes them (``test`` checks, ``manual`` questions), the
data files beside it, and a note for every cell it could not convert. This module writes them:
``solutions/NAME/``, the config section, and the skeleton in ``assignments/NAME/``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml

from grader.authoring.assign import ANSWER_TAG, write_assignment
from grader.course import config
from grader.errors import UsageError
from grader.files import write_atomic

_ID_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def answer(cell: Any, question: str | None = None) -> None:
    """Mark a cell as the answer to a question graded by a person (``assign.ANSWER_TAG``; a
    markdown cell becomes a prompt in the skeleton), and name the question it answers."""
    tags = list(cell.get("metadata", {}).get("tags", []))
    if ANSWER_TAG not in tags:
        cell.setdefault("metadata", {})["tags"] = [*tags, ANSWER_TAG]
    if question is not None:
        cell.setdefault("metadata", {})["grader"] = {"question": question}


# The distribution that installs a module, where its name is not the module's own.
def given_files(folder: Path, rel: str) -> list[Path]:
    """What an entry of ASSIGNMENT CONFIG's ``files`` names, as otter copies it with the notebook:
    a file; a folder, whole (nested folders too); or a glob (``data/*.csv``). Hidden files and
    caches are left out; nothing outside the notebook's folder is taken."""
    base = folder.resolve()
    target = folder / rel
    if target.is_file():
        matches = [target]
    elif target.is_dir():
        matches = sorted(target.rglob("*"))
    elif any(ch in rel for ch in "*?["):
        try:
            matches = sorted(p for m in folder.glob(rel) for p in ([m] if m.is_file() else sorted(m.rglob("*"))))
        except (ValueError, NotImplementedError):  # an absolute or otherwise unusable pattern
            matches = []
    else:
        matches = []
    return [
        p
        for p in matches
        if p.is_file()
        and p.resolve().is_relative_to(base)
        and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(folder).parts)
    ]


def clean_id(text: str, fallback: str) -> str:
    """An id config.yaml accepts (a letter first; letters, digits, ``_.-``)."""
    out = _ID_BAD.sub("_", text.strip()).strip("_.-") or fallback
    return out if out[0].isalpha() or out[0] == "_" else f"q{out}"


@dataclass
class Imported:
    """One assignment as an importer read it, ready to write."""

    name: str
    title: str
    notebook: nbformat.NotebookNode  # the solution, with this grader's markers
    source: Path  # the notebook it came from, for messages
    questions: list[dict[str, Any]] = field(default_factory=list)
    data: list[Path] = field(default_factory=list)  # files copied beside the solution
    notes: list[str] = field(default_factory=list)  # what could not be converted, cell by cell, and why
    settings: dict[str, Any] = field(default_factory=dict)  # further keys of its config section (seed_each_cell)
    requirements: list[str] = field(default_factory=list)  # what the course declares it installs, one line each
    cell_numbers: list[int] = field(default_factory=list)  # each written cell's number in the source notebook

    def note(self, cell: int, reason: str) -> None:
        self.notes.append(f"{self.source.name}, cell {cell}: {reason}")

    def number(self, pos: int) -> int:
        """The number, in the source notebook, of the cell at ``pos`` (from 1) in the notebook written,
        where the importer left cells out (otter's raw cells): what messages name."""
        return self.cell_numbers[pos - 1] if 0 < pos <= len(self.cell_numbers) else pos


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """A course's notebook, or a UsageError naming it and saying why it cannot be imported."""
    try:
        nb: nbformat.NotebookNode = nbformat.read(str(path), as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    except OSError as exc:
        raise UsageError(f"{path.name} cannot be opened ({exc.strerror}); nothing was imported") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path.name} is not UTF-8 text, so not a notebook; nothing was imported") from None
    except Exception as exc:  # noqa: BLE001 - nbformat fails many ways on a broken file; never a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise UsageError(f"{path.name} cannot be read as a notebook ({first}); nothing was imported") from None
    if not isinstance(nb.get("cells"), list):
        raise UsageError(f"{path.name} is not a Jupyter notebook (it has no cells); nothing was imported")
    return nb


def normalise(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """nbformat 4.x of any minor version, every cell with an id (4.0 files have none)."""
    nb.nbformat, nb.nbformat_minor = 4, max(int(nb.get("nbformat_minor", 0)), 5)
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        cid = str(cell.get("id") or "")
        if not cid or cid in seen or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cid):
            cid = f"cell-{i}"
        seen.add(cid)
        cell["id"] = cid
        if cell.cell_type == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    return nb


_Dumper: Any = type("_Dumper", (yaml.SafeDumper,), {})  # block style for multi-line tests, this file only


def _str(dumper: Any, text: str) -> Any:
    style = "|" if "\n" in text else None
    if style:
        text = "\n".join(line.rstrip() for line in text.splitlines()) + "\n"
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _str)


def _yaml(data: Any) -> str:
    return str(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110))


def _whole_points(question: dict[str, Any]) -> dict[str, Any]:
    """``points: 1`` rather than ``1.0``, as an instructor would write it."""
    out = dict(question)
    for holder in [out, *out.get("checks", [])]:
        p = holder.get("points")
        if isinstance(p, float) and p.is_integer():
            holder["points"] = int(p)
    return out


def _existing(config_path: Path) -> dict[str, Any]:
    if not config_path.is_file():
        return {}
    loaded = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    if not isinstance(loaded, dict):
        raise UsageError(f"{config_path} is not a course file (a mapping at the top)")
    return loaded


def check_names(items: list[Imported], config_path: Path, *, force: bool) -> set[str]:
    """The course's assignment names; a UsageError when an import would replace one without ``force``."""
    taken = set((_existing(config_path).get("assignments") or {}).keys())
    for item in items:
        if item.name in taken and not force:
            raise UsageError(
                f"{config_path.name} already has an assignment {item.name!r}; "
                "pass --name to import under another name, or --force to replace it"
            )
    return taken


@contextlib.contextmanager
def stopped_on_oserror() -> Iterator[None]:
    """An OSError while importing (reading the course, running it, a full disk) as a UsageError
    naming the file and why; ``write`` takes back what it wrote, and says so, itself."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise UsageError(f"the import stopped: {exc.strerror or exc}{where}; nothing was written") from None


def write(items: list[Imported], config_path: Path, *, course_name: str, force: bool = False) -> list[str]:
    """Write the assignments into the course at ``config_path`` (created when missing); returns
    the lines to print: what was written, then what could not be converted. A file that cannot be
    written (a full disk) is a UsageError naming it, and what the import had written is taken
    back: the course's config.yaml as it was, the assignments' new folders gone."""
    root = config_path.parent
    before = config_path.read_text(encoding="utf-8") if config_path.is_file() else None
    folders = [root / top / item.name for item in items for top in ("solutions", "assignments")]
    new = [f for f in [root / "solutions", root / "assignments", *folders] if not f.exists()]
    try:
        return _write(items, config_path, course_name=course_name, force=force)
    except OSError as exc:
        kept = [f for f in folders if f not in new and f.exists()]
        for folder in new:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            if before is None:
                config_path.unlink(missing_ok=True)
            elif config_path.read_text(encoding="utf-8") != before:
                write_atomic(config_path, before)
        except OSError:
            kept.append(config_path)
        where = f" ({exc.filename})" if exc.filename else ""
        what = (
            "nothing was written"
            if not kept
            else f"what it wrote was taken back, but {', '.join(str(f) for f in kept)} held an earlier import and may "
            "hold part of this one: import again with --force once there is room"
        )
        raise UsageError(f"the import could not be written: {exc.strerror or exc}{where}; {what}") from None


def _write(items: list[Imported], config_path: Path, *, course_name: str, force: bool) -> list[str]:
    root = config_path.parent
    existing = _existing(config_path)
    taken = check_names(items, config_path, force=force)
    lines: list[str] = []
    sections: dict[str, Any] = {}
    for item in items:
        folder = root / "solutions" / item.name
        folder.mkdir(parents=True, exist_ok=True)
        solution = folder / f"{item.name}.ipynb"
        solution.write_text(nbformat.writes(item.notebook) + "\n", encoding="utf-8")  # type: ignore[no-untyped-call]  # nbformat has no annotations
        lines.append(f"wrote {solution.relative_to(root)}")
        data = []
        for path in item.data:
            # Where the notebook reads it: ``data/iris.csv`` stays in ``data/``.
            beside = item.source.parent.resolve()
            rel = path.resolve().relative_to(beside).as_posix() if path.resolve().is_relative_to(beside) else path.name
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, folder / rel)
            data.append(rel)
            lines.append(f"wrote {(folder / rel).relative_to(root)}")
        if item.requirements:  # what the course declares it installs, for whoever sets up grading
            wanted = folder / "requirements.txt"
            wanted.write_text(
                f"# What {item.source.name}'s course declares it installs (read by the import).\n"
                + "\n".join(item.requirements)
                + "\n",
                encoding="utf-8",
            )
            lines.append(f"wrote {wanted.relative_to(root)}")
        section: dict[str, Any] = {"title": item.title}
        if data:
            section["data"] = data
        section["variants"] = {"count": 0}  # imported tests bring their own inputs; no given data to vary
        section.update(item.settings)
        section["questions"] = [_whole_points(q) for q in item.questions]
        sections[item.name] = section
    if existing and force and taken & set(sections):
        existing.setdefault("assignments", {}).update(sections)
        write_atomic(config_path, _yaml(existing))
    elif existing:
        text = config_path.read_text(encoding="utf-8")
        block = _yaml({"assignments": sections})
        if existing.get("assignments"):
            # Appended under the existing ``assignments:`` when it is the file's last top-level key,
            # so the instructor's comments stay; else the file is written again from its data.
            last = [m.group(1) for m in re.finditer(r"^([A-Za-z_]\w*):", text, re.M)]
            if last and last[-1] == "assignments":
                write_atomic(config_path, text.rstrip("\n") + "\n" + block.split("\n", 1)[1])
            else:
                existing["assignments"].update(sections)
                write_atomic(config_path, _yaml(existing))
        else:
            existing["assignments"] = sections
            write_atomic(config_path, _yaml(existing))
    else:
        header = '# The course, imported. Every key is documented in the grader\'s README ("config.yaml reference").\n'
        write_atomic(config_path, header + _yaml({"course": {"name": course_name}, "assignments": sections}))
    lines.append(f"wrote {config_path.name}")
    course = config.load(config_path)
    for item in items:
        assignment = course.assignment(item.name)
        for path in write_assignment(assignment, None):
            lines.append(f"wrote {path.relative_to(root)}")
    notes = [n for item in items for n in item.notes]
    if notes:
        lines.append(f"notes, to read before grading ({len(notes)}):")
        lines.extend(f"  - {n}" for n in notes)
    for item in items:
        auto = sum(q["points"] for q in item.questions if not q.get("manual"))
        manual = sum(q["points"] for q in item.questions if q.get("manual"))
        lines.append(
            f"{item.name}: {len(item.questions)} questions, {auto:g} points graded automatically"
            + (f", {manual:g} by a person" if manual else "")
        )
    return lines
