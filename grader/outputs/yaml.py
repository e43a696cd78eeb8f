"""The core scorecard as YAML (``<name>.yaml``), the file every other format is a view of."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import yaml

from grader.files import write_atomic
from grader.judge.scorecard import Scorecard


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no types here
    """Safe YAML that writes the grader's vocabulary (``StrEnum`` members) as the plain strings they are."""


_Dumper.add_multi_representer(StrEnum, lambda dumper, value: dumper.represent_str(str(value)))


def dump(data: object) -> str:
    text: str = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return text


def to_yaml(card: Scorecard, rounding: int = 2) -> str:
    return dump(card.to_dict(rounding))


def write_yaml(card: Scorecard, path: Path, rounding: int = 2) -> Path:
    return write_atomic(path, to_yaml(card, rounding))
