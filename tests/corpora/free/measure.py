"""Grade every notebook of this corpus with the grader and compare, per question, with the truth files.

    /work/main/.venv/bin/python measure.py [--main /work/main] [--grader PATH] [--out DIR] [--only SUBSTR]
                                           [--no-force] [--jobs N] [--all-rows]

Prints one row per (notebook, question): truth, grader, agree?; the grader's feedback for every
disagreement; totals (questions agreeing, false credit = grader gave more than the truth, false blame =
grader gave less); and flags for student-facing messages that reveal a hidden reference value (a number
of the solution's value on the notebook's data that the student's own value does not hold) or look
unreadable to a student (tracebacks, object reprs, internal record names, very long lines).

The grader runs in a private copy of the course (OUT/_course: config.yaml, solutions/, assignments/ of
--main), so no cache is written into --main. Nothing here reads the grader's code."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

UNREADABLE = [
    (re.compile(r"Traceback \(most recent call last\)"), "raw traceback"),
    (re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"), "object repr"),
    (
        re.compile(r"\b(CarriedForward|VariantTypedIn|NeedsFailed|CellFailed|TestFailed|Differs|Missing)\("),
        "internal record",
    ),
    (re.compile(r"\blambda\b"), "lambda expression"),
    (re.compile(r"__\w+__"), "dunder name"),
    (re.compile(r"/(tmp|work|home|root)/\S+"), "file path of the grading machine"),
    (re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]"), "control character"),
    (re.compile(r"\bNone\b.*\bNone\b.*\bNone\b"), "None soup"),
]


def course_copy(main, out):
    dst = os.path.join(out, "_course")
    os.makedirs(dst, exist_ok=True)
    shutil.copy2(os.path.join(main, "config.yaml"), os.path.join(dst, "config.yaml"))
    for d in ("solutions", "assignments"):
        if os.path.exists(os.path.join(dst, d)):
            shutil.rmtree(os.path.join(dst, d))
        shutil.copytree(os.path.join(main, d), os.path.join(dst, d))
    return dst


def numbers(text):
    return re.findall(r"-?\d+\.\d{2,}", text)


def flat_numbers(v):
    import numpy as np

    p = harness.to_plain(v)
    try:
        a = np.asarray(p, dtype=float).ravel()
    except Exception:
        return []
    return [x for x in a.tolist() if x == x and abs(x) not in (float("inf"),)]


def reveals(line, ref_vals, own_vals):
    """Numbers in a feedback line that equal a reference element (to the decimals shown) and no element of
    the student's own value."""
    hits = []
    for s in numbers(line):
        dec = len(s.split(".")[1])
        x = float(s)
        if dec < 2:
            continue

        def match(vals):
            return any(round(v, dec) == round(x, dec) or abs(v - x) < 0.5 * 10**-dec for v in vals)

        if match(ref_vals) and not match(own_vals):
            hits.append(s)
    return hits


def values_for_flags(main, asg, srcs, checks):
    before = {c[3]: c[6] for c in checks if c[6]}
    ns, _, snaps = harness.run(srcs, asg, main, before=before)
    out = {}
    for qid, i, kind, target, pts, seed, bef in checks:
        try:
            out.setdefault(qid, []).extend(flat_numbers(harness.evaluate(ns, snaps, kind, target, seed, bef)))
        except Exception:
            pass
    return out


def cached_values(a, asg, path, checks, solution, salt=""):
    import hashlib

    cfgb = open(os.path.join(a.main, "config.yaml"), "rb").read()
    h = hashlib.sha256(open(path, "rb").read() + cfgb + (open(salt, "rb").read() if salt else b"")).hexdigest()[:24]
    cdir = os.path.join(a.out, "_values_cache")
    os.makedirs(cdir, exist_ok=True)
    cp = os.path.join(cdir, f"{asg}-{os.path.basename(path)}-{h}.json")
    if os.path.exists(cp):
        return json.load(open(cp))
    nb = json.load(open(path))
    srcs = harness.cell_sources(nb)
    if solution:
        srcs = [s.replace("# SOLUTION", "") for s in srcs]
    vals = values_for_flags(a.main, asg, srcs, checks)
    json.dump(vals, open(cp, "w"))
    return vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--main", default="/work/main")
    ap.add_argument("--grader", default=None)
    ap.add_argument("--out", default="/tmp/free-corpus-out")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-force", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--all-rows",
        action="store_true",
        help="print agreeing rows too (default: only notebooks' disagreements + totals)",
    )
    ap.add_argument("--no-flags", action="store_true", help="skip the reference-value leak check (saves ~1 min)")
    a = ap.parse_args()
    grader = a.grader or os.path.join(a.main, ".venv", "bin", "grader")
    os.makedirs(a.out, exist_ok=True)
    course = course_copy(a.main, a.out)
    cfg = harness.load_config(a.main)
    t0 = time.time()

    rows = []  # (asg, nb, qid, truth, got, status, feedback lines)
    fbrows = []  # (nb, qid, kind, expectation, met?, why, feedback)
    titles = {asg: {q["id"]: q.get("title", q["id"]) for q in v["questions"]} for asg, v in cfg["assignments"].items()}
    statuses = {}
    flags = []
    for asg in sorted(os.listdir(os.path.join(HERE, "notebooks"))):
        nbdir = os.path.join(HERE, "notebooks", asg)
        names = sorted(f[:-6] for f in os.listdir(nbdir) if f.endswith(".ipynb") and a.only in f)
        if not names:
            continue
        src = nbdir
        if a.only:
            src = os.path.join(a.out, "_only", asg)
            shutil.rmtree(src, ignore_errors=True)
            os.makedirs(src)
            for n in names:
                shutil.copy2(os.path.join(nbdir, n + ".ipynb"), src)
        odir = os.path.join(a.out, asg)
        shutil.rmtree(odir, ignore_errors=True)
        cmd = [
            grader,
            "grade",
            src,
            "--assignment",
            asg,
            "--out",
            odir,
            "--config",
            os.path.join(course, "config.yaml"),
            "--formats",
            "yaml,json",
            "--jobs",
            str(a.jobs),
        ]
        if not a.no_force:
            cmd.append("--force")
        t = time.time()
        p = subprocess.Popen(cmd, cwd=course, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        checks = harness.checks_of(cfg, asg)
        ref = None
        owns = {}
        if not a.no_flags:  # meanwhile, the values the leak check needs (cached by content)
            solpath = os.path.join(a.main, "solutions", asg, asg + ".ipynb")
            ref = cached_values(a, asg, solpath, checks, solution=True)
            for n in names:
                owns[n] = cached_values(a, asg, os.path.join(nbdir, n + ".ipynb"), checks, solution=False, salt=solpath)
        out_, err_ = p.communicate()
        print(f"# {asg}: grader exit {p.returncode} in {time.time() - t:.1f}s", file=sys.stderr)
        if p.returncode != 0:
            print(out_[-2000:], err_[-2000:], file=sys.stderr)
        for n in names:
            truth = json.load(open(os.path.join(HERE, "truth", asg, n + ".json")))["questions"]
            card_path = os.path.join(odir, n + ".yaml")
            card = yaml.safe_load(open(card_path)) if os.path.exists(card_path) else None
            statuses[(asg, n)] = (card or {}).get("status", "NO SCORECARD")
            got = {q["id"]: q for q in (card or {}).get("questions", [])}
            own = owns.get(n)
            for qid, t in truth.items():
                q = got.get(qid, {})
                score = float(q.get("score", 0) or 0)
                fb = [str(x) for x in (q.get("feedback") or [])]
                rows.append(
                    (
                        asg,
                        n,
                        qid,
                        float(t["points"]),
                        score,
                        q.get("status", "?"),
                        fb,
                        t["reason"],
                        q.get("carried_forward") or [],
                    )
                )
                text = " ".join(fb)
                if "root" in t:
                    title = titles[asg][t["root"]]
                    named = title.lower() in text.lower()
                    stray = "likely mistake" in text.lower()
                    fbrows.append(
                        (
                            n,
                            qid,
                            "root",
                            f"names *{title}*",
                            named and not stray,
                            ("" if named else "root not named; ") + ("stray hint; " if stray else ""),
                            text,
                        )
                    )
                if "hint" in t:
                    fbrows.append((n, qid, "hint", f"says '{t['hint']}'", t["hint"].lower() in text.lower(), "", text))
                for line in fb:
                    for rx, what in UNREADABLE:
                        if rx.search(line):
                            flags.append((n, qid, f"unreadable ({what})", line))
                    if len(line) > 700:
                        flags.append((n, qid, f"unreadable (line of {len(line)} characters)", line[:200] + " ..."))
                    if ref is not None:
                        allref = [v for vs in ref.values() for v in vs]
                        allown = [v for vs in own.values() for v in vs]
                        hits = reveals(line, allref, allown)
                        if hits:
                            flags.append((n, qid, f"reveals reference value(s) {', '.join(hits)}", line))
            for e in ((card or {}).get("execution") or {}).get("errors") or []:
                text = json.dumps(e) if not isinstance(e, str) else e
                for rx, what in UNREADABLE[:3]:
                    if rx.search(text):
                        flags.append((n, "(execution)", f"unreadable ({what})", text[:300]))

    # ---- table
    agree = credit = blame = 0
    credit_pts = blame_pts = 0.0
    w = max(len(r[1]) for r in rows) if rows else 10
    print(f"{'notebook':{w}}  {'question':26} {'truth':>5} {'grader':>6}  agree")
    last = None
    for asg, n, qid, tr, got, st, fb, reason, cf in rows:
        ok = abs(tr - got) < 0.011
        agree += ok
        if not ok and got > tr:
            credit += 1
            credit_pts += got - tr
        if not ok and got < tr:
            blame += 1
            blame_pts += tr - got
        if ok and not a.all_rows:
            continue
        if last != n:
            print(f"-- {asg}/{n}  [{statuses[(asg, n)]}]")
            last = n
        mark = "yes" if ok else ("NO  false credit" if got > tr else "NO  false blame")
        print(f"{n:{w}}  {qid:26} {tr:5g} {got:6g}  {mark}")
        if not ok:
            print(f"{'':{w}}    truth: {reason}")
            for line in fb:
                print(f"{'':{w}}    grader: {line}")
    total = len(rows)
    nbs = len({(r[0], r[1]) for r in rows})
    tt = sum(r[3] for r in rows)
    tg = sum(r[4] for r in rows)
    print()
    print(f"notebooks: {nbs}   questions: {total}   agreeing: {agree}/{total}")
    print(f"false credit (grader > truth): {credit} questions, {credit_pts:g} points")
    print(f"false blame  (grader < truth): {blame} questions, {blame_pts:g} points")
    print(f"points: truth {tt:g}, grader {tg:g}")
    per = {}
    for r in rows:
        d = per.setdefault(r[0], [0, 0, 0, 0])
        d[0] += 1
        d[1] += abs(r[3] - r[4]) < 0.011
        d[2] += r[4] > r[3] + 0.011
        d[3] += r[4] < r[3] - 0.011
    for asg, (tq, ag, fc, fbm) in sorted(per.items()):
        print(f"  {asg:24} {ag}/{tq} agree, {fc} false credit, {fbm} false blame")
    bad = {k: v for k, v in statuses.items() if v != "graded"}
    if bad:
        print("notebooks not 'graded':", ", ".join(f"{k[1]}={v}" for k, v in bad.items()))
    print()
    met = sum(r[4] for r in fbrows)
    print(
        f"feedback naming what a TA would name: {met}/{len(fbrows)} "
        f"(roots of carried steps: {sum(r[4] for r in fbrows if r[2] == 'root')}/{sum(r[2] == 'root' for r in fbrows)}, "
        f"typical mistakes: {sum(r[4] for r in fbrows if r[2] == 'hint')}/{sum(r[2] == 'hint' for r in fbrows)})"
    )
    for n, qid, kind, exp, ok, why, text in fbrows:
        if not ok:
            print(f"  {n} {qid}: expected feedback that {exp}: {why}grader: {text[:400]}")
    print()
    print(f"student-facing message flags: {len(flags)}")
    for n, qid, what, line in flags:
        print(f"  {n} {qid}: {what}: {line[:300]}")
    print(f"\n(measured in {time.time() - t0:.0f}s; scorecards in {a.out})")


if __name__ == "__main__":
    main()
