"""The public checks file students get next to their skeleton (``public_checks.json``): written here
from the course and the reference (``public_checks``), and read back here for the self-check
(``load``, ``locate``).

It says, per question, what each check looks at and what is expected *in kind*: the shape, the
kind of numbers, the properties. Reference values appear only for checks the instructor marked
``public: true``. ``grader check`` and ``grader.check()`` in a notebook run these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader import capture
from grader.capture import Value
from grader.course.kinds import KINDS
from grader.course.model import Assignment, CellSeed, Check
from grader.errors import ProtocolError, UsageError
from grader.run.job import Captured

PUBLIC_CHECKS = "public_checks.json"  # written next to the skeleton by ``grader assign``


def public_checks(assignment: Assignment, reference: dict[str, Captured]) -> dict[str, Any]:
    questions = []
    for q in assignment.questions:
        checks = []
        for c in q.checks:
            if c.is_test:
                continue  # a test's source and expected values stay with the grader
            item: dict[str, Any] = {"id": c.id, "kind": c.kind, "target": c.target, "properties": list(c.properties)}
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
        questions.append(
            {
                "id": q.id,
                "title": q.title,
                "points": q.points,
                "checks": checks,
                **({"manual": True} if q.manual else {}),
            }
        )
    out: dict[str, Any] = {"assignment": assignment.name, "title": assignment.title, "questions": questions}
    seed = assignment.seed_each_cell
    if seed is not None:  # the student's own check runs the cells seeded as grading runs them
        out["seed_each_cell"] = {"seed": seed.seed, "variable": seed.variable}
    return out


@dataclass(frozen=True)
class PublicCheck:
    id: str
    kind: str  # value | expr
    target: str
    properties: tuple[str, ...] = ()
    before: str | None = None
    seed: int | None = None
    type: str | None = None  # the reference's kind: array, str, list, dict, frame, ...
    shape: tuple[int, ...] | None = None
    dtype_kind: str | None = None  # float | int | bool | complex
    value: Value | None = None  # only when the instructor made it public
    rtol: float = 1e-5
    atol: float = 1e-8

    @property
    def label(self) -> str:
        return f"`{self.target}`"

    def as_check(self, question_id: str) -> Check:
        return Check(
            id=self.id,
            question_id=question_id,
            kind=self.kind,
            target=self.target,
            points=None,
            rtol=self.rtol,
            atol=self.atol,
            strict_types=False,
            seed=self.seed,
            before=self.before,
            properties=self.properties,
            compare=self.value is not None,
        )

    def expected(self) -> Value | None:
        """What the checks compare against: the public value, or a stand-in with the public shape and
        kind of numbers (zeros), which only type, shape and dtype-kind judgements ever look at."""
        if self.value is not None:
            return self.value
        if self.type == "array" and self.shape is not None:
            dtype = next((k.dtype for k in capture.NUMBER_KINDS if k.name == self.dtype_kind), "float64")
            return Value(
                "array", np.zeros(self.shape, dtype=dtype), origin="array of numbers", dtype=self.dtype_kind or ""
            )
        return None


@dataclass(frozen=True)
class PublicQuestion:
    id: str
    title: str
    points: float
    checks: tuple[PublicCheck, ...]
    manual: bool = False  # graded by a person: the self-check only says whether it is answered


@dataclass(frozen=True)
class PublicChecks:
    assignment: str
    title: str
    questions: tuple[PublicQuestion, ...]
    path: Path
    seed_each_cell: CellSeed | None = None

    @property
    def folder(self) -> Path:
        return self.path.parent

    def question(self, qid: str) -> PublicQuestion:
        for q in self.questions:
            if q.id == qid:
                return q
        known = ", ".join(q.id for q in self.questions)
        raise UsageError(f"{self.assignment} has no question {qid!r}; its questions are: {known}.")


def load(path: Path) -> PublicChecks:
    """Parse a public checks file; a malformed one is a UsageError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        questions = []
        for q in data["questions"]:
            checks = []
            for c in q["checks"]:
                value = capture.decode(c["value"]) if "value" in c else None
                if c["kind"] not in KINDS:
                    raise ValueError(f"unknown check kind {str(c['kind'])[:20]!r}")
                checks.append(
                    PublicCheck(
                        id=str(c["id"]),
                        kind=str(c["kind"]),
                        target=str(c["target"]),
                        properties=tuple(str(p) for p in c.get("properties", [])),
                        before=c.get("before"),
                        seed=c.get("seed"),
                        type=c.get("type"),
                        shape=tuple(int(n) for n in c["shape"]) if c.get("shape") is not None else None,
                        dtype_kind=c.get("dtype_kind"),
                        value=value,
                        rtol=float(c.get("rtol", 1e-5)),
                        atol=float(c.get("atol", 1e-8)),
                    )
                )
            questions.append(
                PublicQuestion(
                    str(q["id"]),
                    str(q.get("title", q["id"])),
                    float(q.get("points", 0)),
                    tuple(checks),
                    manual=bool(q.get("manual", not checks)),
                )
            )
        seed = data.get("seed_each_cell")
        cell_seed = CellSeed(seed=int(seed["seed"]), variable=str(seed.get("variable", ""))) if seed else None
        return PublicChecks(
            str(data["assignment"]), str(data.get("title", data["assignment"])), tuple(questions), path, cell_seed
        )
    except FileNotFoundError:
        raise UsageError(f"{path} does not exist.") from None
    except (OSError, ValueError, KeyError, TypeError, ProtocolError) as exc:
        raise UsageError(f"{path} is not a readable public checks file ({type(exc).__name__}: {exc}).") from None


def locate(
    *,
    notebook_path: Path | None = None,
    assignment: str | None = None,
    explicit: str | Path | None = None,
    question: str | None = None,
    start: Path | None = None,
) -> Path:
    """Find public_checks.json: --checks, then next to the notebook or here, then assignments/NAME/
    in this folder or a parent (NAME from --assignment or the notebook's name)."""
    if explicit:
        return Path(explicit)
    here = (start or Path.cwd()).resolve()
    dirs = [notebook_path.resolve().parent] if notebook_path is not None else []
    dirs.append(here)
    for d in dirs:
        p = d / PUBLIC_CHECKS
        if p.is_file() and (assignment is None or _assignment_of(p) == assignment):
            return p
    names = [n for n in (assignment, notebook_path.stem if notebook_path is not None else None) if n]
    found: list[Path] = []
    for d in dirs:
        for up in (d, *d.parents):
            for name in names:
                p = up / "assignments" / name / PUBLIC_CHECKS
                if p.is_file():
                    return p
            if not names and not found:
                found = sorted((up / "assignments").glob(f"*/{PUBLIC_CHECKS}"))
    if question is not None and len(found) > 1:
        found = [p for p in found if question in {q.id for q in load(p).questions}]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        which = ", ".join(p.parent.name for p in found)
        raise UsageError(
            f"Several assignments have public checks ({which}); say which one: "
            "check(..., assignment=NAME) or grader check NOTEBOOK --assignment NAME."
        )
    raise UsageError(
        f"No {PUBLIC_CHECKS} found next to the notebook, here, or in assignments/"
        f"{names[0] if names else 'NAME'}/ above; pass --checks PATH (or checks=PATH)."
    )


def _assignment_of(path: Path) -> str | None:
    try:
        name = json.loads(path.read_text(encoding="utf-8")).get("assignment")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None
