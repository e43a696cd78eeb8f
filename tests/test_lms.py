"""Grades from and back to the LMS: Canvas's, Moodle's and Gradescope's downloads read as they are,
the late policy at its boundaries, and the files that go back named and headed as each LMS documents.

The downloads here are built from the LMSs' documented schemes (``grader.batch.lms`` quotes them);
intake reads files without grading them, so its tests use small files of distinct contents. One
Canvas class and one Moodle class are graded end to end, on the one-question course of the roster's
tests (``review_course``).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import zipfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import review_course
import yaml

from grader import batch
from grader.course import late
from grader.judge import document
from grader.judge.scorecard import Origin, QuestionResult, Scorecard, with_late, with_questions
from grader.vocab import QuestionStatus, SubmissionStatus

ZURICH = ZoneInfo("Europe/Zurich")
DUE = datetime(2026, 3, 6, 23, 59, tzinfo=ZURICH)
H = 3600.0
DAY = 86400.0


def policy(**kw: object) -> late.LatePolicy:
    base: dict[str, object] = {"due": DUE, "zone": ZURICH, "grace": 15 * 60, "rate": 10.0, "per": "day", "cap": 30.0}
    base.update(kw)
    return late.LatePolicy(**base)  # type: ignore[arg-type]


def at(seconds_after_due: float) -> datetime:
    return DUE + timedelta(seconds=seconds_after_due)


# -- the late policy, at its boundaries -----------------------------------------------------


@pytest.mark.parametrize(
    ("after", "percent"),
    [
        (-60, 0),  # on time
        (0, 0),  # at the due minute
        (15 * 60, 0),  # the last second of grace
        (15 * 60 + 1, 10),  # past the grace: the first (started) day
        (DAY, 10),  # exactly one day
        (DAY + 1, 20),  # a second day started
        (DAY + 3 * H, 20),
        (3 * DAY, 30),
        (5 * DAY, 30),  # past the cap
    ],
)
def test_each_started_day_takes_its_share_up_to_the_cap(after, percent):
    record = policy().judge(at(after))
    assert record.percent == percent
    assert record.score_after(8.0, 10.0) == pytest.approx(8.0 - 10.0 * percent / 100)


def test_whole_days_only_when_the_policy_counts_completed_days():
    p = policy(started=False)
    assert [p.judge(at(s)).percent for s in (DAY - 1, DAY, DAY + 3 * H, 2 * DAY)] == [0, 10, 10, 20]


def test_the_late_line_says_how_late_what_is_taken_and_the_policy():
    record = policy(started=False).judge(at(DAY + 3 * H))
    assert record.line(10.0, 10.0) == (
        "submitted 1 day 3 h late: −10 % (−1 points; policy: 10 % a day, at most 30 %, 15 min of grace)"
    )
    assert policy().judge(at(-60)).line(10.0, 10.0).startswith("submitted on time (due 2026-03-06T23:59:00+01:00")
    assert "within the grace period, no penalty" in policy().judge(at(10 * 60)).line(10.0, 10.0)


def test_per_hour_and_the_floor():
    p = policy(per="hour", rate=5.0, cap=100.0, floor=60.0, grace=0.0)
    assert p.judge(at(H + 1)).percent == 10  # two started hours
    # 20 hours: 100 % of the points would be taken; the floor keeps 60 % of them, never more than earned.
    assert p.judge(at(20 * H)).score_after(9.0, 10.0) == 6.0
    assert p.judge(at(20 * H)).score_after(5.0, 10.0) == 5.0
    # Of the score earned instead of the points possible.
    assert policy(of_score=True).judge(at(DAY)).score_after(6.0, 10.0) == pytest.approx(5.4)


def test_an_extension_moves_the_due_date_for_that_student_only():
    p = policy(extensions=(("12345", "2 days"), ("ada", "2026-03-10T12:00+01:00")))
    ext = p.extension_for(("12345",))
    assert ext == DUE + timedelta(days=2)
    on_time = p.judge(at(DAY + 5 * H), extension=ext)
    assert on_time.percent == 0 and on_time.extended and "extended due" in on_time.line(1, 1)
    assert p.judge(at(2 * DAY + H), extension=ext).percent == 10
    assert p.extension_for(("Ada",)) == datetime(
        2026, 3, 10, 12, 0, tzinfo=late.parse_time("2026-03-10T12:00+01:00", None).tzinfo
    )
    assert p.extension_for(("bob",)) is None
    assert p.judge(at(DAY + 5 * H)).percent == 20  # without it


def test_not_accepted_after_is_zero_points_and_a_waiver_takes_nothing_off():
    p = policy(not_accepted_after=DUE + timedelta(days=7))
    assert p.judge(at(7 * DAY)).not_accepted is False
    record = p.judge(at(7 * DAY + 1))
    assert record.not_accepted and record.score_after(9.0, 10.0) == 0.0
    waived = late.waive(record, "ta@uni.edu", "2026-03-20T10:00:00+00:00", "illness")
    assert waived.score_after(9.0, 10.0) == 9.0 and "waived by ta@uni.edu: illness" in waived.line(9.0, 10.0)


def test_an_lms_marker_without_a_time_counts_as_configured():
    record = policy().judge(None, marked_by="Canvas")
    assert record.late_by == DAY and record.percent == 10
    assert record.line(10, 10).startswith("marked late by Canvas (counted as 1 day late)")
    assert policy(marked_late_counts_as=3 * H).judge(None, marked_by="Canvas").percent == 10


def test_clock_times_are_read_with_their_zone_or_refused():
    assert late.parse_time("2026-03-06 23:59:00.123456 UTC", None) == datetime(2026, 3, 6, 23, 59, 0, 123456, UTC)
    assert late.parse_time("2026-03-06T23:59:00-05:00", None).utcoffset() == timedelta(hours=-5)
    with pytest.raises(ValueError, match="has no time zone"):
        late.parse_time("2026-03-06 23:59", None)
    # A submission's time: with its zone, or in times_timezone; Moodle's worksheet dates (never with a
    # zone, written in the site's) in the course's; any other time without a zone is refused.
    assert late.submission_time("Friday, 6 March 2026, 11:59 PM", None, ZURICH) == DUE
    assert late.submission_time("2026-03-06T22:59:00Z", None, ZURICH) == DUE
    assert late.submission_time("2026-03-06 23:59", ZURICH, None) == DUE
    with pytest.raises(ValueError, match="set late.times_timezone"):
        late.submission_time("2026-03-06 23:59", None, ZURICH)
    assert late.parse_duration("1 day 3 h") == DAY + 3 * H
    with pytest.raises(ValueError):
        late.parse_duration("3")


def test_the_penalty_is_a_record_of_the_card_and_survives_a_persons_grade():
    q = QuestionResult("q", "Q", 4.0, 5.0, QuestionStatus.PARTIAL)
    card = Scorecard("a", "a.ipynb", "0" * 64, SubmissionStatus.GRADED, 4.0, 5.0, questions=(q,))
    origin = Origin("canvas", "12345", "smithjohn", "smithjohn_LATE_12345_99_a.ipynb", "smithjohn_LATE_12345_99_", True)
    late_card = with_late(replace(card, origin=origin), policy().judge(at(DAY)))
    assert late_card.score == pytest.approx(3.5)  # 10 % of 5 points
    again = with_questions(late_card, [replace(q, score=5.0, status=QuestionStatus.PASSED)])
    assert again.score == pytest.approx(4.5) and again.late == late_card.late
    data = json.loads(json.dumps(document.dump(again)))
    assert data["format_version"] == 3 and document.load(data) == again
    old = document.dump(card)
    old["format_version"] = 2
    assert document.load(old) == card  # a version 2 document is read as it is
    assert "−10 %" in again.to_dict()["late"]["line"]


# -- intake of the downloads ----------------------------------------------------------------


def nb(text: str) -> str:
    return json.dumps({"cells": [], "note": text})


def make_zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def by_student(found: batch.Intake) -> dict[str, batch.Submission]:
    return {s.student: s for s in found.submissions}


def test_a_canvas_download_is_read_by_its_user_ids(tmp_path, numpy_assignment):
    z = make_zip(
        tmp_path / "submissions.zip",
        {
            "smithjohn_12345_6789012_attention_numpy.ipynb": nb("first"),
            "smithjohn_LATE_12345_6789099_attention_numpy-1.ipynb": nb("again, late"),
            "doejane_22222_6789013_hw.ipynb": nb("jane"),
            "doejane_22222_6789014_data.csv": "x\n1\n",
            "obrienmary_LATE_33333_6789020_notebook.ipynb": nb("mary"),
            "my homework.ipynb": nb("renamed by hand"),
        },
    )
    with batch.intake([z], numpy_assignment) as found:
        got = by_student(found)
        assert set(got) == {"12345", "22222", "33333", "my homework"}
        john = got["12345"]
        assert john.path.name == "smithjohn_LATE_12345_6789099_attention_numpy-1.ipynb"  # the newest
        assert john.lms is not None and john.lms.marked_late and john.lms.name == "smithjohn"
        assert john.lms.earlier == ("smithjohn_12345_6789012_attention_numpy.ipynb",)
        assert john.id == "12345" and john.name == "smithjohn-12345"
        assert got["22222"].lms is not None and not got["22222"].lms.marked_late
        stray = got["my homework"].lms  # graded under its own name, said so, and no student of Canvas guessed
        assert stray is not None and stray.user_id == "" and stray.lms == "canvas"
        notes = "\n".join(found.notes)
        assert "graded the latest, smithjohn_LATE_12345_6789099_attention_numpy-1.ipynb" in notes
        assert "my homework.ipynb: its name does not follow Canvas's" in notes


def test_a_moodle_download_flat_or_in_folders_is_read_by_participant_ids(tmp_path, numpy_assignment):
    flat = make_zip(
        tmp_path / "flat.zip",
        {
            "John Smith_123456_assignsubmission_file_attention_numpy.ipynb": nb("john"),
            "John Smith_123456_assignsubmission_onlinetext_onlinetext.html": "<p>hi</p>",
            "Jane Doe_654321_assignsubmission_file_notebook.ipynb": nb("jane"),
        },
    )
    folders = make_zip(
        tmp_path / "folders.zip",
        {
            "John Smith_123456_assignsubmission_file_/attention_numpy.ipynb": nb("john 2"),
            "John Smith_123456_assignsubmission_file_/scratch.ipynb": nb("scratch"),
            "Participant_777777_assignsubmission_file/work.ipynb": nb("blind"),
        },
    )
    with batch.intake([flat], numpy_assignment) as found:
        got = by_student(found)
        assert set(got) == {"123456", "654321"}
        assert got["123456"].lms is not None and got["123456"].lms.prefix == "John Smith_123456_assignsubmission_file"
    with batch.intake([folders], numpy_assignment) as found:
        got = by_student(found)
        assert set(got) == {"123456", "777777"}
        john = got["123456"]
        assert john.path.name == "attention_numpy.ipynb" and john.lms is not None
        assert john.lms.earlier == ("scratch.ipynb",)
        assert got["777777"].lms is not None and got["777777"].lms.name == "Participant"
    one = make_zip(tmp_path / "one.zip", {"John Smith_123456_assignsubmission_file/rv.ipynb": nb("alone")})
    with batch.intake([one], numpy_assignment) as found:  # one student's folder is still Moodle's, not a class folder
        assert [(s.student, s.lms is not None) for s in found.submissions] == [("123456", True)]


GRADESCOPE_METADATA = """submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '2001'
    :email: ada@uni.edu
  :created_at: 2026-03-07 00:30:00.000000000 +01:00
  :score: 0.0
submission_102:
  :submitters:
  - :name: Pair One
    :sid: '2002'
    :email: one@uni.edu
  - :name: Pair Two
    :sid: '2003'
    :email: two@uni.edu
  :created_at: 2026-03-06 20:00:00.000000000 +01:00
"""


def test_a_gradescope_export_is_read_by_its_metadata(tmp_path, numpy_assignment):
    z = make_zip(
        tmp_path / "export.zip",
        {
            "assignment_55_export/submission_metadata.yml": GRADESCOPE_METADATA,
            "assignment_55_export/submission_101/attention_numpy.ipynb": nb("ada"),
            "assignment_55_export/submission_102/attention_numpy.ipynb": nb("pair"),
            "assignment_55_export/submission_999/attention_numpy.ipynb": nb("unlisted"),
        },
    )
    with batch.intake([z], numpy_assignment) as found:
        got = by_student(found)
        assert set(got) == {"2001", "2002", "submission_999"}
        ada = got["2001"].lms
        assert ada is not None and ada.email == "ada@uni.edu"
        assert late.parse_time(ada.submitted_at, None) == DUE + timedelta(minutes=31)
        assert got["2002"].lms is not None and got["2002"].lms.others == ("2003",)
        notes = "\n".join(found.notes)
        assert "a group submission of 2" in notes and "submission_999: a folder that submission_metadata.yml" in notes


# -- end to end: a Canvas and a Moodle download graded, files written back ------------------

ONE_QUESTION = review_course.CONFIG[: review_course.CONFIG.index("      - id: explain")].replace(
    "[yaml, json, md, gradescope, gradebook, report]", "[yaml, gradebook]"
)
LATE = """    late:
      due: 2026-03-06T23:59:00
      timezone: Europe/Zurich
      grace: 15 minutes
      penalty: 25%
      per: day
      cap: 50%
      extensions:
        "22222": 2 days
      times: {times}
"""


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def course_root(tmp_path_factory):
    root = review_course.build(tmp_path_factory.mktemp("lms"))
    (root / "config.yaml").write_text(ONE_QUESTION)
    assert grader("assign", cwd=root).returncode == 0
    return root


def notebook(root: Path, mean: str) -> str:
    out = root / "tmp.ipynb"
    review_course.student(root / "assignments/rv/rv.ipynb", out, mean=mean)
    return out.read_text()


def config_with(root: Path, times: str) -> None:
    text = ONE_QUESTION.replace("    questions:", LATE.format(times=times) + "    questions:", 1)
    (root / "config.yaml").write_text(text)


def test_a_canvas_download_grades_without_renaming_and_goes_back(course_root):
    root = course_root
    config_with(root, "lms")
    right, wrong = notebook(root, "x.mean()"), notebook(root, "x.sum()")
    make_zip(
        root / "submissions.zip",
        {
            "lovelaceada_101_9001_rv.ipynb": right,  # on time
            "mosesbob_LATE_102_9002_rv.ipynb": right,  # marked late: one day, 25 %
            "youngcy_103_9003_rv.ipynb": wrong,
            "youngcy_LATE_103_9010_rv-1.ipynb": right,  # the resubmission counts
            "doejane_LATE_22222_9004_rv.ipynb": right,  # late, but her extension covers it? no time: marker counts
            "absentdee_104_9005_rv.ipynb": right,  # not on the roster
        },
    )
    (root / "roster.csv").write_text(
        "name,lms_id,sis_user_id,sis_login_id,section\n"
        "Ada Lovelace,101,s1,ada,A\nBob Moses,102,s2,bob,A\nCy Young,103,s3,cy,B\nJane Doe,22222,s4,jane,B\n"
    )
    proc = grader(
        "grade", "submissions.zip", "--out", "canvas", "--formats", "yaml,gradebook,canvas", "--roster", "roster.csv",
        cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = root / "canvas"
    rows = list(csv.reader(io.StringIO((out / "canvas.csv").read_text())))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Reading a mean"]
    assert rows[1][0] == "Points Possible"
    assert {r[1]: r[5] for r in rows[2:]} == {"101": "2", "102": "1.5", "103": "1.5", "22222": "2"}
    bob = yaml.safe_load((out / "mosesbob-102.yaml").read_text())
    assert bob["score"] == 1.5 and bob["late"]["percent"] == 25
    assert bob["late"]["line"].startswith("marked late by Canvas (counted as 1 day late): −25 % (−0.5 points")
    jane = yaml.safe_load((out / "doejane-22222.yaml").read_text())
    assert jane["score"] == 2 and "extended due" in jane["late"]["line"]  # a day late is inside her 2 days
    cy = yaml.safe_load((out / "youngcy-103.yaml").read_text())
    assert cy["origin"]["not_graded"] == ["youngcy_103_9003_rv.ipynb"]
    assert "'104' (absentdee-104): not on roster.csv, so in no LMS file" in proc.stdout
    with zipfile.ZipFile(out / "canvas-feedback.zip") as zf:
        names = sorted(zf.namelist())
        assert names == [
            "absentdee_104_9005_rv-feedback.html",
            "doejane_LATE_22222_9004_rv-feedback.html",
            "lovelaceada_101_9001_rv-feedback.html",
            "mosesbob_LATE_102_9002_rv-feedback.html",
            "youngcy_LATE_103_9010_rv-1-feedback.html",
        ]
        assert "−25 %" in zf.read("mosesbob_LATE_102_9002_rv-feedback.html").decode()
    # Canvas's Re-Upload Submissions reads the user id and the file's id from the first two all-digit parts.
    assert [[p for p in n.split("_") if p.isdigit()][:2] for n in names][0] == ["104", "9005"]
    gradebook = list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text())))
    assert {r["student"]: r["late"][:9] for r in gradebook}["102"] == "marked la"


def moodle_class(root: Path) -> None:
    """Three students' notebooks as Moodle downloads them (a folder each), and the times Moodle
    lists for them, in ``root``: every test that reads them writes them first."""
    (root / "times.csv").write_text(
        "Identifier,Full name,Last modified (submission)\n"
        'Participant 500001,Ada Lovelace,"Friday, 6 March 2026, 11:50 PM"\n'
        'Participant 500002,Bob Moses,"Sunday, 8 March 2026, 11:00 AM"\n'
        'Participant 500003,Cy Young,"Thursday, 12 March 2026, 9:00 AM"\n'
    )
    right = notebook(root, "x.mean()")
    make_zip(
        root / "moodle.zip",
        {
            "Ada Lovelace_500001_assignsubmission_file_/rv.ipynb": right,
            "Bob Moses_500002_assignsubmission_file_/rv.ipynb": right,  # 1 day 11 h late: 2 days, 50 %
            "Cy Young_500003_assignsubmission_file/rv.ipynb": right,  # past the cap: 50 %
        },
    )


def test_a_moodle_download_in_folders_with_a_times_csv_goes_back_without_a_roster(course_root):
    root = course_root
    moodle_class(root)
    config_with(root, "times.csv")
    proc = grader("grade", "moodle.zip", "--out", "moodle", "--formats", "yaml,moodle", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = root / "moodle"
    rows = list(csv.DictReader(io.StringIO((out / "moodle-worksheet.csv").read_text())))
    assert list(rows[0]) == [
        "Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)", "Feedback comments",
    ]  # fmt: skip
    assert {r["Identifier"]: r["Grade"] for r in rows} == {
        "Participant 500001": "2",
        "Participant 500002": "1",
        "Participant 500003": "1",
    }
    assert "submitted 1 day 11 h late: −50 %" in rows[1]["Feedback comments"]
    with zipfile.ZipFile(out / "moodle-feedback.zip") as zf:
        assert sorted(zf.namelist()) == [
            "Ada Lovelace_500001_assignsubmission_file_rv-feedback.html",
            "Bob Moses_500002_assignsubmission_file_rv-feedback.html",
            "Cy Young_500003_assignsubmission_file_rv-feedback.html",
        ]
    # Moodle's importer: explode('_', name, 5); the participant id is the second part.
    assert {n.split("_", 4)[1] for n in zf.namelist()} == {"500001", "500002", "500003"}


def test_clock_times_without_a_zone_are_listed_and_nothing_is_written(course_root):
    root = course_root
    moodle_class(root)
    config_with(root, "times.csv")
    text = (root / "config.yaml").read_text()
    (root / "config.yaml").write_text(
        text.replace("      timezone: Europe/Zurich\n", "").replace(
            "due: 2026-03-06T23:59:00", "due: 2026-03-06T23:59:00+01:00"
        )
    )
    proc = grader("grade", "moodle.zip", "--out", "nozone", "--formats", "yaml,moodle", cwd=root)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot read 3 submission time(s); nothing was graded" in proc.stderr
    assert "times.csv line 2 (Participant 500001)" in proc.stderr and "has no time zone" in proc.stderr
    assert not (root / "nozone").exists()


def test_a_person_waives_the_penalty_in_the_review_page_and_it_is_recorded(tmp_path, course_root):
    from grader.course import config
    from grader.review import merge
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    q = QuestionResult("mean", "The mean", 2.0, 2.0, QuestionStatus.PASSED)
    card = with_late(
        Scorecard("rv", "rv.ipynb", "0" * 64, SubmissionStatus.GRADED, 2.0, 2.0, questions=(q,), id="102"),
        policy(rate=25.0).judge(at(DAY)),
    )
    store = GradeStore.in_folder(tmp_path)
    store.put_card("102", "mosesbob-102", tmp_path / "rv.ipynb", card)
    course = config.load(course_root / "config.yaml")
    http = make_app(Review(store, course, course.assignment("rv"), "Tess", "tok")).test_client()
    assert http.post("/api/waive/102", json={"waive": True, "reason": "ill"}).status_code == 403  # the token, as always
    said = http.post("/api/waive/102", json={"waive": True, "reason": "ill"}, headers={"X-Review-Token": "tok"}).json
    assert "waived by Tess: ill" in said["late"]
    waived = merge.with_grades(store, "102")
    assert waived.score == 2.0 and waived.late is not None and waived.late.waived_by == "Tess" and waived.late.waived_at
    assert document.load(document.dump(waived)) == waived  # kept in the card's document, with who and when
    http.post("/api/waive/102", json={"waive": False}, headers={"X-Review-Token": "tok"})
    assert merge.with_grades(store, "102").score == 1.5  # taken back: the penalty again


def test_the_review_page_shows_the_late_line_and_its_button(tmp_path):
    from grader.course import config
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    root = review_course.build(tmp_path / "course")
    course = config.load(root / "config.yaml")
    questions = (
        QuestionResult("mean", "The mean", 2.0, 2.0, QuestionStatus.PASSED),
        QuestionResult("explain", "Why", 0.0, 3.0, QuestionStatus.MANUAL),
    )
    card = with_late(
        Scorecard("rv", "rv.ipynb", "0" * 64, SubmissionStatus.GRADED, 2.0, 5.0, questions=questions, id="102"),
        policy(rate=25.0).judge(at(DAY)),
    )
    store = GradeStore.in_folder(tmp_path / "out")
    store.put_card("102", "mosesbob-102", root / "solutions/rv/rv.ipynb", card)
    http = make_app(Review(store, course, course.assignment("rv"), "Tess", "tok")).test_client()
    page = http.get("/grade/explain/102?token=tok")
    assert page.status_code == 200, page.text
    assert "Late: submitted 1 day late: −25 %" in page.text and "Waive the late penalty" in page.text


def test_the_files_going_back_are_named_and_headed_as_each_lms_reads_them():
    from grader.outputs import canvas, moodle

    q = QuestionResult("mean", "The mean", 2.0, 2.0, QuestionStatus.PASSED)
    base = Scorecard("rv", "rv.ipynb", "0" * 64, SubmissionStatus.GRADED, 2.0, 2.0, questions=(q,))
    john = replace(
        base,
        origin=Origin(
            "canvas", "12345", "smithjohn", "smithjohn_LATE_12345_678_rv-1.ipynb", "smithjohn_LATE_12345_678_"
        ),
    )
    stray = replace(base, origin=Origin("canvas", "", file="renamed.ipynb"))  # follows no scheme: no row, no file
    text = canvas.canvas_csv_from_download([("a", john), ("b", stray)], column="Reading a mean", points=2.0)
    assert text.splitlines() == [
        "Student,ID,SIS User ID,SIS Login ID,Section,Reading a mean",
        "Points Possible,,,,,2",
        "smithjohn,12345,,,,2",
    ]
    assert canvas.feedback_name(john) == "smithjohn_LATE_12345_678_rv-1-feedback.html"
    ada = replace(
        with_late(base, policy(rate=25.0).judge(at(DAY))),
        origin=Origin("moodle", "500001", "Ada Lovelace", "Ada Lovelace_500001_assignsubmission_file_/rv.ipynb",
                      "Ada Lovelace_500001_assignsubmission_file"),
    )  # fmt: skip
    flat = replace(
        base,
        origin=Origin("moodle", "500002", "Bob Moses", "Bob Moses_500002_assignsubmission_file_attention_numpy.ipynb",
                      "Bob Moses_500002_assignsubmission_file"),
    )  # fmt: skip
    sheet = list(
        csv.reader(io.StringIO(moodle.worksheet_csv([("a", ada), ("b", flat)], now=datetime(2026, 3, 9, 14, 5))))
    )
    assert sheet[0] == list(moodle.WORKSHEET)
    assert sheet[1][:5] == ["Participant 500001", "Ada Lovelace", "1.5", "2", "Monday, 09 March 2026, 02:05 PM"]
    assert "mean: 2/2" in sheet[1][5] and "−25 %" in sheet[1][5]
    assert moodle.feedback_name(ada) == "Ada Lovelace_500001_assignsubmission_file_rv-feedback.html"
    assert moodle.feedback_name(flat) == "Bob Moses_500002_assignsubmission_file_attention_numpy-feedback.html"
