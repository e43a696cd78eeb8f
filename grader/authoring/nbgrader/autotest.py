"""nbgrader's AUTOTEST directives, expanded as ``nbgrader generate_assignment`` expands them.

In an nbgrader source notebook an autograder test cell may hold lines such as

    ### AUTOTEST squares(1); squares(2)
    ### HASHED AUTOTEST squares(3)

nbgrader (``preprocessors/instantiatetests.py``) runs the source notebook, and for each snippet
(the text after ``AUTOTEST``, split at ``;``) looks up the templates of ``autotests.yml`` by the
type of the snippet's value there (``dispatch``, e.g. ``type(squares(1))`` reads ``list``), and
writes one ``assert`` per template: the template's test, normalised (``str(...)``) and, after
``HASHED``, hashed with a salt, compared with the text it gave on the solution, with the template's
failure message. The cell gets the ``setup`` code before its first directive and ends with the
``success`` code. The released notebook holds those asserts, and they grade the submissions.

This module does the same, so an imported course grades as nbgrader grades it: it runs the source
notebook in the sandbox (the instructor's solution, as every reference run), twice: once for each
snippet's type, once for the values of the templates chosen by those types, each taken as the
text Jupyter shows for it (IPython's pretty printer) and cleaned as nbgrader's sanitizer cleans it.
The expanded cells are then imported as any nbgrader test cell.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from grader import notebook
from grader.course.model import Limits
from grader.errors import UsageError
from grader.names import autotest_id
from grader.run.job import CaptureSpec, Job, JobCell, RunResult
from grader.vocab import CaptureKind

DELIMITER = "AUTOTEST"
HASHED = "HASHED"
FILENAME = "autotests.yml"
COMMENT = "#"  # the comment string of the Python kernels (``comment_strs``)
PYTHON_KERNELS = ("python", "python3")
# What Jupyter shows as ``text/plain`` for a value: IPython's pretty printer, as the kernel's displayhook.
PRETTY = "__import__('IPython').lib.pretty.pretty({expr})"

Run = Callable[[Job], RunResult]
# Where a value is read: (cell, line, snippet) for a snippet's type, with the template's index for
# a template's value.
Key = tuple[int, int, int] | tuple[int, int, int, int]


@dataclass(frozen=True)
class Templates:
    """One kernel's section of ``autotests.yml``."""

    dispatch: str
    normalize: str
    check: str
    by_type: dict[str, list[tuple[str, str]]]  # type name -> [(test template, failure message)]
    setup: str | None = None
    hash: str | None = None
    success: str | None = None

    def tests_for(self, type_name: str) -> list[tuple[str, str]]:
        return self.by_type.get(type_name) or self.by_type["default"]


def is_directive(line: str) -> bool:
    return DELIMITER in line and line.strip()[: len(COMMENT)] == COMMENT


def has_autotest(source: str) -> bool:
    return any(is_directive(line) for line in source.split("\n"))


def find_file(notebook: Path, course_root: Path | None = None) -> Path | None:
    """``autotests.yml`` beside the notebook, else at the course's root (where nbgrader runs), which
    is the folder above ``source/``."""
    folder = notebook.parent
    candidates = [folder / FILENAME, folder.parent / FILENAME, folder.parent.parent / FILENAME]
    if course_root is not None:
        candidates.append(course_root / FILENAME)
    return next((c for c in candidates if c.is_file()), None)


def load(path: Path, kernel: str) -> Templates:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        section = data[kernel]
        by_type = {str(k): [(str(t["test"]), str(t["fail"])) for t in v] for k, v in section["templates"].items()}
        if "default" not in by_type:
            raise KeyError("templates: default")
        return Templates(
            dispatch=str(section["dispatch"]),
            normalize=str(section["normalize"]),
            check=str(section["check"]),
            by_type=by_type,
            setup=section.get("setup"),
            hash=section.get("hash"),
            success=section.get("success"),
        )
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{path} cannot be read as nbgrader's autotests file: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path} has no usable section for the kernel {kernel!r} (missing {exc}); nbgrader "
            "needs 'dispatch', 'normalize', 'check' and 'templates' with a 'default' entry"
        ) from None


def _render(template: str, **values: Any) -> str:
    return jinja2.Environment(loader=jinja2.BaseLoader()).from_string(template).render(**values)


def sanitize(text: str) -> str:
    """nbgrader's sanitizer for Python kernels: the quotes around a string's repr taken off."""
    return text.strip('"').strip("'")


def snippets(line: str) -> list[str]:
    out = [s.strip() for s in line[line.find(DELIMITER) + len(DELIMITER) :].strip(";").split(";")]
    if "" in out:
        out.remove("")  # nbgrader removes one empty snippet
    return out


@dataclass
class _Plan:
    """The source notebook as runs of code and values to read between them."""

    cells: list[JobCell] = field(default_factory=list)
    captures: list[CaptureSpec] = field(default_factory=list)
    keys: dict[str, Key] = field(default_factory=dict)  # capture id -> where its value is read

    def code(self, text: str) -> None:
        if text.strip():
            self.cells.append(JobCell(index=len(self.cells) + 1, source=text))

    def read(self, key: Key, expr: str) -> None:
        template = key[3] if len(key) == 4 else None
        capture = autotest_id("type" if template is None else "value", key[0], key[1], key[2], template)
        self.keys[capture] = key
        self.captures.append(CaptureSpec(capture, CaptureKind.EXPR, PRETTY.format(expr=expr), len(self.cells)))

    def job(self, files: tuple[tuple[Path, str], ...]) -> Job:
        return Job(
            cells=tuple(self.cells),
            captures=tuple(self.captures),
            limits=Limits(),
            files=files,
            preload=preload(c.source for c in self.cells),
        )


def preload(sources: Iterable[str]) -> tuple[str, ...]:
    """What the forking server imports for a run of these cells: the libraries they import (not
    the executor's whole list, which may hold torch)."""
    wanted = notebook.imported_modules(list(sources))
    return tuple(sorted(m for m in wanted if m.partition(".")[0] not in sys.stdlib_module_names))


def _walk(
    sources: list[str | None],
    templates: Templates,
    types: dict[Key, str] | None,
    plan: _Plan,
    emit: Callable[[int, list[str]], None] | None = None,
    texts: dict[Key, str] | None = None,
) -> None:
    """Go through the notebook as nbgrader's preprocessor does. Without ``types``, read each
    snippet's type; with them, read the templates' values (and, with ``texts``, write the cells)."""
    for index, source in enumerate(sources):
        if source is None:
            continue
        if not has_autotest(source):
            plan.code(source)
            if emit is not None:
                emit(index, source.split("\n"))
            continue
        salt = int(hashlib.sha256((source + str(index)).encode("utf-8")).hexdigest(), 16) % 10**6
        lines, chunk, setup_done = [], [], False
        for n, line in enumerate(source.split("\n")):
            if not is_directive(line):
                lines.append(line)
                chunk.append(line)
                continue
            plan.code("\n".join(chunk))
            chunk = []
            if templates.setup is not None and not setup_done:
                lines.append(templates.setup)
                plan.code(templates.setup)
                setup_done = True
            hashed = HASHED in line[: line.find(DELIMITER)]
            if hashed and templates.hash is None:
                raise UsageError(f"cell {index + 1}: a HASHED AUTOTEST line, but autotests.yml has no 'hash' template")
            for s, snippet in enumerate(snippets(line)):
                key = (index, n, s)
                if hashed:
                    salt += 1
                plan.read(key, _render(templates.dispatch, snippet=snippet))
                if types is None:
                    continue
                for t, (test, fail) in enumerate(templates.tests_for(type_name(types[key]))):
                    code = _render(templates.normalize, snippet=test)
                    if hashed:
                        code = _render(str(templates.hash), snippet=code, salt=hex(salt)[2:])
                    code = _render(code, snippet=snippet)
                    plan.read((index, n, s, t), code)
                    if texts is not None:
                        message = _render(fail, snippet=snippet).replace('"', '\\"')
                        lines.append(
                            _render(templates.check, snippet=code, value=texts[(index, n, s, t)], message=message)
                        )
                lines.append("")
        if templates.success is not None:
            lines.append(templates.success)
            chunk.append(templates.success)
        plan.code("\n".join(chunk))
        if emit is not None:
            emit(index, lines)


def _texts(result: RunResult, plan: _Plan) -> dict[Key, str]:
    from grader.capture import to_python

    out: dict[Key, str] = {}
    for spec in plan.captures:
        key = plan.keys[spec.id]
        got = result.captures.get(spec.id)
        value = to_python(got.value) if got is not None and got.value is not None else None
        if not isinstance(value, str):
            cell = key[0] + 1
            why = (
                f"{got.error.ename}: {got.error.evalue}"
                if got is not None and got.error is not None
                else result.reason or "the solution did not get there"
            )
            raise UsageError(
                f"AUTOTEST in cell {cell}: the solution cannot compute "
                f"`{spec.target.removeprefix(PRETTY.split('{')[0])[:-1]}` ({why}); "
                "nbgrader would stop here too"
            )
        out[key] = sanitize(value)
    return out


def expand(
    sources: list[str | None], templates: Templates, run: Run, files: tuple[tuple[Path, str], ...] = ()
) -> list[str | None]:
    """The notebook's code cells (``None`` for the others) with their AUTOTEST lines expanded,
    values from the solution run by ``run`` (a sandboxed executor's)."""
    first = _Plan()
    _walk(sources, templates, None, first)
    types = _texts(run(first.job(files)), first)
    second = _Plan()
    _walk(sources, templates, types, second)
    texts = _texts(run(second.job(files)), second)
    out: list[str | None] = list(sources)

    def emit(index: int, lines: list[str]) -> None:
        out[index] = "\n".join(lines)

    _walk(sources, templates, types, _Plan(), emit, texts)
    return out


def type_name(text: str) -> str:
    """What ``dispatch`` reads for a type, as Jupyter shows it (``list``; ``<class 'list'>`` read
    as ``list`` too, in case a kernel shows the class's repr)."""
    m = re.fullmatch(r"<class '([\w.]+)'>", text)
    return m.group(1) if m else text
