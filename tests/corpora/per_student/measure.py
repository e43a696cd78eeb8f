#!/usr/bin/env python3
"""Measure a grader against the per-student corpus (issue 44). Right or wrong from truth.csv alone.

Steps, in a private copy of the course (config.yaml with per_student.yaml's block, or --config FILE):
  1. grader assign attention_numpy --per-student roster.csv --out PS     (30 notebooks)
     and grader assign attention_numpy                                    (the generic skeleton)
  2. scenarios.py PS SKELETON FRENCH SUBS                                 (the class's submissions)
  3. grader grade SUBS -a attention_numpy -o OUT --roster roster.csv --formats yaml,canvas
If step 1 or 2 fails, every item is "not supported" (the before of a product without the feature).

Truth items per roster row (and the student not on it):
  score   canvas.csv's grade for the row's lms_id equals truth (blank where truth is blank)
  flag    truth flags (classmate's notebook, edited id, generic skeleton, another assignment, not on
          roster): a line of the output (stdout, stderr, or a file under OUT) names the folder and says
          which (FLAGS below), and for a classmate or an edited id names the other student too;
          truth does not flag: no such line names the folder (no false accusation)
Also: assign writes one notebook per student, each holding the id, deterministic (a second run gives
byte-identical notebooks).

usage: measure.py [--grader PATH] [--config FILE] [--keep]
"""

import argparse
import csv
import filecmp
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
FLAGS = {
    "classmate_notebook": r"classmate|another student|someone else|belongs to|other student|not (their|the student's) own|signed (for|by)",
    "edited_id": r"edit|tamper|signature|forged|altered|does not match|mismatch|invalid",
    "generic_skeleton": r"generic|skeleton|not (a |the )?per-student|no student id|unsigned|without (a |an )?(student )?id",
    "another_assignment": r"another assignment|other assignment|attention_french|wrong assignment|not attention_numpy",
    "not_on_roster": r"roster",
}
ANY_FLAG = "|".join(f"(?:{v})" for k, v in FLAGS.items() if k != "not_on_roster")


def course_copy(grader, work, block):
    repo = Path(grader).resolve().parents[2]
    if not (repo / "config.yaml").exists():
        repo = HERE.parents[2]
    course = work / "course"
    course.mkdir(parents=True)
    for part in ("config.yaml", "solutions", "assignments"):
        s = repo / part
        (shutil.copytree if s.is_dir() else shutil.copy)(s, course / part)
    cfg = yaml.safe_load((course / "config.yaml").read_text())
    cfg["assignments"]["attention_numpy"].update(block)
    (course / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return course


def run(cmd, cwd):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=1200)
    return p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--config", default=str(HERE / "per_student.yaml"))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--per-student-dir",
        default="",
        help="notebooks already written (skip step 1; e.g. fake_assign.py's, to check this script)",
    )
    args = ap.parse_args()
    truth = list(csv.DictReader(open(HERE / "truth.csv")))
    roster = {r["submission"]: r for r in csv.DictReader(open(HERE / "roster.csv"))}
    work = Path(tempfile.mkdtemp(prefix="per-student-corpus-"))
    course = course_copy(args.grader, work, yaml.safe_load(Path(args.config).read_text()))
    rows, unsupported = [], None
    ps, ps2 = work / "ps", work / "ps2"
    if args.per_student_dir:
        shutil.copytree(args.per_student_dir, ps)
        shutil.copytree(args.per_student_dir, ps2)
        rc, txt = 0, ""
    else:
        rc, txt = run(
            [args.grader, "assign", "attention_numpy", "--per-student", HERE / "roster.csv", "--out", ps], course
        )
    if rc != 0:
        unsupported = "assign --per-student: exit %s: %s" % (
            rc,
            txt.strip().splitlines()[-1][:160] if txt.strip() else "",
        )
    else:
        if not args.per_student_dir:
            run([args.grader, "assign", "attention_numpy", "--per-student", HERE / "roster.csv", "--out", ps2], course)
        nbs = sorted(p.relative_to(ps) for p in ps.rglob("*.ipynb"))
        rows.append(("(assign)", "one notebook per student", len(nbs) >= 30, f"{len(nbs)} notebooks"))
        same = all((ps2 / p).exists() and filecmp.cmp(ps / p, ps2 / p, shallow=False) for p in nbs)
        rows.append(("(assign)", "deterministic", same, "byte-identical on a second run" if same else "differs"))
        run([args.grader, "assign", "attention_numpy"], course)
        generic = course / "assignments/attention_numpy/attention_numpy.ipynb"
        french = course / "assignments/attention_french/attention_french.ipynb"
        subs = work / "subs"
        p = subprocess.run(
            [sys.executable, HERE / "scenarios.py", ps, generic, french, subs], capture_output=True, text=True
        )
        if p.returncode != 0:
            unsupported = "scenarios: " + (p.stdout + p.stderr).strip().splitlines()[-1][:160]
    if unsupported:
        for t in truth:
            rows.append((t["folder"], "score", None, unsupported))
            rows.append((t["folder"], "flag", None, unsupported))
    else:
        out = work / "out"
        rc, txt = run(
            [
                args.grader,
                "grade",
                subs,
                "-a",
                "attention_numpy",
                "-o",
                out,
                "--roster",
                HERE / "roster.csv",
                "--formats",
                "yaml,canvas",
            ],
            course,
        )
        alltext = txt
        for f in out.rglob("*"):
            if f.is_file() and f.suffix in (".yaml", ".json", ".md", ".txt", ".csv", ".html"):
                alltext += "\n" + f.read_text(errors="replace")
        lines = alltext.splitlines()
        book = {}
        cpath = out / "canvas.csv"
        if cpath.exists():
            rr = list(csv.reader(open(cpath, encoding="utf-8-sig")))
            head = rr[0]
            gi = [i for i, h in enumerate(head) if h not in {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"}]
            for r in rr[1:]:
                if len(r) > 1 and r[0] != "Points Possible":
                    book[r[1]] = r[gi[0]] if gi and gi[0] < len(r) else ""
        for t in truth:
            f = t["folder"]
            if t["on_roster"] == "yes":
                got = book.get(str(roster[f]["lms_id"]))
                want = t["score"]
                ok = (
                    (got in (None, ""))
                    if want == ""
                    else (got not in (None, "") and abs(float(got) - float(want)) < 0.01)
                )
                rows.append((f, "score", ok, f"gradebook {got!r}, truth {want or 'blank'}"))
            else:
                ok = not any(f in line for line in open(cpath, encoding="utf-8-sig")) if cpath.exists() else True
                rows.append((f, "score", ok, "no gradebook row" if ok else "a row was written"))
            mine = [l for l in lines if re.search(r"(^|[^A-Za-z0-9])%s([^A-Za-z0-9]|$)" % re.escape(f), l)]
            kind = t["flag"].split(":")[0]
            if kind:
                other = t["flag"].split(":")[1] if ":" in t["flag"] else None
                hit = [l for l in mine if re.search(FLAGS[kind], l, re.I) and (other is None or other in l)]
                rows.append(
                    (
                        f,
                        "flag",
                        bool(hit),
                        (
                            hit[0].strip()[:100]
                            if hit
                            else f"no line says {kind}" + (f" naming {other}" if other else "")
                        ),
                    )
                )
            elif t["scenario"] != "no_submission":
                hit = [l for l in mine if re.search(ANY_FLAG, l, re.I)]
                rows.append((f, "flag", not hit, "not flagged" if not hit else "flagged: " + hit[0].strip()[:100]))
    if args.keep:
        print("kept", work, file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    scen = {t["folder"]: t["scenario"] for t in truth}
    print("| folder | scenario | item | agreed | detail |\n|---|---|---|---|---|")
    for f, item, ok, d in rows:
        mark = "not supported" if ok is None else ("agreed" if ok else "DISAGREED")
        print(f"| {f} | {scen.get(f, '')} | {item} | {mark} | {d} |")
    a = sum(1 for r in rows if r[2])
    print(
        f"\n{a} / {len(rows)} truth items agreed"
        + (f" ({sum(1 for r in rows if r[2] is None)} not supported)" if unsupported else "")
    )


if __name__ == "__main__":
    main()
