#!/usr/bin/env python3
"""Build the limits corpus: notebooks/*.ipynb and truth.json.

Every notebook is the correct attention_numpy submission (examples/attention_numpy/bob_correct.ipynb,
copied here as base.ipynb so the corpus stands alone) with attack cells appended after the last
answer. The attacks that can observe their own effect (process bursts, disk fills) end with a
*verdict cell* that turns what the student's code saw into the score:

    output = output if VERDICT else output * 0

so the notebook scores 11/11 only when the attack ran to its end and saw what the promise says it
must see (peak of its own processes and threads <= processes; an OSError ENOSPC/EFBIG/EDQUOT, with
no more than disk_mb written to each place). A run that was killed instead never defines the
verdict's variable, and the verdict cell sets output to zero too (9/11): the student's code saw
nothing. The scorecard says which happened.

usage: build.py   (rewrites notebooks/ and truth.json beside it)
"""

import copy
import json
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
BASE = nbformat.read(HERE / "base.ipynb", as_version=4)
PROCESSES = 64  # config.yaml: course.defaults.limits.processes
DISK_MB = 256  # docs/config.md: limits.disk_mb (default), each of cwd, /tmp, /dev/shm
FILE_MB = 64  # limits.file_size_mb

VERDICT = """# verdict: what the code above saw (a killed cell never set limit_ok: NameError, so False)
try:
    _ok = bool(limit_ok)
except NameError:
    _ok = False
output = output if _ok else output * 0
"""

COUNT_TASKS = """import os
def _tasks():
    return len(os.listdir('/proc/self/task'))
"""

PROC = {
    "fork_loop": """import os, time
r, w = os.pipe()
kids, errors = [], []
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:          # BlockingIOError (EAGAIN) at the process limit
        errors.append(e.errno); break
    if pid == 0:
        os.close(w); os.read(r, 1); os._exit(0)   # every child stays alive until the parent lets go
    kids.append(pid)
peak = _tasks() + len(kids)
os.close(w)
for pid in kids:
    os.waitpid(pid, 0)
limit_ok = peak <= %d and bool(errors)
""",
    "fork_bomb_tree": """import os, time
cnt_r, cnt_w = os.pipe()
os.set_blocking(cnt_r, False)
root = os.getpid()
errors = 0
for depth in range(9):            # every process forks once per level: up to 512 processes
    try:
        pid = os.fork()
    except OSError:
        errors += 1; continue
    if pid == 0:
        os.write(cnt_w, b'x')     # one byte per process that came to life
started = time.time()
if os.getpid() != root:
    time.sleep(max(0.0, 3.0 - (time.time() - started)))
    os._exit(0)
time.sleep(1.5)                   # all alive now: children sleep 3 s
n = 0
try:
    while True:
        b = os.read(cnt_r, 4096)
        if not b: break
        n += len(b)
except BlockingIOError:
    pass
peak = _tasks() + n
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
time.sleep(2)
limit_ok = peak <= %d
""",
    "thread_burst": """import threading
stop = threading.Event()
threads, err = [], None
peak = 0
for i in range(500):
    t = threading.Thread(target=stop.wait)
    try:
        t.start()
    except RuntimeError as e:     # "can't start new thread" at the limit
        err = e; break
    threads.append(t)
    peak = max(peak, _tasks())
stop.set()
for t in threads:
    t.join()
limit_ok = peak <= %d and err is not None
""",
    "multiprocessing_burst": """import multiprocessing as mp, os
ctx = mp.get_context('fork')
ev = ctx.Event()
procs, err = [], None
for i in range(150):
    p = ctx.Process(target=ev.wait, args=(10,))
    try:
        p.start()
    except OSError as e:
        err = e; break
    procs.append(p)
peak = _tasks() + len([p for p in procs if p.is_alive()])
ev.set()
for p in procs:
    p.join(15)
limit_ok = peak <= %d and err is not None
""",
    "subprocess_loop": """import subprocess
procs, err = [], None
for i in range(150):
    try:
        procs.append(subprocess.Popen(['sleep', '3']))
    except OSError as e:
        err = e; break
peak = _tasks() + sum(p.poll() is None for p in procs)
for p in procs:
    p.wait()
limit_ok = peak <= %d and err is not None
""",
    "fork_and_threads": """import os, threading, time
cnt_r, cnt_w = os.pipe()
kids, errors = [], 0
for i in range(40):
    try:
        pid = os.fork()
    except OSError:
        errors += 1; break
    if pid == 0:
        ev = threading.Event(); n = 0
        for j in range(10):
            try:
                threading.Thread(target=ev.wait, args=(4,), daemon=True).start(); n += 1
            except RuntimeError:
                break
        os.write(cnt_w, bytes([n + 1]))   # this child's own tasks: itself and its threads
        time.sleep(4); os._exit(0)
    kids.append(pid)
time.sleep(2)
os.close(cnt_w)
total = sum(os.read(cnt_r, 4096))
peak = _tasks() + total
for pid in kids:
    os.waitpid(pid, 0)
limit_ok = peak <= %d
""",
}

DISK_FILL = """import os, errno
def fill(place, chunk_mb, files, name):
    os.makedirs(place, exist_ok=True)
    written, err = 0, None
    buf = b'\\0' * (1 << 20)
    try:
        for k in range(files):
            with open(os.path.join(place, name + str(k)), 'wb') as f:
                for _ in range(chunk_mb):
                    f.write(buf); f.flush(); written += len(buf)
    except OSError as e:
        err = e.errno
    return written, err
"""

DISK = {
    "fill_cwd": (
        "one place: the working directory, 16 MB files until it is full (256 MB = 16 files)",
        DISK_FILL + "results = [fill('.', 16, 40, 'fill')]\n",
    ),
    "fill_tmp": ("/tmp, 16 MB files", DISK_FILL + "results = [fill('/tmp', 16, 40, 'fill')]\n"),
    "fill_dev_shm": ("/dev/shm, 16 MB files", DISK_FILL + "results = [fill('/dev/shm', 16, 40, 'fill')]\n"),
    "fill_all_three": (
        "the working directory, then /tmp, then /dev/shm, each until full",
        DISK_FILL + "results = [fill(p, 16, 40, 'fill') for p in ('.', '/tmp', '/dev/shm')]\n",
    ),
    "one_big_file": (
        "one 300 MB file in one write() call (file_size_mb is 64)",
        """import os
results = []
try:
    with open('big.bin', 'wb') as f:
        f.write(b'\\0' * (300 << 20))
    results.append((os.path.getsize('big.bin'), None))
except OSError as e:
    results.append((os.path.getsize('big.bin') if os.path.exists('big.bin') else 0, e.errno))
""",
    ),
    "many_small_files": (
        "100,000 files of 4 KB (400 MB) in a folder of the working directory",
        """import os
os.makedirs('many', exist_ok=True)
written, err = 0, None
try:
    for k in range(100000):
        with open('many/f%d' % k, 'wb') as f:
            f.write(b'x' * 4096)
        written += 4096
except OSError as e:
    err = e.errno
results = [(written, err)]
""",
    ),
}
DISK_VERDICT = (
    "import errno\nlimit_ok = all(e in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) and "
    "w <= (%d + 1) * (1 << 20) for w, e in results)\n" % DISK_MB
)

HUGE = {
    "nones_20x100k": ("20 lists of 100,000 None (the 26 MB frame of issue 46)", "[[None] * 100000 for _ in range(20)]"),
    "nested_deep": (
        "a list nested 100,000 deep",
        "__import__('functools').reduce(lambda a, _: [a], range(100000), [])",
    ),
    "string_500mb": ("a str of 500 MB", "'a' * (500 << 20)"),
    "dict_10m": ("a dict with 10 million int keys", "dict.fromkeys(range(10_000_000), 0)"),
    "object_array_lists": (
        "a numpy object array of 100,000 lists of 10 floats",
        "np.array([[0.5] * 10 for _ in range(100000)] + [[0.5]], dtype=object)",
    ),
}


def nb_with(cells):
    nb = copy.deepcopy(BASE)
    for src in cells:
        nb.cells.append(nbformat.v4.new_code_cell(src))
    for c in nb.cells:
        c.pop("id", None)
    nb.nbformat_minor = 4
    return nb


def main():
    out = HERE / "notebooks"
    out.mkdir(exist_ok=True)
    for p in out.glob("*.ipynb"):
        p.unlink()
    truth = {
        "assignment": "attention_numpy",
        "max_score": 11,
        "limits": {"processes": PROCESSES, "disk_mb": DISK_MB, "file_size_mb": FILE_MB},
        "cases": {},
    }

    def add(name, kind, nb, what, **t):
        nbformat.write(nb, out / f"{name}.ipynb")
        truth["cases"][name] = {"kind": kind, "what": what, **t}

    for name, src in PROC.items():
        add(
            name,
            "processes",
            nb_with([COUNT_TASKS, src % PROCESSES, VERDICT]),
            f"process/thread burst: {name.replace('_', ' ')}",
            score=11,
            why_score=(
                "11/11 iff the burst ran to its end and the most processes+threads its "
                f"own code counted alive at once was <= processes ({PROCESSES}); a kill or an "
                "overrun leaves output zeroed (9/11)"
            ),
            control_score=11,
            batch_seconds=90,
        )
    for name, (what, src) in DISK.items():
        add(
            name,
            "disk",
            nb_with([src, DISK_VERDICT, VERDICT]),
            what,
            score=11,
            why_score=(
                "11/11 iff every fill ended in an OSError the code caught with errno ENOSPC, "
                f"EFBIG or EDQUOT, having written at most disk_mb ({DISK_MB} MB) + 1 MB in "
                "that place"
            ),
            scorecard_says_disk=True,
            control_score=11,
            batch_seconds=90,
        )
    for name, (what, expr) in HUGE.items():
        add(
            name,
            "huge_value",
            nb_with([f"output = {expr}"]),
            f"value of `output`: {what}",
            score=9,
            why_score="every answer right except output (2 points), whose final value is the huge one",
            control_score=11,
            max_extra_seconds=2.0,
            why_time=(
                "issue 46: the frame is refused within a second; measured as the wall time of "
                "[case + control] minus that of [twin + control], where the twin builds the same value "
                "under a name no check reads (so the student's own compute cancels), allowing 2 s"
            ),
        )
        add(
            name + "__twin",
            "twin",
            nb_with([f"_junk = {expr}\ndel _junk"]),
            f"twin of {name}: the same value built, bound to no answer",
            score=11,
            control_score=11,
        )
    # honest controls
    add("control_plain", "control", nb_with([]), "the correct notebook as handed in", score=11)
    add(
        "control_modest",
        "control",
        nb_with(
            [
                """import os, threading, multiprocessing as mp
ts = [threading.Thread(target=lambda: sum(range(1000))) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
with mp.get_context('fork').Pool(2) as pool:
    squares = pool.map(abs, [-1, -2, -3])
with open('notes.txt', 'w') as f:
    f.write('x' * (1 << 20))
with open('/tmp/scratch.bin', 'wb') as f:
    f.write(b'\\0' * (8 << 20))
os.remove('/tmp/scratch.bin')
"""
            ]
        ),
        "a correct notebook that uses 4 threads, a pool of 2 processes, writes 1 MB and 8 MB: within every limit",
        score=11,
    )
    (HERE / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(len(truth["cases"]), "cases")


if __name__ == "__main__":
    main()
