"""Questions graded by a person: pending in every output, then graded through the review app's
store, its HTTP interface, its CSV import and export, and in a real browser (Chromium, if here).

One class of three submissions is graded once for the module (``graded``); tests that change
grades work on a copy of its output folder.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import review_course
import yaml

from grader.outputs import pages

HERE = Path(__file__).resolve().parent


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course with two questions graded by a person; ada answered both, bob one (tags dropped,
    a cell added, hostile HTML), cy none; graded once."""
    root = review_course.build(tmp_path_factory.mktemp("review"))
    assert grader("assign", cwd=root).returncode == 0
    skeleton = root / "assignments" / "rv" / "rv.ipynb"
    subs = root / "subs"
    subs.mkdir()
    review_course.student(
        skeleton, subs / "ada.ipynb", explain="Symmetric values around 2.", weights="A weighted mean."
    )
    review_course.student(
        skeleton,
        subs / "bob.ipynb",
        mean="2.0",
        explain="Because 10/5 = 2.",
        drop_tags=True,
        extra_cell="And a second thought.\n\n$\\bar x = \\frac{10}{5}$",
        hostile=True,
    )
    review_course.student(skeleton, subs / "cy.ipynb", mean="x.sum()")
    proc = grader(
        "grade", "subs", "--out", "out", "--formats", "yaml,json,md,html,gradescope,gradebook,report", cwd=root
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


def card(out: Path, name: str) -> dict:
    return yaml.safe_load((out / f"{name}.yaml").read_text())


def question(data: dict, qid: str) -> dict:
    return next(q for q in data["questions"] if q["id"] == qid)


def test_the_skeleton_keeps_the_answer_tag(graded):
    nb = json.loads((graded / "assignments/rv/rv.ipynb").read_text())
    prompts = [c for c in nb["cells"] if "answer" in c.get("metadata", {}).get("tags", [])]
    assert ["".join(c["source"]) for c in prompts] == ["YOUR ANSWER HERE"] * 2
    public = json.loads((graded / "assignments/rv/public_checks.json").read_text())
    assert [q.get("manual", False) for q in public["questions"]] == [False, True, True]


def test_self_check_says_an_untouched_answer_is_not_answered(graded, tmp_path):
    shutil.copy(graded / "subs/cy.ipynb", graded / "assignments/rv/cy.ipynb")
    proc = grader("check", "assignments/rv/cy.ipynb", cwd=graded)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1  # not answered yet
    assert any(line.startswith("⬜ explain") and line.endswith("not answered") for line in lines), proc.stdout
    assert "passes the public checks" not in next(line for line in lines if "weights" in line)
    assert "1 of 1 question passes the public checks. 0 of 2 graded by a person are answered." in proc.stdout
    shutil.copy(graded / "subs/ada.ipynb", graded / "assignments/rv/ada.ipynb")
    proc = grader("check", "assignments/rv/ada.ipynb", cwd=graded)
    assert proc.returncode == 0, proc.stdout
    assert "⏳ explain  Why the mean is 2: answered; a person grades it" in proc.stdout


def test_pending_in_every_output(graded):
    out = graded / "out"
    bob = card(out, "bob")
    explain = question(bob, "explain")
    assert explain["status"] == "manual" and explain["score"] == 0
    # The answer, found although bob's editor dropped the tag, with the cells bob added after it.
    assert explain["answer"]["found_by"] == "skeleton"
    assert explain["answer"]["text"].startswith("Because 10/5 = 2.\n\nAnd a second thought.")
    assert len(explain["answer"]["cells"]) == 4
    assert question(card(out, "ada"), "explain")["answer"]["found_by"] == "tag"
    untouched = question(card(out, "cy"), "weights")
    assert untouched["answer"]["text"] == "YOUR ANSWER HERE" and "not answered yet" in untouched["feedback"][0]
    # Markdown and HTML: waiting, placed after the answer (not "not found in the notebook").
    assert "| explain: Why the mean is 2 | ⏳ waiting for a person to grade it | 0/3 |" in (out / "bob.md").read_text()
    page = (out / "bob.html").read_text()
    assert "answers were not found" not in page
    assert page.index('id="question-explain"') > page.index("And a second thought.")
    assert 'class="grader-box grader-manual"' in page
    # Gradescope: a neutral test, no score, no failed status.
    tests = json.loads((out / "bob.gradescope.json").read_text())["tests"]
    pending = next(t for t in tests if t["name"].startswith("explain"))
    assert "status" not in pending and "score" not in pending and "waiting for a person" in pending["output"]
    # The gradebook marks it; the report leaves it out of pass rates and full marks.
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}
    assert rows["bob"]["explain"] == "pending" and rows["bob"]["mean"] == "2"
    report = (out / "report.html").read_text()
    assert "full marks: 2 ·" in report and "by a person: 0 of 3 graded" in report


@pytest.fixture
def run(graded, tmp_path):
    """A copy of the graded class's output folder, to change grades in."""
    out = tmp_path / "out"
    shutil.copytree(graded / "out", out)
    return out


def review(graded: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``grader review rv --out OUT ARGS`` run in this process (its modules are loaded already)."""
    import contextlib
    import os

    from grader.cli import main

    stdout, stderr, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(graded)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["review", "rv", "--out", str(out), "--grader", "Tess", *args])
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["grader", "review"], code, stdout.getvalue(), stderr.getvalue())


def test_grades_come_in_through_a_spreadsheet_and_reach_every_output(graded, run, tmp_path):
    from grader.review.store import GradeStore

    # The outputs the import writes again (the HTML page's are tested with the review page's grades).
    GradeStore.in_folder(run).set_meta("formats", ["yaml", "md", "gradescope", "gradebook", "report"])
    sheet = tmp_path / "grades.csv"
    proc = review(graded, run, "--export", str(sheet))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(sheet.read_text())))
    assert [(r["student"], r["question"], r["points"]) for r in rows] == [
        (s, q, "") for s in ("ada", "bob", "cy") for q in ("explain", "weights")
    ]
    assert rows[0]["answer"] == "Symmetric values around 2." and rows[0]["max_points"] == "3"
    rows[0].update(points="2.5", comment="Right idea; say why symmetry gives the mean.")
    rows[2].update(points="1", comment="")
    with sheet.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    proc = review(graded, run, "--import", str(sheet))
    assert proc.returncode == 0, proc.stderr
    assert "imported 2 grade(s)" in proc.stdout
    ada = card(run, "ada")
    explain = question(ada, "explain")
    assert explain["status"] == "graded" and explain["score"] == 2.5 and ada["score"] == 4.5
    assert explain["graded_by"]["grader"] == "Tess" and explain["graded_by"]["comment"].startswith("Right idea")
    assert "Comment: Right idea; say why symmetry gives the mean." in explain["feedback"]
    assert "| explain: Why the mean is 2 | ✍ graded by a person | 2.5/3 |" in (run / "ada.md").read_text()
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert book["ada"]["explain"] == "2.5" and book["ada"]["score"] == "4.5" and book["ada"]["weights"] == "pending"
    assert book["bob"]["explain"] == "1"
    test = next(
        t for t in json.loads((run / "ada.gradescope.json").read_text())["tests"] if t["name"].startswith("explain")
    )
    assert test["score"] == 2.5 and test["max_score"] == 3 and test["status"] == "failed"
    assert "by a person: 2 of 3 graded" in (run / "report.html").read_text()


def test_a_rubric_written_in_config_yaml_is_there_when_grading_starts(graded, run, tmp_path):
    from grader.course.config import load
    from grader.errors import ConfigError
    from grader.review.store import GradeStore

    rubric = (
        "        manual: true\n        rubric:\n          - text: Names the symmetry\n            points: 2\n"
        "          - {text: 'Shows the sum, 10 / 5', points: 1}\n          - {text: Off topic, points: -1}\n"
    )
    text = (graded / "config.yaml").read_text()
    config = graded / f"{tmp_path.name}.yaml"  # beside the course's own: the same folders, a rubric added
    config.write_text(text.replace("        manual: true\n", rubric, 1))
    explain = next(q for q in load(config).assignment("rv").questions if q.id == "explain")
    assert [(i.text, i.points) for i in explain.rubric] == [
        ("Names the symmetry", 2.0),
        ("Shows the sum, 10 / 5", 1.0),
        ("Off topic", -1.0),
    ]
    assert review(graded, run, "--config", str(config), "--export", str(tmp_path / "sheet.csv")).returncode == 0
    store = GradeStore.in_folder(run)
    assert [(i.text, i.points) for i in store.rubric("explain")] == [(i.text, i.points) for i in explain.rubric]
    assert store.rubric("weights") == []
    # The page's edits stay: a re-pointed item keeps its points, and one removed from the page's
    # text is not added again; a new item in config.yaml is.
    first = store.rubric("explain")[0]
    store.update_item(first.id, text="Names the symmetry around 2", points=1.5, grader="Tess")
    config.write_text(
        config.read_text().replace(
            "{text: Off topic, points: -1}", "{text: Off topic, points: -1}\n          - {text: Uses n, points: 1}"
        )
    )
    assert review(graded, run, "--config", str(config), "--export", str(tmp_path / "sheet.csv")).returncode == 0
    assert [(i.text, i.points) for i in store.rubric("explain")] == [
        ("Names the symmetry around 2", 1.5),
        ("Shows the sum, 10 / 5", 1.0),
        ("Off topic", -1.0),
        ("Uses n", 1.0),
    ]
    # A rubric belongs to a question a person grades, and says each item once.
    for bad, message in (
        (
            text.replace("          - value: m\n", "          - value: m\n        rubric: [{text: x, points: 1}]\n"),
            "only a question graded by a person ('manual: true') has a rubric",
        ),
        (
            text.replace(
                "        manual: true\n",
                "        manual: true\n        rubric: [{text: x, points: 1}, {text: x, points: 2}]\n",
                1,
            ),
            "repeats the item 'x'",
        ),
        (
            text.replace("        manual: true\n", "        manual: true\n        rubric: [{text: x}]\n", 1),
            "rubric[0].points is required",
        ),
    ):
        config.write_text(bad)
        with pytest.raises(ConfigError, match=re.escape(message)):
            load(config)


def test_a_bad_sheet_is_refused_row_by_row_and_nothing_is_applied(graded, run, tmp_path):
    sheet = tmp_path / "bad.csv"
    sheet.write_text(
        "student,question,points,comment\n"
        "ada,explain,3,fine\n"  # good, but not applied: other rows are bad
        "zed,explain,1,\n"  # no such student
        "ada,mean,1,\n"  # graded by the autograder
        "bob,explain,4,\n"  # over the question's points
        "bob,weights,lots,\n"  # not a number
        "ada,explain,2,\n"
    )  # twice
    proc = review(graded, run, "--import", str(sheet))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "nothing imported; 5 row(s) refused" in proc.stderr
    for expected in (
        "row 3: no submission or student 'zed' in this run",
        "row 4: question 'mean' is graded by the autograder, not by a person",
        "row 5: 4 points is outside 0 to 3 for question 'explain'",
        "row 6: points 'lots' is not a number",
        "row 7: 'ada', question 'explain' is graded already in row 2",
    ):
        assert expected in proc.stderr
    assert question(card(run, "ada"), "explain")["status"] == "manual"
    from grader.review.store import GradeStore

    assert GradeStore.in_folder(run).grade("ada", "explain") is None


def test_two_graders_at_once_lose_nothing(run):
    import threading

    from grader.review.store import GradeStore

    item = GradeStore.in_folder(run).add_item("explain", "Mentions symmetry", 2)
    errors = []

    def grade(who: str, name: str) -> None:
        try:
            store = GradeStore.in_folder(run)  # each its own connection, as two servers would
            for i in range(8):
                store.set_comment(name, "explain", f"{who} {i}", grader=who, digest="d")
                store.mark(name, "explain", item.id, i % 2 == 0, grader=who, digest="d")
                store.set_adjustment("ada", "weights", 0.5, grader=who, digest="d")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=grade, args=(w, n)) for w, n in (("Tess", "ada"), ("Uma", "bob"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = GradeStore.in_folder(run)
    for who, name in (("Tess", "ada"), ("Uma", "bob")):
        g = store.grade(name, "explain")
        assert g is not None and g.comment == f"{who} 7" and g.items == () and g.grader == who
    # Changing an item's points changes every answer it is applied to.
    store.mark("ada", "explain", item.id, True, grader="Tess", digest="d")
    store.mark("bob", "explain", item.id, True, grader="Uma", digest="d")
    store.update_item(item.id, points=1.5)
    assert {store.person_grade(store.grade(n, "explain"), 3).points for n in ("ada", "bob")} == {1.5}


def test_grading_again_keeps_grades_of_unchanged_answers_and_flags_changed_ones(graded, run, tmp_path):
    from grader.review.store import GradeStore

    store = GradeStore.in_folder(run)
    for name in ("ada", "bob"):
        store.set_many([(name, "explain", 2.0, "ok", _digest(store, name))], grader="Tess")
    # Points typed into a scorecard by hand, for a question still waiting, are kept as a grade.
    edited = (
        (run / "cy.yaml")
        .read_text()
        .replace("score: 0\n  max_score: 2\n  status: manual", "score: 1.5\n  max_score: 2\n  status: manual")
    )
    (run / "cy.yaml").write_text(edited)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(graded / "subs/ada.ipynb", subs)
    shutil.copy(graded / "subs/cy.ipynb", subs)
    review_course.student(
        graded / "assignments/rv/rv.ipynb",
        subs / "bob.ipynb",
        mean="2.0",
        explain="Because the sum is 10 and there are 5 values.",
    )
    proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml,gradebook", cwd=graded)
    assert proc.returncode == 0, proc.stderr
    assert question(card(run, "ada"), "explain")["status"] == "graded"
    assert question(card(run, "ada"), "explain")["score"] == 2
    bob = question(card(run, "bob"), "explain")
    assert bob["status"] == "manual" and bob["score"] == 0 and "changed since it was graded" in bob["feedback"][0]
    cy = question(card(run, "cy"), "weights")
    assert cy["status"] == "graded" and cy["score"] == 1.5 and cy["graded_by"]["grader"] == "edited in cy.yaml"


def _digest(store, name: str) -> str:
    answer = next(q for q in store.card(name).questions if q.id == "explain").answer
    return answer.digest


@pytest.fixture
def client(graded, run):
    """The review app over HTTP (Flask's test client), on a copy of the class's outputs."""
    from grader.course import config
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    review = Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "s3cret-token")
    app = make_app(review)
    return app.test_client(), review


def test_every_request_without_the_token_is_refused(client):
    http, _ = client
    for path in (
        "/",
        "/grade/explain/0",
        "/answer/explain/1",
        "/reference/explain",
        "/api/state/explain/0",
        "/static/review.js",
    ):
        assert http.get(path).status_code == 403, path
        assert http.get(path + "?token=wrong").status_code == 403, path
    assert http.post("/api/grade/explain/0", json={"adjustment": 1}).status_code == 403
    assert (
        http.post("/api/grade/explain/0", json={"adjustment": 1}, headers={"X-Review-Token": "nope"}).status_code == 403
    )
    page = http.get("/?token=s3cret-token")
    assert page.status_code == 200 and "0 of 3 graded" in page.text
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_grading_through_the_page_interface(client):
    http, review = client
    auth = {"X-Review-Token": "s3cret-token"}
    items = http.post("/api/rubric/explain", json={"text": "Mentions symmetry", "points": 2}, headers=auth).json
    items = http.post("/api/rubric/explain", json={"text": "Explains why", "points": 1}, headers=auth).json["items"]
    first, second = items[0]["id"], items[1]["id"]
    state = http.post("/api/grade/explain/0", json={"item": first, "on": True}, headers=auth).json
    assert state["status"] == "graded" and state["points"] == 2 and state["graded"] == 1
    state = http.post("/api/grade/explain/0", json={"adjustment": -0.5, "comment": "Close."}, headers=auth).json
    assert state["points"] == 1.5 and state["comment"] == "Close."
    http.post("/api/grade/explain/1", json={"item": first, "on": True}, headers=auth)
    http.post("/api/grade/explain/1", json={"item": second, "on": True}, headers=auth)
    # One item's points changed: every answer it is applied to changes.
    http.post("/api/rubric/explain", json={"id": first, "text": "Mentions symmetry", "points": 1.5}, headers=auth)
    assert http.get("/api/state/explain/0", headers=auth).json["points"] == 1.0
    assert http.get("/api/state/explain/1", headers=auth).json["points"] == 2.5
    assert http.get("/api/state/explain/1", headers=auth).json["graded"] == 2
    # Free points within bounds only; a bad body is refused.
    assert http.post("/api/grade/explain/0", json={"adjustment": 9}, headers=auth).status_code == 400
    assert http.post("/api/grade/explain/0", json={"adjustment": "x"}, headers=auth).status_code == 400
    assert http.post("/api/grade/explain/9", json={"adjustment": 1}, headers=auth).status_code == 404
    assert http.post("/api/grade/mean/0", json={"adjustment": 1}, headers=auth).status_code == 404  # autograded
    # The scorecards, once written again, say who graded it, with the items and the comment.
    from grader.review import merge

    store = review.store
    merge.rewrite(store, review.course, review.assignment, store.path.parent, ("yaml", "md", "html", "gradebook"))
    explain = question(card(store.path.parent, "ada"), "explain")
    assert explain["score"] == 1 and explain["graded_by"]["rubric"] == [{"text": "Mentions symmetry", "points": 1.5}]
    assert explain["feedback"][1:] == [
        "Mentions symmetry (+1.5)",
        "Points adjusted by the grader (-0.5)",
        "Comment: Close.",
    ]
    page = (store.path.parent / "ada.html").read_text()
    assert "Mentions symmetry (+1.5)" in page and 'class="grader-box grader-graded"' in page


def test_hostile_answers_are_inert_in_the_page(client):
    http, _ = client
    resp = http.get("/answer/explain/1?token=s3cret-token")  # bob's: <script>, onerror=, javascript:
    assert resp.status_code == 200 and "And a second thought." in resp.text
    # Its markdown has math: the policy allows the bundled KaTeX's one script (by its hash), nothing else.
    csp = resp.headers["Content-Security-Policy"]
    [script] = re.findall(r"<script>(.*?)</script>", resp.text, flags=re.S)
    assert (
        csp.startswith(f"default-src 'none'; script-src {pages.script_source(script)};")
        and "renderMathInElement" in script
    )
    assert f'content="{csp}"' in resp.text  # the same policy in the page itself
    student = resp.text[: resp.text.index("<script>")]  # the answer as rendered, before the one script
    assert "<script" not in student and "onerror" not in student and "onmouseover" not in student
    assert 'href="javascript:' not in resp.text
    page = http.get("/grade/explain/1?token=s3cret-token").text
    assert '<iframe id="answer" title="the student\'s answer" sandbox="allow-scripts"' in page  # no origin of its own
    plain = http.get("/answer/explain/0?token=s3cret-token")  # ada's: no math, so no script at all
    assert "<script" not in plain.text and "script-src" not in plain.headers["Content-Security-Policy"]


def test_anonymous_grading_hides_names(graded, run):
    from grader.course import config
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    review = Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "t", anonymous=True)
    page = make_app(review).test_client().get("/grade/weights/1?token=t").text
    assert "Submission 2 of 3: <b>Submission 2</b>" in page and "bob" not in page


ROSTER = (
    "name,email,github,lms_id,sis_user_id,sis_login_id,section,submission\n"
    "Ada Lovelace,ada@uni.edu,ada-l,101,S-1,alove,Tue,ada\n"
    "Bob Moses,bob@uni.edu,bob,102,S-2,bmoses,Wed,\n"
    "=Cy Young,cy@uni.edu,cy,103,S-3,cyoung,Wed,\n"
    "Dee Absent,dee@uni.edu,dee,104,S-4,dabsent,Tue,\n"
)


def test_canvas_and_moodle_gradebooks_follow_their_import_formats(graded, run, tmp_path):
    from grader.course import config
    from grader.outputs.canvas import HEADER
    from grader.review import merge
    from grader.review.store import GradeStore

    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    store = GradeStore.in_folder(run)
    store.set_meta("roster", str(roster))
    store.set_many(
        [("ada", q, 1.0, "Short but right.", _digest_of(store, "ada", q)) for q in ("explain", "weights")],
        grader="Tess",
    )
    course = config.load(graded / "config.yaml")
    merge.rewrite(store, course, course.assignment("rv"), run, ("canvas", "moodle"))
    rows = list(csv.reader(io.StringIO((run / "canvas.csv").read_text())))
    # Canvas: the five student columns, one column per assignment, then the Points Possible row.
    assert tuple(rows[0][:5]) == HEADER == ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
    assert rows[0][5:] == ["Reading a mean"] and rows[1] == ["Points Possible", "", "", "", "", "7"]
    body = {r[0]: r for r in rows[2:]}
    assert body["Ada Lovelace"] == ["Ada Lovelace", "101", "S-1", "alove", "Tue", "4"]  # 2 + 1 + 1
    assert body["Bob Moses"][5] == ""  # still waiting for a person: no change in Canvas
    assert "'=Cy Young" in body and body["Dee Absent"][5] == ""
    # Moodle: an identifier column mapped to the e-mail, the grade item, and its feedback.
    moodle = list(csv.DictReader(io.StringIO((run / "moodle.csv").read_text())))
    assert list(moodle[0]) == ["Email address", "Reading a mean", "Reading a mean feedback"]
    ada = next(r for r in moodle if r["Email address"] == "ada@uni.edu")
    assert ada["Reading a mean"] == "4"
    assert ada["Reading a mean feedback"].splitlines() == [
        "mean: 2/2",
        "explain: 1/3 (Short but right.)",
        "weights: 1/2 (Short but right.)",
    ]
    bob = next(r for r in moodle if r["Email address"] == "bob@uni.edu")
    assert bob["Reading a mean"] == "" and "explain: waiting for a person (3 points)" in bob["Reading a mean feedback"]


def test_an_lms_format_without_a_roster_is_refused_before_grading(graded):
    proc = grader("grade", "subs/ada.ipynb", "--out", "unused", "--formats", "canvas", cwd=graded)
    assert proc.returncode == 2 and "--formats canvas needs a roster" in proc.stderr
    assert not (graded / "unused").exists()


def _digest_of(store, name: str, qid: str) -> str:
    answer = next(q for q in store.card(name).questions if q.id == qid).answer
    return answer.digest


# --------------------------------------------------------------------------------------------
# In a real browser: Debian's Chromium driven through chromedriver (Selenium), one session.

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome") if Path(p).exists()), None
)
CHROMEDRIVER = shutil.which("chromedriver")


def _browser_missing() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None:
        return "no Chromium here (apt-get install chromium)"
    if CHROMEDRIVER is None:
        return "no chromedriver here (apt-get install chromium-driver; `make test-setup` does it as root)"
    return ""


@pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")
def test_a_grader_grades_two_questions_of_three_submissions_in_a_browser(graded, run):
    import threading

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
    from werkzeug.serving import make_server

    from grader.course import config
    from grader.review import cells
    from grader.review.app import Review, Writer, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    assignment = course.assignment("rv")
    store = GradeStore.in_folder(run)
    store.add_item("explain", "Explains why symmetry gives the mean", 1)
    store.add_item("weights", "A weighted mean", 2)
    review = Review(store, course, assignment, "Tess", "browser-token")
    writer = Writer(store, course, assignment, run, ("yaml", "gradebook"))
    server = make_server("127.0.0.1", 0, make_app(review, writer), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=cells.render, args=([],), daemon=True).start()  # nbconvert loads while Chromium starts
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    wait = WebDriverWait(driver, 10, poll_frequency=0.05)

    def text(element_id: str) -> str:
        return driver.find_element(By.ID, element_id).text

    def loaded(who: str) -> None:
        wait.until(lambda d: who in text("who") and text("progress"))

    def keys(*pressed: str) -> None:
        driver.find_element(By.TAG_NAME, "body").send_keys(*pressed)

    def saved(result: str) -> None:
        wait.until(lambda d: text("saved") == "saved" and result in text("result"))

    try:
        assert driver.get(base + "/grade/explain/0") is None and "Forbidden" in driver.page_source  # no token
        driver.get(base + "/grade/explain/0?token=browser-token")
        loaded("ada")
        # A rubric item added by the page, then applied by its key.
        driver.find_element(By.ID, "new-text").send_keys("Mentions symmetry")
        driver.find_element(By.ID, "new-points").send_keys("2")
        driver.find_element(By.CSS_SELECTOR, "#new-item button").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rubric li")) == 2)
        keys("2")
        saved("Graded: 2 / 3 points")
        keys(Keys.ARROW_RIGHT)
        loaded("bob")
        # bob's answer carries <script>, onerror= and a javascript: link: nothing of it ran.
        assert "pwned" not in driver.title
        driver.switch_to.frame(driver.find_element(By.ID, "answer"))
        assert "And a second thought." in driver.find_element(By.TAG_NAME, "body").text
        assert "pwned" not in driver.execute_script("return document.title")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".katex"))  # its formula typeset by the bundled KaTeX
        driver.switch_to.default_content()
        driver.find_elements(By.CSS_SELECTOR, "#rubric li")[0].click()  # by a click this time
        saved("Graded: 1 / 3 points")
        keys("c")
        driver.switch_to.active_element.send_keys("Say why symmetry gives the mean.")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: text("saved") == "saved")
        keys("j")
        loaded("cy")
        keys("0")  # graded as it stands: 0 points
        saved("Graded: 0 / 3 points")
        assert text("progress") == "3 of 3 graded"
        keys("n")
        loaded("ada")
        assert "weights" in driver.find_element(By.TAG_NAME, "h1").text
        keys("1")
        saved("Graded: 2 / 2 points")
        for who in ("bob", "cy"):
            keys(Keys.ARROW_RIGHT)
            loaded(who)
            keys("0")
            saved("Graded: 0 / 2 points")
        assert "pwned" not in driver.title
    finally:
        driver.quit()
        server.shutdown()
        writer.stop()
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert [(book[s]["explain"], book[s]["weights"], book[s]["score"]) for s in ("ada", "bob", "cy")] == [
        ("2", "2", "6"),
        ("1", "0", "3"),
        ("0", "0", "0"),
    ]
    bob = question(card(run, "bob"), "explain")
    assert bob["graded_by"]["comment"] == "Say why symmetry gives the mean." and bob["graded_by"]["grader"] == "Tess"
