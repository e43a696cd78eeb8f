"""Benchmark: a hidden test that calls the student's function on big frames and times it against
the test's own reference (ITMO's RecSys homework idiom; ``tests/test_timed_tests.py`` at 10,000
rows), at the size where it matters.

    .venv/bin/python benchmarks/bench_timed_test.py [--users 30000] [-n 3]

The test's frame has ``users`` x 100 rows (30,000 users: 3 million rows, the size of ITMO's). For
each of ``n`` rounds, in this process:

- the student's side of the test (``test_recorder.record_test``), as before (every site the test
  reaches recorded and encoded, clock readings as the wall clock gives them) and as now (the sites
  the grader computes itself on data it holds are not sent; clock readings leave out the time the
  thread waited for a CPU): seconds, bytes sent, the ratio ``best_time(top_share) /
  best_time(top_share_correct)`` the test asserts below 1.5 (both functions are the same code, so
  1.0 is right, and a ratio over 1.5 fails a correct solution);
- the grader's side (decoding the records and judging the test on them), now;
- the same test run as nbgrader runs it (``exec`` in the notebook's namespace, wall clock): its ratio.

Prints the date, the load average and the CPUs first: the before/after seconds are only comparable
within one run, and the ratios are what the load does to a wall-clock timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import test_timed_tests as fixture  # noqa: E402

from grader.capture import decode  # noqa: E402
from grader.course.model import Check  # noqa: E402
from grader.judge import testcheck  # noqa: E402
from grader.judge.testrewrite import program  # noqa: E402
from grader.run import test_recorder  # noqa: E402
from grader.run.job import Captured  # noqa: E402

RATIO = "best_time(top_share) / best_time(top_share_correct)"


def source(users: int) -> str:
    """The fixture's hidden test at ``users`` users, its timing assert kept and its ratio kept too."""
    hidden = fixture.TEST.replace("### BEGIN HIDDEN TESTS\n", "").replace("### END HIDDEN TESTS", "")
    hidden = hidden.replace("big_sales(100)", f"big_sales({users})")
    return hidden.replace(f"assert {RATIO} < 3", f"ratio = {RATIO}\nassert ratio < 1.5")


def namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(fixture.GIVEN, ns)  # noqa: S102 - the notebook's cells
    exec(f"def top_share(sales, k):\n{fixture.VECTORIZED}", ns)  # noqa: S102
    return ns


def student_side(test: str, *, now: bool) -> tuple[float, int, dict[str, Any]]:
    """Seconds, bytes sent and the records of the student's side of the test."""
    prog = program(test)
    local = frozenset(s.index for s in prog.sites if s.local and not s.reads_file) if now else frozenset()
    own = test_recorder.OwnClock.__call__
    if not now:
        test_recorder.OwnClock.__call__ = lambda self, reading: reading  # type: ignore[method-assign]  # the wall clock, as before
    try:
        started = time.perf_counter()
        records = test_recorder.record_test(prog.record_source, namespace(), 0, [64 << 20], local)
        seconds = time.perf_counter() - started
    finally:
        test_recorder.OwnClock.__call__ = own  # type: ignore[method-assign]
    return seconds, len(json.dumps(records)), records


def recorded_ratio(test: str, records: dict[str, Any]) -> tuple[float, float, bool]:
    """The grader's side: seconds to decode and judge, the ratio the test computed, whether it passed."""
    check = Check(
        id="t", question_id="q", kind="test", target=test, points=1.0, rtol=1e-5, atol=1e-8, strict_types=False
    )
    started = time.perf_counter()
    got = Captured(value=decode(records))
    ratio: list[float] = []
    original = getattr(testcheck, "namespace")  # noqa: B009 - replaced below, to read the test's ``ratio``

    def keeping(src: str) -> dict[str, Any]:  # the grader's namespace of the test, kept to read ``ratio``
        ns = original(src)
        ratio.append(0.0)
        keeping.ns = ns  # type: ignore[attr-defined]
        return ns

    setattr(testcheck, "namespace", keeping)  # noqa: B010
    try:
        outcome = testcheck.judge(check, {"t": got}, reveal=False)
    finally:
        setattr(testcheck, "namespace", original)  # noqa: B010
    seconds = time.perf_counter() - started
    value = keeping.ns.get("ratio", float("nan"))  # type: ignore[attr-defined]
    return seconds, float(value), not outcome.findings


def as_nbgrader(test: str) -> float:
    """The test run in the notebook's namespace, as nbgrader runs it (the wall clock): its ratio."""
    ns = namespace()
    exec(test.replace("assert ratio < 1.5", ""), ns)  # noqa: S102 - the course's own test, here
    return float(ns["ratio"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=30_000, help="users in the test's frame (x 100 rows)")
    parser.add_argument("-n", type=int, default=3, help="rounds")
    args = parser.parse_args()
    test = source(args.users)
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()}, cpus {os.cpu_count()}")
    print(f"frame: {args.users * 100:,} rows; {args.n} rounds\n")
    rows: dict[str, list[float]] = {}
    for _ in range(args.n):
        for label, now in (("before", False), ("now", True)):
            seconds, sent, records = student_side(test, now=now)
            judged, ratio, passed = recorded_ratio(test, records)
            rows.setdefault(f"{label}: student side, seconds", []).append(seconds)
            rows.setdefault(f"{label}: bytes sent", []).append(sent)
            rows.setdefault(f"{label}: grader side, seconds", []).append(judged)
            rows.setdefault(f"{label}: ratio the test asserts < 1.5", []).append(ratio)
            rows.setdefault(f"{label}: solution passes (1 yes)", []).append(float(passed))
        rows.setdefault("nbgrader's way (wall clock): ratio", []).append(as_nbgrader(test))
        print(f"round done, load average {os.getloadavg()[0]:.1f}", flush=True)
    print()
    for name, values in rows.items():
        shown = ", ".join(f"{v:,.3f}" if v < 1000 else f"{v:,.0f}" for v in values)
        print(f"{name:45} median {statistics.median(values):>14,.3f}   [{shown}]")
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
