"""Benchmark: what recording the student's functions and modules costs a correct submission.

    .venv/bin/python benchmarks/bench_carry_calls.py -n 5

Carry-forward through a student's function or module (``grader.run.calls``) records the calls of
every followed callable in each run of a submission (attention_numpy's ``softmax``,
attention_french's ``self_attention``, attention_from_scratch's ``CausalAttention``). For each of
those assignments, the skeleton filled with the solution's code is graded N times with recording
on and N times with it off (no callable followed), alternating, and the median wall times printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_assignments import CORRECT  # noqa: E402

from grader.course import config  # noqa: E402
from grader.judge import carry  # noqa: E402
from grader.judge.grading import Grader  # noqa: E402
from grader.testing import fill, write  # noqa: E402

NAMES = ("attention_numpy", "attention_french", "attention_from_scratch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="gradings per setting and assignment")
    args = parser.parse_args()
    followed = carry.followed_calls
    with tempfile.TemporaryDirectory() as tmp:
        course = dataclasses.replace(config.load(ROOT / "config.yaml"), cache_dir=Path(tmp) / "cache")
        grader = Grader(course)
        for name in NAMES:
            a = course.assignment(name)
            path = write(fill(a.skeleton, CORRECT[name]), Path(tmp) / f"{name}.ipynb")
            grader.grade(a, path, course_variants=True)  # the references, once
            times: dict[str, list[float]] = {"recorded": [], "not recorded": []}
            for _ in range(args.n):
                for label in times:
                    carry.followed_calls = followed if label == "recorded" else (lambda *_: carry.Calls({}, {}))
                    start = time.perf_counter()
                    card = grader.grade(a, path, course_variants=True)
                    times[label].append(time.perf_counter() - start)
                    assert card.score == card.max_score, name
            carry.followed_calls = followed
            print(f"{name:24s} " + "  ".join(f"{k}: {statistics.median(v) * 1000:6.0f} ms" for k, v in times.items()))


if __name__ == "__main__":
    main()
