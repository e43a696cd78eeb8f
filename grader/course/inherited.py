"""The settings a check inherits, declared once: ``rtol``, ``atol``, ``strict_types`` and
``carry_forward``, each with its built-in default, the levels of config.yaml that may set it, how a
value is read and checked, and its help. ``inherit`` looks them up in one order: the course's
``defaults`` over the built-in defaults, then the assignment, the question, the check; the innermost
value given wins. ``grader.course.config`` calls it at each level; the model
(``grader.course.model``) holds the results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from grader.course.reader import Reader, describe

__all__ = ["Inherited", "Level", "inherit"]


class Level(StrEnum):
    """The levels of config.yaml that may set an inherited setting, outermost first."""

    COURSE = "course.defaults"
    ASSIGNMENT = "assignment"
    QUESTION = "question"
    CHECK = "check"


def _tolerance(r: Reader, key: str, default: float) -> float:
    return float(r.number(key, default))


def _flag(r: Reader, key: str, default: bool) -> bool:
    return r.flag(key, default)


CARRY_FORWARD = {"full": 1.0, "none": 0.0}


def _carry_forward(r: Reader, key: str, default: float) -> float:
    """``carry_forward``: full, none, or the share of the points (0 to 1) for a value that is right
    given the student's own upstream answers."""
    raw = r.get(key, default)
    if isinstance(raw, str) and raw in CARRY_FORWARD:
        return CARRY_FORWARD[raw]
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= 1:
        raise r.error(r.sub(key), f"must be full, none or a share of the points from 0 to 1, got {describe(raw)}")
    return float(raw)


T = TypeVar("T", float, bool)


def _setting(default: T, read: Callable[[Reader, str, T], T], levels: tuple[Level, ...], help: str) -> T:
    """One inherited setting: its built-in default, how a value of config.yaml is read and checked
    (raising ConfigError), the levels that may set it, and what it means."""
    return dataclasses.field(default=default, metadata={"read": read, "levels": levels, "help": help})


EVERY_LEVEL = tuple(Level)
NOT_PER_QUESTION = (Level.COURSE, Level.ASSIGNMENT, Level.CHECK)


@dataclasses.dataclass(frozen=True)
class Inherited:
    """The settings a check inherits, each declared once, here. ``Inherited()`` holds the built-in
    defaults; ``inherit`` reads a level's own values over its outer level's."""

    rtol: float = _setting(
        1e-5,
        _tolerance,
        NOT_PER_QUESTION,
        "relative tolerance: values match when |actual - expected| <= atol + rtol * |expected|",
    )
    atol: float = _setting(1e-8, _tolerance, NOT_PER_QUESTION, "absolute tolerance, in the same rule")
    strict_types: bool = _setting(
        False, _flag, NOT_PER_QUESTION, "true: numpy vs torch and float32 vs float64 are mismatches"
    )
    carry_forward: float = _setting(
        1.0,
        _carry_forward,
        EVERY_LEVEL,
        "full, none or a share of the points from 0 to 1: the credit for a step that is "
        "right given the student's own wrong upstream values",
    )

    @classmethod
    def keys(cls, level: Level) -> tuple[str, ...]:
        """The keys of the inherited settings that config.yaml may give at ``level``."""
        return tuple(f.name for f in dataclasses.fields(cls) if level in f.metadata["levels"])

    def fields_of(self, model: type[Any]) -> dict[str, Any]:
        """The settings ``model`` (a dataclass of ``grader.course.model``) holds, as its keyword
        arguments: a Check holds all of them, an Assignment its tolerances."""
        held = {f.name for f in dataclasses.fields(model)}
        return {k: v for k, v in dataclasses.asdict(self).items() if k in held}


def inherit(r: Reader, level: Level, outer: Inherited) -> Inherited:
    """The inherited settings in force at ``r``, a mapping of config.yaml at ``level``: those it may
    set and sets (read and checked in the order they are declared), the others as ``outer`` has them.
    Each level starts from the one around it: ``Inherited()`` (the built-in defaults) -> the course's
    defaults -> the assignment -> the question -> the check, so a check holds the innermost value given."""
    return dataclasses.replace(
        outer,
        **{
            f.name: f.metadata["read"](r, f.name, getattr(outer, f.name))
            for f in dataclasses.fields(Inherited)
            if level in f.metadata["levels"]
        },
    )
