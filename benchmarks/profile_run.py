"""Where one run's time goes: a notebook run in a process forked from a preloaded server, by phase.

    .venv/bin/python benchmarks/profile_run.py                      # both assignments, every preload set
    .venv/bin/python benchmarks/profile_run.py -a attention_numpy -n 50

For each assignment and preload set (everything, as before issue 14; only what the assignment
imports), a process imports the libraries as the forking server does (``server.preload``), then
forks N children one after the other. Each child runs the assignment's solution, as a student
would hand it in, with ``worker.Runner`` (cells, then the grader's captures) and exits; the
parent times, with ``time.perf_counter`` on both sides of the fork:

    fork       the parent's os.fork() call
    setup      in the child: reseeding and the shell (what run_isolated does before the cells)
    cells      the cells and captures (Runner.run), with the lean runner and with IPython's run_cell
    exit       from the child's os._exit to the parent's waitpid returning (teardown of the address space)

No sandbox here (namespaces, limits): that part is the same whatever is preloaded and is
measured by bench_grading.py end to end. Medians over N children, in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _job(assignment_name: str) -> dict:
    from bench_grading import as_handed_in

    from grader.course import config
    from grader.judge import jobs

    course = config.load(ROOT / "config.yaml")
    assignment = course.assignment(assignment_name)
    nb = as_handed_in(assignment.solution)
    from grader import notebook

    path = Path("/tmp") / f"profile-{assignment_name}.ipynb"
    import nbformat

    nbformat.write(nb, str(path))
    cells = notebook.read(path)
    job = jobs.build_job(assignment, cells, notebook.analyse(cells), path, hints=False, skip=set())
    wire = job.to_wire(str(assignment.solution_dir))
    return {"wire": wire, "preload": getattr(job, "preload", ())}


def measure(wire: dict, modules: tuple[str, ...], n: int, lean: bool) -> dict[str, float]:
    """Fork ``n`` children from a process preloaded with ``modules``, in a fresh interpreter."""
    import json
    import subprocess

    code = f"""
import io, json, os, sys, time
sys.path.insert(0, {str(ROOT)!r})
from grader.run.forking import server
shell, loaded = server.preload({modules!r})
from grader.run import worker
wire = json.loads(sys.stdin.read())
os.chdir(wire["workdir"])
rows = []
for i in range({n}):
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t1 = time.perf_counter()
        server._reseed()
        sh = worker.make_shell()
        runner = worker.Runner(wire, io.BytesIO(), sh)
        runner.lean = {lean!r}
        t2 = time.perf_counter()
        runner.run()
        t3 = time.perf_counter()
        os.write(w, json.dumps([t1, t2, t3]).encode())
        os._exit(0)
    os.close(w)
    t_fork = time.perf_counter()
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    t_end = time.perf_counter()
    t1, t2, t3 = json.loads(data)
    rows.append({{"fork": t_fork - t0, "setup": t2 - t1, "cells": t3 - t2, "exit": t_end - t3,
                  "total": t_end - t0}})
print(json.dumps({{"loaded": loaded, "rows": rows}}))
"""
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(wire), capture_output=True, text=True,
                         check=True, env={**os.environ, "MPLBACKEND": "Agg"})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rows = result["rows"][1:]  # the first child pays for first-use paths the server did not warm
    return {k: statistics.median(r[k] for r in rows) * 1000 for k in rows[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-a", "--assignment", action="append", help="default: attention_numpy and attention_from_scratch")
    ap.add_argument("-n", type=int, default=30, help="children per row (default 30)")
    args = ap.parse_args()
    from grader.run.forking import PRELOAD

    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("| assignment | preload | runner | fork | setup | cells | exit | total |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.assignment or ["attention_numpy", "attention_from_scratch"]:
        job = _job(name)
        sets = [("everything", tuple(PRELOAD))]
        if job["preload"]:
            sets.append(("the assignment's", tuple(job["preload"])))
        for label, modules in sets:
            for lean in (False, True):
                m = measure(job["wire"], modules, args.n, lean)
                print(f"| {name} | {label} | {'lean' if lean else 'IPython run_cell'} | {m['fork']:.1f} | "
                      f"{m['setup']:.1f} | {m['cells']:.1f} | {m['exit']:.1f} | {m['total']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
