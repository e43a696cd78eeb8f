"""Past one machine: a real Dask scheduler and two workers on 127.0.0.1 grading a class through
``grader grade --cluster``, the client and then a worker killed mid-batch, a submission whose
workers die twice, and the CI path (``--shard K/N`` then ``grader merge``), each compared with a
single-machine run."""

from __future__ import annotations

import csv
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import NUMPY_CORRECT, ROOT

from grader import batch
from grader.batch import shards
from grader.course import config
from grader.testing import fill, write

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed (the cluster extra)")

SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"
FORMATS = "yaml,md,gradebook,junit"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def submission(path: Path, tag: str, answers: dict | None = None, extra: str = "import time\ntime.sleep(0.3)") -> Path:
    return write(fill(SKELETON, {**NUMPY_CORRECT, **(answers or {})}, append=[f"# {tag}", extra]), path)


@pytest.fixture(scope="module")
def klass(tmp_path_factory) -> Path:
    """Eight students: right, typical mistakes, a raising cell, and a file that is not a notebook.
    Each run sleeps a little, so a batch lasts long enough to kill a worker in the middle of it."""
    c = tmp_path_factory.mktemp("class")
    submission(c / "ann.ipynb", "ann")
    submission(c / "ben.ipynb", "ben", {"scaled_scores": "scores / d_k"})
    submission(c / "cat.ipynb", "cat", {"scaled_scores": "scores"})
    submission(c / "dan.ipynb", "dan", {"attention_weights": "np.apply_along_axis(softmax, axis=0, arr=scaled_scores)"})
    submission(c / "eve.ipynb", "eve", extra="import time\ntime.sleep(0.3)\nraise RuntimeError('not done')")
    submission(c / "fay.ipynb", "fay", {"K": "X @ W_k"})
    (c / "gus.ipynb").write_bytes((c / "ann.ipynb").read_bytes())  # identical to ann's: graded once
    (c / "hal.ipynb").write_text("not a notebook")
    return c


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory):
    """course_dir(root): a course folder linked to the real one, with a results cache of its own;
    every one shares a reference cache, so the solution runs once for the module."""
    shared = tmp_path_factory.mktemp("references")

    def make(root: Path) -> Path:
        root.mkdir(parents=True)
        for name in ("solutions", "assignments"):
            (root / name).symlink_to(ROOT / name)
        (root / "cache").mkdir()
        (root / "cache/references").symlink_to(shared)
        text = (ROOT / "config.yaml").read_text()
        (root / "config.yaml").write_text(text.replace("course:\n", f"course:\n  cache_dir: {root / 'cache'}\n", 1))
        return root

    return make


def grader_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=ENV
    )


@pytest.fixture(scope="module")
def single(klass, tmp_path_factory, course_dir) -> Path:
    """The class graded on this machine alone: what every other path must reproduce."""
    root = tmp_path_factory.mktemp("single")
    cwd = course_dir(root / "course")
    done = grader_cli(
        "grade", str(klass), "-a", "attention_numpy", "-o", str(root / "out"), "-j", "2", "--formats", FORMATS, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    return root / "out"


def normalised(out: Path) -> dict[str, object]:
    """Every output file of a run, with the times (which differ from run to run) taken out."""
    files: dict[str, object] = {}
    for p in sorted(out.iterdir()):
        if p.suffix == ".yaml" and not p.name.startswith("shard-"):
            card = yaml.safe_load(p.read_text())
            card["execution"].pop("time", None)
            files[p.name] = card
        elif p.suffix in (".md", ".csv"):
            files[p.name] = p.read_text()
        elif p.suffix == ".xml":
            files[p.name] = re.sub(r'(time|timestamp|hostname)="[^"]*"', r'\1=""', p.read_text())
    return files


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` and two ``dask worker`` processes (each with its nanny, one thread)."""
    logs = tmp_path_factory.mktemp("dask")
    address = f"tcp://127.0.0.1:{free_port()}"
    procs = []

    def start(name: str, *args: str) -> None:
        log = open(logs / f"{name}.log", "w")  # noqa: SIM115 - closed with the process below
        procs.append(
            (
                subprocess.Popen(
                    [sys.executable, "-m", "dask", *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=ENV,
                    cwd=logs,
                    start_new_session=True,
                ),
                log,
            )
        )

    start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard")
    for i in (1, 2):
        start(
            f"worker{i}",
            "worker",
            address,
            "--nthreads",
            "1",
            "--host",
            "127.0.0.1",
            "--no-dashboard",
            "--name",
            f"w{i}",
        )
    client = None
    try:
        client = distributed.Client(address, timeout=60, set_as_default=False)
        client.wait_for_workers(2, timeout=120)
        yield address, client
    finally:
        if client is not None:
            client.close()
        for proc, log in reversed(procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
            log.close()


def starts(client, student: str) -> list[list[dict]]:
    """Per grading task of this student (one per run of the client), the starts the scheduler logged."""
    events = client.get_events()
    return [
        [msg for _, msg in items]
        for topic, items in sorted(events.items())
        if topic.startswith(f"grader-starts-grade-{student}-")
    ]


def kill_worker(client, address: str) -> None:
    """SIGKILL the worker process at this address (its nanny starts a new one)."""
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)


def wait_until(condition, timeout: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# -- a class on the cluster --------------------------------------------------------------------


def stored(cwd: Path) -> int:
    return len(list((cwd / "cache/results").glob("*/*.json")))


def test_a_class_graded_on_the_cluster_with_client_and_worker_killed_matches_one_machine(
    tmp_path, klass, single, cluster, course_dir
):
    address, client = cluster
    cwd = course_dir(tmp_path / "course")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "grader.cli",
        "grade",
        str(klass),
        "-a",
        "attention_numpy",
        "-o",
        str(out),
        "--formats",
        FORMATS,
        "--cluster",
        address,
    ]
    # the client killed once two results are back: they are kept
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        wait_until(lambda: stored(cwd) >= 2 or proc.poll() is not None, what="two results of the first client")
    finally:
        proc.kill()
        proc.wait()
    before = stored(cwd)
    assert 2 <= before < 7

    # run again, and kill a worker while it grades: the rest is graded, nothing twice
    seen = set(client.get_events())
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:

        def started() -> list[dict]:  # a grading task of this run has started (each runs for a second or more,
            return next(
                (
                    msgs
                    for topic, msgs in client.get_events().items()  # but hal's: not a notebook, no run)
                    if topic.startswith("grader-starts-grade-")
                    and topic not in seen
                    and not topic.startswith("grader-starts-grade-hal-")
                ),
                [],
            )

        wait_until(lambda: started() or proc.poll() is not None, what="a grading task started mid-batch")
        assert started(), "the batch ended before a worker could be killed"
        victim = started()[0][1]["worker"]
        kill_worker(client, victim)
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "grading on the Dask cluster at" in stderr and "8/8 graded (100%)" in stderr
    assert f"{before} unchanged submission(s) taken from the results cache (--force grades them again)" in stdout
    assert normalised(out) == normalised(single)
    # the submission the killed worker was grading started again, on another worker
    again = [
        msgs
        for student in ("ann", "ben", "cat", "dan", "eve", "fay", "hal")
        for msgs in starts(client, student)
        if len(msgs) > 1
    ]
    assert again and all(m[0]["worker"] == victim and m[1]["worker"] != victim for m in again)
    with open(out / "gradebook.csv", newline="") as f:
        assert [row["student"] for row in csv.DictReader(f)] == ["ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal"]


def test_a_submission_whose_worker_dies_twice_is_recorded_crashed_and_not_run_again(tmp_path, cluster, course_dir):
    address, client = cluster
    wait_until(lambda: len(client.nthreads()) == 2, what="both workers back")
    c = tmp_path / "class"
    submission(c / "ok.ipynb", "ok", extra="")
    submission(c / "slowpoke.ipynb", "slowpoke", extra="import time\ntime.sleep(25)")
    cwd = course_dir(tmp_path / "course")
    cmd = [
        sys.executable,
        "-m",
        "grader.cli",
        "grade",
        str(c),
        "-a",
        "attention_numpy",
        "-o",
        str(tmp_path / "out"),
        "--cluster",
        address,
    ]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        for n in (1, 2):
            wait_until(
                lambda n=n: sum(map(len, starts(client, "slowpoke"))) >= n or proc.poll() is not None,
                what=f"start {n} of the slow submission",
            )
            time.sleep(0.5)  # well inside its notebook
            kill_worker(client, starts(client, "slowpoke")[0][n - 1]["worker"])
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert [len(task) for task in starts(client, "slowpoke")] == [3]  # the third start gave up without running it
    assert re.search(r"slowpoke +0/11 +crashed \(grading this notebook stopped the grading machine twice", stdout)
    assert re.search(r"ok +11/11 +graded", stdout)
    card = yaml.safe_load((tmp_path / "out/slowpoke.yaml").read_text())
    assert card["status"] == "crashed" and "not run a third time" in card["reason"]
    # recorded, not lost: the same command grades nothing again
    again = grader_cli(*cmd[3:], cwd=cwd)
    assert again.returncode == 0, again.stderr
    assert "2 unchanged submission(s) taken from the results cache" in again.stdout
    assert "grading on the Dask cluster" not in again.stderr


def test_no_scheduler_at_the_address_is_a_usage_error(tmp_path, klass, course_dir):
    cwd = course_dir(tmp_path / "course")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.cli",
            "grade",
            str(klass / "ann.ipynb"),
            "-a",
            "attention_numpy",
            "-o",
            str(tmp_path / "out"),
            "--cluster",
            f"tcp://127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**ENV, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("grader: Cannot reach the Dask scheduler at tcp://127.0.0.1:")
    assert "Traceback" not in done.stderr


# -- shards in a CI matrix -----------------------------------------------------------------------


def test_shards_merged_write_what_one_run_writes(tmp_path, klass, single, course_dir):
    cwd = course_dir(tmp_path / "course")
    shares = []
    for k in (1, 2):
        done = grader_cli(
            "grade",
            str(klass),
            "-a",
            "attention_numpy",
            "-o",
            str(tmp_path / f"shard-{k}"),
            "-j",
            "2",
            "--formats",
            FORMATS,
            "--shard",
            f"{k}/2",
            cwd=cwd,
        )
        assert done.returncode == 0, done.stderr
        shares.append(int(re.search(r"shard \d/2: (\d+) of the class's 8 submissions", done.stderr).group(1)))
    assert sum(shares) == 8  # (notebooks get random cell ids, so which share is larger changes from run to run)
    merged = grader_cli(
        "merge", str(tmp_path / "shard-1"), str(tmp_path / "shard-2"), "-o", str(tmp_path / "out"), cwd=cwd
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert normalised(tmp_path / "out") == normalised(single)

    # the same share every time, whatever else is in the class: it depends on a file's content alone
    (tmp_path / "class").mkdir()
    for p in klass.iterdir():
        (tmp_path / "class" / p.name).write_bytes(p.read_bytes())
    submission(tmp_path / "class/zed.ipynb", "zed")
    assignment = config.load(cwd / "config.yaml").assignment("attention_numpy")
    with batch.intake([tmp_path / "class"], assignment) as found:
        again = {s.name for _, s in shards.select(found.submissions, 1, 2)}
    before = {p.stem for p in (tmp_path / "shard-1").glob("*.yaml") if not p.name.startswith("shard-")}
    assert before == again - {"zed"}

    missing = grader_cli("merge", str(tmp_path / "shard-1"), "-o", str(tmp_path / "part"), cwd=cwd)
    assert (missing.returncode, missing.stderr.strip()) == (
        2,
        "grader: Shard(s) 2/2 missing: every shard's --out folder is needed to merge.",
    )
    bad = grader_cli("grade", str(klass), "-a", "attention_numpy", "--shard", "3/2", cwd=cwd)
    assert (bad.returncode, bad.stderr.strip()) == (
        2,
        "grader: --shard must be K/N with 1 <= K <= N (for example 1/4), got '3/2'.",
    )


def test_ci_workflow_runs_the_shards_as_a_matrix_then_merges(tmp_path):
    done = grader_cli(
        "ci-workflow", "attention_numpy", "--shards", "3", "--submissions", "class/week1", "-o", str(tmp_path), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    flow = yaml.safe_load((tmp_path / ".github/workflows/grade-attention_numpy.yml").read_text())
    grade, merge = flow["jobs"]["grade"], flow["jobs"]["merge"]
    assert grade["strategy"]["matrix"]["shard"] == [1, 2, 3]
    run = next(s["run"] for s in grade["steps"] if s.get("name") == "Grade")
    assert "--shard ${{ matrix.shard }}/3 --out shard-${{ matrix.shard }}" in run and '"$SUBMISSIONS"' in run
    assert flow["env"]["SUBMISSIONS"] == "class/week1"
    assert merge["needs"] == "grade"
    assert any(s.get("run", "").startswith("grader merge shards") for s in merge["steps"])
    assert any(
        s.get("uses", "").startswith("actions/download-artifact") and s["with"]["pattern"] == "shard-*"
        for s in merge["steps"]
    )


def test_without_distributed_cluster_is_a_one_line_usage_error(tmp_path, klass, course_dir):
    cwd = course_dir(tmp_path / "course")
    code = (
        "import sys; sys.modules['distributed'] = None; from grader.cli import main; "
        f"sys.exit(main(['grade', {str(klass)!r}, '-a', 'attention_numpy', '--cluster', 'tcp://127.0.0.1:1']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120, env=ENV)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "grader: --cluster needs Dask's distributed package, which is not installed: "
        "pip install 'notebook-grader[cluster]'.",
    )


def test_workers_draw_a_submissions_own_variants_as_the_client_does(tmp_path, monkeypatch, configured):
    course = configured
    """The variant secret travels with the bundle: a worker whose own cache holds another secret
    (another machine) still checks a submission on the variants the client would draw for it."""
    import dataclasses

    from grader.batch.bundle import bundle_for_workers
    from grader.batch.dask_plugin import WorkerGrader
    from grader.judge.grading import Grader

    monkeypatch.delenv("GRADER_VARIANT_SECRET", raising=False)
    client = Grader(dataclasses.replace(course, cache_dir=tmp_path / "client-cache"), executor=None)
    a = client.course.assignment("attention_numpy")
    bundle = bundle_for_workers(client, a, "fingerprint")
    assert bundle.variant_secret == (tmp_path / "client-cache" / "variant-secret").read_bytes().strip()
    elsewhere = dataclasses.replace(bundle, course=dataclasses.replace(bundle.course, cache_dir=tmp_path / "worker"))
    worker = WorkerGrader(elsewhere)
    try:
        graded_there = worker._ready()
        sha = "5" * 64
        drawn = graded_there.references.variants_for(worker.assignment, sha)
        assert drawn.own and not drawn.note
        assert [v.values for v in drawn.variants] == [v.values for v in client.references.variants_for(a, sha).variants]
        assert not (tmp_path / "worker" / "variant-secret").exists()
    finally:
        worker.close()
