"""Benchmark: ``grader similarity`` over a class of 200 and of 1,000 notebooks.

    .venv/bin/python benchmarks/bench_similarity.py            # 200 and 1,000
    .venv/bin/python benchmarks/bench_similarity.py -n 5000

Each notebook is an attention_french submission (the largest skeleton of the course: 26 cells)
whose every blank cell is taken from one of the independently written solutions in
tests/similarity_class.py, chosen at random per cell, with its names changed (a random suffix)
and eight lines of the student's own added (random expressions over Q, K, V and the weights, as
checks, prints and experiments), so that no two notebooks are alike; 2% are copies of a
classmate with names and comments changed. The whole command runs as an instructor runs it
(``grader similarity DIR -a NAME --out OUT``), in a fresh process, and the script prints the date,
the machine's cores and load, then per class the wall time, the CPU time of all the command's
processes (less sensitive to other jobs on the machine), the pairs found and where the planted
copies rank.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import similarity_class as sc  # noqa: E402

ASSIGNMENT = "attention_french"
NAMES = ["Q", "K", "V", "attention_weights", "all_outputs", "embeddings"]
METHODS = ["sum()", "mean()", "max()", "abs()", "t()", "exp()", "softmax(dim=-1)", "flatten()", "norm()"]
FUNCTIONS = ["torch.exp", "torch.tanh", "torch.sqrt", "torch.relu", "float", "torch.sigmoid"]


def expression(rng: random.Random, depth: int) -> str:
    """A random expression over the notebook's names: the code a student adds of their own (checks,
    experiments), different in shape from one student to the next."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([rng.choice(NAMES), str(rng.randrange(1, 9)), f"{rng.choice(NAMES)}[{rng.randrange(3)}]"])
    kind = rng.randrange(3)
    if kind == 0:
        return f"({expression(rng, depth - 1)} {rng.choice('+-*')} {expression(rng, depth - 1)})"
    if kind == 1:
        return f"{rng.choice(FUNCTIONS)}({expression(rng, depth - 1)})"
    return f"{expression(rng, depth - 1)}.{rng.choice(METHODS)}"


def own_lines(rng: random.Random) -> str:
    k = rng.randrange(100)
    form = rng.randrange(3)
    if form == 0:
        return f"extra_{k} = {expression(rng, 3)}"
    if form == 1:
        return f"print({expression(rng, 3)})"
    return f"if {expression(rng, 2)}.sum() > {rng.randrange(9)}:\n    print({expression(rng, 2)})"


def student(rng: random.Random, keep: set[str]) -> dict[int, str]:
    styles = list(sc.FRENCH.values())
    fills = {cell: rng.choice(styles)[cell] for cell in styles[0]}
    renamed = sc.rename(fills, keep)
    suffix = f"_{rng.randrange(10**6)}"
    renamed = {c: code.replace("_v2", suffix) for c, code in renamed.items()}
    for _ in range(8):
        cell = rng.choice([c for c in sorted(renamed) if c >= 12])  # after Q, K and V exist
        renamed[cell] = renamed[cell] + "\n" + own_lines(rng)
    return renamed


def write_class(folder: Path, n: int, seed: int = 2026) -> dict[str, str]:
    """Write the class; returns each planted copy's name with the name of the notebook it copies."""
    rng = random.Random(seed)
    keep = sc._checked_names(ASSIGNMENT)
    made: list[tuple[str, dict[int, str]]] = []
    copies: dict[str, str] = {}
    for i in range(n):
        name = f"s{i:05d}"
        if made and rng.random() < 0.02:
            source, original = rng.choice(made)
            fills = sc.recomment(sc.rename(original, keep))
            copies[name] = source
        else:
            fills = student(rng, keep)
            made.append((name, fills))
        (folder / f"{name}.ipynb").write_text(json.dumps(sc.notebook(ASSIGNMENT, fills)), encoding="utf-8")
    return copies


def run(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-similarity-") as tmp:
        folder, out = Path(tmp) / "class", Path(tmp) / "out"
        folder.mkdir()
        copies = write_class(folder, n)
        load = os.getloadavg()[0]
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "grader.cli",
                "similarity",
                str(folder),
                "-a",
                ASSIGNMENT,
                "--out",
                str(out),
                "--config",
                str(ROOT / "config.yaml"),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        wall = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
            raise SystemExit(f"grader similarity failed with status {proc.returncode}")
        data = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
        high = [p for p in data["pairs"] if p["score"] >= data["settings"]["threshold"]]
        groups: dict[str, set[str]] = {}
        for copy, source in copies.items():
            groups.setdefault(source, {source}).add(copy)
        planted = {frozenset((a, b)) for g in groups.values() for a in g for b in g if a < b}
        top = data["pairs"][: len(planted)]
        found = sum(1 for p in top if frozenset((p["a"], p["b"])) in planted)
        others = max((p["score"] for p in data["pairs"] if frozenset((p["a"], p["b"])) not in planted), default=0.0)
        size = (out / "similarity.html").stat().st_size
        print(
            f"{n:>6} notebooks: {wall:6.1f} s wall ({cpu:.1f} s CPU in all processes), {n / wall:6.1f} notebooks/s; "
            f"{len(data['pairs'])} pairs listed, "
            f"{len(high)} at or above {data['settings']['threshold']}; of the {len(planted)} pairs holding the "
            f"same work (planted copies), {found} are among the top {len(planted)} pairs; the highest other pair "
            f"scores {others:.2f}; html {size / 1e6:.1f} MB; load before {load:.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, action="append", help="class sizes (default: 200 and 1000)")
    args = ap.parse_args()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    for n in args.n or [200, 1000]:
        run(n)


if __name__ == "__main__":
    main()
