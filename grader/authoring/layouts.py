"""Exchange layouts: folders of handed-in work another tool lays out (``ROOT/STUDENT/ASSIGNMENT/``),
read by ``grader.batch.intake`` through this module, each layout defined in its tool's package.

A layout says where it starts (``root``: the folder given, a folder inside it, or not this layout)
and where a student's folder keeps one assignment (``assignment_folder``); intake does the rest as
it does for any folder per student. Adding a layout is one entry in ``LAYOUTS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.nbgrader import layout as nbgrader_layout


@dataclass(frozen=True)
class ExchangeLayout:
    name: str
    root: Callable[[Path], Path | None]
    assignment_folder: Callable[[Path, str], Path]


LAYOUTS: tuple[ExchangeLayout, ...] = (
    ExchangeLayout("nbgrader", nbgrader_layout.root, nbgrader_layout.assignment_folder),
)


def find(folder: Path) -> tuple[ExchangeLayout, Path] | None:
    """The layout ``folder`` is in, with the folder where it starts; None for any other folder."""
    for layout in LAYOUTS:
        root = layout.root(folder)
        if root is not None:
            return layout, root
    return None


def starts_at(folder: Path) -> bool:
    """Whether a layout starts at ``folder`` itself (not at a folder inside it)."""
    return any(layout.root(folder) == folder for layout in LAYOUTS)
