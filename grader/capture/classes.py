"""Classes as plain data: a class crosses the process boundary as the names that identify it.

A test compares types (``type(imdb) == tables.Table``, ``isinstance(x, np.ndarray)``,
``type(n) is int``). A class is code, never data, so it is carried as what identifies it: its
module and qualified name, whether it is the very object importable at that path in its own
process (``importable``: a class a student makes in the notebook and names ``Table`` in a module
named ``datascience.tables`` is not), an identity within its process (``ident``, with ``process``,
a token for the process it was taken in), how its metaclass decides ``isinstance`` (``plain``: by
the MRO alone), and its MRO as the same records. The grader compares such records (``ClassRef``)
as Python compares the classes:

- two classes of one process are the same when they are the same object (``ident``): exact;
- across processes (the student's class and the grader's own ``np.ndarray`` or ``int``, or the
  solution's), two importable classes are the same when they have the same module and qualified
  name; an importable class is never the same as one that is not; two that are not importable
  (classes of the notebooks) are the same when their names are.

Nothing of the student's class runs in the grader: a ``ClassRef`` holds strings, numbers and
booleans only. ``describe`` runs in the student process (it imports nothing of the grader's side)
and reads the class through ``type``'s own descriptors, so a metaclass cannot answer in its place.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from grader.errors import ProtocolError, SiteUnusable

MAX_MRO = 64
_TYPE = type  # bound at import, before any student code runs: a later ``builtins.type = ...`` changes nothing here
_MODULE = type.__dict__["__module__"]
_QUALNAME = type.__dict__["__qualname__"]
_MRO = type.__dict__["__mro__"]
_token = os.urandom(8).hex()


def _renew() -> None:
    global _token
    _token = os.urandom(8).hex()


if hasattr(os, "register_at_fork"):  # each forked student process is a process of its own
    os.register_at_fork(after_in_child=_renew)


def _process() -> str:
    return f"{_token}-{os.getpid()}"


def _importable(cls: type, module: str, qualname: str) -> bool:
    """Whether ``cls`` is the object found at ``module``.``qualname`` in this process, in a module
    that was imported (a module made in the notebook, or ``__main__``, does not count)."""
    if module == "__main__" or "<" in qualname:
        return False
    try:
        found: Any = sys.modules.get(module)
        if found is None or getattr(found, "__spec__", None) is None:
            return False
        for part in qualname.split("."):
            found = getattr(found, part)
        return found is cls
    except BaseException:  # noqa: BLE001 - a module or metaclass of the student's decides what getattr does
        return False


def importable(cls: type) -> bool:
    """Whether the grader could import ``cls`` by its names (not a class the notebook made)."""
    return bool(_entry(cls)[2])


def _entry(cls: type) -> list[Any]:
    try:
        module, qualname = str(_MODULE.__get__(cls))[:200], str(_QUALNAME.__get__(cls))[:200]
    except Exception:  # noqa: BLE001 - a class whose ``__module__`` was deleted or is not a string
        return ["?", "?", False, id(cls)]
    return [module, qualname, _importable(cls, module, qualname), id(cls)]


def describe(cls: type) -> dict[str, Any]:
    """The wire form of a class (student side)."""
    mro = _MRO.__get__(cls)[:MAX_MRO]
    meta = _TYPE(cls)
    return {
        "t": "class",
        "mro": [_entry(c) for c in mro],  # the class itself first
        "plain": meta is type,
        "process": _process(),
    }


def type_of(value: Any) -> dict[str, Any]:
    """The wire form of a value's class, as ``type(value)`` is, whatever the value says its class is."""
    return describe(_TYPE(value))


class ClassRef:
    """The grader's record of a class of another process (or of its own): names, never the class.

    Compares with another ``ClassRef`` and with the grader's own classes as Python compares the
    classes (module docstring); ``isinstance`` and ``issubclass`` while judging a test read its MRO
    (``grader.judge.testruntime``). Anything else (calling it, its attributes beyond its names) is
    the class's own, which stays in its process."""

    def __init__(self, mro: tuple[tuple[str, str, bool, int], ...], plain: bool, process: str):
        self._mro, self._plain, self._process = mro, plain, process
        module, qualname = mro[0][0], mro[0][1]
        self.__module__, self.__qualname__ = module, qualname
        self.__name__ = qualname.rpartition(".")[2]

    @classmethod
    def read(cls, obj: Any) -> ClassRef:
        """A wire form, strictly (grader side)."""
        if not isinstance(obj, dict) or set(obj) != {"t", "mro", "plain", "process"} or obj["t"] != "class":
            raise ProtocolError("a captured class is malformed")
        mro, plain, process = obj["mro"], obj["plain"], obj["process"]
        if not isinstance(mro, list) or not 0 < len(mro) <= MAX_MRO or type(plain) is not bool:
            raise ProtocolError("a captured class is malformed")
        if type(process) is not str or len(process) > 64:
            raise ProtocolError("a captured class is malformed")
        entries = []
        for e in mro:
            if not (isinstance(e, list) and len(e) == 4 and type(e[0]) is str and type(e[1]) is str):
                raise ProtocolError("a captured class is malformed")
            if len(e[0]) > 200 or len(e[1]) > 200 or type(e[2]) is not bool or type(e[3]) is not int:
                raise ProtocolError("a captured class is malformed")
            entries.append((e[0], e[1], e[2], e[3]))
        return cls(tuple(entries), plain, process)

    @classmethod
    def of(cls, kind: type) -> ClassRef:
        """The record of one of the grader's own classes (made once for each)."""
        return _own(kind)

    def wire(self) -> dict[str, Any]:
        return {"t": "class", "mro": [list(e) for e in self._mro], "plain": self._plain, "process": self._process}

    @property
    def importable(self) -> bool:
        return self._mro[0][2]

    @property
    def plain(self) -> bool:
        """Whether ``isinstance`` and ``issubclass`` on it are decided by the MRO alone (its
        metaclass is ``type``; an ``ABCMeta`` class also has its registered and hooked subclasses)."""
        return self._plain

    @property
    def __mro__(self) -> tuple[ClassRef, ...]:
        return tuple(ClassRef(self._mro[i:], self._plain, self._process) for i in range(len(self._mro)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClassRef):
            return same(self, other)
        if isinstance(other, type):
            return same(self, ClassRef.of(other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self.__module__, self.__qualname__))

    def __repr__(self) -> str:
        if self.__module__ == "builtins":
            return f"<class '{self.__qualname__}'>"
        return f"<class '{self.__module__}.{self.__qualname__}'>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise SiteUnusable(repr(self), "is a class that stays in the student's process")

    def subclass_of(self, other: ClassRef) -> bool | None:
        """Whether this class is ``other`` or derives from it: True or False where the MRO decides,
        None where ``other``'s metaclass may say otherwise (an ABC's registered subclasses)."""
        if any(same(ClassRef((e,), True, self._process), other) for e in self._mro):
            return True
        return False if other.plain else None


@functools.lru_cache(maxsize=512)
def _own(kind: type) -> ClassRef:
    return ClassRef.read(describe(kind))


def same(a: ClassRef, b: ClassRef) -> bool:
    """Whether two records name one class, as Python's ``is`` would say of the classes."""
    (am, aq, ai, aid), (bm, bq, bi, bid) = a._mro[0], b._mro[0]
    if a._process == b._process:
        return aid == bid
    if ai != bi:
        return False
    return (am, aq) == (bm, bq)


def as_ref(kind: Any) -> ClassRef | None:
    """A ``ClassRef`` for a record or one of the grader's classes; None for anything else."""
    if isinstance(kind, ClassRef):
        return kind
    if isinstance(kind, type):
        return ClassRef.of(kind)
    return None
