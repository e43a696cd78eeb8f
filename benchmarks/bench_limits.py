"""Whether the run limits hold under load, measured: a process burst, a disk fill, a huge frame.

Each case grades attention_numpy's correct answers plus one hostile cell (or, for the frame, a
student's value of 20 lists of 100,000 ``None``, a 26 MB frame, beside an honest notebook in a
``--jobs 2`` batch) with the real grader in the setting this script runs in, and prints numbers:

    burst   the most processes and threads the run held at once (each made by a fork or a thread
            start that succeeded, none ended before the count), against ``processes``
    disk    what the notebook wrote before its write failed, where, the error it saw, and the line
            of its scorecard
    frame   the batch's wall time, the huge notebook's time, and what its scorecard says
    forged  the same 26 MB frame written on the channel by a cell itself: the grading time and reason
    reader  the grader's own cost of that frame: from its first byte to its refusal (ms)

``--load N`` starts N busy loops (as ``stress --cpu N`` would) for the whole measurement, so the
load average is high; the date, the load average before and after, and the sandbox in force are
printed with the numbers. Numbers, not assertions: the tests check outcomes, this checks speed.

``--setting`` runs the same in one of the settings of tests/test_settings.py instead (as root on
the development machine): ``docker`` (Docker's default capabilities), ``docker-seccomp`` (and its
seccomp profile), ``user`` (an ordinary user with user namespaces), ``user-no-userns`` (without,
as on a GitHub Actions runner); with Debian's python3.11 in a virtual environment other users
can run, as there.

    .venv/bin/python benchmarks/bench_limits.py --load 4
    .venv/bin/python benchmarks/bench_limits.py --cases frame --repeat 3
    .venv/bin/python benchmarks/bench_limits.py --setting user-no-userns --cases burst disk
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from grader import batch  # noqa: E402
from grader.course import config  # noqa: E402
from grader.judge.grading import Grader  # noqa: E402
from grader.run import sandbox  # noqa: E402
from grader.testing import burst_cell, fill, write  # noqa: E402

NUMPY_CORRECT = {
    "Q": "X @ W_q.T",
    "K": "X @ W_k.T",
    "V": "X @ W_v.T",
    "scores": "Q @ K.T",
    "scaled_scores": "scores / np.sqrt(d_k)",
    "?1": "e_x = np.exp(x - np.max(x))\nreturn e_x / np.sum(e_x, axis=-1, keepdims=True)",
    "attention_weights": "np.apply_along_axis(softmax, axis=1, arr=scaled_scores)",
    "output": "attention_weights @ V",
}

BURST = burst_cell(forks=400, threads_each=50, hold=4, settle=1.5) + (
    "raise RuntimeError('probe ' + json.dumps({'held': held, 'processes': processes}))\n"
)

# Write 1 MB blocks until a write fails, in the working directory, then /tmp, then /dev/shm.
DISK = """
import os, json
found = {}
block = b'x' * 2**20
for place in ('.', '/tmp', '/dev/shm'):
    written, error = 0, 'none'
    try:
        for i in range(100000):
            with open(os.path.join(place, f'fill{i}.bin'), 'wb') as f:
                for _ in range(8):
                    f.write(block)
                    written += 1
    except OSError as e:
        error = f'{type(e).__name__}: [Errno {e.errno}] {e.strerror}'
    found[place] = [written, error]
raise RuntimeError('probe ' + json.dumps(found))
"""

HUGE = "[[None] * 100_000 for _ in range(20)]"
# The frame the worker used to send for HUGE (26 MB), written on the channel by the cell itself.
FORGED = """
import os, struct, json, time
value = {'t': 'list', 'items': [{'t': 'list', 'items': [{'t': 'none'}] * 100_000}] * 20}
body = json.dumps({'ev': 'capture', 'id': 'x', 'value': value}, separators=(',', ':')).encode()
frame = struct.pack('>I', len(body)) + body
for fd in map(int, os.listdir('/proc/self/fd')):
    try:
        if fd > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):
            os.write(fd, frame)
    except OSError:
        pass
time.sleep(0.5)
"""


def busy() -> None:  # pragma: no cover - a load generator
    while True:
        pass


def probe(card) -> dict:
    for e in card.execution.to_dict()["errors"]:
        if e["error"].startswith("RuntimeError: probe "):
            return json.loads(e["error"][len("RuntimeError: probe ") :])
    return {"errors": card.execution.to_dict()["errors"], "reason": card.reason}


def case_burst(grader, assignment, folder: Path) -> dict:
    path = write(fill(assignment.skeleton, NUMPY_CORRECT, append=[BURST]), folder / "burst.ipynb")
    card = grader.grade(assignment, path)
    found = probe(card)
    return {"processes limit": assignment.limits.processes, **found, "status": card.status}


def case_disk(grader, assignment, folder: Path) -> dict:
    path = write(fill(assignment.skeleton, NUMPY_CORRECT, append=[DISK]), folder / "disk.ipynb")
    card = grader.grade(assignment, path)
    run = card.execution.to_dict()
    return {
        "disk_mb": assignment.limits.disk_mb,
        "written (MB, error) by place": probe(card),
        "status": card.status,
        "errors": [e["error"] for e in run["errors"] if not e["error"].startswith("RuntimeError: probe")],
        "notes": run.get("notes", []),
    }


def case_frame(grader, assignment, folder: Path) -> dict:
    answers = dict(NUMPY_CORRECT, Q=HUGE)
    write(fill(assignment.skeleton, answers), folder / "class" / "huge.ipynb")
    write(fill(assignment.skeleton, NUMPY_CORRECT), folder / "class" / "control.ipynb")
    started = time.monotonic()
    with batch.intake([folder / "class"], assignment) as found:
        times: dict[str, float] = {}

        def on_card(sub, card) -> None:
            times[card.student] = time.monotonic() - started

        cards = {
            c.student: c for c in batch.grade_all(grader, assignment, found.submissions, jobs=2, on_card=on_card).cards
        }
    total = time.monotonic() - started
    huge = cards["huge"]
    q = next(q for q in huge.questions if q.id == "qkv")
    return {
        "batch s": round(total, 2),
        "huge done at s": round(times.get("huge", float("nan")), 2),
        "control done at s": round(times.get("control", float("nan")), 2),
        "huge status": huge.status,
        "huge reason": huge.reason,
        "qkv": [q.status, *q.lines[:2]],
    }


def case_forged(grader, assignment, folder: Path) -> dict:
    path = write(fill(assignment.skeleton, NUMPY_CORRECT, append=[FORGED]), folder / "forged.ipynb")
    started = time.monotonic()
    card = grader.grade(assignment, path)
    return {"graded in s": round(time.monotonic() - started, 2), "status": card.status, "reason": card.reason}


def case_reader(grader, assignment, folder: Path) -> dict:
    """The grader's own cost of the 26 MB frame: from its first byte to its refusal, in this process."""
    import threading

    from grader.errors import ProtocolError
    from grader.run.frames import FrameReader

    value = {"t": "list", "items": [{"t": "list", "items": [{"t": "none"}] * 100_000}] * 20}
    body = json.dumps({"ev": "capture", "id": "x", "value": value}, separators=(",", ":")).encode()
    frame = len(body).to_bytes(4, "big") + body
    r, w = os.pipe()

    def send() -> None:
        try:
            os.write(w, frame)
        except OSError:
            pass
        finally:
            os.close(w)

    writer = threading.Thread(target=send)
    started = time.perf_counter()
    writer.start()
    reader = FrameReader(r, max_frame=assignment.limits.capture_mb * 2 * 1024 * 1024 + (1 << 20))
    try:
        reader.next(time.monotonic() + 60)
        outcome = "accepted"
    except ProtocolError as exc:
        outcome = str(exc)
    took = time.perf_counter() - started
    os.close(r)
    writer.join()
    return {"frame MB": round(len(frame) / 1e6, 1), "refused after ms": round(took * 1000, 1), "outcome": outcome}


CASES = {
    "burst": case_burst,
    "disk": case_disk,
    "frame": case_frame,
    "forged": case_forged,
    "reader": case_reader,
}


def in_setting(name: str, argv: list[str]) -> int:
    """Run this script with ``argv`` in that setting of tests/test_settings.py."""
    import shutil
    import subprocess

    import readable
    import test_settings as rows

    place = Path(tempfile.mkdtemp(prefix="bench-limits-", dir="/var/tmp"))
    place.chmod(0o755)
    try:
        root = readable.checkout(place)
        packages = str(readable.site_packages(place))
        venv = place / "python"
        subprocess.run([rows.DEBIAN_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
        own = subprocess.run(
            [str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        Path(own, "grader-packages.pth").write_text(f"import site; site.addsitedir({packages!r})\n")
        python = venv / "bin/python"
        if name.startswith("docker"):
            prefix, env = rows.docker_prefix(python, root, name == "docker-seccomp"), rows.row_env(place, root, name)
        else:
            who = rows.user(rows.STUDENT_USERS[0] if name == "user" else rows.STUDENT_USERS[1])
            prefix, env = rows.user_prefix(python, who, name == "user"), rows.row_env(place, root, name, who.pw_uid)
        cmd = [*prefix, str(python), str(root / "benchmarks/bench_limits.py"), *argv]
        return subprocess.run(cmd, cwd=root, env=env, check=False).returncode
    finally:
        shutil.rmtree(place, ignore_errors=True)


def main() -> None:
    if "--setting" in sys.argv:
        at = sys.argv.index("--setting")
        sys.exit(in_setting(sys.argv[at + 1], sys.argv[1:at] + sys.argv[at + 2 :]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--load", type=int, default=0, help="busy loops to run beside (load generator)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--disk-mb", type=int, default=64)
    args = parser.parse_args()

    loops = [multiprocessing.Process(target=busy, daemon=True) for _ in range(args.load)]
    for p in loops:
        p.start()
    try:
        if args.load:
            time.sleep(20)  # the 1-minute load average follows slowly
        course = config.load(ROOT / "config.yaml")
        with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
            course = dataclasses.replace(course, cache_dir=Path(tmp) / "cache")
            a = course.assignment("attention_numpy")
            a = dataclasses.replace(
                a,
                limits=dataclasses.replace(
                    a.limits, processes=args.processes, disk_mb=args.disk_mb, file_size_mb=8, cell_timeout=30.0
                ),
            )
            grader = Grader(course)
            print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  uid: {os.getuid()}  python: {sys.executable}")
            print(f"sandbox: {', '.join(sandbox.features().active())}")
            for line in sandbox.header():
                print(line)
            for name in args.cases:
                for i in range(args.repeat):
                    load = os.getloadavg()[0]
                    folder = Path(tmp) / f"{name}-{i}"
                    started = time.monotonic()
                    result = CASES[name](grader, a, folder)
                    took = time.monotonic() - started
                    print(
                        f"{name} #{i + 1}: load {load:.1f} -> {os.getloadavg()[0]:.1f}, {took:.1f} s: "
                        + json.dumps(result)
                    )
    finally:
        for p in loops:
            p.kill()


if __name__ == "__main__":
    main()
