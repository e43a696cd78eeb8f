"""What the workers of a Dask cluster get: one assignment's grading materials, as plain data.

``bundle_for_workers`` is the one place that decides it (``grader.batch.cluster`` sends the
``Bundle`` it makes; ``grader.batch.dask_plugin`` grades from it on each worker). This module
imports no part of Dask.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.batch.store import code_digest
from grader.course.model import Assignment, Course
from grader.judge.grading import Grader


@dataclass(frozen=True)
class Bundle:
    """Everything a worker needs to grade one assignment's submissions, as plain data."""

    course: Course
    assignment: Assignment
    references: bytes  # the assignment's reference bundle (``References.save_bundle``), with the carry-forward steps
    data: tuple[tuple[str, bytes], ...]  # (path relative to the solution folder, content)
    executor: str
    code: str  # the client's code digest: a worker running other grader code refuses
    # The client's variant secret, so every worker draws a submission's own variants as the client
    # would (``References.variants_for``); empty when the client has none to give.
    variant_secret: bytes
    fingerprint: str


def bundle_for_workers(grader: Grader, assignment: Assignment, fingerprint: str) -> Bundle:
    """The one place that decides what workers receive: the reference bundle of the references
    this client computed (or was given), the data files, and the settings. The solution notebook
    itself never travels; its cells do, inside the bundle, as the steps the carry-forward runs
    execute (as in a Gradescope zip, which only the grader's container reads), so a worker grades
    a submission exactly as this machine would."""
    data = tuple((rel, (assignment.solution_dir / rel).read_bytes()) for rel in assignment.data)
    with tempfile.TemporaryDirectory(prefix="grader-bundle-") as tmp:
        path = grader.references.save_bundle(assignment, Path(tmp) / "references.json", solution_steps=True)
        references = path.read_bytes()
    try:
        secret = grader.references.variant_secret() if assignment.variants.per_submission else b""
    except OSError:
        secret = b""  # each worker then uses its own, or falls back to the course's variants
    return Bundle(
        course=grader.course,
        assignment=assignment,
        references=references,
        data=data,
        executor=grader.executor.name,
        code=code_digest(),
        fingerprint=fingerprint,
        variant_secret=secret,
    )
