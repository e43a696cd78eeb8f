"""Classroom 50's ``result.json`` (schema ``classroom50/result/v1``) and its ``release-body.md``.

Classroom 50 runs the course's ``autograders/<slug>/autograder.py`` in the student's checkout on
every submission; the autograder writes ``./result.json``, which the runner checks against the
published schema (``schemas/result-v1.schema.json`` in ``foundation50/classroom50``) and the
gradebook collects, and ``./release-body.md``, the text of the submission's release page.

The document: ``schema``, the submission's identity (``classroom``, ``assignment``,
``assignment_type``, ``owner``, ``submission`` (a ``submit/...`` tag), ``commit``, ``release``,
``review`` links, ``datetime`` of the submission and ``graded_at``, both ``YYYY-MM-DDTHH:MM:SSZ``),
integer ``score`` and ``max-score``, and ``tests[]`` with ``test-name``, ``passed``, integer
``score`` and ``max-score`` (a test may carry more fields: ours add ``message`` and the exact
``points``/``max-points``). The identity comes from the runner's environment (``Identity.from_env``).

Points are integers there, and ours need not be, so they are mapped (``integer_points``):

- the whole assignment is scaled by the smallest factor in ``SCALES`` that makes every question's
  points whole (1 for the usual whole-point questions, 2 for half points, ...), so each question
  keeps its weight and ``max-score`` is exact;
- the total ``score`` is the exact (scaled) total rounded *down*, never more than was earned;
- that total is shared out to the questions by largest remainder: each question gets its whole
  points, and the points left over go one each to the questions with the largest fractions. So
  the questions add up to the total, and no question is more than one point from its exact score
  nor over its maximum.

The exact points stay in each test's ``points``/``max-points`` and in the release body. Every
question's score is in the file (the total must be right), as with GitHub Classroom; the
messages follow what students may see (a withheld question says so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from grader.judge.scorecard import Scorecard, rounded
from grader.outputs.feedback import question_passed
from grader.outputs.markdown import to_markdown
from grader.outputs.view import View, question_label

SCHEMA = "classroom50/result/v1"
SCALES = (1, 2, 3, 4, 5, 10, 20, 100)
STAMP = "%Y-%m-%dT%H:%M:%SZ"
EPS = 1e-6
ASSIGNMENT_TYPES = ("individual", "group")


@dataclass(frozen=True)
class Identity:
    """Who and what was graded, as the Classroom 50 runner says it in its environment."""

    classroom: str
    assignment: str
    owner: str
    submission: str
    commit: str
    release: str
    review: str
    submitted: datetime
    assignment_type: str = "individual"

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, classroom: str, assignment: str, owner: str, submitted: datetime | None = None
    ) -> Identity:
        """From the runner's variables (``CLASSROOM``, ``ASSIGNMENT``, ``OWNER`` or ``USERNAME``,
        ``SUBMISSION_TAG``, ``COMMIT_URL``, ``RELEASE_URL``, ``REVIEW_URL``, ``ASSIGNMENT_TYPE``);
        the keyword arguments stand in for the ones that are missing, as when the format is
        written outside a Classroom 50 run, so the file still validates."""

        def get(name: str) -> str:
            return (env.get(name) or "").strip()

        commit = get("COMMIT_URL") or f"local:{owner}"
        tag = get("SUBMISSION_TAG")
        kind = get("ASSIGNMENT_TYPE") or get("MODE")
        return cls(
            classroom=get("CLASSROOM") or classroom,
            assignment=get("ASSIGNMENT") or assignment,
            owner=get("OWNER") or get("USERNAME") or owner,
            submission=(tag if tag.startswith("submit/") else f"submit/{tag}") if tag else "submit/local",
            commit=commit,
            release=get("RELEASE_URL") or commit,
            review=get("REVIEW_URL") or commit,
            submitted=submitted or datetime.now(UTC),
            assignment_type=kind if kind in ASSIGNMENT_TYPES else "individual",
        )


def scale_for(maxima: list[float]) -> int:
    """The smallest factor in SCALES that makes every maximum whole (1 when none does)."""
    for s in SCALES:
        if all(abs(m * s - round(m * s)) < 1e-9 for m in maxima):
            return s
    return 1


def integer_points(scores: list[float], maxima: list[float]) -> tuple[int, list[int], list[int], int]:
    """(scale, per-question integer scores, per-question integer maxima, integer total): see the
    module docstring. The scores add up to the total, which is the exact total rounded down."""
    s = scale_for(maxima)
    tops = [max(0, round(m * s)) for m in maxima]
    exact = [min(max(0.0, x) * s, float(t)) for x, t in zip(scores, tops, strict=True)]
    # EPS absorbs float noise: three thirds of a point are one point, not 0.999...
    total = min(math.floor(sum(exact) + EPS), sum(tops))
    whole = [min(math.floor(x + EPS), t) for x, t in zip(exact, tops, strict=True)]
    left = max(0, total - sum(whole))
    by_fraction = sorted((i for i in range(len(exact)) if whole[i] < tops[i]), key=lambda i: (whole[i] - exact[i], i))
    for i in by_fraction[:left]:
        whole[i] += 1
    return s, whole, tops, total


def result(card: Scorecard, view: View, identity: Identity, *, now: datetime | None = None) -> dict[str, Any]:
    """The ``classroom50/result/v1`` document for one graded submission."""
    r = view.rounding
    shown = {q.id: q for q in view.questions}
    scale, scores, tops, total = integer_points(
        [q.score for q in card.questions], [q.max_score for q in card.questions]
    )
    tests = []
    for q, score, top in zip(card.questions, scores, tops, strict=True):
        s = shown.get(q.id)
        tests.append(
            {
                "test-name": question_label(q.id, q.title),
                "passed": question_passed(q),
                "score": score,
                "max-score": top,
                "message": "\n".join(s.feedback if s is not None else q.lines),
                "points": rounded(q.score, r),
                "max-points": rounded(q.max_score, r),
            }
        )
    return document(identity, total, sum(tops), tests, now=now)


def document(
    identity: Identity, score: int, max_score: int, tests: list[dict[str, Any]], *, now: datetime | None = None
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "classroom": identity.classroom,
        "assignment": identity.assignment,
        "assignment_type": identity.assignment_type,
        "owner": identity.owner,
        "submission": identity.submission,
        "commit": identity.commit,
        "release": identity.release,
        "review": identity.review,
        "datetime": identity.submitted.astimezone(UTC).strftime(STAMP),
        "graded_at": (now or datetime.now(UTC)).astimezone(UTC).strftime(STAMP),
        "score": score,
        "max-score": max_score,
        "tests": tests,
    }


def failure_result(
    identity: Identity, questions: list[tuple[str, float]], *, now: datetime | None = None
) -> dict[str, Any]:
    """A valid document for a submission that could not be graded: every question at zero,
    so the gradebook shows the submission with its full maximum."""
    scale, _, tops, _ = integer_points([0.0] * len(questions), [p for _, p in questions])
    tests = [
        {
            "test-name": name,
            "passed": False,
            "score": 0,
            "max-score": top,
            "message": "Not graded: see the release notes.",
        }
        for (name, _), top in zip(questions, tops, strict=True)
    ]
    return document(identity, 0, sum(tops), tests, now=now)


def release_body(view: View, data: dict[str, Any]) -> str:
    """The release page: the points Classroom 50 records, then the student's feedback."""
    head = f"### Autograder: {data['score']}/{data['max-score']}"
    exact = view.score_line
    note = (
        ""
        if exact == f"{data['score']}/{data['max-score']}"
        else f"\n\nThe gradebook keeps whole points; your exact score is {exact}."
    )
    return f"{head}{note}\n\n{to_markdown(view)}"


def failure_body(message: str) -> str:
    return f"### Autograder: not graded\n\n{message}\n"


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
