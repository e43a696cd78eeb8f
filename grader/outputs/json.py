"""The scorecard's document as JSON (``<name>.json``): every field and record of the card, with its
``format_version`` (``grader.judge.document``). It is what ``grader report`` and other tools read
back; the YAML scorecard and every other format are renderings of the same card."""

from __future__ import annotations

import json

from grader.judge import document
from grader.judge.scorecard import Scorecard


def to_json(card: Scorecard) -> str:
    return json.dumps(document.dump(card), indent=1, ensure_ascii=False) + "\n"
