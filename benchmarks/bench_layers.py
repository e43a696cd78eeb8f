"""What the sandbox's unprivileged layers (Landlock, the seccomp filter, dropping root's
capabilities) cost per run: measured in freshly forked processes, as a student process is made.

Two numbers, each the median (and 90th percentile) of ``-n`` forked children with numpy loaded:

* ``layers``: ``harden`` alone (after no_new_privs), the whole added work of a run;
* ``enter``: the whole of ``sandbox.enter`` up to the moment student code could run, with the
  platform's protections, with and without the unprivileged layers.

    python benchmarks/bench_layers.py -n 60
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy  # noqa: F401 - loaded, as in a warm forking server

from grader.course.model import Limits
from grader.run import sandbox
from grader.run.sandbox.harden import harden
from grader.run.sandbox.linux import PR_SET_NO_NEW_PRIVS, prctl


def in_child(step: Callable[[int], float]) -> float:
    """Fork, run ``step`` in the child (which returns the seconds it measured), and return them."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            os.write(w, json.dumps(step(w)).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return float(json.loads(data))


def layers_only(plan: sandbox.Features, workdir: str, channel: int) -> float:
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    start = time.perf_counter()
    harden(plan, workdir)
    return time.perf_counter() - start


def whole_enter(plan: sandbox.Features, workdir: str, channel: int) -> float:
    limits = dataclasses.asdict(Limits())
    start = time.monotonic()
    sandbox.enter(
        {"limits": limits, "workdir": workdir, "sandbox": plan.to_wire()},  # type: ignore[typeddict-item]
        channel=channel,
    )
    return time.monotonic() - start  # in the student process: the keeper and init wait on it


def summary(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"median {statistics.median(ms):6.2f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:6.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=60)
    args = ap.parse_args(argv)
    found = sandbox.features()
    bare = dataclasses.replace(found, landlock=0, seccomp=False)
    print(f"platform: {', '.join(found.active())}")
    for name, plan, measure in (
        ("layers (harden alone)", found, layers_only),
        ("enter, with the layers", found, whole_enter),
        ("enter, without them", bare, whole_enter),
    ):
        times = []
        for _ in range(args.n):
            workdir = sandbox.prepare_workdir([])
            try:
                times.append(in_child(lambda w, p=plan, d=workdir, m=measure: m(p, d, w)))  # type: ignore[misc]
            finally:
                sandbox.remove_workdir(workdir)
        print(f"{name:24s} {summary(times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
