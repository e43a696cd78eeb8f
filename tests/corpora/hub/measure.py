"""Runs every case against the grader under test and prints case / expected / observed / result.

    /work/wt-hub/.venv/bin/python measure.py [--grader CMD] [--only SUBSTR] [-v] [--no-browser] [--no-hub]

Exit status: 0 when every available case passes, 1 otherwise. Every process it starts is in its own
session and killed on exit (normal, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from cases import CASES, Context, NotAvailable  # noqa: E402

BROWSER_CASES = {"C05", "C06", "C07", "C08", "H03", "U14", "U19"}
# cases that start (and stop) their own command or server, in a folder of their own
SELF_CONTAINED = {
    "S05",
    "S06",
    "S07",
    "S08",
    "S09",
    "S12",
    "S13",
    "S14",
    "S15",
    "S16",
    "S17",
    "S18",
    "S19",
    "X02",
    "U12",
    "U13",
    "U17",
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", help="the grader command (default: commands.json's, or $BLIND_HUB_GRADER)")
    ap.add_argument("--only", action="append", default=[], help="run the cases whose id or area contains this")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--no-browser", action="store_true", help="report the Chromium cases as not run")
    ap.add_argument("--no-hub", action="store_true")
    ap.add_argument("--width", type=int, default=70, help="width of the expected column")
    a = ap.parse_args()
    if a.grader:
        os.environ["BLIND_HUB_GRADER"] = a.grader
    t0 = time.monotonic()
    ctx = Context(verbose=a.verbose)
    rows: dict[int, tuple[str, str, str, str, str, float]] = {}
    selected = [
        (i, c)
        for i, c in enumerate(CASES)
        if not a.only or any(o.lower() in (c.id + " " + c.area).lower() for o in a.only)
    ]

    def run(batch: list[tuple[int, object]]) -> None:
        for i, c in batch:
            ts = time.monotonic()
            if a.no_browser and c.id in BROWSER_CASES:
                res, obs = "n/a", "not run (--no-browser)"
            elif a.no_hub and c.needs == "hub":
                res, obs = "n/a", "not run (--no-hub)"
            else:
                try:
                    ok, obs = c.fn(ctx)
                    res = "pass" if ok else "FAIL"
                except NotAvailable as e:
                    res, obs = "n/a", f"not available: {e}"
                except Exception as e:  # noqa: BLE001 - a case that errs fails, with why
                    res, obs = "FAIL", f"error: {type(e).__name__}: {str(e)[:160]}"
                    if a.verbose:
                        traceback.print_exc()
            dt = time.monotonic() - ts
            rows[i] = (c.id, c.area, c.expected, obs, res, dt)
            if a.verbose:
                print(f"  {c.id} {res} {dt:.1f}s {obs}", file=sys.stderr, flush=True)

    try:
        if not a.only:
            ctx.prewarm(hub=not a.no_hub)
        # three lanes: the Hub's cases, the commands that start and stop on their own, the rest
        cli_batch = [(i, c) for i, c in selected if c.id in SELF_CONTAINED]
        hub_batch = [(i, c) for i, c in selected if c.needs == "hub" and c.id not in SELF_CONTAINED]
        rest = [(i, c) for i, c in selected if c.needs != "hub" and c.id not in SELF_CONTAINED]
        lanes = [threading.Thread(target=run, args=(b,), daemon=True) for b in (hub_batch, cli_batch)]
        for th in lanes:
            th.start()
        run(rest)
        for th in lanes:
            th.join(240)
    finally:
        ctx.close()
        harness.kill_all()
    rows_list = [rows[i] for i in sorted(rows)]
    w = a.width
    print(f"{'case':5} {'area':9} {'expected':{w}} {'result':6} observed")
    print("-" * (w + 40))
    for cid, area, exp, obs, res, _dt in rows_list:
        exp_lines = textwrap.wrap(exp, w) or [""]
        obs_lines = textwrap.wrap(obs, 60) or [""]
        for i in range(max(len(exp_lines), len(obs_lines))):
            e = exp_lines[i] if i < len(exp_lines) else ""
            o = obs_lines[i] if i < len(obs_lines) else ""
            if i == 0:
                print(f"{cid:5} {area:9} {e:{w}} {res:6} {o}")
            else:
                print(f"{'':5} {'':9} {e:{w}} {'':6} {o}")
    n_pass = sum(r[4] == "pass" for r in rows_list)
    n_fail = sum(r[4] == "FAIL" for r in rows_list)
    n_na = sum(r[4] == "n/a" for r in rows_list)
    print("-" * (w + 40))
    print(f"total {len(rows_list)}: {n_pass} pass, {n_fail} FAIL, {n_na} not available; {time.monotonic() - t0:.0f} s")
    slow = sorted(rows_list, key=lambda r: -r[5])[:3]
    print("slowest: " + ", ".join(f"{r[0]} {r[5]:.1f}s" for r in slow))
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
