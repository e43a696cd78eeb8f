#!/usr/bin/env python3
"""Measure a grader against the LMS corpus (issue 45). Right or wrong is decided from truth.json alone.

For each class under classes/:
  grader grade INPUT -a attention_numpy -o OUT --roster roster.csv --formats yaml,canvas,moodle
in a private copy of the course whose config.yaml has the corpus's late policy (policy.yaml, plus the
class's times file) under `assignments.attention_numpy.late` (--policy FILE: the product's own spelling,
a YAML mapping with {times} standing for the class's times file). If that config is refused, the class
is graded again without the policy, so that intake is measured on its own (late items then disagree).

Truth items per student row:
  gradebook   canvas.csv (row by ID = lms_id) and moodle.csv (row by Email address) hold the final grade
              (within 0.01), or no grade at all for a student truth says is not graded into the gradebook
  listed      a student truth lists (off roster, renamed, other LMS's scheme, not accepted) is named in
              the grader's stdout/stderr on a line that gives a reason (REASON below), by file, name or id
  late_line   a penalised student's scorecard says the penalty ("-10 %", "−20%", ...)
  others      a student with several files: the files that did not count are named, in the output or a file
              under OUT, on a line saying they did not count (OLDER below)
and per class: exit status (0, or non-zero where truth says so), no traceback; canvas_naive: no canvas.csv.

usage: measure.py [--grader PATH] [--policy FILE] [--only CLASS] [--keep]
"""

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
# a line that lists a file for a reason, not a line of the score table
REASON = re.compile(
    r"roster|scheme|renamed|not accepted|deadline|cut-?off|\bunknown\b|not match|no match|skipp|ignor|"
    r"unrecogni[sz]ed|another LMS|not a (canvas|moodle|gradescope)|metadata",
    re.I,
)
OLDER = re.compile(
    r"\b(older|earlier|superseded|not count\w*|replaced|latest|resubmi\w*|previous|also submitted)\b", re.I
)


def course_copy(grader, work):
    repo = Path(grader).resolve().parents[2]
    if not (repo / "config.yaml").exists():
        repo = HERE.parents[2]
    course = work / "course"
    course.mkdir(parents=True)
    for part in ("config.yaml", "solutions", "assignments"):
        s = repo / part
        (shutil.copytree if s.is_dir() else shutil.copy)(s, course / part)
    return course


def set_policy(course, policy):
    cfg_path = course / "config.yaml"
    if not hasattr(set_policy, "orig"):
        set_policy.orig = cfg_path.read_text()
    cfg = yaml.safe_load(set_policy.orig)
    if policy is not None:
        cfg["assignments"]["attention_numpy"]["late"] = policy
        cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    else:
        cfg_path.write_text(set_policy.orig)


def read_rows(path):
    if not path.exists():
        return None
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.reader(fh))


def grade_in(rows, key_col, key, skip_cols):
    """The first grade-looking cell in the row whose key_col equals key; '' if blank; None if no row."""
    if not rows:
        return None
    head = rows[0]
    if key_col not in head:
        return None
    k = head.index(key_col)
    for r in rows[1:]:
        if len(r) > k and r[k].strip().lower() == str(key).lower():
            for i, h in enumerate(head):
                if h in skip_cols or i == k or "feedback" in h.lower():
                    continue
                return r[i].strip() if i < len(r) else ""
            return ""
    return None


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--policy", default=str(HERE / "policy.yaml"))
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    truth = json.loads((HERE / "truth.json").read_text())
    policy_text = Path(args.policy).read_text()
    work = Path(tempfile.mkdtemp(prefix="lms-corpus-"))
    course = course_copy(args.grader, work)
    rows = []
    canvas_fixed = {"Student", "ID", "SIS User ID", "SIS Login ID", "Section"}
    for cname, cl in truth["classes"].items():
        if args.only and args.only != cname:
            continue
        inp = HERE / cl["input"]
        times = str(HERE / cl["times"]) if (HERE / cl["times"]).exists() else cl["times"]
        policy = yaml.safe_load(policy_text.replace("{times}", times))
        if isinstance(policy, dict) and "{times}" not in policy_text:
            policy["times"] = times if (HERE / cl["times"]).exists() else policy.get("times")
        out = work / f"out-{cname}"
        cmd = [
            args.grader,
            "grade",
            str(inp),
            "-a",
            "attention_numpy",
            "-o",
            str(out),
            "--roster",
            str(HERE / "roster.csv"),
            "--formats",
            "yaml,canvas,moodle",
        ]
        set_policy(course, policy)
        p = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900)
        txt = p.stdout + p.stderr
        policy_refused = p.returncode != 0 and ("config.yaml" in txt and "late" in txt)
        note = ""
        if policy_refused:
            note = "late policy refused by config: " + txt.strip().splitlines()[-1][:120]
            shutil.rmtree(out, ignore_errors=True)
            set_policy(course, None)
            p = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=900)
            txt = p.stdout + p.stderr
        outtext = txt
        cards = []
        if out.exists():
            for f in out.rglob("*"):
                if (
                    f.is_file()
                    and f.suffix in (".yaml", ".json", ".md", ".txt", ".csv", ".html")
                    and f.stat().st_size < 2_000_000
                ):
                    s = f.read_text(errors="replace")
                    outtext += "\n" + s
                    if f.suffix == ".yaml":
                        cards.append(s)
        canvas = read_rows(out / "canvas.csv")
        moodle = read_rows(out / "moodle.csv")
        want_exit = cl["exit"]
        ok_exit = (p.returncode == 0) if want_exit == 0 else (p.returncode != 0 and p.returncode is not None)
        rows.append(
            (
                cname,
                "(class)",
                "exit",
                ok_exit,
                f"exit {p.returncode}, truth {want_exit}" + (f"; {note}" if note else ""),
            )
        )
        rows.append((cname, "(class)", "no_traceback", "Traceback" not in txt, ""))
        if cname == "canvas_naive":
            rows.append(
                (
                    cname,
                    "(class)",
                    "nothing_half_written",
                    canvas is None,
                    "canvas.csv absent" if canvas is None else "canvas.csv written",
                )
            )
            named = bool(re.search(r"zone|offset|timezone|time zone", txt, re.I))
            rows.append(
                (cname, "(class)", "reason_named", named, "names the missing zone" if named else txt.strip()[-120:])
            )
        for last, st in cl["students"].items():
            final = st.get("final")
            in_book = st.get("graded_into_gradebook")
            g1 = grade_in(canvas, "ID", st["lms_id"], canvas_fixed)
            g2 = grade_in(moodle, "Email address", st["email"], set())
            if in_book:
                ok = all(num(g) is not None and abs(num(g) - final) <= 0.01 for g in (g1, g2))
            else:
                ok = all(g is None or g == "" for g in (g1, g2))
            rows.append(
                (
                    cname,
                    st["name"],
                    "gradebook",
                    ok,
                    f"canvas {g1!r}, moodle {g2!r}, truth {final if in_book else 'none'}",
                )
            )
            if st.get("listed_reason"):
                base = Path(st["file_counts"]).name
                keys = [base, st["name"], str(st["lms_id"])]
                said = any(
                    any(k in line for k in keys) and REASON.search(line) and not line.startswith("identical files")
                    for line in txt.splitlines()
                )
                rows.append((cname, st["name"], "listed", said, st["listed_reason"]))
            pct = st.get("penalty_percent")
            if pct:
                mine = [
                    c
                    for c in cards
                    if st["email"] in c
                    or st["name"] in c
                    or Path(st["file_counts"]).name in c
                    or re.search(r"\b%s\b" % st["lms_id"], c)
                ]
                pat = re.compile(r"[-−–]\s*%s(\.0+)?\s*%%" % pct)
                said = any(pat.search(c) for c in mine)
                rows.append(
                    (cname, st["name"], "late_line", said, f"-{pct} % expected in the scorecard ({len(mine)} found)")
                )
            for other in st.get("others_listed", []):
                who = (
                    st["name"],
                    st["name"].split()[-1],
                    str(st["lms_id"]),
                    other.split("_")[1] if "_" in other else other,
                )
                said = any(
                    (other in line or (Path(other).name in line and any(w in line for w in who))) and OLDER.search(line)
                    for line in outtext.splitlines()
                )
                rows.append((cname, st["name"], "others", said, f"{Path(other).name} named"))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept", work, file=sys.stderr)
    print("| class | student | item | agreed | detail |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {'agreed' if r[3] else 'DISAGREED'} | {r[4]} |")
    a = sum(r[3] for r in rows)
    print(f"\n{a} / {len(rows)} truth items agreed")
    kinds = {}
    for r in rows:
        x = kinds.setdefault(r[2], [0, 0])
        x[0] += r[3]
        x[1] += 1
    for k, (x, n) in kinds.items():
        print(f"  {k}: {x} / {n}")


if __name__ == "__main__":
    main()
