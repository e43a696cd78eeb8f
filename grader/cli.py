"""The ``grader`` command: a thin front end over the same code the pytest plugin uses.

    grader grade PATH... [--assignment NAME] [--out DIR]   grade notebooks, folders, zips, exchange
                         [--executor E] [--jobs N] [--force]  submitted/; in parallel, resumable
                         [--cluster ADDRESS] [--shard K/N]    on a Dask cluster, or one share of a class
    grader merge DIR... [--out DIR]                         the shards' outputs as one run's
    grader ci-workflow [NAME] --shards N                    GitHub Actions: N shard jobs and a merge
    grader similarity PATH... [--past DIR...] [--out DIR]    which notebooks share code (a lead for a person)
    grader assign [NAME...]                                 solution -> student skeleton
    grader validate [NAME...]                               prove each assignment's loop closes
    grader check NOTEBOOK [QUESTION]                        a student's self-check (public checks only)
    grader report SCORECARDS... [--out DIR]                 class report (HTML with plots)
    grader gradescope-zip [NAME] [--out DIR]                Gradescope autograder zip
    grader grading-bundle [NAME] --out DIR                  the grading materials, without the solution
    grader classroom50-autograder [NAME] [--out DIR]        Classroom 50 autograders/<slug>/ folder
    grader classroom-workflow [NAME] --grading-repo O/R     GitHub Classroom workflow (legacy)
    grader review [NAME] [--out DIR] [--export/--import CSV] a person grades the manual questions (web page)

Exit status: 0 when the command did its job (every submission got a scorecard), 1 when
``validate`` found problems, ``grade --fail-under PCT`` saw a score below PCT, or ``check`` saw a
question not pass; 2 on a usage or configuration error. Never a traceback.

Why one module: each command is a few lines over code that lives elsewhere, and its arguments are
declared in ``parser()`` beside the others (an argument several commands take, once, by a helper
above it); a reader sees the whole command line in one place. What a command prints as a table,
and standard output whose reader may leave early, are ``grader.console``. It imports only light modules at
the top (each command imports what it uses when it runs), so that ``grader check`` can start the
student's process before the grader's own modules load.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grader import cli_parser
from grader.console import ReaderMayLeave, print_table
from grader.errors import GraderError, UsageError
from grader.files import printable
from grader.run import executors
from grader.vocab import Format

if TYPE_CHECKING:
    from collections.abc import Iterable

    from grader.course import config
    from grader.judge.scorecard import Scorecard
    from grader.run.execute import Executor

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def load_course(path: str | None) -> config.Course:
    """The course file named (default: config.yaml here or above), loaded when a command needs it."""
    from grader.course import config
    from grader.course.locate import find_config

    return config.load(find_config(path))


def course_and_assignment(args: argparse.Namespace) -> tuple[config.Course, config.Assignment]:
    """The course and the assignment ``args.name`` names in it (default: its only one)."""
    from grader.course.locate import pick_assignment

    course = load_course(args.config)
    return course, pick_assignment(course, args.name, [])


def cmd_grade(args: argparse.Namespace) -> int:
    from grader.course.locate import pick_assignment

    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        raise UsageError(f"--fail-under must be a percentage from 0 to 100, got {args.fail_under:g}.")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}.")
    if args.cluster is not None and args.jobs is not None:
        raise UsageError(
            "--jobs is for this machine; on a cluster each worker's --nthreads says how many "
            "notebooks it grades at once."
        )
    course = load_course(args.config)
    given = [Path(p) for p in args.paths]
    executor = executors.make_executor(args.executor)
    if args.cluster is None:
        try:  # the server starts first, while the grading code loads: a CI job grading one notebook waits for both
            warm_up(executor, pick_assignment(course, args.assignment, given))
        except UsageError:
            pass  # the notebooks found below say which assignment it is, or the question is asked there
    from grader import batch, outputs
    from grader.batch import shards
    from grader.judge.grading import Grader

    formats = outputs.parse_formats(args.formats) if args.formats is not None else course.scorecard.formats
    assignment = pick_assignment(course, args.assignment, [*given, *batch.collect(given)])
    if args.cluster is not None:
        from grader.batch.cluster import distributed_module

        distributed_module()  # a clear message now rather than after reading the class
    shard = shards.parse_shard(args.shard) if args.shard is not None else None
    roster = Path(args.roster).resolve() if args.roster else None
    lms_formats = {Format.CANVAS, Format.MOODLE} & set(formats)
    from grader.outputs.formats import Output, roster_of

    if roster is not None:
        roster_of(Output(course, assignment, roster=roster), Format.CANVAS)  # a bad roster: said now, not at the end
    if args.formats is None and "gradebook" not in formats:
        formats = (*formats, Format.GRADEBOOK)  # a batch always gets its gradebook.csv unless --formats says otherwise
    out = Path(args.out)
    with batch.intake(given, assignment) as found:
        if not found.submissions:
            raise UsageError("No notebooks found in the given paths.")
        batch.apply_late(found, assignment, roster)  # each submission's time under the late policy
        for fmt in lms_formats:  # without a roster, only an LMS's own download says who each student is
            if roster is None and not all(s.lms is not None and s.lms.lms == fmt for s in found.submissions):
                roster_of(Output(course, assignment), fmt)
        grader = Grader(course, executor)
        if args.cluster is None:  # on a cluster, each worker's own sandbox: its scorecards say what it lacked
            from grader.run.sandbox import header

            for line in header(executor.features):
                print(line, file=sys.stderr)
        store = batch.ResultStore(course.cache_dir, assignment, batch.fingerprint(grader, assignment))
        from grader.review import merge as review

        grades = review.store_for(out, assignment)  # a person's grades: kept, and in every output
        if grades is not None:
            grades.set_meta("formats", list(formats))
            grades.set_meta("assignment", assignment.name)
            grades.set_meta("roster", str(roster) if roster is not None else None)

        def write(sub: batch.Submission, card: Scorecard) -> None:  # as soon as it is graded: nothing is lost
            if grades is not None:
                card = review.merge(grades, out, sub.name, sub.path, card)
            outputs.write_submission(
                sub.path, sub.name, card, course=course, assignment=assignment, out=out, formats=formats
            )

        mine = [(i, s) for i, s in enumerate(found.submissions)]
        if shard is not None:
            mine = shards.select(found.submissions, *shard)
            print(
                f"shard {shard[0]}/{shard[1]}: {len(mine)} of the class's {len(found.submissions)} submissions",
                file=sys.stderr,
            )
        subs = [s for _, s in mine]
        progress = batch.Progress(len(subs), assignment.name)
        try:
            outcome = batch.grade_all(
                grader,
                assignment,
                subs,
                jobs=args.jobs or batch.default_jobs(),
                store=store,
                force=args.force,
                on_card=write,
                progress=progress,
                cluster=args.cluster,
                say=lambda line: print(line, file=sys.stderr, flush=True),
            )
        finally:
            progress.close()
        cards = outcome.cards if grades is None else review.WithGrades(outcome.cards, [s.name for s in subs], grades)
        done = batch.Graded(subs, cards)  # each card read back from the results when written out
        if shard is not None:
            shards.write_manifest(
                out,
                shard=shard[0],
                count=shard[1],
                assignment=assignment.name,
                fingerprint=store.key,
                total=len(found.submissions),
                formats=formats,
                graded=[(i, s, c) for (i, s), c in zip(mine, outcome.cards, strict=True)],
                notes=found.notes,
            )
        from grader.errors import RosterConflict

        unplaced: RosterConflict | None = None
        try:
            outputs.write_run(
                done,
                course=course,
                assignment=assignment,
                out=out,
                formats=formats,
                executor_name=grader.executor.name,
                roster=roster,
            )
        except RosterConflict as exc:  # every file is written; the LMS's without the submissions it names
            unplaced = exc
        names = done.names
        print_table(assignment, names, cards, course.scorecard.rounding)
        notes = batch.summary_lines(found, outcome)
        if assignment.per_student is not None:
            from grader.authoring.per_student import flagged

            notes += flagged(names, list(cards), out, roster)
        if roster is not None and lms_formats:
            from grader.outputs import roster as rosters

            notes += [f"note: {n}" for n in rosters.not_on_roster(zip(names, cards, strict=True), rosters.load(roster))]
    if notes:
        print()
        print("\n".join(notes))
    print(f"\nScorecards written to {out}/ ({', '.join(formats)})")
    if grades is not None:
        print(f"Questions graded by a person: grade them with `grader review {assignment.name} --out {out}`")
    status = fail_under(names, cards, args.fail_under)
    if unplaced is not None:
        print(f"grader: {unplaced}", file=sys.stderr)
        return EXIT_USAGE
    return status


def warm_up(executor: Executor, assignment: config.Assignment) -> None:
    """Start what the executor starts ahead (the forking server the assignment needs) in the
    background, while the grader reads the submissions and the reference: a CI job grading one
    notebook waits for it otherwise."""
    if not executor.capabilities.starts_ahead:  # an executor without a server
        return
    # concurrent.futures.thread and logging register fork handlers (before: take a lock; after, in
    # the parent: release it). Imported here, before the thread below forks (the sandbox probe):
    # imported by this thread during that fork, the parent's handler would release a lock never
    # taken ("Exception ignored in _releaseLock: cannot release un-acquired lock" on stderr).
    import concurrent.futures.thread  # noqa: F401
    import logging  # noqa: F401
    import threading

    from grader.course.imports import preload_for

    def run() -> None:
        try:
            executor.start(preload_for(assignment))
        except Exception:  # noqa: BLE001 - the first notebook starts it again, and says what failed
            pass

    threading.Thread(target=run, name="grader-warm-up", daemon=True).start()


def cmd_merge(args: argparse.Namespace) -> int:
    from grader import outputs
    from grader.batch import shards
    from grader.course.locate import pick_assignment

    course = load_course(args.config)
    merged = shards.merge([Path(p) for p in args.dirs])
    assignment = pick_assignment(course, merged.assignment, [])
    out = Path(args.out)
    shards.copy_outputs(merged, out)
    done = [(path, name, card) for path, name, card, _ in merged.rows]
    executor = next((c.execution.executor for _, _, c in done if c.execution.executor), "forking")
    outputs.write_run(
        done, course=course, assignment=assignment, out=out, formats=merged.formats, executor_name=executor
    )
    names, cards = [name for _, name, _ in done], [card for _, _, card in done]
    print_table(assignment, names, cards, course.scorecard.rounding)
    if merged.notes:
        print()
        print("\n".join(f"note: {n}" for n in merged.notes))
    print(
        f"\nScorecards of {len(names)} submission(s) from {len(args.dirs)} folder(s) merged into {out}/ "
        f"({', '.join(merged.formats)})"
    )
    return fail_under(names, cards, args.fail_under)


def cmd_ci_workflow(args: argparse.Namespace) -> int:
    from grader.packaging.ci import write_workflow

    course, assignment = course_and_assignment(args)
    path = write_workflow(
        assignment, shards=args.shards, submissions=args.submissions, out=Path(args.out), config_path=args.config
    )
    print(f"wrote {path}: {args.shards} shard job(s) and a merge job for {assignment.name}")
    return EXIT_OK


def fail_under(names: list[str], cards: Iterable[Scorecard], threshold: float | None) -> int:
    """Exit status for --fail-under: 1 when a submission scored below the threshold (in %)."""
    if threshold is None:
        return EXIT_OK
    below = False
    for name, card in zip(names, cards, strict=True):
        if card.percent < threshold - 1e-9:
            below = True
            print(f"grader: {name} scored {card.percent:.1f}%, below --fail-under {threshold:g}%", file=sys.stderr)
    return EXIT_PROBLEMS if below else EXIT_OK


def cmd_similarity(args: argparse.Namespace) -> int:
    from grader.batch import collect
    from grader.course.locate import pick_assignment
    from grader.similarity import find_similar, write

    if not 0 <= args.min_score <= 1:
        raise UsageError(f"--min-score must be a score from 0 to 1, got {args.min_score:g}.")
    if not 0 < args.threshold <= 1:
        raise UsageError(f"--threshold must be a score above 0 and at most 1, got {args.threshold:g}.")
    given, past = [Path(p) for p in args.paths], [Path(p) for p in args.past]
    for p in [*given, *past]:
        if not p.exists():
            raise UsageError(f"{p} does not exist.")
    course = load_course(args.config)
    assignment = pick_assignment(course, args.assignment, [*given, *collect(given)])
    result = find_similar(given, assignment, past=past, threshold=args.threshold)
    json_path, html_path = write(result, Path(args.out), min_score=args.min_score)
    high = [p for p in result.pairs if p.score >= args.threshold]
    print(
        f"{assignment.name}: {len(result.documents)} notebook(s) read, {len(result.skipped)} skipped; "
        f"{len(high)} pair(s) at or above {args.threshold:g}, {len(result.clusters)} cluster(s) of three or more"
    )
    for pair in high[:10]:
        print(f"  {pair.score:.2f}  {printable(pair.a)}  {printable(pair.b)}")
    for s in result.skipped:
        print(f"skipped {printable(s.origin)}: {printable(s.reason)}")
    for note in result.notes:
        print(f"note: {note}")
    print(
        f"\nWrote {json_path} and {html_path}. A score is a lead for a person to look at, never proof; "
        "no grade was changed."
    )
    return EXIT_OK


def cmd_assign(args: argparse.Namespace) -> int:
    from grader.authoring.assign import write_assignment
    from grader.authoring.public import public_checks
    from grader.course.locate import pick_assignment
    from grader.judge.grading import Grader

    course = load_course(args.config)
    if args.per_student or args.out:
        return _assign_per_student(args, course)
    names = args.names or list(course.assignments)
    grader = Grader(course)
    for name in names:
        assignment = pick_assignment(course, name, [])
        ref = grader.references.get(assignment)
        for path in write_assignment(assignment, public_checks(assignment, ref.captures)):
            print(f"wrote {path.relative_to(course.root)}")
    return EXIT_OK


def _assign_per_student(args: argparse.Namespace, course: config.Course) -> int:
    """``grader assign NAME --per-student roster.csv --out DIR``: a notebook per student."""
    from grader.authoring import per_student
    from grader.authoring.assign import write_beside
    from grader.authoring.public import public_checks
    from grader.batch import Progress
    from grader.course.locate import pick_assignment
    from grader.judge.grading import Grader

    if not (args.per_student and args.out):
        raise UsageError("--per-student ROSTER and --out DIR go together: give both.")
    if len(args.names) > 1:
        raise UsageError("--per-student writes one assignment's notebooks: name one assignment.")
    assignment = pick_assignment(course, args.names[0] if args.names else None, [])
    if assignment.per_student is None:
        raise UsageError(
            f"{assignment.name} has no `per_student:` section in config.yaml: say which given inputs differ "
            "per student (docs/per-student.md)."
        )
    roster = Path(args.per_student)
    ids = per_student.read_roster(roster)  # a bad roster stops here, before the solution runs
    grader = Grader(course)
    ref = grader.references.get(assignment)
    samples = [grader.students.for_student(assignment, sid) for sid in ids[:3]]
    public = per_student.public_for_students(public_checks(assignment, ref.captures), ref.captures, samples)
    progress = Progress(len(ids), assignment.name, done_word="written")
    try:
        written = per_student.write_per_student(
            assignment,
            roster,
            Path(args.out),
            grader.references.variant_secret(),
            lambda folder: write_beside(assignment, folder, public),
            given=ref.given(),
            advance=progress.advance,
        )
    finally:
        progress.close()
    print(f"wrote {len(written)} notebooks of {assignment.name} under {args.out}, one folder per student")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from grader.authoring import import_check, importing, peers

    with importing.stopped_on_oserror():  # reading or running the course (a full disk): one line
        config_path = Path(args.config) if args.config else Path.cwd() / "config.yaml"
        items = peers.read(args.tool, Path(args.source), args.name)
        source = Path(args.source).resolve()
        course_name = args.course or (source.stem if source.is_file() else source.name)
        importing.check_names(items, config_path, force=args.force)
        staged = import_check.stage(items, config_path, course_name=course_name)
        if staged.failing and not args.keep_failing_tests:
            print(f"the solution fails {len(staged.failing)} imported test{'s' if len(staged.failing) != 1 else ''}:")
            for failing in staged.failing:
                print(f"  - {failing.describe()}")
            print(
                "nothing was written: fix the source, or pass --keep-failing-tests to import these tests' "
                "questions for a person to grade"
            )
            return EXIT_PROBLEMS
        import_check.keep_for_a_person(items, staged.failing)
        for line in importing.write(items, config_path, course_name=course_name, force=args.force):
            print(line)
        for problem in staged.problems:
            print(f"validate: {problem}")
        return EXIT_PROBLEMS if staged.problems else EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from grader.authoring.validate import validate
    from grader.course.locate import pick_assignment

    course = load_course(args.config)
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
    from grader.run import worker_process

    # The student process starts first and loads IPython while this one loads the grader.
    ahead = worker_process.start(sys.executable, None) if Path(args.notebook).is_file() else None
    try:
        from grader.selfcheck import run_cli

        return run_cli(
            Path(args.notebook), assignment=args.assignment, checks=args.checks, question=args.question, ahead=ahead
        )
    finally:
        if ahead is not None:
            worker_process.discard(ahead)


def cmd_report(args: argparse.Namespace) -> int:
    from grader.outputs.report import load_scorecards, write_report

    course = None
    if args.config or os.environ.get("GRADER_CONFIG"):
        course = load_course(args.config)
    rows = load_scorecards([Path(p) for p in args.paths])
    path = write_report(rows, Path(args.out) / "report.html", course=course)
    print(f"Class report for {len(rows)} submission(s) written to {path}")
    return EXIT_OK


def cmd_gradescope_zip(args: argparse.Namespace) -> int:
    from grader.packaging.gradescope import build_zip

    course, assignment = course_and_assignment(args)
    path = build_zip(course, assignment, Path(args.out))
    print(f"wrote {path}: upload it as the autograder of {assignment.name} on Gradescope")
    return EXIT_OK


def cmd_grading_bundle(args: argparse.Namespace) -> int:
    from grader.packaging.gradescope import stage_grader, stage_grading

    course, assignment = course_and_assignment(args)
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--out {out} is not empty; name a new folder for the grading materials.")
    path = stage_grading(course, assignment, out)
    stage_grader(out)
    print(
        f"wrote {out}: the grader, {path.name} and the reference bundle of {assignment.name}, without its "
        "solution (grade with --config " + str(path) + ")"
    )
    return EXIT_OK


def cmd_classroom50_autograder(args: argparse.Namespace) -> int:
    from grader.packaging.classroom50 import build_folder

    course, assignment = course_and_assignment(args)
    folder = build_folder(course, assignment, Path(args.out), args.slug, Path(args.roster) if args.roster else None)
    print(f"wrote {folder}/: commit it to the classroom's folder in your Classroom 50 configuration repository")
    return EXIT_OK


def cmd_classroom_workflow(args: argparse.Namespace) -> int:
    import re

    from grader.packaging.gradescope import template

    course, assignment = course_and_assignment(args)
    notebook = args.notebook or f"{assignment.name}.ipynb"
    if not re.fullmatch(r"[A-Za-z0-9_.\-/ ]+\.ipynb", notebook) or ".." in Path(notebook).parts:
        raise UsageError(f"--notebook must be a plain relative path to a .ipynb file, got {notebook!r}.")
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", args.grading_repo):
        raise UsageError(f"--grading-repo must be OWNER/NAME, got {args.grading_repo!r}.")
    path = Path(args.out) / ".github" / "workflows" / "classroom.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        template("classroom.yml", assignment=assignment.name, notebook=notebook, grading_repo=args.grading_repo),
        encoding="utf-8",
    )
    print(f"wrote {path}: commit it to the starter repository of {assignment.name}")
    return EXIT_OK


def cmd_review(args: argparse.Namespace) -> int:
    import getpass

    from grader.review import csvio, merge
    from grader.review.store import FILENAME, GradeStore

    course, assignment = course_and_assignment(args)
    out = Path(args.out)
    if args.grade:
        config = ["--config", args.config] if args.config else []
        code: int = main(["grade", *args.grade, "--assignment", assignment.name, "--out", str(out), *config])
        if code != EXIT_OK:
            return code
    if not (out / FILENAME).is_file():
        raise UsageError(
            f"{out}/ holds no grades.sqlite: grade the class first (grader grade SUBMISSIONS "
            f"--assignment {assignment.name} --out {out})."
        )
    store = GradeStore.in_folder(out)
    if store.meta("assignment", assignment.name) != assignment.name:
        raise UsageError(f"{out}/ holds the grades of {store.meta('assignment')!r}, not of {assignment.name!r}.")
    for question in assignment.questions:  # config.yaml's rubric items, the first time each is seen
        if question.rubric:
            store.seed_rubric(question.id, [(item.text, item.points) for item in question.rubric])
    who = args.grader or getpass.getuser()
    formats = merge.formats_in(store, course)
    if args.export:
        n = csvio.export_csv(store, Path(args.export))
        print(f"wrote {args.export}: {n} answer(s) to questions graded by a person")
        return EXIT_OK
    if args.import_csv:
        n = csvio.import_csv(store, Path(args.import_csv), grader=who)
        try:
            merge.rewrite(store, course, assignment, out, formats)
        finally:  # a roster conflict still leaves every grade imported and every other file written
            print(f"imported {n} grade(s) from {args.import_csv}; outputs in {out}/ written again")
        return EXIT_OK
    from grader.review.server import start

    start(args, store, course, assignment, out, formats, who)
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    """The ``grader`` command's parser (``grader.cli_parser``), each subcommand run by its ``cmd_`` function."""
    return cli_parser.build(
        {
            "grade": cmd_grade,
            "merge": cmd_merge,
            "ci-workflow": cmd_ci_workflow,
            "similarity": cmd_similarity,
            "assign": cmd_assign,
            "import": cmd_import,
            "validate": cmd_validate,
            "check": cmd_check,
            "report": cmd_report,
            "gradescope-zip": cmd_gradescope_zip,
            "grading-bundle": cmd_grading_bundle,
            "classroom50-autograder": cmd_classroom50_autograder,
            "classroom-workflow": cmd_classroom_workflow,
            "review": cmd_review,
        }
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not isinstance(sys.stdout, ReaderMayLeave):
        sys.stdout = ReaderMayLeave(sys.stdout)
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
