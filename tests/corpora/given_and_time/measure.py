#!/usr/bin/env python3
"""Measure a grader against the given-files-and-time corpus. Decided from truth.json alone.

The course (course.py) is built in a temporary folder with `grader assign`. Each case is graded in
a batch with the honest notebook `zzz_honest` (graded after it; `--jobs 1`, or `--jobs 2` where the
truth says so):

    grader grade SUB/ -a given_data -o OUT --jobs J --formats yaml --force

A case is right when all of these hold:
  score    the case's score equals truth (6/6; 5/6 for a check the grader must stop)
  honest   zzz_honest, graded after the attacker in the same batch, scores 6/6 (its START cell saw
           the given files as shipped, and the reference agreed with it)
  course   solutions/, assignments/ and config.yaml are byte for byte, mode for mode, as before
  clean    the grader exited 0, printed no traceback, and the batch took at most 150 s
  stopped  (timing tricks) the trick's processes, named `zzattack` by the cell and watched from
           outside through /proc every 20 ms, were stopped within cell_timeout + 2 s: of wall time
           for tricks that only sleep or wait on themselves (nothing runnable waits for a CPU), of
           CPU time / 2 for tricks that spin (own time is at least the CPU time its processes
           used over the machine's 2 CPUs, whatever the outside load), of CPU time for
           busy_cpu_work (one process: its own time is its CPU time)

Honest-work cases (kind honest_load) are graded while --load N processes outside the grader spin
(default 6 on this 2-core machine); affinity_busy_cpu while 2 processes outside the grader spin
pinned to CPU 0. Other cases get no load of ours (other users of the machine may add some: the
load average is printed per case).

usage: measure.py [--grader PATH] [--load N] [--only SUBSTR] [--as-user USER] [--keep]
  --as-user USER  run the grader as that ordinary user (runuser; needs root and a grader that user
                  can run, e.g. a virtual environment outside /root)
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import course  # noqa: E402

SLACK = 2  # the window's first read (a second in), sampling, and stopping a tree on a loaded machine
SPIN = "import time\nt = time.time()\nwhile time.time() - t < 3600: pass\n"


def spinners(n, cpu=None):
    procs = []
    for _ in range(n):
        pre = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
        procs.append(subprocess.Popen([sys.executable, "-c", SPIN], preexec_fn=pre))
    return procs


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def as_user(args, cmd):
    return ["runuser", "-u", args.as_user, "--"] + cmd if args.as_user else cmd


def card(out, stem):
    p = out / f"{stem}.yaml"
    return yaml.safe_load(p.read_text()) if p.exists() else None


def evidence(c):
    errs = ((c or {}).get("execution") or {}).get("errors") or []
    return " / ".join(str(e.get("error", ""))[:220] for e in errs)


class Watch:
    """Times the processes named zzattack (the case's own cells set that name) from outside: how
    long the first one (the run's process) lived from the cell on, and the CPU time of all the
    processes that appeared while it lived."""

    def __init__(self):
        self.seen = {}  # pid -> [first, last, cpu ticks]
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            now = time.monotonic()
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    with open(f"/proc/{d}/stat") as fh:
                        st = fh.read()
                except OSError:
                    continue
                if "(zzattack)" not in st:
                    continue
                f = st.rsplit(")", 1)[1].split()
                cpu = int(f[11]) + int(f[12])
                e = self.seen.setdefault(int(d), [now, now, cpu, cpu])  # first, last, cpu then, cpu now
                e[1], e[3] = now, max(e[3], cpu)
            time.sleep(0.02)

    def result(self):
        self.stop.set()
        self.t.join()
        if not self.seen:
            return None
        # the first process named is the run's own process (the cell named it); the episode is its
        # life, and its processes are those that appeared while it lived (a rerun is a new process)
        ev = sorted(self.seen.values(), key=lambda e: (e[0], -e[1]))  # first seen; the longest-lived of those
        start, end = ev[0][0], ev[0][1]
        mine = [e for e in ev if e[0] <= end]
        cpu = sum(e[3] - (e[2] if e is ev[0] else 0) for e in mine)  # a child's count starts at 0
        outlived = max(e[1] for e in mine) - end
        return end - start, cpu / os.sysconf("SC_CLK_TCK"), outlived


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    ap.add_argument("--load", type=int, default=6)
    ap.add_argument("--only", default="")
    ap.add_argument("--as-user", default="")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    truth = json.loads((HERE / "truth.json").read_text())
    cases = truth["cases"]
    work = Path(tempfile.mkdtemp(prefix="given-time-corpus-"))
    os.chmod(work, 0o755)
    root = work / "course"
    root.mkdir()
    if args.as_user:
        subprocess.run(["chown", "-R", args.as_user, str(work)], check=True)
    # the course is made by the grader's own user, as an instructor would
    course.write_course(root, args.grader, wrap=lambda cmd: as_user(args, cmd))
    before = course.tree_digest(root)
    rows = []

    def batch(tag, names, jobs, assignment="given_data"):
        sub, out = work / f"sub-{tag}", work / f"out-{tag}"
        sub.mkdir()
        for n in names:
            shutil.copy(HERE / "notebooks" / f"{n}.ipynb", sub / f"{n}.ipynb")
        if args.as_user:
            subprocess.run(["chown", "-R", args.as_user, str(sub)], check=True)
        cmd = [args.grader, "grade", str(sub), "-a", assignment, "-o", str(out), "--jobs", str(jobs)]
        cmd += ["--formats", "yaml", "--force"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(as_user(args, cmd), cwd=root, capture_output=True, text=True, timeout=600)
            rc, txt = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, txt = "timeout", ""
        return time.monotonic() - t0, rc, txt, out

    try:
        batch("warm", ["zzz_honest"], 1)
        batch("warm-rw", ["zzz_rw_honest"], 1, "given_rewrite")
        for name, t in cases.items():
            if name.startswith("zzz_") or (args.only and args.only not in name):
                continue
            honest = t.get("honest", "zzz_honest")
            load = []
            if t.get("load"):
                load = spinners(t["load"] if t["load"] is not True else args.load)
            if t.get("pin_load_cpu0"):
                load = spinners(2, cpu=0)
            if load:
                time.sleep(1)
            la = open("/proc/loadavg").read().split()[0]
            watch = Watch() if "stop" in t or t["kind"] == "honest_load" else None
            try:
                wall, rc, txt, out = batch(name, [name, honest], t.get("jobs", 1), t.get("assignment", "given_data"))
            finally:
                stop(load)
            timed = watch.result() if watch else None
            c, h = card(out, name), card(out, honest)
            got = c.get("score") if c else None
            hs = h.get("score") if h else None
            after = course.tree_digest(root)
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            clean = rc == 0 and "Traceback" not in txt and wall <= 150
            ok = got == t["score"] and hs == course.FULL and not changed and clean
            limit = truth["course"]["cell_timeout"] + SLACK
            if timed and "stop" in t:
                own = {"wall": timed[0], "cpu1": timed[1]}.get(t["stop"], timed[1] / 2)
                ok = ok and own <= limit
            status = (c or {}).get("status", "no scorecard")
            observed = f"{got}/{course.FULL} ({status}), honest {hs}, course {'changed: ' + ','.join(changed[:3]) if changed else 'same'}"
            observed += f", exit {rc}, {wall:.0f} s, load {la}"
            if timed:
                observed += f"; cell ran {timed[0]:.1f} s wall, {timed[1]:.1f} CPU-s"
                if timed[2] > 0.5:
                    observed += f", its processes outlived it by {timed[2]:.1f} s"
            expected = f"{t['score']}/{course.FULL}, honest {course.FULL}, course same"
            if "stop" in t:
                how = {"wall": "wall", "cpu1": "CPU-s"}.get(t["stop"], "CPU-s/2")
                expected += f"; stopped by {how} <= {truth['course']['cell_timeout'] + SLACK} s"
            ev = evidence(c) if not ok or t["kind"] == "time_trick" else ""
            rows.append((name, t["kind"], expected, observed, ok, ev))
            print(f"  {name}: {'ok' if ok else 'FAIL'} {observed}", file=sys.stderr)
            if changed:  # put the course back, so one case's damage is not blamed on the next
                shutil.rmtree(root)
                root.mkdir()
                if args.as_user:
                    subprocess.run(["chown", args.as_user, str(root)], check=True)
                course.write_course(root, args.grader, wrap=lambda cmd: as_user(args, cmd))
                before = course.tree_digest(root)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work, file=sys.stderr)
    print("| case | kind | expected | observed | ok |\n|---|---|---|---|---|")
    for name, kind, exp, obs, ok, _ in rows:
        print(f"| {name} | {kind} | {exp} | {obs} | {'ok' if ok else 'FAIL'} |")
    right = sum(r[4] for r in rows)
    print(f"\n{right} / {len(rows)} cases right (user {args.as_user or os.getuid()}, load {args.load} for honest_load)")
    by = {}
    for _, kind, _, _, ok, _ in rows:
        a, n = by.get(kind, (0, 0))
        by[kind] = (a + ok, n + 1)
    for k, (a, n) in sorted(by.items()):
        print(f"  {k}: {a} / {n}")
    ev = [(r[0], r[5]) for r in rows if r[5]]
    if ev:
        print("\nevidence (the scorecard's errors: what the notebook saw)")
        for name, e in ev:
            print(f"- {name}: {e}")


if __name__ == "__main__":
    main()
