"""The limits that must hold wherever the grader runs: whether another uid can run this Python
(the question that decides whether a root grader gives student code a uid of its own), and one
student's processes never counting against another's. ``tests/test_settings.py`` runs these in
every setting it reproduces."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import readable
from conftest import NUMPY_CORRECT

from grader import batch
from grader.run.sandbox import disk, probe
from grader.run.sandbox.probe import Features
from grader.testing import burst_cell, fill, write

DEBIAN_PYTHON = "/usr/bin/python3.11"  # `make test-setup` installs it where it runs as root


@pytest.fixture(scope="module")
def venv():
    """A virtual environment as Gradescope's setup.sh or a CI step makes one: pyvenv.cfg 0644, in
    a folder every user may search."""
    if not os.path.exists(DEBIAN_PYTHON):
        pytest.skip(f"{DEBIAN_PYTHON} is missing: `make test-setup` installs Debian's python3.11 where it runs as root")
    base = Path(tempfile.mkdtemp(prefix="grader-venv-", dir="/var/tmp"))  # /tmp may be closed to others
    base.chmod(0o755)
    subprocess.run([DEBIAN_PYTHON, "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=60)
    yield base / "venv"
    shutil.rmtree(base, ignore_errors=True)


def usable_there(python: Path) -> bool:
    """What ``probe.usable_by_another_user`` answers in that Python, for that Python's own paths."""
    code = (
        "import json, sys; from grader.run.sandbox import probe, root; "
        "print(json.dumps(probe.usable_by_another_user(root.python_paths(), sys.executable)))"
    )
    where = readable.checkout(python.parent.parent.parent)  # this checkout, where that uid could read it
    proc = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=where,
        env={**os.environ, "PYTHONPATH": str(where)},
    )
    return bool(json.loads(proc.stdout))


def test_a_virtual_environment_every_user_may_read_is_usable_by_another_uid(venv):
    cfg = venv / "pyvenv.cfg"
    assert cfg.stat().st_mode & 0o777 == 0o644  # a data file: nobody executes it
    paths = [str(venv / "bin"), str(venv / "lib"), str(cfg)]
    python = str(venv / "bin" / "python")
    assert probe.usable_by_another_user(paths, python)
    assert all(probe._others_may(p, probe._need(p)) for p in paths)
    if os.geteuid() == 0:
        assert usable_there(venv / "bin" / "python")  # the probe the grader runs in that Python
    venv.parent.chmod(0o700)  # now no other user can search the folder it lives in
    try:
        assert not probe.usable_by_another_user(paths, python)
        assert not probe._others_may(paths[0], probe._need(paths[0]))
    finally:
        venv.parent.chmod(0o755)
    (venv / "lib").chmod(0o750)  # the standard library's folder closed to others
    try:
        assert not probe.usable_by_another_user(paths, python)
    finally:
        (venv / "lib").chmod(0o755)


@pytest.mark.skipif(os.geteuid() != 0, reason="the kernel's own answer for another uid needs root")
def test_a_python_under_a_private_home_is_not_usable_by_another_uid(tmp_path):
    """The interpreter's real path counts: a link in a readable folder to a Python under a home
    of mode 0700 cannot be run by another uid."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    target = home / "python"
    shutil.copy("/bin/true", target)  # any executable file will do
    public = Path(tempfile.mkdtemp(prefix="grader-link-", dir="/var/tmp"))
    try:
        public.chmod(0o755)
        (public / "python").symlink_to(target)
        assert not probe.usable_by_another_user([str(public)], str(public / "python"))
        assert not probe._others_may(str(public / "python"), os.R_OK | os.X_OK)
        assert probe.usable_by_another_user([str(public)], None)
        assert not probe.usable_by_another_user([str(public)], None, search=[str(home)])
    finally:
        shutil.rmtree(public)


# --------------------------------------------------------------------------------------------
# One student's processes never count against another's


# Fills the run's process limit at once and holds it for 3 s (children that sleep), then goes on.
BOMB = """import numpy as np, os, time
held = []
try:
    while True:
        pid = os.fork()
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        held.append(pid)
except BlockingIOError:
    pass
time.sleep(3)
"""
# An honest notebook that starts a process in every answer (a tool it calls on the way), after
# waiting a moment so that a fork bomb graded beside it is at its height.
HONEST = """import numpy as np, subprocess, time
time.sleep(1)
def checked(value):
    subprocess.run(['true'], check=True)
    return value
"""


@pytest.fixture(scope="module")
def bounded(course):
    """attention_numpy with 32 processes a run and no variant re-runs."""
    a = course.assignment("attention_numpy")
    return dataclasses.replace(
        a,
        limits=dataclasses.replace(a.limits, processes=32, cell_timeout=20.0),
        variants=dataclasses.replace(a.variants, count=0),
    )


def test_a_fork_bomb_beside_an_honest_notebook_costs_it_no_point(grader, bounded, tmp_path):
    folder = tmp_path / "class"
    answers = {k: v if k.startswith("?") else f"checked({v})" for k, v in NUMPY_CORRECT.items()}
    write(fill(bounded.skeleton, NUMPY_CORRECT, edit={1: BOMB}), folder / "bomb.ipynb")
    write(fill(bounded.skeleton, answers, edit={1: HONEST}), folder / "honest.ipynb")
    with batch.intake([folder], bounded) as found:
        cards = {c.student: c for c in batch.grade_all(grader, bounded, found.submissions, jobs=2).cards}
    honest = cards["honest"]
    assert honest.execution.to_dict()["errors"] == []
    assert (honest.status, honest.score) == ("graded", honest.max_score)
    assert cards["bomb"].score == cards["bomb"].max_score
    run = honest.execution.to_dict()
    # Which layer kept them apart, in the scorecard: a uid of each run's own, a user namespace's
    # own count, or runs that take turns on a shared uid's limit.
    assert {"user", "userns", "turns"} & set(run["sandbox"]), run["sandbox"]
    if "turns" in run["sandbox"]:
        assert any(line.startswith("user: runs as the grader's own user") for line in run["sandbox_not_enforced"])


BURST = burst_cell(forks=200, threads_each=20, hold=2, settle=0.5)


def test_a_fork_and_thread_burst_never_holds_more_than_the_limit(grader, bounded, tmp_path):
    """Where the kernel holds the limit (a uid of the run's own, a user namespace's own count, or the
    user's one count that runs take turns on), the run holds at most ``processes`` tasks at once,
    its first process included, and goes on: the burst's own count says so, in the run on the
    notebook's data (its error) and in the variant's run, a session's last (``output`` is zeroed
    there if it held more)."""
    from grader.run.sandbox import features

    if "processes" not in features().active():
        pytest.skip("the kernel does not hold the process limit here (uid 0: the keeper counts instead)")
    limit = bounded.limits.processes
    with_variant = dataclasses.replace(bounded, variants=dataclasses.replace(bounded.variants, count=1))
    verdict = f"output = output if held <= {limit} else output * 0\nraise RuntimeError('probe ' + json.dumps({{'held': held}}))"
    path = write(fill(bounded.skeleton, NUMPY_CORRECT, append=[BURST, verdict]), tmp_path / "burst.ipynb")
    card = grader.grade(with_variant, path)
    [error] = card.execution.to_dict()["errors"]
    held = json.loads(error["error"].removeprefix("RuntimeError: probe "))["held"]
    assert limit - 8 <= held <= limit, held
    assert card.score == card.max_score, [q.lines for q in card.questions if q.score < q.max_score]


# --------------------------------------------------------------------------------------------
# Every limit a setting lacks is named, in the scorecard and in the header of a grading run

SETTINGS = {
    "privileged": Features(
        linux=True,
        root=True,
        mount_ns=True,
        net_ns=True,
        pid_ns=True,
        ipc_ns=True,
        drop_user=True,
        landlock=7,
        seccomp=True,
        memory_cgroup=True,
    ),
    "docker, Python open to all": Features(linux=True, root=True, drop_user=True, landlock=7, seccomp=True),
    "docker, Python under /root": Features(linux=True, root=True, landlock=7, seccomp=True),
    "ordinary user": Features(
        linux=True, user_ns=True, mount_ns=True, net_ns=True, pid_ns=True, ipc_ns=True, landlock=7, seccomp=True
    ),
    "ordinary user, no user namespaces": Features(linux=True, landlock=7, seccomp=True),
    "old kernel in a container": Features(linux=True, root=True),
}
# The subject of each line that must be there (in the scorecard's sandbox_not_enforced and the header).
LACKS = {
    "privileged": set(),
    "docker, Python open to all": {"memory"},
    "docker, Python under /root": {"memory", "user", "processes"},
    "ordinary user": {"memory"},
    "ordinary user, no user namespaces": {"memory", "user"},
    "old kernel in a container": {"memory", "memfd", "network", "filesystem", "disk", "user", "processes"},
}


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_limit_a_setting_lacks_is_named_in_the_scorecard_and_the_header(setting):
    plan = SETTINGS[setting]
    card = {line.split(":")[0] for line in probe.not_enforced(plan.active())}
    head = {line.removeprefix("grader sandbox, not enforced here: ").split(":")[0] for line in probe.header(plan)}
    assert card == LACKS[setting]
    if "seccomp" in head:  # the header's line on the missing filter names memfd files among what it leaves open
        head.add("memfd")
    assert card <= head  # the header says more (cleanup, signals), never less
    if "disk" not in card:
        assert {"filesystem", "disk"} & set(plan.active())
    if plan.takes_turns:
        assert "turns" in plan.active() and "processes" in plan.active()


def test_the_disk_watch_counts_what_a_run_tucks_away(tmp_path):
    """What the keeper adds up without a tmpfs: nested folders, a folder closed to its owner (opened
    again, or counted as over), and folders nested deeper than a path can name (counted as over)."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "data.bin").write_bytes(b"x" * 3_000_000)
    (tmp_path / "a").chmod(0)
    size, files = disk.usage(str(tmp_path), 10**9)
    assert 3_000_000 <= size < 3_200_000 and files == 3
    (tmp_path / "a").chmod(0o700)
    assert disk.usage(str(tmp_path), 2_000_000)[0] > 2_000_000  # past the bound: counting stops there
    here = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(30):  # 30 x 200 characters: past PATH_MAX
            os.mkdir("d" * 200, dir_fd=here)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = inner
    finally:
        os.close(here)
    assert disk.usage(str(tmp_path), 10**9)[0] > 10**9
    shutil.rmtree(tmp_path / ("d" * 200), ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root grader runs student code as uid 0")
def test_as_uid_0_a_fork_loop_is_ended_by_the_keepers_count(course, bounded, tmp_path):
    """Where no other uid can run Python and there is no mount namespace (Docker, Python under
    /root), student code stays uid 0, which the kernel's process limit exempts: the keeper counts
    the run's processes and threads and ends the run past ``processes``."""
    from grader.judge.grading import Grader
    from grader.run.sandbox import features
    from grader.run.subprocess_executor import SubprocessExecutor

    found = features()
    uid0 = Features(linux=True, root=True, landlock=found.landlock, seccomp=found.seccomp)
    assert "processes_watched" in uid0.active() and "processes" not in uid0.active()
    marker = f"{os.getpid() % 1000 + 1000}.75"
    path = write(
        fill(
            bounded.skeleton,
            NUMPY_CORRECT,
            append=[
                "import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n"
                f"        os.execvp('sleep', ['sleep', '{marker}'])\n    time.sleep(0.002)"
            ],
        ),
        tmp_path / "loop.ipynb",
    )
    card = Grader(course, executor=SubprocessExecutor(features=uid0)).grade(bounded, path)
    [error] = card.execution.to_dict()["errors"]
    assert error["status"] == "crashed"
    assert error["error"].endswith("started more than the 32 processes and threads the run may hold and was stopped")
    assert card.score == card.max_score
    assert any(
        n.startswith("processes: the kernel does not limit uid 0")
        for n in card.execution.to_dict()["sandbox_not_enforced"]
    )
    deadline = time.monotonic() + 5
    while subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "processes of the loop were left running"
        time.sleep(0.05)
