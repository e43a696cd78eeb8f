"""Benchmark: one class graded on this machine, then through a Dask cluster of 1, 2 and 4 workers.

    .venv/bin/python benchmarks/bench_cluster.py                  # 80 attention_numpy submissions
    .venv/bin/python benchmarks/bench_cluster.py -n 200 --workers 1,2,4,8

The class is generated as in bench_grading.py (correct, wrong, raising, blank; every file
distinct, nothing served from a cache). It is graded with ``grader.batch.grade_all`` (the code
behind ``grader grade``): first on this machine with ``--jobs 1`` and ``--jobs 2``, then with
``cluster=`` a real ``dask scheduler`` and W ``dask worker`` processes (one thread each) started
on 127.0.0.1 for each W. Printed per row:

    wall        the whole batch, as ``grader grade`` would spend it (for the cluster: connecting,
                sending the plugin, each worker starting its forking server)
    steady      submissions per second once every worker is warm (from the 2W-th scorecard back
                to the last)
    grade       mean wall time of one ``Grader.grade`` call where it ran (execution.time), over
                the same steady part
    overhead    steady wall time per submission per thread, minus ``grade``: with one thread,
                what it costs to get a submission to a grader and its scorecard back (thread pool
                locally; scheduler, transfer and the start log through Dask); with more threads
                than cores it is mostly the threads waiting for a core

Then files that are not notebooks (``--tiny`` of them; grading one takes about a millisecond)
go through a 1-worker cluster and through this machine's ``-j 1``: their wall time per file
is the round trip itself.

The machine's load average is printed with each row: it is shared, and the numbers move with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_grading import generate  # noqa: E402

from grader import batch  # noqa: E402
from grader.course import config  # noqa: E402
from grader.files import sha256_file  # noqa: E402
from grader.judge.grading import Grader  # noqa: E402
from grader.run import executors  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A dask scheduler and ``workers`` dask worker processes on 127.0.0.1, one thread each."""

    def __init__(self, workers: int, logs: Path):
        import distributed

        self.address = f"tcp://127.0.0.1:{free_port()}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.start(
            logs / "scheduler.log",
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            self.address.rsplit(":", 1)[1],
            "--no-dashboard",
        )
        for i in range(workers):
            self.start(
                logs / f"worker{i}.log",
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                "--name",
                f"w{i}",
            )
        with distributed.Client(self.address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=180)

    def start(self, log: Path, *args: str) -> None:
        with open(log, "w") as f:
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "dask", *args],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    env=ENV,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def run(
    label: str,
    grader: Grader,
    assignment: config.Assignment,
    subs: list[batch.Submission],
    *,
    threads: int,
    jobs: int = 1,
    cluster: str | None = None,
) -> dict[str, object]:
    arrivals: list[tuple[float, float]] = []  # (when the card came back, its Grader.grade time), in arrival order
    started = time.monotonic()
    outcome = batch.grade_all(
        grader,
        assignment,
        subs,
        jobs=jobs,
        cluster=cluster,
        on_card=lambda s, c: arrivals.append((time.monotonic(), float(c.execution.time or 0.0))),
    )
    wall = time.monotonic() - started
    warm = min(2 * threads, len(arrivals) - 2)  # by then every worker has started its server
    steady = (len(arrivals) - 1 - warm) / (arrivals[-1][0] - arrivals[warm][0])
    grade = statistics.mean(g for _, g in arrivals[warm + 1 :])
    row = {
        "label": label,
        "n": len(subs),
        "threads": threads,
        "wall": wall,
        "throughput": len(subs) / wall,
        "steady": steady,
        "grade_ms": 1000 * grade,
        "overhead_ms": 1000 * (threads / steady - grade),
        "load": load(),
        "scores": [c.score for c in outcome.cards],
    }
    print(
        f"{label:<22} n={len(subs)}  wall {wall:6.1f} s  {len(subs) / wall:5.2f}/s  steady {steady:5.2f}/s  "
        f"grade {row['grade_ms']:5.0f} ms  overhead {row['overhead_ms']:5.0f} ms  load {row['load']}",
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=80, help="submissions")
    ap.add_argument("--assignment", default="attention_numpy")
    ap.add_argument("--workers", default="1,2,4", help="cluster sizes to measure (dask worker processes)")
    ap.add_argument("--tiny", type=int, default=300, help="files that are not notebooks, to time the round trip")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    course = dataclasses.replace(config.load(ROOT / "config.yaml"), cache_dir=tmp / "cache")
    assignment = course.assignment(args.assignment)
    made = generate(assignment, args.n, 0, 0.0, tmp / "class", random.Random(args.seed))
    subs = [
        batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p), name=p.stem) for p, _ in made
    ]
    print(f"{args.n} {args.assignment} submissions on {os.cpu_count()} cores; load average at the start {load()}")
    grader = Grader(course, executors.make_executor("forking"))
    t = time.monotonic()
    grader.references.get(assignment)
    print(f"setup (server start, solution and variants run): {time.monotonic() - t:.1f} s")

    rows: list[dict[str, object]] = [
        run("this machine, -j 1", grader, assignment, subs, threads=1, jobs=1),
        run("this machine, -j 2", grader, assignment, subs, threads=2, jobs=2),
    ]
    # Files that are not notebooks: Grader.grade takes about a millisecond on them, so the wall
    # time per submission is what getting it to a grader and back costs.
    (tmp / "tiny").mkdir()
    tiny = []
    for i in range(args.tiny):
        p = tmp / "tiny" / f"t{i:05d}.ipynb"
        p.write_text(f"not a notebook {i}")
        tiny.append(batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p), name=p.stem))
    local_tiny = run("tiny, this machine -j 1", grader, assignment, tiny, threads=1, jobs=1)
    for w in (int(x) for x in args.workers.split(",")):
        (tmp / f"dask{w}").mkdir()
        cluster = Cluster(w, tmp / f"dask{w}")
        try:
            rows.append(run(f"Dask, {w} worker(s)", grader, assignment, subs, threads=w, cluster=cluster.address))
            if w == 1:
                dask_tiny = run("tiny, Dask 1 worker", grader, assignment, tiny, threads=1, cluster=cluster.address)
                print(
                    f"per submission through Dask, nothing to grade: {1000 / float(dask_tiny['steady']):.1f} ms "
                    f"(on this machine: {1000 / float(local_tiny['steady']):.1f} ms)",
                    flush=True,
                )
        finally:
            cluster.stop()
    same = all(r["scores"] == rows[0]["scores"] for r in rows if r["n"] == args.n)
    print(f"every run gave the same scores: {same}; load average at the end {load()}")
    one, local = next(r for r in rows if r["label"] == "Dask, 1 worker(s)"), rows[0]
    print(
        f"Dask's cost per submission (1 worker against -j 1, steady): "
        f"{1000 / float(one['steady']) - 1000 / float(local['steady']):.0f} ms"
    )
    grader.executor.close()
    shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
