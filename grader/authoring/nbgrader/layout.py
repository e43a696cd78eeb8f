"""nbgrader's exchange layout of handed-in notebooks: ``submitted/STUDENT/ASSIGNMENT/*.ipynb``,
given as the ``submitted`` folder itself or as the course folder that holds it."""

from __future__ import annotations

from pathlib import Path

SUBMITTED = "submitted"


def root(folder: Path) -> Path | None:
    """Where the layout starts: the folder itself (``submitted/``), the ``submitted/`` inside it, or None."""
    if folder.name == SUBMITTED:
        return folder
    inner = folder / SUBMITTED
    return inner if inner.is_dir() else None


def assignment_folder(student: Path, assignment: str) -> Path:
    """Where a student's folder holds what they handed in for ``assignment``."""
    return student / assignment
