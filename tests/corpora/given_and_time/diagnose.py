#!/usr/bin/env python3
"""What a case's later runs saw: evidence for a failure, not part of the truth.

The scorecard lists the errors of the run on the notebook's own data only; a variant run's error
shows in a question's feedback ("the code fails when `x` changes: cell N raised ..."). So this
copies a case's notebook, makes the cell that computes `y` raise START's findings (`_start_bad`)
when there are any (as the name of the exception's class: only the name reaches the feedback), grades it alone and prints y's feedback: what the variant runs found when
they started.

usage: diagnose.py CASE [--grader PATH] [--as-user USER]
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import course  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--as-user", default="")
    args = ap.parse_args()
    wrap = (lambda cmd: ["runuser", "-u", args.as_user, "--"] + cmd) if args.as_user else (lambda cmd: cmd)
    work = Path(tempfile.mkdtemp(prefix="given-time-diag-"))
    work.chmod(0o755)
    (work / "course").mkdir()
    (work / "sub").mkdir()
    nb = nbformat.read(HERE / "notebooks" / f"{args.case}.ipynb", as_version=4)
    for c in nb.cells:
        if c.source.startswith("y = x * total"):
            c.source = (
                "import re as _re\nif _start_bad:\n"
                "    raise type('Saw__' + _re.sub(r'\\W+', '_', ' ; '.join(_start_bad))[:300], (Exception,), {})()\n"
                + c.source
            )
    nbformat.write(nb, work / "sub" / f"{args.case}.ipynb")
    if args.as_user:
        subprocess.run(["chown", "-R", args.as_user, str(work)], check=True)
    course.write_course(work / "course", args.grader, wrap=wrap)
    cmd = [
        args.grader,
        "grade",
        str(work / "sub"),
        "-a",
        "given_data",
        "-o",
        str(work / "out"),
        "--formats",
        "yaml",
        "--force",
    ]
    p = subprocess.run(wrap(cmd), cwd=work / "course", capture_output=True, text=True)
    print(p.stdout[-600:])
    card = yaml.safe_load((work / "out" / f"{args.case}.yaml").read_text())
    for q in card["questions"]:
        print(q["id"], q["score"], "/", q["max_score"], q.get("feedback"))
    print("errors:", (card.get("execution") or {}).get("errors"))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
