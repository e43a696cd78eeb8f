"""The other tools a course can be imported from, by the name ``grader import TOOL`` takes.

One entry per tool: its name, a sentence for ``--help`` saying what SOURCE is, and its reader
(``read(source, name) -> [Imported]``), each in a package of its own under ``grader/authoring/``.
A reader lowers the tool's rules to generic settings of config.yaml as it writes them; nothing
outside ``grader/authoring/`` knows which tool a course came from. Adding a tool is one package
and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.errors import UsageError

if TYPE_CHECKING:  # imported by the command line's parser: a reader loads when it is used
    from grader.authoring.importing import Imported

Reader = Callable[[Path, "str | None"], "list[Imported]"]


def _nbgrader(source: Path, name: str | None) -> list[Imported]:
    from grader.authoring.nbgrader import importer

    return importer.read(source, name)


def _otter(source: Path, name: str | None) -> list[Imported]:
    from grader.authoring.otter import importer

    return importer.read(source, name)


@dataclass(frozen=True)
class Peer:
    name: str
    source: str  # what SOURCE is for this tool, for ``--help``
    read: Reader


PEERS: dict[str, Peer] = {
    p.name: p
    for p in (
        Peer("nbgrader", "the source folder (source/ or source/ASSIGNMENT)", _nbgrader),
        Peer("otter", "the master notebook", _otter),
    )
}


def read(tool: str, source: Path, name: str | None) -> list[Imported]:
    """The assignments of ``source``, a course written for ``tool``."""
    peer = PEERS.get(tool)
    if peer is None:
        raise UsageError(f"Unknown tool {tool!r}; use one of: {', '.join(PEERS)}.")
    return peer.read(source, name)


def source_help() -> str:
    return "; ".join(f"{p.name}: {p.source}" for p in PEERS.values())
