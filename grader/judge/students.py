"""Each student's own data at grading time (``per_student``): whose data a notebook holds, and the
solution's values on the inputs it is graded on, cached per student.

``Students.inputs`` reads a submission's stamp (grader.judge.per_student), checks it against who
handed it in, and gives the reference values on that student's inputs: the solution's steps run
with the student's draw swapped in (``for_student``, cached in memory and on disk by the student's
seed, like a submission's own variants), or, where grading has neither the solution nor the course
secret (a Classroom 50 autograder, which students may read), read from the table of the roster's
students written beside the reference bundle (``save_table``): each student's signature, inputs
and reference values, so no secret and no solution code travel there.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.course.model import Assignment
from grader.errors import ProtocolError, SolutionError
from grader.files import write_atomic
from grader.judge import per_student, variants, wording
from grader.judge.jobs import JobTemplate
from grader.judge.reference import OWN_VARIANT_SETS, References
from grader.run.job import Captured
from grader.vocab import RunStatus

TABLE_SUFFIX = ".students.json"  # beside a reference bundle: the roster's students, for graders without the secret


def table_path(bundle: Path) -> Path:
    return bundle.with_name(bundle.name.removesuffix(".json").removesuffix(".references") + TABLE_SUFFIX)


class Students:
    """The per-student side of one ``References``: the same course, executor, cache and secret."""

    def __init__(self, references: References) -> None:
        self.refs = references
        # (reference key, a student's seed) -> the reference values on that student's inputs
        self._memo: OrderedDict[tuple[str, int], dict[str, Captured]] = OrderedDict()
        self._lock = threading.Lock()
        self._templates: dict[str, JobTemplate] = {}
        self._tables: dict[str, dict[str, Any] | None] = {}

    def course_secret(self) -> bytes:
        """The secret per-student notebooks were drawn and signed with: given, ``GRADER_VARIANT_SECRET``
        or the course cache's file, never a new one (every stamp would then look edited). Raises
        SolutionError saying what to set up."""
        where = self.refs.course.cache_dir / variants.SECRET_FILE
        if self.refs.secret is None and not os.environ.get(variants.SECRET_ENV) and not where.is_file():
            raise SolutionError(
                f"Per-student notebooks are signed with the course secret, which this grader does not have: set "
                f"{variants.SECRET_ENV} to the secret `grader assign --per-student` used (the course's {where.name} "
                f"file in its cache folder), or copy that file to {where}."
            )
        try:
            return self.refs.variant_secret()
        except OSError as exc:
            raise SolutionError(f"The course secret cannot be read: {exc}") from None

    def inputs(self, assignment: Assignment, path: Path, student: str) -> per_student.StudentInputs:
        """Whose data the per-student submission at ``path``, handed in by ``student`` (its folder,
        the platform's metadata; "" when nothing says), holds, and the inputs it is graded on."""
        table = self._table(assignment)
        sign: Callable[[str], str]
        if table is not None:
            sign = lambda sid: str(table.get(sid, {}).get("signature", ""))  # noqa: E731 - one line
        else:
            secret = self.course_secret()
            sign = lambda sid: per_student.signature(secret, assignment.name, sid)  # noqa: E731 - one line
        stamp = per_student.read_stamp(path)
        other = per_student.made_for(path, self.refs.course, assignment) if stamp is None else ""
        expected = per_student.expected_student(assignment, student)
        record = per_student.identify(stamp, assignment, sign, expected, made_for=other)
        spec = assignment.per_student.inputs if assignment.per_student else ()
        if record.graded_on and table is not None and record.graded_on not in table:
            record = replace(record, graded_on="", not_on_roster=True)
        told = wording.student_data(record, assignment.name)
        if not record.graded_on:
            return per_student.StudentInputs(record, told, record_spec=spec)
        if table is not None:
            entry = table[record.graded_on]
            mine = variants.Variant(number=0, values=dict(entry["values"]))
            return per_student.StudentInputs(record, told, References.decode(entry["captures"]), mine, spec)
        given = self.refs.get(assignment).given()
        mine = per_student.as_variant(per_student.draw(assignment, self.course_secret(), record.graded_on, given))
        return per_student.StudentInputs(record, told, self.for_student(assignment, record.graded_on), mine, spec)

    def for_student(self, assignment: Assignment, student: str) -> dict[str, Captured]:
        """The reference values on ``student``'s own inputs: the solution's steps run with that
        student's draw swapped in where the solution defines them, hint values included; cached in
        memory (the latest few) and on disk by the student's seed. Raises SolutionError when the
        solution fails on them."""
        ref = self.refs.get(assignment)
        secret = self.refs.variant_secret()
        seed = per_student.student_seed(secret, assignment.name, student)
        memo = (ref.key, seed)
        with self._lock:
            if memo in self._memo:
                self._memo.move_to_end(memo)
                return self._memo[memo]
        name = f"{assignment.name}-{ref.key[:12]}-{hashlib.sha256(str(seed).encode()).hexdigest()[:20]}.json"
        path = self.refs.course.cache_dir / "references" / "students" / name
        try:
            captures = References.decode(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            captures = self._run(assignment, student, secret)
            write_atomic(path, json.dumps(References.encode(captures)))
        with self._lock:
            self._memo[memo] = captures
            while len(self._memo) > OWN_VARIANT_SETS:
                self._memo.popitem(last=False)
        return captures

    def _run(self, assignment: Assignment, student: str, secret: bytes) -> dict[str, Captured]:
        cells, infos = self.refs.solution_steps(assignment)
        if assignment.name not in self._templates:
            jobs = JobTemplate.of(assignment, cells, infos, assignment.solution, hints=True, skip=set())
            jobs.base = replace(
                jobs.base,
                files=tuple(f for f in jobs.base.files if f[0] != assignment.solution),
                stay=True,
                trusted=True,
            )
            self._templates[assignment.name] = jobs
        given = self.refs.get(assignment).given()
        variant = per_student.as_variant(per_student.draw(assignment, secret, student, given))
        with self.refs.executor.session(reuse=("solution", assignment.name)) as session:
            run = session.run(self._templates[assignment.name].job(variant))
        if run.status != RunStatus.OK or run.errors:
            why = run.reason
            if run.errors:
                why = f"cell {run.errors[0].index} raises {run.errors[0].ename}: {run.errors[0].evalue}"
            raise SolutionError(
                f"The solution of {assignment.name} fails on the inputs drawn for student {student!r}: {why}. "
                "Fix the `per_student:` rules in config.yaml (`grader validate` tries a sample of draws)."
            )
        return run.captures

    def save_table(self, assignment: Assignment, path: Path, students: Sequence[str]) -> Path:
        """Write the roster's students (signature, inputs, reference values of each) to ``path``,
        readable by the grader's uid only, for grading without the secret or the solution."""
        secret = self.refs.variant_secret()
        given = self.refs.get(assignment).given()
        table = {
            sid: {
                "signature": per_student.signature(secret, assignment.name, sid),
                "values": per_student.as_variant(per_student.draw(assignment, secret, sid, given)).values,
                "captures": References.encode(self.for_student(assignment, sid)),
            }
            for sid in students
        }
        write_atomic(path, json.dumps({"assignment": assignment.name, "students": table}))
        os.chmod(path, 0o600)
        return path

    def _table(self, assignment: Assignment) -> dict[str, Any] | None:
        """The roster's students beside the assignment's reference bundle, or None (no such file)."""
        if assignment.bundle is None:
            return None
        path = table_path(assignment.bundle)
        if str(path) not in self._tables:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = None
            except (OSError, ValueError) as exc:
                raise SolutionError(f"The students' table {path} of {assignment.name} cannot be read: {exc}") from None
            self._tables[str(path)] = data["students"] if isinstance(data, dict) else None
        return self._tables[str(path)]
