"""Confirm, outside the grader, what each notebook computes: every check of config.yaml evaluated on the
student's namespace and on the solution's, on the notebook's own data and on 2 variants of my own
(given inputs replaced right after the statements that define them). Prints, per case, each check:
own-data match / variant matches, then per question the points of the checks that match everywhere
("direct") next to the truth, so that every truth above "direct" must be a carried-forward step (its
reason says so) and every truth below it must be a mistake the variants or the code reveal.

    /work/main/.venv/bin/python check.py [--main /work/main] [--only SUBSTR]
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

VARIANTS = (0, 1, 2)


def values(srcs, asg, main, checks, variant):
    before = {c[3]: c[6] for c in checks if c[6]}
    ns, res, snaps = harness.run(srcs, asg, main, variant=variant, before=before)
    out = {}
    for qid, i, kind, target, pts, seed, bef in checks:
        try:
            out[(qid, i)] = ("ok", harness.evaluate(ns, snaps, kind, target, seed, bef))
        except Exception as e:
            out[(qid, i)] = ("err", f"{type(e).__name__}: {e}")
    errs = [(k, e) for k, (_, e) in enumerate(res) if e]
    return out, errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--main", default="/work/main")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    cfg = harness.load_config(a.main)
    solcache = {}
    for asg in sorted(os.listdir(os.path.join(HERE, "notebooks"))):
        checks = harness.checks_of(cfg, asg)
        if asg not in solcache:
            nb = json.load(open(os.path.join(a.main, "solutions", asg, asg + ".ipynb")))
            srcs = [s.replace("# SOLUTION", "") for s in harness.cell_sources(nb)]
            solcache[asg] = {v: values(srcs, asg, a.main, checks, v)[0] for v in VARIANTS}
        sol = solcache[asg]
        for fn in sorted(os.listdir(os.path.join(HERE, "notebooks", asg))):
            name = fn[:-6]
            if a.only not in name:
                continue
            nb = json.load(open(os.path.join(HERE, "notebooks", asg, fn)))
            truth = json.load(open(os.path.join(HERE, "truth", asg, name + ".json")))["questions"]
            srcs = harness.cell_sources(nb)
            stu = {}
            errs = None
            for v in VARIANTS:
                stu[v], e = values(srcs, asg, a.main, checks, v)
                if v == 0:
                    errs = e
            print(f"== {asg}/{name}" + (f"  cell errors: {errs}" if errs else ""))
            direct = {}
            group_ok = {}
            for qid, i, kind, target, pts, seed, bef in checks:
                marks = []
                for v in VARIANTS:
                    s_st, s_val = stu[v][(qid, i)]
                    r_st, r_val = sol[v][(qid, i)]
                    if s_st != "ok":
                        marks.append("E")
                    elif r_st != "ok":
                        marks.append("?")
                    else:
                        marks.append("=" if harness.same(s_val, r_val) else "x")
                ok = all(m == "=" for m in marks)
                if pts < 0:
                    group_ok[qid] = (group_ok.get(qid, (True, 0))[0] and ok, -pts)
                else:
                    direct[qid] = direct.get(qid, 0) + (pts if ok else 0)
                if not ok:
                    print(f"   {qid}[{i}] {target[:60]!s:60} own/v1/v2: {' '.join(marks)}")
            for qid, (g_ok, g_pts) in group_ok.items():
                direct[qid] = direct.get(qid, 0) + (g_pts if g_ok else 0)
            for qid, t in truth.items():
                d = round(direct.get(qid, 0), 2)
                flag = (
                    ""
                    if abs(d - t["points"]) < 1e-9
                    else ("  <- truth above direct: carried?" if t["points"] > d else "  <- truth below direct")
                )
                if flag:
                    print(f"   Q {qid}: direct {d} truth {t['points']} ({t['reason']}){flag}")


if __name__ == "__main__":
    main()
