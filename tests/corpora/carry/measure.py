#!/usr/bin/env python3
"""Measure a grader's error-carried-forward against the corpus.

Grades every notebook folder notebooks/<assignment>/ as a class:
    cd <course copy> && GRADER grade notebooks/<assignment> --assignment <assignment> --out OUT/<assignment> --formats yaml
(the course copy, _course/ = config.yaml, solutions/, assignments/ copied from the grader's repository,
so that .grader-cache is written there and never into the repository), reads the YAML scorecards and
compares them with truth.json (decided by truth.py by direct execution, not by any grader).

Per question of every notebook, by the truth status:
  correct / carried  -> its expected points; fewer is FALSE BLAME
  root-wrong / wrong -> at most the points of its checks that are right or carried; more is FALSE CREDIT
  carried            -> the feedback must name the root question (its title or its id): else WRONG ROOT
                        ("(credited)": of those, the steps that did get their points)
                        (a root = the question of the first wrong upstream value, traced through
                        carried steps); a "Likely mistake" hint or a typed-in accusation in a carried
                        step's feedback is counted as STRAY.
  root-wrong / wrong questions whose right-given-their-own-upstream checks lost points: PART LOST.

usage: measure.py [--grader PATH] [--out DIR] [--only SUBSTR] [--keep-course] [--verbose]
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
EPS = 0.011


def prepare_course(grader, course):
    repo = Path(grader).resolve().parents[2]
    if not (repo / "config.yaml").exists():
        repo = Path(__file__).resolve().parents[3]
    course.mkdir(parents=True, exist_ok=True)
    for part in ("config.yaml", "solutions", "assignments"):
        src, dst = repo / part, course / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy(src, dst)
    return repo


def norm(s):
    return re.sub(r"\\(.)", r"\1", s).replace("*", "").replace("`", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(Path(__file__).resolve().parents[3] / ".venv/bin/grader"))
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--only", default="", help="only notebooks whose name contains this")
    ap.add_argument("--no-grade", action="store_true", help="reuse the scorecards already in --out")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()

    truth = json.loads((HERE / "truth.json").read_text())
    classes = json.loads((HERE / "classes.json").read_text())
    course = HERE / "_course"
    out = Path(args.out).resolve()
    repo = prepare_course(args.grader, course)
    config = yaml.safe_load((course / "config.yaml").read_text())
    titles = {a: {q["id"]: q["title"] for q in spec["questions"]} for a, spec in config["assignments"].items()}

    names = [n for n in truth if args.only in n]
    asgs = sorted({truth[n]["assignment"] for n in names})
    if not args.no_grade:
        for asg in asgs:
            src = HERE / "notebooks" / asg
            odir = out / asg
            if odir.exists():
                shutil.rmtree(odir)
            odir.mkdir(parents=True)
            # grade the class folder (or only the selected notebooks)
            paths = (
                [str(src)]
                if not args.only
                else [str(src / f"{n}.ipynb") for n in names if truth[n]["assignment"] == asg]
            )
            cmd = [
                args.grader,
                "grade",
                *paths,
                "--assignment",
                asg,
                "--out",
                str(odir),
                "--formats",
                "yaml",
                "--force",
            ]
            r = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
            (odir / "_grader_stdout.txt").write_text(r.stdout + "\n--- stderr\n" + r.stderr)
            if r.returncode != 0:
                print(f"!! grader exited {r.returncode} on {asg}: {r.stderr[-500:]}", file=sys.stderr)

    rows = defaultdict(lambda: defaultdict(int))
    details = []
    for n in sorted(names):
        t = truth[n]
        asg, cls = t["assignment"], t["cls"]
        card_path = out / asg / f"{n}.yaml"
        row = rows[cls]
        row["notebooks"] += 1
        if not card_path.exists():
            row["no_scorecard"] += 1
            details.append(f"{n}: no scorecard")
            continue
        card = yaml.safe_load(card_path.read_text())
        got = {q["id"]: q for q in card.get("questions", [])}
        for qid, tq in t["questions"].items():
            g = got.get(qid)
            st = tq["status"]
            row[f"n_{st}"] += 1
            if g is None:
                row["missing_question"] += 1
                details.append(f"{n} {qid}: not in scorecard")
                continue
            score, exp, mx = float(g.get("score") or 0), tq["expected_score"], tq["max_score"]
            fb = " ".join(str(x) for x in (g.get("feedback") or []))
            fbn = norm(fb)
            tag = f"{n} {qid} [{st}{'<' + '+'.join(tq['roots']) if tq['roots'] else ''}] got {score:g}/{mx:g} ({g.get('status')}) expected {exp:g}"
            if st in ("correct", "carried"):
                if score < exp - EPS:
                    row["false_blame"] += 1
                    row[f"false_blame_{st}"] += 1
                    details.append("FALSE BLAME  " + tag + " | " + fb[:400])
                if st == "carried" and tq["roots"]:
                    named = [
                        r for r in tq["roots"] if norm(titles[asg][r]) in fbn or re.search(rf"\b{re.escape(r)}\b", fb)
                    ]
                    if not named:
                        row["wrong_root"] += 1
                        if score >= exp - EPS:
                            row["wrong_root_credited"] += 1
                        details.append(
                            "WRONG ROOT   " + tag + f" | carried_forward={g.get('carried_forward')} | " + fb[:400]
                        )
                    elif len(named) < len(tq["roots"]):
                        row["root_partly_named"] += 1
                        details.append(
                            "ROOT PARTLY  " + tag + f" | carried_forward={g.get('carried_forward')} | " + fb[:300]
                        )
                if st == "carried" and re.search(r"Likely mistake|typed|type[sd]? in", fb, re.I):
                    row["stray"] += 1
                    details.append("STRAY        " + tag + " | " + fb[:400])
            else:
                if score > exp + EPS:
                    row["false_credit"] += 1
                    details.append("FALSE CREDIT " + tag + " | " + fb[:400])
                elif score < exp - EPS:
                    row["part_lost"] += 1
                    details.append("PART LOST    " + tag + " | " + fb[:300])
            if args.verbose:
                details.append("   ok        " + tag)

    cols = [
        "notebooks",
        "no_scorecard",
        "n_correct",
        "n_carried",
        "n_root-wrong",
        "n_wrong",
        "false_credit",
        "false_blame",
        "false_blame_carried",
        "wrong_root",
        "wrong_root_credited",
        "root_partly_named",
        "stray",
        "part_lost",
    ]
    short = [
        "nbs",
        "nocard",
        "corr",
        "carr",
        "root",
        "wrong",
        "F.CREDIT",
        "F.BLAME",
        "(of carr)",
        "WRONGROOT",
        "(credited)",
        "rootpart",
        "stray",
        "partlost",
    ]
    print(f"grader: {args.grader}  (course copied from {repo})")
    print(f"{'class':6}" + "".join(f"{s:>10}" for s in short))
    tot = defaultdict(int)
    for cls in sorted(rows):
        print(f"{cls:6}" + "".join(f"{rows[cls][c]:>10}" for c in cols))
        for c in cols:
            tot[c] += rows[cls][c]
    print(f"{'total':6}" + "".join(f"{tot[c]:>10}" for c in cols))
    print()
    for cls in sorted(rows):
        print(f"  {cls}: {classes.get(cls, '')}")
    print()
    for d in details:
        print(d)


if __name__ == "__main__":
    main()
