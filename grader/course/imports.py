"""What an assignment's notebooks import: the set of modules the forking server preloads for it.

Kept apart from the grading code so that ``grader grade`` can start the server before it imports
anything heavy: reading two notebooks and parsing their imports is all this needs.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

from grader import notebook
from grader.course import testcode
from grader.course.model import Assignment
from grader.errors import NotebookError

# Libraries that take a second or more to import, which a student may use where the assignment
# does not (torch in a NumPy course). A submission that imports one is served by a server that
# has it loaded, so the import is paid once per batch rather than in each of its runs. Only these:
# the server imports them outside any sandbox, so a submission may choose among them, never name
# a module of its own choosing.
WARM = frozenset({"jax", "matplotlib", "pandas", "scipy", "seaborn", "sklearn", "tensorflow", "torch"})


def warm_for(preload: tuple[str, ...], sources: list[str]) -> tuple[str, ...]:
    """The modules of ``WARM``'s libraries the cells import (``matplotlib.pyplot`` as written: a
    library's heavy part is often a submodule) where the preload set has nothing of that library
    and it is installed here; sorted."""
    preloaded = {m.partition(".")[0] for m in preload}
    return tuple(
        sorted(
            m
            for m in notebook.imported_modules(sources)
            if (top := m.partition(".")[0]) in WARM and top not in preloaded and _installed(top)
        )
    )


@functools.cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


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
