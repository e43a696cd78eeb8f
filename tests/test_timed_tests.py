"""A hidden test that calls the student's function on frames big enough to matter, and one that
times it against the test's own reference function (ITMO's RecSys homework, docs/imported-courses.md),
in a small course of our own: scored as nbgrader scores it, without the test's own frames crossing
from the student's process, with the timing and the check's time limit measured as on an idle
machine (``benchmarks/timed_test.py`` shows the sizes where it matters)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader_course import meta, notebook

from grader.authoring import import_check, importing
from grader.authoring.nbgrader import importer as nbgrader_import
from grader.course import config
from grader.judge import verdicts
from grader.judge.grading import Grader
from grader.judge.testrewrite import program
from grader.run import sandbox, test_recorder, window

GIVEN = (
    "import time\nimport numpy as np\nimport pandas as pd\n"
    "sales = pd.DataFrame({'user': [0, 0, 1, 1, 2], 'item': [1, 2, 1, 3, 2], 'paid': [10.0, 30.0, 5.0, 5.0, 20.0]})"
)
VECTORIZED = (
    "    ranked = sales.sort_values(['user', 'paid'], ascending=[True, False])\n"
    "    top = ranked.groupby('user').head(k).groupby('user')['paid'].sum()\n"
    "    return float((top / sales.groupby('user')['paid'].sum()).mean())"
)
ANSWER = f"def top_share(sales, k):\n    ### BEGIN SOLUTION\n{VECTORIZED}\n    ### END SOLUTION"
# The mean over users of the share of each user's spending in their k largest payments; the hidden
# part checks it on a big frame, then times it against the test's own reference, the best of three.
TEST = (
    "assert abs(top_share(sales, 1) - (0.75 + 0.5 + 1.0) / 3) < 1e-9\n"
    "### BEGIN HIDDEN TESTS\n"
    f"def top_share_correct(sales, k):\n{VECTORIZED}\n"
    "def big_sales(n_users):\n"
    "    return pd.DataFrame({'user': np.repeat(np.arange(n_users), 100), 'item': np.tile(np.arange(100), n_users),\n"
    "                         'paid': np.tile(np.arange(1.0, 101.0), n_users)})\n"
    "class Timer:\n"
    "    def __enter__(self):\n        self.start = time.perf_counter()\n        return self\n"
    "    def __exit__(self, *args):\n        self.elapsed = time.perf_counter() - self.start\n"
    "def best_time(f, tries=3):\n"
    "    best = 100\n"
    "    for _ in range(tries):\n"
    "        data = big_sales(100)\n"
    "        with Timer() as timer:\n            f(data, 5)\n"
    "        best = min(best, timer.elapsed)\n"
    "    return best\n"
    "assert abs(top_share(big_sales(100), 5) - top_share_correct(big_sales(100), 5)) < 1e-9\n"
    "assert best_time(top_share) / best_time(top_share_correct) < 3\n"
    "### END HIDDEN TESTS"
)
NAIVE = (
    "def top_share(sales, k):\n    shares = []\n    for u in sales['user'].unique():\n"
    "        rows = sales[sales['user'] == u]['paid'].sort_values(ascending=False)\n"
    "        shares.append(rows.head(k).sum() / rows.sum())\n    return float(np.mean(shares))"
)


def _course(root: Path):
    src = root / "source" / "ps1"
    src.mkdir(parents=True)
    cells = [
        ("code", GIVEN, None),
        ("code", ANSWER, meta("top_share", solution=True)),
        ("code", TEST, meta("t_top_share", grade=True, locked=True, points=4)),
    ]
    (src / "ps1.ipynb").write_text(notebook(cells))
    items = nbgrader_import.read(src)
    staged = import_check.stage(items, root / "c" / "config.yaml", course_name="c")
    assert staged.failing == () and staged.problems == ()
    importing.write(items, root / "c" / "config.yaml", course_name="c")
    return config.load(root / "c" / "config.yaml")


def _answered(skeleton: Path, out: Path, answer: str) -> Path:
    nb = nbformat.read(str(skeleton), as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("def top_share(sales, k):"))
    cell.source = answer
    nbformat.write(nb, str(out))
    return out


def test_a_hidden_test_timing_the_students_function_on_big_frames_scores_as_its_course_means(tmp_path):
    course = _course(tmp_path)
    assignment = course.assignment("ps1")
    grader = Grader(course)
    assert grader.grade(assignment, assignment.solution).score == 4
    naive = grader.grade(assignment, _answered(assignment.skeleton, tmp_path / "naive.ipynb", NAIVE))
    # The loop over users is right but slow: the visible part passes, the hidden part (on the big
    # frame, timed against the reference) fails, and the cell earns nothing, as in nbgrader.
    assert {c.hidden: c.status for q in naive.questions for c in q.checks} == {False: "passed", True: "failed"}
    assert naive.score == 0
    hidden = next(c for q in naive.questions for c in q.checks if c.hidden)
    (failed,) = (r for r in hidden.reasons if isinstance(r, verdicts.TestFailed))
    assert [(f.left, f.op) for f in failed.findings if isinstance(f, verdicts.Compared)] == [
        ("best_time(top_share) / best_time(top_share_correct)", "Lt")
    ]


def test_the_tests_own_reference_on_a_big_frame_is_computed_in_the_grader_not_sent():
    """The student's process records the calls into the student's code; the reference function's
    steps, on the test's own frame, the grader computes itself: nothing of that frame is sent."""
    hidden = TEST.replace("### BEGIN HIDDEN TESTS\n", "").replace("### END HIDDEN TESTS", "")
    prog = program(hidden)
    ns: dict = {"__name__": "__main__"}
    exec(GIVEN, ns)  # noqa: S102 - the notebook's cells, as the student's process runs them
    exec(f"def top_share(sales, k):\n{VECTORIZED}", ns)  # noqa: S102
    local = frozenset(s.index for s in prog.sites if s.local and not s.reads_file)
    records = test_recorder.record_test(prog.record_source, ns, 0, [64 << 20], local)["items"]
    kinds = [r["items"][0]["v"] for r in records]
    assert kinds.count("l") >= 10 and kinds[-1] == "stop" and records[-1]["items"][2]["v"] == ""
    sent = sum(len(repr(r)) for r in records)
    assert sent < 50_000  # the big frame is 10,000 rows of three columns: about 300 kB encoded
    # The same test recorded with every site sent (as before ``local``) ships the frames.
    everything = test_recorder.record_test(prog.record_source, ns, 0, [64 << 20])["items"]
    assert sum(len(repr(r)) for r in everything) > 10 * sent


def _pinned_busy(seconds: float) -> int:
    """A child that spins for ``seconds`` of wall time on CPU 0; its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.sched_setaffinity(0, {0})
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        os._exit(0)
    return pid


def test_a_checks_time_limit_leaves_out_the_time_its_run_waited_for_a_cpu_other_work_held():
    """A run that competes for its CPU with other work gets its limit in its own time; a run that
    waits for nothing (it sleeps) is stopped at the limit, as before."""
    if not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/thread-self/schedstat"):
        pytest.skip("the kernel does not count a thread's waits for a CPU here")
    student, other = _pinned_busy(3.0), _pinned_busy(3.0)  # two spinning on one CPU: each waits half the time
    try:
        started = time.monotonic()
        limit = window.Window.open(student, 0.3)
        while True:
            time.sleep(max(0.0, limit.stop() - time.monotonic()))
            if limit.over():
                break
        loaded = time.monotonic() - started
        assert limit.granted > 0.1 and 0.4 < loaded < 4.5  # the spinning child lives 3 s
        assert sandbox.cpu_waits(student)  # the kernel's count of the run's waits, read from outside
    finally:
        for pid in (student, other):
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    sleeper = os.fork()
    if sleeper == 0:  # pragma: no cover - the child
        time.sleep(3)
        os._exit(0)
    try:
        started = time.monotonic()
        limit = window.Window.open(sleeper, 0.3)
        while not (time.sleep(max(0.0, limit.stop() - time.monotonic())) or limit.over()):
            pass
        assert limit.granted < 0.05 and time.monotonic() - started < 1.5
    finally:
        os.kill(sleeper, 9)
        os.waitpid(sleeper, 0)


def test_a_tests_clock_readings_leave_out_the_time_its_thread_waited_for_a_cpu():
    if not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/thread-self/schedstat"):
        pytest.skip("the kernel does not count a thread's waits for a CPU here")
    assert test_recorder._reads_clock(lambda: time.perf_counter())
    assert not test_recorder._reads_clock(lambda: time.sleep(0))
    read, write = os.pipe()
    other = _pinned_busy(2.0)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child: 0.3 s of wall time on a CPU it shares
        os.sched_setaffinity(0, {0})
        clock = test_recorder.OwnClock()
        wall, own = time.perf_counter(), clock(time.perf_counter())
        end = wall + 0.3
        while time.perf_counter() < end:
            pass
        out = f"{time.perf_counter() - wall} {clock(time.perf_counter()) - own}"
        os.write(write, out.encode())
        os._exit(0)
    try:
        os.waitpid(child, 0)
        wall, own = map(float, os.read(read, 100).split())
        assert 0 < own < 0.8 * wall  # it ran half the time it took at most
    finally:
        os.kill(other, 9)
        os.waitpid(other, 0)
        os.close(read)
        os.close(write)


def _pinned_tree(seconds: float, spinners: int) -> int:
    """A child that spins on CPU 0 for ``seconds`` with ``spinners`` children of its own spinning
    there too (a run that fills its CPU itself: each of its processes waits for its siblings); its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.sched_setaffinity(0, {0})
        for _ in range(spinners):
            if os.fork() == 0:
                break
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        os._exit(0)
    return pid


def test_a_run_that_fills_its_cpu_with_its_own_processes_earns_no_time_for_their_waits():
    """Twelve processes of the run spinning on one CPU each wait eleven twelfths of the time, for
    each other: that is the run's own load, not other work's, so its limit is not moved for it
    (credited, it would move the limit twelvefold, past the tree's 3 s)."""
    if not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/thread-self/schedstat"):
        pytest.skip("the kernel does not count a thread's waits for a CPU here")
    tree = _pinned_tree(3.0, spinners=11)
    try:
        time.sleep(0.05)  # its children are forked
        started = time.monotonic()
        limit = window.Window.open(tree, 0.3)
        while not (time.sleep(max(0.0, limit.stop() - time.monotonic())) or limit.over()):
            pass
        assert time.monotonic() - started < 2.0  # the tree spins for 3 s: the limit was not moved along
    finally:
        for pid in {tree} | sandbox.host._descendants(tree):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        os.waitpid(tree, 0)
