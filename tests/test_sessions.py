"""Runs of one submission share one sandbox, and each run still starts as fresh as a lone run."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from grader.run import sandbox
from grader.run.execute import Separate
from grader.run.forking import ForkingExecutor
from grader.run.forking.session import Session
from grader.run.job import Job, JobCell, RunResult

FEATURES = sandbox.features()
pytestmark = pytest.mark.skipif(
    not sandbox.sessions_possible(FEATURES),
    reason=f"runs share a sandbox only with pid and mount namespaces ({'; '.join(FEATURES.missing())})",
)

# A cell that reports what it sees as the error of a RuntimeError, for the test to read.
LOOK = """
import json, os, subprocess
seen = {
    "pid": os.getpid(),
    "cwd": sorted(os.listdir(".")),
    "tmp": sorted(os.listdir("/tmp")),
    "shm": sorted(os.listdir("/dev/shm")),
    "others": sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())),
    "parent": os.getppid(),
}
def _stat(pid):
    text = open(f"/proc/{pid}/stat").read()
    return text[text.index("(") + 1:text.rindex(")")], int(text[text.rindex(")") + 2:].split()[1])
seen["named"] = {p: _stat(p) for p in seen["others"]}
"""
REPORT = "raise RuntimeError('probe ' + json.dumps(seen))"
LITTER = """
open("left.txt", "w").write("x")
os.mkdir("leftdir")
open("/tmp/left.txt", "w").write("x")
open("/dev/shm/left", "w").write("x")
os.chmod(".", 0o500)
subprocess.Popen(["sleep", "60"], start_new_session=True)
"""


@pytest.fixture(scope="module")
def limits(course):
    base = course.assignment("attention_numpy").limits
    return dataclasses.replace(base, cell_timeout=2.0, notebook_timeout=30.0)


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("given\n")
    return ((path, "data.txt"),)


def job(limits, data, *sources: str) -> Job:
    # numpy's server, as a NumPy assignment's runs have: none of these cells needs torch
    return Job(
        cells=tuple(JobCell(i + 1, s) for i, s in enumerate(sources)),
        captures=(),
        limits=limits,
        files=data,
        preload=("numpy",),
    )


def probe(run: RunResult) -> dict:
    for cell in run.cells:
        if cell.ename == "RuntimeError" and cell.evalue.startswith("probe "):
            return json.loads(cell.evalue[len("probe ") :])
    raise AssertionError(f"the probe cell reported nothing: {run.cells} {run.reason}")


def test_a_run_starts_clean_after_a_run_that_littered(grader, limits, data):
    with grader.executor.session() as runner:
        assert isinstance(runner, Session)
        first = probe(runner.run(job(limits, data, LOOK + LITTER + REPORT)))
        second = probe(runner.run(job(limits, data, LOOK + REPORT)))
    assert first["cwd"] == ["data.txt"]  # before the litter: the submission's files only
    assert second["pid"] > first["pid"], "the second run is another process in the same sandbox"
    assert second["cwd"] == ["data.txt"]  # the working directory is writable again and emptied
    assert second["tmp"] == first["tmp"] and second["shm"] == first["shm"] == []
    assert not_the_runs(second) == [], "the sleeper the first run left behind is gone"


def not_the_runs(seen: dict) -> list[int]:
    """The processes a run sees besides itself and init, less the session's zygote (its parent, where
    runs are forks of one) and the next run's process, forked by the zygote ahead of its job."""
    zygote = seen["parent"] if seen["parent"] != 1 else None
    # The next run's process is the zygote's child; just forked, it may not have taken its name yet.
    return [p for p in seen["others"] if p != zygote and seen["named"][str(p)][1] != zygote]


def test_the_submission_files_survive_a_run_that_tries_to_replace_them(grader, limits, data):
    vandal = (
        "import os\nfor step in (lambda: os.remove('data.txt'), lambda: open('data.txt', 'w'),\n"
        "             lambda: os.rename('data.txt', 'x')):\n"
        "    try:\n        step()\n    except OSError:\n        pass\n"
    )
    with grader.executor.session() as runner:
        runner.run(job(limits, data, vandal))
        after = runner.run(job(limits, data, "print(open('data.txt').read())\n" + LOOK + REPORT))
    assert after.errors[0].ename == "RuntimeError"  # the read itself worked
    assert probe(after)["cwd"] == ["data.txt"]


def test_a_run_writes_its_own_copies_of_the_given_files_and_the_next_run_gets_them_as_given(tmp_path, grader, limits):
    """A course's cell writes the file its test reads back into the data folder the course ships:
    the run writes its own copy; the next run of the session, and the course, have the file as given."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("given\n")
    (tmp_path / "data" / "big.bin").write_bytes(bytes(3 << 20))  # past a quarter of disk_mb: a read-only bind
    files = ((tmp_path / "data" / "t.csv", "data/t.csv"), (tmp_path / "data" / "big.bin", "data/big.bin"))
    limits = dataclasses.replace(limits, disk_mb=8)
    write = "open('data/t.csv', 'w').write('mine\\n')\nopen('data/new.csv', 'w').write('x')\n"
    read = "raise RuntimeError('probe ' + json.dumps([open('data/t.csv').read(), sorted(os.listdir('data'))]))"
    locked = "os.chmod('data', 0)\n"  # the given folder made unreadable: readable again for the next run
    with grader.executor.session() as runner:
        first = runner.run(job(limits, files, "import json, os\n" + write + read))
        runner.run(job(limits, files, "import os\n" + locked))
        second = runner.run(job(limits, files, "import json, os\n" + read))
    assert probe(first) == ["mine\n", ["big.bin", "new.csv", "t.csv"]]
    assert probe(second) == ["given\n", ["big.bin", "t.csv"]]
    assert (tmp_path / "data" / "t.csv").read_text() == "given\n"


def test_a_fresh_python_per_run_writes_its_own_copy_of_a_given_file_too(tmp_path, limits):
    """The subprocess executor (a fresh Python per notebook, its own sandbox): the same copy."""
    from grader.run.subprocess_executor import SubprocessExecutor

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("given\n")
    files = ((tmp_path / "data" / "t.csv", "data/t.csv"),)
    cell = "open('data/t.csv', 'w').write('mine')\nraise RuntimeError('probe ' + json.dumps(open('data/t.csv').read()))"
    run = SubprocessExecutor().run(job(limits, files, "import json\n" + cell))
    assert probe(run) == "mine"
    assert (tmp_path / "data" / "t.csv").read_text() == "given\n"


def test_a_run_that_hangs_ends_the_session_and_the_next_run_gets_a_new_one(grader, limits, data):
    with grader.executor.session() as runner:
        first = probe(runner.run(job(limits, data, LOOK + REPORT)))
        hung = runner.run(job(limits, data, "import time\ntime.sleep(30)", LOOK + REPORT))
        after = probe(runner.run(job(limits, data, LOOK + REPORT)))
    assert hung.status == "timeout" and hung.cells[0].status == "timeout"
    assert probe(hung)["pid"] == first["pid"], "the re-run without the hung cell is the first run of a new sandbox"
    assert after["pid"] == first["pid"] + 1, "a clean run leaves the new sandbox open for the next"


def test_a_run_that_says_done_and_goes_on_does_not_hold_up_the_next(grader, limits, data, monkeypatch):
    monkeypatch.setattr(Session, "READY_TIMEOUT", 1.0)
    liar = (
        "import os, struct, json, time\n"
        "body = json.dumps({'ev': 'done'}).encode()\n"
        "for fd in map(int, os.listdir('/proc/self/fd')):\n"
        "    try:\n"
        "        if fd > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
        "            os.write(fd, struct.pack('>I', len(body)) + body)\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(60)"
    )
    with grader.executor.session() as runner:
        runner.run(job(limits, data, liar))
        after = probe(runner.run(job(limits, data, LOOK + REPORT)))
    assert not_the_runs(after) == [], "the liar is not running beside the next run"
    assert after["cwd"] == ["data.txt"]


def test_without_namespaces_each_run_is_started_on_its_own(limits, data):
    weak = sandbox.Features(linux=True, root=FEATURES.root)
    with ForkingExecutor(features=weak) as executor, executor.session() as runner:
        assert isinstance(runner, Separate)
        first = runner.run(job(limits, data, "open('left.txt', 'w').write('x')"))
        second = runner.run(job(limits, data, "import os\nassert os.listdir('.') == ['data.txt'], os.listdir('.')"))
    assert first.status == second.status == "ok" and second.errors == []


def test_a_sandbox_that_cannot_be_finished_says_why_on_the_first_run(grader, limits, data):
    broken = dataclasses.replace(limits, disk_mb=-1)  # no tmpfs takes a negative size
    with grader.executor.session() as runner:
        run = runner.run(job(broken, data, "x = 1"))
        after = runner.run(job(limits, data, LOOK + REPORT))
    assert run.status == "crashed"
    assert run.reason.startswith(
        "the sandbox could not be set up: the working directory cannot be set up: mounting "
    ), run.reason
    assert "Invalid argument" in run.reason
    assert probe(after)["cwd"] == ["data.txt"], "the next run gets a sandbox of its own"


def test_a_session_given_back_is_taken_again_under_its_key_and_its_runs_still_start_clean(limits, data):
    with ForkingExecutor(preload=("numpy",)) as executor:
        with executor.session(reuse="draws") as runner:
            first = probe(runner.run(job(limits, data, LOOK + LITTER + REPORT)))
            assert isinstance(runner, Session)
            keeper, workdir = runner.child.pid, runner.workdir
        with executor.session(reuse="draws") as runner:
            again = probe(runner.run(job(limits, data, LOOK + REPORT)))
        with executor.session(reuse="other") as runner:
            other = probe(runner.run(job(limits, data, LOOK + REPORT)))
        with executor.session() as runner:
            plain = probe(runner.run(job(limits, data, LOOK + REPORT)))
        assert os.path.isdir(workdir), "the given-back session stays open between its users"
    assert again["pid"] > first["pid"], "taken again: a later process of the same sandbox"
    assert again["cwd"] == ["data.txt"] and again["tmp"] == first["tmp"] and not_the_runs(again) == []
    assert other["pid"] == plain["pid"] == first["pid"], "another key, or none: a sandbox of its own"
    assert not os.path.exists(workdir), "closing the executor ends the sessions it kept"
    assert not os.path.exists(f"/proc/{keeper}")


# A run that leaves state behind in its process: a name, a module of its own, a file, a figure.
LEAVE = """
import json, os, sys
seen = {"pid": os.getpid(), "names": sorted(k for k in globals() if k.startswith("left_")),
        "cwd": sorted(os.listdir(".")), "helper": "helper" in sys.modules, "path": sys.path[-1],
        "env": os.environ.get("LEFT")}
left_name = 1
open("helper.py", "w").write("x = 1\\n")
import helper
sys.path.append("/left")
os.environ["LEFT"] = "1"
"""


def stay_job(limits, data) -> Job:
    return dataclasses.replace(job(limits, data, LEAVE + REPORT), stay=True)


def test_a_kept_sessions_run_process_stays_for_the_next_run_and_is_put_back_as_it_was(limits, data):
    with ForkingExecutor(preload=("numpy",)) as executor, executor.session(reuse="draws") as runner:
        seen = [probe(runner.run(stay_job(limits, data))) for _ in range(3)]
    assert seen[0]["pid"] == seen[1]["pid"] == seen[2]["pid"], "one process took the three runs"
    for later in seen[1:]:
        assert later == {**seen[0], "pid": later["pid"]}, "each run finds the process as the first did"
    assert seen[0]["names"] == [] and seen[0]["cwd"] == ["data.txt"] and not seen[0]["helper"]
    assert seen[0]["path"] != "/left" and seen[0]["env"] is None


def test_a_students_session_never_keeps_a_run_process(grader, limits, data):
    with grader.executor.session() as runner:
        seen = [probe(runner.run(stay_job(limits, data))) for _ in range(2)]
    assert seen[1]["pid"] > seen[0]["pid"], "Job.stay is ignored outside a session kept for the solution"


def test_a_kept_process_is_replaced_after_stay_runs_in_a_row(limits, data, monkeypatch):
    from grader.run.forking import session as session_module

    monkeypatch.setattr(session_module, "STAY_RUNS", 3)
    with ForkingExecutor(preload=("numpy",)) as executor, executor.session(reuse="draws") as runner:
        pids = [probe(runner.run(stay_job(limits, data)))["pid"] for _ in range(5)]
    assert pids[0] == pids[1] == pids[2] < pids[3] == pids[4], pids


# -- the session's zygote: each run a fork of one pristine process, which no run can reach -----------

REACH = """
import json, os, signal, time
zygote = os.getppid()
seen = {"pid": os.getpid(), "zygote": zygote}
for what in ("mem", "environ"):
    try:
        with open(f"/proc/{zygote}/{what}", "rb") as f:
            f.read(1)
        seen[what] = "read"
    except OSError as exc:
        seen[what] = type(exc).__name__
def _parent(pid):
    text = open(f"/proc/{pid}/stat").read()
    return int(text[text.rindex(")") + 2:].split()[1])
deadline = time.monotonic() + 5
nxt = []
while not nxt and time.monotonic() < deadline:  # the next run's process, forked by the zygote meanwhile
    nxt = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, zygote, os.getpid())
           and _parent(int(p)) == zygote]
for what in ("mem", "environ"):  # the next run's process is dumpable (its own /proc/self), yet out of reach
    try:
        with open(f"/proc/{nxt[0] if nxt else 0}/{what}", "rb") as f:
            f.read(1)
        seen["next_" + what] = "read"
    except OSError as exc:
        seen["next_" + what] = type(exc).__name__
for name, pid, sig in (("stop_next", nxt[0] if nxt else 0, signal.SIGSTOP), ("kill_zygote", zygote, signal.SIGKILL),
                       ("kill_all", -1, signal.SIGKILL)):
    try:
        os.kill(pid, sig)
        seen[name] = "sent"
    except OSError as exc:
        seen[name] = type(exc).__name__
seen["next"] = nxt
"""


@pytest.mark.skipif(
    not sandbox.zygote.possible(FEATURES),
    reason="runs are forks of one zygote only with Landlock scopes (ABI 6) and seccomp",
)
def test_runs_are_forks_of_one_zygote_that_no_run_can_reach(grader, limits, data):
    with grader.executor.session() as runner:
        first = probe(runner.run(job(limits, data, REACH + REPORT)))
        second = probe(runner.run(job(limits, data, LOOK + REPORT)))
        third = probe(runner.run(job(limits, data, LOOK + REPORT)))
    assert first["zygote"] != 1 and second["parent"] == third["parent"] == first["zygote"], (
        "every run of the session is a child of the same zygote, which outlived the attempts on it"
    )
    assert first["next"] and second["pid"] == first["next"][0], "the next run's process was forked before its job"
    # not dumpable: its memory and environment are closed to a process of the same uid
    assert first["mem"] == first["environ"] == "PermissionError"
    # a sibling's Landlock domain: the next run's memory and environment are closed to it too
    assert first["next_mem"] == first["next_environ"] == "PermissionError"
    # a Landlock domain per run: no signal to the zygote or to the next run's process
    assert first["stop_next"] == first["kill_zygote"] == "PermissionError"
    assert first["kill_all"] in ("sent", "ProcessLookupError")  # itself only; the next run ran (below)
    assert second["cwd"] == ["data.txt"] and not_the_runs(second) == []


def test_a_check_that_hangs_is_stopped_and_the_checks_after_it_still_run(grader, limits, data):
    """A check between cells calls the student's function, which never returns: that check is
    stopped at its limit and the notebook runs again without it, so the next checks and cells run."""
    from grader.run.job import CaptureSpec

    fast = dataclasses.replace(limits, cell_timeout=1.0)
    cells = ("import time\ndef f():\n    time.sleep(30)\nx = 1", "y = x + 1")
    spin = dataclasses.replace(
        job(fast, data, *cells),
        captures=(
            CaptureSpec("hangs", "expr", "f()", 1),
            CaptureSpec("x", "value", "x", 1),
            CaptureSpec("y", "value", "y", None),
        ),
    )
    with grader.executor.session() as runner:
        run = runner.run(spin)
    assert run.status == "timeout" and "evaluating a check ran past the 1 s limit" in run.reason
    assert run.captures["hangs"].error is not None and run.captures["hangs"].error.ename == "TimeoutError"
    from grader.capture import to_python

    assert to_python(run.captures["x"].value) == 1 and to_python(run.captures["y"].value) == 2
