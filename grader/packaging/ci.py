"""The GitHub Actions workflow that grades a class as a matrix of shards and merges them.

``grader ci-workflow NAME --shards N`` writes ``.github/workflows/grade-NAME.yml``: N jobs, each
``grader grade ... --shard K/N`` with its own results cache and artifact, then one job running
``grader merge`` over every shard's artifact (``grader.batch.shards``).
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.course.model import Assignment
from grader.errors import UsageError
from grader.packaging.gradescope import template

MAX_SHARDS = 256  # GitHub's limit on the jobs one matrix makes


def workflow(assignment: Assignment, *, shards: int, submissions: str, config_path: str = "config.yaml") -> str:
    if not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards must be from 1 to {MAX_SHARDS} (a GitHub Actions matrix), got {shards}.")
    for flag, value in (("--submissions", submissions), ("--config", config_path)):
        if not re.fullmatch(r"[A-Za-z0-9_.\-/]+", value) or ".." in Path(value).parts or value.startswith("/"):
            raise UsageError(f"{flag} must be a plain path inside the repository, got {value!r}.")
    return template(
        "shards.yml",
        assignment=assignment.name,
        shards=str(shards),
        submissions=submissions,
        config=config_path,
        matrix=", ".join(str(k) for k in range(1, shards + 1)),
    )


def write_workflow(
    assignment: Assignment, *, shards: int, submissions: str, out: Path, config_path: str | None = None
) -> Path:
    text = workflow(assignment, shards=shards, submissions=submissions, config_path=config_path or "config.yaml")
    path = Path(out) / ".github" / "workflows" / f"grade-{assignment.name}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
