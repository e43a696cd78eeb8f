"""Finding the course file and the assignment a command or a pytest run is about."""

from __future__ import annotations

import os
from pathlib import Path

from grader.course.model import Assignment, Course
from grader.errors import UsageError


def find_config(explicit: str | None) -> Path:
    """config.yaml from --config, then $GRADER_CONFIG, then the current folder and its parents."""
    if explicit:
        return Path(explicit)
    if os.environ.get("GRADER_CONFIG"):
        return Path(os.environ["GRADER_CONFIG"])
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "config.yaml").is_file():
            return folder / "config.yaml"
    raise UsageError("No config.yaml found here or in any parent folder; pass --config PATH.")


def pick_assignment(course: Course, name: str | None, paths: list[Path]) -> Assignment:
    """The assignment called ``name``; else the only one; else the one these paths are named after."""
    if name:
        if name not in course.assignments:
            known = ", ".join(course.assignments)
            raise UsageError(f"Unknown assignment {name!r}; {course.file} defines: {known}.")
        return course.assignments[name]
    if len(course.assignments) == 1:
        return next(iter(course.assignments.values()))
    for p in paths:
        for part in (p.stem, *[q.name for q in p.resolve().parents]):
            if part in course.assignments:
                return course.assignments[part]
    raise UsageError(f"Which assignment is this? Pass --assignment NAME (one of: {', '.join(course.assignments)}).")
