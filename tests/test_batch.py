"""Batch grading: intake layouts, identical files, parallel workers, the results cache, resuming
after a kill or Ctrl-C, and the gradebook."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import NUMPY_CORRECT, ROOT, notebook_with

from grader import batch
from grader.errors import GraderError
from grader.testing import fill, write

SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"


def submission(path: Path, *, tag: str = "", answers: dict | None = None, extra: str = "") -> Path:
    """A real submission; ``tag`` makes its content (and so its sha256) distinct."""
    cells = [f"# {tag}"] if tag else []
    if extra:
        cells.append(extra)
    return write(fill(SKELETON, {**NUMPY_CORRECT, **(answers or {})}, append=cells), path)


def students(found: batch.Intake) -> list[tuple[str, str]]:
    return [(s.student, s.name) for s in found.submissions]


# -- intake ---------------------------------------------------------------------------------


def test_folder_of_notebooks_names_students_by_file(tmp_path, numpy_assignment):
    for name in ("bob", "alice"):
        submission(tmp_path / "class" / f"{name}.ipynb", tag=name)
    (tmp_path / "class/.ipynb_checkpoints").mkdir()
    submission(tmp_path / "class/.ipynb_checkpoints/alice-checkpoint.ipynb", tag="old")
    with batch.intake([tmp_path / "class"], numpy_assignment) as found:
        assert students(found) == [("alice", "alice"), ("bob", "bob")]
        assert found.notes == []


def test_folder_per_student_with_the_choices_it_reports(tmp_path, numpy_assignment):
    c = tmp_path / "class"
    submission(c / "carol/attention_numpy.ipynb", tag="carol")
    submission(c / "dave/my work.ipynb", tag="dave")
    submission(c / "erin/attention_numpy.ipynb", tag="erin")
    submission(c / "erin/scratch.ipynb", tag="erin scratch")
    submission(c / "frank/a.ipynb", tag="frank a")
    submission(c / "frank/b.ipynb", tag="frank b")
    (c / "gina").mkdir()
    (c / "hal").mkdir()
    (c / "hal/answers.txt").write_text("Q = X @ W_q.T\n")
    with batch.intake([c], numpy_assignment) as found:
        assert students(found) == [
            ("carol", "carol"),
            ("dave", "dave"),
            ("erin", "erin"),
            ("frank", "frank-a"),
            ("frank", "frank-b"),
            ("hal", "hal"),
        ]
        assert found.notes == [
            f"erin: 2 notebooks in {c}/erin; graded attention_numpy.ipynb",
            f"frank: 2 notebooks in {c}/frank; each is graded",
            f"gina: {c}/gina is empty; nothing to grade",
            f"hal: no .ipynb file in {c}/hal; its files are graded as they are",
        ]


def test_a_subfolder_named_after_the_assignment_is_a_folder_of_notebooks(numpy_assignment):
    with batch.intake([ROOT / "examples"], numpy_assignment) as found:
        assert [s.student for s in found.submissions] == sorted(
            p.stem for p in (ROOT / "examples/attention_numpy").glob("*.ipynb")
        )


def test_nbgrader_layout_takes_the_student_from_the_folder(tmp_path, numpy_assignment):
    course = tmp_path / "course"
    submission(course / "submitted/ivan/attention_numpy/attention_numpy.ipynb", tag="ivan")
    (course / "submitted/ivan/attention_numpy/timestamp.txt").write_text("2026-01-01 10:00:00")
    submission(course / "submitted/judy/attention_numpy/attention_numpy.ipynb", tag="judy")
    submission(course / "submitted/kim/other_assignment/other.ipynb", tag="kim")
    for given in (course, course / "submitted"):
        with batch.intake([given], numpy_assignment) as found:
            assert students(found) == [("ivan", "ivan"), ("judy", "judy")]
            assert found.notes == [f"kim: nothing submitted for attention_numpy in {course}/submitted/kim"]


def test_zip_archive_is_unpacked_safely_and_removed(tmp_path, numpy_assignment):
    lee = submission(tmp_path / "lee.ipynb", tag="lee")
    mia = submission(tmp_path / "mia.ipynb", tag="mia")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(lee, "class/lee.ipynb")
        zf.write(mia, "class/mia/attention_numpy.ipynb")
        zf.writestr("class/../../evil.ipynb", "{}")
        zf.writestr("__MACOSX/class/._lee.ipynb", "junk")
    with batch.intake([archive], numpy_assignment) as found:
        assert students(found) == [("lee", "lee"), ("mia", "mia")]
        assert found.notes == ["class.zip: skipped 'class/../../evil.ipynb', a path outside the archive"]
        scratch = found.scratch
        assert found.submissions[0].path.read_bytes() == lee.read_bytes()
        assert found.submissions[1].origin == "class.zip:class/mia/attention_numpy.ipynb"
    assert not scratch.exists()
    assert not (tmp_path / "evil.ipynb").exists() and not (tmp_path.parent / "evil.ipynb").exists()


def test_a_zip_bomb_member_is_rejected_before_it_is_written(tmp_path, grader, numpy_assignment):
    # 200 MB of one byte packs into a few hundred KB; the member is never written out, and its
    # student still gets a scorecard that says why.
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("class/bomb.ipynb", b" " * (200 << 20))
        zf.write(submission(tmp_path / "lee.ipynb", tag="lee"), "class/lee.ipynb")
    assert archive.stat().st_size < 1 << 20
    with batch.intake([archive], numpy_assignment) as found:
        bomb = found.submissions[0]
        assert bomb.student == "bomb" and bomb.path.stat().st_blocks * 512 < 1 << 20  # nothing written
        card = grader.grade(numpy_assignment, bomb.path, student=bomb.student)
    assert card.status == "invalid_notebook"
    assert card.reason.startswith("The notebook is 209.7 MB, larger than the 20 MB limit")


def test_identical_files_are_reported(tmp_path, numpy_assignment):
    same = submission(tmp_path / "class/nina.ipynb", tag="shared")
    (tmp_path / "class/omar.ipynb").write_bytes(same.read_bytes())
    submission(tmp_path / "class/pat.ipynb", tag="pat")
    with batch.intake([tmp_path / "class"], numpy_assignment) as found:
        groups = found.identical()
        assert [[s.student for s in g] for g in groups] == [["nina", "omar"]]
        assert batch.summary_lines(found) == [
            f"identical files: {tmp_path}/class/nina.ipynb, {tmp_path}/class/omar.ipynb"
        ]


# -- grading many ----------------------------------------------------------------------------


def test_grade_all_grades_identical_contents_once_and_reuses_stored_results(tmp_path, grader, numpy_assignment):
    c = tmp_path / "class"
    same = submission(c / "alice.ipynb", tag="same")
    (c / "bob.ipynb").write_bytes(same.read_bytes())
    submission(c / "carol.ipynb", tag="carol", answers={"scaled_scores": "scores"})
    submission(c / "dave.ipynb", tag="dave", extra="raise RuntimeError('not done')")
    (c / "erin.ipynb").write_text("this is not a notebook")
    store = batch.ResultStore(tmp_path / "cache", numpy_assignment, batch.fingerprint(grader, numpy_assignment))
    with batch.intake([c], numpy_assignment) as found:
        first = batch.grade_all(grader, numpy_assignment, found.submissions, jobs=2, store=store)
        assert (first.ran, first.cached) == (4, 0)
        rows = [(card.student, card.submission, card.status, card.score) for card in first.cards]
        assert rows == [
            ("alice", "alice.ipynb", "graded", 11),
            ("bob", "bob.ipynb", "graded", 11),
            # carol loses only `scaled`: the later steps are right given it (error carried forward)
            ("carol", "carol.ipynb", "graded", 9),
            ("dave", "dave.ipynb", "graded", 11),
            ("erin", "erin.ipynb", "invalid_notebook", 0),
        ]
        assert first.cards[3].execution.to_dict()["errors"][0]["error"] == "RuntimeError: not done"
        again = batch.grade_all(grader, numpy_assignment, found.submissions, jobs=2, store=store)
        assert (again.ran, again.cached) == (0, 4)
        assert [c.to_dict() for c in again.cards] == [c.to_dict() for c in first.cards]
        forced = batch.grade_all(grader, numpy_assignment, found.submissions, jobs=2, store=store, force=True)
        assert (forced.ran, forced.cached) == (4, 0)


def test_a_batch_with_a_result_store_holds_keys_not_cards_and_reads_each_back_as_delivered(
    tmp_path, grader, numpy_assignment
):
    c = tmp_path / "class"
    same = submission(c / "alice.ipynb", tag="same")
    (c / "bob.ipynb").write_bytes(same.read_bytes())
    submission(c / "carol.ipynb", tag="carol", answers={"scaled_scores": "scores"})
    store = batch.ResultStore(tmp_path / "cache", numpy_assignment, batch.fingerprint(grader, numpy_assignment))
    delivered = []
    with batch.intake([c], numpy_assignment) as found:
        outcome = batch.grade_all(
            grader,
            numpy_assignment,
            found.submissions,
            jobs=2,
            store=store,
            on_card=lambda s, card: delivered.append(card),
        )
        graded = batch.Graded(found.submissions, outcome.cards)
    assert isinstance(outcome.cards, batch.Cards)
    assert all(type(item) is tuple for item in outcome.cards.items), "only keys, student and name kept"
    by_name = {card.submission: card.to_dict() for card in delivered}
    assert [card.to_dict() for card in outcome.cards] == [
        by_name[n] for n in ("alice.ipynb", "bob.ipynb", "carol.ipynb")
    ]
    assert [(p.name, name, card.student) for p, name, card in graded] == [
        ("alice.ipynb", "alice", "alice"),
        ("bob.ipynb", "bob", "bob"),
        ("carol.ipynb", "carol", "carol"),
    ]
    for f in store.dir.iterdir():
        f.unlink()
    with pytest.raises(GraderError, match="can no longer be read from the results in .*grade again"):
        outcome.cards[0]


def test_results_are_keyed_by_what_grading_depends_on(grader, numpy_assignment):
    from grader.judge.grading import Grader
    from grader.run.jupyter_executor import JupyterExecutor

    key = batch.fingerprint(grader, numpy_assignment)
    assert key == batch.fingerprint(grader, numpy_assignment)
    assert key != batch.fingerprint(Grader(grader.course, JupyterExecutor()), numpy_assignment)
    assert key != batch.fingerprint(grader, grader.course.assignment("attention_from_scratch"))


def test_a_slow_notebook_does_not_hold_up_the_others(tmp_path, grader, numpy_assignment):
    c = tmp_path / "class"
    c.mkdir()
    notebook_with(["import time\ntime.sleep(15)"], c / "a_slow.ipynb")  # nothing passes: no variant re-runs
    for i in range(6):
        # Right answers: three runs each (the notebook's data and two variants), no carry-forward
        # runs, so the six fit well within the slow one's time on the other worker, even under load.
        submission(c / f"quick{i}.ipynb", tag=f"quick {i}")
    finished = []
    with batch.intake([c], numpy_assignment) as found:
        outcome = batch.grade_all(
            grader, numpy_assignment, found.submissions, jobs=2, on_card=lambda s, card: finished.append(s.student)
        )
    assert finished[-1] == "a_slow" and len(finished) == 7
    assert all(card.status == "graded" for card in outcome.cards)


def test_many_notebooks_leave_no_descriptor_or_thread_behind(tmp_path, grader, numpy_assignment):
    c = tmp_path / "class"
    for i in range(16):  # mostly wrong answers: one run each, no variant re-runs
        submission(c / f"s{i:02d}.ipynb", tag=f"s{i}", answers={"Q": "X @ W_q"} if i % 4 else {})
    with batch.intake([c], numpy_assignment) as found:
        batch.grade_all(grader, numpy_assignment, found.submissions[:2], jobs=3)  # warm up
        grader.executor.end_kept()  # the solution's sandboxes kept for reuse: as many as ran at once
        grader.executor.settle()
        fds, threads = len(os.listdir("/proc/self/fd")), threading.active_count()
        outcome = batch.grade_all(grader, numpy_assignment, found.submissions, jobs=3)
        grader.executor.end_kept()
        grader.executor.settle()  # finished notebooks are ended in the background
    assert [card.score for card in outcome.cards].count(11) == 4
    assert len(os.listdir("/proc/self/fd")) == fds
    assert threading.active_count() == threads


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def course_dir(tmp_path, grader, course, numpy_assignment):
    """A course folder (linked to the real one) whose cache is the test session's: the reference
    values are computed once, and results are told apart by the submissions' distinct contents."""
    grader.references.get(numpy_assignment)
    d = tmp_path / "course"
    d.mkdir()
    for name in ("solutions", "assignments"):
        (d / name).symlink_to(ROOT / name)
    text = (ROOT / "config.yaml").read_text()
    (d / "config.yaml").write_text(text.replace("course:\n", f"course:\n  cache_dir: {course.cache_dir}\n", 1))
    return d


def stored(course, found: batch.Intake) -> int:
    """How many of these submissions have a stored result."""
    return sum(1 for s in found.submissions for _ in course.cache_dir.glob(f"results/*/{s.sha256}.json"))


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def nbgrader_class(root: Path, n: int) -> Path:
    for i in range(n):
        submission(
            root / f"submitted/student{i:02d}/attention_numpy/attention_numpy.ipynb",
            tag=f"student {i}",
            answers={} if i % 3 else {"scaled_scores": "scores / d_k"},
        )
    return root


def test_killed_batch_resumes_without_losing_or_regrading_anything(tmp_path, course_dir, course, numpy_assignment):
    exchange = nbgrader_class(tmp_path / "exchange", 8)
    found = batch.intake([exchange], numpy_assignment)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "grader.cli",
        "grade",
        str(exchange),
        "-a",
        "attention_numpy",
        "-o",
        str(out),
        "-j",
        "1",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=course_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and stored(course, found) < 2 and proc.poll() is None:
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    before = stored(course, found)
    assert 2 <= before < 8
    done = run_cli("grade", str(exchange), "-a", "attention_numpy", "-o", str(out), "-j", "2", cwd=course_dir)
    assert done.returncode == 0, done.stderr
    assert (
        f"{before} unchanged submission(s) taken from the results cache (--force grades them again)"
        in done.stdout.splitlines()
    )
    with open(out / "gradebook.csv", newline="") as f:
        book = list(csv.DictReader(f))
    assert [row["student"] for row in book] == [f"student{i:02d}" for i in range(8)]
    assert list(book[0])[:6] == ["student", "submission", "status", "score", "max_score", "percent"]
    assert {"qkv", "scores", "scaled", "softmax", "weights", "output"} <= set(book[0])
    assert [(row["score"], row["scaled"], row["status"]) for row in book[:3]] == [
        ("9", "0", "graded"),
        ("11", "2", "graded"),
        ("11", "2", "graded"),
    ]  # 9: only `scaled` lost, carried forward
    assert yaml.safe_load((out / "student00.yaml").read_text())["student"] == "student00"


def test_ctrl_c_stops_the_batch_at_once_and_keeps_what_is_done(tmp_path, course_dir, course, numpy_assignment):
    c = tmp_path / "class"
    submission(c / "a.ipynb", tag="a", answers={"Q": "X @ W_q"})
    submission(c / "b.ipynb", tag="b", answers={"Q": "X @ W_q"})
    submission(c / "c_sleeps.ipynb", tag="c", extra="import time\ntime.sleep(60)", answers={"Q": "X @ W_q"})
    submission(c / "d_sleeps.ipynb", tag="d", extra="import time\ntime.sleep(60)", answers={"Q": "X @ W_q"})
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
        "-j",
        "2",
    ]
    # Ctrl-C as a terminal delivers it: the grader starts with SIGINT's default action (a test that
    # ran earlier in this worker may have left it ignored, and an ignored SIGINT is inherited).
    proc = subprocess.Popen(
        cmd,
        cwd=course_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    found = batch.intake([c], numpy_assignment)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and stored(course, found) < 2:
        time.sleep(0.05)
    time.sleep(1.0)  # both sleeping notebooks are running now
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # where the grader is stuck: every thread's stack (faulthandler)
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the grader was still running 30 s after Ctrl-C:\n{err[-6000:]}")
    assert time.monotonic() - started < 10
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "grader: interrupted"
    assert sorted(p.name for p in (tmp_path / "out").glob("*.yaml")) == ["a.yaml", "b.yaml"]


def test_bad_jobs_value_is_a_usage_error(tmp_path, course_dir):
    proc = run_cli("grade", str(ROOT / "examples/attention_numpy"), "-j", "0", cwd=course_dir)
    assert (proc.returncode, proc.stderr.strip()) == (2, "grader: --jobs must be at least 1, got 0.")


def test_progress_is_plain_lines_without_a_terminal_and_a_bar_with_one():
    import io

    plain = io.StringIO()
    progress = batch.Progress(3, "attention_numpy", stream=plain)
    for _ in range(3):
        progress.advance()
    progress.close()
    assert plain.getvalue().splitlines() == ["attention_numpy: 3/3 graded (100%) in 0.0 s"]
    assert progress.line(progress.started + 20).startswith("attention_numpy: 3/3 graded (100%) in 20 s")
    halfway = batch.Progress(10, "a", stream=io.StringIO())
    halfway.advance(5)
    assert halfway.line(halfway.started + 5) == "a: 5/10 graded (50%), 1.0/s, about 5.0 s left"

    terminal = io.StringIO()
    bar = batch.Progress(4, "attention_numpy", stream=terminal, bar=True)
    bar.advance(4)
    bar.close()
    assert "4/4" in terminal.getvalue() and "attention_numpy" in terminal.getvalue()


def test_threads_parse_one_tree_at_a_time():
    """CPython 3.11 and 3.12 share the depth count of ``ast`` conversions between threads
    (python/cpython#106905): a batch's threads parse one at a time, the grader's tree compiles too."""
    import ast

    import grader  # noqa: F401  (installs the lock)

    done = threading.Event()
    with ast.parse.lock:
        parser = threading.Thread(target=lambda: (ast.parse("x = [1, (2, 3)]"), done.set()))
        parser.start()
        assert not done.wait(0.2)  # waits for the lock another thread holds
    assert done.wait(5)
    parser.join()
    assert ast.parse("y = 1").body[0].targets[0].id == "y"
