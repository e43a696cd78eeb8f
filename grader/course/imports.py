"""What an assignment's notebooks import: the set of modules the forking server preloads for it.

Kept apart from the grading code so that ``grader grade`` can start the server before it imports
anything heavy: reading two notebooks and parsing their imports is all this needs.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from grader import notebook
from grader.course import testcode
from grader.course.model import Assignment
from grader.errors import NotebookError


def preload_for(assignment: Assignment) -> tuple[str, ...]:
    """What the forking server should import for this assignment: the modules its solution and
    skeleton import, and its ``preload:`` list, without the standard library's (cheap to import,
    and leaving them out lets assignments that use the same libraries share one server)."""
    stamps = []
    for path in (assignment.solution, assignment.skeleton):
        try:
            stamps.append((path, path.stat().st_mtime_ns))
        except OSError:
            stamps.append((path, 0))
    # The modules tests use without importing them (``pytest``, ``np``) are imported in the
    # student's process too, where each test is recorded.
    used = {n for c in assignment.checks if c.is_test for n in testcode.used_modules(c.target)}
    return _preload(tuple(stamps), tuple(sorted({*assignment.preload, *used})))


@functools.lru_cache(maxsize=64)
def _preload(notebooks: tuple[tuple[Path, int], ...], listed: tuple[str, ...]) -> tuple[str, ...]:
    sources: list[str] = []
    for path, _ in notebooks:
        try:
            sources += [c.source for c in notebook.read(path)]
        except NotebookError:
            continue
    wanted = set(notebook.imported_modules(sources)) | set(listed)
    return tuple(sorted(m for m in wanted if m.partition(".")[0] not in sys.stdlib_module_names))
