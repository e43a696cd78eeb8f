#!/usr/bin/env python3
"""Generate blind test classes for `grader similarity`.

    .venv/bin/python generate.py                 # every class (8, 48, 200 + ladders)
    .venv/bin/python generate.py --big           # also the 1,000-notebook timing class
    .venv/bin/python generate.py --only attention_numpy --sizes 48

Each class is written to classes/<assignment>-<size>[-variant]/ as s001.ipynb ... and truth.json.
Everything is deterministic given --seed.  See README.md next to this file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import importlib  # noqa: E402

from simcorpus.core import DISGUISES, Student, rnd  # noqa: E402
from simcorpus.render import render  # noqa: E402

ASSIGNMENTS = {}
for _m in ("a_numpy", "a_scratch", "a_french"):
    try:
        _mod = importlib.import_module("simcorpus." + _m)
    except ModuleNotFoundError as _e:
        if _e.name != "simcorpus." + _m:
            raise
        continue
    ASSIGNMENTS[_mod.NAME] = _mod
ALL = "all"

# the planted groups of each class: list of lists of disguise sets, one list per group
# (a group of one copier is a pair, two copiers make a trio with the source)
PLANS = {
    "8-nocopy": [],
    "8-onepair": [[[ALL]]],
    "48": [
        [["exact"]],
        [[ALL]],
        [["op_swap", "transpose_swap", "kwarg_swap"]],
        [["rename_inconsistent", "reorder_merge", "helper_flip"]],
        [["rename_consistent", "comments"], ["whitespace", "op_swap", "helper_flip"]],  # trio
    ],
    "200": [[["exact"]]]
    + [[[d]] for d in DISGUISES]
    + [
        [[ALL]],
        [["rename_consistent", "comments", "whitespace"]],
        [["exact"], ["rename_inconsistent", "comments", "reorder_merge"]],  # trio
        [[ALL], ["op_swap", "transpose_swap", "kwarg_swap", "helper_flip"]],  # trio
    ],
    "1000": [[["exact"]]] * 4
    + [[[d]] for d in DISGUISES]
    + [[[ALL]]] * 5
    + [
        [["exact"], [ALL]],
        [["comments", "whitespace"], ["rename_consistent", "reorder_merge"]],
    ],
}
LADDER = ["exact"] + DISGUISES + [ALL]
MIN_RARE = 4  # a planted source makes at least this many uncommon (< 20%) choices and has an explore cell


def expand(ds):
    if ds == ["exact"]:
        return []
    if ALL in ds:
        return list(DISGUISES)
    return list(ds)


def load_skeleton(course: Path, name: str):
    return nbformat.read(str(course / "assignments" / name / f"{name}.ipynb"), as_version=4)


def nb_text(nb) -> str:
    return "\n\x00\n".join(c.source for c in nb.cells)


class ClassBuilder:
    def __init__(self, A, skel, label, seed):
        self.A, self.skel, self.label, self.seed = A, skel, label, seed
        self.base = f"{seed}|{A.NAME}|{label}"
        self._cache = {}

    def student(self, sid):
        return Student(sid, f"{self.base}|{sid}")

    def nb(self, st):
        key = (
            st.sid,
            st.seed,
            tuple(sorted(st.flags)),
            st.name_salt,
            st.comment_salt,
            st.popular,
            tuple(sorted(st.force.items())),
        )
        if key not in self._cache:
            self._cache[key] = render(self.A, self.skel, st)
        return self._cache[key]

    def effective(self, src, sid, disguises):
        """The disguised copy differs from the exact copy for every disguise it holds."""
        exact = nb_text(self.nb(src.copy_as(sid, []))[0])
        for d in disguises:
            if nb_text(self.nb(src.copy_as(sid, [d]))[0]) == exact:
                return False
        return True


def overlap(p1: dict, p2: dict):
    keys = [
        k
        for k in set(p1) | set(p2)
        if not k.startswith(("x.", "n_explores")) and not k.endswith((".print", ".print.f"))
    ]
    same = sum(1 for k in keys if k in p1 and k in p2 and p1[k] == p2[k])
    return same, len(keys)


def build(A, skel, size, variant, seed, out: Path, plan_key=None, ladder=None):
    label = f"{size}" + (f"-{variant}" if variant else "")
    name = f"{A.NAME}-{label}"
    cb = ClassBuilder(A, skel, label if ladder is None else "ladder", seed)
    width = 4 if size >= 1000 else 3
    ids = [f"s{i:0{width}d}" for i in range(1, size + 1)]
    r = rnd(cb.base, "roles")
    pool = list(ids)
    r.shuffle(pool)
    students = {sid: cb.student(sid) for sid in ids}
    truth = {
        "assignment": A.NAME,
        "class": name,
        "size": size,
        "variant": variant or "",
        "seed": seed,
        "generator": "generate.py",
        "planted_groups": [],
        "planted_pairs": [],
        "independent_of_note": [],
    }

    # the different-algorithms pair: the most common way everywhere except one question
    fa, fb, what = A.ALGO_PAIR
    a1, a2 = pool.pop(), pool.pop()
    for sid, force in ((a1, fa), (a2, fb)):
        st = students[sid]
        st.popular = True
        st.force = dict(force)

    plans = PLANS[plan_key or label] if ladder is None else [[[ladder]]] * 3
    used_sources = set()
    gi = 0
    for group in plans:
        gi += 1
        copier_ids = [pool.pop() for _ in group]
        src = None
        for cand in pool:
            if cand in used_sources or cand in copier_ids:
                continue
            st = students[cand]
            p = cb.nb(st)[1]
            if p["_rare"] < MIN_RARE or p["_explores"] < 1:
                continue  # a source with nothing of its own could not be told from its classmates
            need = [(cid, DISGUISES if ladder else expand(ds)) for cid, ds in zip(copier_ids, group)]
            if all(cb.effective(st, cid, d) for cid, d in need):
                src = cand
                break
        pool.remove(src)
        used_sources.add(src)
        members = [src] + copier_ids
        sp = cb.nb(students[src])[1]
        g = {
            "id": f"g{gi}",
            "source": src,
            "members": members,
            "copies": {},
            "source_individuality": {"uncommon_choices": sp["_rare"], "explore_cells": sp["_explores"]},
        }
        for cid, ds in zip(copier_ids, group):
            students[cid] = students[src].copy_as(cid, expand(ds))
            g["copies"][cid] = {"copied_from": src, "disguises": expand(ds) or ["exact"], "label": "+".join(ds)}
        truth["planted_groups"].append(g)
        for x, y in itertools.combinations(members, 2):
            dx = set(expand(group[copier_ids.index(x)])) if x in copier_ids else set()
            dy = set(expand(group[copier_ids.index(y)])) if y in copier_ids else set()
            ds = sorted(dx | dy)
            truth["planted_pairs"].append(
                {
                    "a": min(x, y),
                    "b": max(x, y),
                    "group": g["id"],
                    "disguises": ds or ["exact"],
                    "via_source": src in (x, y),
                }
            )

    out_dir = out / name if ladder is None else out
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    picks = {}
    for sid in ids:
        nb, p = cb.nb(students[sid])
        picks[sid] = p
        nbformat.write(nb, str(out_dir / f"{sid}.ipynb"))
    truth["students"] = ids
    truth["independent_of_note"].append(
        {
            "a": min(a1, a2),
            "b": max(a1, a2),
            "why": "different_algorithms",
            "detail": what,
            "note": "both write the most common idiom everywhere else; truth: independent",
        }
    )
    planted_members = {m for g in truth["planted_groups"] for m in g["members"]}
    indep = [s for s in ids if s not in planted_members and s not in (a1, a2)]
    if size <= 250:
        best = None
        for x, y in itertools.combinations(indep, 2):
            s, n = overlap(picks[x], picks[y])
            if best is None or s / n > best[0]:
                best = (s / n, x, y, s, n)
        if best:
            truth["independent_of_note"].append(
                {
                    "a": best[1],
                    "b": best[2],
                    "why": "most_shared_idioms",
                    "detail": f"{best[3]} of {best[4]} choices identical (independent students)",
                }
            )
    truth["no_copy"] = not truth["planted_groups"]
    truth["expect"] = (
        "no pair should look like a copy and no cluster should appear"
        if truth["no_copy"]
        else "every planted pair ranks above every independent pair"
    )
    (out_dir / "truth.json").write_text(json.dumps(truth, indent=1))
    meta = (out if ladder is None else out.parent.parent) / "_meta"
    meta.mkdir(exist_ok=True)
    (meta / f"{name if ladder is None else name + '-ladder-' + ladder}.json").write_text(
        json.dumps(
            {
                sid: {
                    "picks": {k: str(v) for k, v in picks[sid].items()},
                    "wrong": sorted(k for k, v in picks[sid].items() if str(v).startswith("wrong")),
                    "copy_of": students[sid].copied_from,
                    "flags": sorted(students[sid].flags),
                    "popular": students[sid].popular,
                }
                for sid in ids
            },
            indent=0,
        )
    )
    return out_dir, truth


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--course", default=str(Path(__file__).resolve().parents[3]), help="folder with assignments/<name>/<name>.ipynb"
    )
    ap.add_argument("--out", default=str(HERE / "classes"))
    ap.add_argument("--seed", default="2026")
    ap.add_argument("--only", nargs="*", help="assignment names")
    ap.add_argument("--sizes", nargs="*", default=["8-nocopy", "8-onepair", "48", "200", "ladder"])
    ap.add_argument("--big", action="store_true", help="also the 1,000-notebook timing class")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only or list(ASSIGNMENTS)
    sizes = list(args.sizes) + (["1000"] if args.big else [])
    for name in names:
        A = ASSIGNMENTS[name]
        skel = load_skeleton(Path(args.course), name)
        for s in sizes:
            if s == "ladder":
                for d in LADDER:
                    d_out = out / f"{name}-ladder" / d
                    _, t = build(A, skel, 48, f"ladder-{d}", args.seed, d_out, ladder=d)
                print(f"{name}-ladder: {len(LADDER)} classes of 48 ({', '.join(LADDER)})")
                continue
            size, _, variant = s.partition("-")
            d, t = build(A, skel, int(size), variant, args.seed, out, plan_key=s)
            print(
                f"{d.name}: {t['size']} notebooks, {len(t['planted_pairs'])} planted pair(s) "
                f"in {len(t['planted_groups'])} group(s)"
            )


if __name__ == "__main__":
    main()
