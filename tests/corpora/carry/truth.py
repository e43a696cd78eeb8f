#!/usr/bin/env python3
"""Decide the truth of the corpus by direct execution, outside the grader.

For every notebook of notebooks/<assignment>/ (and its meta in meta.json):
  * run the notebook cell by cell, statement by statement, in a fresh namespace (cwd = the course's
    assignment folder, for data/), on the notebook's data and on N_VARIANTS own draws of the given
    inputs (put in place right after the statement that first binds each);
  * run the solution notebook the same way;
  * per check and run: the student's value, the solution's value, and the reference step's value
    computed from the student's own upstream values (spec.CHECKS[..].ref executed in a copy of
    the student's namespace, read just before the `before:` name for phase-1 checks);
  * status per check: correct (equal to the solution on every run), carried (on every run equal to
    the solution or to the reference-on-own-upstream, not correct), else root-wrong (a question the
    notebook's meta names as a deliberate upstream mistake) or wrong;
  * roots of a carried check: traced through spec upstream links.
  * class J: a check not computable because the student's function / class (spec.FIXES) raised, tested
    by an earlier question that docks it: the notebook is run again with the solution's definition in
    place of the student's (right after it); carried if then equal to the solution on every run.
Writes truth.json.  usage: truth.py [--only SUBSTR]
"""

import argparse
import ast
import contextlib
import copy
import io
import json
import os
import random
import sys
import traceback
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import spec  # noqa: E402

COURSE = HERE / "_course"


def _all_or_nothing():
    import yaml

    cfg = yaml.safe_load((COURSE / "config.yaml").read_text())
    return {
        a: {q["id"] for q in spec_["questions"] if len(q["checks"]) > 1 and not any("points" in c for c in q["checks"])}
        for a, spec_ in cfg["assignments"].items()
    }


ALL_OR_NOTHING = _all_or_nothing()
N_VARIANTS = 2
RTOL, ATOL = 1e-5, 1e-6


def cells_of(path):
    nb = json.loads(Path(path).read_text())
    out = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        if "skip-grading" in c.get("metadata", {}).get("tags", []) or "instructor" in c.get("metadata", {}).get(
            "tags", []
        ):
            continue
        out.append("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
    return out


def bound_names(stmt):
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    # do not descend into function bodies for Store names: good enough for top-level givens
    return names


def snapshot(ns):
    snap = {}
    for k, v in ns.items():
        if isinstance(v, (types.ModuleType, types.FunctionType, type)) or k.startswith("__"):
            snap[k] = v
            continue
        try:
            import torch

            if isinstance(v, torch.nn.Module):
                snap[k] = v
                continue
        except ImportError:
            pass
        try:
            snap[k] = copy.deepcopy(v)
        except Exception:
            snap[k] = v
    return snap


def blame(exc, names):
    """The innermost of the student's callables `names` (defined in a notebook cell) the exception was
    raised through, else None."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.startswith("<cell"):
            top = getattr(code, "co_qualname", code.co_name).split(".")[0]
            if top in names:
                found = top
        tb = tb.tb_next
    return found


def solution_callable(assignment, name):
    """The solution's definition of `name`, executed apart (its own imports and helpers)."""
    g = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(spec.FIXES[assignment][name][1], g)
    return g[name]


def run_notebook(path, assignment, variant, fix=frozenset()):
    """Returns (p1 namespace, final namespace, errors, blamed).
    fix: names of the student's callables replaced by the solution's right after each definition;
    blamed: the student's callables (of spec.FIXES) an exception of the run was raised through."""
    fixable = set(spec.FIXES.get(assignment, {}))
    blamed = set()
    given = spec.GIVEN.get(assignment, {})
    before = spec.BEFORE.get(assignment)
    rng = np.random.default_rng(1000 + variant)
    ns = {"__name__": "__main__"}
    replaced = set()
    p1 = None
    errors = []
    import torch

    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    for ci, src in enumerate(cells_of(path)):
        try:
            tree = ast.parse(src)
        except SyntaxError as e:
            errors.append(f"cell {ci}: SyntaxError {e}")
            continue
        for stmt in tree.body:
            names = bound_names(stmt)
            if before and p1 is None and before in names:
                p1 = snapshot(ns)
            try:
                code = compile(ast.Module([stmt], type_ignores=[]), f"<cell {ci}>", "exec")
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(code, ns)
            except Exception as e:
                errors.append(f"cell {ci}: {type(e).__name__}: {e}")
                b = blame(e, fixable)
                if b:
                    blamed.add(b)
                break  # the rest of the cell does not run
            for f in fix:
                if f in names and f in ns:
                    ns[f] = solution_callable(assignment, f)
            if variant:
                for g in given:
                    if g in names and g not in replaced and g in ns:
                        ns[g] = given[g](rng, variant, ns[g])
                        replaced.add(g)
    if p1 is None:
        p1 = ns
    return p1, ns, errors, blamed


def seeded(seed):
    import torch

    if seed is not None:
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)


def read(ns, chk):
    try:
        if chk["value"]:
            if chk["value"] not in ns:
                return None
            return ns[chk["value"]]
        seeded(chk["seed"])
        with contextlib.redirect_stdout(io.StringIO()):
            return eval(chk["expr"], ns)
    except Exception:
        return None


def read_blamed(ns, chk, names):
    """(value or None, the student's callable its expression raised through or None)."""
    if chk["value"]:
        return read(ns, chk), None
    try:
        seeded(chk["seed"])
        with contextlib.redirect_stdout(io.StringIO()):
            return eval(chk["expr"], ns), None
    except Exception as e:
        return None, blame(e, names)


def reference(ns, chk):
    ns2 = snapshot(ns)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(chk["ref"], ns2)
    except Exception:
        return None
    return read(ns2, chk)


def plain(v):
    import pandas as pd
    import torch

    if isinstance(v, torch.Tensor):
        v = v.detach().cpu()
        if v.dtype == torch.bool:
            return v.numpy()
        return v.double().numpy() if v.is_floating_point() else v.numpy()
    if isinstance(v, (pd.DataFrame, pd.Series)):
        return v.values
    if isinstance(v, np.generic):
        return v.item()
    return v


def same(a, b):
    if a is None or b is None:
        return False
    a, b = plain(a), plain(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        aa, bb = np.asarray(a), np.asarray(b)
        if aa.dtype == object or bb.dtype == object:
            return False
        if aa.shape != bb.shape:
            return False
        if aa.dtype == bool or bb.dtype == bool:
            return aa.dtype == bb.dtype and bool(np.array_equal(aa, bb))
        return bool(np.allclose(aa.astype(float), bb.astype(float), rtol=RTOL, atol=ATOL, equal_nan=True))
    except Exception:
        return False


def judge(assignment, nb_path, sol_runs, roots_declared):
    checks = spec.CHECKS[assignment]
    runs = [run_notebook(nb_path, assignment, v) for v in range(N_VARIANTS + 1)]
    per_check = {}
    for chk in checks:
        key = f"{chk['q']}:{chk['key']}"
        kinds = []
        for (p1, fin, _, _), (sp1, sfin, _, _) in zip(runs, sol_runs):
            ns = p1 if chk["phase"] == "p1" else fin
            sns = sp1 if chk["phase"] == "p1" else sfin
            stu = read(ns, chk)
            sol = read(sns, chk)
            if same(stu, sol):
                kinds.append("correct")
            elif chk["up"] and same(stu, reference(ns, chk)):
                kinds.append("carry")
            else:
                kinds.append("wrong")
        if all(k == "correct" for k in kinds):
            st = "correct"
        elif all(k in ("correct", "carry") for k in kinds):
            st = "carried"
        else:
            st = "root-wrong" if chk["q"] in roots_declared else "wrong"
        per_check[key] = dict(status=st, runs=kinds, points=chk["points"], up=chk["up"])
    # roots
    qs = []
    for chk in checks:
        if chk["q"] not in qs:
            qs.append(chk["q"])

    # class J: a step that could not be computed because the student's function / class raised, that
    # function / class tested (and docked) by an earlier question: the notebook is run again with the
    # solution's definition put in place of the student's; the step is carried if its value then equals
    # the solution's on every run (roots: the questions testing the replaced callables), else it stays.
    fixes = spec.FIXES.get(assignment, {})
    q_pre = {q: [v["status"] for k, v in per_check.items() if k.split(":")[0] == q] for q in qs}
    fixed_runs = {}
    for chk in checks:
        key = f"{chk['q']}:{chk['key']}"
        v = per_check[key]
        if v["status"] not in ("wrong", "root-wrong"):
            continue
        cands = set()
        for p1, fin, _, blamed in runs:
            ns = p1 if chk["phase"] == "p1" else fin
            val, b = read_blamed(ns, chk, set(fixes))
            if val is None:
                cands |= blamed | ({b} if b else set())
        cands = {
            c
            for c in cands
            if fixes[c][0] != chk["q"]
            and qs.index(fixes[c][0]) < qs.index(chk["q"])
            and not all(s == "correct" for s in q_pre[fixes[c][0]])
        }
        if not cands:
            continue
        fk = frozenset(cands)
        if fk not in fixed_runs:
            fixed_runs[fk] = [run_notebook(nb_path, assignment, r, fix=fk) for r in range(N_VARIANTS + 1)]
        kinds = []
        for (p1, fin, _, _), (sp1, sfin, _, _) in zip(fixed_runs[fk], sol_runs):
            ns = p1 if chk["phase"] == "p1" else fin
            sns = sp1 if chk["phase"] == "p1" else sfin
            kinds.append("correct" if same(read(ns, chk), read(sns, chk)) else "wrong")
        v["solution_in_place_of"] = sorted(cands)
        v["runs_fixed"] = kinds
        if all(k == "correct" for k in kinds):
            v["status"] = "carried"
            v["j_roots"] = sorted({fixes[c][0] for c in cands})

    def q_status(q):
        sts = [v["status"] for k, v in per_check.items() if k.split(":")[0] == q]
        return sts

    memo = {}

    def roots_of(key):
        if key in memo:
            return memo[key]
        memo[key] = set()
        if "j_roots" in per_check[key]:
            memo[key] = set(per_check[key]["j_roots"])
            return memo[key]
        r = set()
        for u in per_check[key]["up"]:
            ukeys = [u] if ":" in u else [k for k in per_check if k.split(":")[0] == u]
            for uk in ukeys:
                s = per_check[uk]["status"]
                if s in ("root-wrong", "wrong"):
                    r.add(uk.split(":")[0])
                elif s == "carried":
                    r |= roots_of(uk)
        memo[key] = r
        return r

    anomalies = []
    for key, v in per_check.items():
        if v["status"] == "carried":
            v["roots"] = sorted(roots_of(key))
            if not v["roots"]:
                anomalies.append(f"{key}: carried but no wrong upstream found")
    questions = {}
    for q in qs:
        items = {k: v for k, v in per_check.items() if k.split(":")[0] == q}
        sts = [v["status"] for v in items.values()]
        if all(s == "correct" for s in sts):
            qst = "correct"
        elif "root-wrong" in sts:
            qst = "root-wrong"
        elif "wrong" in sts:
            qst = "wrong"
        else:
            qst = "carried"
        if q in ALL_OR_NOTHING[assignment]:  # no check has its own points: the question passes whole or not at all
            exp = sum(v["points"] for v in items.values()) if all(s in ("correct", "carried") for s in sts) else 0.0
        else:
            exp = sum(v["points"] for v in items.values() if v["status"] in ("correct", "carried"))
        roots = sorted({r for v in items.values() for r in v.get("roots", []) if r != q})
        questions[q] = dict(
            status=qst,
            expected_score=round(exp, 4),
            max_score=round(sum(v["points"] for v in items.values()), 4),
            roots=roots,
            checks={
                k.split(":", 1)[1]: {kk: vv for kk, vv in v.items() if kk not in ("up", "j_roots")}
                for k, v in items.items()
            },
        )
    return questions, runs[0][2], anomalies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    meta = json.loads((HERE / "meta.json").read_text())
    out_path = HERE / "truth.json"
    truth = json.loads(out_path.read_text()) if out_path.exists() and args.only else {}
    by_asg = {}
    for name, m in meta.items():
        if args.only and args.only not in name:
            continue
        by_asg.setdefault(m["assignment"], []).append(name)
    for asg, names in by_asg.items():
        os.chdir(COURSE / "solutions" / asg)
        sol = COURSE / "solutions" / asg / f"{asg}.ipynb"
        sol_runs = [run_notebook(sol, asg, v) for v in range(N_VARIANTS + 1)]
        for r in sol_runs:
            assert not r[2], r[2]
        for name in sorted(names):
            m = meta[name]
            nb = HERE / "notebooks" / asg / f"{name}.ipynb"
            try:
                qs, errs, anomalies = judge(asg, nb, sol_runs, set(m["roots"]))
            except Exception:
                traceback.print_exc()
                continue
            truth[name] = dict(
                assignment=asg,
                cls=m["cls"],
                roots_declared=m["roots"],
                own_declared=m.get("own", []),
                description=m["description"],
                errors=errs,
                anomalies=anomalies,
                questions=qs,
            )
            # compare with the author's intent
            issues = []
            for q, v in qs.items():
                if q in m["roots"] and v["status"] != "root-wrong":
                    issues.append(f"declared root {q} is {v['status']}")
                if q in m.get("own", []) and v["status"] != "wrong":
                    issues.append(f"declared own mistake {q} is {v['status']}")
                if v["status"] == "wrong" and q not in m.get("own", []):
                    issues.append(f"{q} wrong, not declared")
            line = " ".join(
                f"{q}={v['status'][:4]}" + (f"<{'+'.join(v['roots'])}" if v["roots"] else "") for q, v in qs.items()
            )
            print(f"{name}: {line}")
            for x in issues + anomalies + errs:
                print(f"    !! {x}")
    out_path.write_text(json.dumps(truth, indent=1, sort_keys=True))
    import csv

    with open(HERE / "expected.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["notebook", "assignment", "class", "question", "status", "roots", "expected_score", "max_score"])
        for name in sorted(truth):
            t = truth[name]
            for q, v in t["questions"].items():
                w.writerow(
                    [
                        name,
                        t["assignment"],
                        t["cls"],
                        q,
                        v["status"],
                        "+".join(v["roots"]),
                        v["expected_score"],
                        v["max_score"],
                    ]
                )


if __name__ == "__main__":
    main()
