#!/usr/bin/env python3
"""Build the given-files-and-time corpus: notebooks/*.ipynb and truth.json.

Every notebook is a correct submission of the corpus's own assignment `given_data` (course.py)
with cells added:

  first   START: hashes data/table.txt and data/big.bin (whose bytes every student has), checks
          each is a regular file the run may read (table.txt: and write), and looks for anything
          named zz_* (what the attacks create) in the working directory, data/, /tmp and /dev/shm.
          `_start_bad` lists what is wrong when the run starts.
  ...     the answers (course.ANSWER_CELLS)
  then    the case's cells (an attack on a given file, a timing trick, or honest work)
  last    VERDICT: output = output if _ok else output * 0  (output is worth 2 of the 6 points)

Each submission is run at least three times (its own data, then two variants of x, docs/grading.md
and README.md); the variant runs are checked on `y` and `output`. A given-file attack runs in every
run, so the second run starts after the first run's attack: if its copy was not put back, START
sees it and the variant runs lose `output` (and `y`, which is computed from the table). So
**6/6 means every run began with the given files as shipped and saw what the promise says**.

Timing tricks set `violated = True` when they reach their end: a target of own time the run could
only reach with at least 2 x cell_timeout (6 s) of its own time. A cell the grader stops never sets
it (the notebook runs again without that cell), so the verdict holds. Honest work sets `done = True`
and scores 6 only when it was not cut off.

usage: build.py   (rewrites notebooks/ and truth.json beside it)
"""

import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import course  # noqa: E402
import nbformat  # noqa: E402

T = course.CELL_TIMEOUT

START = f"""import hashlib, os, stat
_EXPECT = {course.SHA!r}
def _state():
    bad = []
    for p, h in _EXPECT.items():
        try:
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode):
                bad.append(p + ' is not a regular file: ' + oct(st.st_mode)); continue
            if st.st_size != {{'data/table.txt': {len(course.TABLE)}, 'data/big.bin': {len(course.BIG)}}}[p]:
                bad.append(p + ' size ' + str(st.st_size)); continue
            with open(p, 'rb') as fh:
                d = fh.read()
            if hashlib.sha256(d).hexdigest() != h:
                bad.append(p + ' content changed: ' + repr(d[:20]))
            if p.endswith('table.txt') and not os.access(p, os.R_OK | os.W_OK):
                bad.append(p + ' not readable and writable: ' + oct(st.st_mode))
        except OSError as e:
            bad.append(p + ': ' + repr(e))
    for top in ('.', '/tmp', '/dev/shm'):
        try:
            for root, dirs, files in os.walk(top):
                for n in dirs + files:
                    if n.startswith('zz_'):
                        bad.append(os.path.join(root, n) + ' left from an earlier run')
        except OSError as e:
            bad.append(top + ': ' + repr(e))
    return bad
_start_bad = _state()
"""

VERDICT_GIVEN = """# verdict: every run started with the given files as shipped, and the attack saw what it must
try:
    _ok = bool(limit_ok)
except NameError:
    _ok = False
_ok = _ok and not _start_bad
output = output if _ok else output * 0
"""

VERDICT_TRICK = """# verdict: a trick that reached its end got more than the cell's limit of its own time
try:
    _ok = not violated
except NameError:        # the grader stopped the cell: the notebook ran again without it
    _ok = True
_ok = _ok and not _start_bad
output = output if _ok else output * 0
"""

VERDICT_HONEST = """# verdict: honest work under load must reach its end
try:
    _ok = bool(done)
except NameError:        # the grader cut it off
    _ok = False
_ok = _ok and not _start_bad
output = output if _ok else output * 0
"""

# evidence for the report: the scorecard's `errors` keeps the first ~500 characters of an
# exception; raised only when something went wrong, after the verdict, so it changes no answer
EVIDENCE = """_ev = []
if _start_bad: _ev.append('start: ' + '; '.join(_start_bad))
for _n in ('violated', 'limit_ok', 'done', 'evidence'):
    if _n in globals(): _ev.append(_n + '=' + repr(globals()[_n])[:150])
if _start_bad or globals().get('violated') or globals().get('limit_ok') is False:
    raise RuntimeError(' | '.join(_ev))
"""

P = "'data/table.txt'"
BAD = b"100.0\n"

GIVEN = {
    "overwrite": (
        "overwrite the given table with other numbers (the copy must be writable: the write and read-back succeed)",
        f"""p = {P}
with open(p, 'wb') as fh:
    fh.write({BAD!r})
limit_ok = open(p, 'rb').read() == {BAD!r}
""",
    ),
    "truncate": ("truncate the given table to 0 bytes", f"os.truncate({P}, 0)\nlimit_ok = True\n"),
    "append": (
        "append a number to the given table",
        f"with open({P}, 'ab') as fh:\n    fh.write(b'1000.0\\n')\nlimit_ok = True\n",
    ),
    "symlink_etc": (
        "replace the given table by a symlink to /etc/hostname",
        f"os.remove({P})\nos.symlink('/etc/hostname', {P})\nlimit_ok = True\n",
    ),
    "symlink_to_original": (
        "replace the given table by a symlink to its read-only original under /.grader-given, so a "
        "restore that writes through the link meets a read-only file",
        f"""import glob
orig = (glob.glob('/.grader-given/**/table.txt', recursive=True) or ['/.grader-given/data/table.txt'])[0]
os.remove({P})
os.symlink(orig, {P})
evidence = orig
limit_ok = True
""",
    ),
    "symlink_into_tmp": (
        "replace the given table by a symlink to /dev/shm/zz_table (bad numbers), removed later",
        f"""with open('/dev/shm/zz_table', 'wb') as fh:
    fh.write({BAD!r})
os.remove({P})
os.symlink('/dev/shm/zz_table', {P})
limit_ok = True
""",
    ),
    "chmod_file_000": ("chmod 000 the given table", f"os.chmod({P}, 0)\nlimit_ok = True\n"),
    "chmod_file_444": (
        "chmod 444 the given table (the next run could no longer write its copy)",
        f"os.chmod({P}, 0o444)\nlimit_ok = True\n",
    ),
    "chmod_dir_000": ("chmod 000 the data/ folder", "os.chmod('data', 0)\nlimit_ok = True\n"),
    "rename": (
        "rename the given table to data/zz_moved.txt",
        f"os.rename({P}, 'data/zz_moved.txt')\nlimit_ok = True\n",
    ),
    "delete": ("delete the given table", f"os.remove({P})\nlimit_ok = True\n"),
    "hardlink_write": (
        "hard-link the given table as data/zz_alias and write bad numbers through the alias",
        f"""os.link({P}, 'data/zz_alias')
with open('data/zz_alias', 'r+b') as fh:
    fh.write({BAD!r}); fh.truncate()
limit_ok = True
""",
    ),
    "huge_sparse": (
        "make the given table a sparse file of 15.9 MB (within the 16 MB a file may hold here, and "
        "near the working directory's 16 MB)",
        f"os.truncate({P}, (16 << 20) - 65536)\nevidence = os.path.getsize({P})\nlimit_ok = True\n",
    ),
    "huge_filled": (
        "append to the given table until the working directory is full (ENOSPC/EFBIG)",
        f"""import errno
err = None
with open({P}, 'ab') as fh:
    try:
        for _ in range(64):
            fh.write(b'7' * (1 << 20)); fh.flush()
    except OSError as e:
        err = e.errno
evidence = (err, os.path.getsize({P}))
limit_ok = True
""",
    ),
    "dir_in_place": (
        "a directory where the given table was, holding a file",
        f"""os.remove({P})
os.mkdir({P})
open({P} + '/zz_inner', 'wb').write({BAD!r})
limit_ok = True
""",
    ),
    "fifo_in_place": (
        "a FIFO where the given table was (a restore that opens it for writing would block)",
        f"os.remove({P})\nos.mkfifo({P})\nlimit_ok = True\n",
    ),
    "same_size_same_mtime": (
        "overwrite the given table in place with other numbers of the same length, then set its "
        "atime and mtime back (a restore that skips files whose size and mtime match would keep it)",
        f"""st = os.stat({P})
new = {course.TABLE.replace(b"1.5", b"9.5").replace(b"2.5", b"8.5")!r}
assert len(new) == st.st_size
with open({P}, 'r+b') as fh:
    fh.write(new)
os.utime({P}, ns=(st.st_atime_ns, st.st_mtime_ns))
evidence = os.stat({P}).st_mtime_ns == st.st_mtime_ns
limit_ok = True
""",
    ),
    "mmap_write": (
        "change the given table through a shared mmap, mtime set back",
        f"""import mmap
st = os.stat({P})
fd = os.open({P}, os.O_RDWR)
m = mmap.mmap(fd, 0)
m[0:1] = b'9'
m.flush(); m.close(); os.close(fd)
os.utime({P}, ns=(st.st_atime_ns, st.st_mtime_ns))
limit_ok = True
""",
    ),
    "daemon_rewrites": (
        "a double-forked, setsid daemon that keeps an fd on the given table and rewrites it (through "
        "the fd and by path) every 5 ms for 40 s, after the run ends",
        f"""import time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open({P}, os.O_RDWR)
        end = time.time() + 40
        while time.time() < end:
            try:
                os.pwrite(fd, {BAD!r}, 0)
                with open(os.path.abspath({P}), 'wb') as fh:
                    fh.write({BAD!r})
            except OSError:
                pass
            time.sleep(0.005)
        os._exit(0)
    os._exit(0)
os.wait()
time.sleep(0.3)
limit_ok = True
""",
    ),
    "write_originals": (
        "try to change the originals: every file under /.grader-given, data/big.bin and every "
        "bind in /proc/self/mountinfo outside the run's own copies: open r+, truncate, chmod, utime, rename, unlink, "
        "hard link into the working directory then write; every attempt must fail",
        """import glob
targets = set(glob.glob('/.grader-given/**', recursive=True)) | {'data/big.bin'}
for line in open('/proc/self/mountinfo'):
    parts = line.split()
    if len(parts) > 4 and ('table' in parts[3] or 'big.bin' in parts[3] or 'data' in parts[3]):
        targets.add(parts[3]); targets.add(parts[4])
_cwd = os.path.realpath('.')
def _writable_copy(t):           # the run's own copies may be written: only originals are targets
    r = os.path.realpath(t)
    return (r == _cwd or r.startswith(_cwd + '/')) and not r.endswith('/data/big.bin')
targets = sorted(t for t in targets if os.path.isfile(t) and not _writable_copy(t))
won = []
def _try(name, fn):
    try:
        fn(); won.append(name)
    except OSError:
        pass
for t in targets:
    st = os.stat(t)
    _try('open r+ ' + t, lambda: open(t, 'r+b').write(b'9'))
    _try('truncate ' + t, lambda: os.truncate(t, 1))
    _try('chmod ' + t, lambda: os.chmod(t, 0o777))
    _try('utime ' + t, lambda: os.utime(t, (0, 0)))
    _try('link ' + t, lambda: (os.link(t, 'zz_link'), open('zz_link', 'r+b').write(b'9')))
    _try('rename ' + t, lambda: os.rename(t, t + '.zz'))
    _try('unlink ' + t, lambda: os.unlink(t))
evidence = (targets, won)
limit_ok = bool(targets) and not won
""",
    ),
    "big_write": (
        "write into data/big.bin (5 MiB, past a quarter of disk_mb: a read-only bind), chmod and "
        "truncate it; each must fail",
        """won = []
for name, fn in [('write', lambda: open('data/big.bin', 'r+b').write(b'ZZZZ')),
                 ('truncate', lambda: os.truncate('data/big.bin', 10)),
                 ('chmod', lambda: os.chmod('data/big.bin', 0)),
                 ('append', lambda: open('data/big.bin', 'ab').write(b'Z'))]:
    try:
        fn(); won.append(name)
    except OSError:
        pass
evidence = won
limit_ok = not won
""",
    ),
    "big_replace": (
        "replace data/big.bin: unlink or rename it, or move the whole data/ folder away and put a "
        "folder of bad files in its place",
        f"""import shutil
moved = []
for fn in (lambda: os.remove('data/big.bin'), lambda: os.rename('data/big.bin', 'data/zz_big')):
    try:
        fn(); moved.append('file')
    except OSError:
        pass
try:
    os.rename('data', 'zz_data'); moved.append('dir')
except OSError:
    pass
os.makedirs('data', exist_ok=True)
for n, b in (('big.bin', b'Z' * 100), ('table.txt', {BAD!r})):
    try:
        if not os.path.exists('data/' + n) or 'dir' in moved:
            open('data/' + n, 'wb').write(b)
    except OSError:
        pass
evidence = moved
limit_ok = True
""",
    ),
    "data_dir_symlink": (
        "move data/ away and make data a symlink to /dev/shm/zz_d holding bad files",
        f"""os.makedirs('/dev/shm/zz_d', exist_ok=True)
open('/dev/shm/zz_d/table.txt', 'wb').write({BAD!r})
open('/dev/shm/zz_d/big.bin', 'wb').write(b'Z' * 100)
try:
    os.rename('data', 'zz_data')
except OSError as e:
    evidence = repr(e)
if not os.path.exists('data'):
    os.symlink('/dev/shm/zz_d', 'data')
limit_ok = True
""",
    ),
    "new_files_not_given": (
        "write new files of its own (data/zz_new.txt, zz_top.txt, /tmp/zz_t, /dev/shm/zz_s): no later run may see them",
        f"""for p in ('data/zz_new.txt', 'zz_top.txt', '/tmp/zz_t', '/dev/shm/zz_s'):
    open(p, 'wb').write({BAD!r})
os.makedirs('zz_dir/sub', exist_ok=True)
limit_ok = True
""",
    ),
}

# given-file attacks combined with a run that does not end cleanly (the next run is a new sandbox)
GIVEN_END = {
    "damage_then_timeout": (
        "overwrite the given table, then a cell that never ends (the notebook runs again without it)",
        f"open({P}, 'wb').write({BAD!r})\nlimit_ok = True\n",
        "while True:\n    pass\n",
    ),
    "damage_then_crash": (
        "overwrite the given table, then a cell that SIGKILLs its own process",
        f"open({P}, 'wb').write({BAD!r})\nlimit_ok = True\n",
        "import signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    ),
}

TRICK_PRE = """import os, time, signal, threading, resource, ctypes
ctypes.CDLL(None).prctl(15, b'zzattack', 0, 0, 0)   # PR_SET_NAME: measure.py times these from outside
def _kids_cpu(kids):             # CPU seconds of live children, from their /proc/PID/stat
    tot = 0
    for pid in kids:
        try:
            f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
            tot += (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
        except OSError:
            pass
    return tot
def _cpu_self():
    t = os.times(); return t.user + t.system
def _spin_cpu(seconds):          # spin until this process used `seconds` of CPU
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
"""

# every trick, if it reaches its end, had at least 2 x cell_timeout (6 s) of its own time
TRICKS = {
    "busy_cpu_work": (
        "measure.py keeps CPU 0 busy from outside (2 spinners); the cell pins itself to CPU 0 and does "
        "6 s of CPU work there: its waits are for outside work, but its own time is its CPU time",
        "os.sched_setaffinity(0, {0})\n_spin_cpu(6)\nviolated = True\n",
    ),
    "sched_idle_work": (
        "the cell sets SCHED_IDLE on itself, 4 children spin at the normal policy beside it, and it does "
        "6 s of CPU work",
        """kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        while True: pass
    kids.append(pid)
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
_spin_cpu(6)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "plain_loop": (
        "control: `while True: pass` (must be stopped; what a stopped cell scores)",
        "while True:\n    pass\n",
    ),
    "sleep": ("time.sleep(6)", "time.sleep(6)\nviolated = True\n"),
    "procs_spin_work": (
        "8 forked children, each spinning 1.5 s of CPU (12 CPU-s: 6 s on 2 CPUs), each waiting for its siblings",
        """kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        _spin_cpu(1.5); os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
t = os.times()
evidence = round(t.children_user + t.children_system, 1)
violated = True
""",
    ),
    "threads_spin_work": (
        "8 threads hashing (GIL released), each until 1.5 s of its own thread CPU time",
        """import hashlib
buf = b'x' * (8 << 20)
def _work():
    end = time.thread_time() + 1.5
    while time.thread_time() < end:
        hashlib.sha256(buf).digest()
ts = [threading.Thread(target=_work) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
evidence = round(_cpu_self(), 1)
violated = True
""",
    ),
    "procs_spin_parent_sleeps": (
        "8 children spin (each waiting for its siblings) while the cell's own process sleeps until they used 12 CPU-s",
        """kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        while True: pass
    kids.append(pid)
while _kids_cpu(kids) < 12:
    time.sleep(0.1)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "nice_children_parent_sleeps": (
        "8 children at nice 19 spin while the cell's process sleeps until they used 12 CPU-s",
        """kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        os.nice(19)
        while True: pass
    kids.append(pid)
while _kids_cpu(kids) < 12:
    time.sleep(0.1)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "nice_self_work": (
        "the cell nices itself to 19 and 4 children spin at nice 0 beside it while it does 6 s of CPU work",
        """kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        while True: pass
    kids.append(pid)
os.nice(19)
_spin_cpu(6)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "affinity_one_cpu": (
        "the cell pins itself and 8 spinning children to one CPU, then sleeps until they used 12 CPU-s",
        """os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        while True: pass
    kids.append(pid)
while _kids_cpu(kids) < 12:
    time.sleep(0.1)
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "affinity_busy_cpu": (
        "measure.py keeps CPU 0 busy from outside; a child pins itself to CPU 0 and spins there "
        "(waiting for the outside work), while the cell's process sleeps 6 s",
        """pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {0})
    while True: pass
time.sleep(6)
os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
violated = True
""",
    ),
    "sigstop_self": (
        "the cell's process SIGSTOPs itself; a child sends SIGCONT after 6 s",
        """parent = os.getpid()
pid = os.fork()
if pid == 0:
    time.sleep(6); os.kill(parent, signal.SIGCONT); os._exit(0)
t0 = time.monotonic()
os.kill(parent, signal.SIGSTOP)
os.waitpid(pid, 0)
evidence = round(time.monotonic() - t0, 1)
violated = evidence >= 5.5
""",
    ),
    "blocked_pipe_read": (
        "a blocking read on a pipe a child writes to after 6 s",
        """r, w = os.pipe()
pid = os.fork()
if pid == 0:
    time.sleep(6); os.write(w, b'x'); os._exit(0)
os.read(r, 1)
os.waitpid(pid, 0)
violated = True
""",
    ),
    "lock_wait": (
        "wait on a lock a thread holds for 6 s",
        """lk = threading.Lock(); lk.acquire()
threading.Timer(6, lk.release).start()
lk.acquire()
violated = True
""",
    ),
    "itimer_pause": (
        "signal.pause() until a 6 s ITIMER_REAL fires",
        """signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 6)
signal.pause()
violated = True
""",
    ),
    "subprocess_sleep": (
        "subprocess.run(['sleep', '6'])",
        "import subprocess\nsubprocess.run(['sleep', '6'])\nviolated = True\n",
    ),
    "orphan_spinners": (
        "8 double-forked orphans (reparented away from the cell's process) each spin 1.5 s of CPU and "
        "report it on a pipe; the cell's process spins until all 8 reported (12 CPU-s of the run's own)",
        """r, w = os.pipe()
for i in range(8):
    if os.fork() == 0:
        if os.fork() == 0:
            os.close(r); _spin_cpu(1.5); os.write(w, b'x'); os._exit(0)
        os._exit(0)
    os.wait()
os.close(w)
got = 0
os.set_blocking(r, False)
while got < 8:
    try:
        b = os.read(r, 16)
        if not b: break
        got += len(b)
    except BlockingIOError:
        pass
evidence = got
violated = got >= 8
""",
    ),
    "churn_procs": (
        "4 lanes of short-lived children, each spinning 50 ms of CPU and reaped, until 12 CPU-s in all",
        """live = set()
def _t():
    t = os.times(); return t.children_user + t.children_system
while _t() < 12:
    while len(live) < 4:
        pid = os.fork()
        if pid == 0:
            _spin_cpu(0.05); os._exit(0)
        live.add(pid)
    pid, _ = os.wait(); live.discard(pid)
for pid in live:
    os.waitpid(pid, 0)
evidence = round(_t(), 1)
violated = True
""",
    ),
    "zombie_children": (
        "8 children each spin 1.5 s of CPU and exit, left unreaped (zombies) while the cell waits for them all to die",
        """kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        _spin_cpu(1.5); os._exit(0)
    kids.append(pid)
def _zombie(pid):
    try:
        return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True
while not all(_zombie(p) for p in kids):
    time.sleep(0.05)
for pid in kids:
    os.waitpid(pid, 0)
violated = True
""",
    ),
}

# a check's limit: f is called only by the `expr` check (the notebook never calls it)
CHECK_TRICKS = {
    "check_sleep": ("f sleeps 6 s when the check calls it", "time.sleep(6)\n"),
    "check_procs_spin": (
        "f forks 8 children spinning 1.5 s of CPU each and waits for them (12 CPU-s)",
        """kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        _spin_cpu(1.5); os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
""",
    ),
    "check_sigstop": (
        "f SIGSTOPs its process; a child sends SIGCONT after 6 s",
        """parent = os.getpid()
pid = os.fork()
if pid == 0:
    time.sleep(6); os.kill(parent, signal.SIGCONT); os._exit(0)
os.kill(parent, signal.SIGSTOP)
os.waitpid(pid, 0)
""",
    ),
}

# honest work, graded under an outside load (measure.py: spinning processes outside the grader)
HONEST = {
    "honest_cpu_single": ("one process, 1.5 s of CPU", "_spin_cpu(1.5)\ndone = True\n"),
    "honest_cpu_pool": (
        "two forked workers, 1.2 s of CPU each, in parallel",
        """import multiprocessing as mp
with mp.get_context('fork').Pool(2) as pool:
    pool.map(_spin_cpu, [1.2, 1.2])
done = True
""",
    ),
    "honest_cpu_2s": ("one process, 2.0 s of CPU (two thirds of the limit)", "_spin_cpu(2.0)\ndone = True\n"),
    "honest_cpu_2_5s": ("one process, 2.5 s of CPU (own time near the 3 s limit)", "_spin_cpu(2.5)\ndone = True\n"),
    "honest_heavy_load": ("one process, 1.5 s of CPU, under 12 outside spinners", "_spin_cpu(1.5)\ndone = True\n"),
    "honest_sleep_and_cpu": ("time.sleep(0.8) then 1.2 s of CPU", "time.sleep(0.8)\n_spin_cpu(1.2)\ndone = True\n"),
    "honest_cells_in_a_row": (
        "four cells in a row, each 1.5 s of CPU (each within the limit; the notebook well within notebook_timeout)",
        None,
    ),
    "honest_threads_hash": (
        "two threads hashing (GIL released), 1.0 s of thread CPU each",
        """import hashlib
buf = b'x' * (8 << 20)
def _work():
    end = time.thread_time() + 1.0
    while time.thread_time() < end:
        hashlib.sha256(buf).digest()
ts = [threading.Thread(target=_work) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
done = True
""",
    ),
    "honest_check_cpu": ("f does 1.2 s of CPU work when the check calls it, then returns v * 3", None),
}


def answers_with_f(body):
    """The answers, with f replaced by one that runs `body` when the check calls it."""
    cells = list(course.ANSWER_CELLS)
    i = next(k for k, c in enumerate(cells) if c.startswith("def f("))
    body = textwrap.indent(body, " " * 8)
    cells[i] = (
        TRICK_PRE.replace("ctypes.CDLL(None).prctl", "_prctl = lambda: ctypes.CDLL(None).prctl")
        + f"_armed = False\ndef f(v):\n    if _armed:\n        _prctl()\n{body}    return v * 3.0\n_armed = True\n"
    )
    return cells


def main():
    out = HERE / "notebooks"
    out.mkdir(exist_ok=True)
    for p in out.glob("*.ipynb"):
        p.unlink()
    truth = {
        "course": {"cell_timeout": T, "disk_mb": course.DISK_MB, "full": course.FULL},
        "cases": {},
    }

    def add(name, kind, what, cells, score=course.FULL, **extra):
        nbformat.write(course.notebook(cells), out / f"{name}.ipynb")
        truth["cases"][name] = {"kind": kind, "what": what, "score": score, **extra}

    ans = course.ANSWER_CELLS
    add(
        "zzz_honest",
        "control",
        "the correct notebook with START and the verdict",
        [START, *ans, "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
    )
    # the folders' modes: START also asks that the working directory and data/ be writable, as the
    # run's own copies are (a course's cell may write a file there)
    start_dirs = START.replace(
        "    return bad\n",
        "    for d in ('.', 'data'):\n"
        "        if not os.access(d, os.R_OK | os.W_OK | os.X_OK):\n"
        "            bad.append(d + ' not readable, writable and searchable: ' + oct(os.stat(d).st_mode))\n"
        "    return bad\n",
    )
    for name, what, code in (
        (
            "chmod_dir_555",
            "chmod 555 the data/ folder (the next run could write no file there)",
            "os.chmod('data', 0o555)\nlimit_ok = True\n",
        ),
        ("chmod_cwd_000", "chmod 000 the working directory itself", "os.chmod('.', 0)\nlimit_ok = True\n"),
        ("chmod_cwd_555", "chmod 555 the working directory itself", "os.chmod('.', 0o555)\nlimit_ok = True\n"),
    ):
        add(name, "given", what, [start_dirs, *ans, code, VERDICT_GIVEN, EVIDENCE])
    # the verdict bites: START told a wrong hash for the table, so every run zeroes `output` (4/6)
    wrong = START.replace(course.SHA["data/table.txt"], "0" * 64)
    add(
        "canary_wrong_hash",
        "control",
        "START expects another table: the verdict must take output's 2 points",
        [wrong, *ans, "limit_ok = True\n", VERDICT_GIVEN],
        score=course.FULL - course.POINTS["output"],
    )
    for name, (what, code) in GIVEN.items():
        add(name, "given", what, [START, *ans, code, VERDICT_GIVEN, EVIDENCE])
    for name, (what, code, end) in GIVEN_END.items():
        add(name, "given", what, [START, *ans, code, end, VERDICT_GIVEN, EVIDENCE])
    add(
        "overwrite_parallel",
        "given",
        "overwrite the given table again and again for 2 s, graded with --jobs 2 beside the honest notebook",
        [
            START,
            *ans,
            f"import time\nend = time.time() + 2\nwhile time.time() < end:\n    open({P}, 'wb').write({BAD!r})\nlimit_ok = True\n",
            VERDICT_GIVEN,
            EVIDENCE,
        ],
        jobs=2,
    )
    wall_type = {
        "sleep",
        "sigstop_self",
        "blocked_pipe_read",
        "lock_wait",
        "itimer_pause",
        "subprocess_sleep",
        "affinity_busy_cpu",
        "check_sleep",
        "check_sigstop",
    }
    for name, (what, code) in TRICKS.items():
        extra = {"pin_load_cpu0": True} if name in ("affinity_busy_cpu", "busy_cpu_work") else {}
        extra["stop"] = "wall" if name in wall_type else "cpu1" if name == "busy_cpu_work" else "cpu"
        add(name, "time_trick", what, [START, *ans, TRICK_PRE + code, VERDICT_TRICK, EVIDENCE], **extra)
    for name, (what, body) in CHECK_TRICKS.items():
        # the check that calls f must fail (it was stopped): 1 point of 6 lost, nothing else
        add(
            name,
            "check_trick",
            what,
            [START, *answers_with_f(body), "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
            score=course.FULL - course.POINTS["f"],
            stop="wall" if name in wall_type else "cpu",
        )
    for name, (what, code) in HONEST.items():
        if name == "honest_cells_in_a_row":
            cells = [
                START,
                *ans,
                TRICK_PRE,
                *["_spin_cpu(1.5)\n"] * 3,
                "_spin_cpu(1.5)\ndone = True\n",
                VERDICT_HONEST,
                EVIDENCE,
            ]
        elif name == "honest_check_cpu":
            cells = [START, *answers_with_f("_spin_cpu(1.2)\n"), "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE]
        else:
            cells = [START, *ans, TRICK_PRE + code, VERDICT_HONEST, EVIDENCE]
        add(name, "honest_load", what, cells, load=12 if name == "honest_heavy_load" else True)
    # given_rewrite: the notebook itself writes the given table back doubled (the solution too, and
    # the solution also writes data/yy_sol.txt): every run, the reference's included, starts anew
    start_rw = START.replace("n.startswith('zz_')", "n.startswith(('zz_', 'yy_'))")
    rw = course.REWRITE_ANSWER_CELLS
    rwx = {"assignment": "given_rewrite", "honest": "zzz_rw_honest"}
    add(
        "zzz_rw_honest",
        "control",
        "the correct notebook of given_rewrite",
        [start_rw, *rw, "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
        **rwx,
    )
    add(
        "rw_plain",
        "given_rewrite",
        "the correct notebook of given_rewrite (it writes the table back doubled), then the honest one",
        [start_rw, *rw, "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
        **rwx,
    )
    add(
        "rw_parallel",
        "given_rewrite",
        "the same, --jobs 2",
        [start_rw, *rw, "limit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
        jobs=2,
        **rwx,
    )
    add(
        "rw_then_overwrite",
        "given_rewrite",
        "writes the table back doubled, then overwrites it with other numbers",
        [start_rw, *rw, f"open({P}, 'wb').write({BAD!r})\nlimit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
        **rwx,
    )
    add(
        "rw_then_delete",
        "given_rewrite",
        "writes the table back doubled, then deletes it and data/big.bin's neighbours",
        [start_rw, *rw, f"os.remove({P})\nlimit_ok = True\n", VERDICT_GIVEN, EVIDENCE],
        **rwx,
    )
    (HERE / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{len(truth['cases'])} notebooks in {out}")


if __name__ == "__main__":
    main()
