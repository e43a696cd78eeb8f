#!/usr/bin/env python3
"""Run `grader similarity` on every generated class and compare its ranking with the truth.

    .venv/bin/python measure.py [--grader PATH] [--course DIR] [--only NAME ...] [--big]

For each class (classes/<assignment>-<size>[-variant]/ with truth.json) it prints: P planted pairs,
how many rank above every independent pair, how many are within the top 2P, the lowest planted
score against the highest independent one, min/median/max of planted and of independent scores,
whether a cluster (or any pair at or above the threshold) appears in the no-copy section, the score
of the different-algorithms pair, and the wall time.  The ladder classes (one source, one copy per
disguise, same 48-student background) give the disguised-vs-exact ratio per disguise.
--big also generates (if missing) and times the 1,000-notebook class.

The grader runs with cwd = --course (default: _course/, a copy of the repository's config.yaml,
solutions/ and assignments/, so that nothing is written under the repository); outputs go to out/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def run_grader(grader, course, folder: Path, assignment, out: Path, min_score="0"):
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        grader,
        "similarity",
        str(folder),
        "--assignment",
        assignment,
        "--out",
        str(out),
        "--min-score",
        str(min_score),
    ]
    if (Path(course) / "config.yaml").exists():
        cmd += ["--config", str(Path(course) / "config.yaml")]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (out / "grader.log").write_text(
        f"$ {' '.join(cmd)}\n(cwd {course})\nrc={p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    )
    if p.returncode != 0:
        raise RuntimeError(f"grader failed on {folder} (rc {p.returncode}):\n{p.stderr[-2000:]}")
    data = json.loads((out / "similarity.json").read_text())
    return data, wall, p


def key(a, b):
    return (a, b) if a <= b else (b, a)


def q(xs, f):
    return f(xs) if xs else float("nan")


def analyse(truth, data):
    ids = truth["students"]
    scores = {key(p["a"], p["b"]): float(p["score"]) for p in data.get("pairs", [])}
    planted = {key(p["a"], p["b"]): p for p in truth["planted_pairs"]}
    n = len(ids)
    all_pairs = [(ids[i], ids[j]) for i in range(n) for j in range(i + 1, n)]
    indep_scores = []
    for k in all_pairs:
        if k not in planted:
            indep_scores.append(scores.get(k, 0.0))
    indep_scores.sort(reverse=True)
    max_indep = indep_scores[0] if indep_scores else 0.0
    allsc = sorted((scores.get(k, 0.0) for k in all_pairs), reverse=True)
    P = len(planted)
    res = {"P": P, "pairs": len(all_pairs), "listed": len(scores)}
    pl = []
    import bisect

    neg = [-s for s in allsc]  # ascending
    for k, p in planted.items():
        s = scores.get(k, 0.0)
        # pessimistic rank: every other pair scoring at least as much ranks ahead
        ahead = bisect.bisect_right(neg, -s) - 1
        pl.append(
            {
                "a": k[0],
                "b": k[1],
                "score": s,
                "rank": ahead + 1,
                "disguises": p["disguises"],
                "via_source": p.get("via_source", True),
                "group": p["group"],
            }
        )
    res["planted"] = sorted(pl, key=lambda x: -x["score"])
    ps = [x["score"] for x in pl]
    res["above_all"] = sum(1 for s in ps if s > max_indep)
    res["in_top2P"] = sum(1 for x in pl if x["rank"] <= 2 * P)
    res["min_planted"] = min(ps) if ps else None
    res["max_indep"] = max_indep
    res["planted_dist"] = (q(ps, min), q(ps, statistics.median), q(ps, max)) if ps else None
    res["indep_dist"] = (q(indep_scores, min), q(indep_scores, statistics.median), q(indep_scores, max))
    res["indep_p99"] = indep_scores[max(0, int(len(indep_scores) * 0.01) - 1)] if indep_scores else 0.0
    thr = data.get("settings", {}).get("threshold", 0.5)
    res["threshold"] = thr
    res["indep_at_threshold"] = sum(1 for s in indep_scores if s >= thr)
    res["clusters"] = data.get("clusters", [])
    planted_members = {m for g in truth["planted_groups"] for m in g["members"]}
    res["clusters_without_copies"] = [c for c in res["clusters"] if not planted_members.intersection(_members(c))]
    notes = []
    for nt in truth.get("independent_of_note", []):
        s = scores.get(key(nt["a"], nt["b"]), 0.0)
        rank_indep = 1 + sum(1 for x in indep_scores if x > s)
        notes.append({**nt, "score": s, "rank_among_independent": rank_indep})
    res["notes"] = notes
    res["skipped"] = data.get("skipped", [])
    res["top_indep"] = sorted(((scores.get(k, 0.0), k) for k in all_pairs if k not in planted), reverse=True)[:3]
    return res


def _members(c):
    if isinstance(c, dict):
        for k in ("members", "notebooks", "students", "ids"):
            if k in c:
                return [m if isinstance(m, str) else m.get("id", m.get("student")) for m in c[k]]
        return []
    return list(c)


def fmt(x, nd=2):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def class_dirs(classes: Path, only):
    out = []
    for d in sorted(classes.iterdir()):
        if not d.is_dir() or d.name.startswith("_") or d.name.endswith("-ladder"):
            continue
        t = d / "truth.json"
        if not t.exists():
            continue
        truth = json.loads(t.read_text())
        if only and truth["assignment"] not in only:
            continue
        out.append((d, truth))
    order = {"8-nocopy": 0, "8-onepair": 1, "48": 2, "200": 3, "1000": 4}
    out.sort(
        key=lambda x: (
            x[1]["assignment"],
            order.get(x[0].name.split("-", 2)[-1].replace(x[1]["assignment"] + "-", ""), 9),
        )
    )
    return out


def label_of(d: Path, truth):
    return d.name[len(truth["assignment"]) + 1 :]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grader", default=str(Path(__file__).resolve().parents[3] / ".venv/bin/grader"))
    ap.add_argument(
        "--course",
        default=str(HERE / "_course"),
        help="folder with config.yaml, solutions/ and assignments/ (the grader's cwd)",
    )
    ap.add_argument("--classes", default=str(HERE / "classes"))
    ap.add_argument("--out", default=str(HERE / "out"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--big", action="store_true", help="also the 1,000-notebook timing class")
    ap.add_argument("--no-ladder", action="store_true")
    ap.add_argument("--json", default=None, help="write every measurement here (default OUT/summary.json)")
    args = ap.parse_args(argv)
    classes, out = Path(args.classes), Path(args.out)
    summary = {"grader": args.grader, "classes": {}, "ladders": {}}

    if args.big:
        import generate
        import nbformat  # noqa: F401

        for name in args.only or ["attention_numpy"]:
            d = classes / f"{name}-1000"
            if not (d / "truth.json").exists():
                A = generate.ASSIGNMENTS[name]
                skel = generate.load_skeleton(Path(__file__).resolve().parents[3], name)
                print(f"generating {d.name} ...", flush=True)
                generate.build(A, skel, 1000, "", "2026", classes, plan_key="1000")

    rows = []
    for d, truth in class_dirs(classes, args.only):
        lab = label_of(d, truth)
        if lab == "1000" and not args.big:
            continue
        big = lab == "1000"
        data, wall, _ = run_grader(
            args.grader, args.course, d, truth["assignment"], out / d.name, min_score="0.1" if big else "0"
        )
        r = analyse(truth, data)
        r["wall"] = wall
        r["notebooks_read"] = len(data.get("notebooks", []))
        summary["classes"][d.name] = r
        rows.append((d.name, truth, r))
        print(f"  {d.name}: {wall:.1f} s", file=sys.stderr, flush=True)

    # ---- main table ------------------------------------------------------------------------------
    print("\n== Ranking per class (scores from `grader similarity`; pairs not listed count as 0) ==")
    hdr = f"{'class':34} {'N':>4} {'P':>3} {'>all':>5} {'top2P':>6} {'minPl':>6} {'maxInd':>6}  {'planted min/med/max':>19}  {'indep min/med/max':>17}  {'algo':>5} {'clus':>5} {'time':>6}"
    print(hdr)
    print("-" * len(hdr))
    for name, truth, r in rows:
        algo = next((x for x in r["notes"] if x["why"] == "different_algorithms"), None)
        pdist = "/".join(fmt(x) for x in r["planted_dist"]) if r["planted_dist"] else "-"
        idist = "/".join(fmt(x) for x in r["indep_dist"])
        clus = len(r["clusters"])
        print(
            f"{name:34} {truth['size']:>4} {r['P']:>3} {r['above_all']:>5} {r['in_top2P']:>6} "
            f"{fmt(r['min_planted']):>6} {fmt(r['max_indep']):>6}  {pdist:>19}  {idist:>17}  "
            f"{fmt(algo['score'] if algo else None):>5} {clus:>5} {r['wall']:>5.1f}s"
        )
    print(
        "  >all: planted pairs scoring above every independent pair; top2P: planted pairs ranked in the top 2P"
        " (ties counted against them);\n  algo: the different-algorithms pair; clus: clusters in similarity.json"
    )

    # ---- no-copy sections --------------------------------------------------------------------------
    print("\n== The 8-student sections ==")
    for name, truth, r in rows:
        if truth["size"] != 8:
            continue
        algo = next((x for x in r["notes"] if x["why"] == "different_algorithms"), None)
        top = ", ".join(f"{a}-{b} {s:.2f}" for s, (a, b) in r["top_indep"])
        verdict = ""
        if truth["no_copy"]:
            ok = not r["clusters"] and r["indep_at_threshold"] == 0
            verdict = (
                "OK: no cluster, no pair at the threshold"
                if ok
                else f"FLAGGED: {len(r['clusters'])} cluster(s), {r['indep_at_threshold']} independent pair(s) >= {r['threshold']}"
            )
        else:
            pl = r["planted"][0]
            verdict = (
                f"planted {pl['a']}-{pl['b']} ({'+'.join(pl['disguises'])}) scores {pl['score']:.2f}, rank {pl['rank']}"
            )
        print(f"  {name:32} {verdict}; top independent: {top}; algo pair {fmt(algo['score'] if algo else None)}")

    # ---- planted pairs per disguise in the realistic classes ---------------------------------------------
    print("\n== Planted pairs in the 48/200 classes: score, rank, and ratio to the class's exact copies ==")
    for name, truth, r in rows:
        if truth["size"] < 48:
            continue
        exact = [x["score"] for x in r["planted"] if x["disguises"] == ["exact"] and x["via_source"]]
        ex = statistics.median(exact) if exact else None
        print(
            f"  {name}: max independent {r['max_indep']:.2f}"
            + (f", exact copies {', '.join(f'{e:.2f}' for e in exact)}" if exact else "")
        )
        for x in sorted(r["planted"], key=lambda x: x["group"]):
            dis = (
                "+".join(x["disguises"])
                if len(x["disguises"]) < len(__import__("simcorpus.core", fromlist=["DISGUISES"]).DISGUISES)
                else "ALL disguises"
            )
            ratio = f"{x['score'] / ex:.2f}" if ex else "-"
            flag = "" if x["score"] > r["max_indep"] else "   <-- not above every independent pair"
            print(
                f"    {x['group']:>4} {x['a']}-{x['b']} {'' if x['via_source'] else '(copy-copy) '}{dis:55.55} "
                f"{x['score']:.2f}  rank {x['rank']:>4}  ratio {ratio}{flag}"
            )

    # ---- ladders ----------------------------------------------------------------------------------
    if not args.no_ladder:
        print("\n== Ladders: the same 3 sources copied with one disguise each, same 48-student background ==")
        print("   ratio = score(source, disguised copy) / score(source, exact copy); promise: >= 0.9")
        for lad in sorted(classes.glob("*-ladder")):
            name = lad.name[: -len("-ladder")]
            if args.only and name not in args.only:
                continue
            res = {}
            for sub in sorted(lad.iterdir()):
                if not (sub / "truth.json").exists():
                    continue
                truth = json.loads((sub / "truth.json").read_text())
                data, wall, _ = run_grader(args.grader, args.course, sub, name, out / lad.name / sub.name)
                r = analyse(truth, data)
                res[sub.name] = {
                    "pairs": {(x["a"], x["b"]): x["score"] for x in r["planted"]},
                    "max_indep": r["max_indep"],
                    "wall": wall,
                    "above_all": r["above_all"],
                    "P": r["P"],
                }
                print(f"  {lad.name}/{sub.name}: {wall:.1f} s", file=sys.stderr, flush=True)
            ex = res.get("exact")
            if not ex:
                continue
            exact_by_src = {}
            t_exact = json.loads((lad / "exact" / "truth.json").read_text())
            for g in t_exact["planted_groups"]:
                c = next(iter(g["copies"]))
                exact_by_src[g["source"]] = ex["pairs"][key(g["source"], c)]
            print(
                f"  {name}: exact-copy scores "
                + ", ".join(f"{s}: {v:.2f}" for s, v in exact_by_src.items())
                + f"; background max independent {ex['max_indep']:.2f}"
            )
            lad_sum = {}
            from generate import LADDER

            for d in LADDER:
                if d not in res:
                    continue
                t = json.loads((lad / d / "truth.json").read_text())
                ratios, sc = [], []
                for g in t["planted_groups"]:
                    c = next(iter(g["copies"]))
                    s = res[d]["pairs"][key(g["source"], c)]
                    e = exact_by_src.get(g["source"])
                    sc.append(s)
                    ratios.append(s / e if e else float("nan"))
                lad_sum[d] = {
                    "scores": sc,
                    "ratios": ratios,
                    "max_indep": res[d]["max_indep"],
                    "above_all": res[d]["above_all"],
                    "wall": res[d]["wall"],
                }
                flag = "" if min(ratios) >= 0.9 else "   <-- below 0.9"
                print(
                    f"    {d:20} scores {' '.join(f'{s:.2f}' for s in sc)}  ratios {' '.join(f'{x:.2f}' for x in ratios)}"
                    f"  min {min(ratios):.2f}  (above every independent: {res[d]['above_all']}/3){flag}"
                )
            summary["ladders"][name] = lad_sum

    # ---- the different-algorithms pairs --------------------------------------------------------------
    print("\n== Independent pairs of note ==")
    for name, truth, r in rows:
        for x in r["notes"]:
            print(
                f"  {name:34} {x['why']:20} {x['a']}-{x['b']} score {x['score']:.2f} "
                f"(rank {x['rank_among_independent']} of {r['pairs'] - r['P']} independent pairs)"
            )

    js = Path(args.json) if args.json else out / "summary.json"
    js.parent.mkdir(parents=True, exist_ok=True)

    def clean(o):
        if isinstance(o, dict):
            return {(" ".join(k) if isinstance(k, tuple) else k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    js.write_text(json.dumps(clean(summary), indent=1, default=str))
    print(f"\n(all measurements: {js})")


if __name__ == "__main__":
    main()
