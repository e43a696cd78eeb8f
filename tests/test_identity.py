"""One identity per submission: derived once at intake from where it came from, and the roster
matched by it (a declared identity), never by a file name a student chose inside her own folder.

Intake reads files without grading them, so its tests use small files of distinct contents; the
roster's are run through ``grader grade --roster`` on a small course with one autograded question.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import review_course
from conftest import ROOT

from grader import batch
from grader.errors import UsageError
from grader.judge.scorecard import Scorecard
from grader.outputs import roster as roster_module
from grader.vocab import SubmissionStatus

URL_SAFE = re.compile(r"[A-Za-z0-9._~%/-]+")


def put(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"cells": [], "note": "%s"}' % (text or path.as_posix()))
    return path


def ids(found: batch.Intake) -> dict[str, str]:
    """origin -> id."""
    return {s.origin: s.id for s in found.submissions}


# -- intake ---------------------------------------------------------------------------------


def test_an_id_is_where_the_submission_came_from(tmp_path, numpy_assignment):
    c = tmp_path / "class"
    put(c / "alice.ipynb")
    put(c / "Zoë Ng.ipynb")  # a name with a space and a letter outside ASCII
    put(c / "attention_numpy/gus.ipynb")  # a subfolder named after the assignment
    put(c / "carol/bob.ipynb")  # carol's notebook, named after a classmate
    put(c / "dave/attention_numpy.ipynb")
    put(c / "dave/scratch.ipynb")  # the one named after the assignment is graded
    put(c / "frank/a.ipynb")
    put(c / "frank/part 2/b.ipynb")  # several, none named after the assignment: each a row
    with batch.intake([c], numpy_assignment) as found:
        got = {(s.student, s.id) for s in found.submissions}
        assert got == {
            ("alice", "alice"),
            ("Zoë Ng", "Zo%C3%AB%20Ng"),
            ("gus", "attention_numpy/gus"),
            ("carol", "carol"),
            ("dave", "dave"),
            ("frank", "frank/a"),
            ("frank", "frank/part%202/b"),
        }
        assert all(URL_SAFE.fullmatch(s.id) for s in found.submissions)
        carol = next(s for s in found.submissions if s.student == "carol")
        assert carol.path.name == "bob.ipynb" and carol.id == "carol" and carol.name == "carol"
    with batch.intake([c / "alice.ipynb"], numpy_assignment) as found:  # a file named: its name
        assert [s.id for s in found.submissions] == ["alice"]


def test_ids_stay_as_they_are_when_submissions_are_added(tmp_path, numpy_assignment):
    c = tmp_path / "class"
    for name in ("bob", "cy", "dee"):
        put(c / f"{name}.ipynb")
    put(c / "erin/attention_numpy.ipynb")
    put(c / "gus/hw.ipynb")
    with batch.intake([c], numpy_assignment) as found:
        before = ids(found)
        places = [s.id for s in found.submissions]
    # A late submission that sorts before everyone, a new student's folder, a second notebook in
    # erin's folder (hers is still the one named after the assignment), an nbgrader-like sibling.
    put(c / "aaron.ipynb")
    put(c / "abe/attention_numpy.ipynb")
    put(c / "erin/notes.ipynb")
    with batch.intake([c], numpy_assignment) as found:
        after = ids(found)
        assert {o: after[o] for o in before} == before  # no one else's id moved
        assert [s.id for s in found.submissions][: len(places)] != places  # while their places did
        assert after[f"{c}/aaron.ipynb"] == "aaron" and after[f"{c}/abe/attention_numpy.ipynb"] == "abe"


def test_a_zip_gives_the_ids_of_the_folder_it_holds(tmp_path, numpy_assignment):
    c = tmp_path / "class"
    put(c / "lee.ipynb")
    put(c / "mia/attention_numpy.ipynb")
    put(c / "ned/a.ipynb")
    put(c / "ned/b.ipynb")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in sorted(c.rglob("*.ipynb")):
            zf.write(f, f.relative_to(tmp_path).as_posix())  # class/lee.ipynb, ...
    bare = tmp_path / "bare.zip"
    with zipfile.ZipFile(bare, "w") as zf:
        for f in sorted(c.rglob("*.ipynb")):
            zf.write(f, f.relative_to(c).as_posix())  # lee.ipynb, ... at the top
    with batch.intake([c], numpy_assignment) as found:
        folder = sorted((s.student, s.id) for s in found.submissions)
    for given in (archive, bare):
        with batch.intake([given], numpy_assignment) as found:
            assert sorted((s.student, s.id) for s in found.submissions) == folder
    assert folder == [("lee", "lee"), ("mia", "mia"), ("ned", "ned/a"), ("ned", "ned/b")]


def test_nbgrader_ids_are_its_student_folders(tmp_path, numpy_assignment):
    course = tmp_path / "course"
    put(course / "submitted/ivan/attention_numpy/attention_numpy.ipynb")
    put(course / "submitted/judy/attention_numpy/my answers.ipynb")
    put(course / "submitted/kim/attention_numpy/one.ipynb")
    put(course / "submitted/kim/attention_numpy/two.ipynb")
    for given in (course, course / "submitted"):
        with batch.intake([given], numpy_assignment) as found:
            assert [(s.student, s.id) for s in found.submissions] == [
                ("ivan", "ivan"),
                ("judy", "judy"),
                ("kim", "kim/one"),
                ("kim", "kim/two"),
            ]


def test_two_submissions_with_one_id_are_an_error_naming_both(tmp_path, numpy_assignment):
    c = tmp_path / "class"
    put(c / "alice.ipynb")
    put(c / "alice/attention_numpy.ipynb")
    with pytest.raises(UsageError) as err:
        batch.intake([c], numpy_assignment)
    assert f"{c}/alice.ipynb and {c}/alice/attention_numpy.ipynb would both be 'alice'" in str(err.value)
    other = tmp_path / "other"
    put(other / "bob.ipynb")
    put(tmp_path / "again/bob.ipynb")
    with pytest.raises(UsageError, match="would both be 'bob'"):
        batch.intake([other, tmp_path / "again"], numpy_assignment)
    proc = subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", str(c), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "Two submissions of this run have the same id" in proc.stderr and "would both be 'alice'" in proc.stderr


# -- the roster -----------------------------------------------------------------------------


def card(student: str, sid: str, file: str, score: float) -> Scorecard:
    return Scorecard(
        assignment="rv",
        submission=file,
        sha256="",
        status=SubmissionStatus.GRADED,
        score=score,
        max_score=2,
        student=student,
        id=sid,
    )


def roster(tmp_path: Path, text: str) -> roster_module.Roster:
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return roster_module.load(path)


def test_a_roster_row_is_matched_by_declared_identity_only(tmp_path):
    r = roster(
        tmp_path,
        "name,github,sis_login_id,submission\nAlice,alice-gh,alice,\nBob,bob,bob,\nCy,cy,,\nDee,,,dee/b\n",
    )
    cards = [
        ("alice", card("alice", "alice", "bob.ipynb", 2)),  # in alice's folder, named after bob
        ("bob", card("bob", "bob", "hw.ipynb", 1)),
        ("cy", card("cy", "cy", "cy.ipynb", 0.5)),
        ("dee-b", card("dee", "dee/b", "b.ipynb", 1.5)),  # by its id in the submission column
        ("zed", card("zed", "zed", "zed.ipynb", 2)),
    ]
    placed = r.match(cards, lambda c: c.score)
    assert placed.rows == {0: 2, 1: 1, 2: 0.5, 3: 1.5}
    assert placed.unknown == ["'zed'"] and placed.conflicts == []
    # The name of the file is no identity: a card that only the old rule would place is unknown.
    assert r.match([("x", card("", "x", "bob.ipynb", 1))], lambda c: c.score).unknown == ["'x'"]


def test_two_rows_for_one_submission_or_two_submissions_for_one_row_is_a_conflict_naming_both(tmp_path):
    r = roster(
        tmp_path,
        "name,github,email,submission\nAda,ada,ada@uni.edu,\nAda Again,,,ada\nBob,bob,,\nCy,cy,,\n",
    )
    cards = [
        ("ada", card("ada", "ada", "ada.ipynb", 2)),
        ("bob-a", card("bob", "bob/a", "a.ipynb", 1)),
        ("bob-b", card("bob", "bob/b", "b.ipynb", 2)),
        ("cy", card("cy", "cy", "cy.ipynb", 0.5)),
    ]
    placed = r.match(cards, lambda c: c.score)
    assert placed.rows == {3: 0.5}  # cy only: nothing for the others, and no row of theirs filled
    assert placed.conflicts == [
        "submission 'ada' matches row 2 (Ada) and row 3 (Ada Again) of roster.csv",
        "row 4 (Bob) of roster.csv is matched by submission 'bob/a' (bob-a) and submission 'bob/b' (bob-b)",
    ]


# -- end to end: grader grade --roster ------------------------------------------------------

ONE_QUESTION = review_course.CONFIG[: review_course.CONFIG.index("      - id: explain")].replace(
    "[yaml, json, md, gradescope, gradebook, report]", "[yaml, gradebook]"
)


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A class in a folder per student: ada's notebook is named bob.ipynb (right answer), bob's is
    rv.ipynb (wrong answer), cy's cy.ipynb (right), and dee handed in two (a.ipynb, b.ipynb)."""
    root = review_course.build(tmp_path_factory.mktemp("roster"))
    (root / "config.yaml").write_text(ONE_QUESTION)
    assert grader("assign", cwd=root).returncode == 0
    skeleton = root / "assignments/rv/rv.ipynb"
    c = root / "class"
    for who, file, mean in (
        ("ada", "bob", "x.mean()"),
        ("bob", "rv", "x.sum()"),
        ("cy", "cy", "x.mean()"),
        ("dee", "a", "x.mean()"),
        ("dee", "b", "x.sum()"),
    ):
        (c / who).mkdir(parents=True, exist_ok=True)
        review_course.student(skeleton, c / who / f"{file}.ipynb", mean=mean)
    return root


def canvas_rows(out: Path) -> dict[str, str]:
    rows = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    return {r[0]: r[5] for r in rows[2:]}


def test_a_notebook_named_after_a_classmate_gets_its_students_row(folders):
    (folders / "roster.csv").write_text(
        "name,email,github,lms_id,sis_login_id\n"
        "Ada Lovelace,ada@uni.edu,ada-l,101,ada\n"
        "Bob Moses,bob@uni.edu,bob,102,bmoses\n"
        "Cy Young,cy@uni.edu,cy,103,cyoung\n"
    )
    proc = grader(
        "grade", "class", "--out", "out", "--formats", "yaml,canvas,moodle",
        "--roster", "roster.csv", cwd=folders,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ada's file is bob.ipynb: ada's score (2) is in ada's row, bob's own (0) in his.
    assert canvas_rows(folders / "out") == {"Ada Lovelace": "2", "Bob Moses": "0", "Cy Young": "2"}
    moodle = {
        r["Email address"]: r["Reading a mean"]
        for r in csv.DictReader(io.StringIO(Path(folders / "out/moodle.csv").read_text(encoding="utf-8")))
    }
    assert moodle == {"ada@uni.edu": "2", "bob@uni.edu": "0", "cy@uni.edu": "2"}  # dee is not on this roster


def test_a_real_ambiguity_is_an_error_naming_both_and_the_rest_is_written(folders):
    (folders / "roster.csv").write_text(
        "name,email,github,sis_login_id,submission\n"
        "Ada Lovelace,ada@uni.edu,ada,,\n"
        "Bob Moses,bob@uni.edu,bob,,\n"
        "Cy Young,cy@uni.edu,cy,,\n"
        "Cy Young (again),cy2@uni.edu,,cy,\n"
        "Dee Absent,dee@uni.edu,dee,,\n"
    )
    proc = grader(
        "grade", "class", "--out", "both", "--formats", "yaml,gradebook,canvas,moodle", "--roster", "roster.csv",
        cwd=folders,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    for expected in (
        "canvas.csv is written without 2 conflict(s)",
        "moodle.csv is written without 2 conflict(s)",
        "submission 'cy' matches row 4 (Cy Young) and row 5 (Cy Young (again)) of roster.csv",
        "row 6 (Dee Absent) of roster.csv is matched by submission 'dee/a' (dee-a) and submission 'dee/b' (dee-b)",
    ):
        assert expected in proc.stderr, proc.stderr
    out = folders / "both"
    assert canvas_rows(out) == {
        "Ada Lovelace": "2",
        "Bob Moses": "0",
        "Cy Young": "",
        "Cy Young (again)": "",
        "Dee Absent": "",
    }
    moodle = {
        r["Email address"]: r["Reading a mean"]
        for r in csv.DictReader(io.StringIO(Path(out / "moodle.csv").read_text(encoding="utf-8")))
    }
    assert moodle == {"ada@uni.edu": "2", "bob@uni.edu": "0"}
    book = {r["student"] for r in csv.DictReader(io.StringIO(Path(out / "gradebook.csv").read_text(encoding="utf-8")))}
    assert book == {"ada", "bob", "cy", "dee"}  # every other file is written, with everyone
    assert {p.name for p in out.glob("*.yaml")} == {"ada.yaml", "bob.yaml", "cy.yaml", "dee-a.yaml", "dee-b.yaml"}
