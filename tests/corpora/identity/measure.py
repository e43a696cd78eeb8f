#!/usr/bin/env python3
"""Measure a grader against the identity corpus.

For every class under classes/ (each with truth.json and roster.csv), run
  grader grade INPUT --assignment attention_numpy --out OUT --formats canvas,moodle --roster roster.csv
(once, or twice for a class with late submissions: the second run adds them to the class folder and
writes into the same OUT), then read OUT/canvas.csv, OUT/moodle.csv, the exit status and the messages.
Right or wrong is decided from truth.json only.

Cases:
  * one per roster row and run: the row's grade in canvas.csv (row by its ID = lms_id) and in
    moodle.csv (row by Email address) must both equal the expected score, or both be blank/absent
    when truth says "blank";
  * one per run: the exit status (0, or non-zero for an ambiguity), no traceback in the output,
    and for an ambiguity each party named in the message (any one of its listed names).

usage: measure.py [--grader PATH] [--course DIR] [--only SUBSTR] [--keep] [--verbose]
"""

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXED_CANVAS = {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"}


def prepare_course(grader, course_arg, work):
    """A private copy of the course (config.yaml, solutions/, assignments/), so that the grader's
    caches (.grader-cache beside config.yaml) are written here, never into the repository."""
    if course_arg:
        return Path(course_arg)
    repo = Path(grader).resolve().parents[2]
    if not (repo / "config.yaml").exists():
        repo = Path(__file__).resolve().parents[3]
    course = work / "course"
    course.mkdir(parents=True, exist_ok=True)
    for part in ("config.yaml", "solutions", "assignments"):
        src, dst = repo / part, course / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy(src, dst)
    return course


def read_csv(path):
    if not path.exists():
        return None
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.reader(fh))


def canvas_grades(path):
    """ID -> list of grade strings (a list, to see a row written twice); None if no file."""
    rows = read_csv(path)
    if rows is None:
        return None
    if not rows:
        return {}
    head = rows[0]
    gcols = [i for i, h in enumerate(head) if h not in FIXED_CANVAS]
    idc = head.index("ID") if "ID" in head else 1
    out = {}
    for r in rows[1:]:
        if not r or (r[0].strip() == "Points Possible"):
            continue
        key = r[idc].strip() if idc < len(r) else ""
        g = r[gcols[0]].strip() if gcols and gcols[0] < len(r) else ""
        out.setdefault(key, []).append(g)
    return out


def moodle_grades(path):
    rows = read_csv(path)
    if rows is None:
        return None
    if not rows:
        return {}
    head = rows[0]
    key_col = head.index("Email address") if "Email address" in head else 0
    gcol = next((i for i, h in enumerate(head) if i != key_col and not h.endswith("feedback")), 1)
    out = {}
    for r in rows[1:]:
        if not r:
            continue
        key = r[key_col].strip().lower() if key_col < len(r) else ""
        g = r[gcol].strip() if gcol < len(r) else ""
        out.setdefault(key, []).append(g)
    return out


def same(expected, got_list):
    """got_list: the grade strings written for the row (None = no file)."""
    if expected == "blank":
        return got_list is not None and all(g == "" for g in got_list)
    if not got_list or len(got_list) != 1:
        return False
    try:
        return abs(float(got_list[0]) - float(expected)) < 1e-9
    except ValueError:
        return False


def show(got_list):
    if got_list is None:
        return "no file"
    if not got_list:
        return "absent"
    return "/".join(g if g else "blank" for g in got_list)


def run_grader(grader, course, inp, out, roster, assignment):
    cmd = [
        grader,
        "grade",
        str(inp),
        "--assignment",
        assignment,
        "--out",
        str(out),
        "--formats",
        "canvas,moodle",
        "--roster",
        str(roster),
        "--config",
        str(course / "config.yaml"),
    ]
    try:
        p = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return "timeout", str(e.stdout or ""), str(e.stderr or "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grader", default=str(Path(__file__).resolve().parents[3] / ".venv/bin/grader"))
    ap.add_argument(
        "--course", help="course folder with config.yaml (default: a private copy of the grader's repo course)"
    )
    ap.add_argument("--only", help="only classes whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (printed)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each run's messages")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="identity-measure-"))
    course = prepare_course(args.grader, args.course, work)
    results = []  # (class, case, expected, got, ok)
    for cdir in sorted((HERE / "classes").iterdir()):
        truth_path = cdir / "truth.json"
        if not truth_path.exists() or (args.only and args.only not in cdir.name):
            continue
        truth = json.loads(truth_path.read_text())
        cname = truth["class"]
        cw = work / cname
        cw.mkdir(parents=True)
        # the class folder (or zip) as the grader gets it, in a scratch copy
        inp_rel = truth["input"]
        if inp_rel.endswith(".zip"):
            shutil.copy(cdir / inp_rel, cw / Path(inp_rel).name)
            inp = cw / Path(inp_rel).name
            batch = None
        else:
            shutil.copytree(cdir / "batch", cw / "batch")
            batch = cw / "batch"
            inp = cw / inp_rel
        out = cw / "out"
        for i, run in enumerate(truth["runs"], 1):
            if run.get("add_late"):
                shutil.copytree(cdir / "late", batch, dirs_exist_ok=True)
            rc, so, se = run_grader(args.grader, course, inp, out, cdir / truth["roster"], truth["assignment"])
            msgs = so + "\n" + se
            if args.verbose:
                print(f"=== {cname} run {i}: exit {rc}\n{msgs.strip()}\n")
            canvas = canvas_grades(out / "canvas.csv")
            moodle = moodle_grades(out / "moodle.csv")
            tag = f"run{i} " if len(truth["runs"]) > 1 else ""
            for row in run["rows"]:
                exp = row["expected"]
                c = None if canvas is None else canvas.get(row["lms_id"], [])
                m = None if moodle is None else moodle.get(row["email"].lower(), [])
                ok = same(exp, c) and same(exp, m)
                case = f"{tag}{row['student'].split()[0].lower()}: {row['case']}"
                if row.get("assumption"):
                    case += f" [{row['assumption']}]"
                results.append((cname, case, str(exp), f"canvas={show(c)} moodle={show(m)}", ok))
            st = run["status"]
            tb = "Traceback (most recent call last)" in msgs
            if st["exit"] == "nonzero":
                named = [any(n.lower() in msgs.lower() for n in group) for group in st["must_name_any_of_each"]]
                ok = rc not in (0, "timeout") and all(named) and not tb
                exp = "exit!=0, names " + " & ".join(g[0] for g in st["must_name_any_of_each"]) + ", no traceback"
                got = f"exit {rc}, named {sum(named)}/{len(named)}" + (", TRACEBACK" if tb else "")
                results.append((cname, f"{tag}error message / exit", exp, got, ok))
            else:
                ok = rc == st["exit"] and not tb
                results.append(
                    (
                        cname,
                        f"{tag}exit status",
                        f"exit {st['exit']}, no traceback",
                        f"exit {rc}" + (", TRACEBACK" if tb else ""),
                        ok,
                    )
                )

    w = [max(len(r[k]) for r in results + [("class", "case", "expected", "got", "")]) for k in range(4)]
    print(f"{'class':<{w[0]}}  {'case':<{w[1]}}  {'expected':<{w[2]}}  {'got':<{w[3]}}  ok")
    for r in results:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]:<{w[3]}}  {'yes' if r[4] else 'NO'}")
    right = sum(1 for r in results if r[4])
    print(f"\ntotal: {right} / {len(results)} cases right")
    per = {}
    for r in results:
        per.setdefault(r[0], [0, 0])
        per[r[0]][0] += r[4]
        per[r[0]][1] += 1
    print("by class: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in per.items()))
    if args.keep:
        print(f"work folder kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if right == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
