"""The course's own modules as a test imports them in the grader.

An assignment may ship a module of its own (``helper.py``, a package folder ``tools/``) that a
question asks the student to change: ``import helper; helper.LIMIT = 10``, tested by ``import
helper`` and ``assert helper.LIMIT == 10``. A test cell run in the student's kernel gets the
notebook's module, as the notebook changed it. Here the test's import gives the grader's own copy
of the module's code, loaded afresh for the test from the assignment's files, and carrying the
values the student's process recorded of it as plain data (``grader.run.test_recorder``, which
decides what is the course's own: a module whose file is in the run's working folder), as they
stood at the test's point. Its functions, classes and modules stay the grader's copy's: a student
who replaces ``helper.check`` with a function that always agrees changes only their own copy. A
module the notebook never imported is the module as shipped; a library is never loaded here.

The copy stays out of ``sys.modules`` (but while its own code runs): each test's replay loads its
own, so what one test or one submission does to it reaches no other. The module's own imports of the course's modules (``from
. import util``, ``import helper``) get the same replay's copies.
"""

from __future__ import annotations

import builtins
import functools
import importlib.machinery
import importlib.util
import random
import sys
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grader.capture import ClassRef, Value, to_python

Import = Callable[..., Any]


@dataclass(frozen=True)
class Recorded:
    """One of the course's modules as the student's process had it at the test's point: its file
    relative to the working folder, and its values that crossed as plain data."""

    path: str
    values: dict[str, Value] = field(default_factory=dict)


def read(kind: str, key: str, parts: tuple[Value, ...], into: dict[str, Recorded]) -> bool:
    """Take an ``m`` (a module's file) or ``ma`` (one of its values) record; whether it was one."""
    if kind == "m" and len(parts) == 1 and parts[0].kind == "str":
        into[key] = Recorded(str(parts[0].data))
        return True
    if kind == "ma" and len(parts) == 2 and parts[0].kind == "str" and key in into:
        into[key].values[str(parts[0].data)] = parts[1]
        return True
    return False


@functools.lru_cache(maxsize=64)
def _code(path: str, stamp: tuple[int, int]) -> types.CodeType:
    """A module's file compiled (``stamp``: its modification time and size), without writing bytecode."""
    return compile(Path(path).read_bytes(), path, "exec", dont_inherit=True)


def _holds_class(value: Any) -> bool:
    """Whether a value carries a class's record (which is no class here), at any depth."""
    if isinstance(value, ClassRef):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_class(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_class(k) or _holds_class(v) for k, v in value.items())
    return False


class CourseModules:
    """The course's modules of one replay of a test: loaded from ``root`` (the assignment's files)
    on first import, with the values ``recorded`` of each laid over them."""

    def __init__(self, root: Path | None, recorded: Mapping[str, Recorded]):
        self.root = root.resolve() if root is not None and root.is_dir() else None
        self.recorded = recorded
        self.loaded: dict[str, types.ModuleType] = {}
        self.builtins = dict(vars(builtins))
        self.builtins["__import__"] = self.importer(builtins.__import__)

    def owns(self, name: str) -> bool:
        """Whether the top-level module ``name`` is one of the course's files."""
        if self.root is None or not name.isidentifier():
            return False
        return name in self.loaded or self._find(self.root, name) is not None

    @staticmethod
    def _find(folder: Path, last: str) -> tuple[Path | None, Path | None] | None:
        """(its file, its package folder) for module ``last`` in ``folder``, else None."""
        package = folder / last
        if (package / "__init__.py").is_file():
            return package / "__init__.py", package
        if (folder / f"{last}.py").is_file():
            return folder / f"{last}.py", None
        if package.is_dir() and any(package.glob("*.py")):
            return None, package  # a namespace package
        return None

    def load(self, name: str) -> types.ModuleType:
        """The module ``name`` of this replay: its parents first, then its own code."""
        if name in self.loaded:
            return self.loaded[name]
        parent_name, _, last = name.rpartition(".")
        parent = self.load(parent_name) if parent_name else None
        if parent is not None and not hasattr(parent, "__path__"):
            raise ModuleNotFoundError(f"No module named {name!r}; {parent_name!r} is not a package", name=name)
        folder = Path(parent.__path__[0]) if parent is not None else self.root
        found = self._find(folder, last) if folder is not None else None
        if found is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        file, package = found
        module = types.ModuleType(name)
        spec = importlib.machinery.ModuleSpec(name, None, origin=str(file) if file else None, is_package=bool(package))
        if package is not None:
            spec.submodule_search_locations = [str(package)]
            module.__path__ = [str(package)]
        module.__spec__, module.__package__ = spec, name if package is not None else parent_name
        module.__dict__["__builtins__"] = self.builtins
        if file is not None:
            module.__file__ = str(file)
        self.loaded[name] = module
        try:
            if file is not None:
                stat = file.stat()
                code = _code(str(file), (stat.st_mtime_ns, stat.st_size))
                draws = random.getstate(), np.random.get_state()
                # While it runs, where what it calls looks for it by name (``dataclasses`` reading
                # its annotations), unless the grader's process has a module of that name itself.
                listed = sys.modules.setdefault(name, module) is module
                try:
                    exec(code, module.__dict__)  # noqa: S102 - the course's own module, as shipped
                finally:  # a module that seeds or draws as it loads leaves the test's draws alone
                    if listed and sys.modules.get(name) is module:
                        del sys.modules[name]
                    random.setstate(draws[0])
                    np.random.set_state(draws[1])
        except BaseException:
            del self.loaded[name]
            raise
        if parent is not None:
            setattr(parent, last, module)
        self._overlay(name, module, file)
        return module

    def _overlay(self, name: str, module: types.ModuleType, file: Path | None) -> None:
        """The values the student's process recorded of this module, where they are its file's."""
        recorded = self.recorded.get(name)
        if recorded is None or file is None or self.root is None:
            return
        if file.resolve() != (self.root / recorded.path).resolve():
            return
        for attr, value in recorded.values.items():
            mine = module.__dict__.get(attr)
            if isinstance(mine, (type, types.ModuleType)) or callable(mine):
                continue  # the grader's own code, whatever the student's copy holds there
            try:
                plain = to_python(value)
            except Exception:  # noqa: BLE001,S112 - a value that cannot be rebuilt leaves the grader's
                continue
            if not _holds_class(plain):
                module.__dict__[attr] = plain

    def importer(self, fallback: Import) -> Import:
        """``__import__`` that gives this replay's copies of the course's modules and leaves every
        other import to ``fallback``."""

        def import_(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
            if level:
                package = (globals or {}).get("__package__") or ""
                absolute = importlib.util.resolve_name("." * level + name, package)
            else:
                absolute = name
            if not self.owns(absolute.partition(".")[0]):
                return fallback(name, globals, locals, fromlist, level)
            module = self.load(absolute)
            if not fromlist:
                return self.loaded[absolute.partition(".")[0]] if not level else module
            for item in fromlist:
                if isinstance(item, str) and item != "*" and not hasattr(module, item) and hasattr(module, "__path__"):
                    try:
                        self.load(f"{absolute}.{item}")
                    except ModuleNotFoundError as exc:
                        if exc.name != f"{absolute}.{item}":
                            raise
                        # not a submodule: ``from m import x`` then fails as Python's does
            return module

        return import_
