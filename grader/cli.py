"""The ``grader`` command: a thin front end over the same code the pytest plugin uses.

    grader grade PATH... [--assignment NAME] [--out DIR]   grade notebooks, folders, zips, nbgrader's
                         [--executor E] [--jobs N] [--force]  submitted/; in parallel, resumable
    grader assign [NAME...]                                 solution -> student skeleton
    grader validate [NAME...]                               prove each assignment's loop closes
    grader check NOTEBOOK [QUESTION]                        a student's self-check (public checks only)
    grader report SCORECARDS... [--out DIR]                 class report (HTML with plots)
    grader gradescope-zip [NAME] [--out DIR]                Gradescope autograder zip
    grader grading-bundle [NAME] --out DIR                  the grading materials, without the solution
    grader classroom-workflow [NAME] --grading-repo O/R     GitHub Classroom workflow

Exit status: 0 when the command did its job (every submission got a scorecard), 1 when
``validate`` found problems, ``grade --fail-under PCT`` saw a score below PCT, or ``check`` saw a
question not pass; 2 on a usage or configuration error. Never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader import __version__, batch
from grader.course import config
from grader.course.locate import find_config, pick_assignment
from grader.errors import GraderError, UsageError
from grader.judge.scorecard import Scorecard, points_text
from grader.outputs.formats import FORMATS
from grader.run import executors
from grader.vocab import Format

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def cmd_grade(args: argparse.Namespace) -> int:
    from grader import outputs
    from grader.judge.grading import Grader

    course = config.load(find_config(args.config))
    formats = outputs.parse_formats(args.formats) if args.formats is not None else course.scorecard.formats
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        raise UsageError(f"--fail-under must be a percentage from 0 to 100, got {args.fail_under:g}.")
    given = [Path(p) for p in args.paths]
    assignment = pick_assignment(course, args.assignment, [*given, *batch.collect(given)])
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}.")
    if args.formats is None and "gradebook" not in formats:
        formats = (*formats, Format.GRADEBOOK)  # a batch always gets its gradebook.csv unless --formats says otherwise
    out = Path(args.out)
    with batch.intake(given, assignment) as found:
        if not found.submissions:
            raise UsageError("No notebooks found in the given paths.")
        grader = Grader(course, executors.make_executor(args.executor))
        store = batch.ResultStore(course.cache_dir, assignment, batch.fingerprint(grader, assignment))

        def write(sub: batch.Submission, card: Scorecard) -> None:  # as soon as it is graded: nothing is lost
            outputs.write_submission(sub.path, sub.name, card, course=course, assignment=assignment, out=out,
                                    formats=formats)

        progress = batch.Progress(len(found.submissions), assignment.name)
        try:
            outcome = batch.grade_all(grader, assignment, found.submissions, jobs=args.jobs or batch.default_jobs(),
                                      store=store, force=args.force, on_card=write, progress=progress)
        finally:
            progress.close()
        done = [(s.path, s.name, card) for s, card in zip(found.submissions, outcome.cards, strict=True)]
        outputs.write_run(done, course=course, assignment=assignment, out=out, formats=formats,
                         executor_name=grader.executor.name)
        rows = [(name, card) for _, name, card in done]
        print_table(assignment, rows, course.scorecard.rounding)
        notes = batch.summary_lines(found, outcome)
    if notes:
        print()
        print("\n".join(notes))
    print(f"\nScorecards written to {out}/ ({', '.join(formats)})")
    return fail_under(rows, args.fail_under)


def fail_under(rows: list[tuple[str, Scorecard]], threshold: float | None) -> int:
    """Exit status for --fail-under: 1 when a submission scored below the threshold (in %)."""
    if threshold is None:
        return EXIT_OK
    below = [(name, card) for name, card in rows if card.percent < threshold - 1e-9]
    for name, card in below:
        print(f"grader: {name} scored {card.percent:.1f}%, below --fail-under {threshold:g}%", file=sys.stderr)
    return EXIT_PROBLEMS if below else EXIT_OK


def print_table(assignment: config.Assignment, rows: list[tuple[str, Scorecard]], rounding: int) -> None:
    width = max([len("submission")] + [len(n) for n, _ in rows])
    print(f"{assignment.name}: {assignment.title}")
    print(f"{'submission':<{width}}  {'score':>13}  status")
    for name, card in rows:
        score = f"{points_text(card.score, rounding)}/{points_text(card.max_score, rounding)}"
        extra = f" ({card.reason})" if card.reason else ""
        print(f"{name:<{width}}  {score:>13}  {card.status}{extra}")


def cmd_assign(args: argparse.Namespace) -> int:
    from grader.authoring.assign import write_assignment
    from grader.authoring.public import public_checks
    from grader.judge.grading import Grader

    course = config.load(find_config(args.config))
    names = args.names or list(course.assignments)
    grader = Grader(course)
    for name in names:
        assignment = pick_assignment(course, name, [])
        ref = grader.references.get(assignment)
        for path in write_assignment(assignment, public_checks(assignment, ref.captures)):
            print(f"wrote {path.relative_to(course.root)}")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from grader.authoring import importing, nbgrader_import, otter_import

    config_path = Path(args.config) if args.config else Path.cwd() / "config.yaml"
    if args.tool == "nbgrader":
        items = nbgrader_import.read(Path(args.source), args.name)
    else:
        items = otter_import.read(Path(args.source), args.name)
    source = Path(args.source).resolve()
    course_name = args.course or (source.stem if source.is_file() else source.name)
    for line in importing.write(items, config_path, course_name=course_name, force=args.force):
        print(line)
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from grader.authoring.validate import validate

    course = config.load(find_config(args.config))
    names = args.names or list(course.assignments)
    failed = 0
    for name in names:
        assignment = pick_assignment(course, name, [])
        problems = validate(course, assignment)
        if problems:
            failed += 1
            print(f"{name}: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
            for p in problems:
                print(f"  - {p}")
        else:
            print(f"{name}: ok")
    return EXIT_PROBLEMS if failed else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from grader.selfcheck import run_cli

    return run_cli(Path(args.notebook), assignment=args.assignment, checks=args.checks, question=args.question)


def cmd_report(args: argparse.Namespace) -> int:
    from grader.outputs.report import load_scorecards, write_report

    course = None
    if args.config or os.environ.get("GRADER_CONFIG"):
        course = config.load(find_config(args.config))
    rows = load_scorecards([Path(p) for p in args.paths])
    path = write_report(rows, Path(args.out) / "report.html", course=course)
    print(f"Class report for {len(rows)} submission(s) written to {path}")
    return EXIT_OK


def cmd_gradescope_zip(args: argparse.Namespace) -> int:
    from grader.packaging.gradescope import build_zip

    course = config.load(find_config(args.config))
    assignment = pick_assignment(course, args.name, [])
    path = build_zip(course, assignment, Path(args.out))
    print(f"wrote {path}: upload it as the autograder of {assignment.name} on Gradescope")
    return EXIT_OK


def cmd_grading_bundle(args: argparse.Namespace) -> int:
    from grader.packaging.gradescope import stage_grader, stage_grading

    course = config.load(find_config(args.config))
    assignment = pick_assignment(course, args.name, [])
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; name a new folder for the grading materials.")
    path = stage_grading(course, assignment, out)
    stage_grader(out)
    print(f"wrote {out}: the grader, {path.name} and the reference bundle of {assignment.name}, without its "
          "solution (grade with --config " + str(path) + ")")
    return EXIT_OK


def cmd_classroom_workflow(args: argparse.Namespace) -> int:
    import re

    from grader.packaging.gradescope import template

    course = config.load(find_config(args.config))
    assignment = pick_assignment(course, args.name, [])
    notebook = args.notebook or f"{assignment.name}.ipynb"
    if not re.fullmatch(r"[A-Za-z0-9_.\-/ ]+\.ipynb", notebook) or ".." in Path(notebook).parts:
        raise UsageError(f"--notebook must be a plain relative path to a .ipynb file, got {notebook!r}.")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", args.grading_repo):
        raise UsageError(f"--grading-repo must be OWNER/NAME, got {args.grading_repo!r}.")
    path = Path(args.out) / ".github" / "workflows" / "classroom.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(template("classroom.yml", assignment=assignment.name, notebook=notebook,
                             grading_repo=args.grading_repo), encoding="utf-8")
    print(f"wrote {path}: commit it to the starter repository of {assignment.name}")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="grader", description="Grade numerical Python notebooks against a solution.")
    ap.add_argument("--version", action="version", version=f"grader {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade notebooks and write a scorecard for each")
    g.add_argument("paths", nargs="+", help="notebooks, or folders of notebooks")
    g.add_argument("--assignment", "-a", help="assignment name from config.yaml")
    g.add_argument("--out", "-o", default="scorecards", help="folder for scorecards (default: scorecards)")
    g.add_argument("--config", "-c", help="course file (default: config.yaml here or above)")
    g.add_argument("--formats", "-f", help="comma-separated outputs, overriding config.yaml's scorecard.formats: "
                   + ",".join(FORMATS))
    g.add_argument("--fail-under", type=float, metavar="PCT",
                   help="exit with status 1 when a submission scores below PCT percent (for a student's own CI)")
    g.add_argument("--executor", "-e", choices=list(executors.EXECUTORS), default=executors.DEFAULT,
                   help=executors.help_text())
    g.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="notebooks graded at the same time (default: the number of CPU cores)")
    g.add_argument("--force", action="store_true",
                   help="grade again submissions whose results are cached from an earlier run")
    g.set_defaults(func=cmd_grade)

    a = sub.add_parser("assign", help="generate student skeletons from solution notebooks")
    a.add_argument("names", nargs="*", help="assignments (default: all)")
    a.add_argument("--config", "-c")
    a.set_defaults(func=cmd_assign)

    im = sub.add_parser("import", help="import an nbgrader or otter-grader course (notebooks, tests, points)")
    im.add_argument("tool", choices=["nbgrader", "otter"], help="the tool the course was written for")
    im.add_argument("source", help="nbgrader: the source folder (source/ or source/ASSIGNMENT); "
                    "otter: the master notebook")
    im.add_argument("--name", help="the assignment's name (default: the folder's or notebook's)")
    im.add_argument("--config", "-c", help="course file to add to (default: ./config.yaml, created if missing)")
    im.add_argument("--course", help="the course's name, for a new config.yaml")
    im.add_argument("--force", action="store_true", help="replace assignments of the same name")
    im.set_defaults(func=cmd_import)

    v = sub.add_parser("validate", help="check that solutions score full marks and skeletons zero")
    v.add_argument("names", nargs="*", help="assignments (default: all)")
    v.add_argument("--config", "-c")
    v.set_defaults(func=cmd_validate)

    c = sub.add_parser("check", help="run the public checks on your notebook before you submit it")
    c.add_argument("notebook", help="your notebook")
    c.add_argument("question", nargs="?", help="one question id (default: all)")
    c.add_argument("--assignment", "-a", help="assignment name (default: from public_checks.json or the file name)")
    c.add_argument("--checks", help="the public_checks.json to use (default: next to the notebook, or "
                   "assignments/NAME/ here or above)")
    c.set_defaults(func=cmd_check)

    r = sub.add_parser("report", help="class report (HTML with plots) from the scorecards of a run")
    r.add_argument("paths", nargs="+", help="scorecard files (.yaml, .json) or folders of them")
    r.add_argument("--out", "-o", default="report", help="folder for report.html (default: report)")
    r.add_argument("--config", "-c", help="course file, for titles (optional)")
    r.set_defaults(func=cmd_report)

    z = sub.add_parser("gradescope-zip", help="build the Gradescope autograder zip for an assignment")
    z.add_argument("name", nargs="?", help="assignment (default: the only one)")
    z.add_argument("--out", "-o", default=".", help="folder for NAME-gradescope.zip (default: here)")
    z.add_argument("--config", "-c")
    z.set_defaults(func=cmd_gradescope_zip)

    b = sub.add_parser("grading-bundle", help="the grading materials of an assignment without its solution "
                       "(the grader, a reduced config.yaml, the reference bundle, the data files)")
    b.add_argument("name", nargs="?", help="assignment (default: the only one)")
    b.add_argument("--out", "-o", required=True, help="a new folder (e.g. the private grading repository)")
    b.add_argument("--config", "-c")
    b.set_defaults(func=cmd_grading_bundle)

    w = sub.add_parser("classroom-workflow", help="write the GitHub Classroom workflow for an assignment's repository")
    w.add_argument("name", nargs="?", help="assignment (default: the only one)")
    w.add_argument("--grading-repo", required=True, help="OWNER/NAME of the private course repository "
                   "(the output of grader grading-bundle: the grader, config.yaml and the reference bundle)")
    w.add_argument("--notebook", help="path of the notebook in the student's repository (default: NAME.ipynb)")
    w.add_argument("--out", "-o", default=".", help="the starter repository (default: here)")
    w.add_argument("--config", "-c")
    w.set_defaults(func=cmd_classroom_workflow)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
