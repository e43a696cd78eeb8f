"""Benchmark: one large batch through the command line, watched from outside.

    .venv/bin/python benchmarks/bench_cli.py -n 2000

N attention_numpy submissions (correct, wrong, raising and blank, as in bench_grading.py) are
written in a folder-per-student layout and graded with ``grader grade DIR -a attention_numpy
--out OUT -j JOBS``, as an instructor would. Every 0.2 s the script samples the grader process
(RSS, open descriptors) and its whole process tree (PSS, number of processes). It prints the
wall time, the peaks and what was written, then runs the same command again, which takes every
result from the cache.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grading import _memory, _tree, generate  # noqa: E402

from grader.course import config  # noqa: E402


class Watch(threading.Thread):
    def __init__(self, pid: int, every: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.every, self.done = pid, every, threading.Event()
        self.rss = self.fds = self.pss = self.procs = 0

    def run(self) -> None:
        while not self.done.wait(self.every):
            try:
                self.fds = max(self.fds, len(os.listdir(f"/proc/{self.pid}/fd")))
            except OSError:
                continue
            self.rss = max(self.rss, _memory(self.pid)[1])
            pids = _tree(self.pid)
            self.procs = max(self.procs, len(pids))
            self.pss = max(self.pss, sum(_memory(p)[0] for p in pids))


def grade(folder: Path, out: Path, jobs: int) -> tuple[float, Watch, int]:
    command = [
        str(ROOT / ".venv/bin/grader"),
        "grade",
        str(folder),
        "-a",
        "attention_numpy",
        "--out",
        str(out),
        "-j",
        str(jobs),
        "--config",
        str(ROOT / "config.yaml"),
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "CI": "1"})
    watch = Watch(proc.pid)
    watch.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - started
    watch.done.set()
    watch.join()
    if proc.returncode not in (0, 1):
        print(err.decode(errors="replace")[-2000:], file=sys.stderr)
    return wall, watch, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    course = config.load(ROOT / "config.yaml")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        made = generate(
            course.assignment("attention_numpy"), args.n, 0, 0.0, Path(tmp) / "made", random.Random(args.seed)
        )
        folder = Path(tmp) / "class"
        for path, _ in made:  # a folder per student, as a course site's download gives
            student = folder / path.stem
            student.mkdir(parents=True)
            path.rename(student / "attention_numpy.ipynb")
        out = Path(tmp) / "out"
        print(
            f"{args.n} attention_numpy submissions, a folder each, -j {args.jobs}, {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        for label in ("first run", "again (cached)"):
            wall, watch, code = grade(folder, out, args.jobs)
            cards = len(list(out.rglob("*.yaml"))) if out.exists() else 0
            with open(out / "gradebook.csv", newline="") as f:
                rows = sum(1 for _ in csv.reader(f))
            print(
                f"{label}: {wall:.1f} s ({args.n / wall:.1f}/s), exit {code}; grader process: peak RSS "
                f"{watch.rss / 1024:.0f} MB, at most {watch.fds} open descriptors; whole tree: peak "
                f"{watch.pss / 1024:.0f} MB PSS, at most {watch.procs} processes; {cards} scorecards, "
                f"gradebook.csv {rows} lines",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
