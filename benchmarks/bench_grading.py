"""Benchmark: grade the same generated class with each executor, in one run.

    .venv/bin/python benchmarks/bench_grading.py                       # 200 submissions, --jobs 2, both executors
    .venv/bin/python benchmarks/bench_grading.py -n 5000 --executors forking

N submissions are generated, split evenly between the assignments (attention_numpy, NumPy, and
attention_from_scratch, PyTorch), from each assignment's own solution and skeleton:

    correct   the solution as a student would hand it in (markers and instructor cells removed)
    wrong     the same with one typical mistake (no sqrt(d_k), softmax over the wrong axis, ...)
    raising   the same with a cell that raises in the middle
    blank     the skeleton, nothing filled in
    slow      correct, then a cell that sleeps for --slow-seconds (--slow of them per assignment)

Every submission is distinct (a numbered comment cell), so nothing is served from a cache. Each
executor grades the same files with ``grader.batch.grade_all`` (the code behind ``grader grade``)
and a fresh reference cache. Printed per executor and assignment: median and p95 of the wall time
of one ``Grader.grade`` call (one submission, its variant re-runs included), the number of notebook
runs and the median wall time of one run, throughput, the
total wall time of the batch, and the peak memory of the whole process tree (this process, the
forking server and its children, or the Jupyter kernels), sampled every 0.2 s: PSS (each shared
page counted once, split among the processes sharing it) and, for comparison, the plain sum of RSS
(which counts the server's preloaded libraries again in every child). The setup (server start,
reference runs of the solutions) is reported on its own line and not included in the batch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import batch  # noqa: E402
from grader.course import config  # noqa: E402
from grader.files import sha256_file  # noqa: E402
from grader.judge.grading import Grader  # noqa: E402
from grader.run import executors  # noqa: E402

MISTAKES = {
    "attention_numpy": [
        ("scores / np.sqrt(d_k)", "scores"),
        ("axis=1, arr=scaled_scores", "axis=0, arr=scaled_scores"),
        ("Q = X @ W_q.T", "Q = X @ W_q"),
        ("output = attention_weights @ V", "output = attention_weights @ X"),
    ],
    "attention_from_scratch": [
        ("attn_scores_2 / d_k**0.5", "attn_scores_2"),
        ("torch.softmax(attn_scores, dim = -1)", "torch.softmax(attn_scores, dim = 0)"),
        ("masked_scores / d_k**0.5", "masked_scores"),
        ("attn_scores_2 / attn_scores_2.sum()", "torch.softmax(attn_scores_2, dim=0)"),
    ],
}
MIX = (("correct", 0.55), ("wrong", 0.25), ("raising", 0.12), ("blank", 0.08))


# -- the class ---------------------------------------------------------------------------------


def as_handed_in(solution: Path) -> nbformat.NotebookNode:
    """The solution without instructor cells and solution markers: a correct student notebook."""
    nb = nbformat.read(str(solution), as_version=4)
    nb.cells = [c for c in nb.cells if "instructor" not in c.get("metadata", {}).get("tags", [])]
    for c in nb.cells:
        if c.cell_type == "code":
            lines = [ln for ln in c.source.splitlines() if ln.strip() not in ("# BEGIN SOLUTION", "# END SOLUTION")]
            c.source = "\n".join(re.sub(r"\s*# SOLUTION\s*$", "", ln) for ln in lines)
    return nb


def generate(
    assignment: config.Assignment, n: int, slow: int, slow_seconds: float, folder: Path, rng: random.Random
) -> list[tuple[Path, str]]:
    correct = as_handed_in(assignment.solution)
    skeleton = nbformat.read(str(assignment.skeleton), as_version=4)
    kinds = [kind for kind, share in MIX for _ in range(round(share * (n - slow)))]
    kinds = (kinds + ["correct"] * n)[: n - slow] + ["slow"] * slow
    rng.shuffle(kinds)
    out = []
    for i, kind in enumerate(kinds):
        nb = nbformat.from_dict(json.loads(json.dumps(skeleton if kind == "blank" else correct)))
        code = [c for c in nb.cells if c.cell_type == "code"]
        if kind == "wrong":
            old, new = rng.choice([m for m in MISTAKES[assignment.name] if any(m[0] in c.source for c in code)])
            cell = next(c for c in code if old in c.source)
            cell.source = cell.source.replace(old, new, 1)
        elif kind == "raising":
            at = nb.cells.index(code[rng.randrange(2, len(code) - 1)])
            nb.cells.insert(at, nbformat.v4.new_code_cell("raise RuntimeError('I got stuck here')"))
        elif kind == "slow":
            nb.cells.append(nbformat.v4.new_code_cell(f"import time\ntime.sleep({slow_seconds})"))
        nb.cells.append(nbformat.v4.new_code_cell(f"# submission {i} ({kind})"))
        path = folder / assignment.name / f"s{i:05d}_{kind}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))
        out.append((path, kind))
    return out


# -- measuring ---------------------------------------------------------------------------------


def _tree(root: int) -> list[int]:
    pids, todo = [root], [root]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
                pids += kids
                todo += kids
        except OSError:
            continue
    return pids


def _memory(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in kB; (0, 0) if it is gone or unreadable."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return pss, rss


class TreeMemory(threading.Thread):
    """Peak PSS and RSS summed over this process and all its descendants."""

    def __init__(self, every: float = 1.0):  # reading smaps_rollup is not free: 0.2 s took ~5% of the CPU
        super().__init__(daemon=True)
        self.every, self.stop_flag = every, threading.Event()
        self.peak_pss = self.peak_rss = self.peak_procs = 0

    def sample(self) -> None:
        pids = _tree(os.getpid())
        totals = [_memory(p) for p in pids]
        self.peak_pss = max(self.peak_pss, sum(t[0] for t in totals))
        self.peak_rss = max(self.peak_rss, sum(t[1] for t in totals))
        self.peak_procs = max(self.peak_procs, len(pids))

    def run(self) -> None:
        while not self.stop_flag.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self.stop_flag.set()
        self.join()
        self.sample()


class TimedExecutor:
    """The executor, with the wall time of every notebook run recorded (a submission that passes
    anything is run three times: its own inputs and two variants, in one session when the
    executor has them)."""

    def __init__(self, inner, runs=None):
        self.inner, self.name = inner, getattr(inner, "name", "")
        self.runs = [] if runs is None else runs

    def run(self, job):
        started = time.perf_counter()
        try:
            return self.inner.run(job)
        finally:
            self.runs.append(time.perf_counter() - started)

    def session(self, reuse=None):
        return TimedExecutor(self.inner.session(reuse=reuse), self.runs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.inner.close()

    def __getattr__(self, attr):
        return getattr(self.inner, attr)


def _machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (/proc/stat: all but idle and iowait).

    A student process is reaped by its sandbox's init, which may itself be killed rather than
    reaped, so per-process accounting would miss time; the machine's counter misses nothing, but
    counts whatever else runs on it (the load average is printed for that reason)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class TimedGrader(Grader):
    """A Grader that records the wall time of every grade() call."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.times: dict[Path, float] = {}

    def grade(self, assignment, path, *, student=""):
        started = time.perf_counter()
        try:
            return super().grade(assignment, path, student=student)
        finally:
            self.times[Path(path)] = time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


# -- the run -----------------------------------------------------------------------------------


def bench(
    executor_name: str,
    course: config.Course,
    classes: dict[str, list[tuple[Path, str]]],
    jobs: int,
    sandbox_features=None,
) -> dict:
    executor = executors.make_executor(executor_name) if executor_name != "forking" else _fresh_forking()
    if sandbox_features is not None:
        executor.features = sandbox_features
    course = dataclasses.replace(course, cache_dir=Path(tempfile.mkdtemp(prefix=f"bench-{executor_name}-")))
    try:
        return _bench(executor_name, course, classes, jobs, executor)
    finally:
        shutil.rmtree(course.cache_dir, ignore_errors=True)


def _bench(
    executor_name: str, course: config.Course, classes: dict[str, list[tuple[Path, str]]], jobs: int, executor
) -> dict:
    executor = TimedExecutor(executor)
    grader = TimedGrader(course, executor)
    memory = TreeMemory()
    memory.start()
    cpu_before = _machine_cpu()
    result = {"executor": executor_name, "jobs": jobs, "setup_s": 0.0, "assignments": {}}
    all_times: list[float] = []
    all_runs: list[float] = []
    batch_wall = 0.0
    with_setup = 0.0
    for name, subs in classes.items():
        assignment = course.assignment(name)
        items = [batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p)) for p, _ in subs]
        # The setup is this assignment's: its server started on demand (the forking executor has one
        # per preload set) and its reference runs.
        started = time.perf_counter()
        grader.references.get(assignment)
        setup = time.perf_counter() - started
        result["setup_s"] += setup
        t0 = time.perf_counter()
        executor.runs.clear()
        outcome = batch.grade_all(grader, assignment, items, jobs=jobs)
        runs = list(executor.runs)
        all_runs += runs
        wall = time.perf_counter() - t0
        batch_wall += wall
        with_setup += wall + setup
        times = [grader.times[p] for p, _ in subs]
        all_times += times
        statuses: dict[str, int] = {}
        for card in outcome.cards:
            statuses[card.status] = statuses.get(card.status, 0) + 1
        result["assignments"][name] = {
            "n": len(subs),
            "median_ms": 1000 * statistics.median(times),
            "p95_ms": 1000 * percentile(times, 95),
            "throughput_per_s": len(subs) / wall,
            "total_s": wall,
            "statuses": statuses,
            "setup_s": setup,
            "wall_per_submission_ms": 1000 * wall / len(subs),
            "wall_with_setup_per_submission_ms": 1000 * (wall + setup) / len(subs),
            "runs": len(runs),
            "run_median_ms": 1000 * statistics.median(runs),
            "scores": {p.name: card.score for (p, _), card in zip(subs, outcome.cards, strict=True)},
            "cards": {p.name: comparable(card) for (p, _), card in zip(subs, outcome.cards, strict=True)},
        }
    cpu = _machine_cpu() - cpu_before
    memory.stop()
    close = getattr(executor, "close", None)
    if close is not None:
        close()
    result.update(
        {
            "cpu_s": cpu,
            "cpu_per_submission_ms": 1000 * cpu / len(all_times),
            "wall_per_submission_ms": 1000 * batch_wall / len(all_times),
            "wall_with_setup_s": with_setup,
            "wall_with_setup_per_submission_ms": 1000 * with_setup / len(all_times),
            "n": len(all_times),
            "median_ms": 1000 * statistics.median(all_times),
            "p95_ms": 1000 * percentile(all_times, 95),
            "throughput_per_s": len(all_times) / batch_wall,
            "runs": len(all_runs),
            "run_median_ms": 1000 * statistics.median(all_runs),
            "total_s": batch_wall,
            "peak_pss_mb": memory.peak_pss / 1024,
            "peak_rss_sum_mb": memory.peak_rss / 1024,
            "peak_processes": memory.peak_procs,
        }
    )
    return result


RUN_FIELDS = ("time", "executor", "sandbox", "sandbox_not_enforced")  # how a notebook ran, not what the grader found


def comparable(card) -> dict:
    """A scorecard without what depends on how it ran (time, executor, sandbox), for comparing."""
    data = card.to_dict()
    data["execution"] = {k: v for k, v in data.get("execution", {}).items() if k not in RUN_FIELDS}
    for key in ("submission", "student", "sha256"):  # the file (its cells get new random ids each run)
        data.pop(key, None)
    return data


def _fresh_forking():
    from grader.run.forking import ForkingExecutor

    return ForkingExecutor()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200, help="submissions in total, split between the assignments")
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--executors", default="forking,jupyter")
    ap.add_argument("--assignments", default="attention_numpy,attention_from_scratch")
    ap.add_argument("--slow", type=int, default=2, help="slow submissions per assignment")
    ap.add_argument("--slow-seconds", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument(
        "--minimal-sandbox",
        action="store_true",
        help="diagnostic only: run without the sandbox's namespaces and uid change (own session, "
        "environment and rlimits only), to see what the isolation costs",
    )
    ap.add_argument(
        "--without-variants",
        action="store_true",
        help="grade on the notebooks' own data only (no variant runs), to see what variants cost",
    )
    ap.add_argument("--save-cards", help="write the forking executor's scorecards (without timings) to this file")
    ap.add_argument(
        "--compare-cards",
        help="compare the forking executor's scorecards with a file --save-cards "
        "wrote (the same -n, --seed and --assignments), e.g. before and after a change",
    )
    ap.add_argument("--no-cli", action="store_true", help="skip timing `grader grade one.ipynb` and `grader check`")
    ap.add_argument(
        "--long",
        type=int,
        metavar="N",
        help="instead: one batch of N attention_numpy submissions (forking only), printing the tree's "
        "PSS and the grader's open descriptors as it goes, to see that neither grows",
    )
    args = ap.parse_args(argv)
    if args.long:
        return long_batch(args.long, args.jobs, args.seed)

    course = config.load(ROOT / "config.yaml")
    if args.without_variants:
        course = dataclasses.replace(
            course,
            assignments={
                name: dataclasses.replace(
                    a, variants=dataclasses.replace(a.variants, count=0), config_digest=a.config_digest + "-no-variants"
                )
                for name, a in course.assignments.items()
            },
        )
    names = [a for a in args.assignments.split(",") if a]
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        classes = {}
        for k, name in enumerate(names):
            share = args.n // len(names) + (1 if k < args.n % len(names) else 0)
            classes[name] = generate(course.assignment(name), share, args.slow, args.slow_seconds, Path(tmp), rng)
        print(
            f"{args.n} submissions ({', '.join(f'{len(v)} {k}' for k, v in classes.items())}), "
            f"--jobs {args.jobs}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        results = []
        for executor in [e for e in args.executors.split(",") if e]:
            minimal = None
            if args.minimal_sandbox:
                from grader.run import sandbox

                minimal = sandbox.Features(linux=True, root=os.geteuid() == 0)
                print("\nDIAGNOSTIC RUN: sandbox namespaces and uid change turned off")
            r = bench(executor, course, classes, args.jobs, minimal)
            results.append(r)
            print(f"\n{executor}: setup {r['setup_s']:.1f} s (server start and reference runs, not counted below)")
            print(
                f"  {'assignment':<24}{'n':>6}{'median':>10}{'p95':>10}{'throughput':>13}{'total':>10}"
                f"{'runs':>7}{'per run':>10}  statuses"
            )
            rows = [(a, v) for a, v in r["assignments"].items()] + [("all", r)]
            for a, v in rows:
                statuses = ", ".join(f"{k} {c}" for k, c in sorted(v.get("statuses", {}).items()))
                print(
                    f"  {a:<24}{v['n']:>6}{v['median_ms']:>8.0f}ms{v['p95_ms']:>8.0f}ms"
                    f"{v['throughput_per_s']:>11.1f}/s{v['total_s']:>9.1f}s{v['runs']:>7}"
                    f"{v['run_median_ms']:>8.0f}ms  {statuses}"
                )
            print(
                f"  batch wall time / submissions: {r['wall_per_submission_ms']:.0f} ms; busy CPU time of the "
                f"machine / submissions: {r['cpu_per_submission_ms']:.0f} ms"
            )
            print(
                f"  peak memory of the process tree: {r['peak_pss_mb']:.0f} MB PSS "
                f"({r['peak_rss_sum_mb']:.0f} MB if RSS is summed per process), up to {r['peak_processes']} processes",
                flush=True,
            )
        if len(results) == 2:
            a, b = results
            same = all(a["assignments"][n]["scores"] == b["assignments"][n]["scores"] for n in names)
            differ = [
                f"{n}/{f}"
                for n in names
                for f, card in a["assignments"][n]["cards"].items()
                if card != b["assignments"][n]["cards"].get(f)
            ]
            print(
                f"\n{a['executor']} vs {b['executor']}: median {b['median_ms'] / a['median_ms']:.0f}x faster, "
                f"throughput {a['throughput_per_s'] / b['throughput_per_s']:.0f}x higher, batch wall time with "
                f"setup {b['wall_with_setup_s'] / a['wall_with_setup_s']:.0f}x lower; identical scores on every "
                f"submission: {'yes' if same else 'NO'}; identical scorecards: "
                f"{'yes' if not differ else 'NO, ' + ', '.join(differ[:10])}"
            )
        forking = next((r for r in results if r["executor"] == "forking"), None)
        cards = {n: forking["assignments"][n]["cards"] for n in names} if forking else None
        if cards is not None and args.save_cards:
            Path(args.save_cards).write_text(json.dumps(cards, indent=1, sort_keys=True))
            print(f"scorecards written to {args.save_cards}")
        if cards is not None and args.compare_cards:
            saved = json.loads(Path(args.compare_cards).read_text())
            for by_file in saved.values():
                for card in by_file.values():
                    card.pop("sha256", None)
            differ = [
                f"{n}/{f}"
                for n in names
                for f in set(cards.get(n, {})) | set(saved.get(n, {}))
                if cards.get(n, {}).get(f) != saved.get(n, {}).get(f)
            ]
            total = sum(len(v) for v in cards.values())
            print(
                f"scorecards against {args.compare_cards}: "
                + (
                    "identical on all " + str(total)
                    if not differ
                    else f"{len(differ)} DIFFER: {', '.join(differ[:10])}"
                )
            )
        cli = None if args.no_cli else cli_timings(course)
        if cli is not None:
            print(f"\nthrough the command line (median of {cli['n']}, a new submission each time):")
            print(f"  grader grade one.ipynb -a attention_numpy (reference cached): {cli['grade_one_s']:.2f} s")
            print(f"  grader check one.ipynb (attention_numpy): {cli['check_s']:.2f} s")
        print_targets(results, cli)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def print_targets(results: list[dict], cli: dict | None) -> None:
    """The figures issues 14 and 32 set targets for, each with its target and whether this run met it."""
    by = {r["executor"]: r for r in results}
    rows = []
    forking, jupyter = by.get("forking"), by.get("jupyter")
    if forking is not None:
        for name, target in (("attention_numpy", 30), ("attention_from_scratch", 80)):
            if name in forking["assignments"]:
                got = forking["assignments"][name]["wall_with_setup_per_submission_ms"]
                rows.append(
                    (
                        f"{name}: batch wall time per submission, setup included",
                        f"<= {target} ms",
                        f"{got:.1f} ms",
                        got <= target,
                    )
                )
        rows.append(
            (
                "peak memory of the whole tree",
                "<= 400 MB PSS",
                f"{forking['peak_pss_mb']:.0f} MB",
                forking["peak_pss_mb"] <= 400,
            )
        )
    if forking is not None and jupyter is not None:
        ratio = jupyter["wall_with_setup_s"] / forking["wall_with_setup_s"]
        rows.append(
            (
                "the mixed class: Jupyter's batch wall time / forking's, same run",
                ">= 100x",
                f"{ratio:.0f}x",
                ratio >= 100,
            )
        )
    if cli is not None:
        rows.append(
            (
                "grader grade one.ipynb, reference cached",
                "<= 1.0 s",
                f"{cli['grade_one_s']:.2f} s",
                cli["grade_one_s"] <= 1.0,
            )
        )
        rows.append(("grader check one.ipynb", "<= 0.5 s", f"{cli['check_s']:.2f} s", cli["check_s"] <= 0.5))
    if not rows:
        return
    print(f"\ntargets (issues 14 and 32), load average now {os.getloadavg()[0]:.2f}:")
    for what, target, got, met in rows:
        print(f"  {what:<66}{target:>14}{got:>12}  {'met' if met else 'NOT met'}")


def _grader_command() -> list[str]:
    exe = ROOT / ".venv/bin/grader"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "grader.cli"]


def cli_timings(course: config.Course, n: int = 5) -> dict:
    """Wall time of `grader grade one.ipynb` (what a CI job runs per student; the reference is cached
    by a first, untimed run) and of `grader check one.ipynb`, each on a new correct submission."""
    import subprocess

    assignment = course.assignment("attention_numpy")
    env = {**os.environ, "CI": "1", "PYTHONPATH": str(ROOT)}
    grade_times, check_times = [], []
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        correct = as_handed_in(assignment.solution)
        for i in range(n + 1):
            nb = nbformat.from_dict(json.loads(json.dumps(correct)))
            nb.cells.append(nbformat.v4.new_code_cell(f"# CI submission {i}"))
            path = Path(tmp) / f"ci{i}" / "attention_numpy.ipynb"
            path.parent.mkdir()
            nbformat.write(nb, str(path))
            started = time.perf_counter()
            subprocess.run(
                _grader_command()
                + [
                    "grade",
                    str(path),
                    "-a",
                    "attention_numpy",
                    "--out",
                    str(path.parent / "out"),
                    "--config",
                    str(ROOT / "config.yaml"),
                ],
                env=env,
                cwd=ROOT,
                capture_output=True,
                check=False,
            )
            if i:  # the first run caches the reference
                grade_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run(
                _grader_command()
                + [
                    "check",
                    str(path),
                    "-a",
                    "attention_numpy",
                    "--checks",
                    str(ROOT / "assignments/attention_numpy/public_checks.json"),
                ],
                env=env,
                cwd=ROOT,
                capture_output=True,
                check=False,
            )
            check_times.append(time.perf_counter() - started)
    return {"n": n, "grade_one_s": statistics.median(grade_times), "check_s": statistics.median(check_times[1:])}


def _open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def long_batch(n: int, jobs: int, seed: int) -> int:
    """One batch of n attention_numpy submissions through one grade_all call with a result store,
    as ``grader grade`` makes it, sampled every n/10: the peak PSS of the whole tree, this
    process's own PSS, and the open descriptors of this process and of every forking server."""
    course = config.load(ROOT / "config.yaml")
    course = dataclasses.replace(course, cache_dir=Path(tempfile.mkdtemp(prefix="bench-long-")))
    assignment = course.assignment("attention_numpy")
    executor = _fresh_forking()
    grader = Grader(course, executor)
    with tempfile.TemporaryDirectory(prefix="bench-long-class-") as tmp:
        subs = generate(assignment, n, 0, 0.0, Path(tmp), random.Random(seed))
        items = [batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p)) for p, _ in subs]
        print(f"{n} attention_numpy submissions, --jobs {jobs}, load average {os.getloadavg()[0]:.2f}", flush=True)
        grader.references.get(assignment)
        store = batch.ResultStore(course.cache_dir, assignment, batch.fingerprint(grader, assignment))
        step = max(1, n // 10)
        print(
            f"{'graded':>8}{'wall':>9}{'per sub':>9}{'peak PSS':>10}{'grader PSS':>12}{'fds':>6}{'server fds':>12}"
            f"{'processes':>11}"
        )
        samples: list[tuple[float, int, int, float]] = []
        memory = [TreeMemory()]
        done = [0]
        started = time.perf_counter()

        def sample(_sub: batch.Submission, _card: object) -> None:
            done[0] += 1
            if done[0] % step and done[0] != n:
                return
            memory[0].stop()
            wall = time.perf_counter() - started
            servers = sum(_open_fds(s.pid) for s in executor.servers.values())
            own = _memory(os.getpid())[0] / 1024  # this process alone: the grader's side of the batch
            samples.append((memory[0].peak_pss / 1024, _open_fds(os.getpid()), servers, own))
            print(
                f"{done[0]:>8}{wall:>8.1f}s{1000 * wall / done[0]:>7.1f}ms"
                f"{memory[0].peak_pss / 1024:>8.0f}MB{own:>10.0f}MB{samples[-1][1]:>6}{servers:>12}"
                f"{memory[0].peak_procs:>11}",
                flush=True,
            )
            memory[0] = TreeMemory()
            memory[0].start()

        memory[0].start()
        outcome = batch.grade_all(grader, assignment, items, jobs=jobs, store=store, on_card=sample)
        memory[0].stop()
        assert len(outcome.cards) == n
    executor.close()
    shutil.rmtree(course.cache_dir, ignore_errors=True)
    first, last = samples[0], samples[-1]
    print(
        f"first tenth against last: peak PSS {first[0]:.0f} -> {last[0]:.0f} MB (the grader's own {first[3]:.0f} -> "
        f"{last[3]:.0f} MB), descriptors {first[1]} -> {last[1]} "
        f"(servers {first[2]} -> {last[2]}); load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
