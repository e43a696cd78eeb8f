"""The ``grader`` command's arguments: every subcommand and option, each declared once with its help.

``grader.cli`` runs the commands; this module only says what they take, so the help texts and
the options shared by several commands stay in one place.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from grader import __version__
from grader.authoring import peers
from grader.run import executors
from grader.vocab import Format

Command = Callable[[argparse.Namespace], int]

# Arguments more than one command takes are declared once each, with their help, by the helpers
# below; a command whose use of one differs says how in its own help text.

COURSE_FILE_HELP = "course file (default: config.yaml here or above)"


def course_file(p: argparse.ArgumentParser, help: str = COURSE_FILE_HELP) -> None:
    p.add_argument("--config", "-c", help=help)


def assignment_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="assignment (default: the only one)")


def assignment_names(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", help="assignments (default: all)")


def assignment_option(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--assignment", "-a", help=f"the assignment's name (default: {default})")


def out_folder(p: argparse.ArgumentParser, what: str, default: str | None = ".") -> None:
    """``--out``: ``what`` the folder is; ``default`` None makes the option required."""
    if default is None:
        p.add_argument("--out", "-o", required=True, help=what)
    else:
        shown = "here" if default == "." else default
        p.add_argument("--out", "-o", default=default, help=f"{what} (default: {shown})")


def fail_under_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fail-under",
        type=float,
        metavar="PCT",
        help="exit with status 1 when a submission scores below PCT percent (for a CI job)",
    )


def build(commands: Mapping[str, Command]) -> argparse.ArgumentParser:
    """The ``grader`` command's parser; ``commands`` maps each subcommand to the function that runs it."""
    ap = argparse.ArgumentParser(prog="grader", description="Grade numerical Python notebooks against a solution.")
    ap.add_argument("--version", action="version", version=f"grader {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade notebooks and write a scorecard for each")
    g.add_argument("paths", nargs="+", help="notebooks, or folders of notebooks")
    assignment_option(g, "the course's only one, or the one the notebooks or their folders are named after")
    out_folder(g, "folder for scorecards", "scorecards")
    course_file(g)
    g.add_argument(
        "--formats",
        "-f",
        help="comma-separated outputs, overriding config.yaml's scorecard.formats: " + ",".join(Format),
    )
    fail_under_option(g)
    g.add_argument(
        "--executor", "-e", choices=list(executors.EXECUTORS), default=executors.DEFAULT, help=executors.help_text()
    )
    g.add_argument(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        help="notebooks graded at the same time (default: the number of CPU cores)",
    )
    g.add_argument(
        "--force", action="store_true", help="grade again submissions whose results are cached from an earlier run"
    )
    g.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="grade on the workers of a Dask cluster (tcp://HOST:8786); this machine keeps the "
        "results cache and writes every output",
    )
    g.add_argument(
        "--roster",
        metavar="CSV",
        help="which student each submission is (columns: submission, name, "
        "email, github, lms_id, sis_user_id, sis_login_id, section): for --formats canvas,moodle",
    )
    g.add_argument(
        "--shard",
        metavar="K/N",
        help="grade only share K of N of the class (by content hash) and write OUT/shard-K-of-N.json "
        "for `grader merge`",
    )
    g.set_defaults(func=commands["grade"])

    m = sub.add_parser("merge", help="combine the --out folders of `grader grade --shard K/N` into one run's outputs")
    m.add_argument("dirs", nargs="+", metavar="DIR", help="the shards' --out folders (or a folder holding them)")
    out_folder(m, "folder for the merged outputs", "scorecards")
    course_file(m)
    fail_under_option(m)
    m.set_defaults(func=commands["merge"])

    ci = sub.add_parser("ci-workflow", help="write a GitHub Actions workflow grading a class in N shards, then merging")
    assignment_name(ci)
    ci.add_argument("--shards", type=int, default=4, help="number of shard jobs (default: 4)")
    ci.add_argument(
        "--submissions",
        default="submissions",
        help="the class's notebooks in the repository (folder or zip; default: submissions)",
    )
    out_folder(ci, "the repository to write .github/workflows/ into")
    course_file(ci)
    ci.set_defaults(func=commands["ci-workflow"])

    sim = sub.add_parser(
        "similarity",
        help="which notebooks share code beyond the skeleton, for a person to judge "
        "(writes similarity.json and similarity.html; never changes a grade)",
    )
    sim.add_argument("paths", nargs="+", help="notebooks, folders or zips of this term, as `grader grade` reads them")
    assignment_option(sim, "the course's only one, or the one the notebooks or their folders are named after")
    sim.add_argument(
        "--past",
        nargs="+",
        default=[],
        metavar="DIR",
        help="earlier terms' submissions (folders or zips), compared with this term's",
    )
    out_folder(sim, "folder for similarity.json and similarity.html", "similarity")
    course_file(sim)
    sim.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        metavar="SCORE",
        help="pairs scoring at least this are marked and form clusters (default: 0.5)",
    )
    sim.add_argument(
        "--min-score", type=float, default=0.1, metavar="SCORE", help="list pairs scoring at least this (default: 0.1)"
    )
    sim.set_defaults(func=commands["similarity"])

    a = sub.add_parser("assign", help="generate student skeletons from solution notebooks")
    assignment_names(a)
    course_file(a)
    a.add_argument(
        "--per-student",
        metavar="ROSTER",
        help="a roster CSV (an `id` column): one notebook per student with their own data (`per_student:`)",
    )
    a.add_argument("--out", metavar="DIR", help="with --per-student: the folder of the students' folders")
    a.set_defaults(func=commands["assign"])

    im = sub.add_parser(
        "import", help=f"import a course written for another tool ({', '.join(peers.PEERS)}): notebooks, tests, points"
    )
    im.add_argument("tool", choices=list(peers.PEERS), help="the tool the course was written for")
    im.add_argument("source", help=peers.source_help())
    im.add_argument("--name", help="the assignment's name (default: the folder's or notebook's)")
    course_file(im, "course file to add to (default: ./config.yaml, created if missing)")
    im.add_argument("--course", help="the course's name, for a new config.yaml")
    im.add_argument("--force", action="store_true", help="replace assignments of the same name")
    im.add_argument(
        "--keep-failing-tests",
        action="store_true",
        help="import a test the solution fails as a question graded by a person, with its points "
        "(without it, such an import writes nothing)",
    )
    im.set_defaults(func=commands["import"])

    v = sub.add_parser("validate", help="check that solutions score full marks and skeletons zero")
    assignment_names(v)
    course_file(v)
    v.set_defaults(func=commands["validate"])

    c = sub.add_parser("check", help="run the public checks on your notebook before you submit it")
    c.add_argument("notebook", help="your notebook")
    c.add_argument("question", nargs="?", help="one question id (default: all)")
    assignment_option(c, "from public_checks.json or the file name")
    c.add_argument(
        "--checks",
        help="the public_checks.json to use (default: next to the notebook, or assignments/NAME/ here or above)",
    )
    c.set_defaults(func=commands["check"])

    r = sub.add_parser("report", help="class report (HTML with plots) from the scorecards of a run")
    r.add_argument("paths", nargs="+", help="scorecard files (.yaml, .json) or folders of them")
    out_folder(r, "folder for report.html", "report")
    course_file(r, "course file, for titles (optional)")
    r.set_defaults(func=commands["report"])

    z = sub.add_parser("gradescope-zip", help="build the Gradescope autograder zip for an assignment")
    assignment_name(z)
    out_folder(z, "folder for NAME-gradescope.zip")
    course_file(z)
    z.set_defaults(func=commands["gradescope-zip"])

    b = sub.add_parser(
        "grading-bundle",
        help="the grading materials of an assignment without its solution "
        "(the grader, a reduced config.yaml, the reference bundle, the data files)",
    )
    assignment_name(b)
    out_folder(b, "a new folder (e.g. the private grading repository)", None)
    course_file(b)
    b.set_defaults(func=commands["grading-bundle"])

    c5 = sub.add_parser("classroom50-autograder", help="write the Classroom 50 autograder folder for an assignment")
    assignment_name(c5)
    c5.add_argument("--slug", help="the assignment's Classroom 50 slug (default: NAME in lower case, _ as -)")
    c5.add_argument(
        "--roster",
        metavar="ROSTER",
        help="with `per_student:`: the roster the notebooks were written from (ids: the students' GitHub logins)",
    )
    out_folder(c5, "the classroom's folder; writes OUT/autograders/SLUG/")
    course_file(c5)
    c5.set_defaults(func=commands["classroom50-autograder"])

    rv = sub.add_parser(
        "review",
        help="grade the questions a person grades (manual: true) in a web page (alone, or several TAs: "
        "--serve, --hub), or through a spreadsheet (--export, --import)",
    )
    assignment_name(rv)
    rv.add_argument(
        "--grade",
        nargs="+",
        metavar="PATH",
        help="grade these notebooks or folders into --out first "
        "(as `grader grade PATH... --assignment NAME --out DIR`)",
    )
    out_folder(rv, "the output folder of `grader grade` (its grades.sqlite keeps the grades)", "scorecards")
    course_file(rv)
    rv.add_argument(
        "--export", metavar="CSV", help="write the grades to CSV (student, question, points, comment) and exit"
    )
    rv.add_argument(
        "--import",
        dest="import_csv",
        metavar="CSV",
        help="read grades from CSV (student, question, points, comment), all rows or none, and exit",
    )
    rv.add_argument(
        "--grader",
        help="your name, recorded with each grade (default: the login name); with --serve or --hub, each TA's own",
    )
    rv.add_argument("--port", type=int, default=0, help="the page's port on 127.0.0.1 (default: a free one)")
    rv.add_argument("--anonymous", action="store_true", help="hide students' names while grading")
    rv.add_argument(
        "--serve",
        action="store_true",
        help="a page for several teaching assistants, each with a token of their own (with --graders)",
    )
    rv.add_argument(
        "--graders", metavar="CSV", help="with --serve: the teaching assistants, one `name` a row (tokens printed once)"
    )
    rv.add_argument(
        "--new-tokens", nargs="*", metavar="NAME", help="with --serve: new tokens for these TAs (none: all)"
    )
    rv.add_argument(
        "--hub", action="store_true", help="run as a JupyterHub service: the group review.graders_group grades"
    )
    rv.add_argument("--split", choices=("question", "students"), help="divide the work among the graders")
    rv.add_argument("--listen", metavar="HOST:PORT", help="with --serve or --hub: where the page listens")
    rv.add_argument(
        "--behind-proxy",
        action="store_true",
        help="an HTTPS proxy forwards to the page: trust its X-Forwarded-Proto and -For (one hop)",
    )
    rv.add_argument("--public-url", metavar="URL", help="the address the graders open (printed in their links)")
    rv.set_defaults(func=commands["review"])

    w = sub.add_parser("classroom-workflow", help="write the (legacy) GitHub Classroom workflow for an assignment")
    assignment_name(w)
    w.add_argument(
        "--grading-repo",
        required=True,
        help="OWNER/NAME of the private course repository "
        "(the output of grader grading-bundle: the grader, config.yaml and the reference bundle)",
    )
    w.add_argument("--notebook", help="path of the notebook in the student's repository (default: NAME.ipynb)")
    out_folder(w, "the starter repository")
    course_file(w)
    w.set_defaults(func=commands["classroom-workflow"])
    return ap
