"""Benchmark: the pytest plugin, serial against pytest-xdist, on classes of several sizes.

    .venv/bin/python benchmarks/bench_plugin.py --sizes 8,40,80,160 --workers 2

For each size N, N copies of the demo notebooks (``examples/attention_numpy``: correct, wrong,
raising, half-done and unreadable ones) are graded with ``pytest --submission DIR``, once serially
and once with ``-n WORKERS``, alternating, ``--repeat`` times each. It prints the wall time and the
CPU time (the whole process tree's) of each, and their ratio. The reference values are computed
once beforehand, so every run measures grading alone.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "attention_numpy"


def make_class(folder: Path, size: int) -> None:
    demo = sorted(EXAMPLES.glob("*.ipynb"))
    for i in range(size):
        src = demo[i % len(demo)]
        shutil.copyfile(src, folder / f"s{i:04d}_{src.name}")


def run(folder: Path, cards: Path, workers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process it started) for one pytest run."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--assignment",
        "attention_numpy",
        "--submission",
        str(folder),
        "--scorecard-dir",
        str(cards),
    ]
    if workers > 1:
        cmd += ["-n", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: some questions do not pass, as the demo intends
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,40,80,160", help="class sizes, comma-separated")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (-n)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each, alternating")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="grader-bench-plugin-") as tmp:
        base = Path(tmp)
        warm = base / "warm"
        warm.mkdir()
        make_class(warm, 1)
        run(warm, base / "cards-warm", 1)  # the reference, computed once and cached
        print(
            f"pytest --submission DIR, serial vs -n {args.workers}; {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.1f}; median of {args.repeat} runs each"
        )
        print(
            f"{'notebooks':>9}  {'serial wall':>11}  {'-n wall':>8}  {'speed-up':>8}  {'serial CPU':>10}  {'-n CPU':>7}"
        )
        for size in sizes:
            folder = base / f"class-{size}"
            folder.mkdir()
            make_class(folder, size)
            serial, parallel = [], []
            for _ in range(args.repeat):
                serial.append(run(folder, base / f"cards-{size}-1", 1))
                parallel.append(run(folder, base / f"cards-{size}-n", args.workers))
            sw, sc = statistics.median(w for w, _ in serial), statistics.median(c for _, c in serial)
            pw, pc = statistics.median(w for w, _ in parallel), statistics.median(c for _, c in parallel)
            print(f"{size:>9}  {sw:>10.2f}s  {pw:>7.2f}s  {sw / pw:>7.2f}x  {sc:>9.2f}s  {pc:>6.2f}s", flush=True)


if __name__ == "__main__":
    main()
