"""Where one run's time goes: a notebook run in a process forked from a preloaded server, by phase.

    .venv/bin/python benchmarks/profile_run.py                      # both assignments, every preload set
    .venv/bin/python benchmarks/profile_run.py -a attention_numpy -n 50

For each assignment and preload set (everything, as before issue 14; only what the assignment
imports) and each way of running cells (IPython's run_cell, as before; the lean runner), a process
imports the libraries as the forking server does (``server.preload``), then forks N children, one
after the other; the four processes take turns, one child each, so that all see the same load. Each child runs the assignment's solution, as a student
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


CHILD = """
import io, json, os, sys, time
sys.path.insert(0, {root!r})
from grader.run.forking import server
shell, loaded = server.preload({modules!r})
from grader.run import worker
wire = json.loads(sys.stdin.readline())
os.chdir(wire["workdir"])
print("ready", flush=True)
for _ in sys.stdin:  # one child per line the parent sends
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        t1 = time.perf_counter()
        server.seed_everything(None)
        runner = worker.Runner(wire, io.BytesIO(), worker.make_shell())
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
    print(json.dumps({{"fork": t_fork - t0, "setup": t2 - t1, "cells": t3 - t2, "exit": t_end - t3,
                      "total": t_end - t0}}), flush=True)
"""


def measure(wire: dict, configs: list[tuple[tuple[str, ...], bool]], n: int) -> list[dict[str, float]]:
    """For each (modules, lean): a fresh interpreter preloaded with ``modules`` forks ``n`` children.
    The configurations take turns, one child each, so that a machine whose load drifts slows
    them all alike."""
    import json
    import subprocess

    procs = []
    for modules, lean in configs:
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", CHILD.format(root=str(ROOT), modules=modules, lean=lean)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={
                    **os.environ,
                    "MPLBACKEND": "Agg",
                    "OMP_NUM_THREADS": "1",
                    "MKL_NUM_THREADS": "1",
                    "OPENBLAS_NUM_THREADS": "1",
                },
            )
        )
    for proc in procs:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(wire) + "\n")
        proc.stdin.flush()
        while proc.stdout.readline().strip() != "ready":
            pass
    rows: list[list[dict[str, float]]] = [[] for _ in procs]
    for i in range(n + 1):
        for k, proc in enumerate(procs):
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
            row = json.loads(proc.stdout.readline())
            if i:  # the first child pays for first-use paths the server did not warm
                rows[k].append(row)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    return [{key: statistics.median(r[key] for r in got) * 1000 for key in got[0]} for got in rows]


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
        configs = [(modules, lean) for _, modules in sets for lean in (False, True)]
        labels = [(label, lean) for label, _ in sets for lean in (False, True)]
        for (label, lean), m in zip(labels, measure(job["wire"], configs, args.n), strict=True):
            print(
                f"| {name} | {label} | {'lean' if lean else 'IPython run_cell'} | {m['fork']:.1f} | "
                f"{m['setup']:.1f} | {m['cells']:.1f} | {m['exit']:.1f} | {m['total']:.1f} |",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
