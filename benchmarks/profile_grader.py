"""The grader's own work on a submission, without its runs: where ``Grader.grade`` spends its time
when the student's and the solution's processes cost nothing.

    .venv/bin/python benchmarks/profile_grader.py -n 40                      # both assignments, table
    .venv/bin/python benchmarks/profile_grader.py -n 40 --profile out.prof   # and a cProfile of the replay

A class is generated as ``bench_grading.py`` generates it (the same mix of correct, wrong, raising
and blank notebooks). Each submission is graded once with the forking executor, every run's result
recorded under its job; then the class is graded again by a new ``Grader`` whose executor hands back
the recorded result of each job at once (the references are computed again, through the same
replay). What that second pass costs is the grader's own work: reading and validating the notebook,
the data-flow analysis, building the jobs, decoding nothing (the results are already decoded),
comparing, the scorecard. Printed per assignment: the median and mean CPU time of the grading
thread per submission in the replay, and the share of the top functions when ``--profile`` is given.
The replayed scorecards are compared with the recorded ones (they must be identical).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grading import comparable, generate  # noqa: E402

from grader.course import config  # noqa: E402
from grader.judge.grading import Grader  # noqa: E402
from grader.run.execute import Capabilities  # noqa: E402
from grader.run.job import Job, RunResult  # noqa: E402


def job_key(job: Job) -> str:
    return repr(job)


class Recording:
    """An executor that runs jobs on another and keeps each result under its job."""

    def __init__(self, inner: Any, store: dict[str, RunResult]) -> None:
        self.inner, self.store = inner, store
        self.name, self.features = inner.name, inner.features
        self.capabilities = getattr(inner, "capabilities", Capabilities())

    def run(self, job: Job) -> RunResult:
        result: RunResult = self.inner.run(job)
        self.store[job_key(job)] = result
        return result

    def session(self, reuse: Hashable | None = None) -> Recording:
        return Recording(self.inner.session(reuse=reuse), self.store)

    def start(self, preload: tuple[str, ...] | None = None) -> object:
        return self.inner.start(preload)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()


class Replay:
    """An executor that hands back the recorded result of each job, running nothing."""

    name = "forking"  # as recorded, so the scorecards compare whole
    features = None
    capabilities = Capabilities()

    def __init__(self, store: dict[str, RunResult]) -> None:
        self.store = store
        self.missing = 0

    def run(self, job: Job) -> RunResult:
        return self.store[job_key(job)]

    def session(self, reuse: Hashable | None = None) -> Replay:
        return self

    def start(self, preload: tuple[str, ...] | None = None) -> None:
        return None

    def close(self) -> None:
        pass

    def __enter__(self) -> Replay:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=40, help="submissions in total, split between the assignments")
    ap.add_argument("--assignments", default="attention_numpy,attention_from_scratch")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3, help="replays of the class (the median is printed)")
    ap.add_argument("--profile", help="write a cProfile of one replay here and print its top functions")
    args = ap.parse_args(argv)

    os.environ["GRADER_VARIANT_SECRET"] = "benchmarks/profile_grader.py: one secret, the same draws on replay"
    from grader.run.forking import ForkingExecutor

    course = config.load(ROOT / "config.yaml")
    names = [a for a in args.assignments.split(",") if a]
    rng = random.Random(args.seed)
    store: dict[str, RunResult] = {}
    with tempfile.TemporaryDirectory(prefix="profile-grader-") as tmp:
        classes = {}
        for k, name in enumerate(names):
            share = args.n // len(names) + (1 if k < args.n % len(names) else 0)
            classes[name] = generate(course.assignment(name), share, 0, 0.0, Path(tmp), rng)
        recorded: dict[str, dict[str, Any]] = {}
        executor = ForkingExecutor()
        rec_course = dataclasses.replace(course, cache_dir=Path(tmp) / "cache-record")
        grader = Grader(rec_course, Recording(executor, store))
        for name, subs in classes.items():
            a = rec_course.assignment(name)
            for path, _ in subs:
                recorded[str(path)] = comparable(grader.grade(a, path))
        executor.close()
        print(f"{args.n} submissions recorded ({len(store)} distinct runs); load average {_load()}", flush=True)

        per: dict[str, list[float]] = {name: [] for name in names}
        differ = 0
        profiler = cProfile.Profile() if args.profile else None
        for rep in range(args.repeat):
            replay_course = dataclasses.replace(course, cache_dir=Path(tmp) / f"cache-replay-{rep}")
            replayer = Grader(replay_course, Replay(store))
            times: dict[str, list[float]] = {name: [] for name in names}
            for name, subs in classes.items():
                a = replay_course.assignment(name)
                replayer.references.get(a)  # the references, as a batch computes them first
                for path, _ in subs:
                    if profiler is not None and rep == args.repeat - 1:
                        profiler.enable()
                    t = time.thread_time()
                    card = replayer.grade(a, path)
                    times[name].append(time.thread_time() - t)
                    if profiler is not None and rep == args.repeat - 1:
                        profiler.disable()
                    if rep == 0 and comparable(card) != recorded[str(path)]:
                        differ += 1
            for name in names:
                per[name].append(statistics.median(times[name]))
                per[name + " mean"] = [*per.get(name + " mean", []), statistics.fmean(times[name])]
        print(f"replayed scorecards identical to the recorded ones: {'yes' if not differ else f'NO ({differ} differ)'}")
        print(f"{'assignment':<26}{'median CPU / submission':>26}{'mean':>10}")
        for name in names:
            print(
                f"{name:<26}{1000 * statistics.median(per[name]):>24.1f}ms"
                f"{1000 * statistics.median(per[name + ' mean']):>8.1f}ms"
            )
        print(f"load average at the end: {_load()}")
        if profiler is not None:
            profiler.dump_stats(args.profile)
            stats = pstats.Stats(args.profile)
            stats.sort_stats("cumulative").print_stats(45)
            stats.sort_stats("tottime").print_stats(30)
    return 0 if not differ else 1


def _load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
