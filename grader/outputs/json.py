"""The scorecard as JSON: the same content as the YAML scorecard, for tools that prefer JSON."""

from __future__ import annotations

import json

from grader.judge.scorecard import Scorecard


def to_json(card: Scorecard, rounding: int = 2) -> str:
    return json.dumps(card.to_dict(rounding), indent=2, ensure_ascii=False) + "\n"
