"""Gradescope packaging: the autograder zip, and the entry point its ``run_autograder`` calls.

The zip (``grader gradescope-zip NAME``) holds, at its root, ``setup.sh`` and ``run_autograder``
(from grader/templates/), ``course/`` (a config.yaml reduced to this assignment, the skeleton,
and ``grading/NAME/``: the data files and the assignment's reference bundle, so Gradescope never
runs the solution), ``grader-src/`` (this package, installed by setup.sh) and ``constraints.txt``
(the library versions setup.sh installs) and ``requirements.txt`` (what grading this assignment
installs besides the grader's light dependencies: the libraries its notebooks import, so a NumPy
assignment never installs torch; grader.packaging.stage). No solution is
shipped: the bundle holds the reference values (data and every variant), hint values and the
skipped cells' sources, readable by the grader's uid only; grading from it gives the scorecards
grading from ``solutions/`` gives.

At grading time ``python -m grader.packaging.gradescope`` finds the student's notebook in
``ROOT/submission``, grades it, and writes ``ROOT/results/results.json``. ROOT is Gradescope's
``/autograder`` unless ``AUTOGRADER_ROOT`` says otherwise, for both scripts and this module alike
(``ROOT_LINE``, ``DEFAULT_ROOT``). Whatever
happens (no notebook, a file that is not one, a broken setup) a results file is written that says
why, in words for the student.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import yaml

from grader import PACKAGE_DIR
from grader.course import config
from grader.course.imports import preload_for
from grader.course.model import Assignment, Course
from grader.errors import GraderError, UsageError
from grader.files import write_atomic
from grader.judge.students import table_path
from grader.judge.variants import SECRET_FILE
from grader.outputs import gradescope
from grader.packaging.stage import stage_constraints, stage_requirements

DEFAULT_ROOT = "/autograder"  # where Gradescope unpacks the zip (source/) and the submission
ROOT_VARIABLE = "AUTOGRADER_ROOT"
ROOT_LINE = f'ROOT="${{{ROOT_VARIABLE}:-{DEFAULT_ROOT}}}"'  # the scripts' one line for it
SETUP = "gradescope_setup.sh"
RUN = "gradescope_run_autograder"
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX"}
AUTOGRADER_BROKEN = (
    "The autograder could not grade this submission: {error} This is a problem with the "
    "autograder, not with your work; please tell your instructor."
)


def template(name: str, **values: str) -> str:
    text = resources.files("grader").joinpath("templates", name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@{key.upper()}@", value)
    return text


# --------------------------------------------------------------------------------------------
# At grading time, inside Gradescope's container


def find_submission(folder: Path, assignment: Assignment, *, verb: str = "upload") -> Path:
    """The notebook to grade, or a UsageError whose message tells the student what to ``verb``
    (upload, or commit in a repository)."""
    want = f"{assignment.name}.ipynb"
    found = sorted(p for p in folder.rglob("*.ipynb") if p.is_file() and not _skipped(p.relative_to(folder)))
    for p in found:
        if p.name == want:
            return p
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(p.name for p in found[:5])
        raise UsageError(f"The submission holds {len(found)} notebooks ({names}); {verb} only {want}.")
    others = sorted(p.name for p in folder.rglob("*") if p.is_file() and not _skipped(p.relative_to(folder)))[:5]
    what = f" (it holds: {', '.join(others)})" if others else " (it is empty)"
    raise UsageError(f"The submission has no notebook (.ipynb file){what}; {verb} {want}.")


def _skipped(rel: Path) -> bool:
    """Editor and system folders, and hidden ones (``.git``, ``.github``), are never the submission."""
    return bool(SKIP_DIRS & set(rel.parts)) or any(part.startswith(".") for part in rel.parts[:-1])


def run(root: Path, config_path: Path, assignment_name: str) -> Path:
    """Grade the submission under ``root`` and write ``root/results/results.json``; never raises."""
    from grader.judge.grading import Grader
    from grader.run.subprocess_executor import SubprocessExecutor

    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    assignment = None
    try:
        course = config.load(config_path)
        assignment = course.assignment(assignment_name)
        path = find_submission(root / "submission", assignment)
        student = ""
        if assignment.per_student is not None:  # graded on the data of who Gradescope says handed it in
            from grader.judge.per_student import submitter

            student = submitter(path, submitters(root))
        # One notebook per container: a fresh process is quicker than starting the warm forking server.
        card = Grader(course, SubprocessExecutor()).grade(assignment, path, student=student)
        data = gradescope.results(card, assignment, course.scorecard)
        print(f"graded {path.name}: {card.status}, {card.score:g}/{card.max_score:g}")
    except UsageError as exc:  # about the submission itself
        data = gradescope.failure_results(str(exc), assignment)
        print(f"not graded: {exc}")
    except (GraderError, KeyError) as exc:
        data = gradescope.failure_results(AUTOGRADER_BROKEN.format(error=_sentence(exc)), assignment)
        print(f"grading failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - the student still gets a results file
        traceback.print_exc()  # stdout is shown to instructors only
        data = gradescope.failure_results(AUTOGRADER_BROKEN.format(error=f"{type(exc).__name__}."), assignment)
    target = results / "results.json"
    return write_atomic(target, gradescope.to_json(data))


METADATA = ("submission_metadata.json", "submission_metadata.yml")  # Gradescope's, under ROOT


def submitters(root: Path) -> tuple[str, ...]:
    """Every name Gradescope's submission metadata gives the students who handed it in (a group's
    too), per user: email, student id (``sid``), Gradescope's user id; () when it has none."""
    for name in METADATA:
        try:
            data = yaml.safe_load((root / name).read_text(encoding="utf-8"))  # JSON is YAML
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        users = data.get("users") if isinstance(data, dict) else None
        out: list[str] = []
        for user in users if isinstance(users, list) else []:
            if isinstance(user, dict):
                out += [str(user[k]).strip() for k in ("email", "sid", "id") if user.get(k) not in (None, "")]
        return tuple(dict.fromkeys(out))
    return ()


def _sentence(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if text.endswith(".") else text + "."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grader.packaging.gradescope")
    ap.add_argument("--root", default=os.environ.get(ROOT_VARIABLE, DEFAULT_ROOT))
    ap.add_argument("--config", required=True)
    ap.add_argument("--assignment", required=True)
    args = ap.parse_args(argv)
    run(Path(args.root), Path(args.config), args.assignment)
    return 0


# --------------------------------------------------------------------------------------------
# Building the zip, on the instructor's machine


def _reduced_config(course: Course, assignment: Assignment, bundle: str) -> str:
    raw = yaml.safe_load(course.file.read_text(encoding="utf-8"))
    raw["assignments"] = {assignment.name: {**raw["assignments"][assignment.name], "reference_bundle": bundle}}
    # Tests kept in checks.py beside the solution travel as their code: the solution folder stays behind.
    for q_raw, q in zip(raw["assignments"][assignment.name].get("questions") or [], assignment.questions, strict=False):
        for c_raw, c in zip((q_raw or {}).get("checks") or [], q.checks, strict=False):
            if c.is_test and isinstance(c_raw, dict):
                c_raw["test"] = c.target
    vis = (raw.get("scorecard") or {}).get("visibility")
    if isinstance(vis, dict):
        raw["scorecard"]["visibility"] = {k: v for k, v in vis.items() if k == assignment.name}
    text: str = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True)
    return "# Reduced to one assignment, graded from its reference bundle (no solution is here).\n" + text


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def stage_grading(
    course: Course, assignment: Assignment, dest: Path, *, solution_steps: bool = False, students: Sequence[str] = ()
) -> Path:
    """Write into ``dest`` what grading the assignment needs and nothing of its solution: a
    config.yaml reduced to it, the skeleton, and ``grading/NAME/`` (the data files and the
    reference bundle, which computing runs the solution unless its references are cached).
    With ``solution_steps`` the bundle also holds the solution code the carry-forward runs need
    (for a grading machine students cannot read, such as Gradescope's); without it, carry-forward
    is off where the bundle grades. ``students``: a per-student assignment's roster ids, whose data
    and signatures are written beside the bundle (grader.judge.students) for grading without the
    course secret. Returns the config file."""
    from grader.judge.grading import Grader

    grading = Path("grading") / assignment.name
    bundle = grading / f"{assignment.name}.references.json"
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.yaml").write_text(_reduced_config(course, assignment, bundle.as_posix()), encoding="utf-8")
    for rel in assignment.data:
        _copy(assignment.solution_dir / rel, dest / grading / rel)
    if assignment.skeleton.is_file():
        _copy(assignment.skeleton, dest / assignment.skeleton.relative_to(course.root))
    grader = Grader(course)
    grader.references.save_bundle(assignment, dest / bundle, solution_steps=solution_steps)
    if students:
        grader.students.save_table(assignment, table_path(dest / bundle), students)
    staged = config.load(dest / "config.yaml")
    staged.assignment(assignment.name)  # the staged config loads without the solution
    if assignment.per_student is not None and solution_steps:
        # Each student's inputs are drawn, and their notebooks' stamps checked, with the course
        # secret: it goes where the grader looks for it, readable by the grader's uid only.
        secret = staged.cache_dir / SECRET_FILE
        secret.parent.mkdir(parents=True, exist_ok=True)
        text = grader.references.variant_secret().decode("utf-8", errors="surrogateescape")
        if len(text.strip()) < 32:
            raise UsageError(
                "The course secret (GRADER_VARIANT_SECRET) is shorter than 32 characters: a grader reading it from "
                "the zip would refuse it. Use a longer one, and write the students' notebooks again with it."
            )
        write_atomic(secret, text)
        os.chmod(secret, 0o600)
    return dest / "config.yaml"


def stage_grader(dest: Path) -> None:
    """Copy this package's source (and pyproject.toml) into ``dest``, installable with pip."""
    package = Path(PACKAGE_DIR)
    for name in ("pyproject.toml", "README.md"):
        if (package.parent / name).is_file():
            _copy(package.parent / name, dest / name)
    for f in sorted(package.rglob("*")):
        if f.is_file() and not SKIP_DIRS & set(f.relative_to(package).parts) and f.suffix != ".pyc":
            _copy(f, dest / "grader" / f.relative_to(package))


def build_zip(course: Course, assignment: Assignment, out: Path) -> Path:
    """Write ``out/<assignment>-gradescope.zip``; runs the solution (unless its references are
    cached) for the reference bundle."""
    with tempfile.TemporaryDirectory(prefix="grader-zip-") as tmp:
        stage = Path(tmp)
        stage_grading(course, assignment, stage / "course", solution_steps=True)  # students never read it there
        stage_grader(stage / "grader-src")
        stage_constraints(stage / "constraints.txt")
        stage_requirements(stage / "requirements.txt", assignment.name, preload_for(assignment))
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{assignment.name}-gradescope.zip"
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in (
                ("setup.sh", template(SETUP, assignment=assignment.name, root_line=ROOT_LINE)),
                ("run_autograder", template(RUN, assignment=assignment.name, root_line=ROOT_LINE)),
            ):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o100755 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, text)
            for f in sorted(stage.rglob("*")):
                if f.is_file():
                    z.write(f, f.relative_to(stage).as_posix())  # with its mode: the bundle's is 0600
    return target


if __name__ == "__main__":
    sys.exit(main())
