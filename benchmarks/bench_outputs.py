"""The figures of docs/outputs.md ("Numbers"), measured: what the output commands cost and write.

    .venv/bin/python benchmarks/bench_outputs.py

Grades the eight example submissions of attention_numpy with `--formats yaml`, then with every
format (the reference cached by the first run, as in a course), then runs `grader check` on one
notebook, `grader report` on the scorecards and `grader gradescope-zip`. Prints the date, the load
and each wall time and file size, ready to paste.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples/attention_numpy"
ALL = "yaml,json,md,html,gradescope,classroom,classroom50,junit,gradebook,report"


def timed(*args: str, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader.cli", *args], check=True, capture_output=True, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    load = os.getloadavg()[0]
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, load average "
        f"{load:.1f} at the start"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        subs = base / "subs"
        shutil.copytree(EXAMPLES, subs)
        config = str(ROOT / "config.yaml")
        yaml_only = timed(
            "grade",
            str(subs),
            "-a",
            "attention_numpy",
            "-c",
            config,
            "-f",
            "yaml",
            "-o",
            str(base / "y"),
            "--force",
            cwd=base,
        )
        every = timed(
            "grade",
            str(subs),
            "-a",
            "attention_numpy",
            "-c",
            config,
            "-f",
            ALL,
            "-o",
            str(base / "all"),
            "--force",
            cwd=base,
        )
        out = base / "all"
        files = sorted(p for p in out.iterdir() if p.is_file())
        html = [p.stat().st_size for p in files if p.suffix == ".html" and p.name != "report.html"]
        print(
            f"grader grade (8 notebooks): {yaml_only:.1f} s with --formats yaml, {every:.1f} s with all ten; "
            f"{len(files)} files; report.html {(out / 'report.html').stat().st_size // 1024} KB, HTML feedback "
            f"{min(html) // 1024}-{max(html) // 1024} KB"
        )
        folder = base / "student"
        shutil.copytree(ROOT / "assignments/attention_numpy", folder)
        check = _check(folder)
        report = timed("report", str(base / "y"), "-o", str(base / "report"), cwd=base)
        zipped = timed("gradescope-zip", "attention_numpy", "-c", config, "--out", str(base / "zip"), cwd=base)
        size = (base / "zip/attention_numpy-gradescope.zip").stat().st_size // 1024
        print(
            f"grader check (the skeleton): {check:.1f} s; grader report (8 scorecards): {report:.1f} s; "
            f"grader gradescope-zip: {zipped:.1f} s, {size} KB"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def _check(folder: Path) -> float:
    """`grader check` exits 1 when a question does not pass (the skeleton passes none): timed all the same."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "grader.cli", "check", "attention_numpy.ipynb"], capture_output=True, cwd=folder
    )
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
