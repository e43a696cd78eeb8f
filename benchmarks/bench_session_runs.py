"""What a run costs inside an open session: the time from one run's last frame to the next run's
result, with a one-cell notebook, so nearly all of it is the sandbox's own work between runs
(ending the run's process and what it started, emptying the writable places, making the next
run's process and setting it up).

    .venv/bin/python benchmarks/bench_session_runs.py -n 60

Each session runs ``--runs`` one-cell notebooks in a row (3, as a submission's own data and two
variants); printed: the median and 90th percentile of a run's wall time after the first run of a
session (the first includes opening the session), and the machine's busy CPU time per run
(``/proc/stat``, so it counts everything on the machine: print ``uptime`` with it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.course import config  # noqa: E402
from grader.run.forking import ForkingExecutor  # noqa: E402
from grader.run.job import Job, JobCell  # noqa: E402


def _machine_cpu() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=40, help="sessions")
    ap.add_argument("--runs", type=int, default=3, help="runs per session")
    args = ap.parse_args(argv)
    course = config.load(ROOT / "config.yaml")
    limits = dataclasses.replace(course.assignment("attention_numpy").limits, cell_timeout=5.0, notebook_timeout=30.0)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.txt"
        data.write_text("given\n")
        job = Job(
            cells=(JobCell(1, "x = 1"),), captures=(), limits=limits, files=((data, "data.txt"),), preload=("numpy",)
        )
        later: list[float] = []
        first: list[float] = []
        with ForkingExecutor(preload=("numpy",)) as executor:
            executor.run(job)  # the server started and warm
            cpu = _machine_cpu()
            t0 = time.perf_counter()
            for _ in range(args.n):
                with executor.session() as runner:
                    for k in range(args.runs):
                        t = time.perf_counter()
                        result = runner.run(job if k < args.runs - 1 else dataclasses.replace(job, last=True))
                        (first if k == 0 else later).append(time.perf_counter() - t)
                        assert result.status == "ok", result.reason
            wall = time.perf_counter() - t0
            cpu = _machine_cpu() - cpu
    runs = args.n * args.runs
    print(f"{args.n} sessions of {args.runs} one-cell runs, load average {os.getloadavg()[0]:.2f}")
    print(f"  a session's first run: median {1000 * statistics.median(first):.1f} ms")
    print(
        f"  each later run: median {1000 * statistics.median(later):.1f} ms, "
        f"p90 {1000 * sorted(later)[int(0.9 * len(later))]:.1f} ms"
    )
    print(f"  per run: {1000 * wall / runs:.1f} ms of wall time, {1000 * cpu / runs:.1f} ms of the machine's CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
