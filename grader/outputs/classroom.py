"""The result JSON that GitHub Classroom's grading reporter reads (one "runner").

The workflow base64-encodes this file into a step output and passes it to
``classroom-resources/autograding-grading-reporter`` as ``GRADER_RESULTS``; the reporter adds
up ``tests[].score``, so partial credit reaches the total. Schema: ``version`` 1, ``status``
(``pass`` | ``fail`` | ``error``), ``max_score``, and ``tests[]`` with ``name``, ``status``,
``message``, ``score``, ``max_score``, ``filename``, ``line_no``, ``test_code``, ``duration``.

The workflow runs in the student's own repository, so scores must all be there for the total to
be right; the messages follow what students may see (a withheld question says so).
"""

from __future__ import annotations

import json
from typing import Any

from grader.judge.scorecard import Scorecard, rounded
from grader.outputs.view import View, question_label


def result(card: Scorecard, view: View) -> dict[str, Any]:
    r = view.rounding
    shown = {q.id: q for q in view.questions}
    tests = []
    for q in card.questions:
        s = shown.get(q.id)
        tests.append(
            {
                "name": question_label(q.id, q.title),
                "status": "pass" if q.status == "passed" else ("error" if q.status == "error" else "fail"),
                "message": "\n".join(s.feedback if s is not None else q.lines),
                "score": rounded(q.score, r),
                "max_score": rounded(q.max_score, r),
                "filename": card.submission,
                "line_no": 0,
                "test_code": "",
                "duration": 0,
            }
        )
    if card.status in ("invalid_notebook", "crashed", "timeout", "over_budget"):
        status = "error"
    else:
        status = "pass" if all(q.status == "passed" for q in card.questions) else "fail"
    out = {"version": 1, "status": status, "max_score": rounded(card.max_score, r), "tests": tests}
    if card.reason:
        out["message"] = card.reason
    return out


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
