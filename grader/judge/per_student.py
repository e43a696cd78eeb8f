"""Each student's own data: given inputs drawn per student, and the signed id that says whose they are.

An assignment with ``per_student:`` hands every student a notebook whose data cells hold inputs
drawn for that student alone (``draw``): from the course secret (the variant secret,
``variants.variant_secret``) and the student's id, so the same roster always gives the same
notebooks and nobody without the secret can work out another student's data. The notebook's
metadata carries the student's id, the assignment and an HMAC of both under the secret
(``stamp``); a student who edits the id breaks the signature.

Grading reads the stamp back (``identify``) and compares it with who handed the notebook in (the
folder it came from, the platform's submission metadata): the solution then runs on the inputs of
the student the grader expects (``References.for_student``), so answers computed on a classmate's
data, or on the generic skeleton's, do not match and earn nothing, and the scorecard records which
it was (``scorecard.StudentData``). The drawn values go into a run as a variant numbered 0 (``as_variant``):
the solution's statements that define those inputs are followed by the student's values, exactly
as hidden variants are swapped in; hidden variants still apply on top.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from grader import capture
from grader.course.model import Assignment, Course, PerStudentInput, PerStudentSpec
from grader.errors import SolutionError
from grader.judge import variants
from grader.judge.scorecard import Feedback, Scorecard, StudentData, with_questions
from grader.judge.variants import Variant
from grader.run.job import Captured
from grader.vocab import FeedbackKind, QuestionStatus, StudentDataStatus

META_KEY = "grader"  # the notebook metadata's section; ``student`` inside it is the stamp
STAMP_KEY = "student"


def _spec(assignment: Assignment) -> PerStudentSpec:
    if assignment.per_student is None:
        raise SolutionError(f"{assignment.name} has no `per_student:` section in config.yaml")
    return assignment.per_student


def _mac(secret: bytes, purpose: str, assignment: str, student: str) -> bytes:
    message = json.dumps([purpose, assignment, student]).encode()  # unambiguous whatever the id holds
    return hmac.new(secret, message, hashlib.sha256).digest()


def student_seed(secret: bytes, assignment: str, student: str) -> int:
    """The seed of one student's inputs: unpredictable without the course secret."""
    return int.from_bytes(_mac(secret, "per-student data", assignment, student)[:8], "little")


def signature(secret: bytes, assignment: str, student: str) -> str:
    return _mac(secret, "per-student id", assignment, student).hex()[:32]


def _plain(value: Any) -> Any:
    """A drawn value as plain Python, numpy arrays kept (what a data cell's literal can say)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def draw(
    assignment: Assignment, secret: bytes, student: str, given: dict[str, capture.Value] | None = None
) -> dict[str, Any]:
    """The student's inputs, name -> value, in ``per_student.inputs`` order. ``given``: the
    solution's values of the given inputs (``Reference.given``), which a rule sees as ``value`` and
    ``shape`` and a null rule draws the like of. Raises SolutionError naming the rule that fails or
    gives a value no data cell can hold."""
    spec = _spec(assignment)
    seed = student_seed(secret, assignment.name, student)
    out: dict[str, Any] = {}
    for item in spec.inputs:
        digest = hashlib.sha256(f"{seed}/{item.name}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        original = (given or {}).get(item.name)
        if item.choices:
            value: Any = item.choices[int(rng.integers(len(item.choices)))]
        elif not item.rule:
            if original is None:
                raise SolutionError(
                    f"`{item.name}` of {assignment.name} is drawn like the solution's value, which is not known here"
                )
            value = variants.random_like(original, rng)
        else:
            scope: dict[str, Any] = {"rng": rng, "np": np}
            if original is not None:
                scope.update(value=variants.plain(original), shape=original.shape)
            try:
                value = eval(compile(item.rule, f"<per_student.inputs.{item.name}>", "eval"), scope)  # noqa: S307 - config
            except Exception as exc:  # noqa: BLE001 - any Python from config.yaml: name its failure
                raise SolutionError(
                    f"The per-student rule for `{item.name}` in {assignment.name} fails: {type(exc).__name__}: {exc}"
                ) from None
        value = _plain(value)
        try:
            literal(value)
        except TypeError as exc:
            raise SolutionError(f"The per-student rule for `{item.name}` in {assignment.name} gives {exc}") from None
        out[item.name] = value
    return out


def as_variant(values: dict[str, Any]) -> Variant:
    """The student's inputs as a variant numbered 0, swapped in where a notebook defines them."""
    return Variant(
        number=0,
        values={n: capture.to_wire(capture.decode(capture.encode(v, budget=[64 << 20]))) for n, v in values.items()},
    )


def literal(value: Any) -> str:
    """Python source for a drawn value, as a data cell writes it (``np.array([...], dtype=...)``
    for an array). Raises TypeError for a value no literal holds."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"an array of {value.dtype}, which no data cell can write")
        return f"np.array({_lit(value.tolist())}, dtype={str(value.dtype)!r})"
    return _lit(value)


def _lit(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, complex):
        return f"complex({_lit(value.real)}, {_lit(value.imag)})"
    if isinstance(value, list):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    if isinstance(value, tuple):
        return (
            "(" + "".join(_lit(v) + ", " for v in value) + ")"
            if len(value) == 1
            else "(" + ", ".join(_lit(v) for v in value) + ")"
        )
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in value.items()) + "}"
    raise TypeError(
        f"a {type(value).__name__}, which no data cell can write (use numbers, strings, lists or numpy arrays)"
    )


def stamp(secret: bytes, assignment: str, student: str) -> dict[str, str]:
    """What a student's notebook metadata carries under ``grader.student``."""
    return {"id": student, "assignment": assignment, "signature": signature(secret, assignment, student)}


@dataclass(frozen=True)
class StudentInputs:
    """A per-student submission's data (``References.student_inputs``): whose it holds
    (``record``), what the student is told when it is not their own, the reference values on the
    inputs it is graded on and those inputs as a variant numbered 0 (both None when it is graded on
    nobody's: then nothing is paid), and the inputs drawn per student (``record_spec``)."""

    record: StudentData
    told: str
    captures: dict[str, Captured] | None = None
    variant: Variant | None = None

    def ran_on(self, changed: list[str]) -> StudentInputs:
        """Once the notebook ran: ``changed``, the given inputs its run holds other values of
        (``Context.changed_givens``), says whether it held the student's own data."""
        names = {i.name for i in self.record_spec}
        return replace(self, record=replace(self.record, own_data=not names & set(changed)))

    record_spec: tuple[PerStudentInput, ...] = ()


def settle(card: Scorecard, own: StudentInputs) -> Scorecard:
    """A per-student card once graded. A notebook that is not the student's own (a classmate's, the
    generic skeleton, an edited id) and whose run did not hold the student's own inputs earns
    nothing: its answers were computed on someone else's data, or copied with the notebook; one
    that holds them (an id edited in the student's own notebook) keeps its points. A flagged card
    says which it was."""
    record = card.student_data or own.record
    if not record.flagged:
        return card
    if record.own_data:
        return replace(card, reason=card.reason or own.told)
    questions = tuple(
        replace(
            q,
            score=0.0,
            status=QuestionStatus.FAILED,
            feedback=(
                *(f for f in q.feedback if f.kind != FeedbackKind.CORRECT),
                Feedback(FeedbackKind.NOTE, own.told),
            ),
        )
        if q.score
        else q
        for q in card.questions
    )
    return replace(with_questions(card, questions), reason=card.reason or own.told)


def read_stamp(path: Path) -> dict[str, Any] | None:
    """The ``grader.student`` stamp of a notebook file; None when it has none or cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = data["metadata"][META_KEY][STAMP_KEY]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if isinstance(found, dict) else None


def identify(
    found: dict[str, Any] | None,
    assignment: Assignment,
    secret: bytes | Callable[[str], str],
    expected: str,
    *,
    made_for: str = "",
) -> StudentData:
    """Whose data a notebook with stamp ``found`` holds, handed in by ``expected`` ("" unknown).
    ``secret``: the course secret, or what gives a student id's signature ("" for an unknown id);
    ``made_for``: the other assignment an unstamped notebook looks made for (``made_for``)."""
    if not found:
        if made_for:
            return StudentData(StudentDataStatus.OTHER_ASSIGNMENT, expected=expected, made_for=made_for)
        return StudentData(StudentDataStatus.GENERIC, expected=expected, graded_on=expected)
    claimed = str(found.get("id", ""))
    if found.get("assignment") != assignment.name:
        other = str(found.get("assignment", ""))
        return StudentData(StudentDataStatus.OTHER_ASSIGNMENT, notebook_id=claimed, expected=expected, made_for=other)
    valid = secret(claimed) if callable(secret) else signature(secret, assignment.name, claimed)
    good = bool(valid) and hmac.compare_digest(str(found.get("signature", "")), valid)
    if not good:
        return StudentData(StudentDataStatus.EDITED, notebook_id=claimed, expected=expected, graded_on=expected)
    if expected and claimed != expected:
        return StudentData(StudentDataStatus.CLASSMATE, notebook_id=claimed, expected=expected, graded_on=expected)
    return StudentData(StudentDataStatus.OWN, notebook_id=claimed, expected=expected, graded_on=claimed)


def expected_student(assignment: Assignment, student: str) -> str:
    """Who handed a submission in, as far as its place says: the folder (or file) name the batch
    gives, unless that is only the assignment's own file name."""
    student = student.strip()
    if student in ("", assignment.name, assignment.skeleton.stem, assignment.solution.stem):
        return ""
    return student


def submitter(path: Path, aliases: tuple[str, ...]) -> str:
    """Who handed ``path`` in, from a platform's names for the submitters (Gradescope's users: their
    email, student id, user id): the one the notebook's stamp names when it names one of them (so a
    roster keyed by any of these works), else the first; "" without any."""
    stamp = read_stamp(path)
    claimed = str(stamp.get("id", "")) if stamp else ""
    return claimed if claimed and claimed in aliases else (aliases[0] if aliases else "")


def made_for(path: Path, course: Course, assignment: Assignment) -> str:
    """The other assignment of the course an unstamped notebook was made for, told by its text
    cells: more of them are another assignment's skeleton's than this one's; "" otherwise."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        mine = {_text(c.get("source", "")).strip() for c in cells if c.get("cell_type") == "markdown"}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ""
    mine.discard("")
    score = {a.name: len(mine & _skeleton_text_cells(a.skeleton)) for a in course.assignments.values()}
    best = max((n for n in score if n != assignment.name), key=lambda n: score[n], default="")
    return best if best and score[best] > score.get(assignment.name, 0) else ""


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _skeleton_text_cells(path: Path) -> frozenset[str]:
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    return _text_cells(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _text_cells(path: str, mtime: int, size: int) -> frozenset[str]:
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        found = {_text(c.get("source", "")).strip() for c in cells if c.get("cell_type") == "markdown"}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return frozenset()
    # the first cell ends with how to check one's work: the same note in every assignment's skeleton
    return frozenset(t for t in found if t and "Check your work before you submit" not in t)
