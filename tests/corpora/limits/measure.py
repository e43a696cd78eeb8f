#!/usr/bin/env python3
"""Measure a grader against the limits corpus (issue 46). Decided from truth.json alone.

Each attack case is graded in a batch with the honest control (`control_plain`), `--jobs 2`:
  grader grade CASE.ipynb control_plain.ipynb -a attention_numpy -o OUT --jobs 2 --formats yaml
under a background load (--load N busy processes, default 4, as issue 46's "load of 4 or more").
A case's truth items, each a row of the table:
  score        the case's scorecard score equals truth (11 for bursts/fills: see build.py's verdict)
  control      the control in the same batch scores 11/11
  batch_time   the batch's wall time <= batch_seconds (bursts, fills)
  disk_line    (fills) the case's scorecard, outside its `sandbox:` lists, says the disk limit was met
               (a line matching disk|space|ENOSPC|EFBIG|file size|wrote|written)
  frame_cost   (huge values) wall(case + control) - wall(twin + control) <= max_extra_seconds
  no_traceback the grader printed no Python traceback and exited 0

usage: measure.py [--grader PATH] [--load N] [--only SUBSTR] [--as-user USER] [--keep]
  --as-user USER  run the grader as that ordinary user (runuser; needs root), the setting of issue 46
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DISK_RE = re.compile(r"disk|space|ENOSPC|EFBIG|file size|wrote|written", re.I)


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


def scorecard(out, stem):
    p = out / f"{stem}.yaml"
    if not p.exists():
        return None
    return yaml.safe_load(p.read_text())


def text_without_sandbox(card):
    c = json.loads(json.dumps(card, default=str))
    ex = c.get("execution") or {}
    ex.pop("sandbox", None)
    ex.pop("sandbox_not_enforced", None)
    for q in c.get("questions", []):
        q.pop("title", None)
    return json.dumps(c)


def run_batch(args, course, work, tag, names):
    sub = work / f"sub-{tag}"
    out = work / f"out-{tag}"
    sub.mkdir()
    for n in names:
        shutil.copy(HERE / "notebooks" / f"{n}.ipynb", sub / f"{n}.ipynb")
    cmd = [
        args.grader,
        "grade",
        str(sub),
        "-a",
        "attention_numpy",
        "-o",
        str(out),
        "--jobs",
        "2",
        "--formats",
        "yaml",
        "--force",
    ]
    if args.as_user:
        subprocess.run(["chown", "-R", args.as_user, str(work)], check=True)
        cmd = ["runuser", "-u", args.as_user, "--"] + cmd
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=course, capture_output=True, text=True, timeout=600)
        rc, txt = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, txt = "timeout", ""
    return time.monotonic() - t0, rc, txt, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--load", type=int, default=4)
    ap.add_argument("--only", default="")
    ap.add_argument("--as-user", default="")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    truth = json.loads((HERE / "truth.json").read_text())
    cases = truth["cases"]
    work = Path(tempfile.mkdtemp(prefix="limits-corpus-"))
    os.chmod(work, 0o755)
    course = course_copy(args.grader, work)
    load = [
        subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()\nwhile time.time()-t<3600: pass"])
        for _ in range(args.load)
    ]
    rows = []
    try:
        # warm the grader's caches once, so the first case does not pay for them
        run_batch(args, course, work, "warm", ["control_plain"])
        walls = {}
        for name, t in cases.items():
            if args.only and args.only not in name:
                continue
            if t["kind"] == "control":
                continue
            batch = [name] + (["control_plain"] if name != "control_plain" else [])
            wall, rc, txt, out = run_batch(args, course, work, name, batch)
            walls[name] = wall
            card = scorecard(out, name)
            ctl = scorecard(out, "control_plain")
            got = card.get("score") if card else None
            status = card.get("status") if card else "no scorecard"
            items = [
                (
                    "score",
                    got == t["score"],
                    f"{got}/{card.get('max_score') if card else '?'} ({status}), truth {t['score']}",
                ),
                (
                    "control",
                    (ctl or {}).get("score") == t.get("control_score", 11),
                    f"control {(ctl or {}).get('score')}",
                ),
            ]
            if "batch_seconds" in t:
                items.append(("batch_time", wall <= t["batch_seconds"], f"{wall:.1f} s <= {t['batch_seconds']}"))
            if t.get("scorecard_says_disk"):
                said = bool(card) and bool(DISK_RE.search(text_without_sandbox(card)))
                items.append(("disk_line", said, "said" if said else "nothing about the disk"))
            items.append(("no_traceback", rc == 0 and "Traceback" not in txt, f"exit {rc}"))
            for item, ok, detail in items:
                rows.append((name, item, ok, detail))
            print(f"  {name}: {wall:.1f} s", file=sys.stderr)
        for name, t in cases.items():
            if t["kind"] == "huge_value" and name in walls and name + "__twin" in walls:
                extra = walls[name] - walls[name + "__twin"]
                rows.append(
                    (
                        name,
                        "frame_cost",
                        extra <= t["max_extra_seconds"],
                        f"{extra:+.1f} s vs twin (<= {t['max_extra_seconds']})",
                    )
                )
        if not args.only or "control" in args.only:
            wall, rc, txt, out = run_batch(args, course, work, "controls", ["control_plain", "control_modest"])
            for n in ("control_plain", "control_modest"):
                card = scorecard(out, n)
                got = card.get("score") if card else None
                rows.append((n, "score", got == cases[n]["score"], f"{got}, truth {cases[n]['score']}"))
    finally:
        for p in load:
            p.kill()
            p.wait()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work, file=sys.stderr)
    rows.sort(key=lambda r: (cases[r[0]]["kind"], r[0]))
    print("| case | kind | truth item | agreed | detail |\n|---|---|---|---|---|")
    for name, item, ok, detail in rows:
        print(f"| {name} | {cases[name]['kind']} | {item} | {'agreed' if ok else 'DISAGREED'} | {detail} |")
    agreed = sum(r[2] for r in rows)
    print(f"\n{agreed} / {len(rows)} truth items agreed (load {args.load}, user {args.as_user or os.getuid()})")
    by_kind = {}
    for name, item, ok, _ in rows:
        k = cases[name]["kind"]
        a, n = by_kind.get(k, (0, 0))
        by_kind[k] = (a + ok, n + 1)
    for k, (a, n) in sorted(by_kind.items()):
        print(f"  {k}: {a} / {n}")


if __name__ == "__main__":
    main()
