"""Each student's own data (``per_student:``): a notebook per student from a roster, signed; graded
on the data of who handed it in, so a classmate's notebook, an edited id or the generic skeleton
earns nothing for answers that depend on the data, and says which; the same on Gradescope's layout
and in ``grader check``; bad rosters and configs stop before anything is written."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml
from per_student_course import CONFIG, CORRECT, NAME, ONE_MISTAKE, build

from grader.authoring import per_student as authoring
from grader.authoring.public import load as load_public
from grader.authoring.validate import validate
from grader.cli import main
from grader.course import config
from grader.errors import ConfigError, UsageError
from grader.judge import per_student
from grader.judge.grading import Grader
from grader.packaging import classroom50, gradescope
from grader.run.subprocess_executor import SubprocessExecutor
from grader.selfcheck import check_notebook
from grader.testing import fill, write
from grader.vocab import StudentDataStatus

CLASSMATE, EDITED, GENERIC, MISTAKE = "s026", "s028", "s024", "s025"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """The course, its skeleton and 30 students' notebooks (``grader assign --per-student``)."""
    root = tmp_path_factory.mktemp("per_student")
    build(root)
    assert main(["assign", "--config", str(root / "config.yaml")]) == 0
    code = main(
        [
            "assign",
            NAME,
            "--config",
            str(root / "config.yaml"),
            "--per-student",
            str(root / "roster.csv"),
            "--out",
            str(root / "students"),
        ]
    )
    assert code == 0
    return root


@pytest.fixture(scope="module")
def course(made) -> config.Course:
    return config.load(made / "config.yaml")


@pytest.fixture(scope="module")
def grader(course) -> Grader:
    return Grader(course)


def own(made: Path, sid: str) -> Path:
    return made / "students" / sid / f"{NAME}.ipynb"


def hand_in(made: Path, folder: Path) -> dict[str, Path]:
    """The class's submissions, one folder each: all right but one mistake, a classmate's notebook
    (s026 hands in s027's), an id edited (s028 takes s029's and writes its own id), the skeleton."""
    out = {}
    for k in range(30):
        sid = f"s{k:03d}"
        if sid == CLASSMATE:
            nb = fill(own(made, "s027"), CORRECT)
        elif sid == EDITED:
            nb = fill(own(made, "s029"), CORRECT)
            nb.metadata["grader"]["student"]["id"] = sid
        elif sid == GENERIC:
            nb = fill(made / "assignments" / NAME / f"{NAME}.ipynb", CORRECT)
        else:
            nb = fill(own(made, sid), ONE_MISTAKE if sid == MISTAKE else CORRECT)
        out[sid] = write(nb, folder / sid / f"{NAME}.ipynb")
    return out


def data_cell(path: Path) -> str:
    return next(c.source for c in nbformat.read(str(path), as_version=4).cells if "sentence =" in c.source)


def test_each_student_gets_their_own_signed_data_and_the_same_roster_gives_the_same_notebooks(made, course, tmp_path):
    a, b = own(made, "s000"), own(made, "s001")
    assert data_cell(a) != data_cell(b)
    assert data_cell(a).startswith("sentence = '") and "seed = " in data_cell(a)
    stamp = json.loads(a.read_text())["metadata"]["grader"]["student"]
    assert stamp["id"] == "s000" and stamp["assignment"] == NAME and len(stamp["signature"]) == 32
    secret = Grader(course).references.variant_secret()
    again = authoring.write_per_student(
        course.assignment(NAME), made / "roster.csv", tmp_path / "again", secret, lambda f: []
    )
    assert len(again) == 30
    assert all(p.read_bytes() == own(made, p.parent.name).read_bytes() for p in again)
    # the public checks of a student's folder hold no reference value, and no shape that differs per student
    public = json.loads((a.parent / "public_checks.json").read_text())
    checks = {c["target"]: c for q in public["questions"] for c in q["checks"]}
    assert not any("value" in c for c in checks.values())
    assert "shape" not in checks["lengths"] and "shape" not in checks["norms"]


def test_a_class_of_30_grades_right_in_a_batch(made, tmp_path):
    hand_in(made, tmp_path / "class")
    out = tmp_path / "out"
    assert main(["grade", str(tmp_path / "class"), "--config", str(made / "config.yaml"), "--out", str(out)]) == 0
    cards = {p.stem: yaml.safe_load(p.read_text()) for p in out.glob("s*.yaml")}
    assert len(cards) == 30
    honest = [s for s in cards if s not in (CLASSMATE, EDITED, GENERIC, MISTAKE)]
    assert all(cards[s]["score"] == 4 and cards[s]["student_data"]["status"] == "own" for s in honest)
    assert cards[MISTAKE]["score"] == 3
    for sid, status in ((CLASSMATE, "classmate"), (EDITED, "edited"), (GENERIC, "generic")):
        assert cards[sid]["score"] == 0, (sid, cards[sid])
        assert cards[sid]["student_data"] == {
            "status": status,
            "notebook_id": {CLASSMATE: "s027", EDITED: EDITED, GENERIC: ""}[sid],
            "expected": sid,
            "graded_on": sid,
            "own_data": False,
        }
    assert "made for another student (s027)" in cards[CLASSMATE]["reason"]
    assert "id in this notebook's metadata was changed" in cards[EDITED]["reason"]
    assert "generic notebook" in cards[GENERIC]["reason"]
    with open(out / authoring.FLAGS_FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["submission"]: r["status"] for r in rows} == {
        CLASSMATE: "classmate",
        EDITED: "edited",
        GENERIC: "generic",
    }


def test_a_notebook_with_nobodys_data_or_of_another_assignment_is_not_paid(made, grader, course, tmp_path):
    a = course.assignment(NAME)
    edited = fill(own(made, "s003"), CORRECT)
    edited.metadata["grader"]["student"]["id"] = "s004"
    card = grader.grade(a, write(edited, tmp_path / f"{NAME}.ipynb"))  # no folder says who handed it in
    assert card.score == 0 and card.student_data is not None and card.student_data.graded_on == ""
    assert all(q.status == "failed" for q in card.questions)
    other = fill(own(made, "s003"), CORRECT)
    other.metadata["grader"]["student"]["assignment"] = "another_one"
    card = grader.grade(a, write(other, tmp_path / "s003" / f"{NAME}.ipynb"), student="s003")
    assert card.score == 0 and card.student_data.status == StudentDataStatus.OTHER_ASSIGNMENT
    assert "made for another assignment" in card.reason


def test_an_id_edited_in_the_students_own_notebook_is_told_and_keeps_its_points(made, grader, course, tmp_path):
    nb = fill(own(made, "s006"), CORRECT)
    nb.metadata["grader"]["student"]["id"] = "s007"
    card = grader.grade(course.assignment(NAME), write(nb, tmp_path / "s006" / f"{NAME}.ipynb"), student="s006")
    assert card.score == 4 and card.student_data.status == "edited" and card.student_data.own_data
    assert "no longer matches its signature" in card.reason


def test_a_signed_notebook_alone_is_graded_on_its_own_data(made, grader, course, tmp_path):
    card = grader.grade(course.assignment(NAME), write(fill(own(made, "s005"), CORRECT), tmp_path / f"{NAME}.ipynb"))
    assert card.score == 4 and card.student_data.status == "own" and card.student_data.graded_on == "s005"


def test_gradescope_grades_on_the_data_of_the_users_its_metadata_names(made, course, grader, tmp_path, monkeypatch):
    # the container's fresh process per run, here the module's warm executor: the same runs, cheaper
    monkeypatch.setattr("grader.run.subprocess_executor.SubprocessExecutor", lambda: grader.executor)
    staged = tmp_path / "source" / "course"
    gradescope.stage_grading(course, course.assignment(NAME), staged, solution_steps=True)
    # the container has the secret the zip carries, not the test suite's
    monkeypatch.delenv("GRADER_VARIANT_SECRET")
    secret = config.load(staged / "config.yaml").cache_dir / "variant-secret"
    assert secret.stat().st_mode & 0o077 == 0
    scores = {}
    for sid, source in (("s010", own(made, "s010")), ("s011", own(made, "s012"))):
        root = tmp_path / sid
        write(fill(source, CORRECT), root / "submission" / f"{NAME}.ipynb")
        users = [{"email": f"{sid}@uni.example", "id": 42, "name": "A Student", "sid": sid}]
        (root / "submission_metadata.json").write_text(json.dumps({"id": 1, "users": users}))
        results = json.loads(gradescope.run(root, staged / "config.yaml", NAME).read_text())
        scores[sid] = (results["score"], results.get("output", ""))
    assert scores["s010"][0] == 4
    assert scores["s011"][0] == 0 and "made for another student (s012)" in scores["s011"][1]
    assert gradescope.submitters(tmp_path / "s010") == ("s010@uni.example", "s010", "42")


def test_classroom50_grades_from_the_rosters_table_without_the_secret_or_the_solution(
    made, course, grader, tmp_path, monkeypatch
):
    monkeypatch.setattr("grader.run.subprocess_executor.SubprocessExecutor", lambda: grader.executor)
    with pytest.raises(UsageError, match="give --roster"):
        classroom50.build_folder(course, course.assignment(NAME), tmp_path / "c50")
    folder = classroom50.build_folder(course, course.assignment(NAME), tmp_path / "c50", roster=made / "roster.csv")
    staged = folder / "course"
    assert not list(staged.rglob("variant-secret")) and not list(staged.rglob("solutions"))
    monkeypatch.delenv("GRADER_VARIANT_SECRET")
    got = {}
    for owner, source in (("s010", "s010"), ("s011", "s012"), ("zz99", "s005")):
        checkout = tmp_path / owner
        write(fill(own(made, source), CORRECT), checkout / f"{NAME}.ipynb")
        result = json.loads(classroom50.run(checkout, staged / "config.yaml", NAME, env={"OWNER": owner}).read_text())
        got[owner] = (result["score"], (checkout / classroom50.BODY).read_text())
    assert got["s010"][0] == 4
    assert got["s011"][0] == 0 and "made for another student (s012)" in got["s011"][1]
    assert got["zz99"][0] == 0 and "not on the roster" in got["zz99"][1]


def test_grader_check_runs_the_public_checks_on_the_students_own_data(made, tmp_path):
    path = write(fill(own(made, "s007"), CORRECT), tmp_path / "s007" / f"{NAME}.ipynb")
    shutil.copy(own(made, "s007").parent / "public_checks.json", path.parent)
    # as `grader check` runs it: a fresh process (the warm server's default list would start torch)
    verdicts = check_notebook(path, load_public(path.parent / "public_checks.json"), executor=SubprocessExecutor())
    assert [v.status for v in verdicts] == ["passed"] * 3


def test_validate_passes_and_reports_a_draw_that_changes_no_answer(made, course, grader, tmp_path):
    assert validate(course, course.assignment(NAME), grader) == []
    root = tmp_path / "same"
    build(root, students=2)
    text = CONFIG.replace('seed: "int(rng.integers(1, 10_000))"', 'seed: "7"')
    text = (
        text.split("        sentence: [")[0]
        + '        sentence: ["the quick brown fox jumps", "the quick  brown fox jumps"]\n'
        + text.split('lining", "fortune favours the bold"]\n')[1]
    )
    (root / "config.yaml").write_text(text)
    same = config.load(root / "config.yaml")
    main(["assign", "--config", str(root / "config.yaml")])
    problems = validate(same, same.assignment(NAME))
    assert problems and all("changes no answer" in p for p in problems), problems


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("per_student: {inputs: {words: [a, b]}}", "per_student.inputs.words is not a given input"),
        ("per_student: {inputs: {seed: [1, 1]}}", "at least two different values"),
        ("per_student: {inputs: {seed: 'rng.integers(('}}", "is not a Python expression"),
        ("per_student: {inputs: {}}", "must map at least one given input"),
        ("per_student: {rules: {}}", "is not a known key"),
    ],
)
def test_a_bad_per_student_section_names_its_key(tmp_path, section, message):
    build(tmp_path, students=1)
    text = (
        CONFIG.split("    per_student:")[0] + "    " + section + "\n    questions:" + CONFIG.split("    questions:")[1]
    )
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        config.load(tmp_path / "config.yaml")


def test_keep_and_per_student_do_not_mix(tmp_path):
    build(tmp_path, students=1)
    (tmp_path / "config.yaml").write_text(CONFIG.replace('seed: "int(rng.integers(0, 1000))"', "seed: keep"))
    with pytest.raises(ConfigError, match="a student's own input must be varied too"):
        config.load(tmp_path / "config.yaml")


@pytest.mark.parametrize(
    ("roster", "message"),
    [
        ("id,name\ns1,A\ns2,B\ns1,C\n", "lists the id 's1' twice \\(rows 2 and 4\\)"),
        ("id,name\ns1,A\n,B\n", "row 3, has no id"),
        ("name,mail\nA,a@x\n", "has no id column"),
        ("id\n", "lists no students"),
        ("id\n../up\n", "cannot name a folder"),
    ],
)
def test_a_bad_roster_writes_nothing(made, course, tmp_path, roster, message, capsys):
    path = tmp_path / "roster.csv"
    path.write_text(roster)
    out = tmp_path / "students"
    args = ["assign", NAME, "--config", str(made / "config.yaml"), "--per-student", str(path), "--out", str(out)]
    assert main(args) == 2
    assert message.replace("\\", "") in capsys.readouterr().err.replace("\\", "")
    assert not out.exists() and not list(tmp_path.glob(".students*"))


def test_a_stamp_tells_own_classmate_edited_and_generic_apart(course):
    a = course.assignment(NAME)
    secret = b"s" * 40
    stamp = per_student.stamp(secret, NAME, "s1")
    assert per_student.identify(stamp, a, secret, "s1").status == "own"
    assert per_student.identify(stamp, a, secret, "").graded_on == "s1"
    assert per_student.identify(stamp, a, secret, "s2").status == "classmate"
    assert per_student.identify({**stamp, "id": "s2"}, a, secret, "s2").status == "edited"
    assert per_student.identify(stamp, a, b"t" * 40, "s1").status == "edited"  # another course's secret
    assert per_student.identify(None, a, secret, "s1").status == "generic"
    assert per_student.draw(a, secret, "s1") == per_student.draw(a, secret, "s1") != per_student.draw(a, secret, "s2")
