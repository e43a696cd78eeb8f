"""The public checks file students get next to their skeleton (``public_checks.json``).

It says, per question, what each check looks at and what is expected *in kind*: the shape, the
kind of numbers, the properties. Reference values appear only for checks the instructor marked
``public: true``. ``grader check`` and ``grader.check()`` in a notebook run these.
"""

from __future__ import annotations

from grader import capture
from grader.course.model import Assignment
from grader.run.job import Captured


def public_checks(assignment: Assignment, reference: dict[str, Captured]) -> dict:
    questions = []
    for q in assignment.questions:
        checks = []
        for c in q.checks:
            item: dict = {"id": c.id, "kind": c.kind, "target": c.target, "properties": list(c.properties)}
            if c.before:
                item["before"] = c.before
            if c.seed is not None:
                item["seed"] = c.seed
            ref = reference.get(c.id)
            value = ref.value if ref is not None else None
            if value is not None:
                item["type"] = value.kind
                if value.shape is not None:
                    item["shape"] = list(value.shape)
                if value.kind == "array":
                    kind = capture.number_kind(value.data.dtype)
                    item["dtype_kind"] = kind.name if kind is not None else "other"
                if c.public:
                    item["value"] = capture.to_wire(value)
                    item["rtol"], item["atol"] = c.rtol, c.atol
            checks.append(item)
        questions.append({"id": q.id, "title": q.title, "points": q.points, "checks": checks})
    return {"assignment": assignment.name, "title": assignment.title, "questions": questions}
