"""Classroom 50 packaging: the ``autograders/<slug>/`` folder, and the entry point it calls.

``grader classroom50-autograder NAME`` writes ``OUT/autograders/<slug>/`` for the course's
Classroom 50 configuration repository: ``autograder.py`` (from grader/templates/), ``course/`` (the
grading materials without the solution: a reduced config.yaml, the skeleton, the data files and the
reference bundle, as in the Gradescope zip), ``grader-src/`` and ``constraints.txt``
(grader.packaging.stage). Classroom 50 publishes the folder
as the assignment's bundle; on every submission its runner runs ``autograder.py`` with the working
directory at the student's checkout.

``autograder.py`` finds a Python with this grader (or installs one), then runs
``python -m grader.packaging.classroom50``, which finds the notebook in the checkout, grades it and
writes ``./result.json`` (``classroom50/result/v1``, grader.outputs.classroom50) and
``./release-body.md``. Whatever happens to the submission (no notebook, a file that is not one, a
notebook that crashes) both files are written, in words for the student, and the exit status is 0.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from grader import __version__
from grader.course import config
from grader.course.model import Assignment, Course
from grader.errors import GraderError, UsageError
from grader.files import write_atomic
from grader.outputs import classroom50
from grader.outputs.view import question_label, student_view
from grader.packaging.gradescope import AUTOGRADER_BROKEN, find_submission, stage_grader, stage_grading, template
from grader.packaging.stage import stage_constraints

TEMPLATE = "classroom50_autograder"
RESULT = "result.json"
BODY = "release-body.md"
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{1,38}")  # Classroom 50's short names


def slug_for(assignment: Assignment, slug: str | None = None) -> str:
    """The assignment's Classroom 50 slug: given, or its name in lower case with hyphens."""
    text = slug if slug is not None else assignment.name.lower().replace("_", "-")
    if not SLUG.fullmatch(text):
        raise UsageError(
            f"{text!r} is not a Classroom 50 assignment slug (2 to 39 characters: lower-case letters, "
            "digits and hyphens, not starting with a hyphen); give one with --slug."
        )
    return text


# --------------------------------------------------------------------------------------------
# At grading time, in the student's checkout


def submitted_at(checkout: Path, env: Mapping[str, str]) -> datetime | None:
    """The graded commit's committer date, which Classroom 50 takes as the submission time (a
    regrade never moves it); None outside a git checkout."""
    sha = (env.get("GITHUB_SHA") or "").strip() or "HEAD"
    try:
        out = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(checkout), "log", "-1", "--format=%cI", sha],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        return datetime.fromisoformat(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None
    except ValueError:
        return None


def run(checkout: Path, config_path: Path, assignment_name: str, env: Mapping[str, str] | None = None) -> Path:
    """Grade the notebook in ``checkout`` and write ``result.json`` and ``release-body.md`` there;
    returns the result's path. Never raises for anything about the submission or the grading."""
    from grader.judge.grading import Grader
    from grader.run.subprocess_executor import SubprocessExecutor

    env = os.environ if env is None else env
    checkout = checkout.resolve()
    owner = (env.get("OWNER") or env.get("USERNAME") or env.get("GITHUB_ACTOR") or "").strip() or checkout.name
    identity = classroom50.Identity.from_env(
        env,
        classroom=env.get("CLASSROOM") or "classroom",
        assignment=assignment_name,
        owner=owner,
        submitted=submitted_at(checkout, env),
    )
    assignment: Assignment | None = None
    try:
        course = config.load(config_path)
        assignment = course.assignment(assignment_name)
        path = find_submission(checkout, assignment, verb="commit")
        # One notebook per run: a fresh process is quicker than starting the warm forking server.
        card = Grader(course, SubprocessExecutor()).grade(assignment, path, student=owner)
        view = student_view(card, assignment, course.scorecard)
        data = classroom50.result(card, view, identity)
        body = classroom50.release_body(view, data)
        print(
            f"graded {path.relative_to(checkout)}: {card.status}, {card.score:g}/{card.max_score:g} "
            f"(recorded as {data['score']}/{data['max-score']})"
        )
    except UsageError as exc:  # about the submission itself
        data, body = _failure(identity, assignment, str(exc))
        print(f"not graded: {exc}")
    except (GraderError, KeyError) as exc:
        data, body = _failure(identity, assignment, AUTOGRADER_BROKEN.format(error=_sentence(exc)))
        print(f"grading failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the student still gets a result
        traceback.print_exc()  # the Actions log
        data, body = _failure(identity, assignment, AUTOGRADER_BROKEN.format(error=f"{type(exc).__name__}."))
    write_atomic(checkout / BODY, body)
    return write_atomic(checkout / RESULT, classroom50.to_json(data))


def _failure(
    identity: classroom50.Identity, assignment: Assignment | None, message: str
) -> tuple[dict[str, object], str]:
    questions = [(question_label(q.id, q.title), float(q.points)) for q in assignment.questions] if assignment else []
    return classroom50.failure_result(identity, questions), classroom50.failure_body(message)


def _sentence(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if text.endswith(".") else text + "."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.packaging.classroom50")
    ap.add_argument("--checkout", default=".", help="the student's repository (default: here)")
    ap.add_argument("--config", required=True)
    ap.add_argument("--assignment", required=True)
    args = ap.parse_args(argv)
    run(Path(args.checkout), Path(args.config), args.assignment)
    return 0


# --------------------------------------------------------------------------------------------
# Writing the folder, on the instructor's machine


def build_folder(
    course: Course, assignment: Assignment, out: Path, slug: str | None = None, roster: Path | None = None
) -> Path:
    """Write ``out/autograders/<slug>/`` (replacing an earlier one); runs the solution (unless its
    references are cached) for the reference bundle. With ``per_student:``, ``roster`` (the one the
    notebooks were written from; ids are GitHub logins) gives the table of its students' data
    (grader.judge.students): no course secret and no solution code go into the folder. Returns the folder."""
    name = slug_for(assignment, slug)
    students: list[str] = []
    if assignment.per_student is not None:
        if roster is None:
            raise UsageError(
                f"{assignment.name} hands each student their own data: give --roster, the roster its notebooks "
                "were written from (its ids: the students' GitHub logins)."
            )
        from grader.authoring.per_student import read_roster

        students = read_roster(roster)
    folder = Path(out) / "autograders" / name
    if folder.exists():
        if not (folder / "autograder.py").is_file():
            raise UsageError(f"{folder} exists and holds no autograder.py; remove it or choose another --out.")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    stage_grading(course, assignment, folder / "course", students=students)
    stage_grader(folder / "grader-src")
    stage_constraints(folder / "constraints.txt")
    script = folder / "autograder.py"
    script.write_text(template(TEMPLATE, assignment=assignment.name, version=__version__), encoding="utf-8")
    script.chmod(0o755)
    return folder


if __name__ == "__main__":
    sys.exit(main())
