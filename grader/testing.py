"""Helpers for instructors' and the framework's tests: build submissions from a skeleton.

``fill(skeleton, answers)`` answers the skeleton's blanks the way a student would: an assignment
blank ``Q = ?`` is answered by ``answers["Q"]`` (the right-hand side), bare blanks by
``answers["?1"]``, ``answers["?2"]``, ... in notebook order (whole lines, indented to the blank).
A name whose blank appears more than once (``S = ?`` in two parts of a notebook) takes a list of
answers, used in notebook order.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

ASSIGN_BLANK = re.compile(r"^(\s*)([^=#]+?)\s*(=|\+=|-=|\*=|/=)\s*\?\s*$")
BARE_BLANK = re.compile(r"^(\s*)\?\s*$")


def fill_source(
    source: str, answers: dict[str, str | list[str]], counter: list[int], seen: dict[str, int] | None = None
) -> str:
    seen = {} if seen is None else seen
    lines = []
    for line in source.splitlines():
        m = ASSIGN_BLANK.match(line)
        if m and m.group(2).strip() in answers:
            target = m.group(2).strip()
            answer = answers[target]
            if isinstance(answer, list):
                seen[target] = seen.get(target, 0) + 1
                answer = answer[seen[target] - 1]
            lines.append(f"{m.group(1)}{target} {m.group(3)} {answer}")
            continue
        m = BARE_BLANK.match(line)
        if m:
            counter[0] += 1
            key = f"?{counter[0]}"
            if key in answers:
                answer = answers[key]
                if isinstance(answer, list):
                    raise TypeError(f"{key} is one bare blank: answer it with one text, not a list")
                lines.extend(m.group(1) + part for part in answer.splitlines())
                continue
        lines.append(line)
    return "\n".join(lines)


def fill(
    skeleton: Path,
    answers: dict[str, str | list[str]],
    *,
    edit: dict[int, str] | None = None,
    append: list[str] | None = None,
) -> nbformat.NotebookNode:
    """A copy of the skeleton with blanks answered; ``edit`` replaces whole code cells (by
    1-based code-cell number) and ``append`` adds code cells at the end."""
    nb: nbformat.NotebookNode = nbformat.read(str(skeleton), as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
    counter: list[int] = [0]
    seen: dict[str, int] = {}
    n = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        n += 1
        if edit and n in edit:
            cell.source = edit[n]
        else:
            cell.source = fill_source(cell.source, answers, counter, seen)
    for src in append or []:
        nb.cells.append(nbformat.v4.new_code_cell(src))  # type: ignore[no-untyped-call]  # nbformat has no annotations
    return nb


def write(nb: nbformat.NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))  # type: ignore[no-untyped-call]  # nbformat has no annotations
    return path


def burst_cell(forks: int, threads_each: int, hold: float, settle: float) -> str:
    """A notebook cell that forks and starts threads as fast as it can (``forks`` children, each
    starting ``threads_each`` threads, the notebook two threads per fork), every task holding for
    ``hold`` seconds and reporting itself on a pipe the cell reads after ``settle`` seconds. Ends
    with ``held`` bound to the most tasks the run held at once (its first process included) and
    ``processes`` to the processes among them: the probe of a run's process limit, for the tests
    and the benchmark of ``limits.processes``."""
    return f"""import os, threading, time, json
r, w = os.pipe()
os.set_blocking(r, False)
def hold():
    time.sleep({hold})
def threads(n):
    for _ in range(n):
        try:
            threading.Thread(target=hold, daemon=True).start()
        except (RuntimeError, OSError):
            return
        os.write(w, b"t")
for _ in range({forks}):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.write(w, b"p")
        threads({threads_each})
        time.sleep({hold})
        os._exit(0)
    threads(2)
time.sleep({settle})
seen = b""
while True:
    try:
        chunk = os.read(r, 1 << 16)
    except BlockingIOError:
        break
    if not chunk:
        break
    seen += chunk
held = 1 + len(seen)
processes = 1 + seen.count(b"p")
"""
