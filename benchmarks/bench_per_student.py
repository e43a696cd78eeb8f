"""The figures of docs/per-student.md ("Numbers"), measured: what a notebook per student costs.

    .venv/bin/python benchmarks/bench_per_student.py [STUDENTS]

Builds the small per-student course of the tests (tests/per_student_course.py) with a roster of
STUDENTS (500 by default), runs `grader assign wordstats` once (the skeleton and the solution's
reference), then times `grader assign wordstats --per-student roster.csv --out DIR` twice: the
first run draws every student's data and runs the solution on three sample students for the
public checks; the second finds those cached. Prints the date, the load and each wall time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from per_student_course import NAME, build  # noqa: E402 - the tests' course, found beside them


def timed(*args: str, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader.cli", *args], check=True, capture_output=True, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    students = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} at the start"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, students=students)
        os.environ.setdefault("GRADER_VARIANT_SECRET", "the benchmark's course secret, fixed for its runs")
        skeleton = timed("assign", NAME, cwd=root)
        cold = timed("assign", NAME, "--per-student", "roster.csv", "--out", "students", cwd=root)
        warm = timed("assign", NAME, "--per-student", "roster.csv", "--out", "students", cwd=root)
        notebooks = sorted((root / "students").glob(f"*/{NAME}.ipynb"))
        size = sum(p.stat().st_size for p in notebooks)
    print(f"grader assign {NAME} (skeleton, solution run): {skeleton:.1f} s")
    print(f"grader assign {NAME} --per-student, {len(notebooks)} students, first run: {cold:.1f} s")
    print(f"the same again (sample students' references cached): {warm:.1f} s")
    print(
        f"{len(notebooks)} notebooks, {size / len(notebooks) / 1024:.1f} KB each; load average {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
